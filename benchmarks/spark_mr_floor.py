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
import os, sys, time
sys.path.insert(0, "/work/main/benchmarks")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from bench_match_recognize import random_walk, VSHAPE
from pyspark.sql import SparkSession
import pyarrow as pa
import cerql
QUERY = VSHAPE.format(skip="PAST LAST ROW", never="")
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "8").config("spark.driver.memory", "2g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = random_walk(1_000_000)
t = spark.createDataFrame(df).cache(); t.count()
res = cerql.run(QUERY, {"t": df})
out = pa.Table.from_pandas(res, preserve_index=False)
cer = cerql.cer_sql(spark, QUERY, t=t)
schema = cer.schema
out = out.cast(pa.schema([pa.field(f.name, out.schema.field(f.name).type) for f in schema]))
per = out.num_rows // 3
def noop(f): f.write.format("noop").mode("overwrite").save()
def base(): return t.repartition("sym").sortWithinPartitions("sym", "ts")
def read_only(batches):
    for b in batches:
        for c in b.columns: c.buffers()
    return iter(())
def read_emit(batches):
    for b in batches:
        for c in b.columns: c.buffers()
    yield from out.slice(0, per).to_batches(max_chunksize=10000)
def v_read(): r = base().select("sym", "ts", "price"); noop(r.mapInArrow(read_only, r.schema))
def v_emit(): r = base().select("sym", "ts", "price"); noop(r.mapInArrow(read_emit, schema))
def v_cer(): noop(cerql.cer_sql(spark, QUERY, t=t))
def v_base(): noop(base())
fns = {"base": v_base, "read": v_read, "read+emit": v_emit, "cer": v_cer}
for f in fns.values(): f()
best = {k: 9e9 for k in fns}
for r in range(6):
    for k, f in fns.items():
        t0 = time.perf_counter(); f(); best[k] = min(best[k], time.perf_counter() - t0)
print({k: round(v, 3) for k, v in best.items()}, {k: round(v / best["base"], 2) for k, v in best.items()})
print(os.getloadavg(), schema.simpleString())
