"""``ShardedBatchIterator``: one worker's share of a dataset's rows, as pylance 14's
``lance._dataset.sharded_batch_iterator`` gives it (deprecated there in favour of
``lancer.sampler``, and warned about the same way).

A worker ``rank`` of ``world_size`` reads, with ``granularity="fragment"``, every
``world_size``-th fragment starting at ``rank`` (in the dataset's fragment order); with
``granularity="batch"``, every ``world_size``-th run of ``batch_size`` rows starting at
run ``rank`` (row offsets over the live rows, as ``take`` counts them)."""

from __future__ import annotations

import warnings
from typing import Dict, Iterator, List, Optional, Union

import pyarrow as pa

__all__ = ["ShardedBatchIterator"]

Columns = Optional[Union[List[str], Dict[str, str]]]


class ShardedBatchIterator:
    """Batches of the shard ``rank`` of ``world_size`` of a dataset (a URI or a
    dataset); see the module docs for how rows are shared out."""

    def __init__(self, data, rank: int, world_size: int, *, columns: Columns = None,
                 batch_size: int = 10240, granularity: str = "fragment",
                 batch_readahead: int = 8, with_row_id: bool = False):
        warnings.warn("ShardedBatchIterator is deprecated, use :class:`Sampler` instead")
        from ..dataset import LanceDataset, dataset

        if granularity not in ("fragment", "batch"):
            raise ValueError(f"Unrecognized granularity: {granularity}")
        self._ds = data if isinstance(data, LanceDataset) else dataset(data)
        self._rank = int(rank)
        self._world_size = int(world_size)
        self._columns = columns
        self._batch_size = int(batch_size)
        self._granularity = granularity
        self._batch_readahead = batch_readahead
        self._with_row_id = bool(with_row_id)

    @staticmethod
    def from_torch(data, *, columns: Columns = None, batch_size: int = 10240,
                   granularity: str = "fragment", batch_readahead: int = 8,
                   with_row_id: bool = False) -> "ShardedBatchIterator":
        """The shard of this process in a ``torch.distributed`` job (its rank and
        world size)."""
        import torch.distributed as dist

        return ShardedBatchIterator(data, dist.get_rank(), dist.get_world_size(),
                                    columns=columns, batch_size=batch_size,
                                    granularity=granularity,
                                    batch_readahead=batch_readahead,
                                    with_row_id=with_row_id)

    def _fragment_batches(self) -> Iterator[pa.RecordBatch]:
        fragments = self._ds.get_fragments()
        for fragment in fragments[self._rank::self._world_size]:
            yield from fragment.to_batches(columns=self._columns, batch_size=self._batch_size,
                                           with_row_id=self._with_row_id,
                                           batch_readahead=self._batch_readahead)

    def _row_run_batches(self) -> Iterator[pa.RecordBatch]:
        if self._with_row_id:
            raise NotImplementedError("with_row_id is not supported for batch sharding yet")
        total = self._ds.count_rows()
        step = self._world_size * self._batch_size
        for start in range(self._rank * self._batch_size, total, step):
            end = min(start + self._batch_size, total)
            table = self._ds.take(list(range(start, end)), columns=self._columns)
            yield from table.combine_chunks().to_batches()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._granularity == "fragment":
            return self._fragment_batches()
        return self._row_run_batches()
