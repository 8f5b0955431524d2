"""The example queries in sql/: each runs over the demo data and finds well-formed matches.

CEQL and MATCH_RECOGNIZE queries alike (the front door tells them apart); a MATCH_RECOGNIZE
result has no match_id, and its query orders its rows, so both engines' results are compared in
order.

A smoke test per file (parametrised by file name) and one exact test of
``stock_sell_buy_roundtrip.sql`` on a hand-written table whose matches were worked out by hand.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql import ast
from cerql.cli.demo import demo_tables, load_queries, run_demo, source_names, sql_dir, tables_for
from cerql.parser.match_recognize import parse_match_recognize
from cerql.planner import front

QUERIES = load_queries()


@pytest.fixture(scope="module")
def tables():
    return demo_tables(300)  # small enough for the reference evaluator


def test_sql_directory_has_queries_for_every_demo_table():
    used = {name for _, text in QUERIES for name in tables_for(text, demo_tables(10))}
    assert used == {"stock", "plugs", "trips"}
    assert len(QUERIES) >= 10


@pytest.mark.parametrize("name, text", QUERIES, ids=[name for name, _ in QUERIES])
def test_query_file_starts_with_a_comment_saying_what_it_finds(name, text):
    assert text.lstrip().startswith("--"), f"{name}.sql needs a leading -- comment"
    assert name == name.lower() and " " not in name


CEQL = [(name, text) for name, text in QUERIES if front.dialect_of(text) == "ceql"]
MATCH_RECOGNIZE = [(name, text) for name, text in QUERIES if front.dialect_of(text) == "match_recognize"]


@pytest.mark.parametrize("name, text", CEQL, ids=[name for name, _ in CEQL])
def test_query_finds_well_formed_matches_in_demo_data(name, text, tables):
    result = cerql.run(text, tables_for(text, tables), engine="reference")
    local = cerql.run(text, tables_for(text, tables), engine="local")

    assert len(result) > 0
    if " ANY " not in text:
        pd.testing.assert_frame_equal(local, result)
    else:
        assert list(local["match_end"]) == list(result["match_end"])
    partition = list(ast.select_of(cerql.parse(text)).partition_by)
    assert list(result.columns[: len(partition) + 3]) == partition + [
        "match_id", "match_start", "match_end"]
    assert (result["match_start"] <= result["match_end"]).all()
    assert result["match_id"].is_unique


def test_sql_directory_has_match_recognize_queries():
    assert len(MATCH_RECOGNIZE) >= 2
    assert all("match_recognize" in name for name, _ in MATCH_RECOGNIZE)  # the dialect shows in the name


@pytest.mark.parametrize("name, text", MATCH_RECOGNIZE, ids=[name for name, _ in MATCH_RECOGNIZE])
def test_match_recognize_query_finds_matches_in_demo_data(name, text, tables):
    used = tables_for(text, tables)
    assert list(used) == source_names(text) and len(used) == 1
    local = cerql.run(text, used, engine="local")
    reference = cerql.run(text, used, engine="reference")

    assert len(local) > 0
    pd.testing.assert_frame_equal(local, reference)  # the query orders its rows: equal in order too
    clause = parse_match_recognize(text).clause
    assert not clause.source_is_query


def test_match_recognize_v_shapes_are_vs():
    # every V of stock_v_shape_match_recognize: prices fall at least 3 trades, then rise at least 3
    text = (sql_dir() / "stock_v_shape_match_recognize.sql").read_text()
    result = cerql.run(text, tables_for(text, demo_tables(2000)))
    assert len(result) > 0
    assert ((result.downs >= 3) & (result.ups >= 3)).all()
    assert ((result.bottom < result.start_price) & (result.bottom < result.end_price)).all()
    assert (result.start_ts < result.end_ts).all()


def test_match_recognize_demo_runs_and_shows_its_rows():
    lines = []
    directory = sql_dir()
    summaries = run_demo(out=lines.append, n_rows=300, engine="local", show=2, directory=directory)
    by_name = {s["query"]: s for s in summaries}
    for name, _ in MATCH_RECOGNIZE:
        assert by_name[name]["error"] is None and by_name[name]["matches"] > 0
    text = "\n".join(lines)
    assert "== stock_v_shape_match_recognize: MATCH_RECOGNIZE: a dip then a climb" in text
    assert " start_price " in text  # its first rows, shown without a match_id column


def test_stock_sell_buy_roundtrip_consumes_each_trade_once():
    # Seconds after 09:30. MSFT: (0 -> 3) is the first round trip; (0 -> 5) and (0 -> 12) start
    # at a consumed trade; (8 -> 12) is the second; 8 -> 40 is wider than 20 s. INTC: 1 -> 30
    # is too wide, 9 is too small a buy, 35 -> 50 matches.
    rows = [
        (0, "SELL", "MSFT", 101.0, 500),
        (1, "SELL", "INTC", 47.0, 1000),
        (3, "BUY", "MSFT", 102.0, 500),
        (5, "BUY", "MSFT", 101.5, 1000),
        (8, "SELL", "MSFT", 100.0, 600),
        (9, "BUY", "INTC", 47.1, 100),
        (12, "BUY", "MSFT", 99.0, 700),
        (30, "BUY", "INTC", 48.0, 500),
        (35, "SELL", "INTC", 48.5, 1000),
        (40, "BUY", "MSFT", 98.0, 500),
        (50, "BUY", "INTC", 48.2, 500),
    ]
    stock = pd.DataFrame(rows, columns=["sec", "type", "name", "price", "volume"])
    stock["ts"] = pd.Timestamp("2024-03-01 09:30") + pd.to_timedelta(stock.pop("sec"), unit="s")
    text = (sql_dir() / "stock_sell_buy_roundtrip.sql").read_text()

    result = cerql.run(text, {"stock": stock}, engine="reference")

    start = pd.Timestamp("2024-03-01 09:30")
    seconds = lambda col: [int((t - start).total_seconds()) for t in result[col]]  # noqa: E731
    assert list(result.columns) == ["name", "match_id", "match_start", "match_end", "s", "b"]
    assert result["name"].tolist() == ["INTC", "MSFT", "MSFT"]
    assert seconds("match_start") == [35, 0, 8]
    assert seconds("match_end") == [50, 3, 12]
    assert [s["price"] for s in result["s"]] == [48.5, 101.0, 100.0]
    assert [b["price"] for b in result["b"]] == [48.2, 102.0, 99.0]
    assert set(result["s"][0]) == {"type", "name", "price", "volume", "ts"}
