"""cerql: complex event recognition with CEQL, on Apache Spark and locally.

``cerql.parse`` gives the typed AST of a query, ``cerql.run`` evaluates it over pandas or
Arrow tables, and every query error is a :class:`cerql.CeqlError` with a position and a hint.
"""

from cerql.api import analyze, explain, parse, run
from cerql.errors import AnalysisError, CeqlError, ExecutionError, ParseError, UnsupportedError
from cerql.session import cer_sql, install
from cerql.udtf import register

install()


def load_ipython_extension(ipython) -> None:
    """``%load_ext cerql``: adds the ``%%ceql`` cell magic (see cerql.magic)."""
    from cerql.magic import load_ipython_extension as load

    load(ipython)


__all__ = [
    "AnalysisError", "CeqlError", "ExecutionError", "ParseError", "UnsupportedError",
    "analyze", "cer_sql", "explain", "install", "load_ipython_extension", "parse", "register", "run",
]
__version__ = "0.1.0"
