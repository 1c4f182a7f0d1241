"""Session fixtures: a real Slurm on localhost (munged, slurmctld, slurmd n1 and n2), and the
time-limit campaigns, run on a second such cluster in the background from the start of the
session.

Registered for every test by tests/conftest.py (pytest_plugins): ask for them by name.

Tests that use them are skipped only when the Slurm/munge programs are not installed; when
they are installed and a cluster does not come up, the fixture fails with the daemon's log.
Teardown stops exactly the daemons it started, by PID. A session killed before its teardown
leaves them running: starting a cluster first sweeps such leftovers (support/slurm_sweep.py:
each directory records its owners; those whose owners are gone have their daemons stopped,
checked by /proc/PID/cmdline, and are removed).

Why a second cluster for the time limit: Slurm limits are whole minutes and slurmctld enforces
them on its own schedule (60-90 s for a 1-minute limit), and a job held to its limit keeps a
core of a node for all that time, so on the shared cluster the one-node two-rank jobs of the
other campaigns queued behind it (1.5-2.5 minutes of waiting per `make test`). On a cluster of
its own, started when pytest has collected a test that asks for `slurm_limit_runs`, the wait
overlaps the tests before it and holds nothing the others need.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mpibench.slurm_local import LocalSlurm, SlurmStartError, missing_programs
from support.slurm_sweep import add_owner, new_cluster_dir, stop_daemons

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TESTS = Path(__file__).resolve().parents[1]


def _unavailable() -> str | None:
    """Why this machine cannot run the localhost Slurm (skip), or None."""
    missing = missing_programs()
    if missing:
        return ("Slurm is not installed (missing: " + ", ".join(missing) +
                "); `make setup` installs slurm-wlm and munge")
    return None


def _require_slurm_as_root() -> None:
    """Skip where Slurm is not installed; fail where it is but we are not root."""
    why = _unavailable()
    if why:
        pytest.skip(why)
    if os.geteuid() != 0:
        pytest.fail("the local Slurm test cluster needs root (slurmd runs jobs as their "
                    "owner and must be started as root)")


@pytest.fixture(scope="session")
def slurm_cluster():
    _require_slurm_as_root()
    # short path (/tmp/mbslurm-*): Slurm and munge socket paths must stay under ~100
    # characters; owned by this process, after sweeping killed sessions' clusters
    root = new_cluster_dir()
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


# -- the time-limit campaigns, in the background on a cluster of their own ---------------------
# the Slurm example, and the same campaign through the PBS commands and with the other stack
PBS_TIMEOUT_TOML = ((EXAMPLES / "slurm-timeout.toml").read_text()
                    .replace('name = "slurm-timeout"', 'name = "pbs-timeout"')
                    .replace('stack = "openmpi"', 'stack = "mpich"')
                    .replace('name = "slurm"', 'name = "pbs"')
                    .replace('partition = "debug"', 'queue = "debug"'))
LIMIT_CAMPAIGNS = {"slurm-timeout": (EXAMPLES / "slurm-timeout.toml").read_text(),
                   "pbs-timeout": PBS_TIMEOUT_TOML}
LIMIT_RUN_TIMEOUT = 300   # bound on each `campaign run` (seconds); the event ends it sooner
_limit: dict = {}         # the background run of this session: proc, root


def run_limit_campaigns(root: str) -> int:
    """In a child of the session (`python -c`): start a LocalSlurm under root, run each
    time-limit campaign to its end (concurrently), write result.json beside each, stop the
    cluster. SIGTERM (the session ending first) stops the cluster and its jobs too."""
    from concurrent.futures import ThreadPoolExecutor

    from mpibench.files import write_file
    from mpibench.process import run_command

    base = Path(root)
    add_owner(base, os.getpid())   # the session's record may not have it yet
    cluster = LocalSlurm(base / "c")

    def stop(_sig, _frame):
        raise SystemExit(1)

    signal.signal(signal.SIGTERM, stop)
    try:
        try:
            cluster.start(timeout=60)
        except SlurmStartError as exc:
            write_file(base / "error.txt", f"the local Slurm did not start: {exc}")
            return 1

        def run(name: str) -> None:
            camp = base / name / f"{name}.toml"
            res = run_command([sys.executable, "-m", "mpibench", "campaign", "run",
                               "--no-progress", str(camp)], env=cluster.env(),
                              timeout=LIMIT_RUN_TIMEOUT)
            write_file(base / name / "result.json", json.dumps(
                {"returncode": res.returncode, "stdout": res.stdout[-4000:],
                 "stderr": res.stderr[-4000:], "timed_out": res.timed_out}))

        with ThreadPoolExecutor(len(LIMIT_CAMPAIGNS)) as pool:
            list(pool.map(run, LIMIT_CAMPAIGNS))
        return 0
    finally:
        cluster.stop()


def _start_limit_runs() -> None:
    """Start the background run once per session (no-op when started or impossible)."""
    if _limit or _unavailable() or os.geteuid() != 0:
        return
    root = new_cluster_dir("mbslurm-limit-")  # short socket paths; swept when orphaned
    for name, text in LIMIT_CAMPAIGNS.items():
        (root / name).mkdir()
        (root / name / f"{name}.toml").write_text(text)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from support.slurm_cluster import run_limit_campaigns; "
            "sys.exit(run_limit_campaigns(sys.argv[2]))")
    log = open(root / "runner.log", "wb")
    proc = subprocess.Popen([sys.executable, "-c", code, str(TESTS), str(root)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    add_owner(root, proc.pid)   # it runs the cluster: the directory lives while it does
    _limit.update(proc=proc, root=root)


def _stop_limit_runs() -> None:
    proc, root = _limit.get("proc"), _limit.get("root")
    if proc is None:
        return
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)   # it stops its cluster (cancelling the jobs) and exits
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)   # its own process group, by its PID
            proc.wait(timeout=30)
    # a child killed before its own teardown left its daemons (own sessions): by their
    # pidfiles, each checked by /proc/PID/cmdline
    stop_daemons(root / "c")
    shutil.rmtree(root, ignore_errors=True)
    _limit.clear()


def pytest_collection_finish(session):
    # Started here, before any test runs (so no unit test's tier guard is active in this
    # process): one child that does everything else, so the minute-plus wait for Slurm's
    # time limit runs beside the tests collected before the ones that read it.
    if session.config.option.collectonly:
        return
    if any("slurm_limit_runs" in getattr(item, "fixturenames", ()) for item in session.items):
        _start_limit_runs()


def pytest_sessionfinish(session):
    _stop_limit_runs()


@pytest.fixture(scope="session")
def slurm_limit_runs():
    """{name: (result, store path)} for each time-limit campaign (slurm-timeout from
    examples/, pbs-timeout: the same through the PBS commands with MPICH), each run to its
    end on a localhost Slurm of its own; `result` has returncode, stdout, stderr (tails)."""
    _require_slurm_as_root()
    _start_limit_runs()   # already running when pytest collected this fixture's user
    proc, root = _limit["proc"], _limit["root"]
    # a failure bound: the child ends when both campaigns have ended
    proc.wait(timeout=2 * LIMIT_RUN_TIMEOUT + 120)
    if (root / "error.txt").exists():
        pytest.fail((root / "error.txt").read_text(), pytrace=False)
    out = {}
    for name in LIMIT_CAMPAIGNS:
        result = root / name / "result.json"
        assert result.exists(), (root / "runner.log").read_text(errors="replace")[-3000:]
        out[name] = (SimpleNamespace(**json.loads(result.read_text())),
                     root / name / f"{name}.toml")
    return out   # the stores stay until the session ends (pytest_sessionfinish removes them)
