"""The launch is the unit of replication: simulated launches through the project's real
Store -> load_cells -> compare_groups path (stats.simulate). Identical variants must come
out "no difference"; a real difference must be found. Seeded, with tolerances several
standard errors wide (bench/bench_inference.py prints the full figures)."""

from __future__ import annotations

import numpy as np
import pytest

from mpibench import stats
from mpibench.report.judge import compare_groups
from mpibench.stats import simulate as S


def _aa(path, count):
    """count A/A comparisons: sigma_L 0.3, 5 launches per side, 20 sizes (seeded: the first
    is the same comparison whatever count)."""
    rng = np.random.default_rng(2026)
    return [S.run_compare(path, rng, compare_groups, launches=5, sigma_l=0.3,
                          n_samples=(30, 60))
            for _ in range(count)]


def test_identical_variants_come_out_no_difference(tmp_path):
    # one test, not a module fixture for several: on xdist's two workers each worker that
    # ran one of its tests made all 40 comparisons again (14-19 s each)
    aa = _aa(tmp_path / "aa.db", 40)
    t = S.tally(aa)
    assert t["cells"] == 800
    assert t["cell_rate"] <= 0.06          # Holm-significant cells (a pooled test: ~90%)
    assert t["familywise"] <= 0.15         # comparisons with any significant cell
    assert t["verdict"] <= 0.15            # "better"/"worse" verdicts
    assert 0.90 <= t["coverage"] <= 0.99   # the gain CI covers the true gain 1.0
    _raw_rates_error_counts_comparisons_not_cells(aa, t)


def test_the_pooled_test_it_replaces_fails_the_same_data(tmp_path):
    # the same cells, samples pooled across launches as main did: most cells "significant"
    (cmp,) = _aa(tmp_path / "aa.db", 1)
    pooled = [stats.mann_whitney(r.cells["a"].samples, r.cells["b"].samples) for r in cmp.rows]
    assert np.mean(np.array(pooled) < 0.05) > 0.5


def test_a_real_difference_is_found(tmp_path):
    rng = np.random.default_rng(7)
    cmps = [S.run_compare(tmp_path / "ab.db", rng, compare_groups, launches=5, sigma_l=0.05,
                          effect=np.log(1.2), n_samples=(30, 60)) for _ in range(10)]
    t = S.tally(cmps, true_gain=1.2)
    assert t["cell_rate"] >= 0.6
    assert all(c.outcomes["b"] == "better" for c in cmps)
    assert 0.85 <= t["coverage"] <= 1.0


def test_one_launch_per_side_decides_nothing(tmp_path):
    rng = np.random.default_rng(9)
    cmp = S.run_compare(tmp_path / "one.db", rng, compare_groups, launches=1, sigma_l=0.3,
                        effect=np.log(1.5), n_samples=(300, 500))
    assert not any(r.deltas["b"].tested for r in cmp.rows)
    assert cmp.outcomes["b"] == "cannot tell"


def _raw_rates_error_counts_comparisons_not_cells(aa, t):
    # a comparison's 20 sizes share its launches (sigma_L 0.3 here), so their false
    # positives come together: the Monte Carlo error is that of 40 comparisons' own rates,
    # wider than a binomial error over 800 independent cells would say
    rates = [S.tally([c])["cell_raw"] for c in aa]
    assert t["cell_raw_se"] == pytest.approx(np.std(rates, ddof=1) / np.sqrt(len(aa)))
    assert t["cell_raw_se"] > np.sqrt(t["cell_raw"] * (1 - t["cell_raw"]) / t["cells"])
    assert np.isnan(S.tally(aa[:1])["cell_raw_se"])
