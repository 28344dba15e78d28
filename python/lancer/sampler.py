"""Samplers for training over a dataset: ``lancer.sampler`` stands in for pylance's
``lance.sampler``.

Same classes, arguments and output as pylance 14: for the same dataset, arguments, seed
and epoch a sampler yields the same rows in the same batches in the same order, and it
draws from Python's ``random`` (and NumPy's global generator in :func:`maybe_sample`)
exactly as pylance does, so a seeded run reproduces pylance's.

* :class:`FullScanSampler`, :class:`ShardedFragmentSampler` (``fragments[rank::world_size]``,
  shuffled with ``random.seed(seed)`` when ``randomize``) scan whole fragments.
* :class:`ShardedBatchSampler`: without a filter, rank ``r`` reads the row ranges
  ``[k * batch_size, (k + 1) * batch_size)`` with ``k % world_size == r`` (one batch per
  range, the ranges shuffled with ``random.seed(seed)``); with a filter, every rank scans
  the filtered rows, keeps every ``world_size``-th one from its rank on, re-batches them
  and (``randomize``) shuffles the batches through a 256-batch heap seeded with
  ``seed + epoch``.
* :class:`ShardedFixedBatchSampler` yields lists of row numbers (for a DataLoader).
* :func:`maybe_sample` draws ``n`` rows for training an index.
"""

from __future__ import annotations

import gc
import heapq
import logging
import math
import random
import re
import warnings
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Dict, Generic, Iterable, Iterator, List, Optional, TypeVar, Union

import pyarrow as pa
import pyarrow.compute as pc

from .dataset import LanceDataset, LanceFragment
from .dataset import dataset as _open_dataset

__all__ = [
    "maybe_sample",
    "Sampler",
    "FragmentSampler",
    "FullScanSampler",
    "ShardedFragmentSampler",
    "ShardedBatchSampler",
]

LOGGER = logging.getLogger(__name__)

# pylance's scanner batch size when none is given
_DEFAULT_BATCH_SIZE = 8192

T = TypeVar("T")


# --- batches as pylance's scanner cuts them ------------------------------------------


def _fixed_width(t: pa.DataType) -> Optional[int]:
    """Bytes per value of a fixed-width type (None for variable width and booleans)."""
    if pa.types.is_fixed_size_list(t):
        child = _fixed_width(t.value_type)
        return None if child is None else child * t.list_size
    if pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t):
        return t.byte_width
    if pa.types.is_boolean(t) or pa.types.is_null(t) or pa.types.is_dictionary(t):
        return None
    if pa.types.is_interval(t):
        return 16
    try:
        bits = t.bit_width
    except ValueError:
        return None
    return bits // 8 if bits and bits % 8 == 0 else None


def _read_late(t: pa.DataType) -> bool:
    """Whether pylance reads a column of this type after the filter (by row id) rather
    than with the filter's columns: on local storage anything not fixed-width or at
    least 10 bytes a value; a struct when any of its leaves is."""
    if pa.types.is_struct(t):
        return any(_read_late(t.field(i).type) for i in range(t.num_fields))
    width = _fixed_width(t)
    return width is None or width >= 10


def _names_in(sql: str) -> set:
    """Lower-cased top-level names an SQL expression may refer to (string literals
    removed; `quoted` names and dotted paths count by their first part)."""
    sql = re.sub(r"'(?:[^']|'')*'", " ", sql)
    found = set()
    for m in re.finditer(r"`([^`]+)`|\"([^\"]+)\"|([A-Za-z_][A-Za-z0-9_]*)", sql):
        name = next(g for g in m.groups() if g is not None)
        found.add(name.split(".")[0].lower())
    return found


def _field_type(schema: pa.Schema, name: str) -> Optional[pa.DataType]:
    if name in schema.names:
        return schema.field(name).type
    parts = name.split(".")
    if parts[0] not in schema.names:
        return None
    t = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        t = t.field(part).type
    return t


def _takes_after_filter(dataset: LanceDataset, columns: Any, filter: Optional[str]) -> bool:
    """Whether pylance's filtered scan of ``columns`` fetches some of them by row id
    after filtering (late materialization), which regroups its batches."""
    if filter is None:
        return False
    schema = dataset.schema
    in_filter = _names_in(filter)
    if columns is None:
        wanted: List[str] = list(schema.names)
    elif isinstance(columns, dict):
        lower = {n.lower(): n for n in schema.names}
        wanted = [lower[n] for e in columns.values() for n in _names_in(str(e)) if n in lower]
    elif isinstance(columns, str):
        wanted = [columns]
    else:
        wanted = list(columns)
    for name in wanted:
        if name.split(".")[0].lower() in in_filter:
            continue
        t = _field_type(schema, name)
        if t is not None and _read_late(t):
            return True
    return False


def _combine(batches: List[pa.RecordBatch]) -> pa.RecordBatch:
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _regroup(batches: Iterable[pa.RecordBatch], target: int) -> Iterator[pa.RecordBatch]:
    """pylance's grouping of filtered rows before its by-row-id read: a batch of at
    least ``target`` rows goes alone (after whatever is pending); smaller ones are
    joined until they reach ``target``; empty ones are dropped."""
    pending: List[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if batch.num_rows >= target:
            if pending:
                yield _combine(pending)
                pending, rows = [], 0
            yield batch
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= target:
            yield _combine(pending)
            pending, rows = [], 0
    if pending:
        yield _combine(pending)


def _scan(dataset: LanceDataset, *, columns: Any = None, filter: Optional[str] = None,
          batch_size: Optional[int] = None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
    """``dataset.scanner(...).to_batches()`` with pylance's batch boundaries: the rows
    are lancer's; when pylance would read some columns after the filter, its batches
    are regrouped as pylance groups them (a no-op when they already are)."""
    batches = dataset.scanner(columns=columns, filter=filter, batch_size=batch_size, **kwargs).to_batches()
    if _takes_after_filter(dataset, columns, filter):
        return _regroup(batches, batch_size or _DEFAULT_BATCH_SIZE)
    return iter(batches)


def _as_dataset(dataset: Any) -> LanceDataset:
    if isinstance(dataset, (str, Path)):
        return _open_dataset(dataset)
    return dataset


# --- maybe_sample ---------------------------------------------------------------------


def _efficient_sample(
    dataset: LanceDataset,
    n: int,
    columns: Any,
    batch_size: int,
    max_takes: int,
) -> Iterator[pa.RecordBatch]:
    """``n`` rows as up to ``max_takes`` runs of adjacent rows, one run per equal
    stretch of the dataset (its start drawn with ``numpy.random.randint``), yielded in
    batches of at least ``batch_size`` rows (the last one possibly fewer)."""
    import numpy as np

    total = len(dataset)
    assert total > n
    stretch = total // max_takes
    per_stretch = n // max_takes

    held: List[pa.RecordBatch] = []
    drawn = 0
    for number, start in enumerate(range(0, total, stretch)):
        if drawn >= n:
            break
        drawn += per_stretch
        length = min(stretch, total - start)
        count = min(per_stretch, length)
        first = start
        if count < length:
            first = start + np.random.randint(0, length - count)
        held.extend(dataset.take(list(range(first, first + count)), columns=columns).to_batches())
        if number % 50 == 0:
            LOGGER.info("Sampled at offset=%s, len=%s", first, per_stretch)
        if sum(b.num_rows for b in held) >= batch_size:
            yield _combine(held)
            held = []
    if held:
        yield _combine(held)


def _filtered_efficient_sample(
    dataset: LanceDataset,
    n: int,
    columns: List[str],
    batch_size: int,
    target_takes: int,
    filter: str,
) -> Iterator[pa.RecordBatch]:
    """``n`` rows passing ``filter`` (only ``<column> IS NOT NULL`` on the single
    column read), read from equal slices of the dataset in an order shuffled with
    ``random.shuffle``; batches of ``batch_size`` rows."""
    total = len(dataset)
    slice_rows = math.ceil(n / target_takes)
    order = list(range(math.ceil(total / slice_rows)))
    random.shuffle(order)

    pending: List[pa.Table] = []
    left = n
    room = min(batch_size, n)
    for piece in order:
        start = piece * slice_rows
        stop = min(start + slice_rows, total)
        table = dataset.to_table(columns=columns, offset=start, limit=stop - start, batch_size=slice_rows)
        if len(columns) == 1 and filter.lower() == f"{columns[0]} is not null".lower():
            table = pc.drop_null(table)
        elif filter is not None:
            raise NotImplementedError(f"Can't yet run filter <{filter}> in-memory")
        if table.num_rows == 0:
            continue
        if table.num_rows > left:
            table = table.slice(0, left)
        pending.append(table)
        left -= table.num_rows
        room -= table.num_rows
        if room <= 0:
            joined = pa.concat_tables(pending).combine_chunks()
            yield joined.slice(0, batch_size).to_batches()[0]
            room = min(batch_size, left)
            if len(joined) > batch_size:
                rest = joined.slice(batch_size)
                pending = [rest]
                room -= len(rest)
            else:
                pending = []
        if left <= 0:
            break


def maybe_sample(
    dataset: Union[str, Path, LanceDataset],
    n: int,
    columns: Union[List[str], str],
    batch_size: int = 10240,
    max_takes: int = 2048,
    filt: Optional[str] = None,
) -> Iterator[pa.RecordBatch]:
    """Yields about ``n`` rows of ``columns`` in batches, as pylance's
    ``lance.sampler.maybe_sample``: every row (a scan, ``filt`` applied) when the
    dataset has at most ``n``; with ``filt``, rows from shuffled slices; with more than
    ``max_takes`` rows wanted, up to ``max_takes`` runs of adjacent rows; otherwise
    ``n`` rows drawn with ``numpy.random.choice``."""
    dataset = _as_dataset(dataset)
    if isinstance(columns, str):
        columns = [columns]

    if n >= len(dataset):
        yield from _scan(dataset, columns=columns, batch_size=batch_size, filter=filt)
    elif filt is not None:
        yield from _filtered_efficient_sample(dataset, n, columns, batch_size, max_takes, filt)
    elif n > max_takes:
        yield from _efficient_sample(dataset, n, columns, batch_size, max_takes)
    else:
        import numpy as np

        picked = np.random.choice(len(dataset), n, replace=False)
        for start in range(0, len(picked), batch_size):
            stop = min(start + batch_size, len(picked))
            table = dataset.take(picked[start:stop], columns=columns).combine_chunks()
            yield table.to_batches()[0]


# --- reservoir ------------------------------------------------------------------------


class PrioritizedItem(Generic[T]):
    """A heap entry ordered (and compared) by ``priority`` alone: equal priorities
    compare equal whatever the items, as in pylance."""

    __slots__ = ("priority", "item")

    def __init__(self, priority: int, item: T):
        self.priority = priority
        self.item = item

    def __lt__(self, other: "PrioritizedItem") -> bool:
        return self.priority < other.priority

    def __le__(self, other: "PrioritizedItem") -> bool:
        return self.priority <= other.priority

    def __gt__(self, other: "PrioritizedItem") -> bool:
        return self.priority > other.priority

    def __ge__(self, other: "PrioritizedItem") -> bool:
        return self.priority >= other.priority

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.priority == other.priority  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PrioritizedItem(priority={self.priority!r}, item={self.item!r})"


def reservoir_sampling(stream: Iterable[T], k: int) -> List[T]:
    """Keeps ``k`` items of ``stream``: each gets a random priority in ``[0, 2k)``
    (``numpy.random.default_rng()``) and the ``k`` highest stay (heap order)."""
    import numpy as np

    rng = np.random.default_rng()
    heap: List[PrioritizedItem] = []
    for position, item in enumerate(stream):
        entry = PrioritizedItem(rng.integers(0, k * 2), item)
        if len(heap) < k:
            heapq.heappush(heap, entry)
        else:
            heapq.heappushpop(heap, entry)
        if position % 10240 == 0:
            LOGGER.info("Force Python GC")
            gc.collect()
    return [entry.item for entry in heap]


# --- samplers -------------------------------------------------------------------------


class Sampler(ABC):
    """Yields ``pyarrow.RecordBatch`` from a dataset: subclasses implement
    ``__call__``."""

    @abstractmethod
    def __call__(
        self,
        ds: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Optional[Union[List[str], Dict[str, str]]] = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: bool = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """The batches."""


class FragmentSampler(Sampler):
    """Scans the fragments ``iter_fragments`` yields, in that order."""

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Optional[Union[List[str], Dict[str, str]]] = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: bool = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        chosen = list(self.iter_fragments(dataset, *args, **kwargs))
        yield from _scan(
            dataset,
            batch_size=batch_size,
            columns=columns,
            filter=filter,
            with_row_id=with_row_id,
            batch_readahead=batch_readahead,
            fragments=chosen,
        )

    @abstractmethod
    def iter_fragments(self, ds: LanceDataset, *args: Any, **kwargs: Any) -> Iterator[LanceFragment]:
        """The fragments to scan, in order."""


class FullScanSampler(FragmentSampler):
    """Every fragment, in dataset order."""

    def iter_fragments(self, dataset: LanceDataset, **kwargs: Any) -> Iterator[LanceFragment]:
        yield from dataset.get_fragments()


def _torch_rank_and_world() -> tuple:
    import torch  # only here: torch is optional

    return torch.distributed.get_rank(), torch.distributed.get_world_size()


class ShardedFragmentSampler(FragmentSampler):
    """Rank ``rank`` of ``world_size`` scans fragments ``rank, rank + world_size, ...``
    of the fragment list, shuffled first with ``random.seed(seed)`` when ``randomize``
    (the epoch does not change the order, as in pylance)."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        super().__init__()
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> "ShardedFragmentSampler":
        """Rank and world size from ``torch.distributed``."""
        rank, world_size = _torch_rank_and_world()
        return ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)

    def iter_fragments(self, dataset: LanceDataset, **kwargs: Any) -> Iterator[LanceFragment]:
        fragments = dataset.get_fragments()
        if self._randomize:
            random.seed(self._seed)
            random.shuffle(fragments)
        yield from fragments[self._rank::self._world_size]


class ShardedBatchSampler(Sampler):
    """Rank ``rank`` of ``world_size`` reads every ``world_size``-th batch.

    Without a filter the row ranges ``[k * batch_size, (k + 1) * batch_size)`` with
    ``k % world_size == rank`` are read, one batch each, in order or shuffled with
    ``random.seed(seed)``. With a filter every rank scans the filtered rows, keeps
    rows ``rank, rank + world_size, ...``, re-batches them to ``batch_size`` and, with
    ``randomize``, shuffles the batches through a 256-entry heap seeded with
    ``seed + epoch``."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def __len__(self) -> int:
        # only ShardedFixedBatchSampler knows its length (an AttributeError here, as in pylance)
        return self._len  # type: ignore[attr-defined]

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> "ShardedBatchSampler":
        """Rank and world size from ``torch.distributed``."""
        rank, world_size = _torch_rank_and_world()
        return ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)

    def _shard_scan(
        self,
        dataset: LanceDataset,
        batch_size: int,
        columns: Any,
        batch_readahead: int,
        filter: str,
    ) -> Iterator[pa.RecordBatch]:
        """This rank's every-``world_size``-th filtered row, in batches of
        ``batch_size`` (the last one at most that)."""
        held: List[pa.RecordBatch] = []
        held_rows = 0
        skip = self._rank
        step = self._world_size
        for batch in _scan(dataset, columns=columns, filter=filter,
                           batch_readahead=batch_readahead, scan_in_order=True):
            # (the same pyarrow calls as pylance, so that a batch shorter than the
            # rows still to skip is treated as pylance treats it)
            batch = batch.slice(skip, batch.num_rows - skip)
            kept = list(range(0, batch.num_rows, step))
            skip = (step - batch.num_rows % step) % step
            batch = batch.take(kept)
            held.append(batch)
            held_rows += batch.num_rows
            if held_rows > batch_size:
                joined = _combine(held)
                held = []
                while joined.num_rows > batch_size:
                    yield joined.slice(0, batch_size)
                    joined = joined.slice(batch_size)
                held_rows = joined.num_rows
                if joined.num_rows > 0:
                    held.append(joined)
        yield _combine(held)

    def _sample_filtered(
        self,
        dataset: LanceDataset,
        batch_size: int,
        columns: Any,
        batch_readahead: int,
        filter: str,
    ) -> Iterator[pa.RecordBatch]:
        batches = self._shard_scan(dataset, batch_size, columns, batch_readahead, filter)
        if not self._randomize:
            yield from batches
        # Reseeded even when not shuffling (the scan is then used up), as pylance does.
        random.seed(self._seed + self._epoch)
        # An approximate shuffle without holding the whole shard: up to `size` batches
        # wait in a min-heap under random priorities; each new batch pushes out the
        # lowest-priority one.
        size = 256
        heap: List[PrioritizedItem] = []
        for batch in batches:
            entry = PrioritizedItem(random.randint(0, size * 2 - 1), batch)
            if len(heap) < size:
                heapq.heappush(heap, entry)
            else:
                yield heapq.heappushpop(heap, entry).item
        for entry in heap:
            yield entry.item

    def _sample_all(
        self,
        dataset: LanceDataset,
        batch_size: int,
        columns: Optional[List[str]],
        batch_readahead: int,
    ) -> pa.RecordBatchReader:
        total = dataset.count_rows()
        stride = self._world_size * batch_size
        ranges = [(start, min(start + batch_size, total))
                  for start in range(self._rank * batch_size, total, stride)]
        if self._randomize:
            random.seed(self._seed)
            random.shuffle(ranges)
        return _read_ranges(dataset, ranges, columns)

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Optional[List[str]] = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: Optional[bool] = None,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        if filter is None:
            if with_row_id is not None:
                warnings.warn("with_row_id is not supported for ShardedBatchSampler")
            return self._sample_all(dataset, batch_size, columns, batch_readahead)
        return self._sample_filtered(dataset, batch_size, columns, batch_readahead, filter)


def _read_ranges(dataset: LanceDataset, ranges: List[tuple], columns: Optional[List[str]]) -> pa.RecordBatchReader:
    """One batch per ``(start, end)`` range of live-row offsets, in the given order,
    read as they are consumed (pylance's ``take_scan``)."""
    schema = dataset.take([], columns=columns).schema

    def batches() -> Iterator[pa.RecordBatch]:
        for start, end in ranges:
            table = dataset.take(list(range(start, end)), columns=columns).combine_chunks()
            parts = table.to_batches()
            if parts:
                yield parts[0]
            else:
                yield pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Lists of row numbers for a known ``total_num_rows``: rank ``r`` gets the
    consecutive rows ``[r * per_rank, (r + 1) * per_rank)`` (``per_rank`` =
    ``ceil(total_num_rows / world_size)``) cut into ``batch_size`` lists, shuffled with
    ``random.seed(seed + epoch)`` when ``randomize``."""

    def __init__(
        self,
        rank: int,
        world_size: int,
        randomize: bool = False,
        seed: int = 0,
        batch_size: int = 0,
        total_num_rows: int = 0,
    ):
        super().__init__(rank, world_size, randomize, seed)
        self._total_num_rows = total_num_rows
        self._batch_size = batch_size
        self._len = self._compute_length()

    def _compute_length(self) -> int:
        if self._batch_size == 0 and self._total_num_rows == 0:
            return 0
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        return math.ceil(per_rank / self._batch_size)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[List[int]]:
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        first = self._rank * per_rank
        last = min(first + per_rank, self._total_num_rows)
        lists = [list(range(start, min(start + self._batch_size, last)))
                 for start in range(first, last, self._batch_size)] if first < last else []
        if self._randomize:
            random.seed(self._seed + self._epoch)
            random.shuffle(lists)
        yield from lists

    @staticmethod
    def from_torch(batch_size: int, total_num_rows: int, randomize: bool = False,
                   seed: int = 0) -> "ShardedFixedBatchSampler":
        """Rank and world size from ``torch.distributed``."""
        rank, world_size = _torch_rank_and_world()
        return ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total_num_rows)
