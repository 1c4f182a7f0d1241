#!/usr/bin/env python3
"""Fidelity of mpibench-core's PingPong against NetPIPE on the same stack and transport.

For each installed stack (Open MPI with NPopenmpi, MPICH with NPmpich2; same launcher, same
environment, shared memory), runs the core's PingPong and NetPIPE alternately and prints,
per size, the core's median and min half-round-trip time next to NetPIPE's, and bandwidth at
1-4 MiB. NetPIPE reports the best (minimum) of its trials, so `min/NP` is the like-for-like
ratio; `med/NP` shows what the median (the core's headline statistic) adds on a noisy machine.
Target: small-message latency and large-message bandwidth within 5%.

NetPIPE times each trial as one long loop (~0.25 s by default) and reports the best trial; on
a shared, oversubscribed machine such a loop is preempted, which inflates large-message times
several-fold. The core's samples are single iterations (or short batches) and its median and
min skip preempted samples. So for 1-4 MiB NetPIPE also runs with `-n 10` (10 round trips per
trial, 7 trials, best kept), column `NP-n10`, which measures the same un-preempted transfer.

usage: bench/bench_core_fidelity.py [--quick] [--rounds N] [--stack openmpi|mpich ...]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _coreutil import STACKS, available, build, launch  # noqa: E402
from mpibench.runner import run_command  # noqa: E402

NETPIPE = {"openmpi": "NPopenmpi", "mpich": "NPmpich2"}


def netpipe(stack: str, lo: int, hi: int, out: Path, repeats: int = 0) -> dict[int, float]:
    """NetPIPE over [lo, hi] without perturbations -> {bytes: one-way time in us}.
    repeats > 0 fixes NetPIPE's repeats per trial (-n); by default a trial lasts ~0.25 s."""
    s = STACKS[stack]
    argv = [*s["launch"], "2", NETPIPE[stack], "-l", str(lo), "-u", str(hi), "-p", "0",
            "-o", str(out)] + (["-n", str(repeats)] if repeats else [])
    res = run_command(argv, env=s["env"], timeout=900)
    if not res.ok or not out.exists():
        raise RuntimeError(f"NetPIPE failed on {stack}: {res.stderr_tail()}")
    times = {}
    for line in out.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3:
            times[int(float(parts[0]))] = float(parts[2]) * 1e6  # seconds -> us
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes, one round")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 3)")
    ap.add_argument("--stack", action="append", choices=sorted(STACKS))
    a = ap.parse_args()
    rounds = a.rounds or (1 if a.quick else 3)
    lat = [1 << e for e in range(0, 7 if a.quick else 11)]  # 1 B .. 64 B / 1 KiB
    bw = [1 << 20, 4 << 20] if a.quick else [1 << 20, 2 << 20, 4 << 20]
    budget = "0.3" if a.quick else "1"
    stacks = [s for s in (a.stack or list(STACKS))
              if available(s) and shutil.which(NETPIPE[s])]
    print(f"# PingPong fidelity vs NetPIPE, np=2, {rounds} alternating round(s), core adaptive "
          f"+-1% with --max-time {budget}; times are one-way (half round trip) in us; "
          "MB/s = 10^6 B/s")
    with tempfile.TemporaryDirectory(prefix="mb-fid-") as tmp:
        for stack in stacks:
            exe = build(stack, Path(tmp) / stack)
            core_med: dict[int, list[float]] = {}
            core_min: dict[int, list[float]] = {}
            npt: dict[int, list[float]] = {}
            npn: dict[int, list[float]] = {}
            for rnd in range(rounds):
                out = Path(tmp) / f"{stack}-{rnd}.jsonl"
                spec = ",".join(str(x) for x in lat + bw)
                run = launch(stack, exe, 2, ["--sizes", spec, "--max-time", budget, "--quiet",
                                             "PingPong"], out, timeout=900)
                for r in run.results:
                    if r["status"] == "ok":
                        core_med.setdefault(r["size"], []).append(r["median_us"])
                        core_min.setdefault(r["size"], []).append(r["min_us"])
                for lo, hi in ((lat[0], lat[-1]), (bw[0], bw[-1])):
                    t = netpipe(stack, lo, hi, Path(tmp) / f"np-{stack}-{rnd}-{lo}.out")
                    for size, us in t.items():
                        npt.setdefault(size, []).append(us)
                t = netpipe(stack, bw[0], bw[-1], Path(tmp) / f"npn-{stack}-{rnd}.out", 10)
                for size, us in t.items():
                    npn.setdefault(size, []).append(us)
            print(f"\n## {stack} ({NETPIPE[stack]})")
            print(f"{'bytes':>8} {'core_med':>10} {'core_min':>10} {'NetPIPE':>10} "
                  f"{'med/NP':>7} {'min/NP':>7} {'core_MB/s':>10} {'NP_MB/s':>10} "
                  f"{'bw core/NP':>10} {'NP-n10':>9} {'min/NPn10':>9}")
            lat_ratios, bw_ratios, bwn_ratios = [], [], []
            for size in lat + bw:
                if size not in core_med or size not in npt:
                    print(f"{size:8d}  (missing: core {size in core_med}, NetPIPE {size in npt})")
                    continue
                med = statistics.median(core_med[size])
                mn = min(core_min[size])
                nt = min(npt[size])
                cbw, nbw = size / med, size / nt
                extra = ""
                if size in npn:
                    nn = min(npn[size])
                    extra = f" {nn:9.3f} {mn / nn:9.3f}"
                    bwn_ratios.append((med / nn, mn / nn))
                print(f"{size:8d} {med:10.3f} {mn:10.3f} {nt:10.3f} {med / nt:7.3f} "
                      f"{mn / nt:7.3f} {cbw:10.1f} {nbw:10.1f} {cbw / nbw:10.3f}{extra}")
                (bw_ratios if size in bw else lat_ratios).append((med / nt, mn / nt))
            if lat_ratios:
                print(f"latency 1 B-{lat[-1]} B: geometric-mean ratio core/NetPIPE "
                      f"median {statistics.geometric_mean(x for x, _ in lat_ratios):.3f}, "
                      f"min {statistics.geometric_mean(y for _, y in lat_ratios):.3f}")
            if bw_ratios:
                print(f"bandwidth 1-4 MiB: geometric-mean ratio core/NetPIPE "
                      f"(from median) {statistics.geometric_mean(1 / x for x, _ in bw_ratios):.3f}, "
                      f"(from min) {statistics.geometric_mean(1 / y for _, y in bw_ratios):.3f}")
            if bwn_ratios:
                print(f"bandwidth 1-4 MiB vs NetPIPE -n 10: geometric-mean ratio core/NetPIPE "
                      f"(from median) {statistics.geometric_mean(1 / x for x, _ in bwn_ratios):.3f},"
                      f" (from min) {statistics.geometric_mean(1 / y for _, y in bwn_ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
