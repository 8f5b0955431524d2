"""Pattern trees for the hypothesis tests of tests/exec, and their CEQL text.

A pattern is a tuple tree: ("atom", T), ("seq"|"colon"|"or", l, r), ("plus"|"cplus", p),
("as", p, var), ("filter", p, condition); a condition is ("pred", var, text), ("cross", text)
(a predicate across variables, written with var.col) or ("and"|"or", c1, c2). Predicates read
an integer column ``v``.
"""

from __future__ import annotations

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
