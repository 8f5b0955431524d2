"""Where ``spark.cer_sql``'s MATCH_RECOGNIZE time goes: its plan taken apart, step by step, to ``noop``.

A diagnosis, not a benchmark of record (bench_match_recognize.py ``--family spark`` is). The
query and rows are bench_match_recognize.py's family 5 (the 1M-row V-shape, 100 partitions,
local[2], 8 shuffle partitions, from a cached DataFrame). Every variant writes to the ``noop``
sink, in interleaved rounds, best of ``--repeat``; ratios are against the base of the same run:

- ``base``: ``repartition(sym).sortWithinPartitions(sym, ts)``;
- ``base + read``: the base, then a ``mapInArrow`` that reads its three columns (``sym``, ``ts``,
  ``price``: as many as ``cer_sql`` hands to Python, and ``price`` kept, so the shuffle stays
  the base's) and returns nothing: the floor of any plan that crosses to Python;
- ``pre-python``: cerql's plan up to the ``mapInArrow`` (ordinal, key columns, shuffle, DEFINE
  bits, sort, the columns read), to ``noop`` in the JVM;
- ``pre-python + read``: the same, then a ``mapInArrow`` that reads its batches and returns
  nothing;
- ``cer_sql as before``: with the bits by the Window and a run of the matcher per group (what
  cer_sql did before the tasks computed navigating DEFINEs and pooled small groups); ``cer_sql,
  bits by the Window``: the Window alone put back;
- ``cer_sql in Python``: the query matched in Python workers (``cerql.matchRecognize.jvm``
  false), the three variants before it likewise;
- ``cer_sql (in the JVM)``: the query as it runs (spark/mr_jvm.py).

``--explain`` prints cer_sql's physical plan first; ``--profile`` runs the task function
(``mr_lower._matcher``) in this process over batches shaped as a task gets them (sorted by
sym, ts; Arrow batches of ``maxRecordsPerBatch`` rows; the DEFINE bits computed here as Spark
computes them) under cProfile, without Spark.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/spark_mr_breakdown.py --repeat 5 --explain
    PYTHONPATH=$PWD .venv/bin/python benchmarks/spark_mr_breakdown.py --profile
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cerql  # noqa: E402
from bench_match_recognize import VSHAPE, local_session, random_walk  # noqa: E402

QUERY = VSHAPE.format(skip="PAST LAST ROW", never="")


def tree_cpu() -> tuple[float, float]:
    """CPU seconds of the JVM and of the Python workers (every descendant of this process but
    the JVM, dead children included; this driver's own time not counted): less sensitive than
    wall time to other people's jobs on the machine."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, spent, java = {}, {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        parent[int(entry)] = int(fields[1])
        spent[int(entry)] = sum(int(x) for x in fields[11:15]) / tick
        if head.endswith("(java"):
            java.add(int(entry))
    mine, jvm, python = os.getpid(), 0.0, 0.0
    for pid in spent:
        at = pid
        while at > 1 and at != mine:
            at = parent.get(at, 0)
        if at == mine and pid != mine:
            if pid in java:
                jvm += spent[pid]
            else:
                python += spent[pid]
    return jvm, python


def cpu_rounds(variants: dict, repeat: int) -> dict[str, dict]:
    """Best wall and best CPU seconds of each variant, rounds interleaved."""
    best = {name: {"seconds": float("inf"), "cpu": float("inf"), "jvm": float("inf"), "python": float("inf")}
            for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            (j0, p0), t0 = tree_cpu(), time.perf_counter()
            fn()
            wall, (j1, p1) = time.perf_counter() - t0, tree_cpu()
            rec = best[name]
            rec["seconds"] = min(rec["seconds"], wall)
            rec["cpu"] = min(rec["cpu"], j1 - j0 + p1 - p0)
            rec["jvm"], rec["python"] = min(rec["jvm"], j1 - j0), min(rec["python"], p1 - p0)
    return best


def read_only(batches):
    """A mapInArrow function that reads every batch (its columns' buffers are touched) and
    returns nothing."""
    for batch in batches:
        for column in batch.columns:
            column.buffers()
    return iter(())


def pre_python(spark, t):
    """cerql's plan up to the mapInArrow: the DataFrame handed to it (mr_lower.py)."""
    from cerql.spark import mr_lower

    return mr_lower.matcher_input(spark, QUERY, {"t": t})[1]


def spark_rounds(n: int, repeat: int, explain: bool, detail: bool, confs: list[str]) -> None:
    spark = local_session("cerql-mr-breakdown")
    for conf in confs:
        key, value = conf.split("=", 1)
        spark.conf.set(key, value)
    try:
        t = spark.createDataFrame(random_walk(n)).cache()
        t.count()

        def noop(frame) -> None:
            frame.write.format("noop").mode("overwrite").save()

        def base():
            return t.repartition("sym").sortWithinPartitions("sym", "ts")

        def base_read():
            rows = base().select("sym", "ts", "price")  # price read: the base's shuffle, not a narrower one
            return rows.mapInArrow(read_only, rows.schema)

        def pre():
            return pre_python(spark, t)

        def pre_read():
            frame = pre()
            return frame.mapInArrow(read_only, frame.schema)

        def base_ordinal():
            from pyspark.sql import functions as F
            rows = t.withColumn("o", F.monotonically_increasing_id()).repartition("sym")
            return rows.sortWithinPartitions("sym", "ts", "o").select("sym", "ts", "o")

        def window_lag():
            from pyspark.sql import functions as F
            from pyspark.sql.window import Window
            rows = t.withColumn("o", F.monotonically_increasing_id()).repartition("sym")
            w = Window.partitionBy("sym").orderBy("ts", "o")
            return rows.select("sym", "ts", (F.col("price") < F.lag("price").over(w)).alias("b"))

        def ordinal_read():
            from pyspark.sql import functions as F
            rows = t.withColumn("o", F.monotonically_increasing_id()).repartition("sym")
            rows = rows.sortWithinPartitions("sym", "ts", "o").select("sym", "ts", "price")
            return rows.mapInArrow(read_only, rows.schema)

        def window_buffered():
            spark.conf.set("spark.sql.windowExec.buffer.in.memory.threshold", "1000000")
            try:
                noop(pre())
            finally:
                spark.conf.unset("spark.sql.windowExec.buffer.in.memory.threshold")

        def window_bits():
            """cer_sql with every row-local DEFINE computed by the JVM (the Window), as before
            local_defines: planned on the driver, so patching it there is enough."""
            from cerql.spark import mr_bits

            kept = mr_bits.local_defines
            mr_bits.local_defines = lambda *args: frozenset()
            try:
                return in_python()
            finally:
                mr_bits.local_defines = kept

        def as_before():
            """cer_sql as before this breakdown's changes: the Window's bits, and each group matched
            in a run of its own (a pool that flushes every group): both patched on the driver, where
            the task function is pickled with the names it reads."""
            from cerql.exec.mr_incremental import GroupPool
            from cerql.spark import mr_bits, mr_lower

            class OnePerRun(GroupPool):
                def __init__(self, *args, **kw):
                    super().__init__(*args, **kw)
                    self.min_run = 0

            kept = mr_bits.local_defines, mr_lower.GroupPool
            mr_bits.local_defines, mr_lower.GroupPool = (lambda *args: frozenset()), OnePerRun
            try:
                return in_python()
            finally:
                mr_bits.local_defines, mr_lower.GroupPool = kept

        def in_python():
            """cer_sql matched in Python workers: the JVM matcher off (spark/mr_jvm.py), as
            before it; the path is chosen when the DataFrame is planned."""
            from cerql.spark.mr_jvm import JVM_CONF

            spark.conf.set(JVM_CONF, "false")
            try:
                return cerql.cer_sql(spark, QUERY, t=t)
            finally:
                spark.conf.unset(JVM_CONF)

        if explain:
            cerql.cer_sql(spark, QUERY, t=t).explain()
        count = cerql.cer_sql(spark, QUERY, t=t).count()
        assert window_bits().count() == count and as_before().count() == count
        local = len(cerql.run(QUERY, {"t": random_walk(n)}))
        print(f"matches: cer_sql {count:,}, cerql.run {local:,}: {'agree' if count == local else 'DIFFER'}")
        variants = {"base": lambda: noop(base()), "base + read": lambda: noop(base_read()),
                    **({"base + ordinal": lambda: noop(base_ordinal()), "ordinal + read": lambda: noop(ordinal_read()), "ordinal + lag window": lambda: noop(window_lag())} if detail else {}),
                    "pre-python": lambda: noop(pre()), "pre-python + read": lambda: noop(pre_read()),
                    "cer_sql as before (the Window, a run per group)": lambda: noop(as_before()),
                    "cer_sql, bits by the Window": lambda: noop(window_bits()),
                    "cer_sql in Python": lambda: noop(in_python()),
                    "cer_sql (in the JVM)": lambda: noop(cerql.cer_sql(spark, QUERY, t=t))}
        for fn in variants.values():  # warm-up: workers, numba cache
            fn()
        load = os.getloadavg()
        got = cpu_rounds(variants, repeat)
        wall, cpu = got["base"]["seconds"], got["base"]["cpu"]
        print(f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}; best of {repeat}")
        print("| plan, to noop | wall s | x base | CPU s | x base | of which JVM | Python workers |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for name, rec in got.items():
            print(f"| {name} | {rec['seconds']:.2f} | {rec['seconds'] / wall:.2f} | {rec['cpu']:.2f} | "
                  f"{rec['cpu'] / cpu:.2f} | {rec['jvm']:.2f} | {rec['python']:.2f} |")
    finally:
        spark.stop()


def task_batches(n: int, batch_rows: int, tasks: int = 8) -> list[list[pa.RecordBatch]]:
    """The Arrow batches each of ``tasks`` tasks gets: rows of the symbols hashed to it (here:
    sym mod tasks), sorted by sym, ts, with ``price`` and the bits of B (price < PREV) and C
    (price > PREV) set as Spark sets them (A always); the caller picks the columns that cross."""
    from cerql.spark import mr_bits

    df = random_walk(n)
    price, sym = df["price"].to_numpy(), df["sym"].to_numpy()
    prev = np.concatenate([[np.nan], price[:-1]])
    first = np.concatenate([[True], sym[1:] != sym[:-1]])
    down = (price < prev) & ~first
    up = (price > prev) & ~first
    bits = 1 | (down.astype(np.int64) << 1) | (up.astype(np.int64) << 2)
    out = []
    for task in range(tasks):
        mine = (sym % tasks) == task
        table = pa.table({"sym": sym[mine], "ts": df["ts"].to_numpy()[mine], "price": price[mine],
                          mr_bits.BITS: bits[mine]})
        out.append(table.to_batches(max_chunksize=batch_rows))
    return out


def profile(n: int, batch_rows: int, top: int, jvm_bits: bool) -> None:
    """The task function over every task's batches, as cer_sql plans it (the DEFINEs in Python,
    ``price`` crossing) or, ``jvm_bits``, with the bits computed by the JVM (the Window)."""
    from cerql import row_pattern
    from cerql.exec.mr_incremental import MAX_MATCH_ROWS
    from cerql.planner import front
    from cerql.spark import mr_bits, mr_lower

    planned = front.plan_row_pattern(QUERY)
    matcher = row_pattern.matcher(planned)
    schema = pa.schema([("sym", pa.int64()), ("ts", pa.int64()), ("price", pa.float64())])
    local = frozenset() if jvm_bits else mr_bits.local_defines(schema, planned.clause, planned.analysis.row_local,
                                                                QUERY)
    bits = mr_lower.row_bits(planned.clause, QUERY, local, None if local else mr_bits.BITS)
    columns = ["sym", "ts", "price"] if local else ["sym", "ts", mr_bits.BITS]
    tasks = [[b.select(columns) for b in batches] for batches in task_batches(n, batch_rows)]
    print(f"DEFINEs computed in Python: {sorted(local) or 'none'}; columns crossing: {columns}")

    def run() -> int:
        rows = 0
        for batches in tasks:
            task = mr_lower._matcher(planned.clause, QUERY, matcher, MAX_MATCH_ROWS, [None, None], bits)
            rows += sum(b.num_rows for b in task(iter(batches)))
        return rows

    rows = run()  # warm-up
    t0 = time.perf_counter()
    for _ in range(3):
        run()
    print(f"{n:,} rows in {sum(map(len, tasks))} batches of <= {batch_rows}: {rows:,} result rows, "
          f"{(time.perf_counter() - t0) / 3:.3f} s per pass over the 8 tasks (no Spark)")
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--explain", action="store_true")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a session conf for every variant (e.g. spark.sql.execution.arrow.maxRecordsPerBatch=100000)")
    ap.add_argument("--detail", action="store_true", help="also the JVM steps apart (ordinal, window)")
    ap.add_argument("--profile", action="store_true", help="the task function in this process, no Spark")
    ap.add_argument("--batch-rows", type=int, default=10_000, help="with --profile: rows per Arrow batch")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--jvm-bits", action="store_true", help="with --profile: the bits as the Window computes them")
    args = ap.parse_args()
    if args.profile:
        profile(args.rows, args.batch_rows, args.top, args.jvm_bits)
    else:
        spark_rounds(args.rows, args.repeat, args.explain, args.detail, args.conf)


if __name__ == "__main__":
    main()
