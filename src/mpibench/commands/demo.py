"""`mpibench demo`: a short, real comparison on this machine (what `make demo` runs)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mpibench.benchmarks import parse_sizes
from mpibench.commands._common import Formatter, err_console
from mpibench.commands.run import core_options_from_args, print_tables, run_variants
from mpibench.execute import Variant

DESCRIPTION = """\
Runs two real comparisons with the embedded defaults and writes a Markdown report:
  1. Open MPI vs MPICH over shared memory (PingPong, Allreduce; np=2)
  2. Open MPI over shared memory (ob1+vader) vs TCP (ob1+tcp)
Each variant is launched 3 times, interleaved. Takes about two minutes on 2 cores."""


def register(sub) -> None:
    p = sub.add_parser("demo", help="run a short real comparison and write a Markdown report",
                       description=DESCRIPTION, formatter_class=Formatter)
    p.add_argument("--out", default="demo-results", help="directory for the store, raw runs "
                   "and report (default demo-results)")
    p.add_argument("--sizes", default="0:20", help="message sizes (default 0:20)")
    p.add_argument("--max-time", type=float, default=0.05,
                   help="time budget per size and launch in seconds (default 0.05)")
    p.add_argument("--repeats", type=int, default=3)
    p.set_defaults(func=run)


def run(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_sizes = len(parse_sizes(args.sizes))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    comparisons = [
        ("Open MPI vs MPICH over shared memory",
         [Variant("openmpi", "openmpi", "shm"), Variant("mpich", "mpich", "shm")]),
        ("Open MPI: shared memory vs TCP",
         [Variant("openmpi-shm", "openmpi", "shm"), Variant("openmpi-tcp", "openmpi", "tcp")]),
    ]
    sections = []
    rc = 0
    for i, (title, variants) in enumerate(comparisons, 1):
        err_console().rule(f"[bold]{i}. {title}")
        ns = argparse.Namespace(
            stack_prefix=[], stacks_file=None, target=None, max_time=args.max_time,
            iterations=None, timeout=30.0, no_validate=False, launch_timeout=None,
            repeats=args.repeats, db=str(out / "mpibench.db"), out=str(out / "runs" / f"c{i}"),
            baseline=None, format="terminal", markdown=str(out / f"comparison-{i}.md"),
        )
        groups, store_path = run_variants(ns, variants, ["PingPong", "Allreduce"], args.sizes,
                                          n_sizes, f"demo-{stamp}-{i}",
                                          opts=core_options_from_args(ns))
        try:
            print_tables(ns, store_path, groups, variants)
        except Exception as exc:  # keep going: the report says what failed
            err_console().print(f"[red]{exc}")
            rc = 1
        sections.append(f"## {i}. {title}\n\n" + Path(ns.markdown).read_text())
    report = out / "report.md"
    report.write_text(
        "# mpibench demo\n\n"
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}. PingPong and Allreduce at np=2, "
        f"sizes {args.sizes}, {args.repeats} interleaved launches per variant, "
        f"{args.max_time} s budget per size. Times in microseconds (median, 95% CI from "
        "order statistics); MB/s = 10^6 bytes/s.\n\n" + "\n\n".join(sections))
    err_console().print(f"\n[bold]Markdown report:[/] {report.resolve()}")
    return rc
