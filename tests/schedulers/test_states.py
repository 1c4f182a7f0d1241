"""Scheduler state mapping from captured outputs, and query failures through the runner seam.

No cluster needed: real outputs captured from the local Slurm live in tests/data/slurm and
tests/data/pbs (see their README.md); fake squeue/qstat wrapper scripts stand in for a
scheduler that fails on demand.
"""

from __future__ import annotations

import os
import stat
import textwrap
import time
from pathlib import Path

import pytest

from mpibench.schedulers import (
    JobStatus,
    SchedulerError,
    SchedulerQueryError,
    SchedulerSettings,
    SubmissionUnknown,
)
from mpibench.schedulers.pbs import PBSScheduler, map_pbs, parse_qstat_full
from mpibench.schedulers.slurm import (
    SlurmScheduler,
    current_user,
    decode_wait_status,
    parse_sacct,
    parse_scontrol,
    parse_squeue,
    slurm_time,
)

DATA = Path(__file__).parents[1] / "data"


def _read(*parts: str) -> str:
    return (DATA.joinpath(*parts)).read_text()


def _brief(st: JobStatus) -> tuple:
    return (st.state, st.exit_code, st.nodelist)


def test_squeue_mixed_capture():
    got = parse_squeue(_read("slurm", "squeue-mixed.txt"))
    assert {k: _brief(v) for k, v in got.items()} == {
        "4": ("cancelled", None, "n1"),  # killed by SIGTERM while running
        "5": ("cancelled", 0, None),
        "7": ("cancelled", 0, None),
        "2": ("failed", 3, "n1"),  # raw wait status 768 = exit 3
        "6": ("failed", None, "n1"),  # kill -9 of the batch shell
        "3": ("pending", None, None),
    }
    assert got["2"].reason == "the job script exited with status 3"
    assert "signal 9" in got["6"].reason and "JobLaunchFailure" in got["6"].reason
    assert got["3"].reason == "held (JobHeldUser)"
    # the stored final state carries the job's exit status or signal
    assert got["2"].raw == "FAILED exit=3"
    assert got["6"].raw == "FAILED signal=9"
    assert got["4"].raw == "CANCELLED signal=15"
    assert got["3"].raw == "PENDING"  # nothing appended before the job has ended


def test_squeue_timeout_node_fail_running_captures():
    running = parse_squeue(_read("slurm", "squeue-running.txt"))
    assert _brief(running["10"]) == ("completed", 0, "n[1-2]")
    assert running["8"].state == "running" and running["8"].exit_code is None
    later = parse_squeue(_read("slurm", "squeue-timeout-requeued.txt"))
    assert later["8"].state == "timeout"
    assert later["8"].raw == "TIMEOUT signal=15"
    assert parse_squeue(_read("slurm", "squeue-running.txt"))["10"].raw == "COMPLETED"
    assert "time limit" in later["8"].reason
    assert later["9"].state == "pending"  # requeued after its node died
    nf = parse_squeue(_read("slurm", "squeue-node-fail.txt"))
    assert _brief(nf["12"]) == ("node_fail", 0, "n2")
    assert nf["12"].reason == "a node of the job failed"


def test_scontrol_captures():
    text = "".join(_read("slurm", f) for f in ("scontrol-timeout.txt",
                                               "scontrol-node-fail.txt",
                                               "scontrol-failed-exit3.txt",
                                               "scontrol-completed-2nodes.txt"))
    got = parse_scontrol(text)
    assert {k: v.state for k, v in got.items()} == {
        "8": "timeout", "12": "node_fail", "2": "failed", "10": "completed"}
    assert got["2"].exit_code == 3
    assert got["10"].nodelist == "n[1-2]"


def test_sacct_states_including_oom_and_cancelled_by():
    got = parse_sacct(_read("slurm", "sacct-handwritten.txt"))
    assert {k: v.state for k, v in got.items()} == {
        "101": "completed", "102": "oom", "103": "cancelled", "104": "timeout",
        "105": "node_fail", "106": "failed", "107": "pending", "108": "running",
        "109": "cancelled"}
    assert got["103"].reason == "the job was cancelled by 1234"
    assert got["106"].exit_code == 2
    assert got["107"].nodelist is None
    assert got["109"].reason == "the job was preempted"


@pytest.mark.parametrize("raw, expected", [
    ("0", (0, 0)), ("768", (3, 0)), ("9", (None, 9)), ("15", (None, 15)),
    ("2:0", (2, 0)), ("0:15", (0, 15)), ("", (None, None)), ("N/A", (None, None)),
])
def test_decode_wait_status(raw, expected):
    assert decode_wait_status(raw) == expected


def test_unknown_state_is_a_failure_with_its_name():
    st = parse_squeue("5|WEIRD_NEW_STATE|None|n1|0|")["5"]
    assert st.state == "failed" and "WEIRD_NEW_STATE" in st.reason


def test_slurm_time_rounds_up_to_minutes():
    assert slurm_time(10) == "00:01:00"
    assert slurm_time(61) == "00:02:00"
    assert slurm_time(3600) == "01:00:00"
    assert slurm_time(2 * 86400 + 90) == "2-00:02:00"


def test_qstat_slurm_wrapper_capture():
    jobs = parse_qstat_full(_read("pbs", "qstat-f-slurm-wrapper.txt"))
    assert set(jobs) == {"13", "14"}
    done, held = map_pbs(jobs["13"]), map_pbs(jobs["14"])
    assert _brief(done) == ("completed", None, "n1,n2")  # the wrapper prints no exit status
    assert done.raw == "job_state=C"
    assert held.state == "pending"


def test_qstat_slurm_wrapper_walltime_kill_is_a_timeout():
    """Slurm's qstat wrapper shows a TIMEOUT job as C without exit status (real capture, a
    sleep 140 under a 1-minute limit); its mtime/ctime (start/end) span the walltime."""
    jobs = parse_qstat_full(_read("pbs", "qstat-f-slurm-wrapper-timeout.txt"))
    st = map_pbs(jobs["3"])
    assert _brief(st) == ("timeout", None, "n1")
    assert "walltime" in st.reason
    # the same job ending 2 s before its limit is an ordinary completion
    early = dict(jobs["3"], ctime="Mon Nov 23 12:23:34 2026")
    assert map_pbs(early).state == "completed"


@pytest.mark.parametrize("used, expected", [("00:01:00", "timeout"), ("00:00:59", "completed"),
                                            ("01:00:00", "timeout")])
def test_qstat_resources_used_walltime_decides_a_walltime_kill(used, expected):
    # PBS Pro / Torque: creation time as ctime precedes mtime, resources_used decides
    attrs = {"job_state": "F", "Exit_status": "0", "Resource_List.walltime": "00:01:00",
             "resources_used.walltime": used, "ctime": "Mon Nov 23 12:00:00 2026",
             "mtime": "Mon Nov 23 12:05:00 2026"}
    assert map_pbs(attrs).state == expected
    assert map_pbs({**attrs, "resources_used.walltime": "bogus"}).state == "completed"


def test_qstat_pbspro_states():
    jobs = parse_qstat_full(_read("pbs", "qstat-f-pbspro-handwritten.txt"))
    got = {k.split(".")[0]: map_pbs(v) for k, v in jobs.items()}
    assert {k: v.state for k, v in got.items()} == {
        "2001": "completed", "2002": "timeout", "2003": "failed", "2004": "oom",
        "2005": "pending", "2006": "running", "2007": "failed", "2008": "node_fail",
        "2009": "cancelled", "2010": "pending"}
    assert got["2001"].nodelist == "cn01,cn02"
    assert jobs["2001.pbs01"]["comment"].endswith("and finished")  # continuation joined
    assert "walltime" in got["2002"].reason
    assert got["2003"].reason == "the job was killed by signal 15"
    assert got["2007"].exit_code == 3
    assert "Insufficient" in got["2005"].reason
    assert got["2010"].reason == "held"


# -- query failures through the command-runner seam ----------------------------------------
def _fake(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/bash\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_transient_squeue_failure_is_retried_and_one_query_covers_all_jobs(tmp_path):
    log = tmp_path / "calls.log"
    capture = DATA / "slurm" / "squeue-mixed.txt"
    squeue = _fake(tmp_path, "squeue", f"""\
        echo "$*" >>{log}
        if [ ! -e {tmp_path}/failed-once ]; then
          touch {tmp_path}/failed-once
          echo "squeue: error: slurm_receive_msg: Socket timed out on send/recv" >&2
          exit 1
        fi
        cat {capture}
        """)
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={"squeue": str(squeue)}))
    got = sched.poll(["2", "3", "4", "5", "6", "7"])
    assert set(got) == {"2", "3", "4", "5", "6", "7"}
    calls = _log_lines(log)
    assert len(calls) == 2  # failed once, then answered
    assert calls[0] == calls[1]
    assert "--jobs=2,3,4,5,6,7" in calls[1] and "--states=all" in calls[1]
    assert sched.queries == 2


def test_query_that_keeps_failing_raises_transient_error(tmp_path):
    log = tmp_path / "calls.log"
    squeue = _fake(tmp_path, "squeue", f'echo x >>{log}; echo "slurmctld down" >&2; exit 1\n')
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={
        "squeue": str(squeue), "query_retries": 3}))
    with pytest.raises(SchedulerQueryError, match="slurmctld down"):
        sched.poll(["1"])
    assert len(_log_lines(log)) == 3


def test_jobs_aged_out_of_squeue_fall_back_to_sacct_once(tmp_path):
    log = tmp_path / "calls.log"
    squeue = _fake(tmp_path, "squeue", f"""\
        echo squeue >>{log}
        echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1
        """)
    sacct = _fake(tmp_path, "sacct", f"""\
        echo sacct >>{log}
        echo "Slurm accounting storage is disabled" >&2; exit 1
        """)
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={
        "squeue": str(squeue), "sacct": str(sacct)}))
    assert sched.poll(["77"]) == {}
    assert sched.poll(["77"]) == {}
    # accounting is off: asked once, then never again; squeue once per poll
    assert _log_lines(log) == ["squeue", "sacct", "squeue"]


def test_sacct_answers_for_aged_out_jobs(tmp_path):
    squeue = _fake(tmp_path, "squeue", f"cat {DATA / 'slurm' / 'squeue-node-fail.txt'}\n")
    sacct = _fake(tmp_path, "sacct", f"cat {DATA / 'slurm' / 'sacct-handwritten.txt'}\n")
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={
        "squeue": str(squeue), "sacct": str(sacct)}))
    got = sched.poll(["12", "102", "999"])
    assert got["12"].state == "node_fail" and got["102"].state == "oom"
    assert "999" not in got


def test_transient_qstat_failure_and_unknown_ids(tmp_path):
    log = tmp_path / "calls.log"
    capture = DATA / "pbs" / "qstat-f-slurm-wrapper.txt"
    qstat = _fake(tmp_path, "qstat", f"""\
        echo "$*" >>{log}
        if [ ! -e {tmp_path}/failed-once ]; then
          touch {tmp_path}/failed-once; echo "Problem loading jobs." >&2; exit 255
        fi
        cat {capture}; exit 153
        """)
    sched = PBSScheduler(SchedulerSettings(name="pbs", options={"qstat": str(qstat)}))
    got = sched.poll(["13", "14", "999"])
    assert {k: v.state for k, v in got.items()} == {"13": "completed", "14": "pending"}
    calls = _log_lines(log)
    assert len(calls) == 2 and calls[1] == "-f 13 14 999"


def test_fake_commands_are_executable(tmp_path):
    # guard for the tests above: a wrapper that cannot execute would look like a failure
    p = _fake(tmp_path, "x", "exit 0\n")
    assert os.access(p, os.X_OK)


# -- submission: refused at once, lost conversations retried without running a cell twice ---
def _req(tmp_path: Path):
    from mpibench.schedulers import JobRequest, JobStep

    d = tmp_path / "run"
    d.mkdir()
    step = JobStep("c-0123456789abcdef", d, ["true"], {}, d / "stdout.txt", d / "stderr.txt")
    return JobRequest(name="mb-c-0123456789abcdef", steps=[step], run_dir=d)


def _no_sleep(monkeypatch) -> None:
    import time as real
    import types

    import mpibench.schedulers.slurm as slurm_mod

    monkeypatch.setattr(slurm_mod, "time", types.SimpleNamespace(
        sleep=lambda s: None, time=real.time, mktime=real.mktime, strptime=real.strptime))


def _submit_fakes(tmp_path: Path, sbatch_body: str, squeue_body: str) -> SlurmScheduler:
    sbatch = _fake(tmp_path, "sbatch", f'echo "$*" >>{tmp_path}/sbatch.log\n' + sbatch_body)
    squeue = _fake(tmp_path, "squeue", f'echo "$*" >>{tmp_path}/squeue.log\n' + squeue_body)
    return SlurmScheduler(SchedulerSettings(name="slurm", options={
        "sbatch": str(sbatch), "squeue": str(squeue)}))


def test_refused_submission_is_not_retried(tmp_path):
    sched = _submit_fakes(tmp_path, 'echo "sbatch: error: Batch job submission failed: '
                          'Invalid partition name specified" >&2; exit 1\n', "exit 0\n")
    with pytest.raises(SchedulerError, match="refused.*Invalid partition"):
        sched.submit(_req(tmp_path))
    assert len(_log_lines(tmp_path / "sbatch.log")) == 1
    assert not (tmp_path / "squeue.log").exists()


def test_lost_submission_that_created_the_job_is_adopted_not_resubmitted(tmp_path,
                                                                       monkeypatch):
    _no_sleep(monkeypatch)
    sched = _submit_fakes(
        tmp_path, 'echo "sbatch: error: Batch job submission failed: Socket timed out on '
        'send/recv operation" >&2; exit 1\n',
        'case "$*" in *--name=mb-c-0123456789abcdef*) echo "4242|PENDING|$(date '
        '+%Y-%m-%dT%H:%M:%S)";; esac\n')
    assert sched.submit(_req(tmp_path)) == "4242"
    assert len(_log_lines(tmp_path / "sbatch.log")) == 1  # never submitted twice
    query = _log_lines(tmp_path / "squeue.log")[0]
    assert "--states=all" in query and f"--user={current_user()}" in query


def test_lost_submission_with_the_scheduler_silent_is_left_for_resume(tmp_path, monkeypatch):
    """sbatch lost and squeue not answering: submitting again could run the cell twice."""
    _no_sleep(monkeypatch)
    sched = _submit_fakes(tmp_path, 'echo "sbatch: error: Socket timed out on send/recv '
                          'operation" >&2; exit 1\n',
                          'echo "squeue: error: Unable to contact slurm controller" >&2; '
                          "exit 1\n")
    with pytest.raises(SubmissionUnknown, match=r"sbatch lost its conversation .* cannot say "
                                                r"whether it took the job .* campaign resume"):
        sched.submit(_req(tmp_path))
    assert len(_log_lines(tmp_path / "sbatch.log")) == 1


SQUEUE_BY_NAME = """41|COMPLETED|2026-11-22T08:10:00
57|FAILED|2026-11-22T08:20:00
"""


@pytest.mark.parametrize("text, since, expected", [
    (SQUEUE_BY_NAME, None, None),  # finished jobs and no time to judge them by
    (SQUEUE_BY_NAME, "2026-11-22T08:19:58", "57"),  # submitted (within the slack) after
    (SQUEUE_BY_NAME, "2026-11-22T08:25:00", None),  # an earlier attempt of the cell
    (SQUEUE_BY_NAME + "60|PENDING|2026-11-22T08:00:00\n", "2026-11-22T08:25:00", "60"),
    (SQUEUE_BY_NAME + "61|RUNNING|2026-11-22T08:00:00\n", None, "61"),
    ("", 0.0, None),
])
def test_pick_job_by_name_alive_or_submitted_since(text, since, expected):
    from mpibench.schedulers.slurm import pick_job

    if isinstance(since, str):
        since = time.mktime(time.strptime(since, "%Y-%m-%dT%H:%M:%S"))
    assert pick_job(text, since) == expected


def test_pick_pbs_job_from_the_slurm_wrapper_capture():
    from mpibench.schedulers.pbs import parse_qstat_full, pick_pbs_job

    jobs = parse_qstat_full((DATA / "pbs" / "qstat-f-slurm-wrapper.txt").read_text())
    queued = time.mktime(time.strptime("Sun Nov 22 08:14:12 2026", "%a %b %d %H:%M:%S %Y"))
    assert pick_pbs_job(jobs, "pbs2", "root", None) == "14"  # queued (Q)
    assert pick_pbs_job(jobs, "pbs2", "alice", None) is None  # someone else's jobs
    assert pick_pbs_job(jobs, "other", "root", None) is None
    del jobs["14"]
    assert pick_pbs_job(jobs, "pbs2", "root", queued - 1) == "13"  # finished, since
    assert pick_pbs_job(jobs, "pbs2", "root", queued + 60) is None  # finished before


def test_lost_qsub_is_retried_after_looking_for_the_job_by_name(tmp_path, monkeypatch):
    _no_sleep(monkeypatch)
    log = tmp_path / "calls.log"
    qsub = _fake(tmp_path, "qsub", f"""\
        echo "qsub $*" >>{log}
        if [ ! -e {tmp_path}/once ]; then touch {tmp_path}/once
          echo "qsub: error: Unable to contact slurm controller (connect failure)" >&2; exit 1
        fi
        echo 88
        """)
    qstat = _fake(tmp_path, "qstat", f'echo "qstat $*" >>{log}; exit 153\n')
    sched = PBSScheduler(SchedulerSettings(name="pbs", options={"qsub": str(qsub),
                                                                "qstat": str(qstat)}))
    assert sched.submit(_req(tmp_path)) == "88"
    calls = [c.split(" ", 1)[0] for c in _log_lines(log)]
    assert calls == ["qsub", "qstat", "qsub"]


def test_lost_qsub_whose_job_exists_is_adopted(tmp_path, monkeypatch):
    _no_sleep(monkeypatch)
    log = tmp_path / "calls.log"
    qsub = _fake(tmp_path, "qsub", f'echo "qsub $*" >>{log}; echo "qsub: error: Socket timed '
                 'out on send/recv operation" >&2; exit 1\n')
    listing = (DATA / "pbs" / "qstat-f-slurm-wrapper.txt").read_text().replace(
        "pbs2", "mb-c-0123456789abcdef").replace("root@", f"{current_user()}@")
    (tmp_path / "listing.txt").write_text(listing)
    qstat = _fake(tmp_path, "qstat", f'echo "qstat $*" >>{log}; cat {tmp_path}/listing.txt\n')
    sched = PBSScheduler(SchedulerSettings(name="pbs", options={"qsub": str(qsub),
                                                                "qstat": str(qstat)}))
    assert sched.submit(_req(tmp_path)) == "14"
    assert [c.split(" ", 1)[0] for c in _log_lines(log)] == ["qsub", "qstat"]


def test_lost_submission_without_a_job_is_retried(tmp_path, monkeypatch):
    _no_sleep(monkeypatch)
    sched = _submit_fakes(tmp_path, f"""\
if [ ! -e {tmp_path}/once ]; then touch {tmp_path}/once
  echo "sbatch: error: Unable to contact slurm controller (connect failure)" >&2; exit 1
fi
echo 77
""", "exit 0\n")
    assert sched.submit(_req(tmp_path)) == "77"
    assert len(_log_lines(tmp_path / "sbatch.log")) == 2
    assert len(_log_lines(tmp_path / "squeue.log")) == 1


def test_submission_that_keeps_failing_fails_the_cells_with_the_reason(tmp_path, monkeypatch):
    _no_sleep(monkeypatch)
    sched = _submit_fakes(tmp_path, 'echo "sbatch: error: Socket timed out on send/recv '
                          'operation" >&2; exit 1\n', "exit 0\n")
    with pytest.raises(SchedulerError, match="failed 3 times.*no such job is queued"):
        sched.submit(_req(tmp_path))
    assert len(_log_lines(tmp_path / "sbatch.log")) == 3


def _never_sleeps(monkeypatch) -> None:
    import time as real
    import types

    import mpibench.schedulers.slurm as slurm_mod

    def refuse(s: float) -> None:
        raise AssertionError(f"SlurmScheduler slept {s} s: every other job would wait")

    monkeypatch.setattr(slurm_mod, "time", types.SimpleNamespace(
        sleep=refuse, time=real.time, mktime=real.mktime, strptime=real.strptime))


def test_timeout_record_without_the_scripts_end_comes_back_unsettled(tmp_path, monkeypatch):
    """slurmctld marks a job TIMEOUT at its limit; slurmstepd's report that the batch script
    died of signal 15 may come after COMPLETING is cleared. A poll in between must not store
    'TIMEOUT' alone: it answers the job `unsettled` (the batch loop asks again at its next
    polls, campaign/batch.py), in one query and without sleeping, so the other jobs are not
    held. The race is timing-made (seen on loaded machines), so a stand-in squeue answers
    the incomplete record first, then the real captured one."""
    _never_sleeps(monkeypatch)
    log = tmp_path / "calls.log"
    capture = DATA / "slurm" / "squeue-timeout-requeued.txt"
    squeue = _fake(tmp_path, "squeue", f"""\
        echo "$*" >>{log}
        if [ ! -e {tmp_path}/answered ]; then
          touch {tmp_path}/answered
          echo '8|TIMEOUT|TimeLimit|n1|0|'; echo '10|COMPLETED|None|n[1-2]|0|'; exit 0
        fi
        cat {capture}
        """)
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={"squeue": str(squeue)}))
    got = sched.poll(["8", "10"])
    assert (got["8"].state, got["8"].raw, got["8"].unsettled) == ("timeout", "TIMEOUT", True)
    assert got["10"].raw == "COMPLETED" and not got["10"].unsettled
    assert len(_log_lines(log)) == 1
    got = sched.poll(["8"])                  # the loop's next poll: the record is complete
    assert (got["8"].raw, got["8"].unsettled) == ("TIMEOUT signal=15", False)
    calls = _log_lines(log)
    assert len(calls) == 2 and "--jobs=8,10" in calls[0] and "--jobs=8 " in calls[1] + " "


def test_timeout_record_that_stays_without_a_signal_stays_unsettled_per_poll(
        tmp_path, monkeypatch):
    """Each poll is one query; how many polls the record gets is the batch loop's bound
    (test_slurm_campaign.py: test_an_unsettled_timeout_...)."""
    _never_sleeps(monkeypatch)
    log = tmp_path / "calls.log"
    squeue = _fake(tmp_path, "squeue", f"echo x >>{log}; echo '8|TIMEOUT|TimeLimit|n1|0|'\n")
    sched = SlurmScheduler(SchedulerSettings(name="slurm", options={"squeue": str(squeue)}))
    for n in (1, 2):
        got = sched.poll(["8"])
        assert (got["8"].state, got["8"].raw, got["8"].unsettled) == ("timeout", "TIMEOUT",
                                                                       True)
        assert len(_log_lines(log)) == n
