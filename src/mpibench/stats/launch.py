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

import functools
import math
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import NamedTuple

import numpy as np

from mpibench.stats import moderate as moderate_mod
from mpibench.units import percent

# A side needs two launches for any spread to be seen; below that nothing is tested.
MIN_LAUNCHES = 2
# Round pairing (paired_test) needs this many complete pairs in every cell of a block:
# the round effect the sizes share is then estimated with >= 2 df (Cochran-Cox critical
# values below 3 df), and a 2 vs 7 design, which would leave 5 of its 9 launches unused,
# keeps the unpaired model.
MIN_PAIRS = 3
# A benchmark's sizes get their own (moderated) cell parts from this many cells on
# (Spread.cell_parts); below it, or where they look alike, the pooled part.
MIN_MODERATE_CELLS = 3
# Below this many cells the Bartlett gate has almost no power (one size 6x noisier: it
# rejects in 0% of benchmarks at 3 sizes, 2% at 4), so it is skipped: every cell keeps
# its own part, unmoderated, whatever the launches (bench/bench_inference.py
# --only-hetero chose both).
FEW_CELLS = 6
# From FEW_CELLS cells on, a comparison whose every side has at most this many launches
# (1-2 df per size) is not gated either: every cell keeps its own part, as below
# FEW_CELLS. Bartlett's test on 1-2 df per size mostly stayed shut there and a size 6x
# noisier took the pooled part: 10-24% false positives at 2+2 and 3+3, 6-22 sizes
# (gated_spreads; docs/statistics.md "Sizes that are not equally noisy").
THIN_LAUNCHES = 3
# An unpaired comparison whose smaller side has at most this many launches, fewer than the
# other's, cannot tell a size noisier only on its smaller side from its quiet neighbours
# (the outlying-size flag adds both sides' sums, mostly the larger side's df): A/A false
# positives at such a size up to UNBALANCED_FALSE_POSITIVES at 3-4 vs 7 launches x 10
# sizes and UNBALANCED_FALSE_POSITIVES_5V7 at 5 vs 7, BALANCED_FALSE_POSITIVES at 7 + 7.
# No test rule fixed it without the alike sizes' power: every size its own part at
# 3-4 vs 7 (stop 35) or the smaller side's own sums checked (stops 31, 34) -- docs/
# statistics.md "Stop 35: unbalanced launches are planned to balance". So the planner
# plans such a comparison balanced (launches_needed_for: never fewer per side than the
# larger side's), and compare and check warn (report.compare_view.unbalanced_launches).
# Since stop 42 the smaller side's mix (SMALLER_MIX) keeps 3-5 launches at the 6% target
# at a cost in power, since stop 43 2 launches too (SMALLER_MIX_MIN); the warning and the
# floor stay (balance buys that power).
# 5 (not 4) since review R15: 5 vs 7 is above the 6% target too (below). 6 vs 7 (stop 36,
# 400 A/A a row, seeds 21 and 22): 5.5-6.8%, as 7 + 7's 4.8-7.5% on the same seeds (the
# imbalance adds nothing measurable), so not covered. Stop 36's five more rules for the
# smaller side's part: docs/statistics.md "Stop 36: the smaller side's own spread".
UNBALANCED_MAX_SMALL = 5
# The worst A/A false-positive rate per cell measured at such a size (2-3x noisier on the
# smaller side only, 10 sizes, launch effect sd 0.03) at 3-5 vs 7 launches under the
# smaller side's mix (SMALLER_MIX, stop 42): 4 v 7 3x 5.9% (`bench/bench_outlier_candidates
# .py --design 4v7 --rule cap3:0.1:0.6 --reps 1000`, seeds 21 and 22 pooled; 3 v 7 4.2 /
# 5.2%, 5 v 7 4.9 / 5.65% over seeds 21-24; before it 7-13%). Compare's and check's
# warning prints it (unbalanced_false_positives), README cites it.
UNBALANCED_FALSE_POSITIVES = 0.059
# At 2 vs 7 under the mix (SMALLER_MIX_MIN 2, stop 43): the size 3x noisier on the
# 2-launch side only, 5.4 / 4.3% (2x: 3.3 / 1.7%) at seeds 21 / 22, 4.85% pooled
# (`bench/bench_outlier_candidates.py --design 2v7 --seed 21 --reps 1000 --rule before`,
# its 'today' line; 'before', the mix from 3 launches: 9.7 / 9.8%, stop 34's 10.5%).
UNBALANCED_FALSE_POSITIVES_2V7 = 0.0485
# The same size with both sides at 7 launches (the helper above at seed 35, 400).
BALANCED_FALSE_POSITIVES = 0.050
# The power the planning numbers are computed for.
POWER = 0.8


def _t():
    from scipy import stats as sps  # ~1 s import: only for the edge cases below
    return sps.t


@functools.cache
def _special():
    from scipy import special  # ~0.4 s import, once
    return special


def _mean(a: np.ndarray) -> np.float64:
    """a.mean() of a non-empty float64 array or a small-integer one (counts), the same
    value bit for bit (numpy's mean is the same sum over the count; such an integer sum is
    exact in float64 too; not above 2**53, nor float16/32) at half its call cost: the
    comparison takes thousands of means of a few values each."""
    return a.sum() / a.size


# scipy.stats' t, chi2 and norm evaluate exactly these scipy.special functions inside their
# ordinary domain (0 < q < 1, finite x, df > 0); scipy.special imports in ~0.4 s against
# scipy.stats' ~1 s, which is most of a fresh `mpibench compare`. The edges (and anything
# unexpected) still go through scipy.stats, so every value is the same bit for bit. Each
# takes numpy arrays (q or x and df broadcast together: several df in one call) and checks
# its domain once per call, so a caller never repeats the fast path itself.
def _positive(df) -> np.ndarray | None:
    """df as an array when every element is > 0 (the fast paths' domain), else None."""
    d = np.asarray(df, dtype=float)
    return d if (d > 0).all() else None        # the method: np.all's dispatch costs more


def _unit_open(q) -> np.ndarray | None:
    """q as an array when every element is in (0, 1), else None."""
    a = np.asarray(q, dtype=float)
    return a if ((a > 0) & (a < 1)).all() else None


def _finite(x) -> np.ndarray | None:
    a = np.asarray(x, dtype=float)
    return a if np.isfinite(a).all() else None


def _t_isf(q, df):
    d, qa = _positive(df), _unit_open(q)
    if d is not None and qa is not None:
        return -_special().stdtrit(d, qa)
    return _t().isf(q, df)


def _t_ppf(q, df):
    d, qa = _positive(df), _unit_open(q)
    if d is not None and qa is not None:
        return _special().stdtrit(d, qa)
    return _t().ppf(q, df)


def _t_sf(x, df):
    d, xa = _positive(df), _finite(x)
    if d is not None and xa is not None:
        return _special().stdtr(d, -xa)
    return _t().sf(x, df)


def _chi2_ppf(q, df):
    d, qa = _positive(df), _unit_open(q)
    if d is not None and qa is not None:
        return 2 * _special().gammaincinv(d / 2, qa)
    from scipy import stats as sps
    return sps.chi2.ppf(q, df)


def _norm_cdf(x):
    xa = _finite(x)
    if xa is not None:
        return _special().ndtr(xa)
    from scipy import stats as sps
    return sps.norm.cdf(x)


def _exp(x: float) -> float:
    """exp that saturates: a CI at a level near 1 with 1-2 df (a sequential look's
    1 - 1e-12 at 2 launches) has a half-width beyond the float range; its ends are
    then 0 and inf, not an OverflowError."""
    return math.exp(x) if x < 709.0 else math.inf


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
    h = float(_t_ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(math.exp(m), math.exp(m - h), math.exp(m + h), n, sd)


class Untested(StrEnum):
    """Why a cell was not tested (LaunchTest.untested; LaunchTest.reason is the text shown,
    which may add counts): readers branch on this, never on the text."""
    NO_STATISTIC = "no launch statistic"
    TOO_FEW_LAUNCHES = "too few launches"
    NO_SPREAD = "no spread between launches"


class LaunchTest(NamedTuple):
    """Candidate vs baseline on launch statistics. gain > 1 = candidate better."""
    gain: float | None
    ci_low: float | None          # 95% CI of the gain (the test's own critical value)
    ci_high: float | None
    p: float | None               # two-sided p on the logs; None when not tested
    n_base: int
    n_cand: int
    tested: bool
    reason: str = ""              # why not tested
    sd_log: float | None = None   # pooled between-launch sd of the logs (planning)
    # the alpha `detectable` is planned at (None: no detectable); the figure itself is
    # computed when read, most callers never read it (a root solve per cell)
    plan_alpha: float | None = None
    df: float | None = None       # Welch-Satterthwaite df of the standard error (planning)
    diff_log: float | None = None     # log gain (oriented: > 0 = candidate better)
    se_log: float | None = None       # its standard error
    # the standard error's variance components: (variance, degrees of freedom) pairs, from
    # which the critical values come (cochran_cox); pooled = the benchmark's sizes shared it
    components: tuple[tuple[float, float], ...] = ()
    pooled: bool = False
    untested: Untested | None = None  # why not tested, as a value to branch on
    # pooled: the part of se_log**2 that is the shared launch effect (var(u)/n per side),
    # i.e. the covariance of this cell's gain with another cell of its benchmark; the
    # correlation of their t statistics is shared_var / se_log**2 (stats.multiplicity)
    shared_var: float = 0.0
    # pooled: per side (var of the launch part, its df, var of the POOLED cell part, its
    # df, cells per launch S), for the variance of a mean over k cells (mean_components)
    parts: tuple[tuple[float, float, float, float, float], ...] = ()
    # "round": tested on the per-round differences of launches run back-to-back in the same
    # round of an interleaved campaign (paired_test; n_base = n_cand = pairs); "none": the
    # two sides' launches as independent samples
    pairing: str = "none"
    pairs: int = 0                # rounds used (complete pairs) when pairing == "round"
    unpaired: int = 0             # launches of either side left out: no partner in its round
    # what `detectable` is planned on where a side is thin (1-2 df): its launch part pooled
    # with the other side's where they agree, else its own raised, at its own df
    # (plan_component); () = the test's own components
    plan_components: tuple[tuple[float, float], ...] = ()
    # unpaired and pooled: how many of components (and plan_components) are the baseline
    # side's (its launch part, and its cell part where it has one: Spread.components);
    # 0 = half of them (one per side)
    base_components: int = 0
    # pooled, but this cell's components carry its own (moderated) cell part, not the
    # block's pooled one (Spread.cell_parts: the sizes are not equally noisy): `parts` and
    # mean_components(k > 1) do not describe it, so the closed test over the block
    # (stats.multiplicity) tests it by maxT on the cells' own p instead
    own_cell: bool = False
    # the round regime (paired; Spread.regimes) or launch regime (unpaired,
    # _unpaired_regimes) of its block this cell was tested in: its cells share a round or
    # launch part, other regimes' do not (stats.multiplicity's units)
    regime: int = 0
    # pooled, unpaired: this cell's own part is the smaller side's mixed part (MixedPart,
    # _smaller_mixed) and SMALLER_MIX_EXPECT: planned by plan_expect where that side is
    # thin (_expects), whatever _own_expect says of its launches
    own_expect: bool = False

    @property
    def detectable(self) -> float | None:
        """The smallest |gain| - 1 (log-symmetric) detected with probability POWER at
        plan_alpha from this test's planning components (detectable_at); None where there
        is none or plan_alpha is None."""
        return None if self.plan_alpha is None else detectable_at(self, self.plan_alpha, POWER)

    @property
    def planned_on(self) -> tuple[tuple[float, float], ...]:
        """The components the planning figures (detectable, detectable_at) use."""
        return self.plan_components or self.components

    def mean_components(self, k: int) -> tuple[tuple[float, float], ...]:
        """Variance components of the mean gain over k cells of this benchmark under the
        pooled model (the shared launch part stays, the pooled cell part shrinks as
        (S-k)/(k(S-1))); k = 1 gives this cell's own components. Only for a block whose
        cells all share the pooled cell part: where a cell has its own part (own_cell),
        k > 1 would mix the pooled part with it and is not a valid variance of the mean
        (stats.multiplicity then uses maxT on the cells' own p)."""
        if not self.parts or k == 1:
            return self.components
        out = []
        for lv, dl, cv, dc, s in self.parts:
            out.append((lv, dl))
            f = (s - k) / (k * (s - 1)) if s > 1 else 0.0
            if cv > 0 and f > 0:
                out.append((cv * f, dc))
        return tuple(out)

    def ci_at(self, level: float) -> tuple[float | None, float | None]:
        """The gain's CI at another level (e.g. adjusted for multiplicity), from the same
        components and critical values as p: it excludes 1 exactly when p <= 1 - level."""
        if self.diff_log is None or self.se_log is None or not self.components:
            return self.ci_low, self.ci_high
        h = cochran_cox_crit(self.components, (1.0 - level) / 2.0) * self.se_log
        return _exp(self.diff_log - h), _exp(self.diff_log + h)

    def tost(self, margin: float) -> float | None:
        """Two one-sided tests of equivalence within a log-symmetric margin (0.02 = the
        gain is within [1/1.02, 1.02]): the larger one-sided p. Equivalent at alpha when
        tost <= alpha (the 1 - 2 alpha CI lies inside the margin)."""
        if not self.tested or self.diff_log is None or self.se_log is None:
            return None
        bound = math.log1p(margin)
        if self.se_log == 0:
            return 0.0 if abs(self.diff_log) < bound else 1.0
        lo = one_sided_p((self.diff_log + bound) / self.se_log, self.components)
        hi = one_sided_p((bound - self.diff_log) / self.se_log, self.components)
        return max(lo, hi)


# ---------------------------------------------------------------------------------------
# Critical values: Cochran and Cox's weighted t
#
# The standard error of a gain is a sum of variance components, each estimated with its
# own degrees of freedom (a side's launches, n - 1; or, pooled over a benchmark's sizes,
# the launch part with n - 1 and the size-specific part with (n - 1)(S - 1)). Welch's
# Satterthwaite df for such a sum is liberal when a component has 1-2 df and dominates
# (2 vs 7 launches: 8-11% false positives per cell at alpha 0.05), because an
# underestimated small component also inflates the df. Cochran and Cox's critical value,
# the variance-weighted mean of each component's own t quantile, stays at or below alpha
# in every design bench/bench_inference.py tries, and equals Student's t when there is one
# component.

# Components with this many df or more are tested with Welch-Satterthwaite df (accurate
# there, and Cochran-Cox would be needlessly conservative: 98% coverage at 5+5); a side
# with 2-3 launches (1-2 df) makes the test Cochran-Cox (Welch: 7-11% false positives).
WELCH_MIN_DF = 3


# The floor on a thin side (floor_component): a variance component estimated with fewer
# than WELCH_MIN_DF df (the launch part of a side with 2-3 launches, a cell's own cell part
# there, or its whole variance when not pooled) is never taken as smaller than the other
# side's matching component.


def _thin(var: float, df: float, other_var: float, other_df: float) -> bool:
    """Where floor_component floors: a component with fewer than
    WELCH_MIN_DF df, smaller than the other side's, which has more df."""
    return df < WELCH_MIN_DF and other_df > df and other_var > var


def floor_component(var: float, df: float, other_var: float, other_df: float
                    ) -> tuple[float, float]:
    """One side's per-launch variance component (var, df), floored at the other side's
    (other_var, other_df) when its own has fewer than WELCH_MIN_DF df and the other's more
    than its own: the thin side is never assumed the quieter one. With 2-3 launches in a
    two-mode machine (launches x3 apart) all of a side's launches land in one mode often
    (1 in 2 at 2 launches, 1 in 4 at 3), and its own estimate is then the within-mode
    spread while the other side's mean sits between the modes (2 vs 7: 14.5% false
    positives per cell, 85.5% coverage without the floor). Taken from the other side, the
    component counts one df more than its own (the df of one launch more), never more than
    the other's: the other side's df would be liberal when the thin side really is the
    noisier one (2 vs 7, small side 3x noisier: 7.2% per cell), its own would cost every
    bit of power at 2 vs 7. Depends only on the design and the spreads, never on the
    means; docs/statistics.md "A side with 2-3 launches" has the checks."""
    if _thin(var, df, other_var, other_df):
        return other_var, min(other_df, df + 1)
    return var, df


# Planning a thin side (plan_component): its launch part is read as the other side's when
# the two estimates are consistent (their ratio below this quantile of F(own df, other df)),
# else as its own, raised so that it falls short of the true variance with probability
# 1 - PLAN_OWN_QUANTILE (a 1-2 df estimate is mostly below its mean: chi2 with 1 df has its
# median at 0.45 of it). Chosen by simulation, docs/statistics.md "Planning". Unpaired
# sides only: a paired test has no thin side; its round part is raised by
# plan_round_part.
PLAN_SAME_LEVEL = 0.85
PLAN_OWN_QUANTILE = 0.55


def _f_ppf(q: float, d1: float, d2: float) -> float:
    from scipy.special import fdtri
    return float(fdtri(d1, d2, q))


def plan_component(var: float, df: float, other_var: float, other_df: float,
                   floor: float = 0.0) -> tuple[float, float]:
    """What the planning figures (LaunchTest.detectable, detectable_at) take for one side's
    per-launch variance component (var, df) when it is thin (fewer than WELCH_MIN_DF df,
    the other side has more): always at its own df. floor: a lower bound the side's own
    data give with many df (pooled over a benchmark's sizes: the launch part is var(u) +
    var(v)/S and var(u) >= 0, so ms_cell / S; 0 when unknown); own = max(var, floor).

    - own / other_var at most the PLAN_SAME_LEVEL quantile of F(df, other_df): the spreads
      are consistent with being equal, the floor's premise (floor_component); both sides
      pooled, df-weighted.
    - above it the side really is the noisier one: its own estimate, the part above the
      floor scaled by df / chi2_{1 - PLAN_OWN_QUANTILE}(df) (x2.80 at 1 df, x1.67 at 2),
      so that it exceeds the true variance with probability PLAN_OWN_QUANTILE; never below
      own or other_var.

    A 1-2 df estimate is below its mean most of the time; planned as it stands, the figure
    of a 2-3 launch side that really is 3x noisier had 59-70% true power. Pooled whenever
    the thin side was the smaller (the rule before), equal spreads were right (80-85%) but
    that side's own draws, never raised, stayed optimistic. docs/statistics.md "Planning"
    has the checks. Elsewhere: (var, df)."""
    if not (df < WELCH_MIN_DF and other_df > df):
        return var, df
    own = max(var, floor)
    if own <= other_var * _f_ppf(PLAN_SAME_LEVEL, df, other_df):
        return (df * own + other_df * other_var) / (df + other_df), df
    raised = floor + (var - floor) * df / float(_chi2_ppf(1.0 - PLAN_OWN_QUANTILE, df))
    return max(raised, own, other_var), df


# Planning a paired test (plan_round_part): the round part of the differences (what a
# round's difference shares over the sizes, pairs - 1 df; with one size or unpooled, the
# differences' whole variance) is read as the value its estimate falls short of with
# probability 1 - PLAN_ROUND_QUANTILE. docs/statistics.md "Planning", "Paired by round".
PLAN_ROUND_QUANTILE = 0.5


def plan_round_part(var: float, df: float, floor: float = 0.0) -> float:
    """What the planning figures take for a paired test's round part (var, df): the part
    above floor (what the side knows from many df: pooled over S sizes, the round part
    is var(e) + var(v)/S, so ms_cell / S; 0 when unknown) scaled by
    df / chi2_{1 - PLAN_ROUND_QUANTILE}(df), so that it exceeds the true variance with
    probability PLAN_ROUND_QUANTILE (x1.44 at 2 df, x1.27 at 3, x1.10 at 7, -> 1 as df
    grows). The figure is read as a median, and an estimate with few df is below its
    mean most of the time: planned as it stands, 3-5 rounds had 64-73% true power.
    Never below var."""
    if df <= 0 or var <= floor:
        return var
    q = float(_chi2_ppf(1.0 - PLAN_ROUND_QUANTILE, df))
    return max(var, floor + (var - floor) * df / q) if q > 0 else var


def plan_cell_parts(parts: Sequence[tuple[float, float]],
                    same: Sequence[tuple[int, int]] = (),
                    floors: Sequence[float] = ()) -> list[tuple[float, float]]:
    """What the planning figures take for a cell's own cell parts (var, df), both sides'
    (unpaired) as the test will use them: those on fewer than WELCH_MIN_DF df raised
    TOGETHER to the median-unbiased value of their sum, x nu / chi2_0.5(nu) at the sum's
    Satterthwaite df nu (between the smallest df and the sum of their df), each at its
    own df; the others as they are. One part alone: x df / chi2_0.5(df), as
    plan_round_part without a floor (x2.20 at 1 df, x1.44 at 2). Raised one by one,
    2+2 launches (two 1-df parts, their sum 1-2 df) overshot: 88.6-89.3% true power where
    sizes share no launch effect, 3+3 (two 2-df parts, sum up to 4 df) 85-87%; the figure
    is read as a median, and the median of a sum is not the sum of the medians.
    same: index pairs (i, j) of parts that are ONE estimate (a thin side's part floored
    to the other side's, _each_cell: a copy of it): their sum is one term at the smaller
    of their df, not two independent ones. At 2 vs 3 launches the 2-launch side's part
    floored to the other's (both 2 df) counted as independent gave ~3.9 df and x1.20; one
    estimate, its 2 df give x1.44 (true power 72.4% -> 74.7% at 2 vs 3 x 8 sizes).
    floors: per part, a lower bound its side knows with many df (a launch part pooled over
    S sizes is var(u) + var(v)/S: ms_cell / S, plan_launch_parts); only the part above it
    is in the sum and raised (0 where not given). docs/statistics.md "Planning"."""
    low = [floors[i] if i < len(floors) else 0.0 for i in range(len(parts))]
    thin = [i for i, (v, d) in enumerate(parts) if d < WELCH_MIN_DF and v > low[i]]
    if not thin:
        return list(parts)
    terms = {i: (parts[i][0] - low[i], parts[i][1]) for i in thin}
    for i, j in same:
        if i in terms and j in terms:
            (vi, di), (vj, dj) = terms.pop(i), terms.pop(j)
            terms[i] = (vi + vj, min(di, dj))
    nu = _satterthwaite(list(terms.values()))
    q = float(_chi2_ppf(0.5, nu))
    f = max(1.0, nu / q) if q > 0 else 1.0
    return [(low[i] + (v - low[i]) * f, d) if i in thin else (v, d)
            for i, (v, d) in enumerate(parts)]


# Equal launch counts on 3 launches a side: the launch parts (2 df each, pooled over the
# sizes) are raised with the cell's own parts (plan_launch_parts). At 1 df (2+2) not:
# measured, raising them overshoots (docs/statistics.md "Planning").
PLAN_LAUNCH_MIN_DF = 2


def plan_launch_parts(plan_spreads, ns: tuple[int, int]) -> list[tuple[int, float]]:
    """(side, floor) of the launch parts _plan_cell raises with a cell's own parts: those
    plan_component leaves as estimated because neither side has more df (equal launch
    counts), on PLAN_LAUNCH_MIN_DF to WELCH_MIN_DF - 1 df; the floor is the side's pooled
    cell part / S over n launches (the launch part is var(u) + var(v)/S, var(u) >= 0).
    At 3+3 with launch effects shared by the sizes the launch parts are most of the
    variance, and left as estimated (2 df: below their mean most of the time) the figure
    had 73.4-78.1% true power. At 2+2 (1 df) the figure's Satterthwaite df, estimated
    from 1-df draws, is biased low, which already inflates it: raised too, 2+2 x 8 sizes
    went from 78.6% to 86.2% at the stats level."""
    a, b = plan_spreads
    if a is None or b is None or a.df_launch != b.df_launch or \
            not PLAN_LAUNCH_MIN_DF <= a.df_launch < WELCH_MIN_DF:
        return []
    return [(j, sp.ms_cell / sp.cells / n if sp.df_cell > 0 and sp.cells > 1 else 0.0)
            for j, (sp, n) in enumerate(zip(plan_spreads, ns, strict=True))]


def _plan_sides(spreads: list) -> list:
    """Both sides' Spreads with plan_component applied to their launch parts, the floor
    from each side's own cell part (ms_cell / S: var(u) >= 0), and each cell's own cell
    part as the test will use it (_each_cell's thin-side floor); raised where it has
    < WELCH_MIN_DF df per cell, both sides' together (_test_cell, plan_cell_parts).
    docs/statistics.md "Planning". A third item: per side, the launch part (per launch)
    plan_expect takes as its truth where that side is thin (plan_thin_launch), else
    None; _plan_cell uses it for the cells with no own cell part."""
    a, b = spreads
    if a is None or b is None:
        return spreads
    out, medians = [], []
    for own, other in ((a, b), (b, a)):
        floor = own.ms_cell / own.cells if own.df_cell > 0 and own.cells > 1 else 0.0
        v, d = plan_component(own.ms_launch / own.cells, own.df_launch,
                              other.ms_launch / other.cells, other.df_launch, floor)
        out.append(own._replace(ms_launch=v * own.cells, df_launch=d,
                                cell_parts=_each_cell(own, other, floor_component)))
        thin = own.df_launch < WELCH_MIN_DF and other.df_launch > own.df_launch or \
            _mix_side(own, other)
        medians.append((own.ms_launch / own.cells, floor, own.df_cell if floor else 0.0)
                       if thin else None)
    return out + [tuple(medians)]


def _mix_side(own: Spread, other: Spread) -> bool:
    """Whether own is the smaller side the plan names at 4-5 launches (_mix_names) and its
    launch part is planned as a thin side's (MIX_PLAN_TRUTHS: plan_thin_launch, for
    plan_expect over the mix)."""
    return bool(MIX_PLAN_TRUTHS) and _mix_names(own.launches, other.launches, own.cells)


def _mix_names(n_small: int, n_other: int, cells: float) -> bool:
    """Whether the plan names the smaller side (n_small launches against n_other, `cells`
    sizes) as the mix's thin side where expect_thin names none (MIX_PLAN_ANY_N): 4-5
    launches (a launch part on WELCH_MIN_DF df or more), unbalanced, FEW_CELLS sizes or
    more, the mix and its plan on. The one rule of _mix_plan and _mix_side."""
    return bool(SMALLER_MIX_PLAN and SMALLER_MIX and MIX_PLAN_ANY_N) and \
        WELCH_MIN_DF < n_small < n_other and unbalanced(n_small, n_other) and \
        cells >= FEW_CELLS


def _plan_cell(plan_spreads, ns: tuple[int, int], cell: object) -> list:
    """A pooled cell's planning components (both sides', the baseline's first) from
    _plan_sides's Spreads, its own cell parts raised together (plan_cell_parts). Both
    sides' parts per launch identical (value and df): one side's was floored to the
    other's (_each_cell copies it), one estimate, not two (plan_cell_parts's same)."""
    medians = plan_spreads[2] if len(plan_spreads) > 2 else (None, None)
    plan_spreads = plan_spreads[:2]
    sides = [sp.components(n, cell) for sp, n in zip(plan_spreads, ns, strict=True)]
    own = [(j, 1) for j, sp in enumerate(plan_spreads)
           if sp.own_part(cell) is not None and len(sides[j]) > 1]
    if own:
        parts = [plan_spreads[j].own_part(cell) for j, _ in own]
        same = ((0, 1),) if len(parts) == 2 and parts[0] == parts[1] else ()
        launch = plan_launch_parts(plan_spreads, ns)
        which = own + [(j, 0) for j, _f in launch]
        raised = plan_cell_parts([sides[j][k] for j, k in which], same,
                                 [0.0] * len(own) + [f for _j, f in launch])
        for (j, k), part in zip(which, raised, strict=True):
            sides[j][k] = part
        for j, _k in own:
            sides[j][1] = (sides[j][1][0], _plan_own_df(plan_spreads[j], plan_spreads[1 - j],
                                                        cell, sides[j][1][1]))
    # a thin side's launch part is plan_expect's truth (a cell with an own cell part too
    # where _own_expect: PLAN_OWN_EXPECT)
    for j, raw in enumerate(medians):
        if raw is not None and (not own or _own_expect(ns[j]) or
                                _mixed_expect(plan_spreads[j], cell)):
            _expect_truths(sides, ns, j, raw)
    return sides[0] + sides[1]


# The table's alpha, at which _plan_mixed_df mixes a thin own part's two critical values
PLAN_MIXED_ALPHA = 0.05


def _plan_own_df(own: Spread, other: Spread, cell: object, df: float) -> float:
    """The df a thin side's own cell part is planned at (_plan_mixed_df) where the test
    may floor it (_each_cell: fewer than WELCH_MIN_DF df of its launches, the other side
    more); elsewhere df as planned, and so for a flagged size's part from both sides'
    sums (JointPart: _each_cell leaves it alone; told by its df, 3 vs 4 launches, 354 of
    356 read as the thin side's own) and a moderated one (its df mostly its other sizes',
    more than its launches' + 1 floored or not): the test keeps those df."""
    d_own, theirs, mine = own.df_launch, other.own_part(cell), own.own_part(cell)
    if not d_own < WELCH_MIN_DF or other.df_launch <= d_own or theirs is None or \
            mine is None or mine.joint or mine.df > d_own + 1:
        return df
    return _plan_mixed_df(float(d_own), float(theirs[1]))


@functools.lru_cache(maxsize=256)
def _plan_mixed_df(d_own: float, d_other: float) -> float:
    """The df whose t quantile (two-sided, PLAN_MIXED_ALPHA) is the test's EXPECTED
    critical value for a thin own part: the test floors it (min(d_other, d_own + 1) df,
    _each_cell) when its estimate is below the other side's, with probability
    P(F(d_own, d_other) < 1) where the two spreads are equal, else keeps its own d_own
    df. Planned at whichever df this draw got, the figure switched between two modes
    (2 vs 7 x 4 sizes, no launch effect: median 0.74 of the effect the test detects with
    80% power); at the expected critical value 0.91-0.99 of it. docs/statistics.md
    "Planning"."""
    from scipy.special import fdtr, stdtridf
    p = float(fdtr(d_own, d_other, 1.0))
    tail = PLAN_MIXED_ALPHA / 2.0
    q = p * float(_t_isf(tail, min(d_other, d_own + 1.0))) + \
        (1.0 - p) * float(_t_isf(tail, d_own))
    return float(stdtridf(1.0 - tail, q))


# Planning a thin side by its expected power (plan_expect): where one side's launch part
# has fewer than WELCH_MIN_DF df and the other's more (2-3 launches against more) and no
# cell has its own cell part, the 'detectable' is the effect whose power, AVERAGED over the
# estimates the test may get, is POWER: the planned truths are the thin side's launch part
# median-unbiased above its floor (plan_thin_launch) and everything else as estimated;
# the test's estimates of the two launch parts and of the thin side's cell part are drawn
# on a grid of equal-probability chi2 quantiles (EXPECT_GRID: thin launch part, other
# launch part, thin cell part), the test's floor (floor_component) and its Cochran-Cox /
# Welch critical value applied per draw. docs/statistics.md "Planning".
EXPECT_GRID = (24, 24, 8)


def plan_thin_launch(var: float, df: float, floor: float = 0.0,
                     floor_df: float = 0.0) -> float:
    """A thin side's launch part (var, df) as plan_expect's truth. Pooled over S sizes
    the launch part is var(u) + var(v)/S, and the side's ms_cell / S (floor, on floor_df
    df) estimates var(v)/S: where var at most the PLAN_SAME_LEVEL quantile of F(df,
    floor_df) times floor (consistent with var(u) = 0: sizes that share no launch
    effect), the two pooled, df-weighted; else max(var, floor) with the part above floor
    scaled by df / chi2_0.5(df), its median-unbiased value (x2.20 at 1 df, x1.44 at 2).
    Raised whenever it is above its floor, the figure of 2 vs 7 launches whose sizes
    share no launch effect had 84.9-85.3% true power (a 1-df excess over a 9-df floor is
    noise there, and x2.20 it made the truth's median too high)."""
    own = max(var, floor)
    if floor_df > 0 and own <= floor * _f_ppf(PLAN_SAME_LEVEL, df, floor_df):
        return (df * own + floor_df * floor) / (df + floor_df)
    return floor + (own - floor) * df / float(_chi2_ppf(0.5, df))


def _expect_truths(sides: list, ns: tuple, j: int, raw: tuple) -> None:
    """Side j's launch part in a cell's planning components (sides, per side) as
    plan_expect's truth: raw (its launch part per launch, its floor, the floor's df) planned by
    plan_thin_launch, at its own df."""
    dj = sides[j][0][1]
    sides[j][0] = (plan_thin_launch(raw[0], dj, raw[1], raw[2]) / ns[j], dj)


def expect_thin(comps: Sequence[tuple[float, float]], k: int) -> int | None:
    """Which side (0 baseline, 1 candidate) of pooled unpaired components (the baseline's
    k first: launch part, then its cell part) plan_expect plans as thin: its launch part
    on fewer than WELCH_MIN_DF df, the other's on more; None where neither is."""
    if not 0 < k < len(comps):
        return None
    d0, dk = comps[0][1], comps[k][1]
    if d0 < WELCH_MIN_DF and dk > d0:
        return 0
    if dk < WELCH_MIN_DF and d0 > dk:
        return 1
    return None


def _quantiles(df: float, m: int) -> np.ndarray:
    """chi2_df / df at m equal-probability midpoints (the draws of an estimate / truth);
    cached (read-only): plan_boot's grid asks for the same few (df, m) thousands of times."""
    return _quantiles_cached(float(df), m)


@functools.lru_cache(maxsize=1024)
def _quantiles_cached(df: float, m: int) -> np.ndarray:
    q = np.asarray(_chi2_ppf((np.arange(m) + 0.5) / m, df), dtype=float) / df
    q.flags.writeable = False
    return q


def _expect_draws(comps: tuple, ns: tuple, k: int, j: int, grid: tuple = ()) -> tuple:
    """(the test's variance, its critical value's components as (variance, df) columns)
    per grid draw (plan_expect): the sides' launch parts and the thin side's cell part
    drawn around the planned truths comps, the thin launch part floored per draw; grid:
    the draws per part (EXPECT_GRID unless given)."""
    cols = _expect_cols(comps, ns, k, j, grid)
    shape = np.broadcast_shapes(*(np.shape(v) for v, _ in cols))
    cols = [(np.broadcast_to(v, shape), np.broadcast_to(d, shape)) for v, d in cols]
    return sum(v for v, _ in cols), cols


# SMALLER_MIX_PLAN: a cell that kept the pooled part where SMALLER_MIX acts (2-5 launches
# on the thin, smaller side against more, FEW_CELLS sizes or more) is planned by
# plan_expect over the mix: its thin cell part drawn as the test would take it in a re-run
# (_mix_draws: the size's own n - 1 df sum at MIX_GRID quantiles beside the pooled part's
# draws; per pair its F test's p, w, the mixed part's value and df, floored per draw at the
# other side's part as _each_cell floors it). Planned without the mix, an alike cell that
# kept the pooled part (55% of them) reported an effect the test detects with 55-59% (an
# alike size is mixed in ~45% of re-runs): the 3 vs 7 'not sharing' rows at 64.9-68.5%;
# over the mix 81.2-83.8% (docs/statistics.md "Stop 42"). At a 2-launch thin side that
# figure is corrected as plan_boot corrects the others (stop 43: detectable_at sends it
# through plan_boot with the mix; straight to plan_expect the 2 vs 7 'shared, thin side
# 1/3' row was at 87.5%).
SMALLER_MIX_PLAN = True
MIX_GRID = 8
# MIX_PLAN_ANY_N: the plan over the mix also where the smaller side has 4-5 launches (its
# launch part on 3-4 df, so expect_thin names no side and the test floors nothing): the
# mix acts there too, and planned without it the 'not sharing' rows had 68.5-73.2% true
# power (review s42 R16). Stop 43.
MIX_PLAN_ANY_N = True
MIX_PLAN_TRUTHS = True


def _mix_draws(v: float, d_pool: float, n: int, nc: int, mix: tuple,
               floor: tuple = ()) -> tuple:
    """The thin side's pooled cell part v (df d_pool, per mean of n launches) as the test
    will use it under SMALLER_MIX (mix: (S, lo, hi)): per (pooled draw, the size's own
    n - 1 df draw) the part and its df, shape (1, 1, nc, MIX_GRID); the other sizes' sums
    read as the pooled part. floor: (the other side's cell part per mean of its launches,
    its df, its launches) where the test floors a thin mixed part (_each_cell)."""
    from scipy.special import fdtrc
    if not v > 0.0:     # no pooled part (every residual 0): nothing to mix, no 0/0 (s42 R15)
        shape = (1, 1, nc, MIX_GRID)
        return np.zeros(shape), np.full(shape, float(d_pool))
    cells, lo, hi = mix[:3]
    q = _quantiles(d_pool, nc)[:, None]
    x = _quantiles(n - 1, MIX_GRID)[None, :]
    pd = v * q
    tau = v * x
    own = np.maximum(0.0, (tau - 2.0 * pd / cells) / (1.0 - 2.0 / cells))
    d1 = (n - 1) * (cells - 1) / cells
    p = fdtrc(d1, d1 * (cells - 1), tau / pd)
    w = np.clip((hi - p) / (hi - lo), 0.0, 1.0)
    use = (w > 0) & (own > pd)
    a, b = w * own, (1.0 - w) * pd
    with np.errstate(divide="ignore", invalid="ignore"):
        dm = (a + b) ** 2 / (a * a / (n - 1) + b * b / d_pool)
    dm = np.where(w >= 1.0, np.minimum(dm, WELCH_MIN_DF), dm) - SMALLER_OWN_CC
    part, df = np.where(use, a + b, pd), np.where(use, dm, d_pool)
    if floor:       # (the other side's cell part per mean, its df, its launches): _each_cell
        fv = floor[0] * floor[2] / n
        low = use & (part < fv) & (floor[1] > np.minimum(dm, n - 1.0))
        part, df = np.where(low, fv, part), np.where(low, np.minimum(floor[1], dm + 1.0), df)
    return part[None, None], df[None, None]


def _expect_cols(comps: tuple, ns: tuple, k: int, j: int, grid: tuple = (),
                 mix: tuple = ()) -> list:
    """_expect_draws's columns each at its own shape (a part drawn on one grid axis, a
    fixed part a scalar): plan_expect's arithmetic broadcasts them, the same values
    element by element as the full-grid columns, without building those."""
    sides = [list(comps[:k]), list(comps[k:])]
    (vt, dt), (vo, do) = sides[j][0], sides[1 - j][0]
    na, nb, nc = grid or EXPECT_GRID
    a = (vt * _quantiles(dt, na))[:, None, None]
    b = (vo * _quantiles(do, nb))[None, :, None]
    # floored per draw as floor_component floors it: a launch part on fewer than
    # WELCH_MIN_DF df against more (not the 3-4 df of a 4-5 launch side the mix names)
    floored = (a * ns[j] < b * ns[1 - j]) & (dt < WELCH_MIN_DF and do > dt)
    thin = np.where(floored, b * ns[1 - j] / ns[j], a)
    dthin = np.where(floored, min(do, dt + 1.0), dt)
    cols = [(thin, dthin), (b, do)]
    for i, side in ((j, sides[j]), (1 - j, sides[1 - j])):
        for v, d in side[1:]:
            draw = v * _quantiles(d, nc)[None, None, :] if i == j else v
            cols.append((draw, d))
    if mix and len(sides[j]) > 1:
        cols = [(np.asarray(v)[..., None] if np.ndim(v) == 3 else v,
                 np.asarray(d)[..., None] if np.ndim(d) == 3 else d) for v, d in cols]
        other = sides[1 - j][1] if len(sides[1 - j]) > 1 else None
        thin_launch = dt < WELCH_MIN_DF and do > dt
        floor = (other[0], other[1], ns[1 - j]) if other and thin_launch else ()
        cols[2] = _mix_draws(sides[j][1][0], sides[j][1][1], ns[j], nc, mix, floor)
    return cols


def _expect_crit(cols: list, alpha: float) -> np.ndarray:
    """Per draw, the test's critical value (cochran_cox_crit, vectorised): Welch at the
    Satterthwaite df where every component has >= WELCH_MIN_DF df, else Cochran-Cox.
    cols: _expect_draws's, or _expect_cols's (broadcast together here)."""
    tail = alpha / 2.0
    tot = sum(v for v, _ in cols)
    cc = sum(v * _t_isf_each(tail, d) for v, d in cols) / tot
    welch = functools.reduce(np.logical_and, [(d >= WELCH_MIN_DF) | (v <= 0) for v, d in cols])
    welch = np.broadcast_to(welch, np.shape(cc))
    if not welch.any():
        return cc
    den = sum(np.where(v > 0, v * v / d, 0.0) for v, d in cols)
    df = tot * tot / den
    # rounded as _power_delta rounds it (0.1 below 30 df, 1 above): few distinct values
    df = np.where(df < 30, np.round(df, 1), np.round(df))
    return np.where(welch, _t_isf_each(tail, df), cc)


def _t_isf_each(tail: float, df: np.ndarray) -> np.ndarray:
    """_t_isf(tail, df) for an array of df, computed once per distinct value; an array
    broadcast along an axis (stride 0: _expect_draws's columns) is reduced to its own
    values first (each element's quantile is the same elementwise call, same bits)."""
    d = np.asarray(df)
    if d.size == 1:     # a fixed part's df (a scalar or a column broadcast from one)
        return np.broadcast_to(_t_isf_one(tail, float(d.flat[0])), d.shape)
    own = d[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None)
                  for st, n in zip(d.strides, d.shape, strict=True))]
    u, inv = np.unique(own, return_inverse=True)
    return np.broadcast_to(np.asarray(_t_isf(tail, u))[inv].reshape(own.shape), d.shape)


@functools.lru_cache(maxsize=1024)
def _t_isf_one(tail: float, df: float) -> np.float64:
    """_t_isf_each's value at one df (the same elementwise call on a 1-element array)."""
    return np.asarray(_t_isf(tail, np.array([df])))[0]


@functools.lru_cache(maxsize=4096)
def plan_expect(comps: tuple, ns: tuple, k: int, alpha: float,
                power: float = POWER, grid: tuple = (), mix: tuple = ()) -> float | None:
    """The 'detectable' of a thin side (expect_thin) planned on its expected power: the
    |log effect| d at which the mean over the grid's draws (_expect_draws) of
    P(|N(d, sigma^2)| > c se) is `power`, sigma^2 the sum of the planned truths comps, se
    and c a draw's standard error and critical value (the mean log difference is
    independent of the spreads), as a percentage (expm1); None as _detectable. comps:
    the planned truths (plan_thin_launch for the thin launch part), ns the launch counts,
    k the baseline's number of components; grid: _expect_draws's (EXPECT_GRID unless
    given); mix: _mix_plan's (S, lo, hi, j), the thin cell part drawn over the smaller
    side's mix (_mix_draws), its j the thin side where expect_thin names none."""
    j = expect_thin(comps, k)
    if j is None and len(mix) > 3:      # the mix's smaller side at 4-5 launches (_mix_plan)
        j = mix[3]
    sigma2 = sum(v for v, _ in comps)
    if j is None or sigma2 <= 0:
        return _detectable(comps, alpha, power)
    cols = _expect_cols(comps, ns, k, j, grid, mix)
    se2 = sum(v for v, _ in cols)       # as _expect_draws's, at the columns' own shapes
    h = (_expect_crit(cols, alpha) * np.sqrt(se2)).ravel() / math.sqrt(sigma2)

    # h's domain checked once, not twice per evaluation (_norm_cdf's own fast path:
    # ndtr, same bits); np.mean as its own sum over the count (same bits, no dispatch);
    # short(0.0) kept: brentq evaluates it again at its bracket's end
    ndtr, fin = _special().ndtr, _finite(h) is not None
    at0: list = []

    def short(x: float) -> float:
        if x == 0.0 and at0:
            return at0[0]
        if fin and math.isfinite(x):
            p = ndtr(x - h) + ndtr(-x - h)
        else:
            p = _norm_cdf(x - h) + _norm_cdf(-x - h)
        return float(p.sum() / p.size) - power

    from scipy.optimize import brentq
    hi = float(h.max()) + 10.0
    at0.append(short(0.0))
    x = brentq(short, 0.0, hi, xtol=1e-6) if at0[0] < 0 else 0.0
    log_effect = x * math.sqrt(sigma2)
    return math.expm1(log_effect) if log_effect <= MAX_LOG_EFFECT else None


# plan_expect's figure is the effect with 80% power at the planned truths; read as a median
# over the estimates it is planned from it is not always at the truths' figure: where the
# thin side really is the quieter one (2 vs 7 launches, sizes sharing launch effects, the
# thin side's 1/3 as noisy) the median figure had 89.9% true power. plan_boot corrects it
# by a parametric bootstrap on a fixed grid (no random draws): the thin launch estimate
# redrawn around its planned truth at PLAN_BOOT_GRID equal-probability chi2 quantiles and
# re-planned (plan_thin_launch), the other side's launch part at PLAN_BOOT_GRID quantiles
# around its estimate; the log figure x (log figure / the median of those grid^2 figures),
# the bootstrap's figures and the one they are compared with on PLAN_BOOT_DRAWS, a coarser
# plan_expect grid (its cost: 9 solves at 12 x 12 x 4 cost about one at 24 x 24 x 8).
# PLAN_BOOT_ABOVE: no correction where plan_thin_launch pooled the thin launch part with
# its floor (sizes that share no launch effect; corrected there too, 2 vs 7 not sharing,
# thin side 1/3, fell to 74.4%). PLAN_OWN_EXPECT: a cell with an own cell part (a flagged
# size, a regime block) is planned by plan_expect as well, its thin launch part as
# plan_expect's truth (else plan_component's, pooled at 1 df: x2.2 the others' figure at
# 1/3). PLAN_BOOT_MAX_N: both only where the thin side has at most this many launches (0:
# any). The rule since stop 40 (bench_inference.py --plan-rule bootown2c, = today): both,
# a 2-launch thin side only, 3 x 3 at 12 x 12 x 4: 16 of 16 thin rows in 75-85% (2 vs 7
# shared, thin side 1/3: 89.9 -> 82.0%), 15 of 15 own-part rows, compare x1.2-1.5 on a
# 2-launch side (the report at 10 sizes; the planning alone x3-4, x6-7 at 4 own-part
# sizes). --plan-rule before: grid 0, PLAN_OWN_EXPECT False (the rule to stop 39);
# the others measured and not taken (docs/statistics.md "Planning", stops 37-40):
# bootown-above (grid 5, both, any n; stop 38), bootshared (grid 5, the correction only,
# n <= 2; stop 39), bootown2 (as today, the bootstrap on plan_expect's own grid: x1.6-1.8).
PLAN_BOOT_GRID = 3
PLAN_BOOT_ABOVE = True
PLAN_OWN_EXPECT = True
PLAN_BOOT_MAX_N = 2
PLAN_BOOT_DRAWS: tuple = (12, 12, 4)


# SMALLER_MIX_EXPECT: a cell whose smaller side has a mixed part (_smaller_mixed) is
# planned by plan_expect where that side is thin (3 launches against more), its part as
# the test uses it (value, df: Welch or Cochran-Cox per draw). Stop 42. At 4-5 launches
# such a cell is planned by _detectable at its planned components (its launch part as a
# thin side's: MIX_PLAN_TRUTHS); the cells without one over the mix (MIX_PLAN_ANY_N).
SMALLER_MIX_EXPECT = True


def _mixed_expect(sp: Spread, cell: object) -> bool:
    """Whether sp's part for cell is a mixed part (MixedPart) planned by plan_expect."""
    return SMALLER_MIX_EXPECT and bool(getattr(sp.own_part(cell), "mixed", False))


def _own_expect(n_thin: int) -> bool:
    """Whether a cell with an own cell part whose thin side has n_thin launches is planned
    by plan_expect (ownexp): PLAN_OWN_EXPECT, and the thin side at most PLAN_BOOT_MAX_N
    launches (0: any) -- the same bound as plan_boot's correction."""
    return PLAN_OWN_EXPECT and (not PLAN_BOOT_MAX_N or n_thin <= PLAN_BOOT_MAX_N)


def plan_floors(t: LaunchTest) -> tuple[tuple[float, float], ...]:
    """Per side of a pooled test (baseline first) the floor plan_thin_launch took for its
    launch part: (ms_cell / S per launch, its df), from t.parts (the POOLED cell part,
    whatever the cell's own); (0, 0) where there is none. ()  where t is not pooled."""
    out = []
    for (_lv, _dl, cv, dc, s), n in zip(t.parts, (t.n_base, t.n_cand), strict=False):
        floor = cv * n / (s - 1) if s > 1 and dc > 0 else 0.0
        out.append((floor, float(dc)) if floor > 0 else (0.0, 0.0))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def plan_boot(comps: tuple, ns: tuple, k: int, alpha: float, power: float,
              floors: tuple, grid: int = PLAN_BOOT_GRID, above: bool = PLAN_BOOT_ABOVE,
              max_n: int = PLAN_BOOT_MAX_N,
              draws: tuple = PLAN_BOOT_DRAWS, mix: tuple = ()) -> float | None:
    """plan_expect's figure at the planned truths comps, corrected for its median bias by
    the fixed-grid bootstrap above (grid x grid figures; grid 0: none). floors: per side
    (plan_floors) the thin side's floor and its df, as plan_thin_launch took them; max_n:
    no correction where the thin side has more launches (0: any); draws: the bootstrap's
    figures and the one they are compared with solved on this coarser plan_expect grid
    (PLAN_BOOT_DRAWS; () the figure's own), the ratio applied to the figure; mix: every
    plan_expect figure over the smaller side's mix (_mix_plan; () none)."""
    x = plan_expect(comps, ns, k, alpha, power, (), mix)
    j = expect_thin(comps, k)
    if not grid or j is None or x is None or len(floors) != 2 or (max_n and ns[j] > max_n):
        return x
    floor, floor_df = floors[j]
    (vt, dt), (vo, do) = comps[j * k], comps[(1 - j) * k]
    # the truth plan_thin_launch pooled with its floor is at most floor x F's quantile,
    # one it raised above it (x df / chi2_0.5(df) > 1 over the same threshold)
    if above and floor_df > 0 and vt * ns[j] <= floor * _f_ppf(PLAN_SAME_LEVEL, dt, floor_df):
        return x
    figs = []
    for a in _quantiles(dt, grid):
        t = plan_thin_launch(vt * ns[j] * a, dt, floor, floor_df) / ns[j]
        for b in _quantiles(do, grid):
            c = list(comps)
            c[j * k], c[(1 - j) * k] = (t, dt), (vo * b, do)
            y = plan_expect(tuple(c), ns, k, alpha, power, draws, mix)
            figs.append(math.inf if y is None else math.log1p(y))
    xc = plan_expect(comps, ns, k, alpha, power, draws, mix) if draws else x
    m, lx = float(np.median(figs)), math.log1p(x)
    if xc is None or not 0 < m < math.inf:
        return x
    return math.expm1(lx * math.log1p(xc) / m)


def _each_side(spreads: list, component) -> list:
    """Both sides' Spreads with component (floor_component) applied to their launch parts
    and to each cell's own cell part, each against the other side's matching part (its
    launch part; that cell's part, its own or the pooled one): (variance, df) per side."""
    a, b = spreads
    if a is None or b is None:
        return spreads
    out = []
    for own, other in ((a, b), (b, a)):
        v, d = component(own.ms_launch / own.cells, own.df_launch,
                         other.ms_launch / other.cells, other.df_launch)
        out.append(own._replace(ms_launch=v * own.cells, df_launch=d,
                                cell_parts=_each_cell(own, other, component)))
    return out


def _each_cell(own: Spread, other: Spread, component) -> dict | None:
    """own's cell parts (Spread.cell_parts) with component applied to each against the
    other side's part for that cell (its own, or the pooled one). A thin side's part
    (2-3 launches: 1-2 df of its own, however many a moderated part borrows from its
    other sizes) is floored as its launch part is, judged on its launches' df: in a size
    whose launches fall in two modes, all of a 2-launch side's land in one half of the
    time (unfloored: 8.3-16.9% false positives there at 2 vs 7 and 3 vs 7, 3-8 sizes;
    floored 0.3-2.8%; docs/statistics.md "A side with 2-3 launches"). Floored, the part
    has one df more than its own, never more than the other's; equal launch counts are
    left alone, and so is a flagged size's joint part (JointPart: its side's pooled level
    times a ratio on both sides' df, not its launches' 1-2 df)."""
    if not own.cell_parts:
        return own.cell_parts
    out = {}
    for key, part in own.cell_parts.items():
        (v, d), theirs = part, other.components(1, key)
        if len(theirs) < 2 or other.df_launch <= own.df_launch or part.joint:
            out[key] = part
            continue
        # a moderated part of a thin side (6+ sizes, the gate open) has many df, most of
        # them its other sizes': judged on its own launches' df, floored to one df more
        fv, _fd = component(v, min(d, own.df_launch), *theirs[1])
        out[key] = part if fv == v else part._replace(v=fv, df=min(theirs[1][1], d + 1))
    return out


def _use_welch(components) -> bool:
    return all(d >= WELCH_MIN_DF for v, d in components if v > 0)


def cochran_cox_crit(components: Sequence[tuple[float, float]], tail: float) -> float:
    """Critical value for a one-sided tail probability `tail` (0.025 for a 95% CI): Student's
    t at the Welch-Satterthwaite df when every component has >= WELCH_MIN_DF df, else
    Cochran-Cox's variance-weighted mean of the components' own t quantiles."""
    if _use_welch(components):
        return float(_t_isf(tail, _satterthwaite(components)))
    tot = sum(v for v, _ in components)
    if tot <= 0:
        return float(_t_isf(tail, max(1.0, min(d for _, d in components))))
    return float(sum(v * _t_isf(tail, d) for v, d in components if v > 0) / tot)


@functools.lru_cache(maxsize=4096)
def _crit(components: tuple, tail: float) -> float:
    return cochran_cox_crit(components, tail)


def _cc_tail(tstats: np.ndarray, components: Sequence[tuple[float, float]]) -> np.ndarray:
    """One-sided tail probability q with cochran_cox_crit(q) = t, for each |t| (vectorised
    bisection on log q). The critical value is a weighted mean of t quantiles, so q lies
    between the tails of Student's t at the smallest and the largest df: the bracket."""
    x = np.abs(np.asarray(tstats, dtype=float))
    if _use_welch(components):
        return np.where(x == 0, 0.5, _t_sf(x, _satterthwaite(components)))
    tot = sum(v for v, _ in components)
    comps = [(v / tot, d) for v, d in components if v > 0]
    dfs = [d for _, d in comps]
    # the bracket's two tails in one call (rows: the largest df, the smallest)
    ends = _t_sf(x, np.reshape([max(dfs), min(dfs)], (2,) + (1,) * x.ndim))
    with np.errstate(divide="ignore"):
        lo, hi = np.log(np.maximum(ends, 1e-300))
    if len(comps) > 1 and min(dfs) != max(dfs):
        ws = [w for w, _ in comps]
        col = np.reshape(dfs, (len(dfs),) + (1,) * x.ndim)   # every df in one _t_isf call
        isf, fcol = _t_isf, _positive(col)
        if fcol is not None and _unit_open(np.exp([lo, hi])) is not None:
            # every q the bisection tries lies between exp(lo) and exp(hi), in (0, 1):
            # _t_isf's fast path for each (on the float df column it makes), without its
            # domain checks 40 times over
            stdtrit = _special().stdtrit
            isf, col = (lambda q, df: -stdtrit(df, q)), fcol   # noqa: E731
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            rows = isf(np.exp(mid), col)
            c = sum(w * row for w, row in zip(ws, rows, strict=True))
            above = c > x            # critical value too high: q must grow
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
    return np.where(x == 0, 0.5, np.exp(0.5 * (lo + hi)))


def two_sided_p(tstats, components) -> np.ndarray:
    return np.minimum(1.0, 2.0 * _cc_tail(tstats, components))


def one_sided_p(tstat: float, components) -> float:
    """P(T >= tstat) under the weighted-t reference (tstat may be negative)."""
    q = float(_cc_tail(np.array([tstat]), components)[0])
    return q if tstat >= 0 else 1.0 - q


def _satterthwaite(components: Sequence[tuple[float, float]]) -> float:
    tot = sum(v for v, _ in components)
    den = sum(v * v / d for v, d in components if v > 0 and d > 0)
    return tot * tot / den if den > 0 else float(sum(d for _, d in components))


def _power_delta(components: Sequence[tuple[float, float]], alpha: float,
                 power: float) -> float | None:
    """Smallest true |log gain| / se detected with probability `power` by the two-sided
    test: T is noncentral t with the Satterthwaite df, rejected beyond the test's own
    critical value (cochran_cox_crit)."""
    if not components or sum(v for v, _ in components) <= 0:
        return None
    c = cochran_cox_crit(components, alpha / 2.0)
    df = _satterthwaite(components)
    # cached on (c, df) rounded: per-cell spreads make every pair a little different
    # (infinite df, a component known exactly, stays infinite: round() cannot take it)
    if df < 30:
        df = round(df, 1)
    elif math.isfinite(df):
        df = round(df)
    else:
        df = math.inf
    return _ncp_for_power(round(c, 3), df, power)


# A detectable log-effect above this (a gain of e^700) is reported as none: math.expm1
# overflows past ~709.
MAX_LOG_EFFECT = 700.0


@functools.lru_cache(maxsize=8192)
def _ncp_for_power(c: float, df: float, power: float) -> float:
    from scipy.optimize import brentq

    # T = (Z + ncp) / W with W = sqrt(chi2_df / df): the noncentral t, integrated over W on
    # 400 equal-probability points (scipy's nct is NaN at some df/ncp pairs); infinite df
    # is the normal limit, W = 1 (chi2_df / df at df = inf was NaN: brentq raised)
    w = np.sqrt(_chi2_ppf((np.arange(400) + 0.5) / 400, df) / df) if math.isfinite(df) \
        else np.ones(1)
    cw = c * w

    def pw(ncp: float) -> float:
        # both tails' arguments (ncp - cw, -ncp - cw) as the two rows of one _norm_cdf call
        up, down = _norm_cdf(np.subtract.outer(np.array([ncp, -ncp]), cw))
        # np.mean's own sum and division, without its dispatch (same bits)
        return float((up + down).sum() / cw.size) - power

    if pw(0.0) >= 0:
        return 0.0
    hi = c + 10.0
    while pw(hi) < 0:
        hi *= 2
    return brentq(pw, 0.0, hi, xtol=1e-6)


def pooled_sd(*sides: np.ndarray) -> float | None:
    """Pooled between-launch sd of the logs over the sides with >= 2 launches."""
    ss, df = 0.0, 0
    for y in sides:
        if y.size >= 2:
            ss += float(((y - _mean(y)) ** 2).sum())
            df += y.size - 1
    return math.sqrt(ss / df) if df else None


def detectable_effect(sd_log: float | None, n_base: int, n_cand: int, alpha: float = 0.05,
                      power: float = POWER) -> float | None:
    """Smallest true difference, as |log gain| turned into a percentage (0.05 = a gain of
    1.05 or 1/1.05: symmetric for speedups and slowdowns), that the two-sided test
    compare() uses detects with probability `power` at these launch counts, for this
    between-launch sd on both sides (noncentral t, Cochran-Cox critical value)."""
    if sd_log is None or n_base < MIN_LAUNCHES or n_cand < MIN_LAUNCHES:
        return None
    v = sd_log * sd_log
    comps = ((v / n_base, n_base - 1), (v / n_cand, n_cand - 1))
    return _detectable(tuple(comps), alpha, power)


def detectable_at(t: LaunchTest, alpha: float, power: float = POWER) -> float | None:
    """The smallest difference (log-symmetric, as a percentage) the test t ran detects
    with probability `power` at another alpha (e.g. a Holm family's first step)."""
    if not t.tested or not t.components:
        return None
    plan, ns = tuple(t.planned_on), (t.n_base, t.n_cand)
    mix = _mix_plan(t, plan, ns)
    if mix:     # corrected as plan_boot corrects a 2-launch thin side (stop 43)
        return plan_boot(plan, ns, t.base_components or len(plan) // 2, alpha, power,
                         plan_floors(t), PLAN_BOOT_GRID, PLAN_BOOT_ABOVE, PLAN_BOOT_MAX_N,
                         PLAN_BOOT_DRAWS, mix)
    return _plan_figure(plan, ns, _expects(t.pooled, t.own_cell, t.pairing, plan, ns,
                                           t.base_components, t.own_expect),
                        t.base_components, alpha, power, plan_floors(t) if t.pooled else ())


def _mix_plan(t: LaunchTest, plan: tuple, ns: tuple) -> tuple:
    """(S, lo, hi, j) where a pooled unpaired cell without an own part is planned over
    SMALLER_MIX's mix (SMALLER_MIX_PLAN, _mix_draws): j its thin side, the smaller one
    (expect_thin's, or at 4-5 launches the one _mix_names names), SMALLER_MIX_MIN
    launches or more, unbalanced, FEW_CELLS sizes or more; else ()."""
    if not (SMALLER_MIX_PLAN and SMALLER_MIX) or not t.pooled or t.own_cell or \
            t.pairing != "none" or not unbalanced(*ns) or not t.parts:
        return ()
    k = t.base_components or len(plan) // 2
    j = expect_thin(plan, k)
    small = 0 if ns[0] < ns[1] else 1
    if j is None and _mix_names(ns[small], ns[1 - small], t.parts[small][4]):
        j = small       # 4-5 launches: the smaller side, named (review s42 R16)
    if j is None or ns[j] < SMALLER_MIX_MIN or ns[j] > ns[1 - j] or \
            t.parts[j][4] < FEW_CELLS:
        return ()
    return (float(t.parts[j][4]), *SMALLER_MIX, j)


def _expects(pooled: bool, own_cell: bool, pairing: str, plan: tuple = (),
             ns: tuple = (0, 0), k: int = 0, own_expect: bool = False) -> bool:
    """Whether a thin side may be planned by its expected power (_plan_figure's expect,
    plan_expect): a pooled, unpaired cell; with an own cell part only where _own_expect
    holds for the thin side (expect_thin of plan, k) and its launches (ns), or own_expect
    (LaunchTest.own_expect: the smaller side's mixed part)."""
    if not pooled or pairing != "none":
        return False
    if not own_cell:
        return True
    j = expect_thin(plan, k or len(plan) // 2)
    return j is not None and (own_expect or _own_expect(ns[j]))


def _plan_figure(plan: tuple, ns: tuple, expect: bool, k: int, alpha: float,
                 power: float, floors: tuple = ()) -> float | None:
    """The 'detectable' of planning components: plan_expect's, bootstrap-corrected
    (plan_boot, floors: plan_floors), where expect (pooled, unpaired) and a side is thin
    (expect_thin), else _detectable's."""
    k = k or len(plan) // 2
    if expect and expect_thin(plan, k) is not None:
        return plan_boot(plan, ns, k, alpha, power, floors, PLAN_BOOT_GRID, PLAN_BOOT_ABOVE,
                         PLAN_BOOT_MAX_N, PLAN_BOOT_DRAWS)
    return _detectable(plan, alpha, power)


def _detectable(components: tuple, alpha: float, power: float) -> float | None:
    """The detectable effect at these components, None where there is none: untestable,
    or a log-effect beyond MAX_LOG_EFFECT (1-2 df and a wide spread need a noncentrality
    in the thousands: expm1 overflowed, ending the time-to-decision bench's final plan)."""
    k = _power_delta(components, alpha, power)
    if k is None:
        return None
    log_effect = k * math.sqrt(sum(v for v, _ in components))
    return math.expm1(log_effect) if log_effect <= MAX_LOG_EFFECT else None


def launches_needed(sd_log: float | None, effect: float, alpha: float = 0.05,
                    power: float = POWER, max_n: int = 10_000) -> int | None:
    """Launches per side (equal, interleaved) for the two-sided test to detect a gain of
    1 + effect (effect < 0: a slowdown; log-symmetric, so -0.0909 needs what +0.10 needs)
    with probability `power`. None when the spread is unknown (fewer than two launches on
    every side) or more than max_n would be needed."""
    if sd_log is None or not effect or effect <= -1:
        return None
    target = abs(math.log1p(effect))
    if sd_log == 0:
        return MIN_LAUNCHES
    n = MIN_LAUNCHES
    while n <= max_n:
        d = detectable_effect(sd_log, n, n, alpha, power)
        if d is not None and math.log1p(d) <= target + 1e-12:
            return n
        n = n + 1 if n < 64 else int(n * 1.1)
    return None


# ---------------------------------------------------------------------------------------
# The hierarchical model: what a benchmark's sizes share

class Spread(NamedTuple):
    """One side's between-launch variance of the logs over a benchmark's cells, split as
    log y[L, s] = mu_s + u_L + v_L,s: u the launch effect every cell of the launch shares,
    v the cell-specific part (with the within-launch error).

    ms_launch: mean square of the launches' mean residuals, times the cells per launch;
    estimates cells * var(u) + var(v) with n - 1 df. ms_cell: the residual mean square
    after removing cell and launch means; estimates var(v) with (n - 1)(cells - 1) df.
    var(u) + var(v), the variance of one launch value, = ms_launch/S + ms_cell (S-1)/S:
    a sum of two independent mean squares, each with its own df."""
    ms_launch: float
    df_launch: float
    ms_cell: float
    df_cell: float
    cells: float          # mean number of cells per launch (S)
    launches: int
    # {cell key: CellPart (its cell part per launch, df)} where the sizes' cell parts differ
    # (moderated, stats.moderate; see spread): a cell's own part replaces the pooled
    # ms_cell (S - 1) / S. None: the sizes are alike, every cell takes the pooled part.
    cell_parts: Mapping[object, CellPart] | None = None
    # ((cell keys, their Spread), ...) where the block's sizes fall into regimes that do
    # not share the round effect (_regimes; paired only): a cell's components are its
    # regime's. (): one regime, this Spread for every cell.
    regimes: tuple[tuple[tuple, Spread], ...] = ()

    def for_cell(self, cell: object) -> tuple[int, Spread]:
        """(regime number, the Spread) that describes this cell: its regime's, else this."""
        for i, (keys, sp) in enumerate(self.regimes):
            if cell in keys:
                return i, sp
        return 0, self

    def components(self, n: int, cell: object = None) -> list[tuple[float, float]]:
        """Variance components of a cell's mean over n of these launches (cell: its key
        in the block spread() was given; None, or sizes alike: the pooled cell part)."""
        if self.regimes and cell is not None:
            _i, sp = self.for_cell(cell)
            if sp is not self:
                return sp.components(n, cell)
        s = self.cells
        out = [(self.ms_launch / s / n, self.df_launch)]
        own = self.own_part(cell)
        if own is not None:
            out.append((own[0] / n, own[1]))
        elif s > 1 and self.df_cell > 0:
            out.append((self.ms_cell * (s - 1) / s / n, self.df_cell))
        return out

    def own_part(self, cell: object = None) -> tuple[float, float] | None:
        """(cell part per launch, df) of this cell where it has its own (cell_parts), else
        None (the pooled part)."""
        if self.regimes and cell is not None:
            _i, sp = self.for_cell(cell)
            if sp is not self:
                return sp.own_part(cell)
        return self.cell_parts.get(cell) if self.cell_parts and cell is not None else None

    @property
    def sd(self) -> float:
        return math.sqrt(max(0.0, sum(v for v, _ in self.components(1))))

    def cell_sd(self, cell: object = None) -> float:
        """sd of one launch value of this cell (its own cell part where moderated)."""
        return math.sqrt(max(0.0, sum(v for v, _ in self.components(1, cell))))

    def shared(self, n: int) -> float:
        """Estimated var(u)/n: the variance of the launch effect a cell's mean over n
        launches shares with every other cell (ms_launch - ms_cell = S var(u) in
        expectation; clipped at 0)."""
        if self.cells <= 1 or self.df_cell <= 0:
            return 0.0
        return max(0.0, self.ms_launch - self.ms_cell) / self.cells / n


def spread(side: Mapping[object, Mapping[str, float]], moderate: bool = True,
           force: bool = False, own: bool = False, floor_own: bool = False
           ) -> Spread | None:
    """Spread of one side from {cell: {launch id: statistic}} (the cells of one benchmark;
    launches are matched by id across cells). None with fewer than two launches, or when
    the cells do not overlap enough to separate the two parts. moderate: each cell's own
    cell part where the sizes differ (Spread.cell_parts, _cell_parts); False: the pooled
    part for every cell (the model before). force: skip the Bartlett gate (the other side
    of the benchmark rejected it: compare_cells gates a benchmark once). own: every cell
    its own unmoderated part at any number of cells (no gate: both sides thin,
    gated_spreads). floor_own: an own part never below its w_s (_cell_parts; the paired
    spread, _diff_spread)."""
    return _spread_of(_residuals(side), moderate, force, own, floor_own)


class _Residuals(NamedTuple):
    """One side's logs centred once (_residuals), from which every Spread of it is made
    (spread with any of its flags, the outlying-size flag's sums, _own_for's parts)."""
    keys: list            # the cells kept (>= 2 launches), in the order of res's columns
    res: np.ndarray | None    # double-centred residuals, launch x cell, 0 where not
                              # observed; None with one cell
    obs: np.ndarray       # observed mask, launch x cell
    pooled: Spread        # the side's Spread without cell parts (spread(moderate=False))
    own_var: np.ndarray | None = None   # per cell the variance of its logs over its own
                                        # launches (n_s - 1 df): what its rounds alone say


def _content(side: Mapping[object, Mapping[Hashable, float | None]]) -> tuple | None:
    """side as a hashable key of its content, in order (None where a key or value is not
    hashable): _centred and _residuals are computed once per content. compare_cells asks
    the same side of a block several times (its Spread, its regimes, the hedge's cuts, the
    quiet blocks; stats.budget again); the arrays they share are read-only. The launch
    ids' types are part of the key (1 and True are equal but sort apart by str, which
    orders _centred's rows). The caches hold the last 16 sides each: the reuse is within
    one block, and a side costs ~100 bytes an observation (22 sizes x 1000 launches: ~2 MB)."""
    try:
        key = tuple((cell, tuple(by.items()), tuple(map(type, by)))
                    for cell, by in side.items())
        hash(key)
    except TypeError:
        return None
    return key


def _frozen(*arrays: np.ndarray | None) -> None:
    for a in arrays:
        if a is not None:
            a.flags.writeable = False


def _residuals(side: Mapping[object, Mapping[Hashable, float | None]]) -> _Residuals | None:
    """The side's decomposition (Spread): its logs centred per cell (_centred), then per
    launch; None where spread is None. Computed once per content (_content)."""
    key = _content(side)
    rs = (_residuals_of(_centred_of(by.items() for by in side.values())) if key is None
          else _residuals_cached(key))
    if rs is None:
        return None
    cells = list(side)           # the caller's own keys (1 and 1.0 are one cache key)
    return rs._replace(keys=tuple(cells[i] for i in rs.keys))


@functools.lru_cache(maxsize=16)
def _residuals_cached(content: tuple) -> _Residuals | None:
    return _residuals_of(_centred_cached(content))


def _residuals_of(centred: tuple[tuple, np.ndarray, np.ndarray] | None
                  ) -> _Residuals | None:
    """_residuals from the side's centring (_centred_at's), its keys the cells' positions."""
    if centred is None:
        return None
    keys, r, obs = centred
    n, s_cols = r.shape
    m, res, ms_cell, df_cell, s_bar = _two_way(r, obs)
    ms_launch = s_bar * float((m * m).sum()) / (n - 1)
    res = res if s_cols > 1 else None
    if not (s_cols > 1 and df_cell > 0):
        ms_cell, df_cell, s_bar = 0.0, 0, 1.0
        ms_launch = float((r[:, 0] ** 2).sum()) / (n - 1) if s_cols == 1 else ms_launch
    seen = np.where(obs, r, 0.0)
    own_var = (seen * seen).sum(axis=0) / np.maximum(obs.sum(axis=0) - 1, 1)
    _frozen(res, own_var)
    return _Residuals(tuple(keys), res, obs, Spread(ms_launch, n - 1, ms_cell, df_cell,
                                                   s_bar, n), own_var)


def _two_way(r: np.ndarray, obs: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, float, int, float]:
    """The two-way decomposition of r (launch x cell, centred per cell; obs its observed
    mask) that _residuals and the regime split (_round_means) share: (per-launch mean of
    its observed cells, NaN where none; residuals about it, 0 where not observed; ms_cell
    (0 without df); df_cell; s_bar, the mean cells per launch that has any)."""
    per_launch = obs.sum(axis=1)
    seen = per_launch > 0
    m = np.where(seen, np.nansum(r, axis=1) / np.maximum(per_launch, 1), np.nan)
    res = np.where(obs, r - m[:, None], 0.0)
    df_cell = int(obs.sum()) - int(seen.sum()) - r.shape[1] + 1
    ms_cell = float((res * res).sum()) / df_cell if df_cell > 0 else 0.0
    return m, res, ms_cell, df_cell, float(_mean(per_launch[seen]))


def _spread_of(rs: _Residuals | None, moderate: bool = True, force: bool = False,
               own: bool = False, floor_own: bool = False, ordered: bool = False
               ) -> Spread | None:
    """spread() from the side's _residuals (the flags as spread's). ordered: the cells are
    in size order (_cell_parts' trend, _trend_x); a paired spread (floor_own) always is."""
    if rs is None:
        return None
    sp = rs.pooled
    if not moderate or rs.res is None or sp.df_cell <= 0:
        return sp
    floors = rs.own_var - sp.ms_launch / sp.cells if floor_own else None
    return sp._replace(cell_parts=_cell_parts(rs.keys, rs.res, rs.obs, sp.ms_cell,
                                              sp.df_cell, sp.cells, force, own, floors,
                                              ordered or floor_own))


def _centred(side: Mapping[object, Mapping[Hashable, float | None]]
              ) -> tuple[list, np.ndarray, np.ndarray] | None:
    """(cell keys, logs centred per cell as launch x cell with NaN where a launch lacks
    the cell, observed mask) of one side, the cells with >= 2 launches and the launches
    with >= 1 of them; None below 2 launches. Computed once per content (_content); the
    arrays are read-only."""
    got = _centred_at(side)
    if got is None:
        return None
    cells = list(side)           # the caller's own keys (1 and 1.0 are one cache key)
    return [cells[i] for i in got[0]], got[1], got[2]


def _centred_at(side: Mapping[object, Mapping[Hashable, float | None]]
                ) -> tuple[tuple, np.ndarray, np.ndarray] | None:
    """_centred with the cells as their positions in side, computed once per content."""
    key = _content(side)
    return (_centred_of(by.items() for by in side.values()) if key is None
            else _centred_cached(key))


@functools.lru_cache(maxsize=16)
def _centred_cached(content: tuple) -> tuple[tuple, np.ndarray, np.ndarray] | None:
    return _centred_of(items for _cell, items, _types in content)


def _centred_of(cells: Iterable[Iterable[tuple[Hashable, float | None]]]
                ) -> tuple[tuple, np.ndarray, np.ndarray] | None:
    """_centred_at's work on each cell's (launch id, statistic) pairs, in side order."""
    keyed = [(pos, {k: math.log(v) for k, v in items
                    if v is not None and math.isfinite(v) and v > 0})
             for pos, items in enumerate(cells)]
    keyed = [(key, c) for key, c in keyed if len(c) >= 2]
    if not keyed:
        return None
    launches = sorted({k for _key, c in keyed for k in c}, key=str)
    if len(launches) < 2:
        return None
    index = {k: i for i, k in enumerate(launches)}
    r = np.full((len(launches), len(keyed)), np.nan)
    for j, (_key, c) in enumerate(keyed):
        vals = np.array(list(c.values()))
        r[[index[k] for k in c], j] = vals - _mean(vals)
    obs = ~np.isnan(r)
    keep = obs.sum(axis=1) > 0
    if int(keep.sum()) < 2:
        return None
    r, obs = r[keep], obs[keep]
    _frozen(r, obs)
    return tuple(key for key, _c in keyed), r, obs


def _cell_sums(rs: _Residuals | None) -> dict[object, tuple[float, float]]:
    """{cell key: (sum of squares of its double-centred residuals, n_s - 1)} of one side
    (what spread's w_s are made of: w_s = sum / df), {} where spread has no cell part."""
    if rs is None or rs.res is None or rs.res.shape[1] < MIN_MODERATE_CELLS:
        return {}
    res = rs.res
    return {key: (float(ss), float(d)) for key, ss, d in
            zip(rs.keys, (res * res).sum(axis=0), rs.obs.sum(axis=0) - 1.0, strict=True)}


def _side_weights(residuals: Sequence[_Residuals | None]) -> list[float]:
    """Per side, what _outlying_cells multiplies its sums of squares by: 1 where the sides'
    pooled cell parts (ms_cell) agree (Bartlett's test at SIDES_LEVEL, stats.moderate.alike
    over the sides), else 1 / its own ms_cell, so a side much noisier than the other does
    not carry the sizes' F tests on its df alone (its sums added raw flagged quiet sizes
    in 12-16% of benchmarks at the 10% level, one side 3x noisier). Standardised also
    where the sides agree, a 2-launch side's ms_cell on 9 df moved a planning test
    (docs/statistics.md)."""
    parts = [(rs.pooled.ms_cell, rs.pooled.df_cell) if rs is not None else (0.0, 0.0)
             for rs in residuals]
    usable = [(v, d) for v, d in parts if v > 0 and d > 0]
    if len(usable) < 2 or moderate_mod.alike([v for v, _d in usable], [d for _v, d in usable],
                                             moderate_mod.SIDES_LEVEL, min_groups=2):
        return [1.0] * len(parts)
    return [1.0 / v if v > 0 and d > 0 else 1.0 for v, d in parts]


def _outlying_cells(residuals: Sequence[_Residuals | None]) -> set:
    """The cells whose cell part is above the others' pooled one (stats.moderate.outlying,
    one-sided at OUTLYING_LEVEL; OUTLYING_THIN_LEVEL where a side has at most
    THIN_LAUNCHES launches), both sides' sums of squares and df added (each size's df
    scaled by (S - 1) / S for the sizes' shared centring, as the Bartlett gate's), from
    each side's _residuals; each side's sums divided by its pooled ms_cell first where the
    two sides' differ (_side_weights), else added raw."""
    tot: dict[object, list[float]] = {}
    for rs, weight in zip(residuals, _side_weights(residuals), strict=True):
        sums = _cell_sums(rs)
        for key, (ss, d) in sums.items():
            acc = tot.setdefault(key, [0.0, 0.0])
            acc[0] += ss * weight
            acc[1] += d * (len(sums) - 1) / len(sums)
    keys = list(tot)
    flags = moderate_mod.outlying([tot[k][0] for k in keys], [tot[k][1] for k in keys],
                                  _outlying_level(residuals))
    return {k for k, f in zip(keys, flags, strict=True) if f}


def flagged_cells(sides: Sequence[Mapping[object, Mapping[Hashable, float | None]]]) -> set:
    """The cells to which compare's test of these sides (given by their launches, the gate
    shut) gives their own part as above the others (_outlying_cells, as gated_spreads);
    set() below FEW_CELLS cells or with fewer than two sides. The budget's plan asks it
    where the gate stays shut (stats.budget.flagged_cells)."""
    if len(sides) < 2 or max((len(side) for side in sides), default=0) < FEW_CELLS:
        return set()
    return _outlying_cells([_residuals(side) for side in sides])


def _own_for(spreads: list, residuals: Sequence[_Residuals | None], keys: set) -> list:
    """Each side's Spread with a part of its own for the cells in `keys` only (the
    flagged ones, _outlying_cells); the others keep the pooled part. A flagged cell's
    part is estimated on the flag's model (_joint_parts): the size's noisiness relative
    to the others is one, shared by the sides (each side scaled as _side_weights scales
    it), estimated from both sides' sums of squares together. Each side's own 1-6 df
    (spread(own=True), the rule before) gave an alike size flagged by chance at 2-3 vs 7
    a thin-side part on 1-2 df: 0-20% power where its alike neighbours had 80%
    (docs/statistics.md "Sizes that are not equally noisy")."""
    joint = _joint_parts(spreads, residuals, keys)
    return [sp._replace(cell_parts=parts or None) for sp, parts in zip(spreads, joint,
                                                                         strict=True)]


def _joint_parts(spreads: list, residuals: Sequence[_Residuals | None], keys: set
                 ) -> list[dict]:
    """Per side, {cell: (own cell part per launch, df)} for the cells in `keys`: the
    cell's double-centred sums of squares of both sides added (weights _side_weights),
    over their df added, is the cell's tau^2 on the weights' scale; each side's tau^2 is
    that over its weight, its part tau^2 / (1 - 2/S) less the pooled term, as _cell_parts
    makes an own part. The two sides' parts are ONE estimate on D = the sides' df added:
    each side's df is D x (a^2 + b^2) / (a + b)^2 (a, b: the parts over the launches), so
    that the Welch-Satterthwaite df of their sum is D, not ~2D as two independent parts."""
    weights = _side_weights(residuals)
    sums = [_cell_sums(rs) for rs in residuals]
    level = _outlying_level(residuals)
    out: list[dict] = [{} for _ in spreads]
    for key in keys:
        have = [s.get(key) for s in sums]
        if any(h is None or h[1] <= 0 for h in have):
            continue
        if not _sides_agree([(w * ss, d) for w, (ss, d) in zip(weights, have, strict=True)],
                            level):
            for j, ((ss, d), sp) in enumerate(zip(have, spreads, strict=True)):
                out[j][key] = CellPart(max(0.0, _own_part(ss / d, sp)), min(d, sp.df_cell))
            continue
        df = sum(d for _ss, d in have)
        tau2 = sum(w * ss for w, (ss, _d) in zip(weights, have, strict=True)) / df
        parts = [max(0.0, _own_part(tau2 / w, sp)) for w, sp in zip(weights, spreads,
                                                                     strict=True)]
        se = [v / sp.launches for v, sp in zip(parts, spreads, strict=True)]
        share = sum(x * x for x in se) / sum(se) ** 2 if sum(se) > 0 else 1.0
        for j, v in enumerate(parts):
            out[j][key] = JointPart(v, min(df * share, spreads[j].df_cell))
    return out


class CellPart(NamedTuple):
    """A cell's own cell part per launch and its df (Spread.cell_parts)."""
    v: float
    df: float
    joint = False       # a flagged size's part from both sides' sums (JointPart)
    mixed = False       # the smaller side's own part mixed in (MixedPart)


class JointPart(CellPart):
    """A flagged size's part from both sides' sums (_joint_parts): _each_cell does not
    floor it at the other side's (floored, the thin side's part was judged on its
    launches' 1 df: not sharing launch effects, thin side 1/3 as noisy, 2 / 3 vs 7 x 10
    sizes, the reported 'detectable' had 73.9 / 72.4% true power), and the plan keeps its
    df (_plan_own_df)."""
    __slots__ = ()
    joint = True


class MixedPart(CellPart):
    """The smaller side's part of a size at an unbalanced design, its own part mixed in
    (_smaller_mixed): planned by plan_expect where that side is thin (_expects)."""
    __slots__ = ()
    mixed = True


def _sides_agree(sums: Sequence[tuple[float, float]], level: float) -> bool:
    """Whether two sides' (weighted) sums of squares of one cell, (ss, df) each, are
    consistent with one variance: the two-sided F test of their ratio at `level`."""
    from scipy.special import fdtr
    (a, da), (b, db) = sums
    if a <= 0 or b <= 0:
        return True
    p = float(fdtr(da, db, (a / da) / (b / db)))
    return 2.0 * min(p, 1.0 - p) >= level


def _outlying_level(residuals: Sequence[_Residuals | None]) -> float:
    """The outlying-size flag's level for these sides (_outlying_cells)."""
    thin = any(rs is not None and rs.pooled.launches <= THIN_LAUNCHES for rs in residuals)
    return moderate_mod.OUTLYING_THIN_LEVEL if thin else moderate_mod.OUTLYING_LEVEL


def _own_part(tau2: float, sp: Spread) -> float:
    """A cell's own cell part per launch from its residuals' variance tau^2 (_own_part_at
    on sp's S and ms_cell)."""
    return _own_part_at(tau2, sp.cells, sp.ms_cell)


def _own_part_at(tau2: float, cells: float, ms_cell: float) -> float:
    """tau^2 / (1 - 2/S) less 2 (S - 1) ms_cell / S^2 / (1 - 2/S), S = cells: the own
    cell part whose residuals have variance tau^2 (_cell_parts derives it)."""
    scale = 1.0 / (1.0 - 2.0 / cells)
    return tau2 * scale - 2.0 * (cells - 1.0) * ms_cell / cells ** 2 * scale


def gated_spreads(sides: Sequence[Mapping[object, Mapping[Hashable, float | None]]],
                  known: Sequence[tuple[float, float]] = (), thin: bool = True,
                  ordered: bool = False) -> list[Spread | None]:
    """Each side's Spread (spread) for one comparison of a benchmark's cells, the sizes
    gated ONCE for the comparison: from FEW_CELLS cells on, where any side's gate finds
    the sizes' cell parts unlike (its Spread has cell_parts), or the per-cell variances
    `known` of a side summarised without its launches ((variance of one launch, df) per
    cell, e.g. a stored reference's sd_log^2 with launches - 1 df) fail Bartlett's test
    (stats.moderate.alike), every side keeps its own (moderated) parts (spread(force=True)).
    Gated one side at a time, a noisy size whose own side's gate stayed closed took the
    pooled part: the other side's evidence that it is noisy was thrown away. Where every
    side has at most THIN_LAUNCHES launches (and `known` at most THIN_LAUNCHES - 1 df), no
    gate: every cell its own part (spread(own=True)); the gate on 1-2 df per size mostly
    stayed shut and a noisy size took the pooled part. Below FEW_CELLS each side as
    spread() makes it (every cell its own part). compare_cells and gate_reference call it; a paired block has one spread
    (of the round differences) and is gated once anyway. thin=False: no THIN_LAUNCHES
    rule (the gate as compare will ask it once the sides have more launches: the budget's
    plan beyond THIN_LAUNCHES from a thinner pilot). Where the gate stays shut, two sides
    given by their launches (no `known`, thin=True: compare's test, not the budget's plan
    of it) still give a size above the others (_outlying_cells) its own part (_own_for): one size
    2-3x noisier slipped through the gate. Each side is centred once (_residuals), every
    Spread of it made from that. ordered: every side's cells are in size order (compare_cells
    given sizes): the gate and prior follow a spread that grows with size (_trend_x).
    Last, where two sides given by their launches are unbalanced (unbalanced, the smaller
    side SMALLER_MIX_MIN launches or more), the smaller side's own part is mixed into each
    size's (_smaller_mixed)."""
    residuals = [_residuals(side) for side in sides]
    out = _gated(sides, residuals, known, thin, ordered)
    return _smaller_mixed(sides, residuals, out) if thin and not known else out


def _gated(sides: Sequence[Mapping[object, Mapping[Hashable, float | None]]],
           residuals: list, known: Sequence[tuple[float, float]], thin: bool,
           ordered: bool) -> list[Spread | None]:
    """gated_spreads without the smaller side's mix (_smaller_mixed), from the sides'
    residuals (_residuals, made once)."""
    out = [_spread_of(rs, ordered=ordered) for rs in residuals]
    cells = max((len(side) for side in sides), default=0)
    if cells < FEW_CELLS or any(s is None for s in out):
        return out
    if thin and all(s.launches <= THIN_LAUNCHES for s in out) and \
            all(d <= THIN_LAUNCHES - 1 for _v, d in known):
        return [_spread_of(rs, own=True) or s for s, rs in zip(out, residuals, strict=True)]
    differ = any(s.cell_parts for s in out)
    if not differ and len(known) >= moderate_mod.MIN_GROUPS:
        differ = not moderate_mod.alike([v for v, _d in known], [d for _v, d in known])
    if not differ:
        flagged = _outlying_cells(residuals) if thin and len(sides) > 1 and not known \
            else set()
        return _own_for(out, residuals, flagged) if flagged else out
    return [s if s.cell_parts else _spread_of(rs, force=True, ordered=ordered) or s
            for s, rs in zip(out, residuals, strict=True)]


# A size noisier only on the smaller side of an unbalanced comparison (3-5 vs 7 launches)
# escapes the outlying-size flag (both sides' sums: its df mostly the larger side's) in
# 10-60% of draws, and then keeps the pooled part, ~0.44x / 0.22x its true variance at
# 2x / 3x noise: 7-13% A/A false positives there (docs/statistics.md "Stop 37"). So each
# size of the smaller side whose own part (its own n - 1 df) is above the one it has gets
# w own + (1 - w) that one, w = 1 at its own F test's p (that side's sums against its
# other sizes', _side_ps) <= SMALLER_MIX[0], 0 at >= SMALLER_MIX[1], linear between; on
# the Welch-Satterthwaite df of that sum, 1e-6 lower (SMALLER_OWN_CC); where w = 1 (its
# own part alone) at most WELCH_MIN_DF less that, so Cochran-Cox: Welch on a dominant 3-4
# df part was liberal (4 v 7 3x 6.7% -> 6.3%; 5 v 7 3x 6.6% -> 5.65% over seeds 21-24).
# From SMALLER_MIX_MIN launches on the smaller side (2 since stop 43: its own part on 1 df,
# Cochran-Cox; 3x at 2 vs 7 9.7 -> 5.4%, UNBALANCED_FALSE_POSITIVES_2V7; alike sizes' raw
# power for a real 10% 14.2 -> 10.2%, seeds 21-22). A/A at the noisy size now 4.2-5.9% at
# 3-5 vs 7 (2x, 3x; today's 7-13%), the
# alike sizes' raw power for a real 10% 43.2 -> 34.2% (3 v 7), 66.7 -> 60.7% (4 v 7),
# 73.1 -> 68.4% (5 v 7). () = off (the rule before; bench_inference --plan-rule before42).
# Stop 42, docs/statistics.md "Sizes that are not equally noisy".
SMALLER_MIX: tuple = (0.10, 0.60)
SMALLER_MIX_MIN = 2
SMALLER_OWN_CC = 1e-6


def _smaller_mixed(sides: Sequence[Mapping[object, Mapping[Hashable, float | None]]],
                   residuals: list, out: list) -> list:
    """gated_spreads' Spreads with the smaller side's own parts mixed in (SMALLER_MIX)
    where an unpaired comparison of FEW_CELLS sizes or more is unbalanced; else out.
    residuals: the sides' (_residuals, gated_spreads' own)."""
    if not SMALLER_MIX or len(sides) != 2 or any(sp is None for sp in out) or \
            max(len(side) for side in sides) < FEW_CELLS or \
            not unbalanced(out[0].launches, out[1].launches):
        return out
    j = 0 if out[0].launches < out[1].launches else 1
    sp = out[j]
    if sp.launches < SMALLER_MIX_MIN:
        return out
    parts = dict(sp.cell_parts or {})
    pooled = CellPart(sp.ms_cell * (sp.cells - 1) / sp.cells, sp.df_cell)
    sums, ps = _side_ps(residuals[j])
    lo, hi = SMALLER_MIX
    for key, p in ps.items():
        w = min(1.0, max(0.0, (hi - p) / (hi - lo)))
        ss, d = sums[key]
        mine, cur = max(0.0, _own_part(ss / d, sp)), parts.get(key, pooled)
        if w > 0.0 and mine > cur.v:
            a, b = w * mine, (1.0 - w) * cur.v
            df = (a + b) ** 2 / (a * a / min(d, sp.df_cell) + (b * b / cur.df if b > 0 else 0.0))
            if w >= 1.0:        # an own part alone: Cochran-Cox (cap3: 5 v 7 3x 6.6 -> 5.65%)
                df = min(df, WELCH_MIN_DF)
            parts[key] = MixedPart(a + b, df - SMALLER_OWN_CC)
    return [sp._replace(cell_parts=parts or None) if i == j else s for i, s in enumerate(out)]


def _side_ps(rs: _Residuals | None) -> tuple[dict, dict]:
    """(_cell_sums of one side, {cell: the one-sided p of its sums on that side alone
    against its other cells' pooled ones}): stats.moderate.outlying's F test, df scaled as
    _outlying_cells scales them, as a p rather than a flag at one level."""
    from scipy.special import fdtrc
    sums = _cell_sums(rs)
    keys, s = list(sums), len(sums)
    ss = np.array([sums[k][0] for k in keys])
    d = np.array([sums[k][1] * (s - 1) / s for k in keys])
    rest_ss, rest_d = ss.sum() - ss, d.sum() - d
    with np.errstate(divide="ignore", invalid="ignore"):
        ps = fdtrc(d, rest_d, (ss / d) / (rest_ss / rest_d))
    return sums, {k: float(p) for k, p in zip(keys, ps, strict=True) if np.isfinite(p)}


def _cell_parts(keys: list, res: np.ndarray, obs: np.ndarray, ms_cell: float,
                df_cell: float, s_bar: float, force: bool = False, own_all: bool = False,
                floor_own: np.ndarray | None = None, ordered: bool = False) -> dict | None:
    """Each cell's own cell part, moderated toward the others' (stats.moderate), or None
    where the sizes' parts look alike (prior df infinite: the pooled ms_cell for all).

    With v[L, s] ~ N(0, sigma_s^2) (the cell part, its variance now per size), a cell's
    double-centred residuals over its n_s launches have variance
    tau_s^2 = sigma_s^2 (1 - 2/S) + mean(sigma^2)/S, w_s = their sum of squares / (n_s - 1)
    its estimate with n_s - 1 df; the cell's mean over n launches has variance
    (ms_launch/S + sigma_s^2 - mean(sigma^2)/S) / n, so its own cell part is
    sigma_s^2 - mean(sigma^2)/S = (tau_s^2 - 2 (S - 1) ms_cell / S^2) / (1 - 2/S), which for
    sizes alike is today's ms_cell (S - 1)/S. The w_s are moderated (Smyth's prior from
    their spread), the df of each part the posterior's, at most the pooled df_cell. Needs
    MIN_MODERATE_CELLS cells (with 2 the two cells' residuals are the same up to sign).
    Below FEW_CELLS cells there is no gate and no moderation: each cell its own w_s with
    n_s - 1 df (with 3-5 sizes neither the gate nor the prior can tell a noisy size),
    also with 2-3 launches (1-2 df: Cochran-Cox on them, conservative; gated, Bartlett
    on 1-2 df per size almost never rejected and a noisy size among 3-5 took the pooled
    part: 8-21% false positives there at 2+2, 3+3, 2 vs 7, 3 vs 7).
    force: moderate without the gate (the benchmark's other side rejected it; a paired quiet
    block, _quiet_spreads, where with floor_own below FEW_CELLS every size is kept). own_all:
    every cell its own w_s with n_s - 1 df at any number of cells (a comparison of thin
    sides, gated_spreads). floor_own (paired: per cell its own rounds' variance less the
    round part, ms_launch / S): an own part at least its w_s, not 0, and one the prior
    keeps (robust) at least that floor too. ordered: keys in size order, so a slope of the
    w_s over the sizes opens the gate and centres the prior (_trend_x); the neighbours'
    outlying pairs stay paired-only (floor_own)."""
    s = res.shape[1]
    if s < MIN_MODERATE_CELLS or s_bar < MIN_MODERATE_CELLS:
        return None
    d = obs.sum(axis=0) - 1.0
    if np.any(d < 1):
        return None
    w = (res * res).sum(axis=0) / d
    kept = np.zeros(s, dtype=bool)
    if s < FEW_CELLS or own_all:
        own = np.ones(s, dtype=bool)
        shrunk = [(float(wi), float(di)) for wi, di in zip(w, d, strict=True)]
        # a paired quiet block (force: _quiet_spreads) below FEW_CELLS: each size kept
        kept = own if force and floor_own is not None else kept
    else:
        pairs = _gate(w, d, force, ordered, floor_own is not None)
        if pairs is None:
            return None
        x = _trend_x(w, d, ordered)
        d0, s0, own = moderate_mod.robust(w, d, x=x)
        own = own | pairs
        if math.isinf(d0) and not own.any() and not force and x is None:
            return None
        shrunk = _trend_dfs(moderate_mod.moderated(w, d, d0, s0), d, d0, x)
        kept = own if floor_own is not None else kept
    least = np.where(kept, floor_own if floor_own is not None else 0.0, 0.0)
    out = {}
    for key, wi, di, o, (tau2, df), fl in zip(keys, w, d, own, shrunk, least, strict=True):
        if o:
            tau2, df = float(wi), float(di)
        # tau2's df is kept: Satterthwaite's df of the difference (tau2 scaled less the
        # pooled term) was measured and is far too conservative (5+5 unpaired, one size
        # 6x noisier, 3-8 sizes: A/A FP 0.1-4.6%, power at the quiet sizes for a 10%
        # gain 53.5% -> 15.2% at 8 sizes) where tau2's df keeps every size at <= 5.7%
        # floor_own (the paired spread): a size's own part never below its own tau2
        # (own part - tau_s^2 = 2 (sigma_s^2 - mean(sigma^2)) / S: unbiased for alike
        # sizes, conservative by at most 2 mean(sigma^2)/S for a quiet one). Clipped at 0,
        # an own part on 2 df (3 rounds) was 0 in 1 - exp(-2/S) of alike cells and the
        # cell's se only the round part's ~1/sqrt(S). Unpaired thin sides keep the clip:
        # each side's launch part on 1-2 df keeps them at alpha; the floor cost power
        # A size the prior keeps as its own (noisier than the rest) is never tested
        # narrower than its own rounds say (floor_own: their variance less the round
        # part). In a paired noisy minority (run-12's 4 of 11 sizes, 5 rounds) w_s less
        # the pooled term the noisy sizes make left 46% of kept cells narrower than
        # that; floored, the noisy sizes' A/A 8.0% -> 7.4% (docs/statistics.md)
        part = max(_own_part_at(tau2, s_bar, ms_cell),
                   tau2 if o and floor_own is not None else 0.0, float(fl))
        out[key] = CellPart(part, min(df, df_cell))
    return out


def _gate(w: np.ndarray, d: np.ndarray, force: bool, ordered: bool, paired: bool = True
          ) -> np.ndarray | None:
    """_cell_parts' gate: None where the sizes keep the pooled part (Bartlett's test keeps
    them alike and, ordered (its cells in size order), their w_s have no significant
    slope over the sizes (_trend_x) and, paired too, no two neighbours are outlying
    together: moderate.outlying_pairs), else the cells that keep their own part whatever
    the prior says (the flagged pairs; none where Bartlett or the slope rejects)."""
    none = np.zeros(w.size, dtype=bool)
    scaled = d * (w.size - 1) / w.size
    if force or not moderate_mod.alike(w, scaled) or _trend_x(w, d, ordered) is not None:
        return none
    pairs = moderate_mod.outlying_pairs(w * scaled, scaled) if ordered and paired else none
    return pairs if pairs.any() else None


def _trend_x(w: np.ndarray, d: np.ndarray, ordered: bool) -> np.ndarray | None:
    """The cells' positions 0, 1, ... (size order) where the block is ordered (paired:
    _diff_side puts its cells in size order) and log w_s has a slope over them at
    moderate.TREND_LEVEL (trend_p on the df _gate gives Bartlett's test); else None (the
    flat prior). A spread that grows with size then opens the gate and is moderated
    toward its own level, not the block's (docs/statistics.md "Spreads that grow with
    size")."""
    if not ordered or moderate_mod.TREND_LEVEL <= 0:
        return None
    x = np.arange(w.size, dtype=float)
    p = moderate_mod.trend_p(w, d * (w.size - 1) / w.size, x)
    return x if p < moderate_mod.TREND_LEVEL else None


def _trend_dfs(shrunk: list[tuple[float, float]], d: np.ndarray, d0: float,
               x: np.ndarray | None) -> list[tuple[float, float]]:
    """The moderated parts' df on a trended prior (x not None): each size's d_g plus at
    most what the trend knows at its x: the df of a variance whose log is as uncertain as
    the trend's there, h_g trigamma(mean(d) / 2) (h_g: the trend's leverage,
    moderate.trend_fit; log_df), not d0 + d_g with d0 up to infinite (a pooled variance
    over G sizes knows ~G mean(d), a trend at its ends several times less). Unchanged
    without a trend."""
    if x is None:
        return shrunk
    lev = moderate_mod.trend_fit(np.zeros(x.size), x, x)[1]
    lev = lev / (1.0 - np.minimum(lev, 0.95))   # the leave-one-out trend's (trend_prior)
    line_df = moderate_mod.log_df(lev * moderate_mod.log_var(float(d.mean())))
    return [(v, di + min(d0, ld)) for (v, _df), di, ld in zip(shrunk, d, line_df, strict=True)]


def _oriented_logs(by: Mapping[str, float | None], sign: float) -> dict[str, float]:
    return {k: sign * math.log(v) for k, v in by.items()
            if v is not None and math.isfinite(v) and v > 0}


def compare_cells(cells: Sequence[tuple[Mapping[str, float | None], Mapping[str, float | None],
                                        str]],
                  alpha: float = 0.05, level: float = 0.95, pool: bool = True,
                  rounds: Mapping[Hashable, Hashable] | None = None,
                  sizes: Sequence | None = None,
                  cut: Sequence[Collection[Hashable]] | None = None) -> list[LaunchTest]:
    """Tests of the cells of one benchmark (its sizes), each (baseline {launch id: stat},
    candidate {launch id: stat}, better), under the hierarchical model (Spread): each side's
    between-launch variance is pooled over the cells, split into the launch effect the
    cells share (n - 1 df) and the cell-specific part ((n - 1)(S - 1) df). With 2-3 launches
    the cell-specific part then has many df; the shared part keeps the launches' own
    df, since no number of sizes tells more about a launch effect they all share. The
    reference distribution is Cochran-Cox's weighted t over the four components (see
    cochran_cox_crit). A side with 2-3 launches never has a launch part, or a cell's own
    part, below the other side's (floor_component). pool=False, or a side whose cells cannot be pooled, tests each
    cell on its own launches (the same weighted t with one component per side).

    rounds: {launch id: its round key} for the launches that ran in a round of an
    interleaved campaign (report.data: (campaign id, repeat index)); launches absent from
    it have no round. When every cell of the block has at least MIN_PAIRS complete pairs
    (pair_rounds), the block is tested paired (paired_test: the per-round differences,
    their spread pooled over the sizes the same way); otherwise as above, unchanged.
    sizes: the cells' message sizes (their order); the paired block's round regimes
    (_regimes) are contiguous runs of the sizes ascending, whatever the cells' order
    (without sizes: the cells' order). Unpaired, the same cut finds launch regimes
    (_unpaired_regimes), each tested as a block of its own.
    cut: per cell, the ids of its launches (either side) the core cut short
    (stats.preempted.cut_short: stopped `preempted` on fewer than FEW_CLEAN clean samples,
    or a preempted skip); a cell with any is tested on its own launches and the other
    cells without it (_cut_blocks; docs/statistics.md "Preempted samples"). Callers pass
    the launches, not the rule: a look that sees fewer rounds passes fewer ids."""
    if cut is not None:
        return _cut_blocks(cells, cut, alpha, level, pool, rounds, sizes)
    paired = pair_rounds(cells, rounds)
    if paired is not None:
        return _paired_cells(cells, paired, alpha, level, pool, _size_order(sizes, len(cells)))
    groups = _unpaired_regimes(cells, _size_order(sizes, len(cells))) if pool else []
    if len(groups) > 1:
        return _regime_blocks(cells, groups, alpha, level, sizes is not None)
    return _unpaired_block(cells, alpha, level, pool, _size_order(sizes, len(cells)))


def _cut_blocks(cells, cut: Sequence[Collection[Hashable]], alpha: float, level: float,
                pool: bool, rounds, sizes) -> list[LaunchTest]:
    """compare_cells with the cells that name a cut-short launch (cut[i] not empty) each
    in a block of its own and the others in one block (first); the tests in the cells'
    order."""
    if len(cut) != len(cells):
        raise ValueError(f"compare_cells: cut names the cut-short launches of {len(cut)} "
                         f"cells, expected one entry per cell ({len(cells)})")
    _size_order(sizes, len(cells))          # sizes name every cell, or a clear error
    rest = [i for i, ids in enumerate(cut) if not ids]
    out: list = [None] * len(cells)
    for idx in ([rest] if rest else []) + [[i] for i, ids in enumerate(cut) if ids]:
        sub = None if sizes is None else [sizes[i] for i in idx]
        tests = compare_cells([cells[i] for i in idx], alpha, level, pool, rounds, sub)
        for i, t in zip(idx, tests, strict=True):
            out[i] = t
    return out


def _unpaired_block(cells, alpha: float, level: float, pool: bool,
                    order: Sequence[int] | None = None) -> list[LaunchTest]:
    """compare_cells' unpaired test of one block (or one launch regime of it); order: the
    cells' indices by size (_size_order), None without sizes (no trend: gated_spreads)."""
    idx = list(range(len(cells))) if order is None else list(order)
    sides = [{i: cells[i][j] for i in idx} for j in (0, 1)]
    spreads = gated_spreads(sides, ordered=order is not None) if pool and len(cells) > 1 \
        else [None, None]
    if any(s is None for s in spreads):
        spreads = [None, None]
    plan = _plan_sides(spreads)
    spreads = _each_side(spreads, floor_component)
    out: list[LaunchTest] = []
    for i, (base, cand, better) in enumerate(cells):
        sign = -1.0 if better == "lower" else 1.0
        yb = np.array(list(_oriented_logs(base, sign).values()))
        yc = np.array(list(_oriented_logs(cand, sign).values()))
        out.append(_test_cell(yb, yc, spreads, alpha, level, plan, cell=i))
    return _fill_p(out)


# Launch regimes, unpaired: a launch effect only some of a benchmark's sizes share (the
# Open MPI vs MPICH PingPong store: sd ~0.37 at 0 B-8 KiB, ~0.11 above) split as the paired
# model's round regimes (_regimes: one rule), on both sides' residuals together, each side
# centred per cell first (no gain enters the split); each regime is then tested as a block
# of its own (_unpaired_block: its own gate, floors and planning), thin sides too (3 vs
# 7: 9.9% A/A at the sharing sizes with one Spread per side, 2.1% cut; docs/statistics.md).

def _unpaired_regimes(cells, order: Sequence[int] | None) -> list[list[int]]:
    """The cells' indices in launch regimes (size order); one list where no cut passes
    or below 2 * MIN_REGIME_CELLS cells."""
    idx = list(range(len(cells))) if order is None else list(order)
    joint: dict[int, dict] = {i: {} for i in idx}
    for j in (0, 1):
        for i in idx:
            logs = _oriented_logs(cells[i][j], 1.0)
            mu = sum(logs.values()) / len(logs) if logs else 0.0
            joint[i].update({(j, str(k)): math.exp(v - mu) for k, v in logs.items()})
    if len(idx) < 2 * MIN_REGIME_CELLS:
        return [idx]
    groups = _regimes(joint, centres=2)
    return groups if sorted(i for g in groups for i in g) == sorted(idx) else [idx]


def _regime_blocks(cells, groups: list[list[int]], alpha: float, level: float,
                   ordered: bool = False) -> list[LaunchTest]:
    out: list = [None] * len(cells)
    for r, g in enumerate(groups):
        block = _unpaired_block([cells[i] for i in g], alpha, level, True,
                                list(range(len(g))) if ordered else None)
        for i, t in zip(g, block, strict=True):
            out[i] = t._replace(regime=r)
    return out


def _fill_p(out: list[LaunchTest]) -> list[LaunchTest]:
    """p: one vectorised inversion per set of components (a benchmark's cells share them)."""
    todo: dict[tuple, list[int]] = {}
    for i, t in enumerate(out):
        if t.tested and t.p is None and t.se_log:
            todo.setdefault(t.components, []).append(i)
    for comps, idx in todo.items():
        ps = two_sided_p(np.array([out[i].diff_log / out[i].se_log for i in idx]), comps)
        for i, p in zip(idx, ps, strict=True):
            out[i] = out[i]._replace(p=float(p))
    return out


def _test_cell(yb: np.ndarray, yc: np.ndarray, spreads, alpha: float,
               level: float, plan_spreads=(None, None), cell: object = None) -> LaunchTest:
    nb, nc = int(yb.size), int(yc.size)
    if nb == 0 or nc == 0:
        return LaunchTest(None, None, None, None, nb, nc, False, Untested.NO_STATISTIC.value,
                          untested=Untested.NO_STATISTIC)
    diff = float(_mean(yc) - _mean(yb))
    point = math.exp(diff)
    sd = pooled_sd(yb, yc)
    if nb < MIN_LAUNCHES or nc < MIN_LAUNCHES:
        return LaunchTest(point, None, None, None, nb, nc, False,
                          f"{Untested.TOO_FEW_LAUNCHES} ({nb}+{nc}; a test needs >= "
                          f"{MIN_LAUNCHES} per side)", sd, diff_log=diff, untested=Untested.TOO_FEW_LAUNCHES)
    pooled = spreads[0] is not None
    if pooled:
        comps = spreads[0].components(nb, cell) + spreads[1].components(nc, cell)
        plan = _plan_cell(plan_spreads, (nb, nc), cell)
        sd = math.sqrt(0.5 * (spreads[0].cell_sd(cell) ** 2 + spreads[1].cell_sd(cell) ** 2))
    else:
        vb, vc = float(yb.var(ddof=1)), float(yc.var(ddof=1))
        (fb, db), (fc, dc) = (floor_component(vb, nb - 1, vc, nc - 1),
                              floor_component(vc, nc - 1, vb, nb - 1))
        comps = [(fb / nb, db), (fc / nc, dc)]
        (pb, _), (pc, _) = (plan_component(vb, nb - 1, vc, nc - 1),
                            plan_component(vc, nc - 1, vb, nb - 1))
        plan = [(pb / nb, nb - 1), (pc / nc, nc - 1)]
    shared = spreads[0].shared(nb) + spreads[1].shared(nc) if pooled else 0.0
    parts = tuple(_parts(sp, n) for sp, n in ((spreads[0], nb), (spreads[1], nc))) \
        if pooled else ()
    own = pooled and any(sp.own_part(cell) is not None for sp in spreads)
    return _tested(diff, (nb, nc), sd, tuple(comps), pooled, shared, parts, alpha, level,
                   plan_components=planning_components(tuple(comps), tuple(plan)),
                   base_components=len(spreads[0].components(nb, cell)) if pooled else 0,
                   own_cell=own, own_expect=own and any(_mixed_expect(sp, cell)
                                                        for sp in spreads))


def planning_components(comps: tuple, plan: tuple) -> tuple:
    """The components `detectable` plans on (plan_component's, or () when they are the
    test's own components)."""
    return () if plan == comps or len(plan) != len(comps) else plan


def _tested(diff: float, ns: tuple[int, int], sd: float, comps: tuple, pooled: bool,
            shared: float, parts: tuple, alpha: float, level: float,
            **extra) -> LaunchTest:
    """A tested cell from its mean log difference and the variance components of that
    mean (unpaired: both sides'; paired: the round differences'): the CI at `level` from
    the components' Cochran-Cox / Welch critical value, the shared part, and alpha for
    the detectable effect (LaunchTest.plan_alpha: computed when read). p is left None:
    compare_cells fills it, vectorised over the cells."""
    point = math.exp(diff)
    se2 = sum(v for v, _ in comps)
    df = _satterthwaite(comps)
    if se2 <= 0:
        # every launch of both sides gave the same value: no spread to test against
        p = 1.0 if diff == 0 else None
        return LaunchTest(point, point, point, p, *ns, p is not None,
                          "" if p is not None else Untested.NO_SPREAD.value, sd, None,
                          df, diff, 0.0, comps, pooled,
                          None if p is not None else Untested.NO_SPREAD, **extra)
    se = math.sqrt(se2)
    h = _crit(comps, (1.0 - level) / 2.0) * se
    return LaunchTest(point, _exp(diff - h), _exp(diff + h), None, *ns, True, "", sd,
                      alpha, df, diff, se, comps, pooled, shared_var=min(shared, se2),
                      parts=parts, **extra)


def _parts(sp: Spread, n: int) -> tuple[float, float, float, float, float]:
    """The POOLED parts of a side (LaunchTest.parts), whatever this cell's own part."""
    c = sp.components(n)
    lv, dl = c[0]
    cv, dc = c[1] if len(c) > 1 else (0.0, 0.0)
    return (lv, dl, cv, dc, sp.cells)


# ---------------------------------------------------------------------------------------
# Round pairing: launches run back-to-back in the same round of an interleaved campaign
#
# On a shared machine the largest launch effects are phases of the machine (load, where the
# host puts the vCPUs) that hit every launch of a round alike: this project's 2-core VM is
# two-mode by a factor of ~3, both stacks in the same mode in 5 of 6 rounds. The unpaired
# model counts such an effect on both sides as two independent draws. Paired by round, the
# per-round difference
#
#     d[r, s] = oriented log(cand[r, s]) - log(base[r, s]) = mu_s + e_r + v[r, s]
#
# removes what both launches of the round share; e_r is the round's differential every
# size of the benchmark shares (n - 1 df), v the cell part ((n - 1)(S - 1) df), split by
# the same Spread as one side of the unpaired model, so the closed tests, the maxT
# correlation, TOST, the CI at any level and the planning all work unchanged on it. The
# test is valid whatever the round effects are (the rounds are independent replicates of
# the difference); where nothing is shared it only loses the df of one side's launches.

def pair_rounds(cells: Sequence[tuple[Mapping[Hashable, float | None],
                                      Mapping[Hashable, float | None], str]],
                rounds: Mapping[Hashable, Hashable] | None, more_rounds: int = 0
                ) -> list[tuple[dict[Hashable, tuple[Hashable, Hashable]], int]] | None:
    """The one rule of when a block (a benchmark's cells, or the rows of a geomean row or
    verdict) is tested paired by round: per cell ({round: (baseline launch id, candidate
    launch id)}, launches left without a partner), or None for the unpaired model.

    A pair is a round (rounds[launch id]: e.g. (campaign id, repeat index), given only for
    launches of interleaved campaigns) with exactly one usable launch (finite, > 0) on each
    side; a round holding two launches of one side pairs neither. Launches without a
    round key or a partner are left out of the paired test and counted. Paired when every
    cell that has launches on both sides has at least MIN_PAIRS pairs (counts only, never
    values: the choice cannot select a test by its result); else None.

    more_rounds: rounds still to run before the test (a plan's projection, stats.budget),
    each counted as one more pair in every cell; 0 (compare) judges the launches given."""
    if not rounds or not cells:
        return None
    out = []
    for base, cand, _better in cells:
        pairs, usable, both = cell_pairs(base, cand, rounds)
        if not both:
            out.append(({}, usable))
            continue
        if len(pairs) + max(0, more_rounds) < MIN_PAIRS:
            return None
        out.append((pairs, usable - 2 * len(pairs)))
    if not any(p for p, _ in out):
        return None
    return out


def cell_pairs(base: Mapping[Hashable, float | None], cand: Mapping[Hashable, float | None],
               rounds: Mapping[Hashable, Hashable]
               ) -> tuple[dict[Hashable, tuple[Hashable, Hashable]], int, bool]:
    """One cell's pairs as pair_rounds makes them: ({round: (baseline launch id, candidate
    launch id)} over the rounds with exactly one usable launch (finite, > 0) on each side,
    the usable launches counted, whether both sides have any)."""
    sides = []
    for side in (base, cand):
        by: dict[Hashable, list[Hashable]] = {}
        for k, v in side.items():
            if v is None or not math.isfinite(v) or v <= 0:
                continue
            by.setdefault(rounds.get(k), []).append(k)
        sides.append(by)
    usable = sum(len(v) for by in sides for v in by.values())
    pairs = {r: (sides[0][r][0], sides[1][r][0]) for r in sides[0]
             if r is not None and r in sides[1] and len(sides[0][r]) == 1
             and len(sides[1][r]) == 1}
    return pairs, usable, bool(sides[0] and sides[1])


def _round_diffs(cells, paired) -> list[dict[Hashable, float]]:
    """Per cell {round: oriented log(cand) - log(base)} over its pairs."""
    out = []
    for (base, cand, better), (pairs, _left) in zip(cells, paired, strict=True):
        sign = -1.0 if better == "lower" else 1.0
        out.append({r: sign * (math.log(cand[c]) - math.log(base[b]))
                    for r, (b, c) in pairs.items()})
    return out


def pair_spread(cells: Sequence[tuple[Mapping[Hashable, float | None],
                                      Mapping[Hashable, float | None], str]],
                rounds: Mapping[Hashable, Hashable] | None) -> Spread | None:
    """The Spread of a block's per-round differences (the paired model's variance
    components: ms_launch the round differential the sizes share, ms_cell the cell part),
    or None where the block is not paired (pair_rounds). For planning (stats.budget): a
    paired cell's mean over n rounds has the variance components .components(n), tested
    as paired_test tests them."""
    paired = pair_rounds(cells, rounds)
    if paired is None:
        return None
    return _diff_spread(_round_diffs(cells, paired))


def _size_order(sizes: Sequence | None, n: int) -> list[int] | None:
    """The cells' indices by size ascending (None sizes last, unorderable ones by str),
    None without sizes; ValueError where sizes does not name every cell."""
    if sizes is None:
        return None
    if len(sizes) != n:
        raise ValueError(f"compare_cells: {len(sizes)} sizes for {n} cells")
    try:
        return sorted(range(n), key=lambda i: (sizes[i] is None, sizes[i] or 0))
    except TypeError:
        return sorted(range(n), key=lambda i: (sizes[i] is None, str(sizes[i])))


def _diff_spread(diffs: list[dict[Hashable, float]],
                 order: Sequence[int] | None = None) -> Spread | None:
    """Spread of per-round differences (spread takes statistics and logs them). With at
    most THIN_LAUNCHES rounds every cell keeps its own part, as gated_spreads does for
    thin unpaired sides (3 rounds, 8 sizes, one 6x noisier: the gate on 2 df per size
    gave it 26.5% A/A false positives, its own part 5.0%). Where the sizes fall into
    regimes that do not share the round effect (_regimes), each regime its own Spread
    (Spread.regimes), made the same way from its cells alone. order: the cells' indices
    in size order, the order the regimes are cut in (None: diffs' order)."""
    side, own = _diff_side(diffs, order)
    whole = spread(side, own=own, floor_own=True)
    groups = _regimes(side) if whole is not None else []
    if len(groups) < 2:
        return whole
    parts = [(tuple(g), spread({k: side[k] for k in g}, own=own, floor_own=True))
             for g in groups]
    if any(sp is None for _g, sp in parts):
        return whole
    return whole._replace(regimes=tuple(parts))


def _diff_side(diffs: list[dict[Hashable, float]], order: Sequence[int] | None
               ) -> tuple[dict, bool]:
    """(the differences as spread() takes a side, in size order; whether every cell
    keeps its own part: at most THIN_LAUNCHES rounds)."""
    own = len({r for d in diffs for r in d}) <= THIN_LAUNCHES
    side = {i: {r: math.exp(v) for r, v in diffs[i].items()}
            for i in (range(len(diffs)) if order is None else order)}
    return side, own


def hedge_runs(diffs: list[dict[Hashable, float]], order: Sequence[int] | None = None
               ) -> list[list[int]]:
    """The runs (cell indices, in size order) of every cut _split_runs could try (each
    run at least MIN_REGIME_CELLS cells) whose Bonferroni p is below HEDGE_LEVEL, whether
    or not it passes REGIME_LEVEL, two per cut, the best cut first; [] below 2 *
    MIN_REGIME_CELLS cells, with no cut below HEDGE_LEVEL or where REGIME_LEVEL is 0
    (never cut: no hedge). The runs an uncut block's cells hedge with (_paired_cells),
    and stats.budget plans on."""
    return _hedge_runs_of(_diff_side(diffs, order)[0])


def _hedge_runs_of(side: dict) -> list[list[int]]:
    """hedge_runs on the differences as _diff_side gives them."""
    centred = _centred(side) if REGIME_LEVEL > 0 else None
    if centred is None:
        return []
    keys, r, _obs = centred
    out: list[list[int]] = []
    for p, k in sorted(_cut_ps(r, list(range(len(keys))))):
        if p < HEDGE_LEVEL:
            out += [list(keys[:k]), list(keys[k:])]
    return out


def _hedge_spreads(diffs: list[dict[Hashable, float]], order: Sequence[int] | None
                   ) -> dict[int, list[Spread]]:
    """{cell: the Spreads of the runs holding it} at the hedge's cuts (hedge_runs); {}
    without one."""
    side, own = _diff_side(diffs, order)
    out: dict[int, list[Spread]] = {}
    for run in _hedge_runs_of(side):
        sp = spread({c: side[c] for c in run}, own=own, floor_own=True)
        if sp is None:
            return {}
        for c in run:
            out.setdefault(c, []).append(sp)
    return out


# Round regimes: a benchmark's sizes split into contiguous runs (of its sizes ascending:
# compare_cells' sizes; without them the cells' order) that do not share the round effect, e.g. a machine phase that moves the
# small sizes only. A split is kept where the two runs' per-round means differ by more
# than their cell parts explain (_split_p) at REGIME_LEVEL, Bonferroni over the candidate
# split points, each run at least MIN_REGIME_CELLS cells; then each run is split again.
# Only the residuals about each cell's mean decide it, never the cells' means.
REGIME_LEVEL = 0.01
MIN_REGIME_CELLS = 3
# An uncut block hedges with every cut whose Bonferroni p is below this (_paired_cells;
# 0: no hedge). With the best cut alone at 0.25 (stop 30) the moved sizes of
# docs/statistics.md's intermediate contrast were at 6.6% A/A at 5 rounds (5.4% at 10):
# at 5 rounds the best cut is a wrong one in ~14% of blocks and leaves a moved size in the
# other run. Every cut below 0.35: 5.8% / 5.1%, a 10% gain in alike blocks found in 71.1%
# of cells at 5 rounds against 72.1% (73.8% without a hedge), 95.4% at 10 against 95.6%
# (bench/bench_inference.py --only-hedge-sweep --reps 1000 --seed 7)
HEDGE_LEVEL = 0.35


def _regimes(side: Mapping[object, Mapping[Hashable, float | None]], centres: int = 1
             ) -> list[list]:
    """The block's cells in regimes (lists of cell keys, in order); one list where no
    split is found (or below 2 * MIN_REGIME_CELLS cells). centres: the groups of rows
    each cell was centred in before (1: paired rounds; 2: the two sides' launches,
    _unpaired_regimes), each costing the F test one df per cell (_split_p)."""
    centred = _centred(side)
    if centred is None:
        return [list(side)]
    keys, r, _obs = centred
    return [[keys[j] for j in g] for g in _split_runs(r, list(range(len(keys))), centres)]


def _split_runs(r: np.ndarray, cols: list[int], centres: int = 1) -> list[list[int]]:
    """cols (columns of r, rounds x cells centred per cell) split recursively at the
    point whose two runs least share one round effect, while REGIME_LEVEL rejects it."""
    p, k = _best_split(r, cols, centres)
    if p >= REGIME_LEVEL:
        return [cols]
    return _split_runs(r, cols[:k], centres) + _split_runs(r, cols[k:], centres)


def _best_split(r: np.ndarray, cols: list[int], centres: int = 1) -> tuple[float, int]:
    """(Bonferroni p, k) of the cut of cols (columns of r) before cols[k] whose two runs,
    each at least MIN_REGIME_CELLS cells, least share one round effect (_cut_ps' least);
    (inf, 0) with no candidate: no level cuts. The cut _split_runs tries."""
    return min(_cut_ps(r, cols, centres), default=(math.inf, 0))


def _cut_ps(r: np.ndarray, cols: list[int], centres: int = 1) -> list[tuple[float, int]]:
    """[(Bonferroni p, k)] of every cut of cols (columns of r) before cols[k], each run at
    least MIN_REGIME_CELLS cells: _split_p times the candidate cuts, not capped at 1.
    Computed once per (r, cols, centres): the regime split (_regimes) and the hedge
    (_hedge_runs_of) both try every cut of a block."""
    if r.dtype != np.float64:
        return _cut_ps_of(r, cols, centres)
    return list(_cut_ps_cached(r.shape, r.tobytes(), tuple(cols), centres,
                               (MIN_REGIME_CELLS, MIN_PAIRS)))


@functools.lru_cache(maxsize=16)
def _cut_ps_cached(shape: tuple, data: bytes, cols: tuple, centres: int, _rules: tuple
                   ) -> tuple[tuple[float, int], ...]:
    return tuple(_cut_ps_of(np.frombuffer(data).reshape(shape), list(cols), centres))


def _cut_ps_of(r: np.ndarray, cols: list[int], centres: int) -> list[tuple[float, int]]:
    cuts = range(MIN_REGIME_CELLS, len(cols) - MIN_REGIME_CELLS + 1)
    return [(_split_p(r[:, cols[:k]], r[:, cols[k:]], centres) * len(cuts), k)
            for k in cuts]


def _round_means(x: np.ndarray, centres: int = 1
                 ) -> tuple[np.ndarray, tuple[float, float]]:
    """(per-round mean of x's cells, NaN where a round has none; (the variance of such a
    mean from the cell parts: ms_cell / S, its df)) of x, rounds x cells, each cell
    centred in `centres` groups of rows: the residuals about the round means then have
    (n - centres)(S - 1) df (fully observed), not _two_way's (n - 1)(S - 1)."""
    m, _res, ms_cell, df, s_bar = _two_way(x, ~np.isnan(x))
    df_c = df - (centres - 1) * (x.shape[1] - 1)
    if df_c <= 0:
        return m, (0.0, 0.0)
    return m, (ms_cell * df / df_c / s_bar, float(df_c))


def _split_p(a: np.ndarray, b: np.ndarray, centres: int = 1) -> float:
    """p of the F test that runs a and b share one round effect: the variance over rounds
    of their per-round means' difference against what their cell parts give it. Each
    group of rows a cell was centred in (centres) sums the differences to 0: n - centres
    df (the unpaired sides: n - 2). On n - 1 (and (n - 1)(S - 1)) both mean squares had
    one factor (n - 2)/(n - 1) too little, which cancels in the ratio, but the F it was
    referred to had too many df, lighter tails: 2 vs 2 launches of 6 alike sizes were cut
    at p <= 0.05 in 7.2% of benchmarks, 4.4% now (tests/stats/test_launch.py's 3000 at
    seed 74)."""
    ma, va = _round_means(a, centres)
    mb, vb = _round_means(b, centres)
    ok = ~np.isnan(ma) & ~np.isnan(mb)
    n = int(ok.sum())
    den = va[0] + vb[0]
    if n < MIN_PAIRS or n <= centres or den <= 0:
        return 1.0
    d = ma[ok] - mb[ok]
    num = float(((d - _mean(d)) ** 2).sum()) / (n - centres)
    return float(_special().fdtrc(n - centres, _satterthwaite((va, vb)), num / den))


def _paired_cells(cells, paired, alpha: float, level: float, pool: bool,
                  order: Sequence[int] | None = None) -> list[LaunchTest]:
    """compare_cells' paired test of a block. Where no cut passes (one regime), each
    cell is tested on the widest of its CIs: the block's Spread and the Spread of its run
    at every cut below HEDGE_LEVEL (_hedge_spreads). A round effect only some sizes
    share, comparable to the cell parts, is cut only part of the time, and where it is
    not the sizes it moves keep the round part diluted over the block (10 sizes, 10
    rounds, sd 0.1 at 5 of them: 12-16% A/A there, 7-9% with the hedge; over all
    6.0-6.4% -> 4.6-5.3%; docs/statistics.md "An intermediate contrast"). REGIME_LEVEL 0
    (never cut): no hedge, the model before regimes."""
    diffs = _round_diffs(cells, paired)
    sp = _diff_spread(diffs, order) if pool and len(cells) > 1 else None
    hedge = sp is not None and not sp.regimes
    alt = _hedge_spreads(diffs, order) if hedge else {}
    quiet = _quiet_spreads(diffs, order, sp) if sp is not None else {}
    out = []
    for i, (d, (_pairs, left)) in enumerate(zip(diffs, paired, strict=True)):
        regime, own = sp.for_cell(i) if sp is not None else (0, None)
        own = quiet.get(i, own)
        y = np.array(list(d.values()))
        t = paired_test(y, own, left, alpha, level, cell=i)
        for run in alt.get(i, ()):
            t = _wider(t, paired_test(y, run, left, alpha, level, cell=i))
        out.append(t._replace(regime=regime))
    return _fill_p(out)


def _quiet_spreads(diffs: list[dict[Hashable, float]], order: Sequence[int] | None,
                   sp: Spread) -> dict[int, Spread]:
    """{cell: the Spread it is tested on instead of its regime's (or block's)}: in a
    regime whose gate opens and whose prior keeps some sizes as their own (robust: the
    noisy ones), the sizes it does not keep, at least MIN_REGIME_CELLS, are a block of
    their own (their round part from their own round mean; moderated without a gate, so
    a noisy size the first prior missed is kept there; again while that keeps one); the
    kept sizes stay on the regime's Spread. The regime's round mean is mostly the noisy
    sizes' noise: where only the quiet sizes share a round effect (run-12's shape, 7
    quiet of 11, var(e) 0.04, 10 rounds) it held 7/11 of it, the quiet sizes' variance
    short by 2 (7/11)(4/11) var(e): 7.6% A/A, coverage 92.4%; now 5.2%, 94.8%
    (docs/statistics.md "The quiet sizes of a noisy regime"). {} with at most
    THIN_LAUNCHES rounds (every size its own part)."""
    side, own = _diff_side(diffs, order)
    if own:
        return {}
    out: dict[int, Spread] = {}
    for keys in ([list(g) for g, _s in sp.regimes] if sp.regimes else [list(side)]):
        for block, qs in quiet_blocks({k: side[k] for k in keys}):
            out.update({k: qs for k in block})
    return out


def quiet_blocks(side: dict) -> list[tuple[tuple, Spread]]:
    """The blocks _quiet_spreads tests one paired regime's (or uncut block's) quiet
    sizes on, outermost first, each inside the one before: (their keys, their Spread,
    moderated without a gate); a cell's block is the last one holding it. side: as
    spread() takes it. One rule: stats.budget plans the quiet sizes on the same blocks."""
    out: list[tuple[tuple, Spread]] = []
    quiet = _quiet_cells(side)
    while quiet:
        qs = spread({k: side[k] for k in quiet}, force=True, floor_own=True)
        if qs is None:
            break
        out.append((tuple(quiet), qs))
        quiet = _quiet_cells({k: side[k] for k in quiet})
    return out


def _quiet_cells(side: dict) -> list:
    """The cells of a paired regime (_quiet_spreads) that its gate (_gate) and prior
    (stats.moderate.robust) do not keep as their own, where the prior keeps some and
    leaves at least MIN_REGIME_CELLS (below FEW_CELLS each its own part there); else [].
    Not where the sizes' spreads follow a trend (_trend_x): the sizes its prior keeps are
    then chance-high draws about the trend, not a noisy group, and the rest's own round
    mean left the ramp's top sizes it does not keep at 0.84x their variance (22 sizes x 8
    rounds: 7.1% A/A; docs/statistics.md "Spreads that grow with size")."""
    rs = _residuals(side)
    if rs is None or rs.res is None or len(rs.keys) <= FEW_CELLS:
        return []
    d = rs.obs.sum(axis=0) - 1.0
    if np.any(d < 1):
        return []
    w = (rs.res * rs.res).sum(axis=0) / d
    if _gate(w, d, False, True) is None or _trend_x(w, d, True) is not None:
        return []
    kept = moderate_mod.robust(w, d)[2]
    if not kept.any() or int((~kept).sum()) < MIN_REGIME_CELLS:
        return []
    return [k for k, own in zip(rs.keys, kept, strict=True) if not own]


def _wider(t: LaunchTest, other: LaunchTest) -> LaunchTest:
    """Of two tests of one cell, the one with the wider CI (t where either is untested)."""
    if t.ci_low is None or other.ci_low is None or t.ci_low <= 0 or other.ci_low <= 0:
        return t
    return other if other.ci_high / other.ci_low > t.ci_high / t.ci_low else t


def paired_test(d: np.ndarray, sp: Spread | None, unpaired: int = 0, alpha: float = 0.05,
                level: float = 0.95, cell: object = None) -> LaunchTest:
    """One cell's paired test from its per-round differences d (oriented logs, > 0 =
    candidate better): the gain exp(mean d), its variance from sp (the block's Spread of
    the differences: the shared round part with n - 1 df plus the cell part with
    (n - 1)(S - 1) df; cell: its key in the block, for its own moderated cell part where
    the sizes differ, Spread.cell_parts) or, without sp, d's own variance (n - 1 df); Cochran-Cox / Welch
    critical values as the unpaired test. p is left None (compare_cells fills it).
    sd_log is the per-side sd an unpaired design would need for the same variance of a
    difference (sqrt(var(d) / 2)), so planning from sd_log alone stays on the same scale;
    planning from the test itself is launches_needed_for."""
    n = int(d.size)
    extra = dict(pairing="round", pairs=n, unpaired=int(unpaired))
    if n == 0:
        return LaunchTest(None, None, None, None, 0, 0, False, Untested.NO_STATISTIC.value,
                          untested=Untested.NO_STATISTIC, **extra)
    diff = float(_mean(d))
    point = math.exp(diff)
    if n < MIN_LAUNCHES:
        return LaunchTest(point, None, None, None, n, n, False,
                          f"{Untested.TOO_FEW_LAUNCHES} ({n} pair(s); a test needs >= "
                          f"{MIN_LAUNCHES})", diff_log=diff,
                          untested=Untested.TOO_FEW_LAUNCHES, **extra)
    pooled = sp is not None
    if pooled:
        comps = tuple(sp.components(n, cell))
        var_d = sp.cell_sd(cell) ** 2
    else:
        var_d = float(d.var(ddof=1))
        comps = ((var_d / n, n - 1),)
    sd = math.sqrt(0.5 * var_d)
    shared = sp.shared(n) if pooled else 0.0
    parts = (_parts(sp, n),) if pooled else ()
    own = pooled and sp.own_part(cell) is not None
    floor = sp.ms_cell / sp.cells / n if pooled and sp.df_cell > 0 and sp.cells > 1 else 0.0
    (v0, d0), rest = comps[0], tuple(comps[1:])
    if own and rest and rest[0][1] < WELCH_MIN_DF:
        # an own cell part on 1-2 df (at most THIN_LAUNCHES rounds: _diff_spread) is below
        # its mean most of the time: planned median-unbiased, as the round part is
        rest = ((plan_round_part(*rest[0]), rest[0][1]),) + rest[1:]
    plan = ((plan_round_part(v0, d0, floor), d0),) + rest
    return _tested(diff, (n, n), sd, comps, pooled, shared, parts, alpha, level,
                   own_cell=own, plan_components=planning_components(comps, plan), **extra)


def _aggregate_paired(rows, paired, alpha: float, level: float) -> LaunchTest:
    """aggregate's paired form: per round, the mean over the rows it has of the row's
    difference less the row's mean difference, plus the mean of the rows' mean
    differences (with every row in every round: the round's mean difference); a
    one-sample t over the rounds."""
    diffs = [d for d in _round_diffs(rows, paired) if d]
    centres = [float(np.mean(list(d.values()))) for d in diffs]
    grand = float(np.mean(centres)) if centres else 0.0
    acc: dict[Hashable, list[float]] = {}
    for d, m in zip(diffs, centres, strict=True):
        for r, v in d.items():
            acc.setdefault(r, []).append(v - m)
    y = np.array([grand + float(np.mean(v)) for v in acc.values()])
    left = sum(lf for _p, lf in paired)
    return _fill_p([paired_test(y, None, left, alpha, level)])[0]


def unbalanced(n_base: int | None, n_cand: int | None) -> bool:
    """Whether an unpaired comparison of these launch counts is unbalanced as
    UNBALANCED_MAX_SMALL says (the smaller side at most that many, fewer than the other's):
    the one rule of compare's and check's warning and of launches_needed_for's floor."""
    if n_base is None or n_cand is None:
        return False
    return min(n_base, n_cand) < max(n_base, n_cand) and \
        min(n_base, n_cand) <= UNBALANCED_MAX_SMALL


def unbalanced_false_positives(small: int) -> str:
    """The measured A/A false positives at a size noisier only on the smaller side, for a
    smaller side of `small` launches against 7 (the design measured), in the words of
    compare's and check's warning: since stop 43 the smaller side's mix acts from
    SMALLER_MIX_MIN (2) launches, so one figure, the worst of UNBALANCED_FALSE_POSITIVES
    (3-5 vs 7) and UNBALANCED_FALSE_POSITIVES_2V7, beside BALANCED_FALSE_POSITIVES (the
    same for every `small` a test runs at: MIN_LAUNCHES = SMALLER_MIX_MIN)."""
    worst = max(UNBALANCED_FALSE_POSITIVES, UNBALANCED_FALSE_POSITIVES_2V7)
    lo = SMALLER_MIX_MIN
    return (f"up to {100 * worst:.1f}% per cell at {lo}-{UNBALANCED_MAX_SMALL} vs 7 launches, "
            f"{100 * BALANCED_FALSE_POSITIVES:.1f}% at 7 + 7")


def launches_needed_for(t: LaunchTest, effect: float, alpha: float = 0.05,
                        power: float = POWER, max_n: int = 10_000) -> int | None:
    """Launches per side (paired: rounds) at which the test t ran (its planning
    components, scaled to n rounds by paired_components_at) detects a gain of 1 + effect
    with probability `power` (noncentral t of that test). At t's own rounds this is the
    'detectable' t reports. For an unpaired test this is launches_needed at t's pooled
    sd, and where t's launches are unbalanced (unbalanced: at most 5 against more) never
    fewer than the larger side's: per side, so the smaller side is planned up to the
    other's count (a size noisy only on the smaller side is not caught below it). Also
    for a test not run for too few launches (1 against 7): every sentence that plans
    launches (the cell's note and JSON, the verdict, compare --detect's plan) asks this one
    function. A paired test not run (fewer than 3 pairs) plans from its sd_log as an
    unpaired one."""
    if t.pairing != "round" or not t.tested:
        n = launches_needed(t.sd_log, effect, alpha, power, max_n)
        if n is not None and unbalanced(t.n_base, t.n_cand):
            n = max(n, t.n_base, t.n_cand)
        return n
    if not t.components or not effect or effect <= -1:
        return None
    return rounds_search(lambda n: paired_components_at(t, n), effect, alpha, power, max_n)


def paired_components_at(t: LaunchTest, n: int) -> tuple:
    """A paired test's planning components (LaunchTest.planned_on) at n rounds instead of
    its t.pairs: every variance x pairs / n, and the df the test will then have: the round
    part n - 1; the pooled cell part (n - 1)(S - 1), its df scaled by (n - 1)/(pairs - 1);
    a cell's own (moderated) cell part d0 + (n - 1), its df plus n - pairs, since the
    prior's d0 (stats.moderate) does not grow with the rounds (scaled whole it was
    optimistic: 54 planned df where about 19 will be had), never more than scaled
    whole. Unpooled (one component): n - 1."""
    n0 = t.pairs
    own = own_cell_parts(t)
    out = []
    for i, (v, df) in enumerate(t.planned_on):
        if i == 0 or n0 <= 1:
            d = float(n - 1)
        else:
            d = future_df(df, n0 - 1, n - 1, i in own)
        out.append((v * n0 / n, d))
    return tuple(out)


def future_df(df: float, now: float, then: float, own: bool) -> float:
    """The df a cell part estimated with df from `now` launches' (or rounds') n - 1 will
    have from `then`: a pooled part scales whole ((n - 1)(S - 1)); a cell's own
    (moderated) part is d0 + d_g, and the prior's d0 (stats.moderate) does not grow, so
    only d_g does: d0 = df - now (at least 0: a stage-2 test's df count fewer launches
    than its pairs) plus then, never more than scaled whole."""
    whole = df * then / now if now > 0 else df
    return min(max(df - now, 0.0) + then, whole) if own else whole


def own_cell_parts(t: LaunchTest) -> set[int]:
    """Indices in t.components of a cell's own (moderated) cell parts, as opposed to a
    side's pooled cell part (which t.parts holds): one per side at most."""
    if not t.own_cell or not t.parts:
        return set()
    n = len(t.components)
    k = n if t.pairing == "round" else (t.base_components or n // 2)
    out = set()
    for (a, b), (_lv, _dl, cv, dc, _s) in zip(((0, k), (k, n)), t.parts, strict=False):
        if b - a > 1:
            v, d = t.components[a + 1]
            if not (math.isclose(v, cv, rel_tol=1e-12) and d == dc):
                out.add(a + 1)
    return out


def rounds_search(comps_at: Callable[[int], tuple], effect: float, alpha: float,
                  power: float, max_n: int) -> int | None:
    """The least n >= MIN_PAIRS rounds at which a paired test with the variance components
    comps_at(n) detects a gain of 1 + effect with probability `power` (every n to 64, then
    steps of 10%); None beyond max_n. The one search of launches_needed_for and
    stats.budget.rounds_for."""
    target = abs(math.log1p(effect))
    n = MIN_PAIRS
    while n <= max_n:
        d = _detectable(comps_at(n), alpha, power)
        if d is not None and math.log1p(d) <= target + 1e-12:
            return n
        n = n + 1 if n < 64 else int(n * 1.1)
    return None


def compare(base: Iterable[float | None], cand: Iterable[float | None], better: str,
            alpha: float = 0.05, level: float = 0.95) -> LaunchTest:
    """One cell on its own launches: the t test on the logs of the launch statistics,
    each side's variance with its own df (Welch's standard error; a side with 2-3
    launches floored at the other side's, floor_component), Cochran-Cox critical values
    (conservative where Welch's df are not: a side with 2 launches).

    better: 'lower' (times: gain = baseline / candidate) or 'higher' (rates: gain =
    candidate / baseline). Fewer than MIN_LAUNCHES on a side: not tested (the gain is the
    ratio of the estimates, without CI)."""
    b = {str(i): v for i, v in enumerate(base)}
    c = {str(i): v for i, v in enumerate(cand)}
    return compare_cells([(b, c, better)], alpha, level, pool=False)[0]


def aggregate(rows: Sequence[tuple[Mapping[str, float], Mapping[str, float], str]],
              alpha: float = 0.05, level: float = 0.95,
              rounds: Mapping[Hashable, Hashable] | None = None) -> LaunchTest:
    """Gain over many cells (a benchmark's sizes, or a whole comparison), aggregated per
    launch first.

    rows: per cell, (baseline {launch id: statistic}, candidate {launch id: statistic},
    better). One core launch measures every size, so its offset is shared by all its cells:
    cells are not independent replicates, launches are. Each launch's value is the mean,
    over the cells it has, of its oriented log statistic (higher = better) minus the cell's
    centre (the mean of the two sides' means); the sides' launch values are then compared
    with compare(). When every launch has every cell, the gain equals the geometric mean
    of the per-cell gains.

    rounds: as compare_cells; when pair_rounds pairs the rows (every row with at least
    MIN_PAIRS pairs), the aggregate is paired by round (_aggregate_paired)."""
    paired = pair_rounds(rows, rounds)
    if paired is not None:
        return _aggregate_paired(rows, paired, alpha, level)
    acc: dict[tuple[int, str], list[float]] = {}
    for base, cand, better in rows:
        sign = -1.0 if better == "lower" else 1.0
        ys = [_oriented_logs(side, sign) for side in (base, cand)]
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


def parse_margin(value: object) -> float | None:
    """An equivalence margin: '2%', 2 (percent) or 0.02 -> 0.02; None when it is not a
    margin between 0.01% and 100% (the caller names the flag or key in its error)."""
    v = percent(value)                  # the one percentage grammar (units.py)
    return v if v is not None and 1e-4 <= v <= 1.0 else None


def fmt_pct(effect: float | None) -> str:
    """0.052 -> '5.2%' (two significant digits), for 'detectable' and planning lines."""
    if effect is None or not math.isfinite(effect):
        return "?"
    pct = 100.0 * effect
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


__all__ = ["MIN_LAUNCHES", "MIN_PAIRS", "POWER", "pair_rounds", "cell_pairs", "pair_spread", "paired_test",
           "launches_needed_for", "unbalanced", "UNBALANCED_MAX_SMALL", "UNBALANCED_FALSE_POSITIVES",
           "UNBALANCED_FALSE_POSITIVES_2V7", "BALANCED_FALSE_POSITIVES",
           "unbalanced_false_positives", "paired_components_at", "Estimate", "estimate", "LaunchTest", "compare",
           "compare_cells", "detectable_at", "Spread", "spread", "aggregate", "detectable_effect",
           "gated_spreads", "launches_needed", "pooled_sd", "fmt_pct", "cochran_cox_crit", "two_sided_p",
           "one_sided_p", "parse_margin"]
