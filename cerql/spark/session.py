"""CEQL on a Spark session: ``cerql.cer_sql(spark, text)`` and ``spark.cer_sql(text)``.

Input: a classic or Spark Connect session, CEQL text, and optionally DataFrames by name.
Output: a lazy DataFrame of results (docs/language.md, "The output schema"); ``CREATE [OR REPLACE]
TEMP VIEW v AS`` registers it as a temp view instead. The stages run in the order of
docs/architecture.md, "The data path", through the front door (planner/front.py): parse and
analyze (no Spark), find the sources (keyword DataFrames first, then tables, temp views and
catalog names: the schemas this module gives the front door), resolve names against their
schemas; then lower to a Spark plan. Every query error is a CeqlError raised before Spark runs
anything.

``import cerql`` adds ``cer_sql`` to the classic session class, and to the Spark Connect one
when it is imported (it is a separate class, not a subclass), only where the attribute is absent.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from cerql import ast
from cerql.errors import MAX_MATCHES_CONF, AnalysisError, CeqlError, start_of
from cerql.plan import MAX_MATCHES_PER_EVENT, QueryPlan
from cerql.planner import front
from cerql.planner.analyze import Analysis, check_view
from cerql.exec.bits import firing_masks, gap_masks
from cerql.spark import expressions, streaming
from cerql.spark.compat import functions_for, plan_lines, read_conf as _conf
from cerql.spark.lower import arrow_schema, lower, spark_sql
from cerql.spark.mr_lower import explain_on_spark, lower_match_recognize
from cerql.spark.workers import check_workers


def _frames(spark, analysis: Analysis, tables: dict[str, Any]) -> dict[str, Any]:
    """One DataFrame per FROM source, keyed by the name written in FROM."""
    given = {k.lower(): v for k, v in tables.items()}
    frames = {}
    for source in analysis.select.sources:
        frame = given.get(source.name.lower())
        if frame is None and not spark.catalog.tableExists(source.name):
            raise AnalysisError.at(analysis.text, start_of(source.span), f"Unknown source '{source.name}'",
                                   "UNKNOWN_SOURCE",
                                   "name a table or temp view of this session, or pass the DataFrame as a keyword: "
                                   f"cer_sql(text, {source.name.split('.')[-1]}=df)")
        frames[source.name] = frame if frame is not None else spark.table(source.name)
    return frames


def _arrow_schema(text: str, source: ast.Source, frame) -> pa.Schema:
    return arrow_schema(frame.schema, text, start_of(source.span), f"'{source.name}'",
                        "cast it or leave it out with a subquery or DataFrame.select", mark=True)


def _max_matches(spark) -> int:
    value = _conf(spark, MAX_MATCHES_CONF)
    return int(value) if value else MAX_MATCHES_PER_EVENT


def _with_derived(frames: dict[str, Any], derived, text: str) -> dict[str, Any]:
    """Each source with the columns planner/derived.py asks Spark to compute (``__cerql_d<k>``: a
    Spark SQL expression over the row's own columns, an aggregate's argument or part of a FILTER
    across variables). A source
    that lacks a column the expression reads gets NULL there, as the union of the sources gives
    a missing column; when no source can compute it, Spark's analysis error is the query's."""
    out = dict(frames)
    for name, bare, origin in derived:
        sql = spark_sql(bare, origin.source, lambda column: column)
        kinds, first_error = {}, None
        for key, frame in out.items():
            try:
                kinds[key] = expressions.analyzed_type(frame, functions_for(frame).expr(sql), origin, text, {},
                                                       "the expression")
            except AnalysisError as err:
                first_error = first_error or err
        if not kinds:
            raise first_error
        kind = next(iter(kinds.values()))
        for key, frame in out.items():
            F = functions_for(frame)
            out[key] = frame.withColumn(name, F.expr(sql) if key in kinds else F.lit(None).cast(kind))
    return out


def plan_query(spark, text: str, tables: dict[str, Any] | None = None):
    """(analysis, plan, DataFrame) of a query: everything short of running it."""
    frames: dict[str, Any] = {}

    def schemas(analysis: Analysis, derived) -> dict[str, pa.Schema]:
        """The sources' DataFrames, with the columns Spark derives (aggregates of expressions,
        Spark-only functions of one variable across variables), kept for lowering; their schemas."""
        frames.update(_frames(spark, analysis, dict(tables or {})))
        if derived:
            frames.update(_with_derived(frames, derived, text))
        return {s.name: _arrow_schema(text, s, frames[s.name]) for s in analysis.select.sources}

    try:
        planned = front.plan(text, schemas, spark=True, max_matches_per_event=_max_matches(spark),
                             time_zone=spark.conf.get("spark.sql.session.timeZone"))
        analysis, plan = planned.analysis, planned.plan
        check_workers(spark)  # before lower builds the mapInArrow UDF (workers.py)
        sources = {s.key: frames[s.key] for s in plan.sources}
        spans = {s.name: start_of(s.span) for s in analysis.select.sources}
        stream = None
        if streaming.is_streaming(sources, text, spans):
            stream = streaming.settings(plan, sources, lambda key: _conf(spark, key), text)
        df = lower(plan, sources, text, stream)
    except CeqlError as err:
        raise err.with_text(text)
    return analysis, plan, df


def cer_sql(spark, text: str, **tables):
    """Run a CEQL query on Spark and return its results as a DataFrame.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A classic or Spark Connect session.
    text : str
        The query. ``CREATE [OR REPLACE] TEMP VIEW v AS SELECT ...`` registers the result as the
        temp view ``v`` and, like ``spark.sql``, returns an empty DataFrame.
    **tables : DataFrame
        DataFrames usable as FROM sources by name (they shadow tables of the same name).

    The result is lazy, like ``spark.sql``: query errors are raised here, before Spark runs
    anything; a run that exceeds ``cerql.maxMatchesPerEvent`` (a Spark conf, default 100 000)
    fails when the result is computed.
    """
    if front.dialect_of(text) == "match_recognize":  # the item through cerql, the query around it Spark SQL
        return lower_match_recognize(spark, text, tables)
    analysis, plan, df = plan_query(spark, text, tables)
    view = analysis.view
    if view is None:
        return df
    check_view(analysis, spark.catalog.tableExists)
    df.createOrReplaceTempView(view.name)
    return spark.range(0).select()  # what spark.sql returns for a CREATE VIEW


def describe_on_spark(plan: QueryPlan, df) -> str:
    """How a query runs on Spark, for ``cerql.explain``: sources, order, bits, pruning, plan;
    ``plan`` and ``df`` are what ``plan_query`` gives, the plan ``cer_sql`` runs."""
    lines = ["on spark:"]
    for src in plan.sources:
        typed = f", types in column {src.type_column}" if src.type_column else ""
        lines.append(f"  source {src.index}: {src.key} as {src.ref}{typed}")
    lines.append(f"  order by: {', '.join(plan.order_columns)}, then source, then row ordinal")
    hidden = f" (hidden, from equalities across variables: {', '.join(plan.join_columns)})" if plan.join_columns else ""
    lines.append(f"  partition by: {', '.join(plan.substream_columns) or '(none: one ordered partition)'}{hidden}")
    for k, cond in enumerate(plan.automaton.conditions):
        lines.append(f"  bit {k}: {cond if isinstance(cond, str) else 'atom ' + str(cond)}")
    masks, gaps = firing_masks(plan), gap_masks(plan)
    fires = " or ".join("{" + ", ".join(f"bit {k}" for k in range(64) if m >> k & 1) + "}"
                        for m in (masks if masks is not None else gaps) or [])
    if gaps is not None:
        fires += " after the shuffle, each with its position in its substream (the query counts positions)"
    lines.append("  rows kept: ordering value and partition keys not NULL"
                 + (f", and all bits of one of {fires}" if masks is not None or gaps is not None else ""))
    lines.append("spark plan:")
    lines += ["  " + line for line in plan_lines(df)]
    return "\n".join(lines)
