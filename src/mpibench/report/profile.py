"""The report's profile section (SECTIONS entry "profile"): per set and np the top MPI
functions and the message-size shares of its profiled launches, side by side, and the
launch-level diff of each set against the first. The profiles themselves (buckets, diffs)
are mpibench.profile's (buckets.py, diff.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mpibench.profile.buckets import COARSE_EDGES, bucket_headline, size_buckets
from mpibench.profile.diff import (
    MAX_REPORT_DIFFS,
    ProfileLaunch,
    _launch,
    _num,
    _pct,
    diff_launches,
    diff_tables,
    fingerprint_note,
)
from mpibench.store import queries


def report_tables(store, sets: Mapping[str, Iterable[str]], *, top: int = 10,
                  edges: tuple[int, ...] | None = COARSE_EDGES) -> list[Any]:
    """The profile section of a report: for every set and np with profiled launches, the top
    functions and the size-bucket shares (means over its launches, each launch weighted
    equally), side by side; with two or more sets at the same np, the diff of each against
    the first. [] when no selected run has a profile."""
    found: list[tuple[str, ProfileLaunch]] = []
    for g, ids in sets.items():
        for row in queries.profile_launches_of(store, list(ids)):
            x = _launch(row)
            if x.status == "done" and x.doc.get("complete"):
                found.append((g, x))
    if not found:
        return []
    cols, order, names = _columns(store, sets, found)
    col_name = dict(zip(order, names, strict=True))
    return (_top_table(cols, order, names, top) + _sizes_table(cols, order, names, edges)
            + _diffs(store, cols, order, col_name, edges, top))


def _columns(store, sets: Mapping[str, Iterable[str]], found: list) -> tuple[dict, list, list]:
    """The launches by column: one column per set, np and, where a selected variant sweeps
    nodes or ppn, placement (the cells compare and the report's tables pair,
    data.with_placement); the columns in order and their names."""
    from mpibench.report.data import (
        PLACEMENT_AXES,
        run_placements,
        sweep_params,
        with_placement,
    )

    axes = [a for a in PLACEMENT_AXES if any(a in sweep_params(x.variant)[1] for _, x in found)]
    placed = run_placements(store, [x.run_id for _, x in found]) if axes else {}
    cols: dict[tuple[str, int, tuple], list[ProfileLaunch]] = {}
    for g, x in found:
        p = with_placement(sweep_params(x.variant)[1], axes, placed.get(x.run_id, {}))
        cols.setdefault((g, x.np, tuple((a, p.get(a)) for a in axes)), []).append(x)
    order = sorted(cols, key=lambda k: (list(sets).index(k[0]), k[1],
                                        [v if v is not None else -1 for _, v in k[2]]))
    names = [f"{g} np={n}" + "".join(f" {a}={v}" for a, v in pl if v is not None)
             for g, n, pl in order]
    return cols, order, names


def _top_table(cols: dict, order: list, names: list[str], top: int) -> list[Any]:
    """The top functions by mean share of MPI time, the MPI fraction first."""
    from mpibench.report.render import Table

    share: dict[str, dict[tuple[str, int], float]] = {}
    calls: dict[str, dict[tuple[str, int], float]] = {}
    mpi_frac = {}
    for k in order:
        ls_ = cols[k]
        mpi_frac[k] = sum(x.doc["mpi_fraction"]["mean"] for x in ls_) / len(ls_)
        for x in ls_:
            total = x.doc["mpi_time_s"]["total"] or 1e-30
            for name, f in x.doc["functions"].items():
                share.setdefault(name, {}).setdefault(k, 0.0)
                share[name][k] += f["time_s"] / total / len(ls_)
                calls.setdefault(name, {}).setdefault(k, 0.0)
                calls[name][k] += f["calls"] / len(ls_)
    best = sorted(share, key=lambda n: -max(share[n].values()))[:top]
    rows = [["MPI % of wall time", *(_pct(mpi_frac[k]) for k in order)]]
    recs = [{"function": "MPI % of wall time",
             **{nm: mpi_frac[k] for nm, k in zip(names, order, strict=True)}}]
    for name in best:
        rows.append([name, *(f"{100 * share[name].get(k, 0.0):.1f} ({_num(calls[name].get(k, 0.0))})"
                             for k in order)])
        recs.append({"function": name, **{f"{nm} share_of_mpi": share[name].get(k, 0.0)
                                          for nm, k in zip(names, order, strict=True)},
                     **{f"{nm} calls": calls[name].get(k, 0.0)
                        for nm, k in zip(names, order, strict=True)}})
    launches = ", ".join(f"{nm}: {len(cols[k])}" for nm, k in zip(names, order, strict=True))
    tables = [Table(title=f"Top {len(best)} MPI functions by share of MPI time",
                    header=["function", *names], rows=rows, records=recs, kind="profile-top",
                    caption="% of the launch's MPI time (calls per launch in brackets), mean "
                            f"over launches, each weighted equally; launches: {launches}")]
    return tables


def _sizes_table(cols: dict, order: list, names: list[str],
                 edges: tuple[int, ...] | None) -> list[Any]:
    """Messages by size bucket: the mean shares of messages and bytes per column."""
    from mpibench.report.render import Table

    per = {k: [size_buckets(x.doc, edges) for x in cols[k]] for k in order}
    exact = all(b["bytes_exact"] for bs in per.values() for b in bs)
    keys: list[tuple[int, Any, str]] = []
    for bs in per.values():
        for b in bs:
            for r in b["buckets"]:
                if (r["lo"], r["hi"], r["bucket"]) not in keys:
                    keys.append((r["lo"], r["hi"], r["bucket"]))
    keys.sort(key=lambda t: t[0])

    def mean_share(k, lo, what):
        vals = [next((r[what] for r in b["buckets"] if r["lo"] == lo), 0.0) for b in per[k]]
        return sum(vals) / len(vals)

    used = [t for t in keys if any(mean_share(k, t[0], "message_share") for k in order)]
    rows, recs = [], []
    for lo, hi, label in used:
        cells = []
        rec = {"bucket": label, "lo": lo, "hi": hi}
        for nm, k in zip(names, order, strict=True):
            m, b = mean_share(k, lo, "message_share"), mean_share(k, lo, "byte_share")
            cells.append(f"{100 * m:.1f} / {100 * b:.1f}")
            rec[f"{nm} message_share"], rec[f"{nm} byte_share"] = m, b
        rows.append([label, *cells])
        recs.append(rec)
    heads = [bucket_headline(size_buckets(cols[k][0].doc, edges)) if len(cols[k]) == 1 else
             _mean_headline(rec_rows=recs, name=nm) for nm, k in zip(names, order, strict=True)]
    return [Table(
        title="Messages by size: % of messages / % of bytes (all functions that move data)",
        header=["size", *names], rows=rows, records=recs, kind="profile-sizes",
        caption="per call on each rank, summed over ranks; mean over launches; "
                + "; ".join(f"{nm}: {h}" for nm, h in zip(names, heads, strict=True)),
        notes=[] if exact else ["bytes estimated from the log2 bins (profiles that predate "
                                "per-bin byte counts)"])]


def _diffs(store, cols: dict, order: list, col_name: dict, edges: tuple[int, ...] | None,
           top: int) -> list[Any]:
    """The diff of each column against the first set's at the same np and placement."""
    tables: list[Any] = []
    by_np: dict[tuple, list[tuple[str, int, tuple]]] = {}
    for k in order:
        by_np.setdefault(k[1:], []).append(k)
    pairs = [(ks[0], k) for ks in by_np.values() for k in ks[1:]]
    for base, k in pairs[:MAX_REPORT_DIFFS]:
        notes = [fingerprint_note(store, cols[base], col_name[base]),
                 fingerprint_note(store, cols[k], col_name[k])]
        d = diff_launches(cols[base], cols[k], edges=edges, top=top, notes=notes)
        tables += diff_tables(d, col_name[base], col_name[k])
    if len(pairs) > MAX_REPORT_DIFFS:
        tables[-1].notes.append(
            f"{len(pairs) - MAX_REPORT_DIFFS} more profile diffs left out of the report to keep "
            "it readable; each: mpibench profile --compare A B")
    return tables


def _mean_headline(rec_rows: list[dict], name: str) -> str:
    if not rec_rows:
        return "no messages"
    m = max(rec_rows, key=lambda r: r[f"{name} message_share"])
    b = max(rec_rows, key=lambda r: r[f"{name} byte_share"])
    return (f"most messages are {m['bucket']} ({100 * m[f'{name} message_share']:.0f}%), "
            f"most bytes {b['bucket']} ({100 * b[f'{name} byte_share']:.0f}%)")
