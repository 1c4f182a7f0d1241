"""Campaigns for real: SIGKILL + resume on both stacks, application cells (figure of merit,
failure, hang), fingerprint non-pooling, and the batch runner loop against a small in-test
Scheduler that runs job scripts in subprocesses (a test double of the interface, not of
Slurm)."""

from __future__ import annotations

import json
import os
import platform
import random
import re
import signal
import socket
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from mpibench.campaign import status as st
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.schedulers import (
    JobRequest,
    JobStatus,
    Scheduler,
    SchedulerError,
    SchedulerQueryError,
    job_body,
    register_scheduler,
)
from mpibench.store import Store
from support.common import MPI_TIMEOUT, REPO
from support.decide import write_decide_campaign

MPIBENCH = str(REPO / ".venv" / "bin" / "mpibench")
# machine_probe = "off" in the campaigns whose tests read nothing of the machine-state
# probe (OPTIONS, BUDGET, DECIDE_REAL, DECIDE_SIZES): "record", the default, runs it before
# and after every bound np-2 launch. The default stays on end to end where a test runs
# it: CORE (a kill may land in a probe or its history line), the examples
# (test_example_campaigns_run_here), and campaign/test_machine_probe.py.

CORE = """
[campaign]
name = "kill-resume"
repeats = 3
timeout = 60
[variants.ompi]
stack = "openmpi"
transport = "shm"
[variants.mpich]
stack = "mpich"
transport = "shm"
[benchmarks.pt2pt]
benchmarks = ["PingPong"]
sizes = "0,64"
options = { max_time = 0.02 }
[benchmarks.coll]
benchmarks = ["Allreduce"]
sizes = "0,64"
options = { max_time = 0.02 }
"""


def done_finished(db: Path) -> dict[str, float]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return dict(con.execute("SELECT id, finished FROM runs WHERE status='done'"))
    except sqlite3.OperationalError:  # not created yet
        return {}
    finally:
        con.close()


def check_fingerprint(fp: dict, variant: str) -> None:
    """Everything the issue lists: stack and version, launcher argv, transport env, hosts,
    ranks per host, cores, kernel, CPU model, mpibench version."""
    import mpibench

    host = socket.gethostname()
    kind = "openmpi" if variant == "ompi" else "mpich"
    assert fp["mpibench_version"] == mpibench.__version__
    assert fp["stack"]["kind"] == kind and fp["stack"]["version"]
    assert ("Open MPI" if kind == "openmpi" else "MPICH") in fp["stack"]["library_version"]
    assert fp["library_version_runtime"]  # what the ranks' library said at run time
    argv = fp["launcher_argv"]
    assert argv[0] == fp["stack"]["launcher"] and argv[-1] == "<program>"
    if kind == "mpich":  # the shm preset is an env var for MPICH: it must be in the print
        assert fp["transport_env"]["UCX_TLS"] == "self,sm"
    else:  # for Open MPI the preset is MCA flags on the launcher's command line
        assert "vader" in " ".join(argv)
    assert fp["hosts"] == [host] and fp["ranks_per_host"] == {host: 2}
    m = fp["machine"]
    assert m["cores"] == os.cpu_count() and m["kernel"] == platform.release()
    assert m["cpu_model"] and m["cpu_model"] != "unknown"


def store_invariants(db: Path) -> None:
    """What a SIGKILL must never leave behind: a damaged database, a `done` cell without its
    results, or results of a cell that is not done."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        per_state = dict(con.execute(
            "SELECT u.status, count(r.id) FROM runs u LEFT JOIN results r ON r.run_id = u.id "
            "GROUP BY u.status").fetchall())
        done_without = con.execute(
            "SELECT count(*) FROM runs u WHERE u.status='done' AND NOT EXISTS "
            "(SELECT 1 FROM results r WHERE r.run_id = u.id)").fetchone()[0]
    finally:
        con.close()
    assert done_without == 0
    assert all(n == 0 for state, n in per_state.items() if state != "done"), per_state


@pytest.mark.mpi
def test_sigkill_then_resume_finishes_exactly_the_missing_cells(tmp_path):
    """2 variants (Open MPI, MPICH) x 2 groups x 3 repeats. The harness is SIGKILLed twice at
    random-ish moments (after a random number of finished cells plus a random delay, so the
    kill lands between cells, in a transport probe, mid-launch or mid-commit), then resumed."""
    # a fixed default: the same kill points on every run (the gate is deterministic); set
    # MPIBENCH_KILL_SEED to explore others
    seed = int(os.environ.get("MPIBENCH_KILL_SEED", "22"))
    rng = random.Random(seed)
    print(f"kill seed {seed} (MPIBENCH_KILL_SEED={seed} repeats these kill points)")
    camp = tmp_path / "camp.toml"
    camp.write_text(CORE)
    db = tmp_path / "mpibench.db"
    first = rng.randint(1, 5)
    targets = [first, rng.randint(first + 1, 9)]
    snapshots: list[dict[str, float]] = []
    try:
        for i, target in enumerate(targets):
            proc = subprocess.Popen(
                [MPIBENCH, "campaign", "run" if i == 0 else "resume", str(camp),
                 "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + MPI_TIMEOUT
            try:
                while time.monotonic() < deadline and proc.poll() is None:
                    if db.exists() and len(done_finished(db)) >= target:
                        break
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 0.4))
            finally:
                if proc.poll() is None:
                    # only the harness, as a crash would: its launch is left running
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, \
                f"kill {i + 1} came too late (seed {seed}): rc {proc.returncode}"
            store_invariants(db)
            snapshots.append(done_finished(db))
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
            print(f"kill {i + 1}: after {target}+ done cells:",
                  dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status")))
            con.close()
            assert target <= len(snapshots[-1]) < 12, (seed, len(snapshots[-1]))

        res = subprocess.run([MPIBENCH, "campaign", "resume", str(camp), "--no-progress"],
                             cwd=tmp_path, capture_output=True, text=True,
                             timeout=MPI_TIMEOUT)
    finally:
        from mpibench.process import kill_orphans

        # a failed assertion must not leave launches behind; after a good resume none is left
        left = kill_orphans(tmp_path / "runs")
    assert res.returncode == 0, res.stderr + res.stdout
    assert left == [], f"processes of a killed harness survived the resume: {left}"
    store_invariants(db)
    after = done_finished(db)
    assert len(after) == 12
    # nothing done twice: cells finished before each kill kept their results and timestamps
    for before in snapshots:
        assert all(after[i] == t for i, t in before.items()), seed
    with Store(db) as store:
        rows = list(store.results(with_samples=False))
        per_run = Counter(r["run_id"] for r in rows)
        assert set(per_run) == set(after) and set(per_run.values()) == {2}
        keys = Counter((r["run_id"], r["benchmark"], r["size"]) for r in rows)
        assert max(keys.values()) == 1
        runs = store.runs()
        assert len(runs) == 12 and {r["status"] for r in runs} == {"done"}
        assert all(r["fingerprint_id"] for r in runs)
        assert Counter(r["variant"] for r in runs) == {"ompi": 6, "mpich": 6}
        assert Counter(r["grp"] for r in runs) == {"pt2pt": 6, "coll": 6}
        assert sorted((r["variant"], r["grp"], r["repeat"]) for r in runs) == sorted(
            (v, g, k) for v in ("ompi", "mpich") for g in ("pt2pt", "coll") for k in range(3))
        # the run and its resumes launched the cells one at a time in the plan's order:
        # rounds in turn, the variants of a point taking turns first (campaign/plan.py)
        ran = [(r["repeat"], r["grp"], r["variant"])
               for r in sorted(runs, key=lambda r: r["finished"])]
        assert ran == [(k, g, v) for k, pair in enumerate((("ompi", "mpich"),
                                                           ("mpich", "ompi"),
                                                           ("ompi", "mpich")))
                       for g in ("pt2pt", "coll") for v in pair]
        for r in runs:
            check_fingerprint(store.fingerprint(r["fingerprint_id"]), r["variant"])
        data = st.status(store, load(camp))
    assert {g["transport_verdict"] for g in data["groups"]} == {"ok"}


APP = """
[campaign]
name = "apps"
repeats = 2
timeout = 30
verify_transport = false
[variants.one]
stack = "openmpi"
np = 1
[benchmarks.echo]
command = "sh -c 'echo Performance: {x} ns/day; echo {label} > out.txt'"
params = { x = [1.5, 2.5], label = ["a b"] }
fom = { name = "ns/day", regex = 'Performance:\\s+([0-9.]+)', unit = "ns/day", better = "higher" }
[benchmarks.prep]
command = "cat input.txt generated.txt"
setup = ["cp input.txt generated.txt", "sleep 2"]
inputs = ["input.txt"]
repeats = 1
[benchmarks.fail]
command = "sh -c 'echo the input deck is broken >&2; exit 3'"
repeats = 1
[benchmarks.hang]
command = "sleep 30"
timeout = 2
repeats = 1
[benchmarks.typo]
command = "no-such-program-mpibench --steps 10"
repeats = 1
[benchmarks.badsetup]
command = "echo unreachable"
setup = ["true", "sh -c 'exit 4'"]
repeats = 1
"""


@pytest.mark.parametrize("name, reason", [
    ("openmpi-4.1.4-executable-not-found.stderr",
     "mpirun.openmpi was unable to find the specified executable file, and therefore did "
     "not launch the job. (Executable: gmx_mpii)"),
    ("mpich-4.0.2-executable-not-found.stderr",
     "[proxy:0:0@vm] HYDU_create_process (utils/launch/launch.c:73): execvp error on file "
     "gmx_mpii (No such file or directory)"),
])
def test_reason_line_from_captured_launcher_errors(name, reason):
    from mpibench.campaign.cells import reason_line

    assert reason_line((REPO / "tests" / "data" / "campaign" / name).read_text()) == reason


def test_reason_line_prefers_the_programs_words_to_banners():
    from mpibench.campaign.cells import reason_line

    banner = "-" * 74
    assert reason_line(f"deck broken\n{banner}\nmpirun detected that\n{banner}\n") == \
        "deck broken"
    assert reason_line(f"{banner}\nWARNING: no device\n{banner}\nsegfault in foo\n") == \
        "segfault in foo"
    assert reason_line("") == "no error output"


def run_campaign(path: Path, db: Path, stacks, **kw):
    with Store(db) as store:
        runner = CampaignRunner(load(path), store, stacks, **kw)
        summary = runner.run()
        return summary, st.status(store, load(path))


@pytest.mark.mpi
def test_application_cells_fom_failure_and_timeout(tmp_path, found_stacks):
    (tmp_path / "input.txt").write_text("hello\n")
    camp = tmp_path / "apps.toml"
    camp.write_text(APP)
    summary, data = run_campaign(camp, tmp_path / "a.db", found_stacks)
    assert data["totals"] == {"done": 5, "failed": 3, "timeout": 1, "running": 0,
                              "pending": 0}
    with Store(tmp_path / "a.db") as store:
        runs = {r["grp"]: r for r in store.runs()}
        fail, hang = runs["fail"], runs["hang"]
        assert fail["status"] == "failed" and fail["exit_code"] == 3
        assert fail["reason"] == "exit status 3: the input deck is broken"
        assert "the input deck is broken" in fail["stderr_tail"]
        assert hang["status"] == "timeout" and hang["reason"] == \
            "cell timeout: killed after 2 s"
        assert (Path(hang["run_dir"]) / "exit_status").read_text().strip() == "124"
        # the hang was cut at its own 2 s timeout (the reason above is written from the
        # configuration): not run to its end or to the campaign's 30 s timeout, either of
        # which takes 30 s - bounds from the sleep and the two timeouts, not from a machine's
        # speed (review R2: a wall bound on the whole campaign, 8 launches, broke under load)
        timing = json.loads((Path(hang["run_dir"]) / "timing.json").read_text())
        assert 2 <= timing["finished"] - timing["started"] < 30
        # mpirun could not start the program: its banner's first sentence, and the name
        typo = runs["typo"]
        assert typo["status"] == "failed"
        assert "unable to find the specified executable" in typo["reason"]
        assert "no-such-program-mpibench" in typo["reason"]
        bad = runs["badsetup"]
        assert bad["status"] == "failed" and bad["reason"].startswith(
            "setup command `sh -c 'exit 4'` failed (exit status 4)")
        assert not (Path(bad["run_dir"]) / "stdout.txt").exists()  # never launched
        assert (Path(fail["run_dir"]) / "exit_status").read_text().strip() == "3"
        timing = json.loads((Path(fail["run_dir"]) / "timing.json").read_text())
        assert 0 < timing["finished"] - timing["started"] < 30
        rows = list(store.results(benchmark="echo"))
        fom = [r for r in rows if r["metric"] == "ns/day"]
        assert sorted(r["median"] for r in fom) == [1.5, 1.5, 2.5, 2.5]
        r = fom[0]
        assert (r["size"], r["unit"], r["better"], r["statistic"], r["n"]) == \
            (None, "ns/day", "higher", "value", 1)
        assert r["mean"] == r["median"] and list(r["samples"]) == [r["median"]]
        assert r["params"]["label"] == "a b"
        assert sum(1 for r in rows if r["metric"] == "wall_time") == 4
        for run in store.runs():
            d = Path(run["run_dir"])
            assert d.parent == tmp_path / "runs" and d.name == run["id"]
            launched = ("stdout.txt", "stderr.txt", "command.json")
            for f in ("cell.json", "job.sh", "exit_status", "timing.json") + (
                    launched if run["grp"] != "badsetup" else ()):
                assert (d / f).exists(), (run["grp"], f)
        # wall time is the launch alone: the step (setup + launch) took >= 2 s longer
        (wall,) = [r["median"] for r in store.results(benchmark="prep")
                   if r["metric"] == "wall_time"]
        assert 0 < wall <= runs["prep"]["elapsed"] - 1.99
        prep = Path(runs["prep"]["run_dir"])
        assert (prep / "stdout.txt").read_text() == "hello\nhello\n"
        assert (Path(runs["echo"]["run_dir"]) / "out.txt").read_text() == "a b\n"
    # failed and timed-out cells are final: a resume does not re-run them
    summary, _ = run_campaign(camp, tmp_path / "a.db", found_stacks)
    assert summary.ran == 0 and summary.skipped == 9


@pytest.mark.mpi
def test_repeats_with_different_fingerprints_are_flagged(tmp_path, found_stacks, monkeypatch):
    camp = tmp_path / "fp.toml"
    text = APP.split("[benchmarks.prep]")[0].replace("repeats = 2", "repeats = 1")
    camp.write_text(text)
    run_campaign(camp, tmp_path / "f.db", found_stacks)
    # the user's environment changes a transport setting between launches
    monkeypatch.setenv("UCX_RNDV_THRESH", "8192")
    camp.write_text(text.replace("repeats = 1", "repeats = 2"))
    summary, data = run_campaign(camp, tmp_path / "f.db", found_stacks)
    assert summary.ran == 2 and summary.skipped == 2
    (g,) = data["groups"]
    assert g["fingerprints"] == 2 and g["mixed_fingerprints"]
    assert data["variants"][0]["mixed_fingerprints"]
    with Store(tmp_path / "f.db") as store:
        by_point: dict[str, set] = {}
        for r in store.runs():
            by_point.setdefault(r["params_json"], set()).add(r["fingerprint_id"])
        assert all(len(ids) == 2 for ids in by_point.values())
        fps = [store.fingerprint(r["fingerprint_id"]) for r in store.runs()]
        assert {fp["transport_env"].get("UCX_RNDV_THRESH") for fp in fps} == {None, "8192"}
        # an application launch records where it ran, like the core's header does
        host = socket.gethostname()
        assert all(fp["hosts"] == [host] and fp["ranks_per_host"] == {host: 1} for fp in fps)
        # and comparisons do not pool the two: each cell uses one fingerprint's run only
        from mpibench.report.data import load_cells

        cells = load_cells(store, {"one": [r["id"] for r in store.runs()]})
        ns = [c["one"] for c in cells.values() if c["one"].metric == "ns/day"]
        assert len(ns) == 2
        assert all(c.n_fingerprints == 2 and len(c.runs_used) == 1
                   and len(c.runs_excluded) == 1 for c in ns)
    res = subprocess.run([MPIBENCH, "campaign", "status", str(camp), "--db",
                          str(tmp_path / "f.db")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "MIXED" in res.stdout and "not pooled" in res.stdout


# -- the batch path, against a scheduler that runs job scripts as local subprocesses -------
JOBS: dict[str, subprocess.Popen] = {}
CALLS = Counter()


@register_scheduler("test-subprocess")
class SubprocessScheduler(Scheduler):
    """Jobs are `bash job.sh` processes; poll answers for all ids from one look."""

    batch = True
    fail_first_poll = False
    die_on_poll = False
    refuse = False

    def render_script(self, req: JobRequest) -> str:
        return f"#!/bin/bash\n# job {req.name}\n" + job_body(req)

    def submit(self, req: JobRequest) -> str:
        CALLS["submit"] += 1
        if self.refuse:
            raise SchedulerError("sbatch: error: invalid partition specified: nope")
        path = req.run_dir / "job.sh"
        path.write_text(self.render_script(req))
        proc = subprocess.Popen(["bash", str(path)], cwd=req.run_dir,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        JOBS[str(proc.pid)] = proc
        return str(proc.pid)

    def poll(self, job_ids):
        CALLS["poll"] += 1
        if self.die_on_poll:
            raise KeyboardInterrupt("the harness dies while jobs are in flight")
        if self.fail_first_poll and CALLS["poll"] == 1:
            raise SchedulerQueryError("squeue: socket timed out (transient)")
        out = {}
        for jid in job_ids:
            rc = JOBS[jid].poll()
            out[jid] = JobStatus("running", raw="RUNNING") if rc is None else \
                JobStatus("completed" if rc == 0 else "failed", rc, raw="COMPLETED",
                          nodelist="localhost")
        return out

    def cancel(self, job_id):
        os.killpg(int(job_id), signal.SIGTERM)


BATCH = """
[campaign]
name = "batch"
repeats = 2
timeout = 30
[variants.one]
stack = "openmpi"
transport = "shm"
np = 1
[benchmarks.echo]
command = "sh -c 'sleep 0.3; echo value {x}'"
params = { x = [1, 2, 3] }
fom = { name = "v", regex = 'value ([0-9]+)', unit = "u", better = "higher" }
[scheduler]
name = "test-subprocess"
max_jobs_in_flight = 2
poll_interval = 0.05
poll_max_interval = 0.2
"""


@pytest.mark.mpi
def test_batch_loop_submits_polls_ingests_and_reattaches(tmp_path, found_stacks):
    camp = tmp_path / "batch.toml"
    camp.write_text(BATCH)
    db = tmp_path / "b.db"
    CALLS.clear()
    spec = load(camp)
    sched = SubprocessScheduler(spec.scheduler)
    sched.die_on_poll = True
    with Store(db) as store, pytest.raises(KeyboardInterrupt):
        CampaignRunner(spec, store, found_stacks, scheduler=sched).run()
    with Store(db) as store:
        running = store.runs(status="running")
        assert len(running) == 2 and all(r["job_id"] for r in running)
        attached = {r["job_id"] for r in running}
    # a new harness re-attaches to the two jobs instead of submitting them again
    sched = SubprocessScheduler(spec.scheduler)
    sched.fail_first_poll = True
    CALLS.clear()
    with Store(db) as store:
        summary = CampaignRunner(spec, store, found_stacks, scheduler=sched).run()
        assert summary.reattached == 2
        assert CALLS["submit"] == 4  # the other four cells, never the re-attached two
        runs = store.runs()
        assert {r["status"] for r in runs} == {"done"}
        assert attached <= {r["job_id"] for r in runs}
        assert all(r["job_script"] and "# cell " in r["job_script"] for r in runs)
        assert {r["sched_state"] for r in runs} == {"COMPLETED"}
        assert {r["nodelist"] for r in runs} == {"localhost"}
        # each job ran its probe step on its own allocation, with the variant's one rank:
        # nothing between ranks to verify (n/a, never 'unverified'), its node still probed
        assert {r["transport_actual"] for r in runs} == {
            "none [one rank: no traffic between ranks to verify]"}
        assert {st.verdict("shm", r["transport_actual"]) for r in runs} == {"n/a"}
        assert all(store.fingerprint(r["fingerprint_id"]).get("probe_hosts") for r in runs)
        # jobs ran in plan order
        assert [r["id"] for r in sorted(runs, key=lambda r: r["started"])] == \
            [r["id"] for r in sorted(runs, key=lambda r: r["seq"])]
        vals = sorted(r["median"] for r in store.results() if r["metric"] == "v")
        assert vals == [1, 1, 2, 2, 3, 3]


class TimeLimitScheduler(SubprocessScheduler):
    """A job whose step died of the time limit's SIGTERM (the step itself is real: it is
    killed by SIGTERM and says what srun says); the job then ends TIMEOUT, as sacct says
    after slurmstepd's signals. Only the queue's answer is made up: a real time limit that
    lets the script record 143 before it dies needs a loaded Slurm node (see
    tests/schedulers/test_slurm_cluster.py::test_cell_over_its_slurm_time_limit_is_a_timeout)."""

    def poll(self, job_ids):
        out = super().poll(job_ids)
        return {j: (JobStatus("timeout", None, "the job exceeded its Slurm time limit and "
                              "was killed", nodelist="localhost", raw="TIMEOUT signal=15")
                    if st.finished else st) for j, st in out.items()}


@pytest.mark.mpi
@pytest.mark.parametrize("command, status", [
    # under load at a Slurm time limit: exit status 143 with srun's complaint recorded
    ("sh -c 'echo srun: got SIGCONT >&2; kill -TERM $$'", "timeout"),
    # a step that failed on its own keeps its failure even if the job later ran out of time
    ("sh -c 'echo the input deck is broken >&2; exit 3'", "failed"),
])
def test_step_killed_by_the_time_limit_signal_is_a_timeout(tmp_path, found_stacks, command,
                                                           status):
    camp = tmp_path / "tl.toml"
    camp.write_text(BATCH.replace("repeats = 2", "repeats = 1")
                    .replace("params = { x = [1, 2, 3] }", "params = { x = [1] }")
                    .replace("command = \"sh -c 'sleep 0.3; echo value {x}'\"",
                             f'command = "{command}"'))
    spec = load(camp)
    with Store(tmp_path / "t.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=TimeLimitScheduler(spec.scheduler),
                       verify=False).run()
        (r,) = store.runs()
    assert r["status"] == status, (r["reason"], r["stderr_tail"])
    if status == "timeout":
        assert r["reason"].startswith("job ended timeout: the job exceeded its Slurm time "
                                      "limit"), r["reason"]
        # as tests/schedulers/test_slurm_cluster.py's real time limit expects: no exit status of its own
        assert r["exit_code"] is None
    else:
        assert r["reason"].startswith("exit status 3"), r["reason"]


@pytest.mark.mpi
def test_editing_the_file_runs_only_new_cells_and_status_follows_the_file(tmp_path,
                                                                           found_stacks):
    camp = tmp_path / "edit.toml"
    text = APP.split("[benchmarks.prep]")[0]
    camp.write_text(text)
    summary, data = run_campaign(camp, tmp_path / "e.db", found_stacks)
    assert summary.ran == 4 and data["totals"]["done"] == 4
    # one more parameter value, and x=1.5 dropped: only the new point runs
    camp.write_text(text.replace("x = [1.5, 2.5]", "x = [2.5, 3.5]"))
    summary, data = run_campaign(camp, tmp_path / "e.db", found_stacks)
    assert summary.ran == 2 and summary.skipped == 2
    assert data["cells"] == 4 and data["not_in_file"] == 2 and data["totals"]["done"] == 4


def _wait_for_launched(runs: Path, program: str, harness: subprocess.Popen) -> bool:
    """Wait until a process running `program` has its working directory under runs/ (the
    launch started); False if the harness exits first or after MPI_TIMEOUT (a failure bound,
    not a timing assumption)."""
    end = time.monotonic() + MPI_TIMEOUT
    while time.monotonic() < end and harness.poll() is None:
        if runs.is_dir():
            target = str(runs.resolve()) + os.sep
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd") + os.sep
                    argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                if cwd.startswith(target) and os.path.basename(argv0) == program.encode():
                    return True
        time.sleep(0.05)
    return False


@pytest.mark.system
def test_ctrl_c_leaves_the_cell_pending_and_stops_its_launch(tmp_path, found_stacks):
    # The SIGINT is sent once the launched program is running (an event seen in /proc: a
    # process of the command with its working directory in the cell's run directory), never
    # after a guessed delay; it sleeps far longer than any load can stretch the wait (it was
    # "sleep 20" after command.json + 0.5 s, and under load the cell finished first).
    camp = tmp_path / "int.toml"
    camp.write_text(APP.split("[benchmarks.echo]")[0].replace("timeout = 30", "timeout = 3600")
                    + '[benchmarks.slow]\ncommand = "sleep 3000"\nrepeats = 1\n')
    # A terminal's Ctrl-C meets a foreground job whose SIGINT is at its default. A job that
    # inherits SIGINT ignored (POSIX: a shell without job control starts `make test &` so,
    # and CPython then installs no KeyboardInterrupt handler) never sees it: the harness ran
    # on and the test timed out. So the harness gets the default disposition back.
    proc = subprocess.Popen([MPIBENCH, "campaign", "run", str(camp), "--no-progress"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert _wait_for_launched(tmp_path / "runs", "sleep", proc), \
            "the launch never started: " + proc.stderr.read()
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=MPI_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    with Store(tmp_path / "mpibench.db") as store:
        (run,) = store.runs()
        assert run["status"] == "pending"
        run_dir = Path(run["run_dir"])
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                assert not os.readlink(f"/proc/{pid}/cwd").startswith(str(run_dir))
            except OSError:
                pass


@pytest.mark.mpi
def test_profiled_variant_stores_its_profile(tmp_path, found_stacks):
    camp = tmp_path / "prof.toml"
    camp.write_text(CORE.replace('name = "kill-resume"', 'name = "prof"')
                    .replace("repeats = 3", "repeats = 1")
                    .replace('[variants.mpich]\nstack = "mpich"\ntransport = "shm"\n', "")
                    .replace('transport = "shm"\n', 'transport = "shm"\nprofile = true\n', 1)
                    .split("[benchmarks.coll]")[0])
    summary, data = run_campaign(camp, tmp_path / "p.db", found_stacks, verify=False)
    assert data["totals"]["done"] == 1, data["problems"]
    with Store(tmp_path / "p.db") as store:
        (run,) = store.runs()
        assert store.db.execute("SELECT count(*) FROM profiles WHERE run_id=?",
                                (run["id"],)).fetchone()[0] == 1
        benches = {r["benchmark"] for r in store.results(with_samples=False)}
        assert "PingPong" in benches and "profile:MPI" in benches
        assert store.fingerprint(run["fingerprint_id"])["profiler"] is True


@pytest.mark.system
def test_refused_submission_fails_the_cells_with_the_reason(tmp_path, found_stacks):
    camp = tmp_path / "refuse.toml"
    camp.write_text(BATCH.replace('transport = "shm"\n', "").replace("repeats = 2",
                                                                     "repeats = 1"))
    spec = load(camp)
    sched = SubprocessScheduler(spec.scheduler)
    sched.refuse = True
    with Store(tmp_path / "r.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        runs = store.runs()
        assert len(runs) == 3 and {r["status"] for r in runs} == {"failed"}
        assert all("invalid partition" in r["reason"] for r in runs)


PROGRESS = """
[campaign]
name = "progress"
repeats = 3
timeout = 30
verify_transport = false
[variants.o]
stack = "openmpi"
np = 1
[benchmarks.quick]
command = "sleep 0.2"
"""


@pytest.mark.mpi
def test_progress_bar_shows_done_total_current_cell_and_eta(tmp_path, found_stacks):
    camp = tmp_path / "p.toml"
    camp.write_text(PROGRESS)
    # a terminal as rich sees it, without colour codes
    env = {**os.environ, "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "NO_COLOR": "1",
           "COLUMNS": "160"}
    res = subprocess.run([MPIBENCH, "campaign", "run", str(camp)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=MPI_TIMEOUT)
    assert res.returncode == 0, res.stderr
    frames = [f for f in re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", res.stderr))
              if " cells " in f]
    assert any(re.search(r"0/3 cells .*eta - +o / quick #1", f) for f in frames), frames
    assert any(re.search(r"1/3 cells .*eta \d+:\d\d:\d\d +o / quick #2", f) for f in frames)
    assert any("3/3 cells" in f for f in frames)

    # a resume that skips finished cells: no estimate until a cell has run in this
    # invocation (the 3 skipped ones are not instant progress), then one from its own pace
    camp.write_text(PROGRESS.replace("repeats = 3", "repeats = 5"))
    seen: list[tuple[int, int, str, float | None]] = []
    with Store(tmp_path / "mpibench.db") as store:
        runner = CampaignRunner(load(camp), store, found_stacks)
        runner.progress = lambda d, t, w: seen.append((d, t, w, runner.eta()))
        runner.run()
    assert seen[0][:2] == (3, 5) and seen[0][3] is None
    starts = [(d, w, eta) for d, t, w, eta in seen if w.startswith("o / quick #")
              and ":" not in w]
    assert [(d, w) for d, w, _ in starts] == [(3, "o / quick #4"), (4, "o / quick #5")]
    assert starts[0][2] is None and starts[1][2] > 0
    assert seen[-1][0] == 5 and seen[-1][3] == 0.0


@pytest.mark.mpi
@pytest.mark.parametrize("example", ["stacks-imb.toml", "openmpi-transports.toml",
                                     "gromacs-grid.toml"])
def test_example_campaigns_run_here(tmp_path, found_stacks, example):
    """The examples as shipped, shrunk only in size (1 repeat, 2 message sizes, short
    stopping budget, 1 GROMACS point) so the test stays short; every cell must finish and
    every requested transport must verify."""
    import shutil

    src = REPO / "examples"
    shutil.copy(src / example, tmp_path / example)
    shutil.copytree(src / "gromacs", tmp_path / "gromacs")
    spec = load(tmp_path / example)
    spec.repeats = 1
    for g in spec.groups:
        if g.kind == "core":
            g.sizes, g.options = "0,1K", {"max_time": 0.01}
        else:
            g.params = {"steps": [20], "box": g.params["box"]}
            g.variants = ["ompi[np=2]"]
    with Store(tmp_path / "e.db") as store:
        CampaignRunner(spec, store, found_stacks).run()
        data = st.status(store, spec)
        results = list(store.results(with_samples=False))
    assert data["cells"] > 0 and data["totals"]["done"] == data["cells"], data["problems"]
    assert {v["transport_verdict"] for v in data["variants"]} == {"ok"}
    if example == "gromacs-grid.toml":
        (fom,) = [r for r in results if r["metric"] == "ns/day"]
        assert fom["median"] > 0 and fom["unit"] == "ns/day" and fom["better"] == "higher"


OPTIONS = """
[campaign]
name = "core-options"
repeats = 1
timeout = 120
machine_probe = "off"
verify_transport = false
[variants.ompi]
stack = "openmpi"
transport = "shm"
[variants.mpich]
stack = "mpich"
transport = "shm"
[benchmarks.plain]
benchmarks = ["Reduce"]
sizes = "8"
options = { max_time = 0.02, timeout = 20 }
[benchmarks.tuned]
benchmarks = ["Reduce"]
sizes = "8,1M"
options = { iterations = 30, iterations_volume = "128", root_shift = true, off_cache = true, thread_level = "multiple", mem_limit = "64K", timeout = 20 }
"""


@pytest.mark.mpi
def test_core_options_of_a_group_take_effect_and_are_never_pooled(tmp_path, found_stacks):
    camp = tmp_path / "opts.toml"
    camp.write_text(OPTIONS)
    summary, _ = run_campaign(camp, tmp_path / "o.db", found_stacks)
    assert summary.counts == {"done": 4}, summary
    with Store(tmp_path / "o.db") as store:
        runs = {(r["variant"], r["grp"]): r for r in store.runs()}
        for v in ("ompi", "mpich"):
            plain, tuned = runs[(v, "plain")], runs[(v, "tuned")]
            assert plain["id"] != tuned["id"] and plain["fingerprint_id"] != tuned["fingerprint_id"]
            opts = store.fingerprint(tuned["fingerprint_id"])["core_options"]
            assert opts["root_shift"] is True and opts["off_cache"] is True
            assert opts["thread_level"] == "multiple" and opts["iterations_volume"] == 128
            assert store.fingerprint(plain["fingerprint_id"])["core_options"]["mode"] == \
                "adaptive"
            rows = {r["size"]: r for r in store.results([tuned["id"]], with_samples=False)}
            assert rows[8]["extra"]["iterations"] == 16                 # min(30, 128 / 8)
            assert rows[8]["extra"]["root_shift"] is True
            assert rows[1 << 20]["status"] == "skipped"                 # above mem_limit
            header = json.loads((Path(tuned["run_dir"]) / "core.jsonl").open().readline())
            assert header["options"]["mem_limit"] == 65536
        # the same benchmark and size measured two ways is one cell for a comparison, but
        # its runs are not pooled: one fingerprint is used, the other footnoted
        from mpibench.report.data import load_cells
        from mpibench.report.rules import CellKey

        cells = load_cells(store, {"ompi": [runs[("ompi", g)]["id"] for g in ("plain",
                                                                               "tuned")]})
        c = cells[CellKey("Reduce", 8, 2, "{}", "time")]["ompi"]
        assert c.n_fingerprints == 2 and len(c.runs_used) == 1 and len(c.runs_excluded) == 1


NO_MPI = """
[campaign]
name = "charm"
repeats = 2
[variants.charm-net]
stack = "none"
launcher = "template"
launcher_args = ["sh", "-c", 'echo ranks={np}; exec "$0" "$@"', "{program}"]
np = 2
[benchmarks.app]
command = "sh -c 'echo rate 3.5 ns/day'"
fom = { name = "ns/day", regex = 'rate ([0-9.]+)', unit = "ns/day", better = "higher" }
"""


@pytest.mark.system
def test_campaign_run_json_says_where_its_time_went_besides_the_launches(tmp_path, capsys):
    """`campaign run --json`'s timing: the process's start, its entry past the imports,
    the checks, the store open, the sync, the last cell committed and the status read
    back, in that order and on the store's clock (each run's started and finished fall
    between synced and cells_done); the time-to-decision bench splits the time between
    launches with it (time_between). No budget = "auto" here: no plan seconds."""
    from mpibench.campaign.runner import process_started
    from mpibench.cli import main as cli_main

    camp = tmp_path / "c.toml"
    camp.write_text(NO_MPI)
    before = time.time()
    assert cli_main(["campaign", "run", "--no-progress", "--json", str(camp)]) == 0
    after = time.time()
    t = json.loads(capsys.readouterr().out)["timing"]
    marks = [t[k] for k in ("process_start", "entry", "loaded", "checked", "store_open",
                            "synced", "cells_done", "status")]
    assert marks == sorted(marks) and before <= t["entry"] and t["status"] <= after
    assert t["budget_plan_s"] is None and t["budget_plan_reused"] is None
    with Store(tmp_path / "mpibench.db") as store:
        runs = store.runs()
    assert len(runs) == 2 and all(t["synced"] <= r["started"] <= r["finished"]
                                  <= t["cells_done"] for r in runs)
    # a process's start to the clock tick: a child started between t0 and t1 (the
    # tolerance is the two 1/100 s counters it is read from; a pause while it reads them,
    # which a loaded machine makes, widens it by at most the call's own duration)
    t0 = time.time()
    child = subprocess.Popen(["sleep", "5"])
    t1 = time.time()
    try:
        started = process_started(child.pid)
        pause = time.time() - t1
        assert t0 - 0.03 - pause <= started <= t1 + 0.03 + pause
    finally:
        child.kill()
        child.wait()


@pytest.mark.system
def test_an_application_without_mpi_is_a_first_class_variant(tmp_path):
    """A Charm++-style build over its own network layer: stack = "none" names no MPI, runs
    through its own launcher (here a template standing for charmrun +p{np}), has no MPI
    probe and no 'unverified' flag, and its fingerprint claims no MPI library."""
    camp = tmp_path / "c.toml"
    camp.write_text(NO_MPI)
    summary, data = run_campaign(camp, tmp_path / "c.db", [])      # no MPI stack at all
    assert data["totals"]["done"] == 2
    with Store(tmp_path / "c.db") as store:
        runs = store.runs()
        assert all(r["transport_actual"] is None for r in runs)
        fp = store.fingerprint(runs[0]["fingerprint_id"])
        assert fp["stack"]["kind"] == "none" and fp["stack"]["name"] == "none"
        assert "openmpi" not in json.dumps(fp).lower() and not fp["stack"]["version"]
        assert (Path(runs[0]["run_dir"]) / "stdout.txt").read_text().startswith("ranks=2\n")
        assert sorted(r["median"] for r in store.results(benchmark="app")
                      if r["metric"] == "ns/day") == [3.5, 3.5]
    assert not (tmp_path / "runs" / "_verify").exists()
    # an MPI-only setting on it is refused, in one line naming the key
    for extra, key in (('transport = "tcp"', "transport"), ('mca = { btl = "tcp" }', "mca")):
        bad = tmp_path / "bad.toml"
        bad.write_text(NO_MPI.replace('stack = "none"', f'stack = "none"\n{extra}'))
        with pytest.raises(UsageError, match=rf"variants\.charm-net\.{key}: .*no MPI"):
            load(bad)
    core = tmp_path / "core.toml"
    core.write_text(NO_MPI.split("[benchmarks.app]")[0] + "[benchmarks.pp]\n"
                    'benchmarks = ["PingPong"]\n')
    with pytest.raises(UsageError, match=r"no MPI"):
        with Store(tmp_path / "core.db") as store:
            CampaignRunner(load(core), store, []).check()


BUDGET = """
[campaign]
name = "budget"
repeats = { min = 2, max = 3, target = "0.01%" }
budget = "auto"
timeout = 120
machine_probe = "off"
verify_transport = false
[variants.a]
stack = "openmpi"
transport = "shm"
np = 2
[variants.b]
stack = "openmpi"
transport = "shm"
np = 2
[benchmarks.lat]
benchmarks = ["PingPong"]
sizes = "0:2"
"""


@pytest.mark.mpi
@pytest.mark.parametrize("scheduler", ["local", "test-subprocess"])
def test_budget_auto_sets_the_cores_target_after_two_rounds(tmp_path, found_stacks,
                                                            scheduler):
    # budget = "auto" (stats/budget.py): rounds 1-2 the pilot (every cell at the core's
    # --min-samples within 0.002 s: --target 100 --max-time 0.002 --accept-approximate),
    # then the core's
    # --target and --max-time from the measured components; the cell ids (and so the
    # pooling) stay. Two stages (repeats "auto" with a target no spread meets: 2 rounds,
    # then the third), so the batch policy has two finished rounds before it submits it.
    camp = tmp_path / "b.toml"
    text = BUDGET
    if scheduler != "local":
        text += ('[scheduler]\nname = "test-subprocess"\nmax_jobs_in_flight = 2\n'
                 "poll_interval = 0.05\npoll_max_interval = 0.2\n")
    camp.write_text(text)
    said: list[str] = []
    summary, data = run_campaign(camp, tmp_path / "b.db", found_stacks, log=said.append)
    assert summary.ran == 6 and data["totals"]["done"] == 6
    assert any(m.startswith("budget = auto: group lat: budget: --target ") for m in said), said
    with sqlite3.connect(tmp_path / "b.db") as con:
        argv = {(v, r): json.loads(a) for v, r, a in con.execute(
            "SELECT variant, repeat, argv_json FROM runs")}
    for (v, r), a in argv.items():
        assert "--target" in a and "--max-time" in a, (v, r, a)
        if r < 2:
            assert a[a.index("--target") + 1] == "100.0" and "--accept-approximate" in a
            assert a[a.index("--max-time") + 1] == "0.002", (v, r, a)
    t = argv[("a", 2)][argv[("a", 2)].index("--target") + 1]
    assert float(t) > 0
    assert load(camp).to_dict()["budget"] == "auto"


DECIDE_CAMPAIGN = """
name = "decide"
repeats = { until = "decided", min = 3, max = 5, step = 2 }
equivalence = "0.5%"
timeout = 30
"""


@pytest.mark.system
@pytest.mark.parametrize("scheduler", ["local", "test-subprocess"])
def test_decide_adds_launches_only_where_cells_are_undecided(tmp_path, scheduler):
    tail = ""
    if scheduler != "local":      # the batch policy: stages of jobs, polled
        tail = ('[scheduler]\nname = "test-subprocess"\nmax_jobs_in_flight = 2\n'
                "poll_interval = 0.05\npoll_max_interval = 0.2\n")
    camp = write_decide_campaign(tmp_path, DECIDE_CAMPAIGN, tail)
    said: list[str] = []
    summary, data = run_campaign(camp, tmp_path / "d.db", [], log=said.append)
    # planned 2 groups x 2 variants x 5; 'differ' stops after its first 3 rounds
    assert data["totals"]["done"] == 16 and summary.auto_skipped == 4, said
    with Store(tmp_path / "d.db") as store:
        ran = Counter((r["grp"], r["variant"]) for r in store.runs() if r["status"] == "done")
    assert ran == {("differ", "a"): 3, ("differ", "b"): 3, ("same", "a"): 5, ("same", "c"): 5}
    d = data["decisions"]
    assert (d["cells"], d["significant"], d["equivalent"], d["undecided"]) == (2, 1, 0, 1)
    pts = {p["group"]: p for p in d["points"]}
    assert pts["differ"]["state"] == "decided: every cell by 3 launches per variant"
    assert pts["same"]["state"].startswith("undecided after the maximum of 5 launches")
    # decided before the last look: the look (3), its level (0.01) and the CI the report
    # prints for it, widened for sequential looks to 1 - 0.01 x p / p_holm (>= 0.99)
    (early,) = pts["differ"]["early"]
    assert (early["status"], early["launches"], early["look_level"]) == (
        "significant", 3, pytest.approx(0.01))
    assert early["ci_widened"] and 0.99 <= early["level"] < 1.0
    assert early["p_sequential"] == pytest.approx(early["p_holm"] * 0.05 / 0.01)
    assert early["ci_low"] < early["gain"] < early["ci_high"] < 1.0 and pts["same"]["early"] == []
    assert pts["differ"]["cells_decided"] == [early] and pts["same"]["cells_decided"] == []
    # the campaign is interleaved: a's and b's launches of a round are tested as a pair
    assert (early["pairing"], early["rounds"], early["unpaired_launches_not_used"]) == (
        "round", 3, 0)
    assert "c vs a: undecided after the maximum of 5 launches per side" in pts["same"]["reason"]
    assert any("look at 3 launches per variant" in m and "1 of 2 cells decided" in m
               for m in said), said
    # resuming finds nothing to run: the looks replay to the same decisions
    summary, again = run_campaign(camp, tmp_path / "d.db", [])
    assert summary.ran == 0 and again["decisions"] == d
    # the looks were taken: another margin would re-decide them with another design, so
    # it is refused and nothing is written (the stored margin is still the one they used)
    text = camp.read_text()
    camp.write_text(text.replace('equivalence = "0.5%"', 'equivalence = "1%"'))
    with pytest.raises(UsageError, match=r"campaign\.equivalence changed after the first "
                       r'look of campaign\.repeats = "decide"'):
        run_campaign(camp, tmp_path / "d.db", [])
    with Store(tmp_path / "d.db") as store:
        (c,) = store.db.execute("SELECT spec_json FROM campaigns").fetchall()
        assert json.loads(c[0])["equivalence"] == 0.005
    # so would another figure of merit of an application group (the metric it decides on),
    # and a variant added to a group point whose look was taken (its stage 1 would run
    # after the look that decided on it): one line naming the file and the variant
    for edited, words in (
            (text.replace("better = \"lower\"", "better = \"higher\"", 1),
             r"benchmarks\.differ\.fom changed after the first look"),
            (text.replace('variants = ["a", "b"]', 'variants = ["a", "b", "c"]'),
             r"variant c added to group differ after the first look")):
        stored = _refused_and_unchanged(camp, text, edited, words, tmp_path / "d.db", 20)
        assert stored["groups"][0]["foms"][0]["better"] == "lower"
    camp.write_text(text)
    # the report's section says the same, from the stored spec
    from mpibench.report.decisions import decisions_tables

    with Store(tmp_path / "d.db") as store:
        ids = {v: [r["id"] for r in store.runs(variant=v)] for v in "abc"}
        (table,) = decisions_tables(store, ids)
    assert [r[:4] for r in table.rows] == [
        ["differ", "-", "3", "decided: every cell by 3 launches per variant"],
        ["same", "-", "5", "undecided after the maximum of 5 launches per variant: 1 cell(s)"]]
    assert table.rows[1][4].startswith("c vs a: undecided after the maximum")
    # every cell the status calls decided is printed decided by the report, same direction,
    # with the status's p and CI; the undecided one is printed not significant
    from mpibench.report.judge import compare_groups

    with Store(tmp_path / "d.db") as store:
        cmp = compare_groups(store, ids, "a")
    shown = {(r.benchmark, r.size, r.metric, g): d for r in cmp.rows
             for g, d in r.deltas.items() if d.tested}
    decided = [c for p in d["points"] for c in p["cells_decided"]]
    assert decided
    for c in decided:
        row = shown[(c["benchmark"], c["size"], c["metric"], c["candidate"])]
        if c["status"] == "significant":
            assert row.significant and row.direction == ("better" if c["gain"] > 1
                                                         else "worse")
        else:
            assert row.equivalent and not row.significant
        assert row.p_adj == pytest.approx(c["p_sequential"])
        assert list(row.ci_holm) == pytest.approx([c["ci_low"], c["ci_high"]])
        assert row.test.pairing == c["pairing"] == "round"
    assert not shown[("same", None, "t", "c")].significant
    assert {d.test.pairing for d in shown.values()} == {"round"}


@pytest.mark.system
def test_auto_two_stage_total_per_group_through_the_stages(tmp_path):
    # repeats = "auto" (the two-stage rule) runs through the same Stages: after 3 rounds
    # each group's total is fixed from the spread of its round differences (stage 2 at
    # least 3 rounds): b/a moves by 1-2% (6 rounds give ±4%), c/a by 2-4% (7 needed)
    camp = write_decide_campaign(tmp_path, DECIDE_CAMPAIGN.replace(
        'repeats = { until = "decided", min = 3, max = 5, step = 2 }',
        'repeats = { min = 3, max = 8, target = "4%" }'))
    said: list[str] = []
    summary, data = run_campaign(camp, tmp_path / "a.db", [], log=said.append)
    with Store(tmp_path / "a.db") as store:
        ran = Counter((r["grp"], r["variant"]) for r in store.runs() if r["status"] == "done")
    assert ran == {("differ", "a"): 6, ("differ", "b"): 6, ("same", "a"): 7, ("same", "c"): 7}
    assert summary.auto_skipped == 6 and "decisions" not in data
    assert any(m.startswith("repeats = auto: group same: 7 launches per variant") for m in said)
    # compare on the campaign's launches: each tested cell footnotes which test its CI and
    # p are (stats.two_stage: rounds 0-2 were stage 1, from the stored repeat and rule)
    from mpibench.report.judge import compare_groups

    with Store(tmp_path / "a.db") as store:
        ids = {v: [r["id"] for r in store.runs() if r["status"] == "done"
                   and r["grp"] == "same" and r["variant"] == v] for v in ("a", "c")}
        cmp = compare_groups(store, ids, "a")
    tested = [r.deltas["c"] for r in cmp.rows if r.deltas["c"].tested]
    assert tested and all(any(cmp.footnotes[n - 1].startswith('repeats = "auto" (two-stage)')
                              for n in d.notes) for d in tested)
    assert {d.test.pairing for d in tested} == {"round"} and tested[0].test.pairs == 7
    # a resumed run takes the look again (the totals are not stored): it reads only the
    # stage-1 launches (rounds < min), never the stage-2 ones it ran since, so it fixes the
    # same totals and the rounds past them stay pending
    again: list[str] = []
    resumed, _ = run_campaign(camp, tmp_path / "a.db", [], log=again.append)
    assert resumed.ran == 0 and resumed.auto_skipped == 6, again
    looks = [m for m in said if m.startswith("repeats = auto: group")]
    assert len(looks) == 2 and [m for m in again if m in looks] == looks, again
    # stage 2 ran: a lowered min (rounds the look read would become stage 2) is refused
    # and nothing is written; the stored rule is still the one the stages ran
    text = camp.read_text()
    camp.write_text(text.replace("min = 3, max = 8", "min = 2, max = 8"))
    with pytest.raises(UsageError, match=r"campaign\.repeats changed after stage 2"):
        run_campaign(camp, tmp_path / "a.db", [])
    with Store(tmp_path / "a.db") as store:
        (c,) = store.db.execute("SELECT spec_json FROM campaigns").fetchall()
        assert json.loads(c[0])["repeats_auto"] == {"min": 3, "max": 8, "target": 0.04}
    # so are the baseline (the variants' order: b first would be differ's baseline) and
    # the figures of merit the look planned on: one line naming the file, nothing written
    a_table = f'[variants.a]\nenv = {{ V = "a", DIR = "{tmp_path}" }}\n'
    assert a_table in text
    for edited, words in (
            (text.replace(a_table, "").replace("[variants.c]", a_table + "[variants.c]"),
             "the variants' order changed after stage 2"),
            (text.replace("regex = 'value ([0-9]+)'", "regex = 'value ([0-9]+)$'", 1),
             r"benchmarks\.differ\.fom changed after stage 2")):
        stored = _refused_and_unchanged(camp, text, edited, words, tmp_path / "a.db", 32)
        assert [v["name"] for v in stored["variants"]] == ["a", "b", "c"]
        assert stored["groups"][0]["foms"][0]["regex"] == "value ([0-9]+)"


def _refused_and_unchanged(camp, text: str, edited: str, words: str, db, runs: int) -> dict:
    """The campaign file edited after a look is refused in one line naming the file and
    what changed (regex `words`), with nothing written: the store keeps `runs` runs. The
    stored spec, for the caller's checks of what it kept."""
    assert edited != text
    camp.write_text(edited)
    with pytest.raises(UsageError, match="^" + re.escape(str(camp)) + ": " + words) as e:
        run_campaign(camp, db, [])
    assert "\n" not in str(e.value)
    with Store(db) as store:
        assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == runs
        (c,) = store.db.execute("SELECT spec_json FROM campaigns").fetchall()
    return json.loads(c[0])


DECIDE_REAL = """
[campaign]
name = "decide-real"
repeats = { until = "decided", min = 4, max = 6, step = 2 }
equivalence = "0.1%"
timeout = 60
machine_probe = "off"
verify_transport = false
[defaults]
stack = "openmpi"
np = 2
[variants.shm]
transport = "shm"
[variants.tcp]
transport = "tcp"
interface = "lo"
[variants.shm2]
transport = "shm"
[benchmarks.differ]
benchmarks = ["PingPong"]
sizes = "0,8"
variants = ["shm", "tcp"]
options = { max_time = 0.02, timeout = 20 }
[benchmarks.same]
benchmarks = ["PingPong"]
sizes = "0,8"
variants = ["shm", "shm2"]
options = { max_time = 0.02, timeout = 20 }
"""


@pytest.mark.mpi
def test_decide_on_real_launches_shm_vs_tcp_stops_and_aa_goes_on(tmp_path, found_stacks):
    # Open MPI over TCP (lo) vs shared memory at 0-8 B (tens of times slower): decided at
    # the first look (4 launches) on a quiet machine; the same stack under two names (A/A)
    # is neither significant at the interim level nor within ±0.1%, so it gets launches to
    # the maximum. On a machine with more runnable processes than cores the two
    # busy-polling ranks are descheduled in turn and a launch may run one size at 4-40 ms a
    # message (a scheduler slice each) instead of 5 us: under ../shared/tools/under-load
    # 25-77% of Open MPI TCP launches at 0,8 B had such a size. One such round of 4 leaves
    # its cell at p ~0.06, not the interim level 0.01: the rule rightly waits, and decides
    # at the last look (6 rounds, alpha 0.05: p <= ~0.02 after Holm with one or two slow
    # rounds). A user's campaign on such a machine does the same, so the data keep it and
    # the test takes the look the rule took (`looked`): 4 when no launch stalled, else 6.
    # That the rule stops at its first look when every cell is clear is pinned with
    # deterministic figures in test_decide_adds_launches_only_where_cells_are_undecided.
    # The same load slows shared-memory launches too (6-25% of them, tests/test_check_real.py):
    # a round whose shm launch ran a size that way and whose tcp launch did not has that
    # cell's round difference reversed (log(tcp/shm) ~ -5 instead of ~ +3.4). With the
    # rule's own test one such round of 6 still decides the cell (median p 0.009), but two
    # in a cell, or one in each cell, leave it at p 0.05-0.2 (review R9, pass 3). The rule
    # rightly leaves it undecided after the maximum; the test accepts that only for a cell
    # with such a round in the store (the premise "tcp slower" broken by the machine), so a
    # rule that fails to decide a clear cell still fails it on any machine that did not
    # reverse a round.
    camp = tmp_path / "r.toml"
    camp.write_text(DECIDE_REAL)
    said: list[str] = []
    summary, data = run_campaign(camp, tmp_path / "r.db", found_stacks, log=said.append)
    assert data["totals"]["failed"] == data["totals"]["timeout"] == 0
    with Store(tmp_path / "r.db") as store:
        ran = Counter((r["grp"], r["variant"]) for r in store.runs() if r["status"] == "done")
        medians = {(r["variant"], r["repeat"], r["size"]): r["median"]
                   for r in store.results(benchmark="PingPong", with_samples=False)
                   if r["grp"] == "differ" and r["metric"] == "time"}
    pts = {p["group"]: p for p in data["decisions"]["points"]}
    differ = pts["differ"]
    looked = differ["launches"]
    assert looked in (4, 6), differ
    assert ran == {("differ", "shm"): looked, ("differ", "tcp"): looked, ("same", "shm"): 6,
                   ("same", "shm2"): 6}, said
    assert summary.auto_skipped == 2 * (6 - looked)
    # every decided cell of "differ" is the regression (tcp worse), none equivalent
    decided = {c["size"] for c in differ["cells_decided"]}
    assert all(c["status"] == "significant" and c["gain"] < 1
               for c in differ["cells_decided"]), differ
    assert differ["significant"] == len(decided) and differ["equivalent"] == 0
    undecided = {0, 8} - decided
    if not undecided:
        assert differ["state"] == f"decided: every cell by {looked} launches per variant"
    else:
        # only at the maximum, and only where a round's shm launch was no faster than its
        # tcp launch in that cell (shown by the store's launch medians)
        assert looked == 6 and differ["state"].startswith(
            "undecided after the maximum of 6 launches"), differ
        for size in undecided:
            rounds = {k: (medians[("shm", k, size)], medians[("tcp", k, size)])
                      for k in range(6)}
            assert any(shm >= tcp for shm, tcp in rounds.values()), (size, rounds, differ)
    # at the last look (alpha 0.05) an A/A cell is significant in about 5% of such runs;
    # otherwise it is reported undecided with the reason
    same = pts["same"]
    assert same["launches"] == 6
    assert same["state"].startswith("undecided after the maximum of 6 launches") or \
        same["significant"] + same["equivalent"] == 2, same
    # both groups share the baseline shm at the same cells: the campaign's table pools
    # shm's launches of both groups, and so does the rule (it decides what the table
    # compares): the table prints the rule's decision, at the look it took it (4 rounds:
    # 8 shm launches, 4 tcp; or 6 rounds: 12 and 6), in the same direction
    from mpibench.report.compare_view import render
    from mpibench.report.judge import compare_groups
    from mpibench.report.select import select_groups

    with Store(tmp_path / "r.db") as store:
        sets = select_groups(store, campaign="decide-real")
        cmp = compare_groups(store, sets, "shm")
    js = json.loads(render(cmp, "json"))
    assert js["pairing"] == "round"
    for c in pts["differ"]["cells_decided"]:
        (row,) = [r.deltas["tcp"] for r in cmp.rows if r.size == c["size"]]
        assert row.significant and row.direction == "worse" and c["gain"] < 1
        # an interleaved campaign: shm and tcp launches of one round tested as a pair (the
        # look's rounds); shm's launches of the other group have no partner here
        assert (c["pairing"], c["rounds"], c["unpaired_launches_not_used"]) == (
            "round", looked, looked)
        assert (row.n_base, row.n_cand) == (looked, looked)
        # a sequential level only for a decision before the last look
        assert (row.seq_level is not None) == (looked < 6)
        assert row.test.pairing == "round" and row.p_adj == pytest.approx(c["p_sequential"])
        assert list(row.ci_holm) == pytest.approx([c["ci_low"], c["ci_high"]])


DECIDE_SIZES = """
[campaign]
name = "decide-sizes"
repeats = { until = "decided", min = 3, max = 5, step = 2 }
equivalence = "0.1%"
timeout = 60
machine_probe = "off"
verify_transport = false
[defaults]
stack = "openmpi"
np = 2
transport = "shm"
[variants.cma]
[variants.copy]
env = { OMPI_MCA_btl_vader_single_copy_mechanism = "none" }
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0,1M"
options = { max_time = 0.02, timeout = 20 }
"""


@pytest.mark.mpi
def test_decide_later_launches_measure_only_the_undecided_sizes(tmp_path, found_stacks,
                                                                monkeypatch):
    # A decision is final per cell, so the launches after a look run only the sizes with
    # an undecided cell (auto_repeats.undecided_sizes; which sizes it picks is pinned by
    # test_auto_repeats with seeded looks). A real pair of variants that decides one size
    # and not the other at the first look could not be found here (1 MiB with and without
    # Open MPI's single-copy mechanism stayed undecided under load), so the rule's answer
    # is narrowed to 0 B after the real look: the launches of rounds 4-5 must hold only
    # 0 B rows and say "--sizes 0", rounds 1-3 both sizes, and compare still tests both
    # cells, 1 MiB on its 3 rounds and 0 B on 5 (the cells keep their identity).
    from mpibench.campaign import auto_repeats
    from mpibench.report.judge import compare_groups
    from mpibench.report.select import select_groups

    real, asked = auto_repeats.undecided_sizes, []

    def first_size_only(look, needs):
        out = real(look, needs)
        asked.append(dict(out))
        return {k: "0" for k in out}

    monkeypatch.setattr(auto_repeats, "undecided_sizes", first_size_only)
    camp = tmp_path / "s.toml"
    camp.write_text(DECIDE_SIZES)
    said: list[str] = []
    _summary, data = run_campaign(camp, tmp_path / "s.db", found_stacks, log=said.append)
    assert data["totals"]["failed"] == data["totals"]["timeout"] == 0, said
    with Store(tmp_path / "s.db") as store:
        runs = {r["id"]: r for r in store.runs() if r["status"] == "done"}
        sizes: dict[str, set] = {rid: set() for rid in runs}
        for rid, size in store.db.execute("SELECT run_id, size FROM results"):
            if rid in sizes:
                sizes[rid].add(size)
        cmp = compare_groups(store, select_groups(store, campaign="decide-sizes"), "cma")
    if not any(asked):           # 0 B decided at the first look too (an A/A cell rarely is)
        pytest.skip(f"every cell decided at the first look: {asked}")
    assert sorted(r["repeat"] for r in runs.values()) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    for rid, r in runs.items():
        argv = json.loads(r["argv_json"])
        want, arg = ({0, 1 << 20}, "0,1M") if r["repeat"] < 3 else ({0}, "0")
        assert (sizes[rid], argv[argv.index("--sizes") + 1]) == (want, arg), r["repeat"]
    counts = {row.size: (row.deltas["copy"].n_base, row.deltas["copy"].n_cand)
              for row in cmp.rows}
    assert counts == {0: (5, 5), 1 << 20: (3, 3)}, counts
