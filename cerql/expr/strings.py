"""Strings: lower, upper, length, substring, startswith, endswith, contains, concat/||, trim,
[NOT] LIKE, ILIKE, RLIKE.

Arguments that are not strings are cast to STRING as Spark prints them (cerql.expr.printing);
``upper``/``lower`` use the full Unicode case mapping, trim removes spaces only, a LIKE pattern
is checked as Spark checks its escapes, an RLIKE pattern is translated by cerql.expr.regex.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.expr.errors import _refuse_type, _unsupported
from cerql.expr.kinds import Handler, Value, _is_int
from cerql.expr.literals import _int_literal, _string_literal
from cerql.expr.printing import _text
from cerql.expr.regex import _java_regex
from cerql.expr.rows import _Env, _map_values, _negated, _shape, _table_of


def _all_ascii(value: Value) -> bool:
    if isinstance(value, pa.Scalar):
        return not value.is_valid or value.as_py().isascii()
    return bool(pc.all(pc.string_is_ascii(value)).as_py() in (True, None))


def _case_map(node, value: Value, upper: bool) -> Value:
    """Spark's upper and lower: the full Unicode case mapping (``upper('ß')`` is 'SS',
    ``lower('İ')`` is 'i̇'; Arrow maps one character to one)."""
    value = _text(node, value)
    if _all_ascii(value):
        return pc.ascii_upper(value) if upper else pc.ascii_lower(value)
    return _map_values(value, (lambda s: s.upper()) if upper else (lambda s: s.lower()), pa.string())


def _spark_substring(s: str, pos: int, length: int) -> str:
    """UTF8String.substringSQL: 1-based; 0 is 1; a negative position counts from the end."""
    n = len(s)
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = start + length
    start = max(start, 0)
    return "" if start >= end else s[start:end]


def _substring(node, value: Value, pos, length, c, env: _Env) -> Value:
    value = _text(node, value)
    p, n = _int_literal(pos), (_int_literal(length) if length is not None else 2**31 - 1)
    if p is not None and n is not None:
        if p > 0:
            start, stop = p - 1, p - 1 + n
        elif p == 0:
            start, stop = 0, n
        else:
            start, stop = p, (p + n if p + n < 0 else None)
        if n <= 0 or (stop is not None and p >= 0 and stop <= start):
            return pc.if_else(pc.is_valid(value), pa.scalar("", pa.string()), pa.scalar(None, pa.string()))
        if stop is not None and stop >= 2**31 - 1:
            stop = None
        return pc.utf8_slice_codeunits(value, start, stop) if stop is not None else pc.utf8_slice_codeunits(value, start)
    pv = c(pos)(env)
    nv = c(length)(env) if length is not None else pa.scalar(2**31 - 1, pa.int32())
    for v in (pv, nv):
        if not (_is_int(v.type) or pa.types.is_null(v.type)):
            raise _refuse_type(node, v.type)
    rows = _table_of(value, pv, nv)
    out = [None if s is None or q is None or m is None else _spark_substring(s, q, m) for s, q, m in rows]
    return _shape(out, pa.string(), value, pv, nv)


_AFFIX = {exp.StartsWith: ("startswith", pc.starts_with, str.startswith),
          exp.EndsWith: ("endswith", pc.ends_with, str.endswith),
          exp.Contains: ("contains", pc.match_substring, lambda s, p: p in s)}


def _affix(node, kind, value: Value, pattern: Value) -> Value:
    _, arrow_fn, py_fn = _AFFIX[kind]
    value, pattern = _text(node, value), _text(node, pattern)
    if isinstance(pattern, pa.Scalar):
        if not pattern.is_valid:
            return pa.scalar(None, pa.bool_()) if isinstance(value, pa.Scalar) else pa.nulls(len(value), pa.bool_())
        if isinstance(value, pa.Scalar):
            return pa.scalar(None if not value.is_valid else py_fn(value.as_py(), pattern.as_py()), pa.bool_())
        return arrow_fn(value, pattern.as_py())
    rows = _table_of(value, pattern)
    return _shape([None if s is None or p is None else py_fn(s, p) for s, p in rows], pa.bool_(), value, pattern)


def _concat(node, values: list[Value]) -> Value:
    """Spark's concat and ``||``: NULL when any argument is; others cast to STRING."""
    if not values:
        return pa.scalar("", pa.string())
    texts = [_text(node, v) for v in values]
    if all(isinstance(v, pa.Scalar) for v in texts):
        parts = [v.as_py() for v in texts]
        return pa.scalar(None if any(p is None for p in parts) else "".join(parts), pa.string())
    return pc.binary_join_element_wise(*texts, "")


def _trim(node, value: Value) -> Value:
    """Spark's trim, ltrim, rtrim: spaces (U+0020) only, not tabs or newlines."""
    value = _text(node, value)
    position = (node.args.get("position") or "").upper()
    if position == "LEADING":
        return pc.utf8_ltrim(value, characters=" ")
    if position == "TRAILING":
        return pc.utf8_rtrim(value, characters=" ")
    return pc.utf8_trim(value, characters=" ")


def _like_pattern(node, pattern: str, what: str) -> str:
    """A LIKE pattern checked as Spark checks it: the escape character ``\\`` may only precede
    ``_``, ``%`` or itself (Spark raises otherwise; here it is refused)."""
    k = 0
    while k < len(pattern):
        if pattern[k] == "\\":
            if k + 1 >= len(pattern) or pattern[k + 1] not in "_%\\":
                raise _unsupported(node, f"The {what} pattern '{pattern}' (an escape before "
                                         f"'{pattern[k + 1:k + 2] or 'the end'}')",
                                   hint="Spark rejects it too: escape only _, % and \\")
            k += 2
        else:
            k += 1
    return pattern


def _like(node, value: Value, pattern: str, ignore_case: bool) -> Value:
    value = _text(node, value)
    if ignore_case:  # Spark's ILIKE is lower(value) LIKE lower(pattern), full case mapping
        value = _case_map(node, value, upper=False)
        pattern = pattern.lower()
    return pc.match_like(value, pattern)


def _compile_case_map(node, c):
    """lower and upper."""
    inner, upper = c(node.this), isinstance(node, exp.Upper)
    return lambda env: _case_map(node, inner(env), upper)


def _compile_length(node, c):
    inner = c(node.this)
    return lambda env: pc.utf8_length(_text(node, inner(env)))


def _compile_substring(node, c):
    inner = c(node.this)
    start, length = node.args.get("start"), node.args.get("length")
    if start is None:
        raise _unsupported(node)
    return lambda env: _substring(node, inner(env), start, length, c, env)


def _compile_affix(node, c):
    """startswith, endswith, contains."""
    left, right, kind = c(node.this), c(node.expression), type(node)
    return lambda env: _affix(node, kind, left(env), right(env))


def _compile_concat(node, c):
    """concat and ``||``."""
    if isinstance(node, exp.Concat) and node.args.get("coalesce"):
        raise _unsupported(node)
    parts = [c(e) for e in (node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression])]
    return lambda env: _concat(node, [p(env) for p in parts])


def _compile_trim(node, c):
    if node.args.get("expression") is not None or node.args.get("collation") is not None:
        raise _unsupported(node, "trim with characters to remove", hint="trim(s), ltrim(s) and rtrim(s) run locally")
    inner = c(node.this)
    return lambda env: _trim(node, inner(env))


def _compile_like(node, c):
    """[NOT] LIKE and ILIKE with a string literal pattern."""
    what = "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
    value = c(node.this)
    pattern = _like_pattern(node, _string_literal(node.expression, what), what)
    ignore_case = isinstance(node, exp.ILike)
    return _negated(node, lambda env: _like(node, value(env), pattern, ignore_case))


def _compile_rlike(node, c):
    """[NOT] RLIKE: the Java pattern as the RE2 expression Arrow runs (cerql.expr.regex)."""
    value = c(node.this)
    pattern = _java_regex(node, _string_literal(node.expression, "RLIKE"))
    return _negated(node, lambda env: pc.match_substring_regex(_text(node, value(env)), pattern))


BY_NODE: dict[type, Handler] = {
    exp.Lower: _compile_case_map, exp.Upper: _compile_case_map, exp.Length: _compile_length,
    exp.Substring: _compile_substring, **dict.fromkeys(_AFFIX, _compile_affix), exp.Concat: _compile_concat,
    exp.DPipe: _compile_concat, exp.Trim: _compile_trim, exp.Like: _compile_like, exp.ILike: _compile_like,
    exp.RegexpLike: _compile_rlike,
}
