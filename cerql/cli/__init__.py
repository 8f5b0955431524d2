"""The ``cerql`` command line: ``cerql demo|run|explain|warmup|pack``.

- :mod:`cerql.cli.commands`: the argument parser, the commands and their exit codes.
- :mod:`cerql.cli.tables_io`: reading tables (parquet, CSV, directories) and writing results.
- :mod:`cerql.cli.runtime`: the Spark session a command starts, ``--conf`` and ``--progress``.
- :mod:`cerql.cli.demo`: the generated streams and the demo run by ``make demo``.
- :mod:`cerql.cli.stream_demo`: ``cerql demo --stream``, a query over trades arriving as it runs.
- :mod:`cerql.cli.warmup`: ``cerql warmup``, compiling the matching kernel ahead of the first query.
- :mod:`cerql.cli.pack`: ``cerql pack``, the virtualenv with cerql and its kernel cache for ``spark.archives``.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """The ``cerql`` script's entry point (see :func:`cerql.cli.commands.main`)."""
    from cerql.cli.commands import main as run

    return run(argv)
