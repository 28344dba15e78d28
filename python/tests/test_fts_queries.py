"""Structured full-text queries (``lancer.query``, pylance's ``lance.query``) and the
``{"columns": [...], "query": ...}`` form: the same rows and scores as pylance 14 on
one dataset pylance wrote, and the same refusals."""

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance.query as pq
import lancer
import lancer.query as lq

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "puppy"]


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    n = 400
    rng = np.random.default_rng(7)
    text = [" ".join(WORDS[(i * j + j) % 8] for j in range(1, 2 + i % 5)) for i in range(n)]
    t = pa.table(
        {
            "id": np.arange(n),
            "text": text,
            "title": [WORDS[i % 8] + " " + WORDS[(i // 8) % 8] for i in range(n)],
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype=np.float32)), 4),
        }
    )
    path = str(tmp_path_factory.mktemp("fts") / "ds")
    ds = lance.write_dataset(t, path, max_rows_per_file=150)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    ds.create_scalar_index("title", "INVERTED")
    return path


def rows(mod, uri, fts, **kw):
    t = mod.dataset(uri).to_table(full_text_query=fts, columns=["id"], limit=1000, **kw)
    return sorted(zip(t["id"].to_pylist(), [round(s, 4) for s in t["_score"].to_pylist()]))


def both(build):
    """The query built with pylance's classes and with lancer's."""
    return build(pq), build(lq)


CASES = {
    "match": lambda m: m.MatchQuery("apple banana", "text"),
    "match and": lambda m: m.MatchQuery("apple banana", "text", operator=m.FullTextOperator.AND),
    "match boost": lambda m: m.MatchQuery("cherry", "title", boost=2.5),
    "fuzzy": lambda m: m.MatchQuery("aple bananna", "text", fuzziness=1),
    "fuzzy 2 prefix": lambda m: m.MatchQuery("grap", "text", fuzziness=2, prefix_length=2),
    "fuzzy expansions": lambda m: m.MatchQuery("date", "text", fuzziness=2, max_expansions=2),
    "fuzziness None": lambda m: m.MatchQuery("aple", "text", fuzziness=None),
    "phrase": lambda m: m.PhraseQuery("banana cherry", "text"),
    "phrase slop": lambda m: m.PhraseQuery("apple cherry", "text", slop=2),
    "boost": lambda m: m.BoostQuery(m.MatchQuery("apple", "text"), m.MatchQuery("fig", "text"), negative_boost=0.3),
    "multi match": lambda m: m.MultiMatchQuery("apple fig", ["text", "title"]),
    "multi match boosts": lambda m: m.MultiMatchQuery("apple", ["text", "title"], boosts=[1.0, 3.0]),
    "boolean": lambda m: m.BooleanQuery(
        [(m.Occur.MUST, m.MatchQuery("apple", "text")), (m.Occur.MUST_NOT, m.MatchQuery("fig", "title")),
         (m.Occur.SHOULD, m.MatchQuery("grape", "title"))]
    ),
    "and operator": lambda m: m.MatchQuery("apple", "text") & m.MatchQuery("date", "title"),
    "or operator": lambda m: m.MatchQuery("apple", "text") | m.MatchQuery("puppy", "title"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_structured_queries_score_as_pylance(uri, case):
    py_q, lan_q = both(CASES[case])
    want = rows(lance, uri, py_q)
    got = rows(lancer, uri, lan_q)
    assert got == want
    assert want or case in ("match and", "fuzziness None"), "the case should match something"


@pytest.mark.parametrize("fts", [
    {"columns": ["text", "title"], "query": "apple"},
    {"columns": ["title"], "query": "fig"},
    {"query": "grape"},
    "grape fig",
    {"columns": ["text"], "query": '"banana cherry"'},
])
def test_dict_and_string_forms_as_pylance(uri, fts):
    assert rows(lancer, uri, fts) == rows(lance, uri, fts)


def test_a_phrase_without_a_column_over_several_indexes_is_refused_as_pylance(uri):
    for mod in (lance, lancer):
        with pytest.raises(ValueError, match="column"):
            rows(mod, uri, '"banana cherry"')


def test_filters_combine_with_structured_queries(uri):
    q = lambda m: m.MatchQuery("apple", "text")  # noqa: E731
    for prefilter in (True, False):
        kw = {"filter": "id < 200", "prefilter": prefilter}
        assert rows(lancer, uri, q(lq), **kw) == rows(lance, uri, q(pq), **kw)


def test_nearest_with_full_text_is_refused_as_pylance(uri):
    kw = {"nearest": {"column": "v", "q": [0.1, 0.2, 0.3, 0.4], "k": 5}, "full_text_query": "apple"}
    errors = []
    for mod in (lance, lancer):
        with pytest.raises(ValueError) as e:
            mod.dataset(uri).to_table(**kw)
        errors.append(str(e.value))
    assert "Cannot have both nearest and full text search" in errors[0]
    assert "Cannot have both nearest and full text search" in errors[1]


def test_what_lancer_cannot_search_is_refused_by_name(uri):
    with pytest.raises(NotImplementedError, match="CombinedFieldsQuery"):
        lq.CombinedFieldsQuery("apple", ["text", "title"])
    with pytest.raises(NotImplementedError, match="LIST_ELEMENT"):
        lq.MatchQuery("apple", "text", document_granularity=lq.DocumentGranularity.LIST_ELEMENT)
    # a pylance query object is named, with the lancer class to build instead
    with pytest.raises(TypeError, match="lancer.query.MatchQuery"):
        lancer.dataset(uri).to_table(full_text_query=pq.MatchQuery("apple", "text"))
    with pytest.raises(ValueError, match="unknown keys"):
        lancer.dataset(uri).to_table(full_text_query={"query": "apple", "column": "text"})


def test_bad_query_values_are_value_errors(uri):
    with pytest.raises(ValueError, match="fuzziness"):
        lq.MatchQuery("apple", "text", fuzziness=-1)
    with pytest.raises(ValueError, match="boosts"):
        lq.MultiMatchQuery("apple", ["text", "title"], boosts=[1.0])
    with pytest.raises(ValueError):
        lancer.dataset(uri).to_table(full_text_query=lq.MatchQuery("apple", "no_such_column"))


def test_explain_plan_names_the_index_a_search_uses(uri, tmp_path):
    """explain_plan of a search names the index (pylance names the vector index and the
    full-text column), says what it searches without it and how the filter applies;
    analyze_plan runs it."""
    import shutil

    path = str(tmp_path / "ds")
    shutil.copytree(uri, path)
    lancer.dataset(path).create_index("v", "IVF_FLAT", num_partitions=2, name="v_flat")
    fts = {"filter": "id < 100", "prefilter": True}
    plan = lancer.dataset(path).scanner(full_text_query=lq.MatchQuery("apple", "text"), **fts).explain_plan()
    assert "text_idx" in plan and '"text"' in plan and "id < 100" in plan and "before" in plan, plan
    assert "column=text" in lance.dataset(path).scanner(full_text_query=pq.MatchQuery("apple", "text"),
                                                         **fts).explain_plan()
    near = {"nearest": {"column": "v", "q": [0.1, 0.2, 0.3, 0.4], "k": 4}, "filter": "id < 100"}
    plan = lancer.dataset(path).scanner(**near).explain_plan()
    assert "v_flat" in plan and "to the 4 nearest" in plan, plan
    assert "v_flat" in lance.dataset(path).scanner(**near).explain_plan()
    lance.write_dataset(lance.dataset(path).to_table().slice(0, 5), path, mode="append")
    scanner = lancer.dataset(path).scanner(nearest=near["nearest"])
    plan = scanner.explain_plan()
    assert "unindexed: 1 fragment(s), 5 rows" in plan, plan
    analyzed = scanner.analyze_plan()
    assert analyzed.startswith(plan) and "ran: 4 rows" in analyzed and analyzed.endswith(" ms\n")
