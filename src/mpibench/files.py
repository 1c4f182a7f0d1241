"""Writing files so that a crash, a full disk or SIGKILL never leaves a half-written one.

Every file mpibench writes (reports, Markdown, CSV/JSON, plots, job scripts, run-directory
records) goes through write_file: the text goes to a temporary file beside the target, is
flushed to disk, and is renamed over the target in one step. A reader sees the old file or
the new one, never a truncated mix; on failure the old file is untouched and the temporary
one removed. check_output builds the one-line error for an output path a command was given,
so that it can be checked before any work is done.

durable_together defers the flush for the files one launch writes into its run directory
(the cell's records, its job script, timing, exit status, machine-state readings; and the
launched program's own output, stdout.txt, stderr.txt, core.jsonl, added by the caller): they are
renamed into place unflushed and flushed together, by one parallel pass of fsyncs (the
files and their directories), before the launch is committed to the store. A process crash,
SIGKILL or a full disk still leaves each file old or new (the kernel holds what was
written; a failed write is never renamed); only a crash of the machine before that pass can
leave one of these files empty, in the run directory of a launch the store has not
committed, which resume discards and runs again (docs/campaigns.md, "States, crash
safety, resume"). The store's commit comes after the pass, so no committed launch points at
a file that was not flushed. One fsync after another cost ~0.4 ms each on an idle machine
and ~4 ms under others' writes (six a launch); issued together, the filesystem's journal
commits them at once (bench/bench_campaign_overhead.py, `files`).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import os
import tempfile
import threading
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
    new file (default: what the umask gives a new file). Errors are one UsageError. Flushed
    to disk before the rename, or inside durable_together by its next sync."""
    p = Path(path)
    blob = data.encode(encoding) if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:100]}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {p}: {exc.strerror}") from None
    deferred = _DEFERRED.get()
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            if deferred is None:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask() if mode is None else mode)
        os.replace(tmp, p)
        if deferred is not None:
            deferred.written.append(p)
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


class Unsynced:
    """The files write_file renamed into place inside durable_together, not yet flushed."""

    def __init__(self) -> None:
        self.written: list[Path] = []

    def add(self, *paths: Path | None) -> None:
        """Files written some other way (a launched process's output: stdout.txt,
        stderr.txt, core.jsonl) to flush in the next pass with the rest; None is skipped,
        a missing file needs nothing (_fsync)."""
        self.written += [Path(x) for x in paths if x is not None]

    def sync(self) -> None:
        """Flush every file written since the last sync, and the directories holding them and
        those directories' own entries (a run directory in runs/), with all fsyncs issued at
        once; return when all are done. Call it before the store records the files' launch
        as committed, and before moving a directory they are in. A file removed since it was
        written needs nothing."""
        paths, self.written = self.written, []
        files = list(dict.fromkeys(paths))
        dirs = {d for p in paths for d in (p.parent, p.parent.parent)}
        errors: list[tuple[int, OSError]] = []
        threads = [threading.Thread(target=_fsync, args=(i, x, errors, i >= len(files)),
                                    daemon=True)
                   for i, x in enumerate((*files, *sorted(dirs)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:       # the first in order (files before directories), not in time
            exc = min(errors, key=lambda e: e[0])[1]
            raise UsageError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None


# what fsync on a directory says on a filesystem that cannot flush one (vboxsf, some SMB or
# drvfs mounts): nothing about the files' data, so it is passed over there, as SQLite does
# (review s40 R7); a file's fsync failing, or a directory's for another reason, is an error
_NO_DIR_FSYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF})


def _fsync(index: int, path: Path, errors: list[tuple[int, OSError]],
           directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as exc:
        errors.append((index, exc))
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if not (directory and exc.errno in _NO_DIR_FSYNC):
            exc.filename = exc.filename or str(path)
            errors.append((index, exc))
    finally:
        os.close(fd)


_DEFERRED: contextvars.ContextVar[Unsynced | None] = contextvars.ContextVar(
    "mpibench_files_unsynced", default=None)


@contextlib.contextmanager
def durable_together() -> Iterator[Unsynced]:
    """Inside the block, write_file (in this thread) renames files into place without
    flushing them; the block's Unsynced.sync() flushes them together, and leaving the block
    flushes what is left (also on an error or Ctrl-C: then its own failure is not raised over
    the first). See the module's docstring for what this keeps."""
    unsynced = Unsynced()
    token = _DEFERRED.set(unsynced)
    failed = True
    try:
        yield unsynced
        failed = False
    finally:
        _DEFERRED.reset(token)
        try:
            unsynced.sync()
        except UsageError:
            if not failed:
                raise


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
