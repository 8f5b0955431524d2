"""The pattern compiler (planner/compile.py) and the lazy determinization (exec/determinizer.py).

The automaton must mark exactly the events each result selects, START on the first event of a
match, nothing on gaps; drop branches that cannot select anything; and, determinized, produce
each distinct output once (I/O-determinism).
"""

from __future__ import annotations

import pytest

import cerql
from cerql.automaton import START
from cerql.exec.determinizer import Determinizer
from cerql.planner.compile import compile_pattern


def automaton_of(text: str):
    a = cerql.analyze(text)
    return compile_pattern(a.select.pattern, a.selected)


def bit(automaton, condition_text: str) -> int:
    for k, c in enumerate(automaton.conditions):
        if str(c) == condition_text:
            return 1 << k
    raise KeyError(condition_text)


def test_sequence_marks_start_on_first_event_and_skips_gaps():
    m = automaton_of("SELECT * FROM s WHERE A AS a ; B AS b")
    assert m.labels == ("a", "b")
    initial = [t for t in m.transitions if t.source == m.initial]
    # the TRUE self-loop (a match may start anywhere) and the START transition on A
    assert sorted((t.required, t.label) for t in initial) == [(0, 0), (bit(m, "A"), START | 2)]
    gaps = [t for t in m.transitions if t.required == 0 and t.source != m.initial]
    assert gaps and all(t.label == 0 for t in gaps)
    assert all(t.label == 4 for t in m.transitions if t.required == bit(m, "B"))


def test_contiguity_has_no_gap_state():
    m = automaton_of("SELECT * FROM s WHERE A AS a : B AS b")
    assert [t for t in m.transitions if t.required == 0 and t.source != m.initial] == []


def test_unselected_variables_leave_no_marks():
    m = automaton_of("SELECT a FROM s WHERE A AS a ; B AS b")
    assert m.labels == ("a",)
    assert all(t.label == 0 for t in m.transitions if t.required == bit(m, "B"))


def test_branch_that_selects_nothing_is_removed():
    m = automaton_of("SELECT a FROM s WHERE (A AS a) OR (B AS b)")
    assert all(t.required != bit(m, "B") for t in m.transitions)


def test_unary_filter_is_pushed_to_the_atoms_of_its_variable():
    m = automaton_of("SELECT * FROM s WHERE (A AS a ; B AS b) FILTER a[v > 1]")
    a_pred = bit(m, "A") | bit(m, "v > 1")
    assert any(t.required == a_pred for t in m.transitions)
    assert all(t.required == bit(m, "B") for t in m.transitions if t.required & bit(m, "B"))


def test_filter_on_a_type_variable_applies_to_every_atom_of_that_type():
    m = automaton_of("SELECT * FROM s WHERE (A AS x ; A AS y) FILTER A[v > 1]")
    atoms = [t for t in m.transitions if t.required & bit(m, "A")]
    assert atoms and all(t.required & bit(m, "v > 1") for t in atoms)


def test_filter_or_makes_two_copies_of_the_pattern():
    m = automaton_of("SELECT * FROM s WHERE A AS a FILTER a[v > 1] OR a[v < 0]")
    required = {t.required for t in m.transitions if t.required}
    assert required == {bit(m, "A") | bit(m, "v > 1"), bit(m, "A") | bit(m, "v < 0")}


def test_kleene_loops_back_through_a_gap():
    m = automaton_of("SELECT * FROM s WHERE A+ AS a")
    a = bit(m, "A")
    # from a state after an A, another A is reachable both directly and after a gap
    after_a = {t.target for t in m.transitions if t.required == a}
    assert any(t.source in after_a and t.required == a for t in m.transitions)
    assert any(t.source in after_a and t.required == 0 for t in m.transitions)


def test_determinized_successors_have_distinct_labels():
    m = automaton_of("SELECT * FROM s WHERE (A AS x ; B) OR (A AS x ; B AS y) OR (A ; B AS y)")
    det = Determinizer(m)
    everything = (1 << len(m.conditions)) - 1
    todo, seen = [0], {0}
    while todo:
        d = todo.pop()
        for bits in range(everything + 1):
            succ = det.successors(d, bits)
            labels = [label for label, _ in succ]
            assert len(labels) == len(set(labels))
            for _, d2 in succ:
                if d2 not in seen:
                    seen.add(d2)
                    todo.append(d2)
    assert len(seen) > 2


def test_describe_and_dot_name_conditions_and_marks(tmp_path):
    m = automaton_of("SELECT * FROM s WHERE A AS a FILTER a[v > 1]")
    assert "on A AND [v > 1]  mark {START, a}" in m.describe()
    dot = m.to_dot()
    assert dot.startswith("digraph cea {") and "doublecircle" in dot
    path = tmp_path / "q.dot"
    text = cerql.explain("SELECT * FROM s WHERE A AS a FILTER a[v > 1]", dot=str(path))
    assert "automaton:" in text
    assert path.read_text() == dot + "\n"


def test_cross_variable_filter_is_still_unsupported_at_compile_time():
    # explain and the engines never get here (resolve leaves the automaton out, see
    # tests/exec/test_cross_predicates.py); the compiler itself still refuses the node
    a = cerql.analyze("SELECT * FROM s WHERE A AS a ; B AS b FILTER b.v > a.v")
    with pytest.raises(cerql.UnsupportedError) as err:
        compile_pattern(a.select.pattern, a.selected)
    assert err.value.error_class == "CROSS_VARIABLE_PREDICATE"


def test_too_many_conditions_is_a_clear_error():
    pattern = " ; ".join(f"T{k}" for k in range(65))
    with pytest.raises(cerql.CeqlError) as err:
        cerql.explain(f"SELECT * FROM s WHERE {pattern}")
    assert (err.value.error_class, err.value.line, err.value.column) == ("TOO_MANY_CONDITIONS", 1, 23)


def test_too_many_selected_variables_is_a_clear_error():
    pattern = " ; ".join(f"A AS v{k}" for k in range(63))
    with pytest.raises(cerql.CeqlError) as err:
        cerql.explain(f"SELECT * FROM s WHERE {pattern}")
    assert (err.value.error_class, err.value.line, err.value.column) == ("TOO_MANY_VARIABLES", 1, 23)
