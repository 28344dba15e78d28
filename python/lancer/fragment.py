"""Fragments: a dataset's shards of rows, as pylance 14's ``lance.fragment.LanceFragment``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional

import pyarrow as pa

from .dataset import _indices

if TYPE_CHECKING:
    from .dataset import LanceDataset, LanceScanner


class LanceFragment:
    """One fragment (a shard of rows in one or more data files, with its deletions)."""

    def __init__(self, ds: "LanceDataset", meta: Dict[str, Any]):
        self._ds = ds
        self._meta = meta

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
    def metadata(self) -> Dict[str, Any]:
        return dict(self._meta)

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
        from ._lancer import CorruptDataError, validate_fragment

        problems = validate_fragment(self._ds._inner, self.fragment_id)
        if problems:
            raise CorruptDataError("; ".join(problems))

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


_DataFile = DataFile  # (the old private name)
