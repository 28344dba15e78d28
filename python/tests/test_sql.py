"""SQL over datasets from Python (issue 62): ``LanceDataset.sql`` as pylance 14's
builder answers, ``lancer.sql`` with datasets and Parquet files beside them as DuckDB
answers, and searches inside SQL with pylance's rows."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance
import lancer


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sql")
    rng = np.random.default_rng(5)
    n = 300
    t = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "cat": [["a", "b", "c"][i % 3] for i in range(n)],
        "price": pa.array(np.round(rng.random(n) * 50, 2)),
        "text": [("apple " if i % 4 == 0 else "") + f"w{i % 7}" for i in range(n)],
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4, dtype="float32")), 4),
    })
    ds = lance.write_dataset(t, str(d / "items.lance"), max_rows_per_file=100)
    ds.create_scalar_index("text", "INVERTED")
    pq.write_table(t.drop_columns(["vec"]), str(d / "items.parquet"))
    return d


QUERIES = [
    "SELECT cat, count(*) AS n, sum(price) AS total FROM dataset WHERE price > 5 GROUP BY cat ORDER BY cat",
    "SELECT id, price FROM dataset WHERE id < 10 ORDER BY id",
    "SELECT count(*) AS n FROM dataset WHERE text LIKE 'apple%'",
]


def as_rows(batches):
    t = pa.Table.from_batches(batches) if batches else pa.table({})
    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in t.to_pylist()]


@pytest.mark.parametrize("q", QUERIES)
def test_dataset_sql_answers_as_pylance(data, q):
    path = str(data / "items.lance")
    theirs = lance.dataset(path).sql(q).build().to_batch_records()
    ours = lancer.dataset(path).sql(q).build().to_batch_records()
    assert as_rows(ours) == as_rows(theirs)


def test_dataset_sql_with_row_ids_and_a_table_name(data):
    path = str(data / "items.lance")
    q = "SELECT id, _rowid FROM items WHERE id < 3 ORDER BY id"
    theirs = lance.dataset(path).sql(q).table_name("items").with_row_id(True).build().to_batch_records()
    ours = lancer.dataset(path).sql(q).table_name("items").with_row_id(True).build().to_batch_records()
    assert as_rows(ours) == as_rows(theirs)
    reader = lancer.dataset(path).sql("SELECT id FROM dataset").build().to_stream_reader()
    assert reader.read_all().num_rows == 300


def test_lancer_sql_joins_datasets_and_files_as_duckdb(data, monkeypatch):
    monkeypatch.chdir(data)
    q = ("SELECT i.cat, count(*) AS n FROM 'items.lance' i JOIN 'items.parquet' p ON i.id = p.id "
         "WHERE p.price > 10 GROUP BY i.cat ORDER BY i.cat")
    ours = lancer.sql(q).to_pylist()
    want = duckdb.sql(q.replace("'items.lance'", "'items.parquet'")).fetchall()
    assert [(r["cat"], r["n"]) for r in ours] == want
    t = lancer.sql("SELECT count(*) AS n FROM items", tables={"items": lancer.dataset(str(data / "items.lance"))})
    assert t.to_pylist() == [{"n": 300}]


def test_searches_inside_sql_give_pylance_rows(data, monkeypatch):
    monkeypatch.chdir(data)
    ds = lance.dataset("items.lance")
    want = ds.to_table(nearest={"column": "vec", "q": [0.2, 0.4, 0.6, 0.8], "k": 4}, columns=["id"])["id"].to_pylist()
    got = lancer.sql("SELECT id FROM vector_search('items.lance', 'vec', [0.2, 0.4, 0.6, 0.8], k => 4)")
    assert got["id"].to_pylist() == want
    want = sorted(ds.to_table(full_text_query="apple", columns=["id"])["id"].to_pylist())
    got = lancer.sql("SELECT id FROM fts('items.lance', 'text', 'apple') ORDER BY id")
    assert got["id"].to_pylist() == want
    with pytest.raises(ValueError, match="no argument"):
        lancer.sql("SELECT * FROM fts('items.lance', 'text', 'apple', top => 3)")
