"""Running a command under the PMPI profiler: the profiler library and its test programs
built per stack, the environment that preloads it (passed through the launcher's own flags
when the launcher does not forward it), the run with its timeout, and the signal that makes
the ranks write what they have when the timeout is near.

    env = profile_env("openmpi", out_dir)        # LD_PRELOAD + MPIBENCH_PROFILE_DIR
    ... launch the application with env ...
    run = run_profiled(argv, stack=..., out_dir=out_dir, timeout=600)

What the ranks wrote is read back by mpibench.profile.document.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.errors import BenchmarkFailure, BuildError, UsageError
from mpibench.process import CommandResult, run_command
from mpibench.profile.document import RANK_FILE, collect_profile

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


# ---- stacks and builds -----------------------------------------------------------------
def _launcher_stack(argv0: str, usable: Sequence[Any]) -> tuple[Any, str | None]:
    """The stack whose launcher argv0 is (a Stack or None) and, failing that, the kind its
    name implies (Debian's names), or None when the launcher says nothing."""
    exe = os.path.basename(argv0)
    real = shutil.which(argv0)
    for s in usable:  # by name, then through symlinks (Debian alternatives: mpirun)
        if s.launcher and os.path.basename(s.launcher) == exe:
            return s, s.kind
    for s in usable:
        if real and s.launcher and os.path.realpath(s.launcher) == os.path.realpath(real):
            return s, s.kind
    from mpibench.stacks.kinds import kind_for_launcher

    return None, kind_for_launcher(exe)


def resolve_stack(stack: Any = None, argv: Sequence[str] | None = None,
                  found: Sequence[Any] | None = None):
    """A mpibench.stacks.Stack from a Stack, a stack name, a compiler wrapper, or (when None)
    guessed from the launcher in argv, else the first usable stack. `found`: the stacks
    discovered (default: mpibench.stacks.discover())."""
    from mpibench import stacks as stacks_mod

    if isinstance(stack, stacks_mod.Stack):
        return stack
    found = list(found) if found is not None else stacks_mod.discover()
    usable = [s for s in found if s.ok and not s.alias_of]
    if stack is None and argv:
        s, kind = _launcher_stack(argv[0], usable)
        if s is not None:
            return s
        stack = kind
    if stack is None:
        if not usable:
            raise UsageError("no usable MPI stack found; install Open MPI or MPICH, or give "
                             "--stack")
        return usable[0]
    name = str(stack)
    for s in found:
        if s.name == name:
            return stacks_mod.find_stack(name, found)
    real = shutil.which(name)
    for s in usable:
        w = shutil.which(s.mpicc) if s.mpicc else None
        if s.mpicc == name or (real and w and os.path.realpath(w) == os.path.realpath(real)):
            return s
    from mpibench.stacks.kinds import REGISTRY as KINDS

    if name in KINDS and KINDS.get(name).debian_wrapper:
        s = stacks_mod._make_stack(name, KINDS.get(name).debian_wrapper, "fallback")
    elif real:
        s = stacks_mod._make_stack(os.path.basename(name), name, "path")
    else:
        raise UsageError(f"--stack {name!r}: not a known stack or compiler wrapper; expected "
                         f"one of {', '.join(s.name for s in usable) or 'none found'}")
    if not s.ok:
        raise UsageError(f"stack {name!r} is not usable: {s.problem}")
    return s


def build_profiler(stack: Any = None, *, force: bool = False) -> Path:
    """Path of libmpibench-profiler.so for this stack (built into the cache if needed)."""
    from mpibench.build import build_component

    return build_component(resolve_stack(stack), "profiler", force=force)


def build_test_programs(stack: Any = None) -> Path:
    """Build profiler/tests/*.c (known_calls, pingpong0) for a stack; returns their dir."""
    from mpibench.build import source_hash, source_root
    from mpibench.stacks import cache_dir

    s = resolve_stack(stack)
    src = source_root() / "profiler"
    out = cache_dir() / "build" / f"profiler-tests-{s.name}-{s.identity()}-{source_hash(src)}"
    if (out / "known_calls").exists() and (out / "pingpong0").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    res = run_command(s.command(["make", "-C", str(src), f"MPICC={s.mpicc}", f"BUILD={out}",
                                 "testprogs"]), env=s.env, timeout=300)
    if not res.ok:
        raise BuildError(f"building profiler test programs with {s.mpicc} failed",
                         log=(res.stdout + res.stderr)[-4000:])
    return out


def profile_env(stack_name_or_wrapper: Any, out_dir: str | os.PathLike) -> dict[str, str]:
    """Environment that profiles every MPI rank it reaches: builds the library if needed and
    empties out_dir of earlier profile files. For campaign variants with `profile = true`;
    pass it to the ranks only (inject_env adds Open MPI -x / Hydra -genv flags)."""
    lib = build_profiler(stack_name_or_wrapper)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    clean_out_dir(out)  # one directory per launch: never merge files of an earlier run
    return {"LD_PRELOAD": str(lib), "MPIBENCH_PROFILE_DIR": str(out)}


def inject_env(argv: Sequence[str], env: Mapping[str, str], kind: str) -> tuple[list[str], bool]:
    """Pass env to the ranks through the launcher's own flags when argv starts with a known
    launcher (so the launcher process itself is not preloaded). Returns (argv, injected)."""
    argv = list(argv)
    if not argv:
        return argv, False
    from mpibench.stacks.kinds import REGISTRY as KINDS

    exe = os.path.basename(argv[0])
    if kind == "unknown" or kind not in KINDS:
        return argv, False
    k = KINDS.get(kind)
    names = {*k.launcher_names, *k.prefix_launchers, *k.debian_launchers}
    if exe not in names or k.launcher_backend(exe) != k.launcher_kind:
        return argv, False
    return [argv[0], *k.env_flags(env), *argv[1:]], True


def clean_out_dir(out: Path) -> None:
    """Remove files an earlier profile left in out (only ours), so runs never mix."""
    if not out.is_dir():
        return
    for p in out.iterdir():
        if p.name == "profile.json" or p.name.startswith("rank-") or p.name.endswith(".tmp"):
            p.unlink()


@dataclass
class ProfileRun:
    stack: Any
    argv: list[str]           # what the user asked to run
    launched: list[str]       # what was run (with env flags injected)
    out_dir: Path
    library: Path
    result: CommandResult
    doc: dict[str, Any] | None
    error: str = ""
    env: dict[str, str] = field(default_factory=dict)
    timed_out: bool = False   # the ranks were stopped because the timeout was near

    @property
    def status(self) -> str:
        if self.result.timed_out or self.timed_out:
            return "timeout"
        return "done" if self.result.ok and self.doc and self.doc.get("complete") else "failed"


def check_command(argv: Sequence[str], stack: Any, timeout: float,
                  found: Sequence[Any] | None = None) -> None:
    """Bad input before anything is built, launched or stored: no command, a command that is
    not there, a timeout that is not a positive number, a launcher of another stack (its
    ranks would load two MPI libraries and crash)."""
    if not argv:
        raise UsageError("profile: no command given; expected e.g. "
                         "`mpibench profile -- mpirun -np 2 ./app`")
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout {timeout!r}: expected a positive number of seconds")
    if shutil.which(argv[0]) is None:
        raise UsageError(f"profile: command {argv[0]!r} not found or not executable")
    from mpibench import stacks as stacks_mod

    if found is None:
        found = stacks_mod.discover()
    usable = [s for s in found if s.ok and not s.alias_of]
    _, launcher_kind = _launcher_stack(argv[0], usable)
    kind = getattr(stack, "kind", None)
    if launcher_kind and kind and kind != "unknown" and launcher_kind != kind:
        raise UsageError(f"--stack {getattr(stack, 'name', stack)} ({kind}) does not match the "
                         f"launcher {argv[0]!r} ({launcher_kind}): the ranks would load two MPI "
                         "libraries; give the matching --stack or launcher")


def run_profiled(argv: Sequence[str], *, stack: Any = None, out_dir: str | os.PathLike,
                 timeout: float = 600, extra_env: Mapping[str, str] | None = None,
                 found: Sequence[Any] | None = None) -> ProfileRun:
    """Run a launcher command with every rank profiled; collect what was written."""
    if not argv:
        check_command(argv, None, timeout)
    if found is None:
        from mpibench import stacks as stacks_mod

        found = stacks_mod.discover()
    s = resolve_stack(stack, argv, found)
    check_command(argv, s, timeout, found)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    clean_out_dir(out)
    penv = profile_env(s, out)
    launched, injected = inject_env(argv, penv, s.kind)
    env = dict(ROOT_ENV)
    env.update(extra_env or {})
    env["MPIBENCH_PROFILE_DIR"] = penv["MPIBENCH_PROFILE_DIR"]
    if not injected:  # unknown launcher (srun, a script, a singleton): plain environment
        env["LD_PRELOAD"] = ":".join(x for x in (penv["LD_PRELOAD"],
                                                 os.environ.get("LD_PRELOAD")) if x)
    # Shortly before the timeout, SIGTERM the ranks themselves (found by the profile
    # directory in their environment), so each writes its partial profile. Launchers stop
    # their ranks in ways a profile may not survive (Hydra: SIGKILL; Open MPI: SIGTERM, then
    # SIGKILL once one rank has died); run_command's timeout then ends whatever is left.
    grace = min(5.0, 0.25 * timeout)
    fired = threading.Event()

    def stop_ranks() -> None:
        fired.set()
        lib = Path(penv["LD_PRELOAD"])
        pids = signal_ranks(out, lib, DUMP_SIGNAL)  # write now, keep running
        deadline = time.monotonic() + grace / 2
        while time.monotonic() < deadline and \
                len([p for p in out.glob("rank-*.json") if RANK_FILE.match(p.name)]) < len(pids):
            time.sleep(0.05)
        signal_ranks(out, lib, signal.SIGTERM)

    timer = threading.Timer(timeout - grace, stop_ranks)
    timer.daemon = True
    timer.start()
    try:
        res = run_command(launched, env=env, timeout=timeout,
                          stdout_path=out / "stdout.txt", stderr_path=out / "stderr.txt")
    finally:
        timer.cancel()
    doc, error = None, ""
    try:
        doc = collect_profile(out)
    except BenchmarkFailure as exc:
        error = str(exc)
    return ProfileRun(s, list(argv), launched, out, Path(penv["LD_PRELOAD"]), res, doc, error,
                      env, timed_out=fired.is_set())


# The library writes its counters and carries on when it gets this signal (mpib_runtime.c).
DUMP_SIGNAL = signal.SIGRTMIN + 7
# Set by the launchers in each rank's environment (not in the launcher's own).
_RANK_ENV = (b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK=", b"PMIX_RANK=", b"SLURM_PROCID=",
             b"MPI_LOCALRANKID=", b"MV2_COMM_WORLD_RANK=")


def signal_ranks(out_dir: Path, library: Path, sig: int = signal.SIGTERM) -> list[int]:
    """Send sig to this host's MPI ranks that run with this profile directory and library
    preloaded (the ranks of one profiled launch, which we started). Returns their PIDs."""
    want_dir = b"MPIBENCH_PROFILE_DIR=" + str(out_dir).encode()
    want_lib = str(library).encode()
    hit = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            env = (p / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want_dir in env and any(e.startswith(b"LD_PRELOAD=") and want_lib in e for e in env) \
                and any(e.startswith(_RANK_ENV) for e in env):
            try:
                os.kill(int(p.name), sig)
                hit.append(int(p.name))
            except ProcessLookupError:
                pass
    return hit
