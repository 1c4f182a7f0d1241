#!/usr/bin/env python3
"""The machine-state gate (campaign/machine_probe.py): a replay on real launches and an A/A
simulation. Prints numbers, asserts nothing.

    .venv/bin/python bench/bench_probe_gate.py [--quick] [--reps N] [--seed S]
    .venv/bin/python bench/bench_probe_gate.py --ttd DIR...    (stored TTD runs, no MPI)
    .venv/bin/python bench/bench_probe_gate.py --pairs N       (real probes, 1 vs 3 ms)
    .venv/bin/python bench/bench_probe_gate.py --within N [--stack S]  (core readings vs probes)
    .venv/bin/python bench/bench_probe_gate.py --steal N       (steal time vs unflagged stalls)
    .venv/bin/python bench/bench_probe_gate.py --stores DIR...  (stored gated campaigns: kept
                                                   off, why, what retries cost; no MPI)
    .venv/bin/python bench/bench_probe_gate.py --finer [--reps N]  (the core's finer state:
                                                   retry at once vs PAUSE_S, A/A; no MPI)
    .venv/bin/python bench/bench_probe_gate.py --round-rule [--reps N]  (a round with a
                                                   kept-off launch left out, when a variant
                                                   moves the state itself; no MPI)

Replay: tests/data/probe/phase1-loaded.jsonl holds phase 1's 102 launches under
`under-load -j 4` (TTD's pilot command lines, Open MPI then MPICH, each between two probes;
/work/tools/notes/probe-phase1.md). A round is one launch of each; its difference is
log(MPICH median) - log(Open MPI median). Per size 0 B, 8 B, 1 KiB: the sd of the round
differences over all rounds and over the rounds the gate keeps (both launches REFERENCE at
the reference of all the probes, stats.probe), and the rounds per side a paired TOST within
±5% needs at that sd (80% power at true gain 1, z approximation) - the figure TTD's plan
refuses above 1000. Rounds with a launch median above 5 us at these sizes (a rank
descheduled for a scheduler slice, not a mode) are left out and counted.

Simulation: identical variants (A/A) whose launches come in two machine states, a factor 3
apart in log median (0 or ln 3, within-state sd 0.05), the state a Markov chain over launches
that stays with probability 0.9 (stationary share of the slow state 0.5 or 0.85), the probe
reading the state with 5% noise and 10% of readings starved; TTD's order (A then B in each
round), 10 rounds. Ungated: every launch kept. Gated: the campaign's gate as implemented
(reference from the history so far; before each attempt it waits, probing while the machine
moves on, up to WAIT_STEPS steps, for the reference state; a launch OFF is set aside and run
again, at most RETRIES times). Per design:
false positives of a paired t test at 5% (must stay at alpha: the probe does not see the
variant, so keeping launches on it cannot favour one), "equivalent within ±5%" by paired
TOST at 5% (the decision TTD wants), and the attempts per kept launch. Then a real 10% slowdown of
B in both states: its mean estimate gated and ungated (unbiased either way).

--ttd: the gate's wall time in kept bench_time_to_decision.py runs (gate on): where it went
(probes, waits by outcome, launches kept and set aside), each launch's own mode at the small
sizes by its before/after probes, and gate policies replayed against the recorded states
(what each waits, sets aside and keeps off the reference). --pairs: N back-to-back pairs of
real probes at --ms 3 and 1 (same state? starved? wall time). --within: N rounds of a probe,
a real core launch reading its own state (core/state.c, --state-ms 1), a probe, and the same
launch with --state-ms 0: how often the launch's start/end readings find the state the probe
just before/after found, their ratio to the probe's median per state, and the wall time of
two probes against the launch's two readings and of the launch with and without them. The
--ttd replay's policy "stop 33-35: core's own, 1st unwaited" judges the core's first
attempt on the recorded state at its start and end with no wait and no probe (the probe
program's runs are priced at PROBE_WALL_S each); IMB keeps the probes and waits. "as built
(stop 36)" judges the core the same way but waits before every attempt, its first one
included, with one probe before and none after (the campaign's rule since stop 36).
--set-aside-causes
DIR...: why each attempt of kept TTD runs was set aside (stop 36). Its last table (stop 34)
replays the recorded readings (ns, with their reader) through the old rule (GATE_FACTOR
around the coarse reference) and the new (stats.probe.reference: the reader's finer state)
side by side: attempts each judges off online, their launch seconds, the ratio, and MPICH's
0 B medians of the launches each keeps at its final reference.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _sps():
    """scipy.stats, imported where a simulation needs it: its ~1 s import made --help and
    every refused flag slow (tests/test_bench_scripts.py runs them)."""
    from scipy import stats
    return stats


sys.path.insert(0, str(ROOT / "src"))

from mpibench.campaign.machine_probe import RETRIES  # noqa: E402
from mpibench.errors import UsageError  # noqa: E402
from mpibench.stats.probe import (  # noqa: E402
    GATE_FACTOR,
    MIN_SAMPLES,
    ProbeReading,
    Reference,
    State,
    coarse,
    judge_launch,
    judge_stored,
    near,
    reader_of,
    reader_reference,
    reference,
)

DATA = ROOT / "tests" / "data" / "probe" / "phase1-loaded.jsonl"
MARGIN = math.log(1.05)
DESCHEDULED_US = 5.0


def _reading(pair) -> ProbeReading:
    return ProbeReading(pair[0], pair[0], pair[0], pair[1], (0, 1))


def rounds_needed(sd: float) -> float:
    """Rounds per side for a paired TOST within ±5% at alpha 0.05, 80% power at gain 1."""
    z = _sps().norm.ppf(0.95) + _sps().norm.ppf(0.9)
    return (z * sd / MARGIN) ** 2


def replay() -> None:
    rows = [json.loads(ln) for ln in DATA.read_text().splitlines()]
    ref = reference([p[0] for r in rows for p in (r["before"], r["after"])
                     if p[1] >= MIN_SAMPLES])
    pairs = [(a, b) for a, b in zip(rows[::2], rows[1::2], strict=False)
             if a["variant"] == "openmpi" and b["variant"] == "mpich"]
    print(f"replay: {len(pairs)} rounds of {DATA.name}; reference state {ref:.0f} ns")
    print(f"{'size':>6} {'rounds':>7} {'sd all':>7} {'need':>6} {'kept':>5} {'sd kept':>8} "
          f"{'need':>6} {'desched':>8}")
    for size in ("0", "8", "1024"):
        ok = [(a, b) for a, b in pairs
              if max(a["median_us"][size], b["median_us"][size]) < DESCHEDULED_US]
        d = np.array([math.log(b["median_us"][size] / a["median_us"][size]) for a, b in ok])
        kept = np.array([judge_launch(_reading(a["before"]), _reading(a["after"]), ref)
                         is State.REFERENCE
                         and judge_launch(_reading(b["before"]), _reading(b["after"]), ref)
                         is State.REFERENCE for a, b in ok])
        sd_all, sd_kept = d.std(ddof=1), d[kept].std(ddof=1)
        print(f"{size:>5}B {len(d):>7} {sd_all:>7.3f} {rounds_needed(sd_all):>6.0f} "
              f"{kept.sum():>5} {sd_kept:>8.3f} {rounds_needed(sd_kept):>6.0f} "
              f"{len(pairs) - len(ok):>8}")


class Machine:
    """A two-state machine (Markov over launches) and a probe that reads it."""

    def __init__(self, rng: np.random.Generator, slow_share: float, stay: float = 0.9):
        self.rng, self.stay = rng, stay
        # leave fast with (1 - stay) * 2 * share, slow with (1 - stay) * 2 * (1 - share)
        self.p_leave = {0: (1 - stay) * 2 * slow_share, 1: (1 - stay) * 2 * (1 - slow_share)}
        self.state = int(rng.random() < slow_share)

    def step(self) -> int:
        if self.rng.random() < self.p_leave[self.state]:
            self.state = 1 - self.state
        return self.state

    def probe(self) -> ProbeReading:
        ns = (320.0 if self.state else 80.0) * math.exp(self.rng.normal(0, 0.05))
        samples = 5 if self.rng.random() < 0.10 else 500
        return ProbeReading(ns, ns, ns, samples, (0, 1))


WAIT_STEPS = 10   # the gate's wait before an attempt (WAIT_S 20 s), in machine steps of ~2 s


def wait(m: Machine, history: list[float]) -> ProbeReading:
    """Probe (the machine moving on) until the reference state or WAIT_STEPS."""
    ref = reference(history)
    for _ in range(WAIT_STEPS):
        r = m.probe()
        if ref is None or not r.valid or near(r.median_ns, ref):
            return r
        m.step()
    return m.probe()


def one_launch(m: Machine, history: list[float], gated: bool, effect: float
               ) -> tuple[float, int]:
    """A kept launch's log median and the attempts it took."""
    for attempt in range(RETRIES + 1):
        m.step()
        before = wait(m, history) if gated else m.probe()
        value = math.log(3.0) * m.state + effect + m.rng.normal(0, 0.05)
        after = m.probe()
        state = judge_launch(before, after, reference(history)) if gated else State.UNKNOWN
        history += [r.median_ns for r in (before, after) if r.valid]
        if state is not State.OFF or attempt == RETRIES:
            return value, attempt + 1
    raise AssertionError("unreachable")


def simulate(rng: np.random.Generator, reps: int, slow_share: float, gated: bool,
             effect: float, rounds: int = 10) -> dict[str, float]:
    fp = eq = 0
    attempts: list[int] = []
    means: list[float] = []
    for _ in range(reps):
        m, history, d = Machine(rng, slow_share), [], []
        for _ in range(rounds):
            a, na = one_launch(m, history, gated, 0.0)
            b, nb = one_launch(m, history, gated, effect)
            d.append(b - a)
            attempts += [na, nb]
        d = np.array(d)
        se = d.std(ddof=1) / math.sqrt(rounds)
        t = d.mean() / se
        fp += abs(t) > _sps().t.ppf(0.975, rounds - 1)
        q = _sps().t.ppf(0.95, rounds - 1)
        eq += (d.mean() - q * se > -MARGIN) and (d.mean() + q * se < MARGIN)
        means.append(d.mean())
    return {"sig": fp / reps, "eq": eq / reps, "attempts": float(np.mean(attempts)),
            "mean": float(np.mean(means))}


def simulation(reps: int, seed: int) -> None:
    print(f"\nsimulation: {reps} A/A comparisons per row, 10 rounds, paired t / TOST at 5% "
          f"(seed {seed})")
    print(f"{'slow share':>10} {'gate':>5} {'significant':>12} {'equiv. 5%':>10} "
          f"{'attempts/launch':>16} {'B +10%: mean':>13}")
    for share in (0.5, 0.85):
        for gated in (False, True):
            rng = np.random.default_rng([seed, int(share * 100), gated])
            aa = simulate(rng, reps, share, gated, 0.0)
            slow = simulate(rng, max(reps // 4, 50), share, gated, math.log(1.10))
            print(f"{share:>10.2f} {'on' if gated else 'off':>5} {aa['sig']:>12.3f} "
                  f"{aa['eq']:>10.3f} {aa['attempts']:>16.2f} "
                  f"{math.exp(slow['mean']):>13.4f}")


# -- the core's finer state, which the probe program cannot see (--finer) -------------------
# A machine in continuous time: the reference state (the core reads ~100 ns) and a finer
# one (~70 ns; a launch's small-size times 35% higher), exponential dwell times; the probe
# program reads ~80 ns in both. The campaign's own MachineGate (its start / keeps / judge /
# sees / pause, on a clock this machine moves) gates a paired A/A of interleaved launches.
LAUNCH_S = 0.6          # one core launch's wall time (the demo A/A: 0.62-0.69 s)
FINER_SHIFT = math.log(1.35)


class FinerMachine:
    def __init__(self, rng: np.random.Generator, dwell_ref: float, dwell_finer: float):
        self.rng, self.now, self.finer = rng, 0.0, rng.random() < 0.2
        self.dwell = {False: dwell_ref, True: dwell_finer}
        self.until = rng.exponential(self.dwell[self.finer])

    def advance(self, s: float) -> None:
        self.now += s
        while self.now >= self.until:
            self.finer = not self.finer
            self.until += self.rng.exponential(self.dwell[self.finer])

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1.8e9 + self.now

    def sleep(self, s: float) -> None:
        self.advance(s)

    def own(self) -> ProbeReading:
        ns = (70.0 if self.finer else 100.0) * math.exp(self.rng.normal(0, 0.04))
        return ProbeReading(ns, ns, ns, 500, (0, 1))

    def program(self) -> tuple[ProbeReading, str]:
        self.advance(0.01)
        ns = 80.0 * math.exp(self.rng.normal(0, 0.08))
        return ProbeReading(ns, ns, ns, 500, (0, 1)), "line"


def _finer_launch(m: FinerMachine, gate, effect: float) -> tuple[float, bool, int]:
    """One kept launch (its log value, whether it ran in the finer state, attempts)."""
    from mpibench.campaign.machine_probe import Attempt
    for k in range(RETRIES + 1):
        a: Attempt = gate.start(own=True, attempt=k) if gate else None
        before, finer = m.own(), m.finer
        m.advance(LAUNCH_S)
        after = m.own()
        value = FINER_SHIFT * finer + effect + m.rng.normal(0, 0.05)
        if gate is None:
            return value, finer, 1
        a.before, a.after = before, after
        gate.history += [(before.median_ns, "launch"), (after.median_ns, "launch")]
        if gate.keeps(a, k):
            return value, finer, k + 1
    raise AssertionError("unreachable")


def finer_sim(reps: int, seed: int, rounds: int = 24) -> None:
    """--finer: A/A false positives, launches kept in the finer state, attempts and wall
    seconds per kept launch: ungated, the gate retrying at once, the gate as it is."""
    import tempfile

    from mpibench.campaign import machine_probe as mp
    print(f"\nthe core's finer state (probe program blind to it): {reps} A/A comparisons per "
          f"row, {rounds} rounds, paired t at 5% (seed {seed}); dwell ref/finer mean s")
    print(f"{'dwell':>9} {'policy':>16} {'significant':>12} {'kept finer':>11} "
          f"{'attempts':>9} {'s/launch':>9}")
    pause, clock = mp.PAUSE_S, mp.time
    with tempfile.TemporaryDirectory() as tmp:
        for dwell in ((60.0, 12.0), (30.0, 1.0)):
            for name, gated, p in (("ungated", False, 0.0), ("gate, at once", True, 0.0),
                                   ("gate, pause 5 s", True, 5.0),
                                   (f"gate, pause {pause:g} s", True, pause)):
                rng = np.random.default_rng([seed, int(dwell[1]), int(p)])
                fp = finer = attempts = 0
                wall = 0.0
                mp.PAUSE_S = p
                for _ in range(reps):
                    m = FinerMachine(rng, *dwell)
                    mp.time = m
                    gate = mp.MachineGate(Path(tmp), "gate") if gated else None
                    if gate:
                        gate.read = m.program
                        gate.history = [(100.0 * math.exp(rng.normal(0, 0.04)), "launch")
                                        for _ in range(40)] + \
                            [(70.0 * math.exp(rng.normal(0, 0.04)), "launch") for _ in range(8)]
                    d = []
                    for _ in range(rounds):
                        a, fa, na = _finer_launch(m, gate, 0.0)
                        b, fb, nb = _finer_launch(m, gate, 0.0)
                        d.append(b - a)
                        finer += fa + fb
                        attempts += na + nb
                    d = np.array(d)
                    fp += abs(d.mean() / (d.std(ddof=1) / math.sqrt(rounds))) > \
                        _sps().t.ppf(0.975, rounds - 1)
                    wall += m.now
                n = reps * rounds * 2
                print(f"{dwell[0]:>4.0f}/{dwell[1]:<4.0f} {name:>16} {fp / reps:>12.3f} "
                      f"{100 * finer / n:>10.1f}% {attempts / n:>9.2f} {wall / n:>9.2f}")
    mp.PAUSE_S, mp.time = pause, clock


# -- the gate's wall time on stored TTD runs (--ttd DIR...) ---------------------------------
# Each DIR is a kept bench_time_to_decision.py run with the gate on (/tmp/ttd-data/run-32..41):
# <tool>/runs/<id>[.set-aside-K]/machine-probe.txt holds every probe of an attempt in order
# (the re-probes of its wait, its before-probe, its after-probe), timing.json its launch's
# start and end, core.jsonl / stdout.txt its values. A probe is FAST below BOUNDARY_NS and
# SLOW above (this VM's ~80 / ~320 ns states; GATE_FACTOR 1.6 from either).
BOUNDARY_NS = 160.0
SMALL = ("0", "8", "64", "1024")
STEP_S = 0.6            # one re-probe of the wait: WAIT_STEP_S plus the probe's own run


def _state(p: dict | None) -> str:
    if p is None or p["samples"] < MIN_SAMPLES:
        return "?"
    return "F" if p["median_ns"] < BOUNDARY_NS else "S"


def _values(d: Path) -> dict[str, float]:
    """A launch's value per small size (us): the core's median, IMB's t[usec]."""
    out: dict[str, float] = {}
    if (d / "core.jsonl").exists():
        for ln in (d / "core.jsonl").read_text().splitlines():
            r = json.loads(ln)
            if r.get("record") == "result" and r.get("median_us"):
                out[str(r["size"])] = r["median_us"]
    elif (d / "stdout.txt").exists():
        for ln in (d / "stdout.txt").read_text().splitlines():
            p = ln.split()
            if len(p) == 4 and p[0].isdigit() and p[2].replace(".", "", 1).isdigit():
                out.setdefault(p[0], float(p[2]))
    return {k: v for k, v in out.items() if k in SMALL}


def _probes(text: str) -> list[dict | None]:
    out: list[dict | None] = []
    for ln in text.splitlines():
        try:
            out.append(json.loads(ln))
        except ValueError:
            out.append(None)          # "probe failed ..." lines
    return out


def _judged(ps: list[dict | None]) -> list[tuple[float, str]]:
    """The readings an attempt was judged on, with their reader: the core's own two
    ("cacheline-ranks": its header's and footer's, in the raw after any wait's probes),
    else the probe program's last two (before, after); starved ones left out."""
    own = [p for p in ps if p and p.get("probe") == "cacheline-ranks"]
    pick = [(p, "launch") for p in own[:2]] if own else \
        [(p, "probe") for p in ps[-2:] if p and p.get("probe") != "cacheline-ranks"]
    return [(p["median_ns"], who) for p, who in pick if p.get("samples", 0) >= MIN_SAMPLES]


def invocation(run: Path, repeat: int | None) -> str:
    """The campaign invocation that ran round `repeat` (index from 0) of a kept TTD run:
    one a round up to its interleaved rounds (bench.json's "rounds"), then --to-budget's
    continuation, one invocation per look (bench_time_to_decision.settings_looks: the
    looks the run wrote, else rebuilt). The gate's WAIT_TOTAL_S is per invocation: keyed
    per round, the continuation's 60 s came back every round and the replay waited ~7000 s
    where ttd-04 waited 196. A bench.json the TTD bench refuses is said once on stderr and
    its run keyed a round each."""
    if repeat is None:
        return "?"
    ttd = _ttd_bench()
    f = run / ttd.SETTINGS
    try:
        compare = ttd.settings_rounds(f)
        looks = ttd.settings_looks(f, _store_rounds(run))
    except UsageError as exc:
        if str(f) not in _REFUSED:
            _REFUSED.add(str(f))
            print(f"--ttd: {exc}; its rounds are keyed one invocation each", file=sys.stderr)
        return str(repeat)
    if looks is None or repeat < compare:
        return str(repeat)
    return f"to {next((n for n in looks if n > repeat), looks[-1])}"


_REFUSED: set[str] = set()


def _ttd_bench():
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    import bench_time_to_decision
    return bench_time_to_decision


def _store_rounds(run: Path) -> int:
    """The rounds the core's continuation ran to: the most its launches' cell.json say
    (a cell.json that is not an object with an integer repeat is passed over)."""
    top = 0
    for f in (run / "core" / "runs").glob("*/cell.json"):
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        rep = doc.get("repeat") if isinstance(doc, dict) else None
        if type(rep) is int and rep >= 0:
            top = max(top, rep + 1)
    return top


def ttd_attempts(dirs: list[Path]) -> list[dict]:
    """Every gated attempt of the runs: run, tool, cell id, variant, set aside, launch
    start/end, its probes' states and run times, its small sizes' values."""
    rows = []
    for run in dirs:
        for tool in ("core", "imb"):
            for d in sorted((run / tool / "runs").glob("*/machine-probe.txt")):
                d = d.parent
                t = json.loads((d / "timing.json").read_text())
                ps = _probes((d / "machine-probe.txt").read_text())
                cell = json.loads((d / "cell.json").read_text())
                rows.append({"run": run.name, "tool": tool, "cell": d.name.split(".")[0],
                             "variant": cell["variant"]["name"], "repeat": cell.get("repeat"),
                             "invocation": invocation(run, cell.get("repeat")),
                             "aside": ".set-aside-" in d.name,
                             "start": t["started"], "end": t["finished"],
                             "states": [_state(p) for p in ps],
                             "kinds": [(p or {}).get("probe") for p in ps],
                             "probe_s": sum((p or {}).get("elapsed_ms", 0) for p in ps) / 1e3,
                             "judged": _judged(ps), "values": _values(d)})
    return rows


def where_the_time_goes(rows: list[dict]) -> None:
    """Probe run time, launch time and the waits by outcome, per run and tool."""
    print("\nTTD runs, the gate's wall time (s) per run and tool: probes' own run time; "
          "re-probes of waits that found the reference within 4 s / later / never (the "
          "wait's limit, 20 s; 10 s in run-50), at ~0.6 s each; launches kept / "
          "set aside")
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["run"], r["tool"]), []).append(r)
    for (run, tool), rs in sorted(groups.items()):
        waits = {"short": 0, "long": 0, "never": 0}
        for r in rs:
            pre = _wait_probes(r)
            n = len(pre) - 1
            pre = [s for s in pre if s != "?"]
            if n > 0 and pre:
                waits["never" if pre[-1] == pre[0] else "short" if n <= 7 else "long"] += n
        kept = sum(r["end"] - r["start"] for r in rs if not r["aside"])
        aside = sum(r["end"] - r["start"] for r in rs if r["aside"])
        print(f"  {run} {tool:4s} probes {sum(r['probe_s'] for r in rs):5.1f} | waits "
              + " ".join(f"{k} {v * STEP_S:5.1f}" for k, v in waits.items())
              + f" | launches kept {kept:5.1f} set aside {aside:4.1f}")


def _wait_probes(r: dict) -> list[str]:
    """The states of an attempt's probe-program runs before its launch: the before-probe
    and the re-probes of its wait (the core's own start/end readings, "cacheline-ranks",
    are the launch's, not the wait's; without them the last probe is the after-probe).
    Counting every line but two as a re-probe charged each core attempt one 0.6 s wait
    that never found the reference (ttd-04: 739 s where the core waited 196)."""
    kinds = r.get("kinds") or [None] * len(r["states"])
    prog = [s for s, k in zip(r["states"], kinds, strict=True) if k != "cacheline-ranks"]
    return prog if len(prog) < len(r["states"]) else prog[:-1]


def launch_modes(rows: list[dict]) -> None:
    """Per before/after probe states: the launches' own mode at the small sizes (the value
    nearer, in log, to the median of the launches both of whose probes were FAST or SLOW)."""
    centre: dict[tuple, dict[str, float]] = {}
    for key in {(r["tool"], r["variant"], s) for r in rows for s in SMALL}:
        for m in "FS":
            v = [r["values"][key[2]] for r in rows if (r["tool"], r["variant"]) == key[:2]
                 and r["states"][-2:] == [m, m] and key[2] in r["values"]]
            if v:
                centre.setdefault(key, {})[m] = float(np.median(v))
    print("\nlaunches by their probes (before, after) and their own mode at 0 B / 8 B / 64 B "
          "/ 1 KiB (F all fast, S all slow, M mixed; only launches that measured them)")
    table: dict[tuple, dict[str, int]] = {}
    for r in rows:
        c = [centre.get((r["tool"], r["variant"], s), {}) for s in r["values"]]
        modes = {"F" if abs(math.log(v / k["F"])) < abs(math.log(v / k["S"])) else "S"
                 for v, k in zip(r["values"].values(), c, strict=True)
                 if len(k) == 2 and v < 2 * k["S"]}
        if modes and len(r["states"]) >= 2:
            mode = modes.pop() if len(modes) == 1 else "M"
            t = table.setdefault((r["tool"], *r["states"][-2:]), {"F": 0, "S": 0, "M": 0})
            t[mode] += 1
    for (tool, b, a), t in sorted(table.items()):
        print(f"  {tool:4s} before {b} after {a}: launch F {t['F']:4d}  S {t['S']:4d}  "
              f"M {t['M']:3d}")


def _timeline(rows: list[dict]) -> dict[str, tuple[list[float], list[str]]]:
    """Per run: the valid probes' times and states, both tools (the re-probes of a wait
    placed STEP_S apart before its launch, the after-probe at its end)."""
    ev: dict[str, list[tuple[float, str]]] = {}
    for r in rows:
        pre = r["states"][:-1]
        ev.setdefault(r["run"], []).extend(
            (r["start"] - STEP_S * (len(pre) - 1 - i), s) for i, s in enumerate(pre))
        ev[r["run"]].append((r["end"], r["states"][-1]))
    out = {}
    for run, e in ev.items():
        e = sorted(x for x in e if x[1] != "?")
        out[run] = ([t for t, _ in e], [s for _, s in e])
    return out


def _cells(rows: list[dict], run: str, tool: str) -> list[tuple[float, float, str]]:
    """A tool's cells in order: when its gate began, its kept launch's seconds, the
    campaign invocation that ran it (invocation(): one a round for the interleaved rounds,
    one a batch for --to-budget's continuation)."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        if (r["run"], r["tool"]) == (run, tool):
            by.setdefault(r["cell"], []).append(r)
    cells = []
    for rs in by.values():
        first = min(rs, key=lambda r: r["start"])
        kept = [r for r in rs if not r["aside"]] or rs
        cells.append((first["start"] - STEP_S * (len(first["states"]) - 2),
                      kept[0]["end"] - kept[0]["start"], first["invocation"]))
    cells.sort()
    return cells


def _majority(hist: list[str]) -> str | None:
    return None if not hist else "F" if hist.count("F") >= hist.count("S") else "S"


def _replay_tool(env, cells, pol: dict) -> dict[str, float]:
    """The gate of policy pol replayed on one tool's cells against the recorded machine."""
    ts, ss = env

    def at(t: float) -> str:
        return ss[max(bisect.bisect_right(ts, t) - 1, 0)]
    hist: list[str] = []
    t, used, out = 0.0, {}, {"wait": 0.0, "aside": 0, "aside_s": 0.0, "probes": 0}
    kept: list[tuple[str, str]] = []
    for t0, dur, inv in cells:
        t = max(t, t0)
        inv = "run" if pol.get("shared_cap") else inv
        for attempt in range(RETRIES + 1):
            ref, start = _majority(hist), t
            # judged on its own readings; stops 33-35 started its first attempt unwaited
            own = pol.get("own") and attempt == 0 and not pol.get("own_waits")
            limit = 0.0 if own else \
                min(pol.get("wait", 20.0), max(0.0, 60.0 - used.get(inv, 0.0)))
            s, waits = at(t), []
            while ref and s != ref and t - start < limit:
                waits.append(s)
                t += STEP_S
                s = at(t)
            used[inv] = used.get(inv, 0.0) + (t - start if waits else 0.0)
            out["wait"] += t - start
            # the probe program's runs: before (and each re-probe of a wait) and after;
            # a launch reading its own state runs none on its first attempt, after a retry's
            # wait its readings replace the after-probe
            out["probes"] += 0 if own else len(waits) + (1 if pol.get("own") else 2)
            if pol.get("skip") and ref and s != ref and attempt < RETRIES:
                hist.append(s)            # no launch: its probe is still history
                out["aside"] += 1
                continue
            before, after = s, at(t + dur)
            t += dur
            hist += (waits if pol.get("waits_in_history") else []) + [before, after]
            off = ref and (before != ref or (not pol.get("before_only") and after != ref))
            if off and attempt < RETRIES:
                out["aside"] += 1
                out["aside_s"] += dur
                continue
            kept.append((before, after))
            break
    final = _majority(hist)
    out["kept"] = len(kept)
    out["mixed"] = sum(b != final or a != final for b, a in kept)
    return out


POLICIES = {
    "20 s wait, both probes (IMB as built)": {},
    "judge on the before-probe only": {"before_only": True},
    "wait at most 10 s": {"wait": 10.0},
    "wait at most 5 s": {"wait": 5.0},
    "wait at most 3 s": {"wait": 3.0},
    "60 s cap shared by a run's rounds": {"shared_cap": True},
    "waits' probes in the history": {"waits_in_history": True},
    "no launch known off (retry waits)": {"skip": True},
    "stop 33-35: core's own, 1st unwaited": {"own": True},
    "as built (stop 36): core's own, waits": {"own": True, "own_waits": True},
}
# the probe program's wall time per run, spawn included (`--pairs 400`, stop 32: 8.5 ms)
PROBE_WALL_S = 0.0085


def policy_replay(rows: list[dict]) -> None:
    env = _timeline(rows)
    runs = sorted({r["run"] for r in rows})
    print(f"\nreplay of gate policies on the recorded machine states ({len(runs)} runs, both "
          "tools; a state = the last probe's, launches keep their recorded seconds):")
    print(f"  {'policy':40s} {'wait s':>7} {'probes s':>8} {'set aside':>9} {'their s':>8} "
          f"{'kept':>5} {'off the final reference':>24}")
    for name, pol in POLICIES.items():
        tot: dict[str, float] = {}
        for run in runs:
            for tool in ("core", "imb"):
                cells = _cells(rows, run, tool)
                # only the core can read its own state; IMB keeps the probes and waits
                p = dict(pol, own=bool(pol.get("own")) and tool == "core")
                if cells:
                    for k, v in _replay_tool(env[run], cells, p).items():
                        tot[k] = tot.get(k, 0) + v
        print(f"  {name:40s} {tot['wait']:7.0f} {tot['probes'] * PROBE_WALL_S:8.1f} "
              f"{tot['aside']:9.0f} {tot['aside_s']:8.1f} {tot['kept']:5.0f} "
              f"{tot['mixed']:24.0f}")


# -- stop 34: the finer states, old rule vs new, on the recorded readings ------------------
# Each run's attempts in start order (both tools); before each, the reference of the history
# so far (the readings of every attempt before it, as the campaign records them) by the old
# rule (GATE_FACTOR around the coarse reference, any reader) and the new (stats.probe.
# reader_reference: the coarse state, then the core's own readings' finer state); an attempt OFF by a rule is
# one that rule sets aside (the retry's own outcome is not replayed: the machine's state at
# another time is not recorded). Then the kept launches judged at each rule's final
# reference, and MPICH's 0 B medians of those it keeps: the modes it lets through.

def _rules(history: list[tuple[float, str]], reader: str) -> dict[str, Reference | None]:
    old = coarse([ns for ns, _ in history])
    return {"old": None if old is None else Reference(old),
            "new": reader_reference(history, reader)}


def _judge(rule_ref: Reference | None, judged: list[tuple[float, str]]) -> State:
    rs = [ProbeReading(ns, ns, ns, MIN_SAMPLES, (0, 1)) for ns, _ in judged]
    return judge_launch(rs[0] if rs else None, rs[1] if len(rs) > 1 else None, rule_ref)


def _replay_rules(rs: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (tool, rule): attempts OFF when judged online and their launch seconds."""
    history: list[tuple[float, str]] = []
    out: dict[tuple[str, str], dict[str, float]] = {}
    for r in sorted(rs, key=lambda r: r["start"]):
        if r["judged"]:
            refs = _rules(history, r["judged"][0][1]) if history else {}
            for rule, ref in refs.items():
                t = out.setdefault((r["tool"], rule), {"attempts": 0, "off": 0, "off_s": 0.0})
                t["attempts"] += 1
                if _judge(ref, r["judged"]) is State.OFF:
                    t["off"] += 1
                    t["off_s"] += r["end"] - r["start"]
        history += r["judged"]
    return out


def _kept_modes(rs: list[dict]) -> dict[tuple[str, str], list[float]]:
    """Per (tool, rule): MPICH's 0 B medians of the kept launches in the final reference."""
    history = [x for r in rs for x in r["judged"]]
    out: dict[tuple[str, str], list[float]] = {}
    for r in rs:
        if r["aside"] or not r["judged"] or r["variant"] != "mpich" or "0" not in r["values"]:
            continue
        for rule, ref in _rules(history, r["judged"][0][1]).items():
            if _judge(ref, r["judged"]) is State.REFERENCE:
                out.setdefault((r["tool"], rule), []).append(r["values"]["0"])
    return out


def finer_states(rows: list[dict]) -> None:
    print("\nstop 34's finer states: old rule (GATE_FACTOR around the coarse reference) vs "
          "new (the core's own readings' finer state), replayed online on each run's recorded readings;"
          " MPICH 0 B medians (us) of the kept launches each keeps at its final reference")
    print(f"  {'run':12s} {'tool':4s} {'attempts':>8} {'off old':>7} {'off new':>7} "
          f"{'ratio':>6} {'their s old/new':>15}   MPICH 0 B kept: old n [p5 p50 p95] | new")
    for run in sorted({r["run"] for r in rows}):
        rs = [r for r in rows if r["run"] == run]
        off, modes = _replay_rules(rs), _kept_modes(rs)
        for tool in ("core", "imb"):
            o, n = off.get((tool, "old")), off.get((tool, "new"))
            if not o:
                continue
            ratio = f"{n['off'] / o['off']:6.2f}" if o["off"] else "   inf" if n["off"] else "     -"
            print(f"  {run:12s} {tool:4s} {o['attempts']:8d} {o['off']:7d} {n['off']:7d} "
                  f"{ratio} {o['off_s']:7.1f}/{n['off_s']:<7.1f}   "
                  + " | ".join(_pcts(modes.get((tool, rule), [])) for rule in ("old", "new")))


def _pcts(v: list[float]) -> str:
    if not v:
        return "-"
    q = np.percentile(v, [5, 50, 95])
    return f"{len(v):3d} [{q[0]:.3f} {q[1]:.3f} {q[2]:.3f}]"


# -- the probe's sampling time (--pairs N): does 1 ms read what 3 ms reads? ---------------
def probe_pairs(n: int) -> None:
    """N back-to-back pairs of real probes (3 ms and 1 ms, alternating which goes first):
    how often both read the same state, how often one starved, and their run times."""
    import subprocess
    import time

    from mpibench.campaign.machine_probe import probe_program
    from mpibench.stats.probe import parse_probe

    program = str(probe_program())
    agree: dict[str, int] = {}
    took: dict[str, list[float]] = {"3": [], "1": []}
    for i in range(n):
        got = {}
        for ms in (("1", "3") if i % 2 else ("3", "1")):
            t = time.monotonic()
            out = subprocess.run([program, "--ms", ms], capture_output=True, text=True,
                                 timeout=20).stdout
            took[ms].append(time.monotonic() - t)
            got[ms] = _state(parse_probe(out, where=program)._asdict())
        agree[got["3"] + got["1"]] = agree.get(got["3"] + got["1"], 0) + 1
    print(f"probe pairs: {n} back to back, states (3 ms, 1 ms; ? = starved): "
          + ", ".join(f"{k} {v}" for k, v in sorted(agree.items())))
    for ms, ts in took.items():
        print(f"  --ms {ms}: wall per probe (spawn included) median "
              f"{1e3 * float(np.median(ts)):.1f} ms, p90 {1e3 * float(np.quantile(ts, 0.9)):.1f} ms")


# -- the core's own reading beside the probe program (--within N): same state? what cost? --
WITHIN_STACKS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core",
                                  "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]),
    "mpich": ("mpicc.mpich", ["mpiexec.hydra", "-n", "2", "-bind-to", "core"])}
LOCK = "/tmp/mpibench-mpi.lock"
# TTD's core launch, roughly: PingPong 0:22, a short budget per size
WITHIN_ARGS = ["--sizes", "0:22", "--target", "100", "--max-time", "0.002",
               "--accept-approximate", "--quiet", "PingPong"]


def _timed_probe(program: str) -> tuple[dict, float]:
    import subprocess
    import time

    t = time.monotonic()
    out = subprocess.run([program, "--ms", "1"], capture_output=True, text=True, timeout=30)
    return json.loads(out.stdout), time.monotonic() - t


def _timed_launch(exe: Path, launcher: list[str], state_ms: str, out: Path) -> dict:
    """One core launch under the MPI lock: its wall time (the launcher's, lock wait
    excluded: the lock is taken by a shell that times only the launch) and its readings."""
    import os
    import subprocess

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    inner = 'a=$(date +%s.%N); timeout 120 "$@"; rc=$?; echo "$a $(date +%s.%N)"; exit $rc'
    cmd = ["flock", LOCK, "sh", "-c", inner, "sh", *launcher, str(exe), *WITHIN_ARGS,
           "--state-ms", state_ms, "--jsonl", str(out)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    a, b = map(float, res.stdout.split()[-2:])
    recs = [json.loads(ln) for ln in out.read_text().splitlines()
            if ln.startswith('{"record":"header"') or ln.startswith('{"record":"footer"')]
    return {"wall_s": b - a, "start": recs[0].get("machine_state"),
            "end": recs[-1].get("machine_state")}


def within(n: int, stack: str) -> None:
    """N rounds: probe, a core launch reading its own state (--state-ms 1), probe, then a
    launch without (--state-ms 0): do the core's readings find the probes' state, at what
    ratio, and what does each cost in wall time?"""
    import os
    import tempfile

    from mpibench.campaign.machine_probe import probe_program

    mpicc, launcher = WITHIN_STACKS[stack]
    program = str(probe_program())
    print(f"# --within {n}, {stack}: core {' '.join(WITHIN_ARGS)}; load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gate-within-") as td:
        import subprocess
        subprocess.run(["make", "-s", "-C", str(ROOT / "core"), f"MPICC={mpicc}",
                        f"BUILD={td}/b"], check=True, timeout=600, capture_output=True)
        exe, out = Path(td) / "b" / "mpibench-core", Path(td) / "o.jsonl"
        for _ in range(n):
            before, pb = _timed_probe(program)
            on = _timed_launch(exe, launcher, "1", out)
            after, pa = _timed_probe(program)
            off = _timed_launch(exe, launcher, "0", out)
            rows.append({"before": before, "after": after, "probe_s": [pb, pa], **on,
                         "off_wall_s": off["wall_s"]})
    _within_report(rows)
    print(f"# end: load {os.getloadavg()[0]:.2f}")


def _within_report(rows: list[dict]) -> None:
    pairs: dict[str, int] = {}
    ratios: dict[str, list[float]] = {"F": [], "S": []}
    for r in rows:
        # (probe, the launch's reading) both times: before / start, then after / end; the
        # key in time order (probe first before the launch, the reading first after it)
        for probe, own in ((r["before"], r["start"]), (r["after"], r["end"])):
            a, b = _state(probe), _state(own)
            key = a + b if probe is r["before"] else b + a
            pairs[key] = pairs.get(key, 0) + 1
            if a == b and a in ratios:
                ratios[a].append(own["median_ns"] / probe["median_ns"])
    print("states side by side (F fast, S slow, ? no reading), probe before / launch start "
          "and launch end / probe after: " + ", ".join(f"{k} {v}" for k, v in
                                                        sorted(pairs.items())))
    for st, v in ratios.items():
        if v:
            print(f"  {st}: launch reading / probe median {np.median(v):.2f} "
                  f"[{np.quantile(v, 0.1):.2f}, {np.quantile(v, 0.9):.2f}] over {len(v)} pairs")
    probe_ms = 1e3 * np.median([x for r in rows for x in r["probe_s"]])
    own_ms = np.median([x["elapsed_ms"] for r in rows for x in (r["start"], r["end"]) if x])
    on, off = (np.median([r[k] for r in rows]) for k in ("wall_s", "off_wall_s"))
    print(f"wall time per launch (medians over {len(rows)}): two probes {2 * probe_ms:.1f} ms "
          f"(spawn included); the launch's two readings {2 * own_ms:.1f} ms (their sampling); "
          f"launch with readings {on:.3f} s, without {off:.3f} s, ratio {on / off:.3f} "
          f"(difference {1e3 * (on - off):+.1f} ms)")


# -- stop 34: does a launch's steal time flag the stalls the core's preempted flag misses? --
# (--steal N) N core launches at TTD's options, Open MPI and MPICH alternating, under the
# MPI lock held for the whole run; /proc/stat's steal column (a vCPU the host did not run,
# in 10 ms ticks) read just before and after each. A stall: a cell whose median is 3x and
# 0.5 us above its variant's and size's median over the run, without the core's preempted
# flag (extra.preempted, stop 'preempted'): run-63's kind (512 B, 5 samples, 4.43 us).
STEAL_ARGS = [*WITHIN_ARGS[:-2], "--exclude-preempted", "--preempted-max-time", "0.05",
              "--quiet", "PingPong"]
STEAL_ENV = {"mpich": ["-genv", "MPIR_CVAR_NOLOCAL", "0", "-genv", "UCX_TLS", "self,sm"]}


def _steal_ticks() -> dict[str, int]:
    out = {}
    for ln in Path("/proc/stat").read_text().splitlines():
        p = ln.split()
        if p[0].startswith("cpu") and len(p) > 8:
            out[p[0]] = int(p[8])
    return out


def _steal_launch(exe: Path, stack: str, out: Path) -> dict:
    import os
    import subprocess

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [*WITHIN_STACKS[stack][1], *STEAL_ENV.get(stack, []), str(exe), *STEAL_ARGS,
           "--jsonl", str(out)]
    s0 = _steal_ticks()
    subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    s1 = _steal_ticks()
    recs = [json.loads(ln) for ln in out.read_text().splitlines()] if out.exists() else []
    head = next((r for r in recs if r.get("record") == "header"), {})
    return {"stack": stack, "steal": sum(s1[c] - s0[c] for c in s0 if c != "cpu"),
            "state": (head.get("machine_state") or {}).get("median_ns"),
            "rows": [r for r in recs if r.get("record") == "result" and r.get("median_us")]}


def _stalls(launches: list[dict]) -> list[int]:
    """Per launch, its unflagged stalled cells (see above)."""
    by: dict[tuple, list[float]] = {}
    for x in launches:
        for r in x["rows"]:
            by.setdefault((x["stack"], r["size"]), []).append(r["median_us"])
    mid = {k: float(np.median(v)) for k, v in by.items()}
    return [sum(r["median_us"] > 3 * (m := mid[(x["stack"], r["size"])]) and
                r["median_us"] - m > 0.5 and not (r.get("extra") or {}).get("preempted")
                and r.get("stop_reason") != "preempted" for r in x["rows"])
            for x in launches]


def steal(n: int) -> None:
    import fcntl
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gate-steal-") as td, open(LOCK, "a") as lock:
        exes = {}
        for stack, (mpicc, _) in WITHIN_STACKS.items():
            subprocess.run(["make", "-s", "-C", str(ROOT / "core"), f"MPICC={mpicc}",
                            f"BUILD={td}/{stack}"], check=True, timeout=600,
                           capture_output=True)
            exes[stack] = Path(td) / stack / "mpibench-core"
        fcntl.flock(lock, fcntl.LOCK_EX)
        print(f"# --steal {n}: core {' '.join(STEAL_ARGS)}; load {os.getloadavg()[0]:.2f}",
              flush=True)
        xs = [_steal_launch(exes[st], st, Path(td) / "o.jsonl")
              for st in (["openmpi", "mpich"] * n)[:n]]
    stalled = _stalls(xs)
    print(f"# end: load {os.getloadavg()[0]:.2f}")
    for st in (True, False):
        g = [x for x, k in zip(xs, stalled, strict=True) if bool(k) is st]
        ticks = sum(x["steal"] > 0 for x in g)
        states = [x["state"] for x in g if x["state"]]
        print(f"  launches {'with' if st else 'without'} an unflagged stall: {len(g):4d}; "
              f"steal > 0 in {ticks} ({100 * ticks / max(1, len(g)):.0f}%); own start "
              f"reading median {np.median(states) if states else float('nan'):.0f} ns, "
              f"above 200 ns in {sum(v > 200 for v in states)}")


def _store_launches(db: Path) -> dict[int, list[dict]]:
    """{campaign id: one machine_probe record per kept launch (run order)} of a store's
    gated campaigns (machine_probe = "gate"; "record" never sets aside)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    gated = {c for c, spec in con.execute("SELECT id, spec_json FROM campaigns")
             if json.loads(spec).get("machine_probe") == "gate"}
    rows = con.execute("SELECT r.campaign_id, r.id, r.variant, r.started, x.extra_json "
                       "FROM runs r JOIN results x ON x.run_id = r.id WHERE r.status = 'done' "
                       "AND x.extra_json LIKE '%machine_probe%' ORDER BY r.started, r.id")
    out: dict[int, dict[str, dict]] = {}
    for camp, run, variant, _, extra in rows:
        mp = json.loads(extra).get("machine_probe")
        if isinstance(mp, dict) and camp in gated:
            out.setdefault(camp, {}).setdefault(run, {**mp, "variant": variant})
    con.close()
    return {c: list(d.values()) for c, d in out.items()}


def _final_refs(recs: list[dict]) -> dict[str, Reference | None]:
    """The reference per reader compare judges these launches against (report/machine_state:
    every compared launch's readings)."""
    hist = [(v, reader_of(r.get("reading"))) for r in recs
            for v in (r.get("before_ns"), r.get("after_ns")) if isinstance(v, int | float)]
    return {who: reader_reference(hist, who) for who in ("launch", "probe")}


def _store_row(recs: list[dict]) -> dict[str, float]:
    """One gated campaign's counts: kept launches, set-aside attempts and their seconds,
    launches off at compare's reference by why (retry cap: off when kept, retries spent;
    reference moved: in the reference of its own time, off the final one), immediate
    retries (no wait before them) and retries that found the same state again."""
    refs = _final_refs(recs)
    c = dict.fromkeys(("kept", "aside", "aside_s", "kept_s", "wait_s", "off_final", "cap",
                       "moved", "unjudged", "retries", "at_once", "again", "paused", "unseen",
                       "unseen_again"), 0.0)
    for r in recs:
        final = judge_stored(r.get("before_ns"), r.get("after_ns"),
                             refs[reader_of(r.get("reading"))])
        aside = r.get("set_aside") or []
        c["kept"] += 1
        c["kept_s"] += r.get("elapsed_s") or 0.0
        c["aside"] += len(aside)
        c["aside_s"] += sum(a.get("elapsed_s") or 0.0 for a in aside)
        c["wait_s"] += sum(a.get("waited_s") or 0.0 for a in [*aside, r])
        c["paused"] += sum(bool(a.get("paused_s")) for a in [*aside, r])
        if final is State.OFF:
            c["off_final"] += 1
            c["cap" if r.get("state") == "off" else "moved" if r.get("state") == "reference"
              else "unjudged"] += 1
        attempts = [*aside, r]
        for prev, nxt in zip(attempts, attempts[1:], strict=False):
            c["retries"] += 1
            c["at_once"] += (nxt.get("waits") or 0) == 0
            again = judge_stored(nxt.get("before_ns"), nxt.get("after_ns"),
                                 refs[reader_of(nxt.get("reading"))]) is State.OFF
            c["again"] += again
            # set aside for a state the wait's probe program accepts (review R12)
            if reader_of(prev.get("reading")) == "launch" and judge_stored(
                    prev.get("before_ns"), prev.get("after_ns"), refs["probe"]) is not State.OFF:
                c["unseen"] += 1
                c["unseen_again"] += again
    c["ref_lo"] = min((r["reference_ns"] for r in recs if r.get("reference_ns")), default=0)
    c["ref_hi"] = max((r["reference_ns"] for r in recs if r.get("reference_ns")), default=0)
    c["final"] = refs["launch"] or refs["probe"] or 0.0
    return c


PAUSES_S = (0.5, 2.0, 5.0, 10.0, 20.0)


def _dwell_file(path: Path) -> dict[float, list[int]]:
    """{pause: [misses, back in the state]} of one history: after each of the core's own
    readings off its finer reference but inside the probe program's (a miss the wait cannot
    see, judged at the history's final references), is the core's first own reading at least
    `pause` seconds later in the reference state?"""
    recs = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    recs = [r for r in recs if r.get("samples", 0) >= MIN_SAMPLES and "time" in r]
    hist = [(r["median_ns"], reader_of(r.get("source"))) for r in recs]
    ref, pref = reader_reference(hist, "launch"), reader_reference(hist, "probe")
    own = sorted((r["time"], r["median_ns"]) for r in recs if r.get("source") == "launch")
    times = [t for t, _ in own]
    out = {p: [0, 0] for p in PAUSES_S}
    if ref is None or pref is None:
        return out
    for t, ns in own:
        if ref.holds(ns) or not pref.holds(ns):
            continue
        for p in PAUSES_S:
            k = bisect.bisect_left(times, t + p)
            if k < len(own):
                out[p][0] += 1
                out[p][1] += ref.holds(own[k][1])
    return out


def dwell(dirs: list[Path]) -> None:
    """--stores: how long the core's finer off-state lasts, per history with misses."""
    # a demo's --out holds runs/<stamp>/cI/ since stop 40 (runs/cI/ before)
    files = sorted({f for d in dirs for f in [*d.glob("machine-probe.jsonl"),
                                              *d.glob("*/machine-probe.jsonl"),
                                              *d.glob("runs/*/machine-probe.jsonl"),
                                              *d.glob("runs/*/*/machine-probe.jsonl")]})
    print("after a miss the wait cannot see (a core reading off its finer reference, inside "
          "the probe program's): the core's next own reading at least P s later back in the "
          "reference state")
    if not files:
        print("  no machine-probe.jsonl found under " + ", ".join(map(str, dirs)))
    seen: set[int] = set()
    for f in files:
        if hash(f.read_bytes()) in seen:      # TTD's tools share one history
            continue
        seen.add(hash(f.read_bytes()))
        got = _dwell_file(f)
        if got[PAUSES_S[0]][0] >= 10:
            print(f"  {str(f)[-50:]:>50}: " + ", ".join(
                f"{p:g} s {100 * ok / n:.0f}% of {n}" for p, (n, ok) in got.items() if n))


def _seen_by_the_readings(db: Path) -> None:
    """Per gated campaign and small cell (<= 1 KiB): among the launches kept in the
    reference state (compare's final one), does the launch's own reading (mean of start and end) follow its
    median? Spearman's rho, and the medians' p90/p10 against the readings'."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    gated = [c for c, spec in con.execute("SELECT id, spec_json FROM campaigns")
             if json.loads(spec).get("machine_probe") == "gate"]
    for camp in gated:
        cells: dict[tuple[str, int], list[tuple[float, float]]] = {}
        rows = [(bench, size, med, json.loads(extra).get("machine_probe") or {})
                for bench, size, med, extra in con.execute(
                    "SELECT x.benchmark, x.size, x.median, x.extra_json FROM runs r JOIN "
                    "results x ON x.run_id = r.id WHERE r.status = 'done' AND r.campaign_id = "
                    "? AND x.size <= 1024 AND x.median > 0", (camp,))]
        refs = _final_refs([mp for *_, mp in rows])
        for bench, size, med, mp in rows:
            b, a = mp.get("before_ns"), mp.get("after_ns")
            if judge_stored(b, a, refs[reader_of(mp.get("reading"))]) is State.REFERENCE:
                cells.setdefault((bench, size), []).append((med, (b + a) / 2))
        for (bench, size), got in sorted(cells.items()):
            if len(got) >= 10:
                med, ns = np.array(got).T
                rho = _sps().spearmanr(med, ns).statistic
                print(f"  {str(db.parent)[-20:]:>20} c{camp} {bench:>10} {size:>5} B: "
                      f"{len(got):2d} launches, rho {rho:+.2f}; medians p90/p10 "
                      f"{np.percentile(med, 90) / np.percentile(med, 10):.2f}, readings "
                      f"{np.percentile(ns, 90) / np.percentile(ns, 10):.2f}")
    con.close()


def stores(dirs: list[Path]) -> int:
    """--stores: every gated campaign in the stores under dirs (a demo's --out, a TTD
    --keep directory), one line each, and the totals."""
    dbs = sorted({db for d in dirs for db in [*d.glob("mpibench.db"), *d.glob("*/mpibench.db")]})
    print("gated campaigns: kept launches, off compare's final reference (why: retry cap = "
          "kept off after its retries; moved = in the reference of its time, off the final; "
          "unjudged = no reference or reading then), attempts set aside and their launch "
          "seconds against the kept launches', the gate's waits, retries started with no wait "
          "and retries off the final reference again; the run-time reference's range")
    total: dict[str, float] = {}
    for db in dbs:
        for camp, recs in _store_launches(db).items():
            c = _store_row(recs)
            for k, v in c.items():
                total[k] = total.get(k, 0.0) + v
            print(f"  {str(db.parent)[-34:]:>34} c{camp}: {c['kept']:3.0f} kept, "
                  f"{c['off_final']:2.0f} off (cap {c['cap']:.0f}, moved {c['moved']:.0f}, "
                  f"unjudged {c['unjudged']:.0f}); {c['aside']:2.0f} set aside "
                  f"{c['aside_s']:5.1f} s vs {c['kept_s']:5.1f} s kept, waits "
                  f"{c['wait_s']:4.1f} s; retries {c['retries']:2.0f}, at once "
                  f"{c['at_once']:2.0f}, paused {c['paused']:.0f}, off again {c['again']:2.0f}; reference "
                  f"{c['ref_lo']:.0f}-{c['ref_hi']:.0f} ns, final {c['final']:.0f}")
    if not total:
        return 1
    dwell(dirs)
    print("within the reference state: does a launch's own reading follow its small-size "
          "median (a sub-state the probe would see)?")
    for db in dbs:
        _seen_by_the_readings(db)
    print(f"  total: {total['kept']:.0f} kept, {total['off_final']:.0f} off the final "
          f"reference (retry cap {total['cap']:.0f}, reference moved {total['moved']:.0f}, "
          f"unjudged {total['unjudged']:.0f}); {total['aside']:.0f} attempts set aside, "
          f"{total['aside_s']:.1f} s of launches ({100 * total['aside_s'] / max(total['kept_s'], 1e-9):.0f}% "
          f"of the kept launches' {total['kept_s']:.1f} s), waits {total['wait_s']:.1f} s; "
          f"{total['retries']:.0f} retries, {total['at_once']:.0f} with no wait, "
          f"{total['paused']:.0f} after a pause, {total['unseen']:.0f} after a miss the wait "
          f"cannot see (the core's finer state; {total['unseen_again']:.0f} off again), "
          f"{total['again']:.0f} off again")
    return 0


# -- stop 36: why each set-aside attempt was set aside, on kept TTD runs --------------------
# Each set-aside attempt of a kept launch, classified against the reference and bounds its
# kept launch stored (reference_ns: the coarse centre; reference_lo_ns/hi_ns: the bounds):
# off the coarse state (GATE_FACTOR) at its start reading / only at its end; off the finer
# bounds only, at its start / only at its end; in the run's final reference (the gate's rule
# for the store's reader: a reference that later moved). Then what a probe before the launch
# read (its run directory's machine-probe.txt, first line) and what came of the attempt; the
# core's own end reading of one launch against the next launch's start reading; and the
# kept core launches' 0 B medians by their readings' band, with n.

_CAUSES = ("coarse start", "coarse end only", "finer start", "finer end only", "neither")


def _cause(a: dict, p: dict) -> str | None:
    c, lo, hi = p.get("reference_ns"), p.get("reference_lo_ns"), p.get("reference_hi_ns")
    b, e = a.get("before_ns"), a.get("after_ns")
    if not c:
        return None
    # no finer bounds stored: the finer band is the coarse one (stats.probe.near)
    lo, hi = lo or c / GATE_FACTOR, hi or c * GATE_FACTOR
    for kind, ok in (("coarse", lambda v: near(v, c)), ("finer", lambda v: lo <= v <= hi)):
        if b and not ok(b):
            return f"{kind} start"
        if e and not ok(e):
            return f"{kind} end only"
    return "neither"


def _first_probe(d: Path) -> float | None:
    """The valid median of a run directory's first machine-probe.txt line when the probe
    program took it before the launch (its "probe": "cacheline"; a core launch's own
    reading, "cacheline-ranks", is first where no probe ran before it: stops 33-35), or
    None."""
    try:
        r = json.loads((d / "machine-probe.txt").read_text().splitlines()[0])
        return float(r["median_ns"]) if r.get("samples", 0) >= MIN_SAMPLES \
            and r.get("probe") == "cacheline" else None
    except (OSError, ValueError, IndexError, KeyError, TypeError):
        return None


def _causes_of(db: Path, upto: int | None = None) -> dict[str, float]:
    """_cause's counts over a store's kept launches (of rounds 1..upto only, when given:
    runs.repeat below it) and their set-aside attempts, with what the probe before each
    attempt read ("pre off" / "pre in")."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT r.id, r.run_dir, x.extra_json FROM runs r JOIN results x ON "
                       "x.run_id = r.id WHERE r.status = 'done' AND x.extra_json LIKE "
                       "'%machine_probe%' AND r.repeat < ? GROUP BY r.id",
                       (upto if upto is not None else 2 ** 31,)).fetchall()
    con.close()
    probes = {rid: (Path(rd or ""), json.loads(x)["machine_probe"]) for rid, rd, x in rows}
    hist = [(v, reader_of(a.get("reading"))) for _, p in probes.values()
            for a in [p, *(p.get("set_aside") or [])] for v in (a.get("before_ns"),
                                                                   a.get("after_ns")) if v]
    own = sum(reader_of(p.get("reading")) == "launch" for _, p in probes.values())
    final = reader_reference(hist, "launch" if 2 * own > len(probes) else "probe")
    out: dict[str, float] = {"kept": len(probes)}
    for rd, p in probes.values():
        atts = p.get("set_aside") or []
        dirs = [rd.with_name(f"{rd.name}.set-aside-{k + 1}") for k in range(len(atts))]
        for k, (a, d) in enumerate(zip([*atts, p], [*dirs, rd], strict=True)):
            pre, ref = _first_probe(d), p.get("reference_ns")
            if pre is not None and ref and not near(pre, ref):
                how = "aside" if k < len(atts) else ("kept off" if p.get("state") == "off"
                                                     else "kept in")
                out[f"pre off: {how}"] = out.get(f"pre off: {how}", 0) + 1
            elif pre is not None and ref:
                out["pre in"] = out.get("pre in", 0) + 1
                out["pre in aside"] = out.get("pre in aside", 0) + (k < len(atts))
            if k == len(atts):
                continue
            why = _cause(a, p) or "unjudged"
            out[why] = out.get(why, 0) + 1
            out[why + " s"] = out.get(why + " s", 0.0) + (a.get("elapsed_s") or 0.0)
            out["aside"] = out.get("aside", 0) + 1
            if final is not None and judge_stored(a.get("before_ns"), a.get("after_ns"),
                                                  final) is State.REFERENCE:
                out["moved"] = out.get("moved", 0) + 1
    return out


def _next_start(jsonl: Path) -> tuple[int, int]:
    """Of the core's consecutive launches (one's end reading, the next one's start, in the
    history file's order) whose end was in the coarse reference of the history so far: how
    many, and how many started off it."""
    try:
        recs = [json.loads(ln) for ln in jsonl.read_text().splitlines() if ln.strip()]
    except (OSError, ValueError):
        return 0, 0
    recs = [r for r in recs if r.get("source") == "launch" and r.get("samples", 0) >= MIN_SAMPLES]
    n = off = 0
    for k, (a, b) in enumerate(zip(recs, recs[1:], strict=False)):
        if a["when"] != "after" or b["when"] != "before" or a["run"] == b["run"]:
            continue
        ref = coarse([r["median_ns"] for r in recs[:k + 1]])
        if ref and near(a["median_ns"], ref):
            n += 1
            off += not near(b["median_ns"], ref)
    return n, off


def _bands(db: Path) -> dict[tuple[str, str], list[float]]:
    """The kept core launches' 0 B PingPong medians by variant and the band of the mean of
    their two own readings (below 80 ns, 80-150, 150-400, 400 and more)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT r.variant, x.median, json_extract(x.extra_json, "
                       "'$.machine_probe.before_ns'), json_extract(x.extra_json, "
                       "'$.machine_probe.after_ns'), json_extract(x.extra_json, "
                       "'$.machine_probe.reading') FROM results x JOIN runs r ON r.id = "
                       "x.run_id WHERE r.status = 'done' AND x.size = 0").fetchall()
    con.close()
    out: dict[tuple[str, str], list[float]] = {}
    for v, m, b, a, reading in rows:
        if reading != "launch" or not (m and b and a):
            continue
        r = (b + a) / 2
        band = "<80" if r < 80 else "80-150" if r < 150 else "150-400" if r < 400 else ">=400"
        out.setdefault((v, band), []).append(m)
    return out


def set_aside_causes(dirs: list[Path], upto: int | None = None) -> int:
    """--set-aside-causes: per kept TTD run and tool, why its attempts were set aside
    (upto: the launches of rounds 1..upto only)."""
    if upto is not None:
        print(f"rounds 1-{upto} only (--upto-round; the consecutive-launch and 0 B lines "
              "below still read the whole run)")
    print("set-aside attempts by cause (against the kept launch's stored reference and "
          "bounds): count / launch seconds; 'moved' = in the run's final reference (the "
          "gate's rule for the store's reader); 'pre off' / 'pre in' = attempts whose probe "
          "before the launch read off / in the coarse state, and what came of them")
    seen = 0
    for d in dirs:
        for tool in ("core", "imb"):
            db = d / tool / "mpibench.db"
            if not db.exists():
                continue
            c = _causes_of(db, upto)
            seen += 1
            causes = ", ".join(f"{k} {c.get(k, 0):.0f}/{c.get(k + ' s', 0):.1f} s"
                               for k in _CAUSES if c.get(k))
            pre = ", ".join(f"{k[9:]} {v:.0f}" for k, v in sorted(c.items())
                            if k.startswith("pre off: "))
            print(f"  {d.name} {tool}: {c['kept']:.0f} kept, {c.get('aside', 0):.0f} set aside"
                  f"{': ' + causes if causes else ''}; moved {c.get('moved', 0):.0f}"
                  f"{'; pre off: ' + pre if pre else ''}"
                  + (f"; pre in: {c['pre in']:.0f}, {c['pre in aside']:.0f} of them set aside"
                     if c.get("pre in") else ""))
            if tool == "core":
                n, off = _next_start(d / tool / "machine-probe.jsonl")
                print(f"    consecutive core launches, end reading in the coarse reference: "
                      f"next start off it in {off} of {n}")
                for (v, band), ms in sorted(_bands(db).items()):
                    print(f"    0 B median {v:8} readings {band:>7} ns: "
                          f"{float(np.median(ms)):.3f} us (n {len(ms)})")
    return 0 if seen else 1


# -- --round-rule: leaving out a round with a launch kept off, when a variant moves the state --
# A/A in each state (both variants ln 4 slower in S than in F, the reference), but B's own
# launch finds the machine in S with probability m (B moves the state; its own start/end
# readings see it, and half the time it leaves the machine there). The machine otherwise a
# Markov chain over attempts (stay RR_STAY, stationary share of S `ps`). The gate as built:
# before an attempt wait (at most RR_WAIT steps) for F; an attempt read off is set aside and
# run again, at most RETRIES times, then kept off. Round: A then B, shared round effect sd
# 0.05, launch noise sd 0.05. Rules: "all" keeps every round (today); "drop" leaves out the
# rounds with a kept-off launch; "guarded" drops them only while stats.probe.kept_off finds
# the variants' off attempts balanced. Truth in the reference state: no difference; as used
# (B's state included): B slower by about m ln 4.
RR_STAY, RR_WAIT, RR_ROUNDS = 0.9, 6, 200


def _rr_attempt(rng, s: bool, ps: float, v: int, m: float) -> tuple[bool, bool]:
    """One attempt after the wait: (the machine's state after it, the launch's own)."""
    to_s, to_f = (1 - RR_STAY) * ps / (1 - ps), 1 - RR_STAY
    for _ in range(RR_WAIT):
        if not s:
            break
        s = rng.random() >= to_f
    s = (rng.random() >= to_f) if s else (rng.random() < to_s)
    own = s or (v == 1 and rng.random() < m)
    if own and not s and rng.random() < 0.5:
        s = True
    return s, own


def _rr_run(rng, m: float, ps: float, rounds: int = RR_ROUNDS):
    """One run: the rounds' d = log B - log A, and kept_off's (round, variant, record)."""
    s, d, launches = bool(rng.random() < ps), [], []
    for k in range(rounds):
        shared, vals = rng.normal(0, 0.05), []
        for v in (0, 1):
            for attempt in range(RETRIES + 1):
                s, own = _rr_attempt(rng, s, ps, v, m)
                if not own or attempt == RETRIES:
                    break
            vals.append(math.log(4) * own + shared + rng.normal(0, 0.05))
            ns = 430.0 if own else 100.0      # its own readings: the ~4x apart states
            launches.append((k, "AB"[v], {"state": "off" if own else "reference",
                                          "before_ns": ns, "after_ns": ns,
                                          "set_aside": [{}] * attempt}))
        d.append(vals[1] - vals[0])
    return np.array(d), launches


def _rr_verdict(d: np.ndarray) -> tuple[str, float]:
    """Paired t at 5% (significant), else paired TOST within ±5% at 5% (equivalent)."""
    n = len(d)
    mu, se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n)
    if abs(mu) > _sps().t.ppf(0.975, n - 1) * se:
        return "sig", mu
    t1 = _sps().t.ppf(0.95, n - 1) * se
    return ("eq" if -MARGIN < mu - t1 and mu + t1 < MARGIN else "und"), mu


def _rr_minority(ko, launches) -> frozenset:
    """KeptOff.left_out's rounds whose kept-off launches all belong to a variant with no
    more off attempts than the other's: a variant set aside more never has its own
    kept-off rounds left out (a guard that needs no power: R3)."""
    off_in: dict = {}
    for k, v, rec in launches:
        if rec.get("state") == "off":
            off_in.setdefault(k, set()).add(v)
    most = max(ko.off.values(), default=0)
    return frozenset(k for k in ko.left_out
                     if all(ko.off[v] < most or len(set(ko.off.values())) == 1
                            for v in off_in.get(k, ())))


def _rr_guards(ko, launches) -> dict[str, frozenset]:
    """The rounds each rule leaves out: none (all, today); every kept-off round (drop);
    the mixed ones while balanced (guarded: stats.probe.KeptOff.left_out); the same only
    when each variant has at least 1 / 2 off attempts of its own (both1, both2: a guard
    that needs no power, the lead's R3 proposal)."""
    least = min(ko.off.values(), default=0) if len(ko.off) > 1 else 0
    return {"all": frozenset(), "drop": ko.rounds, "guarded": ko.left_out,
            "both1": ko.left_out if least >= 1 else frozenset(),
            "both2": ko.left_out if least >= 2 else frozenset(),
            "minority": _rr_minority(ko, launches)}


def round_rule_sim(reps: int, seed: int, rounds: int = RR_ROUNDS) -> None:
    from mpibench.stats.probe import kept_off

    rng = np.random.default_rng(seed)
    print(f"--round-rule: {reps} runs of {rounds} rounds a row (A then B; the gate's "
          f"retries {RETRIES}); B's own launch in the slow state with probability m; "
          "identical variants in each state (ln 4 slower in it); rules: _rr_guards")
    print(f"  {'m':>5} {'P(S)':>5} {'rule':8} {'mean d':>8} {'gain':>6} {'rounds':>7} "
          f"{'sig %':>6} {'eq %':>6}")
    for ps in (0.2, 0.5):
        for m in (0.0, 0.05, 0.2, 0.5):
            got: dict[str, list] = {}
            used: dict[str, int] = {}
            for _ in range(reps):
                d, launches = _rr_run(rng, m, ps, rounds)
                for rule, out in _rr_guards(kept_off(launches), launches).items():
                    x = d[np.array([k not in out for k in range(rounds)])]
                    got.setdefault(rule, []).append(_rr_verdict(x) if len(x) > 2
                                                    else ("und", 0.0))
                    used[rule] = used.get(rule, 0) + len(x)
            for rule, v in got.items():
                mu = float(np.mean([x[1] for x in v]))
                st = [x[0] for x in v]
                print(f"  {m:5.2f} {ps:5.2f} {rule:8} {mu:+8.4f} {math.exp(mu):6.3f} "
                      f"{used[rule] / reps:7.1f} {100 * st.count('sig') / reps:6.1f} "
                      f"{100 * st.count('eq') / reps:6.1f}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 comparisons per row")
    ap.add_argument("--reps", type=int, default=2000, help="comparisons per row (2000)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--ttd", nargs="+", type=Path, metavar="DIR",
                    help="only the wall-time analysis and policy replay of these kept "
                    "bench_time_to_decision.py runs (gate on), e.g. /tmp/ttd-data/run-3[2-7]")
    ap.add_argument("--pairs", type=int, metavar="N",
                    help="only N back-to-back pairs of real probes at --ms 3 and 1")
    ap.add_argument("--within", type=int, metavar="N",
                    help="only N rounds of real core launches reading their own state "
                    "beside the probe program (each launch under the MPI lock)")
    ap.add_argument("--steal", type=int, metavar="N",
                    help="only N real core launches (both stacks alternating, under the MPI "
                    "lock): does /proc/stat's steal time flag the unflagged stalled cells?")
    ap.add_argument("--stores", nargs="+", type=Path, metavar="DIR",
                    help="only the gated campaigns stored under these directories (a demo's "
                    "--out, a TTD --keep directory; DIR/mpibench.db, DIR/*/mpibench.db): "
                    "launches off compare's reference and why, what the retries cost")
    ap.add_argument("--finer", action="store_true",
                    help="only the simulation of the core's finer state the probe program "
                    "cannot see: A/A false positives, launches kept in it, attempts and "
                    "seconds per launch, ungated / the gate retrying at once / with its "
                    "pause (campaign.machine_probe.PAUSE_S), --reps comparisons per row")
    ap.add_argument("--set-aside-causes", nargs="+", type=Path, metavar="DIR",
                    help="only why the gate set each attempt aside in these kept "
                    "bench_time_to_decision.py runs (--keep DIR): off the coarse or the "
                    "finer state, at the start or the end, in the final reference; what a "
                    "probe before the launch read; 0 B medians by reading band, with n")
    ap.add_argument("--upto-round", type=int, metavar="N",
                    help="with --set-aside-causes: the launches of rounds 1..N only (a TTD "
                         "run's interleaved rounds: 10 at its defaults)")
    ap.add_argument("--round-rule", action="store_true",
                    help="only the simulation of leaving out a round with a launch kept "
                    "off the reference state (and the balance guard, stats.probe.kept_off) "
                    "when a variant moves the machine state itself: mean difference, "
                    "significant and equivalent shares, --reps runs per row")
    ap.add_argument("--rr-rounds", type=int, default=RR_ROUNDS, metavar="N",
                    help=f"rounds per run of --round-rule ({RR_ROUNDS}; the rule acts at "
                    "the looks of 10-30 rounds too)")
    ap.add_argument("--stack", default="openmpi", choices=sorted(WITHIN_STACKS),
                    help="the stack of --within (openmpi)")
    args = ap.parse_args(argv)
    if args.pairs:
        probe_pairs(args.pairs)
        return 0
    if args.within:
        within(args.within, args.stack)
        return 0
    if args.steal:
        steal(args.steal)
        return 0
    if args.finer:
        finer_sim(50 if args.quick else args.reps, args.seed)
        return 0
    if args.round_rule:
        round_rule_sim(50 if args.quick else args.reps, args.seed, args.rr_rounds)
        return 0
    if args.upto_round is not None and (args.upto_round < 1 or not args.set_aside_causes):
        ap.exit(2, f"{ap.prog}: error: --upto-round {args.upto_round}: expected a round 1 or "
                "more, with --set-aside-causes\n")
    if args.set_aside_causes:
        if set_aside_causes(args.set_aside_causes, args.upto_round):
            ap.exit(2, f"{ap.prog}: error: --set-aside-causes: no DIR/core/mpibench.db or "
                    "DIR/imb/mpibench.db under the given directories\n")
        return 0
    if args.stores:
        if stores(args.stores):
            ap.exit(2, f"{ap.prog}: error: --stores: no gated launch (a result's "
                    'extra "machine_probe") in a mpibench.db under the given directories\n')
        return 0
    if args.ttd:
        rows = ttd_attempts(args.ttd)
        if not rows:
            ap.exit(2, f"{ap.prog}: error: --ttd: no gated attempt (<tool>/runs/*/"
                    "machine-probe.txt) under the given directories\n")
        where_the_time_goes(rows)
        launch_modes(rows)
        policy_replay(rows)
        finer_states(rows)
        return 0
    if args.reps < 10:
        ap.exit(2, f"{ap.prog}: error: --reps {args.reps}: expected 10 or more\n")
    replay()
    simulation(200 if args.quick else args.reps, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
