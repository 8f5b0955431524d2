"""Logic and conditionals: AND, OR, NOT, IS [NOT] NULL/TRUE/FALSE, CASE, IF, COALESCE, NULLIF, NVL2.

Kleene's logic, with each operand evaluated only on the rows where Spark evaluates it: the right
side of AND/OR where the left does not decide, each CASE branch where its condition is the first
to hold, each COALESCE argument where those before it are NULL. The branches' values are
brought to one type (cerql.expr.coercion ``_common``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from cerql.expr.coercion import _common
from cerql.expr.comparisons import _compare
from cerql.expr.errors import _unsupported
from cerql.expr.kinds import Handler, _bool


def _compile_coalesce(node, c):
    parts = [c(node.this)] + [c(e) for e in node.expressions]

    def coalesce(env):
        values, rest = [], env
        for part in parts:  # each argument only where the ones before are NULL
            v = part(rest)
            values.append(v)
            rest = rest.where(pc.is_null(v))
        return pc.coalesce(*_common(node, values))

    return coalesce


def _compile_case(node, c):
    if isinstance(node, exp.If):
        branches = [(c(node.this), c(node.args["true"]))]
        default = c(node.args["false"]) if node.args.get("false") is not None else None
        subject = None
    else:
        branches = [(c(i.this), c(i.args["true"])) for i in node.args["ifs"]]
        default = c(node.args["default"]) if node.args.get("default") is not None else None
        subject = c(node.this) if node.this is not None else None

    def case(env):
        rest, conds, values = env, [], []
        x = subject(env) if subject else None
        for cond, val in branches:  # each condition where none before held, each value where its own does
            test = cond(rest)
            test = _bool(_compare("=", node, x, test, rest) if subject else test)
            holds = pc.fill_null(test, False)
            conds.append(holds)
            values.append(val(rest.where(holds)))
            rest = rest.where(pc.invert(holds))
        values.append(default(rest) if default else pa.scalar(None, pa.null()))
        typed = _common(node, values)
        out = typed[-1]
        for holds, v in zip(reversed(conds), reversed(typed[:-1])):
            out = pc.if_else(holds, v, out)
        return out

    return case


def _compile_logic(node, c):
    """AND and OR, Kleene's: the right side evaluated only on the rows where it decides."""
    left, right, is_and = c(node.this), c(node.expression), isinstance(node, exp.And)

    def logic(env):
        a = _bool(left(env))
        decided = pc.fill_null(a, True) if is_and else pc.invert(pc.fill_null(a, False))
        b = _bool(right(env.where(decided)))  # Spark evaluates the right side only where it decides
        return pc.and_kleene(a, b) if is_and else pc.or_kleene(a, b)

    return logic


def _compile_not(node, c):
    inner = c(node.this)
    return lambda env: pc.invert(_bool(inner(env)))


def _compile_is(node, c):
    """IS [NOT] NULL, IS [NOT] TRUE/FALSE (the NOT is a Not around it)."""
    inner = c(node.this)
    if isinstance(node.expression, exp.Null):
        return lambda env: pc.is_null(inner(env))
    if isinstance(node.expression, exp.Boolean):
        truth = pa.scalar(bool(node.expression.this), pa.bool_())
        return lambda env: pc.fill_null(pc.equal(_bool(inner(env)), truth), False)
    raise _unsupported(node)


def _compile_nullif(node, c):
    left, right = c(node.this), c(node.expression)

    def nullif(env):
        a = left(env)
        equal = _compare("=", node, a, right(env), env)
        return pc.if_else(pc.fill_null(equal, False), pa.scalar(None, a.type), a)

    return nullif


def _compile_nvl2(node, c):
    """nvl2(test, yes, no): each branch evaluated only where it is taken."""
    test, yes, no = c(node.this), c(node.args["true"]), c(node.args["false"]) if node.args.get("false") else None

    def nvl2(env):
        present = pc.is_valid(test(env))
        a = yes(env.where(present))
        b = no(env.where(pc.invert(present))) if no else pa.scalar(None, pa.null())
        a, b = _common(node, [a, b])
        return pc.if_else(present, a, b)

    return nvl2


BY_NODE: dict[type, Handler] = {
    exp.And: _compile_logic, exp.Or: _compile_logic, exp.Not: _compile_not, exp.Is: _compile_is,
    exp.Case: _compile_case, exp.If: _compile_case, exp.Coalesce: _compile_coalesce, exp.Nullif: _compile_nullif,
    exp.Nvl2: _compile_nvl2,
}
