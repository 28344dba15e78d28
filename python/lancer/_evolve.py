"""``merge_insert``'s builder and ``batch_udf``: pylance 14's shapes over Lancer's merge and
column additions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pyarrow as pa

from . import _lancer
from ._util import _is_pandas, _reader

if TYPE_CHECKING:
    from .dataset import LanceDataset


class MergeInsertBuilder:
    """pylance's merge_insert builder over Lancer's merge."""

    def __init__(self, ds: LanceDataset, on: List[str]):
        self._ds = ds
        self._on = on
        # what happens to matched rows: None (nothing), "update", "delete" or "fail";
        # the last when_matched_* call decides, as in pylance
        self._matched: Optional[str] = None
        self._condition: Optional[str] = None
        self._insert = False
        self._delete = False
        self._delete_filter: Optional[str] = None
        self._use_index = True
        self._target_bases: Optional[List[str]] = None
        self._target_all_bases: Optional[bool] = None

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeInsertBuilder":
        """Matched target rows take the source's values (those where the SQL
        ``condition`` over ``source.x`` / ``target.x`` holds)."""
        self._matched, self._condition = "update", condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Matched target rows are deleted (counted in ``num_deleted_rows``)."""
        self._matched, self._condition = "delete", None
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        """Any matched row fails the merge with an ``OSError`` naming its key, and
        nothing is committed (the merge then only inserts new keys)."""
        self._matched, self._condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Source rows without a match are inserted."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[str] = None) -> "MergeInsertBuilder":
        """Target rows no source row matched are deleted (those ``expr`` selects)."""
        self._delete, self._delete_filter = True, expr
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Locate matched rows through scalar indexes on the keys (default) or scan."""
        self._use_index = bool(use_index)
        return self

    def target_bases(self, bases: List[str]) -> "MergeInsertBuilder":
        """New data files go to these registered bases (by name or path; the
        dataset's URI for its own location), one file each in turn; deletion files stay
        in the dataset's location. Not with :meth:`target_all_bases`."""
        if isinstance(bases, str) or not all(isinstance(b, str) for b in bases):
            raise TypeError("target_bases takes a list of base names or paths (str)")
        self._target_bases = [str(b) for b in bases]
        return self

    def target_all_bases(self, include_primary: bool = True) -> "MergeInsertBuilder":
        """New data files go to every registered base in turn (the dataset's own
        location first when ``include_primary``)."""
        self._target_all_bases = bool(include_primary)
        return self

    def conflict_retries(self, retries: int) -> "MergeInsertBuilder":
        """Accepted (Lancer rebases a compatible concurrent commit itself)."""
        return self

    def retry_timeout(self, timeout: Any) -> "MergeInsertBuilder":
        """Accepted (see ``conflict_retries``)."""
        return self

    def execute(self, data: Any, *, schema: Optional[pa.Schema] = None) -> Dict[str, int]:
        """Runs the merge with ``data`` as the source: pylance's statistics."""
        reader = _reader(data, schema)
        inner, stats = _lancer.merge_insert(
            self._ds._inner.latest(), self._on, reader, self._matched == "update", self._condition,
            self._insert, self._delete, self._delete_filter, self._use_index,
            self._matched == "delete", self._matched == "fail",
            target_bases=self._target_bases, target_all_bases=self._target_all_bases)
        self._ds._inner = inner
        return dict(stats)


class BatchUDF:
    """A function adding columns (``LanceDataset.add_columns``), with the schema of what
    it returns; see :func:`batch_udf`."""

    def __init__(self, func: Any, output_schema: Optional[pa.Schema] = None, checkpoint_file: Any = None):
        self.func = func
        self.output_schema = output_schema
        self.checkpoint_file = checkpoint_file

    def __call__(self, batch: pa.RecordBatch) -> Any:
        return self.func(batch)


def batch_udf(output_schema: Optional[pa.Schema] = None, checkpoint_file: Any = None) -> Any:
    """pylance's decorator making a function over batches a :class:`BatchUDF` for
    ``add_columns`` (``checkpoint_file`` is refused when the function is used)."""

    def wrap(func: Any) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap


def _udf_parts(ds: "LanceDataset", func: Any, read_columns: Optional[List[str]],
               batch_size: Optional[int]) -> tuple:
    """(new columns' schema, a function batch -> RecordBatch of them, rows per call) of
    a function adding columns (a ``batch_udf`` or a plain callable returning a pyarrow
    RecordBatch / Table or a pandas DataFrame); without ``output_schema`` the schema is
    that of the function's output on ``ds``'s first batch, as pylance infers it."""
    if getattr(func, "checkpoint_file", None) is not None:
        raise NotImplementedError("batch_udf(checkpoint_file=...) is not supported by lancer yet")
    schema = getattr(func, "output_schema", None)
    inner = getattr(func, "func", func)

    def as_batch(out: Any) -> pa.RecordBatch:
        if _is_pandas(out):
            out = pa.RecordBatch.from_pandas(out, preserve_index=False)
        elif isinstance(out, pa.Table):
            out = out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist(
                [], schema=out.schema)
        if not isinstance(out, pa.RecordBatch):
            raise TypeError(f"a function adding columns returns a pyarrow RecordBatch or a pandas "
                            f"DataFrame, not {type(out).__name__}")
        return out

    step = int(batch_size or 1024)
    if schema is None:
        first = None
        for b in ds.to_batches(columns=read_columns, batch_size=step):
            first = b
            break
        if first is None:
            # (a TypeError, as pylance raises when it cannot call the function on a row)
            raise TypeError("the dataset has no rows to infer the new columns from: give batch_udf(output_schema=)")
        schema = as_batch(inner(first)).schema

    def call(batch: pa.RecordBatch) -> pa.RecordBatch:
        out = as_batch(inner(batch))
        if out.schema != schema:
            raise ValueError(f"the function returned columns {out.schema} where {schema} was expected")
        return out

    return schema, call, step
