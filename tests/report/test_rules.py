"""The row rule and the comparability rule (report/rules.py), each on its own and through
every table that uses it, on real stores: rows of failed launches never make a value
(issue 23.1), the core's and a peer suite's rows of one variant are separate cells (23.2),
the scaling table never divides a median by an imported mean nor gives a call count a
speedup (23.3, 21.7), and a cost saving is taken against the dearer side (23.5)."""

from __future__ import annotations

import numpy as np
import pytest

from mpibench.report.compare_view import render
from mpibench.report.cost import cheaper_side, cost_table
from mpibench.report.data import ResultCell, load_cells
from mpibench.report.grids import grids
from mpibench.report.judge import compare_groups
from mpibench.report.rules import (
    CellKey,
    MetricKind,
    comparable,
    metric_kind,
    why_not_comparable,
    why_unusable,
)
from mpibench.report.scaling import scaling_table
from mpibench.stats import launch as launch_stats
from mpibench.store import Store
from support.synth import add_variant_runs, core_record

# --- the rules on their own ------------------------------------------------------------


def test_row_rule_finished_runs_and_ok_rows_only():
    assert why_unusable({"status": "ok", "run_status": "done"}) is None
    assert why_unusable({"status": "ok"}) is None                 # no run columns: own status
    assert why_unusable({"status": "ok", "run_status": "failed", "run_reason": "exit 1"}) \
        == ("failed", "exit 1")
    assert why_unusable({"status": "ok", "run_status": "timeout"}) == ("timeout", None)
    assert why_unusable({"status": "ok", "run_status": "running"})[0] == "unfinished"
    assert why_unusable({"status": "unsupported", "reason": "no large count",
                         "run_status": "done"}) == ("unsupported", "no large count")


def _cell(set_name="a", *, statistic="median", no_samples=False, metric="time", unit="us",
          better="lower", bench="PingPong", status="ok", values=(1.0, 1.1, 0.9),
          key_tool=None) -> ResultCell:
    c = ResultCell(set_name=set_name, benchmark=bench, size=8, np=2, params={}, metric=metric,
                   unit=unit, better=better, statistic=statistic, status=status,
                   no_samples=no_samples, key_tool=key_tool)
    if status == "ok":
        c.launch_values = list(values)
        c.estimate = launch_stats.estimate(values)
    return c


def test_comparability_rule():
    assert comparable(_cell("a"), _cell("b"))
    # a median never against an imported mean
    why = why_not_comparable(_cell("a"), _cell("b", statistic="mean", no_samples=True))
    assert why and "same statistic" in why
    # a failed cell never
    assert "b: failed" in why_not_comparable(_cell("a"), _cell("b", status="failed"))
    # one tool: cells keyed by different tools never meet
    assert "measured by core" in why_not_comparable(_cell("a", key_tool="core"),
                                                    _cell("b", key_tool="osu"))
    # one kind of metric on both sides
    calls = _cell("b", bench="profile:MPI", metric="calls", unit="calls")
    tm = _cell("a", bench="profile:MPI", metric="mpi_time", unit="us")
    assert "kind of metric" in why_not_comparable(tm, calls)


def test_metric_kinds_and_cell_key():
    assert metric_kind("PingPong", "time", "us", "lower") is MetricKind.TIME
    assert metric_kind("gromacs", "ns/day", "ns/day", "higher") is MetricKind.RATE
    assert metric_kind("profile:MPI", "calls", "calls", "lower") is MetricKind.PROFILE_COUNT
    assert metric_kind("profile:MPI", "mpi_fraction", "ratio", "lower") \
        is MetricKind.PROFILE_FRACTION
    assert metric_kind("profile:MPI_Send", "mpi_time", "us", "lower") \
        is MetricKind.PROFILE_TIME
    assert metric_kind("profile:sizes", "messages", "calls", "lower") \
        is MetricKind.PROFILE_SIZES
    assert MetricKind.TIME.scales and MetricKind.RATE.scales
    assert not MetricKind.PROFILE_COUNT.scales and not MetricKind.PROFILE_FRACTION.scales
    k = CellKey("PingPong", 8, 2, '{"nodes": 2}', "time")
    assert k.tool is None and k.params == {"nodes": 2} and k.at_message_size
    assert k.is_message_time and not k.is_application and k.title == "PingPong"
    assert CellKey("profile:sizes", 64, 2, "{}", "messages").is_size_histogram
    assert not CellKey("profile:sizes", 64, 2, "{}", "messages").at_message_size
    assert CellKey("vasp", None, 4, "{}", "ns/day").is_application
    assert not CellKey("profile:MPI", None, 4, "{}", "calls").is_application
    assert CellKey("Alltoall", 8, 4, "{}", "time", "osu").title == "Alltoall (osu)"


# --- 23.1: rows of failed launches ------------------------------------------------------

def _fail_runs(store: Store, ids: list[str], status: str = "failed") -> None:
    for rid in ids:
        store.set_run(rid, status, reason="osu_alltoall: exit status 1")


def test_rows_of_failed_launches_are_never_a_value(tmp_path):
    rng = np.random.default_rng(3)
    store = Store(tmp_path / "f.db")
    cid = store.add_campaign("failed-osu")
    osu = {"definition": {"suite": "osu"}}

    def rows(rep):
        return [{"benchmark": "Alltoall", "size": s, "np": 4, "statistic": "mean",
                 "mean": float(10 + s / 100 + rng.normal(0, .1))} for s in (8, 64, 1024)]

    ga = add_variant_runs(store, cid, "a", repeats=3, make=rows, spec=osu)
    gb = add_variant_runs(store, cid, "b", repeats=3, make=rows, spec=osu, seq0=10)
    _fail_runs(store, gb)                      # every launch of b failed after printing rows
    cmp = compare_groups(store, {"a": ga, "b": gb}, "a")
    for r in cmp.rows:
        b = r.cells["b"]
        assert b.status == "failed" and b.value is None and not b.launch_values
        assert r.deltas["b"].gain is None
    assert any("osu_alltoall: exit status 1" in f for f in cmp.footnotes)
    text = render(cmp, "terminal")
    assert "failed" in text and "(mean)" in text      # a's values, b's failure
    assert cmp.outcomes["b"] == "nothing"
    # one failed launch among three: the other two make the value, and a footnote says so
    _fail_runs(store, ga[:1], "timeout")
    cells = load_cells(store, {"a": ga})
    for by in cells.values():
        c = by["a"]
        assert c.status == "ok" and c.launches == 2 and c.runs_failed[0][1] == "timeout"
    store.close()


# --- 23.2: the core and a peer suite in one variant -------------------------------------

def _core_and_osu_store(path):
    """Variants a and b, each measured by the core (medians with samples) and by OSU (its
    own means, no samples) in one campaign: three launches of each tool; b is 20% faster by
    the core and 20% slower by OSU, so mixing the two shows."""
    rng = np.random.default_rng(7)
    store = Store(path)
    cid = store.add_campaign("core-and-osu")
    osu = {"definition": {"suite": "osu"}}
    groups: dict[str, list[str]] = {}
    for v, core_f, osu_f, seq in (("a", 1.0, 1.0, 0), ("b", 0.8, 1.2, 100)):
        groups[v] = add_variant_runs(
            store, cid, v, repeats=3, seq0=seq, fingerprint={"stack": v, "tool": "core"},
            make=lambda rep, f=core_f: [core_record("Alltoall", s,
                                                    rng.lognormal(np.log(f * (5 + s)), .01, 20),
                                                    np_=4) for s in (8, 64)])
        groups[v] += add_variant_runs(
            store, cid, v, repeats=3, seq0=seq + 50, grp="osu", spec=osu,
            fingerprint={"stack": v, "tool": "osu"},
            make=lambda rep, f=osu_f: [{"benchmark": "Alltoall", "size": s, "np": 4,
                                        "statistic": "mean",
                                        "mean": float(f * (6 + s) * np.exp(rng.normal(0, .01)))}
                                       for s in (8, 64)])
    return store, groups


def test_core_and_suite_rows_of_one_variant_are_separate_cells(tmp_path):
    store, groups = _core_and_osu_store(tmp_path / "t.db")
    cmp = compare_groups(store, groups, "a")
    tools = sorted({r.tool for r in cmp.rows})
    assert tools == ["core", "osu"] and len(cmp.rows) == 4
    for r in cmp.rows:
        for c in r.cells.values():
            assert c.launches == 3 and not c.runs_excluded      # nothing dropped on a tie
            assert c.no_samples == (r.tool == "osu")
        d = r.deltas["b"]
        assert d.tested and d.significant
        assert (d.gain > 1) == (r.tool == "core")               # never a mix of the two
    summaries = {(s.benchmark, s.tool): s for s in cmp.summaries}
    assert summaries[("Alltoall", "core")].geomean["b"] == pytest.approx(1.25, rel=0.02)
    assert summaries[("Alltoall", "osu")].geomean["b"] == pytest.approx(1 / 1.2, rel=0.02)
    # the verdict is one tool's: the core's, and it says the suite's rows are apart
    assert cmp.outcomes["b"] == "better" and "core rows only" in cmp.verdict
    assert cmp.overall["b"].n_base == 3
    text = render(cmp, "terminal")
    assert "Alltoall (core)" in text and "Alltoall (osu)" in text
    # --by tool: one tool per set; the core against OSU is then the comparison asked for
    by_tool = {"a/core": groups["a"][:3], "a/osu": groups["a"][3:]}
    cmp = compare_groups(store, by_tool, "a/core", statistic="mean")
    assert {r.tool for r in cmp.rows} == {None} and len(cmp.rows) == 2
    assert all(r.deltas["a/osu"].gain is not None for r in cmp.rows)
    store.close()


def test_grids_keep_tools_apart(tmp_path):
    store, groups = _core_and_osu_store(tmp_path / "g.db")
    gl = grids(store, groups, "size", "np", baseline="a")
    assert sorted(g.benchmark for g in gl) == ["Alltoall (core)", "Alltoall (osu)"]
    store.close()


def test_grids_never_divide_a_median_by_an_imported_mean(tmp_path):
    """Issue 21 item 7: a grid's ratio is refused between the core's launch medians and a
    suite's imported means (the same positions, one set each); with --statistic mean both
    sides show a mean and the ratio is there."""
    store, groups = _core_and_osu_store(tmp_path / "m.db")
    by_tool = {"a/core": groups["a"][:3], "a/osu": groups["a"][3:]}
    for statistic, divided in (("median", False), ("mean", True)):
        gl = grids(store, by_tool, "size", "np", baseline="a/core", statistic=statistic)
        ratios = [r for g in gl for r in g.ratio.get("a/osu", {}).values()]
        assert ratios and all((r is not None) == divided for r in ratios), statistic
    store.close()


# --- 23.3 / 21.7: scaling ---------------------------------------------------------------

def test_scaling_never_divides_a_median_by_an_imported_mean(tmp_path):
    rng = np.random.default_rng(11)
    store = Store(tmp_path / "s.db")
    cid = store.add_campaign("scale")
    # identical distributions at np=2 and np=4: a native median and an imported mean
    x = [rng.lognormal(np.log(10), 0.3, 200) for _ in range(3)]
    ids = add_variant_runs(store, cid, "v", repeats=3,
                           make=lambda rep: [core_record("Alltoall", 1024, x[rep], np_=2)])
    ids += add_variant_runs(store, cid, "v", repeats=3, seq0=10, grp="imported",
                            make=lambda rep: [{"benchmark": "Alltoall", "size": 1024, "np": 4,
                                               "statistic": "mean",
                                               "mean": float(np.mean(x[rep]))}])
    t = scaling_table(store, {"v": ids}, include_sizes=True)
    recs = [r for r in t.records if r["benchmark"] == "Alltoall"]
    assert [r["count"] for r in recs] == [2, 4]
    assert recs[1]["speedup"] is None and recs[1]["efficiency"] is None
    assert any("same statistic" in n for n in t.notes)
    store.close()


def test_scaling_gives_no_speedup_to_call_counts_or_mpi_fraction(tmp_path):
    store = Store(tmp_path / "p.db")
    cid = store.add_campaign("prof")
    ids = []
    for i, np_ in enumerate((2, 4, 8)):
        def rows(rep, np_=np_):
            def row(metric, unit, v):
                return {"benchmark": "profile:MPI", "np": np_, "metric": metric, "unit": unit,
                        "statistic": "sum", "samples": [v] * np_, "median": v,
                        "n": np_}
            return [row("calls", "calls", 100.0 * np_), row("mpi_fraction", "ratio", .1 * np_),
                    row("mpi_time", "us", 1000.0 / np_)]
        ids += add_variant_runs(store, cid, "v", repeats=2, seq0=10 * i, make=rows,
                                grp=f"np{np_}")
    t = scaling_table(store, {"v": ids}, by="np", include_sizes=True)
    by_metric: dict[str, list] = {}
    for r in t.records:
        by_metric.setdefault(r["metric"], []).append(r)
    for m in ("calls", "mpi_fraction"):
        assert all(r["speedup"] is None and r["efficiency"] is None for r in by_metric[m]), m
        assert any(f"{m}: a profile:" in n for n in t.notes)
    store.close()


# --- 23.5: cost saving ------------------------------------------------------------------

def test_cheaper_side_saving_is_against_the_dearer_side():
    assert cheaper_side(0.2, "efa", "ompi") == ("efa", pytest.approx(0.2))
    who, saving = cheaper_side(1 - 2.025, "efa", "ompi")     # efa costs 102.5% more
    assert who == "ompi" and saving == pytest.approx(1 - 1 / 2.025) and saving < 1
    assert cheaper_side(0.0, "efa", "ompi") == (None, 0.0)


def test_cost_note_never_a_saving_over_100_percent(tmp_path):
    store = Store(tmp_path / "c.db")
    cid = store.add_campaign("cost", {"price_per_node_hour": 2.0, "power_per_node_w": 300})
    groups = {}
    for v, wall in (("ompi", 100.0), ("ompi-efa", 202.5)):
        groups[v] = add_variant_runs(store, cid, v, repeats=3, grp="app",
                                     params={"nodes": 2}, make=lambda rep, w=wall: [
                                         {"benchmark": "app", "size": None, "np": 4,
                                          "metric": "wall_time", "unit": "s",
                                          "better": "lower", "statistic": "median",
                                          "median": w, "samples": [w], "n": 1}])
    t = cost_table(store, groups, baseline="ompi")
    note = next(n for n in t.notes if n.startswith("ompi-efa vs ompi"))
    assert "median saving of ompi: 50.6%" in note
    assert "102.5" not in note
    row = next(r for r in t.rows if r[1] == "ompi-efa")
    assert row[-1] == "ompi saves 50.6%"
    store.close()


def test_a_key_without_a_tool_is_its_plain_tuple():
    """Cells were keyed by (benchmark, size, np, params_key, metric): that tuple still finds
    a cell whose key has no tool, and never one split by tool."""
    k = CellKey("Reduce", 8, 2, "{}", "time")
    assert {k: 1}[("Reduce", 8, 2, "{}", "time")] == 1
    assert k == ("Reduce", 8, 2, "{}", "time") and k == CellKey(*k)
    osu = CellKey("Reduce", 8, 2, "{}", "time", "osu")
    assert osu != ("Reduce", 8, 2, "{}", "time") and osu != k
    assert ("Reduce", 8, 2, "{}", "time") not in {osu: 1}


def test_one_verdict_tool_for_a_mixed_table():
    from mpibench.report.rules import verdict_tool

    assert verdict_tool(["core", "core"]) is None and verdict_tool([]) is None
    assert verdict_tool(["imb", "core", "osu"]) == "core"
    assert verdict_tool(["osu", "imb", "osu"]) == "imb"
