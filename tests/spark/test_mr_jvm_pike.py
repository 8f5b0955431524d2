"""The JVM's MATCH_RECOGNIZE matcher (io.cerql.mr.PikeMatcher, encoded by cerql/spark/mr_jvm_nfa.py)
against the numba kernel (cerql/exec/kernel/pike.py) under AFTER MATCH SKIP PAST LAST ROW and TO
NEXT ROW: the same (start, end) per match, and its registers equal to what the kernel's labels give. Random patterns
with every operator (tests/exec/test_mr_pike.py's strategy), several partitions per py4j call
(``PikeMatcher.matchAll``), long partitions where pending starts pile up, and hand cases: the
reference cases of docs/semantics.md, anchors, the empty pattern, exclusion, reluctant
quantifiers, and matches handed out while rows are still coming."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql import mr_ast as M
from cerql.exec.kernel.pike import match_partition
from cerql.mr_plan import PAST_LAST_ROW, TO_NEXT_ROW, Skip
from cerql.planner.mr_compile import compile_pattern
from cerql.spark.mr_jvm_nfa import CLASSIFIER, COUNT, FIRST, LAST, Register, nfa_spec, register_spec
from tests.exec.test_mr_pike import NAMES, A, B, C, alt, cat, depth, patterns, q, reference_bits

pytestmark = pytest.mark.spark

MATCHER = "io.cerql.mr.PikeMatcher"


@pytest.fixture(scope="module")
def match_all(spark):
    """``PikeMatcher.matchAll`` as a Python function: lines "partition start end reg..." split;
    without ``skip``, the variant without the mode (PAST LAST ROW)."""
    from cerql.spark import jvm

    gateway = spark.sparkContext._gateway
    cls = gateway.jvm.java.lang.Class.forName(MATCHER, True, jvm.class_loader(spark))
    methods = {m.getParameterCount(): m for m in cls.getMethods() if m.getName() == "matchAll"}

    def run(nfa, registers, partitions, skip=None):
        args = gateway.new_array(gateway.jvm.java.lang.Object, 4 if skip is None else 5)
        args[0] = nfa_spec(nfa)
        args[1] = register_spec(registers)
        args[2] = " ".join(str(b) for part in partitions for b in part)
        args[3] = " ".join(str(len(part)) for part in partitions)
        if skip is not None:
            args[4] = skip
        return [line.split() for line in methods[len(args)].invoke(None, args).splitlines()]

    return run


def expected(nfa, registers, partitions, skip=PAST_LAST_ROW):
    """The kernel's matches of each partition, as matchAll's lines, the registers computed from
    the kernel's labels (a row's value is its index in the partition)."""
    n_vars = len(nfa.variables)
    lines = []
    for part, bits in enumerate(partitions):
        got = match_partition(nfa, np.array(bits, dtype=np.uint64), Skip(skip))
        k = 0
        for s, e in zip(got.starts.tolist(), got.ends.tolist()):
            rows = [(s + j, lab % n_vars) for j, lab in enumerate(got.labels[k:k + e - s].tolist())]
            k += e - s
            lines.append([str(part), str(s), str(e), *(_register(r, rows) for r in registers)])
    return lines


def _register(reg, rows):
    """A register over a match's (row, variable) pairs, printed as Java prints it."""
    hits = [(row, v) for row, v in rows if reg.mask >> v & 1]
    if reg.kind == COUNT:
        return str(len(hits))
    if not hits:
        return "null"
    row, v = hits[0] if reg.kind == FIRST else hits[-1]
    return str(v if reg.kind == CLASSIFIER else row)


def all_registers(masks):
    return [Register(kind, mask, 0 if kind in (FIRST, LAST) else -1)
            for mask in masks for kind in (FIRST, LAST, COUNT, CLASSIFIER)]


def _variables(pattern, n_vars):
    variables = NAMES[:n_vars]
    return variables if set(M.pattern_variables(pattern)) <= set(variables) else NAMES


# ----------------------------------------------------------------------------- differential
@pytest.mark.parametrize("skip", [PAST_LAST_ROW, TO_NEXT_ROW])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(NAMES), n_vars=st.integers(1, 3),
       partitions=st.lists(st.lists(st.integers(0, 7), max_size=12), min_size=1, max_size=5),
       masks=st.lists(st.integers(0, 7), min_size=1, max_size=3))
def test_jvm_matcher_agrees_with_the_kernel(match_all, skip, pattern, n_vars, partitions, masks):
    """Both modes the JVM takes; TO NEXT ROW has overlapping matches, the search restarted (and
    the rows replayed) after each."""
    if depth(pattern) > 4:
        return
    variables = _variables(pattern, n_vars)
    nfa = compile_pattern(pattern, variables)
    full = (1 << len(variables)) - 1
    partitions = [[b & full for b in part] for part in partitions]
    registers = all_registers([m & full for m in masks])
    assert match_all(nfa, registers, partitions, skip) == expected(nfa, registers, partitions, skip)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(NAMES), seed=st.integers(0, 2**32 - 1), density=st.sampled_from([0.3, 0.6, 0.9]),
       skip=st.sampled_from([PAST_LAST_ROW, TO_NEXT_ROW]))
def test_long_partitions_agree_with_the_kernel(match_all, pattern, seed, density, skip):
    # hundreds of rows: long matches, starts left pending behind a start still running
    if depth(pattern) > 4:
        return
    rng = random.Random(seed)
    nfa = compile_pattern(pattern, NAMES)
    partitions = [[sum(1 << v for v in range(3) if rng.random() < density) for _ in range(rng.randint(0, 400))]
                  for _ in range(3)]
    registers = all_registers([1, 6, 7])
    assert match_all(nfa, registers, partitions, skip) == expected(nfa, registers, partitions, skip)


def test_pending_matches_behind_a_running_start(match_all):
    # A+ Z | B: the start at row 0 runs (A+) to the end without a Z, while every later B row
    # matches alone and waits for it; A+ Z | B C: the later starts die, and are forgotten
    rows = [1] + [3] * 3000
    for second in (B, cat(B, C)):
        nfa = compile_pattern(alt(cat(q(A, 1), M.PatternVar("E")), second), ("A", "B", "C", "E"))
        registers = all_registers([2])
        got = match_all(nfa, registers, [rows, rows + [8]])
        assert got == expected(nfa, registers, [rows, rows + [8]])
    assert len(got) == 1 and got[0][:3] == ["1", "0", str(len(rows) + 1)]


# ----------------------------------------------------------------------------- hand cases
REFERENCE = [  # docs/semantics.md's reference cases under PAST LAST ROW (tests/exec/test_mr_pike.py)
    (cat(A, q(B, 1), q(C, 1)), [["0", "0", "5", "2", "0", "4"], ["0", "5", "8", "1", "5", "7"]]),
    (cat(A, q(B, 1, None, False), q(C, 1, None, False)),
     [["0", "0", "4", "2", "0", "3"], ["0", "4", "8", "2", "4", "7"]]),
    (cat(q(alt(A, B), 0), C), [["0", "0", "8", "0", "0", "7"]]),
]


@pytest.mark.parametrize("pattern, lines", REFERENCE)
def test_reference_cases(match_all, pattern, lines):
    # registers: how many B rows, the first row, the last C row
    nfa = compile_pattern(pattern, ("A", "B", "C"))
    registers = [Register(COUNT, 0b010), Register(FIRST, 0b111, 0), Register(LAST, 0b100, 0)]
    assert match_all(nfa, registers, [reference_bits()]) == lines
    assert expected(nfa, registers, [reference_bits()]) == lines


def test_anchors(match_all):
    cls = [Register(CLASSIFIER, 1)]
    assert match_all(compile_pattern(cat(M.Anchor(True), A), ("A",)), cls, [[1, 1, 1], [1]]) == \
        [["0", "0", "1", "0"], ["1", "0", "1", "0"]]
    assert match_all(compile_pattern(cat(A, M.Anchor(False)), ("A",)), cls, [[1, 1, 1], [], [1]]) == \
        [["0", "2", "3", "0"], ["2", "0", "1", "0"]]
    both = compile_pattern(cat(M.Anchor(True), q(A, 0), M.Anchor(False)), ("A",))
    assert match_all(both, cls, [[1, 0, 1], [1, 1], []]) == [["1", "0", "2", "0"]]
    # ^ $ alone: the empty match of an empty partition is no match (there is no start row)
    assert match_all(compile_pattern(cat(M.Anchor(True), M.Anchor(False)), ("A",)), cls, [[], [0]]) == []


def test_empty_pattern_matches_empty_at_every_row(match_all):
    registers = all_registers([1])
    assert match_all(compile_pattern(M.EmptyPattern(), ("A",)), registers, [[0, 1, 0], []]) == \
        [["0", str(i), str(i), "null", "null", "0", "null"] for i in range(3)]


def test_exclusion_rows_count_in_registers(match_all):
    # A {- B+ -} C over A B B C: the excluded B rows are in the match and its registers
    nfa = compile_pattern(cat(A, M.Exclusion(q(B, 1)), C), ("A", "B", "C"))
    registers = [Register(COUNT, 0b010), Register(LAST, 0b010, 0), Register(CLASSIFIER, 0b111)]
    assert match_all(nfa, registers, [[1, 2, 2, 4]]) == [["0", "0", "4", "2", "2", "2"]]


def test_reluctant_quantifiers(match_all):
    registers = [Register(COUNT, 1)]
    assert match_all(compile_pattern(q(A, 1, None, False), ("A",)), registers, [[1, 1, 1]]) == \
        [["0", str(i), str(i + 1), "1"] for i in range(3)]
    # (A??)*: the first iteration's preferred way maps no row, which ends the loop
    assert match_all(compile_pattern(q(q(A, 0, 1, False), 0), ("A",)), registers, [[1, 1]]) == \
        [["0", "0", "0", "0"], ["0", "1", "1", "0"]]
    # A+? B* over A B B A: the reluctant A takes one row, the greedy B* both B rows
    nfa = compile_pattern(cat(q(A, 1, None, False), q(B, 0)), ("A", "B"))
    assert match_all(nfa, [Register(COUNT, 2)], [[1, 2, 2, 1]]) == [["0", "0", "3", "2"], ["0", "3", "4", "0"]]


def test_matches_are_handed_out_while_rows_come(spark):
    # A B over A B A B ...: each match is out by the row after its last, long before end()
    from cerql.spark import jvm

    nfa = compile_pattern(cat(A, B), ("A", "B"))
    m = jvm.new_instance(spark, MATCHER, nfa_spec(nfa), register_spec([Register(FIRST, 2, 0)]))
    values = spark.sparkContext._gateway.new_array(spark.sparkContext._gateway.jvm.java.lang.Object, 1)
    m.begin()
    seen = []
    for i in range(8):
        values[0] = i
        m.row(2 if i % 2 else 1, values)
        while m.hasMatch():
            seen.append((i, *m.nextMatch()))
    assert seen == [(2, 0, 2, 1), (4, 2, 4, 3), (6, 4, 6, 5)]
    m.end()
    assert tuple(m.nextMatch()) == (6, 8, 7)
    assert not m.hasMatch()


def test_bad_tables_are_refused(spark):
    from cerql.spark import jvm

    with pytest.raises(Exception, match="successor"):
        jvm.new_instance(spark, MATCHER, "2 1 0 1 -1 0 1 5 4 -1 15 0", "0")


def test_a_matcher_in_use_serializes(spark):
    # Spark ships the matcher to its executors with the task: its state within a partition is
    # transient, the tables are plain arrays
    from cerql.spark import jvm

    gateway = spark.sparkContext._gateway
    m = jvm.new_instance(spark, MATCHER, nfa_spec(compile_pattern(q(A, 1), ("A",))), register_spec([]))
    m.begin()
    m.row(1, gateway.new_array(gateway.jvm.java.lang.Object, 0))
    buffer = gateway.jvm.java.io.ByteArrayOutputStream()
    gateway.jvm.java.io.ObjectOutputStream(buffer).writeObject(m)
    assert buffer.size() > 0


# ----------------------------------------------------------------------------- TO NEXT ROW
def test_to_next_row_matches_overlap(match_all):
    # A+ over A A A: a match per start row, each running to the end
    registers = [Register(COUNT, 1), Register(FIRST, 1, 0)]
    assert match_all(compile_pattern(q(A, 1), ("A",)), registers, [[1, 1, 1]], TO_NEXT_ROW) == \
        [["0", "0", "3", "3", "0"], ["0", "1", "3", "2", "1"], ["0", "2", "3", "1", "2"]]


def test_to_next_row_replays_the_rows_after_a_start(match_all):
    # A* B over A A B: the thread of start 1 at A* after row 1 is dropped for start 0's in the
    # same state; only the restart at row 1 (its bits replayed) gives start 1 its match
    nfa = compile_pattern(cat(q(A, 0), B), ("A", "B"))
    registers = [Register(FIRST, 3, 0), Register(COUNT, 1)]
    got = match_all(nfa, registers, [[1, 1, 2], [2, 1, 2]], TO_NEXT_ROW)
    assert got == [["0", "0", "3", "0", "2"], ["0", "1", "3", "1", "1"], ["0", "2", "3", "2", "0"],
                   ["1", "0", "1", "0", "0"], ["1", "1", "3", "1", "1"], ["1", "2", "3", "2", "0"]]
    assert got == expected(nfa, registers, [[1, 1, 2], [2, 1, 2]], TO_NEXT_ROW)
    # PAST LAST ROW over the same rows: one match, the later starts inside it skipped
    assert [line[:3] for line in match_all(nfa, registers, [[1, 1, 2]], PAST_LAST_ROW)] == [["0", "0", "3"]]


def test_to_next_row_keeps_rows_only_from_the_first_undecided_start(spark):
    # A+ B over A A A A A B C: no start is decided before the B row's match ends, so the first
    # undecided start stays at row 0 (the span maxMatchRows bounds); then each start's match comes
    # out in turn, replayed from the kept rows, and nothing is left undecided
    from cerql.spark import jvm

    gateway = spark.sparkContext._gateway
    nfa = compile_pattern(cat(q(A, 1), B), ("A", "B"))
    m = jvm.new_instance(spark, MATCHER, nfa_spec(nfa), register_spec([Register(FIRST, 1, 0), Register(LAST, 2, 0)]),
                         TO_NEXT_ROW)
    values = gateway.new_array(gateway.jvm.java.lang.Object, 1)
    m.begin()
    for i, bits in enumerate([1, 1, 1, 1, 1, 2]):
        values[0] = f"v{i}"
        m.row(bits, values)
        assert not m.hasMatch() and m.undecidedFrom() == 0
    values[0] = "v6"
    m.row(0, values)
    got = []
    while m.hasMatch():
        got.append(tuple(m.nextMatch()))
    assert got == [(s, 6, f"v{s}", "v5") for s in range(5)]
    assert m.undecidedFrom() == 7
    m.end()
    assert not m.hasMatch()


def test_other_skip_modes_are_refused(spark):
    from cerql.spark import jvm

    nfa = nfa_spec(compile_pattern(A, ("A",)))
    with pytest.raises(Exception, match="AFTER MATCH SKIP mode 2"):
        jvm.new_instance(spark, MATCHER, nfa, "0", 2)
