"""`mpibench demo`: a short, real comparison on this machine (what `make demo` runs)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from mpibench.benchmarks import parse_sizes
from mpibench.commands import _args
from mpibench.commands._common import Formatter, err_console
from mpibench.commands.run import core_options_from_args, print_tables, run_variants
from mpibench.errors import UsageError
from mpibench.execute import Variant
from mpibench.files import write_file
from mpibench.units import fmt_size

DESCRIPTION = """\
Runs real comparisons with the embedded defaults and writes a Markdown report:
  1. Open MPI vs MPICH over shared memory (PingPong, Allreduce; np=2)
  2. Open MPI over shared memory (ob1+vader) vs TCP (ob1+tcp)
  3. A/A: Open MPI over shared memory under two names - the same stack, so any "difference"
     is launch-to-launch variation; the question is whether mpibench can say "equivalent
     within ±5%" (a margin fixed in advance) as a finding. Both sides bind their ranks to
     cores and the machine-state gate sets aside a launch off the campaign's reference
     state and runs it again (machine_probe = "gate"); it measures its own sizes
     (--aa-sizes, default 8,1K,16K,256K: one per shared-memory protocol regime, not the
     no-op 0-2 B Allreduce) with samples next to a descheduled rank left out of each
     launch's median (exclude_preempted), and runs as repeats = "decide" with the ±5%
     margin (README, "Launches where they decide"): looks at 3, 6, 9, ... interleaved
     launches per variant up to --aa-max; after each look only the sizes whose cells are
     not decided yet (significant, or equivalent within ±5% by TOST) get more launches.
     It prints per cell how many launches decided it and how (or that it was still
     undecided at the maximum, with the interval TOST checked), per benchmark and overall
     whether all its sizes together (aggregated per launch) are equivalent within ±5%, the
     verdict, and how many cells a test on samples pooled across launches would call
     significant; for the cells still undecided, the launches per variant the budget
     planner plans for ±5% equivalence from the launches' spread
     (stats.budget.cell_rounds: 80% power, its median and largest per benchmark)
  4. Where root and namespaces are available: Open MPI across a 2-node testbed
     (mpibench.testbed), fast (4 Gbit/s) vs slow (1 Gbit/s) fabric, PingPong and Allreduce,
     % of line rate against the configured rates; elsewhere one line says why it is skipped
Comparisons 1, 2 and 4 launch each variant --repeats times, interleaved (every comparison's
rounds alternate which variant goes first: a b, b a, ...; an A/A whose second name always ran
second could not tell the names from the position). Takes about two to
three minutes on 2 cores (the A/A's share, 40-70 s here, depends on how soon its cells
decide and how long the gate waits for the machine's state)."""

# The A/A's rule: repeats = { until = "decided", min = 3, step = 3, max = --aa-max } with
# campaign.equivalence = AA_MARGIN (campaign/auto_repeats.py, stats.sequential): looks
# before the last test at alpha x 0.2 shared between them, the last at alpha. On this 2-vCPU
# VM a gated launch's median moves by 7-15% (log sd) from launch to launch at a size, 5-10%
# in its mean over sizes, while its own CI is 1-3%: the spread is between launches, so the
# A/A spends its time on launches (few sizes, many rounds), not on samples.
AA_MIN, AA_STEP, AA_MAX = 3, 3, 24
# One size per shared-memory protocol regime (Open MPI vader: short inline, eager copy,
# fragmented/single-copy, bandwidth), away from the 4 KiB switch point; Allreduce of 0-2 B
# has nothing to reduce (a ~7-14 ns no-op path whose speed doubles with the CPU's state)
AA_SIZES = "8,1K,16K,256K"
# the A/A's core options beside --max-time: samples during or next to which a rank was
# descheduled stay out of a launch's median (with them kept, one 256 KiB PingPong launch of
# 12 had a median of 5991 us against 28-44 us, 3 of its 5 samples preempted); a size short
# of clean ones samples on for at most this long
AA_PREEMPTED_MAX_TIME = 0.25


def register(sub) -> None:
    p = sub.add_parser("demo", help="run a short real comparison and write a Markdown report",
                       description=DESCRIPTION, formatter_class=Formatter)
    p.add_argument("--out", default="demo-results", help="directory for the store, raw runs "
                   "and report (default demo-results)")
    p.add_argument("--sizes", default="0:20", help="message sizes of comparisons 1 and 2 (default 0:20; "
                   "the A/A has --aa-sizes, the testbed its own)")
    p.add_argument("--max-time", type=_args.seconds, default=0.05,
                   help="time budget per size and launch in seconds (default 0.05)")
    p.add_argument("--repeats", type=_args.integer(1, 1000, "a launch count"), default=3,
                   help="launches per variant of comparisons 1, 2 and 4 (default 3)")
    p.add_argument("--aa-max", type=_args.integer(AA_MIN, 1000, "a launch count"),
                   default=AA_MAX, help="most launches per variant of the A/A (3), whose "
                   f"looks come every {AA_STEP} launches from {AA_MIN} (default {AA_MAX})")
    p.add_argument("--aa-sizes", default=AA_SIZES, help="message sizes of the A/A (3) "
                   f"(default {AA_SIZES})")
    p.set_defaults(func=run)


def _namespace(args, out: Path, i: int, stamp: str = "") -> argparse.Namespace:
    """The `mpibench run` arguments of the demo's i-th comparison of the invocation stamp.
    Each invocation's campaigns get their own run directories (runs/STAMP/cI): a campaign's
    directory holds its machine-state history (campaign/machine_probe.py), and the A/A's
    gate must judge its launches against the state this run's launches find, not the
    majority an earlier demo left there within the history's 24 h (a quiet morning's ~100 ns
    set every launch of a loaded afternoon's ~420 ns run aside twice)."""
    runs = out / "runs" / stamp if stamp else out / "runs"
    return argparse.Namespace(
        stack_prefix=[], stacks_file=None, target=None, max_time=args.max_time,
        iterations=None, timeout=30.0, no_validate=False, launch_timeout=None,
        repeats=args.repeats, db=str(out / "mpibench.db"), out=str(runs / f"c{i}"),
        baseline=None, format="terminal", markdown=str(out / f"comparison-{i}.md"),
    )


def claim_stamp(out: Path, now: str | None = None) -> str:
    """This invocation's stamp (the second it started, `now` for tests), its run directory
    out/runs/STAMP made here: two demos started in the same second into one --out take
    STAMP and STAMP-2 (..., each its own directory, machine-state history and campaign
    names), never one directory between them."""
    base = now or time.strftime("%Y%m%d-%H%M%S")
    runs = out / "runs"
    try:
        runs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create {runs} ({exc.strerror})") from None
    n = 1
    while True:
        stamp = base if n == 1 else f"{base}-{n}"
        try:
            (runs / stamp).mkdir()
            return stamp
        except FileExistsError:
            n += 1
        except OSError as exc:
            raise UsageError(f"--out {out}: cannot create {runs / stamp} ({exc.strerror})"
                             ) from None


def run(args) -> int:
    n_sizes = len(parse_sizes(args.sizes))  # before anything is created
    try:
        parse_sizes(args.aa_sizes)
    except UsageError as exc:
        raise UsageError(f"--aa-sizes: {exc}") from None
    out = Path(args.out)
    # the core options (--max-time against the demo's 30 s watchdog) before anything is
    # created or printed: one error line, no demo-results directory
    core_options_from_args(_namespace(args, out, 1))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it ({exc.strerror})") from None
    stamp = claim_stamp(out)
    comparisons = [
        # like with like: Open MPI's mpirun binds 2 ranks to cores by default, Hydra binds
        # nothing (an unbound pair can share one CPU: docs/statistics.md, "Binding")
        ("Open MPI vs MPICH over shared memory",
         [Variant("openmpi", "openmpi", "shm"), Variant("mpich", "mpich", "shm", bind="core")]),
        ("Open MPI: shared memory vs TCP",
         [Variant("openmpi-shm", "openmpi", "shm"), Variant("openmpi-tcp", "openmpi", "tcp")]),
        ("A/A: the same Open MPI over shared memory under two names", aa_variants()),
    ]
    sections = []
    rc = 0
    for i, (title, variants) in enumerate(comparisons, 1):
        text, crc = comparison(args, out, i, title, variants, f"demo-{stamp}-{i}",
                               n_sizes, aa=title.startswith("A/A"), stamp=stamp)
        sections.append(text)
        rc = rc or crc
    err_console().rule("[bold]4. Fabrics: fast vs slow across a 2-node testbed")
    text, frc = fabric_comparison(args, out)
    rc = rc or frc
    sections.append("## 4. Fabrics: fast vs slow across a 2-node testbed\n\n" + text)
    report = out / "report.md"
    write_file(report,
        "# mpibench demo\n\n"
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}. PingPong and Allreduce at np=2, "
        f"sizes {args.sizes}, {args.repeats} interleaved launches per variant (the A/A: "
        f"sizes {args.aa_sizes}, {AA_MIN} to {args.aa_max}, until each cell is decided), "
        f"{args.max_time} s budget per size. Times in microseconds: the geometric mean of "
        "the launch medians ± 95% CI from the spread between launches (a launch, one "
        "mpirun, is the unit of replication); gains tested with a t test on the log launch "
        "medians (paired by round, a benchmark's sizes pooling their between-launch spread; "
        "each table's caption says how), Holm-adjusted over every p a table shows; MB/s = "
        "10^6 bytes/s.\n\n" + "\n\n".join(sections))
    err_console().print(f"\n[bold]Markdown report:[/] {report.resolve()}")
    return rc


def comparison(args, out: Path, i: int, title: str, variants: list[Variant], name: str,
               n_sizes: int, aa: bool = False, stamp: str = "") -> tuple[str, int]:
    """The demo's i-th comparison run, printed and as Markdown (text, exit status); the A/A
    (aa) runs its own sizes (args.aa_sizes) under repeats = "decide" with the ±AA_MARGIN
    equivalence margin, the machine-state gate and aa_options."""
    from mpibench.campaign.auto_repeats import AutoRepeats

    err_console().rule(f"[bold]{i}. {title}")
    ns = _namespace(args, out, i, stamp)
    opts = core_options_from_args(ns)
    sizes = args.sizes
    if aa:
        sizes, n_sizes, opts = args.aa_sizes, len(parse_sizes(args.aa_sizes)), aa_options(opts)
    rule = (AutoRepeats(AA_MIN, args.aa_max, until="decided", step=AA_STEP) if aa
            else None)
    sets, store_path = run_variants(ns, variants, ["PingPong", "Allreduce"], sizes,
                                    n_sizes, name, opts=opts, auto=rule,
                                    equivalence=AA_MARGIN if aa else None,
                                    machine_probe="gate" if aa else "record")
    rc = 0
    try:
        print_tables(ns, store_path, sets, variants)
    except Exception as exc:  # keep going: the report says what failed
        err_console().print(f"[red]{exc}")
        rc = 1
    text = f"## {i}. {title}\n\n" + Path(ns.markdown).read_text()
    if aa:
        lines = aa_summary(store_path, sets)
        for line in lines:
            err_console().print(line, markup=False, highlight=False)
        text += "\n\n" + markdown_lines(lines)
    return text, rc


def aa_variants() -> list[Variant]:
    """The A/A's two names for one stack: Open MPI over shared memory, ranks bound to
    cores (stated, not left to the launcher's default), so the machine-state gate
    applies to both sides (campaign/machine_probe.py)."""
    return [Variant("openmpi-a", "openmpi", "shm", bind="core"),
            Variant("openmpi-b", "openmpi", "shm", bind="core")]


def aa_options(opts: Mapping) -> dict:
    """The A/A's core options: the demo's (--max-time), with preempted samples left out of
    each launch's median, sampling on for at most AA_PREEMPTED_MAX_TIME (not below
    --max-time) where a size is short of clean ones."""
    mt = opts.get("max_time") or 0.0
    return {**opts, "exclude_preempted": True,
            "preempted_max_time": max(AA_PREEMPTED_MAX_TIME, mt)}


def markdown_lines(lines: list[str]) -> str:
    """The A/A's printed lines as Markdown: an indented line is an item of the list under
    the unindented line before it, which is a paragraph."""
    out: list[str] = []
    for line in lines:
        item = line.startswith("  ")
        if out and not (item and out[-1].startswith("- ")):
            out.append("")
        out.append("- " + line.strip() if item else line)
    return "\n".join(out)


def aa_summary(store_path, sets: dict[str, list[str]]) -> list[str]:
    """The A/A's lines: significant and equivalent cells with the launch-level test (the
    decide rule's decisions), the verdict, where each cell stopped (aa_stops), and the
    significant cells of a Mann-Whitney test on samples pooled across launches (the model
    mpibench used to apply), Holm-corrected over the same cells."""
    import numpy as np

    from mpibench import stats
    from mpibench.report.judge import compare_groups
    from mpibench.store import Store

    names = list(sets)
    with Store(store_path) as store:
        cmp = compare_groups(store, {n: sets[n] for n in names}, names[0],
                             equivalence=AA_MARGIN)
        stops = aa_stops(store, sets)
    cand = names[1]
    rows = [r for r in cmp.rows if r.deltas[cand].gain is not None]
    ours = sum(r.deltas[cand].significant for r in rows)
    pooled = stats.holm([stats.mann_whitney(r.cells[names[0]].samples,
                                            r.cells[cand].samples) for r in rows])
    naive = int((np.asarray(pooled) <= 0.05).sum())
    launches = cmp.run_counts
    equiv = sum(r.deltas[cand].equivalent for r in rows)
    kind = cmp.outcomes.get(cand)
    m = f"±{100 * AA_MARGIN:g}%"
    said = (f"equivalent within {m} overall (TOST)" if kind == "equivalent"
            else f"{kind}, not shown equivalent within {m}")
    return [f"A/A check: {ours} of {len(rows)} cells significant, {equiv} of {len(rows)} "
            f"equivalent within {m} (TOST), with the launch-level test (t on log launch "
            f"medians, sizes pooled, Holm over the table; repeats = \"decide\": "
            f"{launches.get(names[0], 0)}+{launches.get(cand, 0)} launches ran in all); "
            f"verdict: {said}; a test on samples pooled across launches (Mann-Whitney, "
            f"Holm) would call {naive} of {len(rows)} significant.",
            *equivalence_lines(cmp, cand, AA_MARGIN), *stops]


def equivalence_lines(cmp, cand: str, margin: float, alpha: float = 0.05) -> list[str]:
    """Per benchmark and overall (a report.judge Comparison's geomean tests and its overall
    test for cand, each aggregated per launch over the sizes): whether all the sizes
    together are equivalent within ±margin (TOST at alpha: its 1 - 2 alpha CI inside
    [1/(1+margin), 1+margin]), with the gain and that CI. Each line is its own TOST, the
    overall one the verdict's (report.judge), so the two never disagree; no correction
    across the lines is needed for the claim that all of them hold (an intersection-union
    test: each at alpha), and the header says a single line is read at its own level."""
    tests = [(f"{s.benchmark} ({s.rows} sizes)", s.test.get(cand)) for s in cmp.summaries]
    tests.append(("overall", cmp.overall.get(cand)))
    lines = []
    for what, t in tests:
        p = t.tost(margin) if t is not None else None
        if p is None:
            lines.append(f"  {what}: not tested (too few launches)")
            continue
        lo, hi = t.ci_at(1.0 - 2.0 * alpha)
        said = (f"equivalent within ±{100 * margin:g}%" if p <= alpha
                else f"not shown equivalent within ±{100 * margin:g}%")
        lines.append(f"  {what}: {said}: gain {t.gain:.3f}, {100 * (1 - 2 * alpha):g}% CI "
                     f"[{lo:.3f}, {hi:.3f}], TOST p={p:.3g} ({t.n_base}+{t.n_cand} launches)")
    return [f"A/A per benchmark and overall, all sizes together (aggregated per launch; "
            f"each line its own TOST at {alpha:g}, as the verdict's, not corrected across "
            f"the lines: 'all of them equivalent' needs every line at {alpha:g}):", *lines]


# The margin the A/A section tests equivalence within: "the same" is only said with one.
AA_MARGIN = 0.05


def aa_stops(store, sets: dict[str, list[str]]) -> list[str]:
    """Where the decide rule left each A/A cell (campaign/auto_repeats.decisions, the looks
    replayed from the stored launches, as `campaign status` does): per benchmark, the sizes
    decided significant or equivalent at each look (launches per variant) and the sizes
    still undecided at the rule's last look (the maximum, or where the launches ended),
    each with the interval TOST checked against the margin."""
    from mpibench.campaign import auto_repeats as ar
    from mpibench.store.report_queries import launch_cost_rows, run_campaign_variant

    ids = [rid for ids in sets.values() for rid in ids]
    cids = {cid for cid, _v in run_campaign_variant(store, ids).values()}
    if len(cids) != 1:
        return ["A/A stops: no single campaign holds these launches; nothing to replay"]
    cid = cids.pop()
    spec = json.loads(store.campaign(cid)["spec_json"])
    look, _cells = ar.decisions(store, cid, spec)
    if look is None:
        return ["A/A stops: no look was taken (no finished launches on both sides)"]
    design = ar.design_of(spec)
    rows = launch_cost_rows(store, ids)
    plan = equivalence_plan(rows, list(sets), look, design.margin, design.alpha)
    return stop_lines(look, design, plan) + plan_lines(plan, look, design,
                                                       round_seconds(rows))


def stop_lines(look, design, plan: Mapping[tuple, int | None] | None = None) -> list[str]:
    """aa_stops' lines from the rule's last look (a stats.sequential.Look whose keys end in
    a report CellKey) and its Design; plan: equivalence_plan's, whose launches each
    undecided cell is shown with."""
    groups: dict[tuple, list[str]] = {}
    for (*_rest, key), st in sorted(look.cells.items(),
                                    key=lambda kv: (kv[0][-1].benchmark, kv[0][-1].size or 0)):
        head = (key.benchmark, st.status.value, st.look)
        groups.setdefault(head, []).append(_stop_cell(key, st, plan or {}))
    looks = design.looks()
    levels = (f"interim looks at level {design.level(looks[0]):.2g}, the last at "
              f"{design.alpha:g}" if len(looks) > 1 else f"at level {design.alpha:g}")
    return [f"A/A stops (repeats = \"decide\": looks at {', '.join(map(str, looks))} "
            f"launches per variant, {levels}; a cell stops once significant or equivalent "
            f"within ±{100 * design.margin:g}% (TOST p <= the look's level); later launches "
            "measure only the sizes not yet decided):"] + [
        _stop_line(head, cells, design) for head, cells in groups.items()]


def _stop_cell(key, st, plan: Mapping[tuple, int | None]) -> str:
    """One cell of an aa_stops line: its size, and for a cell still undecided the
    interval TOST checked (the gain's 1 - 2 x level CI) against the margin and the
    launches per variant the equivalence plan names for it (plan, by (benchmark, size))."""
    size = fmt_size(key.size)
    if st.decided:
        return size
    bits = []
    if st.test is not None and st.test.tested:
        lo, hi = st.test.ci_at(1.0 - 2.0 * st.level)
        if lo is not None and hi is not None:
            bits.append(f"gain {st.gain:.3f}, {100 * (1 - 2 * st.level):g}% CI "
                        f"[{lo:.3f}, {hi:.3f}]")
    if (key.benchmark, key.size) in plan:
        bits.append(f"plan {_planned(plan[(key.benchmark, key.size)])}")
    return f"{size} ({'; '.join(bits)})" if bits else size


def _planned(n: int | None) -> str:
    """A cell's planned launches per variant as printed (None: out of reach)."""
    from mpibench.stats.budget import SEARCH_MAX

    return f"> {SEARCH_MAX}" if n is None else str(n)


def equivalence_plan(rows: Sequence[Mapping], order: Sequence[str], look,
                     margin: float, alpha: float = 0.05) -> dict[tuple, int | None]:
    """{(benchmark, size): launches per variant, in all} for each cell the rule's last look
    (a stats.sequential.Look) left undecided: the budget planner's rounds for equivalence
    within ±margin of that cell alone at gain 1 (stats.budget.cell_rounds, on the
    per-round differences of the launches' rows, store.report_queries.launch_cost_rows;
    order: the variants, the baseline first); None: beyond the planner's search (out of
    reach); TOST at alpha (the design's, as the lines that print it say). An undecided
    cell the planner has no figure for (its rounds do not pair) is absent."""
    from mpibench.stats import budget

    per = budget.cell_rounds(rows, order, margin, alpha=alpha)
    return {k: per[k] for k in _undecided(look) if k in per}


def _undecided(look) -> list[tuple]:
    """The (benchmark, size) of the look's undecided cells, by benchmark and size."""
    return sorted({(k[-1].benchmark, k[-1].size) for k, st in look.cells.items()
                   if not st.decided}, key=lambda k: (k[0], k[1] or 0))


def round_seconds(rows: Sequence[Mapping]) -> float | None:
    """The seconds of the last round (one launch of each variant) of the launches' rows
    (launch_cost_rows: repeat, run_id, launch_s): the sum of its launches' elapsed
    seconds; None without a round or its seconds."""
    last = max((r["repeat"] for r in rows if r.get("repeat") is not None), default=None)
    secs = {r["run_id"]: r["launch_s"] for r in rows
            if r.get("repeat") == last and r.get("launch_s") is not None}
    return sum(secs.values()) if last is not None and secs else None


def plan_lines(plan: Mapping[tuple, int | None], look, design,
               round_s: float | None = None) -> list[str]:
    """The equivalence plan's lines: what it assumes, then per benchmark its undecided
    cells' median and largest planned launches per variant and the cells that need the
    most (those out of reach named apart); round_s: the seconds of the last round
    (round_seconds), which prices the largest plan in reach."""
    from mpibench.stats import budget
    from mpibench.stats.launch import POWER

    undecided = len(_undecided(look))
    if not undecided:
        return []
    m = f"±{100 * design.margin:g}%"
    head = (f"A/A equivalence plan (stats.budget.cell_rounds) for the {undecided} undecided "
            f"cell(s): launches per variant, in all, at which one TOST at {design.alpha:g} "
            f"would show {m} with {100 * POWER:g}% power if the true gain is 1 (the "
            f"planner's power target), each cell alone, from the spread of the per-round "
            f"differences of the {look.n} launches per variant that ran, taken at its "
            f"{100 * budget.PLAN_CONFIDENCE:g}% upper confidence bound. A plan from "
            f"{look.n} launches' spread, not a promise: launches that switch speed modes "
            "or load move it")
    if len(plan) < undecided:
        head += (f"; {undecided - len(plan)} undecided cell(s) have no plan (their "
                 "launches do not pair by round)")
    most = max((n for n in plan.values() if n is not None), default=None)
    if most is not None and round_s:
        head += (f". The last round (a launch of each variant) took {round_s:.2f} s: the "
                 f"largest plan in reach, {most} launches per variant, is about "
                 f"{_minutes(most * round_s)} of launches (less as cells decide and later "
                 "launches measure fewer sizes)")
    by: dict[str, dict[int | None, int | None]] = {}
    for (bench, size), n in plan.items():
        by.setdefault(bench, {})[size] = n
    return [head + ":"] + [_plan_line(bench, cells) for bench, cells in by.items()]


def _minutes(s: float) -> str:
    """A duration of launches for people: seconds below 2 minutes, else minutes."""
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def _plan_line(bench: str, cells: Mapping[int | None, int | None]) -> str:
    """One benchmark's plan line: the median and largest over its cells in reach, the three
    that need the most, and the sizes out of reach."""
    from mpibench.stats.budget import SEARCH_MAX

    near = sorted(((n, s) for s, n in cells.items() if n is not None),
                  key=lambda ns: (-ns[0], ns[1] or 0))
    far = [fmt_size(s) for s, n in cells.items() if n is None]
    bits = []
    if near:
        ns = sorted(n for n, _s in near)
        mid = (ns[(len(ns) - 1) // 2] + ns[len(ns) // 2]) / 2
        bits.append(f"{len(near)} in reach need median {mid:g}, at most {ns[-1]} launches "
                    "per variant; the most: " + ", ".join(
                        f"{fmt_size(s)} {n}" for n, s in near[:3]))
    if far:
        bits.append(f"{len(far)} out of reach (more than {SEARCH_MAX} launches per "
                    f"variant): {', '.join(far)}")
    return f"  {bench}: " + "; ".join(bits)


def _stop_line(head: tuple, cells: list[str], design) -> str:
    bench, status, n = head
    if status == "undecided":
        why = ("maximum reached" if n >= design.max
               else "the launches ended before the maximum")
        what = f"undecided at {n} launches per variant ({why})"
    elif status == "equivalent":
        what = f"equivalent within ±{100 * design.margin:g}% at {n} launches per variant"
    else:
        what = f"significant at {n} launches per variant"
    return f"  {bench}: {what}: {len(cells)} cell(s): {', '.join(cells)}"


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
