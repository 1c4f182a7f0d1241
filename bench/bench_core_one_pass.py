#!/usr/bin/env python3
"""Speed of one pass: `mpibench run all --stack openmpi --np 2 --sizes 0:22 --repeats 1` against
IMB-MPI1 2021.11 `-msglog 0:22` on the same stack and transport, paired, 3 runs each.

Builds IMB-MPI1 from ../shared/peers/imb-2021.11.tar.gz (README there) into
~/.cache/mpibench/peers/imb-<stack>/ once, then alternates: one `mpibench run` (the user's
command, end to end: core build cached, launch, ingest into a fresh store), one IMB launch.
Prints the wall-time ratio per pair and its median (target <= 1.0 at the core's defaults),
the same for the benchmarks both run (IMB's default set has Reduce_local and
Reduce_scatter_block and no Uniband/Biband; `mpibench run all` has Uniband/Biband, whose 4 MiB
iteration moves 64 messages: about a quarter of the pass), `all` against IMB's default set plus
Uniband/Biband, and how
close the launch statistic is: the core's median per benchmark x size against IMB's time
(PingPong/PingPing t, others t_avg), median over the pairs of the per-pair ratio (target: within
5%). Figures only, no assertions; run it under the shared MPI lock.

usage: bench/bench_core_one_pass.py [--quick] [--stack openmpi|mpich] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from mpibench.parsers.imb import parse_imb
from mpibench.process import run_command

REPO = Path(__file__).resolve().parents[1]
# beside the repository (../shared/peers), or $MPIBENCH_PEERS; never an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS") or REPO.parent / "shared" / "peers")
CACHE = Path.home() / ".cache" / "mpibench" / "peers"
MPIBENCH = Path(sys.executable).with_name("mpibench")
STACKS = {
    "openmpi": {"mpicc": "mpicc.openmpi", "cxx": "mpicxx.openmpi -DOMPI_SKIP_MPICXX=1",
                "launch": ["mpirun.openmpi", "-np", "2"]},
    "mpich": {"mpicc": "mpicc.mpich", "cxx": "mpicxx.mpich", "launch": ["mpiexec.hydra", "-n", "2"]},
}
# the benchmarks both suites run by default
COMMON = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce",
          "Reduce_scatter", "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter",
          "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier"]
# IMB-MPI1's default list, and the same with the two windowed benchmarks `all` adds
IMB_DEFAULT = COMMON[:6] + ["Reduce_local"] + COMMON[6:7] + ["Reduce_scatter_block"] + COMMON[7:]
IMB_PLUS = IMB_DEFAULT + ["Uniband", "Biband"]


def build_imb(stack: str) -> Path:
    exe = CACHE / f"imb-{stack}" / "imb-2021.11" / "IMB-MPI1"
    if exe.exists():
        return exe
    src = CACHE / f"imb-{stack}"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    res = run_command(["tar", "xzf", str(PEERS / "imb-2021.11.tar.gz"), "-C", str(src)],
                      timeout=120)
    if not res.ok:
        raise SystemExit(f"unpacking IMB failed: {res.stderr}")
    s = STACKS[stack]
    res = run_command(["make", "-C", str(exe.parent), "IMB-MPI1", f"CC={s['mpicc']}",
                       f"CXX={s['cxx']}"], timeout=600)
    if not res.ok or not exe.exists():
        raise SystemExit(f"building IMB-MPI1 failed:\n{res.stderr[-2000:]}")
    return exe


def run_mpibench(stack: str, benches: list[str], sizes: str, tmp: Path) -> tuple[float, dict]:
    """Wall time of `mpibench run` and the core's medians {(bench, size): median_us}."""
    out = tmp / f"out-{time.monotonic_ns()}"
    argv = [str(MPIBENCH), "run", *benches, "--stack", stack, "--np", "2", "--sizes", sizes,
            "--repeats", "1", "--db", str(out / "mpibench.db"), "--out", str(out),
            "--format", "json"]
    t0 = time.monotonic()
    res = run_command(argv, timeout=900)
    wall = time.monotonic() - t0
    if not res.ok:
        raise SystemExit(f"mpibench run failed:\n{res.stderr[-2000:]}")
    stats: dict[str, dict] = {"median": {}, "t_avg": {}}
    for f in out.rglob("*.jsonl"):
        for ln in f.read_text().splitlines():
            rec = json.loads(ln)
            if rec.get("record") == "result" and rec.get("status") == "ok":
                stats["median"][(rec["benchmark"], rec["size"])] = rec["median_us"]
                stats["t_avg"][(rec["benchmark"], rec["size"])] = rec["rank_avg_us"]
    return wall, stats


def run_imb(stack: str, exe: Path, benches: list[str] | None, sizes: str) -> tuple[float, dict]:
    lo, hi = sizes.split(":")
    argv = [*STACKS[stack]["launch"], str(exe), *(benches or []), "-msglog", f"{lo}:{hi}"]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    t0 = time.monotonic()
    res = run_command(argv, env=env, timeout=900)
    wall = time.monotonic() - t0
    if not res.ok:
        raise SystemExit(f"IMB-MPI1 failed:\n{res.stderr[-2000:]}")
    # "median" pairs with the core's median of per-sample maxima over ranks: IMB's t (pt2pt)
    # or t_max (collectives); "t_avg" is IMB's own statistic, which the core also computes
    times: dict[str, dict] = {"median": {}, "t_avg": {}}
    for r in parse_imb(res.stdout).records:
        if r.get("status") == "ok" and r.get("mean") is not None:
            key = (r["benchmark"], r["size"])
            times["t_avg"][key] = r["mean"]
            times["median"][key] = (r.get("extra") or {}).get("t_max_us", r["mean"])
    return wall, times


def agreement(pairs: list[tuple[dict, dict]], what: str) -> None:
    per_key: dict[tuple[str, int], list[float]] = defaultdict(list)
    for core_all, imb_all in pairs:
        core, imb = core_all[what], imb_all[what]
        for key, t in imb.items():
            if key in core and t > 0 and core[key] > 0:
                per_key[key].append(core[key] / t)
    if not per_key:
        print("  no common benchmark x size to compare")
        return
    ratio = {k: statistics.median(v) for k, v in per_key.items()}
    vals = list(ratio.values())
    within = sum(abs(r - 1) <= 0.05 for r in vals)
    label = ("core median / IMB t (pt2pt) or t_max (collectives)" if what == "median"
             else "core t_avg / IMB t_avg (the same per-rank mean, averaged over ranks)")
    print(f"  {label}, median over {len(pairs)} pairs, {len(vals)} benchmark x size cells:")
    print(f"    median ratio {statistics.median(vals):.3f}; within 5%: {within} of {len(vals)}; "
          f"p10-p90 {sorted(vals)[len(vals) // 10]:.3f}-{sorted(vals)[9 * len(vals) // 10]:.3f}")
    by_bench: dict[str, list[float]] = defaultdict(list)
    for (b, _), r in ratio.items():
        by_bench[b].append(r)
    print("    per benchmark (median over sizes): " + ", ".join(
        f"{b} {statistics.median(v):.3f}" for b, v in by_bench.items()))
    big = [r for (b, s), r in ratio.items() if s >= 1 << 10]
    small = [r for (b, s), r in ratio.items() if s < 1 << 10]
    if big and small:
        print(f"    sizes < 1 KiB: median {statistics.median(small):.3f}; >= 1 KiB: "
              f"{statistics.median(big):.3f} (IMB prints 2 decimals: 0.01 us steps at 0.2 us)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 0:16, 1 run each")
    ap.add_argument("--stack", default="openmpi", choices=sorted(STACKS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="0:22")
    a = ap.parse_args()
    if a.quick:
        a.sizes, a.runs = "0:16", 1
    if shutil.which(STACKS[a.stack]["launch"][0]) is None:
        print(f"{a.stack} is not installed")
        return 0
    exe = build_imb(a.stack)
    with tempfile.TemporaryDirectory() as tmp:
        # build the core once outside the timed runs, as a user's second run would find it
        run_mpibench(a.stack, ["PingPong"], "0:0", Path(tmp))
        for label, benches, imb_benches in (("all", ["all"], None),
                                            ("common set", COMMON, COMMON),
                                            ("all vs IMB's default + Uniband Biband", ["all"],
                                             IMB_PLUS)):
            walls, pairs = [], []
            for _ in range(a.runs):
                w_core, med = run_mpibench(a.stack, benches, a.sizes, Path(tmp))
                w_imb, times = run_imb(a.stack, exe, imb_benches, a.sizes)
                walls.append((w_core, w_imb))
                pairs.append((med, times))
            ratios = [c / i for c, i in walls]
            print(f"{label}: mpibench run {a.sizes} vs IMB-MPI1 -msglog {a.sizes}, {a.stack}, np 2")
            for c, i in walls:
                print(f"  pair: mpibench {c:6.2f} s   IMB {i:6.2f} s   ratio {c / i:.2f}")
            print(f"  one-pass time ratio (median of {a.runs} pairs): "
                  f"{statistics.median(ratios):.2f} (target <= 1.0)")
            agreement(pairs, "median")
            agreement(pairs, "t_avg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
