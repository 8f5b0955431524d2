"""Compiling an expression and running it: the entry points and the function table.

:func:`compile_expr` turns a sqlglot expression into ``fn(table) -> pyarrow value``;
:func:`evaluate` and :func:`evaluate_predicate` run such a function on a table (a whole array;
a NumPy bool mask, NULL as false: docs/language.md, "NULL"); :func:`guard` turns the errors it
raises into positioned CeqlErrors. Compiling dispatches on the node's class through
:data:`BY_NODE`, built from each family module's own table, as sqlglot's executor keeps its
functions in a table; a node no table has is refused (UNSUPPORTED_EXPRESSION).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.expr import casts, comparisons, conditionals, literals, numeric, strings, times
from cerql.expr.coercion import decimal_to_double
from cerql.expr.errors import ExprError, _unsupported
from cerql.expr.kinds import Compiled, Handler, Value, _is_dec
from cerql.expr.literals import literal_scalar
from cerql.expr.rows import _Env
from cerql.expr.session import _ZONE, SESSION_TIME_ZONE


def compile_expr(node: exp.Expression, resolve: Callable[[exp.Column], str], time_zone: str | None = None) -> Compiled:
    """Compile ``node``; ``resolve`` maps each column reference to a field of the input table.
    ``time_zone`` is the session time zone the expression reads times in (Spark's
    ``spark.sql.session.timeZone``), fixed when it is compiled, so a function shipped to a
    Spark worker keeps it; by default SESSION_TIME_ZONE (cerql.expr.session), UTC.

    A decimal literal that is the whole expression (``1.5``: the constant of a register check
    such as ``max(b.p) > 150.5``, or a SELECT item) is a DOUBLE, as it was before DECIMAL
    literals: the planner's register checks (planner/resolve.py ``register_check``,
    ``aggregate_check``) take integer and float constants only, and without them an aggregate
    over a Kleene variable enumerates every subset. Spark compares a DOUBLE aggregate with it as
    a DOUBLE too; an integer one above 2**53 compares exactly on Spark only. Inside an
    expression a decimal literal is a DECIMAL."""
    bare = node
    while isinstance(bare, exp.Paren):
        bare = bare.this
    negative = isinstance(bare, exp.Neg)
    if negative:
        bare = bare.this
    if isinstance(bare, exp.Literal) and not bare.is_string:
        value = literal_scalar(bare, negative)
        if _is_dec(value.type):
            value = pa.scalar(decimal_to_double(value.as_py()), pa.float64())
        return lambda t: value
    fn = _Compiler(resolve)(node)
    zone = time_zone or SESSION_TIME_ZONE
    return lambda t: _evaluate(fn, zone, t)


def _evaluate(fn, zone: str, t: pa.Table) -> Value:
    """``fn`` on ``t`` with ``zone`` as the session time zone (a module function: the compiled
    closure must pickle for Spark's workers, a ContextVar does not)."""
    token = _ZONE.set(zone)
    try:
        return fn(_Env(t))
    finally:
        _ZONE.reset(token)


def _read(t: pa.Table, name: str) -> Value:
    """A column as Spark holds it: dictionaries decoded, timestamps in microseconds (Spark's
    precision; nanoseconds are truncated as Spark's createDataFrame does), large strings as
    strings."""
    col = t.column(name)
    kind = col.type
    if pa.types.is_dictionary(kind):
        col, kind = col.cast(kind.value_type), kind.value_type
    if pa.types.is_timestamp(kind) and kind.unit != "us":
        col = pc.cast(col, pa.timestamp("us", kind.tz), safe=False)
    elif pa.types.is_large_string(kind):
        col = pc.cast(col, pa.string())
    return col


class _Compiler:
    """Compiles the subexpressions of one expression: ``c(node)`` is ``node``'s function of the
    rows (``_Env -> value``), ``c.resolve`` the column resolver compile_expr was given. The
    handlers of :data:`BY_NODE` receive it; a compiled function that compiles more while it runs
    (substring's position) keeps it, so it pickles with the function for Spark's workers."""

    __slots__ = ("resolve",)

    def __init__(self, resolve: Callable[[exp.Column], str]):
        self.resolve = resolve

    def __call__(self, node: exp.Expression) -> Callable[[_Env], Value]:
        handler = _handler(node)
        if handler is None:
            raise _unsupported(node)
        return handler(node, self)


def _compile_column(node: exp.Column, c: _Compiler):
    name = c.resolve(node)
    return lambda env: _read(env.table, name)


def _compile_paren(node: exp.Paren, c: _Compiler):
    return c(node.this)


# The function table: the handler of each sqlglot node class the local engine evaluates, one
# table per family (their modules), as sqlglot's own executor keeps its functions in a table.
BY_NODE: dict[type, Handler] = {
    exp.Column: _compile_column, exp.Paren: _compile_paren,
    **literals.BY_NODE, **comparisons.BY_NODE, **conditionals.BY_NODE, **numeric.BY_NODE, **casts.BY_NODE,
    **strings.BY_NODE, **times.BY_NODE,
}
# Calls sqlglot reads as an anonymous function, by lower-case name. Empty: sqlglot reads every
# function the local engine runs as its own node class (parser/written.py LOCAL_FUNCTIONS names
# them as written); a call it does not know is refused.
BY_NAME: dict[str, Handler] = {}


def _handler(node: exp.Expression) -> Handler | None:
    """The handler of ``node``: by name for an anonymous call, else by its class or the nearest
    of its base classes that has one (``TRY_CAST`` is a ``CAST`` to sqlglot)."""
    if isinstance(node, exp.Anonymous):
        return BY_NAME.get(str(node.this).lower())
    for klass in type(node).__mro__:
        handler = BY_NODE.get(klass)
        if handler is not None:
            return handler
    return None


def guard(fn: Compiled, raise_error: Callable[[ExprError], Exception]) -> Compiled:
    """``fn`` with the errors it raises while evaluating (:class:`ExprError`, e.g. a CAST of a
    malformed string) turned into ``raise_error(err)``, a positioned CeqlError."""

    def guarded(t):
        try:
            return fn(t)
        except ExprError as err:
            raise raise_error(err) from None

    return guarded


def evaluate(fn: Callable, table: pa.Table) -> pa.Array:
    """Run a compiled expression on a table; scalars are broadcast to the table's length."""
    value = fn(table)
    if isinstance(value, pa.Scalar):
        return pa.array([value.as_py()] * table.num_rows, type=value.type)
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    return value


def evaluate_predicate(fn: Callable, table: pa.Table):
    """A predicate as a NumPy bool array; NULL counts as false."""
    value = evaluate(fn, table)
    if pa.types.is_null(value.type):
        value = pa.array([False] * len(value), pa.bool_())
    return np.asarray(pc.fill_null(value, False).to_numpy(zero_copy_only=False), dtype=bool)
