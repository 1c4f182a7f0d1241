#!/usr/bin/env python3
"""The machine-state gate (campaign/machine_probe.py): a replay on real launches and an A/A
simulation. Prints numbers, asserts nothing.

    .venv/bin/python bench/bench_probe_gate.py [--quick] [--reps N] [--seed S]

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
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.campaign.machine_probe import RETRIES  # noqa: E402
from mpibench.stats.probe import (  # noqa: E402
    MIN_SAMPLES,
    ProbeReading,
    State,
    judge_launch,
    near,
    reference,
)

DATA = ROOT / "tests" / "data" / "probe" / "phase1-loaded.jsonl"
MARGIN = math.log(1.05)
DESCHEDULED_US = 5.0


def _reading(pair) -> ProbeReading:
    return ProbeReading(pair[0], pair[0], pair[0], pair[1], (0, 1))


def rounds_needed(sd: float) -> float:
    """Rounds per side for a paired TOST within ±5% at alpha 0.05, 80% power at gain 1."""
    z = sps.norm.ppf(0.95) + sps.norm.ppf(0.9)
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


WAIT_STEPS = 10   # the gate's wait before an attempt (20 s), in machine steps of ~2 s


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
        fp += abs(t) > sps.t.ppf(0.975, rounds - 1)
        q = sps.t.ppf(0.95, rounds - 1)
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


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 comparisons per row")
    ap.add_argument("--reps", type=int, default=2000, help="comparisons per row (2000)")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args(argv)
    if args.reps < 10:
        ap.exit(2, f"{ap.prog}: error: --reps {args.reps}: expected 10 or more\n")
    replay()
    simulation(200 if args.quick else args.reps, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
