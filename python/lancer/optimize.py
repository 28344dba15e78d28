"""``ds.optimize``: compaction and index optimization, as pylance 14's ``lance.optimize``
(``CompactionOptions``: the keys ``compact_files`` and ``Compaction`` take)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Literal, Optional, TypedDict

from . import _lancer
from ._util import _auto_cleanup
from .fragment import FragmentMetadata

if TYPE_CHECKING:
    from .dataset import LanceDataset


class CompactionOptions(TypedDict, total=False):
    """Compaction options (every key optional), pylance 14's keys. Lancer honours
    ``target_rows_per_fragment`` (1024 * 1024), ``max_bytes_per_file``,
    ``materialize_deletions`` (True), ``materialize_deletions_threshold`` (0.1) and
    ``compaction_mode`` ``"reencode"`` (the default; ``"try_binary_copy"`` re-encodes,
    the fallback pylance takes for fragments it cannot copy); ``max_rows_per_group``,
    ``num_threads``, ``batch_size``, ``io_buffer_size`` and
    ``binary_copy_read_batch_bytes`` tune the work and are accepted; the others raise
    ``NotImplementedError`` when set."""

    target_rows_per_fragment: Optional[int]
    max_rows_per_group: Optional[int]
    max_bytes_per_file: Optional[int]
    materialize_deletions: Optional[bool]
    materialize_deletions_threshold: Optional[float]
    num_threads: Optional[int]
    batch_size: Optional[int]
    io_buffer_size: Optional[int]
    compaction_mode: Optional[Literal["reencode", "try_binary_copy", "force_binary_copy"]]
    binary_copy_read_batch_bytes: Optional[int]
    defer_index_remap: Optional[bool]
    max_source_fragments: Optional[int]
    max_source_rows: Optional[int]
    max_source_bytes: Optional[int]
    excluded_fragment_ids: Optional[list[int]]
    data_storage_version: Optional[str]


@dataclass
class CompactionMetrics:
    """What ``compact_files`` did (pylance's names)."""

    fragments_removed: int
    fragments_added: int
    files_removed: int
    files_added: int


class DatasetOptimizer:
    """``ds.optimize``: compaction and index optimization."""

    def __init__(self, ds: LanceDataset):
        self._ds = ds

    def compact_files(self, *, target_rows_per_fragment: Optional[int] = None,
                      max_rows_per_group: Optional[int] = None,
                      max_bytes_per_file: Optional[int] = None,
                      materialize_deletions: Optional[bool] = None,
                      materialize_deletions_threshold: Optional[float] = None,
                      defer_index_remap: Optional[bool] = None,
                      num_threads: Optional[int] = None,
                      batch_size: Optional[int] = None,
                      compaction_mode: Optional[str] = None,
                      binary_copy_read_batch_bytes: Optional[int] = None,
                      max_source_fragments: Optional[int] = None,
                      max_source_rows: Optional[int] = None,
                      max_source_bytes: Optional[int] = None,
                      excluded_fragment_ids: Optional[List[int]] = None,
                      data_storage_version: Optional[str] = None) -> CompactionMetrics:
        """Merges small fragments and rewrites those with many deleted rows, as
        pylance plans it; the options are :class:`CompactionOptions`' (which of them
        lancer honours, accepts or refuses is said there; None: the default), less
        ``io_buffer_size``, which pylance's ``compact_files`` does not take either (a
        TypeError; ``Compaction.plan`` takes it)."""
        given = dict(target_rows_per_fragment=target_rows_per_fragment,
                     max_rows_per_group=max_rows_per_group, max_bytes_per_file=max_bytes_per_file,
                     materialize_deletions=materialize_deletions,
                     materialize_deletions_threshold=materialize_deletions_threshold,
                     defer_index_remap=defer_index_remap, num_threads=num_threads, batch_size=batch_size,
                     compaction_mode=compaction_mode, binary_copy_read_batch_bytes=binary_copy_read_batch_bytes,
                     max_source_fragments=max_source_fragments, max_source_rows=max_source_rows,
                     max_source_bytes=max_source_bytes, excluded_fragment_ids=excluded_fragment_ids,
                     data_storage_version=data_storage_version)
        o = _options(given)
        inner, m = _lancer.compact_files(
            self._ds._inner.latest(), int(o.get("target_rows_per_fragment", 1024 * 1024)),
            o.get("materialize_deletions", True), float(o.get("materialize_deletions_threshold", 0.1)),
            o.get("max_bytes_per_file"))
        self._ds._inner = inner
        return CompactionMetrics(*m)

    def optimize_indices(self, *, num_indices_to_merge: Optional[int] = None,
                         index_names: Optional[List[str]] = None, retrain: bool = False,
                         **kwargs: Any) -> None:
        """Adds the rows appended since each index was built to it, as pylance 14
        does: the new rows and the index's ``num_indices_to_merge`` latest segments
        become one segment (0: a new delta segment; by default a vector index merges
        all its segments, other kinds their latest one), keeping vector indexes'
        centroids and quantizer; ``retrain=True`` rebuilds vector indexes over every
        row. ``index_names`` limits it to those indexes."""
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")
        merge = None if num_indices_to_merge is None else int(num_indices_to_merge)
        if merge is not None and merge < 0:
            raise ValueError(f"num_indices_to_merge must be >= 0, not {num_indices_to_merge}")
        if index_names is not None:
            index_names = [index_names] if isinstance(index_names, str) else list(index_names)
            known = {d["name"] for d in self._ds._inner.list_segments()}
            missing = [n for n in index_names if n not in known]
            if missing:
                raise ValueError(f"Index not found: {', '.join(missing)}")
        self._ds._inner = _lancer.optimize_indices(
            self._ds._inner.latest(), index_names, merge, bool(retrain))

    def enable_auto_cleanup(self, auto_cleanup_config: Any, **kwargs: Any) -> None:
        """Turns on automatic cleanup (pylance's ``AutoCleanupConfig``: every
        ``interval`` versions, versions older than ``older_than_seconds`` go): one
        commit setting ``lance.auto_cleanup.interval`` / ``lance.auto_cleanup.older_than``."""
        interval, older = _auto_cleanup(auto_cleanup_config)
        self._ds.update_config({"lance.auto_cleanup.interval": str(interval),
                                "lance.auto_cleanup.older_than": f"{older}s"})

    def disable_auto_cleanup(self, **kwargs: Any) -> None:
        """Turns automatic cleanup off (removes its config keys; one commit)."""
        self._ds.delete_config_keys(["lance.auto_cleanup.interval", "lance.auto_cleanup.older_than"])


# --- distributed compaction (pylance 14's ``lance.optimize.Compaction``) ---------------

# CompactionOptions keys: those honoured, those that only tune the work (accepted), and
# those that change what is written (refused when set)
_HONOURED = {"target_rows_per_fragment", "max_bytes_per_file", "materialize_deletions",
             "materialize_deletions_threshold"}
_TUNING = {"max_rows_per_group", "num_threads", "batch_size", "io_buffer_size", "binary_copy_read_batch_bytes"}
_REFUSED = {"defer_index_remap", "enable_binary_copy", "enable_binary_copy_force",
            "max_source_fragments", "max_source_rows",
            "max_source_bytes", "excluded_fragment_ids", "compaction_mode", "index_remap_mode",
            "max_overlays_per_fragment", "data_storage_version"}
# compaction_mode values lancer honours: it re-encodes, which "try_binary_copy" falls
# back to where it cannot copy
_MODES = {"reencode", "try_binary_copy"}


def _options(options: Optional[dict]) -> dict:
    """The honoured compaction options of pylance's ``CompactionOptions`` dict; set
    refused ones and unknown keys raise, naming them."""
    options = dict(options or {})
    unknown = set(options) - _HONOURED - _TUNING - _REFUSED
    if unknown:
        raise ValueError(f"unknown compaction options: {', '.join(sorted(unknown))}")
    if options.get("compaction_mode") is not None and options["compaction_mode"] not in _MODES | {"force_binary_copy"}:
        raise ValueError(f'Invalid compaction mode "{options["compaction_mode"]}". '
                         'Valid values: "reencode", "try_binary_copy", "force_binary_copy"')
    if options.get("compaction_mode") in _MODES:
        del options["compaction_mode"]
    refused = sorted(k for k in _REFUSED & set(options) if options[k] not in (None, False, [], ()))
    if refused:
        raise NotImplementedError(f"compaction options not supported by lancer: {', '.join(refused)}")
    out = {k: options[k] for k in _HONOURED if options.get(k) is not None}
    if "materialize_deletions" in out:
        out["materialize_deletions"] = bool(out["materialize_deletions"])
    return out


def _fragments(items: List[dict]) -> list:
    return [FragmentMetadata._from_dict(f) for f in items]


class _JsonText:
    """A value kept as pylance's JSON text (the distributed-compaction types): pickles as
    that text; ``json()`` / ``from_json`` give and take it."""

    def __init__(self, text: str):
        self._text = text
        self._d = json.loads(text)

    def __getstate__(self) -> str:
        return self._text

    def __setstate__(self, state: str) -> None:
        self.__init__(state)

    @property
    def read_version(self) -> int:
        return int(self._d["read_version"])

    def json(self) -> str:
        return self._text

    @classmethod
    def from_json(cls, json: str):  # noqa: A002 (pylance's parameter name)
        """From ``json()``'s text (pylance's too)."""
        return cls(json)


class RewriteResult(_JsonText):
    """A compaction task's outcome (pylance's ``RewriteResult``): new data files written,
    nothing committed. Pickles; ``json()`` / ``from_json`` give pylance's text."""

    @property
    def metrics(self) -> CompactionMetrics:
        m = self._d["metrics"]
        return CompactionMetrics(m["fragments_removed"], m["fragments_added"], m["files_removed"],
                                 m["files_added"])

    @property
    def original_fragments(self) -> list:
        """The fragments rewritten (``FragmentMetadata``), as committed."""
        return _fragments(self._d["original_fragments"])

    @property
    def new_fragments(self) -> list:
        """The fragments written in their place (``FragmentMetadata``, id 0)."""
        return _fragments(self._d["new_fragments"])

    def __repr__(self) -> str:
        return (f"RewriteResult(read_version={self.read_version}, original_fragments="
                f"{[f['id'] for f in self._d['original_fragments']]}, metrics={self.metrics})")


class CompactionTask(_JsonText):
    """One independent piece of a compaction plan (pylance's ``CompactionTask``): run
    it anywhere with ``execute(dataset)``; pickles; ``json()`` / ``from_json``."""

    @property
    def fragments(self) -> list:
        """The fragments to rewrite (``FragmentMetadata``), as committed."""
        return _fragments(self._d["task"]["fragments"])

    def execute(self, dataset: LanceDataset) -> RewriteResult:
        """Writes the task's live rows as new data files of ``dataset`` (any handle of
        it; the task reads its own version); commits nothing."""
        return RewriteResult(_lancer.compaction_task_execute(dataset._inner, self._text))

    def __repr__(self) -> str:
        return (f"CompactionTask(read_version={self.read_version}, fragments="
                f"{[f['id'] for f in self._d['task']['fragments']]})")


class CompactionPlan(_JsonText):
    """A compaction's independent tasks (pylance's ``CompactionPlan``)."""

    @property
    def tasks(self) -> List[CompactionTask]:
        rv, opts = self._d["read_version"], self._d.get("options")
        return [CompactionTask(json.dumps({"task": t, "read_version": rv, "options": opts}))
                for t in self._d["tasks"]]

    def num_tasks(self) -> int:
        return len(self._d["tasks"])

    def __repr__(self) -> str:
        return f"CompactionPlan(read_version={self.read_version}, num_tasks={self.num_tasks()})"


class Compaction:
    """Distributed compaction, as pylance 14's ``lance.optimize.Compaction``:
    ``plan`` on a driver, each task's ``execute`` anywhere, one ``commit``."""

    @staticmethod
    def execute(dataset: LanceDataset, options: Optional[dict] = None) -> CompactionMetrics:
        """Plans, runs and commits a compaction in this process (``compact_files``)."""
        return dataset.optimize.compact_files(**_options(options))

    @staticmethod
    def plan(dataset: LanceDataset, options: Optional[dict] = None) -> CompactionPlan:
        """The tasks the local compaction would run on ``dataset``'s version (the same
        fragment groups)."""
        o = _options(options)
        return CompactionPlan(_lancer.compaction_plan(
            dataset._inner, o.get("target_rows_per_fragment"), o.get("materialize_deletions", True),
            o.get("materialize_deletions_threshold"), o.get("max_bytes_per_file")))

    @staticmethod
    def commit(dataset: LanceDataset, rewrites: List[RewriteResult],
               options: Optional[dict] = None) -> CompactionMetrics:
        """Commits the results (of one plan) as one Rewrite: results left out leave their
        fragments untouched; an append committed since the plan is rebased over; a
        delete or rewrite of a planned fragment committed since is a conflict."""
        _options(options)
        texts = []
        for r in rewrites:
            if not isinstance(r, RewriteResult):
                raise TypeError(f"rewrites must be RewriteResult objects, not {type(r).__name__}")
            texts.append(r._text)
        inner, m = _lancer.compaction_commit(dataset._inner.latest(), texts)
        dataset._inner = inner
        return CompactionMetrics(*m)
