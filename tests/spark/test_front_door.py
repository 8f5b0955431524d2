"""Every surface on Spark plans through the front door (cerql/planner/front.py) and gets the
same plan: ``cerql.cer_sql`` and ``spark.cer_sql``, ``cerql.explain`` with a session, the SQL-cell
function's planning, the ``%%ceql`` magic and ``cerql explain --table``; the plan each prints or
runs is the one ``front.plan`` gives for the sources' schemas (the rules' choices and the
automaton, as ``explain`` prints them). The surfaces without Spark: tests/planner/test_front.py."""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql import api
from cerql.cli.commands import main
from cerql.planner import front
from cerql.spark import magic, sql_cells
from cerql.spark.lower import arrow_schema
from tests.support import FRONT_DOOR_QUERIES, FRONT_DOOR_STREAM, explained_body

pytestmark = pytest.mark.spark

QUERIES, STREAM = FRONT_DOOR_QUERIES, FRONT_DOOR_STREAM


@pytest.fixture(scope="module")
def s(spark, tmp_path_factory):
    """The stream as a DataFrame, a temp view ``s`` and a Parquet file (for the command line)."""
    path = tmp_path_factory.mktemp("front") / "s.parquet"
    STREAM.to_parquet(path, index=False)
    df = spark.createDataFrame(STREAM).coalesce(1)
    df.createOrReplaceTempView("s")
    yield df, path
    spark.catalog.dropTempView("s")


def _planned(seen: list) -> list:
    planned = [p for p in seen if p.plan is not None]
    seen.clear()
    return planned


@pytest.mark.parametrize("text", QUERIES)
def test_every_spark_surface_plans_through_the_front_door(spark, s, seen, text, capsys):
    df, path = s
    schema = arrow_schema(df.schema, text, 0, "s", "")
    want = front.plan(text, {"s": schema})  # the spy sees it too
    assert _planned(seen) == [want]
    body = explained_body(want.plan)

    cerql.cer_sql(spark, text, s=df)
    spark.cer_sql(text)  # the temp view
    magic.ceql("", text, {"s": df})
    plans = _planned(seen)
    assert len(plans) == 3
    for planned in plans:
        assert explained_body(planned.plan) == body and planned.query == want.query
        assert planned.plan.order_columns == want.plan.order_columns
        assert planned.plan.substream_columns == want.plan.substream_columns

    sql_cells._prepare.cache_clear()
    prepared = sql_cells._prepare(text, df.schema.json())
    (cell,) = _planned(seen)
    assert cell.plan is prepared.plan and explained_body(prepared.plan) == body

    explained = cerql.explain(text, spark, s=df)
    header_only, on_spark = seen  # explain's header (no schemas), then the plan cer_sql runs
    assert header_only.plan is None and explained_body(on_spark.plan) == body
    header, _, _ = explained.partition("\non spark:")
    assert header == cerql.explain(text) and header.endswith("\n" + body)
    seen.clear()

    capsys.readouterr()
    assert main(["explain", "-e", text, "--table", f"s={path}"]) == 0
    printed, _, _ = capsys.readouterr().out.partition("\non spark:")
    assert printed == header
    assert any(p.plan is not None and explained_body(p.plan) == body for p in seen)
