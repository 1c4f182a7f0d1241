"""Empirical-Bayes moderated variances (Smyth 2004, "Linear models and empirical Bayes
methods for assessing differential expression", the moderated t of limma).

Many variances s_g^2, each with its own degrees of freedom d_g (here: the size-specific
part of a benchmark's sizes, stats.launch.spread), are taken as draws of sigma_g^2 from a
scaled inverse chi-square prior with d0 df around s0^2. Each size's posterior variance

    s~_g^2 = (d0 s0^2 + d_g s_g^2) / (d0 + d_g),   with d0 + d_g df,

is its own estimate shrunk toward the common one by as much as the spread of the s_g^2
says the sizes are alike: d0 -> infinity when their spread is what sampling alone gives
(every size gets the pooled variance, with the pooled df), small when the sizes really
differ (every size mostly its own). d0 and s0^2 come from the first two moments of
log s_g^2 (Smyth's method of moments: log s_g^2 is log sigma_g^2 plus a log chi-square,
whose mean and variance are digamma / trigamma functions of d_g / 2). Where the sizes'
variances follow a trend over the sizes (trend_p), s0^2 is one per size, the trend at it
(trend_prior, limma's trended prior): spreads that grow with size are shrunk toward their
own level, not the quiet sizes'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Fewer variances than this say nothing about their spread: d0 is taken as infinite.
MIN_GROUPS = 3
# Bartlett's test of one variance for all sizes: below this p the sizes get their own
# (moderated) parts, above it the pooled one (the model before, unchanged).
ALIKE_LEVEL = 0.05
# A variance above the prior's upper OUTLIER_TAIL quantile (F(d_g, d0) on s_g^2 / s0^2) is
# taken as its own (not shrunk); beyond EXCLUDE_TAIL it is also left out of the prior
# (robust). bench/bench_inference.py --only-hetero chose them (docs/statistics.md).
OUTLIER_TAIL = 0.2
EXCLUDE_TAIL = 0.01
# Where Bartlett's test keeps the sizes alike, a size whose variance is above the others'
# pooled one at this one-sided level (F test, outlying) still keeps its own part: one size
# only 2-3x noisier among 8-22 (5+5, 10+10) slipped through the gate in 30-80% of
# benchmarks and had 11-18% false positives on the pooled part; at 5% it still had 8% at
# 5+5 x 8 sizes x 2x, at 10% 6.8-7.1%, at 20% 5.8-6.4% (1000 benchmarks at each of two
# seeds; bench/bench_inference.py --only-outlier chose it; docs/statistics.md "Sizes that
# are not equally noisy").
OUTLYING_LEVEL = 0.20
# ... and where a side has at most THIN_LAUNCHES launches (2-3 vs 7, the gate asked): the
# level before. Its 1-2 df per size add little to the F test, and at 20% the 'detectable'
# a thin cell reports lost power (tests/stats/test_launch.py: 2 and 3 vs 7 x 10 sizes
# not sharing, 69.5% and 71.6% against the band's 72%). Not lower: a size noisy on the
# thin side only is protected by the flag alone (3 vs 7 x 10, 3x: 10.8% A/A, 14.0% at 5%);
# not higher: 50% leaves it at 7.3% and halves alike sizes' power after the closed test
# (bench_inference.py --only-outlier --outlier-design 3v7x10; docs/statistics.md).
OUTLYING_THIN_LEVEL = 0.10
# Where Bartlett's test keeps a paired block's sizes alike, an adjacent pair of sizes
# whose pooled variance is above the rest's at this one-sided level (outlying_pairs)
# still opens the gate and keeps its own parts (stats.launch._cell_parts). Run-12's noisy
# minority at 5 rounds (quiet var(v) 0.03, 1500 benchmarks) with the kept-size floor:
# no pairs 7.4% A/A at the noisy sizes, 1% 6.5%, 2% 6.0%, 5% 5.8%; alike sizes' power
# for a real 10% at 5 / 10 rounds 71.2 / 95.3% (no pairs), 70.6 / 95.1%, 69.6 / 94.7%,
# 66.5 / 93.7% (bench_inference --only-noisy-minority; docs/statistics.md)
PAIR_LEVEL = 0.02
# The outlying-size flag adds the two sides' sums of squares raw unless Bartlett's test
# over the sides' pooled cell parts rejects at this level; then each side's sums are
# divided by its own first (stats.launch._side_weights).
SIDES_LEVEL = 0.01


# Where a block's sizes are in size order (a paired block), a straight line of log s_g^2
# over the size index whose slope is significant at this two-sided level (trend_p) opens
# the gate (stats.launch._gate) and is the centre each size is moderated toward (robust's
# x, trend_prior) instead of one common s0^2: spreads that grow with size (review R13's
# ramp, sd 0.03 -> 0.15 over 11 sizes, 5 rounds) kept the gate shut in 27% of benchmarks
# (Bartlett's omnibus test on 4 df per size) and shrank the noisiest sizes toward the
# quiet ones' level: 8.0-9.3% A/A there (docs/statistics.md "Spreads that grow with size").
TREND_LEVEL = 0.05
# The trend's degree in the size index: a line missed a ramp's curvature (sd linear in
# size is log-concave: the line 0.76x the noisiest size's variance, 7.2% A/A there at 22
# sizes x 8 rounds); a parabola follows it within 0.9-1.1x where it matters.
TREND_DEGREE = 2


def _trigamma(x):
    """scipy.special.polygamma(1, x), the same value bit for bit: polygamma(n, x) is
    (-1)^(n+1) n! zeta(n+1, x), here 1.0 * 1.0 * zeta(2, x) (exact factors). polygamma
    wraps it in asarray/where and evaluates digamma as well: ten times the cost, paid per
    Newton step of _trigamma_inverse and per prior."""
    from scipy.special import zeta
    return zeta(2, x)


def _tetragamma(x):
    """scipy.special.polygamma(2, x) bit for bit: ((-1)^3 gamma(3)) zeta(3, x), the factor
    computed as polygamma computes it."""
    from scipy.special import gamma, zeta
    return (-1.0) ** 3 * gamma(3.0) * zeta(3, x)


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (x > 0), by Newton's method on 1 / trigamma, which is
    nearly linear in y (start 0.5 + 1 / x: trigamma(y) ~ 1/y + 1/(2 y^2))."""
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = float(_trigamma(y))
        step = tri * (1.0 - tri / x) / float(_tetragamma(y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def prior(variances: Sequence[float], dfs: Sequence[float]) -> tuple[float, float]:
    """(d0, s0^2): the prior's df and centre from variances s_g^2 with df d_g (method
    of moments on log s_g^2). d0 = inf when the variances spread no more than their
    sampling error says (or there are fewer than MIN_GROUPS positive ones); s0^2 is then
    the df-weighted pooled variance."""
    from scipy.special import digamma
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    ok = (s2 > 0) & (d > 0) & np.isfinite(s2)
    pooled = float((d[ok] * s2[ok]).sum() / d[ok].sum()) if ok.any() else 0.0
    if int(ok.sum()) < MIN_GROUPS:
        return math.inf, pooled
    s2, d = s2[ok], d[ok]
    e = _logs_unbiased(s2, d)
    emean = float(e.mean())
    evar = float(((e - emean) ** 2).sum() / (e.size - 1) - _trigamma(d / 2.0).mean())
    if evar <= 0:
        return math.inf, pooled
    d0 = 2.0 * _trigamma_inverse(evar)
    s0 = math.exp(emean + float(digamma(d0 / 2.0)) - math.log(d0 / 2.0))
    return d0, s0


def _logs_unbiased(s2: np.ndarray, d: np.ndarray) -> np.ndarray:
    """log s_g^2 less its bias under chi-square sampling: E = log sigma_g^2 (Smyth's e_g)."""
    from scipy.special import digamma
    return np.log(s2) - digamma(d / 2.0) + np.log(d / 2.0)


def _line(e: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(fitted values, slope, sum of (x - mean x)^2) of the least-squares line of e on x."""
    xc = x - x.mean()
    sxx = float((xc * xc).sum())
    slope = float((xc * (e - e.mean())).sum()) / sxx if sxx > 0 else 0.0
    return e.mean() + slope * xc, slope, sxx


def _basis(x: np.ndarray, centre: float, scale: float) -> np.ndarray:
    """The trend's columns at x: 1, t, t^2 ... up to TREND_DEGREE, t = (x - centre) / scale."""
    t = (x - centre) / scale
    return np.stack([t ** k for k in range(TREND_DEGREE + 1)], axis=1)


def trend_fit(e: np.ndarray, x: np.ndarray, at: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """The least-squares polynomial of degree TREND_DEGREE of e on x: (its values at `at`,
    the leverage h of each `at` (the variance of the fit there over e's variance), the
    residual df len(e) - TREND_DEGREE - 1)."""
    centre, scale = float(x.mean()), float(np.ptp(x)) or 1.0
    design = _basis(x, centre, scale)
    coef, *_ = np.linalg.lstsq(design, e, rcond=None)
    inv = np.linalg.pinv(design.T @ design)
    where = _basis(at, centre, scale)
    lev = np.einsum("ij,jk,ik->i", where, inv, where)
    return where @ coef, lev, e.size - design.shape[1]


def log_var(df: float) -> float:
    """The variance of log s^2 for s^2 on df degrees of freedom: trigamma(df / 2)."""
    return float(_trigamma(df / 2.0))


def log_df(v: np.ndarray) -> np.ndarray:
    """Per entry, the df of a variance whose log has variance v (log_var's inverse)."""
    return np.array([2.0 * _trigamma_inverse(float(x)) for x in np.atleast_1d(v)])


def trend_p(variances: Sequence[float], dfs: Sequence[float],
            x: Sequence[float] | None = None) -> float:
    """p of the two-sided test that log s_g^2 has no slope over x (None: 0, 1, ...; the
    size index of sizes ascending): the least-squares slope of the unbiased logs against
    its standard error from each log's sampling variance, trigamma(d_g / 2) (what it is
    when every size has one sigma^2), or from the residuals about the line where they
    spread more (a minority, a U shape: the slope is then judged on what the sizes
    scatter by, not on chi-square noise alone); normal reference. 1.0 below MIN_GROUPS
    positive variances."""
    from scipy.special import ndtr
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    xs = np.arange(s2.size, dtype=float) if x is None else np.asarray(x, dtype=float)
    ok = (s2 > 0) & (d > 0) & np.isfinite(s2)
    if int(ok.sum()) < MIN_GROUPS:
        return 1.0
    s2, d, xs = s2[ok], d[ok], xs[ok]
    e = _logs_unbiased(s2, d)
    fit, slope, sxx = _line(e, xs)
    if sxx <= 0:
        return 1.0
    noise = float(_trigamma(d / 2.0).mean())
    scatter = float(((e - fit) ** 2).sum()) / (e.size - 2) if e.size > 2 else noise
    z = abs(slope) / math.sqrt(max(noise, scatter) / sxx)
    return float(2.0 * ndtr(-z))


def trend_prior(variances: Sequence[float], dfs: Sequence[float], x: Sequence[float]
                ) -> tuple[float, np.ndarray]:
    """(d0, s0_g^2 per variance): prior's method of moments about a trend in x instead of
    one mean (limma's trended prior): the unbiased log s_g^2 fitted by least squares on
    x (trend_fit), d0 from the residuals' variance (on their df) less the sampling part,
    each s0_g^2 the trend fitted to the OTHER variances at its x (where its variance is
    0, left out: the trend at its x). Leave-one-out because at the ends a trend leans on
    its own point (leverage 0.3-0.5): a size robust does not keep, selected for a low
    s_g^2, had a centre pulled low by that same draw (22 sizes x 8 rounds, the ramp's
    top: the moderated cells 0.91x the truth, 7.8% A/A). Fewer than two residual df:
    the flat prior's, one s0^2 for all."""
    from scipy.special import digamma
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    xs = np.asarray(x, dtype=float)
    ok = (s2 > 0) & (d > 0) & np.isfinite(s2)
    if int(ok.sum()) < TREND_DEGREE + 3:
        d0, s0 = prior(s2, d)
        return d0, np.full(s2.size, s0)
    e = _logs_unbiased(s2[ok], d[ok])
    fit, lev, df = trend_fit(e, xs[ok], xs[ok])
    line = trend_fit(e, xs[ok], xs)[0]
    line[ok] = (fit - lev * e) / (1.0 - np.minimum(lev, 0.95))
    evar = float(((e - fit) ** 2).sum()) / df - float(_trigamma(d[ok] / 2.0).mean())
    if evar <= 0:
        return math.inf, np.exp(line)
    d0 = 2.0 * _trigamma_inverse(evar)
    return d0, np.exp(line + float(digamma(d0 / 2.0)) - math.log(d0 / 2.0))


def alike(variances: Sequence[float], dfs: Sequence[float], level: float = ALIKE_LEVEL,
          min_groups: int = MIN_GROUPS) -> bool:
    """Bartlett's test that the variances (s_g^2 with d_g df) have one sigma^2: True
    when it does not reject at `level` (or there are fewer than `min_groups` positive
    ones), i.e. the sizes may keep the pooled variance. min_groups=2: the two sides of a
    comparison (stats.launch._side_weights), where it is the two-sided F test's
    likelihood-ratio twin."""
    from scipy.special import chdtrc
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    ok = (s2 > 0) & (d > 0) & np.isfinite(s2)
    if int(ok.sum()) < max(2, min_groups):
        return True
    s2, d = s2[ok], d[ok]
    k, tot = s2.size, float(d.sum())
    pooled = float((d * s2).sum()) / tot
    m = tot * math.log(pooled) - float((d * np.log(s2)).sum())
    c = 1.0 + (float((1.0 / d).sum()) - 1.0 / tot) / (3.0 * (k - 1))
    return float(chdtrc(k - 1, m / c)) > level


def outlying(sums: Sequence[float], dfs: Sequence[float], level: float | None = None
             ) -> np.ndarray:
    """Per variance (its sum of squares and df), True where it is above the others' pooled
    variance at `level` (OUTLYING_LEVEL, read at the call, when None): the one-sided F
    test of s_g^2 / (pooled sum of the others / their df) on F(d_g, sum of the others'
    d). Each size against the rest, not corrected for the number of sizes: a false flag
    costs a quiet size its pooled df (and its block the closed test's mean-gain step,
    stats.multiplicity), a missed noisy size its CI. Nothing is flagged below MIN_GROUPS
    variances, nor a size whose others have no spread at all (their pooled sum is 0)."""
    from scipy.special import fdtrc
    level = OUTLYING_LEVEL if level is None else level
    ss = np.asarray(sums, dtype=float)
    d = np.asarray(dfs, dtype=float)
    out = np.zeros(ss.size, dtype=bool)
    rest_ss, rest_d = ss.sum() - ss, d.sum() - d
    ok = (d > 0) & (rest_d > 0) & (rest_ss > 0)
    if int(ok.sum()) < MIN_GROUPS:
        return out
    ratio = (ss[ok] / d[ok]) / (rest_ss[ok] / rest_d[ok])
    out[ok] = fdtrc(d[ok], rest_d[ok], ratio) < level
    return out


def outlying_pairs(sums: Sequence[float], dfs: Sequence[float], level: float | None = None
                   ) -> np.ndarray:
    """Per variance (in size order: its sum of squares and df), True where it and a
    neighbour together are above the others' pooled variance at `level` (PAIR_LEVEL, read
    at the call, when None): the one-sided F test of each adjacent pair's pooled variance
    against the rest's, both members flagged. A noisy size in real stores is seldom alone
    (a protocol switch, the eager/rendezvous boundary, a cache size: run-12's 4-8 KiB and
    2-4 MiB), and two sizes' df test it where one size's 4 df did not: the paired gate
    (Bartlett's test over 11 sizes at 4 df) kept run-12's noisy minority alike in 8% of
    5-round benchmarks. Nothing is flagged below MIN_GROUPS variances."""
    from scipy.special import fdtrc
    level = PAIR_LEVEL if level is None else level
    ss = np.asarray(sums, dtype=float)
    d = np.asarray(dfs, dtype=float)
    out = np.zeros(ss.size, dtype=bool)
    if ss.size < MIN_GROUPS:
        return out
    pair_ss, pair_d = ss[:-1] + ss[1:], d[:-1] + d[1:]
    rest_ss, rest_d = ss.sum() - pair_ss, d.sum() - pair_d
    ok = (pair_d > 0) & (rest_d > 0) & (rest_ss > 0)
    hit = np.zeros(pair_ss.size, dtype=bool)
    hit[ok] = fdtrc(pair_d[ok], rest_d[ok],
                    (pair_ss[ok] / pair_d[ok]) / (rest_ss[ok] / rest_d[ok])) < level
    out[:-1] |= hit
    out[1:] |= hit
    return out


def _upper_tail(x: np.ndarray, d: np.ndarray, d0: float) -> np.ndarray:
    """P(F(d, d0) >= x), F(d, inf) = chi2_d / d."""
    from scipy.special import chdtrc, fdtrc
    if math.isinf(d0):
        return chdtrc(d, d * x)
    return fdtrc(d, d0, x)


def _trimmed_prior(s2: np.ndarray, d: np.ndarray, tail: float, x: np.ndarray | None = None,
                   fits: dict | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """The prior from the variances not beyond its upper `tail` quantile, iterated until
    the ones left out stay the same: (d0, s0^2 per variance, left out). x: about a trend
    in x (trend_prior), else one s0^2 (prior). fits: {left-out mask: _prior_at's fit}
    shared by robust's two trims of one set of variances (both start from none left out)."""
    fits = {} if fits is None else fits

    def fit(out: np.ndarray) -> tuple[float, np.ndarray]:
        key = out.tobytes()
        if key not in fits:
            fits[key] = _prior_at(s2, d, out, x)
        return fits[key]

    out = np.zeros(s2.size, dtype=bool)
    d0, s0 = fit(out)
    for _ in range(20):
        if np.any(s0 <= 0):
            break
        new = _upper_tail(s2 / s0, d, d0) < tail
        if np.array_equal(new, out) or new.all():
            break
        out = new
        d0, s0 = fit(out)
    return d0, s0, out


def _prior_at(s2: np.ndarray, d: np.ndarray, out: np.ndarray, x: np.ndarray | None
              ) -> tuple[float, np.ndarray]:
    """(d0, s0^2 at every variance) of the prior fitted to the variances not `out`."""
    if x is None:
        d0, s0 = prior(s2[~out], d[~out])
        return d0, np.full(s2.size, s0)
    d0, line = trend_prior(np.where(out, 0.0, s2), d, x)
    return d0, line


def robust(variances: Sequence[float], dfs: Sequence[float], tail: float = OUTLIER_TAIL,
           exclude: float = EXCLUDE_TAIL, x: Sequence[float] | None = None
           ) -> tuple[float, float | np.ndarray, np.ndarray]:
    """(d0, s0^2, own). own: the variances above the upper `tail` quantile
    of the prior fitted to the others (iterated): a size really noisier than the rest (a
    launch mode, a stall) keeps its own (s_g^2, d_g), never shrunk toward the quieter
    sizes (a noisy size shrunk is a CI too narrow), at the price of its df. (d0, s0^2):
    the prior the others are moderated toward, fitted to the variances not beyond its
    upper `exclude` quantile (iterated): far out, leaving them out biases it by little,
    where trimming at `tail` would take s0^2 below the quiet sizes' mean (their CIs too
    narrow). x (the sizes' positions, e.g. their index in size order): each size's
    centre is a trend in x (trend_prior), judged and moderated against its own point of
    the trend, s0^2 then one per variance; None: one s0^2 for all, a float."""
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    xs = None if x is None else np.asarray(x, dtype=float)
    key = (s2.tobytes(), d.tobytes(), None if xs is None else xs.tobytes(), s2.size, tail,
           exclude, MIN_GROUPS, TREND_DEGREE)
    got = _ROBUST.get(key)
    if got is None:
        got = _robust_of(s2, d, tail, exclude, xs)
        if len(_ROBUST) >= 2048:
            _ROBUST.pop(next(iter(_ROBUST)), None)
        _ROBUST[key] = got
    d0, s0, own = got
    return d0, (s0.copy() if isinstance(s0, np.ndarray) else s0), own.copy()


# robust's results by its arguments' bytes: a block's gate (stats.launch._cell_parts) and
# its quiet sizes (_quiet_cells) ask the same variances again, as does a plan (stats.budget)
_ROBUST: dict[tuple, tuple] = {}


def _robust_of(s2: np.ndarray, d: np.ndarray, tail: float, exclude: float,
               xs: np.ndarray | None) -> tuple[float, float | np.ndarray, np.ndarray]:
    fits: dict = {}
    _d0, _s0, own = _trimmed_prior(s2, d, tail, xs, fits)
    d0, s0, _out = _trimmed_prior(s2, d, exclude, xs, fits)
    return d0, (s0 if xs is not None else float(s0[0]) if s0.size else 0.0), own


def moderated(variances: Sequence[float], dfs: Sequence[float], d0: float,
              s0: float | Sequence[float]) -> list[tuple[float, float]]:
    """Each s_g^2 with its d_g shrunk toward s0^2 (one for all, or one per variance: a
    trended prior) with prior df d0: (s~_g^2, d0 + d_g); d0 = inf gives (s0^2, inf)."""
    centres = np.broadcast_to(np.asarray(s0, dtype=float), (len(variances),))
    out = []
    for v, d, c in zip(variances, dfs, centres, strict=True):
        if math.isinf(d0):
            out.append((float(c), math.inf))
        else:
            out.append(((d0 * float(c) + d * v) / (d0 + d), d0 + d))
    return out


__all__ = ["MIN_GROUPS", "ALIKE_LEVEL", "OUTLIER_TAIL", "EXCLUDE_TAIL", "OUTLYING_LEVEL", "OUTLYING_THIN_LEVEL", "SIDES_LEVEL",
           "PAIR_LEVEL", "TREND_LEVEL", "TREND_DEGREE", "trend_fit", "log_var", "log_df", "alike", "outlying_pairs", "trend_p", "trend_prior",
           "prior", "robust", "moderated", "outlying"]
