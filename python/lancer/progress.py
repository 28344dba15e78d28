"""Progress of index builds, as pylance 14's ``lance.progress.IndexProgress``: pass
``progress_callback=`` to ``create_index`` / ``create_scalar_index`` and it is called
with one :class:`IndexProgress` per event — a stage starting, advancing, completing.
Stages: ``train_ivf`` (k-means iterations), ``train_quantizer``, ``shuffle`` (rows
assigned and encoded), ``merge_partitions`` (partitions written) for vector indexes;
``load_data`` for scalar ones; ``load_data``, ``tokenize_docs`` (rows),
``copy_partitions``, ``write_metadata`` for INVERTED ones. The callback runs on the
building thread (keep it quick); an exception it raises stops further events and is
raised when the build returns (the index is built and committed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional


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
