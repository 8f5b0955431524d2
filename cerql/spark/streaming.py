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
  source and ordinal, runs :class:`cerql.spark.arrow_task.MatchTask` over the keys that have
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
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark.sql.streaming import StatefulProcessor

from cerql.errors import AnalysisError, ExecutionError, UnsupportedError
from cerql.spark.ipc import CHUNK_BYTES, CHUNK_ROWS, chunks_ipc, from_ipc, to_ipc
from cerql.spark.stream_state import KeptStore
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan, TaskPlan

ALLOWED_LATENESS_CONF = "cerql.streaming.allowedLateness"
LATE_ROWS_PATH_CONF = "cerql.streaming.lateRowsPath"  # a directory the late rows are written to, too
BUCKETS_CONF = "cerql.streaming.stateBuckets"  # state keys the partition keys hash to (see with_bucket)
SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"  # the default of BUCKETS_CONF
MAX_STATE_ROWS_CONF = "cerql.streaming.maxStateRows"  # rows one bucket may hold between micro-batches
DEFAULT_MAX_STATE_ROWS = 10_000_000
WATERMARK_METADATA = "spark.watermarkDelayMs"  # what withWatermark puts on its column
ROWS_COLUMN = "__cerql_rows"      # a key's rows of one input batch, as Arrow IPC
BUCKET_COLUMN = "__cerql_bucket"  # the state key a row's partition key hashes to
RESULT_COLUMN = "__cerql_result"  # result rows of one timer, as Arrow IPC
LATE_COLUMN = "__cerql_late"      # late rows seen in one call of the processor
METRICS = "cerql"                 # the observed metrics' name in the query's progress


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


def spark_order(table: pa.Table, columns: list[str]) -> pa.Array:
    """The row indices of ``table`` in the ascending order Spark sorts by ``columns`` in: NULL
    first, NaN after every number (Arrow's own order puts them together at one end)."""
    keys = {}
    for k, name in enumerate(columns):
        column = table.column(name)
        keys[f"{k}_valid"] = pc.is_valid(column)
        if pa.types.is_floating(column.type):
            keys[f"{k}_nan"] = pc.fill_null(pc.is_nan(column), False)
        keys[f"{k}"] = column
    return pc.sort_indices(pa.table(keys), sort_keys=[(name, "ascending") for name in keys])


# -- state buckets: keys hashed into a fixed number of state keys
def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an INT (Murmur3 x86 32-bit, seed 42), as a signed int: what its
    hash partitioning reads to place a row of ``groupBy`` on an INT column."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k = rotl(k, 15) * 0x1B873593 & 0xFFFFFFFF
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def bucket_values(buckets: int) -> list[int]:
    """The state key of each bucket: ``buckets`` distinct INTs that Spark's hash partitioning
    into ``buckets`` partitions sends to partitions 0, 1, ... in turn, so that with as many
    state partitions as buckets each partition holds one bucket (any other count only changes
    how evenly they spread)."""
    values, taken = [], set()
    for b in range(buckets):
        v = 0
        while v in taken or murmur3_int(v) % buckets != b:  # Python's % is Spark's pmod here
            v += 1
        values.append(v)
        taken.add(v)
    return values


def with_bucket(stream, key_columns: list[str], buckets: int):
    """``stream`` with ``BUCKET_COLUMN``: the state key its partition key hashes to. Floating
    keys are normalized first (-0.0 is 0.0, every NaN one NaN), as Spark groups them."""
    from cerql.spark.lower import functions_for

    F = functions_for(stream)
    if not key_columns:
        return stream.withColumn(BUCKET_COLUMN, F.lit(0))
    keys = []
    for c in key_columns:
        col = F.col(c)
        if stream.schema[c].dataType.typeName() in ("float", "double"):
            col = F.when(F.isnan(col), F.lit(float("nan"))).when(col == 0, F.lit(0.0)).otherwise(col)
        keys.append(col)
    index = F.pmod(F.hash(*keys), F.lit(buckets))
    value = F.element_at(F.array(*[F.lit(v) for v in bucket_values(buckets)]), index + 1)
    return stream.withColumn(BUCKET_COLUMN, value.cast("int"))


def pack(names: list[str]):
    """The ``mapInArrow`` function that packs each batch's rows by bucket (see module
    docstring): one row per bucket of the batch, its number, then its rows as Arrow IPC, the
    columns before ``BUCKET_COLUMN`` named ``names``."""
    def cerql_pack(batches):  # the name shows in Spark's plan
        import pyarrow as pa  # on the executor

        for batch in batches:
            table = pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            bucket = table.column(BUCKET_COLUMN).to_numpy()
            order = np.argsort(bucket, kind="stable")
            bucket = bucket[order]
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(bucket)) + 1, [len(bucket)]])
            rows = table.select(list(range(len(names)))).rename_columns(names).take(order)
            blobs = [to_ipc(rows.slice(a, b - a)) for a, b in zip(bounds[:-1], bounds[1:])]
            yield pa.RecordBatch.from_arrays([pa.array(bucket[bounds[:-1]], pa.int32()), pa.array(blobs, pa.binary())],
                                             names=[BUCKET_COLUMN, ROWS_COLUMN])

    return cerql_pack


def unpack(names: list[str]):
    """The ``mapInArrow`` function that unpacks the processor's results, renamed by position."""
    def cerql_unpack(batches):
        import pyarrow as pa  # on the executor

        for batch in batches:
            for blob in batch.column(0).to_pylist():
                if blob is None:
                    continue
                for b in from_ipc(blob).to_batches():
                    yield pa.RecordBatch.from_arrays(b.columns, names=names)

    return cerql_unpack


# A Python worker serves every micro-batch of a state partition, and Spark reuses it for the
# next: it keeps the task of each query it ran, so that an automaton's lazily built transitions
# (tens of ms for the first rows that meet them) are built once per worker, not per micro-batch.
# A task keeps no rows between calls (``restart``); the state is all in the state store.
_MATCHERS: dict[str, object] = {}  # query id -> MatchTask
MATCHERS_KEPT = 8

PENDING_SCHEMA = "rows BINARY, buckets INT"  # Arrow IPC rows, and the bucket count they were hashed by


def _millis(micros: int) -> int:
    """µs to ms as Spark's watermark takes them (Java's division: toward zero)."""
    return int(micros) // 1000 if micros >= 0 else -(-int(micros) // 1000)


class MatchProcessor(StatefulProcessor):
    """The state of one bucket of a streaming query (see module docstring): the rows waiting
    for the watermark (``pending``, a list of Arrow IPC blobs, one per micro-batch) and the
    rows a later result can still reach (``kept``). A row behind the watermark when it arrives
    is late (rows are processed once the watermark passes them, so it would come after rows
    later than it).

    With ``delay_ms``, the delay of the stream's one watermark, a bucket does not wait for the
    watermark when its own rows show where the next one will be: Spark sets it at the latest
    event time of the micro-batch's rows less the delay, so rows before the latest of the
    bucket's rows less the delay (``_edge``) are final now, and a row behind them that comes
    later is behind that watermark too: late. Matches then come out in the micro-batch their
    rows arrive in, not the one after."""

    def __init__(self, task: TaskPlan, names: list[str], buckets: int, delay_ms: int | None = None,
                 late_rows_path: str | None = None, max_state_rows: int = DEFAULT_MAX_STATE_ROWS):
        self.task, self.names, self.buckets, self.late_rows_path = task, names, buckets, late_rows_path
        self.delay_ms, self.max_state_rows = delay_ms, max_state_rows
        self.query_id = uuid.uuid4().hex  # names this query's task in a worker's _MATCHERS
        self.keys = list(task.substream_columns)
        ties = [c for c in (SOURCE_COLUMN, ORDINAL_COLUMN) if c in names]
        self.sort = self.keys + list(task.order_columns) + ties

    def init(self, handle) -> None:
        self.handle = handle
        self.pending = handle.getListState("pending", PENDING_SCHEMA)
        window = self.task.window
        self.kept = KeptStore(handle, self._time, window.amount if window.kind == "time" else None,
                              self.task.consume == "NONE")

    # -- state
    def _check(self, buckets: int) -> None:
        if buckets != self.buckets:
            raise UnsupportedError(f"The stream's state was written with {BUCKETS_CONF}={buckets}, and the query "
                                   f"now runs with {self.buckets}", error_class="STREAM_BUCKETS_CHANGED",
                                   hint=f'spark.conf.set("{BUCKETS_CONF}", "{buckets}") before the query, or '
                                   "start it with a new checkpoint: a key's rows are in the bucket it hashed to")

    def _check_size(self, rows: int, size: int | None = None) -> None:
        """Refuse to hold more than ``max_state_rows`` rows in one bucket (or more bytes than a
        value of Spark's rows can carry): a documented limit rather than a worker that runs out
        of memory, or a raw error of Spark's."""
        if rows <= self.max_state_rows and size is None:
            return
        what = f"{rows:,} rows" + (f" in {size:,} bytes, more than a Spark value holds" if size is not None else
                                   f", more than {MAX_STATE_ROWS_CONF}={self.max_state_rows:,}")
        raise ExecutionError(f"[STREAM_STATE_TOO_LARGE] A state bucket of the stream would hold {what}",
                             error_class="STREAM_STATE_TOO_LARGE",
                             hint=f"a bucket holds its keys' rows of the window (WITHIN n EVENTS: each key's last "
                                  f"n rows) and those waiting for the watermark; shorten WITHIN or the lateness, "
                                  f"spread the keys over more buckets ({BUCKETS_CONF}, with a new checkpoint), or "
                                  f"raise {MAX_STATE_ROWS_CONF} if the executors have the memory")

    def _time(self, table: pa.Table) -> np.ndarray:
        """The event time of each row, µs since the epoch."""
        return table.column(self.task.order_columns[0]).cast(pa.timestamp("us", "UTC")).cast(pa.int64()).to_numpy()

    def _write_late(self, rows: pa.Table) -> None:
        """Late rows, in the columns the query reads, as a Parquet file of their own under
        ``late_rows_path`` when it is set. At least once: a retried task writes its file again."""
        if not self.late_rows_path:
            return
        import pyarrow.parquet as pq

        os.makedirs(self.late_rows_path, exist_ok=True)
        shown = rows.select([n for n in self.names if not n.startswith("__cerql_")])
        pq.write_table(shown, os.path.join(self.late_rows_path, f"late-{uuid.uuid4().hex}.parquet"))

    def _wake(self, micros: int) -> None:
        """A timer that fires once the watermark is past ``micros``."""
        self.handle.registerTimer(_millis(micros) + 1)

    def _set_timer(self, micros: int | None, watermark_ms: int | None) -> None:
        """Leave the bucket the one timer it needs, at ``micros`` (none when None), and delete
        the timers earlier calls set that it processed since: each that fired would load and
        store the bucket's whole state again for nothing. In a timer's call (``watermark_ms``
        set) the timers the watermark has passed are Spark's to fire and delete."""
        target = _millis(micros) + 1 if micros is not None else None
        present = False
        for expiry in list(self.handle.listTimers()):
            if expiry == target:
                present = True
            elif watermark_ms is None or expiry > watermark_ms:
                self.handle.deleteTimer(expiry)
        if target is not None and not present:
            self.handle.registerTimer(target)

    def _edge(self, time: np.ndarray, watermark: int) -> int | None:
        """Where the next watermark will be at least, from this bucket's rows of the micro-batch
        (µs; see the class docstring), or None when the stream has several watermarks."""
        if self.delay_ms is None:
            return None
        return max(watermark, (_millis(time.max()) - self.delay_ms) * 1000)

    # -- the API
    def handleInputRows(self, key, rows, timerValues):
        # the frames' columns are the bucket, then the packed rows
        parts = [from_ipc(blob) for frame in rows for blob in frame.iloc[:, -1]]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return iter(())
        new = pa.concat_tables(parts)
        time = self._time(new)
        watermark = timerValues.getCurrentWatermarkInMs() * 1000
        late = time < watermark
        if late.any():
            self._write_late(new.filter(pa.array(late)))
            new = new.filter(pa.array(~late))
            time = time[~late]
        results, behind = None, 0
        if new.num_rows:
            edge = self._edge(time, watermark)
            if edge is not None and edge > watermark:  # rows before it may wait in the state
                results, behind = self._process(edge, new)
            else:
                self.pending.appendList([(blob, self.buckets) for blob in chunks_ipc(new, compressed=True)])
                self._wake(time.min())
        return _emitted(results, int(late.sum()) + behind)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        watermark = timerValues.getCurrentWatermarkInMs()
        return _emitted(*self._process(watermark * 1000, timer_ms=watermark))

    def _process(self, edge: int, new: pa.Table | None = None, timer_ms: int | None = None):
        """Process the bucket's rows before ``edge`` (µs): the pending ones, and ``new`` (rows
        of this micro-batch not in the state yet); ``timer_ms``: called for a timer, at that
        watermark (ms). Returns the results and the number of rows found behind rows processed
        before (late: only a stream with several watermarks has them). The state is written
        only when it changed, and the bucket keeps one timer: at its first waiting row, or
        when its kept rows all leave a time window, whichever comes first."""
        parts = self._pending()
        before = self.kept.load()
        if before.found:
            self._check(before.buckets)
        kept, done = before.rows, before.done
        had_pending = bool(parts)
        if new is not None:
            parts.append(new)
        pending = pa.concat_tables(parts) if parts else None
        time = self._time(pending) if pending is not None else np.zeros(0, np.int64)
        behind = time < done if done is not None else np.zeros(len(time), bool)
        if behind.any():
            self._write_late(pending.filter(pa.array(behind)))
        ready = ~behind & (time < edge)
        waiting = ~behind & ~ready  # rows the edge has not passed: they stay pending
        if ready.any():
            results, new_kept, added = self._advance(kept, pending.filter(pa.array(ready)), edge)
        else:
            results, new_kept, added = None, self._evict(kept, edge), None
        kept_rows = new_kept.num_rows if new_kept is not None else 0
        has_rows = kept_rows > 0
        self._check_size(kept_rows + int(waiting.sum()))
        moved = ready.any() or behind.any() or new is not None  # else only eviction may change the state
        if moved:
            if waiting.any():
                waiting_rows = pending.filter(pa.array(waiting))
                self.pending.put([(blob, self.buckets) for blob in chunks_ipc(waiting_rows, compressed=True)])
            elif had_pending:
                self.pending.clear()
        if moved or kept_rows != (kept.num_rows if kept is not None else 0):  # rows moved, or some left
            if has_rows or waiting.any():  # ``done`` is kept while the bucket holds rows
                done = edge if done is None else max(done, edge)
                self.kept.save(before, new_kept if has_rows else None, added, done, self.buckets, self._check_size)
            elif before.found:
                self.kept.clear(before)
        wake = [int(time[waiting].min())] if waiting.any() else []
        if has_rows and self.task.window.kind == "time":  # then ``_evict`` forgets them
            wake.append(int(self._time(new_kept).max()) + self.task.window.amount)
        self._set_timer(min(wake) if wake else None, timer_ms)
        return results, int(behind.sum())

    def _pending(self) -> list[pa.Table]:
        """The bucket's rows waiting for the watermark, as tables in the order they came."""
        parts = []
        for blob, buckets in self.pending.get():
            self._check(buckets)
            parts.append(from_ipc(blob))
        return parts

    def _advance(self, kept, ready, edge: int):
        """Run the task over each key's kept rows, then its ready rows, in order; return the
        results that end in the ready rows, the rows to keep, and those of them that were
        ready. The kept rows start after the window edge and after the key's last result
        under CONSUME BY (``_keep``), so a result that ends among them and starts after the
        cut was, on the rows before, either emitted or not a candidate at all; with CONSUME BY
        the kept rows all follow the last emitted end, where no result ended, so none ends
        there now and none consumes. Keys with no ready row are not run (no result can end in
        them); their rows only age (``_evict``)."""
        from cerql.spark.arrow_task import MatchTask

        rows = pa.concat_tables([kept, ready]) if kept is not None else ready
        is_ready = np.ones(rows.num_rows, bool)
        is_ready[:rows.num_rows - ready.num_rows] = False
        order = spark_order(rows, self.sort)
        rows, is_ready = rows.take(order), is_ready[order.to_numpy()]
        group, first = _groups(rows, self.keys)
        active = np.logical_or.reduceat(is_ready, first)[group]
        idle = rows.filter(pa.array(~active)) if not active.all() else None
        rows, is_ready = (rows.filter(pa.array(active)), is_ready[active]) if idle is not None else (rows, is_ready)
        task = _MATCHERS.pop(self.query_id, None)  # its automaton, as far as earlier rows built it
        if task is None:
            task = MatchTask(self.task)
        _MATCHERS[self.query_id] = task  # the most recent last
        while len(_MATCHERS) > MATCHERS_KEPT:
            _MATCHERS.pop(next(iter(_MATCHERS)))
        task.restart()
        results = task.process(rows)
        ends = task.result_ends
        task.restart()  # it keeps no rows until the next call
        if not is_ready[ends].all():  # found again among the kept rows: emitted before
            results = results.filter(pa.array(is_ready[ends]))
        keep = self._keep(rows, ends, edge)
        parts = [rows.filter(pa.array(keep))] + ([self._evict(idle, edge)] if idle is not None else [])
        parts = [p for p in parts if p is not None and p.num_rows]
        added = rows.filter(pa.array(keep & is_ready))
        return results, (pa.concat_tables(parts) if parts else None), added

    def _keep(self, rows: pa.Table, ends: np.ndarray, edge: int) -> np.ndarray:
        """Which of ``rows`` (keys in turn, each in order) a later result can still reach: under
        a time window, those no further behind the ``edge`` of processed rows than the window
        (``_reachable``); under ``n EVENTS``, a key's last n rows; under CONSUME BY, only the
        rows after the key's last result (``ends``, the rows results end at)."""
        window = self.task.window
        consumes = self.task.consume != "NONE" and len(ends)
        group, first = _groups(rows, self.keys) if window.kind != "time" or consumes else (None, None)
        if window.kind == "time":
            keep = self._reachable(rows, edge)
        else:
            index = np.arange(rows.num_rows) - first[group]
            size = np.diff(np.append(first, rows.num_rows))
            keep = index >= size[group] - window.amount
        if consumes:
            last = np.full(len(first), -1, np.int64)
            np.maximum.at(last, group[ends], ends)
            keep &= np.arange(rows.num_rows) > last[group]
        return keep

    def _evict(self, rows, edge: int):
        """``rows`` without those a later result cannot reach, under a time window: further
        behind the ``edge`` of processed rows than the window. Under ``n EVENTS`` a key keeps
        its last rows."""
        if rows is None or self.task.window.kind != "time":
            return rows
        keep = self._reachable(rows, edge)
        return rows if keep.all() else rows.filter(pa.array(keep))

    def _reachable(self, rows: pa.Table, edge: int) -> np.ndarray:
        """Under a time window, which rows are no further behind ``edge`` than the window:
        every later result ends at or after the edge."""
        return self._time(rows) >= edge - self.task.window.amount

    def close(self) -> None:
        pass


def _emitted(results: pa.Table | None, late: int, rows: int = CHUNK_ROWS, max_bytes: int = CHUNK_BYTES):
    """The processor's output rows, one pandas frame of one row each, made as Spark reads them:
    the results as Arrow IPC values of at most ``rows`` rows and ``max_bytes`` bytes (a bucket's
    results of one micro-batch may be many), the late rows counted on the first. One value a
    frame, since Spark turns each frame into one Arrow batch in the JVM's direct memory: a frame
    of every value would take as much of it as the micro-batch's results."""
    import pandas as pd

    def frame(blob, count: int):
        return pd.DataFrame({RESULT_COLUMN: pd.Series([blob], dtype=object),
                             LATE_COLUMN: pd.Series([count], dtype="int64")})

    blobs = chunks_ipc(results, rows, max_bytes=max_bytes) if results is not None else iter(())
    first = next(blobs, None)
    if first is None and late == 0:
        return
    yield frame(first, late)
    for blob in blobs:
        yield frame(blob, 0)


def _groups(rows: pa.Table, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by key: each row's key number, and each key's first row."""
    from cerql.spark.arrow_task import key_changes

    starts = key_changes(rows, keys)
    if rows.num_rows:
        starts[0] = True
    first = np.flatnonzero(starts)
    return np.cumsum(starts) - 1, first


def match_stream(task: TaskPlan, stream, key_columns: list[str], names: list[str], result_schema,
                 settings: StreamSettings):
    """The streaming DataFrame of result rows (``result_schema``, the batch task's, renamed):
    hashed into buckets and packed, matched by :class:`MatchProcessor` per bucket, the late
    rows counted into the observed metric ``cerql.late_rows``, unpacked."""
    from cerql.spark.lower import functions_for

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
