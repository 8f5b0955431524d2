"""The stages of a streaming query after the rows of lower.py: hashed into buckets, packed,
matched by :class:`~cerql.spark.streaming.processor.MatchProcessor` per bucket, late rows
counted, unpacked (:func:`match_stream`; the package docstring says why).
"""

from __future__ import annotations

from cerql.plan import TaskPlan
from cerql.spark.compat import functions_for
from cerql.spark.streaming.buckets import BUCKET_COLUMN, with_bucket
from cerql.spark.streaming.options import StreamSettings
from cerql.spark.streaming.packing import ROWS_COLUMN, pack, unpack
from cerql.spark.streaming.processor import LATE_COLUMN, RESULT_COLUMN, MatchProcessor

METRICS = "cerql"                 # the observed metrics' name in the query's progress


def match_stream(task: TaskPlan, stream, key_columns: list[str], names: list[str], result_schema,
                 settings: StreamSettings):
    """The streaming DataFrame of result rows (``result_schema``, the batch task's, renamed):
    hashed into buckets and packed, matched by :class:`MatchProcessor` per bucket, the late
    rows counted into the observed metric ``cerql.late_rows``, unpacked."""
    F = functions_for(stream)
    buckets = settings.buckets if key_columns else 1
    packed = with_bucket(stream, key_columns, buckets).mapInArrow(pack(names), f"{BUCKET_COLUMN} int, {ROWS_COLUMN} binary")
    processor = MatchProcessor(task, names, buckets, settings.delay_ms, settings.late_rows_path,
                               settings.max_state_rows)
    out = packed.groupBy(BUCKET_COLUMN).transformWithStateInPandas(
        processor, f"{RESULT_COLUMN} binary, {LATE_COLUMN} long", "Append", "EventTime")
    out = out.observe(METRICS, F.coalesce(F.sum(LATE_COLUMN), F.lit(0)).alias("late_rows"))
    results = out.filter(F.col(RESULT_COLUMN).isNotNull()).select(RESULT_COLUMN)
    return results.mapInArrow(unpack([f.name for f in result_schema.fields]), result_schema)
