"""The test clusters' directories (/tmp/mbslurm-*): who owns each, and the sweep that stops
the daemons a killed test session left behind.

A `make test` killed from outside (SIGKILL, a CI job cancelled) never reaches the fixtures'
teardown, and the localhost Slurm daemons run in sessions of their own, so munged,
slurmctld and two slurmd per cluster ran on (70 minutes, twice, before they were stopped by
hand). So every cluster directory records its owners (owner.json: each owner's PID and its
start time from /proc/PID/stat, so a reused PID is not taken for the owner), and starting a
cluster first sweeps (sweep_stale_clusters) the directories whose owners are all gone:

- their daemons are stopped by the PIDs of their pidfiles (and cluster.json), each only
  after /proc/PID/cmdline shows that daemon (munged, slurmctld, slurmd) started for that
  directory, checked once the process is pinned by a pidfd and signalled through it: never
  by name, never a process that merely reuses a PID;
- the directory is removed once no process's command line names it any more.

A directory whose owner is alive (another test session, a helper's run beside ours) is never
touched. Directories from before owner records are removed only when no process's command
line names them and nothing in them changed for LEGACY_IDLE_S (an older session may be
between creating its directory and starting the processes that name it).

Creating a directory and writing its owner record happen under the sweep's lock (SWEEP_LOCK),
so a sweep never sees a new directory without its record.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mpibench.files import write_file
from mpibench.process import start_ticks
from support.procs import wait_gone

BASE = Path("/tmp")               # short socket paths: Slurm and munge need < ~100 characters
PREFIX = "mbslurm-"
OWNER_FILE = "owner.json"
SWEEP_LOCK = "mbslurm.lock"       # in BASE; does not match PREFIX*
LEGACY_IDLE_S = 3600              # a session is ~20 minutes; older code wrote no owner record
STOP_GRACE_S = 15                 # SIGTERM, then SIGKILL (a failure bound; exit ends it sooner)
# pidfile (relative to a cluster root) -> the daemon its PID must be
PIDFILES = {"munge/munged.pid": "munged", "slurmctld.pid": "slurmctld"}


def _cmdline(pid: int | str) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _names(argv: list[str], root: Path) -> bool:
    """Whether a command line names root (the path, or a path inside it)."""
    r = str(root)
    return any(a == r or r + "/" in a for a in argv)


def _referring(root: Path) -> list[int]:
    """PIDs of the processes whose command line names root (other than this one)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid() and _names(_cmdline(entry), root):
            out.append(int(entry))
    return out


@contextlib.contextmanager
def sweep_lock(base: Path = BASE) -> Iterator[None]:
    with open(base / SWEEP_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read_owners(root: Path) -> list[dict] | None:
    try:
        data = json.loads((root / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    owners = data.get("owners") if isinstance(data, dict) else None
    if not isinstance(owners, list):
        return None
    return [o for o in owners if isinstance(o, dict)]


def _write_owner(root: Path, pid: int) -> None:
    start = start_ticks(pid)
    if start is None:
        return
    owners = _read_owners(root) or []
    if {"pid": pid, "start": start} not in owners:
        owners.append({"pid": pid, "start": start})
        write_file(root / OWNER_FILE, json.dumps({"owners": owners}))


def add_owner(root: Path, pid: int, base: Path = BASE) -> None:
    """Record another owner of root (a child that runs the cluster for the session)."""
    with sweep_lock(base):
        _write_owner(root, pid)


def new_cluster_dir(prefix: str = PREFIX, base: Path = BASE) -> Path:
    """Sweep, then a new cluster directory owned by this process (created and recorded under
    the sweep's lock)."""
    sweep_stale_clusters(base)
    with sweep_lock(base):
        root = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        _write_owner(root, os.getpid())
    return root


def _owner_alive(o: dict) -> bool:
    pid, start = o.get("pid"), o.get("start")
    return (isinstance(pid, int) and isinstance(start, int) and pid > 0
            and start_ticks(pid) == start)


def _cluster_roots(d: Path) -> list[Path]:
    """The LocalSlurm roots in a session directory: itself, or a subdirectory (the
    time-limit runs keep theirs in c/)."""
    cands = [d] + sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
    return [c for c in cands if (c / "etc" / "slurm.conf").exists()
            or (c / "cluster.json").exists()]


def _recorded_pids(root: Path) -> list[tuple[int, str]]:
    """(pid, daemon) from the pidfiles and cluster.json of a cluster root."""
    found: list[tuple[int, str]] = []
    files = [(root / f, name) for f, name in PIDFILES.items()]
    files += [(p, "slurmd") for p in sorted(root.glob("slurmd-*.pid"))]
    for path, name in files:
        with contextlib.suppress(OSError, ValueError):
            found.append((int(path.read_text().split()[0]), name))
    with contextlib.suppress(OSError, ValueError, AttributeError, TypeError):
        pids = json.loads((root / "cluster.json").read_text()).get("pids") or {}
        for key, pid in pids.items():
            found.append((int(pid), "slurmd" if key.startswith("slurmd") else key))
    return list(dict.fromkeys(found))


def daemon_of(pid: int, daemon: str, root: Path) -> bool:
    """Whether pid is `daemon` (munged, slurmctld, slurmd) started for cluster root."""
    argv = _cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]) == daemon and _names(argv[1:], root)


def _signal(pid: int, sig: int, daemon: str, root: Path) -> None:
    """Signal pid if it is that daemon of root: the process is pinned first (a pidfd), then
    its command line checked, then the pidfd signalled, so a PID reused between the check
    and the signal is never hit (a pinned process that exited is not signalled at all)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:              # gone (ESRCH), or not a PID at all
        return
    try:
        if daemon_of(pid, daemon, root):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(fd, sig)
    finally:
        os.close(fd)


def stop_daemons(root: Path) -> list[int]:
    """Stop the daemons recorded under cluster root that /proc shows are its own: jobs
    cancelled first while slurmctld answers (slurmd's jobs outlive it), then slurmd,
    slurmctld, munged (SIGTERM; SIGKILL after STOP_GRACE_S). Returns the PIDs stopped."""
    from mpibench.slurm_local import LocalSlurm

    mine = [(p, d) for p, d in _recorded_pids(root) if daemon_of(p, d, root)]
    ctld = [p for p, d in mine if d == "slurmctld"]
    if ctld:
        with contextlib.suppress(Exception):
            LocalSlurm(root, pids={"slurmctld": ctld[0]}).drain_jobs(timeout=20)
    rank = {"slurmd": 0, "slurmctld": 1, "munged": 2}
    mine.sort(key=lambda pd: rank.get(pd[1], 3))
    for pid, daemon in mine:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            _signal(pid, sig, daemon, root)
            if wait_gone(pid, STOP_GRACE_S):
                break
    return [p for p, _ in mine]


def sweep_stale_clusters(base: Path = BASE) -> dict[str, list]:
    """Stop and remove the cluster directories under base whose owners are gone (see the
    module's docstring). Returns {"stopped": PIDs, "removed": directories, "kept": the
    stale directories a process still names}."""
    out: dict[str, list] = {"stopped": [], "removed": [], "kept": []}
    with sweep_lock(base):
        for d in sorted(base.glob(PREFIX + "*")):
            if not d.is_dir() or d.is_symlink():
                continue
            owners = _read_owners(d)
            if owners is not None and any(_owner_alive(o) for o in owners):
                continue
            if owners is None and (_referring(d) or not _idle(d)):
                continue
            for root in _cluster_roots(d):
                out["stopped"] += stop_daemons(root)
            if _referring(d):
                out["kept"].append(d)      # a job's process still runs there: next sweep
                continue
            shutil.rmtree(d, ignore_errors=True)
            out["removed"].append(d)
    return out


def _idle(d: Path) -> bool:
    """Nothing in d or its direct entries changed for LEGACY_IDLE_S."""
    try:
        newest = max([d.stat().st_mtime] + [p.stat().st_mtime for p in d.iterdir()])
    except OSError:
        return False
    return time.time() - newest > LEGACY_IDLE_S
