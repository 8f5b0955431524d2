"""The ``cerql`` command line: demo, run (CSV and Parquet in, Parquet/CSV/JSON out), explain,
and clean errors (a query error exits 2 with a caret, never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import cerql
from cerql.cli import main, parse_table_spec, parse_timestamps
from cerql.demo import load_queries, plug_stream, run_demo, sql_dir, stock_stream

PAIRS = (sql_dir() / "stock_same_lot_pairs.sql").read_text()


@pytest.fixture
def stock_files(tmp_path):
    """A small stock table written as CSV and as Parquet, the query file, and the expected
    result (the same query run in memory)."""
    stock = stock_stream(80)
    stock.to_csv(tmp_path / "stock.csv", index=False)
    stock.to_parquet(tmp_path / "stock.parquet", index=False)
    query = tmp_path / "pairs.sql"
    query.write_text(PAIRS)
    expected = cerql.run(PAIRS, {"stock": stock}, engine="reference")
    assert len(expected) > 0
    return tmp_path, query, expected


def test_demo_prints_every_query_and_a_summary(capsys):
    assert main(["demo", "--show", "1", "--rows", "300"]) == 0
    out = capsys.readouterr().out
    for name, _ in load_queries():
        assert f"== {name}:" in out
        assert f"-- {name}: 300 rows in," in out
    assert f"{len(load_queries())} queries" in out


def test_demo_reports_a_broken_query_and_goes_on(tmp_path):
    (tmp_path / "a_broken.sql").write_text("-- broken\nSELECT * FROM stock WHERE SELL AS s ;; BUY")
    (tmp_path / "b_pairs.sql").write_text(PAIRS)
    lines = []

    summaries = run_demo(out=lines.append, n_rows=60, show=0, directory=tmp_path)

    assert [s["query"] for s in summaries] == ["a_broken", "b_pairs"]
    assert summaries[0]["error"].error_class == "DANGLING_OPERATOR"
    assert summaries[1]["error"] is None and summaries[1]["matches"] > 0
    assert any(line.startswith("!! a_broken failed") for line in lines)
    assert lines[-1].endswith("1 failed")


def test_run_csv_table_parses_ts_and_writes_parquet(stock_files):
    tmp, query, expected = stock_files
    out = tmp / "result.parquet"

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--out", str(out)])

    assert code == 0
    written = pd.read_parquet(out)
    assert sorted(written["match_id"]) == sorted(expected["match_id"])
    assert str(written["match_start"].dtype).startswith("datetime64")
    assert written["b"].iloc[0]["name"] in {"MSFT", "INTC", "AMZN", "AAPL", "GOOG"}


def test_run_parquet_table_writes_csv_and_json(stock_files):
    tmp, query, expected = stock_files
    table = f"stock={tmp / 'stock.parquet'}"

    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.csv")]) == 0
    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.json")]) == 0

    csv = pd.read_csv(tmp / "r.csv")
    assert sorted(csv["match_id"]) == sorted(expected["match_id"])
    assert json.loads(csv["b"].iloc[0])["volume"] == csv["volume"].iloc[0]
    lines = (tmp / "r.json").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert sorted(r["match_id"] for r in records) == sorted(expected["match_id"])
    assert records[0]["b"]["ts"].startswith("2024-03-01T")


def test_run_takes_repeated_tables_and_prints_without_out(stock_files, capsys):
    tmp, query, expected = stock_files
    plug_stream(30).to_parquet(tmp / "plugs.parquet", index=False)

    code = main(["run", str(query), "--table", str(tmp / "stock.parquet"),
                 "--table", f"plugs={tmp / 'plugs.parquet'}", "--engine", "reference"])

    assert code == 0
    out = capsys.readouterr().out
    assert f"({len(expected)} matches)" in out
    assert "match_start" in out


def test_explain_prints_canonical_query_and_variables(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("-- pairs\nselect b from stock where sell as s ; buy as b within 5 events")

    assert main(["explain", str(query)]) == 0

    out = capsys.readouterr().out
    assert "query: SELECT b FROM stock WHERE sell AS s ; buy AS b WITHIN 5 EVENTS" in out
    assert "outputs: b" in out


def test_explain_prints_the_automaton_and_writes_dot_on_request(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("select b from stock where sell as s ; buy as b")
    dot = tmp_path / "q.dot"

    assert main(["explain", str(query), "--dot", str(dot)]) == 0

    out = capsys.readouterr().out
    assert "on sell  mark {START}" in out and "on buy  mark {b}" in out
    assert dot.read_text().startswith("digraph cea {")


def test_bad_query_exits_2_with_caret_and_no_traceback(tmp_path):
    query = tmp_path / "bad.sql"
    query.write_text("SELECT * FROM stock\nWHERE SELL AS s ;; BUY AS b\n")

    proc = subprocess.run([sys.executable, "-m", "cerql", "explain", str(query)],
                          capture_output=True, text=True)

    assert proc.returncode == 2
    assert "^" in proc.stderr
    assert "line 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_engine_exits_2_naming_available_engines(stock_files, capsys):
    tmp, query, _ = stock_files

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "gpu"])

    assert code == 2
    err = capsys.readouterr().err
    assert "UNKNOWN_ENGINE" in err and "'gpu'" in err and "reference" in err


def test_unknown_source_is_a_query_error(stock_files, capsys):
    tmp, _, _ = stock_files
    query = sql_dir() / "plugs_sustained_load.sql"

    assert main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}"]) == 2
    assert "UNKNOWN_SOURCE" in capsys.readouterr().err


def test_missing_table_file_exits_1(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text(PAIRS)

    assert main(["run", str(query), "--table", f"stock={tmp_path / 'nope.csv'}"]) == 1
    assert "no such file" in capsys.readouterr().err


def test_unsupported_out_format_exits_1(stock_files, capsys):
    tmp, query, _ = stock_files

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}",
                 "--out", str(tmp / "r.xlsx")])

    assert code == 1
    assert ".parquet, .csv or .json" in capsys.readouterr().err


def test_csv_column_named_ts_must_hold_timestamps(tmp_path, capsys):
    pd.DataFrame({"type": ["A"], "ts": ["soon"]}).to_csv(tmp_path / "s.csv", index=False)
    query = tmp_path / "q.sql"
    query.write_text("SELECT * FROM s WHERE A AS a")

    assert main(["run", str(query), "--table", str(tmp_path / "s.csv")]) == 1
    assert "named ts" in capsys.readouterr().err


def test_table_spec_without_name_is_named_after_the_file():
    assert parse_table_spec("data/stock.csv")[0] == "stock"
    assert parse_table_spec("trades=data/stock.parquet")[0] == "trades"


def test_csv_timestamps_are_parsed_by_name_or_content():
    df = pd.DataFrame({
        "ts": ["2024-03-01 09:30:00", "2024-03-01 09:30:01.5"],
        "day": ["2024-03-01", None],
        "name": ["MSFT", "2024-03-01"],
        "n": [1, 2],
    })

    parsed = parse_timestamps(df)

    assert str(parsed["ts"].dtype).startswith("datetime64")
    assert str(parsed["day"].dtype).startswith("datetime64")
    assert parsed["name"].tolist() == ["MSFT", "2024-03-01"]
    assert parsed["n"].tolist() == [1, 2]


def test_cli_demo_default_matches_the_demo_module():
    from cerql import cli, demo
    assert cli.DEMO_ROWS == demo.DEFAULT_ROWS
