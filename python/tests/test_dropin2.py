"""Drop-in II (issue 61): what pylance 14's users get, compared call by call on the same
data — answers, batch sizes, listings and the errors users match on."""

import pyarrow as pa
import pytest

import lance
import lancer

I64_MIN = -9223372036854775808


@pytest.fixture(scope="module")
def int_lists(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lists") / "d.lance")
    t = pa.table(
        {
            "i": pa.array([1, I64_MIN, 5, None], pa.int64()),
            "c": pa.array([[1, I64_MIN], [2], [], None], pa.list_(pa.int64())),
        }
    )
    lance.write_dataset(t, path)
    return path


def outcome(ds, f):
    try:
        return ("rows", ds.to_table(filter=f)["i"].to_pylist())
    except Exception as e:  # the kind of error is compared, not its text
        return ("error", type(e).__name__)


@pytest.mark.parametrize(
    "f",
    [
        "array_has_any(c, [-7723816229517990228, -9223372036854775808])",
        "array_has_all(c, [-9223372036854775808])",
        "array_contains(c, -9223372036854775808)",
        "array_has_any(c, [2, -9223372036854775808, 7])",
        "array_has_any(c, [1, 2.5])",
        "i > -9223372036854775808",
        "i = -9223372036854775808",
        "i IN (-9223372036854775808, 5)",
        "i BETWEEN -9223372036854775808 AND 1",
        "i > -9223372036854775807",
    ],
)
def test_signed_range_edge_literals_answer_as_pylance(int_lists, f):
    # -9223372036854775808 is the negation of a number past the signed range: pylance
    # reads it as a float, refuses it against an integer column and compares lists of
    # mixed items in their common type; never a crash
    assert outcome(lancer.dataset(int_lists), f) == outcome(lance.dataset(int_lists), f)


def batch_rows(ds, **kw):
    return [b.num_rows for b in ds.to_batches(**kw)]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("small") / "d.lance")
    lance.write_dataset(pa.table({"a": list(range(100))}), path, max_rows_per_file=40)
    return path


def test_default_batch_size_comes_from_the_environment_as_pylance(small, monkeypatch):
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    for kw in ({}, {"filter": "a % 2 = 0"}, {"batch_size": 30}):
        assert batch_rows(lancer.dataset(small), **kw) == batch_rows(lance.dataset(small), **kw), kw
    frag = lambda lib: [b.num_rows for b in lib.dataset(small).get_fragments()[0].to_batches()]
    assert frag(lancer) == frag(lance) == [12, 12, 12, 4]


def test_a_default_batch_size_that_is_no_number_warns_and_keeps_the_default(small, monkeypatch):
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "abc")
    with pytest.warns(UserWarning, match="LANCE_DEFAULT_BATCH_SIZE"):
        got = batch_rows(lancer.dataset(small))
    assert got == batch_rows(lance.dataset(small))
