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
    r"srun: error:|^={20,}\s*$"
)


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
    return all(v is None or math.isfinite(v) for k in ("mean", "bandwidth_mbps", "busbw_mbps",
                                                        "msg_rate") for v in [rec.get(k)])


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
