"""Ranks and world sizes of a PyTorch job, as pylance 14's ``lance.torch.dist``: this
process's rank among ``torch.distributed``'s processes, this DataLoader worker's among
its process's workers, and both combined (``get_global_rank`` /
``get_global_world_size``: one number per worker of every process).

pylance's module imports torch when it is imported (without torch, ``import
lance.torch.dist`` fails); lancer's looks torch up at each call and, without torch,
answers as torch would outside a distributed job and outside DataLoader workers: rank 0
of 1. Neither reads environment variables (``RANK``, ``WORLD_SIZE``, ...): ranks come
from ``torch.distributed`` once ``init_process_group`` has run.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["get_dist_rank", "get_dist_world_size", "get_global_rank", "get_global_world_size",
           "get_mp_rank", "get_mp_world_size"]


def _distributed() -> Optional[Any]:
    """``torch.distributed`` when torch is installed and a process group is set up."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_initialized() else None


def _worker() -> Optional[Any]:
    """``torch.utils.data.get_worker_info()`` (None outside DataLoader workers or
    without torch)."""
    try:
        import torch.utils.data as data
    except ImportError:
        return None
    return data.get_worker_info()


def get_dist_world_size() -> int:
    """How many processes the distributed job has (1 when not distributed)."""
    dist = _distributed()
    return 1 if dist is None else dist.get_world_size()


def get_dist_rank() -> int:
    """This process's rank in the distributed job (0 when not distributed)."""
    dist = _distributed()
    return 0 if dist is None else int(dist.get_rank())


def get_mp_world_size() -> int:
    """How many DataLoader workers this process has (1 outside a worker)."""
    info = _worker()
    return 1 if info is None else info.num_workers


def get_mp_rank() -> int:
    """This DataLoader worker's id (0 outside a worker)."""
    info = _worker()
    return 0 if info is None else info.id


def get_global_world_size() -> int:
    """Processes times workers per process."""
    return get_dist_world_size() * get_mp_world_size()


def get_global_rank() -> int:
    """This worker's number among every process's workers."""
    return get_dist_rank() * get_mp_world_size() + get_mp_rank()
