#!/usr/bin/env python3
"""Within-launch CI coverage: mpibench-core's CI of the median under its own stopping rule, on
simulated AR(1) series (lag-1 autocorrelation 0, 0.5, 0.9, 0.99), level switching (two levels
2 sd apart, switching with probability 0.05 / 0.01 / 0.002 per sample) and drift (2, 8, 32 sd
over 5000 samples), whose true median is known (under drift: the level at the middle of the
samples taken).

Builds the core with the first stack found and runs `mpibench-core --ci-simulation N` (pure
C, no MPI launch): each trial draws a log-normal AR(1) series (5% spread), samples it in the
core's rounds (min-samples 10, then +25%), stops on +-1% or at 5000 samples, and checks whether
the final CI holds the true median. Prints coverage and the samples it took, for the
autocorrelation-aware CI and for the order-statistic CI alone (the rule before).
Targets (issues 16, 21): >= 90% at AR(1) 0.9, 94-97% for iid; coverage or an honest flag
(`ci_exact` false after the stationarity check) >= 90% under switching and drift.

"Covered" means the CI holds the process's median: 1 under switching (the two levels are
equally likely, so the mixture's median is 1), the middle of the samples taken under drift.
Under slow switching many runs never leave their first level within the samples they take;
nothing inside such a launch can tell (it is stationary there), its CI holds the level it sat
in, and only the between-launch spread (compare's launch-level model) shows the mixture. So
the switching rows also print the share of runs whose level changed within their samples
("switched"), covered-or-flagged among those, and among the others the coverage of the level
they sat in. "not stat." is the stationarity check's verdict when the run ended; the last
table is the check alone at a fixed n on iid and AR(1) series (its false-flag rate per
check). Figures only, no assertions.

usage: bench/bench_core_ci.py [--quick] [--trials N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from mpibench.process import run_command  # noqa: E402
from support.coreutil import STACKS, available, build  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="300 trials")
    a = ap.parse_args()
    if a.quick:
        a.trials = 300
    stack = next((s for s in STACKS if available(s)), None)
    if stack is None:
        print("no MPI stack found to build the core with")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(stack, Path(tmp))
        res = run_command([str(exe), "--ci-simulation", str(a.trials)], timeout=3600)
    if not res.ok:
        print(res.stderr)
        return 1
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()]
    rows = [r for r in recs if r.get("record") == "ci_simulation"]
    ff = [r for r in recs if r.get("record") == "stationarity_false_flags"]
    print(f"within-launch CI coverage under the stopping rule, {a.trials} trials per cell "
          "(target: >= 90% at 0.9, 94-97% iid)")
    print(f"{'CI':<16} {'series':<10} {'lag-1/q':>8} {'coverage':>9} {'flagged':>8} "
          f"{'cover|flag':>10} {'not stat.':>9} {'median n':>9} {'on target':>10}")
    for r in rows:
        par = r["phi"] if r.get("series", "ar1") == "ar1" else r.get("q", 0)
        print(f"{r['ci']:<16} {r.get('series', 'ar1'):<10} {par:>8.3g} "
              f"{100 * r['coverage']:>8.1f}% {100 * r.get('flagged', 0):>7.1f}% "
              f"{100 * r.get('covered_or_flagged', r['coverage']):>9.1f}% "
              f"{100 * r.get('not_stationary', 0):>8.1f}% "
              f"{r['median_n']:>9.0f} {100 * r['stopped_target']:>9.1f}%")
    sw = [r for r in rows if r.get("series") == "switching" and "switched" in r]
    if sw:
        print("switching, split by whether the level changed within the samples a run took:")
        print(f"{'CI':<16} {'q':>8} {'switched':>9} {'cover|flag':>10} {'unswitched: own level covered':>30}")
        for r in sw:
            print(f"{r['ci']:<16} {r['q']:>8.3g} {100 * r['switched']:>8.1f}% "
                  f"{100 * r['covered_or_flagged_switched']:>9.1f}% "
                  f"{100 * r['level_coverage_unswitched']:>29.1f}%")
    if ff:
        print(f"the stationarity check alone at a fixed n on series that kept one level "
              f"({ff[0]['trials']} series each): share flagged (its false-flag rate per check)")
        print(f"{'lag-1':>6} " + " ".join(f"{'n=' + str(r['n']):>8}" for r in ff if r["phi"] == 0))
        for phi in sorted({r["phi"] for r in ff}):
            print(f"{phi:>6.2f} " + " ".join(f"{100 * r['flagged']:>7.1f}%"
                                               for r in ff if r["phi"] == phi))
    return 0


if __name__ == "__main__":
    sys.exit(main())
