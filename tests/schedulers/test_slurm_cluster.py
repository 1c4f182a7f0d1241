"""Against a real Slurm on localhost (slurmctld + slurmd n1 and n2, see tests/support/slurm_cluster.py).

The example campaigns run once for the module, each as `mpibench campaign run` in a subprocess
with a timeout (see `campaigns` for which run side by side); the tests then read what each
recorded in its store. The time-limit campaigns
(60-90 s: Slurm enforces limits in whole minutes) run from the start of the session on a
cluster of their own (`slurm_limit_runs`), so nothing here waits or queues behind them.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mpibench.process import run_command
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings, get_scheduler
from support.decide import write_decide_campaign

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# every value that reaches a job script or a directive; must arrive intact, run nothing
HOSTILE = "a'b\"c$(touch {marker})`touch {marker}`"
HOSTILE_TOML = """
[campaign]
name = "slurm-hostile"
repeats = 2
timeout = 60
verify_transport = false

[variants.evil]
stack = "mpich"
np = 2
nodes = 2
launcher = "srun"
env = { EVIL = {evil} }

[benchmarks.show]
command = "bash -c 'printf %s \\"$EVIL\\" >evil.txt; echo rank $SLURM_PROCID'"
fom = "wall_time"

[benchmarks.fails]
command = "bash -c 'exit 3'"
fom = "wall_time"

[scheduler]
name = "slurm"
partition = "debug"
account = {evil}
job_name_prefix = {evil}
time_limit = "00:04:00"
group_cells = 0
extra_directives = ["--comment=mpibench-test"]
poll_interval = 1
poll_max_interval = 3
"""
# an application cell whose setup (think grompp) sleeps: its wall time must not include it.
# 1 s (it was 3): the step's elapsed must exceed the wall time by the sleep, which a wall
# time that took in the setup cannot; the 3 s made slurm-setup the last of the campaigns
# run side by side in `campaigns` (6.6 s against the next one's 4.8 s)
SETUP_SLEEP = 1
SETUP_TOML = """
[campaign]
name = "slurm-setup"
repeats = 1
timeout = 60
verify_transport = false

[variants.one]
stack = "mpich"
np = 1
launcher = "srun"

[benchmarks.app]
setup = "sleep {sleep}"
command = "true"
fom = "wall_time"

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:02:00"
poll_interval = 1
poll_max_interval = 2
"""
# the site-style example, shrunk (one repeat, two sizes, its first group only): its second
# group (allreduce) ran the same four variants again in four more jobs, and the test reads
# the same launcher, nodes, transport and fingerprint of each; on the localhost cluster
# those jobs run one after another, ~2.5 s each at load 5 (the campaign 19.9 s -> 3.7 s,
# tests/README.md's measurement)
_SITE = (EXAMPLES / "slurm.toml").read_text()
SITE_TOML = (_SITE[:_SITE.index("[benchmarks.allreduce]")] + _SITE[_SITE.index("[scheduler]"):]
             ).replace("repeats = 3", "repeats = 1").replace('sizes = "0:16"', 'sizes = "0,1K"')
# Open MPI's mpirun over the two nodes of one host, with a memory request the nodes hold:
# each rank prints the cores it may run on (both on core 0 before the shared-host fix)
BIND_TOML = """
[campaign]
name = "slurm-bind"
repeats = 1
timeout = 60
verify_transport = false

[variants.ompi]
stack = "openmpi"
transport = "tcp"
nodes = 2
ppn = 1

[benchmarks.where]
command = "bash -c 'echo rank $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status)'"

[scheduler]
name = "slurm"
partition = "debug"
mem = "100M"
time_limit = "00:02:00"
poll_interval = 1
poll_max_interval = 2
"""
# more memory than any node has: refused, and the reason says why
MEM_TOML = (BIND_TOML.replace('name = "slurm-bind"', 'name = "slurm-mem"')
            .replace('mem = "100M"', 'mem = "64T"'))
CAMPAIGNS = ("slurm-local", "pbs-local", "slurm-hostile", "slurm-setup", "slurm", "slurm-bind",
             "slurm-mem")
ONE_AT_A_TIME = ("slurm-local", "slurm")
pytestmark = pytest.mark.slurm


def _rows(db: Path) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY variant")]
    finally:
        con.close()


@pytest.fixture(scope="module")
def campaigns(slurm_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("campaigns")
    files = {}
    marker = base / "pwned"
    inline = {"slurm-hostile": HOSTILE_TOML.replace(
                  "{evil}", json.dumps(HOSTILE.format(marker=marker))),
              "slurm-setup": SETUP_TOML.replace("{sleep}", str(SETUP_SLEEP)),
              "slurm": SITE_TOML, "slurm-bind": BIND_TOML, "slurm-mem": MEM_TOML}
    for name in CAMPAIGNS:
        d = base / name
        d.mkdir()
        files[name] = d / f"{name}.toml"
        if name in inline:
            files[name].write_text(inline[name])
        else:
            shutil.copy(EXAMPLES / f"{name}.toml", files[name])

    def run(name):
        return run_command([sys.executable, "-m", "mpibench", "campaign", "run",
                            "--no-progress", str(files[name])],
                           env=slurm_cluster.env(), timeout=240)

    # The short campaigns at once, then the two that launch MPICH with 2 ranks on a node
    # over UCX tcp one after the other: MPICH 4.0.2 can hang in MPI_Finalize when such a
    # rank is descheduled (docs/schedulers.md), and the localhost cluster's 4 CPUs are 2
    # cores (before, the time-limit jobs held a core of each node while these ran)
    with ThreadPoolExecutor(len(CAMPAIGNS) - len(ONE_AT_A_TIME)) as pool:
        short = [c for c in CAMPAIGNS if c not in ONE_AT_A_TIME]
        results = dict(zip(short, pool.map(run, short), strict=True))
    results.update((name, run(name)) for name in ONE_AT_A_TIME)
    out = {"marker": marker, "files": files}
    for name, res in results.items():
        db = files[name].parent / "mpibench.db"
        out[name] = (res, _rows(db) if db.exists() else [])
    return out


def _scontrol(job_id: str) -> dict[str, str]:
    res = run_command(["scontrol", "show", "job", "-o", job_id], timeout=30)
    assert res.ok, res.stderr
    return dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)


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


def test_two_nodes_on_one_host_do_not_share_a_core_and_mem_is_granted(campaigns):
    res, rows = campaigns["slurm-bind"]
    assert res.ok, res.stderr[-2000:]
    (run,) = rows
    assert run["status"] == "done", run["reason"]
    run_dir = campaigns["files"]["slurm-bind"].parent / "runs" / run["id"]
    lines = sorted((run_dir / "stdout.txt").read_text().split("\n"))
    allowed = [ln.split("Cpus_allowed_list:")[1].strip() for ln in lines if "Cpus_allowed" in ln]
    assert len(allowed) == 2
    # Open MPI's default would pin each node's rank to its core 0: the same core
    assert not (allowed[0] == allowed[1] and "-" not in allowed[0] and "," not in allowed[0])
    assert (run_dir / "shared_host").read_text().startswith("2 nodes on 1 host")
    con = sqlite3.connect(campaigns["files"]["slurm-bind"].parent / "mpibench.db")
    fp = json.loads(con.execute("SELECT f.json FROM fingerprints f JOIN runs r ON "
                                "r.fingerprint_id = f.id").fetchone()[0])
    con.close()
    assert fp["binding"] == "none (nodes share a host)"


def test_refused_memory_request_says_what_was_asked_and_what_nodes_have(campaigns):
    res, rows = campaigns["slurm-mem"]
    assert res.returncode == 1
    (run,) = rows
    assert run["status"] == "failed"
    assert "Memory specification can not be satisfied" in run["reason"]
    assert "scheduler.mem = '64T' asks for more per node, but the nodes of partition debug " \
           "have at most" in run["reason"], run["reason"]


def test_cell_over_its_slurm_time_limit_is_a_timeout(slurm_limit_runs):
    res, camp = slurm_limit_runs["slurm-timeout"]
    db = camp.parent / "mpibench.db"
    rows = _rows(db) if db.exists() else []
    assert len(rows) == 1, res.stdout[-2000:] + res.stderr[-2000:]
    r = rows[0]
    assert r["status"] == "timeout", (r["reason"], r["stderr_tail"])
    assert r["sched_state"].startswith("TIMEOUT")
    # Slurm stopped it (1 min), not the cell's own 150 s timeout
    assert r["reason"].startswith("job ended timeout: the job exceeded its Slurm time limit")
    assert "#SBATCH --time=00:01:00" in r["job_script"]
    assert r["exit_code"] is None and r["nodelist"] in ("n1", "n2")
    # what `campaign status` and `campaign list` show for it, table and --json
    camp = str(camp)
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "status", camp, "--json"],
                      timeout=60)
    (p,) = json.loads(res.stdout)["problems"]
    assert (p["job_id"], p["nodelist"], p["sched_state"]) == \
        (r["job_id"], r["nodelist"], r["sched_state"])
    # slurmstepd's SIGTERM at the limit is recorded ("TIMEOUT signal=15"): the poll asks again
    # while the record lacks how the script ended (schedulers/slurm.py, record_incomplete);
    # when Slurm never adds it (seen under load), the state alone is what Slurm reported.
    # Status and list must show exactly the state that was stored
    assert re.fullmatch(r"TIMEOUT( exit=\d+)?( signal=(15|9))?", p["sched_state"]), p
    text = run_command([sys.executable, "-m", "mpibench", "campaign", "status", camp],
                       timeout=60).stdout
    assert f"[job {r['job_id']} on {r['nodelist']}: {r['sched_state']}]" in text, text
    text = run_command([sys.executable, "-m", "mpibench", "campaign", "list", camp],
                       timeout=60).stdout
    row = next(ln for ln in text.splitlines() if r["id"] in ln)
    assert f" {r['job_id']} " in row and r["sched_state"] in row, text


def test_site_example_each_stacks_own_launcher_on_one_and_two_nodes(campaigns):
    """examples/slurm.toml: mpirun and mpiexec.hydra inside the allocation, np = 2 on one
    node and across two (2 ranks on each of 2 nodes would meet MPICH 4.0.2's finalize
    deadlock here, docs/schedulers.md)."""
    res, rows = campaigns["slurm"]
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert len(rows) == 4 and {r["grp"] for r in rows} == {"pt2pt"}
    for r in rows:
        assert r["status"] == "done", (r["variant"], r["reason"], r["stderr_tail"])
        launcher = json.loads(r["argv_json"])[0]
        want = "mpiexec.hydra" if r["variant"].startswith("mpich") else "mpirun"
        assert want in Path(launcher).name, launcher
        two = r["variant"].endswith("[nodes=2]")
        assert (r["nodelist"] == "n[1-2]") == two, (r["variant"], r["nodelist"])
        assert r["transport_actual"].startswith("tcp"), r["transport_actual"]
        # the fingerprint comes from the job's node (the probe step inside the allocation)
        con = sqlite3.connect(campaigns["files"]["slurm"].parent / "mpibench.db")
        fp = json.loads(con.execute("SELECT json FROM fingerprints WHERE id=?",
                                    (r["fingerprint_id"],)).fetchone()[0])
        con.close()
        assert fp["probe_node"] in ("n1", "n2"), fp.get("probe_node")
        assert fp["machine"]["kernel"] and fp["libraries"]["library"], fp["libraries"]
        assert any("libmpi" in p for p in fp["libraries"]["libraries"])


def test_batch_app_wall_time_excludes_its_setup(campaigns):
    res, rows = campaigns["slurm-setup"]
    (r,) = rows
    assert r["status"] == "done", (r["reason"], r["stderr_tail"], res.stderr[-2000:])
    timing = json.loads((Path(r["run_dir"]) / "timing.json").read_text())
    assert timing["launch_started"] - timing["started"] >= SETUP_SLEEP  # the setup's sleep
    con = sqlite3.connect(campaigns["files"]["slurm-setup"].parent / "mpibench.db")
    try:
        (wall,) = con.execute("SELECT median FROM results WHERE run_id=? AND "
                              "metric='wall_time'", (r["id"],)).fetchone()
    finally:
        con.close()
    assert wall == pytest.approx(timing["finished"] - timing["launch_started"])
    # the step took the sleep and the launch; wall only one
    assert wall <= r["elapsed"] - SETUP_SLEEP


def test_cell_over_its_pbs_walltime_is_a_timeout(slurm_limit_runs):
    res, camp = slurm_limit_runs["pbs-timeout"]
    db = camp.parent / "mpibench.db"
    rows = _rows(db) if db.exists() else []
    (r,) = rows
    assert r["status"] == "timeout", (r["reason"], r["stderr_tail"], res.stderr[-2000:])
    assert r["scheduler"] == "pbs" and r["sched_state"] == "job_state=C"
    assert "PBS walltime" in r["reason"]
    assert "#PBS -l walltime=00:01:00" in r["job_script"]


def test_hostile_values_grouped_cells_and_settings_reach_slurm_intact(campaigns):
    res, rows = campaigns["slurm-hostile"]
    evil = HOSTILE.format(marker=campaigns["marker"])
    assert not campaigns["marker"].exists(), "a value was executed by a shell"
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr[-2000:]  # the failing cells
    assert len(rows) == 4
    (job_id,) = {r["job_id"] for r in rows}  # group_cells = 0: one job for the variant
    for r in rows:
        assert r["nodelist"] == "n[1-2]" and r["sched_state"] == "COMPLETED"
        if r["grp"] == "show":
            assert r["status"] == "done", (r["reason"], r["stderr_tail"])
            assert (Path(r["run_dir"]) / "evil.txt").read_text() == evil
            assert sorted((Path(r["run_dir"]) / "stdout.txt").read_text().split("\n")) == \
                ["", "rank 0", "rank 1"]
        else:  # a failed step does not stop the cells after it in the same job
            # both ranks exit 3; srun (--kill-on-bad-exit=1) terminates a rank that has not
            # exited yet when the other's 3 arrives, and then reports that rank's 143 (the
            # larger): which one comes first is the machine's timing (seen under load)
            assert r["status"] == "failed", r["reason"]
            assert r["exit_code"] == 3 or (
                r["exit_code"] == 143 and "Force Terminated" in r["reason"]), r["reason"]
    job = _scontrol(job_id)
    assert job["Partition"] == "debug" and job["TimeLimit"] == "00:04:00"
    assert job["Comment"] == "mpibench-test"
    assert job["JobName"].startswith("a_b_c__touch_")
    first = next(r["id"] for r in rows if r["seq"] == 0)
    assert job["JobName"].endswith(f"-{first}+3"), job["JobName"]
    text = run_command(["scontrol", "show", "job", job_id], timeout=30).stdout
    assert f" Account={evil} QOS=" in text, text


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
def test_held_jobs_one_query_for_all_then_cancel(slurm_cluster, tmp_path, backend):
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
    deadline = time.monotonic() + 180  # a failure bound: the loop ends on the event
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
    starts, free = [], sl._free_ports
    monkeypatch.setattr(sl, "_free_ports", lambda n: starts.append(n) or free(n))
    # a port clash an earlier cluster in this directory logged is not this start's: no retry
    (tmp_path / "c" / "log").mkdir(parents=True)
    (tmp_path / "c" / "log" / "slurmctld.log").write_text(
        "error: Error binding slurm stream socket: Address already in use\n")
    cluster = sl.LocalSlurm(tmp_path / "c")
    with pytest.raises(sl.SlurmStartError, match="slurmctld exited with status 1"):
        cluster.start(timeout=20)
    assert cluster.pids == {}  # munged, started first, was stopped again
    assert len(starts) == 1


def test_a_port_taken_since_it_was_chosen_is_retried_on_others(tmp_path, monkeypatch):
    """slurmctld failed a full run with "Address already in use": its port was taken between
    choosing and binding.  Made for real here: the first ports offered are held by a
    listener; the start fails on them, then succeeds on others."""
    import os
    import socket

    import mpibench.slurm_local as sl

    if sl.missing_programs() or os.geteuid() != 0:
        pytest.skip("needs the Slurm/munge programs and root")
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    real, offered = sl._free_ports, []

    def ports(n):
        offered.append(n)
        return [held.getsockname()[1]] * n if len(offered) == 1 else real(n)

    monkeypatch.setattr(sl, "_free_ports", ports)
    cluster = sl.LocalSlurm(tmp_path / "c")
    try:
        cluster.start(timeout=60)
        assert len(offered) == 2 and "Address already in use" in \
            (tmp_path / "c" / "log" / "slurmctld.log").read_text(errors="replace")
        assert set(cluster.node_states().values()) == {"idle"}
        # the failed start's daemons were stopped: one munged of this cluster is left
        mine = []
        for d in Path("/proc").iterdir():
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"munged") and str(tmp_path).encode() in b" ".join(argv):
                mine.append(int(d.name))
        assert mine == [cluster.pids["munged"]], mine
    finally:
        cluster.stop()
        held.close()


# two jobs that each want both nodes to themselves: one runs, the other waits in the queue
RESUME = """
[campaign]
name = "slurm-reattach"
repeats = 2
timeout = 60
verify_transport = false

[variants.one]
stack = "mpich"
nodes = 2
ppn = 1
launcher = "srun"

# each job holds its node until the test creates `go` (an event, not a duration)
[benchmarks.nap]
command = "bash -c 'while [ ! -e {campaign_dir}/go ]; do sleep 0.2; done'"
fom = "wall_time"

[scheduler]
name = "slurm"
partition = "debug"
exclusive = true
time_limit = "00:02:00"
poll_interval = 1
poll_max_interval = 2
max_jobs_in_flight = 2   # one job running, the other queued behind it (the default is 1)
"""


def _squeue_states(ids: list[str]) -> dict[str, str]:
    res = run_command(["squeue", "--noheader", "--states=all", f"--jobs={','.join(ids)}",
                       "-o", "%i %T"], timeout=30)
    return dict(line.split() for line in res.stdout.splitlines() if line.strip())


def test_resume_reattaches_to_the_running_and_the_queued_job(slurm_cluster,
                                                             tmp_path):
    """SIGKILL the harness while one job runs and the other is queued; resume follows both
    jobs and submits nothing."""
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
    job_ids: list[str] = []
    at_kill: dict[str, str] = {}
    deadline = time.monotonic() + 180  # a failure bound: the loop ends on the event
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if not job_ids and db.exists():
                try:
                    rows = _rows(db)
                except sqlite3.OperationalError:
                    continue
                if len(rows) == 2 and all(r["job_id"] for r in rows):
                    job_ids = sorted((r["job_id"] for r in rows), key=int)
            if job_ids:
                at_kill = _squeue_states(job_ids)
                if at_kill.get(job_ids[0]) == "RUNNING":
                    break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert job_ids, "the harness never recorded both job ids"
    assert proc.returncode == -signal.SIGKILL, "the campaign ended before it was killed"
    assert at_kill == {job_ids[0]: "RUNNING", job_ids[1]: "PENDING"}, at_kill
    assert {r["status"] for r in _rows(db)} == {"running"}
    # resume while the jobs are held (one running, one queued); let them end once it has
    # re-attached to both
    log = tmp_path / "resume.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mpibench", "campaign", "resume",
                                 "--no-progress", str(camp)],
                                env={**env, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120  # a failure bound: the loop ends on the event
        while time.monotonic() < deadline and proc.poll() is None:
            if all(f"re-attached to job {j}" in log.read_text() for j in job_ids):
                break
            time.sleep(0.2)
        assert _squeue_states(job_ids) == {job_ids[0]: "RUNNING", job_ids[1]: "PENDING"}
        (tmp_path / "go").touch()
        proc.wait(timeout=120)
    finally:
        (tmp_path / "go").touch()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    text = log.read_text()
    assert proc.returncode == 0, text[-4000:]
    rows = _rows(db)
    assert {r["status"] for r in rows} == {"done"}, [(r["reason"], r["stderr_tail"])
                                                     for r in rows]
    # the same jobs, followed again, not new submissions
    assert sorted((r["job_id"] for r in rows), key=int) == job_ids
    for jid in job_ids:
        assert f"re-attached to job {jid}" in text
    assert {r["nodelist"] for r in rows} == {"n[1-2]"}
    for r in rows:
        mine = run_command(["squeue", "--noheader", "--states=all", "--name",
                            f"mpibench-{r['id']}", "-o", "%i"], timeout=30)
        assert mine.stdout.split() == [r["job_id"]]


def test_stop_cancels_jobs_still_running_before_stopping_the_daemons(tmp_path):
    """slurmd's jobs outlive slurmd (slurmstepd by design): stop() must cancel them first, or
    a test that fails with jobs in flight leaves processes running on a shared machine."""
    import os
    import random
    import tempfile

    import mpibench.slurm_local as sl

    if sl.missing_programs() or os.geteuid() != 0:
        pytest.skip("needs the Slurm/munge programs and root")
    root = Path(tempfile.mkdtemp(prefix="mbs-stop-", dir="/tmp"))  # short socket paths
    cluster = sl.LocalSlurm(root)
    arg = f"{900 + random.random():.6f}"  # a sleep no one else runs
    script = tmp_path / "long.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH --output={tmp_path}/out.txt\nsleep {arg}\n")
    pid = None
    try:
        cluster.start(timeout=60)
        res = run_command(["sbatch", "--parsable", str(script)], env=cluster.env(), timeout=30)
        assert res.ok, res.stderr
        deadline = time.monotonic() + 180  # a failure bound: the loop ends on the event
        while time.monotonic() < deadline and pid is None:
            time.sleep(0.3)
            for entry in os.listdir("/proc"):  # find it (to check on it, never to kill it)
                try:
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if cmd[:2] == [b"sleep", arg.encode()]:
                    pid = int(entry)
        assert pid, "the job never started"
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    gone = False
    deadline = time.monotonic() + 120  # a failure bound (it was 50 x 0.1 s: short under load)
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            gone = True
            break
        time.sleep(0.1)
    if not gone:
        os.kill(pid, 9)  # by its PID: do not leave it behind even when the test fails
    assert gone, "the job's process outlived the cluster"


# -- a harness SIGKILLed right after sbatch answered, before the job id reached the store -----
ORPHAN = """
[campaign]
name = "slurm-orphan"
repeats = 1
timeout = 60
verify_transport = false

[variants.one]
stack = "mpich"
np = 1
launcher = "srun"

[benchmarks.count]
command = "bash -c 'echo $SLURM_JOB_ID >>{campaign_dir}/ran.txt; {wait}'"
fom = "wall_time"

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:02:00"
poll_interval = 1
poll_max_interval = 2
"""
# the harness itself, with sbatch's answer followed by a SIGKILL of the harness: the job
# exists in Slurm, the store never hears of it
DIE_AFTER_SBATCH = """
import os, signal, sys
import mpibench.schedulers.slurm as slurm
real = slurm.SlurmScheduler.submit
def submit(self, req):
    job = real(self, req)
    with open(sys.argv[1], "w") as fh:
        fh.write(job)
    os.kill(os.getpid(), signal.SIGKILL)
slurm.SlurmScheduler.submit = submit
from mpibench.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("alive", [True, False], ids=["job-alive-at-resume", "job-ended-before"])
def test_resume_adopts_the_job_a_killed_harness_submitted(slurm_cluster, tmp_path,
                                                          alive):
    import concurrent.futures

    camp = tmp_path / "orphan.toml"
    # alive: the job runs until the test creates `go`, after resume adopted it (an event)
    camp.write_text(ORPHAN.replace("{wait}", "while [ ! -e {campaign_dir}/go ]; do sleep "
                                   "0.2; done" if alive else "true"))
    script = tmp_path / "die.py"
    script.write_text(DIE_AFTER_SBATCH)
    res = run_command([sys.executable, str(script), str(tmp_path / "job"), "campaign", "run",
                       "--no-progress", str(camp)], env=slurm_cluster.env(), cwd=tmp_path,
                      timeout=120)
    assert res.returncode == -9, res.stdout[-2000:] + res.stderr[-2000:]
    job = (tmp_path / "job").read_text()
    (r,) = _rows(tmp_path / "mpibench.db")
    assert (r["status"], r["job_id"], r["sched_state"]) == ("running", None, "submitting")
    if not alive:  # let it finish first: squeue still knows it (MinJobAge), finished
        deadline = time.monotonic() + 180  # a failure bound: the loop ends on the event
        while _squeue_states([job]).get(job) != "COMPLETED" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _squeue_states([job]).get(job) == "COMPLETED"
    else:
        assert _squeue_states([job]).get(job) in ("PENDING", "RUNNING")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        resume = pool.submit(run_command, [sys.executable, "-m", "mpibench", "campaign",
                                           "resume", "--no-progress", str(camp)],
                             env=slurm_cluster.env(), cwd=tmp_path, timeout=120)
        if alive:
            try:  # adopted: the store holds the job's id; the job is still running
                deadline = time.monotonic() + 120  # a failure bound: ends on the event
                while time.monotonic() < deadline and not resume.done():
                    try:
                        if _rows(tmp_path / "mpibench.db")[0]["job_id"] == job:
                            break
                    except sqlite3.OperationalError:  # the harness holds a write lock
                        pass
                    time.sleep(0.2)
                assert _squeue_states([job]).get(job) in ("PENDING", "RUNNING")
            finally:
                (tmp_path / "go").touch()
        res = resume.result()
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"job {job} (mpibench-{r['id']}) was submitted just before the previous harness " \
           "stopped" in res.stdout + res.stderr
    (r,) = _rows(tmp_path / "mpibench.db")
    assert (r["status"], r["job_id"], r["sched_state"]) == ("done", job, "COMPLETED"), r
    # exactly one job ever carried the cell's name, and the cell's command ran once
    mine = run_command(["squeue", "--noheader", "--states=all", f"--name=mpibench-{r['id']}",
                        "-o", "%i"], timeout=30)
    assert mine.stdout.split() == [job]
    assert (tmp_path / "ran.txt").read_text().split() == [job]


# repeats = "decide" through Slurm on the campaign of support/decide.py (a vs b 3x, decided at
# the first look; a vs c A/A, never within +-0.5%)
DECIDE_CAMPAIGN = """
name = "slurm-decide"
repeats = { until = "decided", min = 3, max = 5, step = 2 }
equivalence = "0.5%"
timeout = 30
verify_transport = false
"""
DECIDE_SCHEDULER = """
[scheduler]
name = "slurm"
partition = "debug"
mem = "100M"
time_limit = "00:02:00"
group_cells = 0
poll_interval = 1
poll_max_interval = 2
"""


def test_decide_submits_the_next_stage_only_for_undecided_cells(slurm_cluster, tmp_path):
    # one job per variant and stage (group_cells = 0): stage 1 = rounds 1-3 of a, b, c;
    # after the look only 'same' is undecided, so stage 2 submits a and c only
    camp = write_decide_campaign(tmp_path, DECIDE_CAMPAIGN, DECIDE_SCHEDULER)
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "run", "--no-progress",
                       "--json", str(camp)], env=slurm_cluster.env(), cwd=tmp_path,
                      timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = _rows(tmp_path / "mpibench.db")
    done = sorted((r["grp"], r["variant"]) for r in rows if r["status"] == "done")
    assert done == sorted([("differ", "a")] * 3 + [("differ", "b")] * 3
                          + [("same", "a")] * 5 + [("same", "c")] * 5)
    assert len({r["job_id"] for r in rows if r["status"] == "done"}) == 5
    status = json.loads(res.stdout)["status"]["decisions"]
    pts = {p["group"]: p for p in status["points"]}
    assert pts["differ"]["state"] == "decided: every cell by 3 launches per variant"
    assert pts["same"]["state"].startswith("undecided after the maximum of 5 launches")
