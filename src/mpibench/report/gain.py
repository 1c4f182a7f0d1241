"""Gain table: one row per benchmark (and np, and other cell parameters when they vary) at
one message size, each side's time and MB/s and the gain against the baseline, from a
Comparison so its significance comes with it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from mpibench.report.data import (
    bench_sort_key,
    fmt_num,
    fmt_params,
    fmt_size,
    params_sort_key,
    statistic_legend,
)
from mpibench.report.model import Comparison, Row, fmt_gain_ci
from mpibench.report.render import Table
from mpibench.stats import launch as launch_stats


def gain_table(cmp: Comparison, size: int | None = None,
               measured: Mapping[tuple, Any] | None = None) -> Table:
    """One row per benchmark (and np, and other cell parameters when they vary): each side's
    time (and MB/s where it applies) at `size` and the gain against the baseline.

    Default size: the largest size at which every set that ran the benchmark has an ok
    result (a set that never ran it shows '-', it does not veto the others).
    `measured`: the cells before a --size filter (load_cells keys), so a benchmark the
    filter removed entirely (Barrier has size 0 only) still gets its note."""
    by_bench: dict[tuple, list] = defaultdict(list)
    for r in cmp.rows:
        # profile:sizes rows count messages per size bin: not a time at a message size
        if r.key.at_message_size:
            by_bench[(r.title, r.metric, r.np, fmt_params(r.params))].append(r)
    cands = cmp.candidates
    show_np = len({k[2] for k in by_bench}) > 1
    show_params = any(k[3] for k in by_bench)
    hdr = ["benchmark"] + (["np"] if show_np else []) + (["cell"] if show_params else [])
    hdr += ["size"]
    for g in cmp.sets:
        hdr += [f"{g} time (us)", f"{g} MB/s"]
    hdr += [f"gain {c}" if len(cands) > 1 else "gain" for c in cands]
    legend = statistic_legend((c for rs in by_bench.values() for r in rs
                               for c in r.cells.values()), "time", "us")
    t = Table(title=f"Gain table vs {cmp.baseline}"
              + (f" at {fmt_size(size)} bytes" if size is not None else
                 " at the largest common size"),
              header=hdr, rows=[], kind="gain",
              caption=f"{legend}; MB/s = 10^6 bytes/s from that time; "
                      "gain > 1 = candidate better (baseline time / candidate time) [95% CI "
                      "from the spread between launches, not Holm-adjusted]; ~ = not "
                      "significant in the comparison table (its test and its Holm family, "
                      f"alpha {cmp.alpha:g}); cannot tell = fewer than "
                      f"{launch_stats.MIN_LAUNCHES} launches on a side",
              notes=list(cmp.warning_lines))

    def key(kv):
        (bench, metric, np_, params), _ = kv
        return (bench_sort_key(bench), metric, -1 if np_ is None else np_,
                params_sort_key(rows_params[params]))

    rows_params = {k[3]: rs[0].params for k, rs in by_bench.items()}
    missing: list[str] = []
    for (bench, metric, np_, params), rows in sorted(by_bench.items(), key=key):
        lead = [bench] + ([str(np_) if np_ is not None else ""] if show_np else []) + \
            ([params] if show_params else [])
        where = " ".join(x for x in (bench, f"np={np_}" if show_np else "", params) if x)
        present = [g for g in cmp.sets if any(g in r.cells for r in rows)]
        ok = [r for r in rows if all(g in r.cells and r.cells[g].status == "ok"
                                     for g in present)]
        if size is None:
            pick = max(ok, key=lambda r: r.size) if ok and cmp.baseline in present else None
        else:
            pick = next((r for r in rows if r.size == size), None)
        if pick is None:
            if size is not None:
                # said, not silently dropped: a Barrier has no 4 MiB row
                have = sorted({r.size for r in rows})
                missing.append(f"{where}: not measured at {fmt_size(size)} bytes (its sizes: "
                               + ", ".join(fmt_size(s) for s in have[:8])
                               + (" ..." if len(have) > 8 else "") + ")")
                continue
            t.rows.append(lead + ["-"] + ["-"] * (2 * len(cmp.sets) + len(cands)))
            t.notes.append(f"{where}: no size with an ok result in the baseline and every "
                           "set that ran it")
            continue
        rec: dict[str, Any] = {"benchmark": bench, "np": np_, "params": pick.params,
                               "size": pick.size, "metric": metric}
        line = (lead + [fmt_size(pick.size)] + _side_cells(pick, cmp.sets, rec)
                + _gain_cells(pick, cands, rec))
        t.rows.append(line)
        t.records.append(rec)
    if size is not None and measured is not None:
        missing += _filtered_out(measured, {k[0] for k in by_bench}, size)
    if size is not None and not t.rows:
        t.notes.append(f"no benchmark has results at {fmt_size(size)} bytes")
    else:
        t.notes.extend(missing)
    return t


def _side_cells(pick: Row, sets: list[str], rec: dict[str, Any]) -> list[str]:
    """Each set's time and MB/s at the picked row (and into the record)."""
    line: list[str] = []
    for g in sets:
        c = pick.cells.get(g)
        v = c.value if c and c.status == "ok" else None
        bw = c.bandwidth_mbps if c and c.status == "ok" else None
        shown = fmt_num(v) if c is None or c.status == "ok" else c.status
        if c is not None and c.status == "ok" and c.no_samples:
            shown += f" ({c.shown_statistic})"      # an imported row: not a median
        line += [shown, fmt_num(bw) if bw is not None else ""]
        rec[f"{g}_time_us"] = v
        rec[f"{g}_statistic"] = c.shown_statistic if c is not None else None
        rec[f"{g}_mbps"] = bw
    return line


def _gain_cells(pick: Row, cands: list[str], rec: dict[str, Any]) -> list[str]:
    """Each candidate's gain with its CI, ~ when not significant (and into the record)."""
    line: list[str] = []
    for cand in cands:
        d = pick.deltas[cand]
        g = fmt_gain_ci(d.gain, d.ci_low, d.ci_high, 2)
        if d.gain is None:
            line.append("-")
        elif d.tested and not d.significant:
            line.append(f"~ {g}")
        elif not d.tested:
            line.append(f"{g} (cannot tell, n={d.n_base}+{d.n_cand})")
        else:
            line.append(g)
        rec[f"gain_{cand}"] = d.gain
        rec[f"gain_ci_{cand}"] = [d.ci_low, d.ci_high]
        rec[f"launches_{cand}"] = [d.n_base, d.n_cand]
        rec[f"significant_{cand}"] = d.significant
        rec[f"p_holm_{cand}"] = d.p_adj
    return line


def _filtered_out(measured: Mapping[tuple, Any], seen: set[str], size: int) -> list[str]:
    """A note per benchmark the --size filter removed entirely (Barrier has size 0 only)."""
    gone: dict[str, set[int]] = defaultdict(set)
    for k in measured:
        if k.at_message_size and k.title not in seen:
            gone[k.title].add(k.size)
    out = []
    for bench in sorted(gone, key=bench_sort_key):
        sizes_ = sorted(gone[bench])
        out.append(f"{bench}: not measured at {fmt_size(size)} bytes (its sizes: "
                   + ", ".join(fmt_size(s) for s in sizes_[:8])
                   + (" ..." if len(sizes_) > 8 else "") + ")")
    return out
