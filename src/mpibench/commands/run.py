"""`mpibench run`: benchmark stacks/transports side by side and compare them."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from mpibench.benchmarks import canonical_benchmarks, parse_sizes
from mpibench.commands import _args
from mpibench.commands._common import (
    Formatter,
    add_db,
    add_stack_discovery,
    discover_from_args,
    err_console,
)
from mpibench.envnames import env_name_problem, mca_name_problem, value_problem
from mpibench.errors import BenchmarkFailure, UsageError
from mpibench.execute import (
    BOOL_CORE_OPTIONS,
    CORE_OPTIONS,
    Variant,
    check_core_options,
    preempt_cap,
    root_env_notice,
)
from mpibench.files import check_output, write_file
from mpibench.stacks.kinds import all_transport_names
from mpibench.store import Store
from mpibench.transports import interface_problem

EXAMPLES = """\
examples:
  # Open MPI vs MPICH, 2 ranks, 0 B .. 1 MiB, 3 interleaved launches each
  mpibench run PingPong Allreduce --stack openmpi --stack mpich --np 2 --sizes 0:20

  # one stack, shared memory vs TCP
  mpibench run PingPong --stack openmpi --transport shm --transport tcp

  # a tuning knob as its own variant (NAME=stack[:transport] with settings)
  mpibench run Allreduce --stack openmpi --variant eager=openmpi:shm \\
      --mca btl_vader_eager_limit 16384

Each stack x transport is a variant; every variant is launched --repeats times, interleaved.
Times are microseconds (median of batched samples, 95% CI from order statistics); MB/s is
10^6 bytes/s. Results go to the SQLite store (--db); raw output stays under --out."""


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expected K=V, got {text!r}")
    k, v = text.split("=", 1)
    problem = env_name_problem(k) or value_problem(v)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return k, v


def _add_measurement(g) -> None:
    """The core options `mpibench run` passes on (execute.CORE_OPTION_TABLE checks them)."""
    g.add_argument("--target", type=_args.number, metavar="PCT", help="stop a size when the 95%% CI of the median "
                   "is within +-PCT (core default 5)")
    g.add_argument("--max-time", type=_args.number, metavar="SEC", help="time budget per size in seconds "
                   "(core default 0.05)")
    g.add_argument("--iterations", type=_args.whole, metavar="N",
                   help="fixed iteration count instead of adaptive")
    g.add_argument("--timeout", type=_args.number, metavar="SEC",
                   help="watchdog per size in seconds (core default 60; must exceed "
                        "--max-time)")
    g.add_argument("--no-validate", action="store_true", help="skip the untimed validation pass")
    g.add_argument("--no-settle", action="store_true",
                   help="time a size without first running it until the MPI library stops "
                        "page-faulting its own buffers (the core's settling; launches stored "
                        "before it have the fingerprint of this)")
    g.add_argument("--iterations-volume", metavar="BYTES",
                   help="with --iterations: at most BYTES/size iterations per size (IMB: "
                        "--iterations 1000 --iterations-volume 40M)")
    g.add_argument("--root-shift", action="store_true",
                   help="rotate the root of rooted collectives every iteration")
    g.add_argument("--off-cache", action="store_true",
                   help="rotate through buffers larger than the last-level cache")
    g.add_argument("--mem-limit", metavar="BYTES",
                   help="per-rank buffer limit (512M, 2G); larger sizes are recorded as "
                        "skipped")
    g.add_argument("--thread-level", metavar="LEVEL",
                   help="MPI_Init_thread level: single (core default), funneled, "
                        "serialized, multiple")
    g.add_argument("--sync", metavar="MODE",
                   help="how samples start: auto (core default: a barrier per round of "
                        "samples for PingPong/PingPing/Uniband/Biband, per sample for the "
                        "rest), barrier (before every sample, the default before the core "
                        "changed: runs stored then pool only with this), window")
    g.add_argument("--per-call", action="store_true",
                   help="every sample is one call timed alone instead of a batch (for small "
                        "fixed counts: --iterations 10 --per-call gives mean(std) over 10 "
                        "calls; the first call is always reported apart)")
    g.add_argument("--futility", action="store_true",
                   help="stop a size early when its CI cannot reach --target in --max-time")
    g.add_argument("--accept-approximate", action="store_true",
                   help="stop a size once its CI is within --target after the minimum "
                        "samples even when the CI is approximate (stop reason approximate)")
    g.add_argument("--exclude-preempted", action="store_true",
                   help="keep samples during or next to which a rank was descheduled (an "
                        "involuntary context switch; Linux) out of each size's statistic, "
                        "counted as 'preempted'; a size may sample past --max-time up to "
                        "--preempted-max-time for clean samples (stop reason preempted)")
    g.add_argument("--preempted-max-time", type=_args.number, metavar="SEC",
                   help="with --exclude-preempted: the most one size may sample "
                        "(default 10 x --max-time)")
    g.add_argument("--launch-timeout", type=_args.number, metavar="SEC",
                   help="kill a launch after this many seconds (default: from the budgets)")


def register(sub) -> None:
    p = sub.add_parser("run", help="run core benchmarks on stacks/transports and compare",
                       description="Run mpibench-core benchmarks on one or more MPI stacks and "
                                   "transports, store the results, print per-variant tables "
                                   "and a comparison against the first variant.",
                       epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("benchmarks", nargs="+", metavar="BENCHMARK",
                   help="IMB names (PingPong, Allreduce, ...) or 'all'")
    p.add_argument("--stack", action="append", default=[], metavar="NAME",
                   help="stack to run (repeatable; see 'mpibench stacks'); default openmpi")
    p.add_argument("--transport", action="append", default=[], metavar="NAME",
                   help=f"transport preset ({', '.join(all_transport_names())}); repeatable: "
                        "each stack runs each transport")
    p.add_argument("--interface", action="append", default=[], metavar="IF",
                   help="network interface between nodes (eth-fast, ib0; comma list for "
                        "several), pinned with the stack's own settings (btl_tcp_if_include, "
                        "UCX_NET_DEVICES, FI_TCP_IFACE); repeatable: each one is a variant; "
                        "verification says which interface carried the traffic")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=STACK[:TRANSPORT]",
                   help="add a named variant; --env/--mca apply to named variants only when "
                        "any are given")
    p.add_argument("--np", type=_args.whole, default=2, help="MPI ranks (default 2)")
    p.add_argument("--sizes", default="0:20",
                   help="message sizes: log2 range MIN:MAX (0:20 = 0,1,2..1 MiB) or a list "
                        "0,8,1K,1M (default 0:20)")
    p.add_argument("--env", action="append", default=[], type=_kv, metavar="K=V",
                   help="environment variable for the ranks (repeatable)")
    p.add_argument("--mca", action="append", default=[], nargs=2, metavar=("K", "V"),
                   help="Open MPI MCA parameter (repeatable)")
    p.add_argument("--repeats", type=_args.count, default=3,
                   help="launches per variant, interleaved across variants (default 3)")
    p.add_argument("--baseline", help="variant to compare against (default: the first)")
    _add_measurement(p.add_argument_group("measurement (passed to mpibench-core)"))
    o = p.add_argument_group("output")
    add_db(o)
    o.add_argument("--out", metavar="DIR", help="raw run directories (default "
                   "./mpibench-runs/<name>)")
    o.add_argument("--name", help="name of this comparison in the store (default run-<time>); a name "
                   "used before gets this invocation's launches beside its earlier ones")
    o.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    o.add_argument("--format", choices=["terminal", "markdown", "csv", "json"],
                   default="terminal", help="format of the printed tables")
    add_stack_discovery(p)
    p.set_defaults(func=run)


def variants_from_args(args) -> list[Variant]:
    env = dict(args.env)
    mca = {k: v for k, v in args.mca}
    for k, v in mca.items():
        problem = mca_name_problem(k) or value_problem(v)
        if problem:
            raise UsageError(f"--mca {k!r}: {problem}")
    interfaces = list(getattr(args, "interface", None) or [])
    for iface in interfaces:
        problem = interface_problem(iface)
        if problem:
            raise UsageError(f"--interface {iface!r}: {problem}")
    variants: list[Variant] = []
    for spec in args.variant:
        if "=" not in spec:
            raise UsageError(f"--variant {spec!r}: expected NAME=STACK[:TRANSPORT]")
        name, rest = spec.split("=", 1)
        stack, _, transport = rest.partition(":")
        if not name or not stack:
            raise UsageError(f"--variant {spec!r}: expected NAME=STACK[:TRANSPORT]")
        if len(interfaces) > 1:
            raise UsageError("--interface: give one with --variant (each named variant is "
                             "one configuration), or several with --stack/--transport")
        variants.append(Variant(name=name, stack=stack, transport=transport or None,
                                env=env, mca=mca, np=args.np,
                                interface=interfaces[0] if interfaces else None))
    if args.variant and not args.stack:
        return variants
    base_env, base_mca = ({}, {}) if args.variant else (env, mca)
    stacks = args.stack or ["openmpi"]
    transports = args.transport or [None]
    for s in stacks:
        for t in transports:
            for iface in interfaces or [None]:
                name = f"{s}-{t}" if len(transports) > 1 else s
                if len(interfaces) > 1:
                    name = f"{name}-{iface}"
                variants.append(Variant(name=name, stack=s, transport=t, env=base_env,
                                        mca=base_mca, np=args.np, interface=iface))
    return variants


def core_options_from_args(args) -> dict:
    """The core options the flags ask for, checked as the core would check them (exit 2 with
    one line here, not a failed launch per variant later). Flags a caller's namespace lacks
    (`mpibench demo` builds its own) are not set."""
    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    def fail(name: str, problem: str, expected: str):
        raise UsageError(f"{flag(name)}: {problem}; expected {expected}")

    opts = {k: getattr(args, k, None) for k in CORE_OPTIONS}
    opts.update({k: True if opts[k] else None for k in BOOL_CORE_OPTIONS})
    return check_core_options(opts, fail, spell=flag)


def default_launch_timeout(benchmarks: list[str], n_sizes: int, opts: dict) -> float:
    per_size = (preempt_cap(opts) or opts.get("max_time") or 1.0) + 2.0
    if opts.get("iterations"):  # --max-time does not apply; the watchdog bounds each size
        per_size = (opts.get("timeout") or 60.0) + 1.0
    elif opts.get("timeout"):
        per_size = min(per_size, opts["timeout"] + 1.0)
    return 120.0 + len(benchmarks) * n_sizes * per_size


def run(args) -> int:
    benchmarks = canonical_benchmarks(args.benchmarks)
    sizes = parse_sizes(args.sizes)
    if args.np < 1:
        raise UsageError(f"--np must be >= 1, got {args.np}")
    opts = core_options_from_args(args)  # before stack discovery, builds or the store
    variants = variants_from_args(args)
    check_run_outputs(args)
    names = [v.name for v in variants]
    if args.baseline is not None and args.baseline not in names:
        # used to be found only when the tables were printed, after every launch
        raise UsageError(f"--baseline {args.baseline!r}: not one of this run's variants "
                         f"({', '.join(names)})")
    lt = getattr(args, "launch_timeout", None)
    if lt is not None and not 0 < lt < 366 * 86400:  # nan, inf, 0, negative
        raise UsageError(f"--launch-timeout {lt!r}: expected a finite number of seconds > 0")
    sets, store_path = run_variants(
        args, variants, benchmarks, args.sizes, n_sizes=len(sizes),
        name=args.name or time.strftime("run-%Y%m%d-%H%M%S"), opts=opts)
    return print_tables(args, store_path, sets, variants)


def check_run_outputs(args) -> None:
    """--markdown, --out and --db checked before anything launches (they used to fail after
    every launch had run)."""
    if getattr(args, "markdown", None):
        check_output(args.markdown, "--markdown")
    if getattr(args, "out", None):
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out}: not a directory; expected a directory for the "
                             "run directories")
        anc = out
        while not anc.exists() and anc != anc.parent:
            anc = anc.parent
        if not anc.is_dir() or not os.access(anc, os.W_OK):
            raise UsageError(f"--out {out}: cannot create it ({anc} is not a writable "
                             "directory)")
    if getattr(args, "db", None):
        db = Path(args.db)
        if db.is_dir():
            raise UsageError(f"--db {db}: is a directory, expected an SQLite file")


def run_variants(args, variants, benchmarks, sizes_spec, n_sizes, name, *, opts: dict,
                 auto=None, equivalence: float | None = None, machine_probe: str = "record"):
    """Run the variants as an in-memory campaign (campaign/adhoc.py) through the campaign
    runner: transports verified, crash- and Ctrl-C-safe, resumed by the same command.
    `opts`: the checked core options, core_options_from_args(args). `auto`/`equivalence`:
    a staged rule (repeats = "decide" and its margin, `mpibench demo`'s A/A); the sets then
    hold the launches that ran, not those the rule left pending. `machine_probe`: the
    campaign's machine-state probe mode ("record", "gate", "off")."""
    from mpibench.campaign.adhoc import adhoc_campaign, check_variants, instance_for
    from mpibench.campaign.plan import expand
    from mpibench.campaign.runner import CampaignRunner

    con = err_console()
    found = discover_from_args(args)
    timeout = args.launch_timeout or default_launch_timeout(benchmarks, n_sizes, opts)
    stacks = check_variants(variants, found)
    run_root = Path(args.out) if args.out else Path("mpibench-runs") / name
    spec = adhoc_campaign(name, variants, benchmarks, sizes_spec, opts, args.repeats, timeout,
                          run_root, instance="", auto=auto, equivalence=equivalence,
                          machine_probe=machine_probe)
    # the runner's build notices print as they happen; its notes during the launches wait
    # until the progress bar is gone
    notes: list[str] = []
    runner = CampaignRunner(spec, None, found, log=con.print)
    runner.check()  # the core builds before the store is touched
    runner.log = notes.append
    notice = root_env_notice() if any(s.kind_class.root_env for s in stacks.values()) \
        else None
    if notice:
        con.print(notice)
    store_path = Path(args.db)
    with Store(store_path) as store, Progress(
        TextColumn("[bold]{task.description}"), BarColumn(),
        TextColumn("{task.completed}/{task.total} launches"), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(), console=con, transient=True,
    ) as bar:
        spec.instance = instance_for(store, name, run_root)
        cells = expand(spec)
        task = bar.add_task("starting", total=len(cells))

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, description=what)

        runner.store, runner.progress = store, progress
        try:
            summary = runner.run(checked=True)
        except KeyboardInterrupt:
            bar.stop()
            con.print(f"interrupted: the launches not finished are left pending; the same "
                      f"command with --name {name} resumes them")
            raise
    for msg in notes:
        con.print(msg)
    if summary.recovered or summary.skipped:
        con.print(f"resumed comparison {name!r}: {summary.skipped} launch(es) were already "
                  "done")
    sets: dict[str, list[str]] = {v.name: [] for v in variants}
    with Store(store_path) as store:
        for cell in cells:
            if auto is None or (store.run(cell.id) or {"status": "pending"})["status"] \
                    != "pending":
                sets[cell.variant.name].append(cell.id)
    con.print(f"results: {store_path} (comparison {name!r}); raw output: {run_root}/")
    return sets, store_path


def print_tables(args, store_path: Path, sets: dict[str, list[str]],
                 variants: list[Variant]) -> int:
    from mpibench.commands.compare import equivalence_margin
    from mpibench.report.compare_view import render
    from mpibench.report.judge import compare_groups
    from mpibench.report.results import render_results

    baseline = args.baseline or variants[0].name
    if baseline not in sets:
        raise UsageError(f"--baseline {baseline!r} is not one of the variants: "
                         f"{', '.join(sets)}")
    md_parts: list[str] = []
    json_doc: dict = {"variants": {}, "comparison": None}
    failed = 0
    with Store(store_path) as store:
        for v in variants:
            text = render_results(store, sets[v.name], args.format, title=v.name)
            if args.format == "json":
                json_doc["variants"][v.name] = json.loads(text)
            else:
                print(text)
            md_parts.append(render_results(store, sets[v.name], "markdown", title=v.name))
            failed += sum(1 for rid in sets[v.name]
                          if store.run(rid)["status"] != "done")
        if len(sets) > 1:
            # the margin `mpibench compare` takes from the campaign (the demo's A/A: ±5%),
            # so this table's verdict and cells say what compare says on the same store
            cmp = compare_groups(store, sets, baseline,
                                 equivalence=equivalence_margin(store, sets, None))
            if args.format == "json":
                json_doc["comparison"] = json.loads(render(cmp, "json"))
            else:
                print(render(cmp, args.format))
            md_parts.append(render(cmp, "markdown"))
    if args.format == "json":
        print(json.dumps(json_doc, indent=2))
    if args.markdown:
        write_file(args.markdown, "\n\n".join(md_parts) + "\n")
        err_console().print(f"markdown report: {args.markdown}")
    if failed:
        raise BenchmarkFailure(f"{failed} launch(es) failed or timed out; the reason and "
                               "stderr tail are stored with each run, raw output is under "
                               "the run directories")
    return 0
