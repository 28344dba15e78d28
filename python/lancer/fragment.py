"""Fragments: a dataset's shards of rows, as pylance 14's ``lance.fragment.LanceFragment``."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

import pyarrow as pa

from . import _lancer
from ._commit import LanceOperation, Transaction
from ._evolve import _udf_parts
from ._introspect import LanceSchema
from ._util import _check_arguments, _indices, _open, _options, _reader, _sql_filter, _uri

if TYPE_CHECKING:
    from ._scanner import LanceScanner
    from .dataset import LanceDataset


def _fragment_of(ds: Any, fragment_id: int) -> "LanceFragment":
    """A pickled fragment found again in its (unpickled) dataset."""
    frag = ds.get_fragment(fragment_id)
    if frag is None:
        raise ValueError(f"Fragment id does not exist: {fragment_id}")
    return frag


class _Given:
    """A function over batches with its output schema declared (as ``batch_udf``
    makes one), for the joins of :meth:`LanceFragment.merge` / ``update_columns``."""

    def __init__(self, output_schema: pa.Schema, func: Any):
        self.output_schema = output_schema
        self.func = func

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return self.func(batch)


class _LastRowJoin:
    """The rows of ``table`` looked up by their ``key`` column as pylance's hash join
    finds them: a null key joins a null key, a key held twice gives its last row; the
    key must be of ``key_type`` (the left side's)."""

    def __init__(self, table: pa.Table, key: str, columns: List[str], key_type: pa.DataType):
        if table.schema.field(key).type != key_type:
            raise ValueError(f"Invalid user input: Index column type mismatch: expected "
                             f"{table.schema.field(key).type}, got {key_type}")
        self._n = table.num_rows
        reverse = pa.array(range(self._n - 1, -1, -1), pa.int64())
        self._keys = table.column(key).combine_chunks().take(reverse)
        self._values = table.select(columns).combine_chunks()

    def lookup(self, left: Any) -> tuple:
        """(the values of ``columns`` for each key of ``left``, nulls where none
        matched; whether each matched)."""
        import pyarrow.compute as pc

        at = pc.index_in(left, value_set=self._keys)
        rows = self._values.take(pc.subtract(pa.scalar(self._n - 1, pa.int64()), at.cast(pa.int64())))
        return rows, pc.is_valid(at)


class LanceFragment:
    """One fragment (a shard of rows in one or more data files, with its deletions)."""

    def __init__(self, ds: "LanceDataset", meta: Dict[str, Any]):
        self._ds = ds
        self._meta = meta

    def __reduce__(self) -> Any:
        # as pylance pickles a fragment: its dataset (pickled as a dataset is) and its id
        return (_fragment_of, (self._ds, self.fragment_id))

    @property
    def fragment_id(self) -> int:
        return int(self._meta["id"])

    @property
    def physical_rows(self) -> int:
        """Rows written, deleted ones included."""
        return int(self._meta["physical_rows"])

    @property
    def num_deletions(self) -> int:
        return int(self._meta["deleted_rows"])

    def count_rows(self, filter: Optional[str] = None) -> int:
        """Live rows (passing ``filter``)."""
        if filter is None:
            return self.physical_rows - self.num_deletions
        return self.scanner(columns=[], filter=filter).count_rows()

    def data_files(self) -> List["DataFile"]:
        """The data files (pylance's ``DataFile`` fields)."""
        return [DataFile(**f) for f in self._meta["files"]]

    def deletion_file(self) -> Optional[str]:
        """The deletion file's path below the dataset root (``_deletions/...``), or
        None when no row of the fragment is deleted."""
        return self._meta.get("deletion_file")

    @property
    def metadata(self) -> "FragmentMetadata":
        """This fragment's description, as pylance's (what ``LanceOperation`` s take)."""
        return FragmentMetadata.from_json(_lancer.fragment_metadata(self._ds._inner, self.fragment_id))

    @staticmethod
    def create(dataset_uri: Any, data: Any, fragment_id: Optional[int] = None,
               schema: Optional[pa.Schema] = None, max_rows_per_group: Optional[int] = 1024,
               progress: Any = None, mode: str = "append", *,
               data_storage_version: Optional[str] = None, use_legacy_format: Optional[bool] = None,
               storage_options: Optional[Dict[str, str]] = None, namespace_client: Any = None,
               table_id: Any = None, session: Any = None) -> "FragmentMetadata":
        """Writes ``data`` as one fragment of the dataset at ``dataset_uri`` (which need
        not exist) and commits nothing, as pylance 14's: its description, with id
        ``fragment_id`` (0 when None), for ``LanceOperation.Append`` / ``Overwrite``."""
        if (namespace_client is None) != (table_id is None):
            raise ValueError("Both 'namespace_client' and 'table_id' must be provided together.")
        if use_legacy_format is not None:
            warnings.warn("use_legacy_format is deprecated, use data_storage_version instead", DeprecationWarning)
            data_storage_version = "legacy" if use_legacy_format else "stable"
        kwargs: Dict[str, Any] = {}
        if namespace_client is not None:
            kwargs.update(namespace_client=namespace_client, table_id=table_id)
        if session is not None:
            kwargs["session"] = session
        frags = write_fragments(data, dataset_uri, schema=schema, mode=mode,
                                max_rows_per_file=(1 << 63) - 1, max_bytes_per_file=(1 << 63) - 1,
                                max_rows_per_group=max_rows_per_group, progress=progress,
                                data_storage_version=data_storage_version,
                                storage_options=storage_options, **kwargs)
        if len(frags) != 1:
            raise ValueError(f"LanceFragment.create wrote {len(frags)} fragments, not one (the data was empty?)")
        frag = frags[0]
        frag.id = 0 if fragment_id is None else int(fragment_id)
        return frag

    def delete(self, predicate: str) -> Optional["FragmentMetadata"]:
        """Deletes this fragment's rows matching the SQL ``predicate`` without
        committing, as pylance's: writes the fragment's new deletion file and returns
        its description for ``LanceOperation.Delete`` (None when no row is left: name
        the fragment in ``deleted_fragment_ids`` then)."""
        text = _sql_filter(predicate, "LanceFragment.delete", self._ds)
        out = _lancer.fragment_delete(self._ds._inner, self.fragment_id, predicate=str(text))
        return None if out is None else FragmentMetadata.from_json(out)

    def delete_rows(self, offsets: Any) -> Optional["FragmentMetadata"]:
        """As :meth:`delete`, the rows at these physical offsets of the fragment."""
        out = _lancer.fragment_delete(self._ds._inner, self.fragment_id, offsets=[int(o) for o in offsets])
        return None if out is None else FragmentMetadata.from_json(out)

    def merge_columns(self, value_func: Any, columns: Optional[List[str]] = None,
                      batch_size: Optional[int] = None, reader_schema: Optional[pa.Schema] = None) -> tuple:
        """Writes new columns for this fragment without committing (pylance's): the
        columns ``value_func`` computes from each batch of the fragment's ``columns``
        (a ``batch_udf`` or a function returning a RecordBatch / DataFrame; deleted rows
        included, as pylance's), as a new data file. Returns the fragment's new
        ``FragmentMetadata`` and the dataset's schema with the new columns
        (``LanceSchema``): commit them, with every other fragment of a distributed job,
        as ``LanceOperation.Merge``. SQL expressions and readers are refused."""
        if isinstance(value_func, dict):
            raise NotImplementedError("merge_columns with SQL expressions is not supported by lancer yet: "
                                      "give a function over batches")
        if reader_schema is not None or not callable(value_func):
            raise NotImplementedError("merge_columns with a reader is not supported by lancer yet: "
                                      "give a function over batches")
        schema, call, step = _udf_parts(self._ds, value_func, columns, batch_size)
        text = _lancer.fragment_add_columns_udf(self._ds._inner, self.fragment_id, schema, call, columns, step)
        full = pa.schema(list(self._ds.schema) + list(schema))
        return FragmentMetadata.from_json(text), LanceSchema.from_pyarrow(full)

    def merge(self, data_obj: Any, left_on: str, right_on: Optional[str] = None,
              schema: Optional[pa.Schema] = None) -> tuple:
        """Adds the columns of ``data_obj`` (any input ``write_dataset`` takes) to this
        fragment without committing, as pylance 14's: a left join of the fragment's rows
        (deleted ones included) on ``left_on`` with the data's ``right_on`` (default
        ``left_on``) — rows without a match get nulls, a null key joins a null key, a key
        the data holds twice takes its last row, key types must be the same. Returns the
        fragment's new ``FragmentMetadata`` and the dataset's schema with the new columns:
        commit every fragment's as one ``LanceOperation.Merge``."""

        right_on = right_on or left_on
        table = _reader(data_obj, schema).read_all()
        if table.num_rows == 0:
            raise ValueError("Invalid user input: HashJoiner: No data")
        if right_on not in table.column_names:
            raise ValueError(f"Invalid user input: Column {right_on} does not exist in the right side fragment")
        if left_on not in self._ds.schema.names:
            raise ValueError(f"Invalid user input: Column {left_on} does not exist in the left side fragment")
        new = [c for c in table.column_names if c != right_on]
        for c in new:
            if c in self._ds.schema.names:
                raise ValueError(f"Invalid user input: Column {c} exists in left side fragment and right side dataset")
        join = _LastRowJoin(table, right_on, new, self._ds.schema.field(left_on).type)
        out_schema = pa.schema([table.schema.field(c) for c in new])

        def joined(batch: pa.RecordBatch) -> pa.RecordBatch:
            rows, _ = join.lookup(batch.column(left_on))
            return pa.RecordBatch.from_arrays([rows.column(c).combine_chunks() for c in new], schema=out_schema)

        return self.merge_columns(_Given(out_schema, joined), columns=[left_on])

    def update_columns(self, data_obj: Any, left_on: str = "_rowid", right_on: Optional[str] = None,
                       schema: Optional[pa.Schema] = None, *, with_offsets: bool = False) -> tuple:
        """New values for existing columns of this fragment, not committed, as pylance
        14's: a left join of the fragment's rows (deleted ones included) on ``left_on``
        (default ``_rowid``) with the data's ``right_on`` (default ``left_on``); a
        matched row takes the data's values of its other columns, the others keep
        theirs (a key the data holds twice: its last row). The new values go to a new
        data file and the old copies' fields are tombstoned. Returns the fragment's new
        ``FragmentMetadata`` and the modified field ids, for ``LanceOperation.Update(
        updated_fragments=, fields_modified=)``. ``with_offsets=True`` is refused."""
        import pyarrow.compute as pc

        if with_offsets:
            raise NotImplementedError("LanceFragment.update_columns(with_offsets=True) is not supported by lancer yet")
        right_on = right_on or left_on
        table = _reader(data_obj, schema).read_all()
        if right_on not in table.column_names:
            raise ValueError(f"Invalid user input: Column {right_on} does not exist in the right side fragment")
        names = self._ds.schema.names
        columns = [c for c in table.column_names if c != right_on]
        for c in columns:
            if c not in names:
                raise ValueError(f"Invalid user input: Column {c} in right side fragment does not exist "
                                 "in left side fragment")
        out_schema = pa.schema([self._ds.schema.field(c) for c in columns])
        for c in columns:
            theirs, ours = table.schema.field(c).type, out_schema.field(c).type
            if theirs != ours:
                raise RuntimeError(f"LanceError(Schema): Attempt to project incompatible fields: "
                                   f"Field(name={c}, type={ours}) and Field(name={c}, type={theirs})")
        by_rowid = left_on == "_rowid"
        if by_rowid:
            if self._ds.has_stable_row_ids:
                raise NotImplementedError("LanceFragment.update_columns on _rowid of a dataset with stable "
                                          "row ids is not supported by lancer yet: join on a column")
            key_type = pa.uint64()
        elif left_on not in names:
            raise ValueError(f"Invalid user input: Column {left_on} does not exist in the left side fragment")
        else:
            key_type = self._ds.schema.field(left_on).type
        join = _LastRowJoin(table, right_on, columns, key_type)
        first_row = self.fragment_id << 32

        def joined(batch: pa.RecordBatch) -> pa.RecordBatch:
            if by_rowid:
                left = pa.array(range(first_row, first_row + batch.num_rows), pa.uint64())
            else:
                left = batch.column(left_on)
            rows, matched = join.lookup(left)
            return pa.RecordBatch.from_arrays(
                [pc.if_else(matched, rows.column(c).combine_chunks(), batch.column(c)) for c in columns],
                schema=out_schema)

        read = columns if by_rowid else list(dict.fromkeys([left_on] + columns))
        schema_, call, step = _udf_parts(self._ds, _Given(out_schema, joined), read, None)
        text, modified = _lancer.fragment_update_columns_udf(self._ds._inner, self.fragment_id, schema_, call,
                                                            read, step)
        return FragmentMetadata.from_json(text), list(modified)

    def scanner(self, **kwargs: Any) -> LanceScanner:
        return self._ds.scanner(fragments=[self], **kwargs)

    def to_table(self, **kwargs: Any) -> pa.Table:
        return self.scanner(**kwargs).to_table()

    def to_batches(self, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(**kwargs).to_batches()

    def to_pandas(self, **kwargs: Any) -> Any:
        return self.to_table(**kwargs).to_pandas()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The fragment's first ``num_rows`` live rows."""
        return self.scanner(limit=num_rows, **kwargs).to_table()

    @property
    def schema(self) -> pa.Schema:
        return self._ds.schema

    @property
    def physical_schema(self) -> pa.Schema:
        # pylance 14 raises this too (LanceFragment overrides pyarrow's property)
        raise NotImplementedError("Not implemented yet for LanceFragment")

    @property
    def partition_expression(self) -> pa.Schema:
        # pylance 14 raises this too
        raise NotImplementedError("Not implemented yet for LanceFragment")

    def validate(self) -> None:
        """Checks this fragment alone (its data files are there, of the recorded sizes
        and row counts; its deletion file reads): damage raises
        ``lancer.CorruptDataError`` (an ``OSError``) naming each problem."""
        problems = _lancer.validate_fragment(self._ds._inner, self.fragment_id)
        if problems:
            raise _lancer.CorruptDataError("; ".join(problems))

    def take(self, indices: Any, columns: Any = None) -> pa.Table:
        """Rows at offsets among this fragment's live rows (deleted rows skipped, as
        pylance counts them), in the order given."""
        base = 0
        for f in self._ds.get_fragments():
            if f.fragment_id == self.fragment_id:
                break
            base += f.count_rows()
        offsets = _indices(indices)
        if isinstance(offsets, bytes):
            import numpy as np

            offsets = np.frombuffer(offsets, dtype="<i8").tolist()
        live = self.count_rows()
        bad = [i for i in offsets if i < 0 or i >= live]
        if bad:
            # (pylance raises OSError for an offset past the fragment, as here)
            raise OSError(f"row {bad[0]} of fragment {self.fragment_id}, which has {live} live rows")
        return self._ds.take([base + int(i) for i in offsets], columns)

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"


@dataclass
class DataFile:
    """One data file of a fragment: its ``path`` below ``data/``, the field ids it
    holds and their columns in the file, its format version, its size in bytes (0 when
    the manifest does not record it) and the base it lives in (None: the dataset's
    own)."""

    path: str
    fields: List[int]
    column_indices: Optional[List[int]] = None
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: Optional[int] = None
    base_id: Optional[int] = None

    def field_ids(self) -> List[int]:
        """The field ids (``fields``)."""
        return list(self.fields)

    @classmethod
    def create(cls, dataset: "LanceDataset", path: str, *, base_id: Optional[int] = None) -> "DataFile":
        """The description of a Lance file already written in ``dataset``'s data
        directory (``path``: its name there, one path segment — "/" and the characters
        object stores escape are percent-encoded, as pylance looks it up; with ``base_id``, in that base's — its
        ``data/`` when the base is a dataset root), as pylance 14's, for operations such
        as ``DataReplacement``: its columns matched by name to the dataset's fields
        (``fields``: the ids of the leaf fields it holds, in the file's order;
        ``column_indices`` 0, 1, ...), its format version and size. A file column the
        dataset lacks, or a struct whose fields differ from the dataset's, is a
        ValueError (types are not compared, as pylance). The size is read for local
        files only (None on object stores)."""
        directory = dataset.uri.rstrip("/") + "/data"
        if base_id is not None:
            base = dataset.base_paths().get(base_id)
            if base is None:
                raise _lancer.InvalidInputError(f"Invalid user input: base_path id {base_id} not found")
            directory = base.path.rstrip("/") + ("/data" if base.is_dataset_root else "")
        full = f"{directory}/{_store_name(path)}"
        local = "://" not in full or full.startswith("file://")
        local_path = full[len("file://"):] if full.startswith("file://") else full
        if local and not os.path.exists(local_path):
            raise _lancer.InvalidInputError(f"Not found: {full}")
        reader = _lancer.FileReader(full, dataset._storage_options, None)
        major, minor = reader.version()
        fields = _leaf_ids(_lancer.lance_fields(dataset._inner), reader.schema())
        return cls(path, fields, list(range(len(fields))), major, minor,
                   os.path.getsize(local_path) if local else None, base_id)


# what the object store's paths percent-encode in a name (pylance 14 looks a DataFile's
# name up encoded: "sub/x.lance" is the file "sub%2Fx.lance"), besides control bytes and
# non-ASCII bytes
_ENCODED = set(b'/\\{^}%`]">[~<#|?*')


def _store_name(name: str) -> str:
    """``name`` as one path segment of the store: the bytes above percent-encoded."""
    return "".join(f"%{b:02X}" if b < 0x20 or b >= 0x7F or b in _ENCODED else chr(b) for b in name.encode())


def _file_children(f: pa.Field) -> List[pa.Field]:
    """A file column's child fields as Lance schemas count them (a fixed-size list of
    primitive values is one leaf)."""
    t = f.type
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return [t.value_field]
    if pa.types.is_fixed_size_list(t):
        v = t.value_type
        nested = pa.types.is_struct(v) or pa.types.is_list(v) or pa.types.is_large_list(v)
        return [t.value_field] if nested else []
    if pa.types.is_map(t):
        return [pa.field("entries", pa.struct([t.key_field, t.item_field]), False)]
    return []


def _leaf_ids(rows: List[tuple], file_schema: pa.Schema) -> List[int]:
    """The dataset's leaf field ids a file of ``file_schema`` holds, in the file's order
    (``rows``: the native ``lance_fields`` rows: id, parent id, name, ..., child ids)."""
    by_id = {r[0]: r for r in rows}
    top = {r[2]: r for r in rows if r[1] == -1}
    out: List[int] = []

    def walk(row: tuple, f: pa.Field, path: str) -> None:
        kids, file_kids = row[-1], _file_children(f)
        if not kids:
            out.append(row[0])
            return
        if len(kids) != len(file_kids):
            raise _lancer.InvalidInputError(
                f"Invalid user input: Schema mismatch: field '{path}' has {len(kids)} children in dataset schema "
                f"but {len(file_kids)} children in file schema")
        for kid, fk in zip(kids, file_kids):
            child = by_id[kid]
            if child[2] != fk.name:
                raise _lancer.InvalidInputError(
                    f"Invalid user input: Schema mismatch: expected field '{path}.{child[2]}' but file has '{fk.name}'")
            walk(child, fk, f"{path}.{child[2]}")

    for f in file_schema:
        if f.name not in top:
            raise _lancer.InvalidInputError(f"Invalid user input: Schema mismatch: file has extra field '{f.name}'")
        walk(top[f.name], f, f.name)
    return out


_DataFile = DataFile  # (the old private name)


# --- two-phase (distributed) writes: fragment descriptions, as pylance 14's ------------


@dataclass
class DeletionFile:
    """A fragment's deletion file, as pylance 14's ``lance.fragment.DeletionFile``:
    ``_deletions/{fragment id}-{read_version}-{id}.{arrow|bin}``; ``file_type`` is
    ``"array"`` or ``"bitmap"``; ``num_deleted_rows`` None when unknown."""

    read_version: int
    id: int
    file_type: str = "array"
    num_deleted_rows: Optional[int] = None
    base_id: Optional[int] = None

    def asdict(self) -> Dict[str, Any]:
        return dict(read_version=self.read_version, id=self.id, file_type=self.file_type,
                    num_deleted_rows=self.num_deleted_rows, base_id=self.base_id)

    def json(self) -> str:
        """The compact JSON pylance's ``DeletionFile.json()`` gives."""
        return json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> "DeletionFile":  # noqa: A002 (pylance's parameter name)
        import json as _json

        return DeletionFile(**_json.loads(json))

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """The file's path below the dataset root (under ``base_uri`` when given)."""
        suffix = "bin" if self.file_type == "bitmap" else "arrow"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{suffix}"
        return f"{base_uri.rstrip('/')}/{rel}" if base_uri else rel


class RowIdMeta:
    """A fragment's stable row ids as pylance 14's ``RowIdMeta`` holds them: the
    serialized sequence inline (``{"Inline": [bytes]}``) or where it is stored
    (``{"External": {"path", "offset", "size"}}``)."""

    def __init__(self, value: Dict[str, Any]):
        self._value = dict(value)

    @staticmethod
    def from_dict(dict: Dict[str, Any]) -> "RowIdMeta":  # noqa: A002 (pylance's parameter name)
        return RowIdMeta(dict)

    @staticmethod
    def from_json(json: str) -> "RowIdMeta":  # noqa: A002 (pylance's parameter name)
        import json as _json

        return RowIdMeta(_json.loads(json))

    def asdict(self) -> Dict[str, Any]:
        return dict(self._value)

    def json(self) -> str:
        return json.dumps(self._value, separators=(",", ":"))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, RowIdMeta) and other._value == self._value

    def __repr__(self) -> str:
        return f"RowIdMeta({self._value!r})"

    def __reduce__(self) -> Any:
        return (RowIdMeta, (self._value,))


class RowDatasetVersionMeta:
    """The versions a fragment's rows were created / last updated at, as pylance 14's
    ``RowDatasetVersionMeta`` serializes them (``{"inline": [bytes]}``)."""

    def __init__(self, value: Dict[str, Any]):
        self._value = dict(value)

    @staticmethod
    def from_json(json: str) -> "RowDatasetVersionMeta":  # noqa: A002 (pylance's parameter name)
        import json as _json

        return RowDatasetVersionMeta(_json.loads(json))

    def asdict(self) -> Dict[str, Any]:
        return dict(self._value)

    def json(self) -> str:
        import json as _json

        return _json.dumps(self._value, separators=(",", ":"))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, RowDatasetVersionMeta) and other._value == self._value

    def __repr__(self) -> str:
        return f"RowDatasetVersionMeta({self._value!r})"

    def __reduce__(self) -> Any:
        return (RowDatasetVersionMeta, (self._value,))


def _data_file_json(f: DataFile) -> Dict[str, Any]:
    # pylance's order: the path last
    return dict(fields=list(f.fields), column_indices=list(f.column_indices or []),
                file_major_version=f.file_major_version, file_minor_version=f.file_minor_version,
                file_size_bytes=f.file_size_bytes, base_id=f.base_id, path=f.path)


@dataclass
class FragmentMetadata:
    """A fragment's description, as pylance 14's ``lance.fragment.FragmentMetadata``:
    what ``write_fragments`` returns and ``LanceOperation`` s commit. ``to_json`` gives
    pylance's dict (``json.dumps`` it to ship it), ``from_json`` takes that text: a
    pylance driver commits fragments lancer wrote, and the other way round. Its ``id``
    is 0 until committed (ids are assigned by the commit)."""

    id: int
    files: List[DataFile]
    physical_rows: Optional[int]  # None for a fragment a write has begun, as pylance's
    deletion_file: Optional[DeletionFile] = None
    row_id_meta: Optional[RowIdMeta] = None
    created_at_version_meta: Optional[RowDatasetVersionMeta] = None
    last_updated_at_version_meta: Optional[RowDatasetVersionMeta] = None
    overlays: List[Any] = field(default_factory=list)

    @property
    def num_deletions(self) -> int:
        """Rows deleted from this fragment."""
        return 0 if self.deletion_file is None else int(self.deletion_file.num_deleted_rows or 0)

    @property
    def num_rows(self) -> int:
        """Rows after deletions."""
        return self.physical_rows - self.num_deletions

    def data_files(self) -> List[DataFile]:
        warnings.warn("FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning)
        return self.files

    def to_json(self) -> Dict[str, Any]:
        """pylance's JSON-ready dict (every member; absent ones None)."""
        if self.overlays:
            raise NotImplementedError("data overlay files (pylance 14's unstable overlays) are not supported "
                                      "by lancer")
        return dict(
            id=self.id,
            files=[_data_file_json(f) for f in self.files],
            overlays=[],
            physical_rows=self.physical_rows,
            deletion_file=None if self.deletion_file is None else self.deletion_file.asdict(),
            row_id_meta=None if self.row_id_meta is None else self.row_id_meta.asdict(),
            created_at_version_meta=(None if self.created_at_version_meta is None
                                     else json.loads(self.created_at_version_meta.json())),
            last_updated_at_version_meta=(None if self.last_updated_at_version_meta is None
                                          else json.loads(self.last_updated_at_version_meta.json())),
        )

    @staticmethod
    def from_json(json_data: str) -> "FragmentMetadata":
        """The fragment ``json.dumps(fragment.to_json())`` describes (pylance's text too)."""
        return FragmentMetadata._from_dict(json.loads(json_data))

    @staticmethod
    def _from_dict(d: Dict[str, Any]) -> "FragmentMetadata":
        if d.get("overlays"):
            raise NotImplementedError("fragment descriptions with data overlay files (pylance 14's unstable "
                                      "overlays) are not supported by lancer")
        deletion = d.get("deletion_file")
        rows = d.get("row_id_meta")
        created = d.get("created_at_version_meta")
        updated = d.get("last_updated_at_version_meta")
        return FragmentMetadata(
            id=int(d["id"]),
            files=[_data_file_from(f) for f in d["files"]],
            physical_rows=None if d.get("physical_rows") is None else int(d["physical_rows"]),
            deletion_file=None if deletion is None else DeletionFile(**deletion),
            row_id_meta=None if rows is None else RowIdMeta(rows),
            created_at_version_meta=None if created is None else RowDatasetVersionMeta(created),
            last_updated_at_version_meta=None if updated is None else RowDatasetVersionMeta(updated),
        )


def _data_file_from(d: Dict[str, Any]) -> DataFile:
    d = dict(d)
    if "_path" in d:
        d["path"] = d.pop("_path")
    return DataFile(**d)


def write_fragments(
    data: Any,
    dataset_uri: Any,
    schema: Optional[pa.Schema] = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = 1024 * 1024,
    max_rows_per_group: Optional[int] = 1024,
    max_bytes_per_file: int = 90 * 1024 * 1024 * 1024,
    progress: Any = None,
    data_storage_version: Optional[str] = None,
    use_legacy_format: Optional[bool] = None,
    storage_options: Optional[Dict[str, str]] = None,
    enable_stable_row_ids: bool = False,
    **kwargs: Any,
) -> List[FragmentMetadata]:
    """Writes ``data`` as data files of the dataset at ``dataset_uri`` (which need not
    exist) and commits nothing: the first phase of a distributed write, as pylance 14's.
    Returns the fragments' descriptions (``id`` 0); commit them with
    ``LanceDataset.commit(uri, LanceOperation.Append(fragments), read_version=...)``
    (or ``Overwrite``). ``mode``: ``append`` fits the data to an existing dataset's
    schema, ``create`` / ``overwrite`` write the data's own schema. Until committed
    the files are invisible; ``cleanup_old_versions`` removes them once older than its
    limit for unverified files."""
    if use_legacy_format:
        raise NotImplementedError("Lancer writes data storage versions 2.0, 2.1 and 2.2, not the legacy format")
    if progress is not None:
        raise NotImplementedError("write_fragments(progress=...) is not supported by lancer yet")
    if enable_stable_row_ids:
        raise NotImplementedError("write_fragments(enable_stable_row_ids=True) is not supported by lancer: "
                                  "stable row ids are set when the dataset is created (commit(enable_stable_row_ids=))")
    # new data files spread over the dataset's registered bases, one file each in turn
    target_bases = kwargs.pop("target_bases", None)
    if target_bases is not None and (isinstance(target_bases, str)
                                     or not all(isinstance(t, str) for t in target_bases)):
        raise TypeError("target_bases must be a list of base names or paths (str)")
    target_all_bases = kwargs.pop("target_all_bases", None)
    _check_arguments("write_fragments", kwargs, tuning={"data_cache_bytes", "max_page_bytes"},
                     refused={"initial_bases": None,
                              "base_store_params": None, "external_blob_mode": "reference",
                              "allow_external_blob_outside_bases": False, "namespace_client": None,
                              "table_id": None, "session": None})
    del max_rows_per_group  # (the files' layout only)
    version = data_storage_version or "2.2"
    if str(version).lower() == "stable":
        version = "2.2"
    reader = _reader(data, schema)
    read_version = None
    if return_transaction:
        # the version the fragments were written against (0: no dataset yet), as pylance
        try:
            read_version = _open(_uri(dataset_uri), storage_options=storage_options).version
        except (FileNotFoundError, ValueError):
            read_version = 0
    texts = _lancer.write_fragments(reader, _uri(dataset_uri), str(mode), int(max_rows_per_file),
                                    int(max_bytes_per_file), str(version), _options(storage_options),
                                    target_bases=list(target_bases) if target_bases else None,
                                    target_all_bases=None if target_all_bases is None else bool(target_all_bases))
    frags = [FragmentMetadata.from_json(t) for t in texts]
    if not return_transaction:
        return frags
    if mode == "append" and read_version:
        return Transaction(read_version, LanceOperation.Append(frags))
    return Transaction(read_version, LanceOperation.Overwrite(LanceSchema.from_pyarrow(reader.schema), frags))
