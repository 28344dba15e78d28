"""``CachedDataset``: a stream of record batches read once and replayed from a local
Arrow IPC file afterwards, as pylance 14's ``lance._dataset.cache`` (used by data loaders
that run several epochs over a stream)."""

from __future__ import annotations

import atexit
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Iterable, Iterator, Optional, Union

import pyarrow as pa

__all__ = ["CachedDataset"]


class CachedDataset:
    """Batches of ``stream``; the first pass writes them to a file in a temporary folder
    (under ``cache`` when a path is given), later passes read that file."""

    def __init__(self, stream: Iterable[pa.RecordBatch],
                 cache: Optional[Union[str, Path, bool]] = None):
        if cache is None or cache is True:
            self.cache_dir: Optional[TemporaryDirectory] = TemporaryDirectory(prefix="lance-torch-dataset")
        elif isinstance(cache, (str, Path)):
            self.cache_dir = TemporaryDirectory(prefix="lance-torch-dataset", dir=cache)
        else:
            raise ValueError(f"Unsupported cache type: {type(cache)}")
        self.stream = stream
        self.cache_file: Optional[Path] = None
        self.finished_origin_stream = False
        atexit.register(CachedDataset.close, self)

    def close(self) -> None:
        """Removes the cached file and its folder."""
        if self.cache_dir is not None:
            self.cache_dir.cleanup()
            self.cache_dir = None

    def __enter__(self) -> "CachedDataset":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self.cache_file is not None:
            if not self.finished_origin_stream:
                raise RuntimeError("CachedDataset: the iteration over original data has not finished")
            with pa.ipc.open_stream(str(self.cache_file)) as reader:
                yield from reader
            return
        if self.cache_dir is None:
            raise RuntimeError("CachedDataset: closed")
        writer = None
        for batch in self.stream:
            if writer is None:
                self.cache_file = Path(self.cache_dir.name) / "cache.arrow"
                writer = pa.ipc.new_stream(str(self.cache_file), batch.schema)
            writer.write_batch(batch)
            yield batch
        if writer is not None:
            writer.close()
        self.finished_origin_stream = True
