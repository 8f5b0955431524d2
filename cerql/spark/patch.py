"""Adding ``cer_sql`` to Spark's session classes, cheaply.

``import cerql`` calls :func:`install`. It adds ``cer_sql`` to the classic session class, and to
the Spark Connect session class (a separate class, not a subclass) as soon as
``pyspark.sql.connect.session`` is imported, without importing it (and grpc) up front. An
existing ``cer_sql`` attribute is left alone. The method imports :mod:`cerql.spark.session` when first
called, so that importing cerql stays cheap in Spark's Python workers, which only need the
engine.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

from cerql.spark.compat import CONNECT_MODULE


def _method(self, text: str, **tables):
    """Run a CEQL query on this session; see :func:`cerql.cer_sql`."""
    from cerql.spark.session import cer_sql

    return cer_sql(self, text, **tables)


_method.__name__ = "cer_sql"


def _patch(cls) -> None:
    if not hasattr(cls, "cer_sql"):
        cls.cer_sql = _method


class _PatchOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Adds cer_sql to the Connect session class when that module is first imported."""

    def find_spec(self, name, path, target=None):
        if name != CONNECT_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return None
        self.inner = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch(module.SparkSession)


def install() -> None:
    """Add ``cer_sql`` to the classic and Connect session classes (idempotent)."""
    from pyspark.sql import session

    _patch(session.SparkSession)
    connect = sys.modules.get(CONNECT_MODULE)
    if connect is not None:
        _patch(connect.SparkSession)
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
