"""The kernel's run key holds every register column (exec/kernel/registers.py ``run_key``): runs
meet only when their state and all MAX_REGISTERS checks agree, so a query using every check gives
the reference evaluator's results even when only the last check tells two runs apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cerql.plan import MAX_REGISTERS
from tests.differential import same_rows_as_reference
from tests.support import plan_of

# Four checks, the kernel's most; the last, max(b.w) > 1, is the only one on b's w column, so
# runs over the same b events but for w agree on the first three and differ on the last.
QUERY = ("SELECT * FROM s WHERE A AS a ; B+ AS b ; C AS c "
         "FILTER count(b) >= 1 AND a.v <= c.v AND min(b.v) >= 0 AND max(b.w) > 1 ORDER BY ts WITHIN 8 EVENTS")


def _stream(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 16
    return pd.DataFrame({"type": rng.choice(["A", "B", "B", "C"], n), "v": rng.integers(0, 4, n),
                         "w": rng.integers(0, 3, n), "ts": np.arange(n, dtype=float)})


def test_the_query_uses_every_register_and_the_last_is_its_own():
    plan = plan_of(QUERY, _stream(0))
    assert len(plan.registers) == MAX_REGISTERS == 4
    assert plan.registers[-1].aggregate == "max" and not plan.post_filters


@pytest.mark.parametrize("seed", range(40))
def test_runs_apart_on_the_last_register_give_the_reference_results(seed):
    same_rows_as_reference(QUERY, _stream(seed))
