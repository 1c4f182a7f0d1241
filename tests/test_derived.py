"""Derived figures of merit (jobs/day = 86400 / wall_time) and the yearly projection of a
fixed workload (node-hours, cost, kWh, electricity, savings per year)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.derived import Derived, compile_expr, derived_rows, ident
from mpibench.errors import UsageError
from mpibench.report.projection import projection_table
from test_report_synth import build_app_store

APP = """
[campaign]
name = "d"
repeats = 2
verify_transport = false
price_per_node_hour = 2.0
power_per_node_w = 400
price_per_kwh = 0.25
jobs_per_year = 10000
[variants.a]
stack = "openmpi"
np = 1
[benchmarks.app]
command = "sh -c 'echo rate 12.5 ns/day'"
fom = { name = "ns/day", regex = 'rate ([0-9.]+)', unit = "ns/day", better = "higher" }
derived = [
  { name = "jobs/day", expr = "86400 / wall_time", unit = "jobs/day", better = "higher" },
  { name = "us/step", expr = "86400e6 / (ns_day / 2e-6)", unit = "us", better = "lower" },
]
"""


def _d(expr: str) -> Derived:
    return Derived("x", expr, "u", "higher", compile_expr(expr))


def test_expressions_are_arithmetic_on_metrics_only():
    assert ident("ns/day") == "ns_day" and ident("wall_time") == "wall_time"
    assert _d("86400 / wall_time").evaluate({"wall_time": 43200.0}) == 2.0
    assert _d("-(a + b) * 2 ** 2").evaluate({"a": 1, "b": 2}) == -12.0
    assert _d("1 / wall_time").evaluate({"wall_time": 0.0}) is None      # never invented
    assert _d("a").evaluate({}) is None
    for bad in ("__import__('os')", "a.b", "a[0]", "'s'", "a if b else c", "True + 1",
                "lambda: 1"):
        with pytest.raises(ValueError):
            compile_expr(bad)
    rows = [{"metric": "wall_time", "median": 10.0}, {"metric": "ns/day", "median": 50.0}]
    out = derived_rows([Derived("jobs/day", "86400 / wall_time", "jobs/day", "higher",
                                compile_expr("86400 / wall_time"))], rows,
                       {"benchmark": "app", "extra": {"params": {}}})
    assert out[0]["median"] == 8640.0 and out[0]["extra"]["derived"] == "86400 / wall_time"


@pytest.mark.parametrize("derived, key, expected", [
    ('[{ name = "j", expr = "1 / walltime", unit = "u", better = "higher" }]',
     "benchmarks.app.derived[0].expr", "unknown metric 'walltime'"),
    ('[{ name = "j", expr = "open(1)", unit = "u", better = "higher" }]',
     "benchmarks.app.derived[0].expr", "is not allowed"),
    ('[{ name = "ns/day", expr = "1", unit = "u", better = "higher" }]',
     "benchmarks.app.derived[0].name", "already a metric"),
    ('[{ name = "j", expr = "1", unit = "u" }]', "benchmarks.app.derived[0].better", "missing"),
])
def test_derived_errors_name_the_key(tmp_path, derived, key, expected):
    p = tmp_path / "d.toml"
    p.write_text(APP.split("derived = [")[0] + f"derived = {derived}\n")
    with pytest.raises(UsageError) as exc:
        load(p)
    assert f": {key}:" in str(exc.value) and expected in str(exc.value), str(exc.value)


def test_projection_of_a_year_of_jobs(tmp_path):
    store, groups = build_app_store(tmp_path / "p.db", nodes=(1, 2), ncore=(2,), repeats=3,
                                    spec={"price_per_node_hour": 2.0, "power_per_node_w": 400,
                                          "price_per_kwh": 0.25, "jobs_per_year": 1000})
    t = projection_table(store, groups, baseline="plain")
    assert t.rows and t.kind == "projection"
    for r in t.records:
        secs, nodes = r["seconds"], r["nodes"]
        assert r["jobs_per_day"] == pytest.approx(86400 / secs)
        assert r["node_hours"] == pytest.approx(1000 * nodes * secs / 3600)
        assert r["cost"] == pytest.approx(r["node_hours"] * 2.0)
        assert r["kwh"] == pytest.approx(r["node_hours"] * 0.4)
        assert r["electricity"] == pytest.approx(r["kwh"] * 0.25)
    # x is 10% faster than plain: it saves money and energy every year, at every node count
    x = [r for r in t.records if r["variant"] == "x"]
    assert len(x) == 2 and all(r["saving_per_year"] > 0 and r["kwh_saved_per_year"] > 0
                               for r in x)
    plain = {r["params"]: r for r in t.records if r["variant"] == "plain"}
    for r in x:
        assert r["saving_per_year"] == pytest.approx(plain[r["params"]]["cost"] - r["cost"])
    # a flag wins over the stored workload
    t2 = projection_table(store, groups, jobs_per_year=2000, baseline="plain")
    assert t2.records[0]["node_hours"] == pytest.approx(2 * t.records[0]["node_hours"])
    none = projection_table(store, groups, jobs_per_year=0, baseline="plain")
    store.close()
    assert none.records == [] or none.notes


@pytest.mark.mpi
def test_campaign_stores_jobs_per_day_and_compare_projects_a_year(tmp_path, capsys):
    if not shutil.which("mpirun.openmpi") and not shutil.which("mpirun"):
        pytest.skip("no mpirun")
    p = tmp_path / "d.toml"
    p.write_text(APP)
    assert cli_main(["campaign", "run", "--no-progress", str(p)]) == 0
    con = sqlite3.connect(tmp_path / "mpibench.db")
    vals = {}
    for metric, v in con.execute("SELECT metric, mean FROM results"):
        vals.setdefault(metric, []).append(v)
    con.close()
    assert set(vals) == {"ns/day", "wall_time", "jobs/day", "us/step"}
    for wall, jobs in zip(vals["wall_time"], vals["jobs/day"], strict=True):
        assert jobs == pytest.approx(86400 / wall)
    # 12.5 ns/day at 2 fs per step: 6.25e6 steps per day -> 13824 us per step
    assert vals["us/step"] == [pytest.approx(13824)] * 2
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "mpibench.db"), "--format", "json",
                     "--metric", "ns/day"]) in (0, 1)
    out = capsys.readouterr().out
    assert '"projection"' in out and '"jobs_per_year": 10000' in out


def test_cost_and_projection_price_the_application_not_its_profile_rows(tmp_path):
    from mpibench.report.tables import cost_table
    from test_report_synth import add_variant_runs

    store, groups = build_app_store(tmp_path / "p.db", nodes=(1,), ncore=(2,), repeats=2,
                                    spec={"price_per_node_hour": 2.0, "power_per_node_w": 400,
                                          "jobs_per_year": 100})
    cid = store.add_campaign("prof")
    for g in ("plain", "x"):
        groups[g] += add_variant_runs(store, cid, g, repeats=2, grp="vasp", make=lambda rep: [
            {"benchmark": "profile:MPI", "size": None, "np": 2, "metric": "mpi_time",
             "unit": "us", "better": "lower", "statistic": "sum", "n": 2, "median": 5.0,
             "samples": [5.0, 5.0]}])
    ct = cost_table(store, groups)
    pj = projection_table(store, groups, baseline="plain")
    store.close()
    assert {r["benchmark"] for r in ct.records} == {"vasp"}
    assert {r["benchmark"] for r in pj.records} == {"vasp"}


def test_projection_prices_the_energy_saving_and_never_prints_an_unpriced_zero(tmp_path):
    spec = {"price_per_node_hour": 2.0, "power_per_node_w": 400, "price_per_kwh": 0.25,
            "jobs_per_year": 1000}
    store, groups = build_app_store(tmp_path / "p.db", nodes=(1,), ncore=(2,), repeats=3,
                                    spec=spec)
    t = projection_table(store, groups, baseline="plain")
    (x,) = [r for r in t.records if r["variant"] == "x"]
    # kWh saved x price per kWh, in money, next to the kWh
    assert x["electricity_saved_per_year"] == pytest.approx(x["kwh_saved_per_year"] * 0.25)
    assert x["electricity_saved_per_year"] > 0
    col = t.header.index("electricity saved/year")
    (row,) = [r for r in t.rows if r[1] == "x"]
    assert row[col] not in ("", "0")
    # price_per_node_hour = 0: node-hours are not priced, so no money saving from them
    free = projection_table(store, groups, baseline="plain", price_per_node_hour=0)
    store.close()
    (fx,) = [r for r in free.records if r["variant"] == "x"]
    assert fx["saving_per_year"] is None and fx["cost"] is None
    (row,) = [r for r in free.rows if r[1] == "x"]
    assert row[free.header.index("saving/year")] == "not priced"
    assert row[free.header.index("cost/year")] == "not priced"
    assert fx["electricity_saved_per_year"] == pytest.approx(x["electricity_saved_per_year"])
    assert any("price per node-hour is 0" in n for n in free.notes), free.notes
