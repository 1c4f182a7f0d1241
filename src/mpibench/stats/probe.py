"""The machine-state probe: the two CPUs' cache-line round trip around each launch, and the
gate that keeps a comparison's launches in one machine state.

    from mpibench.stats.probe import parse_probe, reference, judge_launch

    r = parse_probe(line, where="run c-1234/probe.jsonl:1")   # a ProbeReading
    ref = reference(history_ns)           # the state most launches' probes found, or None
    judge_launch(before, after, ref)      # State.REFERENCE / OFF / UNKNOWN

Why (docs/statistics.md "The machine-state probe"): on the 2-vCPU VM this project is
measured on, shared-memory PingPong at small sizes comes in two whole-launch modes, a factor
~3 apart, that last seconds to minutes and follow where the host runs the two vCPUs. The
probe (core/probe/mpibench-cacheline.c) bounces one cache line between the CPUs the ranks are
bound to for a few milliseconds, without MPI; its median round trip is ~80 ns in one state
and ~320 ns in the other. A launch whose probe before and after are both within
GATE_FACTOR of the campaign's reference is in the reference state. The probe does not look
at the launch's results, so selecting launches on it cannot favour either variant.

Pure functions: no processes, no files.
"""

from __future__ import annotations

import bisect
import enum
import json
import math
from collections.abc import Sequence
from typing import NamedTuple

from mpibench.errors import UsageError

PROBE_VERSION = 1
# fewer samples than this: a probe thread waited for the CPU most of the time (a loaded
# machine) and the median is a scheduler slice, not a round trip: no reading
MIN_SAMPLES = 50
# the two states are ~4x apart (80 vs 320 ns on the measured VM) and a state's probes within
# +-15% of each other: 1.6 separates them with room either way
GATE_FACTOR = 1.6
_FIELDS = {"median_ns": float, "q1_ns": float, "q3_ns": float, "min_ns": float,
           "samples": int, "batch": int}


class ProbeError(UsageError):
    """A probe output that is not the probe's JSON line; the message names where."""


class ProbeReading(NamedTuple):
    median_ns: float     # median round trip of one cache line between the two CPUs
    q1_ns: float
    q3_ns: float
    samples: int         # samples (each a batch of round trips) behind the median
    cpus: tuple[int, int]

    @property
    def valid(self) -> bool:
        return self.samples >= MIN_SAMPLES


class State(enum.Enum):
    REFERENCE = "reference"   # before and after within GATE_FACTOR of the reference
    OFF = "off"               # a valid probe outside it: the launch is set aside
    UNKNOWN = "unknown"       # no reference yet, or no valid probe: kept, not judged


def parse_probe(text: str, where: str) -> ProbeReading:
    """The probe's one JSON line. Raises ProbeError naming `where` and what was expected."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise ProbeError(f"{where}: expected one JSON line from mpibench-cacheline, got "
                         f"{len(lines)} lines")
    try:
        rec = json.loads(lines[0])
    except ValueError as exc:
        raise ProbeError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ProbeError(f"{where}: not JSON (nested too deep)") from None
    return probe_record(rec, where)


def probe_record(rec: object, where: str) -> ProbeReading:
    """A probe record already decoded: the probe program's line, or the core's own reading
    (its header's and footer's machine_state, core/state.c: the same fields). Raises
    ProbeError naming `where` and what was expected."""
    if not isinstance(rec, dict) or rec.get("record") != "probe" \
            or rec.get("version") != PROBE_VERSION:
        raise ProbeError(f"{where}: expected a probe record of version {PROBE_VERSION} "
                         '({"record": "probe", "version": 1, ...})')
    vals = {k: _field(rec, k, kind, where) for k, kind in _FIELDS.items()}
    cpus = rec.get("cpus")
    if not (isinstance(cpus, list) and len(cpus) == 2
            and all(type(c) is int and c >= 0 for c in cpus) and cpus[0] != cpus[1]):
        raise ProbeError(f"{where}: cpus: expected two different CPU numbers, got {cpus!r}")
    if not vals["q1_ns"] <= vals["median_ns"] <= vals["q3_ns"] or vals["samples"] < 1:
        raise ProbeError(f"{where}: expected q1_ns <= median_ns <= q3_ns and samples >= 1")
    return ProbeReading(vals["median_ns"], vals["q1_ns"], vals["q3_ns"], vals["samples"],
                        (cpus[0], cpus[1]))


def _field(rec: dict, key: str, kind: type, where: str) -> float | int:
    v = rec.get(key)
    ok = type(v) is int if kind is int else type(v) in (int, float)
    if not ok or not math.isfinite(v) or v < 0 or (kind is float and v > 1e12):
        raise ProbeError(f"{where}: {key}: expected a non-negative "
                         f"{'integer' if kind is int else 'number'}, got {v!r}")
    return kind(v)


def near(a: float, b: float) -> bool:
    """Two round trips in the same state: within GATE_FACTOR of each other."""
    return max(a, b) <= GATE_FACTOR * min(a, b)


def reference(history_ns: Sequence[float]) -> float | None:
    """The reference state of a campaign: the probe value with the most of the history
    within GATE_FACTOR of it (the state most of its launches' probes found; a tie goes to
    the faster), or None without history. history_ns: valid probe medians, before and
    after each launch so far, kept or set aside."""
    vals = sorted(v for v in history_ns if v > 0)
    if not vals:
        return None
    # how many values lie within GATE_FACTOR of each (sorted: two bisections, n log n)
    counts = [bisect.bisect_right(vals, v * GATE_FACTOR) - bisect.bisect_left(vals, v / GATE_FACTOR)
              for v in vals]
    mode = vals[counts.index(max(counts))]
    # the median of the values near the most crowded one: the state's centre, not its edge
    members = vals[bisect.bisect_left(vals, mode / GATE_FACTOR):
                   bisect.bisect_right(vals, mode * GATE_FACTOR)]
    return members[len(members) // 2]


def judge_launch(before: ProbeReading | None, after: ProbeReading | None,
                 ref: float | None) -> State:
    """A launch's state: OFF when a valid probe before or after it is not near the
    reference; REFERENCE when both are valid and near it; else UNKNOWN (kept)."""
    readings = [r for r in (before, after) if r is not None and r.valid]
    if ref is None or not readings:
        return State.UNKNOWN
    if any(not near(r.median_ns, ref) for r in readings):
        return State.OFF
    return State.REFERENCE if len(readings) == 2 else State.UNKNOWN


def judge_stored(before_ns: float | None, after_ns: float | None, ref: float | None) -> State:
    """judge_launch on a stored launch's before/after medians (ns; None where the probe gave
    no valid reading - the campaign stores a median only for a valid one)."""
    def reading(ns: float | None) -> ProbeReading | None:
        return None if ns is None else ProbeReading(ns, ns, ns, MIN_SAMPLES, (0, 1))
    return judge_launch(reading(before_ns), reading(after_ns), ref)
