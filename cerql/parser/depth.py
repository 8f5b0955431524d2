"""How deep a query may nest, and room on the Python stack for the stages that recurse.

Input: query text, a lark parse tree. Output: nothing, or a :class:`cerql.errors.ParseError`
QUERY_TOO_COMPLEX. The stages after the grammar (the lark transformer, sqlglot, the analysis,
the automaton compiler, compiled expressions) walk trees recursively, and a long chain such as
``A ; A ; … ; A`` is a tree as deep as it is long. Python's default limit (1000 frames) stops
them at about 250 chained atoms or 30 parentheses in a bracket; :func:`room_to_recurse` raises
the limit to ``RECURSION_LIMIT`` while a query is processed (and puts it back after), and
:func:`check_depth` refuses, before any stage recurses, queries deeper than that room allows:
``MAX_PATTERN_DEPTH`` nested pattern operators, ``MAX_PARENTHESES`` nested parentheses or
brackets in the text. Both limits leave a wide margin below ``RECURSION_LIMIT``, so the C stack
(8 MB on the main thread) is never at risk; a RecursionError that still happens is reported as
QUERY_TOO_COMPLEX, not a traceback.
"""

from __future__ import annotations

import contextlib
import re
import sys

from cerql.errors import CeqlError, ParseError

RECURSION_LIMIT = 30_000     # frames, while a query is parsed, analyzed, resolved and run
MAX_PATTERN_DEPTH = 2_000    # nested pattern operators: about 4 frames each in the transformer
MAX_PARENTHESES = 300        # nested ( [ {: sqlglot spends about 32 frames per parenthesis

_HINT = ("write it shallower: fewer nested parentheses, A+ instead of a long chain of the same atom, "
         "IN (...) instead of a long OR of equalities")
_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/|[()\[\]{}]", re.S)


def too_complex(text: str, offset: int, what: str) -> ParseError:
    return ParseError.at(text, offset, f"The query is too complex: {what}", "QUERY_TOO_COMPLEX", _HINT)


def check_parentheses(text: str) -> None:
    """Refuse parentheses or brackets nested deeper than ``MAX_PARENTHESES`` (strings, quoted
    names and comments do not count)."""
    depth = 0
    for m in _TOKENS.finditer(text):
        ch = m.group(0)
        if ch in "([{":
            depth += 1
            if depth > MAX_PARENTHESES:
                raise too_complex(text, m.start(), f"more than {MAX_PARENTHESES} nested parentheses")
        elif ch in ")]}":
            depth = max(0, depth - 1)


def check_depth(tree, text: str) -> None:
    """Refuse a lark parse tree whose pattern nests deeper than ``MAX_PATTERN_DEPTH``; the walk
    is iterative, so it works at any depth."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_PATTERN_DEPTH:
            offset = getattr(node.meta, "start_pos", 0) if not getattr(node.meta, "empty", True) else 0
            raise too_complex(text, offset, f"the pattern nests more than {MAX_PATTERN_DEPTH} operators deep")
        stack.extend((child, depth + 1) for child in node.children if hasattr(child, "children"))


@contextlib.contextmanager
def room_to_recurse(text: str | None = None):
    """Run the block with the recursion limit raised to ``RECURSION_LIMIT`` (never lowered),
    restored afterwards; a RecursionError inside becomes QUERY_TOO_COMPLEX."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, RECURSION_LIMIT))
    try:
        yield
    except RecursionError:
        raise ParseError("The query is too complex: it nests too deeply to evaluate",
                         error_class="QUERY_TOO_COMPLEX", hint=_HINT, text=text) from None
    except CeqlError:
        raise
    except Exception as err:  # lark wraps what the transformer raised in a VisitError
        if isinstance(getattr(err, "orig_exc", None), RecursionError):
            raise ParseError("The query is too complex: it nests too deeply to parse",
                             error_class="QUERY_TOO_COMPLEX", hint=_HINT, text=text) from None
        raise
    finally:
        sys.setrecursionlimit(before)
