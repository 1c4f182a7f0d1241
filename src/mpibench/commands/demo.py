"""`mpibench demo`: a short, real comparison on this machine (what `make demo` runs)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from mpibench.benchmarks import parse_sizes
from mpibench.commands import _args
from mpibench.commands._common import Formatter, err_console
from mpibench.commands.run import core_options_from_args, print_tables, run_variants
from mpibench.errors import UsageError
from mpibench.execute import Variant
from mpibench.files import write_file

DESCRIPTION = """\
Runs three real comparisons with the embedded defaults and writes a Markdown report:
  1. Open MPI vs MPICH over shared memory (PingPong, Allreduce; np=2)
  2. Open MPI over shared memory (ob1+vader) vs TCP (ob1+tcp)
  3. A/A: Open MPI over shared memory under two names - the same stack, so any "difference"
     is launch-to-launch variation; mpibench must find none, where a test on samples pooled
     across launches calls many cells significant (both counts are printed)
  4. Where root and namespaces are available: Open MPI across a 2-node testbed
     (mpibench.testbed), fast (4 Gbit/s) vs slow (1 Gbit/s) fabric, PingPong and Allreduce,
     % of line rate against the configured rates; elsewhere one line says why it is skipped
Each variant is launched 3 times, interleaved. Takes about three minutes on 2 cores."""


def register(sub) -> None:
    p = sub.add_parser("demo", help="run a short real comparison and write a Markdown report",
                       description=DESCRIPTION, formatter_class=Formatter)
    p.add_argument("--out", default="demo-results", help="directory for the store, raw runs "
                   "and report (default demo-results)")
    p.add_argument("--sizes", default="0:20", help="message sizes (default 0:20)")
    p.add_argument("--max-time", type=_args.seconds, default=0.05,
                   help="time budget per size and launch in seconds (default 0.05)")
    p.add_argument("--repeats", type=_args.integer(1, 1000, "a launch count"), default=3)
    p.set_defaults(func=run)


def _namespace(args, out: Path, i: int) -> argparse.Namespace:
    """The `mpibench run` arguments of the demo's i-th comparison."""
    return argparse.Namespace(
        stack_prefix=[], stacks_file=None, target=None, max_time=args.max_time,
        iterations=None, timeout=30.0, no_validate=False, launch_timeout=None,
        repeats=args.repeats, db=str(out / "mpibench.db"), out=str(out / "runs" / f"c{i}"),
        baseline=None, format="terminal", markdown=str(out / f"comparison-{i}.md"),
    )


def run(args) -> int:
    n_sizes = len(parse_sizes(args.sizes))  # before anything is created
    out = Path(args.out)
    # the core options (--max-time against the demo's 30 s watchdog) before anything is
    # created or printed: one error line, no demo-results directory
    core_options_from_args(_namespace(args, out, 1))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it ({exc.strerror})") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    comparisons = [
        # like with like: Open MPI's mpirun binds 2 ranks to cores by default, Hydra binds
        # nothing (an unbound pair can share one CPU: docs/statistics.md, "Binding")
        ("Open MPI vs MPICH over shared memory",
         [Variant("openmpi", "openmpi", "shm"), Variant("mpich", "mpich", "shm", bind="core")]),
        ("Open MPI: shared memory vs TCP",
         [Variant("openmpi-shm", "openmpi", "shm"), Variant("openmpi-tcp", "openmpi", "tcp")]),
        ("A/A: the same Open MPI over shared memory under two names",
         [Variant("openmpi-a", "openmpi", "shm"), Variant("openmpi-b", "openmpi", "shm")]),
    ]
    sections = []
    rc = 0
    for i, (title, variants) in enumerate(comparisons, 1):
        err_console().rule(f"[bold]{i}. {title}")
        ns = _namespace(args, out, i)
        sets, store_path = run_variants(ns, variants, ["PingPong", "Allreduce"], args.sizes,
                                          n_sizes, f"demo-{stamp}-{i}",
                                          opts=core_options_from_args(ns))
        try:
            print_tables(ns, store_path, sets, variants)
        except Exception as exc:  # keep going: the report says what failed
            err_console().print(f"[red]{exc}")
            rc = 1
        text = f"## {i}. {title}\n\n" + Path(ns.markdown).read_text()
        if title.startswith("A/A"):
            line = aa_summary(store_path, sets)
            err_console().print(f"[bold]{line}")
            text += "\n\n" + line
        sections.append(text)
    err_console().rule("[bold]4. Fabrics: fast vs slow across a 2-node testbed")
    text, frc = fabric_comparison(args, out)
    rc = rc or frc
    sections.append("## 4. Fabrics: fast vs slow across a 2-node testbed\n\n" + text)
    report = out / "report.md"
    write_file(report,
        "# mpibench demo\n\n"
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}. PingPong and Allreduce at np=2, "
        f"sizes {args.sizes}, {args.repeats} interleaved launches per variant, "
        f"{args.max_time} s budget per size. Times in microseconds: the geometric mean of "
        "the launch medians ± 95% CI from the spread between launches (a launch, one "
        "mpirun, is the unit of replication); gains tested with Welch t on the log launch "
        "medians, Holm-corrected; MB/s = 10^6 bytes/s.\n\n" + "\n\n".join(sections))
    err_console().print(f"\n[bold]Markdown report:[/] {report.resolve()}")
    return rc


def aa_summary(store_path, sets: dict[str, list[str]]) -> str:
    """One sentence for the A/A comparison: significant cells with the launch-level test
    against a Mann-Whitney test on samples pooled across launches (the model mpibench used
    to apply), both Holm-corrected over the same cells."""
    import numpy as np

    from mpibench import stats
    from mpibench.report.judge import compare_groups
    from mpibench.store import Store

    names = list(sets)
    with Store(store_path) as store:
        g = {n: sets[n] for n in names}
        cmp = compare_groups(store, g, names[0], equivalence=AA_MARGIN)
    cand = names[1]
    rows = [r for r in cmp.rows if r.deltas[cand].gain is not None]
    ours = sum(r.deltas[cand].significant for r in rows)
    pooled = stats.holm([stats.mann_whitney(r.cells[names[0]].samples,
                                            r.cells[cand].samples) for r in rows])
    naive = int((np.asarray(pooled) <= 0.05).sum())
    launches = cmp.run_counts
    equiv = sum(r.deltas[cand].equivalent for r in rows)
    kind = cmp.outcomes.get(cand)
    said = (f"equivalent within ±{100 * AA_MARGIN:g}% overall (TOST)" if kind == "equivalent"
            else f"{kind}, not shown equivalent within ±{100 * AA_MARGIN:g}% (more launches "
            "would narrow the CI)")
    return (f"A/A check: {ours} of {len(rows)} cells significant with the launch-level test "
            f"({launches.get(names[0], 0)}+{launches.get(cand, 0)} launches, t on log "
            f"launch medians, sizes pooled, Holm), {equiv} of {len(rows)} cells equivalent "
            f"within ±{100 * AA_MARGIN:g}%, verdict: {said}; a test on samples pooled "
            f"across launches (Mann-Whitney, Holm) would call {naive} of {len(rows)} "
            "significant.")


# The margin the A/A section tests equivalence within: "the same" is only said with one.
AA_MARGIN = 0.05


FABRICS = (("fast", 4 * 10**9), ("slow", 10**9))


def fabric_comparison(args, out: Path) -> tuple[str, int]:
    """Open MPI over a 2-node testbed's fast and slow fabric (one rank per node, each fabric
    pinned by its interface and verified by the nodes' byte counters): the comparison, the
    line-rate table against the configured rates and measured vs the link's TCP payload
    rate. (Markdown, exit status); one line instead where no testbed can run here."""
    from mpibench import fabric as fb
    from mpibench.report.compare_view import render
    from mpibench.report.judge import compare_groups
    from mpibench.report.linerate import line_rate_table
    from mpibench.report.render import render_table
    from mpibench.store import Store
    from mpibench.testbed import FabricSpec, Testbed, TestbedUnavailable, preflight

    try:
        preflight()
    except TestbedUnavailable as exc:
        line = f"skipped: no testbed on this machine ({exc})"
        err_console().print(line)
        return line, 0
    work = out / "fabrics"
    bed = Testbed.start(work / "testbed", nodes=2,
                        fabrics=[FabricSpec(n, r) for n, r in FABRICS])
    try:
        # one large size for the bandwidth: a shaper's token bucket (about 96 KiB here)
        # lets a smaller message through at memory speed, above the link's rate
        text = fb.fabric_campaign(bed, f"demo-fabrics-{time.strftime('%Y%m%d-%H%M%S')}",
                                  benchmarks=("PingPong", "Allreduce"), sizes="0,1K,4M",
                                  repeats=args.repeats, max_time=args.max_time)
        res, _camp, db = fb.run_campaign(bed, text, work, timeout=900)
        figs = fb.figures(bed, db)
    finally:
        bed.stop()
    if not res.ok:
        err_console().print(f"[red]fabric campaign failed (exit {res.returncode}): "
                            f"{res.stderr_tail(5)}")
    with Store(db) as store:
        sets: dict[str, list[str]] = {}
        for r in store.runs():
            sets.setdefault(r["variant"], []).append(r["id"])
        if len(sets) < 2:
            return "the fabric campaign did not finish: " + res.stderr_tail(3), 1
        cmp = compare_groups(store, sets, "openmpi-slow")
        lr = line_rate_table(store, sets)
        print(render(cmp, "terminal"))
        print(render_table(lr, "terminal"))
        md = render(cmp, "markdown") + "\n\n" + render_table(lr, "markdown")
    lines = ["measured vs configured (PingPong, largest size; expected = rate / 8 x TCP "
             "payload efficiency at MTU 1500, mpibench.linkmodel):"]
    for f in figs:
        lines.append(f"  {f.variant}: {f.mbps or 0:.1f} MB/s of {f.expected.mbps:.1f} "
                     f"expected ({(f.ratio or 0) * 100:.0f}%), {f.percent_of_line_rate or 0:.1f}% "
                     f"of its {f.expected.line_rate} line rate; "
                     f"{(f.interface_actual or '?').split('; ', 1)[-1].rstrip(']')}")
    lines.append("  (each node has one CPU, which also does the work a NIC would: busy-polling "
                 "ranks and other load keep the figures below the link; docs/testbed.md)")
    for line in lines:
        err_console().print(line)
    return md + "\n\n" + "\n".join(lines), 0
