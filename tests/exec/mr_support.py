"""Stand-ins for the MATCH_RECOGNIZE engine's tests: a clause builder (a tiny reader of the
row pattern and sqlglot for the expressions, in the shapes cerql/mr_ast.py fixes) and a
backtracking matcher that follows the preference rules of docs/semantics.md directly."""

from __future__ import annotations

import itertools
import re

import numpy as np
import sqlglot
from sqlglot import exp

from cerql import mr_ast
from cerql.ast import Span, SqlExpr
from cerql.errors import ExecutionError

_TOKEN = re.compile(r"\s*(\{-|-\}|\{\s*\d*\s*(?:,\s*\d*\s*)?\}|PERMUTE\b|[A-Za-z_][A-Za-z_0-9]*|[()|*+?^$,])")


def read_pattern(text: str) -> mr_ast.RowPattern:
    """The row pattern ``text`` (concatenation, |, ( ), quantifiers with ?, {- -}, ^ $, PERMUTE)."""
    tokens = []
    pos = 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        assert m, text[pos:]
        tokens.append(m.group(1))
        pos = m.end()
    tokens.append(None)
    at = [0]

    def peek():
        return tokens[at[0]]

    def take():
        at[0] += 1
        return tokens[at[0] - 1]

    def alternation():
        options = [concat()]
        while peek() == "|":
            take()
            options.append(concat())
        return options[0] if len(options) == 1 else mr_ast.Alternation(tuple(options))

    def concat():
        items = []
        while peek() not in (None, "|", ")", "-}", ","):
            items.append(quantified())
        if not items:
            return mr_ast.EmptyPattern()
        return items[0] if len(items) == 1 else mr_ast.Concat(tuple(items))

    def quantified():
        p = primary()
        while peek() is not None and (peek() in "*+?" or peek().startswith("{") and peek() != "{-"):
            tok = take()
            if tok == "*":
                lo, hi = 0, None
            elif tok == "+":
                lo, hi = 1, None
            elif tok == "?":
                lo, hi = 0, 1
            else:
                inner = tok[1:-1].replace(" ", "")
                if "," in inner:
                    a, b = inner.split(",")
                    lo, hi = int(a or 0), (int(b) if b else None)
                else:
                    lo = hi = int(inner)
            greedy = True
            if peek() == "?":
                take()
                greedy = False
            p = mr_ast.Quantified(p, lo, hi, greedy)
        return p

    def primary():
        tok = take()
        if tok == "(":
            p = alternation()
            assert take() == ")"
            return p
        if tok == "{-":
            p = alternation()
            assert take() == "-}"
            return mr_ast.Exclusion(p)
        if tok in ("^", "$"):
            return mr_ast.Anchor(tok == "^")
        if tok == "PERMUTE":
            assert take() == "("
            items = [alternation()]
            while peek() == ",":
                take()
                items.append(alternation())
            assert take() == ")"
            return mr_ast.Permute(tuple(items))
        return mr_ast.PatternVar(tok)

    p = alternation()
    assert peek() is None, tokens[at[0]:]
    return p


_HIDDEN = {"FIRS_": "FIRST", "LAS_": "LAST"}  # same lengths: sqlglot's First/Last would drop the offset


def _parse(text: str) -> exp.Expression:
    """``text`` with FIRST/LAST as the calls of cerql/mr_ast.py, positions kept."""
    hidden = re.sub(r"\b(FIRST|LAST)(\s*\()", lambda m: {"FIRST": "FIRS_", "LAST": "LAS_"}[m.group(1).upper()]
                    + m.group(2), text, flags=re.IGNORECASE)
    tree = sqlglot.parse_one(hidden, read="spark")
    for node in tree.find_all(exp.Anonymous):
        if str(node.this).upper() in _HIDDEN:
            node.set("this", _HIDDEN[str(node.this).upper()])
    return tree


class Query:
    """Builds the text of a clause piece by piece, with every expression at its offset in it."""

    def __init__(self):
        self.text = ""

    def add(self, text: str) -> int:
        at = len(self.text)
        self.text += text
        return at

    def expr(self, text: str) -> SqlExpr:
        at = self.add(text)
        tree = _parse(text)
        return SqlExpr(tree.sql(dialect="spark"), tree, text, at, Span(at, at + len(text), 1, at + 1))


def clause(pattern: str, define: dict[str, str] | None = None, measures: dict[str, str] | None = None,
           rows: str = mr_ast.ONE_ROW, skip: str = mr_ast.PAST_LAST_ROW, skip_to: str | None = None,
           partition_by=(), order_by=("row",), subsets: dict[str, tuple[str, ...]] | None = None):
    """(the clause, its text). ``order_by`` items may end in DESC and NULLS FIRST/LAST."""
    q = Query()
    q.add("SELECT * FROM t MATCH_RECOGNIZE (")
    parts = []
    if partition_by:
        q.add("PARTITION BY ")
        for i, p in enumerate(partition_by):
            parts.append(q.expr(p))
            q.add(", " if i < len(partition_by) - 1 else " ")
    keys = []
    if order_by:
        q.add("ORDER BY ")
        for item in order_by:
            words = item.split()
            key = q.expr(words[0])
            upper = [w.upper() for w in words[1:]]
            nulls = None
            if "NULLS" in upper:
                nulls = upper[upper.index("NULLS") + 1] == "FIRST"
            q.add(" " + " ".join(words[1:]) + " ")
            keys.append(mr_ast.SortKey(key, "DESC" in upper, nulls))
    ms = []
    if measures:
        q.add("MEASURES ")
        for name, text in measures.items():
            start = len(q.text)
            e = q.expr(text)
            q.add(f" AS {name}, ")
            ms.append(mr_ast.Measure(e, name, Span(start, len(q.text), 1, start + 1)))
    rows_at = q.add(f"{rows} ")
    at = q.add(f"AFTER MATCH SKIP {skip} {skip_to or ''} ")
    after = mr_ast.AfterMatchSkip(skip, skip_to, Span(at, len(q.text), 1, at + 1))
    q.add(f"PATTERN ({pattern}) ")
    subs = []
    for name, members in (subsets or {}).items():
        at = q.add(f"SUBSET {name} = ({', '.join(members)}) ")
        subs.append(mr_ast.Subset(name, tuple(members), Span(at, len(q.text), 1, at + 1)))
    defs = []
    if define:
        q.add("DEFINE ")
        for var, text in define.items():
            at = q.add(f"{var} AS ")
            defs.append(mr_ast.Define(var, q.expr(text), Span(at, len(q.text), 1, at + 1)))
            q.add(", ")
    q.add(")")
    mode = mr_ast.ONE_ROW
    if rows.startswith("ALL"):
        mode = rows.replace("ALL ROWS PER MATCH", "").strip() or mr_ast.SHOW_EMPTY
    c = mr_ast.MatchRecognize("t", tuple(parts), tuple(keys), tuple(ms), mr_ast.RowsPerMatch(mode, Span(rows_at, rows_at + len(rows), 1, rows_at + 1)), after,
                              read_pattern(pattern), tuple(subs), tuple(defs))
    return c, q.text


class BacktrackMatcher:
    """Leftmost-first matching by backtracking over the pattern in preference order (the
    stand-in for the Pike-VM kernel): label v is variable v, label V + v variable v excluded."""

    def __init__(self, c: mr_ast.MatchRecognize):
        self.variables = [v.upper() for v in c.variables]
        v = len(self.variables)
        self.label_variable = np.concatenate([np.arange(v), np.arange(v)])
        self.label_excluded = np.array([False] * v + [True] * v)
        self.pattern = c.pattern
        self.skip = c.after_match
        self.subsets = {s.name.upper(): {x.upper() for x in s.variables} for s in c.subsets}

    def _run(self, p, bits, pos, labels, excluded):
        n = len(bits)
        if isinstance(p, mr_ast.PatternVar):
            v = self.variables.index(p.name.upper())
            if pos < n and (int(bits[pos]) >> v) & 1:
                yield pos + 1, labels + [v + (len(self.variables) if excluded else 0)]
        elif isinstance(p, mr_ast.Concat):
            yield from self._seq(p.items, bits, pos, labels, excluded)
        elif isinstance(p, mr_ast.Alternation):
            for option in p.options:
                yield from self._run(option, bits, pos, labels, excluded)
        elif isinstance(p, mr_ast.Permute):
            for order in itertools.permutations(p.items):
                yield from self._seq(order, bits, pos, labels, excluded)
        elif isinstance(p, mr_ast.Exclusion):
            yield from self._run(p.pattern, bits, pos, labels, True)
        elif isinstance(p, mr_ast.Anchor):
            if (p.start and pos == 0) or (not p.start and pos == n):
                yield pos, labels
        elif isinstance(p, mr_ast.EmptyPattern):
            yield pos, labels
        elif isinstance(p, mr_ast.Quantified):
            yield from self._loop(p, 0, bits, pos, labels, excluded)

    def _seq(self, items, bits, pos, labels, excluded):
        if not items:
            yield pos, labels
            return
        for p2, l2 in self._run(items[0], bits, pos, labels, excluded):
            yield from self._seq(items[1:], bits, p2, l2, excluded)

    def _loop(self, q, count, bits, pos, labels, excluded):
        def more():
            if q.max is None or count < q.max:
                for p2, l2 in self._run(q.pattern, bits, pos, labels, excluded):
                    if p2 == pos and count >= q.min:
                        yield p2, l2  # an empty iteration ends the loop, there, in its place of preference
                        continue
                    yield from self._loop(q, count + 1, bits, p2, l2, excluded)

        if q.greedy:
            yield from more()
            if count >= q.min:
                yield pos, labels
        else:
            if count >= q.min:
                yield pos, labels
            yield from more()

    def match(self, bits, partition=None):
        """The whole partition's matches, and its end as the Matcher protocol's ``head``."""
        starts, ends, labels = [], [], []
        s, n = 0, len(bits)
        while s < n:
            found = next(self._run(self.pattern, bits, s, [], False), None)
            if found is None:
                s += 1
                continue
            end, lab = found
            starts.append(s)
            ends.append(end)
            labels += lab
            if end == s:  # AFTER MATCH SKIP says where to resume after a non-empty match only
                s += 1
            elif self.skip.mode == mr_ast.PAST_LAST_ROW:
                s = end
            elif self.skip.mode == mr_ast.TO_NEXT_ROW:
                s = s + 1
            else:
                names = self.subsets.get(self.skip.variable.upper(), {self.skip.variable.upper()})
                at = [s + i for i, l in enumerate(lab) if self.variables[l % len(self.variables)] in names]
                if not at or (at[0] if self.skip.mode == mr_ast.TO_FIRST else at[-1]) == s:
                    raise ExecutionError("skip to the match's first row", error_class="AFTER_MATCH_SKIP_FAILED")
                s = at[0] if self.skip.mode == mr_ast.TO_FIRST else at[-1]
        return np.array(starts, np.int64), np.array(ends, np.int64), np.array(labels, np.int64), n
