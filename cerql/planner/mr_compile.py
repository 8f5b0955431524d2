"""MATCH_RECOGNIZE row pattern -> priority-ordered NFA (:class:`cerql.mr_plan.Nfa`).

Thompson's construction, built backwards from ACCEPT: each construct is given what follows it
(its *continuation*) and returns its entry, and every SPLIT lists its successors in the
preference order of docs/semantics.md: alternatives left to right; a greedy quantifier prefers
another iteration, a reluctant one prefers to stop; ``{n}``, ``{n,}``, ``{,m}``, ``{n,m}`` are
unrolled (n mandatory copies, then optional copies or a loop); PERMUTE is the alternation of its
permutations in the lexicographic order of its argument list; an exclusion matches as its
content, with labels of its own (``mr_plan``).

Empty iterations. An iteration beyond the minimum that maps no row ends the loop: the match goes
on after the quantified group, at that point of the preference order (so ``(A??)*`` prefers to
map no row, and ``(A?)*`` never loops on nothing). Whether the current iteration is still empty is
a property of the path, not of the pattern position, so the construction carries it in the
states: a continuation is a tuple ``K`` indexed by how many of the innermost enclosing optional
iterations have mapped no row yet (``K[0]``: every one has mapped a row). A row consumed makes
every open iteration non-empty, so a CONSUME state always continues to ``K[0]``; a loop's body
ends at "iterate again" from ``K[0]`` and at "leave the loop" from every other entry. Epsilon
moves therefore never form a cycle, and the kernel needs no special case. The states are at most
(pattern size) x (nesting depth of quantifiers + 1), shared where equal.
"""

from __future__ import annotations

from itertools import permutations

from cerql import mr_ast
from cerql.errors import AnalysisError
from cerql.mr_plan import (ACCEPT, ANCHOR_END, ANCHOR_START, CONSUME, PAST_LAST_ROW, SPLIT, TO_FIRST, TO_LAST,
                           TO_NEXT_ROW, Nfa, Skip, State)


MAX_VARIABLES = 64  # the kernel's condition bits are one uint64 per row


class _Builder:
    """The growing state list; equal states (same kind, label and successors) are made once."""

    def __init__(self) -> None:
        self.states: list[list] = []   # [kind, label, out]
        self.known: dict[tuple, int] = {}

    def add(self, kind: int, label: int, out: tuple[int, ...]) -> int:
        key = (kind, label, out)
        found = self.known.get(key)
        if found is None:
            found = self.placeholder(kind)
            self.states[found][1:] = [label, out]
            self.known[key] = found
        return found

    def placeholder(self, kind: int) -> int:
        """A state whose successors are set later (a loop's head, which its body leads back to)."""
        self.states.append([kind, -1, ()])
        return len(self.states) - 1


class _Compiler:
    def __init__(self, variables: tuple[str, ...]) -> None:
        self.index = {v: i for i, v in enumerate(variables)}
        self.n_vars = len(variables)
        self.b = _Builder()

    def build(self, node, k: tuple[int, ...], excluded: bool) -> tuple[int, ...]:
        """The entries of ``node`` followed by ``k`` (both indexed as in the module docstring)."""
        b = self.b
        if isinstance(node, mr_ast.PatternVar):
            if node.name not in self.index:
                raise AnalysisError(f"The row pattern variable {node.name} is not among the clause's variables",
                                    error_class="MATCH_RECOGNIZE_UNKNOWN_VARIABLE")
            label = self.index[node.name] + (self.n_vars if excluded else 0)
            return (b.add(CONSUME, label, (k[0],)),) * len(k)
        if isinstance(node, mr_ast.EmptyPattern):
            return k
        if isinstance(node, mr_ast.Anchor):
            kind = ANCHOR_START if node.start else ANCHOR_END
            return tuple(b.add(kind, -1, (t,)) for t in k)
        if isinstance(node, mr_ast.Concat):
            return self.sequence(node.items, k, excluded)
        if isinstance(node, mr_ast.Alternation):
            return self.choice([self.build(o, k, excluded) for o in node.options], k)
        if isinstance(node, mr_ast.Permute):
            # itertools.permutations of an ordered list come in lexicographic order
            orders = permutations(range(len(node.items)))
            return self.choice([self.sequence([node.items[i] for i in order], k, excluded) for order in orders], k)
        if isinstance(node, mr_ast.Exclusion):
            return self.build(node.pattern, k, True)
        if isinstance(node, mr_ast.Quantified):
            return self.quantified(node, k, excluded)
        raise TypeError(f"not a row pattern: {node!r}")

    def sequence(self, items, k, excluded):
        for item in reversed(items):
            k = self.build(item, k, excluded)
        return k

    def choice(self, entries: list[tuple[int, ...]], k) -> tuple[int, ...]:
        if len(entries) == 1:
            return entries[0]
        return tuple(self.b.add(SPLIT, -1, tuple(e[i] for e in entries)) for i in range(len(k)))

    def split(self, iterate: int, leave: int, greedy: bool) -> tuple[int, ...]:
        return (iterate, leave) if greedy else (leave, iterate)

    def quantified(self, node: mr_ast.Quantified, k, excluded):
        """``X{min,max}``: ``min`` copies of X in sequence, then the optional part (max - min
        optional copies, or a loop), each optional iteration one level deeper."""
        if node.max is not None and node.max < node.min:
            raise AnalysisError(f"The quantifier {{{node.min},{node.max}}} has its maximum below its minimum",
                                error_class="MATCH_RECOGNIZE_BAD_QUANTIFIER")
        depth = len(k)
        if node.max is None:
            heads = tuple(self.b.placeholder(SPLIT) for _ in range(depth))
            body = self.build(node.pattern, (heads[0],) + k, excluded)
            for i, head in enumerate(heads):
                self.b.states[head][2] = self.split(body[i + 1], k[i], node.greedy)
            after = heads
        else:
            after = k
            for _ in range(node.max - node.min):
                body = self.build(node.pattern, (after[0],) + k, excluded)
                after = tuple(self.b.add(SPLIT, -1, self.split(body[i + 1], k[i], node.greedy))
                              for i in range(depth))
        for _ in range(node.min):
            after = self.build(node.pattern, after, excluded)
        return after


def compile_pattern(pattern: mr_ast.RowPattern, variables: tuple[str, ...]) -> Nfa:
    """The NFA of ``pattern``; a variable's label is its index in ``variables`` (docs/semantics.md,
    MATCH_RECOGNIZE matching)."""
    if len(variables) > MAX_VARIABLES:
        raise AnalysisError(f"A row pattern may use at most {MAX_VARIABLES} variables, this one uses {len(variables)}",
                            error_class="MATCH_RECOGNIZE_TOO_MANY_VARIABLES")
    compiler = _Compiler(tuple(variables))
    accept = compiler.b.add(ACCEPT, -1, ())
    start = compiler.build(pattern, (accept,), False)[0]
    states = tuple(State(kind, label, tuple(out)) for kind, label, out in compiler.b.states)
    return Nfa(states=states, start=start, variables=tuple(variables))


def compile_skip(after_match: mr_ast.AfterMatchSkip, variables: tuple[str, ...],
                 subsets: tuple[mr_ast.Subset, ...] = ()) -> Skip:
    """The kernel's form of AFTER MATCH SKIP: TO FIRST/LAST of a variable or SUBSET name becomes
    the mask of its variables."""
    modes = {mr_ast.PAST_LAST_ROW: PAST_LAST_ROW, mr_ast.TO_NEXT_ROW: TO_NEXT_ROW,
             mr_ast.TO_FIRST: TO_FIRST, mr_ast.TO_LAST: TO_LAST}
    mode = modes[after_match.mode]
    if mode in (PAST_LAST_ROW, TO_NEXT_ROW):
        return Skip(mode)
    target = after_match.variable
    union = {s.name: s.variables for s in subsets}.get(target, (target,))
    index = {v: i for i, v in enumerate(variables)}
    mask = 0
    for name in union:
        if name in index:   # a variable the pattern never names maps no row
            mask |= 1 << index[name]
    return Skip(mode, mask, target)


__all__ = ["compile_pattern", "compile_skip"]
