"""Registered base paths (pylance 14's multi-base datasets): ``initial_bases`` at
creation, ``add_bases`` later, ``base_paths()`` — each engine reads the other's — and
external blob URIs under a registered base stored as that base's id and the relative
path, byte for byte as pylance 14 stores them; ``target_bases`` / ``target_all_bases``
place new data files in registered bases as pylance 14 places them."""

import pyarrow as pa
import pytest

import lance
import lancer


def listed(ds):
    return {i: (b.name, b.path, b.is_dataset_root) for i, b in ds.base_paths().items()}


def blob_table(uris):
    vals = [u if isinstance(u, str) else lance.Blob.from_uri(u[0], position=u[1], size=u[2]) for u in uris]
    return pa.table({"id": pa.array(range(len(uris)), pa.int64()), "b": lance.blob_array(vals)},
                    schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("b")]))


@pytest.mark.parametrize("writer", [lance, lancer], ids=["pylance", "lancer"])
def test_external_blobs_under_a_base_are_stored_relative(tmp_path, writer):
    media = tmp_path / "media"
    (media / "sub").mkdir(parents=True)
    payload = bytes(range(256)) * 20
    (media / "sub" / "f.bin").write_bytes(payload)
    other = tmp_path / "other"
    other.mkdir()
    (other / "g.bin").write_bytes(b"outside")
    base_uri = media.resolve().as_uri()
    f_uri = (media / "sub" / "f.bin").resolve().as_uri()
    t = blob_table([f_uri, (f_uri, 10, 20)])
    uri = str(tmp_path / "d")
    writer.write_dataset(t, uri, data_storage_version="2.2",
                         initial_bases=[writer.DatasetBasePath(base_uri, name="media")])
    ours, theirs = lancer.dataset(uri), lance.dataset(uri)
    assert listed(ours) == listed(theirs) == {1: ("media", base_uri, False)}
    # descriptors as pylance stores them: kind 3, the base's id, the relative path
    want = [{"kind": 3, "position": 0, "size": 0, "blob_id": 1, "blob_uri": "sub/f.bin"},
            {"kind": 3, "position": 10, "size": 20, "blob_id": 1, "blob_uri": "sub/f.bin"}]
    assert theirs.to_table().column("b").to_pylist() == want
    assert ours.to_table() == theirs.to_table()
    assert ours.read_blobs("b", indices=[0, 1]) == theirs.read_blobs("b", indices=[0, 1])
    assert [f.readall() for f in ours.take_blobs("b", indices=[0, 1])] == [payload, payload[10:30]]
    # a URI outside every base: refused by both unless allowed (then stored absolute)
    outside = blob_table([(other / "g.bin").resolve().as_uri()])
    for mod in (lance, lancer):
        with pytest.raises(Exception, match="outside"):
            mod.write_dataset(outside, uri, mode="append")
    lancer.write_dataset(outside, uri, mode="append", allow_external_blob_outside_bases=True)
    assert lance.dataset(uri).read_blobs("b", indices=[2]) == lancer.dataset(uri).read_blobs("b", indices=[2])


@pytest.mark.parametrize("adder", [lance, lancer], ids=["pylance", "lancer"])
def test_add_bases_registers_more_read_by_both(tmp_path, adder):
    uri = str(tmp_path / "d")
    lancer.write_dataset(pa.table({"x": [1, 2]}), uri, data_storage_version="2.2",
                         initial_bases=[lancer.DatasetBasePath("s3://bucket/a", name="a")])
    ds = adder.dataset(uri)
    v = ds.version
    out = ds.add_bases([adder.DatasetBasePath("s3://bucket/b", name="b"),
                        adder.DatasetBasePath("s3://bucket/c", is_dataset_root=True)],
                       transaction_properties={"who": "test"})
    assert out is ds and ds.version == v + 1
    want = {1: ("a", "s3://bucket/a", False), 2: ("b", "s3://bucket/b", False),
            3: (None, "s3://bucket/c", True)}
    assert listed(lancer.dataset(uri)) == listed(lance.dataset(uri)) == want
    assert lance.dataset(uri).to_table() == lancer.dataset(uri).to_table() == pa.table({"x": [1, 2]})
    # the registration is a version of its own; older versions do not list the new bases
    assert listed(lancer.dataset(uri, version=v)) == {1: ("a", "s3://bucket/a", False)}
    # ids asked for are kept, the others take the lowest free one (pylance's rule)
    for mod in (lance, lancer):
        u = str(tmp_path / f"ids-{mod.__name__}")
        mod.write_dataset(pa.table({"x": [1]}), u, initial_bases=[
            mod.DatasetBasePath("s3://bucket/p", name="p", id=5), mod.DatasetBasePath("s3://bucket/q", name="q")])
        mod.dataset(u).add_bases([mod.DatasetBasePath("s3://bucket/r", name="r", id=9),
                                  mod.DatasetBasePath("s3://bucket/s", name="s")])
        assert listed(lance.dataset(u)) == listed(lancer.dataset(u)) == {
            5: ("p", "s3://bucket/p", False), 1: ("q", "s3://bucket/q", False),
            9: ("r", "s3://bucket/r", False), 2: ("s", "s3://bucket/s", False)}, mod.__name__
    # a name or path already registered is refused, nothing committed
    for mod in (lance, lancer):
        with pytest.raises(Exception):
            mod.dataset(uri).add_bases([mod.DatasetBasePath("s3://bucket/z", name="a")])
    with pytest.raises(ValueError, match="already registered"):
        lancer.dataset(uri).add_bases([lancer.DatasetBasePath("s3://bucket/b/", name="z")])
    assert lancer.dataset(uri).version == v + 1


def test_commit_overwrite_with_initial_bases_and_restore_as_pylance(tmp_path):
    """``LanceOperation.Overwrite(initial_bases=...)`` registers the bases of the
    dataset it creates, and ``LanceOperation.Restore(version)`` (no read_version, as in
    pylance) makes an old version the latest — each engine's commit read alike by the
    other."""
    for mod in (lance, lancer):
        uri = str(tmp_path / f"{mod.__name__}-d")
        frags = mod.fragment.write_fragments(pa.table({"x": [1, 2]}), uri)
        op = mod.LanceOperation.Overwrite(pa.schema([pa.field("x", pa.int64())]), frags,
                                          initial_bases=[mod.DatasetBasePath("s3://b/media", name="media")])
        ds = mod.LanceDataset.commit(uri, op)
        # (a committed Overwrite keeps the ids it carries: DatasetBasePath's 0 here)
        assert listed(lance.dataset(uri)) == listed(lancer.dataset(uri)) == {0: ("media", "s3://b/media", False)}
        mod.write_dataset(pa.table({"x": [3]}), uri, mode="append")
        assert lance.dataset(uri).count_rows() == 3
        ds = mod.LanceDataset.commit(uri, mod.LanceOperation.Restore(ds.version))
        for reader in (lance, lancer):
            d = reader.dataset(uri)
            assert d.version == 3 and d.to_table() == pa.table({"x": [1, 2]}), reader.__name__
            assert listed(d) == {0: ("media", "s3://b/media", False)}


def test_target_bases_place_data_files_as_pylance(tmp_path):
    """``target_bases`` (by name, by path, the dataset's own location) and
    ``target_all_bases`` (with and without the primary location) put each new data
    file, one in turn, where pylance 14 puts it: a dataset-root base under ``data/``, a
    plain base directly, ``base_id`` recorded; deletions stay in the dataset; each
    engine reads the other's; unknown references and both options together refused by
    both."""
    t = pa.table({"id": pa.array(range(100), pa.int64())})
    got = {}
    for mod in (lance, lancer):
        root = tmp_path / mod.__name__
        uri = str(root / "ds")
        bases = [mod.DatasetBasePath(str(root / "rootbase"), name="r", is_dataset_root=True),
                 mod.DatasetBasePath(str(root / "flat"), name="f", is_dataset_root=False)]
        mod.write_dataset(t, uri, max_rows_per_file=20, initial_bases=bases, target_bases=["r", "f"])
        mod.write_dataset(t, uri, mode="append", max_rows_per_file=50, target_bases=[str(root / "flat"), uri])
        mod.write_dataset(t, uri, mode="append", max_rows_per_file=25, target_all_bases=True)
        mod.write_dataset(t, uri, mode="append", max_rows_per_file=25, target_all_bases=False)
        mod.dataset(uri).delete("id < 5")
        placed = [[d.base_id for d in f.data_files()] for f in lance.dataset(uri).get_fragments()]
        files = {d: sorted(p.name for p in (root / d).rglob("*.lance")).__len__()
                 for d in ("rootbase", "flat", "ds")}
        rows = {m.__name__: sorted(m.dataset(uri).to_table()["id"].to_pylist()) for m in (lance, lancer)}
        assert rows["lance"] == rows["lancer"] and len(rows["lance"]) == 400 - 20
        assert [[d.base_id for d in f.data_files()] for f in lancer.dataset(uri).get_fragments()] == placed
        assert all(f.deletion_file() is None or not f.deletion_file().startswith("/")
                   for f in lance.dataset(uri).get_fragments())
        got[mod.__name__] = (placed, files)
        for kw in ({"target_bases": ["nope"]}, {"target_bases": ["r"], "target_all_bases": True}):
            with pytest.raises(OSError):
                mod.write_dataset(t, uri, mode="append", **kw)
    assert got["lance"] == got["lancer"], got
    placed, files = got["lancer"]
    assert placed[:5] == [[1], [2], [1], [2], [1]] and files == {"rootbase": 3 + 1 + 2, "flat": 2 + 1 + 1 + 2, "ds": 1 + 2}


def test_merge_insert_target_bases_as_pylance(tmp_path):
    """``merge_insert(...).target_bases`` / ``target_all_bases``: the merge's new data
    files placed one in turn as pylance 14 places them, rows read alike by both."""
    t = pa.table({"id": pa.array(range(60), pa.int64()), "v": pa.array([0] * 60, pa.int64())})
    src = pa.table({"id": pa.array(range(40, 90), pa.int64()), "v": pa.array([1] * 50, pa.int64())})
    got = {}
    for mod in (lance, lancer):
        root = tmp_path / mod.__name__
        uri = str(root / "ds")
        mod.write_dataset(t, uri, max_rows_per_file=20, initial_bases=[
            mod.DatasetBasePath(str(root / "b1"), name="b1", is_dataset_root=True),
            mod.DatasetBasePath(str(root / "b2"), name="b2")])
        ds = mod.dataset(uri)
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
            .target_bases(["b2", "b1"]).execute(src)
        ds = mod.dataset(uri)
        ds.merge_insert("id").when_not_matched_insert_all().target_all_bases(False) \
            .execute(pa.table({"id": pa.array([500, 501], pa.int64()), "v": pa.array([2, 2], pa.int64())}))
        placed = sorted((tuple(-1 if d.base_id is None else d.base_id for d in f.data_files())
                         for f in lance.dataset(uri).get_fragments()))
        rows = {m.__name__: sorted(m.dataset(uri).to_table().to_pylist(), key=lambda r: r["id"])
                for m in (lance, lancer)}
        assert rows["lance"] == rows["lancer"]
        got[mod.__name__] = (placed, rows["lance"])
    assert got["lance"] == got["lancer"], got
    assert any(p != (-1,) for p in got["lancer"][0])


def test_write_fragments_target_bases_as_pylance(tmp_path):
    """``write_fragments(target_bases=...)`` on a dataset with bases: the uncommitted
    fragments' files placed one in turn as pylance 14 places them; committed by either
    engine's driver, read alike."""
    t = pa.table({"id": pa.array(range(50), pa.int64())})
    got = {}
    for mod in (lance, lancer):
        root = tmp_path / mod.__name__
        uri = str(root / "ds")
        mod.write_dataset(t, uri, initial_bases=[
            mod.DatasetBasePath(str(root / "b1"), name="b1", is_dataset_root=True)])
        frags = mod.fragment.write_fragments(t, uri, max_rows_per_file=20, target_bases=["b1", uri])
        placed = [[d.base_id for d in f.data_files()] for f in frags]
        ds = mod.LanceDataset.commit(uri, mod.LanceOperation.Append(frags), read_version=1)
        rows = {m.__name__: sorted(m.dataset(uri).to_table()["id"].to_pylist()) for m in (lance, lancer)}
        assert rows["lance"] == rows["lancer"] and ds.count_rows() == 100
        # an overwrite's fragments go to the existing dataset's bases too
        over = mod.fragment.write_fragments(t, uri, mode="overwrite", max_rows_per_file=25, target_bases=["b1"])
        got[mod.__name__] = (placed, [[d.base_id for d in f.data_files()] for f in over])
    assert got["lance"] == got["lancer"] == ([[1], [None], [1]], [[1], [1]]), got


def test_blob_v2_columns_with_target_bases_as_pylance(tmp_path):
    """A blob v2 column written with ``target_bases``: each data file's sidecars (packed
    and dedicated ``.blob`` files) lie beside it in its base, as pylance 14 places them —
    the same relative paths and sizes — and each engine reads the other's payloads,
    after a delete and a compaction by the other engine too."""
    import hashlib
    import os
    sizes = [0, 10, 70_000, 200_000, 5_000_000, None, 64 * 1024, 64 * 1024 + 1]
    vals = [None if s is None else os.urandom(s) for s in sizes]
    t = pa.table({"id": pa.array(range(len(vals)), pa.int64()), "b": lance.blob_array(vals)},
                 schema=pa.schema([pa.field("id", pa.int64()), lance.blob_field("b")]))
    digest = lambda bs: [None if b is None else hashlib.sha1(b).hexdigest() for b in bs]
    want = digest(vals) * 2
    got = {}
    for mod, other in ((lance, lancer), (lancer, lance)):
        root = tmp_path / mod.__name__
        uri = str(root / "ds")
        bases = [mod.DatasetBasePath(str(root / "r"), name="r", is_dataset_root=True),
                 mod.DatasetBasePath(str(root / "f"), name="f")]
        mod.write_dataset(t, uri, max_rows_per_file=4, initial_bases=bases, target_bases=["r"],
                          data_storage_version="2.2")
        mod.write_dataset(t, uri, mode="append", max_rows_per_file=4, target_bases=["f", uri])
        layout = sorted((p.relative_to(root).parts[0], len(p.relative_to(root).parts), p.stat().st_size)
                        for p in root.rglob("*.blob"))
        n = len(vals) * 2
        for m in (lance, lancer):
            ds = m.dataset(uri)
            blobs = [f.readall() if f is not None else None
                     for f in ds.take_blobs("b", indices=list(range(n)))]
            assert [None if not b else hashlib.sha1(b).hexdigest() for b in blobs] == \
                [None if not w or w == hashlib.sha1(b"").hexdigest() else w for w in want], m.__name__
        other.dataset(uri).delete("id = 3")
        other.dataset(uri).optimize.compact_files()
        for m in (lance, lancer):
            ids = m.dataset(uri).to_table(columns=["id"])["id"].to_pylist()
            idx = [i for i in range(n) if i % len(vals) != 3]
            assert sorted(ids) == sorted(i % len(vals) for i in idx)
            ds = m.dataset(uri)
            order = ds.to_table(columns=["id"], with_row_address=True)
            got_b = [None if f is None else f.readall()
                     for f in ds.take_blobs("b", addresses=order["_rowaddr"].to_pylist())]
            got_b = sorted((i, digest([b or None])[0]) for i, b in zip(order["id"].to_pylist(), got_b))
            exp = sorted((i % len(vals), digest([vals[i % len(vals)] or None])[0]) for i in idx)
            assert got_b == exp, m.__name__
        got[mod.__name__] = layout
    assert got["lance"] == got["lancer"], got
    assert {part for part, _, _ in got["lancer"]} == {"r", "f", "ds"}
