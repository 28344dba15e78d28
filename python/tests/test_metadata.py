"""A dataset's config and metadata (issue 41): update_config / delete_config_keys /
update_metadata / update_schema_metadata / update_field_metadata (and the deprecated
replace_* forms), automatic cleanup (write_dataset's auto_cleanup_options,
optimize.enable/disable_auto_cleanup) and versions()' summaries, each run through pylance
14 and through lancer on the same data, over datasets of every storage version written
by either; each engine then reads the other's result."""

import warnings

import pyarrow as pa
import pytest

import lance
import lancer


def table(n=6):
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "st": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        "l": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
    })


def outcome(call):
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the error's type is the answer
        # (pylance's kinds: lancer's CommitConflictError is an OSError, as pylance's conflicts)
        kinds = (TypeError, ValueError, NotImplementedError, OSError)
        return ("error", next((k.__name__ for k in kinds if isinstance(e, k)), type(e).__name__))


def view(lib, path):
    """Everything a reader sees of the maps, through `lib`."""
    ds = lib.dataset(path)
    schema = ds.schema
    return {
        "config": ds.config(),
        "metadata": ds.metadata,
        "schema_metadata": ds.schema_metadata,
        "arrow schema metadata": schema.metadata,
        "id": schema.field("id").metadata,
        "st.a": schema.field("st").type.field("a").metadata,
        "rows": ds.to_table().to_pydict(),
        "versions": [(v["version"], v["metadata"]) for v in ds.versions()],
    }


def replace_both(ds):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ds.replace_schema_metadata({"only": "this"})
        ds.replace_field_metadata("id", {"z": "1"})
    return [x.category.__name__ for x in w]


STEPS = [
    ("config", lambda ds: ds.update_config({"k1": "v1", "k2": "v2"})),
    ("config remove", lambda ds: ds.update_config({"k1": None, "absent": None})),
    ("config replace", lambda ds: ds.update_config({"k3": "v3", "k4": None}, replace=True)),
    ("delete keys", lambda ds: ds.delete_config_keys(["k3", "never there"])),
    ("config after", lambda ds: ds.config()),
    ("metadata", lambda ds: ds.update_metadata({"author": "me", "year": "2026"})),
    ("metadata replace", lambda ds: ds.update_metadata({"owner": "you"}, replace=True)),
    ("schema metadata", lambda ds: ds.update_schema_metadata({"s1": "x", "s2": "y"})),
    ("schema metadata remove", lambda ds: ds.update_schema_metadata({"s2": None})),
    ("fields", lambda ds: ds.update_field_metadata({"id": {"d": "identifier"}, "st.a": {"q": "1"}})),
    ("field replace", lambda ds: ds.update_field_metadata({"st.a": {"r": "2"}}, replace=True)),
    ("unknown field", lambda ds: ds.update_field_metadata({"nope": {"d": "x"}})),
    ("bad value", lambda ds: ds.update_config({"a": 1})),
    ("bad map", lambda ds: ds.update_config(["a"])),
    ("replace_*", replace_both),
    ("last version", lambda ds: ds.version),
]


@pytest.mark.parametrize("storage", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lance", "lancer"])
def test_metadata_updates_match_pylance(tmp_path, storage, writer):
    out = {}
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        w = lance if writer == "lance" or storage == "2.0" else lancer
        w.write_dataset(table(), path, data_storage_version=storage, max_rows_per_file=4)
        ds = lib.dataset(path)
        out[lib.__name__] = ([(name, outcome(lambda: step(ds))) for name, step in STEPS], view(lib, path))
    assert out["lancer"][0] == out["lance"][0]
    assert out["lancer"][1]["versions"] == out["lance"][1]["versions"]
    assert out["lancer"][1] == {**out["lance"][1], "versions": out["lancer"][1]["versions"]}
    # each engine reads the other's result the same way
    assert view(lance, str(tmp_path / "lancer")) == {**out["lancer"][1],
                                                     "versions": view(lance, str(tmp_path / "lancer"))["versions"]}
    assert view(lancer, str(tmp_path / "lance")) == {**out["lance"][1],
                                                     "versions": view(lancer, str(tmp_path / "lance"))["versions"]}
    # the versions' timestamps differ; their summaries must not
    assert [m for _, m in view(lance, str(tmp_path / "lancer"))["versions"]] == \
        [m for _, m in out["lance"][1]["versions"]]


def test_concurrent_metadata_updates(tmp_path):
    """Two handles of one version: different keys both land; one key set by both: the
    second commit's value wins or it is refused, as pylance decides."""
    out = {}
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        lance.write_dataset(table(), path)
        a, b = lib.dataset(path), lib.dataset(path)
        steps = [outcome(lambda: a.update_config({"x": "1"})),
                 outcome(lambda: b.update_config({"y": "2"}))]
        c, d = lib.dataset(path), lib.dataset(path)
        steps += [outcome(lambda: c.update_metadata({"k": "c"})),
                  outcome(lambda: d.update_metadata({"k": "d"}))]
        # a data change and a metadata change from one version commute
        e, f = lib.dataset(path), lib.dataset(path)
        steps += [outcome(lambda: e.delete("id = 2")),
                  outcome(lambda: f.update_schema_metadata({"s": "1"})),
                  outcome(lambda: lib.dataset(path).count_rows())]
        out[lib.__name__] = (steps, view(lance, path)["config"], view(lance, path)["metadata"],
                             view(lance, path)["schema_metadata"])
    assert out["lancer"] == out["lance"]


def cleanup_run(lib, path, create_with):
    seen = []
    create_with.write_dataset(table(3), path, auto_cleanup_options={"interval": 3, "older_than_seconds": 0})
    seen.append(lib.dataset(path).config())
    for _ in range(7):
        lib.write_dataset(table(3), path, mode="append")
        seen.append([v["version"] for v in lib.dataset(path).versions()])
    ds = lib.dataset(path)
    ds.optimize.disable_auto_cleanup()
    seen.append(ds.config())
    for _ in range(3):
        ds.insert(table(3))
    seen.append([v["version"] for v in lib.dataset(path).versions()])
    ds.optimize.enable_auto_cleanup({"interval": 2, "older_than_seconds": 3600})
    seen.append(ds.config())
    for _ in range(3):
        ds.insert(table(3))
    seen.append([v["version"] for v in lib.dataset(path).versions()])
    ds.optimize.enable_auto_cleanup({"interval": 1, "older_than_seconds": 0})
    ds.insert(table(3))
    seen.append(([v["version"] for v in lib.dataset(path).versions()], ds.count_rows()))
    return seen


@pytest.mark.parametrize("creator", ["lance", "lancer"])
def test_auto_cleanup_matches_pylance(tmp_path, creator):
    create_with = lance if creator == "lance" else lancer
    want = cleanup_run(lance, str(tmp_path / "lance"), create_with)
    got = cleanup_run(lancer, str(tmp_path / "lancer"), create_with)
    assert got == want
    # the versions cleaned up went with their files: both datasets read back whole
    assert lance.dataset(str(tmp_path / "lancer")).to_table() == lancer.dataset(str(tmp_path / "lance")).to_table()


def test_auto_cleanup_set_by_one_engine_runs_in_the_other(tmp_path):
    path = str(tmp_path / "d")
    lancer.write_dataset(table(3), path, auto_cleanup_options={"interval": 2, "older_than_seconds": 0})
    for _ in range(3):
        lance.write_dataset(table(3), path, mode="append")
    assert [v["version"] for v in lancer.dataset(path).versions()] == [3, 4]
    path2 = str(tmp_path / "e")
    lance.write_dataset(table(3), path2, auto_cleanup_options={"interval": 2, "older_than_seconds": 0})
    for _ in range(3):
        lancer.write_dataset(table(3), path2, mode="append")
    assert [v["version"] for v in lance.dataset(path2).versions()] == [3, 4]


def test_auto_cleanup_options_checked():
    for bad in ({"interval": 2}, {"interval": 0, "older_than_seconds": 1}, "weekly"):
        with pytest.raises(ValueError):
            lancer.write_dataset(table(3), "memory://x", auto_cleanup_options=bad)


def test_auto_cleanup_is_only_for_new_datasets(tmp_path):
    """An existing dataset keeps its own config (pylance's rule), in both engines."""
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        lib.write_dataset(table(3), path)
        lib.write_dataset(table(3), path, mode="append", auto_cleanup_options={"interval": 1, "older_than_seconds": 0})
        assert lib.dataset(path).config() == {}
        assert len(lib.dataset(path).versions()) == 2


def test_manifest_naming_and_its_migration_match_pylance(tmp_path):
    """enable_v2_manifest_paths=False writes the older names; migrate_manifest_paths_v2
    renames them (idempotent) and later versions keep the newer names; each engine reads
    the other's at every step."""
    import os

    def names(path):
        return sorted(n for n in os.listdir(os.path.join(path, "_versions")) if n.endswith(".manifest"))

    seen = {}
    for lib in (lance, lancer):
        path = str(tmp_path / lib.__name__)
        lib.write_dataset(table(3), path, enable_v2_manifest_paths=False)
        lib.write_dataset(table(3), path, mode="append")
        steps = [names(path)]
        ds = lib.dataset(path)
        ds.migrate_manifest_paths_v2()
        ds.migrate_manifest_paths_v2()
        steps.append(names(path))
        lib.write_dataset(table(3), path, mode="append")
        steps.append(names(path))
        for reader in (lance, lancer):
            assert reader.dataset(path).count_rows() == 9
            assert [v["version"] for v in reader.dataset(path).versions()] == [1, 2, 3]
        seen[lib.__name__] = steps
    assert seen["lancer"] == seen["lance"]
    assert seen["lance"][0] == ["1.manifest", "2.manifest"]
