"""The evaluation choices of planner/rules.py: one rule per choice, run in the order of RULES,
each a pure function of the evaluation so far and the catalog."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

import cerql
from cerql.plan import Evaluation, PostFilter
from cerql.planner import rules
from cerql.planner.resolve import resolve

SCHEMA = pa.schema([("type", pa.string()), ("ts", pa.int64()), ("id", pa.int64()), ("v", pa.int64()),
                    ("n", pa.string())])


def start(text: str) -> Evaluation:
    return rules.start(cerql.analyze(text))


def test_rules_run_in_the_documented_order():
    assert rules.RULES == (rules.partition_on_equalities, rules.check_with_registers, rules.registers_alone,
                           rules.automaton_and_post_filters)


def test_each_rule_returns_a_new_evaluation_and_leaves_its_input_alone():
    ev = start("SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id AND y.v > x.v ORDER BY ts")
    before = dataclasses.replace(ev)
    for rule in rules.RULES:
        after = rule(ev, rules.NAMES_AS_WRITTEN)
        assert ev == before
        ev = before = after
    assert ev.join_columns == ("id",) and [c.text for c in ev.registers] == ["y.v > x.v"]
    assert ev.automaton is not None and ev.post_filters == ()


def test_equalities_are_not_partitioning_when_the_query_counts_positions_or_consumes():
    for text in ("SELECT * FROM s WHERE (T AS x : H AS y) FILTER x.id = y.id ORDER BY ts",
                 "SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id ORDER BY ts CONSUME BY ANY"):
        ev = start(text)
        assert rules.partition_on_equalities(ev, rules.NAMES_AS_WRITTEN) is ev


def test_a_partition_by_column_is_not_a_hidden_key_again():
    ev = rules.partition_on_equalities(
        start("SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id PARTITION BY id ORDER BY ts"),
        rules.NAMES_AS_WRITTEN)
    assert ev.equality_columns == ("id",) and ev.join_columns == ()


def test_registers_alone_leave_nothing_to_filter():
    ev = rules.optimize(start("SELECT * FROM s WHERE A AS a ; B AS b FILTER b.v > a.v ORDER BY ts"),
                        rules.NAMES_AS_WRITTEN)
    assert [c.text for c in ev.registers] == ["b.v > a.v"] and ev.post_filters == ()
    assert not any(label.startswith("__cerql_filter") for label in ev.automaton.labels)


def test_an_unselected_variable_leaves_the_registers_to_prune_before_the_post_filter():
    ev = rules.optimize(start("SELECT a FROM s WHERE A AS a ; B AS b FILTER b.v > a.v ORDER BY ts"),
                        rules.NAMES_AS_WRITTEN)
    assert [c.text for c in ev.registers] == ["b.v > a.v"]
    labels = {"a": "a", "A": "A", "b": "b", "B": "B"}  # an event type is a variable too
    assert ev.post_filters == (PostFilter(ev.post_filters[0].filter, "__cerql_filter0", labels, None),)


def test_a_filter_under_plus_is_marked_per_repetition():
    """A FILTER under + that registers cannot check (both variables on one side) is
    post-filtered on each repetition, whose first event the relaxed automaton marks."""
    ev = rules.optimize(start("SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.v + a.v > 3)+ ORDER BY ts"),
                        rules.NAMES_AS_WRITTEN)
    (pf,) = ev.post_filters
    assert (pf.marker, pf.first) == ("__cerql_filter0", "__cerql_filter0_first")


def test_a_comparison_under_plus_is_a_register_reset_per_repetition():
    """``b.v > a.v`` under +: a register check, cleared at the first event of each repetition,
    which the plain automaton marks with the reset label (and no post-filter)."""
    ev = rules.optimize(start("SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.v > a.v)+ ORDER BY ts"),
                        rules.NAMES_AS_WRITTEN)
    assert ev.post_filters == ()
    assert [(c.text, c.reset) for c in ev.registers] == [("b.v > a.v", "__cerql_repeat0_first")]
    assert "__cerql_repeat0_first" in ev.automaton.labels


def test_the_catalog_decides_what_registers_can_check():
    text = "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.n > a.n ORDER BY ts"
    unresolved = rules.optimize(start(text), rules.NAMES_AS_WRITTEN)
    assert [c.text for c in unresolved.registers] == ["b.n > a.n"] and unresolved.post_filters == ()
    plan = resolve(cerql.analyze(text), {"s": SCHEMA})  # strings: left to the post-filter
    assert plan.registers == () and len(plan.post_filters) == 1


@pytest.mark.parametrize("text", [
    "SELECT * FROM s WHERE (T AS x ; H AS y) FILTER x.id = y.id AND y.v > x.v + 45 ORDER BY ts",
    "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) >= 3 ORDER BY ts",
    "SELECT * FROM s WHERE ((A AS a ; A AS c) FILTER a.ts < c.ts) AS a ORDER BY ts",
])
def test_resolve_records_what_the_rules_choose_with_numbers_everywhere(text):
    plan = resolve(cerql.analyze(text), {"s": SCHEMA})
    unresolved = rules.optimize(start(text), rules.NAMES_AS_WRITTEN)
    assert plan.join_columns == unresolved.join_columns
    assert [c.text for c in plan.registers] == [c.text for c in unresolved.registers]
    assert [(p.marker, dict(p.labels), p.first) for p in plan.post_filters] == \
        [(p.marker, dict(p.labels), p.first) for p in unresolved.post_filters]
    assert plan.automaton.describe() == unresolved.automaton.describe()
    assert plan.automaton.describe() in cerql.explain(text)
