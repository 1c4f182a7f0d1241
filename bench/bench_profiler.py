#!/usr/bin/env python3
"""Cost of the PMPI profiler, measured side by side in one run (no asserts: shared machine).

  1. overhead per intercepted call: a loop of MPI_Comm_rank with and without the library
     (best of 5 rounds inside each launch), next to the library's own calibration at MPI_Init
  2. 0-byte PingPong one-way latency with and without the library
  3. GROMACS (gmx_mpi, 2 ranks, water box) mdrun wall time and ns/day with and without

Launches alternate (off, on, on, off, ...) so drift hits both sides alike; medians and the
least disturbed launch are shown.
Targets (issue 8): < 50 ns per call, < 1% application slowdown.

    .venv/bin/python bench/bench_profiler.py [--quick] [--stack openmpi] [--repeats N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from mpibench import profiling
from mpibench.runner import run_command

GMX_ENV = {"OMP_NUM_THREADS": "1", "GMX_MAXBACKUP": "-1"}
TOPOL = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spc.itp"

[ system ]
water box

[ molecules ]
"""
MDP = """integrator = md
dt = 0.002
nsteps = 1000
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
        return profiling.run_profiled(argv, stack=stack, out_dir=out, timeout=timeout,
                                      extra_env=env).result
    return run_command(argv, env={**profiling.ROOT_ENV, **(env or {})}, timeout=timeout)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(on, off):
    return 100.0 * (on - off) / off if off else float("nan")


def bench_pingpong(stack, repeats: int, iters: int, tmp: Path) -> None:
    progs = profiling.build_test_programs(stack)
    argv = [stack.launcher, "-np", "2", str(progs / "pingpong0"), str(iters)]
    res = {False: {"pp": [], "null": []}, True: {"pp": [], "null": []}}
    calib = []
    for i in range(repeats):
        for on in (False, True):
            r = launch(stack, argv, on, tmp / f"pp-{stack.name}-{i}")
            if not r.ok:
                print(f"  {stack.name}: launch failed: {r.stderr_tail(5)}")
                return
            pp = re.search(r"pingpong_us (\S+)", r.stdout)
            nc = re.search(r"nullcall_ns (\S+)", r.stdout)
            res[on]["pp"].append(float(pp.group(1)))
            res[on]["null"].append(float(nc.group(1)))
            if on:
                doc = profiling.collect_profile(tmp / f"pp-{stack.name}-{i}")
                calib.append(doc["overhead"]["ns_per_call"]["mean"])
    off_n, on_n = med(res[False]["null"]), med(res[True]["null"])
    off_p, on_p = med(res[False]["pp"]), med(res[True]["pp"])
    print(f"{stack.name} ({repeats} interleaved launches per side; each number is already the "
          "best of many short rounds inside its launch)")
    print(f"  least disturbed launch: MPI_Comm_rank off {min(res[False]['null']):.2f} ns, on "
          f"{min(res[True]['null']):.2f} ns (+{min(res[True]['null']) - min(res[False]['null']):.2f}"
          f" ns/call); PingPong off {min(res[False]['pp']):.3f} us, on "
          f"{min(res[True]['pp']):.3f} us")
    print("  medians:")
    print(f"  MPI_Comm_rank call      off {off_n:8.2f} ns   on {on_n:8.2f} ns   "
          f"overhead {on_n - off_n:6.2f} ns/call (library's own calibration "
          f"{med(calib):.2f} ns)   target < 50 ns")
    print(f"  0-byte PingPong (1-way) off {off_p:8.3f} us   on {on_p:8.3f} us   "
          f"slowdown {pct(on_p, off_p):+6.2f}%  (+{(on_p - off_p) * 1e3:.1f} ns per "
          "one-way message = one Send + one Recv intercepted)")
    print(f"    all samples: off {[round(x, 3) for x in res[False]['pp']]}  "
          f"on {[round(x, 3) for x in res[True]['pp']]}")


def bench_gromacs(stack, repeats: int, tmp: Path) -> None:
    if not shutil.which("gmx_mpi") or stack.kind != "openmpi":
        print("gromacs: skipped (needs gmx_mpi, which Debian builds with Open MPI)")
        return
    d = tmp / "gmx"
    d.mkdir()
    (d / "topol.top").write_text(TOPOL)
    (d / "md.mdp").write_text(MDP)
    env = {**GMX_ENV, **profiling.ROOT_ENV}
    for argv in (["gmx_mpi", "solvate", "-cs", "spc216.gro", "-box", "2", "2", "2", "-o",
                  "conf.gro", "-p", "topol.top"],
                 ["gmx_mpi", "grompp", "-f", "md.mdp", "-c", "conf.gro", "-p", "topol.top",
                  "-o", "topol.tpr", "-maxwarn", "5"]):
        r = run_command(argv, cwd=d, env=env, timeout=120)
        if not r.ok:
            print(f"gromacs: input preparation failed: {r.stderr_tail(5)}")
            return
    wall = {False: [], True: [], }
    nsday = {False: [], True: []}
    launch_s = {False: [], True: []}
    frac, est, calls = [], [], []
    for i in range(repeats):
        for on in ((False, True) if i % 2 == 0 else (True, False)):  # ABBA: cancels drift
            argv = [stack.launcher, "-np", "2", "gmx_mpi", "mdrun", "-s", str(d / "topol.tpr"),
                    "-ntomp", "1", "-deffnm", str(d / f"md-{i}-{int(on)}")]
            out = tmp / f"gmx-prof-{i}"
            r = launch(stack, argv, on, out, env=GMX_ENV)
            if not r.ok:
                print(f"gromacs: mdrun failed: {r.stderr_tail(5)}")
                return
            log = (d / f"md-{i}-{int(on)}.log").read_text()
            m = re.search(r"Time:\s+(\S+)\s+(\S+)", log)
            p = re.search(r"Performance:\s+(\S+)", log)
            wall[on].append(float(m.group(2)))
            nsday[on].append(float(p.group(1)))
            launch_s[on].append(r.elapsed)
            if on:
                doc = profiling.collect_profile(out)
                frac.append(doc["mpi_fraction"]["mean"])
                est.append(doc["overhead"]["estimated_total_s"] / doc["ranks"]
                           / doc["wall_s"]["mean"])
                calls.append(doc["calls_total"] / doc["ranks"])
    print(f"gromacs mdrun, 2 ranks, 1000 steps, {repeats} interleaved launches per side "
          "(medians)")
    print(f"  mdrun wall (its log)    off {med(wall[False]):7.3f} s   on {med(wall[True]):7.3f} s"
          f"   slowdown {pct(med(wall[True]), med(wall[False])):+6.2f}%   target < 1%")
    print(f"  ns/day                  off {med(nsday[False]):7.2f}     on {med(nsday[True]):7.2f}"
          f"     change {pct(med(nsday[True]), med(nsday[False])):+6.2f}%")
    print(f"  whole launch            off {med(launch_s[False]):7.3f} s   on "
          f"{med(launch_s[True]):7.3f} s   (includes MPI_Init calibration and the merge)")
    print(f"  least disturbed launch: off {min(wall[False]):.3f} s, on {min(wall[True]):.3f} s "
          f"({pct(min(wall[True]), min(wall[False])):+.2f}%)")
    print(f"    wall samples: off {wall[False]}  on {wall[True]}")
    print(f"  time in MPI (profiled): {100 * med(frac):.1f}% of wall time per rank")
    print(f"  expected cost from the library's calibration: {med(calls):.0f} calls per rank x "
          f"its ns/call = {100 * med(est):.3f}% of the wall time per rank")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer launches")
    ap.add_argument("--stack", action="append", help="stack(s) (default openmpi and mpich)")
    ap.add_argument("--repeats", type=int)
    a = ap.parse_args(argv)
    repeats = a.repeats or (2 if a.quick else 5)
    names = a.stack or ["openmpi", "mpich"]
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-prof-") as t:
        tmp = Path(t)
        for name in names:
            try:
                stack = profiling.resolve_stack(name)
            except Exception as exc:  # noqa: BLE001 - report and go on with the others
                print(f"{name}: skipped ({exc})")
                continue
            bench_pingpong(stack, repeats, 2000 if a.quick else 20000, tmp)
        try:
            ompi = profiling.resolve_stack("openmpi")
            bench_gromacs(ompi, max(2, repeats - 1), tmp)
        except Exception as exc:  # noqa: BLE001
            print(f"gromacs: skipped ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
