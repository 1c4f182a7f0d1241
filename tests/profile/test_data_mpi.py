"""Profiles as comparable data on real runs: the benchmark core as a profiled program in a
campaign (Open MPI and MPICH, np 1 and 2, two launches each), and GROMACS under
`mpibench profile` twice per transport, diffed launch by launch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mpibench import profile
from mpibench.store import Store
from support.profiler import GMX_ENV

TIMEOUT = 120

# no test here reads the machine-state probe (campaign/machine_probe.py): "off" spares
# each bound np-2 launch its two probes
CAMPAIGN = """
[campaign]
name = "core-profiled"
repeats = 2
order = "interleaved"
timeout = 60
machine_probe = "off"

[defaults]
np = 2
profile = true
transport = "shm"

[variants.ompi]
stack = "openmpi"
sweep = { np = [1, 2] }

[variants.mpich]
stack = "mpich"
sweep = { np = [1, 2] }

[benchmarks.coll]
benchmarks = ["Allreduce"]
sizes = "2K,8K"
options = { max_time = 0.02 }
"""


@pytest.mark.system
def test_message_functions_are_those_with_a_byte_rule(built):
    """What counts as a message (profile.buckets.is_message_function) agrees with the byte
    rules the wrapper generator gave each function of this stack's mpi.h, except the
    persistent *_init calls (a size, but no transfer) and the halves of split collective
    file accesses that carry no size (write *_end, read *_begin counts the posted size)."""
    _, lib, _ = built
    funcs = [line.split()[:3] for line in (lib.parent / "mpib_funcs.txt").read_text().splitlines()
             if len(line.split()) >= 3]
    assert len(funcs) > 300
    odd = []
    for name, cls, rule in funcs:
        if profile.buckets.is_message_function(name, cls) != (rule != "-"):
            odd.append(name)
    persistent = {n for n, c, _ in funcs if c in ("pt2pt.persistent", "coll.persistent")}
    split = {n for n, _, _ in funcs if n.startswith("MPI_File_read") and "_begin" in n}
    assert set(odd) <= persistent | split, sorted(set(odd) - persistent - split)
    assert "MPI_Send_init" in odd and "MPI_File_read_all_begin" in odd
    assert profile.buckets.is_message_function("MPI_File_write_all_begin", "io")
    assert not profile.buckets.is_message_function("MPI_File_write_all_end", "io")


@pytest.mark.mpi
def test_core_campaign_profiles_compare_across_np_and_stacks(tmp_path, found_stacks, capsys):
    """The core's Allreduce of 2 and 8 KiB under the profiler: its messages land in the
    1-16 KiB bucket on both stacks; calls and MPI time are rows at np 1 and 2 that the
    scaling table picks up; the report has the profile section with one column per set and
    np; profile --compare diffs the two stacks at np 2 on their two launches each."""
    from mpibench.cli import main
    from mpibench.report.html import ReportOptions, build_report
    from mpibench.report.scaling import scaling_table

    names = {s.name for s in found_stacks if s.ok}
    if not {"openmpi", "mpich"} <= names:
        pytest.skip("needs Open MPI and MPICH")
    camp = tmp_path / "c.toml"
    camp.write_text(CAMPAIGN)
    db = tmp_path / "c.db"
    assert main(["campaign", "run", str(camp), "--db", str(db), "--no-verify",
                 "--no-progress"]) == 0
    capsys.readouterr()
    with Store(db, readonly=True) as store:
        runs = store.runs()
        assert len(runs) == 8 and all(r["status"] == "done" for r in runs)
        n_prof = store.db.execute("SELECT count(*) FROM profiles").fetchone()[0]
        assert n_prof == 8
        for v in ("ompi[np=2]", "mpich[np=2]"):
            for x in profile.diff.load_launches(store, v):
                b = profile.buckets.size_buckets(x.doc)
                by = {r["bucket"]: r for r in b["buckets"]}
                k = by["1 KiB - <16 KiB"]
                # the core's own control traffic (sample gathers, stop decisions) is
                # smaller; the benchmark's Allreduce calls are the bucket's bulk
                assert k["top_function"] == "MPI_Allreduce", (v, b["buckets"])
                assert k["messages"] >= 10 and b["bytes_exact"]
        rows = store.db.execute(
            "SELECT r.np, r.metric, u.variant FROM results r JOIN runs u ON u.id = r.run_id "
            "WHERE r.benchmark = 'profile:MPI_Allreduce'").fetchall()
        assert {(n, m) for n, m, _ in rows} >= {(1, "calls"), (2, "calls"), (1, "mpi_time"),
                                                (2, "mpi_time")}
        groups = {"ompi": [r["id"] for r in runs if r["variant"].startswith("ompi")],
                  "mpich": [r["id"] for r in runs if r["variant"].startswith("mpich")]}
        sc = scaling_table(store, groups)
        series = {(r["variant"], r["benchmark"], r["metric"], r["count"]) for r in sc.records}
        for g in groups:
            for m in ("mpi_time", "calls"):
                assert {(g, "profile:MPI", m, 1), (g, "profile:MPI", m, 2)} <= series
        rep = build_report(store, groups, ReportOptions(plots=False))
    sec = next(s for s in rep.sections if s.id == "profile")
    assert sec.tables[0].header == ["function", "ompi np=1", "ompi np=2", "mpich np=1",
                                    "mpich np=2"]
    diffs = [t for t in sec.tables if t.kind == "profile-diff-functions"]
    assert len(diffs) == 2 and "mpich np=2 vs ompi np=2" in diffs[1].title
    assert main(["profile", "--db", str(db), "--compare", "ompi[np=2]", "mpich[np=2]",
                 "--campaign", "core-profiled", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["launches"]["A"]) == len(d["launches"]["B"]) == 2
    ar = next(r for r in d["functions"] if r["function"] == "MPI_Allreduce")
    assert ar["time_s"]["tested"] and ar["time_s"]["n_a"] == 2
    assert any(r["bucket"] == "1 KiB - <16 KiB" for r in d["buckets"])
    # np 1 against np 2 is refused with a pointer to the scaling comparison
    assert main(["profile", "--db", str(db), "--compare", "ompi[np=1]", "ompi[np=2]"]) == 2
    assert "report --scaling" in capsys.readouterr().err


@pytest.mark.mpi
def test_gromacs_profile_diff_shm_vs_tcp(openmpi, gromacs_tpr, tmp_path, capsys):
    """GROMACS water (2 ranks, 200 steps) profiled twice over shared memory and twice over
    TCP: the size buckets are identical in shape (the same halo exchange and PME
    redistribution), the diff is tested on 2+2 launches. mdrun runs with -dlb no and
    -notunepme: by default (-dlb auto) it turns dynamic load balancing on when it measures
    an imbalance between the ranks (checked every 100 steps), and a rank descheduled on a
    loaded machine is one, in one run and not another; DLB then moves the domain boundaries
    (the halo messages' sizes) and adds its own calls (review R10). Without it the
    decomposition, hence the message mix, is a function of the input alone."""
    from mpibench.cli import main

    assert GMX_ENV["OMP_NUM_THREADS"] == "1"  # passed with -x below
    if not shutil.which("gmx_mpi"):
        pytest.skip("gmx_mpi not installed")
    db = tmp_path / "g.db"
    for i in range(2):
        for label, btl in (("shm", "self,vader"), ("tcp", "self,tcp")):
            rc = main(["profile", "--db", str(db), "--label", label, "--out",
                       str(tmp_path / f"{label}{i}"), "--timeout", str(TIMEOUT), "--json",
                       "--", openmpi.launcher, "-np", "2", "--mca", "btl", btl,
                       "-x", "OMP_NUM_THREADS=1", "gmx_mpi", "mdrun", "-s", str(gromacs_tpr),
                       "-nsteps", "200", "-ntomp", "1", "-dlb", "no", "-notunepme",
                       "-deffnm", str(tmp_path / f"md{i}")])
            assert rc == 0
            doc = json.loads(capsys.readouterr().out)
            b = doc["size_buckets"]
            assert b["bytes_exact"] and b["messages"] > 100
            assert b["most_messages"]["share"] > 0.2
    assert main(["profile", "--db", str(db), "--compare", "shm", "tcp", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    fn = {r["function"]: r for r in d["functions"]}
    assert fn["MPI_Sendrecv"]["calls"]["ratio"] == pytest.approx(1.0, rel=0.05)
    assert fn["MPI_Sendrecv"]["time_s"]["n_a"] == 2
    shares = {r["bucket"]: r["message_share"] for r in d["buckets"]}
    # same decomposition on both transports: the message mix differs by a few points at most
    assert all(abs(s["points"]) < 5 for s in shares.values()), shares
    assert main(["profile", "--db", str(db), "--compare", "shm", "tcp"]) == 0
    out = capsys.readouterr().out
    assert "Messages by size: tcp vs shm" in out and "(2+2)" in out
    Path(tmp_path / "diff.txt").write_text(out)
