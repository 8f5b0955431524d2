"""Spark SQL expressions (sqlglot trees) evaluated over Arrow tables, without Spark.

Input: a sqlglot expression and a column resolver. Output: ``fn(table) -> pyarrow value`` built
from ``pyarrow.compute`` kernels, for what runs without Spark: the local engine and the
reference evaluator (``cerql.run``), and the parts of a Spark task that run in Python
(predicates across variables, aggregates). docs/semantics.md "Expressions in the local engines"
is the user's account of what follows. The planner compiles and type-checks expressions with
it (planner/resolve.py), the engines run them (cerql.exec); it imports neither.

The rule: a compiled expression gives Spark's answer (Spark SQL 4, ANSI mode on, the session
time zone ``SESSION_TIME_ZONE``), or is refused; never another answer. So values carry Spark's
types as Arrow types: an integer literal is INT (int32) when it fits, a literal with a point
(``0.5``) is DECIMAL (decimal128), and numbers widen as Spark widens them (integer and decimal
to DECIMAL, exactly; anything with a float to DOUBLE, or FLOAT). NaN equals NaN and is above
every number. ``round`` is HALF_UP on the value's decimal text, ``upper``/``lower`` use the full
Unicode case mapping, ``ln`` of 0 is NULL, casts follow Spark's parsers and printers, times are
read in the session time zone. Where Spark raises, the compiled function raises
:class:`ExprError` with Spark's error class (ARITHMETIC_OVERFLOW, DIVIDE_BY_ZERO,
REMAINDER_BY_ZERO, CAST_INVALID_INPUT, CAST_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE...), which
:func:`guard` turns into the positioned ExecutionError; and only for rows Spark evaluates: the
right side of AND/OR, CASE/IF branches and COALESCE arguments are evaluated only where Spark
would, so ``b <> 0 AND a / b > 1`` does not raise.

Refusals: a function or form outside the supported set is an :class:`UnsupportedError` at
compile time, with the position, saying that ``spark.cer_sql`` runs it. Operands of a type the
local engine does not take where Spark casts them (``date + 1``, ``CAST(t AS BIGINT)``) raise
:class:`LocalTypeRefusal`, a TypeError, when the planner type-checks the expression on an empty
table (planner/resolve.py ``check``), and a STRING mixed with a number a plain TypeError (the
query's TYPE_MISMATCH); a value the local parsers cannot read as Spark would (a
timestamp string with a zone name) is an UnsupportedError while evaluating.

The modules, one family each: :mod:`.core` (compile_expr, evaluate, guard and the function
table that dispatches on the node's class), :mod:`.literals`, :mod:`.comparisons`,
:mod:`.conditionals`, :mod:`.numeric`, :mod:`.casts`, :mod:`.strings` (with :mod:`.regex`,
RLIKE's patterns), :mod:`.times` (dates, timestamps, intervals); below them the rules they
share: :mod:`.kinds` (Spark's types as Arrow types), :mod:`.coercion` (Spark's implicit casts),
:mod:`.parsing` and :mod:`.printing` (Spark's text of values), :mod:`.rows` (the rows Spark
evaluates), :mod:`.session` (the session time zone), :mod:`.errors`; and :mod:`.tables`
(input columns as Spark types them).
"""

from cerql.expr.core import compile_expr, evaluate, evaluate_predicate, guard
from cerql.expr.errors import SUPPORTED, ExprError, LocalTypeRefusal, SparkTypeMismatch, refuse_call
from cerql.expr.kinds import BIGINT_MAX, BIGINT_MIN, Compiled
from cerql.expr.printing import java_double_string, spark_strings, timestamp_string
from cerql.expr.session import SESSION_TIME_ZONE
from cerql.expr.tables import signed_columns, spark_types

__all__ = [
    "BIGINT_MAX", "BIGINT_MIN", "Compiled", "ExprError", "LocalTypeRefusal", "SESSION_TIME_ZONE", "SUPPORTED",
    "SparkTypeMismatch", "compile_expr", "evaluate", "evaluate_predicate", "guard", "java_double_string",
    "refuse_call", "signed_columns", "spark_strings", "spark_types", "timestamp_string",
]
