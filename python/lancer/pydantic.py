"""Arrow schemas from pydantic models, as pylance 14's ``lance.pydantic`` (pydantic 2, and
1-style models: ``pydantic.v1`` or pydantic 1).

``pydantic_to_schema(Model)`` gives one field per model field, in order:

- ``int`` → int64, ``float`` → float64, ``str`` → utf8, ``bool`` → bool, ``bytes`` →
  binary, ``date`` → date32, ``datetime`` → timestamp[us] (with the time zone named by
  ``Field(json_schema_extra={"tz": ...})``);
- ``List[X]`` / ``list[X]`` / ``Tuple[X, ...]`` → list of X (items nullable); a nested
  model → struct of its fields; an ``Enum`` → its values' type (string values:
  dictionary<int32, utf8>; mixed or none: utf8);
- ``Vector(dim, value_type=pa.float32(), nullable=True)`` → fixed_size_list<value_type>[dim],
  ``MultiVector(dim, ...)`` → list of those.

A field is nullable when its annotation is ``Optional[X]`` / ``X | None`` (or a nullable
``Vector`` / ``MultiVector``), whatever its default. Anything else (``Dict``, ``Union``
of several types, ``Any``, bare ``List``, ``Decimal``, ...) raises ``TypeError``
naming the type, as pylance's.

This module imports pydantic (as pylance's does).
"""

from __future__ import annotations

import inspect
import types
import typing
from abc import ABC, abstractmethod
from datetime import date, datetime
from enum import Enum
from typing import Any, List, Optional, Type

import pyarrow as pa
import pydantic

__all__ = ["FixedSizeListMixin", "MultiVector", "Vector", "get_extras", "is_nullable", "pydantic_to_schema"]

_V2 = hasattr(pydantic, "GetCoreSchemaHandler")
if _V2:
    from pydantic_core import core_schema

# the annotation types whose ``__origin__`` / ``__args__`` are read: typing's
# ``List[int]`` / ``Optional[int]`` and the builtin ``list[int]`` (not bare ``List``)
_ALIASES = (typing._GenericAlias, types.GenericAlias)  # type: ignore[attr-defined]
_UNION_TYPE = getattr(types, "UnionType", None)  # ``int | None`` (Python 3.10+)


class FixedSizeListMixin(ABC):
    """What ``Vector`` / ``MultiVector`` types have: their dimension and value type."""

    @staticmethod
    @abstractmethod
    def dim() -> int:
        raise NotImplementedError

    @staticmethod
    @abstractmethod
    def value_arrow_type() -> pa.DataType:
        raise NotImplementedError


def _is_vector(v: Any, dim: int) -> bool:
    """(pydantic 1's check) a list, range or NumPy array of ``dim`` values."""
    kinds: tuple = (list, range)
    try:
        import numpy

        kinds += (numpy.ndarray,)
    except ImportError:  # pragma: no cover - numpy comes with pyarrow
        pass
    return isinstance(v, kinds) and len(v) == dim


def _sized_list(dim: int, value_type: pa.DataType, nullable: bool, label: str) -> type:
    """The base :func:`Vector` and :func:`MultiVector` share: a list of vectors of
    ``dim`` values of ``value_type``, its nullability, and pydantic 1's validator hook
    (each subclass defines ``validate``)."""

    class SizedList(list, FixedSizeListMixin):
        def __repr__(self) -> str:
            return f"{label}(dim={dim})"

        @staticmethod
        def nullable() -> bool:
            return nullable

        @staticmethod
        def dim() -> int:
            return dim

        @staticmethod
        def value_arrow_type() -> pa.DataType:
            return value_type

        @classmethod
        def __get_validators__(cls) -> Any:  # pydantic 1
            yield cls.validate

    return SizedList


def Vector(dim: int, value_type: pa.DataType = pa.float32(), nullable: bool = True) -> Type[FixedSizeListMixin]:
    """A pydantic field type for an embedding of ``dim`` numbers: a
    ``fixed_size_list<value_type>[dim]`` column (nullable unless ``nullable=False``).
    Values are validated as lists of exactly ``dim`` floats."""

    class FixedSizeList(_sized_list(dim, value_type, nullable, "FixedSizeList")):  # type: ignore[misc]
        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            items = core_schema.list_schema(items_schema=core_schema.float_schema(), min_length=dim, max_length=dim)
            return core_schema.no_info_after_validator_function(cls, items)

        @classmethod
        def validate(cls, v: Any) -> "FixedSizeList":
            if not _is_vector(v, dim):
                raise TypeError("A list of numbers or numpy.ndarray is needed")
            return cls(v)

        if not _V2:
            @classmethod
            def __modify_schema__(cls, field_schema: dict) -> None:
                field_schema.update(items={"type": "number"}, maxItems=dim, minItems=dim)

    return FixedSizeList


def MultiVector(dim: int, value_type: pa.DataType = pa.float32(), nullable: bool = True) -> Type[FixedSizeListMixin]:
    """A pydantic field type for several embeddings of ``dim`` numbers each (one row,
    many vectors): a ``list<fixed_size_list<value_type>[dim]>`` column (nullable unless
    ``nullable=False``)."""

    class MultiVectorList(_sized_list(dim, value_type, nullable, "MultiVector")):  # type: ignore[misc]
        @staticmethod
        def is_multi_vector() -> bool:
            return True

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            one = core_schema.list_schema(items_schema=core_schema.float_schema(), min_length=dim, max_length=dim)
            return core_schema.no_info_after_validator_function(cls, core_schema.list_schema(items_schema=one))

        @classmethod
        def validate(cls, v: Any) -> "MultiVectorList":
            if not isinstance(v, (list, range)):
                raise TypeError("A list of vectors is needed")
            if not all(_is_vector(x, dim) for x in v):
                raise TypeError(f"Each vector must be a list of {dim} numbers")
            return cls(v)

        if not _V2:
            @classmethod
            def __modify_schema__(cls, field_schema: dict) -> None:
                field_schema["items"] = {"type": "array", "items": {"type": "number"}, "minItems": dim,
                                         "maxItems": dim}

    return MultiVectorList


def get_extras(field: Any, key: str) -> Any:
    """``key`` of a pydantic field's ``json_schema_extra`` (None when absent)."""
    if hasattr(field, "json_schema_extra"):  # pydantic 2's FieldInfo
        return (field.json_schema_extra or {}).get(key)
    return (field.field_info.extra or {}).get("json_schema_extra", {}).get(key)  # 1's ModelField


def _annotation(field: Any) -> Any:
    # pydantic 2: the annotation; 1: the outer type, Optional taken off (allow_none)
    return field.annotation if hasattr(field, "annotation") else field.outer_type_


def _union_args(tp: Any) -> Optional[tuple]:
    """The members of ``Union[...]`` / ``X | Y``, None for other annotations."""
    if isinstance(tp, _ALIASES) and tp.__origin__ == typing.Union:
        return tp.__args__
    if _UNION_TYPE is not None and isinstance(tp, _UNION_TYPE):
        return tp.__args__
    return None


def _optional_of(tp: Any) -> Any:
    """X for ``Optional[X]`` / ``X | None`` (exactly one other member), else None."""
    args = _union_args(tp)
    if args is None:
        return None
    rest = [a for a in args if a is not type(None)]
    return rest[0] if len(rest) == 1 and len(rest) < len(args) else None


def _subclass(tp: Any, base: type) -> bool:
    try:
        return issubclass(tp, base)
    except TypeError:
        return False


_SCALARS = {int: pa.int64(), float: pa.float64(), str: pa.utf8(), bool: pa.bool_(), bytes: pa.binary(),
            date: pa.date32()}


def _plain_type(tp: Any, field: Any) -> pa.DataType:
    """A scalar, ``datetime`` or list / tuple annotation's type."""
    for py, arrow in _SCALARS.items():
        if tp is py:
            return arrow
    if tp is datetime:
        return pa.timestamp("us", tz=get_extras(field, "tz"))
    if getattr(tp, "__origin__", None) in (list, tuple):
        args = getattr(tp, "__args__", None)
        if not args:  # bare List / Tuple
            raise TypeError(f"Converting Pydantic type to Arrow Type: unsupported type {tp}. "
                            "Specify the element type, e.g. List[int] instead of a bare List.")
        return _list_of(args[0], field)
    raise TypeError(f"Converting Pydantic type to Arrow Type: unsupported type {tp}.")


def _enum_type(tp: Any, field: Any) -> pa.DataType:
    kinds = {type(member.value) for member in tp}
    if len(kinds) != 1:
        return pa.utf8()
    (kind,) = kinds
    return pa.dictionary(pa.int32(), pa.utf8()) if kind is str else _plain_type(kind, field)


def _type_of(tp: Any, field: Any) -> pa.DataType:
    """An annotation's Arrow type (classes first: models, vectors, enums)."""
    if inspect.isclass(tp):
        if _subclass(tp, pydantic.BaseModel):
            return pa.struct(_fields(tp))
        if _subclass(tp, FixedSizeListMixin):
            one = pa.list_(tp.value_arrow_type(), tp.dim())
            return pa.list_(one) if getattr(tp, "is_multi_vector", lambda: False)() else one
        if _subclass(tp, Enum):
            return _enum_type(tp, field)
    return _plain_type(tp, field)


def _list_of(item: Any, field: Any) -> pa.DataType:
    inner = _optional_of(item)
    return pa.list_(_type_of(item if inner is None else inner, field))


def _field_type(field: Any) -> pa.DataType:
    tp = _annotation(field)
    inner = _optional_of(tp)
    if inner is not None:
        return _type_of(inner, field)
    if isinstance(tp, _ALIASES) and tp.__origin__ is list:
        return _list_of(tp.__args__[0], field)
    return _type_of(tp, field)


def is_nullable(field: Any) -> bool:
    """Whether a pydantic field (2's ``FieldInfo``, 1's ``ModelField``) is a nullable
    column: an ``Optional`` / ``Union[..., None]`` annotation, or a ``Vector`` /
    ``MultiVector`` made nullable; a default value alone does not make it one."""
    if not hasattr(field, "annotation"):  # pydantic 1
        tp = _annotation(field)
        if inspect.isclass(tp) and _subclass(tp, FixedSizeListMixin):
            return tp.nullable()
        return bool(field.allow_none)
    tp = field.annotation
    args = _union_args(tp)
    if args is not None:
        return any(a is type(None) for a in args)
    if inspect.isclass(tp) and not isinstance(tp, _ALIASES) and _subclass(tp, FixedSizeListMixin):
        return tp.nullable()
    return False


def _fields(model: Any) -> List[pa.Field]:
    items = model.model_fields if hasattr(model, "model_fields") else model.__fields__
    return [pa.field(name, _field_type(f), is_nullable(f)) for name, f in items.items()]


def pydantic_to_schema(model: Type[Any]) -> pa.Schema:
    """The Arrow schema of a pydantic model class (see the module's text)."""
    return pa.schema(_fields(model))
