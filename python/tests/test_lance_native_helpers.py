"""pylance 14's helpers in ``lance.lance`` that users call by that name (issue 61):
``manifest_needs_migration`` on every checked-in dataset pylance 11, 12 and 14 wrote and
on lancer-written ones (after appends, deletions and index builds), ``language_model_home``
with and without the environment variable, ``stable_version`` and the counters (per
session in lancer). (The manifests that need a migration — no writer version, a fragment without
its row count, a deletion file without its count, old index bitmaps — are drawn in the
Rust unit test of ``lancer::inspect::manifest_needs_migration``.)"""

import pathlib

import pyarrow as pa
import pytest

import lance
import lancer

ROOT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data"
DATASETS = sorted(str(p.parent) for p in ROOT.rglob("_versions"))


def test_there_are_datasets_to_check():
    assert len(DATASETS) >= 50


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.split("tests/data/")[-1])
def test_manifest_needs_migration_as_pylance(path):
    try:
        theirs = lance.lance.manifest_needs_migration(lance.dataset(path))
    except Exception as e:  # a dataset pylance 14 cannot open: lancer may open it or not
        pytest.skip(f"pylance 14 does not open it: {type(e).__name__}")
    assert lancer.lance.manifest_needs_migration(lancer.dataset(path)) == theirs


def test_lancer_written_datasets_need_no_migration(tmp_path):
    path = str(tmp_path / "d")
    t = pa.table({"id": list(range(100)), "v": [[float(i), 1.0] for i in range(100)]},
                 schema=pa.schema([("id", pa.int64()), ("v", pa.list_(pa.float32(), 2))]))
    ds = lancer.write_dataset(t, path, max_rows_per_file=30)
    for step in (lambda: ds.delete("id % 7 = 1"),
                 lambda: lancer.write_dataset(t, path, mode="append"),
                 lambda: lancer.dataset(path).create_scalar_index("id", "BTREE")):
        step()
        assert lancer.lance.manifest_needs_migration(lancer.dataset(path)) is False
        assert lance.lance.manifest_needs_migration(lance.dataset(path)) is False
    with pytest.raises(TypeError):
        lancer.lance.manifest_needs_migration(path)


def test_language_model_home_and_stable_version(monkeypatch, tmp_path):
    assert lancer.lance.stable_version() == lance.lance.stable_version()
    monkeypatch.delenv("LANCE_LANGUAGE_MODEL_HOME", raising=False)
    assert lancer.lance.language_model_home() == lance.lance.language_model_home()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert lancer.lance.language_model_home() == lance.lance.language_model_home()
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(tmp_path / "models"))
    assert lancer.lance.language_model_home() == lance.lance.language_model_home() == str(tmp_path / "models")
    # the counters are lancer's per-session ones (no process-wide state): without a
    # session they are refused naming what to pass
    for f in (lancer.lance.bytes_read_counter, lancer.lance.iops_counter):
        with pytest.raises(TypeError, match="Session"):
            f()
    ds = lancer.write_dataset(pa.table({"x": [1, 2]}), str(tmp_path / "c"))
    ds.to_table()
    assert lancer.lance.iops_counter(ds) >= 1 and lancer.lance.bytes_read_counter(ds) > 0
