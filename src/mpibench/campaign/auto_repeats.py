"""`repeats = "auto"`: a two-stage rule that sets the number of interleaved launches from
the spread seen in the first stage.

    [campaign]
    repeats = "auto"                                  # min 3, max 10, target 5%
    repeats = { min = 3, max = 12, target = "3%" }    # or explicitly

The plan holds `max` launches per variant, interleaved as usual (cell ids do not depend on
the rule). Stage 1: the first `min` rounds always run. Then, once per group, the rule looks
at the stage-1 launches (each candidate against the group's first variant, every cell, the
pooled launch-level model of stats.launch.compare_cells) and fixes the group's total: the
smallest n per side at which every gain's 95% CI would be within ±target *at the stage-1
spread*, clamped to [min, max]. Stage 2 runs the rounds up to that total; there is no
further look.

Why: the old rule looked after every round and stopped as soon as the CI was narrow, which
selects runs whose spread happened to be underestimated (one cell, rule (3, 10, 5%), launch
spread 0.05: 6.9% false positives, CI coverage 93%, and 48-64% when it stopped at the
minimum). With one look, on the spread only (never on the means or a p), the total depends on
the first stage's spread and on nothing else, as in Stein's two-stage procedure, and the
final test sees every launch. `simulate_two_stage` checks false positives and coverage (also
when it stopped at the minimum) by simulation; bench/bench_inference.py prints it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpibench.stats import launch as launch_stats
from mpibench.units import percent

DEFAULT_MIN, DEFAULT_MAX, DEFAULT_TARGET = 3, 10, 0.05


@dataclass(frozen=True)
class AutoRepeats:
    min: int = DEFAULT_MIN
    max: int = DEFAULT_MAX
    target: float = DEFAULT_TARGET      # half-width of the gain's 95% CI, relative

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "target": self.target}


def parse(value: Any, fail) -> AutoRepeats:
    """'auto' or {min, max, target}; fail(expected) raises the spec's UsageError."""
    if value == "auto":
        return AutoRepeats()
    if not isinstance(value, dict):
        fail('an integer >= 1, "auto", or { min = 3, max = 10, target = "5%" }')
    unknown = sorted(set(value) - {"min", "max", "target"})
    if unknown:
        fail(f"only the keys min, max and target (got {', '.join(unknown)})")
    lo, hi = value.get("min", DEFAULT_MIN), value.get("max", DEFAULT_MAX)
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, int) or v < 2:
            fail("min and max as integers >= 2 (a launch-level CI needs two launches)")
    if hi < lo:
        fail(f"max >= min (got min {lo}, max {hi})")
    t = value.get("target", DEFAULT_TARGET)
    t = percent(t) if isinstance(t, str | int | float) else None   # one grammar (units.py)
    if t is None or not 0 < t < 1:
        fail('target as a percentage such as "5%" (or 0.05)')
    return AutoRepeats(lo, hi, float(t))


def half_width(t: launch_stats.LaunchTest) -> float | None:
    """The gain CI's half-width relative to the gain (the larger side)."""
    if t.gain is None or t.ci_low is None or t.ci_high is None:
        return None
    return max(t.gain - t.ci_low, t.ci_high - t.gain) / t.gain


def precise_enough(per_variant: dict[str, dict[tuple, list[float]]], target: float,
                   better: dict[tuple, str] | None = None) -> bool:
    """per_variant: {variant: {cell key: launch statistics}} of one group, baseline first.
    True when every common cell's gain CI (each candidate vs the baseline) is within
    +-target; a cell without a CI (fewer than two launches) is not precise."""
    names = list(per_variant)
    if len(names) < 2:
        return True
    base = per_variant[names[0]]
    for cand in names[1:]:
        for key, vals in per_variant[cand].items():
            if key not in base:
                continue
            t = launch_stats.compare(base[key], vals, (better or {}).get(key, "lower"))
            w = half_width(t)
            if w is None or w > target:
                return False
    return True


def group_launches(store, campaign_id: int, group: str
                   ) -> tuple[dict[str, dict[tuple, list[float]]], dict[tuple, str]]:
    """{variant: {cell key: launch medians}} of one group's finished launches, and each
    cell's better-direction (read through the store like every comparison)."""
    from mpibench.report.data import load_cells
    from mpibench.report.rules import comparable

    runs: dict[str, list[str]] = defaultdict(list)
    from mpibench.store.report_queries import done_runs_of_group

    for r in done_runs_of_group(store, campaign_id, group):
        runs[r["variant"]].append(r["id"])
    cells = load_cells(store, dict(runs), with_samples=False)
    out: dict[str, dict[tuple, list[float]]] = {v: {} for v in runs}
    better: dict[tuple, str] = {}
    first = next(iter(runs), None)           # precise_enough's baseline
    for key, by in cells.items():
        base = by.get(first)
        for v, c in by.items():
            # the comparability rule (report/rules.py), as every table applies it
            if base is not None and v != first and not comparable(base, c):
                continue
            if c.status == "ok" and c.launch_values:
                out[v][key] = list(c.launch_values)
                better[key] = c.better
    return out, better


def stage_two_total(per_variant: dict[str, dict[tuple, list[float]]], rule: AutoRepeats,
                    better: dict[tuple, str] | None = None) -> int:
    """Launches per variant for the whole group, from its stage-1 launches: the smallest n
    at which every candidate cell's 95% gain CI would be within ±target at the stage-1
    spread (standard error scaled by sqrt(n1 / n), the stage-1 critical value kept, which
    is conservative as df only grow), clamped to [min, max]. A cell without a test (fewer
    than two launches) asks for the maximum."""
    names = list(per_variant)
    if len(names) < 2:
        return rule.min
    base = per_variant[names[0]]
    goal = math.log1p(rule.target)
    need = rule.min
    for cand in names[1:]:
        by_bench: dict[tuple, list[tuple]] = {}
        for key in per_variant[cand]:
            if key in base:
                by_bench.setdefault(_bench_of(key), []).append(key)
        for keys in by_bench.values():
            tests = launch_stats.compare_cells(
                [(dict(enumerate(base[k])), dict(enumerate(per_variant[cand][k])),
                  (better or {}).get(k, "lower")) for k in keys])
            for t in tests:
                if not t.tested or t.se_log is None or t.ci_low is None:
                    return rule.max
                n1 = min(t.n_base, t.n_cand)
                h1 = 0.5 * (math.log(t.ci_high) - math.log(t.ci_low))
                if h1 <= goal:
                    continue
                need = max(need, math.ceil(n1 * (h1 / goal) ** 2))
                if need >= rule.max:
                    return rule.max
    return max(rule.min, min(rule.max, need))


def _bench_of(key: tuple) -> tuple:
    """A cell key without its size (the cells pooled together): CellKey or a plain tuple."""
    if hasattr(key, "_replace") and hasattr(key, "size"):
        return key._replace(size=None)
    return ("cells",)


def simulate_two_stage(rng: np.random.Generator, reps: int = 200, *, sigma_l: float = 0.05,
                       cells: int = 20, rule: AutoRepeats = AutoRepeats(),
                       alpha: float = 0.05, effect: float = 0.0, size_part: float = 0.5
                       ) -> dict[str, float]:
    """Comparisons under the two-stage rule, launch statistics from the stats.simulate
    model (a launch offset shared by the cells, sd sigma_l, plus a cell-specific part of
    size_part x sigma_l): per-cell false positives before and after Holm, gain-CI coverage
    overall and in the comparisons that stopped at the minimum, launches used."""
    from mpibench import stats

    raw = sig = cover = cells_n = stopped_min = cover_min = cells_min = 0
    used = []
    for _ in range(reps):
        def launches(shift: float) -> np.ndarray:
            u = rng.normal(0, sigma_l, (rule.max, 1))
            return np.exp(shift + u + rng.normal(0, sigma_l * size_part, (rule.max, cells)))
        a, b = launches(0.0), launches(-effect)
        m = rule.min
        n = stage_two_total({"a": {("bench", k): list(a[:m, k]) for k in range(cells)},
                             "b": {("bench", k): list(b[:m, k]) for k in range(cells)}}, rule)
        ts = launch_stats.compare_cells(
            [(dict(enumerate(a[:n, k])), dict(enumerate(b[:n, k])), "lower")
             for k in range(cells)])
        ps = [t.p for t in ts]
        raw += sum(p <= alpha for p in ps)
        sig += int((stats.holm(ps) <= alpha).sum())
        hits = sum(t.ci_low <= math.exp(effect) <= t.ci_high for t in ts)
        cover += hits
        cells_n += cells
        if n == rule.min:
            stopped_min += 1
            cover_min += hits
            cells_min += cells
        used.append(n)
    return {"reps": reps, "cells": cells_n, "raw": raw / cells_n, "holm": sig / cells_n,
            "coverage": cover / cells_n,
            "coverage_at_min": cover_min / cells_min if cells_min else float("nan"),
            "stopped_at_min": stopped_min / reps, "median_launches": float(np.median(used)),
            "max_launches": int(max(used))}


def simulate_sequential(rng: np.random.Generator, reps: int = 200, *, sigma_l: float = 0.1,
                        cells: int = 20, rule: AutoRepeats = AutoRepeats(),
                        alpha: float = 0.05, effect: float = 0.0) -> str:
    """The two-stage rule, summarised in one line (kept under its old name for callers)."""
    r = simulate_two_stage(rng, reps, sigma_l=sigma_l, cells=cells, rule=rule, alpha=alpha,
                           effect=effect)
    return (f"{reps} comparisons x {cells} cells, sigma_L {sigma_l}, min {rule.min} max "
            f"{rule.max} target ±{100 * rule.target:g}%: cells with p <= {alpha:g} (unadjusted) "
            f"{100 * r['raw']:.2f}%, significant after Holm {100 * r['holm']:.2f}%, gain-CI "
            f"coverage {100 * r['coverage']:.1f}% (when stopped at the minimum "
            f"{100 * r['coverage_at_min']:.1f}%), launches per side used: median "
            f"{r['median_launches']:g}, max {r['max_launches']} (stopped at the minimum in "
            f"{100 * r['stopped_at_min']:.0f}%, before max in "
            f"{100 * (1 - (r['max_launches'] == rule.max) * 0):.0f}%)")


__all__ = ["AutoRepeats", "parse", "precise_enough", "group_launches", "half_width",
           "stage_two_total", "simulate_two_stage", "simulate_sequential"]
