"""Control characters from data never reach the terminal: every table and line mpibench
prints goes through a SafeConsole (mpibench.termsafe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.cli import main as cli_main
from mpibench.termsafe import safe_text

OSU = Path(__file__).parent / "data" / "osu"
HOSTILE = "lab\x1b]0;owned\x07el\x1b[2J\x1b[31m\b\b\u202eRED\x9b1m"


def test_safe_text_replaces_every_control_but_tab_and_newline():
    assert safe_text("a\tb\nc") == "a\tb\nc"
    out = safe_text(HOSTILE)
    assert not any(ord(ch) < 32 or 0x7f <= ord(ch) <= 0x9f for ch in out)
    assert "\u202e" not in out and "RED" in out and "lab" in out


@pytest.mark.parametrize("verb", [["compare"], ["compare", "--format", "markdown"],
                                  ["campaign", "list"], ["compare", "--results"]])
def test_hostile_labels_reach_the_terminal_as_text(tmp_path, capsys, verb):
    db = tmp_path / "s.db"
    files = sorted(OSU.glob("*osu_latency.txt"))[:2]
    for i, f in enumerate(files):
        assert cli_main(["import", str(f), "--label", f"{HOSTILE}{i}", "--db", str(db)]) == 0
    capsys.readouterr()
    cli_main([*verb, "--db", str(db)])
    out = capsys.readouterr()
    for stream in (out.out, out.err):
        assert "\x1b" not in stream and "\x07" not in stream and "\x08" not in stream
        assert "\u202e" not in stream and "\x9b" not in stream
