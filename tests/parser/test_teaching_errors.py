"""Errors that teach (issue 34, item 1): the mistakes a SQL or MATCH_RECOGNIZE user makes.

Each case is a query as such a user writes it, the error class cerql gives (parser/teach.py),
where the caret goes, and the CEQL the hint writes. The hint's query is then run on a small
DataFrame and must give the rows the user meant, derived by hand (positions equal ``ts``).
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

import cerql

# FAIL FAIL FAIL OK FAIL FAIL: one run of three FAILs (0-2), one of two (4-5)
S = pd.DataFrame({"type": ["FAIL", "FAIL", "FAIL", "OK", "FAIL", "FAIL"], "ts": range(6),
                  "amount": [5, 20, 30, 1, 15, 2], "user": ["u", "v", "u", "u", "v", "v"]})


def error(query: str) -> cerql.CeqlError:
    with pytest.raises(cerql.CeqlError) as info:
        cerql.analyze(query)
    return info.value


def suggested(err: cerql.CeqlError) -> str:
    """The query the hint writes (after 'write: ' or 'the query: ')."""
    m = re.search(r"(?:write|the query): (SELECT .*)$", err.hint)
    assert m, err.hint
    return m.group(1)


def rows(query: str, **kw) -> list[tuple]:
    df = cerql.run(query, {"s": S}, **kw)
    return sorted(zip(df.match_start, df.match_end))


# (query, error class, column of the caret, the query the hint must write)
CASES = [
    # a comparison in WHERE: `amount >` was read as source>type
    ("SELECT * FROM s WHERE amount > 10 ORDER BY ts", "CONDITION_IN_WHERE", 32,
     "SELECT * FROM s WHERE s AS x FILTER x[amount > 10] ORDER BY ts"),
    ("SELECT * FROM s WHERE amount = 20 ORDER BY ts", "CONDITION_IN_WHERE", 30,
     "SELECT * FROM s WHERE s AS x FILTER x[amount = 20] ORDER BY ts"),
    ("SELECT * FROM s WHERE type = 'OK' ORDER BY ts", "CONDITION_IN_WHERE", 28,
     "SELECT * FROM s WHERE OK AS x ORDER BY ts"),
    ("SELECT * FROM s WHERE FAIL AS a AND a.amount > 10 ORDER BY ts", "CONDITION_IN_WHERE", 38,
     "SELECT * FROM s WHERE FAIL AS a FILTER a.amount > 10 ORDER BY ts"),
    ("SELECT * FROM s WHERE FAIL AS a ; OK AS b WHERE a.amount > 10 ORDER BY ts", "CONDITION_IN_WHERE", 43,
     "SELECT * FROM s WHERE FAIL AS a ; OK AS b FILTER a.amount > 10 ORDER BY ts"),
    # quantifiers of regular expressions and MATCH_RECOGNIZE
    ("SELECT * FROM s WHERE FAIL{3} ORDER BY ts", "QUANTIFIER_NOT_SUPPORTED", 27,
     "SELECT * FROM s WHERE (FAIL :+ AS fail FILTER count(fail) = 3) ORDER BY ts"),
    ("SELECT * FROM s WHERE FAIL{3,} AS f ORDER BY ts", "QUANTIFIER_NOT_SUPPORTED", 27,
     "SELECT * FROM s WHERE (FAIL :+ AS f FILTER count(f) >= 3) ORDER BY ts"),
    ("SELECT * FROM s WHERE OK ; F{1,2} ORDER BY ts", "QUANTIFIER_NOT_SUPPORTED", 29,
     "SELECT * FROM s WHERE OK ; (F :+ AS f FILTER count(f) >= 1 AND count(f) <= 2) ORDER BY ts"),
    # SQL clauses CEQL has not
    ("SELECT * FROM s WHERE FAIL AS f GROUP BY user ORDER BY ts", "GROUP_BY_NOT_SUPPORTED", 33,
     "SELECT * FROM s WHERE FAIL AS f PARTITION BY [user] ORDER BY ts"),
    ("SELECT * FROM s WHERE FAIL+ AS f ORDER BY ts HAVING count(f) >= 3", "HAVING_NOT_SUPPORTED", 46,
     "SELECT * FROM s WHERE FAIL+ AS f FILTER count(f) >= 3 ORDER BY ts"),
    # clause order
    ("SELECT * FROM s WHERE FAIL ; FAIL ORDER BY ts WITHIN 1 EVENTS PARTITION BY [user]", "CLAUSE_ORDER", 63,
     "SELECT * FROM s WHERE FAIL ; FAIL PARTITION BY [user] ORDER BY ts WITHIN 1 EVENTS"),
    ("SELECT * FROM s WHERE FAIL ; FAIL WITHIN 1 EVENTS ORDER BY ts", "CLAUSE_ORDER", 51,
     "SELECT * FROM s WHERE FAIL ; FAIL ORDER BY ts WITHIN 1 EVENTS"),
    ("SELECT * FROM s WHERE FAIL ORDER BY ts LIMIT 2 CONSUME BY ANY", "CLAUSE_ORDER", 48,
     "SELECT * FROM s WHERE FAIL ORDER BY ts CONSUME BY ANY LIMIT 2"),
    # misspelled strategy and keywords
    ("SELECT NEXTT * FROM s WHERE FAIL AS a ; OK AS b ORDER BY ts", "MISSPELLED_KEYWORD", 8,
     "SELECT NEXT * FROM s WHERE FAIL AS a ; OK AS b ORDER BY ts"),
    ("SELECT * FROM s WHERE FAIL ; FAIL ORDER BY ts WITHN 1 EVENTS", "MISSPELLED_KEYWORD", 47,
     "SELECT * FROM s WHERE FAIL ; FAIL ORDER BY ts WITHIN 1 EVENTS"),
    ("SELECT * FROM s WHERE FAIL AS f ORDR BY ts", "MISSPELLED_KEYWORD", 33,
     "SELECT * FROM s WHERE FAIL AS f ORDER BY ts"),
    # MATCH_RECOGNIZE's concatenation and alternation, NOT without parentheses
    ("SELECT * FROM s WHERE OK FAIL ORDER BY ts", "MISSING_OPERATOR", 26,
     "SELECT * FROM s WHERE OK ; FAIL ORDER BY ts"),
    ("SELECT * FROM s WHERE OK | OTHER ORDER BY ts", "ALTERNATION_BAR", 26,
     "SELECT * FROM s WHERE OK OR OTHER ORDER BY ts"),
    ("SELECT * FROM s WHERE NOT FAIL ORDER BY ts", "NOT_WITHOUT_PARENTHESES", 27,
     "SELECT * FROM s WHERE NOT (FAIL) ORDER BY ts"),
]


@pytest.mark.parametrize("query, error_class, column, fixed", CASES, ids=[c[1] + "-" + str(i) for i, c in enumerate(CASES)])
def test_the_error_names_the_mistake_and_writes_the_ceql(query, error_class, column, fixed):
    err = error(query)
    assert isinstance(err, cerql.ParseError)
    assert err.error_class == error_class
    assert (err.line, err.column) == (1, column)
    assert suggested(err) == fixed
    assert "^" in str(err) and "Hint: " in str(err)
    cerql.analyze(fixed)  # the CEQL the hint writes is CEQL


def test_a_comparison_in_where_says_what_cerql_read():
    err = error("SELECT * FROM s WHERE amount > 10 ORDER BY ts")
    assert "amount>" in err.message and "S>T" in err.message
    assert "FILTER x[amount > 10]" in err.hint
    # the suggestion keeps the rows with amount > 10: 1, 2 and 4
    assert rows(suggested(err)) == [(1, 1), (2, 2), (4, 4)]


def test_the_suggested_ceql_gives_the_rows_meant():
    # type = 'OK': the OK row
    assert rows(suggested(error("SELECT * FROM s WHERE type = 'OK' ORDER BY ts"))) == [(3, 3)]
    # FAIL AS a AND a.amount > 10: the FAILs at 1, 2, 4
    assert rows(suggested(error("SELECT * FROM s WHERE FAIL AS a AND a.amount > 10 ORDER BY ts"))) == [
        (1, 1), (2, 2), (4, 4)]
    # GROUP BY user -> PARTITION BY [user]: FAIL ; FAIL within a user, u: 0, 2; v: 1, 4, 5
    fixed = suggested(error("SELECT * FROM s WHERE FAIL AS a ; FAIL AS b GROUP BY user ORDER BY ts"))
    assert rows(fixed) == [(0, 2), (1, 4), (1, 5), (4, 5)]
    # clause order: FAIL ; FAIL within 1 event of each other in a user's rows: u's rows are 0, 2, 3,
    # so (0, 2); v's are 1, 4, 5, so (1, 4) and (4, 5)
    fixed = suggested(error("SELECT * FROM s WHERE FAIL ; FAIL ORDER BY ts WITHIN 1 EVENTS PARTITION BY [user]"))
    assert rows(fixed) == [(0, 2), (1, 4), (4, 5)]
    # NEXTT -> NEXT
    assert rows(suggested(error("SELECT NEXTT * FROM s WHERE FAIL AS a ; OK AS b ORDER BY ts"))) == [(0, 3)]


def test_three_or_more_in_a_row():
    # F{3,} on FAIL FAIL FAIL OK FAIL FAIL: the only run of 3 back-to-back FAILs is 0-2
    err = error("SELECT * FROM s WHERE FAIL{3,} AS f ORDER BY ts")
    assert "(FAIL :+ AS f FILTER count(f) >= 3)" in err.hint
    assert rows(suggested(err)) == [(0, 2)]
    # exactly two: 0-1, 1-2 and 4-5
    assert rows(suggested(error("SELECT * FROM s WHERE FAIL{2} ORDER BY ts"))) == [(0, 1), (1, 2), (4, 5)]
    # inside a sequence: OK, then a run of one or two FAILs anywhere after it: 4, 5, 4-5
    assert rows(suggested(error("SELECT * FROM s WHERE OK ; FAIL{1,2} ORDER BY ts"))) == [(3, 4), (3, 5), (3, 5)]


def test_having_becomes_a_filter_that_runs():
    # FAIL+ with at least 3 events: subsets of the FAILs 0, 1, 2, 4, 5 of size >= 3, counted by end
    fixed = suggested(error("SELECT * FROM s WHERE FAIL+ AS f ORDER BY ts HAVING count(f) >= 3"))
    df = cerql.run(fixed, {"s": S})
    assert all(len(f) >= 3 for f in df.f)
    assert len(df) == 16  # 2^5 - 1 nonempty subsets, minus 5 singletons and 10 pairs


def test_group_and_star_quantifiers_name_the_alternatives():
    err = error("SELECT * FROM s WHERE (OK ; FAIL){2} ORDER BY ts")
    assert err.error_class == "QUANTIFIER_NOT_SUPPORTED"
    assert "(OK ; FAIL) ; (OK ; FAIL)" in err.hint
    err = error("SELECT * FROM s WHERE OK ; FAIL* ORDER BY ts")
    assert err.error_class == "QUANTIFIER_NOT_SUPPORTED" and "OR" in err.hint and "FAIL+" in err.hint


def test_join_in_from():
    err = error("SELECT * FROM s JOIN t ON s.id = t.id WHERE A ; B")
    assert (err.error_class, err.column) == ("JOIN_NOT_SUPPORTED", 17)
    assert "FROM s, t" in err.hint and "FILTER y.id = x.id" in err.hint and "PARTITION BY [id]" in err.hint
    # the hint's pattern over two sources: each s row, then a later t row with the same id
    s = pd.DataFrame({"id": [1, 2], "ts": [0, 1]})
    t = pd.DataFrame({"id": [2, 1], "ts": [2, 3]})
    df = cerql.run("SELECT * FROM s, t WHERE s AS x ; t AS y FILTER y.id = x.id ORDER BY ts", {"s": s, "t": t})
    assert sorted(zip(df.match_start, df.match_end)) == [(0, 3), (1, 2)]


def test_match_recognize():
    for query in ["SELECT * FROM s MATCH_RECOGNIZE (PARTITION BY user ORDER BY ts PATTERN (A B+) "
                  "DEFINE B AS B.amount > A.amount)",
                  "SELECT * FROM s WHERE PATTERN (A B+) DEFINE B AS B.amount > A.amount"]:
        err = error(query)
        assert err.error_class == "MATCH_RECOGNIZE_SYNTAX_IN_CEQL"
        assert "WHERE s AS a : s :+ AS b FILTER b.x > a.x" in err.hint
    # the translation runs: a row, then a run of rows right after it, each above it (amounts 5 20 30 1 15 2:
    # 5 < 20, 30; 20 < 30; 1 < 15, 2)
    df = cerql.run("SELECT * FROM s WHERE s AS a : s :+ AS b FILTER b.amount > a.amount ORDER BY ts", {"s": S})
    assert sorted(zip(df.match_start, df.match_end)) == [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5)]


# MATCH_RECOGNIZE's clauses in a CEQL query: (query, column of the caret, the item the hint writes)
MR_IN_CEQL = [
    ("SELECT * FROM s WHERE PATTERN (A B) DEFINE B AS B.amount > PREV(B.amount)", 23,
     "SELECT * FROM s MATCH_RECOGNIZE (ALL ROWS PER MATCH PATTERN (A B) DEFINE B AS B.amount > PREV(B.amount))"),
    # PARTITION BY and ORDER BY after the pattern, as CEQL places them
    ("SELECT * FROM s WHERE PATTERN (A B) DEFINE B AS B.amount > PREV(B.amount) PARTITION BY user ORDER BY ts", 23,
     "SELECT * FROM s MATCH_RECOGNIZE (PARTITION BY user ORDER BY ts PATTERN (A B) DEFINE B AS B.amount > "
     "PREV(B.amount))"),
    # the item's clauses written straight after FROM: the caret where the item's clauses begin
    ("SELECT * FROM s PARTITION BY user ORDER BY ts MEASURES count(B.*) AS n PATTERN (A B+) "
     "DEFINE B AS B.amount > PREV(B.amount)", 17,
     "SELECT * FROM s MATCH_RECOGNIZE (PARTITION BY user ORDER BY ts MEASURES count(B.*) AS n PATTERN (A B+) "
     "DEFINE B AS B.amount > PREV(B.amount))"),
    ("SELECT * FROM s WHERE MEASURES count(B.*) AS n PATTERN (A B+) DEFINE B AS B.amount > PREV(B.amount)", 23,
     "SELECT * FROM s MATCH_RECOGNIZE (MEASURES count(B.*) AS n PATTERN (A B+) DEFINE B AS B.amount > "
     "PREV(B.amount))"),
]


@pytest.mark.parametrize("query, column, item", MR_IN_CEQL, ids=[f"mr-in-ceql-{i}" for i in range(len(MR_IN_CEQL))])
def test_match_recognize_clauses_in_ceql_point_to_the_item(query, column, item):
    err = error(query)
    assert isinstance(err, cerql.ParseError)
    assert (err.error_class, err.line, err.column) == ("MATCH_RECOGNIZE_SYNTAX_IN_CEQL", 1, column)
    assert "FROM s MATCH_RECOGNIZE (...)" in err.message
    written = re.search(r"write: (SELECT .*?); or, as CEQL", err.hint)
    assert written and written.group(1) == item, err.hint
    assert cerql.explain(item)  # the item the hint writes is MATCH_RECOGNIZE cerql runs


def test_the_match_recognize_the_hint_writes_finds_the_rows_meant():
    # amounts 5 20 30 1 15 2, per user u: 5 30 1 (ts 0 2 3), v: 20 15 2 (ts 1 4 5); a row, then rows each
    # above the one before: u's 5 -> 30 (ts 0-2); v's amounts only fall
    err = error("SELECT * FROM s WHERE PATTERN (A B+) DEFINE B AS B.amount > PREV(B.amount) PARTITION BY user "
                "ORDER BY ts MEASURES FIRST(ts) AS match_start, LAST(ts) AS match_end")
    item = re.search(r"write: (SELECT .*?); or, as CEQL", err.hint).group(1)
    df = cerql.run(item, {"s": S})
    assert list(zip(df.user, df.match_start, df.match_end)) == [("u", 0, 2)]


def test_a_ceql_pattern_with_define_shows_the_items_shape():
    err = error("SELECT * FROM s WHERE FAIL ; OK DEFINE OK AS amount > 1")
    assert (err.error_class, err.column) == ("MATCH_RECOGNIZE_SYNTAX_IN_CEQL", 33)
    assert "write: SELECT * FROM s MATCH_RECOGNIZE ([PARTITION BY ...] ORDER BY ..." in err.hint


def test_valid_queries_are_untouched():
    # keywords as names, S>T, a FILTER with every SQL operator: no lesson fires on a valid query
    for query in ["SELECT * FROM s WHERE s>FAIL AS f FILTER f[amount > 10 AND user = 'u'] ORDER BY ts",
                  "SELECT * FROM s WHERE `group` ; having AS h ORDER BY ts",
                  "SELECT * FROM s WHERE FAIL AS a ; FAIL AS b FILTER b.amount > a.amount OR a[user IN ('u')] "
                  "PARTITION BY [user] ORDER BY ts WITHIN 3 EVENTS CONSUME BY PARTITION LIMIT 3"]:
        cerql.analyze(query)


# ---------------------------------------------------------------------------- event type case
def test_an_event_type_that_matches_only_case_insensitively_warns(engine):
    # `fail` matches no row; the rows say FAIL: the query runs (0 rows, as Spark SQL's
    # WHERE type = 'fail' would) and an EventTypeCaseWarning names the type that matches
    from cerql.errors import CeqlWarning, EventTypeCaseWarning

    with pytest.warns(EventTypeCaseWarning, match=r"Event type 'fail' \(line 1, column 23\).*'FAIL'.*write FAIL"):
        df = cerql.run("SELECT * FROM s WHERE fail AS f ORDER BY ts", {"s": S}, engine=engine)
    assert len(df) == 0
    assert issubclass(EventTypeCaseWarning, CeqlWarning) and issubclass(CeqlWarning, UserWarning)


def test_no_warning_when_the_type_matches_or_nothing_is_close(engine, recwarn):
    from cerql.errors import CeqlWarning

    cerql.run("SELECT * FROM s WHERE FAIL AS f ; OTHER ORDER BY ts", {"s": S}, engine=engine)  # OTHER: no row at all
    cerql.run("SELECT * FROM s WHERE fail ORDER BY ts", {"s": S.iloc[:0]}, engine=engine)  # an empty source
    assert not [w for w in recwarn if issubclass(w.category, CeqlWarning)]
