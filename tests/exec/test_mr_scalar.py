"""exec/mr_scalar.py against cerql.expr: random conditions and arithmetic over BIGINT, INT and
DOUBLE fields and literals (NULL, NaN, ±0.0, ±inf, integers near 2**53 and the types' bounds)
give the same truth or number, NULL and type included, whenever the scalar form takes them, and
a row it refuses (an overflow, a zero divisor) is one cerql.expr raises on; the shapes it must
leave to cerql.expr are left; and the thread matcher gives the same matches, or the same error,
with the scalar form as with cerql.expr alone."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql.exec import mr_history, mr_scalar
from cerql.errors import CeqlError
from cerql.exec.mr_scalar import FLOAT, INT, Refused, compile_condition
from cerql.expr import ExprError, compile_expr, evaluate

F = "__cerql_mr_h{}"
KINDS = [INT, 32, FLOAT, FLOAT]
TYPES = [pa.int64(), pa.int32(), pa.float64(), pa.float64()]
BIG = [2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 2**62 + 1]
INTS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(BIG), st.sampled_from(BIG),
                 st.integers(-(2**63), 2**63 - 1))
INT32 = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2**31 - 1, -(2**31)]))
FLOATS = st.one_of(st.none(), st.just(math.nan), st.sampled_from([2.0**53, 2.0**63, -0.0]),
                   st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.0, 2.0**53,
                                    2.0**53 + 2, 2.0**63, -(2.0**63), 0.5]),
                   st.floats(allow_nan=True, allow_infinity=True))
ROW = st.tuples(INTS, INT32, FLOATS, FLOATS)
LITERALS = ["0", "1", "-1", "3", "9007199254740993", "9223372036854775807", "-9223372036854775808",
            "2147483647", "2147483648", "-2147483648", "1.5", "-0.7", "1e3", "1e308", "NULL"]


def numbers(depth: int):
    fields = st.sampled_from([F.format(i) for i in range(4)])
    leaf = st.one_of(fields, fields, fields, st.sampled_from(LITERALS))
    if depth <= 0:
        return leaf
    sub = numbers(depth - 1)
    return st.one_of(leaf, leaf,
                     st.lists(sub, min_size=1, max_size=3).map(lambda xs: f"coalesce({', '.join(xs)})"),
                     sub.map(lambda x: f"({x})"),
                     st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%"]), sub)
                     .map(lambda p: f"({p[0]} {p[1]} {p[2]})"))


def conditions(depth: int):
    n = numbers(min(depth, 2))
    leaf = st.one_of(st.tuples(n, st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">=", "<=>"]), n)
                     .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
                     n.map(lambda x: f"{x} IS NULL"), n.map(lambda x: f"{x} IS NOT NULL"),
                     st.sampled_from(["TRUE", "FALSE"]))
    if depth <= 0:
        return leaf
    sub = conditions(depth - 1)
    return st.one_of(leaf, st.tuples(sub, st.sampled_from(["AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
                     sub.map(lambda x: f"NOT {x}"), sub.map(lambda x: f"({x})"))


def expr_values(tree, rows: list[tuple]) -> pa.Array:
    table = pa.table({F.format(i): pa.array([r[i] for r in rows], TYPES[i]) for i in range(4)})
    return evaluate(compile_expr(tree, lambda col: col.name), table)


def expr_truth(tree, rows: list[tuple]) -> list:
    return expr_values(tree, rows).to_pylist()


def answered(fn, tree, rows: list[tuple], reference):
    """``(row, the scalar form's answer, reference's)`` for each row the scalar form answers,
    row by row; where it refuses a row, ``reference`` (cerql.expr) must raise on it."""
    for r in rows:
        try:
            got = fn(list(r))
        except Refused:
            with pytest.raises((CeqlError, ExprError)):
                reference(tree, [r])
            continue
        yield r, got, reference(tree, [r])


def same(a, b) -> bool:
    return a is b or a == b


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conditions(3), st.lists(ROW, min_size=1, max_size=6))
def test_the_scalar_form_is_cerql_expr(text, rows):
    tree = sqlglot.parse_one(text, read="spark")
    fn = compile_condition(tree, KINDS)
    if fn is None:
        return
    for r, got, want in answered(fn, tree, rows, expr_truth):
        assert same(got, want[0]), (text, r, got, want)


@pytest.mark.parametrize("op", ["AND", "OR"])
@pytest.mark.parametrize("negated", [False, True])
def test_and_or_follow_three_valued_logic(op, negated):
    # every pair of TRUE, FALSE and NULL operands (``x = 1`` over 1, 2 and NULL), bare and under
    # NOT, where a NULL answer and a FALSE one part ways
    text = f"{F.format(0)} = 1 {op} {F.format(1)} = 1"
    tree = sqlglot.parse_one(f"NOT ({text})" if negated else text, read="spark")
    fn = compile_condition(tree, KINDS)
    rows = [(a, b, 0.0, 0.0) for a in (1, 2, None) for b in (1, 2, None)]
    assert [fn(list(r)) for r in rows] == expr_truth(tree, rows)


def same_number(a, b) -> bool:
    return a is b or (type(a) is type(b) and (a == b or (a != a and b != b)) and repr(a) == repr(b))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numbers(2), st.lists(ROW, min_size=1, max_size=4))
def test_numbers_are_cerql_exprs(text, rows):
    # each number the scalar form computes is cerql.expr's, in its type: -0.0, NaN and the
    # integer widths included; a row it refuses is a row cerql.expr raises on
    tree = sqlglot.parse_one(text, read="spark")
    got = mr_scalar._compile(tree, KINDS)
    if got is None or got[1] in (mr_scalar.DECIMAL, mr_scalar.BOOL):
        return
    fn, kind = got
    for r, value, want in answered(fn, tree, rows, expr_values):
        assert want.type == (pa.float64() if kind == FLOAT else pa.int64() if kind == 64 else pa.int32()), text
        assert same_number(value, want.to_pylist()[0]), (text, r, value, want)


NEAR = st.one_of(st.sampled_from(BIG), st.sampled_from([2**53 - 1, 2**53 + 2, 2**53 + 3, 0, -1]))
NEAR_FLOATS = st.one_of(st.sampled_from([2.0**53, 2.0**53 + 2, 2.0**53 + 4, 2.0**63, -(2.0**63), -0.0, 0.0,
                                         math.nan, math.inf]), st.none())


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.booleans(),
       st.lists(st.tuples(st.one_of(NEAR, st.none()), st.just(0), NEAR_FLOATS, NEAR_FLOATS), min_size=1, max_size=8))
def test_integers_against_doubles(op, swapped, rows):
    # an integer meets a DOUBLE as the nearest double (2**53 + 1 = 2.0**53), in either order,
    # and in coalesce
    a, b = (F.format(2), F.format(0)) if swapped else (F.format(0), F.format(2))
    for text in (f"{a} {op} {b}", f"coalesce({F.format(0)}, {F.format(3)}) {op} {F.format(2)}"):
        tree = sqlglot.parse_one(text, read="spark")
        assert [compile_condition(tree, KINDS)(list(r)) for r in rows] == expr_truth(tree, rows), text


@pytest.mark.parametrize("text", [
    f"{F.format(0)} % 2 > 0", f"{F.format(0)} > 1.5", f"-{F.format(0)} > 0", f"{F.format(0)} = NULL",
    f"{F.format(0)} <=> 1", f"{F.format(4)} > 0", f"abs({F.format(0)}) > 0", f"coalesce({F.format(0)}, 1)",
    f"{F.format(0)} > 9223372036854775808", "price > 0", f"CASE WHEN {F.format(0)} > 0 THEN TRUE END",
    f"{F.format(0)} IN (1, 2)",
])
def test_shapes_it_does_not_take(text):
    # arithmetic, decimal and double literals, NULL, other operators, a field of another type,
    # a bare column, a number at the top, a DECIMAL literal, CASE, IN: cerql.expr's
    assert compile_condition(sqlglot.parse_one(text, read="spark"), KINDS + [None]) is None


@pytest.mark.parametrize("text, row, want", [
    (f"{F.format(2)} = {F.format(3)}", (0, 0, math.nan, math.nan), True),
    (f"{F.format(2)} > {F.format(3)}", (0, 0, math.nan, math.inf), True),
    (f"{F.format(2)} < {F.format(3)}", (0, 0, math.nan, math.inf), False),
    (f"{F.format(2)} = {F.format(3)}", (0, 0, -0.0, 0.0), True),
    (f"{F.format(0)} = {F.format(2)}", (2**53 + 1, 0, 2.0**53, 0.0), True),    # as doubles
    (f"{F.format(0)} > 9007199254740992", (2**53 + 1, 0, 0.0, 0.0), True),     # as integers
    (f"{F.format(0)} > {F.format(1)} OR {F.format(2)} IS NULL", (None, 0, None, 0.0), True),
    (f"{F.format(0)} > {F.format(1)} AND {F.format(2)} IS NULL", (None, 0, None, 0.0), None),
    (f"coalesce({F.format(0)}, {F.format(2)}) = {F.format(3)}", (2**53 + 1, 0, 1.0, 2.0**53), True),
])
def test_spark_cases(text, row, want):
    tree = sqlglot.parse_one(text, read="spark")
    assert compile_condition(tree, KINDS)(list(row)) is want
    assert expr_truth(tree, [row]) == [want]


QUERY = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(ts) AS s, LAST(ts) AS e,
  COUNT(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN ({pattern}) DEFINE {define})"""
DEFINES = [
    ("STRT DOWN+ UP+", "DOWN AS price < coalesce(LAST(DOWN.price, 1), PREV(price)), UP AS UP.price > "
     "LAST(UP.price, 1) OR (LAST(UP.price, 1) IS NULL AND price > PREV(price))"),
    ("A+ B", "A AS sum(A.price) < 12, B AS price > PREV(price)"),
    ("A+ B", "A AS avg(A.x) <= 1 OR x IS NULL, B AS x >= FIRST(A.x)"),
    ("A B* C", "B AS x > max(B.x) OR count(B.*) = 0, C AS x != min(B.x)"),
    ("A+ B", "A AS sum(A.n) < 10, B AS n > LAST(A.n)"),
    ("A+ B", "A AS n + coalesce(LAST(A.n, 1), 0) > -5, B AS n * 2 < FIRST(A.n) - 1"),   # overflows
    ("A B+", "B AS x / FIRST(A.x) > 1.05 OR price / LAST(B.price, 1) <= 0.5, A AS x IS NOT NULL"),  # zero divisors
    ("A+", "A AS avg(A.price) * 1.5 >= price - 1e0"),
]
PRICES = st.one_of(st.none(), st.integers(0, 6))
XS = st.one_of(st.none(), st.sampled_from([0.0, -0.0, math.nan, math.inf, 1.0, 2.5, -1.0]))
NS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([2**62, 2**63 - 1, -(2**63)]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DEFINES), st.lists(st.tuples(PRICES, XS, NS), min_size=1, max_size=30))
def test_the_thread_matcher_gives_the_same_matches_without_the_scalar_form(case, rows):
    import cerql

    pattern, define = case
    table = pa.table({"ts": list(range(len(rows))), "price": pa.array([r[0] for r in rows], pa.int64()),
                      "x": pa.array([r[1] for r in rows], pa.float64()),
                      "n": pa.array([r[2] for r in rows], pa.int64())})
    query = QUERY.format(pattern=pattern, define=define)

    def outcome():
        try:
            return _rows(cerql.run(query, {"t": table}))
        except Exception as err:  # noqa: BLE001 - the same error both ways
            return type(err).__name__, getattr(err, "error_class", None), str(err)

    with_scalar = outcome()
    mr_history._SCALAR_OFF = True
    try:
        without = outcome()
    finally:
        mr_history._SCALAR_OFF = False
    assert with_scalar == without


def _rows(result) -> list:
    return result.to_pylist() if hasattr(result, "to_pylist") else result.to_dict("records")
