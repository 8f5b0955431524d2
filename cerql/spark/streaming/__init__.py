"""CEQL over Structured Streaming: ``cer_sql`` on streaming sources (docs/streaming.md).

Input: the rows of the stream (docs/language.md, "Events and the stream") as spark/lower.py
builds them (hidden columns, source, ordinal, condition bits, inert rows dropped), from
streaming sources, and the plan. Output: a streaming DataFrame of result rows in the schema the
batch task gives, to be written in append mode; spark/lower.py names its columns as for a batch
query.

Why this shape:

- Event time. The first ORDER BY column is event time, and a watermark on it says when rows
  are final: the source's own ``withWatermark``, else one of ``cerql.streaming.allowedLateness``
  (``watermark_to_add``) put on the stream before any row is dropped. Either way every row
  moves it. With one watermark, a bucket processes rows as soon as its own rows show that the
  next watermark will pass them (MatchProcessor), a micro-batch before Spark's watermark does.
- State keys are buckets, not partition keys. Each partition key hashes to one of
  ``cerql.streaming.stateBuckets`` buckets (default: ``spark.sql.shuffle.partitions``;
  ``with_bucket``), and the stateful operator is grouped by bucket: Spark calls the processor,
  and the processor calls the state store over a socket, a few times per bucket and
  micro-batch, where per key these calls cost about 3 ms a key (1 000 keys: 3 s a
  micro-batch). One run of the task covers every key of a bucket, as a batch task covers the
  keys of its partition. The bucket count is part of the checkpoint's layout: a query restarted
  with another one is refused (``STREAM_BUCKETS_CHANGED``).
- Rows travel packed. A stateless ``mapInArrow`` (``pack``) turns each Arrow batch into one row
  per bucket holding its rows as Arrow IPC bytes, so the stateful operator receives a few
  binary values per bucket and micro-batch, and no value goes through pandas (which would
  merge NULL with NaN and shift timestamps by the session time zone). Its output is the same:
  Arrow IPC of result rows, unpacked by another ``mapInArrow`` (``unpack``).
- State bounded by the window. ``transformWithStateInPandas`` in event-time mode runs
  :class:`MatchProcessor` per bucket. Rows wait (``pending``) until the watermark passes them;
  an event-time timer then sorts the ready rows and the rows kept from before (``kept``: those
  a later result can still reach, bounded by WITHIN and CONSUME BY) by key, ordering columns,
  source and ordinal, runs :class:`cerql.exec.task.MatchTask` over the keys that have
  ready rows, and emits the results that end in the ready rows. A result ending at a ready
  row lies inside its key's kept and ready rows, and a result the task finds again among the
  kept rows is either one already emitted or one that never was (see ``_advance``), so the
  union of the outputs is the batch result on the same rows. All of the state is in the state
  store (a worker keeps only the query's automaton between calls, never rows), so a restart
  from the checkpoint goes on where the last committed micro-batch ended.
- Late rows. A row whose event time is behind the watermark when it reaches its key is late:
  it is dropped, counted, and the counts of each micro-batch show in the query's progress as
  the observed metric ``cerql.late_rows``; with ``cerql.streaming.lateRowsPath`` set, the rows
  themselves are written there too, as Parquet files. Spark itself drops no row (its late-row filter
  reads an event-time column, and the stateful operator's input has none).
- Eviction. Every later result ends at or after the watermark, so under a time window the
  rows further behind it than the window are dropped whenever a bucket processes rows, and a
  timer fires when the last of them is (a bucket whose rows all fell out is forgotten); under
  ``n EVENTS`` a key keeps its last n rows. A bucket keeps one timer, and writes its state only
  when it changed: every call loads and stores the bucket's rows through the state API, which
  costs more per byte than matching them does (``MAX_STATE_ROWS_CONF`` bounds them).
- On a stream the row ordinal that breaks ties in the ordering columns is a hash of the row
  (there is no input order to read): rows equal in every column keep one order.

The modules, in the order a query meets them:

- :mod:`~cerql.spark.streaming.options`: the confs, the checks a query over streams must pass,
  and :class:`StreamSettings` (driver, while planning);
- :mod:`~cerql.spark.streaming.buckets`: partition keys hashed into buckets, as Spark hashes;
- :mod:`~cerql.spark.streaming.packing`: rows packed by bucket as Arrow IPC, results unpacked;
- :mod:`~cerql.spark.streaming.processor`: :class:`MatchProcessor`, the stateful operator;
- :mod:`~cerql.spark.streaming.state`: where a bucket's kept rows rest between micro-batches;
- :mod:`~cerql.spark.streaming.pipeline`: :func:`match_stream`, the stages put together.

Arrow IPC itself is :mod:`cerql.spark.ipc`: the batch path's results are cut by its sizes too.
"""

from cerql.spark.streaming.options import (
    ALLOWED_LATENESS_CONF, BUCKETS_CONF, LATE_ROWS_PATH_CONF, MAX_STATE_ROWS_CONF, ROCKSDB, STATE_STORE_CONF,
    StreamSettings, is_streaming, settings,
)
from cerql.spark.streaming.pipeline import match_stream

__all__ = [
    "ALLOWED_LATENESS_CONF", "BUCKETS_CONF", "LATE_ROWS_PATH_CONF", "MAX_STATE_ROWS_CONF", "ROCKSDB",
    "STATE_STORE_CONF", "StreamSettings", "is_streaming", "match_stream", "settings",
]
