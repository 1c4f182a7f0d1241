#!/usr/bin/env python3
"""Time to result: mpibench-core adaptive (+-1% CI of the median) vs a fixed-count IMB-like run.

Runs the full IMB-MPI1 set (or --quick: a subset) at np=2 over sizes 0:22 three times per
stack, back to back: adaptive mode with the defaults (target +-1%, 1 s per size), fixed-count
mode with IMB's rule (1000 iterations, at most 40 MB / size: `--iterations 1000
--iterations-volume 40M`), and adaptive with `--futility` (sizes that cannot reach the target
give up early). Prints the wall-time ratio, how many sizes reached the +-1% target (and which
did not, with their stop reason and CI), the precision each mode bought (the same
order-statistic CI computed from the fixed run's own samples), time by size class, and how far
the two modes' medians differ.
Target: every size reaches its target, and adaptive takes at most half the fixed wall time.
One run, ratios only, no assertions.

usage: bench/bench_core_time_to_result.py [--quick] [--stack openmpi|mpich ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from mpibench.stats import ci_percent

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.coreutil import STACKS, available, build, launch  # noqa: E402


def half_width(r: dict) -> float | None:
    """Larger half-width of the 95% CI of the median relative to it; None without a 95% CI."""
    if not r.get("ci_exact") or not r.get("median_us"):
        return None
    return ci_percent(r["median_us"], r["ci_low_us"], r["ci_high_us"]) / 100.0


def size_class(size: int) -> str:
    for limit, name in ((1 << 10, "<=1K"), (1 << 16, "<=64K"), (1 << 19, "<=512K")):
        if size <= limit:
            return name
    return ">=1M"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="PingPong, Allreduce, Alltoall, Bcast over 0:16")
    ap.add_argument("--stack", action="append", choices=sorted(STACKS))
    ap.add_argument("--sizes", default=None, help="override the size spec")
    ap.add_argument("--keep", metavar="DIR", help="keep the JSON Lines of every run in DIR")
    a = ap.parse_args()
    benches = ["PingPong", "Allreduce", "Alltoall", "Bcast"] if a.quick else ["all"]
    sizes = a.sizes or ("0:16" if a.quick else "0:22")
    stacks = [s for s in (a.stack or list(STACKS)) if available(s)]
    modes = {
        "adaptive": ["--target", "1", "--max-time", "1"],
        "fixed": ["--iterations", "1000", "--iterations-volume", "40M"],
        "adaptive+futility": ["--target", "1", "--max-time", "1", "--futility"],
    }
    print(f"# time to result, np=2, sizes {sizes}, benchmarks {' '.join(benches)}")
    with tempfile.TemporaryDirectory(prefix="mb-ttr-") as scratch:
        tmp = a.keep or scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        for stack in stacks:
            exe = build(stack, Path(tmp) / stack)
            wall, runs = {}, {}
            for mode, flags in modes.items():
                out = Path(tmp) / f"{stack}-{mode}.jsonl"
                t0 = time.monotonic()
                run = launch(stack, exe, 2, ["--sizes", sizes, "--quiet", *flags, *benches],
                             out, timeout=3600)
                wall[mode] = time.monotonic() - t0
                runs[mode] = run
                if run.res.returncode != 0:
                    print(f"{stack} {mode}: exit {run.res.returncode}: {run.res.stderr_tail()}")
            ad = [r for r in runs["adaptive"].results if r["status"] == "ok"]
            fx = {(r["benchmark"], r["size"]): r for r in runs["fixed"].results
                  if r["status"] == "ok"}
            reasons = Counter(r["stop_reason"] for r in ad)
            missed = [r for r in ad if r["stop_reason"] != "target"]
            print(f"\n## {stack}")
            print(f"wall time: adaptive {wall['adaptive']:.1f} s, fixed IMB-like "
                  f"{wall['fixed']:.1f} s, ratio adaptive/fixed {wall['adaptive'] / wall['fixed']:.2f}"
                  f" (target <= 0.50)")
            core_s = {m: (runs[m].footer or {}).get("elapsed_s", float("nan")) for m in runs}
            print(f"inside the core (footer elapsed_s, no launcher start-up): adaptive "
                  f"{core_s['adaptive']:.1f} s, fixed {core_s['fixed']:.1f} s, ratio "
                  f"{core_s['adaptive'] / core_s['fixed']:.2f}")
            print(f"sizes reaching +-1%: {reasons['target']} of {len(ad)}; stop reasons "
                  f"{dict(reasons)}")
            # what the fixed count bought: the same CI, computed from its own samples
            for mode, recs in (("adaptive", ad), ("fixed", list(fx.values()))):
                hws = [half_width(r) for r in recs]
                exact = [h for h in hws if h is not None]
                if exact:
                    q = statistics.quantiles(exact, n=10) if len(exact) > 1 else exact * 9
                    print(f"precision {mode}: CI of the median within +-1% for "
                          f"{sum(h <= 0.01 for h in exact)} of {len(hws)} sizes; half-width "
                          f"median {statistics.median(exact):.2%}, p90 {q[-1]:.2%}, max "
                          f"{max(exact):.1%}; {len(hws) - len(exact)} with < 6 samples "
                          "(no 95% CI)")
            by_class: dict[str, list[float]] = {}
            for r in ad:
                f = fx.get((r["benchmark"], r["size"]))
                if f is not None:
                    c = by_class.setdefault(size_class(r["size"]), [0.0, 0.0, 0])
                    c[0] += r["elapsed_s"]
                    c[1] += f["elapsed_s"]
                    c[2] += 1
            print("time by size class (adaptive / fixed, sum of per-size elapsed_s): " + "; ".join(
                f"{k} {v[0]:.1f}/{v[1]:.1f} s ({v[2]} sizes)" for k, v in by_class.items()))
            hit = [r for r in ad if r["stop_reason"] == "target"
                   and (r["benchmark"], r["size"]) in fx]
            if hit and all("elapsed_s" in r for r in hit):
                ta = sum(r["elapsed_s"] for r in hit)
                tf = sum(fx[(r["benchmark"], r["size"])]["elapsed_s"] for r in hit)
                print(f"on the {len(hit)} sizes that reached the target: adaptive {ta:.1f} s, "
                      f"fixed {tf:.1f} s, ratio {ta / tf:.2f}; the {len(ad) - len(hit)} that did "
                      f"not cost adaptive {sum(r['elapsed_s'] for r in ad) - ta:.1f} s")
            samples = sum(r["iterations"] for r in ad)
            fsamples = sum(r["iterations"] for r in fx.values())
            print(f"timed iterations: adaptive {samples}, fixed {fsamples}")
            for r in missed[:40]:
                hw = max(r["median_us"] - r["ci_low_us"], r["ci_high_us"] - r["median_us"])
                print(f"  missed: {r['benchmark']:>14} {r['size']:>8} stop={r['stop_reason']:<11}"
                      f" n={r['n']:<6} median {r['median_us']:.3f} us +-{hw / r['median_us']:.1%}")
            if len(missed) > 40:
                print(f"  ... {len(missed) - 40} more")
            ratios = [r["median_us"] / fx[(r["benchmark"], r["size"])]["median_us"]
                      for r in ad if (r["benchmark"], r["size"]) in fx
                      and fx[(r["benchmark"], r["size"])]["median_us"]]
            fu = runs.get("adaptive+futility")
            if fu is not None and fu.footer:
                fr = [r for r in fu.results if r["status"] == "ok"]
                fc = Counter(r["stop_reason"] for r in fr)
                print(f"with --futility: core {fu.footer['elapsed_s']:.1f} s, ratio to fixed "
                      f"{fu.footer['elapsed_s'] / core_s['fixed']:.2f}; stop reasons {dict(fc)}")
            if ratios:
                q = statistics.quantiles(ratios, n=20)
                print(f"median adaptive/fixed per size: middle {statistics.median(ratios):.3f}, "
                      f"5%-95% {q[0]:.3f}-{q[-1]:.3f} over {len(ratios)} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
