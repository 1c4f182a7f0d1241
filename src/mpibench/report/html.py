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
from mpibench.report import machine_state, pipeline, plots
from mpibench.report.compare_view import render_markdown
from mpibench.report.data import (
    imported_statistics,
    tool_statistic,
)
from mpibench.report.model import Comparison
from mpibench.report.parts import Figure
from mpibench.report.render import Table, md_escape, render_table
from mpibench.report.sections import Options, report_sections
from mpibench.report.views import test_sentence
from mpibench.store import Store
from mpibench.store.report_queries import set_runs_info

TEMPLATES = Path(__file__).with_name("templates")

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
    sets: list[dict[str, Any]]
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
    # the compared launches' machine-state WARNING (machine_state.warning), beside the
    # verdict: the lines per set are under the comparison table
    machine_warning: str | None = None
    # which test the comparison's gains had (views.test_sentence); '' without a comparison
    test: str = ""


def _set_info(store: Store, sets: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    out = []
    for g, ids in sets.items():
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


def build_report(store: Store, sets: Mapping[str, list[str]],
                 opts: ReportOptions | None = None, *, cells: dict | None = None) -> Report:
    """cells: load_cells(store, sets) when the caller already has them (with samples).
    Every section, the comparison, plots and results included, is an entry of
    sections.SECTIONS; this lays out what report_sections returns, in its order."""
    opts = opts or ReportOptions()
    baseline = opts.baseline or next(iter(sets))
    # the report pipeline (report/pipeline.py): load and judge as compare does
    request = pipeline.Request(
        baseline=baseline, alpha=opts.alpha, statistic=opts.statistic,
        benchmarks=opts.benchmarks, title=f"Comparison against {baseline}",
        relative=opts.relative,
        options=Options(size=opts.size, line_rate=opts.line_rate, mean_std=opts.mean_std,
                        grid=opts.grid, price_per_node_hour=opts.price_per_node_hour,
                        power_per_node_w=opts.power_per_node_w,
                        price_per_kwh=opts.price_per_kwh, jobs_per_year=opts.jobs_per_year,
                        plots=opts.plots))
    judged = pipeline.judge(store, pipeline.load(store, sets, request, cells=cells), request)
    cells, cmp, warnings = judged.loaded.cells, judged.cmp, judged.warnings
    ctx = pipeline.context(store, judged, request, for_report=True)
    sections = [Section(spec.report_id, spec.title,
                        intro=part.intro if part.intro is not None else spec.intro,
                        tables=part.tables, comparison=part.comparison, figures=part.figures)
                for spec, part in report_sections(ctx)]
    return Report(title=opts.title, store_path=str(store.path), sets=_set_info(store, sets),
                  baseline=baseline, comparison=cmp, sections=sections,
                  verdicts=list(cmp.verdicts.values()) if cmp is not None else [],
                  generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"), warnings=warnings,
                  machine_warning=machine_state.warning(cmp) if cmp is not None else None,
                  test=test_sentence(cmp),
                  imported=imported_statistics(c for by in cells.values() for c in by.values()))


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
            "caption": t.caption, "notes": t.notes, "footer": t.footer, "left": 2}


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
                      sets=report.sets, baseline=report.baseline,
                      verdicts=report.verdicts, sections=sections, warnings=report.warnings,
                      machine_warning=report.machine_warning, test=report.test,
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
           "replication) with 95% CIs from the spread between launches"
           + (f"; gains tested with {md_escape(report.test)}; `~` = not significant; cannot "
              "tell = fewer than two launches on a side" if report.test else "") + "."
           + (f" {_imported_sentence(report.imported)}" if report.imported else ""), ""]
    if report.warnings:
        out += [f"> **{md_escape(w)}**  " for w in report.warnings] + [""]
    out += ["## Result sets", "",
            "| set | campaign(s) | runs | stack / transport | fingerprints |",
            "|---|---|---:|---|---|"]
    for g in report.sets:
        name = g["name"] + (" (baseline)" if g["name"] == report.baseline else "")
        out.append(f"| {md_escape(name)} | {md_escape(g['campaigns'])} | {g['runs']} | "
                   f"{md_escape(g['stack'])} | {md_escape(g['fingerprints'])} |")
    out.append("")
    for v in report.verdicts:
        out += [f"**Verdict:** {md_escape(v)}", ""]
    if report.machine_warning:
        out += [f"> **WARNING (machine state): {md_escape(report.machine_warning)}**", ""]
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
