"""The Spark confs a query over streams reads, the checks it must pass before it starts, and
what they give :func:`cerql.spark.lower.lower` (:class:`StreamSettings`); docs/streaming.md.

Why a module of its own: the driver runs it while planning (no row seen yet), where the rest
of the package builds the stream's stages or runs in Spark's workers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from cerql.errors import AnalysisError, UnsupportedError
from cerql.plan import QueryPlan

ALLOWED_LATENESS_CONF = "cerql.streaming.allowedLateness"
LATE_ROWS_PATH_CONF = "cerql.streaming.lateRowsPath"  # a directory the late rows are written to, too
BUCKETS_CONF = "cerql.streaming.stateBuckets"  # state keys the partition keys hash to (see with_bucket)
SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"  # the default of BUCKETS_CONF
MAX_STATE_ROWS_CONF = "cerql.streaming.maxStateRows"  # rows one bucket may hold between micro-batches
DEFAULT_MAX_STATE_ROWS = 10_000_000
WATERMARK_METADATA = "spark.watermarkDelayMs"  # what withWatermark puts on its column


def is_streaming(frames, text: str, spans) -> bool:
    """Whether the query reads streams: every source a stream, or none (a CeqlError when some
    are, since a stream cannot be ordered against a table that never ends or grows)."""
    kinds = {key: frame.isStreaming for key, frame in frames.items()}
    if all(kinds.values()) or not any(kinds.values()):
        return any(kinds.values())
    static = next(key for key, streaming in kinds.items() if not streaming)
    raise UnsupportedError.at(text, spans.get(static, 0), f"Source '{static}' is a table and another source is a "
                              "stream; a query reads streams only or tables only", "STREAM_WITH_STATIC",
                              "read the table as a stream too (spark.readStream), or join it to the stream "
                              "before the query")


STATE_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def check_state_store(provider: str | None, text: str) -> None:
    """Spark's stateful processors run on the RocksDB state store only; the default one fails
    when the query starts, so say it now."""
    if provider is None or provider.rsplit(".", 1)[-1] != ROCKSDB.rsplit(".", 1)[-1]:
        raise UnsupportedError.at(text, 0, "A query over a stream needs Spark's RocksDB state store",
                                  "STREAM_NEEDS_ROCKSDB", f'spark.conf.set("{STATE_STORE_CONF}", "{ROCKSDB}") '
                                  "before the query (or in the session's configuration)")


def _keyword(text: str, word: str) -> int:
    found = list(re.finditer(rf"\b{word}\b", text, re.IGNORECASE))
    return found[-1].start() if found else 0


def parse_interval_ms(value: str, text: str) -> int:
    """Milliseconds of a lateness such as ``10 seconds``, ``1 minute``, ``500 ms``."""
    units = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "second": 1000, "seconds": 1000,
             "m": 60_000, "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000,
             "hours": 3_600_000}
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*", str(value))
    if not match or match.group(2).lower() not in units:
        raise UnsupportedError.at(text, 0, f"{ALLOWED_LATENESS_CONF} is '{value}', not a duration",
                                  "STREAM_BAD_LATENESS", "write it as a number and a unit: '10 seconds', "
                                  "'1 minute', '500 milliseconds'")
    return int(float(match.group(1)) * units[match.group(2).lower()])


@dataclass(frozen=True)
class StreamSettings:
    """What ``settings`` found for a query over streams, for spark/lower.py."""

    watermark_ms: int | None      # the watermark cerql adds; None when the sources have theirs
    late_rows_path: str | None    # a directory late rows are written to (LATE_ROWS_PATH_CONF)
    buckets: int = 1              # state keys the partition keys hash to (BUCKETS_CONF)
    delay_ms: int | None = None   # the delay of the stream's only watermark (None: several)
    max_state_rows: int = DEFAULT_MAX_STATE_ROWS  # rows one bucket may hold (MAX_STATE_ROWS_CONF)


def settings(plan: QueryPlan, frames, conf: Callable[[str], str | None], text: str) -> StreamSettings:
    """The checks and settings of a query over streams (``conf`` reads a Spark conf)."""
    watermark = watermark_to_add(plan, frames, conf(ALLOWED_LATENESS_CONF), text)
    check_state_store(conf(STATE_STORE_CONF), text)
    delay = _only_watermark(plan, frames, watermark)
    buckets = _positive(BUCKETS_CONF, conf(BUCKETS_CONF) or conf(SHUFFLE_PARTITIONS_CONF) or "200", text,
                        "STREAM_BAD_BUCKETS", "set it to a whole number such as 16, and keep it for the life of "
                        "the query's checkpoint")
    limit = _positive(MAX_STATE_ROWS_CONF, conf(MAX_STATE_ROWS_CONF) or str(DEFAULT_MAX_STATE_ROWS), text,
                      "STREAM_BAD_STATE_LIMIT", f"set it to a whole number of rows (the default is "
                      f"{DEFAULT_MAX_STATE_ROWS:,}), or unset it")
    return StreamSettings(watermark, conf(LATE_ROWS_PATH_CONF) or None, buckets, delay, limit)


def _positive(name: str, value: str, text: str, error_class: str, hint: str) -> int:
    """A Spark conf that must be a positive whole number, as an int."""
    if not str(value).strip().isdigit() or int(value) < 1:
        raise UnsupportedError.at(text, 0, f"{name} is '{value}', not a positive number", error_class, hint)
    return int(value)


def _only_watermark(plan: QueryPlan, frames, added: int | None) -> int | None:
    """The delay (ms) of the stream's watermark when it is the only one Spark's global
    watermark follows (MatchProcessor uses it to process rows early), else None: cerql's own
    on a stream whose sources have none, or the one source's on its event time."""
    marked = [(src.key, f.name, int(f.metadata[WATERMARK_METADATA])) for src in plan.sources
              for f in frames[src.key].schema.fields if WATERMARK_METADATA in (f.metadata or {})]
    if added is not None:
        return added if not marked else None
    if len(plan.sources) == 1 and len(marked) == 1:
        return marked[0][2]
    return None


def watermark_to_add(plan: QueryPlan, frames, conf_value: str | None, text: str) -> int | None:
    """The watermark delay (ms) cerql puts on a streaming query's event time, None when its
    sources have a watermark on it already (``withWatermark``; Spark allows no second one),
    after the checks a stream needs: WITHIN (the state is the window's rows), no LIMIT (the
    first n results of an endless stream are never known), event time as the first ordering
    column, and a watermark: the sources', else ``cerql.streaming.allowedLateness``."""
    if plan.window is None:
        raise UnsupportedError.at(text, _keyword(text, "ORDER"), "A query over a stream needs WITHIN",
                                  "STREAM_NEEDS_WITHIN", "add WITHIN n SECONDS (or n EVENTS) after ORDER BY: "
                                  "the rows a stream keeps per partition are those of the window")
    if plan.limit is not None:
        raise UnsupportedError.at(text, _keyword(text, "LIMIT"), "LIMIT is not supported on a stream",
                                  "LIMIT_ON_STREAM", "the first n results of a stream that never ends are never "
                                  "known; limit the rows where the stream is written, or query a table")
    order = plan.order_columns[0]
    delays = []
    for src in plan.sources:
        field = _field(frames[src.key], order)
        if field is None or field.dataType.typeName() != "timestamp":
            raise AnalysisError.at(text, _keyword(text, "ORDER"), f"Over a stream, the first ORDER BY column "
                                   f"('{order}') must be a TIMESTAMP: it is the event time",
                                   "STREAM_ORDER_NOT_TIME", "order by a TIMESTAMP column of the stream (cast it "
                                   "in a DataFrame before the query)")
        delay = (field.metadata or {}).get(WATERMARK_METADATA)
        if delay is not None:
            delays.append(int(delay))
    if delays:
        return None
    if conf_value:
        return parse_interval_ms(conf_value, text)
    raise UnsupportedError.at(text, _keyword(text, "ORDER"), f"The stream has no watermark on '{order}'",
                              "STREAM_NEEDS_WATERMARK", f"call withWatermark('{order}', '10 seconds') on the "
                              f"source, or set the Spark conf {ALLOWED_LATENESS_CONF}: rows are processed once "
                              "the watermark passes them")


def _field(frame, name: str):
    exact = [f for f in frame.schema.fields if f.name == name]
    similar = [f for f in frame.schema.fields if f.name.lower() == name.lower()]
    return exact[0] if exact else similar[0] if len(similar) == 1 else None
