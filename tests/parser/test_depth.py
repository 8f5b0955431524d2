"""Deep and long queries (issue 15 item 4): chains of hundreds of atoms, parentheses nested
inside a bracket and queries of tens of kilobytes run (the stages that recurse get room,
cerql/parser/depth.py); deeper than the documented limits is a ParseError QUERY_TOO_COMPLEX
with a position and a hint, never a RecursionError or a lark VisitError."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

import cerql
from cerql.errors import ParseError
from cerql.parser.depth import MAX_PARENTHESES, MAX_PATTERN_DEPTH

# A B A B A B at ts 0..5, x = ts
STREAM = pd.DataFrame({"type": ["A", "B"] * 3, "ts": range(6), "x": range(6)})


def run(query: str) -> pd.DataFrame:
    return cerql.run(query, {"s": STREAM})


def test_490_chained_sequence_atoms():
    """490 A's in sequence need 490 A's; the stream has 3: no result (it was a VisitError)."""
    assert len(run("SELECT * FROM s WHERE " + " ; ".join(["A"] * 490) + " ORDER BY ts")) == 0


def test_chained_sequence_that_matches():
    """A ; A ; A (three A's of three) written with 2 AS: one result; a 250-long chain of
    alternating B OR B keeps the parser busy too."""
    q = "SELECT * FROM s WHERE A ; A ; A " + " OR B" * 250 + " ORDER BY ts"
    assert len(run(q)) == 1 + 3  # {0, 2, 4} and each B alone


def test_490_or_atoms():
    """A OR A OR … (490 times): each A is one result, 3 in all."""
    assert len(run("SELECT * FROM s WHERE " + " OR ".join(["A"] * 490) + " ORDER BY ts")) == 3


def test_47_nested_parentheses_in_a_bracket():
    """x > 0 holds for the A's at ts 2 and 4."""
    q = "SELECT * FROM s WHERE A AS a FILTER a[" + "(" * 47 + "x > 0" + ")" * 47 + "] ORDER BY ts"
    assert len(run(q)) == 2


def test_a_47_kb_filter():
    """4 700 equalities joined by OR (55 KB): x in 0..4699 holds for every A."""
    q = "SELECT * FROM s WHERE A AS a FILTER a[" + " OR ".join(f"x = {i}" for i in range(4700)) + "] ORDER BY ts"
    assert len(q) > 47_000
    assert len(run(q)) == 3


def test_recursion_limit_is_put_back():
    before = sys.getrecursionlimit()
    run("SELECT * FROM s WHERE " + " OR ".join(["A"] * 300) + " ORDER BY ts")
    assert sys.getrecursionlimit() == before


def test_5000_nested_parentheses_are_too_complex():
    q = "SELECT * FROM s WHERE A AS a FILTER a[" + "(" * 5000 + "x > 0" + ")" * 5000 + "] ORDER BY ts"
    with pytest.raises(ParseError) as err:
        run(q)
    assert err.value.error_class == "QUERY_TOO_COMPLEX"
    # "[" is column 38 and depth 1, so depth MAX_PARENTHESES + 1 is the "(" at column 38 + MAX_PARENTHESES
    assert (err.value.line, err.value.column) == (1, 38 + MAX_PARENTHESES)
    assert err.value.hint


def test_5000_nested_pattern_parentheses_are_too_complex():
    with pytest.raises(ParseError) as err:
        cerql.parse("SELECT * FROM s WHERE " + "(" * 5000 + "A" + ")" * 5000)
    assert err.value.error_class == "QUERY_TOO_COMPLEX"


def test_too_long_a_chain_is_too_complex():
    with pytest.raises(ParseError) as err:
        cerql.parse("SELECT * FROM s WHERE " + " ; ".join(["A"] * (MAX_PATTERN_DEPTH + 100)))
    assert err.value.error_class == "QUERY_TOO_COMPLEX"
    assert err.value.line == 1 and err.value.column is not None


def test_parentheses_in_strings_do_not_count():
    q = "SELECT * FROM s WHERE A AS a FILTER a[CAST(x AS STRING) != '" + "(" * 400 + "'] ORDER BY ts"
    assert len(run(q)) == 3
