"""The example queries in sql/: each runs over the demo data and finds well-formed matches.

A smoke test per file (parametrised by file name) and one exact test of
``stock_sell_buy_roundtrip.sql`` on a hand-written table whose matches were worked out by hand.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql import ast
from cerql.cli.demo import demo_tables, load_queries, sql_dir, tables_for

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


@pytest.mark.parametrize("name, text", QUERIES, ids=[name for name, _ in QUERIES])
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
