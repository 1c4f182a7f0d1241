"""Statistics against known cases and simulated distributions (seeded)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from mpibench import stats


def test_median_ci_small_n_has_no_bounds():
    ci = stats.median_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ci.low is None and ci.high is None and not ci.ok
    assert ci.coverage == pytest.approx(1 - 2 / 32)       # best available: 93.75%
    ci6 = stats.median_ci([6, 5, 4, 3, 2, 1])
    assert ci6.ok and (ci6.low, ci6.high) == (1.0, 6.0)
    assert ci6.coverage == pytest.approx(1 - 2 / 64)


def test_median_ci_exact_ranks_n30():
    x = np.arange(1, 31, dtype=float)
    ci = stats.median_ci(x[::-1])
    # P(Bin(30,.5) <= 9) = 0.0214 <= 0.025 < P(<= 10): ranks 10 and 21.
    assert (ci.lo_rank, ci.hi_rank) == (10, 21)
    assert (ci.low, ci.high) == (10.0, 21.0)
    assert ci.coverage == pytest.approx(1 - 2 * sps.binom.cdf(9, 30, 0.5))
    assert ci.coverage >= 0.95


def test_median_ci_coverage_lognormal():
    rng = np.random.default_rng(20260522)
    true_median = math.exp(0.0)     # lognormal(mu=0, sigma=1) has median e^0
    draws = rng.lognormal(0.0, 1.0, size=(2000, 30))
    hits = 0
    for row in draws:
        ci = stats.median_ci(row)
        hits += ci.low <= true_median <= ci.high
    coverage = hits / 2000
    assert 0.93 <= coverage <= 0.985, coverage


def test_median_ci_coverage_discrete_heavy_tail_n100():
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(1000):
        x = rng.pareto(2.5, 100) + 1.0
        ci = stats.median_ci(x)
        hits += ci.low <= 2 ** (1 / 2.5) <= ci.high     # Pareto(a) + 1 median = 2^(1/a)
    assert 0.93 <= hits / 1000 <= 0.985


def test_summarize_keys_and_values():
    x = np.arange(1, 101, dtype=float)
    s = stats.summarize(x)
    assert tuple(s) == stats.SUMMARY_KEYS
    assert s["n"] == 100 and s["median"] == 50.5 and s["min"] == 1 and s["max"] == 100
    assert s["ci_low"] <= 50.5 <= s["ci_high"]
    assert s["mean"] == pytest.approx(50.5) and s["std"] == pytest.approx(np.std(x, ddof=1))
    assert s["p5"] < s["p95"] < s["p99"] <= s["max"]
    empty = stats.summarize([])
    assert empty["n"] == 0 and empty["median"] is None
    tiny = stats.summarize([3.0, float("nan"), 1.0])
    assert tiny["n"] == 2 and tiny["ci_low"] is None and tiny["median"] == 2.0


def test_identical_samples_not_significant():
    rng = np.random.default_rng(1)
    a = rng.lognormal(0, 0.1, 50)
    assert stats.mann_whitney(a, a.copy()) > 0.9
    assert stats.cliffs_delta(a, a) == 0.0
    c = np.full(10, 2.5)
    r = stats.mann_whitney_test(c, c)
    assert r.p == 1.0 and r.method == "degenerate"


def test_same_distribution_rarely_significant():
    rng = np.random.default_rng(2)
    sig = sum(stats.mann_whitney(rng.normal(size=20), rng.normal(size=20)) <= 0.05
              for _ in range(400))
    assert sig / 400 < 0.09     # nominal 5%


def test_shifted_samples_significant_with_sign():
    rng = np.random.default_rng(3)
    a = rng.lognormal(np.log(10.0), 0.05, 40)   # slower
    b = rng.lognormal(np.log(8.0), 0.05, 40)    # faster
    r = stats.mann_whitney_test(a, b)
    assert r.p < 1e-6
    assert stats.cliffs_delta(a, b) > 0.9       # a larger than b
    assert stats.cliffs_delta(b, a) < -0.9


def test_mwu_exact_small_and_asymptotic_large_or_ties():
    assert stats.mann_whitney_test([1, 2, 3, 4], [5, 6, 7, 8]).method == "exact"
    assert stats.mann_whitney_test([1, 2, 3, 4], [5, 6, 7, 8]).p == pytest.approx(2 / 70)
    assert stats.mann_whitney_test([1, 2, 2, 4], [5, 6, 7, 8]).method == "exact-ties"
    rng = np.random.default_rng(4)
    assert stats.mann_whitney_test(rng.normal(size=100), rng.normal(size=100)).method == \
        "asymptotic"
    assert math.isnan(stats.mann_whitney([], [1.0]))


def test_min_samples_rule():
    assert not stats.can_reach_significance(3, 3)
    assert stats.can_reach_significance(4, 4)
    assert not stats.can_reach_significance(3, 4)
    assert stats.can_reach_significance(3, 5)
    assert stats.min_n_per_side(0.05) == 4
    assert stats.min_pvalue(3, 3) == pytest.approx(0.1)
    # three per side completely separated still is not significant
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6]) > 0.05


def test_holm_known_values_and_decision_change():
    p = [0.01, 0.04, 0.03, 0.005]
    adj = stats.holm(p)
    # sorted 0.005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone .06
    assert adj.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # 0.04 and 0.03 were significant alone, are not after correction
    assert [x <= 0.05 for x in p] == [True, True, True, True]
    assert [x <= 0.05 for x in adj] == [True, False, False, True]
    assert stats.holm([0.2]).tolist() == [0.2]
    mixed = stats.holm([None, 0.01, float("nan"), 0.02])
    assert math.isnan(mixed[0]) and math.isnan(mixed[2])
    assert mixed[1] == pytest.approx(0.02) and mixed[3] == pytest.approx(0.02)


def test_holm_changes_decision_on_simulated_table():
    # one real difference among 10 rows; a borderline null row significant alone loses it
    rng = np.random.default_rng(5)
    a = rng.normal(0, 1, 30)
    b = a + 0.9 + rng.normal(0, 0.2, 30)
    pvals = [stats.mann_whitney(a, b)] + [0.03] + [0.5] * 8
    adj = stats.holm(pvals)
    assert adj[0] <= 0.05 and pvals[1] <= 0.05 and adj[1] > 0.05


@pytest.mark.parametrize("a,b,expected", [
    ([1, 2, 3], [1, 2, 3], 0.0),
    ([4, 5, 6], [1, 2, 3], 1.0),
    ([1, 2, 3], [4, 5, 6], -1.0),
    ([1, 2, 3, 4], [2, 3], 0.0),       # pairs: >:3 (3>2,4>2,4>3) <:3 (1<2,1<3,2<3) -> 0
    ([10, 20, 30, 40], [15], 0.5),     # 3 greater, 1 less -> (3-1)/4
])
def test_cliffs_delta_known(a, b, expected):
    assert stats.cliffs_delta(a, b) == pytest.approx(expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=30),
       st.lists(st.integers(0, 20), min_size=1, max_size=30))
def test_cliffs_delta_matches_bruteforce(a, b):
    brute = sum((x > y) - (x < y) for x in a for y in b) / (len(a) * len(b))
    assert stats.cliffs_delta(a, b) == pytest.approx(brute)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.1, 1e6, allow_nan=False), min_size=6, max_size=200))
def test_median_ci_brackets_median(xs):
    ci = stats.median_ci(xs)
    assert ci.ok and ci.coverage >= 0.95
    assert ci.low <= float(np.median(xs)) <= ci.high


def test_geomean_and_ci_percent():
    assert stats.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geomean([None, 2.0, float("nan"), -1]) == pytest.approx(2.0)
    assert stats.geomean([]) is None
    assert stats.ci_percent(10.0, 9.0, 10.5) == pytest.approx(10.0)
    assert stats.ci_percent(10.0, None, 11) is None


def test_ratio_of_medians_bootstrap():
    rng = np.random.default_rng(6)
    a = rng.lognormal(np.log(2.0), 0.05, 200)
    b = rng.lognormal(np.log(1.0), 0.05, 200)
    est = np.median(a) / np.median(b)
    lo, hi = stats.ratio_of_medians_ci(a, b, n_boot=500)
    assert lo < est < hi and hi - lo < 0.1 and abs(est - 2.0) < 0.05
    lo2, hi2 = stats.bootstrap_ci(lambda x, y: np.median(x) / np.median(y), a, b, n_boot=300)
    assert lo2 < est < hi2 and abs(lo2 - lo) < 0.02 and abs(hi2 - hi) < 0.02
    assert stats.ratio_of_medians_ci([], b) == (None, None)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=60),
       st.lists(st.integers(0, 30), min_size=1, max_size=60))
def test_asymptotic_mwu_matches_scipy(a, b):
    if len(set(a) | set(b)) == 1:
        return
    ours = stats.mann_whitney_test(a, b)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    if ours.method == "asymptotic":
        assert ours.p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
        assert ours.u == pytest.approx(ref.statistic)


def test_asymptotic_mwu_matches_scipy_large_continuous():
    rng = np.random.default_rng(8)
    a, b = rng.normal(0, 1, 300), rng.normal(0.1, 1, 400)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    assert stats.mann_whitney(a, b) == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [6, 7, 30, 101, 1000, 20000])
def test_median_ci_ranks_match_scipy_binomial(n):
    ci = stats.median_ci(np.arange(n, dtype=float))
    j = ci.lo_rank
    assert sps.binom.cdf(j - 1, n, 0.5) <= 0.025 < sps.binom.cdf(j, n, 0.5)
    assert ci.coverage == pytest.approx(1 - 2 * sps.binom.cdf(j - 1, n, 0.5), rel=1e-9)


def _permutation_p(a, b) -> float:
    """Brute force: every split of the pooled values, mid-ranks, 2 x the smaller tail."""
    x = np.concatenate([a, b]).astype(float)
    r = sps.rankdata(x)
    obs = r[: len(a)].sum()
    sums = np.array([r[list(c)].sum() for c in itertools.combinations(range(x.size), len(a))])
    lo, hi = (sums <= obs + 1e-9).mean(), (sums >= obs - 1e-9).mean()
    return min(1.0, 2 * min(lo, hi))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=7),
       st.lists(st.integers(0, 4), min_size=1, max_size=7))
def test_exact_mwu_with_ties_matches_enumeration(a, b):
    r = stats.mann_whitney_test(a, b)
    if r.method == "degenerate":
        return
    assert r.p == pytest.approx(_permutation_p(a, b), rel=1e-9, abs=1e-12)


def test_small_tied_samples_are_not_overstated():
    # complete separation, 4 vs 4, with ties: the attainable p is 2/70, whatever the ties;
    # the normal approximation says 0.013 and would overstate the evidence
    r = stats.mann_whitney_test([1, 1, 1, 1], [2, 2, 2, 2])
    assert r.method == "exact-ties" and r.p == pytest.approx(2 / 70)
    asym = sps.mannwhitneyu([1] * 4, [2] * 4, method="asymptotic").pvalue
    assert asym < 0.02 < r.p
    # never below the untied minimum that the too-few-samples rule relies on
    rng = np.random.default_rng(10)
    for _ in range(200):
        na, nb = rng.integers(2, 7, 2)
        a, b = rng.integers(0, 3, na), rng.integers(0, 3, nb)
        if len(set(a) | set(b)) > 1:
            assert stats.mann_whitney(a, b) >= stats.min_pvalue(na, nb) - 1e-12


def test_same_distribution_with_ties_keeps_its_size():
    # quantised timings (many ties), same distribution: the exact test rejects at most
    # about alpha of the time
    rng = np.random.default_rng(12)
    sig = sum(stats.mann_whitney(rng.integers(0, 4, 8), rng.integers(0, 4, 8)) <= 0.05
              for _ in range(600))
    assert sig / 600 <= 0.065


def test_alpha_outside_zero_one_is_refused():
    for bad in (0.0, 1.0, 2.0, float("nan"), -0.1):
        with pytest.raises(ValueError):
            stats.min_n_per_side(bad)


def test_coverage_check_detects_a_too_narrow_interval():
    # negative control for the coverage tests above: ranks one step inward from the exact
    # ones (j+1, n-j) must fall below 95% coverage on the same kind of data, so the
    # coverage assertions can fail when the ranks are wrong
    rng = np.random.default_rng(20260522)
    n = 30
    j, k, _ = stats._median_ci_ranks(n, 0.95)
    hits_exact = hits_narrow = 0
    for row in rng.lognormal(0.0, 1.0, size=(2000, n)):
        srt = np.sort(row)
        hits_exact += srt[j - 1] <= 1.0 <= srt[k - 1]
        hits_narrow += srt[j] <= 1.0 <= srt[k - 2]
    assert hits_exact / 2000 >= 0.94
    assert hits_narrow / 2000 < 0.93


@pytest.mark.parametrize("n", [6, 10, 1000])
def test_median_ci_coverage_other_sample_counts(n):
    rng = np.random.default_rng(n)
    draws = rng.exponential(1.0, size=(1500, n))          # median ln 2
    hits = 0
    for row in draws:
        ci = stats.median_ci(row)
        hits += ci.low <= math.log(2) <= ci.high
    exact = stats.median_ci(draws[0]).coverage
    # binomial noise over 1500 draws: +-0.012 (2 sigma) around the exact coverage
    assert abs(hits / 1500 - exact) < 0.02, (hits / 1500, exact)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300))
def test_summarize_matches_numpy_and_median_ci(xs):
    # summarize sorts once and interpolates itself (speed); it must agree with numpy's
    # percentiles to the bit, and with median_ci's order statistics
    s = stats.summarize(xs)
    x = np.array(xs)
    assert [s["p5"], s["median"], s["p95"], s["p99"]] == \
        np.percentile(x, [5, 50, 95, 99]).tolist()
    ci = stats.median_ci(x)
    assert (s["ci_low"], s["ci_high"]) == (ci.low, ci.high)
    assert (s["min"], s["max"]) == (x.min(), x.max())
    assert s["std"] == pytest.approx(x.std(ddof=1) if x.size > 1 else 0.0, rel=1e-9,
                                     abs=1e-6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=80),
       st.lists(st.integers(0, 6), min_size=1, max_size=80))
def test_cliffs_delta_from_the_tests_u(a, b):
    # compare_groups takes Cliff's delta from the MWU statistic (exact, exact-ties,
    # asymptotic and degenerate paths alike)
    r = stats.mann_whitney_test(a, b)
    assert stats.cliffs_from_u(r.u, len(a), len(b)) == pytest.approx(stats.cliffs_delta(a, b),
                                                                     abs=1e-12)


def _bits(v):
    """A float's exact bits (NaN as one value), None as None: equality is bit-identity."""
    if v is None:
        return None
    v = float(v)
    return "nan" if math.isnan(v) else v.hex()


def _random_samples(rng, k):
    """Samples of the shapes reports meet: equal and unequal lengths, continuous, coarse
    timer ticks (ties), all-equal, negative, NaN, inf and empty."""
    out = []
    for i in range(k):
        n = int(rng.choice([0, 1, 2, 5, 6, 7, 30, 100, 257]))
        kind = i % 7
        if kind == 0:
            x = rng.lognormal(0, 0.3, n)
        elif kind == 1:
            x = np.round(rng.normal(5, 1, n), 1)          # timer ticks: many ties
        elif kind == 2:
            x = np.full(n, 3.25)
        elif kind == 3:
            x = rng.normal(-2, 10, n)
        elif kind == 4:
            x = rng.lognormal(0, 0.3, n)
            if n:
                x[rng.integers(0, n)] = np.nan
        elif kind == 5:
            x = rng.lognormal(0, 0.3, n)
            if n > 2:
                x[0] = np.inf
        else:
            x = rng.integers(0, 3, n).astype(float)
        out.append(x)
    return out


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")     # inf samples
@pytest.mark.parametrize("seed", range(6))
def test_summarize_many_is_bit_identical_to_summarize(seed):
    rng = np.random.default_rng(seed)
    xs = _random_samples(rng, 300)
    many = stats.summarize_many(xs)
    assert len(many) == len(xs)
    for x, got in zip(xs, many, strict=True):
        want = stats.summarize(x)
        assert list(got) == list(want)
        assert {k: _bits(v) for k, v in got.items()} == {k: _bits(v) for k, v in want.items()}
    # large batches of one length (the wide report store: 10,000 cells x 100 samples)
    xs = [rng.lognormal(0, 0.2, 100) for _ in range(500)]
    for x, got in zip(xs, stats.summarize_many(xs), strict=True):
        assert {k: _bits(v) for k, v in got.items()} == \
            {k: _bits(v) for k, v in stats.summarize(x).items()}


def test_summarize_many_batches_and_rejects_a_bad_level():
    with pytest.raises(ValueError):
        stats.summarize_many([[1.0, 2.0]], level=1.5)
    assert stats.summarize_many([]) == []


@pytest.mark.parametrize("seed", range(6))
def test_mann_whitney_many_is_bit_identical_to_the_single_test(seed):
    rng = np.random.default_rng(100 + seed)
    pairs = []
    for a, b in zip(_random_samples(rng, 200), _random_samples(rng, 200), strict=True):
        pairs.append((a, b))
    # many pairs of one shape on the asymptotic path, with and without ties and shifts
    for i in range(300):
        n1, n2 = (60, 60) if i % 2 else (100, 70)
        a = rng.lognormal(0, 0.3, n1)
        b = rng.lognormal(0.05 * (i % 3), 0.3, n2)
        if i % 5 == 0:
            a, b = np.round(a, 1), np.round(b, 1)
        if i % 17 == 0:
            a, b = np.full(n1, 2.0), np.full(n2, 2.0)
        if i % 23 == 0:
            a[3] = np.nan
        pairs.append((a, b))
    got = stats.mann_whitney_many(pairs)
    assert len(got) == len(pairs)
    methods = set()
    for (a, b), r in zip(pairs, got, strict=True):
        want = stats.mann_whitney_test(a, b)
        assert (_bits(r.p), _bits(r.u), r.method) == (_bits(want.p), _bits(want.u),
                                                       want.method)
        methods.add(r.method)
    assert {"asymptotic", "exact", "exact-ties", "degenerate", "empty"} <= methods


def test_exact_ties_counts_the_smaller_side():
    # 257 vs 7 with ties took 10 s when the larger side's subsets were counted; the
    # result is the mirror of 7 vs 257, and matches enumeration on a size that allows it
    rng = np.random.default_rng(8)
    a, b = np.round(rng.normal(5, 1, 257), 1), np.round(rng.normal(5.5, 1, 7), 1)
    ab, ba = stats.mann_whitney_test(a, b), stats.mann_whitney_test(b, a)
    assert ab.method == ba.method == "exact-ties"
    assert ab.p == pytest.approx(ba.p, rel=1e-12) and ab.u + ba.u == 257 * 7
    a, b = np.round(rng.normal(5, 1, 20), 0), np.round(rng.normal(6, 1, 3), 0)
    r = stats.mann_whitney_test(a, b)
    assert r.method == "exact-ties"
    assert r.p == pytest.approx(_permutation_p(a, b), rel=1e-9, abs=1e-12)
    assert stats.cliffs_from_u(r.u, 20, 3) == pytest.approx(stats.cliffs_delta(a, b))


def test_batches_split_into_chunks_give_the_same_bits(monkeypatch):
    # a real batch is capped at 2^18 values; a tiny cap makes many chunks of a few rows
    rng = np.random.default_rng(21)
    xs = [rng.lognormal(0, 0.2, 60) for _ in range(50)]
    pairs = [(np.round(rng.normal(0, 1, 55), 1), rng.normal(0.2, 1, 50)) for _ in range(50)]
    whole_s, whole_p = stats.summarize_many(xs), stats.mann_whitney_many(pairs)
    monkeypatch.setattr(stats, "_BATCH_VALUES", 300)
    assert stats.summarize_many(xs) == whole_s
    assert stats.mann_whitney_many(pairs) == whole_p
    assert whole_s == [stats.summarize(x) for x in xs]
    assert whole_p == [stats.mann_whitney_test(a, b) for a, b in pairs]


def test_weighted_holm():
    # equal weights are Holm; a heavier weight is tested first at a larger share of alpha
    p = [0.01, 0.04, 0.03, None]
    assert np.allclose(stats.holm(p, [1, 1, 1, 1])[:3], stats.holm(p)[:3])
    adj = stats.holm([0.02, 0.01, 0.01], [2.0, 1.0, 1.0])
    # order by p/w: 0.01 (w 2 -> 0.02/2), then the two 0.01/1; sums of remaining weights 4, 2
    assert adj.tolist() == pytest.approx([0.04, 0.04, 0.04])
    adj = stats.holm([0.001, 0.3], [1.0, 3.0])
    assert adj.tolist() == pytest.approx([0.004, 0.3])
    with pytest.raises(ValueError):
        stats.holm([0.1], [0.0])
