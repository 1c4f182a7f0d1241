"""Grids of application sweeps: rows one parameter, columns another, the best cell of each
row marked; per variant side by side and a ratio grid per candidate (launch-level tests,
Holm over the grid, the comparability rule per cell).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpibench import stats
from mpibench.report.data import (
    ResultCell,
    bench_sort_key,
    fmt_num,
    fmt_params,
    fmt_size,
    load_cells,
    statistic_legend,
    with_sweep_params,
)
from mpibench.report.model import fmt_gain_ci, orient_gain
from mpibench.report.render import Table
from mpibench.report.rules import comparable
from mpibench.stats import launch as launch_stats
from mpibench.store import Store
from mpibench.store.report_queries import (
    failed_runs_beside,
    run_campaign_variant,
)


def _param_value(cell: ResultCell, name: str) -> Any:
    if name == "np":
        return cell.np
    if name == "size":
        return cell.size
    return cell.params.get(name)


def _sort_values(vals: Iterable[Any]) -> list[Any]:
    def key(v):
        try:
            return (0, float(v), "")
        except (TypeError, ValueError):
            return (1, 0.0, str(v))
    return sorted(set(vals), key=key)


@dataclass
class Grid:
    benchmark: str
    metric: str
    unit: str
    better: str
    row_param: str
    col_param: str
    fixed: dict[str, Any]                   # other params held constant in this grid
    row_values: list[Any]
    col_values: list[Any]
    cells: dict[str, dict[tuple[Any, Any], ResultCell]]     # set -> (row, col) -> cell
    best: dict[str, dict[Any, Any]]                   # set -> row -> best col
    ratio: dict[str, dict[tuple[Any, Any], float | None]]   # candidate -> gain per cell
    significant: dict[str, dict[tuple[Any, Any], bool | None]]
    sets: list[str]
    baseline: str
    # candidate -> (row, col) -> the launch-level test (gain CI, p, launch counts)
    tests: dict[str, dict[tuple[Any, Any], launch_stats.LaunchTest]] = field(
        default_factory=dict)
    statistic: str = "median"
    # set -> positions whose launches all failed (no ok cell): shown as "x", never blank
    failed: dict[str, set[tuple[Any, Any]]] = field(default_factory=dict)

    def shown(self, c: ResultCell) -> tuple[float | None, float | None]:
        """A cell's value and spread as the grid shows them: with statistic 'mean' the
        arithmetic mean of the launch means and their standard deviation (the VASP seed's
        "mean of 3"), else the set's estimate (geometric mean of launch statistics) and None."""
        if self.statistic == "mean" and c.launch_values:
            lv = c.launch_values
            m = float(np.mean(lv))
            return m, (float(np.std(lv, ddof=1)) if len(lv) > 1 else None)
        return c.value, None

    @property
    def title(self) -> str:
        fixed = f" ({fmt_params(self.fixed)})" if self.fixed else ""
        return (f"{self.benchmark} {self.metric} ({self.unit}, {self.better} is better): "
                f"{self.row_param} x {self.col_param}{fixed}")


def grids(store: Store, sets: Mapping[str, list[str]], row_param: str, col_param: str, *,
          baseline: str | None = None, metric: str | None = None,
          benchmark: str | None = None, alpha: float = 0.05,
          cells: dict | None = None,
          max_shape: tuple[int, int] | None = None, statistic: str = "median") -> list[Grid]:
    """One Grid per (benchmark, metric, other params) whose cells vary row_param and col_param.
    The best cell per row (per set) follows the metric's better-direction; a cell's value
    is the geometric mean of its launch statistics (statistic median), or with statistic
    mean the arithmetic mean of the launch means (Grid.shown); the ratio grid tests launches
    against launches (Welch t on logs, Holm over the grid). Positions where a set's
    launches failed (with or without result rows) are kept in Grid.failed."""
    order = list(sets)
    baseline = baseline or order[0]
    cells = cells if cells is not None else load_cells(store, sets, statistic=statistic)
    buckets = _buckets(cells, row_param, col_param, metric, benchmark)
    failed = _failed_positions(store, sets, row_param, col_param)
    out = []
    for (bench, m, fixed_key), per_set in sorted(buckets.items(),
                                                   key=lambda kv: bench_sort_key(kv[0][0])):
        any_cell = next(iter(next(iter(per_set.values())).values()))
        fails = {g: {(rv, cv) for b, fk, rv, cv in failed.get(g, ())
                     if b == bench and fk == fixed_key} for g in order}
        fails = {g: {p for p in ps if p not in per_set.get(g, {})
                     or per_set[g][p].status != "ok"} for g, ps in fails.items() if ps}
        rows = _sort_values([k[0] for pg in per_set.values() for k in pg]
                            + [p[0] for ps in fails.values() for p in ps])
        cols = _sort_values([k[1] for pg in per_set.values() for k in pg]
                            + [p[1] for ps in fails.values() for p in ps])
        if len(rows) * len(cols) < 2:
            continue
        better = any_cell.better
        if max_shape and (len(rows) > max_shape[0] or len(cols) > max_shape[1]):
            # too large to show: keep the shape (for the message), skip the statistics
            out.append(Grid(benchmark=bench, metric=m, unit=any_cell.unit, better=better,
                            row_param=row_param, col_param=col_param,
                            fixed=json.loads(fixed_key), row_values=rows, col_values=cols,
                            cells={}, best={}, ratio={}, significant={}, sets=[],
                            baseline=baseline))
            continue
        best = _best_per_row(per_set, rows, cols, better, statistic)
        ratio, sig, ltests = _ratios(per_set, order, baseline, better, alpha)
        out.append(Grid(benchmark=bench, metric=m, unit=any_cell.unit, better=better,
                        row_param=row_param, col_param=col_param,
                        fixed=json.loads(fixed_key), row_values=rows, col_values=cols,
                        cells={g: per_set[g] for g in order if g in per_set}, best=best,
                        ratio=ratio, significant=sig,
                        sets=[g for g in order if g in per_set], baseline=baseline,
                        tests=ltests, statistic=statistic, failed=fails))
    return out


def _buckets(cells: dict, row_param: str, col_param: str, metric: str | None,
             benchmark: str | None) -> dict[tuple, dict[str, dict[tuple, ResultCell]]]:
    """(benchmark, metric, other params) -> set -> (row value, col value) -> cell."""
    buckets: dict[tuple, dict[str, dict[tuple, ResultCell]]] = defaultdict(
        lambda: defaultdict(dict))
    for key, by_set in cells.items():
        bench, size, m = key.title, key.size, key.metric
        if metric is not None and m != metric:
            continue
        if benchmark is not None and bench.lower() != benchmark.lower():
            continue
        for g, c in by_set.items():
            rv, cv = _param_value(c, row_param), _param_value(c, col_param)
            if rv is None or cv is None:
                continue
            fixed = {k: v for k, v in c.params.items() if k not in (row_param, col_param)}
            if size is not None and "size" not in (row_param, col_param):
                fixed["size"] = size
            fixed_key = json.dumps(fixed, sort_keys=True, default=str)
            buckets[(bench, m, fixed_key)][g][(rv, cv)] = c
    return buckets


def _best_per_row(per_set: dict, rows: list, cols: list, better: str,
                  statistic: str) -> dict[str, dict[Any, Any]]:
    """set -> row value -> the column of its best ok cell (the metric's direction)."""
    best: dict[str, dict[Any, Any]] = {}
    for g, pg in per_set.items():
        best[g] = {}
        for rv in rows:
            vals = [(cv, v) for cv in cols
                    if (rv, cv) in pg and pg[(rv, cv)].status == "ok"
                    and (v := _shown_value(pg[(rv, cv)], statistic)) is not None]
            if vals:
                pick = (min if better == "lower" else max)(vals, key=lambda x: x[1])
                best[g][rv] = pick[0]
    return best


def _ratios(per_set: dict, order: list[str], baseline: str, better: str, alpha: float
            ) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """Per candidate and position: the gain against the baseline under the comparability
    rule, its significance (Holm over the grid) and the launch-level test."""
    ratio: dict[str, dict] = {}
    sig: dict[str, dict] = {}
    ltests: dict[str, dict] = {}
    base = per_set.get(baseline, {})
    tested = []
    for cand in [g for g in order if g != baseline and g in per_set]:
        ratio[cand], sig[cand], ltests[cand] = {}, {}, {}
        for pos, c in per_set[cand].items():
            b = base.get(pos)
            sig[cand][pos] = None
            # the comparability rule: never a mean against a median, nor a failed cell
            if b is None or not comparable(b, c):
                ratio[cand][pos] = None
                continue
            ratio[cand][pos] = orient_gain(b.value, c.value, better)
            if b.testable and c.testable:
                t = launch_stats.compare(b.launch_values, c.launch_values, better, alpha)
                ltests[cand][pos] = t
                ratio[cand][pos] = t.gain
                if t.tested:
                    tested.append((cand, pos, t.p))
    for (cand, pos, _), pa in zip(tested, stats.holm([p for *_, p in tested]), strict=True):
        sig[cand][pos] = bool(pa <= alpha)
    return ratio, sig, ltests


def _shown_value(c: ResultCell, statistic: str) -> float | None:
    if statistic == "mean" and c.launch_values:
        return float(np.mean(c.launch_values))
    return c.value


def _failed_positions(store: Store, sets: Mapping[str, list[str]], row_param: str,
                      col_param: str) -> dict[str, list[tuple]]:
    """set -> [(benchmark, fixed params key, row value, col value)] of its failed launches
    (a failed application launch stores no rows: only its run says where it was)."""
    if "size" in (row_param, col_param):
        return {}                  # a failed launch has no per-size rows to place
    owner: dict[tuple[int, str], list[str]] = defaultdict(list)
    rows = failed_runs_beside(store, [r for ids in sets.values() for r in ids])
    if not rows:
        return {}
    for g, ids in sets.items():
        for cv_key in set(run_campaign_variant(store, ids).values()):
            owner[cv_key].append(g)
    out: dict[str, list[tuple]] = defaultdict(list)
    for r in rows:
        params = dict(with_sweep_params(json.loads(r["params_json"] or "{}"), r["variant"]))
        if r["np"] is not None:
            params.setdefault("np", r["np"])
        rv, cv = params.get(row_param), params.get(col_param)
        if rv is None or cv is None:
            continue
        fixed = {k: v for k, v in params.items() if k not in (row_param, col_param, "np")}
        key = (r["grp"], json.dumps(fixed, sort_keys=True, default=str), rv, cv)
        for g in owner.get((r["campaign_id"], r["variant"]), ()):
            out[g].append(key)
    return out


def _fmt_param(name: str, v: Any) -> str:
    return fmt_size(v) if name == "size" and isinstance(v, int) else str(v)


def grid_tables(grid: Grid) -> list[Table]:
    """Side by side (one block of columns per set) and one ratio grid per candidate."""
    hdr = [f"{grid.row_param} \\ {grid.col_param}"]
    for g in grid.sets:
        hdr += [f"{g}: {_fmt_param(grid.col_param, cv)}" for cv in grid.col_values]
    legend = statistic_legend(c for pg in grid.cells.values() for c in pg.values())
    if grid.statistic == "mean":
        what = ("cells: arithmetic mean of the launch means ± their standard deviation "
                "(launches; ± ? = one launch)")
    else:
        what = (f"cells: value ± 95% CI (launches), {legend}; CI from the spread between "
                "launches (± ? = one launch)")
    side = Table(title=grid.title, header=hdr, rows=[], kind="grid",
                 caption=f"{what}; * = best cell of the row for that variant; x = failed "
                         "(every launch failed or timed out), - = not run")
    for i, rv in enumerate(grid.row_values):
        line = [_fmt_param(grid.row_param, rv)]
        for g in grid.sets:
            for cv in grid.col_values:
                c = grid.cells[g].get((rv, cv))
                failed = (rv, cv) in grid.failed.get(g, ()) or (c is not None
                                                                and c.status != "ok")
                value = std = None
                if failed:
                    line.append("x")
                elif c is None:
                    line.append("-")
                else:
                    value, std = grid.shown(c)
                    if grid.statistic == "mean":
                        sd = "?" if std is None else fmt_num(std)
                        line.append(f"{fmt_num(value)} ± {sd} ({c.launches})")
                    else:
                        pct = c.ci_pct
                        ci = "?" if pct is None else (f"{pct:.1f}%" if pct < 10
                                                      else f"{pct:.0f}%")
                        line.append(f"{fmt_num(value)} ± {ci} ({c.launches})")
                    if grid.best[g].get(rv) == cv:
                        side.marked.add((i, len(line) - 1))
                mean_mode = grid.statistic == "mean" and c is not None and bool(
                    c.launch_values)
                rec = {"benchmark": grid.benchmark, "metric": grid.metric, "variant": g,
                       grid.row_param: rv, grid.col_param: cv, **grid.fixed,
                       "value": value,
                       "statistic": ("mean of launches" if mean_mode else
                                     c.shown_statistic if c else None),
                       "std": std,
                       "status": "failed" if failed else ("ok" if c else "not run"),
                       "ci_low": c.ci_low if c and not mean_mode else None,
                       "ci_high": c.ci_high if c and not mean_mode else None,
                       "launches": c.launches if c else None,
                       "launch_values": c.launch_values if c else None,
                       "n": c.n if c else None,
                       "best_in_row": bool(c) and not failed and grid.best[g].get(rv) == cv}
                side.records.append(rec)
        side.rows.append(line)
    out = [side]
    out += [_ratio_table(grid, cand, ratios) for cand, ratios in grid.ratio.items()]
    return out


def _ratio_table(grid: Grid, cand: str, ratios: dict) -> Table:
    """One candidate's gain against the baseline at every position of the grid."""
    rt = Table(title=f"{grid.title}: gain {cand} vs {grid.baseline}",
               header=[f"{grid.row_param} \\ {grid.col_param}"] +
               [_fmt_param(grid.col_param, cv) for cv in grid.col_values], rows=[],
               kind="ratio-grid",
               caption="gain > 1 = candidate better [95% CI from the spread between "
                       "launches]; ~ = not significant (Welch t on log launch statistics, "
                       "Holm over this grid); ? = cannot tell (fewer than "
                       f"{launch_stats.MIN_LAUNCHES} launches on a side)")
    for rv in grid.row_values:
        line = [_fmt_param(grid.row_param, rv)]
        for cv in grid.col_values:
            g = ratios.get((rv, cv))
            s = grid.significant.get(cand, {}).get((rv, cv))
            t = grid.tests.get(cand, {}).get((rv, cv))
            if g is None:
                # the candidate's cell failed: x; no pair to compare: -
                line.append("x" if (rv, cv) in grid.failed.get(cand, ()) else "-")
            else:
                txt = fmt_gain_ci(g, t.ci_low, t.ci_high, 2) if t else f"{g:.2f}x"
                line.append(txt + ("" if s else (" ~" if s is False else " ?")))
            rt.records.append({"benchmark": grid.benchmark, "metric": grid.metric,
                               "candidate": cand, "baseline": grid.baseline,
                               grid.row_param: rv, grid.col_param: cv, **grid.fixed,
                               "gain": g, "gain_ci_low": t.ci_low if t else None,
                               "gain_ci_high": t.ci_high if t else None,
                               "p": t.p if t else None,
                               "launches": [t.n_base, t.n_cand] if t else None,
                               "significant": s})
        rt.rows.append(line)
    return rt
