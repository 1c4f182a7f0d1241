"""mpibench.api: DataFrames for notebooks."""

from __future__ import annotations

import numpy as np
import pytest

from mpibench.api import compare_frame, load_results, load_samples
from mpibench.errors import UsageError
from support.synth import IMB_SIZES, build_app_store, build_two_stack_store


def test_load_results_core(tmp_path):
    store, groups = build_two_stack_store(tmp_path / "s.db", repeats=2, n=10)
    store.close()
    df = load_results(tmp_path / "s.db")
    assert len(df) == 2 * 2 * 2 * len(IMB_SIZES)
    assert {"variant", "benchmark", "size", "median", "ci_low", "first", "campaign"} <= \
        set(df.columns)
    assert set(df["variant"]) == {"base", "fast"} and "samples" not in df.columns
    assert str(df["size"].dtype) == "Int64"
    df2 = load_results(tmp_path / "s.db", campaign="synthetic", variants=["fast"],
                       samples=True)
    assert set(df2["variant"]) == {"fast"}
    assert isinstance(df2["samples"].iloc[0], np.ndarray) and df2["samples"].iloc[0].size == 10
    med = df2.groupby(["benchmark", "size"])["median"].median()
    assert med.loc[("PingPong", 1 << 20)] > med.loc[("PingPong", 8)]


def test_params_expanded_and_samples_long(tmp_path):
    store, groups = build_app_store(tmp_path / "a.db", nodes=(1, 2), ncore=(1, 2), repeats=2)
    store.close()
    df = load_results(tmp_path / "a.db", campaign="vasp-sweep")
    assert {"nodes", "NCORE"} <= set(df.columns)
    assert sorted(df["nodes"].unique().tolist()) == [1, 2]
    long = load_samples(tmp_path / "a.db")
    assert len(long) == len(df)          # one sample per app result
    assert {"value", "sample", "nodes"} <= set(long.columns)


def test_compare_frame(tmp_path):
    """4 launches a side: with <= 3 on every side (stats.launch.THIN_LAUNCHES) each size is
    tested on its own 1-2 df, and a 20% gain at one size cannot pass Holm over 48 cells."""
    store, groups = build_two_stack_store(tmp_path / "c.db", repeats=4, n=12)
    store.close()
    cf = compare_frame(tmp_path / "c.db", groups, "base")
    assert len(cf) == 2 * len(IMB_SIZES)
    assert {"gain", "gain_ci_low", "gain_ci_high", "p_holm", "significant",
            "base_launches"} <= set(cf.columns)
    assert cf.loc[(cf.benchmark == "PingPong") & (cf["size"] == 1024), "significant"].item()


def test_compare_frame_accepts_the_old_keyword_groups(tmp_path):
    """sets= is the keyword now; groups= (its old name) still works, both at once does not."""
    store, sets = build_two_stack_store(tmp_path / "c.db", repeats=2, n=12)
    store.close()
    new = compare_frame(tmp_path / "c.db", sets=sets, baseline="base")
    old = compare_frame(tmp_path / "c.db", groups=sets, baseline="base")
    assert len(new) == 2 * len(IMB_SIZES)
    assert new.equals(old)
    with pytest.raises(UsageError, match="not both"):
        compare_frame(tmp_path / "c.db", sets=sets, groups=sets, baseline="base")


def test_missing_store(tmp_path):
    with pytest.raises(UsageError):
        load_results(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_sweep_sets_and_nodes_columns(tmp_path):
    from support.synth import sweep_store
    sweep_store(tmp_path / "sw.db").close()
    df = load_results(tmp_path / "sw.db", variants=["ompi"])
    assert set(df["set"]) == {"ompi"} and df["variant"].nunique() == 4
    piv = df.pivot_table(index="nodes", columns="np", values="median")
    assert piv.shape == (2, 2) and piv.loc[2, 4] > piv.loc[1, 2]
    cf = compare_frame(tmp_path / "sw.db", campaign="sweep", variants=["ompi", "mpich"])
    assert set(cf["candidate"]) == {"mpich"} and len(cf) == 4


def test_sweep_parameters_do_not_override_stored_ones(tmp_path):
    """nodes/ppn from a variant name become parameters only where the stored params lack
    them; the notebook API and the compare cells apply the same rule."""
    from mpibench.report.data import load_cells
    from mpibench.store import Store
    from support.synth import add_variant_runs, app_row

    store = Store(tmp_path / "sp.db")
    cid = store.add_campaign("sp")
    ids = add_variant_runs(store, cid, "ompi[np=2,nodes=2,ppn=4]", repeats=2, grp="app",
                           params={"steps": 100, "nodes": 3},
                           make=lambda rep: [app_row(2, 10.0 + rep)])
    cells = load_cells(store, {"ompi": ids})
    store.close()
    (key,) = cells
    assert cells[key]["ompi"].params == {"steps": 100, "nodes": 3, "ppn": 4}
    df = load_results(tmp_path / "sp.db")
    assert set(df["set"]) == {"ompi"}
    assert df["nodes"].tolist() == [3, 3] and df["ppn"].tolist() == [4, 4]
    assert "np" in df.columns and df["np"].tolist() == [2, 2]



def test_ok_only_keeps_the_row_rule(tmp_path):
    """ok_only (and load_samples) never return the rows of a launch that failed after
    printing them (report/rules.py: the row rule)."""
    store, groups = build_two_stack_store(tmp_path / "f.db", repeats=2, n=5)
    store.set_run(groups["fast"][0], "failed", reason="exit status 1")
    store.close()
    all_rows = load_results(tmp_path / "f.db")
    ok = load_results(tmp_path / "f.db", ok_only=True)
    assert groups["fast"][0] in set(all_rows["run_id"])
    assert groups["fast"][0] not in set(ok["run_id"])
    assert len(ok) == len(all_rows) - 2 * len(IMB_SIZES)
    assert groups["fast"][0] not in set(load_samples(tmp_path / "f.db")["run_id"])
