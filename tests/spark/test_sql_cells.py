"""The SQL-cell surfaces (docs/semantics.md, "SQL cells"): ``cerql(TABLE(t), 'query')`` and ``%%ceql``.

The table function's rows are compared with ``cerql.run(engine="local")`` on the same generated
stream, as multisets of every column except match_id: the function has no row ordinal of the
source (Spark hands it rows, not their position in a file), so it numbers rows by their position
in the sorted partition, while the local engine uses the row index; both are unique, they are just
different numbers. The stream has several partition keys, unique ordering values (ties are tested
on their own), and a few NULL keys and NULL ordering values, which take part in no match.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import cerql
from tests.spark.compare import canonical_rows, local_records, spark_records

pytestmark = pytest.mark.spark

N = 240
UDTF_CALL = "SELECT * FROM cerql(TABLE(stock), :q)"


def _stream(n: int = N, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    name = rng.choice(["AAPL", "MSFT", "AMZN", "GOOG"], n).astype(object)
    name[rng.random(n) < 0.03] = None                    # NULL keys take part in no match
    ts = pd.array(np.arange(n) * 10 + 5, dtype="Int64")  # unique: no ties
    ts[rng.random(n) < 0.03] = pd.NA                     # nor do NULL ordering values
    base = dt.datetime(2024, 3, 1, 9, 30)
    return pd.DataFrame({
        "name": name,
        "ts": ts,
        "type": rng.choice(["BUY", "SELL"], n, p=[0.6, 0.4]),
        "price": np.round(rng.uniform(10, 20, n), 1),
        "t": [base + dt.timedelta(seconds=7 * i) for i in range(n)],
    })


@pytest.fixture(scope="module")
def stock():
    return _stream()


@pytest.fixture(scope="module")
def classic(spark, stock):
    """The classic session with the function registered and ``stock`` as a temp view."""
    cerql.register(spark)
    spark.createDataFrame(stock).createOrReplaceTempView("stock")
    return spark


def same_rows(df, local: pd.DataFrame) -> None:
    assert list(df.columns) == list(local.columns)
    assert canonical_rows(spark_records(df)) == canonical_rows(local_records(local))


QUERIES = [
    "SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] ORDER BY ts WITHIN 4 EVENTS",
    "SELECT * FROM stock WHERE SELL AS s : BUY AS b FILTER b[price > 12] ORDER BY ts",
    "SELECT s, b.price - s.price AS gain, b.t AS bought FROM stock WHERE SELL AS s ; BUY AS b "
    "PARTITION BY [name] ORDER BY t WITHIN 1 MINUTE",
    "SELECT MAX s[price, ts], b[price] FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] "
    "ORDER BY ts WITHIN 30 [ts]",
    # a predicate across variables (the task holds each substream) and aggregates
    "SELECT s[ts], b[ts] FROM stock WHERE SELL AS s ; BUY AS b FILTER b.price > s.price PARTITION BY [name] "
    "ORDER BY ts WITHIN 5 EVENTS",
    "SELECT count(b) AS n, sum(b.price) AS v, avg(b.price) AS m, collect_list(b.price) AS ps FROM stock "
    "WHERE SELL AS s ; BUY+ AS b FILTER sum(b.price) > 25 PARTITION BY [name] ORDER BY ts WITHIN 4 EVENTS",
    # an equality across variables: Spark partitions the function's input by the hidden key name
    "SELECT s, b FROM stock WHERE (SELL AS s ; BUY+ AS b) FILTER s.name = b.name ORDER BY ts WITHIN 60 [ts]",
    # a FILTER under +: checked on each repetition
    "SELECT s, b FROM stock WHERE (SELL AS s ; BUY AS b FILTER b.price > s.price)+ PARTITION BY [name] "
    "ORDER BY ts WITHIN 6 EVENTS",
    # key expressions and an aggregate of an expression: columns the function derives per batch,
    # while Catalyst partitions and orders the TABLE by the same expressions
    "SELECT s, b FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [lower(name) AS sym] "
    "ORDER BY [ts * 2 AS t2] WITHIN 30 [t2]",
    "SELECT sym, sum(b.price * 2) AS v FROM stock WHERE SELL AS s ; BUY+ AS b "
    "PARTITION BY [substring(name, 1, 2) AS sym] ORDER BY ts WITHIN 4 EVENTS",
]


@pytest.mark.parametrize("query", QUERIES)
def test_table_function_equals_local_engine(classic, stock, query):
    same_rows(classic.sql(UDTF_CALL, args={"q": query}), cerql.run(query, {"stock": stock}, engine="local"))


def test_decimal_aggregates_in_a_cell_equal_cer_sql(classic):
    """The function computes SELECT aggregates in Python (aggregate.grouped); cer_sql has Spark
    compute them in SQL: both give Spark's decimal types and digits."""
    classic.sql("SELECT *, CAST(price / 7 AS DECIMAL(12, 4)) AS amount FROM stock").createOrReplaceTempView("dstock")
    query = ("SELECT sum(b.amount) AS total, avg(b.amount) AS mean, count(b) AS n FROM dstock "
             "WHERE SELL AS s ; BUY+ AS b FILTER sum(b.amount) > 3.5 PARTITION BY [name] ORDER BY ts WITHIN 4 EVENTS")
    cell = classic.sql("SELECT * FROM cerql(TABLE(dstock), :q)", args={"q": query})
    spark_sql = cerql.cer_sql(classic, query)
    assert [f.dataType.simpleString() for f in cell.schema.fields][-3:] == ["decimal(22,4)", "decimal(16,8)", "bigint"]
    assert cell.schema == spark_sql.schema
    def rows(df):  # match_id aside: the function numbers rows by its own ordinal
        return sorted(tuple(v for k, v in r.asDict().items() if k != "match_id") for r in df.collect())

    assert rows(cell) and rows(cell) == rows(spark_sql)


def test_table_function_schema_is_cer_sql_schema(classic):
    query = QUERIES[2]
    got = classic.sql(UDTF_CALL, args={"q": query}).schema
    want = cerql.cer_sql(classic, query).schema
    assert [(f.name, f.dataType.simpleString()) for f in got] == [(f.name, f.dataType.simpleString()) for f in want]


def test_literal_query_named_argument_and_table_subquery(classic, stock):
    query = "SELECT * FROM trades WHERE SELL AS s ; BUY AS b PARTITION BY [name] ORDER BY ts WITHIN 3 EVENTS"
    df = classic.sql("SELECT * FROM cerql(TABLE(SELECT * FROM stock WHERE price > 12), "
                     f"query => '{query}')")
    cheap = stock[stock.price > 12].reset_index(drop=True)
    same_rows(df, cerql.run(query, {"trades": cheap}, engine="local"))  # FROM binds to the TABLE


def test_ties_are_broken_by_the_other_columns(classic):
    rows = pd.DataFrame({"ts": [0, 0, 0, 1, 1, 2, 2, 2],
                         "type": ["B", "A", "B", "A", "B", "B", "A", "A"],
                         "price": [3.0, 1.0, 2.0, 5.0, 4.0, 6.0, 8.0, 7.0]})
    query = "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts"
    classic.createDataFrame(rows).createOrReplaceTempView("ties")
    classic.createDataFrame(rows[::-1]).createOrReplaceTempView("ties_reversed")
    forward = classic.sql("SELECT * FROM cerql(TABLE(ties), :q)", args={"q": query})
    backward = classic.sql("SELECT * FROM cerql(TABLE(ties_reversed), :q)", args={"q": query})
    by_value = rows.sort_values(["ts", "type", "price"]).reset_index(drop=True)
    same_rows(forward, cerql.run(query, {"s": by_value}, engine="local"))
    # whatever the input order, the same rows and the same match_ids
    assert sorted(map(str, forward.collect())) == sorted(map(str, backward.collect()))


def test_table_function_on_spark_connect(connect, stock):
    cerql.register(connect)
    connect.createDataFrame(stock).createOrReplaceTempView("stock")
    query = QUERIES[0]
    same_rows(connect.sql(UDTF_CALL, args={"q": query}), cerql.run(query, {"stock": stock}, engine="local"))


@pytest.mark.parametrize("query", [
    "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[volume > 1] ORDER BY ts",
    "SELECT * FROM stock WHERE SELL AS s ; BUY AS b PARTITION BY [name] ORDER BY ts LIMIT 5",
    "SELECT * FROM stock, other WHERE SELL AS s ; BUY AS b ORDER BY ts",
    "SELECT * FROM stock WHERE SELL AS s ;; BUY AS b",
    "SELECT * FROM stock WHERE (SELL AS s ; BUY AS b FILTER b.name > s.price)+ ORDER BY ts",
])
def test_bad_query_error_shows_the_ceql_error(classic, stock, query):
    with pytest.raises(Exception) as got:
        classic.sql(UDTF_CALL, args={"q": query}).collect()
    with pytest.raises(cerql.CeqlError) as want:
        try:
            cerql.run(query, {"stock": stock, "other": stock}, engine="local")
        except cerql.CeqlError:
            raise
        else:  # valid for cerql.run, refused by the table function: ask it directly
            from cerql.spark.sql_cells import _prepare

            _prepare(query, classic.table("stock").schema.json())
    assert type(want.value).__name__ in str(got.value)
    assert want.value.message in str(got.value)
    assert "Hint: " + want.value.hint in str(got.value)


def test_bad_query_error_on_spark_connect(connect, stock):
    cerql.register(connect)
    connect.createDataFrame(stock).createOrReplaceTempView("stock")  # not left to an earlier test
    with pytest.raises(Exception, match="Unknown column 'volume'"):
        connect.sql(UDTF_CALL, args={"q": "SELECT * FROM x WHERE BUY AS b FILTER b[volume > 1] ORDER BY ts"}).collect()


# -- %%ceql
@pytest.fixture
def shell(spark, tmp_path, monkeypatch):
    """A fresh IPython shell (history in memory, its directory under tmp_path); the globals it
    changes (``__main__``, builtins) are put back afterwards."""
    import builtins
    import sys

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    before = set(vars(builtins))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    yield InteractiveShell.instance(config=config)
    InteractiveShell.clear_instance()
    for name in set(vars(builtins)) - before:
        delattr(builtins, name)


@pytest.mark.parametrize("extension", ["cerql", "cerql.spark.magic"])
def test_magic_runs_cell_on_namespace_dataframes(shell, spark, stock, extension):
    shell.run_line_magic("load_ext", extension)
    shell.user_ns["ticks"] = spark.createDataFrame(stock)  # a name Spark's catalog does not know
    query = "SELECT * FROM ticks WHERE SELL AS s ; BUY AS b PARTITION BY [name] ORDER BY ts WITHIN 2 EVENTS"
    result = shell.run_cell_magic("ceql", "matches", query)
    assert shell.user_ns["matches"] is result
    same_rows(result, cerql.run(query, {"ticks": stock}, engine="local"))
    assert shell.run_cell_magic("ceql", "", query).count() == result.count()


def test_magic_errors_are_ceql_errors(shell, monkeypatch):
    shell.run_line_magic("load_ext", "cerql")
    with pytest.raises(cerql.CeqlError, match="not a variable name"):
        shell.run_cell_magic("ceql", "two words", "SELECT * FROM t WHERE A ORDER BY ts")
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    for cls in (SparkSession, ConnectSession):
        monkeypatch.setattr(cls, "getActiveSession", classmethod(lambda cls: None))
    with pytest.raises(cerql.CeqlError) as err:
        shell.run_cell_magic("ceql", "", "SELECT * FROM t WHERE A ORDER BY ts")
    assert err.value.error_class == "NO_SPARK_SESSION"


def test_match_ids_are_unique_across_partitions(classic):
    """Each PARTITION BY key is its own instance of the function, which numbers its rows from
    zero; the key's part of the ordinals keeps two keys' results apart (they had one match_id)."""
    rows = pd.DataFrame({"ts": [0, 1, 2, 3, 4, 5], "type": ["A", "B", "A", "B", "A", "B"], "k": [1, 1, 2, 2, 3, 3]})
    classic.createDataFrame(rows).createOrReplaceTempView("keyed")
    query = "SELECT * FROM s WHERE A AS a ; B AS b PARTITION BY [k] ORDER BY ts"
    got = classic.sql("SELECT * FROM cerql(TABLE(keyed), :q)", args={"q": query}).collect()
    assert sorted(r.k for r in got) == [1, 2, 3]
    assert len({r.match_id for r in got}) == 3
    again = classic.sql("SELECT * FROM cerql(TABLE(keyed), :q)", args={"q": query}).collect()
    assert sorted((r.k, r.match_id) for r in again) == sorted((r.k, r.match_id) for r in got)


# -- MATCH_RECOGNIZE in a SQL cell and in %%ceql (spark/mr_sql_cells.py)
MR_TICKS = pd.DataFrame({"sym": ["x", "y", "x", "y", "x", "y", "x", "x"],
                         "ts": [1, 1, 2, 2, 3, 3, 3, 4],
                         "price": [10.0, 5.0, 11.0, 4.0, 12.0, 6.0, 9.0, 13.0]})
MR_QUERY = ("SELECT * FROM anything MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES CLASSIFIER() AS cls, "
            "MATCH_NUMBER() AS mno, count(B.*) AS n ALL ROWS PER MATCH PATTERN (A B+) "
            "DEFINE B AS B.price > PREV(B.price)) AS m")


@pytest.fixture(scope="module")
def mr_ticks(classic):
    """``mr_ticks`` as a temp view: two symbols, x with a tie on ts 3 (prices 12 then 9)."""
    classic.createDataFrame(MR_TICKS).createOrReplaceTempView("mr_ticks")
    return classic


def mr_rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_match_recognize_in_the_table_function(mr_ticks):
    """FROM binds to the TABLE argument whatever its name; rows tying on ORDER BY are ordered by
    their values (x at ts 3: 9 before 12), as cerql.run gives them in that order."""
    cell = mr_ticks.sql("SELECT * FROM cerql(TABLE(mr_ticks), :q)", args={"q": MR_QUERY})
    by_value = MR_TICKS.sort_values(["sym", "ts", "price"]).reset_index(drop=True)
    local = cerql.run(MR_QUERY, {"anything": by_value})
    assert cell.columns == list(local.columns) == ["sym", "ts", "cls", "mno", "n", "price"]
    assert cell.schema == cerql.cer_sql(mr_ticks, MR_QUERY, anything=mr_ticks.createDataFrame(by_value)).schema
    assert mr_rows(cell) == sorted(tuple(r) for r in local.itertuples(index=False))
    assert ("x", 3, "B", 2, 1, 12.0) in mr_rows(cell)  # 9 then 12 at ts 3: a second match 9 -> 12
    # the query around the call is SQL, as for any table function
    grouped = mr_ticks.sql("SELECT sym, count(DISTINCT mno) AS matches FROM cerql(TABLE(mr_ticks), :q) "
                           "GROUP BY sym ORDER BY sym", args={"q": MR_QUERY}).collect()
    assert [tuple(r) for r in grouped] == [("x", 2), ("y", 1)]


@pytest.mark.parametrize("query, error_class", [
    (MR_QUERY.replace("SELECT *", "SELECT m.sym, count(*) AS c") + " GROUP BY m.sym", "OUTER_QUERY_IN_TABLE_FUNCTION"),
    (MR_QUERY + " WHERE m.n > 1", "OUTER_QUERY_IN_TABLE_FUNCTION"),
    ("CREATE TEMP VIEW v AS " + MR_QUERY, "VIEW_IN_TABLE_FUNCTION"),
    (MR_QUERY.replace("FROM anything", "FROM (SELECT * FROM mr_ticks)"), "SUBQUERY_IN_TABLE_FUNCTION"),
    (MR_QUERY.replace("B.price >", "B.prize >"), "UNKNOWN_COLUMN"),
])
def test_match_recognize_the_table_function_refuses(mr_ticks, query, error_class):
    with pytest.raises(Exception) as got:
        mr_ticks.sql("SELECT * FROM cerql(TABLE(mr_ticks), :q)", args={"q": query}).collect()
    assert f"[{error_class}]" in str(got.value)
    if error_class == "OUTER_QUERY_IN_TABLE_FUNCTION":
        assert "spark.cer_sql" in str(got.value)  # the hint


def test_match_recognize_in_the_magic(shell, spark, mr_ticks):
    shell.run_line_magic("load_ext", "cerql")
    ticks = spark.createDataFrame(MR_TICKS.iloc[::-1])  # the namespace's DataFrame, not a view of that name
    shell.user_ns["anything"] = ticks
    result = shell.run_cell_magic("ceql", "matches", MR_QUERY + " WHERE m.sym = 'y'")
    assert shell.user_ns["matches"] is result
    local = cerql.run(MR_QUERY + " WHERE m.sym = 'y'", {"anything": MR_TICKS.iloc[::-1].reset_index(drop=True)})
    assert mr_rows(result) == sorted(tuple(r) for r in local.itertuples(index=False))


class _Session:
    """Just what check_analyze_python reads of a classic session."""

    def __init__(self, python: str):
        self.sparkContext = type("Context", (), {"pythonExec": python})()


def test_a_packed_environments_python_missing_on_the_driver_is_said_at_register(tmp_path, monkeypatch):
    """With PYSPARK_PYTHON=./environment/bin/python (a packed environment), the driver runs the
    function's analyze step with that path in its own folder: register says so, with the link."""
    from cerql.spark.sql_cells import check_analyze_python

    monkeypatch.chdir(tmp_path)
    with pytest.raises(cerql.ExecutionError) as missing:
        check_analyze_python(_Session("./environment/bin/python"))
    assert missing.value.error_class == "SQL_CELL_DRIVER_PYTHON_MISSING"
    assert "ln -s " in missing.value.hint and str(tmp_path / "environment") in missing.value.hint
    (tmp_path / "environment" / "bin").mkdir(parents=True)
    (tmp_path / "environment" / "bin" / "python").write_text("")
    for fine in ("./environment/bin/python", "/usr/bin/python3", "python3"):
        check_analyze_python(_Session(fine))
