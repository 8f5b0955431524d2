"""cerql: complex event recognition with CEQL, on Apache Spark and locally.

``cerql.parse`` gives the typed AST of a query, ``cerql.run`` evaluates it over pandas or
Arrow tables, ``cerql.cer_sql`` (and ``spark.cer_sql``, added on import) runs it on Spark, and
every query error is a :class:`cerql.CeqlError` with a position and a hint.

The public functions are loaded on first use (PEP 562): Spark's Python workers import
``cerql.exec`` for the kernel and should not pay for the parser and the planner.
"""

from importlib import import_module

from cerql.errors import AnalysisError, CeqlError, ExecutionError, ParseError, UnsupportedError
from cerql.spark.patch import install

install()

_LAZY = {
    "analyze": "cerql.api", "explain": "cerql.api", "parse": "cerql.api", "run": "cerql.api",
    "cer_sql": "cerql.spark.session", "register": "cerql.spark.sql_cells",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cerql' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def load_ipython_extension(ipython) -> None:
    """``%load_ext cerql``: adds the ``%%ceql`` cell magic, and shows a CeqlError raised in a cell
    as its message, caret and hint, without cerql's traceback (see cerql.spark.magic)."""
    from cerql.spark.magic import load_ipython_extension as load

    load(ipython)


__all__ = [
    "AnalysisError", "CeqlError", "ExecutionError", "ParseError", "UnsupportedError",
    "analyze", "cer_sql", "explain", "install", "load_ipython_extension", "parse", "register", "run",
]
__version__ = "0.1.0"
