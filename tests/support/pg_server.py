"""Session fixture: a real, throw-away PostgreSQL server (Debian's postgresql package).

Registered for every test by tests/conftest.py (pytest_plugins): ask for it by name.

It runs initdb and pg_ctl into a temporary directory as an unprivileged user (the `postgres`
system user when the tests run as root), listening on 127.0.0.1 on a free port with a
password, its unix socket in that directory (mpibench.store.pg_local). Tests that use it are
skipped only when the PostgreSQL programs are not installed; when they are and the server does
not come up, the fixture fails with the server's log. Teardown stops the postmaster it
started, by PID, and removes the directory.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from mpibench.store.pg_local import LocalPostgres, PostgresStartError, missing_programs


@pytest.fixture(scope="session")
def pg_server():
    missing = missing_programs()
    if missing:
        pytest.skip("PostgreSQL is not installed (missing: " + ", ".join(missing) +
                    "); `make setup` installs Debian's postgresql package")
    root = Path(tempfile.mkdtemp(prefix="mbpg-", dir="/tmp"))
    server = LocalPostgres(root)
    try:
        server.start(timeout=60)
    except PostgresStartError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"the local PostgreSQL did not start: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
