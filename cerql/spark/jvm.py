"""cerql's JVM side: the Java sources under cerql/spark/java, compiled once and loaded into a session.

Why: a MATCH_RECOGNIZE whose rows cross to Python pays for the crossing alone about half of what
Spark's own shuffle and sort cost (docs/benchmarks.md); matched inside the JVM, over Spark's own
rows right after its sort, the rows never leave it. The Java code is the
engine (the Pike matcher, written for cerql, docs/architecture.md), so it ships as source: it is
compiled on first use with the JDK's ``javac`` against the jars of the installed pyspark, into a
jar cached under ``CERQL_CACHE_DIR`` (default ``~/.cache/cerql``), keyed by the sources and the
Spark version, and added to a session with ``SparkContext.addJar`` (so a cluster's executors
fetch it too). Where there is no ``javac`` (a JRE only), :func:`compiled_jar` says why and the
callers keep to the Python path: the answer is the same, only slower.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from functools import lru_cache
from pathlib import Path

JAVA_DIR = Path(__file__).resolve().parent / "java"
_LOCK = threading.RLock()  # re-entrant: class_loader holds it while compiled_jar builds the jar
_LOADED: dict[tuple, object] = {}  # context_key -> the driver's class loader of the jar
_MEMBERS: dict[tuple, object] = {}  # (context_key, class, method or None, arity) -> its constructor or method


class JvmUnavailable(RuntimeError):
    """cerql's Java code cannot be compiled or loaded here (no javac, a Spark Connect session)."""


def java_sources() -> list[Path]:
    """The .java files shipped with cerql, in a stable order."""
    return sorted(JAVA_DIR.rglob("*.java"))


def spark_jars() -> list[Path]:
    """The jars of the installed pyspark: the classpath the sources compile against."""
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))


def cache_root() -> Path:
    return Path(os.environ.get("CERQL_CACHE_DIR") or Path.home() / ".cache" / "cerql")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _digest(sources: list[Path]) -> str:
    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    for path in sources:
        h.update(path.relative_to(JAVA_DIR).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def compiled_jar() -> Path:
    """The jar of cerql's Java classes, compiled now if the cache does not hold it yet.
    Raises :class:`JvmUnavailable` (with the reason) when it cannot be built."""
    sources = java_sources()
    jar = cache_root() / f"cerql-jvm-{_digest(sources)}.jar"
    if jar.exists():
        return jar
    javac = _javac()
    if javac is None:
        raise JvmUnavailable("no javac (a JDK) on PATH or in JAVA_HOME")
    with _LOCK, tempfile.TemporaryDirectory(prefix="cerql-javac-") as tmp:
        classes = Path(tmp) / "classes"
        classpath = os.pathsep.join(str(p) for p in spark_jars())
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", classpath,
                               "-d", str(classes), *map(str, sources)], capture_output=True, text=True)
        if done.returncode != 0:
            raise JvmUnavailable(f"javac failed:\n{done.stderr.strip()}")
        jar.parent.mkdir(parents=True, exist_ok=True)
        part = jar.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        os.replace(part, jar)  # atomic: a concurrent build writes the same bytes
    return jar


def context_key(spark) -> tuple:
    """What tells a SparkContext from any other of this process: one stopped and another started
    in a notebook can reuse the Python object's id, and the jar must be added to each."""
    sc = spark.sparkContext
    key = getattr(sc, "_cerql_context_key", None)  # kept on the context: two calls into the JVM
    if key is None:
        key = sc._cerql_context_key = (sc.applicationId, sc.startTime)
    return key


def class_loader(spark):
    """The driver's loader of cerql's classes for ``spark`` (a classic session), the jar added to
    its SparkContext once, so that tasks load the same classes."""
    from cerql.spark.compat import is_connect

    if is_connect(spark):
        raise JvmUnavailable("a Spark Connect session: the client has no JVM to load cerql's classes into")
    key = context_key(spark)
    with _LOCK:
        loader = _LOADED.get(key)
        if loader is None:
            jar = compiled_jar()
            sc = spark.sparkContext
            sc._jsc.sc().addJar(str(jar))
            urls = sc._gateway.new_array(sc._jvm.java.net.URL, 1)
            urls[0] = sc._jvm.java.io.File(str(jar)).toURI().toURL()
            loader = sc._jvm.java.net.URLClassLoader(urls, sc._jsc.sc().getClass().getClassLoader())
            _LOADED[key] = loader
    return loader


def _member(spark, class_name: str, name: str | None, count: int):
    """The constructor (``name`` None) or public method of ``count`` parameters of one of cerql's
    classes, looked up once per SparkContext: each step of the lookup is a call into the JVM, and
    a query is planned again each time it runs."""
    key = (context_key(spark), class_name, name, count)
    member = _MEMBERS.get(key)
    if member is None:
        cls = spark.sparkContext._jvm.java.lang.Class.forName(class_name, True, class_loader(spark))
        members = cls.getConstructors() if name is None else cls.getMethods()
        found = [m for m in members if (name is None or m.getName() == name) and m.getParameterCount() == count]
        if not found:
            what = "constructor" if name is None else f"static {name}"
            raise JvmUnavailable(f"{class_name} has no {what} of {count} arguments")
        member = _MEMBERS[key] = found[0]
    return member


@functools.lru_cache(maxsize=4)
def _object_class(gateway):
    """``java.lang.Object`` of a gateway: each step of ``gateway.jvm.java.lang.Object`` is a call."""
    return gateway.jvm.java.lang.Object


def _objects(spark, args) -> object:
    """``args`` as a Java ``Object[]``, what reflection's ``newInstance`` and ``invoke`` take."""
    gateway = spark.sparkContext._gateway
    values = gateway.new_array(_object_class(gateway), len(args))
    for i, a in enumerate(args):
        values[i] = a
    return values


def new_instance(spark, class_name: str, *args):
    """``new class_name(args...)`` of one of cerql's classes, in the driver's JVM."""
    return _member(spark, class_name, None, len(args)).newInstance(_objects(spark, args))


def static_call(spark, class_name: str, method: str, *args):
    """``class_name.method(args...)``, a static method of one of cerql's classes."""
    return _member(spark, class_name, method, len(args)).invoke(None, _objects(spark, args))


def java_schema(spark, schema):
    """A pyspark StructType as the JVM's."""
    return spark._jsparkSession.parseDataType(schema.json())


__all__ = ["JAVA_DIR", "JvmUnavailable", "class_loader", "compiled_jar", "context_key", "java_sources", "java_schema",
           "new_instance", "spark_jars", "static_call"]
