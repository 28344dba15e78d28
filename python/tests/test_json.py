"""JSON columns (issue 44): Arrow's JSON type (``pa.json_()``) stored as JSONB under the
``lance.json`` extension, read back as JSON text, and the reference's JSON functions in
filters and computed columns (reference JSON guide, lance-reference.txt lines ~8439–8875).

Every answer is compared with pylance's on the same data, pylance running in a
subprocess of its own venv (14, 12 and 11), both directions: datasets pylance wrote are
read by Lancer, datasets Lancer wrote are read by pylance; storage 2.1 and 2.2; several
fragments and pages, deleted rows, an appended fragment. The JSONB bytes of the data files
and the manifest's field are compared too: a value must encode to the same bytes.
"""

import json

import pyarrow as pa
import pytest

import lancer

from test_two_phase import run  # pylance `version` in a subprocess, its answer as JSON

# Shapes: nested objects and arrays, nulls (SQL and JSON), empty containers, unicode keys,
# numbers at the edges of i64 / u64 / f64, strings that look like numbers or booleans,
# text with spaces and escapes, deep nesting.
DOCS = [
    json.dumps({"a": 1, "s": "x", "arr": [1, "two", 3.5, None, True], "b": True, "n": None,
                "o": {"k": "v", "n": {"deep": [1, {"z": 2}]}}, "é": "ü", "日本": 3}),
    None,
    json.dumps([10, "x", {"k": 1}, [2, 3]]),
    "{}",
    "[]",
    "null",
    '"just a string"',
    "12",
    json.dumps({"i64max": 9223372036854775807, "i64min": -9223372036854775808,
                "u64": 18446744073709551615, "big": 1e308, "tiny": 5e-324, "f": 0.1,
                "neg0": -0.0, "three": 3.0, "a": -7, "arr": [9223372036854775807, -1]}),
    json.dumps({"a": "12", "b": "true", "s": 5, "arr": [], "tags": ["python", "ml"]}),
    json.dumps({"a": 2.75, "b": 0, "s": None, "arr": [["python"], "python", 1.0]}),
    json.dumps({"a": True, "b": "false", "arr": "not an array", "tags": []}),
    ' { "a" : 4 ,\n "s":"tab\\tand \\u00e9 and \\ud83d\\ude00", "o" : { } } ',
    '{"dup": [1, 1], "x": {"y": {"z": {"w": [[[]]]}}}}',
    json.dumps({"o": {"k": None}, "arr": [None], "tags": ["python", "data", "production", "x"]}),
]

PATHS = ["$", "$.a", "$.s", "$.b", "$.n", "$.arr", "$.arr[0]", "$.arr[1]", "$.arr[*]",
         "$.arr[last]", "$.o", "$.o.k", "$.o.n.deep[1].z", "$.o.*", "$.missing", "$.é", '$."日本"',
         "$[0]", "$[2].k", "$[*]", "$.i64max", "$.u64", "$.big", "$.tiny", "$.neg0", "$.tags",
         "$.dup"]
KEYS = ["a", "s", "b", "n", "0", "1", "2", "3", "missing", "é", "日本", "i64max", "i64min", "u64",
        "big", "f", "neg0", "three", "arr", "o", "tags", ""]
GETS = ["json_get_string", "json_get_int", "json_get_float", "json_get_bool"]

EXPRS = (
    [f"json_extract(j, '{p}')" for p in PATHS]
    + [f"json_exists(j, '{p}')" for p in PATHS]
    + [f"json_array_length(j, '{p}')" for p in PATHS]
    + [f"{g}(j, '{k}')" for g in GETS for k in KEYS]
    + [f"json_get(j, '{k}')" for k in KEYS]
    + [f"json_array_contains(j, '$.{p}', '{v}')" for p in ["arr", "tags", "o"]
       for v in ["two", "python", "1", "3.5", "true", "null", "x", '"two"']]
    + ["json_get_string(json_get(j, 'o'), 'k')",
       "json_get_int(json_get(json_get(json_get(j, 'o'), 'n'), 'deep'), '0')",
       "json_extract(json_get(j, 'o'), '$.n.deep[1]')",
       "json_get_string(j, NULL)", "json_extract(j, NULL)",
       "json_extract(j, 'not a path')", "json_get_int(j, 'a') + 1"]
)

FILTERS = [
    "json_get_int(j, 'a') = 1",
    "json_get_float(j, 'a') > 0.5",
    "json_extract(j, '$.s') = '\"x\"'",
    "json_exists(j, '$.o.k')",
    "NOT json_exists(j, '$.a')",
    "json_array_length(j, '$.tags') > 1",
    "json_array_contains(j, '$.tags', 'python')",
    "json_get_string(j, '1') = 'x'",
    "json_get_bool(j, 'b')",
    "json_get_string(json_get(j, 'o'), 'k') = 'v'",
    "json_extract(j, '$.arr[0]') IS NULL AND id > 3",
    "j IS NULL",
    "j IS NOT NULL AND json_get_int(j, 'i64max') = 9223372036854775807",
]

# Runs in pylance's venv (a subprocess) and, with `lancer` as `lance`, in this process:
# the answers of one dataset, errors as "ERROR" (the messages differ between engines).
ANSWERS = r'''
import base64, json, sys

def answers(lance, path, exprs, filters):
    ds = lance.dataset(path)
    t = ds.to_table()
    out = {"rows": t.column("j").to_pylist(), "ids": t.column("id").to_pylist(),
           "type": str(ds.schema.field("j").type), "read_type": str(t.schema.field("j").type),
           "take": ds.take([0, 2, 5], columns=["j"]).column("j").to_pylist(),
           "exprs": {}, "filters": {}}
    for e in exprs:
        try:
            c = ds.to_table(columns={"id": "id", "x": e})
            vals = c.column("x").to_pylist()
            vals = [base64.b64encode(v).decode() if isinstance(v, bytes) else v for v in vals]
            out["exprs"][e] = [str(c.schema.field("x").type), vals]
        except Exception:
            out["exprs"][e] = "ERROR"
    for f in filters:
        try:
            out["filters"][f] = sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())
        except Exception:
            out["filters"][f] = "ERROR"
    return out


def per_row(lance, path, exprs):
    """Each expression on each row alone (a filter on the id picks it): a value or
    "ERROR" per row, so one row that does not convert hides no other row's answer."""
    ds = lance.dataset(path)
    ids = ds.to_table(columns=["id"]).column("id").to_pylist()
    out = {}
    for e in exprs:
        row = []
        for i in ids:
            try:
                v = ds.to_table(columns={"x": e}, filter=f"id = {i}").column("x").to_pylist()
                row.append([base64.b64encode(x).decode() if isinstance(x, bytes) else x for x in v])
            except Exception:
                row.append("ERROR")
        out[e] = row
    return out
'''
exec(ANSWERS)

RUN_ANSWERS = ANSWERS + r'''
import lance
print(json.dumps(answers(lance, sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]))))
'''

RUN_PER_ROW = ANSWERS + r'''
import lance
print(json.dumps(per_row(lance, sys.argv[1], json.loads(sys.argv[2]))))
'''

# Writes the test dataset in pylance's venv (or, with `lancer` as `lance`, here).
WRITE = r'''
import json, sys
import pyarrow as pa

def vary(doc, i):
    # objects get their row number (so values are mostly distinct: no dictionary
    # encoding); in the first fragment every 97th a 6 KB string (full-zip pages there,
    # mini-blocks in the others)
    if doc is None or not doc.strip().startswith("{"):
        return doc
    inner = doc.strip()[1:-1].strip()
    head = f'"row": {i}' + (f', "long": "{"é" * 3000}"' if i < 400 and i % 97 == 5 else "")
    return "{" + head + (", " + inner if inner else "") + "}"

def table(docs, start, n):
    rows = [vary(docs[i % len(docs)], i) for i in range(start, start + n)]
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "j": pa.array(rows, type=pa.json_())})

def write(lance, path, storage, docs):
    # three fragments of 400 rows (several pages each), deletions, then an append
    lance.write_dataset(table(docs, 0, 1200), path, data_storage_version=storage,
                        max_rows_per_file=400, max_rows_per_group=64)
    ds = lance.dataset(path)
    ds.delete("id % 7 = 3 OR (id >= 400 AND id < 800 AND id % 2 = 0)")
    lance.write_dataset(table(docs, 1200, 300), path, mode="append")
'''
exec(WRITE)

RUN_WRITE = WRITE + r'''
import lance
write(lance, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
print(json.dumps("ok"))
'''

# The JSONB bytes of every data file (in fragment order) and the manifest's field,
# as pylance 14 sees them.
RUN_BYTES = r'''
import base64, json, sys
import lance
from lance.file import LanceFileReader
ds = lance.dataset(sys.argv[1])
out = []
for frag in ds.get_fragments():
    for df in frag.data_files():
        t = LanceFileReader(sys.argv[1] + "/data/" + df.path).read_all().to_table()
        out.append({"type": str(t.schema.field("j").type),
                    "meta": {k.decode(): v.decode() for k, v in t.schema.field("j").metadata.items()},
                    "bytes": [None if v is None else base64.b64encode(v).decode()
                              for v in t.column("j").to_pylist()]})
import re
field = [line for line in repr(ds.lance_schema).split("Field {") if 'name: "j"' in line][0]
# the metadata map prints in hash order: as a sorted list
meta = re.search(r"metadata: \{([^}]*)\}", field)
field = field.replace(meta.group(0), "metadata: " + repr(sorted(meta.group(1).split(", "))))
print(json.dumps({"files": out, "manifest_field": field}))
'''


def pylance_answers(version, path):
    return run(version, RUN_ANSWERS, path, json.dumps(EXPRS), json.dumps(FILTERS))


def lancer_answers(path):
    return answers(lancer, str(path), EXPRS, FILTERS)


def differences(a, b):
    """The keys whose answers differ between two answer sets."""
    out = [k for k in ("rows", "ids", "type", "read_type", "take") if a[k] != b[k]]
    out += [e for e in EXPRS if a["exprs"][e] != b["exprs"][e]]
    out += [f for f in FILTERS if a["filters"][f] != b["filters"][f]]
    return out


VERSIONS = ["14", "12", "11"]
STORAGE = ["2.1", "2.2"]


@pytest.fixture(scope="module")
def p14_on(tmp_path_factory):
    """pylance 14's answers on a dataset path (cached)."""
    cache = {}

    def get(path):
        if str(path) not in cache:
            cache[str(path)] = pylance_answers("14", path)
        return cache[str(path)]
    return get


def check_against(version, path, mine, theirs, p14):
    """Lancer answers as pylance 14 does on the same dataset; pylance 12 / 11 answer as
    pylance 14 except where their JSON functions changed (listed, and kept small)."""
    assert differences(mine, p14) == []
    if version != "14":
        changed = differences(theirs, p14)
        assert changed == [], f"pylance {version} differs from pylance 14 on {changed}"


@pytest.mark.parametrize("storage", STORAGE)
@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_written_json_reads_and_queries_the_same(tmp_path, version, storage, p14_on):
    path = tmp_path / "p.lance"
    run(version, RUN_WRITE, path, storage, json.dumps(DOCS))
    theirs = pylance_answers(version, path)
    mine = lancer_answers(path)
    assert mine["type"] == mine["read_type"] == "extension<arrow.json>"
    # the rows read: every shape, the deleted rows gone, the appended fragment there
    assert len(mine["rows"]) == len(theirs["rows"]) > 900
    check_against(version, path, mine, theirs, p14_on(path))
    # a few answers checked by hand, so the comparison cannot pass on two wrong engines
    assert mine["exprs"]["json_extract(j, '$.o.k')"][1][0] == '"v"'
    assert mine["exprs"]["json_get_int(j, 'i64max')"] == "ERROR" or \
        9223372036854775807 in mine["exprs"]["json_get_int(j, 'i64max')"][1]
    assert mine["filters"]["json_get_string(j, '1') = 'x'"] != []


@pytest.mark.parametrize("storage", STORAGE)
@pytest.mark.parametrize("version", VERSIONS)
def test_lancer_written_json_reads_the_same_in_pylance(tmp_path, version, storage, p14_on):
    mine_path = tmp_path / "l.lance"
    write(lancer, str(mine_path), storage, DOCS)
    theirs = pylance_answers(version, mine_path)
    mine = lancer_answers(mine_path)
    check_against(version, mine_path, mine, theirs, p14_on(mine_path))
    assert theirs["rows"] == mine["rows"]
    # the same data written by that pylance: the same JSONB bytes in every data file,
    # the same field in the manifest
    their_path = tmp_path / "p.lance"
    run(version, RUN_WRITE, their_path, storage, json.dumps(DOCS))
    a = run("14", RUN_BYTES, mine_path)
    b = run("14", RUN_BYTES, their_path)
    assert a["manifest_field"] == b["manifest_field"] and "LogicalType(\"json\")" in a["manifest_field"]
    assert [f["type"] for f in a["files"]] == ["large_binary"] * 4
    assert a["files"] == b["files"]


TYPED = [f"{g}(j, '{k}')" for g in GETS for k in KEYS] + [
    f"json_array_length(j, '{p}')" for p in PATHS]


@pytest.mark.parametrize("version", VERSIONS)
def test_typed_getters_answer_row_by_row_as_pylance(tmp_path, version):
    """The strict conversions row by row (a query over all rows fails as soon as one
    row does not convert): Lancer's answer or failure for every document shape and key
    is pylance 14's, and pylance 12's and 11's are the same."""
    path = tmp_path / "shapes.lance"
    docs = pa.table({"id": pa.array(range(len(DOCS)), pa.int64()), "j": pa.array(DOCS, type=pa.json_())})
    lancer.write_dataset(docs, str(path))
    mine = per_row(lancer, str(path), TYPED)
    theirs = run(version, RUN_PER_ROW, path, json.dumps(TYPED))
    assert {e: v for e, v in mine.items() if v != theirs[e]} == {}
    failures = sum(v == "ERROR" for row in mine.values() for v in row)
    values = sum(v not in ("ERROR", [None]) for row in mine.values() for v in row)
    assert failures > 50 and values > 100, (failures, values)


def test_lancer_reads_its_own_json_and_pylance_appends(tmp_path):
    """Lancer appends to a pylance dataset and pylance to a Lancer one: one dataset,
    both engines' fragments, every row as written."""
    path = tmp_path / "mixed.lance"
    run("14", RUN_WRITE, path, "2.1", json.dumps(DOCS))
    extra = pa.table({"id": pa.array([5000, 5001], pa.int64()),
                      "j": pa.array(['{"z": [1, {"y": null}]}', None], type=pa.json_())})
    lancer.write_dataset(extra, str(path), mode="append")
    theirs = pylance_answers("14", path)
    mine = lancer_answers(path)
    assert differences(mine, theirs) == []
    assert mine["rows"][-2:] == ['{"z":[1,{"y":null}]}', None]


RUN_INDEX = r'''
import json, sys
import lance
from lance.indices import IndexConfig
ds = lance.dataset(sys.argv[1])
ds.create_scalar_index("j", IndexConfig(index_type="json",
                       parameters={"target_index_type": "btree", "path": "i64max"}), name="ja")
lance.dataset(sys.argv[1]).create_scalar_index("j", "BTREE", name="jb")
print(json.dumps("ok"))
'''


def test_pylance_json_indexes_leave_lancers_answers_alone(tmp_path, p14_on):
    """A dataset with pylance 14's JSON index (on a path) and a BTREE over the JSONB
    bytes: Lancer answers every filter and computed column as pylance does with its
    indexes; it refuses a BTREE on the JSON column itself and builds an INVERTED one
    (path,type,value triples, as pylance's)."""
    path = tmp_path / "ix.lance"
    run("14", RUN_WRITE, path, "2.1", json.dumps(DOCS))
    run("14", RUN_INDEX, path)
    assert differences(lancer_answers(path), p14_on(path)) == []
    with pytest.raises(Exception, match="JSON"):
        lancer.dataset(str(path)).create_scalar_index("j", "BTREE", name="mine")
    ds = lancer.dataset(str(path))
    ds.create_scalar_index("j", "INVERTED", name="fts")
    assert "fts" in {i["name"] for i in lancer.dataset(str(path)).list_indices()}


def test_json_mistakes_are_named(tmp_path):
    path = str(tmp_path / "m.lance")
    bad = pa.table({"id": pa.array([0, 1], pa.int64()),
                    "j": pa.array(['{"a": 1}', '{"a": '], type=pa.json_())})
    with pytest.raises(Exception, match=r"(?s)JSON column .j.*row 1"):
        lancer.write_dataset(bad, path)
    # duplicate keys: refused by both engines' parser (the same crate)
    dup = pa.table({"id": pa.array([0], pa.int64()), "j": pa.array(['{"a": 1, "a": 2}'], type=pa.json_())})
    with pytest.raises(Exception, match="duplicate"):
        lancer.write_dataset(dup, path)
    lancer.write_dataset(bad.slice(0, 1), path)
    # a plain string column does not go into a JSON column (pylance refuses it too)
    plain = pa.table({"id": pa.array([2], pa.int64()), "j": pa.array(['{"b": 2}'])})
    with pytest.raises(Exception, match="JSON"):
        lancer.write_dataset(plain, path, mode="append")
    # a value that does not convert fails the query, as in pylance
    word = pa.table({"id": pa.array([3], pa.int64()),
                     "j": pa.array(['{"a": "one"}'], type=pa.json_())})
    lancer.write_dataset(word, path, mode="append")
    with pytest.raises(Exception, match="integer"):
        lancer.dataset(path).to_table(filter="json_get_int(j, 'a') > 0")
    assert lancer.dataset(path).to_table(filter="json_get_string(j, 'a') = 'one'")["id"].to_pylist() == [3]


# JSON path indexes (pylance 14's index_type="json"): the same indexes built by either
# engine answer the same filters in both, every pylance reads and uses Lancer's.
PATH_DOCS = """
def path_docs(lo, hi):
    out = []
    for i in range(lo, hi):
        if i % 13 == 5:
            out.append(None)
            continue
        d = {"s": f"v{i % 30}", "f": i / 8 + 0.25, "o": {"k": i % 50}}
        if i % 7:
            d["x"] = None if i % 9 == 0 else i % 100 - 20
        out.append(json.dumps(d))
    return out
"""
exec(PATH_DOCS)


PATH_INDEXES = [("x", "btree", "x_idx"), ("s", "bitmap", "s_idx"), ("$.o.k", "btree", "ok_idx"),
                ("f", "btree", "f_idx")]
PATH_FILTERS = [
    "json_get_int(j, 'x') = 10", "json_get_int(j, 'x') > 50", "json_get_int(j, 'x') BETWEEN -5 AND 5",
    "json_get_int(j, 'x') IN (1, 2, 3, 1000)", "json_get_int(j, 'x') IS NULL",
    "json_get_int(j, 'x') < 0 AND id > 500", "json_get_string(j, 's') = 'v7'",
    "json_get_string(j, 's') IN ('v1', 'v29')", "json_get_float(j, 'f') < 20.5",
    "json_get_float(j, 'f') >= 100", "json_get_int(j, '$.o.k') = 7",
    "json_extract(j, '$.x') = '10'", "json_get_int(j, 'missing') = 1",
]
# the filters pylance 14 answers through its JSON index; Lancer uses it for the same ones
PATH_INDEXED = [f for f in PATH_FILTERS if not f.startswith(("json_extract", "json_get_int(j, 'missing')"))]

RUN_PATHS = '''
import json, sys, lance, pyarrow as pa
path, write, index, filters = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3]), json.loads(sys.argv[4])
if write:
    exec(sys.argv[5])
    docs = path_docs(0, 2500)
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=pa.json_())})
    ds = lance.write_dataset(t, path, max_rows_per_file=700, data_storage_version="2.1")
    ds.delete("id % 17 = 3")
ds = lance.dataset(path)
if index:
    from lance.indices import IndexConfig
    for p, target, name in index:
        ds.create_scalar_index("j", IndexConfig(index_type="json",
                               parameters={"target_index_type": target, "path": p}), name=name)
    ds = lance.dataset(path)
out = {"types": sorted({i["type"] for i in ds.list_indices()}), "answers": {}}
for f in filters:
    ids = sorted(ds.to_table(filter=f, columns=["id"]).column("id").to_pylist())
    out["answers"][f] = [ids, "ScalarIndexQuery" in ds.scanner(filter=f).explain_plan()]
print(json.dumps(out))
'''


def _lancer_path_answers(path):
    ds = lancer.dataset(str(path))
    out = {}
    for f in PATH_FILTERS:
        ids = sorted(ds.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        out[f] = [ids, "ScalarIndexQuery" in ds.scanner(filter=f).explain_plan()]
    return out


def test_json_path_indexes_of_either_engine_answer_alike(tmp_path):
    """pylance 14's JSON path indexes (btree / bitmap on integer, string, float and
    nested paths) are used by Lancer for the same filters with pylance's rows; the same
    indexes built by Lancer (``IndexConfig``, as pylance is called) are listed as
    ``Json`` with pylance's details URL, and pylance 14, 12 and 11 use them with Lancer's
    rows, also after rows are appended and added by either engine's optimize."""
    docs = path_docs(0, 2500)  # noqa: F821 (from PATH_DOCS)
    theirs = tmp_path / "theirs.lance"
    p14 = run("14", RUN_PATHS, theirs, "1", json.dumps(PATH_INDEXES), json.dumps(PATH_FILTERS), PATH_DOCS)
    assert p14["types"] == ["Json"]
    assert sorted(f for f, (_, used) in p14["answers"].items() if used) == sorted(PATH_INDEXED)
    mine = _lancer_path_answers(theirs)
    assert mine == p14["answers"]
    assert {i["type"] for i in lancer.dataset(str(theirs)).list_indices()} == {"Json"}

    ours = tmp_path / "ours.lance"
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=pa.json_())})
    ds = lancer.write_dataset(t, str(ours), max_rows_per_file=700, data_storage_version="2.1")
    ds.delete("id % 17 = 3")
    for p, target, name in PATH_INDEXES:
        ds.create_scalar_index("j", lancer.indices.IndexConfig(
            index_type="json", parameters={"target_index_type": target, "path": p}), name=name)
    mine = _lancer_path_answers(ours)
    assert mine == p14["answers"]
    desc = {d.name: d.type_url for d in lancer.dataset(str(ours)).describe_indices()}
    assert set(desc.values()) == {"/lance.index.pb.JsonIndexDetails"}
    for version in VERSIONS:
        got = run(version, RUN_PATHS, ours, "0", "[]", json.dumps(PATH_FILTERS))
        assert got["types"] == ["Json"], version
        assert got["answers"] == p14["answers"], version

    # appended rows, added by Lancer's optimize; then more by pylance 14's
    more = path_docs(2500, 2900)  # noqa: F821
    extra = pa.table({"id": pa.array(range(2500, 2900), pa.int64()), "j": pa.array(more, type=pa.json_())})
    lancer.write_dataset(extra, str(ours), mode="append")
    lancer.dataset(str(ours)).optimize.optimize_indices()
    want = _lancer_path_answers(ours)
    assert any(i >= 2500 for i in want["json_get_int(j, 'x') = 10"][0])
    assert all(used for f, (_, used) in want.items() if f in PATH_INDEXED)
    got = run("14", RUN_PATHS, ours, "0", "[]", json.dumps(PATH_FILTERS))
    assert got["answers"] == want
    run("14", "import sys, lance; lance.dataset(sys.argv[1]).optimize.optimize_indices(); print(1)", ours)
    assert _lancer_path_answers(ours) == want


def test_json_path_index_refusals_are_named(tmp_path):
    """A path holding values of two types, arrays, a missing path, an INVERTED target and
    a JSON index on a plain column are refused with what is wrong, as pylance refuses them."""
    from lancer.indices import IndexConfig

    path = str(tmp_path / "r.lance")
    t = pa.table({"id": pa.array([0, 1, 2], pa.int64()),
                  "j": pa.array(['{"x": 10, "a": [1]}', '{"x": 10.5, "a": [2]}', '{"x": "s"}'],
                                type=pa.json_())})
    ds = lancer.write_dataset(t, path)
    cfg = lambda **p: IndexConfig(index_type="json", parameters=p)  # noqa: E731
    with pytest.raises(ValueError, match="expected Int64.*Float64"):
        ds.create_scalar_index("j", cfg(path="x", target_index_type="btree"))
    with pytest.raises(ValueError, match="Array.*only scalar"):
        ds.create_scalar_index("j", cfg(path="a", target_index_type="btree"))
    with pytest.raises(ValueError, match="path"):
        ds.create_scalar_index("j", cfg(target_index_type="btree"))
    with pytest.raises(ValueError, match="INVERTED index directly"):
        ds.create_scalar_index("j", cfg(path="x", target_index_type="inverted"))
    with pytest.raises(ValueError, match="not a JSON column"):
        ds.create_scalar_index("id", cfg(path="x", target_index_type="btree"))
    with pytest.raises(TypeError, match="unexpected"):
        ds.create_scalar_index("j", cfg(path="x", target_index_type="btree", colour="red"))


RUN_NEAREST = '''
import json, sys, lance, numpy as np
ds = lance.dataset(sys.argv[1])
out = []
for pre in (False, True):
    t = ds.to_table(nearest={"column": "v", "q": np.zeros(8, "float32"), "k": 7},
                    filter="json_get_int(j, 'a') > 100", prefilter=pre, columns=["id", "j"])
    out.append([str(t.schema.field("j").type), t.column("id").to_pylist(), t.column("j").to_pylist()])
print(json.dumps(out))
'''


@pytest.mark.parametrize("indexed", [False, True])
def test_vector_search_results_carry_json_text_as_pylance(tmp_path, indexed):
    """Vector search results with a JSON column (exact and through IVF_FLAT, filtered
    by a JSON function before and after the search) hold JSON text of Arrow's JSON type,
    as pylance 14's (they held the stored JSONB bytes)."""
    import numpy as np

    n = 300
    rng = np.random.default_rng(5)
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
                  "j": pa.array([json.dumps({"a": i, "s": f"x{i}"}) for i in range(n)], type=pa.json_())})
    path = str(tmp_path / "v.lance")
    ds = lancer.write_dataset(t, path)
    if indexed:
        ds.create_index("v", "IVF_FLAT", num_partitions=2)
    ds = lancer.dataset(path)
    mine = []
    for pre in (False, True):
        r = ds.to_table(nearest={"column": "v", "q": np.zeros(8, "float32"), "k": 7},
                        filter="json_get_int(j, 'a') > 100", prefilter=pre, columns=["id", "j"])
        mine.append([str(r.schema.field("j").type), r.column("id").to_pylist(), r.column("j").to_pylist()])
    assert mine == run("14", RUN_NEAREST, path)
    assert all(m[2] and all(isinstance(x, str) for x in m[2]) for m in mine)


EDGE_INDEX = '''
import json, sys, lance
from lance.indices import IndexConfig
path, build = sys.argv[1], sys.argv[2] == "1"
ds = lance.dataset(path)
if build:
    ds.create_scalar_index("j", IndexConfig(index_type="json",
                           parameters={"target_index_type": "btree", "path": "x"}), name="x_idx")
    ds = lance.dataset(path)
out = {"types": [i["type"] for i in ds.list_indices()]}
for f in json.loads(sys.argv[3]):
    out[f] = sorted(ds.to_table(filter=f, columns=["id"]).column("id").to_pylist())
print(json.dumps(out))
'''


@pytest.mark.parametrize("shape", ["empty", "path_never_present", "all_null_docs"])
@pytest.mark.parametrize("builder", ["pylance", "lancer"])
def test_json_path_index_edge_shapes(tmp_path, shape, builder):
    """A JSON path index over an empty dataset, over documents none of which has the
    path, and over null documents only: built by either engine, listed and answered
    alike by both (no rows; the index's value type is pylance's, utf8, for nothing)."""
    docs = {"empty": [], "path_never_present": ['{"a": 1}', '{"b": [2]}', None],
            "all_null_docs": [None, None]}[shape]
    path = tmp_path / "d"
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=pa.json_())})
    lancer.write_dataset(t, str(path), data_storage_version="2.2")
    filters = ["json_get_string(j, 'x') = 'a'", "json_get_string(j, 'x') IS NULL",
               "json_get_int(j, 'x') = 1"]
    if builder == "lancer":
        lancer.dataset(str(path)).create_scalar_index("j", lancer.indices.IndexConfig(
            index_type="json", parameters={"target_index_type": "btree", "path": "x"}), name="x_idx")
    theirs = run("14", EDGE_INDEX, path, "1" if builder == "pylance" else "0", json.dumps(filters))
    assert theirs["types"] == ["Json"]
    ours = lancer.dataset(str(path))
    assert [i["type"] for i in ours.list_indices()] == ["Json"]
    for f in filters:
        assert sorted(ours.to_table(filter=f, columns=["id"]).column("id").to_pylist()) == theirs[f], f


FTS_DOCS = [
    {"title": "Hello worlds", "n": 3, "tags": ["a b", "c"], "o": {"k": "hello there"}},
    {"title": "other words", "o": {"k": "Hello"}, "x": 1.5, "e": 1e20, "z": None, "b": True},
    {"arr": [[1, 2], {"k": "v w"}], "a.b": "dotted key", "uni": "Café naïve", "emp": "", "eo": {}},
    "just a string", 42, ["top", "level", {"k": "nested in list"}],
    None,
    {"title": "hello hello hello", "neg": -7, "zero": 0.0, "big": 12345678901234},
]
FTS_QUERIES = ["title,str,hello", "title,str,world hello", "o.k,str,hello", "n,number,3", "tags,str,c",
               "x,number,1.5", "e,number,1e+20", "b,bool,true", "z,null,null", ",str,string",
               ",number,42", "arr.k,str,V", "uni,str,CAFÉ", "a.b,str,keys", "k,str,nested",
               "neg,number,-7", "zero,number,0.0", "big,number,12345678901234", "title,str,", "nothing,str,x"]

FTS_ANSWERS = '''
def fts_answers(ds, queries):
    """Rows and BM25 scores per query; for malformed triples the kind of the error."""
    out = {}
    for q in queries:
        rows = ds.to_table(full_text_query=q, columns=["id"]).to_pylist()
        out[q] = sorted([r["id"], round(r["_score"], 4)] for r in rows)
    for q in ["hello", "x,float,1"]:
        try:
            ds.to_table(full_text_query=q)
            out[q] = "no error"
        except Exception as e:
            out[q] = "ValueError" if isinstance(e, ValueError) else type(e).__name__
    return out
'''
exec(FTS_ANSWERS)

RUN_FTS = FTS_ANSWERS + '''
import json, sys, lance
path, build, queries = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
ds = lance.dataset(path)
if build:
    ds.create_scalar_index("j", "INVERTED")
    ds = lance.dataset(path)
print(json.dumps(fts_answers(ds, queries)))
'''


@pytest.mark.parametrize("builder", ["pylance", "lancer"])
def test_full_text_indexes_on_json_documents_answer_as_pylance(tmp_path, builder):
    """INVERTED indexes on a JSON column (``path,type,value`` triples: strings
    analyzed, numbers / booleans / null as written, arrays transparent): built by
    either engine, searched by both with the same rows and BM25 scores; rows appended
    after the build are searched unindexed alike; malformed triples are refused by both
    with pylance's error kind."""
    docs = [None if d is None else json.dumps(d) for d in FTS_DOCS]
    path = tmp_path / "d"
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=pa.json_())})
    lancer.write_dataset(t, str(path), data_storage_version="2.2", max_rows_per_file=3)
    if builder == "lancer":
        lancer.dataset(str(path)).create_scalar_index("j", "INVERTED")
        idx = lancer.dataset(str(path)).describe_indices()[0]
        assert idx.type_url.endswith("InvertedIndexDetails")
    theirs = run("14", RUN_FTS, path, "1" if builder == "pylance" else "0", json.dumps(FTS_QUERIES))
    ours = lancer.dataset(str(path))
    assert [i["type"] for i in ours.list_indices()] == ["Inverted"]

    def mine(ds):
        return fts_answers(ds, FTS_QUERIES)  # noqa: F821 (from FTS_ANSWERS)
    got = mine(ours)
    for q in FTS_QUERIES + ["hello", "x,float,1"]:
        assert got[q] == theirs[q], (q, got[q], theirs[q])
    assert any(theirs[q] for q in FTS_QUERIES)
    # rows appended after the build: searched unindexed, alike
    more = pa.table({"id": pa.array([100, 101], pa.int64()),
                     "j": pa.array([json.dumps({"title": "hello again"}), json.dumps({"n": 3})], type=pa.json_())})
    lancer.write_dataset(more, str(path), mode="append")
    theirs = run("14", RUN_FTS, path, "0", json.dumps(FTS_QUERIES))
    got = mine(lancer.dataset(str(path)))
    for q in FTS_QUERIES:
        assert got[q] == theirs[q], (q, got[q], theirs[q])
    assert any(r[0] == 100 for r in got["title,str,hello"])


ZONE_RUN = '''
import json, sys, lance
from lance.indices import IndexConfig
path, build, filters = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
ds = lance.dataset(path)
if build:
    ds.create_scalar_index("j", IndexConfig(index_type="json",
                           parameters={"path": "x", "target_index_type": "zonemap"}), name="zm")
    ds.create_scalar_index("j", IndexConfig(index_type="json",
                           parameters={"path": "s", "target_index_type": "bloomfilter"}), name="bf")
    ds = lance.dataset(path)
out = {}
for f in filters:
    out[f] = [sorted(ds.to_table(filter=f, columns=["id"]).column("id").to_pylist()),
              "ScalarIndexQuery" in ds.scanner(filter=f, columns=["id"]).explain_plan()]
print(json.dumps(out))
'''


@pytest.mark.parametrize("builder", ["pylance", "lancer"])
def test_json_zonemap_targets_answer_as_pylance(tmp_path, builder):
    """A JSON path index with a ZONEMAP target (pylance 14 builds them): either
    engine's is used by both for the typed accessor's ranges (candidates rechecked)
    with a scan's rows; pylance's BLOOMFILTER target is left unused by lancer (a bloom
    filter does not record its values' type) and its rows are still pylance's."""
    docs = [json.dumps({"x": i, "s": f"v{i % 30}"}) if i % 11 else None for i in range(4000)]
    path = tmp_path / "d"
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=pa.json_())})
    lancer.write_dataset(t, str(path), data_storage_version="2.2", max_rows_per_file=1000)
    lancer.dataset(str(path)).delete("id % 13 = 5")
    filters = ["json_get_int(j, 'x') > 3990", "json_get_int(j, 'x') BETWEEN 100 AND 120",
               "json_get_int(j, 'x') = 7", "json_get_string(j, 's') = 'v7'"]
    if builder == "lancer":
        lancer.dataset(str(path)).create_scalar_index("j", lancer.indices.IndexConfig(
            index_type="json", parameters={"path": "x", "target_index_type": "zonemap"}), name="zm")
    theirs = run("14", ZONE_RUN, path, "1" if builder == "pylance" else "0", json.dumps(filters))
    ours = lancer.dataset(str(path))
    for f in filters:
        rows = sorted(ours.to_table(filter=f, columns=["id"]).column("id").to_pylist())
        assert rows == theirs[f][0], f
        used = "@zm(ZoneMap)" in ours.scanner(filter=f, columns=["id"]).explain_plan()
        assert used == f.startswith("json_get_int"), f
        if f.startswith("json_get_int"):
            assert theirs[f][1], f


def generated_docs(seed, n):
    """Documents of drawn shapes: nested objects (to depth 3), arrays of mixed values,
    integers (negative, large), floats, booleans, nulls, strings of a small vocabulary
    (case and accents varied), empty objects and arrays, scalars and arrays at the top."""
    import random
    rng = random.Random(seed)
    words = ["alpha", "Beta", "gamma", "DELTA", "café", "naïve", "x", "hello world", ""]

    def value(depth):
        k = rng.randrange(9 if depth < 3 else 6)
        if k == 0:
            return rng.choice([0, 1, -7, 42, 12345678901234, -2 ** 40])
        if k == 1:
            return rng.choice([0.5, -1.25, 1e20, 3.0])
        if k == 2:
            return rng.choice([True, False])
        if k == 3:
            return None
        if k in (4, 5):
            return " ".join(rng.sample(words, rng.randrange(1, 3)))
        if k == 6:
            return [value(depth + 1) for _ in range(rng.randrange(0, 4))]
        return {rng.choice(["a", "b", "k", "tags", "t"]): value(depth + 1) for _ in range(rng.randrange(0, 4))}

    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.05:
            out.append(None)
        elif r < 0.12:
            out.append(value(2))
        else:
            out.append({rng.choice(["title", "a", "b", "k", "o", "n"]): value(1) for _ in range(rng.randrange(1, 5))})
    return out


def generated_queries(docs, seed):
    """`path,type,value` triples drawn from the documents' own leaves (strings by a
    word of them), plus paths and values no document has."""
    import random
    rng = random.Random(seed)
    leaves = []

    def walk(v, path):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}.{k}" if path else k)
        elif isinstance(v, list):
            for x in v:
                walk(x, path)
        elif isinstance(v, bool):
            leaves.append(f"{path},bool,{str(v).lower()}")
        elif v is None:
            leaves.append(f"{path},null,null")
        elif isinstance(v, (int, float)):
            leaves.append(f"{path},number,{v}")
        elif v:
            leaves.append(f"{path},str,{rng.choice(v.split())}")
    for d in docs:
        walk(d, "")
    picked = sorted(set(rng.sample(leaves, min(30, len(leaves)))))
    return picked + ["title,str,nowhere", "zz,number,1", "a.b.k,str,alpha"]


@pytest.mark.parametrize("seed", [1, 2])
def test_full_text_on_generated_json_shapes_answers_as_pylance(tmp_path, seed):
    """INVERTED indexes over drawn document shapes (3 fragments, a deleted row),
    built by pylance and by Lancer, answer every drawn triple with pylance's rows and
    BM25 scores."""
    docs = generated_docs(seed, 60)
    queries = generated_queries([d for d in docs if d is not None], seed)
    for builder in ("pylance", "lancer"):
        path = tmp_path / builder
        t = pa.table({"id": pa.array(range(len(docs)), pa.int64()),
                      "j": pa.array([None if d is None else json.dumps(d) for d in docs], type=pa.json_())})
        lancer.write_dataset(t, str(path), data_storage_version="2.2", max_rows_per_file=20)
        lancer.dataset(str(path)).delete("id = 7")
        if builder == "lancer":
            lancer.dataset(str(path)).create_scalar_index("j", "INVERTED")
        theirs = run("14", RUN_FTS, path, "1" if builder == "pylance" else "0", json.dumps(queries))
        got = fts_answers(lancer.dataset(str(path)), queries)  # noqa: F821 (from FTS_ANSWERS)
        for q in queries:
            assert got[q] == theirs[q], (builder, q, got[q], theirs[q])
        assert sum(1 for q in queries if theirs[q]) >= 10
