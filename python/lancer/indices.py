"""Training a vector index's model once, for distributed builds (pylance 14's
``lance.indices``: ``IndicesBuilder.train_ivf`` / ``train_pq``, ``IvfModel``,
``PqModel``), plus lancer's :meth:`IndicesBuilder.train_model`, which trains every part
of a model (centroids and the quantizer: PQ codebook, SQ bounds, RabitQ rotation) so
that workers given it write the partitions and codes one build would.

The models hold numpy / pyarrow arrays and pickle, so a driver can hand them to Ray
tasks; pass them to ``LanceDataset.create_index_uncommitted`` (``ivf_centroids=``,
``pq_codebook=``, or ``model=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa

from . import _lancer
from ._info import IvfModel
from ._segments import _float_bytes

__all__ = ["IndexConfig", "IndexFileVersion", "IndicesBuilder", "IvfModel", "PqModel", "VectorModel"]


class IndexFileVersion(str, Enum):
    """The layouts ``create_index(index_file_version=)`` names, as pylance 14's enum:
    lancer writes V3 and refuses LEGACY."""

    LEGACY = "Legacy"
    V3 = "V3"


@dataclass
class IndexConfig:
    """An index type with its parameters, pylance's form of ``create_scalar_index``'s
    ``index_type``: ``IndexConfig("json", {"path": "x", "target_index_type": "btree"})``
    indexes the values a JSONPath selects in a JSON column (reached by
    ``json_get_int / _float / _bool / _string(col, 'x')`` filters);
    ``IndexConfig("btree", {"zone_size": 1024})`` is the keyword form of any other kind."""

    index_type: str
    parameters: dict


def _fsl(values: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()), values.shape[1])


class PqModel:
    """A trained PQ codebook (pylance's ``PqModel``): ``2^num_bits`` rows of the whole
    dimension, row ``c`` holding code ``c``'s centroid of every sub-vector."""

    def __init__(self, num_subvectors: int, codebook: pa.FixedSizeListArray, *, num_bits: int = 8):
        self.num_subvectors = num_subvectors
        self.num_bits = num_bits
        self.codebook = codebook

    @property
    def dimension(self) -> int:
        return self.codebook.type.list_size


class VectorModel:
    """Every trained part of a vector index's model (lancer's; pylance has no one
    object for it): ``centroids`` (partitions x dim, float32), ``codebook`` (IVF_PQ),
    ``sq_bounds`` (IVF_SQ), the RabitQ rotation (IVF_RQ). Picklable."""

    def __init__(self, index_type: str, metric: str, parts: Dict[str, Any], dim: int):
        self.index_type = index_type
        self.metric = metric
        self.dimension = dim
        self.centroids = np.frombuffer(parts["centroids"], dtype="<f4").reshape(-1, dim).copy()
        book = parts.get("codebook")
        self.codebook = None if book is None else np.frombuffer(book, dtype="<f4").reshape(-1, dim).copy()
        self.sq_bounds = parts.get("sq_bounds")
        self._rabitq = parts.get("rabitq")

    @property
    def num_partitions(self) -> int:
        return len(self.centroids)

    def _engine(self) -> Dict[str, Any]:
        return {
            "centroids": np.ascontiguousarray(self.centroids, dtype="<f4").tobytes(),
            "codebook": None if self.codebook is None
            else np.ascontiguousarray(self.codebook, dtype="<f4").tobytes(),
            "sq_bounds": None if self.sq_bounds is None else tuple(self.sq_bounds),
            "rabitq": self._rabitq,
        }

    def __repr__(self) -> str:
        return (f"VectorModel({self.index_type}, {self.metric}, {self.num_partitions} partitions x "
                f"{self.dimension} dims)")


class IndicesBuilder:
    """Trains index models on a dataset's vector column (pylance's
    ``IndicesBuilder(dataset, column)``)."""

    def __init__(self, dataset: Any, column: str):
        if isinstance(column, list):
            if len(column) != 1:
                raise ValueError("IndicesBuilder takes one column")
            column = column[0]
        self.dataset = dataset
        self.column = column
        self.dimension = dataset._vector_dim(column)
        if self.dimension is None:
            raise TypeError(f"column {column!r} is not a vector column (a fixed-size list of floats)")

    def _train(self, index_type: str, params: Dict[str, Any], fragment_ids: Optional[List[int]],
               given: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return _lancer.train_vector_model(
            self.dataset._inner, self.column, index_type, params,
            None if fragment_ids is None else [int(f) for f in fragment_ids], given)

    def train_ivf(self, num_partitions: Optional[int] = None, *, distance_type: str = "l2",
                  accelerator: Any = None, sample_rate: int = 256, max_iters: int = 50,
                  fragment_ids: Optional[List[int]] = None) -> IvfModel:
        """k-means centroids of a sample of the column (``fragment_ids``: of those
        fragments only)."""
        if accelerator is not None:
            raise NotImplementedError("train_ivf(accelerator=...) is not supported by lancer yet")
        parts = self._train("IVF_FLAT", {"metric": distance_type, "num_partitions": num_partitions,
                                         "sample_rate": sample_rate, "max_iterations": max_iters},
                            fragment_ids)
        c = np.frombuffer(parts["centroids"], dtype="<f4").reshape(-1, self.dimension)
        return IvfModel(_fsl(c), distance_type)

    def train_pq(self, ivf_model: IvfModel, num_subvectors: Optional[int] = None, *,
                 sample_rate: int = 256, max_iters: int = 50, num_bits: int = 8,
                 fragment_ids: Optional[List[int]] = None) -> PqModel:
        """A PQ codebook trained on residuals from ``ivf_model``'s centroids (l2 /
        cosine; dot on the vectors themselves)."""
        if num_subvectors is None:
            num_subvectors = self.dimension // 16 if self.dimension % 16 == 0 else self.dimension // 8
        given = {"centroids": _float_bytes(ivf_model.centroids, "ivf_model.centroids", self.dimension)}
        parts = self._train("IVF_PQ", {"metric": ivf_model.distance_type, "num_sub_vectors": num_subvectors,
                                       "num_bits": num_bits, "sample_rate": sample_rate,
                                       "max_iterations": max_iters,
                                       "num_partitions": ivf_model.num_partitions},
                            fragment_ids, given)
        book = np.frombuffer(parts["codebook"], dtype="<f4").reshape(-1, self.dimension)
        return PqModel(num_subvectors, _fsl(book), num_bits=num_bits)

    def train_model(self, index_type: str, *, metric: str = "l2", num_partitions: Optional[int] = None,
                    num_sub_vectors: Optional[int] = None, num_bits: Optional[int] = None,
                    sample_rate: Optional[int] = None, max_iterations: Optional[int] = None,
                    fragment_ids: Optional[List[int]] = None) -> VectorModel:
        """Every trained part of an ``index_type`` model, from the sample and seed a
        single ``create_index`` with these settings trains on (lancer's)."""
        kind = index_type.upper()
        if not kind.startswith("IVF"):
            raise ValueError(f"{index_type} is not a vector index type")
        parts = self._train(kind, {"metric": metric, "num_partitions": num_partitions,
                                   "num_sub_vectors": num_sub_vectors, "num_bits": num_bits,
                                   "sample_rate": sample_rate, "max_iterations": max_iterations},
                            fragment_ids)
        return VectorModel(kind, metric, parts, self.dimension)
