"""Golden tests of generated Slurm and PBS job scripts, and their quoting."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from golden_util import check_golden
from mpibench.errors import UsageError
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings, get_scheduler

BASE = Path("/scratch/camp aign/runs")  # a space in the path on purpose


class _Variant:
    def __init__(self, np: int):
        self.np = np


class _Cell:
    def __init__(self, np: int):
        self.variant = _Variant(np)


def _step(cell_id: str, np: int = 4) -> JobStep:
    d = BASE / cell_id
    return JobStep(cell_id=cell_id, run_dir=d,
                   argv=["srun", "--mpi=pmix", "--ntasks", str(np), "/opt/core",
                         "--jsonl", str(d / "core.jsonl"), "PingPong"],
                   env={"UCX_TLS": "tcp,self", "ODD": "it's $HOME; `x`"},
                   stdout=d / "stdout.txt", stderr=d / "stderr.txt", timeout_s=300,
                   cell=_Cell(np))


def _request(settings: SchedulerSettings, **kw) -> JobRequest:
    steps = kw.pop("steps", None) or [_step("c-0123456789abcdef")]
    return JobRequest(name="mpibench-c-0123456789abcdef", steps=steps,
                      run_dir=BASE / steps[0].cell_id, settings=settings, **kw)


SLURM_CASES = {
    "two-nodes": dict(settings=SchedulerSettings(
        name="slurm", partition="debug", account="proj 42", exclusive=True,
        extra_directives=["--constraint=ib", "#SBATCH --mail-type=NONE"],
        options={"qos": "short"}), nodes=2, tasks_per_node=2, time_limit_s=900,
        modules=["openmpi/4.1.4", "ucx/1.15 (site)"]),
    "ntasks-from-variant": dict(settings=SchedulerSettings(name="slurm"), nodes=1,
                                time_limit_s=30),
    "grouped": dict(settings=SchedulerSettings(name="slurm"), nodes=2, tasks_per_node=1,
                    steps=[_step("c-aaaa", 2), _step("c-bbbb", 2)]),
}
PBS_CASES = {
    "select": dict(settings=SchedulerSettings(
        name="pbs", queue="workq", account="proj 42", options={"ncpus": 8}),
        nodes=2, tasks_per_node=4, time_limit_s=3725, modules=["mvapich2/2.3"]),
    "exclusive-nodes-style": dict(settings=SchedulerSettings(
        name="pbs", exclusive=True, options={"resources": "nodes"}), nodes=3,
        tasks_per_node=2, time_limit_s=60),
    "ntasks-from-variant": dict(settings=SchedulerSettings(name="pbs"), nodes=2),
}


@pytest.mark.parametrize("case", sorted(SLURM_CASES))
def test_slurm_script_golden(case):
    kw = dict(SLURM_CASES[case])
    req = _request(kw.pop("settings"), **kw)
    check_golden(f"slurm-{case}.sh", get_scheduler("slurm", req.settings).render_script(req))


@pytest.mark.parametrize("case", sorted(PBS_CASES))
def test_pbs_script_golden(case):
    kw = dict(PBS_CASES[case])
    req = _request(kw.pop("settings"), **kw)
    check_golden(f"pbs-{case}.sh", get_scheduler("pbs", req.settings).render_script(req))


@pytest.mark.parametrize("name", ["slurm", "pbs"])
def test_scripts_are_valid_bash_and_keep_values_intact(name):
    s = SchedulerSettings(name=name, account="proj 42")
    req = _request(s, nodes=1, tasks_per_node=1)
    script = get_scheduler(name, s).render_script(req)
    check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert check.returncode == 0, check.stderr
    # the env value with quotes, $ and backticks survives as one shell word
    assert "ODD=" + shlex.quote("it's $HOME; `x`") in script
    assert shlex.quote(str(BASE / "c-0123456789abcdef")) in script


def test_pbs_select_line():
    s = SchedulerSettings(name="pbs")
    req = _request(s, nodes=2, tasks_per_node=4, time_limit_s=90)
    script = get_scheduler("pbs", s).render_script(req)
    assert "#PBS -l select=2:ncpus=4:mpiprocs=4\n" in script
    assert "#PBS -l walltime=00:01:30\n" in script


@pytest.mark.parametrize("name", ["slurm", "pbs"])
def test_newlines_in_values_are_refused(name):
    s = SchedulerSettings(name=name, partition="debug\n#SBATCH --uid=0")
    with pytest.raises(UsageError, match="newline"):
        get_scheduler(name, s).render_script(_request(s))


@pytest.mark.parametrize("name, options, message", [
    ("slurm", {"qos": ""}, r"scheduler\.qos: got ''"),
    ("slurm", {"query_retries": 0}, r"scheduler\.query_retries: got 0; expected an integer"),
    ("slurm", {"qso": "x"}, r"scheduler\.qso: unknown key"),
    ("pbs", {"resources": "chunks"}, r"scheduler\.resources: got 'chunks'"),
    ("pbs", {"finished_jobs": "yes"}, r"scheduler\.finished_jobs: got 'yes'; expected true"),
    ("pbs", {"ncpus": True}, r"scheduler\.ncpus: got True"),
])
def test_backend_options_are_validated_with_the_key_named(name, options, message):
    from mpibench.schedulers import scheduler_class

    with pytest.raises(UsageError, match=message):
        scheduler_class(name).validate_options(options)
    scheduler_class(name).validate_options({})  # nothing given is fine


@pytest.mark.parametrize("name, expected", [
    ("mpibench-c-0123456789abcdef", "mpibench-c-0123456789abcdef"),
    ("a'b\"c$(touch /tmp/pwned)-c-0123456789abcdef+3",
     "a_b_c__touch__tmp_pwned_-c-0123456789abcdef+3"),
    ("42-c-0123456789abcdef", "mb42-c-0123456789abcdef"),  # PBS: a letter first
    ("x" * 80 + "-c-0123456789abcdef+12",
     "x" * 36 + "..xxxx-c-0123456789abcdef+12"),
    ("", "mpibench"),
])
def test_job_names_are_safe_and_keep_the_cell_id(name, expected):
    from mpibench.schedulers.slurm import job_name

    got = job_name(JobRequest(name=name, steps=[_step("c-x")], run_dir=BASE))
    assert got == expected and len(got) <= 64
