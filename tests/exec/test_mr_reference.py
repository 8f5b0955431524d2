"""The MATCH_RECOGNIZE reference evaluator (cerql/exec/mr_reference.py) on hand-checked cases.

The syntax trees are built here by hand (``clause`` below): the pattern from a tiny reader of the
PATTERN syntax (its result is checked against hand-built trees), every expression read by sqlglot
with FIRST/LAST renamed first (sqlglot's own First/Last would drop the offset), so that the row
pattern functions have the shapes cerql/mr_ast.py fixes: ``exp.Anonymous`` named in upper case.
RUNNING/FINAL are written with parentheses here: ``RUNNING(LAST(value))``.

Each expected answer says why it is right. Where a case is one of Trino's published tests
(TestRowPatternMatching), the expected rows are Trino's, as facts to agree with.
"""

from __future__ import annotations

import ast as pyast
import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from cerql import mr_ast as m
from cerql.ast import SqlExpr
from cerql.errors import CeqlError
from cerql.exec import mr_reference
from cerql.exec.mr_reference import evaluate, find_matches, partitions

ROW_FUNCTIONS = {"PREV", "NEXT", "FIRST", "LAST", "CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL"}


# ---------------------------------------------------------------------------- building trees
def sql(text: str) -> SqlExpr:
    """``text`` as the parser hands it over: sqlglot's Spark tree with the mr_ast shapes."""
    marked = re.sub(r"\b(FIRST|LAST)\s*\(", r"MR_\1(", text, flags=re.IGNORECASE)
    tree = sqlglot.parse_one(marked, read="spark")
    for node in list(tree.find_all(exp.Anonymous)):
        name = node.name.upper().removeprefix("MR_")
        if name in ROW_FUNCTIONS:
            node.set("this", name)
    return SqlExpr(text=tree.sql("spark"), tree=tree)


_TOKEN = re.compile(r"\s*(\{-|-\}|\{\s*\d*\s*(?:,\s*\d*\s*)?\}|[()|*+?^$,]|[A-Za-z_]\w*)")


def pattern(text: str) -> m.RowPattern:
    """A tiny reader of the PATTERN syntax, for writing test cases as the standard does."""
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        hit = _TOKEN.match(text, pos)
        assert hit, f"bad pattern text at {text[pos:]!r}"
        tokens.append(hit.group(1))
        pos = hit.end()
    tokens.append("<end>")
    at = [0]

    def peek():
        return tokens[at[0]]

    def take(expected=None):
        tok = tokens[at[0]]
        assert expected is None or tok == expected, (tok, expected, text)
        at[0] += 1
        return tok

    def alternation():
        options = [sequence()]
        while peek() == "|":
            take()
            options.append(sequence())
        return options[0] if len(options) == 1 else m.Alternation(tuple(options))

    def sequence():
        items = []
        while peek() not in ("|", ")", "-}", ",", "<end>"):
            items.append(quantified())
        if not items:
            return m.EmptyPattern()
        return items[0] if len(items) == 1 else m.Concat(tuple(items))

    def quantified():
        p = primary()
        tok = peek()
        bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}.get(tok)
        if bounds is None and tok.startswith("{") and tok != "{-":
            low, _, high = tok[1:-1].replace(" ", "").partition(",")
            bounds = (int(low or 0), int(low) if "," not in tok else (int(high) if high else None))
        if bounds is None:
            return p
        take()
        greedy = True
        if peek() == "?":
            take()
            greedy = False
        return m.Quantified(p, bounds[0], bounds[1], greedy)

    def primary():
        tok = take()
        if tok == "(":
            inner = alternation()
            take(")")
            return inner
        if tok in ("^", "$"):
            return m.Anchor(start=tok == "^")
        if tok == "{-":
            inner = alternation()
            take("-}")
            return m.Exclusion(inner)
        if tok.upper() == "PERMUTE":
            take("(")
            items = [alternation()]
            while peek() == ",":
                take()
                items.append(alternation())
            take(")")
            return m.Permute(tuple(items))
        assert re.fullmatch(r"[A-Za-z_]\w*", tok), (tok, text)
        return m.PatternVar(tok)

    result = alternation()
    take("<end>")
    return result


def clause(pat: str, define: dict[str, str] | None = None, measures: dict[str, str] | None = None,
           rows: str = m.ONE_ROW, skip: str = m.PAST_LAST_ROW, to: str | None = None,
           subsets: dict[str, tuple[str, ...]] | None = None, partition: tuple[str, ...] = (),
           order: tuple = ("id",)) -> m.MatchRecognize:
    """A MatchRecognize as the parser would build it. ``order``: names, or (name, descending,
    nulls_first) triples."""
    keys = tuple(m.SortKey(sql(k)) if isinstance(k, str) else m.SortKey(sql(k[0]), k[1], k[2]) for k in order)
    return m.MatchRecognize(
        source="t",
        partition_by=tuple(sql(p) for p in partition),
        order_by=keys,
        measures=tuple(m.Measure(sql(e), name) for name, e in (measures or {}).items()),
        rows_per_match=m.RowsPerMatch(rows),
        after_match=m.AfterMatchSkip(skip, to),
        pattern=pattern(pat),
        subsets=tuple(m.Subset(name, vs) for name, vs in (subsets or {}).items()),
        defines=tuple(m.Define(v, sql(c)) for v, c in (define or {}).items()),
    )


def table(*values, col="value"):
    """Rows id 1, 2, ... with ``col`` taking ``values``."""
    return [{"id": i, col: v} for i, v in enumerate(values, 1)]


def labels(out):
    """Each output row as 'row:CLASSIFIER+MATCH_NUMBER' (the notation of the reference table)."""
    return " ".join(f"{r['id']}:{r['cls'] or '-'}{r['mno'] if r['mno'] is not None else '-'}" for r in out)


LABELS = {"cls": "CLASSIFIER()", "mno": "MATCH_NUMBER()"}


def test_pattern_reader_builds_the_mr_ast_trees():
    assert pattern("A B+? C*") == m.Concat((m.PatternVar("A"), m.Quantified(m.PatternVar("B"), 1, None, False),
                                            m.Quantified(m.PatternVar("C"), 0, None)))
    assert pattern("(A | B)* C") == m.Concat((m.Quantified(m.Alternation((m.PatternVar("A"), m.PatternVar("B"))), 0, None),
                                              m.PatternVar("C")))
    assert pattern("(E?){2,} Y") == m.Concat((m.Quantified(m.Quantified(m.PatternVar("E"), 0, 1), 2, None),
                                              m.PatternVar("Y")))
    assert pattern("A{,3}? {- B{2} -} ^ $ ()") == m.Concat((
        m.Quantified(m.PatternVar("A"), 0, 3, False), m.Exclusion(m.Quantified(m.PatternVar("B"), 2, 2)),
        m.Anchor(True), m.Anchor(False), m.EmptyPattern()))
    assert pattern("PERMUTE(Y, X)") == m.Permute((m.PatternVar("Y"), m.PatternVar("X")))
    tree = sql("PREV(LAST(A.value, 1), 2) + RUNNING(count(A.*))").tree
    assert {n.name for n in tree.find_all(exp.Anonymous)} == {"PREV", "LAST", "RUNNING"}


# ---------------------------------------------------------------------------- the reference table
# One partition, rows 1-8 with value 90 80 70 80 90 50 40 60, ORDER BY id, B falls, C rises, A has
# no DEFINE, ALL ROWS PER MATCH. Expected rows as row:CLASSIFIER+MATCH_NUMBER.
REFERENCE_ROWS = table(90, 80, 70, 80, 90, 50, 40, 60)
REFERENCE_DEFINE = {"B": "B.value < PREV(B.value)", "C": "C.value > PREV(C.value)"}
REFERENCE_CASES = [
    # greedy B+ and C+ take every falling / rising row: 1 A, 2-3 fall, 4-5 rise; then 6 A, 7 falls, 8 rises
    ("A B+ C+", m.PAST_LAST_ROW, "1:A1 2:B1 3:B1 4:C1 5:C1 6:A2 7:B2 8:C2"),
    # reluctant: B takes 2, C fails at 3 (70 < 80) so B takes 3, C stops at its first row 4;
    # resume at 5: A, B 6, C fails at 7, B 7, C 8
    ("A B+? C+?", m.PAST_LAST_ROW, "1:A1 2:B1 3:B1 4:C1 5:A2 6:B2 7:B2 8:C2"),
    # every row is tried as a start: 3 and 4 have no falling next row (no match), 7 and 8 neither
    ("A B+ C+", m.TO_NEXT_ROW,
     "1:A1 2:B1 3:B1 4:C1 5:C1 2:A2 3:B2 4:C2 5:C2 5:A3 6:B3 7:B3 8:C3 6:A4 7:B4 8:C4"),
    # A (no DEFINE) is preferred at every row, so the loop runs to the end; C fails past row 8, so
    # the last iteration gives row 8 back (B fails there: 60 > 40) and C takes it (60 > 40)
    ("(A | B)* C", m.PAST_LAST_ROW, "1:A1 2:A1 3:A1 4:A1 5:A1 6:A1 7:A1 8:C1"),
    # from each start: A, then the falling rows, then one rising row if there is one; 8 is alone
    ("A B* C?", m.TO_NEXT_ROW,
     "1:A1 2:B1 3:B1 4:C1 2:A2 3:B2 4:C2 3:A3 4:C3 4:A4 5:C4 5:A5 6:B5 7:B5 8:C5 6:A6 7:B6 8:C6 "
     "7:A7 8:C7 8:A8"),
]


@pytest.mark.parametrize("pat, skip, expected", REFERENCE_CASES)
def test_reference_table(pat, skip, expected):
    mr = clause(pat, REFERENCE_DEFINE, LABELS, rows=m.ALL_ROWS, skip=skip)
    assert labels(evaluate(mr, REFERENCE_ROWS)) == expected


def test_find_matches_gives_the_raw_mappings():
    # the first reference case, as (match_number, [(row index in the partition, variable)], start)
    mr = clause("A B+ C+", REFERENCE_DEFINE)
    assert find_matches(mr, REFERENCE_ROWS) == [[
        (1, [(0, "A"), (1, "B"), (2, "B"), (3, "C"), (4, "C")], 0),
        (2, [(5, "A"), (6, "B"), (7, "C")], 5),
    ]]


# ---------------------------------------------------------------------------- the standard's corners
FALLS = {"A": "value < PREV(value)"}


def test_empty_iteration_ends_the_loop():
    # (A?)* over 90 80 70 70, A falls. Row 1: A fails (PREV is NULL), A? maps nothing, and that
    # empty iteration ends the loop: an empty match. Row 2: A 2, A 3, A fails at 4 (70 < 70 is
    # false), empty iteration, end: rows 2-3. Row 4: empty again. Trino's test of B* gives the
    # same rows, as it must: (A?)* and A* map the same rows.
    mr = clause("(A?)*", FALLS, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == "1:-1 2:A2 3:A2 4:-3"


def test_reluctant_option_in_a_loop_prefers_the_empty_iteration():
    # (A??)*: the first iteration prefers to map nothing, and an empty iteration ends the loop:
    # an empty match at every row, although A holds at rows 2 and 3.
    mr = clause("(A??)*", FALLS, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == "1:-1 2:-2 3:-3 4:-4"


def test_empty_iterations_fill_the_minimum():
    # (E?){2,} Y over 90 80 70 100 110 (trino#15461's pattern), E falls, Y rises.
    # Row 1: E fails, the empty iteration ends the loop, Y fails (PREV NULL): unmatched.
    # Row 2: E 2, E 3, E fails at 4, empty iteration ends the loop, Y 4 (100 > 70): rows 2-4.
    # Row 5: E fails, the empty iteration ends the loop though only one of the two iterations
    # ran (a second would map nothing the same way), Y 5 (110 > 100).
    mr = clause("(E?){2,} Y", {"E": "value < PREV(value)", "Y": "value > PREV(value)"}, LABELS,
                rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(90, 80, 70, 100, 110))) == "2:E1 3:E1 4:Y1 5:Y2"


def test_empty_pattern_with_a_minimum_still_matches():
    # Trino's test: (){5,} | B matches the empty string at every row; B is never tried
    mr = clause("(){5,} | B", {"B": "B.value < PREV(B.value)"}, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == "1:-1 2:-2 3:-3 4:-4"


def test_reluctant_plus_alone_takes_one_row():
    # A+? with nothing after it: the least the pattern accepts is one row, so every row is a match
    mr = clause("A+?", None, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(1, 2, 3))) == "1:A1 2:A2 3:A3"


def test_greedy_star_gives_back_a_row():
    # A* A over three rows (A TRUE): A* takes all three, the last A finds no row, A* gives back
    # row 3 and the last A takes it: one match of three rows
    mr = clause("A* A", None, {"n": "count(*)", "last_id": "LAST(id)"})
    assert evaluate(mr, table(1, 2, 3)) == [{"n": 3, "last_id": 3}]


def test_permute_prefers_the_order_of_its_list():
    # X and Y have no DEFINE: both orders match, and PERMUTE(Y, X) prefers Y X (the order of its
    # argument list, not of the names)
    mr = clause("PERMUTE(Y, X)", None, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(1, 2))) == "1:Y1 2:X1"
    # only C A B fits the values 3 1 2; it is the fifth permutation tried (ABC ACB BAC BCA CAB)
    mr = clause("PERMUTE(A, B, C)", {"A": "value = 1", "B": "value = 2", "C": "value = 3"}, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(3, 1, 2))) == "1:C1 2:A1 3:B1"
    # Trino's test: PERMUTE(B, C), both falling, over 90 80 70 70: B C from row 2
    mr = clause("PERMUTE(B, C)", {"B": "B.value < PREV(B.value)", "C": "C.value < PREV(C.value)"}, LABELS,
                rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == "2:B1 3:C1"


def test_anchors():
    # Trino's tests over four rows, A TRUE: ^A only at row 1, A$ only at row 4, A^ never
    rows = table(90, 80, 70, 70)
    assert labels(evaluate(clause("^A", None, LABELS, rows=m.ALL_ROWS), rows)) == "1:A1"
    assert labels(evaluate(clause("A$", None, LABELS, rows=m.ALL_ROWS), rows)) == "4:A1"
    assert evaluate(clause("A^", None, LABELS, rows=m.ALL_ROWS), rows) == []


# -- AFTER MATCH SKIP: Trino's testAfterMatchSkip, over 90 80 70 80 70 80, PATTERN (A B+ C+ D?)
SKIP_ROWS = table(90, 80, 70, 80, 70, 80)
SKIP_DEFINE = {"B": "B.value < PREV(B.value)", "C": "C.value > PREV(C.value)", "D": "FALSE"}


@pytest.mark.parametrize("skip, to, expected", [
    # rows 1-4 match; resume at 5, where nothing matches
    (m.PAST_LAST_ROW, None, "1:A1 2:B1 3:B1 4:C1"),
    (m.TO_NEXT_ROW, None, "1:A1 2:B1 3:B1 4:C1 2:A2 3:B2 4:C2 4:A3 5:B3 6:C3"),
    # the first C is row 4: resume there
    (m.TO_FIRST, "C", "1:A1 2:B1 3:B1 4:C1 4:A2 5:B2 6:C2"),
    # the last B is row 3: nothing matches from 3, then a match from 4
    (m.TO_LAST, "B", "1:A1 2:B1 3:B1 4:C1 4:A2 5:B2 6:C2"),
    # U = (C, D): D never maps, so the last U row is the last C, row 4
    (m.TO_LAST, "U", "1:A1 2:B1 3:B1 4:C1 4:A2 5:B2 6:C2"),
])
def test_after_match_skip(skip, to, expected):
    mr = clause("A B+ C+ D?", SKIP_DEFINE, LABELS, rows=m.ALL_ROWS, skip=skip, to=to, subsets={"U": ("C", "D")})
    assert labels(evaluate(mr, SKIP_ROWS)) == expected


@pytest.mark.parametrize("to, why", [("A", "first row"), ("D", "maps no row")])
def test_after_match_skip_errors(to, why):
    # SKIP TO A: A is the match's first row, resuming there would loop forever; SKIP TO D: D
    # maps no row of the match. Both are the standard's runtime exception, naming the match
    # number and the partition.
    rows = [dict(r, p="x") for r in SKIP_ROWS]
    mr = clause("A B+ C+ D?", SKIP_DEFINE, LABELS, skip=m.TO_LAST, to=to, partition=("p",))
    with pytest.raises(CeqlError) as err:
        evaluate(mr, rows)
    assert err.value.error_class == "AFTER_MATCH_SKIP_FAILED"
    assert "match 1" in str(err.value) and "p='x'" in str(err.value) and why in str(err.value)
    assert err.value.params == {"match_number": 1, "partition": ("x",)}


def test_skip_to_next_row_after_an_empty_match():
    # A* (A falls) over 90 80 70 70, SKIP TO NEXT ROW: row 1 is an empty match and matching
    # moves one row; row 2 maps 2-3; TO NEXT ROW resumes at 3, which maps 3 alone; row 4 is empty
    mr = clause("A*", FALLS, LABELS, rows=m.ALL_ROWS, skip=m.TO_NEXT_ROW)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == "1:-1 2:A2 3:A2 3:A3 4:-4"


def test_skip_to_a_variable_after_an_empty_match_moves_one_row():
    # rising rows: A* matches empty at both rows; SKIP TO LAST A does not fail on an empty match
    mr = clause("A*", FALLS, LABELS, rows=m.ALL_ROWS, skip=m.TO_LAST, to="A")
    assert labels(evaluate(mr, table(90, 95))) == "1:-1 2:-2"


# -- RUNNING and FINAL, and navigation
def test_running_and_final_in_all_rows():
    # Trino's testNavigationFunctions over 10 20 30, PATTERN (A+): a bare column and LAST are
    # RUNNING (the value so far), FINAL LAST is the match's last value on every row, FIRST is 10
    mr = clause("A+", None, {
        "v": "value", "last": "LAST(value)", "running": "RUNNING(LAST(value))", "final": "FINAL(LAST(value))",
        "first": "FIRST(value)", "n": "count(*)", "n_final": "FINAL(count(A.*))",
    }, rows=m.ALL_ROWS)
    out = evaluate(mr, table(10, 20, 30))
    assert [(r["v"], r["last"], r["running"], r["final"], r["first"], r["n"], r["n_final"]) for r in out] == [
        (10, 10, 10, 30, 10, 1, 3), (20, 20, 20, 30, 10, 2, 3), (30, 30, 30, 30, 10, 3, 3)]


def test_running_and_final_are_the_whole_match_in_one_row():
    # ONE ROW PER MATCH: the measures see the whole match either way
    mr = clause("A+", None, {"running": "RUNNING(LAST(value))", "final": "FINAL(LAST(value))",
                             "first": "FIRST(value)", "n": "RUNNING(count(*))"})
    assert evaluate(mr, table(10, 20, 30)) == [{"running": 30, "final": 30, "first": 10, "n": 3}]


def test_logical_offsets_beyond_the_rows_mapped_are_null():
    # over 10 20 30, PATTERN (A+), ALL ROWS: RUNNING FIRST(value, 2) is the third row mapped so
    # far: NULL on rows 1 and 2, 30 on row 3; LAST(value, 1) the one before the current row;
    # FINAL FIRST(value, 2) sees all three rows; FINAL LAST(value, 5) is past them
    mr = clause("A+", None, {"f2": "FIRST(value, 2)", "l1": "LAST(value, 1)", "ff2": "FINAL(FIRST(value, 2))",
                             "fl5": "FINAL(LAST(value, 5))"}, rows=m.ALL_ROWS)
    out = evaluate(mr, table(10, 20, 30))
    assert [(r["f2"], r["l1"], r["ff2"], r["fl5"]) for r in out] == [
        (None, None, 30, None), (None, 10, 30, None), (30, 20, 30, None)]


def test_define_sees_only_the_rows_mapped_so_far():
    # A AS FIRST(A.value, 2) IS NULL: while A has mapped at most two rows the third is NULL, so
    # A maps rows 1 and 2 and fails at row 3 (its third row, 30); a FINAL reading would have seen
    # row 3 already. Row 3 starts over: it is A's first row again.
    mr = clause("A+", {"A": "FIRST(A.value, 2) IS NULL"}, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(10, 20, 30))) == "1:A1 2:A1 3:A2"


def test_final_in_define_is_refused():
    mr = clause("A+", {"A": "FINAL(LAST(A.value)) > 0"})
    with pytest.raises(CeqlError, match="FINAL"):
        evaluate(mr, table(1, 2))


def test_aggregates_in_define_run_over_the_rows_so_far():
    # A AS sum(A.value) <= 150 over 90 50 20 100 40: 90, 140, then 160 fails: rows 1-2; from 3:
    # 20, 120, then 160 fails: rows 3-4; row 5 alone. The sums the measure reports are those.
    mr = clause("A+", {"A": "sum(A.value) <= 150"}, {"s": "sum(A.value)", "avg": "avg(value)", "lo": "min(A.value)",
                                                      "hi": "max(value)", "nv": "count(A.value)"})
    assert evaluate(mr, table(90, 50, 20, 100, 40)) == [
        {"s": 140, "avg": 70.0, "lo": 50, "hi": 90, "nv": 2},
        {"s": 120, "avg": 60.0, "lo": 20, "hi": 100, "nv": 2},
        {"s": 40, "avg": 40.0, "lo": 40, "hi": 40, "nv": 1}]


def test_back_references_backtrack():
    # Trino's testBackReference: over values 1, 1 (no ORDER BY: input order), (A | B)* X with
    # X AS value = A.value: A 1 then X 2 (A.value = 1). With X AS value = B.value, every mapping
    # with row 1 = A fails (B.value is NULL or no row is left for X), so row 1 is B.
    for var, expected in (("A", "A"), ("B", "B")):
        mr = clause("(A | B)* X", {"X": f"value = {var}.value"}, {"cls": "CLASSIFIER()"}, rows=m.ALL_ROWS, order=())
        assert [(r["value"], r["cls"]) for r in evaluate(mr, [{"value": 1}, {"value": 1}])] == [(1, expected), (1, "X")]


def test_nested_navigation_and_classifier_navigation():
    # Trino's testBackReference, third and fourth cases (their published rows)
    rows = [{"value": v} for v in range(1, 7)]
    cond = "PREV(LAST(A.value), 3) + FIRST(A.value) + PREV(LAST(B.value), 2)"
    mr = clause("(A | B)* X", {"X": f"value = {cond}"}, {"cls": "CLASSIFIER()", "c": cond}, rows=m.ALL_ROWS,
                order=("value",))
    assert [(r["value"], r["cls"], r["c"]) for r in evaluate(mr, rows)] == [
        (1, "B", None), (2, "A", None), (3, "A", None), (4, "A", None), (5, "B", 6), (6, "X", 6)]
    cond = "PREV(CLASSIFIER(U), 1) = 'A' AND LAST(CLASSIFIER(), 3) = 'B' AND FIRST(CLASSIFIER(U)) = 'B'"
    mr = clause("(A | B)* X $", {"X": cond}, {"cls": "CLASSIFIER()", "c": cond}, rows=m.ALL_ROWS,
                order=("value",), subsets={"U": ("A", "B")})
    assert [(r["value"], r["cls"], r["c"]) for r in evaluate(mr, rows[:5])] == [
        (1, "B", None), (2, "B", False), (3, "A", False), (4, "A", True), (5, "X", True)]


def test_null_conditions_are_false():
    # NOT (value > 10) is NULL where value is NULL: that row is not A; 5 is A; 20 is not
    mr = clause("A", {"A": "NOT (value > 10)"}, LABELS, rows=m.ALL_ROWS)
    assert labels(evaluate(mr, table(None, 5, 20))) == "2:A1"


# -- output
EXCLUSION_MEASURES = {"mno": "MATCH_NUMBER()", "val": "RUNNING(LAST(value))", "cls": "CLASSIFIER()"}


def test_exclusion_leaves_rows_out_of_all_rows_only():
    # Trino's testExclusionSyntax over the reference rows: B's rows are matched (and move RUNNING
    # LAST(value)) but not output
    mr = clause("A {- B+ -} C+", REFERENCE_DEFINE, EXCLUSION_MEASURES, rows=m.ALL_ROWS)
    assert [(r["id"], r["mno"], r["val"], r["cls"]) for r in evaluate(mr, REFERENCE_ROWS)] == [
        (1, 1, 90, "A"), (4, 1, 80, "C"), (5, 1, 90, "C"), (6, 2, 50, "A"), (8, 2, 60, "C")]
    mr = clause("{- A B+ C+ -}", REFERENCE_DEFINE, EXCLUSION_MEASURES, rows=m.ALL_ROWS)
    assert evaluate(mr, REFERENCE_ROWS) == []
    # ONE ROW PER MATCH: no effect
    mr = clause("A {- B+ -} C+", REFERENCE_DEFINE, {"n": "count(B.*)"})
    assert evaluate(mr, REFERENCE_ROWS) == [{"n": 2}, {"n": 1}]


def test_with_unmatched_rows():
    # Trino's testEmptyMatches: A B{2}, SKIP TO NEXT ROW over 100 100 90 80 70 100. Row 1 has no
    # match and no match mapped it: output with NULL measures. Rows 4 and 5 have no match of their
    # own but earlier matches mapped them: not output again. Row 6 is unmatched.
    mr = clause("A B{2}", {"B": "B.value < PREV(B.value)"}, LABELS, rows=m.WITH_UNMATCHED, skip=m.TO_NEXT_ROW)
    assert labels(evaluate(mr, table(100, 100, 90, 80, 70, 100))) == "1:-- 2:A1 3:B1 4:B1 3:A2 4:B2 5:B2 6:--"


@pytest.mark.parametrize("mode, expected", [
    # Trino's testOutputModes, B* over 90 80 70 70: empty matches at rows 1 and 4
    (m.SHOW_EMPTY, "1:-1 2:B2 3:B2 4:-3"),
    (m.OMIT_EMPTY, "2:B2 3:B2"),
    (m.WITH_UNMATCHED, "1:-1 2:B2 3:B2 4:-3"),
])
def test_empty_matches_in_all_rows(mode, expected):
    mr = clause("B*", {"B": "B.value < PREV(B.value)"}, LABELS, rows=mode)
    assert labels(evaluate(mr, table(90, 80, 70, 70))) == expected


def test_empty_match_measures():
    # an empty match's measures are evaluated over no rows: a column or navigation is NULL,
    # count is 0, MATCH_NUMBER is the match's (Trino's ONE ROW PER MATCH B*: (1, NULL, NULL))
    mr = clause("B*", {"B": "B.value < PREV(B.value)"}, {"mno": "MATCH_NUMBER()", "val": "LAST(value)",
                                                          "cls": "CLASSIFIER()", "n": "count(*)"})
    assert evaluate(mr, table(90, 80, 70, 70)) == [
        {"mno": 1, "val": None, "cls": None, "n": 0}, {"mno": 2, "val": 70, "cls": "B", "n": 2},
        {"mno": 3, "val": None, "cls": None, "n": 0}]


def test_layouts():
    # ONE ROW: partition columns, then measures. ALL ROWS: partition columns, ORDER BY columns,
    # measures, then the rest of the input in input order. Partitions come in the order of their
    # first row (y before x).
    rows = [{"note": "a", "p": "y", "id": 2, "value": 5}, {"note": "b", "p": "x", "id": 1, "value": 6},
            {"note": "c", "p": "y", "id": 1, "value": 7}]
    one = evaluate(clause("A+", None, {"n": "count(*)", "first_note": "FIRST(note)"}, partition=("p",)), rows)
    assert [list(r.items()) for r in one] == [[("p", "y"), ("n", 2), ("first_note", "c")],
                                              [("p", "x"), ("n", 1), ("first_note", "b")]]
    every = evaluate(clause("A+", None, {"n": "count(*)"}, rows=m.ALL_ROWS, partition=("p",)), rows)
    assert [list(r.items()) for r in every] == [
        [("p", "y"), ("id", 1), ("n", 1), ("note", "c"), ("value", 7)],
        [("p", "y"), ("id", 2), ("n", 2), ("note", "a"), ("value", 5)],
        [("p", "x"), ("id", 1), ("n", 1), ("note", "b"), ("value", 6)]]


def test_subset_in_measures_and_aggregates():
    # Trino's testUnionVariable over 90 80 70 80: (L | H) A, U = (L, H), W = (A, L, H):
    # CLASSIFIER(U) is the last L or H so far, CLASSIFIER(W) the last row's variable
    mr = clause("(L | H) A", {"A": "A.value = 80", "L": "L.value < 80", "H": "H.value > 80"},
                {"mno": "MATCH_NUMBER()", "val": "RUNNING(LAST(value))", "u": "CLASSIFIER(U)", "w": "CLASSIFIER(W)",
                 "nu": "count(U.*)", "lu": "LAST(U.value)"},
                rows=m.ALL_ROWS, subsets={"U": ("L", "H"), "W": ("A", "L", "H")})
    assert [tuple(r[k] for k in ("id", "mno", "val", "u", "w", "nu", "lu")) for r in evaluate(mr, table(90, 80, 70, 80))] == [
        (1, 1, 90, "H", "H", 1, 90), (2, 1, 80, "H", "A", 1, 90), (3, 2, 70, "L", "L", 1, 70), (4, 2, 80, "L", "A", 1, 70)]


def test_order_by_directions_nulls_and_ties():
    # DESC puts NULLs last by default, ASC first; equal keys keep input order
    rows = [{"id": 1, "k": 2}, {"id": 2, "k": None}, {"id": 3, "k": 5}, {"id": 4, "k": 2}]
    desc = clause("A", order=(("k", True, None),))
    assert [r["id"] for r in partitions(desc, rows)[0]] == [3, 1, 4, 2]
    asc = clause("A", order=("k",))
    assert [r["id"] for r in partitions(asc, rows)[0]] == [2, 1, 4, 3]
    asc_nulls_last = clause("A", order=(("k", False, False),))
    assert [r["id"] for r in partitions(asc_nulls_last, rows)[0]] == [1, 4, 3, 2]


# -- refusals
def test_guard_refuses_large_partitions():
    rows = table(*range(mr_reference.MAX_ROWS_PER_PARTITION + 1))
    with pytest.raises(CeqlError) as err:
        evaluate(clause("A+"), rows)
    assert err.value.error_class == "REFERENCE_INPUT_TOO_LARGE"
    # the bound itself is fine, even with a match as long as the partition
    assert len(evaluate(clause("A+", None, {"n": "count(*)"}), rows[:-1])) == 1


def test_unsupported_expressions_are_refused():
    with pytest.raises(CeqlError) as err:
        evaluate(clause("A", None, {"u": "upper(note)"}), [{"id": 1, "note": "x"}])
    assert err.value.error_class == "REFERENCE_UNSUPPORTED"


def test_with_unmatched_rows_and_exclusion_is_refused():
    with pytest.raises(CeqlError, match="exclusion"):
        evaluate(clause("A {- B -}", rows=m.WITH_UNMATCHED), table(1, 2))


def test_shares_no_code_with_the_engine():
    # the oracle reads only the syntax tree, sqlglot and the errors (docs/architecture.md)
    source = Path(mr_reference.__file__).read_text()
    imported = set()
    for node in pyast.walk(pyast.parse(source)):
        if isinstance(node, pyast.ImportFrom):
            imported.add(node.module)
        elif isinstance(node, pyast.Import):
            imported.update(a.name for a in node.names)
    cerql_modules = {name for name in imported if name.startswith("cerql")}
    assert cerql_modules <= {"cerql", "cerql.errors"}, cerql_modules
    assert "from cerql import mr_ast" in source
