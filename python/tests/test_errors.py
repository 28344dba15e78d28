"""Everyday mistakes through pylance 14 and through lancer: each must fail in both and
change nothing, and lancer's exception must be an instance of the built-in kind pylance
raises (KeyError, TypeError, ValueError, NotImplementedError, FileNotFoundError,
OSError), so that an ``except`` written for pylance catches it. (lancer's input errors
are ``lancer.InvalidInputError``, both a ValueError and an OSError: pylance raises
either for the same kind of mistake, depending on the call.) Where lancer's kind cannot
be pylance's, the difference is listed in DIFFERENT with the reason, and checked too."""

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

KINDS = (KeyError, TypeError, NotImplementedError, FileNotFoundError, ValueError, OSError)


def raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception is the answer
        return e
    return None


def kind(e):
    """The most specific built-in kind of `e` among KINDS."""
    return next((k for k in KINDS if isinstance(e, k)), type(e))


def data(n=40):
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([f"w{i % 7}" for i in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype=np.float32)), 4),
    })


MISTAKES = [
    ("open a missing dataset", lambda lib, p: lib.dataset(p + "-nothing")),
    ("unknown column", lambda lib, p: lib.dataset(p).to_table(columns=["nope"])),
    ("filter on an unknown column", lambda lib, p: lib.dataset(p).to_table(filter="nope > 1")),
    ("filter that does not parse", lambda lib, p: lib.dataset(p).to_table(filter="id >")),
    ("count with a bad filter", lambda lib, p: lib.dataset(p).count_rows(filter="id >")),
    ("take past the end", lambda lib, p: lib.dataset(p).take([10**6])),
    ("take a negative index", lambda lib, p: lib.dataset(p).take([-1])),
    ("create over an existing dataset", lambda lib, p: lib.write_dataset(data(), p, mode="create")),
    ("an unknown write mode", lambda lib, p: lib.write_dataset(data(), p, mode="upsert")),
    ("append a column the dataset lacks", lambda lib, p: lib.write_dataset(
        data().append_column("extra", pa.array(range(40))), p, mode="append")),
    ("append a column of another type", lambda lib, p: lib.write_dataset(
        data().set_column(1, "s", pa.array(range(40))), p, mode="append")),
    ("delete with an unknown column", lambda lib, p: lib.dataset(p).delete("nope = 1")),
    ("update an unknown column", lambda lib, p: lib.dataset(p).update({"nope": "1"})),
    ("add a column that exists", lambda lib, p: lib.dataset(p).add_columns({"id": "1"})),
    ("drop an unknown column", lambda lib, p: lib.dataset(p).drop_columns(["nope"])),
    ("alter an unknown column", lambda lib, p: lib.dataset(p).alter_columns({"path": "nope", "name": "x"})),
    ("scalar index on an unknown column", lambda lib, p: lib.dataset(p).create_scalar_index("nope", "BTREE")),
    ("an unknown index type", lambda lib, p: lib.dataset(p).create_scalar_index("id", "NOPE")),
    ("vector index on an unknown column", lambda lib, p: lib.dataset(p).create_index(
        "nope", "IVF_PQ", num_partitions=2, num_sub_vectors=2)),
    ("statistics of an unknown index", lambda lib, p: lib.dataset(p).index_statistics("nope")),
    ("check out a version that does not exist", lambda lib, p: lib.dataset(p).checkout_version(999)),
    ("open a version that does not exist", lambda lib, p: lib.dataset(p, version=999)),
    ("tag a version that does not exist", lambda lib, p: lib.dataset(p).tags.create("t", 999)),
    ("delete an unknown tag", lambda lib, p: lib.dataset(p).tags.delete("nope")),
    ("merge_insert on an unknown key", lambda lib, p: lib.dataset(p).merge_insert("nope")
        .when_matched_update_all().execute(data(3))),
    ("nearest on a string column", lambda lib, p: lib.dataset(p).to_table(
        nearest={"column": "s", "q": [1.0, 2.0, 3.0, 4.0], "k": 3})),
    ("nearest with a query of the wrong width", lambda lib, p: lib.dataset(p).to_table(
        nearest={"column": "v", "q": [1.0, 2.0], "k": 3})),
    ("full-text search without an index", lambda lib, p: lib.dataset(p).to_table(full_text_query="w1")),
    ("a config value that is not text", lambda lib, p: lib.dataset(p).update_config({"a": 1})),
    ("metadata of an unknown field", lambda lib, p: lib.dataset(p).update_field_metadata({"nope": {"a": "b"}})),
    ("an unexpected keyword", lambda lib, p: lib.dataset(p).to_table(no_such_argument=1)),
]

# mistake: (pylance's kind, lancer's kind, why lancer's differs)
DIFFERENT = {
    "take a negative index": (OverflowError, ValueError,
                              "pylance's is its argument conversion to an unsigned integer overflowing; "
                              "lancer names the bad index, a ValueError"),
}


@pytest.mark.parametrize("label,call", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistakes_fail_alike(tmp_path, label, call):
    got = {}
    for lib in (lance, lancer):
        p = str(tmp_path / lib.__name__)
        lance.write_dataset(data(), p, max_rows_per_file=15)
        before = lance.dataset(p).version
        got[lib.__name__] = raised(lambda: call(lib, p))
        assert lance.dataset(p).version == before, f"{label}: {lib.__name__} committed a version"
    assert got["lance"] is not None, f"pylance accepts: {label}"
    assert got["lancer"] is not None, f"lancer accepts: {label}"
    if label in DIFFERENT:
        want_lance, want_lancer, _why = DIFFERENT[label]
        assert kind(got["lance"]) is want_lance and isinstance(got["lancer"], want_lancer), label
    else:
        assert isinstance(got["lancer"], kind(got["lance"])), \
            f"{label}: pylance {type(got['lance']).__name__}, lancer {type(got['lancer']).__name__}: {got['lancer']}"


# The words users match on in pylance's messages, which lancer's carry too (with its
# own remedy after them).
WORDED = [
    ("alter a column to another kind",
     lambda lib, p: lib.dataset(p).alter_columns({"path": "id", "data_type": pa.string()}),
     'Invalid user input: Cannot cast column "id" from Int64 to Utf8'),
    ("a query vector of the wrong width",
     lambda lib, p: lib.dataset(p).to_table(nearest={"column": "v", "q": [1.0, 2.0, 3.0], "k": 3}),
     "Query vector size 3 does not match index column size 4"),
    ("a query vector of the wrong width through an index",
     lambda lib, p: (lib.dataset(p).create_index("v", "IVF_FLAT", num_partitions=1, replace=True),
                     lib.dataset(p).to_table(nearest={"column": "v", "q": [1.0, 2.0], "k": 3})),
     "Query vector size 2 does not match index column size 4"),
    ("k of zero", lambda lib, p: lib.dataset(p).to_table(nearest={"column": "v", "q": [1.0] * 4, "k": 0}),
     "Nearest-K must be > 0 but got 0"),
    ("a filter naming an unknown column", lambda lib, p: lib.dataset(p).to_table(filter="nope > 1"),
     "No field named nope"),
]


@pytest.mark.parametrize("what,call,words", WORDED, ids=[w[0] for w in WORDED])
def test_messages_carry_the_words_pylance_users_match(tmp_path, what, call, words):
    for lib in (lance, lancer):
        p = str(tmp_path / f"{lib.__name__}.lance")
        lance.write_dataset(data(), p)
        e = raised(lambda: call(lib, p))
        assert e is not None and words in str(e), (lib.__name__, what, e)
    assert kind(raised(lambda: call(lancer, str(tmp_path / "lancer.lance")))) in (
        ValueError, OSError, kind(raised(lambda: call(lance, str(tmp_path / "lance.lance")))))


def test_a_multivector_query_of_three_dimensions_is_a_value_error(tmp_path):
    p = str(tmp_path / "mv.lance")
    lance.write_dataset(pa.table({"mv": pa.array([[[1.0, 2.0], [3.0, 4.0]]] * 4,
                                                 pa.list_(pa.list_(pa.float32(), 2)))}), p)
    for lib in (lance, lancer):
        with pytest.raises(ValueError):
            lib.dataset(p).to_table(nearest={"column": "mv", "q": np.zeros((2, 2, 2)), "k": 3})
