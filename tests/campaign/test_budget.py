"""campaign/budget.py: budget = "auto"'s wiring from a campaign's spec to stats.budget's plan
(pure planning on rows as store.report_queries.launch_cost_rows gives them; the runner's
use with real launches: tests/campaign/test_run.py -k budget)."""

from __future__ import annotations

import math
from pathlib import Path

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


def _made(spec, rows, table=None):
    p = BudgetRule.plan_rows(spec, rows, table)
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


def _record_worst_cases(f, good: str, doc: dict, elsewhere):
    """What may sit at a plan record's path, each to be read as no record: a symlink (to
    this key's own good record elsewhere, to /dev/zero, dangling, a loop), a directory,
    a FIFO, a huge file, a cut one, bytes that are no UTF-8, deep nesting, and records
    resealed (a checksum made for them) with options no plan sets: NaN, negative, huge,
    none at all, a bool target, an int max_time, accept_approximate 7 or false."""
    import json
    import os

    from mpibench.campaign.budget import PlanCache

    def sealed(**options):
        return json.dumps(_resealed(doc, options))

    def text(t):
        def put():
            f.write_text(t)
        return put

    def raw(b):
        def put():
            f.write_bytes(b)
        return put

    def link(to):
        def put():
            os.symlink(to, f)
        return put

    o = doc["options"]
    yield "symlink to the good record", link(elsewhere)
    yield "symlink to /dev/zero", link("/dev/zero")
    yield "dangling symlink", link(f.parent / "nowhere.json")
    yield "symlink loop", link(f)
    yield "directory", lambda: f.mkdir()
    yield "FIFO", lambda: os.mkfifo(f)
    yield "huge", text(" " * PlanCache.MAX_BYTES + good)
    yield "cut", text(good[: len(good) * 2 // 3])
    yield "not UTF-8", raw(good.encode().replace(b'"describe"', b'"describe\xff"'))
    yield "deep nesting", text("[" * 100000 + "]" * 100000)
    yield "NaN target", text(sealed(**dict(o, target=float("nan"))))
    yield "negative max_time", text(sealed(**dict(o, max_time=-5.0)))
    yield "huge max_time", text(sealed(**dict(o, max_time=1e300)))
    yield "no options", text(sealed())
    yield "bool target", text(sealed(**dict(o, target=True)))
    yield "int max_time", text(sealed(**dict(o, max_time=1)))
    yield "accept_approximate 7", text(sealed(**dict(o, accept_approximate=7)))
    yield "accept_approximate false", text(sealed(**dict(o, accept_approximate=False)))


def test_the_worst_records_are_a_plan_made_again_never_another(tmp_path, monkeypatch):
    """Every record in _record_worst_cases: PlanCache.read finds none (a symlink is never
    followed, even to the plan's own record: the cache holds records, not pointers; a
    FIFO does not block; a resealed record whose options no plan sets is not served:
    NaN, negative or 1e300 launch options were read as the plan before), and the whole
    path plans again without an exception. The record written then replaces a symlink
    itself, never the file it points at."""
    import json
    import os

    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    want = _made(spec, rows)
    key = PlanCache.key(spec, rows)
    f = PlanCache.path(key)
    assert PlanCache.plan(spec, rows) == (want, False)
    good = f.read_text()
    elsewhere = tmp_path / "kept.json"
    elsewhere.write_text(good)
    cases = list(_record_worst_cases(f, good, json.loads(good), elsewhere))
    assert len(cases) == 18
    for what, put in cases:
        if f.is_symlink() or f.is_file() or f.exists():
            (f.rmdir if f.is_dir() and not f.is_symlink() else f.unlink)()
        put()
        assert PlanCache.read(f, key) is None, what
        assert PlanCache.plan(spec, rows) == (want, False), what
        if what != "directory":      # a directory stays (write_file cannot replace it)
            assert not f.is_symlink() and f.read_text() == good, what
            assert PlanCache.plan(spec, rows) == (want, True), what
    assert elsewhere.read_text() == good
    assert os.path.exists("/dev/zero")


def test_plan_records_are_pruned_to_the_ones_used_last(tmp_path, monkeypatch):
    """Nothing removed budget-plans/ records: one per pilot, group and mpibench/stats
    source, for good. Each write keeps the KEEP records used most recently (a reuse
    renews a record) and removes write_file temporaries a killed writer left (older
    than TMP_AGE_S); a file by any other name, or what a symlinked record points at,
    is never touched, and a directory that cannot be pruned fails nothing."""
    import os
    import time

    from mpibench.campaign.budget import PlanCache

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    used = PlanCache.path(PlanCache.key(spec, rows))
    d = used.parent
    d.mkdir(parents=True)
    old = time.time() - 10 * 86400
    names = [f"{i:064x}.json" for i in range(PlanCache.KEEP + 5)]
    for i, n in enumerate(names):       # names[0] the oldest
        (d / n).write_text("{}")
        os.utime(d / n, (old + i, old + i))
    target = tmp_path / "mine.json"
    target.write_text("keep me")
    (d / names[1]).unlink()
    os.symlink(target, d / names[1])     # a record that is a symlink: the link goes
    os.utime(d / names[1], (old + 1, old + 1), follow_symlinks=False)
    stale = d / f".{'a' * 64}.json.x1.tmp"
    young = d / f".{'b' * 64}.json.x2.tmp"
    for t, age in ((stale, PlanCache.TMP_AGE_S + 60), (young, 60)):
        t.write_text("{")
        os.utime(t, (time.time() - age,) * 2)
    other = d / "notes.txt"
    other.write_text("mine")
    os.utime(other, (old, old))
    assert PlanCache.plan(spec, rows)[1] is False      # written, then pruned
    left = sorted(p.name for p in d.iterdir() if PlanCache.NAME.fullmatch(p.name))
    assert len(left) == PlanCache.KEEP and used.name in left
    # the 5 oldest went, plus one for the record just written
    assert set(names) - set(left) == set(names[:6])
    assert target.read_text() == "keep me" and other.exists()
    assert not stale.exists() and young.exists()
    # a reuse renews a record: it outlives the records written before it was reused
    os.utime(used, (old - 1, old - 1))
    assert PlanCache.plan(spec, rows)[1] is True
    assert os.stat(used).st_mtime > old
    for i in range(3):
        (d / f"{i:064x}.json").write_text("{}")
    PlanCache.prune(d)
    assert used.exists() and len([p for p in d.iterdir()
                                  if PlanCache.NAME.fullmatch(p.name)]) == PlanCache.KEEP
    # a directory that cannot be listed prunes nothing and raises nothing
    assert PlanCache.prune(tmp_path / "missing") == 0


def _stored_pilot(store, spec, rows, cid=None, group="latency") -> int:
    """A campaign in a real store (cid's, else a new one) whose group `group` has these
    pilot launches done."""
    cid = store.add_campaign(spec.name) if cid is None else cid
    for rid in dict.fromkeys(r["run_id"] for r in rows):
        mine = [r for r in rows if r["run_id"] == rid]
        store.create_run(rid, cid, mine[0]["variant"], grp=group,
                         repeat=mine[0]["repeat"])
        store.set_run(rid, "done", elapsed=mine[0]["launch_s"])
        store.add_results(rid, [{"benchmark": r["benchmark"], "size": r["size"],
                                 "n": r["n"], "median": r["median"], "ci_low": r["ci_low"],
                                 "ci_high": r["ci_high"], "status": "ok",
                                 "extra": {"elapsed_s": r["cell_s"]}} for r in mine])
    return cid


def test_the_plans_seconds_and_reuse_reach_the_runs_timing_in_either_policy(tmp_path,
                                                                           monkeypatch):
    """`campaign run --json`'s budget_plan_s / budget_plan_reused were copied into the
    runner's timing by the local policy after its last cell only: a batch campaign's
    (BatchPolicy makes its own BudgetRule) read null, "no plan", though it planned
    (review s39b R12). The rule writes them when it plans, for whichever policy asked
    (launch_options, as both policies' cells do). With a real store holding the pilot:
    the first invocation plans (not reused), the next one's rule gets the same options
    from the plan cache and says so."""
    from mpibench.campaign.auto_repeats import launch_options
    from mpibench.campaign.plan import expand
    from mpibench.store.local import Store
    from mpibench.store.report_queries import launch_cost_rows

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec = _spec(tmp_path, "10")
    later = [c for c in expand(spec) if c.repeat == 2]
    with Store(tmp_path / "s.db") as store:
        cid = _stored_pilot(store, spec, _pilot_rows())
        # the campaign's table: its one group's 4 sizes and their geomean row
        want = _made(spec, launch_cost_rows(store, [f"{v}{r}" for v in "ab" for r in (0, 1)]),
                     5)
        got = []
        for _invocation in range(2):
            runner = _Runner(spec, store)
            runner.timing = {"synced": 1.0}
            rule = BudgetRule(runner, cid)
            opts = [launch_options(runner, c, rule, None) for c in later]
            got.append((opts, dict(runner.timing), runner.lines))
    for (opts, timing, lines), reused in zip(got, (False, True), strict=True):
        assert opts == [want[0]] * len(later)
        assert set(timing) == {"synced", "budget_plan_s", "budget_plan_reused"}
        assert timing["budget_plan_reused"] is reused
        assert isinstance(timing["budget_plan_s"], float) and timing["budget_plan_s"] >= 0
        assert len(lines) == 1 and want[1] in lines[0]
        assert lines[0].endswith("mpibench's plan cache)") is reused


def test_the_plan_record_surface_derandomized():
    """bench_fuzz's 'budget plan cache records' with a fixed seed: every mutated, resealed
    or misplaced record (symlinks, a directory, a FIFO, huge, deep nesting) is read as
    the plan written or as none, never another plan, never an exception. Before records
    were checked against what a plan sets and read without following a symlink: 172
    silent of 1000 (bench_fuzz.py --only "plan cache" --seed 12 --cases 2000)."""
    import random

    from support import surfaces

    surf = next(s for s in surfaces.SURFACES if s.name == "budget plan cache records")
    t = surf.run(random.Random(31), 400)
    assert t.tried >= 400 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples


def test_an_invocation_that_looked_for_no_plan_leaves_the_plans_timing_null(tmp_path):
    """`campaign run --json` says null for budget_plan_s / budget_plan_reused when no plan
    was looked for (docs/campaigns.md). The local policy used to copy its BudgetRule's
    figures after its last cell whatever happened, so a budgeted campaign's invocation with
    nothing left to run (every cell done: a resume after the end) reported 0.0 s of
    planning. Now the rule writes them when it plans (BudgetRule._plan), and only then."""
    from mpibench.campaign.local import LocalPolicy
    from mpibench.campaign.runner import Summary
    from mpibench.store.local import Store

    spec = _spec(tmp_path, "10")
    with Store(tmp_path / "s.db") as store:
        runner = _Runner(spec, store)
        runner.timing = {"synced": 1.0}
        LocalPolicy(runner).run([], Summary(1, 0), campaign_id=1, reattach=[], by_id={})
    assert runner.timing == {"synced": 1.0}


def test_the_plan_keys_code_hash_covers_what_the_stats_package_imports():
    """A kept plan is reused only when the code that made it is the same (PlanCache.code
    hashes PlanCache.sources()). The plan's description prints sizes with
    mpibench.units, which the hash left out (review s39b R10): a changed format kept the
    old text. Every mpibench module a file of mpibench/stats imports from outside the
    package, found by parsing those files, must be among the hashed sources."""
    import ast

    from mpibench.campaign.budget import PlanCache
    from mpibench.stats import budget as stats_budget

    pkg = Path(stats_budget.__file__).parent
    root = pkg.parent.parent
    def modules(node) -> list[str]:
        """The mpibench modules an import statement names (absolute or relative)."""
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if not isinstance(node, ast.ImportFrom):
            return []
        if node.level:      # relative to mpibench.stats
            parts = ["mpibench", "stats"][:3 - node.level] if node.level <= 2 else []
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        # `from mpibench import units`: the names are modules
        return [f"{base}.{a.name}" for a in node.names] if base == "mpibench" else [base]

    wanted = set()
    for f in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            for mod in modules(node):
                if mod.startswith("mpibench.") and not mod.startswith("mpibench.stats"):
                    base = root / mod.replace(".", "/")
                    wanted.add(base / "__init__.py" if base.is_dir() else base.with_suffix(".py"))
    assert wanted, "the stats package imports nothing from mpibench: the premise changed"
    assert wanted <= set(PlanCache.sources()), wanted - set(PlanCache.sources())


def test_the_plan_line_gives_the_launches_that_decide_every_cell_whatever_its_gain(tmp_path):
    """budget = "auto" chooses its options at gain 1 as before (the same options as
    stats.budget's plan alone) and its line adds the launches per side that decide every
    cell whatever its true gain at those options (stop 41: significant or equivalent; more
    than the gain-1 plan's, which can leave a gain near the margin's edge undecided)."""
    from mpibench.stats import budget

    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    p = BudgetRule.plan_rows(spec, rows)
    plain = budget.plan_from_rows(rows, ["a", "b"], 0.05, 10, rounds=BudgetRule.rounds(spec))
    assert p.best == plain.best and p.every_asked
    assert p.every_launches >= p.best.launches
    assert (f"every cell decided whatever its gain (significant, or equivalent within ±5%): "
            f"{p.every_launches} launches per side at these options, for a table of these "
            "cells") in p.describe()


def _two_groups(store, spec, rows) -> int:
    """_stored_pilot's campaign with a second group, `bandwidth`, whose pilot measured
    another benchmark (Allreduce) at the same sizes: the campaign's table holds both."""
    other = [dict(r, run_id="x" + r["run_id"], benchmark="Allreduce") for r in rows]
    return _stored_pilot(store, spec, other, _stored_pilot(store, spec, rows), "bandwidth")


def test_the_every_cell_launches_are_planned_for_the_whole_campaign_table(tmp_path,
                                                                          monkeypatch):
    """A `decide` campaign's family is its whole comparison table (every group's cells,
    geomean rows and verdicts), so the launches that decide every cell are planned at
    that table's least cell level, not at the planning group's own (review s41 R4: M
    understated by a few % per doubling of the rows). One group: the same M as planned on
    its own rows (the table is its cells); a second group measuring another benchmark
    doubles the table's rows (4 sizes + a geomean row each: 5 -> 10), which lowers the
    cell level and raises M; the options (chosen at gain 1) stay the same."""
    from mpibench.store.local import Store

    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    spec, rows = _spec(tmp_path, "10"), _pilot_rows()
    alone = BudgetRule.plan_rows(spec, rows)
    assert budget.campaign_table_rows({("latency", None): rows}, ["a", "b"]) == 5
    # the table keys a cell by its point and ranks too (review s42 R3): a second group of
    # the same benchmark and sizes at another np is 4 more cells under the one geomean
    # row; at the same np and params the table pools it with the first: no more rows
    other = [dict(r, run_id="x" + r["run_id"]) for r in rows]
    assert budget.campaign_table_rows({("latency", ("{}", 2)): rows,
                                       ("wide", ("{}", 4)): other}, ["a", "b"]) == 9
    assert budget.campaign_table_rows({("latency", ("{}", 2)): rows,
                                       ("again", ("{}", 2)): other}, ["a", "b"]) == 5
    assert BudgetRule.plan_rows(spec, rows, 5).every_launches == alone.every_launches
    lines = {}
    for name, make in (("one", _stored_pilot), ("two", _two_groups)):
        with Store(tmp_path / f"{name}.db") as store:
            runner = _Runner(spec, store)
            rule = BudgetRule(runner, make(store, spec, rows))
            lines[name] = (rule.table_rows(), rule._plan("latency"), runner.lines[0])
    (n1, o1, l1), (n2, o2, l2) = lines["one"], lines["two"]
    # counted once per set of done pilot launches: every group's plan asks, the count
    # reads every group's rows (one more pilot launch done: counted again)
    calls = []
    real = budget.campaign_table_rows
    monkeypatch.setattr(budget, "campaign_table_rows",
                        lambda *a: calls.append(1) or real(*a))
    with Store(tmp_path / "two.db") as store:
        rule = BudgetRule(_Runner(spec, store), 1)
        assert rule.table_rows() == rule.table_rows() == 10 and len(calls) == 1
        _stored_pilot(store, spec, [dict(r, run_id="y" + r["run_id"], benchmark="Gather")
                                    for r in rows if r["variant"] == "a"], 1, "solo")
        assert rule.table_rows() == 10 and len(calls) == 2
    assert (n1, n2) == (5, 10) and o1 == o2 == alone.best.options()
    m = [int(line.split("equivalent within ±5%): ")[1].split()[0]) for line in (l1, l2)]
    assert m[0] == alone.every_launches and m[1] > m[0], (m, l1, l2)
    assert "for the campaign's table (10 rows: its groups' cells and geomean rows)" in l2
