"""RLIKE's Java regular expressions as the RE2 expressions Arrow runs.

Spark matches RLIKE with java.util.regex; Arrow with RE2, which reads some constructs otherwise
(``.``, ``$``, ``\\s``) and lacks others. :func:`_java_regex` translates a pattern into RE2 that
matches the same strings, or refuses it: a module of its own because it is a small parser with
nothing else of the string family in it.
"""

from __future__ import annotations

import re

from cerql.expr.errors import _unsupported


_JAVA_SPACE = " \\t\\n\\x0B\\f\\r"
_LINE_END = "\\n\\r\\x{85}\\x{2028}\\x{2029}"


def _java_regex(node, pattern: str) -> str:
    """A Java regular expression (Spark's RLIKE) as the RE2 expression Arrow runs, matching the
    same strings: ``.`` excludes every Java line terminator, ``$`` also matches before a final
    one, ``\\s`` is Java's six characters. Constructs RE2 reads otherwise or lacks (lookaround,
    backreferences, possessive quantifiers, inline flags, nested or intersected classes, \\b,
    \\p{...}, \\Q...\\E) are refused."""

    def refuse(what: str):
        return _unsupported(node, f"The RLIKE pattern '{pattern}' ({what})",
                            hint="the local engine runs Java regular expressions RE2 reads the same way: "
                                 "literals, . [] [^] * + ? {m,n} lazy quantifiers | (...) (?:...) ^ $ "
                                 "\\d \\w \\s and escaped punctuation")

    out, k, in_class = [], 0, False
    while k < len(pattern):
        if pattern[k] == "\\":
            text, k = _escape(pattern, k, in_class, refuse)
        elif in_class:
            text, k, in_class = _in_class(pattern, k, refuse)
        elif pattern[k] == "[":
            text, k = _class_start(pattern, k, refuse)
            in_class = True
        else:
            text, k = _outside_class(pattern, k, refuse)
        out.append(text)
    if in_class:
        raise refuse("an unclosed class")
    return "".join(out)


def _escape(pattern: str, k: int, in_class: bool, refuse) -> tuple[str, int]:
    """The backslash escape at ``pattern[k]`` in RE2, and where the pattern goes on."""
    if k + 1 >= len(pattern):
        raise refuse("a trailing backslash")
    nxt = pattern[k + 1]
    k += 2
    if nxt in "dDwW":
        return "\\" + nxt, k
    if nxt == "s":
        return (_JAVA_SPACE if in_class else f"[{_JAVA_SPACE}]"), k
    if nxt == "S" and not in_class:
        return f"[^{_JAVA_SPACE}]", k
    if nxt in "tnrfa":
        return "\\" + nxt, k
    if nxt == "e":
        return "\\x1B", k
    if nxt == "x":
        m = re.match(r"[0-9a-fA-F]{2}|\{[0-9a-fA-F]+\}", pattern[k:])
        if not m:
            raise refuse("a malformed \\x escape")
        return "\\x" + m.group(0), k + m.end()
    if nxt == "u":
        m = re.match(r"[0-9a-fA-F]{4}", pattern[k:])
        if not m:
            raise refuse("a malformed \\u escape")
        return "\\x{" + m.group(0) + "}", k + 4
    if not nxt.isalnum() and ord(nxt) < 128:
        return "\\" + nxt, k
    raise refuse(f"\\{nxt}")


def _in_class(pattern: str, k: int, refuse) -> tuple[str, int, bool]:
    """A character inside a class, and whether the class goes on after it."""
    ch = pattern[k]
    if ch == "[" or pattern.startswith("&&", k):
        raise refuse("a nested or intersected character class")
    return ch, k + 1, ch != "]"


def _class_start(pattern: str, k: int, refuse) -> tuple[str, int]:
    """The ``[`` (or ``[^``) opening a class."""
    out, k = "[", k + 1
    if k < len(pattern) and pattern[k] == "^":
        out += "^"
        k += 1
    if k < len(pattern) and pattern[k] == "]":
        raise refuse("a ']' first in a class")
    return out, k


def _outside_class(pattern: str, k: int, refuse) -> tuple[str, int]:
    """A character outside a class (``.``, ``$``, a group, a quantifier, a literal) in RE2."""
    ch, n = pattern[k], len(pattern)
    if ch == ".":
        return f"[^{_LINE_END}]", k + 1
    if ch == "$":
        j = k + 1
        while j < n and pattern[j] == ")":
            j += 1
        if j < n and pattern[j] != "|":
            raise refuse("'$' before more of the pattern")
        return f"(?:\\r\\n|[{_LINE_END}])?\\z", k + 1
    if ch == "(":
        if pattern.startswith("(?", k) and not pattern.startswith("(?:", k):
            raise refuse("a group with (?")
        return ch, k + 1
    if ch == "}":
        raise refuse("an unmatched '}'")
    if ch in "*+?":
        if k + 1 < n and pattern[k + 1] == "+":
            raise refuse("a possessive quantifier")
        return ch, k + 1
    if ch == "{":
        m = re.match(r"\{\d+(,\d*)?\}", pattern[k:])
        if not m:
            raise refuse("a '{' that is not a repetition")
        k += m.end()
        if k < n and pattern[k] == "+":
            raise refuse("a possessive quantifier")
        return m.group(0), k
    return ch, k + 1
