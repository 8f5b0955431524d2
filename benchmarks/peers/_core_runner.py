"""Runs queries on CORE (PyPI ``pycer``) for ``core_engine.py``; started in CORE's own interpreter.

Not importable from cerql and imports nothing of it: pycer only ships a CPython 3.13 wheel, so
``core_engine.py`` runs this file with a separate venv. Input (argv): a CSV of the stream
(``type`` and the declared attributes, header first) and a JSON file ``{"decl": ..., "columns":
[[name, "string"|"double"|"int"], ...], "repeat": n, "queries": [{"name": ..., "text": ...,
"csv": optional own stream}, ...]}``. Output: one JSON object per query on stdout,
``{"name", "count", "seconds", "cpu_seconds", "empty_seconds"}`` (best of ``repeat``). Timed: a
fresh server's ``send_events`` + ``get_output`` on the prebuilt events, not the CSV parsing nor
the building of ``PyEvent``s. ``empty_seconds`` is the same on an empty stream (get_output has a
fixed polling delay). ``count`` is the number of output lines, one per complex event.
"""

import csv
import json
import math
import sys
import time

import pycer


VALUE = {"string": pycer.PyStringValue, "double": lambda v: pycer.PyDoubleValue(float(v)),
         "int": lambda v: pycer.PyIntValue(int(v))}


def server(decl, query):
    srv = pycer.PyOfflineServer()
    ids = {e.name: e.id for e in srv.declare_stream(decl).events_info}
    srv.add_query(query)
    return srv, ids


def timed(srv, events):
    w0, c0 = time.perf_counter(), time.process_time()
    srv.send_events(events)
    out = srv.get_output()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main():
    csv_path, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    decl = spec["decl"]
    _, ids = server(decl, spec["queries"][0]["text"])
    makers = [VALUE[t] for _, t in spec["columns"]]

    def read(path):
        with open(path, newline="") as f:
            reader = csv.reader(f)
            next(reader)
            return [pycer.PyEvent(ids[typ], [make(v) for make, v in zip(makers, values)]) for typ, *values in reader]

    stream = read(csv_path)
    for q in spec["queries"]:
        events = read(q["csv"]) if q.get("csv") else stream
        best, best_cpu, best_empty, count = math.inf, math.inf, math.inf, None
        for _ in range(spec["repeat"]):
            srv, _ = server(decl, q["text"])
            wall, cpu, out = timed(srv, events)
            n = out.count("\n") + (1 if out and not out.endswith("\n") else 0)
            if count is not None and n != count:
                raise SystemExit(f"{q['name']}: {n} lines, then {count}")
            count = n
            best, best_cpu = min(best, wall), min(best_cpu, cpu)
            srv, _ = server(decl, q["text"])
            best_empty = min(best_empty, timed(srv, [])[0])
            if spec.get("dump"):
                sys.stderr.write(out)
        print(json.dumps({"name": q["name"], "count": count, "seconds": best, "cpu_seconds": best_cpu,
                          "empty_seconds": best_empty}), flush=True)


if __name__ == "__main__":
    main()
