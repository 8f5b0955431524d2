"""``cerql run`` and ``cerql explain`` of a MATCH_RECOGNIZE query (cerql/cli/commands.py): over
Parquet and CSV tables, on the local engines and on Spark, the result is ``cerql.run``'s; explain
prints the NFA without Spark and the Spark plan with ``--table``. The checks against the files'
schemas before Spark starts: tests/cli/test_schema_without_spark.py.

The local tests come first and start no JVM; the Spark ones (marked ``spark``) reuse the suite's
session, as tests/cli/test_cli.py's do.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.cli.commands import UNCHECKED, main

REF = pd.DataFrame({"row": range(1, 9), "value": [90, 80, 70, 80, 90, 50, 40, 60]})
QUERY = ("SELECT row, cls, mno FROM t MATCH_RECOGNIZE (ORDER BY row MEASURES CLASSIFIER() AS cls, "
         "MATCH_NUMBER() AS mno ALL ROWS PER MATCH PATTERN (A B+ C+) "
         "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value))")
EXPECTED = [(1, "A", 1), (2, "B", 1), (3, "B", 1), (4, "C", 1), (5, "C", 1), (6, "A", 2), (7, "B", 2), (8, "C", 2)]


@pytest.fixture
def files(tmp_path):
    REF.to_parquet(tmp_path / "t.parquet", index=False)
    REF.to_csv(tmp_path / "t.csv", index=False)
    return tmp_path


def printed_rows(out: str) -> list[tuple]:
    """The rows of a local run's printout (a header, then one line a row, then the count)."""
    lines = out.strip().splitlines()[1:-1]
    return [(int(r), c, int(m)) for r, c, m in (line.split() for line in lines)]


@pytest.mark.parametrize("table, engine", [("t.parquet", "local"), ("t.csv", "local"), ("t.csv", "reference")])
def test_local_run_over_parquet_and_csv(files, capsys, table, engine):
    code = main(["run", "--engine", engine, "-e", QUERY, "--table", f"t={files / table}"])
    out = capsys.readouterr().out
    assert code == 0
    assert printed_rows(out) == EXPECTED
    assert out.strip().endswith("(8 rows)")


def test_local_run_writes_out(files, capsys):
    out = files / "r.parquet"
    assert main(["run", "--engine", "local", "-e", QUERY, "--table", f"t={files / 't.parquet'}", "--out", str(out)]) == 0
    assert "8 rows written to" in capsys.readouterr().out
    assert [tuple(r) for r in pd.read_parquet(out).itertuples(index=False)] == EXPECTED


def test_local_run_refuses_what_only_spark_runs(files, capsys):
    windowed = QUERY.replace("SELECT row, cls, mno", "SELECT cls, rank() OVER (ORDER BY row) AS r")
    assert main(["run", "--engine", "local", "-e", windowed, "--table", f"t={files / 't.csv'}"]) == 2
    err = capsys.readouterr().err
    assert "[LOCAL_OUTER_QUERY]" in err and "spark.cer_sql" in err


def test_local_run_groups_the_items_rows(files, capsys):
    grouped = QUERY.replace("SELECT row, cls, mno", "SELECT cls, count(*) AS n") + " GROUP BY cls ORDER BY cls"
    assert main(["run", "--engine", "local", "-e", grouped, "--table", f"t={files / 't.csv'}"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()[1:-1]
    assert [tuple(line.split()) for line in lines] == [("A", "2"), ("B", "3"), ("C", "3")]


def test_explain_without_tables_prints_the_nfa(capsys):
    assert main(["explain", "-e", QUERY]) == 0
    out = capsys.readouterr().out
    assert out.startswith(cerql.explain(QUERY))
    assert "nfa:" in out and out.strip().endswith(UNCHECKED)


def test_explain_refuses_dot(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "-e", QUERY, "--dot", str(tmp_path / "a.dot")])
    assert exit_.value.code == 2
    assert "--dot" in capsys.readouterr().err and not (tmp_path / "a.dot").exists()


@pytest.mark.spark
@pytest.mark.parametrize("table", ["t.parquet", "t.csv"])
def test_spark_run_over_parquet_and_csv(spark, files, capsys, table):
    grouped = (QUERY.replace("SELECT row, cls, mno", "SELECT cls, count(*) AS n")
               + " GROUP BY cls ORDER BY cls")  # the query around the item: Spark SQL
    assert main(["run", "-e", grouped, "--table", f"t={files / table}"]) == 0
    out = capsys.readouterr().out
    rows = [[v.strip() for v in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("|")]
    assert rows == [["cls", "n"], ["A", "2"], ["B", "3"], ["C", "3"]]


@pytest.mark.spark
def test_spark_run_writes_out_and_explain_shows_the_spark_plan(spark, files, capsys):
    out = files / "r.parquet"
    assert main(["run", "-e", QUERY, "--table", f"t={files / 't.parquet'}", "--out", str(out)]) == 0
    assert "8 rows written to" in capsys.readouterr().out
    assert sorted(tuple(r) for r in pd.read_parquet(out).itertuples(index=False)) == EXPECTED
    assert main(["explain", "-e", QUERY, "--table", f"t={files / 't.csv'}"]) == 0
    explained = capsys.readouterr().out
    assert explained.startswith(cerql.explain(QUERY)) and "on spark:" in explained and "MapInArrow" in explained
