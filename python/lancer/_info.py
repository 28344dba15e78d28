"""What a dataset says about itself, pylance 14's shapes (issue 41): ``fragment_ids``,
``get_version``, ``slice``, ``max_field_id``, I/O statistics, ``all_files`` /
``tracked_files``, ``validate``, ``truncate_table``, ``LanceDataset.drop``, IVF
models and centroids, ``prewarm_index``; and pylance's typing names
(``UpdateResult``, ``DeleteResult``, ``ExecuteResult``, ``AlterColumn``, ``Tag``,
``Version``, ``IndexInformation``, ``DatasetStats``). ``LanceDataset`` takes the
methods from :class:`_DatasetInfo`."""

from __future__ import annotations

import datetime as _dt
from collections.abc import MutableSet
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, TypedDict, Union

import pyarrow as pa

from . import _lancer
from ._util import DatasetNotFoundError, _options


class UpdateResult(TypedDict):
    num_rows_updated: int


class DeleteResult(TypedDict):
    num_deleted_rows: int


class ExecuteResult(TypedDict):
    num_inserted_rows: int
    num_updated_rows: int
    num_deleted_rows: int


class AlterColumn(TypedDict):
    path: str
    name: Optional[str]
    nullable: Optional[bool]
    data_type: Optional[pa.DataType]


class Tag(TypedDict):
    branch: Optional[str]
    version: int
    created_at: Optional[_dt.datetime]
    updated_at: Optional[_dt.datetime]
    manifest_size: int
    metadata: Dict[str, str]


class Version(TypedDict):
    version: int
    timestamp: Union[int, _dt.datetime]
    metadata: Dict[str, str]


class IndexInformation(TypedDict):
    """One index segment, as ``list_indices`` gives it (``fragment_ids``: a set)."""

    name: str
    type: str
    uuid: str
    fields: List[str]
    version: int
    fragment_ids: Set[int]
    base_id: Optional[int]


class DatasetStats(TypedDict):
    num_deleted_rows: int
    num_fragments: int
    num_small_files: int


class Bitmap(MutableSet):
    """A set of non-negative integers iterated in ascending order, as pylance's
    ``lance.bitmap.Bitmap`` (what ``fragment_ids()`` returns): a ``MutableSet``, equal to
    any set of the same values."""

    def __init__(self, values: Optional[Iterable[int]] = None):
        self._values: Set[int] = set()
        for v in values or ():
            self.add(v)

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def add(self, value: int) -> None:
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"a Bitmap holds non-negative integers, not {value!r}")
        self._values.add(value)

    def discard(self, value: int) -> None:
        self._values.discard(value)

    def copy(self) -> "Bitmap":
        return Bitmap(self._values)

    @classmethod
    def _from_iterable(cls, it: Iterable[int]) -> "Bitmap":
        return cls(it)

    def union(self, other: Iterable[int]) -> "Bitmap":
        return Bitmap(self._values.union(other))

    def intersection(self, other: Iterable[int]) -> "Bitmap":
        return Bitmap(self._values.intersection(other))

    def difference(self, other: Iterable[int]) -> "Bitmap":
        return Bitmap(self._values.difference(other))

    def symmetric_difference(self, other: Iterable[int]) -> "Bitmap":
        return Bitmap(self._values.symmetric_difference(other))

    def issubset(self, other: Iterable[int]) -> bool:
        return self._values.issubset(other)

    def issuperset(self, other: Iterable[int]) -> bool:
        return self._values.issuperset(other)

    def update(self, *others: Iterable[int]) -> None:
        for o in others:
            for v in o:
                self.add(v)

    def __repr__(self) -> str:
        return f"Bitmap({{{', '.join(str(v) for v in self)}}})"


class IOStats:
    """Requests and bytes of a dataset's session, as pylance's ``IOStats``: reads
    (gets, size lookups and lists), bytes read, writes (puts and deletes), bytes
    written."""

    __slots__ = ("read_iops", "read_bytes", "write_iops", "written_bytes")

    def __init__(self, read_iops: int, read_bytes: int, write_iops: int, written_bytes: int):
        self.read_iops = read_iops
        self.read_bytes = read_bytes
        self.write_iops = write_iops
        self.written_bytes = written_bytes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IOStats) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return (f"IOStats(read_iops={self.read_iops}, read_bytes={self.read_bytes}, "
                f"write_iops={self.write_iops}, write_bytes={self.written_bytes})")


class IvfModel:
    """A vector index's IVF model, as pylance's ``lance.indices.IvfModel``:
    ``centroids`` (a ``pyarrow.FixedSizeListArray``, one vector per partition),
    ``distance_type``, ``num_partitions`` (and lancer's ``dimension``)."""

    def __init__(self, centroids: pa.Array, distance_type: str):
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        return len(self.centroids)

    @property
    def dimension(self) -> int:
        return self.centroids.type.list_size


_FILES = pa.schema([
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("size_bytes", pa.int64(), nullable=False),
    pa.field("last_modified", pa.timestamp("us", tz="UTC"), nullable=False),
])
_TRACKED = pa.schema([
    pa.field("version", pa.int64(), nullable=False),
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("type", pa.dictionary(pa.int8(), pa.string()), nullable=False),
])


def _base_uri(uri: str, n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([uri], pa.string()))


class _DatasetInfo:
    """The methods of ``LanceDataset`` this module adds (it keeps ``_inner``,
    ``_storage_options`` and ``uri``)."""

    _inner: Any
    _storage_options: Optional[Dict[str, str]]
    uri: str

    def fragment_ids(self) -> Bitmap:
        """The ids of this version's fragments (ascending), without fragment objects."""
        return Bitmap(f["id"] for f in self._inner.fragments())

    @property
    def max_field_id(self) -> int:
        """The highest field id the manifest uses (a dropped column's id still counts)."""
        return _lancer.max_field_id(self._inner)

    def get_version(self) -> Version:
        """This version: ``version``, ``timestamp`` (a naive local datetime) and
        ``metadata``, pylance's summary of the manifest (``total_rows``,
        ``total_fragments``, ``total_data_files``, ``total_files_size``,
        ``total_deletion_files``, ``total_deletion_file_rows``,
        ``total_data_file_rows``; values as strings). Reads nothing from storage."""
        version, secs, nanos, summary = _lancer.version_summary(self._inner)
        ts_nanos = secs * 1_000_000_000 + nanos
        # pylance's rounding: whole seconds, then microseconds
        ts = _dt.datetime.fromtimestamp(ts_nanos // 1e9) + _dt.timedelta(
            microseconds=(ts_nanos % 1e9) // 1e3)
        return {"version": version, "timestamp": ts, "metadata": dict(summary)}

    def slice(self, start: int, end: int, columns: Any = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position, as an
        offset / limit scan."""
        if start < 0:
            raise ValueError(f"start must be non-negative, got {start}")
        if end < start:
            raise ValueError(f"end ({end}) must be >= start ({start})")
        return self.scanner(offset=start, limit=end - start, columns=columns).to_table()  # type: ignore[attr-defined]

    def io_stats_snapshot(self) -> IOStats:
        """The requests and bytes of this dataset's session since the last
        ``io_stats_incremental`` (since the dataset was opened or written, before any),
        without resetting them. The session is shared by versions checked out from the
        dataset. On local disk data files are read through a memory map, not
        requests: only the metadata reads are counted there (object stores and
        ``memory://`` count every read)."""
        return IOStats(*_lancer.io_stats(self._inner, False))

    def io_stats_incremental(self) -> IOStats:
        """``io_stats_snapshot()``, then the counters start again from zero (for this
        dataset's session)."""
        return IOStats(*_lancer.io_stats(self._inner, True))

    def all_files(self) -> pa.RecordBatchReader:
        """Every file under the dataset's root: ``base_uri``, ``path`` (below it),
        ``size_bytes``, ``last_modified`` (UTC; lancer's listing has millisecond
        precision)."""
        rows = _lancer.all_files(self._inner)
        table = pa.Table.from_arrays([
            _base_uri(self.uri, len(rows)),
            pa.array([r[0] for r in rows], pa.string()),
            pa.array([r[1] for r in rows], pa.int64()),
            pa.array([r[2] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
        ], schema=_FILES)
        return table.to_reader()

    def tracked_files(self, *, min_version: Optional[int] = None,
                      progress: Optional[Callable[[int, Optional[int]], Any]] = None) -> pa.RecordBatchReader:
        """The files every version (from ``min_version`` on) references: ``version``,
        ``base_uri``, ``path``, ``type`` (``manifest``, ``data file``, ``deletion
        file``, ``transaction file``, ``index file``); files of other bases are left
        out. ``progress(manifests_done, manifests_total)`` is called once per manifest
        (after all were read: the total is known from the start)."""
        rows = _lancer.tracked_files(self._inner, min_version)
        types = ["manifest", "data file", "deletion file", "transaction file", "index file"]
        table = pa.Table.from_arrays([
            pa.array([r[0] for r in rows], pa.int64()),
            _base_uri(self.uri, len(rows)),
            pa.array([r[1] for r in rows], pa.string()),
            pa.DictionaryArray.from_arrays(pa.array([types.index(r[2]) for r in rows], pa.int8()),
                                           pa.array(types, pa.string())),
        ], schema=_TRACKED)
        if progress is not None:
            versions = sorted({r[0] for r in rows})
            for i in range(len(versions)):
                progress(i + 1, len(versions))
        return table.to_reader()

    def validate(self) -> None:
        """Checks this version: fragment ids distinct and ascending, every data file
        present with the size and rows its manifest records, deletion files readable,
        index segments listed once. A problem raises ``lancer.CorruptDataError`` (an
        ``OSError``, as pylance raises) naming every one found."""
        problems = _lancer.validate(self._inner)
        if problems:
            raise _lancer.CorruptDataError(
                f"dataset {self.uri} version {self._inner.version} is damaged: " + "; ".join(problems))

    def truncate_table(self) -> None:
        """Deletes every row (the schema and indexes stay) as a new version, as
        pylance commits it: a delete of every fragment."""
        self.delete("true")  # type: ignore[attr-defined]

    @staticmethod
    def drop(base_uri: Union[str, Path], storage_options: Optional[Dict[str, str]] = None,
             ignore_not_found: Optional[bool] = None) -> None:
        """Deletes the dataset at ``base_uri`` and everything under it. The path must be
        a dataset root (a manifest that reads): anything else is a ``ValueError``. A
        missing path is ``lancer.DatasetNotFoundError`` (a ``FileNotFoundError``) unless
        ``ignore_not_found``."""
        try:
            _lancer.drop_dataset(str(base_uri), _options(storage_options), bool(ignore_not_found))
        except FileNotFoundError as e:
            raise DatasetNotFoundError(str(e)) from None

    def get_ivf_model(self, index_name: str) -> Optional[IvfModel]:
        """The IVF model of the vector index ``index_name`` (its centroids and metric);
        None when it covers no rows yet. Another kind of index, or an unknown name, is
        a ``ValueError``."""
        model = _lancer.ivf_model(self._inner, str(index_name))
        if model is None:
            return None
        centroids, metric = model
        return IvfModel(pa.array(centroids) if not isinstance(centroids, pa.Array) else centroids, metric)

    def centroids(self, *, index_name: Optional[str] = None, column: Optional[str] = None) -> Any:
        """The IVF centroids (a ``pyarrow.FixedSizeListArray``) of ``index_name``, or
        of the first IVF index on ``column``; ``KeyError`` when the column has none."""
        if index_name is None:
            if column is None:
                raise ValueError("Must provide 'index_name' or 'column'.")
            names = sorted({d["name"] for d in self._inner.list_segments()
                            if column in d["fields"] and str(d["type"]).upper().startswith("IVF")})
            if not names:
                raise KeyError(f"No IVF index for column '{column}'")
            index_name = names[0]
        model = self.get_ivf_model(index_name)
        return None if model is None else model.centroids

    def prewarm_index(self, name: str, *, with_position: bool = False,
                      index_segments: Optional[Iterable[Any]] = None) -> None:
        """Loads every segment of the index ``name`` into this dataset's session cache,
        so the next searches and filters through it read no index file.
        ``with_position`` (INVERTED position lists) tunes what is loaded and has no
        effect here; ``index_segments`` (only some segments) raises
        ``NotImplementedError``. An unknown name is a ``RuntimeError``, as pylance's."""
        if index_segments is not None:
            raise NotImplementedError("prewarm_index(index_segments=...) is not supported by lancer yet: "
                                      "it prewarms every segment of the index")
        if not any(d["name"] == name for d in self._inner.list_segments()):
            raise RuntimeError(f"no index named {name!r}: describe_indices() lists the indexes there are")
        _lancer.prewarm_index(self._inner, str(name))
