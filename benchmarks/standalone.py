"""A Spark standalone cluster on this machine, for the cluster benchmarks (bench_cluster.py,
cold_start_cluster.py): one master and N one-core workers, each a JVM of its own started with
pyspark's ``bin/spark-class`` (SPARK_HOME = the installed pyspark package), on 127.0.0.1 and
free ports, stopped (by process id) when the ``with`` block ends.

    with standalone_cluster(workers=2) as cluster:
        spark = SparkSession.builder.master(cluster.url).getOrCreate()

Why a script and not the test fixture: a benchmark compares one and two workers in one run and
times an executor's first query, so it starts and stops clusters itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
# The driver's settings that must not leak into the workers: executors inherit their worker's
# environment, and a PYTHONPATH pointing at a checkout would shadow the cerql of a packed env.
DRIVER_ONLY = frozenset({"PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "NUMBA_CACHE_DIR"})


def spark_home() -> Path:
    """The installed pyspark package: it holds bin/spark-class and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    """A running master and its workers: ``url`` for ``.master(...)``, ``work`` the folder
    holding each worker's work dir (executors unpack ``spark.archives`` there) and logs."""

    url: str
    ui: str
    work: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))


def _start(cls: str, args: list[str], log: Path, env: dict) -> subprocess.Popen:
    spark_class = spark_home() / "bin" / "spark-class"
    with open(log, "wb") as out:
        return subprocess.Popen([str(spark_class), cls, *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)


def _wait(check, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the standalone cluster did not come up: {what}")


@contextlib.contextmanager
def standalone_cluster(workers: int = 1, cores: int = 1, memory: str = "1g", work: Path | None = None):
    """Start a master and ``workers`` workers of ``cores`` cores each; yield a :class:`Cluster`;
    stop them all (their process groups, by id) at the end."""
    own_work = work is None
    work = Path(tempfile.mkdtemp(prefix="cerql-standalone-")) if own_work else work
    env = {key: value for key, value in os.environ.items() if key not in DRIVER_ONLY}
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOG_DIR=str(work), SPARK_NO_DAEMONIZE="1")
    port, ui_port = free_port(), free_port()
    cluster = Cluster(url=f"spark://{HOST}:{port}", ui=f"http://{HOST}:{ui_port}", work=work)
    try:
        cluster.processes.append(_start("org.apache.spark.deploy.master.Master",
                                        ["--host", HOST, "--port", str(port), "--webui-port", str(ui_port)],
                                        work / "master.log", env))
        _wait(lambda: cluster.alive_workers() >= 0, "master")
        for n in range(workers):
            folder = work / f"worker-{n}"
            folder.mkdir(parents=True, exist_ok=True)
            cluster.processes.append(_start(
                "org.apache.spark.deploy.worker.Worker",
                [cluster.url, "--host", HOST, "--cores", str(cores), "--memory", memory,
                 "--webui-port", str(free_port()), "--work-dir", str(folder)],
                work / f"worker-{n}.log", env))
        _wait(lambda: cluster.alive_workers() == workers, f"{workers} workers")
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 15)
        for process in cluster.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 9)
        if own_work and not os.environ.get("CERQL_KEEP_CLUSTER_WORK"):
            shutil.rmtree(work, ignore_errors=True)
