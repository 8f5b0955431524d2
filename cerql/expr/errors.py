"""What a compiled expression raises instead of giving an answer Spark would not give.

:class:`ExprError` carries Spark's error class (ARITHMETIC_OVERFLOW, DIVIDE_BY_ZERO,
CAST_INVALID_INPUT...) and the node, and the caller (:func:`cerql.expr.core.guard`) turns it
into a positioned CeqlError; :class:`LocalTypeRefusal` and :class:`SparkTypeMismatch` are the
TypeErrors of type-checking on an empty table (planner/resolve.py ``check``). The builders of
these errors live here, apart from the families that raise them, so that each error class is
worded once (docs/semantics.md, "Expressions in the local engines").
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from cerql.errors import ExecutionError, UnsupportedError
from cerql.expr.kinds import _is_num, _is_str, _spark_type_name


SUPPORTED = (
    "comparisons (= == <=> != <> < <= > >=, IS [NOT] DISTINCT FROM), AND, OR, NOT, + - * / % div, "
    "[NOT] IN (list), [NOT] BETWEEN, [NOT] LIKE, ILIKE, RLIKE, IS [NOT] NULL/TRUE/FALSE, CASE, IF, "
    "COALESCE/NVL/IFNULL, NULLIF, NVL2, CAST/TRY_CAST, TIMESTAMP/DATE literals, abs, floor, ceil, "
    "round, sqrt, isnan, greatest, least, lower, upper, timestamp - timestamp, timestamp +/- INTERVAL, "
    "day-time INTERVAL literals, "
    "length, substring/substr, startswith, endswith, contains, concat/||, trim, ltrim, rtrim, "
    "year, month, day/dayofmonth, dayofweek, hour, minute, second, date_format (yyyy MM dd HH mm ss)"
)


class ExprError(Exception):
    """Raised by the compiler; the caller turns it into a positioned CeqlError."""

    def __init__(self, cls, message: str, node: exp.Expression, error_class: str, hint: str | None = None,
                 offset: int | None = None):
        super().__init__(message)
        self.cls, self.message, self.node, self.error_class, self.hint = cls, message, node, error_class, hint
        self.offset = offset  # where in the query, when ``node`` cannot say (a call's name as written)


class LocalTypeRefusal(TypeError):
    """Operands of a type the local engine does not take where Spark would cast them: raised
    while type-checking on an empty table, so the planner refuses the query before reading
    data (or, planning for Spark, leaves the expression to Spark's analyzer)."""


def _unsupported(node: exp.Expression, what: str | None = None, hint: str | None = None) -> ExprError:
    name = what or f"'{node.sql(dialect='spark')}'"
    return ExprError(UnsupportedError, f"{name} is not supported by cerql's local engine (cerql.run); "
                     "spark.cer_sql runs it", node, "UNSUPPORTED_EXPRESSION", hint or f"supported: {SUPPORTED}")


def refuse_call(name: str, offset: int) -> ExprError:
    """A call written with a name the local engine does not evaluate (parser/written.py:
    sqlglot may read it as another function), at ``offset`` in the query."""
    err = _unsupported(None, f"'{name}'")
    err.offset = offset
    return err


def _refuse_type(node: exp.Expression, *kinds: pa.DataType) -> TypeError:
    """The error for operands the local engine does not take: a STRING mixed with a number is a
    type mismatch of the query (cerql rejects ``name > 5`` before anything runs, where Spark
    would cast each string and fail on the first that is not a number); other mixes that Spark
    casts (``date + 1``, ``CAST(t AS BIGINT)``) are a LocalTypeRefusal."""
    shown = ", ".join(_spark_type_name(k) for k in kinds)
    if any(_is_str(k) for k in kinds) and any(_is_num(k) for k in kinds):
        return TypeError(f"'{node.sql(dialect='spark')}' mixes {shown}")
    return LocalTypeRefusal(f"'{node.sql(dialect='spark')}' on {shown} is not supported by cerql's local engine "
                            "(cerql.run); spark.cer_sql runs it")


# Where Spark's analyzer refuses the operand types of an expression, the local engine refuses
# them with the same error class (DATATYPE_MISMATCH.*), raised when the planner type-checks the
# expression on an empty table, so both engines refuse the query before reading data. The rules
# below are Spark 4's (tests/spark/test_timestamp_arithmetic.py compares them with its analyzer,
# pair by pair). A type family: T a TIMESTAMP or TIMESTAMP_NTZ, D a DATE, V a day-time
# INTERVAL (an Arrow duration), I an integer of at most 32 bits, L a BIGINT, N another number,
# S a STRING, B a BOOLEAN, 0 NULL.
_TIME_HINT = ("a TIMESTAMP compares with a TIMESTAMP, a DATE or a STRING (ts > TIMESTAMP '2024-01-01 00:00:00'); "
              "the difference of two is an INTERVAL: b.ts - a.ts < INTERVAL 5 MINUTES, ts + INTERVAL '1:30' MINUTE TO SECOND")


class SparkTypeMismatch(LocalTypeRefusal):
    """Operand types Spark's analyzer refuses too (``error_class``: its DATATYPE_MISMATCH.*),
    raised when the planner type-checks the expression on an empty table. A LocalTypeRefusal,
    so a query planned for Spark leaves the expression to Spark's analyzer, which reports it with
    its own message and position; the local engine's message names Spark's error class and
    never says that Spark runs it."""

    def __init__(self, message: str, error_class: str, hint: str):
        super().__init__(message)
        self.error_class, self.hint = error_class, hint


def _mismatch(node: exp.Expression, error_class: str, *kinds: pa.DataType) -> SparkTypeMismatch:
    """Spark's analyzer refuses these operand types (see :class:`SparkTypeMismatch`)."""
    shown = " and ".join(_spark_type_name(k) for k in kinds)
    reason = {"BINARY_OP_DIFF_TYPES": "the operands have incompatible types",
              "BINARY_OP_WRONG_TYPE": "the operator does not take operands of this type",
              "DATA_DIFF_TYPES": "the values must all have one type",
              "UNEXPECTED_INPUT_TYPE": "an operand has a type the operator or function does not take",
              "CAST_WITHOUT_SUGGESTION": "the cast is not defined",
              "CAST_WITH_FUNC_SUGGESTION": "the cast is not defined (Spark suggests a function)"}[error_class]
    return SparkTypeMismatch(f"Cannot resolve '{node.sql(dialect='spark')}' due to "
                             f"data type mismatch: {reason} ({shown}); Spark's analyzer refuses it too",
                             f"DATATYPE_MISMATCH.{error_class}", _TIME_HINT)


def _overflow_error(node: exp.Expression, kind: pa.DataType | None = None) -> ExprError:
    narrow = kind is not None and (pa.types.is_int8(kind) or pa.types.is_int16(kind))
    return ExprError(ExecutionError, f"Integer overflow in '{node.sql(dialect='spark')}'", node,
                     "BINARY_ARITHMETIC_OVERFLOW" if narrow else "ARITHMETIC_OVERFLOW",
                     "cast to a wider type first, or use try_add, try_subtract or try_multiply, which give NULL")


def _out_of_range(node, shown, kind: pa.DataType) -> ExprError:
    return ExprError(ExecutionError, f"{shown} cannot be represented as {_spark_type_name(kind)} in "
                     f"'{node.sql(dialect='spark')}'", node, "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION",
                     "use try_cast, or a wider DECIMAL")


def _by_zero(node, op: str) -> ExprError:
    if op == "%":
        return ExprError(ExecutionError, f"Remainder by zero in '{node.sql(dialect='spark')}'", node,
                         "REMAINDER_BY_ZERO", "use try_mod to get NULL for a zero divisor")
    return ExprError(ExecutionError, f"Division by zero in '{node.sql(dialect='spark')}'", node,
                     "DIVIDE_BY_ZERO", "use try_divide to get NULL for a zero divisor")
