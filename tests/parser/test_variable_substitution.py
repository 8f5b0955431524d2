"""``${...}`` in a query (issue 38, item 7): Spark's parser substitutes a conf or environment
value into every fragment cer_sql gives it, cerql.run kept the text literally, so one query had
two answers. Every engine now refuses it while parsing, at the reference, with a hint;
tests/spark/test_column_types_spark.py checks cer_sql refuses it too.
"""

from __future__ import annotations

import pandas as pd
import pytest

import cerql
from cerql.errors import UnsupportedError

STREAM = pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [0, 1, 2, 3], "x": [1, 2, 3, 4]})
QUERY = "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[type = '${x}'] ORDER BY ts"


@pytest.mark.parametrize("query", [
    QUERY,
    "SELECT * FROM s WHERE A AS a ; B AS b FILTER a[type = '${env:HOME}'] ORDER BY ts",
    "SELECT a.x + ${spark.cerql.offset} AS y FROM s WHERE A AS a ; B AS b ORDER BY ts",
    "SELECT * FROM s WHERE A AS a ; B AS b -- ${x}\nORDER BY ts",
])
def test_variable_reference_is_refused(engine, query):
    with pytest.raises(UnsupportedError) as err:
        cerql.run(query, {"s": STREAM}, engine=engine)
    assert err.value.error_class == "VARIABLE_SUBSTITUTION_NOT_SUPPORTED"
    offset = query.index("${")
    assert (err.value.line, err.value.column) == (query.count("\n", 0, offset) + 1,
                                                  offset - query.rfind("\n", 0, offset))
    assert "f-string" in err.value.hint and "concat('$', '{...}')" in err.value.hint


def test_refused_by_parse_and_explain():
    for fn in (cerql.parse, cerql.explain):
        with pytest.raises(UnsupportedError):
            fn(QUERY)


@pytest.mark.parametrize("text", ["'$5'", "'${ x }'", "'{x}$'", "concat('$', '{x}')"])
def test_dollar_signs_that_spark_does_not_substitute_run(engine, text):
    """Only Spark's pattern (``${`` then no whitespace up to ``}``) is refused."""
    out = cerql.run(f"SELECT {text} AS t FROM s WHERE A AS a ; B AS b ORDER BY ts", {"s": STREAM}, engine=engine)
    assert len(out) == 3
