"""A CSV ``ts`` column that is not ISO 8601 (issue 38, item 7): the CLI's error carried pandas'
own advice (``passing format='mixed'``, options of a function the user never called). It is now
in cerql's words on every engine, naming the file, the column and the first value that is not a
timestamp, and saying what to do.
"""

from __future__ import annotations

import pandas as pd
import pytest

from cerql.cli import tables_io
from cerql.cli.commands import main

QUERY = "SELECT * FROM s WHERE A AS a ; B AS b"


def _csv(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("type,ts\nA,2024-03-01 09:29:00\nA,03/01/2024 09:30\nB,03/01/2024 09:31\n")
    return path


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_ts_not_iso_8601_is_an_error_in_cerqls_words(tmp_path, capsys, engine):
    path = _csv(tmp_path)
    assert main(["run", "-e", QUERY, "--table", f"s={path}", "--engine", engine]) == 1
    err = capsys.readouterr().err
    assert f"{path}: column 'ts' is named ts but does not hold timestamps" in err
    assert "ISO 8601" in err and "'03/01/2024 09:30' is not one" in err and "Parquet" in err
    for advice in ("You might want", "format=", "dayfirst", "position 0"):
        assert advice not in err


@pytest.mark.spark
def test_spark_reading_says_the_same(tmp_path, spark):
    path = _csv(tmp_path)
    with pytest.raises(tables_io.CliError) as err:
        tables_io.read_spark_table(spark, path, "csv")
    local = str(tables_io.not_timestamps(path, "ts"))
    assert str(err.value) == local


def test_ts_of_numbers_and_iso_text_still_read(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("type,ts,n\nA,2024-03-01T09:29:00Z,1\nB,2024-03-01 09:30:00.5,2\n")
    frame = tables_io.read_table(path)
    assert pd.api.types.is_datetime64_any_dtype(frame["ts"])
