"""Spark's analyzer as the type checker of what Spark evaluates for a query.

On Spark, unary FILTER predicates (the condition bits) and SELECT items are Spark SQL that
Spark itself evaluates, so they may use any of Spark's built-in scalar functions, not only the
ones cerql's local engine can run (planner/resolve.py leaves those out of the plan as None). They
still must fail before any job runs, at their place in the query: each is analysed here on the
lazy DataFrame it will run on (analysis runs no job), and an ``AnalysisException`` becomes an
:class:`cerql.errors.AnalysisError` with Spark's error class, its message with cerql's hidden
column names turned back into the user's, and the position of the expression.

What planner/safety.py cannot know without a session is checked here too: a function sqlglot
does not know must be one of Spark's built-ins, not a temporary or catalog UDF (whose code
could do anything on the executors).
"""

from __future__ import annotations

import contextlib
import re
from typing import Mapping

from sqlglot import exp

from cerql import ast
from cerql.errors import AnalysisError, UnsupportedError
from cerql.parser.sqlexpr import expr_position

# pyspark logs every AnalysisException with its JVM stack before raising it; a query error
# cerql reports itself must not print one
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

_builtins: dict[tuple[int, str], bool] = {}  # (id of the session, name) -> is a built-in


@contextlib.contextmanager
def quiet_analysis():
    """pyspark's own error logging off while cerql analyses expressions it reports itself. The
    loggers are taken as pyspark makes them (a PySparkLogger takes keywords a plain Logger does
    not): one that cerql created first would break pyspark's later calls on it."""
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(name) for name in _PYSPARK_ERROR_LOGGERS]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before):
            lg.disabled = was


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_system_functions: dict[int, frozenset] = {}  # id of the session -> every built-in's name


def is_builtin(spark, name: str) -> bool:
    """Whether ``name`` is one of Spark's built-in functions (``SHOW SYSTEM FUNCTIONS``, which
    lists no temporary or catalog function), asked once per session and name. The name never
    becomes SQL text: a plain identifier is the LIKE pattern (no character of it is one of the
    pattern's wildcards, ``*`` and ``|``, or a quote); any other name (a backquoted one, ``ab\\``
    or ``+``) is looked up exactly in the whole list, fetched once per session."""
    name = name.lower()
    key = (id(spark), name)
    if key not in _builtins:
        if _IDENTIFIER.fullmatch(name):
            _builtins[key] = bool(spark.sql(f"SHOW SYSTEM FUNCTIONS LIKE '{name}'").collect())
        else:
            if id(spark) not in _system_functions:
                _system_functions[id(spark)] = frozenset(
                    row[0].lower() for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect())
            _builtins[key] = name in _system_functions[id(spark)]
    return _builtins[key]


def check_builtins(spark, sql: ast.SqlExpr, text: str) -> None:
    """Refuse a call of a function that is not a Spark built-in (a UDF), before Spark runs it."""
    for node in sql.tree.find_all(exp.Anonymous):
        name = node.name.lower()
        if not is_builtin(spark, name):
            raise UnsupportedError.at(text, expr_position(sql, node), f"'{name}' is not a built-in function of Spark",
                                      "USER_FUNCTION_NOT_ALLOWED",
                                      "only Spark's built-in functions run inside a pattern; a UDF may be applied "
                                      "in a view over the source, or to the result")


def _readable(message: str, names: Mapping[str, str]) -> str:
    """Spark's message with the plan's hidden column names shown as the user's, and without
    the logical plan Spark appends."""
    first = message.split("; line ")[0].split("\n")[0]
    for hidden in sorted(names, key=len, reverse=True):
        first = first.replace(hidden, names[hidden])
    return re.sub(r"#\d+", "", first)


def quoted(name: str) -> str:
    """A name as a Spark SQL identifier, whatever characters it holds (backticks doubled): a
    column named ``a.b``, ``x`y`` or ``my col`` read as that one column, not a struct's field."""
    return "`" + name.replace("`", "``") + "`"


def orderable(data_type) -> bool:
    """Whether Spark can sort (and so group) by a value of this Spark type: not a map, a variant
    or a CalendarInterval, nor an array or struct holding one."""
    from pyspark.sql.types import ArrayType, CalendarIntervalType, MapType, StructType, VariantType

    if isinstance(data_type, (MapType, VariantType, CalendarIntervalType)):
        return False
    if isinstance(data_type, ArrayType):
        return orderable(data_type.elementType)
    if isinstance(data_type, StructType):
        return all(orderable(f.dataType) for f in data_type.fields)
    return True


def analyzed_type(frame, column, sql: ast.SqlExpr, text: str, names: Mapping[str, str], what: str):
    """The Spark type of ``column`` (the expression ``sql``) on ``frame``, analysed now. Spark's
    analysis errors are this query's AnalysisError at the expression; ``names``: hidden column
    names to show as the user's."""
    from pyspark.errors import AnalysisException

    try:
        with quiet_analysis():
            # beside a column of the frame, so an aggregate is an error (MISSING_AGGREGATION), as
            # it would be in the plan, instead of a one-row answer
            return frame.select(quoted(frame.columns[0]), column.alias("__cerql_value")).schema["__cerql_value"].dataType
    except AnalysisException as err:
        condition = err.getCondition() or "SPARK_ANALYSIS_ERROR"
        raise AnalysisError.at(text, expr_position(sql, sql.tree), f"Spark cannot analyse {what} '{sql.text}': "
                               f"{_readable(err.getMessage(), names)}", condition,
                               "the expression is Spark SQL over the event's columns; see Spark's message") from None


def check_predicate(frame, column, sql: ast.SqlExpr, text: str, names: Mapping[str, str]) -> None:
    """A unary FILTER predicate Spark evaluates: it must analyse, and be boolean."""
    kind = analyzed_type(frame, column, sql, text, names, "the FILTER predicate")
    if kind.typeName() not in ("boolean", "void"):
        raise AnalysisError.at(text, expr_position(sql, sql.tree), f"FILTER predicate '{sql.text}' is "
                               f"{kind.simpleString()}, not boolean", "NON_BOOLEAN_FILTER",
                               "a predicate compares, e.g. price > 10")


__all__ = ["analyzed_type", "check_builtins", "check_predicate", "is_builtin", "orderable", "quiet_analysis", "quoted"]
