#!/usr/bin/env python3
"""What the core's preemption flag costs: the checkout's mpibench-core against the core of a
commit before the flag, side by side.

    .venv/bin/python bench/bench_preempt_cost.py [--quick] [--rounds N] [--before REV]
        [--stack openmpi|mpich]

Both cores are built with the stack's mpicc (the one before from `git archive REV core`,
default d551d0f, the last main commit without the flag), then launched alternately, N
rounds (which goes first alternates), each launch PingPong at 0 B and 1 MiB in fixed-count
mode (--iterations: the same work for both, so the cell's wall time `elapsed_s` is the
price of the same samples), np=2 bound to cores, each launch under the shared MPI lock
with a timeout. The flag costs each rank one getrusage(RUSAGE_THREAD) call per sample,
outside the timed interval: it shows in the wall time of a cell, not in its samples.

Per round it prints both cores' elapsed_s and median per size; at the end, per size, the
median over rounds of the ratio flag/before of elapsed_s and of the median (the timed
samples: ~1 if the call stays outside them), with the load average at start and end.
Numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = "/tmp/mpibench-mpi.lock"
STACKS = {"openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core",
                                         "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]),
          "mpich": ("mpicc.mpich", ["mpiexec.hydra", "-n", "2", "-bind-to", "core"])}
# fixed work per size: about 10 ms each on this machine when quiet (a loaded one: 1 s and more)
ITERATIONS = {0: 20000, 1 << 20: 200}


def build(src: Path, mpicc: str, out: Path) -> Path:
    subprocess.run(["make", "-s", "-C", str(src), f"MPICC={mpicc}", f"BUILD={out}"],
                   check=True, timeout=600, capture_output=True)
    return out / "mpibench-core"


def old_core(rev: str, mpicc: str, tmp: Path) -> Path:
    src = tmp / "before"
    src.mkdir()
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "core"], check=True,
                          capture_output=True, timeout=60).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=arch, check=True, timeout=60)
    return build(src / "core", mpicc, tmp / "before-build")


def launch(exe: Path, launcher: list[str], size: int, out: Path) -> dict:
    """One launch of one size; {elapsed_s, median_us} of its result."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["flock", LOCK, "timeout", "120", *launcher, str(exe), "--sizes", str(size),
           "--iterations", str(ITERATIONS[size]), "--quiet", "--jsonl", str(out), "PingPong"]
    subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=180)
    rec = next(r for r in map(json.loads, out.read_text().splitlines())
               if r.get("record") == "result")
    return {"elapsed_s": rec["elapsed_s"], "median_us": rec["median_us"]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 rounds")
    ap.add_argument("--rounds", type=int, default=10, help="alternating rounds (default 10)")
    ap.add_argument("--before", default="d551d0f", help="the commit without the flag")
    ap.add_argument("--stack", default="openmpi", choices=sorted(STACKS))
    a = ap.parse_args(argv)
    rounds = 3 if a.quick else a.rounds
    mpicc, launcher = STACKS[a.stack]
    with tempfile.TemporaryDirectory(prefix="bench-preempt-") as td:
        tmp = Path(td)
        cores = {"before": old_core(a.before, mpicc, tmp),
                 "flag": build(ROOT / "core", mpicc, tmp / "flag-build")}
        print(f"# preemption flag cost, {a.stack}, PingPong fixed count {ITERATIONS}; "
              f"before = {a.before}; load {os.getloadavg()[0]:.2f}")
        got = {(k, s): [] for k in cores for s in ITERATIONS}
        for r in range(rounds):
            order = list(cores) if r % 2 == 0 else list(reversed(cores))
            for size in ITERATIONS:
                for k in order:
                    got[(k, size)].append(launch(cores[k], launcher, size, tmp / "o.jsonl"))
                b, f = got[("before", size)][-1], got[("flag", size)][-1]
                print(f"round {r + 1} size {size}: elapsed_s before {b['elapsed_s']:.4f} flag "
                      f"{f['elapsed_s']:.4f}; median_us before {b['median_us']:.4g} flag "
                      f"{f['median_us']:.4g}", flush=True)
        for size in ITERATIONS:
            pairs = list(zip(got[("before", size)], got[("flag", size)], strict=True))
            ratio = {m: statistics.median(f[m] / b[m] for b, f in pairs)
                     for m in ("elapsed_s", "median_us")}
            print(f"size {size}: median over {rounds} rounds of flag/before: elapsed_s "
                  f"{ratio['elapsed_s']:.3f}, median_us {ratio['median_us']:.3f}")
        print(f"# end: load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
