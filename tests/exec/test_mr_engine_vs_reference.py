"""The MATCH_RECOGNIZE engine (cerql/exec/mr_engine.py with the matcher matcher_for picks: the
Pike-VM kernel for row-local DEFINEs, the thread matcher of exec/mr_threads.py for
history-dependent ones) against the brute-force reference evaluator (cerql/exec/mr_reference.py)
on random patterns, data, DEFINEs (row-local, and reading the rows mapped so far: FIRST/LAST with
offsets, other variables' columns, aggregates (all those exec/mr_folds.py adds too: percentiles,
moments, regressions, bits, try_*, listagg; DISTINCT, PREV/NEXT inside the argument), CLASSIFIER, PREV/NEXT of a FIRST/LAST), measures,
partitions, orders, skip modes and output layouts (hypothesis): the same rows, or both fail."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cerql import mr_ast
from cerql.errors import CeqlError
from cerql.exec.mr_engine import matcher_for, run_match_recognize
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import clause, read_pattern

reference = pytest.importorskip("cerql.exec.mr_reference")

VARS = ("A", "B", "C")
DEFINES = ["{v}.value > PREV({v}.value)", "value IS NULL", "value >= 2", "NEXT(value) > value", "value % 2 = 0",
           "PREV(value, 2) IS NOT NULL AND value < 3", "{v}.value <= NEXT({v}.value, 2) OR value = 1"]
# DEFINEs that read the rows mapped so far ({w}: another variable, maybe the one defined)
HISTORY = ["value > LAST({w}.value)", "value <= FIRST({w}.value) OR FIRST({w}.value) IS NULL",
           "{v}.value < LAST({v}.value, 1)", "LAST(value, 1) IS NULL OR value >= LAST(value, 2)",
           "FIRST(value, 1) IS NULL", "sum({w}.value) <= 5", "count({w}.*) < 3", "count(*) <= 2 OR value = 0",
           "avg(value) >= 1.5", "min({w}.value) = value OR max(value) < 3", "CLASSIFIER({w}) IS NULL",
           "CLASSIFIER() = '{v}' AND {w}.value IS NOT NULL", "PREV(LAST({w}.value), 1) < value",
           "NEXT(FIRST({w}.value)) = value", "count({w}.value) = 1 OR S.value > 2", "LAST(S.value, 1) <> value",
           # the other aggregates (exec/mr_folds.py), and PREV/NEXT inside an aggregate (thresholds no
           # variance of up to 16 values 0..4 reaches exactly, where two ways of rounding could part)
           "coalesce(stddev_pop({w}.value), 0) < 1.45", "var_samp(value) IS NULL OR var_samp(value) <= 2.05",
           "count_if({w}.value > 1) <= 2", "coalesce(bool_and({w}.value >= 1), true) = true", "coalesce(some(value = 0), false) = false",
           "max_by({w}.t, {w}.value) = t OR max_by({w}.t, {w}.value) IS NULL", "min_by(value, t) <= value",
           "count(DISTINCT {w}.value) = count({w}.value)", "sum(DISTINCT value) < 6",
           "sum({w}.value - PREV({w}.value)) >= 0", "max(NEXT(value)) > 1 OR count(*) < 2",
           # the second batch (thresholds with more digits than a ratio of these values' sums has)
           "coalesce(median({w}.value), 0) <= 2.5", "coalesce(percentile(value, 0.3), 0) < 1.7",
           "coalesce(corr({w}.value, {w}.t), 0) > -0.537", "coalesce(kurtosis(value), 0) < -1.1319",
           "coalesce(regr_slope({w}.value, {w}.t), 0) >= -0.3183", "regr_count(value, t) < 3",
           "coalesce(bit_or({w}.value), 0) < 3", "coalesce(try_sum({w}.value), 0) < 5",
           "coalesce(listagg({w}.p, '-'), '') <> 'x-x'"]
MEASURES = ["LAST({v}.value)", "FIRST({v}.value, 1)", "LAST({v}.value, 1)", "PREV(LAST({v}.value), 2)",
            "NEXT(FIRST({v}.value))", "count({v}.*)", "count(*)", "sum({v}.value)", "min(value)", "max({v}.value)",
            "CLASSIFIER()", "MATCH_NUMBER()", "value", "{v}.value + 1", "FINAL(LAST(value))", "FINAL(count({v}.*))",
            "RUNNING(sum(value))", "avg({v}.value)", "count({v}.value)",
            "stddev({v}.value)", "stddev_pop(value)", "variance({v}.value)", "var_pop({v}.value)",
            "FINAL(std(value))", "count_if({v}.value > 1)", "bool_and({v}.value > 0)", "every(value IS NULL)",
            "bool_or({v}.value = 2)", "any(value < 1)", "min_by({v}.t, {v}.value)", "FINAL(max_by(t, value))",
            "collect_list({v}.value)", "FINAL(array_agg(t))", "count(DISTINCT {v}.value)", "sum(DISTINCT value)",
            "avg(DISTINCT {v}.value)", "sum({v}.value - PREV({v}.value))", "collect_list(NEXT({v}.t, 2))",
            "FINAL(min(PREV(value)))", "median({v}.value)", "percentile(value, 0.3)",
            "FINAL(percentile({v}.value, array(0.25, 0.75)))", "skewness({v}.value)", "kurtosis(value)",
            "corr({v}.value, {v}.t)", "covar_pop(value, t)", "covar_samp({v}.value, {v}.t)", "regr_count(value, t)",
            "regr_avgx({v}.value, {v}.t)", "regr_avgy(value, t)", "regr_sxx({v}.value, {v}.t)", "regr_syy(value, t)",
            "regr_sxy({v}.value, {v}.t)", "regr_slope(value, t)", "FINAL(regr_intercept({v}.value, {v}.t))",
            "regr_r2(value, t)", "bit_and({v}.value)", "bit_or(value)", "bit_xor({v}.value)", "try_sum(value)",
            "try_avg({v}.value)", "listagg({v}.p, '-')", "FINAL(string_agg(p))"]
LAYOUTS = [mr_ast.ONE_ROW, "ALL ROWS PER MATCH", f"ALL ROWS PER MATCH {mr_ast.OMIT_EMPTY}",
           f"ALL ROWS PER MATCH {mr_ast.WITH_UNMATCHED}"]


def _pattern():
    leaf = st.one_of(st.sampled_from(VARS), st.sampled_from(VARS), st.just("()"), st.sampled_from(["^", "$"]))
    quant = st.sampled_from(["*", "+", "?", "{1,2}", "{0,1}", "{2}", "*?", "+?", "??", "{1,}?"])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda t: f"{t[0]} {t[1]}"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]} | {t[1]})"),
            st.tuples(inner, quant).map(lambda t: f"({t[0]}){t[1]}"),
            inner.map(lambda p: f"{{- {p} -}}"),
            st.tuples(inner, inner).map(lambda t: f"PERMUTE({t[0]}, {t[1]})"),
        )

    return st.recursive(leaf, extend, max_leaves=5).filter(lambda p: any(v in p for v in VARS))


@st.composite
def cases(draw, history: bool = False):
    """A clause, its text and a table; ``history``: at least one DEFINE reads the rows mapped so far."""
    pattern = draw(_pattern())
    present = sorted(set(mr_ast.pattern_variables(read_pattern(pattern))))
    defined = draw(st.lists(st.sampled_from(present), unique=True, min_size=1 if history else 0))
    define = {v: draw(st.sampled_from(HISTORY if history and (i == 0 or draw(st.booleans())) else DEFINES)).format(
        v=v, w=draw(st.sampled_from(present))) for i, v in enumerate(defined)}
    measures = {f"m{i}": m.format(v=draw(st.sampled_from(present)))
                for i, m in enumerate(draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4, unique=True)))}
    layout = draw(st.sampled_from(LAYOUTS))
    if "{-" in pattern and layout.endswith(mr_ast.WITH_UNMATCHED):
        layout = LAYOUTS[1]
    skip = draw(st.sampled_from([mr_ast.PAST_LAST_ROW, mr_ast.TO_NEXT_ROW, mr_ast.TO_FIRST, mr_ast.TO_LAST]))
    skip_to = draw(st.sampled_from(present)) if skip in (mr_ast.TO_FIRST, mr_ast.TO_LAST) else None
    order = draw(st.sampled_from(["t", "t DESC", "t ASC NULLS LAST", "t DESC NULLS FIRST"]))
    # the reference takes its columns from the rows; history-dependent cases get longer partitions,
    # where threads of several start rows and paths meet in one state with different histories
    n = draw(st.integers(1, 16 if history else 10))
    keys = ["x", "x", "x", "y"] if history else ["x", "y", None]
    table = pa.table({
        "value": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n)), pa.int64()),
        "p": pa.array(draw(st.lists(st.sampled_from(keys), min_size=n, max_size=n)), pa.string()),
        "t": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=n, max_size=n)), pa.int64()),
    })
    subset = tuple(draw(st.lists(st.sampled_from(present), min_size=1, unique=True)))
    c, text = clause(pattern=pattern, define=define, measures=measures, rows=layout, skip=skip, skip_to=skip_to,
                     partition_by=("p",), order_by=(order,), subsets={"S": subset})
    return c, text, table


def _matcher(c, text):
    analysis, nfa, skip = compiled(c, text)
    matcher = matcher_for(c, text, nfa, skip, analysis.row_local)
    event(type(matcher).__name__)
    return matcher


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases())
def test_engine_gives_the_reference_rows(case):
    _compare(*case)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(history=True))
def test_history_dependent_defines_give_the_reference_rows(case):
    _compare(*case)


def _compare(c, text, table):
    try:
        expected = reference.evaluate(c, table.to_pylist())
    except CeqlError as err:
        event(f"reference: {err.error_class}")
        if err.error_class == "REFERENCE_UNSUPPORTED" or err.error_class == "REFERENCE_INPUT_TOO_LARGE":
            return
        with pytest.raises(CeqlError) as raised:
            run_match_recognize(c, table, text, _matcher(c, text))
        if err.error_class == "AFTER_MATCH_SKIP_FAILED":
            assert raised.value.error_class == err.error_class, text
        return
    got = run_match_recognize(c, table, text, _matcher(c, text))
    rows = got.to_pylist()
    event(f"compared ({'no rows' if not rows else 'rows'})")
    assert [list(r) for r in rows[:1]] == [list(r) for r in expected[:1]], text  # the same columns in order
    assert len(rows) == len(expected), text
    for g, e in zip(rows, expected):
        assert g.keys() == e.keys() and all(_same(g[k], e[k]) for k in g), (text, g, e)
