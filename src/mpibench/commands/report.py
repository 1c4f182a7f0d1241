"""`mpibench report`: a self-contained HTML report (and optionally Markdown) from the store."""

from __future__ import annotations

from mpibench.commands._common import Formatter, add_db, err_console
from mpibench.commands.compare import (
    add_selectors,
    add_table_options,
    check_filters,
    groups_from_args,
    open_store,
    parse_sizes_arg,
)
from mpibench.errors import UsageError
from mpibench.files import check_output

EXAMPLES = """\
examples:
  mpibench report -o report.html                       # the latest campaign
  mpibench report --campaign fabric --line-rate 100Gb/s -o fabric.html --markdown fabric.md
  mpibench report --campaign vasp --grid nodes NCORE --cost-per-node-hour 2.5 -o vasp.html

The HTML file is self-contained: plots are inline SVG, there are no scripts and no network
fetches (a Content-Security-Policy forbids them), so it opens offline and can be mailed.
--markdown writes a Markdown version with the plots as files in <stem>-plots/ beside it."""


def register(sub) -> None:
    p = sub.add_parser("report", help="write an offline HTML (and Markdown) report",
                       description="Write one self-contained HTML report with the comparison, "
                                   "gain table, per-set results, line rate, first-call, grids, "
                                   "scaling, cost tables and plots (latency and bandwidth vs "
                                   "size with CI bands, gain per size, grid heatmaps, scaling "
                                   "curves).",
                       epilog=EXAMPLES, formatter_class=Formatter)
    add_db(p, archive=True)
    add_selectors(p)
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="HTML file (default report.html); '-' for none")
    o.add_argument("--markdown", metavar="FILE", help="also write Markdown with plot files")
    o.add_argument("--plot-format", choices=["svg", "png"], default="svg",
                   help="plot files for --markdown (default svg)")
    o.add_argument("--title", default=None, help="report title (default: the selection)")
    o.add_argument("--no-plots", action="store_true", help="tables only (faster)")
    add_table_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from mpibench.report.html import ReportOptions, build_report, write_html, write_markdown

    sizes = parse_sizes_arg(args.size)
    if sizes and len(sizes) > 1:
        raise UsageError("--size: the report's gain table shows one size per benchmark; give "
                         "one --size")
    if args.output == "-" and not args.markdown:
        raise UsageError("-o -: nothing to write (give --markdown FILE or an HTML file)")
    if args.output != "-":
        check_output(args.output, "-o")
    if args.markdown:
        check_output(args.markdown, "--markdown")
    from mpibench.report.data import load_cells

    with open_store(args.db) as store:
        sets = groups_from_args(store, args)
        statistic = getattr(args, "statistic", "median")
        cells = load_cells(store, sets, statistic=statistic)   # once: filters and report
        if args.benchmark or sizes:
            check_filters(cells, args.benchmark, sizes)
        title = args.title or ("mpibench report: " + " vs ".join(sets))
        opts = ReportOptions(title=title, baseline=args.baseline,
                             size=sizes[0] if sizes else None, line_rate=args.line_rate,
                             mean_std=args.mean_std,
                             grid=tuple(args.grid) if args.grid else None,
                             price_per_node_hour=args.cost_per_node_hour,
                             power_per_node_w=args.power_per_node_w,
                             price_per_kwh=getattr(args, "price_per_kwh", None),
                             jobs_per_year=getattr(args, "jobs_per_year", None) or None,
                             alpha=args.alpha,
                             plots=not args.no_plots, benchmarks=args.benchmark,
                             statistic=statistic,
                             relative=bool(getattr(args, "relative", False)))
        report = build_report(store, sets, opts, cells=cells)
    if args.output != "-":
        path = write_html(report, args.output)
        err_console().print(f"HTML report: {path}")
    if args.markdown:
        path = write_markdown(report, args.markdown, args.plot_format)
        err_console().print(f"Markdown report: {path}")
    return 0
