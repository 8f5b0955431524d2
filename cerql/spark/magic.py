"""``%%ceql``: a notebook cell that is a CEQL query (docs/semantics.md, "SQL cells").

Input: the cell text, the user's namespace and the active Spark session. Output: the result
DataFrame of ``cerql.cer_sql``, returned so Jupyter displays it, and stored under the name given
on the magic line when there is one. Load it with ``%load_ext cerql`` (or ``cerql.spark.magic``)::

    %%ceql matches
    SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] ORDER BY ts WITHIN 10 EVENTS

FROM sources are looked up first among the Spark DataFrames of the namespace, by name, then
among the session's tables and temp views, as ``cer_sql(spark, text, stock=stock)`` would.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

from cerql.errors import CeqlError
from cerql.spark.patch import CONNECT_MODULE


def active_session():
    """The active classic session, else the active Spark Connect one; a CeqlError if none."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    connect = sys.modules.get(CONNECT_MODULE)
    if spark is None and connect is not None:  # only look if the user has imported Connect
        spark = connect.SparkSession.getActiveSession()
    if spark is None:
        raise CeqlError("%%ceql needs an active Spark session, and there is none", error_class="NO_SPARK_SESSION",
                        hint="create one first, e.g. spark = SparkSession.builder.getOrCreate()")
    return spark


def namespace_frames(text: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Spark DataFrames of ``namespace`` named like a FROM source of the query."""
    from pyspark.sql.dataframe import DataFrame  # the parent of classic and Connect DataFrames

    from cerql.api import analyze

    lowered = {name.lower(): name for name in namespace}
    frames = {}
    for source in analyze(text).select.sources:
        name = source.name if source.name in namespace else lowered.get(source.name.lower())
        if name is not None and isinstance(namespace[name], DataFrame):
            frames[source.name] = namespace[name]
    return frames


def ceql(line: str, cell: str, namespace: dict[str, Any]):
    """Run the cell as CEQL; store the result as ``namespace[line]`` when a name is given."""
    from cerql.spark.session import cer_sql

    target = line.strip()
    if target and not target.isidentifier():
        raise CeqlError(f"'{target}' is not a variable name", error_class="MAGIC_ARGUMENT",
                        hint="write %%ceql, or %%ceql name to also store the result in `name`")
    df = cer_sql(active_session(), cell, **namespace_frames(cell, namespace))
    if target:
        namespace[target] = df
    return df


def load_ipython_extension(ipython) -> None:
    """Register ``%%ceql`` on an IPython shell (``%load_ext cerql`` calls this)."""

    def ceql_magic(line: str, cell: str):
        return ceql(line, cell, ipython.user_ns)

    ceql_magic.__doc__ = __doc__
    ipython.register_magic_function(ceql_magic, magic_kind="cell", magic_name="ceql")
