"""Session fixtures shared by tests/profile/: the profiler library and its test programs built
with each stack (`built`), and a small GROMACS run input (`gromacs_tpr`). Registered for
every test by tests/conftest.py (pytest_plugins)."""

from __future__ import annotations

import shutil

import pytest

from mpibench import profile
from mpibench.process import run_command

TIMEOUT = 90  # every launch


@pytest.fixture(scope="session", params=["openmpi", "mpich"])
def built(request, found_stacks):
    from mpibench.stacks import find_stack

    try:
        stack = find_stack(request.param, found_stacks)
    except Exception as exc:  # noqa: BLE001 - a missing stack is a skip, not a failure
        pytest.skip(f"stack {request.param}: {exc}")
    lib = profile.run.build_profiler(stack)
    progs = profile.run.build_test_programs(stack)
    return stack, lib, progs


# ---- GROMACS -------------------------------------------------------------------------------
TOPOL = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spc.itp"

[ system ]
water box

[ molecules ]
"""
MDP = """integrator = md
dt = 0.002
nsteps = 200
nstlist = 10
cutoff-scheme = Verlet
coulombtype = PME
rcoulomb = 0.9
rvdw = 0.9
tcoupl = v-rescale
tc-grps = System
tau-t = 0.1
ref-t = 300
constraints = h-bonds
nstenergy = 100
nstlog = 100
"""
GMX_ENV = {"OMP_NUM_THREADS": "1", "GMX_MAXBACKUP": "-1"}


@pytest.fixture(scope="session")
def gromacs_tpr(tmp_path_factory):
    if not shutil.which("gmx_mpi"):
        pytest.skip("gmx_mpi not installed (Debian package gromacs)")
    d = tmp_path_factory.mktemp("gmx")
    (d / "topol.top").write_text(TOPOL)
    (d / "md.mdp").write_text(MDP)
    env = {**GMX_ENV, **profile.run.ROOT_ENV}
    res = run_command(["gmx_mpi", "solvate", "-cs", "spc216.gro", "-box", "2", "2", "2",
                       "-o", "conf.gro", "-p", "topol.top"], cwd=d, env=env, timeout=TIMEOUT)
    assert res.ok, res.stderr[-2000:]
    res = run_command(["gmx_mpi", "grompp", "-f", "md.mdp", "-c", "conf.gro", "-p", "topol.top",
                       "-o", "topol.tpr", "-maxwarn", "5"], cwd=d, env=env, timeout=TIMEOUT)
    assert res.ok, res.stderr[-2000:]
    return d / "topol.tpr"
