#!/usr/bin/env python3
"""The testbed (mpibench.testbed, docs/testbed.md): how fast it starts, and what its links
give, measured against what they were configured to give.

Figures, one function each (add yours to FIGURES; a figure gets the shared 2-node testbed
with fabrics fast:4gbit and slow:1gbit, or starts its own):

- start_time: `Testbed.start` with Slurm (munged, slurmctld, a slurmd per node, until both
  nodes are idle) and `stop`, wall seconds, N times (target: start < 30 s);
- tcp_goodput: one TCP stream (Python sockets, no MPI) tn1 -> tn2 and back over each fabric:
  goodput vs configured rate (the ceiling is ~0.96 at MTU 1500: TCP/IP/Ethernet headers),
  and over the unshaped management network, which is what this machine can move between two
  namespaces at all (a fabric's rate must stay well below it);
- mpi_vs_configured: MPI PingPong over each fabric against the configured rate x TCP's
  payload efficiency, % of line rate, fast/slow gain vs the rate ratio (bench_fabric.py).

Needs root (it starts testbeds); elsewhere it says why and exits 0. Run it alone: the
transfer figures are load-sensitive (that is why they are here and not in the tests).

    .venv/bin/python bench/bench_testbed.py [--quick] [--figure NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mpibench.testbed import FabricSpec, Testbed, TestbedUnavailable, preflight
from mpibench.testbed.measure import tcp_transfer
from mpibench.testbed.session import session_testbed

FABRICS = [FabricSpec("fast", 4 * 10**9), FabricSpec("slow", 10**9)]


def start_time(bed: Testbed, args) -> None:
    """Start and stop a 2-node testbed with two fabrics, with Slurm and without, N times."""
    for slurm in ((None, False) if bed.slurm_conf else (False,)):
        starts, stops = [], []
        for _ in range(1 if args.quick else 5):
            with tempfile.TemporaryDirectory(prefix="mbt-bench-") as d:
                t0 = time.monotonic()
                b = Testbed.start(Path(d) / "tb", nodes=2, fabrics=FABRICS, slurm=slurm)
                t1 = time.monotonic()
                b.stop()
                starts.append(t1 - t0)
                stops.append(time.monotonic() - t1)
        what = "with Slurm (until both nodes idle)" if slurm is None else "without Slurm"
        print(f"start, 2 nodes, 2 fabrics, {what}: median {statistics.median(starts):.2f} s "
              f"over {len(starts)} (each: {', '.join(f'{s:.2f}' for s in starts)}); "
              f"target < 30 s: {statistics.median(starts) / 30:.1%} of it; stop: median "
              f"{statistics.median(stops):.2f} s")


def tcp_goodput(bed: Testbed, args) -> None:
    """One TCP stream each way per fabric, MiB per transfer from --mib."""
    nbytes = (16 if args.quick else args.mib) << 20
    print(f"TCP goodput, one stream of {nbytes >> 20} MiB, receiver's first to last byte "
          f"(MB/s = 10^6 B/s; ratio = goodput / configured rate):")
    for f in bed.fabrics:
        for src, dst in (("tn1", "tn2"), ("tn2", "tn1")):
            t = tcp_transfer(bed, f.name, src=src, dst=dst, nbytes=nbytes)
            print(f"  {f.name:5s} {src}->{dst}: {t.goodput_bps / 8e6:8.1f} MB/s = "
                  f"{t.goodput_bps / 1e9:6.3f} Gbit/s, configured {f.rate_text}: "
                  f"ratio {t.ratio:.3f}")
    # the unshaped management network: what the machine can move at all
    mgmt = tcp_transfer(bed, None, nbytes=nbytes).goodput_bps
    print(f"  unshaped (management network) tn1->tn2: {mgmt / 8e6:8.1f} MB/s = "
          f"{mgmt / 1e9:6.3f} Gbit/s (fast fabric's rate is "
          f"{bed.fabric('fast').rate_bps / mgmt:.0%} of it)")


def mpi_vs_configured(bed: Testbed, args) -> None:
    """MPI over the fabrics (Open MPI and MPICH, one rank per node, each fabric pinned and
    verified): large-message PingPong MB/s vs configured rate x TCP payload efficiency,
    mpibench's % of line rate, latency vs delay, fast/slow gain vs rate ratio. The rest
    (shm vs network, placement, node scaling) is bench/bench_fabric.py, on testbeds of its
    own."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_fabric import fabrics_vs_configured

    with tempfile.TemporaryDirectory(prefix="mbt-mpi-") as d:
        fabrics_vs_configured(bed, Path(d), args.quick)


FIGURES = {"start_time": start_time, "tcp_goodput": tcp_goodput,
           "mpi_vs_configured": mpi_vs_configured}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one start, 16 MiB transfers")
    p.add_argument("--figure", action="append", choices=sorted(FIGURES),
                   help="run only this figure (repeatable)")
    p.add_argument("--mib", type=int, default=128, help="MiB per TCP transfer (default 128)")
    args = p.parse_args(argv)
    try:
        preflight()
    except TestbedUnavailable as exc:
        print(f"bench_testbed: skipped: {exc}")
        return 0
    with session_testbed(nodes=2, fabrics=FABRICS, slurm=None) as bed:
        print(bed.describe())
        for name in args.figure or list(FIGURES):
            print(f"\n-- {name}")
            FIGURES[name](bed, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
