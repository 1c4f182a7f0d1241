"""The within-launch budget: how long the core samples each cell in one launch, chosen from
the measured variance components so that the total time to a decision is smallest.

Model (one cell, one side; logs of the launch statistic, see stats/launch.py):

    var(one launch's statistic) = sigma_L^2 + sigma_w^2 / n_eff

sigma_L is the between-launch spread no amount of sampling inside a launch removes;
sigma_w^2 / n_eff the within-launch error of the statistic after n samples (n_eff: n over
the autocorrelation time, and the median's efficiency). We write the within part as
B / n with B = se_w^2 * n measured from the core's own CI of a launch (se_w = the CI's
half-width in logs / 1.96), which carries the autocorrelation and the statistic's
efficiency without modelling them. A launch costs c0 + sum over its cells of n_s * c1_s
seconds: c0 the launch's fixed part (mpirun, MPI_Init, teardown), c1_s a sample of cell s.

For k launches per side, cost k (c0 + n c1) and variance (sigma_L^2 + B/n) / k. At a fixed
variance of the mean, the cost (sigma_L^2 + B/n)(c0 + n c1) is smallest at

    n* = sqrt(B c0 / (sigma_L^2 c1))          (optimum_samples)

(two-stage sampling's classic allocation): samples are worth buying while a launch's fixed
cost is large next to them and the within-launch error is large next to sigma_L.

The core is told its budget as `target` (the CI half-width, in percent, at which it stops a
cell: se_w ~ target / 1.96, not before min_samples) and `max_time` (seconds per cell, which
ends a cell whatever its count). `plan` searches both knobs. What a decision needs is what
compare's test sees: its hierarchical model pools the between-launch variance over a
benchmark's sizes, so every cell of a benchmark gets the same standard error, from the mean
over the sizes of sigma_L^2 + B/n (pooled_launch_var). That mean rests on all the sizes'
launches (24 sizes x 2 launches: far steadier than any one size's 1 df), and it is what
the launches per side are planned on (stats.launch.launches_needed, noncentral t, at the
family's first Holm level for a difference, or the TOST approximation for equivalence
within a margin; the launches' own df, conservative next to the pooled model's).

The between-launch part rests on few launches (the launch effect a benchmark's sizes share
has the launches' df only), so the plan takes sigma_L^2 at its one-sided 80% upper
confidence bound over those df (between_margin: x4.5 at 2 launches per side, x1.4 at 10).

The campaign caps launches per side (its `repeats`, or the rule's maximum). When a pair
decides within the cap, the pair with the least launch time to the decision wins. When none
does, launch time is not what limits the decisions, precision per launch is: the pairs
within PRECISION_SLACK of the smallest pooled variance, the cheapest of them. Pure
arithmetic: estimates come from a store through `components_from_rows` (rows read by
store.report_queries.launch_cost_rows).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mpibench.stats import launch as launch_stats

Z95 = 1.959963984540054
CORE_MIN_SAMPLES = 20        # core/args.c: min_samples
CORE_DEFAULT_TARGET = 5.0    # core/args.c: --target (percent)
CORE_DEFAULT_MAX_TIME = 0.05  # core/args.c: --max-time (seconds per cell)
# the targets plan() tries (percent): the core's default and coarser, the core's range
TARGETS = (1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)
# the --max-time values (seconds per cell) plan() tries: the core's default and shorter; a
# short one ends a cell before min_samples, which is what a launch-dominated spread asks
MAX_TIMES = (0.05, 0.02, 0.01, 0.005, 0.002)
MIN_USEFUL_SAMPLES = 3     # below this a launch's statistic is not a median
SEARCH_MAX = 1000          # launches per side the planning searches up to
# beyond the cap on launches, launches within this factor of the most precise count as
# equally precise, and the cheapest of them wins
PRECISION_SLACK = 1.1
# the between-launch variance a plan counts on: its one-sided upper confidence bound at
# this level over the launches' df (a planning margin for a spread read off 2-3 launches)
PLAN_CONFIDENCE = 0.8


@dataclass(frozen=True)
class CellCost:
    """One cell's variance components and costs (one side, logs).

    sigma_l2: between-launch variance of the log launch statistic, the within-launch part
    removed; within_b: se_w^2 x n (the within-launch variance of the statistic is
    within_b / n); sample_s: seconds per sample."""
    key: object
    sigma_l2: float
    within_b: float
    sample_s: float

    def launch_var(self, n: float) -> float:
        return self.sigma_l2 + self.within_b / max(n, 1.0)


@dataclass(frozen=True)
class Components:
    """What a launch of one side costs and how noisy it is: its cells, the fixed seconds per
    launch (c0), and how many launches the estimate rests on."""
    cells: tuple[CellCost, ...]
    fixed_s: float
    launches: int = 0


def optimum_samples(sigma_l2: float, within_b: float, fixed_s: float, sample_s: float
                    ) -> float:
    """n* = sqrt(B c0 / (sigma_L^2 c1)): the samples per launch that minimise the cost of a
    given precision of the mean over launches (continuous; inf when sigma_L is 0, i.e.
    one long launch is best, and 0 when sampling is free of within-launch error)."""
    if within_b <= 0 or fixed_s <= 0:
        return 0.0
    if sigma_l2 <= 0 or sample_s <= 0:
        return math.inf
    return math.sqrt(within_b * fixed_s / (sigma_l2 * sample_s))


def launches_for(sd_log: float, effect: float, *, alpha: float = 0.05,
                 power: float = launch_stats.POWER, family: int = 1,
                 equivalence: bool = False, max_n: int = 1000) -> int | None:
    """Launches per side for a decision on one cell at this per-launch sd (logs).

    A difference of `effect` (0.05 = 5%): the two-sided test at alpha / family (Holm's
    first step over `family` rows, the most a cell can be asked for) with `power`
    (stats.launch.launches_needed, noncentral t). Equivalence within ±effect (TOST at
    alpha, true gain 1): each one-sided test at alpha must reject; the two-sided test at
    2 alpha has the same critical value, and asking each side for power (1 + power) / 2
    makes both succeed together with at least `power` (Bonferroni on the two misses)."""
    try:
        if equivalence:
            return launch_stats.launches_needed(sd_log, effect, alpha=2 * alpha,
                                                power=(1 + power) / 2, max_n=max_n)
        return launch_stats.launches_needed(sd_log, effect, alpha=alpha / max(family, 1),
                                            power=power, max_n=max_n)
    except OverflowError:    # at 2-3 launches a huge sd has no finite detectable effect
        return None


@dataclass(frozen=True)
class Choice:
    target_pct: float            # the core's --target for the launches
    launches: int | None         # launches per side for every cell (None: beyond SEARCH_MAX)
    launch_s: float              # predicted seconds of one launch (the mean of the sides)
    total_s: float               # launches x launch_s x sides
    samples: dict = field(default_factory=dict, compare=False)   # cell key -> n
    max_time: float = CORE_DEFAULT_MAX_TIME    # the core's --max-time (seconds per cell)
    launch_var: float = math.inf  # the worst benchmark's pooled variance of one launch (logs)

    def options(self) -> dict[str, float]:
        """The core options of this choice (campaign `options` names)."""
        return {"target": self.target_pct, "max_time": self.max_time}


@dataclass(frozen=True)
class Plan:
    best: Choice
    tried: tuple[Choice, ...]
    effect: float
    equivalence: bool
    max_launches: int = SEARCH_MAX    # the cap on launches per side the plan respects
    confidence: float | None = None   # the upper bound the between-launch variance is at

    @property
    def within_cap(self) -> bool:
        return self.best.launches is not None and self.best.launches <= self.max_launches

    def describe(self) -> str:
        b = self.best
        what = (f"equivalence within ±{100 * self.effect:g}%" if self.equivalence
                else f"a {100 * self.effect:g}% difference")
        knobs = f"budget: --target {b.target_pct:g}% --max-time {b.max_time:g} s per cell"
        sd = f"pooled launch sd {math.sqrt(b.launch_var):.3f}" + (
            f", its {100 * self.confidence:g}% upper bound" if self.confidence else "")
        if self.within_cap:
            return (f"{knobs}, {b.launches} launches per side for {what} ({sd}), "
                    f"{b.launch_s:.2f} s per launch, {b.total_s:.1f} s of launches in all")
        need = (f"{b.launches} launches per side ({b.total_s:.1f} s of launches)"
                if b.launches is not None else f"more than {SEARCH_MAX} launches per side")
        cap = (f", more than the {self.max_launches} planned"
               if self.max_launches < SEARCH_MAX else "")
        return (f"{knobs}, {b.launch_s:.2f} s per launch ({sd}): {what} needs {need}{cap}, "
                f"so the launches are the most precise ones (within "
                f"{100 * (PRECISION_SLACK - 1):g}%) at the least time")


def samples_at(cell: CellCost, target_pct: float, min_samples: int = CORE_MIN_SAMPLES,
               max_time: float = CORE_DEFAULT_MAX_TIME) -> float:
    """Samples the core takes for this cell: it stops once the CI half-width is within
    --target (not before min_samples) or when --max-time per cell is spent, whichever
    comes first (core/stop.c); never fewer than MIN_USEFUL_SAMPLES."""
    se = math.log1p(target_pct / 100.0) / Z95
    need = max(float(min_samples), cell.within_b / (se * se) if cell.within_b > 0 else 0.0)
    if cell.sample_s > 0:
        need = min(need, max_time / cell.sample_s)
    return max(float(MIN_USEFUL_SAMPLES), need)


def pool_of(key: object) -> object:
    """The cells compare pools (one benchmark's sizes): a (benchmark, size) key's
    benchmark, else the key itself."""
    return key[0] if isinstance(key, tuple) and len(key) > 1 else key


def pooled_launch_var(sides: Sequence[Components], keys: Iterable[object], target_pct: float,
                      min_samples: int = CORE_MIN_SAMPLES,
                      max_time: float = CORE_DEFAULT_MAX_TIME) -> dict[object, float]:
    """{pool: the variance of one launch's log statistic that compare's test gives every
    cell of the pool}: compare's hierarchical model (stats.launch.spread) pools the
    between-launch variance over a benchmark's sizes, so each cell's standard error is
    the mean over the sizes of sigma_L^2 + B/n (ms_launch/S + ms_cell (S-1)/S), averaged
    here over the sides as well. A size with a large launch spread costs every size of
    its benchmark; one with a small one does not buy them anything on its own."""
    keys = set(keys)
    acc: dict[object, list[float]] = defaultdict(list)
    for s in sides:
        for c in s.cells:
            if c.key in keys:
                acc[pool_of(c.key)].append(
                    c.launch_var(samples_at(c, target_pct, min_samples, max_time)))
    return {g: sum(v) / len(v) for g, v in acc.items()}


def between_margin(sides: Sequence[Components], confidence: float | None = PLAN_CONFIDENCE
                   ) -> float:
    """The factor on sigma_L^2 the plan uses: df / chi2_(1-confidence)(df), the one-sided
    upper confidence bound of a variance with df = the sides' launches less one each (the
    launch effect a benchmark's sizes share has only those df, however many sizes). 1 when
    confidence is None or the launch counts are unknown. At 2 launches per side (2 df) and
    0.8: 4.48; at 10 per side (18 df): 1.40."""
    df = sum(max(s.launches - 1, 0) for s in sides)
    if confidence is None or df <= 0:
        return 1.0
    return df / float(launch_stats._chi2_ppf(1.0 - confidence, df))


def _widened(side: Components, factor: float) -> Components:
    if factor == 1.0:
        return side
    return Components(tuple(CellCost(c.key, c.sigma_l2 * factor, c.within_b, c.sample_s)
                            for c in side.cells), side.fixed_s, side.launches)


def plan(sides: Sequence[Components], effect: float, *, alpha: float = 0.05,
         power: float = launch_stats.POWER, family: int | None = None,
         equivalence: bool = False, targets: Iterable[float] = TARGETS,
         min_samples: int = CORE_MIN_SAMPLES, max_times: Iterable[float] = MAX_TIMES,
         max_launches: int = SEARCH_MAX,
         confidence: float | None = PLAN_CONFIDENCE) -> Plan | None:
    """The core's --target and --max-time for the later launches of a comparison.

    The between-launch variances are taken at their upper `confidence` bound
    (between_margin: a spread estimated from 2 launches per side is often far too small,
    e.g. when the machine's load changes between launches); None plans on the estimates.

    sides: the components of each side (the cells present on all sides are planned).
    At each (target, max-time) pair, a launch of a side costs fixed_s + the sum of its
    cells' samples x sample_s, and each benchmark's cells share the pooled launch variance
    compare's test gives them (pooled_launch_var); the launches per side are
    launches_for(that sd) for the worst benchmark (family: Holm rows for a difference,
    default the cells). Then:

    - when some pair decides within max_launches (the campaign's cap on launches per
      side), the pair with the least launch time to the decision (launches x seconds);
    - else, the launches cannot decide everything in the cap, so precision per launch
      comes first: among the pairs whose pooled variance is within PRECISION_SLACK of the
      smallest, the one with the cheapest launch (its launches say what a decision would
      need beyond the cap). Without a cap that binds this is the old "cheapest precision"
      only when sampling cannot reduce the spread (sigma_L dominates: every pair is
      within the slack, and the cheapest wins).

    None when no cell is common."""
    if not sides:
        return None
    common = set.intersection(*({c.key for c in s.cells} for s in sides))
    if not common:
        return None
    factor = between_margin(sides, confidence)
    sides = [_widened(s, factor) for s in sides]
    fam = family if family is not None else len(common)
    tried: list[Choice] = []
    for t, max_time in ((t, m) for m in max_times for t in targets):
        cost, samples = 0.0, {}
        for s in sides:
            cost += s.fixed_s
            for c in s.cells:
                if c.key in common:
                    n = samples_at(c, t, min_samples, max_time)
                    cost += n * c.sample_s
                    samples[c.key] = max(samples.get(c.key, 0), round(n))
        launch_s = cost / len(sides)
        worst = max(pooled_launch_var(sides, common, t, min_samples, max_time).values())
        k = launches_for(math.sqrt(worst), effect, alpha=alpha, power=power, family=fam,
                         equivalence=equivalence, max_n=SEARCH_MAX)
        if k is not None and k > SEARCH_MAX:
            k = None
        tried.append(Choice(float(t), k, launch_s, k * cost if k else math.inf, samples,
                            max_time, worst))
    feasible = [c for c in tried if c.launches is not None and c.launches <= max_launches]
    if feasible:
        best = min(feasible, key=lambda c: (c.total_s, -c.target_pct, -c.max_time))
    else:
        floor = min(c.launch_var for c in tried)
        near = [c for c in tried if c.launch_var <= PRECISION_SLACK * floor]
        best = min(near, key=lambda c: (c.launch_s, -c.target_pct, -c.max_time))
    return Plan(best, tuple(tried), effect, equivalence, max_launches,
                confidence if factor != 1.0 else None)


def components_from_rows(rows: Iterable[Mapping], min_sigma_l2: float = 0.0
                         ) -> dict[str, Components]:
    """{variant: Components} from a store's result rows of finished core launches (dicts
    with run_id, variant, benchmark, size, n, median, ci_low, ci_high, cell_s = the
    core's seconds on the cell, launch_s = the launch's elapsed seconds).

    Per cell and variant: sigma_L^2 = the variance of the log medians over launches less
    the mean within-launch variance (floored at min_sigma_l2: a spread that the within
    part explains entirely is not evidence of no launch effect); B = the median over
    launches of se_w^2 x n; c1 = the median of cell_s / n. c0 per launch = launch_s less
    the sum of its cells' seconds, the median over launches. Cells with fewer than two
    launches or without a CI are left out."""
    per: dict[str, dict[tuple, list[Mapping]]] = defaultdict(lambda: defaultdict(list))
    launch_total: dict[str, float] = {}
    launch_cells: dict[str, float] = defaultdict(float)
    launch_variant: dict[str, str] = {}
    for r in rows:
        rid = r["run_id"]
        launch_variant[rid] = r["variant"]
        if r.get("launch_s") is not None:
            launch_total[rid] = float(r["launch_s"])
        if r.get("cell_s") is not None:
            launch_cells[rid] += float(r["cell_s"])
        per[r["variant"]][(r["benchmark"], r["size"])].append(r)
    out: dict[str, Components] = {}
    for variant, cells in per.items():
        costs = []
        for key, rs in sorted(cells.items(), key=lambda kv: str(kv[0])):
            logs, within, se2, per_sample = [], [], [], []
            for r in rs:
                med, lo, hi, n = r.get("median"), r.get("ci_low"), r.get("ci_high"), r.get("n")
                if not med or med <= 0 or not n:
                    continue
                logs.append(math.log(med))
                if lo and hi and lo > 0 and hi > lo:
                    se = (math.log(hi) - math.log(lo)) / (2 * Z95)
                    within.append(se * se * n)
                    se2.append(se * se)
                if r.get("cell_s"):
                    per_sample.append(float(r["cell_s"]) / n)
            if len(logs) < 2 or not within:
                continue
            mean = sum(logs) / len(logs)
            var = sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)
            b = _median(within)
            mean_w = sum(se2) / len(se2)
            costs.append(CellCost(key, max(var - mean_w, min_sigma_l2), b,
                                  _median(per_sample) if per_sample else 0.0))
        fixed = [launch_total[rid] - launch_cells.get(rid, 0.0)
                 for rid, v in launch_variant.items() if v == variant and rid in launch_total]
        out[variant] = Components(tuple(costs), max(_median(fixed), 0.0) if fixed else 0.0,
                                  len({r["run_id"] for rs in cells.values() for r in rs}))
    return out


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
