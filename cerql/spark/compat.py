"""What differs between classic Spark and Spark Connect, in one place.

Why: a process can hold both kinds of session, and their classes are twins, not subclasses:
a Connect DataFrame's Columns and functions do not mix with the classic ones, Connect's session
module is imported only when the user imports it (with grpc), and some calls behave
differently (reading an unknown conf raises on some Connect versions). Every module of
cerql.spark asks here instead of checking for itself. This module imports no other cerql
module and nothing of pyspark up front (``import cerql`` and Spark's Python workers stay cheap),
so any module of the package may import it without an import circle.
"""

from __future__ import annotations

import sys

CONNECT_MODULE = "pyspark.sql.connect.session"  # Connect's session module, imported by the user or not


def is_connect(obj) -> bool:
    """Whether a session or DataFrame is Spark Connect's: its classes are twins of the classic
    ones, not subclasses, and their Columns and functions do not mix with the classic ones."""
    return type(obj).__module__.startswith("pyspark.sql.connect")


def functions_for(frame):
    """``pyspark.sql.functions`` for a classic DataFrame, its Connect twin for a Connect one: a
    process can hold both kinds of session, and their Columns do not mix. Imported late: the
    local engine needs no pyspark."""
    if is_connect(frame):
        from pyspark.sql.connect import functions as F
    else:
        from pyspark.sql import functions as F
    return F


def window_for(frame):
    """``pyspark.sql.Window`` for a classic DataFrame, its Connect twin for a Connect one (as
    :func:`functions_for`)."""
    if is_connect(frame):
        from pyspark.sql.connect.window import Window
    else:
        from pyspark.sql.window import Window
    return Window


def read_conf(spark, key: str) -> str | None:
    """A Spark conf of the session, None when unset (or unknown to it)."""
    try:
        return spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - Connect raises for unknown keys on some versions
        return None


def udtf_class(spark):
    """The class of a user-defined table function for ``spark``'s kind of session."""
    if is_connect(spark):
        from pyspark.sql.connect.udtf import UserDefinedTableFunction
    else:
        from pyspark.sql.udtf import UserDefinedTableFunction
    return UserDefinedTableFunction


def active_session():
    """The active classic session, else the active Spark Connect one (looked for only when the
    user has imported Connect); None when there is none."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    connect = sys.modules.get(CONNECT_MODULE)
    if spark is None and connect is not None:
        spark = connect.SparkSession.getActiveSession()
    return spark


def plan_lines(df) -> list[str]:
    """Spark's physical plan of ``df`` as ``explain`` prints it, a line each (for cerql.explain)."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        df.explain()
    return buffer.getvalue().rstrip().splitlines()
