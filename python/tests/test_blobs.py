"""Blob v2 columns (issue 44): lancer writes them as pylance 14 does — payloads inline,
in packed and dedicated ``.blob`` sidecars or as external URIs, by the column's
thresholds — and pylance 14, 12 and 11 read every payload (compared by hash) and every
descriptor (pylance 14's placement, row by row); pylance-written blob datasets read the
same through lancer's blob API (``read_blobs``, ``read_blob_ranges``, ``take_blobs`` →
``BlobFile``) as through pylance's; errors of pylance's kinds for the same mistakes.

pylance 12 and 11 run in subprocesses of their own venvs.
"""

import hashlib
import io
import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import lance
import lancer

REPO = Path(__file__).resolve().parents[2]
KB = 1024


def pylance(version):
    py = REPO / ".venv" / f"pylance-{version}" / "bin" / "python"
    if not py.exists():
        if os.environ.get("LANCER_REQUIRE_PYLANCE"):
            raise AssertionError(f"{py} missing (scripts/test.sh installs it)")
        pytest.skip(f"pylance {version} venv not installed")
    return str(py)


READ = """
import hashlib, json, sys, lance
ds = lance.dataset(sys.argv[1])
t = ds.to_table(blob_handling="all_binary")
b = t.column("b").to_pylist()
print(json.dumps({"ids": t.column("id").to_pylist(),
                  "hashes": [None if v is None else hashlib.sha256(v).hexdigest() for v in b],
                  "sizes": [None if v is None else len(v) for v in b]}))
"""


def other_pylance_reads(version, uri):
    out = subprocess.run([pylance(version), "-c", READ, str(uri)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def digest(v):
    return None if v is None else hashlib.sha256(v).hexdigest()


def payload(n, seed):
    return bytes((i * 31 + seed) % 256 for i in range(n))


# sizes around each threshold of a column with inline 256 / dedicated 1024, plus the
# defaults' edges (64 KiB inline, 4 MiB packed), null, empty and one byte
SMALL = [0, 1, 255, 256, 257, 1023, 1024, 1025, 5000, None]
DEFAULT = [0, 1, 64 * KB, 64 * KB + 1, 4 * KB * KB, 4 * KB * KB + 1, None]


def values(sizes):
    return [None if n is None else payload(n, k) for k, n in enumerate(sizes)]


def blob_table(mod, vals, field, start=0):
    schema = pa.schema([pa.field("id", pa.int64()), field])
    return pa.table({"id": pa.array(range(start, start + len(vals)), pa.int64()),
                     "b": mod.blob_array(vals)}, schema=schema)


def descriptors(ds):
    return ds.to_table(columns=["b"]).column("b").to_pylist()


@pytest.mark.parametrize("case", ["small", "default", "pack"])
def test_lancer_places_payloads_as_pylance_does(tmp_path, case):
    sizes = {"small": SMALL, "default": DEFAULT, "pack": [300] * 10 + [0]}[case]
    vals = values(sizes)
    kw = {"small": dict(inline_size_threshold=256, dedicated_size_threshold=1024),
          "default": {}, "pack": dict(inline_size_threshold=0, dedicated_size_threshold=1000)}[case]
    write_kw = {"blob_pack_file_size_threshold": 1000} if case == "pack" else {}
    got = {}
    for name, mod in (("lancer", lancer), ("pylance", lance)):
        t = blob_table(mod, vals, mod.blob_field("b", **kw))
        uri = tmp_path / f"{name}.lance"
        mod.write_dataset(t, str(uri), data_storage_version="2.2", **write_kw)
        got[name] = uri
    # the same descriptors (kinds, positions within sidecars, sizes, ids) except the
    # inline positions, which depend on each engine's page layout
    def norm(d):
        return [None if x is None else (x["kind"], x["size"], x["blob_id"], x["blob_uri"],
                                        x["position"] if x["kind"] != 0 else None) for x in d]
    ours = descriptors(lance.dataset(str(got["lancer"])))
    theirs = descriptors(lance.dataset(str(got["pylance"])))
    assert norm(ours) == norm(theirs)
    assert norm(descriptors(lancer.dataset(str(got["lancer"])))) == norm(ours)
    # the same sidecar files (names and sizes)
    def sidecars(uri):
        return sorted((p.name, p.stat().st_size) for p in (uri / "data").glob("*/*.blob"))
    assert sidecars(got["lancer"]) == sidecars(got["pylance"])
    # every pylance reads lancer's payloads
    want = [digest(v) for v in vals]
    assert [digest(v) for v in lance.dataset(str(got["lancer"])).to_table(
        blob_handling="all_binary").column("b").to_pylist()] == want
    for version in ("12", "11"):
        assert other_pylance_reads(version, got["lancer"])["hashes"] == want
    # and lancer reads pylance's
    assert [digest(v) for v in lancer.dataset(str(got["pylance"])).to_table(
        blob_handling="all_binary").column("b").to_pylist()] == want


def test_history_appends_deletes_compaction_read_by_every_pylance(tmp_path):
    uri = str(tmp_path / "h.lance")
    field = lancer.blob_field("b", inline_size_threshold=100, dedicated_size_threshold=2000)
    first = values([None if i % 7 == 3 else (i * 97) % 3000 for i in range(60)])
    lancer.write_dataset(blob_table(lancer, first, field), uri, data_storage_version="2.2", max_rows_per_file=25)
    more = values([i * 500 for i in range(8)])
    lancer.write_dataset(blob_table(lancer, more, field, start=60), uri, mode="append")
    # pylance appends to lancer's dataset, lancer to the result
    tail = values([3333, 7, None])
    lance.write_dataset(blob_table(lance, tail, lance.blob_field("b"), start=68), uri, mode="append")
    ds = lancer.dataset(uri)
    ds.delete("id % 5 = 1")
    ds.optimize.compact_files(materialize_deletions_threshold=0.0)
    ds = lancer.dataset(uri)
    allv = first + more + tail
    kept = [(i, v) for i, v in enumerate(allv) if i % 5 != 1]
    want_ids = [i for i, _ in kept]
    want = [digest(v) for _, v in kept]
    t = ds.to_table(blob_handling="all_binary")
    assert t.column("id").to_pylist() == want_ids
    assert [digest(v) for v in t.column("b").to_pylist()] == want
    pt = lance.dataset(uri).to_table(blob_handling="all_binary")
    assert pt.column("id").to_pylist() == want_ids and [digest(v) for v in pt.column("b").to_pylist()] == want
    for version in ("12", "11"):
        r = other_pylance_reads(version, uri)
        assert r["ids"] == want_ids and r["hashes"] == want
    # cleanup keeps what the latest version needs
    ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0), delete_unverified=True)
    assert [digest(v) for v in lance.dataset(uri).to_table(blob_handling="all_binary")
            .column("b").to_pylist()] == want


def pylance_dataset(tmp_path):
    ext = tmp_path / "ext.bin"
    ext.write_bytes(payload(5000, 3))
    vals = values([10, 0, 300, 3000, None]) + [ext.resolve().as_uri(),
                                                 lance.Blob.from_uri(ext.resolve().as_uri(), position=100, size=50)]
    t = blob_table(lance, vals, lance.blob_field("b", inline_size_threshold=256, dedicated_size_threshold=1024))
    uri = str(tmp_path / "p.lance")
    lance.write_dataset(t, uri, data_storage_version="2.2", allow_external_blob_outside_bases=True,
                        max_rows_per_file=4)
    return uri


def test_blob_api_answers_as_pylance(tmp_path):
    uri = pylance_dataset(tmp_path)
    ours, theirs = lancer.dataset(uri), lance.dataset(uri)
    n = theirs.count_rows()
    addrs = theirs.to_table(columns=[], with_row_address=True).column("_rowaddr").to_pylist()
    for sel in [dict(indices=list(range(n))), dict(indices=[6, 0, 6, 2]), dict(addresses=addrs[::-1]),
                dict(ids=addrs[:3])]:
        assert ours.read_blobs("b", **sel) == theirs.read_blobs("b", **sel), sel
    # without preserve_order the order is the engine's (pylance's varies): the same rows
    assert sorted(ours.read_blobs("b", indices=[5, 0], preserve_order=False)) == \
        sorted(theirs.read_blobs("b", indices=[5, 0], preserve_order=False))
    reqs = [(0, 2, 5), (2, 0, 300), (2, 299, 1), (3, 1000, 2000), (4, 0, 0), (4, 3, 9), (1, 0, 0),
            (5, 4990, 10), (6, 10, 40), (3, 0, 0)]
    assert ours.read_blob_ranges("b", reqs, selector="indices") == \
        theirs.read_blob_ranges("b", reqs, selector="indices")
    # lazy handles
    fo, fp = ours.take_blobs("b", indices=[3, 4, 1]), theirs.take_blobs("b", indices=[3, 4, 1])
    assert fo[1] is None and fp[1] is None
    assert fo[2].size() == fp[2].size() == 0 and fo[2].read() == b""
    a, b = fo[0], fp[0]
    assert a.size() == b.size() == 3000
    assert a.read(10) == b.read(10) and a.tell() == b.tell() == 10
    assert a.seek(-5, io.SEEK_END) == b.seek(-5, io.SEEK_END)
    assert a.read() == b.read()
    a.seek(100), b.seek(100)
    buf_a, buf_b = bytearray(64), bytearray(64)
    assert a.readinto(buf_a) == b.readinto(buf_b) and buf_a == buf_b
    assert a.read_range(7, 9) == b.read_range(7, 9) and a.tell() == b.tell()
    assert a.read_ranges([(0, 3), (2990, 10)]) == b.read_ranges([(0, 3), (2990, 10)])
    a.seek(0)
    assert a.readall() == payload(3000, 3)
    with ours.take_blobs("b", indices=[2], buffer_size=0)[0] as f:
        assert io.BufferedReader(f).read() == payload(300, 2)
    assert f.closed
    # errors of pylance's kinds
    for call in [lambda d: d.read_blobs("b"), lambda d: d.read_blobs("b", indices=[0], ids=[0]),
                 lambda d: d.read_blobs("id", indices=[0]),
                 lambda d: d.read_blob_ranges("b", [(2, 290, 20)], selector="indices"),
                 lambda d: d.read_blob_ranges("b", [(0, 0, 1)], selector="rows")]:
        with pytest.raises(ValueError):
            call(theirs)
        with pytest.raises(ValueError):
            call(ours)


def test_scans_return_descriptions_unless_asked(tmp_path):
    uri = pylance_dataset(tmp_path)
    ours, theirs = lancer.dataset(uri), lance.dataset(uri)
    assert ours.to_table(columns=["id", "b"]) == theirs.to_table(columns=["id", "b"])
    a = ours.to_table(blob_handling="all_binary")
    b = theirs.to_table(blob_handling="all_binary")
    assert a.column("b").to_pylist() == b.column("b").to_pylist()
    with pytest.raises(ValueError):
        ours.to_table(blob_handling="bytes")
    # takes return descriptors too
    assert ours.take([0, 3, 6], columns=["b"]) == theirs.take([0, 3, 6], columns=["b"])


@pytest.mark.parametrize("version", ["2.0", "2.1"])
@pytest.mark.parametrize("writer", [lance, lancer], ids=["pylance", "lancer"])
def test_legacy_blob_columns_scan_as_pylances_descriptions(tmp_path, version, writer):
    """A legacy blob column (``lance-encoding:blob`` binary, files 2.0 / 2.1): pylance's
    scans and takes return ``struct<position, size>`` descriptions (a 2.0 null as
    ``(1, 0)``, a 2.1 null as null), ``all_binary`` the bytes; lancer's the same, and its
    blob API reads the payloads through the descriptions."""
    field = pa.field("b", pa.large_binary(), True, {"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("id", pa.int64()), field])
    vals = values(SMALL + [7, 7, None, 0])
    t = pa.table({"id": pa.array(range(len(vals)), pa.int64()), "b": pa.array(vals, pa.large_binary())},
                 schema=schema)
    uri = str(tmp_path / "legacy")
    writer.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=4)
    lance.dataset(uri).delete("id % 5 = 2")
    ours, theirs = lancer.dataset(uri), lance.dataset(uri)
    for kw in [{}, {"columns": ["b"], "filter": "id > 3"}, {"blob_handling": "all_descriptions"},
               {"blob_handling": "blobs_descriptions", "columns": ["id", "b"], "limit": 3, "offset": 2}]:
        a, b = ours.to_table(**kw), theirs.to_table(**kw)
        assert a.schema == b.schema and a.schema.field("b").metadata == b.schema.field("b").metadata, kw
        assert a.to_pylist() == b.to_pylist(), kw
    want = theirs.to_table().column("b").to_pylist()
    assert any(d is not None and d["size"] > 1000 for d in want)  # payloads beyond the page
    nulls = sum(v is None for k, v in enumerate(vals) if k % 5 != 2)
    assert nulls and (want.count({"position": 1, "size": 0}) if version == "2.0" else want.count(None)) == nulls
    assert ours.take([6, 0, 5], columns=["b"]) == theirs.take([6, 0, 5], columns=["b"])
    assert ours.to_table(blob_handling="all_binary") == theirs.to_table(blob_handling="all_binary")
    assert ours.to_table(blob_handling="all_binary").column("b").to_pylist() == \
        [v for k, v in enumerate(vals) if k % 5 != 2]
    # the blob API reads through the descriptions: ranges of the data file
    n = theirs.count_rows()
    assert ours.read_blobs("b", indices=list(range(n))) == theirs.read_blobs("b", indices=list(range(n)))
    reqs = [(6, 1000, 25), (0, 0, 0), (3, 1, 254), (9, 0, 7)]
    assert ours.read_blob_ranges("b", reqs, selector="indices") == \
        theirs.read_blob_ranges("b", reqs, selector="indices")
    fo, fp = ours.take_blobs("b", indices=[6, 8]), theirs.take_blobs("b", indices=[6, 8])
    assert (fo[1] is None) == (fp[1] is None)
    assert fo[0].size() == fp[0].size() and fo[0].read_range(5, 100) == fp[0].read_range(5, 100)


def test_blobs_inside_structs_read_as_pylance(tmp_path):
    """Blob v2 columns inside a struct, as pylance 14 writes them: lancer reads them —
    descriptors by default, payloads with ``all_binary``, the blob API on the column's
    path ``s.b`` — and writes the same descriptors and sidecars pylance writes for the
    same data, over every size class, null blobs and null structs, three fragments with
    deletions."""
    bf = lance.blob_field("b", inline_size_threshold=256, dedicated_size_threshold=1024)
    vals = values(SMALL + [40, None, 2000])
    n = len(vals)
    names = pa.array([f"n{i}" for i in range(n)])
    st = pa.StructArray.from_arrays([names, lance.blob_array(vals)],
                                    fields=[pa.field("name", pa.string()), bf],
                                    mask=pa.array([i == 11 for i in range(n)]))
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": st})
    uri = str(tmp_path / "nested")
    lance.write_dataset(t, uri, data_storage_version="2.2", max_rows_per_file=5)
    lance.dataset(uri).delete("id = 3")
    ours, theirs = lancer.dataset(uri), lance.dataset(uri)
    assert ours.to_table() == theirs.to_table()
    a, b = ours.to_table(blob_handling="all_binary"), theirs.to_table(blob_handling="all_binary")
    assert a == b
    got = [None if r is None else r["b"] for r in a.column("s").to_pylist()]
    assert got == [None if k == 11 else v for k, v in enumerate(vals) if k != 3]
    assert ours.take([0, 9, 5], columns=["s"]) == theirs.take([0, 9, 5], columns=["s"])
    rows = list(range(theirs.count_rows()))
    assert ours.read_blobs("s.b", indices=rows) == theirs.read_blobs("s.b", indices=rows)
    reqs = [(5, 1000, 24), (0, 0, 0), (2, 1, 200), (11, 10, 1000)]
    assert ours.read_blob_ranges("s.b", reqs, selector="indices") == \
        theirs.read_blob_ranges("s.b", reqs, selector="indices")
    fo, fp = ours.take_blobs("s.b", indices=[6, 10]), theirs.take_blobs("s.b", indices=[6, 10])
    assert [f is None for f in fo] == [f is None for f in fp]
    assert fo[0].readall() == fp[0].readall()
    # lancer writes them as pylance does: the same descriptors and sidecar files
    mine = str(tmp_path / "lancer-nested")
    lancer.write_dataset(t, mine, data_storage_version="2.2", max_rows_per_file=5)
    mine_p = str(tmp_path / "pylance-nested")
    lance.write_dataset(t, mine_p, data_storage_version="2.2", max_rows_per_file=5)
    assert lance.dataset(mine).schema == lance.dataset(mine_p).schema
    assert lance.dataset(mine).to_table() == lance.dataset(mine_p).to_table()
    back = lance.dataset(mine).to_table(blob_handling="all_binary").column("s").to_pylist()
    assert [None if r is None else r["b"] for r in back] == [None if k == 11 else v for k, v in enumerate(vals)]

    def sidecars(root):
        out = []
        for frag in sorted(os.listdir(os.path.join(root, "data"))):
            d = os.path.join(root, "data", frag)
            if os.path.isdir(d):
                out.append(sorted((f, os.path.getsize(os.path.join(d, f))) for f in os.listdir(d)))
        return sorted(out)
    assert sidecars(mine) == sidecars(mine_p)
    # lancer compacts pylance's dataset (payloads re-placed); pylance reads the result
    ours.optimize.compact_files(target_rows_per_fragment=100)
    after = lance.dataset(uri)
    assert len(after.get_fragments()) == 1
    assert after.to_table(blob_handling="all_binary") == b
    with pytest.raises(ValueError, match="inside a list"):
        lt = pa.table({"l": pa.ListArray.from_arrays([0, 1], lance.blob_array([b"x"]))})
        lancer.write_dataset(lt, str(tmp_path / "in-list"), data_storage_version="2.2")


def test_write_refusals_as_pylance(tmp_path):
    ext = (tmp_path / "x.bin")
    ext.write_bytes(b"abc")
    t_l = blob_table(lancer, [ext.resolve().as_uri()], lancer.blob_field("b"))
    t_p = blob_table(lance, [ext.resolve().as_uri()], lance.blob_field("b"))
    # external URIs outside registered bases: refused unless allowed
    for mod, t in ((lancer, t_l), (lance, t_p)):
        with pytest.raises(OSError):
            mod.write_dataset(t, str(tmp_path / f"{mod.__name__}-ext"), data_storage_version="2.2")
    # blob v2 below 2.2
    for mod, t in ((lancer, t_l), (lance, t_p)):
        with pytest.raises(OSError):
            mod.write_dataset(t, str(tmp_path / f"{mod.__name__}-21"), data_storage_version="2.1",
                              allow_external_blob_outside_bases=True)
    # a legacy-marked binary at 2.2 becomes blob v2 in both
    legacy = pa.table({"b": pa.array([b"x", None], pa.large_binary())},
                      schema=pa.schema([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]))
    for mod in (lancer, lance):
        uri = str(tmp_path / f"{mod.__name__}-legacy")
        mod.write_dataset(legacy, uri, data_storage_version="2.2")
        assert getattr(lance.dataset(uri).schema.field("b").type, "extension_name", None) == "lance.blob.v2"
        assert lance.dataset(uri).to_table(blob_handling="all_binary").column("b").to_pylist() == [b"x", None]
    # ... inside a struct too
    inner = pa.struct([pa.field("name", pa.string()),
                       pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    nested = pa.table({"s": pa.array([{"name": "a", "b": b"xyz"}, {"name": "c", "b": None}], inner)})
    for mod in (lancer, lance):
        uri = str(tmp_path / f"{mod.__name__}-nested-legacy")
        mod.write_dataset(nested, uri, data_storage_version="2.2")
        t = lance.dataset(uri).schema.field("s").type
        assert getattr(t.field("b").type, "extension_name", None) == "lance.blob.v2"
        assert lance.dataset(uri).to_table(blob_handling="all_binary").column("s").to_pylist() == \
            [{"name": "a", "b": b"xyz"}, {"name": "c", "b": None}]
    with pytest.raises(ValueError):
        lancer.blob_field("b", dedicated_size_threshold=0)
    with pytest.raises(ValueError):
        lancer.Blob(data=b"x", uri="file:///x")


def test_ingest_stores_external_bytes(tmp_path):
    ext = tmp_path / "ext.bin"
    ext.write_bytes(payload(200_000, 5))
    uri = ext.resolve().as_uri()
    vals = [uri, lancer.Blob.from_uri(uri, position=10, size=100), None]
    got = {}
    for mod in (lancer, lance):
        t = blob_table(mod, [v if not isinstance(v, lancer.Blob) else
                             mod.Blob.from_uri(v.uri, position=v.position, size=v.size) for v in vals],
                       mod.blob_field("b"))
        out = str(tmp_path / f"{mod.__name__}.lance")
        mod.write_dataset(t, out, data_storage_version="2.2", external_blob_mode="ingest")
        got[mod.__name__] = out
        with pytest.raises((ValueError, OSError)):
            mod.write_dataset(t, out + "x", data_storage_version="2.2", external_blob_mode="ingest",
                              allow_external_blob_outside_bases=True)
    # the bytes are the dataset's own now (the external file may go)
    ext.unlink()
    full = payload(200_000, 5)
    for name, out in got.items():
        d = [None if x is None else (x["kind"], x["size"]) for x in descriptors(lance.dataset(out))]
        assert d == [(1, 200_000), (0, 100), None], name
        assert lance.dataset(out).to_table(blob_handling="all_binary").column("b").to_pylist() == \
            [full, full[10:110], None]


@pytest.mark.parametrize("writer", ["pylance", "lancer"])
def test_all_null_and_repeated_blob_columns_read_alike(tmp_path, writer):
    """Two shapes of their own, written by either engine and read by both: a blob column
    whose every value is null (over two fragments; Lancer used to fail reading it: the
    all-null descriptor page decoded with null children under a valid struct), and one
    payload repeated in every row (inline, packed and dedicated sizes)."""
    mod = lance if writer == "pylance" else lancer
    field = mod.blob_field("b")
    shapes = {"nulls": [None] * 40,
              "inline": [payload(100, 1)] * 30,
              "packed": [payload(200 * KB, 2)] * 30,
              "dedicated": [payload(5 * KB * KB, 3)] * 3}
    for name, vals in shapes.items():
        uri = str(tmp_path / f"{name}.lance")
        mod.write_dataset(blob_table(mod, vals, field), uri, max_rows_per_file=25,
                          data_storage_version="2.2")
        ours, theirs = lancer.dataset(uri), lance.dataset(uri)
        want = [digest(v) for v in vals]
        for ds in (ours, theirs):
            got = ds.to_table(blob_handling="all_binary").column("b").to_pylist()
            assert [digest(v) for v in got] == want, (name, ds)
        assert ours.to_table(columns=["id", "b"]) == theirs.to_table(columns=["id", "b"]), name
        rows = [0, len(vals) - 1]
        mine = [f.read() if f is not None else None for f in ours.take_blobs("b", indices=rows)] \
            if name != "nulls" else None
        if mine is not None:
            assert [digest(v) for v in mine] == [want[i] for i in rows], name


STREAM = """
import hashlib, json, sys
mod = __import__(sys.argv[2])
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
ds = mod.dataset(sys.argv[1])
f = ds.take_blobs("b", indices=[0])[0]
h, peak, n = hashlib.sha256(), anon(), 0
while True:
    b = f.read(8 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
    peak = max(peak, anon())
f.seek((1 << 30) - 100)
tail = f.read(1000)
print(json.dumps([h.hexdigest(), n, len(tail), peak]))
"""


def test_one_gib_blob_streams_in_bounded_memory(tmp_path):
    """A single 1 GiB blob written by Lancer (a dedicated sidecar) is read by Lancer's
    and pylance 14's ``BlobFile`` in 8 MiB pieces with the bytes written (by hash) and a
    read past its end short; Lancer's process holds at most 256 MiB of anonymous memory
    meanwhile (the file's pages are mapped, not copied)."""
    import numpy as np

    n = 1 << 30
    # a pattern of a prime period (1,000,003 bytes): no 8 MiB piece equals another
    block = (np.arange(1_000_003, dtype=np.uint32) * 31 % 251).astype(np.uint8)
    big = np.tile(block, n // len(block) + 1)[:n].tobytes()
    del block
    want = hashlib.sha256(big).hexdigest()
    uri = str(tmp_path / "big.lance")
    lancer.write_dataset(blob_table(lancer, [big, b"small"], lancer.blob_field("b")), uri,
                         data_storage_version="2.2")
    del big
    assert sorted(f.stat().st_size for f in (tmp_path / "big.lance").rglob("*.blob")) == [n]
    ours = subprocess.run([str(REPO / ".venv" / "py" / "bin" / "python"), "-c", STREAM, uri, "lancer"],
                          capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr[-3000:]
    digest_, size, tail, peak = json.loads(ours.stdout.strip().splitlines()[-1])
    assert (digest_, size, tail) == (want, n, 100)
    print(f"lancer streamed 1 GiB holding at most {peak / (1 << 20):.0f} MiB of anonymous memory")
    assert peak < 256 << 20, f"{peak / (1 << 20):.0f} MiB of anonymous memory while streaming"
    theirs = subprocess.run([pylance("14"), "-c", STREAM, uri, "lance"], capture_output=True, text=True)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert json.loads(theirs.stdout.strip().splitlines()[-1])[:3] == [want, n, 100]


def test_large_read_blobs_copied_by_every_core_are_exact(tmp_path):
    """A ``read_blobs`` of more than 8 MiB fills its ``bytes`` objects from several
    threads (in 1 MiB pieces, the GIL released): every payload — sizes not a multiple of
    the piece, an empty one, a null, one byte, packed and dedicated sidecars — equals
    the written bytes and pylance's answer, in any selection order."""
    import os as _os
    sizes = [3 * KB * KB + 7, 5 * KB * KB + 1, None, 0, 1, 2 * KB * KB - 3, 1536 * KB]
    vals = [None if n is None else _os.urandom(n) for n in sizes]
    for writer in (lance, lancer):
        uri = str(tmp_path / f"{writer.__name__}.lance")
        writer.write_dataset(blob_table(writer, vals, writer.blob_field("b")), uri, data_storage_version="2.2")
        ours, theirs = lancer.dataset(uri), lance.dataset(uri)
        for idx in (list(range(len(vals))), [6, 1, 0, 5, 1]):
            got = ours.read_blobs("b", indices=idx)
            assert [b for _, b in got] == [vals[i] for i in idx], writer.__name__
            assert got == theirs.read_blobs("b", indices=idx)
