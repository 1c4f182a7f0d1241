"""NetPIPE 3.x output: the -o file ("size  Mbps  seconds" per line) or its stdout
("  0:       1 bytes 163840 times -->     20.76 Mbps in       0.37 usec").

NetPIPE's Mbps is 2^20 bits per second (it divides by 1024*1024; checked against a real run:
65536 bytes in 18.18 us -> 27507 "Mbps"), and its time is the one-way time of the best of its
trials (ping-pong round trip / 2). Rows: benchmark "NetPIPE", np 2, mean = that time in us
(statistic "min": the best trial, not an average), bandwidth_mbps in 10^6 bytes/s from the
printed Mbps (more digits than the time column). NetPIPE sizes include its perturbations
(n-3, n, n+3), so sizes are not powers of two.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from mpibench.parsers.base import (
    ABORT_PATTERNS,
    RULE_LINE,
    ParseResult,
    as_float,
    as_int,
    clip,
    finite,
    flag_out_of_bounds,
    split_lines,
)

STDOUT_RE = re.compile(r"^\s*(\d+):\s+(\d+)\s+bytes\s+(\d+)\s+times\s+-->\s+(\S+)\s+Mbps\s+in\s+"
                       r"(\S+)\s+usec\s*$", re.ASCII)
# any line shaped like a row (its index, or a number in it, may be damaged)
ROW_RE = re.compile(r"^\s*(\S+):\s+\S+\s+bytes\s+\S+\s+times\s+-->", re.ASCII)
MBPS_TO_MBYTES = (1 << 20) / 8 / 1e6        # NetPIPE Mbps -> 10^6 bytes/s


def _record(size: int, mbps: float, t_us: float, lineno: int,
            extra: dict[str, Any]) -> dict[str, Any]:
    return {"benchmark": "NetPIPE", "size": size, "np": 2, "status": "ok", "metric": "time",
            "unit": "us", "better": "lower", "statistic": "min", "n": None, "mean": t_us,
            "bandwidth_mbps": mbps * MBPS_TO_MBYTES,
            "extra": {"mbps_printed": mbps, "line": lineno, **extra}}


def parse_netpipe(text: str) -> ParseResult:
    res = ParseResult(format="netpipe", tool="NetPIPE")
    lines = split_lines(text)
    partial_last = bool(lines) and not text.endswith(("\n", "\r"))
    stdout_form = any(STDOUT_RE.match(ln) for ln in lines[:400])
    res.meta["form"] = "stdout" if stdout_form else "output file (-o)"
    st = _Stdout()
    abort = None
    last_content = 0
    for i, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        last_content = i
        if RULE_LINE.match(s):      # an MPI library's own banner rule: not NetPIPE's output
            continue
        if partial_last and i == len(lines):
            res.problem(i, f"last line is incomplete (no newline at the end of the file): "
                           f"{clip(s)!r} not imported")
            continue
        killed = _stdout_line(st, s, raw, i, res) if stdout_form else _file_line(s, i, res)
        if killed:
            abort = abort or i
    res.blocks = 1 if res.records else 0
    if st.hosts:
        res.meta["hosts"] = st.hosts
    if not res.records:
        res.problem(None, "no NetPIPE rows ('bytes Mbps seconds' lines or '<n>: <bytes> bytes "
                          "... Mbps in ... usec' lines)")
    else:
        _keep_first_rows(res)
    if abort:
        res.truncated = True
        res.truncated_at = last_content
        res.problem(abort, f"the run was killed ({clip(lines[abort - 1])!r}): rows before it "
                           "kept")
    flag_out_of_bounds(res)
    return res


class _Stdout:
    """What the stdout form says before its rows: the hosts, and whether the loop began."""

    def __init__(self) -> None:
        self.hosts: list[str] = []
        self.started = False


def _stdout_line(st: _Stdout, s: str, raw: str, i: int, res: ParseResult) -> bool:
    """A line of NetPIPE's stdout: a row, a host or progress line, or why not. True if it
    is a launcher's line saying the run was killed."""
    row = ROW_RE.match(raw)
    if row:
        m = STDOUT_RE.match(raw)
        idx = as_int(row.group(1))
        size, reps = (as_int(m.group(2)), as_int(m.group(3))) if m else (None, None)
        mbps, t_us = (as_float(m.group(4)), as_float(m.group(5))) if m else (None, None)
        if idx is None:
            res.problem(i, f"row index {row.group(1)!r} is not a number (NetPIPE numbers "
                           f"its rows 0, 1, 2, ...): {clip(s)!r}; line skipped")
        elif None in (size, reps, mbps, t_us):
            res.problem(i, f"expected '<n>: <bytes> bytes <reps> times --> <Mbps> Mbps "
                           f"in <usec> usec', got {clip(s)!r}; line skipped")
        else:
            res.records.append(_record(size, mbps, t_us, i, {"repetitions": reps}))
        return False
    hm = re.match(r"^([0-9]+):\s+(\S+)$", s)
    if hm and not st.started:
        st.hosts.append(hm.group(2))
        return False
    if s.startswith(("Sending output to", "Now starting", "Latency:", "Sync Time:")):
        st.started = st.started or s.startswith("Now starting")
        return False
    if ABORT_PATTERNS.search(s):
        return True
    if st.started or re.search(r"bytes|Mbps|usec|^\S*:", s):
        # inside the main loop, or a row whose index or words are damaged
        res.problem(i, f"expected '<n>: <bytes> bytes <reps> times --> <Mbps> Mbps in "
                       f"<usec> usec', got {clip(s)!r}; line skipped")
    return False


def _file_line(s: str, i: int, res: ParseResult) -> bool:
    """A line of the -o file ('bytes Mbps seconds'), or why not. True if it is a
    launcher's line saying the run was killed."""
    tokens = s.split()
    if len(tokens) == 3:
        size, mbps, sec = as_int(tokens[0]), as_float(tokens[1]), as_float(tokens[2])
        if size is not None and mbps is not None and sec is not None:
            # seconds -> us in decimal: 0.00000719 s is 7.19 us, not 7.1899999999999995
            res.records.append(_record(size, mbps, float(Decimal(tokens[2]) * 1000000),
                                       i, {}))
            return False
    if ABORT_PATTERNS.search(s):
        return True
    res.problem(i, f"expected 'bytes Mbps seconds' (3 numbers), got {clip(s)!r}; "
                   "line skipped")
    return False


def _keep_first_rows(res: ParseResult) -> None:
    """Rows too large to store and repeated sizes go (said so); sizes out of order are
    kept and reported."""
    seen: dict[int, int] = {}
    kept = []
    for r in res.records:
        if not finite(r):
            res.problem(r["extra"]["line"], "a number too large to store; line skipped")
            continue
        first = seen.get(r["size"])
        if first is not None:
            res.problem(r["extra"]["line"], f"size {r['size']} already given at line "
                                            f"{first}; second row skipped")
            continue
        seen[r["size"]] = r["extra"]["line"]
        kept.append(r)
    res.records = kept
    sizes = [r["size"] for r in res.records]
    if any(b < a for a, b in zip(sizes, sizes[1:], strict=False)):
        res.problem(None, "sizes are not in increasing order: NetPIPE writes them "
                          "increasing; rows kept, check the file")
