"""cerql: complex event recognition with CEQL, on Apache Spark and locally.

``cerql.parse`` gives the typed AST of a query, ``cerql.run`` evaluates it over pandas or
Arrow tables, and every query error is a :class:`cerql.CeqlError` with a position and a hint.
"""

from cerql.api import analyze, explain, parse, run
from cerql.errors import AnalysisError, CeqlError, ExecutionError, ParseError, UnsupportedError
from cerql.session import cer_sql, install

install()

__all__ = [
    "AnalysisError", "CeqlError", "ExecutionError", "ParseError", "UnsupportedError",
    "analyze", "cer_sql", "explain", "install", "parse", "run",
]
__version__ = "0.1.0"
