"""The session time zone an expression is evaluated in.

Spark reads and prints times in ``spark.sql.session.timeZone``; a compiled expression fixes it
when it is compiled (cerql.expr.core ``compile_expr``) and sets it around each evaluation, so
the time family's parsers and conversions read it from here rather than receive it through
every call. A module of its own because the printers (cerql.expr.printing) and the time
functions both need it and neither should import the other.
"""

from __future__ import annotations

import contextvars


SESSION_TIME_ZONE = "UTC"  # the local engines' spark.sql.session.timeZone (the cerql CLI's Spark setting)

_ZONE: contextvars.ContextVar[str | None] = contextvars.ContextVar("cerql_session_time_zone", default=None)


def _now_zone() -> str:
    """The session time zone of the expression being evaluated (compile_expr's ``time_zone``)."""
    return _ZONE.get() or SESSION_TIME_ZONE
