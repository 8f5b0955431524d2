"""``python -m cerql``: the same command line as the ``cerql`` script (see cerql/cli/commands.py)."""

from cerql.cli import main

raise SystemExit(main())
