"""No new function over MAX_LINES lines in src/mpibench: a long function is split into named
steps (as the parsers were: a file header, a block header, a table's line, how the file
ended). ALLOWED is the short list of those still longer, each with why; it may only shrink
(remove an entry when its function is split)."""

from __future__ import annotations

import ast
from pathlib import Path

from support import srcast

SRC = Path(__file__).resolve().parent.parent / "src" / "mpibench"
MAX_LINES = 80

# "path/below/mpibench.py:Qualified.name" -> why it is still longer than MAX_LINES
ALLOWED: dict[str, str] = {}


def _long_in(node: ast.AST, rel: str, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                n = child.end_lineno - child.lineno + 1
                if n > MAX_LINES:
                    out[f"{rel}:{name}"] = n
            _long_in(child, rel, name + ".", out)
        else:
            _long_in(child, rel, prefix, out)


def long_functions(root: Path = SRC) -> dict[str, int]:
    """{"path:qualname": lines} of every function and method longer than MAX_LINES
    (decorators excluded, nested functions counted in their parent and on their own)."""
    out: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        _long_in(srcast.parse(path), path.relative_to(root).as_posix(), "", out)
    return out


def test_no_new_function_over_the_limit():
    new = {k: n for k, n in long_functions().items() if k not in ALLOWED}
    assert not new, (f"functions over {MAX_LINES} lines: "
                     + "; ".join(f"{k} ({n} lines)" for k, n in sorted(new.items()))
                     + ": split them into named steps (or, with a reason, add to ALLOWED)")


def test_the_check_sees_a_long_method(tmp_path):
    pkg = tmp_path / "mpibench"
    (pkg / "parsers").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    (pkg / "parsers" / "bad.py").write_text(
        f"class P:\n    def parse(self):\n{body.replace('    ', '        ')}\n"
        f"def short():\n    return 1\n\n\ndef long():\n{body}    return 0\n")
    assert long_functions(pkg) == {"parsers/bad.py:P.parse": MAX_LINES + 1,
                                   "parsers/bad.py:long": MAX_LINES + 2}
