"""`repeats = "auto"`: add interleaved launches until every gain is known to a target width.

    [campaign]
    repeats = "auto"                                  # min 3, max 10, target 5%
    repeats = { min = 3, max = 12, target = "3%" }    # or explicitly

The plan holds `max` launches per variant, interleaved as usual (cell ids do not depend on
the rule). The first `min` rounds always run; after each further round the rule looks at
every group with two or more variants: when the 95% CI of every gain (each candidate against
the group's first variant, launch-level Welch t, stats.launch) is within +-target of the gain,
the group's remaining rounds are skipped.

Why this keeps the false-positive rate at alpha: the rule stops on the *width* of the CI,
never on its position or on a p-value. For normal log launch statistics the sample sd (which
sets the width) is independent of the sample means (which set gain and p), so the stopping
time carries no information about the sign or size of the difference; `simulate_sequential`
checks it by simulation (bench/bench_inference.py prints it). Stopping on significance
instead ("run until p < 0.05") would not.
"""

from __future__ import annotations

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


def simulate_sequential(rng: np.random.Generator, reps: int = 200, *, sigma_l: float = 0.1,
                        cells: int = 20, rule: AutoRepeats = AutoRepeats(),
                        alpha: float = 0.05, effect: float = 0.0) -> str:
    """A/A (or effect) comparisons under the sequential rule, on launch statistics drawn
    from the stats.simulate model (launch offset shared by all cells plus a cell-specific
    half): how often a cell is significant after Holm, how often any is, and how many
    launches were used."""
    from mpibench import stats

    sig = fam = raw = 0
    used = []
    for _ in range(reps):
        def launches(shift: float) -> np.ndarray:
            u = rng.normal(0, sigma_l, (rule.max, 1))
            return np.exp(shift + u + rng.normal(0, sigma_l / 2, (rule.max, cells)))
        a, b = launches(0.0), launches(-effect)
        n = rule.min
        while n < rule.max and not precise_enough(
                {"a": {k: list(a[:n, k]) for k in range(cells)},
                 "b": {k: list(b[:n, k]) for k in range(cells)}}, rule.target):
            n += 1
        ps = [launch_stats.compare(a[:n, k], b[:n, k], "lower").p for k in range(cells)]
        raw += sum(p <= alpha for p in ps)
        adj = stats.holm(ps)
        s = int((adj <= alpha).sum())
        sig += s
        fam += s > 0
        used.append(n)
    return (f"{reps} comparisons x {cells} cells, sigma_L {sigma_l}, min {rule.min} max "
            f"{rule.max} target ±{100 * rule.target:g}%: cells with p <= {alpha:g} (unadjusted) "
            f"{100 * raw / (reps * cells):.2f}%, significant after Holm "
            f"{100 * sig / (reps * cells):.2f}%, comparisons with any {100 * fam / reps:.1f}%, "
            f"launches per side used: median {float(np.median(used)):g}, "
            f"max {max(used)} (stopped before max in "
            f"{100 * float(np.mean(np.array(used) < rule.max)):.0f}%)")


__all__ = ["AutoRepeats", "parse", "precise_enough", "group_launches", "half_width",
           "simulate_sequential"]
