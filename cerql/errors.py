"""Errors raised by cerql: one root, one class per stage.

Every error a user can cause with a query is a :class:`CeqlError`. It carries the query text
and the position of the offending construct, so ``str(err)`` shows the error class (as Spark's
errors do: ``[UNKNOWN_COLUMN] ...``), the line with a caret under it and a hint, never a bare
traceback from lark, sqlglot or Spark.
"""

from __future__ import annotations

from typing import Any


# The settings that raise a guard's limit: Spark confs (cer_sql reads the first from the
# session), also given to the CLI with --conf and named in the guards' errors.
MAX_MATCHES_CONF = "cerql.maxMatchesPerEvent"  # cerql.run's max_matches_per_event
MAX_OUTPUT_ROWS_CONF = "cerql.maxOutputRows"    # cerql.run's max_output_rows
MAX_OUTPUT_EVENTS_CONF = "cerql.maxOutputEvents"  # cerql.run's max_output_events


class CeqlError(Exception):
    """Root of every cerql query error.

    Attributes
    ----------
    error_class : str
        A stable, upper-case name for the kind of error (tests match on it).
    line, column : int or None
        1-based position in the query text, when the error has one.
    hint : str or None
        What the user can do about it.
    params : dict
        The values the message was built from.
    """

    def __init__(
        self,
        message: str,
        *,
        error_class: str = "CEQL_ERROR",
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
        text: str | None = None,
        params: dict[str, Any] | None = None,
    ):
        self.message = message
        self.error_class = error_class
        self.line = line
        self.column = column
        self.hint = hint
        self.text = text
        self.params = dict(params or {})
        super().__init__(self._render())

    @classmethod
    def at(cls, text: str, offset: int, message: str, error_class: str, hint: str | None = None,
           **params: Any) -> "CeqlError":
        """The error at a character offset of the query text, with its line and column: the one
        way every stage builds a positioned error (``AnalysisError.at(text, span.start, ...)``)."""
        line, column = position_of(text, offset)
        return cls(message, error_class=error_class, line=line, column=column, hint=hint, text=text,
                   params=params or None)

    def with_text(self, text: str) -> "CeqlError":
        """Attach the query text (for the caret) when the raiser did not have it."""
        if self.text is None:
            self.text = text
            self.args = (self._render(),)
        return self

    def _render(self) -> str:
        # Spark's own errors start with their class ("[UNRESOLVED_COLUMN...] ..."); ours do
        # too, so the code the docs name is the one the user sees, and a search finds it.
        out = f"[{self.error_class}] {self.message}"
        if self.line is not None and self.column is not None:
            out += f" at line {self.line}, column {self.column}"
            if self.text is not None:
                lines = self.text.splitlines() or [""]
                if 1 <= self.line <= len(lines):
                    src = lines[self.line - 1]
                    out += "\n  " + src + "\n  " + " " * (self.column - 1) + "^"
        if self.hint:
            out += "\nHint: " + self.hint
        return out

    def __str__(self) -> str:
        return self._render()


class ParseError(CeqlError):
    """The text is not CEQL: a syntax error in the clauses, the pattern or a SQL fragment."""


class AnalysisError(CeqlError, ValueError):
    """The query parses but means nothing: unknown variables, columns, types, bad combinations."""


class UnsupportedError(CeqlError):
    """Valid CEQL that this engine or version does not evaluate (yet)."""


class ExecutionError(CeqlError):
    """Evaluation stopped on purpose: a guard such as ``maxMatchesPerEvent`` was exceeded."""


class CeqlWarning(UserWarning):
    """Root of cerql's warnings: the query runs, but likely not as meant."""


class EventTypeCaseWarning(CeqlWarning):
    """An event type matches no row, but matches some case-insensitively (``fail`` where the
    rows say ``FAIL``): event types compare exactly, as Spark compares strings, so the query
    runs and its atom matches nothing (docs/language.md, "Events and the stream")."""


def start_of(span, offset: int | None = None) -> int:
    """The offset :meth:`CeqlError.at` takes for an AST node: ``offset`` when the caller found
    a closer one, else where the node's ``ast.Span`` starts, else 0."""
    if offset is not None:
        return offset
    return span.start if span is not None else 0


def position_of(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a 0-based character offset in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1
