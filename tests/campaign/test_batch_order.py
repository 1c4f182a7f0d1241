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
from mpibench.campaign.batch import job_groups
from mpibench.campaign.plan import expand, williams_row
from mpibench.campaign.spec import load


def spec_of(tmp_path: Path, names, repeats, groups=("pp",)):
    text = (f'[campaign]\nname = "g"\nrepeats = {repeats}\n'
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
    got = leaders(stages, n, names)
    # restarting the turns at every stage put the first variant first in each stage's
    # first chunk: "b" never led a stage with one chunk a stage
    assert got == plan_leaders(names, len(got)), got
    counts = Counter(got)
    assert max(counts.values()) - min(counts[v] for v in names) <= 1, counts
    assert stages[1][0].repeat > 0
    assert job_groups(stages[1], n, names)[0][0].variant.name == names[1]


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
