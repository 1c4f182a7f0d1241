"""The run order of interleaved cells (campaign/plan.py): the variants of a point are
counterbalanced from round to round (williams_row), ids do not depend on the order, random
order is the plain order shuffled as before, and a campaign stored under the fixed order
resumes with its remaining cells in the balanced one."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from mpibench.campaign.plan import expand, williams_row
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.store import Store, queries
from support.common import TWO_STACK_CAMPAIGN

BASE = TWO_STACK_CAMPAIGN

# the ids and the random order mpibench gave BASE before the order was balanced (stop 37's
# plan.py): neither may move
FIXED_IDS = [("a", 0, "c-7fdea50ebdc45394"), ("b", 0, "c-34a4aee8daae3f28"),
             ("a", 1, "c-aeeab2efd59c6a50"), ("b", 1, "c-5889f744de39ee49"),
             ("a", 2, "c-6e9e9b5b77b2a9c6"), ("b", 2, "c-e963eb68a1cfa2e2")]
RANDOM_SEED_7 = ["c-6e9e9b5b77b2a9c6", "c-7fdea50ebdc45394", "c-e963eb68a1cfa2e2",
                 "c-5889f744de39ee49", "c-34a4aee8daae3f28", "c-aeeab2efd59c6a50"]


def spec_of(tmp_path: Path, text: str):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return load(p)


def variants_text(names, repeats: int, extra: str = "", group: str = "") -> str:
    """A campaign of identical Open MPI variants `names` and two core groups (pp, ar);
    extra: more [campaign] lines; group: more lines of group ar."""
    return (f'[campaign]\nname = "o"\nrepeats = {repeats}\n{extra}'
            + "".join(f'[variants.{n}]\nstack = "openmpi"\n' for n in names)
            + '[benchmarks.pp]\nbenchmarks = ["PingPong"]\nsizes = "0"\n'
            + f'[benchmarks.ar]\nbenchmarks = ["Allreduce"]\nsizes = "8"\n{group}')


@pytest.mark.parametrize("k", range(1, 8))
def test_williams_rows_balance_position_and_carry_over(k):
    cycle = k if k % 2 == 0 else 2 * k
    rows = [williams_row(k, r) for r in range(3 * cycle)]
    assert all(sorted(row) == list(range(k)) for row in rows)
    assert rows[0] == list(range(k))  # round 0 runs the plain order
    assert rows[cycle:2 * cycle] == rows[:cycle]
    # every prefix of rounds: each variant in each position within one of the others
    for n in range(1, len(rows) + 1):
        for pos in range(k):
            counts = Counter(row[pos] for row in rows[:n])
            got = [counts.get(v, 0) for v in range(k)]
            assert max(got) - min(got) <= 1, (n, pos, got)
    # a full cycle: each variant directly after each other one equally often
    follows = Counter(pair for row in rows[:cycle] for pair in itertools.pairwise(row))
    assert set(follows) == {(a, b) for a in range(k) for b in range(k) if a != b} or k == 1
    assert len(set(follows.values())) <= 1
    # and any two variants (those a "decide" stage keeps of a point) each run before the
    # other in half the rounds of a cycle
    for a, b in itertools.combinations(range(k), 2):
        assert 2 * sum(row.index(a) < row.index(b) for row in rows[:cycle]) == cycle


def test_two_variants_alternate_and_keep_their_ids(tmp_path):
    cells = expand(spec_of(tmp_path, BASE))
    assert [(c.variant.name, c.repeat) for c in cells] == [
        ("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    assert [c.seq for c in cells] == list(range(6))
    assert sorted((c.variant.name, c.repeat, c.id) for c in cells) == sorted(FIXED_IDS)


def test_random_order_is_the_plain_order_shuffled_as_before(tmp_path):
    spec = spec_of(tmp_path, BASE.replace('name = "t"', 'name = "t"\norder = "random"'))
    assert [c.id for c in expand(spec, seed=7)] == RANDOM_SEED_7


@pytest.mark.parametrize("names, repeats", [(("a", "b"), 7), (("a", "b", "c"), 8),
                                            (("a", "b", "c", "d"), 5)])
def test_each_variant_is_first_in_its_share_of_every_points_rounds(tmp_path, names, repeats):
    cells = expand(spec_of(tmp_path, variants_text(names, repeats)))
    rounds: dict[tuple, list] = {}
    for c in cells:  # plan order: a point's launches of a round in the order they run
        rounds.setdefault((c.group.name, c.repeat), []).append(c.variant.name)
    for group in ("pp", "ar"):
        order = [rounds[(group, r)] for r in range(repeats)]
        assert all(sorted(o) == sorted(names) for o in order)
        for pos in range(len(names)):
            got = Counter(o[pos] for o in order)
            counts = [got.get(n, 0) for n in names]
            assert max(counts) - min(counts) <= 1, (group, pos, counts)
    # the rounds still follow each other: no launch of round r + 1 before one of round r
    assert [c.repeat for c in cells] == sorted(c.repeat for c in cells)
    # the same cells, ids and all, as the plain order (random order draws from it)
    plain = expand(spec_of(tmp_path, variants_text(names, repeats, 'order = "random"\n')),
                   seed=1)
    assert sorted(c.id for c in cells) == sorted(c.id for c in plain)


def test_excluded_variants_are_balanced_among_those_left(tmp_path):
    text = variants_text(("a", "b", "c"), 4, group='exclude = [{ variant = "c" }]\n')
    cells = expand(spec_of(tmp_path, text))
    ar = [(c.repeat, c.variant.name) for c in cells if c.group.name == "ar"]
    assert ar == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b"),
                  (3, "b"), (3, "a")]


def test_a_campaign_stored_under_the_fixed_order_resumes_in_the_balanced_one(tmp_path):
    # a half-run campaign an earlier mpibench stored (seq = the fixed order a b, a b, ...;
    # round 0 and a's launch of round 1 done): the same ids, renumbered to this plan, and
    # what is left to run is exactly the pending cells, in the balanced order
    spec = spec_of(tmp_path, BASE.replace("repeats = 3", "repeats = 4"))
    with Store(tmp_path / "s.db") as store:
        cid, cells, _ = CampaignRunner(spec, store, []).sync()
        fixed = sorted(cells, key=lambda c: (c.repeat, c.variant.name))
        with store.transaction():
            queries.set_seqs(store, [(i, c.id) for i, c in enumerate(fixed)])
            for c in fixed[:3]:
                store.set_run(c.id, "done")
        assert queries.run_seqs(store, cid) == {c.id: i for i, c in enumerate(fixed)}
        _, again, _ = CampaignRunner(spec, store, []).sync()
        assert [c.id for c in again] == [c.id for c in cells]
        assert queries.run_seqs(store, cid) == {c.id: c.seq for c in again}
        status = queries.run_statuses(store, cid)
        left = [(c.variant.name, c.repeat) for c in again if status[c.id] == "pending"]
    assert left == [("b", 1), ("a", 2), ("b", 2), ("b", 3), ("a", 3)]
