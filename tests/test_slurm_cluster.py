"""Against a real Slurm on localhost (slurmctld + slurmd n1 and n2, see slurm_cluster.py).

The three example campaigns run at the same time (the time-limit one takes about 70 s, Slurm
enforces limits in whole minutes), each as `mpibench campaign run` in a subprocess with a
timeout; the tests then read what each recorded in its store.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mpibench.runner import run_command
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings, get_scheduler
from slurm_cluster import slurm_cluster  # noqa: F401  (session fixture)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CAMPAIGNS = ("slurm-local", "slurm-timeout", "pbs-local")
pytestmark = pytest.mark.slurm


def _rows(db: Path) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY variant")]
    finally:
        con.close()


@pytest.fixture(scope="module")
def campaigns(slurm_cluster, tmp_path_factory):  # noqa: F811
    base = tmp_path_factory.mktemp("campaigns")
    files = {}
    for name in CAMPAIGNS:
        d = base / name
        d.mkdir()
        files[name] = d / f"{name}.toml"
        shutil.copy(EXAMPLES / f"{name}.toml", files[name])

    def run(name):
        return run_command([sys.executable, "-m", "mpibench", "campaign", "run",
                            "--no-progress", str(files[name])],
                           env=slurm_cluster.env(), timeout=240)

    with ThreadPoolExecutor(len(CAMPAIGNS)) as pool:
        results = dict(zip(CAMPAIGNS, pool.map(run, CAMPAIGNS), strict=True))
    out = {}
    for name, res in results.items():
        db = files[name].parent / "mpibench.db"
        out[name] = (res, _rows(db) if db.exists() else [])
    return out


def test_two_stacks_one_and_two_nodes(campaigns):
    res, rows = campaigns["slurm-local"]
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert len(rows) == 7
    for r in rows:
        assert r["status"] == "done", (r["variant"], r["reason"], r["stderr_tail"])
        assert r["scheduler"] == "slurm" and r["job_id"].isdigit()
        assert r["sched_state"] == "COMPLETED"
        assert "#SBATCH --no-requeue" in r["job_script"]
    core = [r for r in rows if r["grp"] == "pingpong"]
    nodes = {r["variant"]: r["nodelist"] for r in core}
    assert nodes["ompi[nodes=2]"] == nodes["mpich[nodes=2]"] == "n[1-2]"
    assert nodes["ompi[nodes=1]"] in ("n1", "n2")
    two = next(r for r in core if r["variant"] == "mpich[nodes=2]")
    assert "#SBATCH --nodes=2" in two["job_script"]
    hosts = (Path(two["run_dir"]) / "hostfile").read_text().split()
    assert sorted(hosts) == ["n1", "n2"]
    assert "--mpi=pmi2" in two["argv_json"]
    ompi = next(r for r in core if r["variant"] == "ompi[nodes=2]")
    assert "--mpi=pmix" in ompi["argv_json"]
    tmpl = next(r for r in core if r["variant"] == "mpich-template")
    assert tmpl["nodelist"] == "n[1-2]"
    assert '"-f", "hostfile"' in tmpl["argv_json"]
    # placement: two ranks on one node, then one rank on each node
    placed = {r["variant"]: sorted((Path(r["run_dir"]) / "stdout.txt").read_text().split("\n"))
              for r in rows if r["grp"] == "placement"}
    assert placed["ompi[nodes=2]"] == ["", "rank 0 on n1", "rank 1 on n2"]
    one = placed["ompi[nodes=1]"]
    assert one[1:] in (["rank 0 on n1", "rank 1 on n1"], ["rank 0 on n2", "rank 1 on n2"])


def test_cell_over_its_slurm_time_limit_is_a_timeout(campaigns):
    res, rows = campaigns["slurm-timeout"]
    assert len(rows) == 1, res.stdout[-2000:] + res.stderr[-2000:]
    r = rows[0]
    assert r["status"] == "timeout", (r["reason"], r["stderr_tail"])
    assert r["sched_state"].startswith("TIMEOUT")
    assert r["reason"]  # the runner words it; the scheduler state says who stopped it
    assert "#SBATCH --time=00:01:00" in r["job_script"]


def test_pbs_commands_over_slurm(campaigns):
    res, rows = campaigns["pbs-local"]
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (r,) = rows
    assert r["status"] == "done", (r["reason"], r["stderr_tail"])
    assert r["scheduler"] == "pbs" and r["nodelist"] == "n1,n2"
    assert "#PBS -l select=2:ncpus=1:mpiprocs=1" in r["job_script"]
    assert sorted((Path(r["run_dir"]) / "hostfile").read_text().split()) == ["n1", "n2"]


def _sleep_request(tmp_path: Path, name: str, settings: SchedulerSettings) -> JobRequest:
    d = tmp_path / name
    d.mkdir()
    step = JobStep(cell_id=name, run_dir=d, argv=["sleep", "30"], env={},
                   stdout=d / "stdout.txt", stderr=d / "stderr.txt")
    return JobRequest(name=f"mbtest-{name}", steps=[step], run_dir=d, nodes=1,
                      tasks_per_node=1, time_limit_s=60, settings=settings)


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_held_jobs_one_query_for_all_then_cancel(slurm_cluster, tmp_path, backend):  # noqa: F811
    directive = "#SBATCH --hold" if backend == "slurm" else "#PBS -h"
    s = SchedulerSettings(name=backend, extra_directives=[directive])
    sched = get_scheduler(backend, s)
    ids = [sched.submit(_sleep_request(tmp_path, f"j{i}", s)) for i in range(5)]
    try:
        before = sched.queries
        states = sched.poll(ids)
        assert sched.queries - before == 1
        assert {st.state for st in states.values()} == {"pending"}, states
    finally:
        for jid in ids:
            sched.cancel(jid)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        states = sched.poll(ids)
        if all(st.finished for st in states.values()) and len(states) == len(ids):
            break
        time.sleep(0.5)
    if backend == "slurm":
        assert {st.state for st in states.values()} == {"cancelled"}, states
    else:  # the torque wrapper shows every ended job as C, without an exit status
        assert all(st.finished for st in states.values()), states


def test_a_daemon_that_dies_at_start_is_reported_and_the_rest_stopped(tmp_path, monkeypatch):
    """What the session fixture turns into a test failure: the daemon's name and log."""
    import os

    import mpibench.slurm_local as sl

    if sl.missing_programs() or os.geteuid() != 0:
        pytest.skip("needs the Slurm/munge programs and root")
    real = sl._which
    monkeypatch.setattr(sl, "_which", lambda p: "/bin/false" if p == "slurmctld" else real(p))
    cluster = sl.LocalSlurm(tmp_path / "c")
    with pytest.raises(sl.SlurmStartError, match="slurmctld exited with status 1"):
        cluster.start(timeout=20)
    assert cluster.pids == {}  # munged, started first, was stopped again


RESUME = """
[campaign]
name = "slurm-reattach"
repeats = 1
timeout = 60
verify_transport = false

[variants.one]
stack = "mpich"
np = 1
launcher = "srun"

[benchmarks.nap]
command = "sleep 8"
fom = "wall_time"

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:02:00"
poll_interval = 1
poll_max_interval = 2
"""


def test_resume_reattaches_to_the_running_job(slurm_cluster, tmp_path):  # noqa: F811
    """SIGKILL the harness while its job runs; resume follows that job, submits nothing."""
    import os
    import signal
    import subprocess

    camp = tmp_path / "reattach.toml"
    camp.write_text(RESUME)
    db = tmp_path / "mpibench.db"
    env = {**os.environ, **slurm_cluster.env()}
    # Popen, not run_command: the point is to SIGKILL the harness at a chosen moment
    proc = subprocess.Popen([sys.executable, "-m", "mpibench", "campaign", "run",
                             "--no-progress", str(camp)], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    job_id = None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None and not job_id:
            time.sleep(0.2)
            if db.exists():
                try:
                    rows = _rows(db)
                except sqlite3.OperationalError:
                    continue
                job_id = rows[0]["job_id"] if rows else None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert job_id, "the harness never recorded a job id"
    assert proc.returncode == -signal.SIGKILL, "the campaign ended before it was killed"
    assert _rows(db)[0]["status"] == "running"
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "resume", "--no-progress",
                       str(camp)], env=slurm_cluster.env(), cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    (row,) = _rows(db)
    assert row["status"] == "done", (row["reason"], row["stderr_tail"])
    assert row["job_id"] == job_id  # the same job, followed again, not a new submission
    assert f"re-attached to job {job_id}" in res.stdout + res.stderr
    mine = run_command(["squeue", "--noheader", "--states=all", "--name",
                        f"mpibench-{row['id']}", "-o", "%i"], env=slurm_cluster.env(),
                       timeout=30)
    assert mine.stdout.split() == [job_id]
