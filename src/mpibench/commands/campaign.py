"""`mpibench campaign run|resume|status|list`: declarative campaigns (docs/campaigns.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from mpibench.commands._common import (
    Formatter,
    add_stack_discovery,
    console,
    discover_from_args,
    err_console,
    print_json,
)
from mpibench.errors import BenchmarkFailure, UsageError

EXAMPLES = """\
examples:
  mpibench campaign run examples/stacks-imb.toml          # plan, verify, run every cell
  mpibench campaign run examples/stacks-imb.toml --dry-run  # validate and show the plan
  mpibench campaign status examples/stacks-imb.toml       # states, transports, failures
  mpibench campaign resume examples/stacks-imb.toml       # after a crash or Ctrl-C
  mpibench campaign list examples/stacks-imb.toml --json  # every cell with its state
  mpibench campaign list                                  # campaigns in ./mpibench.db

The store defaults to mpibench.db beside the campaign file; run directories go to
<campaign dir>/runs/<cell id>/. The file format is described in docs/campaigns.md."""


def register(sub) -> None:
    p = sub.add_parser("campaign", help="run, resume and inspect campaign files",
                       description="Campaigns: variants x benchmark groups x parameters x "
                                   "repeats from a TOML file, crash-safe and resumable.",
                       epilog=EXAMPLES, formatter_class=Formatter)
    verbs = p.add_subparsers(dest="campaign_verb", metavar="<action>")
    for name, helptext in (("run", "validate, plan and run every cell not yet finished"),
                           ("resume", "finish a campaign that was interrupted"),
                           ("status", "per variant x group states, transports, failures"),
                           ("list", "the cells of a campaign, or the campaigns in a store")):
        q = verbs.add_parser(name, help=helptext, description=helptext,
                             formatter_class=Formatter)
        q.add_argument("file", metavar="FILE", nargs="?" if name == "list" else None,
                       help="campaign file (TOML)")
        q.add_argument("--db", metavar="PATH",
                       help="SQLite results store (default: mpibench.db beside FILE); status and "
                            "list also read a team archive, postgresql://... or $MPIBENCH_DB")
        q.add_argument("--json", action="store_true", help="print JSON for scripts")
        if name in ("run", "resume"):
            q.add_argument("--retry-failed", action="store_true",
                           help="also re-run cells that failed or timed out")
            q.add_argument("--no-verify", action="store_true",
                           help="skip the transport verification probes")
            q.add_argument("--no-progress", action="store_true", help="no progress bar")
            q.add_argument("--only-sizes", metavar="LIST",
                           help="this invocation's launches of the core's groups measure "
                                "only these sizes of each group's own (e.g. 8,1K: the sizes "
                                "whose cells are still undecided); cell ids and result keys "
                                "stay the same")
            add_stack_discovery(q)
        if name == "list":
            q.add_argument("--offset", type=_count, default=0, metavar="N",
                           help="list from the N-th cell on (0 = the first); without FILE, "
                                "from the N-th campaign on")
            q.add_argument("--limit", type=_count, metavar="N",
                           help=f"at most N cells (terminal default {LIST_PAGE}; --json "
                                "default: every cell, streamed); without FILE, at most N "
                                "campaigns (default: every one)")
            q.add_argument("--all", action="store_true",
                           help="every cell (the terminal table then comes in pages)")
        if name == "run":
            q.add_argument("--dry-run", action="store_true",
                           help="validate and print the plan; run nothing, write nothing")
            q.add_argument("--show-scripts", action="store_true",
                           help="with --dry-run (implied): also print every distinct job "
                                "script (directives, module loads, probe and launcher lines) "
                                "and the cells that use it; finds the stacks, builds nothing")
        q.set_defaults(func=_dispatch)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _only_sizes(args) -> list[int] | None:
    """--only-sizes as byte counts (benchmarks.parse_sizes' grammar: 0:22 or 0,8,1K)."""
    from mpibench.benchmarks import parse_sizes

    text = getattr(args, "only_sizes", None)
    if text is None:
        return None
    try:
        return parse_sizes(text)
    except UsageError as exc:
        raise UsageError(f"--only-sizes: {exc}") from None


LIST_PAGE = 1000  # cells per terminal table: rich takes ~0.8 ms a row


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 12:
        raise argparse.ArgumentTypeError(f"expected a count (0 or more), got {text!r}")
    return int(text)


def _db_path(args, spec_path: Path | None, *, read: bool = False):
    """The store: --db, else ($MPIBENCH_DB for status/list) mpibench.db beside FILE. status
    and list also read a team archive (a postgresql:// URL, returned as a string)."""
    from mpibench.store import is_url, mask_url

    target = args.db or (os.environ.get("MPIBENCH_DB") if read else None)
    if target and is_url(target):
        if not read:
            raise UsageError(f"--db {mask_url(target)}: a campaign runs into a local store; "
                             "send its finished runs to the archive with `mpibench push`")
        return target
    if target:
        return Path(target)
    if spec_path is not None:
        return spec_path.resolve().parent / "mpibench.db"
    return Path("mpibench.db")


def _dispatch(args) -> int:
    entered = time.time()     # this process's start and imports behind it (timing_of)
    verb = args.campaign_verb
    if verb == "list" and not args.file:
        return _list_campaigns(args)
    from mpibench.campaign.spec import load

    spec = load(args.file)
    if verb in ("run", "resume"):
        return _run(args, spec, resume=verb == "resume", marks={"entry": entered,
                                                                "loaded": time.time()})
    db = _db_path(args, spec.path, read=True)
    if isinstance(db, Path) and not db.exists():
        raise UsageError(f"store {db}: not found; run the campaign first or pass --db")
    from mpibench.campaign import status as st
    from mpibench.store import Store

    with Store(db, readonly=True, check=True) as store:
        if verb == "status":
            data = st.status(store, spec)
            if args.json:
                print_json(data)
            else:
                _print_status(data)
            return 0
        return _list_cells(args, spec, store)


def _list_cells(args, spec, store) -> int:
    """Cells a page at a time: a 100k-cell campaign took 161 s and 721 MB as one table.
    JSON is streamed page by page (one array); the terminal shows one page unless --all."""
    from mpibench.campaign import status as st
    from mpibench.campaign.local import LOCAL_JOB_PREFIX
    from mpibench.store import queries

    camp = st.find_campaign(store, spec)
    total = queries.cell_count(store, camp["id"])
    start = args.offset
    if args.all or (args.json and args.limit is None):
        stop = total
    else:
        stop = min(total, start + (args.limit if args.limit is not None else LIST_PAGE))
    page = 5000 if args.json else LIST_PAGE
    if args.json:
        out = sys.stdout
        out.write("[")
        first = True
        for off in range(start, stop, page):
            for r in st.cells(store, spec, off, min(page, stop - off)):
                out.write(("\n  " if first else ",\n  ") + json.dumps(r, default=str))
                first = False
        out.write("\n]\n" if not first else "]\n")
        return 0
    batch = queries.has_batch_jobs(store, camp["id"], LOCAL_JOB_PREFIX)
    con = console()
    for off in range(start, max(stop, start + 1), page):
        rows = st.cells(store, spec, off, min(page, stop - off)) if off < stop else []
        title = (f"campaign {spec.name}: {total} cells" if off == start else None)
        _cells_table(con, rows, batch, title, show_header=off == start)
    if start > 0 or stop < total:
        shown = f"cells {start + 1}-{stop} of {total}" if stop > start else \
            f"no cells from --offset {start} (the campaign has {total})"
        more = (f"; next page: --offset {stop}, every cell: --all or --json"
                if stop < total else "")
        err_console().print(escape(shown + more))
    return 0


def _cells_table(con, rows, batch: bool, title: str | None, show_header: bool) -> None:
    """One page of cells. Past PLAIN_TABLE_ROWS rows as fixed-width text (rich took ~0.8 ms
    a row, most of a second for a page of 1000); a later page repeats the column header."""
    header = ["seq", "id", "variant", "group", "params", "rep", "status", "elapsed"]
    header += ["job", "nodes", "sched state"] if batch else []
    header.append("reason")
    lines = []
    for r in rows:
        cells = [str(r["seq"]), r["id"], r["variant"], r["group"],
                 ", ".join(f"{k}={v}" for k, v in r["params"].items()),
                 str(r["repeat"] + 1), r["status"],
                 f"{r['elapsed']:.2f} s" if r["elapsed"] is not None else ""]
        if batch:
            cells += [r[k] or "" for k in ("job_id", "nodelist", "sched_state")]
        lines.append([*cells, (r["reason"] or "")[:80]])
    _print_table(title, header, lines, left_cols=len(header), show_header=show_header,
                 con=con)


def _print_table(title: str | None, header: list[str], lines: list[list[str]], *,
                 left_cols: int, show_header: bool = True, con=None) -> None:
    """A listing's table: rich up to PLAIN_TABLE_ROWS rows (markup escaped), past that
    fixed-width text, like the report's long tables (plain_table turns control characters
    into U+FFFD; there is no markup to escape). Without show_header, the text form drops
    its title but keeps the column header (a later page of cells)."""
    from mpibench.report.render import PLAIN_TABLE_ROWS, plain_table

    if len(lines) > PLAIN_TABLE_ROWS:
        text = plain_table(title or "", header, lines, left_cols=left_cols)
        sys.stdout.write((text if show_header else text.split("\n", 2)[2]) + "\n")
        return
    t = Table(title=escape(title) if title else None, show_header=show_header)
    for col in header:
        t.add_column(col)
    for line in lines:
        t.add_row(*(escape(x) for x in line))
    (con or console()).print(t)


CAMPAIGN_COLUMNS = ("id", "name", "file", "scheduler", "cells", "done", "failed", "timeout",
                    "running", "pending", "jobs_in_flight")


def _list_campaigns(args) -> int:
    """The campaigns of a store, every one unless --offset/--limit pick a page (then one
    line on stderr says which and how many more)."""
    from mpibench.campaign import status as st
    from mpibench.store import Store

    db = _db_path(args, None, read=True)
    if isinstance(db, Path) and not db.exists():
        raise UsageError(f"store {db}: not found; pass --db or a campaign FILE")
    with Store(db, readonly=True) as store:
        every = st.campaigns(store)
        where = store.path
    total, start = len(every), args.offset
    stop = total if args.limit is None or args.all else min(total, start + args.limit)
    rows = every[start:stop]
    if args.json:
        print_json(rows)
    else:
        _campaigns_table(rows, f"campaigns in {where}")
    if start > 0 or stop < total:
        shown = (f"campaigns {start + 1}-{stop} of {total}" if stop > start else
                 f"no campaigns from --offset {start} (the store has {total})")
        more = f"; {total - stop} more: --offset {stop}" if stop < total else ""
        err_console().print(escape(shown + more))
    return 0


def _campaigns_table(rows: list[dict], title: str) -> None:
    """One row per campaign. Past PLAIN_TABLE_ROWS rows as fixed-width text, like the
    report's long tables: rich measures and wraps every cell, ~0.9 ms a row, which made
    1,010 campaigns take 1-3 s (bench/bench_campaign_list.py)."""
    header = [c.replace("_", " ") for c in CAMPAIGN_COLUMNS]
    cells = [[str(r[c]) for c in CAMPAIGN_COLUMNS] for r in rows]
    _print_table(title, header, cells, left_cols=4)


def _print_scripts(spec, scripts, n_cells: int) -> None:
    """The scripts verbatim (no markup, no wrapping: what the scheduler would be given)."""
    from mpibench.campaign.scripts import CELL_TOKEN, describe_cells
    from mpibench.termsafe import safe_text

    out = sys.stdout
    local = ("; the local backend runs these commands itself and probes each variant in a "
             "separate launch") if spec.scheduler.name == "local" else ""
    out.write(f"\n{len(scripts)} distinct job script(s) ({spec.scheduler.name}) for {n_cells} "
              f"cell(s); {CELL_TOKEN} stands for each cell's id (its directory is "
              f"runs/{CELL_TOKEN}){local}\n")
    for i, s in enumerate(scripts, 1):
        out.write(f"\n===== script {i} of {len(scripts)}, "
                  f"{safe_text(describe_cells(s.cells))}\n")
        text = safe_text(s.text)   # values with control characters never reach a script
        out.write(text if text.endswith("\n") else text + "\n")
    out.flush()


def _dry_run(args, spec) -> int:
    """--dry-run, --show-scripts: the plan (and the job scripts), nothing run or written."""
    from mpibench.campaign.plan import expand

    seed, seed_note = spec.seed, ""
    if spec.order == "random" and seed is None:
        from mpibench.store.queries import recorded_seed

        seed = recorded_seed(_db_path(args, spec.path), spec.name, str(spec.path))
        seed_note = (f", seed {seed} (recorded in the store)" if seed is not None else
                     ", seed drawn at the first run and recorded (this listing uses 0)")
    elif spec.order == "random":
        seed_note = f", seed {seed}"
    cells = expand(spec, seed=seed or 0)
    scripts = None
    if args.__dict__.get("show_scripts"):
        from mpibench.campaign.scripts import job_scripts

        scripts = job_scripts(spec, discover_from_args(args),
                              verify=False if args.no_verify else None, seed=seed or 0)
    if args.json:
        doc = {"campaign": spec.name, "order": spec.order, "seed": seed, "cells": [
            {"id": c.id, "seq": c.seq, "variant": c.variant.name, "group": c.group.name,
             "params": c.params, "repeat": c.repeat} for c in cells]}
        if scripts is not None:
            doc["scheduler"] = spec.scheduler.name
            doc["scripts"] = [{"script": s.text, "cells": [c.id for c in s.cells],
                               "labels": [c.label for c in s.cells]} for s in scripts]
        print_json(doc)
    else:
        con = console()
        con.print(f"campaign {escape(spec.name)}: {len(spec.variants)} variant(s), "
                  f"{len(spec.groups)} group(s), {len(cells)} cell(s), order {spec.order}"
                  + seed_note)
        if spec.auto is not None and spec.auto.until == "decided":
            looks = spec.auto.design(spec.equivalence).looks()
            con.print(f'repeats = "decide": up to {spec.auto.max} rounds; after rounds '
                      f"{', '.join(map(str, looks[:-1])) or '-'} only the group points "
                      "with an undecided cell run the next ones")
        for c in cells[:50]:
            con.print(f"  {c.seq:5d}  {c.id}  {escape(c.label)}")
        if len(cells) > 50:
            con.print(f"  ... {len(cells) - 50} more")
        if scripts is not None:
            _print_scripts(spec, scripts, len(cells))
    return 0


def _checked_only_sizes(args, spec) -> list[int] | None:
    """--only-sizes parsed and checked against the campaign before anything runs (a dry
    run too): each core group must keep some of its own sizes, else its first launch
    would refuse mid-campaign."""
    from mpibench.campaign.auto_repeats import DEFAULT_CORE_SIZES, kept_sizes

    only = _only_sizes(args)
    for g in spec.groups if only is not None else ():
        if g.kind_class.core_options:
            kept_sizes(g.name, g.sizes or DEFAULT_CORE_SIZES, only)
    return only


def _run(args, spec, resume: bool, marks: dict[str, float] | None = None) -> int:
    only = _checked_only_sizes(args, spec)
    if args.__dict__.get("dry_run") or args.__dict__.get("show_scripts"):
        return _dry_run(args, spec)
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.execute import root_env_notice
    from mpibench.store import Store

    db = _db_path(args, spec.path)
    if resume:
        if not db.exists():
            raise UsageError(f"store {db}: not found; nothing to resume (use "
                             "`mpibench campaign run`)")
        from mpibench.campaign.status import find_campaign
        with Store(db, readonly=True) as store:
            find_campaign(store, spec)
    found = discover_from_args(args)
    con = err_console()
    notes: list[str] = []
    show_bar = not args.no_progress and not args.json
    # The ETA is the runner's (this invocation's pace), not rich's speed estimate, which
    # would count the cells a resume skips as instant progress.
    progress = Progress(
        BarColumn(), MofNCompleteColumn(), TextColumn("cells"), TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"), TextColumn("[bold]{task.description}"),
        console=con, transient=True, disable=not show_bar)
    task = progress.add_task("planning", total=None, eta="-")

    def tick(done: int, total: int, what: str) -> None:
        # refresh=True: every state the runner reports is drawn when it is reported (a
        # handful per cell), not only if rich's 10 Hz refresh thread happens to run while it
        # holds - a loaded machine can starve that thread for a whole cell (review R4)
        progress.update(task, completed=done, total=total, description=escape(what[:70]),
                        eta=format_eta(runner.eta()), refresh=True)

    def log(msg: str) -> None:
        notes.append(msg)
        if not args.json:
            progress.console.print(escape(msg))

    runner = CampaignRunner(spec, None, found, progress=tick, log=log,
                            retry_failed=args.retry_failed,
                            verify=False if args.no_verify else None,
                            only_sizes=only)
    # stacks, transports, launchers and the core build are checked before the store exists
    runner.check()
    marks = {**(marks or {}), "checked": time.time()}
    notice = root_env_notice()
    if notice and not args.json:
        con.print(notice)
    with Store(db) as store:
        marks["store_open"] = time.time()
        runner.store = store
        with progress:
            summary = runner.run(checked=True)
        marks["cells_done"] = time.time()
        from mpibench.campaign import status as st

        data = st.status(store, spec)
        marks["status"] = time.time()
    if args.json:
        print_json({"summary": summary.__dict__, "status": data, "notes": notes,
                    "timing": timing_of(runner, marks)})
    else:
        con.print(f"campaign {escape(spec.name)}: ran {summary.ran} cell(s), "
                  f"{summary.skipped} already finished, {summary.recovered} recovered after "
                  f"a crash; store {db}; run directories {spec.directory / 'runs'}/")
        if summary.auto_skipped:
            why = ("their cells were decided" if spec.auto and spec.auto.until == "decided"
                   else "every gain's 95% CI within the target")
            con.print(f'repeats = "{"decide" if "decided" in why else "auto"}": '
                      f"{summary.auto_skipped} launch(es) not needed ({why}); they stay "
                      "pending")
        _print_status(data)
    bad = data["totals"]["failed"] + data["totals"]["timeout"]
    if bad:
        raise BenchmarkFailure(f"{bad} cell(s) failed or timed out; `mpibench campaign status "
                               f"{args.file}` shows the reasons, --retry-failed re-runs them")
    return 0


def timing_of(runner, marks: dict[str, float | None]) -> dict[str, float | bool | None]:
    """`campaign run --json`'s "timing": where this invocation's time went outside its
    launches, as epoch seconds (time.time(), the clock of the store's runs.started and
    finished): process_start (the process's start, to the clock tick: 10 ms), entry
    (Python's start and the command line's imports done, the verb's code entered),
    loaded (the campaign file read, with the modules it imports: numpy, stats), checked
    (stacks found, the runner imported, the core's build and the launchers checked),
    store_open,
    synced (cells planned into the store, a crashed harness's cells recovered), cells_done
    (the last cell committed), status (the summary read back); and budget_plan_s, the
    seconds budget = "auto"'s plan took (inside the first budgeted cell's preparation),
    budget_plan_reused whether it came from the plan cache (campaign/budget.py). The
    launches' own times are the store's (runs.started: before the machine-state gate;
    timing.json in each run directory: the launch's start and end; runs.finished: after
    its results were committed)."""
    from mpibench.campaign.runner import process_started

    return {"process_start": process_started(), "entry": marks.get("entry"),
            "loaded": marks.get("loaded"), "checked": marks.get("checked"), "store_open": marks.get("store_open"),
            "synced": runner.timing.get("synced"), "cells_done": marks.get("cells_done"),
            "status": marks.get("status"),
            "budget_plan_s": runner.timing.get("budget_plan_s"),
            "budget_plan_reused": runner.timing.get("budget_plan_reused")}


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _job_text(j: dict) -> str:
    """`job 123 on n[1-2]: TIMEOUT signal=15` (plain text: escape it for rich)."""
    return (f"job {j['job_id']}" + (f" on {j['nodelist']}" if j["nodelist"] else "")
            + (f": {j['sched_state']}" if j["sched_state"] else ""))


def _print_decisions(d: dict) -> None:
    """repeats = "decide": how many cells are decided, and per group point why it stopped
    (or why it goes on)."""
    con = console()
    r = d["rule"]
    margin = f"within ±{100 * r['margin']:g}%" if r.get("margin") else "(no equivalence margin)"
    con.print(f'repeats = "decide" (looks at {", ".join(map(str, d["looks"]))} launches per '
              f"variant; significant in the comparison table's family (cells, geomean "
              f"rows, verdicts) at the look's level, or equivalent {margin}): {d['cells']} "
              f"cells, {d['significant']} significant, {d['equivalent']} equivalent, "
              f"{d['undecided']} undecided")
    for pt in d["points"][:20]:
        where = ",".join(f"{k}={v}" for k, v in pt["point"].items())
        con.print(escape(f"  {pt['group']}" + (f" [{where}]" if where else "")
                         + f": {pt['launches']} launches: {pt['state']}"))
        if pt["undecided"] and pt["reason"]:
            con.print(escape(f"    {pt['reason']}"))
        for c in pt.get("early", [])[:5]:
            what = " ".join(str(x) for x in (c["candidate"], c["benchmark"], c["size"],
                                             c["metric"]) if x is not None)
            con.print(escape(
                f"    {what}: {c['status']} at {c['launches']} launches (look level "
                f"{c['look_level']:.2g}); CI widened for sequential looks to "
                f"{100 * c['level']:.2f}%: [{c['ci_low']:.3g}, {c['ci_high']:.3g}]"))
    if len(d["points"]) > 20:
        con.print(f"  ... {len(d['points']) - 20} more (--json)")


def _print_status(data: dict) -> None:
    con = console()
    tot = data["totals"]
    con.print(f"[bold]campaign {escape(data['campaign'])}[/] ({escape(data['file'])}): "
              f"{data['cells']} cells: " + ", ".join(f"{tot[s]} {s}" for s in tot)
              + (f"; random order, seed {data['seed']}" if data.get("order") == "random"
                 else ""))
    if data.get("not_in_file"):
        con.print(f"({data['not_in_file']} cell(s) in the store come from an earlier version "
                  "of the file; their results are kept)")
    t = Table()
    for col in ("variant", "group", "done", "failed", "timeout", "running", "pending",
                "fingerprints", "transport requested", "transport actual", "check"):
        t.add_column(col)
    for g in data["groups"]:
        fp = str(g["fingerprints"]) + (" [red]MIXED[/]" if g["mixed_fingerprints"] else "")
        check = g["transport_verdict"]
        if check == "MISMATCH":
            check = "[red]MISMATCH[/]"
        t.add_row(escape(g["variant"]), escape(g["group"]), str(g["done"]), str(g["failed"]),
                  str(g["timeout"]), str(g["running"]), str(g["pending"]), fp,
                  escape(g["transport_requested"] or "-"),
                  escape(g["transport_actual"] or "-"), check)
    con.print(t)
    for v in data["variants"]:
        if v["mixed_fingerprints"]:
            con.print(f"[yellow]note:[/] variant {escape(v['variant'])}: repeats ran with "
                      "different fingerprints (environment, stack or hosts changed); they "
                      "are not pooled in comparisons")
        if v["transport_verdict"] == "MISMATCH":
            con.print(f"[red]warning:[/] variant {escape(v['variant'])} requested transport "
                      f"{escape(str(v['transport_requested']))} but "
                      f"{escape(v['transport_actual'])} carried the traffic")
    if data.get("decisions"):
        _print_decisions(data["decisions"])
    if data.get("jobs"):
        con.print(f"{len(data['jobs'])} cell(s) in batch jobs:")
        for j in data["jobs"][:20]:
            con.print(escape(f"  {_job_text(j)}: {j['id']} {j['label'] or ''}"))
        if len(data["jobs"]) > 20:
            con.print(f"  ... {len(data['jobs']) - 20} more (--json)")
    for p in data["problems"][:20]:
        job = escape(f" [{_job_text(p)}]") if p.get("job_id") else ""
        con.print(f"[red]{p['status']}[/] {p['id']} {escape(p['label'] or '')}: "
                  f"{escape(p['reason'] or '')}{job}")
        if p["stderr_tail"]:
            for line in p["stderr_tail"].splitlines()[-3:]:
                con.print(f"    {escape(line)}")
    if len(data["problems"]) > 20:
        con.print(f"... {len(data['problems']) - 20} more failed/timed-out cells (--json)")

