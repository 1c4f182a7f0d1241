"""One result set's table: per cell the launch-level value, its CI, the pooled samples'
description and the launches used.
"""

from __future__ import annotations

import json
from typing import Any

from mpibench.errors import UsageError
from mpibench.report import render as render_mod
from mpibench.report.data import (
    ResultCell,
    cell_label,
    fmt_num,
    imported_clause,
    load_cells,
    preempted_note,
)
from mpibench.report.render import (
    FORMATS,
    Table,
    clean_json,
)
from mpibench.store import Store

RESULT_COLUMNS = ["benchmark", "size/cell", "np", "n", "median", "±CI", "within", "min", "p95",
                  "MB/s",
                  "busbw MB/s", "first", "launches", "stop"]


def result_cells(store: Store, run_ids: list[str]) -> list[ResultCell]:
    return list(c for by in load_cells(store, {"_": list(run_ids)}).values() for c in by.values())


def _launch_spread(c: ResultCell) -> str:
    k = len(c.runs_used)
    if k >= 2 and c.launch_medians:
        return f"{k} ({fmt_num(min(c.launch_medians))}–{fmt_num(max(c.launch_medians))})"
    return str(k)


def results_records(cells: list[ResultCell]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        out.append(clean_json({
            "benchmark": c.benchmark, "size": c.size, "np": c.np, "params": c.params,
            "metric": c.metric, "unit": c.unit, "better": c.better, "status": c.status,
            "reason": c.reason, "n": c.n,
            "statistic": c.shown_statistic,
            "value": c.value, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "ci": "95% CI of the value from the spread between launches",
            "launch_values": c.launch_values, "within_launch_ci_pct": c.within_ci_pct,
            "sd_log_between_launches": c.estimate.sd_log if c.estimate else None,
            "pooled_median": c.median, "min": c.min,
            "p5": c.p5, "p95": c.p95, "p99": c.p99, "max": c.max, "mean": c.mean, "std": c.std,
            "bandwidth_mbps": c.bandwidth_mbps, "busbw_mbps": c.busbw_mbps, "first": c.first,
            "launches": len(c.runs_used), "launch_medians": c.launch_medians,
            "stop_reasons": dict(c.stop_reasons), "excluded_runs": c.runs_excluded,
            "preempted_excluded": c.preempted.excluded if c.preempted else None,
            "preempted_kept": c.preempted.kept if c.preempted else None,
            "launches_without_preempted": c.preempted.unknown if c.preempted else None,
            # --exclude-preempted: launches cut short on this cell (stats.preempted)
            "launches_few_clean": len(c.few_clean), "launches_skipped": c.skipped,
            "no_samples": c.no_samples,
        }))
    return out


def _cut_note(c: ResultCell) -> str:
    """'2 launches on < 5 clean samples, 1 skipped' for the stop column ('' when none)."""
    from mpibench.stats.preempted import FEW_CLEAN

    parts = [f"{len(c.few_clean)} launch{'es' if len(c.few_clean) > 1 else ''} on < "
             f"{FEW_CLEAN} clean samples"] if c.few_clean else []
    parts += [f"{c.skipped} skipped"] if c.skipped else []
    return ", ".join(parts)


def _results_table(cells: list[ResultCell]) -> tuple[list[str], list[list[str]], list[str]]:
    notes: list[str] = []
    body = []
    prev = None
    # an application reports several metrics (its figure of merit and wall_time): name each
    # as the comparison table does, or two rows per cell would differ only by magnitude
    multi_metric = len({(c.metric, c.unit) for c in cells}) > 1
    for c in cells:
        what = c.metric if c.metric == c.unit else f"{c.metric}, {c.unit}"
        name = f"{c.benchmark} [{what}]" if multi_metric else c.benchmark
        if c.status != "ok":
            val = [c.status + (f": {c.reason}" if c.reason else "")] + [""] * 10
            n = ""
        else:
            pct = c.ci_pct
            stop = "; ".join(x for x in (
                ", ".join(f"{k}×{v}" if v > 1 else k for k, v in c.stop_reasons.items()),
                preempted_note(c.preempted), _cut_note(c)) if x)
            wpct = c.within_ci_pct
            val = [fmt_num(c.value) + (f" ({c.shown_statistic})"
                                       if c.shown_statistic != "median" else ""),
                   "?" if pct is None else f"{pct:.1f}%",
                   "" if wpct is None else f"{wpct:.1f}%", fmt_num(c.min), fmt_num(c.p95),
                   fmt_num(c.bandwidth_mbps) if c.bandwidth_mbps is not None else "",
                   fmt_num(c.busbw_mbps) if c.busbw_mbps is not None else "",
                   fmt_num(c.first) if c.first is not None else "", _launch_spread(c), stop]
            n = "" if c.n is None else str(c.n)
        mark = ""
        if c.mixed:
            text = ("runs with different fingerprints are not pooled; shown: the most common "
                    "fingerprint")
            if text not in notes:
                notes.append(text)
            mark = f" [{notes.index(text) + 1}]"
        body.append([name if name != prev else "", cell_label(c) + mark,
                     "" if c.np is None else str(c.np), n] + val)
        prev = name
    return RESULT_COLUMNS, body, notes


def results_obj(cells: list[ResultCell], title: str, runs: int) -> dict[str, Any]:
    """One set's results as the JSON object render_results(..., "json") prints."""
    return {"title": title, "runs": runs, "rows": results_records(cells)}


def render_results(store: Store, run_ids: list[str], fmt: str = "terminal", *,
                   title: str | None = None, cells: list[ResultCell] | None = None) -> str:
    """Per-stack table of one result set (runs pooled per cell as in compare_groups).
    `cells` (already pooled, e.g. filtered) skips reading the store."""
    cells = cells if cells is not None else result_cells(store, run_ids)
    title = title or "results"
    if fmt == "json":
        return json.dumps(results_obj(cells, title, len(run_ids)), indent=2)
    if fmt == "csv":
        return render_mod.csv_text(results_records(cells))
    hdr, body, notes = _results_table(cells)
    units = {(c.metric, c.unit) for c in cells}
    unit_line = ("times in microseconds" if units <= {("time", "us")} else
                 "units: " + ", ".join(f"{m} ({u})" for m, u in sorted(units)))
    imported = imported_clause(cells)
    caption = (f"{unit_line}: median = geometric mean of the launch medians over "
               f"{len(run_ids)} launch(es), each weighted equally; ±CI = its 95% CI half-width "
               "from the spread between launches (? = one launch: no spread to see); within "
               "= a launch's own 95% CI of its median (median over launches), precision inside "
               "a launch and never the uncertainty of a comparison; n, min, p95 over all "
               "samples"
               + (f" ({imported})" if imported else "")
               + "; MB/s = 10^6 bytes/s from that value; "
               "busbw uses the usual collective factors; first = first-call time (median "
               "over launches); launches = count (min–max of per-launch medians)")
    t = Table(title=title, header=hdr, rows=body, caption=caption, notes=notes,
              kind="results", left_cols=2)
    if fmt in ("terminal", "markdown"):
        return render_mod.render(t, fmt)
    raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
