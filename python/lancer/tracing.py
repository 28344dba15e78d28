"""Tracing: ``lancer.tracing`` stands in for pylance's ``lance.tracing``
(:func:`trace_to_chrome`, :func:`capture_trace_events`).

Not available in Lancer: pylance exports the spans of its Rust ``tracing``
instrumentation (a Chrome trace file, or events handed to a callback); Lancer's engine
has no such instrumentation to export, so both functions raise
``NotImplementedError`` rather than accept the call and record nothing. Lancer's own
measurements are ``LanceDataset.scanner(...).analyze_plan()``, ``lancer.iops_counter`` /
``bytes_read_counter`` and ``LanceDataset.stats``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["trace_to_chrome", "capture_trace_events", "TraceEvent"]


class TraceEvent:
    """pylance's trace event (``target``, ``args``); not made by users (a ``TypeError``,
    as pylance's). Lancer produces none (see the module docstring)."""

    target: str
    args: dict

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("cannot create 'builtins.TraceEvent' instances")


def trace_to_chrome(*, file: Optional[str] = None):
    """pylance writes its trace spans to a Chrome trace file; Lancer has none to write:
    ``NotImplementedError``."""
    raise NotImplementedError(
        "lancer.tracing.trace_to_chrome: Lancer's engine has no tracing instrumentation to export"
    )


def capture_trace_events(callback: Callable[[TraceEvent], None]):
    """pylance hands its trace events to ``callback``; Lancer has none:
    ``NotImplementedError``."""
    raise NotImplementedError(
        "lancer.tracing.capture_trace_events: Lancer's engine has no tracing instrumentation to export"
    )
