"""Benchmark names (IMB spelling) and size specs, validated before anything is launched.

The C core checks the same things; checking here too means bad input fails in one line with
exit 2 before any build, launch or store write.
"""

from __future__ import annotations

import re

from mpibench.errors import UsageError
from mpibench.units import BYTES_RE, byte_count

PT2PT = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband"]
COLLECTIVES = ["Allreduce", "Reduce", "Reduce_scatter", "Allgather", "Allgatherv", "Gather",
               "Gatherv", "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier"]
ALL = PT2PT + COLLECTIVES
_BY_LOWER = {b.lower(): b for b in ALL}

# The core's limits (core/args.c): sizes up to 1 TiB, at most 256 per run.
MAX_SIZE = 1 << 40
MAX_SIZES = 256
# The core's grammar (core/args.c mb_parse_bytes and parse_sizes), character for character:
# ASCII digits and C isspace() only ('٣', '²' and U+00A0 are not), K/M/G/T with an optional
# iB, or B; a range is MIN:MAX of at most 31 ASCII digits each, nothing else; a list is
# under 4096 bytes. What Python accepts here the core accepts: no launch fails on --sizes.
_RANGE_RE = re.compile(r"([0-9]{1,31}):([0-9]{1,31})")
MAX_LIST_BYTES = 4095


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
    """A message size in the core's byte-count grammar (units.byte_count), <= 1 TiB."""
    size = byte_count(token)
    if size is None:
        if BYTES_RE.fullmatch(token):     # well formed, but more digits than any size
            raise UsageError(f"bad message size {token[:40]!r}...: sizes must be <= 1T "
                             "(2^40 bytes)")
        raise UsageError(f"bad message size {token!r}; expected a byte count such as 0, 64, "
                         "4K, 1M or 2G (K/M/G/T are powers of 1024)")
    if size > MAX_SIZE:
        raise UsageError(f"bad message size {token!r}: sizes must be <= 1T (2^40 bytes)")
    return size


def parse_sizes(spec: str) -> list[int]:
    """'0:22' -> 0,1,2,4,...,2^22 (0 included only when the range starts at 0, as IMB's
    -msglog does); '0,8,1K,1M' -> that list. Sizes are bytes, returned sorted and unique."""
    if ":" in spec:
        m = _RANGE_RE.fullmatch(spec)
        if not m:
            raise UsageError(f"bad size range {spec[:80]!r}; expected MIN:MAX with log2 "
                             "exponents (ASCII digits, no spaces), e.g. 0:22 for 0, 1, 2, 4 "
                             "... 4 MiB")
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise UsageError(f"bad size range {spec!r}: MIN ({lo}) is larger than MAX ({hi})")
        if hi > 40:
            raise UsageError(f"bad size range {spec!r}: 2^{hi} bytes is beyond any memory; "
                             "expected MAX <= 40")
        sizes = ([0] if lo == 0 else []) + [1 << e for e in range(lo, hi + 1)]
        return sorted(set(sizes))
    if len(spec.encode("utf-8", "surrogateescape")) > MAX_LIST_BYTES:
        raise UsageError(f"bad size list ({len(spec)} characters): at most {MAX_LIST_BYTES} "
                         "bytes, as the core reads it")
    tokens = spec.split(",")
    if not spec or any(not t.strip(" \t\n\v\f\r") for t in tokens):
        raise UsageError(f"bad size list {spec!r}; expected comma-separated byte counts, "
                         "e.g. 0,8,1K,1M")
    if len(tokens) > MAX_SIZES:
        raise UsageError(f"bad size list: {len(tokens)} sizes, at most {MAX_SIZES} per run")
    return sorted({parse_size(t) for t in tokens})
