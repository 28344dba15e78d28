"""``lancer.tokenize``: a text's tokens under an INVERTED index's analyzer, as pylance
14's ``lance.tokenize`` gives them (``FtsToken`` with ``text`` and ``position``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, List, Optional

from . import _lancer

_OPTIONS = ("base_tokenizer", "language", "lower_case", "stem", "remove_stop_words",
            "custom_stop_words", "ascii_folding", "min_ngram_length", "max_ngram_length", "prefix_only",
            "split_identifiers", "split_on_numerics", "preserve_original")


@dataclass(frozen=True)
class FtsToken:
    """One token: its ``text`` and ``position`` (from the first token kept)."""

    text: str
    position: int


def tokenize(query: str, *, analyzer: Optional[str] = None, max_token_length: Any = ...,
             index_operators: Any = None, **options: Any) -> List[FtsToken]:
    """The tokens of ``query`` under the analyzer an INVERTED index with these settings
    uses (pylance's names: ``base_tokenizer``, ``language``, ``lower_case``, ``stem``,
    ``remove_stop_words``, ``custom_stop_words``, ``ascii_folding``, n-gram lengths,
    ``prefix_only``, ...; ``None`` keeps the default). ``max_token_length=None`` lifts
    the length limit (default 40). The ``code`` analyzer profile and
    ``index_operators`` are refused (NotImplementedError)."""
    if not isinstance(query, str):
        raise TypeError(f"tokenize takes a str, not {type(query).__name__}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"tokenize() got unexpected keyword arguments: {', '.join(unknown)}")
    if analyzer not in (None, "text"):
        raise NotImplementedError(f"the {analyzer!r} analyzer profile is not supported by lancer (only 'text')")
    if index_operators is not None:
        raise NotImplementedError("index_operators is not supported by lancer")
    settings = {k: v for k, v in options.items() if v is not None}
    if max_token_length is not ...:
        settings["max_token_length"] = max_token_length
    return [FtsToken(t, p) for t, p in _lancer.tokenize(query, json.dumps(settings) if settings else None)]
