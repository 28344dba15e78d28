"""Schema evolution and maintenance from Python (issue 41): add_columns (SQL and
all-null fields), drop_columns, alter_columns, update, merge_insert, optimize.compact_files
and has_index, each run through pylance 14 and through lancer on the same data; the
tables, statistics and refusals must agree, and each engine reads the other's result."""

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
            out.append((name, type(e).__name__ in ("ValueError", "OSError", "TypeError",
                                                   "NotImplementedError", "CorruptDataError")))
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
    with pytest.raises(NotImplementedError, match="function"):
        lancer.dataset(p).add_columns(lambda batch: batch)
    with pytest.raises(NotImplementedError, match="defer_index_remap"):
        lancer.dataset(p).optimize.compact_files(defer_index_remap=True)
