"""Number types for command-line options, stricter than argparse's int and float.

Python's int() and float() accept what no shell user means and the C core rejects: digits of
other scripts ('٣' is 3, '３' is 3), underscores ('1_000'), surrounding spaces, 'nan',
'inf', and integers of any length. These types take ASCII decimal numbers only, finite and
within a range, so a bad value is refused by argparse (exit 2, one error line) before a
verb creates a store, a directory or launches anything.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

_INT = re.compile(r"[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
MAX_COUNT = 10 ** 9


def integer(lo: int | None = None, hi: int = MAX_COUNT,
            what: str = "a whole number") -> Callable[[str], int]:
    """ASCII digits; with `lo`, also the range lo..hi (without, the verb checks the range
    and says it in its own words)."""
    def parse(text: str) -> int:
        ok = bool(_INT.fullmatch(text)) and len(text) <= 19
        if ok and lo is not None:
            ok = lo <= int(text) <= hi
        if not ok:
            rng = f" from {lo} to {hi}" if lo is not None else ""
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}{rng} (ASCII digits)")
        return int(text)
    return parse


def real(lo: float | None = None, hi: float = 1e18, lo_open: bool = True,
         what: str = "a number") -> Callable[[str], float]:
    """An ASCII decimal number, finite; with `lo`, also > lo (>= with lo_open=False) and
    <= hi."""
    def parse(text: str) -> float:
        v = float(text) if _FLOAT.fullmatch(text) else math.nan
        ok = math.isfinite(v) and abs(v) <= 1e18
        if ok and lo is not None:
            ok = (v > lo if lo_open else v >= lo) and v <= hi
        if not ok:
            rng = (f" {'>' if lo_open else '>='} {lo:g} and <= {hi:g}"
                   if lo is not None else "")
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}{rng}, finite, in "
                                             "ASCII digits")
        return v
    return parse


whole = integer()                                        # range checked by the verb
number = real()                                          # range checked by the verb
count = integer(1)                                       # ranks, repeats, rows: >= 1
seconds = real(0.0, 1e7, what="a duration in seconds")   # 1e7 s: 16 weeks
