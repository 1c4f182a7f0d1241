"""Units, in one place: message sizes, byte counts, percentages, rates and link (line) rates,
and the formatters every table uses for them.

Contracts (DESIGN.md "Units and statistics"): times in microseconds; MB/s = 10^6 bytes per
second; a line rate is stored as bits per second (the run spec's `line_rate_bps`) and is
always written with its unit by users ('100Gb/s', '25GbE', '12.5GB/s'); sizes are bytes, shown
with K/M/G = powers of 1024 when exact. Every reader of a line rate (`import --line-rate`,
`compare --line-rate`, the campaign file's `line_rate`) goes through parse_line_rate, so the
same text means the same link everywhere.

Byte counts have one grammar, the core's (core/args.c mb_parse_bytes), character for
character: ASCII digits, C isspace() around them, then K/M/G/T (powers of 1024) with an
optional iB, or B; nothing else ('4KB', '٣K' and U+00A0 are refused). `byte_count` reads it;
benchmarks.parse_size (message sizes), execute.parse_bytes (core options) and profile
--buckets give it their own limits and messages. Percentages have one grammar too
(`percent`): '5%', 5 (a bare number >= 1 is a percentage) or 0.05, ASCII only.
"""

from __future__ import annotations

import re

from mpibench.errors import UsageError

# C isspace(): what the core skips around a number (not Unicode spaces such as U+00A0)
SPACE = "[ \t\n\v\f\r]*"
BYTES_RE = re.compile(f"{SPACE}([0-9]+){SPACE}(?:([KMGTkmgt])(?:[iI][bB])?|[bB])?{SPACE}")
_SHIFT = {"k": 10, "m": 20, "g": 30, "t": 40}
# digits beyond any 64-bit count (int() of a huge string is slow, too)
_MAX_DIGITS = 40


def byte_count(text: str) -> int | None:
    """'0', '64', '4K', '4KiB', '1M', '2G', '1T', '8B' -> bytes (K/M/G/T = 2^10..2^40), the
    core's grammar; None when the text is not a byte count. No range check: the callers
    hold their own limits."""
    if not isinstance(text, str):
        return None
    m = BYTES_RE.fullmatch(text)
    if not m or len(m.group(1)) > _MAX_DIGITS:
        return None
    return int(m.group(1)) << _SHIFT.get((m.group(2) or "").lower(), 0)


def percent(value: object) -> float | None:
    """'5%', '5' or 5 (a bare number >= 1 is a percentage) or '0.05' -> 0.05; None when it
    is not a number (non-ASCII digits, '1_0', True). No range check: the caller holds its
    own (an equivalence margin, an effect to detect, a CI target)."""
    if isinstance(value, bool) or value is None:
        return None
    s = str(value).strip()
    if not s or not s.isascii() or "_" in s:
        return None
    try:
        v = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        return None
    if v != v:                           # nan
        return None
    if not s.endswith("%") and v >= 1.0:
        v = v / 100.0
    return v


def fmt_bytes(n: float) -> str:
    """A byte count for people: '512 B', '1.5 KiB', '2.0 GiB' (powers of 1024)."""
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{int(n)} B"


def fmt_pow2(n: int) -> str:
    """An exact power-of-two size: 1024 -> '1 KiB', 1 << 60 -> '1 EiB' (bucket edges)."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20),
                        ("KiB", 10)):
        if n >= (1 << shift):
            return f"{n >> shift} {unit}"
    return f"{n} B"


def fmt_seconds(s: float) -> str:
    """A duration in seconds for people: '1.250 s', '3.100 ms', '12.50 us'."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} us"


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


__all__ = ["parse_line_rate", "fmt_line_rate", "line_rate_mbps", "fmt_size", "mbps",
           "byte_count", "BYTES_RE", "percent", "fmt_bytes", "fmt_pow2", "fmt_seconds", "SPACE"]
