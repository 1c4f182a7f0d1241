#!/usr/bin/env python3
"""Within-launch CI coverage: mpibench-core's CI of the median under its own stopping rule, on
simulated AR(1) series (lag-1 autocorrelation 0, 0.5, 0.9, 0.99), level switching (two levels
2 sd apart, switching with probability 0.05 / 0.01 / 0.002 per sample) and drift (2, 8, 32 sd
over 5000 samples), whose true median is known (under drift: the level at the middle of the
samples taken).

Builds the core with the first stack found and runs `mpibench-core --ci-simulation N` (pure
C, no MPI launch): each trial draws a log-normal series (5% spread), samples it in the core's
rounds (min-samples 10, then +25%), stops on +-1% or at 5000 samples, and checks whether the
final CI holds the true median. Three rules on the same series: the core's ("core": the
autocorrelation-aware CI, the stationarity check with its continue level and edge CUSUM),
the rule before them ("before": block test and rank CUSUM at 0.001 only) and the
order-statistic CI alone. Prints coverage, flags and the samples each took (mean and median).
Targets (issues 16, 21): >= 90% at AR(1) 0.9, 94-97% for iid; coverage or an honest flag
(`ci_exact` false after the stationarity check) >= 90% under switching and drift.

What a within-launch CI estimates: the median of the level(s) this launch's samples came
from. "Covered" means the CI holds the process's median: 1 under switching (the two levels
are equally likely, so the mixture's median is 1), the middle of the samples taken under
drift. Under slow switching many runs never leave their first level within the samples they
take; nothing inside such a launch can tell (it is stationary there), its CI holds the level it
sat in, and the mixture shows only across launches. So the switching rows also print the share
of runs whose level changed within their samples ("switched"), covered-or-flagged among those,
among the others the coverage of the level they sat in, and the launch-level model's coverage:
each trial is a launch that starts at the stationary distribution (level drawn 50/50), and
compare's launch-level CI (mpibench.stats.launch.estimate: geometric mean, t CI on the log
launch medians) over k = 3 and 5 launches is checked against the mixture's median 1.

The two estimands side by side (issue 21 item 6): per run, covered (and covered or flagged)
for (i) the launch's own median, of the levels its samples came from (switching: the median
of its own mix of the two levels; drift: the level at the middle of its samples; AR(1): the
process median), the within-launch CI's estimand, on which the target is judged; (ii) the
long-run median (1; under drift the level at the middle of the 5000-sample cap, which a
launch that saw a slow drift's first few hundred samples has no way to estimate). Then the
launch-level CI over k = 3..8 launches at each switching rate: how often all k launches sat
in one level, whether the sets it misses look any different from the sets it covers (their
within-launch CIs share a point: nothing in those launches shows a second level), and two
remedies a rule could take (a launch floor when the first 3 launches' medians disagree
beyond their CIs; conservative degrees of freedom) next to a fixed number of launches.
The last table is the check alone at a fixed n on iid and AR(1) series (its false-flag rate
per check, and the share left "unsettled"). Figures only, no assertions.

usage: bench/bench_core_ci.py [--quick] [--trials N]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from scipy.special import stdtrit  # noqa: E402

from mpibench.process import run_command  # noqa: E402
from mpibench.stats.launch import compare_cells, estimate  # noqa: E402
from support.coreutil import STACKS, available, build  # noqa: E402

TARGET = 0.90
LABEL = {"autocorrelation": "core", "autocorrelation_flag_only": "before",
         "order_statistics": "order stats"}


def launch_level(medians: list[float], k: int) -> tuple[float, int]:
    """Coverage of the mixture's median (1) by the launch-level CI over consecutive groups of
    k launches, and the number of groups."""
    groups = [medians[i:i + k] for i in range(0, len(medians) - k + 1, k)]
    hit = 0
    for g in groups:
        e = estimate(g)
        hit += e.ci_low is not None and e.ci_low <= 1.0 <= e.ci_high
    return (hit / len(groups) if groups else float("nan")), len(groups)


def _homogeneous(lows: list[float], highs: list[float]) -> bool:
    """The launches' within-launch CIs share a point: nothing in them shows two levels."""
    return max(lows) <= min(highs)


def launch_level_table(r: dict, ks: tuple[int, ...] = (3, 4, 5, 6, 8)) -> dict:
    """The launch-level CI (compare's estimate) over consecutive sets of k of one switching
    row's launches: coverage of 1 per k; at k = 3 the share of sets whose launches all sat
    in one level (log medians of one sign), the share of the missed sets that look
    homogeneous (within-launch CIs share a point), and two rules on the same sets: `floor`
    (3 launches, 2 more when the 3 disagree beyond their CIs: the sets of 5 with their
    first 3 heterogeneous use all 5) and `df1` (the t critical value of 1 degree of freedom
    instead of 2)."""
    med, lo, hi = r["medians"], r.get("ci_lows"), r.get("ci_highs")
    out: dict = {"k": {k: launch_level(med, k) for k in ks}}
    sets3 = [range(i, i + 3) for i in range(0, len(med) - 2, 3)]
    one = miss = miss_hom = 0
    for idx in sets3:
        v = [med[i] for i in idx]
        one += len({x > 1.0 for x in v}) == 1
        e = estimate(v)
        if not (e.ci_low <= 1.0 <= e.ci_high):
            miss += 1
            if lo is not None:
                miss_hom += _homogeneous([lo[i] for i in idx], [hi[i] for i in idx])
    out["one_level_3"] = one / len(sets3)
    out["miss_homogeneous_3"] = miss_hom / miss if miss and lo is not None else float("nan")
    # rules on the sets of 5: look at the first 3; the floor takes all 5 when they disagree
    floor_hit = df1_hit = grew = 0
    sets5 = [range(i, i + 5) for i in range(0, len(med) - 4, 5)]
    for idx in sets5:
        first = list(idx)[:3]
        het = lo is not None and not _homogeneous([lo[i] for i in first],
                                                  [hi[i] for i in first])
        grew += het
        e = estimate([med[i] for i in (idx if het else first)])
        floor_hit += e.ci_low <= 1.0 <= e.ci_high
        y = [math.log(med[i]) for i in first]
        m = sum(y) / 3
        sd = math.sqrt(sum((a - m) ** 2 for a in y) / 2)
        h = float(stdtrit(1, 0.975)) * sd / math.sqrt(3)
        df1_hit += m - h <= 0.0 <= m + h
    n5 = len(sets5)
    out["floor"] = (floor_hit / n5, 3 + 2 * grew / n5) if n5 else (float("nan"), 0.0)
    out["df1"] = df1_hit / n5 if n5 else float("nan")
    return out


def aa_compare(medians: list[float], k: int) -> tuple[float, float, int]:
    """A/A with compare's own test (stats.launch.compare_cells, unpaired: each launch's level
    independent) on consecutive sets of k + k launches: (share significant at 0.05, share
    whose gain CI holds 1, sets)."""
    sets = [medians[i:i + 2 * k] for i in range(0, len(medians) - 2 * k + 1, 2 * k)]
    sig = cov = 0
    for g in sets:
        t = compare_cells([(dict(enumerate(g[:k])), dict(enumerate(g[k:])), "lower")])[0]
        sig += t.p is not None and t.p <= 0.05
        cov += t.ci_low is not None and t.ci_low <= 1.0 <= t.ci_high
    return (sig / len(sets), cov / len(sets), len(sets)) if sets else (float("nan"),) * 2 + (0,)


def _pct(v: float) -> str:
    return f"{100 * v:5.1f}%"


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
        res = run_command([str(exe), "--ci-simulation", str(a.trials)], timeout=7200)
    if not res.ok:
        print(res.stderr)
        return 1
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()]
    rows = [r for r in recs if r.get("record") == "ci_simulation"]
    ff = [r for r in recs if r.get("record") == "stationarity_false_flags"]
    print(f"within-launch CI coverage under the stopping rule, {a.trials} trials per cell "
          "(target: >= 90% at 0.9, 94-97% iid; covered or flagged >= 90% under switching "
          "and drift)")
    print(f"{'rule':<12} {'series':<10} {'lag-1/q':>8} {'coverage':>9} {'flagged':>8} "
          f"{'cover|flag':>10} {'not stat.':>9} {'mean n':>8} {'median n':>9} {'on target':>10}")
    for r in rows:
        par = r["phi"] if r.get("series", "ar1") == "ar1" else r.get("q", 0)
        print(f"{LABEL.get(r['ci'], r['ci']):<12} {r.get('series', 'ar1'):<10} {par:>8.3g} "
              f"{_pct(r['coverage']):>9} {_pct(r.get('flagged', 0)):>8} "
              f"{_pct(r.get('covered_or_flagged', r['coverage'])):>10} "
              f"{_pct(r.get('not_stationary', 0)):>9} {r.get('mean_n', float('nan')):>8.0f} "
              f"{r['median_n']:>9.0f} {_pct(r['stopped_target']):>10}")
    by = {(r["ci"], r["series"], r["phi"], r["q"]): r for r in rows}
    cost = [(k, by[("autocorrelation_flag_only",) + k[1:]]) for k in
            ((r["ci"], r["series"], r["phi"], r["q"]) for r in rows
             if r["ci"] == "autocorrelation" and r["series"] == "ar1")
            if ("autocorrelation_flag_only",) + k[1:] in by]
    if cost:
        print("\nwhat the core's rule costs where nothing moved (same series, mean samples per "
              "launch; the share that ended flagged):")
        for k, before in cost:
            now = by[k]
            print(f"  AR(1) {k[2]:<5.2f} before {before['mean_n']:7.1f} ({_pct(before['flagged'])}"
                  f" flagged)  core {now['mean_n']:7.1f} ({_pct(now['flagged'])} flagged)  "
                  f"x{now['mean_n'] / before['mean_n']:.3f}")
    sw = [r for r in rows if r.get("series") == "switching" and "switched" in r
          and r["ci"] != "order_statistics"]
    if sw:
        print("\nswitching, split by whether the level changed within the samples a run took:")
        print(f"{'rule':<12} {'q':>8} {'switched':>9} {'cover|flag (switched)':>22} "
              f"{'unswitched: own level covered':>30}")
        for r in sw:
            print(f"{LABEL.get(r['ci'], r['ci']):<12} {r['q']:>8.3g} {_pct(r['switched']):>9} "
                  f"{_pct(r['covered_or_flagged_switched']):>22} "
                  f"{_pct(r['level_coverage_unswitched']) if r['switched'] < 1 else '-':>30}")
    core = [r for r in rows if r["ci"] == "autocorrelation" and "own_coverage" in r]
    misses = []
    if core:
        print("\nthe two estimands, per run (core's rule): (i) the launch's own median (the "
              "level(s) its samples came from;\n the within-launch CI's estimand, the target "
              f">= {100 * TARGET:.0f}% covered or flagged under switching and drift), (ii) the "
              "long-run median:")
        print(f"{'series':<10} {'lag-1/q':>8} {'(i) covered':>12} {'(i) cover|flag':>15} "
              f"{'(ii) covered':>13} {'(ii) cover|flag':>16} {'(ii) reachable':>15}")
        for r in core:
            par = r["phi"] if r["series"] == "ar1" else r["q"]
            print(f"{r['series']:<10} {par:>8.3g} {_pct(r['own_coverage']):>12} "
                  f"{_pct(r['own_covered_or_flagged']):>15} {_pct(r['long_run_coverage']):>13} "
                  f"{_pct(r['long_run_covered_or_flagged']):>16} "
                  f"{_pct(r['long_run_reachable']) if 'long_run_reachable' in r else '-':>15}")
            if r["series"] != "ar1" and r["own_covered_or_flagged"] < TARGET:
                misses.append(f"{r['series']} {par:g}: (i) "
                              f"{_pct(r['own_covered_or_flagged']).strip()}")
        print("  (ii) reachable: runs that changed level within their samples or whose CI "
              "holds 1 anyway, the most\n  any within-launch flag can make of (ii) without "
              "flagging launches that kept one level.\n  (ii) under drift is the level at the "
              "middle of the 5000-sample cap: a launch that took the first\n  few hundred "
              "samples of a slow drift cannot estimate it; under switching it takes several "
              "launches:")
    meds = [r for r in rows if "medians" in r]
    if meds:
        ks = (3, 4, 5, 6, 8)
        print("\nthe long-run median from several launches: compare's launch-level CI "
              "(stats.launch.estimate) over k launches")
        print(f"{'q':>8} " + " ".join(f"{'k=' + str(k):>7}" for k in ks)
              + f" {'one level (k=3)':>16} {'misses homog.':>14} {'floor 3->5':>16} "
              f"{'df 1 (k=3)':>11}")
        for r in meds:
            t = launch_level_table(r, ks)
            fl, fn = t["floor"]
            print(f"{r['q']:>8.3g} " + " ".join(f"{_pct(t['k'][k][0]):>7}" for k in ks)
                  + f" {_pct(t['one_level_3']):>16} {_pct(t['miss_homogeneous_3']):>14} "
                  f"{_pct(fl) + f' ({fn:.2f})':>16} {_pct(t['df1']):>11}")
        print("  one level: all 3 launches' medians on one side of 1 (with two equally likely "
              "levels that no launch\n  leaves: 2^(1-k), 25% at 3, 6.25% at 5, 3.1% at 6). "
              "misses homog.: of the 3-launch sets whose CI\n  misses 1, the share whose "
              "within-launch CIs share a point (nothing in them shows a second level).\n"
              "  floor 3->5: 2 more launches when the first 3 disagree beyond their CIs (mean "
              "launches); df 1: t\n  critical value of 1 df instead of 2 on 3 launches.")
        print("\nA/A on the same launches with compare's test (unpaired; each launch's level "
              "independent): share significant\nat 0.05 / share whose gain CI holds 1")
        for r in meds:
            figs = []
            for k in (3, 5):
                sig, cov, n = aa_compare(r["medians"], k)
                figs.append(f"{k}+{k}: {_pct(sig).strip()} / {_pct(cov).strip()} ({n} sets)")
            print(f"{r['q']:>8.3g}   " + "   ".join(figs))
    if misses:
        print("\nbelow the 90% target for (i): " + "; ".join(misses))
    elif core:
        print(f"\nthe target for (i), the within-launch CI's estimand: covered or flagged >= "
              f"{100 * TARGET:.0f}% in every switching and drift case (met)")
    if ff:
        print(f"\nthe stationarity check alone at a fixed n on series that kept one level "
              f"({ff[0]['trials']} series each): share flagged (level_shift/drift; its "
              "false-flag rate per check) / share unsettled")
        print(f"{'lag-1':>6} " + " ".join(f"{'n=' + str(r['n']):>15}"
                                          for r in ff if r["phi"] == 0))
        for phi in sorted({r["phi"] for r in ff}):
            print(f"{phi:>6.2f} " + " ".join(
                f"{_pct(r['flagged']) + ' / ' + _pct(r.get('unsettled', 0)):>15}"
                for r in ff if r["phi"] == phi))
    return 0


if __name__ == "__main__":
    sys.exit(main())
