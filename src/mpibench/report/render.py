"""One table model and one renderer per format.

Every table mpibench prints (the comparison, a set's results, the gain table, grids, line
rate, first call, scaling, cost, the launches-needed plan) is a `Table`; `render(table, fmt)`
prints it as terminal (rich, or fixed-width text past PLAIN_TABLE_ROWS rows), Markdown, CSV
(its records) or JSON (its records and notes). The rich console is set up in one place
(`console`), so terminal width, colour and markup handling are the same for every table.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpibench.errors import UsageError

FORMATS = ("terminal", "markdown", "csv", "json")

# Above this many rows, terminal tables are laid out as plain text: rich measures and wraps
# every cell (seconds for 5,000 rows) and nobody reads such a table in colour anyway.
PLAIN_TABLE_ROWS = 300


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    bold_rows: set[int] = field(default_factory=set)
    marked: set[tuple[int, int]] = field(default_factory=set)   # (row, col) best cells
    kind: str = ""
    left_cols: int = 1            # leading columns aligned left (names), the rest right
    # (label, text) lines after the notes, e.g. ("verdict", ...): terminal 'verdict: ...',
    # Markdown '**Verdict:** ...'
    footer: list[tuple[str, str]] = field(default_factory=list)
    md_heading_level: int = 3


def clean_json(o):
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: clean_json(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [clean_json(v) for v in o]
    if isinstance(o, np.generic):
        return clean_json(o.item())
    return o


def console(buf: io.StringIO, width: int | None = None):
    """The rich console every terminal table prints through: the terminal's width (240
    columns when not a terminal), colour only on a terminal, no markup highlighting."""
    from mpibench.termsafe import SafeConsole as Console

    tty = sys.stdout.isatty()
    if width is None:
        width = shutil.get_terminal_size((200, 40)).columns if tty else 240
    return Console(file=buf, width=width, force_terminal=tty,
                   color_system="auto" if tty else None, highlight=False, soft_wrap=False)


def md_escape(s: Any) -> str:
    """Escape text for a Markdown table cell (user labels may hold | or HTML, and control
    characters, which no Markdown needs and a terminal would obey)."""
    from mpibench.termsafe import safe_text

    text = "" if s is None else safe_text(str(s))
    for ch in ("\\", "|", "*", "_", "`", "[", "]"):
        text = text.replace(ch, "\\" + ch)
    # '<' and '&' as entities: Markdown renderers pass raw HTML through.
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\n", " ")


def md_table(hdr: list[str], body: list[list[str]], bold_rows: Iterable[int] = (),
             marked: Iterable[tuple[int, int]] = (), left_cols: int = 2) -> str:
    bold, mark = set(bold_rows), set(marked)
    out = ["| " + " | ".join(md_escape(h) for h in hdr) + " |",
           "|" + "|".join("---" if i < left_cols else "---:" for i in range(len(hdr))) + "|"]
    for i, line in enumerate(body):
        cells = []
        for j, x in enumerate(line):
            e = md_escape(x)
            if x and (i in bold or (i, j) in mark):
                e = f"**{e}**"
            cells.append(e)
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def plain_table(title: str, header: list[str], body: list[list[str]], caption: str = "",
                left_cols: int = 2) -> str:
    """Fixed-width text table in the same shape as the rich tables (no wrapping). It is
    written out as it is, not through a SafeConsole: every control character in the text
    becomes U+FFFD (termsafe), a newline or tab inside a cell too, so a row stays a line."""
    from mpibench.termsafe import safe_text

    def one_line(x: str) -> str:
        return safe_text(x).replace("\t", " ").replace("\n", "\ufffd")

    title, caption = one_line(title), safe_text(caption).replace("\t", " ")
    header = [one_line(h) for h in header]
    body = [[one_line(x) for x in line] for line in body]
    ncol = len(header)
    widths = [len(h) for h in header]
    for line in body:
        for j, x in enumerate(line[:ncol]):
            if len(x) > widths[j]:
                widths[j] = len(x)

    def fmt(line: list[str]) -> str:
        cells = [(x.ljust(widths[j]) if j < left_cols else x.rjust(widths[j]))
                 for j, x in enumerate(line[:ncol])]
        return "  " + "   ".join(cells).rstrip()

    out = [title, "", fmt(header), " " + "-" * (sum(widths) + 3 * (ncol - 1) + 2)]
    out += [fmt(line) for line in body]
    if caption:
        out += [""] + caption.splitlines()
    return "\n".join(out)


def _marked_rows(t: Table) -> list[list[str]]:
    return [[x + (" *" if (i, j) in t.marked else "") for j, x in enumerate(line)]
            for i, line in enumerate(t.rows)]


def terminal(t: Table, width: int | None = None) -> str:
    rows = _marked_rows(t)
    notes = [f"[{i}] {n}" for i, n in enumerate(t.notes, 1)]
    if len(rows) > PLAIN_TABLE_ROWS:
        text = plain_table(t.title, t.header, rows, t.caption, left_cols=t.left_cols)
        return "\n".join([text, *notes, *(f"{k}: {v}" for k, v in t.footer)])
    from rich import box
    from rich.table import Table as RTable
    from rich.text import Text

    buf = io.StringIO()
    con = console(buf, width)
    # Text() everywhere: user names like "[bold]" or "[/]" must not be read as rich markup
    rt = RTable(title=Text(t.title), title_justify="left", box=box.SIMPLE_HEAD,
                caption=Text(t.caption) if t.caption else None, caption_justify="left")
    for j, h in enumerate(t.header):
        rt.add_column(Text(h), justify="left" if j < t.left_cols else "right", overflow="fold")
    for i, line in enumerate(rows):
        rt.add_row(*[Text(x) for x in line], style="bold" if i in t.bold_rows else None)
    con.print(rt)
    for n in notes:
        con.print(Text(n), style="bold red" if n.split("] ", 1)[-1].startswith("WARNING")
                  else None)
    for k, v in t.footer:
        con.print(Text(f"{k}: {v}"), style="bold")
    return buf.getvalue().rstrip("\n")


def markdown(t: Table) -> str:
    h = "#" * t.md_heading_level
    parts = [f"{h} {md_escape(t.title)}", ""]
    if t.caption:
        parts += [md_escape(t.caption), ""]
    parts.append(md_table(t.header, t.rows, t.bold_rows, t.marked, t.left_cols))
    if t.notes:
        parts.append("")
        parts += [f"\\[{i}\\] **{md_escape(n)}**  " if n.startswith("WARNING") else
                  f"\\[{i}\\] {md_escape(n)}  " for i, n in enumerate(t.notes, 1)]
    for k, v in t.footer:   # a paragraph each: Markdown joins adjacent lines into one
        parts += ["", f"**{md_escape(k.capitalize())}:** {md_escape(v)}"]
    return "\n".join(parts)


# A spreadsheet reads a cell that starts with one of these as a formula (=HYPERLINK(...) in
# an import label, a derived unit, a parameter value): CSV injection. Such a text cell gets a
# leading ' (shown, never evaluated); numbers are written as they are.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet evaluates: text starting with = + - @ tab or CR is
    prefixed with a quote mark; numbers (a negative number too) and None are unchanged."""
    if isinstance(value, str):
        # a CR is no line end to csv.writer (lineterminator "\n"), so it left the cell
        # unquoted and a reader split the row there: as LF it is quoted
        value = value.replace("\r\n", "\n").replace("\r", "\n")
        if value.startswith(_FORMULA_START) or value.startswith("\n="):
            return "'" + value
    return value


def csv_rows(rows: Iterable[Iterable[Any]]) -> str:
    """Rows (the first one the header) as CSV text, every cell through csv_cell."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow([csv_cell("" if v is None else v) for v in row])
    return buf.getvalue()


def csv_text(records: list[dict[str, Any]]) -> str:
    """One row per record; the union of their keys as columns; dicts and lists as JSON.
    Every CSV mpibench writes goes through csv_rows (formula cells neutralised)."""
    if not records:
        return ""
    cols: list[str] = []
    for r in records:
        cols += [k for k in r if k not in cols]
    return csv_rows([cols] + [[json.dumps(r[k], sort_keys=True, default=str)
                               if isinstance(r.get(k), dict | list) else r.get(k)
                               for k in cols] for r in records])


def json_text(obj: Any) -> str:
    return json.dumps(clean_json(obj), indent=2)


def table_obj(t: Table) -> dict[str, Any]:
    """A Table as the JSON object its json rendering prints (records, not text rows)."""
    return clean_json({"title": t.title, "kind": t.kind, "caption": t.caption,
                       "rows": t.records, "notes": t.notes})


def render(t: Table, fmt: str = "terminal") -> str:
    """A Table as terminal | markdown | csv | json text."""
    if fmt == "terminal":
        return terminal(t)
    if fmt == "markdown":
        return markdown(t)
    if fmt == "csv":
        return csv_text(t.records)
    if fmt == "json":
        return json_text(table_obj(t))
    raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def render_table(t: Table, fmt: str = "terminal") -> str:
    """A Table as terminal | markdown | csv | json (the name the section builders use)."""
    return render(t, fmt)


__all__ = ["Table", "FORMATS", "PLAIN_TABLE_ROWS", "render", "render_table", "table_obj", "terminal", "markdown",
           "csv_text", "json_text", "clean_json", "console", "md_escape", "md_table",
           "plain_table"]
