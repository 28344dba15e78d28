"""lancer.schema_to_json / json_to_schema against pylance 14's: the same dict for every
Arrow type a Lance dataset holds (and the same refusals), each side reading the
other's, and malformed dicts refused with a ValueError."""

import pyarrow as pa
import pytest

import lance
import lancer

TYPES = [
    pa.null(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
    pa.uint32(), pa.uint64(), pa.float16(), pa.float32(), pa.float64(), pa.string(), pa.large_string(),
    pa.binary(), pa.large_binary(), pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms"),
    pa.time64("us"), pa.time64("ns"), pa.timestamp("s"), pa.timestamp("ns", "America/New_York"),
    pa.duration("ms"), pa.decimal128(10, 2), pa.decimal256(40, 5), pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.timestamp("us", "UTC")), pa.list_(pa.int32()), pa.large_list(pa.string()),
    pa.list_(pa.float32(), 8), pa.binary(16), pa.map_(pa.string(), pa.int32()),
    pa.list_(pa.field("elem", pa.int64(), False)),
    pa.struct([("a", pa.int32()), ("b", pa.list_(pa.struct([("c", pa.string())])))]),
]


def outcome(call):
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the kind is the answer
        return ("error", isinstance(e, ValueError))


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_schema_json_matches_pylance(t):
    schema = pa.schema([pa.field("x", t, True, metadata={"m": "1"}), pa.field("y", pa.int64(), False)],
                       metadata={"k": "v"})
    want = outcome(lambda: lance.schema_to_json(schema))
    got = outcome(lambda: lancer.schema_to_json(schema))
    assert got == want
    if want[0] == "ok":
        assert lancer.json_to_schema(want[1]) == lance.json_to_schema(want[1]) == schema
        assert lance.json_to_schema(got[1]) == schema


@pytest.mark.parametrize("bad", [
    {"nofields": 1},
    {"fields": [{"name": "x", "type": {"type": "nope"}, "nullable": True}]},
    {"fields": [{"name": "x", "type": {"type": "fixed_size_list", "fields": []}, "nullable": True}]},
    {"fields": [{"name": "x", "type": {"type": "timestamp:xx:-"}, "nullable": True}]},
    {"fields": [{"name": "x", "type": {"type": "fixed_size_binary"}, "nullable": True}]},
])
def test_malformed_json_is_refused_as_pylance_does(bad):
    assert outcome(lambda: lancer.json_to_schema(bad)) == outcome(lambda: lance.json_to_schema(bad)) == ("error", True)
