"""The jobs a batch campaign submits (campaign/batch.job_groups): one job a cell keeps the
plan's balanced order; grouped cells (group_cells > 1) go out chunk by chunk with the
variants taking turns first, as the plan's rounds do, not one variant first every time."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from mpibench.campaign.batch import job_groups
from mpibench.campaign.plan import expand
from mpibench.campaign.spec import load


def cells_of(tmp_path: Path, names, repeats: int):
    text = (f'[campaign]\nname = "g"\nrepeats = {repeats}\n'
            + "".join(f'[variants.{n}]\nstack = "openmpi"\n' for n in names)
            + '[benchmarks.pp]\nbenchmarks = ["PingPong"]\nsizes = "0"\n')
    p = tmp_path / "c.toml"
    p.write_text(text)
    return expand(load(p))


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
