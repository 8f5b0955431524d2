"""The typed, immutable syntax tree of a CEQL query.

Input: nothing (pure data). Output: the node classes that parser/to_ast.py builds from the lark
tree and that the planner and the evaluators read. One frozen, slotted dataclass per grammar
construct, named after its rule. Every node has a ``span`` (where it was written) that takes no
part in equality, so ``parse(str(ast)) == ast`` holds for canonical printing. Spark SQL
fragments are :class:`SqlExpr` values: their sqlglot tree plus canonical Spark SQL text, equal
when the text is equal (this module never imports sqlglot).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Union


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node was written: 0-based character offsets and the 1-based line/column of start."""

    start: int
    end: int
    line: int
    column: int


class _Node:
    """Base of every node: ``str(node)`` is canonical CEQL (parser/printer.py)."""

    __slots__ = ()

    def __str__(self) -> str:
        from cerql.parser.printer import to_ceql  # printing is a separate visitor

        return to_ceql(self)


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SqlExpr(_Node):
    """A Spark SQL fragment. ``text`` is canonical Spark SQL (sqlglot's output); ``tree`` is the
    sqlglot expression; ``offset`` maps sqlglot's positions (in ``source``) back to the query."""

    text: str
    tree: Any = field(default=None, compare=False, repr=False)
    source: str = field(default="", compare=False, repr=False)
    offset: int = field(default=0, compare=False, repr=False)
    span: Span | None = _span()


# ---------------------------------------------------------------------------- patterns
@dataclass(frozen=True, slots=True)
class Atom(_Node):
    """``T`` or ``S>T``: one event of type ``type`` (from source ``source`` when given)."""

    type: str
    source: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class As(_Node):
    """``p AS var``: var collects every position of p."""

    pattern: "Pattern"
    var: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class KleenePlus(_Node):
    """``p+``: one or more ``;``-concatenations of p."""

    pattern: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class ContiguousPlus(_Node):
    """``p :+``: one or more ``:``-concatenations of p."""

    pattern: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Seq(_Node):
    """``p ; q``: q starts after p ends, gaps allowed."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Contiguous(_Node):
    """``p : q``: q starts at the position right after p ends."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Or(_Node):
    """``p OR q``: the union of both."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Filter(_Node):
    """``p FILTER condition``."""

    pattern: "Pattern"
    condition: "Condition"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Not(_Node):
    """``NOT (T)`` or ``NOT (T FILTER T[p])``: one event that the atom (with its filter) does not
    match (docs/language.md, "Negation and conjunction"). It is in the result's interval but
    binds no variable, not even the type (an ``AS`` around it names it)."""

    atom: Atom
    condition: "Condition | None" = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class And(_Node):
    """``p AND q``: a result of p and one of q made of exactly the same positions; the variables
    of both."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class All(_Node):
    """``p ALL q``: a result of p and one of q anywhere in the substream, in any order, even
    overlapping; positions and variables united."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Unless(_Node):
    """``p UNLESS q``: the results of p whose interval holds no result of q. The variables of q
    are not visible outside it."""

    left: "Pattern"
    right: "Pattern"
    span: Span | None = _span()


Pattern = Union[Atom, As, KleenePlus, ContiguousPlus, Seq, Contiguous, Or, Filter, Not, And, All, Unless]


# ---------------------------------------------------------------------------- filter conditions
@dataclass(frozen=True, slots=True)
class VarPredicate(_Node):
    """``var[predicate]``: every event of var satisfies predicate (bare column names)."""

    var: str
    predicate: SqlExpr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class CrossPredicate(_Node):
    """A predicate over qualified columns of several variables: docs/semantics.md,
    "Predicates across variables"."""

    expr: SqlExpr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class FilterAnd(_Node):
    left: "Condition"
    right: "Condition"
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class FilterOr(_Node):
    left: "Condition"
    right: "Condition"
    span: Span | None = _span()


Condition = Union[VarPredicate, CrossPredicate, FilterAnd, FilterOr]


# ---------------------------------------------------------------------------- SELECT items
@dataclass(frozen=True, slots=True)
class Star(_Node):
    """``SELECT *``: every AS variable and every atom type under no AS."""

    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SelectVar(_Node):
    """``SELECT var``: the variable's events with every stream column."""

    var: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SelectVarColumns(_Node):
    """``SELECT var[col, ...]``: the variable's events with the listed columns."""

    var: str
    columns: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SelectExpr(_Node):
    """``SELECT spark_expr [AS alias]`` over qualified columns (a.price, sum(b.volume))."""

    expr: SqlExpr
    alias: str | None = None
    span: Span | None = _span()


SelectItem = Union[SelectVar, SelectVarColumns, SelectExpr]


# ---------------------------------------------------------------------------- clauses
@dataclass(frozen=True, slots=True)
class Source(_Node):
    """``name [[AS] alias] [TYPED BY column]`` in FROM."""

    name: str
    alias: str | None = None
    typed_by: str | None = None
    span: Span | None = _span()

    @property
    def ref(self) -> str:
        """The name atoms use for this source: its alias, else the last part of its name."""
        return self.alias or self.name.split(".")[-1]


@dataclass(frozen=True, slots=True)
class EventsWindow(_Node):
    """``WITHIN n EVENTS``: end position - start position <= n."""

    events: int
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TimeWindow(_Node):
    """``WITHIN <duration> [col]``: ts(end) - ts(start) <= micros, on the ordering column
    (or on ``column``, which must be the first ordering column)."""

    micros: int
    column: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class ColumnWindow(_Node):
    """``WITHIN n [col]``: col(end) - col(start) <= n, col numeric."""

    amount: int | float
    column: str
    span: Span | None = _span()


Window = Union[EventsWindow, TimeWindow, ColumnWindow]


@dataclass(frozen=True, slots=True)
class KeyExpr(_Node):
    """A PARTITION BY or ORDER BY key that is a Spark SQL expression over one event's columns
    (``[upper(name) AS sym]``), not a column name. planner/derived.py turns it into a column
    computed per row before matching; the result shows it as ``name``."""

    expr: SqlExpr
    name: str  # the result column's: the alias, else the expression as written
    span: Span | None = _span()


Key = Union[str, KeyExpr]

STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
CONSUME_POLICIES = ("NONE", "PARTITION", "ANY")


@dataclass(frozen=True, slots=True)
class Navigation:
    """``PREV(col, n)`` or ``NEXT(col, n)`` as planner/navigation.py reads it: the derived column
    that holds it per row, the navigated column as written, the signed offset (-n for PREV, n for
    NEXT) and where the first such call stands in the query text (for errors)."""

    column: str
    source: str
    offset: int
    at: int = 0

    def __str__(self) -> str:
        n = abs(self.offset)
        return f"{'PREV' if self.offset < 0 else 'NEXT'}({self.source}{f', {n}' if n != 1 else ''})"


@dataclass(frozen=True, slots=True)
class Select(_Node):
    """One CEQL query (docs/language.md, "The shape of a query")."""

    projection: Star | tuple[SelectItem, ...]
    sources: tuple[Source, ...]
    pattern: Pattern
    strategy: str = "ALL"
    partition_by: tuple[Key, ...] = ()
    order_by: tuple[Key, ...] = ()
    within: Window | None = None
    consume: str = "NONE"
    limit: int | None = None
    span: Span | None = _span()
    # set by planner/derived.py: (derived column, the name results show it under) per key expression
    key_names: tuple[tuple[str, str], ...] = ()
    # set by planner/derived.py: the PREV/NEXT columns the stream builders compute (planner/navigation.py)
    navigation: tuple[Navigation, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateView(_Node):
    """``CREATE [OR REPLACE] TEMP VIEW name AS select``."""

    name: str
    select: Select
    replace: bool = False
    span: Span | None = _span()


Query = Union[Select, CreateView]


def children(node: Any) -> Iterator[Any]:
    """The pattern/condition children of a node, left to right."""
    if isinstance(node, (Seq, Contiguous, Or, And, All, Unless, FilterAnd, FilterOr)):
        yield node.left
        yield node.right
    elif isinstance(node, (As, KleenePlus, ContiguousPlus)):
        yield node.pattern
    elif isinstance(node, Filter):
        yield node.pattern
        yield node.condition
    elif isinstance(node, Not):
        yield node.atom  # an atom that binds no variable: analysis leaves it out of the variables
        if node.condition is not None:
            yield node.condition


def walk(node: Any) -> Iterator[Any]:
    """Every pattern and condition node under ``node`` (itself first), depth first."""
    yield node
    for child in children(node):
        yield from walk(child)


def select_of(query: Query) -> Select:
    """The SELECT of a query, through CREATE VIEW."""
    return query.select if isinstance(query, CreateView) else query
