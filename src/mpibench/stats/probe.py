"""The machine-state probe: the two CPUs' cache-line round trip around each launch, and the
gate that keeps a comparison's launches in one machine state.

    from mpibench.stats.probe import parse_probe, reference, judge_launch

    r = parse_probe(line, where="run c-1234/probe.jsonl:1")   # a ProbeReading
    ref = reference(history_ns, own_ns)   # a Reference: the state most readings found
    reader_reference(history, "launch")   # the one a reader's launches are judged against
    judge_launch(before, after, ref)      # State.REFERENCE / OFF / UNKNOWN
    states(readings_ns)                   # the states one reader's readings show (Spans)
    kept_off((round, variant, record)...) # rounds with a launch kept off; off balance

Why (docs/statistics.md "The machine-state probe"): on the 2-vCPU VM this project is
measured on, shared-memory PingPong at small sizes comes in two whole-launch modes, a factor
~3 apart, that last seconds to minutes and follow where the host runs the two vCPUs. The
probe (core/probe/mpibench-cacheline.c) bounces one cache line between the CPUs the ranks are
bound to for a few milliseconds, without MPI; its median round trip is ~80 ns in one state
and ~320 ns in the other. Stop 34 found a third (the core's own readings, core/state.c:
~64 ns beside ~90 ns, MPICH's 1 B PingPong 0.11 against 0.19 us), 1.4x from the ~90 ns
one, closer than one state's own readings spread (74-108 ns). So the reference is found in
two steps: the coarse state (GATE_FACTOR, every reader's readings: the ~4x apart states,
which both readers see alike), then within it the finer states one reader's readings show
as separate peaks of their density (`states`: the core's ranks separate 64 from 90 ns; the
probe program reads the same machine 55-90 ns, and its own valleys are not shown to be
states, so its reader keeps the coarse state: FINER_READERS). A launch whose readings are
both within its reader's reference state is in it. The probe does not look
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
# the two coarse states are ~4x apart (80 vs 320 ns on the measured VM) and a state's probes
# within +-15% of each other: 1.6 separates them with room either way
GATE_FACTOR = 1.6
# The finer states inside the coarse one (`states`): the density of a reader's log readings
# is how many lie within +-STATE_WIDTH (5%) of a point, on a grid of STATE_STEP (1%); two
# neighbouring peaks of it are separate states when the density between them falls to
# VALLEY (a quarter) of the lower peak or less and that peak holds MIN_STATE readings or
# more; otherwise they are one. Stop 34's readings: the 64 ns state's peak ~40-140, the
# valley at 68-70 ns 1-5, the ~90 ns state's own bumps (85 vs 97 ns) 0.9 of each other.
# The readers whose own readings finer states are looked for in: the core's ("launch": its
# ranks separate ~64 from ~90 ns, MPICH 1 B 0.11 vs 0.19 us). The probe program's readings
# show valleys too (run-62, run-64's retries' probes) that are not shown to be states - they
# may be its waits' selection of readings - and acting on them set IMB's launches aside
# (run-64: 2 -> 7) and moved its reference to 57 ns (review R1): its reader keeps the coarse.
FINER_READERS = ("launch",)
STATE_WIDTH = math.log(1.05)
STATE_STEP = 0.01
VALLEY = 0.25
MIN_STATE = 5
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
    """Two round trips in the same coarse state: within GATE_FACTOR of each other."""
    return max(a, b) <= GATE_FACTOR * min(a, b)


class Span(NamedTuple):
    """One state a reader's readings show: the readings in [lo, hi) ns."""
    lo: float
    hi: float
    n: int          # readings in it
    ns: float       # their median (nan when none)


class Reference(float):
    """The reference state: the value is its centre (ns, the median of its readings), lo
    and hi the bounds (ns) a reading must lie within to be in it. A float, so a caller that
    prints or rounds the reference still can."""
    lo: float
    hi: float

    def __new__(cls, ns: float, lo: float | None = None, hi: float | None = None):
        ref = super().__new__(cls, ns)
        ref.lo = ns / GATE_FACTOR if lo is None else lo
        ref.hi = ns * GATE_FACTOR if hi is None else hi
        return ref

    def holds(self, ns: float) -> bool:
        return self.lo <= ns <= self.hi


def states(readings_ns: Sequence[float]) -> list[Span]:
    """The states one reader's readings show, fastest first: the peaks of the density of
    the log readings (readings within +-STATE_WIDTH of a point, on a STATE_STEP grid), two
    neighbouring peaks being separate only where the density between them falls to VALLEY
    of the lower peak and that peak holds MIN_STATE readings (else the lower one is merged
    into the higher, the shallowest valley first). Each state reaches to the middle of its
    valleys; the first from 0, the last to infinity. [] without readings."""
    vals = sorted(v for v in readings_ns if v > 0)
    if not vals:
        return []
    xs = [math.log(v) for v in vals]
    grid = [xs[0] + k * STATE_STEP for k in range(int((xs[-1] - xs[0]) / STATE_STEP) + 2)]
    dens = [bisect.bisect_right(xs, g + STATE_WIDTH) - bisect.bisect_left(xs, g - STATE_WIDTH)
            for g in grid]
    peaks = _merged(dens, _peaks(dens))
    cuts = [math.exp(grid[_valley(dens, a, b)]) for a, b in zip(peaks, peaks[1:], strict=False)]
    edges = [0.0, *cuts, math.inf]
    out = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        m = vals[bisect.bisect_left(vals, lo):bisect.bisect_left(vals, hi)]
        out.append(Span(lo, hi, len(m), m[len(m) // 2] if m else math.nan))
    return out


def _peaks(d: list[int]) -> list[int]:
    """The local maxima of d (a plateau: its middle)."""
    out, i = [], 0
    while i < len(d):
        j = i
        while j + 1 < len(d) and d[j + 1] == d[i]:
            j += 1
        if (i == 0 or d[i - 1] < d[i]) and (j == len(d) - 1 or d[j + 1] < d[i]):
            out.append((i + j) // 2)
        i = j + 1
    return out


def _separate(d: list[int], a: int, b: int) -> bool:
    low = min(d[a], d[b])
    return low >= MIN_STATE and min(d[a:b + 1]) <= VALLEY * low


def _merged(d: list[int], peaks: list[int]) -> list[int]:
    """peaks with every pair not _separate merged, the shallowest valley first."""
    peaks = list(peaks)
    while True:
        pairs = enumerate(zip(peaks, peaks[1:], strict=False))
        weak = [(min(d[a:b + 1]) / min(d[a], d[b]), k) for k, (a, b) in pairs
                if not _separate(d, a, b)]
        if not weak:
            return peaks
        k = max(weak)[1]
        a, b = peaks[k], peaks[k + 1]
        peaks[k:k + 2] = [a if d[a] >= d[b] else b]


def _valley(d: list[int], a: int, b: int) -> int:
    """The middle of the lowest run of d between peaks a and b."""
    low = min(d[a:b + 1])
    at = [k for k in range(a, b + 1) if d[k] == low]
    return (at[0] + at[-1]) // 2


def coarse(history_ns: Sequence[float]) -> float | None:
    """The coarse reference: the reading with the most of the history within GATE_FACTOR
    of it (a tie goes to the faster), the median of those; None without history."""
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


def reference(history_ns: Sequence[float],
              own_ns: Sequence[float] | None = None) -> Reference | None:
    """The reference state of a campaign, or None without history. First the coarse state
    (coarse over history_ns: every valid reading before and after each launch so far, kept
    or set aside, whoever read it); then, within GATE_FACTOR of it, the finer state most of
    one reader's readings (own_ns; default history_ns) found (`states`; a tie goes to the
    faster), bounded by its valleys and by the coarse window. Readers differ: the core's
    ranks see a valley the probe program does not (module docstring)."""
    centre = coarse(history_ns)
    if centre is None:
        return None
    lo, hi = centre / GATE_FACTOR, centre * GATE_FACTOR
    own = history_ns if own_ns is None else own_ns
    found = [s for s in states([v for v in own if lo <= v <= hi]) if s.n]
    if not found:
        return Reference(centre)
    best = max(found, key=lambda s: (s.n, -s.ns))
    return Reference(best.ns, max(best.lo, lo), min(best.hi, hi))


def reader_of(label: str | None) -> str:
    """Who read a machine state, from a history line's source, an attempt's or a stored
    record's reading: "launch" (the core's own readings, core/state.c) or "probe" (the probe
    program, for anything else)."""
    return "launch" if label == "launch" else "probe"


def reader_reference(history: Sequence[tuple[float, str]], reader: str) -> Reference | None:
    """The reference one reader's readings are judged against, from a history of (ns,
    reader): `reference` (the coarse state of every reading, then the reader's finer state)
    for FINER_READERS, the coarse state alone for the others."""
    every = [ns for ns, _ in history]
    if reader not in FINER_READERS:
        centre = coarse(every)
        return None if centre is None else Reference(centre)
    return reference(every, [ns for ns, who in history if who == reader])


def judge_launch(before: ProbeReading | None, after: ProbeReading | None,
                 ref: float | None) -> State:
    """A launch's state: OFF when a valid probe before or after it is not in the reference
    state (a Reference's bounds; a plain number: within GATE_FACTOR of it); REFERENCE when
    both are valid and in it; else UNKNOWN (kept)."""
    readings = [r for r in (before, after) if r is not None and r.valid]
    if ref is None or not readings:
        return State.UNKNOWN
    bounds = ref if isinstance(ref, Reference) else Reference(ref)
    if any(not bounds.holds(r.median_ns) for r in readings):
        return State.OFF
    return State.REFERENCE if len(readings) == 2 else State.UNKNOWN


def judge_stored(before_ns: float | None, after_ns: float | None, ref: float | None) -> State:
    """judge_launch on a stored launch's before/after medians (ns; None where the probe gave
    no valid reading - the campaign stores a median only for a valid one)."""
    def reading(ns: float | None) -> ProbeReading | None:
        return None if ns is None else ProbeReading(ns, ns, ns, MIN_SAMPLES, (0, 1))
    return judge_launch(reading(before_ns), reading(after_ns), ref)


# KeptOff.balanced: the variants' off attempts are not shown to differ at this level (a
# two-sided exact binomial test of one variant's share, two variants; chi-square beyond).
# A variant whose own launches move the machine state is set aside more often than the
# other; leaving the rounds of its kept-off launches out would hide the slowness it causes
# (bench_probe_gate.py --round-rule, 200 rounds: at 20% of its launches, "equivalent within
# ±5%" in 96% of runs against 4% with them in). The test has little power at the 10-30
# rounds a comparison decides at (exactly: it rejects only from 6 off attempts all on one
# side), so it does not make the rule safe there (review s37 R3) and compare does not leave
# rounds out; KeptOff measures (the TTD bench's what-if, bench_probe_gate --round-rule)
OFF_BALANCE_ALPHA = 0.05


class KeptOff(NamedTuple):
    """Which rounds of an interleaved run hold a launch kept off its reference state after
    the gate's retries (campaign/machine_probe.py: state "off"), and how the off attempts
    (set aside, or kept off) fall on the variants."""
    rounds: frozenset        # the rounds (as given) with a kept-off launch
    off: dict                # {variant: its off attempts}
    launches: dict           # {variant: its kept launches}
    p: float                 # the balance test's p (1.0: nothing to test)
    # the rounds of `rounds` whose launches' readings (each launch's before/after
    # geometric mean) are not all `near`: a kept-off launch beside one in the other coarse
    # state (the stored TTD runs: those rounds' mean residual of d rms 0.48 in logs against
    # 0.18 for kept-off rounds in one state and 0.11 for the others)
    mixed: frozenset = frozenset()

    @property
    def balanced(self) -> bool:
        return self.p >= OFF_BALANCE_ALPHA

    @property
    def left_out(self) -> frozenset:
        """The candidate rule measured and not taken (compare pairs every round): the
        mixed rounds while the variants' off attempts are balanced, none when they are
        not. No guard tried keeps a variant that moves the state itself from gaining at
        10-30 rounds (bench_probe_gate.py --round-rule --rr-rounds 10/30)."""
        return self.mixed if self.balanced else frozenset()


def kept_off(launches) -> KeptOff:
    """KeptOff of (round, variant, the launch's stored machine_probe record or None)
    triples, one per kept launch. Off attempts are the record's set_aside entries (each
    judged off and run again) plus the kept one when its state is "off"; the balance test
    compares each variant's share of them with its share of the kept launches."""
    rounds, off, n, seen = set(), {}, {}, {}
    for rnd, variant, rec in launches:
        rec = rec if isinstance(rec, dict) else {}
        is_off = rec.get("state") == State.OFF.value
        n[variant] = n.get(variant, 0) + 1
        off[variant] = off.get(variant, 0) + len(rec.get("set_aside") or []) + is_off
        if is_off:
            rounds.add(rnd)
        ns = launch_ns(rec)
        if ns is not None:
            seen.setdefault(rnd, []).append(ns)
    mixed = {r for r in rounds if len(seen.get(r, ())) > 1
             and not near(min(seen[r]), max(seen[r]))}
    return KeptOff(frozenset(rounds), off, n, _balance_p(off, n), frozenset(mixed))


def launch_ns(rec: dict) -> float | None:
    """A stored launch's reading: the geometric mean of its valid before/after medians."""
    xs = [x for x in (rec.get("before_ns"), rec.get("after_ns"))
          if type(x) in (int, float) and math.isfinite(x) and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def _balance_p(off: dict, n: dict) -> float:
    from scipy import stats as sps

    names = sorted(n)
    total, kept = sum(off.values()), sum(n.values())
    if len(names) < 2 or total == 0:
        return 1.0
    if len(names) == 2:
        a = names[0]
        return float(sps.binomtest(off[a], total, n[a] / kept).pvalue)
    expected = [total * n[v] / kept for v in names]
    return float(sps.chisquare([off[v] for v in names], expected).pvalue)
