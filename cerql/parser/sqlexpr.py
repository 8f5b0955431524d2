"""Spark SQL fragments of a CEQL query, parsed by sqlglot.

Input: the text of a fragment (a FILTER, a SELECT item, a bracket) and its offset in the query.
Output: :class:`cerql.ast.SqlExpr` values and the FILTER condition tree. sqlglot is used only by
composition (``parse_one(text, read="spark")`` and ``exp`` node construction), never subclassed,
so the compiled ``sqlglotc`` build works too. CORE's predicate forms are accepted and rewritten
to Spark SQL: ``x IN {1, 2}`` to ``x IN (1, 2)``, ``x IN RANGE(a, b)`` to ``x BETWEEN a AND b``,
and ``==`` (which sqlglot already reads as ``=``).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from cerql import ast
from cerql.errors import ParseError, position_of
from cerql.parser import written

DIALECT = "spark"
FRAGMENT_HINT = "inside FILTER brackets and SELECT items the language is Spark SQL"


def parse_fragment(text: str, offset: int, query: str, hint: str = FRAGMENT_HINT) -> exp.Expression:
    """Parse one Spark SQL fragment that starts at ``offset`` in ``query``; ``hint`` is the hint
    of its syntax error (where the fragment stands decides what helps)."""
    source, originals = written.prepared(text)
    try:
        tree = written.parse_expression(source)
    except sqlglot.errors.ParseError as err:
        detail = err.errors[0] if err.errors else {}
        where = offset
        if detail.get("line"):
            lines = text.split("\n")
            line_start = sum(len(s) + 1 for s in lines[: detail["line"] - 1])
            end = line_start + detail.get("col", 1)
            where = offset + max(line_start, end - len(detail.get("highlight") or " "))
        message = (detail.get("description") or str(err)).split("\n")[0]
        if message.startswith("Required keyword"):
            message = "an operand or keyword is missing"
        raise ParseError.at(query, where, f"Invalid Spark SQL expression: {message}", "INVALID_SQL_EXPRESSION",
                            hint) from None
    except sqlglot.errors.SqlglotError as err:
        raise ParseError.at(query, offset, f"Invalid Spark SQL expression: {err}", "INVALID_SQL_EXPRESSION") from None
    for node in tree.find_all(exp.Between):
        if node.args.get("symmetric"):
            at = text.upper().find("SYMMETRIC")
            raise ParseError.at(query, offset + max(at, 0), "Invalid Spark SQL expression: BETWEEN SYMMETRIC",
                                "INVALID_SQL_EXPRESSION",
                                "Spark SQL has no BETWEEN SYMMETRIC: write (x BETWEEN a AND b OR x BETWEEN b AND a)")
    tree = written.finished(tree, originals)
    written.mark_formats(tree, text)
    return tree


def sql_expr(tree: exp.Expression, source: str, offset: int, span: ast.Span | None) -> ast.SqlExpr:
    """Wrap a sqlglot tree as an AST value. Its text is sqlglot's canonical Spark SQL when that
    says what the user wrote (the same tokens, up to case and spacing), else the text as written:
    sqlglot's printing is not always the same expression (parser/written.py), and the text is
    also the key that tells two predicates apart."""
    canonical = tree.sql(dialect=DIALECT, unsupported_level=sqlglot.ErrorLevel.IGNORE)
    where = written.extent(tree, source)
    if where is not None:
        tree.meta[written.EXTENT] = where
        as_written = source[where[0]:where[1]]
        if _signature(as_written) != _signature(canonical):
            return ast.SqlExpr(" ".join(as_written.split()) if "'" not in as_written and '"' not in as_written
                               else as_written.strip(), tree, source, offset, span)
    return ast.SqlExpr(canonical, tree, source, offset, span)


def _signature(text: str) -> list[tuple]:
    """What the tokens of ``text`` say, up to spelling: column qualifiers and parentheses
    dropped, words without case, operators by kind (``==`` is ``=``), and CORE's ``IN RANGE(a,
    b)`` as the BETWEEN it means."""
    toks = list(written.tokens(text))
    out: list[tuple] = []
    instead: dict[int, tuple | None] = {}  # token index -> what it says there (None: nothing)
    for k, tok in enumerate(toks):
        kind = tok.token_type
        if k in instead:
            if instead[k] is not None:
                out.append(instead[k])
            continue
        if kind in (TokenType.L_PAREN, TokenType.R_PAREN) or kind == TokenType.DOT or (
                k + 1 < len(toks) and toks[k + 1].token_type == TokenType.DOT):
            continue
        if kind == TokenType.IN and k + 2 < len(toks) and toks[k + 1].text.lower() == "range" \
                and toks[k + 2].token_type == TokenType.L_PAREN:
            out.append((TokenType.VAR, "between"))
            instead[k + 1] = None
            depth = 0
            for j in range(k + 2, len(toks)):
                depth += (toks[j].token_type == TokenType.L_PAREN) - (toks[j].token_type == TokenType.R_PAREN)
                if depth == 1 and toks[j].token_type == TokenType.COMMA:
                    instead[j] = (TokenType.VAR, "and")
                if depth == 0:
                    break
            continue
        if kind in (TokenType.STRING, TokenType.IDENTIFIER):
            out.append((kind, tok.text))
        elif tok.text[:1].isalpha() or tok.text[:1] == "_" or kind == TokenType.NUMBER:
            out.append((TokenType.VAR, tok.text.lower()))
        else:
            out.append((kind,))  # an operator: its spelling (== or =) is not its meaning
    return out


def _first_name_start(node: exp.Expression) -> int | None:
    """Offset, within its fragment, of the first name in ``node`` (sqlglot keeps positions only
    on identifiers)."""
    starts = [i.meta["start"] for i in node.find_all(exp.Identifier) if "start" in i.meta]
    return min(starts) if starts else None


def expr_position(expr: ast.SqlExpr, node: exp.Expression | None = None) -> int:
    """Offset in the query of ``node`` (a part of ``expr.tree``), as well as sqlglot knows it:
    the qualifier of a qualified column, the name of a function call, else its first name."""
    if node is not None:
        target = node.args.get("table") if isinstance(node, exp.Column) and node.table else node
        local = _first_name_start(target)
        if local is not None:
            if isinstance(node, exp.Func):
                # sqlglot keeps no position for a function's name: it ends at the "(" before
                # the first argument
                paren = expr.source.rfind("(", 0, local)
                name_end = len(expr.source[:paren].rstrip()) if paren >= 0 else local
                name_start = name_end
                while name_start > 0 and (expr.source[name_start - 1].isalnum() or expr.source[name_start - 1] == "_"):
                    name_start -= 1
                local = name_start if name_start < name_end else local
            return expr.offset + local
    return expr.span.start if expr.span else expr.offset


def _span_in(query: str, offset: int, node: exp.Expression, whole: tuple[int, int]) -> ast.Span:
    local = _first_name_start(node)
    start = offset + local if local is not None else whole[0]
    line, column = position_of(query, start)
    return ast.Span(start, whole[1], line, column)


def _bare_var(node: exp.Expression) -> str | None:
    """The variable name of ``var[...]`` when node is a bracket on an unqualified name."""
    if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column) and not node.this.table:
        return node.this.name
    return None


def _strip_qualifier(tree: exp.Expression, var: str) -> exp.Expression:
    """``b[b.price > 1]`` means ``b[price > 1]``."""
    return written.strip_qualifiers(tree, var)


def _after_filter(query: str, where: int, op: str = "OR") -> ParseError:
    return ParseError.at(query, where, "Syntax error: a pattern operator after FILTER", "PATTERN_AFTER_FILTER",
                         "FILTER covers everything to its left, and AND/OR after it join conditions; put the "
                         f"filtered part in parentheses: (p FILTER f) {op} q")


def pattern_word(text: str) -> tuple[int, str] | None:
    """(offset, word) of a top-level UNLESS or ALL in a FILTER's text: pattern operators that
    Spark SQL has no use for there (outside brackets, parentheses and strings)."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except sqlglot.errors.SqlglotError:
        return None
    opening = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
    closing = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}
    depth = 0
    for token in tokens:
        depth += (token.token_type in opening) - (token.token_type in closing)
        if depth == 0 and token.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) and (
                token.text.upper() in ("UNLESS", "ALL")):
            return token.start, token.text.upper()
    return None


def parse_condition(text: str, offset: int, query: str) -> ast.Condition:
    """The condition after FILTER: top-level AND/OR join terms; ``var[p]`` is a unary term."""
    stripped = text.rstrip()
    if stripped.endswith("+"):
        raise _after_filter(query, offset + len(stripped) - 1)
    if word := pattern_word(text):
        raise _after_filter(query, offset + word[0], word[1])
    tree = parse_fragment(text, offset, query)
    if isinstance(tree, (exp.Or, exp.And)):
        # `... FILTER f OR B`: a bare name after a top-level OR (AND) is a pattern, not a term
        right = tree.expression
        if isinstance(right, exp.Column) and not right.table:
            start = offset + (_first_name_start(right) or 0)
            op = "OR" if isinstance(tree, exp.Or) else "AND"
            op_at = query.upper().rfind(op, offset, start)
            raise _after_filter(query, op_at if op_at >= 0 else start, op)
    whole = (offset, offset + len(text))

    def build(node: exp.Expression) -> ast.Condition:
        span = _span_in(query, offset, node, whole)
        if isinstance(node, exp.Paren):
            return build(node.this)
        if isinstance(node, exp.And):
            return ast.FilterAnd(build(node.this), build(node.expression), span)
        if isinstance(node, exp.Or):
            return ast.FilterOr(build(node.this), build(node.expression), span)
        var = _bare_var(node)
        if var is not None and len(node.expressions) == 1:
            pred_span = _span_in(query, offset, node.expressions[0], whole)
            pred = _strip_qualifier(node.expressions[0], var)
            return ast.VarPredicate(var, sql_expr(pred, text, offset, pred_span), span)
        return ast.CrossPredicate(sql_expr(node, text, offset, span), span)

    return build(tree)


def parse_select_item(text: str, offset: int, query: str, alias: str | None, span: ast.Span):
    """``var``, ``var[col, ...]`` or a Spark expression (with its alias)."""
    tree = parse_fragment(text, offset, query)
    if alias is None:
        if isinstance(tree, exp.Column) and not tree.table:
            return ast.SelectVar(tree.name, span)
        var = _bare_var(tree)
        if var is not None and all(
            isinstance(c, exp.Column) and not c.table for c in tree.expressions
        ):
            return ast.SelectVarColumns(var, tuple(c.name for c in tree.expressions), span)
    # Found once here (extent re-reads growing slices of the text) and kept for sql_expr. When
    # nothing inside carries a position (``INTERVAL 3 WEEKS``: sqlglot positions names, not
    # numbers or units), the item is still the whole fragment, so that is where it is.
    where = written.extent(tree, text)
    tree.meta[written.EXTENT] = where or (len(text) - len(text.lstrip()), len(text.rstrip()))
    return ast.SelectExpr(sql_expr(tree, text, offset, span), alias, span)


def _top_level_items(text: str) -> list[tuple[int, int]]:
    """(start, end) of the comma-separated items of ``text``, commas inside parentheses,
    brackets, braces and strings left alone (sqlglot's tokenizer knows Spark SQL's quoting)."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except sqlglot.errors.SqlglotError:
        return [(0, len(text))]  # parse_fragment reports what is wrong with it
    opening = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
    closing = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}
    items, depth, start = [], 0, 0
    for token in tokens:
        depth += (token.token_type in opening) - (token.token_type in closing)
        if token.token_type == TokenType.COMMA and depth == 0:
            items.append((start, token.start))
            start = token.end + 1
    return items + [(start, len(text))]


def parse_keys(text: str, offset: int, query: str, span: ast.Span | None) -> tuple[ast.Key, ...]:
    """The items of a PARTITION BY or ORDER BY bracket (``[name, upper(name) AS sym]``): a
    column name stays a name; any other item is a :class:`cerql.ast.KeyExpr`, named by its
    alias, else by its text as written (``upper(name)``, as Spark names such a column)."""
    keys: list[ast.Key] = []
    for lo, hi in _top_level_items(text):
        piece = text[lo:hi]
        start = offset + lo
        if not piece.strip():
            raise ParseError.at(query, start, "Expected a column name or an expression in brackets",
                                "EXPECTED_COLUMN", "write [col], [col1, col2] or [expression AS name]")
        tree = parse_fragment(piece, start, query)
        alias = tree.alias if isinstance(tree, exp.Alias) else None
        node = tree.this if isinstance(tree, exp.Alias) else tree
        if isinstance(node, exp.Star) or isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            raise ParseError.at(query, start, "Expected column names or expressions in brackets, got *",
                                "EXPECTED_COLUMN", "name the columns: [col1, col2]")
        if isinstance(node, exp.Column) and not node.table and alias is None:
            keys.append(node.name)
            continue
        sql = sql_expr(node, piece, start, _span_in(query, start, node, (start, offset + hi)))
        keys.append(ast.KeyExpr(sql, alias or as_written(sql), span))
    return tuple(keys)


def as_written(sql: ast.SqlExpr) -> str:
    """The name Spark gives an unaliased expression, as near as the text tells it: the
    fragment as written, whitespace collapsed (``max(b.price)``, not sqlglot's ``MAX(b.price)``)."""
    return " ".join(sql.source.split()) if sql.source else sql.text
