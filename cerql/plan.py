"""The resolved plan of a query: what the engines execute.

Input: nothing (pure data, built by planner/resolve.py). Output: the dataclasses the evaluators
read. Names here are actual column names of the sources; predicates and SELECT expressions are
compiled functions over Arrow tables, so the engines need neither sqlglot nor the schema
resolution that produced them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from cerql import ast

SOURCE_COLUMN = "__cerql_source"    # position of the row's source in FROM
ORDINAL_COLUMN = "__cerql_ordinal"  # row number within its source, before any reordering
AGGREGATE_COLUMN = "__agg"          # an expression's k-th aggregate call, as column __agg<k>
MAX_MATCHES_PER_EVENT = 100_000


@dataclass(frozen=True)
class SourcePlan:
    """One FROM source: the key of its table, the name atoms use, its type column."""

    index: int
    key: str
    ref: str
    type_column: str | None


@dataclass(frozen=True)
class AtomPlan:
    """Which rows an atom matches: any of ``alternatives``, each (source index, type column or
    None for "every row of the source", type value)."""

    type: str
    source: str | None
    alternatives: tuple[tuple[int, str | None, str | None], ...]


@dataclass(frozen=True)
class WindowPlan:
    """WITHIN, resolved: ``kind`` is "events", "time" (amount in microseconds) or "column"."""

    kind: str
    amount: Any


@dataclass(frozen=True)
class AggregatePlan:
    """An aggregate in a SELECT expression (planner/aggregates.py): its value is the column
    ``__agg<k>`` of the table the expression is compiled over."""

    kind: str                               # sum, count, avg, min, max, first, last, collect_list
    var: str
    column: str | None                      # None: count(var)
    type: Any                               # pyarrow type of the value
    many: bool = False                      # the variable can hold several events


@dataclass(frozen=True)
class OutputPlan:
    """One result column after the match_* columns: a variable or an expression."""

    name: str
    var: str | None = None
    columns: tuple[str, ...] | None = None   # stream columns shown for a variable
    many: bool = False                      # array of structs (True) or nullable struct
    expr: Callable | None = None            # compiled over a table of "var.col" columns
    expr_columns: tuple[tuple[str, str], ...] = ()  # (var, column) pairs the expression reads
    sql: ast.SqlExpr | None = None          # the expression as written, for Spark to evaluate
    aggregates: tuple[AggregatePlan, ...] = ()
    expr_type: Any = None                   # pyarrow type of the expression's value


@dataclass(frozen=True)
class CrossPlan:
    """A FILTER predicate across variables (``b.price > a.price``), compiled over a table of
    "var.col" columns with one row per combination of the variables' events (DESIGN.md 4.7)."""

    fn: Callable
    columns: tuple[tuple[str, str], ...]    # (var, column) pairs it reads outside aggregates
    sql: ast.SqlExpr
    aggregates: tuple = ()                  # AggregatePlan of each aggregate call, as columns __agg<k>

    @property
    def variables(self) -> list[str]:
        """The variables it reads outside aggregates, each once, in order."""
        return list(dict.fromkeys(var for var, _ in self.columns))


@dataclass(frozen=True)
class RegisterCheck:
    """A FILTER comparison ``left(x) op right(y)`` over the whole pattern, for every pair of events
    of x and y, checked by the kernel as they are bound (seed 002's registers; planner/registers.py).
    ``left`` and ``right`` are compiled over "x.col" / "y.col" columns; ``floating``: compare as
    float64, else as int64."""

    text: str
    op: str                                 # = != > >= < <=
    x: str
    y: str
    left: Callable
    left_columns: tuple[str, ...]
    right: Callable
    right_columns: tuple[str, ...]
    floating: bool
    single: bool = True                     # x and y hold at most one event each
    # count/sum/avg/min/max of ``left`` over x's events (x == y), compared with the constant
    # ``right``; count_events for count(x), whose ``left`` is unused
    aggregate: str | None = None


@dataclass(frozen=True)
class QueryPlan:
    """Everything an engine needs to evaluate one query over a set of Arrow tables."""

    select: ast.Select
    view: ast.CreateView | None
    sources: tuple[SourcePlan, ...]
    columns: tuple[str, ...]              # stream columns, in union order
    atoms: dict[ast.Atom, AtomPlan]
    predicates: dict[str, Callable]       # canonical predicate text -> compiled function
    order_columns: tuple[str, ...]
    order_kind: str                       # "timestamp", "date" or "numeric" (first column)
    partition_columns: tuple[str, ...]
    window: WindowPlan | None
    outputs: tuple[OutputPlan, ...]
    selected: tuple[str, ...]
    strategy: str
    consume: str
    limit: int | None
    max_matches_per_event: int = MAX_MATCHES_PER_EVENT
    uses_positions: bool = field(default=False)  # `:`, `:+`, STRICT or n EVENTS count every row
    automaton: Any = None                 # the pattern's Automaton
    schema: Any = None                    # pyarrow.Schema of the stream columns (the union)
    cross_predicates: dict[str, CrossPlan] = field(default_factory=dict)  # canonical text -> plan
    # With predicates across variables, the automaton is relaxed (they count as true) and the
    # local engine checks these (FILTER, marker variable, {label: variable} of the variables its
    # pattern binds (a private label for one an AS around binds again), marker of the first event
    # of each repetition or None) on each enumerated result (exec/post_filter.py)
    post_filters: tuple = ()
    # Hidden partition columns: equalities across variables the automaton engines run as
    # partitioning (planner/equality.py). Substreams are split by them too; results do not show
    # them. The reference evaluator ignores them and checks the equalities.
    join_columns: tuple[str, ...] = ()
    # Comparisons between single-event variables the kernel checks with registers. With no
    # post_filters they are the whole check; with post_filters they only prune the relaxed
    # automaton's runs (the post-filter checks every FILTER again).
    registers: tuple[RegisterCheck, ...] = ()

    @property
    def substream_columns(self) -> tuple[str, ...]:
        """The columns that split the stream into substreams: PARTITION BY, then join_columns."""
        return self.partition_columns + self.join_columns
