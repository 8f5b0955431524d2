"""The SQL-cell surface: a table function ``cerql(TABLE(t), 'query')`` (docs/semantics.md, "SQL cells").

Input: a Spark session to register on; then, per call, one TABLE argument and the CEQL text as
a constant (a literal or a named parameter marker). Output: the results, in the columns of
docs/language.md, "The output schema", one row per match, as rows of a SQL relation.

Why a row-based Python UDTF: a table function whose output columns depend on the query needs a
static ``analyze()``, and Spark's vectorized ``arrow_udtf`` has none (SPARK-53286). ``analyze``
parses and resolves the query against the TABLE argument's schema in the driver's Python worker,
so every query error is raised before Spark reads a row, and it asks Catalyst for the partitioning
(PARTITION BY columns, else one partition) and the order (ORDER BY columns, then the other
columns the query reads, so ties are broken by value, not by file order). ``eval`` only buffers
rows; every ``BATCH_ROWS`` rows they become one Arrow batch that goes through the same
:class:`cerql.exec.task.MatchTask` as ``cer_sql`` (condition bits by the local Arrow
helpers, SELECT expressions by the compiled Arrow functions), so memory is bounded by the batch
plus the window, not by the partition. The price is Spark's per-row conversion between the JVM
and Python: 4-12x slower than ``cer_sql`` on the same rows (docs/benchmarks.md, "SQL cells").
"""

from __future__ import annotations

import hashlib
import os
import sys

import dataclasses
import functools
import time
from collections import Counter
from datetime import timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn, SelectedColumn
from sqlglot import exp

from cerql.errors import AnalysisError, CeqlError, ExecutionError, UnsupportedError, start_of
from cerql.exec.driver import condition_bits
from cerql.exec.stream import drop_null_rows, firing_rows, stream_of
from cerql.expr import evaluate
from cerql.plan import AGGREGATE_COLUMN, ORDINAL_COLUMN, SOURCE_COLUMN, QueryPlan, TaskPlan
from cerql.exec.bits import firing_masks
from cerql.exec.task import BITS_COLUMN, MatchTask
from cerql.planner import front
from cerql.spark import mr_sql_cells
from cerql.spark.expressions import orderable, quoted
from cerql.spark.lower import arrow_schema
from cerql.spark.compat import udtf_class

FUNCTION_NAME = "cerql"
BATCH_ROWS = 4096  # rows per MatchTask batch: large enough to amortize Arrow, small for memory
# Spark's Arrow-optimized row UDTF (useArrow) converts every eval call's result to an Arrow
# batch, even an empty one, so for a function that yields on few calls it is slower than the
# pickled path (docs/benchmarks.md, "SQL cells"). Kept switchable for that measurement.
ARROW_IO = False


@dataclasses.dataclass(frozen=True)
class _Prepared:
    """A query resolved against one TABLE schema: what analyze returns and eval runs."""

    plan: QueryPlan              # resolved against the whole TABLE schema (bits, expressions)
    task: TaskPlan               # what MatchTask runs (variable outputs only)
    read: tuple[str, ...]        # TABLE columns eval receives, in order (the ``select``)
    arrow: pa.Schema             # Arrow schema of the rows eval receives
    schema: Any                  # Spark StructType of the output
    masks: tuple[int, ...] | None  # a kept row satisfies one of these condition sets (None: all)
    text: str = ""               # the query, for the errors of derived columns
    derived: tuple = ()          # columns computed per batch (planner/derived.py): (name, bare, origin)
    key_sql: Any = None          # derived column -> the Spark SQL Catalyst partitions or orders by


def _with_derived(prepared: "_Prepared", table: pa.Table) -> pa.Table:
    """The batch with the columns planner/derived.py asks for (key expressions, aggregates'
    arguments), computed by the local engine's expressions as ``cerql.run`` computes them."""
    from cerql.api import with_derived

    return with_derived({"t": table}, prepared.derived, prepared.text)["t"] if prepared.derived else table


def _substream_offset(plan: QueryPlan, table: pa.Table) -> int:
    """Where an instance's ordinals start: Spark makes one instance per substream and each
    counts its rows from zero, so without a part of the key two results of different substreams
    could get one match_id (it hashes the rows' ordinals). A hash of the substream key's values
    in the top bits keeps the ordinals distinct across substreams and in order within one (2**32
    rows apart, far below int64's end), the same on every run."""
    if not plan.substream_columns or table.num_rows == 0:
        return 0
    values = []
    for column in plan.substream_columns:
        value = table.column(column)[0].as_py()
        values.append(0.0 if isinstance(value, float) and value == 0 else value)  # -0.0 is 0.0's substream
    digest = hashlib.blake2b(repr(values).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x3FFF_FFFF_0000_0000


def _read_columns(plan: QueryPlan, derived=()) -> list[str]:
    """TABLE columns the query reads: keys, ordering, type columns, predicates, outputs and
    what the derived columns are computed from (those are not TABLE columns)."""
    from cerql.spark.lower import predicate_trees, shuffled_columns

    canonical = {c.lower(): c for c in plan.columns}
    read = set(shuffled_columns(plan))
    for _, bare, _ in derived:
        read.update(canonical.get(col.name.lower(), col.name) for col in bare.find_all(exp.Column))
    read.difference_update(name for name, _, _ in derived)
    read.update(s.type_column for s in plan.sources if s.type_column)
    for sql in predicate_trees(plan).values():
        for col in sql.tree.find_all(exp.Column):
            read.add(canonical.get(col.name.lower(), col.name))
    for o in plan.outputs:
        read.update(c for _, c in o.expr_columns)
    return [c for c in plan.columns if c in read]  # in the table's order


def _output_schema(plan: QueryPlan, task: TaskPlan, struct):
    """The output schema (docs/language.md, "The output schema") as a Spark StructType:
    variables from the task's schema, expressions from the Arrow type their compiled function
    gives on an empty table."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    from cerql.spark.lower import output_schema

    fields = {f.name: f for f in output_schema(task, struct).fields}
    names = list(plan.partition_result_names) + ["match_id", "match_start", "match_end"]
    out = [fields[n] for n in names]
    for o in plan.outputs:
        if o.var is not None:
            out.append(fields[o.name])
            continue
        value_type = pa.bool_() if pa.types.is_null(o.expr_type) else o.expr_type
        out.append(StructField(o.name, from_arrow_type(value_type), True))
    return StructType(out)


@functools.lru_cache(maxsize=64)
def _prepare(text: str, schema_json: str) -> _Prepared:
    """Parse and resolve ``text`` against the TABLE schema; cached per Python worker, since
    Spark makes a new UDTF instance for every partition."""
    from pyspark.sql.types import StructType, _parse_datatype_json_string

    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField

    from cerql.api import with_derived
    from cerql.spark.lower import spark_sql, task_plan

    struct: StructType = _parse_datatype_json_string(schema_json)

    def table_schema(analysis, derived) -> dict[str, pa.Schema]:
        """The TABLE argument's schema, with the derived columns each batch gets, as the one
        source's; first the refusals of a query cerql() cannot run."""
        select = analysis.select
        if analysis.view is not None:
            raise UnsupportedError.at(text, 0, "cerql() returns its result; it cannot create a view",
                                      "VIEW_IN_TABLE_FUNCTION", "drop CREATE ... AS, and write "
                                      "CREATE TEMP VIEW v AS SELECT * FROM cerql(TABLE(t), '...')")
        if len(select.sources) != 1:
            raise AnalysisError.at(text, start_of(select.sources[1].span),
                                   f"cerql() reads one table, but FROM names {len(select.sources)} sources",
                                   "ONE_SOURCE_ONLY",
                                   "union them in the TABLE argument: "
                                   "TABLE(SELECT ... FROM a UNION ALL SELECT ... FROM b), or use cerql.cer_sql")
        if select.limit is not None:
            raise UnsupportedError.at(text, text.upper().rfind("LIMIT"), "LIMIT is not supported inside cerql()",
                                      "LIMIT_IN_TABLE_FUNCTION",
                                      "put it outside: SELECT * FROM cerql(...) ORDER BY match_end, match_start LIMIT n")
        if select.navigation:  # each instance sees its batches, not the whole partition in order
            raise UnsupportedError.at(text, select.navigation[0].at, "PREV and NEXT are not supported inside cerql()",
                                      "NAVIGATION_IN_TABLE_FUNCTION", "use cerql.cer_sql or spark.cer_sql")
        source = select.sources[0]
        arrow = arrow_schema(struct, text, 0, "the TABLE argument", "cast it or leave it out: TABLE(SELECT ... FROM t)")
        return {source.name: with_derived({source.name: arrow.empty_table()}, derived, text)[source.name].schema}

    planned = front.plan(text, table_schema)
    plan, derived = planned.plan, planned.derived
    full = next(iter(planned.schemas.values()))  # the TABLE's columns, then the derived ones
    task = task_plan(plan)
    read = tuple(_read_columns(plan, derived))
    masks = firing_masks(plan)
    struct = StructType(struct.fields + [StructField(name, from_arrow_type(full.field(name).type), True)
                                         for name, _, _ in derived])
    key_sql = {name: spark_sql(bare, origin.source, lambda column: column) for name, bare, origin in derived}
    return _Prepared(plan, task, read, pa.schema([full.field(c) for c in read]),
                     _output_schema(plan, task, struct), None if masks is None else tuple(masks),
                     text, derived, key_sql)


@dataclasses.dataclass
class CerqlAnalyzeResult(AnalyzeResult):
    """What analyze hands to each UDTF instance (pickled): the query and the TABLE schema, so
    the instance finds the prepared plan in its worker's cache."""

    query: str = ""
    table_schema: str = ""
    dialect: str = "ceql"  # or "match_recognize" (spark/mr_sql_cells.py)


class CerqlFunction:
    """``cerql(TABLE(t), query)``: the matches of a CEQL query over one table, as rows.

    Register it with :func:`register`; see the module docstring for how it runs.
    """

    @staticmethod
    def analyze(table: AnalyzeArgument, query: AnalyzeArgument) -> AnalyzeResult:
        """Resolve the query against the TABLE schema: output schema, partitioning, order."""
        if not table.isTable:
            raise AnalysisError("The first argument of cerql() must be a table", error_class="TABLE_ARGUMENT",
                                hint="write cerql(TABLE(name), 'query') or cerql(TABLE(SELECT ...), 'query')")
        text = query.value
        if query.isTable or not query.isConstantExpression or not isinstance(text, str):
            raise AnalysisError("The second argument of cerql() must be the query as a constant string",
                                error_class="QUERY_ARGUMENT",
                                hint="pass a literal, or a named parameter: spark.sql(\"SELECT * FROM "
                                     "cerql(TABLE(t), :q)\", args={'q': query})")
        schema_json = table.dataType.json()
        if front.dialect_of(text) == "match_recognize":
            return CerqlFunction._analyze_row_pattern(table, text, schema_json)
        try:
            prepared = _prepare(text, schema_json)
        except CeqlError as err:
            # Spark shows the traceback above the message: keep it to this frame, since the
            # user's mistake is in the query, not in cerql's stages.
            raise err.with_traceback(None) from None
        plan = prepared.plan
        def key(column: str) -> str:  # a derived key column: the expression it is computed by
            return prepared.key_sql.get(column) or quoted(column)

        keys = [PartitioningColumn(key(c)) for c in plan.substream_columns]
        order = list(plan.order_columns)
        types = {f.name: f.dataType for f in table.dataType.fields}
        # ties broken by the other columns, but those the table spells two ways (x and X): Spark
        # cannot name them, and they are never named in the query (AMBIGUOUS_REFERENCE)
        spellings = Counter(n.lower() for n in types)
        order += [c for c in prepared.read if c not in order and c not in plan.substream_columns
                  and orderable(types[c]) and spellings[c.lower()] == 1]
        select = ([SelectedColumn(quoted(c)) for c in prepared.read]
                  if len(prepared.read) < len(table.dataType.fields) else [])
        return CerqlAnalyzeResult(
            schema=prepared.schema, withSinglePartition=not keys, partitionBy=keys,
            orderBy=[OrderingColumn(key(c)) for c in order], select=select,
            query=text, table_schema=schema_json)

    @staticmethod
    def _analyze_row_pattern(table: AnalyzeArgument, text: str, schema_json: str) -> AnalyzeResult:
        """``analyze`` of a MATCH_RECOGNIZE query: the TABLE partitioned by PARTITION BY and
        ordered by ORDER BY, then by the other columns' values (spark/mr_sql_cells.py)."""
        try:
            prepared = mr_sql_cells.prepare(text, schema_json)
        except CeqlError as err:
            raise err.with_traceback(None) from None
        types = {f.name: f.dataType for f in table.dataType.fields}
        order = [OrderingColumn(e, ascending, nulls_first) for e, ascending, nulls_first in prepared.order_by]
        order += [OrderingColumn(c) for c in mr_sql_cells.tie_breakers(prepared, lambda n: orderable(types[n]))]
        return CerqlAnalyzeResult(
            schema=prepared.schema, withSinglePartition=not prepared.partition_by,
            partitionBy=[PartitioningColumn(e) for e in prepared.partition_by], orderBy=order,
            query=text, table_schema=schema_json, dialect="match_recognize")

    def __init__(self, analyze_result: CerqlAnalyzeResult):
        self.rows: list = []
        if analyze_result.dialect == "match_recognize":  # one PARTITION BY group, matched when it ends
            self.row_pattern = mr_sql_cells.prepare(analyze_result.query, analyze_result.table_schema)
            self.group = mr_sql_cells.group_matcher(self.row_pattern)  # holds the live matches' rows
            self.flush_at = BATCH_ROWS
            return
        self.row_pattern = None
        self.flush_at = BATCH_ROWS
        self.prepared = _prepare(analyze_result.query, analyze_result.table_schema)
        self.task = MatchTask(self.prepared.task)
        self.count = 0  # rows seen by this instance: the ordinal that stands in for a row id
        self.offset: int | None = None  # its substream's share of the ordinals (``_substream_offset``)

    def eval(self, table, query: str):
        # A plain function, not a generator: Spark calls it once per row, and most calls
        # return nothing (None), which is cheaper for Spark's wrapper than an empty generator.
        self.rows.append(table)
        if len(self.rows) >= self.flush_at:
            return self._flush()
        return None

    def terminate(self):
        yield from self._flush(last=True) or ()

    # -- one batch through the task
    def _flush(self, last: bool = False):
        rows, self.rows = self.rows, []
        if self.row_pattern is not None:
            table = _arrow_rows(rows, self.row_pattern.arrow) if rows else None
            yield from mr_sql_cells.rows_of(self.group, table, last)
            return
        if not rows:
            return
        batch = self._batch(rows)
        if batch.num_rows == 0:
            return
        out = self.task.process(batch)
        if out.num_rows:
            yield from self._python_rows(out)

    def _batch(self, rows: list) -> pa.Table:
        """The rows as an Arrow table with the columns MatchTask reads (see module docstring)."""
        p = self.prepared
        plan = p.plan
        table = _with_derived(p, _arrow_rows(rows, p.arrow))
        n = table.num_rows
        table = table.append_column(SOURCE_COLUMN, pa.array(np.zeros(n, np.int32)))
        if self.offset is None:
            self.offset = _substream_offset(plan, table)
        start = self.offset + self.count
        table = table.append_column(ORDINAL_COLUMN, pa.array(np.arange(start, start + n, dtype=np.int64)))
        self.count += n
        table = drop_null_rows(plan, table)
        bits = condition_bits(plan.automaton, stream_of(plan, table))  # as the local engine's
        table = table.append_column(BITS_COLUMN, pa.array(bits))
        if p.masks is not None:  # rows that fire no transition change nothing (as in cer_sql)
            table = table.filter(pa.array(firing_rows(bits, p.masks)))
        return table

    def _python_rows(self, out: pa.Table):
        """Result rows in the output schema: variables as MatchTask built them, expressions
        evaluated on the hidden structs of the variables they read."""
        from cerql.spark.lower import EXPR_STRUCT_PREFIX

        plan = self.prepared.plan
        n = out.num_rows
        columns = [out.column(c) for c in list(plan.partition_result_names) + ["match_id", "match_start", "match_end"]]
        for o in plan.outputs:
            if o.var is not None:
                columns.append(out.column(o.name))
                continue
            values = {name: out.column(name) for name in o.expr_results}  # match_*, PARTITION BY columns
            for v, c in o.expr_columns:
                values[f"{v}.{c}"] = pc.struct_field(out.column(EXPR_STRUCT_PREFIX + v), c)
            for k, a in enumerate(o.aggregates):
                values[f"{AGGREGATE_COLUMN}{k}"] = _aggregate_column(a, out.column(EXPR_STRUCT_PREFIX + a.var))
            columns.append(evaluate(o.expr, pa.table(values) if values else pa.table({"_": pa.nulls(n)})))
        yield from zip(*[c.to_pylist() for c in columns])


def _aggregate_column(a, hidden) -> pa.Array:
    """An aggregate's value per result row, from the hidden column of its variable's events (a
    list of structs, or one nullable struct), by the local engines' rules, for all rows at once
    (cerql.exec.aggregate.grouped)."""
    from cerql.exec import aggregate

    hidden = hidden.combine_chunks() if isinstance(hidden, pa.ChunkedArray) else hidden
    if a.many:
        counts = pc.fill_null(pc.list_value_length(hidden), 0).to_numpy(zero_copy_only=False)
        events = pc.list_flatten(hidden)
    else:
        present = hidden.is_valid()
        counts = present.to_numpy(zero_copy_only=False).astype(np.int64)
        events = hidden.filter(present)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    column = None if a.column is None else pc.struct_field(events, a.column)
    return aggregate.grouped(a.kind, offsets, column, a.type)


def _arrow_rows(rows: list, schema: pa.Schema) -> pa.Table:
    """The rows Spark handed ``eval`` as an Arrow table of ``schema`` (timestamps as instants)."""
    columns = list(zip(*rows))
    return pa.Table.from_arrays([pa.array(_instants(col, f.type), type=f.type)
                                 for col, f in zip(columns, schema)], schema=schema)


def _local_is_utc() -> bool:
    return time.timezone == 0 and (not time.daylight or time.altzone == 0)


LOCAL_IS_UTC = _local_is_utc()


def _instants(values, arrow_type):
    """Spark hands a row UDTF TIMESTAMP values as naive datetimes in the worker's local time
    (and reads naive ones back the same way); Arrow would take them as UTC, so make them aware.
    Timestamps nested in struct or array columns are left as they are."""
    if LOCAL_IS_UTC or not (pa.types.is_timestamp(arrow_type) and arrow_type.tz):
        return values
    return [v.astimezone(timezone.utc) if v is not None and v.tzinfo is None else v for v in values]


def check_analyze_python(spark) -> None:
    """A classic session's driver runs the function's ``analyze`` with the executors' Python
    (``PYSPARK_PYTHON``), resolved in the driver's working folder. With a packed environment that
    is ``./environment/bin/python``, which exists only where Spark unpacked the archive, and every
    SQL cell would fail with ``Cannot run program``: say so when the function is registered, with
    the fix (docs/cluster.md, "A packed environment"). Connect's server runs ``analyze`` itself."""
    try:
        python = spark.sparkContext.pythonExec
    except Exception:  # noqa: BLE001 - a Connect session has no SparkContext here
        return
    if not python or os.path.isabs(python) or os.sep not in python or os.path.exists(python):
        return
    folder = python.split(os.sep)[1] if python.startswith("." + os.sep) else python.split(os.sep)[0]
    raise ExecutionError(
        f"SQL cells run their analyze step on the driver with Spark's Python, {python}, which is not in the "
        f"driver's working folder {os.getcwd()} (a packed environment is unpacked on the executors only)",
        error_class="SQL_CELL_DRIVER_PYTHON_MISSING",
        hint=f"link the driver's own environment there, once: ln -s {sys.prefix} {os.path.join(os.getcwd(), folder)} "
             "(docs/cluster.md, \"A packed environment\"); cer_sql needs no such link")


def register(spark, name: str = FUNCTION_NAME):
    """Register the table function ``cerql`` on a classic or Spark Connect session.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose SQL (``spark.sql``, ``%sql`` cells) should know the function.
    name : str
        The SQL name, ``cerql`` unless it clashes with one of yours.

    Returns
    -------
    The registered UserDefinedTableFunction.

    Raises
    ------
    ExecutionError
        When Spark's executors cannot run cerql (cerql/spark/workers.py), or the driver cannot
        start the executors' Python for the function's analyze step (``check_analyze_python``).

    Examples
    --------
    ``cerql.register(spark)``, then in SQL::

        SELECT * FROM cerql(TABLE(stock),
          'SELECT * FROM stock WHERE SELL AS s ; BUY+ AS b PARTITION BY [name] ORDER BY ts WITHIN 10 EVENTS')

    The query's FROM names one source; it binds to the TABLE argument whatever its name. A query
    with quotes inside is easiest passed as a named parameter:
    ``spark.sql("SELECT * FROM cerql(TABLE(stock), :q)", args={"q": query})``.
    """
    from pyspark.util import PythonEvalType

    from cerql.spark.workers import check_workers

    check_workers(spark)  # the function's analyze and eval run in Python workers: they must import cerql
    check_analyze_python(spark)
    UserDefinedTableFunction = udtf_class(spark)
    eval_type = PythonEvalType.SQL_ARROW_TABLE_UDF if ARROW_IO else PythonEvalType.SQL_TABLE_UDF
    function = UserDefinedTableFunction(CerqlFunction, returnType=None, name=name, evalType=eval_type)
    return spark.udtf.register(name, function)

