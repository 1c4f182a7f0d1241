#!/usr/bin/env python3
"""Timer overhead of mpibench-core as a fraction of the smallest measured batch.

Builds the core for each installed stack, runs the shortest operations (PingPong, Allreduce,
Bcast, Barrier at 0..1 KiB) adaptively, and prints, per stack: MPI_Wtime overhead and
resolution from the header, the batch floor the core derived from them, the smallest batch
interval it actually timed, and the timer's share of that interval (target: under 1%).
It also shows what the share would be with one call per timed interval (no batching), which
is why the core batches. One run, ratios only, no assertions.

usage: bench/bench_core_timer.py [--quick] [--stack openmpi|mpich ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.coreutil import STACKS, available, build, launch  # noqa: E402

ITER_DIV = {"PingPong": 2}  # PingPong reports half a round trip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, shorter budget")
    ap.add_argument("--stack", action="append", choices=sorted(STACKS))
    a = ap.parse_args()
    stacks = [s for s in (a.stack or list(STACKS)) if available(s)]
    sizes = "0,8,1K" if a.quick else "0:10"
    budget = "0.2" if a.quick else "1"
    print(f"# mpibench-core timer overhead, np=2, sizes {sizes}, --max-time {budget}")
    print(f"{'stack':8} {'overhead_us':>11} {'resol_us':>9} {'floor_us':>9} {'bench':>10} "
          f"{'size':>5} {'batch':>6} {'interval_us':>11} {'timer_frac':>10} {'unbatched':>10}")
    with tempfile.TemporaryDirectory(prefix="mb-timer-") as tmp:
        for stack in stacks:
            exe = build(stack, Path(tmp) / stack)
            out = Path(tmp) / f"{stack}.jsonl"
            run = launch(stack, exe, 2, ["--sizes", sizes, "--max-time", budget, "--quiet",
                                         "PingPong", "Allreduce", "Bcast", "Barrier"], out,
                         timeout=600)
            if not run.records:
                print(f"{stack}: no output ({run.res.stderr_tail()})")
                continue
            t = run.header["timer"]
            ok = [r for r in run.results if r["status"] == "ok"]
            rows = []
            for r in ok:
                interval = r["batch"] * r["median_us"] * ITER_DIV.get(r["benchmark"], 1)
                rows.append((interval, r))
            interval, r = min(rows, key=lambda x: x[0])
            frac = 2 * t["overhead_us"] / interval
            unbatched = 2 * t["overhead_us"] / (r["median_us"] * ITER_DIV.get(r["benchmark"], 1))
            print(f"{stack:8} {t['overhead_us']:11.4f} {t['resolution_us']:9.4f} "
                  f"{t['min_interval_us']:9.2f} {r['benchmark']:>10} {r['size']:5d} "
                  f"{r['batch']:6d} {interval:11.2f} {frac:10.2%} {unbatched:10.2%}")
            worst = max(x["timer_fraction"] for x in ok)
            print(f"{'':8} worst timer_fraction over {len(ok)} results: {worst:.2%} "
                  f"(target < 1%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
