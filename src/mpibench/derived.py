"""Derived figures of merit: arithmetic on a cell's own metrics, e.g. jobs per day.

    derived = [{ name = "jobs/day", expr = "86400 / wall_time", unit = "jobs/day",
                 better = "higher" }]

An expression uses numbers, + - * / ** and parentheses, and metric names written as
identifiers: `wall_time`, and every figure of merit with each character that cannot be in
an identifier replaced by `_` (`ns/day` -> `ns_day`). Earlier derived metrics may be used by
later ones. It is parsed once (Python's ast, a whitelist of node types; never eval) and
evaluated per launch, so a derived metric is a per-launch value like any other and gets
the same launch-level statistics.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass
from typing import Any

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow}


def ident(metric: str) -> str:
    """The identifier a metric is written as in an expression: ns/day -> ns_day."""
    s = re.sub(r"\W", "_", metric)
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
        """The value, or None when an input is missing or the arithmetic is undefined
        (division by zero, overflow): a derived figure is never invented."""
        try:
            v = _eval(self.tree.body, values)
        except (KeyError, ZeroDivisionError, OverflowError, ValueError):
            return None
        return float(v) if isinstance(v, int | float) and math.isfinite(v) else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "expr": self.expr, "unit": self.unit, "better": self.better}


def compile_expr(expr: str) -> ast.Expression:
    """Parse and check an expression; ValueError says what is not allowed."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse {expr!r} ({exc.msg})") from None
    for node in ast.walk(tree):
        ok = isinstance(node, ast.Expression | ast.Name | ast.Load) or (
            isinstance(node, ast.BinOp) and type(node.op) in _OPS) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd)) or (
            isinstance(node, ast.Constant) and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)) or isinstance(node, ast.operator | ast.unaryop)
        if not ok:
            raise ValueError(f"{expr!r}: {type(node).__name__} is not allowed (numbers, metric "
                             "names, + - * / ** and parentheses only)")
    return tree


def _eval(node: ast.AST, values: dict[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, values)
        return -v if isinstance(node.op, ast.USub) else v
    assert isinstance(node, ast.BinOp)
    return _OPS[type(node.op)](_eval(node.left, values), _eval(node.right, values))


def derived_rows(derived: list[Derived], rows: list[dict[str, Any]], base: dict[str, Any]
                 ) -> list[dict[str, Any]]:
    """Rows for the derived metrics of one launch, from its figure-of-merit rows."""
    values = {ident(r["metric"]): r["median"] for r in rows
              if isinstance(r.get("median"), int | float)}
    out = []
    for d in derived:
        v = d.evaluate(values)
        if v is None:
            continue
        values[ident(d.name)] = v
        out.append({**base, "metric": d.name, "unit": d.unit, "better": d.better,
                    "median": v, "mean": v, "min": v, "max": v, "samples": [v],
                    "extra": {**(base.get("extra") or {}), "derived": d.expr}})
    return out
