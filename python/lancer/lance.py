"""The helpers pylance 14 keeps in its native module ``lance.lance`` that users call by
that name: ``manifest_needs_migration``, ``language_model_home``, ``stable_version``
and the I/O counters (lancer's count per session: pass the session or a dataset opened
in it). ``import lancer as lance`` then ``lance.lance.…`` works."""

from __future__ import annotations

import os
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
    folder."""
    home = os.environ.get("LANCE_LANGUAGE_MODEL_HOME")
    if home is not None:
        return home
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "")
    elif os.uname().sysname == "Darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Application Support")
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "lance", "language_models")


def stable_version() -> str:
    """The data storage version "stable" names (what new datasets are written with by
    default), as pylance 14's."""
    from .dataset import STABLE_STORAGE_VERSION

    return STABLE_STORAGE_VERSION
