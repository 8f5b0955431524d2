"""Errors raised inside Spark tasks, as the driver sees them.

A CeqlError raised in a Python worker reaches the driver as a ``PythonException`` whose text is the
worker's traceback. :func:`task_error` rebuilds the CeqlError from that text, so ``cer_sql``
callers, the CLI and the demo report the same class, message and hint as the local engine. The
JVM matcher (spark/mr_jvm.py) fails a task with the same last line, on a line of its own, in its
Java exception's message, and is read back the same way.
"""

from __future__ import annotations

import re

from cerql import errors as _errors
from cerql.errors import CeqlError


def first_line(err: BaseException) -> str:
    """An exception's message without JVM or Python stack traces."""
    text = str(err).strip()
    return text.split("\n\nJVM stacktrace:")[0].split("\n")[0] if text else type(err).__name__


WORKER_ERROR = re.compile(r"^cerql\.errors\.(\w+): ", re.M)  # the last line of the worker's traceback


def task_error(err: BaseException) -> CeqlError | None:
    """The CeqlError a Spark task raised, from the failure Spark reports to the driver (a
    ``PythonException`` carrying the worker's traceback as text), or None when the failure is not
    cerql's. The message starts with the error class in brackets; the hint follows it."""
    text = str(err)
    heads = list(WORKER_ERROR.finditer(text))
    if not heads:
        return None
    last = heads[-1]  # in a chained traceback, the error that ended the task
    cls = getattr(_errors, last.group(1), None)
    cls = cls if isinstance(cls, type) and issubclass(cls, CeqlError) else CeqlError
    body = re.split(r"\n\s*(?:SQLSTATE:|\tat |JVM stacktrace:)", text[last.end():])[0].strip()
    message, _, hint = body.partition("\nHint: ")
    tagged = re.match(r"\[([A-Z_.]+)\] ", message)  # a CeqlError's text starts with its class
    name = tagged.group(1) if tagged else re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).upper()
    return cls(message[tagged.end():] if tagged else message, error_class=name, hint=hint or None)
