"""campaign/budget.py: budget = "auto"'s wiring from a campaign's spec to stats.budget's plan
(pure planning on rows as store.report_queries.launch_cost_rows gives them; the runner's
use with real launches: tests/campaign/test_run.py -k budget)."""

from __future__ import annotations

import math

import numpy as np

from mpibench.campaign.budget import BudgetRule
from support.common import pair_campaign


def _spec(tmp_path, repeats):
    return pair_campaign(tmp_path, "budget", f'repeats = {repeats}\nbudget = "auto"', "0:3")


def _pilot_rows(seed=5, sizes=4, lost=None):
    """Two interleaved rounds of variants a and b (a round effect both share, each
    launch's own, a within-launch CI); lost: (size, round) whose b result is missing."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(2):
        phase = rng.normal(0, 0.2)
        for v in ("a", "b"):
            own = rng.normal(0, 0.02)
            for size in range(sizes):
                if v == "b" and (size, rep) == lost:
                    continue
                med = math.exp(phase + own + rng.normal(0, 0.01))
                rows.append({"run_id": f"{v}{rep}", "variant": v, "repeat": rep,
                             "benchmark": "PingPong", "size": size, "n": 100, "median": med,
                             "ci_low": med * 0.98, "ci_high": med * 1.02,
                             "cell_s": 0.01, "launch_s": 0.2 + sizes * 0.01})
    return rows


def test_the_rounds_a_plan_counts_on_are_the_ones_the_campaign_surely_runs(tmp_path):
    """After the 2-round pilot the plan counts the rounds still to run towards compare's
    pairing (3 pairs per size), but only those the campaign runs for certain: a fixed
    repeats all of them, "auto"/"decide" up to their min, where the stage rule may stop.
    A size that lost a result in the pilot (1 pair) pairs after 8 more rounds, not
    after 1."""
    fixed, auto = _spec(tmp_path, "10"), _spec(tmp_path, '"auto"')
    assert (BudgetRule.rounds(fixed), BudgetRule.cap(fixed)) == (10, 10)
    assert (BudgetRule.rounds(auto), BudgetRule.cap(auto)) == (3, 10)
    assert BudgetRule.rounds(_spec(tmp_path, '{ min = 4, max = 12, target = "3%" }')) == 4
    lost = _pilot_rows(lost=(0, 1))
    assert BudgetRule.plan_rows(fixed, lost).paired
    assert not BudgetRule.plan_rows(auto, lost).paired
    # a complete pilot has 2 pairs per size: one more round pairs it either way
    assert BudgetRule.plan_rows(auto, _pilot_rows()).paired
    # a random-order campaign is never paired
    assert not BudgetRule.plan_rows(_spec(tmp_path, '10\norder = "random"'),
                                    _pilot_rows()).paired
