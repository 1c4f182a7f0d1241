"""stats.launch: launch-level estimates and tests, checked against scipy's Welch t and
against known distributions (seeded; tolerances several standard errors wide)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from mpibench.stats import launch as L


def test_compare_is_welch_on_logs():
    rng = np.random.default_rng(1)
    a = np.exp(rng.normal(0.0, 0.1, 5))
    b = np.exp(rng.normal(0.1, 0.2, 4))
    r = L.compare(a, b, "lower")
    ref = sps.ttest_ind(np.log(b), np.log(a), equal_var=False)
    assert r.tested and r.p == pytest.approx(ref.pvalue, rel=1e-9)
    assert r.df == pytest.approx(ref.df, rel=1e-9)
    # gain of a time metric = baseline / candidate (ratio of geometric means)
    gm = math.exp(np.log(a).mean() - np.log(b).mean())
    assert r.gain == pytest.approx(gm)
    ci = ref.confidence_interval(0.95)
    assert (r.ci_low, r.ci_high) == pytest.approx((math.exp(-ci.high), math.exp(-ci.low)))
    # a rate: candidate / baseline, same p
    q = L.compare(a, b, "higher")
    assert q.gain == pytest.approx(1 / gm) and q.p == pytest.approx(r.p)


def test_one_launch_per_side_decides_nothing():
    r = L.compare([1.0], [2.0], "lower")
    assert not r.tested and r.p is None and r.gain == pytest.approx(0.5)
    assert "too few launches (1+1" in r.reason
    r = L.compare([1.0, 1.1, 0.9], [2.0], "lower")
    assert not r.tested and r.sd_log is not None      # one side's spread plans the next run


def test_identical_launches_and_no_spread():
    assert L.compare([2.0, 2.0], [2.0, 2.0], "lower").p == 1.0
    r = L.compare([2.0, 2.0], [3.0, 3.0], "lower")
    assert not r.tested and "no spread" in r.reason


def test_estimate_geomean_and_t_ci():
    vals = [1.0, 1.3, 1.0]
    e = L.estimate(vals)
    y = np.log(vals)
    h = sps.t.ppf(0.975, 2) * y.std(ddof=1) / math.sqrt(3)
    assert e.value == pytest.approx(math.exp(y.mean()))
    assert (e.ci_low, e.ci_high) == pytest.approx((math.exp(y.mean() - h),
                                                   math.exp(y.mean() + h)))
    assert L.estimate([5.0]).ci_low is None and L.estimate([]).value is None


def test_estimate_ci_covers_at_95_percent():
    rng = np.random.default_rng(7)
    n, hits = 2000, 0
    for _ in range(n):
        e = L.estimate(np.exp(rng.normal(0.0, 0.3, 4)))
        hits += e.ci_low <= 1.0 <= e.ci_high
    assert 0.93 <= hits / n <= 0.97


def test_false_positive_rate_and_gain_ci_coverage_under_the_null():
    rng = np.random.default_rng(11)
    n, sig, cover = 2000, 0, 0
    for _ in range(n):
        a = np.exp(rng.normal(0.0, 0.3, 3))
        b = np.exp(rng.normal(0.0, 0.3, 5))
        r = L.compare(a, b, "lower")
        sig += r.p <= 0.05
        cover += r.ci_low <= 1.0 <= r.ci_high
    assert sig / n <= 0.06
    assert 0.93 <= cover / n <= 0.97


def test_planning_matches_simulated_power():
    # 10% at sigma 0.05: the t approximation asks for 6 launches per side; at that count a
    # simulation detects it in ~80% of trials, at 5 in fewer
    n = L.launches_needed(0.05, 0.10)
    assert n == 6
    rng = np.random.default_rng(3)
    hits = sum(L.compare(np.exp(rng.normal(0, 0.05, n)),
                         np.exp(rng.normal(math.log(1.1), 0.05, n)), "higher").p <= 0.05
               for _ in range(1500))
    assert 0.74 <= hits / 1500 <= 0.90
    d = L.detectable_effect(0.05, n, n)
    assert d <= 0.10 < L.detectable_effect(0.05, n - 1, n - 1)
    assert L.launches_needed(None, 0.05) is None
    assert L.launches_needed(0.3, 0.05) > L.launches_needed(0.1, 0.05)


def test_aggregate_per_launch_equals_geomean_of_cells_when_complete():
    rng = np.random.default_rng(5)
    rows = []
    gains = []
    u_a = {f"a{i}": rng.normal(0, 0.1) for i in range(4)}
    u_b = {f"b{i}": rng.normal(0, 0.1) for i in range(4)}
    for s in range(6):
        base = {k: math.exp(s + u) for k, u in u_a.items()}
        cand = {k: math.exp(s + 0.05 + u) for k, u in u_b.items()}
        rows.append((base, cand, "lower"))
        gains.append(L.compare(list(base.values()), list(cand.values()), "lower").gain)
    agg = L.aggregate(rows)
    assert agg.gain == pytest.approx(math.exp(np.mean(np.log(gains))))
    # launch effects are shared by all six cells: the aggregate has 4+4 launches, not 24+24
    assert (agg.n_base, agg.n_cand) == (4, 4)
    assert agg.tested and agg.ci_low < agg.gain < agg.ci_high
