"""compare on the launches of a repeats = "auto" campaign: each cell's gain CI and p are the
wider of the ordinary test and the stage-2-spread one (stats.two_stage), the table says which,
and other campaigns' tables are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from mpibench.report.judge import compare_groups
from mpibench.stats import launch as L
from mpibench.stats import simulate as S
from mpibench.stats import two_stage as T

AUTO = {"order": "interleaved", "repeats_auto": {"min": 3, "max": 10, "target": 0.05}}


def _compare(tmp_path, spec, name):
    store, groups = S.build_store(tmp_path / f"{name}.db", np.random.default_rng(4),
                                  launches=7, sigma_l=0.03, within=0.002,
                                  sizes=(0, 8, 64, 1024), n_samples=(20, 40), spec=spec)
    try:
        cmp = compare_groups(store, groups, "a")
        from mpibench.report.data import load_cells
        cells = load_cells(store, groups)
    finally:
        store.close()
    return cmp, cells


def _block(cmp, cells):
    keys = [r.key for r in cmp.rows]
    block = [(cells[k]["a"].by_launch, cells[k]["b"].by_launch, "lower") for k in keys]
    rounds = {}
    for k in keys:
        for side in ("a", "b"):
            rounds.update(cells[k][side].by_round)
    return block, rounds


def test_auto_campaign_cells_get_the_stage_aware_test_and_say_which(tmp_path):
    cmp, cells = _compare(tmp_path, AUTO, "auto")
    block, rounds = _block(cmp, cells)
    # stage 1: repeat index below the rule's min (build_store's run ids are "<side>-<repeat>")
    first = {f"{s}-{i}" for s in "ab" for i in range(3)}
    want = T.compare_staged(block, first, rounds=rounds)
    assert len(want) == len(cmp.rows) == 4
    assert any(which == T.STAGE_TWO for _t, which in want)   # the case is not trivial
    for row, (t, which) in zip(cmp.rows, want, strict=True):
        d = row.deltas["b"]
        assert d.test == t and d.test.pairing == "round"
        note = cmp.footnotes[d.notes[-1] - 1]
        assert note.startswith('repeats = "auto" (two-stage)')
        assert note.endswith("stage-2 spread's" if which == T.STAGE_TWO else "ordinary one")
        # the printed CI and p are one statistic: the CI excludes 1 exactly when p <= 0.05,
        # and the table's adjusted CI exactly when the adjusted p <= alpha
        assert (d.test.ci_low > 1 or d.test.ci_high < 1) == (d.test.p <= 0.05)
        lo, hi = d.ci_holm
        assert (lo > 1 or hi < 1) == d.significant
    # the geomean row and the verdict: the same rule on the per-launch aggregate
    want_agg, _which = T.aggregate_staged(block, first, rounds=rounds)
    (summary,) = cmp.summaries
    assert summary.test["b"] == want_agg == cmp.overall["b"]
    assert want_agg != L.aggregate(block, rounds=rounds)      # the case is not trivial
    assert any(n.startswith('repeats = "auto" (two-stage): the geomean rows')
               for n in cmp.footnotes)


@pytest.mark.parametrize("spec", [{"order": "interleaved"},
                                  {"order": "interleaved",
                                   "repeats_auto": {"min": 3, "max": 5, "target": 0.05}},
                                  {"order": "interleaved", "repeats_auto": {
                                      "until": "decided", "min": 3, "max": 12, "step": 3}}],
                         ids=["fixed", "no-choice", "decide"])
def test_other_campaigns_keep_the_ordinary_test(tmp_path, spec):
    # a fixed repeat count, an auto rule that cannot stop before its maximum (max < min +
    # 3), a decide campaign: compare_cells, no stage footnote
    cmp, cells = _compare(tmp_path, spec, "other")
    block, rounds = _block(cmp, cells)
    for row, t in zip(cmp.rows, L.compare_cells(block, rounds=rounds), strict=True):
        d = row.deltas["b"]
        if "decided" not in str(spec):
            assert d.test == t
        assert not any("two-stage" in cmp.footnotes[n - 1] for n in d.notes)
    if "decided" not in str(spec):
        assert cmp.summaries[0].test["b"] == L.aggregate(block, rounds=rounds)
    assert not any("two-stage" in n for n in cmp.footnotes)


def test_a_cut_short_cell_of_an_auto_campaign_is_tested_alone_in_both_tests(tmp_path):
    """A launch of a repeats = "auto" campaign that stopped 'preempted' on 2 clean samples
    (--exclude-preempted) puts its cell alone in the ordinary AND the stage-2-spread test
    (compare_staged gets compare_cells' cut, as the plain campaign's test does), and the
    cell is footnoted; before, the staged path pooled it with the clean sizes."""
    store, groups = S.build_store(tmp_path / "cut.db", np.random.default_rng(4), launches=7,
                                  sigma_l=0.03, within=0.002, sizes=(0, 8, 64, 1024),
                                  n_samples=(20, 40), spec=AUTO)
    try:
        store.db.execute("UPDATE results SET stop_reason = 'preempted', n = 2 "
                         "WHERE run_id = 'b-5' AND size = 64")
        store.db.commit()
        cmp = compare_groups(store, groups, "a")
        from mpibench.report.data import load_cells
        cells = load_cells(store, groups)
    finally:
        store.close()
    block, rounds = _block(cmp, cells)
    first = {f"{s}-{i}" for s in "ab" for i in range(3)}
    cut = [set(), set(), {"b-5"}, set()]
    assert [cells[r.key]["b"].cut_short for r in cmp.rows] == cut
    want = T.compare_staged(block, first, rounds=rounds, cut=cut)
    assert [r.deltas["b"].test for r in cmp.rows] == [t for t, _w in want]
    alone = T.compare_staged([block[2]], first, rounds=rounds)[0][0]
    assert want[2][0] == alone != T.compare_staged(block, first, rounds=rounds)[2][0]
    assert not want[2][0].pooled and want[0][0].pooled
    notes = [cmp.footnotes[i - 1] for i in cmp.rows[2].deltas["b"].notes]
    assert any(n.startswith("tested on its own launches: 1 launch(es)") for n in notes)
