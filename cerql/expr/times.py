"""Dates, timestamps and day-time intervals: arithmetic, fields and date_format.

timestamp - timestamp is an INTERVAL DAY TO SECOND (an Arrow duration in microseconds) between
wall times in the session time zone, timestamp +/- interval a timestamp of the same type (whole
days on the wall clock), interval +/- interval an interval, all overflow-checked, as Spark 4; year, month, day, dayofweek, hour, minute, second read a date or timestamp
(or a string cast to one) in the session time zone; date_format prints the pattern letters whose
Java meaning is exact here. Operand types Spark's analyzer refuses are its DATATYPE_MISMATCH
(cerql.expr.kinds ``_arith_check``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from cerql.errors import UnsupportedError
from cerql.expr.casts import _cast_value
from cerql.expr.coercion import _as_duration, _as_timestamp, _date_of_timestamp, _instant, _micros, _wall
from cerql.expr.errors import ExprError, _mismatch, _refuse_type, _unsupported
from cerql.expr.kinds import _SPARK_RUNS, Handler, Value, _arith_check, _family, _is_num, _is_str, _null_as
from cerql.expr.rows import _ARITH_FN, _bad_rows, _checked, _Env
from cerql.expr.session import _now_zone


def _to_date(node, value: Value, env: _Env) -> Value:
    """What Spark's date functions read: a DATE; a TIMESTAMP's date in the session time zone; a
    STRING cast to DATE (CAST_INVALID_INPUT when malformed)."""
    kind = value.type
    if pa.types.is_date(kind) or pa.types.is_null(kind):
        return _null_as(value, pa.date32())
    if pa.types.is_timestamp(kind):
        return _date_of_timestamp(value)
    if _is_str(kind):
        return _cast_value(node, value, pa.date32(), env, tolerant=False)
    if pa.types.is_duration(kind) or _is_num(kind) or pa.types.is_boolean(kind):
        raise _mismatch(node, "UNEXPECTED_INPUT_TYPE", kind)
    raise _refuse_type(node, kind)


def _to_timestamp(node, value: Value, env: _Env) -> Value:
    kind = value.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_null(kind):
        return _as_timestamp(value, aware=False)
    if _is_str(kind):
        return _wall(_cast_value(node, value, pa.timestamp("us", "UTC"), env, tolerant=False))
    if pa.types.is_duration(kind) or _is_num(kind) or pa.types.is_boolean(kind):
        raise _mismatch(node, "UNEXPECTED_INPUT_TYPE", kind)
    raise _refuse_type(node, kind)


def _time_difference(node, a: Value, b: Value, env: _Env) -> Value:
    """``a - b`` of dates and timestamps, as Spark 4's SubtractTimestamps: both are cast to their
    common type (TIMESTAMP_NTZ when either is one, else TIMESTAMP when either is one; a DATE its
    midnight) and the INTERVAL DAY TO SECOND is the microseconds between their wall times, in
    the session time zone for TIMESTAMP (Spark's subtractTimestamps), so across a clock change
    two instants an hour apart differ by 0 or 2 hours, as Spark SQL computes it."""
    stamps = [v.type for v in (a, b) if pa.types.is_timestamp(v.type)]
    aware = bool(stamps) and all(kind.tz for kind in stamps)
    x, y = (_micros(_wall(_as_timestamp(v, aware))) for v in (a, b))
    checked, plain = _ARITH_FN["-"]
    return _as_duration(_checked(env, node, checked, plain, (x, y)))


def _time_arith(node, op: str, a: Value, b: Value, env: _Env) -> Value:
    """``a op b`` where either is a date, a timestamp or a day-time interval, as Spark 4:
    timestamp - timestamp (or date) is an INTERVAL DAY TO SECOND (:func:`_time_difference`;
    DATE - DATE is the days between them); timestamp +/- interval is a timestamp of the same
    type; interval +/- interval an interval. Types Spark refuses are its DATATYPE_MISMATCH
    error; types Spark takes and the local engine does not compute (date + interval, interval *
    number...) a LocalTypeRefusal."""
    ta, tb = a.type, b.type
    verdict = _arith_check(op, ta, tb)
    if verdict == _SPARK_RUNS:
        raise _refuse_type(node, ta, tb)
    if verdict is not None:
        raise _mismatch(node, verdict, ta, tb)
    fa, fb = _family(ta), _family(tb)
    checked, plain = _ARITH_FN[op]
    if fa in "TD" and fb in "TD":
        return _time_difference(node, a, b, env)
    if fa == fb == "V":
        return _as_duration(_checked(env, node, checked, plain, (_micros(a), _micros(b))))
    stamp, delta = (a, b) if fa == "T" else (b, a)  # a timestamp and an interval
    micros = _micros(delta) if op == "+" else _checked(env, node, checked, plain, (pa.scalar(0), _micros(delta)))
    return _shift_timestamp(node, stamp, micros, env)


_DAY = 86_400_000_000  # microseconds


def _shift_timestamp(node, stamp: Value, micros: Value, env: _Env) -> Value:
    """``stamp`` plus an interval's microseconds, as Spark 4's timestampAddDayTime: a
    TIMESTAMP's whole days move its wall time in the session time zone (Java's plusDays), the
    rest its instant, so ``ts + INTERVAL 1 DAY`` is the same wall time the next day across a
    clock change; a TIMESTAMP_NTZ, or any timestamp in a UTC session, just adds."""
    add = _ARITH_FN["+"]
    zone = _now_zone()
    if not stamp.type.tz or zone == "UTC":
        return pc.cast(_checked(env, node, *add, (_micros(stamp), micros)), stamp.type)
    days = pc.multiply(pc.divide(micros, pa.scalar(_DAY)), pa.scalar(_DAY))  # toward zero, as Java's
    local = _checked(env, node, *add, (_micros(_wall(stamp)), days))
    moved = _at_wall(pc.cast(local, pa.timestamp("us")), stamp, zone)
    return pc.cast(_checked(env, node, *add, (_micros(moved), pc.subtract(micros, days))), stamp.type)


def _at_wall(local: Value, stamp: Value, zone: str) -> Value:
    """The instant of wall time ``local``, keeping ``stamp``'s offset where ``local`` has two (a
    clock going back), as Java's ZonedDateTime.plusDays resolves it."""
    early, late = _instant(local, zone), _instant(local, zone, ambiguous="latest")
    offset = pc.subtract(_micros(_wall(stamp)), _micros(stamp))
    return pc.if_else(pc.equal(pc.subtract(_micros(local), _micros(late)), offset), late, early)


_FIELDS = {exp.Hour: pc.hour, exp.Minute: pc.minute, exp.Second: pc.second}


_DATE_FIELDS = {exp.Year: pc.year, exp.Month: pc.month, exp.Day: pc.day, exp.DayOfMonth: pc.day}


def _date_arg(node: exp.Expression) -> exp.Expression:
    """The argument of a date function; sqlglot wraps it in a conversion Spark's text lacks."""
    arg = node.this
    if isinstance(arg, (exp.TsOrDsToDate, exp.TimeStrToTime)) and not arg.args.get("format"):
        return arg.this
    return arg


def _spark_format(node: exp.TimeToStr) -> str:
    """The Java pattern of date_format as cerql prints it for Spark (sqlglot keeps a strftime
    form)."""
    import sqlglot

    if "written_format" in node.meta:  # the pattern as the user wrote it (parser/written.py)
        return node.meta["written_format"]
    printed = exp.TimeToStr(this=exp.column("x"), format=node.args["format"].copy()).sql(dialect="spark")
    prefix = "DATE_FORMAT(x, "
    if not (printed.startswith(prefix) and printed.endswith(")")):
        raise _unsupported(node)
    literal = sqlglot.parse_one(printed[len(prefix):-1], read="spark")
    if not (isinstance(literal, exp.Literal) and literal.is_string):
        raise _unsupported(node)
    return literal.this


_FORMAT_FIELDS = {"yyyy": ("year", 4), "y": ("year", 1), "MM": ("month", 2), "M": ("month", 1),
                  "dd": ("day", 2), "d": ("day", 1), "HH": ("hour", 2), "H": ("hour", 1),
                  "mm": ("minute", 2), "m": ("minute", 1), "ss": ("second", 2), "s": ("second", 1)}


def _format_parts(node, pattern: str) -> list:
    """A date_format pattern as literal strings and (field, width) pairs, for the letters whose
    Java meaning is exact here (yyyy y MM M dd d HH H mm m ss s); others are refused."""
    parts, k = [], 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "'":
            end = pattern.find("'", k + 1)
            if end < 0:
                raise _unsupported(node, f"date_format pattern '{pattern}' (an unclosed quote)")
            parts.append(pattern[k + 1:end] if end > k + 1 else "'")
            k = end + 1
        elif ch.isalpha():
            j = k
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            run = pattern[k:j]
            if run not in _FORMAT_FIELDS:
                raise _unsupported(node, f"date_format with '{run}'",
                                   hint="the local engine formats yyyy y MM M dd d HH H mm m ss s and quoted text")
            parts.append(_FORMAT_FIELDS[run])
            k = j
        elif ch in "[]{}#":
            raise _unsupported(node, f"date_format with '{ch}'")
        else:
            parts.append(ch)
            k += 1
    return parts


def _date_format(node, value: Value, parts: list, env: _Env) -> Value:
    wall = _to_timestamp(node, value, env)
    if isinstance(wall, pa.Scalar):
        wall = pa.array([wall.as_py()], wall.type)
        return _date_format(node, wall, parts, env)[0]
    years = pc.year(wall)
    outside = _bad_rows(pc.or_(pc.less(years, 1), pc.greater(years, 9999)))
    if env.hit(outside) is not None:
        raise ExprError(UnsupportedError, "date_format of a year outside 1-9999 is not supported by cerql's local "
                        "engine (cerql.run); spark.cer_sql runs it", node, "UNSUPPORTED_EXPRESSION")
    pieces = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(pa.scalar(part, pa.string()))
            continue
        field, width = part
        text = pc.cast(getattr(pc, field)(wall), pa.string())
        pieces.append(pc.utf8_lpad(text, width, "0") if width > 1 else text)
    if all(isinstance(p, pa.Scalar) for p in pieces):  # no field: the text on every non-NULL row
        text = "".join(p.as_py() for p in pieces)
        return pc.if_else(pc.is_valid(wall), pa.scalar(text), pa.scalar(None, pa.string()))
    return pc.binary_join_element_wise(*pieces, "")


def _compile_time_field(node, c):
    """hour, minute, second of a timestamp (a date or a string read as one)."""
    fn, inner = _FIELDS[type(node)], c(node.this)
    return lambda env: pc.cast(fn(_to_timestamp(node, inner(env), env)), pa.int32())


def _compile_date_field(node, c):
    """year, month, day (dayofmonth) of a date (a timestamp's or a string's)."""
    fn, inner = _DATE_FIELDS[type(node)], c(_date_arg(node))
    return lambda env: pc.cast(fn(_to_date(node, inner(env), env)), pa.int32())


def _compile_day_of_week(node, c):
    """dayofweek: Spark's 1 = Sunday ... 7 = Saturday."""
    inner = c(_date_arg(node))
    return lambda env: pc.cast(pc.day_of_week(_to_date(node, inner(env), env), count_from_zero=False,
                                              week_start=7), pa.int32())


def _compile_date_format(node, c):
    inner = c(_date_arg(node))
    parts = _format_parts(node, _spark_format(node))
    return lambda env: _date_format(node, inner(env), parts, env)


BY_NODE: dict[type, Handler] = {
    **dict.fromkeys(_FIELDS, _compile_time_field), **dict.fromkeys(_DATE_FIELDS, _compile_date_field),
    exp.DayOfWeek: _compile_day_of_week, exp.TimeToStr: _compile_date_format,
}
