"""The code-shape figures of issue 20 for a checkout: the largest module per package, the
functions over 80 lines, and the imports that run up a layer (the layer map and rule of
tests/test_layers.py). Duplicate pairs per file come from the `duplicates` tool.

    python scripts/code_figures.py            # this checkout
    python scripts/code_figures.py --repo DIR  # another one (e.g. `git archive REV | tar -x`)
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

LONG = 80


def figures(repo: Path, layers_from: Path) -> str:
    src = repo / "src" / "mpibench"
    spec = importlib.util.spec_from_file_location("layers", layers_from)
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    layers.SRC = src
    largest: dict[str, tuple[str, int]] = {}
    long_funcs: list[tuple[int, str]] = []
    files = 0
    for path in sorted(src.rglob("*.py")):
        files += 1
        rel = path.relative_to(src).as_posix()
        pkg = rel.split("/")[0] if "/" in rel else "(top)"
        text = path.read_text()
        n = text.count("\n")
        if n > largest.get(pkg, ("", 0))[1]:
            largest[pkg] = (rel, n)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > LONG:
                    long_funcs.append((length, f"{rel}:{node.name}"))
    out = [f"{files} modules under src/mpibench", "largest module per package:"]
    out += [f"  {pkg:12s} {rel} {n}" for pkg, (rel, n) in sorted(largest.items())]
    out.append(f"functions over {LONG} lines: {len(long_funcs)}")
    out += [f"  {name} {n}" for n, name in sorted(long_funcs, reverse=True)]
    try:
        up = sorted(layers.imports_up())
        out.append(f"imports that run up a layer: {len(up)}")
        out += [f"  {a} -> {b}" for a, b in up]
    except AssertionError as exc:               # a module the layer map does not place
        out.append(f"imports that run up a layer: ? ({exc})")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=here, help="the checkout (default: this one)")
    p.add_argument("--layers", type=Path, default=here / "tests" / "test_layers.py",
                   help="the layer map and rule (default: this checkout's tests/test_layers.py)")
    args = p.parse_args(argv)
    print(figures(args.repo.resolve(), args.layers.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
