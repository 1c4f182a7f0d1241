"""Shared test set-up: a build cache kept between test runs, and helpers for MPI launches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("MPIBENCH_CACHE", str(REPO / ".mpibench-cache"))
# Every MPI launch in the tests is bounded by this (seconds) unless a test sets its own.
MPI_TIMEOUT = 180


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def found_stacks():
    from mpibench.stacks import discover

    return discover()


@pytest.fixture(scope="session")
def openmpi(found_stacks):
    from mpibench.stacks import find_stack

    return find_stack("openmpi", found_stacks)


@pytest.fixture(scope="session")
def mpich(found_stacks):
    from mpibench.stacks import find_stack

    return find_stack("mpich", found_stacks)
