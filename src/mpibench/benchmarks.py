"""Benchmark names (IMB spelling) and size specs, validated before anything is launched.

The C core checks the same things; checking here too means bad input fails in one line with
exit 2 before any build, launch or store write.
"""

from __future__ import annotations

import re

from mpibench.errors import UsageError

PT2PT = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband"]
COLLECTIVES = ["Allreduce", "Reduce", "Reduce_scatter", "Allgather", "Allgatherv", "Gather",
               "Gatherv", "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier"]
ALL = PT2PT + COLLECTIVES
_BY_LOWER = {b.lower(): b for b in ALL}

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}
# The core's limits (core/args.c): sizes up to 1 TiB, at most 256 per run.
MAX_SIZE = 1 << 40
MAX_SIZES = 256
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def canonical_benchmarks(names: list[str]) -> list[str]:
    """IMB spelling for each name; 'all' expands to the whole set. Unknown names -> UsageError."""
    out: list[str] = []
    for name in names:
        if name.lower() == "all":
            out.extend(b for b in ALL if b not in out)
            continue
        canon = _BY_LOWER.get(name.lower())
        if canon is None:
            raise UsageError(f"unknown benchmark {name!r}; expected one of: "
                             f"{', '.join(ALL)} (or 'all')")
        if canon not in out:
            out.append(canon)
    if not out:
        raise UsageError("no benchmark given; expected one or more of: " + ", ".join(ALL))
    return out


def parse_size(token: str) -> int:
    m = _SIZE_RE.match(token)
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"bad message size {token!r}; expected a byte count such as 0, 64, "
                         "4K, 1M or 2G (K/M/G/T are powers of 1024)")
    size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if size > MAX_SIZE:
        raise UsageError(f"bad message size {token!r}: sizes must be <= 1T (2^40 bytes)")
    return size


def parse_sizes(spec: str) -> list[int]:
    """'0:22' -> 0,1,2,4,...,2^22 (0 included only when the range starts at 0, as IMB's
    -msglog does); '0,8,1K,1M' -> that list. Sizes are bytes, returned sorted and unique."""
    spec = spec.strip()
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise UsageError(f"bad size range {spec!r}; expected MIN:MAX with log2 exponents, "
                             "e.g. 0:22 for 0, 1, 2, 4 ... 4 MiB")
        lo, hi = int(parts[0]), int(parts[1])
        if lo > hi:
            raise UsageError(f"bad size range {spec!r}: MIN ({lo}) is larger than MAX ({hi})")
        if hi > 40:
            raise UsageError(f"bad size range {spec!r}: 2^{hi} bytes is beyond any memory; "
                             "expected MAX <= 40")
        sizes = ([0] if lo == 0 else []) + [1 << e for e in range(lo, hi + 1)]
        return sorted(set(sizes))
    tokens = [t for t in spec.split(",")]
    if not spec or any(not t.strip() for t in tokens):
        raise UsageError(f"bad size list {spec!r}; expected comma-separated byte counts, "
                         "e.g. 0,8,1K,1M")
    if len(tokens) > MAX_SIZES:
        raise UsageError(f"bad size list: {len(tokens)} sizes, at most {MAX_SIZES} per run")
    return sorted({parse_size(t) for t in tokens})
