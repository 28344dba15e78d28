"""pylance 14's fragment-level full-text builds (issue 61): ``create_scalar_index(column,
"INVERTED", fragment_ids=, index_uuid=)`` on groups of fragments, ``merge_index_metadata``
and a ``LanceOperation.CreateIndex`` commit of an ``Index`` built by hand — run by pylance
14 and by lancer on copies of one dataset (several fragments, deletions, nulls, empty
strings, one repeated value), each step's files and the searches compared, and each
library finishing what the other started."""

import os
import shutil
import uuid

import pyarrow as pa
import pytest

import lance
import lancer

WORDS = ["apple", "banana", "cherry", "delta", "echo", "fox", "golf", "hotel"]


def text_of(i):
    if i % 11 == 0:
        return None
    if i % 13 == 0:
        return ""
    if i % 17 == 0:
        return "repeated repeated repeated"
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 4))


@pytest.fixture(params=["2.0", "2.1", "2.2"])
def pair(request, tmp_path):
    """Two copies of one pylance-written dataset of 4 fragments with deletions."""
    n = 400
    t = pa.table({"id": pa.array(range(n), pa.int64()), "text": pa.array([text_of(i) for i in range(n)])})
    path = str(tmp_path / "base.lance")
    lance.write_dataset(t, path, max_rows_per_file=100, data_storage_version=request.param)
    lance.dataset(path).delete("id % 9 = 4")
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b


GROUPS = [[0], [2, 1], [3]]
QUERIES = ["apple", "banana cherry", "repeated", "hotel fox", "nothing"]


def index_files(path, u):
    root = os.path.join(path, "_indices", u)
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def stage(mod, path, u, groups=GROUPS):
    ds = mod.dataset(path)
    for g in groups:
        ds.create_scalar_index("text", "INVERTED", fragment_ids=g, index_uuid=u)


def merge(mod, path, u):
    mod.dataset(path).merge_index_metadata(u, "INVERTED")


def commit(mod, path, u):
    ds = mod.dataset(path)
    idx = mod.Index(uuid=u, name="text_idx", fields=[ds.schema.get_field_index("text")],
                    dataset_version=ds.version, fragment_ids={0, 1, 2, 3}, index_version=0)
    op = mod.LanceOperation.CreateIndex(new_indices=[idx], removed_indices=[])
    return mod.LanceDataset.commit(path, op, read_version=ds.version)


def answers(path):
    """Each query's ids and scores, read by pylance 14 and by lancer."""
    out = {}
    for name, mod in (("pylance", lance), ("lancer", lancer)):
        ds = mod.dataset(path)
        for q in QUERIES:
            t = ds.to_table(full_text_query=q, columns=["id", "_score"])
            out[(name, q)] = sorted(zip(t["id"].to_pylist(), [round(s, 4) for s in t["_score"].to_pylist()]))
    return out


def expected(path):
    """The answers of a single (committed) index build over the same rows, by pylance."""
    ds = lance.dataset(path)
    ds.create_scalar_index("text", "INVERTED")
    ds = lance.dataset(path)
    return {q: sorted(zip(t["id"].to_pylist(), [round(s, 4) for s in t["_score"].to_pylist()]))
            for q in QUERIES for t in [ds.to_table(full_text_query=q, columns=["id", "_score"])]}


@pytest.mark.parametrize("stager,merger,committer", [
    ("lancer", "lancer", "lancer"),
    ("lance", "lancer", "lancer"),
    ("lancer", "lance", "lance"),
    ("lancer", "lancer", "lance"),
    ("lance", "lance", "lancer"),
])
def test_staged_build_merge_commit_answers_as_one_build(pair, stager, merger, committer, tmp_path):
    ours, theirs = pair
    mods = {"lance": lance, "lancer": lancer}
    u = str(uuid.uuid4())
    # pylance's run of every step, the reference for the files each step leaves
    stage(lance, theirs, u)
    staged_theirs = index_files(theirs, u)
    merge(lance, theirs, u)
    merged_theirs = index_files(theirs, u)
    commit(lance, theirs, u)

    stage(mods[stager], ours, u)
    assert index_files(ours, u) == staged_theirs
    assert all(f.startswith("staging/part_") for f in staged_theirs)
    # a partition is named by the first fragment of its group: [2, 1] is part 2 << 32
    assert "staging/part_8589934592_metadata.lance" in staged_theirs
    merge(mods[merger], ours, u)
    assert index_files(ours, u) == merged_theirs
    ds = commit(mods[committer], ours, u)
    assert [i.name for i in ds.describe_indices()] == ["text_idx"]

    a, b = answers(ours), answers(theirs)
    assert a == b
    # both libraries' answers over the merged index are those of one build
    single = str(tmp_path / "single.lance")
    shutil.copytree(theirs, single)
    shutil.rmtree(os.path.join(single, "_indices"))
    want = expected(single)
    for (_, q), got in a.items():
        assert got == want[q], q


def test_lancer_uses_the_merged_index(pair):
    ours, _ = pair
    u = str(uuid.uuid4())
    stage(lancer, ours, u)
    merge(lancer, ours, u)
    ds = commit(lancer, ours, u)
    plan = ds.scanner(full_text_query="apple", columns=["id"]).explain_plan()
    assert "MatchQuery" in plan and "FlatMatchQuery" not in plan
    # pylance reads lancer's entry as an inverted index (its details filled in)
    kinds = {d.name: d.index_type for d in lance.dataset(ours).describe_indices()}
    assert kinds["text_idx"].lower() in ("inverted", "fts")


def test_restaging_a_group_replaces_its_partition(pair):
    ours, theirs = pair
    u = str(uuid.uuid4())
    for path, mod in ((ours, lancer), (theirs, lance)):
        stage(mod, path, u, [[0], [0], [1, 2, 3]])
        merge(mod, path, u)
        commit(mod, path, u)
    assert answers(ours) == answers(theirs)


def test_errors_as_pylance(pair):
    ours, theirs = pair
    got = {}
    for name, path, mod in (("lance", theirs, lance), ("lancer", ours, lancer)):
        ds = mod.dataset(path)
        errs = []

        def attempt(f):
            try:
                f()
                errs.append(None)
            except Exception as e:  # the type and the words users match
                errs.append((isinstance(e, ValueError), isinstance(e, NotImplementedError), str(e)))

        attempt(lambda: ds.create_scalar_index("id", "BTREE", fragment_ids=[0]))
        attempt(lambda: ds.create_scalar_index("id", "BITMAP", fragment_ids=[0]))
        attempt(lambda: ds.merge_index_metadata(str(uuid.uuid4()), "BTREE"))
        attempt(lambda: ds.merge_index_metadata(str(uuid.uuid4()), "IVF_PQ"))
        attempt(lambda: ds.merge_index_metadata(str(uuid.uuid4()), "BITMAP"))
        attempt(lambda: ds.merge_index_metadata(str(uuid.uuid4()), "INVERTED"))
        attempt(lambda: ds.create_scalar_index("text", "INVERTED", fragment_ids=[0], index_uuid="nope"))
        attempt(lambda: ds.create_scalar_index("text", "INVERTED", fragment_ids=[99], index_uuid=str(uuid.uuid4())))
        got[name] = errs
    for i, (theirs_e, ours_e) in enumerate(zip(got["lance"], got["lancer"])):
        assert (theirs_e is None) == (ours_e is None), (i, theirs_e, ours_e)
        assert theirs_e[:2] == ours_e[:2], (i, theirs_e, ours_e)
    # the words: the same sentence, or the part users match on
    for i in range(5):
        assert got["lancer"][i][2].split(",  /")[0].split(", /")[0] in got["lance"][i][2], i
    assert "No partition metadata files found in index directory" in got["lancer"][5][2]
    assert got["lancer"][6][2].startswith("Invalid UUID string for index_uuid")
    assert "99" in got["lancer"][7][2]
    # nothing was committed by any of it
    assert lancer.dataset(ours).describe_indices() == []


# create_index(fragment_ids=, index_uuid=) and index_file_version=, as pylance 14 takes them


@pytest.fixture(params=["2.0", "2.2"])
def vectors(request, tmp_path):
    import numpy as np

    n = 800
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.random.default_rng(3).random(n * 16).astype("float32")), 16)
    path = str(tmp_path / "v.lance")
    lance.write_dataset(pa.table({"id": list(range(n)), "v": vec}), path, max_rows_per_file=200,
                        data_storage_version=request.param)
    lance.dataset(path).delete("id % 7 = 1")
    a, b = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    shutil.copytree(path, a)
    shutil.copytree(path, b)
    return a, b


@pytest.mark.parametrize("kind,params", [("IVF_PQ", {"num_partitions": 2, "num_sub_vectors": 4}),
                                          ("IVF_FLAT", {"num_partitions": 2})])
def test_create_index_over_fragments_writes_an_uncommitted_segment(vectors, kind, params):
    ours, theirs = vectors
    u = str(uuid.uuid4())
    seen = []
    for path, mod in ((ours, lancer), (theirs, lance)):
        ds = mod.dataset(path)
        before = ds.version
        out = ds.create_index("v", kind, fragment_ids=[1, 2], index_uuid=u, **params)
        assert isinstance(out, mod.LanceDataset)
        after = mod.dataset(path)
        seen.append((after.version - before, [i.name for i in after.describe_indices()],
                     os.path.isdir(os.path.join(path, "_indices", u)),
                     bool(index_files(path, u))))
    assert seen[0] == seen[1] == (0, [], True, True)


@pytest.mark.parametrize("version", ["V3", "v3", "Legacy", "legacy", "bogus", "V2"])
def test_index_file_version_as_pylance_or_refused(vectors, version):
    ours, theirs = vectors
    outcome = {}
    for name, path, mod in (("lancer", ours, lancer), ("lance", theirs, lance)):
        try:
            mod.dataset(path).create_index("v", "IVF_FLAT", num_partitions=2, index_file_version=version)
            outcome[name] = [i.name for i in mod.dataset(path).describe_indices()]
        except NotImplementedError as e:
            outcome[name] = ("refused", str(e))
        except ValueError as e:
            outcome[name] = ("ValueError", str(e))
    if version.upper() == "LEGACY":
        # pylance writes the single-file layout; lancer says it does not, naming the value
        assert outcome["lance"] == ["v_idx"]
        assert outcome["lancer"][0] == "refused" and "Legacy" in outcome["lancer"][1]
        assert lancer.dataset(ours).describe_indices() == []
    elif version.upper() == "V3":
        assert outcome["lancer"] == outcome["lance"] == ["v_idx"]
    else:
        assert outcome["lance"][0] == outcome["lancer"][0] == "ValueError"
        assert f"Invalid index file version: {version}" in outcome["lancer"][1]
        assert f"Invalid index file version: {version}" in outcome["lance"][1]


def test_index_file_version_enum():
    from lance.indices import IndexFileVersion as Theirs
    from lancer.indices import IndexFileVersion as Ours

    assert [(m.name, m.value) for m in Ours] == [(m.name, m.value) for m in Theirs]
