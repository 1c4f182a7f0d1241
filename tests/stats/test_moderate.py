"""stats.moderate: empirical-Bayes moderated variances (Smyth 2004), checked on known
distributions (seeded), and what they do to the launch-level test where a benchmark's
sizes are not equally noisy (stats.launch.spread's cell parts)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from mpibench.stats import launch as L
from mpibench.stats import moderate as M


@pytest.mark.parametrize("x", [1e-4, 0.01, 0.3, 1.0, 5.0, 200.0])
def test_trigamma_inverse(x):
    assert float(special.polygamma(1, M._trigamma_inverse(x))) == pytest.approx(x, rel=1e-6)


def test_prior_recovers_a_known_inverse_chi2_prior():
    # sigma_g^2 = d0 s0^2 / chi2_d0 (the model's prior), s_g^2 = sigma_g^2 chi2_d / d:
    # the method of moments finds d0 and s0^2 (median over repetitions, 400 variances each)
    rng = np.random.default_rng(7)
    d0, s0, d = 8.0, 0.04, 4.0
    got = []
    for _ in range(60):
        sig = d0 * s0 / rng.chisquare(d0, 400)
        s2 = sig * rng.chisquare(d, 400) / d
        got.append(M.prior(s2, np.full(400, d)))
    assert np.median([g[0] for g in got]) == pytest.approx(d0, rel=0.25)
    assert np.median([g[1] for g in got]) == pytest.approx(s0, rel=0.1)


def test_alike_variances_are_pooled():
    # every sigma^2 equal: d0 infinite (full pooling, the pooled variance) in most draws
    rng = np.random.default_rng(3)
    inf = 0
    for _ in range(200):
        s2 = rng.chisquare(4, 20) / 4 * 0.01
        d0, s0 = M.prior(s2, np.full(20, 4.0))
        inf += math.isinf(d0)
        if math.isinf(d0):
            assert s0 == pytest.approx(s2.mean())
    assert inf >= 90, inf          # the moment estimate of 1/d0 is ~0 at most half the time
    assert M.moderated([0.02, 0.01], [4, 4], math.inf, 0.015) == [(0.015, math.inf)] * 2
    v, df = M.moderated([0.05], [4], 6.0, 0.01)[0]
    assert (v, df) == pytest.approx(((6 * 0.01 + 4 * 0.05) / 10, 10.0))


def test_robust_prior_keeps_a_noisy_group_out():
    # 16 sizes at sigma^2 0.01, 4 at 0.16: the noisy ones are their own, the quiet prior
    # is the quiet sizes' (not widened by the noisy ones)
    rng = np.random.default_rng(11)
    sig = np.array([0.01] * 16 + [0.16] * 4)
    hits = 0
    for _ in range(100):
        s2 = sig * rng.chisquare(9, sig.size) / 9
        d0, s0, own = M.robust(s2, np.full(sig.size, 9.0))
        hits += bool(own[16:].all())
        assert s0 < 0.03
    assert hits >= 90, hits


def _benchmark(rng, sds, rounds=5):
    """One benchmark's launches, A/A, paired by round: per side a launch effect every size
    shares (sd 0.08) and a cell part sd / sqrt(2) per size, a round effect both sides
    share (sd 0.1). (cells, rounds) for compare_cells."""
    shared = rng.normal(0.0, 0.1, (rounds, 1))
    side = [np.exp(shared + rng.normal(0.0, 0.08, (rounds, 1))
                   + rng.normal(0.0, 1.0, (rounds, sds.size)) * sds / math.sqrt(2))
            for _ in (0, 1)]
    cells = [({f"a{r}": side[0][r, s] for r in range(rounds)},
              {f"b{r}": side[1][r, s] for r in range(rounds)}, "lower")
             for s in range(sds.size)]
    return cells, {f"{p}{r}": r for r in range(rounds) for p in "ab"}


@pytest.mark.parametrize("paired", [True, False])
def test_noisy_sizes_keep_their_false_positives_at_alpha(paired, monkeypatch):
    # 12 sizes: 10 with a cell part of sd 0.1, 2 of sd 0.5 (a launch mode, a stall). Pooled
    # over every size (the model before: spread(moderate=False)), the noisy sizes' CIs
    # are far too narrow (A/A: ~30% of them significant); with their own moderated parts
    # they stay at alpha (binomial bound on the count). The pooled model's check needs
    # fewer draws: at seed 2004 its noisy sizes are significant in 44/120 (paired) and
    # 33/120 (unpaired) cells at 60 benchmarks (178/500, 134/500 at 250) against a bound
    # of 14 (11.7%); the moderated pass keeps 250 (30/500, 25/500 against 41).
    sds = np.array([0.1] * 10 + [0.5] * 2)
    original, original_flag = L._cell_parts, L._outlying_cells
    for moderate, expect_ok, reps in ((True, True, 250), (False, False, 60)):
        rng = np.random.default_rng(2004)
        noisy = quiet = 0
        # no cell parts anywhere = every Spread as spread(moderate=False) makes it
        monkeypatch.setattr(L, "_cell_parts", original if moderate else lambda *_a, **_k: None)
        # ... and no flagged size (its part is made from both sides' sums, _joint_parts)
        monkeypatch.setattr(L, "_outlying_cells", original_flag if moderate else lambda *_a: set())
        for _ in range(reps):
            cells, rounds = _benchmark(rng, sds)
            ts = L.compare_cells(cells, rounds=rounds if paired else None)
            assert all(t.pairing == ("round" if paired else "none") for t in ts)
            ps = np.array([t.p for t in ts])
            noisy += int((ps[10:] <= 0.05).sum())
            quiet += int((ps[:10] <= 0.05).sum())
        bound = sps.binom.ppf(0.999, 2 * reps, 0.05)
        assert bool(noisy <= bound) == expect_ok, (moderate, noisy, bound)
        assert quiet <= sps.binom.ppf(0.999, 10 * reps, 0.05), (moderate, quiet)


def test_alike_sizes_keep_the_pooled_test():
    # sizes equally noisy: no cell parts (prior df infinite, nothing an outlier) in most
    # benchmarks, and then every cell's components are the pooled ones, as before
    rng = np.random.default_rng(5)
    same = 0
    for _ in range(40):
        cells, rounds = _benchmark(rng, np.full(10, 0.1))
        diffs = [{r: b[f"a{r}"] / c[f"b{r}"] for r in range(5)} for b, c, _ in cells]
        sp = L.spread(dict(enumerate(diffs)))
        if sp.cell_parts is None:
            same += 1
            assert sp.components(5, 3) == sp.components(5)
        pooled = L.spread(dict(enumerate(diffs)), moderate=False)
        assert pooled.cell_parts is None
        assert (pooled.ms_launch, pooled.ms_cell) == (sp.ms_launch, sp.ms_cell)
    assert same >= 34, same   # ~39 of 40; the gate opens in ~5%: binom(40, 0.05) > 6 w.p. < 0.001


def test_closed_test_of_a_moderated_block_uses_each_cells_own_part():
    # 12 sizes, 5+5 unpaired: 11 quiet sizes (cell part sd 0.05) with a real 15% gain, one
    # noisy size (sd 0.4) with none. The closed test over the block (stats.multiplicity)
    # must test the noisy size with its own part, as its raw p and its CI do: with the
    # pooled part (the mean-gain test at k = 1) its adjusted p fell below its raw p in
    # about half of the benchmarks and it was adjusted-significant in ~25%.
    from mpibench.stats import multiplicity as mult

    rng = np.random.default_rng(1504)
    sds = np.array([0.05] * 11 + [0.4])
    gain = np.array([math.log(1.15)] * 11 + [0.0])
    reps, hits, moderated = 300, 0, 0
    for _ in range(reps):
        sides = [np.exp(rng.normal(0.0, 0.03, (5, 1))
                        + rng.normal(0.0, 1.0, (5, sds.size)) * sds + g)
                 for g in (0.0, gain)]
        cells = [({f"a{r}": sides[0][r, s] for r in range(5)},
                  {f"b{r}": sides[1][r, s] for r in range(5)}, "higher")
                 for s in range(sds.size)]
        ts = L.compare_cells(cells)
        moderated += any(t.own_cell for t in ts)
        adj, _family = mult.adjust_table([mult.Hypothesis("cell", t, "c", "bench")
                                          for t in ts])
        for t, a in zip(ts, adj, strict=True):
            assert a >= t.p - 1e-12, (a, t.p)
        hits += adj[-1] <= 0.05
    assert moderated >= reps * 0.9, moderated
    assert hits <= sps.binom.ppf(0.999, reps, 0.05), hits


def _unpaired(rng, sds, effect=0.0, n=5):
    """5+5 unpaired launches of one benchmark: per side a launch effect every size shares
    (sd 0.03) and a cell part of sd `sds` per size; candidate better by `effect` (log)."""
    vals = [np.exp(rng.normal(0.0, 0.03, (n, 1)) + rng.normal(0.0, 1.0, (n, sds.size)) * sds
                   + j * effect) for j in (0, 1)]
    return [({f"a{r}": vals[0][r, s] for r in range(n)},
             {f"b{r}": vals[1][r, s] for r in range(n)}, "higher") for s in range(sds.size)]


@pytest.mark.parametrize("sizes", [3, 4, 5, 8])
def test_a_noisy_size_among_few_keeps_its_false_positives_at_alpha(sizes):
    # one size 6x noisier (cell part sd 0.3 vs 0.05), 5+5 unpaired A/A. With 3-5 sizes
    # Bartlett's gate almost never rejected (0-57%) and the noisy size took the pooled part
    # (24-28% false positives at 3-4 sizes, 9% at 5); at 8 sizes each side was gated on
    # its own, and where only one side's gate opened the noisy size had 14% false
    # positives. Now: below FEW_CELLS every size has its own part, from it one gate for
    # the benchmark (both sides or neither).
    rng = np.random.default_rng(600 + sizes)
    sds = np.array([0.05] * (sizes - 1) + [0.3])
    reps, noisy, quiet = 400, 0, 0
    for _ in range(reps):
        cells = _unpaired(rng, sds)
        ps = np.array([t.p for t in L.compare_cells(cells)])
        noisy += int(ps[-1] <= 0.05)
        quiet += int((ps[:-1] <= 0.05).sum())
        if sizes < L.FEW_CELLS:     # the sides' spreads only where they are checked
            sp = [L.spread(dict(enumerate(side))) for side in
                  ([b for b, _c, _ in cells], [c for _b, c, _ in cells])]
            assert all(s.cell_parts is not None for s in sp)
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy
    assert quiet <= sps.binom.ppf(0.999, (sizes - 1) * reps, 0.05), quiet


def test_one_gate_per_benchmark():
    # the sides' gates disagree: both sides then keep their own parts (compare_cells)
    rng = np.random.default_rng(77)
    sds = np.array([0.05] * 7 + [0.3])
    seen = 0
    for _ in range(200):
        cells = _unpaired(rng, sds)
        sides = ([b for b, _c, _ in cells], [c for _b, c, _ in cells])
        gates = [L.spread(dict(enumerate(s))).cell_parts is not None for s in sides]
        if gates[0] == gates[1]:
            continue
        seen += 1
        forced = [L.spread(dict(enumerate(s)), force=True) for s in sides]
        assert all(f.cell_parts is not None for f in forced)
        ts = L.compare_cells(cells)
        assert all(t.own_cell for t in ts)
        side = gates.index(False)
        # the closed side's cell part in the test is its forced own part
        assert ts[-1].components[2 * side + 1] == forced[side].components(5, 7)[1]
    assert seen >= 10, seen


def test_gated_spreads_gates_a_comparison_once():
    # the rule compare_cells applied in place, now one function (stats.launch.gated_spreads)
    # that check --reference calls too: where one side's gate opens, the side whose gate
    # stayed closed alone keeps its own parts as well (its spread forced); where neither
    # opens, each side as spread() makes it
    rng = np.random.default_rng(78)
    sds = np.array([0.05] * 7 + [0.3])
    disagree = agree = 0
    for _ in range(150):
        cells = _unpaired(rng, sds)
        sides = [dict(enumerate(b for b, _c, _ in cells)),
                 dict(enumerate(c for _b, c, _ in cells))]
        alone = [L.spread(s) for s in sides]
        joint = L.gated_spreads(sides)
        gates = [s.cell_parts is not None for s in alone]
        if gates[0] == gates[1]:
            agree += 1
            flagged = L._outlying_cells([L._residuals(s) for s in sides]) \
                if not gates[0] else set()
            if not flagged:
                assert joint == alone
                continue
            # the gate stayed shut but some size is above the others (outlying): those
            # sizes alone have a part of their own, the others the pooled one
            for sp, j in zip(alone, joint, strict=True):
                assert j._replace(cell_parts=None) == sp and set(j.cell_parts) == flagged
            _check_flagged_parts(sides, alone, joint, flagged)
            continue
        disagree += 1
        closed = gates.index(False)
        assert joint[1 - closed] == alone[1 - closed]
        assert joint[closed] == L.spread(sides[closed], force=True)
        assert joint[closed].cell_parts is not None
    assert disagree >= 8 and agree >= 8, (disagree, agree)


def _tau2(part: float, sp) -> float:
    """The residual variance tau^2 an own part was made from (_own_part is linear)."""
    zero = L._own_part(0.0, sp)
    return (part - zero) / (L._own_part(1.0, sp) - zero)


def _check_flagged_parts(sides, alone, joint, flagged) -> None:
    """A flagged size's parts, from their properties: where the sides' sums agree, ONE
    tau^2 on the weights' scale (the parts differ only by each side's pooled term) and
    the Satterthwaite df of the two parts' sum is D, the sides' df added (one estimate,
    not two); where they disagree, each side its own df."""
    rs = [L._residuals(s) for s in sides]
    w, level = L._side_weights(rs), L._outlying_level(rs)
    for key in flagged:
        sums = [L._cell_sums(r)[key] for r in rs]
        parts = [j.cell_parts[key] for j in joint]
        if not L._sides_agree([(wi * ss, d) for wi, (ss, d) in zip(w, sums, strict=True)],
                              level):
            assert [p[1] for p in parts] == [min(d, sp.df_cell)
                                             for (_ss, d), sp in zip(sums, alone, strict=True)]
            continue
        if any(p[0] <= 0 for p in parts):
            continue        # clipped at 0: tau^2 not recoverable
        t = [wi * _tau2(p[0], sp) for wi, p, sp in zip(w, parts, alone, strict=True)]
        assert t[0] == pytest.approx(t[1], rel=1e-9)
        se = [p[0] / sp.launches for p, sp in zip(parts, alone, strict=True)]
        sat = sum(se) ** 2 / sum(x * x / p[1] for x, p in zip(se, parts, strict=True))
        assert sat == pytest.approx(sum(d for _ss, d in sums), rel=1e-9)


def test_outlying_flags_at_its_level_under_one_variance():
    # every size the same sigma^2, sums of squares sigma^2 chi2_d: each size is flagged in
    # about `level` of the draws (its F test against the others' pooled variance is exact
    # for independent sizes)
    rng = np.random.default_rng(21)
    d = np.full(8, 8.0)
    reps = 2000
    flags = sum(M.outlying(rng.chisquare(8.0, 8) * 0.01, d) for _ in range(reps))
    assert flags.sum() <= sps.binom.ppf(0.999, 8 * reps, M.OUTLYING_LEVEL), flags
    assert flags.sum() >= sps.binom.ppf(0.001, 8 * reps, M.OUTLYING_LEVEL), flags


def test_outlying_finds_one_size_four_times_as_noisy():
    # one size's variance x4 (sd x2), 8 df each: flagged in P(F(8, 56) > F_0.95 / 4) of
    # draws (0.79), a quiet size at most at the level
    rng = np.random.default_rng(22)
    d = np.full(8, 8.0)
    scale = np.array([1.0] * 7 + [4.0])
    reps = 1000
    flags = sum(M.outlying(rng.chisquare(8.0, 8) * scale, d) for _ in range(reps))
    expect = float(sps.f.sf(sps.f.isf(M.OUTLYING_LEVEL, 8, 56) / 4.0, 8, 56))
    assert abs(flags[-1] / reps - expect) < 4 * math.sqrt(expect * (1 - expect) / reps)
    assert flags[:-1].max() <= sps.binom.ppf(0.999, reps, M.OUTLYING_LEVEL)


def test_a_size_2x_noisier_among_8_at_5_plus_5_keeps_its_own_part():
    # 5+5 launches x 8 sizes, the last size's cell part sd 2x the others' (0.1 vs 0.05),
    # launch effect sd 0.03: the size's own part (the gate opens or the flag marks it) is
    # what keeps its false positives near alpha; where it slipped through on the pooled
    # part they were 7% at OUTLYING_LEVEL 10% (bench_inference --only-outlier, 1000 A/A
    # benchmarks, seeds 21 and 22). Own part in 83.3% / 90.8% of 1000 benchmarks at 10% /
    # 20% (seed 31; seed 32: 83.8 / 91.0%); band 87% (about 3.5 se from either)
    rng = np.random.default_rng(31)
    reps, own = 1000, 0
    sds = np.array([0.05] * 7 + [0.1])
    for _ in range(reps):
        sides = []
        for j in (0, 1):
            v = np.exp(rng.normal(0, 0.03, (5, 1)) + rng.normal(0, 1, (5, 8)) * sds)
            sides.append({k: {f"{j}{r}": v[r, k] for r in range(5)} for k in range(8)})
        own += any(sp is not None and sp.cell_parts is not None and 7 in sp.cell_parts
                   for sp in L.gated_spreads(sides))
    assert own >= 0.87 * reps, own


def _side_flags(rng, n_thin, side, last, reps):
    """(mean share of the quiet sizes flagged, share of benchmarks with the last size
    flagged) by the outlying-size flag over `reps` benchmarks of 2 or 3 vs 7 launches x 10
    sizes, shares of all `reps` (a benchmark whose gate opens, about 1 in 5, counts as
    flagging nothing: the flag is asked only where the gate stays shut); the thin side's launch effect and cell parts x `side`,
    the last size's cell part x `last` on both sides."""
    sds = np.array([0.05] * 9 + [0.05 * last])
    quiet = noisy = 0.0
    for _ in range(reps):
        sides = []
        for n, f in ((n_thin, side), (7, 1.0)):
            v = np.exp((rng.normal(0, 0.03, (n, 1)) + rng.normal(0, 1, (n, 10)) * sds) * f)
            sides.append({k: {f"{n}{r}": v[r, k] for r in range(n)} for k in range(10)})
        rs = [L._residuals(s) for s in sides]
        if any(L._spread_of(r).cell_parts for r in rs):
            continue
        flagged = L._outlying_cells(rs)
        quiet += len(flagged - {9}) / 9
        noisy += 9 in flagged
    return quiet / reps, noisy / reps


@pytest.mark.parametrize("n_thin", [2, 3])
def test_a_side_three_times_noisier_does_not_flag_quiet_sizes(n_thin):
    # 2 or 3 vs 7 launches x 10 alike sizes, the thin side 3x noisier: its sums added raw
    # carried each size's F test on its 1-2 df a size while the test counted both sides'
    # df, and quiet sizes were flagged in 14.1-14.4% of benchmarks (alike sides 8.2-8.5%,
    # 1000 benchmarks, seed 5); each side's sums divided by its own ms_cell where the sides
    # differ (stats.launch._side_weights): 7.7-8.3%. A size 2x noisier on both sides was
    # flagged in 48.5-51.3% of benchmarks with the sums raw, 60.4-62.0% standardised.
    # 600 benchmarks (the share's se about 0.5 points; these draws: raw 14.0% / 14.8%
    # quiet and 49.0% / 50.8% noisy, standardised 8.3% / 8.3% and 59.3% / 64.0%, alike
    # sides 8.9% / 8.0% and 60.0% / 62.0%)
    rng = np.random.default_rng(830 + n_thin)
    reps = 600
    quiet, _noisy = _side_flags(rng, n_thin, 3.0, 1.0, reps)
    assert quiet <= M.OUTLYING_THIN_LEVEL, quiet   # a 2-3-launch side: the thin level
    alike, _noisy = _side_flags(rng, n_thin, 1.0, 1.0, reps)
    assert abs(quiet - alike) <= 0.025, (quiet, alike)
    _quiet, noisy = _side_flags(rng, n_thin, 3.0, 2.0, reps)
    _quiet, noisy_alike = _side_flags(rng, n_thin, 1.0, 2.0, reps)
    assert noisy >= noisy_alike - 0.06, (noisy, noisy_alike)


def test_alike_over_two_sides_rejects_at_its_level_and_finds_a_3x_side():
    # Bartlett's test of two variances (min_groups=2, stats.launch._side_weights): one
    # sigma^2, 9 and 54 df (2 vs 7 launches x 10 sizes): rejects in about `level` of the
    # draws (its chi-square approximation; the 99.9% binomial band); one side's sd 3x
    # (variance 9x) is rejected in >= 90% of draws (here 93.5%; the exact two-sided F
    # test's power at 1% is about 0.96); one variance alone is never tested
    rng = np.random.default_rng(23)
    reps, level = 4000, M.SIDES_LEVEL
    d = np.array([9.0, 54.0])
    same = sum(not M.alike(rng.chisquare(d) / d, d, level, min_groups=2) for _ in range(reps))
    assert sps.binom.ppf(0.0005, reps, level) <= same <= sps.binom.ppf(0.9995, reps, level)
    scale = np.array([9.0, 1.0])
    apart = sum(not M.alike(rng.chisquare(d) / d * scale, d, level, min_groups=2)
                for _ in range(400))
    assert apart >= 360, apart
    assert M.alike([1.0, 100.0], [9.0, 54.0])          # MIN_GROUPS by default: not tested
    assert M.alike([1.0], [9.0], min_groups=1)


def test_side_weights_standardise_only_sides_that_differ():
    # 5+5 x 8 sizes: sides alike -> raw sums (weight 1); one side's cell parts 3x -> each
    # side's sums divided by its own pooled ms_cell
    rng = np.random.default_rng(31)
    sds = np.full(8, 0.05)
    for f, raw in ((1.0, True), (3.0, False)):
        sides = [{k: {f"{j}{r}": v for r, v in enumerate(col)}
                  for k, col in enumerate(np.exp(rng.normal(0, 1, (5, 8)) * sds * g).T)}
                 for j, g in ((0, f), (1, 1.0))]
        rs = [L._residuals(s) for s in sides]
        w = L._side_weights(rs)
        if raw:
            assert w == [1.0, 1.0]
        else:
            assert w == pytest.approx([1.0 / r.pooled.ms_cell for r in rs])
    assert L._side_weights([rs[0], None]) == [1.0, 1.0]


def test_outlying_needs_three_sizes_and_some_spread():
    assert not M.outlying([1.0, 9.0], [4.0, 4.0]).any()
    assert not M.outlying([0.0, 0.0, 0.0, 5.0], [4.0] * 4).any()


@pytest.mark.parametrize("sizes", [8])     # 22 sizes: the same rule, 6x the time
def test_a_size_twice_as_noisy_keeps_alpha_and_the_others_the_closed_test(sizes):
    # 5+5 unpaired A/A, the last size's cell part sd 0.1 vs 0.05: the one Bartlett gate
    # opened in ~25% of benchmarks and the noisy size had 16-18% false positives on the
    # pooled part (bench_inference --only-outlier). Now the size above the others
    # (stats.moderate.outlying) has its own part; the other sizes keep the pooled part
    # and, where the gate stays shut, the closed mean-gain test (a unit of their own in
    # stats.multiplicity); nothing the block prints is significant beyond alpha.
    # 300 benchmarks: the bound binom.ppf(0.999, 300, 0.05) = 28 (9.3%) fails a true 5%
    # rate 0.06% of seeds and catches a false-positive rate of 12.6% 95% of the time, 14%
    # 99% (a 10% rate, 2x alpha, passes 40%); at 150 (bound 17, 11.3%) 10% would pass 76%
    # of the time (review R14). Seed 908: noisy 22, family 5, mixed 195; with no size
    # flagged (_outlying_cells an empty set) noisy 57 (19%) and mixed 0: both fail.
    from mpibench.stats import multiplicity as mult

    rng = np.random.default_rng(900 + sizes)
    sds = np.array([0.05] * (sizes - 1) + [0.1])
    reps, noisy, family, mixed = 300, 0, 0, 0
    for _ in range(reps):
        ts = L.compare_cells(_unpaired(rng, sds))
        noisy += ts[-1].p <= 0.05
        hyps = [mult.Hypothesis("cell", t, "c", "bench") for t in ts]
        adj, _share = mult.adjust_table(hyps)
        family += min(adj) <= 0.05
        own = [t.own_cell for t in ts]
        if own[-1] and not all(own):
            mixed += 1
            # the pooled cells are a unit of their own, p from the closed mean-gain test
            pooled = [t for t in ts if not t.own_cell]
            closed = mult.closed_mean_p([t.diff_log for t in pooled],
                                        pooled[0].mean_components,
                                        [t.p for t in pooled], min(
                                            t.shared_var / t.se_log ** 2 for t in pooled),
                                        mult.MEAN_SHARE)
            ps, units = mult._cell_units(hyps)
            assert [p for p, o in zip(ps, own, strict=True) if not o] == list(closed)
            assert len({u for u, o in zip(units, own, strict=True) if not o}) == 1
            assert units[-1] not in {u for u, o in zip(units, own, strict=True) if not o}
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy
    assert family <= sps.binom.ppf(0.999, reps, 0.05), family
    assert mixed >= reps // 3, mixed


def test_known_per_size_variances_open_the_gate_a_side_alone_keeps_closed():
    # one side given by its launches, the other only by per-size variances (a stored
    # reference's sd_log^2 with launches - 1 df): the sizes the summary says differ keep
    # their own parts on the launches' side too, whose own gate stayed closed
    rng = np.random.default_rng(79)
    sds = np.array([0.05] * 7 + [0.3])
    opened = 0
    for _ in range(100):
        side = dict(enumerate(b for b, _c, _ in _unpaired(rng, sds, n=3)))
        alone = L.spread(side)
        if alone.cell_parts is not None:
            continue
        alike = [(0.05 ** 2, 9.0)] * 8
        noisy = alike[:-1] + [(0.3 ** 2, 9.0)]
        assert L.gated_spreads([side], alike) == [alone]
        assert L.gated_spreads([side], noisy) == [L.spread(side, force=True)]
        opened += 1
    assert opened >= 20, opened


def _noisy_last_size_keeps_alpha(rng, sizes: int, launches: int, reps: int) -> None:
    """Unpaired A/A, launches+launches, the last of `sizes` sizes 6x noisier (cell part sd
    0.3 vs 0.05): false positives at the noisy size and at the quiet ones within the 99.9%
    binomial bound of alpha."""
    sds = np.array([0.05] * (sizes - 1) + [0.3])
    noisy = quiet = 0
    for _ in range(reps):
        ps = np.array([t.p for t in L.compare_cells(_unpaired(rng, sds, n=launches))])
        noisy += int(ps[-1] <= 0.05)
        quiet += int((ps[:-1] <= 0.05).sum())
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy
    assert quiet <= sps.binom.ppf(0.999, (sizes - 1) * reps, 0.05), quiet


@pytest.mark.parametrize(("launches", "sizes"), [(2, 5), (3, 4)])
def test_a_noisy_size_among_few_keeps_alpha_with_two_or_three_launches(launches, sizes):
    # one size 6x noisier, 2+2 (5 sizes) / 3+3 (4 sizes) unpaired A/A. Below FEW_CELLS a
    # side with 2-3 launches was still gated on its own; Bartlett on 1-2 df per size almost
    # never rejected and the noisy size took the pooled part: 11% / 17% false positives
    # there (2000 benchmarks). Now every size keeps its own part below FEW_CELLS whatever
    # the launches (Cochran-Cox on its 1-2 df: conservative, valid)
    _noisy_last_size_keeps_alpha(np.random.default_rng(648 + launches), sizes, launches,
                                 900 // launches)


@pytest.mark.parametrize("launches", [2, 3])
def test_a_noisy_size_among_many_keeps_alpha_with_two_or_three_launches(launches):
    # one size 6x noisier among 8 (cell part sd 0.3 vs 0.05), 2+2 / 3+3 unpaired A/A. From
    # FEW_CELLS sizes on the comparison was gated by Bartlett's test on 1-2 df per size,
    # which mostly stayed shut: the noisy size took the pooled part and had 17% / 13% false
    # positives (300 benchmarks). Both sides thin: every size keeps its own part, as below
    # FEW_CELLS (stats.launch.gated_spreads)
    _noisy_last_size_keeps_alpha(np.random.default_rng(860 + launches), 8, launches, 300)


def test_thin_sides_keep_own_parts_and_a_seven_launch_side_still_gates():
    # 8 alike sizes: 3+3 -> every size its own unmoderated part (w_s with 2 df); 3 vs 7 ->
    # the gate as before (the 7-launch side decides it; nothing forced where it stays shut)
    rng = np.random.default_rng(871)
    sds = np.full(8, 0.05)
    for _ in range(20):
        cells = _unpaired(rng, sds, n=3)
        sides = [dict(enumerate(b for b, _c, _ in cells)),
                 dict(enumerate(c for _b, c, _ in cells))]
        joint = L.gated_spreads(sides)
        assert all(s.cell_parts is not None and set(s.cell_parts) == set(range(8))
                   for s in joint)
        assert all(df == 2.0 for s in joint for _part, df in s.cell_parts.values())
        # a reference of 7 launches (6 df per size) gates as before
        alone = L.spread(sides[0])
        assert L.gated_spreads(sides[:1], [(0.05 ** 2, 6.0)] * 8)[0] in (
            alone, L.spread(sides[0], force=True))
        seven = dict(enumerate(c for _b, c, _ in _unpaired(rng, sds, n=7)))
        both = [sides[0], seven]
        alone = [L.spread(s) for s in both]
        if not any(s.cell_parts for s in alone):
            # the gate stays shut: pooled, but for a size above the others (outlying)
            flagged = L._outlying_cells([L._residuals(s) for s in both])
            got = L.gated_spreads(both)
            assert [g._replace(cell_parts=None) for g in got] == alone
            assert set(got[1].cell_parts or ()) == flagged
            # the 3-launch side: those, and since stop 42 the sizes its own part is mixed
            # into (stats.launch._smaller_mixed: MixedPart), nothing else
            mine = got[0].cell_parts or {}
            assert flagged <= set(mine) and all(mine[k].mixed for k in set(mine) - flagged)


def test_a_noisy_size_among_many_keeps_alpha_paired_over_three_rounds():
    # the paired spread of 3 rounds (2 df per size) was gated by Bartlett's test alone and
    # a size 6x noisier among 8 took the pooled part (26.5% A/A false positives, 200
    # benchmarks); now every size its own part (stats.launch._diff_spread)
    rng = np.random.default_rng(873)
    sds = np.array([0.05] * 7 + [0.3])
    reps, noisy, quiet = 250, 0, 0
    for _ in range(reps):
        cells, rounds = _benchmark(rng, sds, rounds=3)
        ts = L.compare_cells(cells, rounds=rounds)
        assert all(t.pairing == "round" for t in ts)
        ps = np.array([t.p for t in ts])
        noisy += int(ps[-1] <= 0.05)
        quiet += int((ps[:-1] <= 0.05).sum())
    assert noisy <= sps.binom.ppf(0.999, reps, 0.05), noisy
    assert quiet <= sps.binom.ppf(0.999, 7 * reps, 0.05), quiet


def test_alike_sizes_keep_alpha_paired_over_three_rounds_without_a_round_effect():
    # 3 rounds (2 df per size, every size its own part), 8 alike sizes, no round effect
    # left in the differences: a size's own part (tau2 scaled less the pooled term) went
    # negative in 1 - exp(-2/8) = 22% of cells and was clipped to 0, the cell tested on
    # the round part alone (~1/sqrt(8) of its se): 6.3% raw false positives per cell, CI
    # coverage 93.5%. Floored at the size's own tau2 (stats.launch._cell_parts).
    rng = np.random.default_rng(3108)
    sizes, reps = 8, 1000
    hits = covered = 0
    for _ in range(reps):
        side = [np.exp(rng.normal(0.0, 0.05, (3, sizes))) for _p in "ab"]
        cells = [({f"a{r}": side[0][r, s] for r in range(3)},
                  {f"b{r}": side[1][r, s] for r in range(3)}, "lower")
                 for s in range(sizes)]
        ts = L.compare_cells(cells, rounds={f"{p}{r}": r for r in range(3) for p in "ab"})
        assert all(t.pairing == "round" for t in ts)
        hits += sum(t.p <= 0.05 for t in ts)
        covered += sum(t.ci_low <= 1.0 <= t.ci_high for t in ts)
    assert hits <= sps.binom.ppf(0.999, sizes * reps, 0.05), hits / (sizes * reps)
    assert covered >= sps.binom.ppf(0.001, sizes * reps, 0.95), covered / (sizes * reps)


def test_outlying_pairs_flags_a_pair_at_its_level_and_finds_a_noisy_pair():
    # independent sizes, sums sigma^2 chi2_4: an adjacent pair's F test against the rest
    # (8 against 28 df at 9 sizes) is exact, so the first pair is flagged in about
    # PAIR_LEVEL of draws; a pair 6x as noisy in P(F(8, 28) > F_(1 - level) / 6) of them
    rng = np.random.default_rng(31)
    d = np.full(9, 4.0)
    reps = 4000
    hits = 0
    for _ in range(reps):
        ss = rng.chisquare(4.0, 9)
        hit = bool(M.outlying_pairs(ss, d)[0])     # the first size has one pair
        assert hit == (sps.f.sf(ss[:2].sum() / 8.0 / (ss[2:].sum() / 28.0), 8, 28)
                       < M.PAIR_LEVEL)
        hits += hit
    assert sps.binom.ppf(0.001, reps, M.PAIR_LEVEL) <= hits
    assert hits <= sps.binom.ppf(0.999, reps, M.PAIR_LEVEL)
    scale = np.array([6.0, 6.0] + [1.0] * 7)
    found = sum(bool(M.outlying_pairs(rng.chisquare(4.0, 9) * scale, d)[0])
                for _ in range(1000))
    expect = float(sps.f.sf(sps.f.isf(M.PAIR_LEVEL, 8, 28) / 6.0, 8, 28))
    assert abs(found / 1000 - expect) < 4 * math.sqrt(expect * (1 - expect) / 1000)
    assert not M.outlying_pairs([1.0, 9.0], [4.0, 4.0]).any()


# run-12's paired 4 KiB-4 MiB regime (core, /tmp/ttd-data): 11 sizes, the two at each
# end noisy (var(v) of the per-round difference), the 7 between them quiet
_MINORITY = {0: 0.37, 1: 0.19, 9: 0.98, 10: 0.23}


def _minority(rng, rounds=5, quiet=0.03):
    cells = []
    for s in range(11):
        x = rng.normal(0.0, math.sqrt(_MINORITY.get(s, quiet)), rounds)
        cells.append(({f"b{r}": 1.0 for r in range(rounds)},
                      {f"c{r}": math.exp(x[r]) for r in range(rounds)}, "lower"))
    return cells, {f"{p}{r}": r for r in range(rounds) for p in "bc"}


def test_a_kept_noisy_size_is_never_narrower_than_its_own_rounds(monkeypatch):
    # a size the prior keeps as its own (robust) was tested on the round part plus its
    # own part from w_s alone: (w_s - 2 (S-1) ms_cell / S^2) / (1 - 2/S) subtracts a
    # pooled term the noisy sizes make, and in a noisy minority (4 of 11 at 5 rounds)
    # the sum fell below the size's own rounds' variance of d in 46% of kept cells
    # (300 benchmarks); now floored there (stats.launch._cell_parts' floor_own). 100
    # benchmarks (300 before): 381 kept cells, none narrower; without the floor (the own
    # part max(..., 0.0)) 215 of the same 381 are narrower and the first one fails
    monkeypatch.setattr(L, "HEDGE_LEVEL", 0.0)
    rng = np.random.default_rng(12)
    kept, reps = 0, 100
    for _ in range(reps):
        cells, rounds = _minority(rng)
        ts = L.compare_cells(cells, rounds=rounds)
        if len({t.regime for t in ts}) > 1:
            continue            # regimes below 6 sizes: every size its own part
        for i in _MINORITY:
            t = ts[i]
            if t.own_cell and t.components[1][1] == 4:
                kept += 1
                d = np.array([-math.log(cells[i][1][f"c{r}"]) for r in range(5)])
                assert t.se_log ** 2 >= d.var(ddof=1) / 5 * (1 - 1e-9)
    assert kept >= 0.75 * 4 * reps


def test_a_noisy_minority_keeps_alpha_at_five_rounds(monkeypatch):
    # run-12's shape at 5 rounds (4 df per size), no hedge as in a cut regime: Bartlett's
    # gate kept the 11 sizes alike in 8% of benchmarks (the noisy sizes on the pooled
    # part: 25%), and the kept sizes' own parts were narrower than their rounds: 8.0% A/A
    # at the noisy sizes (1500 benchmarks, seed 11); a noisy pair of neighbours now opens
    # the gate (moderate.outlying_pairs) and a kept size is floored at its own rounds:
    # 6.0%. The quiet sizes stay below alpha
    monkeypatch.setattr(L, "HEDGE_LEVEL", 0.0)
    rng = np.random.default_rng(14)
    noisy, quiet, reps = 0, 0, 800
    for _ in range(reps):
        cells, rounds = _minority(rng)
        ps = [t.p for t in L.compare_cells(cells, rounds=rounds)]
        noisy += sum(ps[i] <= 0.05 for i in _MINORITY)
        quiet += sum(p <= 0.05 for i, p in enumerate(ps) if i not in _MINORITY)
    assert noisy / (4 * reps) <= 0.072, noisy / (4 * reps)
    assert quiet / (7 * reps) <= 0.05, quiet / (7 * reps)


def test_quiet_sizes_keep_alpha_where_only_they_share_the_round_effect(monkeypatch):
    # run-12's shape at 10 rounds with a round effect (var 0.04) only the 7 quiet sizes
    # share: the block's round mean holds (7/11) of it and is mostly the noisy sizes'
    # noise, so the quiet sizes' variance was short by 2 (7/11)(4/11) var(e): 7.0% A/A,
    # coverage 93.0% at this seed (6.6-8.4% over seeds 15-19, 600 benchmarks each). The
    # sizes the prior does not keep are now tested as a block of their own
    # (stats.launch._quiet_spreads): 4.1%, 95.9% (3.6-5.1%, mean 4.2%, over those seeds)
    monkeypatch.setattr(L, "HEDGE_LEVEL", 0.0)
    rng = np.random.default_rng(16)
    fp = cover = 0
    reps = 600
    for _ in range(reps):
        e = rng.normal(0.0, 0.2, 10)
        cells = []
        for s in range(11):
            x = rng.normal(0.0, math.sqrt(_MINORITY.get(s, 0.01)), 10)
            x = x + (0.0 if s in _MINORITY else e)
            cells.append(({f"b{r}": 1.0 for r in range(10)},
                          {f"c{r}": math.exp(x[r]) for r in range(10)}, "lower"))
        ts = L.compare_cells(cells, rounds={f"{p}{r}": r for r in range(10) for p in "bc"})
        quiet = [t for i, t in enumerate(ts) if i not in _MINORITY]
        fp += sum(t.p <= 0.05 for t in quiet)
        cover += sum(t.ci_low <= 1.0 <= t.ci_high for t in quiet)
    assert fp / (7 * reps) <= 0.062, fp / (7 * reps)
    assert cover / (7 * reps) >= 0.935, cover / (7 * reps)


def test_trend_p_holds_its_level_under_one_variance_and_finds_a_ramp():
    # 11 sizes at 4 df: one sigma^2 for all, the slope test rejects at about its level;
    # sd growing 0.03 -> 0.15 over the sizes (a 25x ramp in variance), nearly always
    rng = np.random.default_rng(21)
    d = np.full(11, 4.0)
    alike = [M.trend_p(0.01 * rng.chisquare(4, 11) / 4, d) for _ in range(2000)]
    assert 0.03 <= np.mean(np.array(alike) < 0.05) <= 0.07
    sig = np.linspace(0.03, 0.15, 11) ** 2
    ramp = [M.trend_p(sig * rng.chisquare(4, 11) / 4, d) for _ in range(500)]
    assert np.mean(np.array(ramp) < M.TREND_LEVEL) >= 0.9
    assert M.trend_p([0.01, 0.02], [4, 4]) == 1.0


def test_trend_prior_recovers_a_known_trend_and_leaves_each_size_out():
    # log sigma_g^2 on a parabola in g with inverse-chi2 scatter of d0 df about it (the
    # trended prior's model), s_g^2 on 6 df: d0 and the centres come back (median over
    # repetitions, 200 sizes each); each centre is the trend of the OTHER sizes, so a
    # size's own draw does not move it
    rng = np.random.default_rng(5)
    x = np.linspace(0.0, 10.0, 200)
    truth = np.exp(-7.0 + 0.3 * x - 0.01 * x * x)
    d0s, ratio = [], []
    for _ in range(60):
        sig = truth * 12.0 / rng.chisquare(12.0, x.size)
        s2 = sig * rng.chisquare(6.0, x.size) / 6.0
        d0, s0 = M.trend_prior(s2, np.full(x.size, 6.0), x)
        d0s.append(d0)
        ratio.append(np.median(s0 / truth))
    assert np.median(d0s) == pytest.approx(12.0, rel=0.3)
    assert np.median(ratio) == pytest.approx(1.0, abs=0.1)
    # the last of 11 sizes 50x higher: a trend through it would rise ~7x there (its
    # leverage ~0.5); left out, its centre moves only by what d0 makes of the scatter
    x11 = np.arange(11.0)
    s2 = np.exp(-7.0 + 0.3 * x11) * rng.chisquare(6.0, 11) / 6.0
    high = s2.copy()
    high[-1] *= 50.0
    d = np.full(11, 6.0)
    moved = M.trend_prior(high, d, x11)[1][-1] / M.trend_prior(s2, d, x11)[1][-1]
    assert 0.6 <= moved <= 1.5, moved


def _ramp(rng, sizes, rounds):
    """A/A, sizes paired by rounds, the per-round difference's sd 0.03 -> 0.15 linearly
    over the sizes, no round effect (review R13's ramp): (cells, rounds, sds)."""
    sds = np.linspace(0.03, 0.15, sizes)
    cells = []
    for sd in sds:
        x = rng.normal(0.0, sd, rounds)
        cells.append(({f"b{r}": 1.0 for r in range(rounds)},
                      {f"c{r}": math.exp(v) for r, v in enumerate(x)}, "lower"))
    return cells, {f"{p}{r}": r for r in range(rounds) for p in "bc"}, sds


def test_spreads_that_grow_with_size_keep_alpha_at_the_noisy_end():
    # 11 sizes x 5 rounds: Bartlett's gate stayed shut in 27% of such benchmarks and the
    # prior shrank the noisiest sizes toward the quiet ones: the 3 noisiest at 7.2% A/A
    # (coverage 92.8%, 600 benchmarks at this seed; 8.0-9.3% at 1000 at the bench's seed
    # 11). A slope of log w over the sizes now opens the gate and is what each size is
    # moderated toward (moderate.trend_p, trend_prior; stats.launch._trend_x): 4.4%,
    # 95.6%. The quiet end stays at or below alpha
    rng = np.random.default_rng(31)
    reps = 600
    sig = np.zeros(11)
    cover = np.zeros(11)
    for _ in range(reps):
        cells, rounds, _sds = _ramp(rng, 11, 5)
        ts = L.compare_cells(cells, rounds=rounds)
        sig += [t.p <= 0.05 for t in ts]
        cover += [t.ci_low <= 1.0 <= t.ci_high for t in ts]
    top = sig[-3:].sum() / (3 * reps)
    assert top <= 0.06, sig / reps
    assert cover[-3:].sum() / (3 * reps) >= 0.94, cover / reps
    assert sig.max() / reps <= 0.075, sig / reps
    assert sig[:3].sum() / (3 * reps) <= 0.05, sig / reps
