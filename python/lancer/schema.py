"""Lance schemas (:class:`LanceSchema`: field ids, as pylance 14's) and Arrow schemas as JSON-ready dicts, as pylance 14's ``lance.schema_to_json`` /
``lance.json_to_schema`` write and read them: per field its ``name``, ``nullable``,
``metadata`` (when there is any) and ``type`` — Lance's logical type name for a single
value (``int64``, ``string``, ``timestamp:us:UTC``, ``decimal:128:10:2``,
``dict:string:int32:false``, ...), or ``list`` / ``large_list`` / ``fixed_size_list``
(with ``length``) / ``struct`` with their child ``fields``, or ``fixed_size_binary``
with its ``length``."""

from __future__ import annotations

from typing import Any, Dict, List

import pyarrow as pa

from ._introspect import LanceField, LanceSchema  # noqa: F401 (pylance's names in lance.schema)

_NAMES = {
    pa.null(): "null", pa.bool_(): "bool", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32",
    pa.int64(): "int64", pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32",
    pa.uint64(): "uint64", pa.float16(): "halffloat", pa.float32(): "float", pa.float64(): "double",
    pa.string(): "string", pa.binary(): "binary", pa.large_string(): "large_string",
    pa.large_binary(): "large_binary", pa.date32(): "date32:day", pa.date64(): "date64:ms",
}
_TYPES = {v: k for k, v in _NAMES.items()}
_UNITS = {"s", "ms", "us", "ns"}


def _leaf(t: pa.DataType) -> str:
    if t in _NAMES:
        return _NAMES[t]
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz or '-'}"
    if pa.types.is_time32(t):
        return f"time32:{t.unit}"
    if pa.types.is_time64(t):
        return f"time64:{t.unit}"
    if pa.types.is_duration(t):
        return f"duration:{t.unit}"
    if pa.types.is_decimal128(t):
        return f"decimal:128:{t.precision}:{t.scale}"
    if pa.types.is_decimal256(t):
        return f"decimal:256:{t.precision}:{t.scale}"
    if pa.types.is_dictionary(t) and t.value_type in _NAMES and t.index_type in _NAMES:
        return f"dict:{_NAMES[t.value_type]}:{_NAMES[t.index_type]}:false"
    raise ValueError(f"Json conversion: Unsupported type: {t}")


def _type_json(t: pa.DataType) -> Dict[str, Any]:
    if pa.types.is_list(t):
        return {"type": "list", "fields": [_field_json(t.value_field)]}
    if pa.types.is_large_list(t):
        return {"type": "large_list", "fields": [_field_json(t.value_field)]}
    if pa.types.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "fields": [_field_json(t.value_field)], "length": t.list_size}
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed_size_binary", "length": t.byte_width}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(t.field(i)) for i in range(t.num_fields)]}
    return {"type": _leaf(t)}


def _text(m: Any) -> Dict[str, str]:
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in m.items()}


def _field_json(f: pa.Field) -> Dict[str, Any]:
    out: Dict[str, Any] = {"name": f.name, "type": _type_json(f.type), "nullable": f.nullable}
    if f.metadata:
        out["metadata"] = _text(f.metadata)
    return out


def schema_to_json(schema: pa.Schema) -> Dict[str, Any]:
    """``schema`` as a JSON-ready dict (pylance's form)."""
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema_to_json takes a pyarrow.Schema, not {type(schema).__name__}")
    out: Dict[str, Any] = {"fields": [_field_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = _text(schema.metadata)
    return out


def _leaf_type(name: str) -> pa.DataType:
    if name in _TYPES:
        return _TYPES[name]
    parts = name.split(":")
    kind = parts[0]
    try:
        if kind == "timestamp" and len(parts) == 3 and parts[1] in _UNITS:
            return pa.timestamp(parts[1], None if parts[2] == "-" else parts[2])
        if kind == "time32" and len(parts) == 2:
            return pa.time32(parts[1])
        if kind == "time64" and len(parts) == 2:
            return pa.time64(parts[1])
        if kind == "duration" and len(parts) == 2 and parts[1] in _UNITS:
            return pa.duration(parts[1])
        if kind == "decimal" and len(parts) == 4:
            make = pa.decimal128 if parts[1] == "128" else pa.decimal256 if parts[1] == "256" else None
            if make is not None:
                return make(int(parts[2]), int(parts[3]))
        if kind == "dict" and len(parts) >= 4:
            # dict:<value>:<index>:<ordered>; the value type may hold colons itself
            return pa.dictionary(_leaf_type(parts[-2]), _leaf_type(":".join(parts[1:-2])))
    except (ValueError, TypeError, pa.ArrowInvalid) as e:
        raise ValueError(f"Json conversion: Unsupported type: {name!r} ({e})") from e
    raise ValueError(f"Json conversion: Unsupported type: {name!r}")


def _type_from(j: Dict[str, Any]) -> pa.DataType:
    if not isinstance(j, dict) or not isinstance(j.get("type"), str):
        raise ValueError(f"a field's type must be an object with a 'type' name, not {j!r}")
    name = j["type"]
    if name in ("list", "large_list", "fixed_size_list", "struct"):
        fields: List[pa.Field] = [_field_from(f) for f in j.get("fields") or []]
        if name == "struct":
            return pa.struct(fields)
        if not fields:
            raise ValueError("Json conversion: List type requires a field")
        if name == "list":
            return pa.list_(fields[0])
        if name == "large_list":
            return pa.large_list(fields[0])
        if "length" not in j:
            raise ValueError("Json conversion: FixedSizeList type requires a length")
        return pa.list_(fields[0], int(j["length"]))
    if name == "fixed_size_binary":
        if "length" not in j:
            raise ValueError("Json conversion: FixedSizeBinary type requires a length")
        return pa.binary(int(j["length"]))
    return _leaf_type(name)


def _field_from(j: Dict[str, Any]) -> pa.Field:
    if not isinstance(j, dict) or "name" not in j or "type" not in j:
        raise ValueError(f"a field must be an object with 'name', 'type' and 'nullable', not {j!r}")
    return pa.field(str(j["name"]), _type_from(j["type"]), bool(j.get("nullable", True)),
                    metadata=j.get("metadata") or None)


def json_to_schema(schema_json: Dict[str, Any]) -> pa.Schema:
    """The pyarrow schema of a dict :func:`schema_to_json` made."""
    if not isinstance(schema_json, dict) or not isinstance(schema_json.get("fields"), list):
        raise ValueError("json_to_schema takes a dict with a 'fields' list (what schema_to_json returns)")
    return pa.schema([_field_from(f) for f in schema_json["fields"]], metadata=schema_json.get("metadata") or None)
