"""FILTER predicates across variables: the reference evaluator and the local engine.

A predicate over qualified columns (docs/semantics.md, "Predicates across variables") holds for
a valuation of the filtered pattern when it holds for every combination of the named variables'
events (x.col means each event of x, as in a bracket ``x[...]``); so vacuously when one of them
has no event, and never when it is NULL. Strategies, WITHIN and CONSUME BY then work on the
results that passed, because the filter is part of the pattern. Every expected set is derived by
hand in the comment above it, and each case also runs on the local engine, which must give the
same rows (exec/post_filter.py). Positions = ts.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given

import cerql
from tests.differential import check_any, check_same, plan_and_stream, run_local, run_reference, same_rows_as_reference
from tests.generators import cross_cases, derandomized, query_text, table_for
from tests.spark.compare import canonical_rows, local_records, spark_records
from tests.support import match_sets, positions, typed_stream


def run(spec: str, query: str, **columns):
    """The reference evaluator's results, after checking that the local engine gives the same."""
    table = {"s": typed_stream(spec, **columns)}
    ref = cerql.run(query, table, engine="reference")
    local = cerql.run(query, table, engine="local")
    assert ref.drop(columns="match_id").to_dict("records") == local.drop(columns="match_id").to_dict("records")
    assert list(ref["match_id"]) == list(local["match_id"])
    return ref


def test_later_event_compared_with_earlier_one():
    # a = 0 (x 1); b in {1 (x 0), 2 (x 2)}: only b = 2 has x > 1
    out = run("A B B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x ORDER BY ts", x=[1, 0, 2])
    assert match_sets(out) == [(0, 2)]


def test_set_variable_is_quantified_for_all_its_events():
    # b+ ranges over non-empty subsets of {1, 2, 3}; every b must have x > a.x = 1, so b ⊆ {1, 3}
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER b.x > a.x ORDER BY ts", x=[1, 2, 0, 3])
    assert match_sets(out) == [(0, 1), (0, 1, 3), (0, 3)]


def test_every_pair_of_two_set_variables():
    # a+ ⊆ {0, 1}, b+ ⊆ {2, 3}; need every a.x < every b.x: x = 1, 5, 6, 3.
    # a = {0}: b any of {2}, {3}, {2,3} (1 < 6, 1 < 3); a = {1} (5): b = {2} only; a = {0,1}: b = {2}
    out = run("A A B B", "SELECT * FROM s WHERE A+ AS a ; B+ AS b FILTER a.x < b.x ORDER BY ts",
              x=[1, 5, 6, 3])
    assert match_sets(out) == [(0, 1, 2), (0, 2), (0, 2, 3), (0, 3), (1, 2)]


def test_three_variables_and_arithmetic():
    # a=0 (x 1), b in {1 (x 5), 3 (x 2)}, c = 4 (x 4): need c.x - a.x < b.x, i.e. 3 < b.x: b = 1
    out = run("A B C B C", "SELECT * FROM s WHERE A AS a ; B AS b ; C AS c FILTER c.x - a.x < b.x AND c.ts > 3 "
              "ORDER BY ts", x=[1, 5, 9, 2, 4])
    assert match_sets(out) == [(0, 1, 4)]


def test_null_fails_the_predicate():
    out = run("A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x ORDER BY ts", x=[None, 1])
    assert match_sets(out) == []


def test_unbound_variable_makes_it_vacuously_true():
    # the left branch needs b.x > a.x (fails: 0 < 1); the right one binds neither a nor b
    out = run("A B C", "SELECT * FROM s WHERE (A AS a ; B AS b) OR C AS c FILTER b.x > a.x ORDER BY ts",
              x=[1, 0, 7])
    assert match_sets(out) == [(2,)]


def test_filter_applies_to_its_subpattern_only():
    # inside: a ; b with b.x > a.x (pairs (0,1) x 1<2 yes, (0,3) 1<0 no); then any C after
    out = run("A B C B C", "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x) ; C AS c ORDER BY ts",
              x=[1, 2, 0, 0, 0])
    assert match_sets(out) == [(0, 1, 2), (0, 1, 4)]


def test_or_between_a_bracket_and_a_cross_predicate():
    # pairs (a, b): (0,1) x 1,2 ; (0,2) x 1,0 ; need b.x > a.x OR b[x = 0]: both pass
    out = run("A B B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x OR b[x = 0] ORDER BY ts",
              x=[1, 2, 0])
    assert match_sets(out) == [(0, 1), (0, 2)]


def test_event_type_names_qualify_columns_too():
    out = run("A B B", "SELECT * FROM s WHERE A ; B FILTER B.x > A.x ORDER BY ts", x=[1, 0, 2])
    assert match_sets(out) == [(0, 2)]


@pytest.mark.parametrize("strategy, expected", [
    # candidates per end: end 1 has (0,1) [x 1<3] and... ALL: (0,1), (0,3), (2,3) need b.x > a.x:
    # x = 1, 3, 5, 4: (0,1) 3>1 yes, (0,3) 4>1 yes, (2,3) 4>5 no
    ("ALL", [(0, 1), (0, 3)]),
    # NEXT per end among the results that pass: end 1 -> (0,1); end 3 -> (0,3) only
    ("NEXT", [(0, 1), (0, 3)]),
    # LAST per end: end 3 would pick (2,3) without the filter; with it only (0,3) is left
    ("LAST", [(0, 1), (0, 3)]),
    # STRICT: contiguous D only: (0,1)
    ("STRICT", [(0, 1)]),
])
def test_strategies_choose_among_results_that_pass(strategy, expected):
    select = "" if strategy == "ALL" else strategy + " "
    out = run("A B A B", f"SELECT {select}* FROM s WHERE A AS a ; B AS b FILTER b.x > a.x ORDER BY ts",
              x=[1, 3, 5, 4])
    assert match_sets(out) == expected


def test_consume_by_any_counts_only_results_that_pass():
    # without the filter (0,1) would consume 0 and 1; it fails (x 5 > 2 no), so (0,3)... x = 5,2,1,9:
    # end 1: (0,1) 2>5 no. end 3: (0,3) 9>5 yes, (2,3) 9>1 yes -> both, then consumed
    out = run("A B A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x ORDER BY ts CONSUME BY ANY",
              x=[5, 2, 1, 9])
    assert match_sets(out) == [(0, 3), (2, 3)]


def test_window_and_partition_keep_working():
    # partition by k: k=0 rows 0,1,4 ; k=1 rows 2,3. WITHIN 2 [ts] and b.x > a.x
    out = run("A B A B B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x > a.x PARTITION BY [k] "
              "WITHIN 2 [ts]", x=[1, 2, 3, 4, 0], k=[0, 0, 1, 1, 0])
    # k=0: (0,1) 2>1 within 1 yes; (0,4) within 4 no. k=1: (2,3) 4>3 yes
    assert sorted(match_sets(out, ["a", "b"])) == [(0, 1), (2, 3)]


def test_aggregate_over_a_kleene_variable():
    # b+ ⊆ {1, 2, 3} with x = 5, 2, 9: sum(b.x) > 10 for {1,3} 14, {2,3} 11, {1,2,3} 16
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER sum(b.x) > 10 ORDER BY ts", x=[1, 5, 2, 9])
    assert match_sets(out) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]


def test_aggregate_against_a_single_event():
    # avg(b.x) > 4 * a.x = 4 with x = 5, 2, 9: {1} 5, {3} 9, {1,3} 7, {2,3} 5.5, {1,2,3} 5.33 pass;
    # {2} 2 and {1,2} 3.5 do not
    out = run("A B B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) >= 1 AND avg(b.x) > a.x * 4 "
              "ORDER BY ts", x=[1, 5, 2, 9])
    assert match_sets(out) == [(0, 1), (0, 1, 2, 3), (0, 1, 3), (0, 2, 3), (0, 3)]


def test_an_aggregate_that_and_never_reads_raises_nothing():
    # b = {1, 2} sums past BIGINT, but count(b) < 1.5 is false there first: AND never asks for
    # that sum, so neither engine raises ARITHMETIC_OVERFLOW; the single B's pass. ``+ 0`` keeps
    # both FILTERs out of the registers, so the local engine checks the candidates together (all
    # sums at once) and must fall back to one at a time when one of them fails
    out = run("A B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER count(b) < 1.5 + 0 AND sum(b.x) > 0.5 + 0 "
              "ORDER BY ts", x=[0, 2**62, 2**62])
    assert match_sets(out) == [(0, 1), (0, 2)]
    with pytest.raises(cerql.CeqlError, match="ARITHMETIC_OVERFLOW"):
        run("A B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER sum(b.x) > 0.5 + 0 ORDER BY ts",
            x=[0, 2**62, 2**62])


def test_aggregate_skips_nulls_and_is_null_on_no_rows():
    # b = {1} (NULL): sum NULL -> false; {2} (3) passes; {1, 2}: sum 3 passes
    out = run("A B B", "SELECT * FROM s WHERE A AS a ; B+ AS b FILTER sum(b.x) >= 3 ORDER BY ts", x=[0, None, 3])
    assert match_sets(out) == [(0, 1, 2), (0, 2)]


def test_aggregate_filter_in_one_or_branch_leaves_the_other_alone():
    # left: b = all three B's only (count 3); right: every C
    out = run("A B B B C", "SELECT * FROM s WHERE (A AS a ; B+ AS b FILTER count(b) = 3) OR C AS c ORDER BY ts",
              x=[1, 5, 2, 9, 0])
    assert match_sets(out) == [(0, 1, 2, 3), (4,)]


def test_constant_predicate_without_columns():
    assert match_sets(run("A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER 1 = 2 ORDER BY ts")) == []
    assert match_sets(run("A B", "SELECT * FROM s WHERE A AS a ; B AS b FILTER 1 = 1 ORDER BY ts")) == [(0, 1)]


def test_filter_under_plus_holds_on_each_repetition():
    query = "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x)+ ORDER BY ts"
    # each repetition is filtered on its own: pairs (0,1) 2>1, (0,3) 4>1, (2,3) 4>3 pass; then any
    # sequence of them. (0,1,2,3) passes although b = 1 (x 2) is below a = 2 (x 3): they are in
    # different repetitions, so the FILTER never compares them
    assert match_sets(run("A B A B", query, x=[1, 2, 3, 4])) == [(0, 1), (0, 1, 2, 3), (0, 3), (2, 3)]


def test_aggregate_filter_under_contiguous_plus_counts_each_repetition():
    # repetitions a : b-run with two or more b: (0,{1,2}) passes, (0,{1}) and (3,{4}) do not, so
    # the run cannot go on at 3 (a count over the union {1, 2, 4} would have kept (0..4))
    query = "SELECT * FROM s WHERE (A AS a : (B :+ AS b) FILTER count(b) >= 2) :+ ORDER BY ts"
    assert match_sets(run("A B B A B", query)) == [(0, 1, 2)]
    # with a second B at 5 the second repetition passes too, and the two follow one another
    assert match_sets(run("A B B A B B", query)) == [(0, 1, 2), (0, 1, 2, 3, 4, 5), (3, 4, 5)]


def test_filter_under_plus_passes_when_one_split_into_repetitions_does():
    # b = {0, 1, 2, 3} is one repetition (x 1 1 2 2: not all equal), or [0 1][2 3], which
    # passes, or splits with a single-event part (count 1): it is a result through [0 1][2 3] alone
    query = ("SELECT * FROM s WHERE (B+ AS b FILTER count(b) >= 2 AND max(b.x) = min(b.x))+ ORDER BY ts")
    assert match_sets(run("B B B B", query, x=[1, 1, 2, 2])) == [(0, 1), (0, 1, 2, 3), (2, 3)]


def test_variable_bound_again_outside_the_filter():
    # inside: (0,1) 2>1 and (0,3) 4>1 and (2,3) 4>3 pass; then A AS a after: only A at 2 after (0,1).
    # The filter sees its own a = {0}, not the result's a = {0, 2} (2 > 3 would fail)
    out = run("A B A B", "SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x) ; A AS a ORDER BY ts",
              x=[1, 2, 3, 4])
    assert match_sets(out) == [(0, 1, 2)]


# Issue 15: an AS around a FILTER binds again a variable the FILTER reads. The FILTER holds on
# its own valuation (docs/semantics.md, "Predicates across variables"), where the variable has
# only the events the FILTER's pattern gives it; the result's labels add the AS's events. On
# A@0 A@1 the FILTER's own a is {0} (c = {1}): 0 < 1, count(a) = 1 and max(a.ts) = 0 all hold,
# then the AS gives a = {0, 1}. Read from the result's a = {0, 1}, all three fail (the bug: no
# row). One result, D = {0, 1} contiguous, so every strategy keeps it.
STRATEGY_NAMES = ["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]
REBOUND = [("((A AS a ; A AS c) FILTER a.ts < c.ts) AS a", {"a": [0, 1], "c": [1]}),
           ("((A AS a ; A) FILTER count(a) = 1) AS a", {"a": [0, 1]}),
           ("((A AS a ; A) FILTER max(a.ts) = 0) AS a", {"a": [0, 1]})]


def shown_positions(out) -> list[dict]:
    return [{"start": r["match_start"], "end": r["match_end"],
             **{c: list(positions(r[c])) for c in out.columns if c not in ("match_id", "match_start", "match_end")}}
            for r in out.to_dict("records")]


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("pattern, expected", REBOUND)
def test_filter_under_an_as_of_its_own_variable_reads_its_own_valuation(pattern, expected, strategy):
    out = run("A A", f"SELECT {strategy} * FROM s WHERE {pattern} ORDER BY ts")
    assert shown_positions(out) == [{"start": 0, "end": 1, **expected}]


def test_filter_under_an_as_named_like_an_event_type():
    # inside, A = {0} (the type variable): count(A) = 1 holds; the AS around makes A = {0, 1}.
    # On A B A: (0, 1) only (the FILTER's pattern is A ; B); with count(A) = 2 nothing
    out = run("A B A", "SELECT * FROM s WHERE ((A ; B) FILTER count(A) = 1) AS A ORDER BY ts")
    assert shown_positions(out) == [{"start": 0, "end": 1, "A": [0, 1]}]
    assert run("A B A", "SELECT * FROM s WHERE ((A ; B) FILTER count(A) = 2) AS A ORDER BY ts").empty


def test_filters_bound_again_at_two_levels():
    # inner FILTER: its own a = {0} and c = {1}, x 1 < 2 holds. The middle AS a makes a = {0, 1}; the
    # outer FILTER's pattern is that ; A AS a, so its own a = {0, 1, 2} (x 1, 2, 0) and
    # count(a) = 3 holds; the outer AS a adds nothing new. A check on a's events of the whole
    # result would fail the inner FILTER (2 < 2)
    query = ("SELECT * FROM s WHERE (((A AS a ; A AS c) FILTER a.x < c.x) AS a ; A AS a FILTER count(a) = 3) "
             "AS a ORDER BY ts")
    out = run("A A A", query, x=[1, 2, 0])
    assert shown_positions(out) == [{"start": 0, "end": 2, "a": [0, 1, 2], "c": [1]}]


def test_filter_bound_again_under_plus_and_a_filter_over_the_whole_pattern():
    # each repetition (A AS a ; A AS c) with a.x < c.x (own a only), bound again by AS a; the whole
    # pattern's FILTER counts the result's a (every event, both repetitions): count(a) = 4 is only
    # the two repetitions (0,1)(2,3) (x 0 < 1, 0 < 1); (0,1) alone or (2,3) alone have count 2
    query = "SELECT * FROM s WHERE (((A AS a ; A AS c) FILTER a.x < c.x) AS a)+ FILTER count(a) = 4 ORDER BY ts"
    out = run("A A A A", query, x=[0, 1, 0, 1])
    assert shown_positions(out) == [{"start": 0, "end": 3, "a": [0, 1, 2, 3], "c": [1, 3]}]


@pytest.mark.spark
@pytest.mark.parametrize("pattern, expected", REBOUND)
def test_filter_under_an_as_of_its_own_variable_on_spark(spark, pattern, expected):
    # the results the local engine gives (the reference's, which ``run`` checks), among them (0, 1)
    for strategy in ("ALL", "MAX"):
        query = f"SELECT {strategy} * FROM s WHERE {pattern} ORDER BY ts"
        local = run("A A B A A", query)
        assert shown_positions(local)[0] == {"start": 0, "end": 1, **expected}
        on_spark = cerql.cer_sql(spark, query, s=spark.createDataFrame(typed_stream("A A B A A")))
        assert canonical_rows(spark_records(on_spark)) == canonical_rows(local_records(local))


def test_explain_says_who_evaluates_it():
    text = cerql.explain("SELECT * FROM s WHERE A AS a ; B AS b FILTER b.x + a.x > 3")
    assert "b.x + a.x > 3" in text and "checked on each enumerated result" in text
    repeated = cerql.explain("SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x + a.x > 3)+")
    assert "under + or :+ is checked on each repetition" in repeated and "__cerql_filter0_first" in repeated
    registers = cerql.explain("SELECT * FROM s WHERE (A AS a ; B AS b FILTER b.x > a.x)+")
    assert "b.x > a.x under + or :+ hold(s) in each repetition" in registers
    assert "__cerql_repeat0_first" in registers and "__cerql_filter0" not in registers


# ------------------------------------------------------------- local engine = reference, at random
# Random patterns under a FILTER that mixes brackets and predicates across variables, on random
# streams, every strategy, window and CONSUME BY: the local engine (the relaxed automaton's
# results, filtered) gives the reference evaluator's results, or both fail alike; a FILTER under
# + or :+ is checked on each repetition, which the relaxed automaton marks (the queries:
# tests/generators.py, cross_cases).


@derandomized(800)
@given(cross_cases())
def test_local_engine_gives_the_reference_results_with_cross_predicates(case):
    query, df = case
    text = query_text(query)
    plan, stream = plan_and_stream(text, table_for(query, df))
    if plan.join_columns:  # the oracle must check the equalities itself, on its own substreams
        event("equalities run as partitioning")
        same_rows_as_reference(text, table_for(query, df))
        return
    ref = run_reference(plan, stream)
    event("filtered per repetition (under +)" if any(pf.first for pf in plan.post_filters) else
          "filtered by the automaton engine" if plan.post_filters else "checked by the automaton alone")
    if plan.registers:
        event("registers: " + ("prune before the filter" if plan.post_filters else "the whole check"))
    loc = run_local(plan, stream, batch_size=5)
    if not plan.post_filters and query[1] == "ANY":  # registers alone: the kernel's own ANY
        check_any(text, table_for(query, df), stream, ref, loc)
    else:
        check_same(text, stream, ref, loc)
