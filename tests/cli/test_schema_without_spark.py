"""``cerql run`` and ``cerql explain`` check a query's names against the schemas of its
``--table`` files before Spark starts (cerql/cli/commands.py, ``check_files``): a Parquet
footer or a CSV header is enough to report an unknown column, so a typo costs a second, not a
JVM start-up. The evidence that Spark did not start is time-independent: the command runs in a
fresh process, and afterwards PySpark has no JVM gateway (``SparkContext._gateway``, set when a
JVM is launched and kept after the session stops)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from cerql.cli import commands
from cerql.cli.tables_io import file_schema, table_specs
from cerql.errors import CeqlError

TYPO = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[pricee > 100]"

# Runs the CLI's main() in a fresh interpreter, then reports its exit code and whether a JVM was started.
PROBE = """
import json, sys
from cerql.cli.commands import main
code = main(sys.argv[1:])
import pyspark
print(json.dumps({"code": code, "jvm": pyspark.SparkContext._gateway is not None}))
"""


@pytest.fixture
def tables(tmp_path):
    stock = pd.DataFrame({"type": ["SELL", "BUY", "SELL", "BUY"], "name": ["A", "A", "B", "B"],
                          "price": [101.0, 99.0, 150.0, 120.0],
                          "ts": pd.to_datetime(["2024-03-01 09:30:00", "2024-03-01 09:30:01",
                                                "2024-03-01 09:30:02", "2024-03-01 09:30:03"])})
    stock.to_parquet(tmp_path / "stock.parquet", index=False)
    stock.to_csv(tmp_path / "stock.csv", index=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    stock.to_parquet(parts / "part-0.parquet", index=False)
    return tmp_path


def cli(*argv: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("command, table", [("run", "stock.parquet"), ("run", "stock.csv"),
                                            ("explain", "stock.parquet")])
def test_an_unknown_column_is_reported_without_starting_spark(tables, command, table):
    result, err = cli(command, "-e", TYPO, "--table", f"stock={tables / table}")
    assert result == {"code": 2, "jvm": False}, err
    assert "cerql: [UNKNOWN_COLUMN] Unknown column 'pricee'" in err
    assert "the stream has columns type, name, price, ts" in err  # the columns come from the file
    assert "^" in err  # the caret under the column, as Spark's own check prints it


def test_an_unknown_partition_column_of_a_parquet_directory_too(tables):
    query = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b PARTITION BY [nam]"
    result, err = cli("run", "-e", query, "--table", f"stock={tables / 'parts'}")
    assert result == {"code": 2, "jvm": False}, err
    assert "[UNKNOWN_COLUMN] Unknown column 'nam'" in err


# In-process: what check_files reads and what it leaves to Spark (no Spark involved).
def test_file_schemas_are_read_from_the_footer_and_the_header(tables):
    parquet = file_schema(tables / "stock.parquet", "parquet")
    assert parquet.names == ["type", "name", "price", "ts"]
    assert str(parquet.field("ts").type) == "timestamp[us]"  # as Spark reads pandas' nanoseconds
    assert file_schema(tables / "stock.csv", "csv").names == ["type", "name", "price", "ts"]
    (tables / "broken.parquet").write_bytes(b"not parquet")
    assert file_schema(tables / "broken.parquet", "parquet") is None  # Spark reports it, as before


def test_a_correct_query_passes_and_errors_spark_may_see_otherwise_are_left_to_it(tables):
    specs = table_specs([f"stock={tables / 'stock.csv'}"])
    commands.check_files("SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[price > 100]", specs)
    # a source no --table gives may be a table of a reused session: Spark decides
    commands.check_files("SELECT * FROM other WHERE SELL AS s", specs)
    # columns Spark computes (an aggregate of an expression): only its analyzer knows their types
    commands.check_files("SELECT * FROM stock WHERE BUY+ AS b FILTER sum(b.price * 2) > 1", specs)
    with pytest.raises(CeqlError) as caught:
        commands.check_files("SELECT * FROM stock WHERE SELL AS s PARTITION BY [nme]", specs)
    assert caught.value.error_class == "UNKNOWN_COLUMN"


# MATCH_RECOGNIZE: the source named before it, checked by the local engine over no rows of the file's schema
MR_TYPO = ("SELECT * FROM stock MATCH_RECOGNIZE (PARTITION BY name ORDER BY ts MEASURES LAST(B.price) AS top "
           "PATTERN (A B+) DEFINE B AS B.pricee > PREV(B.price))")


@pytest.mark.parametrize("command, table", [("run", "stock.parquet"), ("run", "stock.csv"),
                                            ("explain", "stock.parquet")])
def test_match_recognize_unknown_column_is_reported_without_starting_spark(tables, command, table):
    result, err = cli(command, "-e", MR_TYPO, "--table", f"stock={tables / table}")
    assert result == {"code": 2, "jvm": False}, err
    assert "cerql: [UNKNOWN_COLUMN] Unknown column 'pricee'" in err
    assert "the input has columns type, name, price, ts" in err and "^" in err


def test_match_recognize_unknown_source_is_reported_without_starting_spark(tables):
    result, err = cli("run", "-e", MR_TYPO.replace("B.pricee", "B.price"), "--table", f"other={tables / 'stock.csv'}")
    assert result == {"code": 2, "jvm": False}, err
    assert "[UNKNOWN_SOURCE] Unknown source 'stock'" in err and "--table stock=PATH" in err


def test_match_recognize_file_check_leaves_types_of_csv_to_spark(tables):
    specs = table_specs([f"stock={tables / 'stock.csv'}"])
    commands.check_files(MR_TYPO.replace("B.pricee", "B.price"), specs)  # a correct query passes
    # a subquery before MATCH_RECOGNIZE is Spark SQL: Spark checks it
    commands.check_files(MR_TYPO.replace("FROM stock", "FROM (SELECT * FROM stock)"), specs)
    # a DEFINE of the wrong type depends on the types pyarrow guessed: left to Spark
    commands.check_files(MR_TYPO.replace("B.pricee > PREV(B.price)", "B.price"), specs)
    with pytest.raises(CeqlError) as caught:
        commands.check_files(MR_TYPO, specs)
    assert caught.value.error_class == "UNKNOWN_COLUMN"
