"""The MATCH_RECOGNIZE Pike-VM matcher (cerql/exec/kernel/pike.py) on the NFA of
cerql/planner/mr_compile.py, against docs/semantics.md's reference cases and a backtracking
matcher written here from the rules (preference order, empty iterations, AFTER MATCH SKIP)."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cerql import mr_ast as M
from cerql.errors import ExecutionError
from cerql.exec.kernel.pike import match_partition
from cerql.mr_plan import PAST_LAST_ROW, TO_FIRST, TO_LAST, TO_NEXT_ROW, Skip
from cerql.planner.mr_compile import compile_pattern

A, B, C, E, Y = (M.PatternVar(v) for v in "ABCEY")


def q(p, lo, hi=None, greedy=True):
    return M.Quantified(p, lo, hi, greedy)


def cat(*items):
    return M.Concat(tuple(items))


def alt(*options):
    return M.Alternation(tuple(options))


# ----------------------------------------------------------------------------- brute force
def _ways(node, pos, bits, index, n):
    """Every (end, labels) of ``node`` from ``pos``, in preference order (generator)."""
    if isinstance(node, M.PatternVar):
        if pos < n and bits[pos] >> index[node.name] & 1:
            yield pos + 1, [(node.name, False)]
    elif isinstance(node, M.EmptyPattern):
        yield pos, []
    elif isinstance(node, M.Anchor):
        if (pos == 0) if node.start else (pos == n):
            yield pos, []
    elif isinstance(node, M.Concat):
        yield from _seq(list(node.items), pos, bits, index, n)
    elif isinstance(node, M.Alternation):
        for option in node.options:
            yield from _ways(option, pos, bits, index, n)
    elif isinstance(node, M.Permute):
        for order in permutations(range(len(node.items))):
            yield from _seq([node.items[i] for i in order], pos, bits, index, n)
    elif isinstance(node, M.Exclusion):
        for end, labels in _ways(node.pattern, pos, bits, index, n):
            yield end, [(v, True) for v, _ in labels]
    elif isinstance(node, M.Quantified):
        yield from _repeat(node, 0, pos, bits, index, n)


def _seq(items, pos, bits, index, n):
    if not items:
        yield pos, []
        return
    for end, labels in _ways(items[0], pos, bits, index, n):
        for end2, labels2 in _seq(items[1:], end, bits, index, n):
            yield end2, labels + labels2


def _repeat(node, count, pos, bits, index, n):
    """Iterations ``count``+1... of a quantified group: the first ``min`` always run; an optional
    iteration that maps no row ends the loop."""
    def another():
        for end, labels in _ways(node.pattern, pos, bits, index, n):
            if count >= node.min and end == pos:
                yield end, labels
            else:
                for end2, labels2 in _repeat(node, count + 1, end, bits, index, n):
                    yield end2, labels + labels2

    if count < node.min:
        yield from another()
    elif node.max is not None and count >= node.max:
        yield pos, []
    elif node.greedy:
        yield from another()
        yield pos, []
    else:
        yield pos, []
        yield from another()


class SkipError(Exception):
    pass


def brute(pattern, variables, bits, skip):
    """[(start, end, [(variable, excluded)...])] by trying each start row in turn."""
    index = {v: i for i, v in enumerate(variables)}
    n = len(bits)
    out, s = [], 0
    while s < n:
        first = next(_ways(pattern, s, bits, index, n), None)
        if first is None:
            s += 1
            continue
        end, labels = first
        out.append((s, end, labels))
        if end == s:  # AFTER MATCH SKIP says where to resume after a non-empty match only
            s += 1
        elif skip.mode == PAST_LAST_ROW:
            s = end
        elif skip.mode == TO_NEXT_ROW:
            s += 1
        else:
            rows = [s + j for j, (v, _) in enumerate(labels) if skip.mask >> index[v] & 1]
            if not rows:
                raise SkipError(len(out))
            target = rows[0] if skip.mode == TO_FIRST else rows[-1]
            if target == s:
                raise SkipError(len(out))
            s = target
    return out


def kernel(pattern, variables, bits, skip):
    nfa = compile_pattern(pattern, variables)
    got = match_partition(nfa, np.array(bits, dtype=np.uint64), skip)
    out, k = [], 0
    for s, e in zip(got.starts.tolist(), got.ends.tolist()):
        labels = [(nfa.label_variable(x), nfa.label_excluded(x)) for x in got.labels[k:k + e - s].tolist()]
        out.append((s, e, labels))
        k += e - s
    assert k == len(got.labels)
    return out


def rows_out(matches):
    """As docs/semantics.md writes them: 1-based row:variable+match number."""
    return " ".join(f"{s + j + 1}:{v}{m}" for m, (s, e, labels) in enumerate(matches, 1)
                    for j, (v, _) in enumerate(labels))


# ----------------------------------------------------------------------------- reference cases
VALUES = [90, 80, 70, 80, 90, 50, 40, 60]


def reference_bits():
    """A (no DEFINE) always; B: value < previous; C: value > previous (NULL at row 1: false)."""
    bits = []
    for i, v in enumerate(VALUES):
        b = 1
        if i and v < VALUES[i - 1]:
            b |= 2
        if i and v > VALUES[i - 1]:
            b |= 4
        bits.append(b)
    return bits


REFERENCE = [
    (cat(A, q(B, 1), q(C, 1)), Skip(PAST_LAST_ROW),
     "1:A1 2:B1 3:B1 4:C1 5:C1 6:A2 7:B2 8:C2"),
    (cat(A, q(B, 1, None, False), q(C, 1, None, False)), Skip(PAST_LAST_ROW),
     "1:A1 2:B1 3:B1 4:C1 5:A2 6:B2 7:B2 8:C2"),
    (cat(A, q(B, 1), q(C, 1)), Skip(TO_NEXT_ROW),
     "1:A1 2:B1 3:B1 4:C1 5:C1 2:A2 3:B2 4:C2 5:C2 5:A3 6:B3 7:B3 8:C3 6:A4 7:B4 8:C4"),
    (cat(q(alt(A, B), 0), C), Skip(PAST_LAST_ROW),
     "1:A1 2:A1 3:A1 4:A1 5:A1 6:A1 7:A1 8:C1"),
    (cat(A, q(B, 0), q(C, 0, 1)), Skip(TO_NEXT_ROW),
     "1:A1 2:B1 3:B1 4:C1 2:A2 3:B2 4:C2 3:A3 4:C3 4:A4 5:C4 5:A5 6:B5 7:B5 8:C5 6:A6 7:B6 8:C6 "
     "7:A7 8:C7 8:A8"),
]


@pytest.mark.parametrize("pattern, skip, expected", REFERENCE)
def test_reference_cases(pattern, skip, expected):
    assert rows_out(kernel(pattern, ("A", "B", "C"), reference_bits(), skip)) == expected
    assert rows_out(brute(pattern, ("A", "B", "C"), reference_bits(), skip)) == expected


# ----------------------------------------------------------------------------- corners
def labels_of(matches):
    return [(s, e, "".join(v.lower() if x else v for v, x in labels)) for s, e, labels in matches]


def test_greedy_star_gives_back_the_last_row():
    # A* A over three A rows: the star takes two, the last A the third
    assert labels_of(kernel(cat(q(A, 0), A), ("A",), [1, 1, 1], Skip())) == [(0, 3, "AAA")]


def test_reluctant_plus_alone_maps_one_row():
    assert labels_of(kernel(q(A, 1, None, False), ("A",), [1, 1, 1], Skip())) == \
        [(0, 1, "A"), (1, 2, "A"), (2, 3, "A")]


def test_optional_in_a_star_ends_at_an_empty_iteration():
    # (A?)* over A A x A: two rows, then an empty match at the x row, then the last A
    assert labels_of(kernel(q(q(A, 0, 1), 0), ("A",), [1, 1, 0, 1], Skip())) == \
        [(0, 2, "AA"), (2, 2, ""), (3, 4, "A")]


def test_reluctant_optional_in_a_greedy_star_prefers_the_empty_iteration():
    # (A??)*: the first iteration's preferred way maps no row, which ends the loop
    assert labels_of(kernel(q(q(A, 0, 1, False), 0), ("A",), [1, 1], Skip())) == [(0, 0, ""), (1, 1, "")]


def test_empty_iterations_before_the_minimum():
    # (E?){2,} Y: rows without E still match through empty iterations
    variables = ("E", "Y")
    pattern = cat(q(q(E, 0, 1), 2), Y)
    assert labels_of(kernel(pattern, variables, [2, 1, 1, 3, 2], Skip())) == [(0, 1, "Y"), (1, 5, "EEEY")]
    assert kernel(pattern, variables, [2, 1, 1, 3, 2], Skip()) == brute(pattern, variables, [2, 1, 1, 3, 2], Skip())


def test_permute_prefers_the_lexicographic_order():
    # every row satisfies A, B and C: the first permutation, A B C, wins
    assert labels_of(kernel(M.Permute((A, B, C)), ("A", "B", "C"), [7, 7, 7], Skip())) == [(0, 3, "ABC")]
    # row 0 is only B: B A C is the first order that fits
    assert labels_of(kernel(M.Permute((A, B, C)), ("A", "B", "C"), [2, 7, 7], Skip())) == [(0, 3, "BAC")]
    # written C, A: C A before A C
    assert labels_of(kernel(M.Permute((C, A)), ("A", "C"), [3, 3], Skip())) == [(0, 2, "CA")]


def test_anchors():
    assert labels_of(kernel(cat(M.Anchor(True), A), ("A",), [1, 1, 1], Skip())) == [(0, 1, "A")]
    assert labels_of(kernel(cat(A, M.Anchor(False)), ("A",), [1, 1, 1], Skip())) == [(2, 3, "A")]
    assert labels_of(kernel(cat(M.Anchor(True), q(A, 0), M.Anchor(False)), ("A",), [1, 0, 1], Skip())) == []


def test_empty_pattern_matches_empty_at_every_row():
    assert labels_of(kernel(M.EmptyPattern(), ("A",), [0, 0, 0], Skip())) == [(0, 0, ""), (1, 1, ""), (2, 2, "")]
    assert labels_of(kernel(M.EmptyPattern(), ("A",), [], Skip())) == []


def test_exclusion_labels_its_rows():
    assert labels_of(kernel(cat(A, M.Exclusion(q(B, 1)), C), ("A", "B", "C"), [1, 2, 2, 4], Skip())) == \
        [(0, 4, "AbbC")]


def test_skip_to_a_variable_that_maps_no_row_is_an_error():
    with pytest.raises(ExecutionError) as err:
        kernel(cat(A, q(B, 0)), ("A", "B"), [1, 2, 1, 1], Skip(TO_LAST, 0b10, "B"))
    assert err.value.error_class == "AFTER_MATCH_SKIP_FAILED"
    assert "match 2" in str(err.value) and "maps no row to B" in str(err.value)


def test_skip_to_the_first_row_is_an_error():
    with pytest.raises(ExecutionError) as err:
        kernel(cat(A, B), ("A", "B"), [1, 2], Skip(TO_FIRST, 0b01, "A"))
    assert "match 1" in str(err.value) and "first row" in str(err.value)


def test_skip_to_last_and_first():
    # A B+ over A B B A B: TO LAST B resumes at the last B (row 2), which starts no match
    pattern, variables = cat(A, q(B, 1)), ("A", "B")
    bits = [1, 2, 2, 1, 2]
    assert labels_of(kernel(pattern, variables, bits, Skip(TO_LAST, 0b10, "B"))) == [(0, 3, "ABB"), (3, 5, "AB")]
    assert labels_of(kernel(pattern, variables, [1, 3, 3, 2], Skip(TO_FIRST, 0b10, "B"))) == \
        [(0, 4, "ABBB"), (1, 4, "ABB"), (2, 4, "AB")]


# ----------------------------------------------------------------------------- differential
NAMES = ("A", "B", "C")


def patterns(names):
    leaf = st.one_of(st.sampled_from([M.PatternVar(v) for v in names]),
                     st.just(M.EmptyPattern()), st.builds(M.Anchor, st.booleans()))

    def extend(inner):
        bounds = st.sampled_from([(0, None), (1, None), (0, 1), (2, None), (0, 2), (1, 2), (2, 2), (2, 3)])
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: M.Concat(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: M.Alternation(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: M.Permute(tuple(xs))),
            inner.map(M.Exclusion),
            st.tuples(inner, bounds, st.booleans()).map(lambda t: M.Quantified(t[0], t[1][0], t[1][1], t[2])),
        )

    return st.recursive(leaf, extend, max_leaves=6)


def depth(node):
    inner = getattr(node, "items", None) or getattr(node, "options", None) or \
        ((node.pattern,) if hasattr(node, "pattern") else ())
    return 1 + max((depth(x) for x in inner), default=0)


skips = st.one_of(st.just(Skip(PAST_LAST_ROW)), st.just(Skip(TO_NEXT_ROW)),
                  st.tuples(st.sampled_from([TO_FIRST, TO_LAST]), st.integers(1, 7))
                  .map(lambda t: Skip(t[0], t[1], "V")))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns(NAMES), n_vars=st.integers(2, 3),
       bits=st.lists(st.integers(0, 7), max_size=12), skip=skips)
def test_kernel_agrees_with_backtracking(pattern, n_vars, bits, skip):
    if depth(pattern) > 4:
        return
    variables = NAMES[:n_vars]
    names = set(M.pattern_variables(pattern))
    if not names <= set(variables):
        variables = NAMES
    bits = [b & ((1 << len(variables)) - 1) for b in bits]
    try:
        expected = brute(pattern, variables, bits, skip)
    except SkipError as err:
        with pytest.raises(ExecutionError, match=f"match {err.args[0]} "):
            kernel(pattern, variables, bits, skip)
        return
    assert kernel(pattern, variables, bits, skip) == expected


# ----------------------------------------------------------------------------- scaling
@pytest.mark.parametrize("skip", [Skip(PAST_LAST_ROW), Skip(TO_NEXT_ROW), Skip(TO_LAST, 1, "A")])
def test_no_quadratic_restart_on_a_long_run_without_match(skip):
    n = 50_000
    nfa = compile_pattern(cat(q(A, 1), B), ("A", "B"))
    got = match_partition(nfa, np.ones(n, dtype=np.uint64), skip)
    assert len(got.starts) == 0
    assert got.steps < 20 * n


def test_linear_work_with_many_matches_past_last_row():
    # A+? B* over alternating rows: many matches, one pass
    n = 50_000
    nfa = compile_pattern(cat(q(A, 1, None, False), q(B, 0)), ("A", "B"))
    bits = np.where(np.arange(n) % 3 == 0, 1, 2).astype(np.uint64)
    got = match_partition(nfa, bits, Skip())
    assert len(got.starts) == (n + 2) // 3
    assert got.steps < 20 * n


# ----------------------------------------------------------------------------- growing arrays
def test_overlapping_matches_outgrow_the_labels_first_room():
    # TO NEXT ROW over A+ on rows that are all A: match s is rows s.. n-1, n(n+1)/2 labels in all,
    # far more than the room for a label per row the kernel starts with
    n = 40
    bits = [1] * n
    got = kernel(q(A, 1), ("A",), bits, Skip(TO_NEXT_ROW))
    assert got == brute(q(A, 1), ("A",), bits, Skip(TO_NEXT_ROW))
    assert [(s, e) for s, e, _ in got] == [(s, n) for s in range(n)]
    big = match_partition(compile_pattern(q(A, 1), ("A",)), np.ones(600, dtype=np.uint64), Skip(TO_NEXT_ROW))
    assert big.starts.tolist() == list(range(600)) and set(big.ends.tolist()) == {600}
    assert len(big.labels) == 600 * 601 // 2


def test_a_long_live_match_outgrows_the_path_arena():
    # one match of 5 000 rows: its path alone is more than the arena's first 1 024 nodes
    n = 5_000
    nfa = compile_pattern(cat(q(A, 1), B), ("A", "B"))
    bits = np.ones(n, dtype=np.uint64)
    bits[-1] = 2
    for final in (True, False):
        got = match_partition(nfa, bits, Skip(), final=final)
        assert got.starts.tolist() == [0] and got.ends.tolist() == [n]
        assert [nfa.label_variable(x) for x in got.labels.tolist()] == ["A"] * (n - 1) + ["B"]
