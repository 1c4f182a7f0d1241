"""The jobs a batch campaign submits (campaign/batch.job_groups): one job a cell keeps the
plan's balanced order; grouped cells (group_cells > 1) go out chunk by chunk with the
variants taking turns first, as the plan's rounds do, not one variant first every time,
and a campaign's later submissions (stages of "decide", a resume) carry the turns on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from mpibench.campaign.auto_repeats import Stages
from mpibench.campaign.batch import BatchPolicy, job_groups
from mpibench.campaign.plan import expand, williams_row
from mpibench.campaign.spec import load


def spec_of(tmp_path: Path, names, repeats, groups=("pp",), group_cells=None):
    text = (f'[campaign]\nname = "g"\nrepeats = {repeats}\n'
            + (f'[scheduler]\nname = "slurm"\ngroup_cells = {group_cells}\n'
               if group_cells is not None else "")
            + "".join(f'[variants.{n}]\nstack = "openmpi"\n' for n in names)
            + "".join(f'[benchmarks.{g}]\nbenchmarks = ["PingPong"]\nsizes = "0"\n'
                      for g in groups))
    p = tmp_path / "c.toml"
    p.write_text(text)
    return load(p)


def cells_of(tmp_path: Path, names, repeats: int, groups=("pp",)):
    return expand(spec_of(tmp_path, names, repeats, groups))


def leaders(submissions, n, names):
    """The variant leading each chunk of the jobs of these submissions, one after the
    other (every variant has a chunk in each of a submission's chunk slots here)."""
    out = []
    for cells in submissions:
        groups = job_groups(cells, n, names)
        out += [groups[j][0].variant.name for j in range(0, len(groups), len(names))]
    return out


def plan_leaders(names, chunks):
    """The plan's rounds' first variants, williams_row's rows 0, 1, ...: what the chunks
    of a campaign take in turn, however many submissions it is cut into."""
    return [names[williams_row(len(names), t)[0]] for t in range(chunks)]


def test_one_cell_a_job_keeps_the_plan_order(tmp_path):
    cells = cells_of(tmp_path, ["a", "b"], 4)
    assert [g for g in job_groups(cells, 1, ["a", "b"])] == [[c] for c in cells]


@pytest.mark.parametrize("names,n", [(["a", "b"], 2), (["a", "b"], 3), (["a", "b", "c"], 2)])
def test_grouped_chunks_take_turns_first(tmp_path, names, n):
    repeats = 12
    cells = cells_of(tmp_path, names, repeats)
    groups = job_groups(cells, n, names)
    # every cell once, each job one variant's consecutive repeats
    assert sorted(c.id for g in groups for c in g) == sorted(c.id for c in cells)
    for g in groups:
        assert len({c.variant.name for c in g}) == 1
        assert [c.repeat for c in g] == list(range(g[0].repeat, g[0].repeat + len(g)))
    chunks = -(-repeats // n)
    firsts = Counter(groups[j * len(names)][0].variant.name for j in range(chunks))
    # the fixed order put the first variant first in every chunk; balanced: each variant
    # first in an equal share of the chunks, within one
    assert max(firsts.values()) - min(firsts[v] for v in names) <= 1, firsts
    # a chunk's jobs follow each other: chunk j's jobs all come before chunk j+1's
    reps = [g[0].repeat // n for g in groups]
    assert reps == sorted(reps)


def test_all_of_a_variant_in_one_job(tmp_path):
    cells = cells_of(tmp_path, ["a", "b"], 3)
    groups = job_groups(cells, 0, ["a", "b"])
    assert [[c.variant.name for c in g] for g in groups] == [["a"] * 3, ["b"] * 3]


def decide_stages(tmp_path, names, design):
    """A repeats = "decide" campaign's submissions, as its Stages cut them, when every look
    leaves every cell undecided (the look itself reads the store: here it keeps all)."""
    spec = spec_of(tmp_path, names, design)
    stages = Stages(SimpleNamespace(spec=spec, log=lambda msg: None), 0)
    stages._look = lambda n: (lambda c: True)
    return list(stages(expand(spec)))


@pytest.mark.parametrize("names,design,n", [
    (["a", "b"], '"decide"', 3),       # looks 3, 6, 9, 12: one chunk a variant a stage
    (["a", "b"], '"decide"', 0),       # all of a variant's stage in one job
    (["a", "b"], '{ until = "decided", min = 2, max = 10, step = 2 }', 2),
    (["a", "b", "c"], '"decide"', 3),
    (["a", "b", "c"], '"decide"', 0),  # n = 0's turn (review s39b R8: untested before)
])
def test_a_decide_campaigns_stages_carry_the_turns_on(tmp_path, names, design, n):
    stages = decide_stages(tmp_path, names, design)
    assert len(stages) > 2
    subs = staged_jobs(tmp_path, names, design, n)
    assert [sorted(c.id for j in jobs for c in j) for jobs in subs] == \
        [sorted(c.id for c in s) for s in stages]
    got = [jobs[j][0].variant.name for jobs in subs for j in range(0, len(jobs), len(names))]
    # restarting the turns at every stage put the first variant first in each stage's
    # first chunk: "b" never led a stage with one chunk a stage
    assert got == plan_leaders(names, len(got)), got
    counts = Counter(got)
    assert max(counts.values()) - min(counts[v] for v in names) <= 1, counts
    assert stages[1][0].repeat > 0
    assert subs[1][0][0].variant.name == names[1]


@pytest.mark.parametrize("groups,n,done", [
    (("pp",), 2, 6),           # chunk boundary: the same jobs as one submission
    (("pp",), 3, 4),           # off one: rows still run on (chunk 1's second half stays)
    (("pp", "ar"), 4, 6),      # two cells a variant a round: a chunk is two rounds
    (("pp", "ar"), 3, 5),
])
def test_a_resumed_campaign_carries_the_turns_on(tmp_path, groups, n, done):
    names = ["a", "b"]
    cells = cells_of(tmp_path, names, 12, groups)
    before = [c for c in cells if c.repeat < done]
    after = [c for c in cells if c.repeat >= done]
    got = leaders([before, after], n, names)
    assert got == plan_leaders(names, len(got)), got
    if len(groups) * done % n == 0:
        assert job_groups(before, n, names) + job_groups(after, n, names) == \
            job_groups(cells, n, names)


def staged_jobs(tmp_path, names, design, n, done=0):
    """The jobs the batch policy submits, submission by submission, for a campaign file
    with [scheduler] group_cells = n and these repeats, as written by a user: the policy's
    own Stages cut the cells (every look keeps all) and its _job_requests groups them.
    done: the rounds an earlier invocation ran (a resume submits only the rest)."""
    spec = spec_of(tmp_path, names, design, group_cells=n)
    assert spec.scheduler.group_cells == n
    runner = SimpleNamespace(spec=spec, log=lambda msg: None)
    policy = BatchPolicy(runner)
    policy.stages = Stages(runner, 0) if spec.auto else None
    if policy.stages:
        policy.stages._look = lambda k: (lambda c: True)
    todo = [c for c in expand(spec) if c.repeat >= done]
    return [policy._job_requests(s) for s in (policy.stages(todo) if policy.stages else [todo])]


@pytest.mark.parametrize("names,design,stages", [
    # looks at 3, 5, 7, 9: stages of 3, 2, 2, 2 rounds (review s39b R7: a, a, b, a)
    (["a", "b"], '{ until = "decided", min = 3, max = 9, step = 2 }', 4),
    (["a", "b", "c"], '{ until = "decided", min = 3, max = 9, step = 2 }', 4),
    (["a", "b"], '{ until = "decided", min = 2, max = 11, step = 3 }', 4),
    # "auto": stage 1 of min = 4 rounds, stage 2 of the 2 up to max (was a, a)
    (["a", "b"], '{ min = 4, max = 6, target = "5%" }', 2),
])
def test_all_of_a_variant_a_job_takes_turns_over_unequal_stages(tmp_path, names, design, stages):
    subs = staged_jobs(tmp_path, names, design, 0)
    assert len(subs) == stages
    for jobs in subs:
        # one job a variant a stage, each variant once
        assert sorted(j[0].variant.name for j in jobs) == sorted(names)
        assert all(len({c.variant.name for c in j}) == 1 for j in jobs)
    got = [jobs[0][0].variant.name for jobs in subs]
    assert got == plan_leaders(names, len(got)), got


@pytest.mark.parametrize("design,done,want", [
    # the first invocation's one submission (led by a), then the rest
    ("6", 4, ["b"]),
    ("6", 1, ["b"]),
    # stopped after the look at 3 (stage 0-2 ran, led by a): stages 3-4, 5-6, 7-8
    ('{ until = "decided", min = 3, max = 9, step = 2 }', 3, ["b", "a", "b"]),
    # stopped inside stage 3-4 (a led 0-2, b led round 3): round 4's rest is a
    # submission of its own
    ('{ until = "decided", min = 3, max = 9, step = 2 }', 4, ["a", "b", "a"]),
    # a led 0-2, b 3-4, a round 5: round 6 is b's
    ('{ until = "decided", min = 3, max = 9, step = 2 }', 6, ["b", "a"]),
])
def test_all_of_a_variant_a_job_takes_turns_after_a_resume(tmp_path, design, done, want):
    subs = staged_jobs(tmp_path, ["a", "b"], design, 0, done=done)
    assert [jobs[0][0].variant.name for jobs in subs] == want


def test_a_resume_follows_the_reattached_jobs_before_the_rule_looks(tmp_path, monkeypatch):
    """A decide campaign whose harness ended while stage 1's jobs were queued: the resume
    re-attaches them and its todo starts at stage 2. The rule's look at stage 2's start
    must see stage 1's launches, so the re-attached jobs are followed to their end before
    the stages are cut (review s40 R2: the look came first, on the rounds before them).
    The policy's own run() with the campaign file as a user writes it; the jobs' following
    (_run_batch) and the look (Stages._look) record when they happen."""
    spec = spec_of(tmp_path, ["a", "b"], '{ until = "decided", min = 3, max = 9, step = 2 }',
                   group_cells=0)
    runner = SimpleNamespace(spec=spec, log=lambda msg: None)
    policy = BatchPolicy(runner)
    cells = expand(spec)
    events = []

    def look(self, n):
        events.append(("look", n))
        return lambda c: True

    monkeypatch.setattr(Stages, "_look", look)
    monkeypatch.setattr(policy, "_run_batch", lambda todo, reattach, summary, by_id: events.append(
        ("jobs", sorted({c.repeat for c in todo}), [j for j, _ in reattach])))
    stage1 = [c.id for c in cells if c.repeat < 3]
    todo = [c for c in cells if c.repeat >= 3]
    policy.run(todo, SimpleNamespace(auto_skipped=0), campaign_id=0,
               reattach=[("42", stage1)], by_id={c.id: c for c in cells})
    assert events[0] == ("jobs", [], ["42"]), events
    assert events[1] == ("look", 3), events
    assert [e for e in events if e[0] == "jobs"][1:] == [
        ("jobs", [3, 4], []), ("jobs", [5, 6], []), ("jobs", [7, 8], [])], events
