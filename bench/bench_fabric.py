#!/usr/bin/env python3
"""MPI across the testbed against ground truth (issue 19 item 3): what mpibench measures over
links whose true speed is known.

Starts its own testbeds (mpibench.testbed; needs root, namespaces, tc, a cgroup v1 cpuset)
and prints, side by side and never as a pass/fail on time:

  1. per fabric and stack: PingPong large-message MB/s vs the configured rate x TCP's payload
     efficiency at the fabric's MTU (mpibench.linkmodel), measured/expected, whether within
     10% both ways; mpibench's "% of line rate" (its line-rate table, line_rate = configured
     rate) vs the efficiency; 0-byte latency vs the configured delay (where netem exists);
  2. fast vs slow gain for large messages vs the ratio of the configured rates;
  3. shared memory inside a node vs the network between nodes, and placement: 2 ranks packed
     on one 2-CPU node vs spread one per node (what 2 CPUs can show; half the cores of a node
     needs 4);
  4. a node-scaling table (Allreduce, 1 rank per node) over 1 and 2 nodes (and 4, sharing
     CPUs two to one, without --quick).

Open MPI ob1 (shm+tcp; also with mpi_yield_when_idle, see below) and MPICH ch4:ucx (UCX
sm+tcp), one rank per node unless said, each
fabric pinned by interface and verified by the nodes' byte counters. Times: geometric mean of
the launch medians (each launch weighted equally); MB/s = 10^6 B/s.

Each node has one CPU here, and that CPU also does the work a NIC would (the kernel's TCP and
shaping, softirq/ksoftirqd): ranks that busy-poll take it away, and other load on the
machine takes more. The "+yield" rows (Open MPI's mpi_yield_when_idle) show how much of a
gap to the link's rate is that CPU share; the link itself is exact (a TCP stream between
the nodes reaches 93-96% of the rate: python -m mpibench.testbed.measure DIR).

Usage: .venv/bin/python bench/bench_fabric.py [--quick] [--keep DIR]
Run it under the shared MPI lock on a shared machine:
  flock /tmp/mpibench-mpi.lock .venv/bin/python bench/bench_fabric.py --quick
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _fmt(x, spec=".4g"):
    return "-" if x is None else format(x, spec)


def _campaign(name: str, variants: str, groups: str, repeats: int) -> str:
    return (f'[campaign]\nname = "{name}"\nrepeats = {repeats}\norder = "interleaved"\n'
            f'timeout = 600\n\n{variants}\n{groups}')


def fabrics_vs_configured(bed, work: Path, quick: bool) -> dict:
    from mpibench import fabric as fb

    sizes = "0,1M,4M" if quick else "0,1M,4M,16M"
    text = fb.fabric_campaign(bed, "bench-fabrics", stacks=("openmpi", "mpich"), sizes=sizes,
                              repeats=2 if quick else 3, max_time=0.2 if quick else 0.5,
                              yielding=True)
    t0 = time.monotonic()
    res, _camp, db = fb.run_campaign(bed, text, work / "fabrics", timeout=1800)
    took = time.monotonic() - t0
    if not res.ok:
        print(f"campaign failed (exit {res.returncode}): {res.stderr_tail(5)}")
    figs = fb.figures(bed, db)
    print(f"\n1. Large-message PingPong vs the configured link ({took:.0f} s; "
          "expected = rate/8 x TCP payload efficiency at the MTU)")
    head = ("variant", "rate", "MTU", "TCP eff", "expected MB/s", "measured MB/s", "size",
            "meas/exp", "within 10%", "% of line", "best MB/s", "best/exp", "latency us",
            "delay us", "launches", "carried by")
    rows = []
    for f in figs:
        iface = (f.interface_actual or "").split("; iface ", 1)[-1].split(" ", 1)[0] \
            if "; iface " in (f.interface_actual or "") else "?"
        rows.append((f.variant, f.expected.line_rate, f.expected.mtu,
                     f"{f.expected.efficiency * 100:.2f}%", _fmt(f.expected.mbps),
                     _fmt(f.mbps), _fmt(f.size, "d"), _fmt(f.ratio, ".3f"),
                     "yes" if f.ratio and abs(f.ratio - 1) <= 0.10 else "NO",
                     _fmt(f.percent_of_line_rate, ".1f"), _fmt(f.best_mbps),
                     _fmt(f.best_mbps / f.expected.mbps if f.best_mbps else None, ".3f"),
                     _fmt(f.latency_us, ".3g"),
                     _fmt(f.expected.delay_us or None, ".3g") if f.expected.delay_us
                     else "none set", f.launches, iface))
    _table(head, rows)
    print("   measured = geometric mean of the launch medians (the figure compare prints); best "
          "= the fastest single sample over all launches: the link's ceiling, which a "
          "median held down by the node's CPU does not show")
    delays = [f for f in figs if f.expected.delay_us]
    if not delays:
        print("   no delay is configured or this kernel has no netem: the latency column "
              "has no lower bound to hold it against")
    for f in delays:
        ok = f.latency_us is not None and f.latency_us >= f.expected.delay_us
        print(f"   {f.variant}: 0-byte latency {f.latency_us:.3g} us vs one-way delay "
              f"{f.expected.delay_us:g} us: {'not lower (ok)' if ok else 'LOWER (wrong)'}")
    print("\n2. Fast vs slow, large messages: gain (MB/s ratio) vs configured rate ratio")
    by = {(f.stack, f.fabric): f for f in figs}
    names = [fb_.name for fb_ in bed.fabrics]
    gains = []
    if len(names) >= 2:
        hi, lo = names[0], names[1]
        for stack in ("openmpi", "openmpi+yield", "mpich"):
            a, b = by.get((stack, hi)), by.get((stack, lo))
            if not (a and b and a.mbps and b.mbps):
                continue
            gain = a.mbps / b.mbps
            ratio = a.expected.rate_bps / b.expected.rate_bps
            gains.append((stack, f"{hi}/{lo}", _fmt(gain, ".3f"), _fmt(ratio, ".3g"),
                          _fmt(gain / ratio, ".3f"),
                          "yes" if abs(gain / ratio - 1) <= 0.10 else "NO"))
        _table(("stack", "fabrics", "gain", "rate ratio", "gain/ratio", "within 10%"), gains)
    return {"figures": figs, "gains": gains}


def _table(head, rows) -> None:
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    print("   " + "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("   " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


def scaling(bed, work: Path, quick: bool, label: str, nodes: list[int]) -> dict:
    """Allreduce, 1 rank per node, over the first fabric, at each node count."""
    from mpibench import fabric as fb

    fabric = bed.fabrics[0].name
    hosts = ", ".join(f'"{n.name}"' for n in bed.nodes)
    variants = (f'[defaults]\nstack = "openmpi"\ntransport = "shm+tcp"\ninterface = '
                f'"{fabric}"\nppn = 1\nhosts = [{hosts}]\n\n[variants.ompi]\n'
                f'sweep = {{ nodes = {nodes} }}\n')
    groups = ('[benchmarks.coll]\nbenchmarks = ["Allreduce"]\nsizes = "8,64K,1M"\n'
              f'options = {{ max_time = {0.1 if quick else 0.3} }}\n')
    res, _c, db = fb.run_campaign(bed, _campaign(f"bench-scaling-{label}", variants, groups,
                                                 2 if quick else 3), work / f"scaling-{label}",
                                  timeout=1800)
    if not res.ok:
        print(f"   scaling campaign failed (exit {res.returncode}): {res.stderr_tail(5)}")
    return fb.estimates(db)


def packed(bed, work: Path, quick: bool) -> dict:
    """2 ranks on one node with 2 CPUs: shared memory (the placement 'all cores of a node')."""
    from mpibench import fabric as fb

    variants = ('[defaults]\nstack = "openmpi"\ntransport = "shm+tcp"\nnp = 2\nppn = 2\n'
                f'hosts = ["{bed.nodes[0].name}"]\n\n[variants.packed]\n')
    groups = ('[benchmarks.p]\nbenchmarks = ["PingPong", "Allreduce"]\nsizes = "0,8,64K,1M,4M"'
              f'\noptions = {{ max_time = {0.1 if quick else 0.3} }}\n')
    res, _c, db = fb.run_campaign(bed, _campaign("bench-packed", variants, groups,
                                                 2 if quick else 3), work / "packed",
                                  timeout=1800)
    if not res.ok:
        print(f"   packed campaign failed (exit {res.returncode}): {res.stderr_tail(5)}")
    return fb.estimates(db)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and launches (for "
                    "make bench): about a minute")
    ap.add_argument("--keep", metavar="DIR", help="work directory to keep (stores, runs)")
    args = ap.parse_args(argv)
    from mpibench.testbed import FabricSpec, Testbed, TestbedUnavailable, preflight

    try:
        caps = preflight()
    except TestbedUnavailable as exc:
        print(f"skipped: no testbed on this machine ({exc})")
        return 0
    work = Path(args.keep or tempfile.mkdtemp(prefix="mpibench-bench-fabric-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    netem = bool(getattr(caps, "netem", False))
    delay = 50.0 if netem else 0.0
    fabrics = [FabricSpec("fast", 4 * 10**9, delay), FabricSpec("slow", 10**9, delay)]
    t0 = time.monotonic()
    bed = Testbed.start(work / "bed2", nodes=2, fabrics=fabrics)
    print(f"testbed: 2 nodes, fast 4gbit, slow 1gbit"
          f"{', one-way delay 50 us each' if netem else ' (no netem here: no delay)'}; "
          f"started in {time.monotonic() - t0:.1f} s; work directory {work}")
    try:
        fabrics_vs_configured(bed, work, args.quick)
        spread = scaling(bed, work, args.quick, "2", [1, 2])
    finally:
        bed.stop()
    bed1 = Testbed.start(work / "bed1", nodes=1, fabrics=fabrics[:1])
    try:
        pk = packed(bed1, work, args.quick)
    finally:
        bed1.stop()
    four = {}
    if not args.quick:
        bed4 = Testbed.start(work / "bed4", nodes=4, fabrics=fabrics[:1])
        try:
            four = scaling(bed4, work, args.quick, "4", [4])
        finally:
            bed4.stop()
    from mpibench import fabric as fb

    fab = fb.estimates(work / "fabrics" / "fabric.db")
    print("\n3. Shared memory inside a node vs the network between nodes (Open MPI, 2 ranks)")
    rows = []
    for bench, size in (("PingPong", 0), ("PingPong", 1 << 20), ("PingPong", 4 << 20),
                        ("Allreduce", 8), ("Allreduce", 65536), ("Allreduce", 1 << 20)):
        shm = pk.get(("packed", bench, size))
        net = fab.get(("openmpi-fast", bench, size)) or spread.get(
            ("ompi[nodes=2]", bench, size))
        rows.append((bench, size, _fmt(shm and shm[0]), _fmt(net and net[0]),
                     _fmt(net[0] / shm[0] if shm and net else None, ".3g")))
    _table(("benchmark", "size", "packed: 1 node x 2 ranks (us)",
            "spread: 2 nodes x 1 rank, fast (us)", "spread/packed"), rows)
    print("   placement: 'all cores' = both ranks on one 2-CPU node (shared memory), 'spread'"
          " = one rank on each of two 1-CPU nodes over fast (4gbit); physics says packed is "
          "faster while the network is the bottleneck. Half the cores of a node vs all of "
          "them at the same node count needs >= 4 CPUs (2 nodes x 2): not on this machine.")
    print("\n4. Node scaling: Allreduce, 1 rank per node, over fast (us)")
    rows = []
    for size in (8, 65536, 1 << 20):
        one = spread.get(("ompi[nodes=1]", "Allreduce", size))
        two = spread.get(("ompi[nodes=2]", "Allreduce", size))
        f4 = four.get(("ompi[nodes=4]", "Allreduce", size))
        rows.append((size, _fmt(one and one[0]), _fmt(two and two[0]),
                     _fmt(f4 and f4[0]) if not args.quick else "(not with --quick)"))
    _table(("size", "1 node", "2 nodes", "4 nodes"), rows)
    print("   1 node = 1 rank (a local copy); 4 nodes share 2 CPUs two to one, so their "
          "times include CPU sharing, not only the network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
