"""CEQL over Structured Streaming (spark/streaming/): a query over a file source, its rows cut
into micro-batches, gives the batch query's results on the same rows; so does a query stopped
and restarted from its checkpoint; late rows are counted, not matched; what a stream cannot
run is a CeqlError before Spark runs anything.

Rows are written as Parquet files, one per micro-batch (``maxFilesPerTrigger=1``), then rows
a day ahead in event time, one file of them after another: the first moves the watermark past
every row, the second makes a micro-batch in which the timers of that watermark fire. They
are of the types the queries read, since Spark moves the watermark only with the rows the
query reads (it pushes cerql's row filter below the watermark); results that end a day ahead
are left out of every comparison. Results are compared without ``match_id``, which a stream
derives from a hash of the row where a table reads its input order (docs/streaming.md); ties
in event time are broken by ``seq``.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import cerql
from cerql.spark.streaming import ROCKSDB, STATE_STORE_CONF
from tests.generators import cases, derandomized, query_text
from tests.spark.compare import canonical_rows, spark_records

pytestmark = pytest.mark.spark
BASE = pd.Timestamp("2026-01-01", tz="UTC")


@pytest.fixture(scope="module")
def rocksdb(spark):
    old = spark.conf.get(STATE_STORE_CONF, None)
    spark.conf.set(STATE_STORE_CONF, ROCKSDB)
    yield spark
    if old is None:
        spark.conf.unset(STATE_STORE_CONF)
    else:
        spark.conf.set(STATE_STORE_CONF, old)


def trades(n: int, seed: int = 1, step: float = 0.5) -> pd.DataFrame:
    """Trades of three names, ``step`` seconds apart with some ties, ``seq`` unique."""
    rng = np.random.default_rng(seed)
    seconds = np.cumsum(rng.choice([0.0, step, step, 2 * step], n))
    return pd.DataFrame({"name": rng.choice(["A", "B", "C"], n), "type": rng.choice(["BUY", "SELL"], n),
                         "price": rng.integers(1, 200, n).astype(float),
                         "ts": BASE + pd.to_timedelta(seconds, unit="s"), "seq": np.arange(n)})


def write(frame: pd.DataFrame, folder, name: str) -> None:
    os.makedirs(folder, exist_ok=True)
    frame.to_parquet(os.path.join(folder, f"{name}.parquet"), coerce_timestamps="us", index=False)


def write_parts(frame: pd.DataFrame, folder, parts: int, first: int = 0) -> None:
    for k, rows in enumerate(np.array_split(np.arange(len(frame)), parts)):
        write(frame.iloc[rows], folder, f"part{first + k:03d}")


DAY = (BASE + pd.Timedelta(days=1)).tz_convert(None).to_pydatetime()  # results end before


def flush(folder, like: pd.DataFrame | None = None, types=("BUY", "SELL")) -> None:
    """Rows a day ahead (see module docstring), one of each type in ``types``, in the columns
    of ``like`` (its first row, retyped) or of ``trades``, in two files one day apart."""
    for k in range(2):
        row = trades(1).iloc[:1] if like is None else like.iloc[:1]
        rows = pd.concat([row.assign(type=t, ts=BASE + pd.Timedelta(days=1 + k), seq=-1 - k) for t in types])
        write(rows, folder, f"zz_flush{k}")


def run_stream(spark, query: str, source, checkpoint, out, watermark: str | None = "2 seconds"):
    """Run ``query`` over the files of ``source`` until none is left (availableNow), writing
    its results to Parquet under ``out``; the query's progress per micro-batch."""
    frame = spark.readStream.schema(spark.read.parquet(str(source)).schema).option("maxFilesPerTrigger", 1)
    frame = frame.parquet(str(source))
    if watermark is not None:
        frame = frame.withWatermark("ts", watermark)
    results = cerql.cer_sql(spark, query, s=frame)
    assert results.isStreaming
    q = (results.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
         .outputMode("append").trigger(availableNow=True).start())
    q.awaitTermination()
    return q.recentProgress


def stream_rows(spark, out) -> list[dict]:
    """The results a stream wrote, but those ending a day ahead (``flush``)."""
    if not os.path.exists(out):
        return []
    return [r for r in spark_records(spark.read.parquet(str(out))) if r["match_end"] < DAY]


def state_rows(spark, checkpoint) -> list:
    """The Arrow tables of rows the state holds at the last commit (waiting for the watermark,
    or kept for later results), read with Spark's state data source."""
    from cerql.spark.ipc import from_ipc

    tables = []
    for name, column in (("pending", "list_element"), ("chunks", "user_map_value")):
        state = spark.read.format("statestore").option("path", str(checkpoint)).option("stateVarName", name).load()
        tables += [from_ipc(r[column]["rows"]) for r in state.collect()]
    return tables


def batch_rows(spark, query: str, source) -> list[dict]:
    """The batch query's results on the same files, but those ending a day ahead (``flush``)."""
    rows = spark_records(cerql.cer_sql(spark, query, s=spark.read.parquet(str(source))))
    return [r for r in rows if r["match_end"] < DAY]


QUERIES = {
    "kleene": "SELECT * FROM s WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[price > 100] AND c[price < 50] "
              "PARTITION BY [name] ORDER BY ts, seq WITHIN 5 SECONDS",
    "next_consume": "SELECT NEXT a, c FROM s WHERE SELL AS a ; BUY AS b ; SELL AS c FILTER c.price > a.price "
                    "PARTITION BY [name] ORDER BY ts, seq WITHIN 4 SECONDS CONSUME BY PARTITION",
    "events_unless": "SELECT * FROM s WHERE BUY AS a ; ((SELL AS b ; SELL AS c) UNLESS (BUY FILTER BUY[price > 150])) "
                     "ORDER BY ts, seq WITHIN 6 EVENTS",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_stream_gives_the_batch_results(rocksdb, tmp_path, name):
    spark, query = rocksdb, QUERIES[name]
    write_parts(trades(1200), tmp_path / "in", 4)
    flush(tmp_path / "in")
    progress = run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    assert len(want) > 20
    assert canonical_rows(got) == canonical_rows(want)
    assert len({r["match_id"] for r in got}) == len(got)
    assert len(progress) >= 6 and all(p.observedMetrics["cerql"]["late_rows"] == 0 for p in progress)
    if name == "kleene":  # the state holds the window's rows per key, not the stream's
        held = state_rows(spark, tmp_path / "ck")
        assert 0 < sum(t.num_rows for t in held) <= 30
        for t in held:
            seconds = t.column("ts").cast("int64").to_numpy() / 1e6
            assert seconds.max() - seconds.min() <= 5


def test_spark_cer_sql_reads_a_streaming_temp_view(rocksdb, tmp_path):
    """The issue's first surface: a stream registered as a view, queried by name from
    ``spark.cer_sql`` (as a notebook's SQL would), gives a stream of the batch results."""
    spark, query = rocksdb, QUERIES["kleene"].replace("FROM s ", "FROM live_trades ")
    write_parts(trades(600, seed=5), tmp_path / "in", 3)
    flush(tmp_path / "in")
    frame = spark.readStream.schema(spark.read.parquet(str(tmp_path / "in")).schema).option("maxFilesPerTrigger", 1)
    frame.parquet(str(tmp_path / "in")).withWatermark("ts", "2 seconds").createOrReplaceTempView("live_trades")
    try:
        results = spark.cer_sql(query)
        assert results.isStreaming
        q = (results.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        q.awaitTermination()
    finally:
        spark.catalog.dropTempView("live_trades")
    want = batch_rows(spark, QUERIES["kleene"], tmp_path / "in")
    assert len(want) > 5
    assert canonical_rows(stream_rows(spark, tmp_path / "out")) == canonical_rows(want)


def test_stream_restarted_from_its_checkpoint_loses_and_repeats_nothing(rocksdb, tmp_path):
    spark, query = rocksdb, QUERIES["kleene"]
    data = trades(1200, seed=2)
    half = len(data) // 2
    write_parts(data.iloc[:half], tmp_path / "in", 2)
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    first = stream_rows(spark, tmp_path / "out")
    write_parts(data.iloc[half:], tmp_path / "in", 2, first=2)  # the rest arrives after the restart
    flush(tmp_path / "in")
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    assert 0 < len(first) < len(want)
    assert canonical_rows(got) == canonical_rows(want)
    assert len({r["match_id"] for r in got}) == len(got)


def test_a_long_window_stores_chunks_and_a_restart_reads_them_back(rocksdb, tmp_path):
    """Under a time window without CONSUME BY a micro-batch stores only the rows it added, as a
    chunk of its own: after three micro-batches within a two-minute window a bucket holds
    several. The restarted query reads them back (dropping the rows of chunks the window has
    partly left) and the union of both runs' results is the batch result."""
    spark = rocksdb
    query = ("SELECT * FROM s WHERE SELL AS a ; BUY AS b ; SELL AS c FILTER a[price > 180] AND b[price < 10] "
             "AND c[price < 50] PARTITION BY [name] ORDER BY ts, seq WITHIN 2 MINUTES")
    data = trades(1200, seed=5, step=0.25)  # about five minutes of event time
    write_parts(data.iloc[:600], tmp_path / "in", 3)
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    chunks = (spark.read.format("statestore").option("path", str(tmp_path / "ck"))
              .option("stateVarName", "chunks").load().collect())
    per_bucket = {}
    for r in chunks:
        per_bucket.setdefault(tuple(r["key"]), []).append(r["user_map_key"][0])
    assert per_bucket and max(len(ids) for ids in per_bucket.values()) >= 2
    write_parts(data.iloc[600:], tmp_path / "in", 3, first=3)
    flush(tmp_path / "in")
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    assert len(want) > 10 and canonical_rows(got) == canonical_rows(want)


def test_late_rows_are_counted_and_left_out(rocksdb, tmp_path):
    spark, query = rocksdb, QUERIES["kleene"]
    data = trades(900, seed=3)
    write_parts(data.iloc[:600], tmp_path / "in", 2)
    # a SELL, BUY, SELL run that would match, 2 minutes behind the rows before it
    late = pd.DataFrame({"name": ["A"] * 3, "type": ["SELL", "BUY", "SELL"], "price": [150.0, 10.0, 20.0],
                         "ts": [BASE + pd.Timedelta(seconds=s) for s in (1.1, 1.2, 1.3)], "seq": [9001, 9002, 9003]})
    write(pd.concat([late, data.iloc[600:]]), tmp_path / "in", "part002")
    flush(tmp_path / "in")
    spark.conf.set("cerql.streaming.lateRowsPath", str(tmp_path / "late"))
    try:
        progress = run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    finally:
        spark.conf.unset("cerql.streaming.lateRowsPath")
    assert sum(p.observedMetrics["cerql"]["late_rows"] for p in progress) == 3
    written = pd.read_parquet(tmp_path / "late").sort_values("seq")  # the side output: the rows themselves
    assert written["seq"].tolist() == [9001, 9002, 9003] and written["type"].tolist() == ["SELL", "BUY", "SELL"]
    on_time = tmp_path / "on_time"
    write_parts(data, on_time, 1)
    assert canonical_rows(stream_rows(spark, tmp_path / "out")) == canonical_rows(batch_rows(spark, query, on_time))


def test_watermark_from_the_conf_when_the_source_has_none(rocksdb, tmp_path):
    spark, query = rocksdb, QUERIES["kleene"]
    write_parts(trades(600, seed=4), tmp_path / "in", 2)
    flush(tmp_path / "in")
    spark.conf.set("cerql.streaming.allowedLateness", "2 seconds")
    try:
        run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out", watermark=None)
    finally:
        spark.conf.unset("cerql.streaming.allowedLateness")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    assert len(want) > 0 and canonical_rows(got) == canonical_rows(want)


# ---------------------------------------------------------------------------- errors
def _stream(spark, tmp_path, watermark: bool = True):
    write_parts(trades(20), tmp_path / "in", 1)
    frame = spark.readStream.schema(spark.read.parquet(str(tmp_path / "in")).schema).parquet(str(tmp_path / "in"))
    return frame.withWatermark("ts", "2 seconds") if watermark else frame


@pytest.mark.parametrize("query, error_class", [
    ("SELECT * FROM s WHERE SELL ; BUY AS b ORDER BY ts", "STREAM_NEEDS_WITHIN"),
    ("SELECT * FROM s WHERE SELL ; BUY AS b ORDER BY ts WITHIN 5 SECONDS LIMIT 3", "LIMIT_ON_STREAM"),
    ("SELECT * FROM s WHERE SELL ; BUY AS b ORDER BY seq WITHIN 5 EVENTS", "STREAM_ORDER_NOT_TIME"),
])
def test_what_a_stream_cannot_run_is_refused_before_it_runs(rocksdb, tmp_path, query, error_class):
    with pytest.raises(cerql.CeqlError) as err:
        cerql.cer_sql(rocksdb, query, s=_stream(rocksdb, tmp_path))
    assert err.value.error_class == error_class and err.value.hint


def test_a_stream_needs_a_watermark_rocksdb_and_streams_only(spark, rocksdb, tmp_path):
    query = "SELECT * FROM s WHERE SELL ; BUY AS b ORDER BY ts WITHIN 5 SECONDS"
    with pytest.raises(cerql.CeqlError) as err:
        cerql.cer_sql(spark, query, s=_stream(spark, tmp_path, watermark=False))
    assert err.value.error_class == "STREAM_NEEDS_WATERMARK" and "cerql.streaming.allowedLateness" in err.value.hint
    with pytest.raises(cerql.CeqlError) as err:
        cerql.cer_sql(spark, "SELECT * FROM s, t WHERE SELL ; BUY AS b ORDER BY ts WITHIN 5 SECONDS",
                      s=_stream(spark, tmp_path), t=spark.read.parquet(str(tmp_path / "in")))
    assert err.value.error_class == "STREAM_WITH_STATIC" and err.value.column == 18
    spark.conf.unset(STATE_STORE_CONF)
    try:
        with pytest.raises(cerql.CeqlError) as err:
            cerql.cer_sql(spark, query, s=_stream(spark, tmp_path))
    finally:
        spark.conf.set(STATE_STORE_CONF, ROCKSDB)
    assert err.value.error_class == "STREAM_NEEDS_ROCKSDB" and STATE_STORE_CONF in err.value.hint


KILLED_RUN = """
import sys, time
from pyspark.sql import SparkSession
import cerql
source, checkpoint, out, query = sys.argv[1:5]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").config("spark.sql.session.timeZone", "UTC")
         .config("{conf}", "{rocksdb}").getOrCreate())
frame = spark.readStream.schema(spark.read.parquet(source).schema).option("maxFilesPerTrigger", 1).parquet(source)
results = cerql.cer_sql(spark, query, s=frame.withWatermark("ts", "2 seconds"))
q = (results.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
     .trigger(processingTime="1 second").start())
while True:  # the parent kills this process once two micro-batches are committed
    progress = q.lastProgress
    print(progress["batchId"] if progress else -1, flush=True)
    time.sleep(0.5)
""".format(conf=STATE_STORE_CONF, rocksdb=ROCKSDB)


def test_stream_killed_in_the_middle_resumes_from_its_checkpoint(rocksdb, tmp_path):
    """The driver process is killed (SIGKILL) while the query runs; a new one resumes from the
    checkpoint, and the file sink's output holds every result once."""
    import signal
    import subprocess
    import sys
    import time

    spark, query = rocksdb, QUERIES["kleene"]
    write_parts(trades(1200, seed=5), tmp_path / "in", 6)
    flush(tmp_path / "in")
    args = [sys.executable, "-c", KILLED_RUN, str(tmp_path / "in"), str(tmp_path / "ck"), str(tmp_path / "out"), query]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                             env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    deadline = time.time() + 240
    try:
        for line in child.stdout:
            if int(line.strip() or -1) >= 2 or time.time() > deadline:
                break
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    committed = [name for name in os.listdir(tmp_path / "ck" / "commits") if name.isdigit()]
    assert 2 <= len(committed) < 8  # killed in the middle: some of the 8 micro-batches done, not all
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    assert len(want) > 20
    assert canonical_rows(got) == canonical_rows(want)


@derandomized(6)
@given(cases(strategies=["ALL", "NEXT", "LAST", "MAX", "STRICT"], max_size=40), st.integers(2, 4),
       st.randoms(use_true_random=False))
def test_random_query_over_a_stream_gives_the_batch_results(rocksdb, tmp_path_factory, case, parts, rng):
    """The engine-vs-reference generator's queries (those with a window a stream takes: seconds
    or events), their streams cut into ``parts`` micro-batches, each file's rows shuffled, and
    some rows moved to the next file when that keeps them within the lateness bound."""
    (node, strategy, projection, window, partitioned, consume), df = case
    assume(window[0] in ("time", "events"))
    query = (node, strategy, projection, window, partitioned, consume)
    text = query_text(query).replace("ORDER BY ts", "ORDER BY ts, seq")
    assume(len(df) > 0)
    frame = df.assign(ts=BASE + pd.to_timedelta(df["ts"], unit="s"), seq=np.arange(len(df)))
    try:  # examples with results only: the local engine tells, at no Spark cost
        assume(len(cerql.run(text, {"s": frame})) > 0)
    except cerql.CeqlError:
        assume(False)
    folder = tmp_path_factory.mktemp("random")
    cuts = [0] + sorted(rng.sample(range(1, len(frame)), parts - 1)) + [len(frame)] if len(frame) > parts else [0, len(frame)]
    files = [list(range(a, b)) for a, b in zip(cuts, cuts[1:])]
    for k in range(len(files) - 1):  # a row 1 s or less behind the next file's rows joins it: not late
        if files[k] and rng.random() < 0.5:
            moved = files[k].pop()
            if files[k + 1] and frame["ts"].iloc[files[k + 1]].min() - frame["ts"].iloc[moved] <= pd.Timedelta(seconds=1):
                files[k + 1].insert(0, moved)
            else:
                files[k].append(moved)
    for k, rows in enumerate(r for r in files if r):
        rng.shuffle(rows)
        write(frame.iloc[rows], folder / "in", f"part{k:03d}")
    flush(folder / "in", like=frame, types=("A", "B", "C", "D"))
    try:
        run_stream(rocksdb, text, folder / "in", folder / "ck", folder / "out")
    except cerql.CeqlError as err:  # a query the stream refuses, the batch refuses too
        with pytest.raises(cerql.CeqlError) as batch_err:
            batch_rows(rocksdb, text, folder / "in")
        assert batch_err.value.error_class == err.error_class
        return
    got, want = stream_rows(rocksdb, folder / "out"), batch_rows(rocksdb, text, folder / "in")
    assert canonical_rows(got) == canonical_rows(want), text


def test_ready_rows_are_sorted_as_spark_sorts(spark):
    """The processor sorts a key's ready rows itself (spark/streaming/processor.py spark_order): NULL
    first, NaN after every number, as Spark's sort of a batch query."""
    import pyarrow as pa

    from cerql.spark.streaming.processor import spark_order

    rows = pa.table({"x": [2.0, None, float("nan"), 1.0, -0.0, None, float("nan"), 0.5],
                     "y": ["b", "a", None, "c", "a", None, "b", "a"], "k": list(range(8))})
    frame = spark.createDataFrame(rows.to_pylist(), "x double, y string, k long")  # pandas would merge NULL and NaN
    want = [r["k"] for r in frame.orderBy("x", "y", "k").collect()]
    assert spark_order(rows, ["x", "y", "k"]).to_pylist() == want


def test_several_streams_are_one_stream_in_event_time(rocksdb, tmp_path):
    """``FROM sells, buys`` over two streams: their union, in event time, as in batch."""
    spark = rocksdb
    data = trades(800, seed=6).drop(columns="type")
    kinds = np.random.default_rng(6).choice(["sells", "buys"], len(data))
    query = ("SELECT * FROM sells, buys WHERE sells AS s ; buys AS b ; sells AS t FILTER s[price > 150] "
             "AND t[price < 50] PARTITION BY [name] ORDER BY ts, seq WITHIN 4 SECONDS")
    frames, tables = {}, {}
    for kind in ("sells", "buys"):
        part = data[kinds == kind]
        write_parts(part, tmp_path / kind, 3)
        write(part.iloc[:1].assign(ts=BASE + pd.Timedelta(days=1), seq=-1), tmp_path / kind, "zz_flush0")
        write(part.iloc[:1].assign(ts=BASE + pd.Timedelta(days=2), seq=-2), tmp_path / kind, "zz_flush1")
        schema = spark.read.parquet(str(tmp_path / kind)).schema
        frames[kind] = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / kind))
                        .withWatermark("ts", "2 seconds"))
        tables[kind] = spark.read.parquet(str(tmp_path / kind))
    q = (cerql.cer_sql(spark, query, **frames).writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination()
    want = [r for r in spark_records(cerql.cer_sql(spark, query, **tables)) if r["match_end"] < DAY]
    assert len(want) > 5
    assert canonical_rows(stream_rows(spark, tmp_path / "out")) == canonical_rows(want)


# ---------------------------------------------------------------------------- state buckets
def test_bucket_values_are_spark_hash_partitions(spark):
    """``murmur3_int`` is Spark's ``hash()`` of an INT, so the bucket values land one per
    partition when there are as many state partitions as buckets."""
    from cerql.spark.streaming.buckets import bucket_values, murmur3_int

    rows = spark.sql("SELECT CAST(id AS INT) AS v, hash(CAST(id AS INT)) AS h FROM range(-1000, 1000)").collect()
    assert [murmur3_int(r.v) for r in rows] == [r.h for r in rows]
    for n in (1, 3, 4):
        values = bucket_values(n)
        frame = spark.createDataFrame([(v,) for v in values], "b int").repartition(n, "b")
        held = frame.rdd.glom().map(len).collect()
        assert len(set(values)) == n and held == [1] * n


def test_many_keys_and_float_keys_share_buckets_as_in_batch(rocksdb, tmp_path):
    """Keys hashed into fewer buckets than keys (3 buckets, 4 shuffle partitions): each key is
    its own substream within its bucket. Floating keys group as Spark groups them: -0.0 with
    0.0, every NaN as one key."""
    spark = rocksdb
    data = trades(1500, seed=7)
    keys = np.array([0.0, -0.0, float("nan"), 1.5, 2.5, -7.0, 1e300])
    data["k"] = np.random.default_rng(7).choice(keys, len(data))
    query = ("SELECT * FROM s WHERE SELL AS a ; BUY+ AS b ; SELL AS c FILTER a[price > 120] AND c[price < 80] "
             "PARTITION BY [k] ORDER BY ts, seq WITHIN 10 SECONDS")
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(tmp_path / "in")
    for n, rows in enumerate(np.array_split(np.arange(len(data)), 4)):  # NaN stays NaN (pandas writes NULL)
        part = data.iloc[rows]
        table = pa.Table.from_pandas(part.drop(columns="k"), preserve_index=False)
        table = table.append_column("k", pa.array(part["k"].to_numpy(), from_pandas=False))
        pq.write_table(table, tmp_path / "in" / f"part{n:03d}.parquet", coerce_timestamps="us")
    flush(tmp_path / "in", like=data)
    spark.conf.set("cerql.streaming.stateBuckets", "3")
    try:
        run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    finally:
        spark.conf.unset("cerql.streaming.stateBuckets")
    got, want = stream_rows(spark, tmp_path / "out"), batch_rows(spark, query, tmp_path / "in")
    named = {r["k"] for r in want if r["k"] == r["k"]}
    assert len(named) >= 4 and 0.0 in named and any(r["k"] != r["k"] for r in want)
    assert canonical_rows(got) == canonical_rows(want)
    assert 0 < len(state_rows(spark, tmp_path / "ck")) <= 6  # per bucket: its pending and kept rows


def test_a_restart_with_another_bucket_count_is_refused(rocksdb, tmp_path):
    from pyspark.errors import StreamingQueryException

    spark, query = rocksdb, QUERIES["kleene"]
    data = trades(600, seed=8)
    write_parts(data.iloc[:300], tmp_path / "in", 1)
    run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    write_parts(data.iloc[300:], tmp_path / "in", 1, first=1)
    spark.conf.set("cerql.streaming.stateBuckets", "5")
    try:
        with pytest.raises(StreamingQueryException, match="stateBuckets=4, and the query now runs with 5"):
            run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
    finally:
        spark.conf.unset("cerql.streaming.stateBuckets")


@pytest.mark.parametrize("conf, error_class", [("cerql.streaming.stateBuckets", "STREAM_BAD_BUCKETS"),
                                               ("cerql.streaming.maxStateRows", "STREAM_BAD_STATE_LIMIT")])
def test_a_count_conf_that_is_not_a_positive_number_is_refused(rocksdb, tmp_path, conf, error_class):
    query = "SELECT * FROM s WHERE SELL ; BUY AS b PARTITION BY [name] ORDER BY ts WITHIN 5 SECONDS"
    for value in ("0", "many"):
        rocksdb.conf.set(conf, value)
        try:
            with pytest.raises(cerql.CeqlError) as err:
                cerql.cer_sql(rocksdb, query, s=_stream(rocksdb, tmp_path))
        finally:
            rocksdb.conf.unset(conf)
        assert err.value.error_class == error_class and conf in str(err.value)


def test_a_bucket_that_outgrows_the_state_limit_stops_the_query_with_its_conf(rocksdb, tmp_path):
    """Under ``n EVENTS`` each key keeps its last n rows however old: a key per row (``seq``)
    makes the state grow with the stream, and the limit stops it with a CeqlError naming its
    conf, not a worker out of memory. A generous limit lets the same stream through."""
    from pyspark.errors import StreamingQueryException

    spark, data = rocksdb, trades(400, seed=3)
    query = "SELECT * FROM s WHERE SELL AS a ; BUY AS b PARTITION BY [seq] ORDER BY ts WITHIN 3 EVENTS"
    write_parts(data, tmp_path / "in", 2)
    flush(tmp_path / "in", like=data)
    spark.conf.set("cerql.streaming.maxStateRows", "40")
    try:
        with pytest.raises(StreamingQueryException, match=r"STREAM_STATE_TOO_LARGE.*cerql\.streaming\.maxStateRows=40"):
            run_stream(spark, query, tmp_path / "in", tmp_path / "ck", tmp_path / "out")
        spark.conf.set("cerql.streaming.maxStateRows", "1000")
        run_stream(spark, query, tmp_path / "in", tmp_path / "ck2", tmp_path / "out2")
    finally:
        spark.conf.unset("cerql.streaming.maxStateRows")
    assert sum(t.num_rows for t in state_rows(spark, tmp_path / "ck2")) >= 400  # the growth the limit caught


class _Timers:
    """The timer calls of a stateful processor's handle, on a set."""

    def __init__(self, *expiries):
        self.expiries = set(expiries)
        self.registered = []

    def listTimers(self):
        return iter(sorted(self.expiries))

    def deleteTimer(self, expiry):
        self.expiries.remove(expiry)

    def registerTimer(self, expiry):
        self.registered.append(expiry)
        self.expiries.add(expiry)


def test_a_bucket_keeps_the_one_timer_it_needs():
    """A call that processed a bucket's rows leaves it one timer and deletes those earlier calls
    set (each would fire for rows already processed, and load and store the whole state once
    more); in a timer's call, the timers the watermark passed are left to Spark, which fires
    and deletes them. A timer already set is not set again."""
    from cerql.spark.streaming.processor import MatchProcessor

    processor = MatchProcessor.__new__(MatchProcessor)
    processor.handle = _Timers(1_000, 5_000, 9_000)
    processor._set_timer(7_000_000, None)  # µs: the timer is at 7 000 ms + 1
    assert processor.handle.expiries == {7_001}
    processor.handle = _Timers(1_000, 5_000, 9_000)
    processor._set_timer(7_000_000, 5_000)
    assert processor.handle.expiries == {1_000, 5_000, 7_001}
    processor.handle = _Timers(7_001, 9_000)
    processor._set_timer(7_000_000, None)
    assert processor.handle.expiries == {7_001} and processor.handle.registered == []
    processor._set_timer(None, None)
    assert processor.handle.expiries == set()


def test_a_bucket_emits_its_results_in_chunks():
    """One bucket's results of a micro-batch leave the processor as IPC values of at most a
    chunk's rows and bytes, one value a frame (Spark makes each frame one Arrow batch in the
    JVM's direct memory: a frame of all of them took as much as the results, and a micro-batch
    of 40M trades ran the JVM out of it); the late count comes once."""
    import pyarrow as pa

    from cerql.spark.ipc import from_ipc
    from cerql.spark.streaming.processor import LATE_COLUMN, RESULT_COLUMN, _emitted

    results = pa.table({"x": list(range(10))})
    frames = list(_emitted(results, 2, rows=4))
    assert [len(f) for f in frames] == [1, 1, 1] and [f[LATE_COLUMN][0] for f in frames] == [2, 0, 0]
    chunks = [from_ipc(f[RESULT_COLUMN][0]).column("x").to_pylist() for f in frames]
    assert chunks == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    wide = pa.table({"x": pa.array(range(1000), pa.int64())})  # 8 000 bytes: 100 rows in 800
    sizes = [from_ipc(f[RESULT_COLUMN][0]).num_rows for f in _emitted(wide, 0, max_bytes=800)]
    assert sizes == [100] * 10
    assert list(_emitted(None, 0)) == [] and list(_emitted(results.slice(0, 0), 0)) == []
    late_only = list(_emitted(None, 3))
    assert list(late_only[0][RESULT_COLUMN]) == [None] and list(late_only[0][LATE_COLUMN]) == [3]


# ---------------------------------------------------------------------------- rows processed early
def test_matches_come_out_in_the_micro_batch_their_rows_arrive_in(rocksdb, tmp_path):
    """With one watermark, the rows of a bucket before its latest row less the lateness are
    final (the next watermark passes them): their matches are written in that micro-batch, not
    the next. The match of the first file ends at 2 s, and the file goes on to 60 s."""
    spark, query = rocksdb, QUERIES["kleene"]
    rows = pd.DataFrame({"name": ["A"] * 5, "type": ["SELL", "BUY", "SELL", "BUY", "BUY"],
                         "price": [150.0, 10.0, 20.0, 60.0, 70.0], "seq": np.arange(5),
                         "ts": [BASE + pd.Timedelta(seconds=s) for s in (0, 1, 2, 30, 60)]})
    write(rows, tmp_path / "in", "part000")
    write(rows.assign(ts=rows["ts"] + pd.Timedelta(minutes=5), seq=rows["seq"] + 5), tmp_path / "in", "part001")
    frame = (spark.readStream.schema(spark.read.parquet(str(tmp_path / "in")).schema).option("maxFilesPerTrigger", 1)
             .parquet(str(tmp_path / "in")).withWatermark("ts", "2 seconds"))
    written = {}
    q = (cerql.cer_sql(spark, query, s=frame).writeStream.option("checkpointLocation", str(tmp_path / "ck"))
         .foreachBatch(lambda df, batch: written.update({batch: sorted(r.match_end.second for r in df.collect())}))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert written[0] == [2] and written[1] == [2]


def test_a_row_behind_rows_processed_early_is_late_under_several_watermarks(rocksdb, tmp_path):
    """One source made of two streams with watermarks of their own: Spark's watermark is the
    lower one, so a bucket that processed rows early (as with one watermark) can then get rows
    behind them that Spark does not call late. They are counted late, never processed out of
    order."""
    spark, query = rocksdb, QUERIES["kleene"]
    ahead = trades(200, seed=9).assign(ts=lambda d: d["ts"] + pd.Timedelta(minutes=10))
    behind = trades(200, seed=10)
    write_parts(ahead, tmp_path / "ahead", 1)
    write_parts(behind, tmp_path / "behind", 2)
    schema = spark.read.parquet(str(tmp_path / "ahead")).schema

    def source(folder):
        return (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))
                .withWatermark("ts", "2 seconds"))

    frame = source(tmp_path / "ahead").unionByName(source(tmp_path / "behind"))
    q = (cerql.cer_sql(spark, query, s=frame).writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    second = behind.iloc[np.array_split(np.arange(len(behind)), 2)[1]]
    late = sum(p.observedMetrics["cerql"]["late_rows"] for p in q.recentProgress)
    read = (second["type"] == "BUY") | ((second["price"] > 100) | (second["price"] < 50))  # what the query reads
    assert late == int(read.sum()) > 0
