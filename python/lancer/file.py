"""Single Lance data files, as pylance's ``lance.file``: :class:`LanceFileReader` (all
rows, a range, or rows by ascending index, in batches) and :class:`LanceFileWriter`
(batches in, a 2.1 or 2.2 file out; 2.2 by default, as pylance 14). Paths are local
paths or object-store URIs (``storage_options`` as for datasets).

Not supported (refused by name): ``LanceFileSession``, global buffers, blob writers,
namespaces. ``batch_readahead``, ``data_cache_bytes`` and ``max_page_bytes`` only tune
the work and are accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from . import _lancer
from ._util import _check_arguments

__all__ = ["LanceFileReader", "LanceFileWriter", "ReaderResults", "LanceFileMetadata"]


class ReaderResults:
    """What a read returned: ``to_table()`` or ``to_batches()`` (a RecordBatchReader)."""

    def __init__(self, batches: List[pa.RecordBatch], schema: pa.Schema):
        self._batches = batches
        self._schema = schema

    def to_batches(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self._schema, iter(self._batches))

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(self._batches, schema=self._schema)


class LanceFileMetadata:
    """The file's version, rows and schema."""

    def __init__(self, major: int, minor: int, num_rows: int, schema: pa.Schema):
        self.major_version = major
        self.minor_version = minor
        self.num_rows = num_rows
        self.schema = schema

    def __repr__(self) -> str:
        return f"LanceFileMetadata(version={self.major_version}.{self.minor_version}, num_rows={self.num_rows})"


class LanceFileReader:
    """A reader of one Lance data file (only its tail is read on open)."""

    def __init__(self, path: Union[str, Path], storage_options: Optional[Dict[str, str]] = None,
                 columns: Optional[List[str]] = None, **kwargs: Any):
        _check_arguments("LanceFileReader", kwargs, refused={"namespace_client": None, "table_id": None})
        self._reader = _lancer.FileReader(str(path), storage_options, columns)

    def _results(self, batches: List[pa.RecordBatch]) -> ReaderResults:
        return ReaderResults(batches, self._reader.schema())

    def read_all(self, *, batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        """Every row, in batches of ``batch_size`` (the last may be shorter)."""
        return self._results(self._reader.read_all(int(batch_size)))

    def read_range(self, start: int, num_rows: int, *, batch_size: int = 1024,
                   batch_readahead: int = 16) -> ReaderResults:
        """Rows ``start`` .. ``start + num_rows``."""
        return self._results(self._reader.read_range(int(start), int(num_rows), int(batch_size)))

    def take_rows(self, indices: Any, *, batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        """Rows at ``indices``, which must be ascending (as pylance requires)."""
        indices = [int(i) for i in (indices.tolist() if hasattr(indices, "tolist") else indices)]
        for a, b in zip(indices, indices[1:]):
            if a > b:
                raise ValueError(f"Indices must be sorted in ascending order for file API, got {a} > {b}")
        return self._results(self._reader.take_rows(indices, int(batch_size)))

    def num_rows(self) -> int:
        return self._reader.num_rows()

    def metadata(self) -> LanceFileMetadata:
        major, minor = self._reader.version()
        return LanceFileMetadata(major, minor, self._reader.num_rows(), self._reader.schema())

    def file_statistics(self) -> Any:
        raise NotImplementedError("LanceFileReader.file_statistics is not supported by lancer yet")

    def read_global_buffer(self, index: int) -> bytes:
        raise NotImplementedError("LanceFileReader.read_global_buffer is not supported by lancer yet")


class LanceFileWriter:
    """A writer of one Lance data file: ``write_batch`` (batches or tables), then
    ``close()`` (the rows written). The schema is ``schema`` or the first batch's."""

    def __init__(self, path: Union[str, Path], schema: Optional[pa.Schema] = None, *,
                 data_cache_bytes: Optional[int] = None, version: Optional[str] = None,
                 storage_options: Optional[Dict[str, str]] = None, max_page_bytes: Optional[int] = None,
                 **kwargs: Any):
        _check_arguments("LanceFileWriter", kwargs, refused={"namespace_client": None, "table_id": None})
        self._writer = _lancer.FileWriter(str(path), schema, version, storage_options)

    def write_batch(self, batch: Union[pa.RecordBatch, pa.Table]) -> None:
        if isinstance(batch, pa.Table):
            for b in batch.to_batches():
                self._writer.write_batch(b)
        else:
            self._writer.write_batch(batch)

    def add_schema_metadata(self, key: str, value: str) -> None:
        """Adds ``key: value`` to the file's schema metadata (before the first batch)."""
        self._writer.add_schema_metadata(str(key), str(value))

    def add_global_buffer(self, data: bytes) -> int:
        raise NotImplementedError("LanceFileWriter.add_global_buffer is not supported by lancer yet")

    def close(self) -> Optional[int]:
        return self._writer.close()

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
