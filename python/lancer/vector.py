"""Embedding-vector utilities: ``lancer.vector`` stands in for pylance's
``lance.vector``.

* :func:`vec_to_table`: vectors (a dict of id -> vector, a list, a 2-D array) as a
  table of ``fixed_size_list<float32>`` vectors, with pylance's arguments, checks and
  errors.
* The accelerator trainers (``train_ivf_centroids_on_accelerator``,
  ``train_pq_codebook_on_accelerator``, ``compute_partitions``, ``compute_pq_codes``,
  ``one_pass_train_ivf_pq_on_accelerator``, ``one_pass_assign_ivf_pq_on_accelerator``)
  run pylance's PyTorch k-means. Without PyTorch installed they raise
  ``ModuleNotFoundError: No module named 'torch'``, as pylance's do; with PyTorch they
  raise ``NotImplementedError`` (Lancer has no PyTorch k-means; its indexes train on
  the CPU in Rust: ``create_index`` / ``lancer.indices.IndicesBuilder``).
* The dedup and hamming-clustering calls (``find_duplicate_pairs``,
  ``find_duplicate_pairs_in_partition``, ``hamming_clustering_for_ivf_partition``,
  ``hamming_clustering_for_sample``, ``hamming_clustering_for_range``,
  ``get_ivf_partition_info``) are pylance 14's native index scans, not in Lancer: they
  raise ``NotImplementedError`` naming the call.

What differs from pylance: importing this module does not need ``tqdm`` (pylance's
``lance.vector`` fails to import without it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Tuple, Union

import numpy as np
import pyarrow as pa

from .util import MetricType

if TYPE_CHECKING:
    import uuid
    from pathlib import Path

    from .dataset import LanceDataset

__all__ = [
    "vec_to_table",
    "train_pq_codebook_on_accelerator",
    "train_ivf_centroids_on_accelerator",
    "compute_pq_codes",
    "compute_partitions",
    "one_pass_train_ivf_pq_on_accelerator",
    "one_pass_assign_ivf_pq_on_accelerator",
    "find_duplicate_pairs",
    "find_duplicate_pairs_in_partition",
    "hamming_clustering_for_ivf_partition",
    "get_ivf_partition_info",
    "hamming_clustering_for_sample",
    "hamming_clustering_for_range",
]

CUDA_REGEX = re.compile(r"^cuda(:\d+)?$")


def _check_ndim(vectors, ndim: Optional[int]) -> Optional[int]:
    for v in vectors:
        if ndim is None:
            ndim = len(v)
        elif len(v) != ndim:
            raise ValueError(f"Expected {ndim} dimensions but got {len(v)} for {v}")
    return ndim


def _fsl(vectors, ndim: Optional[int]) -> pa.FixedSizeListArray:
    if ndim is None:
        ndim = len(next(iter(vectors)))
    flat = np.array(vectors, dtype="float32").ravel()
    return pa.FixedSizeListArray.from_arrays(flat, list_size=ndim)


def vec_to_table(
    data: Union[dict, list, np.ndarray],
    names: Optional[Union[str, list]] = None,
    ndim: Optional[int] = None,
    check_ndim: bool = True,
) -> pa.Table:
    """A table of float32 vectors (``fixed_size_list<float32>[ndim]``).

    ``data``: a dict (its keys become an ``id`` column, its values the vectors), a list
    of vectors or a 2-D array (one vector a row). ``names``: the columns' names (a dict:
    two, default ``["id", "vector"]``; otherwise one, default ``"vector"``). ``ndim``
    is the vectors' length (default the first's); ``check_ndim`` checks every vector has
    it (a ``ValueError`` otherwise).

    >>> import lancer as lance
    >>> lance.vector.vec_to_table({"a": [1.0, 2.0]}).column_names
    ['id', 'vector']
    """
    if isinstance(data, dict):
        if names is None:
            names = ["id", "vector"]
        elif not isinstance(names, (list, tuple)) and len(names) == 2:
            raise ValueError("If data is a dict, names must be a list or tuple of 2 strings")
        vectors = list(data.values())
        if check_ndim:
            ndim = _check_ndim(vectors, ndim)
        arrays = [pa.array(data.keys()), _fsl(vectors, ndim)]
    elif isinstance(data, (list, np.ndarray)):
        if names is None:
            names = ["vector"]
        elif isinstance(names, str):
            names = [names]
        elif not isinstance(names, (list, tuple)) and len(names) == 1:
            raise ValueError(f"names cannot be more than 1 got {len(names)}")
        if check_ndim:
            ndim = _check_ndim(data, ndim)
        arrays = [_fsl(data, ndim)]
    else:
        raise NotImplementedError(
            f"data must be dict, list, or ndarray (require numpy installed), \
            got {type(data)} instead"
        )
    return pa.Table.from_arrays(arrays, names=names)


def _needs_torch(name: str) -> None:
    import torch  # noqa: F401  (ModuleNotFoundError without PyTorch, as pylance's)

    raise NotImplementedError(
        f"lancer.vector.{name}: Lancer has no PyTorch k-means; build the index with "
        "LanceDataset.create_index (or lancer.indices.IndicesBuilder), which trains on the CPU"
    )


def train_pq_codebook_on_accelerator(
    dataset: Union["LanceDataset", "Path", str],
    metric_type: MetricType,
    accelerator: Union[str, Any],
    num_sub_vectors: int,
    batch_size: int = 1024 * 10 * 4,
    dtype: np.dtype = np.float32,
) -> Tuple[np.ndarray, List[Any]]:
    """pylance trains PQ codebooks with PyTorch k-means: see the module docstring."""
    _needs_torch("train_pq_codebook_on_accelerator")
    raise AssertionError("unreachable")


def train_ivf_centroids_on_accelerator(
    dataset: "LanceDataset",
    column: str,
    k: int,
    metric_type: MetricType,
    accelerator: Union[str, Any],
    batch_size: int = 1024 * 10 * 4,
    *,
    sample_rate: int = 256,
    max_iters: int = 50,
    filter_nan: bool = True,
) -> Tuple[np.ndarray, Any]:
    """pylance trains IVF centroids with PyTorch k-means: see the module docstring."""
    _needs_torch("train_ivf_centroids_on_accelerator")
    raise AssertionError("unreachable")


def compute_pq_codes(
    dataset: "LanceDataset",
    kmeans_list: List[Any],
    batch_size: int = 1024 * 10 * 4,
    dst_dataset_uri: Optional[Union[str, "Path"]] = None,
    allow_cuda_tf32: bool = True,
) -> Tuple[Union[str, "Path"], List[str]]:
    """pylance assigns PQ codes with PyTorch k-means models: see the module docstring."""
    _needs_torch("compute_pq_codes")
    raise AssertionError("unreachable")


def compute_partitions(
    dataset: "LanceDataset",
    column: str,
    kmeans: Any,
    batch_size: int = 1024 * 10 * 4,
    dst_dataset_uri: Optional[Union[str, "Path"]] = None,
    allow_cuda_tf32: bool = True,
    num_sub_vectors: Optional[int] = None,
    filter_nan: bool = True,
    sample_size: Optional[int] = None,
) -> str:
    """pylance assigns IVF partitions with a PyTorch k-means model: see the module
    docstring."""
    _needs_torch("compute_partitions")
    raise AssertionError("unreachable")


def one_pass_train_ivf_pq_on_accelerator(
    dataset: "LanceDataset",
    column: str,
    k: int,
    metric_type: MetricType,
    accelerator: Union[str, Any],
    num_sub_vectors: int,
    batch_size: int = 1024 * 10 * 4,
    *,
    sample_rate: int = 256,
    max_iters: int = 50,
    filter_nan: bool = True,
):
    """pylance trains IVF_PQ with PyTorch k-means: see the module docstring."""
    _needs_torch("one_pass_train_ivf_pq_on_accelerator")
    raise AssertionError("unreachable")


def one_pass_assign_ivf_pq_on_accelerator(
    dataset: "LanceDataset",
    column: str,
    metric_type: MetricType,
    accelerator: Union[str, Any],
    ivf_kmeans: Any,
    pq_kmeans_list: List[Any],
    dst_dataset_uri: Optional[Union[str, "Path"]] = None,
    batch_size: int = 1024 * 10 * 4,
    *,
    filter_nan: bool = True,
    allow_cuda_tf32: bool = True,
):
    """pylance assigns IVF_PQ partitions and codes with PyTorch k-means models: see the
    module docstring."""
    _needs_torch("one_pass_assign_ivf_pq_on_accelerator")
    raise AssertionError("unreachable")


def _not_in_lancer(name: str) -> NotImplementedError:
    return NotImplementedError(f"lancer.vector.{name} is pylance 14's native index scan and is not implemented in Lancer")


def find_duplicate_pairs(
    dataset: "LanceDataset",
    column: str,
    distance_threshold: float,
    *,
    memory_limit: Optional[int] = None,
    max_concurrency: Optional[int] = None,
) -> pa.RecordBatchReader:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("find_duplicate_pairs")


def find_duplicate_pairs_in_partition(
    dataset: "LanceDataset",
    column: str,
    segment_id: Union[str, "uuid.UUID"],
    partition_id: int,
    distance_threshold: float,
    *,
    memory_limit: Optional[int] = None,
    max_concurrency: Optional[int] = None,
) -> pa.RecordBatchReader:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("find_duplicate_pairs_in_partition")


def hamming_clustering_for_ivf_partition(
    dataset: "LanceDataset",
    index_name: str,
    partition_id: int,
    hamming_threshold: int,
    *,
    index_segments: Optional[Iterable[Union[str, "uuid.UUID"]]] = None,
) -> pa.RecordBatchReader:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("hamming_clustering_for_ivf_partition")


def get_ivf_partition_info(
    dataset: "LanceDataset",
    index_name: str,
    *,
    index_segments: Optional[Iterable[Union[str, "uuid.UUID"]]] = None,
) -> List[dict]:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("get_ivf_partition_info")


def hamming_clustering_for_sample(
    dataset: "LanceDataset",
    column: str,
    sample_size: Optional[int] = None,
    hamming_threshold: int = 10,
) -> pa.RecordBatchReader:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("hamming_clustering_for_sample")


def hamming_clustering_for_range(
    dataset: "LanceDataset",
    column: str,
    fragment_id: int,
    start_row: int,
    num_rows: int,
    hamming_threshold: int = 10,
) -> pa.RecordBatchReader:
    """Not in Lancer (``NotImplementedError``): see the module docstring."""
    raise _not_in_lancer("hamming_clustering_for_range")
