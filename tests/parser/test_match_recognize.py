"""MATCH_RECOGNIZE text to cerql.mr_ast (parser/match_recognize.py, match_recognize.lark, mr_expr.py).

Expected trees are built by hand; a SqlExpr compares by its text only, so each expression's
sqlglot tree is checked separately where its shape is the contract (cerql/mr_ast.py docstring).
"""

from __future__ import annotations

import pytest
from sqlglot import exp

from cerql import mr_ast as mr
from cerql.ast import SqlExpr
from cerql.errors import CeqlError, ParseError, UnsupportedError
from cerql.parser.match_recognize import is_match_recognize, parse_match_recognize

V = mr.PatternVar


def q(*items: mr.RowPattern) -> mr.Concat:
    return mr.Concat(tuple(items))


def clause(body: str, source: str = "t") -> mr.MatchRecognize:
    return parse_match_recognize(f"SELECT * FROM {source} MATCH_RECOGNIZE ({body}) AS m").clause


def pattern(text: str) -> mr.RowPattern:
    return clause(f"PATTERN ({text})").pattern


def define(condition: str) -> SqlExpr:
    return clause(f"PATTERN (A) DEFINE A AS {condition}").defines[0].condition


def measure(expression: str) -> SqlExpr:
    return clause(f"MEASURES {expression} AS x PATTERN (A)").measures[0].expr


def error(query: str) -> CeqlError:
    with pytest.raises(CeqlError) as info:
        parse_match_recognize(query)
    return info.value


# ---------------------------------------------------------------------------- the whole clause
EXAMPLE = """SELECT m.sym, m.start_ts, m.bottom, m.n
FROM ticks MATCH_RECOGNIZE (
  PARTITION BY sym ORDER BY ts
  MEASURES FIRST(ts) AS start_ts, LAST(DOWN.price) AS bottom, count(UP.*) AS n, MATCH_NUMBER() AS mno
  ONE ROW PER MATCH                       -- | ALL ROWS PER MATCH [SHOW EMPTY MATCHES | ...]
  AFTER MATCH SKIP PAST LAST ROW          -- | TO NEXT ROW | TO [FIRST | LAST] var
  PATTERN (STRT DOWN+ UP+)
  SUBSET ALLD = (STRT, DOWN)
  DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)
) AS m
WHERE m.n > 2"""


def test_the_example_query():
    got = parse_match_recognize(EXAMPLE)
    expected = mr.MatchRecognize(
        source="ticks",
        partition_by=(SqlExpr("sym"),),
        order_by=(mr.SortKey(SqlExpr("ts")),),
        measures=(mr.Measure(SqlExpr("FIRST(ts)"), "start_ts"), mr.Measure(SqlExpr("LAST(DOWN.price)"), "bottom"),
                  mr.Measure(SqlExpr("COUNT(UP.*)"), "n"), mr.Measure(SqlExpr("MATCH_NUMBER()"), "mno")),
        rows_per_match=mr.RowsPerMatch(mr.ONE_ROW),
        after_match=mr.AfterMatchSkip(mr.PAST_LAST_ROW),
        pattern=q(V("STRT"), mr.Quantified(V("DOWN"), 1, None), mr.Quantified(V("UP"), 1, None)),
        subsets=(mr.Subset("ALLD", ("STRT", "DOWN")),),
        defines=(mr.Define("DOWN", SqlExpr("price < PREV(price)")), mr.Define("UP", SqlExpr("price > PREV(price)"))),
        alias="m",
    )
    assert got.clause == expected
    assert got.clause.variables == ("STRT", "DOWN", "UP")
    assert got.placeholder == "__cerql_mr_0"
    assert got.outer_sql == "SELECT m.sym, m.start_ts, m.bottom, m.n\nFROM __cerql_mr_0 AS m\nWHERE m.n > 2"
    assert got.text == EXAMPLE
    assert got.clause.span.start == EXAMPLE.index("ticks") and got.clause.span.end == EXAMPLE.index(") AS m\n") + 6
    assert (got.clause.span.line, got.clause.span.column) == (2, 6)


def test_every_expression_knows_where_it_was_written():
    got = parse_match_recognize(EXAMPLE).clause
    exprs = [*got.partition_by, got.order_by[0].expr, *(m.expr for m in got.measures),
             *(d.condition for d in got.defines)]
    for expr in exprs:
        assert EXAMPLE[expr.offset:expr.offset + len(expr.source)] == expr.source
        assert EXAMPLE[expr.span.start:expr.span.end] == expr.source
    bottom = got.measures[1].expr
    assert (bottom.span.line, bottom.span.column) == (4, 35) and bottom.source == "LAST(DOWN.price)"
    assert got.pattern.items[1].span.start == EXAMPLE.index("DOWN+")


def test_defaults():
    got = clause("PATTERN (A)")
    assert got.rows_per_match == mr.RowsPerMatch(mr.ONE_ROW) and not got.rows_per_match.all_rows
    assert got.after_match == mr.AfterMatchSkip(mr.PAST_LAST_ROW, None)
    assert (got.partition_by, got.order_by, got.measures, got.subsets, got.defines) == ((), (), (), (), ())
    assert clause("ALL ROWS PER MATCH PATTERN (A)").rows_per_match == mr.RowsPerMatch(mr.SHOW_EMPTY)


@pytest.mark.parametrize("text, mode", [
    ("ONE ROW PER MATCH", mr.ONE_ROW),
    ("ALL ROWS PER MATCH", mr.SHOW_EMPTY),
    ("ALL ROWS PER MATCH SHOW EMPTY MATCHES", mr.SHOW_EMPTY),
    ("ALL ROWS PER MATCH OMIT EMPTY MATCHES", mr.OMIT_EMPTY),
    ("all rows per match with unmatched rows", mr.WITH_UNMATCHED),
])
def test_rows_per_match(text, mode):
    assert clause(f"{text} PATTERN (A)").rows_per_match == mr.RowsPerMatch(mode)


@pytest.mark.parametrize("text, mode, variable", [
    ("PAST LAST ROW", mr.PAST_LAST_ROW, None),
    ("TO NEXT ROW", mr.TO_NEXT_ROW, None),
    ("TO FIRST B", mr.TO_FIRST, "B"),
    ("TO LAST B", mr.TO_LAST, "B"),
    ("TO B", mr.TO_LAST, "B"),
    ("to `last`", mr.TO_LAST, "last"),
])
def test_after_match_skip(text, mode, variable):
    got = clause(f"AFTER MATCH SKIP {text} PATTERN (A B)").after_match
    assert got == mr.AfterMatchSkip(mode, variable)


def test_skip_to_a_variable_is_skip_to_its_last_row():
    assert clause("AFTER MATCH SKIP TO U PATTERN (A B) SUBSET U = (A, B)") == \
        clause("AFTER MATCH SKIP TO LAST U PATTERN (A B) SUBSET U = (A, B)")


def test_order_by_directions_and_nulls():
    got = clause("PARTITION BY a, upper(b) ORDER BY ts DESC NULLS FIRST, x ASC, y NULLS LAST, z desc "
                 "PATTERN (A)")
    assert got.partition_by == (SqlExpr("a"), SqlExpr("UPPER(b)"))
    assert got.order_by == (mr.SortKey(SqlExpr("ts"), True, True), mr.SortKey(SqlExpr("x"), False, None),
                            mr.SortKey(SqlExpr("y"), False, False), mr.SortKey(SqlExpr("z"), True, None))


def test_keywords_are_case_insensitive_and_names_may_look_like_them():
    lower = parse_match_recognize("select * from t match_recognize (partition by sym order by ts measures "
                                  "last(x) as m pattern (a b+) define b as b.x > prev(b.x)) as r")
    upper = parse_match_recognize("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES "
                                  "LAST(x) AS m PATTERN (a b+) DEFINE b AS b.x > PREV(b.x)) AS r")
    assert lower.clause == upper.clause
    # a column named like a keyword, where no keyword can stand
    got = clause("ORDER BY ordering MEASURES one + last AS x PATTERN (A) DEFINE A AS final > first")
    assert got.order_by == (mr.SortKey(SqlExpr("ordering")),)
    assert got.measures == (mr.Measure(SqlExpr("one + last"), "x"),)
    assert got.defines[0].condition == SqlExpr("final > first")


# ---------------------------------------------------------------------------- row patterns
def test_concatenation_alternation_and_groups():
    assert pattern("A B C") == q(V("A"), V("B"), V("C"))
    assert pattern("A | B | C") == mr.Alternation((V("A"), V("B"), V("C")))
    assert pattern("A B | C") == mr.Alternation((q(V("A"), V("B")), V("C")))
    # parentheses are kept as written: a group is one part of what holds it
    assert pattern("(A B) C") == q(q(V("A"), V("B")), V("C"))
    assert pattern("(A | B) | C") == mr.Alternation((mr.Alternation((V("A"), V("B"))), V("C")))
    assert pattern("((A))") == V("A")
    assert pattern("(A | B)* C") == q(mr.Quantified(mr.Alternation((V("A"), V("B"))), 0, None), V("C"))


@pytest.mark.parametrize("text, low, high, greedy", [
    ("A*", 0, None, True), ("A+", 1, None, True), ("A?", 0, 1, True),
    ("A{3}", 3, 3, True), ("A{3,}", 3, None, True), ("A{,3}", 0, 3, True), ("A{2,4}", 2, 4, True),
    ("A{ 0 , 0 }", 0, 0, True),
    ("A*?", 0, None, False), ("A+?", 1, None, False), ("A??", 0, 1, False),
    ("A{3}?", 3, 3, False), ("A{3,}?", 3, None, False), ("A{,3}?", 0, 3, False), ("A{2,4}?", 2, 4, False),
])
def test_quantifiers(text, low, high, greedy):
    assert pattern(text) == mr.Quantified(V("A"), low, high, greedy)


def test_reluctant_quantifiers_in_a_pattern():
    assert pattern("A B+? C*") == q(V("A"), mr.Quantified(V("B"), 1, None, False), mr.Quantified(V("C"), 0, None))
    assert pattern("(A B)+?") == mr.Quantified(q(V("A"), V("B")), 1, None, False)


def test_permute():
    assert pattern("PERMUTE(A, B C, D | E)") == mr.Permute((V("A"), q(V("B"), V("C")), mr.Alternation((V("D"), V("E")))))
    assert pattern("permute (A, B)+") == mr.Quantified(mr.Permute((V("A"), V("B"))), 1, None)
    assert pattern("permute permute") == q(V("permute"), V("permute"))  # a name when no ( follows


def test_exclusion():
    assert pattern("A {- B+ C -} D") == q(V("A"), mr.Exclusion(q(mr.Quantified(V("B"), 1, None), V("C"))), V("D"))
    assert pattern("{- A -}*") == mr.Quantified(mr.Exclusion(V("A")), 0, None)


def test_anchors():
    assert pattern("^ A $") == q(mr.Anchor(True), V("A"), mr.Anchor(False))
    assert pattern("^|A") == mr.Alternation((mr.Anchor(True), V("A")))


@pytest.mark.parametrize("text", ["", "()", "(())", " ( ) "])
def test_the_empty_pattern(text):
    assert pattern(text) == mr.EmptyPattern()


def test_the_empty_pattern_inside_a_pattern():
    assert pattern("A () | ()") == mr.Alternation((q(V("A"), mr.EmptyPattern()), mr.EmptyPattern()))
    assert pattern("()*") == mr.Quantified(mr.EmptyPattern(), 0, None)


def test_quoted_variables():
    assert pattern("`my var`+ B") == q(mr.Quantified(V("my var"), 1, None), V("B"))


def test_subset_and_define():
    got = clause("PATTERN (A B C) SUBSET U = (A, B), W = (C) DEFINE A AS x > 1, `C` AS C.y IS NULL")
    assert got.subsets == (mr.Subset("U", ("A", "B")), mr.Subset("W", ("C",)))
    assert got.defines == (mr.Define("A", SqlExpr("x > 1")), mr.Define("C", SqlExpr("C.y IS NULL")))


# ---------------------------------------------------------------------------- expressions
def anonymous(node, name: str, arity: int):
    assert isinstance(node, exp.Anonymous), repr(node)
    assert node.name == name and len(node.expressions) == arity
    return node.expressions


def test_navigation_keeps_every_argument():
    first = define("FIRST(A.price, 2) > 0").tree.this
    column, offset = anonymous(first, "FIRST", 2)
    assert isinstance(column, exp.Column) and column.table == "A" and column.name == "price"
    assert offset == exp.Literal.number(2)
    anonymous(define("last(price) > 0").tree.this, "LAST", 1)
    anonymous(define("Prev(price, 3) > 0").tree.this, "PREV", 2)
    anonymous(define("next(price) > 0").tree.this, "NEXT", 1)


def test_nested_navigation():
    expr = define("PREV(LAST(A.price), 2) < 10")
    assert expr == SqlExpr("PREV(LAST(A.price), 2) < 10")
    inner, offset = anonymous(expr.tree.this, "PREV", 2)
    (column,) = anonymous(inner, "LAST", 1)
    assert column.table == "A" and offset == exp.Literal.number(2)


def test_classifier_and_match_number():
    anonymous(measure("CLASSIFIER()").tree, "CLASSIFIER", 0)
    (var,) = anonymous(measure("classifier(B)").tree, "CLASSIFIER", 1)
    assert isinstance(var, exp.Column) and var.name == "B"
    anonymous(measure("match_number()").tree, "MATCH_NUMBER", 0)


def test_aggregates_over_a_variable():
    tree = measure("count(A.*)").tree
    assert isinstance(tree, exp.Count)
    column = tree.this
    assert isinstance(column, exp.Column) and isinstance(column.this, exp.Star) and column.table == "A"
    assert isinstance(measure("sum(B.x) / count(*)").tree.this, exp.Sum)


@pytest.mark.parametrize("word", ["RUNNING", "FINAL", "final", "Running"])
def test_running_and_final(word):
    expr = measure(f"{word} LAST(A.price, 1)")
    assert expr == SqlExpr(f"{word.upper()}(LAST(A.price, 1))")
    (inner,) = anonymous(expr.tree, word.upper(), 1)
    anonymous(inner, "LAST", 2)
    (count,) = anonymous(measure(f"{word}  count(A.*) + 1").tree.this, word.upper(), 1)
    assert isinstance(count, exp.Count)
    (nested,) = anonymous(measure(f"PREV({word} FIRST(x))").tree, "PREV", 1)
    anonymous(anonymous(nested, word.upper(), 1)[0], "FIRST", 1)


def test_running_and_final_keep_positions():
    text = "SELECT * FROM t MATCH_RECOGNIZE (MEASURES FINAL\n  LAST(A.price) AS p PATTERN (A)) m"
    expr = parse_match_recognize(text).clause.measures[0].expr
    assert expr.source == "FINAL\n  LAST(A.price)"
    column = expr.tree.expressions[0].expressions[0]
    assert text[expr.offset + column.args["table"].meta["start"]:].startswith("A.price")


def test_names_of_row_pattern_functions_elsewhere_stay_as_written():
    expr = define("first_value(x) > last_day")
    assert isinstance(expr.tree.this, exp.FirstValue)
    assert isinstance(define("'LAST(x)' = s").tree.this, exp.Literal)


# ---------------------------------------------------------------------------- the query around it
@pytest.mark.parametrize("query, outer", [
    ("SELECT m.sym FROM t MATCH_RECOGNIZE (PATTERN (A)) AS m WHERE m.n > 2",
     "SELECT m.sym FROM __cerql_mr_0 AS m WHERE m.n > 2"),
    ("SELECT m.sym FROM t MATCH_RECOGNIZE (PATTERN (A)) m WHERE m.n > 2",
     "SELECT m.sym FROM __cerql_mr_0 AS m WHERE m.n > 2"),
    ("SELECT sym FROM t MATCH_RECOGNIZE (PATTERN (A)) WHERE n > 2", "SELECT sym FROM __cerql_mr_0 WHERE n > 2"),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) JOIN u ON 1 = 1;",
     "SELECT * FROM __cerql_mr_0 JOIN u ON 1 = 1"),
    ("SELECT * FROM db.t MATCH_RECOGNIZE (PATTERN (A)) AS `my m` ORDER BY 1",
     "SELECT * FROM __cerql_mr_0 AS `my m` ORDER BY 1"),
    ("t MATCH_RECOGNIZE (PATTERN (A))", "SELECT * FROM __cerql_mr_0"),
    ("  t MATCH_RECOGNIZE (PATTERN (A)) AS m ; ", "SELECT * FROM __cerql_mr_0 AS m"),
])
def test_outer_sql(query, outer):
    assert parse_match_recognize(query).outer_sql == outer


def test_the_alias():
    assert parse_match_recognize("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) AS m").clause.alias == "m"
    assert parse_match_recognize("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) `my m`").clause.alias == "my m"
    assert parse_match_recognize("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) WHERE x").clause.alias is None


def test_a_subquery_source():
    text = "SELECT m.x FROM (SELECT x, ts FROM t WHERE x > 0) MATCH_RECOGNIZE (ORDER BY ts PATTERN (A)) AS m"
    got = parse_match_recognize(text)
    assert got.clause.source == "SELECT x, ts FROM t WHERE x > 0" and got.clause.source_is_query
    assert got.outer_sql == "SELECT m.x FROM __cerql_mr_0 AS m"
    assert got.clause.span.start == text.index("(SELECT")


def test_a_table_source():
    got = parse_match_recognize("SELECT * FROM cat.db.`my t` MATCH_RECOGNIZE (PATTERN (A))")
    assert got.clause.source == "cat.db.`my t`" and not got.clause.source_is_query


def test_the_placeholder_is_a_name_the_query_does_not_hold():
    got = parse_match_recognize("SELECT __cerql_mr_0 FROM t MATCH_RECOGNIZE (PATTERN (A)) AS m")
    assert got.placeholder == "__cerql_mr_1"
    assert got.outer_sql == "SELECT __cerql_mr_0 FROM __cerql_mr_1 AS m"


def test_strings_and_comments_are_not_searched():
    text = ("SELECT 'MATCH_RECOGNIZE (' AS s -- MATCH_RECOGNIZE (\n"
            "FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x = ')') AS m")
    got = parse_match_recognize(text)
    assert got.outer_sql == "SELECT 'MATCH_RECOGNIZE (' AS s -- MATCH_RECOGNIZE (\nFROM __cerql_mr_0 AS m"
    assert got.clause.defines[0].condition == SqlExpr("x = ')'")


@pytest.mark.parametrize("text, expected", [
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A))", True),
    ("select * from t match_recognize(pattern (a))", True),
    ("SELECT * FROM t MATCH_RECOGNIZE PATTERN (A)", True),
    ("SELECT * FROM s WHERE A", False),
    ("SELECT * FROM s WHERE A AS a FILTER a[x = 'MATCH_RECOGNIZE']", False),
    ("SELECT * FROM s WHERE A -- MATCH_RECOGNIZE", False),
    ("SELECT * FROM s WHERE A /* MATCH_RECOGNIZE ( */", False),
    ("SELECT `match_recognize` FROM s WHERE A", False),
    ("SELECT * FROM s WHERE my_match_recognize", False),
])
def test_is_match_recognize(text, expected):
    assert is_match_recognize(text) is expected


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("query, error_class, line, column", [
    # no PATTERN: the caret where it belongs
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts\n  DEFINE A AS x > 1) m", "MISSING_PATTERN", 2, 3),
    ("SELECT * FROM t MATCH_RECOGNIZE () m", "MISSING_PATTERN", 1, 34),
    # a misspelled keyword
    ("SELECT * FROM t MATCH_RECOGNIZE (\n  ORDER BY ts\n  PATERN (A B)\n) m", "UNKNOWN_KEYWORD", 3, 3),
    ("SELECT * FROM t MATCH_RECOGNIZE (MEASURE x AS y PATTERN (A)) m", "UNKNOWN_KEYWORD", 1, 34),
    # a quantifier whose bounds are the wrong way round
    ("SELECT * FROM t MATCH_RECOGNIZE (\n  PATTERN (A B{3,1})\n) m", "INVALID_QUANTIFIER", 2, 15),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A{,}))", "SYNTAX_ERROR", 1, 46),
    # clauses out of order, or a keyword where an expression must stand
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) ORDER BY ts)", "CLAUSE_ORDER", 1, 46),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)\n DEFINE A AS x > 1 PARTITION BY y)", "CLAUSE_ORDER", 2, 20),
    ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY ORDER BY ts PATTERN (A))", "SYNTAX_ERROR", 1, 47),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ORDER BY x PATTERN (A))", "CLAUSE_ORDER", 1, 46),
    # other syntax errors: what was expected there
    ("SELECT * FROM t MATCH_RECOGNIZE (ONE ROWS PER MATCH PATTERN (A))", "SYNTAX_ERROR", 1, 38),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A |))", "SYNTAX_ERROR", 1, 46),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A # B))", "SYNTAX_ERROR", 1, 45),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A x > 1)", "SYNTAX_ERROR", 1, 55),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) SUBSET U = A)", "SYNTAX_ERROR", 1, 57),
    ("SELECT * FROM t MATCH_RECOGNIZE (AFTER MATCH SKIP PATTERN (A))", "SYNTAX_ERROR", 1, 51),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x NULLS PATTERN (A))", "SYNTAX_ERROR", 1, 51),
    # a Spark SQL expression that does not parse: the caret inside it
    ("SELECT * FROM t MATCH_RECOGNIZE (\n  PATTERN (A)\n  DEFINE A AS price < (1 + )\n) m",
     "INVALID_SQL_EXPRESSION", 3, 28),
    ("SELECT * FROM t MATCH_RECOGNIZE (MEASURES FINAL x AS y PATTERN (A))", "SYNTAX_ERROR", 1, 49),
    # the item itself
    ("SELECT * FROM t MATCH_RECOGNIZE PATTERN (A)", "SYNTAX_ERROR", 1, 33),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)", "UNBALANCED_PARENTHESES", 1, 33),
    ("SELECT * FROM MATCH_RECOGNIZE (PATTERN (A))", "MISSING_SOURCE", 1, 15),
    ("SELECT x MATCH_RECOGNIZE (PATTERN (A))", "MISSING_SOURCE", 1, 10),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) AS", "SYNTAX_ERROR", 1, 49),
    ("SELECT * FROM s WHERE A", "NOT_MATCH_RECOGNIZE", 1, 1),
])
def test_error_positions(query, error_class, line, column):
    err = error(query)
    assert isinstance(err, ParseError)
    assert (err.error_class, err.line, err.column) == (error_class, line, column), str(err)
    assert err.hint and err.text == query


def test_syntax_errors_say_what_was_expected():
    err = error("SELECT * FROM t MATCH_RECOGNIZE (ONE ROWS PER MATCH PATTERN (A))")
    assert err.message == "Syntax error: unexpected 'ROWS'" and err.hint == "expected ROW"
    err = error("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS)")
    assert err.hint == "expected an expression"
    err = error("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) SUBSET U = A)")
    assert err.hint == "expected '('"
    err = error("SELECT * FROM t MATCH_RECOGNIZE (MEASURE x AS y PATTERN (A)) m")
    assert "MEASURES" in err.hint
    err = error("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) ORDER BY ts)")
    assert "PARTITION BY, ORDER BY, MEASURES" in err.hint and "ORDER BY" in err.message
    assert "^" in str(err)  # the caret under the place


def test_one_match_recognize_per_query():
    text = "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A)) a JOIN u MATCH_RECOGNIZE (PATTERN (B)) b ON 1 = 1"
    err = error(text)
    assert isinstance(err, UnsupportedError) and err.error_class == "MULTIPLE_MATCH_RECOGNIZE"
    assert (err.line, err.column) == (1, text.rindex("MATCH_RECOGNIZE") + 1)


def test_a_spark_variable_reference_is_refused_as_in_ceql():
    err = error("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS x > ${limit})")
    assert err.error_class == "VARIABLE_SUBSTITUTION_NOT_SUPPORTED"


# ---------------------------------------------------------------------------- CEQL written inside
# (query, line, column of the caret, a part the hint must hold)
CEQL_INSIDE = [
    # CEQL's sequence and contiguity: juxtaposition, the pattern written again
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A ; B+) DEFINE B AS x > 1)", 1, 76,
     "write PATTERN (A B+)"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH\n  PATTERN (A : B :+ C)\n  DEFINE B AS x > 1)",
     2, 14, "write PATTERN (A B+ C)"),
    # AS naming events: the variable is the name
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A AS a ; B AS b) DEFINE B AS x > 1)",
     1, 76, "write PATTERN (A B), each variable's condition in DEFINE"),
    # FILTER: its condition becomes the variable's DEFINE
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B) FILTER B.x > PREV(B.x))", 1, 79,
     "write DEFINE B AS B.x > PREV(B.x) after PATTERN"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS x > 1 FILTER B.x > 2)",
     1, 97, "write DEFINE B AS B.x > 2"),
    # WITHIN inside the item, after a DEFINE, after the item: CEQL's, or a time bound in DEFINE
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B) WITHIN 1 MINUTE DEFINE B AS x > 1)",
     1, 79, "B AS B.ts - FIRST(A.ts) <= INTERVAL 1 MINUTE"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B) DEFINE B AS x > 1\n"
     "  WITHIN 1 MINUTE)", 2, 3, "write the query in CEQL"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B) DEFINE B AS x > 1) m\n"
     "WITHIN 5 EVENTS", 2, 1, "WITHIN 1 MINUTE"),
]


@pytest.mark.parametrize("query, line, column, hint", CEQL_INSIDE, ids=[f"ceql-{i}" for i in range(len(CEQL_INSIDE))])
def test_ceql_syntax_inside_match_recognize_teaches_the_row_pattern_way(query, line, column, hint):
    err = error(query)
    assert isinstance(err, ParseError)
    assert (err.error_class, err.line, err.column) == ("CEQL_SYNTAX_IN_MATCH_RECOGNIZE", line, column), str(err)
    assert hint in err.hint, err.hint
    assert "CEQL" in err.message and "^" in str(err)


def test_the_pattern_the_hint_writes_parses_and_within_group_is_spark():
    err = error("SELECT * FROM t MATCH_RECOGNIZE (ALL ROWS PER MATCH PATTERN (A ; B :+ AS b ; C) DEFINE B AS x > 1)")
    written = err.hint.split("write PATTERN (")[1].split("):")[0]
    assert written == "A B+ C"
    assert pattern(written) == q(V("A"), mr.Quantified(V("B"), 1, None), V("C"))
    # WITHIN GROUP around the item is Spark SQL, no CEQL window
    parse_match_recognize("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY m.n) FROM t MATCH_RECOGNIZE "
                          "(MEASURES count(*) AS n PATTERN (A)) AS m")


@pytest.mark.parametrize("pattern, word, fix", [
    ("(A OR B)", "OR", "A | B"),
    ("((A and B)+)", "and", "A B"),
])
def test_an_operator_word_in_pattern_is_not_taken_for_a_variable(pattern, word, fix):
    text = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY r MEASURES count(*) AS n PATTERN {pattern} DEFINE A AS x > 1)"
    with pytest.raises(ParseError) as err:
        parse_match_recognize(text)
    assert err.value.error_class == "CEQL_SYNTAX_IN_MATCH_RECOGNIZE"
    assert err.value.column == text.index(f" {word} ") + 2 and fix in err.value.hint


def test_a_variable_named_or_with_its_own_define_is_a_variable():
    text = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY r MEASURES count(*) AS n PATTERN (A OR) DEFINE OR AS x > 1)"
    assert parse_match_recognize(text).clause.variables == ("A", "OR")


def test_a_column_named_like_a_spark_command_reads_as_a_column():
    # sqlglot reads "load < 10" alone as Spark's LOAD command; cerql reads the condition
    text = ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY r MEASURES count(*) AS n PATTERN (A) "
            "DEFINE A AS load < 10)")
    condition = parse_match_recognize(text).clause.defines[0].condition
    assert isinstance(condition.tree, exp.LT) and condition.tree.this.name == "load"
