"""Commit conflicts and custom commit locks, as pylance 14's ``lance.commit``.

``CommitConflictError`` is the class lancer raises when another writer committed first
(``lancer.CommitConflictError``, an ``OSError``, made by the native module): the same
object here, so ``except lancer.commit.CommitConflictError`` catches lancer's conflicts.
As pylance's, it takes ``CommitConflictError(message="", retryable=True)`` and has
``retryable``. pylance sets ``retryable=False`` on a conflict with an incompatible
concurrent commit (a hand-built ``Delete`` committed after an ``Overwrite``) and True on a
preempted one (two deletes of one fragment); lancer's engine does not tell the two apart
(each says "re-read and retry"), so the conflicts it raises have ``retryable`` True,
pylance's default: code retrying a hand-built transaction on ``retryable`` should bound
its retries. This module gives the native class that constructor once, when lancer is
imported.

``CommitLock`` is the type of pylance's ``commit_lock=`` arguments (a function of the
version to commit returning a context manager); lancer refuses ``commit_lock=`` (its
commits are the stores' atomic conditional writes), the name is here for annotations.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from ._lancer import CommitConflictError

__all__ = ["CommitConflictError", "CommitLock"]

CommitLock = Callable[[int], AbstractContextManager[None]]


def _init(self: CommitConflictError, message: str = "", retryable: bool = True) -> None:
    """A commit conflicted with a concurrent transaction; ``retryable``: whether
    retrying on the newer version can succeed."""
    OSError.__init__(self, message)
    self.retryable = retryable


if "retryable" not in CommitConflictError.__dict__:
    CommitConflictError.__init__ = _init  # type: ignore[misc]
    CommitConflictError.retryable = True  # type: ignore[attr-defined]
