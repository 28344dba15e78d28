"""The 22 TPC-H queries through ``lancer.sql`` over pylance-written datasets equal
DuckDB's answers over the same rows as Parquet (issue 62).

The data is ``tpchgen-cli``'s at scale factor 0.1 (600,000 line items). pylance 14 writes
the eight tables in all three storage versions and with both string offset widths, the
two large ones in several fragments, and deletes rows from both; DuckDB reads the Parquet
files with the same rows filtered out. The queries are in ``tpch/`` (the specification's
text and validation parameters)."""

import datetime
import decimal
import math
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance
import lancer

QUERIES = sorted((Path(__file__).parent / "tpch").glob("q*.sql"))
TABLES = ["lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region"]
# Each table's storage version, string type and rows per file: every storage version and
# offset width is read, the large tables from several fragments.
LAYOUT = {
    "lineitem": ("2.2", pa.string(), 150_000),
    "orders": ("2.1", pa.large_string(), 40_000),
    "customer": ("2.0", pa.string(), 4_000),
    "part": ("2.2", pa.large_string(), 1_000_000),
    "partsupp": ("2.1", pa.string(), 30_000),
    "supplier": ("2.0", pa.large_string(), 1_000_000),
    "nation": ("2.2", pa.string(), 1_000_000),
    "region": ("2.1", pa.string(), 1_000_000),
}
# Rows deleted after the write (the same rows DuckDB's views leave out).
DELETED = {
    "lineitem": "l_orderkey % 53 = 7",
    "orders": "o_orderkey % 53 = 7",
    "partsupp": "ps_suppkey = 11",
}


def tpchgen() -> str:
    exe = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    if not Path(exe).exists():
        pytest.skip("tpchgen-cli is not installed (scripts/setup-python.sh installs it)")
    return exe


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpch")
    subprocess.run([tpchgen(), "parquet", "-s", "0.1", "-o", str(d / "parquet")], check=True)
    for name in TABLES:
        version, text, rows_per_file = LAYOUT[name]
        t = pq.read_table(d / "parquet" / f"{name}.parquet")
        t = t.cast(pa.schema([
            pa.field(f.name, text if pa.types.is_string_view(f.type) else f.type, f.nullable)
            for f in t.schema
        ]))
        ds = lance.write_dataset(t, str(d / f"{name}.lance"), data_storage_version=version,
                                 max_rows_per_file=rows_per_file)
        if name in DELETED:
            ds.delete(DELETED[name])
    return d


def duckdb_over_parquet(d: Path):
    con = duckdb.connect()
    for name in TABLES:
        keep = f" where not ({DELETED[name]})" if name in DELETED else ""
        con.execute(f"create view {name} as select * from read_parquet('{d / 'parquet' / name}.parquet'){keep}")
    return con


def normalized(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, datetime.datetime):
        return v.date()
    return v


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (a is not None and b is not None
                and math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6))
    return a == b


@pytest.fixture(scope="module")
def answers(tpch):
    con = duckdb_over_parquet(tpch)
    tables = {name: lancer.dataset(str(tpch / f"{name}.lance")) for name in TABLES}
    return con, tables


@pytest.mark.parametrize("query", QUERIES, ids=[q.stem for q in QUERIES])
def test_tpch_query_answers_as_duckdb(answers, query):
    con, tables = answers
    sql = query.read_text()
    want = con.execute(sql)
    want_names = [c[0] for c in want.description]
    want_rows = [tuple(normalized(v) for v in r) for r in want.fetchall()]
    got = lancer.sql(sql, tables=tables)
    assert got.column_names == want_names
    got_rows = [tuple(normalized(v) for v in r.values()) for r in got.to_pylist()]
    assert len(got_rows) == len(want_rows), f"{query.stem}: {len(got_rows)} rows, DuckDB {len(want_rows)}"
    assert want_rows, f"{query.stem}: DuckDB found no rows; the query tests nothing"
    for i, (g, w) in enumerate(zip(got_rows, want_rows)):
        assert len(g) == len(w) and all(same(x, y) for x, y in zip(g, w)), (
            f"{query.stem} row {i}: lancer {g} != DuckDB {w}")


def test_tpch_deletions_are_seen(tpch, answers):
    _, tables = answers
    n = lancer.sql("select count(*) as n from lineitem", tables=tables)["n"][0].as_py()
    assert n == lance.dataset(str(tpch / "lineitem.lance")).count_rows()
    total = pq.read_metadata(tpch / "parquet" / "lineitem.parquet").num_rows
    assert 0 < n < total
