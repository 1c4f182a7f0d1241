"""The comparison's speed-ups change no value (bench/bench_stats_speed.py measures their
gain): each fast path equals the code it replaces bit for bit, and the per-content caches
(stats.launch._centred, _residuals, _cut_ps; stats.moderate.robust) give what a fresh
computation gives and cannot be changed through what they hand out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import polygamma

from mpibench.stats import launch as L
from mpibench.stats import moderate as M
from mpibench.stats import preempted as P


def _grid() -> np.ndarray:
    rng = np.random.default_rng(11)
    return np.concatenate([rng.uniform(1e-3, 50.0, 4000), rng.lognormal(0.0, 4.0, 4000),
                           [0.5, 1.0, 1.5, 2.0, 1e-6, 1e6]])


def test_trigamma_and_tetragamma_are_polygammas_values_bit_for_bit():
    x = _grid()
    assert np.array_equal(M._trigamma(x), polygamma(1, x))
    assert np.array_equal(M._tetragamma(x), polygamma(2, x))
    assert all(float(M._trigamma(v)) == float(polygamma(1, v)) for v in x[:200])


def test_trigamma_inverse_inverts_trigamma():
    for y in (0.3, 1.0, 2.5, 40.0):
        assert math.isclose(M._trigamma_inverse(float(M._trigamma(y))), y, rel_tol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 31, 200])
def test_mean_is_numpys_mean_bit_for_bit(n):
    rng = np.random.default_rng(n)
    for _ in range(50):
        a = rng.normal(rng.normal(0, 10), rng.lognormal(0, 3), n)
        assert L._mean(a) == a.mean()
        ints = rng.integers(0, 40, n)
        assert L._mean(ints) == ints.mean()


def _old_cc_tail(tstats, components):
    """_cc_tail as it was before its fast path: _t_isf, with its domain checks, each step."""
    x = np.abs(np.asarray(tstats, dtype=float))
    tot = sum(v for v, _ in components)
    comps = [(v / tot, d) for v, d in components if v > 0]
    dfs = [d for _, d in comps]
    ends = L._t_sf(x, np.reshape([max(dfs), min(dfs)], (2,) + (1,) * x.ndim))
    with np.errstate(divide="ignore"):
        lo, hi = np.log(np.maximum(ends, 1e-300))
    ws = [w for w, _ in comps]
    col = np.reshape(dfs, (len(dfs),) + (1,) * x.ndim)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        rows = L._t_isf(np.exp(mid), col)
        c = sum(w * row for w, row in zip(ws, rows, strict=True))
        above = c > x
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return np.where(x == 0, 0.5, np.exp(0.5 * (lo + hi)))


@pytest.mark.parametrize("comps", [((0.02, 1.0), (0.01, 4.0)), ((0.5, 2.0), (0.1, 9.0),
                                                                 (0.3, 1.0)),
                                   ((1e-4, 1.0), (3.0, 40.0))])
def test_the_cochran_cox_tail_is_the_old_bisection_bit_for_bit(comps):
    t = np.concatenate([np.linspace(0.0, 12.0, 97), [40.0, 1e3]])
    assert not L._use_welch(comps)
    assert np.array_equal(L._cc_tail(t, comps), _old_cc_tail(t, comps))


def _clear() -> None:
    L._centred_cached.cache_clear()
    L._residuals_cached.cache_clear()
    L._cut_ps_cached.cache_clear()
    M._ROBUST.clear()


def test_cached_comparisons_equal_fresh_ones():
    """The same paired and cut-short benchmarks compared with every cache cleared before
    each call, and again with the caches warm: equal results, field for field."""
    rng = np.random.default_rng(5)
    benches = [P.few_clean_bench(rng, 5, 1.0, (1.0, 0.2), 0.3) for _ in range(12)]
    fresh = []
    for b in benches:
        _clear()
        fresh.append(L.compare_cells(b.cells, rounds=b.rounds, sizes=list(range(10)),
                                     cut=b.cut))
    for _ in range(2):
        warm = [L.compare_cells(b.cells, rounds=b.rounds, sizes=list(range(10)), cut=b.cut)
                for b in benches]
        assert warm == fresh
    assert L._centred_cached.cache_info().hits > 0 and L._cut_ps_cached.cache_info().hits > 0


def test_what_the_caches_hand_out_cannot_change_them():
    side = {s: {f"l{k}": math.exp(0.1 * s + 0.01 * k * k + 0.003 * s * k) for k in range(5)}
            for s in range(8)}
    keys, r, obs = L._centred(side)
    with pytest.raises(ValueError):
        r[0, 0] = 1.0
    with pytest.raises(ValueError):
        obs[0, 0] = False
    keys.append("x")                     # a list of the caller's own
    assert L._centred(side)[0] == list(range(8))
    rs = L._residuals(side)
    with pytest.raises(ValueError):
        rs.res[0, 0] = 1.0
    w = np.array([1.0, 1.1, 0.9, 5.0, 1.05, 0.95, 1.0, 1.2])
    d = np.full(8, 4.0)
    d0, s0, own = M.robust(w, d)
    own[:] = ~own
    assert not np.array_equal(M.robust(w, d)[2], own)
    x = np.arange(8.0)                  # the trended prior: one s0^2 per size, an array
    s0 = M.robust(w, d, x=x)[1]
    want = s0.copy()
    s0[:] = -1.0
    assert np.array_equal(M.robust(w, d, x=x)[1], want)


def test_a_side_whose_values_cannot_be_hashed_is_computed_uncached():
    """A value that is no number (a 0-d array) has no cache key; the side is still
    centred, as it was before the caches."""
    side = {s: {f"l{k}": np.array(math.exp(0.1 * s + 0.02 * k * (k - s))) for k in range(4)}
            for s in range(3)}
    assert L._content(side) is None
    plain = {s: {k: float(v) for k, v in by.items()} for s, by in side.items()}
    got, want = L._centred(side), L._centred(plain)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_equal_keys_of_another_type_get_their_own_keys_back():
    """1 and 1.0 (and True) are one cache key; each caller still gets its own cells' keys
    (a Spread's cell parts, the report's rows are keyed by them)."""
    rng = np.random.default_rng(3)
    ints = {s: {f"l{k}": math.exp(rng.normal(0.1 * s, 0.05 * (1 + (s == 2) * 6)))
                for k in range(6)} for s in range(1, 9)}
    floats = {float(s): by for s, by in ints.items()}
    _clear()
    for side, kind in ((ints, int), (floats, float), (ints, int)):
        assert [type(k) for k in L._centred(side)[0]] == [kind] * 8
        assert [type(k) for k in L._residuals(side).keys] == [kind] * 8
        parts = L.spread(side, force=True).cell_parts
        assert parts and all(type(k) is kind for k in parts)
    assert L._centred_cached.cache_info().hits >= 2


def test_launch_ids_equal_across_types_are_not_one_cache_entry():
    """Launch ids 1 and True are equal but sort apart (by str: _centred's row order), so
    a side keyed by True after one keyed by 1 is centred afresh: its rows, and so every
    figure to the last bit, are what a cold computation gives."""
    rng = np.random.default_rng(8)
    vals = {s: [math.exp(rng.normal(0.1 * s, 0.1)) for _ in range(12)] for s in range(6)}
    ones = {s: dict(zip(range(1, 13), v, strict=True)) for s, v in vals.items()}
    trues = {s: {(True if k == 1 else k): x for k, x in by.items()} for s, by in ones.items()}
    _clear()
    cold_r = L._centred(trues)[1].copy()
    cold = L.spread(trues, force=True)
    _clear()
    L.spread(ones, force=True)
    assert np.array_equal(L._centred(trues)[1], cold_r)
    assert L.spread(trues, force=True) == cold


def test_a_cell_with_a_launch_value_far_below_the_others_has_saturated_ci_ends():
    """A launch value of 1e-300 beside ordinary ones (a log difference of ~690) put a CI
    end beyond the float range: compare_cells raised OverflowError (review R8); the ends
    now saturate at 0 and inf, as a sequential look's extreme levels already did."""
    base = {"a1": 1.0, "a2": 1.1, "a3": 0.9}
    cand = {"b1": 1e-300, "b2": 1.05, "b3": 0.95}
    (t,) = L.compare_cells([(base, cand, "lower")])
    assert t.tested and t.ci_high == math.inf and 0 <= t.ci_low < 1
