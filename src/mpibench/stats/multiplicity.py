"""Multiplicity over one table: weighted Holm over units, maxT inside a benchmark's cells.

A comparison table shows many p-values (every cell, every geomean row, every candidate's
verdict); one family-wise error rate covers them all (docs/statistics.md). Plain Holm
treats them as unrelated and pays for every cell. But the cells of one benchmark are tested
under one hierarchical model (stats.launch.compare_cells): their gains share the launch
effect u (one launch measures every size), so their t statistics are positively correlated
and far fewer than S "independent" chances to be wrong. Two pieces use that:

- `equicorrelated_max_p`: the single-step maxT adjusted p of each test in a block whose
  statistics are equicorrelated with rho (the shared launch part of the gains' variance
  over their whole variance, from the pooled model): P(max over the block of |Z| >= z_s)
  under the block's complete null, with each cell's own p turned into z (a Gaussian copula
  on the marginal p-values the table already shows). rho = 0 gives Sidak's 1 - (1 - p)^S,
  valid for any correlation of normal statistics; rho -> 1 gives p itself.
- `holm_units`: Holm's weighted step-down where the weight belongs to a unit (a block of
  cells, a geomean row, a verdict) and leaves the remaining total only when every
  hypothesis of the unit is rejected. It is the closed test whose local test of an
  intersection is a weighted Bonferroni over the units it meets, a unit tested by its
  smallest (block-adjusted) p: a unit meeting I rejects with probability at most
  alpha w_unit / W_I, because the maximum over the true nulls of a block is at most the
  maximum over the whole block. With one hypothesis per unit it is stats.holm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

# quadrature for the shared normal factor G of an equicorrelated block: a fine uniform grid
# (with rho near 1 the integrand is a near step in G, which Gauss-Hermite handles badly)
_G = np.linspace(-9.0, 9.0, 1801)
_W = np.exp(-0.5 * _G * _G)
_W /= _W.sum()
# rho is capped below 1 (the integrand's width is sqrt(1 - rho))
RHO_MAX = 0.995


def equicorrelated_max_p(pvalues: Sequence[float], rho: float,
                         size: int | None = None) -> np.ndarray:
    """Single-step maxT adjusted p-values of two-sided tests whose statistics are
    standard normal with common correlation rho >= 0 (negative rho is taken as 0, which
    is conservative: Sidak's inequality). p_adj_s = P(max_t |Z_t| >= z_s), z_s the normal
    quantile of p_s; p <= p_adj <= min(1, S p). size: the block's S when it is not the
    number of p-values given (each p's tail over a block of that many)."""
    from scipy.special import ndtr, ndtri

    p = np.clip(np.asarray(pvalues, dtype=float), 1e-300, 1.0)
    s = p.size if size is None else int(size)
    if s <= 1:
        return p.copy()
    r = min(max(float(rho), 0.0), RHO_MAX)
    z = -ndtri(p / 2.0)                                  # |z| with P(|Z| >= z) = p
    a, b = np.sqrt(r), np.sqrt(1.0 - r)
    ag = a * _G[:, None]
    # per coordinate, P(|Z_t| >= z | G): each t independent given G
    q = ndtr(-(z[None, :] - ag) / b) + ndtr((-z[None, :] - ag) / b)
    tail = (_W[:, None] * -np.expm1(s * np.log1p(-np.minimum(q, 1.0 - 1e-16)))).sum(axis=0)
    return np.minimum(np.minimum(1.0, s * p), np.maximum(tail, p))


def closed_mean_p(diffs: Sequence[float], comps_k: Callable[[int], Sequence[tuple[float, float]]],
                  pvalues: Sequence[float] | None = None, rho: float = 0.0,
                  mean_share: float = 0.5) -> np.ndarray:
    """Per hypothesis of a block (the cells of one benchmark), a p-value for it under the
    closed test whose local test of an intersection K (those cells all null) is the t test
    of the mean gain over K: p_s = max over K containing s of that test's p. comps_k(k):
    the variance components (variance, df) of a mean over k cells (the pooled model:
    stats.launch.LaunchTest.mean_components), so the test uses the cells' shared launch
    effect as it is; diffs: the cells' log gains. The maximum over K of size k is bounded
    by testing the smallest |sum| any such K can have (s plus the k - 1 lowest, or
    highest, others; 0 when they straddle 0), so p_s is at least the exact closed p
    (conservative). With pvalues (the cells' own p), each local test is instead the
    Bonferroni pair of the mean test and the maxT test over K at half the level each
    (equicorrelated_max_p at rho), which keeps power for an effect in one cell."""
    from mpibench.stats.launch import two_sided_p

    x = np.asarray(diffs, dtype=float)
    b = x.size
    out = np.zeros(b)
    order = np.argsort(x, kind="stable")
    for k in range(1, b + 1):
        comps = tuple(comps_k(k))
        se = math.sqrt(sum(v for v, _ in comps))
        m = np.zeros(b)
        for s in range(b):
            others = x[order[order != s]]
            lo = x[s] + others[:k - 1].sum()
            hi = x[s] + others[others.size - (k - 1):].sum() if k > 1 else x[s]
            m[s] = lo if lo > 0 else (-hi if hi < 0 else 0.0)
        pk = two_sided_p(m / k / se, comps) if se > 0 else np.where(m > 0, 0.0, 1.0)
        if pvalues is not None:
            pm = equicorrelated_max_p(pvalues, rho, size=k)
            pk = np.minimum(1.0, np.minimum(pk / mean_share, pm / (1.0 - mean_share)))
        out = np.maximum(out, pk)
    return out


def holm_units(pvalues: Sequence[float | None], weights: Sequence[float],
               units: Sequence[Hashable]) -> np.ndarray:
    """Holm's weighted step-down with the weight held by units: hypotheses are taken in
    order of p / w(unit); the k-th is rejected when p <= alpha w(unit) / W_k, W_k the total
    weight of the units that still have a hypothesis at or after step k. Adjusted p-values
    (same order; None/NaN stay NaN and are not in the family). weights: the unit's weight,
    repeated on each of its hypotheses (the same value within a unit)."""
    p = np.array([np.nan if v is None else float(v) for v in pvalues], dtype=float)
    w = np.asarray(weights, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = [i for i in range(p.size) if not np.isnan(p[i])]
    if not idx:
        return out
    if w.shape != p.shape or any(w[i] <= 0 for i in idx):
        raise ValueError("holm_units: one positive weight per p-value")
    unit_w: dict[Hashable, float] = {}
    for i in idx:
        if unit_w.setdefault(units[i], w[i]) != w[i]:
            raise ValueError("holm_units: a unit's hypotheses carry different weights")
    order = sorted(idx, key=lambda i: (p[i] / w[i], i))
    left: dict[Hashable, int] = {}
    for i in idx:
        left[units[i]] = left.get(units[i], 0) + 1
    total = sum(unit_w.values())
    running = 0.0
    for i in order:
        running = max(running, min(1.0, p[i] / w[i] * total))
        out[i] = running
        left[units[i]] -= 1
        if left[units[i]] == 0:
            total -= unit_w[units[i]]
    return out


def graph_units(pvalues: Sequence[float | None], units: Sequence[Hashable],
                weights: Mapping[Hashable, float],
                edges: Mapping[Hashable, Mapping[Hashable, float]]) -> np.ndarray:
    """Adjusted p-values of the graphical weighted Bonferroni procedure (Bretz, Maurer,
    Brannath and Posch 2009) over units: weights (summing to <= 1) is each unit's initial
    share of alpha, edges[u][v] the fraction of u's share that passes to v once every
    hypothesis of u is rejected (each unit's outgoing fractions sum to <= 1). A unit is
    tested by each of its hypotheses' p against alpha w_u (a block's p already adjusted
    within the block). It is a closed test (its local tests are weighted Bonferroni over
    the units an intersection meets, with the weights the graph gives when the other
    units are removed), so it controls the family-wise error at alpha for any graph;
    Holm is the graph where every unit passes its share to the others in proportion."""
    p = np.array([np.nan if v is None else float(v) for v in pvalues], dtype=float)
    out = np.full(p.shape, np.nan)
    idx = [i for i in range(p.size) if not np.isnan(p[i])]
    if not idx:
        return out
    live = list(dict.fromkeys(units[i] for i in idx))
    w = {u: float(weights.get(u, 0.0)) for u in live}
    g = {u: {v: float(edges.get(u, {}).get(v, 0.0)) for v in live if v != u} for u in live}
    left = {u: 0 for u in live}
    for i in idx:
        left[units[i]] += 1
    todo = set(idx)
    running = 0.0
    while todo:
        def ratio(i: int) -> float:
            wu = w[units[i]]
            return p[i] / wu if wu > 0 else math.inf
        i = min(todo, key=lambda j: (ratio(j), j))
        running = max(running, min(1.0, ratio(i)))
        out[i] = running
        todo.discard(i)
        u = units[i]
        left[u] -= 1
        if left[u]:
            continue
        # u leaves: its share goes along its edges, the graph is rewired around it
        live.remove(u)
        for v in live:
            w[v] += w[u] * g[u].get(v, 0.0)
        new = {}
        for v in live:
            new[v] = {}
            for k in live:
                if k == v:
                    continue
                den = 1.0 - g[v].get(u, 0.0) * g[u].get(v, 0.0)
                num = g[v].get(k, 0.0) + g[v].get(u, 0.0) * g[u].get(k, 0.0)
                new[v][k] = num / den if den > 1e-15 else 0.0
        g = new
        del w[u]
    return out


__all__ = ["equicorrelated_max_p", "holm_units", "graph_units", "RHO_MAX"]
