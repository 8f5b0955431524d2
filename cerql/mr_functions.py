"""The row pattern functions as they appear in a MATCH_RECOGNIZE expression's sqlglot tree.

Input: sqlglot nodes of the expressions in :mod:`cerql.mr_ast` (whose docstring fixes their
shape). Output: what a node is (a navigation, CLASSIFIER, MATCH_NUMBER, RUNNING/FINAL, an
aggregate over a variable's rows), its arguments and its qualifier. The planner's checks
(planner/mr_analyze.py) and the engine (exec/mr_define.py, exec/mr_measures.py) read the trees
through these functions, so the two agree on the shapes; the module imports only sqlglot.
"""

from __future__ import annotations

from sqlglot import exp

PREV, NEXT, FIRST, LAST = "PREV", "NEXT", "FIRST", "LAST"
PHYSICAL = (PREV, NEXT)  # offsets in the ordered partition
LOGICAL = (FIRST, LAST)  # offsets among the rows mapped to a variable
NAVIGATIONS = PHYSICAL + LOGICAL
CLASSIFIER, MATCH_NUMBER = "CLASSIFIER", "MATCH_NUMBER"
RUNNING, FINAL = "RUNNING", "FINAL"
ROW_PATTERN_FUNCTIONS = NAVIGATIONS + (CLASSIFIER, MATCH_NUMBER, RUNNING, FINAL)

# The aggregates over a variable's rows the engine computes, by sqlglot class: their kind.
AGGREGATES: dict[type, str] = {
    exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
    exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
    exp.Variance: "var_samp", exp.VariancePop: "var_pop", exp.CountIf: "count_if",
    exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.ArgMin: "min_by", exp.ArgMax: "max_by",
    exp.ArrayAgg: "collect_list", exp.Median: "median", exp.Quantile: "percentile", exp.Skewness: "skewness",
    exp.Kurtosis: "kurtosis", exp.Corr: "corr", exp.CovarPop: "covar_pop", exp.CovarSamp: "covar_samp",
    exp.RegrCount: "regr_count", exp.RegrAvgx: "regr_avgx", exp.RegrAvgy: "regr_avgy", exp.RegrSxx: "regr_sxx",
    exp.RegrSyy: "regr_syy", exp.RegrSxy: "regr_sxy", exp.RegrSlope: "regr_slope", exp.RegrIntercept: "regr_intercept",
    exp.RegrR2: "regr_r2", exp.BitwiseAndAgg: "bit_and", exp.BitwiseOrAgg: "bit_or", exp.BitwiseXorAgg: "bit_xor",
    exp.GroupConcat: "listagg",
}
# The constant arguments of an aggregate, by sqlglot argument name: a percentile's p, listagg's
# separator (Spark requires them foldable; the engine evaluates them once).
PARAMETERS: dict[str, str] = {"percentile": "quantile", "listagg": "separator"}
# Spark's aggregates that sqlglot reads as unknown functions (exp.Anonymous), by upper-case name
# (``any(c)`` is sqlglot's exp.Any, see ``aggregate_kind``).
NAMED_AGGREGATES: dict[str, str] = {"STD": "stddev_samp", "EVERY": "bool_and", "SOME": "bool_or", "TRY_SUM": "try_sum",
                                    "TRY_AVG": "try_avg"}
# DISTINCT changes these kinds (min/max of the distinct values are min/max); other kinds refuse it.
DISTINCT_KINDS: dict[str, str] = {"count": "count_distinct", "sum": "sum_distinct", "avg": "avg_distinct",
                                  "min": "min", "max": "max"}
# Aggregates refused in MATCH_RECOGNIZE, with why and what to write instead (docs/semantics.md,
# "MATCH_RECOGNIZE"): their value depends on an order Spark does not fix, or is approximate, or
# they are window functions, or Spark SQL has no such aggregate.
REFUSED: dict[type | str, tuple[str, str]] = {
    exp.ArrayUniqueAgg: ("the order of collect_set's array is not defined",
                         "collect_list(e) keeps the rows in row order (array_distinct of it on Spark)"),
    exp.AnyValue: ("any_value may take any row", "FIRST(A.x) or LAST(A.x) names the row"),
    exp.ApproxDistinct: ("it is approximate", "count(DISTINCT e) is exact"),
    exp.ApproxQuantile: ("it is approximate", "min, max, avg, or collect_list(e) and a quantile on Spark"),
    exp.FirstValue: ("it is a window function", "FIRST(A.x) is the first row mapped to A"),
    exp.LastValue: ("it is a window function", "LAST(A.x) is the last row mapped to A"),
    exp.Mode: ("Spark's mode picks any of the values that tie", "collect_list(e), then count on Spark"),
    "PRODUCT": ("Spark SQL has no product aggregate", "exp(sum(ln(A.x))) for positive values"),
    exp.WithinGroup: ("WITHIN GROUP is not supported yet", "percentile(A.x, p) is percentile_cont(p) WITHIN GROUP "
                      "(ORDER BY A.x); listagg(A.x, ',') joins the rows in row order"),
}
def function_name(node: exp.Expression) -> str | None:
    """The row pattern function ``node`` calls (upper case), or None. sqlglot's own First/Last
    (a tree not built by the MATCH_RECOGNIZE parser) count as FIRST/LAST with no offset."""
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        return name if name in ROW_PATTERN_FUNCTIONS else None
    if isinstance(node, exp.First):
        return FIRST
    if isinstance(node, exp.Last):
        return LAST
    return None


def arguments(node: exp.Expression) -> list[exp.Expression]:
    """The arguments of a row pattern function call."""
    if isinstance(node, (exp.First, exp.Last)):
        return [node.this]
    return list(node.expressions)


def _is_any_aggregate(node: exp.Expression) -> bool:
    """``any(c)``, Spark's bool_or, which sqlglot reads as exp.Any (not ``x = ANY (...)``)."""
    return isinstance(node, exp.Any) and not isinstance(node.parent, exp.Predicate)


def is_distinct(node: exp.Expression) -> bool:
    """``f(DISTINCT e)``."""
    return bool(node.args.get("distinct")) or isinstance(node.args.get("this"), exp.Distinct)


def aggregate_kind(node: exp.Expression) -> str | None:
    """The kind of aggregate the engine computes for ``node`` (``count``, ``stddev_samp``,
    ``count_distinct``...: the values of AGGREGATES, NAMED_AGGREGATES and DISTINCT_KINDS), or
    None when it is not one (``refusal`` says why, for an aggregate)."""
    if isinstance(node, exp.Anonymous):
        kind = NAMED_AGGREGATES.get(str(node.this).upper())
    elif _is_any_aggregate(node):
        kind = "bool_or"
    else:
        kind = AGGREGATES.get(type(node))
    if kind == "listagg" and isinstance(node.this, exp.Order):
        return None  # listagg(...) WITHIN GROUP (ORDER BY ...): see REFUSED
    if kind is not None and is_distinct(node):
        return DISTINCT_KINDS.get(kind)
    return kind


def aggregate_arguments(node: exp.Expression) -> list[exp.Expression]:
    """The arguments of an aggregate call, DISTINCT unwrapped (``[Star]`` for ``count(*)``,
    ``[x, y]`` for ``max_by(x, y)``)."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    this = node.args.get("this")
    args = list(this.expressions) if isinstance(this, exp.Distinct) else ([this] if this is not None else [])
    if node.args.get("expression") is not None and isinstance(node, (exp.ArgMin, exp.ArgMax, *_PAIRS)):
        args.append(node.args["expression"])
    return args


_PAIRS = (exp.Corr, exp.CovarPop, exp.CovarSamp, exp.RegrCount, exp.RegrAvgx, exp.RegrAvgy, exp.RegrSxx, exp.RegrSyy,
          exp.RegrSxy, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2)


def aggregate_parameters(node: exp.Expression) -> list[exp.Expression]:
    """The constant arguments of an aggregate call (PARAMETERS): ``[p]`` of ``percentile(x, p)``,
    ``[',']`` of ``listagg(x, ',')``, ``[]`` of ``listagg(x)`` and of the others."""
    name = PARAMETERS.get(aggregate_kind(node) or "")
    return [node.args[name]] if name and node.args.get(name) is not None else []


def aggregate_arity(kind: str) -> int:
    """How many row arguments an aggregate kind takes: two for min_by/max_by, corr, covar_* and
    regr_*, else one."""
    return 2 if kind in ("min_by", "max_by") or kind in ("corr", "covar_pop", "covar_samp") or kind.startswith("regr_") else 1


def refusal(node: exp.Expression) -> tuple[str, str]:
    """(why, what to write instead) for an aggregate ``aggregate_kind`` does not compute."""
    key = str(node.this).upper() if isinstance(node, exp.Anonymous) else type(node)
    if isinstance(node, exp.GroupConcat) and isinstance(node.this, exp.Order):
        key = exp.WithinGroup  # listagg(x) WITHIN GROUP (ORDER BY y)
    if key in REFUSED:
        return REFUSED[key]
    if is_distinct(node):
        return ("DISTINCT is supported in count, sum, avg, min and max only", "drop DISTINCT")
    return ("it is not supported in MATCH_RECOGNIZE yet", "use " + SUPPORTED)


SUPPORTED = ("count, sum, avg, min, max (DISTINCT too), stddev/std/stddev_samp, stddev_pop, variance/var_samp, "
             "var_pop, skewness, kurtosis, count_if, bool_and/every, bool_or/some/any, min_by, max_by, "
             "collect_list/array_agg, median, percentile, corr, covar_pop, covar_samp, regr_count, regr_avgx, "
             "regr_avgy, regr_sxx, regr_syy, regr_sxy, regr_slope, regr_intercept, regr_r2, bit_and, bit_or, "
             "bit_xor, try_sum, try_avg or listagg/string_agg")


def is_aggregate(node: exp.Expression) -> bool:
    """Any aggregate function (exp.AggFunc, Spark's aggregates sqlglot does not know, ``any(c)``),
    the engine's or not; FIRST/LAST are navigations."""
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        return name in NAMED_AGGREGATES or name in REFUSED
    return ((isinstance(node, exp.AggFunc) and not isinstance(node, (exp.First, exp.Last))) or _is_any_aggregate(node)
            or isinstance(node, exp.WithinGroup))


def qualifier(column: exp.Column) -> str | None:
    """The variable or SUBSET name that qualifies a column (``A`` in ``A.price``), or None."""
    return column.table or None


def is_star(node: exp.Expression) -> bool:
    """``*`` or ``A.*``."""
    return isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))


def literal_offset(node: exp.Expression | None) -> int | None:
    """The value of an integer literal offset (parentheses allowed), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None


def default_offset(name: str) -> int:
    """PREV/NEXT move one row by default; FIRST/LAST take the first/last row (offset 0)."""
    return 1 if name in PHYSICAL else 0


def navigation_offset(node: exp.Expression) -> int | None:
    """The offset of a PREV/NEXT/FIRST/LAST call: its second argument's value (planner/mr_analyze.py
    allows only an integer literal there), else the function's default."""
    args = arguments(node)
    return literal_offset(args[1]) if len(args) > 1 else default_offset(function_name(node))


def walk(node: exp.Expression):
    """Every node under ``node``, itself first (sqlglot's walk, depth first)."""
    yield from node.walk()


def node_offset(expr, node: exp.Expression | None = None) -> int:
    """Offset in the query of ``node``, a part of ``expr.tree`` (an ``ast.SqlExpr``): a row
    pattern function's name, else its first name as sqlglot recorded it, else where its text is
    first written in the fragment, else where ``expr`` starts. The engine's errors use it; the
    planner's checks too, with ``parser.sqlexpr.expr_position`` for the rest."""
    fallback = expr.span.start if expr.span is not None else expr.offset
    if node is None:
        return fallback
    starts = [i.meta["start"] for i in node.find_all(exp.Identifier) if "start" in i.meta]
    source = expr.source.upper() if expr.source else ""
    name = function_name(node)
    if name is not None and source:
        at = source.rfind(name, 0, min(starts) if starts else len(source))
        if at >= 0:
            return expr.offset + at
    if starts:
        return expr.offset + min(starts)
    if source:
        at = source.find(node.sql(dialect="spark").upper())
        if at >= 0:
            return expr.offset + at
    return fallback


def canonical(name: str) -> str:
    """Variable and SUBSET names compare without case, as Spark compares identifiers."""
    return name.upper()


def members(name: str | None, variables, subsets) -> frozenset[int] | None:
    """The indices, in ``variables``, of the variables a qualifier stands for: a variable's own,
    a SUBSET's (``subsets``: canonical name -> its variables), or None for no qualifier (every
    variable)."""
    if name is None:
        return None
    key = canonical(name)
    if key in subsets:
        return frozenset(variables.index(v) for v in subsets[key])
    return frozenset([variables.index(key)])


__all__ = [
    "AGGREGATES", "DISTINCT_KINDS", "NAMED_AGGREGATES", "PARAMETERS", "REFUSED", "SUPPORTED", "aggregate_arguments",
    "aggregate_arity", "aggregate_parameters",
    "is_distinct", "refusal", "CLASSIFIER", "FINAL", "FIRST", "LAST", "LOGICAL", "MATCH_NUMBER", "NAVIGATIONS", "NEXT",
    "PHYSICAL", "PREV", "ROW_PATTERN_FUNCTIONS", "RUNNING", "aggregate_kind", "arguments", "canonical",
    "default_offset", "function_name", "is_aggregate", "is_star", "literal_offset", "members", "navigation_offset",
    "node_offset", "qualifier", "walk",
]
