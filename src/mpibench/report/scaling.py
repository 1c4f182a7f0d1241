"""Speedup and parallel efficiency against the smallest np or node count, per variant and
series; only between comparable cells (report/rules.py) and only for times and rates.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from mpibench.report.data import (
    ResultCell,
    bench_sort_key,
    fmt_num,
    fmt_params,
    fmt_size,
    load_cells,
)
from mpibench.report.model import fmt_gain_ci, orient_gain
from mpibench.report.render import Table
from mpibench.report.rules import comparable, why_not_comparable
from mpibench.stats import launch as launch_stats
from mpibench.store import Store


def scaling_table(store: Store, sets: Mapping[str, list[str]], *, by: str | None = None,
                  metric: str | None = None, cells: dict | None = None,
                  include_sizes: bool = False) -> Table:
    """Speedup and parallel efficiency against the smallest count of `by` ('nodes' when cells
    have that parameter, else 'np'), per variant and per series (benchmark, metric, size and
    the other parameters). Time-like metrics: speedup = t0/t; rates: r/r0.
    Message-size benchmarks are left out unless include_sizes: the latency of one collective
    call at a fixed message size is not a strong-scaling problem, and its "speedup" would
    mislead. include_sizes=None: message-size cells only when the selection has no
    application cells (an explicit `--scaling` on a core campaign), with a caption saying
    what such a "speedup" means."""
    cells = cells if cells is not None else load_cells(store, sets, with_samples=False)
    if include_sizes is None:
        include_sizes = all(k[1] is not None for k in cells)
    series = _series(cells, by, metric, include_sizes)
    t = Table(title="Scaling", kind="scaling", rows=[],
              header=["variant", "benchmark", "series", "count", "value", "speedup",
                      "efficiency"],
              caption="value = geometric mean of the launch statistics ± 95% CI between "
                      "launches; speedup against the smallest count of the series (time: "
                      "t0/t, rates: r/r0) [95% CI, Welch on log launch statistics]; "
                      "efficiency = speedup / (count / smallest count)"
                      + ("; message-size benchmarks: t0/t of one call at a fixed size, i.e. "
                         "how its cost grows with the count (not strong scaling: the work per "
                         "rank does not shrink)" if include_sizes else ""))
    for skey in sorted(series, key=lambda k: (bench_sort_key(k[1]), k[2], str(k[3]), k[5],
                                              k[6] or 0, k[0])):
        if len(series[skey]) >= 2:
            _add_series(t, skey, series[skey])
    if not t.rows:
        what = by or "np or nodes"
        t.notes.append(f"no series varies {what} within a set (scaling needs the same cell "
                       f"at two or more counts of {what}"
                       + ("" if include_sizes else "; message-size benchmarks are left out "
                          "when the selection has application cells") + ")")
    return t


def _speedup(c0: ResultCell, c: ResultCell) -> tuple[float | None, launch_stats.LaunchTest | None]:
    """(speedup of c against the series' first cell c0, the launch-level test): None when
    the two may not be compared (rules.why_not_comparable: a median never against an
    imported mean, a failed cell never)."""
    if not comparable(c0, c):
        return None, None
    lt = launch_stats.compare(c0.launch_values, c.launch_values, c.better)
    if lt.gain is not None:
        return lt.gain, lt
    return orient_gain(c0.value, c.value, c.better), lt


def _series(cells: dict, by: str | None, metric: str | None, include_sizes: bool
            ) -> dict[tuple, dict[Any, ResultCell]]:
    """(set, benchmark, metric, size, by, other params, ranks per count) -> count -> cell,
    of the ok cells the scaling table may use."""
    series: dict[tuple, dict[Any, ResultCell]] = defaultdict(dict)
    chosen_by = by
    for by_set in cells.values():
        for g, c in by_set.items():
            if c.status != "ok" or c.value is None:
                continue
            if c.size is not None and not include_sizes:
                continue
            if metric is not None and c.metric != metric:
                continue
            b = chosen_by or ("nodes" if "nodes" in c.params else "np")
            count = c.np if b == "np" else c.params.get(b)
            if count is None:
                continue
            other = {k: v for k, v in c.params.items() if k != b}
            # scaling over nodes keeps the ranks per node: np grows with the nodes, and
            # cells at one node count but different np belong to different series
            per = (c.np / float(count) if b != "np" and c.np is not None and count
                   else None)
            skey = (g, c.key.title, c.metric, c.size, b,
                    json.dumps(other, sort_keys=True, default=str), per)
            series[skey][count] = c
    return series


def _add_series(t: Table, skey: tuple, pts: dict[Any, ResultCell]) -> None:
    """One series' rows and records: each count's value, speedup and efficiency against
    the smallest count."""
    g, bench, m, size, b, other, per = skey
    counts = sorted(pts, key=float)
    c0 = counts[0]
    desc = " ".join(x for x in (m, fmt_size(size) if size is not None else "",
                                fmt_params(json.loads(other)),
                                f"ranks/{b}={per:g}" if per is not None else "") if x)
    kind = pts[c0].kind
    if not kind.scales:
        # a call count or an MPI fraction at more ranks is not a speedup
        note = (f"{g} {bench} {m}: a {kind} figure: values only, no speedup or "
                "efficiency")
        if note not in t.notes:
            t.notes.append(note)
    for cnt in counts:
        v = pts[cnt].value
        speed, lt = _speedup(pts[c0], pts[cnt]) if cnt != c0 else (1.0, None)
        if cnt != c0 and speed is None and kind.scales:
            why = why_not_comparable(pts[c0], pts[cnt])
            if why:
                t.notes.append(f"{g} {bench} {desc}: {b}={cnt} against {b}={c0}: "
                               f"no speedup ({why})")
        if not kind.scales:
            speed = lt = None
        eff = speed / (float(cnt) / float(c0)) if speed else None
        pct = pts[cnt].ci_pct
        t.rows.append([g, bench, desc, f"{b}={cnt}",
                       fmt_num(v) + (" ± ?" if pct is None else f" ± {pct:.1f}%"),
                       "" if speed is None else (
                           fmt_gain_ci(speed, lt.ci_low, lt.ci_high, 2) if lt
                           else f"{speed:.2f}x"),
                       "" if eff is None else f"{100 * eff:.0f}%"])
        t.records.append({"variant": g, "benchmark": bench, "metric": m, "size": size,
                          "by": b, "count": cnt, "params": json.loads(other),
                          "ranks_per_count": per, "np": pts[cnt].np,
                          "value": v, "ci_low": pts[cnt].ci_low,
                          "ci_high": pts[cnt].ci_high, "launches": pts[cnt].launches,
                          "speedup": speed,
                          "speedup_ci": [lt.ci_low, lt.ci_high] if lt else None,
                          "efficiency": eff})
