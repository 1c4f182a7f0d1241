"""Profiles as comparable data (mpibench.profile.buckets and .diff): size buckets from the histograms,
result rows for calls and MPI time, the launch-level diff, the report section, the CLI and
the pandas API. No MPI here: profiles are a real captured one (known_calls on Open MPI) and
synthetic launches drawn from known distributions; tests/profile/test_data_mpi.py runs the
real things."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mpibench import profile
from mpibench.errors import UsageError

DATA = Path(__file__).resolve().parents[1] / "data" / "profiler"


def captured() -> dict:
    """known_calls on Open MPI (2 ranks): profile.json as the library wrote it, before bins
    carried bytes (3-element bins)."""
    return profile.document.collect_profile(DATA / "known_calls_openmpi")


def doc_with(funcs: dict[str, tuple[str, list[list]]], ranks: int = 2,
             mpi_s: float = 1.0, wall_s: float = 4.0) -> dict:
    """A merged profile with the given functions {name: (class, hist)}: the per-rank fields
    split each function evenly over the ranks."""
    functions = {}
    for name, (cls, hist) in funcs.items():
        calls = sum(h[1] for h in hist)
        t = sum(h[2] for h in hist)
        functions[name] = {
            "class": cls, "calls": calls, "time_s": t, "mean_call_s": t / max(calls, 1),
            "bytes_sent": sum(h[3] for h in hist if len(h) > 3), "bytes_recv": 0,
            "bytes_recv_posted": 0, "recv_unknown": 0, "ranks_calling": ranks,
            "per_rank_time_s": [t / ranks] * ranks,
            "time_per_rank_s": {"min": t / ranks, "mean": t / ranks, "max": t / ranks},
            "min_call_s": t / max(calls, 1), "max_call_s": t / max(calls, 1),
            "per_rank_calls": [calls // ranks + (1 if i < calls % ranks else 0)
                               for i in range(ranks)],
            "hist": hist}
    calls = sum(f["calls"] for f in functions.values())
    return {"schema": "mpibench-profile", "version": 1, "complete": True, "ranks": ranks,
            "reason": "finalize", "mpi_library": "synthetic", "header_mpi_version": "3.1",
            "overhead": {"ns_per_call": {"mean": 20.0}, "estimated_total_s": 1e-6},
            "calls_total": calls, "mpi_time_s": {"total": mpi_s * ranks, "min": mpi_s,
                                                 "mean": mpi_s, "max": mpi_s},
            "mpi_fraction": {"min": mpi_s / wall_s, "mean": mpi_s / wall_s,
                             "max": mpi_s / wall_s},
            "wall_s": {"min": wall_s, "mean": wall_s, "max": wall_s},
            "per_rank": [{"rank": i, "mpi_s": mpi_s, "mpi_fraction": mpi_s / wall_s,
                          "wall_s": wall_s, "calls": calls // ranks} for i in range(ranks)],
            "functions": functions}


# ---- size buckets -------------------------------------------------------------------------
def test_buckets_of_captured_profile_count_only_messages():
    """known_calls: Send/Recv 10 x 1000 B, Isend/Irecv 5 x 1 KiB, Allreduce 6 x 800 B,
    Bcast 4 x 256 B, Alltoallv 12 B and 28 B (per rank); Comm_rank/size and Waitall move no
    data and are not messages."""
    b = profile.buckets.size_buckets(captured())
    by = {r["bucket"]: r for r in b["buckets"]}
    assert b["messages"] == 10 + 10 + 5 + 5 + 6 + 4 + 2
    assert b["other_calls"] == 2 + 2 + 2
    assert "MPI_Waitall" not in b["functions"] and "MPI_Send" in b["functions"]
    assert by["1 B - <64 B"]["messages"] == 2
    assert by["64 B - <1 KiB"]["messages"] == 10 + 10 + 6 + 4
    assert by["1 KiB - <16 KiB"]["messages"] == 10
    assert by["0 B"]["messages"] == 0 and by[">= 64 MiB"]["messages"] == 0
    assert sum(r["message_share"] for r in b["buckets"]) == pytest.approx(1.0)
    assert b["most_messages"] == {"bucket": "64 B - <1 KiB", "share": pytest.approx(30 / 42)}
    # bins without bytes (older profiles): 1.5 x the lower bound per call, flagged
    assert not b["bytes_exact"]
    assert by["1 KiB - <16 KiB"]["bytes"] == 10 * 1536
    assert by["64 B - <1 KiB"]["bytes"] == 20 * 768 + 6 * 768 + 4 * 384
    assert profile.buckets.bucket_headline(b).startswith("most messages are 64 B - <1 KiB (71%)")


def test_buckets_exact_bytes_and_edges():
    d = doc_with({
        "MPI_Isend": ("pt2pt.send", [[1024, 3, 0.3, 3 * 1500], [8192, 1, 0.1, 9000]]),
        "MPI_Allreduce": ("coll.blocking", [[8, 4, 0.4, 32], [1 << 20, 1, 0.2, 1 << 20]]),
        "MPI_Barrier": ("coll.blocking", [[0, 50, 1.0, 0]]),
        "MPI_Win_fence": ("rma", [[0, 7, 0.1, 0]]),
        "MPI_Put": ("rma", [[0, 1, 0.1, 0]]),                # a 0-byte Put is a message
        "MPI_File_open": ("io", [[0, 1, 0.1, 0]]),
        "MPI_File_write_at": ("io", [[4096, 2, 0.1, 8192]]),
        "MPI_Send_init": ("pt2pt.persistent", [[64, 1, 0.0, 64]]),
        "MPI_Wait": ("pt2pt.wait", [[0, 9, 0.5, 0]]),
    })
    b = profile.buckets.size_buckets(d)
    by = {r["bucket"]: r for r in b["buckets"]}
    assert b["bytes_exact"] and b["messages"] == 3 + 1 + 4 + 1 + 1 + 2
    assert b["other_calls"] == 50 + 7 + 1 + 1 + 9
    assert by["0 B"]["messages"] == 1 and by["0 B"]["top_function"] == "MPI_Put"
    k = by["1 KiB - <16 KiB"]
    assert (k["messages"], k["bytes"]) == (3 + 1 + 2, 4500 + 9000 + 8192)
    assert k["top_function"] == "MPI_Isend"
    assert by["256 KiB - <4 MiB"]["bytes"] == 1 << 20
    assert b["bytes"] == 4500 + 9000 + 32 + (1 << 20) + 8192
    assert b["most_bytes"]["bucket"] == "256 KiB - <4 MiB"
    assert len(b["buckets"]) == 1 + len(profile.buckets.COARSE_EDGES)  # fixed shape
    # log2: the non-empty bins, each its own bucket
    fine = profile.buckets.size_buckets(d, None)
    assert [r["lo"] for r in fine["buckets"]] == [0, 8, 1024, 4096, 8192, 1 << 20]
    assert fine["buckets"][2]["bucket"] == "1 KiB - <2 KiB"
    # custom edges: one bucket from 1 KiB up
    custom = profile.buckets.size_buckets(d, profile.buckets.parse_buckets("1K"))
    assert [(r["bucket"], r["messages"]) for r in custom["buckets"]] == [
        ("0 B", 1), ("1 B - <1 KiB", 4), (">= 1 KiB", 7)]


@pytest.mark.parametrize("spec,want", [
    ("coarse", profile.buckets.COARSE_EDGES), ("log2", None), ("64,1K,16K", (1, 64, 1024, 16384)),
    ("1, 4KiB, 1M", (1, 4096, 1 << 20)), ("2G", (1, 2 << 30)),
])
def test_parse_buckets(spec, want):
    assert profile.buckets.parse_buckets(spec) == want


@pytest.mark.parametrize("spec,msg", [
    ("100", "not a power of two"), ("1K,64", "increasing"), ("64,64", "increasing"),
    ("fine", "not a size"), ("1Q", "not a size"), ("0", "not a power of two"),
])
def test_parse_buckets_rejects(spec, msg):
    with pytest.raises(UsageError, match=msg):
        profile.buckets.parse_buckets(spec)


# ---- result rows ---------------------------------------------------------------------------
def test_profile_rows_calls_time_and_sizes():
    rows = profile.document.profile_rows(captured())
    by = {(r["benchmark"], r["metric"], r.get("size")): r for r in rows}
    calls = by[("profile:MPI", "calls", None)]
    # every intercepted call of the rank (MPI_Init, MPI_Finalize and the library's own
    # calibration calls at MPI_Init included)
    assert calls["samples"] == [24.0, 24.0] and calls["unit"] == "calls"
    assert calls["extra"]["total"] == 48
    send = by[("profile:MPI_Send", "calls", None)]
    assert send["samples"] == [10.0, 0.0] and send["np"] == 2      # rank 1 never sends
    assert ("profile:MPI_Send", "mpi_time", None) in by
    assert ("profile:MPI", "mpi_fraction", None) in by
    m = by[("profile:sizes", "messages", 512)]
    assert m["samples"] == [26.0] and m["extra"]["bucket"] == "512 B - <1 KiB"  # Send, Recv,
    assert by[("profile:sizes", "message_share", 512)]["samples"] == [  # Allreduce
        pytest.approx(26 / 42)]
    assert {r["size"] for r in rows if r["benchmark"] == "profile:sizes"} == {
        8, 16, 256, 512, 1024}
    assert by[("profile:sizes", "bytes", 1024)]["extra"]["bytes_exact"] is False


# ---- the launch-level diff -------------------------------------------------------------------
def launches(n: int, send_s: float, rng, sd: float = 0.1, calls: int = 100,
             name: str = "x", size: int = 1024) -> list[profile.diff.ProfileLaunch]:
    """n launches whose MPI_Send time is send_s x a launch offset (lognormal, sd of the
    log), and whose Allreduce time is 1 s x its own offset; fixed call counts."""
    out = []
    for i in range(n):
        ts = send_s * math.exp(rng.normal(0, sd))
        ta = math.exp(rng.normal(0, sd))
        d = doc_with({"MPI_Send": ("pt2pt.send", [[size, calls, ts, calls * size]]),
                      "MPI_Allreduce": ("coll.blocking", [[8, 10, ta, 80]])},
                     mpi_s=(ts + ta) / 2)
        out.append(profile.diff.ProfileLaunch(f"{name}{i}", name, None, "profiles", 2,
                                              "done", d))
    return out


def test_diff_detects_a_slower_function_and_not_an_equal_one():
    rng = np.random.default_rng(7)
    a = launches(6, 1.0, rng, name="a")
    b = launches(6, 2.0, rng, name="b")
    d = profile.diff.diff_launches(a, b)
    fn = {r["function"]: r for r in d["functions"]}
    send, ar = fn["MPI_Send"]["time_s"], fn["MPI_Allreduce"]["time_s"]
    assert send["tested"] and send["significant"] and send["p_adj"] < 0.01
    assert send["ratio_ci_low"] < send["ratio"] < send["ratio_ci_high"]
    assert 1.5 < send["ratio"] < 2.7
    assert ar["tested"] and not ar["significant"]
    assert fn["MPI_Send"]["calls"]["ratio"] == pytest.approx(1.0)
    assert (send["n_a"], send["n_b"]) == (6, 6)
    # the function slower in B is listed first (by time)
    assert d["functions"][0]["function"] == "MPI_Send"


def test_diff_ratio_ci_coverage():
    """The 95% CI of the ratio holds the true ratio (2) in about 95% of 200 diffs."""
    rng = np.random.default_rng(13)
    cover = 0
    for _ in range(200):
        d = profile.diff.diff_launches(launches(4, 1.0, rng, sd=0.2),
                                       launches(5, 2.0, rng, sd=0.2))
        t = next(r for r in d["functions"] if r["function"] == "MPI_Send")["time_s"]
        cover += t["ratio_ci_low"] <= 2.0 <= t["ratio_ci_high"]
    assert 180 <= cover <= 198


def test_diff_a_vs_a_false_positive_rate():
    """The same distribution under two names: the Welch test on launch statistics calls
    about alpha of the cases significant (100 repetitions, 6 launches each)."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(100):
        d = profile.diff.diff_launches(launches(6, 1.0, rng, sd=0.3),
                                       launches(6, 1.0, rng, sd=0.3))
        hits += any(r["time_s"]["significant"] for r in d["functions"])
    # two functions, Holm: family-wise rate <= 5%; binomial(100, 0.05) stays below 13
    assert hits <= 12


def test_diff_one_launch_per_side_cannot_tell():
    rng = np.random.default_rng(3)
    d = profile.diff.diff_launches(launches(1, 1.0, rng), launches(1, 3.0, rng))
    send = d["functions"][0]["time_s"]
    assert not send["tested"] and send["p_adj"] is None and not send["significant"]
    assert send["ratio"] > 1 and send["ratio_ci_low"] is None
    tables = profile.diff.diff_tables(d, "a", "b")
    assert "cannot tell (1+1 launches)" in tables[1].rows[0][4]


def test_diff_size_buckets_shift():
    """B sends its messages at 64 KiB instead of 1 KiB: the 1-16 KiB bucket's share drops
    by the Send share, 16-256 KiB gains it; functions only one side used say so."""
    rng = np.random.default_rng(5)
    a = launches(3, 1.0, rng, size=1024)
    b = launches(3, 1.0, rng, size=64 << 10)
    for x in b:
        x.doc["functions"]["MPI_Alltoall"] = copy.deepcopy(x.doc["functions"]["MPI_Allreduce"])
    d = profile.diff.diff_launches(a, b)
    by = {r["bucket"]: r for r in d["buckets"]}
    assert by["1 KiB - <16 KiB"]["message_share"]["a"] == pytest.approx(100 / 110)
    assert by["1 KiB - <16 KiB"]["message_share"]["b"] == 0.0
    assert by["16 KiB - <256 KiB"]["message_share"]["points"] == pytest.approx(
        100 * 100 / 120)
    assert by["1 KiB - <16 KiB"]["messages"]["ratio"] is None          # gone in B
    fn = {r["function"]: r for r in d["functions"]}
    assert fn["MPI_Alltoall"]["only_in"] == "B"
    assert profile.diff.diff_tables(d, "a", "b")[1].rows[-1][3] == "only in B"


# ---- store, report, CLI, pandas ----------------------------------------------------------------
def _store_profiles(db: Path, labels_docs: list[tuple[str, dict]],
                    argv: tuple[str, ...] = ("mpirun", "-np", "2", "x")) -> list[str]:
    from mpibench.process import CommandResult
    from mpibench.stacks import Stack
    from mpibench.store import Store

    stack = Stack(name="openmpi", kind="openmpi", mpicc="mpicc.openmpi")
    ok = CommandResult(["mpirun"], 0, "", "", 1.0)
    ids = []
    with Store(db) as store:
        for label, doc in labels_docs:
            run = profile.run.ProfileRun(stack, list(argv), ["mpirun"],
                                       db.parent, Path("lib.so"), ok, doc)
            ids.append(profile.document.store_profile(store, run, label=label))
    return ids


def _two_labels(tmp_path: Path, n: int = 3) -> Path:
    rng = np.random.default_rng(1)
    db = tmp_path / "p.db"
    pairs = []
    for la, lb in zip(launches(n, 1.0, rng), launches(n, 2.0, rng), strict=True):
        pairs += [("a", la.doc), ("b", lb.doc)]
    _store_profiles(db, pairs)
    return db


def test_load_launches_by_label_run_id_and_errors(tmp_path):
    from mpibench.store import Store

    db = _two_labels(tmp_path)
    with Store(db, readonly=True) as store:
        a = profile.diff.load_launches(store, "a")
        assert len(a) == 3 and {x.label for x in a} == {"a"}
        assert len(profile.diff.load_launches(store, a[1].run_id)) == 1
        with pytest.raises(UsageError, match="profiled variants/labels: a, b"):
            profile.diff.load_launches(store, "nope")
        with pytest.raises(UsageError, match="in campaign 'other'"):
            profile.diff.load_launches(store, "a", campaign="other")
    # a campaign sweep's set name stands for its variants; one np must be chosen
    rng = np.random.default_rng(2)
    one, two = launches(1, 1.0, rng)[0].doc, launches(1, 1.0, rng)[0].doc
    one["ranks"] = 1
    _store_profiles(db, [("s[np=1]", one), ("s[np=2]", two), ("s[np=2]", two)])
    with Store(db, readonly=True) as store:
        assert len(profile.diff.load_launches(store, "s[np=2]")) == 2
        with pytest.raises(UsageError, match=r"np 1, 2; .*name one variant \(s\[np=1\], "
                                             r"s\[np=2\]\)"):
            profile.diff.load_launches(store, "s")
    # np differs within a name: refused
    d4 = copy.deepcopy(captured())
    d4["ranks"] = 4
    _store_profiles(db, [("a", d4)])
    with Store(db, readonly=True) as store, pytest.raises(UsageError, match="np 2, 4"):
        profile.diff.load_launches(store, "a")


def test_cli_compare_show_csv_json(tmp_path, capsys):
    from mpibench.cli import main

    db = _two_labels(tmp_path)
    assert main(["profile", "--db", str(db), "--compare", "a", "b"]) == 0
    out = capsys.readouterr().out
    assert "MPI functions: b vs a" in out and "Messages by size: b vs a" in out
    assert "(3+3)" in out
    assert "fingerprints" not in out         # launches of a label run alike
    assert main(["profile", "--db", str(db), "--compare", "a", "b", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["notes"] == []
    send = next(r for r in d["functions"] if r["function"] == "MPI_Send")
    assert send["time_s"]["significant"] and d["launches"]["A"] and d["np"] == {"A": 2, "B": 2}
    assert main(["profile", "--db", str(db), "--compare", "a", "b", "--csv", "sizes"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("bucket,lo,hi,message_share_a")
    assert main(["profile", "--db", str(db), "--show", "a", "--csv", "sizes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bucket,lo,hi,messages,message_share")
    assert len(lines) == 1 + 1 + len(profile.buckets.COARSE_EDGES)
    assert main(["profile", "--db", str(db), "--show", "a", "--csv", "functions"]) == 0
    assert capsys.readouterr().out.startswith("function,class,calls,time_s")
    assert main(["profile", "--db", str(db), "--show", "a", "--json", "--buckets", "log2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["size_buckets"]["edges"] == "log2" and doc["functions"]
    assert main(["profile", "--db", str(db), "--show", "a", "--buckets", "log2"]) == 0
    assert "Messages by size" in capsys.readouterr().out
    # launches of one label that were not run alike: said, not hidden
    rng = np.random.default_rng(4)
    _store_profiles(db, [("a", launches(1, 1.0, rng)[0].doc)], argv=("mpirun", "./other"))
    assert main(["profile", "--db", str(db), "--compare", "a", "b"]) == 0
    assert "A (a): 4 launches with 2 fingerprints, differing in launcher_argv" in \
        capsys.readouterr().out.replace("\n", " ")
    for bad, msg in ((["--show", "a", "--buckets", "100"], "power of two"),
                     (["--show", "a", "--json", "--csv", "sizes"], "give one"),
                     (["--show", "a", "--campaign", "x"], "only with --compare"),
                     (["--compare", "a", "nope"], "'nope'")):
        assert main(["profile", "--db", str(db), *bad]) == 2
        assert msg in capsys.readouterr().err


def test_report_profile_section(tmp_path):
    from mpibench.report.html import ReportOptions, build_report, render_markdown_report
    from mpibench.store import Store

    db = _two_labels(tmp_path)
    with Store(db, readonly=True) as store:
        ids = {lab: [r["id"] for r in store.runs() if r["label"] == lab] for lab in "ab"}
        rep = build_report(store, ids, ReportOptions(plots=False))
    sec = next(s for s in rep.sections if s.id == "profile")
    # profile:sizes rows have a size (the bin) but are no time at a message size
    assert all(s.id != "gain" for s in rep.sections)
    kinds = [t.kind for t in sec.tables]
    assert kinds == ["profile-top", "profile-sizes", "profile-diff-totals",
                     "profile-diff-functions", "profile-diff-sizes"]
    top, sizes = sec.tables[0], sec.tables[1]
    assert top.header == ["function", "a np=2", "b np=2"]
    assert top.rows[0][0] == "MPI % of wall time"
    assert sizes.rows[0][0] == "1 B - <64 B" and sizes.rows[-1][0] == "1 KiB - <16 KiB"
    assert "most messages are 1 KiB - <16 KiB (91%)" in sizes.caption
    md = render_markdown_report(rep, None, tmp_path)
    assert "## MPI profile" in md and "Messages by size" in md
    # a selection without profiles has no such section
    from support.synth import build_two_stack_store

    store, groups = build_two_stack_store(tmp_path / "s.db", repeats=2, n=5)
    rep = build_report(store, groups, ReportOptions(plots=False))
    store.close()
    assert all(s.id != "profile" for s in rep.sections)


def test_pandas_api(tmp_path):
    from mpibench.api import load_profiles, load_results, load_size_buckets

    db = _two_labels(tmp_path, n=2)
    prof = load_profiles(db)
    assert len(prof) == 4 * 2                      # 4 launches x 2 functions
    assert set(prof["label"]) == {"a", "b"} and (prof["np"] == 2).all()
    per_launch = prof.groupby("run_id")["time_s"].sum()
    assert len(per_launch) == 4
    sizes = load_size_buckets(db, labels=["a"])
    assert len(sizes) == 2 * (1 + len(profile.buckets.COARSE_EDGES))
    share = sizes.groupby("bucket", sort=False)["message_share"].mean()
    assert share["1 KiB - <16 KiB"] == pytest.approx(100 / 110)
    assert sizes["bytes_exact"].all()
    fine = load_size_buckets(db, buckets="log2")
    assert set(fine["lo"]) == {8, 1024}
    res = load_results(db)
    assert {"calls", "mpi_time", "messages", "message_share"} <= set(res["metric"])
    with pytest.raises(UsageError):
        load_size_buckets(db, buckets="3")


def test_report_profile_pairs_by_effective_placement(tmp_path):
    """The report's profile diff pairs what compare pairs: a sweep over nodes at np=2
    ('s[nodes=1]', 's[nodes=2]') gets one column per placement, and a fixed variant meets the
    sweep's point of the same placement: f (nodes = 2, ppn = 1) the nodes=2 point, g (one
    node, np = 2) the nodes=1 point; never pooled, never paired across placements."""
    from mpibench.report.profile import report_tables
    from mpibench.store import Store

    rng = np.random.default_rng(3)
    ids: dict[str, list[str]] = {}
    with Store(tmp_path / "pl.db") as store:
        cid = store.add_campaign("pl")
        for name, group, nodes, ppn in (("s[nodes=1]", "s", 1, None),
                                        ("s[nodes=2]", "s", 2, None),
                                        ("f", "f", 2, 1), ("g", "g", None, None)):
            for i, x in enumerate(launches(2, 1.0, rng, name=name)):
                rid = f"{name}-{i}"
                store.create_run(rid, cid, name, grp="core", repeat=i,
                                 spec={"variant": {"name": name, "stack": "ompi", "np": 2,
                                                   "nodes": nodes, "ppn": ppn}})
                store.set_profile(rid, x.doc)
                store.set_run(rid, "done", started=1.7e9 + i, finished=1.7e9 + i + 1)
                ids.setdefault(group, []).append(rid)
        tables = report_tables(store, ids)
    top = tables[0]
    assert top.header[1:] == ["s np=2 nodes=1", "s np=2 nodes=2", "f np=2 nodes=2",
                              "g np=2 nodes=1"]
    diffs = [t.title for t in tables if t.kind == "profile-diff-totals"]
    assert len(diffs) == 2
    assert any("f np=2 nodes=2" in t and "s np=2 nodes=2" in t for t in diffs)
    assert any("g np=2 nodes=1" in t and "s np=2 nodes=1" in t for t in diffs)


def test_a_diff_side_never_pools_two_placements(tmp_path):
    """'s' stands for s[nodes=1] and s[nodes=2]: both ran np=2, on one node and on two; a
    profile diff of 's' pooled them as launches of one variant. Refused like two np."""
    from mpibench.store import Store

    rng = np.random.default_rng(5)
    with Store(tmp_path / "pl.db") as store:
        cid = store.add_campaign("pl")
        for name, nodes in (("s[nodes=1]", 1), ("s[nodes=2]", 2)):
            for i, x in enumerate(launches(2, 1.0, rng, name=name)):
                rid = f"{name}-{i}"
                store.create_run(rid, cid, name, grp="core", repeat=i,
                                 spec={"variant": {"name": name, "stack": "ompi", "np": 2,
                                                   "nodes": nodes}})
                store.set_profile(rid, x.doc)
                store.set_run(rid, "done", started=1.7e9 + i, finished=1.7e9 + i + 1)
        with pytest.raises(UsageError, match=r"placements .*nodes=1.*nodes=2.*name one "
                                             r"variant \(s\[nodes=1\], s\[nodes=2\]\)"):
            profile.diff.load_launches(store, "s")
        assert len(profile.diff.load_launches(store, "s[nodes=2]")) == 2


def test_counts_keep_the_launches_with_zero_and_share_one_holm_family():
    """A function called in 2 of 5 launches is tested on 5 launch values (three of them 0),
    not on the 2 that are not; calls and bytes are adjusted with everything else the diff
    shows (issue 21)."""
    rng = np.random.default_rng(9)
    a = launches(5, 1.0, rng, name="a")
    b = launches(5, 1.0, rng, name="b")
    for x in a[:2]:
        x.doc["functions"]["MPI_Barrier"] = {"class": "coll.blocking", "calls": 1000,
                                            "time_s": 0.5, "bins": []}
    for x in b:
        x.doc["functions"]["MPI_Barrier"] = {"class": "coll.blocking", "calls": 1000,
                                            "time_s": 0.5, "bins": []}
    d = profile.diff.diff_launches(a, b)
    bar = {r["function"]: r for r in d["functions"]}["MPI_Barrier"]["calls"]
    assert (bar["n_a"], bar["n_b"]) == (5, 5)
    assert bar["tested"] and bar["p_adj"] is not None and bar["p_adj"] >= bar["p"]
    assert 0 < bar["a"]["value"] < 1000 and bar["b"]["value"] == pytest.approx(1000)
    for r in d["buckets"]:
        assert "p_adj" in r["bytes"] and "p_adj" in r["messages"]


def test_time_in_a_function_keeps_the_launches_that_never_called_it():
    """A function called in 2 of 5 launches spent 0 s in the other 3: its time is tested on
    5 launch values, like its calls, not on the 2 launches that called it (issue 21 item 5:
    zero-valued launches kept). Called as much in every launch of B and in 2 of 5 of A, B
    spends more time in it: with the zeros dropped, A's 2 launches equal B's and nothing is
    seen; kept, the time test is the calls test (time proportional to calls)."""
    rng = np.random.default_rng(9)
    a = launches(5, 1.0, rng, name="a")
    b = launches(5, 1.0, rng, name="b")
    for x in a[:2] + b:
        x.doc["functions"]["MPI_Barrier"] = {"class": "coll.blocking", "calls": 1000,
                                            "time_s": 0.5, "bins": []}
    d = profile.diff.diff_launches(a, b)
    t = {r["function"]: r for r in d["functions"]}["MPI_Barrier"]["time_s"]
    assert (t["n_a"], t["n_b"]) == (5, 5)
    calls = {r["function"]: r for r in d["functions"]}["MPI_Barrier"]["calls"]
    assert t["tested"] and t["ratio"] > 1.5
    assert t["p"] == pytest.approx(calls["p"]) and t["ratio"] == pytest.approx(calls["ratio"])
    assert 0 < t["a"]["value"] < 0.5 and t["b"]["value"] == pytest.approx(0.5)
