"""A MATCH_RECOGNIZE query on Spark: the item through cerql's matcher, the query around it Spark SQL.

Input: a parsed :class:`cerql.mr_ast.MatchRecognizeQuery`, the session, and DataFrames passed
by name. Output: a lazy DataFrame, the outer query's result (docs/semantics.md,
"MATCH_RECOGNIZE"). The pipeline, in order:

1. the source: a DataFrame passed by name, else a table or temp view of the session, else the
   parenthesized subquery written before MATCH_RECOGNIZE, run by ``spark.sql``;
2. each row gets its input ordinal (``monotonically_increasing_id``, before any shuffle): rows
   that tie on ORDER BY keep the order Spark read them in, as they keep the input's order in
   ``cerql.run``;
3. the PARTITION BY / ORDER BY expressions computed by Spark as hidden columns (a plain column
   is used as it is), ``repartition`` by the PARTITION BY keys (one partition without them),
   the row-local DEFINE bits computed by Spark into one BIGINT column (PREV/NEXT: lag/lead over
   the partition in the matching order), but for the DEFINEs with PREV/NEXT that cerql.expr
   evaluates, which the tasks compute (``mr_bits.local_defines``: no Window in the JVM), and
   ``sortWithinPartitions`` by (PARTITION BY, ORDER BY as written, ordinal) (spark/mr_bits.py);
4. the query matched in the JVM when spark/mr_jvm.py takes it (its docstring: ONE ROW PER MATCH,
   PAST LAST ROW, row-local DEFINEs, measures of FIRST/LAST/COUNT/CLASSIFIER/MATCH_NUMBER):
   cerql's Java matcher over Spark's own rows after the sort (``io.cerql.mr.MatchedRDD``), the
   DEFINEs Spark's expressions evaluated there (no bits column, no Window); else
   ``mapInArrow`` hands each partition's rows, one PARTITION BY group at a time and batch by
   batch, to the local engine (cerql/exec/mr_incremental.py over cerql/exec/mr_engine.py),
   which takes the keys and bits as Spark computed them and evaluates no DEFINE but the
   history-dependent ones and those left to it; the groups that end before a run of the
   matcher started are matched several at a time (``GroupPool``); its result schema, computed
   on the driver from those columns' schema, is the DataFrame's; only the columns it reads
   cross to Python (ONE ROW PER MATCH: those the measures, the DEFINEs evaluated in Python and
   the keys name, ``columns_read``);
5. the result becomes a temp view of a name unique to the query, and the outer query, with the
   item replaced by that name, runs as Spark SQL over it: SELECT, WHERE, JOIN, GROUP BY, ORDER
   BY, whatever it holds.

A task holds the rows of a PARTITION BY group from the first start row whose match is still
undecided on, not the whole group: memory follows the longest live match. One undecided for more
than ``cerql.matchRecognize.maxMatchRows`` rows (a Spark conf) fails with a CeqlError naming it.
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping

import pyarrow as pa

from cerql import mr_ast, row_pattern
from cerql import mr_functions as mx
from cerql.errors import AnalysisError, CeqlError, UnsupportedError, start_of
from cerql.exec.mr_engine import MAX_THREADS, columns_read, input_columns, run_match_recognize
from cerql.exec.mr_incremental import MAX_MATCH_ROWS, MAX_MATCH_ROWS_CONF, GroupMatcher, GroupPool, local_bits
from cerql.exec.task import key_changes, same_key
from cerql.planner import front
from cerql.spark import mr_bits, mr_jvm
from cerql.spark.compat import plan_lines, read_conf
from cerql.spark.expressions import quoted
from cerql.spark.lower import arrow_schema, spark_type
from cerql.spark.workers import check_workers

ORDINAL = "__cerql_mr_ordinal"
HIDDEN = "__cerql_mr_c"  # + k: the k-th column handed to mapInArrow (_by_position)
MAX_THREADS_CONF = "cerql.matchRecognize.maxThreads"  # live threads per partition (exec/mr_threads.py)


def source_frame(spark, query: mr_ast.MatchRecognizeQuery, tables: Mapping[str, Any]):
    """The DataFrame the item reads (step 1)."""
    clause = query.clause
    if clause.source_is_query:
        return spark.sql(clause.source)
    given = {name.lower(): frame for name, frame in tables.items()}
    frame = given.get(clause.source.lower())
    if frame is not None:
        return frame
    if not spark.catalog.tableExists(clause.source):
        raise AnalysisError.at(query.text, start_of(clause.span), f"Unknown source '{clause.source}'",
                               "UNKNOWN_SOURCE", "name a table or temp view of this session, or pass the DataFrame "
                               f"as a keyword: cer_sql(text, {clause.source.split('.')[-1]}=df)")
    return spark.table(clause.source)


def result_schema(planned: front.RowPatternPlanned, source: pa.Schema, keys=None) -> pa.Schema:
    """The item's result schema: the local engine's answer over no rows of ``source`` (which
    also raises, before Spark runs anything, the errors a schema shows: an unknown column, a
    DEFINE of the wrong type). ``source`` holding the JVM's columns (spark/mr_bits.py; ``keys``
    per key item), the engine takes them as they are, as it does in the tasks."""
    bits = mr_bits.BITS if mr_bits.BITS in source.names else None
    table = source.empty_table()
    if ORDINAL in source.names:
        table = table.drop_columns([ORDINAL])
    return run_match_recognize(planned.clause, table, planned.text, row_pattern.matcher(planned),
                               bits=bits, keys=keys).schema


def _matcher(clause: mr_ast.MatchRecognize, text: str, matcher, max_rows: int, keys: list[str | None], bits,
             names: list[str] | None = None):
    """The function ``mapInArrow`` runs: the partition's rows (sorted by PARTITION BY, ORDER BY,
    ordinal; the key expressions and DEFINE bits computed, spark/mr_bits.py) cut into PARTITION
    BY groups, each matched batch by batch as its rows arrive (exec/mr_incremental.py), those
    that end before a run started matched several at a time (``GroupPool``); each group's
    results come after those of the groups before it. ``bits``: the GroupMatcher's
    (``row_bits``); ``names``, when given: the columns' real names, which the batches' columns
    take by position (``_by_position``)."""
    import numpy as np

    def key_of(table: pa.Table, columns: list[str], row: int) -> tuple:
        return tuple(table.column(c)[row].as_py() for c in columns)

    def group() -> GroupMatcher:
        return GroupMatcher(clause, text, matcher, bits=bits, keys=keys, max_rows=max_rows)

    def batches_of(tables):
        for table in tables:
            yield from table.to_batches()

    def cerql_match_recognize(batches):  # the name shows in Spark's plan
        pool = GroupPool(clause, text, matcher, bits=bits, keys=keys)  # the small groups, matched together

        def after_pool(tables):  # a group's own results come after those of the groups before it
            try:
                for table in tables:
                    yield from batches_of(pool.flush())
                    yield from batches_of([table])
            except CeqlError:  # a group before it, still pooled, fails first, as in the whole table
                yield from batches_of(pool.flush())
                raise

        def ended(current, table=None):
            whole = current.whole(table)
            if whole is not None:
                return batches_of(pool.add(whole))
            return after_pool(current.finish())

        current, last = None, None  # the group being matched, its key
        for batch in batches:
            if names is not None:
                batch = pa.RecordBatch.from_arrays(batch.columns, names=names)
            table = pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            columns = mr_bits.partition_columns(clause, keys, table.column_names)
            cuts = np.flatnonzero(key_changes(table, columns)).tolist()
            if current is not None and not same_key(key_of(table, columns, 0), last):
                yield from ended(current)
                current = None
            bounds = [0] + cuts + [table.num_rows]
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                current = current or group()
                if hi < table.num_rows:  # the group ends within the batch
                    yield from ended(current, table.slice(lo, hi - lo))
                    current = None
                else:
                    yield from after_pool(current.feed(table.slice(lo, hi - lo)))
            last = key_of(table, columns, table.num_rows - 1)
        if current is not None:
            yield from ended(current)
        yield from batches_of(pool.flush())

    return cerql_match_recognize


def _by_position(rows):
    """``(rows, names)``: ``rows`` with its columns renamed by position to ``__cerql_mr_c<k>``, and
    their real names. Why: pyspark's ``mapInArrow`` looks each input column up by its name, which
    Spark parses (``a.b`` is a struct's field, a lone backtick an error), so a source column
    named so would fail; the task renames its batches back (``_matcher``'s ``names``), as the
    CEQL plan does (spark/lower.py's module docstring)."""
    names = list(rows.columns)
    return rows.toDF(*[f"{HIDDEN}{k}" for k in range(len(names))]), names


def _at(clause: mr_ast.MatchRecognize) -> int:
    return start_of(clause.span) if clause.span is not None else 0


def shuffled_rows(spark, planned: front.RowPatternPlanned, tables: Mapping[str, Any], project=None):
    """``(rows, keys, partition, order)``: steps 1-3 up to the shuffle (the source, its input
    ordinal, the key columns, ``repartition``), with ``mr_bits.with_keys``'s keys and sort;
    ``project(source)``, when given, says which columns the rows keep and which it adds
    (``with_keys``' ``keep`` and ``extra``), before the shuffle."""
    query, clause, text = planned.query, planned.clause, planned.text
    frame = source_frame(spark, query, tables)
    at = _at(clause)
    if frame.isStreaming:
        raise UnsupportedError.at(text, at, f"'{clause.source}' is a stream: MATCH_RECOGNIZE runs over tables",
                                  "MATCH_RECOGNIZE_OVER_STREAM",
                                  "write the query in CEQL, which runs over streams with a window (SELECT * FROM "
                                  "s WHERE A AS a ; B+ AS b PARTITION BY [k] WITHIN 1 MINUTE), or run "
                                  "MATCH_RECOGNIZE over a table of the stream's rows")
    arrow_schema(frame.schema, text, at, f"'{clause.source}'",
                 "cast it or leave it out with a subquery or DataFrame.select")
    keep, extra = project(frame) if project is not None else (None, None)
    rows, keys, partition, order = mr_bits.with_keys(frame, clause, text, ORDINAL, "monotonically_increasing_id()",
                                                     extra, keep)
    # the shuffle before the DEFINEs' window, which its partitioning then satisfies
    rows = rows.repartition(*partition) if partition else rows.repartition(1)
    return rows, keys, partition, order


def matcher_input(spark, text: str, tables: Mapping[str, Any], planned: front.RowPatternPlanned | None = None):
    """``(planned, rows, schema, keys)``: the DataFrame ``mapInArrow`` is given (steps 1-3 and
    the columns read), the item's result schema (Arrow) and the key columns (``with_keys``)."""
    try:
        planned = planned or front.plan_row_pattern(text)
        rows, keys, partition, order = shuffled_rows(spark, planned, tables)
        clause, at = planned.clause, _at(planned.clause)
        keyed = arrow_schema(rows.schema, text, at, "a PARTITION BY or ORDER BY expression",
                             "cast it to a simpler type")
        local = mr_bits.local_defines(keyed, clause, planned.analysis.row_local, text)
        jvm = planned.analysis.row_local - local  # the DEFINEs whose bits the JVM computes
        computed = not local or any(mx.canonical(d.variable) in jvm for d in clause.defines)
        if computed:
            rows = mr_bits.with_bits(rows, clause, jvm, partition, order, text)
        rows = rows.sortWithinPartitions(*partition, *order)
        source = arrow_schema(rows.schema, text, at, "a PARTITION BY or ORDER BY expression",
                              "cast it to a simpler type")
        schema = result_schema(planned, source, keys)
        column = mr_bits.BITS if computed else None
        inputs = input_columns([c for c in rows.columns if c != ORDINAL], column, keys)
        hidden = [c for c in [column] + keys if c is not None]
        rows = rows.select(*[quoted(c) for c in columns_read(clause, jvm, inputs) + hidden])
        bits = row_bits(clause, text, local, column)
    except CeqlError as err:
        raise err.with_text(text)
    return planned, rows, schema, keys, bits


def row_bits(clause: mr_ast.MatchRecognize, text: str, local: frozenset[str], column: str | None):
    """What a task's GroupMatcher takes as ``bits``: the JVM's column when it computed every
    row-local DEFINE, else a ``local_bits`` of those computed in Python (``local``) with the
    JVM's column, if any, for the others."""
    if not local:
        return column
    return local_bits(clause, text, None, only=local, column=column)  # no matcher built for it


def jvm_matched(spark, planned: front.RowPatternPlanned, tables: Mapping[str, Any]):
    """The item's result matched in the JVM (spark/mr_jvm.py): steps 1-3 without the bits,
    then cerql's Java matcher in place of step 4."""
    text = planned.text
    try:
        columns = mr_jvm.JvmColumns(planned)
        rows, keys, partition, order = shuffled_rows(spark, planned, tables, columns.project)
        source = arrow_schema(rows.schema, text, _at(planned.clause), "a PARTITION BY or ORDER BY expression",
                              "cast it to a simpler type")
        # the schema as the tasks would see it with the bits computed (DEFINEs are Spark's here)
        schema = result_schema(planned, source.append(pa.field(mr_bits.BITS, pa.int64())), keys)
        conf = read_conf(spark, MAX_MATCH_ROWS_CONF)
        return mr_jvm.match_on_jvm(spark, planned, columns, rows.sortWithinPartitions(*partition, *order), keys,
                                   schema, int(conf) if conf else MAX_MATCH_ROWS)
    except CeqlError as err:
        raise err.with_text(text)


def plan_match_recognize(spark, text: str, tables: Mapping[str, Any]):
    """(planned, DataFrame) of a MATCH_RECOGNIZE query: everything short of running it."""
    planned, df, _ = _planned_frame(spark, text, tables)
    return planned, df


def _planned_frame(spark, text: str, tables: Mapping[str, Any]):
    """``plan_match_recognize``'s pair and why the query is matched in Python (None: in the JVM)."""
    try:
        planned = front.plan_row_pattern(text)
    except CeqlError as err:
        raise err.with_text(text)
    query = planned.query
    why = mr_jvm.why_not(spark, planned)
    matched = jvm_matched(spark, planned, tables) if why is None else python_matched(spark, planned, tables)
    if query.outer_sql == f"SELECT * FROM {query.placeholder}":  # the item alone: no view, no SQL to analyze
        return planned, matched, why
    view = f"__cerql_mr_{uuid.uuid4().hex}"
    matched.createOrReplaceTempView(view)
    return planned, spark.sql(query.outer_sql.replace(query.placeholder, view)), why


def python_matched(spark, planned: front.RowPatternPlanned, tables: Mapping[str, Any]):
    """The item's result matched by the local engine in Python workers (steps 1-4)."""
    text = planned.text
    planned, rows, schema, keys, bits = matcher_input(spark, text, tables, planned)
    clause = planned.clause
    try:
        check_workers(spark)  # before the mapInArrow UDF is built (workers.py)
    except CeqlError as err:
        raise err.with_text(text)
    from pyspark.sql.types import StructField, StructType

    spark_schema = StructType([StructField(f.name, spark_type(f.type), True) for f in schema])
    conf = read_conf(spark, MAX_MATCH_ROWS_CONF)
    threads = read_conf(spark, MAX_THREADS_CONF)
    matcher = row_pattern.matcher(planned, int(threads) if threads else MAX_THREADS)
    rows, names = _by_position(rows)
    task = _matcher(clause, text, matcher, int(conf) if conf else MAX_MATCH_ROWS, keys, bits, names)
    return rows.mapInArrow(task, spark_schema)


def lower_match_recognize(spark, text: str, tables: Mapping[str, Any]):
    """The query's lazy DataFrame (steps 1-5 of the module docstring)."""
    return plan_match_recognize(spark, text, tables)[1]


def _matched_by(why: str | None) -> str:
    if why is None:
        return ("  io.cerql.mr.MatchedRDD: cerql's Java matcher over each PARTITION BY group of the sorted rows, in "
                "the JVM (DEFINEs and measures Spark's own expressions; cerql/spark/mr_jvm.py)")
    return (f"  mapInArrow: the local engine over each PARTITION BY group (cerql/exec/mr_engine.py); not in the JVM: "
            f"{why}")


def explain_on_spark(spark, text: str, tables: Mapping[str, Any]) -> str:
    """``cerql.explain`` of a MATCH_RECOGNIZE query with a session: what runs without Spark
    says (row_pattern.explain), then how it runs on Spark and Spark's plan."""
    planned, df, why = _planned_frame(spark, text, tables)
    clause = planned.clause
    lines = [row_pattern.explain(text), "on spark:",
             f"  source: {clause.source}",
             f"  partition by: {', '.join(e.text for e in clause.partition_by) or '(none: one partition)'}",
             f"  order by: {', '.join(k.expr.text + (' DESC' if k.descending else '') for k in clause.order_by)}, "
             "then the input's order",
             _matched_by(why)]
    lines.append("spark plan:")
    lines += ["  " + line for line in plan_lines(df)]
    if why is None:  # the plan scans the matcher's rows: the rows it reads, sorted
        lines.append("the sorted rows the Java matcher reads:")
        lines += ["  " + line for line in mr_jvm.input_plans(spark, df).splitlines()]
    return "\n".join(lines)


__all__ = ["MAX_MATCH_ROWS_CONF", "explain_on_spark", "lower_match_recognize", "matcher_input", "plan_match_recognize",
           "result_schema", "source_frame"]
