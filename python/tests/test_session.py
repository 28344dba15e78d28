"""lancer.Session as pylance 14's lance.Session is used: passed to dataset() and
write_dataset(), returned by LanceDataset.session() (the same session for the versions
checked out from a dataset, another one for a separate open), memory:// datasets not
shared through it (each open starts empty, as pylance's); and what only lancer
reports: a second dataset opened in the session finds the index segments the first
one loaded."""

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer


@pytest.fixture
def indexed(tmp_path):
    n = 2000
    rng = np.random.default_rng(3)
    t = pa.table({"id": pa.array(np.arange(n)),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype("float32")), 8)})
    path = str(tmp_path / "d")
    ds = lance.write_dataset(t, path)
    ds.create_index("v", "IVF_FLAT", num_partitions=4)
    return path, rng.random(8).astype("float32")


def outcome(call):
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the kind is the answer
        # (pylance's is a ValueError; lancer's DatasetNotFoundError is one too)
        return ("error", isinstance(e, ValueError))


def test_sessions_are_shared_as_pylance_shares_them(indexed, tmp_path):
    path, q = indexed
    got = {}
    for lib in (lance, lancer):
        s = lib.Session()
        a = lib.dataset(path, session=s)
        steps = [a.session().is_same_as(s),
                 a.checkout_version(1).session().is_same_as(s),
                 lib.dataset(path, session=s).session().is_same_as(s),
                 lib.dataset(path).session().is_same_as(s),
                 a.to_table(nearest={"column": "v", "q": q, "k": 5}, columns=["id"])["id"].to_pylist()]
        mem = f"memory://session-{lib.__name__}"
        steps.append(outcome(lambda: lib.write_dataset(pa.table({"a": [1, 2]}), mem, session=s).count_rows()))
        steps.append(outcome(lambda: lib.dataset(mem, session=s).count_rows()))
        w = lib.write_dataset(pa.table({"a": [1, 2]}), str(tmp_path / lib.__name__), session=s)
        steps.append(w.session().is_same_as(s))
        got[lib.__name__] = steps
    assert got["lancer"] == got["lance"]


def test_a_second_open_in_the_session_uses_the_loaded_index(indexed):
    path, q = indexed
    s = lancer.Session()
    lancer.dataset(path, session=s).to_table(nearest={"column": "v", "q": q, "k": 5})
    before = s.cache_stats()["index"]
    lancer.dataset(path, session=s).to_table(nearest={"column": "v", "q": q, "k": 5})
    after = s.cache_stats()["index"]
    assert after["misses"] == before["misses"] and after["hits"] > before["hits"]
    # without the session: a cold cache
    t = lancer.Session()
    lancer.dataset(path, session=t).to_table(nearest={"column": "v", "q": q, "k": 5})
    assert t.cache_stats()["index"]["misses"] >= 1


def test_session_refusals():
    with pytest.raises(NotImplementedError, match="backend"):
        lancer.Session(index_cache_backend="moka://?capacity=1")
    with pytest.raises(NotImplementedError, match="entries"):
        lancer.Session().size_bytes()
    with pytest.raises(TypeError):
        lancer.dataset("memory://x", session="not a session")
    with pytest.raises(ValueError):
        lancer.Session(index_cache_entries=0)
    # byte capacities are accepted (tuning: lancer bounds its caches by entries)
    assert "Session(" in repr(lancer.Session(index_cache_size_bytes=1 << 20))
