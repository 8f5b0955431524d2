"""Spark's parsers of strings: dates, timestamps, integers, doubles, booleans, decimals.

CAST of a STRING, and a string compared with a date or a timestamp, read the text as Spark's
own parsers do (trimmed of characters up to U+0020; ``stringToDate``, ``stringToTimestamp``,
Java's ``Double.parseDouble``...). A parser returns the value, ``_BAD`` (or None) for text Spark
refuses, and raises :class:`_Unreadable` for text Spark reads but these parsers do not (a zone
name), which the local engine refuses rather than guess.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation

import pyarrow as pa

from cerql.expr.rows import _BAD
from cerql.expr.session import _now_zone


_DATE_RE = re.compile(r"([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")


_TIME_RE = re.compile(r"(\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?")


_ZONE_RE = re.compile(r"\s*(?:(Z)|(UTC|GMT|UT)?([+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?)")


def _trim_all(text: str) -> str:
    """Spark's trimAll, which casts apply: every character up to U+0020 at both ends."""
    i, j = 0, len(text)
    while i < j and ord(text[i]) <= 32:
        i += 1
    while j > i and ord(text[j - 1]) <= 32:
        j -= 1
    return text[i:j]


class _Unreadable(Exception):
    """A value the local parser does not read though Spark might (a zone name, a year sign)."""


def _parse_date(text: str):
    """Spark's stringToDate: ``yyyy[-[m]m[-[d]d]]`` then nothing or a space or 'T' and anything;
    None when malformed."""
    text = _trim_all(text)
    m = _DATE_RE.match(text)
    if not m:
        return None
    rest = text[m.end():]
    if rest and rest[0] not in " T":
        return None
    if m.group(1)[0] in "+-" or len(m.group(1)) > 4:
        raise _Unreadable(text)
    try:
        return date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError:
        return None


def _parse_timestamp(text: str, wall: bool = False):
    """Spark's stringToTimestamp for what the local engine reads: ``yyyy[-m[m][-d[d]]]``, then
    ' ' or 'T' and ``h[h][:m[m][:s[s][.fraction]]]``, then a zone 'Z', 'UTC', '+hh[:mm]';
    without a zone the session time zone's. An aware datetime in UTC; None when malformed;
    :class:`_Unreadable` for zone names and other forms Spark reads but this parser does not.
    ``wall``: Spark's stringToTimestampWithoutTimeZone (a TIMESTAMP_NTZ), the naive date and
    time as written, a zone checked and ignored, so a time in a clock change's gap is kept."""
    text = _trim_all(text)
    m = _DATE_RE.match(text)
    if not m:
        return None
    if m.group(1)[0] in "+-" or len(m.group(1)) > 4:
        raise _Unreadable(text)
    pos = m.end()
    hour = minute = second = micro = 0
    if pos < len(text) and text[pos] in " T":
        t = _TIME_RE.match(text, pos + 1)
        if t and m.group(3) is not None:
            hour, minute, second = int(t.group(1)), int(t.group(2) or 0), int(t.group(3) or 0)
            fraction = t.group(4) or ""
            if len(fraction) > 9:
                return None
            micro = int((fraction + "000000")[:6])
            pos = t.end()
        elif text[pos] == "T" and pos + 1 == len(text):
            pos += 1
    rest = text[pos:]
    zone = timezone.utc if _now_zone() == "UTC" else None
    if rest:
        z = _ZONE_RE.fullmatch(rest)
        if not z or not (z.group(1) or z.group(2) or z.group(3)):
            if re.fullmatch(r"\s*[A-Za-z][A-Za-z0-9_/+\-]*", rest):
                raise _Unreadable(text)
            return None
        zone = timezone.utc
        if z.group(3):
            sign = -1 if z.group(3)[0] == "-" else 1
            parts = re.findall(r"\d{1,2}", z.group(3)[1:])
            hh, mm, ss = (int(p) for p in (parts + ["0", "0"])[:3])
            if hh > 18 or mm > 59 or ss > 59:
                return None
            zone = timezone(sign * timedelta(hours=hh, minutes=mm, seconds=ss))
    try:
        value = datetime(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1), hour, minute, second, micro)
    except ValueError:
        return None
    if wall:
        return value
    if zone is None:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(_now_zone())
    return value.replace(tzinfo=zone).astimezone(timezone.utc)


_TRUE = {"t", "true", "y", "yes", "1"}


_FALSE = {"f", "false", "n", "no", "0"}


_DOUBLE_RE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?")


_HEX_RE = re.compile(r"[+-]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?\d+[fFdD]?")


def _parse_int(kind: pa.DataType):
    lo, hi = -2 ** (kind.bit_width - 1), 2 ** (kind.bit_width - 1) - 1

    def parse(text: str):
        t = _trim_all(text)
        if not re.fullmatch(r"[+-]?\d+", t):
            return _BAD
        v = int(t)
        return v if lo <= v <= hi else _BAD

    return parse


def _parse_double(text: str):
    t = _trim_all(text)
    low = t.lower()
    if low in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if low in ("-inf", "-infinity"):
        return -math.inf
    if low in ("nan", "+nan", "-nan"):
        return math.nan
    if _DOUBLE_RE.fullmatch(t):
        body = t.rstrip("fFdD")
        return float(body.replace("Infinity", "inf"))
    if _HEX_RE.fullmatch(t):
        return float.fromhex(t.rstrip("fFdD"))
    return _BAD


def _parse_bool(text: str):
    t = _trim_all(text).lower()
    return True if t in _TRUE else False if t in _FALSE else _BAD


def _parse_decimal(text: str):
    t = _trim_all(text)
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
        return _BAD
    try:
        return Decimal(t)
    except InvalidOperation:
        return _BAD


class _ValueUnreadable(Exception):
    def __init__(self, text):
        super().__init__(text)
        self.text = text


def _readable(parse, text: str):
    try:
        out = parse(text)
    except _Unreadable:
        raise _ValueUnreadable(text) from None
    return _BAD if out is None else out
