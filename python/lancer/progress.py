"""Progress of writes and index builds, as pylance 14's ``lance.progress``.

Writes: ``write_dataset(progress=)`` takes a :class:`FragmentWriteProgress`; its
``begin(fragment)`` is called as each new fragment's data file is started (no files
yet, id 0) and ``complete(fragment)`` once it is written (its data file and rows; ids
are given at the commit). :class:`FileSystemFragmentWriteProgress` records each
fragment begun in a directory, as pylance's does. Unlike pylance 14, which calls
``complete`` only for the files its row cap closed (a write's last, partly filled file
never), lancer calls it for every fragment.

Index builds, as pylance 14's ``lance.progress.IndexProgress``: pass
``progress_callback=`` to ``create_index`` / ``create_scalar_index`` and it is called
with one :class:`IndexProgress` per event — a stage starting, advancing, completing.
Stages: ``train_ivf`` (k-means iterations), ``train_quantizer``, ``shuffle`` (rows
assigned and encoded), ``merge_partitions`` (partitions written) for vector indexes;
``load_data`` for scalar ones; ``load_data``, ``tokenize_docs`` (rows),
``copy_partitions``, ``write_metadata`` for INVERTED ones. The callback runs on the
building thread (keep it quick); an exception it raises stops further events and is
raised when the build returns (the index is built and committed)."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Literal, Optional

if TYPE_CHECKING:
    from .fragment import FragmentMetadata


@dataclass(frozen=True)
class IndexProgress:
    """One event of an index build."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: Optional[int] = None
    total: Optional[int] = None
    unit: str = ""

    @property
    def fraction(self) -> Optional[float]:
        """``completed / total`` (at most 1), or None when the total is unknown or 0."""
        if self.completed is None or self.total in (None, 0):
            return None
        return min(self.completed / self.total, 1.0)


def _listener(callback: Optional[Callable[[IndexProgress], Any]]) -> Optional[Callable[..., None]]:
    """What the engine calls: ``(event, stage, completed, total, unit)`` to an
    :class:`IndexProgress` for ``callback``."""
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(f"progress_callback must be callable, not {type(callback).__name__}")

    def call(event: str, stage: str, completed: int, total: Optional[int], unit: str) -> None:
        callback(IndexProgress(event, stage, completed, total, unit))  # type: ignore[arg-type]

    return call


class FragmentWriteProgress(ABC):
    """Told of each fragment a write begins and completes (``write_dataset(progress=)``).
    Subclass it and define :meth:`begin` and :meth:`complete`."""

    def _do_begin(self, fragment_json: str, **kwargs: Any) -> None:
        from .fragment import FragmentMetadata

        return self.begin(FragmentMetadata.from_json(fragment_json), **kwargs)

    def _do_complete(self, fragment_json: str, **kwargs: Any) -> None:
        from .fragment import FragmentMetadata

        return self.complete(FragmentMetadata.from_json(fragment_json), **kwargs)

    @abstractmethod
    def begin(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        """A new fragment is about to be written (no data files, id not assigned)."""

    @abstractmethod
    def complete(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        """The fragment's data file is written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """Tells nobody (the default)."""

    def begin(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        pass

    def complete(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records the fragments a write has begun under ``base_uri`` (a local path or a
    URI pyarrow's file systems open), as pylance's: on ``begin``,
    ``fragment_<id>.in_progress`` (``{"fragment_id", "metadata"}``) and
    ``fragment_<id>.json`` (the fragment's description); on ``complete`` the
    ``.in_progress`` file goes. ``metadata`` tells workers apart."""

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: str, metadata: Optional[Dict[str, str]] = None):
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(base_uri)
        self._metadata = dict(metadata) if metadata else {}

    def _in_progress_path(self, fragment: "FragmentMetadata") -> str:
        return os.path.join(self._base_path, f"fragment_{fragment.id}{self.PROGRESS_EXT}")

    def _fragment_file(self, fragment: "FragmentMetadata") -> str:
        return os.path.join(self._base_path, f"fragment_{fragment.id}.json")

    def begin(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        self._fs.create_dir(self._base_path, recursive=True)
        with self._fs.open_output_stream(self._in_progress_path(fragment)) as out:
            out.write(json.dumps({"fragment_id": fragment.id, "metadata": self._metadata}).encode())
        with self._fs.open_output_stream(self._fragment_file(fragment)) as out:
            out.write(json.dumps(fragment.to_json()).encode())

    def complete(self, fragment: "FragmentMetadata", **kwargs: Any) -> None:
        self._fs.delete_file(self._in_progress_path(fragment))


def _fragment_listener(progress: Optional[FragmentWriteProgress]) -> Optional[Callable[[str, str], None]]:
    """What the engine calls for a write: ``(event, fragment JSON)``, event ``begin``
    or ``complete``."""
    if progress is None:
        return None
    if not (callable(getattr(progress, "_do_begin", None)) and callable(getattr(progress, "_do_complete", None))):
        raise TypeError(f"progress must be a lancer.progress.FragmentWriteProgress, not {type(progress).__name__}")

    def call(event: str, fragment_json: str) -> None:
        if event == "begin":
            # a fragment not yet written has no row count (pylance's None)
            fragment = json.loads(fragment_json)
            fragment["physical_rows"] = None
            progress._do_begin(json.dumps(fragment))
        else:
            progress._do_complete(fragment_json)

    return call
