"""stats.two_stage: the stage-2-spread test of a repeats = "auto" campaign, the wider of it
and the ordinary test, and the plan (known numbers; a known distribution where a stop
selected the stage-1 spread)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from mpibench.stats import launch as L
from mpibench.stats import two_stage as T


def _cell(a, b):
    rounds = {(s, i): i for s in "ab" for i in range(len(a))}
    return ({("a", i): float(x) for i, x in enumerate(a)},
            {("b", i): float(x) for i, x in enumerate(b)}, "lower"), rounds


def test_stage_two_test_is_the_mean_of_all_with_the_stage_two_spread():
    # one cell, paired by round: the CI is mean(d over all 8 rounds) ± t(0.975, 4) x
    # sd(d over rounds 3..7) / sqrt(8), and p is that t test's
    a = np.exp(np.array([0.0, 0.01, -0.02, 0.03, 0.0, -0.01, 0.02, 0.01]))
    b = np.exp(np.array([0.02, 0.0, 0.01, -0.02, 0.04, 0.01, -0.01, 0.03]))
    cell, rounds = _cell(a, b)
    first = {("a", i) for i in range(3)} | {("b", i) for i in range(3)}
    (t, which), = T.compare_staged([cell], first, rounds=rounds)
    d = np.log(a) - np.log(b)                 # oriented: lower is better
    h = sps.t.ppf(0.975, 4) * d[3:].std(ddof=1) / math.sqrt(8)
    p = 2 * sps.t.sf(abs(d.mean()) / (d[3:].std(ddof=1) / math.sqrt(8)), 4)
    full = L.compare_cells([cell], rounds=rounds)[0]
    assert full.ci_high - full.ci_low < t.ci_high - t.ci_low      # the wider one here
    assert which == T.STAGE_TWO and t.pairing == "round" and t.pairs == 8
    assert abs(math.log(t.gain) - d.mean()) < 1e-12
    assert abs(math.log(t.ci_high) - (d.mean() + h)) < 1e-9
    assert abs(math.log(t.ci_low) - (d.mean() - h)) < 1e-9
    assert abs(t.p - p) < 1e-6
    # the CI at the p's level touches 1: the printed CI and p are one statistic
    lo, hi = t.ci_at(1 - t.p)
    assert min(abs(lo - 1), abs(hi - 1)) < 1e-6


def test_the_stage_two_test_plans_on_its_own_spread_and_df():
    # the figures "these launches detect >= X%" describe the test the cell got: the
    # stage-2 test of 8 paired rounds (3 + 5) has 4 df and the stage-2 spread, so its
    # detectable effect is the noncentral t's at 4 df, not the 7 df ordinary test's
    a = np.exp(np.array([0.0, 0.01, -0.02, 0.03, 0.0, -0.01, 0.02, 0.01]))
    b = np.exp(np.array([0.02, 0.0, 0.01, -0.02, 0.04, 0.01, -0.01, 0.03]))
    cell, rounds = _cell(a, b)
    first = {("a", i) for i in range(3)} | {("b", i) for i in range(3)}
    (t, which), = T.compare_staged([cell], first, rounds=rounds)
    assert which == T.STAGE_TWO
    d = np.log(a) - np.log(b)
    se = d[3:].std(ddof=1) / math.sqrt(8)
    crit = sps.t.ppf(0.975, 4)

    def power(delta):
        return sps.nct.sf(crit, 4, delta) + sps.nct.cdf(-crit, 4, delta)
    from scipy.optimize import brentq
    k = brentq(lambda x: power(x) - 0.8, 0.1, 8)
    # planned on the stage-2 variance raised to its median-unbiased value at its 4 df
    # (stats.launch.plan_round_part: one cell, no floor), the power still at 4 df
    want = math.expm1(k * se * math.sqrt(4 / sps.chi2.ppf(0.5, 4)))
    assert abs(t.detectable - want) < 1e-3 * want, (t.detectable, want)
    assert abs(L.detectable_at(t, 0.05) - want) < 1e-3 * want
    assert abs(t.df - 4) < 1e-9
    full = L.compare_cells([cell], rounds=rounds)[0]
    assert abs(full.df - 7) < 1e-9 and full.detectable < want       # what it printed before


def test_unpaired_sides_are_each_scaled_by_their_own_stage_two_share():
    # a staged side (3 + 5 launches) against another campaign's 6, none of them stage 1:
    # unpaired, the baseline's stage-2 variance is over its 8 launches and the other
    # side's over its 6: se^2 = s_b(3..7)^2 / 8 + s_c^2 / 6, Welch's df from those two
    # parts (4 and 5 df). One factor for both (max(5/8, 6/6) = 1) left the staged side's
    # part over 5 launches
    rng = np.random.default_rng(11)
    a, b = np.exp(rng.normal(0, 0.05, 8)), np.exp(rng.normal(0, 0.02, 6))
    cell = ({("a", i): float(x) for i, x in enumerate(a)},
            {("b", i): float(x) for i, x in enumerate(b)}, "lower")
    first = {("a", i) for i in range(3)}
    full = L.compare_cells([cell])[0]
    late = L.compare_cells([({k: v for k, v in cell[0].items() if k not in first},
                             cell[1], "lower")])[0]
    t = T.stage_two_test(full, late)
    va, vb = np.log(a)[3:].var(ddof=1) / 8, np.log(b).var(ddof=1) / 6
    assert full.pairing == "none" and (full.n_base, full.n_cand) == (8, 6)
    assert abs(t.se_log ** 2 - (va + vb)) < 1e-12
    assert abs(t.df - (va + vb) ** 2 / (va ** 2 / 4 + vb ** 2 / 5)) < 1e-9
    assert t.gain == full.gain
    # pooled over a benchmark's 4 sizes: each side's launch and cell parts (its Spread
    # over its own stage-2 launches) over its own launch count, and the shared part too
    u = rng.normal(0, 0.04, (8, 1)) + rng.normal(0, 0.01, (8, 4))
    w = rng.normal(0, 0.02, (6, 1)) + rng.normal(0, 0.01, (6, 4))
    cells = [({("a", i): float(math.exp(x)) for i, x in enumerate(u[:, k])},
              {("b", i): float(math.exp(x)) for i, x in enumerate(w[:, k])}, "lower")
             for k in range(4)]
    full = L.compare_cells(cells)[0]
    late = L.compare_cells([({k: v for k, v in c[0].items() if k not in first}, c[1],
                             "lower") for c in cells])[0]
    t = T.stage_two_test(full, late)
    sa = L.spread({k: {i: v for i, v in c[0].items() if i not in first}
                   for k, c in enumerate(cells)})
    sb = L.spread({k: c[1] for k, c in enumerate(cells)})
    assert full.pooled and late.pooled
    # 4 sizes (fewer than FEW_CELLS): each size's own cell part, here size 0's
    want = sum(v for v, _ in sa.components(8, 0)) + sum(v for v, _ in sb.components(6, 0))
    assert abs(t.se_log ** 2 - want) < 1e-12
    assert abs(t.shared_var - (sa.shared(8) + sb.shared(6))) < 1e-12


def test_the_ordinary_test_where_it_is_wider_or_stage_two_cannot_be_tested():
    rng = np.random.default_rng(3)
    a, b = np.exp(rng.normal(0, 0.05, 8)), np.exp(rng.normal(0, 0.05, 8))
    cell, rounds = _cell(a, b)
    full = L.compare_cells([cell], rounds=rounds)[0]
    first = {("a", i) for i in range(3)} | {("b", i) for i in range(3)}
    late = L.compare_cells([({k: v for k, v in cell[0].items() if k not in first},
                             {k: v for k, v in cell[1].items() if k not in first},
                             "lower")], rounds=rounds)[0]
    s = T.stage_two_test(full, late)
    assert s is not None and s.gain == full.gain
    # by hand: the ordinary paired CI is t(0.975, 7) sd(d) / sqrt(8) wide each side, the
    # stage-2 one t(0.975, 4) sd(d[3:]) / sqrt(8): 0.103 vs 0.026, so the ordinary one
    d = np.log(a) - np.log(b)
    wf = sps.t.ppf(0.975, 7) * d.std(ddof=1) / math.sqrt(8)
    ws = sps.t.ppf(0.975, 4) * d[3:].std(ddof=1) / math.sqrt(8)
    assert abs(math.log(full.ci_high / full.ci_low) / 2 - wf) < 1e-9
    assert abs(math.log(s.ci_high / s.ci_low) / 2 - ws) < 1e-9
    assert wf > ws and T.wider(full, s) == (full, T.ORDINARY)
    assert T.wider(full, None) == (full, T.ORDINARY)
    # only 2 stage-2 rounds of 3 + 2: the stage-2 launches are not tested paired (fewer
    # than MIN_PAIRS) while all launches are: the ordinary test, and the note says why
    cell5, rounds5 = _cell(a[:5], b[:5])
    (t, which), = T.compare_staged([cell5], first, rounds=rounds5)
    assert t == L.compare_cells([cell5], rounds=rounds5)[0]
    assert which.startswith(T.ORDINARY + ": no stage-2 test")


def test_the_stage_two_ci_keeps_its_coverage_where_a_small_stage_one_spread_stopped():
    # Normal launches, one cell, paired, 6 rounds (3 + 3). Keep only the draws whose
    # stage-1 spread fell in its lower 20% (a rule that stops when it is small): the
    # ordinary CI over all 6 rounds misses more often there, the stage-2-spread CI's
    # misses stay ~ Binomial(k, 0.05) (its spread never saw the selection)
    rng = np.random.default_rng(8)
    q = math.sqrt(sps.chi2.ppf(0.2, 2) / 2)       # sd ratio at the 20% quantile, df 2
    first = {("a", i) for i in range(3)} | {("b", i) for i in range(3)}
    k = miss_s = miss_o = 0
    while k < 600:
        a, b = np.exp(rng.normal(0, 0.05, 6)), np.exp(rng.normal(0, 0.05, 6))
        d = np.log(a) - np.log(b)
        if d[:3].std(ddof=1) > q * 0.05 * math.sqrt(2):
            continue
        k += 1
        cell, rounds = _cell(a, b)
        full = L.compare_cells([cell], rounds=rounds)[0]
        (t, _which), = T.compare_staged([cell], first, rounds=rounds)
        miss_o += not full.ci_low <= 1.0 <= full.ci_high
        miss_s += not t.ci_low <= 1.0 <= t.ci_high
    assert miss_s <= sps.binom.ppf(0.999, k, 0.05), miss_s
    assert miss_o > sps.binom.ppf(0.999, k, 0.05), miss_o      # the selection is real


def test_plan_total_from_the_stage_one_tests():
    rng = np.random.default_rng(5)
    first = {("a", i) for i in range(3)} | {("b", i) for i in range(3)}

    def tests(sd):
        cells = [({("a", i): float(x) for i, x in enumerate(np.exp(rng.normal(0, sd, 3)))},
                  {("b", i): float(x) for i, x in enumerate(np.exp(rng.normal(0, sd, 3)))},
                  "lower") for _ in range(4)]
        assert all(k in first for c in cells for k in (*c[0], *c[1]))
        return L.compare_cells(cells)
    goal = math.log1p(0.05)
    assert T.plan_total(tests(0.001), 3, 3, 10, goal) == 6       # the smallest total
    assert T.plan_total(tests(0.3), 3, 3, 10, goal) == 10        # the maximum
    # one paired cell, stage-1 round differences 0, +0.045, -0.045 (sd 0.045): the total
    # is the smallest n in [6, 10] with t(0.975, n - 4) 0.045 / sqrt(n) <= log 1.05 (the
    # stage-2 spread's n - 3 - 1 df): 8 by hand (7: 0.054, 8: 0.044)
    d = [0.0, 0.045, -0.045]
    cell, rounds = _cell(np.exp(d), np.ones(3))
    (t,) = L.compare_cells([cell], rounds=rounds)
    assert t.pairing == "round"
    by_hand = next(n for n in range(6, 11)
                   if sps.t.ppf(0.975, n - 4) * 0.045 / math.sqrt(n) <= goal)
    assert by_hand == 8 and T.plan_total([t], 3, 3, 10, goal) == 8
    assert T.plan_total(tests(0.001), 3, 3, 5, goal) == 5        # no choice: max
    assert (T.smallest_total(3, 10), T.staged(3, 10), T.staged(3, 5)) == (6, True, False)


def test_unpaired_pooled_sides_are_scaled_by_their_own_component_counts():
    # 6 sizes, a staged side (3 + 5 launches) against another campaign's 6: the staged
    # side's smallest sizes have no cell-specific spread, so their moderated cell part is 0
    # (Spread.components dropped such a part when this test was written; it keeps it now,
    # and the count still matters where a side has no cell part at all). Counting the
    # sides' components from the pooled parts (2 each) scaled the other side's launch
    # part by the staged side's 5/8 instead of 6/6: a stage-2 CI too narrow
    rng = np.random.default_rng(3)
    sds = np.array([0.0, 0.002, 0.005, 0.01, 0.03, 0.06])
    u = rng.normal(0, 0.04, (8, 1)) + rng.normal(0, 1, (8, 6)) * sds
    w = rng.normal(0, 0.02, (6, 1)) + rng.normal(0, 0.01, (6, 6))
    cells = [({("a", i): float(math.exp(x)) for i, x in enumerate(u[:, k])},
              {("b", i): float(math.exp(x)) for i, x in enumerate(w[:, k])}, "lower")
             for k in range(6)]
    first = {("a", i) for i in range(3)}
    full = L.compare_cells(cells)
    late = L.compare_cells([({k: v for k, v in c[0].items() if k not in first}, c[1],
                             "lower") for c in cells])
    sa = L.spread({k: {i: v for i, v in c[0].items() if i not in first}
                   for k, c in enumerate(cells)})
    # one gate per benchmark (compare_cells): sa's sizes differ, so sb keeps its own too
    sb = L.spread({k: c[1] for k, c in enumerate(cells)}, force=True)
    assert sa.cell_parts is not None and sa.cell_parts[0][0] == 0.0   # the case
    for k in range(6):
        t = T.stage_two_test(full[k], late[k])
        want = sa.components(8, k) + sb.components(6, k)
        assert len(t.components) == len(want)
        for (v, d), (wv, wd) in zip(t.components, want, strict=True):
            assert abs(v - wv) <= 1e-12 * wv and d == wd
        assert abs(t.se_log ** 2 - sum(v for v, _ in want)) < 1e-15


def test_plan_total_keeps_a_moderated_cell_parts_prior_df():
    # a paired stage-1 test of 3 rounds whose cell has its own moderated cell part with
    # d0 + d_g = 10 + 2 = 12 df (the pooled part of 22 sizes: 42): the stage-2 test of
    # n - 3 rounds will have 10 + (n - 3 - 1) df, not 12 (n - 4) / 2 (the prior's d0
    # does not grow). Planned on the df it will have: 8 rounds; scaled whole, 7
    goal = math.log1p(0.05)

    def by_hand(cell_df):
        for n in range(6, 40):
            comps = ((1e-6 * 3 / n, n - 4.0), (0.0012 * 3 / n, cell_df(n)))
            if L.cochran_cox_crit(comps, 0.025) * math.sqrt(sum(v for v, _ in comps)) <= goal:
                return n
    t = L.LaunchTest(1.0, 0.9, 1.1, 0.5, 3, 3, True, se_log=0.04, pairing="round", pairs=3,
                     components=((1e-6, 2.0), (0.0012, 12.0)), own_cell=True, pooled=True,
                     parts=((1e-6, 2.0, 0.0004, 42.0, 22.0),))
    assert by_hand(lambda n: 10.0 + n - 4) == 8 and by_hand(lambda n: 6.0 * (n - 4)) == 7
    assert T.plan_total([t], 3, 3, 40, goal) == 8
