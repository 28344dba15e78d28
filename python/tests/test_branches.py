"""Branches (issue 41): create_branch from a version, a tag and another branch, appends,
deletes and updates on a branch, reads of main and the branches, branches.list /
list_ordered / delete, checkout_version((branch, version)) — each history run with pylance
14 and with lancer in every mix of who builds the dataset, who creates the branches and
who writes to them, on storage versions 2.1 and 2.2 with several fragments and
deletions; every engine then reads every result. The first manifest of a branch is
compared field by field (decoded from its bytes) between the two writers."""

import os
import struct

import pyarrow as pa
import pytest

import lance
import lancer

LIBS = {"pylance": lance, "lancer": lancer}


def outcome(call):
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the error's type is the answer
        kinds = (TypeError, NotImplementedError, ValueError, OSError)
        return ("error", [k.__name__ for k in kinds if isinstance(e, k)])


# --- a protobuf reader for the structural comparison (no dependency) -------------------
def _varint(b, i):
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        out.append((num, v))
    return out


def _get(fs, num, default=None):
    return next((v for n, v in fs if n == num), default)


def manifest_view(path, root):
    """What a branch's manifest says about where its files live."""
    b = open(path, "rb").read()
    pos, = struct.unpack("<Q", b[-16:-8])
    n, = struct.unpack("<I", b[pos:pos + 4])
    m = _fields(b[pos + 4:pos + 4 + n])
    frags = []
    for num, v in m:
        if num == 2:
            f = _fields(v)
            files = [_get(_fields(d), 7) for n2, d in f if n2 == 2]
            dele = _get(f, 3)
            frags.append((_get(f, 1, 0), files, None if dele is None else _get(_fields(dele), 7)))
    bases = sorted(
        (_get(_fields(v), 1, 0), (_get(_fields(v), 2) or b"").decode() or None, _get(_fields(v), 3, 0),
         os.path.relpath(_get(_fields(v), 4).decode(), root))
        for num, v in m if num == 18)
    indices = []
    sec = _get(m, 6)
    if sec is not None:
        ln, = struct.unpack("<I", b[sec:sec + 4])
        indices = [(_get(_fields(x), 3).decode(), _get(_fields(x), 9)) for _, x in _fields(b[sec + 4:sec + 4 + ln])]
    return {
        "version": _get(m, 3, 0),
        "branch": (_get(m, 20) or b"").decode(),
        "reader_flags": _get(m, 9, 0),
        "writer_flags": _get(m, 10, 0),
        "max_fragment_id": _get(m, 11),
        "fragments": frags,
        "base_paths": bases,
        "indices": indices,
        "transaction_file": _get(m, 12).decode().split("-")[0],
    }


def clone_txn(branch_dir, root):
    """The Clone operation (113) of a branch's first version."""
    tdir = os.path.join(branch_dir, "_transactions")
    for name in os.listdir(tdir):
        t = _fields(open(os.path.join(tdir, name), "rb").read())
        op = _get(t, 113)
        if op is not None:
            f = _fields(op)
            return {"read_version": _get(t, 1), "is_shallow": _get(f, 1, 0), "ref_name": (_get(f, 2) or b"").decode(),
                    "ref_version": _get(f, 3), "ref_path": os.path.relpath(_get(f, 4).decode(), root),
                    "branch_name": _get(f, 5).decode()}
    return None


def first_manifest(branch_dir):
    vdir = os.path.join(branch_dir, "_versions")
    names = sorted(n for n in os.listdir(vdir) if n.endswith(".manifest"))
    return os.path.join(vdir, names[-1])  # v2 naming: the oldest sorts last


# --- the history -----------------------------------------------------------------------
def build(lib, path, storage):
    t = pa.table({"id": pa.array(range(40), pa.int64()), "s": pa.array([f"r{i}" for i in range(40)])})
    ds = lib.write_dataset(t, path, max_rows_per_file=10, data_storage_version=storage)  # v1
    ds.delete("id % 7 = 0")  # v2
    ds.tags.create("t2", 2)
    ds = lib.write_dataset(pa.table({"id": pa.array([100, 101], pa.int64()), "s": ["a", "b"]}), path,
                           mode="append")  # v3
    ds.create_scalar_index("id", "BTREE")  # v4
    return lib.dataset(path)


def normalized(branches):
    return {n: {"parent_branch": b["parent_branch"], "parent_version": b["parent_version"],
                "lineage": [v for v, _ in b["branch_identifier"]],
                "ids": len({i for _, i in b["branch_identifier"]}), "metadata": b["metadata"]}
            for n, b in branches.items()}


def ids(ds, **kw):
    return sorted(ds.to_table(columns=["id"], **kw)["id"].to_pylist())


def history(tmp_path, builder, brancher, writer, storage):
    root = str(tmp_path / f"{builder}-{brancher}-{writer}")
    build(LIBS[builder], root, storage)
    B, W = LIBS[brancher], LIBS[writer]
    main = B.dataset(root)
    out = {}
    a = main.create_branch("feat/a", 2)
    out["a created"] = (a.version, a.count_rows(), os.path.realpath(a.uri) == os.path.realpath(root + "/tree/feat/a"))
    main.create_branch("fromtag", "t2")
    main.create_branch("latest")  # this version of main
    wa = W.dataset(root + "/tree/feat/a")
    W.write_dataset(pa.table({"id": pa.array([200, 201], pa.int64()), "s": ["x", "y"]}), wa.uri, mode="append")
    wa = W.dataset(root + "/tree/feat/a")
    wa.delete("id = 11 or id = 200")
    wa = W.dataset(root + "/tree/feat/a")
    wa.update({"s": "'upd'"}, where="id = 12")
    wa = W.dataset(root + "/tree/feat/a")
    out["a after writes"] = (wa.version, ids(wa))
    nested = B.dataset(root).create_branch("feat/a/nested", ("feat/a", None))
    out["nested"] = (nested.version, ids(nested))
    W.dataset(root + "/tree/feat/a/nested").delete("id = 201")
    # main is untouched by all of it
    for name, lib in LIBS.items():
        m = lib.dataset(root)
        out[f"main via {name}"] = (m.version, ids(m), ids(m, filter="id < 20"))
        for br in ("feat/a", "fromtag", "latest", "feat/a/nested"):
            d = lib.dataset(root + "/tree/" + br)
            out[f"{br} via {name}"] = (d.version, ids(d), ids(d, filter="id >= 12"),
                                       d.to_table(filter="id = 12")["s"].to_pylist())
        out[f"list via {name}"] = normalized(m.branches.list())
        out[f"ordered via {name}"] = [n for n, _ in m.branches.list_ordered()]
        out[f"ordered asc via {name}"] = [n for n, _ in m.branches.list_ordered("asc")]
        out[f"checkout via {name}"] = [
            (d.version, d.count_rows()) for d in (
                m.checkout_version(("feat/a", 2)), m.checkout_version(("feat/a", None)),
                m.checkout_version(("main", 1)), m.checkout_version((None, None)),
                lib.dataset(root + "/tree/fromtag").checkout_version(("main", 3)))]
        out[f"version_refs via {name}"] = lib.dataset(root + "/tree/feat/a").version_refs()
        out[f"refused via {name}"] = [
            outcome(lambda: m.create_branch("fromtag")),
            outcome(lambda: m.create_branch("x", 99)),
            outcome(lambda: m.create_branch("y", "nosuchtag")),
            outcome(lambda: m.branches.delete("feat/a")),  # nested was made from it
            outcome(lambda: m.branches.delete("nosuch")),
        ]
    sizes = {br: lance.dataset(root).branches.list()[br]["manifest_size"] for br in ("feat/a", "fromtag")}
    out["manifest sizes are the sources'"] = sizes == {
        "feat/a": os.path.getsize(first_manifest_of_version(root, 2)),
        "fromtag": os.path.getsize(first_manifest_of_version(root, 2))}
    # delete: the branch's directory goes, the parent's files stay
    B.dataset(root).branches.delete("fromtag")
    B.dataset(root).branches.delete("feat/a/nested")
    out["after delete"] = (sorted(os.listdir(root + "/tree")), sorted(os.listdir(root + "/tree/feat/a")),
                           sorted(lance.dataset(root).branches.list()), ids(lance.dataset(root)),
                           ids(lancer.dataset(root + "/tree/feat/a")))
    return out


def first_manifest_of_version(root, v):
    return os.path.join(root, "_versions", f"{2**64 - 1 - v:020d}.manifest")


@pytest.mark.parametrize("storage", ["2.1", "2.2"])
@pytest.mark.parametrize("who", [("lancer", "lancer", "lancer"), ("pylance", "pylance", "lancer"),
                                 ("pylance", "lancer", "pylance"), ("lancer", "pylance", "lancer"),
                                 ("lancer", "lancer", "pylance")])
def test_branch_history_matches_pylance(tmp_path, storage, who):
    want = history(tmp_path, "pylance", "pylance", "pylance", storage)
    got = history(tmp_path, *who, storage)
    assert want["main via pylance"][1] == [i for i in list(range(40)) + [100, 101] if i % 7]
    assert got == want
    # lancer's refusals are of pylance's kinds (invalid requests also ValueErrors)
    for mine, theirs in zip(got["refused via lancer"], want["refused via pylance"], strict=True):
        assert mine[0] == theirs[0] == "error" and set(theirs[1]) <= set(mine[1]), (mine, theirs)


@pytest.mark.parametrize("storage", ["2.1", "2.2"])
def test_first_manifest_is_pylances_clone(tmp_path, storage):
    views = {}
    for name, lib in LIBS.items():
        root = str(tmp_path / name)
        build(lance, root, storage)
        a = lib.dataset(root).create_branch("feat/a", 2)
        lib.dataset(root).create_branch("full")  # from version 4: with the index
        lance.write_dataset(pa.table({"id": pa.array([7], pa.int64()), "s": ["z"]}), a.uri, mode="append")
        n = lib.dataset(root).create_branch("n", ("feat/a", None))
        views[name] = {
            br: (manifest_view(first_manifest(os.path.join(root, "tree", br)), root),
                 clone_txn(os.path.join(root, "tree", br), root))
            for br in ("feat/a", "full", "n")}
        views[name]["files"] = sorted(os.listdir(os.path.join(root, "_refs", "branches")))
        assert n.count_rows() == a.count_rows() + 1
    assert views["lancer"] == views["pylance"]
    full = views["pylance"]["full"][0]
    assert full["indices"] == [("id_idx", 0)] and full["reader_flags"] & 16


def test_branch_names_and_arguments(tmp_path):
    got = {}
    for name, lib in LIBS.items():
        root = str(tmp_path / name)
        ds = build(lib, root, "2.1")
        got[name] = [outcome(lambda b=b: ds.create_branch(b).version) for b in
                     ["", "/a", "a/", "a//b", "a..b", "a\\b", "a b", "x.lock", "main", "ok/y", "é", "a:b", "-x"]]
        got[name].append(sorted(os.listdir(os.path.join(root, "_refs", "branches"))))
        for bad in (1.5, [None, None], ("a", 1, 2), ("latest", "1"), (1, 1)):
            got[name].append(outcome(lambda bad=bad: ds.create_branch("t", bad)))
        got[name].append(outcome(lambda: ds.branches.delete("a//b")))
        ds.branches.replace_metadata("ok/y", {"k": "v"})
        got[name].append(ds.branches.list()["ok/y"]["metadata"])
        other = LIBS["pylance" if name == "lancer" else "lancer"]
        got[name].append(other.dataset(root).branches.list()["ok/y"]["metadata"])
        got[name].append(ids(other.dataset(root + "/tree/é")))
    # lancer's errors are of pylance's type (OSError), invalid names also a ValueError
    assert len(got["lancer"]) == len(got["pylance"])
    for mine, theirs in zip(got["lancer"], got["pylance"]):
        if isinstance(theirs, tuple) and theirs[0] == "error":
            assert mine[0] == "error" and set(theirs[1]) <= set(mine[1]), (mine, theirs)
        else:
            assert mine == theirs
    # an invalid name is a ValueError naming the rule, and an OSError as pylance raises
    for kind in (ValueError, OSError):
        with pytest.raises(kind, match="'.lock'"):
            lancer.dataset(str(tmp_path / "lancer")).create_branch("x.lock")
    with pytest.raises(NotImplementedError, match="tags"):
        lancer.dataset(str(tmp_path / "lancer" / "tree" / "ok" / "y")).tags.create("bt", 1)
    with pytest.raises(NotImplementedError, match="storage_options"):
        lancer.dataset(str(tmp_path / "lancer")).create_branch("so", storage_options={"a": "b"})


def test_cleanup_keeps_what_branches_use(tmp_path):
    import datetime

    got = {}
    for name, lib in LIBS.items():
        root = str(tmp_path / name)
        build(lance, root, "2.2")
        b = lib.dataset(root).create_branch("b", 2)
        lib.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "s": ["o"]}), root, mode="overwrite")
        main = lib.dataset(root)
        st = main.cleanup_old_versions(older_than=datetime.timedelta(microseconds=1), delete_unverified=True,
                                       error_if_tagged_old_versions=False)
        bst = lib.dataset(b.uri).cleanup_old_versions(
            older_than=datetime.timedelta(microseconds=1), delete_unverified=True,
            error_if_tagged_old_versions=False)
        got[name] = (st.old_versions, st.data_files_removed, bst.data_files_removed,
                     [v["version"] for v in lance.dataset(root).versions()],
                     ids(lance.dataset(b.uri)), ids(lancer.dataset(b.uri)))
    assert got["lancer"] == got["pylance"]
