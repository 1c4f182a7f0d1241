"""Read result sets from the store and pool them into cells.

A cell is one (benchmark, size, np, params, metric) of one result set (a display name mapped
to run ids). Samples of a cell are pooled across the set's runs only when the runs share a
fingerprint. Policy for mixed fingerprints: pool the runs of the most common fingerprint
(ties: the one with the most samples, then the earliest run) and exclude the others; the
cell records what was excluded so the tables footnote it. Nothing is pooled across
fingerprints, and nothing is dropped silently.

The launch (one mpirun) is the unit of replication (stats.launch): each run used gives one
launch statistic (the median of its samples, or their mean with statistic="mean"; an
imported file's own statistic; an application's figure of merit), and the cell's value is
the geometric mean of those, every launch weighted equally, with a 95% CI from the spread
between launches (none with one launch). The pooled samples only describe the distribution
(min, p5, p95, p99, max, mean, std); each launch's own order-statistic CI is kept as the
"within-launch CI", which is never the uncertainty of a comparison.

Rows without raw samples (imported IMB/OSU summaries) keep their stored statistic; such a
cell is marked `no_samples`; each imported file is a launch, so two imported sets with the
same statistic are tested like native ones.
"""

from __future__ import annotations

import json
import math
import re
import statistics as _pystats
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from mpibench import stats
from mpibench.report.rules import CellKey, MetricKind, metric_kind, why_unusable
from mpibench.stats import launch as launch_stats
from mpibench.stats import preempted as preempted_stats
from mpibench.store import Store
from mpibench.store.report_queries import campaign_orders
from mpibench.units import fmt_size  # noqa: F401 - re-exported: reports import it from here

STATISTICS = ("median", "mean")

# IMB order first; anything else (applications, imported names) after, alphabetically.
try:
    from mpibench.benchmarks import ALL as _IMB_ORDER
except Exception:  # pragma: no cover - benchmarks module is the lead's; stay usable without
    _IMB_ORDER = []
_BENCH_RANK = {b: i for i, b in enumerate(_IMB_ORDER)}


# Campaign sweeps name their expansions 'base[k=v,...]' (a user's variant name cannot hold
# '['). Items are split at commas that start a new 'key=' so values such as UCX_TLS=self,sm
# stay whole.
_SWEEP_ITEM = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")
SCALE_AXES = ("np", "nodes", "ppn")


def split_variant(name: str) -> tuple[str, dict[str, int]]:
    """'ompi[np=2,transport=tcp]' -> ('ompi[transport=tcp]', {'np': 2}).

    The scale axes of a sweep (np, nodes, ppn) describe where a cell ran, not a setting to
    compare, so they leave the set name: results of ompi[np=1] and ompi[np=2] form one set
    'ompi' whose cells differ by np (a column of every result) or by the nodes/ppn parameter
    that load_cells adds. Other swept settings (transport, mca.*, env.*, ...) stay in the
    name: those are what a user compares."""
    if not name.endswith("]") or "[" not in name:
        return name, {}
    base, inner = name[:-1].split("[", 1)
    keep: list[str] = []
    scale: dict[str, int] = {}
    for item in _SWEEP_ITEM.split(inner):
        k, sep, v = item.partition("=")
        if sep and k in SCALE_AXES and v.isdigit():
            scale[k] = int(v)
        else:
            keep.append(item)
    if not scale or not base:
        return name, {}
    return (f"{base}[{','.join(keep)}]" if keep else base), scale


@lru_cache(maxsize=4096)
def sweep_params(variant: str) -> tuple[str, dict[str, int]]:
    """(set name, the nodes/ppn swept on the variant name): split_variant without np, which
    already is a column of every result. Cached per name (a store has few variants and
    10^5 rows): treat the dict as read-only."""
    name, scale = split_variant(variant)
    return name, {k: v for k, v in scale.items() if k != "np"}


def with_sweep_params(params: Mapping[str, Any], variant: str) -> Mapping[str, Any]:
    """The cell parameters of a result: its stored params plus the nodes/ppn swept on its
    variant name where the stored params do not have them (stored values win). The same
    object when the variant sweeps neither."""
    scale = sweep_params(variant)[1]
    if not scale:
        return params
    return {**params, **{k: v for k, v in scale.items() if k not in params}}


PLACEMENT_AXES = ("nodes", "ppn")


def effective_placement(variant: Mapping[str, Any] | None) -> dict[str, int]:
    """Where a variant's ranks run, as it asked: {'nodes': N, 'ppn': P} from its stored
    settings, whether they were fixed or swept. nodes: the variant's nodes, else its distinct
    hosts, else 1 (a local launch; unknown with a hostfile alone); ppn: the variant's ppn, else
    np / nodes where that divides (an uneven spread has no ranks-per-node figure). {} for a
    run without a variant (an imported file)."""
    if not isinstance(variant, Mapping):
        return {}
    np_ = variant.get("np")
    nodes = variant.get("nodes") or (len(set(variant["hosts"])) if variant.get("hosts")
                                     else None if variant.get("hostfile") else 1)
    out: dict[str, int] = {}
    if isinstance(nodes, int):
        out["nodes"] = nodes
    ppn = variant.get("ppn")
    if not ppn and isinstance(nodes, int) and isinstance(np_, int) and nodes > 0 \
            and np_ % nodes == 0:
        ppn = np_ // nodes
    if isinstance(ppn, int) and ppn:
        out["ppn"] = ppn
    return out


def run_placements(store: Store, run_ids: Iterable[str]) -> dict[str, dict[str, int]]:
    """{run id: effective_placement of its variant} (the run's stored spec)."""
    from mpibench.store.report_queries import run_specs

    out: dict[str, dict[str, int]] = {}
    for rid, spec_json, _camp in run_specs(store, list(dict.fromkeys(run_ids))):
        try:
            spec = json.loads(spec_json or "{}")
        except ValueError:
            spec = {}
        out[rid] = effective_placement(spec.get("variant") if isinstance(spec, dict) else None)
    return out


def with_placement(params: Mapping[str, Any], axes: Iterable[str],
                   placement: Mapping[str, int]) -> Mapping[str, Any]:
    """The cell parameters of a result when the selection compares placements: every axis
    in `axes` (nodes, ppn: those some selected variant sweeps) that the result's params lack
    comes from its run's effective placement, so a fixed variant (nodes = 2, ppn = 1) meets
    a sweep's nodes=2 point and no other. Axes no selected variant sweeps stay out of the
    key: two fixed variants at different placements (a placement study: 4 x 32 against
    8 x 16 ranks) meet at their np, as the things compared. The same object when nothing
    is added."""
    add = {a: placement[a] for a in axes if a not in params and a in placement}
    return {**params, **add} if add else params


def params_key(params: Mapping[str, Any] | None) -> str:
    return json.dumps(params or {}, sort_keys=True, default=str)


def _value_key(v: Any) -> tuple:
    if isinstance(v, bool) or not isinstance(v, int | float):
        try:
            return (0, float(v), "")
        except (TypeError, ValueError):
            return (1, 0.0, str(v))
    return (0, float(v), "")


def params_sort_key(params: Mapping[str, Any] | str | None) -> tuple:
    """Order parameter points by value, numbers as numbers: steps 500, 1000, 2000 (as text
    they sort 1000, 2000, 500). Accepts the params dict or its params_key JSON."""
    if isinstance(params, str):
        try:
            params = json.loads(params) if params else {}
        except ValueError:
            return ((params, (1, 0.0, params)),)
    return tuple((k, _value_key(v)) for k, v in sorted((params or {}).items()))


def bench_sort_key(name: str) -> tuple[int, str]:
    return (_BENCH_RANK.get(name, len(_BENCH_RANK)), name)


class Preempted(NamedTuple):
    """Samples the core flagged preempted over a cell's launches: left out of the statistic
    (--exclude-preempted), kept in it, and the launches without a count."""

    excluded: int
    kept: int
    unknown: int


@dataclass
class ResultCell:
    set_name: str                          # the result set this cell belongs to
    benchmark: str
    size: int | None
    np: int | None
    params: dict[str, Any]
    metric: str
    unit: str
    better: str
    statistic: str = "median"
    status: str = "ok"
    reason: str | None = None
    samples: np.ndarray = field(default_factory=lambda: np.empty(0))
    no_samples: bool = False
    n: int | None = None
    median: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    min: float | None = None
    p5: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    bandwidth_mbps: float | None = None
    busbw_mbps: float | None = None
    msg_rate: float | None = None
    firsts: list[float] = field(default_factory=list)
    launch_medians: list[float] = field(default_factory=list)
    stop_reasons: Counter = field(default_factory=Counter)
    # samples the core flagged preempted over the used launches: left out of the statistic
    # (--exclude-preempted), kept in it, and the launches that do not say (a core before
    # the flag or without RUSAGE_THREAD): preempted_of
    preempted: Preempted | None = None
    # the used launches that stopped `preempted` on fewer than stats.preempted.FEW_CLEAN
    # clean samples: the cell is then tested on its own launches (stats.preempted)
    few_clean: list[str] = field(default_factory=list)
    # the launches whose row is a preempted skip (stats.preempted.skipped: no clean sample
    # within the cap), among runs_failed; the core's other skips (--mem-limit, ...) are not
    skips_preempted: list[str] = field(default_factory=list)
    runs_used: list[str] = field(default_factory=list)
    runs_excluded: list[str] = field(default_factory=list)
    runs_failed: list[tuple[str, str, str | None]] = field(default_factory=list)
    fingerprint_id: str | None = None
    n_fingerprints: int = 1
    batch: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # run id -> the machine-state probe's record of that launch (its results' extra
    # "machine_probe", campaign/machine_probe.py), for the launches that carry one
    machine_probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    campaign_ids: set[int] = field(default_factory=set)
    # launch level (see the module docstring)
    requested: str = "median"            # the launch statistic asked for (median | mean)
    launch_ids: list[str] = field(default_factory=list)
    launch_values: list[float] = field(default_factory=list)
    # per launch its round (campaign id, invocation, group, point, repeat index) when it
    # ran in an interleaved campaign, else None (launch_round): the key stats.launch pairs by
    launch_rounds: list[tuple | None] = field(default_factory=list)
    estimate: launch_stats.Estimate | None = None
    within_ci_pct: float | None = None   # median over launches of their own CI half-width
    tool: str | None = None              # what measured its rows (core, imb, osu, app, ...)
    key_tool: str | None = None          # the tool when it is part of the key (rules.CellKey)

    @property
    def key(self) -> CellKey:
        return CellKey(self.benchmark, self.size, self.np, params_key(self.params),
                       self.metric, self.key_tool)

    @property
    def kind(self) -> MetricKind:
        return metric_kind(self.benchmark, self.metric, self.unit, self.better)

    @property
    def shown_statistic(self) -> str:
        """'median' for pooled samples and for rows whose stored median is the value
        (campaign figures of merit, statistic 'value'); else the imported tool's own
        statistic (IMB t_avg 'mean', NetPIPE 'min', ...), which importers keep in `mean`."""
        if not self.no_samples:
            return self.requested
        if self.statistic in ("median", "value"):
            return "median"
        return self.statistic

    @property
    def value(self) -> float | None:
        """The set's estimate: the geometric mean of the launch statistics."""
        if self.estimate is not None and self.estimate.value is not None:
            return self.estimate.value
        if self.shown_statistic != "median":
            return self.mean if self.mean is not None else self.median
        return self.median

    @property
    def launches(self) -> int:
        return len(self.launch_values)

    @property
    def by_launch(self) -> dict[str, float]:
        """{run id: launch statistic}: a launch is identified by its run, shared by every
        cell it measured."""
        return dict(zip(self.launch_ids, self.launch_values, strict=True))

    @property
    def by_round(self) -> dict[str, tuple]:
        """{run id: its round key} of the launches that have one (stats.launch pairs a
        baseline's and a candidate's launch of the same round)."""
        return {k: r for k, r in zip(self.launch_ids, self.launch_rounds, strict=False)
                if r is not None}

    @property
    def first(self) -> float | None:
        return float(np.median(self.firsts)) if self.firsts else None

    @property
    def ci_pct(self) -> float | None:
        return stats.ci_percent(self.value, self.ci_low, self.ci_high)

    @property
    def testable(self) -> bool:
        return self.status == "ok" and bool(self.launch_values)

    @property
    def mixed(self) -> bool:
        return bool(self.runs_excluded)

    @property
    def skipped(self) -> int:
        """Launches whose row for this cell is a preempted skip (skips_preempted): no
        launch value, missing for a reason tied to this set's flag rate."""
        return len(self.skips_preempted)

    @property
    def cut_short(self) -> set[str]:
        """The launches the core cut short on this cell (stats.preempted.cut_short: few
        clean samples, or a preempted skip): the cell is tested on its own launches."""
        return {*self.few_clean, *self.skips_preempted}


def _fetch_rows(store: Store, run_ids: list[str], with_samples: bool) -> Iterable[dict]:
    """Read-only fast path over the store's documented tables (results JOIN runs): the same
    fields as Store.results(), but params_json is parsed once per distinct text and extra
    only on demand, which matters at 10^4-10^5 rows."""
    from mpibench.store import blob_to_samples
    from mpibench.store.report_queries import result_rows

    params_cache: dict[tuple[str, str], tuple[dict, str]] = {}
    parsed_cache: dict[str, tuple[dict, str]] = {}      # params_json -> (params, key)
    for names, tup in result_rows(store, run_ids, with_samples):
        d = dict(zip(names, tup, strict=True))
        pj = d.pop("params_json") or "{}"
        d["point"] = pj             # the group point as stored: part of a launch's round
        variant = d.pop("variant")
        hit = params_cache.get((pj, variant))
        if hit is None:
            hit = parsed_cache.get(pj)
            if hit is None:
                parsed = json.loads(pj)
                hit = parsed_cache[pj] = (parsed, params_key(parsed))
            # nodes/ppn swept on the variant are cell parameters (see split_variant)
            parsed = with_sweep_params(hit[0], variant)
            if parsed is not hit[0]:
                hit = (parsed, params_key(parsed))
            params_cache[(pj, variant)] = hit
        d["params"], d["params_key"] = hit
        if with_samples:
            d["samples"] = blob_to_samples(d["samples"])
        yield d


def check_statistic(statistic: str) -> str:
    if statistic not in STATISTICS:
        from mpibench.errors import UsageError
        raise UsageError(f"--statistic {statistic!r}: expected one of {', '.join(STATISTICS)}")
    return statistic


def load_cells(store: Store, sets: Mapping[str, list[str]], *,
               with_samples: bool = True, statistic: str = "median"
               ) -> dict[CellKey, dict[str, ResultCell]]:
    """{cell key: {set name: ResultCell}} for every cell any set has (keys: rules.CellKey).
    statistic: each launch's statistic (median or mean of its samples).

    A set never pools two tools' rows into one cell: where one set measured a cell with
    more than one tool (a campaign with core and IMB groups, read by variant), the tool is
    part of that cell's key, so the core's and the suite's rows are separate cells
    (rules.py)."""
    check_statistic(statistic)
    owners: dict[str, list[str]] = defaultdict(list)
    for g, ids in sets.items():
        for rid in dict.fromkeys(ids):
            owners[rid].append(g)
    raw: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    all_ids = [rid for ids in sets.values() for rid in ids]
    rows = list(_fetch_rows(store, list(dict.fromkeys(all_ids)), with_samples))
    # placement (nodes, ppn) is part of a cell's identity wherever a selected variant sweeps
    # it; the others get their effective placement (see with_placement)
    axes = [a for a in PLACEMENT_AXES if any(a in r["params"] for r in rows)]
    lacking = {r["run_id"] for r in rows if any(a not in r["params"] for a in axes)}
    if lacking:
        placed = run_placements(store, lacking)
        for r in rows:
            if r["run_id"] in lacking:
                p = with_placement(r["params"], axes, placed.get(r["run_id"], {}))
                if p is not r["params"]:
                    r["params"], r["params_key"] = p, params_key(p)
    orders = campaign_orders(store, {r["campaign_id"] for r in rows})
    for r in rows:
        r["round"] = launch_round(r, orders)
    for row in rows:
        key = (row["benchmark"], row["size"], row["np"],
               row.get("params_key") or params_key(row["params"]), row["metric"])
        for g in owners[row["run_id"]]:
            raw[key][g].append(row)
    merged: dict[CellKey, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for key, by_set in raw.items():
        # a cell that one set measured with two tools is split by tool (rules.CellKey)
        split = any(len({r.get("tool") for r in rows}) > 1 for rows in by_set.values())
        for g, rows in by_set.items():
            for r in rows:
                merged[CellKey(*key, r.get("tool") if split else None)][g].append(r)
    out: dict[CellKey, dict[str, ResultCell]] = {}
    pending: list[tuple[ResultCell, list[dict]]] = []
    probes: dict[str, dict | None] = {}     # run id -> its probe record, read once a run
    for key in sorted(merged, key=_cell_sort_key):
        out[key] = by_set = {}
        for g, rows in merged[key].items():
            by_set[g] = c = pool(g, rows, _defer=pending, statistic=statistic,
                                 _probes=probes)
            c.key_tool = key.tool
    # the summaries of all cells at once (stats.summarize_many: same bits, 2-D batches)
    for (cell, used), summary in zip(pending, stats.summarize_many(
            [c.samples for c, _ in pending]), strict=True):
        _finish(cell, used, summary)
    return out


def launch_round(row: Mapping[str, Any], orders: Mapping[int, str | None]) -> tuple | None:
    """The round a launch ran in, (campaign id, invocation, group, group point, repeat
    index), when its campaign ran interleaved: repeat r of every variant of a group point
    then runs back-to-back (campaign/plan.py), so those launches share the machine's phase
    and stats.launch tests them paired. A variant measured by two groups (a baseline shared
    by two groups) has one launch per group in a repeat: each pairs with its own group's
    partner. The invocation is an ad-hoc run's instance (`mpibench run --name X` given
    again adds launches to campaign X numbered from repeat 0 again, minutes or days
    later: they pair only with their own invocation's launches); "" for a campaign file.
    None for a random-order campaign (its launches of one repeat are not back-to-back), a
    campaign whose spec does not say (imported files) and a row without a repeat: those
    launches are never paired."""
    cid, rep = row.get("campaign_id"), row.get("repeat")
    if cid is None or rep is None or orders.get(cid) != "interleaved":
        return None
    return (int(cid), row.get("instance") or "", row.get("grp"), row.get("point"), int(rep))


def _cell_sort_key(key: CellKey) -> tuple:
    return (bench_sort_key(key.benchmark), key.tool or "", key.metric,
            key.np if key.np is not None else -1, params_sort_key(key.params_key),
            key.size if key.size is not None else -1)


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def pool(set_name: str, rows: list[dict], *,
         _defer: list[tuple[ResultCell, list[dict]]] | None = None,
         _probes: dict[str, dict | None] | None = None,
         statistic: str = "median") -> ResultCell:
    """Pool one set's rows of one cell (see module docstring for the policy).

    _defer: a list that receives (cell, rows used) instead of summarizing the pooled samples
    here; load_cells summarizes them all in one batch and then calls _finish."""
    first = rows[0]
    cell = ResultCell(set_name=set_name, benchmark=first["benchmark"], size=first["size"],
                      np=first["np"], params=first["params"] or {}, metric=first["metric"],
                      unit=first["unit"], better=first["better"],
                      statistic=first["statistic"], requested=statistic,
                      tool=first.get("tool"))
    # the row rule (rules.why_unusable): only finished runs' ok rows make a value
    ok = []
    for r in rows:
        bad = why_unusable(r)
        if bad is None:
            ok.append(r)
        else:
            cell.runs_failed.append((r["run_id"], bad[0], bad[1]))
            if bad[0] == "skipped" and preempted_stats.skipped(r):
                cell.skips_preempted.append(r["run_id"])
    cell.campaign_ids = {r["campaign_id"] for r in rows}
    if not ok:
        cell.status, cell.reason = cell.runs_failed[0][1], cell.runs_failed[0][2]
        return cell

    used = _choose_fingerprint(cell, ok)
    _describe(cell, used, _probes)
    sample_arrays = [a for r in used if (a := r.get("samples")) is not None and len(a) > 0]
    if sample_arrays and len(sample_arrays) == len(used):
        x = _from_samples(cell, used, sample_arrays, statistic)
        if _defer is not None:
            _defer.append((cell, used))
            return cell
        _finish(cell, used, stats.summarize(x))
        return cell
    _from_summaries(cell, used)
    _finish(cell, used, None)
    return cell


def _choose_fingerprint(cell: ResultCell, ok: list[dict]) -> list[dict]:
    """Runs with different fingerprints are not pooled: the rows of the most common one
    (most runs, then most samples, then the first stored) are used, the others excluded."""
    by_fp: dict[Any, list[dict]] = {}
    for r in ok:
        by_fp.setdefault(r["fingerprint_id"], []).append(r)
    cell.n_fingerprints = len(by_fp)
    if len(by_fp) > 1:
        def rank(item):
            fp, rs = item
            nsamp = sum(len(r.get("samples", ())) for r in rs)
            return (-len(rs), -nsamp, min(r["result_id"] for r in rs))
        chosen_fp, used = sorted(by_fp.items(), key=rank)[0]
        cell.runs_excluded = [r["run_id"] for fp, rs in by_fp.items() if fp != chosen_fp
                              for r in rs]
    else:
        chosen_fp, used = next(iter(by_fp.items()))
    cell.fingerprint_id = chosen_fp
    cell.runs_used = [r["run_id"] for r in used]
    return used


def _describe(cell: ResultCell, used: list[dict],
              probes: dict[str, dict | None] | None = None) -> None:
    """What the used rows say beside their values: first-call times, stop reasons, batch,
    the tool's extra fields. Each row's extra_json is parsed once here (_extra_of) and the
    parsed dict handed to every reader of it (bench/bench_compare_report.py --core-extra)."""
    extras = [_extra_of(r) for r in used]
    cell.firsts = [float(r["first"]) for r in used if r.get("first") is not None]
    reasons = [_stop_with_stationarity(r, x) for r, x in zip(used, extras, strict=True)
               if r.get("stop_reason")]
    if reasons:
        cell.stop_reasons = Counter(reasons)
    cell.preempted = preempted_of(used, extras)
    cell.few_clean = [r["run_id"] for r in used if preempted_stats.few_clean(r)]
    cell.batch = used[0].get("batch")
    cell.extra = extras[0]
    cell.machine_probes = launch_probes(used, {} if probes is None else probes, extras)


def launch_probes(rows: Sequence[Mapping[str, Any]], seen: dict[str, dict | None],
                  extras: Sequence[dict] | None = None) -> dict[str, dict[str, Any]]:
    """{run id: extra["machine_probe"]} of the rows that carry one. A launch stores one
    record in every row (campaign/local.py), so each run's is read once (`seen`, shared by
    the cells of one load). extras: the rows' extra fields already parsed (_extra_of),
    else parsed here."""
    out: dict[str, dict[str, Any]] = {}
    for r, extra in zip(rows, extras if extras is not None else map(_extra_of, rows),
                        strict=True):
        rid = r["run_id"]
        if rid not in seen:
            mp = extra.get("machine_probe")
            seen[rid] = mp if isinstance(mp, dict) else None
        if seen[rid] is not None:
            out[rid] = seen[rid]
    return out


def _from_samples(cell: ResultCell, used: list[dict], sample_arrays: list,
                  statistic: str) -> Any:
    """Every used row has its samples: pool them and take each launch's statistic; returns
    the pooled samples (summarized by the caller, or in one batch by load_cells)."""
    x = np.concatenate(sample_arrays) if len(sample_arrays) > 1 else sample_arrays[0]
    cell.samples = x
    # the core's own per-launch median when stored (cheap), else computed
    cell.launch_medians = [float(r["median"]) if r.get("median") is not None
                           else float(np.median(a)) for r, a in zip(used, sample_arrays,
                                                                    strict=True)]
    if statistic == "mean":
        cell.launch_values = [float(r["mean"]) if r.get("mean") is not None
                              else float(np.mean(a)) for r, a in zip(used, sample_arrays,
                                                                     strict=True)]
    else:
        cell.launch_values = list(cell.launch_medians)
    cell.launch_ids = [r["run_id"] for r in used]
    cell.launch_rounds = [r.get("round") for r in used]
    pcts = [stats.ci_percent(r.get("median"), r.get("ci_low"), r.get("ci_high"))
            for r in used]
    pcts = [p for p in pcts if p is not None]
    cell.within_ci_pct = float(np.median(pcts)) if pcts else None
    return x


def _from_summaries(cell: ResultCell, used: list[dict]) -> None:
    """Stored summaries only (or some runs without samples): combine what is stored; each
    imported file (or application run) is a launch, with the tool's own statistic."""
    cell.no_samples = True
    vals = [r for r in used if r.get("median") is not None or r.get("mean") is not None]
    ns = [r["n"] for r in used if r.get("n") is not None]
    cell.n = sum(ns) if len(ns) == len(used) and ns else None
    meds = [r["median"] for r in used if r.get("median") is not None]
    means = [r["mean"] for r in used if r.get("mean") is not None]
    cell.median = _pystats.median(meds) if meds else None
    cell.mean = float(np.mean(means)) if means else None
    for col in ("min", "p5"):
        v = [r[col] for r in used if r.get(col) is not None]
        setattr(cell, col, min(v) if v else None)
    for col in ("max", "p95", "p99"):
        v = [r[col] for r in used if r.get(col) is not None]
        setattr(cell, col, max(v) if v else None)
    if len(vals) == 1:
        only = vals[0]
        cell.ci_low, cell.ci_high, cell.std = only.get("ci_low"), only.get("ci_high"), \
            only.get("std")
    cell.launch_medians = [float(r["median"] if r.get("median") is not None else r["mean"])
                           for r in vals]
    # each imported file (or application run) is a launch, with the tool's own statistic
    own = cell.shown_statistic
    cell.launch_ids = [r["run_id"] for r in vals]
    cell.launch_rounds = [r.get("round") for r in vals]
    cell.launch_values = [float(r["median"]) if own == "median" and r.get("median")
                          is not None else float(r["mean"] if r.get("mean") is not None
                                                 else r["median"]) for r in vals]


def _finish(cell: ResultCell, used: list[dict], summary: dict[str, Any] | None) -> None:
    """Set the pooled samples' summary (None: stored summaries, already set) and the
    bandwidths, which follow the statistic shown."""
    if summary is not None:
        cell.__dict__.update(summary)      # SUMMARY_KEYS are ResultCell fields
        if len(used) > 1:
            # a pooled order-statistic CI mixes launches: it is no one's within-launch CI
            cell.ci_low = cell.ci_high = None
        elif cell.within_ci_pct is None:
            cell.within_ci_pct = stats.ci_percent(summary["median"], summary["ci_low"],
                                                  summary["ci_high"])
    if cell.launch_values:
        cell.estimate = est = launch_stats.estimate(cell.launch_values)
        cell.ci_low, cell.ci_high = est.ci_low, est.ci_high
    # Bandwidths: rescale the core's own figure to the value shown, so each benchmark's
    # byte-count convention (Exchange, Biband, collectives) is kept.
    shown = cell.value
    for col in ("bandwidth_mbps", "busbw_mbps", "msg_rate"):
        # bandwidth x the time it was computed from = the bytes moved, whatever statistic
        pairs = [(r[col], r["median"] if r.get("median") else r.get("mean")) for r in used
                 if r.get(col) is not None]
        pairs = [(b, t) for b, t in pairs if t]
        if pairs and shown:
            if cell.metric == "time":
                setattr(cell, col, float(np.median([b * t / shown for b, t in pairs])))
            else:
                setattr(cell, col, float(np.median([b for b, _ in pairs])))


def fmt_params(params: Mapping[str, Any] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted((params or {}).items()))


def _extra_of(r: Mapping[str, Any]) -> dict:
    """A result row's extra fields: extra_json (the store's text) or a parsed row's extra."""
    extra = r.get("extra_json")
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return {}
    return extra if isinstance(extra, dict) else r.get("extra") or {}


def preempted_of(rows: Iterable[Mapping[str, Any]],
                 extras: Iterable[dict] | None = None) -> Preempted:
    """The core's preempted-sample counts over these result rows (extra "preempted"), split
    by what each launch did with them (extra "preempted_excluded"), and the launches that
    carry no count (a core before the flag, or null: no RUSAGE_THREAD). extras: the rows'
    extra fields already parsed (_extra_of), else parsed here."""
    excluded = kept = unknown = 0
    for extra in (map(_extra_of, rows) if extras is None else extras):
        n = extra.get("preempted")
        if not (isinstance(n, int) and not isinstance(n, bool) and n >= 0):
            unknown += 1
        elif extra.get("preempted_excluded") is True:
            excluded += n
        else:
            kept += n
    return Preempted(excluded, kept, unknown)


def preempted_note(p: Preempted | None) -> str:
    """'4 preempted excluded, 12 kept; 2 launches without the flag' for the stop column ('' when
    nothing was flagged and every launch had the flag)."""
    if p is None:
        return ""
    parts = [f"{p.excluded} preempted excluded"] if p.excluded else []
    if p.kept:
        parts.append(f"{p.kept} kept" if parts else f"{p.kept} preempted kept")
    text = ", ".join(parts)
    if p.unknown and (p.excluded or p.kept):
        text += f"; {p.unknown} launch{'es' if p.unknown > 1 else ''} without the flag"
    return text


def _stop_with_stationarity(row: dict, extra: dict | None = None) -> str:
    """The core's stop reason, with its stationarity check's finding when the launch's
    series moved ('max_time, drift') or the check had not settled when the budget ended
    ('max_time, unsettled'): its within-launch CI is then approximate. extra: the row's
    extra fields already parsed (_extra_of); else its extra_json is parsed here."""
    stop = row["stop_reason"]
    if extra is None:
        text = row.get("extra_json")
        if not (text and "stationarity" in text):
            return stop
        extra = _extra_of(row)
    stat = extra.get("stationarity")
    if stat in ("level_shift", "drift", "unsettled") and stat != stop:
        return f"{stop}, {stat.replace('_', ' ')}"
    return stop


def fmt_num(v: float | None, digits: int = 4) -> str:
    """Four significant digits, no exponent for the ranges benchmarks produce (plain Python
    on these scalars: tables format 10^5 numbers and numpy's scalar calls cost ~1 us each).
    Exactly `digits` significant digits also next to powers of ten, where the value rounds
    up (0.009999999999999998 -> 0.01000, not 0.010000)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 10 ** digits:
        return f"{v:.0f}"
    if a < 1e-3:
        return f"{v:.{digits - 1}e}"
    # the decimal exponent of the value rounded to `digits` significant digits, from
    # Python's own correctly rounded formatting: floor(log10(a)) depends on the platform's
    # libm next to powers of ten (999.9999999999999 -> 3.0 on some) and ignores rounding up
    e = int(f"{a:.{digits - 1}e}".rpartition("e")[2])
    decimals = max(0, digits - 1 - e)
    return f"{v:.{decimals}f}"


def cell_label(cell_or_key: ResultCell | tuple) -> str:
    """Size for message-size cells, 'k=v ...' for application cells, np appended if set."""
    if isinstance(cell_or_key, tuple):
        key = CellKey(*cell_or_key)
        size, params = key.size, key.params
    else:                      # a ResultCell, or anything with size and params (a compare Row)
        size, params = cell_or_key.size, cell_or_key.params
    parts = []
    if size is not None:
        parts.append(fmt_size(size))
    if params:
        parts.append(fmt_params(params))
    return " ".join(parts) if parts else "-"


def imported_statistics(cells: Iterable[ResultCell]) -> list[str]:
    """The statistics of rows shown without samples (imported tables: IMB t[usec]/t_avg,
    OSU/nccl-tests averages, NetPIPE min), sorted; empty when every value is a median."""
    return sorted({c.shown_statistic for c in cells
                   if c.no_samples and c.status == "ok" and c.shown_statistic != "median"})


def tool_statistic(statistics: list[str]) -> str:
    """"the tool's own mean" (or "... mean or min") for imported_statistics' list."""
    return "the tool's own " + " or ".join(statistics)


def imported_clause_for(statistics: list[str]) -> str:
    """imported_clause from imported_statistics' list."""
    if not statistics:
        return ""
    return (f"imported rows: {tool_statistic(statistics)}, no samples (each file one launch; "
            "compared only with the same statistic)")


def imported_clause(cells: Iterable[ResultCell]) -> str:
    """'' when every value is a median, else e.g. "imported rows: the tool's own mean, no
    samples, untested" - appended to captions that describe the median."""
    return imported_clause_for(imported_statistics(cells))


def statistic_legend(cells: Iterable[ResultCell], what: str = "value", unit: str | None = None,
                     *, median: str | None = None) -> str:
    """What a value column holds, for captions: 'time = median (us)', or when imported rows
    are present, which statistic those are and that they were never tested, e.g.
    'time = median (us); imported rows: the tool's own mean, no samples, untested'.
    median: the words for the median values instead of '<what> = median (<unit>)'."""
    cells = list(cells)
    imported = imported_statistics(cells)
    u = f" ({unit})" if unit else ""
    if imported and all(c.no_samples and c.shown_statistic != "median" for c in cells
                        if c.status == "ok"):
        return (f"{what} = {tool_statistic(imported)}{u}, geometric mean over the imported "
                "files (each file one launch); imported rows: no samples")
    stat = next((c.requested for c in cells if not c.no_samples), "median")
    shown = median or (f"{what} = geometric mean of launch {stat}s{u}, each launch weighted "
                       "equally")
    return f"{shown}; {imported_clause_for(imported)}" if imported else shown
