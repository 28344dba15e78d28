"""``lancer.Session``: what datasets opened through it share — the index and metadata
caches, request counters and warnings — as pylance 14's ``lance.Session`` is passed to
``dataset(session=)`` / ``write_dataset(session=)`` and returned by
``LanceDataset.session()``. A ``memory://`` dataset is an exception, as in pylance:
each open of one starts from an empty store."""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _lancer


class Session:
    """State shared by the datasets opened through it.

    ``index_cache_size_bytes`` / ``metadata_cache_size_bytes`` are accepted and tune
    nothing: lancer's caches are bounded by entries (128 index segments, 16 metadata
    entries; ``index_cache_entries`` / ``metadata_cache_entries`` set them). Custom
    cache backends are refused. ``size_bytes()`` / ``index_cache_size_bytes()`` are
    refused (lancer counts entries, not bytes): :meth:`cache_stats` gives entries,
    hits and misses."""

    def __init__(self, index_cache_size_bytes: Optional[int] = None,
                 metadata_cache_size_bytes: Optional[int] = None,
                 index_cache_backend: Any = None, metadata_cache_backend: Any = None,
                 store_registry: Any = None, *,
                 index_cache_entries: Optional[int] = None, metadata_cache_entries: Optional[int] = None):
        if index_cache_backend is not None or metadata_cache_backend is not None:
            raise NotImplementedError("custom cache backends (index_cache_backend / metadata_cache_backend) "
                                      "are not supported by lancer")
        if store_registry is not None:
            raise NotImplementedError("store_registry (pylance's object-store provider registry) is not "
                                      "supported by lancer: pass storage_options to dataset()")
        if index_cache_backend is not None and index_cache_size_bytes is not None:
            raise ValueError("index_cache_backend and index_cache_size_bytes exclude each other")
        for name, v in (("index_cache_entries", index_cache_entries), ("metadata_cache_entries", metadata_cache_entries)):
            if v is not None and int(v) < 1:
                raise ValueError(f"{name} must be at least 1")
        self._inner = _lancer.Session(index_cache_entries, metadata_cache_entries)

    @classmethod
    def _of(cls, native: Any) -> "Session":
        s = cls.__new__(cls)
        s._inner = native
        return s

    def is_same_as(self, other: "Session") -> bool:
        """Whether ``other`` shares this session's state."""
        if not isinstance(other, Session):
            raise TypeError(f"is_same_as takes a lancer.Session, not {type(other).__name__}")
        return bool(self._inner.is_same_as(other._inner))

    def cache_stats(self) -> Dict[str, Dict[str, int]]:
        """``{"index": {...}, "metadata": {...}}`` with ``entries``, ``hits``, ``misses``."""
        (ie, ih, im), (me, mh, mm) = self._inner.cache_stats()
        return {"index": {"entries": ie, "hits": ih, "misses": im},
                "metadata": {"entries": me, "hits": mh, "misses": mm}}

    def bytes_read_counter(self) -> int:
        """Bytes this session's stores read since it began (pylance's
        ``lance.bytes_read_counter()`` counts the whole process instead; on local disk
        lancer memory-maps data files, so only metadata reads count there)."""
        return int(self._inner.io_totals()[1])

    def iops_counter(self) -> int:
        """Read requests (gets, heads, lists) this session's stores made since it
        began (pylance's ``lance.iops_counter()`` counts the whole process instead)."""
        return int(self._inner.io_totals()[0])

    def size_bytes(self) -> int:
        raise NotImplementedError("lancer's caches count entries, not bytes: cache_stats() gives entries, "
                                  "hits and misses")

    def index_cache_size_bytes(self) -> int:
        raise NotImplementedError("lancer's caches count entries, not bytes: cache_stats() gives entries, "
                                  "hits and misses")

    def __repr__(self) -> str:
        s = self.cache_stats()
        return f"Session(index_cache_entries={s['index']['entries']}, metadata_cache_entries={s['metadata']['entries']})"


def _session_of(session: Any, name: str) -> Session:
    if isinstance(session, Session):
        return session
    if hasattr(session, "session") and callable(session.session):
        return session.session()
    raise TypeError(f"{name}() takes the lancer.Session (or a dataset opened in it) whose reads to count: lancer "
                    f"keeps no process-wide counters (pylance's lance.{name}() counts the whole process)")


def bytes_read_counter(session: Any = None) -> int:
    """Bytes read by ``session``'s stores (a :class:`Session` or a dataset, whose
    session is taken). pylance 14's takes no argument and counts the whole process;
    lancer keeps no process-wide state, so without one this is a ``TypeError``."""
    return _session_of(session, "bytes_read_counter").bytes_read_counter()


def iops_counter(session: Any = None) -> int:
    """Read requests made by ``session``'s stores (a :class:`Session` or a dataset).
    pylance 14's takes no argument and counts the whole process; without one this is
    a ``TypeError``."""
    return _session_of(session, "iops_counter").iops_counter()
