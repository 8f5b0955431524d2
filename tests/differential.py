"""Running one query on the local engine and on the reference evaluator, and comparing them.

The reference evaluator (cerql/exec/reference.py) is the semantics (docs/language.md) written as
set operations; the property tests of tests/exec, tests/planner and tests/spark check the engines
against it. ``run_reference`` skips an input the oracle refuses as too large
(``REFERENCE_INPUT_TOO_LARGE``); both runners return the error class a query failed with, so an
error is compared like a result.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import assume

import cerql
from cerql.api import analyze
from cerql.errors import CeqlError, ExecutionError
from cerql.exec import driver, post_filter, reference
from cerql.exec.stream import build_stream
from cerql.plan import MAX_MATCHES_PER_EVENT
from cerql.planner.resolve import resolve

BATCH_SIZES = (1, 2, 3, 5, 7)
TOO_LARGE = "REFERENCE_INPUT_TOO_LARGE"
# The partial matches the oracle may build for one case before the case is skipped as too
# large: a tenth of its own limit. ALL under + over 14 events can build millions, 10-16 s a
# case on the oracle, where the engines answer at once; such cases say nothing the others
# do not, and a few of them were a minute of the suite.
ORACLE_BUDGET = reference.MAX_VALUATIONS // 10


def plan_and_stream(text: str, table: pa.Table, max_matches: int = MAX_MATCHES_PER_EVENT):
    """The plan of ``text`` with ``table`` as its source, and the stream built from it; a query
    the analyzer refuses is skipped."""
    try:
        analysis = analyze(text)
    except CeqlError:
        assume(False)
    plan = resolve(analysis, {"s": table.schema}, max_matches)
    return plan, build_stream(plan, {src.key: table for src in plan.sources})


def run_reference(plan, stream):
    """The oracle's results, or the error class it raised; inputs too large for it (past
    ``ORACLE_BUDGET`` partial matches) are skipped."""
    limit, reference.MAX_VALUATIONS = reference.MAX_VALUATIONS, ORACLE_BUDGET
    try:
        return reference.evaluate(plan, stream)
    except ExecutionError as err:
        assume(err.error_class != TOO_LARGE)
        return err.error_class
    finally:
        reference.MAX_VALUATIONS = limit


def run_local(plan, stream, batch_size: int = driver.DEFAULT_BATCH):
    """The local engine's results (through the post-filter when the plan has FILTERs it checks,
    as ``cerql.run`` does), or the error class it raised."""
    evaluate = post_filter.evaluate if plan.post_filters else driver.evaluate
    try:
        return evaluate(plan, stream, batch_size=batch_size)
    except ExecutionError as err:
        return err.error_class


def canonical(results) -> list[tuple]:
    """Results as sorted plain tuples (frozensets only order partially, so sort their items)."""
    return sorted((r.substream, r.start, r.end, tuple(sorted(r.labels, key=lambda l: (l[1], l[0]))))
                  for r in results)


def shown(results) -> str:
    """Results (or an error class) one per line, for assertion messages."""
    if isinstance(results, str):
        return results
    return "\n".join(f"  k={k} [{s},{e}] {list(labels)}" for k, s, e, labels in canonical(results)) or "  (none)"


def check_same(text, stream, ref, loc):
    """Both engines gave the same results, or failed with the same error class."""
    assert isinstance(ref, str) == isinstance(loc, str) and (
        ref == loc if isinstance(ref, str) else canonical(ref) == canonical(loc)
    ), f"{text}\nstream:\n{stream.table.to_pandas()}\nreference:\n{shown(ref)}\nlocal:\n{shown(loc)}"


def _outcome(text, df, engine):
    """The engine's rows for ``text`` over ``df``, or the error class it failed with."""
    try:
        return cerql.run(text, {"s": df}, engine=engine).to_dict("records")
    except ExecutionError as err:
        return err.error_class


def same_rows_as_reference(text: str, df) -> None:
    """The local engine's rows are the reference evaluator's (which ignores the hidden keys);
    under ANY, one row per end the reference has a row for, each a row of ALL."""
    ref = _outcome(text, df, "reference")
    if ref == TOO_LARGE:
        return
    local = _outcome(text, df, "local")
    if not text.startswith("SELECT ANY") or isinstance(ref, str):
        assert local == ref, f"{text}\n{df}"
        return
    ends = lambda rows: sorted((r.get("k"), r["match_end"]) for r in rows)  # noqa: E731  (k: PARTITION BY)
    assert ends(local) == ends(ref), f"{text}\n{df}"
    every = _outcome(text.replace("SELECT ANY", "SELECT ALL", 1), df, "reference")
    assert all(row in every for row in local), f"{text}\n{df}"


def check_any(text, table, stream, ref_any, loc_any):
    """Local ANY: one result per end, on the reference's ends, each a result of ALL."""
    if isinstance(ref_any, str) or isinstance(loc_any, str):
        # one result per end never exceeds a limit of 1 or more
        check_same(text, stream, ref_any, loc_any)
        return
    ends = [(r.substream, r.end) for r in loc_any]
    assert len(ends) == len(set(ends)), f"{text}\nANY gives two results for one end:\n{shown(loc_any)}"
    assert set(ends) == {(r.substream, r.end) for r in ref_any}, (
        f"{text}\nstream:\n{stream.table.to_pandas()}\nreference:\n{shown(ref_any)}\nlocal:\n{shown(loc_any)}")
    all_text = text.replace("SELECT ANY", "SELECT ALL", 1)
    plan_all, stream_all = plan_and_stream(all_text, table)
    ref_all = run_reference(plan_all, stream_all)
    assert not isinstance(ref_all, str)
    missing = set(loc_any) - set(ref_all)
    assert not missing, f"{text}\nANY results that ALL lacks:\n{shown(missing)}\nALL:\n{shown(ref_all)}"
