"""`mpibench run` end to end: bad input exits 2 and leaves no store; real runs on both stacks."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import MPI_TIMEOUT

MPIBENCH = [sys.executable, "-m", "mpibench"]


def mpibench(*args, cwd, timeout=MPI_TIMEOUT, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([*MPIBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


@pytest.mark.parametrize("args, expect", [
    (["Pingpng"], "unknown benchmark 'Pingpng'"),
    (["PingPong", "--sizes", "0:x"], "bad size range '0:x'"),
    (["PingPong", "--sizes", "5:2"], "MIN (5) is larger than MAX (2)"),
    (["PingPong", "--sizes=-4"], "bad message size '-4'"),
    (["PingPong", "--np", "0"], "--np must be >= 1, got 0"),
    (["PingPong", "--stack", "nosuchmpi"], "unknown stack 'nosuchmpi'"),
    (["PingPong", "--stack", "mpich", "--transport", "ofi"],
     "transport 'ofi' is not available for mpich"),
    (["PingPong", "--stack", "mpich", "--mca", "btl", "tcp"], "--mca applies to Open MPI only"),
])
def test_bad_input_exits_2_without_results(tmp_path, args, expect):
    res = mpibench("run", *args, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and expect in lines[0], res.stderr
    assert not (tmp_path / "mpibench.db").exists()
    assert not (tmp_path / "mpibench-runs").exists()


def test_stack_whose_compiler_fails(tmp_path):
    src = tmp_path / "src" / "core"
    src.mkdir(parents=True)
    (src / "Makefile").write_text("$(BUILD)/mpibench-core: x.c\n\t$(MPICC) -o $@ x.c\n")
    (src / "x.c").write_text("int main(void) { syntax error here }\n")
    res = mpibench("run", "PingPong", "--stack", "openmpi", cwd=tmp_path,
                   env={"MPIBENCH_SOURCE_ROOT": str(tmp_path / "src"),
                        "MPIBENCH_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 2
    assert "building core for stack 'openmpi'" in res.stderr
    assert "error" in res.stderr and "x.c" in res.stderr
    assert not (tmp_path / "mpibench.db").exists()


@pytest.mark.mpi
def test_real_two_rank_run_on_both_stacks(tmp_path):
    res = mpibench("run", "PingPong", "Allreduce", "--stack", "openmpi", "--stack", "mpich",
                   "--np", "2", "--sizes", "0,8,4K", "--max-time", "0.05", "--repeats", "2",
                   "--timeout", "30", "--format", "json", "--markdown", "out.md", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    if os.geteuid() == 0:
        assert res.stderr.count("OMPI_ALLOW_RUN_AS_ROOT=1") == 1
    con = sqlite3.connect(tmp_path / "mpibench.db")
    runs = con.execute("SELECT variant, status, seq FROM runs ORDER BY seq").fetchall()
    # interleaved: openmpi, mpich, openmpi, mpich
    assert [r[0] for r in runs] == ["openmpi", "mpich", "openmpi", "mpich"]
    assert all(r[1] == "done" for r in runs)
    rows = con.execute("SELECT u.variant, r.benchmark, r.size, r.n, r.median, r.ci_low, "
                       "r.ci_high, r.first FROM results r JOIN runs u ON u.id=r.run_id "
                       "WHERE r.status='ok'").fetchall()
    got = {(v, b, s) for v, b, s, *_ in rows}
    for v in ("openmpi", "mpich"):
        for b in ("PingPong", "Allreduce"):
            for s in (0, 8, 4096):
                assert (v, b, s) in got
    for _v, _b, _s, n, med, lo, hi, first in rows:
        assert n >= 1 and med > 0 and first is not None
        if lo is not None:
            assert lo <= med <= hi
    versions = {json.loads(fp)["stack"]["library_version"].split()[0]
                for (fp,) in con.execute("SELECT json FROM fingerprints")}
    assert versions == {"Open", "MPICH"}
    assert (tmp_path / "out.md").read_text().count("|") > 20
