"""python -m mpibench.testbed start|stop|status|exec DIR ... (see docs/testbed.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from mpibench.errors import MpibenchError, UsageError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mpibench.testbed",
        description="A cluster in a box: nodes as namespaces (own hostname, IPs, CPUs, "
                    "/dev/shm), fabrics as tc-shaped bridges, Slurm across the nodes. "
                    "Needs root. Writes only under DIR. See docs/testbed.md.")
    sub = p.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("start", help="create and start a testbed in DIR")
    s.add_argument("dir", metavar="DIR")
    s.add_argument("--nodes", type=int, default=2, help="number of nodes tn1..tnN (default 2)")
    s.add_argument("--fabric", action="append", default=[], metavar="NAME:RATE",
                   help="a shaped network, e.g. fast:4gbit (repeatable; the interface "
                        "inside each node is called NAME)")
    s.add_argument("--delay", action="append", default=[], metavar="NAME=DELAY",
                   help="one-way delay on a fabric, e.g. fast=50us (needs netem in the "
                        "kernel; recorded as not applied otherwise)")
    s.add_argument("--cpus-per-node", type=int, metavar="N",
                   help="CPUs per node (default: an equal, disjoint share of this machine's; "
                        "more makes nodes share CPUs, which status says)")
    s.add_argument("--no-slurm", action="store_true",
                   help="do not start Slurm (default: start munged, slurmctld and one slurmd "
                        "per node when Slurm is installed)")
    s.add_argument("--timeout", type=float, default=90, help="seconds to wait (default 90)")
    t = sub.add_parser("stop", help="stop everything the testbed in DIR started, remove "
                                    "its namespaces, bridges and cgroups")
    t.add_argument("dir", metavar="DIR")
    st = sub.add_parser("status", help="describe the testbed in DIR")
    st.add_argument("dir", metavar="DIR")
    st.add_argument("--json", action="store_true", help="the recorded state, as JSON")
    sub.add_parser("clean", help="stop and remove testbeds whose directory was deleted "
                                 "while they ran (found by their cgroups)")
    e = sub.add_parser("exec", help="run a command inside a node: exec DIR NODE -- CMD...")
    e.add_argument("dir", metavar="DIR")
    e.add_argument("node", metavar="NODE")
    e.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from mpibench.testbed import Testbed, parse_fabrics

    try:
        if args.verb == "start":
            fabrics = parse_fabrics(args.fabric, args.delay)
            t0 = time.monotonic()
            bed = Testbed.start(args.dir, nodes=args.nodes, fabrics=fabrics,
                                slurm=False if args.no_slurm else None,
                                cpus_per_node=args.cpus_per_node, timeout=args.timeout)
            print(bed.describe())
            print(f"started in {time.monotonic() - t0:.1f} s; stop with: "
                  f"python -m mpibench.testbed stop {bed.root}")
            for f in bed.fabrics:
                if f.delay_us and not f.delay_applied:
                    print(f"warning: fabric {f.name}: delay {f.delay_us:g} us NOT applied "
                          "(this kernel has no netem)", file=sys.stderr)
            return 0
        if args.verb == "clean":
            from mpibench.testbed.bed import clean_orphans

            gone = clean_orphans()
            print(f"removed {len(gone)} orphaned testbed(s)" +
                  (f": {', '.join(gone)}" if gone else ""))
            return 0
        bed = Testbed.load(args.dir)
        if args.verb == "stop":
            for note in bed.stop():
                print(f"note: {note}", file=sys.stderr)
            print(f"stopped the testbed in {bed.root}")
            return 0
        if args.verb == "status":
            print(json.dumps(bed.to_json(), indent=1) if args.json else bed.describe())
            return 0 if bed.running() else 1
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            raise UsageError("exec: expected a command after NODE (exec DIR NODE -- CMD...)")
        argv2 = bed.argv(args.node, cmd)
        sys.stdout.flush()
        # replace this process: the command's exit status and signals are the caller's
        os.execv(argv2[0], argv2)
    except KeyError as exc:
        print(f"testbed: error: {exc.args[0]}", file=sys.stderr)
        return 2
    except MpibenchError as exc:
        print(f"testbed: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
