"""CEQL over Structured Streaming: ``cer_sql`` on streaming sources (DESIGN.md 6.4).

Input: the rows of the stream of DESIGN.md section 3 as spark/lower.py builds them (hidden
columns, source, ordinal, condition bits, inert rows dropped), from streaming sources, and the
plan. Output: a streaming DataFrame of result rows in the schema the batch task gives, to be
written in append mode; spark/lower.py names its columns as for a batch query.

Why this shape:

- Event time. The first ORDER BY column is event time, and a watermark on it says when rows
  are final: the source's own ``withWatermark``, else one of ``cerql.streaming.allowedLateness``
  (``watermark_to_add``) put on the stream before any row is dropped. Either way every row
  moves it.
- Rows travel packed. A stateless ``mapInArrow`` (``pack``) turns each Arrow batch into one row
  per partition key holding that key's rows as Arrow IPC bytes, so the stateful operator
  receives a few binary values per key and micro-batch, and no value goes through pandas
  (which would merge NULL with NaN and shift timestamps by the session time zone). Its output
  is the same: Arrow IPC of result rows, unpacked by another ``mapInArrow`` (``unpack``).
- State bounded by the window. ``transformWithStateInPandas`` in event-time mode runs
  :class:`MatchProcessor` per key. Rows wait (``pending``) until the watermark passes them; an
  event-time timer then sorts the ready rows by the ordering columns, source and ordinal, and
  runs :class:`cerql.spark.arrow_task.MatchTask` over the rows kept from before (``kept``:
  those a later result can still reach, which the task already bounds by WITHIN and CONSUME BY)
  followed by the ready rows, and emits the results that end in the ready rows. A result ending
  at a ready row lies inside the kept and ready rows, and a result the task finds again among
  the kept rows is either one already emitted or one that never was (see ``_advance``), so the
  union of the outputs is the batch result on the same rows. All of the state is in the state
  store (no Python object outlives a call), so a restart from the checkpoint goes on where the
  last committed micro-batch ended.
- Late rows. A row whose event time is behind the watermark when it reaches its key is late:
  it is dropped, counted, and the counts of each micro-batch show in the query's progress as
  the observed metric ``cerql.late_rows``; with ``cerql.streaming.lateRowsPath`` set, the rows
  themselves are written there too, as Parquet files. Spark itself drops no row (its late-row filter
  reads an event-time column, and the stateful operator's input has none).
- Eviction. Under a time window a key whose rows are all further behind the watermark than
  the window is forgotten (a timer fires then); under ``n EVENTS`` a key keeps its last rows.
- On a stream the row ordinal that breaks ties in the ordering columns is a hash of the row
  (there is no input order to read): rows equal in every column keep one order.
"""

from __future__ import annotations

import io
import os
import re
import uuid
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark.sql.streaming import StatefulProcessor

from cerql.errors import AnalysisError, UnsupportedError
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan, TaskPlan

ALLOWED_LATENESS_CONF = "cerql.streaming.allowedLateness"
LATE_ROWS_PATH_CONF = "cerql.streaming.lateRowsPath"  # a directory the late rows are written to, too
WATERMARK_METADATA = "spark.watermarkDelayMs"  # what withWatermark puts on its column
ROWS_COLUMN = "__cerql_rows"      # a key's rows of one input batch, as Arrow IPC
KEY_COLUMN = "__cerql_key"        # the one key of a query without PARTITION BY
RESULT_COLUMN = "__cerql_result"  # result rows of one timer, as Arrow IPC
LATE_COLUMN = "__cerql_late"      # late rows seen in one input batch of a key
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


def settings(plan: QueryPlan, frames, conf: Callable[[str], str | None], text: str) -> StreamSettings:
    """The checks and settings of a query over streams (``conf`` reads a Spark conf)."""
    watermark = watermark_to_add(plan, frames, conf(ALLOWED_LATENESS_CONF), text)
    check_state_store(conf(STATE_STORE_CONF), text)
    return StreamSettings(watermark, conf(LATE_ROWS_PATH_CONF) or None)


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


# -- Arrow IPC, the form rows travel and rest in
def to_ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def from_ipc(blob) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


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


def pack(key_columns: list[str]):
    """The ``mapInArrow`` function that packs each batch's rows by key (see module docstring):
    one row per key of the batch, the key's columns, then its rows as Arrow IPC."""
    def cerql_pack(batches):  # the name shows in Spark's plan
        import pyarrow as pa  # on the executor

        for batch in batches:
            table = pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            if not key_columns:
                yield pa.RecordBatch.from_pydict({KEY_COLUMN: pa.array([0], pa.int32()),
                                                  ROWS_COLUMN: pa.array([to_ipc(table)], pa.binary())})
                continue
            row = pa.array(np.arange(table.num_rows), pa.int64())
            groups = table.append_column("__cerql_row", row).group_by(key_columns, use_threads=False).aggregate(
                [("__cerql_row", "list")])
            blobs = [to_ipc(table.take(rows)) for rows in groups.column("__cerql_row_list").to_pylist()]
            yield pa.RecordBatch.from_arrays([groups.column(c).combine_chunks() for c in key_columns]
                                             + [pa.array(blobs, pa.binary())], names=key_columns + [ROWS_COLUMN])

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


STATE_SCHEMA = "pending BINARY, kept BINARY"


class MatchProcessor(StatefulProcessor):
    """The per-key state of a streaming query (see module docstring): rows waiting for the
    watermark and the rows a later result can still reach, in one value of the state store.
    A row behind the watermark when it arrives is late (rows are processed once the watermark
    passes them, so it would come after rows later than it)."""

    def __init__(self, task: TaskPlan, names: list[str], order: list[str], late_rows_path: str | None = None):
        self.task, self.names, self.order, self.late_rows_path = task, names, order, late_rows_path

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("cerql", STATE_SCHEMA)
        self.matcher = None  # one MatchTask for every key of this worker (``_advance``)

    # -- state
    def _load(self):
        value = self.state.get() if self.state.exists() else None
        if value is None:
            return None, None
        return tuple(from_ipc(blob) if blob is not None else None for blob in value)

    def _save(self, pending, kept) -> None:
        """The key's rows; none at all clears its state."""
        blobs = tuple(to_ipc(t) if t is not None and t.num_rows else None for t in (pending, kept))
        if blobs == (None, None):
            self.state.clear()
        else:
            self.state.update(blobs)

    def _time(self, table: pa.Table) -> np.ndarray:
        """The event time of each row, µs since the epoch."""
        return table.column(self.order[0]).cast(pa.timestamp("us", "UTC")).cast(pa.int64()).to_numpy()

    def _evict(self, kept, watermark: int) -> None:
        """With nothing pending: forget the key once its kept rows are further behind the
        watermark than the window (a later row, at or after the watermark, cannot reach them).
        Under ``n EVENTS`` a key keeps its last rows."""
        window = self.task.window
        if kept is not None and window.kind == "time" and int(self._time(kept).max()) + window.amount < watermark:
            kept = None
        self._save(None, kept)

    def _write_late(self, rows: pa.Table) -> None:
        """Late rows, in the columns the query reads, as a Parquet file of their own under
        ``late_rows_path`` when it is set. At least once: a retried task writes its file again."""
        if not self.late_rows_path:
            return
        import pyarrow.parquet as pq

        os.makedirs(self.late_rows_path, exist_ok=True)
        shown = rows.select([n for n in self.names if not n.startswith("__cerql_")])
        pq.write_table(shown, os.path.join(self.late_rows_path, f"late-{uuid.uuid4().hex}.parquet"))

    def _wake(self, time: np.ndarray) -> None:
        """A timer that fires once the watermark is past the earliest of these rows (µs), so
        that rows are processed as soon as the watermark passes them."""
        self.handle.registerTimer(int(time.min()) // 1000 + 1)

    # -- the API
    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd

        # the frames' columns are the key's, then the packed rows (named by position)
        parts = [from_ipc(blob) for frame in rows for blob in frame.iloc[:, -1]]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return iter(())
        new = pa.concat_tables([p.rename_columns(self.names) for p in parts])
        pending, kept = self._load()
        time = self._time(new)
        late = time < timerValues.getCurrentWatermarkInMs() * 1000
        if late.any():
            self._write_late(new.filter(pa.array(late)))
            new = new.filter(pa.array(~late))
            time = time[~late]
        if new.num_rows:
            pending = new if pending is None else pa.concat_tables([pending, new])
            self._wake(time)
        self._save(pending, kept)
        if not late.any():
            return iter(())
        return iter([pd.DataFrame({RESULT_COLUMN: pd.Series([None], dtype=object),
                                   LATE_COLUMN: pd.Series([int(late.sum())], dtype="int64")})])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        import pandas as pd

        watermark = timerValues.getCurrentWatermarkInMs() * 1000
        pending, kept = self._load()
        if pending is None or pending.num_rows == 0:
            self._evict(kept, watermark)
            return iter(())
        time = self._time(pending)
        ready = time < watermark
        rest = pending.filter(pa.array(~ready))
        results, kept = self._advance(kept, pending.filter(pa.array(ready)))
        self._save(rest, kept)
        if rest.num_rows:
            self._wake(time[~ready])
        elif kept is not None and kept.num_rows and self.task.window.kind == "time":
            self._wake(self._time(kept) + self.task.window.amount)  # then ``_evict``
        if results is None or results.num_rows == 0:
            return iter(())
        return iter([pd.DataFrame({RESULT_COLUMN: pd.Series([to_ipc(results)], dtype=object),
                                   LATE_COLUMN: pd.Series([0], dtype="int64")})])

    def _advance(self, kept, ready):
        """Run the task over the kept rows, then the ready rows in order; return the results
        that end in the ready rows, and the rows to keep. The kept rows start after the window
        edge and after the last result's end under CONSUME BY (MatchTask._keep), so a result
        that ends among them and starts after the cut was, on the rows before, either emitted
        or not a candidate at all; with CONSUME BY the kept rows all follow the last emitted
        end, where no result ended, so none ends there now and none consumes."""
        from cerql.spark.arrow_task import MatchTask

        if ready.num_rows == 0:
            return None, kept
        ties = [c for c in (SOURCE_COLUMN, ORDINAL_COLUMN) if c in ready.column_names]
        ready = ready.take(spark_order(ready, self.order + ties))
        if self.matcher is None:  # its automaton is built lazily, once for all the keys
            self.matcher = MatchTask(self.task)
        task = self.matcher
        task.restart()
        if kept is not None and kept.num_rows:
            task.process(kept.select(self.names))
        results = task.process(ready)
        rows = task.kept.select(self.names) if task.kept is not None else None
        return results, rows

    def close(self) -> None:
        pass


def match_stream(task: TaskPlan, stream, key_columns: list[str], names: list[str], result_schema,
                 late_rows_path: str | None = None):
    """The streaming DataFrame of result rows (``result_schema``, the batch task's, renamed):
    packed by key, matched by :class:`MatchProcessor` per key, the late rows counted into the
    observed metric ``cerql.late_rows``, unpacked."""
    from cerql.spark.lower import functions_for

    F = functions_for(stream)
    packed_schema = ", ".join([f"`{c}` {stream.schema[c].dataType.simpleString()}" for c in key_columns]
                              or [f"{KEY_COLUMN} int"]) + f", {ROWS_COLUMN} binary"
    packed = stream.mapInArrow(pack(key_columns), packed_schema)
    grouped = packed.groupBy(*(key_columns or [KEY_COLUMN]))
    processor = MatchProcessor(task, names, list(task.order_columns), late_rows_path)
    out = grouped.transformWithStateInPandas(processor, f"{RESULT_COLUMN} binary, {LATE_COLUMN} long", "Append",
                                             "EventTime")
    out = out.observe(METRICS, F.coalesce(F.sum(LATE_COLUMN), F.lit(0)).alias("late_rows"))
    results = out.filter(F.col(RESULT_COLUMN).isNotNull()).select(RESULT_COLUMN)
    return results.mapInArrow(unpack([f.name for f in result_schema.fields]), result_schema)
