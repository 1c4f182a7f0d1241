"""The campaign side of batch scheduling, without a cluster: [scheduler] validation, node
counts and ranks per node, and the runner's batch loop (jobs in flight, grouping, backoff,
failed queries, job states -> cell states) against an in-test backend whose jobs "run" the
moment they are polled. Nothing here launches MPI: the backend writes what a job script
would leave in each run directory.
"""

from __future__ import annotations

import json
import re
import time
import types
from pathlib import Path

import pytest

import mpibench.campaign.batch as batch_mod
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.schedulers import (
    EXIT_STATUS_FILE,
    TIMING_FILE,
    JobStatus,
    Scheduler,
    SchedulerQueryError,
    SubmissionUnknown,
    job_body,
    register_scheduler,
)
from mpibench.store import Store

HEAD = """
[campaign]
name = "fake-batch"
repeats = {repeats}
timeout = 30
verify_transport = false

[variants.a]
stack = "mpich"
np = 1
{variant_extra}

[benchmarks.echo]
command = "echo hello"
fom = "wall_time"

[scheduler]
name = "{scheduler}"
poll_interval = 1
poll_max_interval = 4
{scheduler_extra}
"""


def _campaign(tmp_path: Path, *, repeats: int = 1, variant_extra: str = "",
              scheduler: str = "test-instant", scheduler_extra: str = "") -> Path:
    path = tmp_path / "camp.toml"
    path.write_text(HEAD.format(repeats=repeats, variant_extra=variant_extra,
                                scheduler=scheduler, scheduler_extra=scheduler_extra))
    return path


# -- [scheduler] and placement validation ----------------------------------------------------
@pytest.mark.parametrize("extra, message", [
    ('qos = ""', r"camp\.toml: scheduler\.qos: got ''"),
    ("query_retries = 0", r"camp\.toml: scheduler\.query_retries: got 0; expected an integer"),
    ("sbatch = 5", r"camp\.toml: scheduler\.sbatch: got 5; expected a command path"),
    ("mem = true", r"camp\.toml: scheduler\.mem: got True"),
    ("ncpus = 4", r"camp\.toml: scheduler\.ncpus: unknown key"),
    ("max_jobs_in_flight = 0", r"scheduler\.max_jobs_in_flight: got 0; expected an integer"),
    ("group_cells = -1", r"scheduler\.group_cells: got -1; expected an integer >= 0"),
    ('time_limit = "1:xx"', r"scheduler\.time_limit: got '1:xx'"),
])
def test_backend_keys_are_checked_when_the_file_is_loaded(tmp_path, extra, message):
    with pytest.raises(UsageError, match=message):
        load(_campaign(tmp_path, scheduler="slurm", scheduler_extra=extra))


def test_pbs_keys_are_checked_when_the_file_is_loaded(tmp_path):
    with pytest.raises(UsageError, match=r"scheduler\.resources: got 'chunks'"):
        load(_campaign(tmp_path, scheduler="pbs", scheduler_extra='resources = "chunks"'))
    spec = load(_campaign(tmp_path, scheduler="pbs", scheduler_extra="ncpus = 8"))
    assert spec.scheduler.options == {"ncpus": 8}


@pytest.mark.parametrize("value, expected", [("0", 0), ("true", 0), ("false", 1), ("3", 3)])
def test_group_cells_zero_or_true_means_all_cells_of_a_variant(tmp_path, value, expected):
    spec = load(_campaign(tmp_path, scheduler="slurm", scheduler_extra=f"group_cells = {value}"))
    assert spec.scheduler.group_cells == expected


def test_node_sweep_with_ranks_per_node_sets_np(tmp_path):
    path = _campaign(tmp_path, scheduler="slurm")
    text = path.read_text().replace("np = 1\n", "ppn = 4\nsweep = { nodes = [2, 4, 8] }\n")
    text += '\n[variants.half]\nstack = "mpich"\nppn = 2\nsweep = { nodes = [2, 4] }\n'
    path.write_text(text)
    got = {v.name: (v.nodes, v.ppn, v.np) for v in load(path).variants}
    assert got == {"a[nodes=2]": (2, 4, 8), "a[nodes=4]": (4, 4, 16), "a[nodes=8]": (8, 4, 32),
                   "half[nodes=2]": (2, 2, 4), "half[nodes=4]": (4, 2, 8)}


def test_np_that_does_not_fit_nodes_times_ppn_is_refused(tmp_path):
    path = _campaign(tmp_path, scheduler="slurm", variant_extra="nodes = 2\nppn = 2")
    path.write_text(path.read_text().replace("np = 1", "np = 5"))
    with pytest.raises(UsageError, match=r"variants\.a\.np: a: 5 ranks do not fit 2 node\(s\) "
                                         r"x ppn 2; expected np <= nodes \* ppn"):
        load(path)
    path.write_text(path.read_text().replace("np = 5", "np = 3"))  # under-filled is allowed
    assert load(path).variants[0].np == 3


# -- the runner's batch loop against an instant backend ----------------------------------------
@register_scheduler("test-instant")
class InstantScheduler(Scheduler):
    """Jobs stay queued for `queued_polls` polls, run for one, then finish with `final`.
    Records what the runner asked for; writes the step files a job script would."""

    batch = True
    queued_polls = 1
    final: JobStatus | None = None  # None: completed, every step exit 0
    write_steps = True
    failing_polls = 0  # the first N polls raise SchedulerQueryError
    probe_text = ""  # what a transport probe step prints on stderr
    probe_status = 0  # and the exit status its job script records
    timing = {"started": 1.0, "finished": 3.5}  # each step's timing.json

    def __init__(self, settings=None):
        super().__init__(settings)
        self.jobs: dict[str, tuple] = {}
        self.polls: list[list[str]] = []
        self.in_flight_max = 0
        self.requests = []
        self.submitted: dict[str, float] = {}
        self.lookups: list[tuple[str, float | None]] = []
        self.lookup_fails = False

    def find_job(self, req, since=None):
        self.lookups.append((req.name, since))
        if self.lookup_fails:
            raise SchedulerQueryError("squeue: Unable to contact slurm controller")
        for jid, (r, n) in self.jobs.items():
            alive = n <= self.queued_polls + 1
            if r.name == req.name and (alive or since is not None
                                       and self.submitted[jid] >= since):
                return jid
        return None

    def render_script(self, req):
        return "#!/bin/bash\n" + job_body(req)

    def submit(self, req):
        jid = str(1000 + len(self.jobs))
        self.jobs[jid] = (req, 0)
        self.submitted[jid] = time.time()
        self.requests.append(req)
        unfinished = sum(1 for j, (_, n) in self.jobs.items()
                         if n <= self.queued_polls + 1)
        self.in_flight_max = max(self.in_flight_max, unfinished)
        return jid

    def poll(self, job_ids):
        self.polls.append(list(job_ids))
        if len(self.polls) <= self.failing_polls:
            raise SchedulerQueryError("squeue: slurm_receive_msg: Socket timed out")
        out = {}
        for jid in job_ids:
            req, n = self.jobs[jid]
            n += 1
            self.jobs[jid] = (req, n)
            if n <= self.queued_polls:
                out[jid] = JobStatus("pending", reason="queued (Priority)", raw="PENDING")
            elif n == self.queued_polls + 1:
                out[jid] = JobStatus("running", nodelist="n[1-2]", raw="RUNNING")
            else:
                if self.write_steps:
                    n_steps = len(req.steps) if self.write_steps is True else self.write_steps
                    for st in req.steps[:n_steps]:
                        probe = st.cell_id.endswith("-verify")
                        st.run_dir.mkdir(parents=True, exist_ok=True)
                        st.stdout.write_text("" if probe else "hello\n")
                        st.stderr.write_text(self.probe_text if probe else "")
                        (st.run_dir / TIMING_FILE).write_text(json.dumps(self.timing))
                        (st.run_dir / EXIT_STATUS_FILE).write_text(
                            f"{self.probe_status if probe else 0}\n")
                out[jid] = self.final or JobStatus("completed", 0, None, "n[1-2]",
                                                   "COMPLETED")
        return out


class _Clock:
    """Stands in for the runner's `time` module: sleeps are recorded, not slept."""

    def __init__(self):
        import time as real

        self.sleeps: list[float] = []
        self.time = real.time
        self.monotonic = real.monotonic

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    # the batch policy's poll loop is what sleeps: each wait between polls is recorded as
    # one sleep of its interval (the early end of a wait is test_a_wait_between_polls_...)
    monkeypatch.setattr(batch_mod, "time", types.SimpleNamespace(
        sleep=c.sleep, time=c.time, monotonic=c.monotonic))
    monkeypatch.setattr(batch_mod.BatchPolicy, "_wait_for_poll",
                        lambda self, st: c.sleep(st.interval))
    return c


def _ending_job(tmp_path: Path, name: str):
    from mpibench.schedulers import JobRequest, JobStep

    d = tmp_path / name
    d.mkdir()
    steps = [JobStep(f"c-{name}-{i}", d / str(i), ["true"], {}, d / f"o{i}", d / f"e{i}")
             for i in range(2)]
    return JobRequest(name=name, steps=steps, run_dir=d), d / "1" / EXIT_STATUS_FILE


def test_a_wait_between_polls_ends_when_a_jobs_last_step_has_written_its_exit_status(
        tmp_path, monkeypatch):
    """Between polls the loop looks for each job's last exit_status (the script is ending)
    and asks the scheduler then, instead of up to poll_max_interval later; once per job.
    Fake time: sleeps are counted, not slept."""
    slept: list[float] = []
    req_a, last_a = _ending_job(tmp_path, "a")
    req_b, last_b = _ending_job(tmp_path, "b")
    last_a.parent.mkdir()
    last_b.parent.mkdir()

    def sleep(s: float) -> None:
        slept.append(s)
        if len(slept) == 3:          # job a's last step ends during the third slice
            last_a.write_text("0\n")

    monkeypatch.setattr(batch_mod, "time", types.SimpleNamespace(sleep=sleep))
    st = batch_mod._BatchState(queue=[], interval=60.0,
                               inflight={"1": (req_a, []), "2": (req_b, [])})
    wait = batch_mod.BatchPolicy._wait_for_poll
    wait(None, st)
    assert len(slept) == 3 and sum(slept) < 1 and st.ending == {"1"}
    # job a woke the loop once; with nothing else ending the wait runs its whole interval
    slept.clear()
    wait(None, st)
    assert sum(slept) == pytest.approx(60.0) and st.ending == {"1"}
    # a step before the last one ending does not end the wait; the last one does, at once
    (tmp_path / "b" / "0").mkdir()
    (tmp_path / "b" / "0" / EXIT_STATUS_FILE).write_text("0\n")
    slept.clear()
    wait(None, st)
    assert sum(slept) == pytest.approx(60.0)
    last_b.write_text("3\n")
    slept.clear()
    wait(None, st)
    assert slept == [] and st.ending == {"1", "2"}


def _run(tmp_path, found_stacks, sched_setup=None, **kw):
    spec = load(_campaign(tmp_path, **kw))
    sched = InstantScheduler(spec.scheduler)
    if sched_setup:
        sched_setup(sched)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        runs = store.runs()
    return sched, runs


@pytest.mark.system
def test_jobs_in_flight_never_exceed_the_limit_and_one_poll_covers_all(tmp_path, found_stacks,
                                                                       clock):
    sched, runs = _run(tmp_path, found_stacks, repeats=10,
                       scheduler_extra="max_jobs_in_flight = 3")
    assert len(sched.requests) == 10
    assert sched.in_flight_max == 3
    # every poll asks about every job in flight at once, never one job at a time
    assert all(len(ids) == len(set(ids)) <= 3 for ids in sched.polls)
    assert max(len(ids) for ids in sched.polls) == 3
    assert {r["status"] for r in runs} == {"done"}
    assert {r["sched_state"] for r in runs} == {"COMPLETED"}
    assert {r["nodelist"] for r in runs} == {"n[1-2]"}
    assert all(r["job_id"].startswith("10") and r["job_script"] for r in runs)
    assert {r["exit_code"] for r in runs} == {0}


@register_scheduler("test-unsettled")
class UnsettledScheduler(InstantScheduler):
    """Jobs run for one poll, then end. The first job ends TIMEOUT with a record that is
    not complete yet (`unsettled`, as Slurm's before slurmstepd's report) for
    `unsettled_polls` polls, then complete ("TIMEOUT signal=15"); the others complete."""

    queued_polls = 0
    unsettled_polls = 2

    def poll(self, job_ids):
        out = super().poll(job_ids)
        first = next(iter(self.jobs))
        if first in out and out[first].finished:
            ended = self.jobs[first][1] - (self.queued_polls + 1)  # polls since it ended
            late = ended <= self.unsettled_polls
            out[first] = JobStatus("timeout", None, "time limit", "n1",
                                   "TIMEOUT" if late else "TIMEOUT signal=15",
                                   unsettled=late)
        return out


@pytest.mark.system
def test_an_unsettled_timeout_is_asked_again_while_other_jobs_go_on(tmp_path, found_stacks,
                                                                   clock):
    """A job whose TIMEOUT record lacks how its script ended stays in flight and is asked
    again at the loop's next polls (SlurmScheduler.poll used to sleep and re-ask inside the
    poll, up to 7.5 s, holding every other job): meanwhile the job beside it is settled and
    the next job submitted and polled; the late record is what is stored."""
    spec = load(_campaign(tmp_path, repeats=3, scheduler="test-unsettled",
                          scheduler_extra="max_jobs_in_flight = 2"))
    sched = UnsettledScheduler(spec.scheduler)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        runs = {r["job_id"]: r for r in store.runs()}
    assert sched.polls == [["1000", "1001"],   # both running
                           ["1000", "1001"],   # 1000 ended unsettled; 1001 done, settled
                           ["1000", "1002"],   # 1002 submitted beside it; 1000 asked again
                           ["1000", "1002"]]   # 1000's record complete; 1002 done
    assert runs["1000"]["sched_state"] == "TIMEOUT signal=15"
    assert runs["1001"]["sched_state"] == runs["1002"]["sched_state"] == "COMPLETED"
    # the unsettled record is asked again soon (0.5 s, then 1 s), not after a back-off
    assert clock.sleeps[2:] == [0.5, 1.0]


@pytest.mark.system
def test_an_unsettled_job_frees_its_slot_for_the_next(tmp_path, found_stacks, clock):
    """One job at a time: the job after an ended one whose record is still incomplete is
    submitted at once (the ended job holds no nodes), not after its record settles."""
    spec = load(_campaign(tmp_path, repeats=2, scheduler="test-unsettled"))
    sched = UnsettledScheduler(spec.scheduler)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
    assert sched.polls == [["1000"], ["1000"], ["1000", "1001"], ["1000", "1001"]]


@pytest.mark.system
def test_an_unsettled_timeout_is_settled_as_it_stands_after_a_bounded_number_of_polls(
        tmp_path, found_stacks, clock):
    spec = load(_campaign(tmp_path, scheduler="test-unsettled"))
    sched = UnsettledScheduler(spec.scheduler)
    sched.unsettled_polls = 99                  # Slurm never adds the script's end
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        (run,) = store.runs()
    # running, ended, then asked again UNSETTLED_POLLS times
    assert len(sched.polls) == 2 + batch_mod.UNSETTLED_POLLS
    assert run["sched_state"] == "TIMEOUT"


@pytest.mark.system
def test_backoff_grows_while_nothing_finishes_and_resets_after(tmp_path, found_stacks, clock):
    def slow(s):
        s.queued_polls = 5

    _run(tmp_path, found_stacks, sched_setup=slow, repeats=2,
         scheduler_extra="max_jobs_in_flight = 1")
    # job 1: 5 polls queued, 1 running, 1 finished; then job 2 the same from the start
    one_job = [1, 1.5, 2.25, 3.375, 4, 4, 4]
    assert clock.sleeps == one_job + [1] + one_job[1:]


@pytest.mark.system
def test_failed_queries_back_off_and_never_give_up_on_the_job(tmp_path, found_stacks, clock):
    def flaky(s):
        s.failing_polls = 6

    sched, runs = _run(tmp_path, found_stacks, sched_setup=flaky)
    assert clock.sleeps[:7] == [1, 2, 4, 4, 4, 4, 4]  # doubling up to poll_max_interval
    assert len(sched.polls) == 6 + 3  # then queued, running, finished
    assert [r["status"] for r in runs] == ["done"]


@pytest.mark.system
def test_grouped_cells_share_one_job_per_variant(tmp_path, found_stacks, clock):
    text = _campaign(tmp_path, repeats=5, scheduler_extra="group_cells = 2").read_text()
    text = text.replace("[benchmarks.echo]", '[variants.b]\nstack = "mpich"\nnp = 1\n\n'
                        "[benchmarks.echo]")
    (tmp_path / "camp.toml").write_text(text)
    spec = load(tmp_path / "camp.toml")
    sched = InstantScheduler(spec.scheduler)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        runs = {r["id"]: r for r in store.runs()}
    sizes = sorted(len(r.steps) for r in sched.requests)
    assert sizes == [1, 1, 2, 2, 2, 2]  # 5 cells per variant: 2 + 2 + 1
    for req in sched.requests:
        variants = {runs[c]["variant"] for c in req.cell_ids}
        assert len(variants) == 1
        assert {runs[c]["job_id"] for c in req.cell_ids} == {str(1000 + sched.requests.index(req))}
        if len(req.steps) == 2:
            assert req.name.endswith("+1")
            assert req.time_limit_s == 30 + 30 + 60  # both cells' timeouts + 60 s
    assert {r["status"] for r in runs.values()} == {"done"}


@pytest.mark.system
def test_job_nodes_follow_np_and_ppn(tmp_path, found_stacks, clock):
    sched, _ = _run(tmp_path, found_stacks, variant_extra="ppn = 2",
                    scheduler_extra="")
    # np = 1 in the file: ceil(1 / 2) = 1 node
    assert (sched.requests[0].nodes, sched.requests[0].tasks_per_node) == (1, 2)
    path = tmp_path / "camp.toml"
    path.write_text(path.read_text().replace("np = 1", "np = 5"))
    spec = load(path)
    sched = InstantScheduler(spec.scheduler)
    with Store(tmp_path / "n.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
    assert (sched.requests[0].nodes, sched.requests[0].tasks_per_node) == (3, 2)


@pytest.mark.parametrize("final, write_steps, status, reason", [
    (JobStatus("timeout", None, "the job exceeded its Slurm time limit and was killed", "n1",
               "TIMEOUT signal=15"), False, "timeout", "job ended timeout: the job exceeded"),
    (JobStatus("completed", None, None, "n1", "job_state=C"), False, "failed",
     "the job ended before this cell recorded its exit status (scheduler state job_state=C"),
    (JobStatus("node_fail", 0, "a node of the job failed", "n2", "NODE_FAIL"), True, "failed",
     "job ended node_fail: a node of the job failed"),
    (JobStatus("oom", None, "the job ran out of memory", "n1", "OUT_OF_MEMORY"), False,
     "failed", "job ended oom: the job ran out of memory"),
    (JobStatus("cancelled", None, "the job was cancelled by 0", None, "CANCELLED by 0"), False,
     "failed", "job ended cancelled: the job was cancelled by 0"),
])
@pytest.mark.system
def test_job_end_states_become_cell_states_with_the_reason(tmp_path, found_stacks, clock, final,
                                                           write_steps, status, reason):
    def ending(s):
        s.final = final
        s.write_steps = write_steps

    _, runs = _run(tmp_path, found_stacks, sched_setup=ending)
    (r,) = runs
    assert r["status"] == status
    assert r["reason"].startswith(reason), r["reason"]
    assert r["sched_state"] == final.raw


@pytest.mark.system
def test_queued_state_is_written_once_not_every_poll(tmp_path, found_stacks, clock, monkeypatch):
    writes = []
    real = Store.set_run

    def counting(self, run_id, *a, **kw):
        if set(kw) == {"sched_state", "nodelist"}:
            writes.append((run_id, kw["sched_state"]))
        return real(self, run_id, *a, **kw)

    monkeypatch.setattr(Store, "set_run", counting)

    def slow(s):
        s.queued_polls = 6

    _run(tmp_path, found_stacks, sched_setup=slow, repeats=3,
         scheduler_extra="max_jobs_in_flight = 3")
    states = [s for _, s in writes]
    assert states.count("PENDING") == 3 and states.count("RUNNING") == 3


@pytest.mark.system
def test_grouped_job_over_its_time_limit_keeps_the_cells_that_finished(tmp_path, found_stacks,
                                                                       clock):
    def first_only(s):
        s.final = JobStatus("timeout", None, "the job exceeded its Slurm time limit and was "
                            "killed", "n1", "TIMEOUT signal=15")
        s.write_steps = 1  # the second cell was running when the limit struck

    _, runs = _run(tmp_path, found_stacks, sched_setup=first_only, repeats=2,
                   scheduler_extra="group_cells = 0")
    got = sorted((r["seq"], r["status"], r["reason"]) for r in runs)
    assert [g[:2] for g in got] == [(0, "done"), (1, "timeout")]
    assert got[1][2].startswith("job ended timeout: the job exceeded its Slurm time limit")
    assert {r["job_id"] for r in runs} == {"1000"}


@pytest.mark.system
@pytest.mark.parametrize("launch_started, wall", [(2.25, 1.25), (None, 2.5)])
def test_batch_app_wall_time_is_the_launch_the_job_script_timed(tmp_path, found_stacks, clock,
                                                                 launch_started, wall):
    """With setup commands, wall_time is finished - launch_started from timing.json; a job
    script that never recorded the launch start leaves the step's whole elapsed time."""
    path = _campaign(tmp_path)
    path.write_text(path.read_text().replace('command = "echo hello"',
                                             'setup = "true"\ncommand = "echo hello"'))

    def timed(s):
        s.timing = {"started": 1.0, "launch_started": launch_started, "finished": 3.5}

    spec = load(path)
    sched = InstantScheduler(spec.scheduler)
    timed(sched)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        (r,) = store.runs()
        got = store.db.execute("SELECT median FROM results WHERE run_id=? AND "
                               "metric='wall_time'", (r["id"],)).fetchone()
    assert r["status"] == "done", r["reason"]
    assert r["elapsed"] == pytest.approx(2.5)
    assert got[0] == pytest.approx(wall)


UCX_TCP = ("[1795334470.531690] [vm:11420:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: "
           "tag(tcp/lo tcp/eth0) rma_am(tcp/lo) am(tcp/lo tcp/eth0)\n")


@pytest.mark.parametrize("probe_status, actual", [
    (0, "tcp [via ucx netmod, tls tcp]"),
    # the job script's `timeout` stopped a probe that hung after printing its banner
    # (and neither rank said its exchange went through: named)
    (124, "unknown [probe launch timed out after 30 s; ranks 0, 1 never reported their "
          "exchange; before that its diagnostics showed tcp]"),
    (137, "unknown [probe launch killed by signal 9; ranks 0, 1 never reported their "
          "exchange; before that its diagnostics showed tcp]"),
    (3, "unknown [probe launch failed (exit 3: [1795334470.531690]"),
])
@pytest.mark.system
def test_batch_probe_that_hung_is_not_judged_from_its_banner(tmp_path, found_stacks, clock,
                                                             probe_status, actual):
    def probe(s):
        s.probe_text, s.probe_status = UCX_TCP, probe_status

    path = _campaign(tmp_path, variant_extra='transport = "tcp"')
    path.write_text(path.read_text().replace("verify_transport = false",
                                             "verify_transport = true")
                    .replace("np = 1", "np = 2"))
    spec = load(path)
    sched = InstantScheduler(spec.scheduler)
    probe(sched)
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched).run()
        (r,) = store.runs()
    assert sched.requests[0].steps[0].cell_id.endswith("-verify")
    assert r["status"] == "done"
    assert r["transport_actual"].startswith(actual), r["transport_actual"]


# -- a harness killed between the scheduler taking a job and storing its id --------------------
class _Killed(BaseException):
    """Stands in for SIGKILL: nothing after it in the harness runs."""


def _die_around_submit(sched, after: bool):
    real = sched.submit

    def dying(req):
        if after:
            real(req)  # the scheduler took the job; its id never reaches the store
        raise _Killed

    sched.submit = dying
    return real


@pytest.mark.system
@pytest.mark.parametrize("after", [True, False])
def test_resume_follows_the_job_a_killed_harness_submitted_and_never_resubmits_it(
        tmp_path, found_stacks, clock, after):
    spec = load(_campaign(tmp_path))
    sched = InstantScheduler(spec.scheduler)
    real = _die_around_submit(sched, after)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(_Killed):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        (r,) = store.runs()
        assert (r["status"], r["job_id"], r["sched_state"]) == ("running", None, "submitting")
        started = r["started"]
    sched.submit = real
    logs: list[str] = []
    with Store(tmp_path / "m.db") as store:
        summary = CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False,
                                 log=logs.append).run()
        (r,) = store.runs()
    assert r["status"] == "done" and r["job_id"] == "1000"
    assert len(sched.jobs) == 1  # exactly one job ever ran the cell
    (name, since), = sched.lookups
    assert (name, since) == (sched.requests[0].name, started)  # looked up by name, once
    adopted = any("submitted just before the previous harness stopped" in m for m in logs)
    assert (summary.reattached, summary.recovered, adopted) == \
        ((1, 0, True) if after else (0, 1, False))


@pytest.mark.system
def test_looking_up_a_lost_submission_prepares_no_cell(tmp_path, found_stacks, clock,
                                                       monkeypatch):
    """Only the job's name is looked up: no cell command is prepared, no probe built."""
    path = _campaign(tmp_path, repeats=2, scheduler_extra="group_cells = 0")
    spec = load(path)
    sched = InstantScheduler(spec.scheduler)
    real = _die_around_submit(sched, after=True)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(_Killed):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
    sched.submit = real

    def refuse(*a, **kw):
        raise AssertionError("prepared a cell only to look up its job's name")

    with Store(tmp_path / "m.db") as store:
        runner = CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=True)
        cid, cells, _ = runner.sync()
        monkeypatch.setattr(runner, "prepare", refuse)
        monkeypatch.setattr(runner, "_probe_step", refuse)
        reset, reattach = runner.recover(cells, cid)
    assert (reset, reattach) == (0, [("1000", [c.id for c in cells])])
    assert [n for n, _ in sched.lookups] == [sched.requests[0].name]
    assert sched.requests[0].name.endswith("+1")


@pytest.mark.system
def test_a_job_of_an_earlier_attempt_is_not_taken_for_the_lost_one(tmp_path, found_stacks,
                                                                    clock):
    """The cell failed once (its job finished), then --retry-failed dies before sbatch: the
    old job has the same name but was submitted before this attempt started."""
    spec = load(_campaign(tmp_path))
    sched = InstantScheduler(spec.scheduler)
    sched.final = JobStatus("failed", 3, "the job script exited with status 3", "n1",
                            "FAILED exit=3")
    sched.write_steps = False
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        assert store.runs()[0]["status"] == "failed"
    sched.final, sched.write_steps = None, True
    sched.submitted["1000"] -= 60  # long enough ago
    real = _die_around_submit(sched, after=False)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(_Killed):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False,
                           retry_failed=True).run()
    sched.submit = real
    with Store(tmp_path / "m.db") as store:
        CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        (r,) = store.runs()
    assert (r["status"], r["job_id"]) == ("done", "1001")
    assert len(sched.jobs) == 2


@pytest.mark.system
def test_resume_leaves_a_lost_submission_alone_while_the_scheduler_is_silent(
        tmp_path, found_stacks, clock):
    spec = load(_campaign(tmp_path))
    sched = InstantScheduler(spec.scheduler)
    real = _die_around_submit(sched, after=True)
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(_Killed):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
    sched.submit, sched.lookup_fails = real, True
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(SubmissionUnknown, match="cannot tell whether job .* was "
                                                    "submitted .* campaign resume"):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        (r,) = store.runs()
    assert (r["status"], r["job_id"]) == ("running", None)
    assert len(sched.jobs) == 1


# -- job id, node list and scheduler state in `campaign status` and `campaign list` ------------
@pytest.mark.system
def test_status_and_list_show_each_batch_cells_job(tmp_path, found_stacks, clock, capsys):
    """Two cells: one whose job hit the Slurm time limit, one still in its job when the
    harness died. The table and --json both carry job id, nodes and the scheduler's state."""
    from mpibench.campaign import status as st
    from mpibench.cli import main

    path = _campaign(tmp_path, repeats=2, scheduler_extra="max_jobs_in_flight = 1")
    spec = load(path)
    sched = InstantScheduler(spec.scheduler)
    sched.final = JobStatus("timeout", None, "the job exceeded its Slurm time limit and was "
                            "killed", "n1", "TIMEOUT signal=15")
    sched.write_steps = False
    real_poll = sched.poll

    def poll(ids):  # the harness dies once job 1001 is seen running (job 1000 has ended)
        if len(sched.polls) == 5:  # 1000: queued, running, ended; 1001: queued, running
            raise _Killed
        return real_poll(ids)

    sched.poll = poll
    db = tmp_path / "m.db"
    with Store(db) as store:
        with pytest.raises(_Killed):
            CampaignRunner(spec, store, found_stacks, scheduler=sched, verify=False).run()
        data = st.status(store, spec)
        cells = {c["job_id"]: c for c in st.cells(store, spec)}
        (camp,) = st.campaigns(store)
    assert data["scheduler"] == "test-instant"
    (p,) = data["problems"]
    assert (p["status"], p["job_id"], p["nodelist"], p["sched_state"]) == \
        ("timeout", "1000", "n1", "TIMEOUT signal=15")
    (j,) = data["jobs"]
    assert (j["job_id"], j["nodelist"], j["sched_state"]) == ("1001", "n[1-2]", "RUNNING")
    assert (cells["1000"]["sched_state"], cells["1001"]["nodelist"]) == \
        ("TIMEOUT signal=15", "n[1-2]")
    assert (camp["scheduler"], camp["jobs_in_flight"], camp["running"]) == \
        ("test-instant", 1, 1)

    def cli(*args: str) -> str:
        capsys.readouterr()
        main(["campaign", *args, "--db", str(db)])
        return capsys.readouterr().out

    out = cli("status", str(path))
    assert "1 cell(s) in batch jobs:" in out
    assert "job 1001 on n[1-2]: RUNNING: c-" in out
    assert re.search(r"timeout c-\w+ .*: job ended timeout: the job exceeded its Slurm time "
                     r"limit and was killed \[job 1000 on n1: TIMEOUT signal=15\]", out), out
    table = cli("list", str(path))
    header = next(ln for ln in table.splitlines() if "seq" in ln)
    assert re.search(r"job\s*┃\s*nodes\s*┃\s*sched state", header), header
    row = next(ln for ln in table.splitlines() if "1000" in ln)
    assert re.search(r"1000\s*│\s*n1\s*│\s*TIMEOUT signal=15", row), row
    listed = {c["job_id"]: c for c in json.loads(cli("list", str(path), "--json"))}
    assert (listed["1000"]["sched_state"], listed["1000"]["nodelist"]) == \
        ("TIMEOUT signal=15", "n1")
    as_json = json.loads(cli("status", str(path), "--json"))
    assert as_json["problems"][0]["sched_state"] == "TIMEOUT signal=15"
    assert as_json["jobs"][0]["job_id"] == "1001"
    overview = cli("list")
    assert re.search(r"test-instant\s*│.*│\s*1\s*│$", next(
        ln for ln in overview.splitlines() if "fake-batch" in ln).rstrip()), overview


def test_local_cells_show_no_job_columns(tmp_path):
    """A local launch's job id (local:host:pid) is not a batch job: no job columns."""
    from mpibench.campaign.status import job_info

    row = {"job_id": "local:vm:123", "nodelist": None, "sched_state": None}
    assert job_info(row) == {"job_id": None, "nodelist": None, "sched_state": None}
    row = {"job_id": "77", "nodelist": "n1", "sched_state": "COMPLETED"}
    assert job_info(row) == row


def test_campaign_list_counts_distinct_batch_jobs_of_running_cells(tmp_path):
    """Jobs in flight: distinct job ids of running cells; a grouped job counts once, a local
    launch, a cell with no job yet and a finished cell's job not at all."""
    from mpibench.campaign.status import campaigns

    with Store(tmp_path / "s.db") as store:
        cid = store.add_campaign("c", {"scheduler": {"name": "slurm"}})
        other = store.add_campaign("d", {})
        for i, (status, job) in enumerate([
                ("running", "10"), ("running", "10"), ("running", "11"),
                ("running", "local:vm:123"), ("running", None), ("done", "12"),
                ("failed", "13"), ("pending", None)]):
            store.create_run(f"r{i}", cid, "v")
            store.set_run(f"r{i}", status, job_id=job)
        store.create_run("o", other, "v")
        store.set_run("o", "running", job_id="99")
        got = {c["name"]: c for c in campaigns(store)}
    assert {k: got["c"][k] for k in ("scheduler", "jobs_in_flight", "cells", "running",
                                     "done", "failed", "timeout", "pending")} == \
        {"scheduler": "slurm", "jobs_in_flight": 2, "cells": 8, "running": 5, "done": 1,
         "failed": 1, "timeout": 0, "pending": 1}
    assert (got["d"]["scheduler"], got["d"]["jobs_in_flight"], got["d"]["cells"]) == \
        ("local", 1, 1)
