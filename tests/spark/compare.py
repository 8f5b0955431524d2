"""Comparing Spark results with local ones: rows of both as canonical, hashable values.

Spark returns ``Row`` objects, dates and naive datetimes; the local engine returns pandas values,
dicts and lists of dicts. ``canonical_rows`` maps both to tuples of plain Python values
(timestamps as naive UTC datetimes, NaN as the string "NaN") so a test can compare multisets.
``raises_before_any_job`` checks that a bad query fails in ``cer_sql`` before Spark runs a job.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter

import numpy as np
import pandas as pd


def plain(value):
    """One value as a canonical, hashable Python value."""
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return tuple((k, plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(plain(v) for v in value)
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def canonical_rows(records: list[dict], drop=("match_id",)) -> Counter:
    return Counter(tuple((k, plain(v)) for k, v in r.items() if k not in drop) for r in records)


def spark_records(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def local_records(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict("records")


def with_jvm_matcher(spark, value: str, run):
    """``run()`` with ``cerql.matchRecognize.jvm`` set to ``value`` ("true" or "false"; the
    MATCH_RECOGNIZE path is chosen when a DataFrame is planned), the setting unset after."""
    from cerql.spark.mr_jvm import JVM_CONF

    spark.conf.set(JVM_CONF, value)
    try:
        return run()
    finally:
        spark.conf.unset(JVM_CONF)


def raises_before_any_job(spark, query: str, error_class: str, column: int):
    """``spark.cer_sql(query)`` raises the CeqlError ``error_class`` at line 1, ``column``, with
    a caret and a hint, and Spark ran no job for it. Returns the error."""
    import pytest

    import cerql

    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    with pytest.raises(cerql.CeqlError) as err:
        spark.cer_sql(query)
    assert err.value.error_class == error_class
    assert (err.value.line, err.value.column) == (1, column)
    assert "^" in str(err.value) and err.value.hint
    assert set(tracker.getJobIdsForGroup(None)) == jobs
    return err.value
