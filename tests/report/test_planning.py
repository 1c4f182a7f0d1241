"""report/planning.py: the plan table's 'detectable now' and the verdict's planning figure
with a thin side (2 vs 7 launches through the real store -> compare path)."""

from __future__ import annotations

import numpy as np

from mpibench.report.judge import compare_groups
from mpibench.report.planning import plan_table
from mpibench.stats import launch as L
from mpibench.stats import simulate as S


def test_detectable_now_plans_a_thin_side_at_its_own_df(tmp_path):
    """2 vs 7, sizes sharing launch effects: every cell's 'detectable' is planned on the
    thin side's launch part at its own df (stats.launch.plan_component, through
    planning_components), the table's 'detectable now' is their median, and where the
    test floored the thin side it is larger than the figure planned on the test's floored
    components at the floor's df (which had 57-62% true power, docs/statistics.md
    "Planning"); the power itself is checked in tests/stats/test_launch.py."""
    rng = np.random.default_rng(7)
    floored = 0
    for i in range(6):
        store, sets = S.build_store(tmp_path / f"s{i}.db", rng, launches=(2, 7),
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
            assert dfs[0] == 1 and dfs[2:] == [6, 6]
            assert t.planned_on[1][1] == L._plan_mixed_df(1.0, 6.0)
            assert [d for _, d in t.planned_on[2:]] == [d for _, d in t.components[2:]]
            # the test floored the thin launch part (planning starts from the launch part
            # before the floor; from the cell parts as the test uses them)
            if t.components[0][1] != t.planned_on[0][1]:
                floored += 1
                assert t.detectable > L._detectable(t.components, cmp.alpha, L.POWER)
        (rec,) = plan_table(cmp, 0.05).records
        assert rec["detectable_now_median"] == float(np.median([t.detectable for t in tests]))
    assert floored > 0
