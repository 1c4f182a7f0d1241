"""Waiting for a process to be gone (exited, or a zombie no one has reaped yet), by its PID.

A bounded poll: the bound only keeps a broken test from hanging; the assertion is on the
event (the process went), never on how long it took."""

from __future__ import annotations

import os
import time

# the longest a test waits for a process it expects gone (a guard, not a measurement)
GONE_BOUND_S = 60.0


def gone_now(pid: int) -> bool:
    """True once pid no longer runs: no such process, or a zombie (its /proc entry can
    vanish between the signal and the read: that is gone too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, under another user
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(") ", 1)[1].startswith(("Z", "X"))


def wait_gone(pid: int, bound_s: float = GONE_BOUND_S) -> bool:
    """Wait until pid is gone (True), or give up after bound_s (False)."""
    end = time.monotonic() + bound_s
    while not gone_now(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)
    return True
