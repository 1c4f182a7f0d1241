"""Launches where they decide: a group-sequential rule over the cells of a comparison.

A cell (one benchmark at one size, candidate vs baseline) is DECIDED when it is significant
in the family of the comparison table the report prints of these cells (its cells, geomean
rows and verdicts, adjusted by the report's own procedure, stats.multiplicity.adjust_table:
`table_p`) at the look's level, or equivalent within the margin (TOST). One function, so
the decision a look takes is the one the table prints for that cell (report/judge.py prints
the rule's decision for the cells it took). More interleaved launches go only to what is
still undecided, until everything is decided or the design's maximum is reached.

    from mpibench.stats.sequential import Design, decide

    design = Design(min=3, max=12, step=3, alpha=0.05, margin=0.05)
    look = decide({("PingPong", 0): (base_values, cand_values),      # launch values per
                   ("PingPong", 1024): (base2, cand2, "lower")},      # side (list or
                  design)                                             # {launch id: value})
    look.cells[("PingPong", 0)].status    # Status.SIGNIFICANT / EQUIVALENT / UNDECIDED
    look.next_launches                     # launches per side at the next look, or None
    look.cells[key].next_launches          # per cell: the same, or None when decided

The rule (docs/statistics.md "Launches where they decide"). Looks are at n = min, min + step,
..., max launches per side. The tests at a look are compare's own (stats.launch
.compare_cells: the hierarchical model pooled over a benchmark's sizes, Cochran-Cox critical
values, TOST with the same components). The levels are spent as in Haybittle and Peto's
design: each interim look (n < max) tests at a small level, `interim` = alpha x
INTERIM_SHARE / (interim looks), for both the significance test (the table's adjusted p)
and TOST; the final look tests at alpha, the level the report uses. So a cell decided early is
decided at a level far below alpha, the report's analysis of the final launches stays the
ordinary one (its p and CI), and the false-positive rate is at most alpha + alpha x
INTERIM_SHARE (union bound; 5% + 1 point at alpha 0.05), in simulation at alpha.
A decision is final: a cell decided at a look keeps its status at later looks (its launches
may still grow when it shares launches with undecided cells).

Why not stop on a narrow CI: that selects launches whose spread was underestimated
(campaign/auto_repeats.py's history: 48-64% coverage when it stopped at the minimum). Here
an interim stop needs a decision at a strict level, which a spread that happened to be small
rarely makes on its own; `simulate` checks the false positives, the coverage of the reported
(final) CI among the cells that stopped early, and the launches spent against a fixed design.

Pure functions: no store, no processes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

import numpy as np

from mpibench.stats import launch as launch_stats

# the share of alpha the interim looks spend between them (Haybittle-Peto: small, so the
# final look, at alpha, is the report's ordinary test)
INTERIM_SHARE = 0.2
DEFAULT_MIN, DEFAULT_MAX, DEFAULT_STEP = 3, 12, 3


class Status(StrEnum):
    SIGNIFICANT = "significant"        # decided: a difference, after Holm over the family
    EQUIVALENT = "equivalent"          # decided: within ±margin (TOST)
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Design:
    """Looks at min, min + step, ..., max launches per side; alpha for the family (the
    final look's level); margin the equivalence margin (0.05 = ±5%, log-symmetric), None:
    only a significant difference decides a cell."""
    min: int = DEFAULT_MIN
    max: int = DEFAULT_MAX
    step: int = DEFAULT_STEP
    alpha: float = 0.05
    margin: float | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.min <= self.max or self.step < 1:
            raise ValueError("Design: 2 <= min <= max and step >= 1")
        if not 0 < self.alpha < 1 or (self.margin is not None and not 0 < self.margin < 1):
            raise ValueError("Design: 0 < alpha < 1 and 0 < margin < 1")

    def looks(self) -> list[int]:
        """Launches per side at each look (the last is max)."""
        out = list(range(self.min, self.max, self.step))
        return out + [self.max]

    def level(self, n: int) -> float:
        """The level of both tests at a look with n launches per side."""
        interim = len(self.looks()) - 1
        if n >= self.max or interim == 0:
            return self.alpha
        return self.alpha * INTERIM_SHARE / interim

    def next_look(self, n: int) -> int | None:
        return next((k for k in self.looks() if k > n), None)

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "step": self.step, "alpha": self.alpha,
                "margin": self.margin}


class CellStatus(NamedTuple):
    status: Status
    look: int                      # launches per side of the look that decided it (or this look)
    p_holm: float | None           # adjusted p at that look (the table's family: adjust_table)
    tost: float | None             # TOST p at that look
    gain: float | None
    reason: str                    # one line for people: why decided, or why not yet
    next_launches: int | None = None   # launches per side at the next look; None: no more
    # the gain's CI the table prints for the cell: at 1 - level x p / p_holm (the Holm
    # level of the table's procedure at the look's level); it excludes 1 exactly when the
    # cell is significant at that look and is at least as wide as the repeated CI at the
    # look's level (1 - level), which keeps its coverage after a data-dependent stop
    ci_low: float | None = None
    ci_high: float | None = None
    level: float | None = None     # the level of the look that decided it (or this look)
    p: float | None = None         # the cell's own p at that look
    decides: bool = True           # False: in the table's family, not needed to stop
    test: Any = None               # the stats.launch.LaunchTest at that look

    @property
    def decided(self) -> bool:
        return self.status is not Status.UNDECIDED

    @property
    def ci_level(self) -> float | None:
        """The confidence level of (ci_low, ci_high)."""
        if self.level is None or self.p is None or self.p_holm is None:
            return None
        return 1.0 - self.level * (min(1.0, self.p / self.p_holm) if self.p_holm > 0 else 1.0)

    def sequential_p(self, alpha: float) -> float | None:
        """The adjusted p on the scale of the table's alpha: p_holm x alpha / level (the
        look's level), capped at 1, so `<= alpha` is the decision the look took. At the last
        look (level alpha) it is p_holm itself."""
        if self.p_holm is None or self.level is None:
            return self.p_holm
        return min(1.0, self.p_holm * alpha / self.level)


@dataclass
class Look:
    n: int                                   # launches per side this look asked for
    level: float
    final: bool
    cells: dict[Hashable, CellStatus] = field(default_factory=dict)

    @property
    def undecided(self) -> list[Hashable]:
        """The cells the rule still needs (a cell that is only in the family, decides
        False, never holds launches back)."""
        return [k for k, c in self.cells.items() if not c.decided and c.decides]

    @property
    def next_launches(self) -> int | None:
        """Launches per side at the next look, when any cell is undecided and there is one."""
        return next((c.next_launches for c in self.cells.values()
                     if c.next_launches is not None), None)


def default_pool_key(key: Hashable) -> Hashable:
    """The cells pooled together (one benchmark's sizes): a report CellKey without its size,
    a tuple without its last element, else every cell alone."""
    if hasattr(key, "_replace") and hasattr(key, "size"):
        return key._replace(size=None)
    if isinstance(key, tuple) and len(key) > 1:
        return key[:-1]
    return (key,)


def cell_size(key: Hashable) -> object:
    """The size default_pool_key takes off a key (the order of a paired block's round
    regimes, compare_cells' sizes): a CellKey's size, a tuple's last element, else None."""
    if hasattr(key, "_replace") and hasattr(key, "size"):
        return key.size
    return key[-1] if isinstance(key, tuple) and len(key) > 1 else None


def _no_candidate(key: Hashable) -> Hashable:
    return None


def _always(key: Hashable) -> bool:
    return True


@dataclass(frozen=True)
class TableShape:
    """How a look's cells make the table the report prints, so that the rule decides in
    the report's own family (stats.multiplicity.adjust_table): candidate(key) the column
    (one verdict per candidate); summary(key) the geomean row the cell belongs to (None:
    none; a geomean row is in the family when it has more than one cell); verdict(key)
    whether the cell is in its candidate's overall test; decides(key) whether the rule
    needs the cell decided to stop (False: it is only in the family, e.g. an
    application's wall time beside its figure of merit). Defaults: one candidate, a
    geomean row per pool (default_pool_key), every cell in the verdict and deciding."""
    candidate: Callable[[Hashable], Hashable] = _no_candidate
    summary: Callable[[Hashable], Hashable | None] = default_pool_key
    verdict: Callable[[Hashable], bool] = _always
    decides: Callable[[Hashable], bool] = _always


def _side(values) -> dict:
    if isinstance(values, Mapping):
        return dict(values)
    return {i: v for i, v in enumerate(values)}


def _first(values, n: int, rounds: Mapping[Hashable, int] | None = None) -> dict:
    """The launches of a side a look at n sees: with `rounds` ({launch id: its round,
    0-based}: the campaign's repeat index), those of the first n rounds, so a failed launch
    never lets a later round's launch into an earlier look; else the first n (a list in
    launch order, or {launch id: value} in insertion order)."""
    d = _side(values)
    if rounds is not None:
        return {k: v for k, v in d.items() if rounds.get(k, n) < n}
    return dict(list(d.items())[:n])


def _sides(cells: Mapping[Hashable, Sequence], n: int | None,
           rounds: Mapping[Hashable, int] | None = None) -> dict[Hashable, tuple]:
    out = {}
    for k, spec in cells.items():
        better = spec[2] if len(spec) > 2 else "lower"
        b, c = (_side(spec[0]), _side(spec[1])) if n is None else \
            (_first(spec[0], n, rounds), _first(spec[1], n, rounds))
        out[k] = (b, c, better)
    return out


def test_cells(cells: Mapping[Hashable, Sequence], *, n: int | None = None,
               pool_key: Callable[[Hashable], Hashable] = default_pool_key,
               margin: float | None = None, rounds: Mapping[Hashable, int] | None = None,
               pairs: Mapping[Hashable, Hashable] | None = None,
               cut: Mapping[Hashable, Collection[Hashable]] | None = None
               ) -> dict[Hashable, tuple[launch_stats.LaunchTest, float | None]]:
    """{key: (the launch test, its TOST p or None)} on the first n launches (rounds) of
    each side (all when n is None), the cells of one pool tested together (compare_cells;
    pairs: its round keys, {launch id: round key}; cut: {key: its launches the core cut
    short}, those the look sees (seen_cut) passed as compare_cells' cut)."""
    return _test_sides(_sides(cells, n, rounds), pool_key, margin, pairs,
                       seen_cut(cut, n, rounds))


def seen_cut(cut: Mapping[Hashable, Collection[Hashable]] | None, n: int | None,
             rounds: Mapping[Hashable, int] | None) -> dict[Hashable, set]:
    """The cut-short launches ({key: launch ids}) a look at n sees: with `rounds` ({launch
    id: round, 0-based}) those of its first n rounds, as _first takes the launches (one of
    round n or later, or of no known round, is not seen: a launch cut short in a later
    round never rewrites an earlier look's test); without rounds or n, all of them."""
    if not cut:
        return {}
    if n is None or rounds is None:
        return {k: set(ids) for k, ids in cut.items()}
    return {k: {i for i in ids if rounds.get(i, n) < n} for k, ids in cut.items()}


def _test_sides(sides: Mapping[Hashable, tuple], pool_key, margin, pairs=None,
                cut: Mapping[Hashable, set] | None = None):
    pools: dict[Hashable, list[Hashable]] = {}
    for key in sides:
        pools.setdefault(pool_key(key), []).append(key)
    out = {}
    for keys in pools.values():
        tests = launch_stats.compare_cells([sides[k] for k in keys], rounds=pairs,
                                           sizes=[cell_size(k) for k in keys],
                                           cut=[cut.get(k, ()) for k in keys] if cut
                                           else None)
        for k, t in zip(keys, tests, strict=True):
            out[k] = (t, t.tost(margin) if margin and t.tested else None)
    return out


def table_p(sides: Mapping[Hashable, tuple], tests: Mapping[Hashable, Any],
            shape: TableShape, pool_key: Callable[[Hashable], Hashable],
            rejected: Callable[[Hashable], bool] = lambda k: False,
            pairs: Mapping[Hashable, Hashable] | None = None
            ) -> dict[Hashable, float | None]:
    """{cell key: its adjusted p in the table's family}: the cells (tests, pooled by
    pool_key), the geomean rows and each candidate's verdict (launch_stats.aggregate over
    the cells' launches, as the report's), by stats.multiplicity.adjust_table, the one
    procedure the report prints. rejected(key): decided significant at an earlier look.
    pairs: the launches' round keys (compare_cells), for the aggregates too."""
    from mpibench.stats import multiplicity as mt

    keys = list(tests)
    hyps = [mt.Hypothesis("cell", tests[k], shape.candidate(k), pool_key(k), rejected(k))
            for k in keys]
    geo: dict[tuple, list[Hashable]] = {}
    verdict: dict[Hashable, list[Hashable]] = {}
    for k in keys:
        if tests[k].gain is None:
            continue
        c = shape.candidate(k)
        sk = shape.summary(k)
        if sk is not None:
            geo.setdefault((c, sk), []).append(k)
        if shape.verdict(k):
            verdict.setdefault(c, []).append(k)
    def agg(ks):
        return launch_stats.aggregate([sides[k] for k in ks], rounds=pairs)
    hyps += [mt.Hypothesis("geomean", agg(ks), c) for (c, _sk), ks in geo.items()
             if len(ks) > 1]
    hyps += [mt.Hypothesis("verdict", agg(ks), c) for c, ks in verdict.items()]
    adj, _family = mt.adjust_table(hyps)
    return dict(zip(keys, adj[:len(keys)], strict=True))


def decide(cells: Mapping[Hashable, Sequence], design: Design, *, n: int | None = None,
           previous: Mapping[Hashable, CellStatus] | None = None,
           pool_key: Callable[[Hashable], Hashable] = default_pool_key,
           shape: TableShape = TableShape(),
           rounds: Mapping[Hashable, int] | None = None,
           pairs: Mapping[Hashable, Hashable] | None = None,
           cut: Mapping[Hashable, Collection[Hashable]] | None = None) -> Look:
    """One look of the rule.

    cells: {key: (baseline launch values, candidate launch values[, better])}: lists in
    launch order or {launch id: value} (a launch id shared by the cells one launch
    measured); better 'lower' (default, times) or 'higher' (rates). Keys can carry anything
    (a candidate's name, a parameter point); pool_key(key) says which cells share launches
    and are pooled (default_pool_key: a tuple's all-but-last element, e.g. (benchmark,
    size) -> benchmark). The family is the table the report prints of these cells (shape:
    their candidates, geomean rows and verdicts), adjusted by the report's own procedure
    (table_p: stats.multiplicity.adjust_table) and decided at the look's level.
    n: the look (launches per side used: the first n of each side, or of the first n
    rounds with `rounds`); None = the largest look reached by the smallest side.
    previous: the statuses of the last look; decided cells keep theirs (and a significant
    one stays rejected in the family, passing its share of alpha on).
    pairs: {launch id: round key} of launches run in a round of an interleaved campaign
    (stats.launch.compare_cells pairs a block by round where it has enough pairs among
    the launches this look sees; the report passes the same keys, so both test alike).
    cut: {key: its launches the core cut short (stats.preempted.cut_short)}: a cell with
    one among the rounds this look sees (seen_cut) is tested on its own launches
    (stats.launch.compare_cells' cut), as the report tests it.

    Returns a Look: per cell its Status, the adjusted p and TOST p at this look, a
    reason, and next_launches (the next look's launches per side for an undecided cell
    before the maximum; None when decided or at the maximum)."""
    if n is None:
        have = min((min(len(_side(s[0])), len(_side(s[1]))) for s in cells.values()),
                   default=0)
        n = max([k for k in design.looks() if k <= have], default=design.min)
    final = n >= design.max
    level = design.level(n)
    prev = previous or {}
    sides = _sides(cells, n, rounds)
    tests = _test_sides(sides, pool_key, design.margin, pairs, seen_cut(cut, n, rounds))
    keys = list(tests)
    adj = table_p(sides, {k: tests[k][0] for k in keys}, shape, pool_key,
                  lambda k: k in prev and prev[k].status is Status.SIGNIFICANT, pairs)
    nxt = design.next_look(n)
    look = Look(n, level, final)
    for k in keys:
        t, tost = tests[k]
        ph = adj[k]
        old = prev.get(k)
        if old is not None and old.decided:
            look.cells[k] = old._replace(next_launches=None)
            continue
        if ph is not None and ph <= level:
            st, why = Status.SIGNIFICANT, (f"significant at {n} launches per side (adjusted "
                                           f"p {ph:.2g} <= {level:.2g})")
        elif tost is not None and tost <= level:
            st, why = Status.EQUIVALENT, (f"equivalent within ±{100 * design.margin:g}% at "
                                          f"{n} launches per side (TOST p {tost:.2g} <= "
                                          f"{level:.2g})")
        else:
            st = Status.UNDECIDED
            if not t.tested:
                why = f"not testable at {n} launches per side ({t.reason})"
            else:
                bits = [f"adjusted p {ph:.2g} > {level:.2g}"]
                if design.margin:
                    bits.append(f"TOST p {tost:.2g} > {level:.2g}" if tost is not None
                                else "no TOST")
                why = (("undecided after the maximum of " if final else "undecided at ")
                       + f"{n} launches per side (" + ", ".join(bits) + ")")
        lo = hi = None
        if t.tested and ph is not None and t.p is not None:
            a = level * (min(1.0, t.p / ph) if ph > 0 else 1.0)
            lo, hi = t.ci_at(1.0 - max(a, 1e-12))
        dec = shape.decides(k)
        look.cells[k] = CellStatus(st, n, ph, tost, t.gain, why,
                                   None if st is not Status.UNDECIDED or final or not dec
                                   else nxt, lo, hi, level, t.p if t.tested else None, dec, t)
    return look


def run_looks(cells: Mapping[Hashable, Sequence], design: Design, *,
              pool_key: Callable[[Hashable], Hashable] = default_pool_key,
              upto: int | None = None, shape: TableShape = TableShape(),
              rounds: Mapping[Hashable, int] | None = None,
              pairs: Mapping[Hashable, Hashable] | None = None,
              cut: Mapping[Hashable, Collection[Hashable]] | None = None
              ) -> list[Look]:
    """Every look the data reach (each on the first n launches, or rounds, of each side; a
    cell that got no more launches is looked at on what it has), decisions carried
    forward: what the campaign replays to say where each cell stands. upto: stop at this
    many launches per side. rounds ({launch id: round, 0-based}): look n is reached when
    any launch of round n - 1 or later exists (a launch that failed on one side does not
    hide a look); without it, when a cell has n launches on both sides. The looks end
    when every cell is decided. cut: {key: its launches the core cut short}; each look
    tests alone the cells with one among the rounds IT sees (decide)."""
    if rounds is not None:
        have = max((rounds.get(k, -1) + 1 for s in cells.values() for side in s[:2]
                    for k in _side(side)), default=0)
    else:
        have = max((min(len(_side(s[0])), len(_side(s[1]))) for s in cells.values()),
                   default=0)
    if upto is not None:
        have = min(have, upto)
    looks: list[Look] = []
    prev: dict = {}
    for n in design.looks():
        if n > have:
            break
        lk = decide(cells, design, n=n, previous=prev, pool_key=pool_key, shape=shape,
                    rounds=rounds, pairs=pairs, cut=cut)
        looks.append(lk)
        prev = lk.cells
        if not lk.undecided:
            break
    return looks


def printed_ci_alpha(p: float, p_adj: float, alpha: float,
                     look_level: float | None = None) -> tuple[float, bool]:
    """(a, widened): the printed gain CI of a comparison row is at 1 - a. Without a
    sequential design a is the row's Holm level, alpha p / p_adj (at most alpha): the CI
    excludes 1 exactly when p_adj <= alpha. For a row whose launches stopped at an interim
    look of `repeats = "decide"` (look_level: that look's level), a is the smaller of the
    two (the wider CI): the repeated CI at the look's level keeps its coverage after a
    data-dependent stop, the plain or Holm-level CI does not (winner's curse; docs/
    statistics.md). It still never contradicts the row's decision: a row not significant
    has a Holm CI that contains 1, and a wider one does too; a significant row
    is widened only when its p <= look_level (what the rule needed to stop on it), so the
    wider CI still excludes 1. A significant row with p > look_level (its group stopped on
    other grounds, e.g. equivalence, whose plain CI keeps its coverage) keeps the Holm
    level. widened: the look's level was used."""
    a = alpha * (p / p_adj if p_adj > 0 else 1.0)
    a = max(min(a, alpha), 1e-12)
    if look_level is None or look_level >= a:
        return a, False
    if p_adj <= alpha and p > look_level:
        return a, False
    return max(look_level, 1e-12), True


# ---------------------------------------------------------------------------------------
# Simulation (bench/bench_inference.py, tests): groups of cells sharing launches

def simulate(rng: np.random.Generator, reps: int, design: Design, *,
             groups: Sequence[float] = (0.0, 0.0, 0.0, 0.0), sizes: int = 5,
             sigma_l: float = 0.05, size_part: float = 0.5, shared: float = 1.0,
             rounds: str = "none", round_sd: float = 0.0, paired: bool = False,
             round_upto: int | None = None) -> dict[str, float]:
    """Campaigns of len(groups) groups (a benchmark each, `sizes` cells measured by every
    launch), baseline vs candidate, the candidate's true log gain per group in `groups`
    (0 = A/A). Launch logs: a launch effect shared by the group's sizes (sd shared x
    sigma_l) plus a size-specific part (size_part x sigma_l). Each group gets launches
    while any of its cells is undecided (what a campaign can do: one launch measures
    every size of its group). Reported as the report would: the rule's decision where it
    took one (with its CI), else the final launches of each group in the table's family
    at alpha (table_p, the rule's significant cells kept rejected).

    Returns rates over cells/campaigns: decided significant (per A/A cell), family-wise
    (any A/A cell decided significant, or significant in the final report), equivalent,
    undecided at the maximum, coverage of the final 95% CI overall and among the cells
    whose group stopped before the maximum, launches per side per group (mean) against
    the fixed design's max, and for cells with a real difference the share decided
    significant; `fixed_decided` the share the fixed design (max launches, one look at
    alpha) decides.

    rounds/round_sd: a round effect both launches of a group's round share
    (stats.simulate.round_offsets: "normal", "two-mode"); paired: the launches carry
    their round keys (an interleaved campaign), so the rule and the report test them
    paired by round (stats.launch.pair_rounds), as the campaign's would; round_upto: the
    round effect at that many of the smallest sizes only (_sim_data)."""
    tot = dict.fromkeys(_SIM_COUNTS, 0)
    for _ in range(reps):
        data = _sim_data(rng, design, groups, sizes, sigma_l, size_part, shared, rounds,
                         round_sd, round_upto)
        if paired:
            data = [(_keyed(a, "a", g), _keyed(b, "b", g)) for g, (a, b) in enumerate(data)]
        n_of, prev = _sim_campaign(data, design, sizes)
        tot["fixed_decided"] += _sim_fixed_decided(data, design, sizes)
        fam, fam_rep = _sim_report(data, n_of, prev, groups, design, sizes, tot)
        tot["fam"] += fam
        tot["fam_rep"] += fam_rep
        tot["launches"] += sum(n_of)
    return _sim_rates(tot, reps, len(groups), design)


# the counters simulate() sums over its campaigns (_sim_report, _sim_tally_cell)
_SIM_COUNTS = ("aa_cells", "aa_sig", "aa_rep_sig", "fam", "fam_rep", "eq", "und", "cells",
               "cover", "early_cells", "early_cover", "launches", "real_cells", "real_sig",
               "real_eq", "fixed_decided", "early_rci", "early_printed", "early_sig",
               "early_sig_cover", "early_sig_printed")


def _sim_data(rng: np.random.Generator, design: Design, groups: Sequence[float], sizes: int,
              sigma_l: float, size_part: float, shared: float, rounds: str = "none",
              round_sd: float = 0.0, round_upto: int | None = None) -> list[tuple]:
    """One campaign's launch values: per group (baseline, candidate), each design.max
    launches x sizes (times: lower is better); with a round model, each round's offsets
    (stats.simulate.round_offsets) added to both sides' launches of that round, at the
    round_upto smallest sizes only where given (sizes that do not share the round effect:
    round regimes, stats.launch._regimes)."""
    at = np.arange(sizes) < (sizes if round_upto is None else round_upto)

    def side(shift: float, offs: np.ndarray) -> np.ndarray:
        u = rng.normal(0, sigma_l * shared, (design.max, 1))
        v = rng.normal(0, sigma_l * size_part, (design.max, sizes))
        return np.exp(shift + u + v + offs[:, None] * at)
    data = []
    for eff in groups:
        if rounds == "none":
            offs = np.zeros((design.max, 2))
        else:
            from mpibench.stats.simulate import round_offsets
            offs = np.array([round_offsets(rng, rounds, round_sd) for _ in range(design.max)])
        data.append((side(0.0, offs[:, 0]), side(-eff, offs[:, 1])))
    return data


class _Keyed(np.ndarray):
    """A side's launches x sizes whose columns hand out {launch id: value}: launch ids
    (side, group, round) and round keys for stats.launch.pair_rounds."""


def _keyed(arr: np.ndarray, side: str, g: int) -> _Keyed:
    out = arr.view(_Keyed)
    out.ids = [(side, g, r) for r in range(arr.shape[0])]
    return out


def _col(arr: np.ndarray, m: int, s: int):
    """The first m launches of column s: a list, or {launch id: value} for keyed launches."""
    ids = getattr(arr, "ids", None)
    vals = np.asarray(arr)[:m, s]
    return list(vals) if ids is None else dict(zip(ids[:m], vals.tolist(), strict=True))


def _pairs_of(data: Sequence[tuple]) -> dict | None:
    """{launch id: round} of keyed launches (round r of every group: the campaign's repeat)."""
    out = {k: k[2] for a, b in data for side in (a, b) for k in getattr(side, "ids", ())}
    return out or None


def _sim_campaign(data: Sequence[tuple], design: Design, sizes: int
                  ) -> tuple[list[int], dict]:
    """The campaign: looks over every group's cells as one family; a group stops when its
    cells are decided. Returns (launches per side per group, the last look's statuses)."""
    k = len(data)
    n_of = [design.min] * k
    prev: dict = {}
    for n in design.looks():
        cells = {}
        for g in range(k):
            m = min(n, n_of[g])
            a, b = data[g]
            for s in range(sizes):
                cells[(g, s)] = (_col(a, m, s), _col(b, m, s))
        lk = _decide_unequal(cells, design, n, prev, _pairs_of(data))
        prev = lk.cells
        if n >= design.max:
            break
        nxt = design.next_look(n)
        for g in range(k):
            if any(not lk.cells[(g, s)].decided for s in range(sizes)) and n_of[g] == n:
                n_of[g] = nxt
    return n_of, prev


def _sim_fixed_decided(data: Sequence[tuple], design: Design, sizes: int) -> int:
    """How many cells the fixed design decides: every group at max launches, one look at
    alpha."""
    full = {(g, s_): (_col(data[g][0], design.max, s_), _col(data[g][1], design.max, s_))
            for g in range(len(data)) for s_ in range(sizes)}
    fixed = decide(full, design, n=design.max, pairs=_pairs_of(data))
    return sum(c.decided for c in fixed.cells.values())


def _sim_report(data: Sequence[tuple], n_of: Sequence[int], prev: Mapping, groups:
                Sequence[float], design: Design, sizes: int, tot: dict) -> tuple[bool, bool]:
    """The report: each group's final launches in the table's family (table_p, with the
    cells the rule decided significant kept rejected); a cell the rule decided prints the
    rule's decision and CI (report/judge.py), the others the table's own. Adds each cell
    to tot; returns (any A/A cell decided significant, any significant in the report)."""
    k = len(data)
    fsides = {(g, s): (_side(_col(data[g][0], n_of[g], s)),
                       _side(_col(data[g][1], n_of[g], s)), "lower")
              for g in range(k) for s in range(sizes)}
    pairs = _pairs_of(data)
    ftests = {c: t for c, (t, _e) in _test_sides(fsides, default_pool_key, None,
                                                  pairs).items()}
    rep_adj = table_p(fsides, ftests, TableShape(), default_pool_key,
                      lambda c, prev=prev: prev[c].status is Status.SIGNIFICANT, pairs)
    fam = fam_rep = False
    for c, ph in rep_adj.items():
        g = c[0]
        st = prev[c]
        rep_sig = (st.status is Status.SIGNIFICANT if st.decided
                   else ph is not None and ph <= design.alpha)
        _sim_tally_cell(tot, groups[g], ftests[c], st, n_of[g], design)
        if groups[g] == 0:
            tot["aa_rep_sig"] += rep_sig
            fam |= st.status is Status.SIGNIFICANT
            fam_rep |= rep_sig
    return fam, fam_rep


def _sim_tally_cell(tot: dict, eff: float, t: Any, st: CellStatus, n: int,
                    design: Design) -> None:
    """Add one reported cell (true log gain eff, its final test t, the rule's status st,
    its group's launches per side n) to the counters."""
    tot["cells"] += 1
    hit = t.ci_low <= math.exp(eff) <= t.ci_high
    tot["cover"] += hit
    if n < design.max:
        tot["early_cells"] += 1
        tot["early_cover"] += hit
        lo, hi = t.ci_at(1.0 - design.level(n))
        tot["early_rci"] += lo <= math.exp(eff) <= hi
        # the CI the comparison tables print (report/judge.py): the rule's, at the
        # level of the look that decided the cell
        printed = st.ci_low is not None and st.ci_low <= math.exp(eff) <= st.ci_high
        tot["early_printed"] += printed
        if eff != 0 and st.status is Status.SIGNIFICANT:
            tot["early_sig"] += 1
            tot["early_sig_cover"] += hit
            tot["early_sig_printed"] += printed
    tot["eq"] += st.status is Status.EQUIVALENT
    tot["und"] += st.status is Status.UNDECIDED
    if eff == 0:
        tot["aa_cells"] += 1
        tot["aa_sig"] += st.status is Status.SIGNIFICANT
    else:
        tot["real_cells"] += 1
        tot["real_sig"] += st.status is Status.SIGNIFICANT
        tot["real_eq"] += st.status is Status.EQUIVALENT


def _share(num: int, den: int) -> float:
    return num / den if den else float("nan")


def _sim_rates(tot: dict, reps: int, k: int, design: Design) -> dict[str, float]:
    """simulate()'s result: the counters as rates."""
    aa = max(1, tot["aa_cells"])
    early = tot["early_cells"]
    return {"reps": reps, "aa_false_positive": tot["aa_sig"] / aa,
            "aa_report_false_positive": tot["aa_rep_sig"] / aa,
            "familywise": tot["fam"] / reps, "familywise_report": tot["fam_rep"] / reps,
            "equivalent": tot["eq"] / tot["cells"], "undecided": tot["und"] / tot["cells"],
            "coverage": tot["cover"] / tot["cells"],
            "coverage_early": _share(tot["early_cover"], early),
            "coverage_early_rci": _share(tot["early_rci"], early),
            "coverage_early_printed": _share(tot["early_printed"], early),
            "coverage_early_sig": _share(tot["early_sig_cover"], tot["early_sig"]),
            "coverage_early_sig_printed": _share(tot["early_sig_printed"], tot["early_sig"]),
            "early_share": early / tot["cells"],
            "decided": 1 - tot["und"] / tot["cells"],
            "fixed_decided": tot["fixed_decided"] / tot["cells"],
            "launches_per_group": tot["launches"] / (reps * k),
            "fixed_launches_per_group": float(design.max),
            "real_significant": _share(tot["real_sig"], tot["real_cells"]),
            "real_equivalent": _share(tot["real_eq"], tot["real_cells"])}


def _decide_unequal(cells, design: Design, n: int, prev, pairs=None) -> Look:
    """A look where some groups stopped earlier (fewer launches than n): each cell tested
    on what it has; decisions carried forward."""
    return decide(cells, design, n=n, previous=prev, pairs=pairs)


__all__ = ["Design", "Status", "CellStatus", "Look", "decide", "run_looks", "test_cells",
           "seen_cut", "default_pool_key", "TableShape", "table_p", "simulate", "printed_ci_alpha", "INTERIM_SHARE"]
