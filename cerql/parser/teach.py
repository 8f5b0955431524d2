"""Syntax errors that teach: what a SQL or MATCH_RECOGNIZE user meant, and the CEQL that does it.

Input: the query text, the offset where parsing stopped and the label lark's example matching
gave it (parser/to_ast.py, ``_EXAMPLES``). Output: a :class:`Lesson` (error class, offset,
message, hint) or None. Each lesson says what cerql understood and writes the query again as
CEQL: ``WHERE amount > 10`` becomes ``WHERE s AS x FILTER x[amount > 10]``, ``F{3,}`` becomes
``(F :+ AS f FILTER count(f) >= 3)``, ``GROUP BY user`` becomes ``PARTITION BY [user]`` and
clauses out of order come back in the grammar's order (parser/ceql.lark, ``select``). A query
written with MATCH_RECOGNIZE's clauses (``WHERE PATTERN (A B) DEFINE ...``) is written again as
that dialect's item, ``FROM t MATCH_RECOGNIZE (...)``, which cerql also runs
(parser/match_recognize.py teaches the other way round). Only the error path calls this module,
so it never changes what a valid query means.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

#: The trailing clauses in the grammar's order (parser/ceql.lark, ``select``).
CLAUSE_ORDER = ("PARTITION BY", "ORDER BY", "WITHIN", "CONSUME BY", "LIMIT")
ORDER_TEXT = ("SELECT [strategy] ... FROM source [, source ...] WHERE pattern [FILTER condition] "
              "[PARTITION BY ...] [ORDER BY ...] [WITHIN ...] [CONSUME BY ...] [LIMIT n]")
STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
KEYWORDS = ("SELECT", "FROM", "WHERE", "FILTER", "PARTITION", "ORDER", "WITHIN", "CONSUME", "LIMIT",
            "UNLESS", "EVENTS", "INTERVAL", "TYPED")
_TYPE_COLUMNS = ("type", "event_type")


@dataclass(frozen=True)
class Lesson:
    error_class: str
    offset: int
    message: str
    hint: str


# ---------------------------------------------------------------------------- reading the text
_OPAQUE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/", re.S)


def masked(text: str) -> str:
    """``text`` with strings, quoted names, comments and the inside of [...] blanked (same
    length), so keywords are found only where they are keywords."""
    out = _OPAQUE.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1]
                      if len(m.group(0)) >= 2 and m.group(0)[0] in "'\"`" else " " * len(m.group(0)), text)
    chars, depth = list(out), 0
    for i, c in enumerate(out):
        if c == "]":
            depth = max(0, depth - 1)
        if depth:
            chars[i] = " "
        if c == "[":
            depth += 1
    return "".join(chars)


def _depths(text: str) -> list[int]:
    """Parenthesis depth at each character of (masked) text."""
    out, depth = [], 0
    for c in text:
        if c == ")":
            depth = max(0, depth - 1)
        out.append(depth)
        if c == "(":
            depth += 1
    return out


def _top_words(text: str, pattern: str, start: int = 0):
    """Matches of ``pattern`` (a regex of keywords) at parenthesis depth 0 of the masked text."""
    m_text = masked(text)
    depth = _depths(m_text)
    for m in re.finditer(pattern, m_text[start:], re.I):
        at = start + m.start()
        if depth[at] == 0:
            yield at, m


_CLAUSE_RE = r"\b(partition\s+by|order\s+by|within|consume\s+by|limit|group\s+by|having)\b"


@dataclass
class Parts:
    """A query cut at WHERE: ``head`` (up to and with WHERE), the pattern and the trailing
    clauses as (keyword, text) in the order written."""

    head: str
    pattern: str
    pattern_at: int
    clauses: list[tuple[str, str, int]]


def parts(text: str) -> Parts | None:
    where = next(_top_words(text, r"\bwhere\b"), None)
    if where is None:
        return None
    start = where[0] + len("where")
    found = list(_top_words(text, _CLAUSE_RE, start))
    # a FILTER's ORDER or WITHIN (Spark's WITHIN GROUP) is rare; a clause keyword starts a clause
    ends = [at for at, _ in found] + [len(text)]
    pattern = text[start:ends[0]]
    clauses = [(re.sub(r"\s+", " ", m.group(1)).upper(), text[at:ends[i + 1]].strip(), at)
               for i, (at, m) in enumerate(found)]
    return Parts(text[:start], pattern.strip(), start + len(pattern) - len(pattern.lstrip()), clauses)


def _bracketed(keys: str) -> str:
    keys = keys.strip()
    return keys if keys.startswith("[") else f"[{keys}]"


def rewritten(text: str, pattern: str | None = None) -> str | None:
    """The query with its trailing clauses in the grammar's order, GROUP BY as PARTITION BY and
    HAVING's condition in a FILTER (and ``pattern`` for the pattern, when given)."""
    p = parts(text)
    if p is None:
        return None
    pattern = p.pattern if pattern is None else pattern
    ranked: dict[str, str] = {}
    for keyword, clause, _ in p.clauses:
        body = clause[len(clause.split()[0]):].strip()
        if keyword in ("PARTITION BY", "ORDER BY", "CONSUME BY", "GROUP BY"):
            body = re.sub(r"(?i)^by\b", "", body).strip()
        if keyword == "HAVING":
            joined = " AND " if any(True for _ in _top_words(pattern, r"\bfilter\b")) else " FILTER "
            pattern = pattern + joined + body
            continue
        if keyword == "GROUP BY":
            keyword, body = "PARTITION BY", _bracketed(body)
        if keyword in ranked:
            return None
        ranked[keyword] = body
    tail = " ".join(f"{k} {ranked[k]}" for k in CLAUSE_ORDER if k in ranked)
    return f"{p.head.rstrip()} {pattern}" + (f" {tail}" if tail else "")


def _one_line(query: str) -> str:
    return re.sub(r"\s+", " ", query).strip()


def _word_at(text: str, offset: int) -> str:
    m = re.match(r"[^\W\d]\w*", text[offset:])
    return m.group(0) if m else ""


def _sources(text: str) -> list[str]:
    m = re.search(r"(?is)\bfrom\s+(.*?)(?:\bwhere\b|$)", masked(text))
    if not m:
        return []
    return [w.split()[0] for w in m.group(1).split(",") if w.split()]


# ---------------------------------------------------------------------------- the lessons
def condition_in_where(text: str, offset: int) -> Lesson | None:
    """``WHERE amount > 10``, ``WHERE type = 'A'``, ``WHERE A AS a AND a.x > 1``, a second WHERE:
    a condition where the pattern goes."""
    p = parts(text)
    if p is None:
        return None
    body = p.pattern
    # a condition after the pattern: its own WHERE, or AND (a pattern AND is followed by an atom)
    second = next(_top_words(body, r"\bwhere\b"), None)
    split = None
    if second is not None:
        split = (second[0], second[0] + 5)
    else:
        for at, m in _top_words(body, r"\b(and|or)\b"):
            rest = body[m.end():]
            if re.match(r"\s*(?:[\w`]+\s*\.\s*[\w`]+|[\w`]+\s*(?:=|!=|<>|<=|>=|<|>\s*[\d'\"(-]|\bin\b|\blike\b|"
                        r"\bbetween\b|\bis\b))", rest, re.I):
                split = (at, m.end())
                break
    if split is not None:
        pattern, condition = body[:split[0]].strip(), body[split[1]:].strip()
    else:
        pattern, condition = "", body
    if not re.search(r"=|<|>|!|\bin\b|\blike\b|\bbetween\b|\bis\b|\.|\w\[", masked(condition), re.I):
        return None
    sources = _sources(text)
    src = sources[0] if sources else "s"
    typed = re.fullmatch(r"(?i)`?(\w+)`?\s*(?:=|==)\s*'([^']*)'", condition)
    if pattern:
        var = re.findall(r"(?i)\bas\s+([\w`]+)", pattern)
        joined = " AND " if any(True for _ in _top_words(pattern, r"\bfilter\b")) else " FILTER "
        if re.search(r"[\w`]\s*(?:\.\s*[\w`]|\[)", condition) or not var:
            fixed_pattern = pattern + joined + condition
        else:
            fixed_pattern = pattern + joined + f"{var[-1]}[{condition}]"
        understood = "a condition after the pattern"
        what = "conditions on the pattern's events go in FILTER after it"
    elif typed and typed.group(1).lower() in _TYPE_COLUMNS and re.fullmatch(r"\w+", typed.group(2)):
        fixed_pattern = f"{typed.group(2)} AS x"
        understood = f"a comparison, '{condition}', where the pattern goes"
        what = f"an event type is matched by its name: the atom {typed.group(2)} is every row whose type is '{typed.group(2)}'"
    else:
        fixed_pattern = f"{src} AS x FILTER x[{condition}]"
        understood = f"a comparison, '{condition}', where the pattern goes"
        if re.match(r"\s*[\w`]+\s*>", condition):
            understood += f" (and '{condition.split('>')[0].strip()}>' as S>T, events of type T of source S)"
        what = (f"WHERE takes a pattern of events; a condition on columns goes in FILTER x[...], where "
                f"x names the events it tests (the source name {src} matches every row of {src})")
    fixed = rewritten(text, fixed_pattern)
    if fixed is None:
        return None
    return Lesson("CONDITION_IN_WHERE", offset, f"Syntax error: cerql read {understood}",
                  f"{what}; write: {_one_line(fixed)}")


_QUANTIFIER = re.compile(r"\{\s*(\d*)\s*(,?)\s*(\d*)\s*\}|\*|\?")


def _operand_before(text: str, offset: int) -> tuple[int, str] | None:
    """(start, text) of the atom or parenthesized group that ends right before ``offset``."""
    head = text[:offset].rstrip()
    if head.endswith(")"):
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            depth += (head[i] == ")") - (head[i] == "(")
            if depth == 0:
                return i, head[i:]
        return None
    m = re.search(r"(`(?:[^`]|``)+`|[^\W\d]\w*)(\s*>\s*(`(?:[^`]|``)+`|[^\W\d]\w*))?$", head)
    return (m.start(), m.group(0)) if m else None


def quantifier(text: str, offset: int) -> Lesson | None:
    """``F{3}``, ``F{3,}``, ``F{2,4}``, ``F*``, ``F?`` (regular expressions, MATCH_RECOGNIZE)."""
    q = _QUANTIFIER.match(text, offset)
    operand = _operand_before(text, offset)
    if q is None or operand is None:
        return None
    start, what = operand
    written = q.group(0)
    group = what.startswith("(")
    atom = what.split(">")[-1].strip().strip("`")
    var = atom.lower() if atom.lower() != atom else atom + "s"
    if not re.fullmatch(r"[^\W\d]\w*", var):
        var = "x"
    end = q.end()
    if (named := re.match(r"(?i)\s+as\s+(`(?:[^`]|``)+`|[^\W\d]\w*)", text[end:])) is not None:
        var, end = named.group(1), end + named.end()  # F{3} AS f: the count names f
    lo, comma, hi = (q.group(1), q.group(2), q.group(3)) if written.startswith("{") else ("", "", "")
    if written in ("*", "?") or lo in ("", "0") and written.startswith("{"):
        told = ("zero or more" if written == "*" else "zero or one" if written == "?" else f"{written}")
        one = what if written == "?" or hi == "1" else f"{what}+"
        hint = (f"CEQL has + (one or more, other events between) and :+ (one or more, back to back) but no "
                f"empty match: for {told}, write the pattern with {one} and the pattern without it, joined by "
                f"OR: X ; {what}{written} ; Y is (X ; {one} ; Y) OR (X ; Y)")
        if written.startswith("{") and hi:
            hint += f"; at most {hi}: ({what} :+ AS {var} FILTER count({var}) <= {hi})" if not group else ""
        return Lesson("QUANTIFIER_NOT_SUPPORTED", offset,
                      f"Syntax error: CEQL has no {written} quantifier (cerql read '{written[0]}' after {what})", hint)
    n, m = int(lo), (int(hi) if hi else None)
    if group:
        if not comma:
            fix = " ; ".join([what] * n)
        elif m is None:
            fix = " ; ".join([what] * (n - 1) + [f"{what}+"])
        else:
            fix = None
        hint = (f"repeat the group: {fix}" if fix else
                f"repeat the group, one pattern per count, joined by OR: "
                f"({' ; '.join([what] * n)}) OR ... OR ({' ; '.join([what] * m)})")
        hint += " (use : instead of ; for back-to-back repetitions)"
    else:
        if not comma:
            cond = f"count({var}) = {n}"
        elif m is None:
            cond = f"count({var}) >= {n}"
        else:
            cond = f"count({var}) >= {n} AND count({var}) <= {m}"
        fix = f"({what} :+ AS {var} FILTER {cond})"
        hint = (f"write {fix}: {what} :+ takes runs of back-to-back {atom} events and the FILTER counts them "
                f"({what}+ instead of {what} :+ lets other events lie between)")
        whole = text[:start] + fix + text[end:]
        hint += f"; the query: {_one_line(whole)}"
    return Lesson("QUANTIFIER_NOT_SUPPORTED", offset,
                  f"Syntax error: CEQL has no {{n,m}} quantifier: cerql read '{written}' after {what}", hint)


def group_by(text: str, offset: int) -> Lesson:
    fixed = rewritten(text)
    hint = ("to match within each group of rows, write PARTITION BY after the pattern; to aggregate over the "
            "matches, group the result (spark.sql or pandas' groupby)")
    if fixed:
        hint += f"; write: {_one_line(fixed)}"
    return Lesson("GROUP_BY_NOT_SUPPORTED", offset,
                  "Syntax error: CEQL has no GROUP BY: a query gives one row per match", hint)


def having(text: str, offset: int) -> Lesson:
    fixed = rewritten(text)
    hint = "conditions on a match, aggregates of its variables included, go in FILTER after the pattern"
    if fixed:
        hint += f"; write: {_one_line(fixed)}"
    return Lesson("HAVING_NOT_SUPPORTED", offset,
                  "Syntax error: CEQL has no HAVING: a query gives one row per match, with no groups", hint)


def join(text: str, offset: int) -> Lesson:
    m = re.search(r"(?is)\bfrom\s+([\w`.]+)(?:\s+(?:as\s+)?(?!join|left|right|inner|full|cross|natural|outer)"
                  r"[\w`]+)?\s+(?:(?:left|right|inner|full|cross|natural|outer)\s+)*join\s+([\w`.]+)", text)
    left, right = (m.group(1), m.group(2)) if m else ("s", "t")
    on = re.search(r"(?is)\bon\s+[\w`]+\.([\w`]+)\s*=\s*[\w`]+\.([\w`]+)", text)
    key = on.group(1) if on else "id"
    return Lesson("JOIN_NOT_SUPPORTED", offset,
                  "Syntax error: CEQL has no JOIN: FROM lists sources whose rows form one stream",
                  f"write FROM {left}, {right} (a union of their rows, by column name) and relate their events "
                  f"in the pattern: WHERE {left} AS x ; {right} AS y FILTER y.{key} = x.{key}, or match only "
                  f"events with equal {key}: ... PARTITION BY [{key}]")


# MATCH_RECOGNIZE's clauses in the order its item takes them (parser/match_recognize.py,
# CLAUSE_ORDER), each as the regex of its keyword: a CEQL query holding them is rewritten as the
# item they belong in.
_MR_CLAUSES = (
    ("PARTITION BY", r"\bpartition\s+by\b"), ("ORDER BY", r"\border\s+by\b"), ("MEASURES", r"\bmeasures\b"),
    ("ROWS PER MATCH", r"\b(?:one\s+row|all\s+rows)\s+per\s+match\b"), ("AFTER MATCH", r"\bafter\s+match\b"),
    ("PATTERN", r"\bpattern\s*\("), ("SUBSET", r"\bsubset\b"), ("DEFINE", r"\bdefine\b"),
)
_MR_MARKERS = r"\bmatch_recognize\b|\bdefine\b|\bmeasures\b|\bpattern\s*\(|\bafter\s+match\b|\brows?\s+per\s+match\b"


def as_match_recognize(text: str) -> str | None:
    """A CEQL query written with MATCH_RECOGNIZE's clauses (``SELECT * FROM t WHERE PATTERN (A B)
    DEFINE ...``, its PARTITION BY anywhere) as the MATCH_RECOGNIZE item they belong in:
    ``SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY ... PATTERN (A B) DEFINE ...)`` (with ALL ROWS
    PER MATCH when nothing else would give the result columns); None when
    the query is one already, or has no PATTERN."""
    if next(_top_words(text, r"\bmatch_recognize\b"), None) is not None:
        return None
    found = sorted((at, name) for name, regex in _MR_CLAUSES for at, _ in _top_words(text, regex))
    if not any(name == "PATTERN" for _, name in found):
        return None
    head_end = found[0][0]
    where = next(_top_words(text, r"\bwhere\b"), None)
    if where is not None and where[0] < head_end:
        if text[where[0] + len("where"):head_end].strip():
            return None  # a CEQL pattern in WHERE before the clauses: no one item to write
        head_end = where[0]
    clauses: dict[str, str] = {}
    for k, (at, name) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else len(text)
        body = re.sub(r"[\s;]+$", "", text[at:end])
        if name in clauses:
            return None
        clauses[name] = _one_line(body)
    if not {"PARTITION BY", "MEASURES", "ROWS PER MATCH"} & clauses.keys():
        clauses["ROWS PER MATCH"] = "ALL ROWS PER MATCH"  # else a match would be a row of no columns
    inside = " ".join(clauses[name] for name, _ in _MR_CLAUSES if name in clauses)
    return f"{_one_line(text[:head_end])} MATCH_RECOGNIZE ({inside})"


def match_recognize(text: str, offset: int) -> Lesson:
    """PATTERN, DEFINE, MEASURES (or MATCH_RECOGNIZE itself, given to a CEQL-only function) in a
    CEQL query: MATCH_RECOGNIZE is cerql's second dialect, written as a table in FROM."""
    src = (_sources(text) or ["s"])[0]
    found = sorted((at, name) for name, regex in _MR_CLAUSES for at, _ in _top_words(text, regex))
    where = next(_top_words(text, r"\bwhere\b"), None)
    if found and found[0][1] in ("PARTITION BY", "ORDER BY") and (where is None or found[0][0] < where[0]):
        offset = found[0][0]  # the item's clauses begin here, before the pattern
    ceql = (f"or, as CEQL, PATTERN (A B+) DEFINE B AS B.x > A.x reads SELECT * FROM {src} WHERE {src} AS a : "
            f"{src} :+ AS b FILTER b.x > a.x ORDER BY ts (an atom is an event type or a source name; ':' and "
            f"':+' keep rows adjacent as MATCH_RECOGNIZE does, ';' and '+' let other events lie between)")
    if next(_top_words(text, r"\bmatch_recognize\b"), None) is not None:
        return Lesson("MATCH_RECOGNIZE_SYNTAX_IN_CEQL", offset,
                      "Syntax error: this is a MATCH_RECOGNIZE query, and cerql.parse and cerql.analyze read CEQL",
                      f"run it with cerql.run, cerql.explain or spark.cer_sql, which read both dialects; {ceql}")
    fixed = as_match_recognize(text)
    shape = _one_line(fixed) if fixed else (f"SELECT * FROM {src} MATCH_RECOGNIZE ([PARTITION BY ...] ORDER BY ... "
                                            f"[MEASURES ...] PATTERN (...) DEFINE ...)")
    return Lesson("MATCH_RECOGNIZE_SYNTAX_IN_CEQL", offset,
                  "Syntax error: PATTERN, DEFINE and MEASURES are clauses of MATCH_RECOGNIZE, which is written "
                  f"as a table in FROM: FROM {src} MATCH_RECOGNIZE (...)",
                  f"write: {shape}; {ceql}")


def clause_order(text: str, offset: int) -> Lesson | None:
    p = parts(text)
    if p is None:
        return None
    ranks = [CLAUSE_ORDER.index(k) for k, _, _ in p.clauses if k in CLAUSE_ORDER]
    if ranks == sorted(ranks):
        return None
    here = next((k for k, _, at in p.clauses if at == offset), None)
    before = [k for k, _, at in p.clauses if at < offset and k in CLAUSE_ORDER]
    fixed = rewritten(text)
    hint = "clauses come in this order: WHERE, PARTITION BY, ORDER BY, WITHIN, CONSUME BY, LIMIT"
    if fixed:
        hint += f"; write: {_one_line(fixed)}"
    if here is None or not before:
        return None
    return Lesson("CLAUSE_ORDER", offset, f"Syntax error: {here} after {before[-1]}: the clauses after the pattern "
                  f"come in a fixed order", hint)


def alternation_bar(text: str, offset: int) -> Lesson | None:
    """``A | B`` (regular expressions, MATCH_RECOGNIZE): CEQL's alternation is OR."""
    if text[offset:offset + 1] != "|" or text[offset:offset + 2] == "||" or _operand_before(text, offset) is None:
        return None
    fixed = text[:offset] + "OR" + text[offset + 1:]
    return Lesson("ALTERNATION_BAR", offset, "Syntax error: '|' is no pattern operator in CEQL",
                  f"alternatives are written with OR; write: {_one_line(fixed)}")


def misspelled(text: str, offset: int) -> Lesson | None:
    """A word one or two letters off a keyword (``WITHN``, ``PARTITON``, ``SELECT NEXTT``)."""
    head = re.match(r"(?is)\s*select\s+([^\W\d]\w*)\s*(?=\*)", text)
    if head and head.group(1).upper() not in STRATEGIES:
        close = difflib.get_close_matches(head.group(1).upper(), STRATEGIES, n=1, cutoff=0.7)
        if close:
            fixed = text[:head.start(1)] + close[0] + text[head.end(1):]
            return Lesson("MISSPELLED_KEYWORD", head.start(1),
                          f"Syntax error: '{head.group(1)}' is no selection strategy; did you mean {close[0]}?",
                          f"the strategies are {', '.join(STRATEGIES)}; write: {_one_line(fixed)}")
    word = _word_at(text, offset)
    if not word or word.upper() in KEYWORDS:
        return None
    close = difflib.get_close_matches(word.upper(), KEYWORDS, n=1, cutoff=0.75)
    if not close:
        return None
    fixed = text[:offset] + close[0] + text[offset + len(word):]
    return Lesson("MISSPELLED_KEYWORD", offset, f"Syntax error: unexpected '{word}'; did you mean {close[0]}?",
                  f"write: {_one_line(fixed)}")


def missing_operator(text: str, offset: int) -> Lesson | None:
    """``A B`` (MATCH_RECOGNIZE's concatenation): two pattern parts with no operator between."""
    word = _word_at(text, offset)
    if not word or word.upper() in KEYWORDS + STRATEGIES or not re.search(r"(?i)(?:[\w`)+]|:\+)\s*$", text[:offset]) or re.search(
            r"(?i)\b(?:select|from|where|by|as|within|limit|filter)\s*$", text[:offset]):
        return None
    p = parts(text)
    if p is None or offset < p.pattern_at:
        return None
    fixed = text[:offset].rstrip() + " ; " + text[offset:]
    return Lesson("MISSING_OPERATOR", offset, f"Syntax error: no operator before '{word}'",
                  f"join the parts of a pattern with ';' (other events may lie between) or ':' (the very next "
                  f"event); write: {_one_line(fixed)}")


def not_without_parentheses(text: str, offset: int) -> Lesson | None:
    m = re.search(r"(?i)\bnot\s*$", text[:offset])
    word = _word_at(text, offset)
    if not m or not word:
        return None
    fixed = text[:offset] + f"({word})" + text[offset + len(word):]
    return Lesson("NOT_WITHOUT_PARENTHESES", offset, f"Syntax error: NOT takes its event type in parentheses",
                  f"write NOT ({word}); the query: {_one_line(fixed)}")


# ---------------------------------------------------------------------------- which lesson
_SQL_WORDS = [
    (r"\bgroup\s+by\b", group_by),
    (r"\bhaving\b", having),
    (_MR_MARKERS, match_recognize),
]
_JOIN = r"\b(?:(?:left|right|inner|full|cross|natural|outer)\s+)*join\b"


#: The label of an error inside a Spark SQL fragment (a FILTER or a SELECT item that would not parse).
FRAGMENT = "INVALID_SQL_EXPRESSION"


def lesson(text: str, offset: int, label: str | None) -> Lesson | None:
    """The lesson for a syntax error at ``offset`` (``label``: what the examples matched, or
    FRAGMENT), or None."""
    try:
        return _lesson(text, offset, label)
    except Exception:  # pragma: no cover - a lesson is best effort; the plain error stays
        return None


def _lesson(text: str, offset: int, label: str | None) -> Lesson | None:
    m_text = masked(text)
    # SQL's clauses and MATCH_RECOGNIZE anywhere in the query: the first one written
    found = []
    for regex, teach in _SQL_WORDS:
        hit = next(_top_words(text, regex), None)
        if hit is not None:
            found.append((hit[0], teach))
    where = next(_top_words(text, r"\bwhere\b"), None)
    join_at = next(_top_words(text, _JOIN), None)
    if join_at is not None and (where is None or join_at[0] < where[0]):
        found.append((join_at[0], join))
    if found:
        at, teach = min(found, key=lambda f: f[0])
        return teach(text, at)
    if (spelled := misspelled(text, offset)) is not None and spelled.offset != offset:
        return spelled  # SELECT NEXTT *: the error is further on
    if label == FRAGMENT:  # a Spark SQL fragment ran into the rest of the query: a second WHERE only
        wheres = list(_top_words(text, r"\bwhere\b"))
        return condition_in_where(text, wheres[1][0]) if len(wheres) > 1 else None
    if label == "QUANTIFIER_NOT_SUPPORTED" or _QUANTIFIER.match(text, offset) and _operand_before(text, offset):
        if (q := quantifier(text, offset)) is not None:
            return q
    if (order := clause_order(text, offset)) is not None and _word_at(text, offset).upper() in (
            "PARTITION", "ORDER", "WITHIN", "CONSUME", "LIMIT"):
        return order
    if label in ("CONDITION_IN_WHERE", "BRACKET_ON_ATOM", None, "SYNTAX_ERROR") and where is not None \
            and offset > where[0]:
        if m_text[offset:offset + 1] != "[" and (cond := condition_in_where(text, offset)) is not None:
            return cond
    if (bar := alternation_bar(text, offset)) is not None:
        return bar
    if (n := not_without_parentheses(text, offset)) is not None:
        return n
    if spelled is not None:
        return spelled
    if label in (None, "SYNTAX_ERROR", "CONDITION_IN_WHERE", "QUANTIFIER_NOT_SUPPORTED") and (
            missing := missing_operator(text, offset)) is not None:
        return missing
    return None
