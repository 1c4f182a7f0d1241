"""What every text-output parser returns, and the checks they share.

A parser is a pure function `text -> ParseResult`. Records use the store's result-row
vocabulary (mpibench.store.RESULT_COLUMNS plus 'extra'). Imported results are what the file
has: one summary figure per size (a mean, or the tool's own statistic), never samples, so
`n` stays None and no confidence interval is invented.

Problems carry the 1-based line number they refer to (None for the whole file) and say
what was expected; the importer prefixes the file name ("<file>:<line>: <what>").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

# Largest size/count accepted: SQLite INTEGER is signed 64-bit.
MAX_INT = (1 << 63) - 1

# Lines that launchers and schedulers print when they kill a run. Seeing one means the run did
# not finish: the rows before it are complete, what follows is not benchmark output.
ABORT_PATTERNS = re.compile(
    r"BAD TERMINATION|Terminated \(signal|mpirun noticed that|MPI_ABORT was invoked|"
    r"exited on signal|Primary job\s+terminated|\*\*\* STEP .* CANCELLED|DUE TO TIME LIMIT|"
    r"YOUR APPLICATION TERMINATED|Segmentation fault|Killed\s*$|prterun noticed|"
    r"srun: error:"
)

# A rule of '=' signs, bare or around a title: MPICH prints its settings between such rules at
# MPI_Init when MPIR_CVAR_DEBUG_SUMMARY=1 ("==== UCX netmod Capability ====" ... "=====").
# Hydra draws its kill banner with the same rules, but says "BAD TERMINATION" on a line of its
# own, which ABORT_PATTERNS catches: a rule alone is the library talking, not a killed run.
RULE_LINE = re.compile(r"^=+(?:\s.*\s=+)?\s*$")


@dataclass
class Problem:
    line: int | None
    message: str

    def render(self, source: str) -> str:
        return f"{source}:{self.line}: {self.message}" if self.line else f"{source}: {self.message}"


@dataclass
class ParseResult:
    format: str | None = None            # "imb", "osu", "nccl", "nccl-json", "netpipe"
    tool: str | None = None              # e.g. "IMB-MPI1", "OSU", "nccl-tests", "NetPIPE"
    version: str | None = None           # tool version as the file states it
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    blocks: int = 0                      # tables (benchmark x np) seen
    truncated: bool = False              # the run ended before the tool finished
    truncated_at: int | None = None      # last line of real output when truncated
    meta: dict[str, Any] = field(default_factory=dict)   # what the file says about the run

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append(Problem(line, message))

    def problem_lines(self, source: str) -> list[str]:
        return [p.render(source) for p in self.problems]

    @property
    def ok_rows(self) -> int:
        return sum(1 for r in self.records if r.get("status", "ok") == "ok")


def split_lines(text: str) -> list[str]:
    """Lines as editors and `sed -n Np` count them: split on \\n only (str.splitlines would
    also split on \\x1c, \\x85, \\u2028... and shift every line number after them)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


# -- number checks -----------------------------------------------------------------------
_INT_RE = re.compile(r"^[0-9]+$")
_FLOAT_RE = re.compile(r"^[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?$|^\.[0-9]+(?:[eE][+-]?[0-9]+)?$")


def as_int(tok: str) -> int | None:
    """A non-negative integer that fits SQLite, else None."""
    if not _INT_RE.match(tok):
        return None
    v = int(tok)
    return v if v <= MAX_INT else None


def as_float(tok: str) -> float | None:
    """A finite, non-negative decimal number (no sign, no inf/nan), else None."""
    if not _FLOAT_RE.match(tok):
        return None
    try:
        v = float(tok)
    except ValueError:  # pragma: no cover - the regex already rules this out
        return None
    return v if math.isfinite(v) else None


def finite(rec: dict[str, Any]) -> bool:
    """After unit conversions (x1e6, x1000, x2^20/10^6) a huge but finite input can become
    infinite: such a row is not storable as a number."""
    get, isfinite = rec.get, math.isfinite  # per row of a million-row import: no generator
    for k in _FINITE_KEYS:
        v = get(k)
        if v is not None and not isfinite(v):
            return False
    return True


_FINITE_KEYS = ("mean", "bandwidth_mbps", "busbw_mbps", "msg_rate")


# -- physical bounds ---------------------------------------------------------------------
# A figure outside these is not a measurement but a corrupted file (a digit run together
# with the next column, a counter printed uninitialised, an edited table). Such a row is
# kept, as the file has it, with status "out-of-bounds" and the reason, and a warning names
# its line; comparisons and reports leave it out like any row whose status is not "ok".
# docs/import.md ("Values outside physical bounds") explains each bound.
MAX_TIME_US = 3.6e9              # one call taking more than an hour
MAX_BANDWIDTH_MBPS = 1e7         # 10 TB/s (10^6 bytes/s): beyond any link or memory bus
MAX_MSG_RATE = 1e10              # messages per second: 50 x a fast NIC's 2e8/s
MAX_SIZE = 1 << 42               # 4 TiB in one message: more than a node's memory
MAX_COUNT = 10 ** 12             # repetitions/iterations: 1e12 calls of 1 us are 11 days
MAX_OVERLAP_PCT = 200.0          # IMB/OSU overlap is 0-100%; OSU's noise can pass 100 a bit
OUT_OF_BOUNDS = "out-of-bounds"

_TIME_KEYS = ("median", "min", "max", "p5", "p95", "p99", "ci_low", "ci_high", "first", "std")
_COUNT_EXTRAS = ("repetitions", "iterations")


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _as_float(v: Any) -> float | None:
    """A JSON or parsed number as a float (a 400-digit integer becomes inf), else None."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return float(v)
    except OverflowError:
        return math.inf


_POSITIVE_TIMES = ("mean", "median", "max", "p95", "p99", "ci_high")
_ZERO_OK_TIMES = ("min", "p5", "ci_low", "std", "first")
_RATES = (("bandwidth_mbps", MAX_BANDWIDTH_MBPS), ("busbw_mbps", MAX_BANDWIDTH_MBPS),
          ("msg_rate", MAX_MSG_RATE))


def plainly_in_bounds(rec: dict[str, Any]) -> bool:
    """True when a record is certainly within the bounds: every figure a float in its range.
    The rows of a big import almost all are, and this costs a fifth of out_of_bounds; False
    means only "look closely" (ints, strings, odd keys go the long way)."""
    get = rec.get
    size = get("size")
    if size is not None and (type(size) is not int or size > MAX_SIZE):
        return False
    metric = get("metric", "time")
    if metric == "time" and get("unit", "us") == "us":
        for k in _POSITIVE_TIMES:
            v = get(k)
            if v is not None and not (type(v) is float and 0.0 < v <= MAX_TIME_US):
                return False
        for k in _ZERO_OK_TIMES:
            v = get(k)
            if v is not None and not (type(v) is float and 0.0 <= v <= MAX_TIME_US):
                return False
    elif metric == "bandwidth":
        v = get("mean")
        if v is not None and not (type(v) is float and 0.0 <= v <= MAX_BANDWIDTH_MBPS):
            return False
    for k, bound in _RATES:
        v = get(k)
        if v is not None and not (type(v) is float and 0.0 <= v <= bound):
            return False
    for k, v in (get("extra") or {}).items():
        if k.endswith("_us"):
            # an int too (the core's batch_floor_us): bounds_problems reads it as a float
            if not (type(v) in (float, int) and 0 <= v <= MAX_TIME_US):
                return False
        elif k in _COUNT_EXTRAS:
            # bounds_problems flags a count only as an int above MAX_COUNT: an int within
            # it is plainly in bounds (every core row has "iterations", which used to send
            # each one the long way); anything else is looked at closely
            if not (type(v) is int and v <= MAX_COUNT):
                return False
        elif k.endswith(("_mbps", "_gbps")) or k in ("overlap_pct", "wrong"):
            return False
    return True


def out_of_bounds(rec: dict[str, Any]) -> list[str]:
    """What in a record lies outside the physical bounds above (empty when nothing)."""
    return [] if plainly_in_bounds(rec) else bounds_problems(rec)


def bounds_problems(rec: dict[str, Any]) -> list[str]:
    """out_of_bounds without the fast path: every figure looked at, each problem worded."""
    why: list[str] = []
    size = rec.get("size")
    if isinstance(size, int) and size > MAX_SIZE:
        why.append(f"size {size} bytes > {MAX_SIZE} (4 TiB)")

    def time(name: str, v: Any, zero_ok: bool = False) -> None:
        v = _as_float(v)
        if v is None:
            return
        if not math.isfinite(v) or v < 0:
            why.append(f"{name} {v!r} us is not a time")
        elif v > MAX_TIME_US:
            why.append(f"{name} {_fmt(v)} us > {_fmt(MAX_TIME_US)} us (1 hour per call)")
        elif v == 0 and not zero_ok:
            why.append(f"{name} 0 us: no call takes no time (below the print resolution; "
                       "a gain would divide by it)")

    def rate(name: str, v: Any, bound: float, unit: str, what: str) -> None:
        v = _as_float(v)
        if v is None:
            return
        if not math.isfinite(v) or v < 0:
            why.append(f"{name} {v!r} {unit} is not a rate")
        elif v > bound:
            why.append(f"{name} {_fmt(v)} {unit} > {_fmt(bound)} {unit} ({what})")

    bw = (MAX_BANDWIDTH_MBPS, "MB/s", "10 TB/s")
    if rec.get("metric", "time") == "time" and rec.get("unit", "us") == "us":
        time("mean" if "median" in rec else "time", rec.get("mean"))
        for k in _TIME_KEYS:
            time(k, rec.get(k), zero_ok=k in ("min", "p5", "ci_low", "std", "first"))
    elif rec.get("metric") == "bandwidth":
        rate("bandwidth", rec.get("mean"), *bw)
    if rec.get("metric") != "bandwidth":
        rate("bandwidth", rec.get("bandwidth_mbps"), *bw)
    rate("bus bandwidth", rec.get("busbw_mbps"), *bw)
    rate("message rate", rec.get("msg_rate"), MAX_MSG_RATE, "msg/s", "messages per second")
    extra = rec.get("extra") or {}
    for k, v in extra.items():
        if k.endswith("_us"):
            time(k, v, zero_ok=True)
        elif k.endswith("_mbps") and k != "mbps_printed":
            rate(k, v, *bw)
        elif k.endswith("_gbps"):
            rate(k, v, MAX_BANDWIDTH_MBPS / 1000, "GB/s", "10 TB/s")
        elif k in _COUNT_EXTRAS and isinstance(v, int) and v > MAX_COUNT:
            why.append(f"{k} {v} > {MAX_COUNT}")
        elif k == "overlap_pct" and (_as_float(v) or 0.0) > MAX_OVERLAP_PCT:
            why.append(f"overlap {_fmt(_as_float(v) or 0.0)}% > {MAX_OVERLAP_PCT:g}%")
    wrong, count = _as_float(extra.get("wrong")), extra.get("count")
    if wrong is not None and isinstance(count, int) and wrong > count:
        why.append(f"{_fmt(wrong)} wrong elements out of {count}")
    return why


def flag_out_of_bounds(res: ParseResult) -> None:
    """Mark (never drop) the records of `res` holding figures outside the physical bounds:
    status "out-of-bounds" (an earlier failure status is kept), the reason, extra
    "out_of_bounds", and one warning per record at its line. The warning saying where a
    truncated file ended stays the last problem (the importer stores it as the reason)."""
    ended = res.problems.pop() if res.truncated and res.problems else None
    for r in res.records:
        why = out_of_bounds(r)
        if not why:
            continue
        text = "; ".join(why)
        extra = r.setdefault("extra", {})
        extra["out_of_bounds"] = text
        if r.get("status", "ok") == "ok":
            r["status"] = OUT_OF_BOUNDS
            r["reason"] = f"outside physical bounds: {text}"
        else:
            r["reason"] = f"{r.get('reason') or r['status']}; outside physical bounds: {text}"
        line = extra.get("line")
        res.problem(line if isinstance(line, int) else None,
                    f"{r.get('benchmark')} size {r.get('size')}: {text}; row stored with "
                    f"status '{OUT_OF_BOUNDS}' (left out of comparisons)")
    if ended is not None:
        res.problems.append(ended)


def time_record(benchmark: str, size: int, np_: int | None, value: float | None,
                statistic: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A time row (microseconds, lower is better) with the tool's statistic in `mean`."""
    return {"benchmark": benchmark, "size": size, "np": np_, "status": "ok",
            "metric": "time", "unit": "us", "better": "lower", "statistic": statistic,
            "n": None, "mean": value, "extra": dict(extra or {})}


def bandwidth_record(benchmark: str, size: int, np_: int | None, mbps: float | None,
                     statistic: str = "mean",
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A bandwidth-only row (10^6 bytes/s, higher is better): tools that print no time."""
    return {"benchmark": benchmark, "size": size, "np": np_, "status": "ok",
            "metric": "bandwidth", "unit": "MB/s", "better": "higher", "statistic": statistic,
            "n": None, "mean": mbps, "bandwidth_mbps": mbps, "extra": dict(extra or {})}


def failure_record(template: dict[str, Any], size: int, status: str,
                   reason: str) -> dict[str, Any]:
    """A failed size, shaped like the table's ok rows (same metric and statistic)."""
    rec = {k: template[k] for k in ("benchmark", "np", "metric", "unit", "better",
                                    "statistic") if k in template}
    rec.update({"size": size, "status": status, "reason": reason, "n": None, "mean": None,
                "extra": dict(template.get("extra") or {})})
    return rec


def clip(text: str, width: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def stack_lines(text: str) -> list[str]:
    """MPI library identification lines some users paste into outputs (MPI_Get_library_version
    or ompi_info/mpichversion output)."""
    pat = re.compile(r"(Open MPI v\d[\w.]*|MPICH Version:\s*\S+|Intel\(R\) MPI Library[^\n]*"
                     r"|MVAPICH2? Version:?\s*\S+|HPE MPT[^\n]*|Cray MPICH[^\n]*)")
    out: list[str] = []
    for m in pat.finditer(text[:200_000]):
        s = m.group(0).strip()
        if s not in out:
            out.append(s)
        if len(out) >= 8:
            break
    return out


def stack_name(lines: list[str]) -> str | None:
    """'Open MPI v4.1.4' -> 'openmpi4.1.4', 'MPICH Version: 4.0.2' -> 'mpich4.0.2'."""
    for s in lines:
        low = s.lower()
        for key, name in (("open mpi", "openmpi"), ("intel(r) mpi", "intelmpi"),
                          ("mvapich", "mvapich"), ("cray mpich", "craympich"),
                          ("mpich", "mpich"), ("hpe mpt", "mpt")):
            i = low.find(key)
            if i >= 0:
                m = re.search(r"\d+(?:\.\d+)*", s[i + len(key):])
                return name + (m.group(0) if m else "")
    return None
