"""Blob columns as pylance 14 names them (reference "Blob Columns"): the logical blob
type users write (``Blob``, ``BlobType`` — extension ``lance.blob.v2`` —,
``blob_array``, ``blob_field``) and ``BlobFile``, the lazy file-like handle
``LanceDataset.take_blobs`` returns (``read``, ``readinto``, ``readall``, ``seek``,
``tell``, ``size``, ``read_range`` / ``read_ranges``, context manager): only the bytes
read are fetched, ``buffer_size`` bytes ahead for sequential reads."""

from __future__ import annotations

import ctypes
import io
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import pyarrow as pa

_INLINE_KEY = b"lance-encoding:blob-inline-size-threshold"
_DEDICATED_KEY = b"lance-encoding:blob-dedicated-size-threshold"
_PACK_KEY = b"lance-encoding:blob-pack-file-size-threshold"
_MAX_USIZE = ctypes.c_size_t(-1).value
#: Sequential read-ahead of a ``BlobFile`` (pylance's default).
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


@dataclass(frozen=True)
class Blob:
    """One blob value to write: inline bytes (``data``) or an external ``uri`` with an
    optional ``position`` / ``size`` range. ``None`` is a null blob, ``Blob.empty()`` an
    empty one."""

    data: Optional[bytes] = None
    uri: Optional[str] = None
    position: Optional[int] = None
    size: Optional[int] = None

    def __post_init__(self) -> None:
        if self.data is not None and self.uri is not None:
            raise ValueError("Blob cannot have both data and uri")
        if self.uri == "":
            raise ValueError("Blob uri cannot be empty")
        if (self.position is not None or self.size is not None) and self.uri is None:
            raise ValueError("External packed blob must have a uri")
        if (self.position is None) != (self.size is None):
            raise ValueError("External blob must set both position and size, or neither")
        if self.data is None and self.uri is None:
            raise ValueError("Blob must set `data` or `uri`; use None for a null blob")
        if self.size == 0:
            raise ValueError("External blob range size must be greater than zero")

    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Blob":
        return Blob(data=bytes(data))

    @staticmethod
    def from_uri(uri: str, position: Optional[int] = None, size: Optional[int] = None) -> "Blob":
        if uri == "":
            raise ValueError("Blob uri cannot be empty")
        if (position is not None and position < 0) or (size is not None and size < 0):
            raise ValueError("External blob position and size must be non-negative")
        return Blob(uri=uri, position=position, size=size)

    @staticmethod
    def empty() -> "Blob":
        return Blob(data=b"")


_FIELDS = [("data", pa.large_binary()), ("uri", pa.utf8()), ("position", pa.uint64()), ("size", pa.uint64())]


class BlobType(pa.ExtensionType):
    """The logical blob type (extension ``lance.blob.v2``): ``struct<data:
    large_binary, uri: utf8, position: uint64, size: uint64>``, or the minimal
    ``data`` / ``uri`` shape."""

    def __init__(self) -> None:
        pa.ExtensionType.__init__(self, pa.struct([pa.field(n, t) for n, t in _FIELDS]), "lance.blob.v2")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> "BlobType":
        fields = list(storage_type) if pa.types.is_struct(storage_type) else []
        if len(fields) not in (2, 4) or any(
                f.name != _FIELDS[i][0] or f.type != _FIELDS[i][1] for i, f in enumerate(fields)):
            raise TypeError("BlobType storage must be struct<data: large_binary, uri: string"
                            "[, position: uint64, size: uint64]>")
        instance = cls.__new__(cls)
        pa.ExtensionType.__init__(instance, storage_type, "lance.blob.v2")
        return instance

    def __arrow_ext_class__(self):
        return BlobArray

    def __reduce__(self):
        return type(self).__arrow_ext_deserialize__, (self.storage_type, b"")


try:
    pa.register_extension_type(BlobType())
except pa.ArrowKeyError:
    # registered already (by pylance, or an earlier import)
    pass


class BlobArray(pa.ExtensionArray):
    """An array of blob values (:func:`blob_array`)."""

    @classmethod
    def from_pylist(cls, values: List[Any]) -> "BlobArray":
        cols: List[List[Any]] = [[], [], [], []]
        mask = []
        for v in values:
            if v is None:
                row, null = (None, None, None, None), True
            elif isinstance(v, Blob):
                row, null = (v.data, v.uri, v.position, v.size), False
            elif isinstance(v, str):
                if v == "":
                    raise ValueError("Blob uri cannot be empty")
                row, null = (None, v, None, None), False
            elif isinstance(v, (bytes, bytearray, memoryview)):
                row, null = (bytes(v), None, None, None), False
            else:
                raise TypeError(f"BlobArray values must be bytes-like, str (URI), Blob, or None; got {type(v)}")
            for c, x in zip(cols, row):
                c.append(x)
            mask.append(null)
        storage = pa.StructArray.from_arrays(
            [pa.array(c, type=t) for c, (_, t) in zip(cols, _FIELDS)],
            names=[n for n, _ in _FIELDS],
            mask=pa.array(mask, type=pa.bool_()),
        )
        return pa.ExtensionArray.from_storage(BlobType(), storage)


def blob_array(values: List[Any]) -> BlobArray:
    """Blob values from Python: bytes-like (inline bytes), str (an external URI),
    :class:`Blob`, or None (null)."""
    return BlobArray.from_pylist(values)


def _threshold(name: str, value: Optional[int], allow_zero: bool) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0 if allow_zero else value <= 0:
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}")
    if value > _MAX_USIZE:
        raise OverflowError(f"{name} must fit in a Rust usize")


def blob_field(name: str, *, nullable: bool = True, inline_size_threshold: Optional[int] = None,
               dedicated_size_threshold: Optional[int] = None,
               pack_file_size_threshold: Optional[int] = None) -> pa.Field:
    """A blob column's field. Payloads up to ``inline_size_threshold`` bytes (64 KiB)
    stay in the data file, up to ``dedicated_size_threshold`` (4 MiB) go to shared
    ``.blob`` sidecars of at most ``pack_file_size_threshold`` bytes (1 GiB), larger
    ones to a sidecar of their own."""
    _threshold("inline_size_threshold", inline_size_threshold, True)
    _threshold("dedicated_size_threshold", dedicated_size_threshold, False)
    _threshold("pack_file_size_threshold", pack_file_size_threshold, False)
    field = pa.field(name, BlobType(), nullable=nullable)
    md = {}
    for key, v in [(_INLINE_KEY, inline_size_threshold), (_DEDICATED_KEY, dedicated_size_threshold),
                   (_PACK_KEY, pack_file_size_threshold)]:
        if v is not None:
            md[key] = str(v).encode()
    return field.with_metadata(md) if md else field


def _validate_buffer_size(buffer_size: Any) -> int:
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise TypeError(f"buffer_size must be an int, got {type(buffer_size).__name__}")
    if buffer_size < 0:
        raise ValueError("buffer_size must be non-negative")
    return buffer_size


class BlobFile(io.RawIOBase):
    """A blob as a read-only, seekable binary file: each read fetches only the bytes
    it returns (plus up to ``buffer_size`` bytes ahead when reading sequentially).
    ``read_range`` / ``read_ranges`` read blob-local ranges without moving the
    cursor."""

    def __init__(self, inner: Any, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE):
        super().__init__()
        self._inner = inner
        self._size = int(inner.size())
        self._pos = 0
        self._ahead = _validate_buffer_size(buffer_size)
        self._buf = b""
        self._buf_at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        """The blob's size in bytes."""
        return self._size

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._pos + offset
        elif whence == io.SEEK_END:
            position = self._size + offset
        else:
            raise ValueError(f"Invalid whence: {whence}")
        if position < 0:
            raise ValueError(f"negative seek value {position}")
        self._pos = position
        return self._pos

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _fetch(self, n: int) -> bytes:
        """Up to ``n`` bytes at the cursor (served from the read-ahead when there)."""
        start = self._pos
        end = min(self._size, start + n)
        if end <= start:
            return b""
        lo, hi = self._buf_at, self._buf_at + len(self._buf)
        if not (lo <= start and end <= hi):
            want = end - start
            fetch_end = min(self._size, start + max(want, self._ahead)) if want < self._ahead else end
            data = self._inner.read_range(start, fetch_end - start)
            if fetch_end - start > want:
                self._buf, self._buf_at = data, start
            else:
                self._pos = end
                return data
        out = self._buf[start - self._buf_at:end - self._buf_at]
        self._pos = end
        return out

    def read(self, size: int = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            return self.readall()
        return self._fetch(size)

    def read1(self, size: int = -1) -> bytes:
        return self.read(io.DEFAULT_BUFFER_SIZE if size is None or size < 0 else size)

    def readall(self) -> bytes:
        self._check_open()
        if self._pos >= self._size:
            return b""
        data = self._inner.read_range(self._pos, self._size - self._pos)
        self._pos = self._size
        return data

    def readinto(self, b: Any) -> int:
        self._check_open()
        view = memoryview(b).cast("B")
        if view.readonly:
            raise TypeError(f"readinto() argument must be read-write bytes-like object, not {type(b).__name__}")
        data = self._fetch(len(view))
        view[:len(data)] = data
        return len(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from blob offset ``offset`` (the cursor stays)."""
        return self._inner.read_range(int(offset), int(length))

    def read_ranges(self, ranges: List[Tuple[int, int]]) -> List[bytes]:
        """Several ``(offset, length)`` ranges in one request, in order (the cursor
        stays)."""
        return self._inner.read_ranges([(int(o), int(n)) for o, n in ranges])

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"


class BlobIterator:
    """Iterates a binary column's values as ``io.BytesIO`` files (None for nulls)."""

    def __init__(self, binary_iter: Any):
        self.binary_iter = binary_iter

    def __iter__(self) -> "BlobIterator":
        return self

    def __next__(self) -> Optional[io.BytesIO]:
        value = next(self.binary_iter)
        if not value.is_valid:
            return None
        return io.BytesIO(value.as_py())


class BlobColumn:
    """A binary / large_binary column (an Array or ChunkedArray) whose rows iterate as
    file-like objects."""

    def __init__(self, blob_column: Union[pa.Array, pa.ChunkedArray]):
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise ValueError(f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got {type(blob_column)}")
        if not pa.types.is_large_binary(blob_column.type) and not pa.types.is_binary(blob_column.type):
            raise ValueError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self) -> BlobIterator:
        return BlobIterator(iter(self.blob_column))
