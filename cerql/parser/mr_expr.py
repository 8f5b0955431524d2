"""Spark SQL expressions of a MATCH_RECOGNIZE clause, with the row pattern functions in one shape.

Input: the text of one expression (a PARTITION BY, ORDER BY or MEASURES item, a DEFINE
condition) and its offset in the query. Output: a :class:`cerql.ast.SqlExpr` whose tree has the
shapes cerql/mr_ast.py fixes: ``PREV``, ``NEXT``, ``FIRST``, ``LAST``, ``CLASSIFIER`` and
``MATCH_NUMBER`` calls as ``exp.Anonymous`` named in upper case with all their arguments, and
``RUNNING f(...)`` / ``FINAL f(...)`` as ``exp.Anonymous('RUNNING' | 'FINAL', [f(...)])``.

sqlglot reads ``first(x, 2)`` as its First node, which drops the offset, and has no RUNNING or
FINAL. So, before sqlglot reads the text, a same-length rewrite hides both (positions hold): the
name of a FIRST/LAST call gets a private character in its second letter, so that it reads as an
unknown function, and a RUNNING/FINAL keyword before a call becomes blanks; the tree is then put
in shape by where each call's name was written. The parsing itself is parser/sqlexpr.py's, so
an expression means here what it means in a CEQL FILTER.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import TokenType

from cerql import ast
from cerql.errors import ParseError
from cerql.parser import sqlexpr, written

#: Row pattern functions: exp.Anonymous nodes named in upper case (cerql/mr_ast.py).
NAVIGATION = ("PREV", "NEXT", "FIRST", "LAST")
ROW_PATTERN_FUNCTIONS = NAVIGATION + ("CLASSIFIER", "MATCH_NUMBER")
#: The keywords that qualify a navigation or an aggregate: RUNNING (as of the current row) or FINAL.
QUALIFIERS = ("RUNNING", "FINAL")

HINT = ("expressions in MATCH_RECOGNIZE are Spark SQL, with the row pattern functions PREV, NEXT, FIRST, "
        "LAST, CLASSIFIER, MATCH_NUMBER and RUNNING / FINAL before a navigation or an aggregate")

_RENAMED = {"FIRST", "LAST"}   # names sqlglot would read as its own nodes
_STAND_IN = "\ue001"           # a private character: a name holding it is no function sqlglot knows
_QUOTED = (TokenType.STRING, TokenType.IDENTIFIER)


def _is_word(token) -> bool:
    return token.token_type not in _QUOTED and (token.text[:1].isalpha() or token.text[:1] == "_")


def _hidden(text: str) -> tuple[str, dict[int, str], dict[int, tuple[str, int, int]]]:
    """``text`` as sqlglot must read it (same length), the FIRST/LAST call names renamed (offset
    -> name) and the RUNNING/FINAL keywords blanked (offset of the call's name -> (keyword,
    keyword start, keyword end))."""
    toks = written.tokens(text)
    chars = list(text)
    renamed: dict[int, str] = {}
    qualified: dict[int, tuple[str, int, int]] = {}
    for k, tok in enumerate(toks[:-1]):
        if not _is_word(tok) or (k and toks[k - 1].token_type == TokenType.DOT):
            continue
        word, after = tok.text.upper(), toks[k + 1]
        if word in _RENAMED and after.token_type == TokenType.L_PAREN:
            chars[tok.start + 1] = _STAND_IN
            renamed[tok.start] = word
        elif word in QUALIFIERS and _is_word(after) and k + 2 < len(toks) \
                and toks[k + 2].token_type == TokenType.L_PAREN:
            chars[tok.start:tok.end + 1] = " " * (tok.end + 1 - tok.start)
            qualified[after.start] = (word, tok.start, tok.end + 1)
    return "".join(chars), renamed, qualified


def _named_calls(tree: exp.Expression, renamed: dict[int, str], source: str) -> None:
    """Row pattern functions in their shape, in place: upper case, FIRST/LAST by their place."""
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and isinstance(node.this, str):
            start = node.meta.get("start")
            name = renamed.get(start) or node.this.upper()
            if name in ROW_PATTERN_FUNCTIONS:
                node.set("this", name)
                where = written.call_extent(node, source)
                if where is not None:
                    node.meta[written.EXTENT] = where
        elif isinstance(node, exp.Identifier) and _STAND_IN in str(node.this):
            # a renamed name that sqlglot did not read as a call: put its letter back
            start = node.meta.get("start")
            if start is not None:
                node.set("this", source[start:start + len(node.this)])


def _qualify(tree: exp.Expression, qualified: dict[int, tuple[str, int, int]], text: str, offset: int,
             query: str) -> exp.Expression:
    """Wrap each call written after RUNNING/FINAL in ``Anonymous(keyword, [call])``."""
    calls = {n.meta.get("start"): n for n in tree.walk() if isinstance(n, exp.Func) and "start" in n.meta}
    for name_start, (word, kw_start, kw_end) in sorted(qualified.items()):
        call = calls.get(name_start) or _unpositioned_call(tree, name_start, text)
        if call is None:
            raise ParseError.at(query, offset + kw_start, f"{word} must come before a function call",
                                "INVALID_RUNNING_FINAL",
                                f"write {word} before a navigation or an aggregate: {word} LAST(A.price), "
                                f"{word} count(A.*)")
        wrapper = exp.Anonymous(this=word, expressions=[])
        wrapper.meta.update(start=kw_start, end=kw_end - 1)
        inner = call.meta.get(written.EXTENT) or written.call_extent(call, text)
        if inner is not None:
            wrapper.meta[written.EXTENT] = (kw_start, inner[1])
        if call is tree:
            tree = wrapper
        else:
            call.replace(wrapper)
        wrapper.set("expressions", [call])
    return tree


def _unpositioned_call(tree: exp.Expression, name_start: int, text: str) -> exp.Expression | None:
    """The call whose name is written at ``name_start`` when sqlglot kept no position for it
    (``max_by(x, y)`` becomes an exp.ArgMax without one): the outermost call without a position
    whose first name is written right after ``name(``; it gets the position of its name."""
    name = re.match(r"\w+\s*\(\s*(?:DISTINCT\s+)?", text[name_start:], flags=re.IGNORECASE)
    if name is None:
        return None
    for node in tree.walk():
        if isinstance(node, exp.Func) and "start" not in node.meta:
            starts = [i.meta["start"] for i in node.find_all(exp.Identifier) if "start" in i.meta]
            if starts and min(starts) == name_start + name.end():
                word = re.match(r"\w+", text[name_start:]).group(0)
                node.meta.update(start=name_start, end=name_start + len(word) - 1)
                return node
    return None


def parse_expression(text: str, offset: int, query: str, span: ast.Span | None) -> ast.SqlExpr:
    """One expression of a MATCH_RECOGNIZE clause, ``text`` starting at ``offset`` in ``query``
    (the whole of ``text`` is the expression)."""
    source, renamed, qualified = _hidden(text)
    tree = sqlexpr.parse_fragment(source, offset, query, HINT)
    if isinstance(tree, exp.Alias):  # `x y`: sqlglot reads a name after an expression as its alias
        name = tree.args["alias"]
        at = name.meta.get("start", 0) if isinstance(name, exp.Identifier) else 0
        raise ParseError.at(query, offset + at, f"Syntax error: unexpected {tree.alias!r}", "SYNTAX_ERROR", HINT)
    _named_calls(tree, renamed, text)
    tree = _qualify(tree, qualified, text, offset, query)
    tree.meta[written.EXTENT] = (len(text) - len(text.lstrip()), len(text.rstrip()))
    return sqlexpr.sql_expr(tree, text, offset, span)


__all__ = ["HINT", "NAVIGATION", "QUALIFIERS", "ROW_PATTERN_FUNCTIONS", "parse_expression"]
