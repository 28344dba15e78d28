"""Training-data loading: fragments as shards, one pinned version, exact rank / worker
splits, deterministic shuffles, resumable epochs (``lancer-loader`` underneath).

    loader = lancer.loader("s3://bucket/train.lance", rank=rank, world_size=world,
                           columns=["image", "label"], batch_size=256,
                           shuffle=True, seed=42)
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:          # pyarrow.RecordBatch (format="numpy": dicts)
            ...
        state = loader.state_dict()    # resume later with load_state_dict(state)

Discovery reads the manifest only (two requests on an object store) and pins its
version: ranks and workers read that version however the dataset changes. Every
surviving row is read exactly once per epoch across all ranks and workers (ranks get
counts within one row of each other; ``drop_last`` / ``pad`` make them equal).
``shuffle=True`` permutes the shard order per epoch and rows within a bounded buffer
(``shuffle_buffer`` rows); ``shuffle="global"`` draws every row in a random order.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Optional, Union

import pyarrow as pa

from . import _lancer


class LanceLoader:
    """An iterable of record batches for one rank (and worker) of a training job."""

    def __init__(
        self,
        uri: Any,
        *,
        rank: int = 0,
        world_size: int = 1,
        worker: int = 0,
        num_workers: int = 1,
        columns: Optional[List[str]] = None,
        filter: Optional[str] = None,
        batch_size: int = 1024,
        shuffle: Union[bool, str] = False,
        shuffle_buffer: int = 65536,
        seed: int = 0,
        epoch: int = 0,
        version: Optional[Union[int, str]] = None,
        drop_last: bool = False,
        pad: bool = False,
        format: str = "arrow",
        cache_entries: int = 256,
        prefetch: bool = True,
        storage_options: Optional[Dict[str, str]] = None,
        plan: Optional[str] = None,
    ):
        if format not in ("arrow", "numpy"):
            raise ValueError(f"format must be 'arrow' or 'numpy', not {format!r}")
        if drop_last and pad:
            raise ValueError("drop_last and pad exclude each other")
        if shuffle is True:
            mode = "buffer"
        elif shuffle is False or shuffle is None:
            mode = "none"
        elif shuffle in ("buffer", "global", "none"):
            mode = shuffle
        else:
            raise ValueError(f"shuffle must be True / False / 'global', not {shuffle!r}")
        uri = getattr(uri, "uri", uri)
        if plan is None:
            tag = version if isinstance(version, str) else None
            number = version if isinstance(version, int) else None
            opts = None if storage_options is None else {str(k): str(v) for k, v in storage_options.items()}
            plan, self.discovery_requests = _lancer.discover_plan(str(uri), number, tag, opts)
        self._args = dict(
            rank=rank, world_size=world_size, worker=worker, num_workers=num_workers, columns=columns,
            filter=filter, batch_size=batch_size, shuffle=mode, buffer=shuffle_buffer, seed=seed,
            tail="drop_last" if drop_last else "pad" if pad else "keep", cache_entries=cache_entries,
            prefetch=prefetch, storage_options=storage_options,
        )
        self._plan = plan
        self._inner = _lancer.Loader(plan, **self._args)
        self.format = format
        self._epoch = epoch
        self._resume: Optional[tuple] = None
        self._reader: Any = None

    @property
    def plan(self) -> Dict[str, Any]:
        """The pinned plan: ``uri``, ``version``, ``rows``, ``bytes``, ``shards``."""
        return json.loads(self._plan)

    @property
    def plan_json(self) -> str:
        """The plan as JSON (pass it as ``plan=`` to read the same shards later)."""
        return self._plan

    @property
    def version(self) -> int:
        return int(self.plan["version"])

    def __len__(self) -> int:
        """Rows this reader gets per epoch (before any filter)."""
        return self._inner.rows_in_epoch(self._epoch)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (its shuffle depends on it)."""
        self._epoch = int(epoch)
        if self._resume is not None and self._resume[0] != self._epoch:
            self._resume = None  # a loaded state for this epoch is kept
        self._reader = None

    def state_dict(self) -> Dict[str, Any]:
        """Where the current iteration is; ``load_state_dict`` resumes right after the
        last batch delivered (no row repeated or skipped)."""
        if self._reader is not None:
            e, b, o, r = self._reader.state()
        elif self._resume is not None:
            e, b, o, r = self._resume
        else:
            e, b, o, r = self._epoch, 0, 0, 0
        return {"epoch": e, "block": b, "offset": o, "rows": r, "plan": self._plan}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if state.get("plan") not in (None, self._plan):
            raise ValueError("the state belongs to another plan: build the loader with plan=state['plan']")
        self._epoch = int(state["epoch"])
        self._resume = (self._epoch, int(state["block"]), int(state["offset"]), int(state["rows"]))
        self._reader = None

    def __iter__(self) -> Iterator[Any]:
        if self._resume is not None:
            e, b, o, r = self._resume
            self._resume = None
        else:
            e, b, o, r = self._epoch, 0, 0, 0
        self._reader = self._inner.read(e, b, o, r)
        for batch in self._reader:
            yield batch if self.format == "arrow" else to_numpy(batch)


def to_numpy(batch: pa.RecordBatch) -> Dict[str, Any]:
    """A batch as a dict of NumPy arrays (fixed-size lists as 2-D arrays, without a
    copy where the data allows it)."""
    import numpy as np

    out: Dict[str, Any] = {}
    for name, col in zip(batch.schema.names, batch.columns):
        t = col.type
        if pa.types.is_fixed_size_list(t) and col.null_count == 0:
            values = col.flatten().to_numpy(zero_copy_only=False)
            out[name] = values.reshape(len(col), t.list_size)
        else:
            try:
                out[name] = col.to_numpy(zero_copy_only=False)
            except (pa.ArrowInvalid, NotImplementedError):
                out[name] = np.array(col.to_pylist(), dtype=object)
    return out


def loader(uri: Any, **kwargs: Any) -> LanceLoader:
    """A :class:`LanceLoader` over the dataset at ``uri`` (see the module docs)."""
    return LanceLoader(uri, **kwargs)
