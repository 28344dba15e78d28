"""Datasets, scanners, fragments and writes: pylance's everyday API over ``lancer._lancer``.

Signatures follow pylance 14 (``lance.dataset``, ``lance.write_dataset``,
``LanceDataset``, ``LanceScanner``, ``LanceFragment``); arguments that only tune
pylance's own machinery (read-ahead, cache sizes, commit locks) are accepted and
ignored, and ones naming a feature Lancer lacks raise ``NotImplementedError``.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _checks, _lancer, _segments
from . import progress as _progress
from ._bases import DatasetBasePath, base_tuples
from ._branches import Branch, Branches, VersionRef, _BranchesMixin  # noqa: F401
from ._cleanup import CleanupStats, explain
from ._commit import LanceOperation, Transaction, _CommitMixin  # noqa: F401
from ._evolve import BatchUDF, MergeInsertBuilder, _add_columns_checkpointed, _udf_parts, batch_udf  # noqa: F401
from ._info import (  # noqa: F401 (pylance's names in lance.dataset)
    AlterColumn,
    Bitmap,
    DatasetStats,
    DeleteResult,
    ExecuteResult,
    IndexInformation,
    IOStats,
    IvfModel,
    Tag,
    UpdateResult,
    Version,
    _DatasetInfo,
)
from ._introspect import LanceSchema, VectorIndexReader  # noqa: F401
from ._lancer import CommitConflictError
from ._metadata import AutoCleanupConfig, _MetadataMixin  # noqa: F401
from ._scanner import LanceScanner
from ._segments import Index, IndexFile, _SegmentsMixin  # noqa: F401
from ._session import Session
from ._stats import (  # noqa: F401
    DataStatistics,
    FieldStatistics,
    IndexDescription,
    IndexSegmentDescription,
    LanceStats,
    _index_description,
)
from ._transactions import _TransactionsMixin
from ._util import (  # noqa: F401 (DatasetNotFoundError: pylance's name in lance.dataset)
    DatasetNotFoundError,
    _computed,
    _evaluate,
    _sql_filter,
    _auto_cleanup,
    _check_arguments,
    _columns,
    _DatasetBase,
    _indices,
    _open,
    _options,
    _reader,
    _scalar_arguments,
    _session,
    _uri,
    _vector_arguments,
)
from .blob import BlobFile, _validate_buffer_size
from .fragment import LanceFragment, _DataFile  # noqa: F401
from .indices import IndexConfig
from ._sql import SqlQuery, SqlQueryBuilder  # noqa: F401 (pylance's names in lance.dataset)
from .optimize import CompactionMetrics, DatasetOptimizer  # noqa: F401

# Tuning arguments of pylance's scanner that Lancer's planner decides itself (they do not
# change which rows come back, or in what order when order matters): accepted, no effect.
_SCAN_HINTS = {
    "batch_size_bytes",
    "batch_readahead",
    "fragment_readahead",
    "scan_in_order",
    "late_materialization",
    "use_stats",
    "io_buffer_size",
}

# Arguments that change the answer and that Lancer cannot honour yet: refused when set to
# anything but their default (never accepted and ignored).
_NOT_YET: Dict[str, Any] = {}

# Arguments of pylance's scanner that change the answer, honoured (see LanceScanner).
_SCAN_OPTIONS = ("fast_search", "include_deleted_rows", "strict_batch_size")


@dataclass
class ColumnOrdering:
    """One key of ``order_by``, as pylance's ``lance.dataset.ColumnOrdering``: the
    column, ascending (default) or descending, nulls last (default) or first."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False



# What "stable" (and no data_storage_version) means, as pylance 14's.
STABLE_STORAGE_VERSION = "2.2"

def _orderings(order_by: Any) -> Optional[List[Any]]:
    """``order_by`` (names or ColumnOrdering-like objects) as (column, ascending,
    nulls_first) tuples."""
    if order_by is None:
        return None
    if isinstance(order_by, (str, ColumnOrdering)) or hasattr(order_by, "column_name"):
        order_by = [order_by]
    out = []
    for o in order_by:
        if isinstance(o, str):
            o = ColumnOrdering(o)
        if not hasattr(o, "column_name"):
            raise TypeError(f"order_by takes column names or ColumnOrdering, not {type(o).__name__}")
        out.append((str(o.column_name), bool(getattr(o, "ascending", True)),
                    bool(getattr(o, "nulls_first", False))))
    return out or None

# Attempts of a delete that meets a concurrent writer's delete or update.
_DELETE_ATTEMPTS = 8


def dataset(
    uri: Any,
    version: Optional[Union[int, str]] = None,
    asof: Any = None,
    block_size: Optional[int] = None,
    commit_lock: Any = None,
    index_cache_size: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    **kwargs: Any,
) -> "LanceDataset":
    """Opens the Lance dataset at ``uri`` (latest version, a version number, or a tag).

    ``storage_options`` are the object store's settings (``aws_access_key_id``,
    ``aws_endpoint``, ``azure_storage_account_name``, ...); environment variables apply
    first. A missing dataset raises :class:`DatasetNotFoundError`.
    """
    # block_size and index_cache_size tune the reads only (as the cache sizes _open takes)
    inner = _open(uri, version, asof, commit_lock=commit_lock, storage_options=storage_options, **kwargs)
    return LanceDataset(inner, storage_options)


def _reopen(cls: Any, uri: str, version: int, storage_options: Optional[Dict[str, str]]) -> "LanceDataset":
    """A pickled dataset opened again (``LanceDataset.__reduce__``)."""
    return cls(_open(uri, version, storage_options=storage_options), storage_options)


def write_dataset(
    data_obj: Any,
    uri: Any,
    schema: Optional[pa.Schema] = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = 1024 * 1024,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    data_storage_version: Optional[str] = None,
    use_legacy_format: Optional[bool] = None,
    enable_stable_row_ids: bool = False,
    **kwargs: Any,
) -> "LanceDataset":
    """Writes ``data_obj`` as a Lance dataset at ``uri``; ``mode`` is ``create`` (an
    existing dataset is an error), ``append`` or ``overwrite``.

    ``data_storage_version``: ``"2.0"``, ``"2.1"``, ``"2.2"`` / ``"stable"`` (the default, as in
    pylance 14). Files are written in parallel; the commit is atomic.
    """
    if use_legacy_format:
        raise NotImplementedError("Lancer writes data storage versions 2.0, 2.1 and 2.2, not the legacy format")
    # the commit's transaction records these, as pylance's (its message under a key of its own)
    properties = {str(k): str(v) for k, v in (kwargs.pop("transaction_properties", None) or {}).items()}
    message = kwargs.pop("commit_message", None)
    if message is not None:
        properties["__lance_commit_message"] = str(message)
    auto_cleanup = _auto_cleanup(kwargs.pop("auto_cleanup_options", None))
    v2_paths = bool(kwargs.pop("enable_v2_manifest_paths", True))
    session = _session(kwargs.pop("session", None))
    # blob v2 columns: the packed sidecars' size, external URIs outside registered bases
    pack_threshold = kwargs.pop("blob_pack_file_size_threshold", None)
    if pack_threshold is not None and (isinstance(pack_threshold, bool) or int(pack_threshold) <= 0):
        raise ValueError("blob_pack_file_size_threshold must be a positive int")
    allow_outside = bool(kwargs.pop("allow_external_blob_outside_bases", False))
    initial_bases = base_tuples(kwargs.pop("initial_bases", None), "initial_bases")
    # new data files spread over registered bases, one file each in turn
    target_bases = kwargs.pop("target_bases", None)
    if target_bases is not None:
        if isinstance(target_bases, str) or not all(isinstance(t, str) for t in target_bases):
            raise TypeError("target_bases must be a list of base names or paths (str)")
        target_bases = [str(t) for t in target_bases]
    target_all_bases = kwargs.pop("target_all_bases", None)
    blob_mode = kwargs.pop("external_blob_mode", "reference")
    if blob_mode not in ("reference", "ingest"):
        raise ValueError(f"external_blob_mode must be 'reference' or 'ingest', got {blob_mode!r}")
    progress = kwargs.pop("progress", None)
    # max_rows_per_group and the byte budgets below tune the files' layout only
    _check_arguments("write_dataset", kwargs,
                     tuning={"data_cache_bytes", "max_page_bytes"},
                     refused={"commit_lock": None, "base_store_params": None,
                              "namespace_client": None, "table_id": None})
    version = data_storage_version or STABLE_STORAGE_VERSION
    if str(version).lower() == "stable":
        version = STABLE_STORAGE_VERSION
    reader = _reader(data_obj, schema)
    inner = _lancer.write(
        reader,
        _uri(uri),
        mode,
        max_rows_per_file,
        max_bytes_per_file,
        str(version),
        _options(storage_options),
        bool(enable_stable_row_ids),
        properties or None,
        auto_cleanup,
        v2_manifest_paths=v2_paths,
        session=session,
        blob_pack_file_size_threshold=None if pack_threshold is None else int(pack_threshold),
        allow_external_blob_outside_bases=allow_outside,
        ingest_external_blobs=blob_mode == "ingest",
        initial_bases=initial_bases or None,
        target_bases=target_bases or None,
        target_all_bases=None if target_all_bases is None else bool(target_all_bases),
        progress=_progress._fragment_listener(progress),
    )
    return LanceDataset(inner, storage_options)


def _blob_selection(ids: Any, addresses: Any, indices: Any) -> Tuple[str, List[int]]:
    """pylance's rule: exactly one selector."""
    given = [(n, v) for n, v in (("ids", ids), ("addresses", addresses), ("indices", indices)) if v is not None]
    if len(given) != 1:
        raise ValueError("Exactly one of ids, indices, or addresses must be specified")
    name, values = given[0]
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    return name, [int(v) for v in values]


class Tags:
    """A dataset's tags (names for versions), as pylance 14's: ``list`` (each tag's
    branch, version, creation and update times, manifest size, metadata),
    ``create`` / ``update`` (a version number or another tag's name),
    ``replace_metadata``, ``delete``, ``list_ordered``, ``get_version``."""

    def __init__(self, ds: "LanceDataset"):
        self._ds = ds

    def list(self) -> Dict[str, Dict[str, Any]]:
        """Tags by name: pylance's ``Tag`` (``branch``, ``version``, ``created_at`` /
        ``updated_at`` as UTC datetimes, ``manifest_size``, ``metadata``)."""
        out = {}
        for name, branch, version, created, updated, size, md in _lancer.tag_records(self._ds._inner):
            out[name] = {"branch": branch, "version": version, "created_at": _rfc3339(created),
                         "updated_at": _rfc3339(updated), "manifest_size": size, "metadata": dict(md)}
        return out

    def _version_of(self, reference: Any) -> int:
        if reference is None:
            return self._ds.latest_version
        if isinstance(reference, bool):
            raise TypeError(f"a tag's reference is a version number or a tag name, not {reference!r}")
        if isinstance(reference, int):
            return int(reference)
        if isinstance(reference, str):
            tags = self.list()
            if reference not in tags:
                # (pylance raises OSError here, ValueError for other missing tags: both)
                raise _lancer.InvalidInputError(f"Ref not found error: tag {reference} does not exist")
            if tags[reference]["branch"] not in (None, "main"):
                raise NotImplementedError(
                    f"tag {reference!r} names a version of branch {tags[reference]['branch']!r}: tags of "
                    "branches' versions are not supported by lancer yet")
            return int(tags[reference]["version"])
        if isinstance(reference, tuple):
            branch, version = reference
            if branch not in (None, "main"):
                raise NotImplementedError("tags of branches' versions ((branch, version) references) are not "
                                          "supported by lancer yet: tag a version of main")
            return self._ds.latest_version if version is None else int(version)
        raise TypeError(f"a tag's reference is a version number, a tag name or a (branch, version) tuple, "
                        f"not {type(reference).__name__}")

    def create(self, tag: str, reference: Any = None) -> None:
        """Names a version ``tag`` (an existing tag is an error): ``reference`` is a
        version number, another tag's name, ``(None | "main", version)`` or None (the
        latest version)."""
        version = self._version_of(reference)
        _lancer.create_tag(self._ds._inner, tag, version)

    def delete(self, tag: str) -> None:
        """Removes ``tag`` (the version stays)."""
        self._ds._inner.delete_tag(tag)

    def update(self, tag: str, reference: Any = None) -> None:
        """Points ``tag`` at another version; its creation time and metadata stay."""
        _lancer.update_tag(self._ds._inner, tag, self._version_of(reference))

    def replace_metadata(self, tag: str, metadata: Dict[str, str]) -> None:
        """Replaces ``tag``'s whole metadata (its version and update time stay)."""
        if not isinstance(metadata, dict):
            raise TypeError(f"argument 'metadata': '{type(metadata).__name__}' object cannot be converted to 'PyDict'")
        for k, v in metadata.items():
            for x in (k, v):
                if not isinstance(x, str):
                    raise TypeError(f"argument 'metadata': '{type(x).__name__}' object is not an instance of 'str'")
        _lancer.replace_tag_metadata(self._ds._inner, tag, dict(metadata))

    def list_ordered(self, order: Optional[str] = None) -> List[Any]:
        """``(name, tag)`` pairs of ``list()``, by version (newest first, or oldest
        first with ``order="asc"``), then by name."""
        order = "desc" if order is None else order
        if order not in ("asc", "desc"):
            raise ValueError(f"Invalid sort order '{order}'. Valid values are: asc, desc")
        tags = sorted(self.list().items(), key=lambda t: t[0])
        return sorted(tags, key=lambda t: t[1]["version"], reverse=order == "desc")

    def get_version(self, tag: str) -> int:
        """The version ``tag`` names."""
        for name, v in self._ds._inner.tags():
            if name == tag:
                return v
        raise ValueError(f"no tag {tag!r}")


def _rfc3339(text: str) -> Optional[_dt.datetime]:
    """A tag file's time (``2026-12-04T08:37:40.448141431Z``) as an aware datetime
    (microseconds, as pylance converts it); None when the file has none."""
    if not text:
        return None
    head, _, frac = text.rstrip("Z").partition(".")
    micros = int((frac + "000000")[:6]) if frac else 0
    base = _dt.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S")
    return base.replace(microsecond=micros, tzinfo=_dt.timezone.utc)


class LanceDataset(_MetadataMixin, _DatasetInfo, _BranchesMixin, _CommitMixin, _TransactionsMixin, _SegmentsMixin,
                   _DatasetBase):
    """One version of a Lance dataset. Writes (``delete``, ``restore``, index builds)
    move this object to the version they commit, as in pylance."""

    def __init__(self, inner: Any, storage_options: Optional[Dict[str, str]] = None):
        self._inner = inner
        self._storage_options = storage_options

    @classmethod
    def from_pydantic_model(cls, model_class: Any, data: Any, uri: Optional[Union[str, Any]] = None,
                            mode: str = "create", **kwargs: Any) -> "LanceDataset":
        """Writes ``data`` — a list of instances of the pydantic model ``model_class``
        exactly (not of subclasses) — as a dataset (``write_dataset(..., mode=mode,
        **kwargs)``) whose schema is the model's (:func:`lancer.pydantic.pydantic_to_schema`:
        from the annotations, not the values); ``uri`` defaults to the class name in
        snake_case, as pylance's."""
        try:
            from pydantic import BaseModel
        except ImportError:
            BaseModel = None  # (then no class is a model, as pylance decides)
        if BaseModel is None or not (isinstance(model_class, type) and issubclass(model_class, BaseModel)):
            raise TypeError(f"`model_class` must be a Pydantic BaseModel subclass, got {model_class!r}")
        if not isinstance(data, list):
            raise TypeError(f"Pydantic model data must be provided as a list, got {type(data)!r}")
        for i, item in enumerate(data):
            if type(item) is not model_class:
                raise TypeError(f"data[{i}] must be an instance of {model_class!r} exactly (subclasses are not "
                                f"accepted), got {type(item)!r} (data has {len(data)} items)")
        if not data:
            raise ValueError("`data` must be a non-empty list of Pydantic model instances.")
        if uri is None:
            name = model_class.__name__
            uri = "".join("_" + c if i and "A" <= c <= "Z" else c for i, c in enumerate(name)).lower()
        from .pydantic import pydantic_to_schema

        rows = [item.model_dump() if hasattr(item, "model_dump") else item.dict() for item in data]
        table = pa.Table.from_pylist(rows, schema=pydantic_to_schema(model_class))
        return write_dataset(table, uri, mode=mode, **kwargs)

    def sql(self, sql: str) -> "SqlQueryBuilder":
        """A SQL query over this version (the table ``dataset``, as pylance 14 names
        it; ``vector_search`` / ``fts`` and other datasets or files too): configure it
        and ``build()`` it, then ``to_batch_records()``."""
        return SqlQueryBuilder(self, sql)

    def __datafusion_table_provider__(self, session: Any) -> Any:
        """This version as a DataFusion-Python table (``ctx.register_table("t", ds)``);
        see ``lancer.FFILanceTableProvider``."""
        from ._sql import FFILanceTableProvider
        return FFILanceTableProvider(self).__datafusion_table_provider__(session)

    def __reduce__(self) -> Any:
        # as pylance pickles a dataset: what reopens this version where it is unpickled
        # (another process, a Ray worker); the session stays behind
        return (_reopen, (type(self), self.uri, self.version, self._storage_options))

    # --- identity and versions -------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._inner.uri

    @property
    def version(self) -> int:
        """This object's version."""
        return self._inner.version

    @property
    def latest_version(self) -> int:
        """The newest version of the dataset."""
        return self._inner.latest().version

    @property
    def schema(self) -> pa.Schema:
        return self._inner.schema

    @property
    def data_storage_version(self) -> str:
        return self._inner.data_storage_version

    @property
    def lance_schema(self) -> "LanceSchema":
        """The schema with the field ids this version's manifest assigns
        (:class:`lancer.schema.LanceSchema`)."""
        return LanceSchema._of_dataset(self)

    @property
    def tags(self) -> Tags:
        if _lancer.branch_of(self._inner) is not None:
            raise NotImplementedError(
                "tags of a branch's dataset are not supported by lancer yet (pylance keeps them in the root "
                "with the branch named): open the dataset's root for its tags")
        return Tags(self)

    @property
    def has_stable_row_ids(self) -> bool:
        return self._inner.stable_row_ids

    def versions(self) -> List[Dict[str, Any]]:
        """Every version, oldest first: ``version``, ``timestamp`` (a naive local
        datetime, as pylance gives) and ``metadata``: pylance's counts of the version's
        fragments (``total_rows``, ``total_fragments``, ``total_data_files``,
        ``total_files_size``, deletion files and rows), as text."""
        out = []
        for v, secs, nanos, summary in self._inner.versions():
            ts = _dt.datetime.fromtimestamp(secs + nanos / 1e9)
            out.append({"version": v, "timestamp": ts, "metadata": dict(summary)})
        return out

    def checkout_version(self, version: Union[int, str, tuple]) -> "LanceDataset":
        """The dataset at ``version``: a number (of this branch), a tag, or a
        ``(branch, version)`` tuple (``None``: main, the latest)."""
        if isinstance(version, (str, tuple)):
            return self._checkout_reference(version)
        return LanceDataset(self._inner.checkout(int(version)), self._storage_options)

    def base_paths(self) -> Dict[int, Any]:
        """The base paths registered in this version, by id (a fresh
        :class:`lancer.DatasetBasePath` each)."""
        return {i: DatasetBasePath(p, name=n, is_dataset_root=r, id=i)
                for i, n, p, r in self._inner.base_paths()}

    def add_bases(self, new_bases: List[Any], transaction_properties: Optional[Dict[str, str]] = None
                  ) -> "LanceDataset":
        """Registers ``new_bases`` (:class:`lancer.DatasetBasePath`) in one commit; ids
        follow the registered ones. Returns this dataset, now at the new version."""
        tuples = base_tuples(new_bases, "new_bases")
        if not tuples:
            raise ValueError("add_bases needs at least one DatasetBasePath")
        props = None if transaction_properties is None else {str(k): str(v) for k, v in transaction_properties.items()}
        self._inner = self._inner.add_bases(tuples, props)
        return self

    def restore(self) -> None:
        """Makes this (older) version the latest again, as a new version."""
        self._inner = self._inner.restore()

    def session(self) -> Any:
        """The :class:`lancer.Session` this dataset was opened in (shared by the versions
        checked out from it)."""
        return Session._of(_lancer.Session.of(self._inner))

    def migrate_manifest_paths_v2(self) -> None:
        """Renames the manifests to the newer naming (latest first in a listing), as
        pylance; new versions keep it. Idempotent; run it while nobody else writes."""
        _lancer.migrate_manifest_paths_v2(self._inner)

    def cleanup_old_versions(
        self,
        older_than: Optional[_dt.timedelta] = None,
        retain_versions: Optional[int] = None,
        *,
        delete_unverified: bool = False,
        error_if_tagged_old_versions: bool = True,
        **kwargs: Any,
    ) -> CleanupStats:
        """Removes versions older than ``older_than`` (default two weeks) — or all but
        the newest ``retain_versions`` — and the files only they use (data, deletion,
        transaction and index files). The latest version stays; a tagged version due for
        removal is an ``OSError`` naming its tags unless
        ``error_if_tagged_old_versions=False`` (then it stays); with ``retain_versions``
        alone, unreferenced files younger than a week stay unless
        ``delete_unverified=True`` (as in pylance). ``delete_rate_limit`` and
        ``delete_concurrency`` tune the deletes; ``versions=`` is refused."""
        _check_arguments("cleanup_old_versions", kwargs, tuning={"delete_rate_limit", "delete_concurrency"},
                         refused={"versions": None})
        if retain_versions is not None and retain_versions < 1:
            raise ValueError("retain_versions must be at least 1")
        if older_than is None and retain_versions is None:
            older_than = _dt.timedelta(days=14)
        age = None if older_than is None else older_than.total_seconds()
        nbytes, versions, data, transactions, indexes, deletions = _lancer.cleanup(
            self.uri, age, retain_versions, _options(self._storage_options), bool(delete_unverified),
            bool(error_if_tagged_old_versions))
        return CleanupStats(bytes_removed=nbytes, old_versions=versions, data_files_removed=data,
                            transaction_files_removed=transactions, index_files_removed=indexes,
                            deletion_files_removed=deletions)

    def explain_cleanup_old_versions(
        self,
        older_than: Optional[_dt.timedelta] = None,
        retain_versions: Optional[int] = None,
        *,
        delete_unverified: bool = False,
        error_if_tagged_old_versions: bool = True,
        delete_rate_limit: Optional[int] = None,
        versions: Optional[List[int]] = None,
        include_files: bool = False,
        max_files: int = 1000,
    ) -> Any:
        """What :meth:`cleanup_old_versions` with these limits would remove, nothing
        removed (pylance's ``CleanupExplanation``). ``delete_rate_limit`` tunes deletes
        and does nothing here; ``versions=`` is refused."""
        return explain(self, older_than, retain_versions, delete_unverified=delete_unverified,
                       error_if_tagged_old_versions=error_if_tagged_old_versions, versions=versions,
                       include_files=include_files, max_files=max_files)

    # --- reading --------------------------------------------------------------------
    def count_rows(self, filter: Optional[str] = None, **kwargs: Any) -> int:
        """Live rows, or rows passing the SQL ``filter``."""
        if kwargs:
            return self.scanner(filter=filter, **kwargs).count_rows()
        return self._inner.count_rows(_sql_filter(filter, "count_rows", self))

    def __len__(self) -> int:
        return self.count_rows()

    def scanner(
        self,
        columns: Any = None,
        filter: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        nearest: Optional[Dict[str, Any]] = None,
        batch_size: Optional[int] = None,
        *,
        prefilter: Optional[bool] = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        use_scalar_index: Optional[bool] = None,
        fragments: Optional[Sequence[Any]] = None,
        full_text_query: Any = None,
        **kwargs: Any,
    ) -> LanceScanner:
        """A scan: ``columns`` (names or ``struct.field`` paths, or ``{name: SQL
        expression}`` for computed columns), SQL ``filter``,
        ``limit`` / ``offset``, ``with_row_id`` / ``with_row_address``; or a vector search
        (``nearest={"column", "q", "k", "metric", "nprobes", "minimum_nprobes",
        "maximum_nprobes", "refine_factor", "use_index", "ef", "approx_mode"}``; ``q`` a
        2-D array is one multivector query on a list-of-vectors column;
        ``query_parallelism`` is tuning only; ``approx_mode`` "fast" walks HNSW graphs
        ACORN-style past a prefilter, and on IVF_RQ "fast" / "accurate" are refused;
        ``distance_range`` and ``search_effort`` are refused by name; a filter
        applies to the k nearest, or before the search with ``prefilter=True``, as in
        pylance) or a full-text search
        (``full_text_query="words"``)."""
        filter = _sql_filter(filter, "scanner", self)
        order_by = kwargs.pop("order_by", None)
        options: Dict[str, Any] = {k: bool(kwargs.pop(k)) for k in _SCAN_OPTIONS if kwargs.get(k) is not None}
        blob_handling = kwargs.pop("blob_handling", None)
        # "all_descriptions" asks for descriptions of every binary column, but only blob
        # columns store any: pylance 14 returns other binary columns as binary (probed on
        # 2.0 / 2.1 / 2.2 files), so it reads as "blobs_descriptions" does.
        if blob_handling not in (None, "blobs_descriptions", "all_binary", "all_descriptions"):
            raise ValueError(f"blob_handling must be 'all_binary', 'blobs_descriptions' or 'all_descriptions', "
                             f"got {blob_handling!r}")
        options["blob_descriptions"] = blob_handling != "all_binary"
        stats_callback = kwargs.pop("scan_stats_callback", None)
        if stats_callback is not None:
            if not callable(stats_callback):
                raise TypeError("scan_stats_callback must be callable")
            options["scan_stats_callback"] = stats_callback
        for name, default in _NOT_YET.items():
            value = kwargs.pop(name, default)
            if value != default:
                raise NotImplementedError(f"{name}={value!r} is not supported by lancer yet")
        unknown = set(kwargs) - _SCAN_HINTS
        if unknown:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
        frag_ids = None
        if fragments is not None:
            frag_ids = [f.fragment_id if isinstance(f, LanceFragment) else int(f) for f in fragments]
        return LanceScanner(
            self,
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            nearest=nearest,
            batch_size=batch_size,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            use_scalar_index=True if use_scalar_index is None else use_scalar_index,
            fragments=frag_ids,
            full_text_query=full_text_query,
            order_by=_orderings(order_by),
            **options,
        )

    def to_table(self, columns: Any = None, filter: Optional[str] = None, limit: Optional[int] = None,
                 offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                 batch_size: Optional[int] = None, **kwargs: Any) -> pa.Table:
        """The rows (see :meth:`scanner` for the arguments) as a ``pyarrow.Table``."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size, **kwargs).to_table()

    def to_batches(self, columns: Any = None, filter: Optional[str] = None, limit: Optional[int] = None,
                   offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                   batch_size: Optional[int] = None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The rows batch by batch (see :meth:`scanner`)."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size, **kwargs).to_batches()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        return self.scanner(limit=num_rows, **kwargs).to_table()

    def to_pandas(self, columns: Any = None, filter: Any = None, limit: Optional[int] = None,
                  offset: Optional[int] = None, nearest: Optional[Dict[str, Any]] = None,
                  batch_size: Optional[int] = None, **kwargs: Any) -> Any:
        """``to_table(...)`` (every scanner argument) as a pandas DataFrame."""
        return self.to_table(columns, filter, limit, offset, nearest, batch_size, **kwargs).to_pandas()

    def sample(self, num_rows: int, columns: Any = None, randomize_order: bool = True,
               **kwargs: Any) -> pa.Table:
        """``num_rows`` distinct live rows drawn at random (in the drawn order, or in
        dataset order with ``randomize_order=False``), as pylance draws them (Python's
        ``random``; more rows than the dataset holds is a ``ValueError``)."""
        indices = random.sample(range(self.count_rows()), num_rows)
        if not randomize_order:
            indices = sorted(indices)
        return self.take(indices, columns, **kwargs)

    def checkout_latest(self) -> None:
        """Moves this object to the latest version."""
        self._inner = self._inner.latest()

    def take(self, indices: Any, columns: Any = None, **kwargs: Any) -> pa.Table:
        """Rows at live-row offsets ``indices``, in that order (blob columns as their
        descriptors, as pylance's ``take``; payloads through :meth:`read_blobs`)."""
        _check_arguments("take", kwargs)
        computed = _computed(self._inner, columns)
        if computed is not None:
            exprs, read = computed
            return _evaluate(self._inner, self._inner.take(_indices(indices), read, blob_descriptions=True),
                             exprs, read)
        return self._inner.take(_indices(indices), _columns(columns), blob_descriptions=True)

    def take_rows(self, row_ids: Any, columns: Any = None, **kwargs: Any) -> pa.Table:
        """Rows by row id (``_rowid``: the stable id, or the row address)."""
        _check_arguments("take_rows", kwargs)
        computed = _computed(self._inner, columns)
        if computed is not None:
            exprs, read = computed
            return _evaluate(self._inner, self._inner.take_rows(_indices(row_ids), read, blob_descriptions=True),
                             exprs, read)
        return self._inner.take_rows(_indices(row_ids), _columns(columns), blob_descriptions=True)

    # --- blobs ----------------------------------------------------------------------
    def take_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   buffer_size: int = 512 * 1024) -> List[Optional["BlobFile"]]:
        """A lazy file-like :class:`lancer.BlobFile` per selected row (None for a null
        blob): exactly one of ``ids`` (row ids), ``addresses`` (row addresses) or
        ``indices`` (live-row offsets). Only descriptors are read here; each handle
        fetches the bytes it is asked for."""
        buffer_size = _validate_buffer_size(buffer_size)
        kind, rows = _blob_selection(ids, addresses, indices)
        return [None if h is None else BlobFile(h, buffer_size=buffer_size)
                for h in _lancer.take_blobs(self._inner, blob_column, kind, rows)]

    def read_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   io_buffer_size: Optional[int] = None,
                   preserve_order: Optional[bool] = None) -> List[Tuple[int, Optional[bytes]]]:
        """The complete payloads of the selected rows, ``(row address, bytes | None)``
        each, read per source in batched requests (``io_buffer_size`` tunes nothing
        here); ``preserve_order=False`` returns them by row address."""
        kind, rows = _blob_selection(ids, addresses, indices)
        return _lancer.read_blobs(self._inner, blob_column, kind, rows, preserve_order is not False)

    def read_blob_ranges(self, blob_column: str, requests: Sequence[Tuple[int, int, int]], *, selector: str,
                         io_buffer_size: Optional[int] = None,
                         preserve_order: Optional[bool] = None) -> List[Tuple[int, int, Optional[bytes]]]:
        """``(request index, row address, bytes | None)`` for each ``(row, offset,
        length)`` request, ``row`` read as ``selector`` (``ids``, ``addresses`` or
        ``indices``): only the ranges asked are read."""
        if selector not in ("ids", "addresses", "indices"):
            raise ValueError(f"selector must be one of 'ids', 'addresses', or 'indices', got {selector!r}")
        reqs = [(int(r), int(o), int(n)) for r, o, n in requests]
        return _lancer.read_blob_ranges(self._inner, blob_column, reqs, selector, preserve_order is not False)

    def get_fragments(self, filter: Any = None) -> List[LanceFragment]:
        if filter is not None:
            raise NotImplementedError("get_fragments(filter=) is not supported")
        return [LanceFragment(self, m) for m in self._inner.fragments()]

    def get_fragment(self, fragment_id: int) -> Optional[LanceFragment]:
        for f in self.get_fragments():
            if f.fragment_id == fragment_id:
                return f
        return None

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    # --- writing --------------------------------------------------------------------
    def delete(self, predicate: str, **kwargs: Any) -> Dict[str, int]:
        """Deletes the rows matching ``predicate`` (SQL text or a pyarrow compute
        Expression): ``{"num_deleted_rows": n}``."""
        predicate = _sql_filter(predicate, "delete", self)
        if predicate is None:
            raise TypeError("delete: give the predicate of the rows to delete")
        # Another writer's delete or update of the same fragments between reading the
        # latest version and committing is a retryable conflict: read again, delete again
        # (pylance rebases the same way), a few times with growing pauses.
        for attempt in range(_DELETE_ATTEMPTS):
            base = self._inner.latest()
            try:
                self._inner = base.delete(predicate)
                break
            except CommitConflictError:
                if attempt + 1 == _DELETE_ATTEMPTS:
                    raise
                time.sleep(0.005 * 2**attempt)
        return {"num_deleted_rows": base.count_rows(None) - self._inner.count_rows(None)}

    # --- evolution and maintenance --------------------------------------------------
    def add_columns(self, transforms: Any, read_columns: Optional[List[str]] = None,
                    reader_schema: Optional[pa.Schema] = None,
                    batch_size: Optional[int] = None) -> None:
        """Adds columns: ``{name: SQL expression}`` (computed from the existing columns,
        in order), a function over batches of the ``read_columns`` (all by default)
        returning a ``pa.RecordBatch`` or pandas DataFrame of the new columns (or a
        ``lancer.batch_udf``: its ``output_schema`` checked; without one, the schema of
        the output on the first batch, as pylance), called ``batch_size`` rows at a time
        (1024) over every fragment's rows, or a ``pa.Field`` / list of fields /
        ``pa.Schema`` (all-null columns, no data written), or a reader of new values
        (a pyarrow table or reader, pandas, a scanner, batches with ``reader_schema``):
        one row per live row, in the dataset's order, as pylance (too few or too many
        rows is an error and nothing is committed). A ``batch_udf(checkpoint_file=)``
        resumes from its checkpoint as pylance's does (see :mod:`lancer.udf`) and removes
        the file once committed."""
        if isinstance(transforms, dict):
            if read_columns is not None or reader_schema is not None:
                raise NotImplementedError("read_columns / reader_schema apply to functions, not SQL expressions")
            self._inner = _lancer.add_columns(self._inner.latest(), [(str(k), str(v)) for k, v in transforms.items()])
            return
        if isinstance(transforms, pa.Field):
            transforms = [transforms]
        if isinstance(transforms, list) and all(isinstance(f, pa.Field) for f in transforms):
            transforms = pa.schema(transforms)
        if isinstance(transforms, pa.Schema):
            self._inner = _lancer.add_null_columns(self._inner.latest(), transforms)
            return
        if callable(transforms):
            if reader_schema is not None:
                raise ValueError("reader_schema applies to readers of new values, not to functions")
            self._add_columns_udf(transforms, read_columns, batch_size)
            return
        # a reader of new values (pyarrow table or reader, pandas, a scanner, batches
        # with reader_schema): one row per live row, in the dataset's order
        if read_columns is not None:
            raise ValueError("read_columns applies to functions over batches, not to a reader of new values")
        try:
            reader = _reader(transforms, reader_schema)
        except TypeError as e:
            raise TypeError(
                "add_columns takes {name: SQL expression}, a function over batches (or lancer.batch_udf), "
                f"pyarrow fields / a schema, or a reader of new values, not {type(transforms).__name__}") from e
        self._inner = _lancer.add_columns_stream(self._inner.latest(), reader)

    def _add_columns_udf(self, func: Any, read_columns: Optional[List[str]], batch_size: Optional[int]) -> None:
        """New columns computed by ``func`` per batch (see ``add_columns``)."""
        if getattr(func, "cache", None) is not None:
            self._inner = _add_columns_checkpointed(self, func, read_columns, batch_size)._inner
            return
        latest = self._inner.latest()
        schema, call, step = _udf_parts(LanceDataset(latest, self._storage_options), func, read_columns, batch_size)
        self._inner = _lancer.add_columns_udf(latest, schema, call, read_columns, step)

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None,
              schema: Optional[pa.Schema] = None) -> None:
        """Adds the columns of ``data_obj`` (any input ``write_dataset`` takes) joined on
        its key ``right_on`` (default ``left_on``) = this dataset's ``left_on``: each row
        takes the values of the source row with the same key, nulls without one; a key
        twice in the source is an error. A new version."""
        reader = _reader(data_obj, schema)
        right_on = right_on or left_on
        names = reader.schema.names
        if right_on not in names:
            raise ValueError(f"the data to merge has no column {right_on!r}")
        if right_on != left_on:
            if left_on in names:
                raise ValueError(f"the data to merge has both {right_on!r} and {left_on!r}")
            reader = reader.read_all().rename_columns([left_on if n == right_on else n for n in names]).to_reader()
        table = reader.read_all()
        if table.num_rows == 0:
            # pylance refuses an empty source, with an OSError
            raise OSError("merge: the data to merge has no rows")
        self._inner = _lancer.merge_columns(self._inner.latest(), left_on, table.to_reader())

    def drop_columns(self, columns: List[str]) -> None:
        """Drops columns (names or ``struct.field`` paths); no data is rewritten."""
        self._inner = _lancer.drop_columns(self._inner.latest(), [str(c) for c in columns])

    def alter_columns(self, *alterations: Dict[str, Any]) -> None:
        """Renames (``name``), changes nullability (``nullable``) or casts
        (``data_type``, within the column's kind) of columns given by ``path``; every
        path is checked before anything changes."""
        alts = []
        for a in alterations:
            unknown = set(a) - {"path", "name", "nullable", "data_type"}
            if unknown or "path" not in a:
                raise ValueError(f"an alteration takes path, name, nullable, data_type; got {sorted(a)}")
            alts.append((a["path"], a.get("name"), a.get("nullable"), a.get("data_type")))
        self._inner = _lancer.alter_columns(self._inner.latest(), alts)

    def update(self, updates: Dict[str, str], where: Optional[str] = None, **kwargs: Any) -> Dict[str, int]:
        """``UPDATE … SET col = SQL … WHERE where``: ``{"num_rows_updated": n}``.
        (``conflict_retries`` / ``retry_timeout`` tune retries and are accepted.)"""
        unknown = set(kwargs) - {"conflict_retries", "retry_timeout"}
        if unknown:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
        where = _sql_filter(where, "update", self)
        inner, n = _lancer.update(self._inner.latest(), [(str(k), str(v)) for k, v in updates.items()], where)
        self._inner = inner
        return {"num_rows_updated": n}

    def merge_insert(self, on: Union[str, List[str]]) -> "MergeInsertBuilder":
        """A merge keyed on ``on`` (pylance's builder: ``when_matched_update_all``,
        ``when_not_matched_insert_all``, ``when_not_matched_by_source_delete``,
        ``execute(data)``)."""
        return MergeInsertBuilder(self, [on] if isinstance(on, str) else list(on))

    @property
    def optimize(self) -> "DatasetOptimizer":
        """Maintenance: ``compact_files``."""
        return DatasetOptimizer(self)

    @property
    def has_index(self) -> bool:
        """Whether the dataset has any index."""
        return bool(self._inner.list_segments())

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """Appends (or with ``mode="overwrite"`` replaces) rows."""
        ds = write_dataset(data, self.uri, mode=mode, storage_options=self._storage_options, **kwargs)
        self._inner = ds._inner

    # --- indexes --------------------------------------------------------------------
    def create_index(
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
        num_bits: Optional[int] = None,
        sample_rate: Optional[int] = None,
        max_iterations: Optional[int] = None,
        progress_callback: Optional[Any] = None,
        **kwargs: Any,
    ) -> "LanceDataset":
        """Builds an index in the reference's format (pylance uses it): IVF_FLAT,
        IVF_PQ, IVF_SQ, IVF_RQ, IVF_HNSW_FLAT, IVF_HNSW_SQ, IVF_HNSW_PQ (HNSW settings
        ``m``, ``ef_construction``, ``max_level``); or BTREE, BITMAP, LABEL_LIST, ZONEMAP,
        BLOOMFILTER, NGRAM, INVERTED. With ``fragment_ids`` (and ``index_uuid``), as
        pylance 14: one segment over those fragments is built and not committed (the
        dataset is returned; :meth:`create_index_uncommitted` returns the segment).
        ``index_file_version``: ``"V3"`` (the default, what lancer writes); ``"Legacy"``
        (the single-file IVF layout) is refused."""
        version = kwargs.pop("index_file_version", None)
        if version is not None:
            _index_file_version(version)
        fragment_ids = kwargs.pop("fragment_ids", None)
        if fragment_ids is not None:
            if progress_callback is not None:
                raise NotImplementedError("create_index(fragment_ids=..., progress_callback=...) is not "
                                          "supported by lancer yet")
            self.create_index_uncommitted(
                column, index_type, name, metric, replace, num_partitions, ivf_centroids, pq_codebook,
                num_sub_vectors, fragment_ids=fragment_ids, index_uuid=kwargs.pop("index_uuid", None),
                num_bits=num_bits, sample_rate=sample_rate, max_iterations=max_iterations, **kwargs)
            return self
        if ivf_centroids is not None or pq_codebook is not None:
            # a build with the given model: one segment over every fragment, committed
            if progress_callback is not None:
                raise NotImplementedError("create_index(ivf_centroids=..., progress_callback=...) is not "
                                          "supported by lancer yet")
            frags = [f.fragment_id for f in self.get_fragments()]
            if not frags:
                raise ValueError("ivf_centroids: the dataset has no rows to index")
            seg = self.create_index_uncommitted(
                column, index_type, name, metric, replace, num_partitions, ivf_centroids, pq_codebook,
                num_sub_vectors, fragment_ids=frags, num_bits=num_bits, sample_rate=sample_rate,
                max_iterations=max_iterations, **kwargs)
            self._inner = _lancer.commit_index_segments(
                self._inner, seg.name, column if isinstance(column, str) else column[0],
                [_segments._index_text(seg)], bool(replace))
            return self
        hnsw = _vector_arguments("create_index", kwargs,
                                 refused={"storage_options": None, "index_uuid": None})
        if isinstance(column, list):
            if len(column) != 1:
                raise NotImplementedError("indexes over several columns are not supported")
            column = column[0]
        _checks.index_target(self.schema, column, index_type, scalar=False)
        # the metric (default "L2", as pylance's) means something to vector indexes only
        vector = index_type.upper().startswith("IVF")
        self._inner = self._inner.latest().create_index(
            column, index_type, name, replace, metric if vector else None, num_partitions,
            num_sub_vectors, num_bits, sample_rate, max_iterations,
            progress=_progress._listener(progress_callback), **hnsw,
        )
        return self

    def create_scalar_index(self, column: str, index_type: Any, name: Optional[str] = None, *,
                            replace: bool = True, **kwargs: Any) -> None:
        """Builds a scalar (or INVERTED full-text) index on ``column``. Parameters in
        pylance's names: ``zone_size`` (BTREE), ``rows_per_zone`` (ZONEMAP),
        ``number_of_items`` / ``probability`` (BLOOMFILTER); for INVERTED the tokenizer
        settings (``base_tokenizer``, ``language``, ``with_position``, ``lower_case``,
        ``stem``, ``remove_stop_words``, ``custom_stop_words``, ``ascii_folding``,
        ``max_token_length``, ``min_ngram_length``, ``max_ngram_length``,
        ``prefix_only``, ...), invalid values refused. Anything else is a TypeError.
        ``index_type`` may be a :class:`lancer.indices.IndexConfig` (pylance's form), the
        way to index a path of a JSON column: ``IndexConfig("json", {"path": "x",
        "target_index_type": "btree" | "bitmap"})``; its values' type is inferred from
        the first non-null value, a value of another type is refused naming the row."""
        if isinstance(index_type, IndexConfig):
            # pylance's config form: its parameters are the kind's keyword arguments (a
            # JSON index's target_index_parameters: its target's, as JSON text)
            params = dict(index_type.parameters)
            target = params.pop("target_index_parameters", None)
            if target:
                params.update(json.loads(target) if isinstance(target, str) else dict(target))
            clash = sorted(set(params) & set(kwargs))
            if clash:
                raise TypeError(f"create_scalar_index got {', '.join(clash)} twice (config and keyword)")
            kwargs = {**kwargs, **params}
            index_type = index_type.index_type
        elif not isinstance(index_type, str):
            raise TypeError("index_type must be str or IndexConfig")
        fragment_ids = kwargs.pop("fragment_ids", None)
        index_uuid = kwargs.pop("index_uuid", None)
        if fragment_ids is not None:
            return self._stage_scalar_index(column, index_type, fragment_ids, index_uuid, kwargs)
        progress = _progress._listener(kwargs.pop("progress_callback", None))
        general = {k: kwargs.pop(k) for k in ("train", "index_uuid",
                                             "format_version", "document_granularity") if k in kwargs}
        if index_uuid is not None:
            general["index_uuid"] = index_uuid
        _check_arguments("create_scalar_index", general,
                         refused={"train": True, "index_uuid": None,
                                  "format_version": None, "document_granularity": "row"})
        _checks.index_target(self.schema, column, index_type, scalar=True)
        analyzer, scalar = _scalar_arguments(index_type.upper(), kwargs)
        self._inner = self._inner.latest().create_index(
            column, index_type, name, replace, analyzer_json=analyzer, progress=progress, **scalar)
        # (None, as pylance 14 returns)

    def list_indices(self) -> List[Dict[str, Any]]:
        """Every index segment, as pylance lists them: ``name``, ``type`` (``BTree``,
        ``Bitmap``, ``Inverted``, ``IVF_PQ``, ...), ``uuid``, ``fields`` (names),
        ``version`` (the dataset version it was built at), ``fragment_ids`` (a set;
        pylance's is its own ``Bitmap`` type) and ``base_id``. Deprecated in pylance 14
        (as here, with its warning): ``describe_indices``."""
        warnings.warn(
            "The 'list_indices' method is deprecated. It may be removed in a future version. "
            "Use describe_indices() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        out = []
        for d in self._inner.list_segments():
            d = dict(d)
            d["fragment_ids"] = set(d["fragment_ids"])
            out.append(d)
        return out

    def describe_indices(self) -> List["IndexDescription"]:
        """One :class:`IndexDescription` per index, by name (new objects each call; the
        engine's listing of this version is kept, a version's indexes never change)."""
        cached = getattr(self, "_described", None)
        if cached is None or cached[0] is not self._inner:
            cached = self._described = (self._inner, self._inner.describe_indices())
        return [_index_description(d) for d in cached[1]]

    def index_statistics(self, index_name: str) -> Dict[str, Any]:
        """Statistics of the index ``index_name`` as pylance reports them (a dict):
        ``index_type``, ``num_indices`` / ``num_segments``, per segment what its kind
        records (``indices`` / ``segments``), fragments and rows indexed (per segment:
        ``num_indexed_rows_per_delta``) and not, ``updated_at_timestamp_ms``. An unknown
        name is a ``KeyError``, as in pylance."""
        if not any(d["name"] == index_name for d in self._inner.list_segments()):
            raise KeyError(f'Index "{index_name}" not found')
        return json.loads(self._inner.index_statistics(index_name))

    @property
    def stats(self) -> "LanceStats":
        """``dataset_stats()``, ``index_stats(name)``, ``data_stats()``."""
        return LanceStats(self)

    def drop_index(self, name: str) -> None:
        self._inner = self._inner.latest().drop_index(name)

    def __repr__(self) -> str:
        return f"LanceDataset({self.uri!r}, version={self.version})"


def _index_file_version(version: Any) -> None:
    """``create_index(index_file_version=)``: pylance's ``IndexFileVersion`` names, any
    case. V3 is what lancer writes; Legacy is refused, an unknown name is pylance's
    ValueError."""
    name = str(getattr(version, "value", version))
    if name.upper() == "V3":
        return
    if name.upper() == "LEGACY":
        raise NotImplementedError("create_index(index_file_version='Legacy') is not supported by lancer: "
                                  "it writes the V3 index layout, which pylance 0.20 and later read")
    raise ValueError(f"Invalid index_file_version: Invalid index file version: {name}")
