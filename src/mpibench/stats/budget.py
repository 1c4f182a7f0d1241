"""The within-launch budget: how long the core samples each cell in one launch, chosen from
the measured variance components so that the total time to a decision is smallest.

Model (one cell, one side; logs of the launch statistic, see stats/launch.py):

    var(one launch's statistic) = sigma_L^2 + sigma_w^2 / n_eff

sigma_L is the between-launch spread no amount of sampling inside a launch removes;
sigma_w^2 / n_eff the within-launch error of the statistic after n samples (n_eff: n over
the autocorrelation time, and the median's efficiency). We write the within part as
B / n with B = se_w^2 * n measured from the core's own CI of a launch (se_w = the CI's
half-width in logs / 1.96), which carries the autocorrelation and the statistic's
efficiency without modelling them. A launch costs c0 + sum over its cells of n_s * c1_s
seconds: c0 the launch's fixed part (mpirun, MPI_Init, teardown), c1_s a sample of cell s.

For k launches per side, cost k (c0 + n c1) and variance (sigma_L^2 + B/n) / k. At a fixed
variance of the mean, the cost (sigma_L^2 + B/n)(c0 + n c1) is smallest at

    n* = sqrt(B c0 / (sigma_L^2 c1))          (optimum_samples)

(two-stage sampling's classic allocation): samples are worth buying while a launch's fixed
cost is large next to them and the within-launch error is large next to sigma_L.

The core is told its budget as `target` (the CI half-width, in percent, at which it stops a
cell: se_w ~ target / 1.96, not before min_samples) and `max_time` (seconds per cell, which
ends a cell whatever its count). `plan` searches both knobs. What a decision needs is what
compare's test sees, and the plan meets its worst cell. Its hierarchical model pools the
between-launch variance over a benchmark's sizes where they are alike, so those cells get
the same standard error, from the mean over the sizes of sigma_L^2 + B/n
(pooled_launch_var; it rests on all the sizes' launches). But from 3 sizes to below
stats.launch.FEW_CELLS every size keeps its own cell part at any launch count, at most
THIN_LAUNCHES launches per side every size (of 3 or more) keeps its own, and beyond them
from FEW_CELLS on the sizes keep theirs where the one gate (stats.launch.gated_spreads)
opens; the plan decides which from the launches it plans, not the pilot's: there a cell's
standard error is its own sigma_L^2 + B/n, and the plan takes the noisiest size's
(own_launch_var, own_part_pools; plan_from_rows asks the gate, gated_pools). Where the
gate stays shut a size compare flags above the others keeps its own part; the plan meets
the larger of its own and the pooled variance (flagged_cells, from a pilot beyond
THIN_LAUNCHES). A benchmark compare's unpaired test splits into launch regimes
(stats.launch._unpaired_regimes) is planned one pool per regime (unpaired_regimes,
CellCost.pool), as compare tests each regime as a block of its own. That is what
the launches per side are planned on (stats.launch.launches_needed, noncentral t, at the
family's first Holm level for a difference, or the TOST approximation for equivalence
within a margin; the launches' own df, which is a size's own part's df, and conservative
next to the pooled model's).

The between-launch part rests on few launches (the launch effect a benchmark's sizes share
has the launches' df only), so the plan takes sigma_L^2 at its one-sided 80% upper
confidence bound over those df (between_margin: x4.5 at 2 launches per side, x1.4 at 10).

Interleaved campaigns are tested paired by round (stats.launch.compare_cells, when every
cell has MIN_PAIRS pairs): what a decision needs is then the variance of one round's
difference d = log cand - log base, split over a benchmark's sizes the same way
(PairedSpread, from paired_from_rows; per round regime where compare's paired spread
splits the sizes into regimes that do not share the round effect, stats.launch._diff_spread,
each regime a block of its own, and beyond THIN_LAUNCHES rounds a noisy regime's quiet
sizes on the block compare tests them on, stats.launch._quiet_spreads, PairedSpread.quiet):
the round differential the sizes share (ms_launch/S,
pairs - 1 df) and the cell part, pooled (ms_cell (S-1)/S, (pairs - 1)(S - 1) df) or, where
compare's paired test gives the sizes their own parts (Spread.cell_parts: below FEW_CELLS
sizes always, at most THIN_LAUNCHES rounds always, beyond them from FEW_CELLS where the
gate opens; the plan decides which from the rounds it plans), each size's own part at the df the
test will have at k rounds (stats.launch.future_df: d0 + k - 1); the rounds are the most
any cell needs (_paired_cells). Load phases and
the machine's modes that hit both launches of a round are not in it. The within-launch part
of d (se_b^2 + se_c^2 of the pilot launches, each regime's the mean over its own cells) is
replaced by the one at each (target, max-time) the plan tries (the same regime's mean), and each component is taken at its own one-sided 80% upper
confidence bound over its df. Rounds are planned by the noncentral t of that test (its two
components scaled to k rounds, Cochran-Cox critical value, as
stats.launch.launches_needed_for), at least MIN_PAIRS.

What a plan is for: equivalence within ±margin at gain 1 (campaigns' `budget = "auto"`),
or with every_cell (the time-to-decision bench's --to-budget, since stop 41) every cell
decided whatever its true gain: at the last look (c_sig + c_eq) se <= log(1 + margin),
c_sig the two-sided critical value at the least level the table's family tests a cell at
(cell_level), c_eq TOST's one-sided one at alpha (decides_any_gain; about 3.5x the rounds).

The campaign caps launches per side (its `repeats`, or the rule's maximum). When a pair
decides within the cap, the pair with the least launch time to the decision wins. When none
does, the pair with the least launch time to the decision beyond the cap (the launches
needed scale with the variance, so that is the least variance x seconds per launch: the
most precision per second of launches). Pure
arithmetic: estimates come from a store through `components_from_rows` (rows read by
store.report_queries.launch_cost_rows).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from mpibench.stats import launch as launch_stats
from mpibench.stats import preempted
from mpibench.units import fmt_size

Z95 = 1.959963984540054
CORE_MIN_SAMPLES = 20        # core/args.c: min_samples
CORE_DEFAULT_TARGET = 5.0    # core/args.c: --target (percent)
CORE_DEFAULT_MAX_TIME = 0.05  # core/args.c: --max-time (seconds per cell)
# budget = "auto"'s pilot (campaign/budget.py, a core group's first two rounds): what the
# plan reads off it is each cell's median (the between-launch spread, the round
# differences), its CI (B = se^2 n), its seconds per sample and the launch's fixed seconds;
# none of them needs a narrow CI, so a cell stops at --min-samples (20) with its CI accepted
# within PILOT_TARGET (still marked approximate). --max-time PILOT_MAX_TIME: the shortest of
# the MAX_TIMES the plan chooses among, the one every plan the time-to-decision bench made
# since the B guard chose (its spread is the launches'), so the candidate the later launches
# run at is the one measured; the longer ones are extrapolated (B scaled to their samples, the seconds
# per sample of the short cells, which carry their settling: dearer, not cheaper, than
# they are). 20 samples fit where a sample takes up to about 0.1 ms (PingPong over shared
# memory here: up to 256 KiB); 512 KiB to 4 MiB stop on --max-time with 15 to 5 (the
# core's floor), as in the budgeted launches. One preempted sample among 5 (a CI of [min,
# max]) no longer sets the plan's B: guarded_b. At 0.02 s the pilot's cells cost 0.085-
# 0.089 s a launch against 0.025-0.048 s in the budgeted launches (settling up to 5 ms and
# 20 samples at each size of 512 KiB and up)
PILOT_TARGET = 100.0         # percent: any CI the core computes stops a cell at 20 samples
# the targets plan() tries (percent): the core's default and coarser, the core's range
TARGETS = (1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)
# the --max-time values (seconds per cell) plan() tries: the core's default and shorter; a
# short one ends a cell before min_samples, which is what a launch-dominated spread asks
MAX_TIMES = (0.05, 0.02, 0.01, 0.005, 0.002)
PILOT_MAX_TIME = min(MAX_TIMES)  # seconds per cell: the pilot's (see PILOT_TARGET above)
MIN_USEFUL_SAMPLES = 3     # below this a launch's statistic is not a median
SEARCH_MAX = 1000          # launches per side the planning searches up to
# the between-launch variance a plan counts on: its one-sided upper confidence bound at
# this level over the launches' df (a planning margin for a spread read off 2-3 launches)
PLAN_CONFIDENCE = 0.8


@dataclass(frozen=True)
class CellCost:
    """One cell's variance components and costs (one side, logs).

    sigma_l2: between-launch variance of the log launch statistic, the within-launch part
    removed; within_b: se_w^2 x n (the within-launch variance of the statistic is
    within_b / n); sample_s: seconds per sample (of the launches the core did not cut
    short); pool: see cell_pool; preempt_share, preempt_s: see seconds()."""
    key: object
    sigma_l2: float
    within_b: float
    sample_s: float
    # the pool compare tests the cell in: its launch regime (plan_from_rows,
    # unpaired_regimes) where compare splits its benchmark's sizes, else None: pool_of(key)
    pool: object = None
    # --exclude-preempted: the share of the cell's launches the core ran to its cap
    # (stats.preempted.waited_at_cap: stopped 'preempted' or a preempted skip in a launch
    # that sampled on to --preempted-max-time, whatever --target and --max-time said; not
    # a fixed-count launch's) and their mean seconds on the cell
    preempt_share: float = 0.0
    preempt_s: float = 0.0

    def launch_var(self, n: float) -> float:
        return self.sigma_l2 + self.within_b / max(n, 1.0)

    def seconds(self, n: float) -> float:
        """Expected seconds of the cell in one launch at n samples: n x sample_s in the
        launches that run to their stopping rule, preempt_s (up to the core's cap) in
        the share the core cuts short."""
        p = self.preempt_share
        return (1.0 - p) * n * self.sample_s + p * self.preempt_s


@dataclass(frozen=True)
class Components:
    """What a launch of one side costs and how noisy it is: its cells, the fixed seconds per
    launch (c0), and how many launches the estimate rests on."""
    cells: tuple[CellCost, ...]
    fixed_s: float
    launches: int = 0


@dataclass(frozen=True)
class PairedSpread:
    """One benchmark's (pool's) spread of the per-round differences d between two sides
    (logs), split as stats.launch.Spread splits a side: ms_launch (the mean square of the
    rounds' mean residuals times the cells per round; pairs - 1 df) and ms_cell (the
    residual mean square; (pairs - 1)(cells - 1) df); within: the mean over its cells
    (keys: the pool's, or its regime's) of the pilot launches' within-launch variance of d (B_b/n_b + B_c/n_c, each
    side's guarded B of the cell, as components_from_rows', over the launch's n), which
    the plan replaces by the one at the options it tries."""
    ms_launch: float
    df_launch: float
    ms_cell: float
    df_cell: float
    cells: float
    pairs: int
    within: float = 0.0
    # (cell key, its own cell part of one round's d, df) where compare's paired test beyond
    # THIN_LAUNCHES rounds gives the sizes their own parts (stats.launch.Spread.cell_parts:
    # always below FEW_CELLS sizes, from FEW_CELLS when the gate, asked without the
    # THIN_LAUNCHES rule, opens); () = every size takes the pooled part
    cell_parts: tuple[tuple[object, float, float], ...] = ()
    # the same at most THIN_LAUNCHES rounds, where the test gives every size (of 3 or more)
    # its own part whatever the gate (stats.launch._diff_spread); () = pooled
    thin_parts: tuple[tuple[object, float, float], ...] = ()
    # ((cell keys, their PairedSpread), ...) where compare splits the pool's sizes into
    # round regimes (stats.launch._diff_spread, Spread.regimes): a cell is planned on its
    # regime's; () = one regime, this for every cell
    regimes: tuple[tuple[tuple, PairedSpread], ...] = ()
    # ((cell keys, their PairedSpread), ...) of the runs of every cut whose Bonferroni p
    # is below HEDGE_LEVEL (two a cut, the best first) where compare splits no regime but
    # hedges (stats.launch.hedge_runs, >= 2 * MIN_REGIME_CELLS sizes): compare tests each
    # cell on the widest of this block's CI and its runs' CIs, so the plan meets them all;
    # () = no hedge
    hedges: tuple[tuple[tuple, PairedSpread], ...] = ()
    # the cells this spread is made of (its regime's, or the pool's): the plan's within
    # part at its options is the mean over these (_launches_in_view)
    keys: tuple = ()
    # ((cell keys, their PairedSpread), ...): the quiet sizes of this regime (or uncut
    # block) that compare's paired test beyond THIN_LAUNCHES rounds tests on a block of
    # their own (stats.launch._quiet_spreads: the gate opens and its prior keeps some
    # sizes; the ones it does not keep, each block the innermost compare makes); the
    # others stay on this spread. () = none
    quiet: tuple[tuple[tuple, PairedSpread], ...] = ()

    def in_view(self, keys: Iterable[object]) -> list[PairedSpread]:
        """The PairedSpreads compare tests a cell of keys on: the regimes holding one, or
        without regimes this and the hedge's runs holding one (hedges)."""
        keys = set(keys)
        if not self.regimes:
            return [self] + [ps for ks, ps in self.hedges if keys & set(ks)]
        return [ps for ks, ps in self.regimes if keys & set(ks)]

    def tested_on(self, keys: Iterable[object], thin: bool = False
                  ) -> list[tuple[PairedSpread, set]]:
        """[(a PairedSpread compare tests cells of keys on, those cells)]: in_view's, and
        beyond THIN_LAUNCHES rounds (not thin) a regime's quiet sizes on their own block's
        (quiet) instead of the regime's."""
        keys = set(keys)
        out = []
        for ps in self.in_view(keys):
            rest = keys & set(ps.keys) if ps.keys else keys
            for ks, q in () if thin else ps.quiet:
                if rest & set(ks):
                    out.append((q, rest & set(ks)))
                    rest = rest - set(ks)
            if rest:
                out.append((ps, rest))
        return out

    def worst(self) -> float:
        """The largest variance of one round's d a cell is tested on (worst_parts), over
        the regimes, their quiet blocks and the hedge's runs."""
        whole = [p for _k, p in self.regimes] or [self]
        return max(sum(ps.worst_parts()) for ps in whole + [p for _k, p in self.hedges]
                   + [q for ps in whole for _k, q in ps.quiet])

    def parts(self) -> tuple[float, float]:
        """(shared, cell): the variance of one round's d in a cell, as the two components
        of the paired test (ms_launch/S with df_launch, ms_cell (S-1)/S with df_cell)."""
        s = max(self.cells, 1.0)
        return self.ms_launch / s, (self.ms_cell * (s - 1) / s if s > 1 else 0.0)

    def worst_parts(self) -> tuple[float, float]:
        """(shared, cell) as parts(), the cell part the largest a size is tested on (its
        own where it has one)."""
        sh, ce = self.parts()
        return sh, max([ce] if not self.cell_parts else [v for _k, v, _d in self.cell_parts])


def paired_from_rows(rows: Iterable[Mapping], base: str, cand: str, more_rounds: int = 0
                     ) -> dict[object, PairedSpread]:
    """{pool: PairedSpread} of the per-round differences between variants base and cand
    from a store's result rows (as components_from_rows, plus `repeat`: the launch's round
    in an interleaved campaign), for the pools compare would test paired: the pairing is
    stats.launch.pair_rounds' own (a pool's cells are one block: every cell with both
    sides needs MIN_PAIRS pairs, else the pool is left out, planned unpaired), with
    more_rounds rounds still to run counted as one more pair per cell (a pilot's plan
    for the campaign's later rounds; 0: the rows as they are). The spread is
    stats.launch.spread's over the pool's paired cells, gated as compare gates it beyond
    THIN_LAUNCHES rounds (cell_parts), and its own parts as compare gives them at most
    THIN_LAUNCHES rounds (thin_parts): the plan decides which from the rounds it plans,
    not from the pilot's; per round regime compare's paired spread splits the pool into
    (PairedSpread.regimes, _paired_spread), a regime's quiet sizes beyond THIN_LAUNCHES
    rounds on the block of their own compare tests them on (stats.launch._quiet_spreads,
    PairedSpread.quiet)."""
    rows = list(rows)
    # each launch's within-launch variance of its median: the cell's guarded B (as
    # components_from_rows, `_robust_within`) over the launch's n, not the launch's own
    # CI: one stalled sample's CI would otherwise enter within at full weight while the
    # plan replaces it by one from the guarded B (_paired_parts), and the difference
    # clipped both paired parts to 0
    b_of = guarded_b(r for r in rows if r.get("variant") in (base, cand))

    def within_of(r: Mapping) -> float:
        b, n = b_of.get((r["variant"], (r["benchmark"], r["size"]))), r.get("n")
        return b / n if b is not None and n else 0.0

    cells: dict[object, dict[tuple, tuple[dict, dict, str]]] = defaultdict(dict)
    found: dict[tuple, Mapping] = {}
    for i, r in enumerate(rows):
        v, rep = r.get("variant"), r.get("repeat")
        if v not in (base, cand) or rep is None:
            continue
        key = (r["benchmark"], r["size"])
        cell = cells[pool_of(key)].setdefault(key, ({}, {}, "lower"))
        found[(i, int(rep))] = r          # a launch id pair_rounds can tell apart
        cell[v == cand][(i, int(rep))] = r.get("median")
    out = {}
    for g, by_key in cells.items():
        keys = sorted(by_key, key=lambda k: k[1])    # compare's block: sizes ascending
        block = [by_key[k] for k in keys]
        paired = launch_stats.pair_rounds(block, {k: k[1] for k in found}, more_rounds)
        if paired is None:
            continue
        d: dict[object, dict[int, float]] = {}
        w: dict[object, float] = {}
        for key, (pairs, _left) in zip(keys, paired, strict=True):
            if len(pairs) < 2:
                continue
            d[key] = {rep: found[c]["median"] / found[b]["median"]
                      for rep, (b, c) in pairs.items()}
            w[key] = sum(within_of(found[b]) + within_of(found[c])
                         for b, c in pairs.values()) / len(pairs)
        ps = _paired_spread(d, w) if d else None
        if ps is not None:
            out[g] = ps
    return out


def _paired_spread(d: dict[object, dict[int, float]], within: Mapping[object, float]
                   ) -> PairedSpread | None:
    """One pool's PairedSpread from {cell key: {round: cand / base}} (sizes ascending),
    split into the round regimes compare's paired spread finds in the same differences
    (stats.launch._diff_spread: one rule), or where it finds none into the two runs its
    hedge tests the cells on too (stats.launch.hedge_runs: PairedSpread.hedges), each
    regime's or run's made as the whole one from its cells alone; within: {cell key: the
    pilot's within-launch variance of its d}, each regime's within the mean over its own
    cells (the whole's over the pool's). Each regime (or, uncut, the whole) carries the
    blocks compare tests its quiet sizes on (_with_quiet, PairedSpread.quiet)."""
    whole = _paired_of(d, _mean_of(within, d))
    logs = [{r: math.log(v) for r, v in by.items()} for by in d.values()]
    sp = launch_stats._diff_spread(logs)
    if whole is None or sp is None:
        return whole
    keys = list(d)
    runs = ([ks for ks, _sp in sp.regimes] if sp.regimes
            else launch_stats.hedge_runs(logs))
    parts = [(ks, _paired_of({k: d[k] for k in ks}, _mean_of(within, ks)))
             for ks in (tuple(keys[j] for j in run) for run in runs)]
    if not parts or any(ps is None for _ks, ps in parts):
        return _with_quiet(whole, d, within)
    if sp.regimes:
        return replace(whole, regimes=tuple((ks, _with_quiet(ps, d, within))
                                            for ks, ps in parts))
    return replace(_with_quiet(whole, d, within), hedges=tuple(parts))


def _with_quiet(ps: PairedSpread, d: dict[object, dict[int, float]],
                within: Mapping[object, float]) -> PairedSpread:
    """ps (one regime, or an uncut block) with the blocks compare's paired test tests its
    quiet sizes on (PairedSpread.quiet): stats.launch.quiet_blocks, compare's own
    blocks (where the gate opens and the prior keeps some sizes, the others, at least
    MIN_REGIME_CELLS; again within a block while its prior keeps one), each made from its
    cells alone as compare makes it (moderated without a gate, force); a cell's block the
    innermost. Asked of the pilot's rounds whatever their count, as the gate beyond
    THIN_LAUNCHES is (cell_parts): compare makes the blocks beyond it."""
    final: dict[object, PairedSpread] = {}
    for block, _sp in launch_stats.quiet_blocks({k: d[k] for k in ps.keys}):
        q = _paired_of({k: d[k] for k in block}, _mean_of(within, block), force=True)
        if q is not None:
            final.update({k: q for k in block})
    blocks = {id(q): q for q in final.values()}
    return replace(ps, quiet=tuple((tuple(k for k in ps.keys if final.get(k) is q), q)
                                   for q in blocks.values()))


def _paired_of(d: dict[object, dict[int, float]], within: float, force: bool = False
               ) -> PairedSpread | None:
    """The PairedSpread of these cells' round ratios, one regime: stats.launch.spread's,
    gated (cell_parts; force: without the gate, a quiet block's, _with_quiet) and with
    every size its own part (thin_parts), each own part floored at the size's own
    variance as compare's paired spread floors it (floor_own, _diff_spread)."""
    sp = launch_stats.spread(d, force=force, floor_own=True)
    if sp is None:
        return None
    thin = launch_stats.spread(d, own=True, floor_own=True) or sp
    own, own_thin = ([(k, v, df) for k, (v, df) in (s.cell_parts or {}).items()]
                     for s in (sp, thin))
    return PairedSpread(sp.ms_launch, sp.df_launch, sp.ms_cell, sp.df_cell, sp.cells,
                        sp.launches, within, tuple(own), tuple(own_thin), keys=tuple(d))


def _mean_of(values: Mapping[object, float], keys: Iterable[object]) -> float:
    """The mean of values over the keys it has (0 with none)."""
    xs = [values[k] for k in keys if k in values]
    return sum(xs) / len(xs) if xs else 0.0


def paired_spreads(rows: Sequence[Mapping], variants: Sequence[str], more_rounds: int = 0
                   ) -> dict[object, PairedSpread]:
    """{pool: the PairedSpread a plan must meet} over the comparisons of the first variant
    (compare's baseline) with each other one: per pool the one whose round difference
    varies most. Empty with fewer than two variants. more_rounds: as paired_from_rows."""
    out: dict[object, PairedSpread] = {}
    for cand in variants[1:]:
        for g, ps in paired_from_rows(rows, variants[0], cand, more_rounds).items():
            if g not in out or ps.worst() > out[g].worst():
                out[g] = ps
    return out


def upper_factor(df: float, confidence: float | None = PLAN_CONFIDENCE) -> float:
    """df / chi2_(1-confidence)(df): the factor that turns a variance estimate with df
    degrees of freedom into its one-sided upper confidence bound (1 without df)."""
    if confidence is None or df <= 0:
        return 1.0
    return df / float(launch_stats._chi2_ppf(1.0 - confidence, df))


def rounds_for(shared: float, cell: float, cells: float, effect: float, *,
               alpha: float = 0.05, power: float = launch_stats.POWER, family: int = 1,
               equivalence: bool = False, max_n: int = SEARCH_MAX,
               own_df: float | None = None, pairs: int = 0,
               every_cell: float | None = None) -> int | None:
    """Rounds (launches per side, paired) for a decision on a cell whose one-round
    difference has these two variance components (the round part shared by the `cells`
    sizes, pairs - 1 df; the cell part, (pairs - 1)(cells - 1) df when pooled, or with
    own_df the cell's own (moderated) part, estimated with own_df df from `pairs` rounds,
    at k rounds the df stats.launch.future_df gives it: d0 + k - 1): the paired test's
    noncentral t at k rounds (stats.launch's power computation on the components scaled
    to k), at least MIN_PAIRS. The levels as launches_for: a difference at alpha / family;
    equivalence within ±effect as two one-sided tests at alpha, each with power
    (1 + power) / 2. every_cell (a cell level, cell_level): the rounds at which the cell
    is decided whatever its true gain (decides_any_gain: significant at that level or
    equivalent within ±effect by TOST at alpha), with probability `power` over the final
    look's spread. None beyond max_n."""
    if shared + cell <= 0:
        return launch_stats.MIN_PAIRS
    a, pw = (2 * alpha, (1 + power) / 2) if equivalence else (alpha / max(family, 1), power)

    # the rounds an own part rests on: the block's pairs - 1, or its own df where fewer
    # (a size measured in only some rounds, e.g. the time-to-decision bench's decided
    # sizes, skipped later: 3 df in a block of 486 pairs scaled to 0.01 df at 3 rounds, a
    # NaN noncentral t, gate-run-7's traceback); from there its df grows a round a round
    now = min(pairs - 1, own_df) if own_df is not None else pairs - 1

    def comps_at(k: int) -> tuple:
        comps = [(shared / k, float(k - 1))]
        if own_df is not None and cell > 0:
            df = (launch_stats.future_df(own_df, now, k - 1, own=True) if now > 0
                  else float(k - 1))
            comps.append((cell / k, df))
        elif cell > 0 and cells > 1:
            comps.append((cell / k, float((k - 1) * (cells - 1))))
        return tuple(comps)

    if every_cell is not None:
        return every_cell_search(comps_at, effect, every_cell, alpha, power,
                                 launch_stats.MIN_PAIRS, max_n)
    return launch_stats.rounds_search(comps_at, effect, a, pw, max_n)


# --- the every-cell plan (stop 41) ---------------------------------------------------------
#
# A cell at the final look (level alpha) is significant when its adjusted p in the table's
# family <= alpha, and equivalent when TOST p <= alpha. Both read the cell's gain d (log) and
# standard error se with the same components (stats.launch.LaunchTest): significant as soon
# as |d| >= c_sig se (c_sig the critical value at the least level the family tests the
# cell's own p at, cell_level), equivalent as soon as |d| + c_eq se <= log(1 + margin)
# (c_eq the one-sided critical value at alpha). If (c_sig + c_eq) se <= log(1 + margin),
# one of the two holds whatever d is: |d| < c_sig se gives |d| + c_eq se < the margin. So
# such an se decides the cell whatever its true gain; the gain-1 plan (equivalence at gain
# 1 with 80% power) leaves a gain between log(1 + margin) - c_eq se and c_sig se undecided.


def cell_level(alpha: float, rows: int, verdicts: bool = True, block: bool = True) -> float:
    """The least level at which the table's family (stats.multiplicity.adjust_table, the
    one the report prints and stats.sequential decides with) tests one cell's own p,
    whatever the other p's are: the rows (cells and geomean rows, `rows` of them) hold
    1 - VERDICT_SHARE of alpha when there are verdicts, one equal share each, and a graph
    procedure's weights only grow, so a unit whose p <= alpha x its initial weight is
    rejected; a benchmark's pooled cells are one unit of weight share x (its cells), their
    p the closed test's (closed_mean_p), which at worst (the other cells' gains straddle
    0: the mean-gain tests never reject) is maxT's at 1 - MEAN_SHARE of the level, at most
    the block's cells x p (Sidak, rho >= 0), so p <= alpha share (1 - MEAN_SHARE); a cell
    with its own part (maxT) or alone: p <= alpha share. block: the cell may be in a
    pooled block (the conservative end; the plan assumes it)."""
    from mpibench.stats import multiplicity as mt

    share = (1.0 - mt.VERDICT_SHARE) if verdicts else 1.0
    if block and mt.BLOCK_TEST not in ("both", "maxt"):
        raise ValueError(f"cell_level: BLOCK_TEST {mt.BLOCK_TEST!r} has no maxT step, so no "
                         "level holds whatever the other gains are")
    inner = (1.0 - mt.MEAN_SHARE) if block and mt.BLOCK_TEST == "both" else 1.0
    return alpha * share / max(rows, 1) * inner


def decides_any_gain(comps: Sequence[tuple[float, float]], effect: float, sig_level: float,
                     alpha: float = 0.05, power: float = launch_stats.POWER) -> bool:
    """Whether a test with these variance components (of the gain's log, at the final
    look) decides the cell whatever its true gain, with probability `power`: (c_sig +
    c_eq) se_q <= log(1 + effect), c_sig the two-sided critical value at sig_level
    (cell_level), c_eq the one-sided one at alpha (TOST), both Cochran-Cox / Welch as
    compare's test (stats.launch.cochran_cox_crit), se_q the standard error at the
    `power` quantile of its estimate (chi2 at the components' Satterthwaite df): the
    spread the final look will estimate is at most that with probability `power`."""
    tot = sum(v for v, _ in comps)
    if tot <= 0:
        return True
    c = (launch_stats.cochran_cox_crit(comps, sig_level / 2.0)
         + launch_stats.cochran_cox_crit(comps, alpha))
    nu = launch_stats._satterthwaite(comps)
    q = float(launch_stats._chi2_ppf(power, nu)) / nu if math.isfinite(nu) and nu > 0 else 1.0
    return c * math.sqrt(tot * q) <= abs(math.log1p(effect)) + 1e-12


def every_cell_search(comps_at: Callable[[int], tuple], effect: float, sig_level: float,
                      alpha: float, power: float, least: int, max_n: int) -> int | None:
    """The least n in [least, max_n] at which decides_any_gain(comps_at(n)) holds
    (bisection: the standard error, its critical values and the chi2 quantile all fall
    with n); None beyond max_n."""
    if not decides_any_gain(comps_at(max_n), effect, sig_level, alpha, power):
        return None
    lo, hi = least, max_n
    while lo < hi:
        mid = (lo + hi) // 2
        if decides_any_gain(comps_at(mid), effect, sig_level, alpha, power):
            hi = mid
        else:
            lo = mid + 1
    return lo


def optimum_samples(sigma_l2: float, within_b: float, fixed_s: float, sample_s: float
                    ) -> float:
    """n* = sqrt(B c0 / (sigma_L^2 c1)): the samples per launch that minimise the cost of a
    given precision of the mean over launches (continuous; inf when sigma_L is 0, i.e.
    one long launch is best, and 0 when sampling is free of within-launch error)."""
    if within_b <= 0 or fixed_s <= 0:
        return 0.0
    if sigma_l2 <= 0 or sample_s <= 0:
        return math.inf
    return math.sqrt(within_b * fixed_s / (sigma_l2 * sample_s))


def launches_for(sd_log: float, effect: float, *, alpha: float = 0.05,
                 power: float = launch_stats.POWER, family: int = 1,
                 equivalence: bool = False, max_n: int = 1000,
                 every_cell: float | None = None) -> int | None:
    """Launches per side for a decision on one cell at this per-launch sd (logs).

    A difference of `effect` (0.05 = 5%): the two-sided test at alpha / family (Holm's
    first step over `family` rows, the most a cell can be asked for) with `power`
    (stats.launch.launches_needed, noncentral t). Equivalence within ±effect (TOST at
    alpha, true gain 1): each one-sided test at alpha must reject; the two-sided test at
    2 alpha has the same critical value, and asking each side for power (1 + power) / 2
    makes both succeed together with at least `power` (Bonferroni on the two misses).
    every_cell (a cell level, cell_level): the launches per side at which the cell is
    decided whatever its gain (every_cell_search; the difference of two sides' means,
    2 sd^2 / n on 2 (n - 1) df)."""
    if every_cell is not None:
        if sd_log <= 0:
            return launch_stats.MIN_LAUNCHES
        return every_cell_search(lambda n: ((2 * sd_log ** 2 / n, 2.0 * (n - 1)),), effect,
                                 every_cell, alpha, power, launch_stats.MIN_LAUNCHES, max_n)
    try:
        if equivalence:
            return launch_stats.launches_needed(sd_log, effect, alpha=2 * alpha,
                                                power=(1 + power) / 2, max_n=max_n)
        return launch_stats.launches_needed(sd_log, effect, alpha=alpha / max(family, 1),
                                            power=power, max_n=max_n)
    except OverflowError:    # at 2-3 launches a huge sd has no finite detectable effect
        return None


@dataclass(frozen=True)
class Choice:
    target_pct: float            # the core's --target for the launches
    launches: int | None         # launches per side for every cell (None: beyond SEARCH_MAX)
    launch_s: float              # predicted seconds of one launch (the mean of the sides)
    total_s: float               # launches x launch_s x sides
    samples: dict = field(default_factory=dict, compare=False)   # cell key -> n
    max_time: float = CORE_DEFAULT_MAX_TIME    # the core's --max-time (seconds per cell)
    launch_var: float = math.inf  # the worst benchmark's pooled variance of one launch (logs)
    # the cells plan(partial=True) left out: each beyond SEARCH_MAX rounds on its own
    beyond: frozenset = field(default_factory=frozenset, compare=False)

    def options(self) -> dict[str, float | bool]:
        """The core options of this choice (campaign `options` names). Always with
        --accept-approximate: the plan's model of a cell (samples_at) stops it once its CI
        is within the target, not before min_samples, which is where the core stops it
        only with that option; without it, a cell whose CI is not exact (fewer than 20 tau
        samples, a stationarity flag: most cells under load) samples on to --max-time, at
        a cost and a precision the plan never weighed (the time-to-decision bench, load
        3-5, budgeted rounds at --target 100% --max-time 0.02 s without it: 129 of 384
        cells ran to --max-time, 9.8 s of the cells' 11.7 s). The launch-level test reads
        each launch's median, whose variance at n samples is B/n whether the core calls
        its CI exact or not; where the within-launch error matters the plan buys samples
        through a finer target."""
        return {"target": self.target_pct, "max_time": self.max_time,
                "accept_approximate": True}


@dataclass(frozen=True)
class Plan:
    best: Choice
    tried: tuple[Choice, ...]
    effect: float
    equivalence: bool
    max_launches: int = SEARCH_MAX    # the cap on launches per side the plan respects
    confidence: float | None = None   # the upper bound the between-launch variance is at
    paired: bool = False              # planned for the round-paired test (rounds per side)
    # cell launches of the rows planned on that the core stopped 'preempted'
    # (--exclude-preempted: its cap ended with fewer clean samples than the size needs):
    # their medians rest on those few samples, their seconds per sample include the wait
    preempted: int = 0
    # cell launches of those rows with no clean sample (stats.preempted.skipped: no
    # median, their seconds priced as the cap's, CellCost.seconds); the core's other skips
    # (--mem-limit, too few ranks, ...) are neither count
    skipped: int = 0
    # the every-cell plan's cell level (cell_level): launches that decide every cell
    # whatever its gain; None: equivalence (or a difference) at gain 1 + effect
    every_cell: float | None = None
    # beside a gain-1 plan, the every-cell plan's launches per side at the same options
    # (campaigns' budget = "auto" line: plan_from_rows' every_beside); None: more than
    # SEARCH_MAX;
    # every_asked False: not asked (describe says nothing of it)
    every_launches: int | None = None
    every_asked: bool = False
    # the rows of the table the every-cell level counts (plan()'s rows, a campaign's whole
    # table: campaign_table_rows); None: the planned cells' own table (table_rows)
    table_rows: int | None = None

    @property
    def within_cap(self) -> bool:
        return self.best.launches is not None and self.best.launches <= self.max_launches

    def describe(self) -> str:
        text = self._describe()
        if self.best.beyond:
            text += (f"; planned without {len(self.best.beyond)} cells out of reach at their "
                     f"own spread (more than {SEARCH_MAX} rounds each): "
                     f"{cells_named(self.best.beyond)}, tested at every look like the others")
        if self.preempted:
            text += (f"; {self.preempted} cell launches it planned on stopped 'preempted' "
                     "(short of clean samples at the core's cap: medians of those few, "
                     "seconds per sample with the wait)")
        if self.skipped:
            text += (f"; {self.skipped} cell launches with no clean sample (skipped: no "
                     "value; their seconds priced in as the cap's)")
        if self.every_asked:
            m = (f"{self.every_launches} launches per side" if self.every_launches
                 else f"more than {SEARCH_MAX} launches per side")
            # at the least cell level of the table the plan was given (a campaign's: every
            # group's cells, review s41 R4), else of the planned cells' own table
            table = (f"the campaign's table ({self.table_rows} rows: its groups' cells and "
                     "geomean rows)" if self.table_rows
                     else "a table of these cells (their geomean rows beside them)")
            text += (f"; every cell decided whatever its gain (significant, or equivalent "
                     f"within ±{100 * self.effect:g}%): {m} at these options, for {table}")
        return text

    def _describe(self) -> str:
        b = self.best
        what = (f"a {100 * self.effect:g}% difference" if not self.equivalence
                else f"equivalence within ±{100 * self.effect:g}%" if self.every_cell is None
                else (f"every cell decided whatever its gain (significant at the table's "
                      f"least cell level {self.every_cell:.2g}, or equivalent within "
                      f"±{100 * self.effect:g}%)"))
        knobs = (f"budget: --target {b.target_pct:g}% --max-time {b.max_time:g} s per cell"
                 " --accept-approximate")
        sd = ((f"paired by round, sd of a round's difference "
               f"{math.sqrt(2 * b.launch_var):.3f}") if self.paired
              else f"launch sd {math.sqrt(b.launch_var):.3f}") + (
            f", its {100 * self.confidence:g}% upper bound" if self.confidence else "")
        if self.within_cap:
            return (f"{knobs}, {b.launches} launches per side for {what} ({sd}), "
                    f"{b.launch_s:.2f} s per launch, {b.total_s:.1f} s of launches in all")
        need = (f"{b.launches} launches per side ({b.total_s:.1f} s of launches)"
                if b.launches is not None else f"more than {SEARCH_MAX} launches per side")
        cap = (f", more than the {self.max_launches} planned"
               if self.max_launches < SEARCH_MAX else "")
        return (f"{knobs}, {b.launch_s:.2f} s per launch ({sd}): {what} needs {need}{cap}, "
                f"so the launches are the ones with the least launch time to it (the most "
                f"precision per second)")


def cells_named(keys: Iterable[object]) -> str:
    """Cell keys (benchmark, size) as a reader names them: per benchmark its sizes
    ascending, each as units.fmt_size writes it ('PingPong 512, 4K'); other keys as
    they print."""
    by: dict[str, list] = defaultdict(list)
    for k in keys:
        if isinstance(k, tuple) and len(k) > 1 and isinstance(k[1], int):
            by[str(k[0])].append(k[1])
        else:
            by[str(k)].append(None)
    return "; ".join(f"{b} " + ", ".join(fmt_size(x) for x in sorted(xs)) if None not in xs
                     else b for b, xs in sorted(by.items()))


def samples_at(cell: CellCost, target_pct: float, min_samples: int = CORE_MIN_SAMPLES,
               max_time: float = CORE_DEFAULT_MAX_TIME) -> float:
    """Samples the core takes for this cell: it stops once the CI half-width is within
    --target (not before min_samples) or when --max-time per cell is spent, whichever
    comes first (core/stop.c); never fewer than MIN_USEFUL_SAMPLES."""
    se = math.log1p(target_pct / 100.0) / Z95
    need = max(float(min_samples), cell.within_b / (se * se) if cell.within_b > 0 else 0.0)
    if cell.sample_s > 0:
        need = min(need, max_time / cell.sample_s)
    return max(float(MIN_USEFUL_SAMPLES), need)


def pool_of(key: object) -> object:
    """The cells compare pools (one benchmark's sizes): a (benchmark, size) key's
    benchmark, else the key itself."""
    return key[0] if isinstance(key, tuple) and len(key) > 1 else key


def cell_pool(c: CellCost) -> object:
    """The pool a cell is planned in: its launch regime where it has one, else its
    benchmark (pool_of)."""
    return pool_of(c.key) if c.pool is None else c.pool


def pooled_launch_var(sides: Sequence[Components], keys: Iterable[object], target_pct: float,
                      min_samples: int = CORE_MIN_SAMPLES,
                      max_time: float = CORE_DEFAULT_MAX_TIME) -> dict[object, float]:
    """{pool: the variance of one launch's log statistic that compare's test gives every
    cell of the pool}: compare's hierarchical model (stats.launch.spread) pools the
    between-launch variance over a benchmark's sizes, so each cell's standard error is
    the mean over the sizes of sigma_L^2 + B/n (ms_launch/S + ms_cell (S-1)/S), averaged
    here over the sides as well. A size with a large launch spread costs every size of
    its benchmark; one with a small one does not buy them anything on its own."""
    return _pool_mean(sides, keys, lambda c: c.launch_var(
        samples_at(c, target_pct, min_samples, max_time)))


def own_launch_var(sides: Sequence[Components], keys: Iterable[object], target_pct: float,
                   min_samples: int = CORE_MIN_SAMPLES,
                   max_time: float = CORE_DEFAULT_MAX_TIME) -> dict[object, float]:
    """{pool: the largest over its cells of the cell's own variance of one launch (the mean
    over the sides of sigma_L^2 + B/n)}: what compare's test gives a cell where the sizes
    keep their own cell parts (Spread.cell_parts), whose standard error is then the
    cell's own launch variance, sigma_L^2 of that size (ms_launch/S + its own part)."""
    keys = set(keys)
    acc: dict[object, list[float]] = defaultdict(list)
    pools: dict[object, object] = {}
    for s in sides:
        for c in s.cells:
            if c.key in keys:
                pools[c.key] = cell_pool(c)
                acc[c.key].append(c.launch_var(samples_at(c, target_pct, min_samples,
                                                          max_time)))
    out: dict[object, float] = {}
    for key, v in acc.items():
        g = pools[key]
        out[g] = max(out.get(g, 0.0), sum(v) / len(v))
    return out


def _pool_mean(sides: Sequence[Components], keys: Iterable[object],
               value: Callable[[CellCost], float],
               group: Callable[[CellCost], object] = cell_pool) -> dict[object, float]:
    """{pool (group(cell); cell_within: the cell's key): the mean of value(cell) over the
    sides' cells in keys that it holds}."""
    keys = set(keys)
    acc: dict[object, list[float]] = defaultdict(list)
    for s in sides:
        for c in s.cells:
            if c.key in keys:
                acc[group(c)].append(value(c))
    return {g: sum(v) / len(v) for g, v in acc.items()}


def own_part_pools(sides: Sequence[Components], keys: Iterable[object],
                   more: Iterable[object] = (), thin: bool = False) -> set[object]:
    """The pools whose cells compare tests on their own cell parts: those with
    MIN_MODERATE_CELLS to FEW_CELLS - 1 of keys (own parts at any launch count; 2 sizes
    are pooled: stats.launch._cell_parts), and `more` (from
    FEW_CELLS, where the gate opens: plan_from_rows asks stats.launch.gated_spreads).
    thin: at most THIN_LAUNCHES launches per side, where every pool of MIN_MODERATE_CELLS
    or more sizes has them (no gate)."""
    count: dict[object, set] = defaultdict(set)
    for s in sides:
        for c in s.cells:
            if c.key in keys:
                count[cell_pool(c)].add(c.key)
    top = math.inf if thin else launch_stats.FEW_CELLS
    return {g for g, ks in count.items()
            if launch_stats.MIN_MODERATE_CELLS <= len(ks) < top} | set(more)


def between_margin(sides: Sequence[Components], confidence: float | None = PLAN_CONFIDENCE
                   ) -> float:
    """The factor on sigma_L^2 the plan uses: df / chi2_(1-confidence)(df), the one-sided
    upper confidence bound of a variance with df = the sides' launches less one each (the
    launch effect a benchmark's sizes share has only those df, however many sizes). 1 when
    confidence is None or the launch counts are unknown. At 2 launches per side (2 df) and
    0.8: 4.48; at 10 per side (18 df): 1.40."""
    df = sum(max(s.launches - 1, 0) for s in sides)
    if confidence is None or df <= 0:
        return 1.0
    return df / float(launch_stats._chi2_ppf(1.0 - confidence, df))


def _widened(side: Components, factor: float) -> Components:
    if factor == 1.0:
        return side
    return Components(tuple(replace(c, sigma_l2=c.sigma_l2 * factor) for c in side.cells),
                      side.fixed_s, side.launches)


def plan(sides: Sequence[Components], effect: float, *, alpha: float = 0.05,
         power: float = launch_stats.POWER, family: int | None = None,
         equivalence: bool = False, targets: Iterable[float] = TARGETS,
         min_samples: int = CORE_MIN_SAMPLES, max_times: Iterable[float] = MAX_TIMES,
         max_launches: int = SEARCH_MAX, confidence: float | None = PLAN_CONFIDENCE,
         paired: Mapping[object, PairedSpread] | None = None,
         keep_within: bool = False, own_pools: Iterable[object] = (),
         own_cells: Iterable[object] = (), partial: bool = False,
         every_cell: bool = False, rows: int | None = None) -> Plan | None:
    """The core's --target and --max-time for the later launches of a comparison.

    The between-launch variances are taken at their upper `confidence` bound
    (between_margin: a spread estimated from 2 launches per side is often far too small,
    e.g. when the machine's load changes between launches); None plans on the estimates.

    sides: the components of each side (the cells present on all sides are planned).
    At each (target, max-time) pair, a launch of a side costs fixed_s + the sum of its
    cells' samples x sample_s, and each benchmark's cells share the pooled launch variance
    compare's test gives them (pooled_launch_var), or where compare gives the sizes own
    cell parts (own_part_pools; own_pools: where the gate opens) the noisiest size's
    (own_launch_var), and where the gate stays shut but compare gives a size its own part
    (own_cells: flagged_cells) the larger of the pooled and that size's; the launches per side are launches_for(that sd) for the worst
    benchmark (family: Holm rows for a difference, default the cells), as compare will
    test them at that count: at most THIN_LAUNCHES per side where every size of 3 or more
    on its own part decides (own_part_pools(thin=True), PairedSpread.thin_parts), else at
    least THIN_LAUNCHES + 1 on the gated view (_launches_in_view). Then:

    - when some pair decides within max_launches (the campaign's cap on launches per
      side), the pair with the least launch time to the decision (launches x seconds);
    - else (the launches cannot decide everything in the cap), the pair with the least
      launch time to the decision beyond the cap, and where none decides within
      SEARCH_MAX either, the least launch_var x launch_s (the most precision per second
      of launches); _best says why.

    paired: {pool: PairedSpread} when the launches are tested paired by round (an
    interleaved campaign): the launches per side are then the rounds the paired test needs
    (rounds_for) at the round differences' components of its worst cell (_paired_cells),
    each at its upper `confidence` bound, the pilot's within-launch part replaced by the
    one at each pair of options (keep_within: kept, see _paired_parts); pools without
    a PairedSpread are planned unpaired as above.

    partial: a paired cell beyond SEARCH_MAX rounds on its own leaves only itself out
    (Choice.beyond; _launches_in_view), not the whole plan (False: campaigns' "auto").

    every_cell (with equivalence): every cell decided whatever its gain (decides_any_gain
    at cell_level over `rows`, the whole table's rows: table_rows; None: the cells
    planned), not equivalence at gain 1. None when no cell is common."""
    if not sides:
        return None
    common = set.intersection(*({c.key for c in s.cells} for s in sides))
    if not common:
        return None
    own_cells = set(own_cells)
    factor = between_margin(sides, confidence)
    sides = [_widened(s, factor) for s in sides]
    fam = family if family is not None else len(common)
    views = {False: own_part_pools(sides, common, own_pools),
             True: own_part_pools(sides, common, thin=True)}
    level = (cell_level(alpha, rows or table_rows(common, len(sides) - 1))
             if every_cell and equivalence else None)
    levels = dict(alpha=alpha, power=power, family=fam, equivalence=equivalence,
                  every_cell=level)
    tried = [_choice(sides, common, views, own_cells, paired, confidence, effect, levels,
                     partial, keep_within, min_samples, t, m)
             for m in max_times for t in targets]
    best = _best(tried, max_launches)
    return Plan(best, tuple(tried), effect, equivalence, max_launches,
                confidence if factor != 1.0 or paired else None, bool(paired),
                every_cell=level, table_rows=rows)


def _choice(sides: Sequence[Components], common: set, views: dict, own_cells: set,
            paired: Mapping[object, PairedSpread] | None, confidence: float | None,
            effect: float, levels: dict, partial: bool, keep_within: bool,
            min_samples: int, t: float, max_time: float) -> Choice:
    """plan()'s Choice at one (target, max-time) pair: its launch cost and the launches
    per side the worst cell needs there (_launches_in_view)."""
    cost, samples = _launch_cost(sides, common, t, min_samples, max_time)
    launch_s = cost / len(sides)
    within = None if keep_within or not paired else cell_within(
        sides, common, t, min_samples, max_time)
    # compare tests at most THIN_LAUNCHES launches per side on every size's own part
    # (no gate) and beyond them gated: the launches are planned the way they will be
    # tested, whatever the pilot's count
    k, worst, far = _launches_in_view(
        _planned_launch_var(sides, common, views[True], t, min_samples, max_time),
        paired, within, confidence, common, effect, levels, thin=True)
    if k is None:
        k, worst, far = _launches_in_view(
            _planned_launch_var(sides, common, views[False], t, min_samples, max_time,
                                own_cells),
            paired, within, confidence, common, effect, levels, thin=False,
            partial=partial)
        k = None if k is None else max(k, launch_stats.THIN_LAUNCHES + 1)
    k, far = (None, frozenset()) if k is not None and k > SEARCH_MAX else (k, far)
    return Choice(float(t), k, launch_s, k * cost if k else math.inf, samples, max_time,
                  worst, far)


def table_rows(cells: Iterable[object], candidates: int = 1) -> int:
    """The rows of the comparison table these cells make, each candidate's: its cells and
    a geomean row per benchmark (pool_of) with more than one cell (stats.sequential
    .table_p's family; the verdicts are apart)."""
    per: dict[object, int] = defaultdict(int)
    for k in cells:
        per[pool_of(k)] += 1
    return max(candidates, 1) * sum(n + (n > 1) for n in per.values())


def campaign_table_rows(rows_by_point: Mapping[tuple[object, object], Sequence[Mapping]],
                        order: Sequence[str]) -> int:
    """The rows of a campaign's comparison table (table_rows, each candidate's) from the
    launch rows (launch_cost_rows) of each (group, tag): tag what tells the table's cells
    apart beyond benchmark and size (a point's params and the ranks, CellKey's params_key
    and np). In each group the first variant of `order` present is the baseline, as
    plan_from_rows' and the table's; a candidate's cells are the ones it and its baseline
    both have components of (components_from_rows, a cut cell apart: alone_rows), pooled
    over the groups that measured them at the same tag, as the table pools a variant's
    cells; a geomean row per benchmark. One group of one tag whose candidates share their
    cells: plan()'s own count."""
    cells: dict[tuple[str, str], set] = defaultdict(set)
    for (_group, tag), rows in rows_by_point.items():
        comps = components_from_rows(alone_rows(rows))
        present = [v for v in order if v in comps]
        if len(present) < 2:
            continue
        base = {c.key for c in comps[present[0]].cells}
        for v in present[1:]:
            # (benchmark, (size, tag)): pool_of keeps the benchmark, the geomean row's
            cells[(present[0], v)] |= {(k[0], (k[1], tag)) if isinstance(k, tuple) else (k, tag)
                                       for k in base & {c.key for c in comps[v].cells}}
    return sum(table_rows(ks) for ks in cells.values())


def _launches_in_view(pooled: Mapping[object, float],
                      paired: Mapping[object, PairedSpread] | None, within: dict | None,
                      confidence: float | None, common: set, effect: float, levels: dict,
                      thin: bool, partial: bool = False
                      ) -> tuple[int | None, float, frozenset]:
    """(launches per side, the worst launch variance, the cells left out of reach) plan()
    needs where compare tests as at most THIN_LAUNCHES launches per side (thin: every size
    its own part, None beyond THIN_LAUNCHES) or beyond them (gated): unpaired pools on
    `pooled`, paired ones on their round differences' components (rounds_for,
    _paired_cells). partial (beyond THIN_LAUNCHES only): a paired cell (or pooled block)
    whose own rounds are beyond SEARCH_MAX (its round difference varies too much: one
    launch stalled 4x in 8 rounds, the time-to-decision bench's run-67) is left out of the
    launches and the worst variance and returned, the others planned as compare tests
    them (their components still hold what the cells left out share with them, the
    stall in their round part); read off the spread alone, never the gains. Else (and
    always for unpaired pools) one such cell leaves the whole plan out of reach (None)."""
    max_n = launch_stats.THIN_LAUNCHES if thin else SEARCH_MAX
    ks, worst = [], 0.0
    unpaired = {g: v for g, v in pooled.items() if not paired or g not in paired}
    if unpaired:
        worst = max(unpaired.values())
        ks.append(launches_for(math.sqrt(worst), effect, max_n=max_n, **levels))
    each: list[tuple[frozenset, int | None, float]] = []
    for g, pool in (paired or {}).items():
        # each round regime (quiet block, hedge run) compare tests cells on, with them
        for ps, keys in pool.tested_on(common, thin):
            # its within part at the options: the mean over its own cells, as ps.within
            # (a PairedSpread made without keys: the pool's cells)
            w = None if within is None else _mean_of(
                within, ps.keys or [k for k in within if pool_of(k) == g])
            for cells, sh, ce, own_df in _paired_cells(ps, w, confidence, keys, thin):
                # the same scale as an unpaired side's launch variance: var(d) / 2
                each.append((cells, rounds_for(sh, ce, ps.cells, effect, own_df=own_df,
                                               pairs=ps.pairs, max_n=max_n, **levels),
                             (sh + ce) / 2))
    far = frozenset().union(*(c for c, r, _v in each if r is None or r > max_n)) \
        if partial and not thin else frozenset()
    for cells, r, v in each:
        if not cells <= far:
            ks.append(r)
            worst = max(worst, v)
    k = None if not ks or any(x is None or x > max_n for x in ks) else max(ks)
    return k, worst, far if k is not None else frozenset()


def _launch_cost(sides: Sequence[Components], common: set, t: float, min_samples: int,
                 max_time: float) -> tuple[float, dict]:
    """(seconds of one launch of every side, {cell key: samples, the most of the sides})
    at these options."""
    cost, samples = 0.0, {}
    for s in sides:
        cost += s.fixed_s
        for c in s.cells:
            if c.key in common:
                n = samples_at(c, t, min_samples, max_time)
                cost += c.seconds(n)
                samples[c.key] = max(samples.get(c.key, 0), round(n))
    return cost, samples


def _planned_launch_var(sides: Sequence[Components], common: set, own: set, t: float,
                        min_samples: int, max_time: float, own_cells: set = frozenset()
                        ) -> dict[object, float]:
    """{pool: the variance of one launch plan() meets}: pooled_launch_var, or in the
    pools whose sizes keep their own cell parts (own) own_launch_var; in the others, a
    cell of own_cells (flagged above the others, flagged_cells) that has its own part while
    the rest keep the pooled one: the larger of the pooled variance and its own."""
    pooled = pooled_launch_var(sides, common, t, min_samples, max_time)
    pooled.update({g: v for g, v in own_launch_var(sides, common, t, min_samples,
                                                   max_time).items() if g in own})
    flagged = own_launch_var(sides, common & own_cells, t, min_samples, max_time)
    pooled.update({g: max(pooled[g], v) for g, v in flagged.items()
                   if g not in own and g in pooled})
    return pooled


def plan_from_rows(rows: Sequence[Mapping], order: Sequence[str], margin: float, cap: int,
                   *, interleaved: bool = True, rounds: int | None = None,
                   targets: Iterable[float] = TARGETS,
                   max_times: Iterable[float] = MAX_TIMES,
                   keep_within: bool = False, partial: bool = False,
                   every_cell: bool = False, table: int | None = None,
                   every_beside: bool = False) -> Plan | None:
    """The plan `budget = "auto"` makes for a core group from its finished launches' rows
    (store.report_queries.launch_cost_rows): equivalence within ±margin, at most cap
    launches per variant (plan()'s max_launches). order: the campaign's variants, the
    first compare's baseline. interleaved: the campaign's launches are compared paired by
    round (order = "interleaved"), so the pools compare will pair are planned on the round
    differences (paired_spreads against the first variant present). rounds: the rounds
    per variant the campaign runs in all, the ones after the rows' count towards compare's
    pairing (paired_from_rows' more_rounds); None: the rows' own rounds only. targets,
    max_times: the options plan() may choose among (one of each: the launches per side at
    the options the launches already run at); keep_within: as plan()'s, for rows that all
    ran at those options; partial: plan()'s (a paired cell out of reach on its own is left
    out, Choice.beyond); every_cell: plan()'s (every cell decided whatever its gain; the
    campaigns' "auto" plans at gain 1), at the cell level of a table of `table` rows (None:
    the rows' cells; plan()'s rows); every_beside: with the every-cell plan's launches per
    side at the chosen options beside the plan (Plan.every_launches, which describe()
    prints; campaigns' budget = "auto" line, stop 41: one option pair on the same spreads,
    a fraction of the search). None when fewer than two variants have components, or no
    cell is common to them (plan()'s None)."""
    rows = alone_rows(rows)
    comps = components_from_rows(rows)
    sides = list(comps.values())
    if len(sides) < 2:
        return None
    compared = [v for v in order if v in comps]
    paired = None
    if interleaved:
        seen = len({r["repeat"] for r in rows if r.get("repeat") is not None})
        more = max(0, rounds - seen) if rounds is not None else 0
        paired = paired_spreads(rows, compared, more)
    # the pools planned unpaired, in the launch regimes compare splits them into: each
    # regime a pool of its own (its mean variance, its own gate and flags)
    regimes = unpaired_regimes(rows, compared, skip=set(paired or ()))
    sides = [Components(tuple(replace(c, pool=regimes.get(c.key)) for c in s.cells),
                        s.fixed_s, s.launches) for s in sides]
    tagged = [dict(r, benchmark=regimes[k]) if (k := (r["benchmark"], r["size"])) in regimes
              else r for r in rows]
    gated = gated_pools(tagged, compared)
    flagged = {(k[0][0], k[1]) if isinstance(k[0], tuple) else k
               for k in flagged_cells(tagged, compared, gated)}
    kw = dict(equivalence=True, max_launches=cap, paired=paired or None,
              keep_within=keep_within, own_pools=gated, own_cells=flagged, partial=partial,
              rows=table)
    made = plan(sides, margin, targets=targets, max_times=max_times, every_cell=every_cell,
                **kw)
    if made is None:        # no cell every variant has: nothing to plan
        return None
    if every_beside:
        b = made.best
        every = plan(sides, margin, targets=(b.target_pct,), max_times=(b.max_time,),
                     every_cell=True, **kw)
        made = replace(made, every_asked=True, every_launches=every.best.launches
                       if every is not None else None)
    return replace(made, preempted=sum(map(preempted.stopped, rows)),
                   skipped=sum(map(preempted.skipped, rows)))


def alone_rows(rows: Sequence[Mapping]) -> list[Mapping]:
    """The rows with each cell that has a launch the core cut short (stats.preempted
    .cut_launches: few clean samples, or a preempted skip) in a pool of its own (its rows' benchmark
    made (benchmark, size): pool_of then tells it apart), as compare tests it
    (stats.launch.compare_cells' cut)."""
    cut = preempted.cut_launches(rows)
    return [dict(r, benchmark=k) if (k := (r["benchmark"], r["size"])) in cut else r
            for r in rows]


def unpaired_regimes(rows: Iterable[Mapping], variants: Sequence[str],
                     skip: set = frozenset()) -> dict[object, object]:
    """{cell key: (benchmark, its launch regime's label)} for the benchmarks (pools not in
    skip: the paired ones) whose sizes compare's unpaired test splits into launch regimes
    (stats.launch._unpaired_regimes, on the baseline's and a candidate's launches, sizes
    ascending), each regime then tested as a block of its own; with several candidates
    the regimes every comparison keeps together (the common refinement of their splits).
    Benchmarks without a split are absent (planned as one pool)."""
    by = _medians_by(rows)
    labels: dict[object, tuple] = defaultdict(tuple)
    base = by.get(variants[0], {}) if variants else {}
    for cand in variants[1:]:
        other = by.get(cand, {})
        pools: dict[object, list] = defaultdict(list)
        for key in base.keys() & other.keys():
            if pool_of(key) not in skip:
                pools[pool_of(key)].append(key)
        for keys in pools.values():
            keys.sort(key=lambda k: k[1])        # compare's block: sizes ascending
            cells = [(base[k], other[k], "lower") for k in keys]
            for j, group in enumerate(launch_stats._unpaired_regimes(cells, None)):
                for i in group:
                    labels[keys[i]] += ((cand, j),)
    out: dict[object, object] = {}
    for g in {pool_of(k) for k in labels}:
        ks = [k for k in labels if pool_of(k) == g]
        if len({labels[k] for k in ks}) > 1:
            out.update({k: (g, labels[k]) for k in ks})
    return out


def cell_rounds(rows: Sequence[Mapping], order: Sequence[str], margin: float, *,
                confidence: float | None = PLAN_CONFIDENCE, alpha: float = 0.05,
                every_cell: bool = False) -> dict[object, int | None]:
    """{cell key: rounds per side that decide this cell alone, equivalence within ±margin
    at gain 1} of an interleaved campaign's rows, planned as plan_from_rows plans the
    paired test beyond THIN_LAUNCHES rounds at the options the rows ran at (keep_within):
    the round part the sizes of the cell's round regime share (PairedSpread.tested_on: the
    regimes compare splits, a noisy regime's quiet sizes on their own block beyond
    THIN_LAUNCHES rounds, PairedSpread.quiet; the larger of the block's and its run's where
    compare hedges, PairedSpread.hedges) plus the cell part compare tests the cell on (its own where
    the gate gives one, else the pooled one, alike for every size), each at its
    upper `confidence` bound, each TOST at alpha. The plan needs the largest of these; None: beyond
    SEARCH_MAX (out of reach), which keeps the whole plan out of reach. Empty when no
    pool pairs. A diagnostic of the spread alone, never of the gains: which cells a
    budget cannot reach. every_cell: the rounds that decide the cell whatever its gain
    (plan()'s every_cell, at the table's cell_level over these cells' rows)."""
    compared = [v for v in order if any(r.get("variant") == v for r in rows)]
    out: dict[object, int | None] = {}
    keys = {(r["benchmark"], r["size"]) for r in rows if r.get("variant") in compared}
    level = (cell_level(alpha, table_rows(keys, len(compared) - 1)) if every_cell
             else None)
    for g, pool in paired_spreads(rows, compared).items():
        for key in sorted((k for k in keys if pool_of(k) == g), key=lambda k: (str(k[0]), k[1])):
            out[key] = pool_cell_rounds(pool, key, margin, confidence, alpha,
                                        every_cell=level)
    return out


def pool_cell_rounds(pool: PairedSpread, key: object, margin: float,
                     confidence: float | None = PLAN_CONFIDENCE, alpha: float = 0.05, *,
                     equivalence: bool = True, max_n: int = SEARCH_MAX,
                     every_cell: float | None = None) -> int | None:
    """cell_rounds' rounds for one cell of a paired pool: the largest over the Spreads
    compare tests it on (its round regime's, or the block's and its hedge's run:
    PairedSpread.tested_on; _cell_round on each), at least THIN_LAUNCHES + 1; None when
    any is beyond max_n (equivalence=False: the difference test of a gain 1 + margin).
    The one rule the time-to-decision bench's what-ifs plan a cell by too."""
    ks = [_cell_round(ps, key, margin, confidence, alpha, equivalence=equivalence,
                      max_n=max_n, every_cell=every_cell)
          for ps, _keys in pool.tested_on([key])]
    if not ks or any(k is None or k > max_n for k in ks):
        return None
    return max(max(ks), launch_stats.THIN_LAUNCHES + 1)


def _cell_round(ps: PairedSpread, key: object, margin: float, confidence: float | None,
                alpha: float = 0.05, *, equivalence: bool = True,
                max_n: int = SEARCH_MAX, every_cell: float | None = None) -> int | None:
    """cell_rounds' rounds for one cell on one PairedSpread it is tested on (TOST at
    alpha within ±margin; equivalence=False: the difference test of a gain 1 + margin;
    every_cell: a cell level, decided whatever its gain), None beyond max_n."""
    own = {k: (v, df) for k, v, df in ps.cell_parts}
    sh, ce = _paired_parts(ps, None, confidence, own.get(key))
    return rounds_for(sh, ce, ps.cells, margin, alpha=alpha, equivalence=equivalence,
                      own_df=own[key][1] if key in own else None, pairs=ps.pairs,
                      max_n=max_n, every_cell=every_cell)


def _medians_by(rows: Iterable[Mapping]) -> dict[str, dict[object, dict[object, float]]]:
    """{variant: {cell key: {run_id: median}}} of the rows with a median (unpaired_regimes'
    and _pilot_pools' one grouping)."""
    by: dict[str, dict[object, dict[object, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if r.get("median"):
            by[r["variant"]][(r["benchmark"], r["size"])][r.get("run_id")] = r["median"]
    return by


def _pilot_pools(rows: Iterable[Mapping], variants: Sequence[str]):
    """(pool, baseline's {cell: {launch: median}}, the other variant's) for each variant
    after the first and each pool of FEW_CELLS or more cells both have."""
    by: dict[str, dict[object, dict[object, dict[object, float]]]] = {}
    for v, cells in _medians_by(rows).items():
        for key, launches in cells.items():
            by.setdefault(v, {}).setdefault(pool_of(key), {})[key] = launches
    for cand in variants[1:]:
        for g, cells in by.get(variants[0], {}).items():
            other = by.get(cand, {}).get(g)
            if other and len(cells) >= launch_stats.FEW_CELLS:
                yield g, cells, other


def gated_pools(rows: Iterable[Mapping], variants: Sequence[str]) -> set[object]:
    """The pools in which compare's unpaired test beyond THIN_LAUNCHES launches per side,
    baseline (the first variant) against some other variant, gives the sizes their own
    cell parts: the one gate of stats.launch.gated_spreads opens, asked without its
    THIN_LAUNCHES rule (at a 2-3-launch pilot that rule gave every pool own parts,
    although compare at the planned launches gates them; below FEW_CELLS sizes they
    always have them, and at most THIN_LAUNCHES launches every pool: own_part_pools)."""
    out: set[object] = set()
    for g, cells, other in _pilot_pools(rows, variants):
        if g not in out and any(
                sp is not None and sp.cell_parts
                for sp in launch_stats.gated_spreads([_by_size(cells), _by_size(other)],
                                                     thin=False, ordered=True)):
            out.add(g)
    return out


def _by_size(cells: Mapping[object, Mapping]) -> dict[object, Mapping]:
    """A pool's {cell key (benchmark, size): launches} in size order, as compare_cells
    orders an unpaired block given sizes (stats.launch._size_order), so gated_pools asks
    compare's gate with its trend (a spread that grows with size opens it: review R15 of
    stop 34, where the flat rule disagreed with compare's in 56 of 200 ramp pilots)."""
    return dict(sorted(cells.items(), key=lambda kv: kv[0][1]))  # as plan's blocks sort


def flagged_cells(rows: Iterable[Mapping], variants: Sequence[str],
                  gated: set[object] | None = None) -> set[object]:
    """The cells (benchmark, size) to which compare's unpaired test beyond THIN_LAUNCHES
    launches per side gives their own part although the gate stays shut: a size above the
    others (stats.launch.flagged_cells), asked of a pilot with more than THIN_LAUNCHES
    launches on both sides (on 1-2 df per size the flag marks a quiet size in most pools
    and the plan would meet its chance-high estimate). plan() meets such a cell's own
    launch variance where it is above the pool's pooled one (_planned_launch_var).
    gated: gated_pools(rows, variants) where the caller has it (asked once per plan)."""
    rows = list(rows)
    if gated is None:
        gated = gated_pools(rows, variants)
    out: set[object] = set()
    for g, cells, other in _pilot_pools(rows, variants):
        if g in gated or min(_launches(cells), _launches(other)) <= launch_stats.THIN_LAUNCHES:
            continue
        out |= launch_stats.flagged_cells([cells, other])
    return out


def _launches(cells: Mapping[object, Mapping[object, float]]) -> int:
    return len({k for by in cells.values() for k in by})


def _best(tried: Sequence[Choice], max_launches: int) -> Choice:
    """plan()'s choice among the pairs tried: the least launch time to a decision within
    max_launches; else (nothing decides within the cap) the least launch time to a
    decision beyond it (launches up to SEARCH_MAX), and where none decides even there the
    least launch time per unit of precision (launch_var x launch_s: at a fixed launch
    time, the variance of the mean over launches is proportional to it). Beyond the cap
    this is the same criterion as within it: launches needed scale with the variance, so
    the least time to any decision is the least variance x seconds. (It used to take the
    cheapest of the most precise pairs, within PRECISION_SLACK: at the bench's 2-round
    pilot that bought launches of 0.21 s instead of 0.14 s for a variance at most 10%
    smaller.) With plan(partial=True) the pairs that leave fewer cells out of reach
    (Choice.beyond) come first."""
    feasible = [c for c in tried if c.launches is not None and c.launches <= max_launches]
    if feasible:
        return min(feasible, key=lambda c: (len(c.beyond), c.total_s, -c.target_pct,
                                            -c.max_time))
    beyond = [c for c in tried if c.launches is not None]
    if beyond:
        return min(beyond, key=lambda c: (len(c.beyond), c.total_s, -c.target_pct,
                                          -c.max_time))
    return min(tried, key=lambda c: (c.launch_var * c.launch_s, -c.target_pct, -c.max_time))


def cell_within(sides: Sequence[Components], keys: Iterable[object], target_pct: float,
                min_samples: int = CORE_MIN_SAMPLES,
                max_time: float = CORE_DEFAULT_MAX_TIME) -> dict[object, float]:
    """{cell key: the within-launch variance of one round's difference in that cell,
    B_b/n_b + B_c/n_c at these options}: twice the mean over the sides that have it (the
    plan averages it over each round regime's own cells, _launches_in_view)."""
    mean = _pool_mean(sides, keys, lambda c: c.within_b / max(
        samples_at(c, target_pct, min_samples, max_time), 1.0), group=lambda c: c.key)
    return {k: 2 * v for k, v in mean.items()}


def _paired_cells(ps: PairedSpread, within: float | None, confidence: float | None,
                  keys: Iterable[object], thin: bool = False
                  ) -> list[tuple[frozenset, float, float, float | None]]:
    """What each cell of a paired pool is planned on, as compare's paired test will test
    it (thin: at most THIN_LAUNCHES rounds, ps.thin_parts; else beyond, ps.cell_parts):
    (the cells, shared, cell, own_df) with the pooled cell part (own_df None) for every
    cell of keys where the sizes take it, else one row per cell in keys with its own part
    at its df (own_df); each as _paired_parts."""
    parts = ps.thin_parts if thin else ps.cell_parts
    keys = set(keys)
    if not parts:
        return [(frozenset(keys), *_paired_parts(ps, within, confidence), None)]
    return [(frozenset([key]), *_paired_parts(ps, within, confidence, (v, df)), df)
            for key, v, df in parts if key in keys]


def _paired_parts(ps: PairedSpread, within: float | None, confidence: float | None,
                  own: tuple[float, float] | None = None) -> tuple[float, float]:
    """The paired test's two components of one round's d at the plan's options: each at
    its upper confidence bound over its df, the pilot's within-launch part (in both, as
    1/S and (S-1)/S of it) replaced by `within` (None: kept; plan's keep_within, for rows
    whose launches all ran at the one pair of options planned: their variance of d is
    already the one at those options, and the model's within part, B/n from the median B,
    can be far below the mean of few-sample launches' CIs, which clipped both components
    to 0 and planned 3 rounds). own: (a cell's own part, its df) in place of the pooled
    cell part (the within-launch change enters it as the pooled part's (S-1)/S share: the
    plan's within part is its regime's mean, not each size's)."""
    sh, ce = ps.parts()
    sh *= upper_factor(ps.df_launch, confidence)
    ce = (ce * upper_factor(ps.df_cell, confidence) if own is None
          else own[0] * upper_factor(own[1], confidence))
    if within is not None:
        s = max(ps.cells, 1.0)
        delta = within - ps.within
        sh, ce = max(sh + delta / s, 0.0), max(ce + delta * (s - 1) / s, 0.0)
    return sh, ce


def components_from_rows(rows: Iterable[Mapping], min_sigma_l2: float = 0.0
                         ) -> dict[str, Components]:
    """{variant: Components} from a store's result rows of finished core launches (dicts
    with run_id, variant, benchmark, size, n, median, ci_low, ci_high, cell_s = the
    core's seconds on the cell, launch_s = the launch's elapsed seconds).

    Per cell and variant: sigma_L^2 = the variance of the log medians over launches less
    the mean within-launch variance (floored at min_sigma_l2: a spread that the within
    part explains entirely is not evidence of no launch effect); B = the median over
    launches of se_w^2 x n, guarded against one wild launch by the benchmark's median over
    all its cells and launches (`_robust_within`), and the mean within-launch variance
    is that B over each launch's n, so one launch's wild CI (a stalled sample) cannot
    inflate B nor zero sigma_L^2; c1 = the median of cell_s / n. c0 per launch = launch_s
    less the sum of its cells' seconds, the median over launches. Cells with fewer than
    two launches or without a CI are left out."""
    per: dict[str, dict[tuple, list[Mapping]]] = defaultdict(lambda: defaultdict(list))
    launch_total: dict[str, float] = {}
    launch_cells: dict[str, float] = defaultdict(float)
    launch_variant: dict[str, str] = {}
    for r in rows:
        rid = r["run_id"]
        launch_variant[rid] = r["variant"]
        if r.get("launch_s") is not None:
            launch_total[rid] = float(r["launch_s"])
        if r.get("cell_s") is not None and r.get("status") != "skipped":
            launch_cells[rid] += float(r["cell_s"])
        per[r["variant"]][(r["benchmark"], r["size"])].append(r)
    out: dict[str, Components] = {}
    b_of = guarded_b(r for rs in per.values() for cell in rs.values() for r in cell)
    for variant, cells in per.items():
        costs = []
        for key, rs in sorted(cells.items(), key=lambda kv: str(kv[0])):
            cost = _cell_cost(key, rs, b_of.get((variant, key)), min_sigma_l2)
            if cost is not None:
                costs.append(cost)
                # a skipped launch's seconds on a priced cell are in its preempt_s; on a
                # cell without a price they stay in the launch's fixed part
                for r in rs:
                    if preempted.skipped(r) and r.get("cell_s") is not None:
                        launch_cells[r["run_id"]] += float(r["cell_s"])
        fixed = [launch_total[rid] - launch_cells.get(rid, 0.0)
                 for rid, v in launch_variant.items() if v == variant and rid in launch_total]
        out[variant] = Components(tuple(costs), max(_median(fixed), 0.0) if fixed else 0.0,
                                  len({r["run_id"] for rs in cells.values() for r in rs}))
    return out


def _cell_cost(key: object, rs: Sequence[Mapping], b: float | None, min_sigma_l2: float
               ) -> CellCost | None:
    """components_from_rows' CellCost of one cell and variant from its rows; None with
    fewer than two launch values or no CI. The seconds per sample come from the launches
    that ran to their stopping rule (all of them when every one was cut short); the ones
    that waited at the cap (stats.preempted.waited_at_cap, preempted skips included; not
    a fixed-count launch's) price the cap: their share and mean seconds."""
    logs, ns, per_sample, cut = [], [], [], []
    for r in rs:
        med, n = r.get("median"), r.get("n")
        at_cap = preempted.waited_at_cap(r)
        if at_cap and r.get("cell_s") is not None:
            cut.append(float(r["cell_s"]))
        if not med or med <= 0 or not n:
            continue
        logs.append(math.log(med))
        if _within_b(r) is not None:
            ns.append(n)
        if r.get("cell_s"):
            per_sample.append((at_cap, float(r["cell_s"]) / n))
    if len(logs) < 2 or not ns or b is None:
        return None
    mean = sum(logs) / len(logs)
    var = sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)
    mean_w = sum(b / n for n in ns) / len(ns)
    full = [x for c, x in per_sample if not c] or [x for _c, x in per_sample]
    return CellCost(key, max(var - mean_w, min_sigma_l2), b, _median(full) if full else 0.0,
                    preempt_share=len(cut) / len(rs), preempt_s=sum(cut) / len(cut) if cut
                    else 0.0)


def guarded_b(rows: Iterable[Mapping]) -> dict[tuple, float]:
    """{(variant, cell key): the cell's B} from result rows with a usable CI: the median
    over its launches of se_w^2 n, guarded by `_robust_within` against the variant's
    benchmark's median over all its cells and launches. The one B both the unpaired
    (components_from_rows) and the paired (paired_from_rows) plan read."""
    cell: dict[tuple, list[float]] = defaultdict(list)
    bench: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        b = _within_b(r)
        if b is not None:
            cell[(r["variant"], (r["benchmark"], r["size"]))].append(b)
            bench[(r["variant"], r["benchmark"])].append(b)
    medians = {k: _median(bs) for k, bs in bench.items()}   # once per benchmark, not per cell
    return {(v, key): _robust_within(bs, medians.get((v, key[0]))) for (v, key), bs in cell.items()}


def _within_b(r: Mapping) -> float | None:
    """B = se_w^2 n of one result row, se_w from its CI (half-width in logs / 1.96); None
    without a usable CI (or median, or n). The one place the plan reads a CI."""
    med, lo, hi, n = r.get("median"), r.get("ci_low"), r.get("ci_high"), r.get("n")
    if not med or med <= 0 or not n or not (lo and hi and lo > 0 and hi > lo):
        return None
    se = (math.log(hi) - math.log(lo)) / (2 * Z95)
    return se * se * n


WILD_WITHIN = 10.0
"""How far above its benchmark's median B (over all its cells and launches) a cell's
median over launches may sit before `_robust_within` guards it against one wild launch."""


def _robust_within(cell: Sequence[float], m: float | None,
                   wild: float = WILD_WITHIN) -> float:
    """A cell's B from its launches' values `cell` and the median M (`m`) of the values of
    every cell and launch of its benchmark (None when it has none): the median over the
    cell's launches, unless that exceeds `wild` x M; then the median of the cell's values and M as one
    more value. From a 2-launch pilot that is the larger of the lower launch and M: one
    launch whose CI reached a stalled sample (B 100x the others) no longer gives half its
    value, and a size that is noisier in both launches keeps (about) its own B (the lower
    of its two). Only ever lowers B, and only where the cell is far above its benchmark;
    with more launches the extra value weighs less (a median of k + 1)."""
    own = _median(cell)
    if m is None:
        return own
    return _median([*cell, m]) if own > wild * m else own


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
