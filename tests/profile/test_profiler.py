"""The PMPI profiler: wrapper generation from real headers, exact counts and bins from a known
program on both stacks, partial profiles after abort/signals, Pcontrol, threads, the Python
merge, store/compare, the CLI, and GROMACS under the profiler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench import profile
from support.profiler import GMX_ENV

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "profiler"
GEN = REPO / "profiler" / "gen_wrappers.py"
TIMEOUT = 90  # every launch


def _gen(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, tuple]]:
    res = subprocess.run([sys.executable, str(GEN), *args, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    table = {}
    for line in (tmp_path / "mpib_funcs.txt").read_text().splitlines():
        name, cls, helper = line.split("\t")
        table[name] = (cls, helper)
    return res, table


# ---- generator ---------------------------------------------------------------------------
@pytest.mark.system
@pytest.mark.parametrize("wrapper,large", [("mpicc.openmpi", False), ("mpicc.mpich", True)])
def test_generator_real_headers(tmp_path, wrapper, large):
    if not shutil.which(wrapper):
        pytest.skip(f"{wrapper} not installed")
    res, t = _gen(tmp_path, "--mpicc", wrapper)
    assert "warning" not in res.stderr, res.stderr
    assert len(t) > 350  # hundreds, none written by hand
    assert any(n.endswith("_c") for n in t) is large
    expect = {
        "MPI_Send": ("pt2pt.send", "send"), "MPI_Isend": ("pt2pt.send", "send"),
        "MPI_Recv": ("pt2pt.recv", "status"), "MPI_Irecv": ("pt2pt.recv", "posted"),
        "MPI_Send_init": ("pt2pt.persistent", "send"), "MPI_Start": ("pt2pt.persistent", "-"),
        "MPI_Iprobe": ("pt2pt.probe", "-"), "MPI_Testsome": ("pt2pt.test", "-"),
        "MPI_Waitall": ("pt2pt.wait", "-"), "MPI_Sendrecv": ("pt2pt.sendrecv", "sendrecv"),
        "MPI_Allreduce": ("coll.blocking", "allreduce"),
        "MPI_Ialltoallv": ("coll.nonblocking", "alltoallv"),
        "MPI_Alltoallw": ("coll.blocking", "alltoallw"),
        "MPI_Neighbor_alltoall": ("coll.neighbor", "nb_alltoall"),
        "MPI_Ineighbor_alltoallw": ("coll.neighbor", "nb_alltoallw"),
        "MPI_Put": ("rma", "put"), "MPI_Win_fence": ("rma", "-"),
        "MPI_File_read_at_all": ("io", "status"), "MPI_File_iwrite": ("io", "io_write"),
        "MPI_Comm_split": ("comm", "-"), "MPI_Comm_rank": ("other", "-"),
    }
    for name, want in expect.items():
        assert t[name] == want, name
    for handwritten in ("MPI_Init", "MPI_Finalize"):
        assert handwritten not in t
    if large:
        assert t["MPI_Send_c"] == ("pt2pt.send", "send")
        assert t["MPI_Alltoallv_c"] == ("coll.blocking", "alltoallv")
        assert t["MPI_Allreduce_init"] == ("coll.persistent", "allreduce")
        assert t["MPI_Neighbor_allgatherv_init_c"] == ("coll.neighbor", "nb_allgatherv")
        src = (tmp_path / "mpib_wrappers.c").read_text()
        # MPI_Count arrays are summed as 64-bit (flag 1), int arrays as int (flag 0)
        assert "mpib_b_alltoallv(&mpib_b, mpib_p_sendbuf, mpib_p_sendcounts, 1," in src


def test_generator_odd_declarations(tmp_path):
    res, t = _gen(tmp_path, "--preprocessed", str(DATA / "odd_header.i"))
    assert set(t) >= {"MPI_Send", "MPI_Send_c", "MPI_Group_range_incl", "MPI_Unnamed",
                      "MPI_Keyval", "MPI_Recv"}
    assert "MPI_No_pmpi" not in t and "MPI_Wtime" not in t  # no PMPI / not int
    assert t["MPI_Bcast"] == ("coll.blocking", "-")  # type check failed: no bytes, a warning
    assert "MPI_Bcast: argument 2" in res.stderr
    src = (tmp_path / "mpib_wrappers.c").read_text()
    assert "int mpib_p_ranges[][3]" in src
    assert "int (*mpib_p_copy_fn)(int, void *)" in src


# ---- builds ------------------------------------------------------------------------------
def _run(built, tmp_path, mode="normal", np=2):
    stack, _, progs = built
    argv = [stack.launcher, "-np", str(np), str(progs / "known_calls"), mode]
    return profile.run.run_profiled(argv, stack=stack, out_dir=tmp_path / "prof", timeout=TIMEOUT)


def _ranks(out: Path) -> dict[int, dict]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text())
            for p in out.glob("rank-*.json") if "pcontrol" not in p.name}


def _bins(f) -> dict[int, int]:
    return {e[0]: e[1] for e in f["hist"]}


def _bin_bytes(f) -> dict[int, int]:
    """Bytes of the calls in each bin (the 4th element of a bin)."""
    return {e[0]: e[3] for e in f["hist"]}


def test_known_calls_exact(built, tmp_path):
    run = _run(built, tmp_path)
    assert run.result.ok, run.result.stderr
    assert run.status == "done"
    d = run.doc
    assert d["complete"] and d["ranks"] == 2 and d["reason"] == "finalize"
    f = d["functions"]
    assert (f["MPI_Send"]["calls"], f["MPI_Send"]["bytes_sent"]) == (10, 10000)
    assert _bins(f["MPI_Send"]) == {512: 10}
    # MPI_Recv posted 4096 B with MPI_STATUS_IGNORE: bytes come from the real status
    assert (f["MPI_Recv"]["calls"], f["MPI_Recv"]["bytes_recv"]) == (10, 10000)
    assert f["MPI_Recv"]["recv_unknown"] == 0 and _bins(f["MPI_Recv"]) == {512: 10}
    assert (f["MPI_Isend"]["calls"], f["MPI_Isend"]["bytes_sent"]) == (5, 5120)
    assert _bins(f["MPI_Isend"]) == {1024: 5}
    irecv = f["MPI_Irecv"]  # 2 KiB posted, 1 KiB arrived: learned when Waitall completes
    assert (irecv["calls"], irecv["bytes_recv"], irecv["recv_unknown"],
            irecv["bytes_recv_posted"]) == (5, 5120, 0, 0)
    assert _bins(irecv) == {1024: 5} and d["recv_tracking"] is True
    # bytes per bin: the call's size (sent, else received, else posted), summed; the 2 KiB
    # posted by each Irecv were replaced by the 1 KiB received when Waitall completed it
    assert _bin_bytes(irecv) == {1024: 5120}
    assert _bin_bytes(f["MPI_Send"]) == {512: 10000} == _bin_bytes(f["MPI_Recv"])
    assert _bin_bytes(f["MPI_Allreduce"]) == {512: 4800}
    assert _bin_bytes(f["MPI_Bcast"]) == {256: 1024}  # root 2 x 256 sent, other 2 x 256 recv
    assert _bin_bytes(f["MPI_Alltoallv"]) == {8: 12, 16: 28}  # what each rank sent
    assert f["MPI_Waitall"]["calls"] == 2 and f["MPI_Waitall"]["class"] == "pt2pt.wait"
    ar = f["MPI_Allreduce"]
    assert (ar["calls"], ar["bytes_sent"], ar["bytes_recv"]) == (6, 4800, 4800)
    assert _bins(ar) == {512: 6} and ar["per_rank_calls"] == [3, 3]
    bc = f["MPI_Bcast"]
    assert (bc["calls"], bc["bytes_sent"], bc["bytes_recv"]) == (4, 512, 512)
    assert _bins(bc) == {256: 4}
    a2a = f["MPI_Alltoallv"]  # rank 0 sends 1+2 ints, gets 1+3; rank 1 sends 3+4, gets 2+4
    assert (a2a["calls"], a2a["bytes_sent"], a2a["bytes_recv"]) == (2, 40, 40)
    assert _bins(a2a) == {8: 1, 16: 1}
    assert 0 < d["mpi_fraction"]["min"] <= d["mpi_fraction"]["max"] < 1
    assert d["overhead"]["ns_per_call"]["mean"] > 0
    assert {d["most_loaded_rank"]["rank"], d["least_loaded_rank"]["rank"]} <= {0, 1}
    # per rank and per-rank raw files
    r = _ranks(run.out_dir)
    assert set(r) == {0, 1} and all(x["complete"] for x in r.values())
    assert r[0]["functions"]["MPI_Send"]["bytes_sent"] == 10000
    assert "MPI_Send" not in r[1]["functions"]
    assert r[0]["functions"]["MPI_Alltoallv"]["bytes_sent"] == 12
    assert r[0]["functions"]["MPI_Alltoallv"]["bytes_recv"] == 16
    assert r[0]["functions"]["MPI_Bcast"]["bytes_sent"] == 512  # 2 x 256 B as root
    assert r[1]["functions"]["MPI_Bcast"]["bytes_recv"] == 512
    # the Python merge of the rank files agrees with the library's merge at MPI_Finalize
    py = profile.document.merge_rank_docs(list(r.values()))
    for name, fn in d["functions"].items():
        for k in ("calls", "bytes_sent", "bytes_recv", "bytes_recv_posted", "recv_unknown",
                  "per_rank_calls"):
            assert py["functions"][name][k] == fn[k], (name, k)
        assert py["functions"][name]["hist"] == [[lo, c, pytest.approx(t), b]
                                                 for lo, c, t, b in fn["hist"]], name
    assert py["calls_total"] == d["calls_total"]


# (calls, bytes_sent, bytes_recv, bytes_recv_posted, recv_unknown) per rank, from the
# arguments in profiler/tests/coverage.c
COVERAGE = {
    "MPI_Sendrecv": [(1, 100, 100, 0, 0), (1, 100, 100, 0, 0)],
    "MPI_Gather": [(1, 40, 80, 0, 0), (1, 40, 0, 0, 0)],
    "MPI_Gatherv": [(1, 4, 12, 0, 0), (1, 8, 0, 0, 0)],
    "MPI_Scatter": [(1, 80, 40, 0, 0), (1, 0, 40, 0, 0)],
    "MPI_Scatterv": [(1, 12, 4, 0, 0), (1, 0, 8, 0, 0)],
    "MPI_Allgather": [(2, 28, 48, 0, 0), (2, 28, 48, 0, 0)],  # + intercomm: 1 remote block
    "MPI_Allgatherv": [(1, 4, 12, 0, 0), (1, 8, 12, 0, 0)],
    "MPI_Alltoall": [(1, 24, 24, 0, 0), (1, 24, 24, 0, 0)],
    "MPI_Alltoallw": [(1, 8, 12, 0, 0), (1, 16, 12, 0, 0)],
    "MPI_Reduce": [(1, 56, 0, 0, 0), (1, 56, 56, 0, 0)],
    "MPI_Reduce_scatter_block": [(1, 32, 16, 0, 0), (1, 32, 16, 0, 0)],
    "MPI_Reduce_scatter": [(1, 16, 4, 0, 0), (1, 16, 12, 0, 0)],
    "MPI_Scan": [(1, 16, 16, 0, 0), (1, 16, 16, 0, 0)],
    "MPI_Allreduce": [(1, 40, 40, 0, 0), (1, 40, 40, 0, 0)],
    "MPI_Ibcast": [(1, 50, 0, 0, 0), (1, 0, 50, 0, 0)],
    "MPI_Iallreduce": [(1, 16, 16, 0, 0), (1, 16, 16, 0, 0)],
    "MPI_Send_init": [(1, 64, 0, 0, 0)] * 2,
    "MPI_Recv_init": [(1, 0, 0, 64, 1)] * 2,
    "MPI_Startall": [(3, 0, 0, 0, 0)] * 2,
    "MPI_Isend": [(7, 155, 0, 0, 0)] * 2,
    "MPI_Irecv": [(5, 0, 105, 0, 0)] * 2,  # sizes learned from Test/Wait/Waitany/some/all
    "MPI_Probe": [(1, 0, 0, 0, 0)] * 2,
    "MPI_Recv": [(1, 0, 33, 0, 0)] * 2,
    "MPI_Mprobe": [(1, 0, 0, 0, 0)] * 2,
    "MPI_Mrecv": [(1, 0, 17, 0, 0)] * 2,
    "MPI_Put": [(1, 40, 0, 0, 0), None],
    "MPI_Get": [None, (1, 0, 20, 0, 0)],
    "MPI_Fetch_and_op": [(1, 4, 4, 0, 0)] * 2,
    "MPI_Win_fence": [(3, 0, 0, 0, 0)] * 2,
    "MPI_File_write_at": [(1, 1000, 0, 0, 0)] * 2,
    "MPI_File_read_at": [(1, 0, 1000, 0, 0)] * 2,
    "MPI_Comm_split": [(2, 0, 0, 0, 0)] * 2,
    "MPI_Comm_free": [(7, 0, 0, 0, 0)] * 2,
    "MPI_Intercomm_create": [(1, 0, 0, 0, 0)] * 2,
    "MPI_Bcast": [(1, 40, 0, 0, 0), (1, 0, 40, 0, 0)],  # intercomm: MPI_ROOT side sends
    "MPI_Cart_create": [(2, 0, 0, 0, 0)] * 2,
    "MPI_Dist_graph_create_adjacent": [(1, 0, 0, 0, 0)] * 2,
    # neighbourhood collectives: peers from the topology; MPI_PROC_NULL blocks move nothing
    "MPI_Neighbor_allgather": [(1, 12, 12, 0, 0)] * 2,  # line: one real neighbour each
    "MPI_Neighbor_alltoall": [(1, 16, 16, 0, 0)] * 2,   # ring of two: 2 blocks each way
    "MPI_Neighbor_alltoallv": [(1, 4, 8, 0, 0), (1, 8, 4, 0, 0)],  # not 5/7/9 ints
    "MPI_Neighbor_alltoallw": [(1, 12, 8, 0, 0), (1, 8, 12, 0, 0)],
    "MPI_Ineighbor_allgatherv": [(1, 4, 8, 0, 0), (1, 8, 4, 0, 0)],
}
# MPI-4 only (MPICH 4.0): received sizes of Isendrecv stay unknown (posted 64 B each)
COVERAGE_MPI4 = {
    "MPI_Isendrecv": [(2, 10, 0, 128, 2), (2, 31, 0, 128, 2)],
    "MPI_Isendrecv_replace": [(1, 5, 0, 5, 1)] * 2,
    "MPI_Send_c": [(1, 300, 0, 0, 0), None],
    "MPI_Recv_c": [None, (1, 0, 300, 0, 0)],
}
CLASSES = {"MPI_Ibcast": "coll.nonblocking", "MPI_Startall": "pt2pt.persistent",
           "MPI_Neighbor_alltoallw": "coll.neighbor", "MPI_Cart_create": "comm",
           "MPI_Mprobe": "pt2pt.probe", "MPI_Put": "rma", "MPI_File_read_at": "io",
           "MPI_Comm_split": "comm", "MPI_Win_fence": "rma", "MPI_Sendrecv": "pt2pt.sendrecv"}


def test_coverage_bytes(built, tmp_path):
    stack, _, progs = built
    argv = [stack.launcher, "-np", "2", str(progs / "coverage"), str(tmp_path)]
    run = profile.run.run_profiled(argv, stack=stack, out_dir=tmp_path / "prof", timeout=TIMEOUT)
    assert run.result.ok, run.result.stderr[-3000:]
    ranks = _ranks(run.out_dir)
    keys = ("calls", "bytes_sent", "bytes_recv", "bytes_recv_posted", "recv_unknown")
    want_all = {**COVERAGE, **(COVERAGE_MPI4 if stack.large_count else {})}
    for name, per_rank in want_all.items():
        for r, want in enumerate(per_rank):
            got = ranks[r]["functions"].get(name)
            assert (got and tuple(got[k] for k in keys)) == (want or None), (name, r)
    for name, cls in CLASSES.items():
        assert run.doc["functions"][name]["class"] == cls
    assert _bins(ranks[0]["functions"]["MPI_Irecv"]) == {4: 1, 8: 1, 16: 2, 32: 1}
    assert _bins(ranks[0]["functions"]["MPI_Neighbor_alltoallv"]) == {4: 1}
    if stack.large_count:  # MPI-4 large-count entry points are intercepted too
        # the zero-byte send part: binned by the posted receive size
        assert _bins(ranks[0]["functions"]["MPI_Isendrecv"]) == {8: 1, 64: 1}
    else:
        assert not any(n.endswith("_c") for n in run.doc["functions"])


def test_irecv_sizes_unknown_without_tracking(built, tmp_path):
    stack, _, progs = built
    argv = [stack.launcher, "-np", "2", str(progs / "known_calls")]
    run = profile.run.run_profiled(argv, stack=stack, out_dir=tmp_path / "prof", timeout=TIMEOUT,
                                 extra_env={"MPIBENCH_PROFILE_TRACK": "0"})
    assert run.result.ok, run.result.stderr
    irecv = run.doc["functions"]["MPI_Irecv"]
    assert run.doc["recv_tracking"] is False
    assert (irecv["bytes_recv"], irecv["recv_unknown"], irecv["bytes_recv_posted"]) == \
        (0, 5, 10240)
    assert _bins(irecv) == {2048: 5}


def test_signal_writes_partial_files(built, tmp_path):
    run = _run(built, tmp_path, "signal")
    assert not run.result.ok
    r = _ranks(run.out_dir)
    assert r[0]["reason"] == "signal:15" and r[0]["complete"] is False
    assert r[0]["functions"]["MPI_Allreduce"]["calls"] == 3
    assert r[0]["functions"]["MPI_Send"]["bytes_sent"] == 10000
    if 1 in r:  # Open MPI stops rank 1 with SIGTERM (caught); Hydra uses SIGKILL
        assert r[1]["reason"] == "signal:15"
        assert r[1]["functions"]["MPI_Recv"]["bytes_recv"] == 10000
    assert run.doc and run.doc["complete"] is False
    assert run.doc["functions"]["MPI_Send"]["bytes_sent"] == 10000
    assert run.status == "failed"


@pytest.fixture(scope="session")
def timeout_runs(found_stacks, tmp_path_factory):
    """{stack name: run} of `known_calls hang` under a 20 s timeout, one launch per stack, both
    at once. The ranks must have sent before the dump: with timeout 8 the dump came 6 s after
    the launch, which a loaded machine's MPI start-up can take; 20 gives 15 s. Each run lasts
    its timeout however fast the machine is (hang waits for it), so side by side they cost
    one timeout, not two. Session-scoped: in the system tier, pytest groups the tests by
    `built`'s stack across this file and tests/profile/test_data_mpi.py, so this file is left
    and re-entered between the two stacks; at module scope the pair of runs (20 s) was made
    twice. The runs are read only."""
    from concurrent.futures import ThreadPoolExecutor

    from mpibench.stacks import find_stack

    argvs = {}
    for name in ("openmpi", "mpich"):
        try:
            stack = find_stack(name, found_stacks)
        except Exception:  # noqa: BLE001 - a missing stack: its test skips in `built`
            continue
        progs = profile.run.build_test_programs(stack)   # cached: `built` builds the same
        profile.run.build_profiler(stack)
        argvs[stack.name] = (stack, [stack.launcher, "-np", "2", str(progs / "known_calls"),
                                     "hang"])
    base = tmp_path_factory.mktemp("timeout")

    def one(name):
        stack, argv = argvs[name]
        return profile.run.run_profiled(argv, stack=stack, out_dir=base / name / "prof",
                                        timeout=20)

    with ThreadPoolExecutor(max(1, len(argvs))) as pool:
        return dict(zip(argvs, pool.map(one, argvs), strict=True))


def test_timeout_leaves_partial_profile(built, timeout_runs):
    stack, _, _progs = built
    run = timeout_runs[stack.name]
    # 5 s before the timeout every rank is asked to write (dump signal), then SIGTERMed
    assert run.status == "timeout"
    assert run.doc and run.doc["complete"] is False
    assert set(run.doc["reason"].split(",")) <= {"dump-signal", "signal:15"}
    assert run.doc["ranks_missing"] == []
    assert run.doc["functions"]["MPI_Send"]["bytes_sent"] == 10000


def test_abort_writes_partial_file(built, tmp_path):
    run = _run(built, tmp_path, "abort")
    assert run.result.returncode != 0 and not run.result.timed_out
    r = _ranks(run.out_dir)
    assert r[0]["reason"] == "abort" and r[0]["functions"]["MPI_Abort"]["calls"] == 1
    assert r[0]["functions"]["MPI_Send"]["calls"] == 10
    # Open MPI stops the other ranks with SIGTERM (caught: a partial file); Hydra uses SIGKILL
    if 1 in r:
        assert r[1]["reason"].startswith("signal:")
    assert not (run.out_dir / "profile.json").exists()
    assert run.doc["complete"] is False


def test_exit_without_finalize(built, tmp_path):
    """Rank 0 exits without MPI_Finalize and leaves its counters (atexit). The other rank
    exits only once rank 0's file is there: Hydra SIGKILLs the remaining ranks as soon as one
    exits without finalizing, and rank 0, descheduled under load, had sometimes not run its
    atexit handler yet (no rank-0 file). Whether the launcher lets rank 1 write is its own
    business."""
    run = _run(built, tmp_path, "exit")  # launchers may call this an error: do not insist
    r = _ranks(run.out_dir)
    assert r[0]["reason"] == "exit-without-finalize" and r[0]["complete"] is False
    assert r[0]["functions"]["MPI_Barrier"]["calls"] == 1
    assert run.doc["complete"] is False


def test_pcontrol_snapshot_pause_resume(built, tmp_path):
    run = _run(built, tmp_path, "pcontrol")
    assert run.result.ok, run.result.stderr
    snap = json.loads((run.out_dir / "rank-0.pcontrol-1.json").read_text())
    assert snap["reason"] == "pcontrol" and snap["complete"] is False
    assert "MPI_Barrier" not in snap["functions"]
    assert snap["functions"]["MPI_Send"]["calls"] == 10
    f = run.doc["functions"]
    assert f["MPI_Barrier"]["calls"] == 2  # 3 paused barriers per rank are not counted
    assert f["MPI_Pcontrol"]["calls"] == 6


def test_pcontrol_reset(built, tmp_path):
    run = _run(built, tmp_path, "reset")
    assert run.result.ok, run.result.stderr
    f = run.doc["functions"]
    assert sorted(f) == ["MPI_Barrier", "MPI_Pcontrol"]
    assert f["MPI_Barrier"]["calls"] == 2 and f["MPI_Pcontrol"]["calls"] == 2


def test_thread_multiple(built, tmp_path):
    run = _run(built, tmp_path, "threads")
    assert run.result.ok, run.result.stderr
    d = run.doc
    assert d["thread_level"] == 3 and d["recv_tracking"] is False
    assert d["functions"]["MPI_Send"]["calls"] == 8000
    assert d["functions"]["MPI_Send"]["bytes_sent"] == 64000
    # concurrent blocking receives: each thread's size from its own substituted status
    sr = d["functions"]["MPI_Sendrecv"]
    assert (sr["calls"], sr["bytes_sent"], sr["bytes_recv"], sr["recv_unknown"]) == \
        (400, 6400, 6400, 0)
    assert _bins(sr) == {16: 400}
    for x in _ranks(run.out_dir).values():
        assert x["threads"] >= 4 and x["thread_overflow"] is False
        per = [t["calls"] for t in x["per_thread"] if t["calls"]]
        assert sorted(per) == [2] + [1050] * 4  # main: Comm_size, Comm_rank


def test_more_threads_than_slots(built, tmp_path):
    """70 threads per rank, more than the 64 private slots: the rest share the overflow slot
    (atomic updates); nothing is lost."""
    run = _run(built, tmp_path, "manythreads")
    assert run.result.ok, run.result.stderr
    assert run.doc["functions"]["MPI_Send"]["calls"] == 2 * 70 * 1000
    assert run.doc["functions"]["MPI_Send"]["bytes_sent"] == 2 * 70 * 8000
    for x in _ranks(run.out_dir).values():
        assert x["thread_overflow"] is True and x["threads"] >= 70
        assert x["functions"]["MPI_Send"]["calls"] == 70 * 1000
        assert len(x["per_thread"]) == 64  # the private slots; the overflow slot is shared


# ---- merge, store, compare and CLI without MPI ---------------------------------------------
def test_collect_merges_rank_files_when_no_merged_document(tmp_path):
    for p in (DATA / "signal_mpich").glob("rank-*.json"):
        shutil.copy(p, tmp_path / p.name)
    doc = profile.document.collect_profile(tmp_path)
    assert doc["schema"] == "mpibench-profile" and doc["complete"] is False
    assert doc["reason"] == "signal:15" and doc["ranks_missing"] == []
    assert doc["functions"]["MPI_Recv"]["bytes_recv"] == 10000
    (tmp_path / "rank-1.json").unlink()
    doc = profile.document.collect_profile(tmp_path)
    assert doc["ranks_missing"] == [1]


def _doc_examples() -> dict[str, dict]:
    text = (REPO / "docs" / "profiler.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```json")[1:]]
    return {json.loads(b)["schema"]: json.loads(b) for b in blocks}


def test_docs_schema_examples_match_real_output():
    """The examples in docs/profiler.md name exactly the fields the library writes."""
    ex = _doc_examples()
    data = DATA / "known_calls_openmpi"
    merged = json.loads((data / "profile.json").read_text())
    rank = json.loads((data / "rank-0.json").read_text())
    for doc, real in ((ex["mpibench-profile"], merged), (ex["mpibench-profile-rank"], rank)):
        assert set(doc) == set(real)
        f_doc = next(iter(doc["functions"].values()))
        f_real = next(iter(real["functions"].values()))
        assert set(f_doc) == set(f_real)
    assert set(ex["mpibench-profile"]["per_rank"][0]) == set(merged["per_rank"][0])
    # the Python merge (after a crash) writes the same fields, plus the documented extras
    py = profile.document.merge_rank_docs([json.loads(p.read_text())
                                    for p in sorted(data.glob("rank-*.json"))])
    assert set(py) - set(merged) == {"merged_by", "ranks_missing"}
    assert set(merged) <= set(py)


def test_collect_rejects_newer_schema(tmp_path):
    d = json.loads((DATA / "known_calls_openmpi" / "profile.json").read_text())
    d["version"] = 99
    (tmp_path / "profile.json").write_text(json.dumps(d))
    from mpibench.errors import UsageError

    with pytest.raises(UsageError, match="newer"):
        profile.document.collect_profile(tmp_path)


def test_store_rows_compare_and_report(tmp_path):
    from rich.console import Console

    from mpibench.process import CommandResult
    from mpibench.stacks import Stack
    from mpibench.store import Store

    doc = profile.document.collect_profile(DATA / "known_calls_openmpi")
    stack = Stack(name="openmpi", kind="openmpi", mpicc="mpicc.openmpi")
    ok = CommandResult(["mpirun"], 0, "", "", 1.0)
    with Store(tmp_path / "t.db") as store:
        ids = []
        for label in ("a", "b"):
            run = profile.run.ProfileRun(stack, ["mpirun", "-np", "2", "x"], ["mpirun"],
                                       tmp_path, Path("lib.so"), ok, doc)
            ids.append(profile.document.store_profile(store, run, label=label))
        r = store.run(ids[0])
        assert (r["status"], r["source"], r["variant"]) == ("done", "profile", "a")
        assert profile.document.load_profile(store, ids[1])["functions"]["MPI_Send"]["calls"] == 10
        rows = {(x["benchmark"], x["metric"]): x for x in store.results([ids[0]])}
        send = rows[("profile:MPI_Send", "mpi_time")]
        assert send["unit"] == "us" and send["statistic"] == "sum" and send["np"] == 2
        assert send["extra"]["calls"] == 10 and send["extra"]["bytes_sent"] == 10000
        assert len(send["samples"]) == 2  # one per rank
        assert ("profile:MPI", "mpi_fraction") in rows
        # the generic comparison machinery takes the rows as they are
        from mpibench.report.judge import compare_groups

        cmp_generic = compare_groups(store, {"a": [ids[0]], "b": [ids[1]]}, "a")
        assert any(row.benchmark == "profile:MPI_Send" for row in cmp_generic.rows)
    con = Console(record=True, width=200)
    profile.document.render_report(doc, con)
    text = con.export_text()
    for want in ("Time in MPI per rank", "Time in MPI by family", "coll.blocking",
                 "Top 10 functions by time", "by calls",
                 "Message sizes", "512 B - <1 KiB", "profiler overhead",
                 "Messages by size, all functions that move data", "64 B - <1 KiB"):
        assert want in text


def test_inject_env_flags():
    env = {"LD_PRELOAD": "/x.so", "MPIBENCH_PROFILE_DIR": "/o"}
    argv, inj = profile.run.inject_env(["mpirun.openmpi", "-np", "2", "a"], env, "openmpi")
    assert inj and argv[:5] == ["mpirun.openmpi", "-x", "LD_PRELOAD=/x.so", "-x",
                                "MPIBENCH_PROFILE_DIR=/o"]
    argv, inj = profile.run.inject_env(["/usr/bin/mpiexec.hydra", "-np", "2", "a"], env, "mpich")
    assert inj and argv[1:4] == ["-genv", "LD_PRELOAD", "/x.so"]
    assert profile.run.inject_env(["srun", "a"], env, "openmpi") == (["srun", "a"], False)


@pytest.mark.parametrize("args,msg", [
    (["--timeout", "0", "--", "true"], "--timeout"),
    (["--timeout", "-5", "--", "true"], "--timeout"),
    (["--timeout", "nan", "--", "true"], "--timeout"),
    (["--top", "0", "--", "true"], "--top"),
    (["--", "/nonexistent/app", "-np", "2"], "not found"),
    (["--stack", "mpich", "--", "mpirun.openmpi", "-np", "2", "true"], "does not match"),
    (["--stack", "openmpi", "--", "mpiexec.hydra", "-np", "2", "true"], "does not match"),
])
@pytest.mark.system
def test_cli_bad_input_writes_nothing(tmp_path, capsys, args, msg):
    """Bad input: exit 2 with one line naming the value, before anything is built, launched
    or stored (a launcher of the other stack would load two MPI libraries into each rank)."""
    from mpibench.cli import main

    if "does not match" in msg and not (shutil.which("mpicc.mpich")
                                        and shutil.which("mpicc.openmpi")):
        pytest.skip("needs both stacks")
    db = tmp_path / "p.db"
    try:  # a value the argument parser refuses exits there, with the same status 2
        rc = main(["profile", "--db", str(db), "--out", str(tmp_path / "o"), *args])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1, err
    assert not db.exists() and not (tmp_path / "o").exists()
    assert not db.exists() and not (tmp_path / "o").exists()


def test_cli_profile_and_compare(built, tmp_path):
    stack, _, progs = built
    if stack.name != "openmpi":
        pytest.skip("one CLI round trip is enough")
    from mpibench.cli import main

    db = tmp_path / "p.db"
    for label in ("x", "y"):
        rc = main(["profile", "--db", str(db), "--label", label, "--out", str(tmp_path / label),
                   "--timeout", str(TIMEOUT), "--", stack.launcher, "-np", "2",
                   str(progs / "known_calls")])
        assert rc == 0
    from mpibench.store import Store

    with Store(db) as store:
        ids = [r["id"] for r in store.runs()]
    assert len(ids) == 2
    assert main(["profile", "--db", str(db), "--compare", *ids]) == 0
    assert main(["profile", "--db", str(db), "--compare", "x", "y"]) == 0  # by label
    assert main(["profile", "--db", str(db), "--compare", "x", "nope"]) == 2
    assert main(["profile", "--db", str(db), "--show", ids[0], "--json"]) == 0
    assert main(["profile", "--db", str(db)]) == 2  # no command: usage error


@pytest.mark.system
def test_gromacs_under_profiler(openmpi, gromacs_tpr, tmp_path):
    argv = [openmpi.launcher, "-np", "2", "gmx_mpi", "mdrun", "-s", str(gromacs_tpr),
            "-nsteps", "200", "-ntomp", "1", "-deffnm", str(tmp_path / "md")]
    run = profile.run.run_profiled(argv, stack=openmpi, out_dir=tmp_path / "prof",
                                 timeout=TIMEOUT, extra_env=GMX_ENV)
    assert run.result.ok, run.result.stderr[-3000:]
    d = run.doc
    assert d["complete"] and d["ranks"] == 2
    f = d["functions"]
    # domain decomposition halo exchange, PME redistribution, global reductions, set-up
    for name in ("MPI_Sendrecv", "MPI_Alltoall", "MPI_Allreduce", "MPI_Bcast",
                 "MPI_Comm_split"):
        assert name in f, sorted(f)
    assert f["MPI_Sendrecv"]["calls"] > 100 and f["MPI_Sendrecv"]["bytes_sent"] > 0
    assert f["MPI_Sendrecv"]["ranks_calling"] == 2
    for name in ("MPI_Sendrecv", "MPI_Alltoall", "MPI_Allreduce"):
        assert sum(e[1] for e in f[name]["hist"] if e[0] > 0) > 0, name
    assert 0 < d["mpi_fraction"]["min"] <= d["mpi_fraction"]["max"] < 1
    assert all(0 < r["mpi_fraction"] < 1 for r in d["per_rank"])
