"""A testbed for the life of one process (a pytest session, a bench, the demo), that the next
such process cleans up if this one is SIGKILLed.

Each one lives in its own directory under a shared base (default: TMPDIR/mpibench-testbeds)
and holds an exclusive flock on DIR/in-use.lock while it runs. The kernel drops that lock
when the process dies however it dies, so a directory whose lock can be taken is a leftover:
`reap_stale` stops what it started (by the PIDs and cgroups recorded in it) and removes it.
Testbeds started by hand with `python -m mpibench.testbed start` do not belong under this
base: they hold no such lock and would be reaped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mpibench.testbed.bed import STATE_FILE, Testbed, clean_orphans
from mpibench.testbed.spec import FabricSpec
from mpibench.testbed.system import TestbedError

IN_USE = "in-use.lock"


def default_base() -> Path:
    return Path(tempfile.gettempdir()) / "mpibench-testbeds"


def reap_stale(base: Path | None = None) -> list[Path]:
    """Stop and remove every testbed under base whose owner process is gone."""
    base = Path(base or default_base())
    reaped = []
    if not base.is_dir():
        return reaped
    for d in sorted(base.iterdir()):
        lock = d / IN_USE
        # no state yet: being set up right now (the lock is taken before the state is
        # written), or a start that created nothing
        if not d.is_dir() or not lock.exists() or not (d / STATE_FILE).exists():
            continue
        with open(lock, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its owner is alive
            try:
                Testbed.load(d).stop()
            except TestbedError:
                pass
            shutil.rmtree(d, ignore_errors=True)
            reaped.append(d)
    return reaped


@contextlib.contextmanager
def session_testbed(nodes: int = 2, fabrics: list[FabricSpec] | None = None, *,
                    slurm: bool = False, base: Path | None = None,
                    timeout: float = 90) -> Iterator[Testbed]:
    """Start a testbed (after reaping leftovers under base), yield it, stop and remove it."""
    base = Path(base or default_base())
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    reap_stale(base)
    clean_orphans()
    # short: Slurm and munge socket paths must stay under ~100 characters
    root = Path(tempfile.mkdtemp(prefix="tb-", dir=base))
    os.chmod(root, 0o755)
    with open(root / IN_USE, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        bed = None
        try:
            bed = Testbed.start(root, nodes=nodes, fabrics=fabrics, slurm=slurm,
                                timeout=timeout)
            yield bed
        finally:
            if bed is not None:
                bed.stop()
            shutil.rmtree(root, ignore_errors=True)
