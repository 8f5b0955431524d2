"""cerql on Apache Spark: the surfaces, the lowering and the tasks Spark runs. pyspark is imported
nowhere else in cerql but the command line (not every module here imports it: the task and the
streaming state run on Arrow alone in Spark's Python workers).

- :mod:`cerql.spark.session`: ``cer_sql`` (parse, analyze, find the sources, resolve, lower).
- :mod:`cerql.spark.lower`: the physical plan as a Spark plan (union, bits, shuffle, mapInArrow).
- :mod:`cerql.spark.expressions`: Spark's analyzer checks what Spark evaluates (predicates and
  SELECT items beyond the local engine's functions); only Spark built-ins pass.
- :mod:`cerql.spark.workers`: once per session, whether Spark's Python workers can import cerql.
- :mod:`cerql.spark.streaming`: the query over Structured Streaming (a stateful processor per
  bucket of partition keys); :mod:`cerql.spark.ipc`: the Arrow IPC its rows travel in.
- :mod:`cerql.spark.compat`: what differs between classic Spark and Spark Connect (imports no
  other cerql module).
- :mod:`cerql.spark.sql_cells`: the ``cerql(TABLE(t), 'query')`` table function for SQL cells.
- :mod:`cerql.spark.magic`: the ``%%ceql`` cell magic; :mod:`cerql.spark.patch`: ``spark.cer_sql``.
- :mod:`cerql.spark.task_errors`: CeqlErrors raised in tasks, rebuilt on the driver.

The task ``mapInArrow`` runs on each partition (the kernel over Arrow batches, state carried
across them) imports no pyspark and lives with the engine: :mod:`cerql.exec.task`. Importing
this package imports nothing: Spark's Python workers load only that task module.
"""
