"""Pattern trees for the hypothesis tests of tests/exec, and their CEQL text.

A pattern is a tuple tree: ("atom", T), ("seq"|"colon"|"or", l, r), ("plus"|"cplus", p),
("as", p, var), ("filter", p, condition); a condition is ("pred", var, text), ("cross", text)
(a predicate across variables, written with var.col) or ("and"|"or", c1, c2). Predicates read
an integer column ``v``.
"""

from __future__ import annotations

from hypothesis import strategies as st

PREDICATES = ["v > 0", "v > 0", "v > 1", "v >= 1", "v <= 1", "v <= 2", "v < 3", "v = 0", "v = 2",
              "v != 1", "v != 3", "v IN (0, 2)", "v BETWEEN 1 AND 3", "v IS NOT NULL", "v IS NULL"]


def variables(node) -> list[str]:
    """Atom types and AS names of a pattern tree, first appearance first (FILTER may name them)."""
    kind = node[0]
    if kind == "atom":
        return [node[1]]
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
    if kind in ("seq", "colon", "or"):
        op = {"seq": ";", "colon": ":", "or": "OR"}[kind]
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
