"""Equalities across variables as partitioning (issue 7; seed 002's "an equality between events is
a partition").

Input: a pattern, the name resolution of a column and which resolved columns may serve as keys.
Output: the hidden partition columns and the pattern without the equalities they replace.

Why: ``(T AS x ; H AS y) FILTER x.id = y.id`` compares two events, which the automaton cannot do
in one step; filtering its enumerated results costs every T, H pair. But when such equalities
force every event of every valuation to the same ``id``, each result lies inside one ``id``
substream, so splitting the stream by ``id`` and dropping the equalities gives the same
results with the automaton's guarantees, and on Spark the substreams spread over the tasks.

It is exact only when all of these hold, which ``equality_keys`` checks:

- the equalities ``x.c = y.c`` (one column, two variables, ``=``) are conjuncts of FILTERs that
  cover the whole pattern (the top of the WHERE clause), so they constrain every valuation;
- on each column, the variables they link are connected, bound in every valuation (not on one
  side of an OR only: an unbound variable makes the predicate vacuously true), and every atom's
  events are in one of them (its event type or an AS around it), so that the for-all reading
  of 4.7 makes all events share one non-NULL value;
- the query does not count positions (``:``, ``:+``, STRICT, ``n EVENTS``: positions count
  within a substream) and consumes nothing (CONSUME BY acts across the substream); the caller
  checks these;
- the column's equality is Spark's byte or value equality and its grouping is the same:
  integers, strings, booleans, dates and timestamps (floats are not: NaN and -0.0).

Every result ending at position j then has the key of the event at j, so the results a
selection strategy compares at j are in the same smaller substream, and LIMIT orders by the
shown columns only.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import pyarrow as pa
from sqlglot import exp

from cerql import ast


def keyable_type(kind: pa.DataType) -> bool:
    """Column types whose Spark equality is the identity of their partition keys."""
    return any(test(kind) for test in (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                                        pa.types.is_boolean, pa.types.is_date, pa.types.is_timestamp))


def conjuncts(condition) -> list:
    """The terms of a FILTER condition joined by AND at its top."""
    if isinstance(condition, ast.FilterAnd):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]


def _equality(leaf) -> tuple[str, str, str] | None:
    """(x, y, column as written) of a predicate ``x.column = y.column`` with x and y distinct
    (``x.c = x.c`` compares each event of x with itself: one variable named is one event at a time)."""
    if not isinstance(leaf, ast.CrossPredicate):
        return None
    tree = leaf.expr.tree
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if type(tree) is not exp.EQ:
        return None
    left, right = tree.this, tree.expression
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
        return None
    if not left.table or not right.table or left.table == right.table or left.name.lower() != right.name.lower():
        return None
    return left.table, right.table, left.name


def always_bound(node) -> set[str]:
    """Variables that hold at least one event in every valuation of the pattern."""
    if isinstance(node, ast.Atom):
        return {node.type}
    if isinstance(node, ast.Not):
        return set()
    if isinstance(node, ast.As):
        return always_bound(node.pattern) | {node.var}
    if isinstance(node, (ast.Seq, ast.Contiguous, ast.And, ast.All)):
        return always_bound(node.left) | always_bound(node.right)
    if isinstance(node, ast.Or):
        return always_bound(node.left) & always_bound(node.right)
    if isinstance(node, ast.Unless):
        return always_bound(node.left)
    return always_bound(node.pattern)  # +, :+, FILTER


def _covered(node, variables: set[str], outer: bool = False) -> bool:
    """Whether every atom's events are in one of ``variables`` (its type, or an AS around it)."""
    if isinstance(node, ast.Atom):
        return outer or node.type in variables
    if isinstance(node, ast.Not):
        return outer  # its event is in no variable unless an AS names it
    if isinstance(node, ast.As):
        return _covered(node.pattern, variables, outer or node.var in variables)
    if isinstance(node, (ast.Seq, ast.Contiguous, ast.Or, ast.And, ast.All)):
        return _covered(node.left, variables, outer) and _covered(node.right, variables, outer)
    if isinstance(node, ast.Unless):  # its right side reads every event of the substream
        return False
    return _covered(node.pattern, variables, outer)


def _connected(edges: list[tuple[str, str]]) -> bool:
    parent: dict[str, str] = {}

    def root(v: str) -> str:
        while parent.setdefault(v, v) != v:
            v = parent[v]
        return v

    for x, y in edges:
        parent[root(x)] = root(y)
    return len({root(v) for v in list(parent)}) == 1


def _without(condition, dropped: set[int]):
    """The condition without the conjuncts in ``dropped`` (by identity); None when none is left."""
    if id(condition) in dropped:
        return None
    if isinstance(condition, ast.FilterAnd):
        left, right = _without(condition.left, dropped), _without(condition.right, dropped)
        if left is None or right is None:
            return left if right is None else right
        return dataclasses.replace(condition, left=left, right=right)
    return condition


def top_filters(pattern) -> list:
    """The FILTERs over the whole pattern: the pattern itself and, inward, the pattern of each
    FILTER while it is a FILTER. Their conditions constrain every valuation."""
    out = []
    while isinstance(pattern, ast.Filter):
        out.append(pattern)
        pattern = pattern.pattern
    return out


def without_conjuncts(condition, dropped: set[int]):
    """A FILTER condition without the conjuncts in ``dropped`` (by identity); None when none is
    left."""
    return _without(condition, dropped)


def without(node, dropped: set[int]):
    """The pattern with the conjuncts in ``dropped`` (by identity) removed from its top FILTERs."""
    if not isinstance(node, ast.Filter):
        return node
    inner = without(node.pattern, dropped)
    condition = _without(node.condition, dropped)
    return inner if condition is None else dataclasses.replace(node, pattern=inner, condition=condition)


def equality_keys(pattern, resolve: Callable[[str], str],
                  keyable: Callable[[str], bool]) -> tuple[tuple[str, ...], object]:
    """(hidden partition columns, the pattern without the equalities they replace); ``((),
    pattern)`` when no equality qualifies (see the module docstring). ``resolve`` gives a
    column's name in the stream, ``keyable`` whether it may be a key."""
    by_column: dict[str, list] = {}
    for f in top_filters(pattern):
        for leaf in conjuncts(f.condition):
            found = _equality(leaf)
            if found is not None:
                by_column.setdefault(resolve(found[2]), []).append((found[0], found[1], leaf))
    bound = always_bound(pattern)
    keys, dropped = [], set()
    for column, edges in by_column.items():
        variables = {v for x, y, _ in edges for v in (x, y)}
        if keyable(column) and variables <= bound and _connected([(x, y) for x, y, _ in edges]) \
                and _covered(pattern, variables):
            keys.append(column)
            dropped.update(id(leaf) for _, _, leaf in edges)
    if not keys:
        return (), pattern
    return tuple(keys), without(pattern, dropped)
