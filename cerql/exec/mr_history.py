"""History-dependent MATCH_RECOGNIZE DEFINEs as thread registers, evaluated for many threads at once.

Input: the pattern's variables and SUBSETs (canonical names), the DEFINEs that read the rows
mapped before the current one (planner/mr_analyze.py sorts them), the query text (for positions);
per partition, its sorted rows. Output: :class:`History`, which gives each thread of the matcher
(exec/mr_threads.py) a tuple of *registers* (the initial one, and the one after a row is mapped
to a variable), says which registers the conditions still reachable from an NFA state read (the
matcher's dedupe key), and evaluates one variable's condition for a batch of threads that all
want to map the same row to it, vectorized with cerql.expr (docs/semantics.md, "MATCH_RECOGNIZE",
"The local engine"), or gives it as a function of one thread's registers when exec/mr_scalar.py
takes its shape and its fields' types (``scalar``): each field then also has a reader of one
thread's value, so that a row costs a few Python calls instead of an Arrow table.

A DEFINE is evaluated when its row is mapped, with RUNNING semantics: it sees the rows mapped so
far, the current row last. What it reads of them is kept per thread in one register per
*quantity*, shared by every condition that reads it; ``X`` is a variable, a SUBSET or the
universal variable:

- ``FIRST(X.e, n)``: the first n+1 rows mapped to X (row indices);
- ``LAST(X.e, n)``, ``X.c`` (= ``LAST(X.c)``) and ``PREV/NEXT`` of them: the last rows mapped to
  X, as many as the offsets need. When the defined variable belongs to X the current row is
  X's last, so a plain ``X.c`` reads the current row and needs no register;
- ``count``, ``sum``, ``avg``, ``min``, ``max`` over X's rows: the running state (count, exact
  sum and whether it left its type, the row of the least or greatest value so far); the other
  aggregates (stddev, count_if, min_by, collect_list, DISTINCT...): their fold's state
  (exec/mr_folds.py). An aggregate's argument, PREV/NEXT in it included, is evaluated once per
  partition at every row;
- ``CLASSIFIER(X)``: the variable of X's last row (``CLASSIFIER()`` in DEFINE of V is V).

Registers change only when a row is mapped, and each one's next value depends only on itself and
that row, so two threads in the same NFA state with equal registers read by the conditions ahead
have the same future: the matcher keeps only the first (the Pike-VM rule, extended). A sum of
integers that leaves BIGINT (or a DECIMAL sum its type) raises Spark's error when a condition
reads it, as the aggregates of exec/aggregate.py do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql import mr_functions as mx
from cerql.ast import SqlExpr
from cerql.errors import AnalysisError, UnsupportedError
from cerql.exec import aggregate, mr_folds, mr_scalar
from cerql.exec.mr_scalar import FLOAT, INT
from cerql.exec.mr_measures import aggregate_type
from cerql.expr import BIGINT_MAX, BIGINT_MIN, ExprError, compile_expr, evaluate, guard

FIELD = "__cerql_mr_h{}"  # a column of the batch table a rewritten condition reads
UNSUPPORTED = "MATCH_RECOGNIZE_UNSUPPORTED"
_EXACT = Context(prec=200)

Registers = tuple  # one entry per quantity (History.quantities), hashable


@dataclass
class Quantity:
    """One register: ``kind`` (``first``, ``last``, ``classifier``, or an aggregate), the set of
    variables ``members`` (None: every variable), the aggregate's ``argument`` (None: count of
    rows), and ``keep``: how many rows a FIRST/LAST register holds (the largest any reader needs)."""

    kind: str
    members: frozenset[int] | None
    argument: exp.Expression | None = None  # the aggregate call, its columns unqualified
    keep: int = 0
    expr: SqlExpr | None = None   # the DEFINE that first reads it (for error positions)

    def holds(self, v: int) -> bool:
        return self.members is None or v in self.members


@dataclass
class _Partition:
    """One partition's rows and, per aggregate quantity, its argument at every row; the columns
    the conditions gather from, resolved and in one chunk (once, not per row and batch)."""

    table: pa.Table
    n: int
    args: dict[int, "_Argument"] = field(default_factory=dict)
    columns: dict[str, pa.Array] = field(default_factory=dict)  # a condition's column name -> its values
    lists: dict[str, list] = field(default_factory=dict)       # the same as Python values (exec/mr_scalar.py)
    scalar: dict[int, tuple | None] = field(default_factory=dict)  # a variable -> its condition's scalar form


@dataclass
class _Argument:
    values: pa.Array          # the (first) argument at every row of the partition
    valid: np.ndarray         # not NULL
    numbers: list             # Python numbers for sum/avg (ints, floats, or decimal units)
    ranks: np.ndarray         # min/max: the order of the values (NaN above every number)
    fold: mr_folds.Fold | None = None   # the other aggregates (exec/mr_folds.py)
    columns: list = field(default_factory=list)  # their arguments' Python values at every row
    bounds: tuple = (BIGINT_MIN, BIGINT_MAX)       # a sum of integers within these has not left its type


class History:
    """The registers and the compiled conditions of the history-dependent DEFINEs (module
    docstring). ``variables``: canonical, in PATTERN order (a label's variable is its index)."""

    def __init__(self, variables: tuple[str, ...], subsets: Mapping[str, frozenset[str]],
                 defines: Mapping[str, SqlExpr], text: str):
        self.variables, self.subsets, self.text = variables, subsets, text
        self.quantities: list[Quantity] = []
        self._index: dict[tuple, int] = {}
        self.conditions: dict[int, _Condition] = {}
        for name, condition in defines.items():
            v = variables.index(name)
            self.conditions[v] = _Condition(self, v, condition)
        self.reads: dict[int, frozenset[int]] = {v: frozenset(c.quantities) for v, c in self.conditions.items()}
        self._held: dict[int, list[tuple[int, Quantity]]] = {}

    # -- registers
    def quantity(self, kind: str, members, argument=None, keep: int = 0, expr: SqlExpr | None = None) -> int:
        key = (kind, members, argument.sql(dialect="spark") if argument is not None else None)
        at = self._index.get(key)
        if at is None:
            at = self._index[key] = len(self.quantities)
            self.quantities.append(Quantity(kind, members, argument, keep, expr))
        self.quantities[at].keep = max(self.quantities[at].keep, keep)
        return at

    def members(self, name: str | None) -> frozenset[int] | None:
        """The variable indices a qualifier stands for (None: every variable)."""
        return mx.members(name, self.variables, self.subsets)

    def initial(self) -> Registers:
        return tuple(mr_folds.empty(q.kind) if q.kind in mr_folds.KINDS else _EMPTY[q.kind] for q in self.quantities)

    def advance(self, regs: Registers, row: int, v: int, part: _Partition) -> Registers:
        """The registers after ``row`` is mapped to variable ``v``."""
        out = list(regs)
        for i, q in self._holding(v):
            out[i] = _step(q, regs[i], row, v, part.args.get(i))
        return tuple(out)

    def ignores_row(self, regs: Registers, v: int) -> bool:
        """Whether ``advance(regs, row, v)`` is the same for every row: each register ``v``
        changes is a CLASSIFIER, a FIRST that holds all its rows already, or a LAST of no rows.
        The matcher then computes it once per registers and variable."""
        for i, q in self._holding(v):
            if not (q.kind == "classifier" or (q.kind == "first" and len(regs[i]) >= q.keep)
                    or (q.kind == "last" and not q.keep)):
                return False
        return True

    def may_ignore_row(self, v: int) -> bool:
        """Whether ``ignores_row`` can hold for ``v`` at all: every register ``v`` changes is a
        FIRST, a LAST or a CLASSIFIER (a count or a sum changes with every row)."""
        return all(q.kind in ("first", "last", "classifier") for _, q in self._holding(v))

    def _holding(self, v: int) -> list[tuple[int, Quantity]]:
        """The registers a row mapped to ``v`` changes (once per variable: the matcher asks per
        thread and row)."""
        got = self._held.get(v)
        if got is None:
            got = self._held[v] = [(i, q) for i, q in enumerate(self.quantities) if q.holds(v)]
        return got

    def may_hold_floats(self, part: _Partition) -> bool:
        """Whether some register can hold a float (a sum or avg of floats, an avg of integers,
        another aggregate's fold): then registers that are equal may still differ (0.0, -0.0)."""
        for i, q in enumerate(self.quantities):
            if q.kind in mr_folds.KINDS:
                return True
            if q.kind in ("sum", "avg") and q.argument is not None:
                t = part.args[i].values.type
                if not (pa.types.is_decimal(t) or (q.kind == "sum" and pa.types.is_integer(t))):
                    return True
        return False

    # -- per partition
    def bind(self, table: pa.Table) -> _Partition:
        """The partition's rows and its aggregate arguments, evaluated once over all its rows."""
        part = _Partition(table, table.num_rows)
        lowered = {c.lower() for c in table.column_names}
        for condition in self.conditions.values():  # an unknown column fails before any thread reads it
            for column in condition.expr.tree.find_all(exp.Column):
                in_classifier = column.parent is not None and mx.function_name(column.parent) == mx.CLASSIFIER
                if not mx.is_star(column) and not in_classifier and column.name.lower() not in lowered:
                    raise AnalysisError.at(self.text, mx.node_offset(condition.expr, column),
                                           f"Unknown column '{column.name}'", "UNKNOWN_COLUMN",
                                           f"the input has columns {', '.join(table.column_names)}")
        for i, q in enumerate(self.quantities):
            if (q.kind in _AGGREGATES or q.kind in mr_folds.KINDS) and q.argument is not None:
                part.args[i] = self._argument(q, table)
        return part

    def _argument(self, q: Quantity, table: pa.Table) -> _Argument:
        args = [self._evaluated(a, q, table) for a in mx.aggregate_arguments(q.argument)]
        values = args[0]
        if q.kind in mr_folds.KINDS:
            one_row = pa.table({"__cerql_mr_rows": pa.array([0], pa.int8())})  # the constant arguments, once
            params = mr_folds.evaluated(mx.aggregate_parameters(q.argument),
                                        lambda p: self._evaluated(p, q, one_row).to_pylist()[0])
            try:
                fold = mr_folds.fold(q.kind, tuple(a.type for a in args), mr_folds.parameters(q.kind, params))
            except mr_folds.FoldTypeError as err:
                raise AnalysisError.at(self.text, mx.node_offset(q.expr), err.message, "DATATYPE_MISMATCH",
                                       err.hint) from None
            return _Argument(values, np.ones(len(values), bool), [], np.zeros(0, np.int64), fold,
                             [a.to_pylist() for a in args])
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
        numbers: list = []
        ranks = np.zeros(len(values), np.int64)
        if q.kind in ("sum", "avg"):
            t = values.type
            if pa.types.is_decimal(t):
                numbers = [int(x.scaleb(t.scale, context=_EXACT)) if x is not None else 0 for x in values.to_pylist()]
            elif pa.types.is_integer(t) and q.kind == "sum":
                numbers = [int(x) if x is not None else 0 for x in values.to_pylist()]
            elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t):
                numbers = [float(x) if x is not None else 0.0 for x in values.cast(pa.float64()).to_pylist()]
            else:
                raise AnalysisError.at(self.text, mx.node_offset(q.expr),
                                       f"{q.kind}() of {t} is not a number", "DATATYPE_MISMATCH",
                                       f"{q.kind} takes numbers")
        if q.kind in ("min", "max") and len(values):
            order = np.asarray(pc.sort_indices(values).to_numpy(), np.int64)
            ranks[order] = np.arange(len(values))
        bounds = (BIGINT_MIN, BIGINT_MAX)
        if pa.types.is_decimal(values.type):
            top = 10 ** aggregate.decimal_sum_type(values.type).precision
            bounds = (-top + 1, top - 1)
        return _Argument(values, valid, numbers, ranks, bounds=bounds)

    def _evaluated(self, argument: exp.Expression, q: Quantity, table: pa.Table) -> pa.Array:
        """An aggregate's argument at every row of the partition; PREV/NEXT of columns in it
        read the rows before / after each row."""
        lowered = {c.lower(): c for c in table.column_names}
        fields: dict[str, pa.Array] = {}

        def bound(tree: exp.Expression, rows: np.ndarray) -> exp.Expression:
            if mx.function_name(tree) in mx.PHYSICAL:
                args = mx.arguments(tree)
                n = mx.navigation_offset(tree)
                moved = rows - n if mx.function_name(tree) == mx.PREV else rows + n
                return bound(args[0], np.where((rows >= 0) & (moved >= 0) & (moved < table.num_rows), moved, -1))
            if isinstance(tree, exp.Column):
                real = lowered.get(tree.name.lower())
                if real is None:
                    raise AnalysisError.at(self.text, mx.node_offset(q.expr), f"Unknown column '{tree.name}'",
                                           "UNKNOWN_COLUMN", f"the input has columns {', '.join(table.column_names)}")
                name = FIELD.format(len(fields))
                fields[name] = _take(table.column(real), rows)
                return exp.column(name)
            for child in list(tree.iter_expressions()):
                new = bound(child, rows)
                if new is not child:
                    child.replace(new)
            return tree

        tree = bound(argument.copy(), np.arange(table.num_rows, dtype=np.int64))
        fn = _compiled(tree, self.text, q.expr)
        base = pa.table(fields) if fields else pa.table({"__cerql_mr_rows": pa.array(np.zeros(table.num_rows, np.int8))})
        values = evaluate(fn, base)
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    # -- conditions
    def evaluate(self, v: int, regs: list[Registers], row: int, part: _Partition) -> list | np.ndarray:
        """Variable ``v``'s condition for each thread (its registers before the row) that maps
        ``row`` to ``v``: a bool per thread (NULL: false), a list from Python, a NumPy array from
        cerql.expr (each is what its caller's next step is quickest with). Thread by thread in Python when
        exec/mr_scalar.py takes the condition and the threads are fewer than ``SCALAR_BATCH``
        (from there cerql.expr's fixed cost per batch is the smaller); with cerql.expr otherwise,
        and when a thread's registers or an operation may raise (it decides, for all of them)."""
        return self.conditions[v].evaluate(regs, row, part)


def _compiled(tree: exp.Expression, text: str, expr: SqlExpr):
    """cerql.expr's function of ``tree``, its errors placed at ``expr`` in the query."""
    def positioned(err: ExprError):
        return err.cls.at(text, mx.node_offset(expr), err.message, err.error_class, err.hint)

    try:
        return guard(compile_expr(tree, lambda col: col.name), positioned)
    except ExprError as err:
        raise positioned(err) from None


# ---------------------------------------------------------------------------- register steps
_AGGREGATES = ("count", "sum", "avg", "min", "max")
# sum/avg: (values, exact total, whether a running total left its type); min/max: the best row
_EMPTY = {"first": (), "last": (), "classifier": -1, "count": 0, "sum": (0, 0, False), "avg": (0, 0, False),
          "min": -1, "max": -1}


def _step(q: Quantity, reg, row: int, v: int, arg: _Argument | None):
    kind = q.kind
    if kind == "first":
        return reg + (row,) if len(reg) < q.keep else reg
    if kind == "last":
        return (reg + (row,))[-q.keep:] if q.keep else ()
    if kind == "classifier":
        return v if q.keep else -1
    if kind == "count":
        return reg + 1 if arg is None or arg.valid[row] else reg
    if arg.fold is not None:
        return arg.fold.step(reg, tuple(c[row] for c in arg.columns))
    if not arg.valid[row]:
        return reg
    if kind in ("sum", "avg"):
        count, total, bad = reg
        x = arg.numbers[row]
        if isinstance(x, float) and kind == "sum" and count == 0:
            total = x  # a float sum starts from its first value, an avg from 0.0 (exec/aggregate.py)
        else:
            total = total + x
        if isinstance(x, int) and not bad:
            low, high = arg.bounds
            bad = not low <= total <= high
        return count + 1, total, bad
    if reg < 0:
        return row
    better = arg.ranks[row] > arg.ranks[reg] if kind == "max" else arg.ranks[row] < arg.ranks[reg]
    return row if better else reg


def _aggregate_value(kind: str, reg, arg: _Argument | None):
    """The Python value of an aggregate register."""
    if kind == "count":
        return reg
    if kind in ("min", "max"):
        return reg  # a row, gathered by the caller
    count, total, bad = reg
    if count == 0:
        return None
    t = arg.values.type
    if bad:
        if pa.types.is_decimal(t):
            raise aggregate.decimal_sum_overflow(kind, aggregate.decimal_sum_type(t))
        raise aggregate.sum_overflow()
    if pa.types.is_decimal(t):
        if kind == "sum":
            return Decimal(total).scaleb(-t.scale, context=_EXACT)
        avg_type = aggregate.decimal_avg_type(t)
        numerator = total * 10 ** (avg_type.scale - t.scale)
        magnitude = (2 * abs(numerator) + count) // (2 * count)  # half away from zero, as Spark
        rounded = -magnitude if numerator < 0 else magnitude
        if abs(rounded) >= 10 ** avg_type.precision:
            raise aggregate.decimal_avg_out_of_range(avg_type, rounded)
        return Decimal(rounded).scaleb(-avg_type.scale, context=_EXACT)
    if kind == "avg":
        return total / count
    return total


# ---------------------------------------------------------------------------- conditions
class _Condition:
    """One variable's DEFINE, rewritten so that each navigation, aggregate and CLASSIFIER is a
    column of a batch table; ``reads`` build those columns for a batch of threads."""

    def __init__(self, history: History, v: int, expr: SqlExpr):
        self.h, self.v, self.expr = history, v, expr
        self.quantities: set[int] = set()
        self.reads: list[Callable] = []   # (regs, row, part) -> pa.Array
        self.scalars: list[Callable] = []  # per read, (part) -> (kind, (one thread's regs, row) -> value) or None
        self.tree = self._rewrite(expr.tree.copy())
        self._fn = None
        self._columns: tuple | None = None

    # -- the rewrite (once)
    def _field(self, read: Callable, scalar: Callable) -> exp.Column:
        """A new field: ``read`` builds its column for a batch of threads, ``scalar`` (given the
        partition) its kind and its value for one thread (exec/mr_scalar.py; None: no kind)."""
        self.reads.append(read)
        self.scalars.append(scalar)
        return exp.column(FIELD.format(len(self.reads) - 1))

    def _refuse(self, node, what: str):
        raise UnsupportedError.at(self.h.text, mx.node_offset(self.expr, node), f"{what} in DEFINE is not supported yet",
                                  UNSUPPORTED, "navigate to the rows with FIRST/LAST/PREV/NEXT of their columns")

    def _rewrite(self, node: exp.Expression) -> exp.Expression:
        name = mx.function_name(node)
        if name == mx.RUNNING:
            return _replace(node, self._rewrite(mx.arguments(node)[0]))
        if name == mx.CLASSIFIER:
            args = mx.arguments(node)
            members = self.h.members(args[0].name if args else None)
            if members is None or self.v in members:
                return _replace(node, exp.Literal.string(self.h.variables[self.v]))
            at = self.h.quantity("classifier", members, keep=1, expr=self.expr)
            self.quantities.add(at)
            names = self.h.variables
            return _replace(node, self._field(lambda regs, row, part: pa.array(
                [names[r[at]] if r[at] >= 0 else None for r in regs], pa.string()), lambda part: None))
        if name in mx.NAVIGATIONS:
            rows, argument = self._navigate(node)
            return _replace(node, self._gathered(argument, rows))
        if name is not None:  # MATCH_NUMBER and FINAL: planner/mr_analyze.py refuses them in DEFINE
            self._refuse(node, f"{name}()")
        if mx.is_aggregate(node):
            return _replace(node, self._aggregate(node))
        if isinstance(node, exp.Column):
            return _replace(node, self._gathered(node, self._last(self.h.members(mx.qualifier(node)), 0)))
        for child in list(node.iter_expressions()):
            self._rewrite(child)
        return node

    def _last(self, members, n: int) -> "_Rows":
        """The rows of ``LAST(X, n)`` (-1: none), per thread and for one thread."""
        return self._logical(members, True, n)

    def _logical(self, members, from_last: bool, n: int) -> "_Rows":
        current = members is None or self.v in members   # the current row is X's last
        if current and from_last and n == 0:
            return _Rows(lambda regs, row, size: np.full(len(regs), row, np.int64), lambda r, row, size: row)
        kind = "last" if from_last else "first"
        at = self.h.quantity(kind, members, keep=(n if current else n + 1) if from_last else n + 1, expr=self.expr)
        self.quantities.add(at)

        def row_of(r, row, size):
            seen = r[at] + (row,) if current else r[at]
            if len(seen) > n:
                return seen[-1 - n] if from_last else seen[n]
            return -1

        def rows(regs, row, size):
            out = np.full(len(regs), -1, np.int64)
            for i, r in enumerate(regs):
                seen = r[at] + (row,) if current else r[at]
                if len(seen) > n:
                    out[i] = seen[-1 - n] if from_last else seen[n]
            return out
        return _Rows(rows, row_of)

    def _navigate(self, node) -> tuple["_Rows", exp.Expression]:
        name = mx.function_name(node)
        args = mx.arguments(node)
        n = mx.navigation_offset(node)
        argument = args[0]
        for sub in argument.walk():
            if mx.function_name(sub) in (mx.CLASSIFIER, mx.MATCH_NUMBER):
                self._refuse(sub, f"{mx.function_name(sub)}() inside {name}")
        if name in mx.LOGICAL:
            return self._logical(self._set_of(argument), name == mx.LAST, n), argument
        if mx.function_name(argument) in mx.LOGICAL:
            base, argument = self._navigate(argument)
        else:
            base = self._last(self._set_of(argument), 0)
        step = -n if name == mx.PREV else n

        def row_of(r, row, size):
            at = base.one(r, row, size)
            moved = at + step
            return moved if at >= 0 and 0 <= moved < size else -1

        def rows(regs, row, size):
            at = base.many(regs, row, size)
            moved = at + step
            return np.where((at >= 0) & (moved >= 0) & (moved < size), moved, -1)
        return _Rows(rows, row_of), argument

    def _set_of(self, argument: exp.Expression):
        qualifiers = [mx.qualifier(c) for c in argument.find_all(exp.Column) if not mx.is_star(c)]
        return self.h.members(next((q for q in qualifiers if q), None))

    def _gathered(self, argument: exp.Expression, at: "_Rows") -> exp.Expression:
        """``argument`` with each column replaced by a field of its values at the rows ``at``."""
        tree = argument.copy()
        columns = [tree] if isinstance(tree, exp.Column) else list(tree.find_all(exp.Column))
        row_of = at.one

        def rows(regs, row, part):
            return at.many(regs, row, part.n)

        def scalar(part, name, node):
            values = self._column(part, name, node)
            kind = _scalar_kind(values.type)
            if kind is None:
                return None
            got = part.lists.get(name)
            if got is None:
                got = part.lists[name] = _python_values(values, kind)
            size = part.n

            def value(r, row):
                at = row_of(r, row, size)
                return got[at] if at >= 0 else None
            return kind, value

        for column in columns:
            name = column.name
            new = self._field(lambda regs, row, part, name=name, node=column:
                              _take(self._column(part, name, node), rows(regs, row, part)),
                              lambda part, name=name, node=column: scalar(part, name, node))
            if column is tree:
                return new
            column.replace(new)
        return tree

    def _column(self, part: _Partition, name: str, node) -> pa.Array:
        got = part.columns.get(name)
        if got is None:
            lowered = {c.lower(): c for c in part.table.column_names}
            real = lowered.get(name.lower())
            if real is None:
                raise AnalysisError.at(self.h.text, mx.node_offset(self.expr, node), f"Unknown column '{name}'",
                                       "UNKNOWN_COLUMN", f"the input has columns {', '.join(part.table.column_names)}")
            got = part.columns[name] = part.table.column(real).combine_chunks()
        return got

    def _aggregate(self, node) -> exp.Expression:
        kind = mx.aggregate_kind(node)
        if kind is None:
            self._refuse(node, node.sql(dialect="spark"))
        args = mx.aggregate_arguments(node)
        argument = args[0] if args else None
        star = argument is None or mx.is_star(argument)
        if star:
            members = self.h.members(argument.table or None) if isinstance(argument, exp.Column) else None
            at = self.h.quantity("count", members, expr=self.expr)
        else:
            members = self._set_of(node)
            bare = node.copy()
            for column in list(bare.find_all(exp.Column)):
                column.set("table", None)
            at = self.h.quantity(kind, members, bare, expr=self.expr)
        self.quantities.add(at)
        v = self.v
        h = self.h

        def values(regs, row, part):
            q = h.quantities[at]
            arg = part.args.get(at)
            now = [_step(q, r[at], row, v, arg) if q.holds(v) else r[at] for r in regs]
            if q.kind == "count":
                return pa.array(now, pa.int64())
            if arg.fold is not None:
                return pa.array([arg.fold.value(x) for x in now], arg.fold.result_type)
            result = aggregate_type(q.kind, arg.values.type)
            if q.kind in ("min", "max"):
                best = np.array(now, np.int64)
                return _take(arg.values, best).cast(result)
            return pa.array([_aggregate_value(q.kind, x, arg) for x in now], result)

        def scalar(part):
            q = h.quantities[at]
            arg = part.args.get(at)
            if q.kind == "count":
                kind = INT
            elif arg.fold is not None:
                return None
            else:
                result = aggregate_type(q.kind, arg.values.type)
                kind = _scalar_kind(result)
                if kind is None or (q.kind in ("min", "max") and result != arg.values.type):
                    return None
            holds = q.holds(v)

            def now(r, row):
                return _step(q, r[at], row, v, arg) if holds else r[at]
            if q.kind == "count":
                return kind, now
            if q.kind in ("min", "max"):
                best_values = _python_values(arg.values, kind)
                return kind, lambda r, row: best_values[b] if (b := now(r, row)) >= 0 else None
            average = q.kind == "avg"

            def total(r, row):  # _aggregate_value of a sum or avg that is not a DECIMAL
                reg = now(r, row)
                count, value, bad = reg
                if count == 0:
                    return None
                if bad:
                    return _aggregate_value(q.kind, reg, arg)  # raises Spark's overflow error
                if average:
                    return value / count
                return float(value) if kind == FLOAT else value
            return kind, total
        return self._field(values, scalar)

    # -- evaluation (per batch)
    def evaluate(self, regs: list[Registers], row: int, part: _Partition) -> list | np.ndarray:
        fast = self.scalar(part) if len(regs) < SCALAR_BATCH else None
        if fast is not None:
            try:
                return [fast(r, row) for r in regs]
            except Exception:  # noqa: BLE001 - a register or an operation that may raise: cerql.expr decides
                pass
        return self.evaluate_arrow(regs, row, part)

    def _compile(self, part: _Partition) -> None:
        if self._fn is None or self._columns != tuple(part.table.column_names):
            self._fn, self._columns = _compiled(self.tree, self.h.text, self.expr), tuple(part.table.column_names)

    def scalar(self, part: _Partition) -> Callable | None:
        """The condition as a function of one thread's registers and the row (true or not), when
        exec/mr_scalar.py takes its shape and its fields' types; else None. Once per partition,
        after cerql.expr compiled it (its errors come first, as before)."""
        got = part.scalar.get(self.v, _UNSET)
        if got is _UNSET:
            self._compile(part)
            got = part.scalar[self.v] = None if _SCALAR_OFF else self._scalar_form(part)
        return got

    def _scalar_form(self, part: _Partition) -> Callable | None:
        fields = [scalar(part) for scalar in self.scalars]
        fn = mr_scalar.compile_condition(self.tree, [f[0] if f else None for f in fields])
        if fn is None:
            return None
        values = [f[1] for f in fields]
        if len(values) == 1:
            only = values[0]
            return lambda r, row: fn([only(r, row)]) is True
        return lambda r, row: fn([value(r, row) for value in values]) is True

    def evaluate_arrow(self, regs: list[Registers], row: int, part: _Partition) -> np.ndarray:
        """``evaluate`` with cerql.expr, over a table of the threads' fields."""
        self._compile(part)
        k = len(regs)
        fields = {FIELD.format(i): read(regs, row, part) for i, read in enumerate(self.reads)}
        table = pa.table(fields) if fields else pa.table({"__cerql_mr_rows": pa.array(np.zeros(k, np.int8))})
        value = evaluate(self._fn, table)
        if pa.types.is_null(value.type):
            return np.zeros(k, bool)
        if not pa.types.is_boolean(value.type):
            raise AnalysisError.at(self.h.text, mx.node_offset(self.expr), f"DEFINE condition '{self.expr.text}' is "
                                   f"{value.type}, not boolean", "MATCH_RECOGNIZE_DEFINE_NOT_BOOLEAN",
                                   "a DEFINE condition must be true or false for a row, e.g. price > PREV(price)")
        return np.asarray(value.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


@dataclass(frozen=True)
class _Rows:
    """The rows a navigation reads (-1: none), given the registers, the current row and the
    partition's size: ``many`` for a batch of threads (a NumPy array), ``one`` for one thread."""

    many: Callable
    one: Callable


SCALAR_BATCH = 64  # threads from which cerql.expr (a fixed cost per batch) is faster than Python per thread
_UNSET = object()
_SCALAR_OFF = False  # tests set it to compare the scalar form with cerql.expr's


def _scalar_kind(t: pa.DataType) -> int | str | None:
    """A field's kind for exec/mr_scalar.py: a signed integer's width, DOUBLE; else None."""
    if pa.types.is_signed_integer(t):
        return t.bit_width
    if pa.types.is_float64(t):
        return FLOAT
    return None


def _python_values(values: pa.Array, kind: str) -> list:
    """A column's values as Python numbers (None for NULL), DOUBLEs as floats."""
    got = values.to_pylist()
    return [None if x is None else float(x) for x in got] if kind == FLOAT else got


def _replace(node: exp.Expression, new: exp.Expression) -> exp.Expression:
    return node.replace(new) if node.parent is not None else new


def _take(values: pa.Array, rows: np.ndarray) -> pa.Array:
    got = values.take(pa.array(np.where(rows >= 0, rows, 0), mask=rows < 0)) if len(values) else \
        pa.nulls(len(rows), values.type)
    return got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got



__all__ = ["History", "Quantity", "Registers"]
