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
- `adjust_table`: THE family of one comparison table (cells, geomean rows, verdicts),
  adjusted by a graph of weighted Bonferroni tests (`graph_units`) with a benchmark's
  pooled cells one unit (`closed_mean_p`). report/judge.py prints it and the sequential
  rule of `repeats = "decide"` (stats.sequential) decides with it, at its look's level:
  one function, so a cell the rule calls decided is the cell the table prints decided.
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
from typing import Any, NamedTuple

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
    p = np.clip(np.asarray(pvalues, dtype=float), 1e-300, 1.0)
    s = p.size if size is None else int(size)
    if s <= 1:
        return p.copy()
    return _max_p_at(p, _log_miss(p, rho), s)


def _log_miss(p: np.ndarray, rho: float) -> np.ndarray:
    """log P(|Z_t| < z_t | G) on the grid _G (rows) per p (columns, clipped as
    equicorrelated_max_p clips them): what its tail over a block of any size raises to
    that size, so closed_mean_p's sizes 2..S share one evaluation."""
    from scipy.special import ndtr, ndtri

    r = min(max(float(rho), 0.0), RHO_MAX)
    z = -ndtri(p / 2.0)                                  # |z| with P(|Z| >= z) = p
    a, b = np.sqrt(r), np.sqrt(1.0 - r)
    ag = a * _G[:, None]
    # per coordinate, P(|Z_t| >= z | G): each t independent given G
    q = ndtr(-(z[None, :] - ag) / b) + ndtr((-z[None, :] - ag) / b)
    return np.log1p(-np.minimum(q, 1.0 - 1e-16))


def _max_p_at(p: np.ndarray, log_miss: np.ndarray, s: int) -> np.ndarray:
    """equicorrelated_max_p over a block of s >= 2 tests, from _log_miss."""
    tail = (_W[:, None] * -np.expm1(s * log_miss)).sum(axis=0)
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
    if pvalues is not None:
        p = np.clip(np.asarray(pvalues, dtype=float), 1e-300, 1.0)
        miss = _log_miss(p, rho) if b > 1 else None
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
            pm = p.copy() if k <= 1 else _max_p_at(p, miss, k)   # equicorrelated_max_p's
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


# ---------------------------------------------------------------------------------------
# The family of one table: what report/judge.py prints and stats.sequential decides with

# a benchmark's pooled cells: closed test whose local tests are the mean-gain t test (at
# MEAN_SHARE of the unit's level) and maxT (the rest); "maxt": maxT only (docs/statistics.md)
BLOCK_TEST = "both"
MEAN_SHARE = 0.9
# the verdicts' initial share of alpha (the rest is the rows'); see table_graph
VERDICT_SHARE = 0.5
# the share a row unit passes to the other candidates' verdicts (the rest to its own
# candidate's other rows): a graph needs an edge out of every unit to reach everyone
_EPS = 1e-4


class Hypothesis(NamedTuple):
    """One p the table shows. kind: "cell", "geomean" (a benchmark's geomean row) or
    "verdict" (a candidate's overall test); test: its stats.launch.LaunchTest (untested:
    not in the family); candidate: whose column it is; block: a cell's pooled block (the
    cells of one benchmark and candidate tested together by compare_cells; None: tested on
    its own launches); rejected: decided significant at an earlier look of the sequential
    rule, which keeps it (its share of alpha passes on as for any rejected hypothesis)."""
    kind: str
    test: Any
    candidate: Hashable
    block: Hashable | None = None
    rejected: bool = False


def adjust_table(hyps: Sequence[Hypothesis]) -> tuple[list[float | None], float]:
    """(adjusted p per hypothesis, None where untested; the share of alpha each verdict
    holds at the start, for planning at the verdict's level). One family over every p the
    table shows, by a graph of weighted Bonferroni tests (graph_units): the verdicts hold
    VERDICT_SHARE of alpha between them, the rows (cells and geomean rows) the rest, one
    equal share per row; a rejected verdict passes its share to its candidate's rows, a
    fully rejected row unit to the candidate's other rows. A benchmark's pooled cells are
    one unit holding their rows' shares (its cells with their own parts another:
    _cell_units); their p are the closed test's (closed_mean_p:
    every subset's mean gain at MEAN_SHARE of the level, maxT at the rest). A hypothesis
    is rejected at level a exactly when its adjusted p <= a (the sequential rule uses its
    look's level, the report alpha). A `rejected` hypothesis gets adjusted p 0."""
    tested = [i for i, h in enumerate(hyps)
              if h.test is not None and h.test.tested and h.test.p is not None]
    cells = [i for i in tested if hyps[i].kind == "cell"]
    geos = [i for i in tested if hyps[i].kind == "geomean"]
    verdicts = [i for i in tested if hyps[i].kind == "verdict"]
    n_rows = len(cells) + len(geos)
    weighted = bool(n_rows and verdicts)
    row_w = (1.0 - VERDICT_SHARE) / n_rows if weighted else 1.0 / max(1, n_rows)
    cell_p, cell_units = _cell_units([hyps[i] for i in cells])
    ps = cell_p + [hyps[i].test.p for i in geos] + [hyps[i].test.p for i in verdicts]
    units = (cell_units + [("geomean", i, hyps[i].candidate) for i in geos]
             + [("verdict", hyps[i].candidate) for i in verdicts])
    order = cells + geos + verdicts
    ps = [0.0 if hyps[i].rejected else p for i, p in zip(order, ps, strict=True)]
    rows_of: dict[Hashable, dict[tuple, float]] = {}      # candidate -> {row unit: rows}
    for u in units:
        if u[0] != "verdict":
            d = rows_of.setdefault(u[-1], {})
            d[u] = d.get(u, 0.0) + 1.0
    cands = list(dict.fromkeys(hyps[i].candidate for i in verdicts))
    adj = graph_units(ps, units, *table_graph(rows_of, cands, row_w))
    out: list[float | None] = [None] * len(hyps)
    for i, a in zip(order, adj, strict=True):
        out[i] = float(a)
    family = VERDICT_SHARE / len(cands) if weighted else 1.0 / max(1, len(order))
    return out, family


def table_graph(rows_of: Mapping[Hashable, Mapping[tuple, float]], verdicts: list,
                row_w: float) -> tuple[dict, dict]:
    """(initial weights, edges) of the table's multiplicity graph: every row unit holds
    row_w per row; the verdicts VERDICT_SHARE between them (all of alpha when there are
    no rows). A verdict passes its share to its candidate's row units in proportion to
    their rows; a row unit to its candidate's other row units, likewise (and a sliver to
    the other verdicts); with nowhere left to go, to the other verdicts."""
    weights: dict = {}
    edges: dict = {}
    has_rows = any(rows_of.values())
    for units in rows_of.values():
        for u, n in units.items():
            weights[u] = row_w * n
    for c in verdicts:
        weights[("verdict", c)] = (VERDICT_SHARE if has_rows else 1.0) / len(verdicts)

    def spread(targets: Mapping, share: float) -> dict:
        tot = sum(targets.values())
        return {u: share * n / tot for u, n in targets.items()} if tot else {}

    for c in verdicts:
        own = rows_of.get(c, {})
        others = {("verdict", o): 1.0 for o in verdicts if o != c}
        if own:
            edges[("verdict", c)] = {**spread(own, 1.0 - _EPS if others else 1.0),
                                     **spread(others, _EPS)}
        else:
            edges[("verdict", c)] = spread(others, 1.0)
    for c, units in rows_of.items():
        others = {("verdict", o): 1.0 for o in verdicts if o != c}
        for u in units:
            rest = {v: n for v, n in units.items() if v != u}
            if rest:
                edges[u] = {**spread(rest, 1.0 - _EPS if others else 1.0),
                            **spread(others, _EPS)}
            else:
                edges[u] = spread(others, 1.0)
    return weights, edges


def _cell_units(cells: Sequence[Hypothesis]) -> tuple[list[float], list[tuple]]:
    """Per tested cell: (its p for the family, its unit). The pooled cells of one block
    (benchmark and candidate) are one unit (two where some of its cells have their own
    cell parts and some the pooled one: those with their own tested by maxT, a unit of
    their own); each cell's p is the closed test's
    (closed_mean_p: every subset of the block tested by the t test of its mean gain at
    MEAN_SHARE of the level and by maxT at the rest, maxT at the smallest correlation any
    cell has with the others, the conservative end). A cell tested on its own launches is
    a unit of its own with its raw p. A unit's last element is its candidate."""
    blocks: dict[Hashable, list[int]] = {}
    for i, h in enumerate(cells):
        t = h.test
        if h.block is not None and t.pooled and t.se_log:
            # a block's cells with their own parts (own_cell) and those with the pooled one
            # are two units: maxT on the own p, the closed mean-gain test on the rest (one
            # outlying size no longer costs its alike neighbours the mean-gain step)
            # (and each round regime of a paired block, stats.launch._regimes, its own:
            # regimes do not share a round part)
            blocks.setdefault((h.block, h.candidate, bool(t.own_cell), t.regime),
                              []).append(i)
    ps = [float(h.test.p) for h in cells]
    units: list[tuple] = [("cell", i, h.candidate) for i, h in enumerate(cells)]
    for b, (key, idx) in enumerate(blocks.items()):
        if len(idx) < 2:
            continue
        ts = [cells[i].test for i in idx]
        rho = min(t.shared_var / t.se_log ** 2 for t in ts)
        # the mean-gain closed test needs one pooled cell part for every cell; a block
        # whose sizes keep their own parts (own_cell) is tested by maxT on the own p
        if BLOCK_TEST != "maxt" and not any(t.own_cell for t in ts) \
                and all(t.parts and t.parts == ts[0].parts for t in ts):
            adj = closed_mean_p([t.diff_log for t in ts], ts[0].mean_components,
                                [t.p for t in ts] if BLOCK_TEST == "both" else None, rho,
                                MEAN_SHARE)
        else:
            adj = equicorrelated_max_p([t.p for t in ts], rho)
        for i, pa in zip(idx, adj, strict=True):
            ps[i] = float(pa)
            units[i] = ("block", b, key[1])
    return ps, units


__all__ = ["equicorrelated_max_p", "holm_units", "graph_units", "RHO_MAX", "Hypothesis",
           "adjust_table", "table_graph", "VERDICT_SHARE", "MEAN_SHARE", "BLOCK_TEST"]
