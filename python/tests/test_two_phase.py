"""Two-phase (distributed) writes against pylance (issue 43): fragments lancer's workers
write are committed by a pylance driver and the other way round, each side reading the
other's result; the JSON of a fragment has pylance 14's (and 12's, 11's) shape; commits
rebase over a concurrent append and are refused on a conflicting overwrite as pylance
refuses them; descriptions naming missing or altered files are refused naming the
file; files never committed stay invisible until cleanup removes them past its limit.

pylance runs in subprocesses of its own venvs (``.venv/pylance-{14,12,11}``), as the
workers and drivers of a distributed job run in processes of their own.
"""

import datetime
import json
import os
import pickle
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import lancer
from lancer.fragment import FragmentMetadata, write_fragments

REPO = Path(__file__).resolve().parents[2]


def pylance(version):
    py = REPO / ".venv" / f"pylance-{version}" / "bin" / "python"
    if not py.exists():
        if os.environ.get("LANCER_REQUIRE_PYLANCE"):
            raise AssertionError(f"{py} missing (scripts/test.sh installs it)")
        pytest.skip(f"pylance {version} venv not installed")
    return str(py)


def run(version, code, *args):
    """Runs ``code`` with pylance ``version``; its stdout's last line as JSON."""
    out = subprocess.run([pylance(version), "-c", code, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_fails(version, code, *args):
    out = subprocess.run([pylance(version), "-c", code, *map(str, args)], capture_output=True, text=True)
    assert out.returncode != 0, out.stdout
    return out.stderr


def table(lo, hi):
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [f"n{i}" for i in ids],
        "st": [{"x": i * 2, "tags": [f"t{i}", "u"]} for i in ids],
    })


READ = """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
t = ds.to_table().sort_by("id")
print(json.dumps({"version": ds.version, "rows": t.to_pylist(),
                  "fragment_ids": [f.fragment_id for f in ds.get_fragments()]}))
"""


def pylance_reads(uri):
    return run("14", READ, uri)


def lancer_rows(uri):
    return lancer.dataset(uri).to_table().sort_by("id").to_pylist()


PYLANCE_WRITES = """
import json, sys, lance, pyarrow as pa
from lance.fragment import write_fragments
lo, hi, rows, mode = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ids = list(range(lo, hi))
t = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
              "st": [{"x": i * 2, "tags": [f"t{i}", "u"]} for i in ids]})
kw = {"data_storage_version": sys.argv[6]} if len(sys.argv) > 6 else {}
frags = write_fragments(t, sys.argv[1], max_rows_per_file=rows, mode=mode, **kw)
print(json.dumps([f.to_json() for f in frags]))
"""

PYLANCE_COMMITS = """
import json, sys, lance
from lance import FragmentMetadata, LanceOperation
frags = [FragmentMetadata.from_json(json.dumps(f)) for f in json.loads(sys.argv[3])]
kind, uri = sys.argv[2], sys.argv[1]
if kind == "overwrite":
    import pyarrow as pa
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()),
                        ("st", pa.struct([("x", pa.int64()), ("tags", pa.list_(pa.string()))]))])
    ds = lance.LanceDataset.commit(uri, LanceOperation.Overwrite(schema, frags), read_version=0)
else:
    ds = lance.LanceDataset.commit(uri, LanceOperation.Append(frags), read_version=int(sys.argv[4]))
print(json.dumps({"version": ds.version}))
"""


def keys(v):
    """The nested key structure of a JSON value (lists by their first item)."""
    if isinstance(v, dict):
        return {k: keys(x) for k, x in v.items()}
    if isinstance(v, list):
        return [keys(v[0])] if v else []
    return type(v).__name__ if v is not None else None


@pytest.mark.parametrize("version", ["14", "12", "11"])
def test_fragment_json_has_pylances_shape(tmp_path, version):
    """Same data, same limits: lancer's ``to_json()`` has pylance's members, nesting,
    key order and nulls, and the same field ids, column indices, row counts and file
    versions; pylance reads lancer's JSON back to the very same dict."""
    theirs = run(version, PYLANCE_WRITES, tmp_path / "p.lance", 0, 10, 4, "create", "2.1")
    ours = [f.to_json() for f in write_fragments(table(0, 10), str(tmp_path / "l.lance"), max_rows_per_file=4,
                                                 mode="create", data_storage_version="2.1")]
    assert len(ours) == len(theirs) == 3
    for o, t in zip(ours, theirs):
        assert keys(o) == keys(t)
        assert list(o) == list(t) and list(o["files"][0]) == list(t["files"][0])
        for k in ("id", "physical_rows", "deletion_file", "row_id_meta", "overlays"):
            assert o[k] == t[k], k
        for k in ("fields", "column_indices", "file_major_version", "file_minor_version", "base_id"):
            assert o["files"][0][k] == t["files"][0][k], k
        assert o["files"][0]["path"].endswith(".lance")
        size = (tmp_path / "l.lance" / "data" / o["files"][0]["path"]).stat().st_size
        assert o["files"][0]["file_size_bytes"] == size
    back = run(version, """
import json, sys
from lance.fragment import FragmentMetadata
print(json.dumps([FragmentMetadata.from_json(json.dumps(f)).to_json() for f in json.loads(sys.argv[1])]))
""", json.dumps(ours))
    assert back == ours


def test_fragment_metadata_round_trips_and_pickles(tmp_path):
    frags = write_fragments(table(0, 5), str(tmp_path / "d.lance"))
    f = frags[0]
    assert (f.id, f.physical_rows, f.num_deletions, f.num_rows, f.deletion_file) == (0, 5, 0, 5, None)
    assert FragmentMetadata.from_json(json.dumps(f.to_json())) == f
    assert pickle.loads(pickle.dumps(f)) == f
    op = lancer.LanceOperation.Append(frags)
    assert pickle.loads(pickle.dumps(op)) == op
    assert isinstance(lancer.FragmentMetadata, type) and lancer.fragment.FragmentMetadata is FragmentMetadata


def test_write_fragments_cuts_files_by_bytes_and_refuses_what_it_cannot_honour(tmp_path):
    import lance.fragment

    uri = str(tmp_path / "big.lance")
    frags = write_fragments(table(0, 20_000), uri, max_bytes_per_file=64 * 1024)
    # the cap counts what pylance's writer has written (columns go out in pieces of
    # over 8 MiB), checked after each batch: this small write is one file in both
    theirs = lance.fragment.write_fragments(table(0, 20_000), str(tmp_path / "theirs.lance"),
                                            max_bytes_per_file=64 * 1024)
    assert len(frags) == len(theirs) == 1 and sum(f.physical_rows for f in frags) == 20_000
    with pytest.raises(NotImplementedError, match="committing UpdateConfig"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.UpdateConfig(), read_version=1)
    with pytest.raises(OSError, match="Base reference"):
        write_fragments(table(0, 3), uri, target_bases=["b"])
    with pytest.raises(TypeError, match="no_such"):
        write_fragments(table(0, 3), uri, no_such=1)
    with pytest.raises(NotImplementedError, match="commit_lock"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.Overwrite(table(0, 1).schema, frags), commit_lock=object())
    with pytest.raises(TypeError, match="expected an Index segment"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.CreateIndex([object()], []), read_version=1)
    with pytest.raises(ValueError, match="mode"):
        write_fragments(table(0, 3), uri, mode="upsert")


@pytest.mark.parametrize("version", ["14", "12", "11"])
def test_lancer_workers_pylance_driver(tmp_path, version):
    """Lancer workers write, a pylance driver (14, 12, 11) commits an Overwrite then an
    Append of their JSON; that pylance and lancer read the same rows."""
    uri = str(tmp_path / "d.lance")
    storage = "2.1" if version == "11" else "2.2"
    w1 = write_fragments(table(0, 7), uri, max_rows_per_file=3, mode="create", data_storage_version=storage)
    w2 = write_fragments(table(7, 12), uri, max_rows_per_file=3, mode="create", data_storage_version=storage)
    assert [f.physical_rows for f in w1 + w2] == [3, 3, 1, 3, 2]
    shipped = json.dumps([f.to_json() for f in w1 + w2])
    assert run(version, PYLANCE_COMMITS, uri, "overwrite", shipped) == {"version": 1}
    w3 = write_fragments(table(12, 15), uri)  # appends fit the dataset's schema (and version)
    assert all(f.files[0].file_minor_version == int(storage[-1]) for f in w3)
    assert run(version, PYLANCE_COMMITS, uri, "append", json.dumps([f.to_json() for f in w3]), 1) == {"version": 2}
    got = run(version, READ, uri)
    assert got["rows"] == table(0, 15).to_pylist()
    assert got["fragment_ids"] == [0, 1, 2, 3, 4, 5]
    assert lancer_rows(uri) == got["rows"]


def test_pylance_workers_lancer_driver(tmp_path):
    """pylance workers write, a lancer driver commits (Overwrite creating the dataset,
    then an Append); both read the same rows."""
    uri = str(tmp_path / "d.lance")
    frags = []
    for lo, hi in [(0, 6), (6, 10)]:
        frags += [FragmentMetadata.from_json(json.dumps(f)) for f in run("14", PYLANCE_WRITES, uri, lo, hi, 4, "create")]
    assert all(f.id == 0 for f in frags)
    ds = lancer.LanceDataset.commit(uri, lancer.LanceOperation.Overwrite(table(0, 1).schema, frags), read_version=0)
    assert ds.version == 1
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2]  # 4 + 2 rows, 4 rows
    more = [FragmentMetadata.from_json(json.dumps(f)) for f in run("14", PYLANCE_WRITES, uri, 10, 13, 100, "append")]
    ds = lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(more), read_version=1)
    assert ds.version == 2
    assert lancer_rows(uri) == table(0, 13).to_pylist()
    got = pylance_reads(uri)
    assert got["rows"] == table(0, 13).to_pylist() and got["version"] == 2


def test_concurrent_append_between_write_and_commit_lands_too(tmp_path):
    """The driver read version 1; pylance appends meanwhile (version 2); the commit
    rebases and every row is there, for pylance too."""
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 4), uri)
    frags = write_fragments(table(100, 103), uri)
    run("14", """
import sys, json, lance, pyarrow as pa
ds = lance.dataset(sys.argv[1])
t = ds.to_table().slice(0, 2)
lance.write_dataset(t.set_column(0, "id", pa.array([50, 51], pa.int64())), sys.argv[1], mode="append")
print(json.dumps(1))
""", uri)
    ds = lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(frags), read_version=1)
    assert ds.version == 3
    ids = [r["id"] for r in pylance_reads(uri)["rows"]]
    assert ids == [0, 1, 2, 3, 50, 51, 100, 101, 102]
    assert [r["id"] for r in lancer_rows(uri)] == ids


DELETE_DRIVER = """
import json, sys, lance
from lance import FragmentMetadata, LanceOperation
frag = FragmentMetadata.from_json(sys.argv[2])
lance.LanceDataset.commit(sys.argv[1], LanceOperation.Delete([frag], [], "id < 3"), read_version=int(sys.argv[3]))
print(json.dumps(lance.dataset(sys.argv[1]).count_rows()))
"""


@pytest.mark.parametrize("driver", ["lancer", "pylance"])
def test_delete_commits_or_conflicts_as_pylance(tmp_path, driver):
    """A Delete built by hand (a fragment with its new deletion file) commits at the
    version it was read at; after a concurrent overwrite both pylance and lancer refuse
    it as a conflict (CommitConflictError)."""
    uri = str(tmp_path / "d.lance")
    ds = lancer.write_dataset(table(0, 10), uri)
    ds.delete("id < 3")
    # the fragment with its deletion file, as pylance describes it; then back to v1
    meta, deletion_json = run("14", """
import json, sys, lance
m = lance.dataset(sys.argv[1]).get_fragments()[0].metadata
print(json.dumps([m.to_json(), m.deletion_file.json()]))
""", uri)
    frag = json.dumps(meta)
    assert meta["deletion_file"]["num_deleted_rows"] == 3
    ours = FragmentMetadata.from_json(frag)
    assert ours.to_json() == meta and ours.num_deletions == 3 and ours.num_rows == 7
    assert ours.deletion_file.json() == deletion_json
    assert lancer.dataset(uri).get_fragments()[0].metadata == ours
    lancer.dataset(uri, version=1).restore()
    v = lancer.dataset(uri).version
    assert v == 3

    def commit(read_version):
        if driver == "pylance":
            return run("14", DELETE_DRIVER, uri, frag, read_version)
        op = lancer.LanceOperation.Delete([FragmentMetadata.from_json(frag)], [], "id < 3")
        return lancer.LanceDataset.commit(uri, op, read_version=read_version).count_rows()

    lancer.write_dataset(table(0, 5), uri, mode="overwrite")  # version 4, concurrent
    if driver == "pylance":
        err = run_fails("14", DELETE_DRIVER, uri, frag, v)
        assert "CommitConflictError" in err and "Overwrite" in err
    else:
        with pytest.raises(lancer.CommitConflictError, match="incompatible"):
            commit(v)
    assert lancer.dataset(uri).count_rows() == 5
    # on the version it was built for, it commits: restore v3's contents first
    lancer.dataset(uri, version=3).restore()
    assert commit(5) == 7
    assert [r["id"] for r in pylance_reads(uri)["rows"]] == list(range(3, 10))
    assert [r["id"] for r in lancer_rows(uri)] == list(range(3, 10))


def test_missing_or_tampered_files_are_refused_naming_them(tmp_path):
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 4), uri)
    frags = write_fragments(table(10, 14), uri)
    path = frags[0].files[0].path
    tampered = FragmentMetadata.from_json(json.dumps(frags[0].to_json()).replace('"physical_rows": 4', '"physical_rows": 9'))
    with pytest.raises(lancer.InvalidInputError, match=f"{path}.*4 rows, the fragment records 9"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append([tampered]), read_version=1)
    os.remove(Path(uri) / "data" / path)
    with pytest.raises(lancer.InvalidInputError, match=f"data file .*{path} does not exist"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(frags), read_version=1)
    with pytest.raises(ValueError, match="read_version is required"):
        lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(frags))
    assert lancer.dataset(uri).version == 1 and lancer.dataset(uri).count_rows() == 4


def test_uncommitted_files_invisible_until_cleanup_past_its_limit(tmp_path):
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 4), uri)
    frags = write_fragments(table(10, 14), uri)
    orphan = Path(uri) / "data" / frags[0].files[0].path
    ds = lancer.dataset(uri)
    assert (ds.version, ds.count_rows()) == (1, 4) and orphan.exists()
    assert run("14", READ, uri)["rows"] == table(0, 4).to_pylist()
    lancer.write_dataset(table(4, 5), uri, mode="append")  # a version newer than the file
    # younger than the limit for unverified files (a week): it stays
    lancer.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert orphan.exists()
    # once older than that limit it goes (here: its clock set back eight days)
    eight_days_ago = (datetime.datetime.now() - datetime.timedelta(days=8)).timestamp()
    os.utime(orphan, (eight_days_ago, eight_days_ago))
    lancer.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert not orphan.exists()
    # a younger one goes only with delete_unverified (the caller vouches no writer is
    # about to commit it)
    young = Path(uri) / "data" / write_fragments(table(20, 22), uri)[0].files[0].path
    lancer.write_dataset(table(5, 6), uri, mode="append")
    lancer.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert young.exists()
    lancer.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    assert not young.exists()
    assert lancer_rows(uri) == table(0, 6).to_pylist()


def test_rewrite_and_merge_from_pylance_workers(tmp_path):
    """A Merge whose fragments a pylance worker extended with a column
    (``merge_columns``) and a Rewrite of two fragments into one, committed by lancer."""
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 6), uri, max_rows_per_file=3)
    merged = run("14", """
import json, sys, lance, pyarrow as pa, pyarrow.compute as pc
ds = lance.dataset(sys.argv[1])
out = []
for f in ds.get_fragments():
    meta, schema = f.merge_columns(lambda b: pa.record_batch([pc.multiply(b["id"], 10)], ["tenfold"]), ["id"])
    out.append(meta.to_json())
print(json.dumps(out))
""", uri)
    schema = table(0, 1).schema.append(pa.field("tenfold", pa.int64()))
    ds = lancer.LanceDataset.commit(
        uri, lancer.LanceOperation.Merge([FragmentMetadata.from_json(json.dumps(f)) for f in merged], schema),
        read_version=1)
    assert ds.to_table().sort_by("id")["tenfold"].to_pylist() == [i * 10 for i in range(6)]
    assert pylance_reads(uri)["rows"][5]["tenfold"] == 50
    # rewrite both fragments into one a worker wrote; lancer's fragments describe
    # themselves as pylance's do
    theirs = run("14", "import json,sys,lance; print(json.dumps([f.metadata.to_json() for f in "
                       "lance.dataset(sys.argv[1]).get_fragments()]))", uri)
    old = [f.metadata for f in ds.get_fragments()]
    assert [f.to_json() for f in old] == theirs
    rows = ds.to_table().sort_by("id")
    new = write_fragments(rows, uri, mode="append")
    ds = lancer.LanceDataset.commit(
        uri, lancer.LanceOperation.Rewrite([lancer.LanceOperation.RewriteGroup(old, new)]), read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [2]
    got = pylance_reads(uri)
    assert got["rows"] == rows.to_pylist() and got["fragment_ids"] == [2]


def test_append_to_a_dataset_with_stable_row_ids(tmp_path):
    """Rows of a two-phase append get stable row ids at commit, as a local append's;
    pylance reads the same ids."""
    uri = str(tmp_path / "d.lance")
    ds = lancer.write_dataset(table(0, 5), uri, enable_stable_row_ids=True)
    frags = write_fragments(table(10, 13), uri)
    assert all(f.row_id_meta is None for f in frags)
    ds = lancer.LanceDataset.commit(ds, lancer.LanceOperation.Append(frags), read_version=1)
    ours = ds.to_table(with_row_id=True).sort_by("id")
    assert ours["_rowid"].to_pylist() == list(range(8))
    theirs = run("14", """
import json, sys, lance
t = lance.dataset(sys.argv[1]).to_table(with_row_id=True, columns=["id"]).sort_by("id")
print(json.dumps([t["id"].to_pylist(), t["_rowid"].to_pylist()]))
""", uri)
    assert theirs == [ours["id"].to_pylist(), ours["_rowid"].to_pylist()]
    # a dataset created by a two-phase overwrite with stable row ids
    uri2 = str(tmp_path / "e.lance")
    frags = write_fragments(table(0, 5), uri2, max_rows_per_file=2, mode="create")
    lancer.LanceDataset.commit(uri2, lancer.LanceOperation.Overwrite(table(0, 1).schema, frags),
                               enable_stable_row_ids=True)
    theirs = run("14", """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
t = ds.to_table(with_row_id=True, columns=["id"]).sort_by("id")
print(json.dumps([t["_rowid"].to_pylist(), ds.get_fragments()[2].metadata.row_id_meta is not None]))
""", uri2)
    assert theirs == [[0, 1, 2, 3, 4], True]


APPEND_DRIVER = """
import json, sys, lance
from lance import FragmentMetadata, LanceOperation
frags = [FragmentMetadata.from_json(json.dumps(f)) for f in json.loads(sys.argv[2])]
lance.LanceDataset.commit(sys.argv[1], LanceOperation.Append(frags), read_version=int(sys.argv[3]))
print(json.dumps(1))
"""


@pytest.mark.parametrize("driver", ["lancer", "pylance"])
def test_append_after_a_concurrent_overwrite_is_refused_by_both(tmp_path, driver):
    """Fragments written against version 1, committed as an Append after another writer
    overwrote the dataset (version 2): a conflict for pylance and lancer alike; the
    overwrite's rows stay."""
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 4), uri)
    frags = write_fragments(table(10, 12), uri)
    lancer.write_dataset(table(50, 51), uri, mode="overwrite")
    if driver == "pylance":
        err = run_fails("14", APPEND_DRIVER, uri, json.dumps([f.to_json() for f in frags]), 1)
        assert "CommitConflictError" in err
    else:
        with pytest.raises(lancer.CommitConflictError, match="version 2"):
            lancer.LanceDataset.commit(uri, lancer.LanceOperation.Append(frags), read_version=1)
    assert [r["id"] for r in pylance_reads(uri)["rows"]] == [50]


@pytest.mark.parametrize("driver", ["lancer", "pylance"])
def test_distributed_delete_from_lancer_workers(tmp_path, driver):
    """Workers delete per fragment without committing (LanceFragment.delete /
    delete_rows, as pylance's); one Delete commits them all, by a lancer or pylance
    driver; both read the rows left. pylance's workers give the same descriptions'
    row counts."""
    uri = str(tmp_path / "d.lance")
    lancer.write_dataset(table(0, 12), uri, max_rows_per_file=4)
    ds = lancer.dataset(uri)
    f0, f1, f2 = ds.get_fragments()
    updated = [f0.delete("id % 2 = 0"), f1.delete_rows([0, 3])]
    assert [u.num_deletions for u in updated] == [2, 2]
    assert f2.delete("id >= 8") is None  # every row: listed as deleted
    assert f2.delete("id > 100").to_json() == f2.metadata.to_json()  # nothing matched
    assert ds.count_rows() == 12 and lancer.dataset(uri).version == 1  # nothing committed
    if driver == "lancer":
        op = lancer.LanceOperation.Delete(updated, [f2.fragment_id], "distributed")
        assert lancer.LanceDataset.commit(uri, op, read_version=1).version == 2
    else:
        run("14", """
import json, sys, lance
from lance import FragmentMetadata, LanceOperation
frags = [FragmentMetadata.from_json(json.dumps(f)) for f in json.loads(sys.argv[2])]
print(json.dumps(lance.LanceDataset.commit(sys.argv[1], LanceOperation.Delete(frags, [2], "d"), read_version=1).version))
""", uri, json.dumps([u.to_json() for u in updated]))
    want = [1, 3, 5, 6]  # fragment 0 keeps its odd ids, fragment 1 loses offsets 0 and 3
    assert [r["id"] for r in lancer_rows(uri)] == want
    assert [r["id"] for r in pylance_reads(uri)["rows"]] == want
