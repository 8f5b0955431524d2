"""The stateful processor of a streaming query: :class:`MatchProcessor`, run by Spark's
``transformWithStateInPandas`` once per bucket and micro-batch, and per timer (see the package
docstring for why it waits for the watermark, what it keeps and what it emits).
"""

from __future__ import annotations

import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark.sql.streaming import StatefulProcessor

from cerql.errors import ExecutionError, UnsupportedError
from cerql.exec.task import MatchTask, key_changes
from cerql.exec.window import last_edge, reachable
from cerql.plan import ORDINAL_COLUMN, SOURCE_COLUMN, TaskPlan
from cerql.spark.ipc import CHUNK_BYTES, CHUNK_ROWS, chunks_ipc, from_ipc
from cerql.spark.streaming.options import BUCKETS_CONF, DEFAULT_MAX_STATE_ROWS, MAX_STATE_ROWS_CONF
from cerql.spark.streaming.state import KeptStore

RESULT_COLUMN = "__cerql_result"  # result rows of one timer, as Arrow IPC
LATE_COLUMN = "__cerql_late"      # late rows seen in one call of the processor


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



# A Python worker serves every micro-batch of a state partition, and Spark reuses it for the
# next: it keeps the task of each query it ran, so that an automaton's lazily built transitions
# (tens of ms for the first rows that meet them) are built once per worker, not per micro-batch.
# A task keeps no rows between calls (``restart``); the state is all in the state store.
_MATCHERS: dict[str, MatchTask] = {}  # query id -> its task
MATCHERS_KEPT = 8

PENDING_SCHEMA = "rows BINARY, buckets INT"  # Arrow IPC rows, and the bucket count they were hashed by


def _millis(micros: int) -> int:
    """µs to ms as Spark's watermark takes them (Java's division: toward zero)."""
    return int(micros) // 1000 if micros >= 0 else -(-int(micros) // 1000)


class MatchProcessor(StatefulProcessor):
    """The state of one bucket of a streaming query (see the package docstring): the rows waiting
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
            wake.append(last_edge(int(self._time(new_kept).max()), self.task.window.amount))
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
            keep = reachable(index, size[group], window.amount)  # the next position is the edge
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
        return reachable(self._time(rows), edge, self.task.window.amount)

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
    starts = key_changes(rows, keys)
    if rows.num_rows:
        starts[0] = True
    first = np.flatnonzero(starts)
    return np.cumsum(starts) - 1, first
