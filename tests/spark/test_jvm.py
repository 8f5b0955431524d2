"""cerql's Java sources compiled and loaded (cerql/spark/jvm.py): a jar built once per sources
and Spark version under CERQL_CACHE_DIR, found again without javac; without javac the JVM
matcher is unavailable with the reason, and MATCH_RECOGNIZE keeps to Python with the same answer."""

from __future__ import annotations

import subprocess
import zipfile

import pandas as pd
import pytest

import cerql
from cerql.spark import jvm

pytestmark = pytest.mark.spark


def test_the_jar_is_built_once_and_found_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CERQL_CACHE_DIR", str(tmp_path))
    jvm.compiled_jar.cache_clear()
    try:
        jar = jvm.compiled_jar()
        assert jar.parent == tmp_path and jar.name.startswith("cerql-jvm-")
        names = set(zipfile.ZipFile(jar).namelist())
        assert {"io/cerql/mr/PikeMatcher.class", "io/cerql/mr/MatchRecognizeFunction.class"} <= names
        jvm.compiled_jar.cache_clear()
        monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("javac ran again"))
        assert jvm.compiled_jar() == jar
    finally:
        jvm.compiled_jar.cache_clear()


def test_without_javac_the_jar_is_unavailable_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("CERQL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    jvm.compiled_jar.cache_clear()
    try:
        with pytest.raises(jvm.JvmUnavailable, match="no javac"):
            jvm.compiled_jar()
    finally:
        jvm.compiled_jar.cache_clear()


def test_without_the_jar_match_recognize_runs_in_python(spark, monkeypatch):
    def unavailable():
        raise jvm.JvmUnavailable("no javac (a JDK) on PATH or in JAVA_HOME")

    rows = pd.DataFrame({"ts": range(6), "price": [3.0, 2.0, 1.0, 2.0, 3.0, 1.0]})
    query = ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(A.ts) AS s, LAST(C.ts) AS e "
             "PATTERN (A B+ C+) DEFINE B AS price < PREV(price), C AS price > PREV(price))")
    t = spark.createDataFrame(rows)
    in_jvm = cerql.cer_sql(spark, query, t=t).collect()
    monkeypatch.setattr(jvm, "compiled_jar", unavailable)
    shown = cerql.explain(query, spark, t=t)
    assert "MapInArrow" in shown and "cerql's Java matcher is unavailable: no javac" in shown
    assert cerql.cer_sql(spark, query, t=t).collect() == in_jvm == [(0, 4)]
