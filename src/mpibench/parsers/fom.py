"""Figures of merit of an application launch: the values its output shows (a regex per
metric, the last match), its wall time, and the metrics derived from them."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: parsers sit below campaign/ (tests/test_layers.py)
    from mpibench.campaign.plan import Cell

# what a figure of merit may capture: an ASCII decimal number. float() alone also takes
# 'inf', 'nan', '1e999' (inf), '1_000' and other scripts' digits ('\u0663' is 3).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def fom_value(raw: str) -> tuple[float | None, str | None]:
    """The number a figure of merit captured, or why it is not one (a finite decimal)."""
    text = raw.strip()
    if not _NUMBER.fullmatch(text):
        return None, f"captured {raw[:80]!r}, not a number"
    v = float(text)
    if not math.isfinite(v) or (v == 0.0 and re.search(r"[1-9]", re.split("[eE]", text)[0])):
        return None, f"captured {raw[:80]!r}, beyond the range of a floating-point number"
    return v, None


def app_records(cell: Cell, run_dir: Path, elapsed: float
                ) -> tuple[list[dict[str, Any]], str | None]:
    """Figure-of-merit rows (benchmark = group name, size None, statistic 'value') plus the
    wall time; or a problem when a regex finds nothing."""
    g = cell.group
    texts: dict[str, str] = {}

    def read(name: str) -> str:
        if name not in texts:
            p = run_dir / name
            texts[name] = p.read_text(errors="replace") if p.exists() else ""
        return texts[name]

    rows = []
    base = {"benchmark": g.name, "size": None, "np": cell.variant.np, "statistic": "value",
            "n": 1, "status": "ok", "extra": {"params": cell.params}}
    for fom in g.foms:
        if fom.regex is None:
            continue
        if fom.source == "output":
            text = read("stdout.txt") + "\n" + read("stderr.txt")
        elif fom.source in ("stdout", "stderr"):
            text = read(f"{fom.source}.txt")
        else:
            text = read(fom.source)
        matches = fom.regex.findall(text)
        if not matches:
            return [], (f"figure of merit {fom.name!r}: regex {fom.regex.pattern!r} matched "
                        f"nothing in {fom.source}")
        last = matches[-1]
        raw = last[0] if isinstance(last, tuple) else last
        value, why = fom_value(raw)
        if value is None:
            return [], f"figure of merit {fom.name!r}: {why}"
        rows.append({**base, "metric": fom.name, "unit": fom.unit, "better": fom.better,
                     "median": value, "mean": value, "min": value, "max": value,
                     "samples": [value]})
    rows.append({**base, "metric": "wall_time", "unit": "s", "better": "lower",
                 "median": elapsed, "mean": elapsed, "min": elapsed, "max": elapsed,
                 "samples": [elapsed]})
    if g.derived:
        from mpibench.derived import derived_rows

        extra, problem = derived_rows(g.derived, rows, base)
        if problem:
            return [], problem
        rows += extra
    return rows, None
