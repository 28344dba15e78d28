"""Distributed index builds with pylance 14's calls (issue 43): ``IndicesBuilder``
trains once, ``create_index_uncommitted`` builds a segment per fragment group,
``commit_existing_index_segments`` / ``LanceOperation.CreateIndex`` commit them. The
index answers as one ``create_index`` with the same model, pylance 14, 12 and 11 open and
search it with the same answers, and segments cross between the engines both ways (pylance's
workers, lancer's driver and the other way round).

pylance runs in subprocesses of its own venv, as the workers of a distributed job do.
"""

import json
import os
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancer
from lancer.dataset import Index, IndexFile
from lancer.indices import IndicesBuilder

REPO = Path(__file__).resolve().parents[2]
DIM = 16
# (list_indices, pylance's deprecated listing, is what both engines show segments in)
pytestmark = pytest.mark.filterwarnings("ignore:The 'list_indices' method is deprecated:DeprecationWarning")


def pylance(version="14"):
    py = REPO / ".venv" / f"pylance-{version}" / "bin" / "python"
    if not py.exists():
        if os.environ.get("LANCER_REQUIRE_PYLANCE"):
            raise AssertionError(f"{py} missing (scripts/test.sh installs it)")
        pytest.skip(f"pylance {version} venv not installed")
    return str(py)


def run(code, *args, version="14"):
    out = subprocess.run([pylance(version), "-c", code, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def data(n=4000):
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(10, DIM)).astype(np.float32) * 4
    vec = centers[np.arange(n) % 10] + rng.normal(size=(n, DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1), pa.float32()), DIM),
        "cat": pa.array([None if i % 9 == 4 else i % 6 for i in range(n)], pa.int64()),
        "tag": [f"t{i % 5}" for i in range(n)],
    })


def make(path, n=4000):
    ds = lancer.write_dataset(data(n), str(path), max_rows_per_file=1000)
    ds.delete("id % 17 = 3")
    return lancer.dataset(str(path))


def groups(ds, k=2):
    ids = [f.fragment_id for f in ds.get_fragments()]
    size = (len(ids) + k - 1) // k
    return [ids[i:i + size] for i in range(0, len(ids), size)]


QUERIES = [list(np.random.default_rng(q).normal(size=DIM).astype(float) * 4) for q in range(6)]


def lancer_answers(ds, nprobes):
    return [ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "nprobes": nprobes})
            ["id"].to_pylist() for q in QUERIES]


PYLANCE_SEARCH = """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
qs = json.loads(sys.argv[2])
idx = ds.list_indices()
out = [ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "nprobes": int(sys.argv[3])})
       ["id"].to_pylist() for q in qs]
print(json.dumps({"answers": out, "names": sorted({i["name"] for i in idx}), "segments": len(idx)}))
"""


def test_pylance_calls_build_what_one_create_index_builds(tmp_path):
    ds = make(tmp_path / "dist")
    single = make(tmp_path / "single")
    builder = IndicesBuilder(ds, "vec")
    ivf = builder.train_ivf(4, distance_type="l2")
    pq = builder.train_pq(ivf, 4)
    assert ivf.num_partitions == 4 and ivf.dimension == DIM and pq.dimension == DIM
    assert len(pq.codebook) == 256
    # the models pickle (a driver hands them to its workers)
    ivf2, pq2 = pickle.loads(pickle.dumps((ivf, pq)))
    segments = [ds.create_index_uncommitted("vec", "IVF_PQ", fragment_ids=g, ivf_centroids=ivf2.centroids,
                                            pq_codebook=pq2.codebook, num_sub_vectors=4)
                for g in groups(ds)]
    assert all(isinstance(s, Index) and s.files and isinstance(s.files[0], IndexFile) for s in segments)
    assert set().union(*(s.fragment_ids for s in segments)) == {f.fragment_id for f in ds.get_fragments()}
    assert lancer.dataset(str(tmp_path / "dist")).list_indices() == []  # nothing committed yet
    segments = pickle.loads(pickle.dumps(segments))
    ds.commit_existing_index_segments("vec_idx", "vec", segments)
    single.create_index("vec", "IVF_PQ", ivf_centroids=ivf.centroids, pq_codebook=pq.codebook,
                        num_sub_vectors=4)
    for nprobes in (1, 2, 4):
        assert lancer_answers(ds, nprobes) == lancer_answers(single, nprobes), nprobes
    for version in ("14", "12", "11"):
        seen = run(PYLANCE_SEARCH, tmp_path / "dist", json.dumps(QUERIES), 2, version=version)
        assert seen["names"] == ["vec_idx"] and seen["segments"] == 2, version
        assert seen["answers"] == lancer_answers(ds, 2), version


def test_a_whole_model_from_train_model_and_a_create_index_commit(tmp_path):
    ds = make(tmp_path / "d")
    single = make(tmp_path / "s")
    model = IndicesBuilder(ds, "vec").train_model("IVF_SQ", num_partitions=4)
    assert model.sq_bounds is not None and model.centroids.shape == (4, DIM)
    model = pickle.loads(pickle.dumps(model))
    segs = [ds.create_index_uncommitted("vec", "IVF_SQ", fragment_ids=g, model=model) for g in groups(ds, 4)]
    op = lancer.LanceOperation.CreateIndex(new_indices=segs, removed_indices=[])
    committed = lancer.LanceDataset.commit(str(tmp_path / "d"), op, read_version=ds.version)
    assert committed.version == ds.version + 1
    single.create_index("vec", "IVF_SQ", num_partitions=4)
    for nprobes in (1, 4):
        assert lancer_answers(committed, nprobes) == lancer_answers(single, nprobes)


PYLANCE_WORKER = """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
frags = json.loads(sys.argv[2])
out = []
for g in frags:
    s = ds.create_index_uncommitted("cat", "BTREE", fragment_ids=g)
    out.append({"uuid": str(s.uuid), "name": s.name, "fields": list(s.fields),
                "dataset_version": s.dataset_version, "fragment_ids": sorted(s.fragment_ids),
                "index_version": s.index_version,
                "files": [[f.path, f.size_bytes] for f in (s.files or [])],
                "details": None if s.index_details is None else [s.index_details[0], s.index_details[1].hex()]})
print(json.dumps(out))
"""

PYLANCE_DRIVER = """
import json, sys, lance
from lance.dataset import Index, IndexFile
ds = lance.dataset(sys.argv[1])
segs = [Index(uuid=s["uuid"], name=s["name"], fields=s["fields"], dataset_version=s["dataset_version"],
              fragment_ids=set(s["fragment_ids"]), index_version=s["index_version"],
              files=[IndexFile(p, n) for p, n in s["files"]],
              index_details=(s["details"][0], bytes.fromhex(s["details"][1])))
        for s in json.loads(sys.argv[2])]
ds = ds.commit_existing_index_segments("cat_idx", "cat", segs)
ids = sorted(ds.to_table(columns=["id"], filter="cat = 2")["id"].to_pylist())
plan = ds.scanner(columns=["id"], filter="cat = 2").explain_plan()
print(json.dumps({"ids": ids, "indexed": "ScalarIndexQuery" in plan or "cat_idx" in plan,
                  "names": [i["name"] for i in ds.list_indices()]}))
"""


def ids_where(ds, sql):
    return sorted(ds.to_table(columns=["id"], filter=sql)["id"].to_pylist())


def test_pylance_workers_lancer_driver(tmp_path):
    ds = make(tmp_path / "d")
    out = run(PYLANCE_WORKER, tmp_path / "d", json.dumps(groups(ds)))
    segs = [Index(uuid=s["uuid"], name=s["name"], fields=s["fields"], dataset_version=s["dataset_version"],
                  fragment_ids=set(s["fragment_ids"]), index_version=s["index_version"],
                  files=[IndexFile(p, n) for p, n in s["files"]],
                  index_details=None if s["details"] is None else (s["details"][0], bytes.fromhex(s["details"][1])))
            for s in out]
    ds.commit_existing_index_segments("cat_idx", "cat", segs)
    assert [i["name"] for i in ds.list_indices()] == ["cat_idx", "cat_idx"]
    fresh = make(tmp_path / "plain")
    for sql in ("cat = 2", "cat >= 4", "cat IS NULL"):
        assert ids_where(ds, sql) == ids_where(fresh, sql), sql


def test_lancer_workers_pylance_driver(tmp_path):
    ds = make(tmp_path / "d")
    segs = [ds.create_index_uncommitted("cat", "BTREE", fragment_ids=g) for g in groups(ds)]
    text = json.dumps([{"uuid": s.uuid, "name": s.name, "fields": s.fields, "dataset_version": s.dataset_version,
                        "fragment_ids": sorted(s.fragment_ids), "index_version": s.index_version,
                        "files": [[f.path, f.size_bytes] for f in s.files],
                        "details": [s.index_details[0], s.index_details[1].hex()]} for s in segs])
    seen = run(PYLANCE_DRIVER, tmp_path / "d", text)
    assert seen["names"] == ["cat_idx", "cat_idx"]
    assert seen["ids"] == ids_where(lancer.dataset(str(tmp_path / "d")), "cat = 2")
    assert seen["indexed"]


def test_merged_bitmap_segments_and_refusals(tmp_path):
    ds = make(tmp_path / "d")
    segs = [ds.create_index_uncommitted("tag", "BITMAP", fragment_ids=[f.fragment_id])
            for f in ds.get_fragments()]
    merged = ds.merge_existing_index_segments(segs)
    assert merged.fragment_ids == {f.fragment_id for f in ds.get_fragments()}
    ds.commit_existing_index_segments("tag_idx", "tag", [merged])
    assert len(ds.list_indices()) == 1
    assert ids_where(ds, "tag = 't3'") == ids_where(make(tmp_path / "p"), "tag = 't3'")
    with pytest.raises(ValueError, match="requires fragment_ids"):
        ds.create_index_uncommitted("cat", "BTREE")
    with pytest.raises(TypeError, match="nope"):
        ds.create_index_uncommitted("cat", "BTREE", fragment_ids=[0], nope=1)
    with pytest.raises(ValueError, match="rows of 3 values"):
        ds.create_index_uncommitted("vec", "IVF_FLAT", fragment_ids=[0], ivf_centroids=np.zeros((4, 3)))
    with pytest.raises(NotImplementedError, match="progress_callback"):
        ds.create_index("vec", "IVF_FLAT", ivf_centroids=np.zeros((4, DIM)), progress_callback=print)
    with pytest.raises(NotImplementedError, match="rabitq_model"):
        ds.create_index_uncommitted("vec", "IVF_RQ", fragment_ids=[0], rabitq_model="{}")
    # ZONEMAP segments merge zone by zone; NGRAM ones are committed side by side
    zones = [ds.create_index_uncommitted("id", "ZONEMAP", fragment_ids=g) for g in groups(ds)]
    merged_zones = ds.merge_existing_index_segments(zones)
    assert sorted(merged_zones.fragment_ids) == sorted(f for g in groups(ds) for f in g)
    grams = [ds.create_index_uncommitted("tag", "NGRAM", fragment_ids=g) for g in groups(ds)]
    with pytest.raises(Exception, match="side by side"):
        ds.merge_existing_index_segments(grams)
    a = ds.create_index_uncommitted("cat", "BTREE", fragment_ids=[0, 1])
    b = ds.create_index_uncommitted("cat", "BTREE", fragment_ids=[1, 2])
    with pytest.raises(Exception, match="covered by two"):
        ds.commit_existing_index_segments("cat_idx", "cat", [a, b])
    shutil.rmtree(tmp_path / "d" / "_indices" / a.uuid)
    with pytest.raises(Exception, match="does not exist"):
        ds.commit_existing_index_segments("cat_idx", "cat", [a])


PYLANCE_PLANS = """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
out = {"indices": sorted((i["name"], i["type"], sorted(i["fragment_ids"])) for i in ds.list_indices())}
for sql in json.loads(sys.argv[2]):
    out[sql] = [sorted(ds.to_table(columns=["id"], filter=sql)["id"].to_pylist()),
                ds.scanner(columns=["id"], filter=sql).explain_plan()]
print(json.dumps(out))
"""


@pytest.mark.parametrize("column,kind,listed,sqls", [
    ("id", "ZONEMAP", "ZoneMap", ["id > 2500", "id = 17", "id < 1003 AND id >= 998"]),
    ("tag", "BLOOMFILTER", "BloomFilter", ["tag = 't3'", "tag IN ('t1', 'zz')"]),
])
def test_merged_zone_segments_are_one_index_pylance_uses(tmp_path, column, kind, listed, sqls):
    """ZONEMAP / BLOOMFILTER segments built per fragment group, merged by lancer and
    committed: pylance 14 lists one index over every fragment, plans the filters with
    it and answers them with a plain scan's rows."""
    ds = make(tmp_path / "d")
    segs = [ds.create_index_uncommitted(column, kind, fragment_ids=g) for g in groups(ds, k=3)]
    merged = ds.merge_existing_index_segments(segs)
    ds.commit_existing_index_segments(f"{column}_idx", column, [merged])
    frags = sorted(f.fragment_id for f in ds.get_fragments())
    seen = run(PYLANCE_PLANS, tmp_path / "d", json.dumps(sqls))
    assert seen["indices"] == [[f"{column}_idx", listed, frags]]
    fresh = make(tmp_path / "plain")
    for sql in sqls:
        rows, plan = seen[sql]
        assert rows == ids_where(fresh, sql) == ids_where(lancer.dataset(str(tmp_path / "d")), sql), sql
        assert f"@{column}_idx({listed})" in plan, plan


PYLANCE_FTS = """
import json, sys, lance
ds = lance.dataset(sys.argv[1])
out = {"indices": sorted((i["name"], i["type"], sorted(i["fragment_ids"])) for i in ds.list_indices())}
for q in json.loads(sys.argv[2]):
    t = ds.to_table(columns=["id"], full_text_query=q, limit=50, with_row_id=False)
    out[q] = sorted(zip(t["id"].to_pylist(), [round(s, 4) for s in t["_score"].to_pylist()]))
print(json.dumps(out))
"""


def fts_table(n=3000):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)] + ["lance", "vector", "search", "the", "and"]
    p = np.arange(1, len(words) + 1, dtype=np.float64) ** -1.1
    p /= p.sum()
    docs = [" ".join(rng.choice(words, size=rng.integers(0, 25), p=p)) if i % 37 else None
            for i in range(n)]
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": docs})


def same_top(a, b):
    """Two top-k answers ([id, score] pairs) agree: the same scores, the same rows above
    the lowest (rows tied at the cut may differ: each engine breaks those ties its way)."""
    if sorted(s for _, s in a) != sorted(s for _, s in b):
        return False
    cut = min((s for _, s in a), default=0)
    return sorted(x for x in a if x[1] > cut) == sorted(list(x) for x in b if x[1] > cut)


@pytest.mark.parametrize("with_position", [False, True])
def test_merged_inverted_segments_are_one_build(tmp_path, with_position):
    """INVERTED segments built per fragment group merge into one partition, as pylance
    14 merges them: files byte for byte those of one build over the same fragments
    (groups in any order, interleaved fragments included), the committed index answering
    every query with the rows and scores of pylance's own single build — in lancer and in
    pylance 14 — and segments built by pylance merged by lancer the same way."""
    t = fts_table()
    one = lancer.write_dataset(t, str(tmp_path / "one"), max_rows_per_file=500)
    one.create_scalar_index("text", "INVERTED", with_position=with_position)
    ds = lancer.write_dataset(t, str(tmp_path / "d"), max_rows_per_file=500)
    frags = [f.fragment_id for f in ds.get_fragments()]
    whole = ds.create_index_uncommitted("text", "INVERTED", fragment_ids=frags, with_position=with_position)
    files = lambda seg: {f: (tmp_path / "d" / "_indices" / seg.uuid / f).read_bytes()
                         for f in os.listdir(tmp_path / "d" / "_indices" / seg.uuid)}
    for groups_ in ([frags[:2], frags[2:4], frags[4:]], [frags[3:], frags[:3]], [frags[::2], frags[1::2]]):
        segs = [ds.create_index_uncommitted("text", "INVERTED", fragment_ids=g, with_position=with_position)
                for g in groups_]
        merged = ds.merge_existing_index_segments(segs)
        assert sorted(merged.fragment_ids) == sorted(frags)
        assert files(merged) == files(whole), groups_
    ds.commit_existing_index_segments("text_idx", "text", [merged])
    queries = ["lance", "w3 w17", "vector search", "the", "w250 lance", "nothing_here"]
    if with_position:
        queries.append('"w1 w2"')
    want = run(PYLANCE_FTS, tmp_path / "one", json.dumps(queries))
    got = run(PYLANCE_FTS, tmp_path / "d", json.dumps(queries))
    assert got["indices"] == [("text_idx", "Inverted", sorted(frags))] or got["indices"][0][2] == sorted(frags)
    for q in queries:
        assert got[q] == want[q], q
        t_ = lancer.dataset(str(tmp_path / "d")).to_table(columns=["id"], full_text_query=q, limit=50)
        ours = [[i, round(s, 4)] for i, s in zip(t_["id"].to_pylist(), t_["_score"].to_pylist())]
        assert same_top(ours, want[q]), q
    # pylance's segments, merged by lancer: the same answers again
    shutil.rmtree(tmp_path / "p", ignore_errors=True)
    lancer.write_dataset(t, str(tmp_path / "p"), max_rows_per_file=500)
    made = run("""
import json, sys, lance
ds = lance.dataset(sys.argv[1])
fr = [f.fragment_id for f in ds.get_fragments()]
segs = [ds.create_index_uncommitted("text", "INVERTED", fragment_ids=g, with_position=sys.argv[2] == "1")
        for g in (fr[:3], fr[3:])]
print(json.dumps([{"uuid": str(s.uuid), "fields": list(s.fields), "fragment_ids": sorted(s.fragment_ids),
                   "index_version": s.index_version, "files": [[f.path, f.size_bytes] for f in (s.files or [])],
                   "details": [s.index_details[0], s.index_details[1].hex()]} for s in segs]))
""", tmp_path / "p", "1" if with_position else "0")
    p = lancer.dataset(str(tmp_path / "p"))
    theirs = [Index(uuid=s["uuid"], name="text_idx", fields=s["fields"], dataset_version=1,
                    fragment_ids=set(s["fragment_ids"]), index_version=s["index_version"],
                    files=[IndexFile(a, b) for a, b in s["files"]],
                    index_details=(s["details"][0], bytes.fromhex(s["details"][1]))) for s in made]
    merged = p.merge_existing_index_segments(theirs)
    p.commit_existing_index_segments("text_idx", "text", [merged])
    got = run(PYLANCE_FTS, tmp_path / "p", json.dumps(queries))
    for q in queries:
        assert got[q] == want[q], q
    # lancer's segments, merged and committed by a pylance 14 driver: the same answers
    lw = lancer.write_dataset(t, str(tmp_path / "l"), max_rows_per_file=500)
    fr = [f.fragment_id for f in lw.get_fragments()]
    ours = [lw.create_index_uncommitted("text", "INVERTED", fragment_ids=g, with_position=with_position)
            for g in (fr[1::2], fr[::2])]
    run("""
import json, sys, lance
from lance.dataset import Index, IndexFile
ds = lance.dataset(sys.argv[1])
segs = [Index(uuid=s["uuid"], name="text_idx", fields=s["fields"], dataset_version=1,
              fragment_ids=set(s["fragment_ids"]), index_version=s["index_version"],
              files=[IndexFile(a, b) for a, b in s["files"]], created_at=None, base_id=None,
              index_details=(s["details"][0], bytes.fromhex(s["details"][1]))) for s in json.loads(sys.argv[2])]
ds.commit_existing_index_segments("text_idx", "text", [ds.merge_existing_index_segments(segs)])
print("{}")
""", tmp_path / "l", json.dumps([{"uuid": s.uuid, "fields": list(s.fields), "fragment_ids": sorted(s.fragment_ids),
                                     "index_version": s.index_version,
                                     "files": [[f.path, f.size_bytes] for f in (s.files or [])],
                                     "details": [s.index_details[0], s.index_details[1].hex()]} for s in ours]))
    got = run(PYLANCE_FTS, tmp_path / "l", json.dumps(queries))
    for q in queries:
        assert got[q] == want[q], q


def shape_table(shape, n=1200):
    """The standard shapes an INVERTED merge must take: every document null, one
    document repeated, empty strings among nulls, and drawn documents (rows deleted
    before the build)."""
    if shape == "nulls":
        docs = [None] * n
    elif shape == "repeated":
        docs = ["lance vector search"] * n
    elif shape == "empty":
        docs = ["" if i % 3 else None for i in range(n)]
    else:
        rng = np.random.default_rng(5)
        words = [f"w{i}" for i in range(50)] + ["lance", "vector"]
        docs = [" ".join(rng.choice(words, size=rng.integers(0, 12))) for _ in range(n)]
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "text": pa.array(docs, pa.string())})


PYLANCE_OWN_FTS = """
import json, sys, lance
lance.dataset(sys.argv[1]).create_scalar_index("text", "INVERTED")
out = {}
for key, path in (("own", sys.argv[1]), ("merged", sys.argv[2])):
    ds = lance.dataset(path)
    out[key] = {}
    for q in json.loads(sys.argv[3]):
        t = ds.to_table(columns=["id"], full_text_query=q, limit=50, with_row_id=False)
        out[key][q] = sorted(zip(t["id"].to_pylist(), [round(s, 4) for s in t["_score"].to_pylist()]))
print(json.dumps(out))
"""


@pytest.mark.parametrize("shape", ["nulls", "repeated", "empty", "deleted"])
def test_merged_inverted_segments_of_every_shape_answer_as_each_pylances_build(tmp_path, shape):
    """On each standard shape the merge of segments over interleaved fragment groups is
    byte for byte one build over all the fragments, and pylance 14, 12 and 11 each answer
    every query on the merged index with the rows and scores of the index they build
    themselves over the same rows."""
    def written(name):
        ds = lancer.write_dataset(shape_table(shape), str(tmp_path / name), max_rows_per_file=300)
        if shape == "deleted":
            ds.delete("id % 7 = 2")
        return lancer.dataset(str(tmp_path / name))

    ds = written("merged")
    frags = [f.fragment_id for f in ds.get_fragments()]
    whole = ds.create_index_uncommitted("text", "INVERTED", fragment_ids=frags)
    segs = [ds.create_index_uncommitted("text", "INVERTED", fragment_ids=g) for g in (frags[1::2], frags[::2])]
    merged = ds.merge_existing_index_segments(segs)
    files = lambda seg: {f: (tmp_path / "merged" / "_indices" / seg.uuid / f).read_bytes()
                         for f in os.listdir(tmp_path / "merged" / "_indices" / seg.uuid)}
    assert files(whole) and files(merged) == files(whole)
    ds.commit_existing_index_segments("text_idx", "text", [merged])
    queries = ["lance", "vector search", "w3 w17", "w49", "nothing_here"]
    for v in ("14", "12", "11"):
        written(f"own-{v}")
        out = run(PYLANCE_OWN_FTS, tmp_path / f"own-{v}", tmp_path / "merged", json.dumps(queries), version=v)
        want, got = out["own"], out["merged"]
        for q in queries:
            assert got[q] == want[q], (v, q)
        if shape == "repeated":
            assert len(got["lance"]) == 50, v
        if shape in ("nulls", "empty"):
            assert all(got[q] == [] for q in queries), v
        if shape == "deleted":
            assert got["lance"] and got["w3 w17"], v
            assert all(i % 7 != 2 for q in queries for i, _ in got[q]), v


def test_inverted_segments_of_other_settings_are_refused(tmp_path):
    ds = lancer.write_dataset(fts_table(600), str(tmp_path / "d"), max_rows_per_file=200)
    a = ds.create_index_uncommitted("text", "INVERTED", fragment_ids=[0], stem=False)
    b = ds.create_index_uncommitted("text", "INVERTED", fragment_ids=[1, 2])
    with pytest.raises(ValueError, match="different analyzer settings"):
        ds.merge_existing_index_segments([a, b])
    c = ds.create_index_uncommitted("text", "INVERTED", fragment_ids=[0, 1])
    with pytest.raises(ValueError, match="covered by two"):
        ds.merge_existing_index_segments([b, c])
