"""The public functions of cerql that need no Spark: run, parse, analyze, explain."""

from __future__ import annotations

import pyarrow as pa
import pytest

import cerql
from tests.support import match_sets, typed_stream


def test_run_accepts_arrow_tables():
    table = pa.Table.from_pandas(typed_stream("A B A B"), preserve_index=False)
    out = cerql.run("SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", {"s": table})
    assert match_sets(out) == [(0, 1), (0, 3), (2, 3)]


def test_create_temp_view_stores_the_result_in_tables():
    tables = {"s": typed_stream("A B A B")}
    out = cerql.run("CREATE TEMP VIEW pairs AS SELECT * FROM s WHERE A AS a ; B AS b ORDER BY ts", tables)
    assert tables["pairs"] is out
    assert len(out) == 3


def test_create_temp_view_without_replace_refuses_an_existing_name():
    tables = {"s": typed_stream("A B"), "pairs": typed_stream("A")}
    with pytest.raises(cerql.AnalysisError) as err:
        cerql.run("CREATE TEMP VIEW pairs AS SELECT * FROM s WHERE A ; B ORDER BY ts", tables)
    assert err.value.error_class == "VIEW_EXISTS"


def test_create_or_replace_temp_view_replaces():
    tables = {"s": typed_stream("A B"), "pairs": typed_stream("A")}
    out = cerql.run("CREATE OR REPLACE TEMP VIEW pairs AS SELECT * FROM s WHERE A ; B ORDER BY ts", tables)
    assert tables["pairs"] is out and len(out) == 1


def test_a_view_can_be_queried_as_a_source():
    tables = {"s": typed_stream("A B A B")}
    cerql.run("CREATE TEMP VIEW pairs AS SELECT a FROM s WHERE A AS a ; B AS b ORDER BY ts", tables)
    counted = tables["pairs"].assign(type="P")
    out = cerql.run("SELECT * FROM p WHERE P AS x ; P AS y ORDER BY match_end", {"p": counted})
    # the view's rows end at 1, 3, 3; the tie on match_end is broken by row ordinal, so
    # every ordered pair of the three rows is a match
    assert sorted(out["match_start"].tolist()) == [1, 1, 3]
    assert sorted(out["match_end"].tolist()) == [3, 3, 3]


def test_unknown_engine_is_a_clear_error():
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run("SELECT * FROM s WHERE A ORDER BY ts", {"s": typed_stream("A")}, engine="flink")
    assert err.value.error_class == "UNKNOWN_ENGINE"


def test_run_rejects_other_input_types():
    with pytest.raises(cerql.UnsupportedError, match="Table 's' is a list") as err:
        cerql.run("SELECT * FROM s WHERE A ORDER BY ts", {"s": [1, 2]})
    assert err.value.error_class == "UNSUPPORTED_TABLE" and (err.value.line, err.value.column) == (1, 15)
    assert "pandas.DataFrame or a pyarrow.Table" in err.value.hint


def test_explain_lists_variables_and_outputs():
    text = cerql.explain("SELECT * FROM s WHERE A AS a ; B+ AS b")
    assert "a: one event" in text and "b: many events" in text
    assert "outputs: a, b" in text


def test_errors_are_ceql_errors_with_positions():
    with pytest.raises(cerql.CeqlError) as err:
        cerql.parse("SELECT * FROM s\nWHERE A ; ; B")
    assert isinstance(err.value, cerql.ParseError)
    assert (err.value.line, err.value.column) == (2, 11)


def test_analysis_error_is_also_a_value_error():
    assert issubclass(cerql.AnalysisError, ValueError)
    assert issubclass(cerql.AnalysisError, cerql.CeqlError)


def test_empty_query_is_a_parse_error():
    with pytest.raises(cerql.ParseError) as err:
        cerql.parse("  -- nothing\n")
    assert err.value.error_class in ("EMPTY_QUERY", "SYNTAX_ERROR")
