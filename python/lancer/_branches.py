"""Branches, as pylance 14's ``LanceDataset`` offers them: ``create_branch``,
``branches`` (``list``, ``list_ordered``, ``delete``, ``replace_metadata``),
``checkout_version`` with a ``(branch, version)`` tuple or a tag, and ``version_refs``.

A branch is an independent version history of the dataset, stored under
``<root>/tree/<name>/`` with its description in ``<root>/_refs/branches/`` (spec:
"Branch and Tag Specification"); its first version is a shallow clone of the version
it starts from. The dataset ``create_branch`` returns (and ``lancer.dataset`` of
``<root>/tree/<name>``) reads and writes the branch; the main branch is untouched.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple, TypedDict

from . import _lancer
from ._util import _open, _options


class Branch(TypedDict):
    """A branch's description (pylance's ``lance.dataset.Branch``)."""

    parent_branch: Optional[str]
    branch_identifier: List[Tuple[int, str]]
    parent_version: int
    create_at: int
    manifest_size: int
    metadata: Dict[str, str]


class VersionRef(TypedDict):
    """A version of the current branch (pylance's ``lance.dataset.VersionRef``)."""

    version: int


def _branch(row: Any) -> Tuple[str, Branch]:
    name, parent, identifier, parent_version, create_at, manifest_size, metadata = row
    return name, {
        "parent_branch": parent,
        "branch_identifier": [(int(v), str(i)) for v, i in identifier],
        "parent_version": parent_version,
        "create_at": create_at,
        "manifest_size": manifest_size,
        "metadata": dict(metadata),
    }


def _reference(ref: Any, call: str) -> Dict[str, Any]:
    """A pylance reference (``int``: a version of this branch; ``str``: a tag;
    ``(branch, version)``: a version of a branch, ``None`` for main or the latest) as
    the native functions take it."""
    if isinstance(ref, int):
        if ref < 0:
            raise ValueError(f"{call}: version {ref} is negative")
        return {"kind": "current", "version": ref}
    if isinstance(ref, str):
        return {"kind": "tag", "tag": ref}
    if isinstance(ref, tuple):
        if len(ref) != 2:
            raise ValueError(f"{call}: a (branch, version) tuple has two items, not {len(ref)}")
        branch, version = ref
        if branch is not None and not isinstance(branch, str):
            raise TypeError(f"{call}: the tuple's branch is a str or None, not {type(branch).__name__}")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise TypeError(f"{call}: the tuple's version is an int or None, not {type(version).__name__}")
        if version is not None and version < 0:
            raise ValueError(f"{call}: version {version} is negative")
        return {"kind": "branch", "branch": branch, "version": version}
    raise ValueError(f"{call}: a reference is an int, a str or a (branch, version) tuple, not {type(ref).__name__}")


class Branches:
    """A dataset's branches (pylance's ``ds.branches``): ``list``, ``list_ordered``,
    ``delete``, ``replace_metadata``."""

    def __init__(self, dataset: Any):
        self._ds = dataset

    def list(self) -> Dict[str, Branch]:
        """Branches by name."""
        return dict(_branch(r) for r in _lancer.branch_list(self._ds._inner))

    def list_ordered(self, order: Optional[str] = None) -> List[Tuple[str, Branch]]:
        """``(name, branch)`` pairs by the version they start from (newest first, or
        oldest first with ``order="asc"``), then by name."""
        order = "desc" if order is None else order
        if order not in ("asc", "desc"):
            raise ValueError(f"Invalid sort order '{order}'. Valid values are: asc, desc")
        rows = sorted(self.list().items(), key=lambda b: b[0])
        return sorted(rows, key=lambda b: b[1]["parent_version"], reverse=order == "desc")

    def delete(self, branch: str) -> None:
        """Deletes ``branch`` and its files under ``tree/`` (refused while branches
        created from it remain)."""
        _lancer.branch_delete(self._ds._inner, branch)

    def replace_metadata(self, branch: str, metadata: Dict[str, str]) -> None:
        """Replaces ``branch``'s metadata map."""
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise TypeError("replace_metadata takes a dict of str to str")
        _lancer.branch_replace_metadata(self._ds._inner, branch, metadata)


class _BranchesMixin:
    """``LanceDataset``'s branch calls (its ``_inner`` is the native dataset)."""

    _inner: Any
    _storage_options: Optional[Dict[str, str]]

    @property
    def branches(self) -> Branches:
        """The dataset's branches."""
        return Branches(self)

    def create_branch(
        self,
        branch: str,
        reference: Any = None,
        storage_options: Optional[Dict[str, str]] = None,
    ) -> Any:
        """Creates ``branch`` from ``reference`` (``None``: this version of this
        branch; an ``int``: a version of this branch; a ``str``: a tag; ``(branch,
        version)``: a version of a branch, ``None`` meaning main or the latest) and
        returns it, opened at ``<root>/tree/<branch>``. ``storage_options`` other than
        the dataset's are refused."""
        if storage_options is not None and storage_options != (self._storage_options or {}):
            raise NotImplementedError(
                "create_branch(storage_options=) other than the dataset's is not supported by lancer: "
                "the branch opens with the dataset's storage options"
            )
        args = {} if reference is None else _reference(reference, "create_branch")
        inner = _lancer.branch_create(self._inner, branch, **args)
        return type(self)(inner, self._storage_options)

    def shallow_clone(self, target_path: Any, reference: Any, storage_options: Optional[Dict[str, str]] = None,
                      **kwargs: Any) -> Any:
        """A new dataset at ``target_path`` whose first version is ``reference``'s
        (``int``: a version of this branch; ``str``: a tag; ``(branch, version)``:
        ``None`` meaning main or the latest), sharing this dataset's data, deletion and
        index files (the source registered as a base path, as pylance 14 clones);
        nothing is copied. The clone keeps the source's version number; writes to it
        go to ``target_path``. ``storage_options``: the clone's (None: this
        dataset's); ``kwargs`` open the clone. A location holding a dataset is
        refused (``OSError``)."""
        target = os.fspath(target_path)
        if storage_options is None:
            storage_options = self._storage_options
        _lancer.shallow_clone(self._inner, target, _options(storage_options),
                              **_reference(reference, "shallow_clone"))
        return type(self)(_open(target, storage_options=storage_options, **kwargs), storage_options)

    def _checkout_reference(self, reference: Any) -> Any:
        """``checkout_version`` of a tag or a ``(branch, version)`` tuple."""
        inner = _lancer.branch_checkout(self._inner, **_reference(reference, "checkout_version"))
        return type(self)(inner, self._storage_options)

    def version_refs(self) -> List[VersionRef]:
        """The versions of this dataset's branch, oldest first, as ``{"version": n}``
        (no manifest read)."""
        return [{"version": v} for v in _lancer.version_numbers(self._inner)]
