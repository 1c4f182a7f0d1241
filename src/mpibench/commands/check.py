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

EXAMPLES = """\
examples:
  # last night's campaign against the reference campaign, 5% tolerated, JSON for CI
  mpibench check --campaign reference --campaign nightly --variant openmpi \\
      --baseline reference/openmpi --margin 5% --json

  # two variants of one campaign: is tcp slower than shm?
  mpibench check --campaign fabric --baseline ompi-shm

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
                        "equivalence, else 0: any significant slowdown fails)")
    g.add_argument("--json", action="store_true", help="print the decision as JSON")
    g.add_argument("--require-decision", action="store_true",
                   help="exit 3 when nothing could be tested (too few launches)")
    p.set_defaults(func=run)


def run(args) -> int:
    from mpibench.commands.compare import equivalence_margin
    from mpibench.gate import judge, summary_lines
    from mpibench.report.compare import compare_groups
    from mpibench.report.data import load_cells

    sizes = parse_sizes_arg(args.size)
    with open_store(args.db) as store:
        groups = groups_from_args(store, args)
        if len(groups) < 2:
            raise UsageError(f"check needs a baseline and new launches: only "
                             f"{', '.join(groups)} has results in this selection (select "
                             "two sets, e.g. --campaign reference --campaign nightly)")
        baseline = args.baseline or next(iter(groups))
        cells = load_cells(store, groups, statistic=args.statistic)
        if args.benchmark or sizes:
            check_filters(cells, args.benchmark, sizes)
            wanted = {b.lower() for b in args.benchmark or []}
            cells = {k: v for k, v in cells.items()
                     if (not wanted or k[0].lower() in wanted)
                     and (sizes is None or k[1] in sizes or k[1] is None)}
        margin = equivalence_margin(store, groups, args.margin) or 0.0
        cmp = compare_groups(store, groups, baseline, alpha=args.alpha, cells=cells,
                             statistic=args.statistic)
        res = judge(cmp, margin)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        for line in summary_lines(res):
            print(line)
        for w in cmp.warning_lines:
            err_console().print(w)
    if res.status == "regression":
        return 1
    if res.status == "cannot tell" and args.require_decision:
        return 3
    return 0
