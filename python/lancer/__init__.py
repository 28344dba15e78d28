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
"""

from ._lancer import CommitConflictError, CorruptDataError, __version__
from .dataset import (
    CleanupStats,
    DatasetNotFoundError,
    LanceDataset,
    LanceFragment,
    LanceScanner,
    Tags,
    dataset,
    write_dataset,
)

__all__ = [
    "CleanupStats",
    "CommitConflictError",
    "CorruptDataError",
    "DatasetNotFoundError",
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "Tags",
    "__version__",
    "dataset",
    "write_dataset",
]
