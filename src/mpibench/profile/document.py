"""The profile document (schema: docs/profiler.md): collected from what the ranks wrote,
merged here when a run was cut short, stored as a run of the campaign "profiles", loaded
back, and printed.

    doc = collect_profile(out_dir)               # merged document
    run_id = store_profile(store, run)           # a ProfileRun from mpibench.profile.run

The C library (profiler/) merges at MPI_Finalize and writes profile.json; when a run was cut
short (MPI_Abort, a signal) only per-rank files exist and collect_profile() merges them here
with the same schema, marked "complete": false.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpibench.errors import BenchmarkFailure, UsageError
from mpibench.units import fmt_bytes, fmt_pow2, fmt_seconds

if TYPE_CHECKING:  # a type only: the run imports this module for RANK_FILE
    from mpibench.profile.run import ProfileRun

SCHEMA = "mpibench-profile"
RANK_SCHEMA = "mpibench-profile-rank"
SCHEMA_VERSION = 1
CAMPAIGN = "profiles"
RANK_FILE = re.compile(r"^rank-(\d+)\.json$")


# ---- collect and merge -----------------------------------------------------------------
def _check_schema(doc: Any, path: Path, schema: str) -> dict:
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise UsageError(f"{path}: not a {schema} document")
    v = doc.get("version")
    if not isinstance(v, int) or v > SCHEMA_VERSION:
        raise UsageError(f"{path}: {schema} version {v!r} is newer than this mpibench "
                         f"understands ({SCHEMA_VERSION})")
    return doc


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise UsageError(f"{path}: invalid JSON ({exc})") from exc


def collect_profile(out_dir: str | os.PathLike) -> dict[str, Any]:
    """The merged profile of a run: profile.json if the library wrote it (normal end), else
    the per-rank files merged here ("complete": false) after an abort or a signal."""
    out = Path(out_dir)
    merged = out / "profile.json"
    if merged.exists():
        return _check_schema(_load(merged), merged, SCHEMA)
    ranks = []
    for p in sorted(out.glob("rank-*.json")):
        if RANK_FILE.match(p.name):
            ranks.append(_check_schema(_load(p), p, RANK_SCHEMA))
    if not ranks:
        raise BenchmarkFailure(f"no profile in {out}: no profile.json and no rank-*.json (was "
                               "the program an MPI program linked against this stack, and did "
                               "it reach MPI_Init?)")
    return merge_rank_docs(ranks)


def _stats(values: Sequence[float], total: bool = False) -> dict[str, float]:
    vals = list(values) or [0.0]
    d = {"min": min(vals), "mean": sum(vals) / len(vals), "max": max(vals)}
    if total:
        d = {"total": sum(vals), **d}
    return d


def merge_rank_docs(ranks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge per-rank documents (schema mpibench-profile-rank) into the merged schema, the
    same computation the library does at MPI_Finalize."""
    ranks = sorted(ranks, key=lambda r: r["rank"])
    size = max(int(r.get("size") or 0) for r in ranks)
    present = [int(r["rank"]) for r in ranks]
    r0 = ranks[0]
    wall = [r["wall_ns"] * 1e-9 for r in ranks]
    mpi = [r["mpi_ns"] * 1e-9 for r in ranks]
    frac = [m / w if w > 0 else 0.0 for m, w in zip(mpi, wall, strict=True)]
    imin = min(range(len(ranks)), key=lambda i: mpi[i])
    imax = max(range(len(ranks)), key=lambda i: mpi[i])
    names: dict[str, str] = {}
    for r in ranks:
        for name, f in r["functions"].items():
            names.setdefault(name, f["class"])
    functions: dict[str, Any] = {}
    for name in sorted(names):
        per = [r["functions"].get(name) for r in ranks]
        got = [f for f in per if f]
        hist: dict[int, list] = {}
        # bins carry the bytes of their calls as a 4th element since the library started
        # counting them; a rank file without them makes the merged bins 3 elements long
        with_bytes = all(len(e) > 3 for f in got for e in f["hist"])
        for f in got:
            for e in f["hist"]:
                h = hist.setdefault(int(e[0]), [0, 0.0, 0])
                h[0] += int(e[1])
                h[1] += e[2] * 1e-9
                if with_bytes:
                    h[2] += int(e[3])
        times = [(f["time_ns"] * 1e-9 if f else 0.0) for f in per]
        calls = [(f["calls"] if f else 0) for f in per]
        ncalls = sum(calls)
        functions[name] = {
            "class": names[name], "calls": ncalls, "time_s": sum(times),
            "min_call_s": min(f["min_ns"] for f in got) * 1e-9,
            "max_call_s": max(f["max_ns"] for f in got) * 1e-9,
            "mean_call_s": sum(times) / ncalls if ncalls else 0.0,
            **{k: sum(f[k] for f in got) for k in
               ("bytes_sent", "bytes_recv", "bytes_recv_posted", "recv_unknown")},
            "ranks_calling": sum(1 for c in calls if c),
            "time_per_rank_s": _stats(times), "per_rank_time_s": times,
            "per_rank_calls": calls,
            "hist": [[lo, c, t, b] if with_bytes else [lo, c, t]
                     for lo, (c, t, b) in sorted(hist.items())],
        }
    ovh = [float(r.get("overhead_ns_per_call", 0)) for r in ranks]
    ovhb = [float(r.get("overhead_bytes_ns_per_call", 0)) for r in ranks]
    ovhc = [float(r.get("overhead_coll_ns_per_call", 0)) for r in ranks]
    est = [r["estimated_overhead_ns"] * 1e-9 if "estimated_overhead_ns" in r
           else r["calls"] * o * 1e-9 for r, o in zip(ranks, ovh, strict=True)]
    return {
        "schema": SCHEMA, "version": SCHEMA_VERSION,
        "complete": all(r.get("complete") for r in ranks) and len(ranks) == size,
        "reason": ",".join(sorted({str(r.get("reason")) for r in ranks})),
        "merged_by": "mpibench (per-rank files)",
        "ranks_missing": [i for i in range(size) if i not in present],
        "mpi_library": r0.get("mpi_library", ""),
        "header_mpi_version": r0.get("header_mpi_version", ""),
        "ranks": size, "thread_level": r0.get("thread_level"),
        "recv_tracking": r0.get("recv_tracking"),
        "timer": {"source": r0.get("timer"), "ns_per_tick": r0.get("ns_per_tick")},
        "calls_total": sum(r["calls"] for r in ranks),
        "overhead": {"ns_per_call": _stats(ovh), "ns_per_call_with_bytes": _stats(ovhb),
                     "ns_per_call_collective": _stats(ovhc), "estimated_total_s": sum(est)},
        "wall_s": _stats(wall), "mpi_time_s": _stats(mpi, total=True),
        "mpi_fraction": _stats(frac),
        "most_loaded_rank": {"rank": present[imin], "mpi_s": mpi[imin],
                             "mpi_fraction": frac[imin]},
        "least_loaded_rank": {"rank": present[imax], "mpi_s": mpi[imax],
                              "mpi_fraction": frac[imax]},
        "per_rank": [{"rank": r["rank"], "host": r.get("host", ""), "pid": r.get("pid"),
                      "wall_s": w, "mpi_s": m, "mpi_fraction": fr, "calls": r["calls"],
                      "threads": r.get("threads"), "init_s": r.get("init_ns", 0) * 1e-9,
                      "overhead_ns_per_call": o, "reason": r.get("reason")}
                     for r, w, m, fr, o in zip(ranks, wall, mpi, frac, ovh, strict=True)],
        "functions": functions,
    }


# ---- store -----------------------------------------------------------------------------
def profile_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Result rows, so that profiles compare across np, nodes and variants like any other
    metric (mpibench compare / report / scaling, the pandas API):

    - "profile:MPI": mpi_time (us), mpi_fraction (ratio), calls;
    - "profile:<function>": mpi_time (us) and calls;
      samples: one per rank (that rank's sum over its calls, statistic "sum"), so a launch's
      statistic is the median (or mean) over its ranks;
    - "profile:sizes", size = lower bound of a log2 bin [size, 2 size) of the functions that
      move data (buckets.is_message_function): messages, bytes, message_share,
      byte_share; one sample (the launch's total over its ranks)."""
    from mpibench import stats
    from mpibench.profile.buckets import size_buckets

    n = int(doc.get("ranks") or 0)
    rows = []

    def row(bench: str, samples: list[float], metric: str, unit: str, extra: dict) -> dict:
        return {"benchmark": bench, "np": n, "metric": metric, "unit": unit, "better": "lower",
                "statistic": "sum", **stats.summarize(samples), "samples": samples,
                "extra": extra}

    per_rank = doc.get("per_rank") or []
    rows.append(row("profile:MPI", [r["mpi_s"] * 1e6 for r in per_rank], "mpi_time", "us",
                    {"total_us": doc["mpi_time_s"]["total"] * 1e6,
                     "calls": doc.get("calls_total")}))
    rows.append(row("profile:MPI", [r["mpi_fraction"] for r in per_rank], "mpi_fraction",
                    "ratio", {"wall_s": doc.get("wall_s")}))
    rows.append(row("profile:MPI", [float(r["calls"]) for r in per_rank], "calls", "calls",
                    {"total": doc.get("calls_total")}))
    for name, f in doc.get("functions", {}).items():
        rows.append(row(f"profile:{name}", [float(c) for c in f["per_rank_calls"]], "calls",
                        "calls", {"class": f["class"], "total": f["calls"]}))
        rows.append(row(f"profile:{name}", [t * 1e6 for t in f["per_rank_time_s"]],
                        "mpi_time", "us",
                        {"class": f["class"], "calls": f["calls"], "total_us": f["time_s"] * 1e6,
                         "bytes_sent": f["bytes_sent"], "bytes_recv": f["bytes_recv"],
                         "bytes_recv_posted": f["bytes_recv_posted"],
                         "recv_unknown": f["recv_unknown"], "hist": f["hist"],
                         "per_rank_calls": f["per_rank_calls"]}))
    sizes = size_buckets(doc, None)
    for b in sizes["buckets"]:
        for metric, unit in (("messages", "calls"), ("bytes", "B"), ("message_share", "ratio"),
                             ("byte_share", "ratio")):
            r = row("profile:sizes", [float(b[metric])], metric, unit,
                    {"bucket": b["bucket"], "top_function": b["top_function"],
                     "bytes_exact": sizes["bytes_exact"]})
            r["size"] = b["lo"]
            rows.append(r)
    return rows


def new_run_id() -> str:
    return f"profile-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def store_profile(store, run: ProfileRun, *, label: str | None = None,
                  run_id: str | None = None) -> str:
    """Record a profiled run: campaign "profiles", the profile document, per-function rows."""
    from mpibench import fingerprint

    run_id = run_id or new_run_id()
    stack_d = run.stack.to_dict() if hasattr(run.stack, "to_dict") else {}
    fp = fingerprint.collect(stack=stack_d, launcher_argv=run.argv,
                             env={**os.environ, **run.env},
                             extra={"profiler": True})
    finished = time.time()
    with store.transaction():
        cid = store.add_campaign(CAMPAIGN)
        fid = store.add_fingerprint(fp)
        store.create_run(run_id, cid, label or run.stack.name, source="profile", label=label,
                         argv_json=run.launched, run_dir=str(run.out_dir), fingerprint_id=fid,
                         started=finished - run.result.elapsed, params={"np": run.doc and
                                                                         run.doc.get("ranks")})
        if run.doc:
            store.set_profile(run_id, run.doc)
            store.add_results(run_id, profile_rows(run.doc))
        reason = None
        if run.status != "done":
            why = "timed out" if run.result.timed_out else f"exit {run.result.returncode}"
            part = (f"; partial profile ({run.doc.get('reason')})" if run.doc
                    else f"; {run.error}")
            reason = why + part
        store.set_run(run_id, run.status, exit_code=run.result.returncode, finished=finished,
                      elapsed=run.result.elapsed, reason=reason,
                      stderr_tail=run.result.stderr_tail())
    return run_id


def load_profile(store, run_id: str) -> dict[str, Any]:
    """A stored profile by run id, or the latest profile of a variant/label of that name."""
    from mpibench.store.queries import profile_document, recent_profiles

    doc = profile_document(store, run_id)
    if doc is None:
        raise UsageError(f"{run_id!r}: no profile run or label in {store.path}; recent: "
                         f"{', '.join(recent_profiles(store)) or 'none'}")
    return json.loads(doc)


# ---- report ----------------------------------------------------------------------------
def bin_label(lo: int) -> str:
    """Histogram bin [lo, 2*lo) bytes, lo a power of two; bin 0 is exactly 0 bytes."""
    if lo == 0:
        return "0 B"
    if lo == 1:
        return "1 B"
    return f"{fmt_pow2(lo)} - <{fmt_pow2(2 * lo)}"


_COARSE = object()  # the default bucket edges (buckets.COARSE_EDGES)


def render_report(doc: Mapping[str, Any], console=None, *, top: int = 10,
                  max_ranks: int = 32, buckets: Any = _COARSE) -> None:
    """Human report: time in MPI overall and per rank, top functions by time and by calls,
    message sizes per function and over all functions (buckets: edges from
    buckets.parse_buckets; None = log2 bins), the profiler's own overhead."""
    from mpibench.profile.buckets import COARSE_EDGES, render_buckets
    from mpibench.termsafe import SafeConsole

    con = console or SafeConsole()
    funcs = doc.get("functions", {})
    total = doc["mpi_time_s"]["total"] or 1e-30
    _print_headline(con, doc)
    con.print(_rank_table(doc.get("per_rank", []), max_ranks))
    con.print(_family_table(funcs, total))
    con.print(_function_table(f"Top {top} functions by time", funcs, top, total,
                              lambda kv: -kv[1]["time_s"]))
    con.print(_function_table(f"Top {top} functions by calls", funcs, top, total,
                              lambda kv: -kv[1]["calls"]))
    sized = _size_table(funcs, top)
    if sized is not None:
        con.print(sized)
    render_buckets(doc, con, COARSE_EDGES if buckets is _COARSE else buckets)
    _print_overhead(con, doc, total)


def _table(title: str, columns: Sequence[str], left: Sequence[str]):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c, justify="left" if c in left else "right")
    return t


def _print_headline(con, doc: Mapping[str, Any]) -> None:
    mpi, frac = doc["mpi_time_s"], doc["mpi_fraction"]
    state = "complete" if doc.get("complete") else f"PARTIAL ({doc.get('reason')})"
    nr = doc.get("ranks")
    con.print(f"[bold]MPI profile[/bold]: {nr} rank{'' if nr == 1 else 's'}, "
              f"{doc.get('mpi_library')} "
              f"(mpi.h {doc.get('header_mpi_version')}), {state}")
    if doc.get("ranks_missing"):
        con.print(f"  ranks with no data: {doc['ranks_missing']}")
    con.print(f"  wall time per rank {fmt_seconds(doc['wall_s']['mean'])}; time in MPI "
              f"{100 * frac['mean']:.1f}% on average (min {100 * frac['min']:.1f}%, "
              f"max {100 * frac['max']:.1f}%), {fmt_seconds(mpi['total'])} over all ranks, "
              f"{doc.get('calls_total')} calls")
    ml, ll = doc.get("most_loaded_rank"), doc.get("least_loaded_rank")
    if ml and ll:
        con.print(f"  most loaded rank {ml['rank']} (least MPI time, "
                  f"{100 * ml['mpi_fraction']:.1f}%); least loaded rank {ll['rank']} "
                  f"({100 * ll['mpi_fraction']:.1f}% in MPI)")


def _rank_table(per: Sequence[Mapping[str, Any]], max_ranks: int):
    t = _table("Time in MPI per rank",
               ("rank", "host", "wall", "MPI", "MPI %", "calls", "threads"), ("host",))
    for r in per[:max_ranks]:
        t.add_row(str(r["rank"]), str(r.get("host", "")), fmt_seconds(r["wall_s"]),
                  fmt_seconds(r["mpi_s"]), f"{100 * r['mpi_fraction']:.1f}", str(r["calls"]),
                  str(r.get("threads", "")))
    if len(per) > max_ranks:
        t.add_row("...", f"{len(per) - max_ranks} more", "", "", "", "", "")
    return t


def _function_table(title: str, funcs: Mapping[str, Any], top: int, total: float, key):
    tb = _table(title, ("function", "class", "calls", "time", "% MPI", "per call", "rank min",
                        "rank max", "sent", "received"), ("function", "class"))
    for name, f in sorted(funcs.items(), key=key)[:top]:
        recv = fmt_bytes(f["bytes_recv"])
        if f["recv_unknown"]:
            recv += (f" (+{f['recv_unknown']} unknown, {fmt_bytes(f['bytes_recv_posted'])} "
                     "posted)")
        tb.add_row(name, f["class"], str(f["calls"]), fmt_seconds(f["time_s"]),
                   f"{100 * f['time_s'] / total:.1f}", fmt_seconds(f["mean_call_s"]),
                   fmt_seconds(f["time_per_rank_s"]["min"]),
                   fmt_seconds(f["time_per_rank_s"]["max"]),
                   fmt_bytes(f["bytes_sent"]), recv)
    return tb


def _family_table(funcs: Mapping[str, Any], total: float):
    fam: dict[str, list[float]] = {}
    for f in funcs.values():
        a = fam.setdefault(f["class"], [0, 0.0, 0, 0, 0])
        a[0] += f["calls"]
        a[1] += f["time_s"]
        a[2] += f["bytes_sent"]
        a[3] += f["bytes_recv"]
        a[4] += f["recv_unknown"]
    ft = _table("Time in MPI by family", ("family", "calls", "time", "% MPI", "sent",
                                          "received", "unknown-size recvs"), ("family",))
    for cls, (calls, tsec, sent, recv, unk) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        ft.add_row(cls, str(calls), fmt_seconds(tsec), f"{100 * tsec / total:.1f}",
                   fmt_bytes(sent), fmt_bytes(recv), str(unk))
    return ft


def _size_table(funcs: Mapping[str, Any], top: int):
    """Message sizes per function (log2 bins), or None when no function moved bytes."""
    sized = [(n, f) for n, f in funcs.items()
             if f["bytes_sent"] or f["bytes_recv"] or f["bytes_recv_posted"]]
    if not sized:
        return None
    h = _table("Message sizes per function (bytes moved by the rank in one call; log2 bins)",
               ("function", "size", "calls", "% calls", "time", "% time"), ("function", "size"))
    for name, f in sorted(sized, key=lambda kv: -kv[1]["time_s"])[:top]:
        first = True
        for lo, calls, tsec, *_ in f["hist"]:
            h.add_row(name if first else "", bin_label(lo), str(calls),
                      f"{100 * calls / max(f['calls'], 1):.1f}", fmt_seconds(tsec),
                      f"{100 * tsec / (f['time_s'] or 1e-30):.1f}")
            first = False
    return h


def _print_overhead(con, doc: Mapping[str, Any], total: float) -> None:
    o = doc.get("overhead", {})
    npc = o.get("ns_per_call", {}).get("mean", 0.0)
    npb = o.get("ns_per_call_with_bytes", {}).get("mean", 0.0)
    npcoll = o.get("ns_per_call_collective", {}).get("mean", 0.0)
    est = o.get("estimated_total_s", 0.0)
    wall_total = sum(r["wall_s"] for r in doc.get("per_rank", [])) or 1e-30
    con.print(f"profiler overhead (measured at MPI_Init): {npc:.1f} ns per call, {npb:.1f} ns "
              f"with byte counting, {npcoll:.1f} ns per collective; estimated "
              f"{fmt_seconds(est)} in total = {100 * est / total:.3f}% of the MPI time, "
              f"{100 * est / wall_total:.4f}% of the run time")
