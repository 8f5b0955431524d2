"""Runs MATCH_RECOGNIZE queries on Flink SQL (PyPI ``apache-flink``) for ``bench_flink.py``.

Not importable from cerql and imports nothing of it: it runs in the venv ``bench_flink.py``
builds for PyFlink (a JVM mini-cluster behind a Py4J gateway). Input (argv): a CSV of the stream
without header (``type,name,price,volume,rn``, ``rn`` the row number), an empty CSV with the same
columns, and a JSON file ``{"mode": "batch"|"streaming", "repeat": n, "queries": [{"name": ...,
"body": ...}, ...]}`` where ``body`` is the ``MATCH_RECOGNIZE (...)`` clause applied to the
table. Both CSVs are declared as tables with ``ts = TO_TIMESTAMP_LTZ(rn, 3)`` (1 ms per row) and a
watermark on it. Output: one JSON object per query on stdout, ``{"name", "count", "seconds",
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
  `type` STRING, name STRING, price DOUBLE, volume BIGINT, rn BIGINT,
  ts AS TO_TIMESTAMP_LTZ(rn, 3),
  WATERMARK FOR ts AS ts
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
    t_env.execute_sql(DDL.format(table="s", path=csv_path))
    t_env.execute_sql(DDL.format(table="s_empty", path=empty_path))
    count(t_env, "s_empty", spec["queries"][0]["body"])  # warm-up: class loading, codegen caches
    for q in spec["queries"]:
        best, best_empty, n = math.inf, math.inf, None
        for _ in range(spec["repeat"]):
            wall, got = count(t_env, "s", q["body"])
            if n is not None and got != n:
                raise SystemExit(f"{q['name']}: {got} matches, then {n}")
            n, best = got, min(best, wall)
            best_empty = min(best_empty, count(t_env, "s_empty", q["body"])[0])
        print(json.dumps({"name": q["name"], "count": n, "seconds": best, "empty_seconds": best_empty}), flush=True)


if __name__ == "__main__":
    main()
