"""The reference evaluator's own guards (cerql/exec/reference.py): it is brute force, for tests
on tiny inputs, but ``engine="reference"`` is public, so an input it cannot handle is
REFERENCE_INPUT_TOO_LARGE before it fills memory, never a MemoryError (issue 38: MAX A ; B+ ; C
over 20 A, 200 B, 20 C reached 18 GB)."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.exec import reference

QUERY = "SELECT MAX * FROM s WHERE A AS a ; B+ AS b ; C AS c ORDER BY ts"


def stream(a: int, b: int, c: int) -> pd.DataFrame:
    types = ["A"] * a + ["B"] * b + ["C"] * c
    return pd.DataFrame({"type": types, "ts": range(len(types))})


def test_a_closure_over_a_long_run_stops_at_the_label_budget(monkeypatch):
    """3 A, 16 B, 3 C (2^16 subsets of B, each joined again at every step) built 10M label
    entries in 7 s and 0.9 GB; a budget a hundredth of that stops the same way, at once."""
    monkeypatch.setattr(reference, "MAX_LABEL_WORK", reference.MAX_LABEL_WORK // 100)
    with pytest.raises(cerql.errors.ExecutionError) as err:
        cerql.run(QUERY, {"s": stream(3, 16, 3)}, engine="reference")
    assert err.value.error_class == "REFERENCE_INPUT_TOO_LARGE"
    assert "label entries" in err.value.message


def test_max_keeps_the_maximal_data_sets():
    """MAX compares each data set with the maximal ones found so far, largest first; the answer
    is the brute force one: every A, all B, every C."""
    got = cerql.run(QUERY, {"s": stream(3, 10, 3)}, engine="reference")
    assert len(got) == 9
    assert all(len(row) == 10 for row in got["b"])
    local = cerql.run(QUERY, {"s": stream(3, 10, 3)})
    assert sorted(got["match_id"]) == sorted(local["match_id"])
