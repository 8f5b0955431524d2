"""Runs MATCH_RECOGNIZE queries on Flink SQL (PyPI ``apache-flink``) for ``flink_engine.py``.

Not importable from cerql and imports nothing of it: it runs in the venv ``flink_engine.py``
builds for PyFlink (a JVM mini-cluster behind a Py4J gateway). Input (argv): a CSV of the stream
without header, an empty CSV with the same columns, and a JSON file ``{"mode": "batch"|"streaming",
"columns": [[name, flink_type], ...], "ms_per_ts": n, "repeat": n, "queries": [{"name": ...,
"body": ..., "csv": optional own stream}, ...]}`` where ``body`` is the ``MATCH_RECOGNIZE (...)``
clause applied to the table.
Both CSVs are declared as tables with the rowtime ``rt = TO_TIMESTAMP_LTZ(ts * ms_per_ts, 3)`` and
a watermark on it. Output: one JSON object per query on stdout, ``{"name", "count", "seconds",
"empty_seconds"}`` (best of ``repeat``): the wall time of one job ``SELECT COUNT(*) FROM t
MATCH_RECOGNIZE (...)`` (planning, job submission, CSV reading and parsing, sorting, the CEP
operator, the aggregate and collecting one row), and of the same job on the empty table, which is
Flink's fixed cost per job. The JVM and the TableEnvironment are started once, untimed.
"""

import json
import math
import sys
import time

from pyflink.table import EnvironmentSettings, TableEnvironment

DDL = """CREATE TEMPORARY TABLE {table} (
  {columns},
  rt AS TO_TIMESTAMP_LTZ(ts * {ms_per_ts}, 3),
  WATERMARK FOR rt AS rt
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""


def count(t_env, table, body):
    t0 = time.perf_counter()
    with t_env.execute_sql(f"SELECT COUNT(*) FROM {table} {body}").collect() as rows:
        n = [r[0] for r in rows]
    return time.perf_counter() - t0, (n[-1] if n else 0)


def main():
    csv_path, empty_path, spec_path = sys.argv[1:4]
    with open(spec_path) as f:
        spec = json.load(f)
    batch = spec.get("mode", "batch") == "batch"
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode() if batch
                                    else EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    columns = ", ".join(f"`{name}` {typ}" for name, typ in spec["columns"])
    for table, path in (("s", csv_path), ("s_empty", empty_path)):
        t_env.execute_sql(DDL.format(table=table, columns=columns, ms_per_ts=spec["ms_per_ts"], path=path))
    count(t_env, "s_empty", spec["queries"][0]["body"])  # warm-up: class loading, codegen caches
    for i, q in enumerate(spec["queries"]):
        table = "s"
        if q.get("csv"):
            table = f"s{i}"
            t_env.execute_sql(DDL.format(table=table, columns=columns, ms_per_ts=spec["ms_per_ts"], path=q["csv"]))
        best, best_empty, n = math.inf, math.inf, None
        for _ in range(spec["repeat"]):
            wall, got = count(t_env, table, q["body"])
            if n is not None and got != n:
                raise SystemExit(f"{q['name']}: {got} matches, then {n}")
            n, best = got, min(best, wall)
            best_empty = min(best_empty, count(t_env, "s_empty", q["body"])[0])
        print(json.dumps({"name": q["name"], "count": n, "seconds": best, "empty_seconds": best_empty}), flush=True)


if __name__ == "__main__":
    main()
