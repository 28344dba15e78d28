"""Utilities: ``lancer.util`` stands in for pylance's ``lance.util``.

* :func:`sanitize_ts`, :func:`td_to_micros`: timestamps and durations as pylance takes
  them (``checkout_version``, ``cleanup_old_versions``...).
* :class:`KMeans`: k-means over float32 vectors with the ``l2`` (``euclidean``),
  ``cosine`` and ``dot`` metrics, trained by Lancer's Rust k-means (the IVF / PQ
  trainer, ``lancer::kmeans``): random distinct rows as initial centroids (or the
  given ones), Lloyd iterations until the loss improves by less than 1e-4, an empty
  cluster taking half of the largest. ``predict`` gives a ``uint32`` array, null for a
  vector with a NaN or infinite value. The same inputs, checks and errors as pylance's.
* :func:`validate_vector_index`: in-sample nearest-neighbour queries through the
  vector index (k=1, one probe), a ``ValueError`` when too few find themselves.

What differs from pylance: ``metric_type="cosine"`` trains (on the vectors scaled to
unit length) where pylance 14's native k-means panics; ``k=0`` is a ``RuntimeError``
(pylance panics); vectors with NaN or infinite values are left out of training.
:class:`HNSW` (pylance's stand-alone HNSW graph written to a Lance file) is not
available: ``HNSW.build`` raises ``NotImplementedError``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Iterator, Literal, Optional, Union

import numpy as np
import pyarrow as pa

from . import _lancer

if TYPE_CHECKING:
    import pandas as pd

    ts_types = Union[datetime, "pd.Timestamp", str]

MetricType = Literal["l2", "euclidean", "dot", "cosine"]

__all__ = ["sanitize_ts", "td_to_micros", "KMeans", "validate_vector_index", "HNSW", "MetricType"]


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _normalize_metric_type(metric_type: str) -> str:
    name = metric_type.lower()
    if name == "euclidean":
        name = "l2"
    if name not in ("l2", "dot", "cosine"):
        raise ValueError(f"Invalid metric_type: {metric_type}")
    return name


def sanitize_ts(ts: "ts_types") -> datetime:
    """A ``datetime`` of a ``datetime``, a ``pandas.Timestamp`` or a string in the
    format ``"%Y-%m-%d %H:%M:%S"`` (the only one pylance 14 parses: its pandas branch for
    strings never runs, so neither does one here)."""
    if isinstance(ts, str):
        try:
            return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ValueError(f"Failed to parse timestamp string {ts}. Try installing Pandas.") from None
    pd = _pandas()
    if pd is not None and isinstance(ts, pd.Timestamp):
        return ts.to_pydatetime()
    if isinstance(ts, datetime):
        return ts
    raise TypeError(f"Unrecognized version timestamp {ts} of type {type(ts)}")


def td_to_micros(td: timedelta) -> int:
    """The microseconds of a ``timedelta``, rounded to the nearest integer."""
    return round(td / timedelta(microseconds=1))


def _as_fsl(data) -> pa.FixedSizeListArray:
    """float32 vectors as a FixedSizeListArray, with pylance's checks and messages."""
    if isinstance(data, pa.FixedSizeListArray):
        if data.type.value_type != pa.float32():
            raise ValueError(f"Array must be float32 type, got: {data.type.value_type}")
        return data
    if isinstance(data, pa.FixedShapeTensorArray):
        if len(data.type.shape) != 1:
            raise ValueError(f"Fixed shape tensor array must be a 1-D array, got {len(data.type.shape)}-D")
        return _as_fsl(data.storage)
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ValueError(f"Numpy array must be a 2-D array, got {data.ndim}-D")
        if data.dtype != np.float32:
            raise ValueError(f"Numpy array must be float32 type, got: {data.dtype}")
        return pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1), type=pa.float32()), data.shape[1])
    raise ValueError("Data must be a FixedSizeListArray, Tensor or numpy array")


def _rows(arr: pa.FixedSizeListArray) -> np.ndarray:
    """The vectors as an ``n × dim`` float32 matrix (null slots as zeros, the values
    pyarrow stores under them)."""
    dim = arr.type.list_size
    values = arr.values.slice(arr.offset * dim, len(arr) * dim)
    if values.null_count:
        values = values.fill_null(0.0)
    return values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(arr), dim)


def _le_bytes(m: np.ndarray) -> bytes:
    return np.ascontiguousarray(m, dtype="<f4").tobytes()


class KMeans:
    """k-means over float32 vectors (2-D NumPy arrays, FixedSizeListArrays or 1-D
    FixedShapeTensorArrays) with the ``l2``, ``cosine`` or ``dot`` metric.

    :meth:`fit` trains (again from the start when called again); :meth:`predict` needs a
    trained model, or ``centroids`` given at construction.

    >>> import numpy as np
    >>> import lancer as lance
    >>> data = np.random.randn(1000, 16).astype(np.float32)
    >>> kmeans = lance.util.KMeans(8, metric_type="l2")
    >>> kmeans.fit(data)
    >>> kmeans.predict(data).type
    DataType(uint32)
    """

    def __init__(
        self,
        k: int,
        metric_type: MetricType = "l2",
        max_iters: int = 50,
        centroids: Optional[pa.FixedSizeListArray] = None,
    ):
        metric_type = _normalize_metric_type(metric_type)
        self.k = k
        self._metric_type = metric_type
        self._max_iters = max_iters
        self._centroids: Optional[np.ndarray] = None
        self._init: Optional[np.ndarray] = None
        if centroids is not None:
            c = _rows(_as_fsl(centroids))
            if metric_type == "dot":  # unit length, as pylance keeps them
                norms = np.linalg.norm(c, axis=1, keepdims=True)
                c = np.where(norms > 0, c / np.where(norms > 0, norms, 1), c).astype(np.float32)
            self._init = c
            self._centroids = c

    def __repr__(self) -> str:
        return f"lance.KMeans(k={self.k}, metric_type={self._metric_type})"

    @property
    def centroids(self) -> Optional[pa.FixedShapeTensorArray]:
        """The centroids as a FixedShapeTensorArray of ``(dim,)`` float32 tensors, None
        before training."""
        if self._centroids is None:
            return None
        c = self._centroids
        dim = c.shape[1]
        fsl = pa.FixedSizeListArray.from_arrays(pa.array(c.reshape(-1), type=pa.float32()), dim)
        return pa.FixedShapeTensorArray.from_storage(pa.fixed_shape_tensor(pa.float32(), (dim,)), fsl)

    def fit(self, data: Union[pa.FixedSizeListArray, "pa.FixedShapeTensorArray", np.ndarray]):
        """Trains the model on ``data`` (2-D, float32; at least ``k`` vectors)."""
        arr = _as_fsl(data)
        m = _rows(arr)
        n, dim = m.shape
        finite = np.isfinite(m).all(axis=1)
        if not finite.all():
            m = m[finite]
            n = len(m)
        init = self._init
        if init is not None and init.shape[0] < self.k:
            raise RuntimeError(
                "Error initialing KMeans from existing centroids: Invalid argument error: KMeans: "
                f"training does not have sufficient data points: n({init.shape[0]}) is smaller than k({self.k})"
            )
        if n < self.k or self.k <= 0:
            raise RuntimeError(
                "Error training KMeans: Invalid argument error: KMeans: training does not have "
                f"sufficient data points: n({n}) is smaller than k({self.k})"
            )
        if init is not None and init.shape[1] != dim:
            raise ValueError(f"Dimension mismatch: kmean model {init.shape[1]} != data {dim}")
        if self._max_iters <= 0:
            # pylance's trainer returns no centroids when it may not iterate
            self._centroids = np.zeros((0, dim), dtype=np.float32)
            return
        raw = _lancer.kmeans_fit(
            _le_bytes(m),
            dim,
            self.k,
            self._metric_type,
            self._max_iters,
            random.getrandbits(63),
            None if init is None else _le_bytes(init[: self.k]),
        )
        self._centroids = np.frombuffer(raw, dtype="<f4").reshape(self.k, dim).copy()

    def predict(self, data: Union[pa.FixedSizeListArray, "pa.FixedShapeTensorArray", np.ndarray]) -> pa.UInt32Array:
        """The nearest centroid of each vector (``uint32``; null for a vector with a NaN
        or infinite value)."""
        arr = _as_fsl(data)
        if self._centroids is None:
            raise RuntimeError("KMeans must fit (train) first")
        c = self._centroids
        dim = arr.type.list_size
        if c.shape[1] != dim:
            raise ValueError(f"Dimension mismatch: kmean model {c.shape[1]} != data {dim}")
        if len(c) == 0 or dim == 0 or len(arr) == 0:
            return pa.array([None] * len(arr) if len(c) == 0 else [0] * len(arr), type=pa.uint32())
        ids = _lancer.kmeans_predict(_le_bytes(_rows(arr)), dim, _le_bytes(c), self._metric_type)
        return pa.array(ids, type=pa.uint32())


def validate_vector_index(
    dataset,
    column: str,
    refine_factor: int = 5,
    sample_size: Optional[int] = None,
    pass_threshold: float = 1.0,
):
    """Checks a vector index by querying it with the dataset's own vectors (all of them,
    or ``sample_size`` sampled ones; vectors with a NaN are skipped): each must find a
    row at distance 0 (below 1e-6) with ``k=1``, one probe and ``refine_factor``. Raises
    ``ValueError`` when the fraction that do is under ``pass_threshold``."""
    table = dataset.to_table() if sample_size is None else dataset.sample(sample_size)
    vectors = table[column].to_numpy(zero_copy_only=False)
    total = len(vectors)
    found = 0
    for vec in vectors:
        if np.isnan(vec).any():
            total -= 1
            continue
        hit = dataset.to_table(
            nearest={"column": column, "q": vec, "k": 1, "nprobes": 1, "refine_factor": refine_factor}
        )
        found += 1 if abs(hit["_distance"].to_pylist()[0]) < 1e-6 else 0
    if found / total < pass_threshold:
        raise ValueError(f"Vector index failed sanity check, only {found}/{total} passed")


class HNSW:
    """pylance's stand-alone HNSW graph (``HNSW.build(vectors)``, ``to_lance_file``,
    ``vectors``). Not available in Lancer: Lancer builds HNSW graphs inside its vector
    indexes (``create_index(..., index_type="IVF_HNSW_*")``) but has no stand-alone
    graph with pylance's file layout, so :meth:`build` raises ``NotImplementedError``."""

    def __init__(self, hnsw) -> None:
        self._hnsw = hnsw

    @staticmethod
    def build(vectors_array: Iterator[pa.Array], max_level=7, m=20, ef_construction=100) -> "HNSW":
        raise NotImplementedError(
            "lancer.util.HNSW.build: a stand-alone HNSW graph is not implemented in Lancer; "
            "build an IVF_HNSW_* index with LanceDataset.create_index instead"
        )

    def to_lance_file(self, file_path):
        raise NotImplementedError("lancer.util.HNSW.to_lance_file is not implemented in Lancer")

    def vectors(self) -> pa.Array:
        raise NotImplementedError("lancer.util.HNSW.vectors is not implemented in Lancer")
