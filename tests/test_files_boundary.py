"""Every file mpibench writes goes through mpibench.files.write_file (temporary file, fsync,
rename): no module writes or rewrites a file any other way, so no crash, full disk or SIGKILL
leaves a half-written report, script or record behind. Appending (logs, the lock file) is
allowed: it never truncates what is there."""

from __future__ import annotations

import ast
from pathlib import Path

from support import srcast

PKG = Path(__file__).resolve().parents[1] / "src" / "mpibench"


def _offences(path: Path) -> list[str]:
    out = []
    for node in ast.walk(srcast.parse(path)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
            else ""
        if name in ("write_text", "write_bytes"):
            out.append(f"{node.lineno}: .{name}()")
        elif name in ("savefig",) and node.args and not (
                isinstance(node.args[0], ast.Name) and node.args[0].id == "buf"):
            out.append(f"{node.lineno}: savefig to a path")
        elif name in ("open", "fdopen"):
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            # appending (logs, the lock file) never truncates what is there: allowed
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and (
                    "w" in mode.value or "x" in mode.value
                    or ("+" in mode.value and "a" not in mode.value)):
                out.append(f"{node.lineno}: open(..., {mode.value!r})")
    return out


def test_the_detector_finds_direct_writes(tmp_path):
    sample = tmp_path / "probe.py"
    sample.write_text('from pathlib import Path\nPath("x").write_text("a")\n'
                      'open("y", "w").write("b")\nfig.savefig("z.svg")\n')
    assert len(_offences(sample)) == 3, _offences(sample)


def test_every_write_goes_through_write_file():
    bad = {str(p.relative_to(PKG)): o for p in sorted(PKG.rglob("*.py"))
           if p.name != "files.py" and (o := _offences(p))}
    assert not bad, "files written without mpibench.files.write_file:\n" + "\n".join(
        f"  {f}:{line}" for f, lines in bad.items() for line in lines)
