"""Where the CLI's Spark runs (cerql/cli/runtime.py): ``--master``, ``--conf``, ``--remote`` and
``SPARK_REMOTE``. The session builders are checked with PySpark's builders stubbed (no JVM), and
``--remote`` and ``SPARK_REMOTE`` once for real against the Spark Connect server the suite's
session serves (tests/conftest.py); a standalone master is not started here.
"""

from __future__ import annotations

import pandas as pd
import pytest

from cerql.cli import runtime
from cerql.cli.commands import build_parser, main
from cerql.cli.demo import sql_dir, stock_stream
from cerql.cli.tables_io import CliError
from tests.spark.compare import canonical_rows, local_records

import cerql

QUERY = (sql_dir() / "stock_same_lot_pairs.sql").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ the arguments
@pytest.mark.parametrize("command", [["run", "-e", "SELECT 1"], ["explain", "-e", "SELECT 1"], ["demo"]])
def test_every_spark_command_takes_master_remote_and_repeated_conf(command):
    args = build_parser().parse_args(command + [
        "--master", "spark://head:7077", "--remote", "sc://head:15002",
        "--conf", "spark.executor.memory=2g", "--conf", "cerql.maxMatchesPerEvent=9"])
    assert args.master == "spark://head:7077" and args.remote == "sc://head:15002"
    assert runtime.parse_conf(args.conf) == {"spark.executor.memory": "2g", "cerql.maxMatchesPerEvent": "9"}


def test_without_flags_nothing_says_where_so_spark_is_local():
    args = build_parser().parse_args(["demo"])
    assert args.master is None and args.remote is None
    assert runtime.SPARK_DEFAULTS["spark.master"] == "local[*]"


@pytest.mark.parametrize("remote, conf, environ, url", [
    ("sc://a:1", {}, {"SPARK_REMOTE": "sc://b:2"}, "sc://a:1"),  # the flag over the environment
    (None, {"spark.remote": "sc://c:3"}, {"SPARK_REMOTE": "sc://b:2"}, "sc://c:3"),
    (None, {}, {"SPARK_REMOTE": "sc://b:2"}, "sc://b:2"),
    (None, {}, {}, None),
])
def test_the_connect_server_is_the_flag_then_conf_then_spark_remote(remote, conf, environ, url):
    assert runtime.connect_url(conf, None, remote, environ) == url


@pytest.mark.parametrize("master, conf, remote, environ, named", [
    ("local[2]", {}, "sc://a:1", {}, "--remote=sc://a:1"),
    (None, {"spark.master": "local[2]"}, "sc://a:1", {}, "--remote=sc://a:1"),
    ("local[2]", {}, None, {"SPARK_REMOTE": "sc://b:2"}, "SPARK_REMOTE=sc://b:2"),
    (None, {"spark.master": "local[2]", "spark.remote": "sc://c:3"}, None, {}, "--conf spark.remote=sc://c:3"),
])
def test_a_master_and_a_connect_server_together_are_refused_naming_both(master, conf, remote, environ, named):
    with pytest.raises(CliError) as err:
        runtime.connect_url(conf, master, remote, environ)
    assert named in str(err.value) and "local[2]" in str(err.value)


def test_spark_remote_with_master_is_one_clear_line_exit_1(monkeypatch, capsys):
    # PySpark's own builder says CANNOT_CONFIGURE_SPARK_CONNECT_MASTER; the CLI names the two.
    monkeypatch.setenv("SPARK_REMOTE", "sc://nowhere:1")
    assert main(["demo", "--master", "local[2]"]) == 1
    err = capsys.readouterr().err
    assert "SPARK_REMOTE=sc://nowhere:1 and the master local[2]" in err and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--master", "--remote"])
def test_a_local_engine_refuses_master_and_remote(flag, capsys):
    assert main(["demo", "--engine", "local", flag, "x"]) == 1
    assert f"--{flag[2:]} says where Spark runs" in capsys.readouterr().err


# ------------------------------------------------------------------ the builders, stubbed
class FakeConf:
    def __init__(self, refused=()):
        self.values, self.refused = {}, set(refused)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        if key in self.refused:
            raise ValueError(f"[CANNOT_MODIFY_STATIC_CONFIG] {key}")
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


class FakeSession:
    def __init__(self, options=None, refused=()):
        self.options = dict(options or {})
        self.conf = FakeConf(refused)
        self.stopped = False

    def stop(self):
        self.stopped = True


@pytest.fixture
def fresh_process(monkeypatch):
    """No session active, no SPARK_REMOTE, and both builders recording what they were given."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    made = []

    def classic(builder):
        made.append(("classic", FakeSession(builder._options)))
        return made[-1][1]

    def connect(builder):
        made.append(("connect", FakeSession(builder._options, refused={"spark.driver.memory"})))
        return made[-1][1]

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", classic)
    monkeypatch.setattr(ConnectSession.Builder, "create", connect)
    return made


def test_the_default_session_is_local_and_stopped_at_the_end(fresh_process):
    with runtime.spark_session({}) as spark:
        pass
    [(kind, session)] = fresh_process
    assert kind == "classic" and session is spark and spark.stopped
    assert spark.options["spark.master"] == "local[*]"
    assert "spark.remote" not in spark.options


def test_master_starts_the_session_there_over_conf_spark_master(fresh_process):
    conf = runtime.parse_conf(["spark.master=local[1]", "spark.executor.memory=2g"])
    with runtime.spark_session(conf, master="spark://head:7077") as spark:
        pass
    assert spark.options["spark.master"] == "spark://head:7077"  # as spark-submit: the flag wins
    assert spark.options["spark.executor.memory"] == "2g"
    with runtime.spark_session(conf) as spark:
        pass
    assert spark.options["spark.master"] == "local[1]"


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_remote_gives_a_connect_session_with_no_master_and_the_conf_set(fresh_process, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("SPARK_REMOTE", "sc://head:15002")
    remote = "sc://head:15002" if how == "flag" else None
    with runtime.spark_session({"cerql.maxMatchesPerEvent": "9"}, remote=remote) as spark:
        assert spark.conf.get("cerql.maxMatchesPerEvent") == "9"
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    [(kind, session)] = fresh_process
    assert kind == "connect" and session is spark and spark.stopped
    assert spark.options == {"spark.remote": "sc://head:15002"}  # no spark.master: Connect refuses one


def test_a_static_setting_over_connect_is_refused_naming_it(fresh_process):
    with pytest.raises(CliError, match=r"--conf spark.driver.memory: cannot change it on the Spark "
                                       r"Connect session at sc://head:15002: \[CANNOT_MODIFY_STATIC_CONFIG\]"):
        with runtime.spark_session({"spark.driver.memory": "4g"}, remote="sc://head:15002"):
            pass
    assert fresh_process[0][1].stopped


def test_a_master_other_than_the_running_sessions_is_refused(spark):
    with pytest.raises(CliError, match=r"--master spark://head:7077: this process already runs a "
                                       r"Spark session on local\[2\]"):
        with runtime.spark_session({}, master="spark://head:7077"):
            pass
    with runtime.spark_session({}, master="local[2]") as same:
        assert same is spark


# ------------------------------------------------------------------- a real Connect server
def _stock_csv(tmp_path):
    stock = stock_stream(80)
    stock.to_csv(tmp_path / "stock.csv", index=False)
    expected = cerql.run(QUERY, {"stock": stock}, engine="reference")
    assert len(expected) > 0
    return tmp_path / "stock.csv", expected


@pytest.mark.spark
def test_run_with_remote_runs_on_the_connect_server(spark, connect, tmp_path, capsys):
    table, expected = _stock_csv(tmp_path)
    out = tmp_path / "r.parquet"
    url = f"sc://localhost:{spark._cerql_connect_port}"

    code = main(["run", "-e", QUERY, "--table", f"stock={table}", "--out", str(out), "--remote", url])

    assert code == 0, capsys.readouterr().err
    assert f"{len(expected)} matches written" in capsys.readouterr().out
    assert canonical_rows(pd.read_parquet(out).to_dict("records")) == canonical_rows(local_records(expected))
    assert connect.range(3).count() == 3  # the suite's own Connect session is left alone
    assert spark.range(3).count() == 3


@pytest.mark.spark
def test_spark_remote_in_the_environment_is_honoured(spark, connect, tmp_path, capsys, monkeypatch):
    from pyspark.sql import SparkSession

    table, expected = _stock_csv(tmp_path)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))  # a fresh process
    monkeypatch.setenv("SPARK_REMOTE", f"sc://localhost:{spark._cerql_connect_port}")
    seen = []
    real = runtime._connect_session
    monkeypatch.setattr(runtime, "_connect_session", lambda url, conf: seen.append(url) or real(url, conf))

    assert main(["explain", "-e", QUERY, "--table", f"stock={table}"]) == 0
    assert seen == [f"sc://localhost:{spark._cerql_connect_port}"]
    assert "MapInArrow" in capsys.readouterr().out  # Spark's plan, from the server
