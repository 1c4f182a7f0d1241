"""Session fixture: one testbed (mpibench.testbed) for the whole test session.

Registered for every test by tests/conftest.py (pytest_plugins): ask for it by name.

Two nodes (tn1, tn2, one CPU each on a 2-CPU machine) and two fabrics, `fast` (4gbit) and
`slow` (1gbit), Slurm across the nodes where Slurm is installed (`bed.slurm_conf`, else None).
Skipped, with the reason, where this machine cannot run a testbed (not root, no namespaces,
no tc, no cgroup v1 cpuset, no bridges). A testbed left behind by a SIGKILLed session is
cleaned up by the next session (mpibench.testbed.session.reap_stale).
"""

from __future__ import annotations

import pytest

from mpibench.testbed import FabricSpec, TestbedUnavailable, preflight

FABRICS = [FabricSpec("fast", 4 * 10**9), FabricSpec("slow", 10**9)]


@pytest.fixture(scope="session")
def testbed():
    from mpibench.testbed.session import session_testbed

    try:
        preflight()
    except TestbedUnavailable as exc:
        pytest.skip(f"no testbed on this machine: {exc}")
    with session_testbed(nodes=2, fabrics=FABRICS, slurm=None) as bed:
        yield bed
