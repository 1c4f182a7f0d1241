"""Scheduler backends, registered by name: how a campaign cell's commands get run.

The campaign runner turns each cell into a JobRequest (one or more JobSteps: argv + env + run
directory) and hands it to a backend:

  local        runs steps synchronously in this process (`batch = False`, `run_step`)
  slurm, pbs   batch backends (`batch = True`): render_script / submit / poll / cancel

Contract for batch backends (one module each, `@register_scheduler("slurm")`):

  render_script(req) -> str      the whole job script; directives from req/settings, then
                                 `job_body(req)` (shared here) for the steps. Every value that
                                 reaches the shell goes through shlex.quote.
  submit(req) -> job_id          writes nothing into the store; raises SchedulerError on refusal
  poll(job_ids) -> {id: JobStatus}   ONE scheduler query for all ids, never a sleep. Ids the
                                 scheduler no longer knows may be missing from the answer; a
                                 failed query raises SchedulerQueryError (the runner retries
                                 with backoff and never gives up on the job because of it).
                                 An ended job whose record is not complete yet comes back
                                 `unsettled`: the runner asks again at its next polls.
  cancel(job_id) -> None
  find_job(req, since) -> job_id | None   the job a lost submission left behind (by name)

Steps leave their results in their run directory (see job_body): stdout/stderr files, an
`exit_status` file with the integer exit status (124 = killed by the step timeout), a
`timing.json` with epoch seconds {"started", "launch_started", "finished"} (launch_started:
after the setup commands, null when setup failed) and, for steps with setup commands,
`setup.out`/`setup.err` (created even when empty), and for a step with a completion rule
whose launcher had to be stopped after its output was complete, `launcher_stopped` (see
StepCompletion). The harness reads them with `read_step_result` and ingests; a job never
writes the database (single writer).
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.envnames import checked_env
from mpibench.errors import MpibenchError
from mpibench.registry import Registry

JOB_STATES = ("pending", "running", "completed", "failed", "timeout", "node_fail",
              "cancelled", "oom")
TERMINAL_JOB_STATES = frozenset(JOB_STATES) - {"pending", "running"}
EXIT_STATUS_FILE = "exit_status"
TIMING_FILE = "timing.json"
STEP_TIMEOUT_EXIT = 124  # what coreutils `timeout` returns when it had to stop the command
# written by a step whose launcher was stopped after its output was complete (StepCompletion):
# {"complete": epoch seconds of the watched file's last write, "stopped": epoch seconds},
# one line: STOPPED_FIELDS is its printf format, for the job script's bash and for
# stopped_record (the local backend); read_stopped reads it back
STOPPED_FILE = "launcher_stopped"
STOPPED_FIELDS = '{"complete": %s, "stopped": %s}'
COMPLETE_TICK_S = 0.25  # how often a StepCompletion step's output is looked at (default)
STOP_KILL_AFTER_S = 15  # a stopped launcher still running then gets SIGKILL


class SchedulerError(MpibenchError):
    """A scheduler refused or failed an action (submit, cancel)."""


class SchedulerQueryError(SchedulerError):
    """A status query failed; transient until proven otherwise."""


class SubmissionUnknown(SchedulerError):
    """A submission was lost and the scheduler cannot be asked whether it took the job:
    submitting again could run the cells twice, so the cells stay as they are (`running`,
    no job id) and `campaign resume` settles it once the scheduler answers."""


@dataclass
class SchedulerSettings:
    """The campaign file's [scheduler] table, validated (see campaign/spec.py)."""

    name: str = "local"
    partition: str | None = None  # Slurm partition or PBS queue
    queue: str | None = None  # alias accepted for PBS users; backends use partition or queue
    account: str | None = None
    time_limit_s: float | None = None  # per job; default derived from the cell timeout
    nodes: int | None = None  # per job; default from the variant
    tasks_per_node: int | None = None  # per job; default from the variant's ppn
    exclusive: bool = False
    extra_directives: list[str] = field(default_factory=list)  # verbatim '#SBATCH ...' etc.
    job_name_prefix: str = "mpibench"
    # one job at a time by default: jobs of different variants running together on the
    # same nodes measure each other, and the interleaved order means nothing
    max_jobs_in_flight: int = 1
    group_cells: int = 1  # cells of one variant per job (1 = one job per cell)
    poll_interval_s: float = 5.0  # first poll delay; backs off up to poll_max_interval_s
    poll_max_interval_s: float = 60.0
    modules: list[str] = field(default_factory=list)  # `module load` before the steps
    options: dict[str, Any] = field(default_factory=dict)  # backend-specific keys

    @property
    def queue_or_partition(self) -> str | None:
        return self.partition or self.queue


@dataclass(frozen=True)
class StepCompletion:
    """A step whose result is complete before its launcher exits (the transport probe, whose
    ranks all reported; a core launch, whose footer is written): an MPI_Finalize that hangs
    after that must not hold the job for the step's whole timeout. Once `count` distinct
    lines of the step's stdout match `pattern` (an awk extended regular expression), or,
    with `file` (a path in the run directory), once the last `count` lines of that file do,
    the launcher has `grace_s` seconds to exit by itself; then it is stopped by its PID
    (SIGTERM to the step's `timeout`, which passes it on to its process group and sends
    SIGKILL 10 s later), a line on the step's stderr says so and the step writes
    STOPPED_FILE. The output is looked at every `tick_s` seconds. A launcher that exits
    first, or a step whose lines never all arrive, ends as any step does (its own status,
    or 124)."""

    pattern: str
    count: int
    what: str = "lines"  # what one matching line is, for the stderr note ("ranks")
    grace_s: float = 5.0
    file: str | None = None  # watched instead of stdout (its last `count` lines)
    tick_s: float = COMPLETE_TICK_S

    def stopped_words(self) -> tuple[str, str]:
        """The stderr line of a stopped launcher, before and after its `(pid P)`: one text
        for the job script's lines (which know the PID only as they run) and run_local."""
        said = (f"mpibench: the {self.what} was written ({self.file}); the launcher"
                if self.file else
                f"mpibench: all {int(self.count)} {self.what} reported; the launcher")
        return said, f"had not exited {self.grace_s:g} s later and was stopped"

    def stopped_note(self, pid: int | str) -> str:
        said, then = self.stopped_words()
        return f"{said} (pid {pid}) {then}"


@dataclass
class JobStep:
    """One cell's command inside a job: run in run_dir, output to files there."""

    cell_id: str
    run_dir: Path
    argv: list[str]
    env: dict[str, str]  # added on top of the job's environment
    stdout: Path
    stderr: Path
    timeout_s: float | None = None
    setup: list[list[str]] = field(default_factory=list)  # argvs run first, in run_dir
    setup_env: dict[str, str] = field(default_factory=dict)
    cell: Any = None  # the execute.CellCommand behind it (local backend runs that directly)
    complete: StepCompletion | None = None  # ends once its output is complete (see there)


@dataclass
class JobRequest:
    name: str  # job name, already prefixed
    steps: list[JobStep]
    run_dir: Path  # where the job script and the scheduler's own output go
    nodes: int | None = None
    tasks_per_node: int | None = None
    time_limit_s: float | None = None
    settings: SchedulerSettings = field(default_factory=SchedulerSettings)
    modules: list[str] = field(default_factory=list)  # settings.modules + the stack's modules
    cpus_per_task: int | None = None  # cores per rank (the variant's cpus_per_task)

    @property
    def cell_id(self) -> str:
        return self.steps[0].cell_id

    @property
    def cell_ids(self) -> list[str]:
        return [s.cell_id for s in self.steps]


@dataclass
class JobStatus:
    state: str  # one of JOB_STATES
    exit_code: int | None = None
    reason: str | None = None
    nodelist: str | None = None
    raw: str | None = None  # the scheduler's own state text, stored as runs.sched_state
    # an ended job whose record the scheduler may still complete (Slurm: TIMEOUT before
    # slurmstepd's report of how the script ended): the batch loop keeps it in flight and
    # asks again, a bounded number of polls, before it settles it as it stands
    unsettled: bool = False

    def __post_init__(self) -> None:
        if self.state not in JOB_STATES:
            raise ValueError(f"job state {self.state!r} not one of {JOB_STATES}")

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_JOB_STATES


@dataclass
class StepResult:
    """What a finished step left behind (read back from its run directory)."""

    exit_code: int | None
    timed_out: bool
    elapsed: float
    started: float | None = None
    finished: float | None = None
    launch_started: float | None = None  # after the setup commands
    # seconds from the step's output being complete to its launcher being stopped, when the
    # launcher had not exited by itself (StepCompletion; STOPPED_FILE); None otherwise
    stopped_after: float | None = None


class Scheduler:
    name = ""
    batch = True
    settings_keys: tuple[str, ...] = ()  # backend-specific [scheduler] keys it accepts
    # directive options an extra_directives line may not set (option -> why): the job name
    # holds the cell id that recovery after a lost submission looks jobs up by
    reserved_directives: dict[str, str] = {}

    def __init__(self, settings: SchedulerSettings | None = None):
        self.settings = settings or SchedulerSettings(name=self.name)

    @classmethod
    def validate_options(cls, options: dict, where: str = "scheduler") -> None:
        """Check the values of the backend-specific [scheduler] keys; raise UsageError
        naming the key. The campaign loader has already refused every key that is not in
        settings_keys, so a backend overrides this only to check values; by default there
        is nothing to check."""

    @classmethod
    def check_directive(cls, line: str) -> str | None:
        """Why an extra_directives line may not be used (None when it may): it sets an
        option the harness owns, e.g. `-J x` / `#SBATCH --job-name=x` or PBS `-N x`."""
        words = line.split()
        if words and words[0].startswith("#"):
            words = words[1:]
        for w in words:
            opt = w.split("=", 1)[0]
            hit = next((o for o in cls.reserved_directives
                        if opt == o or (len(o) == 2 and w.startswith(o) and len(w) > 2)),
                       None)
            if hit:
                return f"sets {hit}: {cls.reserved_directives[hit]}"
        return None

    # batch backends ------------------------------------------------------------------
    def render_script(self, req: JobRequest) -> str:
        raise NotImplementedError

    def submit(self, req: JobRequest) -> str:
        raise NotImplementedError

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        raise NotImplementedError

    def cancel(self, job_id: str) -> None:
        raise NotImplementedError

    def find_job(self, req: JobRequest, since: float | None = None) -> str | None:
        """The id of a job named like req that is queued or running, or that was submitted
        at `since` (epoch seconds) or later: what a lost submission, or a harness killed
        between the scheduler's answer and storing the job id, left behind. None when
        there is none, or when the backend cannot look jobs up by name (the cells are
        then submitted again). Raises SchedulerQueryError when the scheduler does not
        answer."""
        return None

    # synchronous backends ------------------------------------------------------------
    def run_step(self, step: JobStep) -> StepResult:
        raise NotImplementedError


REGISTRY: Registry[type[Scheduler]] = Registry("scheduler", __name__)
register_scheduler = REGISTRY.register


def scheduler_names() -> list[str]:
    return REGISTRY.names()


def scheduler_class(name: str) -> type[Scheduler]:
    return REGISTRY.get(name)


def get_scheduler(name: str, settings: SchedulerSettings | None = None) -> Scheduler:
    return scheduler_class(name)(settings or SchedulerSettings(name=name))


# -- the shared job body -------------------------------------------------------------------
def _env_prefix(env: Mapping[str, str]) -> list[str]:
    """`env -- NAME=value` arguments, each quoted whole: a name from a campaign file is as
    untrusted as its value (`A;touch x;B` must not reach the shell as words), and after `--`
    GNU env takes nothing as an option (a name `--split-string` ran a command)."""
    checked_env(env)
    return ["--"] + [shlex.quote(f"{k}={v}") for k, v in sorted(env.items())]


def step_lines(step: JobStep) -> list[str]:
    """Shell lines that run one step and record exit status and timing in its run dir.
    A step's own failure never stops the job: later steps (grouped cells) still run."""
    d = shlex.quote(str(step.run_dir))
    q = shlex.quote
    lines = [f"# cell {step.cell_id}", f"cd {d}",
             f"rm -f {EXIT_STATUS_FILE} {TIMING_FILE} {STOPPED_FILE}",
             "mb_start=$(date +%s.%N)", "mb_launch=", "mb_rc=0"]
    limit = []
    if step.timeout_s:
        # TERM first so mpirun can tear its ranks down, KILL 10 s later.
        limit = ["timeout", "--kill-after=10", f"{max(1, int(round(step.timeout_s)))}"]
    for argv in step.setup:
        cmd = " ".join(["env"] + _env_prefix(step.setup_env) + [q(a) for a in limit + list(argv)])
        lines.append(f"if [ $mb_rc -eq 0 ]; then {cmd} >>setup.out 2>>setup.err "
                     "|| mb_rc=$?; fi")
    main = " ".join(["env"] + _env_prefix(step.env) + [q(a) for a in limit + list(step.argv)])
    # launch_started: an application's wall time is the launch alone, not its setup (grompp)
    if step.complete is None:
        lines.append(f"if [ $mb_rc -eq 0 ]; then mb_launch=$(date +%s.%N); {main} "
                     f">{q(step.stdout.name)} 2>{q(step.stderr.name)} || mb_rc=$?; fi")
    else:
        lines += _complete_lines(step, main)
    lines += ["mb_end=$(date +%s.%N)",
              'printf \'{"started": %s, "launch_started": %s, "finished": %s}\\n\' '
              f'"$mb_start" "${{mb_launch:-null}}" "$mb_end" >{TIMING_FILE}',
              # written last: its presence means the step finished (whatever its status)
              f"echo $mb_rc >{EXIT_STATUS_FILE}.tmp && mv {EXIT_STATUS_FILE}.tmp "
              f"{EXIT_STATUS_FILE}"]
    return lines


def _complete_lines(step: JobStep, main: str) -> list[str]:
    """The launcher in the background of a reporter (a process substitution) that says its
    PID, then its exit status: `read -t` on the reporter's line returns the moment the
    launcher exits, and otherwise every tick, when the output is looked at. Once it holds
    every expected line, one `read -t` waits out the grace; then the launcher is stopped
    by its PID (see StepCompletion), never by a name. No `sleep` and no `kill -0` polling:
    a launcher that exits by itself is seen at once (a tick's polling cost every step up
    to a tick). Needs bash >= 4.1 (`exec {fd}<`, a fractional `read -t`): every backend's
    script is run by bash (PBS: `#PBS -S /bin/bash`)."""
    c = step.complete
    q = shlex.quote
    out, err = q(step.stdout.name), q(step.stderr.name)
    watched = q(c.file) if c.file else out
    awk = ("awk -v mb_re=" + q(c.pattern) + " '$0 ~ mb_re && !mb_s[$0]++ { mb_n++ } "
           "END { print mb_n + 0 }'")
    # a file's last lines only (`tail` seeks): the core's JSON Lines may be large
    count = (f"tail -n {int(c.count)} {watched} 2>/dev/null | {awk}" if c.file
             else f"{awk} {out}")
    said, then = c.stopped_words()
    what = " ".join(c.what.split())  # (one comment line)
    record = q(STOPPED_FIELDS + "\\n")  # printf's format: the file's one line
    return [
        "if [ $mb_rc -eq 0 ]; then mb_launch=$(date +%s.%N)",
        f"  exec {{mb_fd}}< <({main} >{out} 2>{err} </dev/null & echo $!; wait $!; echo $?)",
        '  read -r mb_pid <&"$mb_fd"; mb_x=; mb_s=0',
        # (no file name in a comment: a newline in it would start a script line)
        (f"  # complete once the {what} is in the watched file" if c.file else
         f"  # complete once {int(c.count)} {what} reported")
        + ": the launcher may then hang (MPI_Finalize)",
        # read: 0 the exit status came, > 128 a tick passed, else the reporter is gone
        f'  until read -r -t {c.tick_s:g} mb_x <&"$mb_fd"; do mb_s=$?; '
        '[ "$mb_s" -le 128 ] && break',
        # (before the launcher has created its output file, nothing counted yet)
        f'    mb_n=$({count} 2>/dev/null); [ "${{mb_n:-0}}" -ge {int(c.count)} ] && break',
        "  done",
        '  mb_stop=; if [ -z "$mb_x" ] && [ "$mb_s" -gt 128 ]; then',
        f'    read -r -t {c.grace_s:g} mb_x <&"$mb_fd" || if [ $? -gt 128 ]; then',
        # when the output was complete: the watched file's last write
        f"      mb_done=$(date -r {watched} +%s.%N 2>/dev/null)",
        # (the step's `timeout` KILLs a launcher that ignores the TERM 10 s later; a
        # step without one gets the KILL from here)
        '      kill -TERM "$mb_pid"; mb_stop=$(date +%s.%N)',
        f'      read -r -t {STOP_KILL_AFTER_S} mb_x <&"$mb_fd" || '
        '{ kill -KILL "$mb_pid" 2>/dev/null; read -r mb_x <&"$mb_fd"; }',
        "    fi",
        "  fi",
        '  exec {mb_fd}<&-; [ "${mb_x:-1}" = 0 ] || mb_rc=${mb_x:-1}',
        f'  if [ -n "$mb_stop" ]; then printf \'%s (pid %s) %s\\n\' {q(said)} "$mb_pid" '
        f"{q(then)} >>{err}; printf {record} "
        f'"${{mb_done:-null}}" "$mb_stop" >{STOPPED_FILE}; fi',
        "fi",
    ]


def job_body(req: JobRequest) -> str:
    """Everything after the directives: modules, then each step."""
    lines = []
    for m in req.modules:
        lines.append(f"module load {shlex.quote(m)}")
    for step in req.steps:
        lines += step_lines(step)
    return "\n".join(lines) + "\n"


def read_step_result(step: JobStep, job_state: JobStatus | None = None) -> StepResult:
    """Read back what step_lines recorded. Missing files (job killed, node lost) give
    exit_code None; the job's own final state then tells why. A step that finished keeps
    its own result even when the job later ran out of time (grouped cells)."""
    exit_code: int | None = None
    try:
        exit_code = int((step.run_dir / EXIT_STATUS_FILE).read_text().strip())
    except (OSError, ValueError):     # absent, a directory, unreadable, cut or not a number
        exit_code = None
    started = finished = launch = None
    try:
        t = json.loads((step.run_dir / TIMING_FILE).read_text())
        started, finished = _epoch(t["started"]), _epoch(t["finished"])
        launch = _epoch(t["launch_started"]) if t.get("launch_started") is not None else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        started = finished = launch = None
    elapsed = (finished - started) if started is not None and finished is not None else 0.0
    stopped = read_stopped(step.run_dir) if exit_code is not None else None
    # the job's exit code is not the step's: the script exits 0 after any step failure.
    # `timeout` exits 124, or 128+9 when the command ignored TERM and needed the KILL
    # (unless the step itself stopped it, its output complete: then that KILL was ours).
    timed_out = exit_code == STEP_TIMEOUT_EXIT or (
        exit_code == 128 + 9 and bool(step.timeout_s) and elapsed >= step.timeout_s
        and stopped is None) or (
        exit_code is None and job_state is not None and job_state.state == "timeout")
    return StepResult(exit_code=exit_code, timed_out=timed_out, elapsed=elapsed,
                      started=started, finished=finished, launch_started=launch,
                      stopped_after=None if timed_out else stopped)


def _epoch(value: object) -> float:
    """A time read back from a step's files: a finite number (a bool, a string, a
    non-finite or too large one is damage: ValueError/TypeError/OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"not finite: {value!r}")
    return out


def stopped_record(complete: float | None, stopped: float) -> str:
    """STOPPED_FILE's text, as the job script's printf writes it."""
    return STOPPED_FIELDS % (json.dumps(complete), json.dumps(stopped)) + "\n"


def read_stopped(run_dir: Path) -> float | None:
    """Seconds from a step's output being complete to its launcher being stopped, from
    STOPPED_FILE (0 when the file's time is unknown); None when the step wrote none."""
    try:
        t = json.loads((Path(run_dir) / STOPPED_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(t, dict) or "stopped" not in t:
        return None
    try:
        return max(0.0, _epoch(t["stopped"]) - _epoch(t.get("complete")))
    except (TypeError, ValueError, OverflowError):
        return 0.0          # stopped, but when (or since when) is not known
