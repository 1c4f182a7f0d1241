"""The layer order of src/mpibench (docs/architecture.md "Layers"): a module imports only from
its own layer or the layers below. Every import counts, at the top of a module or inside a
function, except those under `if TYPE_CHECKING:` (types only, nothing runs).

KNOWN lists the imports that still run up a layer: the list may only shrink. An import that
runs up and is not in it fails this test (remove an entry when its import goes)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from support import srcast

SRC = Path(__file__).resolve().parent.parent / "src" / "mpibench"

# bottom to top; a name is a top-level module or package of mpibench, or a dotted module
# inside one (report.data) placing that module in another layer than its package
LAYERS: list[set[str]] = [
    # foundations: no mpibench imports beyond this layer
    {"__init__", "errors", "units", "termsafe", "files", "envnames", "registry", "benchmarks",
     "linkmodel", "derived", "fingerprint"},
    # primitives: external commands, the store, statistics, pure parsers
    {"process", "store", "stats", "parsers", "libsettings"},
    # the results model: cells read from the store (one value per launch), the comparability
    # and row rules, the table model every format renders; used by the stopping rule of
    # repeats=auto and by profiles as much as by the report
    {"report.data", "report.rules", "report.render"},
    # what a stack is, how its transports are set and how it is launched
    {"stacks", "transports", "launchers"},
    # running things: schedulers, one cell's command, builds, imports, profiles
    {"schedulers", "execute", "build", "verify", "peers", "importer", "profile",
     "slurm_local", "testbed"},
    # campaigns: plan, runner, policies
    {"campaign"},
    # reading results back: reports and the pandas API
    {"report", "api", "gate", "gate_reference"},
    # verbs
    {"commands", "cli", "__main__", "fabric"},
]

# (importing module, imported module): the imports that still run up a layer (none left)
KNOWN: set[tuple[str, str]] = set()


def layer_of(name: str) -> int:
    """The layer of a dotted name below mpibench ('report.data.x'): its longest prefix that
    is in LAYERS."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        for i, names in enumerate(LAYERS):
            if prefix in names:
                return i
    raise AssertionError(f"mpibench.{name} is in no layer of tests/test_layers.py: add it")


def _type_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under `if TYPE_CHECKING:`."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for x in ast.walk(sub):
                    if isinstance(x, ast.Import | ast.ImportFrom):
                        out.add(x.lineno)
    return out


def imports_up() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        mine = layer_of(rel.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
        tree = srcast.parse(path)
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                if not node.module or not node.module.startswith("mpibench"):
                    continue
                mods = ([f"mpibench.{a.name}" for a in node.names]
                        if node.module == "mpibench" else [node.module])
            else:
                mods = [a.name for a in node.names if a.name.startswith("mpibench.")]
            for m in mods:
                parts = m.split(".")
                if len(parts) < 2 or parts[1].startswith("__"):
                    continue                    # mpibench.__version__, __file__
                if layer_of(".".join(parts[1:])) > mine:
                    found.add((rel, m))
    return found


def test_no_import_runs_up_a_layer():
    up = imports_up()
    new = sorted(up - KNOWN)
    assert not new, ("imports that run up a layer (docs/architecture.md 'Layers'): "
                     + "; ".join(f"{a} -> {b}" for a, b in new))


def test_the_check_sees_an_import_that_runs_up(tmp_path, monkeypatch):
    """The test can fail: a parser importing the report is caught."""
    pkg = tmp_path / "mpibench"
    (pkg / "parsers").mkdir(parents=True)
    (pkg / "parsers" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from mpibench.report.data import load_cells\n"
        "if TYPE_CHECKING:\n    from mpibench.campaign.plan import Cell\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", pkg)
    assert imports_up() == {("parsers/bad.py", "mpibench.report.data")}


# Import circles between modules (imports at any depth, TYPE_CHECKING aside) that are still
# tolerated, each a set of modules below mpibench; the list may only shrink, and is empty:
# peers/ and its suites no longer form one since the suites import peers/base.py instead of
# the package, and the store and its archive no longer either since the Store lives in
# store/local.py and ArchiveStore registers itself there for postgresql:// URLs.
KNOWN_CIRCLES: set[frozenset[str]] = set()


def _module_of(name: str) -> str | None:
    """'mpibench.a.b' -> 'a.b' when that is a module or package of SRC, else its longest
    prefix that is (a name imported from a module), None outside mpibench."""
    parts = name.split(".")[1:]
    while parts:
        p = SRC.joinpath(*parts)
        if p.with_suffix(".py").is_file() or (p / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        me = path.relative_to(SRC).as_posix().removesuffix(".py").removesuffix("/__init__") \
            .replace("/", ".")
        tree = srcast.parse(path)
        skip = _type_only(tree)
        out = graph.setdefault(me, set())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                if not node.module or not node.module.startswith("mpibench"):
                    continue
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                names = [a.name for a in node.names if a.name.startswith("mpibench.")]
            for n in names:
                m = _module_of(n)
                if m and m != me and not m.startswith("__"):
                    out.add(m)
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.add(frozenset(comp))
    return found


def test_no_new_import_circle():
    new = circles(import_graph()) - KNOWN_CIRCLES
    assert not new, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in new)


def test_the_check_sees_a_circle_and_skips_types():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == {frozenset({"a", "b", "c"})}
    assert circles({"a": {"b"}, "b": set()}) == set()
