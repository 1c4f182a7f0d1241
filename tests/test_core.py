"""mpibench-core (core/): every benchmark on both stacks at np=2 and 3 (4 where it matters),
validation, the watchdog, bad arguments, large counts, fixed-count mode, the JSON Lines schema
and the C statistics self-test.  Every launch has a timeout; nothing asserts on speed."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from _coreutil import STACKS, available, build, check_schema, launch

ALL = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband", "Allreduce",
       "Reduce", "Reduce_scatter", "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter",
       "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier"]
SINGLE_PAIR = {"PingPong", "PingPing", "Uniband", "Biband"}
QUICK = ["--sizes", "0,4,1K", "--max-time", "0.03", "--min-samples", "5", "--quiet"]

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="session")
def core(tmp_path_factory):
    """Build the core once per stack per session, through the Makefile contract."""
    exes = {}
    for stack in STACKS:
        if available(stack):
            exes[stack] = build(stack, tmp_path_factory.mktemp(f"core-{stack}"))
    return exes


def _exe(core, stack):
    if stack not in core:
        pytest.skip(f"{stack} is not installed")
    return core[stack]


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
@pytest.mark.parametrize("np", [2, 3])
def test_every_benchmark_validates(core, stack, np, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch(stack, _exe(core, stack), np, [*QUICK, "all"], out, timeout=240)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    h = run.header
    assert h["np"] == np and sum(h["ranks_per_host"].values()) == np
    assert h["timer"]["overhead_us"] > 0 and h["timer"]["resolution_us"] > 0
    assert h["options"]["benchmarks"] == ALL
    got = {(r["benchmark"], r["size"]) for r in run.results}
    want = {(b, s) for b in ALL if b != "Barrier" for s in (0, 4, 1024)} | {("Barrier", 0)}
    assert got == want
    for r in run.results:
        assert r["status"] == "ok", r
        assert r["validation"] == {"checked": True, "ok": True}
        assert r["n"] == len(r["samples_us"]) >= 1
        assert r["ci_low_us"] <= r["median_us"] <= r["ci_high_us"]
        assert r["min_us"] <= r["median_us"] <= r["max_us"]
        assert r["stop_reason"] in ("target", "max_time", "max_samples")
        assert r["batched"] == (r["batch"] > 1)
        if r["benchmark"] in SINGLE_PAIR:
            assert r["active_ranks"] == 2 and r["idle_ranks"] == np - 2
    assert run.footer == {"record": "footer", "status": "ok", "elapsed_s": run.footer["elapsed_s"]}


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_np4_oversubscribed_v_variants(core, stack, tmp_path):
    """Uneven per-rank blocks (Reduce_scatter) and v-variant displacements only show up with
    more ranks; MPICH busy-polls when oversubscribed, so few fixed iterations."""
    out = tmp_path / "r.jsonl"
    benches = ["Alltoallv", "Alltoall", "Allgatherv", "Gatherv", "Scatterv", "Reduce_scatter",
               "Exchange", "PingPong"]
    run = launch(stack, _exe(core, stack), 4,
                 ["--sizes", "0,4,12,1K", "--iterations", "4", "--warmup", "1", "--quiet",
                  *benches], out, timeout=240)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    assert len(run.results) == len(benches) * 4
    for r in run.results:
        assert r["status"] == "ok" and r["validation"]["ok"], r
        assert r["iterations"] == 4 and r["stop_reason"] == "iterations"


def test_text_view_openmpi(core, tmp_path):
    run = launch("openmpi", _exe(core, "openmpi"), 3,
                 ["--sizes", "0,1K", "--max-time", "0.03", "PingPong", "Sendrecv", "Uniband",
                  "Allreduce"],
                 None, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    text = run.res.stdout
    assert "10^6 bytes per second" in text and "median" in text
    assert "Warm-up             : 2 samples per size, discarded" in text
    assert "# Benchmarking PingPong" in text and "( 1 additional process waiting" in text
    assert "#bytes #repetitions      t[usec] median[usec]" in text
    assert "Mbytes/sec      Msg/sec" in text
    assert "t_min[usec]  t_max[usec]  t_avg[usec]" in text
    sendrecv = text.split("# Benchmarking Sendrecv")[1].split("# Benchmarking")[0]
    assert "t_avg[usec] median[usec]      ci95   Mbytes/sec" in sendrecv
    assert "additional process" not in sendrecv  # Sendrecv runs on every rank (IMB chain)


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_debug_corrupt_is_caught(core, stack, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch(stack, _exe(core, stack), 3,
                 ["--sizes", "0,1K", "--max-time", "0.03", "--quiet", "--debug-corrupt", "1K",
                  "PingPong", "Allreduce", "Alltoall", "Bcast"], out, timeout=120)
    assert run.res.returncode == 1
    check_schema(run.records)
    bad = [r for r in run.results if r["status"] == "validation_failed"]
    assert {r["benchmark"] for r in bad} == {"PingPong", "Allreduce", "Alltoall", "Bcast"}
    for r in bad:
        v = r["validation"]
        assert r["size"] == 1024 and v["ok"] is False and v["index"] == 0
        assert v["expected"] != v["got"] and 0 <= v["rank"] < 3
        assert f"rank {v['rank']}" in r["reason"]
    assert all(r["status"] == "ok" for r in run.results if r["size"] == 0)
    assert run.footer["status"] == "failed"


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_debug_stall_hits_watchdog(core, stack, tmp_path):
    out = tmp_path / "r.jsonl"
    t0 = time.monotonic()
    run = launch(stack, _exe(core, stack), 2,
                 ["--sizes", "0,1K,4K", "--max-time", "0.03", "--quiet", "--timeout", "2",
                  "--debug-stall", "1K", "PingPong"], out, timeout=60)
    took = time.monotonic() - t0
    assert not run.res.timed_out and run.res.returncode != 0
    assert took < 30, f"watchdog exit took {took:.1f}s"
    check_schema(run.records)
    res = run.results
    assert [r["status"] for r in res] == ["ok", "timeout"]
    assert res[1]["size"] == 1024 and "--timeout 2" in res[1]["reason"]
    assert run.footer["status"] == "timeout"


BAD_ARGS = [
    ["--sizes", "0:x", "PingPong"], ["--sizes", "5:2", "PingPong"], ["--sizes", "-1", "PingPong"],
    ["--sizes", "1,,2", "PingPong"], ["--sizes", "4Q", "PingPong"], ["NoSuchBench"], [],
    ["--target", "abc", "PingPong"], ["--max-samples", "0", "PingPong"], ["--bogus", "PingPong"],
    ["--iterations-volume", "1M", "PingPong"], ["--sizes"], ["--sync", "clock", "PingPong"],
]


@pytest.mark.parametrize("args", BAD_ARGS, ids=[" ".join(a) or "none" for a in BAD_ARGS])
def test_bad_args_exit_2_with_one_line(core, args):
    exe = _exe(core, "openmpi")
    p = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpibench-core: ")


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_bad_args_under_launcher(core, stack, tmp_path):
    run = launch(stack, _exe(core, stack), 2, ["--sizes", "0:x", "PingPong"], None, timeout=60)
    assert run.res.returncode == 2
    assert run.res.stderr.count("bad --sizes range '0:x'") == 1  # rank 0 only


def test_large_count_unsupported_on_openmpi(core, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch("openmpi", _exe(core, "openmpi"), 2,
                 ["--sizes", "1K,2M,3G", "--max-time", "0.03", "--quiet", "--mem-limit", "1M",
                  "PingPong", "Allgatherv", "Allreduce"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    st = {(r["benchmark"], r["size"]): r for r in run.results}
    assert st[("PingPong", 1024)]["status"] == "ok"
    # decided before allocating: no 3 GiB buffers on a 1 MiB limit
    big = st[("PingPong", 3 << 30)]
    assert big["status"] == "unsupported"
    assert big["reason"].startswith("needs MPI-4 large-count calls; Open MPI")
    assert "is MPI-3.1" in big["reason"]
    assert st[("PingPong", 2 << 20)]["status"] == "skipped"
    assert "--mem-limit" in st[("PingPong", 2 << 20)]["reason"]
    assert st[("Allgatherv", 3 << 30)]["status"] == "unsupported"
    # 3 GiB of floats is 805M elements: an int count, so only the memory limit stops it
    assert st[("Allreduce", 3 << 30)]["status"] == "skipped"
    assert run.header["large_count"] is False


def test_large_count_mem_limit_skip_on_mpich(core, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch("mpich", _exe(core, "mpich"), 2,
                 ["--sizes", "1K,3G", "--max-time", "0.03", "--quiet", "--mem-limit", "64M",
                  "PingPong", "Alltoall"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    assert run.header["large_count"] is True
    big = [r for r in run.results if r["size"] == 3 << 30]
    assert [r["status"] for r in big] == ["skipped", "skipped"]
    assert all("over the memory limit" in r["reason"] for r in big)


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_fixed_iterations_and_imb_volume_rule(core, stack, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch(stack, _exe(core, stack), 2,
                 ["--sizes", "0,1K,64K", "--iterations", "30", "--iterations-volume", "1M",
                  "--quiet", "PingPong", "Allreduce"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    for r in run.results:
        want = 30 if r["size"] <= 1024 else 16  # 1 MiB / 64 KiB
        assert r["iterations"] == want and r["stop_reason"] == "iterations", r
        assert r["iterations"] == r["n"] * r["batch"]


def test_root_shift_and_off_cache(core, tmp_path):
    out = tmp_path / "r.jsonl"
    rooted = ["Reduce", "Gather", "Gatherv", "Scatter", "Scatterv", "Bcast"]
    run = launch("openmpi", _exe(core, "openmpi"), 3,
                 ["--sizes", "0,4,1K", "--iterations", "12", "--quiet", "--root-shift",
                  "--off-cache", *rooted, "Allreduce"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    assert run.header["options"]["root_shift"] and run.header["options"]["off_cache"]
    for r in run.results:
        assert r["status"] == "ok" and r["validation"]["ok"], r
        assert r["buffer_copies"] >= 2


@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_sync_window_schedule(core, stack, tmp_path):
    """Samples started on synchronised clocks instead of barriers: results stay valid, and
    samples that started late are counted, not hidden."""
    out = tmp_path / "r.jsonl"
    run = launch(stack, _exe(core, stack), 2,
                 ["--sizes", "0,1K", "--max-time", "0.2", "--quiet", "--sync", "window",
                  "PingPong", "Allreduce", "Bcast"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    assert run.header["options"]["sync"] == "window"
    for r in run.results:
        assert r["validation"]["ok"] and r["sync"] == "window", r
        if r["status"] == "ok":
            assert r["late_samples"] >= 0 and r["clock_offset_max_us"] >= 0
            assert r["n"] == len(r["samples_us"]) > 0
        else:  # a busy machine can preempt every scheduled start: said so, not hidden
            assert r["status"] == "skipped" and "started late" in r["reason"], r
            assert r["late_samples"] > 0


def test_futility_stops_an_unreachable_target(core, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch("openmpi", _exe(core, "openmpi"), 2,
                 ["--sizes", "64K", "--target", "0.0001", "--max-time", "0.4", "--futility",
                  "--quiet", "PingPong"], out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    (r,) = run.results
    assert r["stop_reason"] == "futile" and r["status"] == "ok"
    assert r["n"] >= 20 and run.header["options"]["futility"] is True


def test_jsonl_to_stdout_moves_text_to_stderr(core):
    run = launch("mpich", _exe(core, "mpich"), 2,
                 ["--sizes", "0:2", "--max-time", "0.03", "--jsonl", "-", "PingPong"], None,
                 timeout=60)
    assert run.res.returncode == 0, run.res.stderr_tail()
    recs = [json.loads(ln) for ln in run.res.stdout.splitlines() if ln.strip()]
    check_schema(recs)
    assert [r["size"] for r in recs if r["record"] == "result"] == [0, 1, 2, 4]
    assert "# Benchmarking PingPong" in run.res.stderr


def test_size_specs(core):
    exe = _exe(core, "openmpi")
    cases = {"3:5": [8, 16, 32], "0:2": [0, 1, 2, 4], "1K,0,1k,2KiB": [0, 1024, 2048],
             "0:0": [0, 1]}
    for spec, want in cases.items():
        p = subprocess.run([str(exe), "--sizes", spec, "--jsonl", "-", "--quiet",
                            "--max-time", "0.01", "Barrier"], capture_output=True, text=True,
                           timeout=60, env=_singleton_env())
        assert p.returncode == 0, p.stderr
        hdr = json.loads(p.stdout.splitlines()[0])
        assert hdr["options"]["sizes"] == want, spec


def _singleton_env():
    import os

    env = dict(os.environ)
    env.update(STACKS["openmpi"]["env"])
    return env


def test_statistics_self_test(core):
    """Median-CI ranks against binomial tables, coverage on uniform/exponential/normal/
    lognormal samples, numpy-compatible quantiles, and the stopping rule on known spreads."""
    p = subprocess.run([str(_exe(core, "openmpi")), "--self-test"], capture_output=True,
                       text=True, timeout=120)
    recs = [json.loads(ln) for ln in p.stdout.splitlines()]
    failed = [r for r in recs if r["record"] == "selftest" and not r["ok"]]
    assert not failed and p.returncode == 0, failed
    assert {r["check"] for r in recs if r["record"] == "selftest"} >= {
        "ci_ranks", "ci_coverage", "quantiles", "stopping"}
