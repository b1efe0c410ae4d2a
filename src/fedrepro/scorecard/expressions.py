"""Claim expressions, parsed once and checked against an allow-list before anything is evaluated.

A registry (config/papers/*.yaml) is shared and downloaded like data, so its ``where``, ``expr``, ``ours`` and
``qualitative`` strings must not be able to run code.  ``eval`` with empty builtins is not enough (it is escaped
through ``().__class__.__base__.__subclasses__()``) and ``pandas.query`` resolves ``@pd.io.common.os.system``.
Here an expression is parsed with :mod:`ast` and refused unless every node is on the allow-list:

* names: the artifact's columns and the helpers in :data:`HELPERS`; no name starts with ``_``;
* literals: numbers, strings, booleans, ``None``, lists and tuples of them;
* arithmetic (``+ - * / // % **``, ``**`` only to a literal exponent of at most 16), comparisons, ``and``,
  ``or``, ``not``, ``& | ~``, subscripts and slices;
* constant integers of at most 1024 bits (folded as they are checked: nested powers), sequences written in the
  expression (``[0] * n``, ``np.r_[a:b]``) of at most a million items;
* calls to the helpers and to ``np.<f>`` for ``f`` in :data:`NUMPY_NAMES` (the only attribute access allowed).

The checked tree is compiled and evaluated against a namespace holding exactly those names (``np`` is a
stand-in that has only the allowed attributes), so even a checker bug cannot reach a module.  Each evaluation
runs under a time and memory budget (:mod:`fedrepro.scorecard.budget`).

``where`` keeps the ``pandas.query`` meaning it always had: ``and``/``or``/``not`` and chained comparisons act
element-wise and ``x in [...]`` is ``isin``.  ``expr``/``ours``/``qualitative`` keep plain Python meaning.
"""

from __future__ import annotations

import ast
import difflib
import functools
import math
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedrepro.registry.config import ConfigError

FIELDS = ("where", "expr", "ours", "qualitative")


def _ordered(values, by, sign: int) -> bool:
    order = np.argsort(np.asarray(by, dtype=float), kind="stable")
    steps = np.diff(np.asarray(values, dtype=float)[order])
    return bool(np.all(sign * steps > 0))


def increasing(values, by) -> bool:
    """`values` strictly increase when the rows are sorted by `by`."""
    return _ordered(values, by, +1)


def decreasing(values, by) -> bool:
    """`values` strictly decrease when the rows are sorted by `by`."""
    return _ordered(values, by, -1)


# The functions a claim expression may call by name (documented in docs/architecture.md, "Claims").
HELPERS = {
    "abs": np.abs, "all": np.all, "any": np.any, "min": np.min, "max": np.max, "mean": np.mean,
    "len": len, "sum": sum, "float": float, "int": int, "bool": bool, "round": round, "zip": zip,
    "sorted": sorted, "list": list, "increasing": increasing, "decreasing": decreasing,
}

# What `np.<name>` may be: numeric functions and constants only (nothing that reads files or builds functions).
NUMPY_NAMES = (
    "abs", "absolute", "all", "allclose", "any", "argmax", "argmin", "ceil", "clip", "cumsum", "diff", "exp",
    "floor", "inf", "isclose", "isfinite", "isinf", "isnan", "log", "log10", "log2", "logical_and", "logical_not",
    "logical_or", "max", "maximum", "mean", "median", "min", "minimum", "nan", "nan_to_num", "nanmax", "nanmean",
    "nanmin", "percentile", "pi", "prod", "quantile", "r_", "round", "sign", "sort", "sqrt", "std", "sum",
    "unique", "var", "where",
)
_NP = types.SimpleNamespace(**{name: getattr(np, name) for name in NUMPY_NAMES})

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr,
              ast.BitXor, ast.USub, ast.UAdd, ast.Not, ast.Invert, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt,
              ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)
_NODES = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.keyword, ast.Name,
          ast.Load, ast.Constant, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Attribute) + _OPERATORS
_MAX_POWER = 16
_MAX_INT_BITS = 1024          # a constant integer beyond the float range (2**1024) is no number a claim compares
_MAX_ITEMS = 1_000_000        # a sequence written in an expression ([0] * n, np.r_[a:b]); artifact CSVs have far fewer


class ClaimExpressionError(ConfigError):
    """A claim expression is refused or names something unknown; the message names the file and the claim."""

    def __init__(self, problem: str, *, claim: str, field: str, text: str, source: str,
                 suggestions: Iterable[str] = ()):
        self.claim, self.field, self.text, self.source = claim, field, text, source
        self.problem, self.suggestions = problem, list(suggestions)
        hint = f"; did you mean {' or '.join(repr(s) for s in self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"{source}: claim {claim}: {field} {text!r}: {problem}{hint}")


class ClaimExpressionProblems(ConfigError):
    """Several refused claim expressions at once (one line each), so a registry is fixed in one pass."""

    def __init__(self, problems: list[ClaimExpressionError]):
        self.problems = problems
        super().__init__(f"{len(problems)} claim expression problems:\n" + "\n".join(map(str, problems)))


def close_matches(name: str, known: Iterable[str]) -> list[str]:
    """Up to three known names like `name`, ignoring case."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)]


@dataclass(frozen=True)
class Expression:
    """A checked claim expression: the column names it reads and its compiled code."""

    text: str
    field: str
    columns: frozenset[str]
    code: types.CodeType

    def evaluate(self, frame: pd.DataFrame, *, claim: str, source: str):
        """The value over `frame`'s columns (numpy arrays); an unknown column is named with its close matches."""
        missing = sorted(self.columns - {str(c) for c in frame.columns})
        if missing:
            raise ClaimExpressionError(
                f"the artifact's data has no column {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})",
                claim=claim, field=self.field, text=self.text, source=source,
                suggestions=close_matches(missing[0], map(str, frame.columns)))
        from fedrepro.scorecard import budget

        names = {str(c): frame[c].to_numpy() for c in frame.columns if str(c) in self.columns}
        try:
            return budget.evaluate_bounded(self.code, _NAMESPACE, names)
        except budget.BudgetExceeded as exc:
            what = {"time": f"took longer than {budget.TIME_LIMIT_S:g} s (the budget of one evaluation)",
                    "memory": f"needs more than {budget.MEMORY_LIMIT_BYTES >> 20} MiB of memory (the budget of one "
                              "evaluation)"}.get(str(exc), str(exc))
            raise ClaimExpressionError(f"stopped: it {what}", claim=claim, field=self.field, text=self.text,
                                       source=source) from None

    def mask(self, frame: pd.DataFrame, *, claim: str, source: str) -> np.ndarray:
        """A `where` selector's boolean row mask (a scalar result selects all rows or none)."""
        value = np.asarray(self.evaluate(frame, claim=claim, source=source))
        if value.ndim == 0:
            value = np.full(len(frame), bool(value))
        if value.shape != (len(frame),):
            raise ClaimExpressionError(f"selects with shape {value.shape}, expected one value per row ({len(frame)})",
                                       claim=claim, field=self.field, text=self.text, source=source)
        return value.astype(bool)


class _Checker(ast.NodeVisitor):
    """Refuse every node that is not on the allow-list; collect the column names read."""

    def __init__(self, known_columns: frozenset[str] | None):
        self.known_columns = known_columns
        self.columns: set[str] = set()

    def refuse(self, problem: str, suggestions: Iterable[str] = ()):
        raise _Refused(problem, list(suggestions))

    def generic_visit(self, node):
        if not isinstance(node, _NODES):
            self.refuse(f"{type(node).__name__} ({ast.unparse(node) if isinstance(node, ast.expr) else '…'}) "
                        "is not allowed in a claim expression")
        super().generic_visit(node)

    def visit_Constant(self, node):
        if not (node.value is None or isinstance(node.value, (bool, int, float, str))):
            self.refuse(f"the literal {node.value!r} is not allowed")

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Pow):
            e = node.right
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
                e = e.operand
            if not (isinstance(e, ast.Constant) and isinstance(e.value, (int, float))
                    and not isinstance(e.value, bool) and abs(e.value) <= _MAX_POWER):
                self.refuse(f"'**' needs a number literal of at most {_MAX_POWER} as exponent")
        for side in (node.left, node.right):
            if isinstance(side, ast.Constant) and isinstance(side.value, str):
                self.refuse("arithmetic on a string literal is not allowed")
        if isinstance(node.op, ast.Mult):
            for seq, count in ((node.left, node.right), (node.right, node.left)):
                if isinstance(seq, (ast.List, ast.Tuple)) and isinstance(n := self.fold(count), (int, float)) \
                        and len(seq.elts) * n > _MAX_ITEMS:
                    self.refuse(f"a sequence repeated to {len(seq.elts) * n:.3g} items (at most {_MAX_ITEMS:,})")
        self.generic_visit(node)
        self.fold(node)

    def fold(self, node):
        """The value of a constant number expression (None if it is not one), refusing integers beyond
        `_MAX_INT_BITS` bits before they are computed: ``((9**16)**16)**16`` would take minutes, the next level hours."""
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.fold(node.operand)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        if not isinstance(node, ast.BinOp):
            return None
        a, b = self.fold(node.left), self.fold(node.right)
        if a is None or b is None:
            return None
        if isinstance(a, int) and isinstance(b, int):
            bits = None
            if isinstance(node.op, ast.Pow) and b > 0:
                bits = int(b * math.log2(abs(a))) + 1 if abs(a) > 1 else 1
            elif isinstance(node.op, ast.Mult):
                bits = abs(a).bit_length() + abs(b).bit_length()
            if bits is not None and bits > _MAX_INT_BITS:
                self.refuse(f"the integer {ast.unparse(node)} has about {bits:,} bits (at most {_MAX_INT_BITS})")
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
               ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b, ast.Pow: lambda: a ** b}
        try:
            return ops[type(node.op)]() if type(node.op) in ops else None
        except (ArithmeticError, ValueError):
            return None

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "r_":
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for part in index:
                if isinstance(part, ast.Slice):
                    start, stop, step = (self.fold(p) if p is not None else d
                                         for p, d in ((part.lower, 0), (part.upper, None), (part.step, 1)))
                    if isinstance(stop, (int, float)) and isinstance(start, (int, float)) \
                            and isinstance(step, (int, float)) and step and (stop - start) / step > _MAX_ITEMS:
                        self.refuse(f"np.r_[{ast.unparse(part)}] has {(stop - start) / step:.3g} items "
                                    f"(at most {_MAX_ITEMS:,})")
        self.generic_visit(node)

    def visit_Name(self, node):
        self._check_identifier(node.id)
        if node.id in HELPERS or node.id == "np":
            self.refuse(f"{node.id!r} can only be called" if node.id in HELPERS else
                        f"'np' can only be used as np.<function> ({', '.join(NUMPY_NAMES)})")
        if self.known_columns is not None and node.id not in self.known_columns:
            self.refuse(f"unknown name {node.id!r}: neither a column of the artifact's data "
                        f"({', '.join(sorted(self.known_columns))}) nor a helper",
                        close_matches(node.id, set(self.known_columns) | set(HELPERS)))
        self.columns.add(node.id)

    def visit_Attribute(self, node):
        if not (isinstance(node.value, ast.Name) and node.value.id == "np"):
            self.refuse(f"attribute access {ast.unparse(node)!r} is not allowed (only np.<function>)")
        if node.attr not in NUMPY_NAMES:
            self.refuse(f"np.{node.attr} is not an allowed numpy function (allowed: {', '.join(NUMPY_NAMES)})",
                        ["np." + m for m in close_matches(node.attr, NUMPY_NAMES)])

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name):
            self._check_identifier(func.id)
            if func.id not in HELPERS:
                self.refuse(f"unknown function {func.id!r} (allowed: {', '.join(HELPERS)}, np.<function>)",
                            close_matches(func.id, HELPERS))
        elif isinstance(func, ast.Attribute):
            self.visit_Attribute(func)
        else:
            self.refuse(f"only the helpers and np.<function> can be called, not {ast.unparse(func)!r}")
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            if kw.arg is None:
                self.refuse("'**' arguments are not allowed")
            self._check_identifier(kw.arg)
            self.visit(kw.value)

    def _check_identifier(self, name: str):
        if name.startswith("_"):
            self.refuse(f"the name {name!r} is not allowed (names starting with '_' are refused)")


class _Refused(Exception):
    def __init__(self, problem: str, suggestions: list[str]):
        self.problem, self.suggestions = problem, suggestions


# Element-wise `and`/`or`/`not`/`in` for `where` (the pandas.query meaning); unreachable from expressions
# themselves because their names start with '_'.
_WHERE_HELPERS = {
    "_and": lambda *xs: functools.reduce(np.logical_and, xs),
    "_or": lambda *xs: functools.reduce(np.logical_or, xs),
    "_not": np.logical_not,
    "_isin": lambda x, values: np.isin(x, np.asarray(values)),
}


# What an expression sees besides its columns (the tree checker admits no other name).
_NAMESPACE = {"__builtins__": {}, **HELPERS, **_WHERE_HELPERS, "np": _NP}


class _ElementWise(ast.NodeTransformer):
    """Rewrite a checked `where` tree so boolean logic acts row by row, as pandas.query did."""

    @staticmethod
    def _call(name, *args):
        return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        return self._call("_and" if isinstance(node.op, ast.And) else "_or", *node.values)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return self._call("_not", node.operand) if isinstance(node.op, ast.Not) else node

    def visit_Compare(self, node):
        self.generic_visit(node)
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                part = self._call("_isin", left, right)
                parts.append(self._call("_not", part) if isinstance(op, ast.NotIn) else part)
            else:
                parts.append(ast.Compare(left=left, ops=[op], comparators=[right]))
            left = right
        return parts[0] if len(parts) == 1 else self._call("_and", *parts)


@functools.lru_cache(maxsize=4096)
def _compile(text: str, field: str, known_columns: frozenset[str] | None) -> Expression | _Refused:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        return _Refused(f"not a valid expression ({exc.msg})", [])
    checker = _Checker(known_columns)
    try:
        checker.visit(tree)
    except _Refused as refused:
        return refused
    if field.endswith("where"):   # a `where` or a `regime.where`: row by row
        tree = ast.fix_missing_locations(_ElementWise().visit(tree))
    return Expression(text=text, field=field, columns=frozenset(checker.columns),
                      code=compile(tree, f"<claim {field}>", "eval"))


def compile_expression(text: str, *, field: str, claim: str, source: str,
                       columns: Iterable[str] | None = None) -> Expression:
    """Parse and check one expression (cached: each text is parsed once per process).

    `columns`, when given, is the artifact's column list: a name outside it is refused with close matches.
    """
    known = frozenset(map(str, columns)) if columns is not None else None
    result = _compile(str(text), field, known)
    if isinstance(result, _Refused):
        raise ClaimExpressionError(result.problem, claim=claim, field=field, text=str(text), source=source,
                                   suggestions=result.suggestions)
    return result


def claim_source(paper: str) -> str:
    return f"config/papers/{paper}.yaml"


def _artifact_columns(entry: Mapping, columns: Mapping | None, paper: str, artifact: str):
    if columns is not None and (paper, artifact) in columns:
        return list(columns[(paper, artifact)])
    return entry.get("columns")


def claim_expressions(claim: Mapping) -> list[tuple[str, str]]:
    """(field, text) of every expression a claim holds: where/expr/ours/qualitative, an `ours:` mapping's
    expressions and the `regime:`'s."""
    out = []
    for field in FIELDS:
        value = claim.get(field)
        if isinstance(value, Mapping):
            out += [(f"{field}.{label}", str(text)) for label, text in value.items()]
        elif value is not None:
            out.append((field, value))
    regime = claim.get("regime") or {}
    out += [(f"regime.{k}", regime[k]) for k in ("where", "expr") if regime.get(k)]
    return out


def validate_claim_expressions(registry, columns: Mapping[tuple[str, str], Iterable[str]] | None = None) -> None:
    """Check every claim expression of every registry before any job runs.

    Syntax, the allow-list and the helper names are always checked.  Column names can only be checked against
    a column list: the artifact's ``columns:`` hint in the registry, or ``columns[(paper, artifact)]`` (e.g. an
    existing artifact CSV's header).  Raises one :class:`ClaimExpressionError` (a ``ConfigError``) listing every
    problem, each with the file, the claim id and a did-you-mean suggestion where one exists.
    """
    papers = registry.papers if hasattr(registry, "papers") else registry
    if hasattr(registry, "papers"):
        from fedrepro.scorecard.reasons import check_claim_keys

        check_claim_keys(registry)   # sources, miss links, list values keyed like the paper's
    problems: list[ClaimExpressionError] = []
    for paper, reg in papers.items():
        source = claim_source(paper)
        for claim in reg.get("claims", []):
            entry = reg.get("artifacts", {}).get(claim.get("artifact"), {})
            known = _artifact_columns(entry, columns, paper, claim.get("artifact"))
            for field, text in claim_expressions(claim):
                try:
                    compile_expression(text, field=field, claim=claim["id"], source=source, columns=known)
                except ClaimExpressionError as exc:
                    problems.append(exc)
            if known is not None and not claim.get("not_run"):
                named = [("column", c) for c in [claim.get("column")] if c is not None]
                named += [("keys", c) for c in claim.get("keys") or []] + [("columns", c) for c in claim.get("columns") or []]
                for field, col in named:
                    if col not in known:
                        problems.append(ClaimExpressionError(
                            f"the artifact's data has no column {col!r}", claim=claim["id"], field=field, text=col,
                            source=source, suggestions=close_matches(col, known)))
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ClaimExpressionProblems(problems)


def require_columns(frame: pd.DataFrame, names: Iterable[str], *, claim: str, field: str, source: str) -> None:
    """Stop with the claim, the file and close matches when the artifact's data lacks a named column."""
    have = [str(c) for c in frame.columns]
    for name in names:
        if name not in have:
            raise ClaimExpressionError(f"the artifact's data has no column {name!r} (columns: {', '.join(have)})",
                                       claim=claim, field=field, text=name, source=source,
                                       suggestions=close_matches(name, have))
