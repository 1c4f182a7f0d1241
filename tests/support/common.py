"""Constants and small helpers shared by test modules: the repository root, the bound on every
MPI launch, a tmpfs mount."""

from __future__ import annotations

import contextlib
import subprocess
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
