"""`lancer.loader` and the PyTorch adapter: every row once per epoch across ranks and
workers (deletions, appends after discovery), determinism, exact resume, NumPy
batches, and the reference loader's refusal cases (built with pylance 14) read as
pylance reads them."""

import types

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer
from lancer.torch import LanceIterableDataset


def make(uri, n=3000, frags=700):
    t = pa.table({
        "id": pa.array(np.arange(n, dtype="int64")),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype="float32")), 4),
        "text": pa.array([f"row {i}" for i in range(n)]),
    })
    ds = lance.write_dataset(t, uri, max_rows_per_file=frags)
    ds.delete("id % 13 = 4")
    return lance.dataset(uri)


def ids(batches):
    return [i for b in batches for i in b.column("id").to_pylist()]


@pytest.mark.parametrize("shuffle", [False, True, "global"])
def test_every_row_once_per_epoch(tmp_path, shuffle):
    uri = str(tmp_path / "d.lance")
    ds = make(uri)
    want = sorted(ds.to_table(columns=["id"])["id"].to_pylist())
    first = lancer.loader(uri, batch_size=64)
    lance.write_dataset(pa.table({"id": pa.array([10**6], pa.int64()),
                                  "vec": pa.FixedSizeListArray.from_arrays(pa.array([0.0] * 4, pa.float32()), 4),
                                  "text": ["late"]}), uri, mode="append")
    for world in (1, 3, 8):
        for workers in (1, 2, 4):
            got, sizes = [], []
            for rank in range(world):
                n = 0
                for w in range(workers):
                    ld = lancer.loader(uri, rank=rank, world_size=world, worker=w, num_workers=workers,
                                       batch_size=50, shuffle=shuffle, seed=3, plan=first.plan_json,
                                       shuffle_buffer=200)
                    part = ids(ld)
                    n += len(part)
                    got += part
                sizes.append(n)
            assert sorted(got) == want, (world, workers)
            assert max(sizes) - min(sizes) <= 1
    assert lancer.loader(uri).plan["rows"] == len(want) + 1  # a new discovery sees the append


def test_order_and_resume(tmp_path):
    uri = str(tmp_path / "d.lance")
    make(uri)
    kw = dict(rank=0, world_size=2, batch_size=32, shuffle=True, seed=9, shuffle_buffer=100,
              columns=["id", "text"], filter="id % 2 = 0")
    a = lancer.loader(uri, **kw)
    full = ids(a)
    assert full == ids(lancer.loader(uri, **kw))
    a.set_epoch(1)
    assert ids(a) != full  # another epoch, another shard order: rank 0 reads other rows
    b = lancer.loader(uri, **{**kw, "rank": 1})
    both0 = full + ids(b)
    b.set_epoch(1)
    assert sorted(ids(a) + ids(b)) == sorted(both0)  # both ranks together: the same rows
    for k in (0, 1, 5, 17):
        ld = lancer.loader(uri, plan=a.plan_json, **kw)
        it = iter(ld)
        head = []
        for _ in range(k):
            b = next(it, None)
            if b is None:
                break
            head += b.column("id").to_pylist()
        state = ld.state_dict()
        again = lancer.loader(uri, plan=state["plan"], **kw)
        again.load_state_dict(state)
        assert head + ids(again) == full, k


def test_numpy_batches_and_torch_adapter_without_torch(tmp_path):
    uri = str(tmp_path / "d.lance")
    ds = make(uri, n=500, frags=120)
    batch = next(iter(lancer.loader(uri, batch_size=10, format="numpy")))
    assert batch["vec"].shape == (10, 4) and batch["vec"].dtype == np.float32
    first = ds.to_table(limit=10)  # row 4 is deleted
    assert batch["id"].tolist() == first["id"].to_pylist() and batch["text"][3] == first["text"][3].as_py()
    got = []
    for w in range(3):
        adapter = LanceIterableDataset(uri, rank=0, world_size=1, batch_size=16,
                                       worker_info=lambda w=w: types.SimpleNamespace(id=w, num_workers=3))
        got += [i for b in adapter for i in b["id"].tolist()]
    assert sorted(got) == sorted(ds.to_table(columns=["id"])["id"].to_pylist())


def test_guide_refusals_are_read_like_pylance(tmp_path):
    """Cases the reference loader refuses at discovery (shard-reader-guide.md): Lancer
    reads them; rows equal pylance 14's own read."""
    base = pa.table({"id": pa.array(range(300), pa.int64()), "a": pa.array([f"v{i}" for i in range(300)])})
    cases = {}
    # a fragment whose columns span several data files (add_columns)
    uri = str(tmp_path / "multi.lance")
    ds = lance.write_dataset(base, uri, max_rows_per_file=100)
    ds.add_columns({"b": "id * 3"})
    cases["add_columns"] = uri
    # a data file still holding a dropped column
    uri = str(tmp_path / "dropped.lance")
    ds = lance.write_dataset(base, uri, max_rows_per_file=100)
    ds.drop_columns(["a"])
    cases["drop_columns"] = uri
    # legacy (v1) data files
    uri = str(tmp_path / "legacy.lance")
    lance.write_dataset(base, uri, max_rows_per_file=100, data_storage_version="legacy")
    cases["legacy"] = uri
    # deletions and a merge
    uri = str(tmp_path / "merged.lance")
    ds = lance.write_dataset(base, uri, max_rows_per_file=100)
    ds.merge(pa.table({"id": pa.array(range(0, 300, 2), pa.int64()), "c": pa.array(range(150), pa.int32())}), "id")
    lance.dataset(uri).delete("id % 7 = 0")
    cases["merge"] = uri
    # files reached through another dataset's base path (a shallow clone)
    uri = str(tmp_path / "clone.lance")
    src = lance.dataset(cases["merge"])
    src.shallow_clone(uri, src.version)
    # the clone holds no data file of its own: every read goes through the base path
    assert not list((tmp_path / "clone.lance").glob("data/*.lance"))
    cases["shallow_clone"] = uri
    # blob v2 columns (file format 2.2): inline, packed, dedicated, external, null, empty
    from lance import Blob, blob_array, blob_field
    ext = tmp_path / "outside.bin"
    ext.write_bytes(bytes(range(256)) * 8)
    vals = [None, b"", b"tiny", b"i" * 200, b"p" * 600, b"d" * 3000,
            Blob.from_uri(ext.as_uri(), position=10, size=20), ext.as_uri()] * 9
    blobs = pa.table({"id": pa.array(range(len(vals)), pa.int64()), "b": blob_array(vals)},
                     schema=pa.schema([pa.field("id", pa.int64()),
                                       blob_field("b", inline_size_threshold=256, dedicated_size_threshold=1024)]))
    uri = str(tmp_path / "blob_v2.lance")
    lance.write_dataset(blobs, uri, max_rows_per_file=20, data_storage_version="2.2",
                        allow_external_blob_outside_bases=True)
    lance.dataset(uri).delete("id % 5 = 1")
    cases["blob_v2"] = uri
    for name, uri in cases.items():
        if name == "blob_v2":
            want = lance.dataset(uri).scanner(blob_handling="all_binary").to_table()
        else:
            want = lance.dataset(uri).to_table()
        parts = []
        for rank in range(3):
            parts += list(lancer.loader(uri, rank=rank, world_size=3, batch_size=37))
        if name == "blob_v2":
            got = pa.Table.from_batches(parts)
            assert got.column("id").to_pylist() == want.column("id").to_pylist()
            assert got.column("b").to_pylist() == want.column("b").to_pylist(), name
            kinds = {(d or {}).get("kind") for d in lance.dataset(uri).to_table().column("b").to_pylist()}
            assert kinds == {None, 0, 1, 2, 3}, kinds  # every way a payload is stored
            continue
        got = pa.Table.from_batches(parts, schema=want.schema) if parts else want.slice(0, 0)
        assert got.equals(want), name


def test_overlays_refused_at_discovery(tmp_path, monkeypatch):
    """Data overlay files (pylance 14's unstable cell-level updates, reader flag 64) are
    refused at discovery with the reason and a remedy that works: rewriting the dataset
    with pylance applies them, and the rewrite reads like pylance."""
    import os
    from lance import LanceOperation
    from lance.file import LanceFileWriter
    from lance.fragment import DataFile

    monkeypatch.setenv("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")
    uri = str(tmp_path / "ov.lance")
    ds = lance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()), "v": pa.array(range(10), pa.int64())}),
                             uri, data_storage_version="2.1")
    name = "overlay1.lance"
    w = LanceFileWriter(os.path.join(uri, "data", name), pa.schema([("v", pa.int64())]), version="2.1")
    w.write_batch(pa.table({"v": pa.array([100, 300], pa.int64())}))
    w.close()
    df = DataFile(name, [1], [0], 2, 1, file_size_bytes=os.path.getsize(os.path.join(uri, "data", name)))
    op = LanceOperation.DataOverlay([LanceOperation.DataOverlayGroup(0, [LanceOperation.DataOverlayFile(df, [1, 3])])])
    lance.LanceDataset.commit(uri, op, read_version=ds.version)
    assert lance.dataset(uri).to_table()["v"].to_pylist() == [0, 100, 2, 300, 4, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="overlay.*remedy: rewrite the dataset with pylance"):
        lancer.loader(uri)
    with pytest.raises(NotImplementedError, match="overlay"):
        lancer.dataset(uri)
    out = str(tmp_path / "rewritten.lance")
    lance.write_dataset(lance.dataset(uri), out)
    got = pa.Table.from_batches(list(lancer.loader(out)))
    assert got["v"].to_pylist() == [0, 100, 2, 300, 4, 5, 6, 7, 8, 9]


def test_external_blobs_relative_to_a_registered_base(tmp_path):
    """pylance stores an external blob under a registered base path as the base's id
    and a relative path; Lancer reads it from that base (not the working directory)."""
    from lance import Blob, DatasetBasePath, blob_array, blob_field

    media = tmp_path / "media"
    media.mkdir()
    (media / "a.bin").write_bytes(b"hello-media-bytes")
    uri_a = (media / "a.bin").as_uri()
    t = pa.table({"id": pa.array([0, 1, 2], pa.int64()),
                  "b": blob_array([Blob.from_uri(uri_a, position=6, size=5), uri_a, b"inline"])},
                 schema=pa.schema([pa.field("id", pa.int64()), blob_field("b")]))
    uri = str(tmp_path / "ds.lance")
    ds = lance.write_dataset(t, uri, initial_bases=[DatasetBasePath(media.as_uri(), name="media", id=1)])
    descs = ds.to_table().column("b").to_pylist()
    assert [d["blob_id"] for d in descs[:2]] == [1, 1] and descs[0]["blob_uri"] == "a.bin"
    want = [p for _, p in ds.read_blobs("b", indices=[0, 1, 2])]
    got = pa.Table.from_batches(list(lancer.loader(uri))).column("b").to_pylist()
    assert got == want == [b"media", b"hello-media-bytes", b"inline"]


@pytest.mark.parametrize("shuffle", [False, True, "global"])
def test_json_columns_leave_as_text_in_every_mode(tmp_path, shuffle):
    """A JSON column comes out of the loader as the scanner returns it (Arrow's JSON type,
    the documents' text) whatever the shuffle, and a filter on it reads the stored
    JSONB (global shuffle's takes returned text to the filter, which failed)."""
    uri = str(tmp_path / "j.lance")
    n = 900
    docs = [None if i % 10 == 3 else f'{{"k": {i % 7}, "s": "v{i}"}}' for i in range(n)]
    t = pa.table({"id": pa.array(range(n), pa.int64()), "doc": pa.array(docs, pa.json_())})
    lancer.write_dataset(t, uri, max_rows_per_file=200)
    want = lancer.dataset(uri).to_table(filter="json_get_int(doc, 'k') = 2")
    batches = list(lancer.loader(uri, batch_size=64, shuffle=shuffle, seed=1,
                                 filter="json_get_int(doc, 'k') = 2"))
    got = pa.Table.from_batches(batches).sort_by("id")
    assert got.schema.field("doc").type == want.schema.field("doc").type
    assert got.column("doc").to_pylist() == want.sort_by("id").column("doc").to_pylist()
    assert len(got) == sum(1 for i in range(n) if i % 10 != 3 and i % 7 == 2)
