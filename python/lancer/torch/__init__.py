"""A PyTorch ``IterableDataset`` over :class:`lancer.loader.LanceLoader`.

    from lancer.torch import LanceIterableDataset
    ds = LanceIterableDataset("train.lance", columns=["x", "y"], batch_size=256, shuffle=True)
    for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4): ...

Each DataLoader worker reads its own share (``get_worker_info()``), each rank its own
(``torch.distributed`` when initialized, or ``rank=`` / ``world_size=``): every row once
per epoch overall. ``set_epoch`` changes the shuffle. Importing this module does not
import torch; without torch the class is a plain iterable.

:mod:`lancer.torch.dist` has pylance's rank / world-size helpers (``get_global_rank``,
...), which work without torch too.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from ..loader import LanceLoader

try:  # the adapter must not need torch to import
    from torch.utils.data import IterableDataset as _Base
except ImportError:  # pragma: no cover - torch is optional
    _Base = object  # type: ignore[assignment,misc]


def _torch_worker() -> Optional[Any]:
    try:
        from torch.utils.data import get_worker_info
    except ImportError:
        return None
    return get_worker_info()


def _torch_rank() -> Optional[tuple]:
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


class LanceIterableDataset(_Base):  # type: ignore[misc,valid-type]
    """Batches (``format="numpy"`` by default: dicts of arrays) of this worker's share."""

    def __init__(self, uri: Any, *, rank: Optional[int] = None, world_size: Optional[int] = None,
                 format: str = "numpy", worker_info: Callable[[], Optional[Any]] = _torch_worker,
                 **loader_args: Any):
        super().__init__()
        self.uri = uri
        if rank is None or world_size is None:
            # here, in the parent: DataLoader workers started by spawn / forkserver do
            # not have torch.distributed initialized
            rw = _torch_rank()
            rank, world_size = rw if rw is not None else (0, 1)
        self.rank, self.world_size = rank, world_size
        self.format = format
        self.loader_args = loader_args
        self.epoch = int(loader_args.pop("epoch", 0))
        self._worker_info = worker_info
        # discovery once, in the parent: every worker plans against the same version
        probe = LanceLoader(uri, format=format, **loader_args)
        self.plan = probe.plan_json

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[Any]:
        rank, world = self.rank, self.world_size
        info = self._worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        args = dict(self.loader_args)
        args.pop("plan", None)
        loader = LanceLoader(self.uri, rank=rank, world_size=world, worker=worker, num_workers=workers,
                             format=self.format, plan=self.plan, epoch=self.epoch, **args)
        return iter(loader)
