"""``LanceDataset.explain_cleanup_old_versions``: what ``cleanup_old_versions`` would
remove with the same limits, nothing removed — pylance 14's ``CleanupExplanation``
with the statistics, the candidate files (path, kind, whether a removed version
names it, size) and the versions branches were created from; and what
``cleanup_old_versions`` removed (``CleanupStats``)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, List, Optional
from urllib.parse import urlparse

from . import _lancer
from ._util import _options


@dataclass
class CleanupStats:
    """What ``cleanup_old_versions`` removed."""

    bytes_removed: int
    old_versions: int
    data_files_removed: int
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    deletion_files_removed: int = 0
    failed_deletes: int = 0


@dataclass
class CleanupCandidateFile:
    """A file cleanup would remove: its object-store path, ``kind`` (``manifest``,
    ``data``, ``deletion``, ``transaction``, ``index``), ``unverified`` (no removed
    version names it), ``size_bytes``."""

    path: str
    kind: str
    unverified: bool
    size_bytes: int


@dataclass
class CleanupReferencedBranch:
    """A branch created from a version of this dataset: the version stays for it
    (``cleanup_candidate`` is False, as pylance reports it)."""

    name: str
    referenced_version: int
    cleanup_candidate: bool


@dataclass
class CleanupExplanation:
    """What a cleanup would do (pylance's fields)."""

    read_version: int
    stats: Any
    candidate_files: List[CleanupCandidateFile]
    candidate_files_truncated: bool
    candidate_file_limit: int
    referenced_branches: List[CleanupReferencedBranch] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


def _object_path(uri: str, rel: str) -> str:
    """``rel`` as the object store names it: the path below the bucket (no leading
    slash) for object stores, the absolute path without its leading slash locally."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        import os

        base = os.path.abspath(parsed.path if parsed.scheme == "file" else uri)
        return f"{base.lstrip('/')}/{rel}"
    prefix = parsed.path.strip("/")
    return f"{prefix}/{rel}" if prefix else rel


def explain(ds: Any, older_than: Optional[_dt.timedelta], retain_versions: Optional[int], *,
            delete_unverified: bool, error_if_tagged_old_versions: bool, versions: Any,
            include_files: bool, max_files: int) -> CleanupExplanation:
    if versions is not None:
        raise NotImplementedError("explain_cleanup_old_versions(versions=...) is not supported by lancer")
    if retain_versions is not None and retain_versions < 1:
        raise ValueError("retain_versions must be at least 1")
    if max_files < 0:
        raise ValueError("max_files must be at least 0")
    if older_than is None and retain_versions is None:
        older_than = _dt.timedelta(days=14)
    age = None if older_than is None else older_than.total_seconds()
    stats, files, branches = _lancer.explain_cleanup(
        ds.uri, age, retain_versions, _options(ds._storage_options), bool(delete_unverified),
        bool(error_if_tagged_old_versions))
    nbytes, versions_removed, data, transactions, indexes, deletions = stats
    candidates = [CleanupCandidateFile(_object_path(ds.uri, p), kind, unverified, size)
                  for p, kind, unverified, size in files] if include_files else []
    truncated = len(candidates) > max_files
    return CleanupExplanation(
        read_version=ds.latest_version,
        stats=CleanupStats(bytes_removed=nbytes, old_versions=versions_removed, data_files_removed=data,
                           transaction_files_removed=transactions, index_files_removed=indexes,
                           deletion_files_removed=deletions),
        candidate_files=candidates[:max_files],
        candidate_files_truncated=truncated,
        candidate_file_limit=max_files,
        referenced_branches=[CleanupReferencedBranch(n, v, c) for n, v, c in branches],
        warnings=[f"candidate_files truncated to {max_files} entries"] if truncated else [],
    )
