"""Distributed index builds, as pylance 14 names them: ``Index`` / ``IndexFile``
(a segment's manifest entry), ``LanceDataset.create_index_uncommitted``,
``merge_existing_index_segments`` and ``commit_existing_index_segments``.

A worker builds one segment over its ``fragment_ids`` (files under
``_indices/<uuid>/``, nothing committed) and returns its :class:`Index`; the driver
may merge BTREE / BITMAP segments (byte for byte one build over their fragments) or
vector segments of one model, and commits the list as one index. Vector segments given the same model (``ivf_centroids``
and ``pq_codebook``, or lancer's whole ``model`` from
:meth:`lancer.indices.IndicesBuilder.train_model`) hold the partitions and codes of one
build split by rows.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from . import _checks, _lancer
from ._util import _check_arguments, _scalar_arguments, _vector_arguments

# the kinds pylance 14 builds distributed only as segments (create_index_uncommitted)
_SEGMENT_KINDS = frozenset({"BTREE", "BITMAP", "NGRAM", "RTREE", "ZONEMAP", "BLOOMFILTER",
                            "LABEL_LIST", "MINHASHLSH"})


@dataclass
class IndexFile:
    """A file of an index segment."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """An index segment's manifest entry (pylance's ``lance.dataset.Index``; its
    ``fragment_ids`` is a set here, pylance's own ``Bitmap`` type there)."""

    uuid: str
    name: str
    fields: List[int]
    dataset_version: int
    fragment_ids: Set[int]
    index_version: int
    created_at: Optional[_dt.datetime] = None
    base_id: Optional[int] = None
    files: Optional[List[IndexFile]] = None
    index_details: Optional[Tuple[str, bytes]] = None
    covering_fields: List[int] = field(default_factory=list)


def _index_from_text(text: str) -> Index:
    d = json.loads(text)
    created = d.get("created_at")
    details = d.get("index_details")
    return Index(
        uuid=d["uuid"], name=d["name"], fields=list(d["fields"]),
        dataset_version=int(d["dataset_version"]), fragment_ids=set(d["fragment_ids"]),
        index_version=d.get("index_version") or 0,
        created_at=None if created is None else _dt.datetime.fromtimestamp(created / 1000, _dt.timezone.utc),
        base_id=d.get("base_id"),
        files=[IndexFile(f["path"], int(f["size_bytes"])) for f in d.get("files") or []],
        index_details=None if details is None else (details["type_url"], bytes.fromhex(details["value"])),
    )


def _index_text(idx: Any) -> str:
    """JSON text of an :class:`Index` (or pylance's, or an ``IndexSegment``-like
    object with the same members) for the engine."""
    if not hasattr(idx, "uuid") or not hasattr(idx, "fragment_ids"):
        raise TypeError(f"expected an Index segment, not {type(idx).__name__}")
    created = getattr(idx, "created_at", None)
    if isinstance(created, _dt.datetime):
        created = int(created.timestamp() * 1000)
    details = getattr(idx, "index_details", None)
    files = getattr(idx, "files", None) or []
    return json.dumps({
        "uuid": str(idx.uuid), "name": str(idx.name), "fields": [int(f) for f in idx.fields],
        "dataset_version": int(idx.dataset_version),
        "fragment_ids": sorted(int(f) for f in idx.fragment_ids),
        "index_version": None if getattr(idx, "index_version", None) is None else int(idx.index_version),
        "created_at": created, "base_id": getattr(idx, "base_id", None),
        "files": [{"path": f.path, "size_bytes": int(f.size_bytes)} for f in files],
        "index_details": None if details is None else {"type_url": details[0], "value": bytes(details[1]).hex()},
    })


def _float_bytes(values: Any, what: str, width: Optional[int] = None) -> bytes:
    """Little-endian float32 bytes of a 2-D numpy array, a (fixed-size) list array or
    nested lists; ``width`` checks the row length."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, (pa.ChunkedArray,)):
        values = values.combine_chunks()
    if isinstance(values, pa.FixedSizeListArray):
        arr = np.asarray(values.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        arr = arr.reshape(len(values), values.type.list_size)
    elif isinstance(values, pa.Array) and pa.types.is_fixed_shape_tensor(values.type):
        arr = np.asarray(values.to_numpy_ndarray(), dtype=np.float32)
    else:
        arr = np.asarray(values, dtype=np.float32)
    if arr.ndim < 2 or arr.size == 0:
        raise ValueError(f"{what} must be a non-empty 2-D array of vectors")
    arr = arr.reshape(-1, arr.shape[-1]) if arr.ndim > 2 else arr
    if width is not None and arr.shape[1] != width:
        raise ValueError(f"{what} has rows of {arr.shape[1]} values, the column's vectors have {width}")
    return np.ascontiguousarray(arr, dtype="<f4").tobytes()


class _SegmentsMixin:
    """The distributed-build calls of ``LanceDataset``."""

    def _vector_dim(self, column: str) -> Optional[int]:
        import pyarrow as pa

        t = self.schema.field(column).type
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            t = t.value_type
        return t.list_size if pa.types.is_fixed_size_list(t) else None

    def _given_model(self, column: str, ivf_centroids: Any, pq_codebook: Any, model: Any) -> Optional[dict]:
        if model is not None:
            if ivf_centroids is not None or pq_codebook is not None:
                raise ValueError("give model, or ivf_centroids / pq_codebook, not both")
            return model._engine()
        if ivf_centroids is None:
            if pq_codebook is not None:
                raise ValueError("pq_codebook needs the ivf_centroids it was trained with")
            return None
        dim = self._vector_dim(column)
        out = {"centroids": _float_bytes(ivf_centroids, "ivf_centroids", dim)}
        if pq_codebook is not None:
            # pylance's codebook: 2^bits rows of the whole dimension (each row the
            # code's centroid of every sub-vector), the engine's flat layout
            out["codebook"] = _float_bytes(pq_codebook, "pq_codebook", dim)
        return out

    def create_index_uncommitted(
        self,
        column: Union[str, List[str]],
        index_type: str,
        name: Optional[str] = None,
        metric: str = "L2",
        replace: bool = False,
        num_partitions: Optional[int] = None,
        ivf_centroids: Any = None,
        pq_codebook: Any = None,
        num_sub_vectors: Optional[int] = None,
        *,
        fragment_ids: Optional[List[int]] = None,
        index_uuid: Optional[str] = None,
        num_bits: Optional[int] = None,
        sample_rate: Optional[int] = None,
        max_iterations: Optional[int] = None,
        model: Any = None,
        **kwargs: Any,
    ) -> Index:
        """Builds one segment over ``fragment_ids`` (required) and returns its
        :class:`Index` without committing it: its files are written under
        ``_indices/<uuid>/`` (``index_uuid`` or a new uuid). Vector kinds use the given
        ``ivf_centroids`` (and ``pq_codebook``) or lancer's ``model`` (every trained
        part, :meth:`lancer.indices.IndicesBuilder.train_model`); without either each
        segment trains its own. Scalar and INVERTED kinds take
        :meth:`create_scalar_index`'s parameters. Commit the segments with
        :meth:`commit_existing_index_segments` (or ``LanceOperation.CreateIndex``)."""
        if fragment_ids is None:
            raise ValueError("create_index_uncommitted requires fragment_ids for distributed index build")
        if isinstance(column, list):
            if len(column) != 1:
                raise NotImplementedError("indexes over several columns are not supported")
            column = column[0]
        kind = index_type.upper()
        vector = kind.startswith("IVF")
        params: Dict[str, Any] = {"name": name, "replace": replace}
        if vector:
            hnsw = _vector_arguments("create_index_uncommitted", kwargs, tuning={"storage_options"},
                                     refused={"rabitq_model": None})
            params.update(metric=metric, num_partitions=num_partitions, num_sub_vectors=num_sub_vectors,
                          num_bits=num_bits, sample_rate=sample_rate, max_iterations=max_iterations, **hnsw)
            given = self._given_model(column, ivf_centroids, pq_codebook, model)
        else:
            if ivf_centroids is not None or pq_codebook is not None or model is not None:
                raise ValueError(f"ivf_centroids / pq_codebook / model are for vector indexes, not {kind}")
            params.update(self._scalar_params(kind, kwargs))
            given = None
        _checks.index_target(self.schema, column, kind, scalar=not vector)
        text = _lancer.create_index_segment(
            self._inner, column, kind, params, [int(f) for f in fragment_ids], given,
            None if index_uuid is None else str(index_uuid))
        return _index_from_text(text)

    def _scalar_params(self, kind: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """A scalar / INVERTED build's parameters in pylance's names (as
        ``create_scalar_index`` takes them)."""
        general = {k: kwargs.pop(k) for k in ("train", "storage_options", "progress_callback")
                   if k in kwargs}
        _check_arguments("create_index_uncommitted", general, tuning={"storage_options"},
                         refused={"train": True, "progress_callback": None})
        analyzer, scalar = _scalar_arguments(kind, kwargs)
        return scalar if analyzer is None else {"analyzer_json": analyzer}

    def _stage_scalar_index(self, column: str, index_type: str, fragment_ids: List[int],
                            index_uuid: Optional[str], kwargs: Dict[str, Any]) -> None:
        """``create_scalar_index(..., fragment_ids=, index_uuid=)`` as pylance 14 takes
        it: an INVERTED (FTS) build over those fragments staged as one partition of the
        index ``index_uuid`` (a new uuid when None), not committed; the other kinds are
        built with :meth:`create_index_uncommitted`, as pylance's error says."""
        import uuid as _uuid

        kind = index_type.upper()
        if kind in _SEGMENT_KINDS:
            raise ValueError(f"{kind} distributed indexing uses create_index_uncommitted(..., "
                             f'index_type="{kind}", fragment_ids=...)')
        if kind not in ("INVERTED", "FTS"):
            raise NotImplementedError(
                f"create_scalar_index(fragment_ids=...) builds INVERTED partitions; {kind} is not supported")
        general = {k: kwargs.pop(k) for k in ("train", "progress_callback", "format_version",
                                             "document_granularity") if k in kwargs}
        _check_arguments("create_scalar_index", general,
                         refused={"train": True, "progress_callback": None, "format_version": None,
                                  "document_granularity": "row"})
        if index_uuid is None:
            index_uuid = str(_uuid.uuid4())
        else:
            try:
                index_uuid = str(_uuid.UUID(str(index_uuid)))
            except ValueError as e:
                raise ValueError(f"Invalid UUID string for index_uuid: {e}") from None
        _checks.index_target(self.schema, column, kind, scalar=True)
        params = self._scalar_params("INVERTED", kwargs)
        _lancer.stage_fts_partition(self._inner.latest(), column, params,
                                    [int(f) for f in fragment_ids], index_uuid)

    def merge_index_metadata(self, index_uuid: str, index_type: str,
                             batch_readhead: Optional[int] = None,
                             progress_callback: Any = None) -> None:
        """Merges the INVERTED partitions staged under ``index_uuid`` (by
        ``create_scalar_index(..., fragment_ids=, index_uuid=)``) into one, as pylance
        14 does; nothing is committed (commit ``LanceOperation.CreateIndex`` with an
        ``Index`` of that uuid). BTREE and the vector kinds are refused as pylance 14
        refuses them (their distributed builds are segments:
        :meth:`create_index_uncommitted`, :meth:`merge_existing_index_segments`)."""
        kind = str(index_type).upper()
        valid = ("BTREE", "INVERTED", "IVF_FLAT", "IVF_PQ", "IVF_SQ", "VECTOR")
        if kind not in valid:
            raise NotImplementedError(f"Only {', '.join(sorted(valid))} are supported, received {index_type}")
        if kind == "BTREE":
            raise ValueError("Invalid user input: BTree distributed indexing no longer supports "
                             "merge_index_metadata; build segments, optionally merge groups with "
                             "merge_existing_index_segments(...), and commit with "
                             "commit_existing_index_segments(...)")
        if kind != "INVERTED":
            raise ValueError("Invalid user input: Vector distributed indexing no longer supports "
                             "merge_index_metadata; build segments, optionally merge groups with "
                             "merge_existing_index_segments(...), and commit with "
                             "commit_existing_index_segments(...)")
        _check_arguments("merge_index_metadata", {"progress_callback": progress_callback},
                         refused={"progress_callback": None})
        # batch_readhead is the read-ahead of pylance's BTREE merge: tuning only
        _lancer.merge_staged_fts(self._inner.latest(), str(index_uuid))

    def merge_existing_index_segments(self, segments: List[Any]) -> Index:
        """Merges uncommitted segments (of one column and kind, disjoint fragments) into
        one under a new uuid: BTREE / BITMAP / ZONEMAP / BLOOMFILTER byte for byte the
        segment one build over their fragments writes; INVERTED into one partition as
        pylance 14 merges them (postings decoded and laid out as one build's, byte for
        byte for lancer's segments; pylance's staged segments read too; analyzer settings
        must agree); vector segments built with one model from their stored records (FLAT /
        SQ / PQ / RQ, HNSW included: byte for byte one build's, nothing encoded again). LABEL_LIST and NGRAM (which
        pylance does not merge either), and vector segments of different models, are
        refused (commit them side by side)."""
        text = _lancer.merge_index_segments(self._inner, [_index_text(s) for s in segments])
        return _index_from_text(text)

    def commit_existing_index_segments(self, index_name: str, column: str, segments: List[Any]) -> Any:
        """Commits built segments as the index ``index_name`` on ``column`` (one
        ``CreateIndex``, replacing an index of that name, rebased over concurrent
        commits). Segments must be of one kind and cover disjoint fragments; every file
        they list must exist at its recorded size."""
        self._inner = _lancer.commit_index_segments(
            self._inner, str(index_name), str(column), [_index_text(s) for s in segments], True)
        return self
