"""CEQL text to AST: the lark grammar (ceql.lark), sqlglot for Spark SQL fragments, a printer."""

from cerql.parser.printer import to_ceql
from cerql.parser.to_ast import parse

__all__ = ["parse", "to_ceql"]
