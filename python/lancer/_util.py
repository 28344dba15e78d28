"""Helpers shared by ``lancer.dataset`` and the modules it is built from: pylance's
arguments sorted out (tuning-only, refused, unknown), inputs as Arrow readers, the
native open behind ``lancer.dataset``, row numbers and columns for takes, Ctrl-C
through pyarrow. Nothing here imports ``lancer.dataset``; it imports only the native
module and :mod:`lancer._session`."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.dataset  # noqa: F401 (pa.dataset.Dataset, the base of LanceDataset)

from . import _lancer
from ._session import Session


class DatasetNotFoundError(FileNotFoundError, ValueError):
    """No Lance dataset at the location (a ``FileNotFoundError``; a ``ValueError``
    too, as pylance raises)."""


class _DatasetBase(pa.dataset.Dataset):
    """A base of :class:`lancer.dataset.LanceDataset` (and nothing else), so that the
    modules below ``lancer.dataset`` can tell a dataset from a path or another input
    without importing it.

    A ``pyarrow.dataset.Dataset``, as pylance's dataset is: engines that take pyarrow
    datasets (DuckDB, Polars, pyarrow's own joins) recognize it and call its
    ``scanner(columns=, filter=)`` with their projections and filters as pyarrow
    Expressions. pyarrow's native methods read a C++ dataset this object does not have;
    those the subclass does not define refuse here instead of reaching it."""

    def _not_here(self, name: str) -> Any:
        raise NotImplementedError(f"LanceDataset.{name} is pyarrow's and has no Lance equivalent; "
                                  "scan with to_table(filter=...) and use pyarrow on the table")

    @property
    def partition_expression(self) -> Any:  # type: ignore[override]
        raise NotImplementedError("partitioning not yet supported")

    def replace_schema(self, schema: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("LanceDataset.replace_schema: alter columns with alter_columns, "
                                  "metadata with replace_schema_metadata")

    def join(self, right_dataset: Any, keys: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        # pylance 14's join raises this too
        raise NotImplementedError("Versioning not yet supported in Rust")

    def filter(self, expression: Any) -> Any:  # type: ignore[override]
        return self._not_here("filter")

    def sort_by(self, sorting: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._not_here("sort_by")

    def join_asof(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._not_here("join_asof")

    def _get_fragments(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_here("_get_fragments")

    def _scanner_options(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_here("_scanner_options")

    def _scan_options(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_here("_scan_options")


# pylance's vector-build arguments lancer takes without effect (tuning only) and those it
# refuses unless at pylance's default (create_index / create_index_uncommitted)
_VECTOR_TUNING = {"index_cache_size", "shuffle_partition_batches", "shuffle_partition_concurrency",
                  "streaming_sample_rate", "streaming_coreset_rate", "streaming_refine_passes"}
_VECTOR_REFUSED = {"accelerator": None, "ivf_centroids_file": None, "precomputed_partition_dataset": None,
                   "filter_nan": True, "train": True, "target_partition_size": None, "skip_transpose": False}


def _vector_arguments(call: str, kwargs: Dict[str, Any], *, tuning: Iterable[str] = (),
                      refused: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The HNSW settings (``m``, ``ef_construction``, ``max_level``) of a vector build's
    extra keyword arguments; the rest sorted out by :func:`_check_arguments` with the
    vector builds' tuning-only and refused names (plus ``tuning`` / ``refused``)."""
    hnsw = {k: kwargs.pop(k) for k in ("m", "ef_construction", "max_level") if kwargs.get(k) is not None}
    _check_arguments(call, kwargs, tuning=_VECTOR_TUNING | set(tuning),
                     refused={**_VECTOR_REFUSED, **(refused or {})})
    return hnsw


def _scalar_arguments(kind: str, kwargs: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
    """(analyzer JSON, engine parameters) of a scalar / INVERTED build's keyword
    arguments in pylance's names: the tokenizer settings of INVERTED / FTS, else
    ``zone_size``, ``rows_per_zone``, ``number_of_items``, ``probability`` (another name
    is a TypeError)."""
    if kind in ("INVERTED", "FTS"):
        return (json.dumps(kwargs) if kwargs else None), {}
    names = {"zone_size": "zone_size", "rows_per_zone": "rows_per_zone",
             "number_of_items": "bloom_items", "probability": "bloom_probability"}
    if kind == "JSON":
        names = {"zone_size": "zone_size", "path": "json_path", "target_index_type": "target_index_type"}
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise TypeError(f"unexpected arguments for a {kind} index: {', '.join(unknown)}")
    return None, {names[k]: v for k, v in kwargs.items()}


def _check_arguments(call: str, kwargs: Dict[str, Any], *, tuning: Iterable[str] = (),
                     refused: Optional[Dict[str, Any]] = None) -> None:
    """pylance's arguments that lancer does not act on, sorted out so none is accepted
    and ignored: tuning-only ones (``tuning``) are accepted without effect; the others
    (``refused``: name → pylance's default) may only keep their default, anything else is
    a ``NotImplementedError`` naming them; a name pylance does not take either is a
    ``TypeError``, as Python's own."""
    refused = refused or {}
    tuning = set(tuning)
    for name in sorted(kwargs):
        value = kwargs[name]
        if name in tuning:
            continue
        if name in refused:
            default = refused[name]
            same = value is None or value is default or (
                not isinstance(value, (list, dict, tuple)) and getattr(value, "value", value) == default)
            if same:
                continue
            raise NotImplementedError(f"{call}({name}=...) is not supported by lancer yet")
        raise TypeError(f"{call}() got an unexpected keyword argument {name!r}")


def _sorted(table: pa.Table, orderings: List[Any]) -> pa.Table:
    """``table`` sorted by ``(column, ascending, nulls_first)`` keys: stable sorts from
    the last key to the first (each key's own null placement; ties keep the search's
    order)."""
    import pyarrow.compute as pc

    for column, ascending, nulls_first in reversed(orderings):
        if column not in table.column_names:
            raise ValueError(f"order_by names {column!r}, which the result does not have "
                             f"(columns: {', '.join(table.column_names)})")
        idx = pc.sort_indices(table, sort_keys=[(column, "ascending" if ascending else "descending")],
                              null_placement="at_start" if nulls_first else "at_end")
        table = table.take(idx)
    return table

_INTERRUPTED = "lancer: interrupted (KeyboardInterrupt)"


class _Interruptible:
    """Turns a scan that Rust stopped for a pending Ctrl-C (reported through pyarrow
    as an error) back into ``KeyboardInterrupt``."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, tb: Any) -> bool:
        if isinstance(e, (pa.ArrowException, OSError, ValueError)) and _INTERRUPTED in str(e):
            raise KeyboardInterrupt from None
        return False


def _read_all(reader: pa.RecordBatchReader) -> pa.Table:
    with _Interruptible():
        return reader.read_all()


def _iter(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    with _Interruptible():
        yield from reader


def _uri(uri: Any) -> str:
    """A dataset location as the native side takes it: a dataset's own, a path-like as
    its text, and a leading ``~`` as the user's home, as pylance expands it."""
    if isinstance(uri, _DatasetBase):
        return uri.uri
    text = os.fspath(uri) if isinstance(uri, os.PathLike) else str(uri)
    if text.startswith("~"):
        text = os.path.expanduser(text)
    return text


def _indices(values: Any) -> Any:
    """Row numbers for the native take: lists as they are; NumPy and Arrow integer
    arrays as their little-endian int64 bytes (no Python object per value), except
    uint64 arrays of up to 256 values, which go as lists; anything else as a list. The
    native side refuses negatives and non-integers, naming the value. Lists and NumPy
    arrays are tested for first: a one-row take is ~10 µs, and each check here is a
    few percent of it."""
    if type(values) is list:
        return values
    if type(values).__module__ == "numpy" and getattr(values, "ndim", 0) == 1:
        dtype = values.dtype
        # Signed and narrower unsigned integers are int64 values as they are (negatives
        # are refused natively): 0.1 µs for 100 rows where a list costs 1.4 µs.
        if dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8):
            return values.astype("<i8", copy=False).tobytes()
        if dtype.kind == "u" and values.size > 256:
            if int(values.max()) >= 2**63:
                raise ValueError(f"row index {int(values.max())} is not a non-negative integer")
            return values.astype("<i8", copy=False).tobytes()
    elif isinstance(values, (pa.Array, pa.ChunkedArray)):
        if values.null_count:
            raise ValueError("row index None is not a non-negative integer")
        return _indices(values.to_numpy(zero_copy_only=False))
    if hasattr(values, "tolist"):
        return values.tolist()
    return list(values)


def _computed(inner: Any, columns: Any) -> Optional[Tuple[List[Tuple[str, str]], List[str]]]:
    """For ``columns={name: SQL}``: the expressions, and the dataset columns they read
    (None for a list of names)."""
    if not isinstance(columns, dict):
        return None
    exprs = [(str(k), str(v)) for k, v in columns.items()]
    return exprs, _lancer.computed_reads(inner, exprs)


def _evaluate(inner: Any, table: pa.Table, exprs: List[Tuple[str, str]], read: List[str]) -> pa.Table:
    """``table`` with its columns ``read`` replaced, where the first of them stood, by
    the computed columns ``exprs``; its other columns (``query_index``, ``_distance``,
    ``_score``, ``_rowid``, ...) stay where they are."""
    data = table.select(read).combine_chunks()
    batches = data.to_batches() or [pa.RecordBatch.from_pylist([], schema=data.schema)]
    computed = pa.Table.from_batches([_lancer.evaluate_computed(inner, b, exprs) for b in batches])
    fields, arrays, placed = [], [], False
    for name in table.column_names:
        if name in read:
            if not placed:
                fields.extend(computed.schema)
                arrays.extend(computed.columns)
                placed = True
            continue
        fields.append(table.schema.field(name))
        arrays.append(table[name])
    if not placed:
        fields[:0], arrays[:0] = list(computed.schema), list(computed.columns)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _columns(columns: Any) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, dict):
        raise NotImplementedError("columns as {name: SQL expression} work in scans, not here: pass a list of names")
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def _open(
    uri: Any,
    version: Optional[Union[int, str]] = None,
    asof: Any = None,
    block_size: Optional[int] = None,
    commit_lock: Any = None,
    index_cache_size: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    **kwargs: Any,
) -> Any:
    """The native dataset :func:`lancer.dataset` opens, its arguments checked as there
    (``LanceDataset(_open(...), storage_options)`` is the dataset; ``block_size`` and
    ``index_cache_size`` are taken for callers passing ``dataset``'s arguments on, as
    ``shallow_clone``). A missing dataset raises :class:`DatasetNotFoundError`."""
    if asof is not None:
        raise NotImplementedError("asof is not supported: pass version= (a number or a tag)")
    if commit_lock is not None:
        raise NotImplementedError("dataset(commit_lock=...) is not supported by lancer: commits are atomic "
                                  "through the store's conditional writes")
    # block_size, index_cache_size and the cache sizes below tune the reads only
    del block_size, index_cache_size
    session_arg = kwargs.pop("session", None)
    _check_arguments("dataset", kwargs,
                     tuning={"metadata_cache_size_bytes", "index_cache_size_bytes", "read_params"},
                     refused={"default_scan_options": None, "namespace_client": None,
                              "table_id": None, "base_store_params": None})
    session = _session(session_arg)
    tag = version if isinstance(version, str) else None
    number = version if isinstance(version, int) else None
    try:
        return _lancer.Dataset.open(_uri(uri), number, tag, _options(storage_options), session=session)
    except FileNotFoundError as e:
        raise DatasetNotFoundError(str(e)) from None


def _session(session: Any) -> Any:
    """The native session of a ``lancer.Session`` argument (None: a session of the
    open's own)."""
    if session is None:
        return None
    if not isinstance(session, Session):
        raise TypeError(f"session takes a lancer.Session, not {type(session).__name__}")
    return session._inner


def _options(storage_options: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
    if storage_options is None:
        return None
    return {str(k): str(v) for k, v in storage_options.items()}


def _reader(data: Any, schema: Optional[pa.Schema]) -> pa.RecordBatchReader:
    """Any supported input as a RecordBatchReader (no copy for Arrow inputs)."""
    if isinstance(data, _DatasetBase) or _is_arrow_dataset(data):  # lancer's and pylance's LanceDataset, pyarrow datasets
        data = data.scanner().to_reader()
    elif not isinstance(data, pa.RecordBatchReader) and callable(getattr(data, "to_reader", None)):
        # scanners: lancer's and pylance's LanceScanner, pyarrow.dataset.Scanner
        data = data.to_reader()
    if isinstance(data, pa.RecordBatchReader):
        reader = data
    elif isinstance(data, pa.Table):
        reader = data.to_reader()
    elif isinstance(data, pa.RecordBatch):
        reader = pa.RecordBatchReader.from_batches(data.schema, [data])
    elif _is_pandas(data):
        reader = pa.Table.from_pandas(data, schema=schema).to_reader()
        schema = None
    elif hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
    elif isinstance(data, dict):
        reader = pa.Table.from_pydict(data, schema=schema).to_reader()
        schema = None
    elif isinstance(data, list) and data and all(isinstance(b, pa.RecordBatch) for b in data):
        reader = pa.RecordBatchReader.from_batches(schema or data[0].schema, data)
    elif isinstance(data, list):
        reader = pa.Table.from_pylist(data, schema=schema).to_reader()
        schema = None
    elif isinstance(data, Iterable) and schema is not None:
        reader = pa.RecordBatchReader.from_batches(schema, data)
        schema = None
    else:
        raise TypeError(
            f"cannot write {type(data).__name__}: pass a pyarrow Table / RecordBatch / RecordBatchReader, "
            "a pandas DataFrame, a dict or list of rows, an object with __arrow_c_stream__, "
            "or an iterable of RecordBatches with schema="
        )
    if schema is not None and not reader.schema.equals(schema):
        reader = reader.cast(schema)
    plain = pa.schema([f.with_type(_unview(f.type)) for f in reader.schema], metadata=reader.schema.metadata)
    if not plain.equals(reader.schema):
        # Lance stores no view types: string_view / binary_view become large_string /
        # large_binary (what pylance writes for a polars frame)
        reader = reader.cast(plain)
    return reader


def _unview(t: pa.DataType) -> pa.DataType:
    if t == pa.string_view():
        return pa.large_string()
    if t == pa.binary_view():
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_unview(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_unview(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_unview(t.value_type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_unview(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _is_arrow_dataset(data: Any) -> bool:
    try:
        import pyarrow.dataset as ds
    except ImportError:  # pragma: no cover - pyarrow built without datasets
        return False
    return isinstance(data, ds.Dataset)


def _is_pandas(data: Any) -> bool:
    mod = type(data).__module__
    return mod.startswith("pandas") and type(data).__name__ == "DataFrame"


def _auto_cleanup(options: Any) -> Optional[tuple]:
    """pylance's ``AutoCleanupConfig`` (``interval``, ``older_than_seconds``) as the
    engine takes it; only a new dataset records it (in its config)."""
    if options is None:
        return None
    try:
        interval, older = options["interval"], options["older_than_seconds"]
    except (KeyError, TypeError) as e:
        raise ValueError("auto_cleanup_options takes a dict with 'interval' and 'older_than_seconds'") from e
    if int(interval) < 1 or int(older) < 0:
        raise ValueError("auto_cleanup_options: interval must be at least 1 and older_than_seconds at least 0")
    return int(interval), int(older)


def _sql_filter(filter: Any, call: str, ds: Any = None) -> Optional[str]:
    """A filter as SQL text: text as it is; a ``pyarrow.compute.Expression`` through
    Substrait, as pylance passes one (PyArrow serializes it against the dataset's schema,
    the engine reads it back as the same filter in SQL)."""
    if filter is None or isinstance(filter, str):
        return filter
    if isinstance(filter, pa.compute.Expression):
        if ds is None:
            raise TypeError(f"{call}: filter must be SQL text here, not a pyarrow Expression")
        return ds._inner.substrait_filter(_substrait_bytes(filter, ds.schema))
    raise TypeError(f"{call}: filter must be SQL text or a pyarrow compute Expression, "
                    f"not {type(filter).__name__}")


def _substrait_bytes(expression: Any, schema: pa.Schema) -> bytes:
    """``expression`` as Substrait ``ExtendedExpression`` bytes against ``schema``,
    each field PyArrow cannot express in Substrait (fixed-size lists, extension types,
    structs with field metadata, durations) stood in for by an int8 of another name at
    the same position, so references keep their positions."""
    from pyarrow.substrait import serialize_expressions
    message = serialize_expressions([expression], ["filter"], _substrait_schema(schema))
    return message.tobytes() if isinstance(message, memoryview) else message.to_pybytes()


def _substrait_schema(schema: pa.Schema) -> pa.Schema:
    from pyarrow.substrait import serialize_schema
    fields = []
    for i, field in enumerate(schema):
        try:
            serialize_schema(pa.schema([field]))
            fields.append(field)
        except (pa.ArrowException, TypeError, ValueError):
            fields.append(pa.field(f"__lancer_not_in_substrait_{i}", pa.int8()))
    return pa.schema(fields)
