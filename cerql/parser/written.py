"""The Spark SQL a user wrote, kept as written.

sqlglot reads a fragment into a tree, and cerql's local engine evaluates that tree; but printing the
tree back is not the user's text: sqlglot rewrites ``date_format`` patterns through strftime
(``'y'`` becomes ``'yyyy'``, quoted text is lost), turns ``to_char(x, '999')`` into a CAST and
``trunc(d, 'Q')`` into ``'QUARTER'``. So what Spark evaluates is the fragment's own text, with
only its column references (and the parts cerql computes itself, such as aggregates over a
variable's events) replaced; this module finds where each node was written and splices the
replacements in. It also gives the local engine what it needs to refuse what it would read
differently: the function names as written (:func:`unsupported_call`) and a date pattern as
written (``meta["written_format"]``).

sqlglot keeps positions on identifiers, literals and some function names only (``node.meta``);
the extent of any other node is found by growing the span of the positions inside it, token by
token, until the text reads back as the same tree (:func:`extent`). Reading back must be the
parser's own reading (braces, IN RANGE, quotes: :func:`read_tree`), so it lives here and
parser/sqlexpr.py parses fragments with it.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Callable

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

DIALECT = "spark"
EXTENT = "extent"                  # node.meta key: (start, end) in the fragment, end exclusive
IN_RANGE = "in_range"              # node.meta key: a BETWEEN that was written ``IN RANGE(a, b)``
WRITTEN_FORMAT = "written_format"  # node.meta key: date_format's pattern as written
_MAX_GROWTH = 12                   # tokens a span may grow on each side while looking for a node


def escape_doubled_quotes(text: str) -> str:
    """Spark reads ``'O''Brien'`` (and ``"a""b"``) as one string holding a quote; sqlglot reads two
    adjacent strings and concatenates them. Each doubled quote inside a string becomes ``\\'``
    (``\\"``), which both read as the quote: same length, so positions hold. In a quoted name a
    doubled backtick is a backtick, and a raw string (``r'...'``) has no escapes."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        quote = text[i]
        if quote not in "'\"`":
            i += 1
            continue
        raw = quote != "`" and i > 0 and text[i - 1] in "rR" and (
            i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
        i += 1
        while i < n:
            if text[i] == "\\" and quote != "`" and not raw:
                i += 2
            elif text[i] == quote and i + 1 < n and text[i + 1] == quote and not raw:
                if quote != "`":
                    out[i] = "\\"
                i += 2
            elif text[i] == quote:
                break
            else:
                i += 1
        i += 1
    return "".join(out)


def _braces_to_parens(text: str) -> str:
    """CORE's ``IN {1, 2}`` set literal as Spark's ``IN (1, 2)``, outside strings and quoted
    names (whose backslash escapes are skipped); same length, so positions hold."""
    out, quote, escaped = [], None, False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "`":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "{":
            ch = "("
        elif ch == "}":
            ch = ")"
        out.append(ch)
    return "".join(out)


def as_spark_reads(text: str) -> str:
    """A fragment as both sqlglot and Spark read it, same length: doubled quotes as escapes, and
    CORE's braces as parentheses."""
    return _braces_to_parens(escape_doubled_quotes(text))


@functools.lru_cache(maxsize=512)
def tokens(source: str) -> tuple:
    """sqlglot's Spark tokens of ``source`` (its doubled quotes read as Spark reads them)."""
    try:
        return tuple(sqlglot.Dialect.get_or_raise(DIALECT).tokenize(as_spark_reads(source)))
    except sqlglot.errors.SqlglotError:
        return ()


def column_extent(col: exp.Column) -> tuple[int, int] | None:
    """Where a column reference was written: from its first qualifier to its name."""
    parts = [p for p in (col.args.get("catalog"), col.args.get("db"), col.args.get("table"), col.this)
             if isinstance(p, exp.Identifier)]
    if not parts or any("start" not in p.meta for p in parts):
        return None
    return min(p.meta["start"] for p in parts), max(p.meta["end"] for p in parts) + 1


def _close_paren(toks: tuple, k: int) -> int | None:
    """Index of the token that closes the parenthesis opened by ``toks[k]``."""
    depth = 0
    for j in range(k, len(toks)):
        kind = toks[j].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0:
            return j
    return None


def call_extent(node: exp.Expression, source: str) -> tuple[int, int] | None:
    """Where a function call whose name sqlglot positioned was written: name to closing paren."""
    if "start" not in node.meta or "end" not in node.meta:
        return None
    toks = tokens(source)
    for k, tok in enumerate(toks):
        if tok.start > node.meta["end"]:
            if tok.token_type != TokenType.L_PAREN:
                return None
            close = _close_paren(toks, k)
            return (node.meta["start"], toks[close].end + 1) if close is not None else None
    return None


def _positions(node: exp.Expression, source: str) -> list[tuple[int, int]]:
    out = []
    for n in node.walk():
        if EXTENT in n.meta:
            out.append(n.meta[EXTENT])
        elif isinstance(n, exp.Func) and "start" in n.meta:
            out.append(call_extent(n, source) or (n.meta["start"], n.meta["end"] + 1))
        elif "start" in n.meta and "end" in n.meta:
            out.append((n.meta["start"], n.meta["end"] + 1))
    return out


def _unqualified(tree: exp.Expression) -> exp.Expression:
    return tree.copy().transform(
        lambda n: exp.column(n.this.copy()) if isinstance(n, exp.Column) and n.table else n)


# -- the parser's reading of a fragment: parser/sqlexpr.py parses with it, and :func:`extent`
# reads a span back with it, so both read the same text the same way
def _in_range_to_between(node: exp.Expression) -> exp.Expression:
    """CORE's ``x IN RANGE(a, b)`` (inclusive) as ``x BETWEEN a AND b``."""
    if isinstance(node, exp.In):
        call = node.args.get("field")
        if call is None and len(node.expressions) == 1:
            call = node.expressions[0]
        if isinstance(call, exp.Anonymous) and call.name.upper() == "RANGE" and len(call.expressions) == 2:
            low, high = call.expressions
            between = exp.Between(this=node.this.copy(), low=low.copy(), high=high.copy())
            between.meta[IN_RANGE] = True  # Spark is sent BETWEEN
            return between
    return node


# sqlglot reads `array`[...] as an ARRAY constructor even when back-quoted; a variable of that
# name is parsed under a same-length stand-in and renamed back afterwards.
_ARRAY_VAR = re.compile(r"`(array)`(?=\s*\[)", re.IGNORECASE)
_STAND_IN = "\ue000"


def prepared(text: str) -> tuple[str, list[str]]:
    """The text sqlglot reads for a fragment (same length): Spark's doubled quotes as escapes,
    CORE's braces as parentheses, a variable named `array` under a stand-in."""
    originals = [m.group(1) for m in _ARRAY_VAR.finditer(text)]
    spark_reads = as_spark_reads(text)
    return _ARRAY_VAR.sub(lambda m: "`" + _STAND_IN + m.group(1)[1:] + "`", spark_reads), originals


def finished(tree: exp.Expression, originals: list[str]) -> exp.Expression:
    """sqlglot's tree of a :func:`prepared` text as the parser keeps it: no comments, the
    `array` variables named back, columns marked with where they were written, ``IN RANGE``
    as BETWEEN."""
    for node in tree.walk():
        node.comments = None  # comments are not part of the canonical text
        if originals and isinstance(node, exp.Identifier) and node.this.startswith(_STAND_IN):
            node.set("this", originals.pop(0))
    mark_columns(tree)
    return tree.transform(_in_range_to_between)


_SQLGLOT_LOG = logging.getLogger("sqlglot")


def parse_expression(source: str) -> exp.Expression:
    """sqlglot's tree of one expression: a fragment that begins with a word sqlglot takes for a
    statement (``load < 10``, ``set > 3``: a column named like Spark's LOAD or SET command) is read
    again as the condition it is."""
    quiet = _SQLGLOT_LOG.disabled
    _SQLGLOT_LOG.disabled = True  # its "falling back to a Command" warning is not the user's concern
    try:
        tree = sqlglot.parse_one(source, read=DIALECT)
    finally:
        _SQLGLOT_LOG.disabled = quiet
    if isinstance(tree, exp.Command):
        tree = sqlglot.parse_one(source, read=DIALECT, into=exp.Condition)
    return tree


def read_tree(text: str) -> exp.Expression:
    """``text`` read as the parser reads a fragment (parser/sqlexpr.py ``parse_fragment``),
    errors left to the caller."""
    source, originals = prepared(text)
    return finished(parse_expression(source), originals)


def parse(text: str) -> exp.Expression:
    """``text`` read as an expression, as cerql's parser reads a fragment; in parentheses, so a
    name that is also a statement keyword (``load < 10``) reads as the column it was in context."""
    tree = read_tree("(" + text + ")")
    if not isinstance(tree, exp.Paren):
        raise ValueError(text)
    return tree.this


def extent(node: exp.Expression, source: str) -> tuple[int, int] | None:
    """(start, end) of the text of ``source`` that reads back as ``node`` (column qualifiers
    aside), found by growing the span of the positions inside it; None when none does."""
    if EXTENT in node.meta:
        return node.meta[EXTENT]
    spans = _positions(node, source)
    if not spans:
        return None
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    toks = tokens(source)
    first = next((k for k, t in enumerate(toks) if t.start >= lo), None)
    last = next((k for k in range(len(toks) - 1, -1, -1) if toks[k].end < hi), None)
    if first is None or last is None:
        return None
    want = _unqualified(node)
    tries = sorted(((a, b) for a in range(_MAX_GROWTH + 1) for b in range(_MAX_GROWTH + 1)), key=sum)
    for grow_left, grow_right in tries:
        i, j = first - grow_left, last + grow_right
        if i < 0 or j >= len(toks):
            continue
        start, end = toks[i].start, toks[j].end + 1
        try:
            got = parse(source[start:end])
        except Exception:  # noqa: BLE001 - any text that does not read back is not the node
            continue
        if _unqualified(got) == want:
            return start, end
    return None


def strip_qualifiers(tree: exp.Expression, var: str | None = None) -> exp.Expression:
    """``tree`` with the qualifier dropped from its columns (those of ``var`` only, when given),
    each column keeping where it was written."""
    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.table and (var is None or (node.table == var and not node.args.get("db"))):
            bare = exp.column(node.this.copy())
            if EXTENT in node.meta:
                bare.meta[EXTENT] = node.meta[EXTENT]
            return bare
        return node

    return tree.copy().transform(fix)


def mark_columns(tree: exp.Expression) -> None:
    """Record on each column where it was written (``meta["extent"]``), so that rewrites that
    copy or replace it keep the place."""
    for col in tree.find_all(exp.Column):
        span = column_extent(col)
        if span is not None:
            col.meta[EXTENT] = span


def spark_text(tree: exp.Expression, source: str, replace: Callable[[exp.Expression], str | None]) -> str | None:
    """The text of ``tree`` as written in ``source``, each node for which ``replace`` gives text
    (a column's spelling on Spark, an aggregate's SQL) replaced by it, and ``IN RANGE(a, b)``
    written as Spark's BETWEEN. None when some part cannot be placed in the text."""
    written = as_spark_reads(source)

    def render(node: exp.Expression) -> str | None:
        where = extent(node, source)
        if where is None:
            return None
        edits: list[tuple[int, int, str]] = []

        def visit(n: exp.Expression) -> bool:
            text = replace(n)
            if text is None and n.meta.get(IN_RANGE):
                parts = [render(n.this), render(n.args["low"]), render(n.args["high"])]
                if any(p is None for p in parts):
                    return False
                text = f"(({parts[0]}) BETWEEN ({parts[1]}) AND ({parts[2]}))"
            if text is not None:
                span = (extent(n, source) if not isinstance(n, exp.Column) else n.meta.get(EXTENT)) \
                    if n is not node else where
                if span is None:
                    return False
                edits.append((span[0], span[1], text))
                return True
            return all(visit(child) for child in n.iter_expressions())

        if not visit(node):
            return None
        out, at = [], where[0]
        for start, end, text in sorted(edits):
            if start < at or end > where[1]:
                return None
            out.append(written[at:start])
            out.append(text)
            at = end
        out.append(written[at:where[1]])
        return "".join(out)

    return render(tree)


# Names of functions that cerql's local engine evaluates as Spark does, as a user may write them
# (cerql/expr/). A call written with any other name is refused by the local engine,
# whatever node sqlglot reads it as: sqlglot reads ``to_char(x, '999')`` as a CAST to STRING.
LOCAL_FUNCTIONS = frozenset({
    "abs", "floor", "ceil", "ceiling", "round", "sqrt", "isnan", "greatest", "least", "lower", "upper",
    "lcase", "ucase", "length", "char_length", "character_length", "substring", "substr", "startswith",
    "endswith", "contains", "concat", "trim", "ltrim", "rtrim", "year", "month", "day", "dayofmonth",
    "dayofweek", "hour", "minute", "second", "date_format", "coalesce", "nvl", "ifnull", "nullif", "nvl2",
    "if", "cast", "try_cast", "rlike", "like", "ilike",
    "count", "sum", "avg", "mean", "min", "max", "first", "last", "collect_list",
    "exp", "ln", "log", "log10", "log2", "pow", "power",  # refused with their own reason (cerql.expr.numeric)
})
_NOT_CALLS = {TokenType.ALIAS, TokenType.DCOLON}
_OPERATOR_WORDS = {"in", "and", "or", "not", "when", "then", "else", "case", "between", "like", "ilike",
                   "rlike", "regexp", "is", "exists", "any", "some", "all", "div", "escape", "distinct",
                   "symmetric", "asymmetric", "end", "interval"}


def calls(tree: exp.Expression, source: str) -> list[tuple[str, int, int]]:
    """(name as written, offset, number of arguments) of every function call in the text of
    ``tree``, outside the columns it holds (derived columns stand for calls Spark computes)."""
    where = extent(tree, source)
    if where is None:
        return []
    holes = [c.meta[EXTENT] for c in tree.find_all(exp.Column) if EXTENT in c.meta]
    everything = [t for t in tokens(source) if where[0] <= t.start < where[1]]
    toks = [t for t in everything if not any(lo <= t.start < hi for lo, hi in holes)]
    out = []
    for k in range(len(toks) - 1):
        tok, after = toks[k], toks[k + 1]
        if after.token_type != TokenType.L_PAREN or (k and toks[k - 1].token_type in _NOT_CALLS):
            continue
        name = tok.text
        if tok.token_type == TokenType.IDENTIFIER or (name.replace("_", "a").isalnum() and not name[0].isdigit()):
            if tok.token_type != TokenType.IDENTIFIER and name.lower() in _OPERATOR_WORDS:
                continue
            if name.lower() == "range" and k and toks[k - 1].token_type == TokenType.IN:
                continue  # CORE's x IN RANGE(a, b), read as BETWEEN
            out.append((name, tok.start, _arguments(everything, everything.index(after))))
    return out


def _arguments(toks: list, k: int) -> int:
    """The number of arguments of the call whose parenthesis opens at ``toks[k]``."""
    depth, count = 0, 0
    for tok in toks[k:]:
        depth += (tok.token_type == TokenType.L_PAREN) - (tok.token_type == TokenType.R_PAREN)
        if depth == 0:
            break
        if depth == 1 and tok.token_type not in (TokenType.L_PAREN, TokenType.COMMA) and count == 0:
            count = 1
        if depth == 1 and tok.token_type == TokenType.COMMA:
            count += 1
    return count


# read as CAST when called with one argument, which is what Spark does too
_CASTS_WITH_ONE_ARGUMENT = frozenset({"to_timestamp", "to_date"})


def unsupported_call(tree: exp.Expression, source: str) -> tuple[str, int] | None:
    """The first call in ``tree`` written with a name the local engine does not evaluate."""
    for name, at, arguments in calls(tree, source):
        lowered = name.lower()
        if lowered not in LOCAL_FUNCTIONS and not (lowered in _CASTS_WITH_ONE_ARGUMENT and arguments == 1):
            return name, at
    return None


def mark_formats(tree: exp.Expression, source: str) -> None:
    """Keep, on each ``date_format`` call, its pattern as written: sqlglot converts it to strftime
    and back, which is not Spark's pattern (``'y'``, quoted text)."""
    for node in tree.find_all(exp.TimeToStr):
        span = call_extent(node, source)
        if span is None:
            continue
        toks = [t for t in tokens(source) if span[0] <= t.start < span[1]]
        depth, commas = 0, []
        for k, tok in enumerate(toks):
            depth += (tok.token_type == TokenType.L_PAREN) - (tok.token_type == TokenType.R_PAREN)
            if depth == 1 and tok.token_type == TokenType.COMMA:
                commas.append(k)
        if len(commas) == 1 and len(toks) - commas[0] == 3 and toks[commas[0] + 1].token_type == TokenType.STRING:
            node.meta[WRITTEN_FORMAT] = toks[commas[0] + 1].text
