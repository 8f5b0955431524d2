"""CEQL text -> AST -> canonical CEQL (the syntax of docs/language.md).

Golden files in tests/fixtures:

- ``identity.ceql``: canonical queries, one a line; each must print back unchanged.
- ``normalize.ceql``: ``-- title:`` blocks holding an input query, a line ``=>`` and the
  canonical form it prints as (see the header of that file).
- ``invalid.ceql``: queries, one a line, that must raise ``cerql.ParseError``.

Then precedence tests that check the AST built for each operator pair, and hypothesis tests
that print random ASTs and parse them back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cerql
from cerql import ast

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


# ---------------------------------------------------------------------------- fixture files
def _lines(name: str) -> list[str]:
    """Non-blank lines of a fixture that are not ``--`` comments."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("--")]


def _normalize_cases() -> list[tuple[str, str, str]]:
    """(title, input, canonical) from normalize.ceql."""
    text = (FIXTURES / "normalize.ceql").read_text(encoding="utf-8")
    parts = re.split(r"^-- title: *(.*)\n", text, flags=re.M)
    cases = []
    for title, body in zip(parts[1::2], parts[2::2]):
        lines = body.split("\n")
        if "=>" not in lines:
            raise ValueError(f"normalize.ceql: no '=>' line under title {title!r}")
        arrow = lines.index("=>")
        given_lines = lines[:arrow]
        while given_lines and not given_lines[0].strip():
            given_lines.pop(0)
        while given_lines and not given_lines[-1].strip():
            given_lines.pop()
        expected = [line for line in lines[arrow + 1:] if line.strip()]
        if not given_lines or len(expected) != 1:
            raise ValueError(f"normalize.ceql: block {title!r} needs an input and one canonical line")
        cases.append((title, "\n".join(given_lines), expected[0]))
    return cases


IDENTITY = _lines("identity.ceql")
NORMALIZE = _normalize_cases()
INVALID = _lines("invalid.ceql")


def test_fixtures_are_not_empty():
    assert len(IDENTITY) >= 100
    assert len(NORMALIZE) >= 30
    assert len(INVALID) >= 80


@pytest.mark.parametrize("query", IDENTITY, ids=IDENTITY)
def test_identity(query):
    assert str(cerql.parse(query)) == query


@pytest.mark.parametrize("title, text, canonical", NORMALIZE, ids=[c[1] for c in NORMALIZE])
def test_normalize(title, text, canonical):
    parsed = cerql.parse(text)
    assert str(parsed) == canonical, title
    assert parsed == cerql.parse(canonical), title
    assert str(cerql.parse(canonical)) == canonical, title


@pytest.mark.parametrize("query", INVALID, ids=INVALID)
def test_invalid(query):
    with pytest.raises(cerql.ParseError) as info:
        cerql.parse(query)
    err = info.value
    assert err.error_class and err.error_class == err.error_class.upper()
    assert err.line is not None and err.column is not None


# ---------------------------------------------------------------------------- AST helpers
A, B, C, D = (ast.Atom(t) for t in "ABCD")


def pattern(text: str):
    return cerql.parse(f"SELECT * FROM s WHERE {text}").pattern


def select(text: str) -> ast.Select:
    query = cerql.parse(text)
    assert isinstance(query, ast.Select)
    return query


def assert_round_trips(q: ast.Select) -> None:
    """The printed query parses back to the same AST."""
    text = str(q)
    try:
        back = cerql.parse(text)
    except cerql.ParseError as err:  # pragma: no cover - reported as the failure
        pytest.fail(f"{text!r} does not parse: {err}")
    assert back == q, text


def pred(var: str, text: str) -> ast.VarPredicate:
    return ast.VarPredicate(var, ast.SqlExpr(text))


# ---------------------------------------------------------------------------- pattern precedence
def test_semicolon_binds_tighter_than_or():
    assert pattern("A ; B OR C") == ast.Or(ast.Seq(A, B), C)
    assert pattern("A OR B ; C") == ast.Or(A, ast.Seq(B, C))


def test_semicolon_binds_tighter_than_colon():
    assert pattern("A : B ; C") == ast.Contiguous(A, ast.Seq(B, C))
    assert pattern("A ; B : C") == ast.Contiguous(ast.Seq(A, B), C)


def test_colon_binds_tighter_than_or():
    assert pattern("A : B OR C") == ast.Or(ast.Contiguous(A, B), C)
    assert pattern("A OR B : C") == ast.Or(A, ast.Contiguous(B, C))


def test_as_binds_tighter_than_seq():
    assert pattern("A ; B AS b") == ast.Seq(A, ast.As(B, "b"))
    assert pattern("A AS a ; B") == ast.Seq(ast.As(A, "a"), B)


def test_as_binds_tighter_than_colon_and_or():
    assert pattern("A : B AS b") == ast.Contiguous(A, ast.As(B, "b"))
    assert pattern("A OR B AS b") == ast.Or(A, ast.As(B, "b"))


def test_plus_binds_tighter_than_seq():
    assert pattern("A ; B+") == ast.Seq(A, ast.KleenePlus(B))
    assert pattern("A ; B :+") == ast.Seq(A, ast.ContiguousPlus(B))


def test_postfix_operators_apply_left_to_right():
    assert pattern("B+ AS b") == ast.As(ast.KleenePlus(B), "b")
    assert pattern("B AS b+") == ast.KleenePlus(ast.As(B, "b"))
    assert pattern("B :+ AS b") == ast.As(ast.ContiguousPlus(B), "b")
    assert pattern("B AS b :+") == ast.ContiguousPlus(ast.As(B, "b"))
    assert pattern("B+ :+") == ast.ContiguousPlus(ast.KleenePlus(B))
    assert pattern("B AS x AS y") == ast.As(ast.As(B, "x"), "y")


def test_binary_operators_are_left_associative():
    assert pattern("A ; B ; C") == ast.Seq(ast.Seq(A, B), C)
    assert pattern("A : B : C") == ast.Contiguous(ast.Contiguous(A, B), C)
    assert pattern("A OR B OR C") == ast.Or(ast.Or(A, B), C)


def test_parentheses_override_precedence():
    assert pattern("A ; (B OR C)") == ast.Seq(A, ast.Or(B, C))
    assert pattern("(A ; B) AS ab") == ast.As(ast.Seq(A, B), "ab")
    assert pattern("(A ; B)+") == ast.KleenePlus(ast.Seq(A, B))
    assert pattern("A ; (B ; C)") == ast.Seq(A, ast.Seq(B, C))


def test_filter_covers_everything_to_its_left():
    assert pattern("A ; B AS b OR C FILTER b[x > 1]") == ast.Filter(
        ast.Or(ast.Seq(A, ast.As(B, "b")), C), pred("b", "x > 1"))


def test_filter_inside_parentheses_covers_only_the_parenthesised_pattern():
    assert pattern("(A AS a FILTER a[x > 1]) ; B") == ast.Seq(
        ast.Filter(ast.As(A, "a"), pred("a", "x > 1")), B)


def test_filter_after_filter_filters_the_filtered_pattern():
    assert pattern("A AS a FILTER a[x > 1] FILTER a[y > 2]") == ast.Filter(
        ast.Filter(ast.As(A, "a"), pred("a", "x > 1")), pred("a", "y > 2"))


def test_and_after_filter_joins_filter_terms():
    assert pattern("A AS a FILTER a[x > 1] AND a[y > 2]") == ast.Filter(
        ast.As(A, "a"), ast.FilterAnd(pred("a", "x > 1"), pred("a", "y > 2")))


def test_filter_and_binds_tighter_than_filter_or():
    assert pattern("A AS a FILTER a[x > 1] OR a[y > 2] AND a[z > 3]") == ast.Filter(
        ast.As(A, "a"),
        ast.FilterOr(pred("a", "x > 1"), ast.FilterAnd(pred("a", "y > 2"), pred("a", "z > 3"))))
    assert pattern("A AS a FILTER (a[x > 1] OR a[y > 2]) AND a[z > 3]") == ast.Filter(
        ast.As(A, "a"),
        ast.FilterAnd(ast.FilterOr(pred("a", "x > 1"), pred("a", "y > 2")), pred("a", "z > 3")))


def test_and_inside_brackets_stays_in_one_predicate():
    assert pattern("A AS a FILTER a[x > 1 AND y > 2]") == ast.Filter(
        ast.As(A, "a"), pred("a", "x > 1 AND y > 2"))


def test_or_after_filter_is_a_filter_or_not_a_pattern_or():
    node = pattern("A FILTER A[x > 1] OR A[x < 0]")
    assert isinstance(node, ast.Filter)
    assert node.pattern == A
    assert node.condition == ast.FilterOr(pred("A", "x > 1"), pred("A", "x < 0"))


def test_qualified_filter_is_a_cross_predicate():
    node = pattern("A AS a ; B AS b FILTER b.price > a.price")
    assert isinstance(node, ast.Filter)
    assert node.condition == ast.CrossPredicate(ast.SqlExpr("b.price > a.price"))


def test_source_type_atom():
    assert pattern("s>A ; t>B") == ast.Seq(ast.Atom("A", "s"), ast.Atom("B", "t"))


def test_back_quoted_names_are_unquoted_in_the_ast():
    assert pattern("`my type` AS `x``y`") == ast.As(ast.Atom("my type"), "x`y")


def test_keywords_can_name_types_and_variables():
    assert pattern("order ; last AS filter") == ast.Seq(ast.Atom("order"), ast.As(ast.Atom("last"), "filter"))


def test_negation_and_conjunction_precedence():
    # docs/language.md, "Precedence and parentheses", tightest first: ; > : > AND > ALL > OR > UNLESS > FILTER
    assert pattern("A ; B AND C : D") == ast.And(ast.Seq(A, B), ast.Contiguous(C, D))
    assert pattern("A AND B ALL C AND D") == ast.All(ast.And(A, B), ast.And(C, D))
    assert pattern("A ALL B OR C ALL D") == ast.Or(ast.All(A, B), ast.All(C, D))
    assert pattern("A OR B UNLESS C OR D") == ast.Unless(ast.Or(A, B), ast.Or(C, D))
    assert pattern("A UNLESS B UNLESS C") == ast.Unless(ast.Unless(A, B), C)
    assert pattern("A AND B AND C") == ast.And(ast.And(A, B), C)
    assert pattern("A UNLESS B FILTER A[x > 1]") == ast.Filter(ast.Unless(A, B), pred("A", "x > 1"))


def test_not_negates_one_atom():
    assert pattern("NOT (A) ; B") == ast.Seq(ast.Not(A), B)
    assert pattern("not (A FILTER A[x > 1]) AS n") == ast.As(ast.Not(A, pred("A", "x > 1")), "n")
    assert pattern("NOT (s>A)+") == ast.KleenePlus(ast.Not(ast.Atom("A", "s")))
    assert str(cerql.parse("SELECT * FROM s WHERE NOT (SELL); BUY; SELL")) == (
        "SELECT * FROM s WHERE NOT (SELL) ; BUY ; SELL")  # as CORE's own tests write it


@pytest.mark.parametrize("text, error_class, column", [
    ("NOT (A ; B) ; C", "NOT_OF_PATTERN", 28),
    ("NOT (A AS a)", "NOT_OF_PATTERN", 28),
    ("NOT (A FILTER B[x > 1])", "NOT_OF_PATTERN", 37),
    ("NOT (A FILTER A.x > B.y)", "NOT_OF_PATTERN", 37),
    ("A AS a ; B AS b FILTER b[x > 0] AND C", "PATTERN_AFTER_FILTER", 55),
    ("A AS a ; B AS b FILTER b[x > 0] ALL C", "PATTERN_AFTER_FILTER", 55),
    ("A AS a ; B AS b FILTER b[x > 0] UNLESS (C ; D)", "PATTERN_AFTER_FILTER", 55),
])
def test_negation_and_conjunction_errors(text, error_class, column):
    with pytest.raises(cerql.ParseError) as err:
        cerql.parse(f"SELECT * FROM s WHERE {text}")
    assert (err.value.error_class, err.value.line, err.value.column) == (error_class, 1, column)


def test_unless_and_all_inside_a_filter_string_are_text():
    node = pattern("A AS a FILTER a[name = 'UNLESS'] AND a[kind = 'ALL']")
    assert node == ast.Filter(ast.As(A, "a"), ast.FilterAnd(pred("a", "name = 'UNLESS'"), pred("a", "kind = 'ALL'")))


# ---------------------------------------------------------------------------- SELECT and clauses
def test_strategy_keyword_followed_by_paren_is_a_function():
    q = select("SELECT MAX(b.price) FROM s WHERE B+ AS b")
    assert q.strategy == "ALL"
    assert q.projection == (ast.SelectExpr(ast.SqlExpr("MAX(b.price)")),)


def test_strategy_keyword_followed_by_space_and_paren_is_a_function():
    q = select("SELECT last (b.ts) AS t FROM s WHERE B+ AS b")
    assert q.strategy == "ALL"
    assert q.projection == (ast.SelectExpr(ast.SqlExpr("LAST(b.ts)"), "t"),)


def test_strategy_keyword_followed_by_star_is_a_strategy():
    q = select("SELECT MAX * FROM s WHERE B+ AS b")
    assert q.strategy == "MAX"
    assert isinstance(q.projection, ast.Star)


def test_strategy_keyword_followed_by_name_is_a_strategy():
    q = select("SELECT next b FROM s WHERE A ; B AS b")
    assert q.strategy == "NEXT"
    assert q.projection == (ast.SelectVar("b"),)


def test_strategy_then_function_call():
    q = select("SELECT MAX MAX(b.price) FROM s WHERE B+ AS b")
    assert q.strategy == "MAX"
    assert q.projection == (ast.SelectExpr(ast.SqlExpr("MAX(b.price)")),)


@pytest.mark.parametrize("strategy", ast.STRATEGIES)
def test_every_strategy_is_read(strategy):
    assert select(f"SELECT {strategy.lower()} * FROM s WHERE A").strategy == strategy


def test_select_items():
    q = select("SELECT a, b[price, volume], a.price + 1 AS p FROM s WHERE A AS a ; B AS b")
    assert q.projection == (
        ast.SelectVar("a"),
        ast.SelectVarColumns("b", ("price", "volume")),
        ast.SelectExpr(ast.SqlExpr("a.price + 1"), "p"),
    )


def test_sources_with_alias_and_typed_by():
    q = select("SELECT * FROM db.stock AS st TYPED BY kind, trades t WHERE st>A")
    assert q.sources == (ast.Source("db.stock", "st", "kind"), ast.Source("trades", "t"))
    assert [s.ref for s in q.sources] == ["st", "t"]


def test_partition_by_forms_are_one_list():
    expected = ("name", "sector")
    for text in ("[name, sector]", "[name], [sector]", "name, sector"):
        assert select(f"SELECT * FROM s WHERE A PARTITION BY {text}").partition_by == expected


def test_order_by_columns():
    assert select("SELECT * FROM s WHERE A ORDER BY ts, seq ASC").order_by == ("ts", "seq")


WINDOWS = [
    ("5 EVENTS", ast.EventsWindow(5)),
    ("1 minute 30 seconds", ast.TimeWindow(90_000_000)),
    ("INTERVAL '90' SECOND", ast.TimeWindow(90_000_000)),
    ("INTERVAL '1 minute 30 seconds' [ts]", ast.TimeWindow(90_000_000, "ts")),
    ("250 MILLISECONDS", ast.TimeWindow(250_000)),
    ("2 DAYS [ts]", ast.TimeWindow(2 * 86_400_000_000, "ts")),
    ("10 [seq]", ast.ColumnWindow(10, "seq")),
    ("2.5 [price]", ast.ColumnWindow(2.5, "price")),
]


@pytest.mark.parametrize("text, window", WINDOWS, ids=[w[0] for w in WINDOWS])
def test_within_forms(text, window):
    assert select(f"SELECT * FROM s WHERE A WITHIN {text}").within == window


@pytest.mark.parametrize("policy", ["ANY", "PARTITION", "NONE"])
def test_consume_by(policy):
    assert select(f"SELECT * FROM s WHERE A CONSUME BY {policy.lower()}").consume == policy


def test_defaults_when_clauses_are_absent():
    q = select("SELECT * FROM s WHERE A")
    assert (q.strategy, q.partition_by, q.order_by, q.within, q.consume, q.limit) == (
        "ALL", (), (), None, "NONE", None)


def test_limit():
    assert select("SELECT * FROM s WHERE A LIMIT 10").limit == 10


def test_create_view():
    q = cerql.parse("create or replace temporary view db.v as select * from s where A")
    assert isinstance(q, ast.CreateView)
    assert (q.name, q.replace) == ("db.v", True)
    assert q.select == select("SELECT * FROM s WHERE A")
    assert cerql.parse("CREATE TEMP VIEW v AS SELECT * FROM s WHERE A").replace is False


def test_equality_ignores_source_positions():
    one = cerql.parse("SELECT * FROM s WHERE A ; B AS b")
    other = cerql.parse("SELECT *\n  FROM s\n  WHERE A\n    ; B AS b")
    assert one == other
    assert one.pattern.span != other.pattern.span


def test_nodes_keep_their_positions():
    q = select("SELECT *\nFROM s\nWHERE A ; B AS b")
    right = q.pattern.right
    assert (right.span.line, right.span.column) == (3, 11)
    assert (right.pattern.span.line, right.pattern.span.column) == (3, 11)


def test_ast_is_frozen():
    q = select("SELECT * FROM s WHERE A")
    with pytest.raises(Exception):
        q.limit = 3  # type: ignore[misc]


# ---------------------------------------------------------------------------- names that need quoting
@pytest.mark.parametrize("name", [
    "select", "order", "last", "filter", "a b", "x`y", "1x", "é",
    # reserved in Spark SQL: inside SELECT items and FILTER terms they are read by sqlglot
    "not", "case", "null", "true", "array", "values", "between", "like", "when", "distinct",
])
def test_names_needing_quotes_round_trip(name):
    q = ast.Select(
        projection=(ast.SelectVar(name), ast.SelectVarColumns("v", (name, "price"))),
        sources=(ast.Source("s"),),
        pattern=ast.Filter(ast.Seq(ast.As(ast.Atom(name), name), ast.As(B, "v")),
                           ast.FilterAnd(pred(name, "price > 1"), pred("v", "price < 2"))),
    )
    assert_round_trips(q)


@pytest.mark.parametrize("name", ["a,b", "a]b", "a b", "x`y"])
def test_partition_and_window_column_names_round_trip(name):
    q = ast.Select(
        projection=ast.Star(), sources=(ast.Source("s"),), pattern=A,
        partition_by=(name, "other"), order_by=(name,), within=ast.ColumnWindow(5, name),
    )
    assert_round_trips(q)


# ---------------------------------------------------------------------------- random ASTs
# Predicates and expressions are written in sqlglot's canonical Spark SQL, so SqlExpr text
# compares equal after a round trip (test_generated_sql_is_canonical checks that).
PREDICATES = [
    "x > 1", "price <= 2.5", "name = 'IBM'", "NOT name IS NULL", "volume IN (1, 2)",
    "price BETWEEN 1 AND 2", "name LIKE 'A%'", "x > 1 AND y < 2", "(x > 1 OR y < 2) AND z = 0",
    "`my col` <> 0", "ABS(x) > 1", "name RLIKE '^a'",
]
CROSS = ["b.price > a.price", "SUM(b.volume) > 1000"]
EXPRESSIONS = ["a.price", "a.price + 1", "MAX(b.price)", "SIZE(b)", "UPPER(a.name)", "b.price - a.price"]

# names a user may write; the second list needs back-quotes somewhere
PLAIN_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True)
TRICKY_NAMES = st.sampled_from([
    "a b", "x`y", "1x", "é", "ü_1", "a,b", "a]b", "a.b",
    "select", "from", "where", "order", "by", "filter", "last", "max", "any", "within", "as",
    "or", "and", "typed", "events", "minute", "interval", "desc", "asc", "temp", "view",
    "none", "partition", "consume", "limit", "create",
    "not", "case", "null", "true", "false", "array", "values", "when", "like", "between",
])
NAMES = st.one_of(PLAIN_NAMES, TRICKY_NAMES)
# names that need no quotes in Spark SQL, for the test that varies structure only
SAFE_NAMES = st.sampled_from(["a", "b", "c", "x1", "sell", "Buy", "é", "order", "last", "select", "a b", "1x"])


def _source_names(names):
    return names.filter(lambda n: "." not in n)


def conditions(names, depth: int = 2):
    leaf = st.one_of(
        st.builds(pred, names, st.sampled_from(PREDICATES)),
        st.builds(lambda t: ast.CrossPredicate(ast.SqlExpr(t)), st.sampled_from(CROSS)),
    )
    if depth == 0:
        return leaf
    sub = conditions(names, depth - 1)
    return st.one_of(leaf, st.builds(ast.FilterAnd, sub, sub), st.builds(ast.FilterOr, sub, sub))


def patterns(names, depth: int = 4):
    atom = st.builds(ast.Atom, names, st.none() | _source_names(names))
    if depth == 0:
        return atom
    sub = patterns(names, depth - 1)
    return st.one_of(
        atom,
        st.builds(ast.As, sub, names),
        st.builds(ast.KleenePlus, sub),
        st.builds(ast.ContiguousPlus, sub),
        st.builds(ast.Seq, sub, sub),
        st.builds(ast.Contiguous, sub, sub),
        st.builds(ast.Or, sub, sub),
        st.builds(ast.Filter, sub, conditions(names)),
        st.builds(ast.And, sub, sub),
        st.builds(ast.All, sub, sub),
        st.builds(ast.Unless, sub, sub),
        negations(names),
    )


@st.composite
def negations(draw, names):
    """``NOT (T)`` or ``NOT (T FILTER ...)`` with conditions on T only."""
    atom = draw(st.builds(ast.Atom, names, st.none() | _source_names(names)))
    if draw(st.booleans()):
        return ast.Not(atom)
    leaf = st.builds(pred, st.just(atom.type), st.sampled_from(PREDICATES))
    return ast.Not(atom, draw(st.one_of(leaf, st.builds(ast.FilterAnd, leaf, leaf), st.builds(ast.FilterOr, leaf, leaf))))


def select_items(names):
    return st.one_of(
        st.builds(ast.SelectVar, names),
        st.builds(ast.SelectVarColumns, names, st.lists(names, min_size=1, max_size=3).map(tuple)),
        st.builds(lambda t, alias: ast.SelectExpr(ast.SqlExpr(t), alias),
                  st.sampled_from(EXPRESSIONS), st.none() | names),
    )


def windows(names):
    return st.one_of(
        st.none(),
        st.builds(ast.EventsWindow, st.integers(0, 10**6)),
        st.builds(ast.TimeWindow, st.integers(0, 10**12), st.none() | names),
        st.builds(ast.ColumnWindow,
                  st.one_of(st.integers(0, 10**12),
                            st.floats(0, 1e12, allow_nan=False, allow_infinity=False).map(abs)),
                  names),
    )


def queries(names, depth: int = 4):
    source_names = _source_names(names)
    sources = st.builds(
        ast.Source,
        st.lists(source_names, min_size=1, max_size=2).map(".".join),
        st.none() | source_names,
        st.none() | names,
    )
    selects = st.builds(
        ast.Select,
        projection=st.one_of(st.builds(ast.Star), st.lists(select_items(names), min_size=1, max_size=3).map(tuple)),
        sources=st.lists(sources, min_size=1, max_size=3).map(tuple),
        pattern=patterns(names, depth),
        strategy=st.sampled_from(ast.STRATEGIES),
        partition_by=st.lists(names, max_size=3).map(tuple),
        order_by=st.lists(names, max_size=3).map(tuple),
        within=windows(names),
        consume=st.sampled_from(ast.CONSUME_POLICIES),
        limit=st.none() | st.integers(0, 10**9),
    )
    views = st.builds(
        ast.CreateView,
        st.lists(source_names, min_size=1, max_size=2).map(".".join),
        selects,
        st.booleans(),
    )
    return st.one_of(selects, views)


def _round_trip(query) -> None:
    text = str(query)
    try:
        back = cerql.parse(text)
    except cerql.ParseError as err:
        raise AssertionError(f"canonical text does not parse:\n{text}\n{err}") from None
    assert back == query, f"\n{text}\n{back}"
    assert str(back) == text


def test_generated_sql_is_canonical():
    for text in PREDICATES:
        node = pattern(f"A AS a FILTER a[{text}]")
        assert node.condition.predicate.text == text
    for text in CROSS:
        assert pattern(f"A AS a ; B AS b FILTER {text}").condition.expr.text == text
    for text in EXPRESSIONS:
        item = select(f"SELECT {text} FROM s WHERE A AS a ; B AS b").projection[0]
        assert item.expr.text == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(SAFE_NAMES))
def test_random_pattern_structure_round_trips(query):
    """Every operator, filter and clause combination, nested to depth 4, with simple names."""
    _round_trip(query)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(NAMES, depth=3))
def test_random_query_round_trips(query):
    """Random queries whose names include keywords, back-quotes, unicode and punctuation."""
    _round_trip(query)
