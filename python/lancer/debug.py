"""Debug text of a dataset's metadata, as pylance 14's ``lance.debug``:
``format_manifest``, ``format_fragment``, ``format_schema``, ``list_transactions``.

pylance prints its Rust structs' ``Debug`` text; lancer prints the same information
(field ids, types, fragments, data and deletion files, transactions) as the ``Debug``
text of its own structures (the manifest's and transactions' protobuf messages, a
schema tree), so the field names and nesting differ: read it, do not parse it."""

from ._introspect import format_fragment, format_manifest, format_schema, list_transactions

__all__ = ["format_fragment", "format_manifest", "format_schema", "list_transactions"]
