"""A configured scan or search (``LanceDataset.scanner``), as pylance 14's
``LanceScanner``: plain scans run in the engine's scanner; ``nearest`` and
``full_text_query`` run the engine's searches; ``order_by``, ``fast_search``,
``include_deleted_rows``, ``strict_batch_size`` and ``scan_stats_callback`` as pylance
honours them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterator, List

import pyarrow as pa

from . import _checks, _lancer
from ._lancer import InvalidInputError
from ._stats import _ScanMeter
from ._util import _columns, _computed, _evaluate, _iter, _read_all, _sorted
from .query import to_engine

if TYPE_CHECKING:
    from .dataset import LanceDataset


class LanceScanner:
    """A configured scan (or search): ``to_table``, ``to_batches``, ``to_reader``,
    ``count_rows``, ``explain_plan``. Also an Arrow stream (``__arrow_c_stream__``)."""

    def __init__(self, ds: "LanceDataset", **params: Any):
        self._ds = ds
        self._p = params

    def _search(self, explain: bool = False) -> Any:
        """The search's rows as a table (None for a plain scan); with ``explain`` its
        plan's text instead."""
        p = self._p
        nearest, fts = p.get("nearest"), p.get("full_text_query")
        if nearest is None and fts is None:
            return None
        if p.get("include_deleted_rows"):
            # pylance 14 refuses both, in these words
            kind = "a nearest neighbor search" if nearest is not None else "an FTS search"
            raise InvalidInputError(f"Invalid user input: Cannot include deleted rows in {kind}")
        inner = self._ds._inner
        if nearest is not None:
            if fts is not None:
                # pylance 14 refuses the pair the same way
                raise ValueError("Cannot have both nearest and full text search")
            q = nearest.get("q")
            if q is None or "column" not in nearest:
                raise ValueError('nearest needs "column" and "q"')
            _checks.search_target(self._ds.schema, nearest["column"])
            k = nearest.get("k")
            if k is not None and int(k) <= 0:
                raise ValueError(f"Nearest-K must be > 0 but got {k}")
            batch = _checks.query_batch(q, self._ds.schema, nearest["column"])
            if batch is not None:
                # several query vectors: pylance 14's batched search
                _checks.nearest_keys(nearest)
                flat, dim = batch
                batch = _lancer.nearest_batch(inner, nearest["column"], flat, dim,
                                              **self._search_settings(nearest, explain))
                q = None
            elif hasattr(q, "tolist"):
                q = q.tolist()
            elif isinstance(q, (pa.Array, pa.ChunkedArray, pa.Scalar)):
                q = q.as_py() if isinstance(q, pa.Scalar) else q.to_pylist()
            if q is not None and _checks.is_multivector(self._ds.schema, nearest["column"]):
                # a list of vectors is one multivector query on such a column
                q = _checks.flat_vectors(q)
            if q is not None:
                batch = self._nearest_one(nearest, q, explain)
        else:
            query_json, query, column = to_engine(fts)
            batch = inner.full_text_search(
                query,
                column,
                query_json,
                p.get("limit"),
                p.get("filter"),
                bool(p.get("prefilter") or False),
                self._search_columns(),
                *self._row_ids(),
                explain,
                fast_search=bool(p.get("fast_search")),
            )
        if explain:
            return batch
        table = pa.Table.from_batches([batch])
        computed = _computed(inner, p.get("columns"))
        if computed is not None:
            # the search read the expressions' columns; evaluate them over its rows
            table = _evaluate(inner, table, *computed)
        return self._finish(self._in_named_order(table))

    def _finish(self, table: pa.Table) -> pa.Table:
        """A search's rows after offset, limit and order_by."""
        p = self._p
        nearest = p.get("nearest")
        offset = p.get("offset") or 0
        limit = p.get("limit")
        if offset or (limit is not None and nearest is not None):
            table = table.slice(offset, limit)
        if p.get("order_by"):
            # the search's rows (its k / limit best) in the asked order, as pylance
            table = _sorted(table, p["order_by"])
        return table

    def _search_settings(self, nearest: dict, explain: bool) -> dict:
        """The keyword arguments a vector search (single or batched) takes after its
        column and query, from ``nearest`` and the scan's own parameters."""
        p = self._p
        row_id, row_address = self._row_ids()
        return dict(
            # k defaults to the limit, as in pylance (then 10)
            k=int(nearest.get("k") or p.get("limit") or 10),
            metric=nearest.get("metric"),
            nprobes=nearest.get("nprobes"),
            refine_factor=nearest.get("refine_factor"),
            filter=p.get("filter"),
            prefilter=bool(p.get("prefilter")),  # pylance's default: postfilter
            columns=self._search_columns(),
            use_index=bool(nearest.get("use_index", True)),
            with_row_id=row_id,
            with_row_address=row_address,
            explain=explain,
            fast_search=bool(p.get("fast_search")),
            minimum_nprobes=nearest.get("minimum_nprobes"),
            maximum_nprobes=nearest.get("maximum_nprobes"),
            ef=nearest.get("ef"),
            approx_mode=nearest.get("approx_mode"),
        )

    def _search_columns(self) -> Any:
        """The columns a search reads: those named (without the search's own
        ``_score`` / ``_distance`` and the row ids, which it adds itself), or those
        computed columns read."""
        columns = self._p.get("columns")
        computed = _computed(self._ds._inner, columns)
        if computed is not None:
            return computed[1]
        named = self._named_system()
        if named:
            columns = [c for c in columns if c not in named]
        return _columns(columns)

    def _named_system(self) -> List[str]:
        """The columns named in ``columns=`` that a search produces rather than reads:
        its score (``_score`` for full text, ``_distance`` for vectors) and
        ``_rowid`` / ``_rowaddr`` — pylance 14 takes them there, at any position."""
        columns = self._p.get("columns")
        if not isinstance(columns, (list, tuple)):
            return []
        own = "_score" if self._p.get("full_text_query") is not None else "_distance"
        return [c for c in columns if c in (own, "_rowid", "_rowaddr")]

    def _row_ids(self) -> tuple:
        """Whether the search returns ``_rowid`` / ``_rowaddr`` (asked, or named)."""
        named = self._named_system()
        return (bool(self._p.get("with_row_id")) or "_rowid" in named,
                bool(self._p.get("with_row_address")) or "_rowaddr" in named)

    def _in_named_order(self, table: pa.Table) -> pa.Table:
        """A search's rows with the columns in the order ``columns=`` named them, when
        it named a column the search produces (the others it returns after them)."""
        if not self._named_system():
            return table
        named = list(self._p["columns"])
        return table.select(named + [c for c in table.column_names if c not in named])

    def _nearest_one(self, nearest: dict, q: Any, explain: bool) -> Any:
        """One query vector's search (a batch, or the plan's text)."""
        _checks.nearest_keys(nearest)
        return self._ds._inner.nearest(nearest["column"], [float(x) for x in q],
                                       **self._search_settings(nearest, explain))

    def _meter(self) -> Any:
        """A meter of this scan's cost when ``scan_stats_callback`` asks for one."""
        if self._p.get("scan_stats_callback") is None:
            return None
        frags = self._p.get("fragments")
        return _ScanMeter(self._ds._inner, len(frags) if frags is not None else len(self._ds._inner.fragments()))

    def to_reader(self, _join: bool = False) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader``, produced as they are read
        (``scan_stats_callback`` is called once they are all read)."""
        meter = self._meter()
        reader = self._reader(_join)
        if meter is None:
            return reader
        callback = self._p["scan_stats_callback"]

        def counted() -> Iterator[pa.RecordBatch]:
            rows = 0
            for batch in reader:
                rows += batch.num_rows
                yield batch
            callback(meter.finish(rows))

        return pa.RecordBatchReader.from_batches(reader.schema, counted())

    def _reader(self, _join: bool) -> pa.RecordBatchReader:
        table = self._search()
        if table is not None:
            size = self._p.get("batch_size")
            if size and self._p.get("strict_batch_size"):
                table = table.combine_chunks()
            return table.to_reader(max_chunksize=size)
        p = self._p
        columns, project = p.get("columns"), None
        if isinstance(columns, dict):
            columns, project = None, [(str(k), str(v)) for k, v in columns.items()]
        return self._ds._inner.scan(
            _columns(columns),
            p.get("filter"),
            p.get("limit"),
            p.get("offset"),
            bool(p.get("with_row_id")),
            bool(p.get("with_row_address")),
            p.get("batch_size"),
            p.get("fragments"),
            bool(p.get("use_scalar_index", True)),
            project,
            _join,
            p.get("order_by"),
            fast_search=bool(p.get("fast_search")),
            include_deleted_rows=bool(p.get("include_deleted_rows")),
            strict_batch_size=bool(p.get("strict_batch_size")),
            blob_descriptions=bool(p.get("blob_descriptions")),
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows batch by batch."""
        return _iter(self.to_reader())

    def scan_batches(self) -> List[pa.RecordBatch]:
        """Every batch of the scan, read to the end, in a list (pylance 14 returns the
        plain record batches of ``to_reader()`` here, not fragment-tagged ones)."""
        reader = self.to_reader()
        out = []
        while True:
            try:
                out.append(reader.read_next_batch())
            except StopIteration:
                break
        reader.close()
        return out

    def to_table(self) -> pa.Table:
        """The rows as one ``pyarrow.Table`` (``scan_stats_callback`` is called after)."""
        meter = self._meter()
        table = self._search()
        if table is None:
            # (small batches joined before they cross: the table is wanted whole anyway)
            table = _read_all(self._reader(_join=True))
        if meter is not None:
            self._p["scan_stats_callback"](meter.finish(table.num_rows))
        return table

    def to_pandas(self, **kwargs: Any) -> Any:
        """The rows as a pandas DataFrame."""
        return self.to_table().to_pandas(**kwargs)

    def count_rows(self) -> int:
        """Rows the scan returns (reads only the filter's columns)."""
        p = self._p
        if p.get("nearest") is not None or p.get("full_text_query") is not None:
            return self.to_table().num_rows
        if p.get("fragments") is not None or p.get("limit") is not None or p.get("offset"):
            return sum(b.num_rows for b in self.to_batches())
        if p.get("include_deleted_rows") and not p.get("with_row_id"):
            # (pylance's rule: a deleted row is told by its null _rowid)
            raise ValueError("include_deleted_rows needs with_row_id=True")
        return self._ds._inner.count_rows(p.get("filter"), fast_search=bool(p.get("fast_search")),
                                          include_deleted_rows=bool(p.get("include_deleted_rows")))

    def explain_plan(self, verbose: bool = False) -> str:
        """The plan, in pylance's operator names: for a scan the ``LanceRead`` of the
        fragments and the ``ScalarIndexQuery`` answering its filter; for a ``nearest``
        or ``full_text_query`` search the index operators (``ANNSubIndex``,
        ``KNNVectorDistance``, ``MatchQuery``, ``FlatMatchQuery``), then how the search
        runs in words. ``verbose`` adds nothing (the plan is always complete)."""
        return self._plan(analyze=False)

    def analyze_plan(self) -> str:
        """The query run once, then its plan with what it cost: for a scan pylance's
        metrics on ``LanceRead`` (``output_rows``, ``rows_scanned``, ``bytes_read``,
        ``iops``); for a search the rows returned and the time it took."""
        p = self._p
        if p.get("nearest") is not None or p.get("full_text_query") is not None:
            plan = self.explain_plan()
            start = time.perf_counter()
            rows = self.to_table().num_rows
            elapsed = time.perf_counter() - start
            return f"{plan}ran: {rows} rows in {elapsed * 1000:.3f} ms\n"
        return self._plan(analyze=True)

    def _plan(self, analyze: bool) -> str:
        p = self._p
        if p.get("nearest") is not None or p.get("full_text_query") is not None:
            return self._search(explain=True)
        columns = p.get("columns")
        return self._ds._inner.explain(
            None if isinstance(columns, dict) else _columns(columns), p.get("filter"),
            limit=p.get("limit"), offset=p.get("offset"),
            with_row_id=bool(p.get("with_row_id")), with_row_address=bool(p.get("with_row_address")),
            analyze=analyze)

    @property
    def dataset_schema(self) -> pa.Schema:
        return self._ds.schema

    @property
    def projected_schema(self) -> pa.Schema:
        return self.to_reader().schema

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows."""
        out = []
        left = num_rows
        for b in self.to_batches():
            if left <= 0:
                break
            out.append(b.slice(0, left))
            left -= min(left, b.num_rows)
        schema = self.to_reader().schema if not out else out[0].schema
        return pa.Table.from_batches(out, schema=schema)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)
