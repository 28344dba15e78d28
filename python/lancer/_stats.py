"""Index descriptions and dataset statistics (``describe_indices``, ``ds.stats``), as
pylance 14 returns them."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from . import _lancer

if TYPE_CHECKING:
    from .dataset import LanceDataset


@dataclass
class IndexSegmentDescription:
    """One segment of an index (pylance's fields; ``fragment_ids`` a set)."""

    uuid: str
    fragment_ids: set
    dataset_version_at_last_update: int
    index_version: int
    created_at: Optional[_dt.datetime]
    base_id: Optional[int]
    size_bytes: Optional[int]
    covering_fields: List[str] = dataclasses.field(default_factory=list)


@dataclass
class IndexDescription:
    """One index as ``describe_indices`` lists it (pylance's fields). ``details``:
    for vector indexes what the manifest records (metric, compression, HNSW settings,
    runtime hints; an IVF_RQ's rotation type is not read), ``{}`` for scalar kinds; for
    INVERTED indexes ``{}`` where pylance shows its tokenizer settings
    (``index_statistics`` has them)."""

    name: str
    index_type: str
    type_url: str
    num_rows_indexed: int
    fields: List[int]
    field_names: List[str]
    segments: List[IndexSegmentDescription]
    details: Dict[str, Any]
    total_size_bytes: Optional[int]

    @property
    def num_segments(self) -> int:
        return len(self.segments)


def _index_description(d: Dict[str, Any]) -> IndexDescription:
    """A fresh :class:`IndexDescription` (its own lists and sets) from the engine's dict,
    which stays unchanged (it may be cached)."""
    utc = _dt.timezone.utc
    segments = [
        IndexSegmentDescription(
            s["uuid"], set(s["fragment_ids"]), s["dataset_version_at_last_update"], s["index_version"],
            None if s["created_at_ms"] is None else _dt.datetime.fromtimestamp(s["created_at_ms"] / 1000, tz=utc),
            s["base_id"], s["size_bytes"])
        for s in d["segments"]
    ]
    return IndexDescription(d["name"], d["index_type"], d["type_url"], d["num_rows_indexed"],
                            list(d["fields"]), list(d["field_names"]), segments, dict(d["details"]),
                            d["total_size_bytes"])


@dataclass
class FieldStatistics:
    """Bytes one field takes on disk (its columns' page buffers)."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """``stats.data_stats()``: per field of the schema."""

    fields: List[FieldStatistics]


class LanceStats:
    """``ds.stats``: statistics of the dataset and its indexes, as pylance's."""

    def __init__(self, ds: "LanceDataset"):
        self._ds = ds

    def dataset_stats(self, max_rows_per_group: int = 1024) -> Dict[str, int]:
        """``num_deleted_rows``, ``num_fragments`` and ``num_small_files`` (fragments
        of fewer than ``max_rows_per_group`` rows)."""
        deleted, fragments, small = self._ds._inner.dataset_stats(int(max_rows_per_group))
        return {"num_deleted_rows": deleted, "num_fragments": fragments, "num_small_files": small}

    def index_stats(self, index_name: str) -> Dict[str, Any]:
        """As ``LanceDataset.index_statistics``."""
        return self._ds.index_statistics(index_name)

    def data_stats(self) -> DataStatistics:
        """Bytes on disk per field."""
        return DataStatistics(fields=[FieldStatistics(i, b) for i, b in self._ds._inner.data_stats()])


@dataclass
class ScanStatistics:
    """What a scan cost (``scanner(scan_stats_callback=...)``), in pylance's fields,
    measured by lancer's session: ``requests`` / ``iops`` and ``bytes_read`` are the
    storage reads the scan made (on local disk, reads of the memory-mapped data files
    count the bytes asked, one request per read),
    ``indices_loaded`` the index segments it opened (``index_cache_misses``),
    ``index_cache_hits`` those it found open; ``all_counts`` adds
    ``fragments_scanned`` and ``rows_scanned`` (the rows returned), ``all_times`` the
    scan's wall time in nanoseconds (``search_time``). Lancer does not count
    ``parts_loaded`` or ``index_comparisons`` (0)."""

    iops: int
    requests: int
    bytes_read: int
    indices_loaded: int
    parts_loaded: int
    index_comparisons: int
    index_cache_hits: int
    index_cache_misses: int
    all_counts: Dict[str, int]
    all_times: Dict[str, int]


class _ScanMeter:
    """Counters of a dataset's session before a scan, to report the scan's share."""

    def __init__(self, inner: Any, fragments: int):
        self._lancer, self._inner, self._fragments = _lancer, inner, fragments
        self._io = _lancer.io_stats(inner, False)
        self._cache = _lancer.index_cache_stats(inner)
        self._start = time.perf_counter_ns()

    def finish(self, rows: int) -> ScanStatistics:
        io = self._lancer.io_stats(self._inner, False)
        cache = self._lancer.index_cache_stats(self._inner)
        reads, read_bytes = io[0] - self._io[0], io[1] - self._io[1]
        hits, misses = cache[1] - self._cache[1], cache[2] - self._cache[2]
        counts = {"fragments_scanned": self._fragments, "rows_scanned": rows,
                  "index_cache_hits": hits, "index_cache_misses": misses}
        return ScanStatistics(reads, reads, read_bytes, misses, 0, 0, hits, misses, counts,
                              {"search_time": time.perf_counter_ns() - self._start})
