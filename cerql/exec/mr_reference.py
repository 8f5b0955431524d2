"""The MATCH_RECOGNIZE reference evaluator: SQL:2016 row pattern recognition, literally, by brute force.

Input: a :class:`cerql.mr_ast.MatchRecognize` clause and the input rows (a list of dicts, column
-> Python value, in input order). Output: the rows of the MATCH_RECOGNIZE result, as dicts in the
standard's layout (:func:`evaluate`), or the matches themselves (:func:`find_matches`).

It is the oracle the MATCH_RECOGNIZE engine is tested against, so it is written to be obviously
right rather than fast, and it shares no code with that engine: it reads only the syntax tree
(cerql.mr_ast) and the sqlglot trees of its expressions, with its own small interpreter of them,
and raises only cerql.errors. Its rules (docs/semantics.md):

- **Partitions and order.** Rows are grouped by the PARTITION BY values (NULLs form one group);
  partitions come out in the order of their first row in the input. Within a partition rows are
  sorted by ORDER BY (ASC/DESC; NULLS FIRST for ASC and LAST for DESC unless written), ties kept
  in input order (a stable sort).
- **Matching.** From the start row, every mapping of rows to pattern variables is tried by
  backtracking in the pattern's preference order: alternatives left to right; greedy
  quantifiers try one more iteration before stopping, reluctant ones stop first; PERMUTE tries
  its permutations in the lexicographic order of its argument list; ``^``/``$`` hold before the
  partition's first row / after its last; ``()`` maps nothing; ``{- -}`` maps as usual and only
  marks its rows as left out of ALL ROWS output. An iteration of a quantified pattern that maps
  no row ends the loop (it counts as all the iterations still owed to the minimum: the next one,
  at the same row with the same history, could do the same), which is what keeps ``(A?)*`` from
  looping. The match is the first mapping whose every row satisfies its variable's DEFINE,
  evaluated when the row is mapped, with RUNNING semantics: the row is the last mapped row, and
  FIRST/LAST, aggregates and CLASSIFIER see only the rows mapped so far. Trying a row as soon as
  it is mapped and abandoning the branch when it fails gives exactly that first mapping: a later
  row cannot change a condition already evaluated. A variable without DEFINE is TRUE; a NULL
  condition is false.
- **After a match.** MATCH_NUMBER counts matches from 1 per partition, empty ones included. An
  empty match resumes at the next row, whatever the AFTER MATCH SKIP mode. Otherwise PAST LAST
  ROW resumes after the match's last row, TO NEXT ROW after its first row, TO FIRST/LAST v at
  v's first/last mapped row (a SUBSET name: the union of its variables' rows); skipping to the
  match's first row, or to a variable that maps no row, fails with AFTER_MATCH_SKIP_FAILED
  naming the match number and the partition. A start row with no match is unmatched and
  matching moves to the next row.
- **Output.** ONE ROW PER MATCH: one row per match (empty ones too): the PARTITION BY columns,
  then the measures evaluated over the whole match (RUNNING = FINAL there). ALL ROWS PER MATCH:
  per match, one row per mapped row outside ``{- -}`` in row order: PARTITION BY columns, ORDER
  BY columns, measures (RUNNING by default: as if the match ended at that row; FINAL: the whole
  match), then the remaining input columns in input order. An empty match gives one row (its
  start row, measures evaluated over no rows: NULL, except MATCH_NUMBER and counts, 0) with SHOW
  EMPTY MATCHES and WITH UNMATCHED ROWS, none with OMIT EMPTY MATCHES. WITH UNMATCHED ROWS also
  gives each row that no match started at and that no earlier match mapped, NULL measures, in
  the order matching reached it.
- **Expressions.** Columns qualified by a variable or SUBSET name, or not (the universal
  variable), mean the last such row among the rows seen. PREV/NEXT(e, n) move n rows physically
  from the row e points at (NULL outside the partition); FIRST/LAST(e, n) count among the rows
  of e's variable seen (NULL past them); they nest as ``PREV(LAST(A.x), 2)``. Aggregates run over
  a variable's rows seen; RUNNING sees the rows up to the current row, FINAL the whole match
  (refused in DEFINE). SQL's three-valued logic throughout. Anything outside this small set is
  refused with REFERENCE_UNSUPPORTED rather than guessed.

The search is exponential, so a partition over ``MAX_ROWS_PER_PARTITION`` rows, or a search past
``MAX_STEPS`` steps, is refused with REFERENCE_INPUT_TOO_LARGE.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, NamedTuple

from sqlglot import exp

from cerql import mr_ast
from cerql.errors import AnalysisError, ExecutionError, UnsupportedError

MAX_ROWS_PER_PARTITION = 200
MAX_STEPS = 1_000_000  # pattern steps (a row tried, a branch taken) in one evaluate/find_matches call
_RECURSION = 20_000    # the backtracking recurses a few frames per mapped row (a dozen at most)

PHYSICAL = ("PREV", "NEXT")
LOGICAL = ("FIRST", "LAST")


class Match(NamedTuple):
    """One match of a partition: its MATCH_NUMBER, its rows as (row index in the sorted
    partition, variable) in row order (empty for an empty match), and the row it started at."""

    number: int
    mapping: list[tuple[int, str]]
    start: int


# ---------------------------------------------------------------------------- errors
def _unsupported(what: str) -> UnsupportedError:
    return UnsupportedError(f"The MATCH_RECOGNIZE reference evaluator does not evaluate {what}",
                            error_class="REFERENCE_UNSUPPORTED",
                            hint="it knows a small, exact subset of Spark SQL, for tests")


def _invalid(message: str) -> AnalysisError:
    return AnalysisError(message, error_class="REFERENCE_INVALID_QUERY")


def _too_large(what: str) -> ExecutionError:
    return ExecutionError(f"The MATCH_RECOGNIZE reference evaluator stopped: {what}",
                          error_class="REFERENCE_INPUT_TOO_LARGE",
                          hint="it is brute force, for tests on tiny inputs; shrink the input")


# ---------------------------------------------------------------------------- public API
def evaluate(clause: mr_ast.MatchRecognize, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``clause`` over ``rows``, in the layout of the module docstring."""
    return _Evaluation(clause, rows).output()


def find_matches(clause: mr_ast.MatchRecognize, rows: list[dict[str, Any]]) -> list[list[Match]]:
    """The matches of each partition (partitions in order of their first row in ``rows``); row
    indexes are positions in the partition sorted by ORDER BY (see :func:`partitions`)."""
    evaluation = _Evaluation(clause, rows)
    return [[Match(m.number, [(r, v) for r, v, _ in m.mapping], m.start) for m in matches]
            for _, _, matches, _ in evaluation.run()]


def partitions(clause: mr_ast.MatchRecognize, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows of each partition, sorted by ORDER BY: what :func:`find_matches` indexes."""
    return [part for _, part in _Evaluation(clause, rows).partitions()]


# ---------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class _Found:
    number: int
    mapping: tuple[tuple[int, str, bool], ...]  # (row, variable, excluded)
    start: int


class _Evaluation:
    """One evaluation: the clause, the input, the column names, the step budget."""

    def __init__(self, clause: mr_ast.MatchRecognize, rows: list[dict[str, Any]]):
        self.clause = clause
        self.rows = list(rows)
        self.columns: list[str] = list(dict.fromkeys(k for row in self.rows for k in row))
        self.by_lower = {c.lower(): c for c in self.columns}
        self.subsets = {s.name.upper(): {v.upper() for v in s.variables} for s in clause.subsets}
        # a variable's name as first written in PATTERN: what CLASSIFIER gives and mappings hold;
        # names compare case-insensitively, as Spark's identifiers do
        self.spelling = {v.upper(): v for v in reversed(clause.variables)}
        self.variables = set(self.spelling)
        for name, members in self.subsets.items():
            if not members <= self.variables:
                raise _invalid(f"SUBSET {name} names a variable the pattern does not have")
        self.defines = {d.variable.upper(): d.condition for d in clause.defines}
        self.steps = 0
        if clause.rows_per_match.mode == mr_ast.WITH_UNMATCHED and _has_exclusion(clause.pattern):
            raise _invalid("ALL ROWS PER MATCH WITH UNMATCHED ROWS cannot be used with a {- -} exclusion")

    # -- names
    def column(self, name: str) -> str:
        found = self.by_lower.get(name.lower())
        if found is None:
            raise _invalid(f"Unknown column {name!r} (the input has {', '.join(self.columns)})")
        return found

    def key_columns(self, exprs) -> list[str]:
        names = []
        for e in exprs:
            tree = _tree(e)
            if not isinstance(tree, exp.Column) or tree.table or isinstance(tree.this, exp.Star):
                raise _unsupported(f"PARTITION BY / ORDER BY {tree.sql('spark')!r} (only plain columns)")
            names.append(self.column(tree.name))
        return names

    # -- partitions
    def partitions(self) -> list[tuple[tuple, list[dict]]]:
        part_cols = self.key_columns(self.clause.partition_by)
        groups: dict[tuple, list[dict]] = {}
        for row in self.rows:
            groups.setdefault(tuple(row.get(c) for c in part_cols), []).append(row)
        order_cols = self.key_columns(k.expr for k in self.clause.order_by)
        keys = list(zip(order_cols, self.clause.order_by))

        def compare(a: dict, b: dict) -> int:
            for col, key in keys:
                x, y = a.get(col), b.get(col)
                nulls_first = (not key.descending) if key.nulls_first is None else key.nulls_first
                if x is None or y is None:
                    if x is None and y is None:
                        continue
                    return (-1 if x is None else 1) * (1 if nulls_first else -1)
                c = _compare(x, y)
                if c:
                    return -c if key.descending else c
            return 0

        out = []
        for key, part in groups.items():
            if len(part) > MAX_ROWS_PER_PARTITION:
                raise _too_large(f"a partition has {len(part)} rows, over {MAX_ROWS_PER_PARTITION}")
            out.append((key, sorted(part, key=functools.cmp_to_key(compare))))  # sorted() is stable
        return out

    # -- matching, partition by partition
    def run(self):
        """(partition key, sorted rows, matches, unmatched rows in the order reached, as
        ('match', i) / ('unmatched', row) events) for each partition."""
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _RECURSION))
        try:
            return [self._run_partition(key, part) for key, part in self.partitions()]
        except RecursionError:
            raise _too_large("the pattern search nested too deep") from None
        finally:
            sys.setrecursionlimit(old)

    def _run_partition(self, key: tuple, part: list[dict]):
        matches: list[_Found] = []
        events: list[tuple[str, int]] = []
        mapped_before: set[int] = set()
        pos = 0
        while pos < len(part):
            mapping = _Matcher(self, part, len(matches) + 1).first(pos)
            if mapping is None:
                if pos not in mapped_before:
                    events.append(("unmatched", pos))
                pos += 1
                continue
            found = _Found(len(matches) + 1, mapping, pos)
            matches.append(found)
            events.append(("match", len(matches) - 1))
            if not mapping:
                pos += 1
                continue
            mapped_before.update(r for r, _, _ in mapping)
            pos = self._resume(found, key)
        return key, part, matches, events

    def _resume(self, found: _Found, key: tuple) -> int:
        skip = self.clause.after_match
        if skip.mode == mr_ast.PAST_LAST_ROW:
            return found.mapping[-1][0] + 1
        if skip.mode == mr_ast.TO_NEXT_ROW:
            return found.start + 1
        target = (skip.variable or "").upper()
        members = self.subsets.get(target, {target})
        rows = [r for r, v, _ in found.mapping if v.upper() in members]
        where = f"match {found.number} of {self._partition_text(key)}"
        if not rows:
            raise ExecutionError(f"AFTER MATCH SKIP {skip.mode} {skip.variable} failed in {where}: "
                                 f"{skip.variable} maps no row of the match",
                                 error_class="AFTER_MATCH_SKIP_FAILED",
                                 params={"match_number": found.number, "partition": key})
        row = rows[0] if skip.mode == mr_ast.TO_FIRST else rows[-1]
        if row == found.start:
            raise ExecutionError(f"AFTER MATCH SKIP {skip.mode} {skip.variable} failed in {where}: "
                                 "it would resume at the match's first row (and loop forever)",
                                 error_class="AFTER_MATCH_SKIP_FAILED",
                                 params={"match_number": found.number, "partition": key})
        return row

    def _partition_text(self, key: tuple) -> str:
        if not self.clause.partition_by:
            return "the partition (no PARTITION BY)"
        names = self.key_columns(self.clause.partition_by)
        return "the partition " + ", ".join(f"{n}={v!r}" for n, v in zip(names, key))

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _too_large(f"the pattern search took over {MAX_STEPS:,} steps")

    # -- output
    def output(self) -> list[dict[str, Any]]:
        clause = self.clause
        part_cols = self.key_columns(clause.partition_by)
        order_cols = [c for c in self.key_columns(k.expr for k in clause.order_by) if c not in part_cols]
        names = [m.name for m in clause.measures]
        rest = [c for c in self.columns if c not in part_cols and c not in order_cols]
        layout = part_cols + names if not clause.rows_per_match.all_rows else part_cols + order_cols + names + rest
        if len({n.lower() for n in layout}) != len(layout):
            raise _unsupported(f"output columns with the same name ({', '.join(layout)})")
        mode = clause.rows_per_match.mode
        out = []
        for _, part, matches, events in self.run():
            for kind, i in events:
                if kind == "unmatched":
                    if mode == mr_ast.WITH_UNMATCHED:
                        out.append(self._row(part[i], part_cols, order_cols, rest, {n: None for n in names}))
                    continue
                found = matches[i]
                if mode == mr_ast.ONE_ROW:
                    last = found.mapping[-1][0] if found.mapping else found.start
                    ctx = _Context(self, part, found.mapping, last, found.number, final_default=True)
                    row = {c: part[found.start].get(c) for c in part_cols}
                    row.update(self._measures(ctx))
                    out.append(row)
                elif not found.mapping:
                    if mode != mr_ast.OMIT_EMPTY:
                        ctx = _Context(self, part, (), found.start, found.number, final_default=False)
                        out.append(self._row(part[found.start], part_cols, order_cols, rest, self._measures(ctx)))
                else:
                    for r, _, excluded in found.mapping:
                        if excluded:
                            continue
                        ctx = _Context(self, part, found.mapping, r, found.number, final_default=False)
                        out.append(self._row(part[r], part_cols, order_cols, rest, self._measures(ctx)))
        return out

    def _measures(self, ctx: "_Context") -> dict[str, Any]:
        return {m.name: ctx.eval(_tree(m.expr)) for m in self.clause.measures}

    @staticmethod
    def _row(source: dict, part_cols, order_cols, rest, measures: dict) -> dict[str, Any]:
        row = {c: source.get(c) for c in part_cols + order_cols}
        row.update(measures)
        row.update((c, source.get(c)) for c in rest)
        return row


def _tree(sql_expr) -> exp.Expression:
    tree = getattr(sql_expr, "tree", None)
    if tree is None:
        raise _unsupported(f"an expression without a sqlglot tree ({sql_expr!r})")
    return tree


def _has_exclusion(p: mr_ast.RowPattern) -> bool:
    return any(isinstance(node, mr_ast.Exclusion) for node in mr_ast.walk(p))


# ---------------------------------------------------------------------------- the matcher
Path = tuple  # ((row, VARIABLE, excluded), ...) in row order
Cont = Callable[[int, Path], "Path | None"]


class _Matcher:
    """Depth-first search of the mappings from one start row, in preference order: each
    ``_m(pattern, pos, path, excluded, k)`` tries the ways ``pattern`` can map rows from ``pos``,
    most preferred first, hands each to the continuation ``k`` (the rest of the pattern) and
    returns the first complete mapping that ``k`` accepts, or None."""

    def __init__(self, evaluation: _Evaluation, part: list[dict], match_number: int):
        self.ev = evaluation
        self.part = part
        self.n = len(part)
        self.match_number = match_number

    def first(self, start: int) -> Path | None:
        return self._m(self.ev.clause.pattern, start, (), False, lambda pos, path: path)

    def _m(self, p, pos: int, path: Path, excluded: bool, k: Cont) -> Path | None:
        self.ev.step()
        if isinstance(p, mr_ast.PatternVar):
            if pos >= self.n:
                return None
            new = path + ((pos, self.ev.spelling[p.name.upper()], excluded),)
            return k(pos + 1, new) if self._defined(p.name.upper(), new) else None
        if isinstance(p, mr_ast.Concat):
            return self._seq(p.items, 0, pos, path, excluded, k)
        if isinstance(p, mr_ast.Alternation):
            for option in p.options:
                found = self._m(option, pos, path, excluded, k)
                if found is not None:
                    return found
            return None
        if isinstance(p, mr_ast.Permute):
            for order in itertools.permutations(p.items):  # lexicographic in the argument order
                found = self._seq(order, 0, pos, path, excluded, k)
                if found is not None:
                    return found
            return None
        if isinstance(p, mr_ast.Exclusion):
            return self._m(p.pattern, pos, path, True, k)
        if isinstance(p, mr_ast.Anchor):
            holds = pos == 0 if p.start else pos == self.n
            return k(pos, path) if holds else None
        if isinstance(p, mr_ast.EmptyPattern):
            return k(pos, path)
        if isinstance(p, mr_ast.Quantified):
            return self._loop(p, 0, pos, path, excluded, k)
        raise _unsupported(f"the row pattern {p!r}")

    def _seq(self, items, i: int, pos: int, path: Path, excluded: bool, k: Cont) -> Path | None:
        if i == len(items):
            return k(pos, path)
        return self._m(items[i], pos, path, excluded,
                       lambda p2, path2: self._seq(items, i + 1, p2, path2, excluded, k))

    def _loop(self, q: mr_ast.Quantified, count: int, pos: int, path: Path, excluded: bool, k: Cont):
        def after_iteration(p2: int, path2: Path):
            if p2 == pos:  # an iteration that mapped no row ends the loop
                return k(p2, path2)
            return self._loop(q, count + 1, p2, path2, excluded, k)

        more = q.max is None or count < q.max
        stop = count >= q.min
        for choice in (("more", "stop") if q.greedy else ("stop", "more")):
            if choice == "more" and more:
                found = self._m(q.pattern, pos, path, excluded, after_iteration)
            elif choice == "stop" and stop:
                found = k(pos, path)
            else:
                continue
            if found is not None:
                return found
        return None

    def _defined(self, var: str, path: Path) -> bool:
        condition = self.ev.defines.get(var)
        if condition is None:
            return True
        ctx = _Context(self.ev, self.part, path, path[-1][0], self.match_number,
                       final_default=False, in_define=True)
        value = ctx.eval(_tree(condition))
        if value is not None and not isinstance(value, bool):
            raise _invalid(f"DEFINE {var} is not a condition (it gave {value!r})")
        return value is True


# ---------------------------------------------------------------------------- expressions
class _Context:
    """What an expression sees: the partition's rows, the match's mapping as known (the whole
    match, or in DEFINE the rows mapped so far), the current row (the running view is the mapped
    rows up to it), whether a navigation without RUNNING/FINAL is FINAL, and the match number."""

    def __init__(self, evaluation: _Evaluation, part: list[dict], mapping: Path, current: int,
                 match_number: int, *, final_default: bool, in_define: bool = False):
        self.ev = evaluation
        self.part = part
        self.mapping = mapping
        self.current = current
        self.match_number = match_number
        self.final_default = final_default
        self.in_define = in_define
        self.var_of = {r: v for r, v, _ in mapping}
        self.aggregating = False  # evaluating an aggregate's argument: PREV/NEXT move from its row

    # -- which rows a reference sees
    def seen(self, final: bool) -> list[tuple[int, str]]:
        return [(r, v) for r, v, _ in self.mapping if final or r <= self.current]

    def rows_of(self, var: str | None, final: bool) -> list[int]:
        """The rows mapped to ``var`` (a variable or SUBSET name; None: any) seen, in order."""
        if var is None:
            return [r for r, _ in self.seen(final)]
        members = self.ev.subsets.get(var, {var})
        return [r for r, v in self.seen(final) if v.upper() in members]

    def qualifier(self, tree: exp.Expression) -> str | None:
        """The one variable the column references and CLASSIFIER(v) of ``tree`` name (None: the
        universal one), not looking into nested navigations; two different ones are refused."""
        found = set()
        for node in _walk_outside_navigation(tree):
            name = None
            if isinstance(node, exp.Column):
                name = node.table.upper() if node.table else None
            elif _call(node) == "CLASSIFIER" and node.expressions:
                name = _name_of(node.expressions[0])
            else:
                continue
            if name is not None and name not in self.ev.variables and name not in self.ev.subsets:
                raise _invalid(f"{name} is neither a pattern variable nor a SUBSET name")
            found.add(name)
        if len(found) > 1:
            raise _unsupported(f"{tree.sql('spark')!r}: references to more than one variable in one "
                               "navigation or aggregate")
        return found.pop() if found else None

    # -- evaluation
    def eval(self, e: exp.Expression, final: bool | None = None, at: int | None = None) -> Any:
        """The value of ``e``. ``final``: None for the context's default, else FINAL (True) or
        RUNNING (False) set by an enclosing keyword. ``at``: the row every column reference and
        CLASSIFIER() means (inside a navigation or an aggregate), None outside one."""
        fin = self.final_default if final is None else final
        name = _call(e)
        if name is not None and name not in _NAMED_AGGREGATES:
            return self._call(name, e, final, fin, at)
        if isinstance(e, exp.Paren):
            return self.eval(e.this, final, at)
        if isinstance(e, exp.Column):
            if isinstance(e.this, exp.Star):
                raise _unsupported(f"{e.sql('spark')} outside count()")
            col = self.ev.column(e.name)
            if at is None:
                rows = self.rows_of(self.qualifier(e), fin)
                return self.part[rows[-1]].get(col) if rows else None
            return self.part[at].get(col)
        if isinstance(e, exp.Null):
            return None
        if isinstance(e, exp.Boolean):
            return bool(e.this)
        if isinstance(e, exp.Literal):
            return _literal(e)
        if isinstance(e, (exp.And, exp.Or)):
            return _logic(type(e), self.eval(e.this, final, at), lambda: self.eval(e.expression, final, at))
        if isinstance(e, exp.Not):
            v = _boolean(self.eval(e.this, final, at))
            return None if v is None else not v
        if isinstance(e, exp.Is):
            if not isinstance(e.expression, exp.Null):
                raise _unsupported(e.sql("spark"))
            return self.eval(e.this, final, at) is None
        if isinstance(e, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            return _comparison(type(e), self.eval(e.this, final, at), self.eval(e.expression, final, at))
        if isinstance(e, exp.NullSafeEQ):
            a, b = self.eval(e.this, final, at), self.eval(e.expression, final, at)
            return (a is None and b is None) if a is None or b is None else _compare(a, b) == 0
        if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
            return _arithmetic(type(e), self.eval(e.this, final, at), self.eval(e.expression, final, at))
        if isinstance(e, exp.Neg):
            v = self.eval(e.this, final, at)
            return None if v is None else -_number(v)
        if isinstance(e, exp.Case):
            return self._case(e, final, at)
        if isinstance(e, exp.Between):
            v = self.eval(e.this, final, at)
            low, high = self.eval(e.args["low"], final, at), self.eval(e.args["high"], final, at)
            return _logic(exp.And, _comparison(exp.GTE, v, low), lambda: _comparison(exp.LTE, v, high))
        if isinstance(e, exp.In):
            if e.args.get("query") or e.args.get("unnest") or e.args.get("field"):
                raise _unsupported(e.sql("spark"))
            v = self.eval(e.this, final, at)
            if v is None:
                return None
            results = [_comparison(exp.EQ, v, self.eval(x, final, at)) for x in e.expressions]
            return True if True in results else (None if None in results else False)
        if isinstance(e, exp.Coalesce):
            for x in [e.this, *e.expressions]:
                v = self.eval(x, final, at)
                if v is not None:
                    return v
            return None
        if isinstance(e, exp.Abs):
            v = self.eval(e.this, final, at)
            return None if v is None else abs(_number(v))
        if _is_aggregate(e):
            return self._aggregate(e, fin, at)
        raise _unsupported(f"{e.sql('spark')!r} ({type(e).__name__})")

    def _case(self, e: exp.Case, final, at):
        subject = e.this
        value = self.eval(subject, final, at) if subject is not None else None
        for branch in e.args.get("ifs") or []:
            cond = branch.this
            if subject is not None:
                hit = _comparison(exp.EQ, value, self.eval(cond, final, at))
            else:
                hit = _boolean(self.eval(cond, final, at))
            if hit is True:
                return self.eval(branch.args["true"], final, at)
        default = e.args.get("default")
        return self.eval(default, final, at) if default is not None else None

    def _call(self, name: str, e: exp.Expression, final, fin: bool, at):
        args = list(e.expressions)
        if name in ("RUNNING", "FINAL"):
            if len(args) != 1:
                raise _unsupported(f"{name} with {len(args)} arguments")
            if name == "FINAL" and self.in_define:
                raise _invalid("FINAL cannot be used in DEFINE")
            return self.eval(args[0], name == "FINAL", at)
        if name == "MATCH_NUMBER":
            return self.match_number
        if name == "CLASSIFIER":
            if at is not None:
                return self.var_of.get(at) if at in {r for r, _ in self.seen(fin)} else None
            rows = self.rows_of(_name_of(args[0]) if args else None, fin)
            return self.var_of[rows[-1]] if rows else None
        if name in PHYSICAL + LOGICAL:
            if not 1 <= len(args) <= 2:
                raise _unsupported(f"{name} with {len(args)} arguments")
            offset = _offset(args[1]) if len(args) == 2 else (1 if name in PHYSICAL else 0)
            row, inner = self._navigate(name, args[0], offset, fin, at)
            if row is None:
                return None
            return self.eval(inner, final, row)
        raise _unsupported(f"the function {name}()")

    def _navigate(self, name: str, arg: exp.Expression, offset: int, fin: bool, at):
        """The row a navigation lands on (None: no such row) and the expression to evaluate there."""
        if at is not None and name in LOGICAL:
            raise _unsupported(f"{name}() inside another navigation than PREV/NEXT, or inside an aggregate")
        if name in LOGICAL:
            rows = self.rows_of(self.qualifier(arg), fin)
            if _is_navigation(arg):
                raise _unsupported(f"a navigation inside {name}()")
            index = offset if name == "FIRST" else len(rows) - 1 - offset
            return (rows[index] if 0 <= index < len(rows) else None), arg
        # PREV / NEXT: from the row the argument points at, physically
        if at is not None:
            if not self.aggregating or _is_navigation(arg):
                raise _unsupported(f"{name}() inside another PREV/NEXT, or of a navigation inside an aggregate")
            row = at - offset if name == "PREV" else at + offset
            return (row if 0 <= row < len(self.part) else None), arg
        inner_name = _call(arg)
        if inner_name in LOGICAL:
            inner_args = list(arg.expressions)
            inner_offset = _offset(inner_args[1]) if len(inner_args) == 2 else 0
            base, inner = self._navigate(inner_name, inner_args[0], inner_offset, fin, None)
        else:
            if _is_navigation(arg):
                raise _unsupported(f"{arg.sql('spark')!r} inside {name}()")
            rows = self.rows_of(self.qualifier(arg), fin)
            base, inner = (rows[-1] if rows else None), arg
        if base is None:
            return None, inner
        row = base - offset if name == "PREV" else base + offset
        return (row if 0 <= row < len(self.part) else None), inner

    def _aggregate(self, e: exp.Expression, fin: bool, at):
        """Spark's aggregate ``e`` over the rows of its variable seen, in row order, by its
        definition (docs/semantics.md, "MATCH_RECOGNIZE")."""
        if at is not None:
            raise _unsupported(f"an aggregate inside a navigation or an aggregate ({e.sql('spark')})")
        kind = _aggregate_name(e)
        distinct = bool(e.args.get("distinct")) or isinstance(e.args.get("this"), exp.Distinct)
        if kind is None or (distinct and kind not in ("count", "sum", "avg", "min", "max")):
            raise _unsupported(f"the aggregate {e.sql('spark')!r}")
        args = _aggregate_args(e)
        if kind == "count" and len(args) == 1 and isinstance(args[0], exp.Star):
            return len(self.rows_of(None, fin))
        if kind == "count" and len(args) == 1 and isinstance(args[0], exp.Column) and isinstance(args[0].this, exp.Star):
            return len(self.rows_of(args[0].table.upper() if args[0].table else None, fin))
        if not args or len(args) != (2 if kind in ("min_by", "max_by") + _PAIR_KINDS else 1):
            raise _unsupported(f"the aggregate {e.sql('spark')!r}")
        for arg in args:
            if any(_call(n) in LOGICAL + ("CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL") or
                   (n is not arg and _is_aggregate(n)) for n in arg.walk()) or _is_aggregate(arg):
                raise _unsupported(f"the aggregate {e.sql('spark')!r}")
        self.aggregating = True
        try:
            rows = self.rows_of(self._aggregated_variable(args), fin)
            tuples = [tuple(self.eval(arg, fin, r) for arg in args) for r in rows]
        finally:
            self.aggregating = False
        if kind in ("min_by", "max_by"):
            return _by(kind, tuples)
        if kind in _MORE_KINDS:
            return _more(kind, tuples, [self._constant(p, fin) for p in _aggregate_params(e)])
        values = [t[0] for t in tuples]
        if isinstance(e, (exp.First, exp.Last)):  # Spark's first/last: the value, NULL or not
            return (values[0] if isinstance(e, exp.First) else values[-1]) if values else None
        present = [v for v in values if v is not None]
        if distinct:
            present = _distinct(present)
        if kind == "count":
            return len(present)
        if kind == "count_if":
            return sum(1 for v in present if _boolean(v) is True)
        if kind == "collect_list":
            return present
        if not present:
            return None
        if kind in ("bool_and", "bool_or"):
            flags = [_boolean(v) for v in present]
            return all(flags) if kind == "bool_and" else any(flags)
        if kind in ("stddev_samp", "stddev_pop", "var_samp", "var_pop"):
            return _spread(kind, [float(_number(v)) for v in present])
        if kind == "sum":
            return functools.reduce(lambda a, b: _arithmetic(exp.Add, a, b), [_number(v) for v in present])
        if kind == "avg":
            total = functools.reduce(lambda a, b: _arithmetic(exp.Add, a, b), [_number(v) for v in present])
            return total / len(present) if isinstance(total, Decimal) else float(total) / len(present)
        best = present[0]
        for v in present[1:]:
            if (_compare(v, best) < 0) if kind == "min" else (_compare(v, best) > 0):
                best = v
        return best

    def _constant(self, e: exp.Expression, fin: bool):
        """A percentile's p (an array of them: a list) or listagg's separator."""
        if isinstance(e, exp.Array):
            return [self.eval(x, fin) for x in e.expressions]
        return self.eval(e, fin)

    def _aggregated_variable(self, args) -> str | None:
        """The one variable the columns of an aggregate's arguments name (None: the universal
        one), PREV/NEXT included."""
        found = set()
        for arg in args:
            for node in arg.walk():
                if isinstance(node, exp.Column):
                    name = node.table.upper() if node.table else None
                    if name is not None and name not in self.ev.variables and name not in self.ev.subsets:
                        raise _invalid(f"{name} is neither a pattern variable nor a SUBSET name")
                    found.add(name)
        if len(found) > 1:
            raise _unsupported("an aggregate over the columns of more than one variable")
        return found.pop() if found else None


# the aggregates by sqlglot class, and those sqlglot reads as unknown functions, by name
_AGGREGATE_NAMES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
                    exp.First: "first", exp.Last: "last", exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp",
                    exp.StddevPop: "stddev_pop", exp.Variance: "var_samp", exp.VariancePop: "var_pop",
                    exp.CountIf: "count_if", exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or",
                    exp.ArgMin: "min_by", exp.ArgMax: "max_by", exp.ArrayAgg: "collect_list", exp.Any: "bool_or"}
_NAMED_AGGREGATES = {"STD": "stddev_samp", "EVERY": "bool_and", "SOME": "bool_or", "TRY_SUM": "try_sum",
                     "TRY_AVG": "try_avg"}
_PAIR_KINDS = ("corr", "covar_pop", "covar_samp", "regr_count", "regr_avgx", "regr_avgy", "regr_sxx", "regr_syy",
               "regr_sxy", "regr_slope", "regr_intercept", "regr_r2")
_AGGREGATE_NAMES.update({
    exp.Median: "median", exp.Quantile: "percentile", exp.Skewness: "skewness", exp.Kurtosis: "kurtosis",
    exp.Corr: "corr", exp.CovarPop: "covar_pop", exp.CovarSamp: "covar_samp", exp.RegrCount: "regr_count",
    exp.RegrAvgx: "regr_avgx", exp.RegrAvgy: "regr_avgy", exp.RegrSxx: "regr_sxx", exp.RegrSyy: "regr_syy",
    exp.RegrSxy: "regr_sxy", exp.RegrSlope: "regr_slope", exp.RegrIntercept: "regr_intercept", exp.RegrR2: "regr_r2",
    exp.BitwiseAndAgg: "bit_and", exp.BitwiseOrAgg: "bit_or", exp.BitwiseXorAgg: "bit_xor", exp.GroupConcat: "listagg"})
_MORE_KINDS = _PAIR_KINDS + ("median", "percentile", "skewness", "kurtosis", "bit_and", "bit_or", "bit_xor", "try_sum",
                             "try_avg", "listagg")


def _aggregate_params(e: exp.Expression) -> list[exp.Expression]:
    """percentile's p and listagg's separator, when written."""
    name = "quantile" if isinstance(e, exp.Quantile) else "separator" if isinstance(e, exp.GroupConcat) else None
    return [e.args[name]] if name and e.args.get(name) is not None else []


def _more(kind: str, tuples: list[tuple], params: list):
    """The aggregates beyond count/sum/avg/min/max/stddev/min_by/collect_list, by definition: two
    passes over the values (means first), sorting for percentiles."""
    if kind in _PAIR_KINDS:
        return _paired(kind, [(float(_number(a)) if kind not in ("regr_avgx", "regr_avgy") else a, b) for a, b in
                              ((t[0], t[1]) for t in tuples) if a is not None and b is not None])
    present = [t[0] for t in tuples if t[0] is not None]
    if kind == "listagg":
        sep = params[0] if params and params[0] is not None else ("" if not present or isinstance(present[0], str) else b"")
        return sep.join(present) if present else None
    if not present:
        return None
    if kind in ("median", "percentile"):
        p = params[0] if kind == "percentile" else 0.5
        xs = sorted((float(_number(v)) for v in present), key=lambda v: (math.isnan(v), 0.0 if math.isnan(v) else v))
        one = [_interpolated(xs, float(q)) for q in p] if isinstance(p, list) else _interpolated(xs, float(p))
        return None if one == [] else one
    if kind in ("bit_and", "bit_or", "bit_xor"):
        op = {"bit_and": lambda a, b: a & b, "bit_or": lambda a, b: a | b, "bit_xor": lambda a, b: a ^ b}[kind]
        return functools.reduce(op, present)
    if kind in ("try_sum", "try_avg"):
        return _tried(kind, present)
    xs = [float(_number(v)) for v in present]
    n, mean = len(xs), sum(xs) / len(xs)
    m2 = sum((x - mean) ** 2 for x in xs)
    if m2 == 0:
        return None
    if kind == "skewness":
        return math.sqrt(n) * sum((x - mean) ** 3 for x in xs) / m2 ** 1.5
    return n * sum((x - mean) ** 4 for x in xs) / (m2 * m2) - 3.0


def _interpolated(xs: list[float], q: float) -> float:
    """The value at position (n - 1) * q of the sorted values, linear between two."""
    position = (len(xs) - 1) * q
    low, high = xs[math.floor(position)], xs[math.ceil(position)]
    return low if low == high or math.floor(position) == math.ceil(position) else low + (position - math.floor(position)) * (high - low)


def _paired(kind: str, pairs: list[tuple]):
    """corr(x, y), covar_*(x, y) and regr_*(y, x) over the pairs without NULL, ``(a, b)`` as written."""
    if kind == "regr_count":
        return len(pairs)
    if kind in ("regr_avgx", "regr_avgy"):
        vals = [_number(p[1] if kind == "regr_avgx" else p[0]) for p in pairs]
        total = functools.reduce(lambda u, v: _arithmetic(exp.Add, u, v), vals) if vals else None
        return None if total is None else (total / len(vals) if isinstance(total, Decimal) else float(total) / len(vals))
    n = len(pairs)
    if n == 0 or (kind == "covar_samp" and n == 1):
        return None
    ma, mb = sum(a for a, _ in pairs) / n, sum(float(_number(b)) for _, b in pairs) / n
    bs = [float(_number(b)) for _, b in pairs]
    saa = sum((a - ma) ** 2 for a, _ in pairs)
    sbb = sum((b - mb) ** 2 for b in bs)
    sab = sum((a - ma) * (b - mb) for (a, _), b in zip(pairs, bs))
    if kind in ("covar_pop", "covar_samp"):
        return sab / (n if kind == "covar_pop" else n - 1)
    if kind == "corr":
        return None if saa * sbb == 0 else sab / math.sqrt(saa * sbb)
    if kind in ("regr_sxx", "regr_syy", "regr_sxy"):
        return {"regr_sxx": sbb, "regr_syy": saa, "regr_sxy": sab}[kind]
    if sbb == 0:
        return None
    if kind == "regr_r2":
        return 1.0 if saa == 0 else sab * sab / (saa * sbb)
    return sab / sbb if kind == "regr_slope" else ma - sab / sbb * mb


def _tried(kind: str, present: list):
    """try_sum / try_avg: sum / avg, NULL where an integer sum leaves BIGINT (an average of
    integers adds DOUBLEs)."""
    if kind == "try_avg" and not isinstance(present[0], Decimal):
        return sum(float(v) for v in present) / len(present)
    total = present[0]
    for v in present[1:]:
        total = total + v
        if isinstance(total, int) and not -(2 ** 63) <= total < 2 ** 63:
            return None
    if kind == "try_sum":
        return total
    if isinstance(total, Decimal):
        return total / len(present)
    return sum(float(v) for v in present) / len(present)


def _aggregate_name(e: exp.Expression) -> str | None:
    if isinstance(e, exp.Anonymous):
        return _NAMED_AGGREGATES.get(e.name.upper())
    return _AGGREGATE_NAMES.get(type(e))


def _is_aggregate(e: exp.Expression) -> bool:
    return isinstance(e, _AGGREGATES) or (isinstance(e, exp.Anonymous) and e.name.upper() in _NAMED_AGGREGATES)


def _aggregate_args(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.Anonymous):
        return list(e.expressions)
    this = e.args.get("this")
    args = list(this.expressions) if isinstance(this, exp.Distinct) else ([this] if this is not None else [])
    if isinstance(e, (exp.ArgMin, exp.ArgMax)) or _AGGREGATE_NAMES.get(type(e)) in _PAIR_KINDS:
        args.append(e.args.get("expression"))
    return args


def _same_value(v: Any):
    """What Spark's DISTINCT compares: NaN equals NaN, -0.0 equals 0.0."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else v + 0.0
    return v


def _distinct(values: list) -> list:
    """The values without repeats, each where it first occurs."""
    seen, out = set(), []
    for v in values:
        if _same_value(v) not in seen:
            seen.add(_same_value(v))
            out.append(v)
    return out


def _spread(kind: str, xs: list[float]):
    """Sample / population variance and standard deviation: NULL over one value for the sample
    ones (Spark 4), NaN in, NaN out."""
    n = len(xs)
    if kind in ("stddev_samp", "var_samp") and n == 1:
        return None
    mean = sum(xs) / n
    squares = sum((x - mean) * (x - mean) for x in xs)
    var = squares / (n - 1 if kind in ("stddev_samp", "var_samp") else n)
    return math.sqrt(var) if kind.startswith("stddev") and not math.isnan(var) else var


def _spark_order(a: Any, b: Any) -> int:
    """Spark's order of two non-NULL values: NaN above every number."""
    a_nan, b_nan = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    return _compare(a, b)


def _by(kind: str, pairs: list[tuple]) -> Any:
    """min_by / max_by: x of the row with the least / greatest y, rows without y left out, the
    last of rows that tie."""
    best = None
    for x, y in pairs:
        if y is None:
            continue
        if best is None or (_spark_order(y, best[1]) >= 0 if kind == "max_by" else _spark_order(y, best[1]) <= 0):
            best = (x, y)
    return None if best is None else best[0]


_AGGREGATES = tuple(_AGGREGATE_NAMES)


def _call(e: exp.Expression) -> str | None:
    """The upper-case name of a row pattern function call (an exp.Anonymous), else None."""
    return e.name.upper() if isinstance(e, exp.Anonymous) else None


def _is_navigation(e: exp.Expression) -> bool:
    return any(_call(n) in PHYSICAL + LOGICAL for n in e.walk()) or any(_is_aggregate(n) for n in e.walk())


def _walk_outside_navigation(tree: exp.Expression):
    yield tree
    if _call(tree) in PHYSICAL + LOGICAL + ("CLASSIFIER",) or _is_aggregate(tree):
        return
    for child in tree.iter_expressions():
        yield from _walk_outside_navigation(child)


def _name_of(e: exp.Expression) -> str:
    if isinstance(e, (exp.Column, exp.Identifier)) and not (isinstance(e, exp.Column) and e.table):
        return e.name.upper()
    raise _unsupported(f"CLASSIFIER({e.sql('spark')})")


def _offset(e: exp.Expression) -> int:
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        return int(e.this)
    raise _unsupported(f"a navigation offset that is not a non-negative integer literal ({e.sql('spark')})")


# ---------------------------------------------------------------------------- SQL values
def _literal(e: exp.Literal) -> Any:
    if e.is_string:
        return e.this
    text = e.this
    if text.isdigit():
        return int(text)
    if "e" in text.lower():
        return float(text)
    return Decimal(text)  # Spark reads 2.5 as a decimal


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _number(v: Any):
    if not _is_number(v):
        raise _unsupported(f"arithmetic on {v!r}")
    return v


def _boolean(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise _unsupported(f"{v!r} where a condition is expected")


def _compare(a: Any, b: Any) -> int:
    """-1, 0, 1 for two non-NULL values of comparable kinds; other pairs are refused, since Spark
    would cast one of them first."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            a, b = float(a), float(b)
    elif type(a) is not type(b):
        raise _unsupported(f"comparing {a!r} with {b!r} (Spark would cast one of them)")
    return (a > b) - (a < b)


def _comparison(op, a, b) -> bool | None:
    if a is None or b is None:
        return None
    c = _compare(a, b)
    return {exp.EQ: c == 0, exp.NEQ: c != 0, exp.GT: c > 0, exp.GTE: c >= 0,
            exp.LT: c < 0, exp.LTE: c <= 0}[op]


def _logic(op, a, b_thunk) -> bool | None:
    """Three-valued AND / OR (``b_thunk`` gives the right side)."""
    a = _boolean(a)
    b = _boolean(b_thunk())
    if op is exp.And:
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _arithmetic(op, a, b):
    if a is None or b is None:
        return None
    a, b = _number(a), _number(b)
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
    elif isinstance(a, Decimal) or isinstance(b, Decimal):
        a, b = Decimal(a), Decimal(b)
    if op is exp.Add:
        return a + b
    if op is exp.Sub:
        return a - b
    if op is exp.Mul:
        return a * b
    if b == 0:
        raise _unsupported("a division by zero (its result depends on Spark's ANSI mode)")
    if op is exp.Div:
        if isinstance(a, Decimal):
            raise _unsupported("decimal division (Spark's result scale)")
        return float(a) / float(b)
    # Mod: the sign of the dividend, as Spark's %
    if isinstance(a, float):
        return math.fmod(a, b)
    r = abs(a) % abs(b)
    return -r if a < 0 else r


__all__ = ["MAX_ROWS_PER_PARTITION", "MAX_STEPS", "Match", "evaluate", "find_matches", "partitions"]
