"""The floor of any engine that matches MATCH_RECOGNIZE in Python on Spark: read what cer_sql reads, emit what it emits.

A diagnosis beside spark_mr_breakdown.py. In interleaved rounds (best of 6, wall seconds, ratios
to the base of the same run), on bench_match_recognize.py's 1M-row V-shape from a cached
DataFrame, local[2], 8 shuffle partitions, to the ``noop`` sink:

- ``base``: ``repartition(sym).sortWithinPartitions(sym, ts)``;
- ``read``: the base, then a ``mapInArrow`` reading ``sym``, ``ts``, ``price`` and returning nothing;
- ``read+emit``: the same, returning cer_sql's own result rows (computed beforehand by
  ``cerql.run``, a third of them per task): what crossing to Python and back costs with no
  matching at all;
- ``cer``: ``cerql.cer_sql`` itself.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/spark_mr_floor.py
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cerql  # noqa: E402
from bench_match_recognize import VSHAPE, local_session, random_walk  # noqa: E402

QUERY = VSHAPE.format(skip="PAST LAST ROW", never="")


def read_only(batches):
    """Reads every batch's buffers and returns nothing."""
    for b in batches:
        for c in b.columns:
            c.buffers()
    return iter(())


def main() -> None:
    spark = local_session("cerql-mr-floor")
    df = random_walk(1_000_000)
    t = spark.createDataFrame(df).cache()
    t.count()
    schema = cerql.cer_sql(spark, QUERY, t=t).schema
    result = pa.Table.from_pandas(cerql.run(QUERY, {"t": df}), preserve_index=False)
    result = result.cast(pa.schema([pa.field(f.name, result.schema.field(f.name).type) for f in schema]))
    share = result.slice(0, result.num_rows // 3)  # AQE makes three tasks of the 8 partitions

    def noop(frame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def base():
        return t.repartition("sym").sortWithinPartitions("sym", "ts")

    def read_emit(batches):
        for batch in batches:
            for column in batch.columns:
                column.buffers()
        yield from share.to_batches(max_chunksize=10_000)

    def crossing(fn, out_schema):
        rows = base().select("sym", "ts", "price")
        noop(rows.mapInArrow(fn, out_schema or rows.schema))

    variants = {"base": lambda: noop(base()), "read": lambda: crossing(read_only, None),
                "read+emit": lambda: crossing(read_emit, schema), "cer": lambda: noop(cerql.cer_sql(spark, QUERY, t=t))}
    for fn in variants.values():
        fn()
    best = {name: float("inf") for name in variants}
    for _ in range(6):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    print(f"load average {os.getloadavg()[0]:.1f}; best of 6, wall seconds")
    for name, seconds in best.items():
        print(f"{name:>10} {seconds:6.3f} s  x base {seconds / best['base']:.2f}")


if __name__ == "__main__":
    main()
