"""Index descriptions and dataset statistics (``describe_indices``, ``ds.stats``), as
pylance 14 returns them."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

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
