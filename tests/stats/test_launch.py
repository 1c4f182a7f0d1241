"""stats.launch: launch-level estimates and tests, checked against scipy's Welch t and
against known distributions (seeded; tolerances several standard errors wide)."""

from __future__ import annotations

import inspect
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
    assert r.untested is L.Untested.TOO_FEW_LAUNCHES      # what readers branch on
    r = L.compare([1.0, 1.1, 0.9], [2.0], "lower")
    assert not r.tested and r.sd_log is not None      # one side's spread plans the next run


def test_identical_launches_and_no_spread():
    assert L.compare([2.0, 2.0], [2.0, 2.0], "lower").p == 1.0
    r = L.compare([2.0, 2.0], [3.0, 3.0], "lower")
    assert not r.tested and "no spread" in r.reason
    assert r.untested is L.Untested.NO_SPREAD
    assert L.compare([2.0, 2.0], [2.0, 2.0], "lower").untested is None    # tested: p = 1


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
    n, sig, cover = 1500, 0, 0
    for _ in range(n):
        a = np.exp(rng.normal(0.0, 0.3, 4))
        b = np.exp(rng.normal(0.0, 0.3, 5))
        r = L.compare(a, b, "lower")
        sig += r.p <= 0.05
        cover += r.ci_low <= 1.0 <= r.ci_high
    assert sig / n <= 0.06
    assert 0.93 <= cover / n <= 0.97


def test_two_launches_against_seven_keep_alpha():
    # Welch's df are liberal when the 2-launch side is the noisier one (about 10% at alpha
    # 0.05); the Cochran-Cox critical value the test switches to stays at or below alpha
    rng = np.random.default_rng(12)
    n = 400
    ps = [L.compare(np.exp(rng.normal(0.0, 0.3, 2)), np.exp(rng.normal(0.0, 0.1, 7)),
                    "lower").p for _ in range(n)]
    welch = [sps.ttest_ind(np.log(np.exp(rng.normal(0.0, 0.3, 2))),
                           rng.normal(0.0, 0.1, 7), equal_var=False).pvalue for _ in range(n)]
    assert np.mean(np.array(ps) <= 0.05) <= 0.06
    assert np.mean(np.array(welch) <= 0.05) > np.mean(np.array(ps) <= 0.05)


def _two_mode(rng, n_b, n_c, sizes=10):
    """A/A cells of one benchmark on a two-mode machine: each launch is slow (x3) or fast
    with probability 1/2, plus a normal launch effect (0.05 shared, 0.025 per size)."""
    def side(n):
        u = math.log(3.0) * (rng.random((n, 1)) < 0.5) + rng.normal(0, 0.05, (n, 1))
        return u + rng.normal(0, 0.025, (n, sizes))
    ub, uc = side(n_b), side(n_c)
    return [({f"b{i}": math.exp(ub[i, s]) for i in range(n_b)},
             {f"c{i}": math.exp(uc[i, s]) for i in range(n_c)}, "lower")
            for s in range(sizes)]


@pytest.mark.parametrize("pool", [True, False])
def test_a_two_launch_side_in_one_mode_is_not_taken_as_the_quieter_one(pool):
    # 2 vs 7 on a two-mode machine: both launches of the small side land in one mode half
    # of the time, and its own spread is then the within-mode one while the 7 launches'
    # mean sits between the modes. Without floor_component: 14-15% false positives per
    # cell here; floored at the other side's spread, at or below alpha. 150 benchmarks
    # (300 before): floored 0.7% / 99.3% coverage at this seed (per-benchmark sd 5.8
    # points: se 0.5); floor_component made the identity 14.9% / 14.7% (pool / not) and
    # 85.1% / 85.3% (se of the rate 2.7 points: the bounds 3.2 se away)
    rng = np.random.default_rng(31)
    sig = cover = n = 0
    for _ in range(150):
        for t in L.compare_cells(_two_mode(rng, 2, 7), pool=pool):
            n += 1
            sig += t.p <= 0.05
            cover += t.ci_low <= 1.0 <= t.ci_high
    assert sig / n <= 0.06 and cover / n >= 0.94


def test_floor_component_looks_at_the_design_and_the_spreads_only():
    # a thin component (< WELCH_MIN_DF df) below the other side's takes the other's
    # variance with one df more than its own (never more than the other's)
    assert L.floor_component(0.01, 1, 0.04, 6) == (0.04, 2)
    assert L.floor_component(0.01, 2, 0.04, 6) == (0.04, 3)
    assert L.floor_component(0.01, 1, 0.04, 1) == (0.01, 1)      # 2+2: neither knows more
    assert L.floor_component(0.09, 1, 0.04, 6) == (0.09, 1)      # noisier: its own
    assert L.floor_component(0.01, 3, 0.04, 6) == (0.01, 3)      # 4 launches: its own


def _two_mode_size(rng, n_b, n_c, sizes):
    """A/A cells of one benchmark whose LAST size falls in two modes (a launch's value x3
    at that size with probability 1/2), the others quiet (cell part sd 0.05, launch effect
    sd 0.03 a side): the reviewer's case of a thin side's own cell part."""
    def side(n):
        x = rng.normal(0, 0.03, (n, 1)) + rng.normal(0, 0.05, (n, sizes))
        x[:, -1] += math.log(3.0) * (rng.random(n) < 0.5)
        return x
    ub, uc = side(n_b), side(n_c)
    return [({f"b{i}": math.exp(ub[i, s]) for i in range(n_b)},
             {f"c{i}": math.exp(uc[i, s]) for i in range(n_c)}, "lower")
            for s in range(sizes)]


def test_a_thin_sides_own_cell_part_is_floored_in_a_two_mode_size():
    # 2 vs 7, 4 sizes (each its own cell part below FEW_CELLS): both launches of the thin
    # side land in one mode at the two-mode size half of the time, and its own part (1 df)
    # is then the within-mode spread. Unfloored: ~11% false positives there; floored at
    # the other side's part for that size (floor_component), at or below alpha. 600
    # benchmarks: the bound binom.ppf(0.999, 600, 0.05) = 48 (8.0%) fails a true 5% rate
    # 0.06% of seeds and catches a false-positive rate of 10% (2x alpha) 94.5% of the
    # time, 11% 99%; at 300 (bound 28, 9.3%) a 10% rate would pass 40% of the time
    # (review R14). Seed 5: 1 of 600; floor_component returning its own (var, df): 98
    rng = np.random.default_rng(5)
    reps = 600
    noisy = 0
    for _ in range(reps):
        t = L.compare_cells(_two_mode_size(rng, 2, 7, 4))[-1]
        assert t.own_cell
        noisy += t.p <= 0.05
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy


def test_a_thin_sides_own_cell_part_takes_the_other_sides_with_one_df_more():
    # the thin side's two-mode size alike in both launches (own part ~0, 1 df): its
    # component is the other side's own part for that size, at 2 df (one launch more);
    # where the thin side is the noisier one it keeps its own part and df
    rng = np.random.default_rng(2)
    cells = _two_mode_size(rng, 2, 7, 4)
    for b, floored in (({"b0": 1.0, "b1": 1.0}, True), ({"b0": 1.0, "b1": 30.0}, False)):
        t = L.compare_cells([*cells[:-1], (b, cells[-1][1], "lower")])[-1]
        (_vl, _dl), (vb, db), (_wl, _el), (vc, dc) = t.components
        assert dc == 6 and t.own_cell
        if floored:
            assert (vb * 2, db) == (pytest.approx(vc * 7), 2)
        else:
            assert db == 1 and vb * 2 > vc * 7


def test_a_thin_sides_moderated_cell_part_is_floored_on_its_launches_df():
    # 2 vs 7, 8 sizes: the 7-launch side opens the gate and the thin side's parts are
    # moderated (df mostly its other sizes'); where its launches share a mode at the
    # two-mode size that part is the quiet sizes' and was not floored (7 df): 23 of 26
    # false positives in 400 such benchmarks. Judged on its launches' 1 df it is floored
    # at the other side's part, one df more than its own, at most the other's
    rng = np.random.default_rng(11)
    seen = 0
    for _ in range(60):
        cells = _two_mode_size(rng, 2, 7, 8)
        sides = [dict(enumerate(b for b, _c, _ in cells)), dict(enumerate(c for _b, c, _ in cells))]
        thin, other = L.gated_spreads(sides)
        mine, theirs = thin.own_part(7), other.own_part(7)
        if mine is None or theirs is None or mine[1] < L.WELCH_MIN_DF or mine[0] >= theirs[0]:
            continue
        seen += 1
        (_vl, _dl), (vb, db), (_wl, _el), (vc, dc) = L.compare_cells(cells)[-1].components
        assert (vb * 2, db) == (pytest.approx(theirs[0]), min(theirs[1], mine[1] + 1))
    assert seen >= 3, seen


def test_planning_matches_simulated_power():
    # 10% at sigma 0.05: the noncentral t of the test compare() runs asks for n launches per
    # side; a simulation of that very test at n detects 10% in about 80% of trials
    n = L.launches_needed(0.05, 0.10)
    assert n == 6
    rng = np.random.default_rng(3)
    hits = sum(L.compare(np.exp(rng.normal(0, 0.05, n)),
                         np.exp(rng.normal(math.log(1.1), 0.05, n)), "higher").p <= 0.05
               for _ in range(600))
    assert 0.75 <= hits / 600 <= 0.87
    d = L.detectable_effect(0.05, n, n)
    assert d <= 0.10 < L.detectable_effect(0.05, n - 1, n - 1)
    assert L.launches_needed(None, 0.05) is None
    assert L.launches_needed(0.3, 0.05) > L.launches_needed(0.1, 0.05)
    # symmetric in log space: a 1/1.1 slowdown needs what a 1.1 speedup needs
    assert L.launches_needed(0.05, 1 / 1.1 - 1) == n


@pytest.mark.parametrize("n_thin", [2, 3])
def test_detectable_effect_has_its_power_with_two_launches(n_thin):
    # 2+7 and 3+7: the planning number is the effect the (Cochran-Cox) test detects 80% of
    # the time, also now that the test floors the thin side's spread (floor_component)
    d = L.detectable_effect(0.05, n_thin, 7)
    rng = np.random.default_rng(4)
    hits = sum(L.compare(np.exp(rng.normal(0, 0.05, n_thin)),
                         np.exp(rng.normal(math.log1p(d), 0.05, 7)), "higher").p <= 0.05
               for _ in range(400))
    assert 0.72 <= hits / 400 <= 0.88


def _bench(rng, n_b, n_c, sizes, shared, specific, effect=0.0, noisier=1.0):
    """Cells of one benchmark: log y = u_L (shared by the launch's sizes) + v_L,s; the
    baseline's launch effects x noisier."""
    ub = noisier * (rng.normal(0, shared, (n_b, 1)) + rng.normal(0, specific, (n_b, sizes)))
    uc = effect + rng.normal(0, shared, (n_c, 1)) + rng.normal(0, specific, (n_c, sizes))
    return [({f"b{i}": math.exp(ub[i, s]) for i in range(n_b)},
             {f"c{i}": math.exp(uc[i, s]) for i in range(n_c)}, "higher")
            for s in range(sizes)]


def test_spread_recovers_the_variance_components():
    rng = np.random.default_rng(21)
    cells = _bench(rng, 40, 40, 20, 0.1, 0.05)
    sp = L.spread(dict(enumerate(c[0] for c in cells)))
    # ms_launch estimates S var(u) + var(v) = 20 * 0.01 + 0.0025; ms_cell var(v) = 0.0025
    assert sp.df_launch == 39 and sp.df_cell == 39 * 19 and sp.cells == 20
    assert sp.ms_cell == pytest.approx(0.0025, rel=0.1)
    assert sp.ms_launch == pytest.approx(0.2025, rel=0.5)
    assert sp.sd == pytest.approx(math.sqrt(0.0125), rel=0.25)


def test_pooled_sizes_give_two_launches_many_df_when_sizes_do_not_share():
    rng = np.random.default_rng(22)
    ts = L.compare_cells(_bench(rng, 2, 7, 20, 0.0, 0.1))
    assert all(t.pooled for t in ts)
    # the size-specific part has (2-1)(20-1) + (7-1)(20-1) df; per cell alone 1 and 6
    # (the 2-launch side's launch part: 2 when floored at the other side's, floor_component);
    # a size whose 2-launch side's own part is mixed in (stop 43, SMALLER_MIX_MIN 2) has
    # that part's df instead, so the first one that kept the pooled part
    dfs = sorted(d for _v, d in next(t for t in ts if not t.own_expect).components)
    assert dfs[0] in (1, 2) and dfs[1:] == [6, 19, 114]
    alone = L.compare_cells(_bench(rng, 2, 7, 20, 0.0, 0.1), pool=False)
    assert not alone[0].pooled
    w = [t.ci_high / t.ci_low for t in ts]
    w_alone = [t.ci_high / t.ci_low for t in alone]
    assert np.median(w) < np.median(w_alone)


@pytest.mark.parametrize("shared,specific", [(0.1, 0.05), (0.0, 0.1)])
def test_pooled_model_keeps_alpha_and_coverage_with_two_launches(shared, specific):
    # A/A, 2 vs 7 launches, 20 sizes, shared and unshared launch effects: per-cell false
    # positives <= alpha and coverage >= 95% (conservative where the launch part dominates)
    rng = np.random.default_rng(23)
    sig = cover = n = 0
    for _ in range(120):
        for t in L.compare_cells(_bench(rng, 2, 7, 20, shared, specific))[:5]:
            n += 1
            sig += t.p <= 0.05
            cover += t.ci_low <= 1.0 <= t.ci_high
    assert sig / n <= 0.06 and cover / n >= 0.94


def test_tost_equivalence():
    rng = np.random.default_rng(24)
    a = np.exp(rng.normal(0.0, 0.005, 8))
    b = np.exp(rng.normal(0.0, 0.005, 8))
    t = L.compare(a, b, "lower")
    assert t.tost(0.02) <= 0.05          # within +-2%: equivalent
    far = L.compare(a, b * 1.10, "lower")
    assert far.tost(0.02) > 0.5           # 10% apart: not equivalent within 2%
    # log-symmetric: a gain of 1/1.02 is on the margin just as 1.02 is
    up = L.compare(a, b * 1.015, "lower").tost(0.02)
    down = L.compare(b * 1.015, a, "lower").tost(0.02)     # the same gap, the other way
    assert 0.0 < up < 1.0 and down == pytest.approx(up, rel=1e-6)
    # CI at another level: excludes 1 exactly when p <= 1 - level
    t2 = L.compare(a, b * 1.01, "lower")
    lo, hi = t2.ci_at(1 - t2.p * 0.99)      # alpha just below p: not significant
    assert lo <= 1.0 <= hi
    lo, hi = t2.ci_at(1 - t2.p * 1.01)      # just above: significant
    assert not lo <= 1.0 <= hi


def test_ci_at_a_level_near_one_with_two_launches_saturates():
    # a sequential look's CI at 1 - 1e-12 on 2 launches per side with very different
    # launches (1 df each): the half-width is beyond exp's range; the CI is (0, inf),
    # not an OverflowError (bench_time_to_decision crashed on it at its second look)
    t = L.compare([0.17, 4000.0], [0.12, 0.38], "lower")
    assert t.tested
    lo, hi = t.ci_at(1 - 1e-12)
    assert lo == pytest.approx(0.0, abs=1e-300) and hi == math.inf


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


# --- round pairing (paired_test): launches of one round of an interleaved campaign ---

def _rounds_bench(rng, n, cells, *, round_sd=0.0, launch_sd=0.05, cell_sd=0.02,
                  effect=0.0, n_cand=None):
    """A benchmark's cells (baseline, candidate, "lower") with launch ids b<r>/c<r> and
    their round keys: a round effect (sd round_sd) shared by both launches of the round
    and all its cells, each launch's own effect (launch_sd) shared by its cells, a cell
    part (cell_sd); the candidate faster by exp(effect)."""
    n_cand = n if n_cand is None else n_cand
    e = rng.normal(0, round_sd, max(n, n_cand))
    ub, uc = rng.normal(0, launch_sd, n), rng.normal(0, launch_sd, n_cand)
    out = []
    for s in range(cells):
        base = {f"b{r}": math.exp(s + e[r] + ub[r] + rng.normal(0, cell_sd))
                for r in range(n)}
        cand = {f"c{r}": math.exp(s - effect + e[r] + uc[r] + rng.normal(0, cell_sd))
                for r in range(n_cand)}
        out.append((base, cand, "lower"))
    rounds = {f"{p}{r}": ("camp", r) for r in range(max(n, n_cand)) for p in "bc"}
    return out, rounds


def _shift_rounds(cells, shift):
    """Every launch of round r (both sides, every cell) multiplied by exp(shift[r])."""
    return [({k: v * math.exp(shift[int(k[1:])]) for k, v in b.items()},
             {k: v * math.exp(shift[int(k[1:])]) for k, v in c.items()}, better)
            for b, c, better in cells]


def test_a_shared_round_effect_leaves_the_paired_test_unchanged_and_widens_the_unpaired():
    rng = np.random.default_rng(31)
    cells, rounds = _rounds_bench(rng, 5, 8, effect=0.05)
    shifted = _shift_rounds(cells, [0.0, 1.1, 0.0, 1.1, 0.4])      # factor-3 modes
    p0, p1 = L.compare_cells(cells, rounds=rounds), L.compare_cells(shifted, rounds=rounds)
    for a, b in zip(p0, p1, strict=True):
        assert a.pairing == b.pairing == "round" and a.pairs == 5 and a.unpaired == 0
        assert b.gain == pytest.approx(a.gain, rel=1e-9)
        assert (b.ci_low, b.ci_high, b.p) == pytest.approx((a.ci_low, a.ci_high, a.p),
                                                           rel=1e-6)
    u0, u1 = L.compare_cells(cells), L.compare_cells(shifted)
    assert all(t.pairing == "none" for t in u0)
    for a, b in zip(u0, u1, strict=True):
        assert b.ci_high / b.ci_low > 3 * (a.ci_high / a.ci_low)
    agg0, agg1 = L.aggregate(cells, rounds=rounds), L.aggregate(shifted, rounds=rounds)
    assert agg0.pairing == "round" and agg1.p == pytest.approx(agg0.p, rel=1e-6)
    assert L.aggregate(shifted).ci_high / L.aggregate(shifted).ci_low > \
        3 * agg1.ci_high / agg1.ci_low


def test_paired_single_cell_is_the_paired_t_test():
    rng = np.random.default_rng(32)
    cells, rounds = _rounds_bench(rng, 6, 1, round_sd=0.5, effect=0.03)
    t = L.compare_cells(cells, rounds=rounds)[0]
    b, c, _ = cells[0]
    ref = sps.ttest_rel(np.log([b[f"b{r}"] for r in range(6)]),
                        np.log([c[f"c{r}"] for r in range(6)]))
    assert t.pairing == "round" and t.p == pytest.approx(ref.pvalue, rel=1e-6)
    assert t.df == 5


def test_a_launch_without_partner_is_left_out_and_counted():
    rng = np.random.default_rng(33)
    cells, rounds = _rounds_bench(rng, 6, 4, round_sd=0.3)
    gone = [(b, {k: v for k, v in c.items() if k != "c2"}, bt) for b, c, bt in cells]
    same = [({k: v for k, v in b.items() if k != "b2"}, c, bt) for b, c, bt in gone]
    for t, ref in zip(L.compare_cells(gone, rounds=rounds),
                      L.compare_cells(same, rounds=rounds), strict=True):
        assert (t.pairs, t.unpaired, ref.unpaired) == (5, 1, 0)
        assert (t.gain, t.p, t.ci_low) == pytest.approx((ref.gain, ref.p, ref.ci_low))
    # a round with two launches of one side pairs neither of them
    dup = {**rounds, "b3": ("camp", 4)}
    t = L.compare_cells(cells, rounds=dup)[0]
    assert (t.pairs, t.unpaired) == (4, 4)


def test_pairing_needs_min_pairs_in_every_cell_and_round_keys():
    rng = np.random.default_rng(34)
    cells, rounds = _rounds_bench(rng, 2, 4, n_cand=7, round_sd=0.3)      # 2 vs 7
    assert L.pair_rounds(cells, rounds) is None
    assert all(t.pairing == "none" and (t.n_base, t.n_cand) == (2, 7)
               for t in L.compare_cells(cells, rounds=rounds))
    assert L.aggregate(cells, rounds=rounds).pairing == "none"
    cells, rounds = _rounds_bench(rng, 3, 4, n_cand=7)                     # 3 pairs
    assert {t.pairing for t in L.compare_cells(cells, rounds=rounds)} == {"round"}
    assert L.compare_cells(cells, rounds=rounds)[0].unpaired == 4
    # launches without a round key (a random-order campaign, another store) never pair
    assert {t.pairing for t in L.compare_cells(cells)} == {"none"}
    assert {t.pairing for t in L.compare_cells(cells, rounds={})} == {"none"}


@pytest.mark.parametrize("round_sd,launch_sd", [(0.5, 0.05), (0.0, 0.1)])
def test_paired_model_keeps_alpha_and_coverage(round_sd, launch_sd):
    # A/A, 4 rounds, 10 sizes: rounds shared by both sides (two-mode-like, large) or no
    # round effect at all (the paired test must stay valid where pairing gains nothing)
    rng = np.random.default_rng(35)
    sig = cover = n = agg_sig = 0
    reps = 300
    for _ in range(reps):
        cells, rounds = _rounds_bench(rng, 4, 10, round_sd=round_sd, launch_sd=launch_sd)
        for t in L.compare_cells(cells, rounds=rounds)[:3]:
            n += 1
            sig += t.p <= 0.05
            cover += t.ci_low <= 1.0 <= t.ci_high
        agg_sig += L.aggregate(cells, rounds=rounds).p <= 0.05
    # binomial sd at 900 cells is 0.7 points (cells of one block are correlated: wider)
    assert 0.02 <= sig / n <= 0.08 and 0.92 <= cover / n <= 0.98
    assert agg_sig / reps <= 0.09


def test_launches_needed_for_a_paired_test_is_its_own_power():
    rng = np.random.default_rng(36)
    cells, rounds = _rounds_bench(rng, 4, 10, round_sd=0.5, launch_sd=0.03)
    t = L.compare_cells(cells, rounds=rounds)[0]
    n = L.launches_needed_for(t, 0.05)
    assert n is not None and n >= L.MIN_PAIRS
    # at n rounds the test's detectable effect is within 5%, at n - 1 it is not
    assert L.launches_needed_for(t, 0.05, max_n=n - 1) is None or n == L.MIN_PAIRS
    # unpaired: launches_needed at the pooled sd, as before
    u = L.compare_cells(cells)[0]
    assert L.launches_needed_for(u, 0.05) == L.launches_needed(u.sd_log, 0.05)


def test_more_rounds_counts_pairs_still_to_come_in_every_cell():
    rng = np.random.default_rng(35)
    cells, rounds = _rounds_bench(rng, 2, 4, round_sd=0.3)                # 2 pairs
    assert L.pair_rounds(cells, rounds) is None
    assert L.pair_rounds(cells, rounds, more_rounds=0) is None
    paired = L.pair_rounds(cells, rounds, more_rounds=1)
    assert paired is not None and [len(p) for p, _left in paired] == [2] * 4


def _exact_power(d: float, hs: list[float], sigma: float) -> float:
    """The test's power at a true log difference d, exactly, over cells whose 95% CI
    half-widths are hs: p <= 0.05 exactly where |diff| > h (p and the CI share one critical
    value), and the mean log difference, N(d, sigma^2), is independent of the spreads (the
    cell means and the residuals are orthogonal in the normal model). Averaging
    P(|N(d, sigma^2)| > h) over the cells is the power with no binomial error."""
    h = np.array(hs)
    return float(np.mean(sps.norm.cdf((d - h) / sigma) + sps.norm.cdf((-d - h) / sigma)))


def _sigma_of(ts: list, cells: int, sigma: float) -> float:
    """sigma, the sd of a cell's mean log difference written from the design, checked
    against the estimator: the first cell's diff_log over the A/A benchmarks (ts, `cells`
    a benchmark) has mean 0 within 4 standard errors and sd within 15% of sigma (250-1000
    values: the sd's own error 2-4.5%), so that a change to what compare_cells estimates
    cannot leave _exact_power computing the power of a hypothetical estimator."""
    x = np.array([t.diff_log for t in ts[::cells]])
    assert abs(x.mean()) < 4 * sigma / math.sqrt(len(x)), (x.mean(), sigma)
    assert 0.85 <= x.std(ddof=1) / sigma <= 1.15, (x.std(ddof=1), sigma)
    return sigma


def _mix_off_at_two(n_thin: int, monkeypatch) -> None:
    """The smaller side's mix off (SMALLER_MIX = ()) where the thin side has 2 launches:
    since stop 43 it acts there, and a 2 vs 7 benchmark's cells split into mixed ones
    (~32% of alike cells, a 1-df part: 47% power at the median figure) and unmixed ones
    (98%), so the power at the median barely moves with the figure (x0.8: 79.4%, review
    s43 R10) and these 2 vs 7 cases could no longer fail; with the mix off they guard
    the planning they were written for (plan_expect, plan_boot, the joint part), as at
    stop 42. The mix's own plan at 2 launches is guarded by
    test_the_detectable_of_a_thin_side_really_quieter_has_its_power (its plan_boot
    correction) and its alpha by test_a_size_noisy_on_the_smaller_side_keeps_alpha_at_2_vs_7."""
    if n_thin == 2:
        monkeypatch.setattr(L, "SMALLER_MIX", ())


def _median_detectable(ts: list, cells: int) -> float:
    """The median 'detectable' of A/A benchmarks' cells (ts, `cells` a benchmark) over two
    cells a benchmark, half the sizes apart and rotating through them (benchmark b: sizes
    b and b + cells / 2 mod cells): the planning (plan_expect, plan_boot) is most of these
    tests' time, and a benchmark's cells share their spread estimates, so the median's
    error is the benchmarks'. Against every cell's median, 6 seeds each of the four 3 vs 7
    scenarios below (300 benchmarks): the exact power at it within 1.1 points (mean
    difference 0.2), planning time / 5 (stop 43: both medians on the same draws, seeds
    s, s + 100, ..., s + 500 for each scenario's own test seed s)."""
    half = max(1, cells // 2)
    picks = [t for i, t in enumerate(ts)
             if i % cells in ((i // cells) % cells, (i // cells + half) % cells)]
    return float(np.median([t.detectable for t in picks]))


@pytest.mark.parametrize("n_thin,shared,specific,band", [
    (2, 0.05, 0.025, (0.69, 0.90)), (2, 0.0, 0.05, (0.72, 0.88)),
    (3, 0.05, 0.025, (0.72, 0.88)), (3, 0.0, 0.05, (0.72, 0.88))])
def test_the_detectable_a_thin_cell_reports_has_its_power(n_thin, shared, specific, band,
                                                          monkeypatch):
    """A benchmark of 10 sizes at 2 or 3 vs 7 launches, sizes sharing launch effects or
    not: the median 'detectable' the cells report (300 benchmarks, from their own floored
    components), taken as the true difference, has the test's power (_exact_power over
    every cell of the same benchmarks: a batch whose spreads run high has both a higher
    median and wider CIs, so the two errors partly cancel) within 75-85% +- 3 times its
    error. That error, the sd over 8 seeds, is 0.4-0.9 points (band 0.72-0.88), 3.3 points
    at 2 vs 7 shared (the 1-df launch part makes the figure's spread wide; band 0.69-0.90).
    Before, 300 binomial trials at the median of 100 benchmarks: 2 vs 7 not sharing passed
    with 208 against a bound of 207; its power is 74.9% (8 seeds, 73.9-76.5%, the target's
    edge), here 74.6%. Planned 10% optimistic (the median figure x 0.9) it is 68.8% here
    and this test fails (3 vs 7 not sharing 69.4%). The shared cases catch less: 3 vs 7
    shared is 73.5% at x 0.9, inside its band (65.4% at x 0.8 fails); at 2 vs 7 shared (1
    df) power moves little with the figure (73.1% at x 0.9, 69.9% at x 0.8), so that case
    guards only against gross planning errors, and its band is the earlier binomial
    test's, kept. Planned at the floor's df (one more than the thin side's own) the shared
    2 vs 7 figure had 57% power. Stop 40 (plan_boot, own parts by plan_expect at a 2-launch
    side): 2 vs 7 shared 76.2% here (74.5% before), not sharing 78.8% (the same). Since
    stop 42 (the smaller side's mix, planned over it) the 3 vs 7 cases sit higher, and
    since stop 43 the median is over two cells a benchmark (_median_detectable): 76.2 /
    78.2 / 84.0 / 82.5% (2 vs 7 shared, not sharing; 3 vs 7 shared, not sharing). What
    fails now: x 0.9 only at 2 vs 7 not sharing (71.5%; the others 72.9-77.7%, inside the
    band at figures of 82-84%); x 0.8 at three of four (62.9-71.3%; 2 vs 7 shared 70.1%
    passes); 3 vs 7 not sharing planned without the mix (SMALLER_MIX_PLAN off) 69.2%."""
    _mix_off_at_two(n_thin, monkeypatch)
    rng = np.random.default_rng(40 + n_thin)
    ts = [t for _ in range(300)
          for t in L.compare_cells(_bench(rng, n_thin, 7, 10, shared, specific))]
    d = math.log1p(_median_detectable(ts, 10))
    v = shared * shared + specific * specific
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    # _exact_power's premise: the test rejects exactly where the CI excludes 0
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    power = _exact_power(d, hs, _sigma_of(ts, 10, math.sqrt(v / n_thin + v / 7)))
    assert band[0] <= power <= band[1]


@pytest.mark.parametrize("n_thin,band", [(2, (0.69, 0.90)), (3, (0.72, 0.88))])
def test_the_detectable_of_a_thin_side_that_really_is_noisier_has_its_power(n_thin, band,
                                                                            monkeypatch):
    """2 or 3 vs 7 launches sharing launch effects across 10 sizes, the thin side's 3x the
    other side's: the median 'detectable' the cells report (300 benchmarks), taken as the
    true difference, has the test's power (_exact_power over every cell of the same
    benchmarks): 80.6% / 80.7% (2 vs 7 80.9% since stop 40's plan_boot); 7 seeds 75.9-84.9% / 78.0-84.1% (sd 3.3 / 1.8 points, the
    median's error; 300 binomial trials at the median of 200 benchmarks, before, had 2.3
    points of binomial error on top of 4.1 / 2.2). Bands: the earlier binomial one
    (0.69-0.90) at 2 vs 7; 0.72-0.88 at 3 vs 7 (75-85% +- 1.7 sd). Planned on the thin
    side's own 1-2 df estimate as it stands (the rule before plan_component raised it)
    this test failed with 57.7% / 64.7% (stats level, 1500 benchmarks: 59% / 64%); with
    plan_thin_launch's truth not raised (its estimate as it stands) 62.5% / 71.1% (3
    seeds at 3 vs 7: 70.0-71.1%; the trials, before: 62.7% / 68.0%). Since stop 43 over
    two cells a benchmark (_median_detectable): 81.0 / 83.6%; the figure x 0.8: 76.9%
    (passes: the 2 vs 7 band is the wide one) / 70.7% (fails)."""
    _mix_off_at_two(n_thin, monkeypatch)
    shared, specific = 0.05, 0.025
    rng = np.random.default_rng(61 + 10 * n_thin)
    ts = [t for _ in range(300)
          for t in L.compare_cells(_bench(rng, n_thin, 7, 10, shared, specific,
                                          noisier=3.0))]
    d = math.log1p(_median_detectable(ts, 10))
    v = shared * shared + specific * specific
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    sigma = _sigma_of(ts, 10, math.sqrt(9 * v / n_thin + v / 7))
    assert band[0] <= _exact_power(d, hs, sigma) <= band[1]


def test_the_detectable_at_4_vs_7_is_planned_over_the_smaller_sides_mix():
    """4 vs 7 launches x 10 sizes sharing no launch effect, the 4-launch side 3x noisier:
    the smaller side's mix (SMALLER_MIX) acts here, and the median 'detectable' (150
    benchmarks, _median_detectable) has the test's power (_exact_power) in 75-88%: the
    row sits far from the target's lower edge (stop 43, MIX_PLAN_ANY_N: planned over the
    mix at 4-5 launches too: 82.2% here, seeds 43-46 81.1-82.4%; bench_inference
    --only-planning-rows seeds 7-14 80.5-81.8%), so that edge is the bound; stop 42's rule
    (over the mix only at 3 launches, MIX_PLAN_ANY_N off) 70.9% here (68.7-72.2% at seeds
    43-46; 68.4-70.2% at 7-14): fails (review s42 R16)."""
    rng = np.random.default_rng(45)
    ts = [t for _ in range(150)
          for t in L.compare_cells(_bench(rng, 4, 7, 10, 0.0, 0.05, noisier=3.0))]
    d = math.log1p(_median_detectable(ts, 10))
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    sigma = _sigma_of(ts, 10, 0.05 * math.sqrt(9 / 4 + 1 / 7))
    assert 0.75 <= _exact_power(d, hs, sigma) <= 0.88


@pytest.mark.parametrize("n_small,sizes,planned", [(4, 10, True), (5, 8, True),
                                                   (4, 5, False), (7, 10, False)])
def test_a_4_or_5_launch_smaller_side_is_planned_as_a_thin_one_where_the_mix_acts(
        n_small, sizes, planned):
    """Where the smaller side's mix acts at 4-5 launches (unbalanced, FEW_CELLS sizes or
    more: _mix_side), that side's launch part is planned as a thin side's
    (MIX_PLAN_TRUTHS: plan_thin_launch, pooled with its floor where consistent, else the
    part above it median-unbiased; stop 43) and the figure is plan_expect's over the mix
    (_mix_plan names the side); below FEW_CELLS sizes or balanced, as estimated. Without
    the truths the 4 vs 7 'shared' rows had 73.8-74.3% true power (3x, 1.7x), with them
    79.8-80.6% (bench_inference --only-planning-rows --plan-rule mix43-estimates). A
    structural test by design: the shared 3x row with and without the truths is 79.6 /
    73.9% (review s43 R4), ~1 point from the band's edge at one seed, so the bench's rows
    are the behavioural check."""
    rng = np.random.default_rng(44 + n_small + sizes)
    t = L.compare_cells(_bench(rng, n_small, 7, sizes, 0.05, 0.025, noisier=3.0))[0]
    plan, ns = tuple(t.planned_on), (t.n_base, t.n_cand)
    mix = L._mix_plan(t, plan, ns)
    assert bool(mix) == planned and (not mix or mix[3] == 0)
    v, d = t.components[0]
    assert d == n_small - 1
    lv, _dl, cv, dc, s = t.parts[0]
    raw = (lv * n_small, cv * n_small / (s - 1), dc)
    if planned:
        assert plan[0] == pytest.approx((L.plan_thin_launch(raw[0], d, raw[1], raw[2])
                                         / n_small, d), rel=1e-12)
        assert t.detectable == L.plan_expect(plan, ns, len(plan) // 2, 0.05, L.POWER, (), mix)
    else:
        assert plan[0] == (v, d)


def test_the_plan_over_the_mix_floors_a_launch_part_only_where_the_test_does():
    """_expect_cols floors the thin side's launch part per draw as floor_component floors
    it: on fewer than WELCH_MIN_DF df against more. At 3 vs 7 (2 df) the draws below the
    other side's part are floored (one df more); at 4 vs 7, the side the mix names (3 df),
    none is, whatever the draw: its launch part is the estimate's draw on its own df. The
    gate moves the 4 and 5 vs 7 'not sharing, 1/3' rows by ~2 points (review s43 R2: 77.6 /
    76.8% without it, at seeds 23-26, where the test floors nothing)."""
    quiet = 0.0001      # the smaller side's launch part per launch: below the other's
    for n, mix in ((3, (10.0, 0.1, 0.6)), (4, (10.0, 0.1, 0.6, 0))):
        comps = ((quiet, n - 1.0), (0.0002, 9.0 * (n - 1)), (0.002 / 7, 6.0), (0.0004, 54.0))
        thin, dthin = L._expect_cols(comps, (n, 7), 2, 0, (), mix)[0]
        a = quiet * L._quantiles(n - 1.0, L.EXPECT_GRID[0])
        thin, dthin = np.broadcast_arrays(thin, dthin)
        if n == 3:
            assert set(np.unique(dthin)) == {2.0, 3.0} and (thin[:, :, 0, 0] > a[:, None]).any()
        else:
            assert set(np.unique(dthin)) == {3.0}
            assert np.array_equal(thin[:, :, 0, 0], np.broadcast_to(a[:, None], thin.shape[:2]))

def test_a_thin_side_is_planned_pooled_when_the_spreads_agree_else_raised():
    # one cell, 2 vs 7: the thin side's variance (0.0001, 1 df) is floored at the other's
    # (0.0049, 6 df) for the test (df 2); for planning the two agree (ratio below F(1, 6)'s
    # 0.85 quantile, 2.72), so pooled, (1 x 0.0001 + 6 x 0.0049) / 7 = 0.0042143, at its
    # own 1 df
    base, cand = [1.0, math.exp(0.01 * math.sqrt(2))], np.exp(np.linspace(-1, 1, 7))
    cand = np.exp(np.log(cand) * 0.07 / np.log(cand).std(ddof=1))
    t = L.compare(base, cand, "higher")
    assert np.ravel(t.components) == pytest.approx([0.0049 / 2, 2, 0.0049 / 7, 6])
    assert np.ravel(t.plan_components) == pytest.approx([0.0295 / 7 / 2, 1, 0.0049 / 7, 6])
    assert t.detectable == L.detectable_at(t, 0.05) > L._detectable(t.components, 0.05, 0.8)
    assert L.plan_component(0.0001, 1, 0.0049, 6) == pytest.approx((0.0295 / 7, 1))
    assert L.plan_component(0.0049, 6, 0.0001, 1) == (0.0049, 6)     # 7 launches: its own
    assert L.plan_component(0.0049, 1, 0.0049, 1) == (0.0049, 1)     # 2+2: its own
    # agreeing though larger (ratio 2 < 2.72): pooled, below its own estimate
    v, d = L.plan_component(0.0098, 1, 0.0049, 6)
    assert (v, d) == pytest.approx(((0.0098 + 6 * 0.0049) / 7, 1))
    # really noisier (ratio 9): its own, x 1 / chi2_0.45(1) / 1 = x2.80 (exceeds the true
    # variance with probability 0.55), at its own df; 3 launches: x1.67
    q1 = 1 / sps.chi2.ppf(0.45, 1)
    assert L.plan_component(0.0441, 1, 0.0049, 6) == pytest.approx((0.0441 * q1, 1))
    assert L.plan_component(0.0441, 2, 0.0049, 6) == pytest.approx(
        (0.0441 * 2 / sps.chi2.ppf(0.45, 2), 2))
    assert q1 == pytest.approx(2.80, abs=0.01)
    # the floor (a pooled side's cell part, var(u) >= 0): only the part above it is raised,
    # and it counts as the side's own estimate
    assert L.plan_component(0.0441, 1, 0.0049, 6, floor=0.0041) == pytest.approx(
        (0.0041 + 0.04 * q1, 1))
    assert L.plan_component(0.0001, 1, 0.0049, 6, floor=0.0441) == pytest.approx((0.0441, 1))
    # pooled over a benchmark's sizes: the thin side's launch part the same way (a size
    # that kept the pooled cell part: not one whose own part the mix took, stop 43)
    rng = np.random.default_rng(44)
    for _ in range(20):
        ts = L.compare_cells(_bench(rng, 2, 7, 10, 0.05, 0.025))
        t = next((t for t in ts if not t.own_expect), ts[0])
        if t.plan_components:
            break
    assert t.plan_components, "no draw planned the thin side apart from the test"
    assert sorted(d for _, d in t.plan_components) == [1, 6, 9, 54]
    # 5+5: nothing thin, the test's own components
    t = L.compare_cells(_bench(rng, 5, 5, 10, 0.05, 0.025))[0]
    assert t.plan_components == () and t.detectable == L._detectable(t.components, 0.05, 0.8)


# --- planning a paired comparison (plan_round_part) ---

# the earlier binomial 99% band of 700 trials at 75-85%, kept where the exact figure's sd
# over seeds is 1.5-1.8 points; (0.72, 0.88): 75-85% +- 3 sd where it is at most 1.1
_WIDE, _NARROW = (0.708, 0.885), (0.72, 0.88)


@pytest.mark.parametrize("n,cells,launch_sd,cell_sd,band", [
    (3, 10, 0.05, 0.025, _WIDE), (4, 10, 0.05, 0.025, _WIDE), (3, 1, 0.05, 0.025, _WIDE),
    (4, 1, 0.05, 0.025, _NARROW), (8, 1, 0.05, 0.025, _NARROW), (3, 10, 0.0, 0.05, _NARROW)])
def test_the_detectable_a_paired_comparison_reports_has_its_power(n, cells, launch_sd,
                                                                  cell_sd, band):
    """Paired by round, no round effect, 3-8 rounds, one size or 10 sizes sharing launch
    effects or not: the median 'detectable' the cells report (300 benchmarks; 1000 of one
    size), taken as the true difference, has the test's power (_exact_power over every
    cell of the same benchmarks) in 75-85%: 83.9, 81.7, 77.3, 80.6, 81.0, 80.0%. Its sd
    over 7 seeds is 1.8, 1.7, 1.6, 0.9, 0.6, 0.9 points (band: _WIDE, _NARROW); 700
    binomial trials at the median of 200 benchmarks (before) had 1.5 points of binomial
    error on top of the median's 0.7-2.4. Planned on the round part as estimated (the rule
    before plan_round_part) this fails at 3 rounds, 70.5, 65.7, 68.0%, and at 4 rounds of
    one size, 71.6% (the trials failed the first three: 70.7, 62.6, 66.7%); 4 rounds of 10
    sizes and 8 rounds pass either way (more df: the estimate falls short less often)."""
    rng = np.random.default_rng(70 + 10 * n + cells)
    ts = []
    for _ in range(300 if cells > 1 else 1000):
        bench, rounds = _rounds_bench(rng, n, cells, launch_sd=launch_sd, cell_sd=cell_sd)
        ts += L.compare_cells(bench, rounds=rounds)
    assert all(t.pairing == "round" for t in ts)
    d = math.log1p(float(np.median([t.detectable for t in ts])))
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    sigma = _sigma_of(ts, cells, math.sqrt(2 * (launch_sd * launch_sd + cell_sd * cell_sd) / n))
    assert band[0] <= _exact_power(d, hs, sigma) <= band[1]


@pytest.mark.parametrize("n_b,n_c,cells,shared,specific", [(3, 3, 10, 0.05, 0.025),
                                                             (3, 7, 4, 0.0, 0.05),
                                                             (2, 2, 8, 0.0, 0.05)])
def test_the_detectable_an_unpaired_comparison_reports_has_its_power(n_b, n_c, cells,
                                                                     shared, specific):
    """Unpaired: at 3+3 (launch effects shared by the sizes) every size keeps its own cell
    part on 2 df, at 3 vs 7 over 4 sizes (no launch effect) too (below 6 sizes), the thin
    side's floored. The median 'detectable' of 300 benchmarks, taken as the true
    difference, has the test's power (_exact_power over every cell of the same
    benchmarks) in 75-85% +- 3 sd (_NARROW; sd over 7 seeds 1.0, 0.7, 1.1 points):
    81.6, 81.5, 85.5%. With those parts planned as estimated (plan_cell_parts returning
    them) 2+2 fails, 68.4%; 3+3 gives 74.3% here (75.5% mean of 3 seeds: 700 binomial
    trials, before, failed at 68.1% at this seed, 73-79% at three others). At 2+2 over 8
    sizes with no launch effect both sides' own parts have 1 df: raised one by one (x2.20
    each, though their sum has 1-2 df) it overshot, 623 of 700 (89.0%); raised together
    at the sum's Satterthwaite df (plan_cell_parts) 84.4%."""
    rng = np.random.default_rng(90 + n_b + cells)
    ts = [t for _ in range(300)
          for t in L.compare_cells(_bench(rng, n_b, n_c, cells, shared, specific))]
    assert all(t.own_cell and t.pairing == "none" for t in ts)
    d = math.log1p(float(np.median([t.detectable for t in ts if t.detectable])))
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    v = shared * shared + specific * specific
    sigma = _sigma_of(ts, cells, math.sqrt(v / n_b + v / n_c))
    assert _NARROW[0] <= _exact_power(d, hs, sigma) <= _NARROW[1]


@pytest.mark.parametrize("n_c,cells", [(7, 4), (3, 8)])
def test_a_thin_own_part_the_test_may_floor_is_planned_at_its_expected_critical_value(
        n_c, cells):
    """2 vs 7 over 4 sizes and 2 vs 3 over 8, no launch effect (cell part sd 0.05): the
    2-launch side's own part is floored with the draw (1 <-> 2 df), so the test's critical
    value moves. The power at the median 'detectable' of 250 A/A benchmarks, computed
    exactly over the same benchmarks' CI half-widths h (the mean log difference is
    independent of the spreads: P(|N(d, sigma^2)| > h) averaged over every cell), is in
    75-85%. Planned at whichever df the draw got (before _plan_mixed_df) it was 67% (2 vs
    7) and 74% (2 vs 3). Since stop 43 the median is over two cells a benchmark
    (_median_detectable): 77.1 / 80.1% (every cell's 77.2 / 79.7%); _plan_own_df
    returning the df as planned 72.4 / 73.4% (review s43): fails."""
    rng = np.random.default_rng(31 + n_c + cells)
    ts = [t for _ in range(250) for t in L.compare_cells(_bench(rng, 2, n_c, cells, 0.0, 0.05))]
    h = np.array([math.log(t.ci_high) - t.diff_log for t in ts])
    d = math.log1p(_median_detectable(ts, cells))
    sigma = _sigma_of(ts, cells, 0.05 * math.sqrt(1 / 2 + 1 / n_c))
    power = float(np.mean(sps.norm.cdf((d - h) / sigma) + sps.norm.cdf((-d - h) / sigma)))
    assert 0.75 <= power <= 0.85


def test_the_mixed_df_of_a_thin_own_part_lies_between_its_two():
    # 1 df own against 6: floored to 2 df with P(F(1, 6) < 1) = 0.64; the expected
    # critical value 0.64 t(2) + 0.36 t(1) at alpha 0.05
    p = sps.f.cdf(1.0, 1, 6)
    q = p * sps.t.isf(0.025, 2) + (1 - p) * sps.t.isf(0.025, 1)
    df = L._plan_mixed_df(1.0, 6.0)
    assert 1.0 < df < 2.0
    assert sps.t.isf(0.025, df) == pytest.approx(q, rel=1e-6)


def test_a_cells_thin_own_parts_are_raised_together_at_their_sums_df():
    # one part: x df / chi2_0.5(df), as plan_round_part without a floor
    for df, f in ((1, 2.198), (2, 1.443)):
        assert np.ravel(L.plan_cell_parts([(0.01, df)])) == pytest.approx([0.01 * f, df],
                                                                          rel=1e-3)
    # two equal 1-df parts: their sum has Satterthwaite df 2, both x 2 / chi2_0.5(2)
    f2 = 2 / sps.chi2.ppf(0.5, 2)
    assert np.ravel(L.plan_cell_parts([(0.01, 1), (0.01, 1)])) == pytest.approx(
        [0.01 * f2, 1, 0.01 * f2, 1])
    # a part with WELCH_MIN_DF df or more, or 0, stays as it is and is not in the sum
    assert np.ravel(L.plan_cell_parts([(0.01, 2), (0.03, 6), (0.0, 1)])) == pytest.approx(
        [0.01 * 2 / sps.chi2.ppf(0.5, 2), 2, 0.03, 6, 0.0, 1])
    assert L.plan_cell_parts([(0.03, 6)]) == [(0.03, 6)]
    # known distributions: two independent parts a chi2_1 / 1 and b chi2_1 / 1 (a 2+2
    # cell's own parts), the median of the planned sum against the true a + b. One by
    # one (each x2.20, the rule before) the median sum is 1.49 x the truth; together
    # 1.19 x (the Satterthwaite df estimated from the draws is 1-2, biased low); the
    # estimates as they stand 0.68 x. Two 2-df parts: 1.21 x one by one, 1.07 x together
    rng = np.random.default_rng(3)
    for (a, da), (b, db), new_band, old_min in (((1.0, 1), (1.0, 1), (1.05, 1.3), 1.4),
                                                ((1.0, 1), (0.5, 1), (1.05, 1.3), 1.4),
                                                ((1.0, 2), (1.0, 2), (0.95, 1.15), 1.17)):
        x = a * rng.chisquare(da, 4000) / da
        y = b * rng.chisquare(db, 4000) / db
        together = [sum(v for v, _ in L.plan_cell_parts([(xi, da), (yi, db)]))
                    for xi, yi in zip(x, y, strict=True)]
        one_by_one = [L.plan_round_part(xi, da) + L.plan_round_part(yi, db)
                      for xi, yi in zip(x, y, strict=True)]
        assert new_band[0] <= np.median(together) / (a + b) <= new_band[1]
        assert np.median(one_by_one) / (a + b) >= old_min
    # compare_cells plans a 2+2 cell so: both sides' own parts (1 df) raised by one
    # factor, the launch parts (1 df each, equal launch counts) as estimated
    # (an unpaired own part may be clipped at 0: a cell whose two are not)
    rng = np.random.default_rng(5)
    t = next(t for t in L.compare_cells(_bench(rng, 2, 2, 8, 0.0, 0.05))
             if t.components[1][0] > 0 and t.components[3][0] > 0)
    (lb, dlb), (ob, dob), (lc, dlc), (oc, doc) = t.components
    assert t.own_cell and (dlb, dob, dlc, doc) == (1, 1, 1, 1)
    raised = L.plan_cell_parts([(ob, 1), (oc, 1)])
    assert np.ravel(t.plan_components) == pytest.approx(
        [lb, 1, raised[0][0], 1, lc, 1, raised[1][0], 1])
    assert raised[0][0] / ob == pytest.approx(raised[1][0] / oc)


def test_equal_thin_launch_parts_are_raised_with_the_own_parts_above_their_floor():
    # a floor: only the part above it is in the sum and raised. Two 2-df parts 0.01 with
    # floors 0.004: the sum of 0.006 + 0.006 has Satterthwaite df 4, x 4 / chi2_0.5(4)
    f4 = 4 / sps.chi2.ppf(0.5, 4)
    assert np.ravel(L.plan_cell_parts([(0.01, 2), (0.01, 2)], floors=[0.004, 0.004])) == \
        pytest.approx([0.004 + 0.006 * f4, 2, 0.004 + 0.006 * f4, 2])
    # at or below its floor a part stays as it is and is not in the sum
    assert np.ravel(L.plan_cell_parts([(0.003, 2), (0.01, 2)], floors=[0.004])) == \
        pytest.approx([0.003, 2, 0.01 * 2 / sps.chi2.ppf(0.5, 2), 2])
    # known distributions: two 2-df launch parts (3+3), a chi2_2 / 2 each: their sum's
    # median as estimated is 0.84 x the truth (chi2_4 / 4), raised together about 1
    rng = np.random.default_rng(11)
    x, y = rng.chisquare(2, 4000) / 2, rng.chisquare(2, 4000) / 2
    raised = [sum(v for v, _ in L.plan_cell_parts([(xi, 2), (yi, 2)]))
              for xi, yi in zip(x, y, strict=True)]
    assert 0.95 <= np.median(raised) / 2 <= 1.12 and np.median(x + y) / 2 < 0.88
    # compare_cells at 3+3 x 10 sizes (launch effects shared): the launch parts (2 df,
    # equal launch counts: plan_component leaves them) are raised with the cell's own
    # parts, above each side's pooled cell part / S; before they were planned as
    # estimated (only the own parts raised): 73.4-78.1% true power
    rng = np.random.default_rng(12)
    cells = _bench(rng, 3, 3, 10, 0.05, 0.025)
    t = L.compare_cells(cells)[0]
    sides = [L.spread(dict(enumerate(c[j] for c in cells)), own=True) for j in (0, 1)]
    (lb, dlb), (ob, dob), (lc, dlc), (oc, doc) = t.components
    assert t.own_cell and (dlb, dob, dlc, doc) == (2, 2, 2, 2)
    floors = [sp.ms_cell / sp.cells / 3 for sp in sides]
    assert lb == pytest.approx(sides[0].ms_launch / sides[0].cells / 3)
    assert min(lb - floors[0], lc - floors[1]) > 0
    raised = L.plan_cell_parts([(ob, 2), (oc, 2), (lb, 2), (lc, 2)],
                               floors=[0.0, 0.0, *floors])
    assert np.ravel(t.plan_components) == pytest.approx(
        [raised[2][0], 2, raised[0][0], 2, raised[3][0], 2, raised[1][0], 2])
    assert raised[2][0] > lb * 1.1 and raised[3][0] > lc * 1.1
    # one factor for every term above its floor
    assert (raised[2][0] - floors[0]) / (lb - floors[0]) == pytest.approx(raised[0][0] / ob)


def test_a_thin_own_part_floored_to_the_other_sides_is_raised_as_one_estimate():
    # 2 vs 3 launches: both sides' own parts are thin (1 and 2 df); the 2-launch side's,
    # floored, is a copy of the other's (same value per launch, its 2 df). One estimate:
    # the sum is raised x 2 / chi2_0.5(2) = 1.44, not at the ~3.9 Satterthwaite df of two
    # independent 2-df terms (x1.20, the rule before: true power 72.4% at 2 vs 3 x 8)
    f2 = 2 / sps.chi2.ppf(0.5, 2)
    assert np.ravel(L.plan_cell_parts([(0.002, 2), (0.001, 2)], same=((0, 1),))) == \
        pytest.approx([0.002 * f2, 2, 0.001 * f2, 2])
    rng = np.random.default_rng(7)
    floored = 0
    for t in L.compare_cells(_bench(rng, 2, 3, 8, 0.0, 0.05)):
        (lb, dlb), (ob, dob), (lc, dlc), (oc, doc) = t.components
        if ob * 2 != pytest.approx(oc * 3) or min(ob, oc) <= 0:
            continue
        floored += 1
        assert t.own_cell and (dob, doc) == (2, 2)
        # planned at the test's expected critical value's df (floored with the draw:
        # 2 df floored, 1 its own; _plan_mixed_df), the value raised as one estimate
        assert np.ravel(t.plan_components)[[2, 3, 6, 7]] == pytest.approx(
            [ob * f2, L._plan_mixed_df(1.0, 2.0), oc * f2, 2])
    assert floored > 0


def test_a_paired_round_part_is_planned_median_unbiased_above_its_floor(monkeypatch):
    # x df / chi2_0.5(df): 1.443 at 2 df, 1.268 at 3, 1.104 at 7; only the part above the
    # floor (the pooled cell part / S, many df) is raised; never below the estimate
    for df, f in ((2, 1.443), (3, 1.268), (7, 1.104)):
        assert L.plan_round_part(0.01, df) == pytest.approx(0.01 * df / sps.chi2.ppf(0.5, df))
        assert df / sps.chi2.ppf(0.5, df) == pytest.approx(f, abs=1e-3)
    assert L.plan_round_part(0.01, 2, floor=0.004) == pytest.approx(
        0.004 + 0.006 * 2 / sps.chi2.ppf(0.5, 2))
    assert L.plan_round_part(0.003, 2, floor=0.004) == 0.003
    # a paired test plans on it: its round part raised; over 3 rounds every size keeps
    # its own cell part on 2 df (stats.launch._diff_spread), raised the same way (no
    # floor); from 4 rounds alike sizes share the pooled part (27 df), planned as it is.
    # The block's Spread (pair_spread's): no hedge of an uncut block (_hedge_spreads)
    monkeypatch.setattr(L, "HEDGE_LEVEL", 0.0)
    rng = np.random.default_rng(77)
    bench, rounds = _rounds_bench(rng, 3, 10)
    t = L.compare_cells(bench, rounds=rounds)[0]
    sp = L.pair_spread(bench, rounds)
    (v0, d0), (vc, dc) = t.components
    assert t.own_cell and dc == 2
    assert np.ravel(t.plan_components) == pytest.approx(
        [L.plan_round_part(v0, d0, sp.ms_cell / sp.cells / 3), d0,
         vc * 2 / sps.chi2.ppf(0.5, 2), dc])
    bench4, rounds4 = _rounds_bench(rng, 4, 10)
    t4 = L.compare_cells(bench4, rounds=rounds4)[0]
    sp4 = L.pair_spread(bench4, rounds4)
    (v4, d4), cell4 = t4.components
    assert not t4.own_cell and cell4[1] == 27
    assert np.ravel(t4.plan_components) == pytest.approx(
        [L.plan_round_part(v4, d4, sp4.ms_cell / sp4.cells / 4), d4, *cell4])
    assert t.detectable == L.detectable_at(t, 0.05) > L._detectable(t.components, 0.05, 0.8)
    # one size: the differences' whole variance, no floor
    one, rounds1 = _rounds_bench(rng, 4, 1)
    t1 = L.compare_cells(one, rounds=rounds1)[0]
    assert np.ravel(t1.plan_components) == pytest.approx(
        [t1.components[0][0] * 3 / sps.chi2.ppf(0.5, 3), 3])


def test_a_moderated_cell_part_is_planned_on_the_df_the_future_test_will_have():
    # 3 rounds of 22 sizes (the pooled cell part: 2 x 21 = 42 df), a cell's own moderated
    # cell part with d0 + d_g = 10 + 2 = 12 df: at n rounds the test will have
    # d0 + (n - 1) = 12 + (n - 3) df (19 at 10 rounds), not 12 (n - 1) / 2 (54: the
    # prior's d0 does not grow with the rounds); the pooled cell part does scale whole
    parts = ((1e-5, 2.0, 0.002 / 3, 42.0, 22.0),)
    own = L.LaunchTest(1.0, 0.9, 1.1, 0.5, 3, 3, True,
                       components=((1e-5, 2.0), (0.004 / 3, 12.0)), pairing="round",
                       pairs=3, own_cell=True, pooled=True, parts=parts)
    assert L.own_cell_parts(own) == {1}
    assert np.ravel(L.paired_components_at(own, 10)) == pytest.approx(
        [1e-5 * 3 / 10, 9, 0.004 / 10, 19])
    pooled = own._replace(own_cell=False, components=((1e-5, 2.0), (0.002 / 3, 42.0)))
    assert L.own_cell_parts(pooled) == set()
    assert np.ravel(L.paired_components_at(pooled, 10)) == pytest.approx(
        [1e-5 * 3 / 10, 9, 0.002 / 10, 189])
    # the rounds needed for 5%: the least n whose components at n detect it
    n = L.launches_needed_for(own, 0.05)
    assert L._detectable(L.paired_components_at(own, n), 0.05, 0.8) <= 0.05
    assert L._detectable(L.paired_components_at(own, n - 1), 0.05, 0.8) > 0.05
    whole = L.rounds_search(lambda k: ((1e-5 * 3 / k, k - 1.0), (0.004 / k, 6.0 * (k - 1))),
                            0.05, 0.05, 0.8, 10_000)
    assert n > whole                                   # scaled whole: optimistic
    # unpaired: the candidate side's own part (index 3) among both sides' components
    t = L.LaunchTest(1.0, 0.9, 1.1, 0.5, 5, 5, True, own_cell=True, pooled=True,
                     components=((1e-4, 4.0), (0.002, 84.0), (1e-4, 4.0), (0.01, 14.0)),
                     parts=((1e-4, 4.0, 0.002, 84.0, 22.0), (1e-4, 4.0, 0.002, 84.0, 22.0)))
    assert L.own_cell_parts(t) == {3}
    assert L.future_df(14.0, 4, 9, True) == 19 and L.future_df(84.0, 4, 9, False) == 189
    assert L.future_df(4.0, 4, 9, True) == 9                       # no prior: n - 1
    # at its own rounds the plan is the 'detectable' the test reports (planned_on)
    rng = np.random.default_rng(78)
    bench, rounds = _rounds_bench(rng, 4, 10)
    t = L.compare_cells(bench, rounds=rounds)[0]
    assert np.ravel(L.paired_components_at(t, 4)) == pytest.approx(np.ravel(t.planned_on))
    assert L.launches_needed_for(t, t.detectable * 1.0001) == 4
    # a stage-2 test's own part counts fewer launches than its pairs (2 df at 8 pairs):
    # planned at fewer rounds its df stay positive
    assert L.future_df(2.0, 7, 2, True) == pytest.approx(2 * 2 / 7)
    assert L.future_df(2.0, 7, 9, True) == pytest.approx(2 * 9 / 7)     # never above whole


def test_a_detectable_effect_beyond_any_finite_gain_is_none_not_an_overflow():
    # 1 df and a log variance of 1e6: the noncentrality times the se is far past 709, where
    # math.expm1 overflowed (the time-to-decision bench's final plan after 282 rounds
    # ended in OverflowError); the figure is None and a rounds search goes on past it
    assert L._detectable(((1e6, 1.0),), 0.05, 0.8) is None
    assert L._detectable(((1e-4, 1.0),), 0.05, 0.8) is not None
    assert L.rounds_search(lambda n: ((1e6 / n, n - 1.0),), 0.05, 0.05, 0.8, 50) is None


def test_the_power_at_infinite_df_is_the_normal_limit():
    # a component known exactly (infinite df): the noncentral t becomes Z + ncp, so the
    # noncentrality for 80% at the normal critical value solves
    # Phi(ncp - c) + Phi(-ncp - c) = 0.8 (it raised before: chi2 / df was NaN)
    c = float(sps.norm.isf(0.025))
    ncp = L._ncp_for_power(c, math.inf, 0.8)
    assert sps.norm.cdf(ncp - c) + sps.norm.cdf(-ncp - c) == pytest.approx(0.8, abs=1e-6)
    assert ncp == pytest.approx(c + sps.norm.ppf(0.8), abs=1e-4)         # 2.8016
    # the finite-df figures approach it from above
    assert L._ncp_for_power(c, 1e4, 0.8) == pytest.approx(ncp, rel=1e-3)
    assert L._ncp_for_power(c, 30, 0.8) > L._ncp_for_power(c, 1e4, 0.8)
    # through the planning path: one exactly known component is the z test
    assert L._detectable(((0.01, math.inf),), 0.05, 0.8) == pytest.approx(
        math.expm1(ncp * 0.1), rel=1e-4)


# --- round regimes: a round effect only some of a block's sizes share (_regimes) ---

def _regime_bench(rng, n, cells=10, noisy=5, phase_sd=0.35, cell_sd=0.08, all_share=False):
    """A/A benchmark paired by round: the candidate's launch of round r at the `noisy`
    smallest sizes (all sizes: all_share) moved by x_r ~ N(0, phase_sd), the sizes' per-round
    difference otherwise N(0, cell_sd) (each side cell_sd / sqrt 2)."""
    x = rng.normal(0, phase_sd, n)
    out = []
    for s in range(cells):
        moved = all_share or s < noisy
        base = {f"b{r}": math.exp(s + rng.normal(0, cell_sd / math.sqrt(2))) for r in range(n)}
        cand = {f"c{r}": math.exp(s + (x[r] if moved else 0.0)
                                  + rng.normal(0, cell_sd / math.sqrt(2))) for r in range(n)}
        out.append((base, cand, "lower"))
    return out, {f"{p}{r}": ("camp", r) for r in range(n) for p in "bc"}


def _regime_rates(seed, reps=200, n=10):
    """Per regime (noisy sizes, quiet sizes): raw A/A rate, CI coverage, median se_log."""
    rng = np.random.default_rng(seed)
    ts = [L.compare_cells(cells, rounds=rounds)
          for cells, rounds in (_regime_bench(rng, n) for _ in range(reps))]
    out = []
    for part in (slice(0, 5), slice(5, 10)):
        cs = [t for row in ts for t in row[part]]
        out.append((np.mean([t.p <= 0.05 for t in cs]),
                    np.mean([t.ci_low <= 1.0 <= t.ci_high for t in cs]),
                    float(np.median([t.se_log for t in cs]))))
    return out, ts


def test_sizes_a_round_effect_moves_apart_are_tested_in_their_own_regimes():
    # the Open MPI vs MPICH PingPong store: the per-round difference varies with sd ~0.37
    # at 0 B-2 KiB (host phases), ~0.1 above. One Spread for the block gave the quiet sizes
    # the noisy ones' round part (se 0.09 where their own is 0.025: no 5-17% gain decided)
    # and the noisy ones too little of it (A/A 15-17% per cell, coverage ~83%)
    (noisy, quiet), ts = _regime_rates(61)
    assert np.mean([len({t.regime for t in row[:5]}) == 1 and row[0].regime != row[9].regime
                    for row in ts]) >= 0.9
    for rate, cover, _se in (noisy, quiet):
        assert 0.02 <= rate <= 0.08 and 0.92 <= cover <= 0.98
    assert quiet[2] <= 1.5 * 0.08 / math.sqrt(10)          # its own spread's se: 0.025
    assert 0.8 * 0.35 / math.sqrt(10) <= noisy[2]


def test_sizes_that_share_one_round_effect_stay_one_regime():
    rng = np.random.default_rng(62)
    split = 0
    for _ in range(200):
        cells, rounds = _regime_bench(rng, 10, all_share=True)
        split += len({t.regime for t in L.compare_cells(cells, rounds=rounds)}) > 1
    assert split / 200 <= 0.03


def test_regimes_are_separate_units_of_the_tables_family():
    from mpibench.stats import multiplicity as mult
    rng = np.random.default_rng(63)
    fam = 0
    for _ in range(200):
        cells, rounds = _regime_bench(rng, 10)
        ts = L.compare_cells(cells, rounds=rounds)
        adj, _share = mult.adjust_table([mult.Hypothesis("cell", t, "c", "bench") for t in ts])
        fam += min(adj) <= 0.05
    assert fam / 200 <= 0.08
    # the two regimes' cells are two units (the noisy regime's round part is not the
    # quiet one's maxT correlation, nor in its mean-gain test's components)
    _ps, units = mult._cell_units([mult.Hypothesis("cell", t, "c", "bench") for t in ts])
    regimes = {t.regime for t in ts}
    assert len(regimes) == 2
    assert len({u for u, t in zip(units, ts, strict=True) if t.regime == 0}
               & {u for u, t in zip(units, ts, strict=True) if t.regime == 1}) == 0


def _contrast_rates(seed, reps, phase_sd, n=10):
    """A/A at the 5 moved sizes of _regime_bench (10 sizes, n rounds, cell part 0.08):
    (raw p <= 0.05 over all benchmarks, CI95 coverage, the same rate over the benchmarks
    no cut split, their share)."""
    rng = np.random.default_rng(seed)
    hits, cover, unsplit = [], [], []
    for _ in range(reps):
        cells, rounds = _regime_bench(rng, n, phase_sd=phase_sd)
        row = L.compare_cells(cells, rounds=rounds)
        hits.append(np.mean([t.p <= 0.05 for t in row[:5]]))
        cover.append(np.mean([t.ci_low <= 1.0 <= t.ci_high for t in row[:5]]))
        if len({t.regime for t in row}) == 1:
            unsplit.append(hits[-1])
    return np.mean(hits), np.mean(cover), np.mean(unsplit), len(unsplit) / reps


def test_a_round_effect_the_cut_misses_is_hedged_by_the_best_cut():
    # a round effect at 5 of 10 sizes about as large as the cell part (sd 0.1 against
    # 0.08) is cut in ~75% of these benchmarks; where it is not, the moved sizes kept the
    # round part diluted over the block: 11.4-14.3% A/A there, 5.7-6.1% over all (seeds
    # 64, 66, 67, 1000 benchmarks; this seed 12.0% / 5.7%, coverage 94.3%). Each cell of
    # an uncut block on the wider of its block's and its best-cut run's CI: 8.0% / 4.8%;
    # on the widest over every cut below HEDGE_LEVEL (0.35): 7.0% / 4.6%. Over seeds
    # 64-73 (1000 benchmarks each) 4.4-5.3% over all (mean 4.88%, sd 0.29: the bounds
    # leave a correct rule room for any change of draw order), CI95 94.7-95.6%, 6.7-10.3%
    # uncut; no hedge 5.7-6.9% / 93.1-94.3% / 11.4-17.0% (seeds 64-69): the uncut rate
    # fails it at this seed (11.95%), the others are too close for one seed to tell
    rate, cover, rate_unsplit, share = _contrast_rates(64, 1000, 0.1)
    assert 0.15 <= share <= 0.35
    assert 0.03 <= rate <= 0.06 and cover >= 0.94
    assert rate_unsplit <= 0.115


def test_at_5_rounds_the_hedge_takes_every_cut_below_its_level():
    # at 5 rounds the best cut is the wrong one (not between the moved and the other
    # sizes) in ~14% of these benchmarks, and a moved size it leaves in the other run kept
    # the round part diluted (8-14% A/A there). Every cut below HEDGE_LEVEL 0.35, each
    # cell on the widest of its CIs: over seeds 81-90 (1000 benchmarks each) 4.9-6.7%,
    # mean 5.62%, se 0.16 (the alpha + 1 point holds for the rate; one seed's
    # rate has a Monte Carlo sd of ~0.5 points, so the bound is 0.06 + 2 sd), CI95 93.3-95.1%,
    # 6.6-10.1% where no cut split. No hedge fails it (8.2% / 9.7%, 91.8% / 90.3%,
    # 12.1% / 15.2% at seeds 81 / 87). The best cut alone at 0.25 (stop 30) gave 5.6-7.2%,
    # mean 6.22%: too close to the new rule for one seed's rate to tell them apart, so the
    # old/new comparison is the bench's (--only-hedge-sweep, docs/statistics.md "The hedge
    # at 5 rounds"). ~15-20 s at load: the suite's price for the 5-round hedge
    rate, cover, rate_unsplit, share = _contrast_rates(81, 1000, 0.1, n=5)
    assert 0.45 <= share <= 0.7
    assert 0.03 <= rate <= 0.07 and cover >= 0.93
    assert rate_unsplit <= 0.115


def test_the_hedge_leaves_sizes_that_share_one_round_effect_near_alpha():
    # nothing to hedge: one round effect at every size. The best cut's runs are a little
    # wider now and then (4.9% -> 4.7% A/A over 2000 benchmarks), not conservative
    rng = np.random.default_rng(65)
    ts = []
    for _ in range(300):
        cells, rounds = _regime_bench(rng, 10, phase_sd=0.1, all_share=True)
        ts += L.compare_cells(cells, rounds=rounds)
    assert 0.03 <= np.mean([t.p <= 0.05 for t in ts]) <= 0.065
    assert 0.935 <= np.mean([t.ci_low <= 1.0 <= t.ci_high for t in ts]) <= 0.97


# --- launch regimes, unpaired: a launch effect only some sizes share (_unpaired_regimes) ---

def _launch_regime_bench(rng, ns=(5, 5), cells=10, noisy=5, sd=0.25, every=False):
    """Unpaired A/A benchmark: each launch an effect N(0, 0.05) every size shares plus
    N(0, sd) that only the `noisy` smallest sizes share (every: all sizes), each cell
    N(0, 0.05) of its own."""
    effects = [(p, rng.normal(0, 0.05, n), rng.normal(0, sd, n)) for p, n in zip("bc", ns, strict=True)]
    out = []
    for s in range(cells):
        pair = [{f"{p}{k}": math.exp(s + w[k] + (u[k] if every or s < noisy else 0.0)
                                     + rng.normal(0, 0.05)) for k in range(len(w))}
                for p, w, u in effects]
        out.append((pair[0], pair[1], "lower"))
    return out


def test_unpaired_sizes_a_launch_effect_moves_apart_are_tested_in_their_own_regimes():
    # the Open MPI vs MPICH PingPong store: a launch effect sd ~0.37 shared by 0 B-8 KiB,
    # ~0.11 above. One Spread per side spread it over all sizes: 19.5% A/A at the sizes
    # sharing it (coverage 80.5%), 0% at the others (measured at this seed; REGIME_LEVEL
    # 0 is that model and fails here). Each regime its own block: 4.6% / 4.8%
    rng = np.random.default_rng(71)
    ts = [L.compare_cells(_launch_regime_bench(rng)) for _ in range(200)]
    assert np.mean([len({t.regime for t in row}) == 2 and row[0].regime != row[9].regime
                    for row in ts]) >= 0.9
    for part in (slice(0, 5), slice(5, 10)):
        cs = [t for row in ts for t in row[part]]
        assert 0.02 <= np.mean([t.p <= 0.05 for t in cs]) <= 0.08
        assert 0.92 <= np.mean([t.ci_low <= 1.0 <= t.ci_high for t in cs]) <= 0.98


def test_unpaired_launch_regimes_leave_alike_sizes_alone():
    rng = np.random.default_rng(72)
    split = sum(len({t.regime for t in L.compare_cells(
        _launch_regime_bench(rng, every=True))}) > 1 for _ in range(200))
    assert split / 200 <= 0.03


def test_unpaired_launch_regimes_hold_a_thin_side():
    # 3 vs 7: one Spread per side gave the sharing sizes 9.9% A/A (coverage 90%); cut, a
    # thin side's regimes are conservative (Cochran-Cox on 2 df): 2.1% / 1.3% at seed 81
    rng = np.random.default_rng(73)
    ts = [L.compare_cells(_launch_regime_bench(rng, ns=(3, 7))) for _ in range(100)]
    for part in (slice(0, 5), slice(5, 10)):
        cs = [t for row in ts for t in row[part]]
        assert np.mean([t.p <= 0.05 for t in cs]) <= 0.06
        assert np.mean([t.ci_low <= 1.0 <= t.ci_high for t in cs]) >= 0.93


def test_the_unpaired_cut_counts_the_two_sides_centring(monkeypatch):
    # each side's logs are centred per cell before the cut: the per-launch differences of
    # the two runs' means sum to 0 on each side (n - 2 df, not n - 1), and so do the
    # residuals' ((n - 2)(S - 1)). On n - 1 the F test cut 2 vs 2 launches of 6 alike
    # sizes (one cut point) at p <= 0.05 in 7.2% of these 3000 benchmarks (seed 74); on
    # n - 2 in 4.4%
    monkeypatch.setattr(L, "REGIME_LEVEL", 0.05)
    rng = np.random.default_rng(74)
    cut = sum(len(L._unpaired_regimes(_launch_regime_bench(rng, ns=(2, 2), cells=6, sd=0.0),
                                      None)) > 1 for _ in range(3000))
    assert 0.03 <= cut / 3000 <= 0.06


# --- a thin side planned by its expected power (plan_expect) ---

def _true_components(n_thin: int, shared: float, specific: float, f: float, sizes: int = 10):
    """_bench's true variance components of a cell's mean (thin baseline first: launch
    part var(u) + var(v)/S at n - 1 df, cell part var(v)(S - 1)/S at (n - 1)(S - 1); then
    the 7-launch side's), the thin side's effects x f."""
    lp, cp = shared ** 2 + specific ** 2 / sizes, specific ** 2 * (sizes - 1) / sizes
    return ((f * f * lp / n_thin, n_thin - 1), (f * f * cp / n_thin, (n_thin - 1) * (sizes - 1)),
            (lp / 7, 6), (cp / 7, 6 * (sizes - 1)))


@pytest.mark.parametrize("n_thin,shared,specific,f", [
    (2, 0.05, 0.025, 1.0), (2, 0.05, 0.025, 1.7), (2, 0.05, 0.025, 1 / 3),
    (3, 0.05, 0.025, 1.7), (2, 0.0, 0.05, 1.0)])
def test_plan_expect_at_the_true_components_has_its_power(n_thin, shared, specific, f):
    """plan_expect given the TRUE components (no estimate to plan from) is the effect the
    test detects with 80% power: exact power (_exact_power: P(|N(d, sigma^2)| > h) over
    the CI half-widths h of 150 simulated benchmarks' 1500 cells, the flag off so every
    cell is tested on the pooled parts the grid models) within 75-85%. Measured: 2 vs 7
    shared 77.0, x1.7 77.1, x1/3 79.6; 3 vs 7 x1.7 82.8; 2 vs 7 not sharing 76.2%. The
    grid's draws are the estimates the test may get, floored and weighted per draw as the
    test does: _detectable on the same true components (one critical value, the thin
    part's own df, no floor) is 47.1% at x1/3 (75.6, 75.6, 82.1, 74.4% in the others)."""
    comps = _true_components(n_thin, shared, specific, f)
    d = math.log1p(L.plan_expect(comps, (n_thin, 7), 2, 0.05))
    rng = np.random.default_rng(3)
    keep, mix = L._outlying_cells, L.SMALLER_MIX
    L._outlying_cells = lambda residuals: set()
    L.SMALLER_MIX = ()      # nor the smaller side's mix (stop 43: from 2 launches)
    try:
        ts = [t for _ in range(150)
              for t in L.compare_cells(_bench(rng, n_thin, 7, 10, shared, specific, noisier=f))]
    finally:
        L._outlying_cells, L.SMALLER_MIX = keep, mix
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    power = _exact_power(d, hs, math.sqrt(sum(v for v, _ in comps)))
    assert 0.75 <= power <= 0.85


def test_plan_expect_floors_and_weights_each_draw_as_the_test_does():
    """Draws of the grid by hand: a thin launch part above the other side's (per launch)
    keeps its 1 df, one below it is the other's at 2 df (floor_component); the critical
    value is Cochran-Cox's variance-weighted mean of the components' t quantiles. A
    stricter alpha gives a larger figure; with no thin side it is _detectable's."""
    comps = ((0.004, 1), (0.0001, 9), (0.0007, 6), (0.00005, 54))
    se2, cols = L._expect_draws(comps, (2, 7), 2, 0)
    crit = L._expect_crit(cols, 0.05)
    thin_d = cols[0][1]
    assert set(np.unique(thin_d)) == {1.0, 2.0}
    for i in (np.argwhere(thin_d == 1)[0], np.argwhere(thin_d == 2)[0]):
        at = tuple(i)
        vs = [float(np.broadcast_to(v, se2.shape)[at]) for v, _ in cols]
        dfs = [float(thin_d[at]), 6, 9, 54]     # thin launch, other launch, cell parts
        if dfs[0] == 2:     # floored: the other side's launch part per launch
            assert vs[0] * 2 == pytest.approx(vs[1] * 7)
        else:
            assert vs[0] * 2 >= vs[1] * 7
        want = sum(v * sps.t.isf(0.025, d) for v, d in zip(vs, dfs, strict=True)) / sum(vs)
        assert crit[at] == pytest.approx(want, rel=1e-9)
        assert se2[at] == pytest.approx(sum(vs), rel=1e-12)
    assert L.plan_expect(comps, (2, 7), 2, 0.005) > L.plan_expect(comps, (2, 7), 2, 0.05)
    even = ((0.004, 4), (0.0001, 36), (0.0007, 4), (0.00005, 36))
    assert L.plan_expect(even, (5, 5), 2, 0.05) == L._detectable(even, 0.05, 0.8)


@pytest.mark.parametrize("n_thin,f,seed,band", [(2, 1.7, 71, (0.69, 0.90)),
                                                (3, 1.7, 72, (0.72, 0.88))])
def test_the_detectable_of_a_thin_side_a_little_noisier_has_its_power(n_thin, f, seed, band,
                                                                      monkeypatch):
    """2 or 3 vs 7 launches x 10 sizes sharing launch effects, the thin side 1.7x noisier
    (sd): the median 'detectable' the cells report (300 benchmarks) has the test's power
    (_exact_power over every cell of the same benchmarks) in 75-85% +- the median's error
    (the bands of test_the_detectable_a_thin_cell_reports_has_its_power). Now (plan_expect)
    2 vs 7 77.3%, 3 vs 7 78.8% (2 vs 7 78.8% since stop 40's plan_boot, 77.1% before it); planned by plan_component alone (a 1-2 df estimate that
    cannot tell 1.7x from equal spreads is pooled, then one critical value) 64.1% / 68.9%:
    this test failed. Since stop 43 over two cells a benchmark (_median_detectable): 78.6
    / 81.7% (3 vs 7 higher since stop 42's mix); x 0.8 73.0% (passes, the wide band) /
    68.1% (fails)."""
    _mix_off_at_two(n_thin, monkeypatch)
    shared, specific = 0.05, 0.025
    rng = np.random.default_rng(seed)
    ts = [t for _ in range(300)
          for t in L.compare_cells(_bench(rng, n_thin, 7, 10, shared, specific, noisier=f))]
    d = math.log1p(_median_detectable(ts, 10))
    v = shared * shared + specific * specific
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    power = _exact_power(d, hs, _sigma_of(ts, 10, math.sqrt(f * f * v / n_thin + v / 7)))
    assert band[0] <= power <= band[1]
    t = ts[0]
    assert t.detectable == L.detectable_at(t, 0.05) < L.detectable_at(t, 0.005)


def test_the_detectable_of_a_thin_side_really_quieter_has_its_power():
    """2 vs 7 launches x 10 sizes sharing launch effects, the 2-launch side 1/3 as noisy
    (sd): the median 'detectable' the cells report (200 benchmarks), taken as the true
    difference, has the test's power (_exact_power over every cell of the same
    benchmarks) in 75-85% +- 1.5 sd of a seed (2 points; band 0.72-0.88). Since stop 40
    (stats.launch.plan_boot's median-bias correction and own-part cells by plan_expect,
    both at a 2-launch side; docs/statistics.md "Planning", "Stop 40") 82.7% at this
    seed (seeds 7-14 of bench_inference --only-planning-rows 79.8-85.0%, mean 82.0%;
    81-86: 81.4-85.4%); the rule before planned this row at 90.6% (88.6-91.6% at those
    seeds, mean 89.9%): this test failed (stop 43, over two cells a benchmark,
    _median_detectable: 82.7%; PLAN_BOOT_GRID 0 88.4%, fails; the figure x 0.8 58.5%).
    Stop 43 (mix2, the mix from 2 launches): 85.5%; its mix plan straight to plan_expect,
    not through plan_boot's correction, 88.7%: fails (bench rows: 84.8% vs 87.5%)."""
    shared, specific, f = 0.05, 0.025, 1 / 3
    rng = np.random.default_rng(7)
    ts = [t for _ in range(200)
          for t in L.compare_cells(_bench(rng, 2, 7, 10, shared, specific, noisier=f))]
    d = math.log1p(_median_detectable(ts, 10))
    v = shared * shared + specific * specific
    hs = [math.log(t.ci_high) - t.diff_log for t in ts]
    assert all((t.p <= 0.05) == (abs(t.diff_log) > h) for t, h in zip(ts, hs, strict=True))
    power = _exact_power(d, hs, _sigma_of(ts, 10, math.sqrt(f * f * v / 2 + v / 7)))
    assert 0.72 <= power <= 0.88


def test_the_detectable_is_corrected_and_own_parts_planned_by_expect_only_at_2_launches():
    """plan_boot's correction and ownexp (_own_expect) act only where the thin side has
    PLAN_BOOT_MAX_N = 2 launches: at 3 vs 7 the figure is plan_expect's at the planned
    truths, an own-part cell planned by _detectable; at 2 vs 7 a 1/3-as-noisy thin
    side's figure is lowered (its median bias) and an own-part cell goes to plan_expect.
    The coarse bootstrap grid's ratio is applied to the full grid's figure."""
    assert L.PLAN_BOOT_MAX_N == 2 and L.PLAN_OWN_EXPECT and L.PLAN_BOOT_GRID == 3
    for n in (2, 3):
        comps = _true_components(n, 0.05, 0.025, 1 / 3)
        floors = ((0.025 ** 2 * n / 9 / 9, 9.0 * (n - 1)), (0.025 ** 2 / 9, 54.0))
        x = L.plan_expect(comps, (n, 7), 2, 0.05)
        y = L.plan_boot(comps, (n, 7), 2, 0.05, L.POWER, floors)
        assert (y < 0.95 * x) if n == 2 else (y == x)
        assert L._expects(True, True, "none", comps, (n, 7), 2) == (n == 2)
        assert L._expects(True, False, "none", comps, (n, 7), 2)
        assert not L._expects(True, True, "round", comps, (n, 7), 2)


def test_a_thin_launch_part_is_pooled_with_its_floor_when_consistent_else_raised():
    """plan_thin_launch: a 1-df launch part within F(1, 9)'s 0.85 quantile (2.4) of its
    9-df floor (the side's cell part / S: sizes sharing no launch effect) is pooled with
    it, df-weighted; far above, the part above the floor is raised to its median-unbiased
    value (x 1 / chi2_0.5(1) = x2.20); no floor: the whole estimate raised."""
    f85 = sps.f.ppf(L.PLAN_SAME_LEVEL, 1, 9)
    assert f85 == pytest.approx(2.4, abs=0.1)
    assert L.plan_thin_launch(0.0002, 1, 0.0001, 9) == pytest.approx((0.0002 + 0.0009) / 10)
    assert L.plan_thin_launch(0.00005, 1, 0.0001, 9) == pytest.approx(0.0001)
    raise1 = 1 / sps.chi2.ppf(0.5, 1)
    assert L.plan_thin_launch(0.004, 1, 0.0001, 9) == pytest.approx(0.0001 + 0.0039 * raise1)
    assert L.plan_thin_launch(0.004, 2, 0.0, 0.0) == pytest.approx(
        0.004 * 2 / sps.chi2.ppf(0.5, 2))


def test_regimes_are_cut_in_size_order_whatever_the_cells_order():
    # callers pass a block's cells in insertion order; the regimes are runs of the sizes
    # ascending: the same block shuffled, with its sizes, is split and tested the same
    rng = np.random.default_rng(64)
    cells, rounds = _regime_bench(rng, 10)
    sizes = [2 ** s for s in range(10)]
    perm = [7, 2, 9, 0, 5, 3, 8, 1, 6, 4]
    ordered = L.compare_cells(cells, rounds=rounds, sizes=sizes)
    mixed = L.compare_cells([cells[i] for i in perm], rounds=rounds,
                            sizes=[sizes[i] for i in perm])
    assert len({t.regime for t in ordered}) == 2
    for j, i in enumerate(perm):
        assert mixed[j].regime == ordered[i].regime
        assert mixed[j].se_log == pytest.approx(ordered[i].se_log, rel=1e-9)
    # without the sizes the shuffled block's runs mix both kinds of size: no split
    assert len({t.regime for t in L.compare_cells([cells[i] for i in perm],
                                                  rounds=rounds)}) == 1
    with pytest.raises(ValueError, match="3 sizes for 10 cells"):
        L.compare_cells(cells, rounds=rounds, sizes=[1, 2, 3])


@pytest.mark.parametrize("n_thin,band", [(2, (0.30, 0.70)), (3, (0.395, 0.56))])
def test_an_alike_size_flagged_by_chance_keeps_its_power_and_alpha(n_thin, band, monkeypatch):
    """2 or 3 vs 7 launches x 10 alike sizes, no launch effect (cell part sd 0.05), 150
    A/A benchmarks (figures below at 300: _flagged_cells_power): the outlying-size flag (one-sided F at 10% a size) marks about 8% of
    these cells, as its level says. A flagged cell's part is estimated from both sides'
    sums of squares together (_joint_parts: 7-8 df, not the thin side's own 1-2): exact
    power (_exact_power) over the flagged cells at the median 'detectable' of all cells
    48.8% / 32.8% (unflagged 86.3 / 82.5%; a flagged cell's estimate is a chance-high
    one: selected); on each side's own part (the rule before) 4.7% / 11.2% (fails).
    Their false positives stay within alpha's binomial bound (0 of 261 and 0 of 244).
    Since stop 42's mix the 3 vs 7 figure is higher and so is the rule before's: at 150
    benchmarks, seeds 73-80, 45.5% (sd 2.2; 46.1% at this seed) against 34.2% (sd 1.8;
    33.8%), which passed the old band (0.20-0.50; review s43). The band is now 39.5-56%
    (3 sd of a seed above the rule before's worst, 37.1%, and below today's)."""
    _mix_off_at_two(n_thin, monkeypatch)
    share, power, fp, n = _flagged_cells_power(np.random.default_rng(70 + n_thin), n_thin, 1.0)
    assert 0.05 <= share <= 0.11
    assert band[0] <= power <= band[1]
    assert fp <= sps.binom.ppf(0.999, n, 0.05)


@pytest.mark.parametrize("n_thin", [2, 3])
def test_a_flagged_sizes_joint_part_is_not_floored_at_the_other_sides(n_thin, monkeypatch):
    """2 or 3 vs 7 x 10 alike sizes, no launch effect, the thin side 1/3 as noisy (cell
    part sd 0.05 / 3 against 0.05), 150 A/A benchmarks: a flagged size's joint part
    (_joint_parts: the thin side's pooled level times a ratio on 7-8 df) is kept as it is;
    _each_cell judged it on the launches' 1-2 df and floored it at the other side's part
    (3x the sd), and those cells had 0.6% / 3.1% exact power at the median 'detectable'
    (fails), 27.0% / 36.5% unfloored (selected chance-high estimates: below the other
    cells' 80-82%). Their false positives stay within alpha's binomial bound (0 of
    244-262)."""
    _mix_off_at_two(n_thin, monkeypatch)
    share, power, fp, n = _flagged_cells_power(np.random.default_rng(70 + n_thin), n_thin,
                                               1 / 3)
    assert 0.05 <= share <= 0.11
    assert 0.15 <= power <= 0.55
    assert fp <= sps.binom.ppf(0.999, n, 0.05)


def _flagged_cells_power(rng, n_thin: int, noisier: float) -> tuple[float, float, int, int]:
    """n_thin vs 7 launches x 10 alike sizes, no launch effect (cell part sd 0.05, the
    thin side's x noisier), 150 A/A benchmarks: (share of cells flagged with their own
    part, exact power over those at the median 'detectable' of all cells, their false
    positives at 5%, how many). The two tests' figures above are at 300; at these 150
    (seeds 72, 73): shares 7.8-9.0%, power 47.4% / 30.3% alike, 25.1% / 33.9% thin side
    1/3 (since stop 42's mix 3 vs 7 47.2 / 46.7%; since stop 43 over two cells a benchmark,
    _median_detectable: 47.5 / 46.1%, 24.6 / 44.9%; each side's own part at 3 vs 7 now
    34.2%, failing only the stop-43 band), 0 false positives of 117-135; each side's own
    part (_joint_parts' sides never agreeing) 3.6% / 11.1%, a joint part floored
    (JointPart.joint False) 0.7% / 2.5%:
    both fail."""
    ts, flagged = [], []
    for _ in range(150):
        cells = _bench(rng, n_thin, 7, 10, 0.0, 0.05, noisier=noisier)
        out = L.compare_cells(cells)
        fl = L.flagged_cells([dict(enumerate(c[k] for c in cells)) for k in (0, 1)])
        ts += out
        flagged += [t.own_cell and i in fl for i, t in enumerate(out)]
    own = np.array(flagged)
    d = math.log1p(_median_detectable(ts, 10))
    hs = [math.log(t.ci_high) - t.diff_log for t, o in zip(ts, own, strict=True) if o]
    power = _exact_power(d, hs, _sigma_of(ts, 10, 0.05 * math.sqrt(noisier ** 2 / n_thin
                                                                  + 1 / 7)))
    fp = sum(t.p <= 0.05 for t, o in zip(ts, own, strict=True) if o)
    return float(own.mean()), power, int(fp), int(own.sum())


def _joint_case(rng, noisy_thin: float):
    """2 vs 7 x 10 sizes, no launch effect; the last size's cell part x noisy_thin on
    the thin side only, x2 on the other side."""
    sds = np.full(10, 0.05)
    b = rng.normal(0, 1, (2, 10)) * sds * np.r_[np.ones(9), noisy_thin]
    c = rng.normal(0, 1, (7, 10)) * sds * np.r_[np.ones(9), 2.0]
    return [{f"b{i}": math.exp(b[i, s]) for i in range(2)} for s in range(10)], \
        [{f"c{i}": math.exp(c[i, s]) for i in range(7)} for s in range(10)]


def test_a_flagged_sizes_part_is_one_estimate_from_both_sides_unless_they_disagree():
    """_own_for on a flagged size: where the two sides' sums agree (two-sided F at the
    flag's level), both sides' parts come from one tau^2 (their sums of squares added,
    over 1 + 6 df), each at df D x (a^2 + b^2) / (a + b)^2 so that the Satterthwaite df
    of the cell's two parts is D = 7, not ~2D; where the thin side's sum is far off the
    other's, each side keeps its own part on its own df (1 and 6)."""
    rng = np.random.default_rng(5)
    seen = {True: 0, False: 0}
    for noisy in (2.0, 12.0) * 60:
        b, c = _joint_case(rng, noisy)
        sides = [dict(enumerate(b)), dict(enumerate(c))]
        rs = [L._residuals(s) for s in sides]
        spreads = [L._spread_of(r) for r in rs]
        if any(sp.cell_parts for sp in spreads) or 9 not in L._outlying_cells(rs):
            continue
        (vb, db), (vc, dc) = [p[9] for p in L._joint_parts(spreads, rs, {9})]
        sums = [L._cell_sums(r)[9] for r in rs]
        w = L._side_weights(rs)
        agree = L._sides_agree([(wi * ss, d) for wi, (ss, d) in zip(w, sums, strict=True)],
                               L._outlying_level(rs))
        seen[agree] += 1
        if agree:
            a, c2 = vb / 2, vc / 7
            assert db == pytest.approx(dc)
            assert (a + c2) ** 2 / (a * a / db + c2 * c2 / dc) == pytest.approx(7.0)
            if w == [1.0, 1.0]:     # one tau^2: the parts differ by each side's pooled term
                assert vb - L._own_part(0.0, spreads[0]) == \
                    pytest.approx(vc - L._own_part(0.0, spreads[1]))
        else:
            assert (db, dc) == (1.0, 6.0)
            assert vb == pytest.approx(max(0.0, L._own_part(sums[0][0] / 1.0, spreads[0])))
    assert seen[True] >= 5 and seen[False] >= 5, seen


@pytest.mark.parametrize("n_thin,n_other", [(3, 4), (2, 7)])
def test_a_flagged_sizes_joint_part_is_planned_at_its_df_not_the_floors(n_thin, n_other):
    """A flagged size's joint part (_joint_parts) is not floored by the test (_each_cell),
    so the plan keeps its df (_plan_own_df) rather than mixing in the floor's
    (_plan_mixed_df); told apart by its flag, not its df: at 3 vs 4 nearly every thin-side
    joint part has <= d_own + 1 df (the df test read 354 of 356 as the thin side's own).
    3 sizes (no flag, every cell its own part): the thin side's own parts still mixed."""
    rng = np.random.default_rng(80 + n_thin)
    seen = 0
    for _ in range(120):
        cells = _bench(rng, n_thin, n_other, 10, 0.0, 0.05)
        sides = [dict(enumerate(c[k] for c in cells)) for k in (0, 1)]
        thin, other = L._plan_sides(L.gated_spreads(sides))[:2]
        for key in L.flagged_cells(sides):
            part = thin.own_part(key)
            if part.joint:      # else the sides disagree: each its own part (_joint_parts)
                assert L._plan_own_df(thin, other, key, part.df) == part.df
                seen += 1
        few = [{k: side[k] for k in range(3)} for side in sides]
        thin, other = L._plan_sides(L.gated_spreads(few))[:2]
        part = thin.own_part(0)
        assert not part.joint
        assert L._plan_own_df(thin, other, 0, part.df) != pytest.approx(part.df)
    assert seen >= 20, seen


def _unpaired_ramp(rng, sizes=11, launches=8):
    """An unpaired A/A ramp: launch effect sd 0.05 shared per side, cell part sd 0.03 ->
    0.15 linearly over the sizes (bench_inference --only-ramp --unpaired)."""
    u = rng.normal(0.0, 0.05, (2, launches))
    return [tuple({f"{j}-{k}": float(np.exp(u[j, k] + rng.normal(0.0, sd)))
                   for k in range(launches)} for j in (0, 1)) + ("lower",)
            for sd in np.linspace(0.03, 0.15, sizes)]


def test_unpaired_ramp_follows_size_order_when_sizes_given():
    """compare_cells without rounds, sizes given (cells shuffled): the trend gate/prior
    (_trend_x) applies as paired, so the noisiest size's se follows its own level: median
    se(noisiest)/se(quietest) over 200 draws 2.73 (without the trend, before: 2.20, and
    its A/A 6-7% in the bench). Shuffled cells with their sizes test as sorted ones.
    100 draws (200 before): median 2.73 (bootstrap sd 0.05); _trend_x returning None (no
    trend) gives 2.17 (sd 0.07) on the same draws and fails."""
    rng = np.random.default_rng(11)
    sizes = [2 ** i for i in range(11)]
    ratios = []
    for rep in range(100):
        cells = _unpaired_ramp(rng)
        order = [int(i) for i in rng.permutation(11)]
        got = L.compare_cells([cells[i] for i in order], sizes=[sizes[i] for i in order])
        by_cell = {i: t for i, t in zip(order, got, strict=True)}
        if rep < 5:
            want = [t.se_log for t in L.compare_cells(cells, sizes=sizes)]
            assert np.allclose([by_cell[i].se_log for i in range(11)], want, rtol=1e-9)
        ratios.append(by_cell[10].se_log / by_cell[0].se_log)
    assert np.median(ratios) > 2.5


def _noisy_on_one_side(rng, ns: tuple[int, int], reps: int, sizes: int = 10) -> float:
    """A/A raw p <= 0.05 at the last of `sizes` sizes over reps benchmarks, unpaired, ns
    launches a side, cell parts sd 0.05 and the last size's 0.15 on the FIRST side only,
    a launch effect sd 0.03 a side (bench_inference._outlier_rows' '3x base' row)."""
    sds = np.full((2, sizes), 0.05)
    sds[0, -1] = 0.15
    hits = 0
    for _ in range(reps):
        vals = [np.exp(rng.normal(0.0, 0.03, (n, 1)) + rng.normal(0.0, 1.0, (n, sizes)) * sds[j])
                for j, n in enumerate(ns)]
        cells = [({f"a{r}": vals[0][r, k] for r in range(ns[0])},
                  {f"b{r}": vals[1][r, k] for r in range(ns[1])}, "higher")
                 for k in range(sizes)]
        hits += L.compare_cells(cells)[-1].p <= 0.05
    return hits / reps


def test_a_size_noisy_on_the_smaller_side_keeps_alpha_at_3_vs_7():
    # Stop 42 (stats.launch.SMALLER_MIX): a size 3x noisier only on the side with 3 launches
    # against 7 escapes the outlying-size flag; the smaller side's own part mixed in keeps
    # it at alpha: 5.3% at seed 35, 300 benchmarks (the rule before, SMALLER_MIX = (): 13.7%,
    # failing here); balanced as before. Binomial sd of 5% at 300: 1.3 points.
    assert _noisy_on_one_side(np.random.default_rng(35), (3, 7), 300) <= 0.08
    assert _noisy_on_one_side(np.random.default_rng(36), (7, 7), 300) <= 0.08


def test_a_size_noisy_on_the_smaller_side_keeps_alpha_at_2_vs_7():
    # Stop 43 (SMALLER_MIX_MIN 2): the mix acts at a 2-launch smaller side too (its own part
    # on 1 df, Cochran-Cox): 4.3% at seed 35, 300 benchmarks; the rule before (the mix from
    # 3 launches, SMALLER_MIX_MIN = 3) 10.3%, failing here. Binomial sd of 5% at 300: 1.3.
    assert _noisy_on_one_side(np.random.default_rng(35), (2, 7), 300) <= 0.08


def test_the_unbalanced_warning_and_the_readme_give_one_figure():
    # review R1 (stop 35): the warning said ~11%, README 9-11%, while 13.3% was measured.
    # One constant per case; README cites each. Stop 42: 3-5 vs 7 under the smaller side's
    # mix (UNBALANCED_FALSE_POSITIVES); stop 43: 2 vs 7 under it too (..._2V7, below it),
    # so one figure for 2-5 vs 7; each beside the balanced design's (review R15: not "~5%
    # balanced")
    from pathlib import Path

    from mpibench.report import compare_view
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    figure = f"up to {100 * L.UNBALANCED_FALSE_POSITIVES:.1f}%"
    assert L.UNBALANCED_FALSE_POSITIVES_2V7 <= L.UNBALANCED_FALSE_POSITIVES
    assert readme.count(figure + " ") == 2 and "UNBALANCED_FALSE_POSITIVES" in readme
    assert "13.3%" not in readme and "10.5%" not in readme
    assert "~11%" not in inspect.getsource(compare_view.unbalanced_launches)
    for small in (2, 3, 4, 5):
        assert L.unbalanced_false_positives(small) == \
            f"{figure} per cell at 2-5 vs 7 launches, 5.0% at 7 + 7"
    assert "balanced;" not in inspect.getsource(compare_view.unbalanced_launches)


def test_an_unbalanced_test_is_planned_up_to_the_larger_side():
    rng = np.random.default_rng(37)

    def cell(nb, nc):
        return L.compare_cells([({f"b{i}": math.exp(x) for i, x in
                                  enumerate(rng.normal(0.0, 0.05, nb))},
                                 {f"c{i}": math.exp(x) for i, x in
                                  enumerate(rng.normal(0.0, 0.05, nc))}, "higher")])[0]
    for nb, nc in ((3, 7), (7, 4), (2, 7), (5, 7), (7, 5)):
        t = cell(nb, nc)
        assert L.unbalanced(t.n_base, t.n_cand)
        # a large effect needs few launches per side: the smaller side still up to 7
        assert L.launches_needed(t.sd_log, 1.0) < 7 == L.launches_needed_for(t, 1.0)
        # a small one needs more than 7 per side: launches_needed's count, unchanged
        need = L.launches_needed(t.sd_log, 0.01)
        assert need > 7 and L.launches_needed_for(t, 0.01) == need
    # up to UNBALANCED_MAX_SMALL (5, review R15) on the smaller side; 6 vs 7 not measured
    assert L.UNBALANCED_MAX_SMALL == 5
    for nb, nc in ((6, 7), (5, 5), (4, 4), (3, 3)):
        t = cell(nb, nc)
        assert not L.unbalanced(t.n_base, t.n_cand)
        assert L.launches_needed_for(t, 1.0) == L.launches_needed(t.sd_log, 1.0)


def test_the_mix_plan_of_a_side_with_no_cell_spread_is_its_pooled_part():
    """_mix_draws with a zero pooled cell part (every residual of the side 0) divided 0 by 0
    in its F ratio: a RuntimeWarning (an error under -W error) and NaN p's that fell back to
    the pooled part only because NaN > 0 is False (review s42 R15). Now the pooled draws,
    part 0 on its own df, and no warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        part, df = L._mix_draws(0.0, 5.0, 3, 8, (10.0, 0.1, 0.6), (0.01, 20.0, 7))
    assert part.shape == df.shape == (1, 1, 8, L.MIX_GRID)
    assert not part.any() and (df == 5.0).all()
