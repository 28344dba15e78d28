"""Arrow extension types for Lance data: ``lancer.arrow`` stands in for pylance's
``lance.arrow``.

* ``bfloat16``: :class:`BFloat16Type` (extension name ``lance.bfloat16`` over
  ``fixed_size_binary(2)``, little-endian bfloat16 bits, the type pylance writes into
  Lance files), :class:`BFloat16Array`, :class:`BFloat16` values and
  :func:`bfloat16_array`. Values are rounded from float32 to nearest, ties to even, and
  print as pylance prints them.
* Images: :class:`ImageURIType` / :class:`ImageURIArray` (``lance.arrow.image_uri``),
  :class:`EncodedImageType` / :class:`EncodedImageArray` (``lance.arrow.encoded_image``),
  :class:`FixedShapeImageTensorType` / :class:`FixedShapeImageTensorArray`
  (``lance.arrow.fixed_shape_image_tensor``), with ``read_uris``, ``to_tensor``,
  ``to_encoded`` and ``to_numpy``. Decoding and encoding without a function of one's
  own need Pillow, as pylance's do (the same ``ValueError`` without it).
* :func:`cast`: ``pyarrow.compute.cast`` that also casts between floating arrays and
  bfloat16, and between fixed-size lists of them.

The extension types register with pyarrow under pylance's names, so a file or IPC
stream written by pylance reads back with them, and the other way round. When pylance
is imported first in the same process its classes hold those names; the functions here
recognize either by extension name.

What differs from pylance: :class:`BFloat16` is a Python class (pylance's is native);
it pickles, where pylance's refuses. ``ml_dtypes`` is needed only where a NumPy
``bfloat16`` array is made or taken (``BFloat16Array.to_numpy`` / ``from_numpy``, which
raise ``ModuleNotFoundError`` without it, as pylance's do); :func:`cast` and scalar
comparisons work without it (pylance's raise ``ModuleNotFoundError`` there too), and a
bfloat16 array with nulls casts to a float array with nulls (pylance's refuses nulls).
``EncodedImageArray.to_tensor`` also takes a decoder returning a
``pyarrow.FixedShapeTensorArray`` (pylance's fails on one).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "BFloat16",
    "BFloat16Array",
    "BFloat16Type",
    "PandasBFloat16Array",
    "bfloat16_array",
    "cast",
    "EncodedImageType",
    "FixedShapeImageTensorType",
    "ImageArray",
    "ImageScalar",
    "ImageURIArray",
    "ImageURIType",
]

_BF16_NAME = "lance.bfloat16"
_IMAGE_URI_NAME = "lance.arrow.image_uri"
_ENCODED_IMAGE_NAME = "lance.arrow.encoded_image"
_IMAGE_TENSOR_NAME = "lance.arrow.fixed_shape_image_tensor"


def _register(ext: pa.ExtensionType) -> None:
    try:
        pa.register_extension_type(ext)
    except pa.ArrowKeyError:
        # pylance (or an earlier import) holds the name already
        pass


def _ext_name(t: pa.DataType) -> Optional[str]:
    return getattr(t, "extension_name", None)


# --- bfloat16 -------------------------------------------------------------------------


def _shortest(f: np.float32) -> str:
    """The shortest decimal that reads back as the float32 ``f``, positional, as Rust
    prints an ``f32`` (pylance's text): of two such decimals equally near ``f``, the
    one farther from zero (NumPy's Dragon4 may give the other)."""
    from decimal import Decimal

    text = np.format_float_positional(f, unique=True, trim="-")
    if "." not in text:
        return text
    exact = Decimal(float(f))
    best = text
    last = int(text[-1])
    for d in (last - 1, last + 1):
        if not 0 < d <= 9:
            continue
        cand = text[:-1] + str(d)
        if np.float32(float(cand)) != f:
            continue
        dc, db = abs(Decimal(cand) - exact), abs(Decimal(best) - exact)
        if dc < db or (dc == db and abs(Decimal(cand)) > abs(Decimal(best))):
            best = cand
    return best


def _bits_of_f32(values: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) of float32 values: round to nearest, ties to even; NaN
    keeps its sign and top bits with the quiet bit set."""
    bits = np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded


def _f32_of_bits(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).astype("<u4").view("<f4")


class BFloat16:
    """A bfloat16 value (what a :class:`BFloat16Array` element's ``as_py()`` gives).

    ``BFloat16(x)`` rounds the real number ``x`` to bfloat16 through float32. Ordered and
    equal to other ``BFloat16`` values (never to floats), unhashable, as pylance's."""

    __slots__ = ("_bits",)

    def __hash__(self):
        raise TypeError("unhashable type: 'builtins.BFloat16'")

    def __init__(self, value: float):
        if isinstance(value, (str, bytes)) or value is None or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"argument 'value': must be real number, not {type(value).__name__}")
        self._bits = int(_bits_of_f32(np.array([float(value)], dtype=np.float32))[0])

    @classmethod
    def _of_bits(cls, bits: int) -> "BFloat16":
        out = cls.__new__(cls)
        out._bits = bits & 0xFFFF
        return out

    @staticmethod
    def from_bytes(data: bytes) -> "BFloat16":
        """The value of two little-endian bytes."""
        if len(data) != 2:
            raise ValueError(f"BFloat16::from_bytes: expected 2 bytes, got {len(data)}")
        return BFloat16._of_bits(struct.unpack("<H", bytes(data))[0])

    def as_float(self) -> float:
        return float(_f32_of_bits(np.array([self._bits]))[0])

    def _f32(self) -> np.float32:
        return _f32_of_bits(np.array([self._bits]))[0]

    def __str__(self) -> str:
        f = self._f32()
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return _shortest(f)

    __repr__ = __str__

    def _cmp(self, other: Any, sym: str, op: Callable[[float, float], bool]) -> Any:
        if not isinstance(other, BFloat16):
            raise TypeError(
                f"'{sym}' not supported between instances of 'builtins.BFloat16' and '{type(other).__name__}'"
            )
        return op(self.as_float(), other.as_float())

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, BFloat16):
            return False
        return self.as_float() == other.as_float()

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: Any) -> Any:
        return self._cmp(other, "<", lambda a, b: a < b)

    def __le__(self, other: Any) -> Any:
        return self._cmp(other, "<=", lambda a, b: a <= b)

    def __gt__(self, other: Any) -> Any:
        return self._cmp(other, ">", lambda a, b: a > b)

    def __ge__(self, other: Any) -> Any:
        return self._cmp(other, ">=", lambda a, b: a >= b)

    def __reduce__(self):
        return (BFloat16.from_bytes, (struct.pack("<H", self._bits),))


class BFloat16Type(pa.ExtensionType):
    """bfloat16 values: ``fixed_size_binary(2)`` storage, extension name
    ``lance.bfloat16``."""

    def __init__(self):
        pa.ExtensionType.__init__(self, pa.binary(2), _BF16_NAME)

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return BFloat16Type()

    def __arrow_ext_class__(self):
        return BFloat16Array

    def __arrow_ext_scalar_class__(self):
        return BFloat16Scalar

    def to_pandas_dtype(self):
        return PandasBFloat16Type()


def _bits_of_array(arr: pa.Array) -> np.ndarray:
    """The uint16 bits of a bfloat16 array's slots (null slots hold whatever is there)."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    buf = storage.buffers()[1]
    if buf is None or len(storage) == 0:
        return np.zeros(0, dtype=np.uint16)
    return np.frombuffer(buf, dtype="<u2", count=len(storage) + storage.offset)[storage.offset:]


class BFloat16Array(pa.ExtensionArray):
    """An array of bfloat16 values."""

    def __repr__(self):
        return "<lancer.arrow.BFloat16Array object at 0x%016x>\n%s" % (id(self), str(self))

    def __str__(self):
        items = [str(v) for v in self]
        if len(items) >= 22:
            items = items[:10] + ["..."] + items[-10:]
            body = ",\n".join(f"  {v}" if v != "..." else v for v in items)
            return "[\n" + body.replace(",\n...,\n", ",\n...\n") + "\n]"
        return "[\n" + ",\n".join(f"  {v}" for v in items) + "\n]"

    def to_numpy(self, zero_copy_only=False):
        """The values as a NumPy array of ``ml_dtypes.bfloat16`` (which must be
        installed); a ``ValueError`` when there are nulls."""
        if self.null_count > 0:
            raise ValueError("Cannot convert null values to numpy")
        from ml_dtypes import bfloat16

        return _bits_of_array(self).view(bfloat16)

    @classmethod
    def from_numpy(cls, array: np.ndarray):
        """A :class:`BFloat16Array` of a 1-D NumPy array of ``ml_dtypes.bfloat16``."""
        from ml_dtypes import bfloat16

        if array.dtype != bfloat16:
            raise ValueError("Cannot convert non-bfloat16 values to BFloat16Array")
        if array.ndim != 1:
            raise ValueError("Cannot convert multi-dimensional array to BFloat16Array")
        return _bf16_from_bits(np.ascontiguousarray(array).view("<u2"), None)


def _bf16_from_bits(bits: np.ndarray, valid: Optional[np.ndarray]) -> BFloat16Array:
    n = len(bits)
    validity = None
    if valid is not None and not valid.all():
        validity = pa.array(valid, type=pa.bool_()).buffers()[1]
    data = pa.py_buffer(np.ascontiguousarray(bits, dtype="<u2").tobytes())
    storage = pa.Array.from_buffers(pa.binary(2), n, [validity, data])
    return pa.ExtensionArray.from_storage(BFloat16Type(), storage)


class BFloat16Scalar(pa.ExtensionScalar):
    def as_py(self, **kwargs) -> Optional[BFloat16]:
        raw = self.value
        if raw is None or not raw.is_valid:
            return None
        return BFloat16.from_bytes(raw.as_py())

    def __eq__(self, other: Any):
        mine = self.as_py()
        if isinstance(other, BFloat16):
            return mine == other
        if isinstance(other, pa.ExtensionScalar) and _ext_name(other.type) == _BF16_NAME:
            return mine == other.as_py()
        if type(other).__name__ == "bfloat16" and hasattr(other, "tobytes"):
            return mine == BFloat16.from_bytes(other.tobytes())
        return False

    __hash__ = None  # type: ignore[assignment]


def bfloat16_array(values) -> BFloat16Array:
    """A :class:`BFloat16Array` of a sequence of real numbers and ``None`` (nulls)."""
    if isinstance(values, str):
        raise TypeError("argument 'values': Can't extract `str` to `Vec`")
    if not (hasattr(type(values), "__getitem__") and hasattr(type(values), "__len__")):
        raise TypeError(f"argument 'values': '{type(values).__name__}' object is not an instance of 'Sequence'")
    vals = list(values)
    floats = np.zeros(len(vals), dtype=np.float32)
    valid = np.ones(len(vals), dtype=bool)
    for i, v in enumerate(vals):
        if v is None:
            valid[i] = False
        elif isinstance(v, (str, bytes)) or not isinstance(v, (int, float, np.number)):
            raise TypeError(f"argument 'values': must be real number, not {type(v).__name__}")
        else:
            floats[i] = float(v)
    bits = _bits_of_f32(floats)
    bits[~valid] = 0
    return _bf16_from_bits(bits, valid)


try:
    from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype
except ImportError:  # pandas is optional
    PandasBFloat16Type = None  # type: ignore[assignment,misc]
    PandasBFloat16Array = None  # type: ignore[assignment,misc]
else:

    @register_extension_dtype
    class PandasBFloat16Type(ExtensionDtype):  # type: ignore[no-redef]
        """The pandas dtype of bfloat16 columns (``lance.bfloat16``)."""

        kind = "f"
        na_value = None
        name = _BF16_NAME
        names = None
        type = BFloat16
        _is_numeric = True

        def __from_arrow__(self, array):
            return PandasBFloat16Array(array)

        def construct_array_type(self):
            return PandasBFloat16Array

        @classmethod
        def construct_from_string(cls, string):
            if string == _BF16_NAME:
                return cls()
            raise TypeError(f"Cannot construct a '{cls.__name__}' from '{string}'")

    class PandasBFloat16Array(ExtensionArray):  # type: ignore[no-redef]
        """A pandas extension array over a :class:`BFloat16Array`."""

        dtype = PandasBFloat16Type()

        def __init__(self, data):
            self.data = data

        @classmethod
        def _from_sequence(cls, scalars, *, dtype=None, copy=False):
            return PandasBFloat16Array(bfloat16_array(scalars))

        def __getitem__(self, item):
            if isinstance(item, (int, np.integer)):
                return self.data[int(item)].as_py()
            if isinstance(item, slice):
                return PandasBFloat16Array(self.data[item])
            if isinstance(item, np.ndarray) and np.issubdtype(item.dtype, np.bool_):
                return PandasBFloat16Array(self.data.filter(pa.array(item)))
            raise NotImplementedError()

        def __len__(self):
            return len(self.data)

        def isna(self):
            return self.data.is_null().to_numpy(zero_copy_only=False)

        def to_numpy(self, *args, **kwargs):
            return self.data.to_numpy()

        def __arrow_array__(self, type=None):
            return self.data

        @classmethod
        def from_numpy(cls, array):
            return cls(BFloat16Array.from_numpy(array))


_register(BFloat16Type())


# --- images ---------------------------------------------------------------------------


def _is_string_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_binary_type(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


class _PicklableExt(pa.ExtensionType):
    def __reduce__(self):
        return type(self).__arrow_ext_deserialize__, (self.storage_type, self.__arrow_ext_serialize__())


class ImageURIType(_PicklableExt):
    """Image locations (local paths or URIs): string storage."""

    def __init__(self, storage_type: pa.DataType = pa.string()):
        if not _is_string_type(storage_type):
            raise ValueError("storage_type must be a string type")
        pa.ExtensionType.__init__(self, storage_type, _IMAGE_URI_NAME)

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return ImageURIType(storage_type)

    def __arrow_ext_class__(self):
        return ImageURIArray

    def __arrow_ext_scalar_class__(self):
        return ImageURIScalar


class EncodedImageType(_PicklableExt):
    """Encoded images (PNG, JPEG...): binary storage."""

    def __init__(self, storage_type: pa.DataType = pa.binary()):
        if not _is_binary_type(storage_type):
            raise ValueError("storage_type must be a binary type")
        pa.ExtensionType.__init__(self, storage_type, _ENCODED_IMAGE_NAME)

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return EncodedImageType(storage_type)

    def __arrow_ext_class__(self):
        return EncodedImageArray

    def __arrow_ext_scalar_class__(self):
        return EncodedImageScalar


class FixedShapeImageTensorType(_PicklableExt):
    """Decoded images of one shape: a fixed-size list of ``prod(shape)`` pixels of
    ``arrow_type``; the shape is kept in the type's metadata (``{"shape": [...]}``)."""

    def __init__(self, arrow_type: pa.DataType, shape):
        assert len(shape) > 0
        self.shape = shape
        self.arrow_type = arrow_type
        size = int(np.prod([int(d) for d in shape]))
        pa.ExtensionType.__init__(self, pa.list_(arrow_type, size), _IMAGE_TENSOR_NAME)

    def __arrow_ext_serialize__(self):
        return json.dumps({"shape": self.shape}).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        meta = json.loads(serialized.decode())
        return FixedShapeImageTensorType(storage_type.value_type, meta["shape"])

    def __arrow_ext_class__(self):
        return FixedShapeImageTensorArray

    def __arrow_ext_scalar_class__(self):
        return FixedShapeImageTensorScalar


_register(ImageURIType())
_register(EncodedImageType())
_register(FixedShapeImageTensorType(pa.uint8(), (0,)))


def _module_import(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


class ImageArray(pa.ExtensionArray):
    """The base of the image arrays; :meth:`from_array` makes the one that fits."""

    def __repr__(self):
        return "<lancer.arrow.%s object at 0x%016x>\n%s" % (type(self).__name__, id(self), repr(self.to_pylist()))

    @classmethod
    def from_array(cls, images):
        """An :class:`ImageURIArray` of strings (or of a list / iterable),
        :class:`EncodedImageArray` of binaries, :class:`FixedShapeImageTensorArray` of a
        ``pyarrow.FixedShapeTensorArray``; an image array as it is."""
        if isinstance(images, (ImageURIArray, EncodedImageArray, FixedShapeImageTensorArray)):
            return images
        if isinstance(images, (pa.StringArray, pa.LargeStringArray)):
            return pa.ExtensionArray.from_storage(ImageURIType(images.type), images)
        if isinstance(images, (pa.BinaryArray, pa.LargeBinaryArray)):
            return pa.ExtensionArray.from_storage(EncodedImageType(images.type), images)
        if isinstance(images, pa.FixedShapeTensorArray):
            typ = FixedShapeImageTensorType(images.type.value_type, images.type.shape)
            return pa.ExtensionArray.from_storage(typ, images.storage)
        if isinstance(images, (list, tuple, Iterable)):
            return pa.ExtensionArray.from_storage(ImageURIType(), pa.array(images, type=pa.string()))
        raise TypeError("Cannot build a ImageArray from {}".format(type(images)))


class ImageURIArray(ImageArray):
    """Image URIs: local files, or remote ones (``http(s)://``, ``s3://``, ``gs://``...)
    the machine can reach."""

    @classmethod
    def from_uris(cls, uris: Union[pa.StringArray, pa.LargeStringArray, Iterable[Union[str, Path]]]):
        """An :class:`ImageURIArray` of a string array or an iterable of str / Path."""
        if isinstance(uris, (pa.StringArray, pa.LargeStringArray)):
            storage = uris
        elif isinstance(uris, Iterable):
            storage = pa.array([str(u) for u in uris], type=pa.string())
        else:
            raise TypeError("Cannot build a ImageURIArray from {}".format(type(uris)))
        return cls.from_storage(ImageURIType(storage.type), storage)

    def read_uris(self, storage_type=pa.binary()) -> "EncodedImageArray":
        """Reads every image into an :class:`EncodedImageArray` (``storage_type``
        ``pa.large_binary()`` for more than 2 GiB). ``http(s)`` URIs are fetched with
        ``urllib`` (a failed fetch prints why and leaves a null); anything else opens
        through ``pyarrow.fs``."""
        from urllib.error import URLError
        from urllib.parse import urlparse
        from urllib.request import Request, urlopen

        from pyarrow import fs

        out = []
        for item in self.storage:
            uri = item.as_py()
            if urlparse(uri).scheme in ("http", "https"):
                try:
                    out.append(urlopen(Request(uri)).read())
                except URLError as e:
                    if hasattr(e, "reason"):
                        print("Failed to reach the server: ", e.reason)
                    elif hasattr(e, "code"):
                        print("The server could not fulfill the request. Error code: ", getattr(e, "code"))
                    out.append(None)
            else:
                filesystem, path = fs.FileSystem.from_uri(uri)
                with filesystem.open_input_stream(path) as f:
                    out.append(f.read())
        return EncodedImageArray.from_storage(EncodedImageType(storage_type), pa.array(out, type=storage_type))


def _pillow_decode(images) -> np.ndarray:
    import io

    from PIL import Image  # type: ignore[import-not-found]

    return np.stack([np.asarray(Image.open(io.BytesIO(b))) for b in images.to_pylist()])


class EncodedImageArray(ImageArray):
    """Encoded images, each in any format (the format is not recorded; decoders tell
    it from the bytes)."""

    def __repr__(self):
        head = None
        if _module_import("PIL"):
            import io

            from PIL import Image  # type: ignore[import-not-found]

            head = "\n[" + repr(Image.open(io.BytesIO(self[0].as_py()))) + ", ..]"
        return "<lancer.arrow.%s object at 0x%016x>%s\n%s" % (
            type(self).__name__,
            id(self),
            head,
            repr(self.to_pylist()[0][:30]),
        )

    def to_tensor(self, decoder: Optional[Callable[[pa.Array], Any]] = None):
        """Decodes the images into a :class:`FixedShapeImageTensorArray`, with
        ``decoder`` (binary array -> ``numpy.ndarray`` of shape ``(n, *image_shape)``, or
        a ``pyarrow.FixedShapeTensorArray``) or else Pillow; without either a
        ``ValueError``."""
        if decoder is None:
            if not _module_import("PIL"):
                raise ValueError("No image decoder available. Please install pillow or pass a decoder argument.")
            decoder = _pillow_decode
        decoded = decoder(self.storage)
        if isinstance(decoded, pa.FixedShapeTensorArray):
            shape = decoded.type.shape
            value_type = decoded.type.value_type
            storage = decoded.storage
        else:
            decoded = np.asarray(decoded)
            shape = decoded.shape[1:]
            value_type = pa.from_numpy_dtype(decoded.dtype)
            storage = pa.FixedShapeTensorArray.from_numpy_ndarray(decoded).storage
        return pa.ExtensionArray.from_storage(FixedShapeImageTensorType(value_type, shape), storage)


class FixedShapeImageTensorArray(ImageArray):
    """Decoded images of one shape (pixels as fixed-shape tensors)."""

    def to_numpy(self):
        """The images as one ``numpy.ndarray`` of shape ``(n, *image_shape)``."""
        tensor_type = pa.fixed_shape_tensor(self.storage.type.value_type, self.type.shape)
        return pa.ExtensionArray.from_storage(tensor_type, self.storage).to_numpy_ndarray()

    def to_encoded(self, encoder=None, storage_type=pa.binary()) -> "EncodedImageArray":
        """Encodes the images into an :class:`EncodedImageArray`, with ``encoder``
        (``numpy.ndarray`` of images -> binary array) or else Pillow as PNG; without
        either a ``ValueError``."""
        if encoder is None:
            if not _module_import("PIL"):
                raise ValueError("No image encoder available. Please install pillow or pass an encoder argument.")

            def encoder(images):
                import io

                from PIL import Image  # type: ignore[import-not-found]

                encoded = []
                for img in images:
                    with io.BytesIO() as buf:
                        Image.fromarray(img).save(buf, format="PNG")
                        encoded.append(buf.getvalue())
                return pa.array(encoded, type=storage_type)

        return EncodedImageArray.from_storage(EncodedImageType(storage_type), encoder(self.to_numpy()))


class ImageScalar(pa.ExtensionScalar):
    def as_py(self, **kwargs):
        # (a null's value is None: None here, where pylance's raises AttributeError)
        return None if self.value is None else self.value.as_py(**kwargs)


class ImageURIScalar(ImageScalar):
    pass


class EncodedImageScalar(ImageScalar):
    pass


class FixedShapeImageTensorScalar(ImageScalar):
    pass


# --- cast -----------------------------------------------------------------------------


def _is_bf16_target(t: Any) -> bool:
    if isinstance(t, str):
        return t in ("bfloat16", "bf16")
    return isinstance(t, pa.DataType) and _ext_name(t) == _BF16_NAME


def cast(arr: pa.Array, target_type: Union[pa.DataType, str], *args, **kwargs) -> pa.Array:
    """``pyarrow.compute.cast``, extended to bfloat16: floating arrays (float16 / 32 /
    64) to bfloat16 (``"bfloat16"``, ``"bf16"`` or a :class:`BFloat16Type`) and back,
    and fixed-size lists of those floats to fixed-size lists of the same size. Other
    casts are pyarrow's."""
    if _ext_name(arr.type) == _BF16_NAME:
        if not (isinstance(target_type, pa.DataType) and pa.types.is_floating(target_type)):
            raise ValueError("Only support casting bfloat16 array to floating array," + f"got: {target_type}")
        floats = _f32_of_bits(_bits_of_array(arr)).astype(target_type.to_pandas_dtype())
        mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
        return pa.array(floats, mask=mask)
    if _is_bf16_target(target_type):
        if not pa.types.is_floating(arr.type):
            raise ValueError("Only support casting floating array to bfloat16 array," + f"got: {arr.type}")
        floats = arr.to_numpy(zero_copy_only=False).astype(np.float32)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        bits = _bits_of_f32(floats)
        bits[~valid] = 0
        return _bf16_from_bits(bits, valid)
    if (
        isinstance(target_type, pa.DataType)
        and pa.types.is_fixed_size_list(arr.type)
        and pa.types.is_fixed_size_list(target_type)
    ):
        if arr.type.list_size != target_type.list_size:
            raise ValueError(
                "Only support casting fixed size list to fixed size list "
                f"with the same size, got: {arr.type} to {target_type}"
            )
        values = cast(arr.values, target_type.value_type)
        return pa.FixedSizeListArray.from_arrays(values=values, list_size=target_type.list_size)
    return pc.cast(arr, target_type, *args, **kwargs)
