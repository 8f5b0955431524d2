"""The SQL-cell table function (``cerql.register``) against ``cerql.cer_sql`` on the same rows.

Usage: ``.venv/bin/python benchmarks/bench_sql_cells.py`` (env N=200000 REPS=3; ARROW_IO=1 for
Spark's Arrow-optimized row UDTF). Prints one table row per variant: best seconds, k rows/s, all
runs. Figures and their discussion are in docs/benchmarks.md, "SQL cells".
"""
import os, sys, time
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession
import cerql, cerql.spark.sql_cells
N, REPS = int(os.environ.get("N", 200_000)), int(os.environ.get("REPS", 3))
cerql.spark.sql_cells.ARROW_IO = os.environ.get("ARROW_IO") == "1"
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").getOrCreate())
(spark.range(N).selectExpr("concat('k', id % 100) AS name", "id AS ts", "cast(id % 97 AS double) AS price",
                           "CASE WHEN id % 7 < 2 THEN 'SELL' ELSE 'BUY' END AS type")
 .write.mode("overwrite").parquet("/tmp/cerql_bench_stock.parquet"))
spark.read.parquet("/tmp/cerql_bench_stock.parquet").createOrReplaceTempView("stock")
cerql.register(spark)
def timed(label, df):
    runs = []
    for _ in range(REPS):
        t = time.perf_counter(); df.write.format("noop").mode("overwrite").save(); runs.append(time.perf_counter() - t)
    print(f"| {label} | {min(runs):.2f} | {N / min(runs) / 1000:.1f} | {', '.join(f'{r:.2f}' for r in runs)} |")
timed("JVM repartition + sort", spark.table("stock").repartition("name").sortWithinPartitions("name", "ts"))
for q in ["SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER s[price > 95] PARTITION BY [name] ORDER BY ts WITHIN 3 EVENTS",
          "SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] ORDER BY ts WITHIN 3 EVENTS"]:
    print(q, cerql.cer_sql(spark, q).count(), "results")
    timed("cerql.cer_sql", cerql.cer_sql(spark, q))
    timed("cerql(TABLE(stock), :q)", spark.sql("SELECT * FROM cerql(TABLE(stock), :q)", args={"q": q}))
