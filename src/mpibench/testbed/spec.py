"""What a testbed is asked to be: nodes, fabrics (rate, delay), parsed from the command line.

Rates are tc's units (`bit`, `kbit`, `mbit`, `gbit`, `tbit`: powers of 1000, bits per second);
delays are `us`, `ms` or `s`. Anything else is one UsageError line naming the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpibench.errors import UsageError

MAX_NODES = 64
MAX_FABRICS = 16
# Interface names inside a node are the fabric's name: IFNAMSIZ leaves 15 characters, and
# `mgmt` and `lo` are taken.
_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_RESERVED = {"mgmt", "lo", "uplink"}
_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(bit|kbit|mbit|gbit|tbit)$", re.IGNORECASE)
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}
_DELAY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(us|ms|s)$", re.IGNORECASE)
_DELAY_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class FabricSpec:
    name: str
    rate_bps: int           # bits per second, what tc shapes to
    delay_us: float = 0.0   # one-way delay added at each node's egress (netem), 0 = none

    @property
    def rate_text(self) -> str:
        return format_rate(self.rate_bps)


def format_rate(bps: int) -> str:
    for unit, mult in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps >= mult and bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bit"


def parse_rate(text: str, what: str) -> int:
    m = _RATE.match(text.strip())
    if not m:
        raise UsageError(f"{what} {text!r}: expected a rate such as 4gbit, 100mbit or 500kbit")
    bps = int(round(float(m.group(1)) * _RATE_UNITS[m.group(2).lower()]))
    if not 8000 <= bps <= 10**12:
        raise UsageError(f"{what} {text!r}: expected a rate between 8kbit and 1tbit")
    return bps


def parse_delay(text: str, what: str) -> float:
    m = _DELAY.match(text.strip())
    if not m:
        raise UsageError(f"{what} {text!r}: expected a delay such as 50us or 2ms")
    us = float(m.group(1)) * _DELAY_UNITS[m.group(2).lower()]
    if us > 10e6:
        raise UsageError(f"{what} {text!r}: expected a delay of at most 10s")
    return us


def parse_fabrics(fabric_args: list[str], delay_args: list[str]) -> list[FabricSpec]:
    """--fabric NAME:RATE (repeatable) and --delay NAME=DELAY (repeatable)."""
    rates: dict[str, int] = {}
    for arg in fabric_args:
        name, sep, rate = arg.partition(":")
        if not sep:
            raise UsageError(f"--fabric {arg!r}: expected NAME:RATE, e.g. fast:4gbit")
        check_fabric_name(name, f"--fabric {arg!r}:")
        if name in rates:
            raise UsageError(f"--fabric {arg!r}: fabric {name!r} given twice")
        rates[name] = parse_rate(rate, f"--fabric {name}:")
    if len(rates) > MAX_FABRICS:
        raise UsageError(f"--fabric: {len(rates)} fabrics; expected at most {MAX_FABRICS}")
    delays: dict[str, float] = {}
    for arg in delay_args:
        name, sep, value = arg.partition("=")
        if not sep:
            raise UsageError(f"--delay {arg!r}: expected NAME=DELAY, e.g. fast=50us")
        if name not in rates:
            raise UsageError(f"--delay {arg!r}: no fabric named {name!r} "
                             f"(fabrics: {', '.join(rates) or 'none'})")
        delays[name] = parse_delay(value, f"--delay {name}=")
    return [FabricSpec(n, r, delays.get(n, 0.0)) for n, r in rates.items()]


def check_fabric_name(name: str, what: str) -> None:
    if not _NAME.match(name) or name in _RESERVED:
        raise UsageError(f"{what} fabric name {name!r}: expected a lower-case letter then up "
                         f"to 11 letters/digits, not one of {', '.join(sorted(_RESERVED))}")


def check_nodes(n: int) -> None:
    if not 1 <= n <= MAX_NODES:
        raise UsageError(f"--nodes {n}: expected 1 to {MAX_NODES}")
