"""Bad queries: every error is a CeqlError subclass with a stable error class, the position of
the offending token, a caret under it and a hint (docs/architecture.md, "Rules of the house").

Each case names the stage that must reject the query:

- ``parse``: ``cerql.parse`` (syntax errors, ParseError),
- ``analyze``: ``cerql.analyze`` (static checks that need no schema),
- ``run``: ``cerql.run`` over the small tables below (checks against the source schemas),
- ``local``: the same with the automaton engine (its relaxed automaton must not hide the error).

Positions are 1-based (line, column) of the first character of the offending token; for an
error at the end of the query they are the position just after its last character.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql


def _tables() -> dict[str, pd.DataFrame]:
    ts = pd.to_datetime(["2024-01-01 09:00:00", "2024-01-01 09:00:01", "2024-01-01 09:00:02"])
    return {
        # a type column, one timestamp column, numeric and string columns
        "stock": pd.DataFrame({
            "type": ["SELL", "BUY", "BUY"], "ts": ts, "name": ["IBM", "IBM", "HP"],
            "price": [10.0, 11.0, 12.0], "volume": [100, 200, 300], "seq": [1, 2, 3],
        }),
        # no TIMESTAMP/DATE column
        "ticks": pd.DataFrame({"type": ["A", "B", "A"], "seq": [1, 2, 3], "price": [1.0, 2.0, 3.0]}),
        # no type column
        "plain": pd.DataFrame({"ts": ts, "price": [1.0, 2.0, 3.0]}),
        # both type and event_type
        "both": pd.DataFrame({"type": ["A", "B", "A"], "event_type": ["A", "B", "A"], "ts": ts}),
        # a source whose name contains the word "consume"
        "consumers": pd.DataFrame({"type": ["A", "B", "A"], "ts": ts, "name": ["x", "y", "z"]}),
    }


def _raise(via: str, query: str) -> cerql.CeqlError:
    with pytest.raises(cerql.CeqlError) as info:
        if via == "parse":
            cerql.parse(query)
        elif via == "analyze":
            cerql.analyze(query)
        elif via == "local":  # the automaton engine
            cerql.run(query, _tables())
        else:
            cerql.run(query, _tables(), engine="reference")
    return info.value


P, A, U = cerql.ParseError, cerql.AnalysisError, cerql.UnsupportedError

# (id, stage, query, Python class, error_class, line, column)
CASES = [
    # ------------------------------------------------------------------ syntax: missing clauses
    ("missing_from", "parse",
     "SELECT *\nWHERE SELL ; BUY",
     P, "MISSING_FROM", 2, 1),
    ("missing_where_before_partition", "parse",
     "SELECT * FROM stock\nPARTITION BY [name]",
     P, "MISSING_WHERE", 2, 1),
    ("missing_where_at_end", "parse",
     "SELECT * FROM stock",
     P, "MISSING_WHERE", 1, 20),
    ("empty_pattern_at_end", "parse",
     "SELECT * FROM stock WHERE",
     P, "EMPTY_PATTERN", 1, 26),
    # the pattern is missing: the caret belongs on the clause keyword that follows WHERE
    ("empty_pattern_before_partition", "parse",
     "SELECT * FROM stock WHERE\nPARTITION BY [name]",
     P, "EMPTY_PATTERN", 2, 1),
    ("empty_pattern_before_within", "parse",
     "SELECT * FROM stock WHERE\nWITHIN 5 EVENTS",
     P, "EMPTY_PATTERN", 2, 1),
    # SELECT with no projection: the caret belongs on FROM
    ("missing_projection", "parse",
     "SELECT FROM stock WHERE SELL",
     P, "SYNTAX_ERROR", 1, 8),
    # a trailing comma in SELECT: the caret belongs on FROM, not at the end of the query
    ("trailing_comma_in_select", "parse",
     "SELECT a.price, FROM stock WHERE SELL AS a",
     P, "SYNTAX_ERROR", 1, 17),
    # ------------------------------------------------------------------ syntax: dangling operators
    ("dangling_or_at_end", "parse",
     "SELECT * FROM stock WHERE SELL OR",
     P, "DANGLING_OPERATOR", 1, 34),
    ("double_semicolon", "parse",
     "SELECT * FROM stock\nWHERE SELL ; ; BUY",
     P, "DANGLING_OPERATOR", 2, 14),
    ("dangling_as", "parse",
     "SELECT * FROM stock WHERE SELL AS\nWITHIN 5 EVENTS",
     P, "DANGLING_OPERATOR", 2, 1),
    # an operator left dangling before the next clause: the operand is missing where the clause starts
    ("dangling_semicolon_before_partition", "parse",
     "SELECT * FROM stock\nWHERE SELL ;\nPARTITION BY [name]",
     P, "DANGLING_OPERATOR", 3, 1),
    ("dangling_colon_before_within", "parse",
     "SELECT * FROM stock\nWHERE SELL :\nWITHIN 5 EVENTS",
     P, "DANGLING_OPERATOR", 3, 1),
    ("dangling_or_before_limit", "parse",
     "SELECT * FROM stock WHERE SELL OR\nLIMIT 5",
     P, "DANGLING_OPERATOR", 2, 1),
    # two atoms with no operator between them (MATCH_RECOGNIZE's PATTERN (A B)): not an empty
    # pattern, not a strategy; the hint writes ; between them (tests/parser/test_teaching_errors.py)
    ("missing_operator_between_atoms", "parse",
     "SELECT * FROM stock WHERE SELL BUY",
     P, "MISSING_OPERATOR", 1, 32),
    ("missing_operator_after_sequence", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY SELL",
     P, "MISSING_OPERATOR", 1, 38),
    # ------------------------------------------------------------------ syntax: parentheses
    ("unclosed_parenthesis", "parse",
     "SELECT * FROM stock\nWHERE (SELL ; BUY\nWITHIN 5 EVENTS",
     P, "UNBALANCED_PARENTHESES", 3, 1),
    ("extra_closing_parenthesis", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY)",
     P, "UNBALANCED_PARENTHESES", 1, 37),
    ("unclosed_bracket", "parse",
     "SELECT * FROM stock WHERE SELL AS s FILTER s[price > 1",
     P, "SYNTAX_ERROR", 1, 45),
    # ------------------------------------------------------------------ syntax: strategies
    ("strategy_inside_pattern", "parse",
     "SELECT * FROM stock WHERE SELL ; NEXT BUY",
     P, "STRATEGY_IN_PATTERN", 1, 34),
    ("strategy_at_pattern_start", "parse",
     "SELECT *\nFROM stock\nWHERE MAX SELL ; BUY",
     P, "STRATEGY_IN_PATTERN", 3, 7),
    ("bracket_on_atom", "parse",
     "SELECT * FROM stock WHERE SELL[price > 1]",
     P, "BRACKET_ON_ATOM", 1, 31),
    # ------------------------------------------------------------------ syntax: after FILTER
    ("sequence_after_filter", "parse",
     "SELECT * FROM stock WHERE SELL FILTER SELL[price > 1] ; BUY",
     P, "PATTERN_AFTER_FILTER", 1, 55),
    ("as_after_filter", "parse",
     "SELECT * FROM stock\nWHERE SELL FILTER SELL[price > 1] AS s",
     P, "PATTERN_AFTER_FILTER", 2, 35),
    ("colon_after_filter", "parse",
     "SELECT * FROM stock WHERE SELL FILTER SELL[price > 1] : BUY",
     P, "PATTERN_AFTER_FILTER", 1, 55),
    ("plus_after_filter", "parse",
     "SELECT * FROM stock WHERE SELL FILTER SELL[price > 1] +",
     P, "PATTERN_AFTER_FILTER", 1, 55),
    # docs/language.md, "Precedence and parentheses": a pattern OR after a FILTER needs parentheses
    ("pattern_or_after_filter", "analyze",
     "SELECT * FROM stock WHERE SELL FILTER SELL[price > 1] OR BUY",
     P, "PATTERN_AFTER_FILTER", 1, 55),
    # ------------------------------------------------------------------ syntax: WITHIN
    ("within_unknown_unit", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN 5 weeks",
     P, "BAD_WINDOW", 1, 47),
    ("within_without_unit", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY\nWITHIN 5",
     P, "BAD_WINDOW", 2, 9),
    ("within_interval_unknown_unit", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN INTERVAL '5 weeks'",
     P, "INVALID_WINDOW", 1, 54),
    ("within_interval_week", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN INTERVAL '1' WEEK",
     P, "BAD_WINDOW", 1, 58),
    ("within_fractional_events", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN 1.5 EVENTS",
     P, "EXPECTED_INTEGER", 1, 45),
    ("within_two_columns", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN 5 [ts, seq]",
     P, "INVALID_WINDOW", 1, 47),
    ("within_events_with_column", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY WITHIN 5 EVENTS [ts]",
     P, "BAD_WINDOW", 1, 54),
    # ------------------------------------------------------------------ syntax: LIMIT, CONSUME, ORDER BY
    ("limit_fraction", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY LIMIT 1.5",
     P, "EXPECTED_INTEGER", 1, 44),
    ("limit_negative", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY LIMIT -1",
     P, "BAD_LIMIT", 1, 44),
    ("limit_word", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY\nLIMIT ten",
     P, "BAD_LIMIT", 2, 7),
    ("consume_by_all", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY CONSUME BY ALL",
     P, "BAD_CONSUME", 1, 49),
    ("consume_by_nothing", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY CONSUME BY",
     P, "BAD_CONSUME", 1, 48),
    ("order_by_desc", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY\nORDER BY ts,\n         seq DESC",
     P, "DESC_ORDER", 3, 14),
    ("order_by_expression_without_brackets", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY ORDER BY ts, upper(name)",
     P, "KEY_EXPRESSION_WITHOUT_BRACKETS", 1, 51),
    ("partition_by_aggregate", "analyze",
     "SELECT * FROM stock WHERE SELL ; BUY PARTITION BY [max(price)]",
     A, "INVALID_KEY_EXPRESSION", 1, 52),
    ("partition_by_sql_after_expression", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY PARTITION BY [price + 1 FROM t]",
     P, "INVALID_SQL_EXPRESSION", 1, 62),
    # ------------------------------------------------------------------ syntax: clause order
    ("partition_after_within", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY\nWITHIN 5 EVENTS\nPARTITION BY [name]",
     P, "CLAUSE_ORDER", 3, 1),
    ("within_after_limit", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY LIMIT 5 WITHIN 5 EVENTS",
     P, "CLAUSE_ORDER", 1, 46),
    ("partition_after_order", "parse",
     "SELECT * FROM stock WHERE SELL ; BUY\nORDER BY ts\nPARTITION BY [name]",
     P, "CLAUSE_ORDER", 3, 1),
    # ------------------------------------------------------------------ syntax: Spark SQL fragments
    ("spark_sql_double_operator", "parse",
     "SELECT * FROM stock WHERE SELL AS s FILTER s[price = = 1]",
     P, "INVALID_SQL_EXPRESSION", 1, 54),
    ("spark_sql_missing_operand_multiline", "parse",
     "SELECT *\nFROM stock\nWHERE SELL AS s\nFILTER s[price >\n         AND volume > 1]",
     P, "INVALID_SQL_EXPRESSION", 5, 10),
    ("spark_sql_two_values", "parse",
     "SELECT * FROM stock WHERE SELL AS s FILTER s[price 2]",
     P, "INVALID_SQL_EXPRESSION", 1, 52),
    # ------------------------------------------------------------------ static analysis
    ("filter_variable_not_bound", "analyze",
     "SELECT * FROM stock WHERE SELL AS s ; BUY FILTER b[price > 1]",
     A, "UNBOUND_FILTER_VARIABLE", 1, 50),
    ("filter_variable_bound_outside_filtered_pattern", "analyze",
     "SELECT *\nFROM stock\nWHERE (SELL AS s FILTER b[price > 1]) ; BUY AS b",
     A, "UNBOUND_FILTER_VARIABLE", 3, 25),
    ("filter_second_term_not_bound", "analyze",
     "SELECT * FROM stock WHERE SELL AS s\nFILTER s[price > 1] AND b[price > 2]",
     A, "UNBOUND_FILTER_VARIABLE", 2, 25),
    ("filter_column_not_qualified", "analyze",
     "SELECT * FROM stock WHERE SELL AS s FILTER price > 1",
     A, "UNQUALIFIED_FILTER_COLUMN", 1, 44),
    ("unknown_variable_in_select", "analyze",
     "SELECT s, c FROM stock WHERE SELL AS s ; BUY AS b",
     A, "UNKNOWN_VARIABLE", 1, 11),
    # the offending token is the qualifier c, not the column name
    ("unknown_variable_qualifying_a_column", "analyze",
     "SELECT s, c.price FROM stock WHERE SELL AS s ; BUY AS b",
     A, "UNKNOWN_VARIABLE", 1, 11),
    ("consume_any_with_partition", "analyze",
     "SELECT * FROM stock WHERE SELL ; BUY\nPARTITION BY [name]\nCONSUME BY ANY",
     A, "CONSUME_ANY_WITH_PARTITION", 3, 1),
    # the caret is on the CONSUME clause, not on an earlier name that contains the word
    ("consume_any_with_partition_source_named_consumers", "analyze",
     "SELECT * FROM consumers WHERE A ; B\nPARTITION BY [name]\nCONSUME BY ANY",
     A, "CONSUME_ANY_WITH_PARTITION", 3, 1),
    ("variable_clashes_with_partition_column", "analyze",
     "SELECT * FROM stock\nWHERE SELL AS name ; BUY\nPARTITION BY [name]",
     A, "OUTPUT_NAME_CLASH", 2, 15),
    ("variable_named_match_id", "analyze",
     "SELECT * FROM stock WHERE SELL AS match_id",
     A, "OUTPUT_NAME_CLASH", 1, 35),
    ("type_variable_clashes_with_partition_column", "analyze",
     "SELECT * FROM stock WHERE name ; BUY PARTITION BY [name]",
     A, "OUTPUT_NAME_CLASH", 1, 27),
    # the offending token is the alias, not the start of the SELECT item
    ("select_alias_named_match_start", "analyze",
     "SELECT s.price AS match_start FROM stock WHERE SELL AS s",
     A, "OUTPUT_NAME_CLASH", 1, 19),
    ("duplicate_source", "analyze",
     "SELECT * FROM stock, stock WHERE SELL",
     A, "DUPLICATE_SOURCE", 1, 22),
    # the offending token is the repeated alias x
    ("duplicate_source_alias", "analyze",
     "SELECT *\nFROM stock AS x,\n     ticks AS x\nWHERE x>SELL",
     A, "DUPLICATE_SOURCE", 3, 15),
    ("unknown_source_in_atom", "analyze",
     "SELECT * FROM stock WHERE SELL ; trades>BUY",
     A, "UNKNOWN_SOURCE", 1, 34),
    ("window_column_not_first_order_column", "analyze",
     "SELECT * FROM stock WHERE SELL ; BUY\nORDER BY seq\nWITHIN 5 [ts]",
     A, "WINDOW_COLUMN_NOT_ORDER", 3, 8),
    # the offending token is the aggregate function, not its argument
    ("aggregate_inside_brackets", "analyze",
     "SELECT * FROM stock WHERE BUY+ AS b FILTER b[sum(volume) > 1000]",
     A, "AGGREGATE_IN_BRACKETS", 1, 46),
    # predicates across variables under +: the local engine filters each repetition
    ("cross_filter_type_mismatch_under_plus", "local",
     "SELECT * FROM stock WHERE (SELL AS s ; BUY AS b\nFILTER b.name > s.price)+",
     A, "TYPE_MISMATCH", 2, 8),
    ("unsupported_aggregate_in_filter", "analyze",
     "SELECT * FROM stock WHERE BUY+ AS b\nFILTER stddev(b.volume) > 1000",
     U, "UNSUPPORTED_AGGREGATE", 2, 8),
    ("aggregate_of_unbound_variable_in_filter", "analyze",
     "SELECT * FROM stock WHERE BUY+ AS b\nFILTER sum(c.volume) > 1000",
     A, "UNBOUND_FILTER_VARIABLE", 2, 12),
    ("unknown_column_in_cross_filter", "run",
     "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b.prize > s.price",
     A, "UNKNOWN_COLUMN", 1, 57),
    ("cross_filter_type_mismatch", "run",
     "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b.name > s.price",
     A, "TYPE_MISMATCH", 1, 55),
    ("non_boolean_cross_filter", "run",
     "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b.price + s.price",
     A, "NON_BOOLEAN_FILTER", 1, 55),
    ("other_variable_inside_brackets", "analyze",
     "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[price > s.price]",
     U, "QUALIFIED_COLUMN_IN_BRACKETS", 1, 65),
    # ------------------------------------------------------------------ schema: through cerql.run
    ("unknown_source_table", "run",
     "SELECT *\nFROM stock,\n     trades\nWHERE SELL",
     A, "UNKNOWN_SOURCE", 3, 6),
    ("unknown_column_in_bracket", "run",
     "SELECT *\nFROM stock\nWHERE SELL AS s\nFILTER s[prize > 1]",
     A, "UNKNOWN_COLUMN", 4, 10),
    ("unknown_column_in_select_expression", "run",
     "SELECT s.prize FROM stock WHERE SELL AS s",
     A, "UNKNOWN_COLUMN", 1, 10),
    ("unknown_column_in_select_var_columns", "run",
     "SELECT s[price, prize] FROM stock WHERE SELL AS s",
     A, "UNKNOWN_COLUMN", 1, 17),
    ("unknown_partition_column", "run",
     "SELECT * FROM stock WHERE SELL ; BUY\nPARTITION BY [nmae]",
     A, "UNKNOWN_COLUMN", 2, 15),
    ("unknown_partition_column_without_brackets", "run",
     "SELECT * FROM stock WHERE SELL ; BUY PARTITION BY name, sector",
     A, "UNKNOWN_COLUMN", 1, 57),
    ("unknown_order_column", "run",
     "SELECT * FROM stock WHERE SELL ; BUY\nORDER BY ts, sequence",
     A, "UNKNOWN_COLUMN", 2, 14),
    ("unknown_typed_by_column", "run",
     "SELECT * FROM stock TYPED BY kind WHERE SELL",
     A, "UNKNOWN_COLUMN", 1, 30),
    ("unknown_event_type_without_type_column", "run",
     "SELECT * FROM plain WHERE SELL ; BUY",
     A, "UNKNOWN_EVENT_TYPE", 1, 27),
    ("source_type_on_source_without_type_column", "run",
     "SELECT * FROM plain WHERE plain>SELL",
     A, "NO_TYPE_COLUMN", 1, 27),
    ("type_and_event_type_without_typed_by", "run",
     "SELECT * FROM stock, both WHERE A ; B",
     A, "AMBIGUOUS_TYPE_COLUMN", 1, 22),
    ("time_window_on_numeric_column", "run",
     "SELECT * FROM ticks WHERE A ; B ORDER BY seq WITHIN 5 MINUTES",
     A, "WINDOW_NEEDS_TIME", 1, 53),
    ("numeric_window_on_string_column", "run",
     "SELECT * FROM stock WHERE SELL ; BUY\nORDER BY name\nWITHIN 5 [name]",
     A, "WINDOW_NEEDS_NUMBER", 3, 8),
    # the offending construct is the predicate inside the brackets
    ("non_boolean_filter", "run",
     "SELECT * FROM stock WHERE SELL AS s FILTER s[price + 1]",
     A, "NON_BOOLEAN_FILTER", 1, 46),
    ("string_column_compared_to_number", "run",
     "SELECT * FROM stock\nWHERE SELL AS s\nFILTER s[name > 5]",
     A, "TYPE_MISMATCH", 3, 10),
    ("number_column_compared_to_string", "run",
     "SELECT * FROM stock WHERE SELL AS s FILTER s[price = 'high']",
     A, "TYPE_MISMATCH", 1, 46),
    ("string_arithmetic_in_select", "run",
     "SELECT s.name + 1 AS x FROM stock WHERE SELL AS s",
     A, "TYPE_MISMATCH", 1, 8),
    ("no_ordering_column", "run",
     "SELECT * FROM ticks WHERE A ; B",
     A, "NO_ORDER_COLUMN", 1, 32),
]

_PARAMS = [pytest.param(*case[1:], id=case[0]) for case in CASES]


def test_there_are_at_least_forty_bad_queries():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("via, query, cls, error_class, line, column", _PARAMS)
def test_bad_query_is_rejected_at_the_offending_token(via, query, cls, error_class, line, column):
    err = _raise(via, query)
    assert isinstance(err, cls), f"{type(err).__name__} ({err.error_class}), expected {cls.__name__}"
    assert err.error_class == error_class
    assert (err.line, err.column) == (line, column), (
        f"caret at {err.line}:{err.column}, expected {line}:{column}\n{err}")


@pytest.mark.parametrize("via, query, cls, error_class, line, column", _PARAMS)
def test_bad_query_error_has_a_hint(via, query, cls, error_class, line, column):
    err = _raise(via, query)
    assert err.hint, f"{err.error_class} has no hint:\n{err}"


def _caret_column(err: cerql.CeqlError, query: str) -> int | None:
    """The 1-based column the rendered caret points at, under the quoted query line."""
    rendered = str(err).splitlines()
    src = query.splitlines()[err.line - 1]
    for i, text in enumerate(rendered[:-1]):
        caret = rendered[i + 1]
        if text.endswith(src) and caret.strip() == "^":
            indent = len(text) - len(src)
            return caret.index("^") - indent + 1
    return None


@pytest.mark.parametrize("via, query, cls, error_class, line, column", [
    p for p in _PARAMS if p.id in {
        "missing_from", "double_semicolon", "order_by_desc", "spark_sql_missing_operand_multiline",
        "strategy_inside_pattern", "filter_variable_bound_outside_filtered_pattern",
        "cross_variable_filter", "unknown_column_in_bracket", "unknown_event_type_without_type_column",
        "time_window_on_numeric_column", "within_unknown_unit",
    }
])
def test_error_message_shows_the_line_with_a_caret(via, query, cls, error_class, line, column):
    err = _raise(via, query)
    message = str(err)
    assert message.startswith(f"[{error_class}] "), message  # as Spark's errors start
    assert f"line {err.line}, column {err.column}" in message
    assert _caret_column(err, query) == err.column, message
    assert "Hint: " in message


def test_caret_is_under_the_offending_token_on_a_later_line():
    query = "SELECT *\nFROM stock\nWHERE SELL AS s ; BUY\n  FILTER t[price > 1]"
    err = _raise("analyze", query)
    lines = str(err).splitlines()
    quoted = [i for i, text in enumerate(lines) if text.endswith("  FILTER t[price > 1]")]
    assert quoted, str(err)
    caret_line = lines[quoted[0] + 1]
    assert caret_line.rstrip().endswith("^")
    assert _caret_column(err, query) == 10
    assert (err.line, err.column) == (4, 10)


def test_error_is_a_ceql_error_not_a_library_exception():
    for via, query in [
        ("parse", "SELECT * FROM stock WHERE SELL AS s FILTER s[price = = 1]"),
        ("parse", "SELECT * FROM stock WHERE SELL ; ; BUY"),
        ("run", "SELECT * FROM stock WHERE SELL AS s FILTER s[name > 5]"),
    ]:
        err = _raise(via, query)
        assert isinstance(err, cerql.CeqlError)
        assert err.__cause__ is None or isinstance(err.__cause__, cerql.CeqlError)


def test_analysis_error_is_a_value_error():
    err = _raise("analyze", "SELECT c FROM stock WHERE SELL AS s")
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("via, query", [
    ("parse", "SELECT * FROM stock WHERE SELL ; ; BUY"),
    ("analyze", "SELECT c FROM stock WHERE SELL AS s"),
    ("analyze", "SELECT * FROM stock WHERE BUY+ AS b FILTER stddev(b.price) > 10"),
    ("run", "SELECT * FROM stock WHERE SELL ; BUY PARTITION BY [nmae]"),
])
def test_each_stage_raises_its_own_class(via, query):
    err = _raise(via, query)
    expected = {"parse": cerql.ParseError}.get(via, (cerql.AnalysisError, cerql.UnsupportedError))
    assert isinstance(err, expected)
