"""Derived figures of merit (jobs/day = 86400 / wall_time) and the yearly projection of a
fixed workload (node-hours, cost, kWh, electricity, savings per year)."""

from __future__ import annotations

import math
import shutil
import sqlite3

import pytest

from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.derived import Derived, compile_expr, derived_rows, ident
from mpibench.errors import UsageError
from mpibench.report.projection import projection_table
from support.synth import build_app_store

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
    out, problem = derived_rows([Derived("jobs/day", "86400 / wall_time", "jobs/day", "higher",
                                         compile_expr("86400 / wall_time"))], rows,
                                {"benchmark": "app", "extra": {"params": {}}})
    assert problem is None
    assert out[0]["median"] == 8640.0 and out[0]["extra"]["derived"] == "86400 / wall_time"


@pytest.mark.parametrize("expr, values, why", [
    # an integer 10**400 passed the try and raised OverflowError in float(): the cell was left
    # "running"; 9**9**9 computed an integer power for hours
    ("10**400", {}, "overflow"),
    ("9**9**9", {}, "overflow"),
    ("x * 1e300", {"x": 1e10}, "overflow"),
    ("1 / x", {"x": 0.0}, "division by zero"),
    ("1 / x", {"x": math.inf}, "not a finite number"),      # was stored as 0.0
    ("x", {"x": math.nan}, "not a finite number"),
    ("(0 - 8) ** (1 / 3)", {}, "not a real number"),
    ("2 ** -2000", {}, "underflow"),
    ("x * 1e-300", {"x": 1e-300}, "underflow"),
])
def test_undefined_values_are_refused_with_the_reason(expr, values, why):
    v, reason = _d(expr).value_or_reason(values)
    assert v is None and why in reason, reason
    rows, problem = derived_rows([_d(expr)], [{"metric": k, "median": x}
                                              for k, x in values.items()], {"extra": {}})
    assert rows == [] and why in problem and expr in problem


def test_defined_edges_still_compute():
    assert _d("0 ** 2").evaluate({}) == 0.0
    assert _d("2 ** 0.5").evaluate({}) == pytest.approx(math.sqrt(2))
    assert _d("x - x").evaluate({"x": 1e300}) == 0.0      # an exact zero, not an underflow
    assert _d("2 ** 1023").evaluate({}) == 2.0 ** 1023


def test_9_to_the_9_to_the_9_does_not_hang():
    # evaluated in floating point: an OverflowError at once, whatever the machine's speed
    # (an integer power would run for hours; a test cannot time it, it can only finish)
    assert _d("9**9**9").value_or_reason({})[0] is None
    assert _d("(2**2**2**2**2)").value_or_reason({})[0] is None


@pytest.mark.parametrize("expr, why", [
    ("+".join(["a"] * 3000), "nests too deep"),               # was a RecursionError at load
    ("+".join(["a"] * 150), "nests too deep"),
    ("-" * 3000 + "1", "nests too deep"),
    ("-" * 500 + "1", "nests too deep"),
    ("1e999", "not a finite"),
    ("1" + "0" * 400, "not a finite"),
    ("a" * 20000, "characters"),
])
def test_oversized_expressions_are_refused_at_load(expr, why):
    with pytest.raises(ValueError, match=why):
        compile_expr(expr)


@pytest.mark.parametrize("fom, derived, both", [
    # x/y and x.y both fold to x_y: the expression silently took the last
    ('[{ name = "x/y", regex = "a ([0-9]+)", unit = "u", better = "higher" },'
     ' { name = "x.y", regex = "b ([0-9]+)", unit = "u", better = "higher" }]',
     '[{ name = "j", expr = "x_y * 2", unit = "u", better = "higher" }]', ("x/y", "x.y")),
    # U+FB01 folds to fi as Python folds identifiers
    ('[{ name = "fi", regex = "a ([0-9]+)", unit = "u", better = "higher" },'
     ' { name = "\ufb01", regex = "b ([0-9]+)", unit = "u", better = "higher" }]',
     '[{ name = "j", expr = "fi * 2", unit = "u", better = "higher" }]', ("fi", "\ufb01")),
    ('{ name = "wall-time", regex = "a ([0-9]+)", unit = "u", better = "higher" }',
     '[{ name = "j", expr = "wall_time * 2", unit = "u", better = "higher" }]',
     ("wall_time", "wall-time")),
    # a derived metric named like a figure of merit after folding
    ('{ name = "ns/day", regex = "a ([0-9]+)", unit = "u", better = "higher" }',
     '[{ name = "ns.day", expr = "1", unit = "u", better = "higher" }]', ("ns.day", "ns/day")),
])
def test_metric_names_that_fold_to_one_identifier_are_refused_naming_both(tmp_path, fom,
                                                                           derived, both):
    p = tmp_path / "d.toml"
    p.write_text(APP.split("fom = ")[0] + f"fom = {fom}\nderived = {derived}\n",
                 encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        load(p)
    msg = str(exc.value)
    assert all(repr(b) in msg for b in both) and "\n" not in msg, msg


def test_folding_names_without_derived_expressions_are_fine(tmp_path):
    p = tmp_path / "d.toml"
    p.write_text(APP.split("fom = ")[0] + 'fom = [{ name = "x/y", regex = "a ([0-9]+)", '
                 'unit = "u", better = "higher" }, { name = "x.y", regex = "b ([0-9]+)", '
                 'unit = "u", better = "higher" }]\n')
    assert [f.name for f in load(p).groups[0].foms] == ["x/y", "x.y"]


@pytest.mark.parametrize("raw, ok", [
    ("12.5", 12.5), ("-3", -3.0), (".5", 0.5), ("1e5", 1e5), ("5e-324", 5e-324),
    ("inf", None), ("nan", None), ("1e999", None), ("1e-400", None), ("1_000", None),
    ("\u0663", None), ("0x10", None), ("Infinity", None),
])
def test_figure_of_merit_capture_must_be_a_finite_decimal(raw, ok):
    from mpibench.parsers.fom import fom_value

    v, why = fom_value(raw)
    assert v == ok and (why is None) == (ok is not None), (v, why)


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
    from mpibench.report.cost import cost_table
    from support.synth import add_variant_runs

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


BAD = """
[campaign]
name = "bad-values"
repeats = 1
verify_transport = false
[variants.a]
stack = "openmpi"
np = 1
[benchmarks.inf]
command = "sh -c 'echo rate inf'"
fom = { name = "r", regex = 'rate (\\S+)', unit = "u", better = "higher" }
[benchmarks.e999]
command = "sh -c 'echo rate 1e999'"
fom = { name = "r", regex = 'rate (\\S+)', unit = "u", better = "higher" }
[benchmarks.overflow]
command = "sh -c 'echo rate 12.5'"
fom = { name = "r", regex = 'rate (\\S+)', unit = "u", better = "higher" }
derived = [{ name = "big", expr = "10**400 * r", unit = "u", better = "higher" }]
[benchmarks.zero]
command = "sh -c 'echo rate 0'"
fom = { name = "r", regex = 'rate (\\S+)', unit = "u", better = "higher" }
derived = [{ name = "inv", expr = "1 / r", unit = "u", better = "higher" }]
"""


@pytest.mark.mpi
def test_undefined_figures_fail_the_cell_with_the_reason(tmp_path, capsys):
    """An application printing inf or 1e999 was stored as Inf with status ok; a derived
    10**400 raised after the launch and left the cell "running" (every resume repeated it).
    Each is now a failed cell with the reason, and nothing non-finite is stored."""
    if not shutil.which("mpirun.openmpi") and not shutil.which("mpirun"):
        pytest.skip("no mpirun")
    p = tmp_path / "bad.toml"
    p.write_text(BAD)
    assert cli_main(["campaign", "run", "--no-progress", str(p)]) == 1
    con = sqlite3.connect(tmp_path / "mpibench.db")
    runs = {g: (st, reason) for g, st, reason in con.execute(
        "SELECT grp, status, reason FROM runs")}
    stored = con.execute("SELECT count(*) FROM results WHERE NOT (median BETWEEN -1e308 AND "
                         "1e308)").fetchone()[0]
    con.close()
    assert stored == 0
    assert runs["inf"] == ("failed", "figure of merit 'r': captured 'inf', not a number")
    assert runs["e999"][0] == "failed" and "beyond the range" in runs["e999"][1]
    assert runs["overflow"][0] == "failed" and "'big' = 10**400 * r: overflow" in \
        runs["overflow"][1]
    assert runs["zero"] == ("failed", "derived metric 'inv' = 1 / r: division by zero")
