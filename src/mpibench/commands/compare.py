"""`mpibench compare`: compare result sets from the store, benchstat style."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mpibench.benchmarks import parse_size
from mpibench.commands import _args
from mpibench.commands._common import Formatter, add_db, err_console
from mpibench.errors import UsageError
from mpibench.files import check_output, write_file
from mpibench.store import Store

EXAMPLES = """\
examples:
  # the latest campaign in ./mpibench.db, first variant as baseline
  mpibench compare

  # two variants, MPICH as baseline, Markdown for a wiki page
  mpibench compare --variant openmpi --variant mpich --baseline mpich --format markdown

  # the users' gain table at 1 MiB and bandwidth against a 100 Gb/s link
  mpibench compare --campaign fabric --gain-table --size 1M --line-rate 100Gb/s

  # application sweep: nodes x NCORE grid, scaling, and cost at 2.5 per node-hour, 450 W/node
  mpibench compare --campaign vasp --grid nodes NCORE --scaling \\
      --cost-per-node-hour 2.5 --power-per-node-w 450

  # same variant before and after a system update (two campaigns)
  mpibench compare --campaign image-2025 --campaign image-2026 --variant openmpi

  # how many interleaved launches per side would detect a 5% difference
  mpibench compare --campaign fabric --detect 5%

Result sets are grouped by variant (or by --label); the runs of a campaign sweep over np,
nodes or ppn form one set whose cells differ by those. A launch (one mpirun) is the unit of
replication: each launch gives one statistic per cell (its median, or --statistic mean), a
set's value is the geometric mean of its launches' statistics ± the 95% CI from the spread
between launches. The gain, its CI and p come from a t test on the logs of the launch
statistics: a benchmark's sizes pool their between-launch spread, launches of one round of
an interleaved campaign are paired (the table says so), every p the table shows is
adjusted by one Holm-type procedure over the table (a weighted graph of Bonferroni tests,
docs/statistics.md "Multiplicity") and each CI is at its row's adjusted level. `~` = not significant; "cannot tell" =
fewer than two launches on a side (one launch per variant decides nothing). Launches are
only combined when their fingerprints match (otherwise the most common fingerprint is used
and a footnote says what was left out). Times in microseconds; MB/s = 10^6 bytes/s. A set whose requested transport
did not take effect (campaign status: MISMATCH) is a WARNING footnote on its column; imported
rows show the tool's own statistic (e.g. mean), untested; a set sharing no cell with the
baseline is named in a footnote instead of getting an empty column."""


def _alpha(text: str) -> float:
    try:
        v = _args.number(text)   # ASCII, finite: float() takes '٣', '1_0'
    except argparse.ArgumentTypeError:
        v = float("nan")
    if not 0.0 < v < 1.0:          # also rejects nan
        raise argparse.ArgumentTypeError(f"{text!r}: expected a significance level between "
                                         "0 and 1, e.g. 0.05")
    return v


def _non_negative(text: str) -> float:
    try:
        v = _args.number(text)   # ASCII, finite: float() takes '٣', '1_0'
    except argparse.ArgumentTypeError:
        v = float("nan")
    if not (v >= 0.0 and v != float("inf")):     # rejects nan, inf and negatives
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number >= 0")
    return v


def add_selectors(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("which results (default: the latest campaign)")
    g.add_argument("--variant", action="append", metavar="NAME",
                   help="variant to include (repeatable); a campaign sweep's base name "
                        "('ompi' for ompi[np=2], ompi[np=4]) selects all its expansions")
    g.add_argument("--label", action="append", metavar="LABEL",
                   help="run label to include (repeatable); groups by label")
    g.add_argument("--campaign", action="append", metavar="NAME|ID",
                   help="campaign to include (repeatable)")
    g.add_argument("--run", action="append", metavar="RUN_ID", help="run id (repeatable)")
    g.add_argument("--since", metavar="WHEN", help="runs started at/after (ISO date/time, UTC)")
    g.add_argument("--until", metavar="WHEN", help="runs started at/before (ISO date/time)")
    g.add_argument("--fingerprint", action="append", metavar="KEY=VALUE",
                   help="only runs whose fingerprint has this value at this dotted key "
                        "(repeatable, all must hold): stack.version=5.0.2, machine.kernel="
                        "6.1.0-18-amd64, transport_env.UCX_TLS=tcp; a list holds VALUE if "
                        "one item is VALUE")
    g.add_argument("--site", action="append", metavar="NAME",
                   help="team archive only: runs pushed from this site (repeatable); with "
                        "two or more, each set's name starts with its site (docs/archive.md)")
    g.add_argument("--by", choices=["variant", "label", "tool"],
                   help="group runs by (default variant); tool = variant and what measured "
                        "it: ompi/core, ompi/imb, ompi/osu (campaign suite groups, imports)")
    g.add_argument("--baseline", metavar="SET", help="result set to compare against "
                   "(default: the first)")
    g.add_argument("--benchmark", action="append", metavar="NAME",
                   help="only these benchmarks (repeatable)")
    g.add_argument("--size", action="append", metavar="BYTES",
                   help="only these sizes (repeatable; 8, 4K, 1M); with --gain-table, the "
                        "size of the gain table (in `report`: only the gain table's size)")
    g.add_argument("--alpha", type=_alpha, default=0.05,
                   help="significance level, 0 < alpha < 1 (default 0.05)")
    g.add_argument("--statistic", choices=["median", "mean"], default="median",
                   help="each launch's statistic: the median of its samples (default) or "
                        "their mean; a gain is only computed between the same statistic on "
                        "both sides (imported IMB/OSU files carry their own mean)")


def add_table_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("extra tables")
    g.add_argument("--line-rate", metavar="RATE",
                   help="link speed, e.g. 100Gb/s, 25GbE, 12.5GB/s (default: the runs' "
                        "line_rate_bps)")
    g.add_argument("--differences", action="store_true",
                   help="what differs between the sets' fingerprints: library and its "
                        "reported settings (MCA, MPICH debug summary, I_MPI_*), UCX/"
                        "libfabric, env, MCA, kernel, CPU, node names")
    g.add_argument("--relative", action="store_true",
                   help="every candidate value as %% of the baseline's (candidate / baseline "
                        "x 100, with the gain's 95%% CI), in tables and plots: slowdowns as "
                        "the image-regression study reports them")
    g.add_argument("--mean-std", action="store_true",
                   help="show mean ± std beside the median in the first-call table")
    g.add_argument("--grid", nargs=2, metavar=("ROW", "COL"),
                   help="grid of an application sweep: rows one parameter (e.g. nodes), "
                        "columns another (e.g. NCORE); np and size also work")
    g.add_argument("--metric", help="metric for --grid/--scaling (e.g. ns/day)")
    g.add_argument("--cost-per-node-hour", type=_non_negative, metavar="PRICE",
                   help="price per node-hour (else campaign key price_per_node_hour)")
    g.add_argument("--power-per-node-w", type=_non_negative, metavar="WATTS",
                   help="power per node in W (else campaign key power_per_node_w)")
    g.add_argument("--price-per-kwh", type=_non_negative, metavar="PRICE",
                   help="electricity price per kWh, for the yearly projection (else campaign "
                        "key price_per_kwh)")
    g.add_argument("--jobs-per-year", type=_non_negative, metavar="N",
                   help="a fixed workload of N jobs (runs of each cell) per year: the yearly "
                        "projection of node-hours, cost, kWh and savings (else campaign key "
                        "jobs_per_year)")


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare result sets (value ± CI, gain [CI], p, ~)",
                       description="Compare two or more result sets from the store: per "
                                   "benchmark and size (or application cell) each side's "
                                   "geometric mean of launch statistics ± 95% CI between "
                                   "launches, the gain with its CI and an adjusted "
                                   "p from a t test on log launch statistics (Holm-type "
                                   "over the table; sizes "
                                   "pooled, paired by round where launches were "
                                   "interleaved), a geomean per benchmark and a verdict "
                                   "(aggregated per launch).",
                       epilog=EXAMPLES, formatter_class=Formatter)
    add_db(p, archive=True)
    add_selectors(p)
    o = p.add_argument_group("output")
    o.add_argument("--format", choices=["terminal", "markdown", "csv", "json"],
                   default="terminal", help="format of the printed tables (json: every "
                   "figure with its CI, p and launch counts, for scripts)")
    o.add_argument("--gain-table", action="store_true",
                   help="also the gain table: one row per benchmark at one size (--size, "
                        "default the largest common size)")
    o.add_argument("--first-call", action="store_true",
                   help="also first-call vs steady-state times")
    o.add_argument("--scaling", action="store_true",
                   help="also speedup and efficiency vs the smallest np/nodes")
    o.add_argument("--scaling-by", metavar="PARAM", help="count for --scaling (nodes or np)")
    o.add_argument("--results", action="store_true", help="also each set's own results table")
    o.add_argument("--detect", metavar="PCT",
                   help="also the launches per side needed to detect a difference of PCT "
                        "(e.g. 5%%), from the spread between launches seen so far")
    o.add_argument("--equivalence", metavar="MARGIN", type=_margin,
                   help="also test equivalence within ±MARGIN (e.g. 2%%): TOST per cell (≈) "
                        "and overall, so a verdict can be 'equivalent within ±2%%' (default: "
                        "the campaign's [campaign] equivalence, else none)")
    o.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    add_table_options(p)
    p.set_defaults(func=run)


def _margin(text: str) -> float:
    from mpibench.stats.launch import parse_margin

    v = parse_margin(text)
    if v is None:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a margin such as 2% (between "
                                         "0.01% and 100%)")
    return v


def equivalence_margin(store: Store, sets: dict[str, list[str]], flag: float | None
                       ) -> float | None:
    """--equivalence, else the [campaign] equivalence of the selected runs' campaign."""
    if flag is not None:
        return flag
    from mpibench.report.specs import _spec_value
    from mpibench.stats.launch import parse_margin

    v = _spec_value(store, [r for ids in sets.values() for r in ids], ("equivalence",))
    return parse_margin(v) if v is not None else None


def open_store(path: str | None) -> Store:
    """A read verb's store: --db (a file or a postgresql:// archive), else $MPIBENCH_DB,
    else ./mpibench.db."""
    from mpibench.store import db_exists, open_db_arg

    path = open_db_arg(path)
    if not db_exists(path):
        raise UsageError(f"--db {path}: no such results store (run 'mpibench run' or "
                         "'mpibench campaign run' first, or pass --db)")
    return Store(path, readonly=True, check=True)


def parse_sizes_arg(values: list[str] | None) -> list[int] | None:
    if not values:
        return None
    out: list[int] = []
    for v in values:
        if not v.strip():
            raise UsageError(f"--size {v!r}: expected a message size such as 4M or 1024")
        out += [parse_size(t) for t in v.split(",") if t.strip()]
    return out


def groups_from_args(store: Store, args) -> dict[str, list[str]]:
    from mpibench.report.select import select_groups

    campaign = args.campaign
    sites = getattr(args, "site", None)
    if sites:
        from mpibench.store.archive import ArchiveStore, site_campaigns, site_names
        if not isinstance(store, ArchiveStore):
            raise UsageError(f"--site: selects the runs pushed to a team archive; --db "
                             f"{store.path} is a local store")
        known = site_names(store)
        for s in sites:
            if s not in known:
                raise UsageError(f"--site {s!r}: nothing was pushed from this site (sites: "
                                 f"{', '.join(known) or 'none'})")
        if campaign is None and not args.run:
            # only those sites' campaigns, so that set names are what they are on the
            # sites' own stores (a variant is 'campaign/variant' only across campaigns)
            campaign = site_campaigns(store, sites)
    from mpibench.report.select import _parse_when

    # checked before anything is printed: an empty --since was falsy, so the "latest
    # campaign" notice came first and the refusal was a second line
    _parse_when(args.since, "--since")
    _parse_when(args.until, "--until")
    notice = ""
    if not any([args.variant, args.label, args.campaign, args.run,
                args.since is not None, args.until is not None, sites]):
        camps = store.campaigns()
        if not camps:
            raise UsageError(f"--db {store.path}: the store has no campaigns yet")
        latest = max(camps, key=lambda r: (r["created"], r["id"]))
        campaign = [latest["id"]]
        notice = (f"comparing the latest campaign: {latest['name']} "
                  "(choose with --campaign/--variant/--run)")
    sets = select_groups(store, variants=args.variant, campaign=campaign, run_ids=args.run,
                           labels=args.label, since=args.since, until=args.until, by=args.by)
    if sites:
        sets = _split_by_site(store, sets, sites)
    if getattr(args, "fingerprint", None):
        sets = _filter_by_fingerprint(store, sets, args.fingerprint)
    if not sets:
        raise UsageError(f"--db {store.path}: no results match the selection (check "
                         "--variant/--label/--campaign/--run/--since/--until/--site)")
    # a --label or --variant that selects nothing is a typo, like --benchmark/--size
    # (check_filters): said, not silently left out of a comparison of the others
    for flag, names, by in (("--label", args.label, "label"), ("--variant", args.variant,
                                                                "variant")):
        if names and not (args.label and args.variant) and (args.by or by) == by:
            for n in names:
                # sets of several campaigns are named '<campaign>/<name>'
                if not any(k == n or k.endswith("/" + n) for k in sets):
                    raise UsageError(f"{flag} {n!r}: no results with this {by} in the "
                                     f"selection (selected: {', '.join(sets)})")
    if args.baseline is not None and args.baseline not in sets:
        raise UsageError(f"--baseline {args.baseline!r} is not one of the selected sets: "
                         f"{', '.join(sets)}")
    if notice:   # after every check of the selection: a refusal stays one line
        err_console().print(notice)
    return sets


def _fp_value(fp: object, path: list[str]) -> object:
    for part in path:
        if not isinstance(fp, dict) or part not in fp:
            return _MISSING
        fp = fp[part]
    return fp


_MISSING = object()


def _fp_holds(value: object, wanted: str) -> bool:
    if isinstance(value, list):
        return any(_fp_holds(v, wanted) for v in value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value) == wanted.lower()
    return str(value) == wanted


def _filter_by_fingerprint(store: Store, sets: dict[str, list[str]], filters: list[str]
                           ) -> dict[str, list[str]]:
    """Keep the runs whose fingerprint holds every KEY=VALUE (a dotted KEY into its JSON)."""
    from mpibench.store.report_queries import run_fingerprints

    conds = []
    for f in filters:
        key, eq, want = f.partition("=")
        if not eq or not key.strip() or any(not p for p in key.split(".")):
            raise UsageError(f"--fingerprint {f[:80]!r}: expected KEY=VALUE with a dotted "
                             "key into the fingerprint, e.g. stack.version=5.0.2")
        conds.append((f, key.strip().split("."), want))
    fid_of = run_fingerprints(store, [r for ids in sets.values() for r in ids])
    fps = {fid: store.fingerprint(fid) or {} for fid in set(fid_of.values()) if fid}
    for f, path, want in conds:   # a value nothing holds is a typo: say what is there
        seen = {_fp_value(fp, path) for fp in fps.values()} - {_MISSING}
        if not any(_fp_holds(v, want) for v in seen):
            shown = ", ".join(sorted(str(v)[:40] for v in seen if not isinstance(v, dict))[:8])
            raise UsageError(f"--fingerprint {f[:80]!r}: no selected run's fingerprint holds "
                             f"this (values at {'.'.join(path)}: {shown or 'none'})")
    ok = {fid for fid, fp in fps.items()
          if all(_fp_holds(_fp_value(fp, path), want) for _, path, want in conds)}
    out = {name: [r for r in ids if fid_of.get(r) in ok] for name, ids in sets.items()}
    return {name: ids for name, ids in out.items() if ids}


def _split_by_site(store: Store, sets: dict[str, list[str]], sites: list[str]
                   ) -> dict[str, list[str]]:
    """Keep the runs pushed from `sites`; with several sites each set splits into
    'site/set' (a run pushed from two sites' copies of one store is in both)."""
    from mpibench.store.archive import run_sites

    site_of = run_sites(store, [r for ids in sets.values() for r in ids])
    out: dict[str, list[str]] = {}
    for name, ids in sets.items():
        for s in dict.fromkeys(sites):
            keep = [r for r in ids if s in site_of.get(r, ())]
            if keep:
                key = f"{s}/{name}" if len(set(sites)) > 1 else name
                out.setdefault(key, []).extend(keep)
    return out


def check_filters(cells: dict, benchmarks: list[str] | None, sizes: list[int] | None) -> None:
    """--benchmark/--size values that match nothing are typos (report.pipeline)."""
    from mpibench.report.pipeline import check_filters as check

    check(cells, benchmarks, sizes)


def run(args) -> int:
    """The report pipeline (report/pipeline.py): select, load, judge, build the sections,
    then render every part in the asked format (JSON: the objects, dumped once)."""
    if args.output:
        check_output(args.output, "-o")
    from mpibench.report import pipeline
    from mpibench.report.compare_view import render, to_json_obj
    from mpibench.report.render import render_table, table_obj
    from mpibench.report.results import render_results, results_obj
    from mpibench.report.sections import Options, compare_tables

    fmt = args.format
    as_json = fmt == "json"
    sizes = parse_sizes_arg(args.size)
    parts: list[tuple[str, Any]] = []     # (key, text; with --format json the object)
    with open_store(args.db) as store:
        sets = groups_from_args(store, args)                                # select
        statistic = getattr(args, "statistic", "median")
        detect = None
        if getattr(args, "detect", None) is not None:
            from mpibench.report.planning import parse_effect
            detect = parse_effect(args.detect)
        request = pipeline.Request(
            baseline=args.baseline, alpha=args.alpha, statistic=statistic,
            benchmarks=args.benchmark, sizes=sizes,
            relative=bool(getattr(args, "relative", False)),
            equivalence=equivalence_margin(store, sets, getattr(args, "equivalence", None)),
            options=Options(size=sizes[0] if sizes else None, line_rate=args.line_rate,
                            mean_std=args.mean_std,
                            grid=tuple(args.grid) if args.grid else None, metric=args.metric,
                            scaling_by=args.scaling_by,
                            price_per_node_hour=args.cost_per_node_hour,
                            power_per_node_w=args.power_per_node_w, detect=detect,
                            gain_table=args.gain_table, first_call=args.first_call,
                            scaling=args.scaling, multi_sizes=bool(sizes and len(sizes) > 1),
                            price_per_kwh=args.price_per_kwh,
                            jobs_per_year=args.jobs_per_year or None,
                            differences=args.differences))
        loaded = pipeline.load(store, sets, request)                        # load
        if len(sets) < 2:
            # said before anything is printed: a refusal is one line
            for flag, on in (("--gain-table", args.gain_table), ("--detect", args.detect)):
                if on:
                    raise UsageError(f"{flag} needs two or more result sets; only "
                                     f"{next(iter(sets))} has results in this selection")
            err_console().print(f"only one result set selected ({next(iter(sets))}); "
                                "showing its results")
        judged = pipeline.judge(store, loaded, request)                     # judge
        cmp = judged.cmp
        if cmp is not None:
            parts.append(("comparison", to_json_obj(cmp) if as_json else render(cmp, fmt)))
        if args.results or cmp is None:
            for g, ids in sets.items():
                gcells = [by[g] for by in loaded.cells.values() if g in by]
                parts.append((f"results:{g}", results_obj(gcells, g, len(ids)) if as_json
                              else render_results(store, ids, fmt, title=g, cells=gcells)))
        if cmp is None and judged.warnings:
            parts.append(("warnings", judged.warnings if as_json
                          else _warnings_text(judged.warnings, fmt)))
        ctx = pipeline.context(store, judged, request)
        for key, t in compare_tables(ctx):                                  # sections
            parts.append((key, table_obj(t) if as_json else render_table(t, fmt)))
    if as_json:                                                             # render
        out = json.dumps(dict(parts) if len(parts) > 1 else parts[0][1], indent=2)
    elif fmt == "csv" and len(parts) > 1:
        out = "\n".join(f"# {key}\n{text.rstrip()}\n" for key, text in parts)
    else:
        out = "\n\n".join(text.rstrip() for _, text in parts)
    if args.output:
        try:
            write_file(args.output, out + "\n")
        except OSError as exc:
            raise UsageError(f"-o {args.output}: cannot write ({exc.strerror})") from None
        err_console().print(f"wrote {args.output}")
    else:
        sys.stdout.write(out + "\n")
    return 0


def _warnings_text(lines: list[str], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(lines)
    if fmt == "csv":
        from mpibench.report.render import csv_rows
        return csv_rows([["warning"]] + [[x] for x in lines])
    if fmt == "markdown":
        from mpibench.report.render import md_escape
        return "\n".join(f"> **{md_escape(x)}**  " for x in lines)
    return "\n".join(lines)
