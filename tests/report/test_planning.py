"""report/planning.py: the plan table's 'detectable now' and the verdict's planning figure
with a thin side (2 vs 7 launches through the real store -> compare path)."""

from __future__ import annotations

import numpy as np
import pytest

from mpibench.report.judge import compare_groups
from mpibench.report.planning import plan_table
from mpibench.stats import launch as L
from mpibench.stats import simulate as S


@pytest.mark.parametrize("launches", [(2, 7), (3, 7)])
def test_detectable_now_plans_a_thin_side_at_its_own_df(tmp_path, launches):
    """2 vs 7, sizes sharing launch effects: every cell's 'detectable' is planned on the
    thin side's launch part at its own df (stats.launch.plan_component, through
    planning_components), the table's 'detectable now' is their median, and where the
    test floored the thin side it is larger than the figure planned on the test's floored
    components at the floor's df (which had 57-62% true power, docs/statistics.md
    "Planning"); the power itself is checked in tests/stats/test_launch.py. That bound
    guards the cells planned by plan_component's rule; since stop 40 the cells of a
    2-launch thin side (here every cell: 4 sizes, each its own cell part) are planned by
    plan_expect with plan_boot's median-bias correction, whose figure may sit below the
    floored components' (it models the floor per draw): for them the figure is
    detectable_at's, and their power is bench_inference --only-planning-own's "2 vs 7 x 4
    sizes" row (81.3%, docs/statistics.md "Stop 40") and, for a 2-launch thin side,
    tests/stats/test_launch.py's test_the_detectable_of_a_thin_side_really_quieter_has_its_power.
    At 3 vs 7 the floored cells are still plan_component's, and the bound must hold there
    (review s40 R11: at 2 vs 7 alone it no longer ran)."""
    rng = np.random.default_rng(7)
    floored = guarded = 0
    thin = launches[0] - 1
    for i in range(6):
        store, sets = S.build_store(tmp_path / f"s{i}.db", rng, launches=launches,
                                    sigma_l=0.05, within=0.01, n_samples=(30, 40),
                                    sizes=(1, 64, 4096, 65536))
        try:
            cmp = compare_groups(store, sets, "a")
        finally:
            store.close()
        tests = [r.deltas["b"].test for r in cmp.rows]
        assert all(t.tested and t.pooled for t in tests)
        for t in tests:
            assert t.detectable == L.detectable_at(t, cmp.alpha)
            dfs = sorted(d for _, d in t.planned_on)
            # thin launch part at its own 1 df; 4 sizes (< FEW_CELLS): every size's cell
            # part is its own on both sides (6 df on the 7-launch side; 1 on the thin one,
            # 2 where the test floored it: _each_cell), the thin one planned at the df of
            # the test's expected critical value over the two (_plan_mixed_df)
            assert dfs[0] == thin and dfs[2:] == [6, 6]
            assert t.planned_on[1][1] == L._plan_mixed_df(float(thin), 6.0)
            assert [d for _, d in t.planned_on[2:]] == [d for _, d in t.components[2:]]
            # the test floored the thin launch part (planning starts from the launch part
            # before the floor; from the cell parts as the test uses them)
            if t.components[0][1] != t.planned_on[0][1]:
                floored += 1
                plan, ns = tuple(t.planned_on), (t.n_base, t.n_cand)
                if L._expects(t.pooled, t.own_cell, t.pairing, plan, ns, t.base_components):
                    assert t.detectable == L.plan_boot(plan, ns, t.base_components,
                                                       cmp.alpha, L.POWER, L.plan_floors(t))
                else:
                    guarded += 1
                    assert t.detectable > L._detectable(t.components, cmp.alpha, L.POWER)
        (rec,) = plan_table(cmp, 0.05).records
        assert rec["detectable_now_median"] == float(np.median([t.detectable for t in tests]))
    assert floored > 0
    assert (guarded > 0) == (launches[0] > L.PLAN_BOOT_MAX_N), (floored, guarded)


@pytest.mark.parametrize("small", [3, 5])
def test_plan_of_an_unbalanced_unpaired_row_is_never_below_the_larger_side(tmp_path, small):
    """3 (and 5, review R15) vs 7 launches, unpaired, --detect 50%: at sd ~0.05 plain
    launches_needed asks about 3 per side, but it is unbalanced (stats.launch.unbalanced):
    a size noisier on the smaller side alone is not caught below balance, so every plan
    column asks for at least the larger side's 7 per side, as the cells' notes and the verdict do
    (stats.launch.launches_needed_for). Before, the plan table's unpaired rows asked
    launches_needed at the sd and said 3."""
    rng = np.random.default_rng(21)
    store, sets = S.build_store(tmp_path / "s.db", rng, launches=(small, 7), sigma_l=0.05,
                                within=0.01, n_samples=(30, 40), sizes=(1, 64, 4096, 65536))
    try:
        cmp = compare_groups(store, sets, "a")
    finally:
        store.close()
    ds = [r.deltas["b"] for r in cmp.rows]
    assert all(d.tested and d.test.pairing == "none" for d in ds)
    assert all(L.unbalanced(d.n_base, d.n_cand) for d in ds)
    assert max(L.launches_needed(d.sd_log, 0.5) for d in ds) < 7
    (rec,) = plan_table(cmp, 0.5).records
    plans = [rec["needed_median_cell"], rec["needed_noisiest_cell"],
             rec["needed_all_tests_holm"]]
    assert plans == [7, 7, 7], rec
    # a balanced 7 + 7 row is not raised: its plan is launches_needed's own
    rng = np.random.default_rng(21)
    store, sets = S.build_store(tmp_path / "b.db", rng, launches=7, sigma_l=0.05,
                                within=0.01, n_samples=(30, 40), sizes=(1, 64, 4096, 65536))
    try:
        cmp = compare_groups(store, sets, "a")
    finally:
        store.close()
    (rec,) = plan_table(cmp, 0.5).records
    worst = max(r.deltas["b"].sd_log for r in cmp.rows)
    assert rec["needed_noisiest_cell"] == L.launches_needed(worst, 0.5) < 7
