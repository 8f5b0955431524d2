"""The SQL-cell function ``cerql(TABLE(t), 'query')`` for a MATCH_RECOGNIZE query
(docs/semantics.md, "SQL cells").

Input: the query text and the TABLE argument's Spark schema (in the function's ``analyze``),
then one PARTITION BY group's rows as an Arrow table (in its instance). Output: what
spark/sql_cells.py hands Spark: the item's output schema, the partitioning and order Catalyst
gives the TABLE argument, and the item's rows.

Why the function gives the item alone: a table function's instance sees one PARTITION BY group,
so the query around the item (WHERE, GROUP BY, JOIN, ORDER BY over all groups) cannot run
inside it. The query must be the item alone (``SELECT * FROM t MATCH_RECOGNIZE (...) [AS m]``);
anything around it is refused with a hint to write it around the function call in SQL, or to
use ``spark.cer_sql``, which runs it as Spark SQL.

How the rows reach the local engine (cerql/exec/mr_engine.py, as ``cerql.run`` and
``cer_sql``'s tasks run it): Catalyst partitions the TABLE by the PARTITION BY expressions (one
partition without them) and orders each partition by ORDER BY as written, then by the other
columns' values. A TABLE argument has no input order, so rows that tie on ORDER BY are ordered
by their values (``cer_sql`` orders them as Spark read them): the result is the same on every
run. Spark makes one instance per PARTITION BY group, which matches the group batch by batch as
its rows come, as ``cer_sql``'s tasks do (exec/mr_incremental.py), computing the DEFINE bits
over the rows it holds: it holds the rows of the matches still undecided, and one undecided over
``MAX_MATCH_ROWS`` rows fails with a CeqlError.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Iterator

import pyarrow as pa
import sqlglot
from sqlglot import exp

from cerql import row_pattern
from cerql.errors import CeqlError, UnsupportedError, start_of
from cerql.exec.mr_incremental import GroupMatcher, local_bits
from cerql.exec.mr_outer import outer_view
from cerql.planner import front
from cerql.spark.expressions import quoted
from cerql.spark.lower import arrow_schema, spark_type  # Arrow types as Spark types, as cer_sql
from cerql.spark.mr_lower import result_schema  # the item's schema, as cer_sql

MAX_MATCH_ROWS = 10_000_000  # rows one undecided match may hold (analyze() cannot read a Spark conf)
LIMIT_HINT = ("bound the pattern's quantifiers (A{1,100} for A+), partition more finely, or run the query with "
              "spark.cer_sql, whose limit is the Spark conf cerql.matchRecognize.maxMatchRows")
TABLE_HINT = "cast it or leave it out: TABLE(SELECT ... FROM t)"
AROUND_HINT = ("cerql() gives the MATCH_RECOGNIZE item's rows: write the rest around the call in SQL "
               "(SELECT ... FROM cerql(TABLE(t), 'SELECT * FROM t MATCH_RECOGNIZE (...)') WHERE ... GROUP BY ...), "
               "or run the whole query with spark.cer_sql")


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A MATCH_RECOGNIZE query checked against one TABLE schema: what ``analyze`` returns and
    each instance runs."""

    planned: front.RowPatternPlanned
    arrow: pa.Schema        # the TABLE argument's rows as the engine reads them
    schema: Any             # Spark StructType of the item's rows
    partition_by: tuple[str, ...]  # Spark SQL expressions Catalyst partitions by
    order_by: tuple[tuple[str, bool, bool | None], ...]  # (expression, ascending, NULLS FIRST or None)
    matcher: Any            # the compiled pattern (row_pattern.matcher), shared by the worker's instances


def _is_item_alone(outer_sql: str, placeholder: str) -> bool:
    """Whether the query around the item is ``SELECT * FROM <item> [AS alias]`` and nothing else."""
    tree = sqlglot.parse_one(outer_sql, read="spark")
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1 or not isinstance(tree.expressions[0], exp.Star):
        return False
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None or not isinstance(source.this, exp.Table) or source.this.name != placeholder:
        return False
    return all(not value for key, value in tree.args.items() if key not in ("expressions", "from_", "from"))


def _refusals(planned: front.RowPatternPlanned) -> None:
    """What the function cannot run: a view, a subquery source, a query around the item."""
    query, clause, text = planned.query, planned.clause, planned.text
    at = start_of(clause.span) if clause.span is not None else 0
    if outer_view(query.outer_sql) is not None:
        raise UnsupportedError.at(text, 0, "cerql() returns its result; it cannot create a view",
                                  "VIEW_IN_TABLE_FUNCTION", "drop CREATE ... AS, and write "
                                  "CREATE TEMP VIEW v AS SELECT * FROM cerql(TABLE(t), '...')")
    if clause.source_is_query:
        raise UnsupportedError.at(text, at, "cerql() reads its TABLE argument, not a subquery before MATCH_RECOGNIZE",
                                  "SUBQUERY_IN_TABLE_FUNCTION", "put the subquery in the TABLE argument: "
                                  "cerql(TABLE(SELECT ...), 'SELECT * FROM t MATCH_RECOGNIZE (...)')")
    if not _is_item_alone(query.outer_sql, query.placeholder):
        raise UnsupportedError.at(text, 0, "cerql() runs the MATCH_RECOGNIZE item alone, not the query around it",
                                  "OUTER_QUERY_IN_TABLE_FUNCTION", AROUND_HINT)


@functools.lru_cache(maxsize=64)
def prepare(text: str, schema_json: str) -> Prepared:
    """Plan ``text`` and check it against the TABLE schema (the local engine over no rows of it,
    which raises what a schema shows: an unknown column, a DEFINE of the wrong type); cached per
    Python worker, since Spark makes an instance for every PARTITION BY group."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_json_string

    planned = front.plan_row_pattern(text)
    try:
        _refusals(planned)
        struct = _parse_datatype_json_string(schema_json)
        arrow = arrow_schema(struct, text, 0, "the TABLE argument", TABLE_HINT)
        result = result_schema(planned, arrow)
    except CeqlError as err:
        raise err.with_text(text)
    clause = planned.clause
    order = tuple((key.expr.text, not key.descending, key.nulls_first) for key in clause.order_by)
    return Prepared(planned, arrow, StructType([StructField(f.name, spark_type(f.type), True) for f in result]),
                    tuple(e.text for e in clause.partition_by), order, row_pattern.matcher(planned))


def tie_breakers(prepared: Prepared, orderable) -> list[str]:
    """The TABLE columns that order rows tying on ORDER BY, by value (module docstring): those
    Spark can sort (``orderable`` of the column's name) and name (spelled one way only)."""
    names = prepared.arrow.names
    lowered = [n.lower() for n in names]
    return [quoted(n) for n in names if orderable(n) and lowered.count(n.lower()) == 1]


def group_matcher(prepared: Prepared) -> GroupMatcher:
    """The matcher of one PARTITION BY group (an instance's), fed its rows as they come
    (exec/mr_incremental.py), the DEFINE bits computed over the rows it holds."""
    planned, matcher = prepared.planned, prepared.matcher
    return GroupMatcher(planned.clause, planned.text, matcher, bits=local_bits(planned.clause, planned.text, matcher),
                        max_rows=MAX_MATCH_ROWS, limit_hint=LIMIT_HINT)


def rows_of(group: GroupMatcher, table: pa.Table | None, last: bool) -> Iterator[tuple]:
    """The item's rows that the group's next rows (``table``; ``last``: the group ends with
    them) decide, as Python tuples in the output schema."""
    if last:
        results = group.finish(table)
    else:
        results = group.feed(table) if table is not None else iter(())
    for out in results:
        yield from zip(*[column.to_pylist() for column in out.columns])


__all__ = ["AROUND_HINT", "MAX_MATCH_ROWS", "Prepared", "group_matcher", "prepare", "rows_of", "tie_breakers"]
