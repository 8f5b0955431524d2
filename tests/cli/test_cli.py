"""The ``cerql`` command line: demo, run (CSV and Parquet in, Parquet/CSV/JSON out), explain,
and clean errors (a query error exits 2 with a caret, never a traceback).

The local-engine tests come first and start no JVM. The Spark tests (marked ``spark``) call
``main()`` in this process, where the CLI reuses the suite's session; one test runs the real
``python -m cerql`` to cover the session the CLI starts itself.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

import cerql
from cerql.cli import commands as cli, runtime as spark_runtime, tables_io
from cerql.cli.commands import main
from cerql.cli.demo import load_queries, plug_stream, run_demo, sql_dir, stock_stream
from cerql.cli.runtime import Progress
from cerql.cli.tables_io import parse_table_spec, parse_timestamps
from tests.spark.compare import canonical_rows, local_records

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
    assert main(["demo", "--engine", "local", "--show", "1", "--rows", "300"]) == 0
    out = capsys.readouterr().out
    for name, _ in load_queries():
        assert f"== {name}:" in out
        assert f"-- {name}: 300 rows in," in out
        assert re.search(rf"^{name} +300 ", out, re.M)  # its row in the summary table
    assert re.search(r"^query +rows in +matches +seconds$", out, re.M)
    assert f"{len(load_queries())} queries" in out


def test_demo_reports_a_broken_query_and_goes_on(tmp_path):
    (tmp_path / "a_broken.sql").write_text("-- broken\nSELECT * FROM stock WHERE SELL AS s ;; BUY")
    (tmp_path / "b_pairs.sql").write_text(PAIRS)
    lines = []

    summaries = run_demo(out=lines.append, n_rows=60, engine="local", show=0, directory=tmp_path)

    assert [s["query"] for s in summaries] == ["a_broken", "b_pairs"]
    assert summaries[0]["error"].error_class == "DANGLING_OPERATOR"
    assert summaries[1]["error"] is None and summaries[1]["matches"] > 0
    assert any(line.startswith("!! a_broken failed") for line in lines)
    assert re.search(r"^a_broken +0 +failed ", lines[-3], re.M)
    assert lines[-1].endswith("1 failed")


def test_run_csv_table_parses_ts_and_writes_parquet(stock_files):
    tmp, query, expected = stock_files
    out = tmp / "result.parquet"

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--out", str(out),
                 "--engine", "local"])

    assert code == 0
    written = pd.read_parquet(out)
    assert sorted(written["match_id"]) == sorted(expected["match_id"])
    assert str(written["match_start"].dtype).startswith("datetime64")
    assert written["b"].iloc[0]["name"] in {"MSFT", "INTC", "AMZN", "AAPL", "GOOG"}


def test_run_parquet_table_writes_csv_and_json(stock_files):
    tmp, query, expected = stock_files
    table = f"stock={tmp / 'stock.parquet'}"
    local = ["--engine", "local"]

    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.csv"), *local]) == 0
    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.json"), *local]) == 0

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


def test_unknown_engine_is_a_usage_error_naming_the_engines(stock_files, capsys):
    tmp, query, _ = stock_files

    with pytest.raises(SystemExit) as exit_:
        main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "gpu"])

    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "'gpu'" in err and "'spark'" in err and "'local'" in err and "'reference'" in err


def test_unknown_source_is_a_query_error(stock_files, capsys):
    tmp, _, _ = stock_files
    query = sql_dir() / "plugs_sustained_load.sql"

    assert main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"]) == 2
    assert "UNKNOWN_SOURCE" in capsys.readouterr().err


def test_missing_table_file_exits_1_before_any_engine_starts(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text(PAIRS)

    for engine in ("local", "spark"):  # spark: checked before a session is looked for
        assert main(["run", str(query), "--table", f"stock={tmp_path / 'nope.csv'}", "--engine", engine]) == 1
        assert "no such file" in capsys.readouterr().err


def test_unsupported_out_format_exits_1(stock_files, capsys):
    tmp, query, _ = stock_files

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}",
                 "--out", str(tmp / "r.xlsx")])  # the default engine, spark: checked before it starts

    assert code == 1
    assert ".parquet, .csv or .json" in capsys.readouterr().err


def test_csv_column_named_ts_must_hold_timestamps(tmp_path, capsys):
    pd.DataFrame({"type": ["A"], "ts": ["soon"]}).to_csv(tmp_path / "s.csv", index=False)
    query = tmp_path / "q.sql"
    query.write_text("SELECT * FROM s WHERE A AS a")

    assert main(["run", str(query), "--table", str(tmp_path / "s.csv"), "--engine", "local"]) == 1
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


def test_local_engine_reads_a_directory_of_csv_parts(stock_files, capsys):
    tmp, query, expected = stock_files
    parts = tmp / "stock"
    parts.mkdir()
    stock = pd.read_csv(tmp / "stock.csv")
    stock.iloc[:40].to_csv(parts / "part-0.csv", index=False)
    stock.iloc[40:].to_csv(parts / "part-1.csv", index=False)

    assert main(["run", str(query), "--table", str(parts), "--engine", "local"]) == 0
    assert f"({len(expected)} matches)" in capsys.readouterr().out


# ------------------------------------------------------------------ --out never loses a file
def run_into(tmp, query, out, *extra, engine="local"):
    """``cerql run`` of the stock query over stock.csv into ``out``."""
    return main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--out", str(out),
                 "--engine", engine, *extra])


def error_class(err: str) -> str:
    """The error class ``cerql: [CLASS] message`` names on stderr."""
    return re.match(r"cerql: \[([A-Z_]+)\] ", err).group(1)


def config_dir(tmp):
    """Issue 15's directory: conf.json/ holding .env and _config.yml, which Spark's own names
    resemble (a dot, an underscore)."""
    conf = tmp / "conf.json"
    conf.mkdir()
    (conf / ".env").write_text("SECRET=1\n")
    (conf / "_config.yml").write_text("title: mine\n")
    return conf


def assert_config_dir_kept(conf):
    assert sorted(p.name for p in conf.iterdir()) == [".env", "_config.yml"]
    assert (conf / ".env").read_text() == "SECRET=1\n"
    assert (conf / "_config.yml").read_text() == "title: mine\n"


def no_leftovers(tmp):
    """No hidden result cerql began (``.NAME.cerql-new-*``) or moved aside is left behind."""
    return [p.name for p in tmp.iterdir() if ".cerql-" in p.name] == []


def test_local_out_over_a_regular_file_is_refused_without_overwrite(stock_files, capsys):
    tmp, query, expected = stock_files
    keep = tmp / "keep.csv"
    keep.write_text("mine\n")

    assert run_into(tmp, query, keep) == 2

    assert error_class(capsys.readouterr().err) == "OUTPUT_EXISTS"
    assert keep.read_text() == "mine\n"
    assert run_into(tmp, query, keep, "--overwrite") == 0
    assert sorted(pd.read_csv(keep)["match_id"]) == sorted(expected["match_id"])
    assert no_leftovers(tmp)


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]], ids=["plain", "overwrite"])
def test_local_out_equal_to_its_own_table_is_refused(stock_files, capsys, overwrite):
    tmp, query, _ = stock_files
    before = (tmp / "stock.csv").read_bytes()

    assert run_into(tmp, query, tmp / "stock.csv", *overwrite) == 2

    assert error_class(capsys.readouterr().err) == "OUTPUT_IS_INPUT"
    assert (tmp / "stock.csv").read_bytes() == before


@pytest.mark.parametrize("out", ["parts/out.csv", "parts.csv", "link.csv", "hard.csv", "pairs.json"])
def test_out_inside_holding_or_linked_to_an_input_is_refused(stock_files, capsys, out):
    """Inside an input directory, a directory holding an input, a symbolic or hard link to an
    input, and the query file itself (named .json here): never written, even with --overwrite."""
    tmp, _, _ = stock_files
    (tmp / "parts").mkdir()
    (tmp / "parts.csv").mkdir()
    stock = (tmp / "stock.csv").read_text()
    (tmp / "parts.csv" / "part-0.csv").write_text(stock)
    (tmp / "link.csv").symlink_to(tmp / "stock.csv")
    os.link(tmp / "stock.csv", tmp / "hard.csv")
    query = tmp / "pairs.json"
    query.write_text(PAIRS)
    tables = ["--table", f"stock={tmp / 'stock.csv'}", "--table", f"other={tmp / 'parts'}"]
    if out == "parts.csv":
        tables = ["--table", f"stock={tmp / 'parts.csv' / 'part-0.csv'}"]

    code = main(["run", str(query), *tables, "--out", str(tmp / out), "--overwrite", "--engine", "local"])

    assert code == 2
    assert error_class(capsys.readouterr().err) == "OUTPUT_IS_INPUT"
    assert (tmp / "stock.csv").read_text() == stock and query.read_text() == PAIRS
    assert (tmp / "parts.csv" / "part-0.csv").read_text() == stock
    assert list((tmp / "parts").iterdir()) == []


@pytest.mark.parametrize("overwrite, expected", [([], "OUTPUT_EXISTS"), (["--overwrite"], "OUTPUT_NOT_REPLACEABLE")])
def test_local_out_directory_of_other_files_survives(stock_files, capsys, overwrite, expected):
    tmp, query, _ = stock_files
    conf = config_dir(tmp)

    assert run_into(tmp, query, conf, *overwrite) == 2

    assert error_class(capsys.readouterr().err) == expected
    assert_config_dir_kept(conf)


def spark_result_dir(path, name="part-00000-0b2c3d4e-5f60-4718-9a0b-1c2d3e4f5a6b-c000.csv"):
    """A directory laid out as Spark writes a table (names as Spark 4 gives them)."""
    path.mkdir()
    (path / name).write_text("match_id\n1\n")
    (path / f".{name}.crc").write_bytes(b"crc")
    (path / "_SUCCESS").write_text("")
    (path / "._SUCCESS.crc").write_bytes(b"crc")
    return path


def test_previous_result_is_only_an_empty_directory_or_spark_files(tmp_path):
    assert tables_io.previous_result(spark_result_dir(tmp_path / "spark.csv"))
    (tmp_path / "empty").mkdir()
    assert tables_io.previous_result(tmp_path / "empty")
    mine = spark_result_dir(tmp_path / "mine.csv")
    (mine / "_config.yml").write_text("x")
    assert not tables_io.previous_result(mine)
    unfinished = spark_result_dir(tmp_path / "unfinished.csv")
    (unfinished / "_SUCCESS").unlink()
    assert not tables_io.previous_result(unfinished)
    hand_made = tmp_path / "hand.csv"
    hand_made.mkdir()
    (hand_made / "part-0.csv").write_text("x")
    (hand_made / "_SUCCESS").write_text("")
    assert not tables_io.previous_result(hand_made)
    nested = spark_result_dir(tmp_path / "nested.csv")
    (nested / "part-00001").mkdir()
    assert not tables_io.previous_result(nested)


def test_local_overwrite_replaces_a_previous_spark_result_with_one_file(stock_files):
    tmp, query, expected = stock_files
    out = spark_result_dir(tmp / "r.csv")

    assert run_into(tmp, query, out, "--overwrite") == 0

    assert out.is_file()
    assert sorted(pd.read_csv(out)["match_id"]) == sorted(expected["match_id"])
    assert no_leftovers(tmp)


def test_failed_query_leaves_the_previous_out_and_no_partial_file(stock_files, capsys, monkeypatch):
    tmp, query, _ = stock_files
    out = tmp / "r.json"
    out.write_text("previous\n")

    def fail(result, path, suffix):
        path.write_text("half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tables_io, "_write_local", fail)

    assert run_into(tmp, query, out, "--overwrite") == 1
    assert "No space left" in capsys.readouterr().err
    assert out.read_text() == "previous\n"
    assert no_leftovers(tmp)


def test_explain_dot_may_not_be_the_query_file(tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("select b from stock where sell as s ; buy as b")

    assert main(["explain", str(query), "--dot", str(query)]) == 2

    assert error_class(capsys.readouterr().err) == "OUTPUT_IS_INPUT"
    assert query.read_text() == "select b from stock where sell as s ; buy as b"


# ------------------------------------------------------------- every failure is one message
def test_ceql_error_wrapped_by_lark_exits_2_with_its_message(stock_files, capsys, monkeypatch):
    from lark.exceptions import VisitError

    tmp, query, _ = stock_files
    deep = cerql.errors.ParseError("The query nests too deeply", error_class="QUERY_TOO_DEEP",
                                   hint="split it")

    monkeypatch.setattr(cli, "evaluate", lambda *a: (_ for _ in ()).throw(VisitError("seq", None, deep)))

    assert main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"]) == 2
    err = capsys.readouterr().err
    assert error_class(err) == "QUERY_TOO_DEEP" and "Hint: split it" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_too_deep_query_exits_2_with_the_message(tmp_path, engine):
    """Issue 15: about 490 chained `;` made the real command exit 1 with a RecursionError's
    traceback. That query now runs; one past the parser's nesting limit is a CeqlError, exit 2,
    on either engine (refused before Spark starts)."""
    pd.DataFrame({"type": ["A", "A"], "ts": [0, 1]}).to_csv(tmp_path / "s.csv", index=False)
    answers = {}
    for atoms in (490, 2100) if engine == "local" else (2100,):  # 490 would start a Spark
        query = tmp_path / f"chain{atoms}.sql"
        query.write_text("SELECT * FROM s WHERE " + " ; ".join(["A"] * atoms) + " ORDER BY ts")
        answers[atoms] = subprocess.run(
            [sys.executable, "-m", "cerql", "run", str(query), "--table", str(tmp_path / "s.csv"),
             "--engine", engine], capture_output=True, text=True, timeout=300)

    if engine == "local":
        assert answers[490].returncode == 0, answers[490].stderr
        assert "(0 matches)" in answers[490].stdout
    deep = answers[2100]
    assert deep.returncode == 2
    assert error_class(deep.stderr) == "QUERY_TOO_COMPLEX" and "^" in deep.stderr
    assert "Traceback" not in deep.stderr


def test_unexpected_exception_is_one_line_exit_1(stock_files, capsys, monkeypatch):
    tmp, query, _ = stock_files

    def boom(*args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cli, "evaluate", boom)
    monkeypatch.delenv("CERQL_TRACEBACK", raising=False)

    assert main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cerql: internal error: RecursionError: maximum recursion depth exceeded")
    assert len(err.splitlines()) == 1
    monkeypatch.setenv("CERQL_TRACEBACK", "1")
    with pytest.raises(RecursionError):
        main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"])


def test_out_of_memory_is_one_line_suggesting_bounds(stock_files, capsys, monkeypatch):
    tmp, query, _ = stock_files
    monkeypatch.setattr(cli, "evaluate", lambda *a: (_ for _ in ()).throw(MemoryError()))
    monkeypatch.delenv("CERQL_TRACEBACK", raising=False)

    assert main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cerql: out of memory:") and "LIMIT" in err and len(err.splitlines()) == 1


# ------------------------------------------------------------------------------------- Spark
def same_matches(records, expected: pd.DataFrame) -> bool:
    """Spark's match ids number rows by partition, so results are compared without them."""
    return canonical_rows(records) == canonical_rows(local_records(expected))


def read_csv_parts(directory) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p) for p in sorted(directory.glob("part-*.csv"))], ignore_index=True)


@pytest.mark.spark
def test_spark_run_reads_pandas_parquet_and_writes_a_parquet_directory(spark, stock_files, capsys):
    tmp, query, expected = stock_files
    out = tmp / "result.parquet"

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.parquet'}", "--out", str(out)])

    assert code == 0
    captured = capsys.readouterr()
    assert "nanosecond timestamps" in captured.err  # pandas' default, read through pyarrow
    assert f"{len(expected)} matches written to" in captured.out
    assert out.is_dir() and (out / "_SUCCESS").exists()
    assert same_matches(pd.read_parquet(out).to_dict("records"), expected)
    assert spark.range(3).count() == 3  # the suite's session was reused, not stopped


@pytest.mark.spark
def test_spark_run_reads_csv_and_prints_the_first_matches(spark, stock_files, capsys):
    tmp, query, expected = stock_files
    assert len(expected) > 3

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--show", "3"])

    assert code == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1]
    assert [c.strip() for c in header.strip("|").split("|")] == list(expected.columns)
    assert len([line for line in out.splitlines() if line.startswith("|")]) == 1 + 3
    assert "only showing top 3 rows" in out


@pytest.mark.spark
def test_spark_run_reads_a_spark_directory_and_writes_csv_and_json(spark, stock_files, capsys):
    tmp, query, expected = stock_files
    parts = tmp / "stock_parts"  # no suffix: a directory of Parquet parts, as Spark writes
    spark.createDataFrame(pd.read_csv(tmp / "stock.csv", parse_dates=["ts"])).repartition(2) \
        .write.parquet(str(parts))
    table = f"stock={parts}"

    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.csv")]) == 0
    assert main(["run", str(query), "--table", table, "--out", str(tmp / "r.json")]) == 0

    assert "nanosecond" not in capsys.readouterr().err
    csv = read_csv_parts(tmp / "r.csv")
    assert len(csv) == len(expected)
    first = json.loads(csv["b"].iloc[0])  # a struct column becomes JSON text in CSV
    assert first["volume"] == csv["volume"].iloc[0] and first["ts"].startswith("2024-03-01T")
    records = [json.loads(line) for p in sorted((tmp / "r.json").glob("part-*.json"))
               for line in p.read_text().splitlines()]
    assert sorted(r["b"]["ts"] for r in records) == sorted(json.loads(b)["ts"] for b in csv["b"])


@pytest.mark.spark
@pytest.mark.parametrize("overwrite, expected", [([], "OUTPUT_EXISTS"), (["--overwrite"], "OUTPUT_NOT_REPLACEABLE")])
def test_spark_out_directory_of_other_files_survives(spark, stock_files, capsys, overwrite, expected):
    """Issue 15: `--out conf.json` over conf.json/ holding .env and _config.yml deleted both."""
    tmp, query, _ = stock_files
    conf = config_dir(tmp)

    assert run_into(tmp, query, conf, *overwrite, engine="spark") == 2

    assert error_class(capsys.readouterr().err) == expected
    assert_config_dir_kept(conf)


@pytest.mark.spark
def test_spark_out_over_a_regular_file(spark, stock_files, capsys):
    """Refused without --overwrite (the file unchanged); replaced by the directory of part files
    with it, as asked."""
    tmp, query, expected = stock_files
    keep = tmp / "keep.csv"
    keep.write_text("mine\n")

    assert run_into(tmp, query, keep, engine="spark") == 2
    assert error_class(capsys.readouterr().err) == "OUTPUT_EXISTS"
    assert keep.read_text() == "mine\n"

    assert run_into(tmp, query, keep, "--overwrite", engine="spark") == 0
    assert keep.is_dir() and (keep / "_SUCCESS").exists()
    assert len(read_csv_parts(keep)) == len(expected)
    assert no_leftovers(tmp)


@pytest.mark.spark
def test_spark_out_equal_to_its_own_table_is_refused(spark, stock_files, capsys):
    tmp, query, _ = stock_files
    parts = tmp / "stock_parts.parquet"
    spark.createDataFrame(pd.read_csv(tmp / "stock.csv", parse_dates=["ts"])).write.parquet(str(parts))
    before = sorted((p.name, p.stat().st_size) for p in parts.iterdir())

    code = main(["run", str(query), "--table", f"stock={parts}", "--out", str(parts), "--overwrite"])

    assert code == 2
    assert error_class(capsys.readouterr().err) == "OUTPUT_IS_INPUT"
    assert sorted((p.name, p.stat().st_size) for p in parts.iterdir()) == before


@pytest.mark.spark
def test_spark_overwrite_replaces_its_previous_result(spark, stock_files, capsys):
    tmp, query, expected = stock_files
    out = tmp / "r.json"
    assert run_into(tmp, query, out, engine="spark") == 0
    first = sorted(p.name for p in out.iterdir())
    assert tables_io.previous_result(out) and any(n.startswith("part-") for n in first)

    assert run_into(tmp, query, out, engine="spark") == 2
    assert error_class(capsys.readouterr().err) == "OUTPUT_EXISTS"
    assert run_into(tmp, query, out, "--overwrite", engine="spark") == 0

    assert sorted(p.name for p in out.iterdir()) != first  # a new job's files
    assert sum(len(p.read_text().splitlines()) for p in out.glob("part-*.json")) == len(expected)
    assert no_leftovers(tmp)


@pytest.mark.spark
def test_spark_task_failure_while_writing_keeps_the_previous_result(spark, stock_files, capsys):
    tmp, _, _ = stock_files
    out = spark_result_dir(tmp / "r.csv")
    before = sorted(p.name for p in out.iterdir())
    query = tmp / "all.sql"
    query.write_text("SELECT * FROM stock WHERE (BUY OR SELL)+ AS t WITHIN 30 EVENTS")

    code = run_into(tmp, query, out, "--overwrite", "--conf", "cerql.maxMatchesPerEvent=5", engine="spark")

    assert code == 2
    err = capsys.readouterr().err
    assert error_class(err) == "TOO_MANY_MATCHES_PER_EVENT" and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == before
    assert no_leftovers(tmp)


@pytest.mark.spark
def test_spark_csv_timestamps_are_iso_8601_only(spark, tmp_path):
    pd.DataFrame({
        "type": ["A", "B"], "taxi_id": ["T07", "T08"],
        "ts": ["2024-03-01 09:30:00.5", "2024-03-01T09:30:01Z"], "day": ["2024-03-01", None],
    }).to_csv(tmp_path / "s.csv", index=False)

    types = dict(tables_io.read_spark_table(spark, tmp_path / "s.csv", "csv").dtypes)

    assert types == {"type": "string", "taxi_id": "string", "ts": "timestamp", "day": "date"}


@pytest.mark.spark
def test_spark_bad_query_exits_2_with_the_caret(spark, stock_files, capsys):
    tmp, _, _ = stock_files
    table = ["--table", f"stock={tmp / 'stock.csv'}"]
    syntax = tmp / "syntax.sql"
    syntax.write_text("SELECT * FROM stock\nWHERE SELL AS s ;; BUY AS b\n")
    column = tmp / "column.sql"  # found only against the table's schema, by cer_sql
    column.write_text("SELECT * FROM stock\nWHERE SELL AS s ; BUY AS b FILTER s[nope > 1]\n")

    assert main(["run", str(syntax), *table]) == 2
    err = capsys.readouterr().err
    assert "DANGLING_OPERATOR" in err and "line 2" in err and "^" in err
    assert main(["run", str(column), *table]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "line 2" in err and "^" in err and "Traceback" not in err


@pytest.mark.spark
def test_spark_task_failure_exits_2_with_cerql_message_and_conf_is_restored(spark, stock_files, capsys):
    tmp, _, _ = stock_files
    query = tmp / "all.sql"
    query.write_text("SELECT * FROM stock WHERE (BUY OR SELL)+ AS t WITHIN 30 EVENTS")

    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}",
                 "--conf", "cerql.maxMatchesPerEvent=5"])

    assert code == 2
    err = capsys.readouterr().err
    assert "TOO_MANY_MATCHES_PER_EVENT" in err and "more than maxMatchesPerEvent (5)" in err
    assert "Hint:" in err and "--conf cerql.maxMatchesPerEvent=N" in err
    assert "Traceback" not in err and "at org.apache" not in err
    assert spark.conf.get("cerql.maxMatchesPerEvent", None) is None


@pytest.mark.spark
@pytest.mark.parametrize("live", [False, True], ids=["lines", "live"])
def test_progress_names_running_stages_with_the_ui_disabled(spark, live):
    assert spark.conf.get("spark.ui.enabled") == "false"

    def slow(batches):
        import time as t
        for batch in batches:
            t.sleep(0.6)
            yield batch

    stream = io.StringIO()
    with Progress(spark, stream=stream, live=live, delay=0, interval=0.05) as progress:
        spark.range(4, numPartitions=2).mapInPandas(slow, "id long").collect()

    assert any(re.fullmatch(r"stage \d+: [0-2]/2 tasks", line) for line in progress.lines)
    text = stream.getvalue()
    assert "stage" in text
    if live:  # one line rewritten in place, erased at the end
        assert "\n" not in text and text.endswith("\r")
    else:
        assert text.endswith("\n")


@pytest.mark.spark
def test_spark_run_with_progress_prints_the_same_result(spark, stock_files, capsys, monkeypatch):
    tmp, query, _ = stock_files
    args = ["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--show", "5"]
    assert main(args + ["--no-progress"]) == 0
    quiet = capsys.readouterr()
    monkeypatch.setattr(spark_runtime, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(spark_runtime, "PROGRESS_INTERVAL", 0.02)

    assert main(args + ["--progress"]) == 0

    loud = capsys.readouterr()
    assert loud.out == quiet.out
    assert quiet.err == ""
    assert all(re.fullmatch(r"\[\d+ s\] stage \d+: \d+/\d+ tasks(, stage .*)?", line)
               for line in loud.err.splitlines())


@pytest.mark.spark
def test_spark_demo_runs_every_query_with_the_local_engine_counts(spark, capsys):
    lines = []
    local = run_demo(out=lines.append, n_rows=300, engine="local", show=0)

    assert main(["demo", "--rows", "300", "--show", "1"]) == 0

    out = capsys.readouterr().out
    assert "on the spark engine" in out and "loaded into Spark" in out
    counts = dict(re.findall(r"^-- (\w+): 300 rows in, (\d+) matches out", out, re.M))
    assert counts == {s["query"]: str(s["matches"]) for s in local}
    assert re.search(r"^query +rows in +matches +seconds$", out, re.M)
    assert f"{len(local)} queries" in out.splitlines()[-1]


@pytest.mark.spark
def test_stream_demo_shows_each_micro_batch_and_agrees_with_the_batch_query(spark, capsys):
    assert main(["demo", "--stream", "--rows", "4000", "--show", "2"]) == 0
    out = capsys.readouterr().out
    batches = re.findall(r"^micro-batch +(\d+): +([\d,]+) rows in, +([\d,]+) matches out, (\d+) late rows", out, re.M)
    assert len(batches) >= 8  # one per file of trades, as they arrive
    assert sum(int(late) for *_, late in batches) == 3
    assert sum(int(m.replace(",", "")) for _, _, m, _ in batches) > 0
    assert re.search(r"^[\d,]+ matches in \d+ micro-batches, 3 late rows left out; the batch query on the on-time "
                     r"trades gives the same matches$", out, re.M)
    assert main(["demo", "--stream", "--engine", "local"]) == 1  # Structured Streaming is Spark's


@pytest.mark.spark
def test_python_m_cerql_starts_its_own_quiet_spark(stock_files):
    """The one run of the real command: the CLI starts (and stops) its own session, sets
    PYSPARK_PYTHON for the workers, and keeps Spark's log off the terminal."""
    tmp, query, expected = stock_files
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    out = tmp / "r.parquet"

    proc = subprocess.run(
        [sys.executable, "-m", "cerql", "run", str(query), "--table", f"stock={tmp / 'stock.csv'}",
         "--out", str(out), "--conf", "spark.master=local[1]"],
        capture_output=True, text=True, env=env, timeout=300)

    assert proc.returncode == 0, proc.stderr
    assert f"{len(expected)} matches written" in proc.stdout
    noise = [line for line in proc.stderr.splitlines() if "incubator" not in line]  # the JVM's own
    assert noise == []
    assert same_matches(pd.read_parquet(out).to_dict("records"), expected)


def test_spark_unknown_source_fails_before_spark_starts(stock_files, capsys, monkeypatch):
    from pyspark.sql import SparkSession

    tmp, query, _ = stock_files
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))  # a fresh process
    monkeypatch.setattr(cli, "spark_session", lambda *args, **kwargs: pytest.fail("Spark was started"))

    assert main(["run", str(query), "--table", f"trades={tmp / 'stock.csv'}"]) == 2
    err = capsys.readouterr().err
    assert "UNKNOWN_SOURCE" in err and "--table stock=PATH" in err and "^" in err


@pytest.mark.spark
def test_spark_demo_reports_a_task_failure_and_goes_on(spark, tmp_path):
    (tmp_path / "a_explodes.sql").write_text("SELECT * FROM stock WHERE (BUY OR SELL)+ AS t WITHIN 30 EVENTS")
    (tmp_path / "b_pairs.sql").write_text(PAIRS)
    lines = []
    spark.conf.set("cerql.maxMatchesPerEvent", "5")
    try:
        summaries = run_demo(out=lines.append, n_rows=60, show=0, directory=tmp_path, spark=spark)
    finally:
        spark.conf.unset("cerql.maxMatchesPerEvent")

    assert summaries[0]["error"].error_class == "TOO_MANY_MATCHES_PER_EVENT"
    assert "maxMatchesPerEvent (5)" in summaries[0]["error"].message
    assert summaries[1]["error"] is None and summaries[1]["matches"] > 0
    assert lines[-1].endswith("1 failed")


@pytest.mark.spark
def test_explain_with_tables_prints_the_spark_plan(spark, stock_files, capsys):
    tmp, query, _ = stock_files
    assert main(["explain", str(query), "--table", f"stock={tmp / 'stock.parquet'}"]) == 0
    out = capsys.readouterr().out
    assert "automaton:" in out and "on spark:" in out and "MapInArrow" in out


@pytest.mark.parametrize("pattern, conf, error_class", [
    ("(BUY OR SELL)+ AS t WITHIN 30 EVENTS", "cerql.maxMatchesPerEvent=5", "TOO_MANY_MATCHES_PER_EVENT"),
    ("BUY AS b", "cerql.maxOutputRows=3", "TOO_MANY_OUTPUT_ROWS"),
    ("BUY AS b ; SELL AS s", "cerql.maxOutputEvents=3", "TOO_MANY_OUTPUT_EVENTS")])
def test_local_engine_takes_the_guards_conf(stock_files, capsys, pattern, conf, error_class):
    """The local engine's guards are set with the same --conf keys as Spark's; the failure names it."""
    tmp, _, _ = stock_files
    query = tmp / "all.sql"
    query.write_text(f"SELECT * FROM stock WHERE {pattern}")
    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local", "--conf", conf])
    assert code == 2
    err = capsys.readouterr().err
    assert error_class in err and f"--conf {conf.split('=')[0]}=N" in err and "Traceback" not in err


def test_local_engine_rejects_a_guard_conf_that_is_not_a_number(stock_files, capsys):
    tmp, _, _ = stock_files
    query = tmp / "all.sql"
    query.write_text("SELECT * FROM stock WHERE BUY AS b")
    code = main(["run", str(query), "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local",
                 "--conf", "cerql.maxOutputRows=lots"])
    assert code == 1 and "expected a whole number" in capsys.readouterr().err  # as every bad option


# ------------------------------------------------- the query inline (-e), --out, explain's checks
def test_run_and_explain_take_the_query_inline(stock_files, capsys):
    tmp, _, expected = stock_files

    assert main(["run", "-e", PAIRS, "--table", f"stock={tmp / 'stock.csv'}", "--engine", "local"]) == 0
    assert f"({len(expected)} matches)" in capsys.readouterr().out
    assert main(["explain", "--execute", "select b from stock where sell as s ; buy as b"]) == 0
    assert "query: SELECT b FROM stock WHERE sell AS s ; buy AS b" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "explain"])
def test_query_file_and_inline_query_are_one_or_the_other(stock_files, capsys, command):
    tmp, query, _ = stock_files

    with pytest.raises(SystemExit) as neither:
        main([command, "--table", f"stock={tmp / 'stock.csv'}"])
    assert neither.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: cerql {command}" in err and 'no query: give a file (QUERY.sql) or the query itself with -e' in err

    with pytest.raises(SystemExit) as both:
        main([command, str(query), "-e", PAIRS])
    assert both.value.code == 2
    assert "argument -e/--execute: not allowed with argument QUERY.sql" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["local", "reference", "spark"])
def test_existing_out_file_is_refused_without_overwrite_on_every_engine(stock_files, capsys, monkeypatch, engine):
    """Checked before any engine starts (none is allowed to here), with the query inline so the
    only inputs are the table; the file is left byte for byte."""
    tmp, _, _ = stock_files
    keep = tmp / "keep.parquet"
    keep.write_bytes(b"not a result of cerql\n")
    monkeypatch.setattr(cli, "spark_session", lambda *args, **kwargs: pytest.fail("Spark was started"))
    monkeypatch.setattr(cli, "evaluate", lambda *a, **k: pytest.fail("the query was run"))

    code = main(["run", "-e", PAIRS, "--table", f"stock={tmp / 'stock.csv'}", "--out", str(keep),
                 "--engine", engine])

    assert code == 2
    err = capsys.readouterr().err
    assert error_class(err) == "OUTPUT_EXISTS" and "give --overwrite to replace it" in err
    assert keep.read_bytes() == b"not a result of cerql\n"


UNKNOWN_COLUMN = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[prise > 10]"


def error_class_in(err: str) -> str:
    """The error class of the ``cerql: [CLASS] message`` line on stderr, after any notes (the
    stock.parquet pandas writes gets one: its nanosecond timestamps)."""
    return re.search(r"^cerql: \[([A-Z_]+)\] ", err, re.M).group(1)


def test_explain_without_tables_says_columns_were_not_checked(capsys):
    assert main(["explain", "-e", UNKNOWN_COLUMN]) == 0

    out = capsys.readouterr().out
    assert "automaton:" in out
    assert out.splitlines()[-1].startswith("columns not checked: without --table there are no schemas")


def test_explain_names_an_unknown_source_before_spark_starts(stock_files, capsys, monkeypatch):
    from pyspark.sql import SparkSession

    tmp, _, _ = stock_files
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))  # a fresh process
    monkeypatch.setattr(cli, "spark_session", lambda *args, **kwargs: pytest.fail("Spark was started"))

    assert main(["explain", "-e", "SELECT * FROM stocks WHERE SELL AS s", "--table", f"stock={tmp / 'stock.csv'}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert error_class(captured.err) == "UNKNOWN_SOURCE" and "--table stocks=PATH" in captured.err


@pytest.mark.spark
@pytest.mark.parametrize("query, error, where", [
    (UNKNOWN_COLUMN, "UNKNOWN_COLUMN", "prise"),
    ("SELECT * FROM stocks WHERE SELL AS s", "UNKNOWN_SOURCE", "stocks"),
], ids=["column", "source"])
def test_explain_with_tables_prints_the_error_not_a_plan(spark, stock_files, capsys, query, error, where):
    tmp, _, _ = stock_files

    assert main(["explain", "-e", query, "--table", f"stock={tmp / 'stock.parquet'}"]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert error_class_in(err) == error and "Hint: " in err and "Traceback" not in err
    lines = err.splitlines()
    line, caret = [(line, below) for line, below in zip(lines, lines[1:]) if below.strip() == "^"][0]
    assert caret.index("^") == line.index(where)  # the caret under the unknown name


@pytest.mark.spark
def test_explain_with_tables_checks_event_types_as_far_as_schemas_tell(spark, stock_files, capsys):
    """An event type is a value of the type column: with one, an unknown type may be in the data
    (a plan); without one, and no source of that name, it can match nothing (the error)."""
    tmp, _, _ = stock_files
    pd.read_parquet(tmp / "stock.parquet").drop(columns="type").to_parquet(tmp / "untyped.parquet", index=False)
    query = "SELECT * FROM stock WHERE SELL AS s ; BUYY AS b"

    assert main(["explain", "-e", query, "--table", f"stock={tmp / 'stock.parquet'}"]) == 0
    assert "on BUYY" in capsys.readouterr().out
    assert main(["explain", "-e", query, "--table", f"stock={tmp / 'untyped.parquet'}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and error_class_in(captured.err) == "UNKNOWN_EVENT_TYPE" and "^" in captured.err
