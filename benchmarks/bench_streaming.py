"""``cer_sql`` over Structured Streaming against the same query in batch, on the same rows.

Input: generated stock trades (``--tickers`` names, one trade every millisecond in all, BUY or
SELL, a price), written as ``--files`` Parquet files, then two files of rows a day ahead that
move the watermark past every row (tests/spark/test_streaming.py's ``flush``). Output: a table
on stdout, and the same figures with ``--json PATH``.

Parts:

1. **throughput**: the query over the files as a table (``cer_sql`` to the ``noop`` sink) and as
   a stream (``readStream`` with ``maxFilesPerTrigger=1``, ``trigger(availableNow=True)``, the
   ``noop`` sink), both timed in wall seconds, best of ``--repeat``, interleaved; the stream's
   rows per second as a ratio of the batch query's (issue 21's target: at least 0.5);
2. **sustained** (``--sizes``): the same rows written as files of n rows, read one file per
   micro-batch; a micro-batch's rows over its trigger time (planning, the job, the commit) is the
   rate the stream keeps up with when a trigger interval of that time brings n rows, the
   median over the micro-batches after the first (which starts the workers) and before those
   of the flush files; as a ratio of the batch query's rows per second; beside it, Spark's
   floor: the same micro-batches through a stateful processor that does nothing (``Idle``);
3. **state**: the rows the state store holds per bucket after each run (read with Spark's state
   data source), against the rows that went through: it stays the window's, however long the
   stream;
4. **window** (``--windows``): a broader query (``BROAD_QUERY``: a quarter of the rows can take
   part, NEXT keeps one match per end) over the same micro-batches with each window: the
   median trigger seconds of the data micro-batches after the first and those of the last (the
   window is then as full as it gets), and the rows the state holds at the end. A micro-batch
   loads, runs again and stores the kept rows of each bucket that gets rows (the state is
   rows), so its cost grows with the rows a window holds;
5. **keep-up** (``--keep-up``): the issue's own measure of sustained throughput. For each input
   rate R (rows per second), ``--keep-up-seconds`` files of R rows (one row a millisecond of
   event time, as in the other parts) are written aside, the batch query runs over them, and a stream with Spark's default
   trigger (the next micro-batch as soon as the last ends) reads a directory into which one
   file is moved each second. The stream keeps up with R when, once the last file is in, it
   has processed every row within about a micro-batch (``lag``); R over the batch query's rows
   per second on the same files is the ratio the issue's target asks to be at least 0.5;
6. **latency** (unless ``--no-latency``): a writer thread adds a file of trades every 0.2 s (at
   ``--rate`` trades per second, stamped with the wall clock), the query runs with a one-second
   processing-time trigger, and each micro-batch records the wall time at which it wrote its
   matches. A match's latency is that time less its last event's; it splits into the allowed
   lateness, the wait from when the lateness had passed to the start of the micro-batch that
   wrote it (the target: at most the trigger interval, plus the source's 0.2 s), and that
   micro-batch's own time.

    .venv/bin/python benchmarks/bench_streaming.py --rows 1000000 --files 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import cerql  # noqa: E402
from cerql.spark.ipc import from_ipc  # noqa: E402
from cerql.spark.streaming import ROCKSDB, STATE_STORE_CONF  # noqa: E402

QUERY = ("SELECT * FROM trades WHERE SELL AS s ; BUY AS b ; SELL AS t "
         "FILTER s[price > 99] AND b[price < 1] AND t[price > {t}] PARTITION BY [name] ORDER BY ts WITHIN {window}")
BROAD_QUERY = ("SELECT NEXT * FROM trades WHERE SELL AS s ; BUY AS b ; SELL AS t "
               "FILTER s[price > 99] AND b[price < 50] AND t[price > 99.9] PARTITION BY [name] ORDER BY ts "
               "WITHIN {window}")
BASE = pd.Timestamp("2026-01-01", tz="UTC")


def trades(rows: int, tickers: int, seed: int = 1, start: pd.Timestamp = BASE, step_ms: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"name": [f"T{k}" for k in rng.integers(0, tickers, rows)],
                         "type": rng.choice(["BUY", "SELL"], rows), "price": rng.uniform(0, 100, rows),
                         "ts": start + pd.to_timedelta(np.arange(rows) * step_ms, unit="ms")})


def write_files(folder: str, rows: int, files: int, tickers: int, flush: bool = True) -> None:
    os.makedirs(folder, exist_ok=True)
    data = trades(rows, tickers)
    for k, part in enumerate(np.array_split(np.arange(rows), files)):
        data.iloc[part].to_parquet(os.path.join(folder, f"part{k:04d}.parquet"), coerce_timestamps="us", index=False)
    for k in range(2 if flush else 0):  # a day ahead, of every type the query reads: the watermark passes every row
        flush = pd.DataFrame({"name": ["T0", "T0"], "type": ["BUY", "SELL"], "price": [50.0, 50.0],
                              "ts": [BASE + pd.Timedelta(days=1 + k)] * 2})
        flush.to_parquet(os.path.join(folder, f"zz_flush{k}.parquet"), coerce_timestamps="us", index=False)


def batch_seconds(spark, folder: str, query: str) -> float:
    t0 = time.perf_counter()
    cerql.cer_sql(spark, query, trades=spark.read.parquet(folder)).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def batch_results(spark, folder: str, query: str) -> int:
    return cerql.cer_sql(spark, query, trades=spark.read.parquet(folder)).count()


def sustained(progress) -> tuple[float, float, int]:
    """(median rows per second of a micro-batch's trigger time, median trigger seconds, the
    micro-batches measured) over the data micro-batches after the first (``sustained`` in the
    module docstring)."""
    data = [p for p in progress if p.numInputRows > 2][1:]  # the flush files hold 2 rows each
    rates = [p.numInputRows / (p.durationMs["triggerExecution"] / 1000) for p in data]
    seconds = [p.durationMs["triggerExecution"] / 1000 for p in data]
    return float(np.median(rates)), float(np.median(seconds)), len(data)


class Idle(StatefulProcessor):
    """A stateful processor that reads its rows and does nothing: Spark's own cost."""

    def init(self, handle) -> None:
        pass

    def handleInputRows(self, key, rows, timerValues):
        for _ in rows:
            pass
        return iter(())

    def close(self) -> None:
        pass


def floor_progress(spark, folder: str, checkpoint: str, lateness: str):
    """The progress of Spark's floor for the same micro-batches: the rows the query reads
    (about: its FILTERs without the closing price) grouped by name into ``Idle``."""
    schema = spark.read.parquet(folder).schema
    frame = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(folder)
             .withWatermark("ts", lateness).filter("(type = 'SELL' AND price > 99) OR (type = 'BUY' AND price < 1)"))
    shutil.rmtree(checkpoint, ignore_errors=True)
    q = (frame.groupBy("name").transformWithStateInPandas(Idle(), "x long", "Append", "EventTime")
         .writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination()
    return q.recentProgress


def stream_seconds(spark, folder: str, query: str, checkpoint: str, lateness: str):
    schema = spark.read.parquet(folder).schema
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(folder)
    shutil.rmtree(checkpoint, ignore_errors=True)
    t0 = time.perf_counter()
    q = (cerql.cer_sql(spark, query, trades=frame.withWatermark("ts", lateness)).writeStream.format("noop")
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination()
    return time.perf_counter() - t0, q.recentProgress


def state_rows(spark, checkpoint: str) -> tuple[int, int]:
    """(buckets, rows) the state store holds at the last commit: rows waiting for the
    watermark and rows kept for later matches."""
    buckets, rows = set(), 0
    for name, column in (("pending", "list_element"), ("chunks", "user_map_value")):
        state = spark.read.format("statestore").option("path", checkpoint).option("stateVarName", name).load()
        for r in state.collect():
            buckets.add(tuple(r["key"]))
            rows += from_ipc(r[column]["rows"]).num_rows
    return len(buckets), rows


def latency(spark, folder: str, query: str, rate: int, seconds: int, tickers: int, lateness: str,
            every: float = 0.2) -> dict:
    """Part 6 (module docstring): for each match, the seconds from its last event (stamped with
    the wall clock when written) to the end of the micro-batch that writes it, split into the
    allowed lateness, the wait from when the lateness had passed to the start of that
    micro-batch (at most the trigger interval plus ``every``, the source's own delay), and the
    micro-batch's time up to the write."""
    os.makedirs(folder, exist_ok=True)
    stop = threading.Event()
    per_file = max(1, int(rate * every))

    def writer():
        k, last = 0, pd.Timestamp.now(tz="UTC").floor("ms")
        while not stop.is_set():
            now = pd.Timestamp.now(tz="UTC").floor("ms")
            part = trades(per_file, tickers, seed=k, start=last, step_ms=(now - last).total_seconds() * 1000 / per_file)
            part["ts"] = part["ts"].dt.floor("us")
            part.to_parquet(os.path.join(folder, f".tmp{k}"), coerce_timestamps="us", index=False)
            os.rename(os.path.join(folder, f".tmp{k}"), os.path.join(folder, f"part{k:06d}.parquet"))
            k, last = k + 1, now
            stop.wait(every)

    writer_thread = threading.Thread(target=writer, daemon=True)
    writer_thread.start()
    time.sleep(1.5)
    written: list[tuple[int, float, list]] = []  # (batch id, wall time after the write, match ends)

    def record(df, batch_id):
        ends = [r[0] for r in df.select("match_end").collect()]
        written.append((batch_id, time.time(), ends))

    schema = spark.read.parquet(folder).schema
    frame = spark.readStream.schema(schema).parquet(folder).withWatermark("ts", lateness)
    checkpoint = folder + "_checkpoint"
    q = (cerql.cer_sql(spark, query, trades=frame).writeStream.foreachBatch(record)
         .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())
    time.sleep(seconds)
    q.stop()
    stop.set()
    writer_thread.join()
    started = {p.batchId: pd.Timestamp(p.timestamp).timestamp() for p in q.recentProgress}
    late_s = pd.Timedelta(lateness).total_seconds()
    total, wait, work = [], [], []
    for batch_id, wrote, ends in written:
        for end in ends:
            end_s = pd.Timestamp(end).tz_localize("UTC").timestamp()
            total.append(wrote - end_s)
            if batch_id in started:
                wait.append(started[batch_id] - (end_s + late_s))
                work.append(wrote - started[batch_id])
    return {"matches": len(total), "micro_batches": sum(1 for _, _, ends in written if ends),
            "file_seconds": every, "latency": _spread(total), "wait": _spread(wait), "micro_batch": _spread(work)}


def _spread(values: list[float]) -> dict:
    return {"median": float(np.median(values)), "p99": float(np.percentile(values, 99)), "max": float(max(values))} \
        if values else {}


def keep_up(spark, folder: str, query: str, rate: int, seconds: int, tickers: int, lateness: str) -> dict:
    """Part 5 (module docstring) at one input rate: the lag after the last file arrives, the
    micro-batches the stream made, and the rate as a ratio of the batch query's."""
    staged, checkpoint = folder + "_staged", folder + "_checkpoint"
    for path in (staged, folder, checkpoint):  # a rate measured twice starts afresh
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(staged)
    os.makedirs(folder)
    # a second's worth of rows per file, one a millisecond in event time as in the other parts (so
    # the window holds as many rows): event time runs ahead of the wall clock, which the
    # throughput does not see
    one = trades(rate, tickers, seed=7)
    for k in range(seconds):
        one.assign(ts=one["ts"] + pd.Timedelta(milliseconds=k * rate)).to_parquet(
            os.path.join(staged, f"part{k:05d}.parquet"), coerce_timestamps="us", index=False)
    batch = min(batch_seconds(spark, staged, query) for _ in range(2))
    frame = spark.readStream.schema(spark.read.parquet(staged).schema).parquet(folder).withWatermark("ts", lateness)
    q = (cerql.cer_sql(spark, query, trades=frame).writeStream.format("noop")
         .option("checkpointLocation", checkpoint).start())
    t0 = time.perf_counter()
    for k in range(seconds):
        name = f"part{k:05d}.parquet"
        os.rename(os.path.join(staged, name), os.path.join(folder, name))
        time.sleep(max(0.0, t0 + k + 1 - time.perf_counter()))
    arrived = time.perf_counter()
    q.processAllAvailable()
    lag = time.perf_counter() - arrived
    progress = [p for p in q.recentProgress if p.numInputRows]
    q.stop()
    batch_rate = seconds * rate / batch
    return {"rate": rate, "seconds": seconds, "lag_seconds": lag, "batch_rows_per_s": batch_rate,
            "ratio": rate / batch_rate, "micro_batches": len(progress),
            "median_rows_per_micro_batch": float(np.median([p.numInputRows for p in progress])) if progress else 0,
            "max_trigger_seconds": max((p.durationMs["triggerExecution"] / 1000 for p in progress), default=0.0),
            # in order: whether micro-batches settle at a size (keeping up) or keep growing (falling behind)
            "rows_per_micro_batch": [p.numInputRows for p in progress],
            "trigger_seconds": [p.durationMs["triggerExecution"] / 1000 for p in progress]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--tickers", type=int, default=20)
    ap.add_argument("--window", default="1 MINUTE")
    ap.add_argument("--closing-price", type=float, default=99.9,
                    help="t[price > X]: 99.9 gives about 0.5 results per 1 000 trades, 99 about 5 times more")
    ap.add_argument("--lateness", default="2 seconds")
    ap.add_argument("--sizes", default="",
                    help="rows per micro-batch for the sustained part, comma-separated (e.g. 500000,1000000,2000000)")
    ap.add_argument("--windows", default="",
                    help="windows for the window part, comma-separated (e.g. '1 MINUTE,10 MINUTES,1 HOUR')")
    ap.add_argument("--keep-up", default="",
                    help="input rates (rows/s) for the keep-up part, comma-separated (e.g. 2000000,3000000)")
    ap.add_argument("--keep-up-seconds", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rate", type=int, default=5000, help="trades per second for the latency part")
    ap.add_argument("--latency-seconds", type=int, default=40)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .config(STATE_STORE_CONF, ROCKSDB).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="cerql-bench-streaming-")
    query = QUERY.format(window=args.window, t=args.closing_price)
    report = {"rows": args.rows, "files": args.files, "tickers": args.tickers, "query": query}
    try:
        folder = os.path.join(work, "in")
        write_files(folder, args.rows, args.files, args.tickers)
        batch_seconds(spark, folder, query)  # warm-up: workers, numba
        batch, stream, progress = [], [], None
        for _ in range(args.repeat):
            batch.append(batch_seconds(spark, folder, query))
            seconds, progress = stream_seconds(spark, folder, query, os.path.join(work, "ck"), args.lateness)
            stream.append(seconds)
        keys, held = state_rows(spark, os.path.join(work, "ck"))
        report["results"] = batch_results(spark, folder, query)
        b, s = min(batch), min(stream)
        report.update(batch_seconds=b, stream_seconds=s, batch_rows_per_s=args.rows / b, stream_rows_per_s=args.rows / s,
                      ratio=b / s, micro_batches=len(progress), state_keys=keys, state_rows=held,
                      state_rows_per_batch=[sum(op.numRowsTotal for op in p.stateOperators) for p in progress])
        print(f"# {args.rows:,} trades in {args.files} files, {args.tickers} tickers, {report['results']:,} results; "
              f"best of {args.repeat}")
        print(f"batch  {b:7.1f} s  {args.rows / b:12,.0f} rows/s")
        print(f"stream {s:7.1f} s  {args.rows / s:12,.0f} rows/s  ({b / s:.2f}x the batch throughput, "
              f"{len(progress)} micro-batches)")
        print(f"state after the stream: {keys} buckets holding {held:,} rows (of {args.rows:,} through it)")
        for p in progress:
            print("  micro-batch", p.batchId, p.numInputRows, "rows", dict(p.durationMs))
        report["sustained"] = []
        for size in [int(x) for x in args.sizes.split(",") if x]:
            files = max(3, -(-args.rows // size))
            cut = os.path.join(work, f"in{size}")
            write_files(cut, files * size, files, args.tickers)
            cut_batch = min(batch_seconds(spark, cut, query) for _ in range(args.repeat))
            _, progress = stream_seconds(spark, cut, query, os.path.join(work, f"ck{size}"), args.lateness)
            rate, seconds, measured = sustained(progress)
            floor_rate, floor_seconds, _ = sustained(floor_progress(spark, cut, os.path.join(work, "ckf"), args.lateness))
            ratio = rate / (files * size / cut_batch)
            report["sustained"].append({"rows_per_micro_batch": size, "micro_batches_measured": measured,
                                        "trigger_seconds": seconds, "rows_per_s": rate,
                                        "batch_rows_per_s": files * size / cut_batch, "ratio": ratio,
                                        "floor_trigger_seconds": floor_seconds, "floor_rows_per_s": floor_rate})
            print(f"sustained, {size:,} rows a micro-batch: {seconds:.2f} s each (median of {measured}; Spark's "
                  f"floor {floor_seconds:.2f} s), {rate:,.0f} rows/s against the batch query's "
                  f"{files * size / cut_batch:,.0f} ({ratio:.2f}x; the floor's {floor_rate / (files * size / cut_batch):.2f}x)")
        report["windows"] = []
        if args.windows:  # no flush files: the state at the end is what the window holds
            write_files(os.path.join(work, "inw"), args.rows, args.files, args.tickers, flush=False)
        for window in [w.strip() for w in args.windows.split(",") if w.strip()]:
            broad = BROAD_QUERY.format(window=window)
            checkpoint = os.path.join(work, "ckw")
            _, progress = stream_seconds(spark, os.path.join(work, "inw"), broad, checkpoint, args.lateness)
            _, seconds, measured = sustained(progress)
            last = [p.durationMs["triggerExecution"] / 1000 for p in progress if p.numInputRows][-1]
            _, held = state_rows(spark, checkpoint)
            report["windows"].append({"window": window, "trigger_seconds": seconds, "last_trigger_seconds": last,
                                      "micro_batches_measured": measured, "state_rows": held, "query": broad})
            print(f"window {window}: {seconds:.2f} s a micro-batch of {args.rows // args.files:,} rows (median of "
                  f"{measured}), the last {last:.2f} s; {held:,} rows in the state at the end")
        report["keep_up"] = []
        for rate in [int(x) for x in args.keep_up.split(",") if x]:
            got = keep_up(spark, os.path.join(work, f"up{rate}"), query, rate, args.keep_up_seconds, args.tickers,
                          args.lateness)
            report["keep_up"].append(got)
            print(f"keep-up at {rate:,} rows/s ({got['ratio']:.2f}x the batch query's "
                  f"{got['batch_rows_per_s']:,.0f} rows/s on the same files): lag {got['lag_seconds']:.1f} s after the "
                  f"last file, {got['micro_batches']} micro-batches of {got['median_rows_per_micro_batch']:,.0f} rows "
                  f"(median), {got['max_trigger_seconds']:.1f} s at most")
            shutil.rmtree(os.path.join(work, f"up{rate}_staged"), ignore_errors=True)
            shutil.rmtree(os.path.join(work, f"up{rate}"), ignore_errors=True)
        if not args.no_latency:
            got = latency(spark, os.path.join(work, "live"), query, args.rate, args.latency_seconds, args.tickers,
                          args.lateness)
            report["latency"] = got
            if got["matches"]:
                show = {k: "median {median:.2f} s, p99 {p99:.2f} s, max {max:.2f} s".format(**got[k])
                        for k in ("latency", "wait", "micro_batch")}
                print(f"latency at {args.rate:,} trades/s (a file each {got['file_seconds']} s), 1 s trigger, "
                      f"{args.lateness} lateness, {got['matches']} matches in {got['micro_batches']} micro-batches: "
                      f"{show['latency']}; of which the wait from lateness passed to the micro-batch's start "
                      f"{show['wait']}, the micro-batch up to the write {show['micro_batch']}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, default=str)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
