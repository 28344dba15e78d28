"""Full-text indexes on ``list<string>`` columns (issue 61): each row's items are one
document, as pylance 14 indexes them — built by either engine (with and without
positions), searched by both; term, multi-term and phrase queries (phrases inside one
item and across two) answer with pylance's rows and scores. Shapes: null rows, empty
lists, null items, list / large_list of string / large_string, storage 2.0 and 2.2."""

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

N = 80


def rows():
    out = []
    for i in range(N):
        if i % 9 == 0:
            out.append(None)
        elif i % 11 == 0:
            out.append([])
        else:
            out.append([f"red apple {i % 4}", None if i % 5 == 0 else "green pear", f"blue sky w{i % 6}"])
    return out


@pytest.fixture(scope="module", params=[("2.0", pa.list_(pa.string())), ("2.2", pa.large_list(pa.string())),
                                        ("2.2", pa.list_(pa.large_string()))],
                ids=["2.0-list", "2.2-large_list", "2.2-large_string"])
def base(request, tmp_path_factory):
    version, t = request.param
    path = str(tmp_path_factory.mktemp("fts-lists") / "b.lance")
    table = pa.table({"id": list(range(N)), "tags": pa.array(rows(), t)})
    lance.write_dataset(table.slice(0, 50), path, data_storage_version=version)
    lance.write_dataset(table.slice(50), path, mode="append")
    lance.dataset(path).delete("id % 13 = 6")
    return path


QUERIES = ["apple", "pear sky", "w3", "red", '"red apple"', '"apple 2 green"', '"pear blue sky"']


@pytest.mark.parametrize("builder", ["lance", "lancer"])
@pytest.mark.parametrize("with_position", [False, True])
def test_a_list_column_is_indexed_and_searched_as_pylance(base, tmp_path, builder, with_position):
    path = str(tmp_path / "i.lance")
    shutil.copytree(base, path)
    lib = {"lance": lance, "lancer": lancer}[builder]
    lib.dataset(path).create_scalar_index("tags", "INVERTED", with_position=with_position)
    for q in QUERIES:
        outcome = {}
        for engine in (lance, lancer):
            try:
                t = engine.dataset(path).to_table(columns=["id"], full_text_query=q).sort_by("id")
                outcome[engine.__name__] = ("rows", t["id"].to_pylist(), np.round(t["_score"].to_numpy(), 4).tolist())
            except ValueError:
                outcome[engine.__name__] = ("error",)
        assert outcome["lancer"] == outcome["lance"], q
        if not q.startswith('"') or with_position:
            assert outcome["lance"][0] == "rows" and outcome["lance"][1], q


def test_a_list_column_without_an_index_is_searched_flat_as_pylance(base):
    for q in ["apple", "pear sky"]:
        outcome = {}
        for engine in (lance, lancer):
            t = engine.dataset(base).to_table(columns=["id"], full_text_query={"columns": ["tags"], "query": q})
            t = t.sort_by("id")
            outcome[engine.__name__] = (t["id"].to_pylist(), np.round(t["_score"].to_numpy(), 4).tolist())
        assert outcome["lancer"] == outcome["lance"] and outcome["lance"][0], q
