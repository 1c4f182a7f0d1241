"""The gain CI and test of a `repeats = "auto"` campaign: spread from the stage-2 launches.

The two-stage rule (campaign/auto_repeats.py) runs `min` rounds (stage 1), looks once at
those launches, and fixes the total; stage 2 runs the rounds up to it. A CI whose spread
includes the stage-1 launches reuses the spread the stop was decided on: where the rule
stopped at the smallest total because that spread came out small, the CI is too narrow
(docs/statistics.md: 48-64% coverage there for the rule that looked at its own CI; the
pair sums' plan, 88-93% when the two sides do not spread alike). The stage-2 launches ran
after the look, so their spread never saw the data the stop was decided on: a CI centred
on the mean of all launches, whose standard error is the stage-2 launches' own (their
variance components and degrees of freedom, scaled from their count to all launches),
keeps its coverage conditionally on where the rule stopped (normal launches: exactly; the
mean over all launches is independent of the stage-1 spread, and the stage-2 spread of
both; Coffey and Muller's internal-pilot "test 2").

Alone it misses where the launch values are far from normal (a stage-1 round whose two
launches landed in different modes of a two-mode machine is in the mean but not in the
spread: 85-87% coverage, 13-15% false positives in bench/bench_auto_paired.py), so the
test a cell of such a campaign gets is the WIDER of the two: the ordinary test over every
launch (stats.launch.compare_cells, as for any campaign) and the stage-2-spread test, the
one whose 95% CI is wider, with its own p, components and critical values. Its CI covers
whenever either one does; its p is that test's, so the CI at any level (LaunchTest.ci_at,
the multiplicity-adjusted CIs) excludes 1 exactly when the p says so.

The plan (plan_total) asks for a total at which the stage-2-spread CI would be within the
target at the stage-1 spread, with at least MIN_STAGE_TWO stage-2 rounds, so its spread
has >= 2 df (a stage 2 of 1-2 rounds would give a CI 3-12 times too wide to plan on).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping, Sequence

import numpy as np

from mpibench.stats import launch as launch_stats
from mpibench.stats.launch import LaunchTest

# stage-2 rounds at least, where the rule may stop before its maximum
MIN_STAGE_TWO = 3

ORDINARY, STAGE_TWO = "ordinary", "stage 2"


def smallest_total(lo: int, hi: int) -> int:
    """The smallest total the rule (min lo, max hi) stops at: lo + MIN_STAGE_TWO rounds,
    or hi when it cannot have that many (then it always runs hi: no choice, no selection,
    and the ordinary CI is the campaign's)."""
    return min(hi, lo + MIN_STAGE_TWO)


def staged(lo: int, hi: int) -> bool:
    """Whether a rule (min lo, max hi) can stop before its maximum, i.e. its cells need the
    stage-aware test."""
    return hi >= lo + MIN_STAGE_TWO


def _exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else math.inf


def _count(t: LaunchTest) -> tuple[int, int]:
    return (t.pairs, t.pairs) if t.pairing == "round" else (t.n_base, t.n_cand)


def _scaled(t: LaunchTest, comps: tuple, rb: float, rc: float) -> tuple:
    """comps (t's components or plan_components: the baseline side's first, then the
    candidate's) with the baseline side's variances x rb and the candidate's x rc. Paired
    by round there is one factor (rb == rc) and no sides to tell apart."""
    if rb == rc:
        return tuple((v * rb, d) for v, d in comps)
    # the baseline side's count as the test built its components (a moderated cell part
    # of 0 is dropped there, so the pooled `parts`, which always hold one, cannot tell)
    k = t.base_components or len(comps) // 2
    return tuple((v * (rb if i < k else rc), d) for i, (v, d) in enumerate(comps))


def _shared(parts: tuple) -> float:
    """The shared launch part (var(u)/n per side, stats.launch.Spread.shared) of pooled
    sides' (launch part, df, cell part, df, cells): launch part - cell part / (S - 1)."""
    return sum(max(0.0, lv - cv / (s - 1)) for lv, _dl, cv, dc, s in parts
               if s > 1 and dc > 0)


def stage_two_test(full: LaunchTest, late: LaunchTest, level: float = 0.95,
                   alpha: float = 0.05) -> LaunchTest | None:
    """The stage-2-spread test of one cell: full's centre (the mean over every launch),
    late's variance components (the test of the stage-2 launches alone, the same model:
    paired by round or not, pooled over the benchmark's sizes or not) scaled from late's
    launch count to full's, each side by its own ratio where the sides are not paired
    (one side may have no stage 2 at all: a staged campaign compared with another
    campaign's launches), the Satterthwaite df and critical values of those components.
    Its planning figures (detectable, detectable_at) are this test's own: late's planning
    components scaled alike, at alpha. None where it cannot be had: either test untested
    or without spread, or the two not of the same model."""
    if not (full.tested and late.tested and full.se_log and late.se_log
            and full.diff_log is not None and late.components
            and full.pairing == late.pairing and full.pooled == late.pooled):
        return None
    (fb, fc), (lb, lc) = _count(full), _count(late)
    if not (fb and fc):
        return None
    rb, rc = lb / fb, lc / fc
    comps = _scaled(late, late.components, rb, rc)
    se2 = sum(v for v, _ in comps)
    if se2 <= 0:
        return None
    se = math.sqrt(se2)
    h = launch_stats.cochran_cox_crit(comps, (1.0 - level) / 2.0) * se
    d = full.diff_log
    p = float(launch_stats.two_sided_p(np.array([d / se]), comps)[0])
    parts = tuple((lv * r, dl, cv * r, dc, s)
                  for (lv, dl, cv, dc, s), r in zip(late.parts, (rb, rc), strict=False))
    shared = late.shared_var * rb if rb == rc else _shared(parts)
    plan = _scaled(late, late.plan_components, rb, rc) if late.plan_components else ()
    out = full._replace(
        ci_low=_exp(d - h), ci_high=_exp(d + h), p=p,
        se_log=se, components=comps, df=launch_stats._satterthwaite(comps),
        shared_var=min(shared, se2), parts=parts, plan_components=plan,
        base_components=late.base_components)
    # the one planning figure (a thin side: stats.launch.plan_expect), at alpha when read
    return out._replace(plan_alpha=alpha)


def wider(full: LaunchTest, stage2: LaunchTest | None) -> tuple[LaunchTest, str]:
    """The test whose 95% CI is wider (both centred on the same mean): (test, ORDINARY or
    STAGE_TWO). Without a stage-2 test, the ordinary one."""
    if stage2 is None or full.ci_low is None or full.ci_high is None:
        return full, ORDINARY
    if math.log(stage2.ci_high / stage2.ci_low) > math.log(full.ci_high / full.ci_low):
        return stage2, STAGE_TWO
    return full, ORDINARY


def stage_two(rows: Sequence[tuple[Mapping[Hashable, float | None],
                                    Mapping[Hashable, float | None], str]],
              stage_one: Collection[Hashable]) -> list[tuple[dict, dict, str]]:
    """rows ((baseline {launch id: value}, candidate {...}, better) per cell) without the
    stage-1 launches."""
    return [({k: v for k, v in b.items() if k not in stage_one},
             {k: v for k, v in c.items() if k not in stage_one}, better)
            for b, c, better in rows]


def compare_staged(cells: Sequence[tuple[Mapping[Hashable, float | None],
                                         Mapping[Hashable, float | None], str]],
                   stage_one: Collection[Hashable], alpha: float = 0.05,
                   rounds: Mapping[Hashable, Hashable] | None = None,
                   sizes: Sequence | None = None,
                   cut: Sequence[Collection[Hashable]] | None = None
                   ) -> list[tuple[LaunchTest, str]]:
    """compare_cells for the cells of one benchmark of a two-stage campaign: per cell the
    wider of the ordinary test over every launch and the stage-2-spread test (stage_one:
    the launch ids the rule's look read), with which one it is (ORDINARY, STAGE_TWO, or
    ORDINARY + ": no stage-2 test (...)" where the stage-2 launches cannot be tested;
    sizes, cut: the cells' sizes and cut-short launches, as compare_cells'; a cell with a
    cut-short launch is tested alone in both tests, so both block alike)."""
    full = launch_stats.compare_cells(cells, alpha, rounds=rounds, sizes=sizes, cut=cut)
    late = launch_stats.compare_cells(stage_two(cells, stage_one), alpha, rounds=rounds,
                                      sizes=sizes, cut=cut)
    out = []
    for f, lt in zip(full, late, strict=True):
        s = stage_two_test(f, lt, alpha=alpha)
        if s is None and f.tested:
            if not lt.tested:
                why = lt.reason or "not tested"
            elif lt.pairing != f.pairing or lt.pooled != f.pooled:
                why = "they are not tested as all launches are (pairing or pooling)"
            else:
                why = "no spread among them"
            out.append((f, f"{ORDINARY}: no stage-2 test ({why})"))
            continue
        out.append(wider(f, s))
    return out


def aggregate_staged(rows: Sequence[tuple[Mapping[Hashable, float | None],
                                           Mapping[Hashable, float | None], str]],
                     stage_one: Collection[Hashable], alpha: float = 0.05,
                     rounds: Mapping[Hashable, Hashable] | None = None
                     ) -> tuple[LaunchTest, str]:
    """stats.launch.aggregate (a geomean row or a verdict over many cells) for a two-stage
    campaign: the wider of the aggregate over every launch and the one whose spread comes
    from the stage-2 launches only, as compare_staged does per cell."""
    full = launch_stats.aggregate(rows, alpha, rounds=rounds)
    late = launch_stats.aggregate(stage_two(rows, stage_one), alpha, rounds=rounds)
    return wider(full, stage_two_test(full, late, alpha=alpha))


def plan_total(tests: Sequence[LaunchTest], stage_one: int, lo: int, hi: int,
               goal: float, level: float = 0.95) -> int:
    """Launches per side (rounds) for the whole group from the stage-1 tests of its cells
    (compare_cells on the first `stage_one` rounds; the test the report runs, paired where
    it pairs): the smallest n in [smallest_total(lo, hi), hi] at which every cell's
    stage-2-spread CI would have a half-width (log) <= goal at the stage-1 spread: each
    variance component scaled from the stage-1 count m to n (v m / n), its df from m - 1
    launches' to the n - stage_one - 1 of the stage-2 launches (d (n - stage_one - 1) /
    (m - 1): a launch part's n - 1, a pooled cell part's (n - 1)(S - 1)), the test's
    critical value. A cell that cannot be tested asks for the maximum. A cell's own
    moderated cell part (d0 + d_g df, stats.moderate) keeps the prior's d0, which does not
    grow with launches: d_g only goes from m - 1 to n - stage_one - 1
    (stats.launch.future_df)."""
    need = smallest_total(lo, hi)
    if need >= hi:
        return hi
    tail = (1.0 - level) / 2.0
    for t in tests:
        m = min(_count(t))
        if not t.tested or not t.se_log or not t.components or m < 2:
            return hi
        own = launch_stats.own_cell_parts(t)
        while need < hi:
            comps = tuple((v * m / need, launch_stats.future_df(d, m - 1,
                                                                need - stage_one - 1,
                                                                i in own))
                          for i, (v, d) in enumerate(t.components))
            h = launch_stats.cochran_cox_crit(comps, tail) * math.sqrt(
                sum(v for v, _ in comps))
            if h <= goal:
                break
            need += 1
    return need


__all__ = ["MIN_STAGE_TWO", "ORDINARY", "STAGE_TWO", "smallest_total", "staged",
           "stage_two_test", "stage_two", "wider", "compare_staged", "aggregate_staged", "plan_total"]
