"""stats.multiplicity: the table's family-wise procedure, checked on known distributions
(seeded draws; tolerances several standard errors wide) and against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from mpibench import stats
from mpibench.stats import multiplicity as M
from mpibench.stats.launch import two_sided_p

BIG_DF = 1e6        # components with this many df: the t test is the z test


def test_max_p_limits():
    p = np.array([0.001, 0.01, 0.04, 0.2])
    # rho = 0: Sidak's 1 - (1 - p)^S
    assert M.equicorrelated_max_p(p, 0.0) == pytest.approx(1 - (1 - p) ** 4, rel=1e-6)
    # negative rho is taken as 0 (conservative)
    assert M.equicorrelated_max_p(p, -0.3) == pytest.approx(1 - (1 - p) ** 4, rel=1e-6)
    # more correlation, fewer chances: decreasing in rho, and never below p or above S p
    prev = M.equicorrelated_max_p(p, 0.0)
    for rho in (0.3, 0.6, 0.9, 0.99):
        cur = M.equicorrelated_max_p(p, rho)
        assert np.all(cur <= prev + 1e-12) and np.all(cur >= p)
        prev = cur
    assert np.all(prev < 1.6 * p)
    assert M.equicorrelated_max_p([0.03], 0.5) == pytest.approx([0.03])


def test_max_p_is_the_tail_of_the_maximum():
    rng = np.random.default_rng(7)
    rho, s, n = 0.7, 8, 200_000
    z = (math.sqrt(rho) * rng.standard_normal((n, 1))
         + math.sqrt(1 - rho) * rng.standard_normal((n, s)))
    mx = np.abs(z).max(axis=1)
    for p in (0.05, 0.01, 0.002):
        want = float(np.mean(mx >= sps.norm.isf(p / 2)))
        got = float(M.equicorrelated_max_p([p] * s, rho)[0])
        se = math.sqrt(want * (1 - want) / n)
        assert abs(got - want) < 5 * se + 1e-4, (p, got, want)


def test_graph_units_with_one_hypothesis_per_unit_is_holm():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 12):
        p = rng.uniform(0, 0.1, m) ** 2
        units = list(range(m))
        w = {u: 1.0 / m for u in units}
        edges = {u: {v: 1.0 / (m - 1) for v in units if v != u} for u in units}
        assert M.graph_units(p, units, w, edges) == pytest.approx(stats.holm(p))
        assert M.holm_units(p, [1.0] * m, units) == pytest.approx(stats.holm(p))
    # weighted: Holm's weighted procedure is the graph passing shares in proportion
    p = [0.01, 0.002, 0.04, 0.3]
    ws = [0.1, 0.2, 0.3, 0.4]
    units = [0, 1, 2, 3]
    edges = {u: {v: ws[v] / (1 - ws[u]) for v in units if v != u} for u in units}
    assert M.graph_units(p, units, dict(enumerate(ws)), edges) == \
        pytest.approx(stats.holm(p, ws))
    assert M.holm_units(p, ws, units) == pytest.approx(stats.holm(p, ws))


def test_graph_units_gatekeeper_and_units():
    # a gatekeeper with all of alpha passing it to two rows: rows tested at alpha / 2 only
    # after it is rejected; a unit holds its weight until all its hypotheses are rejected
    units = ["v", ("r", 1), ("r", 1), ("r", 2)]
    w = {"v": 1.0}
    edges = {"v": {("r", 1): 0.5, ("r", 2): 0.5}, ("r", 1): {("r", 2): 1.0},
             ("r", 2): {("r", 1): 1.0}}
    adj = M.graph_units([0.03, 0.01, 0.02, 0.2], units, w, edges)
    # v: 0.03; r1's 0.01 at weight 0.5 -> 0.02 (< 0.03, so 0.03); r1's 0.02 -> 0.04;
    # then r1 is gone and r2 holds everything: 0.2
    assert adj == pytest.approx([0.03, 0.03, 0.04, 0.2])
    # nothing is rejected before the gate: the rows' adjusted p are never below the gate's
    adj = M.graph_units([0.5, 0.0001, 0.0001, 0.0001], units, w, edges)
    assert np.all(adj[1:] >= 0.5)


def _comps(su2: float, sv2: float):
    return lambda k: ((su2, BIG_DF), (sv2 / k, BIG_DF))


def test_closed_mean_p_bounds_the_exact_closed_test():
    rng = np.random.default_rng(11)
    su2, sv2 = 0.02 ** 2, 0.015 ** 2
    ck = _comps(su2, sv2)
    for _ in range(30):
        x = rng.normal(0.02, 0.03, 6)
        got = M.closed_mean_p(x, ck)
        for s in range(6):
            exact = 0.0
            for k in range(1, 7):
                comps = ck(k)
                se = math.sqrt(sum(v for v, _ in comps))
                for rest in itertools.combinations([j for j in range(6) if j != s], k - 1):
                    m = x[[s, *rest]].mean()
                    exact = max(exact, float(two_sided_p(np.array([m / se]), comps)[0]))
            assert got[s] >= exact - 1e-12
            own = float(two_sided_p(np.array([x[s] / math.sqrt(su2 + sv2)]), ck(1))[0])
            assert got[s] >= own - 1e-12


@pytest.mark.parametrize("mean_share, n", [(None, 800), (0.9, 400)])
def test_closed_mean_p_controls_the_familywise_error(mean_share, n):
    """Six cells sharing a launch effect (correlation 0.64), known variances: under the
    complete null and with two real effects, rejecting at p <= 0.05 makes a false
    rejection in <= 5% of blocks; with a shared real effect it rejects far more than
    Bonferroni. n blocks per effect: the band is 5% + 3 Monte Carlo standard errors of a
    5% rate (n = 800: +2.3 points; n = 400: +3.3 points, where the maxT arm's quadrature
    makes each block ~7x dearer). The rates seen are 1-3% (seed 5) either way; a closed
    test that stops at single cells (k = 1 only) has 14-16% and fails at both n."""
    rng = np.random.default_rng(5)
    su2, sv2 = 0.04 ** 2, 0.03 ** 2
    ck = _comps(su2, sv2)
    sd = math.sqrt(su2 + sv2)
    for effect in (np.zeros(6), np.array([0.2, 0.2, 0, 0, 0, 0])):
        bad = 0
        for _ in range(n):
            x = effect + rng.normal(0, math.sqrt(su2)) + rng.normal(0, math.sqrt(sv2), 6)
            pv = 2 * sps.norm.sf(np.abs(x) / sd)
            adj = (M.closed_mean_p(x, ck) if mean_share is None else
                   M.closed_mean_p(x, ck, pv, rho=su2 / (su2 + sv2), mean_share=mean_share))
            bad += bool(np.any((adj <= 0.05) & (effect == 0)))
        rate = bad / n
        assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n), (effect, rate)
    hits = bonf = 0
    for _ in range(200):
        x = 0.1 + rng.normal(0, math.sqrt(su2)) + rng.normal(0, math.sqrt(sv2), 6)
        pv = 2 * sps.norm.sf(np.abs(x) / sd)
        adj = (M.closed_mean_p(x, ck) if mean_share is None else
               M.closed_mean_p(x, ck, pv, rho=su2 / (su2 + sv2), mean_share=mean_share))
        hits += int((adj <= 0.05).sum())
        bonf += int((pv <= 0.05 / 6).sum())
    assert hits > 1.3 * bonf


class _T:
    """The parts of a stats.launch.LaunchTest adjust_table reads, for a cell tested on its
    own launches (not pooled)."""
    tested, pooled, se_log = True, False, None

    def __init__(self, p: float):
        self.p = p


def test_adjust_table_is_holm_for_single_cells_and_keeps_earlier_rejections():
    # three cells tested on their own launches, no verdict: Holm
    ps = [0.5, 0.02, 0.03]
    hyps = [M.Hypothesis("cell", _T(p), "b") for p in ps]
    adj, family = M.adjust_table(hyps)
    assert adj == pytest.approx(list(stats.holm(ps))) and family == pytest.approx(1 / 3)
    # a cell decided significant at an earlier look of the sequential rule stays rejected
    # (adjusted p 0) and passes its share on: the others are Holm over two
    hyps[0] = hyps[0]._replace(rejected=True)
    adj, _f = M.adjust_table(hyps)
    assert adj == pytest.approx([0.0, 0.04, 0.04])
    # untested hypotheses are not in the family
    none = M.Hypothesis("geomean", None, "b")
    adj, _f = M.adjust_table([*hyps, none])
    assert adj[-1] is None and adj[:3] == pytest.approx([0.0, 0.04, 0.04])
