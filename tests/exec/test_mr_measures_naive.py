"""The vectorized MEASURES and output layouts (cerql/exec/mr_measures.py, mr_engine.py) against a
naive evaluation, one output row at a time, of the same navigations and aggregates, on random
patterns, data, row-local DEFINEs, partitions, skip modes and layouts (hypothesis). The engine
runs the Pike-VM kernel; the naive side finds the matches with the backtracking stand-in of
tests/exec/mr_support.py and computes every measure from the list of rows each output row sees."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql import mr_ast
from cerql.exec.mr_define import define_bits
from cerql.exec.mr_engine import PikeMatcher, run_match_recognize
from cerql.planner.mr_analyze import compiled
from tests.exec.mr_support import BacktrackMatcher, clause, read_pattern

VARS = ("A", "B", "C")
DEFINES = ["{v}.value > PREV({v}.value)", "value IS NULL", "value >= 2", "NEXT(value) > value", "value % 2 = 0",
           "PREV(value, 2) IS NOT NULL AND value < 3"]


def _pattern():
    leaf = st.sampled_from(VARS)
    quant = st.sampled_from(["*", "+", "?", "{1,2}", "{0,1}", "*?", "+?", "??"])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda t: f"{t[0]} {t[1]}"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]} | {t[1]})"),
            st.tuples(inner, quant).map(lambda t: f"({t[0]}){t[1]}"),
        )

    return st.recursive(leaf, extend, max_leaves=4)


# measure -> naive function of (seen: list of (row, variable) the output row sees, rows, partition bounds)
def _rows_of(seen, var):
    return [r for r, v in seen if var is None or v == var]


def _nth(rows, n, last):
    if n >= len(rows):
        return None
    return rows[-1 - n] if last else rows[n]


def _naive_measures():
    out = {}
    for var in (None, "A", "B"):
        q = f"{var}." if var else ""
        for n in (0, 1):
            out[f"LAST({q}value, {n})"] = (lambda var, n: lambda s, val, part: _val(val, _nth(_rows_of(s, var), n, True)))(var, n)
            out[f"FIRST({q}value, {n})"] = (lambda var, n: lambda s, val, part: _val(val, _nth(_rows_of(s, var), n, False)))(var, n)
        out[f"PREV(LAST({q}value), 2)"] = (lambda var: lambda s, val, part: _val(val, _move(_nth(_rows_of(s, var), 0, True), -2, part)))(var)
        out[f"NEXT(FIRST({q}value), 1)"] = (lambda var: lambda s, val, part: _val(val, _move(_nth(_rows_of(s, var), 0, False), 1, part)))(var)
        out[f"count({var + '.' if var else ''}*)"] = (lambda var: lambda s, val, part: len(_rows_of(s, var)))(var)
        for kind in ("sum", "min", "max", "count"):
            out[f"{kind}({q}value)"] = (lambda var, kind: lambda s, val, part: _agg(kind, [val[r] for r in _rows_of(s, var)]))(var, kind)
    out["CLASSIFIER()"] = lambda s, val, part: s[-1][1] if s else None
    return out


def _val(val, row):
    return None if row is None else val[row]


def _move(row, step, part):
    if row is None:
        return None
    lo, hi = part[row]
    return row + step if lo <= row + step < hi else None


def _agg(kind, values):
    present = [v for v in values if v is not None]
    if kind == "count":
        return len(present)
    if not present:
        return None
    return {"sum": sum, "min": min, "max": max}[kind](present)


NAIVE = _naive_measures()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_pattern(), defines=st.dictionaries(st.sampled_from(VARS), st.sampled_from(DEFINES), max_size=3),
       values=st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=0, max_size=12),
       parts=st.lists(st.sampled_from("xy"), min_size=12, max_size=12),
       measures=st.lists(st.sampled_from(sorted(NAIVE)), min_size=1, max_size=5, unique=True),
       all_rows=st.booleans(), final=st.booleans(), skip=st.sampled_from([mr_ast.PAST_LAST_ROW, mr_ast.TO_NEXT_ROW]))
def test_measures_against_a_naive_evaluation(pattern, defines, values, parts, measures, all_rows, final, skip):
    n = len(values)
    table = pa.table({"p": parts[:n], "row": list(range(n)), "value": pa.array(values, pa.int64())})
    present = set(mr_ast.pattern_variables(_parse(pattern)))
    define = {v: d.format(v=v) for v, d in defines.items() if v in present}
    measures = [m for m in measures if all(f"{v}." not in m for v in VARS if v not in present)] or ["count(*)"]
    wrap = (lambda m: f"FINAL({m})") if final else (lambda m: m)
    named = {f"m{i}": wrap(m) for i, m in enumerate(measures)}
    named["mno"] = "MATCH_NUMBER()"
    rows = mr_ast.ALL_ROWS + " PER MATCH " + mr_ast.SHOW_EMPTY if all_rows else mr_ast.ONE_ROW
    c, text = clause(pattern=pattern, define=define, measures=named, rows=rows, skip=skip, partition_by=("p",))
    _, nfa, sk = compiled(c, text)
    got = run_match_recognize(c, table, text, PikeMatcher(nfa, sk)).to_pylist()
    assert got == _expected(c, table, measures, named, all_rows, final)


def _parse(pattern):
    return read_pattern(pattern)


def _expected(c, table, measures, named, all_rows, final):
    """The output computed one row at a time: partitions in first-appearance order, rows in
    ``row`` order (it is the input order), the stand-in's matches."""
    parts = table.column("p").to_pylist()
    order = []
    for key in dict.fromkeys(parts):
        order += [i for i, p in enumerate(parts) if p == key]
    value = [table.column("value")[i].as_py() for i in order]
    sorted_parts = [parts[i] for i in order]
    bounds = {}
    for i, key in enumerate(sorted_parts):
        lo = sorted_parts.index(key)
        bounds[i] = (lo, lo + sorted_parts.count(key))
    part_start = np.array([bounds[i][0] for i in range(len(order))], np.int64)
    part_end = np.array([bounds[i][1] for i in range(len(order))], np.int64)
    sorted_table = table.take(pa.array(order, pa.int64())) if order else table
    variables = tuple(v.upper() for v in c.variables)
    bits = define_bits(sorted_table, part_start, part_end, variables,
                       {d.variable.upper(): d.condition for d in c.defines}, "")
    standin = BacktrackMatcher(c)
    out = []
    for key in dict.fromkeys(sorted_parts):
        lo, hi = bounds[sorted_parts.index(key)]
        starts, ends, labels, _ = standin.match(bits[lo:hi])
        at = 0
        for number, (s, e) in enumerate(zip(starts, ends), 1):
            mapped = [(lo + s + k, variables[labels[at + k] % len(variables)]) for k in range(e - s)]
            at += e - s
            if all_rows:
                shown = [(r, mapped[:k + 1]) for k, (r, _) in enumerate(mapped)] or [(lo + s, [])]
            else:
                shown = [(None, mapped)]
            for r, running in shown:
                seen = mapped if final else running
                row = {"p": key}
                if all_rows:
                    row["row"] = order[r]
                for i, m in enumerate(measures):
                    row[f"m{i}"] = NAIVE[m](seen, value, bounds)
                row["mno"] = number
                if all_rows:
                    row["value"] = value[r]
                out.append(row)
    return out
