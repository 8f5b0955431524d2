"""What may run inside a query's Spark SQL fragments (FILTER brackets and terms, SELECT items).

Input: one :class:`cerql.ast.SqlExpr` and the query text. Output: nothing, or a positioned
:class:`cerql.errors.UnsupportedError`. Spark evaluates these fragments on the JVM for every
event, so they must be scalar, deterministic, side-effect-free built-in expressions over the
query's own event columns:

- no subqueries (``x IN (SELECT …)``, ``EXISTS``, ``(SELECT …)``): they would read other tables;
- no column qualified by a table or database (``db.t.col``), and no function qualified by one
  (``db.fn(x)``: a catalog function, user-defined);
- no window (``OVER``) or generator (``explode``, ``stack``, ``inline``): they are not scalar;
- no function that reaches outside the query (``java_method``, ``reflect``, ``try_reflect``),
  stops it on purpose (``raise_error``, ``assert_true``), or gives a different answer on another
  run (``rand``, ``uuid``, ``current_timestamp``, ``spark_partition_id``, …): a match must not
  depend on when or where a task ran, and the local engine must be able to give Spark's answer.

These checks need no schema and no session, so every engine makes them while analysing the
query (planner/analyze.py), before any data is read. That a function exists and is a built-in
of Spark (not a temporary or catalog UDF) is checked against the session by
spark/expressions.py.
"""

from __future__ import annotations

from sqlglot import exp

from cerql import ast
from cerql.errors import UnsupportedError
from cerql.parser.sqlexpr import expr_position

#: Built-ins that reach outside the query or fail it on purpose.
UNSAFE = frozenset({"java_method", "reflect", "try_reflect", "raise_error", "assert_true"})

#: Spark's nondeterministic built-ins, and those that read the time, the user or the session.
NONDETERMINISTIC = frozenset({
    "rand", "randn", "random", "uniform", "randstr", "uuid", "shuffle",
    "current_timestamp", "current_date", "current_time", "curdate", "now", "localtimestamp",
    "current_timezone", "current_user", "user", "session_user", "current_catalog",
    "current_database", "current_schema", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "input_file_block_start", "input_file_block_length",
})

_NOT_SCALAR = (exp.Window, exp.Explode, exp.Posexplode, exp.Inline, exp.Stack, exp.Unnest)
#: Spark's generators by name (rows, not a value), for those sqlglot reads as unknown functions.
GENERATORS = frozenset({
    "explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer", "stack",
    "json_tuple", "variant_explode", "variant_explode_outer",
})
_SUBQUERY = (exp.Subquery, exp.Select, exp.Exists, exp.Union, exp.Table)


def function_names(node: exp.Func) -> set[str]:
    """The names a function call may be known by in Spark, lower case: the name as written for
    a function sqlglot does not know, else every name sqlglot reads as that function
    (``random()`` and ``rand()`` are both ``Rand``). Operators (``exp.Binary``: AND, =, +) have
    none. Taken from the class, never by generating SQL: a node's SQL is its whole subtree, so
    doing that for every node of a long FILTER would be quadratic."""
    if isinstance(node, exp.Anonymous):
        return {node.name.lower()}
    if isinstance(node, exp.Binary):
        return set()
    return {name.lower() for name in type(node).sql_names()}


def _refuse(sql: ast.SqlExpr, node: exp.Expression, text: str, message: str, error_class: str,
            hint: str) -> UnsupportedError:
    return UnsupportedError.at(text, expr_position(sql, node), message, error_class, hint)


def check(sql: ast.SqlExpr, text: str) -> None:
    """Refuse ``sql`` unless it is a scalar, deterministic, self-contained expression (module
    docstring)."""
    shown = lambda node: node.sql(dialect="spark")  # noqa: E731
    for node in sql.tree.walk():
        if isinstance(node, _SUBQUERY) or (isinstance(node, exp.In) and node.args.get("query") is not None):
            raise _refuse(sql, node, text, f"Subquery in '{sql.text}'", "SUBQUERY_NOT_ALLOWED",
                          "a pattern's predicates and SELECT items read the events' own columns only; "
                          "join the other table into a source (a view) before the query")
        if isinstance(node, _NOT_SCALAR) or isinstance(node, exp.Func) and function_names(node) & GENERATORS:
            raise _refuse(sql, node, text, f"'{shown(node)}' is not a scalar expression", "NOT_SCALAR_EXPRESSION",
                          "windows and generators are not allowed here; compute them in a view over the "
                          "source, or on the result")
        if isinstance(node, exp.Column) and node.args.get("db") is not None:
            raise _refuse(sql, node, text, f"'{shown(node)}' refers to another table", "OTHER_TABLE_REFERENCE",
                          "columns are an event's own: col inside var[...], var.col elsewhere")
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func) and isinstance(node.this, (
                exp.Identifier, exp.Dot)):
            raise _refuse(sql, node, text, f"'{shown(node)}' calls a catalog function", "USER_FUNCTION_NOT_ALLOWED",
                          "only Spark's built-in functions run inside a pattern; compute the value in a "
                          "view over the source first")
        if isinstance(node, exp.Func):
            names = function_names(node)
            if names & UNSAFE:
                raise _refuse(sql, node, text, f"'{min(names & UNSAFE)}' is not allowed in a query", "UNSAFE_FUNCTION",
                              "cerql runs only functions that read the event's own columns")
            if names & NONDETERMINISTIC:
                raise _refuse(sql, node, text, f"'{shown(node)}' is nondeterministic", "NONDETERMINISTIC_FUNCTION",
                              "a match must not depend on when or where it was computed; pass the value "
                              "as a literal, or add it as a column of the source")


__all__ = ["check", "function_names", "GENERATORS", "UNSAFE", "NONDETERMINISTIC"]
