"""Every `mpibench ...` command shown in the README and docs/ is accepted by the command line
as written (verbs, flags and their values parse), so the documentation cannot drift from the
CLI unnoticed. Parsing only: nothing is launched."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from mpibench.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "examples").rglob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")
_SHELL_BLOCKS = ("", "sh", "bash", "shell", "console")  # not text, toml, json ...
_START = re.compile(r"^\s*(?:\$\s+)?(?:\S*/)?mpibench\s")


def _commands(path: Path) -> list[tuple[str, int, str]]:
    """(file, line, command) for each mpibench command line in the file's code blocks."""
    out, in_block, shell, pending, start = [], False, False, "", 0
    for no, line in enumerate(path.read_text().splitlines(), 1):
        m = _FENCE.match(line.strip())
        if m:
            in_block = not in_block
            shell = in_block and m.group(1) in _SHELL_BLOCKS
            pending = ""
            continue
        if not shell:
            continue
        if pending:
            pending += " " + line.strip()
        elif _START.match(line):
            pending, start = line.strip(), no
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        out.append((path.name, start, pending))
        pending = ""
    return out


def _argv(command: str) -> list[str] | None:
    """The mpibench argument vector of a shell line; None for lines this test cannot judge
    without a shell (substitutions, variables)."""
    if "$(" in command or "`" in command or re.search(r"\$\{?[A-Za-z_]", command):
        return None
    words = shlex.split(command, comments=True)
    while words and not re.fullmatch(r"(?:\S*/)?mpibench", words[0]):
        words.pop(0)  # a "$" prompt
    for i, w in enumerate(words):
        if w in ("|", "&&", "||", ";", ">", ">>", "2>&1") or w.startswith((">", "2>")):
            words = words[:i]
            break
    return words[1:]


CASES = [c for doc in DOCS if doc.exists() for c in _commands(doc)]


def test_the_docs_show_commands():
    # the extraction itself must find the README's commands, or this test checks nothing
    assert sum(1 for f, _, _ in CASES if f == "README.md") >= 10


@pytest.mark.parametrize("where, line, command", CASES,
                         ids=[f"{f}:{n}" for f, n, _ in CASES])
def test_documented_command_parses(where, line, command, capsys):
    argv = _argv(command)
    if argv is None:
        pytest.skip("uses shell substitutions")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.code == 0, f"{where}:{line}: `{command}` is refused: {err[-1] if err else ''}"
        return
    assert getattr(args, "func", None), f"{where}:{line}: `{command}` names no verb"
