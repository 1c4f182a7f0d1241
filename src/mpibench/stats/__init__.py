"""Statistics for benchmark samples: distribution-free median CI, Mann-Whitney U, Holm,
Cliff's delta, bootstrap, geometric mean.

Contracts (../shared/DESIGN.md "Units and statistics"):
- a summary is the median with a 95% CI from order statistics (exact binomial ranks, no
  distribution assumed), plus min, p5, p95, p99, max, mean, std and n; outliers are kept;
- a comparison is a two-sided Mann-Whitney U test (exact when samples are small, with or
  without ties),
  Holm-corrected across the rows of one table, with Cliff's delta as effect size.

Everything takes any sequence of floats (list, tuple, numpy array); NaNs are dropped.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

# scipy.stats is imported lazily (only for exact Mann-Whitney): it costs ~1 s to import,
# which would dominate `mpibench compare` on a small store.

__all__ = [
    "MedianCI", "MWUResult", "median_ci", "summarize", "summarize_many", "SUMMARY_KEYS",
    "mann_whitney", "mann_whitney_test", "mann_whitney_many", "holm", "cliffs_delta", "cliffs_from_u", "cliffs_magnitude",
    "geomean",
    "min_pvalue", "can_reach_significance", "min_n_per_side", "bootstrap_ci",
    "ratio_of_medians_ci", "ci_percent",
]

# Keys of summarize(); they are also columns of the store's `results` table.
SUMMARY_KEYS = ("n", "median", "ci_low", "ci_high", "min", "p5", "p95", "p99", "max", "mean",
                "std")

# Exact MWU is cheap while n_a * n_b stays small (a few ms at 50 x 50); above that the normal
# approximation is accurate to well below any alpha anyone uses.
_EXACT_MWU_MAX_PRODUCT = 2500


def _clean(samples: Iterable[float] | None) -> np.ndarray:
    if samples is None:
        return np.empty(0)
    x = np.asarray(samples if isinstance(samples, np.ndarray) else list(samples), dtype=float)
    x = x.ravel()
    # a copy only when there is a NaN to drop: batches hold 10^6 samples at once
    nan = np.isnan(x)
    return x[~nan] if nan.any() else x


class MedianCI(NamedTuple):
    """Confidence interval of the median. low/high are None when n is too small for any
    pair of order statistics to reach the requested level (n < 6 at 95%); coverage is then
    the best coverage available (from the extreme order statistics), for the message."""

    low: float | None
    high: float | None
    coverage: float
    lo_rank: int | None = None   # 1-based order statistic used for low
    hi_rank: int | None = None   # 1-based order statistic used for high

    @property
    def ok(self) -> bool:
        return self.low is not None


def _binom_half_log_cdf(n: int, kmax: int) -> np.ndarray:
    """log P(Bin(n, 1/2) <= k) for k = 0..kmax, in log space (no underflow for large n)."""
    i = np.arange(kmax, dtype=float)
    logpmf = np.empty(kmax + 1)
    logpmf[0] = -n * math.log(2.0)
    if kmax:
        logpmf[1:] = logpmf[0] + np.cumsum(np.log(n - i) - np.log(i + 1))
    return np.logaddexp.accumulate(logpmf)


@functools.lru_cache(maxsize=4096)
def _median_ci_ranks(n: int, level: float) -> tuple[int | None, int | None, float]:
    """Symmetric ranks (j, n+1-j) with the largest j whose exact coverage
    1 - 2 * P(Bin(n, 1/2) <= j-1) is still >= level."""
    if n <= 0:
        return None, None, 0.0
    tail = (1.0 - level) / 2.0
    log_cdf = _binom_half_log_cdf(n, (n + 1) // 2 - 1)
    ok = np.nonzero(log_cdf <= math.log(tail) + 1e-12)[0]
    if ok.size == 0:
        best = 1.0 - 2.0 * 0.5 ** n
        return None, None, float(best)
    jm1 = int(ok[-1])
    j = jm1 + 1
    coverage = 1.0 - 2.0 * math.exp(float(log_cdf[jm1]))
    return j, n + 1 - j, coverage


def median_ci(samples: Iterable[float], level: float = 0.95) -> MedianCI:
    """Distribution-free CI of the median from order statistics (exact binomial ranks).

    Returns MedianCI(low, high, coverage, lo_rank, hi_rank); coverage is the exact
    (achieved) coverage, >= level. With too few samples low and high are None.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x = _clean(samples)
    n = x.size
    j, k, cov = _median_ci_ranks(n, level)
    if j is None:
        return MedianCI(None, None, cov)
    if k - 1 == j - 1:
        v = float(np.partition(x, j - 1)[j - 1])
        return MedianCI(v, v, cov, j, k)
    part = np.partition(x, (j - 1, k - 1))
    return MedianCI(float(part[j - 1]), float(part[k - 1]), cov, j, k)


def summarize(samples: Iterable[float], level: float = 0.95) -> dict[str, Any]:
    """Summary with exactly SUMMARY_KEYS (store `results` column names). Empty input gives
    n=0 and None elsewhere; ci_low/ci_high are None when n is too small (< 6 at 95%)."""
    x = _clean(samples)
    n = int(x.size)
    if n == 0:
        return {k: (0 if k == "n" else None) for k in SUMMARY_KEYS}
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    # One sort serves the percentiles, the CI's order statistics, min and max: reports
    # summarize 10^4 cells, and np.percentile's per-call overhead dominated that.
    srt = np.sort(x)
    p5, p50, p95, p99 = _percentiles_sorted(srt, _QUANTILES)
    j, k, _cov = _median_ci_ranks(n, level)
    mean = float(srt.mean())
    return {
        "n": n,
        "median": p50,
        "ci_low": float(srt[j - 1]) if j is not None else None,
        "ci_high": float(srt[k - 1]) if j is not None else None,
        "min": float(srt[0]),
        "p5": p5,
        "p95": p95,
        "p99": p99,
        "max": float(srt[-1]),
        "mean": mean,
        "std": float(np.sqrt(np.square(srt - mean).sum() / (n - 1))) if n > 1 else 0.0,
    }


_QUANTILES = (0.05, 0.5, 0.95, 0.99)

# Below this many equal-length samples a batch is not worth the stacking; above
# _BATCH_MAX_N values per row the extra passes of a batch cost more than the per-call
# overhead they save (measured: the batched MWU wins 3x at 60+60 values, breaks even near
# 600+600; summaries break even near 1000).
_BATCH_MIN = 4
_BATCH_MAX_N = 1000


def summarize_many(samples: Sequence[Iterable[float]], level: float = 0.95
                   ) -> list[dict[str, Any]]:
    """summarize() of each sample, bit-identical, with samples of equal length summarized
    together as the rows of one 2-D array: one sort, and the percentiles, mean and std as
    column operations instead of a dozen numpy calls per sample. Reports summarize 10^4
    cells; per-call overhead, not arithmetic, was their cost."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    arrays = [_clean(x) for x in samples]
    out: list[dict[str, Any] | None] = [None] * len(arrays)
    by_n: dict[int, list[int]] = {}
    for i, x in enumerate(arrays):
        by_n.setdefault(x.size, []).append(i)
    for n, idx_n in by_n.items():
        if n == 0 or n > _BATCH_MAX_N or len(idx_n) < _BATCH_MIN:
            for i in idx_n:
                out[i] = summarize(arrays[i], level)
            continue
        for idx in _chunks(idx_n, n):
            _summarize_rows(np.sort(np.stack([arrays[i] for i in idx]), axis=1), idx, out,
                            level)
    return out  # type: ignore[return-value]


def _chunks(idx: list[int], n: int) -> Iterable[list[int]]:
    """Rows per 2-D batch: about 2^18 values (2 MiB per temporary array), so a batch's
    temporaries stay small next to the samples themselves."""
    step = max(1, _BATCH_VALUES // n)
    for i in range(0, len(idx), step):
        yield idx[i:i + step]


_BATCH_VALUES = 1 << 18


def _summarize_rows(srt: np.ndarray, idx: list[int], out: list, level: float) -> None:
    """summarize() of each row of a sorted 2-D array, into out[idx[r]]."""
    n = srt.shape[1]
    cols: list[list[float]] = []
    for q in _QUANTILES:           # _percentiles_sorted's formulas, one column at a time
        lo, hi, t = _qpos(q, n)
        cols.append(_lerp(srt[:, lo], srt[:, hi], t).tolist())
    p5, p50, p95, p99 = cols
    j, k, _cov = _median_ci_ranks(n, level)
    ci_low = srt[:, j - 1].tolist() if j is not None else [None] * len(idx)
    ci_high = srt[:, k - 1].tolist() if j is not None else [None] * len(idx)
    # each row reduced alone (numpy's pairwise sum over the row, as for a 1-D array)
    mean = srt.mean(axis=1)
    std = (np.sqrt(np.square(srt - mean[:, None]).sum(axis=1) / (n - 1)).tolist()
           if n > 1 else [0.0] * len(idx))
    mins, maxs, means = srt[:, 0].tolist(), srt[:, -1].tolist(), mean.tolist()
    for r, i in enumerate(idx):
        out[i] = {"n": n, "median": p50[r], "ci_low": ci_low[r], "ci_high": ci_high[r],
                  "min": mins[r], "p5": p5[r], "p95": p95[r], "p99": p99[r],
                  "max": maxs[r], "mean": means[r], "std": std[r]}


def _qpos(q: float, n: int) -> tuple[int, int, float]:
    """numpy's 'linear' percentile position of quantile q (0..1) in n sorted values: the
    two neighbouring indices and the fraction between them."""
    pos = q * (n - 1)
    lo = int(pos)
    return lo, min(lo + 1, n - 1), pos - lo


def _lerp(a, b, t: float):
    """numpy's interpolation between a and b (floats or arrays), computed from the nearer
    end as numpy does, so the result is bit-identical to np.percentile."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _percentiles_sorted(srt: np.ndarray, qs: Sequence[float]) -> list[float]:
    """numpy's default ('linear') percentiles of an already sorted array, with numpy's own
    index and interpolation formulas in float64 (so results match np.percentile to the last
    bit). Plain Python: for four quantiles it is ~6x faster than the array expression."""
    n = srt.size
    out = []
    for q in qs:
        lo, hi, t = _qpos(q, n)
        out.append(_lerp(float(srt[lo]), float(srt[hi]), t))
    return out


def ci_percent(median: float | None, low: float | None, high: float | None) -> float | None:
    """Half-width of a CI as a percentage of the median, benchstat style: the larger of the
    two distances, so an asymmetric interval is not understated."""
    if median is None or low is None or high is None or not median:
        return None
    return 100.0 * max(median - low, high - median) / abs(median)


class MWUResult(NamedTuple):
    p: float
    u: float
    method: str     # 'exact', 'exact-ties', 'asymptotic', 'degenerate' (all equal), 'empty'


def _mwu_asymptotic(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Normal approximation with tie correction and continuity correction; the same
    formula as scipy.stats.mannwhitneyu(method='asymptotic'), without importing scipy."""
    n1, n2 = x.size, y.size
    both = np.concatenate([x, y])
    _, inv, counts = np.unique(both, return_inverse=True, return_counts=True)
    avg_rank = np.cumsum(counts) - (counts - 1) / 2.0
    r1 = float(avg_rank[inv[:n1]].sum())
    tie = float(((counts.astype(float) ** 3) - counts).sum())
    return _asymptotic_p(r1, tie, n1, n2)


def _asymptotic_p(r1: float, tie: float, n1: int, n2: int) -> tuple[float, float]:
    """p and U of the first sample from its rank sum r1 and the tie term sum(t^3 - t)."""
    u1 = r1 - n1 * (n1 + 1) / 2.0
    u = max(u1, n1 * n2 - u1)
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - tie / (n * (n - 1)))
    if var <= 0:
        return 1.0, u1
    z = (u - n1 * n2 / 2.0 - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2.0))), u1


def _mwu_exact_ties(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Exact two-sided MWU with ties: the permutation distribution of the first sample's
    mid-rank sum, counted by dynamic programming over the pooled values (doubled mid-ranks
    are integers). p = 2 * min(lower tail, upper tail), capped at 1 - the convention of the
    untied exact test. scipy's exact mode assumes no ties, and the normal approximation is
    anti-conservative at small n (4 vs 4 complete separation with ties: 0.013 instead of
    the attainable 0.029), which would let small samples look significant.

    The count runs over subsets of the smaller side (the distribution of the other side's
    rank sum is its mirror image): counting 257-subsets of 264 values took 10 s, where
    the 7-subsets take milliseconds."""
    if x.size > y.size:
        p, u_y = _mwu_exact_ties(y, x)
        return p, x.size * y.size - u_y
    n1 = x.size
    both = np.concatenate([x, y])
    _, inv, counts = np.unique(both, return_inverse=True, return_counts=True)
    r2 = (2 * np.cumsum(counts) - counts + 1)[inv]       # 2 x mid-rank, an integer
    obs = int(r2[:n1].sum())
    smax = int(np.sort(r2)[-n1:].sum())
    # cnt[k, s]: number of k-subsets of the items seen so far with doubled rank sum s
    cnt = np.zeros((n1 + 1, smax + 1))
    cnt[0, 0] = 1.0
    for v in r2.tolist():
        cnt[1:, v:] += cnt[:-1, :smax + 1 - v].copy()
    dist = cnt[n1]
    total = dist.sum()
    lower = dist[:obs + 1].sum() / total
    upper = dist[obs:].sum() / total
    u1 = obs / 2.0 - n1 * (n1 + 1) / 2.0
    return float(min(1.0, 2.0 * min(lower, upper))), u1


def mann_whitney_test(a: Iterable[float], b: Iterable[float]) -> MWUResult:
    """Two-sided Mann-Whitney U. Exact when n_a*n_b <= 2500 (scipy's exact distribution
    without ties; our permutation count with ties), otherwise the normal approximation with
    tie and continuity correction. p is NaN if a side is empty. u is the U statistic of the
    first sample."""
    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return MWUResult(float("nan"), float("nan"), "empty")
    both = np.concatenate([x, y])
    if np.all(both == both[0]):
        return MWUResult(1.0, x.size * y.size / 2.0, "degenerate")
    if x.size * y.size <= _EXACT_MWU_MAX_PRODUCT:
        if np.unique(both).size == both.size:            # no ties
            from scipy import stats as sps
            r = sps.mannwhitneyu(x, y, alternative="two-sided", method="exact")
            return MWUResult(float(min(1.0, r.pvalue)), float(r.statistic), "exact")
        p, u1 = _mwu_exact_ties(x, y)
        return MWUResult(p, u1, "exact-ties")
    p, u1 = _mwu_asymptotic(x, y)
    return MWUResult(p, u1, "asymptotic")


def mann_whitney_many(pairs: Sequence[tuple[Iterable[float], Iterable[float]]]
                      ) -> list[MWUResult]:
    """mann_whitney_test() of each (a, b) pair, bit-identical. Pairs that take the normal
    approximation and share their sample counts are ranked together as the rows of one 2-D
    array (one argsort, mid-ranks and tie counts as column operations); the rest, and any
    row with all-equal values or huge ties, go through mann_whitney_test."""
    out: list[MWUResult | None] = [None] * len(pairs)
    by_shape: dict[tuple[int, int], list[int]] = {}
    cleaned = []
    for i, (a, b) in enumerate(pairs):
        x, y = _clean(a), _clean(b)
        cleaned.append((x, y))
        if x.size * y.size > _EXACT_MWU_MAX_PRODUCT:
            by_shape.setdefault((x.size, y.size), []).append(i)
        else:
            out[i] = mann_whitney_test(x, y)
    for (n1, n2), idx_shape in by_shape.items():
        if len(idx_shape) < _BATCH_MIN or n1 + n2 > _BATCH_MAX_N:
            for i in idx_shape:
                out[i] = mann_whitney_test(*cleaned[i])
            continue
        for idx in _chunks(idx_shape, n1 + n2):
            _mwu_rows(np.stack([np.concatenate(cleaned[i]) for i in idx]), n1, idx, cleaned,
                      out)
    return out  # type: ignore[return-value]


def _mwu_rows(both: np.ndarray, n1: int, idx: list[int], cleaned: list, out: list) -> None:
    """mann_whitney_test of each row of `both` (first n1 values one side, the rest the
    other), into out[idx[r]]: the normal approximation with ties, ranked as one array."""
    n = both.shape[1]
    n2 = n - n1
    order = np.argsort(both, axis=1)
    srt = np.take_along_axis(both, order, axis=1)
    pos = np.arange(n)
    starts = np.ones(srt.shape, dtype=bool)
    starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    ends = np.ones(srt.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    # mid-rank of a tie group at positions first..last is (first + last) / 2 + 1, the
    # value np.unique's cumsum(counts) - (counts - 1) / 2 gives; half-integers, so the
    # sums below are exact in any order
    mid = (first + last) / 2.0 + 1.0
    r1 = np.where(order < n1, mid, 0.0).sum(axis=1).tolist()
    size = (last - first + 1).astype(float)
    tie = np.where(starts, size ** 3 - size, 0.0).sum(axis=1).tolist()
    # rows the batch does not handle exactly like the scalar path (NaNs are already gone):
    # all values equal, and ties so large that sum(t^3 - t) is no longer an exact float
    odd = ((srt[:, 0] == srt[:, -1]) | (np.array(tie) >= 2.0 ** 52)).tolist()
    for r, i in enumerate(idx):
        if odd[r]:
            out[i] = mann_whitney_test(*cleaned[i])
            continue
        out[i] = MWUResult(*_asymptotic_p(r1[r], tie[r], n1, n2), "asymptotic")


def mann_whitney(a: Iterable[float], b: Iterable[float]) -> float:
    """Two-sided Mann-Whitney U p-value (see mann_whitney_test)."""
    return mann_whitney_test(a, b).p


def holm(pvalues: Sequence[float | None],
         weights: Sequence[float] | None = None) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, same order as the input. None/NaN entries stay NaN
    and do not count towards m (rows that were not tested are not part of the family).

    weights (optional, > 0): Holm's weighted procedure (Holm 1979): hypotheses are taken
    in order of p / w, and the k-th is rejected when p <= alpha w / (sum of the weights
    not yet rejected), so a rejection passes its share of alpha on to the rest. It controls
    the family-wise error rate at alpha like the unweighted one (equal weights give it)."""
    p = np.array([np.nan if v is None else float(v) for v in pvalues], dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.nonzero(~np.isnan(p))[0]
    m = idx.size
    if m == 0:
        return out
    if weights is None:
        order = idx[np.argsort(p[idx], kind="stable")]
        adj = (m - np.arange(m)) * p[order]
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != p.shape or not np.all(w[idx] > 0):
            raise ValueError("holm: one positive weight per p-value")
        order = idx[np.argsort(p[idx] / w[idx], kind="stable")]
        remaining = np.cumsum(w[order][::-1])[::-1]       # weights from step k on
        adj = p[order] / w[order] * remaining
    adj = np.minimum(1.0, np.maximum.accumulate(adj))
    out[order] = adj
    return out


def cliffs_delta(a: Iterable[float], b: Iterable[float]) -> float:
    """Cliff's delta = P(a > b) - P(a < b), in [-1, 1]; positive when a tends to be larger.
    O((n+m) log m) via sorting, so it is fine for large samples. NaN if a side is empty."""
    x, y = _clean(a), np.sort(_clean(b))
    if x.size == 0 or y.size == 0:
        return float("nan")
    less = np.searchsorted(y, x, side="left")            # count of y < x_i
    greater = y.size - np.searchsorted(y, x, side="right")  # count of y > x_i
    return float((less.sum() - greater.sum()) / (x.size * y.size))


def cliffs_from_u(u: float, n_a: int, n_b: int) -> float:
    """Cliff's delta of (a, b) from the Mann-Whitney U of a: U = #(a > b) + #(a = b) / 2, so
    delta = #(a > b)/mn - #(a < b)/mn = 2U/mn - 1."""
    return 2.0 * u / (n_a * n_b) - 1.0


def cliffs_magnitude(delta: float | None) -> str:
    """Romano et al. (2006) thresholds: negligible < .147 <= small < .33 <= medium < .474."""
    if delta is None or math.isnan(delta):
        return ""
    d = abs(delta)
    if d < 0.147:
        return "negligible"
    if d < 0.33:
        return "small"
    if d < 0.474:
        return "medium"
    return "large"


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive finite values; None if there are none."""
    v = np.array([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return None
    return float(np.exp(np.mean(np.log(v))))


def min_pvalue(n_a: int, n_b: int) -> float:
    """Smallest two-sided p-value an exact MWU can give with these sample counts:
    2 / C(n_a + n_b, n_a) (complete separation)."""
    if n_a <= 0 or n_b <= 0:
        return 1.0
    log_comb = math.lgamma(n_a + n_b + 1) - math.lgamma(n_a + 1) - math.lgamma(n_b + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))


def can_reach_significance(n_a: int, n_b: int, alpha: float = 0.05) -> bool:
    """Whether any data with these counts can reach p <= alpha in a two-sided MWU.
    At alpha 0.05: 3 vs 3 cannot (min p 0.10), 4 vs 4 can (0.029); uneven designs such as
    3 vs 5 (0.036) can, 3 vs 4 (0.057) cannot."""
    return min_pvalue(n_a, n_b) <= alpha


def min_n_per_side(alpha: float = 0.05) -> int:
    """Smallest equal sample count per side that can reach p <= alpha (4 at 0.05)."""
    if not 0.0 < alpha < 1.0:          # also NaN: the loop below would never end
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n = 1
    while not can_reach_significance(n, n, alpha):
        n += 1
    return n


def bootstrap_ci(stat, *samples: Iterable[float], level: float = 0.95, n_boot: int = 2000,
                 rng: np.random.Generator | int | None = 0) -> tuple[float | None, float | None]:
    """Percentile bootstrap CI of stat(*resampled_samples); each sample is resampled
    independently. Seeded by default so reports are reproducible."""
    arrays = [_clean(s) for s in samples]
    if any(a.size == 0 for a in arrays):
        return None, None
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    vals = np.empty(n_boot)
    for i in range(n_boot):
        vals[i] = stat(*(a[gen.integers(0, a.size, a.size)] for a in arrays))
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return None, None
    lo, hi = np.percentile(vals, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def ratio_of_medians_ci(a: Iterable[float], b: Iterable[float], level: float = 0.95,
                        n_boot: int = 2000, rng: np.random.Generator | int | None = 0
                        ) -> tuple[float | None, float | None]:
    """Bootstrap CI of median(a) / median(b), vectorised (one sort per side per resample
    would dominate; np.median over a resample matrix is fine up to ~1e4 samples per side)."""
    x, y = _clean(a), _clean(b)
    if x.size == 0 or y.size == 0:
        return None, None
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    # Cap memory: resample in chunks of rows.
    ratios = []
    chunk = max(1, int(2_000_000 // max(x.size, y.size)))
    done = 0
    while done < n_boot:
        m = min(chunk, n_boot - done)
        mx = np.median(x[gen.integers(0, x.size, (m, x.size))], axis=1)
        my = np.median(y[gen.integers(0, y.size, (m, y.size))], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(mx / my)
        done += m
    r = np.concatenate(ratios)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None, None
    lo, hi = np.percentile(r, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)
