"""Derived figures of merit: arithmetic on a cell's own metrics, e.g. jobs per day.

    derived = [{ name = "jobs/day", expr = "86400 / wall_time", unit = "jobs/day",
                 better = "higher" }]

An expression uses numbers, + - * / ** and parentheses, and metric names written as
identifiers: `wall_time`, and every figure of merit with each character that cannot be in
an identifier replaced by `_` (`ns/day` -> `ns_day`; Unicode is NFKC-folded as Python folds
identifiers, `ﬁ` -> `fi`). Two metrics of a group that fold to one identifier are refused
at load. Earlier derived metrics may be used by later ones. It is parsed once (Python's ast,
a whitelist of node types; never eval; at most MAX_NODES nodes and MAX_DEPTH levels) and
evaluated per launch in floating point, so a derived metric is a per-launch value like any
other and gets the same launch-level statistics. A value that is not a finite real number
(division by zero, overflow such as 10**400 or 9**9**9, underflow of a non-zero result to 0,
a negative number to a fractional power) is never stored: the launch fails with the reason.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow}


# an expression is a formula, not a program: 3000 chained terms made a RecursionError in
# Python's own parser; these bounds refuse it at load with a reason
MAX_NODES = 2000
MAX_DEPTH = 100
MAX_CHARS = 10_000


class DerivedError(ArithmeticError):
    """The expression has no finite real value for this launch (the reason says why)."""


def ident(metric: str) -> str:
    """The identifier a metric is written as in an expression: ns/day -> ns_day (NFKC first,
    as Python folds identifiers: a metric named with U+FB01 is written fi)."""
    s = re.sub(r"\W", "_", unicodedata.normalize("NFKC", metric))
    return s if not s[:1].isdigit() else "_" + s


@dataclass
class Derived:
    name: str
    expr: str
    unit: str
    better: str
    tree: ast.Expression

    def names(self) -> set[str]:
        return {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}

    def evaluate(self, values: dict[str, float]) -> float | None:
        """The value, or None when it is undefined (an input missing, division by zero,
        overflow, ...): a derived figure is never invented. value_or_reason says why."""
        v, _ = self.value_or_reason(values)
        return v

    def value_or_reason(self, values: dict[str, float]) -> tuple[float | None, str | None]:
        try:
            return _eval(self.tree.body, values), None
        except KeyError as exc:
            return None, f"metric {exc.args[0]!r} has no value"
        except ZeroDivisionError:
            return None, "division by zero"
        except (ArithmeticError, ValueError) as exc:
            return None, str(exc) or type(exc).__name__

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "expr": self.expr, "unit": self.unit, "better": self.better}


def compile_expr(expr: str) -> ast.Expression:
    """Parse and check an expression; ValueError says what is not allowed."""
    if len(expr) > MAX_CHARS:
        raise ValueError(f"{len(expr)} characters; at most {MAX_CHARS}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse {_short(expr)} ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{_short(expr)} nests too deep; at most {MAX_DEPTH} levels "
                         "(split it into several derived metrics)") from None
    count, stack = 0, [(tree, 0)]
    while stack:                       # iterative: the checks must not recurse either
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise ValueError(f"{_short(expr)} is too long or nests too deep; at most "
                             f"{MAX_NODES} terms and {MAX_DEPTH} levels (split it into "
                             "several derived metrics)")
        ok = isinstance(node, ast.Expression | ast.Name | ast.Load) or (
            isinstance(node, ast.BinOp) and type(node.op) in _OPS) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd)) or (
            isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)) or isinstance(node, ast.operator | ast.unaryop)
        if not ok:
            raise ValueError(f"{_short(expr)}: {type(node).__name__} is not allowed (numbers, "
                             "metric names, + - * / ** and parentheses only)")
        if isinstance(node, ast.Constant):
            try:
                finite = math.isfinite(float(node.value))
            except OverflowError:
                finite = False
            if not finite:
                raise ValueError(f"{_short(expr)}: the number {_short(str(node.value))} is "
                                 "not a finite floating-point value")
        stack += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return tree


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def _eval(node: ast.AST, values: dict[str, float]) -> float:
    """Floating point throughout (an integer power such as 9**9**9 would compute for hours);
    every intermediate is a finite real number or DerivedError says what it is instead."""
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        v = values[node.id]
        if not isinstance(v, int | float) or not math.isfinite(v):
            raise DerivedError(f"metric {node.id!r} is {v!r}, not a finite number")
        return float(v)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, values)
        return -v if isinstance(node.op, ast.USub) else v
    assert isinstance(node, ast.BinOp)
    a, b = _eval(node.left, values), _eval(node.right, values)
    try:
        v = _OPS[type(node.op)](a, b)
    except OverflowError:
        raise DerivedError("overflow (the result is beyond 1.8e308)") from None
    if isinstance(v, complex):
        raise DerivedError(f"{a:g} ** {b:g} is not a real number")
    if not math.isfinite(v):
        raise DerivedError("overflow (the result is beyond 1.8e308)")
    if v == 0.0 and a != 0.0 and not isinstance(node.op, ast.Add | ast.Sub) and (
            b != 0.0 or isinstance(node.op, ast.Pow)):
        raise DerivedError("underflow (a non-zero result below 1e-308 became 0)")
    return v


def derived_rows(derived: list[Derived], rows: list[dict[str, Any]], base: dict[str, Any]
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """Rows for the derived metrics of one launch, from its figure-of-merit rows; or the
    problem (which metric, why) when one has no finite value."""
    values = {ident(r["metric"]): r["median"] for r in rows
              if isinstance(r.get("median"), int | float)}
    out = []
    for d in derived:
        v, why = d.value_or_reason(values)
        if v is None:
            return [], f"derived metric {d.name!r} = {d.expr}: {why}"
        values[ident(d.name)] = v
        out.append({**base, "metric": d.name, "unit": d.unit, "better": d.better,
                    "median": v, "mean": v, "min": v, "max": v, "samples": [v],
                    "extra": {**(base.get("extra") or {}), "derived": d.expr}})
    return out, None
