"""Build the C parts (core/, profiler/) with each stack's own compiler wrapper, cached.

Cache key = component + stack identity (wrapper path + library version string) + a hash of
every source file, so a new library or an edited source triggers a rebuild and nothing else
does. Builds go to a temporary directory and are renamed into place, so an interrupted build
never leaves a half-written binary that looks valid.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import mpibench
from mpibench.errors import BuildError, UsageError
from mpibench.files import write_file
from mpibench.process import run_command
from mpibench.stacks import Stack, cache_dir

COMPONENTS = {
    "core": "mpibench-core",
    "profiler": "libmpibench-profiler.so",
}
_SOURCE_SUFFIXES = (".c", ".h", ".py", ".in", ".txt")


def source_root() -> Path:
    env = os.environ.get("MPIBENCH_SOURCE_ROOT")
    if env:
        return Path(env)
    return Path(mpibench.__file__).resolve().parents[2]


def source_hash(src: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(src.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        if p.name != "Makefile" and not p.name.endswith(_SOURCE_SUFFIXES):
            continue
        h.update(str(p.relative_to(src)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:12]


def artifact_path(stack: Stack, component: str = "core") -> Path:
    """Where the built artifact for this stack is (or will be) in the build cache; builds
    nothing (a dry run shows it in the job scripts)."""
    if component not in COMPONENTS:
        raise UsageError(f"unknown component {component!r}; expected one of {sorted(COMPONENTS)}")
    src = source_root() / component
    if not (src / "Makefile").exists():
        raise BuildError(f"cannot build {component}: no Makefile in {src}")
    key = f"{component}-{stack.name}-{stack.identity()}-{source_hash(src)}"
    return cache_dir() / "build" / key / COMPONENTS[component]


def build_component(stack: Stack, component: str = "core", *, force: bool = False,
                    timeout: float = 600) -> Path:
    """Return the path of the built artifact for this stack, building it if needed."""
    artifact = artifact_path(stack, component)
    final = artifact.parent
    src = source_root() / component
    if artifact.exists() and not force:
        return artifact
    with staged_build(final, lambda d: (d / COMPONENTS[component]).exists() and not force
                      ) as tmp:
        if tmp is None:             # another process built it while this one waited
            return artifact
        # the stack's modules and environment (I_MPI_ROOT...) apply to its wrapper too
        res = run_command(stack.command(["make", "-C", str(src), f"MPICC={stack.mpicc}",
                                         f"BUILD={tmp}"]), env=stack.env, timeout=timeout,
                          die_with_parent=True)
        write_file(tmp / "build.log", res.stdout + res.stderr)
        if not res.ok or not (tmp / COMPONENTS[component]).exists():
            why = "timed out" if res.timed_out else f"exit {res.returncode}"
            raise BuildError(
                f"building {component} for stack {stack.name!r} with {stack.mpicc} failed "
                f"({why}); compiler output follows", log=_compiler_lines(res.stdout + res.stderr)
            )
    return artifact


@contextmanager
def staged_build(final: Path, is_complete: Callable[[Path], bool]) -> Iterator[Path | None]:
    """Build a cache entry: a lock, then a fresh staging directory beside `final`, renamed
    over it when the block ends without an error and removed either way (docs/design.md,
    "Shared files and caches").

    The protocol: every builder of one entry holds the entry's lock (`.NAME.lock`, flock)
    from its check to its rename, so builders take turns; the second finds the entry
    complete (is_complete) and gets None instead of a directory: use the entry. A complete
    entry is therefore never removed by a racing builder (only a forced rebuild replaces
    it, by renaming the old one aside first). Under the lock, staging and old directories
    of this entry are leftovers of a killed builder: their processes are stopped and the
    directories removed before anything else."""
    from mpibench.files import locked

    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"build cache {final.parent}: cannot create it ({exc.strerror})") \
            from None
    with locked(final.parent / f".{final.name}.lock"):
        _sweep(final.parent, final.name)
        if final.is_dir() and is_complete(final):
            yield None
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.stage-", dir=final.parent))
        try:
            yield tmp
            if final.exists():       # incomplete, or a forced rebuild: set it aside first
                old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
                os.replace(final, old / "entry")
                os.replace(tmp, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


def _sweep(cache: Path, own: str) -> None:
    """Remove what killed builders left in the cache (staging and set-aside directories,
    with any process still working in them): this entry's under its lock, which the caller
    holds, and every other entry's whose lock is free (nobody is building it)."""
    import fcntl

    from mpibench.process import kill_orphans

    by_entry: dict[str, list[Path]] = {}
    for p in cache.glob(".*"):
        for tag in (".stage-", ".old-"):
            if tag in p.name and p.is_dir():
                by_entry.setdefault(p.name[1:].rsplit(tag, 1)[0], []).append(p)
    for entry, dirs in by_entry.items():
        fd = None
        if entry != own:
            try:
                fd = os.open(cache / f".{entry}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                             0o644)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:                # being built right now (or unreadable): leave it
                if fd is not None:
                    os.close(fd)
                continue
        try:
            for d in dirs:
                kill_orphans(d)            # a make a SIGKILLed builder left behind
                shutil.rmtree(d, ignore_errors=True)
        finally:
            if fd is not None:
                os.close(fd)


def _compiler_lines(text: str, limit: int = 40) -> str:
    """The errors a user needs: error/warning lines first, capped."""
    lines = text.rstrip().splitlines()
    important = [ln for ln in lines if "error" in ln or "warning" in ln]
    chosen = important or lines
    if len(chosen) > limit:
        chosen = chosen[:limit] + [f"... ({len(chosen) - limit} more lines)"]
    return "\n".join(chosen)
