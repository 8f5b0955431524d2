"""``%%ceql`` and CeqlError in a real Jupyter kernel (issue 34; cerql/spark/magic.py).

One small notebook runs in an ipykernel on this interpreter (a kernelspec in a temp dir, with
the checkout under test first on its path) and starts its own local[1] Spark session; the test
reads the outputs nbclient recorded: a table with the rows and the row count whatever
``spark.sql.repl.eagerEval.enabled`` says, the DataFrame as the cell's result, and errors as
message, caret and hint without a traceback through cerql's internals.
"""

import json
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

STOCK = """\
import pandas as pd
stock = spark.createDataFrame(pd.DataFrame({
    "ts": [0, 1, 2, 3, 4, 5, 6, 7],
    "type": ["SELL", "BUY", "BUY", "SELL", "BUY", "SELL", "SELL", "BUY"],
    "name": ["MSFT"] * 4 + ["INTC"] * 4,
    "price": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
}))"""
# MSFT: SELL 0 then BUY 1 or BUY 2; INTC: SELL 5 or SELL 6 then BUY 7 (and SELL 3 then nothing)
QUERY = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b PARTITION BY [name] ORDER BY ts"
BAD_COLUMN = "SELECT * FROM stock WHERE SELL AS s ; BUY AS b FILTER b[volume > 1] ORDER BY ts"
# MATCH_RECOGNIZE in a cell: prices rise 1-4 (MSFT) and 5-8 (INTC): one match per name, 4 rows each
ROW_PATTERN = ("SELECT * FROM stock MATCH_RECOGNIZE (PARTITION BY name ORDER BY ts "
               "MEASURES FIRST(price) AS low, LAST(price) AS high, count(*) AS n "
               "PATTERN (A B+) DEFINE B AS price > PREV(price))")
ROW_PATTERN_BAD = ("SELECT * FROM stock MATCH_RECOGNIZE (ORDER BY ts MEASURES count(*) AS n "
                   "PATTERN (A B+) DEFINE B AS volume > 1)")
CELLS = [
    # 0: loading needs no Spark session; a local run's error shows without the internals
    "%load_ext cerql\nimport cerql\nimport pandas as pd",
    f"cerql.run({BAD_COLUMN!r}, {{'stock': pd.DataFrame({{'ts': [0], 'type': ['SELL'], 'price': [1.0]}})}})",
    # 2: the notebook's own Spark session
    "from pyspark.sql import SparkSession\n"
    "spark = (SparkSession.builder.master('local[1]').appName('cerql-notebook-test')\n"
    "         .config('spark.ui.enabled', 'false').config('spark.ui.showConsoleProgress', 'false')\n"
    "         .config('spark.sql.shuffle.partitions', '1').config('spark.sql.session.timeZone', 'UTC')\n"
    "         .getOrCreate())\n"
    "spark.sparkContext.setLogLevel('ERROR')\n" + STOCK,
    # 3: eagerEval off (Spark's default): the rows all the same
    f"%%ceql matches\n{QUERY}",
    "print(type(_).__name__, _ is matches, matches.count())",
    # 5: eagerEval on and two rows a cell: one table, no second one from _repr_html_
    "spark.conf.set('spark.sql.repl.eagerEval.enabled', 'true')\n"
    "spark.conf.set('spark.sql.repl.eagerEval.maxNumRows', '2')",
    f"%%ceql\n{QUERY}",
    # 7: errors from the magic and from cer_sql
    f"%%ceql\n{BAD_COLUMN}",
    "%tb",
    f"cerql.cer_sql(spark, {BAD_COLUMN!r}, stock=stock)",
    # 10: a guard a Spark task raises (BUY 7 completes two matches), in the cell and in a later action
    "spark.conf.set('cerql.maxMatchesPerEvent', '1')",
    f"%%ceql\n{QUERY}",
    f"guarded = cerql.cer_sql(spark, {QUERY!r}, stock=stock)\nspark.conf.unset('cerql.maxMatchesPerEvent')",
    "guarded.toPandas()",
    # 14: MATCH_RECOGNIZE in a cell: its rows, and its error without the internals
    f"%%ceql\n{ROW_PATTERN}",
    f"%%ceql\n{ROW_PATTERN_BAD}",
    "spark.stop()",
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook, executed (about 30 s: the kernel, a JVM, two queries)."""
    tmp = tmp_path_factory.mktemp("notebook")
    spec = tmp / "jupyter" / "kernels" / "cerql-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "cerql tests", "language": "python",
        "env": {"PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
    }))
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(tmp / "jupyter"))
    mp.setenv("IPYTHONDIR", str(tmp / "ipython"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = nbclient.NotebookClient(nb, kernel_name="cerql-test", timeout=240, allow_errors=True,
                                     resources={"metadata": {"path": str(tmp)}})
    try:
        client.execute()
    finally:
        mp.undo()
    return nb


def outputs(nb, i: int) -> list[dict]:
    return nb.cells[i].outputs


def error_of(nb, i: int) -> dict:
    errors = [o for o in outputs(nb, i) if o.output_type == "error"]
    assert len(errors) == 1, outputs(nb, i)
    return errors[0]


def assert_shows_ceql_error(nb, i: int) -> None:
    error = error_of(nb, i)
    text = ANSI.sub("", "\n".join(error.traceback))
    assert error.ename == "AnalysisError"
    assert "Unknown column 'volume' at line" in text
    assert "  " + BAD_COLUMN in text and "\n  " + " " * BAD_COLUMN.index("volume") + "^" in text  # under `volume`
    assert "Hint: the stream has columns" in text
    assert "Traceback" not in text and "File " not in text
    for internal in ("cerql/", "api.py", "resolve", "run_cell_magic", "interactiveshell"):
        assert internal not in text
    assert len(error.traceback) <= 2


def test_loading_without_spark_and_a_local_error(executed):
    assert not [o for o in outputs(executed, 0) if o.output_type == "error"]
    assert_shows_ceql_error(executed, 1)


def test_cell_shows_its_rows_and_count_with_eager_eval_off(executed):
    results = [o for o in outputs(executed, 3) if o.output_type == "execute_result"]
    assert len(results) == 1 and len(outputs(executed, 3)) == 1
    data = results[0].data
    page = data["text/html"]
    assert page.count("<tr>") == 1 + 4 and "<th>match_id</th>" in page and "<th>b</th>" in page
    assert "<td>{1, BUY, MSFT, 2.0}</td>" in page and "<td>{7, BUY, INTC, 8.0}</td>" in page
    assert "<p>4 rows</p>" in page
    text = data["text/plain"]
    assert "DataFrame[" not in text and text.endswith("\n4 rows")
    assert "|{0, SELL, MSFT, 1.0}|{2, BUY, MSFT, 3.0}|" in text
    # the result is the DataFrame itself: in Out/_ and under the name on the magic line
    assert [o.text for o in outputs(executed, 4)] == ["DataFrame True 4\n"]


def test_cell_shows_one_table_with_eager_eval_on_and_says_there_are_more(executed):
    assert len(outputs(executed, 6)) == 1
    data = outputs(executed, 6)[0].data
    assert data["text/html"].count("<tr>") == 1 + 2
    assert "<p>at least 3 rows, the first 2 shown</p>" in data["text/html"]
    assert data["text/plain"].endswith("\nat least 3 rows, the first 2 shown")


def test_errors_show_message_caret_and_hint_and_tb_keeps_the_traceback(executed):
    assert_shows_ceql_error(executed, 7)
    full = ANSI.sub("", "\n".join(o.get("text", "") + "\n".join(o.get("traceback", [])) for o in outputs(executed, 8)))
    assert "AnalysisError" in full and "resolve" in full  # %tb: the frames the cell hid
    assert_shows_ceql_error(executed, 9)
    assert not [o for o in outputs(executed, 10) if o.output_type == "error"]


def test_a_guard_raised_in_a_spark_task_shows_as_the_ceql_error(executed):
    for i in (11, 13):  # the %%ceql cell, and an action on a cer_sql DataFrame in a later cell
        error = error_of(executed, i)
        text = ANSI.sub("", "\n".join(error.traceback))
        assert error.ename == "ExecutionError", text
        assert text.startswith("ExecutionError: [TOO_MANY_MATCHES_PER_EVENT] One event completes at least 2 matches"), text
        assert "cerql.maxMatchesPerEvent" in text
        assert "Traceback" not in text and "PythonException" not in text and "JVM" not in text
        assert len(error.traceback) <= 2
    assert not [o for o in outputs(executed, 12) if o.output_type == "error"]


def test_loading_keeps_a_custom_handler_already_there(tmp_path, monkeypatch):
    """In-process, no kernel: the handler for CeqlError joins one the user had set, and loading
    twice adds it once."""
    import builtins

    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    before = set(vars(builtins))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    try:
        seen = []
        shell.set_custom_exc((KeyError,), lambda self, etype, value, tb, tb_offset=None: seen.append(etype))
        shell.run_line_magic("load_ext", "cerql")
        shell.run_line_magic("reload_ext", "cerql")
        assert shell.custom_exceptions.count(KeyError) == 1
        assert sum(issubclass(e, Exception) and e.__name__ == "CeqlError" for e in shell.custom_exceptions) == 1
        assert not shell.run_cell("{}['missing']").success and seen == [KeyError]
        shown = []
        monkeypatch.setattr(shell, "_showtraceback", lambda etype, value, stb: shown.append(stb))
        bad = "import cerql\ncerql.run('SELECT * FROM s WHERE A ;; B ORDER BY ts', {'s': {'ts': [0], 'type': ['A']}})"
        assert not shell.run_cell(bad).success and seen == [KeyError]
        assert len(shown) == 1 and shown[0][0].startswith("ParseError: [DANGLING_OPERATOR] Syntax error: unexpected ';'")
        assert "^" in shown[0][0] and "Hint: " in shown[0][0]
        assert sys.last_value is not None and sys.last_value.__traceback__ is not None  # for %tb
    finally:
        InteractiveShell.clear_instance()
        for name in set(vars(builtins)) - before:
            delattr(builtins, name)


def test_a_match_recognize_cell_shows_its_rows_and_its_errors(executed):
    results = [o for o in outputs(executed, 14) if o.output_type == "execute_result"]
    assert len(results) == 1
    page = results[0].data["text/html"]
    assert page.count("<tr>") == 1 + 2 and "<th>low</th>" in page and "<th>n</th>" in page
    assert "<td>MSFT</td><td>1.0</td><td>4.0</td><td>4</td>" in page.replace("\n", "").replace(" ", "")
    error = error_of(executed, 15)
    text = ANSI.sub("", "\n".join(error.traceback))
    assert error.ename == "AnalysisError" and "Unknown column 'volume'" in text and "Hint:" in text
    assert "Traceback" not in text and "File " not in text and len(error.traceback) <= 2
