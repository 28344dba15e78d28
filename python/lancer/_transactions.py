"""Committed transactions read back and committed in batches, as pylance 14's
``LanceDataset.read_transaction`` / ``get_transactions`` / ``commit_batch`` (mixed into
:class:`lancer.LanceDataset`).

The engine reads each version's transaction file (``lancer::transactions``); its
operation comes back as the :class:`LanceOperation` of the same name with pylance's
fields: fragments as :class:`FragmentMetadata`, schemas as :class:`LanceSchema` (the
field ids the transaction records), index segments as :class:`Index`. Operations
pylance 14 has no class for (``ReserveFragments``, ``UpdateBases``) come back as a bare
``LanceOperation.BaseOperation()``, as pylance returns them.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from . import _lancer
from ._bases import DatasetBasePath
from ._commit import LanceOperation, Transaction
from ._introspect import LanceSchema
from ._lancer import InvalidInputError
from ._segments import _index_from_text
from .fragment import FragmentMetadata


def _update_map(d: Optional[Dict[str, Any]]) -> Any:
    if d is None:
        return None
    return LanceOperation.UpdateMap(dict(d["updates"]), bool(d["replace"]))


def _from_native(text: str, schemas: List[tuple]) -> Transaction:
    doc = json.loads(text)
    op = doc["operation"]
    kind = op.get("kind")
    sch = {key: LanceSchema._from_rows(arrow, rows) for key, arrow, rows in schemas}

    def frags(key: str, src: Optional[Dict[str, Any]] = None) -> List[Any]:
        return [FragmentMetadata.from_json(json.dumps(f)) for f in (src or op)[key]]

    def bases(key: str) -> List[Any]:
        return [DatasetBasePath(b["path"], b["name"], b["is_dataset_root"], b["id"]) for b in op[key]]

    L = LanceOperation
    if kind == "Append":
        operation: Any = L.Append(frags("fragments"))
    elif kind == "Overwrite":
        operation = L.Overwrite(sch["new_schema"], frags("fragments"), bases("initial_bases") or None)
    elif kind == "Delete":
        operation = L.Delete(frags("updated_fragments"), list(op["deleted_fragment_ids"]), op["predicate"])
    elif kind == "CreateIndex":
        operation = L.CreateIndex([_index_from_text(json.dumps(i)) for i in op["new_indices"]],
                                  [_index_from_text(json.dumps(i)) for i in op["removed_indices"]])
    elif kind == "Rewrite":
        groups = [L.RewriteGroup(frags("old_fragments", g), frags("new_fragments", g)) for g in op["groups"]]
        rewritten = [L.RewrittenIndex(r["old_id"], r["new_id"], r["new_details_type_url"] or "",
                                      bytes.fromhex(r["new_details_value"] or ""), int(r["new_index_version"]))
                     for r in op["rewritten_indices"]]
        operation = L.Rewrite(groups, rewritten)
    elif kind == "Merge":
        operation = L.Merge(frags("fragments"), sch["schema"], bool(op["preserves_nullability"]))
    elif kind == "Restore":
        operation = L.Restore(int(op["version"]))
    elif kind == "Update":
        operation = L.Update(list(op["removed_fragment_ids"]), frags("updated_fragments"), frags("new_fragments"),
                             list(op["fields_modified"]), list(op["fields_for_preserving_frag_bitmap"]),
                             op["update_mode"])
    elif kind == "DataReplacement":
        operation = L.DataReplacement([
            L.DataReplacementGroup(int(g["fragment_id"]), FragmentMetadata.from_json(json.dumps(
                {"id": int(g["fragment_id"]), "files": [g["new_file"]], "physical_rows": 0})).files[0])
            for g in op["replacements"]])
    elif kind == "Project":
        operation = L.Project(sch["schema"], bool(op["preserves_nullability"]))
    elif kind == "UpdateConfig":
        fields = op["field_metadata_updates"]
        operation = L.UpdateConfig(
            _update_map(op["config_updates"]), _update_map(op["table_metadata_updates"]),
            _update_map(op["schema_metadata_updates"]),
            None if fields is None else {int(k): _update_map(v) for k, v in fields.items()})
    elif kind == "Clone":
        operation = L.Clone(bool(op["is_shallow"]), op["ref_name"], int(op["ref_version"]), op["ref_path"],
                            op["branch_name"])
    else:
        operation = L.BaseOperation()
    props = doc["transaction_properties"]
    txn = Transaction(int(doc["read_version"]), operation, doc["uuid"])
    if props:
        txn.transaction_properties = dict(props)
    return txn


class _TransactionsMixin:
    """``LanceDataset.read_transaction`` / ``get_transactions`` / ``commit_batch``."""

    def read_transaction(self, version: int) -> Optional[Transaction]:
        """The transaction that made ``version`` (None when that version has no
        transaction file); a version that does not exist raises."""
        got = _lancer.read_transactions(self._inner, version=int(version))
        return None if got[0] is None else _from_native(*got[0])

    def get_transactions(self, recent_transactions: int = 10) -> List[Optional[Transaction]]:
        """The transactions of this version and the ones before it, newest first: at
        least this version's, at most ``recent_transactions``; None for a version
        without a transaction file."""
        got = _lancer.read_transactions(self._inner, recent=int(recent_transactions))
        return [None if t is None else _from_native(*t) for t in got]

    @classmethod
    def commit_batch(
        cls,
        dest: Any,
        transactions: Sequence[Transaction],
        commit_lock: Any = None,
        storage_options: Optional[Dict[str, str]] = None,
        enable_v2_manifest_paths: Optional[bool] = None,
        detached: Optional[bool] = False,
        max_retries: int = 20,
        base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
        commit_timeout: Any = None,
    ) -> Dict[str, Any]:
        """Commits several ``Append`` transactions as one (pylance's rule: append
        transactions only), read at the smallest of their read versions:
        ``{"dataset": the new version, "merged": the Transaction committed}``.
        ``commit_timeout`` tunes nothing here (the engine's commit retries a bounded
        number of times); ``base_store_params`` is refused."""
        del commit_timeout
        if base_store_params is not None:
            raise NotImplementedError("commit_batch(base_store_params=...) is not supported by lancer: "
                                      "pass storage_options")
        transactions = list(transactions)
        if not transactions:
            raise InvalidInputError("No transactions to commit")
        if any(not isinstance(t.operation, LanceOperation.Append) for t in transactions):
            # (pylance's refusal: an OSError naming the rule)
            raise InvalidInputError("Only append transactions are supported in batch commits")
        merged = Transaction(
            read_version=min(int(t.read_version) for t in transactions),
            operation=LanceOperation.Append([f for t in transactions for f in t.operation.fragments]),
            transaction_properties=None,
        )
        ds = cls.commit(dest, merged, commit_lock=commit_lock, storage_options=storage_options,
                                 enable_v2_manifest_paths=enable_v2_manifest_paths, detached=detached,
                                 max_retries=max_retries)
        return {"dataset": ds, "merged": merged}
