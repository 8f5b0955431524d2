"""A pattern that binds no variable still gives its matches (issue 34, item 6).

``SELECT * FROM s WHERE NOT (SELL)`` was refused with EMPTY_SELECT: the atom of NOT binds
nothing, and a result used to be the events of its selected variables. CORE returns the matched
events for it (its Catch2 case for ``NOT (SELL)``), and ``SELECT *`` promises every match. Now
the analysis gives such a pattern a hidden variable that holds every event of the match
(planner/analyze.py, ``match_variable``): the rows have the match columns and no variable column,
the strategy compares the match's events, match_id hashes them (docs/language.md, "SELECT").
Every expected interval is derived by hand; positions equal ``ts``.
"""

from __future__ import annotations

import pytest

import cerql
from cerql.planner.analyze import MATCH_VARIABLE
from tests.support import typed_stream

MATCH_COLUMNS = ["match_id", "match_start", "match_end"]

# SELL BUY SELL X BUY: the events that are not a SELL are at 1, 3 and 4
STREAM = "SELL BUY SELL X BUY"


def run(query: str, spec: str, engine: str, **columns):
    return cerql.run(query, {"s": typed_stream(spec, **columns)}, engine=engine)


def intervals(df) -> list[tuple[int, int]]:
    return sorted(zip(df.match_start, df.match_end))


def test_not_alone_gives_one_row_per_event_it_matches(engine):
    df = run("SELECT * FROM s WHERE NOT (SELL) ORDER BY ts", STREAM, engine)
    assert list(df.columns) == MATCH_COLUMNS
    assert intervals(df) == [(1, 1), (3, 3), (4, 4)]
    assert len(set(df.match_id)) == 3


def test_not_with_a_filter(engine):
    # NOT (SELL FILTER SELL[v > 5]): every event but the SELL at 2 (v = 9); the SELL at 0 has v = 1
    df = run("SELECT * FROM s WHERE NOT (SELL FILTER SELL[v > 5]) ORDER BY ts", STREAM, engine,
             v=[1, 0, 9, 0, 0])
    assert intervals(df) == [(0, 0), (1, 1), (3, 3), (4, 4)]


def test_a_select_list_without_variables_reads_the_same_matches(engine):
    # the items only choose columns, as for any pattern (docs/language.md, "SELECT")
    query = "FROM s WHERE NOT (SELL) ; NOT (SELL) ORDER BY ts"
    star = run(f"SELECT * {query}", STREAM, engine)
    assert intervals(star) == [(1, 3), (1, 4), (3, 4)]
    df = run(f"SELECT match_end - match_start AS took, 1 AS one {query}", STREAM, engine)
    assert list(df.columns) == MATCH_COLUMNS + ["took", "one"]
    assert sorted(zip(df.match_start, df.match_end, df.took, df.one)) == [(1, 3, 2, 1), (1, 4, 3, 1), (3, 4, 1, 1)]
    assert sorted(df.match_id) == sorted(star.match_id)
    assert list(run(f"SELECT match_start {query}", STREAM, engine).columns) == MATCH_COLUMNS


def test_matches_are_told_apart_by_their_events(engine):
    # B B B B, three non-A events in sequence: {0,1,2} over (0,2), {1,2,3} over (1,3) and the two
    # over (0,3), {0,1,3} and {0,2,3}, which are two rows as they hold different events
    df = run("SELECT * FROM s WHERE NOT (A) ; NOT (A) ; NOT (A) ORDER BY ts", "B B B B", engine)
    assert intervals(df) == [(0, 2), (0, 3), (0, 3), (1, 3)]
    assert len(set(df.match_id)) == 4


@pytest.mark.parametrize("strategy, expected", [
    # ends at 3: {1, 3}; ends at 4: {1, 4} and {3, 4}: NEXT keeps the one with 1, LAST the one with 3
    ("NEXT", [(1, 3), (1, 4)]),
    ("LAST", [(1, 3), (3, 4)]),
    ("STRICT", [(3, 4)]),
    ("MAX", [(1, 3), (1, 4), (3, 4)]),
])
def test_strategies_compare_the_events_of_the_match(engine, strategy, expected):
    df = run(f"SELECT {strategy} * FROM s WHERE NOT (SELL) ; NOT (SELL) ORDER BY ts", STREAM, engine)
    assert intervals(df) == expected


def test_window_consume_and_limit(engine):
    query = "SELECT * FROM s WHERE NOT (SELL) ; NOT (SELL) ORDER BY ts"
    assert intervals(run(f"{query} WITHIN 2 EVENTS", STREAM, engine)) == [(1, 3), (3, 4)]
    # CONSUME BY ANY: (1, 3) consumes up to position 3, and both matches ending at 4, (1, 4)
    # and (3, 4), start at or before it
    assert intervals(run(f"{query} CONSUME BY ANY", STREAM, engine)) == [(1, 3)]
    assert intervals(run(f"{query} LIMIT 1", STREAM, engine)) == [(1, 3)]


def test_unless_around_a_pattern_without_variables(engine):
    # the pairs of B C B B whose interval holds no C (at 1): only (2, 3)
    df = run("SELECT * FROM s WHERE (NOT (A) ; NOT (A)) UNLESS C ORDER BY ts", "B C B B", engine)
    assert intervals(df) == [(2, 3)]


def test_the_hidden_variable_is_not_selectable_nor_a_clash():
    analysis = cerql.analyze("SELECT * FROM s WHERE NOT (A) ORDER BY ts")
    assert analysis.outputs == ()
    assert analysis.selected == (MATCH_VARIABLE,)
    with pytest.raises(cerql.AnalysisError) as err:
        cerql.analyze(f"SELECT {MATCH_VARIABLE} FROM s WHERE NOT (A) ORDER BY ts")
    assert err.value.error_class == "UNKNOWN_VARIABLE"
    # a name UNLESS's right side hides is not reused
    inner = cerql.analyze(f"SELECT * FROM s WHERE NOT (A) UNLESS B AS {MATCH_VARIABLE} ORDER BY ts")
    assert inner.selected != (MATCH_VARIABLE,) and inner.selected[0].startswith(MATCH_VARIABLE)


def test_a_pattern_with_variables_is_unchanged():
    analysis = cerql.analyze("SELECT * FROM s WHERE NOT (A) ; C AS c ORDER BY ts")
    assert analysis.selected == ("c",)
    assert MATCH_VARIABLE not in analysis.variables


@pytest.mark.spark
def test_spark_gives_the_same_rows(spark):
    frame = typed_stream(STREAM)
    for query in ["SELECT * FROM s WHERE NOT (SELL) ORDER BY ts",
                  "SELECT NEXT 1 AS one FROM s WHERE NOT (SELL) ; NOT (SELL) ORDER BY ts"]:
        on_spark = cerql.cer_sql(spark, query, s=spark.createDataFrame(frame).coalesce(1))
        local = cerql.run(query, {"s": frame})
        assert on_spark.columns == list(local.columns)
        got = on_spark.toPandas()
        assert intervals(got) == intervals(local)
        # one partition: Spark's row ids are the local ordinals, so match_id is the same
        assert sorted(got.match_id) == sorted(local.match_id)
