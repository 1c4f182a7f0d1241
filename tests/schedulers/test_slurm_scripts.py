"""Golden tests of generated Slurm and PBS job scripts, and their quoting."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mpibench.errors import UsageError
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings, get_scheduler
from support.golden import check_golden
from support.procs import wait_gone

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
    name = kw.pop("name", "mpibench-c-0123456789abcdef")
    return JobRequest(name=name, steps=steps, run_dir=BASE / steps[0].cell_id,
                      settings=settings, **kw)


EVIL = "a'b\"c$(touch /tmp/pwned)"


def _evil_step() -> JobStep:
    st = _step("c-feedfacefeedface", 2)
    # hostile names are refused before a script is written (tests/test_envnames.py)
    st.env = {"EVIL": EVIL, "A_B": "1"}
    st.argv = [*st.argv, EVIL]
    return st


def _evil(backend: str) -> dict:
    return dict(settings=SchedulerSettings(
        name=backend, partition=EVIL, account=EVIL, job_name_prefix=EVIL,
        extra_directives=["--comment=x"]), nodes=1, tasks_per_node=2, time_limit_s=60,
        modules=[EVIL], steps=[_evil_step()], name=f"{EVIL}-c-feedfacefeedface")


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
    "hostile": _evil("slurm"),
}
PBS_CASES = {
    "select": dict(settings=SchedulerSettings(
        name="pbs", queue="workq", account="proj 42", options={"ncpus": 8}),
        nodes=2, tasks_per_node=4, time_limit_s=3725, modules=["mvapich2/2.3"]),
    "exclusive-nodes-style": dict(settings=SchedulerSettings(
        name="pbs", exclusive=True, options={"resources": "nodes"}), nodes=3,
        tasks_per_node=2, time_limit_s=60),
    "ntasks-from-variant": dict(settings=SchedulerSettings(name="pbs"), nodes=2),
    "hostile": _evil("pbs"),
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
    # the env assignment with quotes, $ and backticks survives as one shell word
    assert shlex.quote("ODD=it's $HOME; `x`") in script
    assert shlex.quote(str(BASE / "c-0123456789abcdef")) in script
    # the steps need bash >= 4.1 (`exec {fd}<`, a fractional `read -t`): Slurm runs the
    # shebang's interpreter, Torque ignores it and runs the user's login shell unless -S
    assert script.startswith("#!/bin/bash\n")
    if name == "pbs":
        assert "\n#PBS -S /bin/bash\n" in script


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


# -- every value quoted: run the generated scripts with hostile values ------------------------
HOSTILE = "a'b\"c$(touch {m})`touch {m}`;touch {m} #"
DUMP = ("import json, os, sys; json.dump({'argv': sys.argv[1:], 'env': {k: v for k, v in "
        "os.environ.items() if k.startswith(('EVIL', 'A_B'))}}, open('dump.json', 'w'))")

SETUP = ("import os, sys; open('setup.txt', 'w').write(sys.argv[1] + os.environ['EVIL'])")


def _launcher_argvs(value: str) -> dict[str, list[str]]:
    from mpibench.launchers import LaunchSpec, get_launcher, launcher_names

    spec = LaunchSpec(np=2, program=["prog", value], env={"EVIL": value}, ppn=1,
                      hosts=["n1", value], mca={"btl": value})
    out = {}
    for name in launcher_names():
        if name == "template":
            spec.extra = ["run -n {np} {env} -- {program}"]
        out[name] = get_launcher(name).argv(f"/opt/{name}", spec)
    return out


@pytest.mark.parametrize("backend", ["slurm", "pbs"])
def test_generated_scripts_run_hostile_values_as_data(tmp_path, backend):
    """The whole job script runs under bash (no scheduler needed: without SLURM_/PBS_
    variables the hostfile is this host). Each launcher's argv, behind a program that dumps
    what it received, must arrive element for element; nothing may be executed."""
    marker = tmp_path / "pwned"
    value = HOSTILE.format(m=marker)
    base = tmp_path / "it's $(x) dir"
    steps = []
    argvs = _launcher_argvs(value)
    for name, argv in argvs.items():
        d = base / name
        d.mkdir(parents=True)
        steps.append(JobStep(cell_id=f"c-{name}", run_dir=d,
                             argv=[sys.executable, "-c", DUMP, *argv],
                             env={"EVIL": value, "A_B": value},
                             stdout=d / "stdout.txt", stderr=d / "stderr.txt", timeout_s=60,
                             setup=[[sys.executable, "-c", SETUP, value]],
                             setup_env={"EVIL": value}))
    settings = SchedulerSettings(name=backend, partition=value, account=value,
                                 job_name_prefix=value, modules=[])
    req = JobRequest(name=f"{value}-c-0123456789abcdef+4", steps=steps, run_dir=base,
                     nodes=1, tasks_per_node=1, time_limit_s=60, settings=settings,
                     modules=[value])
    script = get_scheduler(backend, settings).render_script(req)
    # `module` is a shell function on clusters; here a stand-in that records its argument
    script = script.replace("#!/bin/bash\n", "#!/bin/bash\nmodule() { printf %s \"$2\" "
                            ">module.txt; }\n", 1)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PBS_"))}
    res = subprocess.run(["bash", "-c", script], cwd=base, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert not marker.exists(), "a value was executed by the shell"
    assert (base / "module.txt").read_text() == value
    for name, argv in argvs.items():
        d = base / name
        assert (d / "exit_status").read_text().strip() == "0", (d / "stderr.txt").read_text()
        got = json.loads((d / "dump.json").read_text())
        assert got["argv"] == argv, name
        assert got["env"] == {"EVIL": value, "A_B": value}
        # the setup command got the value as one argument, and its environment
        assert (d / "setup.txt").read_text() == value + value


# -- the same files whichever backend ran the step -------------------------------------------
@pytest.mark.parametrize("setup", [["sleep", "0.3"], ["false"]])
def test_local_backend_and_job_script_leave_the_same_files(tmp_path, setup):
    """A run directory must not tell which backend produced it: setup.out/setup.err exist
    (empty here) and timing.json has the same keys, launch_started after the setup (the
    application's wall time excludes it) or null when the setup failed."""
    from mpibench.schedulers import read_step_result
    from mpibench.schedulers.local import LocalScheduler

    got = {}
    for how in ("local", "script"):
        d = tmp_path / how
        d.mkdir()
        step = JobStep(cell_id=f"c-{how}", run_dir=d, argv=["echo", "hi"], env={},
                       stdout=d / "stdout.txt", stderr=d / "stderr.txt", timeout_s=30,
                       setup=[setup])
        if how == "local":
            LocalScheduler().run_step(step)
        else:
            from mpibench.schedulers import job_body

            script = job_body(JobRequest(name="x", steps=[step], run_dir=d))
            subprocess.run(["bash", "-c", script], check=True, timeout=60)
        timing = json.loads((d / "timing.json").read_text())
        sr = read_step_result(step)
        got[how] = (sorted(p.name for p in d.iterdir()), sorted(timing),
                    (d / "setup.out").read_text(), (d / "setup.err").read_text(), sr.exit_code)
        if setup[0] == "sleep":
            assert sr.exit_code == 0 and (d / "stdout.txt").read_text() == "hi\n"
            assert sr.launch_started - sr.started >= 0.3  # the setup's sleep, not the launch
            assert sr.launch_started <= sr.finished
        else:
            assert sr.exit_code == 1 and sr.launch_started is None
            assert timing["launch_started"] is None
    assert got["local"] == got["script"]
    assert "setup.out" in got["local"][0] and "setup.err" in got["local"][0]


@pytest.mark.parametrize("status, elapsed, timeout_s, timed_out", [
    (124, 5.0, 2, True),    # `timeout` stopped it with TERM
    (137, 12.5, 2, True),   # it ignored TERM; `timeout` needed the KILL 10 s later
    (137, 1.0, 60, False),  # killed by someone else (OOM killer) well before its limit
    (137, 5.0, None, False),
    (3, 5.0, 2, False),
])
def test_step_timeouts_read_back(tmp_path, status, elapsed, timeout_s, timed_out):
    from mpibench.schedulers import read_step_result

    (tmp_path / "exit_status").write_text(f"{status}\n")
    (tmp_path / "timing.json").write_text(json.dumps(
        {"started": 100.0, "launch_started": 100.5, "finished": 100.0 + elapsed}))
    step = JobStep(cell_id="c", run_dir=tmp_path, argv=["x"], env={},
                   stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=timeout_s)
    sr = read_step_result(step)
    assert (sr.exit_code, sr.timed_out, sr.launch_started) == (status, timed_out, 100.5)


# -- campaign run --dry-run --show-scripts: the distinct scripts of a whole campaign ---------
DRY_TOML = """
[campaign]
name = "dry"
repeats = 2
timeout = 60

[variants.ompi]
stack = "openmpi"
transport = "tcp"
ppn = 1
sweep = { nodes = [1, 2] }
env = { ODD = "it's $HOME; `x`" }

[variants.mpich-srun]
stack = "mpich"
np = 2
nodes = 2
launcher = "srun"

[variants.mpich-template]
stack = "mpich"
nodes = 2
ppn = 1
launcher = "template"
launcher_args = ["{exe} -n {np} -f {hostfile} {program}"]

[benchmarks.pingpong]
benchmarks = ["PingPong"]
sizes = "0,1K"

[benchmarks.app]
command = "bash -c 'echo steps {steps}'"
params = { steps = [10, 20] }
fom = "wall_time"
variants = ["mpich-srun"]
"""
SCHEDULER_TABLES = {
    "slurm": '[scheduler]\nname = "slurm"\npartition = "debug"\naccount = "proj 42"\n'
             'group_cells = 1\n',
    "pbs": '[scheduler]\nname = "pbs"\nqueue = "workq"\ngroup_cells = 0\n',
    "local": "",
}


def _dry_stacks():
    from mpibench.stacks import Stack

    return [Stack(name="openmpi", kind="openmpi", mpicc="/opt/ompi/bin/mpicc",
                  launcher="/opt/ompi/bin/mpirun", launcher_kind="mpirun-openmpi",
                  library_version="Open MPI v4.1.4", modules=["openmpi/4.1.4 (site)"]),
            Stack(name="mpich", kind="mpich", mpicc="/opt/mpich/bin/mpicc",
                  launcher="/opt/mpich/bin/mpiexec.hydra", launcher_kind="mpiexec-hydra",
                  library_version="MPICH Version: 4.0.2")]


def _dry_text(tmp_path: Path, backend: str, monkeypatch) -> tuple[str, list]:
    import re

    import mpibench.execute
    from mpibench.campaign.scripts import describe_cells, job_scripts
    from mpibench.campaign.spec import load
    from mpibench.stacks import cache_dir

    monkeypatch.setattr(mpibench.execute, "running_as_root", lambda: False)
    d = tmp_path / "camp aign"            # a space: quoting must hold
    d.mkdir()
    (d / "dry.toml").write_text(DRY_TOML + SCHEDULER_TABLES[backend])
    scripts = job_scripts(load(d / "dry.toml"), _dry_stacks())
    assert not (d / "runs").exists() and not (d / "mpibench.db").exists()  # nothing written
    text = "".join(f"===== {describe_cells(s.cells, limit=99)}\n{s.text}" for s in scripts)
    # machine- and source-dependent parts: the campaign directory and build-cache keys
    text = text.replace(str(d), "/CAMPAIGN").replace(str(cache_dir()), "/CACHE")
    text = re.sub(r"/CACHE/(build|verify)/[^/']+/", r"/CACHE/\1/KEY/", text)
    return text, scripts


@pytest.mark.parametrize("group_cells", [0, 2])
def test_a_staged_campaigns_dry_run_shows_the_jobs_of_each_stage(tmp_path, monkeypatch,
                                                                  group_cells):
    """`campaign run --show-scripts` of a repeats = "decide" campaign under PBS: the run
    submits one stage's jobs at a time (looks at 3, 6, ... rounds), so every script shown
    holds the cells of one stage, never rounds of two (review s40 R9: with group_cells = 0
    it showed one job a variant holding every round, its walltime the sum over all), and
    together they hold every cell of the campaign once, as the run's jobs would."""
    import re

    import mpibench.execute
    from mpibench.campaign.auto_repeats import Stages
    from mpibench.campaign.plan import expand
    from mpibench.campaign.scripts import job_scripts
    from mpibench.campaign.spec import load

    monkeypatch.setattr(mpibench.execute, "running_as_root", lambda: False)
    toml = re.sub(r"repeats = \d+", 'repeats = { until = "decided", min = 3, max = 9, step = 3 }',
                  DRY_TOML, count=1)
    (tmp_path / "dry.toml").write_text(toml + '[scheduler]\nname = "pbs"\nqueue = "workq"\n'
                                       f"group_cells = {group_cells}\n")
    spec = load(tmp_path / "dry.toml")
    scripts = job_scripts(spec, _dry_stacks())
    ends = Stages(SimpleNamespace(spec=spec, log=lambda msg: None), 0).boundaries()
    assert len(ends) >= 2

    def stage(r):
        return next(i for i, b in enumerate(ends) if r < b or i == len(ends) - 1)

    cells = expand(spec)
    assert sorted(c.id for s in scripts for c in s.cells) == sorted(c.id for c in cells)
    # the most cells one job can hold: one variant's cells of one stage
    per_stage = {}
    for c in cells:
        k = (c.variant.name, stage(c.repeat))
        per_stage[k] = per_stage.get(k, 0) + 1
    most = max(per_stage.values()) if group_cells == 0 else group_cells
    # a script is shared by every job its text fits (cell ids are placeholders in it): the
    # job's own cells are its placeholders
    for s in scripts:
        k = len(set(re.findall(r"<cell(\d+)>", s.text))) or 1
        assert k <= most and len(s.cells) % k == 0, (k, most, len(s.cells))
        assert len(re.findall(r"walltime=\d+:\d+:\d+", s.text)) == 1

@pytest.mark.parametrize("backend", ["slurm", "pbs", "local"])
def test_dry_run_shows_every_distinct_job_script(tmp_path, monkeypatch, backend):
    """The scripts a campaign would submit, before submitting: directives, module loads,
    the probe and launcher lines, each distinct script once with the cells that use it (the
    two repeats of a point share one; the app's two parameter points do not)."""
    text, scripts = _dry_text(tmp_path, backend, monkeypatch)
    check_golden(f"dryrun-{backend}.txt", text)
    n_cells = 2 * (2 + 1 + 1 + 2)      # repeats x (ompi sweep, mpich-srun, template, app)
    assert sum(len(s.cells) for s in scripts) == n_cells
    if backend == "pbs":                # group_cells = 0: one job per variant
        assert len(scripts) == 4
    else:                               # one per variant/point; repeats share theirs
        assert len(scripts) == n_cells // 2
        assert all(len(s.cells) == 2 for s in scripts)
    for s in scripts:
        assert "<cell" in s.text and not any(c.id in s.text for c in s.cells)
        check = subprocess.run(["bash", "-n"], input=s.text, text=True, capture_output=True)
        assert check.returncode == 0, check.stderr
    # the hostile value is one quoted word, in every script that carries it
    assert shlex.quote("ODD=it's $HOME; `x`") in text
    if backend != "local":
        # the probe step of a one-rank job asks for one rank, never two
        one = next(s for s in scripts if "ompi[nodes=1]" in s.cells[0].label)
        probe = next(ln for ln in one.text.splitlines() if "mpibench-transport-probe" in ln)
        assert "-np 1 " in probe, probe


def test_pbs_node_file_is_the_default_hostfile_of_every_launcher(tmp_path):
    """Under PBS, an Open MPI or Hydra built without PBS (tm) support does not see the
    allocation and started every rank on the first node: the job's hostfile (PBS's node
    file) is exported as their default host file."""
    from mpibench.schedulers.slurm import hostfile_lines

    d = tmp_path / "job dir"
    d.mkdir()
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("a\na\nb\nb\n")
    step = JobStep("c-1", d, ["true"], {}, d / "o", d / "e")
    script = "\n".join([*hostfile_lines(JobRequest("j", [step], d), 2),
                        'echo "$OMPI_MCA_orte_default_hostfile|'
                        '$PRTE_MCA_prte_default_hostfile|$HYDRA_HOST_FILE"'])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    res = subprocess.run(["bash", "-c", script], env={**env, "PBS_NODEFILE": str(nodefile)},
                         text=True, capture_output=True, timeout=30)
    assert res.returncode == 0, res.stderr
    hf = str(d / "hostfile")
    assert res.stdout.strip() == f"{hf}|{hf}|{hf}"
    assert (d / "hostfile").read_text() == "a\na\nb\nb\n"


# -- a step complete before its launcher exits (the transport probe) -------------------------
HANGING_LAUNCHER = """#!/bin/bash
# stands in for mpiexec whose ranks all reported and whose MPI_Finalize then hangs (MPICH
# 4.0.2 over UCX tcp under load): prints each rank's lines, then never exits by itself. A
# SIGTERM (the step's timeout, or the step stopping it) ends it only after all its lines
# are out, however late it got to print them
echo $$ >launcher.pid
trap 'stopped=1' TERM
for r in $(seq 0 $(($1 - 1))); do
  echo "mpibench-probe rank=$r host=h"
  [ "$r" = "$2" ] || echo "mpibench-probe exchanged rank=$r"
done
[ -n "${stopped:-}" ] && exit 143
sleep 600 & wait $!
exit 143
"""


def _run_complete_step(tmp_path: Path, np: int, silent_rank: int, timeout_s: float):
    from mpibench.schedulers import StepCompletion, job_body, read_step_result
    from mpibench.verify import EXCHANGED_ERE, probe_launch_problem

    d = tmp_path / "probe dir"
    d.mkdir()
    launcher = tmp_path / "launcher.sh"
    launcher.write_text(HANGING_LAUNCHER)
    launcher.chmod(0o755)
    step = JobStep("c-1-verify", d, [str(launcher), str(np), str(silent_rank)], {},
                   d / "stdout.txt", d / "stderr.txt", timeout_s=timeout_s,
                   complete=StepCompletion(EXCHANGED_ERE, np, "probe ranks", grace_s=0.5))
    req = JobRequest("j", [step], d)
    # the bound here only keeps a broken script from holding the suite
    res = subprocess.run(["bash", "-c", job_body(req)], text=True, capture_output=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    pid = int((d / "launcher.pid").read_text())
    out = (d / "stdout.txt").read_text()
    sr = read_step_result(step)
    problem = probe_launch_problem(sr.exit_code, sr.timed_out, step.timeout_s, out,
                                   (d / "stderr.txt").read_text(), np)
    return pid, sr, problem, (d / "stderr.txt").read_text()


def test_a_probe_step_ends_once_every_rank_reported_and_its_launcher_is_stopped(tmp_path):
    """The batch probe step waited for its launcher: an MPI_Finalize that hung after every
    rank had reported held the job for the step's whole timeout (60 s a job under load).
    Now the step ends once all np ranks reported; the hung launcher is stopped by its PID
    and the step says so; the verdict holds (every rank's exchange went through)."""
    pid, sr, problem, err = _run_complete_step(tmp_path, 4, -1, timeout_s=600)
    assert wait_gone(pid)
    assert sr.exit_code is not None and not sr.timed_out
    assert problem is None
    assert "mpibench: all 4 probe ranks reported; the launcher (pid " in err
    assert "had not exited 0.5 s later and was stopped" in err


def test_a_probe_rank_that_never_reports_still_fails_the_probe(tmp_path):
    """Rank 2 of 4 never says its exchange went through: the step runs into its timeout
    and the probe's reason names the rank."""
    pid, sr, problem, err = _run_complete_step(tmp_path, 4, 2, timeout_s=3)
    assert wait_gone(pid)
    assert sr.timed_out
    assert problem == "probe launch timed out after 3 s; rank 2 never reported its exchange"
    assert "mpibench: all" not in err


# a launcher that leaves a core output (a real capture) where the campaign's --jsonl says,
# then hangs as MPICH's MPI_Finalize now and then does
CORE_THEN_HANG = r"""#!/bin/bash
echo $$ >launcher.pid
trap 'exit 143' TERM
cp "$1" core.jsonl
sleep 600 & wait $!
"""


def test_a_core_step_ends_once_its_footer_is_written(tmp_path, monkeypatch):
    """A job script's core step waited for its launcher: one hung in MPI_Finalize after
    the footer held the job for the cell's whole timeout (the mpich-srun nodes=2 cell of
    tests/schedulers/test_multinode.py, 90 s). With the core's completion rule the step
    stops it after the grace and records launcher_stopped; read back, the step is not a
    timeout and says how long after the footer it was stopped. (Without the footer a step
    times out as before: the probe step's silent rank here, and the real launch of
    tests/schedulers/test_local.py.)"""
    from mpibench import execute
    from mpibench.schedulers import job_body, read_step_result

    monkeypatch.setattr(execute, "CORE_FINALIZE_GRACE_S", 0.5)
    d = tmp_path / "cell dir"
    d.mkdir()
    launcher = tmp_path / "launcher.sh"
    launcher.write_text(CORE_THEN_HANG)
    launcher.chmod(0o755)
    capture = Path(__file__).parents[1] / "data" / "core" / "mpich-np2-ok.jsonl"
    cmd = execute.CellCommand(
        argv=[str(launcher), str(capture)], env={}, run_dir=d,
        stdout=d / "stdout.txt", stderr=d / "stderr.txt", jsonl=d / "core.jsonl",
        fingerprint_argv=[], variant=None, stack=None)
    step = JobStep("c-1", d, cmd.argv, {}, cmd.stdout, cmd.stderr, timeout_s=600,
                   complete=execute.core_completion(cmd))
    # the bound here only keeps a broken script from holding the suite
    res = subprocess.run(["bash", "-c", job_body(JobRequest("j", [step], d))], text=True,
                         capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr
    sr = read_step_result(step)
    err = (d / "stderr.txt").read_text()
    assert not sr.timed_out and sr.exit_code == 143
    assert sr.stopped_after is not None and sr.stopped_after >= 0
    assert "mpibench: the core's footer was written (core.jsonl); the launcher (pid " in err
    said, then = step.complete.stopped_words()   # the local backend's text too
    assert f"{said} (pid " in err and f") {then}\n" in err
    assert res.stderr == ""  # nothing said while the core had not written its file
    assert wait_gone(int((d / "launcher.pid").read_text()))


def test_a_stopped_launchers_kill_is_not_a_timeout(tmp_path):
    """`timeout` sends KILL 10 s after the completion rule's TERM to a launcher that
    ignores it: 137 past the step's limit is then the rule's stop, not the step's timeout."""
    from mpibench.schedulers import STOPPED_FILE, read_step_result, stopped_record

    (tmp_path / "exit_status").write_text("137\n")
    (tmp_path / "timing.json").write_text(json.dumps(
        {"started": 100.0, "launch_started": 100.5, "finished": 125.0}))
    (tmp_path / STOPPED_FILE).write_text('{"complete": 103.0, "stopped": 113.5}\n')
    step = JobStep(cell_id="c", run_dir=tmp_path, argv=["x"], env={},
                   stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=20)
    sr = read_step_result(step)
    assert not sr.timed_out and sr.stopped_after == 10.5
    # the local backend's writer, the job script's format
    assert stopped_record(None, 113.5) == '{"complete": null, "stopped": 113.5}\n'
    (tmp_path / STOPPED_FILE).write_text(stopped_record(None, 113.5))
    assert read_step_result(step).stopped_after == 0.0


def test_damaged_step_files_read_as_absent_never_raise(tmp_path):
    """A step's files come back over a shared filesystem: one that is a directory, or holds
    a number too large for a float or a non-finite one, reads as absent (the harness used
    to raise IsADirectoryError / OverflowError and report inf or nan elapsed seconds); a
    stop whose times are damaged is still a stop, at an unknown 0 s."""
    from mpibench.schedulers import STOPPED_FILE, read_step_result

    step = JobStep(cell_id="c", run_dir=tmp_path, argv=["x"], env={},
                   stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=20)
    (tmp_path / "exit_status").mkdir()
    (tmp_path / "timing.json").write_text('{"started": 1' + "0" * 400 + ', "finished": 2}')
    sr = read_step_result(step)
    assert (sr.exit_code, sr.elapsed, sr.started, sr.timed_out) == (None, 0.0, None, False)
    (tmp_path / "exit_status").rmdir()
    (tmp_path / "exit_status").write_text("0\n")
    for started in ("-Infinity", "NaN", "true", '"100"'):
        (tmp_path / "timing.json").write_text(
            '{"started": ' + started + ', "launch_started": 100.5, "finished": 125.0}')
        assert (read_step_result(step).elapsed, read_step_result(step).started) == (0.0, None)
    (tmp_path / STOPPED_FILE).write_text('{"complete": 103.0, "stopped": 1' + "0" * 400 + "}")
    assert read_step_result(step).stopped_after == 0.0
    (tmp_path / STOPPED_FILE).write_text('{"complete": -Infinity, "stopped": 113.5}')
    assert read_step_result(step).stopped_after == 0.0
    (tmp_path / STOPPED_FILE).unlink()
    (tmp_path / STOPPED_FILE).mkdir()
    assert read_step_result(step).stopped_after is None


def test_step_result_files_surface_derandomized():
    """The 'step result files' fuzz surface with a fixed seed (68 of 400 cases raised
    before the reads were made robust): damaged step files never raise, and nothing
    non-finite or negative comes back."""
    import random

    from support import surfaces as _surfaces

    surf = next(s for s in _surfaces.SURFACES if s.name == "step result files")
    t = surf.run(random.Random(12), 80)
    assert t.tried == 80 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples


def test_a_launcher_that_exits_by_itself_ends_its_step_at_once(tmp_path):
    """The step used to look at its launcher once a tick (`kill -0`, then `sleep`), so
    every launch that exited normally waited up to a tick more (a second for a core cell);
    it now reads its launcher's exit status as it comes. With a tick of an hour the step
    could only end within the guard below by seeing the exit itself."""
    from mpibench.schedulers import StepCompletion, job_body, read_step_result

    d = tmp_path / "d"
    d.mkdir()
    step = JobStep("c-1", d, ["sh", "-c", "echo partial; exit 3"], {}, d / "stdout.txt",
                   d / "stderr.txt", timeout_s=600,
                   complete=StepCompletion("^never$", 1, "lines", grace_s=3600,
                                           file="core.jsonl", tick_s=3600))
    res = subprocess.run(["bash", "-c", job_body(JobRequest("j", [step], d))], text=True,
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    sr = read_step_result(step)
    assert (sr.exit_code, sr.timed_out, sr.stopped_after) == (3, False, None)
    assert (d / "stdout.txt").read_text() == "partial\n"


def test_a_watched_file_named_with_a_newline_is_no_script_line(tmp_path):
    """A core step's watched file is the campaign's --jsonl path: a newline in it must not
    end a comment line and start a command in the job script."""
    from mpibench.schedulers import StepCompletion, job_body

    d = tmp_path / "cell dir"
    d.mkdir()
    name = "x\ntouch pwned\n#.jsonl"
    step = JobStep("c-1", d, ["true"], {}, d / "stdout.txt", d / "stderr.txt",
                   timeout_s=60, complete=StepCompletion('^[{]"record":"footer"', 1,
                                                         "core's footer", file=name))
    # the bound here only keeps a broken script from holding the suite
    res = subprocess.run(["bash", "-c", job_body(JobRequest("j", [step], d))], text=True,
                         capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (d / "exit_status").read_text() == "0\n"
    assert not (d / "pwned").exists(), "a line of the watched file's name was executed"
