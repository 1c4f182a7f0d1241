"""A year of a fixed workload on each variant: what it costs and what it saves.

The cost table (tables.cost_table) says what one run costs at today's price per node-hour
and node power. Users planning a purchase or a software change ask the next question: with
our workload of N jobs a year, how many node-hours, how much money, how many kWh and how
much electricity does each variant take, and what does the better one save per year?

Per application cell (or per launch for a message-size campaign) and variant:
  jobs/day       = 86400 / run time            (one job after another on its nodes)
  node-h/year    = jobs_per_year x nodes x run time / 3600
  cost/year      = node-h/year x price per node-hour
  kWh/year       = node-h/year x node power / 1000
  energy/year    = kWh/year x price per kWh    (electricity alone: a part of the node-hour)
  saving/year    = the baseline's cost/year (and kWh/year) minus the variant's
  electricity saved/year = kWh saved/year x price per kWh (money, next to the kWh)
A price per node-hour of 0 means node-hours are not priced (owned nodes): cost and saving
per year read "not priced" rather than a saving of 0.
Run time and nodes are the cost table's (the cell's wall_time metric, else the runs'
elapsed time; the nodes parameter, else the run spec, else 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mpibench.report.cost import _money, cost_table
from mpibench.report.data import fmt_num, fmt_params
from mpibench.report.render import Table
from mpibench.report.specs import _spec_value
from mpibench.store import Store

PROJECTION_KEYS = ("jobs_per_year", "price_per_kwh")


def projection_table(store: Store, sets: Mapping[str, list[str]], *,
                     jobs_per_year: float | None = None,
                     price_per_node_hour: float | None = None,
                     power_per_node_w: float | None = None,
                     price_per_kwh: float | None = None, baseline: str | None = None,
                     cells: dict | None = None) -> Table:
    all_ids = [r for ids in sets.values() for r in ids]
    # a value not given is read from the runs' stored specs (campaign keys of the same name)
    jobs_per_year, price_per_kwh, price_per_node_hour, power_per_node_w = (
        v if v is not None else _spec_value(store, all_ids, (k,)) for k, v in (
            ("jobs_per_year", jobs_per_year), ("price_per_kwh", price_per_kwh),
            ("price_per_node_hour", price_per_node_hour), ("power_per_node_w", power_per_node_w)))
    baseline = baseline or next(iter(sets), None)
    t = Table(title="Yearly projection", kind="projection", rows=[], notes=[],
              header=["cell", "variant", "nodes", "run time (s)", "jobs/day", "node-h/year",
                      "cost/year", "kWh/year", "electricity/year", "saving/year",
                      "kWh saved/year", "electricity saved/year"],
              caption=(f"{fmt_num(jobs_per_year) if jobs_per_year else '?'} jobs per year; "
                       f"price {price_per_node_hour if price_per_node_hour is not None else '?'}"
                       f" per node-hour, {power_per_node_w if power_per_node_w is not None else '?'}"
                       f" W per node, {price_per_kwh if price_per_kwh is not None else '?'} per "
                       "kWh; jobs/day = 86400 / run time on the job's nodes; node-h/year = jobs "
                       "x nodes x run time; kWh = node-h x power (node power only); "
                       "electricity = kWh x price per kWh (also for the kWh saved); savings against "
                       f"{baseline}"))
    if not jobs_per_year:
        t.notes.append("no workload given (--jobs-per-year or campaign key jobs_per_year)")
        return t
    if price_per_node_hour is None and power_per_node_w is None:
        t.notes.append("no price per node-hour or power per node given (flags "
                       "--cost-per-node-hour/--power-per-node-w or campaign keys "
                       "price_per_node_hour/power_per_node_w)")
        return t
    # 0 per node-hour is "not priced", never a cost of 0 and a saving of 0
    unpriced = price_per_node_hour is not None and price_per_node_hour <= 0
    ct = cost_table(store, sets, price_per_node_hour=price_per_node_hour,
                    power_per_node_w=power_per_node_w, baseline=baseline, cells=cells)
    by_cell: dict[tuple, dict[str, dict[str, Any]]] = {}
    for rec in ct.records:
        key = (rec.get("benchmark"), fmt_params(rec.get("params")), rec.get("np"))
        by_cell.setdefault(key, {})[rec["variant"]] = rec
    for (bench, params, np_), per_variant in by_cell.items():
        label = " ".join(x for x in (bench or "one launch", params) if x)
        proj: dict[str, dict[str, float | None]] = {}
        for g, rec in per_variant.items():
            if rec.get("seconds"):
                proj[g] = _per_year(rec, jobs_per_year, None if unpriced else
                                    price_per_node_hour, power_per_node_w, price_per_kwh)
        base = proj.get(baseline)
        for g in [x for x in sets if x in proj]:
            p = proj[g]
            save, save_kwh, save_elec = (_savings(base, p, price_per_kwh)
                                         if base is not None and g != baseline
                                         else (None, None, None))
            na = "not priced" if unpriced else ""
            nosave = na if (unpriced and g != baseline and base is not None) else ""
            t.rows.append([label, g, str(p["nodes"]), fmt_num(p["seconds"]),
                           fmt_num(p["jobs_per_day"]), fmt_num(p["node_hours"]),
                           _money(p["cost"]) if p["cost"] is not None else na,
                           fmt_num(p["kwh"]), _money(p["electricity"])
                           if p["electricity"] is not None else "",
                           nosave if save is None else _money(save),
                           "" if save_kwh is None else fmt_num(save_kwh),
                           "" if save_elec is None else _money(save_elec)])
            t.records.append({"benchmark": bench, "params": params, "np": np_, "variant": g,
                              **p, "saving_per_year": save, "kwh_saved_per_year": save_kwh,
                              "electricity_saved_per_year": save_elec,
                              "jobs_per_year": jobs_per_year})
    if price_per_kwh is None and power_per_node_w is not None:
        t.notes.append("no price per kWh (--price-per-kwh or campaign key price_per_kwh): "
                       "electricity per year not priced")
    if unpriced:
        t.notes.append("price per node-hour is 0: node-hours are not priced, so cost and saving "
                       "per year are not given in money"
                       + ("; the money saved is the electricity saved/year (kWh x price per kWh)"
                          if price_per_kwh is not None and power_per_node_w is not None else
                          "; give price_per_kwh and power_per_node_w to price the energy saved"))
    t.notes.extend(n for n in ct.notes if "assumed 1 node" in n)
    return t


def _per_year(rec: dict[str, Any], jobs_per_year: float, price_per_node_hour: float | None,
              power_per_node_w: float | None, price_per_kwh: float | None
              ) -> dict[str, float | None]:
    """One cost_table record projected over a year of jobs (price None: not priced)."""
    secs, nodes = rec["seconds"], rec.get("nodes") or 1
    node_h = jobs_per_year * nodes * secs / 3600
    cost = node_h * price_per_node_hour if price_per_node_hour is not None else None
    kwh = node_h * power_per_node_w / 1000 if power_per_node_w is not None else None
    elec = kwh * price_per_kwh if (kwh is not None and price_per_kwh is not None) else None
    return {"jobs_per_day": 86400 / secs, "node_hours": node_h, "cost": cost,
            "kwh": kwh, "electricity": elec, "seconds": secs, "nodes": nodes}


def _savings(base: dict[str, Any], p: dict[str, Any], price_per_kwh: float | None
             ) -> tuple[float | None, float | None, float | None]:
    """(money, kWh, electricity) saved per year against the baseline's projection."""
    save = save_kwh = save_elec = None
    if base["cost"] is not None and p["cost"] is not None:
        save = base["cost"] - p["cost"]
    if base["kwh"] is not None and p["kwh"] is not None:
        save_kwh = base["kwh"] - p["kwh"]
        if price_per_kwh is not None:
            save_elec = save_kwh * price_per_kwh
    return save, save_kwh, save_elec
