"""Tables in and results out for the ``cerql`` command line: files to DataFrames and back.

Input: ``--table name=path`` options and the files they name, and a query's result. Output:
pandas DataFrames for the local engines (:func:`read_table`), Spark DataFrames
(:func:`read_spark_table`), result files (:func:`write_result`, :func:`write_spark_result`) and
the text Spark would print (:func:`show_text`). A file that cannot be read or written is a
:class:`CliError`, which :mod:`cerql.cli` turns into exit code 1: the fault is the file's, not
the query's. Kept apart from the argument parsing so that what each file format means to cerql
is decided in one place, for both kinds of engine.

Tables come from files, one ``--table name=path`` each: a ``.parquet`` or ``.csv`` file, or a
directory of part files (Parquet, or CSV when it holds ``*.csv`` files).

* Parquet is read as is, column types included. With Spark, a file with nanosecond timestamps
  (what pandas writes by default), which Spark cannot read, is loaded through pyarrow on the
  driver with its timestamps cut to microseconds, and a note says so.
* CSV has no types, so timestamps are recognised here. Spark infers the schema (two passes over
  the file) with ISO 8601 as the only timestamp format (``2024-03-01 09:30:00.5``,
  ``2024-03-01T09:30:00Z``; Spark's lenient default would read a taxi id ``T07`` as a time of
  day). The local engines parse with pandas: a text column whose every non-empty value is an
  ISO 8601 date or time becomes a timestamp. On both, a column named ``ts`` must hold timestamps
  (or numbers, for a numeric ordering column).

Results go to ``--out`` as ``.parquet`` (nested structs and lists kept), ``.csv`` (nested values
as JSON text, since CSV has no nested types; timestamps in ISO 8601) or ``.json`` (JSON Lines: one
object per match). Spark writes each as a directory of part files, as it writes any table, so a
large result is written in parallel and never collected on the driver; pandas, pyarrow and Spark
all read such a directory as one table. The local engines write a single file. Without ``--out``,
Spark prints the first ``--show`` matches (``DataFrame.show``) and the local engines print all.

``--out`` never deletes or replaces what cerql did not write (:func:`check_out`): an existing path
is refused unless ``--overwrite`` is given (``OUTPUT_EXISTS``), a path that is, lies inside or
holds one of the command's inputs is refused even with it (``OUTPUT_IS_INPUT``), and with it only
a regular file (or a link, replaced as a link), an empty directory or a directory of Spark's own
part files with its ``_SUCCESS`` marker is replaced. Anything else (``.env``, ``_config.yml``, a
``part-0.csv`` of one's own) makes the directory not a previous result (``OUTPUT_NOT_REPLACEABLE``).
Results are written beside ``--out`` under a hidden name and moved there only once complete, so a
query that fails leaves the previous file as it was.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa

from cerql.spark.task_errors import first_line

TABLE_SUFFIXES = (".parquet", ".csv")
OUT_SUFFIXES = (".parquet", ".csv", ".json")

# ISO 8601 date-times with optional seconds, fraction and offset; the one timestamp format CSV
# inference accepts (module docstring).
CSV_TIMESTAMP_FORMAT = "yyyy-MM-dd['T'][' ']HH:mm[:ss][.SSSSSSSSS][XXX]"


class CliError(Exception):
    """A problem with the command's files or arguments (not with the query): exit code 1.

    Defined here, the first module to raise it, so that :mod:`cerql.cli.runtime` (a bad
    ``--conf``) and :mod:`cerql.cli` (a bad argument) share it without importing the CLI.
    """


class OutputRefused(CliError):
    """``--out`` would replace what cerql did not write, or an input: refused before anything
    runs, with exit code 2 (a usage error, like argparse's) and an upper-case ``error_class``.
    """

    def __init__(self, message: str, error_class: str):
        super().__init__(message)
        self.error_class = error_class


def note(message: str) -> None:
    """A remark on stderr that is neither an error nor part of the result."""
    print(f"cerql: note: {message}", file=sys.stderr)


# ------------------------------------------------------------------------------ reading tables
def parse_table_spec(spec: str) -> tuple[str, Path]:
    """``name=path`` -> (name, path); a bare path is named after its file (``a/stock.csv`` ->
    stock), as Spark names a table after its view."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = Path(spec).name.split(".")[0]
    if not name or not path:
        raise CliError(f"--table {spec!r}: expected name=path.parquet or name=path.csv")
    return name, Path(path)


def table_format(path: Path) -> str:
    """``"parquet"`` or ``"csv"``: by suffix, or for a directory without one, by its files."""
    suffix = path.suffix.lower()
    if suffix in TABLE_SUFFIXES and (path.is_file() or path.is_dir()):
        return suffix[1:]
    if not path.exists():
        raise CliError(f"{path}: no such file")
    if path.is_dir() and suffix not in TABLE_SUFFIXES:
        return "csv" if any(path.glob("*.csv")) else "parquet"
    raise CliError(f"{path}: a table must be a .parquet or .csv file, or a directory of them")


def table_specs(specs: list[str]) -> list[tuple[str, Path, str]]:
    """Every ``--table`` as (name, path, format), checked before any engine starts; a name given
    twice is an error."""
    out: list[tuple[str, Path, str]] = []
    for spec in specs:
        name, path = parse_table_spec(spec)
        if name.lower() in (n.lower() for n, _, _ in out):
            raise CliError(f"--table {name!r} is given twice")
        out.append((name, path, table_format(path)))
    return out


def not_timestamps(path, column: str, value=None) -> CliError:
    """A ``ts`` column that holds neither timestamps nor numbers, in cerql's words on every
    engine (``value``: the first one that is not an ISO 8601 date-time, when known)."""
    found = f": {str(value)!r} is not one" if value is not None else ""
    return CliError(f"{path}: column {column!r} is named ts but does not hold timestamps (ISO 8601 date-times such "
                    f"as 2024-03-01 09:30:00) or numbers{found}. Write the times in ISO 8601, give the table as "
                    "Parquet with a timestamp column, or rename the column")


def parse_timestamps(df: pd.DataFrame, path="table") -> pd.DataFrame:
    """Parse the text columns of a CSV table that hold timestamps (rules: module docstring)."""
    df = df.copy()
    for column in df.columns:
        values = df[column]
        if values.dtype != object or values.isna().all():
            continue
        try:
            parsed = pd.to_datetime(values, format="ISO8601")
        except (ValueError, TypeError, OverflowError):
            if str(column).lower() == "ts":
                try:
                    bad = pd.to_datetime(values, format="ISO8601", errors="coerce").isna() & values.notna()
                    value = values[bad].iloc[0] if bad.any() else None
                except (ValueError, TypeError, OverflowError):
                    value = None
                raise not_timestamps(path, str(column), value) from None
            continue
        df[column] = parsed
    return df


def read_table(path: Path, fmt: str | None = None) -> pd.DataFrame:
    """One ``--table`` as a pandas DataFrame, for the local engines (Parquet as is, CSV with
    timestamps parsed; a directory of CSV parts is read part by part, in name order).

    Parameters
    ----------
    path : pathlib.Path
        A ``.parquet`` or ``.csv`` file, or a directory of either.
    fmt : {"parquet", "csv"}, optional
        The format; found from the path when not given.

    Returns
    -------
    pandas.DataFrame
    """
    fmt = fmt or table_format(path)
    try:
        if fmt == "parquet":
            return pd.read_parquet(path)
        parts = sorted(path.glob("*.csv")) if path.is_dir() else [path]
        frames = [pd.read_csv(p) for p in parts]
        return parse_timestamps(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0], path)
    except CliError:
        raise
    except Exception as err:  # pandas and pyarrow raise many kinds; all mean "unreadable"
        raise CliError(f"{path}: cannot read table: {err}") from err


def _micros(t):
    """An Arrow type with every nanosecond timestamp in it (also inside structs and lists) made
    a microsecond one, the finest Spark has."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.timestamp("us", t.tz)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_micros(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_micros(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_micros(t.value_type)))
    return t


def pa_schema(schema):
    """An Arrow schema with its nanosecond timestamps made microsecond ones (:func:`_micros`)."""
    import pyarrow as pa

    return pa.schema([f.with_type(_micros(f.type)) for f in schema])


def _nanosecond_parquet(path: Path) -> bool:
    """Whether a Parquet file (or the first file of a directory) stores timestamps in
    nanoseconds, which Spark refuses (pandas writes them by default). The footer says it; the
    Arrow schema does not, since pyarrow also reads Spark's INT96 timestamps as nanoseconds."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    files = ds.dataset(path, format="parquet").files
    if not files:
        return False
    schema = pq.ParquetFile(files[0]).schema
    return any("timeUnit=nanoseconds" in str(schema.column(i).logical_type) for i in range(len(schema)))


CSV_SAMPLE_BYTES = 1 << 20  # the first rows pyarrow infers a CSV file's column types from


def file_schema(path: Path, fmt: str) -> pa.Schema | None:
    """A table file's schema read without Spark, for checking a query's names before Spark
    starts (``cerql run`` and ``cerql explain``): a Parquet file's from its footer (a directory's
    from its first file, with its hive partition columns), its nanosecond timestamps made
    microseconds as Spark reads them; a CSV file's column names from its header, with the types
    pyarrow infers from the first rows (Spark may infer other types: only the names are
    relied on). None when the file cannot be read this way; Spark then reads it as before."""
    import pyarrow.csv as pacsv
    import pyarrow.dataset as ds

    try:
        if fmt == "parquet":
            return pa_schema(ds.dataset(path, format="parquet", partitioning="hive").schema)
        first = min(path.glob("*.csv"), default=None) if path.is_dir() else path
        if first is None:
            return None
        with pacsv.open_csv(first, read_options=pacsv.ReadOptions(block_size=CSV_SAMPLE_BYTES)) as reader:
            return reader.schema
    except (OSError, ValueError, pa.ArrowException):
        return None


def read_spark_table(spark, path: Path, fmt: str):
    """One ``--table`` as a Spark DataFrame (rules and the nanosecond fallback: module docstring).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : pathlib.Path
    fmt : {"parquet", "csv"}

    Returns
    -------
    pyspark.sql.DataFrame
    """
    from pyspark.errors import PySparkException

    try:
        if fmt == "csv":
            df = (spark.read.option("header", True).option("inferSchema", True).option("escape", '"')
                  .option("timestampFormat", CSV_TIMESTAMP_FORMAT).csv(str(path)))
        else:
            import pyarrow.dataset as ds

            if not _nanosecond_parquet(path):
                df = spark.read.parquet(str(path))
            else:
                table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
                wanted = pa_schema(table.schema)
                note(f"{path}: nanosecond timestamps, which Spark cannot read; loaded through "
                     "pyarrow on the driver, cut to microseconds")
                df = spark.createDataFrame(table.cast(wanted, safe=False))
    except PySparkException as err:
        raise CliError(f"{path}: cannot read table: {first_line(err)}") from err
    except (OSError, ValueError) as err:  # pyarrow: not Parquet, unreadable
        raise CliError(f"{path}: cannot read table: {err}") from err
    for field in df.schema.fields:
        if field.name.lower() == "ts" and field.dataType.typeName() == "string":
            raise not_timestamps(path, field.name)
    return df


# ----------------------------------------------------------------------------- writing results
def _json_value(value):
    """Timestamps, dates and NumPy scalars as JSON values (``json.dumps``'s ``default``)."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if hasattr(value, "item"):  # NumPy scalars
        return value.item()
    return str(value)


def _plain(value):
    """A result cell as a plain Python value: pandas' missing values become None."""
    if isinstance(value, (list, dict)):
        return value
    if value is pd.NaT or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value


# ------------------------------------------------------------------------------- --out safety
# The names Spark gives the files of a table it writes: part files
# (part-00000-<job uuid>-c000.snappy.parquet), the _SUCCESS marker, and Hadoop's checksum of
# each (.<name>.crc). Nothing looser: `.env`, `_config.yml` or a `part-0.csv` of one's own are not
# Spark's.
SPARK_PART = re.compile(r"part-\d{5,}-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?:-c\d{3})?(?:\.\w+)*")


def _spark_file(name: str) -> bool:
    """Whether a file name is one Spark gives a file of a table it writes."""
    if name.startswith(".") and name.endswith(".crc"):
        name = name[1:-len(".crc")]
    return name == "_SUCCESS" or SPARK_PART.fullmatch(name) is not None


def previous_result(path: Path) -> bool:
    """Whether a directory is empty or a finished Spark result: its ``_SUCCESS`` marker and
    nothing but regular files with Spark's names. Only such a directory may be replaced, since
    replacing a directory deletes everything in it."""
    entries = list(path.iterdir())
    return not entries or (
        any(e.name == "_SUCCESS" for e in entries)
        and all(e.is_file() and not e.is_symlink() and _spark_file(e.name) for e in entries))


def _replaceable(path: Path) -> bool:
    """Whether ``--overwrite`` may replace what is at ``path``: a regular file, a link (replaced
    as a link, its target untouched) or a directory :func:`previous_result` accepts."""
    if path.is_symlink() or path.is_file():
        return True
    return path.is_dir() and previous_result(path)


def _overlap(out: Path, given: Path) -> str | None:
    """How ``--out`` meets an input (``"is"``, ``"lies inside"``, ``"holds"``), or None: by their
    resolved paths (links followed) and, for an existing file, by identity (a hard link)."""
    a, b = out.resolve(), given.resolve()
    if a == b or _same_file(out, given):
        return "is"
    if b in a.parents:
        return "lies inside"
    if a in b.parents:
        return "holds"
    return None


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are one file (a hard link too); False when either is absent."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_not_input(path: Path, inputs: list[Path], option: str) -> None:
    """Refuse an output path (``--out``, ``--dot``) that is, holds or lies inside one of the
    command's inputs (``OUTPUT_IS_INPUT``): writing it would destroy what the query reads."""
    for given in inputs:
        how = _overlap(path, given)
        if how is not None:
            raise OutputRefused(f"{option} {path}: it {how} the input {given}, which cerql never "
                                "replaces; write to another path", "OUTPUT_IS_INPUT")


def check_out(path: Path, inputs: list[Path], overwrite: bool) -> None:
    """Refuse an ``--out`` that would delete or replace what cerql did not write, before
    anything runs (rules: module docstring).

    Parameters
    ----------
    path : pathlib.Path
        The ``--out`` path.
    inputs : list of pathlib.Path
        Every file the command reads (the query and the ``--table`` paths): ``--out`` may be
        none of them, lie inside none and hold none, even with ``--overwrite``.
    overwrite : bool
        Whether ``--overwrite`` was given.

    Raises
    ------
    OutputRefused
        ``OUTPUT_IS_INPUT``, ``OUTPUT_EXISTS`` or ``OUTPUT_NOT_REPLACEABLE``.
    """
    check_not_input(path, inputs, "--out")
    if not os.path.lexists(path):
        return
    if not overwrite:
        raise OutputRefused(f"--out {path}: it already exists; give --overwrite to replace it, "
                            "or choose a new path", "OUTPUT_EXISTS")
    if not _replaceable(path):
        raise OutputRefused(f"--out {path}: not a previous result (it holds files Spark did not "
                            "write), so cerql will not replace it even with --overwrite; choose "
                            "a new path", "OUTPUT_NOT_REPLACEABLE")


def _beside(path: Path, what: str) -> Path:
    """An unused hidden name in ``path``'s directory, for a result being written or an old one
    being replaced (same file system, so a rename moves it)."""
    return path.with_name(f".{path.name}.cerql-{what}-{uuid.uuid4().hex[:12]}")


def _discard(path: Path) -> None:
    """Delete a replaced ``--out``: a file or link, or a directory's Spark files and then the
    directory (a file that appeared in it since the check keeps it, and the error says so)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for entry in path.iterdir():
        if entry.is_file() and _spark_file(entry.name):
            entry.unlink()
    path.rmdir()


def _install(written: Path, path: Path) -> None:
    """Move a complete result from ``written`` to ``path``, replacing what was there only when
    :func:`_replaceable` still allows it (it was checked before the query ran)."""
    if os.path.lexists(path):
        if not _replaceable(path):
            raise OutputRefused(f"--out {path}: it changed while the query ran and is not a "
                                "previous result any more; choose a new path",
                                "OUTPUT_NOT_REPLACEABLE")
        old = _beside(path, "old")
        os.rename(path, old)
        os.rename(written, path)
        try:
            _discard(old)
        except OSError as err:
            note(f"the previous {path} is kept as {old}: {err.strerror or err}")
    else:
        os.rename(written, path)


def _delete_partial(written: Path) -> None:
    """Remove a result cerql began writing under a hidden name and did not finish."""
    if written.is_dir() and not written.is_symlink():
        shutil.rmtree(written, ignore_errors=True)
    elif os.path.lexists(written):
        written.unlink()


def _write_local(result: pa.Table, path: Path, suffix: str) -> None:
    """One local result file at ``path`` in the format ``suffix`` names."""
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(result, path)
        return
    flat = plain_frame(result)
    if suffix == ".csv":
        for column in flat.columns:
            if flat[column].map(lambda v: isinstance(v, (list, dict))).any():
                flat[column] = flat[column].map(
                    lambda v: None if v is None else json.dumps(v, default=_json_value))
        flat.to_csv(path, index=False)
    else:
        with path.open("w", encoding="utf-8") as f:
            for record in flat.to_dict("records"):
                plain = {k: _plain(v) for k, v in record.items()}
                f.write(json.dumps(plain, default=_json_value) + "\n")


def plain_frame(result: pa.Table) -> pd.DataFrame:
    """A local result as pandas with nested cells (variables) as Python dicts and lists, what
    the CSV and JSON writers and the console print."""
    frame = result.to_pandas()
    for name, column in zip(result.column_names, result.columns):
        if pa.types.is_nested(column.type):
            frame[name] = pd.Series(column.to_pylist(), index=frame.index, dtype=object)
    return frame


def write_result(result: pa.Table, path: Path) -> None:
    """Write a local engine's result to ``.parquet``, ``.csv`` or ``.json`` (one file each;
    formats in the module docstring), under a hidden name first and then moved to ``path``.

    Parameters
    ----------
    result : pyarrow.Table
        What :func:`cerql.run` returned with ``output="arrow"``.
    path : pathlib.Path
        The output file, checked by :func:`check_out`; its suffix picks the format.
    """
    suffix = out_suffix(path)
    _write_then_install(path, lambda written: _write_local(result, written, suffix))


def out_suffix(path: Path) -> str:
    """The format of an output path, by its suffix (lower case): one of ``OUT_SUFFIXES``."""
    suffix = path.suffix.lower()
    if suffix not in OUT_SUFFIXES:
        raise CliError(f"--out {path}: use a .parquet, .csv or .json file")
    return suffix


def _write_then_install(path: Path, write) -> None:
    """``write`` a file or directory under a hidden name beside ``path``, then move it there, so
    a failed write never leaves half a result at ``path``; what is left of it is deleted."""
    written = _beside(path, "new")
    try:
        write(written)
        _install(written, path)
    except OSError as err:
        raise CliError(f"--out {path}: cannot write: {err.strerror or err}") from err
    finally:
        _delete_partial(written)


def write_spark_result(spark, df, path: Path) -> int:
    """Write a Spark result as a directory of part files (formats: module docstring), under a
    hidden name first and then moved to ``path``, and return how many matches it holds (read
    back from the written files: a second run of the query would cost more).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    df : pyspark.sql.DataFrame
        What :func:`cerql.cer_sql` returned.
    path : pathlib.Path
        The output directory, checked by :func:`check_out`; its suffix picks the format.

    Returns
    -------
    int
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    fmt = path.suffix.lower()[1:]
    if fmt == "csv":
        nested = (StructType, ArrayType, MapType)
        df = df.select(*[F.to_json(F.col(f"`{f.name}`")).alias(f.name)
                         if isinstance(f.dataType, nested) else F.col(f"`{f.name}`")
                         for f in df.schema.fields])
    writer = df.write.mode("error")  # "errorifexists" is the same on classic Spark; Connect knows only "error"
    if fmt == "csv":  # RFC 4180 quoting (a quote doubled), which pandas and spreadsheets read
        writer = writer.option("header", True).option("escape", '"')
    _write_then_install(path, lambda written: writer.format(fmt).save(str(written)))
    reader = spark.read.option("header", True) if fmt == "csv" else spark.read
    return reader.format(fmt).load(str(path)).count()


def show_text(df, n: int, truncate: int) -> str:
    """What ``df.show(n, truncate)`` prints, as text, so it is printed only once Spark is done
    (the progress line must be gone first)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        df.show(n, truncate=truncate if truncate > 0 else False)
    return buffer.getvalue().rstrip("\n")
