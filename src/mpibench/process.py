"""The one seam through which every external command runs (mpirun, compilers, sbatch, ...).

Keeping it in one place gives uniform logging, timeouts that kill the whole process tree,
and a single point to observe in tests.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mpibench.files import write_file

log = logging.getLogger("mpibench.process")


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat): with
    the PID it names one process even after PIDs wrap, not a later one that reused the PID.
    None when there is no such process or it has exited (a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2:].split()   # the command name may hold spaces and ')'
    if len(rest) < 20 or rest[0] in ("Z", "X"):
        return None
    return int(rest[19])


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool = False
    env_delta: dict[str, str] = field(default_factory=dict)
    # run_until_complete: the command was stopped this many seconds after its output was
    # complete (it had not exited within the grace); None otherwise
    stopped_after: float | None = None
    pid: int | None = None  # run_until_complete: the command's PID (its process group's)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def stderr_tail(self, lines: int = 20) -> str:
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float | None = None,
    stdout_path: str | os.PathLike | None = None,
    stderr_path: str | os.PathLike | None = None,
    input_text: str | None = None,
    die_with_parent: bool = False,
) -> CommandResult:
    """Run argv (never through a shell) with extra env vars on top of os.environ.

    On timeout the whole process group is killed (mpirun leaves orphans otherwise) and the
    result says timed_out=True with returncode -9. Output is also written to stdout_path /
    stderr_path when given, so raw output is kept as provenance even when parsing fails.
    die_with_parent: the command gets SIGTERM when this process dies, however it dies (a
    build: a SIGKILLed harness left `make` and its recipe running in their own session for
    good; make stops its recipes on SIGTERM, and the build cache's next builder stops what
    still works in the old staging directory and removes it). Launches do not: a
    campaign's resume finds and stops them (kill_orphans).
    """
    argv = [str(a) for a in argv]
    full_env, delta = _full_env(env)
    log.debug("run %s (env %s, cwd %s, timeout %s)", argv, delta, cwd, timeout)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            env=full_env,
            cwd=cwd,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()) if die_with_parent else None,
        )
    except OSError as exc:
        return CommandResult(argv, 127, "", f"cannot execute {argv[0]}: {exc}", 0.0, False, delta)
    timed_out = False
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    elapsed = time.monotonic() - start
    rc = proc.returncode if not timed_out else -9
    if stdout_path is not None:
        write_file(stdout_path, out)
    if stderr_path is not None:
        write_file(stderr_path, err)
    return CommandResult(argv, rc, out, err, elapsed, timed_out, delta)


def run_until_complete(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float,
    stdout_path: str | os.PathLike,
    stderr_path: str | os.PathLike,
    complete_at: Callable[[], float | None],
    grace: float,
    tick: float,
) -> CommandResult:
    """run_command for a launch whose output can be complete before it exits (a core's
    footer, a probe's reports: schedulers.StepCompletion). Its output goes straight to
    stdout_path / stderr_path, so that complete_at() can read it while it runs; every
    `tick` seconds (and never later than the launch's exit, which is seen at once) it is
    asked when the output was complete (None: not yet). From then the command has `grace`
    seconds to exit by itself; then its process group is stopped, by its PID (TERM, KILL
    3 s later), and the result's stopped_after says how long after the output was complete
    and its returncode is the shell's (143 for a launcher the TERM killed, 137 the KILL),
    as a batch job's step records it, not Popen's -15 / -9.
    The `timeout` bounds the whole launch as run_command's does (timed_out, -9)."""
    argv = [str(a) for a in argv]
    full_env, delta = _full_env(env)
    log.debug("run %s until complete (env %s, cwd %s, timeout %s)", argv, delta, cwd, timeout)
    start = time.monotonic()
    for path in (stdout_path, stderr_path):
        Path(path).unlink(missing_ok=True)
    # appended to, fresh: the launcher's own output streams, read while it runs
    with open(stdout_path, "a") as out, open(stderr_path, "a") as err:
        try:
            proc = subprocess.Popen(argv, env=full_env, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
        except OSError as exc:
            return CommandResult(argv, 127, "", f"cannot execute {argv[0]}: {exc}", 0.0,
                                 False, delta)
    deadline = start + timeout
    timed_out, stopped_after, done, seen = False, None, None, 0.0
    pidfd = _pidfd(proc)
    try:
        while True:
            left = deadline - time.monotonic()
            wait = min(tick, left) if done is None else \
                min(grace - (time.monotonic() - seen), left)
            if _exited(proc, pidfd, max(0.0, wait)):
                break
            if time.monotonic() >= deadline:
                timed_out = True
                _kill_group(proc, pidfd)
                break
            if done is None:
                done = complete_at()        # epoch seconds: the file's mtime
                seen = time.monotonic()     # the grace runs from here, on the steady clock
            elif time.monotonic() - seen >= grace:
                stopped_after = max(0.0, time.time() - done)
                _kill_group(proc, pidfd)
                break
    finally:
        # what the launcher left in its process group must not run on into the next cell
        # (a launch that exits at once with `sleep 30 &` in it; a rank the TERM did not
        # stop), nor on after an exception or a Ctrl-C here; before the wait below reaps
        # the launcher, so its PID, the group's ID, cannot have been reused. (Without a
        # pidfd, i.e. not Linux >= 5.3, _exited's Popen.wait has already reaped a launcher
        # that exited, so there the group's ID could in principle be reused by then.)
        _killpg(proc.pid, signal.SIGKILL)
        if pidfd is not None:
            os.close(pidfd)
        proc.wait()
    elapsed = time.monotonic() - start
    text = [Path(p).read_text(errors="replace") if Path(p).exists() else ""
            for p in (stdout_path, stderr_path)]
    rc = -9 if timed_out else proc.returncode
    if stopped_after is not None and rc < 0:
        rc = 128 - rc  # killed by our stop: the shell's 128 + signal, as a job script's step
    return CommandResult(argv, rc, text[0], text[1], elapsed, timed_out, delta,
                         stopped_after, proc.pid)


def _full_env(env: Mapping[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """os.environ with env on top, and env alone (what the result records as env_delta)."""
    delta = dict(env or {})
    return {**os.environ, **delta}, delta


def _pidfd(proc: subprocess.Popen) -> int | None:
    """A pidfd of proc where Linux gives one (readable the moment proc exits), else None."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def _exited(proc: subprocess.Popen, pidfd: int | None, seconds: float) -> bool:
    """Wait up to `seconds` for proc to exit, returning the moment it does (through its
    pidfd: Popen.wait(timeout) polls, up to 50 ms late, which every launch would pay)."""
    if pidfd is not None:
        return bool(select.select([pidfd], [], [], seconds)[0])
    try:
        proc.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _die_with(parent: int):
    """preexec_fn: SIGTERM when the parent dies (Linux PR_SET_PDEATHSIG; TERM, not KILL, so
    that make passes it on to the recipes it runs), and exit at once if it already has."""
    def setup() -> None:
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:
            os._exit(137)
    return setup


def _kill_group(proc: subprocess.Popen, pidfd: int | None = None) -> None:
    """Stop proc's process group: TERM (mpirun tears its ranks down), up to 3 s for proc to
    exit, then KILL to the group whether or not proc exited (what it left there, a rank
    that ignored the TERM). With a pidfd proc is not reaped here, so its PID, the group's
    ID, cannot be reused before the KILL."""
    if not _killpg(proc.pid, signal.SIGTERM):
        return
    own = pidfd is None
    if own:
        pidfd = _pidfd(proc)
    try:
        _exited(proc, pidfd, 3.0)
    finally:
        if own and pidfd is not None:
            os.close(pidfd)
    _killpg(proc.pid, signal.SIGKILL)


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it is gone (or no longer ours)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_orphans(run_dir: Path) -> list[int]:
    """Processes a dead harness left behind in run_dir (their working directory): stop their
    process groups, by PID. Returns the PIDs found."""
    try:
        target = os.path.realpath(run_dir)
    except OSError:
        return []
    own = os.getpgid(0)
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == target or cwd.startswith(target + os.sep):
            pids.append(int(entry))
    groups = set()
    for pid in pids:
        try:
            pg = os.getpgid(pid)
        except OSError:
            continue
        if pg != own and pid != os.getpid():
            groups.add(pg)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pg in groups:
            try:
                os.killpg(pg, sig)
            except OSError:
                pass
        if sig == signal.SIGTERM and groups:
            time.sleep(1.0)
    return pids

