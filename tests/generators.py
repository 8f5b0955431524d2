"""Random patterns, queries and streams for the property tests of tests/exec, tests/planner and
tests/spark, and the CEQL text of each.

A pattern is a tuple tree: ("atom", T), ("not", T, predicate text or None),
("seq"|"colon"|"or"|"and"|"all", l, r), ("plus"|"cplus", p), ("as", p, var),
("filter", p, condition), ("unless", p, q); a condition is ("pred", var, text), ("cross", text)
(a predicate across variables, written with var.col) or ("and"|"or", c1, c2). Predicates read
an integer column ``v``.

``cases()`` draws a query (pattern, strategy, projection, window, PARTITION BY, CONSUME BY)
first and builds the stream mostly from the pattern's own event types (plus, half the time, one
noise type), which keeps about half of the examples non-empty; stream lengths are biased towards
the maximum. ``cross_cases()`` puts a FILTER with predicates across variables in the pattern. With
``no_variable=n``, one query in about n has a SELECT list that reads no variable
(``NO_VARIABLE_SELECTS``: ``SELECT match_id AS m``, ``SELECT 1 AS one``, ``SELECT match_start``,
``SELECT match_end - match_start AS span`` on a numeric ORDER BY, ``SELECT k`` under PARTITION BY),
which shows the results of ``SELECT *`` (``star_query``; issue 38 item 2: such a SELECT gave no
row on every engine, so comparing engines alone could not see it).
``query_text`` prints a query and ``table_for`` gives the stream as the query wants it. Every
property runs under ``derandomized(n)``: the same n examples every run.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from cerql.exec.stream import as_arrow

TYPES = ["A", "B", "C", "D"]
VARS = ["x", "x", "y", "y", "z", "A", "B"]  # a type name as AS variable too
STRATEGIES = ["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]
BASE_TIME = pd.Timestamp("2026-01-01 00:00:00")


def derandomized(n: int):
    """Hypothesis settings for ``n`` examples, the same ones every run (no database, no deadline)."""
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# --------------------------------------------------------------------------- pattern trees and their text
PREDICATES = ["v > 0", "v > 0", "v > 1", "v >= 1", "v <= 1", "v <= 2", "v < 3", "v = 0", "v = 2",
              "v != 1", "v != 3", "v IN (0, 2)", "v BETWEEN 1 AND 3", "v IS NOT NULL", "v IS NULL"]


def variables(node) -> list[str]:
    """Atom types and AS names of a pattern tree, first appearance first (FILTER may name them)."""
    kind = node[0]
    if kind == "atom":
        return [node[1]]
    if kind == "not":  # binds nothing (docs/language.md, "Negation and conjunction")
        return []
    if kind == "unless":  # q's variables are its own
        return variables(node[1])
    if kind == "as":
        out = variables(node[1])
        return out + [node[2]] if node[2] not in out else out
    if kind in ("plus", "cplus", "filter"):
        return variables(node[1])
    left = variables(node[1])
    return left + [v for v in variables(node[2]) if v not in left]


def condition_text(cond) -> str:
    if cond[0] == "pred":
        return f"{cond[1]}[{cond[2]}]"
    if cond[0] == "cross":
        return f"({cond[1]})"
    return f"({condition_text(cond[1])} {cond[0].upper()} {condition_text(cond[2])})"


def to_ceql(node) -> str:
    kind = node[0]
    if kind == "atom":
        return node[1]
    if kind == "not":
        return f"NOT ({node[1]})" if node[2] is None else f"NOT ({node[1]} FILTER {node[1]}[{node[2]}])"
    if kind in ("seq", "colon", "or", "and", "all", "unless"):
        op = {"seq": ";", "colon": ":", "or": "OR", "and": "AND", "all": "ALL", "unless": "UNLESS"}[kind]
        return f"({to_ceql(node[1])} {op} {to_ceql(node[2])})"
    if kind == "plus":
        return f"({to_ceql(node[1])})+"
    if kind == "cplus":
        return f"({to_ceql(node[1])}):+"
    if kind == "as":
        return f"({to_ceql(node[1])} AS {node[2]})"
    if kind == "filter":
        return f"({to_ceql(node[1])} FILTER {condition_text(node[2])})"
    raise AssertionError(kind)


# Predicates across variables ({x}, {y}: variables the FILTER's pattern binds) for FILTERs the
# automaton engines check with registers or on enumerated results (exec/post_filter.py)
CROSS_TEXTS = ["{x}.v > {y}.v", "{x}.v = {y}.v", "{x}.v + {y}.v <= 3", "{x}.ts < {y}.ts",
               "{x}.v IS NULL OR {y}.v < 2", "{x}.v != {y}.v", "{x}.v >= 1",
               # aggregates over a variable's events (NULL-skipping, NULL on no rows)
               "sum({x}.v) > 2", "count({x}) >= 2", "avg({x}.v) > {y}.v", "max({x}.v) - min({y}.v) <= 1",
               "count({x}.v) = count({y})", "first({x}.v) < last({y}.v)"]


@st.composite
def cross_conditions(draw, names, depth=2):
    """A FILTER condition over ``names`` mixing brackets and predicates across variables."""
    if depth == 0 or draw(st.integers(0, 2)) > 0:
        if draw(st.integers(0, 3)) == 0:
            return ("pred", draw(st.sampled_from(names)), "v > 0")
        text = draw(st.sampled_from(CROSS_TEXTS))
        return ("cross", text.format(x=draw(st.sampled_from(names)), y=draw(st.sampled_from(names))))
    return (draw(st.sampled_from(["and", "or"])), draw(cross_conditions(names, depth - 1)),
            draw(cross_conditions(names, depth - 1)))


# --------------------------------------------------------------------------- patterns
@st.composite
def conditions(draw, names: list[str], depth: int = 2):
    """A FILTER condition over the variables a filtered pattern binds, AND/OR nested."""
    if depth == 0 or draw(st.integers(0, 2)) > 0:
        return ("pred", draw(st.sampled_from(names)), draw(st.sampled_from(PREDICATES)))
    op = draw(st.sampled_from(["and", "or"]))
    return (op, draw(conditions(names, depth - 1)), draw(conditions(names, depth - 1)))


# operator -> weight; binary operators split the leaf budget, unary ones wrap a subpattern
OPERATORS = ["seq"] * 4 + ["colon"] * 2 + ["or"] * 3 + ["plus"] * 3 + ["cplus"] * 2 + ["as"] * 4 + ["filter"] * 2
PRODUCTS = ["and"] * 2 + ["all"] * 2  # docs/language.md, "Negation and conjunction"
BINARY = ("seq", "colon", "or", "and", "all")


@st.composite
def patterns(draw, leaves: int | None = None, depth: int = 4, products: bool = True, unless: bool = True):
    """A pattern tree with at most ``leaves`` atoms (besides the right sides of UNLESS) and
    ``depth`` nested unary operators; with ``products``, also AND, ALL, NOT (T) (a leaf, one in
    eight) and, with ``unless`` too, UNLESS inside the pattern (its right side has none)."""
    if leaves is None:
        leaves = draw(st.integers(1, 5))
    operators = OPERATORS + (PRODUCTS + ["unless"] if products and unless else PRODUCTS if products else [])
    kinds = [k for k in operators if (leaves > 1 or k not in BINARY) and (depth > 0 or k in BINARY)]
    if (leaves == 1 and (depth == 0 or draw(st.integers(0, 2)) == 0)) or not kinds:
        atom = draw(st.sampled_from(["A", "A", "B", "B", "C", "D"]))
        if products and draw(st.integers(0, 7)) == 0:
            return ("not", atom, draw(st.none() | st.sampled_from(PREDICATES)))
        return ("atom", atom)
    kind = draw(st.sampled_from(kinds))
    if kind in BINARY:
        left = draw(st.integers(1, leaves - 1))
        return (kind, draw(patterns(left, depth, products, unless)),
                draw(patterns(leaves - left, depth, products, unless)))
    child = draw(patterns(leaves, depth - 1, products, unless))
    if kind == "unless":
        return ("unless", child, draw(patterns(draw(st.integers(1, 2)), 2, products, unless=False)))
    if kind == "as":
        return ("as", child, draw(st.sampled_from(VARS)))
    if kind == "filter":
        names = variables(child)
        return ("filter", child, draw(conditions(names))) if names else child
    return (kind, child)


# --------------------------------------------------------------------------- streams
@st.composite
def streams(draw, max_size: int = 12, alphabet=None, partitioned: bool = False):
    """A DataFrame of 0..max_size events: type, v (sometimes NULL), ts (ties), k if partitioned."""
    # hypothesis favours 0 for integers(0, n); longer streams are where engines differ
    n = draw(st.sampled_from([max_size, max_size - 1, max_size // 2] + list(range(max_size + 1))))
    alphabet = alphabet or TYPES
    types = draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n))
    nulls = draw(st.booleans()) and draw(st.integers(0, 3)) == 0
    v = draw(st.lists(st.integers(0, 3) | (st.none() if nulls else st.integers(0, 3)), min_size=n, max_size=n))
    if draw(st.booleans()):
        ts = list(range(n))
    else:
        gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3]), min_size=n, max_size=n))
        ts = [sum(gaps[: i + 1]) for i in range(n)]
    if draw(st.integers(0, 3)) == 0:
        ts = [t / 2 for t in ts]  # float ts: float window values, half seconds for time windows
    data = {"type": types, "v": pd.array(v, dtype="Int64"), "ts": ts}
    if partitioned:
        nk = draw(st.integers(1, 3))
        data["k"] = draw(st.lists(st.integers(0, nk - 1), min_size=n, max_size=n))
    return pd.DataFrame(data)


# --------------------------------------------------------------------------- queries
WINDOWS = st.one_of(
    st.just(("none", None)),
    st.tuples(st.just("events"), st.integers(0, 5)),
    st.tuples(st.just("column"), st.sampled_from([0, 1, 2, 3, 4, 6, 1.5])),
    st.tuples(st.just("time"), st.integers(0, 4)),
)


# SELECT lists that read no variable (issue 38 item 2): each shows the results of SELECT *
NO_VARIABLE_SELECTS = [["match_id AS m"], ["1 AS one"], ["match_start"], ["match_end", "match_id AS m"],
                       ["match_id AS m", "1 AS one"]]
NUMERIC_SELECTS = [["match_end - match_start AS span"], ["1 AS one", "match_end - match_start AS span"]]
PARTITION_SELECTS = [["k"], ["k AS key", "match_id AS m"]]


def reads_no_variable(query) -> bool:
    """Whether the query's SELECT list is one that reads no variable (``NO_VARIABLE_SELECTS``)."""
    return query[2] is not None and not set(query[2]) & set(variables(query[0]))


def star_query(query):
    """The same query with ``SELECT *``."""
    return (query[0], query[1], None) + tuple(query[3:])


@st.composite
def queries(draw, strategies=STRATEGIES, no_variable: int = 0):
    """(pattern tree, strategy, projection or None, window, partitioned, consume); with
    ``no_variable=n``, about one projection in n reads no variable (a list of SELECT items)."""
    node = draw(patterns())
    if not variables(node):  # NOTs only: name them, or SELECT would select nothing
        node = ("as", node, draw(st.sampled_from(VARS)))
    if draw(st.integers(0, 5)) == 0:  # UNLESS around the whole pattern (the kernel runs it), as well as inside
        node = ("unless", node, draw(patterns(draw(st.integers(1, 2)), 2, unless=False)))
    names = variables(node)
    projection = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    strategy = draw(st.sampled_from(strategies))
    window = draw(WINDOWS)
    partitioned = draw(st.booleans())
    consume = draw(st.sampled_from(["", "", "NONE", "PARTITION"] + ([] if partitioned else ["ANY"])))
    if no_variable and draw(st.integers(1, no_variable)) == no_variable:
        # the local engine subtracts numbers, not timestamps (time windows order by a TIMESTAMP)
        projection = draw(st.sampled_from(NO_VARIABLE_SELECTS + (NUMERIC_SELECTS if window[0] != "time" else [])
                                          + (PARTITION_SELECTS if partitioned else [])))
    return node, strategy, projection, window, partitioned, consume


def pattern_types(node) -> list[str]:
    kind = node[0]
    if kind in ("atom", "not"):
        return [node[1]]
    if kind in BINARY or kind == "unless":
        return pattern_types(node[1]) + pattern_types(node[2])
    return pattern_types(node[1])  # plus, cplus, as, filter


@st.composite
def cases(draw, strategies=STRATEGIES, max_size: int = 12, no_variable: int = 0):
    """(query, stream): the stream's types are mostly the pattern's, so matches are common;
    ``no_variable``: see ``queries``."""
    query = draw(queries(strategies, no_variable))
    alphabet = sorted(set(pattern_types(query[0])))
    if draw(st.booleans()):
        alphabet.append(draw(st.sampled_from(TYPES)))  # noise: a type the pattern may skip
    return query, draw(streams(max_size, alphabet, partitioned=query[4]))


def query_text(query) -> str:
    node, strategy, projection, window, partitioned, consume = query
    kind, n = window
    within = {"none": "", "events": f"WITHIN {n} EVENTS", "column": f"WITHIN {n} [ts]",
              "time": f"WITHIN {n} SECONDS"}[kind]
    proj = "*" if projection is None else ", ".join(projection)
    return (f"SELECT {strategy} {proj} FROM s WHERE {to_ceql(node)}"
            f"{' PARTITION BY [k]' if partitioned else ''} ORDER BY ts {within}"
            f"{' CONSUME BY ' + consume if consume else ''}")


def table_for(query, df: pd.DataFrame) -> pa.Table:
    """The stream as the query wants it: ts as a TIMESTAMP (ts seconds after BASE_TIME) for time windows."""
    if query[3][0] == "time":
        df = df.assign(ts=BASE_TIME + pd.to_timedelta(df["ts"], unit="s"))
    return as_arrow(df)


# --------------------------------------------------------------------------- FILTERs across variables
@st.composite
def cross_cases(draw):
    inner = draw(patterns(draw(st.integers(1, 3)), 3))
    names = variables(inner)
    assume(names)
    cond = draw(cross_conditions(names))
    if "cross" not in str(cond):  # at least one predicate across variables
        text = draw(st.sampled_from(CROSS_TEXTS))
        cond = ("and", cond, ("cross", text.format(x=draw(st.sampled_from(names)), y=draw(st.sampled_from(names)))))
    node = ("filter", inner, cond)
    where = draw(st.integers(0, 5))  # the FILTER alone, or inside a larger pattern (an operand of ALL, AND)
    if where:
        other = draw(patterns(1, 2))
        node = {1: ("seq", node, other), 2: ("or", other, node), 3: ("plus", node), 4: ("all", other, node),
                5: ("and", node, ("seq", other, other) if draw(st.booleans()) else other)}[where]
    names = variables(node)
    projection = draw(st.none() | st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    partitioned = draw(st.booleans())
    consume = draw(st.sampled_from(["", "", "PARTITION"] + ([] if partitioned else ["ANY"])))
    query = (node, draw(st.sampled_from(STRATEGIES)), projection, draw(WINDOWS), partitioned, consume)
    alphabet = sorted(set(pattern_types(node))) + [draw(st.sampled_from(TYPES))]
    return query, draw(streams(9, alphabet, partitioned=partitioned))
