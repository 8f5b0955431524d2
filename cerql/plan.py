"""The physical plan of a query: what the engines execute and ``cerql.explain`` prints.

Input: nothing (pure data). planner/resolve.py builds a :class:`QueryPlan` (names and types:
sources, columns, compiled predicates and outputs, order, window), and planner/rules.py its
:class:`Evaluation` (how the automaton engines run it: hidden partition columns, register
checks, the automaton, post-filters). Output: the dataclasses the evaluators read. Names here
are actual column names of the sources; predicates and SELECT expressions are compiled functions
over Arrow tables, so the engines need neither sqlglot nor the schema resolution that produced
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from cerql import ast

if TYPE_CHECKING:  # the plan is data the engines read; it imports no engine
    import pyarrow as pa

    from cerql.automaton import Automaton

SOURCE_COLUMN = "__cerql_source"    # position of the row's source in FROM
ORDINAL_COLUMN = "__cerql_ordinal"  # row number within its source, before any reordering
AGGREGATE_COLUMN = "__agg"          # an expression's k-th aggregate call, as column __agg<k>
DERIVED_COLUMN = "__cerql_d"        # a column Spark derives for a FILTER across variables (planner/derived.py)
MAX_MATCHES_PER_EVENT = 100_000
MAX_REGISTERS = 4  # FILTER checks the kernel carries per run (planner/registers.py keeps this many)


def shown_columns(columns) -> tuple[str, ...]:
    """``columns`` without those Spark derives for a FILTER across variables: never in results."""
    return tuple(c for c in columns if not c.startswith(DERIVED_COLUMN))


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
    amount: int | float


@dataclass(frozen=True)
class AggregatePlan:
    """An aggregate in a SELECT expression (planner/aggregates.py): its value is the column
    ``__agg<k>`` of the table the expression is compiled over."""

    kind: str                               # sum, count, avg, min, max, first, last, collect_list
    var: str
    column: str | None                      # None: count(var)
    type: pa.DataType                       # of the value
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
    expr_type: pa.DataType | None = None    # of the expression's value
    expr_results: tuple[str, ...] = ()      # result columns it reads by bare name: match_*, PARTITION BY
    expr_variables: tuple[tuple[str, bool], ...] = ()  # (variable, many) it reads whole: Spark only


@dataclass(frozen=True)
class CrossPlan:
    """A FILTER predicate across variables (``b.price > a.price``), compiled over a table of
    "var.col" columns with one row per combination of the variables' events (docs/semantics.md,
    "Predicates across variables")."""

    fn: Callable
    columns: tuple[tuple[str, str], ...]    # (var, column) pairs it reads outside aggregates
    sql: ast.SqlExpr
    aggregates: tuple[AggregatePlan, ...] = ()  # of each aggregate call, as columns __agg<k>

    @property
    def variables(self) -> list[str]:
        """The variables it reads outside aggregates, each once, in order."""
        return list(dict.fromkeys(var for var, _ in self.columns))


@dataclass(frozen=True)
class RegisterCheck:
    """A FILTER comparison ``left(x) op right(y)`` over the whole pattern, for every pair of events
    of x and y, checked by the kernel as they are bound (seed 002's registers; planner/registers.py).
    ``left`` and ``right`` are compiled over "x.col" / "y.col" columns; ``floating``: compare as
    float64, else as int64. ``left`` and ``right`` are None only in a plan made without schemas
    (``cerql.explain`` with no tables, planner/rules.py ``NamesAsWritten``), which never runs."""

    text: str
    op: str                                 # = != > >= < <=
    x: str
    y: str
    left: Callable | None
    left_columns: tuple[str, ...]
    right: Callable | None
    right_columns: tuple[str, ...]
    floating: bool
    single: bool = True                     # x and y hold at most one event each
    # count/sum/avg/min/max of ``left`` over x's events (x == y), compared with the constant
    # ``right``; count_events for count(x), whose ``left`` is unused
    aggregate: str | None = None
    # a comparison in a FILTER repeated by + or :+ (``(A AS a ; B AS b FILTER b.x > a.x)+``) holds
    # in each repetition: the automaton marks the first event of each with this label, where the
    # kernel forgets the check's values (planner/rules.py ``registers_alone``); None: the whole pattern
    reset: str | None = None


@dataclass(frozen=True)
class PostFilter:
    """A FILTER with a predicate across variables, or an UNLESS inside the pattern, that the
    local engine checks on each result of the relaxed automaton (exec/post_filter.py;
    planner/rules.py ``post_filter_specs``)."""

    filter: ast.Filter | ast.Unless
    marker: str                             # the label of every event of the FILTER's own match
    labels: Mapping[str, str]               # relaxed automaton's label -> the variable it stands for
    first: str | None                       # label of each repetition's first event, under + or :+
    # an UNLESS: the index of its right side's automaton in ``Automaton.unless_inside``
    unless: int | None = None


@dataclass(frozen=True)
class Evaluation:
    """How the automaton engines evaluate a query: the analyzed query it starts from, then the
    choice each rule of planner/rules.py records, in the order of its ``RULES``."""

    pattern: ast.Pattern                    # what the automaton runs: WHERE less what rules took out
    selected: tuple[str, ...]
    single: frozenset[str]                  # variables that hold at most one event
    partition_columns: tuple[str, ...]      # PARTITION BY
    counts_positions: bool                  # `:`, `:+`, STRICT or n EVENTS
    consumes: bool                          # CONSUME BY other than NONE
    # Equalities across variables the automaton engines run as partitioning (planner/equality.py):
    # the columns they are on, and those of them not already PARTITION BY columns, the hidden
    # partition columns. Substreams are split by them too; results do not show them. The
    # reference evaluator ignores them and checks the equalities.
    equality_columns: tuple[str, ...] = ()
    join_columns: tuple[str, ...] = ()
    # Comparisons the kernel checks with registers, and the FILTER conjunct of each. With no
    # post_filters they are the whole check; with post_filters they only prune the relaxed
    # automaton's runs (the post-filter checks every FILTER again).
    registers: tuple[RegisterCheck, ...] = ()
    register_leaves: tuple[ast.CrossPredicate, ...] = ()
    register_scopes: tuple = ()             # per check, the + or :+ it holds in (``RegisterCheck.reset``)
    automaton: Automaton | None = None      # None until planner/rules.py chooses it
    # With predicates across variables left, the automaton is relaxed (they count as true) and
    # the local engine checks these on each enumerated result (exec/post_filter.py)
    post_filters: tuple[PostFilter, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TaskPlan:
    """What evaluates the stream substream by substream once it is built: the automaton and its
    choices (``evaluation``), the columns, order, window, variable outputs, strategy and CONSUME
    BY. A Spark task runs one of these (spark/lower.py ``task_plan``, exec/task.py
    ``MatchTask``): no AST of the query, no compiled row predicates (Spark computed their bits),
    no SELECT expressions (Spark evaluates them). A :class:`QueryPlan` is one too."""

    columns: tuple[str, ...]              # stream columns, in union order
    partition_columns: tuple[str, ...]
    order_columns: tuple[str, ...]
    order_kind: str                       # "timestamp", "date" or "numeric" (first column)
    window: WindowPlan | None
    outputs: tuple[OutputPlan, ...]
    selected: tuple[str, ...]
    strategy: str
    consume: str
    evaluation: Evaluation
    max_matches_per_event: int = MAX_MATCHES_PER_EVENT
    cross_predicates: dict[str, CrossPlan] = field(default_factory=dict)  # canonical text -> plan
    # the results' names of partition_columns where they differ: a key expression's column is
    # derived (planner/derived.py) and shown under the key's own name; empty: the same names
    partition_names: tuple[str, ...] = ()

    @property
    def partition_result_names(self) -> tuple[str, ...]:
        """The PARTITION BY columns' names in results, in partition_columns' order."""
        return self.partition_names or self.partition_columns

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The stream columns a result may show: all but those Spark derives for a FILTER
        across variables (``DERIVED_COLUMN``, planner/derived.py)."""
        return shown_columns(self.columns)

    @property
    def automaton(self) -> Automaton:
        """The automaton the engines run (planner/rules.py)."""
        return self.evaluation.automaton

    @property
    def post_filters(self) -> tuple[PostFilter, ...]:
        """The FILTERs the local engine checks on the automaton's results (``Evaluation``)."""
        return self.evaluation.post_filters

    @property
    def join_columns(self) -> tuple[str, ...]:
        """The hidden partition columns from equalities across variables (``Evaluation``)."""
        return self.evaluation.join_columns

    @property
    def registers(self) -> tuple[RegisterCheck, ...]:
        """The comparisons the kernel checks with registers (``Evaluation``)."""
        return self.evaluation.registers

    @property
    def substream_columns(self) -> tuple[str, ...]:
        """The columns that split the stream into substreams: PARTITION BY, then join_columns."""
        return self.partition_columns + self.join_columns


@dataclass(frozen=True, kw_only=True)
class QueryPlan(TaskPlan):
    """Everything an engine needs to evaluate one query over a set of Arrow tables: the names
    and types planner/resolve.py resolved and the ``evaluation`` planner/rules.py chose (read
    as properties: ``automaton``, ``registers``, ``post_filters``, ``join_columns``), with the
    query itself, its sources, atoms, compiled row predicates and SELECT expressions."""

    select: ast.Select
    view: ast.CreateView | None
    sources: tuple[SourcePlan, ...]
    atoms: dict[ast.Atom, AtomPlan]
    predicates: dict[str, Callable]       # canonical predicate text -> compiled function
    limit: int | None
    uses_positions: bool = False          # `:`, `:+`, STRICT or n EVENTS count every row
    schema: pa.Schema | None = None       # of the stream columns (the union)

    @property
    def navigation(self) -> tuple[ast.Navigation, ...]:
        """The PREV/NEXT columns the stream builders compute (planner/navigation.py)."""
        return self.select.navigation
