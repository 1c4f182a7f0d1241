"""Writing files so that a crash, a full disk or SIGKILL never leaves a half-written one.

Every file mpibench writes (reports, Markdown, CSV/JSON, plots, job scripts, run-directory
records) goes through write_file: the text goes to a temporary file beside the target, is
flushed to disk, and is renamed over the target in one step. A reader sees the old file or
the new one, never a truncated mix; on failure the old file is untouched and the temporary
one removed. check_output builds the one-line error for an output path a command was given,
so that it can be checked before any work is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mpibench.errors import UsageError


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def cache_root() -> Path:
    """mpibench's cache directory ($MPIBENCH_CACHE, else $XDG_CACHE_HOME/mpibench, else
    ~/.cache/mpibench), not created here: the build cache (stacks.cache_dir) and the store's
    record of verified files (store/local.py) live under it."""
    return Path(os.environ.get("MPIBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mpibench"))


def check_output(path: str | Path, what: str) -> Path:
    """An output path given on the command line, checked before any work: its directory
    exists and is writable, and the path is not a directory. `what` names the flag."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise UsageError(f"{what} {str(path)!r}: expected a file name")
    try:
        max_name = os.pathconf(p.parent if str(p.parent) else ".", "PC_NAME_MAX")
    except OSError:
        max_name = 255
    if len(os.fsencode(p.name)) > max_name:
        # Path.exists()/is_dir() raise "File name too long" instead of answering
        raise UsageError(f"{what} {str(path)[:60]}...: file name longer than {max_name} bytes")
    if p.is_dir():
        raise UsageError(f"{what} {p}: is a directory; expected a file name")
    parent = p.parent
    if not parent.is_dir():
        problem = "does not exist" if not parent.exists() else "is not a directory"
        raise UsageError(f"{what} {p}: directory {parent} {problem}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {p}: directory {parent} is not writable")
    if p.exists() and not p.is_file():
        raise UsageError(f"{what} {p}: not a regular file")
    return p


def write_file(path: str | Path, data: str | bytes, *, mode: int | None = None,
               encoding: str = "utf-8") -> Path:
    """Write data to path atomically (temporary file + rename). mode: permission bits of the
    new file (default: what the umask gives a new file). Errors are one UsageError."""
    p = Path(path)
    blob = data.encode(encoding) if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:100]}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {p}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask() if mode is None else mode)
        os.replace(tmp, p)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UsageError(f"cannot write {p}: {exc.strerror or exc}") from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


@contextlib.contextmanager
def locked(lock_path: str | Path) -> Iterator[None]:
    """An exclusive advisory lock (flock) on lock_path, created if missing, held for the
    block: processes that share a file (the stacks registry, a build-cache entry) take turns
    at read-modify-write. The kernel drops it when the holder dies, SIGKILL included, so a
    crash never leaves it stuck. The lock file itself stays (removing it would race)."""
    p = Path(lock_path)
    try:
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666 & ~_umask())
    except OSError as exc:
        raise UsageError(f"cannot lock {p}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # closing drops the lock
