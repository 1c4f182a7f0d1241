"""The parts only the HTML/Markdown report shows, as section builders (sections.SECTIONS):
the comparison with its cells classed by outcome, the plots, each set's results table, the
grids found in the cells with heatmaps, and the scaling figures. Each takes the sections'
Context and returns a Part (report/parts.py), or None when it has nothing to show.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mpibench.report import machine_state, plots
from mpibench.report.compare_view import (
    _table_model,
    pairing_legend,
    pairing_summary,
    unbalanced_lines,
)
from mpibench.report.data import (
    bench_sort_key,
    imported_clause,
    imported_clause_for,
    imported_statistics,
)
from mpibench.report.grids import grid_tables, grids
from mpibench.report.model import Comparison, Row, fmt_margin
from mpibench.report.parts import Figure, Part
from mpibench.report.render import Table
from mpibench.report.results import _results_table

if TYPE_CHECKING:  # a type only: sections.py imports these builders when it runs them
    from mpibench.report.sections import Context

# Limits that keep a report readable (and fast) when a campaign is huge; the CLI tables and
# CSV/JSON always have everything.
MAX_GRIDS = 12
MAX_GRID_COLS = 40
MAX_GRID_ROWS = 60
MAX_SCALING_SERIES = 16
MAX_PANELS = 12


def _imported(ctx: Context) -> str:
    return imported_clause_for(imported_statistics(
        c for by in ctx.cells.values() for c in by.values()))


def comparison_part(ctx: Context) -> Part:
    imported = _imported(ctx)
    return Part(tables=[_comparison_table(ctx.cmp)], comparison=ctx.cmp,
                intro="Per cell: each side's geometric mean of its launch medians ± 95% "
                      "CI from the spread between launches (one launch = one mpirun, the "
                      "unit of replication)"
                      + (f" ({imported})" if imported else "")
                      + "; gain > 1 means the candidate is better, with its CI at the "
                      "row's adjusted level (it excludes 1 exactly when the row is "
                      "significant); p = the adjusted p of the test the report's "
                      "header names; cannot tell = fewer than two launches on a side."
                      + "".join(f" {line[0].upper()}{line[1:]}." for line in
                                pairing_legend(ctx.cmp) + unbalanced_lines(ctx.cmp)))


def test_sentence(cmp: Comparison | None) -> str:
    """Which test the comparison's gains had, read from the comparison itself (the report's
    header): the launch-level t test (stats.launch.compare_cells), paired by round or not as
    its rows were, Holm over the table's family, TOST and sequential looks where they ran.
    '' without a comparison or a tested row."""
    if cmp is None:
        return ""
    ps = pairing_summary(cmp)
    if not ps["tested_rows"]:
        return ""
    if ps["pairing"] != "round":
        pairing = "unpaired (each side's launches an independent sample)"
    elif ps["paired_rows"] == ps["tested_rows"]:
        pairing = "paired by round (the per-round differences of an interleaved campaign)"
    else:
        pairing = (f"paired by round in {ps['paired_rows']} of {ps['tested_rows']} tested "
                   "rows (interleaved rounds), the others unpaired")
    out = ("a t test on the logs of the launch statistics (one value per launch), a "
           f"benchmark's sizes pooling their between-launch spread, {pairing}; one Holm-type "
           "procedure over every p of the comparison (cells, geomean rows, verdicts: a "
           "weighted graph of Bonferroni tests, docs/statistics.md 'Multiplicity'), each "
           "gain's CI at its row's adjusted level")
    if cmp.equivalence:
        out += f"; equivalence within ±{fmt_margin(cmp.equivalence)} by TOST"
    if any(d.seq_level is not None for r in cmp.rows for d in r.deltas.values()):
        out += ("; a row a repeats = \"decide\" campaign decided at an earlier look shows "
                "that look's decision, its CI widened")
    return out


def plots_part(ctx: Context) -> Part | None:
    if not ctx.opts.plots:
        return None
    imported = _imported(ctx)
    plot_cmp = ctx.cmp if ctx.cmp is not None else _single(ctx.cells, next(iter(ctx.sets)))
    figs = []
    if plot_cmp.rows:
        for name, fn, cap in (
                ("latency", plots.latency_figure, "Time (geometric mean of launch medians) "
                 "vs message size (log-log), shaded: 95% CI between launches"
                 + (f"; {imported} (no band)" if imported else "")),
                ("bars", plots.bar_figure, "Time per benchmark and message size, the "
                 "sets side by side (log scale); whiskers: 95% CI between launches"),
                ("bandwidth", plots.bandwidth_figure, "Bandwidth (MB/s = 10^6 B/s) vs "
                 "message size, shaded: from the between-launch 95% CI of the time"),
                ("gain", plots.gain_figure, f"Gain against {ctx.baseline} per size, error "
                 "bars: 95% CI between launches; hollow markers are not significant")):
            fig = fn(plot_cmp)
            if fig is not None:
                figs.append(Figure(name, cap, fig))
    return Part(figures=figs) if figs else None


def results_part(ctx: Context) -> Part:
    tables = []
    for g in ctx.sets:
        gcells = [by[g] for by in ctx.cells.values() if g in by]
        hdr, body, notes = _results_table(gcells)
        tables.append(Table(title=g, header=hdr, rows=body, notes=notes, kind="results",
                            caption="n = samples over all launches; median = geometric "
                                    "mean of the launch medians; ±CI = half-width of its "
                                    "95% CI from the spread between launches, as % (? = "
                                    "one launch); within = a launch's own CI of its "
                                    "median (median over launches): precision inside a "
                                    "launch, not the uncertainty of a comparison"
                                    + (f" ({own})" if (own := imported_clause(gcells))
                                       else "")
                                    + "; first = first-call time (median over "
                                    "launches); launches = count (min–max of per-launch "
                                    "medians)"))
    return Part(tables=tables)


def scaling_figures(ctx: Context, tables: list[Table]) -> list[Figure]:
    if not ctx.opts.plots:
        return []
    fig, shown, total = plots.scaling_figure(tables[0].records,
                                             max_series=MAX_SCALING_SERIES,
                                             max_panels=MAX_PANELS, with_counts=True)
    cap = "Speedup vs count (dashed: ideal)"
    if shown < total:
        cap += f"; {shown} of {total} series plotted (all are in the table)"
    out = [Figure("scaling", cap, fig)]
    fom = plots.fom_figure(tables[0].records, max_series=MAX_SCALING_SERIES,
                           max_panels=MAX_PANELS)
    if fom is not None:
        out.append(Figure("figure-of-merit", "Figure of merit vs count per "
                          "variant; whiskers: 95% CI between launches", fom))
    return out


def _auto_grid(cells: dict) -> list[tuple[str | None, str, str]]:
    """Per application benchmark: rows 'nodes' (or 'np') x its parameter with most distinct
    values. Each application group picks its own axes (a campaign may hold GROMACS over
    steps and NetPIPE over message limits); [(benchmark, row, col)]."""
    values: dict[str, dict[str, set]] = {}
    nps: dict[str, set] = {}
    for key in cells:
        if key.size is not None:
            continue
        bench = key.benchmark
        nps.setdefault(bench, set()).add(key.np)
        for k, v in key.params.items():
            values.setdefault(bench, {}).setdefault(k, set()).add(json.dumps(v, default=str))
    out: list[tuple[str | None, str, str]] = []
    for bench in sorted(nps, key=bench_sort_key):
        varying = {k: v for k, v in values.get(bench, {}).items() if len(v) > 1}
        if "nodes" in varying:
            row = "nodes"
        elif len(nps[bench]) > 1:
            row = "np"
        elif varying:
            row = max(varying, key=lambda k: len(varying[k]))
        else:
            continue
        others = [k for k in varying if k != row]
        if others:
            out.append((bench, row, max(others, key=lambda k: len(varying[k]))))
    return out


def grids_part(ctx: Context) -> Part | None:
    """The report's grids: the asked-for one or every grid the cells form, with heatmaps,
    within the size limits that keep a report readable."""
    store, sets, cells, opts = ctx.store, ctx.sets, ctx.cells, ctx.opts
    specs = [(None, *opts.grid)] if opts.grid else _auto_grid(cells)
    if not specs:
        return None
    gs = Part()
    all_grids = [g for bench, row, col in specs
                 for g in grids(store, sets, row, col, baseline=ctx.baseline,
                                alpha=ctx.alpha, cells=cells, benchmark=bench,
                                max_shape=(MAX_GRID_ROWS, MAX_GRID_COLS),
                                statistic=ctx.statistic)]
    skipped = []
    for grid in all_grids[:MAX_GRIDS]:
        shape = (len(grid.row_values), len(grid.col_values))
        if shape[1] > MAX_GRID_COLS or shape[0] > MAX_GRID_ROWS:
            skipped.append(f"{grid.title} ({shape[0]} x {shape[1]})")
            continue
        gs.tables += grid_tables(grid)
        if opts.plots:
            for g in grid.sets:
                gs.figures.append(Figure(f"grid-{len(gs.figures)}",
                                         f"{grid.title}: {g} (best cell per row outlined)",
                                         plots.grid_heatmap(grid, set_name=g)))
            for cand in grid.ratio:
                gs.figures.append(Figure(f"grid-{len(gs.figures)}",
                                         f"{grid.title}: gain {cand} vs {grid.baseline}",
                                         plots.grid_heatmap(grid, ratio_for=cand)))
    more = len(all_grids) - MAX_GRIDS
    if skipped or more > 0:
        gs.intro = ("Left out of the report to keep it readable: "
                    + "; ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else "")
                    + (f"; {more} more grid(s)" if more > 0 else "")
                    + ". All grids: mpibench compare --grid ROW COL --format csv.")
    return gs if gs.tables or gs.intro else None


def _single(cells: dict, set_name: str) -> Comparison:
    """A Comparison with one set and no tests, so the plots can show a single set."""
    rows = []
    for key, by in cells.items():
        c = by.get(set_name)
        if c is None:
            continue
        rows.append(Row(key=key, unit=c.unit, better=c.better, cells={set_name: c}, deltas={}))
    return Comparison(sets=[set_name], baseline=set_name, alpha=0.05, rows=rows, summaries=[],
                      footnotes=[], verdict="", verdicts={}, run_counts={})


def _comparison_table(cmp: Comparison) -> Table:
    hdr, body, summary_idx = _table_model(cmp)
    # the verdict is in the report's header; under the table the launches' machine state
    t = Table(title=cmp.title, header=hdr, rows=body, bold_rows=set(summary_idx),
              notes=list(cmp.footnotes), kind="comparison", footer=machine_state.footer(cmp))
    t.cell_classes = {}   # type: ignore[attr-defined]
    # class the "vs" columns by the outcome, for colour
    show_np = len({r.np for r in cmp.rows}) > 1
    base_cols = 3 + (1 if show_np else 0)
    i = 0
    for r in cmp.rows:
        for k, cand in enumerate(cmp.candidates):
            col = base_cols + 2 * k + 1      # per candidate: its value, then "vs"
            d = r.deltas[cand]
            cls = {"better": "better", "worse": "worse"}.get(d.direction, "same") \
                if d.tested else ""
            t.cell_classes[(i, col)] = cls
        i += 1
        if i in summary_idx:
            i += 1
    return t
