"""Rules mpibench no longer uses, kept once for the comparisons that show why they were
replaced: bench/bench_auto_paired.py's 'sums' row and the fail-first control in
tests/campaign/test_auto_repeats.py (both import it from here: tests/ is on their path)."""

from __future__ import annotations

import math
from typing import Any

from mpibench.campaign.auto_repeats import AutoRepeats, _bench_of, pair_sums
from mpibench.stats import launch as launch_stats


def sums_total(per_variant: dict[str, dict[tuple, Any]], rule: AutoRepeats,
               rounds: dict | None = None) -> int:
    """The rule before repeats = "auto" planned on the stage-2 spread: the smallest n
    at which every candidate cell's 95% gain CI would be within ±target, clamped to [min,
    max], planned on the spread of the stage-1 pair SUMS (pair_sums), pooled over a
    benchmark's sizes (stats.launch.spread) and scaled to n (standard error x sqrt(n1 /
    n), the stage-1 critical value kept); the report's ordinary CI. The sum and the
    difference of two launches with the same spread are independent (normal), so the stop
    does not select the CI's spread; with unequal spreads they are correlated (0.8 at a
    candidate spread 3x the baseline's) and the CI at the minimum covers 88-93%
    (docs/statistics.md)."""
    names = list(per_variant)
    if len(names) < 2:
        return rule.min
    base = per_variant[names[0]]
    goal = math.log1p(rule.target)
    need = rule.min
    for cand in names[1:]:
        blocks: dict[tuple, dict[tuple, dict]] = {}
        for key, vals in per_variant[cand].items():
            if key in base:
                blocks.setdefault(_bench_of(key), {})[key] = pair_sums(base[key], vals, rounds)
        for block in blocks.values():
            n1 = min(len(sums) for sums in block.values())
            sp = launch_stats.spread(block) if n1 >= 2 else None
            if sp is None:
                return rule.max
            comps = sp.components(sp.launches)
            h1 = launch_stats.cochran_cox_crit(comps, 0.025) * math.sqrt(
                sum(v for v, _ in comps))
            if h1 > goal:
                need = max(need, math.ceil(sp.launches * (h1 / goal) ** 2))
            if need >= rule.max:
                return rule.max
    return max(rule.min, min(rule.max, need))


__all__ = ["sums_total"]
