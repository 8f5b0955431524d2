"""MATCH_RECOGNIZE without Spark: ``cerql.run`` and ``cerql.explain`` of a row pattern query.

Input: MATCH_RECOGNIZE query text (``cerql.api`` sends it here when the front door's
``dialect_of`` says so) and tables by name. Output: the query's result as a pandas DataFrame or
an Arrow table, or the explanation. The stages, in order: the front door
(``front.plan_row_pattern``: parse, check, compile the pattern to its NFA), the source table,
the local engine (exec/mr_engine.py: partitions, order, DEFINE bits, the matcher, MEASURES and
the layout) or the oracle (exec/mr_reference.py, ``engine="reference"``), then the query around
the item (exec/mr_outer.py). What runs without Spark gives Spark's answer or is refused
(docs/semantics.md, "MATCH_RECOGNIZE").
"""

from __future__ import annotations

from typing import Any, MutableMapping

import pyarrow as pa

from cerql.errors import AnalysisError, CeqlError, UnsupportedError, start_of
from cerql.exec import mr_reference
from cerql.exec.mr_engine import MAX_THREADS, matcher_for, run_match_recognize
from cerql.exec.mr_outer import outer_view, run_outer
from cerql.exec.stream import as_arrow
from cerql.planner import front


def matcher(planned: front.RowPatternPlanned, max_threads: int = MAX_THREADS):
    """The matcher the local engine runs the planned pattern with: the Pike kernel when every
    DEFINE reads the current row alone, else the thread matcher (exec/mr_engine.py
    ``matcher_for``), whose live threads per partition ``max_threads`` bounds."""
    return matcher_for(planned.clause, planned.text, planned.nfa, planned.skip, planned.analysis.row_local,
                       max_threads)


def source_table(planned: front.RowPatternPlanned, tables: MutableMapping[str, Any]) -> pa.Table:
    """The table the item reads, by the name written before MATCH_RECOGNIZE (case-insensitively)."""
    clause, text = planned.clause, planned.text
    at = start_of(clause.span) if clause.span is not None else 0
    if clause.source_is_query:
        raise UnsupportedError.at(text, at, "A subquery before MATCH_RECOGNIZE runs on Spark only",
                                  "LOCAL_OUTER_QUERY", "pass the rows as a table: cerql.run(query, {'t': df}) "
                                  "with FROM t MATCH_RECOGNIZE (...), or run it with spark.cer_sql")
    given = {name.lower(): table for name, table in tables.items()}
    table = given.get(clause.source.lower())
    if table is None:
        raise AnalysisError.at(text, at, f"Unknown source '{clause.source}'", "UNKNOWN_SOURCE",
                               f"pass it by name: cerql.run(query, {{'{clause.source}': df}})"
                               + (f"; the tables given are {', '.join(tables)}" if tables else ""))
    try:
        return as_arrow(table)
    except TypeError:
        raise UnsupportedError.at(text, at, f"Table '{clause.source}' is a {type(table).__name__}: run takes "
                                  "pandas DataFrames and Arrow tables", "UNSUPPORTED_TABLE",
                                  "run it on Spark: cerql.cer_sql(spark, query, t=df)") from None


def item_result(planned: front.RowPatternPlanned, table: pa.Table, engine: str) -> pa.Table:
    """The MATCH_RECOGNIZE item's rows, by the local engine or by the oracle (in the engine's
    schema, which the oracle's Python values are read into)."""
    clause, text = planned.clause, planned.text
    result = run_match_recognize(clause, table if engine == "local" else table.schema.empty_table(), text,
                                 matcher(planned))
    if engine == "reference":
        rows = mr_reference.evaluate(clause, table.to_pylist())
        result = pa.Table.from_pylist(rows, schema=result.schema)
    return result


def run(text: str, tables: MutableMapping[str, Any], engine: str, output: str):
    """``cerql.run`` of a MATCH_RECOGNIZE query (module docstring)."""
    planned = front.plan_row_pattern(text)
    try:
        result = item_result(planned, source_table(planned, tables), engine)
        query = planned.query
        view = outer_view(query.outer_sql)
        result = run_outer(view[1] if view else query.outer_sql, query.placeholder, result)
    except CeqlError as err:
        raise err.with_text(text)
    out = result if output == "arrow" else result.to_pandas()
    if view is not None:
        tables[view[0]] = out
    return out


def explain(text: str) -> str:
    """``cerql.explain`` of a MATCH_RECOGNIZE query without Spark: the item, how each DEFINE is
    evaluated, the NFA and the query around it."""
    planned = front.plan_row_pattern(text)
    clause, analysis = planned.clause, planned.analysis
    lines = [f"query: MATCH_RECOGNIZE over {clause.source}", f"variables: {', '.join(analysis.variables)}"]
    for variable in analysis.variables:
        condition = analysis.defines.get(variable)
        if condition is None:
            lines.append(f"  {variable}: no DEFINE, every row (TRUE)")
        elif variable in analysis.row_local:
            lines.append(f"  {variable}: {condition.text}: row-local, one bit per row computed before the matcher")
        else:
            lines.append(f"  {variable}: {condition.text}: reads the rows mapped so far, checked per thread")
    lines.append(planned.nfa.describe())
    lines.append(f"around the item: {planned.query.outer_sql}")
    return "\n".join(lines)


__all__ = ["explain", "item_result", "matcher", "run", "source_table"]
