"""SQL over datasets: ``lancer.sql(query, tables=...)`` and ``LanceDataset.sql(query)``
(pylance 14's ``SqlQueryBuilder`` / ``SqlQuery``), run by the native ``lancer-sql``
(DataFusion). Table names may be dataset paths or URIs and Parquet / CSV / JSON files;
``vector_search(...)`` and ``fts(...)`` search inside SQL."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pyarrow as pa

from . import _lancer


def sql(query: str, tables: Optional[Dict[str, Any]] = None) -> pa.Table:
    """Runs ``query`` (statements separated by ``;``) and returns the last one's rows.
    ``tables`` names datasets: ``{"items": "data/items.lance"}`` (``uri@3`` for a
    version, ``uri#tag`` for a tag, or an opened ``LanceDataset``)."""
    named: Dict[str, str] = {}
    for name, t in (tables or {}).items():
        if hasattr(t, "_inner"):
            named[name] = f"{t.uri}@{t.version}"
        else:
            named[name] = str(t)
    batches = _lancer.sql(query, tables=named)
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


class SqlQuery:
    """An executable SQL query over a dataset (``SqlQueryBuilder.build``)."""

    def __init__(self, ds: Any, query: str, table_name: str, with_row_id: bool, with_row_addr: bool,
                 batch_size: Optional[int] = None, batch_size_bytes: Optional[int] = None):
        self._args = (ds, query, table_name, with_row_id, with_row_addr)
        self._batching = (batch_size, batch_size_bytes)

    def to_batch_records(self) -> List[pa.RecordBatch]:
        """Runs the query; every result batch."""
        ds, query, name, rid, raddr = self._args
        rows, size = self._batching
        if rows is not None and not 1 <= rows <= 0xFFFF_FFFF:
            # pylance refuses it when the query runs, not when it is set
            raise _lancer.InvalidInputError(
                f"Invalid user input: batch_size must be between 1 and 4294967295, got {rows}")
        return list(_lancer.sql(query, dataset=ds._inner, table_name=name, with_row_id=rid,
                                with_row_addr=raddr, batch_size=rows, batch_size_bytes=size))

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """Runs the query; its rows as a reader."""
        batches = self.to_batch_records()
        schema = batches[0].schema if batches else pa.schema([])
        return pa.RecordBatchReader.from_batches(schema, batches)


class SqlQueryBuilder:
    """Configures a SQL query over a dataset (``LanceDataset.sql``), as pylance 14's:
    the dataset is the table ``dataset`` unless ``table_name`` says otherwise."""

    def __init__(self, ds: Any, query: str):
        self._ds, self._query = ds, query
        self._name, self._rid, self._raddr = "dataset", False, False
        self._rows: Optional[int] = None
        self._bytes: Optional[int] = None

    def table_name(self, table_name: str) -> "SqlQueryBuilder":
        self._name = str(table_name)
        return self

    def with_row_id(self, with_row_id: bool = True) -> "SqlQueryBuilder":
        self._rid = bool(with_row_id)
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> "SqlQueryBuilder":
        self._raddr = bool(with_row_addr)
        return self

    def blob_handling(self, blob_handling: str) -> "SqlQueryBuilder":
        raise NotImplementedError("SqlQueryBuilder.blob_handling is not supported by lancer yet")

    def batch_size(self, batch_size: int) -> "SqlQueryBuilder":
        """At most this many rows per batch of the scans and of every operator above
        them (an error at run time unless 1 ≤ ``batch_size`` < 2**32, as pylance's)."""
        self._rows = _unsigned(batch_size)
        return self

    def batch_size_bytes(self, batch_size_bytes: int) -> "SqlQueryBuilder":
        """Scan batches of about this many bytes at most (split by their rows'
        average size, a row at least — so 0 gives a row a batch, as pylance's); with
        :meth:`batch_size` the limit reached first applies."""
        self._bytes = _unsigned(batch_size_bytes)
        return self

    def build(self) -> SqlQuery:
        return SqlQuery(self._ds, self._query, self._name, self._rid, self._raddr,
                        self._rows, self._bytes)


def _unsigned(value: Any) -> int:
    n = int(value)
    if n < 0:
        raise OverflowError("can't convert negative int to unsigned")
    return n


class FFILanceTableProvider:
    """A dataset version as a table of DataFusion-Python (``datafusion`` from PyPI, the
    DataFusion major version lancer pins: 55), as pylance's ``FFILanceTableProvider``:
    ``SessionContext().register_table("t", FFILanceTableProvider(ds))``. Filters,
    projections and limits go down to lancer's scan; ``with_row_id`` /
    ``with_row_addr`` add ``_rowid`` / ``_rowaddr``."""

    def __init__(self, dataset: Any, *, with_row_id: bool = False, with_row_addr: bool = False):
        inner = getattr(dataset, "_inner", None)
        if inner is None:
            raise TypeError(f"FFILanceTableProvider takes a lancer LanceDataset, not {type(dataset).__name__}")
        self._native = _lancer.FFILanceTableProvider(inner, with_row_id=bool(with_row_id),
                                                     with_row_addr=bool(with_row_addr))

    def __datafusion_table_provider__(self, session: Any) -> Any:
        return self._native.__datafusion_table_provider__(session)

    def __repr__(self) -> str:
        return repr(self._native)
