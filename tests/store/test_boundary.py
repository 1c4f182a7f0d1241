"""All SQL lives behind src/mpibench/store/: no module outside it imports sqlite3, runs a
statement, or holds SQL text. A schema change then touches one folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support import srcast

PKG = Path(__file__).resolve().parents[2] / "src" / "mpibench"
SQL = re.compile(r"\b(SELECT\s+[\w*(].*\bFROM\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|"
                 r"DELETE\s+FROM\b|CREATE\s+(TABLE|INDEX|VIEW)\b|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE|"
                 r"SAVEPOINT\s+\w+)", re.S)


def _offences(path: Path) -> list[str]:
    tree = srcast.parse(path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            if any(n == "sqlite3" or n.startswith("sqlite3.") for n in names):
                out.append(f"{node.lineno}: imports sqlite3")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("execute", "executemany", "executescript"):
            out.append(f"{node.lineno}: runs .{node.func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SQL.search(node.value):
            out.append(f"{node.lineno}: SQL text {node.value[:50]!r}")
    return out


def test_the_detector_finds_sql(tmp_path):
    # the check must be able to fail: a sample of what it exists to catch
    sample = tmp_path / "probe.py"
    sample.write_text('import sqlite3\nq = "SELECT id FROM runs WHERE x=?"\ncon.execute(q)\n')
    assert len(_offences(sample)) == 3, _offences(sample)


def test_no_sql_outside_the_store():
    store = PKG / "store"
    bad = {str(p.relative_to(PKG)): o for p in sorted(PKG.rglob("*.py"))
           if store not in p.parents and (o := _offences(p))}
    assert not bad, "SQL outside src/mpibench/store/ (add a named query there):\n" + "\n".join(
        f"  {f}:{line}" for f, lines in bad.items() for line in lines)
