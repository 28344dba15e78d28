"""Schema evolution and maintenance from Python (issue 41): add_columns (SQL and
all-null fields), drop_columns, alter_columns, update, merge_insert, optimize.compact_files
and has_index, each run through pylance 14 and through lancer on the same data; the
tables, statistics and refusals must agree, and each engine reads the other's result."""

import pandas as pd
import pyarrow as pa
import pytest

import lance
import lancer


def base():
    return pa.table({
        "id": pa.array(range(40), pa.int64()),
        "x": pa.array([float(i) if i % 6 else None for i in range(40)]),
        "s": pa.array([f"w{i % 5}" for i in range(40)]),
        "st": pa.array([{"a": i, "b": f"b{i}"} for i in range(40)]),
    })


def run(lib, path, steps):
    lance.write_dataset(base(), path, max_rows_per_file=9)
    ds = lib.dataset(path)
    out = []
    for name, call in steps:
        try:
            out.append((name, call(ds)))
        except Exception as e:  # noqa: BLE001 - the refusal is the answer
            out.append((name, isinstance(e, (ValueError, OSError, TypeError, NotImplementedError))))
    return out, ds


def metrics(m):
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


STEPS = [
    ("add sql", lambda ds: ds.add_columns({"twice": "id * 2", "tag": "concat(s, '!')"})),
    ("add fields", lambda ds: ds.add_columns([pa.field("n1", pa.int32()), pa.field("n2", pa.string())])),
    ("update", lambda ds: ds.update({"x": "x + 1", "s": "'u'"}, where="id < 10")),
    ("update all", lambda ds: ds.update({"twice": "twice + 100"})),
    ("alter", lambda ds: ds.alter_columns({"path": "twice", "name": "doubled"},
                                          {"path": "st.b", "name": "bb"})),
    ("cast", lambda ds: ds.alter_columns({"path": "n1", "data_type": pa.int64()})),
    ("bad cast", lambda ds: ds.alter_columns({"path": "x", "data_type": pa.int32()})),
    ("drop", lambda ds: ds.drop_columns(["tag", "st.a"])),
    ("drop missing", lambda ds: ds.drop_columns(["nope"])),
    ("merge", lambda ds: ds.merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(merge_source(ds))),
    ("delete", lambda ds: ds.delete("id % 7 = 0")),
    ("compact", lambda ds: metrics(ds.optimize.compact_files(target_rows_per_fragment=20))),
    ("has_index", lambda ds: ds.has_index),
]


def merge_source(ds):
    t = ds.to_table(filter="id >= 35")
    more = t.slice(0, 2).set_column(0, "id", pa.array([100, 101], pa.int64()))
    src = pa.concat_tables([t, more])
    return src.set_column(src.schema.get_field_index("s"), "s", pa.array(["m"] * src.num_rows))


def test_evolution_calls_agree_with_pylance(tmp_path):
    results, tables = {}, {}
    for lib in (lance, lancer):
        p = str(tmp_path / lib.__name__)
        results[lib.__name__], ds = run(lib, p, STEPS)
        tables[lib.__name__] = ds
    for (name, a), (_, b) in zip(results["lance"], results["lancer"]):
        assert a == b, f"{name}: pylance {a!r}, lancer {b!r}"
    want = lance.dataset(str(tmp_path / "lance")).to_table().sort_by("id")
    for reader in (lance, lancer):
        got = reader.dataset(str(tmp_path / "lancer")).to_table().sort_by("id")
        assert got.equals(want), reader.__name__
    assert lancer.dataset(str(tmp_path / "lance")).to_table().sort_by("id").equals(want)


def test_add_columns_refuses_what_it_cannot_do(tmp_path):
    p = str(tmp_path / "r")
    lance.write_dataset(base(), p)
    # a function returning a column the dataset has: refused naming it (pylance too)
    with pytest.raises(ValueError, match="exists already"):
        lancer.dataset(p).add_columns(lambda batch: batch)
    # an empty reader for a non-empty dataset: too few rows (test_add_columns_from_a_reader_*)
    reader = pa.RecordBatchReader.from_batches(pa.schema([("z", pa.int64())]), [])
    with pytest.raises(ValueError, match="ended after 0 rows"):
        lancer.dataset(p).add_columns(reader)
    with pytest.raises(NotImplementedError, match="defer_index_remap"):
        lancer.dataset(p).optimize.compact_files(defer_index_remap=True)


def _cleanup_case(base, case):
    import datetime as dt
    import time

    t = pa.table({"a": list(range(100)), "b": [str(i % 7) for i in range(100)]})
    lance.write_dataset(t, base)                                   # v1
    ds = lance.dataset(base)
    ds.create_scalar_index("a", "BTREE")                          # v2
    ds.create_scalar_index("b", "BITMAP")                         # v3
    lance.write_dataset(t, base, mode="append")                    # v4
    lance.dataset(base).delete("a < 10")                           # v5
    if case in ("tagged", "tagged-kept"):
        lance.dataset(base).tags.create("keep", 4)
    lance.write_dataset(t, base, mode="overwrite")                 # v6
    lance.dataset(base).create_scalar_index("a", "BTREE")          # v7
    time.sleep(0.05)
    kw = {"older_than": dt.timedelta(seconds=0)}
    if case == "tagged-kept":
        kw["error_if_tagged_old_versions"] = False
    if case == "retain":
        kw = {"retain_versions": 3, "delete_unverified": True}
    return kw


@pytest.mark.parametrize("case", ["plain", "tagged", "tagged-kept", "retain"])
def test_cleanup_old_versions_as_pylance(tmp_path, case):
    """On copies of one history (indexes, an append, deletion files, an overwrite, a
    tag), lancer's cleanup removes what pylance's removes, reports the same counts and
    bytes, and refuses a tagged version the same way."""
    import os
    import shutil

    base = str(tmp_path / "base")
    kw = _cleanup_case(base, case)
    results = []
    for mod in (lance, lancer):
        path = str(tmp_path / mod.__name__)
        shutil.copytree(base, path)
        try:
            s = mod.dataset(path).cleanup_old_versions(**kw)
            out = {k: getattr(s, k) for k in ("bytes_removed", "old_versions", "data_files_removed",
                                              "transaction_files_removed", "index_files_removed",
                                              "deletion_files_removed")}
        except OSError as e:
            out = ("OSError", "keep" in str(e))
        left = sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)
        dirs = sorted(os.path.relpath(d, path) for d, ds, fs in os.walk(path) if not ds and not fs)
        results.append((out, left, dirs))
    assert results[1] == results[0]


@pytest.mark.parametrize("source,left_on,right_on", [
    ({"key": [1, 2, 5, 9, 42], "y": ["a", "b", "c", "d", "e"]}, "id", "key"),
    ({"id": [9, 1, 1, 3], "y": ["a", "b", "c", "d"], "w": [1.0, 2.0, 3.0, 4.0]}, "id", None),
    ({"id": [], "y": []}, "id", None),
])
def test_merge_as_pylance(tmp_path, source, left_on, right_on):
    """merge(data, left_on, right_on): new columns joined on the key, null without a
    match, a key given twice takes its last row (as pylance), over several fragments
    with a deleted row."""
    src = pa.table(source) if source["id" if "id" in source else "key"] else pa.table(
        {"id": pa.array([], pa.int64()), "y": pa.array([], pa.string())})
    out = []
    for mod in (lance, lancer):
        p = str(tmp_path / mod.__name__)
        lance.write_dataset(pa.table({"id": list(range(10)), "x": [i * 1.5 for i in range(10)]}), p,
                            max_rows_per_file=4)
        lance.dataset(p).delete("id = 3")
        try:
            mod.dataset(p).merge(src, left_on, right_on)
        except OSError:
            out.append("OSError")
            continue
        t = lance.dataset(p).to_table()
        out.append((t.schema, t.to_pydict(), lance.dataset(p).version))
    assert out[1] == out[0]


def _double(batch):
    import pyarrow.compute as pc

    return pa.RecordBatch.from_arrays([pc.multiply(batch["x"], 2), pc.utf8_upper(batch["s"])], ["x2", "S"])


def _pandas_udf(batch):
    df = batch.to_pandas()
    return pd.DataFrame({"y": df["x"] + df["id"]})


@pytest.mark.parametrize("kind", ["function", "pandas", "batch_udf", "read_columns"])
def test_add_columns_with_a_function_as_pylance(tmp_path, kind):
    """add_columns(function): the same new columns and values as pylance over several
    fragments with deleted rows, for a pyarrow function, a pandas one, a batch_udf with
    its schema, and read_columns."""
    out = []
    for mod in (lance, lancer):
        p = str(tmp_path / mod.__name__)
        lance.write_dataset(pa.table({"id": list(range(30)), "x": [i * 0.5 for i in range(30)],
                                      "s": [f"s{i}" for i in range(30)]}), p, max_rows_per_file=8)
        lance.dataset(p).delete("id % 5 = 0")
        ds = mod.dataset(p)
        if kind == "function":
            ds.add_columns(_double)
        elif kind == "pandas":
            ds.add_columns(_pandas_udf, batch_size=7)
        elif kind == "batch_udf":
            schema = pa.schema([pa.field("x2", pa.float64()), pa.field("S", pa.string())])
            ds.add_columns(mod.batch_udf(output_schema=schema)(_double))
        else:
            ds.add_columns(_pandas_udf, read_columns=["id", "x"])
        t = lance.dataset(p).to_table()
        out.append((t.schema, t.to_pydict(), lance.dataset(p).version))
    assert out[1] == out[0]


def test_add_columns_function_errors(tmp_path):
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": list(range(10))}), p)

    def boom(batch):
        raise ZeroDivisionError("in the function")

    with pytest.raises(ZeroDivisionError, match="in the function"):
        lancer.dataset(p).add_columns(boom)

    def short(batch):
        return pa.RecordBatch.from_pydict({"y": [1]})

    with pytest.raises(ValueError, match="one row per row"):
        lancer.dataset(p).add_columns(short, batch_size=100)
    # checkpointed (lancer.udf), the same error, nothing committed, the checkpoint kept
    ck = tmp_path / "x.db"
    with pytest.raises(ValueError, match="one row per row"):
        lancer.dataset(p).add_columns(lancer.batch_udf(checkpoint_file=str(ck))(short), batch_size=100)
    assert lancer.dataset(p).schema.names == ["id"] and ck.exists()


def test_stable_row_id_datasets_as_pylance(tmp_path):
    """write_dataset(enable_stable_row_ids=True) and a history on it (append, delete,
    update, merge_insert, compaction): the same rows with the same _rowid and
    _rowaddr at every step as pylance's, and each reads the other's dataset so."""
    t = pa.table({"id": list(range(40)), "x": [float(i) for i in range(40)]})
    steps = [
        lambda mod, p: mod.write_dataset(t.slice(0, 10), p, mode="append"),
        lambda mod, p: mod.dataset(p).delete("id % 3 = 0"),
        lambda mod, p: mod.dataset(p).update({"x": "x + 100"}, where="id < 12"),
        lambda mod, p: mod.dataset(p).merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(pa.table({"id": [5, 7, 90], "x": [-1.0, -2.0, -3.0]})),
        lambda mod, p: mod.dataset(p).optimize.compact_files(target_rows_per_fragment=1000),
    ]

    def state(p):
        d = lance.dataset(p)
        rows = d.to_table(with_row_id=True, with_row_address=True)
        return sorted(zip(*(rows[c].to_pylist() for c in ("_rowid", "id", "x")))), d.has_stable_row_ids

    paths = {}
    for mod in (lance, lancer):
        p = str(tmp_path / mod.__name__)
        mod.write_dataset(t, p, max_rows_per_file=15, enable_stable_row_ids=True)
        paths[mod.__name__] = p
    assert state(paths["lancer"]) == state(paths["lance"])
    for i, step in enumerate(steps):
        for mod in (lance, lancer):
            step(mod, paths[mod.__name__])
        want, got = state(paths["lance"]), state(paths["lancer"])
        assert got == want, f"step {i}"
        assert want[1] is True
        lan = lancer.dataset(paths["lancer"]).to_table(with_row_id=True)
        assert sorted(lan["_rowid"].to_pylist()) == sorted(r[0] for r in got[0])


def test_commit_message_and_transaction_properties_as_pylance(tmp_path):
    """write_dataset(commit_message=, transaction_properties=) land in the commit's
    transaction as pylance records them (pylance reads them back from lancer's)."""
    t = pa.table({"a": [1, 2]})
    got = []
    for mod in (lance, lancer):
        p = str(tmp_path / mod.__name__)
        mod.write_dataset(t, p, commit_message="first load", transaction_properties={"k": "v"})
        mod.write_dataset(t, p, mode="append", commit_message="more")
        d = lance.dataset(p)
        got.append([d.read_transaction(v).transaction_properties for v in (1, 2)])
    assert got[1] == got[0]
    assert got[0][0] == {"__lance_commit_message": "first load", "k": "v"}


def _new_values(n, form):
    t = pa.table({"v": pa.array(range(100, 100 + n), pa.int64()),
                  "w": pa.array([f"w{i}" for i in range(n)])})
    if form == "table":
        return t, None
    if form == "reader":
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=3)), None
    if form == "pandas":
        return t.to_pandas(), None
    return iter(t.to_batches(max_chunksize=4)), t.schema


@pytest.mark.parametrize("form", ["table", "reader", "pandas", "batches"])
def test_add_columns_from_a_reader_matches_pylance(tmp_path, form):
    """One new row per live row, in the dataset's order (deleted rows skipped, several
    fragments); too few or too many rows fail in both and commit nothing."""
    out = {}
    for lib in (lance, lancer):
        rows = {}
        for n in (0, 31, 34, 35, 40):
            path = str(tmp_path / f"{lib.__name__}-{n}")
            lance.write_dataset(base(), path, max_rows_per_file=9)
            lance.dataset(path).delete("id % 7 = 3")  # 34 live rows of 40
            ds = lib.dataset(path)
            values, schema = _new_values(n, form)
            try:
                ds.add_columns(values, reader_schema=schema)
                rows[n] = lance.dataset(path).to_table(columns=["id", "v", "w"]).to_pydict()
            except (ValueError, OSError) as e:
                rows[n] = ("refused", lance.dataset(path).version, isinstance(e, OSError))
        out[lib.__name__] = rows
    assert out["lancer"] == out["lance"]
    assert out["lancer"][34] != out["lancer"][31]
