"""The helpers pylance 14 keeps in its native module ``lance.lance`` that users call by
that name: ``manifest_needs_migration``, ``language_model_home``, ``stable_version``
and the I/O counters (lancer's count per session: pass the session or a dataset opened
in it). ``import lancer as lance`` then ``lance.lance.…`` works."""

from __future__ import annotations

from typing import Any

from . import _lancer
from ._session import bytes_read_counter, iops_counter

__all__ = ["manifest_needs_migration", "language_model_home", "bytes_read_counter",
           "iops_counter", "stable_version"]


def manifest_needs_migration(dataset: Any) -> bool:
    """Whether the dataset's latest manifest lacks what a write fills in (the writer
    version, fragments' row counts, deletion files' counts, trusted index fragment
    bitmaps), as pylance's; a ``delete`` that matches nothing migrates it."""
    native = getattr(dataset, "_inner", None)
    if not isinstance(native, _lancer.Dataset):
        raise TypeError(f"manifest_needs_migration takes a dataset, not {type(dataset).__name__}")
    return _lancer.manifest_needs_migration(native)


def language_model_home() -> str:
    """The folder the ``jieba/<model>`` tokenizers read their models from:
    ``LANCE_LANGUAGE_MODEL_HOME``, else pylance's default under the user's local data
    folder (what a dataset opened now uses)."""
    home = _lancer.language_model_home()
    if home is None:
        raise RuntimeError("no language model home: set LANCE_LANGUAGE_MODEL_HOME")
    return home


def stable_version() -> str:
    """The data storage version "stable" names (what new datasets are written with by
    default), as pylance 14's."""
    from .dataset import STABLE_STORAGE_VERSION

    return STABLE_STORAGE_VERSION
