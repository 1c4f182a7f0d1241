#!/usr/bin/env python3
"""Cost of the PMPI profiler, measured side by side in one run (no asserts: shared machine).

  1. overhead per intercepted call: a loop of MPI_Comm_rank with and without the library
     (best of 200 short rounds inside each launch), next to the library's own calibration
     at MPI_Init
  2. 0-byte PingPong one-way latency with and without the library (best of 20 rounds)
  3. GROMACS (gmx_mpi, 2 ranks, water box) mdrun wall time with and without

Launches come in pairs, one with and one without the library, in alternating order (ABBA),
so drift of the shared machine hits both sides alike. Each comparison prints the median of
the per-pair differences (or ratios) with its distribution-free 95% CI (order statistics,
n >= 6 pairs), the medians of both sides and a two-sided Mann-Whitney p over the unpaired
samples. Targets (issue 8): < 50 ns per call, < 1% application slowdown.

    .venv/bin/python bench/bench_profiler.py [--quick] [--stack openmpi] [--pairs N]
                                             [--gmx-steps N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from mpibench import profile, stats
from mpibench.process import run_command

GMX_ENV = {"OMP_NUM_THREADS": "1", "GMX_MAXBACKUP": "-1"}
TOPOL = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spc.itp"

[ system ]
water box

[ molecules ]
"""
MDP = """integrator = md
dt = 0.002
nsteps = {steps}
nstlist = 10
cutoff-scheme = Verlet
coulombtype = PME
rcoulomb = 0.9
rvdw = 0.9
tcoupl = v-rescale
tc-grps = System
tau-t = 0.1
ref-t = 300
constraints = h-bonds
nstenergy = 500
nstlog = 500
"""


def launch(stack, argv, profiled: bool, out: Path, env=None, timeout=300):
    """Run argv (a launcher command) with or without the profiler; return CommandResult."""
    if profiled:
        return profile.run.run_profiled(argv, stack=stack, out_dir=out, timeout=timeout,
                                      extra_env=env).result
    return run_command(argv, env={**profile.run.ROOT_ENV, **(env or {})}, timeout=timeout)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def order(i: int) -> tuple[bool, bool]:
    """ABBA: off/on, on/off, off/on, ..."""
    return (False, True) if i % 2 == 0 else (True, False)


def paired(label: str, off: list[float], on: list[float], unit: str, ratio: bool,
           target: str = "") -> None:
    """One line: median of the per-pair (on - off) or (on / off - 1) with its 95% CI, the
    medians of both sides, the Mann-Whitney p of the unpaired samples."""
    if ratio:
        d = [100.0 * (b / a - 1.0) for a, b in zip(off, on, strict=True) if a > 0]
        dunit = "%"
    else:
        d = [b - a for a, b in zip(off, on, strict=True)]
        dunit = f" {unit}"
    ci = stats.median_ci(d)
    ci_txt = (f"[{ci.low:+.2f}, {ci.high:+.2f}]{dunit}" if ci.low is not None
              else f"(no 95% CI with {len(d)} pairs; need >= 6)")
    p = stats.mann_whitney(off, on) if len(off) >= 2 and len(on) >= 2 else float("nan")
    print(f"  {label:<26} off {med(off):9.3f} {unit:<3} on {med(on):9.3f} {unit:<3} "
          f"paired change {med(d):+7.2f}{dunit} 95% CI {ci_txt}  MWU p={p:.3g}  "
          f"n={len(d)} pairs  {target}")


def bench_calls(stack, pairs: int, iters: int, tmp: Path) -> None:
    progs = profile.run.build_test_programs(stack)
    argv = [stack.launcher, "-np", "2", str(progs / "pingpong0"), str(iters)]
    res = {False: {"pp": [], "null": []}, True: {"pp": [], "null": []}}
    calib = []
    for i in range(pairs):
        for on in order(i):
            out = tmp / f"pp-{stack.name}-{i}"
            r = launch(stack, argv, on, out)
            if not r.ok:
                print(f"  {stack.name}: launch failed: {r.stderr_tail(5)}")
                return
            pp = re.search(r"pingpong_us (\S+)", r.stdout)
            nc = re.search(r"nullcall_ns (\S+)", r.stdout)
            res[on]["pp"].append(float(pp.group(1)))
            res[on]["null"].append(float(nc.group(1)))
            if on:
                calib.append(profile.document.collect_profile(out)["overhead"]["ns_per_call"]["mean"])
    print(f"{stack.name}: {pairs} pairs of launches (ABBA); each value is the best of many "
          "short rounds inside its launch")
    paired("MPI_Comm_rank call", res[False]["null"], res[True]["null"], "ns", False,
           "target < 50 ns per call")
    print(f"  {'':<26} the library's own calibration at MPI_Init: {med(calib):.2f} ns per call")
    paired("0-byte PingPong, one way", [1e3 * x for x in res[False]["pp"]],
           [1e3 * x for x in res[True]["pp"]], "ns", False,
           "(one Send + one Recv intercepted per one-way message)")
    paired("  same, as slowdown", res[False]["pp"], res[True]["pp"], "us", True)


def bench_gromacs(stack, pairs: int, steps: int, tmp: Path) -> None:
    if not shutil.which("gmx_mpi") or stack.kind != "openmpi":
        print("gromacs: skipped (needs gmx_mpi, which Debian builds with Open MPI)")
        return
    d = tmp / "gmx"
    d.mkdir()
    (d / "topol.top").write_text(TOPOL)
    (d / "md.mdp").write_text(MDP.format(steps=steps))
    env = {**GMX_ENV, **profile.run.ROOT_ENV}
    for argv in (["gmx_mpi", "solvate", "-cs", "spc216.gro", "-box", "2", "2", "2", "-o",
                  "conf.gro", "-p", "topol.top"],
                 ["gmx_mpi", "grompp", "-f", "md.mdp", "-c", "conf.gro", "-p", "topol.top",
                  "-o", "topol.tpr", "-maxwarn", "5"]):
        r = run_command(argv, cwd=d, env=env, timeout=120)
        if not r.ok:
            print(f"gromacs: input preparation failed: {r.stderr_tail(5)}")
            return
    wall: dict[bool, list[float]] = {False: [], True: []}
    launch_s: dict[bool, list[float]] = {False: [], True: []}
    frac, est, calls = [], [], []
    for i in range(pairs):
        for on in order(i):
            argv = [stack.launcher, "-np", "2", "gmx_mpi", "mdrun", "-s", str(d / "topol.tpr"),
                    "-ntomp", "1", "-deffnm", str(d / f"md-{i}-{int(on)}")]
            out = tmp / f"gmx-prof-{i}"
            r = launch(stack, argv, on, out, env=GMX_ENV)
            if not r.ok:
                print(f"gromacs: mdrun failed: {r.stderr_tail(5)}")
                return
            log = (d / f"md-{i}-{int(on)}.log").read_text()
            m = re.search(r"Time:\s+(\S+)\s+(\S+)", log)
            wall[on].append(float(m.group(2)))
            launch_s[on].append(r.elapsed)
            if on:
                doc = profile.document.collect_profile(out)
                frac.append(doc["mpi_fraction"]["mean"])
                est.append(doc["overhead"]["estimated_total_s"] / doc["ranks"]
                           / doc["wall_s"]["mean"])
                calls.append(doc["calls_total"] / doc["ranks"])
    print(f"gromacs mdrun, 2 ranks, {steps} steps, {pairs} pairs of launches (ABBA)")
    paired("mdrun wall (its log)", wall[False], wall[True], "s", True, "target < 1%")
    paired("whole launch", launch_s[False], launch_s[True], "s", True,
           "(+ MPI_Init calibration, merge, start-up)")
    print(f"    wall samples: off {wall[False]}  on {wall[True]}")
    print(f"  time in MPI (profiled): {100 * med(frac):.1f}% of wall time per rank")
    print(f"  expected cost from the library's calibration: {med(calls):.0f} calls per rank x "
          f"its ns/call = {100 * med(est):.4f}% of the wall time per rank")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer launches")
    ap.add_argument("--stack", action="append", help="stack(s) (default openmpi and mpich)")
    ap.add_argument("--pairs", type=int, help="pairs of launches (default 8, quick 3)")
    ap.add_argument("--gmx-steps", type=int, default=500, help="mdrun steps (default 500)")
    a = ap.parse_args(argv)
    pairs = a.pairs or (3 if a.quick else 8)
    names = a.stack or ["openmpi", "mpich"]
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-prof-") as t:
        tmp = Path(t)
        for name in names:
            try:
                stack = profile.run.resolve_stack(name)
            except Exception as exc:  # noqa: BLE001 - report and go on with the others
                print(f"{name}: skipped ({exc})")
                continue
            bench_calls(stack, pairs, 2000 if a.quick else 20000, tmp)
        try:
            ompi = profile.run.resolve_stack("openmpi")
            bench_gromacs(ompi, pairs, a.gmx_steps, tmp)
        except Exception as exc:  # noqa: BLE001
            print(f"gromacs: skipped ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
