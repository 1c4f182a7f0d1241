#!/usr/bin/env python3
"""mpibench against IMB on the same stack: PingPong latency (8 B) and bandwidth (1 MiB).

For every usable stack (Debian's Open MPI 4.1 and MPICH 4.0, the PyPI Open MPI 5 and
MPICH 5 from `mpibench stacks install`, Intel MPI when installed), IMB-MPI1 is built from
../shared/peers/ (or $MPIBENCH_PEERS) with that stack's own wrappers, modules and environment,
then 5 rounds launch, in interleaved order, IMB PingPong and mpibench-core PingPong at np 2
with the stack's default transport (no preset: what a user gets). Each launch is one
observation; the table shows the median over launches of each tool's mean time, since IMB
reports only the mean over its repetitions (t[usec]; Mbytes/sec = size / t), and mpibench's
t[usec] column is the same mean over its samples, so like is compared with like (mpibench's
own launch statistic, the median sample, is shown beside it: on a shared 2-core machine the
mean carries every preemption). MB/s is 10^6 bytes/s in both. Every launch holds the shared MPI lock
(/tmp/mpibench-mpi.lock) only for itself.

    python bench/bench_stacks_peers.py [--rounds 5] [--stacks a,b] [--markdown]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import statistics
import sys
import tarfile
import time
from pathlib import Path

from mpibench.build import build_component
from mpibench.launchers import LaunchSpec, get_launcher
from mpibench.process import run_command
from mpibench.stacks import Stack, cache_dir, discover

# beside the repository (../shared/peers), or $MPIBENCH_PEERS; never an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS")
             or Path(__file__).resolve().parents[1].parent / "shared" / "peers")
SIZES = (8, 1 << 20)
LOCK = "/tmp/mpibench-mpi.lock"
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+(.*)$")


def build_imb(stack: Stack) -> Path:
    out = cache_dir() / "peers" / f"imb-2021.11-{stack.name}-{stack.identity()}"
    exe = out / "IMB-MPI1"
    if exe.exists():
        return exe
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(PEERS / "imb-2021.11.tar.gz") as tar:
        tar.extractall(out, filter="data")
    src = out / "imb-2021.11"
    cxx = stack.mpicc.replace("mpicc", "mpicxx")
    flags = " -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"
    res = run_command(stack.command(["make", "-C", str(src), "IMB-MPI1", f"CC={stack.mpicc}",
                                     f"CXX={cxx}{flags}"]), env=stack.env, timeout=900)
    if not res.ok or not (src / "IMB-MPI1").exists():
        raise SystemExit(f"building IMB with {stack.mpicc} failed:\n{res.stderr[-2000:]}")
    shutil.copy(src / "IMB-MPI1", exe)
    return exe


def launch(stack: Stack, program: list[str], timeout: float = 300, nice: int = 0) -> str:
    spec = LaunchSpec(np=2, program=program, env=dict(stack.env))
    argv = stack.command(get_launcher(stack.launcher_kind).argv(stack.launcher, spec))
    if nice:  # both tools alike: shields the launch from other work on a shared machine
        argv = ["nice", "-n", str(nice), *argv]
    env = dict(stack.env)
    if os.geteuid() == 0:
        env.update(stack.kind_class.root_env)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = run_command(argv, env=env, timeout=timeout)
    if not res.ok:
        raise RuntimeError(f"{stack.name}: {' '.join(argv[:3])} ... failed: "
                           f"{res.stderr_tail(3)}")
    return res.stdout


def parse_table(text: str, bw_col: int, lat_col: int) -> dict[int, tuple[float, float]]:
    """{size: (latency us, MB/s)} from an IMB-style PingPong table."""
    out = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        cols = [m.group(1), m.group(2), m.group(3), *m.group(4).split()]
        try:
            out[int(cols[0])] = (float(cols[lat_col]), float(cols[bw_col]))
        except (ValueError, IndexError):
            continue
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds")
    ap.add_argument("--stacks", help="comma-separated stack names (default: all usable)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--nice", type=int, default=0,
                    help="run every launch (both tools) at this niceness; -10 as root keeps "
                         "other processes from preempting the ranks on a shared machine")
    args = ap.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    found = [s for s in discover() if s.ok and not s.alias_of]
    if args.stacks:
        want = args.stacks.split(",")
        found = [s for s in found if s.name in want]
    msglen = cache_dir() / "peers" / "msglen.txt"
    msglen.parent.mkdir(parents=True, exist_ok=True)
    msglen.write_text("".join(f"{n}\n" for n in SIZES))
    progs = {}
    for s in found:
        progs[s.name] = (build_imb(s), build_component(s))
    obs: dict[str, dict[str, list[tuple[float, float]]]] = {s.name: {"imb": [], "mpibench": []}
                                                            for s in found}
    sizes = ",".join(str(n) for n in SIZES)
    for r in range(rounds):
        order = found if r % 2 == 0 else list(reversed(found))
        for s in order:
            imb, core = progs[s.name]
            pair = [("imb", [str(imb), "PingPong", "-msglen", str(msglen)]),
                    ("mpibench", [str(core), "PingPong", "--sizes", sizes, "--max-time", "0.5"])]
            for tool, prog in (pair if r % 2 == 0 else pair[::-1]):
                text = launch(s, prog, nice=args.nice)
                # IMB: bytes reps t[usec] Mbytes/sec; mpibench: bytes reps t median ci MB/s
                table = parse_table(text, 3, 2) if tool == "imb" else parse_table(text, 3, 2)
                lat, bw = table[SIZES[0]][0], SIZES[1] / table[SIZES[1]][0]
                med = parse_table(text, 3, 3)[SIZES[0]][1] if tool == "mpibench" else lat
                obs[s.name][tool].append((lat, bw, med))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    head = ("| stack | version | IMB 8 B us | mpibench 8 B us | ratio | mpibench 8 B median us "
            "| IMB 1 MiB MB/s | mpibench 1 MiB MB/s | ratio |")
    print(head)
    print("|" + "---|" * 9)
    for s in found:
        i, m = obs[s.name]["imb"], obs[s.name]["mpibench"]
        il, ml = statistics.median(x[0] for x in i), statistics.median(x[0] for x in m)
        ib, mb = statistics.median(x[1] for x in i), statistics.median(x[1] for x in m)
        mm = statistics.median(x[2] for x in m)
        print(f"| {s.name} | {s.kind} {s.version} | {il:.2f} | {ml:.2f} | {ml / il:.2f} | "
              f"{mm:.2f} | {ib:.0f} | {mb:.0f} | {mb / ib:.2f} |")
    print(f"\n{rounds} interleaved launches per tool and stack, np 2, default transport; "
          f"medians over launches; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for s in found:
        print(f"{s.name}: imb {obs[s.name]['imb']}\n{' ' * len(s.name)}  mpibench "
              f"{obs[s.name]['mpibench']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
