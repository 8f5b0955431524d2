"""``cerql demo --stream``: a query over trades that arrive while it runs (docs/streaming.md).

Input: a Spark session, a row count and the demo's stock trades (:func:`cerql.cli.demo.stock_stream`).
Output: lines on ``out``: one per micro-batch (rows in, matches out, late rows, the watermark),
then the first matches and whether the stream's matches are the batch query's on the same rows.

A writer thread drops the trades into a directory as Parquet files, one every
``INTERVAL`` seconds, while ``cer_sql`` runs the demo query ``stock_sell_then_buys.sql`` over
the directory as a stream (``readStream``, a watermark of ``LATENESS`` on ``ts``) into a memory
sink, with a one-second trigger. A few trades of one file are stamped a minute early, so the
late-row count shows; they are left out of the batch query's rows too. The last two files hold
a buy a day ahead each (a trade the query reads, which moves the watermark, but matches
nothing), so that the last matches come out.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Callable

import numpy as np
import pandas as pd

import cerql
from cerql.cli.demo import sql_dir, stock_stream
from cerql.spark.streaming import ROCKSDB, STATE_STORE_CONF

QUERY_FILE = "stock_sell_then_buys.sql"
FILES = 8
INTERVAL = 1.0          # seconds between two files
LATENESS = "5 seconds"
LATE_ROWS = 3           # buys of the fourth file stamped a minute early
SINK = "cerql_stream_demo"


def _files(n_rows: int) -> tuple[list[pd.DataFrame], pd.DataFrame]:
    """The trades in arrival order as ``FILES`` frames (the fourth with ``LATE_ROWS`` stamped a
    minute early), then two frames of trades a day ahead; and the trades that are on time."""
    trades = stock_stream(n_rows).assign(ts=lambda d: d["ts"].dt.tz_localize("UTC"))
    parts = [trades.iloc[rows].copy() for rows in np.array_split(np.arange(len(trades)), FILES)]
    late = parts[3].index[:LATE_ROWS]
    parts[3].loc[late, "ts"] = parts[3].loc[late, "ts"] - pd.Timedelta(minutes=1)
    parts[3].loc[late, "type"] = "BUY"  # a trade the query reads: rows it cannot use are dropped uncounted
    on_time = pd.concat(parts).drop(index=late)
    ahead = trades.iloc[:1].assign(type="BUY")  # read by the query (so it moves the watermark), matches nothing
    for k in range(2):
        parts.append(ahead.assign(ts=trades["ts"].max() + pd.Timedelta(days=1 + k)))
    return parts, on_time


def _write(frame: pd.DataFrame, folder: str, name: str) -> None:
    """A Parquet file that appears whole (written aside, then renamed), as a source expects."""
    aside = os.path.join(folder, f".{name}.tmp")
    frame.to_parquet(aside, coerce_timestamps="us", index=False)
    os.rename(aside, os.path.join(folder, f"{name}.parquet"))


def late_rows(p) -> int:
    """The late rows of one micro-batch of a cerql streaming query (its observed metric)."""
    metrics = p.observedMetrics or {}
    return int(metrics["cerql"]["late_rows"]) if "cerql" in metrics else 0


def progress_line(p) -> str:
    """One micro-batch of a cerql streaming query, from its progress."""
    late = late_rows(p)
    matches = p.sink.numOutputRows if p.sink is not None else -1
    watermark = (p.eventTime or {}).get("watermark", "-")
    return (f"micro-batch {p.batchId:>3}: {p.numInputRows:>6,} rows in, {max(matches, 0):>5,} matches out, "
            f"{late} late rows, watermark {watermark}")


def run_stream_demo(spark, out: Callable[[str], None] = print, n_rows: int = 20_000, show: int = 3) -> dict:
    """Run the streaming demo (see module docstring) on ``spark``; return its summary: matches,
    micro-batches, late rows, and whether the matches are the batch query's."""
    text = (sql_dir() / QUERY_FILE).read_text(encoding="utf-8")
    old = spark.conf.get(STATE_STORE_CONF, None)
    spark.conf.set(STATE_STORE_CONF, ROCKSDB)
    work = tempfile.mkdtemp(prefix="cerql-stream-demo-")
    folder = os.path.join(work, "trades")
    os.makedirs(folder)
    parts, on_time = _files(n_rows)
    try:
        out(f"Streaming demo: {QUERY_FILE} over {len(on_time):,} trades arriving as {FILES} files, "
            f"one every {INTERVAL:.0f} s (watermark: {LATENESS} behind the latest trade)")
        _write(parts[0], folder, "part000")
        schema = spark.read.parquet(folder).schema
        stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(folder)
                  .withWatermark("ts", LATENESS))
        matches = cerql.cer_sql(spark, text, stock=stream)
        query = (matches.writeStream.format("memory").queryName(SINK).outputMode("append")
                 .option("checkpointLocation", os.path.join(work, "checkpoint"))
                 .trigger(processingTime="1 second").start())
        def arrive() -> None:
            for k, part in enumerate(parts[1:], start=1):
                time.sleep(INTERVAL)
                _write(part, folder, f"part{k:03d}")

        writer = threading.Thread(target=arrive, name="cerql-stream-demo-files", daemon=True)
        writer.start()
        seen = 0
        while writer.is_alive() or seen < len(query.recentProgress):
            for p in query.recentProgress[seen:]:
                if p.numInputRows or (p.sink is not None and p.sink.numOutputRows > 0):
                    out(progress_line(p))
            seen = len(query.recentProgress)
            time.sleep(0.2)
        query.processAllAvailable()
        for p in query.recentProgress[seen:]:
            out(progress_line(p))
        query.stop()
        progress = query.recentProgress
        got = spark.table(SINK)
        count = got.count()
        late = sum(late_rows(p) for p in progress)
        batch = cerql.cer_sql(spark, text, stock=spark.createDataFrame(on_time))
        columns = [c for c in batch.columns if c != "match_id"]
        same = sorted(map(repr, got.select(*columns).collect())) == sorted(map(repr, batch.select(*columns).collect()))
        out(f"{count:,} matches in {len(progress)} micro-batches, {late} late rows left out; "
            f"the batch query on the on-time trades gives {'the same' if same else 'OTHER'} matches")
        for row in got.orderBy("match_end").limit(show).collect():
            out(f"  {row['name']}: {row['match_start']} -> {row['match_end']}, "
                f"{len(row['b'])} buys after a sale of {row['s']['volume']}")
        return {"matches": count, "micro_batches": len(progress), "late_rows": late, "same_as_batch": same}
    finally:
        if old is None:
            spark.conf.unset(STATE_STORE_CONF)
        else:
            spark.conf.set(STATE_STORE_CONF, old)
        shutil.rmtree(work, ignore_errors=True)
