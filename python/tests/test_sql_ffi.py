"""A dataset registered in DataFusion-Python (``datafusion`` 55 from PyPI) through
``lancer.FFILanceTableProvider`` — or the dataset itself — answers as pylance 14's
``FFILanceTableProvider`` does in DataFusion-Python 54 (the version pylance 14's is built
for; ``.venv/df54``), on the same pylance-written dataset: several fragments, deleted rows,
a scalar index, nulls, ``_rowid`` / ``_rowaddr`` (issue 62)."""

import subprocess
from pathlib import Path

import datafusion
import numpy as np
import pyarrow as pa
import pytest

import lance
import lancer

DF54 = Path(__file__).resolve().parents[2] / ".venv" / "df54" / "bin" / "python"

QUERIES = [
    "SELECT id, name, price FROM items WHERE id < 12 ORDER BY id",
    "SELECT cat, count(*) AS n, sum(price) AS total, min(name) AS first FROM items GROUP BY cat ORDER BY cat",
    "SELECT count(*) AS n FROM items WHERE name LIKE 'n1%' AND price IS NOT NULL",
    "SELECT id, _rowid, _rowaddr FROM items WHERE cat = 'b' ORDER BY id LIMIT 7",
    "SELECT i.id, o.qty FROM items i JOIN orders o ON i.id = o.item ORDER BY i.id, o.qty",
    "SELECT cat, avg(price) OVER (PARTITION BY cat) AS mean, id FROM items WHERE id % 50 = 0 ORDER BY id",
    "SELECT id FROM items WHERE price IS NULL ORDER BY id",
    "SELECT count(*) AS n FROM items",
]

PYLANCE_SIDE = r'''
import sys, datafusion, lance, pyarrow as pa
from lance import FFILanceTableProvider
items, orders, out = sys.argv[1:4]
queries = sys.stdin.read().split("\n;;\n")
ctx = datafusion.SessionContext()
ctx.register_table("items", FFILanceTableProvider(lance.dataset(items), with_row_id=True, with_row_addr=True))
ctx.register_table("orders", FFILanceTableProvider(lance.dataset(orders)))
for i, q in enumerate(queries):
    t = ctx.sql(q).to_arrow_table()
    with pa.OSFile(f"{out}/{i}.arrow", "wb") as f, pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)
'''


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("sqlffi")
    rng = np.random.default_rng(17)
    n = 1_000
    price = np.round(rng.random(n) * 100, 2).tolist()
    for i in range(0, n, 37):
        price[i] = None
    items = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "name": [f"n{i % 97}" for i in range(n)],
        "cat": [["a", "b", "c", "d"][i % 4] for i in range(n)],
        "price": pa.array(price, pa.float64()),
    })
    ds = lance.write_dataset(items, str(d / "items.lance"), max_rows_per_file=300)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 11 = 3")
    orders = pa.table({"item": pa.array(rng.integers(0, n, 200), pa.int64()),
                       "qty": pa.array(rng.integers(1, 9, 200), pa.int32())})
    lance.write_dataset(orders, str(d / "orders.lance"), data_storage_version="2.2")
    return d


def pylance_answers(d: Path):
    if not DF54.exists():
        pytest.skip("scripts/setup-python.sh installs .venv/df54 (pylance 14 with DataFusion-Python 54)")
    out = d / "pylance-answers"
    out.mkdir(exist_ok=True)
    subprocess.run([str(DF54), "-c", PYLANCE_SIDE, str(d / "items.lance"), str(d / "orders.lance"), str(out)],
                   input="\n;;\n".join(QUERIES), text=True, check=True)
    return [pa.ipc.open_file(str(out / f"{i}.arrow")).read_all() for i in range(len(QUERIES))]


def rows(t: pa.Table):
    return [{k: (round(v, 9) if isinstance(v, float) else v) for k, v in r.items()} for r in t.to_pylist()]


def test_the_provider_answers_as_pylances_in_datafusion_python(data):
    want = pylance_answers(data)
    ctx = datafusion.SessionContext()
    ctx.register_table("items", lancer.FFILanceTableProvider(
        lancer.dataset(str(data / "items.lance")), with_row_id=True, with_row_addr=True))
    ctx.register_table("orders", lancer.FFILanceTableProvider(lancer.dataset(str(data / "orders.lance"))))
    for q, theirs in zip(QUERIES, want):
        ours = ctx.sql(q).to_arrow_table()
        assert ours.column_names == theirs.column_names, q
        assert rows(ours) == rows(theirs), q
        assert ours.num_rows > 0, q


def test_a_dataset_registers_itself_and_filters_go_down(data):
    ctx = datafusion.SessionContext()
    ds = lancer.dataset(str(data / "items.lance"))
    ctx.register_table("items", ds)
    got = ctx.sql("SELECT count(*) AS n FROM items WHERE id BETWEEN 100 AND 199").to_arrow_table()
    assert got["n"].to_pylist() == [lance.dataset(str(data / "items.lance")).count_rows("id BETWEEN 100 AND 199")]
    plan = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN SELECT id FROM items WHERE id < 5").to_arrow_table().to_pylist())
    # the scan runs in lancer (through the FFI boundary) and no filter is left above it
    assert "LanceScanExec" in plan and "FilterExec" not in plan, plan
    # a provider made for another version reads that version
    old = lancer.FFILanceTableProvider(ds.checkout_version(1))
    ctx.register_table("first", old)
    assert ctx.sql("SELECT count(*) AS n FROM first").to_arrow_table()["n"].to_pylist() == [1_000]


def test_a_wrong_argument_is_named():
    with pytest.raises(TypeError, match="LanceDataset"):
        lancer.FFILanceTableProvider("items.lance")
    with pytest.raises(TypeError):
        lancer.FFILanceTableProvider(None, True)
