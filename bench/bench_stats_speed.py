"""Benchmark the launch-level comparison (stats.launch.compare_cells, aggregate) on seeded
simulated benchmarks: CPU seconds per workload, and whether the outputs are identical.

    .venv/bin/python bench/bench_stats_speed.py [--against REV] [--rounds N] [--reps N]

Four workloads, each a fixed number of seeded benchmarks of 10 sizes, compared as `mpibench
compare` does (the statistics only; no store, no table):
  paired     interleaved rounds (5), a round effect the sizes share, two noisy sizes: the
             paired path (regimes, the hedge's cuts, the quiet blocks)
  unpaired   3 vs 7 launches, launch effects shared across sizes: the hierarchical model
             (gate, moderation, floors)
  cut-short  the few-clean scenario of stats.preempted (two sizes cut short): _cut_blocks
  aggregate  the geomean row / verdict over the 10 sizes of the paired workload (5x the
             benchmarks: each is cheap)
  planned    2 vs 7 launches as unpaired, and every cell's 'detectable' (a 2-launch thin
             side: plan_boot's bootstrap of plan_expect solves; 1/4 of the benchmarks:
             each is dear)

Each workload runs in a fresh process (import cost excluded: the clock starts after a warm-up
call) and reports its user+system CPU seconds and a sha256 of the repr of every output.
--against REV runs the same workloads with another commit's src/ (`git archive`, first on
PYTHONPATH), interleaved with this tree's over --rounds rounds (default 3), and prints both
medians, their ratio (this tree / REV) and whether the digests agree: a speed-up that changes
no output says "identical". CPU time, not wall time, because these machines are shared and
noisy; the ratio is the figure to read, not the seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = ("paired", "unpaired", "cut-short", "aggregate", "planned")


def _paired_cells(rng, rounds: int = 5, sizes: int = 10):
    """(cells, rounds map) of one interleaved benchmark: a round effect sd 0.1 both sides
    share, a launch effect sd 0.03 per side, cell parts sd 0.02, sizes 3-4 three times
    noisier."""
    load = rng.normal(0, 0.1, rounds)
    cells, where = [], {}
    launch = [rng.normal(0, 0.03, rounds) for _ in (0, 1)]
    for s in range(sizes):
        sd = 0.06 if s in (3, 4) else 0.02
        sides = []
        for j in (0, 1):
            logs = 1.0 + 0.2 * s + load + launch[j] + rng.normal(0, sd, rounds)
            side = {f"{'bc'[j]}{r}": math.exp(v) for r, v in enumerate(logs)}
            where.update({f"{'bc'[j]}{r}": ("c", r) for r in range(rounds)})
            sides.append(side)
        cells.append((sides[0], sides[1], "lower"))
    return cells, where


def _unpaired_cells(rng, ns=(3, 7), sizes: int = 10):
    cells = []
    launch = [rng.normal(0, 0.05, n) for n in ns]
    for s in range(sizes):
        sides = [{f"{'bc'[j]}{k}": math.exp(0.1 * s + launch[j][k] + rng.normal(0, 0.025))
                  for k in range(n)} for j, n in enumerate(ns)]
        cells.append((sides[0], sides[1], "lower"))
    return cells


def run_workload(name: str, reps: int) -> dict:
    """Run one workload `reps` benchmarks long in this process: {cpu, digest, outputs}."""
    import numpy as np

    from mpibench.stats import launch as L
    from mpibench.stats import preempted as P
    rng = np.random.default_rng(7)
    digest = hashlib.sha256()

    def one() -> object:
        if name == "paired":
            cells, where = _paired_cells(rng)
            return L.compare_cells(cells, rounds=where, sizes=list(range(len(cells))))
        if name == "unpaired":
            cells = _unpaired_cells(rng)
            return L.compare_cells(cells, sizes=list(range(len(cells))))
        if name == "cut-short":
            b = P.few_clean_bench(rng, 5, 1.0, (1.0, 0.2), 0.3)
            return L.compare_cells(b.cells, rounds=b.rounds, sizes=list(range(10)), cut=b.cut)
        if name == "planned":
            ts = L.compare_cells(_unpaired_cells(rng, ns=(2, 7)), sizes=list(range(10)))
            return ts, [t.detectable for t in ts]
        cells, where = _paired_cells(rng)
        return L.aggregate(cells, rounds=where)

    one()                                    # imports and first-call caches off the clock
    reps = {"aggregate": reps * 5, "planned": max(1, reps // 4)}.get(name, reps)
    before = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(reps):
        digest.update(repr(one()).encode())
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu": cpu, "digest": digest.hexdigest(), "outputs": reps}


def _child(src: Path, name: str, reps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    res = subprocess.run([sys.executable, __file__, "--child", name, "--reps", str(reps)],
                         env=env, capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise SystemExit(f"bench_stats_speed: the {name} workload failed with src {src}:\n"
                         f"{res.stderr.strip()}")
    return json.loads(res.stdout)


def _archive(rev: str, into: Path) -> Path:
    arch = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"],
                          capture_output=True, timeout=120)
    if arch.returncode != 0:
        raise SystemExit(f"bench_stats_speed: --against {rev}: {arch.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=arch.stdout, check=True, timeout=120)
    return into / "src"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench/bench_stats_speed.py",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--against", metavar="REV",
                    help="also run another commit's src/, interleaved, and print the ratio")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved runs per code (3)")
    ap.add_argument("--reps", type=int, default=200,
                    help="benchmarks per workload and run (200)")
    ap.add_argument("--quick", action="store_true", help="--reps 40 --rounds 1")
    ap.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.reps < 1:
        ap.error(f"--rounds and --reps must be at least 1 (got {args.rounds}, {args.reps})")
    if args.child:
        print(json.dumps(run_workload(args.child, args.reps)))
        return 0
    reps, rounds = (40, 1) if args.quick else (args.reps, args.rounds)
    codes = {"this tree": REPO / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            codes[args.against] = _archive(args.against, Path(tmp))
        got: dict = {(c, w): [] for c in codes for w in WORKLOADS}
        for r in range(rounds):
            for w in WORKLOADS:
                for c, src in (codes.items() if r % 2 == 0 else reversed(codes.items())):
                    got[(c, w)].append(_child(src, w, reps))
    print(f"CPU seconds (user+system) for {reps} benchmarks per workload (aggregate "
          f"{5 * reps}, planned {max(1, reps // 4)}), median of "
          f"{rounds} run(s) per code, codes interleaved and alternated in order")
    head = f"{'workload':<11}" + "".join(f"{c:>14}" for c in codes)
    print(head + ("     ratio  outputs" if args.against else ""))
    for w in WORKLOADS:
        meds = [statistics.median(x["cpu"] for x in got[(c, w)]) for c in codes]
        line = f"{w:<11}" + "".join(f"{m:>14.2f}" for m in meds)
        if args.against:
            same = len({x["digest"] for c in codes for x in got[(c, w)]}) == 1
            line += f"  {meds[0] / meds[1]:>7.2f}x  {'identical' if same else 'DIFFER'}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
