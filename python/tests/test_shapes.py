"""The Python calls of issue 41 on generated shapes, through pylance 14 and lancer:
an empty dataset, all-null columns, one repeated value, nested structs and lists,
strings of every length class, several fragments with deletions — each written by
pylance and by lancer. Every call's outcome (the table, the statistics, or the kind of
error) must agree, and each engine reads the other's result."""

import pyarrow as pa
import pytest

import lance
import lancer


def shape(name):
    n = {"empty": 0, "one": 1}.get(name, 23)
    if name == "all_null":
        return pa.table({
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([None] * n, pa.float64()),
            "s": pa.array([None] * n, pa.string()),
            "st": pa.array([None] * n, pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "l": pa.array([None] * n, pa.list_(pa.int32())),
        })
    if name == "repeated":
        return pa.table({
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([2.5] * n),
            "s": pa.array(["same"] * n),
            "st": pa.array([{"a": 1, "b": "b"}] * n, pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "l": pa.array([[7, 7]] * n, pa.list_(pa.int32())),
        })
    # mixed (also empty / one): nulls here and there, strings from empty to long
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array([None if i % 4 == 1 else i * 0.5 for i in range(n)], pa.float64()),
        "s": pa.array([None if i % 5 == 2 else "w" * (i * 7 % 40) for i in range(n)], pa.string()),
        "st": pa.array([None if i % 6 == 3 else {"a": i, "b": None if i % 2 else f"b{i}"}
                        for i in range(n)], pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "l": pa.array([None if i % 7 == 4 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
    })


SHAPES = ["empty", "one", "all_null", "repeated", "mixed_deleted"]


def write(lib, name, path):
    t = shape(name)
    lib.write_dataset(t, path, max_rows_per_file=7, schema=t.schema)
    if name == "mixed_deleted":
        lib.dataset(path).delete("id % 5 = 0 OR id = 8")


def outcome(call):
    try:
        r = call()
    except Exception as e:  # noqa: BLE001 - the error's kind is the answer
        kinds = (KeyError, TypeError, ValueError, NotImplementedError, OSError)
        return ("error", next((k.__name__ for k in kinds if isinstance(e, k)), type(e).__name__))
    if isinstance(r, pa.Table):
        return ("table", r.schema.names, sorted(map(repr, r.to_pylist())))
    return ("value", r)


def merge_source(n):
    return pa.table({"id": pa.array([1, 2, 50], pa.int64()), "x": pa.array([9.0, None, 1.0]),
                     "s": pa.array(["m", None, "n"]),
                     "st": pa.array([{"a": 5, "b": "q"}, None, {"a": 6, "b": None}],
                                    pa.struct([("a", pa.int32()), ("b", pa.string())])),
                     "l": pa.array([[1], None, []], pa.list_(pa.int32()))})


def udf(batch):
    ids = batch["id"].to_pylist()
    return pa.RecordBatch.from_arrays([pa.array([None if i % 3 else i * 3 for i in ids], pa.int64())], ["u"])


def metrics(m):
    return (m.fragments_removed, m.fragments_added, m.files_removed, m.files_added)


STEPS = [
    ("add sql", lambda ds: ds.add_columns({"y": "id + 1", "ss": "concat(s, '!')"})),
    ("add function", lambda ds: ds.add_columns(udf, read_columns=["id"])),
    ("add null fields", lambda ds: ds.add_columns([pa.field("n", pa.string())])),
    ("update", lambda ds: ds.update({"x": "2.0", "s": "'u'"}, where="id < 12")),
    ("merge_insert", lambda ds: ds.merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(merge_source(ds.count_rows()))),
    ("alter", lambda ds: ds.alter_columns({"path": "st.b", "name": "bb"}, {"path": "x", "nullable": True})),
    ("drop", lambda ds: ds.drop_columns(["y", "st.a"])),
    ("metadata", lambda ds: ds.update_config({"k": "v"})),
    ("compact", lambda ds: metrics(ds.optimize.compact_files(target_rows_per_fragment=10))),
    ("btree", lambda ds: ds.create_scalar_index("id", "BTREE")),
    ("stats", lambda ds: ds.stats.dataset_stats()),
    ("index stats", lambda ds: {k: v for k, v in ds.index_statistics("id_idx").items()
                                if k in ("index_type", "num_indexed_rows", "num_unindexed_rows",
                                         "num_indexed_fragments", "num_unindexed_fragments")}),
    ("count", lambda ds: ds.count_rows()),
    ("fragment rows", lambda ds: [f.count_rows() for f in ds.get_fragments()]),
    ("fragment take", lambda ds: ds.get_fragments()[-1].take([0]) if ds.get_fragments() else None),
    ("table", lambda ds: ds.to_table()),
]


@pytest.mark.parametrize("writer", ["lance", "lancer"])
@pytest.mark.parametrize("name", SHAPES)
def test_evolution_on_shapes(tmp_path, name, writer):
    out = {}
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        write(lance if writer == "lance" else lancer, name, path)
        ds = lib.dataset(path)
        out[lib.__name__] = [(step, outcome(lambda: call(ds))) for step, call in STEPS]
    for (step, want), (_, got) in zip(out["lance"], out["lancer"]):
        assert got == want, f"{name} written by {writer}: {step}"
    # each engine reads the other's result
    for reader, other in ((lance, "lancer"), (lancer, "lance")):
        path = str(tmp_path / other)
        assert reader.dataset(path).to_table() == lance.dataset(path).to_table()


@pytest.mark.parametrize("name", SHAPES)
def test_reads_on_shapes(tmp_path, name):
    path = str(tmp_path / "d")
    write(lance, name, path)
    calls = [
        ("pandas", lambda lib, ds: ds.to_pandas().shape),
        ("sample", lambda lib, ds: ds.sample(3, columns=["id"]).num_rows if ds.count_rows() >= 3 else None),
        ("data_stats", lambda lib, ds: len(ds.stats.data_stats().fields)),
        ("versions", lambda lib, ds: [v["metadata"] for v in ds.versions()]),
        ("maybe_sample", lambda lib, ds: sum(b.num_rows for b in
                                             lib_sampler(lib).maybe_sample(ds, 5, ["id", "s"]))),
        ("file", lambda lib, ds: [lib_file(lib).LanceFileReader(
            f"{path}/data/{f.data_files()[0].path}").read_all().to_table().num_rows for f in ds.get_fragments()]),
    ]
    for label, call in calls:
        got = outcome(lambda: call(lancer, lancer.dataset(path)))
        want = outcome(lambda: call(lance, lance.dataset(path)))
        assert got == want, f"{name}: {label}"


def lib_sampler(lib):
    if lib is lancer:
        return lancer.sampler
    import lance.sampler

    return lance.sampler


def lib_file(lib):
    if lib is lancer:
        return lancer.file
    import lance.file

    return lance.file


def test_merge_source_with_a_renamed_struct_field_is_refused(tmp_path):
    """After `st.b` became `st.bb`, a source still naming `st.b` is refused by both (not
    matched by position). pylance raises OSError ("Append with different schema"),
    lancer InvalidInputError (a ValueError and an OSError, as its other input errors)."""
    kinds = {}
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        write(lance, "mixed_deleted", path)
        ds = lib.dataset(path)
        ds.alter_columns({"path": "st.b", "name": "bb"})
        before = ds.to_table()
        with pytest.raises((ValueError, OSError)) as e:
            ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(merge_source(0))
        kinds[lib.__name__] = type(e.value)
        assert lib.dataset(path).to_table() == before
    assert issubclass(kinds["lance"], OSError) and issubclass(kinds["lancer"], ValueError)


@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
def test_fragment_files_as_pylance_lists_them(tmp_path, storage):
    """data_files() and deletion_file() of every fragment: written, with deletions,
    after a column was added (a second data file), as pylance 14 lists them."""
    path = str(tmp_path / "d")
    t = shape("mixed_deleted")
    if storage == "2.0":
        t = t.drop_columns(["st"])  # (2.0 files do not hold struct validity)
    lance.write_dataset(t, path, max_rows_per_file=7, data_storage_version=storage)
    lance.dataset(path).delete("id % 5 = 0 OR id = 8")
    if storage != "2.0":
        lance.dataset(path).add_columns({"y": "id * 2"})

    def files(lib):
        out = []
        for f in lib.dataset(path).get_fragments():
            out.append((f.fragment_id, f.deletion_file(), [
                (d.path, list(d.fields), list(d.column_indices), d.file_major_version, d.file_minor_version,
                 d.file_size_bytes, d.base_id, list(d.field_ids())) for d in f.data_files()]))
        return out

    assert files(lancer) == files(lance)


@pytest.mark.parametrize("name", ["empty", "one", "all_null", "repeated", "mixed"])
def test_lancer_writes_2_0_datasets_pylance_reads(tmp_path, name):
    """lancer writes a 2.0 dataset (several fragments), deletes and appends to it; pylance
    14 reads every version as lancer does, lists the same data files, and appends to it
    in turn. Struct columns with null rows are refused by both (2.0 has no struct
    validity), naming the remedy."""
    path = str(tmp_path / "d")
    t = shape(name)
    if t.column("st").null_count:
        with pytest.raises(ValueError, match="2.1"):
            lancer.write_dataset(t, path, data_storage_version="2.0")
        with pytest.raises(Exception):
            lance.write_dataset(t, str(tmp_path / "p"), data_storage_version="2.0")
        t = t.drop_columns(["st"])
    lancer.write_dataset(t, path, max_rows_per_file=7, data_storage_version="2.0")
    lancer.dataset(path).delete("id % 5 = 0")
    lancer.write_dataset(t, path, mode="append")
    assert lance.dataset(path).data_storage_version == "2.0"
    for v in range(1, lancer.dataset(path).version + 1):
        assert lance.dataset(path, version=v).to_table() == lancer.dataset(path, version=v).to_table()
    files = [(f.fragment_id, [(d.path, list(d.fields), list(d.column_indices), d.file_major_version,
                               d.file_minor_version) for d in f.data_files()])
             for f in lance.dataset(path).get_fragments()]
    assert files == [(f.fragment_id, [(d.path, list(d.fields), list(d.column_indices), d.file_major_version,
                                       d.file_minor_version) for d in f.data_files()])
                     for f in lancer.dataset(path).get_fragments()]
    lance.write_dataset(t, path, mode="append")
    assert lancer.dataset(path).to_table() == lance.dataset(path).to_table()
