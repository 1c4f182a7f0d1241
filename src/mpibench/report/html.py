"""`mpibench report`: one self-contained HTML file (and a Markdown version) from the store.

The HTML is a jinja2 template with autoescape on; plots are matplotlib SVG inlined in the page
(text as <text>, which matplotlib XML-escapes); a Content-Security-Policy meta tag forbids any
fetch or script, so the file opens offline and user-provided strings cannot run code.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

import mpibench
from mpibench.files import write_file
from mpibench.report import pipeline, plots
from mpibench.report.compare_view import _table_model, render_markdown
from mpibench.report.data import (
    bench_sort_key,
    imported_clause,
    imported_clause_for,
    imported_statistics,
    tool_statistic,
)
from mpibench.report.grids import grid_tables, grids
from mpibench.report.model import Comparison, Row
from mpibench.report.render import Table, md_escape, render_table
from mpibench.report.results import _results_table
from mpibench.report.sections import Context, Options, report_sections
from mpibench.store import Store
from mpibench.store.report_queries import set_runs_info

TEMPLATES = Path(__file__).with_name("templates")

# Limits that keep a report readable (and fast) when a campaign is huge; the CLI tables and
# CSV/JSON always have everything.
MAX_GRIDS = 12
MAX_GRID_COLS = 40
MAX_GRID_ROWS = 60
MAX_SCALING_SERIES = 16
MAX_PANELS = 12


@dataclass
class ReportOptions:
    title: str = "mpibench report"
    baseline: str | None = None
    size: int | None = None                  # gain table size (default largest common)
    line_rate: str | None = None             # e.g. "100Gb/s"; else runs' spec line_rate_bps
    mean_std: bool = False
    grid: tuple[str, str] | None = None      # (row param, column param); auto when None
    price_per_node_hour: float | None = None
    power_per_node_w: float | None = None
    price_per_kwh: float | None = None
    jobs_per_year: float | None = None
    alpha: float = 0.05
    statistic: str = "median"        # each launch's statistic (median | mean)
    relative: bool = False           # candidates as % of the baseline (tables and plots)
    plots: bool = True
    benchmarks: list[str] | None = None      # only these (case-insensitive)


@dataclass
class Figure:
    name: str
    caption: str
    fig: Any                  # matplotlib Figure (rendered lazily)
    _svg: str | None = None

    @property
    def svg(self) -> str:
        if self._svg is None:
            self._svg = plots.to_svg(self.fig)
        return self._svg


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)     # pre-rendered Markdown blocks
    comparison: Comparison | None = None                    # rendered with render_markdown
    figures: list[Figure] = field(default_factory=list)


@dataclass
class Report:
    title: str
    store_path: str
    groups: list[dict[str, Any]]
    baseline: str
    comparison: Comparison | None
    sections: list[Section]
    verdicts: list[str]
    generated: str
    # transport verification: a requested transport that did not take effect (escaped
    # and shown above everything else)
    warnings: list[str] = field(default_factory=list)
    # the statistics of imported rows (data.imported_statistics); empty for all-median
    imported: list[str] = field(default_factory=list)


def _group_info(store: Store, groups: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    out = []
    for g, ids in groups.items():
        camps, stacks, fps = Counter(), Counter(), Counter()
        for name, spec_json, fid, t_act, t_req in set_runs_info(store, ids):
            camps[name] += 1
            fps[fid] += 1
            try:
                spec = json.loads(spec_json or "{}")
            except ValueError:
                spec = {}
            stack = spec.get("stack") if isinstance(spec, dict) else None
            transport = t_act or t_req or (spec.get("transport") if isinstance(spec, dict)
                                           else None)
            stacks[" / ".join(str(x) for x in (stack, transport) if x) or "-"] += 1
        fp_desc = []
        for fid, _n in fps.most_common(3):
            fp = store.fingerprint(fid) if fid else None
            if fp:
                st = fp.get("stack") or {}
                ver = st.get("version") if isinstance(st, dict) else st
                name = st.get("name") if isinstance(st, dict) else ""
                kernel = (fp.get("machine") or {}).get("kernel") if isinstance(
                    fp.get("machine"), dict) else None
                what = ", ".join(str(x) for x in (" ".join(str(y) for y in (name, ver) if y),
                                                  f"kernel {kernel}" if kernel else "") if x)
                fp_desc.append(f"{fid[:8]} ({what})" if what else fid[:8])
            else:
                fp_desc.append("none")
        more = f" +{len(fps) - 3} more" if len(fps) > 3 else ""
        out.append({"name": g, "runs": len(ids),
                    "campaigns": ", ".join(c for c, _ in camps.most_common()),
                    "stack": ", ".join(s for s, _ in stacks.most_common(3)),
                    "fingerprints": f"{len(fps)}: " + "; ".join(fp_desc) + more})
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


def build_report(store: Store, groups: Mapping[str, list[str]],
                 opts: ReportOptions | None = None, *, cells: dict | None = None) -> Report:
    """cells: load_cells(store, groups) when the caller already has them (with samples)."""
    opts = opts or ReportOptions()
    order = list(groups)
    baseline = opts.baseline or order[0]
    # the report pipeline (report/pipeline.py): load and judge as compare does
    request = pipeline.Request(
        baseline=baseline, alpha=opts.alpha, statistic=opts.statistic,
        benchmarks=opts.benchmarks, title=f"Comparison against {baseline}",
        relative=opts.relative,
        options=Options(size=opts.size, line_rate=opts.line_rate, mean_std=opts.mean_std,
                        grid=opts.grid, price_per_node_hour=opts.price_per_node_hour,
                        power_per_node_w=opts.power_per_node_w,
                        price_per_kwh=opts.price_per_kwh, jobs_per_year=opts.jobs_per_year))
    judged = pipeline.judge(store, pipeline.load(store, groups, request, cells=cells), request)
    cells, cmp, warnings = judged.loaded.cells, judged.cmp, judged.warnings
    sections: list[Section] = []
    gain_at = 1                       # the gain table follows the comparison
    verdicts: list[str] = []
    imported_stats = imported_statistics(c for by in cells.values() for c in by.values())
    imported = imported_clause_for(imported_stats)
    if cmp is not None:
        verdicts = list(cmp.verdicts.values())
        s = Section("comparison", "Comparison",
                    intro="Per cell: each side's geometric mean of its launch medians ± 95% "
                          "CI from the spread between launches (one launch = one mpirun, the "
                          "unit of replication)"
                          + (f" ({imported})" if imported else "")
                          + "; gain > 1 means the candidate is better, with its 95% CI; p = "
                          "Welch t on the log launch statistics, Holm-corrected across the "
                          "table; cannot tell = fewer than two launches on a side.")
        s.tables.append(_comparison_table(cmp))
        s.comparison = cmp            # Markdown rendered only when asked for
        sections.append(s)
    else:
        cmp_plot = _single(cells, order[0])
    if opts.plots:
        figs = []
        plot_cmp = cmp if cmp is not None else cmp_plot
        if plot_cmp.rows:
            for name, fn, cap in (
                    ("latency", plots.latency_figure, "Time (geometric mean of launch medians) "
                     "vs message size (log-log), shaded: 95% CI between launches"
                     + (f"; {imported} (no band)" if imported else "")),
                    ("bars", plots.bar_figure, "Time per benchmark and message size, the "
                     "sets side by side (log scale); whiskers: 95% CI between launches"),
                    ("bandwidth", plots.bandwidth_figure, "Bandwidth (MB/s = 10^6 B/s) vs "
                     "message size, shaded: from the between-launch 95% CI of the time"),
                    ("gain", plots.gain_figure, f"Gain against {baseline} per size, error "
                     "bars: 95% CI between launches; hollow markers are not significant")):
                fig = fn(plot_cmp)
                if fig is not None:
                    figs.append(Figure(name, cap, fig))
        if figs:
            sections.append(Section("plots", "Plots", figures=figs))
    # per-set results
    rs = Section("results", "Results per set")
    for g in order:
        gcells = [by[g] for by in cells.values() if g in by]
        hdr, body, notes = _results_table(gcells)
        rs.tables.append(Table(title=g, header=hdr, rows=body, notes=notes, kind="results",
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
    sections.append(rs)
    # the tables compare can print too: one list (report/sections.py) that both walk
    ctx = pipeline.context(store, judged, request, for_report=True)
    for spec, built in report_sections(ctx, own={"grid": lambda c: _grid_section(c, opts)}):
        if spec.key == "grid":
            if built is not None:
                sections.append(built)
            continue
        s = Section(spec.report_id, spec.title, tables=built, intro=spec.intro)
        if spec.key == "scaling" and opts.plots:
            fig, shown, total = plots.scaling_figure(built[0].records,
                                                     max_series=MAX_SCALING_SERIES,
                                                     max_panels=MAX_PANELS, with_counts=True)
            cap = "Speedup vs count (dashed: ideal)"
            if shown < total:
                cap += f"; {shown} of {total} series plotted (all are in the table)"
            s.figures.append(Figure("scaling", cap, fig))
            fom = plots.fom_figure(built[0].records, max_series=MAX_SCALING_SERIES,
                                   max_panels=MAX_PANELS)
            if fom is not None:
                s.figures.append(Figure("figure-of-merit", "Figure of merit vs count per "
                                        "variant; whiskers: 95% CI between launches", fom))
        if spec.key == "gain_table":
            sections.insert(gain_at, s)     # right after the comparison, as it reads best
            continue
        sections.append(s)
    return Report(title=opts.title, store_path=str(store.path), groups=_group_info(store, groups),
                  baseline=baseline, comparison=cmp, sections=sections, verdicts=verdicts,
                  generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"), warnings=warnings,
                  imported=imported_stats)


def _grid_section(ctx: Context, opts: ReportOptions) -> Section | None:
    """The report's grids: the asked-for one or every grid the cells form, with heatmaps,
    within the size limits that keep a report readable."""
    store, groups, cells = ctx.store, ctx.groups, ctx.cells
    specs = [(None, *opts.grid)] if opts.grid else _auto_grid(cells)
    if not specs:
        return None
    gs = Section("grids", "Grids")
    all_grids = [g for bench, row, col in specs
                 for g in grids(store, groups, row, col, baseline=ctx.baseline,
                                alpha=opts.alpha, cells=cells, benchmark=bench,
                                max_shape=(MAX_GRID_ROWS, MAX_GRID_COLS),
                                statistic=opts.statistic)]
    skipped = []
    for grid in all_grids[:MAX_GRIDS]:
        shape = (len(grid.row_values), len(grid.col_values))
        if shape[1] > MAX_GRID_COLS or shape[0] > MAX_GRID_ROWS:
            skipped.append(f"{grid.title} ({shape[0]} x {shape[1]})")
            continue
        gs.tables += grid_tables(grid)
        if opts.plots:
            for g in grid.groups:
                gs.figures.append(Figure(f"grid-{len(gs.figures)}",
                                         f"{grid.title}: {g} (best cell per row outlined)",
                                         plots.grid_heatmap(grid, group=g)))
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


def _single(cells: dict, group: str) -> Comparison:
    """A Comparison with one set and no tests, so the plots can show a single set."""
    rows = []
    for key, by in cells.items():
        c = by.get(group)
        if c is None:
            continue
        rows.append(Row(key=key, unit=c.unit, better=c.better, cells={group: c}, deltas={}))
    return Comparison(groups=[group], baseline=group, alpha=0.05, rows=rows, summaries=[],
                      footnotes=[], verdict="", verdicts={}, run_counts={})


def _comparison_table(cmp: Comparison) -> Table:
    hdr, body, summary_idx = _table_model(cmp)
    t = Table(title=cmp.title, header=hdr, rows=body, bold_rows=set(summary_idx),
              notes=list(cmp.footnotes), kind="comparison")
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


_LEFT_KINDS = ("comparison", "results", "gain", "first-call", "scaling", "cost", "line-rate")


def _html_table(t: Table) -> dict[str, Any]:
    """Table body as HTML built in Python: a 5,000-row table through a jinja2 macro costs
    seconds (one attribute lookup per cell). Every cell's text goes through
    markupsafe.escape, the function jinja2's autoescape applies, so the guarantee is the
    same; class names are our own constants."""
    classes = getattr(t, "cell_classes", {})
    esc = markupsafe.escape
    left = t.kind in _LEFT_KINDS
    out = []
    for i, line in enumerate(t.rows):
        tds = []
        for j, x in enumerate(line):
            marked = (i, j) in t.marked
            cls = "best" if marked else classes.get((i, j), "")
            if j < 2 and left:
                cls = (cls + " l").strip()
            text = esc(x + (" ★" if marked else ""))
            tds.append(f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>")
        tr = '<tr class="summary">' if i in t.bold_rows else "<tr>"
        out.append(tr + "".join(tds) + "</tr>")
    return {"title": t.title, "header": t.header, "body": markupsafe.Markup("\n".join(out)),
            "caption": t.caption, "notes": t.notes, "left": 2}


def render_html(report: Report) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    tpl = env.get_template("report.html.j2")
    sections = [{"id": s.id, "title": s.title, "intro": s.intro,
                 "tables": [_html_table(t) for t in s.tables],
                 "plots": [{"svg": f.svg, "caption": f.caption} for f in s.figures]}
                for s in report.sections]
    return tpl.render(title=report.title, version=mpibench.__version__,
                      generated=report.generated, store_path=report.store_path,
                      groups=report.groups, baseline=report.baseline,
                      verdicts=report.verdicts, sections=sections, warnings=report.warnings,
                      imported=_imported_sentence(report.imported))


def _imported_sentence(statistics: list[str]) -> str:
    """The report header's sentence on imported rows (mpibench import); '' without any."""
    if not statistics:
        return ""
    return (f"Imported rows: {tool_statistic(statistics)}: no samples; each imported file is "
            "one launch, compared only with the same statistic.")


def write_html(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, render_html(report))
    return path


def render_markdown_report(report: Report, plot_dir: Path | None, rel_to: Path,
                           plot_format: str = "svg") -> str:
    out = [f"# {md_escape(report.title)}", "",
           f"Generated {report.generated} by mpibench {mpibench.__version__} from "
           f"`{report.store_path}`. Times in microseconds; MB/s = 10^6 bytes/s; values are "
           "geometric means of launch medians (one launch = one mpirun, the unit of "
           "replication) with 95% CIs from the spread between launches; gains tested with "
           "Welch t on the log launch statistics, Holm-corrected; `~` = not significant; "
           "cannot tell = fewer than two launches on a side." + (f" {_imported_sentence(report.imported)}"
                                 if report.imported else ""), ""]
    if report.warnings:
        out += [f"> **{md_escape(w)}**  " for w in report.warnings] + [""]
    out += ["## Result sets", "",
            "| set | campaign(s) | runs | stack / transport | fingerprints |",
            "|---|---|---:|---|---|"]
    for g in report.groups:
        name = g["name"] + (" (baseline)" if g["name"] == report.baseline else "")
        out.append(f"| {md_escape(name)} | {md_escape(g['campaigns'])} | {g['runs']} | "
                   f"{md_escape(g['stack'])} | {md_escape(g['fingerprints'])} |")
    out.append("")
    for v in report.verdicts:
        out += [f"**Verdict:** {md_escape(v)}", ""]
    for s in report.sections:
        out += [f"## {md_escape(s.title)}", ""]
        if s.intro:
            out += [md_escape(s.intro), ""]
        if s.comparison is not None:
            out += [render_markdown(s.comparison, heading_level=3), ""]
        elif s.markdown:
            out += s.markdown + [""]
        else:
            for t in s.tables:
                out += [render_table(t, "markdown"), ""]
        for f in s.figures:
            if plot_dir is None:
                continue
            plot_dir.mkdir(parents=True, exist_ok=True)
            fp = plot_dir / f"{s.id}-{f.name}.{plot_format}"
            plots.save(f.fig, fp, plot_format)
            rel = fp.relative_to(rel_to) if fp.is_relative_to(rel_to) else fp
            out += [f"![{md_escape(f.caption)}]({rel.as_posix()})", "",
                    f"*{md_escape(f.caption)}*", ""]
    return "\n".join(out).rstrip() + "\n"


def write_markdown(report: Report, path: str | Path, plot_format: str = "svg") -> Path:
    """Markdown with plots as files in '<stem>-plots/' beside it (SVG or PNG)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plot_dir = path.parent / f"{path.stem}-plots"
    write_file(path, render_markdown_report(report, plot_dir, path.parent, plot_format))
    return path
