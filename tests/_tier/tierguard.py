"""The test tiers' guard: a unit-tier test must not start MPI, Slurm, PBS, compilers,
GROMACS or a browser.

conftest.py points MPIBENCH_TIER_GUARD at a per-test log file for every test that is not
marked `system` (`mpi` and `slurm` imply it). An audit hook, installed in the pytest process
and, through sitecustomize.py beside this file on PYTHONPATH, in every Python child (the
`mpibench` CLI run as a subprocess), refuses such a launch and writes it to that log, so the
test fails with a message naming the command instead of quietly becoming a slow system test.
Children that are not Python (a job script run by bash) are caught by looking into the script.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

ENV = "MPIBENCH_TIER_GUARD"

# Basenames (or their prefixes) of programs that make a test a system test.
_SYSTEM = re.compile(
    r"^(mpirun|mpiexec|orterun|prterun|prte|hydra_|mpicc|mpicxx|mpif|mpibench-core|"
    r"srun|sbatch|salloc|squeue|scontrol|sinfo|scancel|sacct|slurmctld|slurmd|munged|"
    r"qsub|qstat|qdel|pbsnodes|gmx|chromium|NPmpi|IMB-|osu_|make$|cc$|gcc|unshare$|nsenter$|"
    r"initdb|pg_ctl|postgres$)")
_SCRIPT_WORDS = re.compile(r"\b(mpirun|mpiexec|srun|mpibench-core|gmx_mpi|gmx)\b")
_SHELLS = {"bash", "sh", "dash"}


_TMP = os.path.realpath(tempfile.gettempdir()) + os.sep


def _is_temp(path: str) -> bool:
    return os.path.isabs(path) and os.path.realpath(path).startswith(_TMP)


def system_program(argv) -> str | None:
    """The program in argv that only a system test may start, or None."""
    try:
        args = [os.fsdecode(a) for a in argv]
    except TypeError:
        return None
    for a in args:
        base = os.path.basename(a)
        # a stand-in the test wrote into its tmp_path (a fault that cannot be made for real)
        # is not the real program
        if _SYSTEM.match(base) and not _is_temp(a):
            return base
    if args and os.path.basename(args[0]) in _SHELLS:
        for a in args[1:]:
            if not a.startswith("-") and os.path.isfile(a):
                try:
                    with open(a, errors="replace") as f:
                        m = _SCRIPT_WORDS.search(f.read(200_000))
                except OSError:
                    m = None
                if m:
                    return f"{os.path.basename(a)} (a script running {m.group(1)})"
    return None


def _hook(event: str, args) -> None:
    if event not in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        return
    log = os.environ.get(ENV)
    if not log:
        return
    argv = args[1]  # (executable, args, ...) for Popen; (path, argv, env) for spawn/exec
    if isinstance(argv, (str, bytes)):
        argv = [argv]
    prog = system_program(argv or [args[0]])
    if prog is None:
        return
    try:
        with open(log, "a") as f:
            f.write(f"{prog}: {' '.join(map(str, argv))[:300]}\n")
    except OSError:
        pass
    raise PermissionError(f"unit-tier test may not start {prog} (mark the test 'system')")


_installed = False


def install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
