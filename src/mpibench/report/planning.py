"""Planning: the launches per side needed to detect a given effect, from the spread
between launches seen in each cell.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from mpibench.errors import UsageError
from mpibench.report.data import (
    bench_sort_key,
)
from mpibench.report.model import Comparison
from mpibench.report.render import Table
from mpibench.stats import launch as launch_stats
from mpibench.units import percent


def parse_effect(text: str | float) -> float:
    """'5%', '5', '0.05' -> 0.05 (a relative difference, > 0 and < 10 = 1000%)."""
    v = percent(text)                   # the one percentage grammar (units.py)
    if v is None:
        v = float("nan")
    if not 0.0 < v < 10.0:
        raise UsageError(f"--detect {text!r}: expected a relative difference such as 5% or "
                         "0.05")
    return v


def _needed(ds: list, effect: float, alpha: float, m: int,
            power: float) -> tuple[int | None, int | None, int | None]:
    """(median cell, noisiest cell, noisiest cell at alpha / m) launches per side, each
    cell planned for the test it ran (stats.launch.launches_needed_for, the one planning
    rule: rows paired by round plan rounds of pairs from their test's own components; an
    unbalanced unpaired test, 2-5 launches against more, never fewer per side than its
    larger side's, as the cells' notes and the verdict say). The median cell is the
    lower middle one of the cells' plans; the noisiest is the cell with the largest sd."""
    big = 10 ** 9

    def need(d, a: float) -> int:
        n = launch_stats.launches_needed_for(d.test, effect, a, power)
        return big if n is None else n
    ns = sorted(need(d, alpha) for d in ds)
    worst_d = max(ds, key=lambda d: d.sd_log)
    out = (ns[(len(ns) - 1) // 2], ns[-1], need(worst_d, alpha / m))
    return tuple(None if n >= big else n for n in out)


def plan_table(cmp: Comparison, effect: float, power: float = launch_stats.POWER) -> Table:
    """Launches per side needed to detect a gain of 1 + effect, from the between-launch
    spread seen in each cell (interleaved launches; the launch-level t the comparison ran).

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
                      "planned for the test each cell ran (t on log launch statistics, its df "
                      "and critical values; an unbalanced unpaired cell, 2-"
                      f"{launch_stats.UNBALANCED_MAX_SMALL} launches against "
                      "more, never below its larger side's count per side); 'all tests' "
                      "plans at alpha/m so "
                      "that a real difference of this size survives Holm in every cell; "
                      "rows paired by round (an interleaved campaign) plan rounds of pairs "
                      "from their paired test's own variance components, the round part "
                      "at its median-unbiased value (with 3-5 rounds its estimate is mostly "
                      "below the truth)")
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
        n_med, n_worst, n_all = _needed(ds, effect, alpha, m, power)
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
