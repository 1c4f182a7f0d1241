"""The tables that follow a comparison, as one list that `compare` and `report` both walk.

A section is a key, a title, a builder (Context -> Tables) and two predicates: whether
`compare` prints it (usually a flag asked for it) and whether `report` includes it (usually:
it has rows), its position in the report and, for the report, its figures or a builder of
its own (report/views.py: the comparison with coloured cells, the plots, the results per
set, the grids with heatmaps). The list order is `compare`'s; `report_at` is the report's.
A new table is one builder and one entry in SECTIONS. `compare` prints the comparison and
the results itself (they are the command's main output, in every format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mpibench.errors import UsageError
from mpibench.report.model import Comparison
from mpibench.report.parts import Figure, Part
from mpibench.report.render import Table
from mpibench.store import Store


@dataclass
class Options:
    """What the user asked for (compare's flags; report's options)."""
    size: int | None = None              # gain table size
    line_rate: Any = None
    mean_std: bool = False
    grid: tuple[str, str] | None = None
    metric: str | None = None
    scaling_by: str | None = None
    price_per_node_hour: float | None = None
    power_per_node_w: float | None = None
    detect: float | None = None          # launches-needed plan for this relative difference
    gain_table: bool = False
    first_call: bool = False
    scaling: bool = False
    multi_sizes: bool = False            # compare was given several --size values
    price_per_kwh: float | None = None
    jobs_per_year: float | None = None
    differences: bool = False            # the "what differs between the sets" table
    plots: bool = True                   # the report's figures


@dataclass
class Context:
    store: Store
    sets: Mapping[str, list[str]]
    baseline: str
    cells: dict                          # the selected cells (filters applied)
    curve_cells: dict                    # every size of the selected benchmarks (line rate)
    cmp: Comparison | None
    warnings: list[str]
    alpha: float = 0.05
    statistic: str = "median"
    opts: Options = field(default_factory=Options)
    for_report: bool = False
    # the grids behind the grid tables (compare keys its tables by them)
    grid_objects: list = field(default_factory=list)


@dataclass(frozen=True)
class SectionSpec:
    key: str
    report_id: str          # the report's anchor (id="...")
    title: str
    build: Callable[[Context], list[Table]]
    in_compare: Callable[[Context], bool]
    in_report: Callable[[Context], bool]
    intro: str = ""         # the report's paragraph above the section's tables
    report_at: int = 0      # position in the report (ascending)
    # the report's own builder (replaces build + "has rows"); None: nothing to show
    report: Callable[[Context], Part | None] | None = None
    # the report's figures for the tables `build` made
    figures: Callable[[Context, list[Table]], list[Figure]] | None = None


def _has_spec(ctx: Context, keys: tuple[str, ...]) -> bool:
    from mpibench.report.specs import _spec_value

    ids = [r for ids in ctx.sets.values() for r in ids]
    return _spec_value(ctx.store, ids, keys) is not None


def _plan(ctx: Context) -> list[Table]:
    from mpibench.report.planning import plan_table

    if ctx.cmp is None:
        raise UsageError("--detect needs two or more result sets")
    return [plan_table(ctx.cmp, ctx.opts.detect)]


def _gain(ctx: Context) -> list[Table]:
    from mpibench.report.gain import gain_table

    if ctx.cmp is None:
        raise UsageError("--gain-table needs two or more result sets")
    if ctx.opts.multi_sizes:
        raise UsageError("--gain-table takes one --size (the gain table shows one size per "
                         "benchmark)")
    # measured: every size of the selected benchmarks, so a benchmark the --size filter
    # left without rows still gets its note
    return [gain_table(ctx.cmp, size=ctx.opts.size, measured=ctx.curve_cells)]


def _line_rate(ctx: Context) -> list[Table]:
    from mpibench.report.linerate import line_rate_table

    # the peak and the half-peak size are properties of the whole bandwidth curve: --size
    # picks the rows of the other tables, not the sizes searched here
    lr = line_rate_table(ctx.store, ctx.sets, ctx.opts.line_rate, cells=ctx.curve_cells,
                         warnings=ctx.warnings)
    if not ctx.for_report and ctx.opts.line_rate is None and \
            not any(r.get("line_rate_bps") for r in lr.records):
        return []       # compare: a stored campaign line rate only if some run has one
    return [lr]


def _first_call(ctx: Context) -> list[Table]:
    from mpibench.report.firstcall import first_call_table

    return [first_call_table(ctx.store, ctx.sets, mean_std=ctx.opts.mean_std,
                             cells=ctx.cells)]


def _grids(ctx: Context) -> list[Table]:
    from mpibench.report.grids import grid_tables, grids

    row, col = ctx.opts.grid
    gl = grids(ctx.store, ctx.sets, row, col, baseline=ctx.baseline, metric=ctx.opts.metric,
               alpha=ctx.alpha, cells=ctx.cells, statistic=ctx.statistic)
    if not gl:
        raise UsageError(f"--grid {row} {col}: no cells vary both parameters in the selection")
    ctx.grid_objects = gl
    return [t for g in gl for t in grid_tables(g)]


def _scaling(ctx: Context) -> list[Table]:
    from mpibench.report.scaling import scaling_table

    return [scaling_table(ctx.store, ctx.sets, by=ctx.opts.scaling_by,
                          metric=ctx.opts.metric, cells=ctx.cells,
                          include_sizes=None if ctx.opts.scaling else False)]


def _cost(ctx: Context) -> list[Table]:
    from mpibench.report.cost import cost_table

    ct = cost_table(ctx.store, ctx.sets, price_per_node_hour=ctx.opts.price_per_node_hour,
                    power_per_node_w=ctx.opts.power_per_node_w, baseline=ctx.baseline,
                    cells=ctx.cells)
    if ctx.for_report and ct.rows:
        return [ct] + _projection(ctx)      # the report shows the yearly projection with it
    return [ct]


def _projection(ctx: Context) -> list[Table]:
    from mpibench.report.projection import projection_table

    return [projection_table(ctx.store, ctx.sets, jobs_per_year=ctx.opts.jobs_per_year,
                             price_per_node_hour=ctx.opts.price_per_node_hour,
                             power_per_node_w=ctx.opts.power_per_node_w,
                             price_per_kwh=ctx.opts.price_per_kwh, baseline=ctx.baseline,
                             cells=ctx.cells)]


def _profile(ctx: Context) -> list[Table]:
    from mpibench.report.profile import report_tables

    return report_tables(ctx.store, ctx.sets)


def _comparison_part(ctx: Context) -> Part | None:
    from mpibench.report.views import comparison_part

    return comparison_part(ctx)


def _plots_part(ctx: Context) -> Part | None:
    from mpibench.report.views import plots_part

    return plots_part(ctx)


def _results_part(ctx: Context) -> Part | None:
    from mpibench.report.views import results_part

    return results_part(ctx)


def _grids_part(ctx: Context) -> Part | None:
    from mpibench.report.views import grids_part

    return grids_part(ctx)


def _scaling_figures(ctx: Context, tables: list[Table]) -> list[Figure]:
    from mpibench.report.views import scaling_figures

    return scaling_figures(ctx, tables)


def _no_tables(ctx: Context) -> list[Table]:
    return []


def _cost_wanted(ctx: Context) -> bool:
    return (ctx.opts.price_per_node_hour is not None or ctx.opts.power_per_node_w is not None
            or _has_spec(ctx, ("price_per_node_hour", "power_per_node_w")))


def _differences(ctx: Context) -> list[Table]:
    from mpibench.report.differences import differences_table

    return [differences_table(ctx.store, ctx.sets, ctx.baseline)]


def _decisions(ctx: Context) -> list[Table]:
    from mpibench.report.decisions import decisions_tables

    return decisions_tables(ctx.store, ctx.sets)


# Order = the order compare prints them (after the comparison and the results); report_at
# = the order the report shows them in (the gain table right after the comparison, as it
# reads best). The report builds its grids itself (auto-detected, with heatmaps).
SECTIONS: list[SectionSpec] = [
    SectionSpec("comparison", "comparison", "Comparison", _no_tables,
                in_compare=lambda c: False,     # compare's main output
                in_report=lambda c: c.cmp is not None,
                report_at=10, report=_comparison_part),
    SectionSpec("plots", "plots", "Plots", _no_tables,
                in_compare=lambda c: False,
                in_report=lambda c: True,
                report_at=30, report=_plots_part),
    SectionSpec("results", "results", "Results per set", _no_tables,
                in_compare=lambda c: False,     # compare --results
                in_report=lambda c: True,
                report_at=40, report=_results_part),
    SectionSpec("plan", "plan", "Launches needed", _plan,
                in_compare=lambda c: c.opts.detect is not None,
                in_report=lambda c: c.opts.detect is not None and c.cmp is not None,
                report_at=50),
    SectionSpec("gain_table", "gain", "Gain table", _gain,
                in_compare=lambda c: c.opts.gain_table,
                in_report=lambda c: c.cmp is not None,
                report_at=20),
    SectionSpec("line_rate", "line-rate", "Line rate", _line_rate,
                in_compare=lambda c: c.opts.line_rate is not None
                or _has_spec(c, ("line_rate_bps", "line_rate")),
                in_report=lambda c: True, report_at=60),
    SectionSpec("first_call", "first-call", "First call vs steady state", _first_call,
                in_compare=lambda c: c.opts.first_call or c.opts.mean_std,
                in_report=lambda c: True, report_at=70),
    SectionSpec("grid", "grids", "Grids", _grids,
                in_compare=lambda c: c.opts.grid is not None,
                in_report=lambda c: True,       # the report's own (auto-detected, heatmaps)
                report_at=80, report=_grids_part),
    SectionSpec("scaling", "scaling", "Scaling", _scaling,
                in_compare=lambda c: c.opts.scaling,
                in_report=lambda c: True, report_at=90, figures=_scaling_figures),
    SectionSpec("profile", "profile", "MPI profile", _profile,
                in_compare=lambda c: False,     # mpibench profile --show prints them
                in_report=lambda c: True, report_at=100,
                intro="From the PMPI profiler's per-rank counters of every profiled launch "
                      "(docs/profiler.md): columns are sets at one np; a message is one call "
                      "of a function that moves data, on the rank that made it."),
    SectionSpec("cost", "cost", "Cost and energy", _cost,
                in_compare=_cost_wanted,
                in_report=lambda c: True, report_at=110),
    SectionSpec("differences", "differences", "What differs between the sets", _differences,
                in_compare=lambda c: c.opts.differences and len(c.sets) > 1,
                in_report=lambda c: len(c.sets) > 1, report_at=120),
    SectionSpec("decisions", "decisions", "Launches where they decide", _decisions,
                in_compare=lambda c: False,     # `campaign status` prints them
                in_report=lambda c: True,       # only a repeats = "decide" campaign has rows
                report_at=130),
    SectionSpec("projection", "projection", "Yearly projection", _projection,
                in_compare=lambda c: bool(c.opts.jobs_per_year)
                or _has_spec(c, ("jobs_per_year",)),
                in_report=lambda c: False,      # the report shows it in the cost section
                report_at=140),
]


def compare_tables(ctx: Context) -> list[tuple[str, Table]]:
    """(key, table) of every section `compare` was asked for, in SECTIONS order; grid
    tables are keyed grid_<i>_<j> as before."""
    out: list[tuple[str, Table]] = []
    for s in SECTIONS:
        if not s.in_compare(ctx):
            continue
        tables = s.build(ctx)
        if s.key == "grid":
            # grid_tables(g): the side-by-side table, then one ratio table per candidate
            k = 0
            for i, g in enumerate(ctx.grid_objects):
                for j in range(1 + len(g.ratio)):
                    out.append((f"grid_{i}_{j}", tables[k]))
                    k += 1
            continue
        out += [(s.key, t) for t in tables]
    return out


def report_sections(ctx: Context) -> list[tuple[SectionSpec, Part]]:
    """(section, what it shows) of every section the report includes, in report_at order:
    a section's own report builder, else its tables with rows and their figures."""
    out = []
    for s in sorted(SECTIONS, key=lambda s: s.report_at):
        if not s.in_report(ctx):
            continue
        if s.report is not None:
            part = s.report(ctx)
        else:
            tables = [t for t in s.build(ctx) if t.rows]
            part = Part(tables=tables,
                        figures=s.figures(ctx, tables) if s.figures and tables else [])
        if part is not None and (part.tables or part.figures or part.intro):
            out.append((s, part))
    return out


__all__ = ["Options", "Context", "SectionSpec", "SECTIONS", "compare_tables",
           "report_sections"]
