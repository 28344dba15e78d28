"""Two-phase (distributed) commits, as pylance 14's: ``LanceOperation`` (the operations a
driver commits) and ``LanceDataset.commit`` (mixed into :class:`lancer.LanceDataset`).

Workers write fragments with :func:`lancer.fragment.write_fragments` and ship their
``FragmentMetadata.to_json()``; one driver commits them in one operation. The commit
goes through the engine's optimistic concurrency (a concurrent commit is rebased over
or refused with ``CommitConflictError`` as for a local write); every file a fragment
names is checked first and a missing or altered one is refused naming it.
"""

from __future__ import annotations

import json
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pyarrow as pa

from . import _lancer
from ._bases import base_tuples
from ._segments import _index_text
from ._util import _check_arguments, _DatasetBase, _open, _options, _uri


class LanceOperation:
    """The operations :meth:`LanceDataset.commit` commits (pylance 14's names and
    fields)."""

    class BaseOperation:
        """Any operation."""

    @dataclass
    class Append(BaseOperation):
        """Adds ``fragments`` (ids assigned at commit)."""

        fragments: List[Any]

    @dataclass
    class Overwrite(BaseOperation):
        """Replaces the dataset (or creates it) with ``fragments`` of ``new_schema``."""

        new_schema: Any
        fragments: List[Any]
        initial_bases: Optional[List[Any]] = None

    @dataclass
    class Restore(BaseOperation):
        """Makes ``version`` the latest again (a new version holding its contents)."""

        version: int

    @dataclass
    class Delete(BaseOperation):
        """Fragments with new deletion files (``updated_fragments``) and fragments
        removed whole (``deleted_fragment_ids``); ``predicate`` is recorded."""

        updated_fragments: List[Any]
        deleted_fragment_ids: List[int]
        predicate: str

    @dataclass
    class RewriteGroup:
        """Old fragments and the new ones holding their rows."""

        old_fragments: List[Any]
        new_fragments: List[Any]

    @dataclass
    class RewrittenIndex:
        """An index segment remapped by a rewrite (old and new uuid)."""

        old_id: str
        new_id: str
        new_details_type_url: str
        new_details_value: bytes
        new_index_version: int

    @dataclass
    class Rewrite(BaseOperation):
        """Groups of fragments replaced by rewritten ones (compaction)."""

        groups: List[Any]
        rewritten_indices: List[Any] = field(default_factory=list)

    @dataclass
    class CreateIndex(BaseOperation):
        """Index segments added and removed."""

        new_indices: List[Any]
        removed_indices: List[Any]

    @dataclass
    class Merge(BaseOperation):
        """Every fragment (with new columns' files) and the schema after the merge."""

        fragments: List[Any]
        schema: Any
        preserves_nullability: bool = False


    @dataclass
    class Update(BaseOperation):
        """Rows updated: fragments removed whole, fragments with new deletion files,
        fragments holding the new rows (``MergeInsertBuilder.execute_uncommitted`` makes
        one; ``LanceDataset.commit`` commits it, pylance's too)."""

        removed_fragment_ids: List[int] = field(default_factory=list)
        updated_fragments: List[Any] = field(default_factory=list)
        new_fragments: List[Any] = field(default_factory=list)
        fields_modified: List[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: List[int] = field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: Optional[Dict[int, bytes]] = None

    @dataclass
    class DataReplacementGroup:
        """One fragment's new data file (pylance's): it replaces the fragment's data
        file holding exactly its fields, or is added when none holds them."""

        fragment_id: int
        new_file: Any

    @dataclass
    class DataReplacement(BaseOperation):
        """Column data replaced fragment by fragment (pylance's); every new file holds
        the same fields, the fragment's rows in order."""

        replacements: List[Any]

    @dataclass
    class Project(BaseOperation):
        """Columns dropped, renamed or reordered: the schema after it, a ``LanceSchema``
        whose ids name the dataset's fields (``drop_columns`` / ``alter_columns`` commit
        one; ``LanceDataset.commit`` commits yours)."""

        schema: Any
        preserves_nullability: bool = False

    @dataclass
    class UpdateMap:
        """Updates to a metadata map (``None`` removes a key; ``replace`` replaces the
        whole map)."""

        updates: Dict[str, Optional[str]]
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        """Config and metadata changes (read back from transactions;
        ``update_config`` / ``update_metadata`` commit them)."""

        config_updates: Optional[Any] = None
        table_metadata_updates: Optional[Any] = None
        schema_metadata_updates: Optional[Any] = None
        field_metadata_updates: Optional[Dict[int, Any]] = None

    @dataclass
    class Clone(BaseOperation):
        """A clone or branch of another dataset's version (read back from
        transactions; ``create_branch`` commits one)."""

        is_shallow: bool
        ref_name: Optional[str]
        ref_version: int
        ref_path: str
        branch_name: Optional[str]


@dataclass
class Transaction:
    """A commit's record (pylance 14's ``lance.Transaction``): the version it was read
    at, its operation, its uuid and properties. ``LanceDataset.read_transaction`` /
    ``get_transactions`` read them back; ``LanceDataset.commit`` commits one (its uuid
    and properties recorded as given)."""

    read_version: int
    operation: Any
    uuid: str = field(default_factory=lambda: str(_uuid.uuid4()))
    transaction_properties: Optional[Dict[str, str]] = field(default_factory=dict)


def _schema(s: Any, what: str) -> pa.Schema:
    if isinstance(s, pa.Schema):
        return s
    if hasattr(s, "to_pyarrow"):  # a LanceSchema
        return s.to_pyarrow()
    raise TypeError(f"{what} must be a pyarrow.Schema, not {type(s).__name__}")


def _fragment_text(f: Any) -> str:
    """A fragment description (lancer's or pylance's FragmentMetadata, or its to_json
    dict) as the JSON text the engine reads."""
    if isinstance(f, dict):
        return json.dumps(f)
    if hasattr(f, "to_json"):
        return json.dumps(f.to_json())
    raise TypeError(f"expected a FragmentMetadata, not {type(f).__name__}")


def _data_file_dict(f: Any) -> Dict[str, Any]:
    """A ``DataFile`` (lancer's or pylance's, or its dict) as the engine reads it."""
    if isinstance(f, dict):
        return f
    keys = ("path", "fields", "column_indices", "file_major_version", "file_minor_version",
            "file_size_bytes", "base_id")
    if not all(hasattr(f, k) for k in keys[:5]):
        raise TypeError(f"expected a DataFile, not {type(f).__name__}")
    out = {k: getattr(f, k, None) for k in keys}
    out["fields"] = [int(x) for x in out["fields"]]
    out["column_indices"] = [int(x) for x in out["column_indices"] or []]
    return out


def _fragment_dicts(frags: Any, what: str) -> List[Dict[str, Any]]:
    if not isinstance(frags, (list, tuple)):
        raise TypeError(f"{what} must be a list of FragmentMetadata, not {type(frags).__name__}")
    return [json.loads(_fragment_text(f)) for f in frags]


def _body(operation: Any) -> tuple:
    """(kind, JSON body, schema) of an operation as the engine takes it."""
    op = LanceOperation
    if isinstance(operation, op.Append):
        return "Append", {"fragments": _fragment_dicts(operation.fragments, "Append.fragments")}, None
    if isinstance(operation, op.Overwrite):
        body = {"fragments": _fragment_dicts(operation.fragments, "Overwrite.fragments")}
        if operation.initial_bases:
            body["initial_bases"] = base_tuples(operation.initial_bases, "Overwrite.initial_bases")
        return "Overwrite", body, _schema(operation.new_schema, "Overwrite.new_schema")
    if isinstance(operation, op.Delete):
        return "Delete", {
            "updated_fragments": _fragment_dicts(operation.updated_fragments, "Delete.updated_fragments"),
            "deleted_fragment_ids": [int(i) for i in operation.deleted_fragment_ids],
            "predicate": str(operation.predicate),
        }, None
    if isinstance(operation, op.Rewrite):
        if operation.rewritten_indices:
            raise NotImplementedError("LanceOperation.Rewrite(rewritten_indices=...) is not supported by lancer "
                                      "yet: commit the rewrite without index remapping, then rebuild the index")
        groups = [{"old_fragments": _fragment_dicts(g.old_fragments, "RewriteGroup.old_fragments"),
                   "new_fragments": _fragment_dicts(g.new_fragments, "RewriteGroup.new_fragments")}
                  for g in operation.groups]
        return "Rewrite", {"groups": groups}, None
    if isinstance(operation, op.Merge):
        if operation.preserves_nullability:
            raise NotImplementedError("LanceOperation.Merge(preserves_nullability=True) is not supported by lancer yet")
        return ("Merge", {"fragments": _fragment_dicts(operation.fragments, "Merge.fragments")},
                _schema(operation.schema, "Merge.schema"))
    if isinstance(operation, op.DataReplacement):
        groups = []
        for g in operation.replacements:
            if not hasattr(g, "fragment_id") or not hasattr(g, "new_file"):
                raise TypeError("DataReplacement.replacements holds DataReplacementGroup(fragment_id, new_file), "
                                f"not {type(g).__name__}")
            groups.append({"fragment_id": int(g.fragment_id), "new_file": _data_file_dict(g.new_file)})
        return "DataReplacement", {"replacements": groups}, None
    if isinstance(operation, op.Project):
        if operation.preserves_nullability:
            raise NotImplementedError("LanceOperation.Project(preserves_nullability=True) is not supported by "
                                      "lancer yet: commit it without (a concurrent write then conflicts)")
        schema = operation.schema
        if not hasattr(schema, "fields") or not hasattr(schema, "to_pyarrow"):
            raise TypeError("LanceOperation.Project.schema must be a LanceSchema (LanceSchema.from_pyarrow, "
                            f"or a dataset's lance_schema), not {type(schema).__name__}")
        ids: List[int] = []

        def walk(f: Any) -> None:
            ids.append(int(f.id()))
            for c in f.children():
                walk(c)

        for f in schema.fields():
            walk(f)
        return "Project", {"field_ids": ids}, schema.to_pyarrow()
    if isinstance(operation, op.Update):
        if operation.updated_fragment_offsets:
            raise NotImplementedError("LanceOperation.Update(updated_fragment_offsets=...) is not supported by "
                                      "lancer yet: describe the updated fragments with their deletion files")
        mode = operation.update_mode or "rewrite_rows"
        return "Update", {
            "removed_fragment_ids": [int(i) for i in operation.removed_fragment_ids],
            "updated_fragments": _fragment_dicts(operation.updated_fragments, "Update.updated_fragments"),
            "new_fragments": _fragment_dicts(operation.new_fragments, "Update.new_fragments"),
            "fields_modified": [int(i) for i in operation.fields_modified],
            "fields_for_preserving_frag_bitmap": [int(i) for i in operation.fields_for_preserving_frag_bitmap],
            "update_mode": str(mode),
        }, None
    if isinstance(operation, op.CreateIndex):
        return "CreateIndex", {
            "new_indices": [json.loads(_index_text(i)) for i in operation.new_indices],
            "removed_indices": [json.loads(_index_text(i)) for i in operation.removed_indices],
        }, None
    raise NotImplementedError(f"committing {type(operation).__name__} is not supported by lancer: Append, "
                              "Overwrite, Delete, Rewrite, Merge, Update, Project, DataReplacement or CreateIndex")


class _CommitMixin:
    """``LanceDataset.commit``."""

    @classmethod
    def commit(
        cls,
        base_uri: Any,
        operation: Any,
        read_version: Optional[int] = None,
        commit_lock: Any = None,
        storage_options: Optional[Dict[str, str]] = None,
        enable_v2_manifest_paths: Optional[bool] = None,
        detached: Optional[bool] = False,
        max_retries: int = 20,
        *,
        commit_message: Optional[str] = None,
        enable_stable_row_ids: Optional[bool] = None,
        **kwargs: Any,
    ) -> Any:
        """Commits ``operation`` (a :class:`LanceOperation`) on the dataset at
        ``base_uri`` as read at ``read_version`` (None: the latest; an ``Overwrite``
        may create the dataset) and returns the new version. Fragment ids are
        assigned here; a concurrent commit since ``read_version`` is rebased over or
        refused (``CommitConflictError``) as for a local write. Every data file and
        deletion file the fragments name is checked first: a missing or altered one
        is refused naming it."""
        if commit_lock is not None:
            raise NotImplementedError("commit(commit_lock=...) is not supported by lancer: commits use the "
                                      "store's conditional puts")
        if detached:
            raise NotImplementedError("commit(detached=True) is not supported by lancer yet")
        _check_arguments("commit", kwargs, tuning={"commit_timeout"},
                         refused={"namespace_client": None, "table_id": None,
                                  "namespace_client_managed_versioning": False, "base_store_params": None})
        del max_retries  # (the engine retries lost races itself, up to its own limit)
        if isinstance(base_uri, _DatasetBase) and storage_options is None:
            storage_options = base_uri._storage_options
        txn_uuid = None
        properties = {"__lance_commit_message": str(commit_message)} if commit_message is not None else None
        if isinstance(operation, Transaction):
            if commit_message is not None:
                # (pylance's rule and message)
                raise ValueError("commit_message is not supported when calling commit with a Transaction.  "
                                 "Set the message on the transaction properties instead.")
            read_version = operation.read_version
            txn_uuid = str(operation.uuid)
            properties = {str(k): str(v) for k, v in (operation.transaction_properties or {}).items()} or None
            operation = operation.operation
            if isinstance(operation, LanceOperation.Restore):
                raise NotImplementedError("committing a Transaction of LanceOperation.Restore is not supported by "
                                          "lancer yet: commit the Restore operation itself")
        elif not isinstance(operation, LanceOperation.BaseOperation):
            raise TypeError("operation must be a LanceOperation.BaseOperation or Transaction, "
                            f"got {type(operation)}")
        if isinstance(operation, LanceOperation.Restore):
            # (no read_version needed, as in pylance: the version names what to restore)
            if commit_message is not None:
                raise NotImplementedError("commit(commit_message=...) with LanceOperation.Restore is not "
                                          "supported by lancer yet")

            old = cls(_open(_uri(base_uri), version=int(operation.version), storage_options=storage_options),
                      storage_options)
            old.restore()
            return cls(_open(_uri(base_uri), storage_options=storage_options), storage_options)
        kind, body, schema = _body(operation)
        if read_version is None and kind != "Overwrite":
            # (pylance's rule and message)
            raise ValueError("read_version is required for all operations except Overwrite and Restore")
        inner = _lancer.commit(
            _uri(base_uri), kind, json.dumps(body), schema=schema,
            read_version=None if read_version is None else int(read_version),
            storage_options=_options(storage_options), transaction_properties=properties,
            v2_manifest_paths=True if enable_v2_manifest_paths is None else bool(enable_v2_manifest_paths),
            enable_stable_row_ids=bool(enable_stable_row_ids), uuid=txn_uuid,
        )
        return cls(inner, storage_options)
