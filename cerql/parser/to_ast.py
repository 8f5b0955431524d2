"""CEQL text to :mod:`cerql.ast`.

Input: query text. Output: a :class:`cerql.ast.Select` or :class:`cerql.ast.CreateView`.
The grammar is ``ceql.lark`` (loaded once, LALR, positions kept); one transformer method per
rule builds the frozen nodes; Spark SQL fragments go to :mod:`cerql.parser.sqlexpr`. Syntax
errors become :class:`cerql.errors.ParseError` with line, column, caret and a hint.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from decimal import Decimal, InvalidOperation

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from cerql import ast
from cerql.errors import CeqlError, ParseError, UnsupportedError
from cerql.parser import sqlexpr, teach
from cerql.parser.depth import check_depth, check_parentheses, room_to_recurse
from cerql.parser.units import MICROS_PER_UNIT

@functools.cache
def _parser() -> Lark:
    # The grammar is read as package data, not through a file path, so that a cerql imported
    # from a zip (shipped to Spark executors as one) parses too.
    grammar = resources.files("cerql.parser").joinpath("ceql.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
    )


def _span(meta) -> ast.Span | None:
    if getattr(meta, "empty", True):
        return None
    return ast.Span(meta.start_pos, meta.end_pos, meta.line, meta.column)


def unquote(name: str) -> str:
    """An identifier as written, without backticks."""
    if len(name) >= 2 and name[0] == name[-1] == "`":
        return name[1:-1].replace("``", "`")
    return name


_COLUMN_ITEM = re.compile(r"\s*(`(?:[^`]|``)+`|[^,`]*)\s*(,|$)")


def split_columns(bracket: Token, text: str) -> tuple[str, ...]:
    """``[a, `b c`]`` as column names (PARTITION BY and WITHIN brackets)."""
    inner = bracket.value[1:-1]
    names, pos = [], 0
    while True:
        m = _COLUMN_ITEM.match(inner, pos)
        name = m.group(1) if m else ""
        at = bracket.start_pos + 1 + (m.start(1) if m else pos)
        if not m or not re.fullmatch(r"`(?:[^`]|``)+`|[^\W\d]\w*", name):
            shown = name or inner[pos:].strip()
            raise ParseError.at(text, at, f"Expected a column name in brackets, got {shown!r}",
                                "EXPECTED_COLUMN", "write [col] or [col1, col2]")
        names.append(unquote(name))
        if m.group(2) != ",":
            return tuple(names)
        pos = m.end()


def _number(token: Token, text: str, what: str, integer: bool = False):
    raw = token.value
    try:
        value = Decimal(raw)
    except InvalidOperation:  # pragma: no cover - the lexer only passes numbers
        raise ParseError.at(text, token.start_pos, f"Invalid number {raw!r}", "INVALID_NUMBER")
    if integer and value != value.to_integral_value():
        raise ParseError.at(text, token.start_pos, f"{what} must be a whole number, got {raw}",
                            "EXPECTED_INTEGER", f"write {what} with a whole number, e.g. {int(value)}")
    if value == value.to_integral_value() and "e" not in raw.lower() and "." not in raw:
        return int(value)
    return float(value) if not integer else int(value)


def duration_micros(parts: list[tuple[Decimal, str]], text: str, at: int) -> int:
    """Sum of ``n unit`` parts in microseconds; a fraction of a microsecond is an error."""
    total = Decimal(0)
    for amount, unit in parts:
        key = unit.lower().rstrip("s")
        total += amount * MICROS_PER_UNIT[key]
    if total != total.to_integral_value():
        raise ParseError.at(text, at, "A window must be a whole number of microseconds", "INVALID_WINDOW")
    return int(total)


class _ToAst(Transformer):
    """One method per grammar rule; see ceql.lark."""

    def __init__(self, text: str):
        super().__init__(visit_tokens=False)
        self.text = text

    # -- names
    def ident(self, children):
        return unquote(children[0].value)

    def dotted_name(self, children):
        return ".".join(children)

    # -- query
    @v_args(meta=True)
    def start(self, meta, children):
        if len(children) == 2:
            view, select = children
            return ast.CreateView(view[0], select, view[1], _span(meta))
        return children[0]

    def create_view(self, children):
        replace = any(isinstance(c, tuple) and c == ("or_replace",) for c in children)
        name = [c for c in children if isinstance(c, str) and not isinstance(c, Token)][0]
        return (name, replace)

    def or_replace(self, children):
        return ("or_replace",)

    @v_args(meta=True)
    def select(self, meta, children):
        kw = {}
        for child in children:
            key, value = child
            kw[key] = value
        return ast.Select(
            projection=kw["projection"],
            sources=kw["sources"],
            pattern=kw["where"],
            strategy=kw.get("strategy", "ALL"),
            partition_by=kw.get("partition", ()),
            order_by=kw.get("order", ()),
            within=kw.get("within"),
            consume=kw.get("consume", "NONE"),
            limit=kw.get("limit"),
            span=_span(meta),
        )

    def strategy(self, children):
        return ("strategy", children[0].value.upper())

    @v_args(meta=True)
    def star(self, meta, children):
        return ("projection", ast.Star(_span(meta)))

    def items(self, children):
        return ("projection", tuple(children))

    @v_args(meta=True)
    def select_item(self, meta, children):
        start, end = children[0]
        alias = children[1] if len(children) > 1 else None
        return sqlexpr.parse_select_item(self.text[start:end], start, self.text, alias, _span(meta))

    def sources(self, children):
        return ("sources", tuple(children))

    @v_args(meta=True)
    def source(self, meta, children):
        name = children[0]
        alias = typed_by = None
        for child in children[1:]:
            if isinstance(child, tuple):
                typed_by = child[1]
            else:
                alias = child
        return ast.Source(name, alias, typed_by, _span(meta))

    def typed_by(self, children):
        return ("typed_by", children[0])

    def where(self, children):
        return ("where", children[0])

    # -- pattern
    @v_args(meta=True)
    def atom(self, meta, children):
        if len(children) == 2:
            return ast.Atom(children[1], children[0], _span(meta))
        return ast.Atom(children[0], None, _span(meta))

    @v_args(meta=True)
    def as_(self, meta, children):
        return ast.As(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def plus(self, meta, children):
        return ast.KleenePlus(children[0], _span(meta))

    @v_args(meta=True)
    def contiguous_plus(self, meta, children):
        return ast.ContiguousPlus(children[0], _span(meta))

    @v_args(meta=True)
    def seq(self, meta, children):
        return ast.Seq(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def contiguous(self, meta, children):
        return ast.Contiguous(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def or_(self, meta, children):
        return ast.Or(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def and_(self, meta, children):
        return ast.And(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def all_(self, meta, children):
        return ast.All(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def unless(self, meta, children):
        return ast.Unless(children[0], children[1], _span(meta))

    @v_args(meta=True)
    def not_(self, meta, children):
        """``NOT (T)`` or ``NOT (T FILTER T[p] ...)``: one atom, with conditions on that event only."""
        inner = children[0]
        atom, condition = inner, None
        if isinstance(inner, ast.Filter):
            atom, condition = inner.pattern, inner.condition
        if not isinstance(atom, ast.Atom):
            at = inner.span.start if inner.span else meta.start_pos
            raise ParseError.at(self.text, at, "NOT applies to one event type, not to a pattern", "NOT_OF_PATTERN",
                                "write NOT (T) or NOT (T FILTER T[x > 1]); to rule out a pattern inside a "
                                "result's interval, write p UNLESS q")
        if condition is not None:
            for leaf in ast.walk(condition):
                if isinstance(leaf, ast.CrossPredicate) or (
                        isinstance(leaf, ast.VarPredicate) and leaf.var != atom.type):
                    at = leaf.span.start if leaf.span else meta.start_pos
                    raise ParseError.at(self.text, at, f"A FILTER inside NOT tests the event of {atom.type} only",
                                        "NOT_OF_PATTERN", f"write NOT ({atom.type} FILTER {atom.type}[x > 1])")
        return ast.Not(atom, condition, _span(meta))

    @v_args(meta=True)
    def filter(self, meta, children):
        pattern, (start, end) = children
        condition = sqlexpr.parse_condition(self.text[start:end], start, self.text)
        return ast.Filter(pattern, condition, _span(meta))

    # -- Spark SQL fragments: keep only where they are
    @v_args(meta=True)
    def sql_item(self, meta, children):
        return (meta.start_pos, meta.end_pos)

    sql_filter = sql_item

    # -- clauses
    def partition(self, children):
        if children and isinstance(children[0], Token):
            cols = tuple(c for b in children for c in self._keys(b))
        else:
            cols = tuple(children)
        return ("partition", cols)

    def order(self, children):
        return ("order", tuple(k for keys in children for k in keys))

    def order_key(self, children):
        if len(children) == 2 and children[1].value.upper() == "DESC":
            raise ParseError.at(self.text, children[1].start_pos, "ORDER BY ... DESC is not supported",
                                "DESC_ORDER", "events are matched in ascending order; drop DESC")
        key = children[0]
        return self._keys(key) if isinstance(key, Token) and key.type == "BRACKET" else (key,)

    def _keys(self, bracket: Token) -> tuple[ast.Key, ...]:
        """A PARTITION BY / ORDER BY bracket: column names, or Spark SQL expressions."""
        try:
            return split_columns(bracket, self.text)
        except ParseError as err:
            if err.error_class != "EXPECTED_COLUMN":
                raise
        span = ast.Span(bracket.start_pos, bracket.end_pos, bracket.line, bracket.column)
        return sqlexpr.parse_keys(bracket.value[1:-1], bracket.start_pos + 1, self.text, span)

    def within(self, children):
        return ("within", children[0])

    @v_args(meta=True)
    def events_window(self, meta, children):
        n = _number(children[0], self.text, "WITHIN ... EVENTS", integer=True)
        return ast.EventsWindow(n, _span(meta))

    @v_args(meta=True)
    def time_window(self, meta, children):
        parts = children[0]
        column = None
        if len(children) > 1:
            column = self._one_column(children[1])
        return ast.TimeWindow(duration_micros(parts, self.text, meta.start_pos), column, _span(meta))

    def duration(self, children):
        return [(Decimal(n.value), u.value) for n, u in zip(children[::2], children[1::2])]

    @v_args(meta=True)
    def interval_window(self, meta, children):
        string, rest = children[0], children[1:]
        unit = rest[0] if rest and rest[0].type == "UNIT" else None
        bracket = rest[-1] if rest and rest[-1].type == "BRACKET" else None
        body = string.value[1:-1].strip()
        words = body.split()
        try:
            if unit is not None:
                if len(words) != 1:
                    raise ValueError
                parts = [(Decimal(words[0]), unit.value)]
            else:
                if not words or len(words) % 2:
                    raise ValueError
                parts = [(Decimal(n), u) for n, u in zip(words[::2], words[1::2])]
                for _, u in parts:
                    if u.lower().rstrip("s") not in MICROS_PER_UNIT:
                        raise ValueError
        except (ValueError, InvalidOperation):
            raise ParseError.at(self.text, string.start_pos, f"Invalid interval {string.value}",
                                "INVALID_WINDOW", "write INTERVAL '5' MINUTE or INTERVAL '1 minute 30 seconds'")
        for amount, _ in parts:
            if amount < 0:
                raise ParseError.at(self.text, string.start_pos, "A window cannot be negative", "INVALID_WINDOW")
        column = self._one_column(bracket) if bracket is not None else None
        return ast.TimeWindow(duration_micros(parts, self.text, meta.start_pos), column, _span(meta))

    @v_args(meta=True)
    def column_window(self, meta, children):
        amount = _number(children[0], self.text, "WITHIN n [column]")
        return ast.ColumnWindow(amount, self._one_column(children[1]), _span(meta))

    def _one_column(self, bracket: Token) -> str:
        cols = split_columns(bracket, self.text)
        if len(cols) != 1:
            raise ParseError.at(self.text, bracket.start_pos, "WITHIN takes one column in brackets",
                                "INVALID_WINDOW", "write WITHIN 10 [ts]")
        return cols[0]

    def consume(self, children):
        return ("consume", children[0].value.upper())

    def limit(self, children):
        return ("limit", _number(children[0], self.text, "LIMIT", integer=True))


# Names of grammar terminals as users know them, for "expected ..." hints.
_TERMINAL_NAMES = {
    "NAME": "a name", "QNAME": "a `quoted name`", "NUMBER": "a number", "STRING": "a string",
    "BRACKET": "[...]", "STAR": "*", "LPAR": "(", "RPAR": ")", "SEMICOLON": ";", "COLON": ":",
    "PLUS": "+", "COMMA": ",", "MORETHAN": ">", "UNIT": "a time unit", "EVENTS": "EVENTS",
    "STRATEGY": "a selection strategy", "CONSUME_POLICY": "ANY, PARTITION or NONE",
    "DIRECTION": "ASC", "TEMP": "TEMP", "OPERATOR": "an operator", "DOT": ".",
    "__ANON_0": ":+", "LBRACE": "{", "RBRACE": "}",
}


def _expected(exc: UnexpectedInput) -> str:
    names = set()
    for term in sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()):
        if term.startswith("SQL_") or term in ("OPERATOR", "LBRACE", "DOT", "STAR"):
            continue
        names.add(_TERMINAL_NAMES.get(term, term.upper()))
    return ", ".join(sorted(names)[:8])


# Common mistakes, recognized by where the parser stopped (lark's match_examples).
_EXAMPLES = {
    "MISSING_FROM": ["SELECT * WHERE A", "SELECT a WHERE A AS a"],
    "MISSING_WHERE": ["SELECT * FROM s", "SELECT * FROM s PARTITION BY [x]", "SELECT * FROM s WITHIN 1 EVENTS"],
    "EMPTY_PATTERN": ["SELECT * FROM s WHERE"],
    "DANGLING_OPERATOR": ["SELECT * FROM s WHERE A OR", "SELECT * FROM s WHERE A ; ; B",
                          "SELECT * FROM s WHERE A :", "SELECT * FROM s WHERE A AS"],
    "UNBALANCED_PARENTHESES": ["SELECT * FROM s WHERE (A ; B", "SELECT * FROM s WHERE A ; B)"],
    "PATTERN_AFTER_FILTER": ["SELECT * FROM s WHERE A FILTER A[x > 1] ; B",
                             "SELECT * FROM s WHERE A FILTER A[x > 1] AS a",
                             "SELECT * FROM s WHERE A FILTER A[x > 1] : B"],
    "BRACKET_ON_ATOM": ["SELECT * FROM s WHERE A[x > 1]", "SELECT * FROM s WHERE A ; B[x > 1]"],
    # the mistakes of SQL and MATCH_RECOGNIZE users; parser/teach.py writes their hints from the text
    "QUANTIFIER_NOT_SUPPORTED": ["SELECT * FROM s WHERE A{3}", "SELECT * FROM s WHERE A ; B{3}",
                                 "SELECT * FROM s WHERE A*", "SELECT * FROM s WHERE A?", "SELECT * FROM s WHERE (A){3}"],
    "CONDITION_IN_WHERE": ["SELECT * FROM s WHERE x = 1", "SELECT * FROM s WHERE x > 1",
                           "SELECT * FROM s WHERE A AS a AND a.x > 1"],
    "BAD_WINDOW": ["SELECT * FROM s WHERE A WITHIN", "SELECT * FROM s WHERE A WITHIN 5",
                   "SELECT * FROM s WHERE A WITHIN 5 weeks", "SELECT * FROM s WHERE A WITHIN x",
                   "SELECT * FROM s WHERE A WITHIN INTERVAL '1' WEEK",
                   "SELECT * FROM s WHERE A WITHIN 5 EVENTS [ts]"],
    "BAD_LIMIT": ["SELECT * FROM s WHERE A LIMIT", "SELECT * FROM s WHERE A LIMIT x"],
    "BAD_CONSUME": ["SELECT * FROM s WHERE A CONSUME BY", "SELECT * FROM s WHERE A CONSUME BY ALL"],
    "CLAUSE_ORDER": ["SELECT * FROM s WHERE A WITHIN 1 EVENTS PARTITION BY [x]",
                     "SELECT * FROM s WHERE A LIMIT 1 WITHIN 1 EVENTS",
                     "SELECT * FROM s WHERE A ORDER BY ts PARTITION BY [x]"],
}

_HINTS = {
    "MISSING_FROM": "a query reads SELECT ... FROM source WHERE pattern",
    "MISSING_WHERE": "a CEQL query needs a pattern: SELECT ... FROM source WHERE pattern",
    "EMPTY_PATTERN": "write a pattern after WHERE, e.g. WHERE SELL AS s ; BUY+ AS b",
    "DANGLING_OPERATOR": "an operator is missing its operand",
    "UNBALANCED_PARENTHESES": "check that every ( has its )",
    "PATTERN_AFTER_FILTER": "FILTER covers everything to its left; put the filtered part in parentheses: (p FILTER f) ; q",
    "STRATEGY_IN_PATTERN": "selection strategies go right after SELECT (SELECT MAX * ...); they apply only at the top level",
    "BRACKET_ON_ATOM": "predicates go in a FILTER after the pattern: A AS a FILTER a[x > 1]",
    "BAD_WINDOW": "write WITHIN n EVENTS, WITHIN n MINUTES (MILLISECONDS, SECONDS, HOURS, DAYS), WITHIN INTERVAL '5' MINUTE or WITHIN n [column]",
    "BAD_LIMIT": "write LIMIT n with a whole number n >= 0",
    "BAD_CONSUME": "write CONSUME BY ANY, CONSUME BY PARTITION or CONSUME BY NONE",
    "CLAUSE_ORDER": "clauses come in this order: WHERE, PARTITION BY, ORDER BY, WITHIN, CONSUME BY, LIMIT",
    "QUANTIFIER_NOT_SUPPORTED": "CEQL has + and :+ (one or more); for a count, name the events and count them: "
                                "(F :+ AS f FILTER count(f) >= 3)",
    "CONDITION_IN_WHERE": "WHERE takes a pattern; conditions go in FILTER after it: WHERE s AS x FILTER x[amount > 10]",
    "KEY_EXPRESSION_WITHOUT_BRACKETS": "a key expression goes in brackets: ORDER BY [to_timestamp(t)], "
                                       "PARTITION BY [upper(name) AS sym]",
}


#: Labels whose errors only parser/teach.py words (from the query's own text).
_TAUGHT = ("QUANTIFIER_NOT_SUPPORTED", "CONDITION_IN_WHERE")


def _classify(exc: UnexpectedInput, text: str) -> str | None:
    try:
        return exc.match_examples(_parser().parse, _EXAMPLES, use_accepts=True)
    except Exception:  # pragma: no cover - classification is best effort
        return None


_CLAUSE_WORD = re.compile(r"(?i)\b(partition|order|within|consume|limit)\s*$")
_STRATEGY_WORD = re.compile(r"(?i)\b(all|any|next|last|max|strict)\s*$")
_AFTER_WHERE = re.compile(r"(?i)\bwhere\s*$")
_AFTER_OPERATOR = re.compile(r"(?i)(;|:\+?|\bor|\bas|\()\s*$")
_NO_PROJECTION = re.compile(r"(?is)^\s*(?:create\b.*?\bas\s+)?select\s+(?:(?:all|any|next|last|max|strict)\s+)?(from)\b")
_COMMA_BEFORE_FROM = re.compile(r"(?is),\s*(from)\b")


_LAST_FILTER = re.compile(r"(?is)\bfilter\b(?!.*\bfilter\b)")
_KEY_NAMES = re.compile(r"(?is)\b(?:partition|order)\s+by\s+(?:[\w`]+(?:\s+asc)?\s*,\s*)*([\w`]+)\s*$")


def _reinterpret(text: str, offset: int) -> tuple[str, int] | None:
    """Mistakes the contextual lexer hides: a word the parser took for an event type or a
    SELECT expression was really a clause keyword or strategy; a key expression outside
    brackets (``ORDER BY upper(x)``). Returns (label, offset)."""
    head = text[:offset]
    if text[offset:offset + 1] in ("(", "+", "-", "*", "/", "|", ".") and (m := _KEY_NAMES.search(head)):
        return "KEY_EXPRESSION_WITHOUT_BRACKETS", m.start(1)
    if m := _NO_PROJECTION.match(text):
        return "SYNTAX_ERROR", m.start(1)
    if (m := _COMMA_BEFORE_FROM.search(text)) and m.start(1) <= offset and "where" not in text[:m.start()].lower():
        return "SYNTAX_ERROR", m.start(1)
    if (m := _LAST_FILTER.search(head)) and (word := sqlexpr.pattern_word(head[m.end():])):
        return "PATTERN_AFTER_FILTER", m.end() + word[0]
    if m := _CLAUSE_WORD.search(head):
        before = head[: m.start()]
        if _AFTER_WHERE.search(before):
            return "EMPTY_PATTERN", m.start()
        if _AFTER_OPERATOR.search(before):
            return "DANGLING_OPERATOR", m.start()
    if m := _STRATEGY_WORD.search(head):
        before = head[: m.start()]
        if _AFTER_WHERE.search(before) or _AFTER_OPERATOR.search(before):
            return "STRATEGY_IN_PATTERN", m.start()
    return None


def _syntax_error(exc: UnexpectedInput, text: str) -> ParseError:
    label = _classify(exc, text)
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        offset = len(text.rstrip())
        found = "end of query"
    elif isinstance(exc, UnexpectedCharacters):
        offset = exc.pos_in_stream
        found = repr(text[offset])
    else:
        offset = exc.token.start_pos if exc.token.start_pos is not None else len(text)
        found = repr(exc.token.value)
    fixed = _reinterpret(text, offset)
    if fixed is None and (lesson := teach.lesson(text, offset, label)) is not None:
        return ParseError.at(text, lesson.offset, lesson.message, lesson.error_class, lesson.hint,
                             expected=_expected(exc))
    if label in _TAUGHT:  # an example of the same parser state, but not the mistake it shows
        label = None
    if fixed is not None:
        label, offset = fixed
        word = re.match(r"\w+", text[offset:])
        found = repr(word.group(0) if word else text[offset:offset + 1])
        if label == "STRATEGY_IN_PATTERN":
            found = f"selection strategy {word.group(0).upper()} inside the pattern"
    elif label == "STRATEGY_IN_PATTERN":
        label = None
    expected = _expected(exc)
    hint = _HINTS.get(label) if label else None
    if hint is None and expected:
        hint = f"expected {expected}"
    message = f"Syntax error: {found}" if label == "STRATEGY_IN_PATTERN" else f"Syntax error: unexpected {found}"
    if label == "KEY_EXPRESSION_WITHOUT_BRACKETS":
        message = f"Syntax error: an expression as a key needs brackets, at {found}"
    return ParseError.at(text, offset, message, label or "SYNTAX_ERROR", hint, expected=expected)


#: What Spark's parser substitutes (``spark.sql.variable.substitute``: ``${var}``, ``${env:HOME}``,
#: Spark's ConfigReader pattern) in every SQL text it parses, cer_sql's fragments included.
VARIABLE_REFERENCE = re.compile(r"\$\{(?:\w+?:)?\S+?\}")


def check_variables(text: str) -> None:
    """Refuse ``${...}``: Spark would substitute a conf or environment value into the fragments
    it parses and the local engines have none, so the engines would disagree on the same text."""
    found = VARIABLE_REFERENCE.search(text)
    if found:
        raise UnsupportedError.at(
            text, found.start(), f"'{found.group()}' is a Spark variable reference, which cerql does not substitute",
            "VARIABLE_SUBSTITUTION_NOT_SUPPORTED",
            "put the value into the query text before the query runs (an f-string in Python); for the "
            "characters themselves in a string, write concat('$', '{...}')", reference=found.group())


def parse(text: str) -> ast.Query:
    """Parse CEQL text into a :class:`cerql.ast.Select` or :class:`cerql.ast.CreateView`."""
    body = re.sub(r"[\s;]+$", "", text)
    if not body.strip():
        raise ParseError.at(text, 0, "Empty query", "EMPTY_QUERY", "write SELECT ... FROM source WHERE pattern")
    check_variables(body)
    check_parentheses(body)
    try:
        tree = _parser().parse(body)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    check_depth(tree, text)
    with room_to_recurse(text):  # the transformer and sqlglot recurse as deep as the query nests
        try:
            return _ToAst(text).transform(tree)
        except VisitError as exc:
            if isinstance(exc.orig_exc, CeqlError):
                raise _taught(exc.orig_exc.with_text(text), text) from None
            raise


def _taught(err: CeqlError, text: str) -> CeqlError:
    """A Spark SQL fragment that would not parse because the query is SQL or MATCH_RECOGNIZE
    (``SELECT NEXTT *``, ``FILTER a[x > 1] GROUP BY x``): the lesson for it, else ``err``."""
    if err.error_class != "INVALID_SQL_EXPRESSION" or err.line is None or err.column is None:
        return err
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[:err.line - 1]) + err.column - 1
    lesson = teach.lesson(text, offset, teach.FRAGMENT)
    if lesson is None:
        return err
    return ParseError.at(text, lesson.offset, lesson.message, lesson.error_class, lesson.hint)
