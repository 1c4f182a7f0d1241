"""stats/sequential.py: the group-sequential rule of repeats = "decide" on known
distributions (seeded), and its simulation's false positives and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpibench.stats.sequential import INTERIM_SHARE, Design, Status, decide, run_looks, simulate


def _logn(rng, n, shift=0.0, sd=0.02):
    return list(np.exp(shift + rng.normal(0.0, sd, n)))


def test_design_looks_and_levels():
    d = Design(3, 12, 3, 0.05, 0.05)
    assert d.looks() == [3, 6, 9, 12]
    assert d.level(12) == 0.05                        # the last look: the report's alpha
    assert d.level(3) == d.level(9) == pytest.approx(0.05 * INTERIM_SHARE / 3)
    assert Design(3, 8, 3).looks() == [3, 6, 8]       # the maximum is always a look
    assert Design(4, 4, 1).looks() == [4] and Design(4, 4, 1).level(4) == 0.05
    assert d.next_look(6) == 9 and d.next_look(12) is None
    with pytest.raises(ValueError):
        Design(1, 4)
    with pytest.raises(ValueError):
        Design(3, 6, 1, 0.05, 1.5)


def test_a_large_difference_is_decided_at_the_first_look():
    rng = np.random.default_rng(1)
    # a 3x slowdown at 2% launch spread, one benchmark, 4 sizes: decided at 3 launches
    cells = {("PingPong", s): (_logn(rng, 12), _logn(rng, 12, math.log(3.0))) for s in range(4)}
    look = decide(cells, Design(3, 12, 3, 0.05, 0.05), n=3)
    assert all(c.status is Status.SIGNIFICANT for c in look.cells.values())
    assert look.undecided == [] and look.next_launches is None
    assert all(c.gain == pytest.approx(1 / 3, rel=0.1) for c in look.cells.values())
    assert "significant at 3 launches" in look.cells[("PingPong", 0)].reason
    # the CI at the look's level (the repeated CI) excludes 1 like the decision, and is
    # wider than the plain 95% CI on the same launches
    from mpibench.stats.launch import compare

    c = look.cells[("PingPong", 0)]
    plain = compare(cells[("PingPong", 0)][0][:3], cells[("PingPong", 0)][1][:3], "lower")
    assert c.ci_low < plain.ci_low < plain.ci_high < c.ci_high < 1.0


def test_identical_tight_launches_are_equivalent_and_noisy_ones_go_on():
    rng = np.random.default_rng(2)
    tight = {("a", s): (_logn(rng, 12, sd=0.002), _logn(rng, 12, sd=0.002)) for s in range(4)}
    look = decide(tight, Design(3, 12, 3, 0.05, 0.05), n=3)
    assert {c.status for c in look.cells.values()} == {Status.EQUIVALENT}
    # the same spread without a margin: nothing can be decided but a difference
    look = decide(tight, Design(3, 12, 3, 0.05, None), n=3)
    assert {c.status for c in look.cells.values()} == {Status.UNDECIDED}
    assert look.next_launches == 6
    noisy = {("a", s): (_logn(rng, 12, sd=0.3), _logn(rng, 12, sd=0.3)) for s in range(4)}
    look = decide(noisy, Design(3, 12, 3, 0.05, 0.05), n=12)   # the last look
    assert {c.status for c in look.cells.values()} == {Status.UNDECIDED}
    assert look.final and look.next_launches is None
    assert "undecided after the maximum of 12" in look.cells[("a", 0)].reason


def test_an_interim_look_is_stricter_than_the_last():
    # a difference significant at alpha but not at the interim level: undecided at an
    # interim look, decided at the last one on the same launches
    logs = np.array([-0.05, 0.0, 0.05, -0.03, 0.03, 0.0])       # sd 0.037 between launches
    base, cand = list(np.exp(logs)), list(np.exp(logs[::-1] + 0.065))   # t = 3.0, 10 df
    cells = {("x", 0): (base, cand)}
    at_last = decide(cells, Design(2, 6, 2, 0.05, None), n=6)
    interim = decide(cells, Design(2, 8, 2, 0.05, None), n=6)
    p = at_last.cells[("x", 0)].p_holm
    assert interim.level < p <= 0.05
    assert at_last.cells[("x", 0)].status is Status.SIGNIFICANT
    assert interim.cells[("x", 0)].status is Status.UNDECIDED


def test_decisions_are_carried_forward_and_replayed():
    # at the first look (3 launches a side) every size keeps its own cell part on 2 df
    # (stats.launch.THIN_LAUNCHES, at any size count): a 2x gain at sd 0.02 (t ~ 43) is not
    # significant at its strict level on 2 df (adjusted p 0.002-0.008), a 4x one is
    rng = np.random.default_rng(4)
    cells = {("big", s): (_logn(rng, 9), _logn(rng, 9, math.log(4.0))) for s in range(3)}
    cells |= {("same", s): (_logn(rng, 9, sd=0.1), _logn(rng, 9, sd=0.1)) for s in range(3)}
    cells |= {("big", s): (_logn(rng, 9), _logn(rng, 9, math.log(4.0))) for s in range(3, 6)}
    design = Design(3, 9, 3, 0.05, 0.01)
    looks = run_looks(cells, design)
    assert [lk.n for lk in looks] == [3, 6, 9]
    assert all(looks[0].cells[("big", s)].status is Status.SIGNIFICANT for s in range(6))
    # decided at the first look: the same record at every later look
    assert looks[-1].cells[("big", 0)] == looks[0].cells[("big", 0)]
    assert all(looks[-1].cells[("same", s)].status is Status.UNDECIDED for s in range(3))
    # the 'big' cells stopped at 3 launches: later looks see what they have
    short = {k: ((v[0][:3], v[1][:3]) if k[0] == "big" else v) for k, v in cells.items()}
    assert [lk.n for lk in run_looks(short, design)] == [3, 6, 9]
    assert len(run_looks(cells, design, upto=6)) == 2


def test_simulated_aa_keeps_alpha_and_coverage_with_early_stops():
    # A/A, 4 groups x 5 sizes, spread 0.02, margin 5%: most groups stop early (equivalent);
    # the rule's false positives and the report's (Holm at alpha on the final launches) stay
    # <= alpha + 1 point, the final 95% CI covers >= 93% also where the group stopped early,
    # and it spends fewer launches than the fixed design's maximum
    r = simulate(np.random.default_rng(5), 25, Design(3, 12, 3, 0.05, 0.05), sigma_l=0.02)
    assert r["early_share"] >= 0.5
    assert r["aa_false_positive"] <= 0.06 and r["aa_report_false_positive"] <= 0.06
    assert r["familywise"] <= 0.1                     # 25 campaigns: 0.06 +- sampling
    assert r["coverage"] >= 0.93 and r["coverage_early"] >= 0.93
    assert r["launches_per_group"] < r["fixed_launches_per_group"]


def test_printed_ci_alpha_is_the_wider_level_and_never_contradicts_the_decision():
    from mpibench.stats.sequential import printed_ci_alpha

    # no sequential design: the Holm level alpha p / p_adj (at most alpha)
    assert printed_ci_alpha(0.001, 0.004, 0.05) == (0.05 * 0.25, False)
    assert printed_ci_alpha(0.2, 0.2, 0.05) == (0.05, False)
    # significant at the look's level: widened to it (p 0.001 <= 0.0033: still excludes 1)
    assert printed_ci_alpha(0.001, 0.004, 0.05, 0.0033) == (0.0033, True)
    # not significant: wider is safe (the CI contains 1 either way)
    assert printed_ci_alpha(0.03, 0.3, 0.05, 0.0033) == (0.0033, True)
    # significant in the table but p above the look's level (the group stopped on other
    # grounds): widening would put 1 in the CI of a significant row, so the Holm level stays
    assert printed_ci_alpha(0.01, 0.02, 0.05, 0.0033) == (0.025, False)
    # the look's level is not smaller: nothing to widen
    assert printed_ci_alpha(0.001, 0.002, 0.05, 0.05) == (0.025, False)


def test_sim_data_round_upto_moves_only_the_smallest_sizes():
    # round regimes in the simulation: with no launch spread, each launch's logs are its
    # round's offset at the round_upto smallest sizes and exactly 0 above
    from mpibench.stats.sequential import _sim_data
    data = _sim_data(np.random.default_rng(9), Design(3, 6, 3, 0.05, 0.05), (0.0,), 10,
                     0.0, 0.5, 1.0, "apart", 0.25, round_upto=4)
    for side in data[0]:
        logs = np.log(side)
        assert np.all(logs[:, 4:] == 0.0)
        assert np.all(np.abs(logs[:, 0]) > 0) and np.allclose(logs[:, :4], logs[:, [0]])
    base, cand = (np.log(s[:, 0]) for s in data[0])
    assert not np.allclose(base, cand)                  # 'apart': each launch its own draw


def test_a_look_sees_the_cut_short_launches_of_its_rounds_only():
    """seen_cut: a look at n rounds passes compare_cells the cut-short launches of its
    first n rounds (a launch of a later round, or of no known round, is not seen), so a
    launch cut short in round 6 never rewrites the look at 3; without rounds, all."""
    from mpibench.stats.sequential import seen_cut

    cut = {"x": {"b2", "b5"}, "y": {"c5"}, "z": {"nowhere"}}
    rounds = {"b2": 2, "b5": 5, "c5": 5}
    assert seen_cut(cut, 3, rounds) == {"x": {"b2"}, "y": set(), "z": set()}
    assert seen_cut(cut, 6, rounds) == {"x": {"b2", "b5"}, "y": {"c5"}, "z": set()}
    assert seen_cut(cut, None, rounds) == seen_cut(cut, 3, None) == cut
    assert seen_cut(None, 3, rounds) == {} == seen_cut({}, 3, rounds)


def test_decide_tests_a_cell_with_a_cut_short_launch_alone():
    """decide's cut reaches compare_cells: the cut cell's test is its own launches', the
    other sizes' the pool without it; a cut launch the look does not see changes nothing."""
    from mpibench.stats import launch as L
    from mpibench.stats import sequential as sq

    rng = np.random.default_rng(12)
    lv = rng.normal(0, 0.05, (2, 6))
    cells = {("PingPong", s): tuple({f"{'bc'[j]}{r}": float(np.exp(lv[j, r] + rng.normal(0, 0.03)))
                                     for r in range(6)} for j in (0, 1)) + ("lower",)
             for s in (8, 64, 512)}
    rounds = {f"{p}{r}": r for r in range(6) for p in "bc"}
    design = sq.Design(min=3, max=6, step=3)
    look = sq.decide(cells, design, n=6, rounds=rounds, cut={("PingPong", 512): {"c4"}})
    keys = list(cells)
    pooled = L.compare_cells([cells[k] for k in keys[:2]], sizes=[8, 64])
    assert [look.cells[k].test for k in keys[:2]] == pooled
    assert look.cells[keys[2]].test == L.compare_cells([cells[keys[2]]], sizes=[512])[0]
    early = sq.decide(cells, design, n=3, rounds=rounds, cut={("PingPong", 512): {"c4"}})
    plain = sq.decide(cells, design, n=3, rounds=rounds)
    assert {k: c.test for k, c in early.cells.items()} == \
        {k: c.test for k, c in plain.cells.items()}
