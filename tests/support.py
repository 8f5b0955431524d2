"""Building small streams and reading results back, for tests of every package.

``typed_stream("A B A")`` writes a stream by its event types (ts = position), and
``match_sets(df)`` turns a result DataFrame into its sets D (the positions of the matched
events), so tests compare exact match sets. ``plan_of`` is the plan
cerql resolves for a query over one stream ``s``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cerql.api import analyze
from cerql.exec.stream import as_arrow
from cerql.planner.resolve import resolve

ENGINES = ["reference", "local"]  # the engines cerql.run has without Spark, the oracle first
MATCH_COLUMNS = ("match_id", "match_start", "match_end")

# Queries and a stream every surface must plan alike through the front door (cerql/planner/front.py):
# tests/planner/test_front.py without Spark, tests/spark/test_front_door.py on it.
FRONT_DOOR_QUERIES = (
    "SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts",
    "SELECT a, b FROM s WHERE A AS a ; B+ AS b FILTER b.v > a.v PARTITION BY [k] ORDER BY ts WITHIN 5 EVENTS",
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.k = a.k ORDER BY ts",
    "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.v + a.v > 3)+ ORDER BY ts",
    "SELECT a.v AS av, count(b) AS n FROM s WHERE A AS a ; B+ AS b FILTER sum(b.v) > 3 ORDER BY ts",
)
FRONT_DOOR_STREAM = pd.DataFrame({"type": list("ABABBAB"), "ts": range(7), "v": [1, 2, 3, 4, 5, 6, 7],
                       "k": [1, 1, 2, 2, 1, 1, 2]})


def explained_body(plan) -> str:
    """What ``explain`` prints of a plan after the query's header: the rules' choices and the
    automaton."""
    from cerql.api import _evaluation_lines

    return "\n".join(_evaluation_lines(plan.evaluation) + [plan.automaton.describe()])


def typed_stream(spec: str, **columns) -> pd.DataFrame:
    """``"A B A"`` -> rows of types A, B, A with ts = position (0, 1, 2) and extra columns."""
    types = spec.split()
    data = {"type": types, "ts": list(range(len(types)))}
    data.update({k: list(v) for k, v in columns.items()})
    return pd.DataFrame(data)


def positions(value, key: str = "ts") -> tuple:
    """The ``key`` values (positions by default) of the events in one result cell, as pandas
    gives a cell of cerql.run's Arrow-backed variable columns: a dict, a list of dicts (a NumPy
    array of them through ``iterrows``), or pd.NA for a variable left unbound; or as Spark's
    ``toPandas`` gives it (Rows, None)."""
    if value is None or value is pd.NA:
        return ()
    events = list(value) if isinstance(value, (list, np.ndarray)) else [value]
    return tuple(e[key] for e in events)


def match_sets(df: pd.DataFrame, columns=None, key: str = "ts") -> list[tuple[int, ...]]:
    """Sorted list of D (the union of selected positions, or of the events' ``key`` values) per
    result row."""
    columns = columns or [c for c in df.columns if c not in MATCH_COLUMNS]
    out = []
    for _, row in df.iterrows():
        d = set()
        for c in columns:
            d.update(positions(row[c], key))
        out.append(tuple(sorted(d)))
    return sorted(out)


def plan_of(query: str, df: pd.DataFrame):
    """The plan of ``query`` over ``df`` as the stream ``s``."""
    return resolve(analyze(query), {"s": as_arrow(df).schema})


def spy(monkeypatch, owner, name: str) -> list:
    """Every value ``owner.name`` (a function) returns while the test runs, in order; it still
    runs as before."""
    calls = []
    real = getattr(owner, name)

    def spying(*args, **kwargs):
        calls.append(real(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(owner, name, spying)
    return calls
