"""Profiled launches in the store and the launch-level diff of two variants.

    a = load_launches(store, "ompi-shm")        # every stored profile of that variant/label
    b = load_launches(store, "ompi-tcp")
    d = diff_launches(a, b)                     # per function and per bucket, B vs A

A profile is one launch (one mpirun): the unit of replication (DESIGN.md). The diff takes
one statistic per launch (e.g. the time all ranks spent in MPI_Allreduce in that launch) and
compares the two sets of launch statistics with mpibench.stats.launch (geometric mean with a
between-launch CI per side, Welch t on the logs with a gain CI); ranks and calls are never
pooled across launches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpibench.errors import UsageError
from mpibench.profile.buckets import COARSE_EDGES, size_buckets
from mpibench.store import queries
from mpibench.units import fmt_seconds


# ---- profiled launches in the store -------------------------------------------------------
@dataclass
class ProfileLaunch:
    run_id: str
    variant: str
    label: str | None
    campaign: str
    np: int
    status: str
    doc: dict[str, Any]
    fingerprint_id: str | None = None


def _launch(row) -> ProfileLaunch:
    doc = json.loads(row["json"])
    return ProfileLaunch(row["run_id"], row["variant"], row["label"], row["campaign"],
                         int(doc.get("ranks") or 0), row["status"], doc,
                         row["fingerprint_id"])


def load_launches(store, name: str, *, campaign: str | None = None,
                  complete_only: bool = True) -> list[ProfileLaunch]:
    """The stored profiles a name stands for: a run id (one launch), else every profile whose
    variant or label is the name (all its launches), in order of start; campaign: only that
    campaign's. Launches whose run failed or whose profile is partial are left out unless
    complete_only is False (a partial profile covers part of the run and would compare as a
    faster launch)."""
    from mpibench.report.data import split_variant

    rows = queries.profile_launches(store, run_id=name)
    if not rows:
        rows = queries.profile_launches(store, name=name, campaign=campaign)
        exact = [r for r in rows if name in (r["variant"], r["label"])]
        # else the set a campaign sweep expanded ('shm' for shm[np=1], shm[np=2]): the np
        # check below then asks for one of them
        rows = exact or [r for r in rows if split_variant(r["variant"])[0] == name]
    if not rows:
        known = queries.profile_names(store)
        where = f" in campaign {campaign!r}" if campaign else ""
        raise UsageError(f"{name!r}: no profile run, variant or label{where} in {store.path}; "
                         f"profiled variants/labels: {', '.join(known[:12]) or 'none'}")
    launches = [_launch(r) for r in rows]
    if complete_only:
        launches = [x for x in launches if x.status == "done" and x.doc.get("complete")]
        if not launches:
            raise UsageError(f"{name!r}: no complete profile (every matching run failed or "
                             "left a partial profile)")
    nps = sorted({x.np for x in launches})
    if len(nps) > 1:
        names = sorted({x.variant for x in launches})
        raise UsageError(f"{name!r}: its profiles ran at np {', '.join(map(str, nps))}; a diff "
                         f"compares one np: name one variant ({', '.join(names[:6])}) or run id")
    # one np, but one node or several (a sweep over nodes at fixed np): one placement
    from mpibench.report.data import run_placements

    placed = run_placements(store, [x.run_id for x in launches])
    shapes = sorted({tuple(sorted(placed.get(x.run_id, {}).items())) for x in launches})
    if len(shapes) > 1:
        names = sorted({x.variant for x in launches})
        what = "; ".join(",".join(f"{k}={v}" for k, v in sh) or "unknown" for sh in shapes)
        raise UsageError(f"{name!r}: its profiles ran at np {nps[0]} in {len(shapes)} "
                         f"placements ({what}); a diff compares one placement: name one "
                         f"variant ({', '.join(names[:6])}) or run id")
    return launches


def fingerprint_note(store, launches: Sequence[ProfileLaunch], side: str) -> str | None:
    """A line saying which fingerprint fields differ between one side's launches (None when
    they share one). The generic comparison pools only launches with one fingerprint; a diff
    takes the launches a name stands for, so it says when they were not run alike (often
    only the command line differs, e.g. an output file name)."""
    fps = [store.fingerprint(x.fingerprint_id) or {} for x in launches]
    if len({x.fingerprint_id for x in launches}) <= 1:
        return None
    keys = sorted({k for f in fps for k in f if any(g.get(k) != f.get(k) for g in fps)})
    n = len({x.fingerprint_id for x in launches})
    return (f"{side}: {len(launches)} launches with {n} fingerprints, differing in "
            f"{', '.join(keys) or 'nothing recorded'}; they are compared as launches of one "
            "variant")


def launch_values(launches: Sequence[ProfileLaunch], edges: tuple[int, ...] | None
                  ) -> dict[str, Any]:
    """Per launch (in order): MPI time, MPI fraction, calls, and per function its time and
    calls, per size bucket its messages, bytes and shares."""
    out: dict[str, Any] = {"mpi_s": [], "mpi_fraction": [], "calls": [], "functions": {},
                           "buckets": {}, "classes": {}, "bytes_exact": True}
    for i, x in enumerate(launches):
        d = x.doc
        out["mpi_s"].append(float(d["mpi_time_s"]["total"]))
        out["mpi_fraction"].append(float(d["mpi_fraction"]["mean"]))
        out["calls"].append(int(d.get("calls_total") or 0))
        for name, f in (d.get("functions") or {}).items():
            out["classes"][name] = f["class"]
            v = out["functions"].setdefault(name, {"time_s": [0.0] * len(launches),
                                                   "calls": [0] * len(launches)})
            v["time_s"][i] = float(f["time_s"])
            v["calls"][i] = int(f["calls"])
        b = size_buckets(d, edges)
        out["bytes_exact"] = out["bytes_exact"] and b["bytes_exact"]
        for r in b["buckets"]:
            v = out["buckets"].setdefault((r["lo"], r["hi"]), {
                "bucket": r["bucket"], **{k: [0.0] * len(launches) for k in (
                    "messages", "bytes", "message_share", "byte_share")}})
            for k in ("messages", "bytes", "message_share", "byte_share"):
                v[k][i] = r[k]
    return out


# ---- the diff --------------------------------------------------------------------------
def _side(values: Sequence[float], counts: bool = False, offset: float = 0.0
          ) -> dict[str, Any]:
    """A side's value: the geometric mean of its launch statistics with a 95% CI; for counts
    (zeros kept, as in _test) the geometric mean of 1 + count, minus 1; with an offset (a
    time some launches have as 0) the geometric mean of offset + value, minus offset."""
    from mpibench.stats import launch as ls

    off = 1.0 if counts else offset
    if off:
        e = ls.estimate([off + float(v) for v in values])
        return {"value": None if e.value is None else e.value - off,
                "ci_low": None if e.ci_low is None else e.ci_low - off,
                "ci_high": None if e.ci_high is None else e.ci_high - off,
                "launches": e.launches}
    e = ls.estimate(values)
    return {"value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "launches": e.launches}


# A time a launch has as 0 (the function never ran in it) is a launch value, kept like a
# count of 0: the test runs on log(one call's time + time), one call's time being the
# function's mean time per call over both sides, so that where time is proportional to
# calls the time test is the calls test (log(1 + calls)). Without calls, 1 us.
TIME_OFFSET_S = 1e-6


def _time_offset(fa: Mapping[str, Any] | None, fb: Mapping[str, Any] | None) -> float:
    t = sum(sum(f["time_s"]) for f in (fa, fb) if f)
    n = sum(sum(f["calls"]) for f in (fa, fb) if f)
    return t / n if n > 0 and t > 0 else TIME_OFFSET_S


def _test(a: Sequence[float], b: Sequence[float], alpha: float,
          counts: bool = False, offset: float = 0.0) -> dict[str, Any]:
    """B vs A as a ratio B/A (time, calls, messages: more is a larger ratio), the launch
    test on the logs of the launch statistics. stats.launch orients gains so that > 1 is
    better; here the ratio is reported as it is, which is what a diff of counts needs.

    counts (calls, messages, bytes): a launch with 0 is a launch, not a missing value (a
    function called in 2 of 5 launches has 5 values, three of them 0), so the test runs on
    log(1 + count): zeros kept, and for counts in the hundreds and up the ratio is the
    ratio of geometric means. offset: the same for a time some launches have as 0
    (log(offset + time))."""
    from mpibench.stats import launch as ls

    off = 1.0 if counts else offset
    if off:
        t = ls.compare([off + float(v) for v in a], [off + float(v) for v in b], "higher",
                       alpha)
        if not any(a) or not any(b):
            # one side never did it: tested, but a ratio to (or of) nothing says nothing
            t = t._replace(gain=None, ci_low=None, ci_high=None)
    else:
        t = ls.compare(a, b, "higher", alpha)
    return {"ratio": t.gain, "ratio_ci_low": t.ci_low, "ratio_ci_high": t.ci_high, "p": t.p,
            "tested": t.tested, "reason": t.reason, "n_a": t.n_base, "n_b": t.n_cand,
            "detectable": t.detectable}


def diff_launches(a: Sequence[ProfileLaunch], b: Sequence[ProfileLaunch], *,
                  edges: tuple[int, ...] | None = COARSE_EDGES, alpha: float = 0.05,
                  top: int | None = None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The profile diff of B against A (A the baseline), per function and per size bucket.

    Per launch the statistics are totals over its ranks (time in a function, its calls,
    messages and bytes in a bucket) or shares (MPI time / wall time, a bucket's share of the
    messages). Each side's value is the geometric mean of its launch statistics with a 95%
    CI from the spread between launches; the ratio B/A comes with its Welch CI and p (on the
    logs), Holm-corrected over every p the diff shows (one family). A
    function or bucket that one side never used has a value of 0 there and no ratio. With
    fewer than 2 launches on a side nothing is tested (stats.launch.MIN_LAUNCHES)."""
    from mpibench import stats

    va, vb = launch_values(a, edges), launch_values(b, edges)
    total_rows = []
    for label, key in (("MPI time (s, all ranks)", "mpi_s"), ("MPI % of wall time", "mpi_fraction"),
                       ("calls (all functions)", "calls")):
        c = key == "calls"
        total_rows.append({"what": label, "a": _side(va[key], c), "b": _side(vb[key], c),
                           **_test(va[key], vb[key], alpha, counts=key == "calls")})
    names = set(va["functions"]) | set(vb["functions"])

    def weight(n: str) -> float:
        return max(sum(va["functions"].get(n, {}).get("time_s", [0.0])) / max(len(a), 1),
                   sum(vb["functions"].get(n, {}).get("time_s", [0.0])) / max(len(b), 1))
    ordered = sorted(names, key=lambda n: (-weight(n), n))
    if top is not None:
        ordered = ordered[:top]
    fn_rows = []
    for n in ordered:
        fa, fb = va["functions"].get(n), vb["functions"].get(n)
        row = {"function": n, "class": va["classes"].get(n) or vb["classes"].get(n),
               "only_in": "A" if fb is None else "B" if fa is None else None}
        for key in ("time_s", "calls"):
            xa = fa[key] if fa else [0.0] * len(a)
            xb = fb[key] if fb else [0.0] * len(b)
            c = key == "calls"
            # a launch that never called it spent 0 s there: kept, as its 0 calls are (a
            # function one side never ran stays "only in A/B", without a ratio)
            off = (_time_offset(fa, fb) if not c and any(xa) and any(xb)
                   and not all(v > 0 for v in [*xa, *xb]) else 0.0)
            row[key] = {"a": _side(xa, c, off), "b": _side(xb, c, off),
                        **_test(xa, xb, alpha, counts=c, offset=off)}
        fn_rows.append(row)
    bucket_rows = []
    keys = sorted(set(va["buckets"]) | set(vb["buckets"]))
    for k in keys:
        ba, bb = va["buckets"].get(k), vb["buckets"].get(k)
        if not any((ba and any(ba["messages"]), bb and any(bb["messages"]))):
            continue
        row = {"bucket": (ba or bb)["bucket"], "lo": k[0], "hi": k[1]}
        for key in ("messages", "bytes"):
            xa = ba[key] if ba else [0.0] * len(a)
            xb = bb[key] if bb else [0.0] * len(b)
            row[key] = {"a": _side(xa, True), "b": _side(xb, True),
                        **_test(xa, xb, alpha, counts=True)}
        for key in ("message_share", "byte_share"):
            xa = ba[key] if ba else [0.0] * len(a)
            xb = bb[key] if bb else [0.0] * len(b)
            # shares are averaged (each launch equally) and differ in percentage points
            ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
            row[key] = {"a": ma, "b": mb, "points": 100 * (mb - ma)}
        bucket_rows.append(row)
    # one Holm family over every p the diff shows: totals, functions (time and calls),
    # buckets (messages and bytes)
    tests = list(total_rows) + [r[m] for r in fn_rows for m in ("time_s", "calls")] \
        + [r[m] for r in bucket_rows for m in ("messages", "bytes")]
    adj = stats.holm([t["p"] if t["tested"] else None for t in tests])
    for t, pa in zip(tests, adj, strict=True):
        p_adj = None if pa != pa else float(pa)
        t["p_adj"] = p_adj
        t["significant"] = p_adj is not None and p_adj <= alpha
    return {"alpha": alpha, "np": {"A": a[0].np, "B": b[0].np},
            "launches": {"A": [x.run_id for x in a], "B": [x.run_id for x in b]},
            "bytes_exact": va["bytes_exact"] and vb["bytes_exact"],
            "edges": list(edges) if edges is not None else "log2",
            "totals": total_rows, "functions": fn_rows, "buckets": bucket_rows,
            "notes": [n for n in notes if n]}


def _fmt_side(s: Mapping[str, Any], fmt) -> str:
    v = s["value"]
    if v is None:
        return "0"
    text = fmt(v)
    if s["ci_low"] is not None and v:
        # the CI is symmetric in the logs: within a factor f = high / value either way;
        # beyond f = 2 a "±%" would read as a range below zero, so say "×÷f"
        f = s["ci_high"] / v
        if f >= 2:
            return text + f" ×÷{f:.2g}"
        pct = 100 * max(v - s["ci_low"], s["ci_high"] - v) / v
        text += f" ±{pct:.0f}%" if pct >= 1 else f" ±{pct:.1f}%"
    return text


def _fmt_ratio(r: Mapping[str, Any], alpha: float) -> tuple[str, str]:
    """(ratio with CI, p / verdict) cells."""
    if r["ratio"] is None:
        return ("only in A" if r["n_b"] == 0 and r["n_a"] else
                "only in B" if r["n_a"] == 0 and r["n_b"] else "-"), ""
    ratio = f"{r['ratio']:.3g}x"
    if r["ratio_ci_low"] is not None:
        ratio += f" [{r['ratio_ci_low']:.3g}, {r['ratio_ci_high']:.3g}]"
    if not r["tested"]:
        return ratio, f"cannot tell ({r['n_a']}+{r['n_b']} launches)"
    p = r.get("p_adj", r["p"])
    if p is None:
        return ratio, "~"
    return ratio, (f"p={p:.3f}" if p <= alpha else f"~ p={p:.2f}") + f" ({r['n_a']}+{r['n_b']})"


def _num(v: float) -> str:
    a = abs(v)
    if a >= 1e4 or (a == int(a) and a < 1e4):
        return f"{v:,.0f}"
    return f"{v:.4g}"


def diff_tables(d: Mapping[str, Any], name_a: str, name_b: str) -> list[Any]:
    """The diff as report tables (mpibench.report.render.Table): totals, functions, sizes."""
    from mpibench.report.render import Table

    alpha = d["alpha"]
    n = f"{len(d['launches']['A'])}+{len(d['launches']['B'])} launches"
    tables = []
    rows, recs = [], []
    for r in d["totals"]:
        fmt = _pct if "%" in r["what"] else \
              (lambda v: f"{v:.4g}") if "time" in r["what"] else _num
        ratio, verdict = _fmt_ratio(r, alpha)
        rows.append([r["what"], _fmt_side(r["a"], fmt), _fmt_side(r["b"], fmt), ratio, verdict])
        recs.append({"what": r["what"], "a": r["a"]["value"], "b": r["b"]["value"],
                     "ratio": r["ratio"], "ratio_ci_low": r["ratio_ci_low"],
                     "ratio_ci_high": r["ratio_ci_high"], "p": r["p"], "n_a": r["n_a"],
                     "n_b": r["n_b"]})
    tables.append(Table(title=f"MPI totals per launch: {name_b} vs {name_a} ({n})",
                        header=["", name_a, name_b, "B/A [95% CI]", "p"], rows=rows,
                        records=recs, kind="profile-diff-totals",
                        notes=list(d.get("notes") or [])))
    rows, recs = [], []
    for r in d["functions"]:
        t, c = r["time_s"], r["calls"]
        ratio, verdict = _fmt_ratio(t, alpha)
        cratio = "-" if c["ratio"] is None else f"{c['ratio']:.3g}x"
        rows.append([r["function"], _fmt_side(t["a"], fmt_seconds), _fmt_side(t["b"], fmt_seconds),
                     ratio, verdict, _fmt_side(c["a"], _num), _fmt_side(c["b"], _num), cratio])
        recs.append({"function": r["function"], "class": r["class"],
                     "time_s_a": t["a"]["value"], "time_s_b": t["b"]["value"],
                     "time_ratio": t["ratio"], "time_ratio_ci_low": t["ratio_ci_low"],
                     "time_ratio_ci_high": t["ratio_ci_high"], "time_p_holm": t["p_adj"],
                     "calls_a": c["a"]["value"], "calls_b": c["b"]["value"],
                     "calls_ratio": c["ratio"], "n_a": t["n_a"], "n_b": t["n_b"]})
    tables.append(Table(
        title=f"MPI functions: {name_b} vs {name_a} (time in the function over all ranks, "
              "per launch)",
        header=["function", f"time {name_a}", f"time {name_b}", "B/A [95% CI]", "p (Holm)",
                f"calls {name_a}", f"calls {name_b}", "calls B/A"],
        rows=rows, records=recs, kind="profile-diff-functions"))
    rows, recs = [], []
    for r in d["buckets"]:
        m, s, bs = r["messages"], r["message_share"], r["byte_share"]
        ratio, verdict = _fmt_ratio(m, alpha)
        rows.append([r["bucket"], f"{100 * s['a']:.1f}", f"{100 * s['b']:.1f}",
                     f"{s['points']:+.1f}", f"{100 * bs['a']:.1f}", f"{100 * bs['b']:.1f}",
                     _fmt_side(m["a"], _num), _fmt_side(m["b"], _num), ratio, verdict])
        recs.append({"bucket": r["bucket"], "lo": r["lo"], "hi": r["hi"],
                     "message_share_a": s["a"], "message_share_b": s["b"],
                     "byte_share_a": bs["a"], "byte_share_b": bs["b"],
                     "messages_a": m["a"]["value"], "messages_b": m["b"]["value"],
                     "messages_ratio": m["ratio"], "messages_p_holm": m["p_adj"]})
    tables.append(Table(
        title=f"Messages by size: {name_b} vs {name_a} (all functions that move data)",
        header=["size", f"% msgs {name_a}", f"% msgs {name_b}", "Δ points",
                f"% bytes {name_a}", f"% bytes {name_b}", f"messages {name_a}",
                f"messages {name_b}", "B/A [95% CI]", "p (Holm)"],
        rows=rows, records=recs, kind="profile-diff-sizes",
        notes=[] if d["bytes_exact"] else ["bytes estimated from the log2 bins for profiles "
                                           "that predate per-bin byte counts"]))
    caption = ("Per side: geometric mean of the launch statistics (totals over each launch's "
               "ranks) ± 95% CI from the spread between launches (×÷f: within a factor f); "
               "B/A with the Welch CI and "
               "p on the logs of the launch statistics, Holm across the rows of a table; "
               "cannot tell = fewer than 2 launches on a side; shares are means over launches, "
               "Δ in percentage points.")
    tables[0].caption = caption
    for t in tables[1:]:
        t.caption = "as in the totals table above"
    return tables


def _pct(v: float) -> str:
    """A share as % with 3 significant digits (0.00796%, 39.0%)."""
    return f"{100 * v:.3g}%"


def render_diff(d: Mapping[str, Any], name_a: str, name_b: str, console=None) -> None:
    from rich.table import Table as RichTable

    from mpibench.termsafe import SafeConsole

    con = console or SafeConsole()
    tables = diff_tables(d, name_a, name_b)
    for t in tables:
        rt = RichTable(title=t.title, title_justify="left")
        for i, h in enumerate(t.header):
            rt.add_column(h, justify="left" if i == 0 else "right")
        for row in t.rows:
            rt.add_row(*row)
        con.print(rt)
        for note in t.notes:
            con.print(note)
    con.print(tables[0].caption)
    na, nb = len(d["launches"]["A"]), len(d["launches"]["B"])
    if min(na, nb) < 2:
        con.print(f"One launch per side decides nothing ({na}+{nb}): profile each side "
                  "several times under one label (or a campaign with profile = true and "
                  "repeats) and compare the labels.")


# ---- report section ------------------------------------------------------------------------
MAX_REPORT_DIFFS = 6
