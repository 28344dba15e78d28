"""``ds.optimize``: compaction and index optimization, as pylance 14's ``lance.optimize``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional

from . import _lancer

if TYPE_CHECKING:
    from .dataset import LanceDataset


@dataclass
class CompactionMetrics:
    """What ``compact_files`` did (pylance's names)."""

    fragments_removed: int
    fragments_added: int
    files_removed: int
    files_added: int


class DatasetOptimizer:
    """``ds.optimize``: compaction and index optimization."""

    def __init__(self, ds: LanceDataset):
        self._ds = ds

    def compact_files(self, *, target_rows_per_fragment: int = 1024 * 1024,
                      max_rows_per_group: Optional[int] = None,
                      max_bytes_per_file: Optional[int] = None,
                      materialize_deletions: bool = True,
                      materialize_deletions_threshold: float = 0.1,
                      num_threads: Optional[int] = None,
                      batch_size: Optional[int] = None,
                      **kwargs: Any) -> CompactionMetrics:
        """Merges small fragments and rewrites those with many deleted rows, as
        pylance plans it. ``max_rows_per_group``, ``num_threads`` and ``batch_size``
        tune the work and are accepted."""
        unknown = set(kwargs) - {"defer_index_remap"}
        if unknown:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
        if kwargs.get("defer_index_remap"):
            raise NotImplementedError("defer_index_remap=True is not supported yet")
        inner, m = _lancer.compact_files(
            self._ds._inner.latest(), int(target_rows_per_fragment), bool(materialize_deletions),
            float(materialize_deletions_threshold), max_bytes_per_file)
        self._ds._inner = inner
        return CompactionMetrics(*m)

    def optimize_indices(self, *, num_indices_to_merge: Optional[int] = None,
                         index_names: Optional[List[str]] = None, retrain: bool = False,
                         **kwargs: Any) -> None:
        """Adds the rows appended since each index was built to it, as pylance 14
        does: the new rows and the index's ``num_indices_to_merge`` latest segments
        become one segment (0: a new delta segment; by default a vector index merges
        all its segments, other kinds their latest one), keeping vector indexes'
        centroids and quantizer; ``retrain=True`` rebuilds vector indexes over every
        row. ``index_names`` limits it to those indexes."""
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        merge = None if num_indices_to_merge is None else int(num_indices_to_merge)
        if merge is not None and merge < 0:
            raise ValueError(f"num_indices_to_merge must be >= 0, not {num_indices_to_merge}")
        if index_names is not None:
            index_names = [index_names] if isinstance(index_names, str) else list(index_names)
            known = {d["name"] for d in self._ds._inner.list_segments()}
            missing = [n for n in index_names if n not in known]
            if missing:
                raise ValueError(f"Index not found: {', '.join(missing)}")
        self._ds._inner = _lancer.optimize_indices(
            self._ds._inner.latest(), index_names, merge, bool(retrain))

    def enable_auto_cleanup(self, auto_cleanup_config: Any, **kwargs: Any) -> None:
        """Turns on automatic cleanup (pylance's ``AutoCleanupConfig``: every
        ``interval`` versions, versions older than ``older_than_seconds`` go): one
        commit setting ``lance.auto_cleanup.interval`` / ``lance.auto_cleanup.older_than``."""
        from .dataset import _auto_cleanup

        interval, older = _auto_cleanup(auto_cleanup_config)
        self._ds.update_config({"lance.auto_cleanup.interval": str(interval),
                                "lance.auto_cleanup.older_than": f"{older}s"})

    def disable_auto_cleanup(self, **kwargs: Any) -> None:
        """Turns automatic cleanup off (removes its config keys; one commit)."""
        self._ds.delete_config_keys(["lance.auto_cleanup.interval", "lance.auto_cleanup.older_than"])
