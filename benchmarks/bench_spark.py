"""End-to-end benchmark of ``cerql.cer_sql`` on Spark local[2] against the bare shuffle and sort.

Input: a generated stream of stock trades (``name`` one of 500 tickers, ``ts`` timestamp about
1 ms apart, ``type`` SELL/BUY, ``price``, ``volume``), written once as Parquet files of
``--chunk-rows`` rows under ``--data-dir`` and read back by every variant. Output: a table on
stdout and, with ``--json PATH``, every figure as JSON.

Every variant is forced with ``df.write.format("noop").mode("overwrite").save()`` and timed in
wall seconds, best of ``--repeat``. The rounds are interleaved (round r runs every variant once),
so a burst of load from other processes hits all of them, and each query is also given as a
ratio to its JVM-only baseline measured in the same round (docs/benchmarks.md, "Targets": at least 70 % of the
throughput of a bare repartition + sort of the same rows). For each run the CPU seconds of the
JVM and of the Python workers (``/proc``, the descendants of this process) are recorded too.

Parts, in order:

1. **throughput**: the baselines ``repartition(name).sortWithinPartitions(name, ts)`` and
   ``repartition(1).sortWithinPartitions(ts)``, a seed-001 sequence with PARTITION BY [name],
   the same pattern on one ordered partition, a Kleene query, queries that count positions (a
   Kleene query ``WITHIN 20 EVENTS``, a ``:`` chain, a STRICT sequence), a query where every row
   can bind, the baseline with an identity ``mapInArrow`` (the floor of any Python engine), the
   two JVM-only ways to number the rows of a substream (a ``row_number`` Window, and
   ``monotonically_increasing_id`` after the sort, as the position-counting queries do), and
   (unless ``--no-decompose``) the steps in between: the baseline with cerql's two extra sort
   keys, cerql's own stream up to its sort (``:prep``), cerql with a
   ``mapInArrow`` that reads its input and returns nothing (``:drain``), the query returning
   three columns instead of ``*`` (``:narrow``) and the query over only the rows that can bind a
   variable (``:prefiltered``, what pruning by the filters would save);
2. **python split**: one run of the PARTITION BY query with the task function wrapped, so each
   Spark task reports the seconds spent waiting for input batches, in ``MatchTask.process`` and
   handing result batches back;
3. **profile**: ``MatchTask.process`` run locally on the Arrow batches (``--batch-rows`` rows)
   that Spark feeds it, timed per stage and under cProfile;
4. **memory**: for each of ``--memory-rows`` sizes, a fresh Spark session (a child process of
   this script) runs a query without PARTITION BY and a small window over that many rows, while
   the resident memory of the Python workers is polled; their peak (``VmHWM``) is reported.

A script, not a test: no test imports it and nothing asserts a timing (STYLE.md 12).

    .venv/bin/python benchmarks/bench_spark.py --json /tmp/bench_spark.json
    .venv/bin/python benchmarks/bench_spark.py --quick
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

STOCKS = 500
VOLUMES = np.array([100, 200, 300, 500, 1000], np.int64)
MEAN_GAP_US = 1000  # the stream carries ~1000 trades/s, ~2/s per stock
T0_US = 1_709_285_400_000_000

# Filters are chosen so the outputs are moderate (0.5-0.7 % of the input rows, 6.5 % for the
# Kleene query, whose b has more events to choose among): a variable with
# price > 980 or price < 20 keeps 1 % of the trades, a window of 1 MINUTE holds ~120 trades of
# one stock, and 100 MILLISECONDS ~100 trades of the whole stream.
QUERIES = {
    "seq_part": (
        "SELECT * FROM stock WHERE SELL AS s ; BUY AS b ; SELL AS c "
        "FILTER s[price > 980] AND b[price < 20] AND c[price > 980] "
        "PARTITION BY [name] WITHIN 1 MINUTE"),
    "seq_one": (
        "SELECT * FROM stock WHERE SELL AS s ; BUY AS b ; SELL AS c "
        "FILTER s[price > 980] AND b[price < 20] AND c[price > 980] "
        "WITHIN 100 MILLISECONDS"),
    "kleene_part": (
        "SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b ; SELL AS c "
        "FILTER s[price > 980] AND b[price < 50] AND c[price > 980] "
        "PARTITION BY [name] WITHIN 1 MINUTE"),
    # Queries that count positions (n EVENTS, ':', STRICT): the plan numbers each row after its
    # sort on the JVM and ships only the rows that can fire a transition, with their numbers. Rows that reach Python: ~11 % (SELL above 980 or below 20, BUY of 1000 shares),
    # ~20 % and ~10 %; results ~0.3 %, ~0.02 % and ~0.01 % of the rows.
    "kleene_events": (
        "SELECT * FROM stock WHERE SELL AS a ; BUY+ AS b ; SELL AS c "
        "FILTER a[price > 980] AND b[volume > 500] AND c[price < 20] "
        "PARTITION BY [name] ORDER BY ts WITHIN 20 EVENTS"),
    "contig_part": (
        "SELECT * FROM stock WHERE SELL AS a : BUY AS b : SELL AS c "
        "FILTER a[price > 900] AND b[volume > 500] AND c[price < 100] "
        "PARTITION BY [name] WITHIN 1 MINUTE"),
    "strict_part": (
        "SELECT STRICT * FROM stock WHERE SELL AS s ; BUY AS b ; SELL AS c "
        "FILTER s[price > 900] AND b[price < 100] AND c[price > 900] "
        "PARTITION BY [name] WITHIN 1 MINUTE"),
    # The worst case for the Spark path: no FILTER, every row satisfies an atom, so no row is
    # pruned before the shuffle and every row crosses to Python (~2.5 results per row).
    "dense_part": (
        "SELECT s[price], b[price] FROM stock WHERE SELL AS s ; BUY AS b "
        "PARTITION BY [name] WITHIN 1 SECOND"),
}
# The groups of the targets in docs/benchmarks.md ("Targets": at least 0.7x the bare shuffle).
FILTERED = ("seq_part", "kleene_part", "seq_one")
POSITIONED = ("kleene_events", "contig_part", "strict_part")
# seq_part returning only the prices: cerql shuffles name, ts, price (and its own three
# columns) instead of every column.
NARROW = ("SELECT s[price], b[price], c[price] FROM stock WHERE SELL AS s ; BUY AS b ; SELL AS c "
          "FILTER s[price > 980] AND b[price < 20] AND c[price > 980] "
          "PARTITION BY [name] WITHIN 1 MINUTE")
# The rows that can bind a variable of seq_part and seq_one (satisfy an atom and that variable's
# filters): cer_sql over these rows gives the same number of results; the variants measure what
# pruning rows by their filters, not only by their atoms, before the shuffle would save.
PREFILTER = "(type = 'SELL' AND price > 980) OR (type = 'BUY' AND price < 20)"
# The memory part: no PARTITION BY (one ordered partition of every row) and a small window.
MEMORY_QUERY = (
    "SELECT * FROM stock WHERE SELL AS s ; BUY AS b ; SELL AS c "
    "FILTER s[price > 980] AND b[price < 20] AND c[price > 980] "
    "WITHIN 100 EVENTS")


# ---------------------------------------------------------------------------------------- data
def _chunk(k: int, rows: int, seed: int, t_start: int) -> tuple[pa.Table, int]:
    """Chunk k of the stream: trades in time order, ``type`` SELL/BUY (1/2 each), ``name`` one
    of STOCKS tickers (uniform), ``price`` uniform on [0, 1000), ``volume`` in round lots, ``ts``
    strictly increasing, gaps uniform on [1, 2 * MEAN_GAP_US) microseconds."""
    rng = np.random.default_rng([seed, k])
    names = pa.array([f"S{i:03d}" for i in range(STOCKS)])
    ts = t_start + np.cumsum(rng.integers(1, 2 * MEAN_GAP_US, rows))
    table = pa.table({
        "name": pc.take(names, pa.array(rng.integers(0, STOCKS, rows))),
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "type": pc.take(pa.array(["BUY", "SELL"]), pa.array((rng.random(rows) < 0.5).astype(np.int64))),
        "price": np.round(rng.random(rows) * 1000.0, 2),
        "volume": VOLUMES[rng.integers(0, len(VOLUMES), rows)],
    })
    return table, int(ts[-1])


def ensure_data(data_dir: Path, chunk_rows: int, chunks: int, seed: int) -> list[str]:
    """Paths of the first ``chunks`` Parquet files of the stream, generating missing ones (the
    stream is deterministic, so files written by an earlier run are reused)."""
    folder = data_dir / f"stock-{STOCKS}-seed{seed}-chunk{chunk_rows}"
    folder.mkdir(parents=True, exist_ok=True)
    paths, t_end = [], T0_US
    for k in range(chunks):
        path = folder / f"part-{k:05d}.parquet"
        meta = folder / f"part-{k:05d}.end"
        if not (path.exists() and meta.exists()):
            t0 = time.perf_counter()
            table, end = _chunk(k, chunk_rows, seed, t_end)
            pq.write_table(table, str(path) + ".tmp", row_group_size=1 << 20)
            os.replace(str(path) + ".tmp", path)
            meta.write_text(str(end))
            print(f"# wrote {path} ({chunk_rows:,} rows) in {time.perf_counter() - t0:.1f} s", flush=True)
        t_end = int(meta.read_text())
        paths.append(str(path))
    return paths


# ------------------------------------------------------------------------------ Spark session
def spark_session(driver_memory: str, shuffle_partitions: int):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]").appName("cerql-bench-spark")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        # keep the shuffle partitions as set, for the baselines and cerql alike (AQE would
        # otherwise merge them by size, and cerql shuffles three more columns than the baseline)
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


# ------------------------------------------------------------------------ processes in /proc
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry)] = (int(stat[stat.rindex(")") + 2:].split()[1]), cmd)
    return out


def spark_processes(root: int | None = None) -> dict[str, list[int]]:
    """The JVM and the Python daemon and workers started by this process (its descendants)."""
    root = os.getpid() if root is None else root
    table = _proc_table()
    children = defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    found = {"jvm": [], "python": []}
    stack = list(children[root])
    while stack:
        pid = stack.pop()
        cmd = table[pid][1]
        if "java" in cmd.split(" ")[0] or "org.apache.spark" in cmd:
            found["jvm"].append(pid)
        elif "pyspark" in cmd or "python" in cmd.split(" ")[0]:
            found["python"].append(pid)
        stack += children[pid]
    return found


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and of its reaped children."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLK_TCK


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class CpuMeter:
    """CPU seconds of the JVM and of the Python workers between ``start`` and ``stop``."""

    def start(self):
        procs = spark_processes()
        self.before = {pid: _cpu_seconds(pid) for group in procs.values() for pid in group}
        return self

    def stop(self) -> dict:
        procs = spark_processes()
        out = {}
        for group, pids in procs.items():
            out[group] = round(sum(_cpu_seconds(p) - self.before.get(p, 0.0) for p in pids), 2)
        return out


class MemoryPoller(threading.Thread):
    """Polls the resident memory of the Python workers (and the JVM) every ``interval`` s."""

    def __init__(self, interval: float = 0.05):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak_rss_kb: dict[int, int] = defaultdict(int)
        self.peak_sum_kb = 0
        self.peak_jvm_kb = 0
        self.samples = 0
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            procs = spark_processes()
            total = 0
            for pid in procs["python"]:
                rss = _status_kb(pid, "VmRSS")
                self.peak_rss_kb[pid] = max(self.peak_rss_kb[pid], rss)
                total += rss
            self.peak_sum_kb = max(self.peak_sum_kb, total)
            for pid in procs["jvm"]:
                self.peak_jvm_kb = max(self.peak_jvm_kb, _status_kb(pid, "VmRSS"))
            self.samples += 1
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join()


# ---------------------------------------------------------------------------- task functions
# These run on the Python workers; being defined in __main__, cloudpickle ships them by value.
def drain_matcher(task, names, results):
    """A mapInArrow function that reads every input batch and returns no rows."""
    def run(batches):
        for _ in batches:
            pass
        return
        yield  # noqa: unreachable - makes this a generator
    return run


def identity(batches):
    yield from batches


def timed_matcher(out_dir: str):
    """A replacement for ``cerql.spark.lower._matcher`` that runs MatchTask as lower's does
    (columns renamed by position on the way in and out) and writes, per Spark task, the seconds
    spent waiting for input, in ``process`` and handing result batches back, to a JSON file in
    ``out_dir``."""
    def make(task, names, results):
        def run(batches):
            import json as _json
            import os as _os
            import time as _time
            import uuid

            import pyarrow as _pa

            from cerql.exec.task import MatchTask

            matcher = MatchTask(task)
            wait = proc = proc_cpu = hand = 0.0
            rows_in = rows_out = nbatches = 0
            it = iter(batches)
            start = _time.perf_counter()
            while True:
                a = _time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                b = _time.perf_counter()
                c0 = _time.thread_time()
                out = matcher.process(_pa.RecordBatch.from_arrays(batch.columns, names=names))
                proc_cpu += _time.thread_time() - c0
                c = _time.perf_counter()
                wait += b - a
                proc += c - b
                rows_in += batch.num_rows
                nbatches += 1
                if out.num_rows:
                    rows_out += out.num_rows
                    for part in out.to_batches():
                        yield _pa.RecordBatch.from_arrays(part.columns, names=results)
                hand += _time.perf_counter() - c
            record = {"pid": _os.getpid(), "batches": nbatches, "rows_in": rows_in, "rows_out": rows_out,
                      "wall_s": _time.perf_counter() - start, "wait_input_s": wait, "process_s": proc,
                      "process_cpu_s": proc_cpu, "hand_back_s": hand}
            with open(_os.path.join(out_dir, f"{uuid.uuid4().hex}.json"), "w") as f:
                _json.dump(record, f)
        return run
    return make


@contextlib.contextmanager
def task_function(make):
    """Lower queries with ``make(task, names, results)`` as the mapInArrow function instead of cerql's."""
    from cerql.spark import lower as lower_module

    saved = lower_module._matcher
    lower_module._matcher = make
    try:
        yield
    finally:
        lower_module._matcher = saved


def cerql_stream(plan, frames):
    """cerql's input to mapInArrow: the steps of ``cerql.spark.lower.lower`` before it (sources
    with ordinals, condition bits, row pruning, used columns, positions when the query counts
    them, repartition and sort), as lower does them, its columns renamed to the names MatchTask
    reads (lower renames them on the worker)."""
    from pyspark.sql import functions as F

    from cerql.spark import lower as L

    stream = L.kept_rows(plan, L.with_rising_sums(plan, L.with_bits(plan, L.union_frames(plan, frames))))
    hidden = L.hidden_columns(plan)
    ties = ([L.SOURCE_COLUMN] if len(plan.sources) > 1 else []) + [L.ORDINAL_COLUMN]
    extra = [L.RISING_COLUMN] if L.RISING_COLUMN in stream.columns else []
    stream = stream.select(*[F.col(hidden[c]) for c in L.shuffled_columns(plan)],
                           *[F.col(c) for c in ties + [L.BITS_COLUMN] + extra])
    keys = [F.col(hidden[c]) for c in plan.substream_columns]
    order = [F.col(hidden[c]) for c in plan.substream_columns + plan.order_columns] + [F.col(c) for c in ties]
    if L.gap_masks(plan) is not None:
        stream = L.positioned_rows(plan, stream, keys, order)
        extra.append(L.POSITION_COLUMN)
    else:
        stream = stream.repartition(*keys) if keys else stream.repartition(1)
    return stream.sortWithinPartitions(*order).toDF(*L.shuffled_columns(plan), *ties, L.BITS_COLUMN, *extra)


def planned(spark, text: str, stock):
    from cerql.spark.session import plan_query

    _, plan, df = plan_query(spark, text, {"stock": stock})
    return plan, {s.key: stock for s in plan.sources}, df


# -------------------------------------------------------------------------------- throughput
def variants(decompose: bool):
    """(name, what, baseline name, builder spark, stock -> DataFrame) in run order."""
    import cerql
    from pyspark.sql import functions as F

    def base_part(spark, stock):
        return stock.repartition("name").sortWithinPartitions("name", "ts")

    def base_one(spark, stock):
        return stock.repartition(1).sortWithinPartitions("ts")

    def query(name):
        return lambda spark, stock: cerql.cer_sql(spark, QUERIES[name], stock=stock)

    def base_identity(spark, stock):
        df = base_part(spark, stock)
        return df.mapInArrow(identity, df.schema)

    def base_row_number(spark, stock):  # JVM only: a Window numbering each substream (cerql's first way)
        from pyspark.sql.window import Window

        return stock.withColumn("pos", F.row_number().over(Window.partitionBy("name").orderBy("ts")))

    def base_running_id(spark, stock):  # JVM only: a counter over each sorted partition, as cerql numbers rows
        return base_part(spark, stock).withColumn("pos", F.monotonically_increasing_id())

    out = [
        ("base_part", "repartition(name).sortWithinPartitions(name, ts)", None, base_part),
        ("seq_part", "cer_sql: " + QUERIES["seq_part"], "base_part", query("seq_part")),
        ("kleene_part", "cer_sql: " + QUERIES["kleene_part"], "base_part", query("kleene_part")),
        ("kleene_events", "cer_sql: " + QUERIES["kleene_events"], "base_part", query("kleene_events")),
        ("contig_part", "cer_sql: " + QUERIES["contig_part"], "base_part", query("contig_part")),
        ("strict_part", "cer_sql: " + QUERIES["strict_part"], "base_part", query("strict_part")),
        ("dense_part", "cer_sql: " + QUERIES["dense_part"], "base_part", query("dense_part")),
        ("base_part+identity", "base_part then an identity mapInArrow", "base_part", base_identity),
        ("base_part+row_number", "row_number() over (partition by name order by ts): the same shuffle and sort, "
         "then a Window", "base_part", base_row_number),
        ("base_part+running_id", "base_part then monotonically_increasing_id (consecutive within a sorted "
         "partition)", "base_part", base_running_id),
        ("base_one", "repartition(1).sortWithinPartitions(ts)", None, base_one),
        ("seq_one", "cer_sql: " + QUERIES["seq_one"], "base_one", query("seq_one")),
    ]
    if decompose:
        def prep(name):
            def build(spark, stock):
                plan, frames, _ = planned(spark, QUERIES[name], stock)
                return cerql_stream(plan, frames)
            return build

        def drain(name):
            def build(spark, stock):
                with task_function(drain_matcher):
                    return cerql.cer_sql(spark, QUERIES[name], stock=stock)
            return build

        def prefiltered(name):
            return lambda spark, stock: cerql.cer_sql(spark, QUERIES[name], stock=stock.filter(PREFILTER))

        def base_ord(spark, stock):  # the same rows with cerql's extra columns, JVM only
            return (stock.withColumn("src", F.lit(0)).withColumn("ord", F.monotonically_increasing_id())
                    .repartition("name").sortWithinPartitions("name", "ts", "src", "ord"))

        out += [
            ("base_part+ord", "base_part with a literal source and monotonically_increasing_id as sort keys",
             "base_part", base_ord),
            ("seq_part:prep", "seq_part up to cerql's sort (no mapInArrow)", "base_part", prep("seq_part")),
            ("seq_part:drain", "seq_part with a mapInArrow that only reads its input", "base_part",
             drain("seq_part")),
            ("seq_part:narrow", "cer_sql: " + NARROW, "base_part",
             lambda spark, stock: cerql.cer_sql(spark, NARROW, stock=stock)),
            ("seq_part:prefiltered", "seq_part over the rows that can bind a variable: " + PREFILTER,
             "base_part", prefiltered("seq_part")),
            ("seq_one:drain", "seq_one with a mapInArrow that only reads its input", "base_one", drain("seq_one")),
            ("seq_one:prefiltered", "seq_one over the rows that can bind a variable: " + PREFILTER,
             "base_one", prefiltered("seq_one")),
        ]
    return out


def run_throughput(spark, stock, rows: int, repeat: int, decompose: bool) -> list[dict]:
    import cerql

    plan = variants(decompose)
    records = {name: {"variant": name, "what": what, "baseline": base, "rows": rows, "runs_s": [],
                      "jvm_cpu_s": [], "python_cpu_s": []}
               for name, what, base, _ in plan}
    # Warm-up and result counts: every query once, counted (the workers start, import cerql and
    # load the numba cache; each query's first run is in count_run_s, not in the timed runs).
    counted = [(name, QUERIES[name], stock) for name in QUERIES]
    if decompose:
        counted.append(("seq_part:narrow", NARROW, stock))
        for name in ("seq_part", "seq_one"):
            counted.append((f"{name}:prefiltered", QUERIES[name], stock.filter(PREFILTER)))
    for name, text, frame in counted:
        t0 = time.perf_counter()
        records[name]["results"] = cerql.cer_sql(spark, text, stock=frame).count()
        records[name]["count_run_s"] = round(time.perf_counter() - t0, 2)
        print(f"# {name}: {records[name]['results']:,} results (count run {records[name]['count_run_s']} s)",
              flush=True)
    for r in range(repeat):
        for name, _, base, build in plan:
            meter = CpuMeter().start()
            t0 = time.perf_counter()
            noop(build(spark, stock))
            wall = time.perf_counter() - t0
            cpu = meter.stop()
            rec = records[name]
            rec["runs_s"].append(round(wall, 3))
            rec["jvm_cpu_s"].append(cpu["jvm"])
            rec["python_cpu_s"].append(cpu["python"])
            print(f"  round {r + 1}: {name:<21}{wall:8.2f} s   jvm cpu {cpu['jvm']:6.2f} s   "
                  f"python cpu {cpu['python']:6.2f} s", flush=True)
    out = list(records.values())
    for rec in out:
        best = min(rec["runs_s"])
        rec["best_s"] = best
        rec["events_per_s"] = round(rows / best)
        base = records.get(rec["baseline"]) if rec["baseline"] else None
        if base:
            rec["throughput_ratio"] = round(min(base["runs_s"]) / best, 3)
            per_round = [b / v for b, v in zip(base["runs_s"], rec["runs_s"])]
            rec["round_ratios"] = [round(x, 3) for x in per_round]
            rec["median_round_ratio"] = round(statistics.median(per_round), 3)
            cpu = [j + p for j, p in zip(rec["jvm_cpu_s"], rec["python_cpu_s"])]
            base_cpu = [j + p for j, p in zip(base["jvm_cpu_s"], base["python_cpu_s"])]
            rec["cpu_ratio"] = round(min(base_cpu) / min(cpu), 3) if min(cpu) > 0 else None
    return out


def python_split(spark, stock, query: str) -> dict:
    """One run with the task function timed inside the Python workers."""
    import cerql

    with tempfile.TemporaryDirectory(prefix="cerql-bench-split-") as out_dir:
        with task_function(timed_matcher(out_dir)):
            df = cerql.cer_sql(spark, query, stock=stock)
        t0 = time.perf_counter()
        noop(df)
        wall = time.perf_counter() - t0
        tasks = [json.loads(p.read_text()) for p in Path(out_dir).glob("*.json")]
    keys = ("rows_in", "rows_out", "batches", "wall_s", "wait_input_s", "process_s", "process_cpu_s", "hand_back_s")
    total = {k: round(sum(t[k] for t in tasks), 3) for k in keys}
    return {"query": query, "wall_s": round(wall, 3), "tasks": len(tasks), "sum_over_tasks": total,
            "per_task": tasks}


# ---------------------------------------------------------------------------------- profile
class StageTimer:
    """Wraps MatchTask's and Run's stages; seconds (thread CPU) and calls per stage."""

    def __init__(self):
        from cerql.exec import driver, output
        from cerql.exec import task as arrow_task

        self.targets = [
            ("_starts", arrow_task.MatchTask, "_starts"),
            ("_key", arrow_task.MatchTask, "_key"),
            ("_values", arrow_task.MatchTask, "_values"),
            ("Run.feed", driver.Run, "feed"),
            ("_results", arrow_task.MatchTask, "_results"),
            ("_results:_ids", output, "_ids"),
            ("_results:take_rows", output, "take_rows"),
            ("_keep", arrow_task.MatchTask, "_keep"),
            ("concat_tables", arrow_task.pa, "concat_tables"),
        ]
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)

    def __enter__(self):
        self.saved = []
        for stage, owner, attr in self.targets:
            original = getattr(owner, attr, None)
            if original is None:  # not in this version of cerql
                continue
            raw = owner.__dict__.get(attr, original)
            self.saved.append((owner, attr, raw))
            setattr(owner, attr, self._wrap(stage, original, isinstance(raw, (staticmethod, classmethod))))
        return self

    def __exit__(self, *exc):
        for owner, attr, raw in reversed(self.saved):
            setattr(owner, attr, raw)

    def _wrap(self, stage, fn, static):
        seconds, calls = self.seconds, self.calls

        def wrapper(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[stage] += time.thread_time() - t0
                calls[stage] += 1
        return staticmethod(wrapper) if static else wrapper


def run_profile(spark, stock, query: str, rows: int, batch_rows: int, top: int = 20) -> dict:
    """MatchTask.process on the batches Spark would feed it, run here: plain, per stage, cProfile."""
    from cerql.exec.task import MatchTask
    from cerql.spark.lower import task_plan

    plan, frames, _ = planned(spark, query, stock)
    t0 = time.perf_counter()
    table = cerql_stream(plan, frames).toArrow()
    fetch = time.perf_counter() - t0
    batches = table.to_batches(max_chunksize=batch_rows)
    task = task_plan(plan)

    def run_all():
        m = MatchTask(task)
        n = 0
        for b in batches:
            n += m.process(b).num_rows
        return n

    run_all()  # warm (numba cache load)
    plain = []
    for _ in range(3):
        t0 = time.thread_time()
        results = run_all()
        plain.append(time.thread_time() - t0)
    t0 = time.thread_time()
    for b in batches:  # the floor: touching each batch as a table
        pa.Table.from_batches([b])
    floor = time.thread_time() - t0
    staged = float("inf")
    for _ in range(3):  # the least disturbed of three instrumented runs
        with StageTimer() as timer:
            t0 = time.thread_time()
            run_all()
            total = time.thread_time() - t0
        if total < staged:
            staged, stages = total, timer
    prof = cProfile.Profile()
    prof.enable()
    run_all()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    cum = io.StringIO()
    pstats.Stats(prof, stream=cum).sort_stats("cumulative").print_stats(top)
    nb = len(batches)
    stage_ms = {k: round(v * 1e3, 1) for k, v in sorted(stages.seconds.items(), key=lambda kv: -kv[1])}
    top_level = ("_starts", "_values", "Run.feed", "_results", "_keep", "concat_tables")
    stage_ms["other (process body)"] = round((staged - sum(stages.seconds[k] for k in top_level)) * 1e3, 1)
    return {
        "query": query, "rows": table.num_rows, "batches": nb, "batch_rows": batch_rows, "results": results,
        "fetch_s": round(fetch, 2), "best_cpu_s": round(min(plain), 3), "runs_cpu_s": [round(x, 3) for x in plain],
        "us_per_row": round(min(plain) / table.num_rows * 1e6, 3),
        "us_per_batch": round(min(plain) / nb * 1e6, 1),
        "us_per_result": round(min(plain) / results * 1e6, 2) if results else None,
        "table_from_batches_ms": round(floor * 1e3, 1),
        "staged_total_ms": round(staged * 1e3, 1), "stages_ms": stage_ms,
        "stage_calls": dict(stages.calls),
        "cprofile_tottime": buf.getvalue(), "cprofile_cumulative": cum.getvalue(),
    }


# ----------------------------------------------------------------------------------- memory
def memory_child(args) -> int:
    """Child process: one fresh session, one query without PARTITION BY over ``--memory-child``
    rows, the workers' memory polled; prints one JSON line."""
    import cerql

    paths = ensure_data(Path(args.data_dir), args.chunk_rows, args.memory_child // args.chunk_rows, args.seed)
    spark = spark_session(args.driver_memory, args.shuffle_partitions)
    stock = spark.read.parquet(*paths)
    rows = stock.count()
    warm = spark.read.parquet(paths[0]).limit(20_000)
    noop(cerql.cer_sql(spark, MEMORY_QUERY, stock=warm))  # workers start, import cerql, load numba
    procs = spark_processes()
    idle = {pid: _status_kb(pid, "VmHWM") for pid in procs["python"]}
    base_wall = None
    if not args.memory_skip_baseline:
        t0 = time.perf_counter()
        noop(stock.repartition(1).sortWithinPartitions("ts"))
        base_wall = time.perf_counter() - t0
    poller = MemoryPoller()
    poller.start()
    meter = CpuMeter().start()
    t0 = time.perf_counter()
    noop(cerql.cer_sql(spark, MEMORY_QUERY, stock=stock))
    wall = time.perf_counter() - t0
    cpu = meter.stop()
    poller.stop()
    procs = spark_processes()
    hwm = {pid: _status_kb(pid, "VmHWM") for pid in procs["python"]}
    busiest = max(poller.peak_rss_kb, key=poller.peak_rss_kb.get) if poller.peak_rss_kb else None
    record = {
        "rows": rows, "query": MEMORY_QUERY, "wall_s": round(wall, 2), "cpu": cpu,
        "baseline_wall_s": None if base_wall is None else round(base_wall, 2),
        "python_workers": len(hwm),
        "worker_hwm_after_warmup_mb": {str(p): round(v / 1024, 1) for p, v in idle.items()},
        "worker_hwm_mb": {str(p): round(v / 1024, 1) for p, v in hwm.items()},
        "max_worker_hwm_mb": round(max(hwm.values(), default=0) / 1024, 1),
        "max_worker_growth_mb": round(max((v - idle.get(p, 0) for p, v in hwm.items()), default=0) / 1024, 1),
        "polled_peak_worker_rss_mb": round(poller.peak_rss_kb[busiest] / 1024, 1) if busiest else 0.0,
        "polled_peak_sum_python_rss_mb": round(poller.peak_sum_kb / 1024, 1),
        "polled_peak_jvm_rss_mb": round(poller.peak_jvm_kb / 1024, 1),
        "poll_samples": poller.samples,
    }
    spark.stop()
    print("MEMORY " + json.dumps(record), flush=True)
    return 0


def run_memory(args, sizes: list[int]) -> list[dict]:
    out = []
    for rows in sizes:
        cmd = [sys.executable, __file__, "--memory-child", str(rows), "--data-dir", args.data_dir,
               "--chunk-rows", str(args.chunk_rows), "--seed", str(args.seed),
               "--driver-memory", args.driver_memory, "--shuffle-partitions", str(args.shuffle_partitions)]
        if args.memory_skip_baseline:
            cmd.append("--memory-skip-baseline")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("MEMORY ")]
        if proc.returncode or not lines:
            print(proc.stdout[-2000:], proc.stderr[-4000:], file=sys.stderr)
            out.append({"rows": rows, "error": f"child exited {proc.returncode}"})
            continue
        rec = json.loads(lines[-1][len("MEMORY "):])
        rec["child_s"] = round(time.perf_counter() - t0, 1)
        out.append(rec)
        print(f"  memory {rows:>12,} rows: query {rec['wall_s']:7.1f} s "
              f"(baseline {rec['baseline_wall_s']} s), peak worker RSS {rec['max_worker_hwm_mb']} MB "
              f"(polled {rec['polled_peak_worker_rss_mb']} MB, after warm-up "
              f"{max(rec['worker_hwm_after_warmup_mb'].values(), default=0)} MB, growth "
              f"{rec['max_worker_growth_mb']} MB), "
              f"JVM {rec['polled_peak_jvm_rss_mb']} MB", flush=True)
    return out


# ---------------------------------------------------------------------------------- printing
def machine() -> dict:
    import numba
    import pyspark

    model, mem_kb = "", 0
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem_kb = next((int(ln.split()[1]) for ln in f if ln.startswith("MemTotal")), 0)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {"nproc": os.cpu_count(), "cpu": model, "mem_gb": round(mem_kb / 2**20, 1),
            "python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pa.__version__,
            "numba": numba.__version__, "java": java[0] if java else "", "loadavg_start": os.getloadavg()}


def print_table(records: list[dict]) -> None:
    head = (f"{'variant':<21}{'rows':>11}{'results':>10}{'best s':>8}{'M ev/s':>8}{'x base':>8}"
            f"{'med/rnd':>8}{'jvm cpu':>8}{'py cpu':>8}{'x cpu':>7}  runs s")
    print(head)
    print("-" * len(head))
    for r in records:
        ratio = f"{r['throughput_ratio']:.2f}" if "throughput_ratio" in r else ""
        med = f"{r['median_round_ratio']:.2f}" if "median_round_ratio" in r else ""
        res = f"{r['results']:,}" if "results" in r else ""
        xcpu = f"{r['cpu_ratio']:.2f}" if r.get("cpu_ratio") else ""
        print(f"{r['variant']:<21}{r['rows']:>11,}{res:>10}{r['best_s']:>8.2f}{r['events_per_s'] / 1e6:>8.2f}"
              f"{ratio:>8}{med:>8}{min(r['jvm_cpu_s']):>8.1f}{min(r['python_cpu_s']):>8.1f}{xcpu:>7}  "
              + ", ".join(f"{x:.2f}" for x in r["runs_s"]))


def print_targets(records: list[dict]) -> None:
    """Each target group's ratios to the bare shuffle (best, median per round), on one line each."""
    by_name = {r["variant"]: r for r in records}
    for title, names in (("filtered", FILTERED), ("counting positions, with FILTERs", POSITIONED)):
        got = [f"{n} {by_name[n]['throughput_ratio']:.2f} (med {by_name[n]['median_round_ratio']:.2f})"
               for n in names if "throughput_ratio" in by_name.get(n, {})]
        print(f"# x bare shuffle, {title}: " + ", ".join(got))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="500k rows, one round, memory at 0.5M and 1.5M rows (a smoke run)")
    ap.add_argument("--rows", type=int, default=None, help="throughput rows (default 5_000_000; 500_000 quick)")
    ap.add_argument("--repeat", type=int, default=None, help="rounds, best of N (default 3; 1 quick)")
    ap.add_argument("--memory-rows", default=None,
                    help="comma-separated sizes for the memory part (default 10000000,40000000; 0 skips)")
    ap.add_argument("--memory-skip-baseline", action="store_true", help="no JVM-only run in the memory part")
    ap.add_argument("--no-decompose", dest="decompose", action="store_false",
                    help="only the baselines and the queries")
    ap.add_argument("--no-profile", dest="profile", action="store_false", help="skip the split and profile parts")
    ap.add_argument("--profile-rows", type=int, default=None, help="rows for the local profile (default 1_000_000)")
    ap.add_argument("--batch-rows", type=int, default=10_000, help="Arrow batch size of the local profile")
    ap.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "cerql-bench-spark"))
    ap.add_argument("--chunk-rows", type=int, default=None, help="rows per Parquet file (default 5M; 500k quick)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--shuffle-partitions", type=int, default=4)
    ap.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    ap.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.chunk_rows = args.chunk_rows or (500_000 if args.quick else 5_000_000)
    if args.memory_child is not None:
        return memory_child(args)
    rows = args.rows or (500_000 if args.quick else 5_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    if args.memory_rows is None:
        args.memory_rows = "500000,1500000" if args.quick else "10000000,40000000"
    if args.quick:
        args.memory_skip_baseline = True
    memory_sizes = [int(x) for x in args.memory_rows.split(",") if int(x) > 0]
    profile_rows = args.profile_rows or min(rows, 1_000_000)
    if rows % args.chunk_rows or any(m % args.chunk_rows for m in memory_sizes):
        ap.error(f"row counts must be multiples of --chunk-rows ({args.chunk_rows})")

    info = machine()
    print(f"# {info['cpu']} x{info['nproc']}, {info['mem_gb']} GB, Python {info['python']}, pyspark "
          f"{info['pyspark']}, pyarrow {info['pyarrow']}, numba {info['numba']}, {info['java']}; "
          f"load {info['loadavg_start']}", flush=True)
    started = time.perf_counter()
    chunks = max([rows] + memory_sizes) // args.chunk_rows
    paths = ensure_data(Path(args.data_dir), args.chunk_rows, chunks, args.seed)
    spark = spark_session(args.driver_memory, args.shuffle_partitions)
    stock = spark.read.parquet(*paths[: rows // args.chunk_rows])
    print(f"# {rows:,} rows from {args.data_dir}; best of {repeat}; session up in "
          f"{time.perf_counter() - started:.1f} s", flush=True)

    records = run_throughput(spark, stock, rows, repeat, args.decompose)
    out = {"machine": info, "command": " ".join([sys.executable] + sys.argv), "rows": rows, "repeat": repeat,
           "queries": QUERIES, "throughput": records}
    print()
    print_table(records)
    print_targets(records)
    if args.profile:
        split = python_split(spark, stock, QUERIES["seq_part"])
        out["python_split"] = split
        s = split["sum_over_tasks"]
        print(f"\n# python split, seq_part ({split['tasks']} tasks, wall {split['wall_s']} s): summed over tasks "
              f"wait for input {s['wait_input_s']:.2f} s, MatchTask.process {s['process_s']:.2f} s "
              f"(cpu {s['process_cpu_s']:.2f} s), hand back {s['hand_back_s']:.2f} s; {s['batches']} batches, "
              f"{s['rows_in']:,} rows in, {s['rows_out']:,} out")
        out["profile"] = {}
        for name in ("seq_part", "kleene_part"):
            prof = run_profile(spark, spark.read.parquet(paths[0]).limit(profile_rows), QUERIES[name],
                               profile_rows, args.batch_rows)
            out["profile"][name] = prof
            print(f"\n# local MatchTask.process, {name}, {prof['rows']:,} rows in {prof['batches']} batches of "
                  f"{args.batch_rows}: best {prof['best_cpu_s']} s CPU ({prof['us_per_row']} us/row, "
                  f"{prof['us_per_batch']} us/batch, {prof['results']:,} results, "
                  f"{prof['us_per_result']} us/result); Table.from_batches alone {prof['table_from_batches_ms']} ms")
            print("# stages ms (thread CPU, one instrumented run of " f"{prof['staged_total_ms']} ms): "
                  + ", ".join(f"{k} {v}" for k, v in prof["stages_ms"].items()))
            print(prof["cprofile_tottime"])
    spark.stop()
    if memory_sizes:
        print(f"\n# memory: {MEMORY_QUERY}")
        out["memory"] = run_memory(args, memory_sizes)
    out["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(f"\n# done in {out['elapsed_s']:.0f} s; load at the end {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"# wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
