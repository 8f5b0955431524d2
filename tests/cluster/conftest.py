"""A real standalone Spark cluster for the tests of tests/cluster: a master and one worker (two
cores, 1 GiB), each a process of its own started with pyspark's own launcher
(``<pyspark>/bin/spark-class``; pip's pyspark is a whole Spark home: ``bin``, ``sbin`` and
``jars``, Spark Connect's server included), once per test run, and a Spark Connect server in
front of them, started the same way when a test asks for it. Everything listens on 127.0.0.1
only and is stopped (its process group killed) when the run ends.

The executors run the test run's own interpreter (``sys.executable``) with the repository first
on ``PYTHONPATH``, as a cluster whose nodes have cerql installed. Each application takes one
core and 512 MiB (``spark.cores.max=1``), so the Connect server's application and one of
driver.py's run side by side on the worker's two cores, and the Connect server starts while
driver.py runs (their start-up is most of the tests' time).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 120.0  # seconds a process may take to say it is ready (2 busy cores)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


class Processes:
    """The processes a fixture started, each in a process group of its own (a JVM and whatever
    it starts: executors, Python workers), with their logs; :meth:`stop` ends them all."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.env = dict(os.environ, SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1",
                        PYSPARK_PYTHON=sys.executable,
                        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        self.started: list[subprocess.Popen] = []

    def start(self, name: str, args: list[str]) -> Path:
        """Start ``args`` under ``bin/`` of the Spark home; its output goes to ``name``.log."""
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            self.started.append(subprocess.Popen([os.path.join(spark_home(), "bin", args[0]), *args[1:]],
                                                 stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                                 cwd=self.folder, start_new_session=True))
        return log

    def wait_for(self, log: Path, text: str, process: subprocess.Popen | None = None) -> None:
        """Wait until ``text`` shows in ``log``; fail with the log's end if ``process`` (the last
        one started) dies or takes longer than :data:`READY_TIMEOUT`."""
        process = process or self.started[-1]
        deadline = time.monotonic() + READY_TIMEOUT
        while text not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
                pytest.fail(f"{log.name}: no {text!r} (exit code {process.poll()}):\n{tail}")
            time.sleep(0.2)

    def stop(self) -> None:
        for process in reversed(self.started):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """A standalone master and one worker; yields the master's URL (``spark://127.0.0.1:port``)
    and the :class:`Processes` (their environment serves the processes that use the cluster)."""
    processes = Processes(tmp_path_factory.mktemp("standalone"))
    port = free_port()
    try:
        processes.env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"  # no REST port 6066
        master = processes.start("master", [
            "spark-class", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(port), "--webui-port", str(free_port())])
        processes.wait_for(master, "Successfully started service 'sparkMaster'")
        url = f"spark://127.0.0.1:{port}"
        worker = processes.start("worker", [
            "spark-class", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
            "--cores", "2", "--memory", "1g", "--webui-port", str(free_port()),
            "--work-dir", str(processes.folder / "work")])
        processes.wait_for(worker, "Successfully registered with master")
        yield url, processes
    finally:
        processes.stop()


class Server:
    """A process that is starting: :meth:`ready` waits until its log shows ``text``."""

    def __init__(self, processes: Processes, log: Path, text: str, url: str):
        self.processes, self.log, self.text, self.url = processes, log, text, url
        self.process = processes.started[-1]

    def ready(self) -> str:
        """The server's URL, once it serves."""
        self.processes.wait_for(self.log, self.text, self.process)
        return self.url


@pytest.fixture(scope="session")
def connect_server(standalone):
    """A Spark Connect server (``SparkConnectServer`` through ``spark-submit``, as
    ``sbin/start-connect-server.sh`` starts it) whose executor runs on the standalone cluster,
    as a :class:`Server` that is starting: it takes a while, so the tests start it early and
    wait for it (``ready()``, its ``sc://`` URL) when they need it. Stopped with the cluster."""
    url, processes = standalone
    port = free_port()
    log = processes.start("connect", [
        "spark-submit", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name", "cerql-cluster-connect", "--master", url,
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.cores.max=1", "--conf", "spark.executor.memory=512m",
        "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.sql.session.timeZone=UTC"])
    return Server(processes, log, "Spark Connect server started at", f"sc://127.0.0.1:{port}")
