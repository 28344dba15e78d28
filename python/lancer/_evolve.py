"""``merge_insert``'s builder and column additions by functions over batches (``batch_udf``,
checkpointed or not): pylance 14's shapes over Lancer's merge and column additions."""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa

from . import _lancer
from ._util import _is_pandas, _reader
from .udf import BatchUDF, BatchUDFCheckpoint, batch_udf  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from .dataset import LanceDataset


# pylance's merge statistics (the native merge reports more, for analyze_plan)
_STATS = ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
# scalar index kinds a merge looks its keys up in
_KEY_INDEX_TYPES = {"BTree", "Bitmap"}


class MergeInsertBuilder:
    """pylance's merge_insert builder over Lancer's merge."""

    def __init__(self, ds: LanceDataset, on: List[str]):
        self._ds = ds
        self._on = on
        # what happens to matched rows: None (nothing), "update", "delete" or "fail";
        # the last when_matched_* call decides, as in pylance
        self._matched: Optional[str] = None
        self._condition: Optional[str] = None
        self._insert = False
        self._delete = False
        self._delete_filter: Optional[str] = None
        self._use_index = True
        self._target_bases: Optional[List[str]] = None
        self._target_all_bases: Optional[bool] = None

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeInsertBuilder":
        """Matched target rows take the source's values (those where the SQL
        ``condition`` over ``source.x`` / ``target.x`` holds)."""
        self._matched, self._condition = "update", condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Matched target rows are deleted (counted in ``num_deleted_rows``)."""
        self._matched, self._condition = "delete", None
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        """Any matched row fails the merge with an ``OSError`` naming its key, and
        nothing is committed (the merge then only inserts new keys)."""
        self._matched, self._condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Source rows without a match are inserted."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[str] = None) -> "MergeInsertBuilder":
        """Target rows no source row matched are deleted (those ``expr`` selects)."""
        self._delete, self._delete_filter = True, expr
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Locate matched rows through scalar indexes on the keys (default) or scan."""
        self._use_index = bool(use_index)
        return self

    def target_bases(self, bases: List[str]) -> "MergeInsertBuilder":
        """New data files go to these registered bases (by name or path; the
        dataset's URI for its own location), one file each in turn; deletion files stay
        in the dataset's location. Not with :meth:`target_all_bases`."""
        if isinstance(bases, str) or not all(isinstance(b, str) for b in bases):
            raise TypeError("target_bases takes a list of base names or paths (str)")
        self._target_bases = [str(b) for b in bases]
        return self

    def target_all_bases(self, include_primary: bool = True) -> "MergeInsertBuilder":
        """New data files go to every registered base in turn (the dataset's own
        location first when ``include_primary``)."""
        self._target_all_bases = bool(include_primary)
        return self

    def conflict_retries(self, retries: int) -> "MergeInsertBuilder":
        """Accepted (Lancer rebases a compatible concurrent commit itself)."""
        return self

    def retry_timeout(self, timeout: Any) -> "MergeInsertBuilder":
        """Accepted (see ``conflict_retries``)."""
        return self

    def _run(self, data: Any, schema: Optional[pa.Schema], uncommitted: bool) -> tuple:
        reader = _reader(data, schema)
        base = self._ds._inner if uncommitted else self._ds._inner.latest()
        return _lancer.merge_insert(
            base, self._on, reader, self._matched == "update", self._condition,
            self._insert, self._delete, self._delete_filter, self._use_index,
            self._matched == "delete", self._matched == "fail",
            target_bases=self._target_bases, target_all_bases=self._target_all_bases,
            uncommitted=uncommitted)

    def execute(self, data: Any, *, schema: Optional[pa.Schema] = None) -> Dict[str, int]:
        """Runs the merge with ``data`` as the source: pylance's statistics."""
        inner, stats, _ = self._run(data, schema, False)
        self._ds._inner = inner
        return {k: stats[k] for k in _STATS}

    # --- plans: pylance's operator names over what lancer's merge does ------------
    def _header(self) -> str:
        on = ", ".join(self._on)
        if self._matched == "delete" and not self._insert and not self._delete:
            return f"DeleteOnlyMergeInsert: on=[{on}], when_matched=Delete, when_not_matched=DoNothing"
        matched = {"update": "UpdateIf(MergeCondition)" if self._condition else "UpdateAll",
                   "delete": "Delete", "fail": "Fail", None: "DoNothing"}[self._matched]
        by_source = ("DeleteIf" if self._delete_filter else "Delete") if self._delete else "Keep"
        return (f"MergeInsert: on=[{on}], when_matched={matched}, "
                f"when_not_matched={'InsertAll' if self._insert else 'DoNothing'}, "
                f"when_not_matched_by_source={by_source}")

    def _indexed_keys(self) -> List[str]:
        """The scalar indexes that locate the matched rows, one per key column, when
        lancer's merge would use them (every key indexed, ``use_index``, no deletes of
        unmatched target rows, which need every target row)."""
        if not self._use_index or self._delete:
            return []
        names = []
        indexes = self._ds.describe_indices()
        for key in self._on:
            found = [i.name for i in indexes if list(i.field_names) == [key] and i.index_type in _KEY_INDEX_TYPES]
            if not found:
                return []
            names.append(found[0])
        return names

    def _plan_lines(self, source: pa.Schema, verbose: bool, metrics: Optional[Dict[str, Any]] = None) -> List[str]:
        join = {(True, True): "Full", (True, False): "Left", (False, True): "Right",
                (False, False): "Inner"}[(self._insert, self._delete)]
        keys = ", ".join(f"({k}, {k})" for k in self._on)
        read_cols = list(self._on)
        if self._delete_filter:
            read_cols = [c for c in self._ds.schema.names]
        cols = ", ".join(source.names)
        if verbose:
            cols = ", ".join(f"{f.name}: {f.type}" for f in source)
        m = metrics or {}

        def with_metrics(line: str, keys_: List[str]) -> str:
            got = [f"{k}={m[k]}" for k in keys_ if k in m]
            return f"{line}, metrics=[{', '.join(got)}]" if metrics is not None else line

        frags = len(self._ds.get_fragments())
        read = (f"LanceRead: uri={self._ds.uri}/data, projection=[{', '.join(read_cols)}], "
                f"num_fragments={frags}, row_id=true, row_addr=true")
        lines = [with_metrics(self._header(), ["num_inserted_rows", "num_updated_rows", "num_deleted_rows",
                                               "num_files_written", "bytes_written"]),
                 f"  HashJoinExec: mode=CollectLeft, join_type={join}, on=[{keys}]",
                 f"    StreamingTableExec: projection=[{cols}]"]
        indexes = self._indexed_keys()
        if metrics is not None and not m.get("indexes_used"):
            indexes = []
        if indexes:
            # the merge reads an index instead of the key columns when that reads less
            # (clustered keys, small upserts): decided as it runs, reported by analyze
            chosen = "" if metrics is not None else ", used=when it reads less than the key columns"
            lines.append(f"    ScalarIndexQuery: query=[{' AND '.join(k + ' IN (source keys)' for k in self._on)}], "
                         f"indexes=[{', '.join(indexes)}]{chosen}")
            lines.append("      " + with_metrics(read, ["fragments_scanned"]))
        else:
            lines.append("    " + with_metrics(read, ["fragments_scanned"]))
        return lines

    def explain_plan(self, schema: Optional[pa.Schema] = None, verbose: bool = False) -> str:
        """The plan of this merge for a source of ``schema`` (the dataset's by default),
        in pylance's operator names: ``MergeInsert`` (or ``DeleteOnlyMergeInsert``) with
        its actions as pylance prints them, the hash join of the source (held whole up to
        256 MiB, then streamed against the target's keys) with the target's key columns
        (``LanceRead``), through the key columns' scalar indexes (``ScalarIndexQuery``)
        when the merge uses them — where pylance refuses to explain. Writes nothing."""
        source = schema if schema is not None else self._ds.schema
        if not isinstance(source, pa.Schema):
            raise TypeError(f"explain_plan takes a pyarrow.Schema, not {type(source).__name__}")
        return "\n".join(self._plan_lines(source, bool(verbose))) + "\n"

    def analyze_plan(self, data: Any, *, schema: Optional[pa.Schema] = None) -> str:
        """Runs the merge over ``data`` without committing it (as pylance's: its data
        files are written and left for cleanup) and returns :meth:`explain_plan`'s plan
        with what happened: ``num_inserted_rows``, ``num_updated_rows``,
        ``num_deleted_rows``, ``num_files_written``, ``bytes_written``, and the target
        fragments whose key columns were read (``fragments_scanned``)."""
        reader = _reader(data, schema)
        started = time.perf_counter()
        _, stats, text = self._run(reader, None, True)
        elapsed = time.perf_counter() - started
        op = json.loads(text)["operation"]
        files = [f for frag in op["new_fragments"] for f in frag["files"]]
        metrics: Dict[str, Any] = dict(stats)
        metrics["num_files_written"] = len(files)
        metrics["bytes_written"] = sum(int(f.get("file_size_bytes") or 0) for f in files)
        lines = self._plan_lines(reader.schema, False, metrics)
        lines[0] = lines[0].replace(": ", f": elapsed={elapsed * 1000:.3f}ms, ", 1)
        return "\n".join(lines) + "\n"

    def execute_uncommitted(self, data: Any, *, schema: Optional[pa.Schema] = None) -> Tuple[Any, Dict[str, int]]:
        """Runs the merge without committing it (pylance's): its data and deletion files
        are written, and ``(Transaction, statistics)`` returned; the transaction is an
        ``Update`` read at this dataset's version, committed by
        ``LanceDataset.commit(uri, transaction)`` (here or in pylance)."""
        from ._transactions import _from_native  # (it imports this module's importers)
        _, stats, text = self._run(data, schema, True)
        doc = json.loads(text)
        doc["uuid"] = str(uuid.uuid4())
        return _from_native(json.dumps(doc), []), {k: stats[k] for k in _STATS}


def _udf_parts(ds: "LanceDataset", func: Any, read_columns: Optional[List[str]],
               batch_size: Optional[int], checkpointed: bool = False) -> tuple:
    """(new columns' schema, a function batch -> RecordBatch of them, rows per call) of
    a function adding columns (a ``batch_udf`` or a plain callable returning a pyarrow
    RecordBatch / Table or a pandas DataFrame); without ``output_schema`` the schema is
    that of the function's output on ``ds``'s first batch, as pylance infers it. A
    ``batch_udf(checkpoint_file=)`` is refused unless ``checkpointed`` (the dataset's
    ``add_columns`` resumes from it; per-fragment work does not, as in pylance)."""
    if not checkpointed and getattr(func, "cache", None) is not None:
        # (pylance's error where a checkpointed function is applied to single fragments)
        raise ValueError("A checkpoint file cannot be used when applying a UDF with LanceFragment.merge_columns.  "
                         "You must apply your own checkpointing for fragment-level operations.")
    schema = getattr(func, "output_schema", None)
    inner = getattr(func, "func", func)

    def as_batch(out: Any) -> pa.RecordBatch:
        if _is_pandas(out):
            out = pa.RecordBatch.from_pandas(out, preserve_index=False)
        elif isinstance(out, pa.Table):
            out = out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist(
                [], schema=out.schema)
        if not isinstance(out, pa.RecordBatch):
            raise TypeError(f"a function adding columns returns a pyarrow RecordBatch or a pandas "
                            f"DataFrame, not {type(out).__name__}")
        return out

    step = int(batch_size or 1024)
    if schema is None:
        first = None
        for b in ds.to_batches(columns=read_columns, batch_size=step):
            first = b
            break
        if first is None:
            # (a TypeError, as pylance raises when it cannot call the function on a row)
            raise TypeError("the dataset has no rows to infer the new columns from: give batch_udf(output_schema=)")
        schema = as_batch(inner(first)).schema

    def call(batch: pa.RecordBatch) -> pa.RecordBatch:
        out = as_batch(inner(batch))
        if out.schema != schema:
            raise ValueError(f"the function returned columns {out.schema} where {schema} was expected")
        return out

    return schema, call, step


def _checkpoint_text(meta: Dict[str, Any]) -> str:
    """A fragment's description (``FragmentMetadata.to_json()``) as pylance's
    checkpoint file keeps it: the engine's compact JSON, keys in its order, unset
    members left out."""
    file_keys = ("path", "fields", "column_indices", "file_major_version", "file_minor_version",
                 "file_size_bytes", "base_id")
    out: Dict[str, Any] = {"id": meta["id"],
                           "files": [{k: f.get(k) for k in file_keys} for f in meta["files"]]}
    if meta.get("overlays"):
        out["overlays"] = meta["overlays"]
    for key in ("deletion_file", "row_id_meta"):
        if meta.get(key) is not None:
            out[key] = meta[key]
    out["physical_rows"] = meta["physical_rows"]
    for key in ("last_updated_at_version_meta", "created_at_version_meta"):
        if meta.get(key) is not None:
            out[key] = meta[key]
    return json.dumps(out, separators=(",", ":"))


def _add_columns_checkpointed(ds: "LanceDataset", func: BatchUDF, read_columns: Optional[List[str]],
                              batch_size: Optional[int]) -> Any:
    """``add_columns`` of a ``batch_udf(checkpoint_file=)`` on ``ds``'s latest version,
    as pylance runs it: fragment by fragment, a fragment recorded in the checkpoint is
    taken as recorded, otherwise each of its batches (``batch_size`` physical rows,
    numbered from 0 within the fragment) comes from the checkpoint or from the
    function (and is recorded), and the fragment is recorded once its new column file
    is written; then one ``Merge`` commit, and the checkpoint file is removed. Returns
    the committed dataset."""
    from ._commit import LanceOperation
    from .dataset import LanceDataset
    from .fragment import FragmentMetadata

    cache = func.cache
    assert cache is not None
    latest = LanceDataset(ds._inner.latest(), ds._storage_options)
    schema, call, step = _udf_parts(latest, func, read_columns, batch_size, checkpointed=True)
    fragments = []
    for frag in latest.get_fragments():
        fid = frag.fragment_id
        saved = cache.get_fragment(fid)
        if saved is not None:
            fragments.append(FragmentMetadata.from_json(saved))
            continue
        position = [0]

        def cached(batch: pa.RecordBatch, fid: int = fid, position: List[int] = position) -> pa.RecordBatch:
            info = BatchUDFCheckpoint.BatchInfo(fid, position[0])
            position[0] += 1
            hit = cache.get_batch(info)
            if hit is not None and hit.num_rows == batch.num_rows:
                return hit
            out = call(batch)
            if hit is None:
                cache.insert_batch(info, out)
            else:  # (a result for the rows without the deleted ones: pylance's batches)
                cache._replace_batch(info, out)
            return out

        meta = FragmentMetadata.from_json(
            _lancer.fragment_add_columns_udf(latest._inner, fid, schema, cached, read_columns, step))
        cache.insert_fragment(fid, _checkpoint_text(meta.to_json()))
        fragments.append(meta)
    full = pa.schema(list(latest.schema) + list(schema))
    done = LanceDataset.commit(latest, LanceOperation.Merge(fragments, full), read_version=latest.version)
    cache.cleanup()
    return done
