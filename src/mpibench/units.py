"""Units, in one place: message sizes, byte counts, rates and link (line) rates.

Contracts (DESIGN.md "Units and statistics"): times in microseconds; MB/s = 10^6 bytes per
second; a line rate is stored as bits per second (the run spec's `line_rate_bps`) and is
always written with its unit by users ('100Gb/s', '25GbE', '12.5GB/s'); sizes are bytes, shown
with K/M/G = powers of 1024 when exact. Every reader of a line rate (`import --line-rate`,
`compare --line-rate`, the campaign file's `line_rate`) goes through parse_line_rate, so the
same text means the same link everywhere.
"""

from __future__ import annotations

import re

from mpibench.errors import UsageError

_RATE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)(.*)$")
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_line_rate(text: str | float | int, flag: str = "--line-rate") -> float:
    """Link speed -> bits per second. '100Gb/s', '25Gbit/s', '100Gbps', '25GbE', '200G' are
    bits; '12.5GB/s', '12.5GByte/s' are bytes (x8). Decimal prefixes (G = 10^9); a number
    (1e11, '1e11') is bits per second. True/False are not numbers here."""
    bad = UsageError(f"{flag} {text!r}: expected a link speed such as 100Gb/s, 25Gbit/s, "
                     "25GbE or 12.5GB/s")
    if isinstance(text, bool):
        raise bad
    if isinstance(text, int | float):
        if text > 0 and text != float("inf"):
            return float(text)
        raise UsageError(f"{flag} {text!r}: a link speed must be greater than 0")
    m = _RATE_RE.match(str(text))
    if not m:
        raise bad
    value = float(m.group(1))
    mult = _PREFIX[m.group(2).lower()]
    rest = m.group(3).strip()
    low = rest.lower()
    if rest.startswith("B") or low.startswith("byte"):
        per = 8.0
        low = re.sub(r"^(bytes|byte|b)", "", low)
    else:
        per = 1.0
        low = re.sub(r"^(bits|bit|b)", "", low)
    if low not in ("", "/s", "ps", "e", "/sec", "it/s"):
        raise bad
    bps = value * mult * per
    if bps <= 0:
        raise UsageError(f"{flag} {text!r}: a link speed must be greater than 0")
    if bps == float("inf"):
        raise bad
    return bps


def fmt_line_rate(bps: float | None) -> str:
    """1e11 -> '100 Gb/s'."""
    if not bps:
        return "-"
    for unit, f in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6)):
        if bps >= f:
            return f"{bps / f:g} {unit}"
    return f"{bps:g} b/s"


def line_rate_mbps(bps: float) -> float:
    """A line rate in the tables' MB/s (10^6 bytes/s)."""
    return bps / 8.0 / 1e6


def fmt_size(size: int | None) -> str:
    """Bytes, with K/M/G (powers of 1024) when exact."""
    if size is None:
        return ""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= (1 << shift) and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return str(size)


def mbps(nbytes: float, time_us: float) -> float:
    """MB/s (10^6 bytes/s) of nbytes moved in time_us microseconds: bytes per microsecond."""
    return nbytes / time_us


__all__ = ["parse_line_rate", "fmt_line_rate", "line_rate_mbps", "fmt_size", "mbps"]
