#!/usr/bin/env python3
"""Should `repeats = "auto"` plan its stage-two total on the round-paired test? Simulated.

    .venv/bin/python bench/bench_auto_paired.py [--quick] [--reps N] [--seed S]

In an interleaved campaign the report tests each cell paired by round (stats.launch
.pair_rounds, paired_test), while the two-stage rule (campaign/auto_repeats.py
stage_two_total) fixes the total from the stage-1 launches' UNPAIRED spread. This bench
runs A/A comparisons (20 cells of one benchmark, a launch effect shared by the cells, sd
sigma_L, plus 0.5 x sigma_L per cell; rule min 3, max 10, target ±5%) whose final test is
the paired one, as the report's, under round effects both launches of a round share
(stats.simulate.round_offsets: none, two-mode x3 with both in the same mode in 5 of 6
rounds, normal sd 0.3), with the stage-two total planned

  unpaired   today's rule (stage_two_total on the launches without round keys)
  paired     the same rule (the CI half-width scaled by sqrt(n1 / n), the stage-1
             critical value kept) on the paired test's CI (compare_cells with rounds)
  paired-ub  as paired, the stage-1 half-width at the spread's one-sided 80% upper bound
             (x sqrt(df / chi2_0.2(df)), df = pairs - 1)
  paired+1   as paired, but at least min + 1 rounds (never stops at the minimum)

and, for reference, a random-order campaign (unpaired plan, unpaired test). Per row: cells
with p <= 0.05, gain-CI coverage, the share of comparisons that stopped at the smallest
total the plan allows and the coverage there, launches per side (mean).

Targets (issue 21): false positives <= alpha + 1 point, coverage >= 93%, also where it
stopped at the minimum. Cells of one comparison share its launches, so a rate's noise is
that of `reps` comparisons (about ±1.5 points at 400), not of reps x 20 cells.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mpibench.campaign.auto_repeats import AutoRepeats, stage_two_total  # noqa: E402
from mpibench.stats import launch as L  # noqa: E402
from mpibench.stats.budget import upper_factor  # noqa: E402
from mpibench.stats.simulate import round_offsets  # noqa: E402

CELLS, SIZE_PART = 20, 0.5
RULE = AutoRepeats(3, 10, 0.05)
ROUNDS = {"no round effect": ("none", 0.0), "two-mode x3, same mode 5/6": ("two-mode", 0.0),
          "round effect normal sd 0.3": ("normal", 0.3)}
PLANS = ("unpaired", "paired", "paired-ub", "paired+1", "random order")


def paired_total(cells: list, rounds: dict, rule: AutoRepeats, upper: bool) -> int:
    """stage_two_total's scaling on the paired test's CI (what the report would test)."""
    goal = math.log1p(rule.target)
    need = rule.min
    for t in L.compare_cells(cells, rounds=rounds):
        if not t.tested or t.ci_low is None:
            return rule.max
        n1 = t.pairs if t.pairing == "round" else min(t.n_base, t.n_cand)
        h1 = 0.5 * (math.log(t.ci_high) - math.log(t.ci_low))
        if upper:        # the budget's bound (stats.budget.upper_factor, 80%)
            h1 *= math.sqrt(upper_factor(n1 - 1))
        if h1 > goal:
            need = max(need, math.ceil(n1 * (h1 / goal) ** 2))
    return max(rule.min, min(rule.max, need))


def one(rng: np.random.Generator, plan: str, sigma: float, model: str, sd: float) -> tuple:
    """One comparison: (cells with p <= 0.05, cells covered, launches per side, smallest)."""
    r = RULE
    offs = np.array([round_offsets(rng, model, sd) for _ in range(r.max)])

    def side(off: np.ndarray) -> np.ndarray:
        return np.exp(rng.normal(0, sigma, (r.max, 1)) + off[:, None]
                      + rng.normal(0, sigma * SIZE_PART, (r.max, CELLS)))
    a, b = side(offs[:, 0]), side(offs[:, 1])
    ids = {s: [(s, i) for i in range(r.max)] for s in "ab"}
    rounds = {k: k[1] for ks in ids.values() for k in ks}

    def cells(m: int) -> list:
        return [(dict(zip(ids["a"][:m], a[:m, k].tolist(), strict=True)),
                 dict(zip(ids["b"][:m], b[:m, k].tolist(), strict=True)), "lower")
                for k in range(CELLS)]
    if plan in ("unpaired", "random order"):
        n = stage_two_total({"a": {("x", k): list(a[:r.min, k]) for k in range(CELLS)},
                             "b": {("x", k): list(b[:r.min, k]) for k in range(CELLS)}}, r)
    else:
        n = paired_total(cells(r.min), rounds, r, plan == "paired-ub")
    smallest = r.min + 1 if plan == "paired+1" else r.min
    n = max(n, smallest)
    ts = L.compare_cells(cells(n), rounds=None if plan == "random order" else rounds)
    return (sum(t.p <= 0.05 for t in ts), sum(t.ci_low <= 1.0 <= t.ci_high for t in ts), n,
            n == smallest)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="60 comparisons per row")
    ap.add_argument("--reps", type=int, default=400, help="comparisons per row")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sigmas", default="0.01,0.02,0.03,0.05", help="sigma_L values")
    args = ap.parse_args(argv)
    reps = 60 if args.quick else args.reps
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()
    print(f"A/A, {CELLS} cells, rule ({RULE.min}, {RULE.max}, ±{100 * RULE.target:g}%), "
          f"{reps} comparisons per row; final test paired by round unless 'random order'")
    print(f"{'round effect':<27} {'sigma_L':>7} {'plan':<12} {'p<=0.05':>7} {'cover':>6} "
          f"{'smallest':>8} {'cover there':>11} {'launches':>8}")
    for label, (model, sd) in ROUNDS.items():
        for sigma in (float(s) for s in args.sigmas.split(",")):
            for plan in PLANS:
                if plan == "random order" and model != "none":
                    continue
                res = [one(rng, plan, sigma, model, sd) for _ in range(reps)]
                fp = sum(x[0] for x in res) / (reps * CELLS)
                cov = sum(x[1] for x in res) / (reps * CELLS)
                at = [x[1] / CELLS for x in res if x[3]]
                there = f"{100 * np.mean(at):.1f}%" if at else "-"
                print(f"{label:<27} {sigma:>7g} {plan:<12} {100 * fp:>6.2f}% {100 * cov:>5.1f}% "
                      f"{100 * len(at) / reps:>7.0f}% {there:>11} "
                      f"{np.mean([x[2] for x in res]):>8.2f}", flush=True)
    print("targets: p <= 0.05 in <= 6% of cells, coverage >= 93%, also at the smallest total")
    print(f"\n{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
