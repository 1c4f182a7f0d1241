"""Cost and energy per run and per unit of the figure of merit, and the saving against the
baseline (always relative to the dearer side).
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from mpibench.report.data import (
    ResultCell,
    fmt_num,
    fmt_params,
    load_cells,
)
from mpibench.report.render import Table
from mpibench.report.specs import _spec_value, _spec_value_per_run
from mpibench.store import Store
from mpibench.store.report_queries import (
    run_elapsed,
)

_PER_HOUR = {"/day": 1 / 24, "/d": 1 / 24, "/h": 1.0, "/hour": 1.0, "/s": 3600.0,
             "/sec": 3600.0, "/min": 60.0}


@functools.lru_cache(maxsize=256)
def _rate_per_hour(unit: str) -> tuple[float, str] | None:
    u = unit.strip()
    for suffix, f in _PER_HOUR.items():
        if u.lower().endswith(suffix):
            return f, u[: -len(suffix)].strip() or "unit"
    return None


def cost_table(store: Store, sets: Mapping[str, list[str]], *,
               price_per_node_hour: float | None = None, power_per_node_w: float | None = None,
               baseline: str | None = None, cells: dict | None = None) -> Table:
    """Cost and energy per run and per unit of the figure of merit, per application cell.

    Run time: the cell's wall_time/elapsed metric if it has one, else the runs' elapsed
    seconds in the store. Nodes: the 'nodes' parameter, else the run spec's 'nodes', else 1
    (said in a note). Price and power: flags, else run/campaign spec keys
    'price_per_node_hour' and 'power_per_node_w'. The figure of merit is a rate metric whose
    unit ends in /day, /h, /min or /s (e.g. ns/day): cost per unit = cost per hour / rate per
    hour. The saving is the better variant's cost relative to the other's, per cell."""
    order = list(sets)
    baseline = baseline or order[0]
    price = price_per_node_hour
    power = power_per_node_w
    all_ids = [r for ids in sets.values() for r in ids]
    if price is None:
        price = _spec_value(store, all_ids, ("price_per_node_hour",))
    if power is None:
        power = _spec_value(store, all_ids, ("power_per_node_w",))
    t = Table(title="Cost and energy", kind="cost", rows=[], notes=[],
              header=["cell", "variant", "nodes", "run time (s)", "cost/run", "energy/run (Wh)",
                      "figure of merit", "cost/unit", "energy/unit (Wh)", "saving vs baseline"],
              caption=(f"price {price if price is not None else '?'} per node-hour, power "
                       f"{power if power is not None else '?'} W per node; cost = nodes x hours "
                       "x price; energy = nodes x hours x power (node power only, no network "
                       "or cooling)"))
    if price is None and power is None:
        t.notes.append("no price per node-hour or power per node given (flags "
                       "--cost-per-node-hour/--power-per-node-w or campaign keys "
                       "price_per_node_hour/power_per_node_w)")
        return t
    cells = cells if cells is not None else load_cells(store, sets, with_samples=False)
    job = _Costing(store, price, power, all_ids)
    savings: dict[str, list[float]] = defaultdict(list)
    apps = _application_cells(cells)
    if apps:
        many_np = len({k[1] for k in apps}) > 1
        for (bench, np_, pkey), per_set in apps.items():
            job.app_rows(t, bench, np_, json.loads(pkey), per_set, order, baseline,
                         savings, many_np)
    else:
        # Message-size campaigns: the unit of work is a launch (same benchmarks and sizes
        # for every variant), so cost and energy are per launch.
        job.launch_rows(t, sets, order, baseline)
    for g, ss in savings.items():
        # the headline users ask for: which variant is cheaper, and by how much
        cheaper = sum(x > 0 for x in ss)
        who, saving = cheaper_side(float(np.median(ss)), g, baseline)
        t.notes.append(f"{g} vs {baseline}: {g} is cheaper in {cheaper} of {len(ss)} cell(s); "
                       + (f"median saving of {who}: {100 * saving:.1f}%" if who else
                          "same median cost")
                       + " (per unit of the figure of merit where there is one, else per run;"
                         " a saving is relative to the dearer side)")
    if job.assumed_one:
        t.notes.append("node count unknown for some cells (no 'nodes' parameter or spec): "
                       "assumed 1 node")
    return t


def _application_cells(cells: dict) -> dict[tuple, dict[str, dict[str, ResultCell]]]:
    """{(benchmark title, np, params_key): {set: {metric: cell}}} of the ok application
    cells, across metrics (a figure of merit and a wall time of one cell)."""
    apps: dict[tuple, dict[str, dict[str, ResultCell]]] = defaultdict(lambda: defaultdict(dict))
    for key, by_set in cells.items():
        # profile:* rows describe the application's own launches (profile = true): they
        # are not more jobs to price
        if not key.is_application:
            continue
        for g, c in by_set.items():
            if c.status == "ok":
                apps[(key.title, key.np, key.params_key)][g][key.metric] = c
    return apps


class _Costing:
    """What pricing a run needs: the price and power, the runs' elapsed times (one query)
    and their specs' node counts (one query, on first need)."""

    def __init__(self, store: Store, price: float | None, power: float | None,
                 all_ids: list[str]) -> None:
        self.store, self.price, self.power, self.all_ids = store, price, power, all_ids
        self.elapsed: dict[str, float | None] = dict(run_elapsed(store, all_ids))
        self.spec_nodes: dict[str, Any] | None = None
        self.assumed_one = False

    def cost_energy(self, nodes: float, secs: float | None
                    ) -> tuple[float | None, float | None]:
        hours = secs / 3600 if secs else None
        cost = nodes * hours * self.price if (hours and self.price is not None) else None
        energy = nodes * hours * self.power if (hours and self.power is not None) else None
        return cost, energy

    def nodes(self, params: Mapping[str, Any], any_cell: ResultCell) -> Any:
        nodes = params.get("nodes")
        if nodes is None and any_cell.runs_used:
            if self.spec_nodes is None:         # one query for every run, on first need
                self.spec_nodes = _spec_value_per_run(self.store, self.all_ids, ("nodes",))
            nodes = self.spec_nodes.get(any_cell.runs_used[0])
        if nodes is None:
            nodes, self.assumed_one = 1, True
        return nodes

    def app_rows(self, t: Table, bench: str, np_: Any, params: dict[str, Any],
                 per_set: Mapping[str, dict[str, ResultCell]], order: list[str], baseline: str,
                 savings: dict[str, list[float]], many_np: bool) -> None:
        """One application cell's rows (one per set), and each candidate's saving."""
        price, power = self.price, self.power
        label = " ".join(x for x in (bench, fmt_params(params),
                                     f"np={np_}" if many_np and np_ is not None else "") if x)
        costs: dict[str, tuple[float | None, float | None]] = {}
        lines = []
        for g in [x for x in order if x in per_set]:
            metrics = per_set[g]
            wall = next((metrics[m] for m in ("wall_time", "elapsed", "walltime", "time_s")
                         if m in metrics), None)
            if wall is not None:
                secs = wall.value if wall.unit in ("s", "sec", "seconds") else (
                    wall.value / 1e6 if wall.unit == "us" else wall.value)
                any_cell = wall
            else:
                any_cell = next(iter(metrics.values()))
                secs = _median_elapsed(self.store, any_cell.runs_used, self.elapsed)
            nodes = self.nodes(params, any_cell)
            cost, energy = self.cost_energy(nodes, secs)
            fom = next(((m, c) for m, c in metrics.items() if c.better == "higher"
                        and _rate_per_hour(c.unit)), None)
            cpu = epu = None
            fom_txt = what = ""
            if fom:
                m, c = fom
                f, what = _rate_per_hour(c.unit)
                per_hour = c.value * f
                fom_txt = f"{fmt_num(c.value)} {c.unit}"
                if per_hour > 0:
                    cpu = nodes * price / per_hour if price is not None else None
                    epu = nodes * power / per_hour if power is not None else None
            costs[g] = (cpu if cpu is not None else cost, epu if epu is not None else energy)
            per = f" /{what}" if fom else ""
            lines.append([label, g, str(nodes), fmt_num(secs), _money(cost), fmt_num(energy),
                          fom_txt, _money(cpu) + per if cpu is not None else "",
                          fmt_num(epu) + per if epu is not None else ""])
            t.records.append({"benchmark": bench, "params": params, "np": np_, "variant": g,
                              "nodes": nodes, "seconds": secs, "cost_per_run": cost,
                              "energy_wh_per_run": energy,
                              "figure_of_merit": fom[1].value if fom else None,
                              "figure_of_merit_unit": fom[1].unit if fom else None,
                              "cost_per_unit": cpu, "energy_wh_per_unit": epu})
        # saving of the cheaper variant against the baseline (or the other one)
        base_cost = costs.get(baseline, (None, None))[0]
        for line, g in zip(lines, [x for x in order if x in per_set], strict=True):
            c = costs[g][0]
            if g == baseline or base_cost is None or c is None or base_cost <= 0:
                line.append("")
            else:
                s = 1 - c / base_cost
                line.append(_fmt_saving(s, baseline))
                t.records[-len(lines) + lines.index(line)]["saving_vs_baseline"] = s
                savings[g].append(s)
            t.rows.append(line)

    def launch_rows(self, t: Table, sets: Mapping[str, list[str]], order: list[str],
                    baseline: str) -> None:
        """One row per set: the cost and energy of one launch (median elapsed)."""
        base_cost = None
        lines = []
        for g in order:
            ids = list(sets[g])
            secs = _median_elapsed(self.store, ids, self.elapsed)
            nodes = _spec_value(self.store, ids, ("nodes",))
            if nodes is None:
                nodes, self.assumed_one = 1, True
            cost, energy = self.cost_energy(nodes, secs)
            if g == baseline:
                base_cost = cost if cost is not None else energy
            lines.append((g, nodes, secs, cost, energy, len(ids)))
        for g, nodes, secs, cost, energy, nruns in lines:
            mine = cost if cost is not None else energy
            saving = (1 - mine / base_cost) if (g != baseline and mine is not None
                                                and base_cost) else None
            t.rows.append([f"one launch (median of {nruns})", g, str(nodes), fmt_num(secs),
                           _money(cost), fmt_num(energy), "", "", "",
                           "" if saving is None else _fmt_saving(saving, baseline)])
            t.records.append({"benchmark": None, "params": {}, "variant": g, "nodes": nodes,
                              "seconds": secs, "cost_per_run": cost,
                              "energy_wh_per_run": energy, "launches": nruns,
                              "saving_vs_baseline": saving})


def cheaper_side(saving_vs_baseline: float, cand: str, baseline: str
                 ) -> tuple[str | None, float]:
    """(the cheaper side, its saving relative to the dearer side) from the candidate's
    saving against the baseline, 1 - cost_cand / cost_base. A saving is always taken
    against the dearer side, so it lies in [0, 1): a candidate costing 102.5% more gives
    the baseline a saving of 50.6%, never 'a saving of 102.5%'."""
    if saving_vs_baseline > 0:
        return cand, saving_vs_baseline
    if saving_vs_baseline < 0:
        ratio = 1.0 - saving_vs_baseline            # cost_cand / cost_base > 1
        return baseline, 1.0 - 1.0 / ratio
    return None, 0.0


def _fmt_saving(saving_vs_baseline: float, baseline: str) -> str:
    """'-20.0% vs ompi' style is a cost change, not a saving: the cheaper side and its
    saving against the dearer one ('saves 20.0% vs ompi', 'ompi saves 50.6%')."""
    who, saving = cheaper_side(saving_vs_baseline, "", baseline)
    if who is None:
        return f"same as {baseline}"
    return f"saves {100 * saving:.1f}% vs {baseline}" if who == "" else \
        f"{baseline} saves {100 * saving:.1f}%"


def _median_elapsed(store: Store, run_ids: list[str], cache: dict) -> float | None:
    vals = []
    for rid in run_ids:
        if rid not in cache:
            row = store.run(rid)
            cache[rid] = row["elapsed"] if row is not None else None
        if cache[rid] is not None:
            vals.append(cache[rid])
    if len(vals) == 1:                 # one launch per cell: np.median costs 50 us a call
        return float(vals[0])
    return float(np.median(vals)) if vals else None


def _money(v: float | None, digits: int = 4) -> str:
    return "" if v is None else fmt_num(v, digits)
