"""The table model's terminal renderer past PLAIN_TABLE_ROWS rows: fixed-width text that
keeps the rows, their order and their cells, and lets no control character through (the
rich path has SafeConsole; this text is written to stdout as it is)."""

from __future__ import annotations

from mpibench.report.render import PLAIN_TABLE_ROWS, Table, plain_table, terminal

HOSTILE = "lab\x1b]0;owned\x07el\x1b[2J\x1b[31m\b\b\u202eRED\x9b1m\nnext\tline"


def _no_controls(text: str) -> None:
    for ch in ("\x1b", "\x07", "\x08", "\u202e", "\x9b", "\t"):
        assert ch not in text, repr(ch)


def test_long_tables_are_plain_text_without_control_characters():
    rows = [[f"{HOSTILE}{i}", str(i)] for i in range(PLAIN_TABLE_ROWS + 1)]
    text = terminal(Table(title=f"t {HOSTILE}", header=["set", "value"], rows=rows,
                          caption=f"first line\n{HOSTILE}"))
    _no_controls(text)
    lines = text.splitlines()
    body = [ln for ln in lines if ln.startswith("  lab")]
    # one line per row (a newline inside a cell does not start another), in order
    assert len(body) == PLAIN_TABLE_ROWS + 1
    assert [ln.split()[-1] for ln in body] == [str(i) for i in range(PLAIN_TABLE_ROWS + 1)]
    assert all("RED" in ln and "next line" in ln for ln in body)
    assert lines[-3:] == ["first line", lines[-2], "next line"]   # a caption keeps its lines


def test_plain_table_aligns_columns():
    text = plain_table("title", ["name", "n"], [["a", "1"], ["long name", "100"]],
                       left_cols=1)
    assert text.splitlines() == ["title", "", "  name          n",
                                 " " + "-" * 17,
                                 "  a             1",
                                 "  long name   100"]
