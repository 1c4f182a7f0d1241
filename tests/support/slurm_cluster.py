"""Session fixture: a real Slurm on localhost (munged, slurmctld, slurmd n1 and n2).

Registered for every test by tests/conftest.py (pytest_plugins): ask for it by name.

Tests that use it are skipped only when the Slurm/munge programs are not installed; when they
are installed and the cluster does not come up, the fixture fails with the daemon's log.
Teardown stops exactly the daemons it started, by PID.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from mpibench.slurm_local import LocalSlurm, SlurmStartError, missing_programs


@pytest.fixture(scope="session")
def slurm_cluster():
    missing = missing_programs()
    if missing:
        pytest.skip("Slurm is not installed (missing: " + ", ".join(missing) +
                    "); `make setup` installs slurm-wlm and munge")
    if os.geteuid() != 0:
        pytest.fail("the local Slurm test cluster needs root (slurmd runs jobs as their "
                    "owner and must be started as root)")
    # short path: Slurm and munge socket paths must stay under ~100 characters
    root = Path(tempfile.mkdtemp(prefix="mbslurm-", dir="/tmp"))
    cluster = LocalSlurm(root)
    try:
        cluster.start(timeout=60)
    except SlurmStartError as exc:
        pytest.fail(f"the local Slurm did not start: {exc}", pytrace=False)
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
