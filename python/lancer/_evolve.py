"""``merge_insert``'s builder and ``batch_udf``: pylance 14's shapes over Lancer's merge and
column additions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pyarrow as pa

from . import _lancer

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
        from .dataset import _reader

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
