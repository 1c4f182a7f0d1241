"""The one seam through which every external command runs (mpirun, compilers, sbatch, ...).

Keeping it in one place gives uniform logging, timeouts that kill the whole process tree,
and a single point to observe in tests.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mpibench.files import write_file

log = logging.getLogger("mpibench.process")


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool = False
    env_delta: dict[str, str] = field(default_factory=dict)

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
    full_env = dict(os.environ)
    delta = dict(env or {})
    full_env.update(delta)
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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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

