#!/usr/bin/env python3
"""Every public name of pylance 14's ``lance`` package and its state in ``lancer``
(issue 41): a markdown table ``| name | state | note |``, the file python/API.md (linked
from python/README.md).

    python scripts/api_table.py            # print the table
    python scripts/api_table.py --write    # write it to python/API.md
    python scripts/api_table.py --check    # exit 1 if python/API.md is stale

Run it with the Python that has pylance 14 (``import lance``) and ``lancer``'s native
module (``scripts/setup-python.sh``'s venv). ``lancer``'s Python code is taken from this
checkout's ``python/lancer`` (the native ``_lancer`` module from there if built, else
from the installed ``lancer``); ``--installed`` uses the installed package as it is.

What is listed (see ``MODULES``): the top-level names of ``lance`` (``dir(lance)``
without ``_``-names and without what it imports from outside pylance: ``typing``,
``os``, ``logging``, ...; plus ``__all__``), then, per public submodule, its ``__all__``
or else the names it defines itself, and for every class its public methods,
properties, dataclass fields and enum members defined by pylance (members inherited
from pyarrow, ``abc``, ``enum`` or ``typing`` bases are left out). A class appears with
its members once, at the module that defines it; re-exports get a row of their own.
The modules that need torch or tqdm (``lance.torch.*``, ``lance.vector``: see
``FROM_SOURCE``) are read from their source with ``ast``, installed or not.

Each name is looked up at the same path under ``lancer`` (``lance.query.MatchQuery`` →
``lancer.query.MatchQuery``), falling back to ``lancer.X`` / ``lancer.dataset.X`` (then
``different``: importable from another place only). States:

- ``same``: exists, and every parameter pylance names is a parameter of lancer's, of
  the same kind (positional / keyword-only), position and literal default;
- ``different``: exists, but parameters are missing (or only reach a ``**kwargs``),
  are keyword-only, sit at another position, have another literal default, or it is a
  method where pylance has a property (or the reverse), or it lives elsewhere;
- ``missing``: no such name.

After what the script finds itself, a row's note comes from two hand-written dicts
below (read off lancer's Python code, its native module and the Rust engine; keyed by a
full path, ``Class.*`` or ``module.*``): ``WHY`` a name is missing (shown only while it
is), and ``NOTES`` on how lancer's name behaves (shown whatever the state).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
API = REPO / "python" / "API.md"
HEADING = "# Every pylance 14 name and its state in lancer"

# pylance's public modules, in table order (``lance`` first). Left out: ``lance.lance``
# (the native extension: its public names reach users through the modules below),
# ``lance.conftest`` (pytest fixtures), ``lance.download`` (a model-download script),
# ``lance.dependencies`` and ``lance.types`` (pylance's lazy optional imports and input
# conversions), ``lance.torch.bench_utils``, and ``lance.indices.builder / ivf / pq``
# (their public names are ``lance.indices``' ``__all__``); private ``_`` modules but the
# two of ``lance._dataset`` users import (``ShardedBatchIterator``, ``CachedDataset``).
# Each still has its row where ``lance`` itself names it.
MODULES = [
    "lance",
    "lance.dataset",
    "lance.fragment",
    "lance.query",
    "lance.optimize",
    "lance.indices",
    "lance.schema",
    "lance.file",
    "lance.blob",
    "lance.udf",
    "lance.sampler",
    "lance.torch",
    "lance.torch.data",
    "lance.torch.async_dataset",
    "lance.torch.dist",
    "lance.torch.distance",
    "lance.torch.kmeans",
    "lance.vector",
    "lance.util",
    "lance.commit",
    "lance.progress",
    "lance.io",
    "lance.arrow",
    "lance.bitmap",
    "lance.log",
    "lance.tracing",
    "lance.otel",
    "lance.debug",
    "lance.pydantic",
    "lance.hf",
    "lance.namespace",
    "lance.mem_wal",
    "lance._dataset.sharded_batch_iterator",
    "lance._dataset.cache",
]

# Read from source with ast whether or not they import here, so the table does not depend
# on torch / tqdm being installed (they need them).
FROM_SOURCE = {
    "lance.torch.data",
    "lance.torch.async_dataset",
    "lance.torch.dist",
    "lance.torch.distance",
    "lance.torch.kmeans",
    "lance.vector",
}

# Why a name is missing, where the code says so (shown only on "missing" rows, so a name
# that lancer gains loses its "not exposed yet"). Keys: a full pylance path,
# "lance.mod.Class.*" (the class's members) or "lance.mod.*" (the module's names).
# Issue numbers: 41 (Python API), 42 (HNSW / multivector / batched queries), 43 (distributed
# writes, compaction, index builds; Ray), 44 (blobs, JSON, Map, 2.0 writes).
WAL = "LSM write-ahead log (shards, memtables): engine lacks it; no issue covers it"
TWO_PHASE = "two-phase commits (write_fragments, LanceOperation, commit): issue 43"
BLOB = "blob API: issue 44"
BASES = ("multi-base datasets: bases are registered (initial_bases, add_bases), listed (base_paths), "
         "hold external blobs (stored relative, as pylance), shallow clones' sources (shallow_clone) and "
         "new data files of write_dataset, write_fragments and merge_insert (target_bases / "
         "target_all_bases)")
BRANCH = ("explain_cleanup_old_versions' report of branches holding files: engine's cleanup keeps what "
          "branches use (the versions they start from) but reports counts only")
STATS = "issue 41 lists stats.dataset_stats() / data_stats(); engine has no statistics object"
NS = "Lance namespaces (catalogs): engine lacks them; no issue covers them"
DIST_INDEX = "distributed index builds (train once, build per fragment group, merge): issue 43"
WHY: Dict[str, str] = {
    # --- two-phase commits (issue 43 part 1): what LanceDataset.commit does not commit yet
    "lance.dataset.LanceOperation.Clone": "LanceDataset.commit commits Append / Overwrite / Delete / Rewrite / Merge; shallow clones are create_branch's (engine: lancer::table::branch)",
    "lance.dataset.LanceOperation.DataOverlay": "data overlay files (pylance 14's unstable reader flag 64): refused by lancer",
    "lance.dataset.LanceOperation.DataOverlayFile": "data overlay files (pylance 14's unstable reader flag 64): refused by lancer",
    "lance.dataset.LanceOperation.DataOverlayGroup": "data overlay files (pylance 14's unstable reader flag 64): refused by lancer",
    "lance.dataset.LanceOperation.DataReplacement": "DataReplacement commits (REWRITE_COLUMNS writes): engine lacks them",
    "lance.dataset.LanceOperation.DataReplacementGroup": "DataReplacement commits (REWRITE_COLUMNS writes): engine lacks them",
    "lance.dataset.LanceOperation.Project": "LanceDataset.commit does not commit it yet; engine commits Project through drop_columns / alter_columns",
    "lance.dataset.LanceOperation.Update": "LanceDataset.commit does not commit it yet; engine commits Update through update / merge_insert",
    "lance.dataset.LanceOperation.UpdateConfig": "LanceDataset.commit does not commit it yet; update_config / update_metadata do",
    "lance.dataset.LanceOperation.UpdateMap": "LanceDataset.commit does not commit it yet; update_config / update_metadata do",
    # --- top level ---------------------------------------------------------------------
    "lance.lance": "pylance's native extension; lancer's is the private lancer._lancer",
    "lance.simd_info": "pylance build information; no counterpart",
    "lance.sanitize_ts": "helper of pylance's asof=, which lancer refuses",
    "lance.FragmentMetadata": "lancer's LanceFragment.metadata is a plain dict; the serializable FragmentMetadata is issue 43",
    "lance.LanceOperation": TWO_PHASE,
    "lance.Transaction": TWO_PHASE,
    "lance.DatasetBasePath": BASES,
    "lance.CleanupStats.deletion_files_removed": "engine counts them into files_removed (→ data_files_removed)",
    "lance.CleanupStats.transaction_files_removed": "engine counts them into files_removed (→ data_files_removed)",
    "lance.CleanupStats.index_files_removed": "engine's cleanup removes data, deletion and transaction files only, not unreferenced index files",
    "lance.CleanupStats.failed_deletes": "engine's cleanup stops at the first failed delete (an error)",
    "lance.CleanupReferencedBranch": BRANCH,
    "lance.DataStatistics": STATS,
    "lance.FieldStatistics": STATS,
    "lance.blob": BLOB,
    "lance.Blob": BLOB,
    "lance.BlobArray": BLOB,
    "lance.BlobColumn": BLOB,
    "lance.BlobDescriptor": "pylance's descriptor object; lancer's scans return descriptors as Arrow structs (the same fields)",
    "lance.BlobDescriptorArrayBuilder": "pylance's low-level sidecar writers: lancer places payloads itself when a blob column is written (write_dataset); not exposed",
    "lance.BlobFile": "take_blobs → BlobFile: issue 44",
    "lance.DedicatedBlobWriter": "pylance's low-level sidecar writers: lancer places payloads itself when a blob column is written (write_dataset); not exposed",
    "lance.PackedBlobWriter": "pylance's low-level sidecar writers: lancer places payloads itself when a blob column is written (write_dataset); not exposed",
    "lance.blob_array": "blob v2 writes: issue 44",
    "lance.blob_field": "blob v2 writes: issue 44",
    "lance.bitmap": "pylance's row-id Bitmap (roaring); engine keeps roaring bitmaps internally (deletions); not exposed",
    "lance.file": "engine reads and writes single data files (lancer::file), not exposed in Python yet; issue 41 lists LanceFileReader / LanceFileWriter",
    "lance.fragment": "no lancer.fragment module: LanceFragment is lancer.LanceFragment; write_fragments / FragmentMetadata are issue 43",
    "lance.util": "KMeans: engine trains k-means inside index builds only; HNSW: issue 42",
    "lance.io": "pylance's object-store provider registry; lancer takes storage_options only",
    "lance.progress": "IndexProgress only; FragmentWriteProgress (write_dataset(progress=)) reports FragmentMetadata objects, which come with write_fragments (issue 43)",
    "lance.dependencies": "pylance's lazy optional imports; internal",
    "lance.types": "pylance's input conversions; internal",
    "lance.mem_wal": WAL,
    "lance.mem_wal.*": WAL,
    "lance.CompactedSsTable": WAL,
    "lance.ExecutionPlan": WAL,
    "lance.LsmPointLookupPlanner": WAL,
    "lance.LsmScanner": WAL,
    "lance.LsmVectorSearchPlanner": WAL,
    "lance.ShardSnapshot": WAL,
    "lance.ShardWriter": WAL,
    "lance.ShardingField": WAL,
    "lance.ShardingSpec": WAL,
    "lance.evaluate_sharding_spec": WAL,
    # --- lance.dataset -------------------------------------------------------------------
    "lance.dataset.LanceDataset.commit": TWO_PHASE,
    "lance.dataset.LanceDataset.commit_batch": TWO_PHASE,
    "lance.dataset.LanceDataset.merge": "engine has it (lancer::evolve::merge_columns; `lancer add-column --from FILE --on KEY`), not exposed in Python yet",
    "lance.dataset.LanceDataset.take_blobs": BLOB,
    "lance.dataset.LanceDataset.read_blobs": BLOB,
    "lance.dataset.LanceDataset.read_blob_ranges": BLOB,
    "lance.dataset.LanceDataset.describe_indices": "engine has it (lancer::index::describe_index, `lancer index describe`), not exposed in Python yet (issue 41)",
    "lance.dataset.LanceDataset.index_statistics": "engine has it (lancer::index::describe_index JSON), not exposed in Python yet; pylance's JSON shape not produced yet (issue 41)",
    "lance.dataset.LanceDataset.stats": STATS,
    "lance.dataset.LanceDataset.checkout_latest": "engine has it (Dataset::latest, which lancer's writes use), not exposed in Python yet",
    "lance.dataset.LanceDataset.max_field_id": "engine has it (lancer_table::evolve::max_field_id), not exposed in Python yet",
    "lance.dataset.LanceDataset.metadata": "engine reads the manifest's config and schema metadata (native Dataset.metadata()), not exposed in LanceDataset yet",
    "lance.dataset.LanceDataset.schema_metadata": "engine reads schema metadata (native Dataset.metadata()), not exposed in LanceDataset yet",
    "lance.dataset.LanceDataset.config": "engine reads the manifest's config (native Dataset.metadata()), not exposed in LanceDataset yet",
    "lance.dataset.LanceDataset.sql": "SQL over datasets (DataFusion in pylance): engine has SQL filters and projections only",
    "lance.dataset.LanceDataset.prewarm_index": "issue 41 lists prewarm_index",
    "lance.dataset.LanceDataset.shallow_clone": BASES,
    "lance.dataset.LanceDataset.deep_clone": "engine lacks clones; no issue covers them",
    "lance.dataset.LanceDataset.add_bases": BASES,
    "lance.dataset.LanceDataset.base_paths": BASES,
    "lance.dataset.LanceDataset.delta": "engine lacks version diffs; no issue covers them",
    "lance.dataset.LanceDataset.partition_expression": "pyarrow.dataset.Dataset API: lancer's LanceDataset is not a pyarrow dataset",
    "lance.dataset.LanceDataset.replace_schema": "pyarrow.dataset.Dataset API: lancer's LanceDataset is not a pyarrow dataset",
    "lance.dataset.LanceDataset.join": "pyarrow.dataset.Dataset API: lancer's LanceDataset is not a pyarrow dataset",
    "lance.dataset.LanceDataset.to_pandas": "Python-only gap: lancer's LanceScanner has to_pandas, the dataset does not",
    "lance.dataset.LanceDataset.sample": "Python-only gap over take (random offsets); lancer.loader shuffles for training",
    "lance.dataset.LanceDataset.slice": "Python-only gap: to_table(offset=, limit=) gives the rows",
    "lance.dataset.LanceDataset.fragment_ids": "Python-only gap: [f.fragment_id for f in ds.get_fragments()]",
    "lance.dataset.LanceDataset.get_version": "Python-only gap over versions()",

    "lance.dataset.LanceDataset.all_files": "engine lists a version's files (cleanup, `lancer verify`), not exposed",
    "lance.dataset.LanceDataset.tracked_files": "engine lists a version's files (cleanup, `lancer verify`), not exposed",

    "lance.dataset.LanceDataset.truncate_table": "not exposed; delete('true') removes every row",
    "lance.dataset.LanceDataset.centroids": "engine reads IVF centroids (lancer::indexes::ivf, `lancer inspect --index`), not exposed in Python yet",
    "lance.dataset.LanceDataset.get_ivf_model": "engine reads IVF centroids (`lancer inspect --index`), not exposed in Python yet",
    "lance.dataset.LanceDataset.get_transactions": "engine reads transaction files (lancer_table::commit::read_transaction), not exposed; Transaction objects are issue 43",
    "lance.dataset.LanceDataset.read_transaction": "engine reads transaction files (lancer_table::commit::read_transaction), not exposed; Transaction objects are issue 43",
    "lance.dataset.LanceDataset.io_stats_incremental": "engine counts requests and bytes (lancer::Session::stats), not exposed in Python yet",
    "lance.dataset.LanceDataset.io_stats_snapshot": "engine counts requests and bytes (lancer::Session::stats), not exposed in Python yet",
    "lance.dataset.LanceDataset.initialize_mem_wal": WAL,
    "lance.dataset.LanceDataset.mem_wal_index_details": WAL,
    "lance.dataset.LanceDataset.mem_wal_writer": WAL,
    "lance.dataset.LanceDataset.initial_storage_options": "storage-option providers: lancer takes a plain storage_options dict",
    "lance.dataset.LanceDataset.latest_storage_options": "storage-option providers: lancer takes a plain storage_options dict",
    "lance.dataset.LanceDataset.storage_options_accessor": "storage-option providers: lancer takes a plain storage_options dict",
    "lance.dataset.LanceDataset.new_file_session": "file API (lance.file): issue 41 lists LanceFileReader / LanceFileWriter",
    "lance.dataset.LanceDataset.remap_row_addrs": "compaction's row-address remapping: engine remaps indexes internally, not exposed",
    "lance.dataset.LanceScanner.analyze_plan": "issue 41 lists analyze_plan",
    "lance.dataset.LanceScanner.take": "pylance's raises NotImplementedError too",
    "lance.dataset.LanceScanner.from_batches": "pylance's internal constructors",
    "lance.dataset.LanceScanner.from_dataset": "pylance's internal constructors",
    "lance.dataset.LanceScanner.from_fragment": "pylance's internal constructors",
    "lance.dataset.MergeInsertBuilder.when_matched_delete": "engine's merge (lancer::evolve::MergeOptions) has no delete-matched mode",
    "lance.dataset.MergeInsertBuilder.when_matched_fail": "engine's merge (lancer::evolve::MergeOptions) has no fail-on-match mode",
    "lance.dataset.MergeInsertBuilder.explain_plan": "pylance 14 prints the DataFusion plan of its join; lancer's merge_insert (lancer_table::merge) is one pass over the source (keys hashed, target fragments read once) with no plan object to describe, and a made-up text would not be pylance's plan",
    "lance.dataset.MergeInsertBuilder.analyze_plan": "as explain_plan: lancer's merge builds no plan (execute()'s statistics dict counts inserted / updated / deleted rows)",
    "lance.dataset.MergeInsertBuilder.execute_uncommitted": TWO_PHASE,
    "lance.dataset.MergeInsertBuilder.mark_sstables_as_compacted": WAL,
    "lance.dataset.MergeInsertBuilder.target_bases": BASES,
    "lance.dataset.MergeInsertBuilder.target_all_bases": BASES,
    "lance.dataset.MergeInsertBuilder.data_storage_version": "not exposed: lancer's merge writes the dataset's own version",
    "lance.dataset.MergeInsertBuilder.write_mode": "rewrite_rows / rewrite_columns choice: engine rewrites rows; not exposed",
    "lance.dataset.DatasetOptimizer.optimize_indices": "engine has it (lancer::index::optimize_index, `lancer index optimize`), not exposed in Python yet",
    "lance.dataset.Tags.list_ordered": "Python-only gap over list()",
    "lance.dataset.serialize_row_addrs": "pylance's helper for row-address filters (row_addr_allowlist): not supported",
    "lance.dataset.LanceOperation": TWO_PHASE,
    "lance.dataset.Transaction": TWO_PHASE,
    "lance.dataset.BulkCommitResult": TWO_PHASE,
    "lance.dataset.DatasetDelta": "engine lacks version diffs; no issue covers them",
    "lance.dataset.LanceStats": STATS,
    "lance.dataset.DataStatistics": STATS,
    "lance.dataset.FieldStatistics": STATS,
    "lance.dataset.DatasetStats": STATS,
    "lance.dataset.IndexInformation": "typing only (index_statistics' dict shape)",
    "lance.dataset.SqlQuery": "SQL over datasets: engine has SQL filters and projections only",
    "lance.dataset.SqlQueryBuilder": "SQL over datasets: engine has SQL filters and projections only",
    "lance.dataset.ScannerBuilder": "lancer builds scans with ds.scanner(...) only",
    "lance.dataset.VectorSearchQuery": "filter= as a vector query object: not supported (nearest= is)",
    "lance.dataset.UpdateResult": "typing only: lancer returns the same dict",
    "lance.dataset.DeleteResult": "typing only: lancer returns the same dict",
    "lance.dataset.ExecuteResult": "typing only: lancer returns the same dict",
    "lance.dataset.AlterColumn": "typing only: lancer takes the same dicts",
    "lance.dataset.Tag": "typing only",
    "lance.dataset.Version": "typing only",
    # --- lance.fragment ------------------------------------------------------------------
    "lance.fragment.LanceFragment.create": "engine writes fragments only within a whole write; write_fragments / FragmentMetadata are issue 43",
    "lance.fragment.LanceFragment.create_from_file": TWO_PHASE,
    "lance.fragment.LanceFragment.merge_columns": "issue 41 lists it; per-fragment Merge commits are issue 43",
    "lance.fragment.LanceFragment.delete": "engine deletes by a dataset-wide filter (ds.delete); issue 41 lists it",
    "lance.fragment.LanceFragment.delete_rows": "engine deletes by a dataset-wide filter (ds.delete)",
    "lance.fragment.LanceFragment.take": "engine takes by row address (ds.take_rows with (fragment_id << 32) | offset), not exposed per fragment; issue 41 lists it",
    "lance.fragment.LanceFragment.head": "Python-only gap: to_table(limit=n)",
    "lance.fragment.LanceFragment.to_pandas": "Python-only gap: to_table().to_pandas()",
    "lance.fragment.LanceFragment.schema": "Python-only gap: the dataset's schema",
    "lance.fragment.LanceFragment.open_session": "pylance's per-fragment read session: not exposed",
    "lance.fragment.LanceFragment.partition_expression": "pyarrow Fragment API: lancer's LanceFragment is not a pyarrow fragment",
    "lance.fragment.FragmentMetadata": "issue 43 (pylance's FragmentMetadata JSON shape)",
    "lance.fragment.write_fragments": "issue 43",
    "lance.fragment.DeletionFile": "pylance 14 hands these out only inside FragmentMetadata (LanceFragment.deletion_file() returns the path, as lancer's does): with FragmentMetadata, issue 43",
    "lance.fragment.RowIdMeta": "pylance 14 hands these out only inside FragmentMetadata (row_id_meta): with FragmentMetadata, issue 43",
    "lance.fragment.RowIdSequence": "built from FragmentMetadata's inline row-id bytes (from_inline_metadata): with FragmentMetadata, issue 43",
    "lance.fragment.RowDatasetVersionMeta": "row version tracking: engine lacks it; no issue covers it",
    "lance.fragment.FragmentSession": "pylance's per-fragment read session: not exposed",
    # --- lance.query --------------------------------------------------------------------
    "lance.query.MinHashQuery": "MinHash search: engine lacks it; no issue covers it",
    "lance.query.FullTextQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.BooleanQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.BoostQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.CombinedFieldsQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.MatchQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.MultiMatchQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    "lance.query.PhraseQuery.inner": "pylance's native query object; lancer's hold JSON (to_json)",
    # --- lance.optimize -----------------------------------------------------------------
    "lance.optimize": "no lancer.optimize module: ds.optimize.compact_files returns lancer.dataset.CompactionMetrics",
    "lance.optimize.Compaction": "distributed compaction (plan / execute / commit): issue 43; engine plans compactions (lancer_table::compact::plan_compaction) inside compact_files",
    "lance.optimize.CompactionPlan": "distributed compaction: issue 43",
    "lance.optimize.CompactionTask": "distributed compaction: issue 43",
    "lance.optimize.RewriteResult": "distributed compaction: issue 43",
    # --- other modules --------------------------------------------------------------------
    "lance.indices.*": "lancer.indices trains models for distributed builds (IndicesBuilder.train_ivf / train_pq, lancer's train_model); saving / loading models as files, GPU transforms and pylance's shuffle-file pipeline (transform_vectors, shuffle_transformed_vectors, load_shuffled_vectors) are not implemented; IndexConfig is (json path indexes and the keyword form of every scalar kind)",
    "lance.file.*": "engine reads and writes single data files (lancer::file), not exposed in Python yet; issue 41 lists LanceFileReader / LanceFileWriter",
    "lance.blob.*": BLOB,
    "lance.sampler": "issue 41 lists the samplers; lancer.loader (fragments as shards of a pinned version, shuffles, resumable) is lancer's own",
    "lance.sampler.*": "issue 41 lists the samplers; lancer.loader (fragments as shards of a pinned version, shuffles, resumable) is lancer's own",
    "lance.torch.preferred_device": "device helper of pylance's torch k-means: no counterpart",
    "lance.torch.data": "issue 41 lists lance.torch.data (LanceDataset, SafeLanceDataset, get_safe_loader); lancer.torch.LanceIterableDataset is the closest",
    "lance.torch.data.*": "issue 41 lists these; lancer.torch.LanceIterableDataset over lancer.loader is the closest",
    "lance.torch.async_dataset": "no issue covers it",
    "lance.torch.async_dataset.*": "no issue covers it",
    "lance.torch.distance": "torch distance kernels for accelerator= index training: no issue covers them (create_index leaves accelerator unread)",
    "lance.torch.distance.*": "torch distance kernels for accelerator= index training: no issue covers them",
    "lance.torch.kmeans": "torch k-means for accelerator= index training: no issue covers it",
    "lance.torch.kmeans.*": "torch k-means for accelerator= index training: no issue covers it",
    "lance.vector": "GPU (accelerator=) index training helpers: no issue covers them; engine trains on the CPU",
    "lance.vector.*": "GPU (accelerator=) index training helpers: no issue covers them; engine trains on the CPU",
    "lance.util.validate_vector_index": "recall check of a vector index through pylance's search: no counterpart",
    "lance.util.*": "KMeans: engine trains k-means inside index builds only; HNSW: issue 42; sanitize_ts / td_to_micros serve asof=, which lancer refuses",
    "lance.arrow": "bfloat16 and image extension types: engine lacks them; no issue covers them",
    "lance.arrow.*": "bfloat16 and image extension types: engine lacks them; no issue covers them",
    "lance.bitmap.*": "pylance's row-id Bitmap: not exposed",
    "lance.tracing": "Chrome trace capture: no counterpart; no issue covers it",
    "lance.tracing.*": "Chrome trace capture: no counterpart; no issue covers it",
    "lance.otel": "OpenTelemetry metrics: no counterpart; no issue covers it",
    "lance.otel.*": "OpenTelemetry metrics: no counterpart; no issue covers it",
    "lance.hf": "Hugging Face import: no issue covers it",
    "lance.hf.*": "Hugging Face import: no issue covers it",
    "lance.namespace": NS,
    "lance.namespace.*": NS,
}

# How lancer's name behaves (shown whatever the state).
NOTES: Dict[str, str] = {
    "lance.dataset.LanceDataset.merge_index_metadata": "INVERTED partitions staged by create_scalar_index(fragment_ids=, index_uuid=) merged into one, as pylance 14; BTREE / vector kinds refused in pylance's words",
    "lance.fragment.LanceFragment.update_columns": "with_offsets=True refused; _rowid joins refused on datasets with stable row ids",
    "lance.fragment.LanceFragment.merge": "pylance's hash-join answers: null keys match, a duplicate key's last row wins",
    "lance.indices.IndexFileVersion": "create_index(index_file_version=): V3 honoured, LEGACY refused",
    "lance.progress.FragmentWriteProgress": "complete() is called for every fragment; pylance 14 skips a write's last, partly filled one",
    "lance.FFILanceTableProvider": "built for DataFusion-Python 55 (pylance 14's for 54); LanceDataset itself registers too (__datafusion_table_provider__); python/tests/test_sql_ffi.py",
    "lance.dataset.LanceDataset.shallow_clone": "engine lancer::table::branch::shallow_clone (a branch's clone without the branch): the source's version number, the source a base path, nothing copied",
    # --- transactions (issue 43): read back, committed as objects, in batches
    "lance.dataset.LanceDataset.get_transactions": "engine lancer::transactions::recent_transactions; every operation kind comes back as pylance's LanceOperation (ReserveFragments / UpdateBases as a bare BaseOperation, as pylance)",
    "lance.dataset.LanceDataset.read_transaction": "engine lancer::transactions::read_transaction",
    "lance.dataset.LanceDataset.commit_batch": "Append transactions only (pylance's rule), merged and committed read at the smallest read version",
    "lance.dataset.Transaction": "committed by LanceDataset.commit with its uuid and properties recorded as given",
    "lance.dataset.LanceOperation.Project": "read back from transactions; LanceDataset.commit refuses it (NotImplementedError): drop_columns / alter_columns commit it",
    "lance.dataset.LanceOperation.Update": "read back from transactions; LanceDataset.commit refuses it (NotImplementedError): update / merge_insert commit it",
    "lance.dataset.LanceOperation.UpdateConfig": "read back from transactions; LanceDataset.commit refuses it (NotImplementedError): update_config / update_metadata commit it",
    "lance.dataset.LanceOperation.Clone": "read back from transactions; LanceDataset.commit refuses it (NotImplementedError): create_branch commits it",
    # --- two-phase commits (issue 43 part 1) ------------------------------------------
    "lance.fragment.write_fragments": "mode append / create / overwrite, max_rows_per_file, max_bytes_per_file, data_storage_version, storage_options, return_transaction honoured; progress, enable_stable_row_ids=True, bases and namespaces raise NotImplementedError; engine lancer::two_phase::write_fragments",
    "lance.fragment.FragmentMetadata": "a dataclass as pylance's; to_json() gives pylance 14's dict (json.dumps of it equals pylance's text), from_json takes pylance's; pickles; overlays refused (lancer::fragment_json)",
    "lance.dataset.LanceDataset.commit": "Append / Overwrite / Delete / Rewrite / Merge (a pa.Schema or LanceSchema) / CreateIndex (Index segments, each file checked); Rewrite(rewritten_indices), commit_lock, detached, namespaces and bases raise NotImplementedError; every data / deletion file named is checked first (missing, other size or rows, already committed: InvalidInputError naming it); conflicts are CommitConflictError (lancer::two_phase::commit)",
    "lance.fragment.LanceFragment.delete": "writes the fragment's new deletion file, commits nothing (lancer::two_phase::delete_in_fragment); None when no row is left, as pylance's",
    "lance.fragment.LanceFragment.delete_rows": "physical row offsets added to the fragment's deletions, nothing committed (lancer_table Dataset::delete_offsets_uncommitted)",
    "lance.dataset.LanceOperation.CreateIndex": "new_indices / removed_indices of Index segments (lancer's, or objects with pylance's Index members); LanceDataset.commit checks every file they list",
    "lance.dataset.LanceDataset.create_index_uncommitted": "vector kinds (shared ivf_centroids / pq_codebook, or lancer's whole model= from IndicesBuilder.train_model; without either each segment trains its own), BTREE / BITMAP / LABEL_LIST / ZONEMAP / BLOOMFILTER / NGRAM / INVERTED; rabitq_model and the tuning / accelerator arguments as create_index (lancer::distributed_index::create_index_segment)",
    "lance.dataset.LanceDataset.merge_existing_index_segments": "BTREE, BITMAP, ZONEMAP and BLOOMFILTER: the merged segment's files are byte for byte one build's over the same fragments; INVERTED: one partition as pylance 14 merges them (postings decoded and laid out as one build's, byte for byte for lancer's segments; pylance's staged segments read too); vector segments of one model: rows taken as stored (FLAT / SQ / PQ / RQ, HNSW included), byte for byte one build's with the model; LABEL_LIST and NGRAM (which pylance does not merge either), and vector segments of different models, are refused (commit them side by side, as lancer and pylance search them)",
    "lance.dataset.LanceDataset.commit_existing_index_segments": "one CreateIndex replacing an index of that name; segments must be of one kind and cover disjoint fragments of the dataset, their files present at their sizes",
    "lance.dataset.Index": "a dataclass with pylance's fields; fragment_ids is a set (pylance: its Bitmap)",
    # --- top level ---------------------------------------------------------------------
    "lance.__version__": "lancer's own version (0.x), not pylance's",
    "lance.dataset": "asof= raises NotImplementedError",
    "lance.write_dataset": "enable_stable_row_ids=True and use_legacy_format=True raise NotImplementedError; data from a pylance LanceDataset / Scanner, pandas, dicts, lists, iterables with schema= are taken",
    "lance.CleanupStats": "a dataclass; its data_files_removed counts data, deletion and transaction files together (lancer_table::cleanup's files_removed), pylance's data files only",
    "lance.MergeInsertBuilder": "not re-exported at lancer's top level",
    # --- lance.dataset -------------------------------------------------------------------
    "lance.dataset.LanceDataset": "lancer's constructor takes the native dataset (open with lancer.dataset(uri)); not a pyarrow.dataset.Dataset subclass (isinstance checks fail)",
    "lance.dataset.LanceDataset.add_columns": "SQL dict, pa.Field / schema, functions over batches (batch_udf, read_columns, batch_size) and readers of new values (reader_schema) as pylance; a batch_udf(checkpoint_file=) resumes an interrupted run as pylance's (fragment by fragment, then one Merge commit; pylance's checkpoint files too, and pylance resumes lancer's): lancer's function batches hold a fragment's deleted rows, pylance's leave them out, so a saved batch of another length is computed again",
    "lance.dataset.LanceDataset.alter_columns": "path, name, nullable, data_type",
    "lance.dataset.LanceDataset.checkout_version": "a number (of this branch), a tag (on its branch) or a (branch, version) tuple (None: main / the latest), as pylance; a branch's dataset has uri <root>/tree/<name> (pylance keeps the root's)",
    "lance.dataset.LanceDataset.create_branch": "reference None (this version of this branch) / int / tag / (branch, version); pylance 14's files byte-for-byte in structure (_refs/branches/{name}.json, tree/{name}/ shallow-clone manifest, Clone transaction), compared in test_branches.py; storage_options other than the dataset's refused",
    "lance.dataset.LanceDataset.branches": "Branches: list() / list_ordered(order) in pylance's dict shape, delete (refused while branches were made from it; removes tree/{name}), replace_metadata",
    "lance.dataset.LanceDataset.version_refs": "[{'version': n}] of this branch, from one listing",
    "lance.dataset.Branches": "list / list_ordered / delete / replace_metadata as pylance (lancer/_branches.py, engine lancer::table::branch)",
    "lance.dataset.Branch": "TypedDict: parent_branch, branch_identifier, parent_version, create_at, manifest_size, metadata",
    "lance.dataset.VersionRef": "TypedDict: version",
    "lance.dataset.LanceDataset.cleanup_old_versions": "with a tagged version among those to remove, pylance raises OSError (error_if_tagged_old_versions=True, the default) while lancer skips it and removes the rest; versions= (clean only these) is ignored; returns lancer's CleanupStats (see lance.CleanupStats)",
    "lance.dataset.LanceDataset.count_rows": "filter as SQL or a pyarrow Expression; pylance too ignores count_rows' **kwargs",
    "lance.dataset.LanceDataset.create_index": "IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ, IVF_HNSW_FLAT / _SQ / _PQ (m, ef_construction, max_level) and the scalar kinds; ivf_centroids / pq_codebook build with that model (one segment over every fragment)",
    "lance.dataset.LanceDataset.create_scalar_index": "zone_size / rows_per_zone / number_of_items / probability and the INVERTED tokenizer settings are read from **kwargs; other names are a TypeError (non-INVERTED) or go to the engine's tokenizer settings (INVERTED)",
    "lance.dataset.LanceDataset.delete": "predicate as SQL or a pyarrow Expression",
    "lance.dataset.LanceDataset.get_fragments": "filter= raises NotImplementedError",
    "lance.dataset.LanceDataset.insert": "**kwargs go to lancer's write_dataset",
    "lance.dataset.LanceDataset.list_indices": "fragment_ids is a set (pylance: a Bitmap)",
    "lance.dataset.LanceDataset.optimize": "compact_files only",
    "lance.dataset.LanceDataset.scanner": "filter as SQL or a pyarrow Expression (a superset of pylance's: struct fields, large strings, unsigned literals); columns as {name: SQL} work",
    "lance.dataset.LanceDataset.take": "columns as {name: SQL} raise NotImplementedError (pylance computes them)",
    "lance.dataset.LanceDataset.update": "where= as SQL or a pyarrow Expression",
    "lance.dataset.LanceDataset.versions": "metadata holds total_rows and operation (pylance: total_rows, total_fragments, total_data_files, file sizes…, no operation)",
    "lance.dataset.LanceScanner": "lancer's constructor takes (dataset, **params): build it with ds.scanner(...)",
    "lance.dataset.LanceScanner.explain_plan": "lancer's text names the filters and scalar indexes used, not pylance's DataFusion plan",
    "lance.dataset.MergeInsertBuilder": "lancer's constructor takes (dataset, on): build it with ds.merge_insert(on)",
    "lance.dataset.MergeInsertBuilder.conflict_retries": "accepted without effect (lancer rebases a compatible concurrent commit itself)",
    "lance.dataset.MergeInsertBuilder.retry_timeout": "accepted without effect",
    "lance.dataset.MergeInsertBuilder.execute": "returns the statistics dict",
    "lance.dataset.DatasetOptimizer": "lancer's constructor takes the lancer dataset",
    "lance.dataset.DatasetOptimizer.compact_files": "pylance's keywords: target_rows_per_fragment, max_bytes_per_file, materialize_deletions(_threshold) and compaction_mode reencode / try_binary_copy (re-encoded, pylance's fallback) honoured; max_rows_per_group, num_threads, batch_size, binary_copy_read_batch_bytes accepted without effect; set defer_index_remap, force_binary_copy, max_source_fragments / rows / bytes, excluded_fragment_ids, data_storage_version raise NotImplementedError naming them",
    "lance.dataset.ColumnOrdering": "a dataclass (column_name, ascending, nulls_first), as pylance's",
    "lance.dataset.Tags": "lancer's constructor takes the lancer dataset",
    "lance.dataset.Tags.create": "reference: a version number, a tag's name, (None | 'main', version) or None (the latest); references to a branch's versions raise NotImplementedError; the tag file pylance 14's (branch, version, createdAt, updatedAt, manifestSize, metadata), each reads the other's",
    "lance.dataset.Tags.update": "as create's references; creation time and metadata stay, updatedAt moves (as pylance)",
    "lance.dataset.Tags.list": "pylance's Tag dicts: branch, version, created_at / updated_at (UTC datetimes), manifest_size, metadata (test_introspect.py)",
    "lance.dataset.Tags.replace_metadata": "replaces the whole map; version and updatedAt stay (lancer_table::versions::replace_tag_metadata)",
    "lance.dataset.VectorIndexReader": "num_partitions / read_partition(with_vector) give pylance's tables byte for byte (columns, types, schema metadata; PQ codes as stored, transposed within the partition; RabitQ codes lancer wrote unpacked come back packed, as pylance loads them) on IVF_FLAT / PQ / SQ / RQ and IVF_HNSW_* built by either (lancer::index_reader)",
    "lance.dataset.LanceDataset.lance_schema": "lancer.schema.LanceSchema with the manifest's field ids",
    "lance.dataset.LanceScanner.scan_batches": "returns the list of the scan's batches; pylance 14's reads every batch and then raises StopIteration (its loop waits for a None pyarrow's read_next_batch never returns)",
    "lance.bytes_read_counter": "takes the lancer.Session (or a dataset) whose reads to count: lancer keeps no process-wide state, pylance counts the whole process; no argument is a TypeError saying so; on local disk data files are memory-mapped and only metadata reads count",
    "lance.iops_counter": "read requests (gets, heads, lists) of the lancer.Session (or dataset) passed; pylance counts the whole process; no argument is a TypeError saying so",
    "lance.schema.LanceSchema": "Python over the manifest's field ids (lancer.schema.LanceSchema): fields, field / field_case_insensitive (dotted paths, backticks), to_pyarrow, from_pyarrow (ids depth first; fixed-size lists one field, as pylance); unenforced keys as pylance decides them (a dataset's primary key from the manifest's field flag, positions and the clustering key from the fields' lance-schema:unenforced-* metadata, which pylance keeps; lancer's writer records no key flag, so on lancer-written datasets both see no primary key and only lancer sees a clustering key); repr is not pylance's Rust debug text; its fields (lance.schema.LanceField) have name(), id(), children(), metadata (a property), to_arrow() and the key positions, as pylance's",
    "lance.debug": "the same information as pylance's (field ids and types, fragments, data and deletion files, transactions), printed as Rust Debug of lancer's own structures (the manifest's and transactions' protobuf messages, a schema tree): field names and nesting differ from pylance's structs; test_introspect.py checks every name / id / path / version pylance prints appears in lancer's text",
    "lance.debug.format_manifest": "lancer::debug::format_manifest: the schema tree, then the manifest protobuf (its flat field list cleared)",
    "lance.debug.format_fragment": "a LanceFragment, its metadata or a fragment id; lancer::debug::format_fragment",
    "lance.debug.format_schema": "lancer::debug::format_schema",
    "lance.debug.list_transactions": "newest first from this version, max_transactions (default 10); versions without a readable transaction file are skipped",
    "lance.dataset.LanceDataset.fragment_ids": "a Bitmap-like set (lancer.dataset.Bitmap: a MutableSet iterated in ascending order), not pylance's roaring Bitmap",
    "lance.dataset.LanceDataset.get_version": "pylance's summary of the manifest (total_rows, total_fragments, total_data_files, total_files_size, deletion files and rows)",
    "lance.dataset.LanceDataset.io_stats_snapshot": "lancer.dataset.IOStats (read_iops, read_bytes, write_iops, written_bytes) of the dataset's session since the last io_stats_incremental; on local disk data files are memory-mapped and only metadata requests count",
    "lance.dataset.LanceDataset.io_stats_incremental": "as io_stats_snapshot, then the counters start again (as pylance resets them)",
    "lance.dataset.LanceDataset.all_files": "last_modified has millisecond precision (lancer's listing)",
    "lance.dataset.LanceDataset.tracked_files": "progress is called once per manifest after all were read (the total known from the start)",
    "lance.dataset.LanceDataset.validate": "lancer::verify (as `lancer verify`) on this version; problems raise lancer.CorruptDataError (an OSError) naming each",
    "lance.dataset.LanceDataset.truncate_table": "a delete of every row, as pylance commits it",
    "lance.dataset.LanceDataset.drop": "a missing dataset is lancer.DatasetNotFoundError (a FileNotFoundError, so an OSError as pylance's)",
    "lance.dataset.LanceDataset.get_ivf_model": "returns lancer.dataset.IvfModel (centroids, distance_type, num_partitions)",
    "lance.dataset.LanceDataset.prewarm_index": "loads every segment into the session's index cache; with_position has no effect (tuning); index_segments raises NotImplementedError",
    "lance.dataset.MergeInsertBuilder.when_matched_delete": "engine: MergeOptions::delete_matched (`lancer merge --delete-matched`)",
    "lance.dataset.MergeInsertBuilder.when_matched_fail": "engine: MergeOptions::fail_on_match (`lancer merge --fail-on-match`): an OSError naming the key, nothing committed",
    "lance.dataset.Tags.list_ordered": "pairs of list()'s (name, Tag)",
    "lance.dataset.IndexInformation": "a TypedDict as pylance's; fragment_ids typed Set[int] (lancer's list_indices gives a set)",
    # --- lance.fragment ------------------------------------------------------------------
    "lance.fragment.LanceFragment": "constructor takes (dataset, metadata dict): get one from ds.get_fragments()",
    "lance.fragment.LanceFragment.data_files": "objects with path, fields, file_major_version, file_minor_version (no column_indices, file_size_bytes)",
    "lance.fragment.LanceFragment.metadata": "a FragmentMetadata as pylance's (to_json equal to pylance's for the same fragment)",
    "lance.fragment.LanceFragment.validate": "this fragment's data files (present, recorded sizes and rows) and deletion file (lancer::verify::fragment_problems); damage is lancer.CorruptDataError (an OSError, as pylance's)",
    "lance.fragment.LanceFragment.physical_schema": "NotImplementedError, as pylance 14's",
    "lance.fragment.LanceFragment.scanner": "keyword arguments only, passed to ds.scanner(fragments=[self])",
    "lance.fragment.LanceFragment.to_table": "keyword arguments only, passed to ds.scanner(fragments=[self])",
    "lance.fragment.LanceFragment.to_batches": "keyword arguments only, passed to ds.scanner(fragments=[self])",
    # --- lance.query --------------------------------------------------------------------
    "lance.query.CombinedFieldsQuery": "constructing works; searching with it raises NotImplementedError (BM25F: engine lacks it)",
    "lance.query.DocumentGranularity": "LIST_ELEMENT raises NotImplementedError when searched (engine indexes whole documents)",
    "lance.query.FullTextQuery": "lancer's query objects are Python holding Lance's JSON query shape (to_json); pylance's objects are refused by lancer",
    # --- lance.optimize -----------------------------------------------------------------
    "lance.optimize.CompactionMetrics": "a dataclass of the four counts",
    "lance.optimize.Compaction": "distributed compaction as pylance 14 (lancer::compaction: the local compaction's groups, one Rewrite commit through the OCC path); options target_rows_per_fragment, max_bytes_per_file, materialize_deletions(_threshold), compaction_mode reencode / try_binary_copy honoured, max_rows_per_group / num_threads / batch_size / io_buffer_size / binary_copy_read_batch_bytes accepted, the others refused by name",
    "lance.optimize.CompactionPlan": "pickles; json() / from_json in pylance's shape",
    "lance.optimize.CompactionTask": "pickles; execute(dataset) writes the new files, commits nothing",
    "lance.optimize.RewriteResult": "pickles; json() in pylance's shape; a tampered or foreign result is refused at commit naming the fragment",
    # --- other modules --------------------------------------------------------------------
    "lance.torch": "a package: LanceIterableDataset over lancer.loader (lancer's own) and lancer.torch.dist; pylance's preferred_device, data, async_dataset, distance, kmeans are not there",
    "lance.torch.dist": "works without torch (rank 0 of 1, no DataLoader worker), where pylance's module needs torch to import; with torch the same answers (torch.distributed, get_worker_info; no environment variables, as pylance)",
    "lance.log": "LANCE_LOG read as pylance (get_log_level); the 'pylance' logger gets that level at import, an unknown level leaves it alone (pylance's import raises ValueError); lancer's engine logs nothing through Python's logging",
    "lance.commit.CommitConflictError": "the native class lancer raises (lancer.CommitConflictError), given pylance's constructor (message, retryable=True) and retryable; lancer's engine does not tell an incompatible conflict (pylance: retryable=False) from a preempted one, so the conflicts it raises say retryable=True",
    "lance.optimize.CompactionOptions": "pylance's keys; which compact_files / Compaction honour, accept or refuse: see compact_files",
    "lance.fragment.DataFile.create": "as pylance 14's (leaf field ids matched by name, the file's version and size; the name looked up percent-encoded as pylance's object store does); file_size_bytes None for files on object stores",
    "lance.udf.normalize_transform": "as pylance's, readers as lancer's add_columns takes them (a list of RecordBatches without reader_schema too, which pylance refuses)",
    "lance.pydantic": "schemas field for field as pylance's (pydantic 2 and 1-style models); a Vector / MultiVector made by pylance's lance.pydantic is not recognised by lancer's (nor lancer's by pylance's): a TypeError",
    "lance.fragment.LanceFragment.merge_columns": "a checkpointed batch_udf is refused (ValueError), as pylance",
}


# --- the two APIs as plain records -------------------------------------------------------

NO_DEFAULT = object()
COMPLEX = object()  # a default that is not a plain literal
POS_ONLY, POS, VAR_POS, KW, VAR_KW = "pos_only", "pos", "*args", "kw", "**kwargs"
_KIND = {
    inspect.Parameter.POSITIONAL_ONLY: POS_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: POS,
    inspect.Parameter.VAR_POSITIONAL: VAR_POS,
    inspect.Parameter.KEYWORD_ONLY: KW,
    inspect.Parameter.VAR_KEYWORD: VAR_KW,
}


@dataclasses.dataclass
class Param:
    name: str
    kind: str
    default: Any = NO_DEFAULT


@dataclasses.dataclass
class Entry:
    """One pylance name: its module, the attribute path inside it, what it is."""

    module: str
    qual: List[str]
    kind: str  # module, class, function, method, data
    params: Optional[List[Param]] = None  # None: not introspectable (or not callable)
    obj: Any = None
    home: Optional[str] = None  # where a re-exported class is listed with its members

    @property
    def path(self) -> str:
        return ".".join([self.module] + self.qual)


def _literal(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return COMPLEX


def params_of(obj: Any) -> Optional[List[Param]]:
    """The parameters of a callable (``self`` / ``cls`` dropped), or None."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out = []
    for i, p in enumerate(sig.parameters.values()):
        if i == 0 and p.name in ("self", "cls", "$self") and p.kind != inspect.Parameter.VAR_POSITIONAL:
            continue
        d = NO_DEFAULT if p.default is inspect.Parameter.empty else _literal(p.default)
        out.append(Param(p.name, _KIND[p.kind], d))
    return out


def ast_params(fn: ast.AST, method: bool) -> List[Param]:
    a = fn.args  # type: ignore[attr-defined]
    out: List[Param] = []

    def lit(node: Optional[ast.AST]) -> Any:
        if node is None:
            return NO_DEFAULT
        try:
            return _literal(ast.literal_eval(node))
        except Exception:
            return COMPLEX

    positional = [(p, POS_ONLY) for p in a.posonlyargs] + [(p, POS) for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, ((p, kind), d) in enumerate(zip(positional, defaults)):
        if method and i == 0 and p.arg in ("self", "cls"):
            continue
        out.append(Param(p.arg, kind, lit(d)))
    if a.vararg:
        out.append(Param(a.vararg.arg, VAR_POS))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append(Param(p.arg, KW, lit(d)))
    if a.kwarg:
        out.append(Param(a.kwarg.arg, VAR_KW))
    return out


def _is_typeddict(obj: Any) -> bool:
    return isinstance(obj, type) and typing.is_typeddict(obj)


def _is_native(obj: Any) -> bool:
    return getattr(obj, "__module__", None) in (None, "builtins", "_lib", "lance.lance")


def _from_outside(obj: Any) -> bool:
    """Imported by pylance from elsewhere (typing, stdlib, pyarrow, ...)."""
    if isinstance(obj, types.ModuleType):
        return not obj.__name__.startswith("lance")
    if isinstance(obj, (bool, int, float, str, bytes)):
        return True
    mod = getattr(obj, "__module__", None)
    if mod is None or mod in ("builtins", "_lib"):
        return False
    return not mod.startswith("lance")


def public_names(mod: types.ModuleType) -> List[str]:
    """The names a pylance module offers (see the module docstring)."""
    allnames = getattr(mod, "__all__", None)
    if mod.__name__ == "lance":
        names = {n for n in dir(mod) if not n.startswith("_") and not _from_outside(getattr(mod, n))}
        names |= {n for n in (allnames or []) if hasattr(mod, n)}
        return sorted(names, key=lambda n: (n.lower(), n))
    if allnames is not None:
        return sorted({n for n in allnames if (not n.startswith("_") or n == "__version__") and hasattr(mod, n)},
                      key=lambda n: (n.lower(), n))
    own, native = [], []
    for n in dir(mod):
        if n.startswith("_"):
            continue
        o = getattr(mod, n)
        if isinstance(o, types.ModuleType) or isinstance(o, (bool, int, float, str, bytes)):
            continue
        if getattr(o, "__module__", None) == mod.__name__:
            own.append(n)
        elif _is_native(o) and callable(o):
            native.append(n)
    return sorted(own or native, key=lambda n: (n.lower(), n))


def _kind_of(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    return "data"


def _member_kind(raw: Any) -> str:
    if isinstance(raw, (staticmethod, classmethod)):
        return "method"
    if isinstance(raw, type):
        return "class"
    if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "data"
    if inspect.isfunction(raw) or inspect.ismethoddescriptor(raw) or inspect.isbuiltin(raw):
        return "method"
    if type(raw).__name__ in ("cached_property", "_tuplegetter"):
        return "data"
    return "method" if callable(raw) and not isinstance(raw, enum.Enum) else "data"


def pylance_members(cls: type) -> Dict[str, str]:
    """Public members a pylance class defines: name → method / data / class."""
    out: Dict[str, str] = {}
    if _is_typeddict(cls):
        return out
    for k in cls.__mro__:
        if k is object:
            continue
        mod = getattr(k, "__module__", "") or ""
        if k is not cls and not mod.startswith("lance"):
            continue
        for n, raw in vars(k).items():
            if n.startswith("_") or n in out:
                continue
            out[n] = _member_kind(raw)
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if not f.name.startswith("_"):
                out.setdefault(f.name, "data")
    if isinstance(cls, enum.EnumMeta):
        for n in cls.__members__:
            out[n] = "data"
    return out


def _sig_of_class(cls: type) -> Optional[List[Param]]:
    if isinstance(cls, enum.EnumMeta) or _is_typeddict(cls) or issubclass(cls, BaseException):
        return None
    if "__init__" not in vars(cls) and "__new__" not in vars(cls) and not dataclasses.is_dataclass(cls) \
            and all(k.__init__ is object.__init__ for k in cls.__mro__ if k is not object and "__init__" in vars(k)):
        return None
    return params_of(cls)


def collect_live(modname: str, mod: types.ModuleType) -> List[Entry]:
    entries = []
    for n in public_names(mod):
        obj = getattr(mod, n)
        kind = _kind_of(obj)
        params = None
        if kind == "class":
            params = _sig_of_class(obj)
        elif kind == "function":
            params = params_of(obj)
        entries.append(Entry(modname, [n], kind, params, obj))
    return entries


def expand_class(e: Entry, seen: set) -> List[Entry]:
    """Rows for the members of the class ``e`` (nested classes too, once)."""
    cls = e.obj
    if id(cls) in seen:
        return []
    seen.add(id(cls))
    out = []
    for n, kind in sorted(pylance_members(cls).items(), key=lambda kv: (kv[0].lower(), kv[0])):
        raw = inspect.getattr_static(cls, n, None)
        obj = getattr(cls, n, None)
        params = None
        if kind == "method":
            params = params_of(obj)
        elif kind == "class":
            params = _sig_of_class(obj) if isinstance(obj, type) else None
        m = Entry(e.module, e.qual + [n], kind, params, obj)
        out.append(m)
        if kind == "class" and isinstance(obj, type) and (getattr(obj, "__module__", "") or "").startswith("lance") \
                and raw is not None:
            out.extend(expand_class(m, seen))
    return out


def collect_ast(modname: str, lance_dir: Path) -> List[Entry]:
    """A pylance module read from its source (it cannot be imported here)."""
    rel = modname.split(".")[1:]
    path = lance_dir.joinpath(*rel).with_suffix(".py")
    if not path.exists():
        path = lance_dir.joinpath(*rel, "__init__.py")
    tree = ast.parse(path.read_text())
    allnames = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                allnames = set(ast.literal_eval(node.value))
            except Exception:
                pass
    out = []
    defs = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in sorted(defs, key=lambda n: (n.name.lower(), n.name)):
        if node.name.startswith("_") or (allnames is not None and node.name not in allnames):
            continue
        if isinstance(node, ast.ClassDef):
            init = next((b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
            out.append(Entry(modname, [node.name], "class", ast_params(init, True) if init else None))
            members = []
            for b in node.body:
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and not b.name.startswith("_"):
                    decos = {getattr(d, "id", getattr(d, "attr", "")) for d in b.decorator_list}
                    if decos & {"property", "cached_property"}:
                        members.append(Entry(modname, [node.name, b.name], "data"))
                    elif not any(d in ("setter", "deleter") for d in decos):
                        members.append(Entry(modname, [node.name, b.name], "method",
                                             ast_params(b, "staticmethod" not in decos)))
            seen = set()
            for m in sorted(members, key=lambda m: (m.qual[-1].lower(), m.qual[-1])):
                if m.qual[-1] not in seen:
                    seen.add(m.qual[-1])
                    out.append(m)
        else:
            out.append(Entry(modname, [node.name], "function", ast_params(node, False)))
    return out


def pylance_entries() -> Tuple[List[Entry], Dict[str, str], str]:
    """Every pylance row, in table order; modules read with ast; pylance's version."""
    import lance

    lance_dir = Path(lance.__file__).parent
    via_ast: Dict[str, str] = {}
    by_module: Dict[str, List[Entry]] = {}
    for modname in MODULES:
        if modname in FROM_SOURCE:
            via_ast[modname] = "read from source"
            by_module[modname] = collect_ast(modname, lance_dir)
        else:
            by_module[modname] = collect_live(modname, importlib.import_module(modname))
    # a class's members go under the module that defines it (else its first listing)
    home: Dict[int, Entry] = {}
    for modname in MODULES:
        for e in by_module[modname]:
            if e.kind == "class" and e.obj is not None:
                cur = home.get(id(e.obj))
                defined_here = getattr(e.obj, "__module__", None) == modname
                if cur is None or (defined_here and getattr(e.obj, "__module__", None) != cur.module):
                    home[id(e.obj)] = e
    out: List[Entry] = []
    seen: set = set()
    for modname in MODULES:
        if modname != "lance":
            out.append(Entry(modname.rsplit(".", 1)[0], [modname.rsplit(".", 1)[1]], "module"))
        for e in by_module[modname]:
            out.append(e)
            if e.kind == "class" and e.obj is not None:
                if home.get(id(e.obj)) is e:
                    out.extend(expand_class(e, seen))
                else:
                    e.home = home[id(e.obj)].path
    # module rows may repeat a top-level row (lance.fragment is both): keep the first
    dedup, paths = [], set()
    for e in out:
        if e.path not in paths:
            paths.add(e.path)
            dedup.append(e)
    return dedup, via_ast, lance.__version__


# --- lancer --------------------------------------------------------------------------------


def load_lancer(installed: bool) -> types.ModuleType:
    """``lancer`` from this checkout's python/ (native module from there or installed)."""
    if installed:
        return importlib.import_module("lancer")
    src = REPO / "python"
    here = src / "lancer"
    if not any(here.glob("_lancer*.so")) and not any(here.glob("_lancer*.pyd")):
        spec = importlib.util.find_spec("lancer")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("api_table: no built lancer native module (pip install ./python first)")
        natives = [p for d in spec.submodule_search_locations for p in Path(d).glob("_lancer*")
                   if p.suffix in (".so", ".pyd")]
        if not natives:
            sys.exit("api_table: the installed lancer has no native module")
        nspec = importlib.util.spec_from_file_location("lancer._lancer", natives[0])
        native = importlib.util.module_from_spec(nspec)  # type: ignore[arg-type]
        sys.modules["lancer._lancer"] = native
        nspec.loader.exec_module(native)  # type: ignore[union-attr]
    sys.path.insert(0, str(src))
    for name in [m for m in sys.modules if m == "lancer" or (m.startswith("lancer.") and m != "lancer._lancer")]:
        del sys.modules[name]
    lancer = importlib.import_module("lancer")
    got = Path(lancer.__file__).resolve().parent
    if got != here.resolve():
        sys.exit(f"api_table: imported lancer from {got}, wanted {here}")
    return lancer


def lancer_module(name: str) -> Optional[types.ModuleType]:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def lancer_member(cls: Any, name: str) -> Tuple[bool, Any, str]:
    """(found, object, kind) of a member of a lancer class, fields and annotations too."""
    if not isinstance(cls, type):
        if hasattr(cls, name):
            o = getattr(cls, name)
            return True, o, _kind_of(o) if not isinstance(o, type) else "class"
        return False, None, ""
    for k in cls.__mro__:
        if k is object:
            continue
        if name in vars(k):
            raw = vars(k)[name]
            return True, getattr(cls, name, raw), _member_kind(raw)
        if name in getattr(k, "__annotations__", {}):
            return True, None, "data"
    if isinstance(cls, enum.EnumMeta) and name in cls.__members__:
        return True, cls.__members__[name], "data"
    return False, None, ""


def resolve(e: Entry, lancer: types.ModuleType) -> Tuple[Optional[str], Any, str]:
    """Where ``e`` is in lancer: (path or None, object, kind)."""
    target_mod = "lancer" + e.module[len("lance"):]
    mod = lancer_module(target_mod)
    candidates = []
    if mod is not None:
        candidates.append((target_mod, mod))
    torchy = e.module.startswith("lance.torch") or e.module.startswith("lance.vector")
    if not torchy:
        for alt in ("lancer", "lancer.dataset"):
            if alt != target_mod:
                candidates.append((alt, importlib.import_module(alt)))
    if e.kind == "module":
        m = lancer_module("lancer" + e.path[len("lance"):])
        return (m.__name__, m, "module") if m is not None else (None, None, "")
    for modpath, m in candidates:
        if not hasattr(m, e.qual[0]):
            continue
        obj = getattr(m, e.qual[0])
        kind = _kind_of(obj)
        if modpath != target_mod:  # elsewhere in lancer: only a thing of the same kind
            want = "class" if e.kind == "class" or len(e.qual) > 1 else e.kind
            if kind == "module" or kind != want:
                continue
        ok = True
        for part in e.qual[1:]:
            found, sub, kind = lancer_member(obj, part)
            if not found:
                ok = False
                break
            obj = sub
        if ok:
            return modpath + "." + ".".join(e.qual), obj, kind
        if modpath == target_mod:
            return None, None, ""  # the class is here, the member is not
    return None, None, ""


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, property):
        return obj.fget
    if isinstance(obj, type):
        return obj.__init__ if "__init__" in vars(obj) else None
    return getattr(obj, "__func__", obj)


def _body_facts(fn: Any, var_kw: Optional[str]) -> Tuple[set, bool]:
    """(names read in lancer's function body, whether its **kwargs is read) from its
    source; (empty, True) when there is no Python source."""
    fn = _unwrap(fn)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return set(), True
    node = tree.body[0]
    names = {b.id for b in ast.walk(ast.Module(body=node.body, type_ignores=[]))  # type: ignore[attr-defined]
             if isinstance(b, ast.Name)}
    return names, (var_kw in names) if var_kw else False


def _scanner_classes() -> Tuple[set, set, set]:
    """lancer's scanner: (tuning hints accepted without effect, arguments refused unless
    default, explicit parameters)."""
    ds = importlib.import_module("lancer.dataset")
    explicit = {p.name for p in (params_of(ds.LanceDataset.scanner) or []) if p.kind not in (VAR_KW, VAR_POS)}
    return set(getattr(ds, "_SCAN_HINTS", ())), set(getattr(ds, "_NOT_YET", {})), explicit


def compare(e: Entry, lancer_obj: Any, lancer_kind: str, where: str) -> Tuple[str, List[str]]:
    """(state, findings) for a name both have."""
    findings: List[str] = []
    expected = e.path.replace("lance", "lancer", 1)
    if where != expected:
        findings.append(f"only as `{where}`")
    pk = "callable" if e.kind in ("method", "function") else e.kind
    lk = "callable" if lancer_kind in ("method", "function") else lancer_kind
    if pk == "data" and lk == "callable" and e.kind != "class":
        findings.append("a method in lancer, a property in pylance")
    elif pk == "callable" and lk == "data":
        findings.append("a property in lancer, a method in pylance")
    if e.params is None or pk == "data" or lk == "data" or lancer_kind == "module":
        return ("different" if findings else "same"), findings
    lp = params_of(lancer_obj)
    if lp is None:
        findings.append("lancer's parameters not introspectable")
        return "different", findings
    lnames = {p.name: (i, p) for i, p in enumerate(lp)}
    l_var_kw = next((p.name for p in lp if p.kind == VAR_KW), None)
    l_var_pos = next((p.name for p in lp if p.kind == VAR_POS), None)
    body_names, kwargs_read = _body_facts(lancer_obj, l_var_kw)
    missing, ignored, via_kwargs = [], [], []
    scanner_like = bool({"_SCAN_HINTS", "_NOT_YET"} & body_names) or "scanner" in body_names or \
        (kwargs_read and e.qual[-1] in ("to_table", "to_batches", "head", "scanner"))
    hints, not_yet, scanner_params = _scanner_classes()
    for p in e.params:
        if p.kind == VAR_KW:
            if l_var_kw is None:
                missing.append("**" + p.name)
            continue
        if p.kind == VAR_POS:
            if l_var_pos is None:
                missing.append("*" + p.name)
            continue
        if p.name in lnames:
            continue
        if l_var_kw is None:
            missing.append(p.name)
        elif not kwargs_read:
            ignored.append(p.name)
        else:
            via_kwargs.append(p.name)
    if missing:
        findings.append("lacks " + ", ".join(missing))
    if ignored:
        findings.append("only through **kwargs, never read (ignored): " + ", ".join(ignored))
    if via_kwargs:
        if scanner_like:
            groups: Dict[str, List[str]] = {}
            for n in via_kwargs:
                if n in scanner_params:
                    g = "passed to the scanner"
                elif n in not_yet:
                    g = "refused unless default"
                elif n in hints:
                    g = "accepted, no effect"
                elif n == "order_by":
                    g = "honoured"
                else:
                    g = "TypeError"
                groups.setdefault(g, []).append(n)
            findings.append("through **kwargs: " + "; ".join(f"{', '.join(v)} ({g})" for g, v in groups.items()))
        else:
            findings.append("only through **kwargs: " + ", ".join(via_kwargs))
    # kinds, positions and literal defaults of the names both have
    ppos = [p.name for p in e.params if p.kind in (POS_ONLY, POS)]
    lpos = [p.name for p in lp if p.kind in (POS_ONLY, POS)]
    kwonly, moved, defaults = [], [], []
    for i, n in enumerate(ppos):
        if n not in lnames:
            continue
        lparam = lnames[n][1]
        if lparam.kind == KW:
            kwonly.append(n)
        elif n in lpos and lpos.index(n) != i:
            moved.append(f"{n} ({i + 1} in pylance, {lpos.index(n) + 1} in lancer)")
    for p in e.params:
        if p.name in lnames:
            lparam = lnames[p.name][1]
            a, b = p.default, lparam.default
            if a is not COMPLEX and b is not COMPLEX and a is not NO_DEFAULT and b is not NO_DEFAULT \
                    and a is not None and b is not None and (a != b or type(a) is not type(b)):
                defaults.append(f"{p.name} ({a!r} in pylance, {b!r} in lancer)")
            elif a is not NO_DEFAULT and b is NO_DEFAULT:
                defaults.append(f"{p.name} (optional in pylance, required in lancer)")
    if kwonly:
        findings.append("keyword-only in lancer: " + ", ".join(kwonly))
    if l_var_pos is None and len(lpos) < len(ppos) and any(n not in lnames for n in ppos[len(lpos):]):
        findings.append(f"takes {len(lpos)} positional argument{'s' if len(lpos) != 1 else ''} (pylance {len(ppos)})")
    if moved:
        findings.append("another position: " + "; ".join(moved))
    if defaults:
        findings.append("other default: " + "; ".join(defaults))
    unused = [p.name for p in e.params if p.name in lnames and lnames[p.name][1].kind not in (VAR_KW, VAR_POS)
              and body_names and p.name not in body_names]
    state = "different" if findings else "same"
    if unused and e.kind != "class":
        findings.append("accepted, never read: " + ", ".join(unused))
    return state, findings


def note_for(path: str, notes: Dict[str, str]) -> Optional[str]:
    if path in notes:
        return notes[path]
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        key = ".".join(parts[:i]) + ".*"
        if key in notes:
            return notes[key]
    return None


@dataclasses.dataclass
class Row:
    path: str
    state: str
    note: str
    section: str


def rows(installed: bool) -> Tuple[List[Row], int, Dict[str, str], str]:
    """The table's rows; how many members of classes lancer lacks were folded into
    their class's row; modules read with ast; pylance's version."""
    entries, via_ast, version = pylance_entries()
    lancer = load_lancer(installed)
    out: List[Row] = []
    folded_total = 0
    skip_under: Optional[str] = None
    for i, e in enumerate(entries):
        if skip_under is not None and e.path.startswith(skip_under):
            continue
        skip_under = None
        where, obj, kind = resolve(e, lancer)
        if where is None:
            state, findings = "missing", []
        else:
            state, findings = compare(e, obj, kind, where)
        if state == "same" and e.params is None and e.kind in ("class", "function", "method") \
                and not isinstance(e.obj, enum.EnumMeta) and not _is_typeddict(e.obj):
            findings.append("pylance's parameters not introspectable")
        hands = [note_for(e.path, NOTES) or (note_for(e.home, NOTES) if e.home else None)]
        if state == "missing":
            why = note_for(e.path, WHY) or (note_for(e.home, WHY) if e.home else None)
            hands.append(why or "why: not examined")
        parts = findings + [h for h in hands if h]
        if e.home is not None and state == "missing":
            parts.append(f"members under `{e.home}`")
        if state == "missing" and e.kind == "class":
            members = [m for m in entries[i + 1:] if m.path.startswith(e.path + ".")]
            if members:
                skip_under = e.path + "."
                folded_total += len(members)
                parts.append(f"its {len(members)} member{'s' if len(members) > 1 else ''} not listed")
        out.append(Row(e.path, state, "; ".join(p for p in parts if p), section_of(e)))
    known = {e.path for e in entries}
    stale = sorted(k for k in [*WHY, *NOTES] if k not in known and not (k.endswith(".*") and any(
        p.startswith(k[:-1]) for p in known)))
    if stale:
        print("api_table: notes for names pylance does not have: " + ", ".join(stale), file=sys.stderr)
    return out, folded_total, via_ast, version


def section_of(e: Entry) -> str:
    if e.kind == "module":
        full = ".".join([e.module] + e.qual)
        return full if full in MODULES else e.module
    return e.module


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def render(installed: bool) -> str:
    table, folded, via_ast, version = rows(installed)
    counts = {"same": 0, "different": 0, "missing": 0}
    per_mod: Dict[str, Dict[str, int]] = {m: {"same": 0, "different": 0, "missing": 0} for m in MODULES}
    for r in table:
        counts[r.state] += 1
        per_mod[r.section][r.state] += 1
    lines = [
        HEADING,
        "",
        f"Generated by `scripts/api_table.py` from pylance {version} (`import lance`) and this",
        "checkout's `python/lancer`: regenerate with `python scripts/api_table.py --write`, check",
        "that this file is current with `python scripts/api_table.py --check` (exits 1 if not).",
        "Every public top-level name of `lance`, the public names of its submodules, and the",
        "public methods and properties of their classes, each looked up at the same path under",
        "`lancer`. **same**: exists with every parameter pylance names (same kind, position and",
        "literal default); **different**: exists, but parameters are missing or only reach a",
        "`**kwargs`, sit elsewhere or default otherwise, or the name lives at another path;",
        "**missing**: no such name. \"never read (ignored)\": lancer accepts the argument into a",
        "`**kwargs` it never looks at. Issues: 41 Python API, 42 HNSW / multivector / batched",
        "queries, 43 distributed writes and compaction, 44 blobs / JSON / Map / 2.0 writes.",
    ]
    if via_ast:
        mods = ", ".join(f"`{m}`" for m in sorted(via_ast))
        lines += ["", f"Read from pylance's source with `ast` (they import torch / tqdm): {mods}."]
    total = sum(counts.values())
    lines += [
        "",
        f"**{total} names: {counts['same']} same, {counts['different']} different, {counts['missing']} missing** "
        f"(and {folded} members of the missing classes, folded into their class's row).",
        "",
        "| module | same | different | missing |",
        "|---|---:|---:|---:|",
    ]
    for sec, c in per_mod.items():
        lines.append(f"| `{sec}` | {c['same']} | {c['different']} | {c['missing']} |")
    lines += ["", "| name | state | note |", "|---|---|---|"]
    for r in table:
        lines.append(f"| `{r.path}` | {r.state} | {_cell(r.note)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="exit 1 if python/API.md is stale")
    g.add_argument("--write", action="store_true", help="write the table to python/API.md")
    ap.add_argument("--installed", action="store_true", help="use the installed lancer, not this checkout's")
    args = ap.parse_args()
    section = render(args.installed)
    if not (args.check or args.write):
        sys.stdout.write(section)
        return 0
    current = API.read_text() if API.exists() else ""
    if args.check:
        if current.rstrip("\n") == section.rstrip("\n"):
            return 0
        import difflib

        sys.stdout.writelines(difflib.unified_diff(
            current.rstrip("\n").splitlines(True), section.rstrip("\n").splitlines(True),
            "python/API.md", "scripts/api_table.py"))
        sys.stdout.flush()
        print("api_table: python/API.md is stale: run python scripts/api_table.py --write",
              file=sys.stderr)
        return 1
    API.write_text(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
