"""campaign/budget.py: budget = "auto"'s wiring from a campaign's spec to stats.budget's plan
(pure planning on rows as store.report_queries.launch_cost_rows gives them; the runner's
use with real launches: tests/campaign/test_run.py -k budget)."""

from __future__ import annotations

import math

import numpy as np

from mpibench.campaign.budget import BudgetRule
from mpibench.stats import budget
from support.common import pair_campaign


class _Runner:
    """What BudgetRule reads of a CampaignRunner: the spec, the store, the run log."""

    def __init__(self, spec, store):
        self.spec, self.store, self.lines = spec, store, []

    def log(self, line):
        self.lines.append(line)


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
    repeats all of them; "auto" the smallest total its two-stage rule stops at (min + 3,
    or max: stats.two_stage.smallest_total; this counted min, 3 of the default's 6 sure
    rounds, and planned unpaired a size that will pair); "decide" its min, where its first
    look may stop. A size that lost a result in the pilot (1 pair) pairs after 2 more
    rounds, not after 1."""
    fixed, auto = _spec(tmp_path, "10"), _spec(tmp_path, '"auto"')
    decide = _spec(tmp_path, '"decide"')
    assert (BudgetRule.rounds(fixed), BudgetRule.cap(fixed)) == (10, 10)
    assert (BudgetRule.rounds(auto), BudgetRule.cap(auto)) == (6, 10)
    assert (BudgetRule.rounds(decide), BudgetRule.cap(decide)) == (3, 12)
    assert BudgetRule.rounds(_spec(tmp_path, '{ min = 4, max = 12, target = "3%" }')) == 7
    # max < min + 3: the rule always runs max
    short = _spec(tmp_path, '{ min = 2, max = 3, target = "3%" }')
    assert BudgetRule.rounds(short) == 3
    lost = _pilot_rows(lost=(0, 1))
    assert BudgetRule.plan_rows(fixed, lost).paired
    assert BudgetRule.plan_rows(auto, lost).paired
    assert not BudgetRule.plan_rows(decide, lost).paired
    assert not BudgetRule.plan_rows(short, lost).paired
    # a complete pilot has 2 pairs per size: one more round pairs it either way
    assert BudgetRule.plan_rows(auto, _pilot_rows()).paired
    # a random-order campaign is never paired
    assert not BudgetRule.plan_rows(_spec(tmp_path, '10\norder = "random"'),
                                    _pilot_rows()).paired


def _later_rows(sizes=4, rounds=range(2, 6)):
    """Budgeted rounds after the pilot: a few samples per cell whose CI is their [min,
    max] (x0.5-x2), as the large sizes' at --max-time 2 ms."""
    rows = []
    for rep in rounds:
        for v in ("a", "b"):
            for size in range(sizes):
                rows.append({"run_id": f"{v}{rep}", "variant": v, "repeat": rep,
                             "benchmark": "PingPong", "size": size, "n": 5, "median": 1.0,
                             "ci_low": 0.5, "ci_high": 2.0, "cell_s": 0.002,
                             "launch_s": 0.2 + sizes * 0.002})
    return rows


def test_the_plan_is_made_from_the_pilot_alone(tmp_path):
    """The time-to-decision bench raises `repeats` one round per campaign invocation, and
    each invocation planned again from every launch so far: the budgeted launches' own
    CIs (the [min, max] of 5 samples at the large sizes) made the within-launch part look
    large, so `--accept-approximate` came and went from round to round (one run: rounds
    4-10 without it, 157 cells to --max-time). One look per group means one plan, from
    the pilot: later rounds' rows change nothing."""
    fixed = _spec(tmp_path, "10")
    pilot = _pilot_rows()
    alone = BudgetRule.plan_rows(fixed, pilot)
    after = BudgetRule.plan_rows(fixed, pilot + _later_rows())
    assert alone is not None and after is not None
    assert after.best == alone.best and after.best.options() == alone.best.options()


def test_the_pilot_stops_each_cell_at_its_minimum_samples(tmp_path):
    """The pilot (rounds 1-2) ran the core's defaults (--target 5%, --max-time 0.05 s):
    34-43% of the core's launch seconds over 10 rounds of the time-to-decision bench on
    the quiet machine. What the plan reads needs 20 samples per cell, not a 5% CI: the
    pilot stops every cell at --min-samples (its CI accepted within 100%, still marked
    approximate). Within --max-time 0.002 s a cell, the shortest the plan weighs and the
    one every plan of the bench chose since the B guard: at 0.02 s the pilot's cells
    cost 0.085-0.089 s a launch against 0.025-0.048 s in the budgeted launches (the large sizes' settling and
    20 samples), 7-10% of the core's launch seconds over 10 rounds for options no later
    launch ran at. A group's own options stand."""
    from mpibench.campaign.plan import expand

    spec = _spec(tmp_path, "10")
    rule = BudgetRule(_Runner(spec, None), 0)
    by_repeat = {c.repeat: c for c in expand(spec)}
    pilot = {"target": 100.0, "max_time": 0.002, "accept_approximate": True}
    assert rule.options(by_repeat[0]) == rule.options(by_repeat[1]) == pilot
    # the pilot runs at the cheapest of the plan's own --max-time choices, so the one the
    # budgeted launches of a launch-dominated spread run at is measured, not extrapolated
    assert pilot["max_time"] == min(budget.MAX_TIMES)
    # a group's own core options join the pilot's; its own target or max_time is its
    # budget, so neither the pilot nor the plan touches its options
    for extra, want in (("{ root_shift = true }", {**pilot, "root_shift": True}),
                        ("{ max_time = 0.01 }", None), ("{ target = 3 }", None)):
        own = pair_campaign(tmp_path, "own", 'repeats = 10\nbudget = "auto"',
                            f'0:3"\noptions = {extra}\n#')
        cells = {c.repeat: c for c in expand(own)}
        assert rule.options(cells[0]) == want, extra


def test_without_a_plan_later_rounds_keep_the_groups_own_options(tmp_path):
    """No plan (nothing finished: a batch campaign with a fixed `repeats` submits every
    round at once) used to give every later launch the pilot's options (--target 100%,
    20 samples a cell) for good, where such a campaign ran the group's own options before
    the pilot came; and it looked again (two queries) cell by cell. The pilot's options
    are for the pilot's rounds; without a plan the group's own stand (None), and the rule
    looks once per round, not per cell."""
    from mpibench.campaign.plan import expand
    from mpibench.store.local import Store

    spec = _spec(tmp_path, "10")
    looks = []

    class Counting(BudgetRule):
        def _plan(self, group):
            looks.append(group)
            return super()._plan(group)

    with Store(tmp_path / "s.db") as store:
        runner = _Runner(spec, store)
        rule = Counting(runner, 1)
        cells = expand(spec)
        got = {(c.repeat, c.variant.name, c.params.get("size")): rule.options(c)
               for c in cells}
    assert {k: v for k, v in got.items() if k[0] < 2} and all(
        v == {"target": 100.0, "max_time": 0.002, "accept_approximate": True}
        for k, v in got.items() if k[0] < 2)
    assert all(v is None for k, v in got.items() if k[0] >= 2)
    assert len(looks) == 8            # rounds 2-9, once each
    assert len(runner.lines) == 1 and "own options" in runner.lines[0]


def test_a_one_variant_group_runs_neither_pilot_nor_plan(tmp_path):
    """A group of one variant has nothing to compare: no plan can come, so its launches
    keep the group's own options in every round (the pilot only feeds the plan)."""
    from mpibench.campaign.plan import expand

    one = pair_campaign(tmp_path, "one", 'repeats = 4\nbudget = "auto"',
                        '0:3"\nvariants = ["a"]\n#')
    rule = BudgetRule(_Runner(one, None), 0)
    cells = expand(one)
    assert {c.repeat for c in cells} == {0, 1, 2, 3}
    assert all(rule.options(c) is None for c in cells)


def _capped(tmp_path, repeats):
    """_spec's campaign planned for 10 launches per variant whatever its `repeats` (the
    time-to-decision bench's `budget = { launches = N }`, raising `repeats` a round at a
    time)."""
    return pair_campaign(tmp_path, "budget", f"repeats = {repeats}\n"
                         "budget = { launches = 10 }", "0:3")


def _made(spec, rows):
    p = BudgetRule.plan_rows(spec, rows)
    return p.best.options(), p.describe()


def test_a_later_invocation_reuses_the_plan_its_pilot_had(tmp_path, monkeypatch):
    """Every campaign invocation after the pilot (a raised `repeats`, a resume) made the
    pilot's plan again: 3.5-6 s of CPU before its first launch in the time-to-decision
    bench. The plan is remembered by what it is made from (PlanCache): the second
    invocation gets the first one's options and line, bit for bit, without planning."""
    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    first, reused = PlanCache.plan(spec, rows)
    assert not reused and first == _made(spec, rows)
    again, reused = PlanCache.plan(spec, rows)
    assert reused and again == first
    assert all(type(v) is type(first[0][k]) for k, v in again[0].items())
    assert set(first[0]) == PlanCache.OPTIONS        # what a record may hold
    # later rounds' rows are not the pilot's: the same plan (plan_rows reads the pilot)
    assert PlanCache.plan(spec, rows + _later_rows()) == (first, True)
    # so is a raised `repeats` (the same launch cap) once the rounds counted pair every
    # size, 2 pilot rounds + MIN_PAIRS: 6 and 10 are one plan, 3 another
    assert PlanCache.plan(_capped(tmp_path, 3), rows)[1] is False
    assert PlanCache.plan(_capped(tmp_path, 6), rows) == (_made(_capped(tmp_path, 6), rows),
                                                          True)


def test_a_plan_is_made_again_when_what_it_is_made_from_changes(tmp_path, monkeypatch):
    """A pilot row, the margin, the launch cap, the order or the rounds counted towards
    pairing changed: another plan, never the remembered one. A size that lost a result
    in the pilot pairs after 2 more rounds (test above): at 3 rounds it is planned
    unpaired, at 4 paired, and neither is served the other's plan."""
    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    rows = _pilot_rows()
    base = _spec(tmp_path, "10")
    PlanCache.plan(base, rows)
    moved = [dict(r, median=r["median"] * 1.3) if r["size"] == 2 and r["variant"] == "b"
             else r for r in rows]
    for spec, got in ((base, moved),
                      (pair_campaign(tmp_path, "budget", 'repeats = 10\nbudget = "auto"\n'
                                     'equivalence = "2%"', "0:3"), rows),
                      (pair_campaign(tmp_path, "budget", "repeats = 10\n"
                                     "budget = { launches = 30 }", "0:3"), rows),
                      (_spec(tmp_path, '10\norder = "random"'), rows)):
        made, reused = PlanCache.plan(spec, got)
        assert not reused and made == _made(spec, got)
    lost = _pilot_rows(lost=(0, 1))
    three, four = _capped(tmp_path, 3), _capped(tmp_path, 4)
    assert PlanCache.plan(four, lost) == (_made(four, lost), False)
    made, reused = PlanCache.plan(three, lost)
    assert not reused and made == _made(three, lost) and made[1] != _made(four, lost)[1]


def test_rounds_past_the_pairing_horizon_change_no_plan(tmp_path):
    """Why PlanCache.key counts at most the pilot's rounds + MIN_PAIRS: the rounds still
    to run enter the plan only as pairs counted against MIN_PAIRS (stats.launch
    .pair_rounds), so more rounds pair nothing more. If the plan came to read them
    elsewhere, this fails and the key must count every round."""
    from mpibench.stats.launch import MIN_PAIRS

    for rows in (_pilot_rows(), _pilot_rows(lost=(0, 1)), _pilot_rows(seed=9, sizes=6)):
        at = _made(_capped(tmp_path, 2 + MIN_PAIRS), rows)
        for more in (1, 40):
            assert _made(_capped(tmp_path, 2 + MIN_PAIRS + more), rows) == at


def _resealed(doc: dict, options: dict) -> dict:
    """A record with other options and a checksum made for them: only its shape can tell."""
    from mpibench.campaign.budget import PlanCache

    return dict(doc, options=options,
                check=PlanCache._check(doc["key"], options, doc["describe"]))


def test_a_damaged_plan_record_is_a_plan_made_again(tmp_path, monkeypatch):
    """A record cut, byte-flipped, another record's, or one whose options were edited
    (its checksum no longer its own), or one holding an option no plan sets or a value
    that is no scalar (even with a checksum made for it) is never used: the plan is made
    again (and the record rewritten)."""
    import json

    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    want = _made(spec, rows)
    PlanCache.plan(spec, rows)
    f = PlanCache.path(PlanCache.key(spec, rows))
    good = f.read_text()
    doc = json.loads(good)
    other = dict(doc, key="0" * 64)
    edited = dict(doc, options=dict(doc["options"], target=1.0))
    key = PlanCache.key(spec, rows)
    damaged = (good[:len(good) // 2], good.replace('"', "'", 1), "[]", "",
               json.dumps(other), json.dumps(edited), json.dumps(dict(doc, describe=3)),
               json.dumps(dict(doc, options=dict(doc["options"], target="1"))),
               json.dumps(_resealed(doc, dict(doc["options"], root_shift=True))),
               json.dumps(_resealed(doc, dict(doc["options"], target=[1]))))
    for i, text in enumerate(damaged):
        f.write_text(text)
        assert PlanCache.read(f, key) is None, text[:60]
        if i in (0, len(damaged) - 1):    # the whole path, twice: planned, record rewritten
            assert PlanCache.plan(spec, rows) == (want, False), text[:60]
            assert f.read_text() == good
    assert PlanCache.read(f, key) == want


def test_a_record_that_is_no_small_regular_json_file_is_a_plan_made_again(tmp_path,
                                                                        monkeypatch):
    """Deeply nested JSON (a RecursionError, not a ValueError: it crashed every later
    campaign run until the file was deleted), a record far larger than any plan's, and a
    FIFO at the record's path (reading it would block forever) are all planned again."""
    import os

    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    want = _made(spec, rows)
    f = PlanCache.path(PlanCache.key(spec, rows))
    f.parent.mkdir(parents=True)
    f.write_text("[" * 100000 + "]" * 100000)
    assert PlanCache.plan(spec, rows) == (want, False)
    f.write_text(" " * (PlanCache.MAX_BYTES + 1) + f.read_text())
    assert PlanCache.read(f, PlanCache.key(spec, rows)) is None
    f.unlink()
    os.mkfifo(f)
    assert PlanCache.read(f, PlanCache.key(spec, rows)) is None


def test_a_reused_plan_needs_neither_the_planning_nor_scipy(tmp_path, monkeypatch):
    """What a later invocation saves: in a fresh process, the remembered plan comes back
    without stats.budget's search and without importing scipy (0.3-1 s: stats.launch
    imports it only where a computation needs it; the record's key reads its version
    from the installed metadata)."""
    import json
    import subprocess
    import sys

    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    want = PlanCache.plan(spec, rows)[0]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    code = (
        "import json, sys\n"
        "from mpibench.campaign import budget\n"
        "from mpibench.campaign.spec import load\n"
        "def refuse(*a, **k): raise AssertionError('planned again')\n"
        "budget.BudgetRule.plan_rows = refuse\n"
        f"rows = json.load(open({str(tmp_path / 'rows.json')!r}))\n"
        f"made, reused = budget.PlanCache.plan(load({str(tmp_path / 'c.toml')!r}), rows)\n"
        "print(json.dumps([made, reused, 'scipy' in sys.modules]))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    made, reused, scipy = json.loads(res.stdout)
    assert reused and not scipy and made == [want[0], want[1]]
