"""Report tables (gain, grids, line rate, first call, scaling, cost), HTML/Markdown reports and
the compare/report verbs, on synthetic stores."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.report.cost import cost_table
from mpibench.report.firstcall import first_call_table
from mpibench.report.gain import gain_table
from mpibench.report.grids import grid_tables, grids
from mpibench.report.html import ReportOptions, build_report, write_html, write_markdown
from mpibench.report.judge import compare_groups
from mpibench.report.linerate import line_rate_table, parse_rate
from mpibench.report.render import render_table
from mpibench.report.scaling import scaling_table
from mpibench.report.select import select_groups
from mpibench.store import Store
from support.synth import (
    add_variant_runs,
    build_app_store,
    build_two_stack_store,
    core_record,
)

XSS = "<script>alert(1)</script>"


@pytest.fixture
def core(tmp_path):
    store, groups = build_two_stack_store(tmp_path / "core.db",
                                          spec={"line_rate_bps": 100e9})
    yield store, groups
    store.close()


@pytest.fixture
def app(tmp_path):
    store, groups = build_app_store(tmp_path / "app.db")
    yield store, groups
    store.close()


def test_gain_table_default_largest_common_size(core):
    store, groups = core
    cmp = compare_groups(store, groups, "base")
    t = gain_table(cmp)
    assert [r["benchmark"] for r in t.records] == ["PingPong", "Allreduce"]
    assert all(r["size"] == 1 << 20 for r in t.records)
    rec = t.records[0]
    assert rec["gain_fast"] == pytest.approx(rec["base_time_us"] / rec["fast_time_us"])
    assert rec["fast_mbps"] > rec["base_mbps"]
    t64 = gain_table(cmp, size=1)
    assert t64.rows[0][-1].startswith("~")       # PingPong at 1 byte: identical
    for fmt in ("terminal", "markdown", "csv", "json"):
        assert "PingPong" in render_table(t, fmt)


def test_parse_rate():
    assert parse_rate("100Gb/s") == 100e9
    assert parse_rate("100Gbps") == 100e9
    assert parse_rate("25GbE") == 25e9
    assert parse_rate("12.5GB/s") == 100e9
    assert parse_rate("200G") == 200e9
    assert parse_rate(1e9) == 1e9
    with pytest.raises(UsageError):
        parse_rate("fast")
    with pytest.raises(UsageError):
        parse_rate("100 furlongs")


def test_line_rate_from_spec_and_flag(core):
    store, groups = core
    t = line_rate_table(store, groups)
    rec = next(r for r in t.records if r["variant"] == "base" and r["benchmark"] == "PingPong")
    assert rec["line_rate_bps"] == 100e9
    assert rec["percent_of_line_rate"] == pytest.approx(100 * rec["peak_mbps"] / 12500)
    # the model: t = 0.3 + s/5000 us, so bandwidth reaches half its asymptote near 1.5 KB
    assert rec["half_peak_size"] == 65536 or rec["half_peak_size"] <= 65536
    t25 = line_rate_table(store, groups, "25Gb/s")
    assert t25.records[0]["line_rate_bps"] == 25e9


def test_first_call_table(core):
    store, groups = core
    t = first_call_table(store, groups, mean_std=True, sizes=[8])
    assert len(t.records) == 2
    r = t.records[0]
    assert r["base_first_over_steady"] == pytest.approx(20, rel=0.05)   # synthetic: 20x
    assert "mean ± std" in " ".join(t.header)


def test_grids_best_cell_and_ratio(app):
    store, groups = app
    gl = grids(store, groups, "nodes", "NCORE", metric="ns/day")
    assert len(gl) == 1
    g = gl[0]
    assert g.row_values == [1, 2, 4, 8] and g.col_values == [1, 2, 4]
    assert all(g.best["plain"][n] == 2 for n in g.row_values)     # NCORE=2 best everywhere
    assert g.ratio["x"][(8, 2)] == pytest.approx(1.1, rel=0.05)
    side, ratio = grid_tables(g)
    assert len(side.marked) == 8                                  # one best cell per row x 2
    md = render_table(side, "markdown")
    assert md.count("**") == 16
    assert "1.1" in render_table(ratio, "terminal")
    # wall_time is lower-better: best NCORE is still 2
    gw = grids(store, groups, "nodes", "NCORE", metric="wall_time")[0]
    assert all(gw.best["x"][n] == 2 for n in gw.row_values)


def test_grid_tests_launches_with_a_gain_ci(app, tmp_path):
    """4 launches a side, x 10% better with 1% launch-to-launch spread: every ratio cell is
    tested on launch statistics (Welch t), significant after Holm over the grid, and carries
    its CI; with one launch a side every cell is "cannot tell" (None), not "the same"."""
    store, groups = app
    g = grids(store, groups, "nodes", "NCORE", metric="ns/day")[0]
    assert g.significant["x"] and all(g.significant["x"].values())
    t = g.tests["x"][(8, 2)]
    assert (t.n_base, t.n_cand) == (4, 4) and t.ci_low < 1.1 < t.ci_high
    assert "[" in grid_tables(g)[1].rows[0][1]                    # gain [CI] in the cells
    one, ogroups = build_app_store(tmp_path / "one.db", nodes=(1, 2), ncore=(1, 2),
                                   repeats=1)
    gs = grids(one, ogroups, "nodes", "NCORE", metric="ns/day")[0]
    one.close()
    assert len(gs.significant["x"]) == 4 and all(v is None for v in gs.significant["x"].values())
    assert all(r.endswith(" ?") for r in grid_tables(gs)[1].rows[0][1:])


def test_scaling(app):
    store, groups = app
    t = scaling_table(store, groups, metric="ns/day")
    recs = [r for r in t.records if r["variant"] == "plain" and r["params"] == {"NCORE": 1}]
    assert [r["count"] for r in recs] == [1, 2, 4, 8]
    assert recs[0]["speedup"] == 1.0
    # synthetic model: rate ~ nodes * 0.9^log2(nodes) -> efficiency 0.9 per doubling
    assert recs[-1]["efficiency"] == pytest.approx(0.9 ** 3, rel=0.05)
    tw = scaling_table(store, groups, metric="wall_time")
    last = [r for r in tw.records if r["variant"] == "x" and r["params"] == {"NCORE": 2}][-1]
    assert last["speedup"] == pytest.approx(8 * 0.9 ** 3, rel=0.05)


def test_cost(app):
    store, groups = app
    t = cost_table(store, groups)               # price 2.0 and 400 W from the campaign spec
    r = next(x for x in t.records if x["variant"] == "plain" and x["params"]["nodes"] == 2
             and x["params"]["NCORE"] == 1)
    assert r["nodes"] == 2
    assert r["cost_per_run"] == pytest.approx(2 * r["seconds"] / 3600 * 2.0)
    assert r["energy_wh_per_run"] == pytest.approx(2 * r["seconds"] / 3600 * 400)
    assert r["cost_per_unit"] == pytest.approx(2 * 2.0 * 24 / r["figure_of_merit"])
    xr = next(x for x in t.records if x["variant"] == "x" and x["params"] == r["params"])
    assert xr["saving_vs_baseline"] == pytest.approx(1 - 1 / 1.1, abs=0.03)
    t2 = cost_table(store, groups, price_per_node_hour=10.0, power_per_node_w=None)
    assert "10.0 per node-hour" in t2.caption


def test_cost_without_price_says_so(core):
    store, groups = core
    spec_free = cost_table(store, groups)
    assert not spec_free.rows and "no price" in spec_free.notes[0]


def test_cost_per_launch_for_message_size_campaigns(core):
    store, groups = core
    t = cost_table(store, groups, price_per_node_hour=3.6, power_per_node_w=360)
    recs = {r["variant"]: r for r in t.records}
    assert set(recs) == {"base", "fast"}
    assert recs["base"]["cost_per_run"] == pytest.approx(30 / 3600 * 3.6)     # 30 s launches
    assert recs["base"]["energy_wh_per_run"] == pytest.approx(30 / 3600 * 360)
    assert recs["fast"]["saving_vs_baseline"] == pytest.approx(0.0)
    assert any("assumed 1 node" in n for n in t.notes)


def _report_store(tmp_path):
    """Core + app results in one store, with hostile labels and names."""
    store, groups = build_two_stack_store(tmp_path / "r.db", campaign=XSS, n=12, repeats=2,
                                          label_a=XSS, spec={"line_rate_bps": 25e9})
    return store, groups


def test_html_report_escapes_and_is_offline(tmp_path):
    store, groups = _report_store(tmp_path)
    rng = np.random.default_rng(1)
    cid = store.add_campaign("x")
    groups[XSS] = add_variant_runs(store, cid, XSS, repeats=2, make=lambda rep: [
        core_record("PingPong", 8, rng.normal(0.3, 0.01, 12))])
    rep = build_report(store, groups, ReportOptions(title=f"T {XSS}", mean_std=True))
    html = write_html(rep, tmp_path / "r.html").read_text()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<svg") >= 3
    assert not re.search(r"(src|href)=\"(https?:)?//", html)      # no fetches
    assert "Content-Security-Policy" in html
    md_path = write_markdown(rep, tmp_path / "r.md", "svg")
    md = md_path.read_text()
    assert "<script" not in md
    assert (tmp_path / "r-plots").is_dir() and list((tmp_path / "r-plots").glob("*.svg"))
    for svg in (tmp_path / "r-plots").glob("*.svg"):
        assert "<script" not in svg.read_text()
    store.close()


def test_app_report_has_grids_scaling_cost(tmp_path, app):
    store, groups = app
    rep = build_report(store, groups, ReportOptions(title="vasp"))
    ids = [s.id for s in rep.sections]
    assert {"comparison", "grids", "scaling", "cost"} <= set(ids)
    html = write_html(rep, tmp_path / "a.html").read_text()
    assert "★" in html and html.count("<svg") >= 4
    write_markdown(rep, tmp_path / "a.md", "png")
    assert list((tmp_path / "a-plots").glob("*.png"))


def test_single_set_report(tmp_path, core):
    store, groups = core
    rep = build_report(store, {"base": groups["base"]}, ReportOptions())
    assert rep.comparison is None
    html = write_html(rep, tmp_path / "one.html").read_text()
    assert html.count("<svg") >= 1 and "Results per set" in html


def test_cli_compare_and_report(tmp_path, capsys):
    store, groups = build_two_stack_store(tmp_path / "cli.db", n=10, repeats=2)
    store.close()
    db = str(tmp_path / "cli.db")
    assert cli_main(["compare", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "verdict:" in out and "PingPong" in out
    assert cli_main(["compare", "--db", db, "--format", "json", "--gain-table",
                     "--size", "1K", "--line-rate", "100Gb/s", "--first-call"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert set(obj) >= {"comparison", "gain_table", "line_rate", "first_call"}
    assert obj["gain_table"]["rows"][0]["size"] == 1024
    assert cli_main(["compare", "--db", db, "--format", "csv", "--variant", "base",
                     "--variant", "fast", "--baseline", "fast"]) == 0
    assert "candidate" in capsys.readouterr().out
    assert cli_main(["compare", "--db", db, "--baseline", "nope"]) == 2
    assert cli_main(["compare", "--db", str(tmp_path / "missing.db")]) == 2
    assert cli_main(["compare", "--db", db, "--grid", "nodes", "NCORE"]) == 2
    html = tmp_path / "out.html"
    assert cli_main(["report", "--db", db, "-o", str(html), "--markdown",
                     str(tmp_path / "out.md"), "--plot-format", "png"]) == 0
    assert html.exists() and (tmp_path / "out.md").exists()


def test_cli_app_tables(tmp_path, capsys):
    store, groups = build_app_store(tmp_path / "app2.db", nodes=(1, 2), ncore=(1, 2),
                                    repeats=2)
    store.close()
    db = str(tmp_path / "app2.db")
    assert cli_main(["compare", "--db", db, "--grid", "nodes", "NCORE", "--metric", "ns/day",
                     "--scaling", "--cost-per-node-hour", "3", "--power-per-node-w",
                     "350", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "nodes \\\\ NCORE" in out or "nodes \\ NCORE" in out
    assert "Scaling" in out and "Cost and energy" in out and "3.0 per node-hour" in out


def test_campaign_price_turns_the_cost_table_on_without_flags(tmp_path, capsys):
    # as a stored line rate turns on the line-rate table; a store without them has neither
    store, _ = build_app_store(tmp_path / "priced.db", nodes=(1, 2), ncore=(1,), repeats=2)
    store.close()
    assert cli_main(["compare", "--db", str(tmp_path / "priced.db"), "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert "2.0 per node-hour" in obj["cost"]["caption"] and obj["cost"]["rows"]
    store, _ = build_two_stack_store(tmp_path / "plain.db", n=8, repeats=1)
    store.close()
    assert cli_main(["compare", "--db", str(tmp_path / "plain.db"), "--format", "json"]) == 0
    assert "cost" not in json.loads(capsys.readouterr().out)


def test_mixed_store_runs_are_not_created_by_reports(tmp_path):
    # reports never create a store by accident
    with pytest.raises(UsageError):
        from mpibench.commands.compare import open_store
        open_store(str(tmp_path / "none.db"))
    assert not (tmp_path / "none.db").exists()
    Store(tmp_path / "empty.db").close()
    assert cli_main(["report", "--db", str(tmp_path / "empty.db")]) == 2


def test_grid_and_scaling_over_a_campaign_sweep(tmp_path):
    from support.synth import sweep_store
    store = sweep_store(tmp_path / "sw.db")
    groups = select_groups(store, variants=["ompi", "mpich"])
    (g,) = grids(store, groups, "nodes", "np", metric="ns/day")
    assert g.sets == ["ompi", "mpich"]
    assert g.row_values == [1, 2] and g.col_values == [2, 4]
    assert all(g.best["ompi"][n] == 4 for n in (1, 2))      # more ranks, more ns/day
    t = scaling_table(store, groups, by="nodes", metric="ns/day")
    ompi = [r for r in t.records if r["variant"] == "ompi" and r["params"] == {"steps": 100}]
    # one series keeps 2 ranks per node: (1 node, np 2) -> (2 nodes, np 4); the model's
    # rate is 10 x np x nodes, so 4x; cells without a partner count form no series
    assert [(r["count"], r["np"], round(r["speedup"], 1), r["ranks_per_count"])
            for r in ompi] == [(1, 2, 1.0, 2.0), (2, 4, 4.0, 2.0)]
    # nodes from the variant spec of a campaign run (nested under "variant")
    ct = cost_table(store, {"ompi": groups["ompi"]}, price_per_node_hour=1.0)
    assert {r["nodes"] for r in ct.records} == {1, 2}
    assert not any("assumed 1 node" in n for n in ct.notes)
    store.close()


def test_line_rate_per_variant_from_a_campaign_run_spec(tmp_path):
    store = Store(tmp_path / "lr.db")
    cid = store.add_campaign("lr")
    rng = np.random.default_rng(2)
    groups = {}
    for v, rate in (("ib", "100Gb/s"), ("eth", "25GbE")):
        groups[v] = add_variant_runs(
            store, cid, v, repeats=1, spec={"variant": {"name": v, "line_rate": rate}},
            make=lambda rep: [core_record("PingPong", s, rng.normal(0.5 + s / 5000, .01, 10))
                              for s in (8, 1024, 1 << 20)])
    t = line_rate_table(store, groups)
    assert {r["variant"]: r["line_rate_bps"] for r in t.records} == {"ib": 100e9,
                                                                     "eth": 25e9}
    store.close()


def test_line_rate_uses_bus_bandwidth_for_collectives_and_splits_np(core):
    store, groups = core
    t = line_rate_table(store, groups)
    ar = next(r for r in t.records if r["variant"] == "base" and r["benchmark"] == "Allreduce")
    pp = next(r for r in t.records if r["variant"] == "base" and r["benchmark"] == "PingPong")
    assert ar["figure"] == "busbw" and pp["figure"] == "mbps"
    assert all(r["np"] == 2 for r in t.records)
    with pytest.raises(UsageError):
        line_rate_table(store, groups, "0Gb/s")


def test_gain_table_missing_set_does_not_veto_and_np_rows(tmp_path):
    store, groups = build_two_stack_store(tmp_path / "g.db", n=10, repeats=2)
    rng = np.random.default_rng(4)
    cid = store.add_campaign("third")
    groups["only-pp"] = add_variant_runs(store, cid, "only-pp", repeats=2, make=lambda rep: [
        core_record("PingPong", s, rng.normal(0.3 + s / 5000, .01, 10)) for s in (8, 1024)])
    cmp = compare_groups(store, groups, "base")
    t = gain_table(cmp)
    sizes = {r["benchmark"]: r["size"] for r in t.records}
    # PingPong: largest size all three have; Allreduce: 'only-pp' never ran it
    assert sizes == {"PingPong": 1024, "Allreduce": 1 << 20}
    ar = next(r for r in t.records if r["benchmark"] == "Allreduce")
    assert ar["gain_fast"] > 1 and ar["gain_only-pp"] is None
    none = gain_table(cmp, size=3)
    assert not none.rows and "no benchmark has results at 3 bytes" in none.notes[0]
    store.close()


def test_cost_names_the_cheaper_variant(app):
    store, groups = app
    t = cost_table(store, groups)
    assert any(n.startswith("x vs plain: x is cheaper in 12 of 12") for n in t.notes)


def test_scaling_explains_an_empty_table(core):
    store, groups = core
    t = scaling_table(store, groups)
    assert not t.rows and "no series varies np or nodes" in t.notes[0]


def test_cli_rejects_bad_input(tmp_path, capsys):
    store, _ = build_two_stack_store(tmp_path / "bad.db", n=8, repeats=1)
    store.close()
    db = str(tmp_path / "bad.db")
    cases = [
        (["--alpha", "2"], "between 0 and 1"), (["--alpha", "nan"], "between 0 and 1"),
        (["--alpha", "0"], "between 0 and 1"),
        (["--cost-per-node-hour", "-1"], ">= 0"), (["--power-per-node-w", "nan"], ">= 0"),
        (["--line-rate", "0Gb/s"], "greater than 0"), (["--line-rate", "fast"], "link speed"),
        (["--benchmark", "Nope"], "PingPong"), (["--size", "3"], "1K"),
        (["--gain-table", "--size", "3"], "no selected result has this message size"),
        (["--variant", "nope"], "base, fast"),
        (["-o", str(tmp_path / "no" / "such" / "dir" / "x.txt")], "does not exist"),
    ]
    for extra, text in cases:
        with pytest.raises(SystemExit) as exc:
            rc = cli_main(["compare", "--db", db, *extra])
            raise SystemExit(rc)
        assert exc.value.code == 2, extra
        err = capsys.readouterr().err
        assert text in err.replace("\n", " "), (extra, err)
    assert cli_main(["compare", "--db", db, "--scaling", "--scaling-by", "foo"]) == 0
    assert "no series varies foo" in capsys.readouterr().out
    assert cli_main(["report", "--db", db, "--benchmark", "Nope", "-o",
                     str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_cli_report_loads_the_cells_once(tmp_path, monkeypatch):
    """The --benchmark/--size check and the report share one load_cells (with samples)."""
    import mpibench.report.data as rdata

    store, _ = build_two_stack_store(tmp_path / "once.db", n=8, repeats=1)
    store.close()
    calls = []
    real = rdata.load_cells

    def counting(*a, **kw):
        calls.append(kw.get("with_samples", True))
        return real(*a, **kw)

    # every module that loads cells (the tables' and the comparison's own modules too)
    import importlib
    others = [importlib.import_module(f"mpibench.report.{m}") for m in (
        "pipeline", "judge", "grids", "linerate", "firstcall", "scaling", "cost", "results")]
    for mod in (rdata, *others):
        monkeypatch.setattr(mod, "load_cells", counting)
    html = tmp_path / "once.html"
    assert cli_main(["report", "--db", str(tmp_path / "once.db"), "--benchmark", "allreduce",
                     "--size", "1K", "--no-plots", "-o", str(html)]) == 0
    assert calls == [True]
    assert "Allreduce" in html.read_text()


def test_report_benchmark_filter(tmp_path, core):
    store, groups = core
    rep = build_report(store, groups, ReportOptions(benchmarks=["allreduce"], plots=False))
    html = write_html(rep, tmp_path / "f.html").read_text()
    assert "Allreduce" in html and "PingPong" not in html


def test_cost_reads_nodes_from_each_runs_spec(tmp_path):
    # no 'nodes' parameter: the run spec's (top level or its variant table), else the
    # campaign's, else 1 - looked up per run in one pass, not one query per cell
    store = Store(tmp_path / "n.db")
    cid = store.add_campaign("n", {"nodes": 7})
    groups = {}
    for v, spec in (("top", {"nodes": 3}), ("nested", {"variant": {"nodes": 4}}),
                    ("camp", {})):
        groups[v] = []
        for steps in (10, 20):
            groups[v] += add_variant_runs(
                store, cid, v, repeats=1, grp="md", params={"steps": steps}, spec=spec,
                seq0=steps, make=lambda rep: [
                    {"benchmark": "md", "size": None, "np": 2, "metric": "ns/day",
                     "unit": "ns/day", "better": "higher", "n": 1, "median": 5.0,
                     "samples": [5.0]}])
    ct = cost_table(store, groups, price_per_node_hour=1.0)
    assert {(r["variant"], r["nodes"]) for r in ct.records} == {
        ("top", 3), ("nested", 4), ("camp", 7)}
    assert not any("assumed 1 node" in n for n in ct.notes)
    store.close()


def test_gain_table_says_which_benchmark_has_no_such_size(tmp_path):
    # Barrier has one size (0); a gain table at 1 MiB must say so, not drop it silently
    store, groups = build_two_stack_store(tmp_path / "b.db", n=10, repeats=2)
    rng = np.random.default_rng(5)
    cid = store.add_campaign("barrier")
    for g in ("base", "fast"):
        groups[g] += add_variant_runs(store, cid, g, repeats=2, grp="bar", make=lambda rep: [
            core_record("Barrier", 0, rng.normal(2.0, .01, 10))])
    cmp = compare_groups(store, groups, "base")
    t = gain_table(cmp, size=1 << 20)
    assert {r["benchmark"] for r in t.records} == {"PingPong", "Allreduce"}
    assert any(n.startswith("Barrier: not measured at 1M bytes (its sizes: 0)")
               for n in t.notes), t.notes
    store.close()


def test_params_sort_as_numbers_in_comparisons_and_gain_tables(tmp_path):
    store, groups = build_app_store(tmp_path / "p.db", nodes=(1,), ncore=(500, 1000, 2000),
                                    repeats=2)
    cmp = compare_groups(store, groups, "plain")
    order = [r.params["NCORE"] for r in cmp.rows if r.metric == "ns/day"]
    assert order == [500, 1000, 2000]
    store.close()


def test_line_rate_above_100_percent_is_flagged(core):
    store, groups = core
    # PingPong here peaks near 5000 MB/s = 40 Gb/s: against 10 Gb/s that is ~400%
    t = line_rate_table(store, groups, "10Gb/s")
    pp = next(r for r in t.records if r["variant"] == "base" and r["benchmark"] == "PingPong")
    assert pp["percent_of_line_rate"] > 100 and pp["above_line_rate"]
    row = next(r for r in t.rows if r[0] == "base" and r[1] == "PingPong")
    assert row[7].endswith("% (!)")
    assert any("base PingPong np=2" in n and "above 100%" in n for n in t.notes)
    ok = line_rate_table(store, groups, "1000Gb/s")
    assert not any(r["above_line_rate"] for r in ok.records)
    assert not any("above 100%" in n for n in ok.notes)


def test_compare_gain_table_at_a_size_names_benchmarks_the_size_filter_removed(tmp_path,
                                                                                 capsys):
    # `compare --size 1M` filters the cells first: Barrier (size 0 only) must still be said
    store, groups = build_two_stack_store(tmp_path / "f.db", n=10, repeats=2)
    rng = np.random.default_rng(6)
    cid = store.add_campaign("barrier")
    for g in ("base", "fast"):
        add_variant_runs(store, cid, g, repeats=2, grp="bar", make=lambda rep: [
            core_record("Barrier", 0, rng.normal(2.0, .01, 10))])
    store.close()
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "f.db"), "--variant", "base",
                     "--variant", "fast", "--gain-table", "--size", "1M",
                     "--format", "json"]) in (0, 1)
    notes = json.loads(capsys.readouterr().out)["gain_table"]["notes"]
    assert any(n.startswith("Barrier: not measured at 1M bytes (its sizes: 0)") for n in notes)


def test_first_call_table_notes_mpi_init_time_per_set(core):
    store, groups = core
    for i, rid in enumerate(groups["base"]):
        store.set_run(rid, mpi_init_us=20000.0 + 1000 * i)
    t = first_call_table(store, groups, mean_std=True, sizes=[8])
    base = [n for n in t.notes if n.startswith("base: MPI_Init")]
    assert base and "median of 3 launch(es)" in base[0] and "MPI_Init 21.00 ms" in base[0] and "20.00–22.00" in base[0]
    assert not any(n.startswith("fast: MPI_Init") for n in t.notes)   # never reported


def test_grid_mean_of_launches_and_failed_or_missing_cells(tmp_path):
    """The VASP seed's grid: with statistic mean each cell is the arithmetic mean of its
    launches ± their standard deviation, the best per row is marked, a failed cell reads
    'x' and one never run '-', not a blank."""
    store = Store(tmp_path / "g.db")
    cid = store.add_campaign("vasp", {})
    groups: dict[str, list[str]] = {"plain": [], "x": []}
    values = {(1, 1): [10.0, 12.0, 14.0], (1, 2): [20.0, 21.0, 22.0],
              (2, 1): [30.0, 36.0, 33.0], (2, 2): [31.0, 29.0, 30.0]}
    for variant in groups:
        for (nd, nc), vals in values.items():
            if variant == "x" and (nd, nc) == (2, 2):
                continue                                      # never run: '-'
            if variant == "x" and (nd, nc) == (2, 1):
                rid = f"fail-{nd}-{nc}"
                store.create_run(rid, cid, variant, grp="vasp", params={"nodes": nd,
                                 "NCORE": nc}, repeat=0, spec={}, seq=99,
                                 fingerprint_id=store.add_fingerprint({"stack": variant}))
                store.set_run(rid, "failed", reason="exit status 1")
                groups[variant].append(rid)
                continue

            def make(rep, vals=vals, nd=nd):
                return [{"benchmark": "vasp", "size": None, "np": nd, "metric": "time",
                         "unit": "s", "better": "lower", "statistic": "median", "n": 1,
                         "median": vals[rep], "samples": [vals[rep]]}]
            groups[variant] += add_variant_runs(store, cid, variant, repeats=3, grp="vasp",
                                                params={"nodes": nd, "NCORE": nc}, make=make)
    (g,) = grids(store, groups, "nodes", "NCORE", statistic="mean")
    side = grid_tables(g)[0]
    store.close()
    assert side.header == ["nodes \\ NCORE", "plain: 1", "plain: 2", "x: 1", "x: 2"]
    row1, row2 = side.rows
    # mean ± std (launches)
    assert row1[1] == "12.00 ± 2.000 (3)" and row2[2] == "30.00 ± 1.000 (3)"
    assert row2[3] == "x" and row2[4] == "-"
    # best per row by the arithmetic mean (lower is better): NCORE=1 at 1 node, NCORE=2 at 2
    assert (0, 1) in side.marked and (1, 2) in side.marked
    rec = next(r for r in side.records if r["variant"] == "plain" and r["nodes"] == 1
               and r["NCORE"] == 1)
    assert rec["value"] == pytest.approx(12.0) and rec["std"] == pytest.approx(2.0)
    assert rec["statistic"] == "mean of launches"
    assert "x = failed" in side.caption and "- = not run" in side.caption


def test_relative_gives_every_value_as_a_percent_of_the_baseline(core, tmp_path):
    """The image-regression seed reports slowdowns as % of the production run: with
    --relative each candidate cell is candidate / baseline in %, with the 95% CI of the gain,
    the baseline reads 100%; the plots follow."""
    from mpibench.report import plots
    from mpibench.report.compare_view import comparison_table

    store, groups = core
    cmp = compare_groups(store, groups, "base")
    cmp.relative = True
    t = comparison_table(cmp)
    col = t.header.index("fast")
    base_col = col - 1
    recs = [r for r in t.records if r["benchmark"] == "Allreduce" and r["size"] == 1 << 20]
    (rec,) = recs
    # fast = 0.8 x base time: 80% of the baseline, inside its CI
    assert rec["cand_pct_of_base"] == pytest.approx(100 / rec["gain"])
    assert rec["cand_pct_of_base"] == pytest.approx(80, rel=0.05)
    assert rec["cand_pct_of_base_ci_low"] <= rec["cand_pct_of_base"] \
        <= rec["cand_pct_of_base_ci_high"]
    shown = [r for r in t.rows if r[1] == "1M"]
    assert any(r[col].startswith(f"{rec['cand_pct_of_base']:.1f}% [") for r in shown), shown
    assert all(r[base_col].startswith("100% (") for r in shown)
    assert "% of the baseline" in t.caption
    fig = plots.latency_figure(cmp)
    assert fig is not None and "% of base" in fig.axes[0].get_ylabel()
    # off: the values themselves
    cmp.relative = False
    assert not any("100% (" in r[base_col] for r in comparison_table(cmp).rows)


def test_relative_flag_on_compare(tmp_path, capsys):
    store, _ = build_two_stack_store(tmp_path / "c.db", repeats=3)
    store.close()
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "c.db"), "--relative",
                     "--benchmark", "Allreduce", "--size", "1MiB"]) in (0, 1)
    out = capsys.readouterr().out
    assert "100% (" in out and "% of the baseline" in out.replace("\n", " ")


def test_grouped_bar_chart_per_benchmark_and_size(core):
    """Two stacks side by side at each size, one panel per benchmark, whiskers = the
    95% CI between launches; the HTML report carries it as inline SVG."""
    from mpibench.report import plots

    store, groups = core
    cmp = compare_groups(store, groups, "base")
    fig = plots.bar_figure(cmp)
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_title() == "PingPong"
    bars = [p for p in ax.patches]
    sizes = {r.size for r in cmp.rows if r.benchmark == "PingPong"}
    assert len(bars) == 2 * len(sizes)                  # base and fast at every size
    assert len(ax.containers) >= 2 and any(
        getattr(c, "has_yerr", False) for c in ax.containers)   # CI whiskers
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["base", "fast"]
    html = build_report(store, groups, ReportOptions())
    names = [f.name for s in html.sections for f in getattr(s, "figures", [])]
    assert "bars" in names


def test_figure_of_merit_vs_nodes_curve_per_variant(app):
    """The application plot people expect: the figure of merit itself (not the speedup)
    against nodes, one curve per variant (and per other parameter), CI whiskers."""
    from mpibench.report import plots

    store, groups = app
    t = scaling_table(store, groups, metric="ns/day")
    fig = plots.fom_figure(t.records)
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_xlabel() == "nodes" and "ns/day" in ax.get_ylabel()
    labels = [x.get_text() for x in ax.get_legend().get_texts()]
    assert any(lb.startswith("plain") for lb in labels) and any(lb.startswith("x") for lb in labels)
    # a curve's points are the table's values at 1, 2, 4, 8 nodes
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [1.0, 2.0, 4.0, 8.0]
    html = build_report(store, groups, ReportOptions())
    names = [f.name for s in html.sections for f in getattr(s, "figures", [])]
    assert "figure-of-merit" in names


def test_what_differs_between_two_sets(tmp_path, capsys):
    """The image-regression question "what changed under us?": the two sets' fingerprints
    side by side, only where they differ (library, UCX, the library's own settings, env, MCA
    on the launcher line, kernel, CPU, node names); the same in compare and the report."""
    store = Store(tmp_path / "d.db")
    cid = store.add_campaign("img", {})
    base = {"stack": {"name": "ompi", "kind": "openmpi", "version": "4.1.4",
                      "library_version": "Open MPI v4.1.4"},
            "launcher_argv": ["mpirun", "-np", "2", "--mca", "btl", "self,vader", "PROG"],
            "transport_env": {"UCX_TLS": "sm"}, "hosts": ["n1"],
            "machine": {"kernel": "6.1.0-18", "cpu_model": "EPYC 7763", "cores": 128},
            "libraries": {"library": "Open MPI v4.1.4", "ucx": "1.13.1"},
            "library_settings": {"openmpi_mca": {"pml": "^ucx (file (/etc/x.conf:69))",
                                                 "btl": "self,vader (environment)"}}}
    new = json.loads(json.dumps(base))
    new["machine"]["kernel"] = "6.1.0-25"
    new["libraries"]["ucx"] = "1.16.0"
    new["library_settings"]["openmpi_mca"]["pml"] = "ucx (environment)"
    new["transport_env"]["UCX_RNDV_THRESH"] = "8192"
    new["hosts"] = ["n2"]
    # per-node fingerprints (the probe's first rank on each host): listed per node
    base["nodes"] = {"n1": {"kernel": "6.1.0-18", "interfaces": ["ib0"]}}
    new["nodes"] = {"n1": {"kernel": "6.1.0-18", "interfaces": ["ib0", "eth1"]}}

    def make(rep):
        return [core_record("PingPong", 8, [1.0 + 0.01 * rep] * 5)]
    groups = {"old": add_variant_runs(store, cid, "old", repeats=2, make=make,
                                      fingerprint=base),
              "new": add_variant_runs(store, cid, "new", repeats=2, make=make,
                                      fingerprint=new)}
    from mpibench.report.differences import differences_table

    t = differences_table(store, groups, "old")
    rep = build_report(store, groups, ReportOptions(baseline="old", plots=False))
    (sec,) = [x for x in rep.sections if x.id == "differences"]
    assert sec.tables[0].records == t.records
    store.close()
    got = {(r["what"], r["setting"]): (r["old"], r["new"]) for r in t.records}
    assert got == {
        ("UCX/libfabric", "UCX version"): ("1.13.1", "1.16.0"),
        ("library settings (openmpi_mca)", "pml"): ("^ucx (file (/etc/x.conf:69))",
                                                    "ucx (environment)"),
        ("env", "UCX_RNDV_THRESH"): ("-", "8192"),
        ("kernel", "kernel"): ("6.1.0-18", "6.1.0-25"),
        ("nodes", "hosts"): ("n1", "n2"),
        ("node n1", "interfaces"): ("ib0", "ib0, eth1")}
    assert t.header == ["what", "setting", "old", "new"]
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "d.db"), "--baseline", "old",
                     "--differences", "--format", "json"]) in (0, 1)
    obj = json.loads(capsys.readouterr().out)
    assert {(r["what"], r["setting"]) for r in obj["differences"]["rows"]} == set(got)


def test_no_module_of_mpibench_imports_the_public_api_module():
    """report/compare.py is the public API for callers outside mpibench; inside the package a
    name comes from the module that owns it (no facade to route around, no import circle)."""
    import ast

    from support import srcast

    src = Path(__file__).resolve().parents[2] / "src" / "mpibench"
    users = []
    for f in sorted(src.rglob("*.py")):
        if f == src / "report" / "compare.py":
            continue
        for n in ast.walk(srcast.parse(f)):
            mods = ([n.module] if isinstance(n, ast.ImportFrom) and n.module
                    else [a.name for a in n.names] if isinstance(n, ast.Import) else [])
            if "mpibench.report.compare" in mods or (
                    isinstance(n, ast.ImportFrom) and n.module == "mpibench.report"
                    and any(a.name in ("compare", "tables") for a in n.names)):
                users.append(f"{f.relative_to(src)}:{n.lineno}")
    assert not users, users
    assert not (src / "report" / "tables.py").exists()
    import mpibench.report.compare as api
    assert all(getattr(api, name, None) is not None for name in api.__all__)


@pytest.mark.parametrize("order, named, not_named", [
    ("interleaved", "paired by round (the per-round differences", "unpaired"),
    ("random", "unpaired (each side's launches an independent sample)", "paired by round")])
def test_report_header_names_the_test_its_comparison_used(tmp_path, order, named, not_named):
    """The header's test sentence is read from the comparison's rows: the same launches
    in an interleaved campaign are tested paired by round, in a random-order one unpaired
    (test_compare's round-pairing case), and the HTML and Markdown headers say which."""
    from mpibench.stats import simulate

    store, groups = simulate.build_store(
        tmp_path / f"{order}.db", np.random.default_rng(3), launches=6, sigma_l=0.02,
        within=0.002, effect=0.05, sizes=(0, 8, 64, 1024), n_samples=(20, 40),
        spec={"order": order}, rounds="two-mode")
    try:
        rep = build_report(store, groups, ReportOptions(plots=False))
    finally:
        store.close()
    assert named in rep.test and not_named not in rep.test and "Welch" not in rep.test
    import html as htmllib

    html = htmllib.unescape(" ".join(write_html(rep, tmp_path / "r.html").read_text().split()))
    md = " ".join(write_markdown(rep, tmp_path / "r.md", "svg").read_text().split())
    head = md.split("## Result sets")[0]
    assert f"gains tested with {rep.test}" in html
    assert named in head and "Holm-type procedure over every p of the comparison" in head


def test_a_report_without_a_comparison_names_no_test(tmp_path, core):
    store, groups = core
    rep = build_report(store, {"base": groups["base"]}, ReportOptions(plots=False))
    assert rep.test == ""
    assert "gains tested" not in write_html(rep, tmp_path / "one.html").read_text()
