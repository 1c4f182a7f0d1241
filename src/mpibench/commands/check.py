"""`mpibench check`: the regression gate (exit 1 on a significant regression)."""

from __future__ import annotations

import json

from mpibench.commands._common import Formatter, add_db, err_console
from mpibench.commands.compare import (
    _margin,
    add_selectors,
    check_filters,
    groups_from_args,
    open_store,
    parse_sizes_arg,
)
from mpibench.errors import UsageError
from mpibench.termsafe import safe_text

EXAMPLES = """\
examples:
  # last night's campaign against the reference campaign, 5% tolerated, JSON for CI
  mpibench check --campaign reference --campaign nightly --variant openmpi \\
      --baseline reference/openmpi --margin 5% --json

  # two variants of one campaign: is tcp slower than shm?
  mpibench check --campaign fabric --baseline ompi-shm

  # keep the baseline in git: write its values once, then check new launches against them
  mpibench check --campaign reference --variant openmpi --write-reference ref.toml
  mpibench check --campaign nightly --variant openmpi --reference ref.toml --margin 5%

exit status: 0 = no significant regression beyond the margin (or nothing could be tested,
said on screen and in the JSON status "cannot tell"; --require-decision makes that 3),
1 = a significant regression, 2 = bad input."""


def register(sub) -> None:
    p = sub.add_parser(
        "check", help="regression gate: exit 1 when new launches are significantly worse",
        description="Compare new launches with a baseline set (a campaign, a variant, runs "
                    "or labels, selected as for compare) and exit 1 when any cell, or a "
                    "candidate overall, is significantly worse than the baseline by more "
                    "than --margin: a one-sided test on the launch-level model compare uses, "
                    "Holm over every test of the check. One screen of summary, or --json "
                    "for a CI pipeline.",
        epilog=EXAMPLES, formatter_class=Formatter)
    add_db(p, archive=True)
    add_selectors(p)
    g = p.add_argument_group("gate")
    g.add_argument("--margin", type=_margin, default=None, metavar="PCT",
                   help="tolerated slowdown, e.g. 5%% (default: the campaign's [campaign] "
                        "equivalence, with --reference the file's margin; else 0: any "
                        "significant slowdown fails; a reference cell's own margin wins)")
    g.add_argument("--json", action="store_true", help="print the decision as JSON")
    g.add_argument("--require-decision", action="store_true",
                   help="exit 3 when nothing could be tested (too few launches)")
    g.add_argument("--reference", metavar="FILE",
                   help="check every selected set against the stored values of FILE (TOML: "
                        "per benchmark/size/metric a value, its unit, optionally its "
                        "between-launch sd_log and launches, a margin) instead of a "
                        "baseline set (docs/statistics.md)")
    g.add_argument("--write-reference", metavar="FILE",
                   help="write the baseline set's values (geometric mean of the launch "
                        "statistics, sd_log, launches) to FILE for --reference; checks "
                        "nothing")
    # None = the reference file's statistic (else median); compare's default is median
    p.set_defaults(func=run, statistic=None)


def _filtered(cells, args, sizes):
    if args.benchmark or sizes:
        check_filters(cells, args.benchmark, sizes)
        wanted = {b.lower() for b in args.benchmark or []}
        cells = {k: v for k, v in cells.items()
                 if (not wanted or k[0].lower() in wanted)
                 and (sizes is None or k[1] in sizes or k[1] is None)}
    return cells


def run(args) -> int:
    from mpibench.commands.compare import equivalence_margin
    from mpibench.gate import judge
    from mpibench.report.data import load_cells
    from mpibench.report.judge import compare_groups

    if args.reference and args.write_reference:
        raise UsageError("--reference and --write-reference: give one (write the values "
                         "from a baseline, or check against them)")
    if args.write_reference:
        return _write_reference(args)
    if args.reference:
        return _check_reference(args)
    args.statistic = args.statistic or "median"
    sizes = parse_sizes_arg(args.size)
    with open_store(args.db) as store:
        sets = groups_from_args(store, args)
        if len(sets) < 2:
            raise UsageError(f"check needs a baseline and new launches: only "
                             f"{', '.join(sets)} has results in this selection (select "
                             "two sets, e.g. --campaign reference --campaign nightly)")
        baseline = args.baseline or next(iter(sets))
        cells = _filtered(load_cells(store, sets, statistic=args.statistic), args, sizes)
        margin = equivalence_margin(store, sets, args.margin) or 0.0
        cmp = compare_groups(store, sets, baseline, alpha=args.alpha, cells=cells,
                             statistic=args.statistic)
        res = judge(cmp, margin)
    return _decide(res, args, cmp.warning_lines, cmp)


def _decide(res, args, warnings=(), cmp=None) -> int:
    from mpibench.gate import summary_lines
    from mpibench.report import machine_state
    from mpibench.report.compare_view import unbalanced_launches, unbalanced_lines

    if args.json:
        obj = res.to_dict()
        obj["unbalanced_launches"] = unbalanced_launches(cmp) if cmp is not None else None
        if cmp is not None:
            obj["machine_state"] = machine_state.to_obj(cmp)
        print(json.dumps(obj, indent=2))
    else:
        for line in summary_lines(res):
            print(line)
        for line in unbalanced_lines(cmp) if cmp is not None else ():
            print(f"  warning: {safe_text(line)}")
        # the compared launches' machine state (when probed), as under compare's table
        for label, text in machine_state.footer(cmp) if cmp is not None else ():
            print(f"{label}: {safe_text(text)}")
        for w in warnings:
            err_console().print(w)
    if res.status == "regression":
        return 1
    if res.status == "cannot tell" and args.require_decision:
        return 3
    return 0


def _check_reference(args) -> int:
    from mpibench import gate_reference
    from mpibench.report.data import load_cells

    ref = gate_reference.load(args.reference)      # refused before the store is opened
    if args.baseline:
        raise UsageError(f"--baseline {args.baseline}: not used with --reference (the "
                         f"values in {args.reference} are the baseline)")
    if args.statistic and args.statistic != ref.statistic:
        raise UsageError(f"{args.reference}:{ref.statistic_line or 1}: statistic = "
                         f"{ref.statistic!r} but --statistic {args.statistic}; expected the "
                         "statistic the reference values are of")
    sizes = parse_sizes_arg(args.size)
    with open_store(args.db) as store:
        sets = groups_from_args(store, args)
        cells = _filtered(load_cells(store, sets, statistic=ref.statistic), args, sizes)
        opts = gate_reference.core_options_of(store, [c for by in cells.values()
                                                      for c in by.values()])
        res = gate_reference.judge(ref, cells, list(sets), args.margin, args.alpha, opts)
    return _decide(res, args)


def _write_reference(args) -> int:
    from mpibench import gate_reference
    from mpibench.files import check_output, write_file
    from mpibench.report.data import load_cells

    out = check_output(args.write_reference, "--write-reference")
    statistic = args.statistic or "median"
    sizes = parse_sizes_arg(args.size)
    with open_store(args.db) as store:
        sets = groups_from_args(store, args)
        if args.baseline and args.baseline not in sets:
            raise UsageError(f"--baseline {args.baseline}: no such set in this selection "
                             f"(sets: {', '.join(sets)})")
        if not args.baseline and len(sets) > 1:
            raise UsageError(f"--write-reference: {len(sets)} sets selected ("
                             f"{', '.join(sets)}); expected one, or --baseline SET")
        base = args.baseline or next(iter(sets))
        cells = _filtered(load_cells(store, {base: sets[base]}, statistic=statistic),
                          args, sizes)
        own = [by[base] for by in cells.values() if base in by and by[base].launch_values]
        if not own:
            raise UsageError(f"--write-reference: {base} has no launch statistics in this "
                             "selection; expected a set with results")
        source = f"set {base} of {args.db or 'the store'}, {len(own)} cells"
        text = gate_reference.render(own, statistic=statistic, source=source,
                                     margin=args.margin,
                                     options=gate_reference.core_options_of(store, own))
    gate_reference.parse(text, str(out))        # what is written must read back
    write_file(out, text)
    n = max(c.launches for c in own)
    print(f"wrote {out}: {len(own)} cells of {base} (geometric mean of each launch's "
          f"{statistic}, up to {n} launches, with sd_log where >= 2)")
    return 0
