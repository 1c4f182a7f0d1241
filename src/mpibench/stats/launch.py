"""Launch-level inference: the launch (one mpirun/srun) is the unit of replication.

Model (DESIGN.md "Units and statistics"): the log of a launch statistic (the median of
its samples, its mean, or an application's figure of merit) is

    log x = mu_variant,cell + u_launch + e

where u_launch is the launch's own offset (placement, clocks, page colouring: 10-100% on one
machine) and e the within-launch error of the statistic, small next to u. Samples inside a
launch are many and correlated and say nothing about u, so:

- a set's estimate is the geometric mean of its launch statistics, every launch weighted
  equally, with a 95% CI from Student's t on their logs (the spread between launches);
- a comparison of two sets is Welch's t test on the logs of their launch statistics; the
  gain is a ratio of geometric means, with the Welch CI exponentiated;
- a launch is tested against a launch, so one launch per side decides nothing: with fewer
  than MIN_LAUNCHES launches on a side the answer is "cannot tell", and the planning
  functions say how many launches the observed between-launch spread calls for.

Pure numpy (scipy only for t quantiles and the t distribution, imported lazily).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

# A side needs two launches for any spread to be seen; below that nothing is tested.
MIN_LAUNCHES = 2
# The power the planning numbers are computed for.
POWER = 0.8


def _t():
    from scipy import stats as sps  # ~1 s import: only when a test runs
    return sps.t


def _logs(values: Iterable[float | None]) -> np.ndarray:
    v = np.array([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return np.log(v)


class Estimate(NamedTuple):
    """A set's estimate of one cell from its launch statistics."""
    value: float | None          # geometric mean of the launch statistics
    ci_low: float | None         # 95% CI from the between-launch spread (None below 2)
    ci_high: float | None
    launches: int
    sd_log: float | None         # between-launch standard deviation of the logs

    @property
    def ci_pct(self) -> float | None:
        if self.value is None or self.ci_low is None or self.ci_high is None:
            return None
        return 100.0 * max(self.value - self.ci_low, self.ci_high - self.value) / self.value


def estimate(values: Iterable[float | None], level: float = 0.95) -> Estimate:
    """Geometric mean of the launch statistics with a t CI on their logs."""
    values = list(values)
    y = _logs(values)
    n = int(y.size)
    if n == 0:
        return Estimate(None, None, None, 0, None)
    m = float(y.mean())
    if n < 2:
        # the launch's own value, not exp(log(x)), which can differ in the last bit
        only = next(float(x) for x in values if x is not None and math.isfinite(x) and x > 0)
        return Estimate(only, None, None, n, None)
    sd = float(y.std(ddof=1))
    h = float(_t().ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(math.exp(m), math.exp(m - h), math.exp(m + h), n, sd)


class LaunchTest(NamedTuple):
    """Candidate vs baseline on launch statistics. gain > 1 = candidate better."""
    gain: float | None
    ci_low: float | None          # 95% CI of the gain (Welch)
    ci_high: float | None
    p: float | None               # two-sided Welch t on the logs; None when not tested
    n_base: int
    n_cand: int
    tested: bool
    reason: str = ""              # why not tested
    sd_log: float | None = None   # pooled between-launch sd of the logs (planning)
    detectable: float | None = None   # smallest gain-1 detectable at these counts (80%)
    df: float | None = None


def _welch(yb: np.ndarray, yc: np.ndarray) -> tuple[float, float, float]:
    """(mean difference yc - yb, its standard error, Welch-Satterthwaite df)."""
    nb, nc = yb.size, yc.size
    vb, vc = float(yb.var(ddof=1)), float(yc.var(ddof=1))
    sb, sc = vb / nb, vc / nc
    se2 = sb + sc
    diff = float(yc.mean() - yb.mean())
    if se2 <= 0:
        return diff, 0.0, float(nb + nc - 2)
    df = se2 ** 2 / ((sb ** 2 / (nb - 1) if sb else 0.0) + (sc ** 2 / (nc - 1) if sc else 0.0))
    return diff, math.sqrt(se2), df


def pooled_sd(*sides: np.ndarray) -> float | None:
    """Pooled between-launch sd of the logs over the sides with >= 2 launches."""
    ss, df = 0.0, 0
    for y in sides:
        if y.size >= 2:
            ss += float(((y - y.mean()) ** 2).sum())
            df += y.size - 1
    return math.sqrt(ss / df) if df else None


def detectable_effect(sd_log: float | None, n_base: int, n_cand: int, alpha: float = 0.05,
                      power: float = POWER) -> float | None:
    """Smallest true gain - 1 (e.g. 0.05 = 5%) that a two-sided t test on the logs detects
    with probability `power` at these launch counts, for this between-launch sd."""
    if sd_log is None or n_base < MIN_LAUNCHES or n_cand < MIN_LAUNCHES:
        return None
    df = n_base + n_cand - 2
    t = _t()
    k = float(t.ppf(1 - alpha / 2, df) + t.ppf(power, df))
    return math.expm1(k * sd_log * math.sqrt(1 / n_base + 1 / n_cand))


def launches_needed(sd_log: float | None, effect: float, alpha: float = 0.05,
                    power: float = POWER, max_n: int = 10_000) -> int | None:
    """Launches per side (equal, interleaved) for a two-sided t test on the logs to detect a
    gain of 1 + effect with probability `power`. None when the spread is unknown (fewer
    than two launches on every side) or more than max_n would be needed."""
    if sd_log is None or not effect or effect <= -1:
        return None
    target = abs(math.log1p(effect))
    if sd_log == 0:
        return MIN_LAUNCHES
    n = MIN_LAUNCHES
    while n <= max_n:
        d = detectable_effect(sd_log, n, n, alpha, power)
        if d is not None and math.log1p(d) <= target:
            return n
        n = n + 1 if n < 64 else int(n * 1.1)
    return None


def compare(base: Iterable[float | None], cand: Iterable[float | None], better: str,
            alpha: float = 0.05, level: float = 0.95) -> LaunchTest:
    """Welch t on the logs of the launch statistics of two sets of one cell.

    better: 'lower' (times: gain = baseline / candidate) or 'higher' (rates: gain =
    candidate / baseline). Fewer than MIN_LAUNCHES on a side: not tested (the gain is the
    ratio of the estimates, without CI)."""
    yb, yc = _logs(base), _logs(cand)
    nb, nc = int(yb.size), int(yc.size)
    sign = -1.0 if better == "lower" else 1.0
    if nb == 0 or nc == 0:
        return LaunchTest(None, None, None, None, nb, nc, False, "no launch statistic")
    point = math.exp(sign * float(yc.mean() - yb.mean()))
    sd = pooled_sd(yb, yc)
    if nb < MIN_LAUNCHES or nc < MIN_LAUNCHES:
        return LaunchTest(point, None, None, None, nb, nc, False,
                          f"too few launches ({nb}+{nc}; a test needs >= {MIN_LAUNCHES} per "
                          "side)", sd)
    diff, se, df = _welch(yb, yc)
    mde = detectable_effect(sd, nb, nc, alpha)
    if se == 0:
        # every launch of both sides gave the same value: no spread to test against
        p = 1.0 if diff == 0 else None
        return LaunchTest(point, point, point, p, nb, nc, p is not None,
                          "" if p is not None else "no spread between launches", sd, mde, df)
    t = _t()
    tstat = diff / se
    p = float(min(1.0, 2.0 * t.sf(abs(tstat), df)))
    h = float(t.ppf(0.5 + level / 2, df)) * se
    lo, hi = sorted((math.exp(sign * (diff - h)), math.exp(sign * (diff + h))))
    return LaunchTest(point, lo, hi, p, nb, nc, True, "", sd, mde, df)


def aggregate(rows: Sequence[tuple[Mapping[str, float], Mapping[str, float], str]],
              alpha: float = 0.05, level: float = 0.95) -> LaunchTest:
    """Gain over many cells (a benchmark's sizes, or a whole comparison), aggregated per
    launch first.

    rows: per cell, (baseline {launch id: statistic}, candidate {launch id: statistic},
    better). One core launch measures every size, so its offset is shared by all its cells:
    cells are not independent replicates, launches are. Each launch's value is the mean,
    over the cells it has, of its oriented log statistic (higher = better) minus the cell's
    centre (the mean of the two sides' means); the sides' launch values are then compared
    with compare(). When every launch has every cell, the gain equals the geometric mean
    of the per-cell gains."""
    acc: dict[tuple[int, str], list[float]] = {}
    for base, cand, better in rows:
        sign = -1.0 if better == "lower" else 1.0
        ys = [{k: sign * math.log(v) for k, v in side.items()
               if v is not None and math.isfinite(v) and v > 0} for side in (base, cand)]
        if not ys[0] or not ys[1]:
            continue
        centre = 0.5 * (float(np.mean(list(ys[0].values())))
                        + float(np.mean(list(ys[1].values()))))
        for s, y in enumerate(ys):
            for k, v in y.items():
                acc.setdefault((s, k), []).append(v - centre)
    per_side = [[math.exp(float(np.mean(v))) for (s, _k), v in acc.items() if s == side]
                for side in (0, 1)]
    # the values are already oriented (higher = better): compare as a rate
    return compare(per_side[0], per_side[1], "higher", alpha, level)


def fmt_pct(effect: float | None) -> str:
    """0.052 -> '5.2%' (two significant digits), for 'detectable' and planning lines."""
    if effect is None or not math.isfinite(effect):
        return "?"
    pct = 100.0 * effect
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


__all__ = ["MIN_LAUNCHES", "POWER", "Estimate", "estimate", "LaunchTest", "compare",
           "aggregate", "detectable_effect", "launches_needed", "pooled_sd", "fmt_pct"]
