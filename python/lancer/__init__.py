"""Lancer: a Rust engine for the Lance lakehouse format, with pylance's everyday API.

Switching is changing an import::

    import lancer as lance

    ds = lance.write_dataset(table, "/data/items.lance")
    ds = lance.dataset("/data/items.lance")
    ds.to_table(columns=["id"], filter="price > 10", limit=100)
    ds.to_table(nearest={"column": "vec", "q": query, "k": 10})
    ds.take([0, 5, 7])

Datasets are the same bytes pylance reads and writes (local paths, ``s3://``,
``gs://``, ``az://`` and ``memory://``). Arrow data crosses from Rust through the Arrow
C Data / C Stream interfaces: no copies, no per-row Python objects; Rust work runs with
the GIL released and Ctrl-C stops a long scan. A dataset object is an Arrow stream
(``__arrow_c_stream__``), so DuckDB (``duckdb.sql("select * from ds")``), polars
(``pl.DataFrame(ds)``) and pyarrow read it directly.

``lancer.loader(uri, rank=, world_size=, shuffle=, seed=, ...)`` feeds training jobs:
fragments as shards of one pinned version, every row once per epoch across ranks and
workers, resumable (``lancer.torch.LanceIterableDataset`` for PyTorch).

``lancer.ray.read_lancer`` / ``write_lancer`` read and write datasets on Ray Data (the
reference's two-phase distributed write: workers write fragments, the driver commits
once); Ray is imported only there.
"""

import logging as _logging
from typing import Optional as _Optional

from ._lancer import CommitConflictError, CorruptDataError, InvalidInputError, __version__
from . import commit, log, udf  # (commit gives CommitConflictError pylance's constructor and retryable)
from .dataset import (
    BatchUDF,
    CleanupStats,
    ColumnOrdering,
    DatasetNotFoundError,
    Index,
    IndexFile,
    LanceDataset,
    LanceFragment,
    LanceScanner,
    Tags,
    batch_udf,
    dataset,
    write_dataset,
)
from . import file, progress, query, schema
from ._commit import LanceOperation, Transaction
from .fragment import FragmentMetadata
from . import fragment
from .schema import json_to_schema, schema_to_json
from ._tokenize import FtsToken, tokenize
from ._session import Session, bytes_read_counter, iops_counter
from ._cleanup import CleanupCandidateFile, CleanupExplanation, CleanupReferencedBranch
from .progress import IndexProgress
from ._stats import ScanStatistics
from .loader import LanceLoader, loader
from . import indices, lance, sampler, util
from .util import sanitize_ts
from ._bases import DatasetBasePath
from ._sql import FFILanceTableProvider, sql
from .blob import Blob, BlobArray, BlobColumn, BlobFile, BlobType, blob_array, blob_field



def set_logger(file_path: _Optional[str] = "pylance.log", name: str = "pylance", level: int = _logging.INFO,
               format_string: _Optional[str] = None, log_handler: _Optional[_logging.Handler] = None) -> None:
    """Sends a logger to a file or handler (see :func:`lancer.log.set_logger`)."""
    log.set_logger(file_path, name, level, format_string, log_handler)


__all__ = [
    "set_logger",
    "commit",
    "log",
    "udf",
    "sql",
    "FFILanceTableProvider",
    "Blob",
    "BlobArray",
    "BlobColumn",
    "BlobFile",
    "BlobType",
    "blob_array",
    "blob_field",
    "BatchUDF",
    "batch_udf",
    "CleanupStats",
    "CleanupCandidateFile",
    "CleanupExplanation",
    "CleanupReferencedBranch",
    "ColumnOrdering",
    "CommitConflictError",
    "DatasetBasePath",
    "CorruptDataError",
    "InvalidInputError",
    "DatasetNotFoundError",
    "Index",
    "IndexFile",
    "IndexProgress",
    "FragmentMetadata",
    "LanceDataset",
    "LanceOperation",
    "Transaction",
    "fragment",
    "LanceFragment",
    "LanceLoader",
    "LanceScanner",
    "ScanStatistics",
    "Session",
    "bytes_read_counter",
    "iops_counter",
    "Tags",
    "__version__",
    "dataset",
    "loader",
    "file",
    "progress",
    "query",
    "schema",
    "schema_to_json",
    "tokenize",
    "FtsToken",
    "json_to_schema",
    "indices",
    "sampler",
    "write_dataset",
]
