"""A SELECT list that reads no variable (issue 38, item 2), on every engine without Spark.

``SELECT 1 AS one``, ``SELECT match_id AS m``, ``SELECT match_end - match_start AS span`` and
``SELECT match_start`` read no variable. They used to return no row at all, without a word (a
result that selects no variable is dropped), or fail with EMPTY_SELECT. The decision
(docs/semantics.md, "Results"): such a SELECT shows one row for every result ``SELECT *`` gives
with the same strategy, CONSUME BY, WITHIN and LIMIT; its results are ``SELECT *``'s (the same
match_id), and the SELECT items only choose the columns. Every expected value is derived by hand;
positions equal ``ts``. Spark: tests/spark/test_spark_engine.py.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from tests.support import typed_stream


def run(query: str, frame, engine: str):
    return cerql.run(query, {"s": frame}, engine=engine)


def intervals(df) -> list[tuple]:
    return sorted(zip(df.match_start, df.match_end))


def ids(df) -> list[int]:
    return sorted(df.match_id)


ONE_MATCH = "FROM s WHERE A AS a ; B AS b ORDER BY ts"  # over A B A: a = 0, b = 1, the only match


@pytest.mark.parametrize("items, column, value", [
    ("match_end - match_start AS span", "span", 1),
    ("1 AS one", "one", 1),
    ("match_id AS m", "m", None),  # None: the row's own match_id
])
def test_an_item_that_reads_no_variable_shows_the_one_match(engine, items, column, value):
    s = typed_stream("A B A")
    df = run(f"SELECT {items} {ONE_MATCH}", s, engine)
    assert list(df.columns) == ["match_id", "match_start", "match_end", column]
    assert intervals(df) == [(0, 1)]
    assert df[column][0] == (df.match_id[0] if value is None else value)
    assert ids(df) == ids(run(f"SELECT * {ONE_MATCH}", s, engine))


@pytest.mark.parametrize("item", ["match_start", "match_end", "match_id"])
def test_a_bare_match_column_is_no_longer_empty_select(engine, item):
    # match_* are in every row already, so the item adds no column: the row is the match's
    s = typed_stream("A B A")
    df = run(f"SELECT {item} {ONE_MATCH}", s, engine)
    assert list(df.columns) == ["match_id", "match_start", "match_end"]
    assert intervals(df) == [(0, 1)]
    assert ids(df) == ids(run(f"SELECT * {ONE_MATCH}", s, engine))


# A B A B: ALL has (0,1), (0,3), (2,3); NEXT keeps a=0 at 3, LAST and STRICT a=2; MAX keeps all
# (docs/language.md, "Selection strategies")
@pytest.mark.parametrize("strategy, expected", [
    ("ALL", [(0, 1), (0, 3), (2, 3)]),
    ("NEXT", [(0, 1), (0, 3)]),
    ("LAST", [(0, 1), (2, 3)]),
    ("STRICT", [(0, 1), (2, 3)]),
    ("MAX", [(0, 1), (0, 3), (2, 3)]),
])
def test_every_result_of_star_under_the_strategy_is_a_row(engine, strategy, expected):
    s = typed_stream("A B A B")
    tail = "FROM s WHERE A AS a ; B AS b ORDER BY ts"
    df = run(f"SELECT {strategy} match_id AS m, 1 AS one {tail}", s, engine)
    assert intervals(df) == expected
    assert list(df.one) == [1] * len(expected)
    assert sorted(df.m) == ids(df) == ids(run(f"SELECT {strategy} * {tail}", s, engine))


def test_the_results_are_those_of_star_not_of_fewer_variables(engine):
    # A B B C, A AS a ; B ; C AS c: * selects a, B and c, so there are two results (B = 1, B = 2),
    # both over [0, 3]; SELECT a, c would merge them into one
    s = typed_stream("A B B C")
    tail = "FROM s WHERE A AS a ; B ; C AS c ORDER BY ts"
    df = run(f"SELECT 1 AS one {tail}", s, engine)
    assert intervals(df) == [(0, 3), (0, 3)]
    assert ids(df) == ids(run(f"SELECT * {tail}", s, engine))
    assert len(run(f"SELECT a, c {tail}", s, engine)) == 1


def test_max_compares_the_events_of_star(engine):
    # A A B, A+ AS a ; B AS b: ALL a = {0}, {1}, {0, 1}; MAX keeps a = {0, 1}
    s = typed_stream("A A B")
    tail = "FROM s WHERE A+ AS a ; B AS b ORDER BY ts"
    assert intervals(run(f"SELECT match_id AS m {tail}", s, engine)) == [(0, 2), (0, 2), (1, 2)]
    df = run(f"SELECT MAX match_end - match_start AS span {tail}", s, engine)
    assert intervals(df) == [(0, 2)]
    assert list(df.span) == [2]


def test_partition_by_column_alone_and_in_expressions(engine):
    # A A B B with k = 1 2 1 2: k = 1 has A0 ; B2, k = 2 has A1 ; B3
    s = typed_stream("A A B B", k=[1, 2, 1, 2])
    tail = "FROM s WHERE A ; B PARTITION BY [k] ORDER BY ts"
    df = run(f"SELECT k {tail}", s, engine)  # k is in every row already
    assert list(df.columns) == ["k", "match_id", "match_start", "match_end"]
    assert sorted(zip(df.k, df.match_start, df.match_end)) == [(1, 0, 2), (2, 1, 3)]
    assert ids(df) == ids(run(f"SELECT * {tail}", s, engine))
    df = run(f"SELECT LAST k * 10 AS key, match_end - match_start AS span {tail}", s, engine)
    assert sorted(zip(df.k, df.key, df.span)) == [(1, 10, 2), (2, 20, 2)]


def test_consume_by_and_limit_count_the_rows_of_star(engine):
    # A B A B: CONSUME BY PARTITION outputs (0,1), which consumes position 1, so (0,3) is out and
    # (2,3) stays; LIMIT 2 takes the first two by (match_end, match_start): (0,1), (0,3)
    s = typed_stream("A B A B")
    df = run("SELECT 1 AS one FROM s WHERE A AS a ; B AS b ORDER BY ts CONSUME BY PARTITION", s, engine)
    assert intervals(df) == [(0, 1), (2, 3)]
    df = run("SELECT match_id AS m FROM s WHERE A AS a ; B AS b ORDER BY ts LIMIT 2", s, engine)
    assert list(zip(df.match_start, df.match_end)) == [(0, 1), (0, 3)]


@pytest.mark.parametrize("items", ["*", "match_start"])
def test_a_pattern_that_binds_nothing_gives_its_match_rows(items, engine):
    # NOT (A) binds no event (issue 34, item 6): each match is still a row, as SELECT * promises
    s = pd.DataFrame({"type": ["A", "B", "A", "C"], "ts": range(4)})
    df = run(f"SELECT {items} FROM s WHERE NOT (A) ORDER BY ts", s, engine)
    assert list(zip(df.match_start, df.match_end)) == [(1, 1), (3, 3)]
    assert not [c for c in df.columns if c not in ("match_id", "match_start", "match_end")]
