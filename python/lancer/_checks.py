"""Checks of index and search targets made before the engine is called, so that a
mistake fails with the exception kind pylance 14 raises for it: an unknown column is a
``KeyError``, an unknown index type ``NotImplementedError``, a column of the wrong type
for the index or search a ``TypeError`` (the engine would refuse each too, as a
``ValueError``). Messages are Lancer's own."""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa

VECTOR_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ")
SCALAR_TYPES = ("BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED", "FTS", "BLOOMFILTER",
                "RTREE", "MINHASHLSH", "JSON")


def field_at(schema: pa.Schema, path: str) -> Optional[pa.Field]:
    """The field at ``path`` (a top-level name, or ``a.b`` into structs), or None."""
    if path in schema.names:
        return schema.field(path)
    parts = path.split(".")
    if parts[0] not in schema.names:
        return None
    f = schema.field(parts[0])
    for part in parts[1:]:
        t = f.type
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        f = t.field(part)
    return f


def is_vector(t: pa.DataType) -> bool:
    """A fixed-size list of numbers (or a list of them: multivectors); an
    ``arrow.fixed_shape_tensor`` is its fixed-size-list storage, as in pylance."""
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        v = t.value_type
        return pa.types.is_floating(v) or pa.types.is_integer(v)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return is_vector(t.value_type)
    return False


def is_multivector(schema: pa.Schema, column: str) -> bool:
    """Whether ``column`` holds multivectors (a list of fixed-size-list vectors)."""
    f = field_at(schema, column)
    return f is not None and (pa.types.is_list(f.type) or pa.types.is_large_list(f.type)) \
        and pa.types.is_fixed_size_list(f.type.value_type)


def flat_vectors(q: Any) -> list:
    """A multivector query (one vector, or a list of equal-length vectors) as one
    flat list of floats, its vectors one after the other."""
    if len(q) and hasattr(q[0], "__len__"):
        q = [list(v) for v in q]
        lens = {len(v) for v in q}
        if len(lens) != 1:
            raise ValueError(f"a multivector query needs vectors of one length, got lengths {sorted(lens)}")
        if any(hasattr(x, "__len__") and not isinstance(x, str) for v in q for x in v):
            # (a ValueError, as pylance's pyarrow conversion raises for a 3-D query)
            raise ValueError("a multivector query is one vector or a 2-D list of vectors; this one has "
                             "more dimensions")
        return [_number(x) for v in q for x in v]
    return [_number(x) for x in q]


def _number(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"a query vector holds numbers, not {x!r}") from None


def index_target(schema: pa.Schema, column: str, index_type: Any, *, scalar: bool) -> None:
    """Refuses an index on a missing column, of an unknown type, or on a column of the
    wrong kind, as pylance does (KeyError / NotImplementedError / TypeError)."""
    kind = str(index_type).upper()
    known = SCALAR_TYPES if scalar else VECTOR_TYPES
    if kind not in known and not (not scalar and kind in SCALAR_TYPES):
        raise NotImplementedError(f"index type {index_type!r} is not one of {', '.join(known)}")
    f = field_at(schema, column)
    if f is None:
        raise KeyError(f"{column} not found in schema (columns: {', '.join(schema.names)})")
    t = f.type
    if kind.startswith("IVF") and not is_vector(t):
        raise TypeError(f"a {kind} index needs a vector column (fixed-size list of numbers); {column} is {t}")
    if kind in ("BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER") and (
            pa.types.is_nested(t) and not pa.types.is_dictionary(t)):
        raise TypeError(f"a {kind} index needs a column of single values; {column} is {t}")


def search_target(schema: pa.Schema, column: str) -> None:
    """Refuses a vector search over a column that holds no vectors (TypeError, as
    pylance); a missing column stays the engine's ValueError, as pylance's."""
    f = field_at(schema, column)
    if f is not None and not is_vector(f.type):
        raise TypeError(f"nearest needs a vector column (fixed-size list of numbers); {column} is {f.type}")


# pylance 14's ``nearest`` keywords (``ScannerBuilder.nearest``): honoured, refused by
# name, or (query_parallelism: how many threads, not what is found) accepted as tuning.
_NEAREST_HONOURED = {"column", "q", "k", "metric", "nprobes", "minimum_nprobes",
                     "maximum_nprobes", "refine_factor", "use_index", "ef", "query_parallelism",
                     "approx_mode"}


def nearest_keys(nearest: dict) -> None:
    """Refuses a ``nearest`` dict key lancer does not honour: an unknown one as pylance
    does (``TypeError``), one that changes answers and is not built yet by name
    (``NotImplementedError``)."""
    for key, value in nearest.items():
        if key in _NEAREST_HONOURED:
            continue
        if key in ("distance_range", "search_effort"):
            if value is None:
                continue
            raise NotImplementedError(f"nearest {key}= is not supported by lancer yet")
        raise TypeError(f"nearest() got an unexpected keyword argument '{key}'")


def query_batch(q: Any, schema: pa.Schema, column: str) -> Optional[tuple]:
    """Several query vectors for a batched search, as pylance 14 tells them: ``q``
    whose first item is a list, tuple, numpy array or pyarrow array (a 2-D array, a
    list of vectors) on a fixed-size-list column. Returns ``(flat float32 values as a
    list, dim)``, or None for a single vector. Refuses as pylance does: an empty ``q``
    (IndexError), vectors of different lengths or of the wrong width (ValueError), a
    pyarrow array of non-numbers such as a FixedSizeListArray (TypeError)."""
    import numpy as np

    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        if not (pa.types.is_floating(q.type) or pa.types.is_integer(q.type)):
            raise TypeError(f"query vector must be list-like or pa.FloatingPointArray but received {q.type}")
        return None
    if isinstance(q, pa.Scalar) or not hasattr(q, "__getitem__"):
        return None
    if len(q) == 0:
        raise IndexError("nearest q is empty: give a query vector, or a list of query vectors")
    if not isinstance(q[0], (list, tuple, np.ndarray, pa.Array)):
        return None
    f = field_at(schema, column)
    if f is None or not pa.types.is_fixed_size_list(f.type):
        return None  # (a multivector column's query: not a batch)
    dim = len(q[0])
    rows = []
    for v in q:
        if len(v) != dim:
            raise ValueError(f"All query vectors must have the same length, but got {dim} and {len(v)}")
        if isinstance(v, pa.Array):
            v = v.to_numpy(zero_copy_only=False)
        a = np.asarray(v, dtype=np.float32)
        if a.ndim != 1:
            raise ValueError(f"each query vector must be 1-D (a list of numbers); got {a.ndim}-D items: "
                             "give q as a 2-D array or a list of vectors")
        rows.append(a)
    width = f.type.list_size
    if dim != width:
        raise ValueError(f"Query vector size {dim} does not match index column size {width}")
    return np.stack(rows).ravel().tolist(), dim
