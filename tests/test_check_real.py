"""`mpibench check` on real launches: Open MPI over shared memory vs TCP (a real regression,
tiny sizes, 3 interleaved launches each) must fail the gate; the same stack under two names
(A/A) must pass. Made with `mpibench run` in a subprocess with a timeout; nothing asserts
on a time."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from mpibench.process import run_command

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def _mpibench(args: list[str], cwd, timeout: float = 240):
    res = run_command([sys.executable, "-m", "mpibench", *args], cwd=cwd, timeout=timeout,
                      env={**os.environ, "COLUMNS": "200"})
    assert not res.timed_out, f"mpibench {' '.join(args)} timed out"
    return res


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    if not shutil.which("mpicc.openmpi"):
        pytest.skip("needs Debian's Open MPI (make setup)")
    d = tmp_path_factory.mktemp("gate")
    db = d / "gate.db"
    r = _mpibench(["run", "PingPong", "--variant", "shm=openmpi:shm",
                   "--variant", "tcp=openmpi:tcp", "--variant", "shm2=openmpi:shm",
                   "--np", "2", "--sizes", "0,8,64", "--repeats", "3", "--max-time", "0.02",
                   "--timeout", "20", "--name", "gate", "--out", str(d / "runs"),
                   "--db", str(db)], cwd=d)
    if r.returncode != 0 and "no usable" in (r.stderr + r.stdout):
        pytest.skip("no usable Open MPI: " + r.stderr_tail(5))
    assert r.returncode == 0, r.stderr_tail(30)
    return d, db


def test_tcp_against_shm_fails_the_gate(real_db):
    d, db = real_db
    r = _mpibench(["check", "--db", str(db), "--variant", "shm", "--variant", "tcp",
                   "--baseline", "shm", "--margin", "5%", "--json"], cwd=d)
    assert r.returncode == 1, r.stdout + r.stderr_tail(10)
    obj = json.loads(r.stdout)
    assert obj["status"] == "regression"
    assert {x["cell"] for x in obj["regressions"]} & {"0", "8", "64", "overall"}


def test_the_same_stack_under_two_names_passes(real_db):
    d, db = real_db
    r = _mpibench(["check", "--db", str(db), "--variant", "shm", "--variant", "shm2",
                   "--baseline", "shm", "--margin", "5%"], cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr_tail(10)
    assert r.stdout.startswith(("OK: shm2 vs shm", "CANNOT TELL"))
