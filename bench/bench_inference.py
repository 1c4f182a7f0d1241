#!/usr/bin/env python3
"""Is the comparison honest? Simulated launches through the real Store -> compare path.

    .venv/bin/python bench/bench_inference.py [--quick] [--reps N] [--seed S]

For identical variants (sigma_L 0.1 and 0.3; 3, 5 and 10 launches per side; 20 sizes;
within-launch noise 0.02, 100-500 samples per launch) it prints, per configuration and
overall: the per-cell rate of Holm-significant cells, the family-wise rate (comparisons with
any significant cell), the rate of "better"/"worse" verdicts, and how often the gain's 95% CI
covers the true gain 1.0; beside them the pooled Mann-Whitney test main used to run on the
same cells. Then power: a real 10% difference at sigma_L 0.05 with 5, 6 and 10 launches per
side, and the sequential `repeats = "auto"` rule under A/A and with a real difference.

Targets (issue 16): cell rate <= alpha + 1 point, family-wise <= alpha, verdict <= 5%,
coverage 93-97%, power >= 80%. The model is stats.simulate's (launch offsets shared by all
sizes of a launch plus a size-specific part of half that sigma).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mpibench import stats  # noqa: E402
from mpibench.report.compare import compare_groups  # noqa: E402
from mpibench.stats import simulate as S  # noqa: E402


def pooled_rate(cmps) -> float:
    """The old model: MWU on samples pooled across launches, Holm over the table."""
    sig = n = 0
    for cmp in cmps:
        ps = [stats.mann_whitney(r.cells["a"].samples, r.cells["b"].samples) for r in cmp.rows]
        adj = stats.holm(ps)
        sig += int((adj <= 0.05).sum())
        n += len(ps)
    return sig / max(1, n)


def row(name: str, t: dict, extra: str = "") -> str:
    return (f"{name:<28} {t['comparisons']:>5} {t['cells']:>6} {100 * t['cell_raw']:>7.2f}% "
            f"{100 * t['cell_rate']:>7.2f}% "
            f"{100 * t['familywise']:>7.2f}% {100 * t['verdict']:>7.2f}% "
            f"{100 * t['coverage']:>7.2f}%  {extra}")


def power(db, rng, reps: int, part: float) -> None:
    print(f"Power: true gain 1.10, sigma_L 0.05, size-specific launch effect {part} x sigma_L "
          f"(per-cell launch sd {0.05 * math.sqrt(1 + part * part):.3f})")
    for n in (5, 6, 10):
        cmps = [S.run_compare(db, rng, compare_groups, launches=n, sigma_l=0.05,
                              effect=math.log(1.1), size_part=part)
                for _ in range(max(10, reps // 2))]
        t = S.tally(cmps, true_gain=1.1)
        raw = [r.deltas["b"].p for c in cmps for r in c.rows]
        unadj = float(np.mean(np.array(raw) <= 0.05))
        verdict = float(np.mean([c.kinds["b"] == "better" for c in cmps]))
        print(f"  {n}+{n} launches: cells significant after Holm {100 * t['cell_rate']:.1f}%, "
              f"per cell unadjusted {100 * unadj:.1f}%, verdict 'better' {100 * verdict:.1f}%, "
              f"gain-CI coverage {100 * t['coverage']:.1f}%", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 comparisons per configuration")
    ap.add_argument("--reps", type=int, default=100, help="comparisons per configuration")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    reps = 20 if args.quick else args.reps
    rng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-inference-"))
    db = tmp / "sim.db"
    t0 = time.monotonic()
    print("A/A: identical variants, 20 sizes, within-launch noise 0.02, 100-500 samples/launch")
    print(f"{'configuration':<28} {'comps':>5} {'cells':>6} {'raw p':>8} {'Holm':>8} "
          f"{'family':>8} "
          f"{'verdict':>8} {'CI cover':>8}  old pooled MWU, cells after Holm (10 comps)")
    every = []
    for sigma in (0.1, 0.3):
        for n in (3, 5, 10):
            cmps = [S.run_compare(db, rng, compare_groups, launches=n, sigma_l=sigma)
                    for _ in range(reps)]
            every += cmps
            print(row(f"sigma_L {sigma}, {n}+{n} launches", S.tally(cmps),
                      f"{100 * pooled_rate(cmps[:10]):.1f}%"), flush=True)
    print(row("all A/A", S.tally(every)))
    print("raw p = cells with p <= 0.05 before Holm; Holm = significant cells; family = "
          "comparisons with any significant cell")
    print("targets: cell <= 6%, family-wise <= 5%, verdict <= 5%, coverage 93-97%\n")

    for part in (0.5, 0.0):
        power(db, rng, reps, part)
    print("target: >= 80% at 5+5 (the t test's own power there is 73-75% at a per-cell "
          "launch sd of exactly 0.05: stats.launch.launches_needed(0.05, 0.10) = 6)")
    from mpibench.campaign.auto_repeats import AutoRepeats, simulate_sequential
    print('\nSequential repeats = "auto" (A/A; stops on the gain CI width, never on p):')
    for sigma in (0.03, 0.1):
        print("  " + simulate_sequential(rng, max(50, 2 * reps), sigma_l=sigma,
                                         rule=AutoRepeats(3, 10, 0.05)), flush=True)
    print("  with a real 10% difference (sigma_L 0.03): "
          + simulate_sequential(rng, max(25, reps // 2), sigma_l=0.03,
                                effect=math.log(1.1)))
    print(f"\n{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
