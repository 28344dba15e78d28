"""Looking inside a dataset, as pylance 14's users do (issue 41): a vector index's
partitions as stored (:class:`VectorIndexReader`), the Lance schema with its field ids
(:class:`LanceSchema` / :class:`LanceField`, ``LanceDataset.lance_schema``), and the
debug text of ``lancer.debug``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pyarrow as pa

from . import _lancer

if TYPE_CHECKING:
    from .dataset import LanceDataset

_PK = "lance-schema:unenforced-primary-key"
_CK = "lance-schema:unenforced-clustering-key"


class VectorIndexReader:
    """Reads the partitions of the vector index ``index_name`` as stored, as pylance
    14's ``lance.dataset.VectorIndexReader``: :meth:`num_partitions` and
    :meth:`read_partition`. An index that is not a vector index is a ``ValueError``, an
    unknown name a ``KeyError`` (from ``index_statistics``)."""

    def __init__(self, dataset: "LanceDataset", index_name: str):
        stats = dataset.stats.index_stats(index_name)
        self.dataset = dataset
        self.index_name = index_name
        self.stats = stats
        try:
            self.num_partitions()
        except KeyError:
            raise ValueError(f"Index {index_name} is not vector index")

    def num_partitions(self) -> int:
        """The partitions of the index (of its first segment)."""
        return self.stats["indices"][0]["num_partitions"]

    def read_partition(self, partition_id: int, *, with_vector: bool = False) -> pa.Table:
        """The rows of partition ``partition_id``, every segment's in turn: ``_rowid``,
        and with ``with_vector`` the stored vectors or codes (``flat``, ``__pq_code`` —
        transposed within the partition, as stored —, ``__sq_code``, RabitQ's codes and
        factors), with the index file's schema metadata."""
        if partition_id < 0 or partition_id >= self.num_partitions():
            raise IndexError(
                f"Partition id {partition_id} is out of range, "
                f"expected 0 <= partition_id < {self.num_partitions()}"
            )
        batch = _lancer.read_index_partition(self.dataset._inner, self.index_name, int(partition_id),
                                             bool(with_vector))
        return pa.Table.from_batches([batch])


def _split_path(name: str) -> List[str]:
    """``a.b`` → ``["a", "b"]``; a part in backticks may hold dots (```a.`b.c` ```)."""
    parts: List[str] = []
    cur = ""
    quoted = False
    i = 0
    while i < len(name):
        c = name[i]
        if c == "`":
            if quoted and i + 1 < len(name) and name[i + 1] == "`":
                cur += "`"
                i += 2
                continue
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if quoted:
        raise ValueError(f"unterminated backtick in field path {name!r}")
    parts.append(cur)
    return parts


def _flag(md: Dict[str, str], key: str) -> bool:
    return md.get(key, "").strip().lower() in ("true", "yes", "1")


def _raw_position(md: Dict[str, str], key: str) -> Optional[int]:
    try:
        return int(md[f"{key}:position"])
    except (KeyError, ValueError):
        return None


def _position(md: Dict[str, str], key: str) -> Optional[int]:
    """A key's ``:position`` (1 and up; 0, absent or not a number is None), as
    pylance 14 reads it."""
    pos = _raw_position(md, key)
    return pos if pos is not None and pos > 0 else None


def _is_primary_key(md: Dict[str, str]) -> bool:
    return _flag(md, _PK) or _position(md, _PK) is not None


class LanceField:
    """One field of a :class:`LanceSchema`: its name, id, children and Arrow field."""

    def __init__(self, name: str, id: int, parent_id: int, arrow: pa.Field, children: List["LanceField"],
                 metadata: Dict[str, str], pk: bool = False, stored: bool = False):
        self._name = name
        self._id = id
        self._parent_id = parent_id
        self._arrow = arrow
        self._children = children
        self._metadata = metadata
        self._pk = pk
        self._stored = stored  # a dataset's field (else made from pyarrow)

    def name(self) -> str:
        return self._name

    def id(self) -> int:
        return self._id

    def children(self) -> List["LanceField"]:
        return list(self._children)

    @property
    def metadata(self) -> Dict[str, str]:
        """The field's metadata (a property, as pylance's)."""
        return dict(self._metadata)

    def to_arrow(self) -> pa.Field:
        return self._arrow

    def unenforced_primary_key_position(self) -> Optional[int]:
        """The field's position in the unenforced primary key (from its
        ``lance-schema:unenforced-primary-key:position`` metadata; None without one)."""
        return _position(self._metadata, _PK) if self._pk else None

    def is_unenforced_primary_key(self) -> bool:
        """A dataset's: the manifest's flag on the field; a schema made from pyarrow:
        its ``lance-schema:unenforced-primary-key`` metadata is true (or it has a
        position)."""
        return self._pk

    def unenforced_clustering_key_position(self) -> Optional[int]:
        return _position(self._metadata, _CK)

    def is_unenforced_clustering_key(self) -> bool:
        """Its ``lance-schema:unenforced-clustering-key:position`` metadata is a number
        (a dataset's field: one above 0, as pylance 14 stores it). Read from the
        metadata also for a dataset: lancer's manifest reader does not decode the
        clustering key pylance records in the manifest's fields."""
        if self._stored:
            return _position(self._metadata, _CK) is not None
        return _raw_position(self._metadata, _CK) is not None

    def _key(self) -> Any:
        return (self._name, self._id, self._parent_id, str(self._arrow.type), self._arrow.nullable,
                sorted(self._metadata.items()), [c._key() for c in self._children])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceField) and self._key() == other._key()

    def __repr__(self) -> str:
        return (f"Field {{ name: {self._name!r}, id: {self._id}, parent_id: {self._parent_id}, "
                f"type: {self._arrow.type}, nullable: {self._arrow.nullable}, metadata: {self._metadata}, "
                f"children: {self._children!r} }}")


def _children_of(t: pa.DataType) -> List[pa.Field]:
    """The Arrow fields a Lance field has as children: a struct's fields, a list's
    item (a fixed-size list is one Lance field, as in pylance)."""
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [pa.field("entries", pa.struct([t.key_field, t.item_field]), False)]
    return []


class LanceSchema:
    """A Lance schema: a pyarrow schema whose every field (nested ones too) has an
    integer id, as pylance 14's ``lance.schema.LanceSchema``. A dataset's
    (``LanceDataset.lance_schema``) has the ids its manifest assigns;
    :meth:`from_pyarrow` assigns them depth first."""

    def __init__(self, fields: List[LanceField], metadata: Optional[Dict[str, str]] = None):
        self._fields = fields
        self._metadata = dict(metadata or {})

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        """Ids assigned depth first (not a dataset's ids)."""
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"argument 'schema': Expected instance of pyarrow.lib.Schema, got "
                            f"{type(schema).__module__}.{type(schema).__name__}")
        counter = [0]

        def make(f: pa.Field, parent: int) -> LanceField:
            fid = counter[0]
            counter[0] += 1
            kids = [make(c, fid) for c in _children_of(f.type)]
            md = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
                  for k, v in (f.metadata or {}).items()}
            return LanceField(f.name, fid, parent, f, kids, md, _is_primary_key(md))

        md = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
        return LanceSchema([make(f, -1) for f in schema], md)

    @staticmethod
    def _of_dataset(ds: "LanceDataset") -> "LanceSchema":
        return LanceSchema._from_rows(ds.schema, _lancer.lance_fields(ds._inner))

    @staticmethod
    def _from_rows(arrow: pa.Schema, field_rows: List[tuple]) -> "LanceSchema":
        """The schema of the engine's field rows (id, parent, name, type, nullable,
        metadata, primary key, children) and their Arrow schema."""
        rows = {r[0]: r for r in field_rows}

        def make(fid: int, af: pa.Field) -> LanceField:
            _, parent, name, _lt, _nullable, md, pk, kids = rows[fid]
            child_arrow = _children_of(af.type)
            children = [make(k, child_arrow[i]) for i, k in enumerate(kids) if i < len(child_arrow)]
            return LanceField(name, fid, parent, af, children, dict(md), pk, stored=True)

        top = [r for r in rows.values() if r[1] == -1]
        fields = [make(r[0], arrow.field(i)) for i, r in enumerate(top)]
        md = {k.decode(): v.decode() for k, v in (arrow.metadata or {}).items()}
        return LanceSchema(fields, md)

    def fields(self) -> List[LanceField]:
        """The top-level fields."""
        return list(self._fields)

    def to_pyarrow(self) -> pa.Schema:
        return pa.schema([f.to_arrow() for f in self._fields], metadata=self._metadata or None)

    def _find(self, name: str, case_insensitive: bool) -> Optional[LanceField]:
        if not isinstance(name, str):
            raise TypeError(f"argument 'name': '{type(name).__name__}' object is not an instance of 'str'")
        level = self._fields
        found: Optional[LanceField] = None
        for part in _split_path(name):
            match = [f for f in level if f.name() == part]
            if not match and case_insensitive:
                match = [f for f in level if f.name().lower() == part.lower()]
            if not match:
                return None
            found = match[0]
            level = found.children()
        return found

    def field(self, name: str) -> Optional[LanceField]:
        """The field at ``name`` (``parent.child``; a name holding dots in backticks);
        None when there is none."""
        return self._find(name, False)

    def field_case_insensitive(self, name: str) -> Optional[LanceField]:
        """As :meth:`field`, falling back to a case-insensitive match."""
        return self._find(name, False) or self._find(name, True)

    def _all(self) -> List[LanceField]:
        out: List[LanceField] = []

        def walk(fs: List[LanceField]) -> None:
            for f in fs:
                out.append(f)
                walk(f.children())

        walk(self._fields)
        return out

    def unenforced_primary_key(self) -> List[LanceField]:
        """The fields of the unenforced primary key, by position (fields without one
        last, in field order), as pylance orders them."""
        keyed = [f for f in self._all() if f.is_unenforced_primary_key()]
        return sorted(keyed, key=lambda f: (f.unenforced_primary_key_position() is None,
                                            f.unenforced_primary_key_position() or 0, f.id()))

    def unenforced_clustering_key(self) -> List[LanceField]:
        """The fields of the unenforced clustering key, by position (fields whose
        position is 0 first, in field order), as pylance orders them."""
        keyed = [f for f in self._all() if f.is_unenforced_clustering_key()]
        return sorted(keyed, key=lambda f: (f.unenforced_clustering_key_position() or 0, f.id()))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LanceSchema) and [f._key() for f in self._fields] == [f._key() for f in other._fields]
                and self._metadata == other._metadata)

    def __reduce__(self) -> Any:
        return (LanceSchema, (self._fields, self._metadata))

    def __repr__(self) -> str:
        return f"Schema {{ fields: {self._fields!r}, metadata: {self._metadata} }}"


# --- lancer.debug ------------------------------------------------------------------------


def format_schema(dataset: "LanceDataset") -> str:
    """The dataset's Lance schema: every field's name, id, parent id, logical type,
    metadata, nullability and children."""
    return _lancer.debug_schema(dataset._inner)


def format_manifest(dataset: "LanceDataset") -> str:
    """This version's manifest: the schema, then every other field (version, writer,
    fragments with their data and deletion files, index section, timestamp, feature
    flags, transaction file, config...)."""
    return _lancer.debug_manifest(dataset._inner)


def format_fragment(fragment: Any, dataset: "LanceDataset") -> str:
    """One fragment: its data files with the schema of the fields each holds, its
    deletion file, its physical rows. ``fragment``: a ``LanceFragment``, its
    ``metadata`` or a fragment id."""
    if isinstance(fragment, int):
        fid = fragment
    elif hasattr(fragment, "fragment_id"):
        fid = fragment.fragment_id
    elif isinstance(fragment, dict) and "id" in fragment:
        fid = fragment["id"]
    elif hasattr(fragment, "files") and hasattr(fragment, "id"):  # a FragmentMetadata
        fid = fragment.id
    else:
        raise TypeError(f"format_fragment takes a LanceFragment, its metadata or a fragment id, "
                        f"not {type(fragment).__name__}")
    return _lancer.debug_fragment(dataset._inner, int(fid))


def list_transactions(dataset: "LanceDataset", /, max_transactions: int = 10) -> List[str]:
    """The transactions of this version and the ones before it, newest first, at most
    ``max_transactions``: each its read version, uuid, operation (with its fragments
    or schema), tag and properties."""
    if max_transactions < 0:
        raise ValueError("max_transactions must not be negative")
    return list(_lancer.debug_transactions(dataset._inner, int(max_transactions)))
