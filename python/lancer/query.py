"""Structured full-text queries, as pylance's ``lance.query``: pass one as
``full_text_query=`` to ``to_table`` / ``scanner`` / ``to_batches``.

Each query is held as the JSON shape Lance serializes its full-text queries in (one
key naming the kind: ``match``, ``phrase``, ``boost``, ``multi_match``, ``boolean``),
which the engine parses and checks. ``q1 & q2`` is a boolean query with both clauses
MUST, ``q1 | q2`` with both SHOULD, as in pylance.

Not supported (refused with ``NotImplementedError`` naming it, never ignored):
``CombinedFieldsQuery`` (BM25F over several columns) and
``document_granularity=DocumentGranularity.LIST_ELEMENT`` (element-level documents).
``fuzziness=None`` means exact tokens, as pylance 14 searches it.
"""

from __future__ import annotations

import abc
import json
from enum import Enum
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "BoostQuery",
    "BooleanQuery",
    "CombinedFieldsQuery",
    "DocumentGranularity",
    "FullTextOperator",
    "FullTextQuery",
    "FullTextQueryType",
    "MatchQuery",
    "MultiMatchQuery",
    "Occur",
    "PhraseQuery",
]


class FullTextQueryType(Enum):
    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    AND = "AND"
    OR = "OR"


class DocumentGranularity(str, Enum):
    """The unit treated as one full-text-search document."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


class Occur(Enum):
    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


def _granularity(g: Optional[DocumentGranularity]) -> None:
    if g is not None and DocumentGranularity(g) != DocumentGranularity.ROW:
        raise NotImplementedError(
            "document_granularity=LIST_ELEMENT (list elements as documents) is not "
            "supported by lancer yet; rows are the documents"
        )


def _operator(op: Any) -> str:
    value = op.value if isinstance(op, FullTextOperator) else str(op)
    if value.upper() not in ("AND", "OR"):
        raise ValueError(f"operator must be FullTextOperator.AND or .OR, not {op!r}")
    return "And" if value.upper() == "AND" else "Or"


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


class FullTextQuery(abc.ABC):
    """A full-text query; ``to_json()`` is its Lance JSON shape."""

    _json: Dict[str, Any]

    @abc.abstractmethod
    def query_type(self) -> FullTextQueryType:
        """The kind of query."""

    def to_json(self) -> str:
        """The query in the JSON shape Lance serializes full-text queries in."""
        return json.dumps(self._json)

    def __and__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json()})"


class MatchQuery(FullTextQuery):
    """Rows holding the query's tokens in ``column`` (any of them, or all with
    ``operator=AND``), scored by BM25 times ``boost``; ``fuzziness`` > 0 also matches
    tokens within that edit distance (at most ``max_expansions`` of them, sharing the
    first ``prefix_length`` characters)."""

    def __init__(
        self,
        query: str,
        column: str,
        *,
        boost: float = 1.0,
        fuzziness: Optional[int] = 0,
        max_expansions: int = 50,
        operator: FullTextOperator = FullTextOperator.OR,
        prefix_length: int = 0,
        document_granularity: Optional[DocumentGranularity] = None,
    ):
        _granularity(document_granularity)
        self._json = {
            "match": {
                "column": column,
                "terms": str(query),
                "boost": float(boost),
                "fuzziness": 0 if fuzziness is None else _count("fuzziness", fuzziness),
                "max_expansions": _count("max_expansions", max_expansions),
                "operator": _operator(operator),
                "prefix_length": _count("prefix_length", prefix_length),
            }
        }

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH


class PhraseQuery(FullTextQuery):
    """Rows holding the query's tokens in order in ``column``, each gap at most
    ``slop`` positions wider (the index must store positions)."""

    def __init__(
        self,
        query: str,
        column: str,
        *,
        slop: int = 0,
        document_granularity: Optional[DocumentGranularity] = None,
    ):
        _granularity(document_granularity)
        self._json = {"phrase": {"column": column, "terms": str(query), "slop": _count("slop", slop)}}

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH_PHRASE


def _inner(q: Any, what: str) -> Dict[str, Any]:
    if isinstance(q, FullTextQuery):
        return q._json
    raise TypeError(f"{what} must be a lancer.query full-text query, not {type(q).__name__}")


class BoostQuery(FullTextQuery):
    """The rows of ``positive``, their scores lowered by ``negative_boost`` times the
    score of ``negative`` where it matches too."""

    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *, negative_boost: float = 0.5):
        self._json = {
            "boost": {
                "positive": _inner(positive, "positive"),
                "negative": _inner(negative, "negative"),
                "negative_boost": float(negative_boost),
            }
        }

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOST


class MultiMatchQuery(FullTextQuery):
    """A match query on each of ``columns`` (each times its boost); a row scores its
    best column."""

    def __init__(
        self,
        query: str,
        columns: List[str],
        *,
        boosts: Optional[List[float]] = None,
        operator: FullTextOperator = FullTextOperator.OR,
    ):
        columns = list(columns)
        if boosts is not None and len(boosts) != len(columns):
            raise ValueError(f"boosts has {len(boosts)} values for {len(columns)} columns")
        body: Dict[str, Any] = {"query": str(query), "columns": columns, "operator": _operator(operator)}
        if boosts is not None:
            body["boost"] = [float(b) for b in boosts]
        self._json = {"multi_match": body}

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MULTI_MATCH


class CombinedFieldsQuery(FullTextQuery):
    """BM25F over several columns as one field: not supported by lancer yet."""

    def __init__(self, query: str, columns: List[str], *, boosts: Optional[List[float]] = None,
                 operator: FullTextOperator = FullTextOperator.OR):
        raise NotImplementedError(
            "CombinedFieldsQuery (BM25F over several columns) is not supported by lancer yet; "
            "MultiMatchQuery scores each column and keeps the best"
        )

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.COMBINED_FIELDS


class BooleanQuery(FullTextQuery):
    """Clauses with their occurrence: every MUST matches and adds its score, matching
    SHOULD clauses add theirs, MUST_NOT clauses only exclude rows."""

    def __init__(self, queries: List[Tuple[Occur, FullTextQuery]]):
        body: Dict[str, List[Dict[str, Any]]] = {"should": [], "must": [], "must_not": []}
        for i, clause in enumerate(queries):
            try:
                occur, q = clause
            except (TypeError, ValueError):
                raise TypeError(f"clause {i} must be an (Occur, query) pair, not {clause!r}") from None
            key = {Occur.SHOULD: "should", Occur.MUST: "must", Occur.MUST_NOT: "must_not"}.get(Occur(occur))
            body[key].append(_inner(q, f"clause {i}'s query"))
        self._json = {"boolean": body}

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOLEAN


def to_engine(fts: Any) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """What the engine is asked for a ``full_text_query`` argument: ``(json, None,
    None)`` for a query object or a dict over several columns (a multi-match query),
    ``(None, text, column)`` for text searched as pylance searches a string (a quoted
    text is a phrase) in one column or every indexed one. A pylance ``lance.query``
    object is refused naming the lancer class to build instead."""
    if isinstance(fts, str):
        return None, fts, None
    if isinstance(fts, FullTextQuery):
        return fts.to_json(), None, None
    if isinstance(fts, dict):
        unknown = set(fts) - {"query", "columns"}
        if unknown:
            raise ValueError(f"full_text_query dict has unknown keys {sorted(unknown)}: use 'query' and 'columns'")
        query = fts.get("query")
        if isinstance(query, FullTextQuery):
            return query.to_json(), None, None
        if not isinstance(query, str):
            raise ValueError("full_text_query dict needs 'query': a string or a query object")
        columns = fts.get("columns")
        if isinstance(columns, str):
            columns = [columns]
        columns = list(columns or [])
        if len(columns) > 1:
            return MultiMatchQuery(query, columns).to_json(), None, None
        return None, query, (columns[0] if columns else None)
    module = type(fts).__module__ or ""
    if module.startswith("lance"):
        raise TypeError(
            f"full_text_query is a {module}.{type(fts).__name__}: build it with "
            f"lancer.query.{type(fts).__name__} instead"
        )
    raise TypeError(f"full_text_query must be a string, a dict or a lancer.query object, not {type(fts).__name__}")
