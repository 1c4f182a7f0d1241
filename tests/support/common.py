"""Constants and small helpers shared by test modules: the repository root, the bound on every
MPI launch, a tmpfs mount, whether an unprivileged user can run this checkout's Python."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
EXAMPLES = REPO / "examples"

# Every MPI launch in the tests is bounded by this (seconds) unless a test sets its own.
MPI_TIMEOUT = 180


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    """A tmpfs of `size` mounted at `path` (a full disk, a read-only mount); skips the test
    where mounting is not allowed (not root)."""
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        yield path
    finally:
        # a store the test left open keeps the mount busy; detach it lazily then rather than
        # leave a mount behind on the machine for every later pytest run to trip over
        if subprocess.run(["umount", str(path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _blocked_for_others(path: Path) -> str | None:
    """The first place on the way to `path` that a user who is neither its owner nor in its
    group cannot pass (a directory without o+x, the end without o+r), with its mode."""
    path = Path(os.path.abspath(path))
    for p in [*reversed(path.parents), path]:
        try:
            mode = p.stat().st_mode
        except OSError:
            return None   # not there: nothing to explain
        need = stat.S_IXOTH if p != path else (
            stat.S_IROTH | stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH)
        if mode & need != need:
            return f"{p} (mode {stat.S_IMODE(mode):04o})"
    return None


def python_unreachable_for_nobody() -> str | None:
    """Why this test run's interpreter cannot import mpibench as uid 65534 (nobody, the user
    `setpriv --reuid=65534` tests run as), or None. A checkout under a 0700 directory (say
    `mktemp -d`) hides the venv's pyvenv.cfg and the package from nobody: its python then
    starts as the bare base interpreter and fails with ModuleNotFoundError."""
    import mpibench

    for path in (Path(sys.prefix) / "pyvenv.cfg", Path(mpibench.__file__).parent,
                 Path(sys.executable)):
        if path.name == "pyvenv.cfg" and sys.prefix == sys.base_prefix:
            continue   # not a venv
        why = _blocked_for_others(path)
        if why:
            return (f"uid 65534 (nobody) cannot reach {why}, on the way to {path}: this "
                    "checkout or its venv sits under a directory others may not enter")
    return None


# two stacks, one core group, three repeats: the campaign tests' plain campaign (named t)
TWO_STACK_CAMPAIGN = """
[campaign]
name = "t"
repeats = 3
[variants.a]
stack = "openmpi"
transport = "shm"
[variants.b]
stack = "mpich"
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0,64"
"""

PAIR_CAMPAIGN = """
[campaign]
name = "{name}"
{campaign}

[variants.a]
stack = "openmpi"
transport = "shm"

[variants.b]
stack = "openmpi"
transport = "shm"

[benchmarks.latency]
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""


def pair_campaign(tmp_path: Path, name: str, campaign: str, sizes: str = "0:2"):
    """The loaded spec of a campaign of two identical Open MPI shm variants, a and b,
    running PingPong at `sizes`; campaign: the [campaign] table's lines after its name
    (e.g. 'repeats = "auto"'). Only loaded, never run."""
    from mpibench.campaign.spec import load

    p = tmp_path / "c.toml"
    p.write_text(PAIR_CAMPAIGN.format(name=name, campaign=campaign, sizes=sizes))
    return load(p)
