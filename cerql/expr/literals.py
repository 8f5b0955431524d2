"""Literals typed as Spark types them: numbers, strings, booleans, NULL, day-time INTERVALs.

An integer literal is INT when it fits, then BIGINT, then DECIMAL; a literal with a point is
DECIMAL(p, s) (``0.285`` is DECIMAL(3,3)), one with an exponent DOUBLE. INTERVAL literals are
read as Spark reads day-time intervals (units, ranges such as ``'1:30' MINUTE TO SECOND``, and
``'1 day 2 hours'``) into a microsecond duration; year-month intervals are refused. Also the
helpers that read a literal operand out of the tree (substring's position, round's scale).
"""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa
from sqlglot import exp

from cerql.errors import UnsupportedError
from cerql.expr.errors import ExprError, _unsupported
from cerql.expr.kinds import _US, MAX_PRECISION, Handler
from cerql.expr.parsing import _trim_all


def _literal_digits(node: exp.Expression) -> int | None:
    """How many digits an integer literal operand has (Spark types it DECIMAL(digits, 0)
    against a DECIMAL), or None for anything else."""
    value = _int_literal(node)
    return None if value is None else max(1, len(str(abs(value))))


def _number_literal(text: str, negative: bool = False) -> pa.Scalar:
    """A number literal typed as Spark types it: INT when it fits, else BIGINT, else DECIMAL;
    with a point and no exponent DECIMAL(p, s) (``0.285`` is DECIMAL(3,3)); with an exponent
    DOUBLE."""
    sign = "-" if negative else ""
    if re.fullmatch(r"\d+", text):
        value = int(sign + text)
        if -2**31 <= value < 2**31:
            return pa.scalar(value, pa.int32())
        if -2**63 <= value < 2**63:
            return pa.scalar(value, pa.int64())
        if len(text.lstrip("0")) <= MAX_PRECISION:
            return pa.scalar(Decimal(value), pa.decimal128(max(1, len(text.lstrip("0"))), 0))
        raise ValueError(text)
    if re.fullmatch(r"\d*\.\d*", text) and text != ".":
        value = Decimal(sign + text)
        _, digits, exponent = value.as_tuple()
        scale = -exponent
        precision = max(len(digits), scale, 1)
        if precision > MAX_PRECISION:
            raise ValueError(text)
        return pa.scalar(value, pa.decimal128(precision, scale))
    return pa.scalar(float(sign + text), pa.float64())


def literal_scalar(node: exp.Literal, negative: bool = False) -> pa.Scalar:
    if node.is_string:
        return pa.scalar(node.this, pa.string())
    try:
        return _number_literal(node.this, negative)
    except ValueError:
        raise _unsupported(node, f"The number literal {node.this}") from None


_UNIT_MICROS = {"WEEK": 7 * 86_400_000_000, "DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000,
                "SECOND": 1_000_000, "MILLISECOND": 1000, "MICROSECOND": 1}


_YEAR_MONTH = {"YEAR", "MONTH", "QUARTER", "DECADE", "CENTURY", "MILLENNIUM"}


# a range 'd h:m:s.f' as Spark reads it: (fields, pattern); every field but the first is bounded
_RANGES = {
    ("DAY", "HOUR"): r"(\d+) (\d{1,2})",
    ("DAY", "MINUTE"): r"(\d+) (\d{1,2}):(\d{1,2})",
    ("DAY", "SECOND"): r"(\d+) (\d{1,2}):(\d{1,2}):(\d{1,2}(?:\.\d*)?)",
    ("HOUR", "MINUTE"): r"(\d+):(\d{1,2})",
    ("HOUR", "SECOND"): r"(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)",
    ("MINUTE", "SECOND"): r"(\d+):(\d{1,2}(?:\.\d*)?)",
}


_RANGE_UNITS = {("DAY", "HOUR"): ("DAY", "HOUR"), ("DAY", "MINUTE"): ("DAY", "HOUR", "MINUTE"),
                ("DAY", "SECOND"): ("DAY", "HOUR", "MINUTE", "SECOND"), ("HOUR", "MINUTE"): ("HOUR", "MINUTE"),
                ("HOUR", "SECOND"): ("HOUR", "MINUTE", "SECOND"), ("MINUTE", "SECOND"): ("MINUTE", "SECOND")}


_BOUND = {"HOUR": 23, "MINUTE": 59, "SECOND": 59}


_INTERVAL_FORMS = ("INTERVAL 5 MINUTES, INTERVAL '90' SECOND, INTERVAL 1.5 SECONDS, INTERVAL '1:30' MINUTE TO SECOND, "
                   "INTERVAL '1 02:03:04.5' DAY TO SECOND, INTERVAL '1 day 2 hours', INTERVAL 1 DAY 2 HOURS "
                   "(units WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND)")


def _unit_name(text: str) -> str:
    unit = text.upper()
    return unit[:-1] if unit.endswith("S") and unit[:-1] in _UNIT_MICROS | dict.fromkeys(_YEAR_MONTH) else unit


def _seconds_micros(text: str) -> int:
    """'12.3456789' seconds in microseconds, the fraction cut after six digits (Spark's)."""
    whole, _, fraction = text.partition(".")
    return int(whole) * 1_000_000 + int((fraction + "000000")[:6])


def _unit_micros(node, number: str, unit: str) -> int:
    """``number unit`` (one field of an interval) in microseconds; only seconds have a fraction."""
    sign = -1 if number.startswith("-") else 1
    digits = number.lstrip("+-")
    if unit in _YEAR_MONTH:
        raise _unsupported(node, f"The year-month interval '{node.sql(dialect='spark')}'",
                           hint=f"the local engine reads day-time intervals: {_INTERVAL_FORMS}")
    if unit not in _UNIT_MICROS or not re.fullmatch(r"\d+(\.\d+)?" if unit == "SECOND" else r"\d+", digits):
        raise _interval_unread(node)
    return sign * (_seconds_micros(digits) if unit == "SECOND" else int(digits) * _UNIT_MICROS[unit])


def _interval_unread(node) -> ExprError:
    return ExprError(UnsupportedError, f"The interval '{node.sql(dialect='spark')}' is not one cerql's local "
                     "engine reads (cerql.run)", node, "UNSUPPORTED_EXPRESSION",
                     f"the local engine reads day-time INTERVAL literals: {_INTERVAL_FORMS}")


def _interval_literal(node: exp.Interval) -> pa.Scalar:
    """A day-time INTERVAL literal as Spark reads it, as an Arrow duration in microseconds:
    ``INTERVAL 5 MINUTES`` (one unit, a signed integer; seconds may have a fraction, cut after
    six digits), ``INTERVAL '1:30' MINUTE TO SECOND`` (a range, its later fields bounded as
    Spark bounds them: hours 0-23, minutes and seconds 0-59), ``INTERVAL '1 day 2 hours'``.
    Year-month intervals, and forms or values the local engine does not read, are refused."""
    value, unit = node.this, node.args.get("unit")
    if not (isinstance(value, exp.Literal) and value.is_string):
        raise _interval_unread(node)
    text = _trim_all(value.this)
    if isinstance(unit, exp.IntervalSpan):
        start, end = _unit_name(unit.this.name), _unit_name(unit.expression.name)
        if start in _YEAR_MONTH or end in _YEAR_MONTH:
            _unit_micros(node, "0", start if start in _YEAR_MONTH else end)
        pattern = _RANGES.get((start, end))
        m = re.fullmatch(r"([+-]?)" + pattern, text) if pattern else None
        if m is None:
            raise _interval_unread(node)
        total = 0
        for field, part in zip(_RANGE_UNITS[start, end], m.groups()[1:]):
            if field != start and float(part) >= _BOUND[field] + 1:
                raise _interval_unread(node)
            total += _seconds_micros(part) if field == "SECOND" else int(part) * _UNIT_MICROS[field]
        micros = -total if m.group(1) == "-" else total
    elif unit is not None:
        micros = _unit_micros(node, text, _unit_name(unit.name))
    else:  # INTERVAL '1 day 2 hours': number-unit pairs
        pairs = re.findall(r"\s*([+-]?[\d.]+)\s+([A-Za-z]+)", text)
        if not pairs or "".join(re.findall(r"\s*[+-]?[\d.]+\s+[A-Za-z]+", text)) != text:
            raise _interval_unread(node)
        micros = sum(_unit_micros(node, number, _unit_name(word)) for number, word in pairs)
    if not -2**63 < micros < 2**63:
        raise _interval_unread(node)
    return pa.scalar(micros, _US)


def _operand_digits(node) -> tuple:
    return _literal_digits(node.this), _literal_digits(node.expression)


def _int_literal(node: exp.Expression | None) -> int | None:
    """An integer literal (possibly negative), or None."""
    if node is None:
        return None
    negative = False
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"\d+", node.this):
        return -int(node.this) if negative else int(node.this)
    return None


def _string_literal(node: exp.Expression, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise _unsupported(node, f"{what} with a pattern that is not a string literal",
                       hint="write the pattern as a string literal")


def _compile_literal(node: exp.Literal, c):
    value = literal_scalar(node)
    return lambda env: value


def _compile_boolean(node: exp.Boolean, c):
    value = pa.scalar(bool(node.this), pa.bool_())
    return lambda env: value


def _compile_null(node: exp.Null, c):
    return lambda env: pa.scalar(None, pa.null())


def _compile_interval(node: exp.Interval, c):
    value = _interval_literal(node)
    return lambda env: value


BY_NODE: dict[type, Handler] = {exp.Literal: _compile_literal, exp.Boolean: _compile_boolean, exp.Null: _compile_null,
                                exp.Interval: _compile_interval}
