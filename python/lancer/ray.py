"""Lancer on Ray: read a dataset into a Ray Dataset, write a Ray Dataset as one commit.

The reference's distributed write (spec: "Distributed Write", the two phases:
"Parallel Writes" of fragments on workers with ``write_fragments``, then one "Commit"
of every ``FragmentMetadata`` in a single ``LanceOperation``), run on Ray Data:

- :func:`read_lancer` plans one read task per group of fragments of one version,
  pinned when it is called; each task scans its fragments with lancer's scanner, the
  projection and the SQL filter pushed down into it.
- :func:`write_lancer` has Ray's write tasks write each block's fragments uncommitted
  (``lancer.fragment.write_fragments``) and return their descriptions (pylance's
  ``FragmentMetadata`` JSON); the driver commits them once
  (``LanceOperation.Append`` / ``Overwrite`` through ``LanceDataset.commit`` with the
  version read when the write started). Until that commit nothing is visible: a task
  that failed and was retried leaves at most files of its failed attempt no commit names, a driver
  that dies before the commit leaves the dataset as it was (``cleanup_old_versions``
  removes such files once older than its limit for unverified files).

- :func:`create_index` trains a vector index's model once on the driver, has one Ray
  task per group of fragments build a segment with it (``create_index_uncommitted``),
  merges BTREE / BITMAP segments into one (the bytes of a single build) and commits
  once (``commit_existing_index_segments``).
- :func:`compact` plans a compaction on the driver, runs each task as a Ray task and
  commits the rewrites once (a failed task leaves its fragments as they were).

- :func:`add_columns` runs a function over each fragment's batches in Ray tasks
  (``LanceFragment.merge_columns``: a new data file per fragment, nothing committed) and
  commits one ``Merge`` of every fragment with the new schema.

Ray is imported when these functions are called, never by ``import lancer``.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, Iterable, List, Optional

import pyarrow as pa

from ._commit import LanceOperation
from ._evolve import BatchUDF, _udf_parts
from ._util import DatasetNotFoundError, _uri
from .dataset import LanceDataset
from .dataset import dataset as _dataset
from .fragment import FragmentMetadata, write_fragments
from .indices import IndicesBuilder
from .optimize import Compaction

__all__ = ["read_lancer", "write_lancer", "add_columns", "create_index", "compact", "LancerDatasource", "LancerDatasink"]

_MODES = ("create", "append", "overwrite")
_BLOCK_ROWS = 128 * 1024  # rows of a block a read task yields


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as e:  # pragma: no cover - the test venv has Ray
        raise ImportError("lancer.ray needs Ray Data: pip install 'ray[data]'") from e
    return ray


def _exists(uri: str, storage_options: Optional[Dict[str, str]]) -> Optional[int]:
    """The latest version of the dataset at ``uri``, or None when there is none."""
    try:
        return _dataset(uri, storage_options=storage_options).version
    except DatasetNotFoundError:
        return None


# --- reading -------------------------------------------------------------------------


def _groups(fragments: List[Any], tasks: int) -> List[List[Any]]:
    """``fragments`` ((id, rows, ...) each) cut into at most ``tasks`` contiguous groups
    of about equal rows."""
    tasks = max(1, min(tasks, len(fragments)))
    total = sum(max(f[1], 1) for f in fragments)
    groups: List[List[Any]] = [[]]
    acc = 0
    for f in fragments:
        # start a new group once this one holds its share of the rows
        if groups[-1] and len(groups) < tasks and acc >= total * len(groups) / tasks:
            groups.append([])
        groups[-1].append(f)
        acc += max(f[1], 1)
    return groups


def _read_group(fragment_ids: List[int], uri: str, version: int, storage_options: Optional[Dict[str, str]],
                columns: Optional[List[str]], filter: Optional[str], batch_size: Optional[int]) -> Iterable[pa.Table]:
    """One read task: the fragments' rows at ``version``, projected and filtered by
    lancer's scanner."""
    ds = _dataset(uri, version=version, storage_options=storage_options)
    frags = []
    for i in fragment_ids:
        f = ds.get_fragment(i)
        if f is None:  # (a pinned version's fragments cannot vanish unless files were removed)
            raise FileNotFoundError(f"fragment {i} of {uri} version {version} is gone")
        frags.append(f)
    scanner = ds.scanner(columns=columns, filter=filter, fragments=frags, batch_size=batch_size)
    # blocks of about _BLOCK_ROWS rows, streamed (a task never holds its whole group)
    pending: List[pa.RecordBatch] = []
    rows, yielded = 0, False
    for batch in scanner.to_batches():
        if batch.num_rows:
            pending.append(batch)
            rows += batch.num_rows
        if rows >= _BLOCK_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows, yielded = [], 0, True
    if pending:
        yield pa.Table.from_batches(pending)
    elif not yielded:
        yield pa.Table.from_batches([], schema=scanner.projected_schema)


def _source_class() -> Any:
    """``LancerDatasource``: a Ray Data ``Datasource`` over one version of a Lance
    dataset (built on first use, so that ``import lancer.ray`` needs no Ray)."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class LancerDatasource(Datasource):
        """One version of a Lance dataset as read tasks, one per group of fragments
        (see :func:`read_lancer`)."""

        def __init__(self, uri: str, version: int, columns: Any = None, filter: Optional[str] = None,
                     storage_options: Optional[Dict[str, str]] = None, fragments_per_task: Optional[int] = None,
                     batch_size: Optional[int] = None) -> None:
            super().__init__()
            self._args = (uri, version, storage_options, columns, filter, batch_size)
            self._fragments_per_task = fragments_per_task
            ds = _dataset(uri, version=version, storage_options=storage_options)
            full = ds.schema
            # the output schema: the scanner's, on no rows (computed columns included)
            self._schema = ds.scanner(columns=columns, filter=filter, limit=0).to_table().schema \
                if (columns is not None or filter is not None) else full
            share = max(len(self._schema), 1) / max(len(full), 1)
            # (id, live rows, estimated bytes in memory of the projection, data files)
            self._fragments = [
                (f.fragment_id, f.count_rows(),
                 int(sum(int(d.file_size_bytes or 0) for d in f.data_files()) * share),
                 [d.path for d in f.data_files()])
                for f in ds.get_fragments()]

        def get_name(self) -> str:
            return "Lancer"

        def estimate_inmemory_data_size(self) -> Optional[int]:
            return sum(f[2] for f in self._fragments)

        def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                           data_context: Any = None) -> List[Any]:
            frags, per = self._fragments, self._fragments_per_task
            if not frags:
                return []
            if per is not None:
                groups = [frags[i:i + per] for i in range(0, len(frags), per)]
            else:
                groups = _groups(frags, parallelism if parallelism and parallelism > 0 else len(frags))
            filter = self._args[4]
            tasks = []
            for group in groups:
                meta = BlockMetadata(num_rows=None if filter is not None else sum(f[1] for f in group),
                                     size_bytes=sum(f[2] for f in group),
                                     input_files=[p for f in group for p in f[3]], exec_stats=None)
                tasks.append(ReadTask(functools.partial(_read_group, [f[0] for f in group], *self._args), meta,
                                      schema=self._schema, per_task_row_limit=per_task_row_limit))
            return tasks

    LancerDatasource.__module__ = __name__
    return LancerDatasource


def read_lancer(
    uri: Any,
    columns: Optional[List[str]] = None,
    filter: Optional[str] = None,
    version: Optional[Any] = None,
    storage_options: Optional[Dict[str, str]] = None,
    fragments_per_task: Optional[int] = None,
    *,
    batch_size: Optional[int] = None,
    concurrency: Optional[int] = None,
    override_num_blocks: Optional[int] = None,
    ray_remote_args: Optional[Dict[str, Any]] = None,
) -> Any:
    """The Lance dataset at ``uri`` as a Ray Dataset.

    The version (``version``: a number or a tag; None: the latest) is resolved once,
    here: every read task reads that version, whatever is committed meanwhile. One read
    task per group of fragments (``fragments_per_task`` fragments each; None: groups of
    about equal rows, as many as Ray's parallelism asks for); each scans its fragments
    with lancer's scanner, ``columns`` (names, or ``{name: SQL expression}``) and the
    SQL ``filter`` pushed down into it. Each task's metadata carries its live row count
    (unknown with a filter) and a size estimate from its data files' sizes.
    ``concurrency``, ``override_num_blocks`` and ``ray_remote_args`` go to
    ``ray.data.read_datasource``.
    """
    ray = _ray()
    if fragments_per_task is not None and (not isinstance(fragments_per_task, int) or fragments_per_task < 1):
        raise ValueError(f"fragments_per_task must be a positive integer, not {fragments_per_task!r}")
    if columns is not None and not isinstance(columns, (list, tuple, dict)):
        raise TypeError(f"columns must be a list of column names (or a dict of SQL expressions), "
                        f"not {type(columns).__name__}")
    if filter is not None and not isinstance(filter, str):
        raise TypeError(f"read_lancer takes a SQL filter string, not {type(filter).__name__}")
    path = _uri(uri)
    pinned = _dataset(path, version=version, storage_options=storage_options).version
    cols = dict(columns) if isinstance(columns, dict) else (None if columns is None else list(columns))
    source = __getattr__("LancerDatasource")(path, pinned, cols, filter, storage_options, fragments_per_task, batch_size)
    kwargs: Dict[str, Any] = {}
    if concurrency is not None:
        kwargs["concurrency"] = concurrency
    if override_num_blocks is not None:
        kwargs["override_num_blocks"] = override_num_blocks
    if ray_remote_args:
        kwargs["ray_remote_args"] = ray_remote_args
    return ray.data.read_datasource(source, **kwargs)


# --- writing -------------------------------------------------------------------------


def _block_table(block: Any, schema: Optional[pa.Schema]) -> pa.Table:
    from ray.data.block import BlockAccessor

    table = BlockAccessor.for_block(block).to_arrow()
    if schema is None:
        return table
    missing = [n for n in schema.names if n not in table.column_names]
    extra = [n for n in table.column_names if n not in schema.names]
    if missing or extra:
        raise ValueError(f"a block's columns {table.column_names} do not match the write schema's "
                         f"{schema.names} (missing {missing}, extra {extra}): select or add columns first")
    table = table.select(schema.names)
    if table.schema != schema:
        try:
            table = table.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
            raise ValueError(f"a block does not fit the write schema ({e}): cast it, or pass schema=") from e
    return table


def _write_blocks(blocks: Iterable[Any], uri: str, mode: str, schema: Optional[pa.Schema], max_rows_per_file: int,
                  max_bytes_per_file: Optional[int], data_storage_version: Optional[str],
                  storage_options: Optional[Dict[str, str]]) -> List[str]:
    """One write task: its blocks written as uncommitted fragments; their
    descriptions' JSON (pylance's ``FragmentMetadata.to_json()``)."""
    # streamed: files are cut and written as the blocks arrive
    tables = (t for t in (_block_table(b, schema) for b in blocks) if t.num_rows)
    first = next(tables, None)
    if first is None:
        return []

    def batches() -> Iterable[pa.RecordBatch]:
        yield from first.to_batches()
        for t in tables:
            if t.schema != first.schema:
                raise ValueError(f"a block's schema {t.schema} differs from this task's first block's "
                                 f"{first.schema}: pass write_lancer(schema=) to cast every block to one")
            yield from t.to_batches()

    data = pa.RecordBatchReader.from_batches(first.schema, batches())
    kwargs: Dict[str, Any] = {}
    if max_bytes_per_file is not None:
        kwargs["max_bytes_per_file"] = max_bytes_per_file
    frags = write_fragments(data, uri, mode=mode,
                            max_rows_per_file=max_rows_per_file, data_storage_version=data_storage_version,
                            storage_options=storage_options, **kwargs)
    return [json.dumps(f.to_json()) for f in frags]


def _commit(uri: str, mode: str, schema: pa.Schema, fragments: List[Any], read_version: Optional[int],
            storage_options: Optional[Dict[str, str]]) -> Any:
    """The driver's one commit of every fragment the write tasks wrote."""
    if mode == "create":
        # (an Overwrite at version 0 would replace a dataset made meanwhile)
        made = _exists(uri, storage_options)
        if made is not None:
            raise ValueError(f"a dataset was created at {uri} (version {made}) while write_lancer(mode='create') "
                             "wrote: nothing was committed; write again with mode='append' or 'overwrite'")
    if mode == "append":
        op: Any = LanceOperation.Append(fragments)
    else:
        op = LanceOperation.Overwrite(schema, fragments)
    return LanceDataset.commit(uri, op, read_version=read_version, storage_options=storage_options)


def _sink_class() -> Any:
    """``LancerDatasink``: a Ray Data ``Datasink`` writing a Lance dataset in two phases
    (built on first use, so that ``import lancer.ray`` needs no Ray)."""
    from ray.data import Datasink

    class LancerDatasink(Datasink):
        """Write tasks write their blocks as uncommitted fragments; the driver commits
        them once (see :func:`write_lancer`). ``result`` is the committed
        ``LanceDataset`` once the write ends; ``read_version`` the version the commit
        is based on (0 for a new dataset)."""

        def __init__(self, uri: str, mode: str, schema: Optional[pa.Schema] = None,
                     max_rows_per_file: int = 1024 * 1024, max_bytes_per_file: Optional[int] = None,
                     data_storage_version: Optional[str] = None, storage_options: Optional[Dict[str, str]] = None,
                     min_rows_per_write: Optional[int] = None, read_version: Optional[int] = None) -> None:
            self.uri, self.mode, self.schema = uri, mode, schema
            self._files = (max_rows_per_file, max_bytes_per_file, data_storage_version, storage_options)
            self._min_rows = min_rows_per_write
            self.read_version = read_version
            self.result: Any = None

        def get_name(self) -> str:
            return "Lancer"

        @property
        def min_rows_per_write(self) -> Optional[int]:
            return self._min_rows

        def on_write_start(self, schema: Optional[pa.Schema] = None) -> None:
            # (on the driver, before any write task)
            if self.schema is None:
                self.schema = schema

        def write(self, blocks: Iterable[Any], ctx: Any) -> List[str]:
            return _write_blocks(blocks, self.uri, self.mode, self.schema, *self._files)

        def on_write_complete(self, write_result: Any) -> None:
            from . import ray as this

            texts = [t for ret in write_result.write_returns for t in (ret or [])]
            if self.schema is None:
                raise ValueError("write_lancer got no rows and no schema: pass schema= to create an empty dataset")
            self.result = this._commit(self.uri, self.mode, self.schema, [FragmentMetadata.from_json(t) for t in texts],
                                       self.read_version, self._files[3])

    LancerDatasink.__module__ = __name__
    return LancerDatasink


_CLASSES = {"LancerDatasource": _source_class, "LancerDatasink": _sink_class}


def __getattr__(name: str) -> Any:
    # Ray's base classes are imported when a class is first asked for (on the driver,
    # or by a worker unpickling one)
    make = _CLASSES.get(name)
    if make is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = make()
    globals()[name] = cls
    return cls


def write_lancer(
    ds: Any,
    uri: Any,
    mode: str = "create",
    schema: Optional[pa.Schema] = None,
    max_rows_per_file: int = 1024 * 1024,
    storage_options: Optional[Dict[str, str]] = None,
    data_storage_version: Optional[str] = None,
    *,
    max_bytes_per_file: Optional[int] = None,
    min_rows_per_write: Optional[int] = None,
    concurrency: Optional[int] = None,
    ray_remote_args: Optional[Dict[str, Any]] = None,
) -> Any:
    """Writes the Ray Dataset ``ds`` as the Lance dataset at ``uri`` in one commit and
    returns the committed :class:`lancer.LanceDataset`.

    The reference's distributed write (spec: "Distributed Write"): Ray's write tasks
    write their blocks' fragments with ``lancer.fragment.write_fragments`` without
    committing and return the fragments' descriptions; the driver commits them all in
    one ``LanceOperation`` through ``LanceDataset.commit``. ``mode``: ``"create"`` (the
    dataset must not exist), ``"append"`` (it must; an ``Append`` at the version read
    when the write starts, rebased over writers that commit meanwhile, as any commit)
    or ``"overwrite"`` (an ``Overwrite``, creating the dataset when absent). ``schema``
    (default: the first block's, or the dataset's on append) is what every block is
    cast to. ``max_rows_per_file`` / ``max_bytes_per_file`` cut each task's files;
    ``data_storage_version`` is the files' format (2.1 or 2.2). ``min_rows_per_write``
    bundles blocks into fewer write tasks; ``concurrency`` and ``ray_remote_args``
    (e.g. ``{"max_retries": 3, "retry_exceptions": True}``) go to Ray's write tasks: a
    retried task's failed attempt leaves only files no commit names.
    """
    _ray()
    if mode not in _MODES:
        raise ValueError(f"write_lancer mode must be one of {', '.join(map(repr, _MODES))}, not {mode!r}")
    if schema is not None and not isinstance(schema, pa.Schema):
        raise TypeError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
    if not isinstance(max_rows_per_file, int) or max_rows_per_file < 1:
        raise ValueError(f"max_rows_per_file must be a positive integer, not {max_rows_per_file!r}")
    if not hasattr(ds, "write_datasink"):
        raise TypeError(f"write_lancer writes a ray.data.Dataset, not {type(ds).__name__}: "
                        "lancer.write_dataset writes local data")
    path = _uri(uri)
    current = _exists(path, storage_options)
    if mode == "append" and current is not None and schema is None:
        schema = _dataset(path, version=current, storage_options=storage_options).schema
    if mode == "create" and current is not None:
        raise ValueError(f"a dataset exists at {path} (version {current}): write_lancer(mode='append') adds to it, "
                         "mode='overwrite' replaces it")
    if mode == "append" and current is None:
        raise ValueError(f"no dataset at {path} to append to: write_lancer(mode='create') creates it")
    if mode == "append" and data_storage_version is not None:
        raise ValueError("write_lancer(mode='append') writes the dataset's own data storage version: "
                         "leave data_storage_version unset")
    sink = __getattr__("LancerDatasink")(path, mode, schema, max_rows_per_file, max_bytes_per_file,
                                         data_storage_version, storage_options, min_rows_per_write,
                                         read_version=0 if mode == "create" else current)
    kwargs: Dict[str, Any] = {}
    if concurrency is not None:
        kwargs["concurrency"] = concurrency
    if ray_remote_args:
        kwargs["ray_remote_args"] = ray_remote_args
    ds.write_datasink(sink, **kwargs)
    if sink.result is None:
        return _dataset(path, storage_options=storage_options)
    return sink.result


# --- index builds and compaction as Ray tasks ------------------------------------------


def _segment_task(uri: str, version: int, storage_options: Optional[Dict[str, str]], column: str,
                  index_type: str, fragment_ids: List[int], model: Any, kwargs: Dict[str, Any]) -> Any:
    """One worker's segment over ``fragment_ids`` at ``version``, uncommitted."""
    ds = _dataset(uri, version=version, storage_options=storage_options)
    return ds.create_index_uncommitted(column, index_type, fragment_ids=fragment_ids, model=model, **kwargs)


def create_index(
    uri: str,
    column: str,
    index_type: str,
    *,
    name: Optional[str] = None,
    num_workers: int = 2,
    storage_options: Optional[Dict[str, str]] = None,
    **kwargs: Any,
) -> Any:
    """Builds an index on ``column`` with Ray tasks and commits it once; returns the
    dataset after. Vector kinds (``metric``, ``num_partitions``, ``num_sub_vectors``,
    ``num_bits``, ``sample_rate``, ``max_iterations``, HNSW ``m`` / ``ef_construction``)
    train their model once on the driver — the sample a single build trains on — and
    each of up to ``num_workers`` tasks encodes its fragments with it, so the index
    answers as one build; scalar kinds take ``create_scalar_index``'s parameters and
    BTREE / BITMAP / ZONEMAP / BLOOMFILTER / INVERTED segments are merged into one (byte
    for byte a single build); LABEL_LIST / NGRAM ones are committed side by side. A task
    that fails fails the call and nothing is committed (its files are garbage
    ``cleanup_old_versions`` removes)."""
    ray = _ray()
    ds = _dataset(uri, storage_options=storage_options)
    kind = index_type.upper()
    name = name or f"{column}_idx"
    frags = [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()]
    if not frags:
        raise ValueError(f"{uri} has no rows to index")
    model = None
    if kind.startswith("IVF"):
        train = {k: kwargs[k] for k in ("metric", "num_partitions", "num_sub_vectors", "num_bits",
                                         "sample_rate", "max_iterations") if k in kwargs}
        model = IndicesBuilder(ds, column).train_model(kind, **train)
        if "metric" not in kwargs:
            kwargs["metric"] = model.metric
    task = ray.remote(num_cpus=1, max_retries=2)(_segment_task)
    refs = [task.remote(uri, ds.version, storage_options, column, kind, [f[0] for f in group], model,
                        dict(kwargs, name=name))
            for group in _groups(frags, num_workers)]
    segments = ray.get(refs)
    if kind in ("BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER", "INVERTED") and len(segments) > 1:
        segments = [ds.merge_existing_index_segments(segments)]
    return ds.commit_existing_index_segments(name, column, segments)


def _compaction_task(uri: str, storage_options: Optional[Dict[str, str]], task: Any) -> Any:
    return task.execute(_dataset(uri, storage_options=storage_options))


def compact(uri: str, *, storage_options: Optional[Dict[str, str]] = None,
            options: Optional[dict] = None) -> Any:
    """Compacts the dataset with one Ray task per compaction task and one commit
    (``lancer.optimize.Compaction`` plan / execute / commit; ``options`` as
    ``compact_files`` takes them). Returns the ``CompactionMetrics``."""
    ray = _ray()
    ds = _dataset(uri, storage_options=storage_options)
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return Compaction.commit(ds, [], options)
    task = ray.remote(num_cpus=1, max_retries=2)(_compaction_task)
    rewrites = ray.get([task.remote(uri, storage_options, t) for t in plan.tasks])
    return Compaction.commit(ds, rewrites, options)


def _columns_task(uri: str, version: int, storage_options: Optional[Dict[str, str]], fragment_ids: List[int],
                  func: Any, read_columns: Optional[List[str]], batch_size: Optional[int]) -> List[Any]:
    """One worker's fragments with their new columns' files (FragmentMetadata)."""
    ds = _dataset(uri, version=version, storage_options=storage_options)
    return [ds.get_fragment(i).merge_columns(func, read_columns, batch_size)[0] for i in fragment_ids]


def add_columns(uri: str, func: Any, read_columns: Optional[List[str]] = None, *, batch_size: Optional[int] = None,
                num_workers: int = 2, storage_options: Optional[Dict[str, str]] = None) -> Any:
    """Adds the columns ``func`` computes (a function over batches of ``read_columns``
    returning a RecordBatch / DataFrame of new columns, or a ``batch_udf``) with up to
    ``num_workers`` Ray tasks, each writing its fragments' new column files, and one
    ``Merge`` commit on the version read at the start (a concurrent append is rebased
    over; a concurrent rewrite of those fragments is a conflict). Returns the dataset
    after. A failed task fails the call; nothing is committed then."""
    ray = _ray()
    ds = _dataset(uri, storage_options=storage_options)
    # the new columns' schema decided once, on the driver (as pylance infers it)
    schema, _, step = _udf_parts(ds, func, read_columns, batch_size)
    udf = BatchUDF(getattr(func, "func", func), schema)
    frags = [(f.fragment_id, f.physical_rows) for f in ds.get_fragments()]
    task = ray.remote(num_cpus=1, max_retries=2)(_columns_task)
    refs = [task.remote(uri, ds.version, storage_options, [f[0] for f in g], udf, read_columns, step)
            for g in _groups(frags, num_workers)] if frags else []
    updated = [f for fs in ray.get(refs) for f in fs]
    full = pa.schema(list(ds.schema) + list(schema))
    op = LanceOperation.Merge(updated, full)
    return LanceDataset.commit(uri, op, read_version=ds.version, storage_options=storage_options)
