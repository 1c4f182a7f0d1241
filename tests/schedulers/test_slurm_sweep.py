"""The sweep of killed test sessions' localhost Slurm clusters (tests/support/slurm_sweep.py,
run by tests/support/slurm_cluster.py whenever a cluster is started): a session killed from
outside leaves munged, slurmctld and slurmd running in their own sessions; the next start
stops them (by their pidfiles' PIDs, each checked by /proc/PID/cmdline) and removes their
directory, and never touches a directory whose owner is alive.

The first test runs real daemons; the others build directories under tmp_path (the sweep's
base) with real processes standing in for owners and for the processes a PID was reused by.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpibench.process import start_ticks
from mpibench.slurm_local import missing_programs
from support.slurm_sweep import (
    LEGACY_IDLE_S,
    OWNER_FILE,
    daemon_of,
    new_cluster_dir,
    stop_daemons,
    sweep_stale_clusters,
)

TESTS = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180   # failure bounds: each wait ends on its event
# a session's stand-in: owns a new cluster directory (after the sweep, as every start does),
# starts a LocalSlurm there, prints the directory, and holds it until stdin closes
HOLD = """
import shutil, sys
sys.path.insert(0, sys.argv[1])
from support.slurm_sweep import new_cluster_dir
from mpibench.slurm_local import LocalSlurm
root = new_cluster_dir()
cluster = LocalSlurm(root)
cluster.start(timeout=60)
print(root, flush=True)
sys.stdin.read()
cluster.stop()
shutil.rmtree(root, ignore_errors=True)
"""
# a process that is not a Slurm daemon, holding its arguments in its command line
SLEEPER = "import sys; sys.stdin.read()"


def _hold() -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(TESTS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)
    ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line:
        proc.kill()
        proc.wait(timeout=30)
        pytest.fail("the holder's cluster did not start (or print its directory)")
    return proc, Path(line)


def _daemons(root: Path) -> dict[str, int]:
    return {k: int(v) for k, v in json.loads((root / "cluster.json").read_text())["pids"].items()}


def _alive(pid: int) -> bool:
    return start_ticks(pid) is not None


@pytest.mark.system
def test_a_killed_sessions_cluster_is_swept_at_the_next_start_a_live_ones_is_not():
    # one real cluster, seen twice by the sweep every start makes first (new_cluster_dir):
    # while its owner lives, the sweep leaves it alone, daemons and all; once its owner is
    # killed without its teardown, the next start's sweep stops its daemons and removes
    # its directory (one cluster, not a second session's: a start costs seconds under load)
    if missing_programs() or os.geteuid() != 0:
        pytest.skip("needs the Slurm/munge programs and root")
    holder, root = _hold()
    try:
        pids = _daemons(root)
        assert sorted(pids) == ["munged", "slurmctld", "slurmd-n1", "slurmd-n2"]
        for name, pid in pids.items():   # the check the sweep makes before each signal
            assert daemon_of(pid, name.split("-")[0], root), (name, pid)
            assert not daemon_of(pid, name.split("-")[0], Path(str(root) + "x"))
        # a directory whose owner is alive (a parallel session) is left alone by a start
        shutil.rmtree(new_cluster_dir())
        assert root.is_dir() and all(_alive(p) for p in pids.values())
        holder.send_signal(signal.SIGKILL)   # the session dies without its teardown
        holder.wait(timeout=30)
        assert all(_alive(p) for p in pids.values())   # what went wrong before the sweep
        # the next session's start sweeps: the dead owner's daemons and directory go
        shutil.rmtree(new_cluster_dir())
        assert not any(_alive(p) for p in pids.values()), pids
        assert not root.exists()
    finally:
        if holder.poll() is None:           # the test failed before the kill
            holder.stdin.close()            # it stops its cluster and removes its directory
            holder.wait(timeout=120)
        if root.exists():                   # the test failed: leave nothing behind
            stop_daemons(root)
            shutil.rmtree(root, ignore_errors=True)


def _sleeper(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLEEPER, *args], stdin=subprocess.PIPE)


def _end(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=30)


def _owned(base: Path, name: str, owners: list[dict]) -> Path:
    d = base / f"mbslurm-{name}"
    (d / "etc").mkdir(parents=True)
    (d / "etc" / "slurm.conf").write_text("# a test cluster\n")
    (d / OWNER_FILE).write_text(json.dumps({"owners": owners}))
    return d


def test_the_sweep_trusts_an_owner_by_pid_and_start_time_and_a_daemon_by_its_cmdline(tmp_path):
    owner = _sleeper()
    decoy = _sleeper()
    try:
        me = {"pid": os.getpid(), "start": start_ticks(os.getpid())}
        alive = _owned(tmp_path, "alive", [{"pid": owner.pid, "start": start_ticks(owner.pid)}])
        both = _owned(tmp_path, "both", [{"pid": 999999999, "start": 1}, me])
        # a recorded owner whose PID now belongs to another process (another start time)
        reused = _owned(tmp_path, "reused", [{**me, "start": me["start"] - 1}])
        # its pidfile names a live process that is not its slurmctld: never signalled
        (reused / "slurmctld.pid").write_text(f"{decoy.pid}\n")
        (reused / "cluster.json").write_text(json.dumps({"pids": {"slurmd-n1": decoy.pid}}))
        out = sweep_stale_clusters(tmp_path)
        assert out == {"stopped": [], "removed": [reused], "kept": []}
        assert alive.is_dir() and both.is_dir() and not reused.exists()
        assert decoy.poll() is None
        # the owner ends: its directory goes at the next sweep
        _end(owner)
        assert sweep_stale_clusters(tmp_path)["removed"] == [alive]
    finally:
        for p in (owner, decoy):
            if p.poll() is None:
                _end(p)


def test_directories_from_before_owner_records_go_only_when_idle_and_unnamed(tmp_path):
    old = time.time() - LEGACY_IDLE_S - 60
    dirs = {}
    for name in ("named", "fresh", "idle"):
        d = dirs[name] = tmp_path / f"mbslurm-{name}"
        (d / "c").mkdir(parents=True)
        if name != "fresh":
            for p in (d / "c", d):
                os.utime(p, (old, old))
    holder = _sleeper(str(dirs["named"] / "c" / "etc" / "slurm.conf"))
    try:
        out = sweep_stale_clusters(tmp_path)
        assert out["removed"] == [dirs["idle"]]
        assert dirs["named"].is_dir() and dirs["fresh"].is_dir()
    finally:
        _end(holder)
    assert sweep_stale_clusters(tmp_path)["removed"] == [dirs["named"]]
