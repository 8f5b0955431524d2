"""Timestamp differences, INTERVAL literals and their type errors: the local engine against Spark
(issue 34, item 4).

``b.ts - a.ts`` is an INTERVAL DAY TO SECOND on Spark (a pandas Timedelta in ``toPandas``); the
local engine computes it as an Arrow duration in microseconds (cerql/expr/times.py
``_time_arith``), compares it with INTERVAL literals, and adds intervals to timestamps. Operand
types Spark's analyzer refuses (``ts > 5``) are refused locally naming Spark's error class, and
never with "spark.cer_sql runs it". The oracle is Spark on the same text: ``cer_sql`` for the
queries, ``spark.sql`` over a one-row view for the type rules, pair by pair.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cerql
from cerql.errors import CeqlError
from cerql.parser.sqlexpr import parse_fragment
from cerql.expr import LocalTypeRefusal, SparkTypeMismatch, compile_expr

pytestmark = pytest.mark.spark

STREAM = pd.DataFrame({
    "type": ["A", "B", "A", "B", "C"],
    "x": [1, 2, 3, 4, 5],
    "ts": pd.to_datetime(["2024-01-01 00:00:00", "2024-01-01 00:01:30", "2024-01-01 00:10:00.250",
                          "2024-01-01 00:20:00", "2024-01-02 03:04:05.5"], format="ISO8601"),
})
PAIRS = "SELECT a.x AS ax, b.x AS bx, {item} FROM s WHERE A AS a ; B AS b {filter} ORDER BY ts"


@pytest.fixture(scope="module")
def stream(spark):
    return spark.createDataFrame(STREAM)


def _local(query: str, frame: pd.DataFrame = STREAM) -> list[tuple]:
    out = cerql.run(query, {"s": frame})
    cols = [c for c in out.columns if c not in ("match_id", "match_start", "match_end")]
    return sorted(tuple(_plain(v) for v in row) for row in out[cols].itertuples(index=False))


def _on_spark(spark, query: str, frame) -> list[tuple]:
    out = cerql.cer_sql(spark, query, s=frame).toPandas()
    cols = [c for c in out.columns if c not in ("match_id", "match_start", "match_end")]
    return sorted(tuple(_plain(v) for v in row) for row in out[cols].itertuples(index=False))


def _plain(v):
    if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, (pd.Timedelta, np.timedelta64, dt.timedelta)):
        return pd.Timedelta(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


# ---------------------------------------------------------------------------- exact values
def test_difference_of_timestamps_is_a_timedelta_locally():
    out = cerql.run(PAIRS.format(item="b.ts - a.ts AS d", filter=""), {"s": STREAM})
    got = sorted(zip(out["ax"], out["bx"], out["d"]))
    assert got == [(1, 2, pd.Timedelta(seconds=90)), (1, 4, pd.Timedelta(minutes=20)),
                   (3, 4, pd.Timedelta(minutes=9, seconds=59, milliseconds=750))]
    assert pd.api.types.is_timedelta64_dtype(out["d"])


@pytest.mark.parametrize("item", [
    "b.ts - a.ts AS d",
    "a.ts - b.ts AS d",
    "b.ts - a.ts - INTERVAL 1 MINUTE AS d",
    "a.ts + INTERVAL '1:30' MINUTE TO SECOND AS t",
    "b.ts - INTERVAL 90 SECONDS AS t",
    "INTERVAL 1 DAY + a.ts AS t",
    "-(b.ts - a.ts) AS d",
    "CAST(b.ts AS DATE) - CAST(a.ts AS DATE) AS d",
    "b.ts - CAST(a.ts AS DATE) AS d",
    "greatest(b.ts - a.ts, INTERVAL 10 MINUTES) AS d",
    "coalesce(b.ts - a.ts, INTERVAL '0' SECOND) AS d",
    "b.ts - a.ts > INTERVAL 5 MINUTES AS far",
    "b.ts - a.ts BETWEEN INTERVAL '1' MINUTE AND INTERVAL '10' MINUTE AS near",
    "INTERVAL '1 02:03:04.5' DAY TO SECOND AS i",
    "INTERVAL '1 day 2 hours' AS i",
    "INTERVAL '-1' HOUR AS i",
    "INTERVAL '25:00' HOUR TO MINUTE AS i",
    "INTERVAL '-0.0000015' SECOND AS i",
])
def test_select_items_equal_cer_sql(spark, stream, item):
    query = PAIRS.format(item=item, filter="")
    local = _local(query)
    assert local == _on_spark(spark, query, stream)
    assert len(local) == 3


UNQUOTED = [  # an unquoted number sqlglot prints quoted: values exact locally
    ("INTERVAL 1 DAY 2 HOURS", pd.Timedelta(days=1, hours=2)), ("INTERVAL 1.5 SECONDS", pd.Timedelta(seconds=1.5)),
    ("INTERVAL 3 WEEKS", pd.Timedelta(days=21)), ("INTERVAL 5 MILLISECONDS", pd.Timedelta(milliseconds=5)),
]


@pytest.mark.parametrize("item, value", UNQUOTED)
def test_unquoted_interval_literals_locally(item, value):
    out = cerql.run(f"SELECT {item} AS i FROM s WHERE A AS a ORDER BY ts", {"s": STREAM})
    assert list(out["i"]) == [value, value]


@pytest.mark.parametrize("item, value", UNQUOTED)
def test_unquoted_interval_literals_on_spark(spark, stream, item, value):
    out = cerql.cer_sql(spark, f"SELECT {item} AS i FROM s WHERE A AS a ORDER BY ts", s=stream).toPandas()
    assert list(out["i"]) == [value, value]


@pytest.mark.parametrize("condition, kept", [
    ("b.ts - a.ts < INTERVAL 5 MINUTES", [(1, 2)]),
    ("b.ts - a.ts <= INTERVAL '90' SECOND", [(1, 2)]),
    ("b.ts - a.ts < INTERVAL '1:30' MINUTE TO SECOND", []),
    ("b.ts - a.ts >= INTERVAL '0 00:10' DAY TO MINUTE", [(1, 4)]),
    ("b.ts > a.ts + INTERVAL 10 MINUTES", [(1, 4)]),
    ("b.ts - INTERVAL 9 MINUTES 59.75 SECONDS = a.ts", [(3, 4)]),
    ("b.ts - a.ts IN (INTERVAL 90 SECONDS, INTERVAL 20 MINUTES)", [(1, 2), (1, 4)]),
    ("b.ts - a.ts > INTERVAL '1 minute 30 seconds'", [(1, 4), (3, 4)]),
])
def test_filters_across_variables_keep_the_same_matches(spark, stream, condition, kept):
    query = PAIRS.format(item="b.ts AS bt", filter=f"FILTER {condition}")
    local = _local(query)
    assert [(r[0], r[1]) for r in local] == kept
    assert local == _on_spark(spark, query, stream)


@pytest.mark.parametrize("bracket, kept", [
    ("ts + INTERVAL 1 DAY > TIMESTAMP '2024-01-02 00:05:00'", [3]),
    ("ts - TIMESTAMP '2024-01-01 00:00:00' < INTERVAL '1' MINUTE", [1]),
])
def test_brackets(spark, stream, bracket, kept):
    query = f"SELECT a.x AS ax FROM s WHERE A AS a FILTER a[{bracket}] ORDER BY ts"
    local = _local(query)
    assert [r[0] for r in local] == kept
    assert local == _on_spark(spark, query, stream)


# ---------------------------------------------------------------------------- refusals
MISMATCHES = [  # (query, Spark's error class): refused by both, never "Spark runs it"
    ("SELECT a FROM s WHERE A AS a FILTER a[ts > 5] ORDER BY ts", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    ("SELECT a FROM s WHERE A AS a FILTER a[ts + 1 > ts] ORDER BY ts", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    ("SELECT a.ts - 1 AS y FROM s WHERE A AS a ORDER BY ts", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("SELECT a FROM s WHERE A AS a FILTER a[ts IN (5)] ORDER BY ts", "DATATYPE_MISMATCH.DATA_DIFF_TYPES"),
    ("SELECT coalesce(a.ts, 5) AS y FROM s WHERE A AS a ORDER BY ts", "DATATYPE_MISMATCH.DATA_DIFF_TYPES"),
    ("SELECT hour(b.ts - a.ts) AS h FROM s WHERE A AS a ; B AS b ORDER BY ts",
     "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("SELECT b.ts - a.ts > 5 AS y FROM s WHERE A AS a ; B AS b ORDER BY ts", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    ("SELECT a.ts * 2 AS y FROM s WHERE A AS a ORDER BY ts", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
]


def _spark_error_class(spark, stream, query):
    with pytest.raises(CeqlError) as err:
        cerql.cer_sql(spark, query, s=stream).collect()
    return err.value.error_class


@pytest.mark.parametrize("query, error_class", MISMATCHES)
def test_spark_refuses_what_the_local_engine_refuses(spark, stream, query, error_class):
    assert _spark_error_class(spark, stream, query) == error_class
    with pytest.raises(CeqlError) as err:
        cerql.run(query, {"s": STREAM})
    assert "spark.cer_sql runs it" not in str(err.value)
    assert error_class in str(err.value) and "Spark's analyzer refuses it too" in str(err.value)


@pytest.mark.parametrize("query, error_class", MISMATCHES)
def test_the_local_error_class_is_sparks(query, error_class):
    with pytest.raises(CeqlError) as err:
        cerql.run(query, {"s": STREAM})
    assert err.value.error_class == error_class


@pytest.mark.parametrize("item", ["INTERVAL '1' MONTH", "INTERVAL '2-3' YEAR TO MONTH", "a.ts + INTERVAL 1 YEAR"])
def test_year_month_intervals_are_refused_locally_and_run_on_spark(spark, stream, item):
    query = f"SELECT {item} AS y FROM s WHERE A AS a ORDER BY ts"
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run(query, {"s": STREAM})
    assert "year-month" in str(err.value) and err.value.error_class == "UNSUPPORTED_EXPRESSION"
    assert cerql.cer_sql(spark, query, s=stream).count() == 2  # Spark computes it (toPandas cannot show it)


@pytest.mark.parametrize("item", ["INTERVAL 1.5 MINUTES", "INTERVAL '1:60' MINUTE TO SECOND",
                                  "INTERVAL '5' MINUTE TO SECOND"])
def test_intervals_spark_rejects_are_refused_without_saying_spark_runs_them(spark, stream, item):
    query = f"SELECT {item} AS y FROM s WHERE A AS a ORDER BY ts"
    with pytest.raises(cerql.UnsupportedError) as err:
        cerql.run(query, {"s": STREAM})
    assert "runs it" not in str(err.value)
    with pytest.raises(Exception):  # noqa: B017 - Spark's parser: INVALID_INTERVAL_FORMAT and the like
        cerql.cer_sql(spark, query, s=stream).collect()


# ---------------------------------------------------------------------------- the type rules, pair by pair
_ROW = {  # name: (Spark SQL of the value, its Arrow type in the local engine)
    "t": ("TIMESTAMP '2024-01-01 00:00:00'", pa.timestamp("us", "UTC")),
    "w": ("TIMESTAMP_NTZ '2024-01-01 00:00:00'", pa.timestamp("us")),
    "d": ("DATE '2024-01-01'", pa.date32()),
    "iv": ("TIMESTAMP '2024-01-02 00:00:00' - TIMESTAMP '2024-01-01 00:00:00'", pa.duration("us")),
    "i": ("5", pa.int32()), "l": ("5L", pa.int64()), "dec": ("1.5", pa.decimal128(2, 1)),
    "dbl": ("1.5D", pa.float64()), "s": ("'2024-01-01'", pa.string()), "bo": ("true", pa.bool_()),
}
_TIMES = ("t", "w", "d", "iv")


def _pair_cases():
    cases = []
    for a in _TIMES:
        for b in _ROW:
            for op in ("+", "-", "*", "/", "%", "div", "=", "<", "<=>"):
                cases += [f"{a} {op} {b}", f"{b} {op} {a}"]
            cases += [f"{a} IN ({b})", f"coalesce({a}, {b})", f"greatest({a}, {b})", f"{a} BETWEEN {b} AND {b}",
                      f"CASE WHEN bo THEN {a} ELSE {b} END"]
    for a in _TIMES:
        cases += [f"-{a}", f"abs({a})", f"sqrt({a})", f"hour({a})", f"year({a})", f"CAST({a} AS DOUBLE)",
                  f"CAST({a} AS BIGINT)", f"CAST({a} AS STRING)"]
    return sorted(set(cases))


def _local_verdict(text: str):
    """'ok', 'runs' (refused locally, and Spark runs it) or Spark's error class."""
    table = pa.table({k: pa.array([None], kind) for k, (_, kind) in _ROW.items()})
    tree = parse_fragment(text, 0, text)
    try:
        compile_expr(tree, lambda col: col.name)(table)
    except SparkTypeMismatch as err:
        return err.error_class
    except LocalTypeRefusal as err:
        assert "spark.cer_sql runs it" in str(err)
        return "runs"
    return "ok"


def test_type_rules_are_sparks(spark):
    """Every operator and unifying function over a date, timestamp or interval and each other
    type: where Spark's analyzer refuses, the local engine refuses with its error class; where
    Spark accepts, the local engine computes it or refuses saying Spark runs it."""
    spark.sql("SELECT " + ", ".join(f"{v} AS {k}" for k, (v, _) in _ROW.items())).createOrReplaceTempView("pairs")
    bad = []
    for text in _pair_cases():
        try:
            spark.sql(f"SELECT {text} FROM pairs").schema  # noqa: B018 - analysis only
            spark_verdict = None
        except Exception as err:  # noqa: BLE001
            spark_verdict = getattr(err, "getCondition", lambda: type(err).__name__)()
        local = _local_verdict(text)
        if spark_verdict is None and local not in ("ok", "runs") or spark_verdict is not None and local != spark_verdict:
            bad.append((text, local, spark_verdict))
    assert not bad, f"(expression, local, Spark): {bad}"


# ---------------------------------------------------------------------------- random pairs
_stamps = st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2100, 1, 1)))


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from("AB"), _stamps), min_size=2, max_size=8))
def test_random_differences_equal_spark(spark, rows):
    frame = pd.DataFrame({"type": [t for t, _ in rows], "k": list(range(len(rows))),
                          "ts": pd.to_datetime([v for _, v in rows]).astype("datetime64[us]")})
    query = ("SELECT a.k AS ak, b.k AS bk, b.ts - a.ts AS d, b.ts - a.ts > INTERVAL '1 00:00:00' DAY TO SECOND AS far "
             "FROM s WHERE A AS a ; B AS b FILTER b.ts - a.ts < INTERVAL 36500 DAYS ORDER BY k")
    local = _local(query, frame)
    assert local == _on_spark(spark, query, spark.createDataFrame(frame))


# ---------------------------------------------------------------------------- a session zone with clock changes
NEW_YORK = "America/New_York"

DST = [  # (type, x, instant): New York springs forward on 2026-03-08 and falls back on 2026-11-01
    ("A", 1, "2026-03-07 17:00:00Z"),  # 12:00 EST, the day before
    ("A", 2, "2026-03-08 06:30:00Z"),  # 01:30 EST
    ("B", 3, "2026-03-08 06:50:00Z"),  # 01:50 EST
    ("B", 4, "2026-03-08 07:10:00Z"),  # 03:10 EDT: 40 minutes after x=2, 1:40 on the clock
    ("B", 5, "2026-03-08 16:30:00Z"),  # 12:30 EDT
    ("A", 6, "2026-11-01 05:20:00Z"),  # 01:20 EDT
    ("B", 7, "2026-11-01 06:10:00Z"),  # 01:10 EST: 50 minutes after x=6, -0:10 on the clock
    ("B", 8, "2026-11-01 06:50:00Z"),  # 01:50 EST: 1:30 after x=6, 0:30 on the clock
]


@pytest.fixture
def new_york(spark):
    """The Spark session with spark.sql.session.timeZone = America/New_York, restored after."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", NEW_YORK)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def _dst_frame(spark):
    rows = ", ".join(f"('{t}', {x}, TIMESTAMP '{ts}')" for t, x, ts in DST)
    return spark.sql(f"SELECT * FROM VALUES {rows} AS s(type, x, ts)")


@pytest.mark.parametrize("condition, kept", [
    ("b.ts - a.ts <= INTERVAL 1 HOUR", [(2, 3), (6, 7), (6, 8)]),  # UTC microseconds: (2, 3), (2, 4), (6, 7)
    ("b.ts <= a.ts + INTERVAL 1 DAY", [(1, 3), (1, 4), (2, 3), (2, 4), (2, 5), (6, 7), (6, 8)]),  # + 24 h: (1, 5) too
])
def test_a_filter_across_variables_reads_the_session_zone_as_spark_sql_does(new_york, condition, kept):
    """In a New York session Spark subtracts TIMESTAMPs as wall times of the session zone and
    adds an interval's days to the wall time (subtractTimestamps, timestampAddDayTime): the
    FILTER across variables, which a Spark task evaluates in Python (cerql.expr), keeps the
    pairs and computes the differences Spark SQL's own self-join does over rows straddling both
    clock changes."""
    frame = _dst_frame(new_york)
    frame.createOrReplaceTempView("dst")
    query = f"SELECT a.x AS ax, b.x AS bx, b.ts - a.ts AS d FROM s WHERE A AS a ; B AS b FILTER {condition} ORDER BY ts"
    spark_sql = new_york.sql(
        "SELECT a.x AS ax, b.x AS bx, b.ts - a.ts AS d FROM dst a JOIN dst b "
        f"ON a.type = 'A' AND b.type = 'B' AND b.ts > a.ts AND {condition}").toPandas()
    expected = sorted(tuple(_plain(v) for v in row) for row in spark_sql.itertuples(index=False))
    assert [(ax, bx) for ax, bx, _ in expected] == kept
    assert _on_spark(new_york, query, frame) == expected


def _wall_minutes(stamps: list[str], zone: str) -> list[float]:
    from zoneinfo import ZoneInfo

    walls = [dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
             for s in stamps]
    return [(w - walls[0]).total_seconds() / 60 for w in walls]


@pytest.mark.parametrize("zone", [NEW_YORK, "UTC", "Europe/Paris"])
def test_difference_of_instants_is_of_wall_times_in_the_compiled_zone(zone):
    """``b - a`` of TIMESTAMP (instant) columns, compiled with ``time_zone``: the minutes between
    the wall times in that zone (Python's zoneinfo here), not between the instants, whenever a
    clock change lies between them."""
    stamps = [ts for _, _, ts in DST]
    instants = pa.array([dt.datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps], pa.timestamp("us", "UTC"))
    table = pa.table({"a": pa.array([instants[0].as_py()] * len(stamps), instants.type), "b": instants})
    out = compile_expr(parse_fragment("b - a", 0, "b - a"), lambda col: col.name, time_zone=zone)(table)
    assert out.type == pa.duration("us")
    assert [d.total_seconds() / 60 for d in out.to_pylist()] == _wall_minutes(stamps, zone)
    if zone == NEW_YORK:  # an hour apart in absolute time, 2 hours and 0 on the clock
        spring, fall = (pa.table({"a": pa.array([x], instants.type), "b": pa.array([y], instants.type)})
                        for x, y in [(dt.datetime(2026, 3, 8, 6, 30), dt.datetime(2026, 3, 8, 7, 30)),
                                     (dt.datetime(2026, 11, 1, 5, 30), dt.datetime(2026, 11, 1, 6, 30))])
        fn = compile_expr(parse_fragment("b - a", 0, "b - a"), lambda col: col.name, time_zone=zone)
        assert fn(spring).to_pylist() == [dt.timedelta(hours=2)] and fn(fall).to_pylist() == [dt.timedelta(0)]


ACROSS_CLOCK_CHANGES = {  # zone: expressions whose value depends on how a clock change is read
    NEW_YORK: [
        "TIMESTAMP '2026-03-08 03:30:00' - TIMESTAMP '2026-03-08 01:30:00'",
        "TIMESTAMP '2026-11-01 01:30:00-05:00' - TIMESTAMP '2026-11-01 01:30:00-04:00'",
        "TIMESTAMP '2026-11-01 01:10:00-05:00' - TIMESTAMP '2026-11-01 01:50:00-04:00'",
        "TIMESTAMP '2026-03-08 02:30:00' - TIMESTAMP '2026-03-08 01:30:00'",
        "TIMESTAMP_NTZ '2026-03-08 02:30:00' - TIMESTAMP '2026-03-08 01:30:00'",
        "TIMESTAMP '2026-03-08 01:30:00' - TIMESTAMP_NTZ '2026-03-08 02:30:00'",
        "TIMESTAMP_NTZ '2026-03-08 03:30:00' - TIMESTAMP_NTZ '2026-03-08 01:30:00'",
        "TIMESTAMP_NTZ '2026-11-01 01:30:00' - TIMESTAMP '2026-11-01 01:30:00-05:00'",
        "TIMESTAMP '2026-03-08 12:00:00' - DATE '2026-03-08'",
        "DATE '2026-03-09' - TIMESTAMP '2026-03-08 00:00:00'",
        "TIMESTAMP_NTZ '2026-03-08 12:00:00' - DATE '2026-03-08'",
        "TIMESTAMP_NTZ '2026-03-08 02:30:00' = TIMESTAMP '2026-03-08 03:30:00'",
        "CAST(CAST('2026-03-08 02:30:00' AS TIMESTAMP_NTZ) AS STRING)",
        "CAST(CAST('2026-01-01 00:00:00+05:00' AS TIMESTAMP_NTZ) AS STRING)",
        "CAST(TIMESTAMP '2026-03-07 12:00:00' + INTERVAL '1 01:00:00' DAY TO SECOND AS STRING)",
        "CAST(TIMESTAMP '2026-03-07 12:00:00' + INTERVAL 36 HOURS AS STRING)",
        "CAST(TIMESTAMP '2026-03-09 00:00:00' - INTERVAL '1 12:00:00' DAY TO SECOND AS STRING)",
        "TIMESTAMP '2026-11-02 01:30:00' - INTERVAL 1 DAY = TIMESTAMP '2026-11-01 01:30:00-05:00'",
        "TIMESTAMP '2026-10-31 01:30:00' + INTERVAL 1 DAY = TIMESTAMP '2026-11-01 01:30:00-04:00'",
        "CAST(TIMESTAMP '2026-03-07 02:30:00' + INTERVAL 1 DAY AS STRING)",
        "CAST(INTERVAL 1 DAY + TIMESTAMP '2026-03-07 12:00:00' AS STRING)",
        "CAST(TIMESTAMP_NTZ '2026-03-07 12:00:00' + INTERVAL 1 DAY AS STRING)",
    ],
    "America/Havana": [  # midnight of 2024-03-10 does not exist: the clock went from 00:00 to 01:00
        "TIMESTAMP '2024-03-10 12:00:00' - DATE '2024-03-10'",
        "DATE '2024-03-11' - TIMESTAMP '2024-03-10 00:30:00'",
        "TIMESTAMP_NTZ '2024-03-10 12:00:00' - DATE '2024-03-10'",
        "CAST(CAST(DATE '2024-03-10' AS TIMESTAMP) AS STRING)",
    ],
}


@pytest.mark.parametrize("zone", sorted(ACROSS_CLOCK_CHANGES))
def test_time_arithmetic_across_clock_changes_equals_spark(spark, zone):
    """Differences, interval shifts, casts and comparisons around clock changes, each by
    spark.sql in a session of ``zone`` and by compile_expr with that ``time_zone``."""
    texts = ACROSS_CLOCK_CHANGES[zone]
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        row = spark.sql("SELECT " + ", ".join(f"{t} AS c{k}" for k, t in enumerate(texts))).collect()[0]
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    one = pa.table({"x": [1]})
    got = [compile_expr(parse_fragment(t, 0, t), lambda col: col.name, time_zone=zone)(one).as_py() for t in texts]
    bad = [(t, g, e) for t, g, e in zip(texts, got, row) if g != e]
    assert not bad, f"(expression, local, Spark): {bad}"
