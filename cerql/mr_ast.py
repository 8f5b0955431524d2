"""The typed, immutable syntax tree of a MATCH_RECOGNIZE query (SQL:2016 row pattern recognition).

Input: nothing (pure data). Output: the node classes that parser/match_recognize.py builds and
that the planner and the evaluators read, as cerql/ast.py is for CEQL. One frozen, slotted
dataclass per construct; every node has a ``span`` that takes no part in equality.

Expressions (PARTITION BY, ORDER BY, MEASURES, DEFINE) are :class:`cerql.ast.SqlExpr` values:
Spark SQL read by sqlglot, in which the row pattern functions have one fixed shape, whatever
sqlglot would make of the names:

- ``PREV(e [, n])``, ``NEXT(e [, n])``, ``FIRST(e [, n])``, ``LAST(e [, n])``, ``CLASSIFIER()``,
  ``CLASSIFIER(v)`` and ``MATCH_NUMBER()`` are ``exp.Anonymous`` nodes named in upper case, their
  arguments in ``expressions`` (``FIRST``/``LAST`` are not sqlglot's First/Last, which would drop
  the offset);
- ``RUNNING f(...)`` and ``FINAL f(...)`` are ``exp.Anonymous`` named ``RUNNING`` / ``FINAL``
  with the one expression they qualify;
- aggregates are sqlglot's own nodes (``exp.Count``, ``exp.Sum``...); ``A.*`` (in ``count(A.*)``)
  is an ``exp.Column`` whose ``this`` is ``exp.Star`` and whose ``table`` is ``A``;
- a column qualified by a pattern variable or a SUBSET name is an ``exp.Column`` with that
  ``table``; an unqualified column refers to the universal row pattern variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from cerql.ast import Span, SqlExpr


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------------------- row patterns
@dataclass(frozen=True, slots=True)
class PatternVar:
    """A row pattern variable: one row that satisfies the variable's DEFINE (TRUE without one)."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Concat:
    """``p1 p2 ...``: the parts in sequence (two or more)."""

    items: tuple["RowPattern", ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Alternation:
    """``p1 | p2 | ...``: preferred left to right (two or more)."""

    options: tuple["RowPattern", ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Quantified:
    """``p*`` ``p+`` ``p?`` ``p{n}`` ``p{n,}`` ``p{,m}`` ``p{n,m}`` and, with ``greedy`` False,
    their reluctant forms (``p*?`` ...). ``max`` None is unbounded. ``p{,m}`` is min 0."""

    pattern: "RowPattern"
    min: int
    max: int | None
    greedy: bool = True
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Permute:
    """``PERMUTE(p1, p2, ...)``: every order of the parts, preferred in the lexicographic order of
    the argument list."""

    items: tuple["RowPattern", ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Exclusion:
    """``{- p -}``: p matches as usual; its rows are left out of ALL ROWS PER MATCH output."""

    pattern: "RowPattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Anchor:
    """``^`` (``start`` True: before the partition's first row) or ``$`` (after its last row)."""

    start: bool
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class EmptyPattern:
    """``()``: matches no row (an empty match)."""

    span: Span | None = _span()


RowPattern = Union[PatternVar, Concat, Alternation, Quantified, Permute, Exclusion, Anchor, EmptyPattern]


# ---------------------------------------------------------------------------- clauses
@dataclass(frozen=True, slots=True)
class SortKey:
    """One ORDER BY key. ``nulls_first`` None: Spark's default (first for ASC, last for DESC)."""

    expr: SqlExpr
    descending: bool = False
    nulls_first: bool | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Measure:
    """``expr AS name`` in MEASURES."""

    expr: SqlExpr
    name: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Subset:
    """``SUBSET name = (v1, v2, ...)``: a union variable."""

    name: str
    variables: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Define:
    """``var AS condition`` in DEFINE."""

    variable: str
    condition: SqlExpr
    span: Span | None = _span()


ONE_ROW = "ONE ROW"
ALL_ROWS = "ALL ROWS"
SHOW_EMPTY = "SHOW EMPTY MATCHES"
OMIT_EMPTY = "OMIT EMPTY MATCHES"
WITH_UNMATCHED = "WITH UNMATCHED ROWS"


@dataclass(frozen=True, slots=True)
class RowsPerMatch:
    """``ONE ROW PER MATCH`` (``mode`` ONE_ROW, the default) or ``ALL ROWS PER MATCH`` with
    ``mode`` SHOW_EMPTY (its default), OMIT_EMPTY or WITH_UNMATCHED."""

    mode: str = ONE_ROW
    span: Span | None = _span()

    @property
    def all_rows(self) -> bool:
        return self.mode != ONE_ROW


PAST_LAST_ROW = "PAST LAST ROW"
TO_NEXT_ROW = "TO NEXT ROW"
TO_FIRST = "TO FIRST"
TO_LAST = "TO LAST"


@dataclass(frozen=True, slots=True)
class AfterMatchSkip:
    """``AFTER MATCH SKIP``: ``mode`` PAST_LAST_ROW (the default), TO_NEXT_ROW, or TO_FIRST /
    TO_LAST with ``variable`` (a pattern variable or a SUBSET name). ``SKIP TO v`` is TO_LAST."""

    mode: str = PAST_LAST_ROW
    variable: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class MatchRecognize:
    """``source MATCH_RECOGNIZE ( ... ) [AS] alias``: every clause as written (defaults filled).

    ``source`` is the table name written before MATCH_RECOGNIZE, or, for a parenthesized
    subquery, its Spark SQL text (``source_is_query`` True). ``variables``: the pattern's
    variables in order of first appearance in PATTERN."""

    source: str
    partition_by: tuple[SqlExpr, ...]
    order_by: tuple[SortKey, ...]
    measures: tuple[Measure, ...]
    rows_per_match: RowsPerMatch
    after_match: AfterMatchSkip
    pattern: RowPattern
    subsets: tuple[Subset, ...]
    defines: tuple[Define, ...]
    alias: str | None = None
    source_is_query: bool = False
    span: Span | None = _span()

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(pattern_variables(self.pattern)))


@dataclass(frozen=True, slots=True)
class MatchRecognizeQuery:
    """A whole query holding one MATCH_RECOGNIZE item: the item, and the Spark SQL around it
    with the item (source through alias) replaced by the name ``placeholder``; that SQL runs over
    the item's result as a table of that name (``SELECT * FROM <placeholder>`` when the query is
    the item alone). ``text`` is the query as written."""

    clause: MatchRecognize
    outer_sql: str
    placeholder: str
    text: str
    span: Span | None = _span()


def children(pattern: RowPattern) -> tuple[RowPattern, ...]:
    """The parts ``pattern`` is made of, in written order."""
    if isinstance(pattern, (Concat, Permute)):
        return pattern.items
    if isinstance(pattern, Alternation):
        return pattern.options
    if isinstance(pattern, (Quantified, Exclusion)):
        return (pattern.pattern,)
    return ()


def walk(pattern: RowPattern):
    """``pattern`` and every part of it, depth first, in written order."""
    yield pattern
    for child in children(pattern):
        yield from walk(child)


def pattern_variables(pattern: RowPattern):
    """Every PatternVar name of ``pattern``, in written order (repeats included)."""
    return (node.name for node in walk(pattern) if isinstance(node, PatternVar))


__all__ = [
    "ALL_ROWS", "AfterMatchSkip", "Alternation", "Anchor", "Concat", "Define", "EmptyPattern",
    "Exclusion", "MatchRecognize", "MatchRecognizeQuery", "Measure", "OMIT_EMPTY", "ONE_ROW",
    "PAST_LAST_ROW", "PatternVar", "Permute", "Quantified", "RowPattern", "RowsPerMatch",
    "SHOW_EMPTY", "SortKey", "Subset", "TO_FIRST", "TO_LAST", "TO_NEXT_ROW", "WITH_UNMATCHED",
    "children", "pattern_variables", "walk",
]
