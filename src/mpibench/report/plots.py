"""Plots for reports (matplotlib, Agg): returned as SVG text for inline HTML, or written as
SVG/PNG files for Markdown. Labels come from user data; '$' is escaped so matplotlib does
not parse them as math, and the SVG writer escapes XML."""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping

import matplotlib
import matplotlib.patches
import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure

from mpibench.files import write_file
from mpibench.report.data import ResultCell, fmt_params, fmt_size, imported_statistics
from mpibench.report.model import Comparison

# Figures are built with matplotlib.figure.Figure (no pyplot): no global backend switch, no
# global state, safe to import in a notebook. Our style applies only inside rc_context.
_RC = {
    "svg.fonttype": "none",        # text stays text: small, searchable, crisp
    "svg.hashsalt": "mpibench",    # deterministic ids across runs
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
}

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def _styled(fn):
    @functools.wraps(fn)
    def inner(*a, **kw):
        with matplotlib.rc_context(_RC):
            return fn(*a, **kw)
    return inner


def _subplots(rows: int = 1, cols: int = 1, figsize=(6, 4), squeeze: bool = True):
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(rows, cols, squeeze=squeeze)


def safe(text: object) -> str:
    return str(text).replace("$", r"\$")


@_styled
def to_svg(fig) -> str:
    buf = io.StringIO()
    # no bbox_inches="tight": it draws the figure twice; layouts set their own margins
    fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


@_styled
def save(fig, path, fmt: str = "svg") -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110)
    write_file(path, buf.getvalue())


def _size_x(size: int) -> float:
    # log axes cannot show 0 bytes; plot it at 0.5 and label it 0
    return 0.5 if size == 0 else float(size)


def _size_ticks(ax, sizes: list[int]) -> None:
    xs = sorted({_size_x(s) for s in sizes})
    if len(xs) > 12:
        step = int(np.ceil(len(xs) / 12))
        xs = xs[::step]
    ax.set_xticks(xs)
    ax.set_xticklabels(["0" if x == 0.5 else fmt_size(int(x)) for x in xs], rotation=45,
                       fontsize=7)
    ax.minorticks_off()


def _series(cmp: Comparison, bench: str, metric: str = "time"):
    """(set, np) -> cells of this benchmark sorted by size (message-size cells only).
    bench: the row's title (the benchmark, with the tool where the cell key has one)."""
    out: dict[tuple[str, int | None], list[ResultCell]] = {}
    for r in cmp.rows:
        if r.title != bench or r.metric != metric or not r.key.at_message_size:
            continue
        for g, c in r.cells.items():
            if c.status == "ok" and c.value is not None:
                out.setdefault((g, c.np), []).append(c)
    return {k: sorted(cs, key=lambda c: c.size) for k, cs in out.items()}


_LINESTYLES = ["-", "--", ":", "-."]


def _lines(cmp: Comparison, bench: str):
    """(label, colour, linestyle, cells) per set and np; colour = set, style = np."""
    series = _series(cmp, bench)
    nps = sorted({k[1] for k in series}, key=lambda v: -1 if v is None else v)
    for i, g in enumerate(cmp.sets):
        for np_ in nps:
            cs = series.get((g, np_))
            if not cs:
                continue
            label = g if len(nps) == 1 else f"{g} np={np_}"
            own = imported_statistics(cs)
            if own:            # imported rows: the tool's own figure, not a median
                label += f" (tool's {'/'.join(own)})"
            yield (label, COLORS[i % len(COLORS)], _LINESTYLES[nps.index(np_) % 4], cs)


def size_benchmarks(cmp: Comparison) -> list[str]:
    seen: list[str] = []
    for r in cmp.rows:
        if r.key.is_message_time and r.title not in seen:
            seen.append(r.title)
    return seen


def _panel_layout(fig) -> None:
    """Fixed margins in inches (tight_layout and loc='best' legends cost seconds on big
    reports): room for rotated size labels, axis labels and titles."""
    w, h = fig.get_size_inches()
    rows = len({ax.get_subplotspec().rowspan.start for ax in fig.axes if ax.get_visible()})
    bottom, top, gap = 0.85, 0.35, 1.15          # inches
    rows = max(rows, 1)
    axes_h = max(0.5, (h - bottom - top - (rows - 1) * gap) / rows)
    fig.subplots_adjust(left=0.75 / w, right=1 - 0.2 / w, bottom=bottom / h, top=1 - top / h,
                        wspace=0.35, hspace=gap / axes_h)


def _grid_axes(n: int, width: float = 11.0, per_row: int = 3, h: float = 3.0):
    cols = min(per_row, max(1, n))
    rows = int(np.ceil(n / cols))
    fig, axes = _subplots(rows, cols, figsize=(width, h * rows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


@_styled
def latency_figure(cmp: Comparison, benches: list[str] | None = None):
    """Time (geometric mean of launch medians) vs message size, log-log, band = the 95% CI
    between launches, per variant; one panel per benchmark."""
    benches = benches or size_benchmarks(cmp)
    if not benches:
        return None
    if cmp.relative:
        return relative_figure(cmp, benches)
    fig, axes = _grid_axes(len(benches))
    for ax, bench in zip(axes, benches, strict=True):
        sizes: list[int] = []
        imported = False
        for label, col, ls, cs in _lines(cmp, bench):
            imported |= bool(imported_statistics(cs))
            x = np.array([_size_x(c.size) for c in cs])
            y = np.array([c.value for c in cs])
            lo = np.array([c.ci_low if c.ci_low is not None else c.value for c in cs])
            hi = np.array([c.ci_high if c.ci_high is not None else c.value for c in cs])
            ax.plot(x, y, marker="o", ms=3, lw=1.2, color=col, ls=ls, label=safe(label))
            ax.fill_between(x, lo, hi, color=col, alpha=0.25, lw=0)
            sizes += [c.size for c in cs]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(safe(bench))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("time (us): launch geomean, 95% CI" + ("; imported: tool's own"
                                                             if imported
                                                      else ""))
        if sizes:
            _size_ticks(ax, sizes)
        ax.legend(fontsize=7, loc="upper left")
    _panel_layout(fig)
    return fig


def relative_figure(cmp: Comparison, benches: list[str]):
    """--relative: each candidate's time as % of the baseline's vs message size (the baseline
    is the 100% line), band = the 95% CI of the gain; one panel per benchmark."""
    from mpibench.report.compare_view import pct_of_base

    fig, axes = _grid_axes(len(benches))
    for ax, bench in zip(axes, benches, strict=True):
        sizes: list[int] = []
        rows = sorted((r for r in cmp.rows if r.benchmark == bench and r.metric == "time"
                       and r.size is not None), key=lambda r: r.size)
        for i, g in enumerate(cmp.sets):
            if g == cmp.baseline:
                continue
            pts = [(r.size, *pct_of_base(r.deltas[g], r.better)) for r in rows
                   if g in r.deltas]
            pts = [p for p in pts if p[1] is not None]
            if not pts:
                continue
            col = COLORS[i % len(COLORS)]
            x = np.array([_size_x(p[0]) for p in pts])
            y = np.array([p[1] for p in pts])
            lo = np.array([p[2] if p[2] is not None else p[1] for p in pts])
            hi = np.array([p[3] if p[3] is not None else p[1] for p in pts])
            ax.plot(x, y, marker="o", ms=3, lw=1.2, color=col, label=safe(g))
            ax.fill_between(x, lo, hi, color=col, alpha=0.25, lw=0)
            sizes += [p[0] for p in pts]
        ax.axhline(100, color="0.4", lw=1, ls="--", label=safe(f"{cmp.baseline} (100%)"))
        ax.set_xscale("log", base=2)
        ax.set_title(safe(bench))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(safe(f"time, % of baseline {cmp.baseline}"))
        if sizes:
            _size_ticks(ax, sizes)
        ax.legend(fontsize=7, loc="upper left")
    _panel_layout(fig)
    return fig


@_styled
def bar_figure(cmp: Comparison, benches: list[str] | None = None, max_sizes: int = 12):
    """Grouped bars: per benchmark one panel, per message size one group of bars, one bar per
    set side by side, whiskers = the 95% CI between launches (log time axis). At most
    max_sizes sizes per panel (evenly spread over the measured ones), so bars stay legible."""
    benches = benches or size_benchmarks(cmp)
    if not benches:
        return None
    fig, axes = _grid_axes(len(benches), h=3.2)
    n = len(cmp.sets)
    width = 0.8 / max(n, 1)
    for ax, bench in zip(axes, benches, strict=True):
        rows = sorted((r for r in cmp.rows if r.benchmark == bench and r.metric == "time"
                       and r.size is not None), key=lambda r: r.size)
        if len(rows) > max_sizes:
            rows = [rows[round(i * (len(rows) - 1) / (max_sizes - 1))]
                    for i in range(max_sizes)]
        xs = np.arange(len(rows))
        for i, g in enumerate(cmp.sets):
            ys, lo, hi = [], [], []
            for r in rows:
                c = r.cells.get(g)
                ok = c is not None and c.status == "ok" and c.value is not None
                v = c.value if ok else np.nan
                ys.append(v)
                lo.append(v - c.ci_low if ok and c.ci_low is not None else 0.0)
                hi.append(c.ci_high - v if ok and c.ci_high is not None else 0.0)
            ax.bar(xs + (i - (n - 1) / 2) * width, ys, width, color=COLORS[i % len(COLORS)],
                   label=safe(g), yerr=[lo, hi], capsize=2, ecolor="0.2",
                   error_kw={"lw": 0.8})
        ax.set_xticks(xs)
        ax.set_xticklabels([fmt_size(r.size) for r in rows], rotation=45, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(safe(bench))
        ax.set_xlabel("message size")
        ax.set_ylabel("time (us): launch geomean, 95% CI")
        ax.legend(fontsize=7, loc="upper left")
    _panel_layout(fig)
    return fig


@_styled
def bandwidth_figure(cmp: Comparison, benches: list[str] | None = None):
    """MB/s (10^6 B/s) vs size with the CI band mapped from the time CI."""
    benches = [b for b in (benches or size_benchmarks(cmp))
               if any(c.bandwidth_mbps for cs in _series(cmp, b).values() for c in cs)]
    if not benches:
        return None
    fig, axes = _grid_axes(len(benches))
    for ax, bench in zip(axes, benches, strict=True):
        sizes: list[int] = []
        for label, col, ls, all_cs in _lines(cmp, bench):
            cs = [c for c in all_cs if c.bandwidth_mbps and c.size]
            if not cs:
                continue
            x = np.array([float(c.size) for c in cs])
            y = np.array([c.bandwidth_mbps for c in cs])
            # bandwidth = k / time: the time CI maps to a bandwidth band (hi time -> lo bw)
            lo = np.array([c.bandwidth_mbps * c.value / c.ci_high if c.ci_high else
                           c.bandwidth_mbps for c in cs])
            hi = np.array([c.bandwidth_mbps * c.value / c.ci_low if c.ci_low else
                           c.bandwidth_mbps for c in cs])
            ax.plot(x, y, marker="o", ms=3, lw=1.2, color=col, ls=ls, label=safe(label))
            ax.fill_between(x, lo, hi, color=col, alpha=0.25, lw=0)
            sizes += [c.size for c in cs]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(safe(bench))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("MB/s (10^6 B/s)")
        if sizes:
            _size_ticks(ax, sizes)
        ax.legend(fontsize=7, loc="upper left")
    _panel_layout(fig)
    return fig


@_styled
def gain_figure(cmp: Comparison, benches: list[str] | None = None):
    """Gain per size against the baseline with its between-launch 95% CI as error bars;
    filled markers significant, hollow `~`."""
    benches = benches or size_benchmarks(cmp)
    if not benches or not cmp.candidates:
        return None
    fig, axes = _grid_axes(len(benches))
    for ax, bench in zip(axes, benches, strict=True):
        all_rows = [r for r in cmp.rows if r.title == bench and r.key.is_message_time]
        sizes = [r.size for r in all_rows]
        nps = sorted({r.np for r in all_rows}, key=lambda v: -1 if v is None else v)
        bounds: list[float] = []           # the CIs' ends, so no error bar is cut off
        for (i, cand), np_ in ((ic, n) for ic in enumerate(cmp.candidates, 1) for n in nps):
            col = COLORS[i % len(COLORS)]
            rows = sorted((r for r in all_rows if r.np == np_), key=lambda r: r.size)
            pts = [(_size_x(r.size), r.deltas[cand]) for r in rows
                   if r.deltas[cand].gain is not None]
            if not pts:
                continue
            x = np.array([p[0] for p in pts])
            y = np.array([p[1].gain for p in pts])
            sig = np.array([p[1].significant for p in pts])
            label = f"{cand} vs {cmp.baseline}" + (f" np={np_}" if len(nps) > 1 else "")
            ax.plot(x, y, lw=1, color=col, ls=_LINESTYLES[nps.index(np_) % 4],
                    label=safe(label))
            lo = np.array([p[1].ci_low if p[1].ci_low is not None else p[1].gain
                           for p in pts])
            hi = np.array([p[1].ci_high if p[1].ci_high is not None else p[1].gain
                           for p in pts])
            # error bars: the gain's 95% CI from the spread between launches
            ax.errorbar(x, y, yerr=[np.maximum(y - lo, 0), np.maximum(hi - y, 0)], fmt="none",
                        ecolor=col, elinewidth=0.8, capsize=2, zorder=2)
            bounds += [float(np.min(lo)), float(np.max(hi))]
            ax.scatter(x[sig], y[sig], color=col, s=18, zorder=3)
            ax.scatter(x[~sig], y[~sig], facecolors="white", edgecolors=col, s=18, zorder=3)
        ax.axhline(1.0, color="black", lw=0.8)
        # headroom above the data for the legend (fixed position: loc='best' is slow)
        ys = [ln.get_ydata() for ln in ax.get_lines() if len(ln.get_ydata())]
        if ys:
            lo = min([1.0, *bounds] + [float(np.min(y)) for y in ys])
            hi = max([1.0, *bounds] + [float(np.max(y)) for y in ys])
            span = (hi - lo) or 0.1
            ax.set_ylim(lo - 0.08 * span, hi + 0.55 * span)
        ax.set_xscale("log", base=2)
        ax.set_title(safe(bench))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("gain (>1 = candidate better)")
        if sizes:
            _size_ticks(ax, sizes)
        ax.legend(fontsize=7, title="hollow = not significant; bars: 95% CI", title_fontsize=6,
                  loc="upper left")
    _panel_layout(fig)
    return fig


@_styled
def grid_heatmap(grid, set_name: str | None = None, ratio_for: str | None = None):
    """Heatmap of one grid: a variant's medians (best cell per row outlined) or the gain of
    a candidate (diverging around 1)."""
    rows, cols = grid.row_values, grid.col_values
    data = np.full((len(rows), len(cols)), np.nan)
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            if ratio_for:
                v = grid.ratio[ratio_for].get((rv, cv))
            else:
                c = grid.cells[set_name].get((rv, cv))
                v = c.value if c is not None and c.status == "ok" else None
            if v is not None:
                data[i, j] = v
    fig, ax = _subplots(figsize=(1.2 + 0.9 * len(cols), 0.9 + 0.5 * len(rows)))
    if ratio_for:
        span = np.nanmax(np.abs(np.log(data))) if np.isfinite(data).any() else 0.1
        span = max(span, 0.01)
        im = ax.imshow(np.log(data), cmap="RdYlGn", vmin=-span, vmax=span, aspect="auto")
        title = f"gain {ratio_for} vs {grid.baseline}"
    else:
        # colour by how close each cell is to its row's best, since the question a grid
        # answers is "which column is best for this row"; the numbers stay the medians
        with np.errstate(invalid="ignore", divide="ignore"):
            if grid.better == "higher":
                rel = data / np.nanmax(data, axis=1, keepdims=True)
            else:
                rel = np.nanmin(data, axis=1, keepdims=True) / data
        im = ax.imshow(rel, cmap="YlGn", vmin=min(0.5, np.nanmin(rel)) if
                       np.isfinite(rel).any() else 0.5, vmax=1.0, aspect="auto")
        title = f"{set_name}: {grid.metric} ({grid.unit}); colour = fraction of row best"
    annotate = len(rows) * len(cols) <= 150
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            if np.isnan(data[i, j]):
                continue
            if annotate:
                txt = f"{data[i, j]:.2f}x" if ratio_for else f"{data[i, j]:.4g}"
                ax.text(j, i, txt, ha="center", va="center", fontsize=7, color="black")
            if not ratio_for and grid.best[set_name].get(rv) == cv:
                ax.add_patch(matplotlib.patches.Rectangle((j - .5, i - .5), 1, 1, fill=False,
                                                          lw=2.2, ec="red"))
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([safe(c) for c in cols])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([safe(r) for r in rows])
    ax.set_xlabel(safe(grid.col_param))
    ax.set_ylabel(safe(grid.row_param))
    ax.grid(False)
    ax.set_title(safe(title), fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.05)
    fig.tight_layout()
    return fig


@_styled
def fom_figure(records: list[Mapping], max_series: int = 16, max_panels: int = 12):
    """The figure of merit itself (ns/day, s/step, us...) against the count (nodes or np),
    one curve per variant and series, whiskers = the 95% CI between launches; from the
    scaling table's records. Applications only: message-size rows are left out."""
    recs = [r for r in records if r.get("size") is None and r.get("value") is not None]
    if not recs:
        return None
    series: dict[tuple, list[Mapping]] = {}
    for r in recs:
        key = (r["benchmark"], r["metric"], r["variant"], fmt_params(r.get("params")))
        series.setdefault(key, []).append(r)
    panels = sorted({k[:2] for k in series})[:max_panels]
    fig, axes = _grid_axes(len(panels), per_row=2, h=3.2, width=10)
    variants = sorted({k[2] for k in series})
    styles = ["-", "--", ":", "-."]
    for ax, (bench, metric) in zip(axes, panels, strict=True):
        keys = [k for k in series if k[:2] == (bench, metric)][:max_series]
        others = sorted({k[3] for k in keys})
        for key in keys:
            pts = sorted(series[key], key=lambda p: float(p["count"]))
            x = np.array([float(p["count"]) for p in pts])
            y = np.array([p["value"] for p in pts])
            lo = np.array([p["value"] - p["ci_low"] if p.get("ci_low") is not None else 0.0
                           for p in pts])
            hi = np.array([p["ci_high"] - p["value"] if p.get("ci_high") is not None else 0.0
                           for p in pts])
            col = COLORS[variants.index(key[2]) % len(COLORS)]
            ax.errorbar(x, y, yerr=[lo, hi], marker="o", ms=3, lw=1, capsize=2, color=col,
                        ls=styles[others.index(key[3]) % len(styles)],
                        label=safe(f"{key[2]} {key[3]}".strip()))
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_title(safe(bench))
        ax.set_xlabel(safe(recs[0]["by"]))
        ax.set_ylabel(safe(f"{metric}: launch geomean, 95% CI"))
        ax.legend(fontsize=6, loc="upper left")
    _panel_layout(fig)
    return fig


@_styled
def scaling_figure(records: list[Mapping], max_series: int = 16, max_panels: int = 12,
                   with_counts: bool = False):
    """Speedup vs count per variant and series, with the ideal line. At most max_series
    series per panel and max_panels panels (with_counts: also return (shown, total))."""
    if not records:
        return (None, 0, 0) if with_counts else None
    series: dict[tuple, list[Mapping]] = {}
    for r in records:
        per = r.get("ranks_per_count")
        key = (r["variant"], r["benchmark"], r["metric"], r.get("size"),
               " ".join(x for x in (fmt_params(r.get("params")),
                                    f"ranks/{r['by']}={per:g}" if per is not None else "")
                        if x))
        series.setdefault(key, []).append(r)
    total = len(series)
    benches = sorted({(k[1], k[2]) for k in series})[:max_panels]
    kept: dict[tuple, list[Mapping]] = {}
    for bm in benches:
        keys = [k for k in series if (k[1], k[2]) == bm]
        # keep whole parameter combinations (all variants of one series) together
        combos = list(dict.fromkeys(k[3:] for k in keys))
        per_combo = max(1, len({k[0] for k in keys}))
        allowed = set(combos[:max(1, max_series // per_combo)])
        kept.update({k: series[k] for k in keys if k[3:] in allowed})
    series = kept
    fig, axes = _grid_axes(len(benches), per_row=2, h=3.2, width=10)
    variants = sorted({k[0] for k in series})
    for ax, (bench, metric) in zip(axes, benches, strict=True):
        maxc = 1.0
        for key, pts in series.items():
            if (key[1], key[2]) != (bench, metric):
                continue
            pts = sorted(pts, key=lambda p: float(p["count"]))
            c0 = float(pts[0]["count"])
            x = [float(p["count"]) for p in pts]
            y = [p["speedup"] for p in pts]
            maxc = max(maxc, x[-1] / c0)
            col = COLORS[variants.index(key[0]) % len(COLORS)]
            styles = ["-", "--", ":", "-."]
            n_series = sorted({k[4] for k in series})
            ax.plot(x, y, marker="o", ms=3, color=col, lw=1,
                    ls=styles[n_series.index(key[4]) % len(styles)],
                    label=safe(f"{key[0]} {key[4]}".strip()))
        xs = np.array(sorted({float(p["count"]) for k, ps in series.items()
                              if (k[1], k[2]) == (bench, metric) for p in ps}))
        if xs.size:
            ax.plot(xs, xs / xs[0], ls="--", color="grey", lw=0.8, label="ideal")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_title(safe(f"{bench} {metric}"))
        ax.set_xlabel(safe(records[0]["by"]))
        ax.set_ylabel("speedup")
        ax.legend(fontsize=6, loc="upper left")
    _panel_layout(fig)
    return (fig, len(series), total) if with_counts else fig
