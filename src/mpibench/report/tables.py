"""The users' own report tables, computed from the store:

gain_table       IMB-set gain table: one row per benchmark at one size, both sides' time and
                 MB/s, the gain (from a Comparison, so significance comes with it)
grids            application sweeps: rows one parameter, columns another, best cell marked;
                 per variant side by side and a ratio grid against the baseline
line_rate_table  peak bandwidth as % of a link's line rate and the size reaching half the peak
first_call_table first-call (initialisation) time apart from the steady state
scaling_table    speedup and parallel efficiency against the smallest np/nodes
cost_table       cost and energy per run and per unit of the figure of merit, and the saving

Every builder returns a Table (header, text rows, notes, plus machine-readable records);
render_table() prints it as terminal | markdown | csv | json. HTML uses the same model.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpibench import stats
from mpibench.errors import UsageError
from mpibench.report.compare import (
    Comparison,
    fmt_gain_ci,
    orient_gain,
    transport_lines,
)
from mpibench.report.data import (
    Cell,
    bench_sort_key,
    cell_label,
    fmt_num,
    fmt_params,
    fmt_size,
    imported_clause,
    load_cells,
    params_sort_key,
    statistic_legend,
    with_sweep_params,
)
from mpibench.report.render import Table, render
from mpibench.report.rules import comparable, why_not_comparable
from mpibench.stats import launch as launch_stats
from mpibench.store import Store
from mpibench.store.report_queries import (
    distinct_specs,
    failed_runs_beside,
    run_campaign_variant,
    run_elapsed,
    run_specs,
)
from mpibench.units import fmt_line_rate, parse_line_rate


def render_table(t: Table, fmt: str = "terminal") -> str:
    """A Table as terminal | markdown | csv | json (report.render, the one renderer)."""
    return render(t, fmt)


# ---------------------------------------------------------------------------------------
# Gain table

def gain_table(cmp: Comparison, size: int | None = None,
               measured: Mapping[tuple, Any] | None = None) -> Table:
    """One row per benchmark (and np, and other cell parameters when they vary): each side's
    time (and MB/s where it applies) at `size` and the gain against the baseline.

    Default size: the largest size at which every set that ran the benchmark has an ok
    result (a set that never ran it shows '-', it does not veto the others).
    `measured`: the cells before a --size filter (load_cells keys), so a benchmark the
    filter removed entirely (Barrier has size 0 only) still gets its note."""
    by_bench: dict[tuple, list] = defaultdict(list)
    for r in cmp.rows:
        # profile:sizes rows count messages per size bin: not a time at a message size
        if r.key.at_message_size:
            by_bench[(r.title, r.metric, r.np, fmt_params(r.params))].append(r)
    cands = cmp.candidates
    show_np = len({k[2] for k in by_bench}) > 1
    show_params = any(k[3] for k in by_bench)
    hdr = ["benchmark"] + (["np"] if show_np else []) + (["cell"] if show_params else [])
    hdr += ["size"]
    for g in cmp.groups:
        hdr += [f"{g} time (us)", f"{g} MB/s"]
    hdr += [f"gain {c}" if len(cands) > 1 else "gain" for c in cands]
    legend = statistic_legend((c for rs in by_bench.values() for r in rs
                               for c in r.cells.values()), "time", "us")
    t = Table(title=f"Gain table vs {cmp.baseline}"
              + (f" at {fmt_size(size)} bytes" if size is not None else
                 " at the largest common size"),
              header=hdr, rows=[], kind="gain",
              caption=f"{legend}; MB/s = 10^6 bytes/s from that time; "
                      "gain > 1 = candidate better (baseline time / candidate time) [95% CI "
                      "from the spread between launches]; ~ = not significant (Welch t on "
                      "log launch statistics, Holm over the full comparison, alpha "
                      f"{cmp.alpha:g}); cannot tell = fewer than {launch_stats.MIN_LAUNCHES} "
                      "launches on a side",
              notes=list(cmp.warning_lines))

    def key(kv):
        (bench, metric, np_, params), _ = kv
        return (bench_sort_key(bench), metric, -1 if np_ is None else np_,
                params_sort_key(rows_params[params]))

    rows_params = {k[3]: rs[0].params for k, rs in by_bench.items()}
    missing: list[str] = []
    for (bench, metric, np_, params), rows in sorted(by_bench.items(), key=key):
        lead = [bench] + ([str(np_) if np_ is not None else ""] if show_np else []) + \
            ([params] if show_params else [])
        where = " ".join(x for x in (bench, f"np={np_}" if show_np else "", params) if x)
        present = [g for g in cmp.groups if any(g in r.cells for r in rows)]
        ok = [r for r in rows if all(g in r.cells and r.cells[g].status == "ok"
                                     for g in present)]
        if size is None:
            pick = max(ok, key=lambda r: r.size) if ok and cmp.baseline in present else None
        else:
            pick = next((r for r in rows if r.size == size), None)
        if pick is None:
            if size is not None:
                # said, not silently dropped: a Barrier has no 4 MiB row
                have = sorted({r.size for r in rows})
                missing.append(f"{where}: not measured at {fmt_size(size)} bytes (its sizes: "
                               + ", ".join(fmt_size(s) for s in have[:8])
                               + (" ..." if len(have) > 8 else "") + ")")
                continue
            t.rows.append(lead + ["-"] + ["-"] * (2 * len(cmp.groups) + len(cands)))
            t.notes.append(f"{where}: no size with an ok result in the baseline and every "
                           "set that ran it")
            continue
        line = lead + [fmt_size(pick.size)]
        rec: dict[str, Any] = {"benchmark": bench, "np": np_, "params": pick.params,
                               "size": pick.size, "metric": metric}
        for g in cmp.groups:
            c = pick.cells.get(g)
            v = c.value if c and c.status == "ok" else None
            bw = c.bandwidth_mbps if c and c.status == "ok" else None
            shown = fmt_num(v) if c is None or c.status == "ok" else c.status
            if c is not None and c.status == "ok" and c.no_samples:
                shown += f" ({c.shown_statistic})"      # an imported row: not a median
            line += [shown, fmt_num(bw) if bw is not None else ""]
            rec[f"{g}_time_us"] = v
            rec[f"{g}_statistic"] = c.shown_statistic if c is not None else None
            rec[f"{g}_mbps"] = bw
        for cand in cands:
            d = pick.deltas[cand]
            g = fmt_gain_ci(d.gain, d.ci_low, d.ci_high, 2)
            if d.gain is None:
                line.append("-")
            elif d.tested and not d.significant:
                line.append(f"~ {g}")
            elif not d.tested:
                line.append(f"{g} (cannot tell, n={d.n_base}+{d.n_cand})")
            else:
                line.append(g)
            rec[f"gain_{cand}"] = d.gain
            rec[f"gain_ci_{cand}"] = [d.ci_low, d.ci_high]
            rec[f"launches_{cand}"] = [d.n_base, d.n_cand]
            rec[f"significant_{cand}"] = d.significant
            rec[f"p_holm_{cand}"] = d.p_adj
        t.rows.append(line)
        t.records.append(rec)
    if size is not None and measured is not None:
        seen = {k[0] for k in by_bench}
        gone: dict[str, set[int]] = defaultdict(set)
        for k in measured:
            if k.at_message_size and k.title not in seen:
                gone[k.title].add(k.size)
        for bench in sorted(gone, key=bench_sort_key):
            sizes_ = sorted(gone[bench])
            missing.append(f"{bench}: not measured at {fmt_size(size)} bytes (its sizes: "
                           + ", ".join(fmt_size(s) for s in sizes_[:8])
                           + (" ..." if len(sizes_) > 8 else "") + ")")
    if size is not None and not t.rows:
        t.notes.append(f"no benchmark has results at {fmt_size(size)} bytes")
    else:
        t.notes.extend(missing)
    return t


# ---------------------------------------------------------------------------------------
# Grids

def _param_value(cell: Cell, name: str) -> Any:
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
    cells: dict[str, dict[tuple[Any, Any], Cell]]     # group -> (row, col) -> cell
    best: dict[str, dict[Any, Any]]                   # group -> row -> best col
    ratio: dict[str, dict[tuple[Any, Any], float | None]]   # candidate -> gain per cell
    significant: dict[str, dict[tuple[Any, Any], bool | None]]
    groups: list[str]
    baseline: str
    # candidate -> (row, col) -> the launch-level test (gain CI, p, launch counts)
    tests: dict[str, dict[tuple[Any, Any], launch_stats.LaunchTest]] = field(
        default_factory=dict)
    statistic: str = "median"
    # group -> positions whose launches all failed (no ok cell): shown as "x", never blank
    failed: dict[str, set[tuple[Any, Any]]] = field(default_factory=dict)

    def shown(self, c: Cell) -> tuple[float | None, float | None]:
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


def grids(store: Store, groups: Mapping[str, list[str]], row_param: str, col_param: str, *,
          baseline: str | None = None, metric: str | None = None,
          benchmark: str | None = None, alpha: float = 0.05,
          cells: dict | None = None,
          max_shape: tuple[int, int] | None = None, statistic: str = "median") -> list[Grid]:
    """One Grid per (benchmark, metric, other params) whose cells vary row_param and col_param.
    The best cell per row (per group) follows the metric's better-direction; a cell's value
    is the geometric mean of its launch statistics (statistic median), or with statistic
    mean the arithmetic mean of the launch means (Grid.shown); the ratio grid tests launches
    against launches (Welch t on logs, Holm over the grid). Positions where a group's
    launches failed (with or without result rows) are kept in Grid.failed."""
    order = list(groups)
    baseline = baseline or order[0]
    cells = cells if cells is not None else load_cells(store, groups, statistic=statistic)
    buckets: dict[tuple, dict[str, dict[tuple, Cell]]] = defaultdict(lambda: defaultdict(dict))
    for key, by_group in cells.items():
        bench, size, m = key.title, key.size, key.metric
        if metric is not None and m != metric:
            continue
        if benchmark is not None and bench.lower() != benchmark.lower():
            continue
        for g, c in by_group.items():
            rv, cv = _param_value(c, row_param), _param_value(c, col_param)
            if rv is None or cv is None:
                continue
            fixed = {k: v for k, v in c.params.items() if k not in (row_param, col_param)}
            if size is not None and "size" not in (row_param, col_param):
                fixed["size"] = size
            fixed_key = json.dumps(fixed, sort_keys=True, default=str)
            buckets[(bench, m, fixed_key)][g][(rv, cv)] = c
    failed = _failed_positions(store, groups, row_param, col_param)
    out = []
    for (bench, m, fixed_key), per_group in sorted(buckets.items(),
                                                   key=lambda kv: bench_sort_key(kv[0][0])):
        any_cell = next(iter(next(iter(per_group.values())).values()))
        fails = {g: {(rv, cv) for b, fk, rv, cv in failed.get(g, ())
                     if b == bench and fk == fixed_key} for g in order}
        fails = {g: {p for p in ps if p not in per_group.get(g, {})
                     or per_group[g][p].status != "ok"} for g, ps in fails.items() if ps}
        rows = _sort_values([k[0] for pg in per_group.values() for k in pg]
                            + [p[0] for ps in fails.values() for p in ps])
        cols = _sort_values([k[1] for pg in per_group.values() for k in pg]
                            + [p[1] for ps in fails.values() for p in ps])
        if len(rows) * len(cols) < 2:
            continue
        better = any_cell.better
        if max_shape and (len(rows) > max_shape[0] or len(cols) > max_shape[1]):
            # too large to show: keep the shape (for the message), skip the statistics
            out.append(Grid(benchmark=bench, metric=m, unit=any_cell.unit, better=better,
                            row_param=row_param, col_param=col_param,
                            fixed=json.loads(fixed_key), row_values=rows, col_values=cols,
                            cells={}, best={}, ratio={}, significant={}, groups=[],
                            baseline=baseline))
            continue
        best: dict[str, dict[Any, Any]] = {}
        for g, pg in per_group.items():
            best[g] = {}
            for rv in rows:
                vals = [(cv, v) for cv in cols
                        if (rv, cv) in pg and pg[(rv, cv)].status == "ok"
                        and (v := _shown_value(pg[(rv, cv)], statistic)) is not None]
                if vals:
                    pick = (min if better == "lower" else max)(vals, key=lambda x: x[1])
                    best[g][rv] = pick[0]
        ratio: dict[str, dict] = {}
        sig: dict[str, dict] = {}
        ltests: dict[str, dict] = {}
        base = per_group.get(baseline, {})
        tested = []
        for cand in [g for g in order if g != baseline and g in per_group]:
            ratio[cand], sig[cand], ltests[cand] = {}, {}, {}
            for pos, c in per_group[cand].items():
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
        for (cand, pos, _), pa in zip(tested, stats.holm([p for *_, p in tested]),
                                      strict=True):
            sig[cand][pos] = bool(pa <= alpha)
        out.append(Grid(benchmark=bench, metric=m, unit=any_cell.unit, better=better,
                        row_param=row_param, col_param=col_param,
                        fixed=json.loads(fixed_key), row_values=rows, col_values=cols,
                        cells={g: per_group[g] for g in order if g in per_group}, best=best,
                        ratio=ratio, significant=sig,
                        groups=[g for g in order if g in per_group], baseline=baseline,
                        tests=ltests, statistic=statistic, failed=fails))
    return out


def _shown_value(c: Cell, statistic: str) -> float | None:
    if statistic == "mean" and c.launch_values:
        return float(np.mean(c.launch_values))
    return c.value


def _failed_positions(store: Store, groups: Mapping[str, list[str]], row_param: str,
                      col_param: str) -> dict[str, list[tuple]]:
    """group -> [(benchmark, fixed params key, row value, col value)] of its failed launches
    (a failed application launch stores no rows: only its run says where it was)."""
    if "size" in (row_param, col_param):
        return {}                  # a failed launch has no per-size rows to place
    owner: dict[tuple[int, str], list[str]] = defaultdict(list)
    rows = failed_runs_beside(store, [r for ids in groups.values() for r in ids])
    if not rows:
        return {}
    for g, ids in groups.items():
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
    """Side by side (one block of columns per group) and one ratio grid per candidate."""
    hdr = [f"{grid.row_param} \\ {grid.col_param}"]
    for g in grid.groups:
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
        for g in grid.groups:
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
    for cand, ratios in grid.ratio.items():
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
        out.append(rt)
    return out


# ---------------------------------------------------------------------------------------
# Line rate

def parse_rate(text: str | float | int) -> float:
    """'100Gb/s', '100Gbps', '25GbE', '200G', 1e11 (bits) or '12.5GB/s' (bytes) -> bits per
    second: units.parse_line_rate, the parser `import` and campaign files use too."""
    return parse_line_rate(text)


def _lookup(spec: Any, keys: list[str]) -> Any:
    """A key at the top of a spec, or inside its 'variant' table (campaign runs store
    {"variant": {...}, "group": ...}; `mpibench run` stores the variant itself) or its
    'campaign' table (a campaign file's [campaign] keys)."""
    if not isinstance(spec, dict):
        return None
    for where in (spec, spec.get("variant"), spec.get("campaign")):
        if isinstance(where, dict):
            for k in keys:
                if where.get(k) is not None:
                    return where[k]
    return None


def _spec_value(store: Store, run_ids: Iterable[str], keys: Iterable[str]) -> Any:
    """First value of any of `keys` in the runs' spec_json, then their campaigns' spec."""
    keys = list(keys)
    ids = list(run_ids)[:2000]
    if not ids:
        return None
    # DISTINCT: a campaign's runs mostly share their spec text, and its campaign's
    camp_specs = []
    seen_camp: set[str | None] = set()
    for run_spec, camp_spec in distinct_specs(store, ids):
        if camp_spec in seen_camp:
            camp_spec = "{}"
        else:
            seen_camp.add(camp_spec)
        for blob, sink in ((run_spec, None), (camp_spec, camp_specs)):
            try:
                spec = json.loads(blob or "{}")
            except ValueError:
                continue
            if sink is not None:
                sink.append(spec)
                continue
            v = _lookup(spec, keys)
            if v is not None:
                return v
    for spec in camp_specs:
        v = _lookup(spec, keys)
        if v is not None:
            return v
    return None


def _spec_value_per_run(store: Store, run_ids: list[str], keys: Iterable[str]
                        ) -> dict[str, Any]:
    """{run id: _spec_value(store, [run id], keys)} for many runs in a few queries (a
    per-cell query cost 10^4 queries on a large application campaign)."""
    keys = list(keys)
    out: dict[str, Any] = {}
    found: dict[tuple[str | None, str | None], Any] = {}
    for rid, run_spec, camp_spec in run_specs(store, run_ids):
        if (run_spec, camp_spec) not in found:
            v = None
            for blob in (run_spec, camp_spec):
                try:
                    v = _lookup(json.loads(blob or "{}"), keys)
                except ValueError:
                    continue
                if v is not None:
                    break
            found[(run_spec, camp_spec)] = v
        out[rid] = found[(run_spec, camp_spec)]
    return out


def line_rate_table(store: Store, groups: Mapping[str, list[str]],
                    line_rate: str | float | None = None, cells: dict | None = None,
                    warnings: list[str] | None = None) -> Table:
    """Peak measured bandwidth per group, benchmark and np as % of the line rate, and the
    smallest measured size reaching half of that peak. The line rate is the flag's, else each
    group's runs' spec 'line_rate_bps' (or 'line_rate' text), else only the peak is shown.

    Collectives are judged by their bus bandwidth (the usual factors, nccl-tests style):
    that is what the links carry, and the figure that can be held against a link speed;
    point-to-point benchmarks by their MB/s. A bandwidth measured on another transport
    than the one requested is footnoted (`warnings`: the comparison's transport warnings
    when it has them, else looked up)."""
    cells = cells if cells is not None else load_cells(store, groups, with_samples=False)
    wanted = set(groups)
    legend = statistic_legend((c for by in cells.values() for g, c in by.items()
                               if g in wanted and c.size), "time")
    t = Table(title="Bandwidth against line rate", kind="line-rate", rows=[],
              header=["variant", "benchmark", "np", "line rate", "figure", "peak MB/s",
                      "at size", "% of line", "half-peak size"],
              caption=f"MB/s = 10^6 bytes/s from the time ({legend}); figure = MB/s for "
                      "point-to-point, busbw (bus bandwidth) for collectives; line rate "
                      "converted as bits/s / 8 / 10^6; half-peak size = smallest measured "
                      "size whose bandwidth is >= 50% of the peak",
              notes=list(warnings) if warnings is not None else
              transport_lines(store, groups))
    for g, ids in groups.items():
        rate = line_rate
        if rate is None:
            rate = _spec_value(store, ids, ("line_rate_bps", "line_rate"))
        bps = parse_rate(rate) if rate is not None else None
        per_bench: dict[tuple[str, int | None], list[Cell]] = defaultdict(list)
        for by_group in cells.values():
            c = by_group.get(g)
            if c and c.status == "ok" and c.size and (c.busbw_mbps or c.bandwidth_mbps):
                per_bench[(c.key.title, c.np)].append(c)
        for bench, np_ in sorted(per_bench, key=lambda k: (bench_sort_key(k[0]),
                                                           -1 if k[1] is None else k[1])):
            cs = sorted(per_bench[(bench, np_)], key=lambda c: c.size)
            use_bus = any(c.busbw_mbps for c in cs)

            def bw(c: Cell, use_bus: bool = use_bus) -> float:
                return (c.busbw_mbps if use_bus else c.bandwidth_mbps) or 0.0

            peak = max(cs, key=bw)
            half = next(c for c in cs if bw(c) >= bw(peak) / 2)
            line_mbps = bps / 8 / 1e6 if bps else None
            pct = 100 * bw(peak) / line_mbps if line_mbps else None
            shown_pct = "" if pct is None else f"{pct:.1f}%"
            if pct is not None and pct > 100:
                # faster than the wire: the traffic did not cross that link (shared memory,
                # a loopback), or the line rate is wrong; never a result to quote
                shown_pct += " (!)"
                t.notes.append(
                    f"{g} {bench}" + (f" np={np_}" if np_ is not None else "")
                    + f": {pct:.0f}% of the {_fmt_rate(bps)} line rate is above 100%: the "
                    "traffic did not cross that link (shared memory or loopback?) or the "
                    "line rate is wrong")
            t.rows.append([g, bench, "" if np_ is None else str(np_), _fmt_rate(bps),
                           "busbw" if use_bus else "MB/s", fmt_num(bw(peak)),
                           fmt_size(peak.size), shown_pct, fmt_size(half.size)])
            t.records.append({"variant": g, "benchmark": bench, "np": np_,
                              "line_rate_bps": bps, "figure": "busbw" if use_bus else "mbps",
                              "peak_mbps": bw(peak), "peak_size": peak.size,
                              "percent_of_line_rate": pct, "half_peak_size": half.size,
                              "above_line_rate": pct is not None and pct > 100})
    if not t.rows:
        t.notes.append("no bandwidth results in the selection (point-to-point benchmarks such "
                       "as PingPong or Uniband report MB/s)")
    return t


def _fmt_rate(bps: float | None) -> str:
    return fmt_line_rate(bps)


# ---------------------------------------------------------------------------------------
# First call vs steady state

def first_call_table(store: Store, groups: Mapping[str, list[str]], *,
                     mean_std: bool = False, sizes: Iterable[int] | None = None,
                     cells: dict | None = None) -> Table:
    cells = cells if cells is not None else load_cells(store, groups)
    gs = list(groups)
    hdr = ["benchmark", "size"]
    for g in gs:
        hdr += [f"{g} first", f"{g} steady"] + ([f"{g} mean ± std"] if mean_std else []) + \
            [f"{g} first/steady"]
    imported = imported_clause(c for key, by in cells.items() if key.metric == "time"
                               for c in by.values())
    t = Table(title="First call vs steady state", header=hdr, rows=[], kind="first-call",
              caption="first = time of the first (initialisation) call, median over launches; "
                      "steady = geometric mean of the launch medians ± 95% CI from the "
                      "spread between launches (warm-up discarded; ± ? = one launch)"
                      + (f"; {imported}" if imported else "") + "; times in microseconds")
    size_set = set(sizes) if sizes is not None else None
    for key, by_group in cells.items():
        bench, size, _np = key.title, key.size, key.np
        if key.metric != "time" or (size_set is not None and size not in size_set):
            continue
        if not any(c.firsts for c in by_group.values()):
            continue
        line = [bench, cell_label(key)]
        rec: dict[str, Any] = {"benchmark": bench, "size": size, "np": _np}
        for g in gs:
            c = by_group.get(g)
            if c is None or c.status != "ok":
                line += [""] * (3 + mean_std)
                continue
            pct = c.ci_pct
            steady = fmt_num(c.value) + (f" ± {pct:.1f}%" if pct is not None else " ± ?")
            ratio = c.first / c.value if c.first and c.value else None
            line += [fmt_num(c.first), steady]
            if mean_std:
                line.append(f"{fmt_num(c.mean)} ± {fmt_num(c.std)}")
            line.append("" if ratio is None else f"{ratio:.1f}x")
            rec.update({f"{g}_first": c.first, f"{g}_firsts": c.firsts,
                        f"{g}_median": c.value, f"{g}_ci_low": c.ci_low,
                        f"{g}_ci_high": c.ci_high, f"{g}_mean": c.mean, f"{g}_std": c.std,
                        f"{g}_first_over_steady": ratio})
        t.rows.append(line)
        t.records.append(rec)
    # start-up before any benchmark: the core's MPI_Init time per launch
    from mpibench.store.report_queries import run_mpi_init

    inits = run_mpi_init(store, [r for ids in groups.values() for r in ids])
    for g in gs:
        vals = sorted(inits[r] for r in dict.fromkeys(groups[g]) if r in inits)
        if vals:
            med = float(np.median(vals))
            t.notes.append(f"{g}: MPI_Init {fmt_num(med / 1000)} ms (median of {len(vals)} "
                           f"launch(es), {fmt_num(vals[0] / 1000)}–{fmt_num(vals[-1] / 1000)})")
    return t


# ---------------------------------------------------------------------------------------
# Scaling

def scaling_table(store: Store, groups: Mapping[str, list[str]], *, by: str | None = None,
                  metric: str | None = None, cells: dict | None = None,
                  include_sizes: bool = False) -> Table:
    """Speedup and parallel efficiency against the smallest count of `by` ('nodes' when cells
    have that parameter, else 'np'), per variant and per series (benchmark, metric, size and
    the other parameters). Time-like metrics: speedup = t0/t; rates: r/r0.
    Message-size benchmarks are left out unless include_sizes: the latency of one collective
    call at a fixed message size is not a strong-scaling problem, and its "speedup" would
    mislead. include_sizes=None: message-size cells only when the selection has no
    application cells (an explicit `--scaling` on a core campaign), with a caption saying
    what such a "speedup" means."""
    cells = cells if cells is not None else load_cells(store, groups, with_samples=False)
    if include_sizes is None:
        include_sizes = all(k[1] is not None for k in cells)
    series: dict[tuple, dict[Any, Cell]] = defaultdict(dict)
    chosen_by = by
    for by_group in cells.values():
        for g, c in by_group.items():
            if c.status != "ok" or c.value is None:
                continue
            if c.size is not None and not include_sizes:
                continue
            if metric is not None and c.metric != metric:
                continue
            b = chosen_by or ("nodes" if "nodes" in c.params else "np")
            count = c.np if b == "np" else c.params.get(b)
            if count is None:
                continue
            other = {k: v for k, v in c.params.items() if k != b}
            # scaling over nodes keeps the ranks per node: np grows with the nodes, and
            # cells at one node count but different np belong to different series
            per = (c.np / float(count) if b != "np" and c.np is not None and count
                   else None)
            skey = (g, c.key.title, c.metric, c.size, b,
                    json.dumps(other, sort_keys=True, default=str), per)
            series[skey][count] = c
    t = Table(title="Scaling", kind="scaling", rows=[],
              header=["variant", "benchmark", "series", "count", "value", "speedup",
                      "efficiency"],
              caption="value = geometric mean of the launch statistics ± 95% CI between "
                      "launches; speedup against the smallest count of the series (time: "
                      "t0/t, rates: r/r0) [95% CI, Welch on log launch statistics]; "
                      "efficiency = speedup / (count / smallest count)"
                      + ("; message-size benchmarks: t0/t of one call at a fixed size, i.e. "
                         "how its cost grows with the count (not strong scaling: the work per "
                         "rank does not shrink)" if include_sizes else ""))
    for skey in sorted(series, key=lambda k: (bench_sort_key(k[1]), k[2], str(k[3]), k[5],
                                              k[6] or 0, k[0])):
        pts = series[skey]
        if len(pts) < 2:
            continue
        g, bench, m, size, b, other, per = skey
        counts = sorted(pts, key=float)
        c0 = counts[0]
        desc = " ".join(x for x in (m, fmt_size(size) if size is not None else "",
                                    fmt_params(json.loads(other)),
                                    f"ranks/{b}={per:g}" if per is not None else "") if x)
        kind = pts[c0].kind
        if not kind.scales:
            # a call count or an MPI fraction at more ranks is not a speedup
            note = (f"{g} {bench} {m}: a {kind} figure: values only, no speedup or "
                    "efficiency")
            if note not in t.notes:
                t.notes.append(note)
        for cnt in counts:
            v = pts[cnt].value
            speed, lt = _speedup(pts[c0], pts[cnt]) if cnt != c0 else (1.0, None)
            if cnt != c0 and speed is None and kind.scales:
                why = why_not_comparable(pts[c0], pts[cnt])
                if why:
                    t.notes.append(f"{g} {bench} {desc}: {b}={cnt} against {b}={c0}: "
                                   f"no speedup ({why})")
            if not kind.scales:
                speed = lt = None
            eff = speed / (float(cnt) / float(c0)) if speed else None
            pct = pts[cnt].ci_pct
            t.rows.append([g, bench, desc, f"{b}={cnt}",
                           fmt_num(v) + (" ± ?" if pct is None else f" ± {pct:.1f}%"),
                           "" if speed is None else (
                               fmt_gain_ci(speed, lt.ci_low, lt.ci_high, 2) if lt
                               else f"{speed:.2f}x"),
                           "" if eff is None else f"{100 * eff:.0f}%"])
            t.records.append({"variant": g, "benchmark": bench, "metric": m, "size": size,
                              "by": b, "count": cnt, "params": json.loads(other),
                              "ranks_per_count": per, "np": pts[cnt].np,
                              "value": v, "ci_low": pts[cnt].ci_low,
                              "ci_high": pts[cnt].ci_high, "launches": pts[cnt].launches,
                              "speedup": speed,
                              "speedup_ci": [lt.ci_low, lt.ci_high] if lt else None,
                              "efficiency": eff})
    if not t.rows:
        what = by or "np or nodes"
        t.notes.append(f"no series varies {what} within a set (scaling needs the same cell "
                       f"at two or more counts of {what}"
                       + ("" if include_sizes else "; message-size benchmarks are left out "
                          "when the selection has application cells") + ")")
    return t


def _speedup(c0: Cell, c: Cell) -> tuple[float | None, launch_stats.LaunchTest | None]:
    """(speedup of c against the series' first cell c0, the launch-level test): None when
    the two may not be compared (rules.why_not_comparable: a median never against an
    imported mean, a failed cell never)."""
    if not comparable(c0, c):
        return None, None
    lt = launch_stats.compare(c0.launch_values, c.launch_values, c.better)
    if lt.gain is not None:
        return lt.gain, lt
    return orient_gain(c0.value, c.value, c.better), lt


# ---------------------------------------------------------------------------------------
# Cost and energy

_PER_HOUR = {"/day": 1 / 24, "/d": 1 / 24, "/h": 1.0, "/hour": 1.0, "/s": 3600.0,
             "/sec": 3600.0, "/min": 60.0}


@functools.lru_cache(maxsize=256)
def _rate_per_hour(unit: str) -> tuple[float, str] | None:
    u = unit.strip()
    for suffix, f in _PER_HOUR.items():
        if u.lower().endswith(suffix):
            return f, u[: -len(suffix)].strip() or "unit"
    return None


def cost_table(store: Store, groups: Mapping[str, list[str]], *,
               price_per_node_hour: float | None = None, power_per_node_w: float | None = None,
               baseline: str | None = None, cells: dict | None = None) -> Table:
    """Cost and energy per run and per unit of the figure of merit, per application cell.

    Run time: the cell's wall_time/elapsed metric if it has one, else the runs' elapsed
    seconds in the store. Nodes: the 'nodes' parameter, else the run spec's 'nodes', else 1
    (said in a note). Price and power: flags, else run/campaign spec keys
    'price_per_node_hour' and 'power_per_node_w'. The figure of merit is a rate metric whose
    unit ends in /day, /h, /min or /s (e.g. ns/day): cost per unit = cost per hour / rate per
    hour. The saving is the better variant's cost relative to the other's, per cell."""
    order = list(groups)
    baseline = baseline or order[0]
    price = price_per_node_hour
    power = power_per_node_w
    all_ids = [r for ids in groups.values() for r in ids]
    if price is None:
        price = _spec_value(store, all_ids, ("price_per_node_hour",))
    if power is None:
        power = _spec_value(store, all_ids, ("power_per_node_w",))
    t = Table(title="Cost and energy", kind="cost", rows=[], notes=[],
              header=["cell", "variant", "nodes", "run time (s)", "cost/run", "energy/run (Wh)",
                      "figure of merit", "cost/unit", "energy/unit (Wh)", "saving vs baseline"],
              caption=(f"price {price if price is not None else '?'} per node-hour, power "
                       f"{power if power is not None else '?'} W per node; cost = nodes x hours "
                       "x price; energy = nodes x hours x power (node power only, no network "
                       "or cooling)"))
    if price is None and power is None:
        t.notes.append("no price per node-hour or power per node given (flags "
                       "--cost-per-node-hour/--power-per-node-w or campaign keys "
                       "price_per_node_hour/power_per_node_w)")
        return t
    cells = cells if cells is not None else load_cells(store, groups, with_samples=False)
    # group cells per application cell (benchmark + params + np), across metrics
    apps: dict[tuple, dict[str, dict[str, Cell]]] = defaultdict(lambda: defaultdict(dict))
    for key, by_group in cells.items():
        # profile:* rows describe the application's own launches (profile = true): they
        # are not more jobs to price
        if not key.is_application:
            continue
        for g, c in by_group.items():
            if c.status == "ok":
                apps[(key.title, key.np, key.params_key)][g][key.metric] = c
    assumed_one = False
    savings: dict[str, list[float]] = defaultdict(list)
    elapsed_cache: dict[str, float | None] = {}
    elapsed_cache.update(run_elapsed(store, all_ids))     # one query, not one per run
    many_np = len({k[1] for k in apps}) > 1
    spec_nodes: dict[str, Any] | None = None
    for (bench, np_, pkey), per_group in apps.items():
        params = json.loads(pkey)
        label = " ".join(x for x in (bench, fmt_params(params),
                                     f"np={np_}" if many_np and np_ is not None else "") if x)
        costs: dict[str, tuple[float | None, float | None]] = {}
        lines = []
        for g in [x for x in order if x in per_group]:
            metrics = per_group[g]
            wall = next((metrics[m] for m in ("wall_time", "elapsed", "walltime", "time_s")
                         if m in metrics), None)
            if wall is not None:
                secs = wall.value if wall.unit in ("s", "sec", "seconds") else (
                    wall.value / 1e6 if wall.unit == "us" else wall.value)
                any_cell = wall
            else:
                any_cell = next(iter(metrics.values()))
                secs = _median_elapsed(store, any_cell.runs_used, elapsed_cache)
            nodes = params.get("nodes")
            if nodes is None and any_cell.runs_used:
                if spec_nodes is None:         # one query for every run, on first need
                    spec_nodes = _spec_value_per_run(store, all_ids, ("nodes",))
                nodes = spec_nodes.get(any_cell.runs_used[0])
            if nodes is None:
                nodes, assumed_one = 1, True
            hours = secs / 3600 if secs else None
            cost = nodes * hours * price if (hours and price is not None) else None
            energy = nodes * hours * power if (hours and power is not None) else None
            fom = next(((m, c) for m, c in metrics.items() if c.better == "higher"
                        and _rate_per_hour(c.unit)), None)
            cpu = epu = None
            fom_txt = what = ""
            if fom:
                m, c = fom
                f, what = _rate_per_hour(c.unit)
                per_hour = c.value * f
                fom_txt = f"{fmt_num(c.value)} {c.unit}"
                if per_hour > 0:
                    cpu = nodes * price / per_hour if price is not None else None
                    epu = nodes * power / per_hour if power is not None else None
            costs[g] = (cpu if cpu is not None else cost, epu if epu is not None else energy)
            per = f" /{what}" if fom else ""
            lines.append([label, g, str(nodes), fmt_num(secs), _money(cost), fmt_num(energy),
                          fom_txt, _money(cpu) + per if cpu is not None else "",
                          fmt_num(epu) + per if epu is not None else ""])
            t.records.append({"benchmark": bench, "params": params, "np": np_, "variant": g,
                              "nodes": nodes, "seconds": secs, "cost_per_run": cost,
                              "energy_wh_per_run": energy,
                              "figure_of_merit": fom[1].value if fom else None,
                              "figure_of_merit_unit": fom[1].unit if fom else None,
                              "cost_per_unit": cpu, "energy_wh_per_unit": epu})
        # saving of the cheaper variant against the baseline (or the other one)
        base_cost = costs.get(baseline, (None, None))[0]
        for line, g in zip(lines, [x for x in order if x in per_group], strict=True):
            c = costs[g][0]
            if g == baseline or base_cost is None or c is None or base_cost <= 0:
                line.append("")
            else:
                s = 1 - c / base_cost
                line.append(_fmt_saving(s, baseline))
                t.records[-len(lines) + lines.index(line)]["saving_vs_baseline"] = s
                savings[g].append(s)
            t.rows.append(line)
    if not apps:
        # Message-size campaigns: the unit of work is a launch (same benchmarks and sizes
        # for every variant), so cost and energy are per launch.
        base_cost = None
        lines = []
        for g in order:
            ids = list(groups[g])
            secs = _median_elapsed(store, ids, elapsed_cache)
            nodes = _spec_value(store, ids, ("nodes",))
            if nodes is None:
                nodes, assumed_one = 1, True
            hours = secs / 3600 if secs else None
            cost = nodes * hours * price if (hours and price is not None) else None
            energy = nodes * hours * power if (hours and power is not None) else None
            if g == baseline:
                base_cost = cost if cost is not None else energy
            lines.append((g, nodes, secs, cost, energy, len(ids)))
        for g, nodes, secs, cost, energy, nruns in lines:
            mine = cost if cost is not None else energy
            saving = (1 - mine / base_cost) if (g != baseline and mine is not None
                                                and base_cost) else None
            t.rows.append([f"one launch (median of {nruns})", g, str(nodes), fmt_num(secs),
                           _money(cost), fmt_num(energy), "", "", "",
                           "" if saving is None else _fmt_saving(saving, baseline)])
            t.records.append({"benchmark": None, "params": {}, "variant": g, "nodes": nodes,
                              "seconds": secs, "cost_per_run": cost,
                              "energy_wh_per_run": energy, "launches": nruns,
                              "saving_vs_baseline": saving})
    for g, ss in savings.items():
        # the headline users ask for: which variant is cheaper, and by how much
        cheaper = sum(x > 0 for x in ss)
        who, saving = cheaper_side(float(np.median(ss)), g, baseline)
        t.notes.append(f"{g} vs {baseline}: {g} is cheaper in {cheaper} of {len(ss)} cell(s); "
                       + (f"median saving of {who}: {100 * saving:.1f}%" if who else
                          "same median cost")
                       + " (per unit of the figure of merit where there is one, else per run;"
                         " a saving is relative to the dearer side)")
    if assumed_one:
        t.notes.append("node count unknown for some cells (no 'nodes' parameter or spec): "
                       "assumed 1 node")
    return t


def cheaper_side(saving_vs_baseline: float, cand: str, baseline: str
                 ) -> tuple[str | None, float]:
    """(the cheaper side, its saving relative to the dearer side) from the candidate's
    saving against the baseline, 1 - cost_cand / cost_base. A saving is always taken
    against the dearer side, so it lies in [0, 1): a candidate costing 102.5% more gives
    the baseline a saving of 50.6%, never 'a saving of 102.5%'."""
    if saving_vs_baseline > 0:
        return cand, saving_vs_baseline
    if saving_vs_baseline < 0:
        ratio = 1.0 - saving_vs_baseline            # cost_cand / cost_base > 1
        return baseline, 1.0 - 1.0 / ratio
    return None, 0.0


def _fmt_saving(saving_vs_baseline: float, baseline: str) -> str:
    """'-20.0% vs ompi' style is a cost change, not a saving: the cheaper side and its
    saving against the dearer one ('saves 20.0% vs ompi', 'ompi saves 50.6%')."""
    who, saving = cheaper_side(saving_vs_baseline, "", baseline)
    if who is None:
        return f"same as {baseline}"
    return f"saves {100 * saving:.1f}% vs {baseline}" if who == "" else \
        f"{baseline} saves {100 * saving:.1f}%"


def _median_elapsed(store: Store, run_ids: list[str], cache: dict) -> float | None:
    vals = []
    for rid in run_ids:
        if rid not in cache:
            row = store.run(rid)
            cache[rid] = row["elapsed"] if row is not None else None
        if cache[rid] is not None:
            vals.append(cache[rid])
    if len(vals) == 1:                 # one launch per cell: np.median costs 50 us a call
        return float(vals[0])
    return float(np.median(vals)) if vals else None


def _money(v: float | None, digits: int = 4) -> str:
    return "" if v is None else fmt_num(v, digits)


# ---------------------------------------------------------------------------------------
# Planning: launches needed

def parse_effect(text: str | float) -> float:
    """'5%', '5', '0.05' -> 0.05 (a relative difference, > 0 and < 10 = 1000%)."""
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        v = float("nan")
    if not s.isascii() or "_" in s:     # float() also reads '٣' and '1_0'
        v = float("nan")
    if not s.endswith("%") and v >= 1.0:
        v = v / 100.0                   # '5' means 5%
    if not 0.0 < v < 10.0:
        raise UsageError(f"--detect {text!r}: expected a relative difference such as 5% or "
                         "0.05")
    return v


def plan_table(cmp: Comparison, effect: float, power: float = launch_stats.POWER) -> Table:
    """Launches per side needed to detect a gain of 1 + effect, from the between-launch
    spread seen in each cell (interleaved launches; Welch t on log launch statistics).

    Per benchmark and candidate: the launches now, the median between-launch sd of the
    logs, the smallest gain detectable now (median over cells), and the launches per side
    needed for the median cell and for the noisiest cell, at alpha (one cell) and at
    alpha / m (every one of the table's m tests under Holm)."""
    alpha = cmp.alpha
    m = max(1, sum(d.tested for r in cmp.rows for d in r.deltas.values()))
    t = Table(title=f"Launches needed to detect {launch_stats.fmt_pct(effect)} "
                    f"(power {power:.0%}, alpha {alpha:g})",
              header=["benchmark", "candidate", "launches now", "between-launch sd",
                      "detectable now", "needed (median cell)", "needed (noisiest cell)",
                      f"needed, all {m} tests (Holm)"], rows=[], kind="plan",
              caption="launches per side, interleaved; from the spread between launches of "
                      "each cell (sd of the log launch statistics, both sides pooled); "
                      "Welch t on log launch statistics; 'all tests' plans at alpha/m so "
                      "that a real difference of this size survives Holm in every cell")
    by: dict[tuple[str, str], list] = defaultdict(list)
    for r in cmp.rows:
        for cand, d in r.deltas.items():
            if d.sd_log is not None:
                by[(r.benchmark, cand)].append(d)
    for (bench, cand), ds in sorted(by.items(), key=lambda kv: (bench_sort_key(kv[0][0]),
                                                                 kv[0][1])):
        sds = sorted(d.sd_log for d in ds)
        med = float(np.median(sds))
        worst = sds[-1]
        now = [d.detectable for d in ds if d.detectable is not None]
        n_med = launch_stats.launches_needed(med, effect, alpha, power)
        n_worst = launch_stats.launches_needed(worst, effect, alpha, power)
        n_all = launch_stats.launches_needed(worst, effect, alpha / m, power)
        counts = sorted({(d.n_base, d.n_cand) for d in ds})
        t.rows.append([bench, cand, ", ".join(f"{a}+{b}" for a, b in counts),
                       f"{100 * med:.1f}%", launch_stats.fmt_pct(float(np.median(now)))
                       if now else "-", str(n_med or ">10000"), str(n_worst or ">10000"),
                       str(n_all or ">10000")])
        t.records.append({"benchmark": bench, "candidate": cand, "effect": effect,
                          "power": power, "alpha": alpha, "launches": counts,
                          "sd_log_median": med, "sd_log_max": worst,
                          "detectable_now_median": float(np.median(now)) if now else None,
                          "needed_median_cell": n_med, "needed_noisiest_cell": n_worst,
                          "needed_all_tests_holm": n_all})
    if not t.rows:
        t.notes.append("no cell has two or more launches on any side: the spread between "
                       "launches is unknown; run at least 3 interleaved launches per side "
                       "and ask again")
    return t
