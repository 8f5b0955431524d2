"""Rows that fire no transition but the TRUE gaps can be dropped before matching (Spark does so
before its shuffle, cerql/spark/lower.py ``kept_rows``) when the query does not count
positions: the results, compared on everything but match_id (which numbers rows), are the same
with and without those rows. Hypothesis draws the patterns, streams and clauses of the
engine-vs-reference tests."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given

import cerql
from cerql.exec import driver
from cerql.plan import ORDINAL_COLUMN
from cerql.exec.stream import firing_rows
from cerql.exec.bits import firing_masks
from tests.differential import plan_and_stream
from tests.generators import cases, derandomized, query_text, table_for
from tests.spark.compare import canonical_rows, local_records


def fired_rows(plan, stream) -> np.ndarray:
    """Source row indexes of the rows that fire some non-gap transition."""
    fire = firing_rows(driver.condition_bits(plan.automaton, stream), firing_masks(plan))
    return np.sort(stream.table.column(ORDINAL_COLUMN).to_numpy()[fire])


@derandomized(300)
@given(cases(strategies=["ALL", "ANY", "NEXT", "LAST", "MAX"]))
def test_dropping_rows_that_fire_nothing_keeps_the_results(case):
    query, df = case
    text = query_text(query)
    table = table_for(query, df)
    plan, stream = plan_and_stream(text, table)
    assume(firing_masks(plan) is not None)
    kept = table.take(fired_rows(plan, stream))
    try:
        full = cerql.run(text, {"s": table}, engine="local")
    except cerql.ExecutionError:
        assume(False)
    pruned = cerql.run(text, {"s": kept}, engine="local")
    assert canonical_rows(local_records(pruned)) == canonical_rows(local_records(full))
