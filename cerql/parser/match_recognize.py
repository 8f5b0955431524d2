"""A SQL query holding ``source MATCH_RECOGNIZE ( ... ) [AS] alias``, to :mod:`cerql.mr_ast`.

Input: the text of a whole query (Spark SQL around one MATCH_RECOGNIZE item, or the item alone).
Output: a :class:`cerql.mr_ast.MatchRecognizeQuery`: the clause as a tree, and the query around
it as Spark SQL over a placeholder table (docs/semantics.md, MATCH_RECOGNIZE).

Three steps. The item is found in the text outside strings, quoted names and comments: the
MATCH_RECOGNIZE keyword, the parenthesis that closes its clause, the table name or parenthesized
subquery before it and the alias after it. The text between the parentheses is parsed with
``match_recognize.lark`` (LALR, positions kept), the text before it blanked rather than cut, so
every position lark and sqlglot report is one in the whole query; one transformer method per
rule builds the nodes, and each expression goes to parser/mr_expr.py. Last, the item (source
through alias) is replaced by the placeholder name and the alias: that is the outer SQL.
Syntax errors are :class:`cerql.errors.ParseError` with line, column, caret and a hint that says
what was expected there.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from cerql import ast, mr_ast
from cerql.errors import CeqlError, ParseError, UnsupportedError, position_of
from cerql.parser import mr_expr
from cerql.parser.depth import check_depth, check_parentheses, room_to_recurse
from cerql.parser.teach import masked
from cerql.parser.to_ast import check_variables, unquote

#: The placeholder table is this prefix and the first number whose name the query does not hold.
PLACEHOLDER_PREFIX = "__cerql_mr_"

#: The clauses inside the parentheses, in the order the standard (and the grammar) requires.
CLAUSE_ORDER = ("PARTITION BY", "ORDER BY", "MEASURES", "ONE ROW | ALL ROWS PER MATCH", "AFTER MATCH SKIP",
                "PATTERN", "SUBSET", "DEFINE")
_ORDER_HINT = "the clauses of MATCH_RECOGNIZE come in this order, each at most once: " + ", ".join(CLAUSE_ORDER)
_ITEM_HINT = ("write FROM table MATCH_RECOGNIZE ( [PARTITION BY ...] [ORDER BY ...] [MEASURES ...] "
              "PATTERN (...) [DEFINE ...] ) AS alias")

_KEYWORD = re.compile(r"\bmatch_recognize\b", re.IGNORECASE)
_NAME = r"(?:`[^`]*`|[^\W\d]\w*)"
_TABLE = re.compile(rf"{_NAME}(?:\s*\.\s*{_NAME})*$")
_AS = re.compile(r"\s*(as)\b\s*", re.IGNORECASE)
_WORD = re.compile(_NAME)
_SPACE = re.compile(r"\s*")
# What may stand before the item: it is a table reference in FROM or JOIN (or the whole query).
_BEFORE_SOURCE = re.compile(r"(?:^|\bfrom|\bjoin|,|\()\s*$", re.IGNORECASE)
# Words that may follow a table reference in Spark SQL and are no alias.
_NOT_ALIAS = frozenset("""
    ANTI CLUSTER CROSS DISTRIBUTE EXCEPT FULL GROUP HAVING INNER INTERSECT JOIN LATERAL LEFT LIMIT MINUS
    NATURAL OFFSET ON ORDER OUTER PIVOT QUALIFY RIGHT SEMI SORT TABLESAMPLE UNION UNPIVOT USING WHERE WINDOW
""".split())


@dataclass(frozen=True)
class _Item:
    """Where the MATCH_RECOGNIZE item is in the query (offsets; ``end`` exclusive)."""

    start: int                  # the source's first character
    open: int                   # the ( after MATCH_RECOGNIZE
    close: int                  # its )
    end: int                    # after the alias, else after the )
    source: str
    source_is_query: bool
    alias: str | None           # without backticks
    alias_written: str | None   # as written


def is_match_recognize(text: str) -> bool:
    """Whether ``text`` holds the MATCH_RECOGNIZE keyword outside strings, quoted names and
    comments: the front door's cheap choice of dialect."""
    return _KEYWORD.search(masked(text)) is not None


def parse_match_recognize(text: str) -> mr_ast.MatchRecognizeQuery:
    """Parse a query holding one MATCH_RECOGNIZE item (module docstring)."""
    check_variables(text)
    check_parentheses(text)
    hidden = masked(text)
    item = _locate(text, hidden)
    if (within := _WITHIN.search(hidden, item.close + 1)) is not None:
        raise _within(text, within.start(), inside=False)
    clause = _parse_clause(text, item)
    _check_operator_words(text, clause)
    placeholder = _placeholder(text)
    line, column = position_of(text, 0)
    return mr_ast.MatchRecognizeQuery(clause, _outer_sql(text, hidden, item, placeholder), placeholder, text,
                                      ast.Span(0, len(text), line, column))


# ---------------------------------------------------------------------------- finding the item
def _closing(hidden: str, at: int) -> int | None:
    """Offset of the ) that closes the ( at ``at`` (``hidden``: strings and comments blanked)."""
    depth = 0
    for i in range(at, len(hidden)):
        depth += (hidden[i] == "(") - (hidden[i] == ")")
        if depth == 0:
            return i
    return None


def _opening(hidden: str, at: int) -> int | None:
    """Offset of the ( that the ) at ``at`` closes."""
    depth = 0
    for i in range(at, -1, -1):
        depth += (hidden[i] == ")") - (hidden[i] == "(")
        if depth == 0:
            return i
    return None


def _locate(text: str, hidden: str) -> _Item:
    found = list(_KEYWORD.finditer(hidden))
    if not found:
        raise ParseError.at(text, 0, "Not a MATCH_RECOGNIZE query", "NOT_MATCH_RECOGNIZE", _ITEM_HINT)
    if len(found) > 1:
        raise UnsupportedError.at(text, found[1].start(), "A query may hold one MATCH_RECOGNIZE",
                                  "MULTIPLE_MATCH_RECOGNIZE",
                                  "run each MATCH_RECOGNIZE as a query of its own (a temporary view) and "
                                  "join their results")
    keyword = found[0]
    open_ = _SPACE.match(hidden, keyword.end()).end()
    if hidden[open_:open_ + 1] != "(":
        got = repr(text[open_]) if open_ < len(text) else "end of query"
        raise ParseError.at(text, open_, f"Syntax error: expected ( after MATCH_RECOGNIZE, got {got}",
                            "SYNTAX_ERROR", _ITEM_HINT)
    close = _closing(hidden, open_)
    if close is None:
        raise ParseError.at(text, open_, "Syntax error: the ( of MATCH_RECOGNIZE is never closed",
                            "UNBALANCED_PARENTHESES", "check that every ( has its )")
    start, source, is_query = _source(text, hidden, keyword.start())
    alias, alias_written, end = _alias(text, hidden, close + 1)
    return _Item(start, open_, close, end, source, is_query, alias, alias_written)


def _source(text: str, hidden: str, keyword: int) -> tuple[int, str, bool]:
    """(start, text, is a query) of what MATCH_RECOGNIZE reads: a table name or a (subquery)."""
    before = hidden[:keyword].rstrip()
    start, is_query = None, False
    if before.endswith(")"):
        start = _opening(hidden, len(before) - 1)
        is_query = start is not None
        source = text[start + 1:len(before) - 1].strip() if is_query else ""
    elif (m := _TABLE.search(before)) and m.group(0).split(".")[0].strip().upper() not in ("FROM", "JOIN"):
        start, source = m.start(), text[m.start():m.end()]
    if start is None or not source or not _BEFORE_SOURCE.search(hidden[:start]):
        raise ParseError.at(text, keyword, "MATCH_RECOGNIZE needs a table or a (subquery) before it",
                            "MISSING_SOURCE", "write FROM table MATCH_RECOGNIZE (...) or "
                            "FROM (SELECT ...) MATCH_RECOGNIZE (...)")
    return start, source, is_query


def _alias(text: str, hidden: str, at: int) -> tuple[str | None, str | None, int]:
    """(alias, alias as written, end of the item) after the closing parenthesis."""
    as_ = _AS.match(hidden, at)
    name_at = as_.end() if as_ else _SPACE.match(hidden, at).end()
    word = _WORD.match(hidden, name_at)
    if word is None or (word.group(0).upper() in _NOT_ALIAS and not word.group(0).startswith("`")):
        if as_:
            raise ParseError.at(text, name_at, "Syntax error: expected an alias after AS", "SYNTAX_ERROR",
                                "name the result of MATCH_RECOGNIZE: ... ) AS m")
        return None, None, at
    written = text[word.start():word.end()]
    return unquote(written), written, word.end()


def _placeholder(text: str) -> str:
    lowered, k = text.lower(), 0
    while f"{PLACEHOLDER_PREFIX}{k}" in lowered:
        k += 1
    return f"{PLACEHOLDER_PREFIX}{k}"


def _outer_sql(text: str, hidden: str, item: _Item, placeholder: str) -> str:
    """The query with the item replaced by the placeholder (and the item's alias)."""
    table = placeholder + (f" AS {item.alias_written}" if item.alias_written else "")
    if not hidden[:item.start].strip() and not hidden[item.end:].strip(" \t\r\n;"):
        return f"SELECT * FROM {table}"
    return re.sub(r"[\s;]+$", "", text[:item.start] + table + text[item.end:])


# ---------------------------------------------------------------------------- the clause
@functools.cache
def _parser() -> Lark:
    # Package data rather than a file path, so that a zipped cerql parses too (as to_ast's grammar).
    grammar = resources.files("cerql.parser").joinpath("match_recognize.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                maybe_placeholders=False)


def _blanked(text: str) -> str:
    """``text`` with every character but line ends as a space: lark then counts lines and
    columns of what follows as in the whole query."""
    return re.sub(r"[^\r\n]", " ", text)


def _parse_clause(text: str, item: _Item) -> mr_ast.MatchRecognize:
    inside = _blanked(text[:item.open + 1]) + text[item.open + 1:item.close]
    try:
        tree = _parser().parse(inside)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text, item) from None
    check_depth(tree, text)
    with room_to_recurse(text):
        try:
            clauses = _ToMr(text).transform(tree)
        except VisitError as exc:
            if isinstance(exc.orig_exc, CeqlError):
                raise exc.orig_exc.with_text(text) from None
            raise
    line, column = position_of(text, item.start)
    return mr_ast.MatchRecognize(
        source=item.source,
        partition_by=clauses.get("partition", ()),
        order_by=clauses.get("order", ()),
        measures=clauses.get("measures", ()),
        rows_per_match=clauses.get("rows_per_match", mr_ast.RowsPerMatch()),
        after_match=clauses.get("after_match", mr_ast.AfterMatchSkip()),
        pattern=clauses["pattern"],
        subsets=clauses.get("subsets", ()),
        defines=clauses.get("defines", ()),
        alias=item.alias,
        source_is_query=item.source_is_query,
        span=ast.Span(item.start, item.end, line, column),
    )


def _span(meta) -> ast.Span | None:
    if getattr(meta, "empty", True):
        return None
    return ast.Span(meta.start_pos, meta.end_pos, meta.line, meta.column)


def _values(children) -> list:
    """The children that are not keyword tokens."""
    return [c for c in children if not isinstance(c, Token)]


class _ToMr(Transformer):
    """One method per grammar rule; see match_recognize.lark."""

    def __init__(self, text: str):
        super().__init__(visit_tokens=False)
        self.text = text
        self._groups: set[int] = set()  # ids of patterns written in parentheses: never flattened

    # -- names and expressions
    def ident(self, children):
        return unquote(children[0].value)

    @v_args(meta=True)
    def sql_expr(self, meta, children):
        start, end = meta.start_pos, meta.end_pos
        try:
            return mr_expr.parse_expression(self.text[start:end], start, self.text, _span(meta))
        except ParseError as err:
            raise _ceql_inside(self.text, start, end) or _clause_inside(self.text, start, end) or err

    # -- clauses: (name, value) pairs that start collects
    def start(self, children):
        return dict(children)

    def partition(self, children):
        return ("partition", tuple(_values(children)))

    def order(self, children):
        return ("order", tuple(_values(children)))

    @v_args(meta=True)
    def sort_key(self, meta, children):
        expr, descending, nulls_first = children[0], False, None
        for child in children[1:]:
            if isinstance(child, Token):
                descending = child.value.upper() == "DESC"
            else:
                nulls_first = child
        return mr_ast.SortKey(expr, descending, nulls_first, _span(meta))

    def nulls(self, children):
        return children[-1].type == "FIRST"

    def measures(self, children):
        return ("measures", tuple(_values(children)))

    @v_args(meta=True)
    def measure(self, meta, children):
        expr, name = _values(children)
        return mr_ast.Measure(expr, name, _span(meta))

    @v_args(meta=True)
    def one_row(self, meta, children):
        return ("rows_per_match", mr_ast.RowsPerMatch(mr_ast.ONE_ROW, _span(meta)))

    @v_args(meta=True)
    def all_rows(self, meta, children):
        mode = _values(children)
        return ("rows_per_match", mr_ast.RowsPerMatch(mode[0] if mode else mr_ast.SHOW_EMPTY, _span(meta)))

    def show_empty(self, children):
        return mr_ast.SHOW_EMPTY

    def omit_empty(self, children):
        return mr_ast.OMIT_EMPTY

    def with_unmatched(self, children):
        return mr_ast.WITH_UNMATCHED

    @v_args(meta=True)
    def after_match(self, meta, children):
        mode, variable = _values(children)[0]
        return ("after_match", mr_ast.AfterMatchSkip(mode, variable, _span(meta)))

    def past_last_row(self, children):
        return (mr_ast.PAST_LAST_ROW, None)

    def to_next_row(self, children):
        return (mr_ast.TO_NEXT_ROW, None)

    def to_first(self, children):
        return (mr_ast.TO_FIRST, _values(children)[0])

    def to_last(self, children):
        return (mr_ast.TO_LAST, _values(children)[0])

    def subsets(self, children):
        return ("subsets", tuple(_values(children)))

    @v_args(meta=True)
    def subset(self, meta, children):
        name, *variables = _values(children)
        return mr_ast.Subset(name, tuple(variables), _span(meta))

    def defines(self, children):
        return ("defines", tuple(_values(children)))

    @v_args(meta=True)
    def define(self, meta, children):
        variable, condition = _values(children)
        return mr_ast.Define(variable, condition, _span(meta))

    # -- the row pattern
    @v_args(meta=True)
    def pattern(self, meta, children):
        inner = _values(children)
        return ("pattern", inner[0] if inner else mr_ast.EmptyPattern(_span(meta)))

    @v_args(meta=True)
    def variable(self, meta, children):
        return mr_ast.PatternVar(children[0], _span(meta))

    def group(self, children):
        self._groups.add(id(children[0]))
        return children[0]

    @v_args(meta=True)
    def empty_pattern(self, meta, children):
        return mr_ast.EmptyPattern(_span(meta))

    @v_args(meta=True)
    def start_anchor(self, meta, children):
        return mr_ast.Anchor(True, _span(meta))

    @v_args(meta=True)
    def end_anchor(self, meta, children):
        return mr_ast.Anchor(False, _span(meta))

    @v_args(meta=True)
    def exclusion(self, meta, children):
        return mr_ast.Exclusion(children[0], _span(meta))

    @v_args(meta=True)
    def permute(self, meta, children):
        return mr_ast.Permute(tuple(_values(children)), _span(meta))

    def _flat(self, node, kind, field: str) -> tuple:
        """The parts of ``node``, itself when written in parentheses or of another kind."""
        if isinstance(node, kind) and id(node) not in self._groups:
            return getattr(node, field)
        return (node,)

    @v_args(meta=True)
    def concatenation(self, meta, children):
        left, right = children
        return mr_ast.Concat(self._flat(left, mr_ast.Concat, "items") + (right,), _span(meta))

    @v_args(meta=True)
    def alternation(self, meta, children):
        left, right = children
        return mr_ast.Alternation(self._flat(left, mr_ast.Alternation, "options") + (right,), _span(meta))

    @v_args(meta=True)
    def quantified(self, meta, children):
        pattern, (low, high, greedy) = children
        return mr_ast.Quantified(pattern, low, high, greedy, _span(meta))

    @v_args(meta=True)
    def quantifier(self, meta, children):
        low, high = children[0]
        if high is not None and low > high:
            raise ParseError.at(self.text, meta.start_pos, f"Invalid quantifier: at least {low} and at most {high}",
                                "INVALID_QUANTIFIER", f"the smaller bound comes first: {{{high},{low}}}")
        greedy = not (len(children) == 2 and children[1].type == "QMARK")
        return (low, high, greedy)

    def star(self, children):
        return (0, None)

    def plus(self, children):
        return (1, None)

    def optional(self, children):
        return (0, 1)

    def exactly(self, children):
        n = int(children[0])
        return (n, n)

    def at_least(self, children):
        return (int(children[0]), None)

    def at_most(self, children):
        return (0, int(children[0]))

    def between(self, children):
        return (int(children[0]), int(children[1]))


# ---------------------------------------------------------------------------- syntax errors
# What lark calls the terminals, as a user knows them.
_TERMINAL_NAMES = {
    "PARTITION": "PARTITION BY", "ORDER": "ORDER BY", "ONE": "ONE ROW PER MATCH", "ALL": "ALL ROWS PER MATCH",
    "AFTER": "AFTER MATCH SKIP", "PATTERN": "PATTERN (...)", "DIRECTION": "ASC or DESC", "NULLS": "NULLS FIRST|LAST",
    "NAME": "a name", "QNAME": "a name", "INT": "a whole number", "COMMA": "','", "LPAR": "'('", "RPAR": "')'",
    "VBAR": "'|'", "STAR": "'*'", "PLUS": "'+'", "QMARK": "'?'", "LBRACE": "'{'", "RBRACE": "'}'",
    "__ANON_0": "'{-'", "__ANON_1": "'-}'", "CIRCUMFLEX": "'^'", "DOLLAR": "'$'", "EQUAL": "'='",
    "PERMUTE": "PERMUTE(...)", "$END": "')' (the end of MATCH_RECOGNIZE)",
}
# Terminals that start or continue a Spark SQL expression (match_recognize.lark, sql_head).
_EXPRESSION = frozenset({"NAME", "QNAME", "NUMBER", "STRING", "OPERATOR", "LPAR", "LSQB", "STAR", "PLUS", "DOT",
                         "EQUAL", "CIRCUMFLEX"})
_CLAUSES = ("PARTITION", "ORDER", "MEASURES", "ONE", "ALL", "AFTER", "PATTERN", "SUBSET", "DEFINE")
# A misspelled clause keyword, recognized by what follows it.
_FOLLOWS = {"PARTITION": r"\s+by\b", "ORDER": r"\s+by\b", "MEASURES": r"\s+\S.*?\bas\b", "PATTERN": r"\s*\(",
            "SUBSET": r"\s+\w+\s*=", "DEFINE": r"\s+\w+\s+as\b", "AFTER": r"\s+match\b"}
_KNOWN_WORDS = frozenset(_CLAUSES) | {"BY", "AS", "ROW", "ROWS", "PER", "MATCH", "SKIP", "PAST", "LAST", "FIRST",
                                      "NEXT", "TO", "SHOW", "OMIT", "EMPTY", "MATCHES", "WITH", "UNMATCHED",
                                      "NULLS", "ASC", "DESC"}
_CLAUSE_PHRASE = re.compile(r"\b(partition\s+by|order\s+by|one\s+row\s+per|all\s+rows\s+per|after\s+match|"
                            r"pattern\s*\(|subset\s+\w+\s*=|define\s+\w+\s+as\b|measures\s)", re.IGNORECASE)


def _expected(exc: UnexpectedInput) -> list[str]:
    names = set(getattr(exc, "expected", None) or ())
    if isinstance(exc, UnexpectedCharacters):
        # ``allowed`` is what the lexer of several parser states knows; ask the parser itself
        parser = getattr(exc, "interactive_parser", None)
        names = set(parser.accepts()) if parser is not None else set(exc.allowed or ())
    if "NUMBER" in names:  # an expression starts or goes on here
        names -= _EXPRESSION
        if not names:
            return ["an expression"]
    rank = {name: k for k, name in enumerate(_CLAUSES)}
    ordered = sorted(names, key=lambda n: (rank.get(n, -1), n))
    return list(dict.fromkeys(_TERMINAL_NAMES.get(n, n) for n in ordered))


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _top_level_words(hidden: str, lo: int, hi: int):
    """(offset, word) of the words between ``lo`` and ``hi`` outside parentheses."""
    depth = 0
    for m in re.finditer(r"[()]|[^\W\d]\w*", hidden[lo:hi]):
        token = m.group(0)
        if token in "()":
            depth += 1 if token == "(" else -1
        elif depth == 0:
            yield lo + m.start(), token


def _misspelled(text: str, hidden: str, item: _Item, until: int) -> ParseError | None:
    """A clause keyword written wrong (``PATERN (A)``), which lark took for a name."""
    for at, word in _top_level_words(hidden, item.open + 1, item.close):
        if at > until or word.upper() in _KNOWN_WORDS:
            continue
        close = difflib.get_close_matches(word.upper(), _FOLLOWS, n=1, cutoff=0.75)
        if close and re.match(_FOLLOWS[close[0]], hidden[at + len(word):item.close], re.IGNORECASE | re.DOTALL):
            return ParseError.at(text, at, f"Syntax error: unknown keyword {word!r}", "UNKNOWN_KEYWORD",
                                 f"did you mean {close[0]}?")
    return None


def _phrase(m: re.Match) -> str:
    """A clause keyword as the error names it: ``ORDER BY``, ``PATTERN``, ``DEFINE``."""
    words = m.group(0).replace("(", " ").split()
    two = words[0].upper() in ("PARTITION", "ORDER", "ONE", "ALL", "AFTER")
    return " ".join(words[:2] if two else words[:1]).upper()


def _no_expression(text: str, at: int, m: re.Match) -> ParseError:
    return ParseError.at(text, at, f"Syntax error: expected an expression, got {_phrase(m)}", "SYNTAX_ERROR",
                         "each PARTITION BY, ORDER BY and MEASURES item and each DEFINE condition is a Spark SQL "
                         "expression")


def _clause_inside(text: str, start: int, end: int) -> ParseError | None:
    """A clause keyword inside an expression that did not parse (``DEFINE A AS x > 1 ORDER BY
    ts``, ``PARTITION BY ORDER BY ts``): lark read it as a name because no clause may stand there."""
    hidden = masked(text)
    for at, _ in _top_level_words(hidden, start, end):
        if m := _CLAUSE_PHRASE.match(hidden, at):
            if at == start:
                return _no_expression(text, at, m)
            return ParseError.at(text, at, f"Syntax error: {_phrase(m)} is out of place", "CLAUSE_ORDER",
                                 _ORDER_HINT)
    return None


def _clause_for_expression(text: str, hidden: str, item: _Item) -> ParseError | None:
    """A clause keyword where an expression must start (``PARTITION BY PATTERN (A)``), which lark
    read as the expression."""
    for at, _ in _top_level_words(hidden, item.open + 1, item.close):
        m = _CLAUSE_PHRASE.match(hidden, at)
        if m and re.search(r"(\bby|\bmeasures|\bas|,)\s*$", hidden[item.open + 1:at], re.IGNORECASE):
            return _no_expression(text, at, m)
    return None


def _syntax_error(exc: UnexpectedInput, text: str, item: _Item) -> ParseError:
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        offset, found, token = item.close, "')' (the end of MATCH_RECOGNIZE)", None
    elif isinstance(exc, UnexpectedCharacters):
        offset, found, token = exc.pos_in_stream, repr(text[exc.pos_in_stream]), None
    else:
        token = exc.token
        offset, found = token.start_pos, repr(token.value)
    accepted = set(getattr(exc, "expected", None) or ())
    expected = _expected(exc)
    hint = f"expected {_listed(expected)}" if expected else None
    hidden = masked(text)
    if (err := _ceql_syntax(text, hidden, item, offset)) is not None:
        return err
    if (err := _misspelled(text, hidden, item, offset)) is not None:
        return err
    if (err := _clause_for_expression(text, hidden, item)) is not None:
        return err
    words = list(_top_level_words(hidden, item.open + 1, item.close))
    if not any(w.upper() == "PATTERN" for _, w in words):
        # the caret where PATTERN belongs: before SUBSET or DEFINE, else at the end
        offset = next((at for at, w in words if w.upper() in ("SUBSET", "DEFINE")), item.close)
        return ParseError.at(text, offset, "Syntax error: MATCH_RECOGNIZE has no PATTERN clause", "MISSING_PATTERN",
                             "write the row pattern after AFTER MATCH SKIP and before SUBSET and DEFINE, e.g. "
                             "PATTERN (A B+ C)", expected=expected)
    if token is not None and token.type in _CLAUSES and accepted & {*_CLAUSES, "$END"}:
        # a clause where another clause (or the end) could stand: out of order, or twice
        name = _TERMINAL_NAMES.get(token.type, token.type).split(" (")[0]
        return ParseError.at(text, offset, f"Syntax error: {name} is out of place", "CLAUSE_ORDER", _ORDER_HINT,
                             expected=expected)
    return ParseError.at(text, offset, f"Syntax error: unexpected {found}", "SYNTAX_ERROR", hint, expected=expected)


# ---------------------------------------------------------------------------- CEQL written here
# A user of cerql's other dialect writes CEQL's pattern operators and clauses inside the item:
# each gets the MATCH_RECOGNIZE way in its hint (docs/match_recognize.md, "Mistakes cerql
# recognizes"). The CEQL side of the same lesson is parser/teach.py's ``match_recognize``.
CEQL_SYNTAX = "CEQL_SYNTAX_IN_MATCH_RECOGNIZE"
_WITHIN = re.compile(r"\bwithin\b(?!\s+group\b)", re.IGNORECASE)  # Spark's WITHIN GROUP is no window
_PATTERN_OPEN = re.compile(r"\bpattern\s*\(", re.IGNORECASE)
_QUALIFIER = re.compile(r"(`[^`]+`|[^\W\d]\w*)\s*\.\s*(?:`[^`]+`|[^\W\d]\w*)")


def _within(text: str, at: int, inside: bool) -> ParseError:
    where = "inside" if inside else "after"
    return ParseError.at(text, at, f"Syntax error: WITHIN {where} MATCH_RECOGNIZE is CEQL's window, not "
                         "MATCH_RECOGNIZE's", CEQL_SYNTAX,
                         "write the query in CEQL (SELECT * FROM t WHERE A AS a ; B AS b WITHIN 1 MINUTE), or bound "
                         "the time in DEFINE: B AS B.ts - FIRST(A.ts) <= INTERVAL 1 MINUTE (the row being mapped "
                         "against A's first)")


def _filter(text: str, at: int, end: int) -> ParseError:
    """FILTER at ``at``; its condition runs to ``end`` or the next clause keyword."""
    hidden = masked(text)
    stop = next((k for k, _ in _top_level_words(hidden, at + len("filter"), end)
                 if _CLAUSE_PHRASE.match(hidden, k)), end)
    condition = re.sub(r"\s+", " ", text[at + len("filter"):stop]).strip()
    variables = {m.group(1) for m in _QUALIFIER.finditer(masked(condition))}
    if condition and len(variables) == 1:
        fix = f"DEFINE {variables.pop()} AS {condition}"
    else:
        fix = "DEFINE B AS B.price > PREV(B.price)"
    return ParseError.at(text, at, "Syntax error: FILTER is CEQL's; MATCH_RECOGNIZE states each variable's "
                         "condition in DEFINE", CEQL_SYNTAX,
                         f"write {fix} after PATTERN (a condition may compare variables too: DEFINE B AS "
                         "B.price > A.price reads A's last row)")


def _pattern_span(hidden: str, item: _Item) -> tuple[int, int] | None:
    """(offset after the '(', offset of the ')') of the PATTERN clause's parentheses."""
    for at, word in _top_level_words(hidden, item.open + 1, item.close):
        if word.upper() == "PATTERN" and (m := _PATTERN_OPEN.match(hidden, at)):
            close = _closing(hidden, m.end() - 1)
            if close is not None and close <= item.close:
                return m.end(), close
    return None


def _check_operator_words(text: str, clause: mr_ast.MatchRecognize) -> None:
    """``PATTERN (A OR B)`` reads as three variables in a row, OR one of them: a variable named OR
    or AND that no DEFINE names is CEQL's (or SQL's) operator written where the row pattern's
    ``|`` goes, or where juxtaposition already means "then"."""
    defined = {d.variable.upper() for d in clause.defines}
    for var in (node for node in mr_ast.walk(clause.pattern) if isinstance(node, mr_ast.PatternVar)):
        word = var.name.upper()
        if word in ("OR", "AND") and word not in defined and var.span is not None:
            fix = "A | B: the rows of A, or else those of B" if word == "OR" else \
                "A B: A's row, then B's (for both conditions on one row, one variable: DEFINE A AS x AND y)"
            raise ParseError.at(text, var.span.start, f"Syntax error: {var.name} in PATTERN is read as a pattern "
                                "variable", CEQL_SYNTAX, f"a row pattern writes {fix}")


def as_row_pattern(ceql: str) -> str:
    """A pattern written with CEQL's operators as a row pattern: ``A ; B AS b`` -> ``A B``,
    ``A :+`` -> ``A+``. Rows of a MATCH_RECOGNIZE pattern are always adjacent."""
    out = re.sub(r"(?i)\s+as\s+(?:`[^`]*`|[^\W\d]\w*)", "", ceql)
    out = re.sub(r"\s*:\+", "+", out)
    out = re.sub(r"\s*[;:]\s*", " ", out)
    return re.sub(r"\s+", " ", out).strip()


def _ceql_syntax(text: str, hidden: str, item: _Item, offset: int) -> ParseError | None:
    """CEQL's ``;``, ``:`` and ``AS`` inside PATTERN (...), its FILTER or WITHIN where a clause of
    the item goes: the error lark stopped at, as the lesson of the other dialect."""
    word = re.match(r"[^\W\d]\w*", hidden[offset:item.close])
    span = _pattern_span(hidden, item)
    if span is not None and span[0] <= offset < span[1]:
        written = text[span[0]:span[1]]
        fixed = as_row_pattern(written)
        if hidden[offset] in ";:":
            return ParseError.at(text, offset, f"Syntax error: {hidden[offset]!r} is CEQL's sequence; MATCH_RECOGNIZE "
                                 "concatenates by juxtaposition", CEQL_SYNTAX,
                                 f"write PATTERN ({fixed}): each variable maps the row right after the previous "
                                 "one's (for rows between, add a variable without DEFINE: PATTERN (A X*? B))")
        if word is not None and word.group(0).upper() == "AS":
            return ParseError.at(text, offset, "Syntax error: AS inside PATTERN names events in CEQL; in "
                                 "MATCH_RECOGNIZE the pattern variable is the name", CEQL_SYNTAX,
                                 f"write PATTERN ({fixed}), each variable's condition in DEFINE (DEFINE A AS ...), "
                                 "and read its columns as A.price in MEASURES")
        return None
    if word is None:
        return None
    if word.group(0).upper() == "FILTER":
        return _filter(text, offset, item.close)
    if word.group(0).upper() == "WITHIN":
        return _within(text, offset, inside=True)
    return None


def _ceql_inside(text: str, start: int, end: int) -> ParseError | None:
    """FILTER or WITHIN at the top level of an expression that did not parse (``DEFINE B AS
    B.x > 1 WITHIN 1 MINUTE``): lark took it for part of the expression."""
    for at, word in _top_level_words(masked(text), start, end):
        if word.upper() == "WITHIN" and _WITHIN.match(masked(text), at):
            return _within(text, at, inside=True)
        if word.upper() == "FILTER" and at > start:
            return _filter(text, at, end)
    return None


__all__ = ["CEQL_SYNTAX", "CLAUSE_ORDER", "PLACEHOLDER_PREFIX", "as_row_pattern", "is_match_recognize",
           "parse_match_recognize"]
