"""Stack discovery against the real Debian installs and fake prefix layouts."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mpibench import stacks
from mpibench.errors import StackError, UsageError


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.mark.system
def test_debian_side_by_side_stacks_found(found_stacks):
    by_name = {s.name: s for s in found_stacks}
    assert by_name["openmpi"].ok and by_name["openmpi"].kind == "openmpi"
    assert by_name["mpich"].ok and by_name["mpich"].kind == "mpich"
    # The version comes from the library's own string, not the package manager.
    assert by_name["openmpi"].library_version.startswith("Open MPI v")
    assert by_name["openmpi"].version in by_name["openmpi"].library_version
    assert "MPICH Version:" in by_name["mpich"].library_version
    assert by_name["mpich"].mpi_standard.startswith("4.")
    assert by_name["openmpi"].launcher.endswith("mpirun.openmpi")
    assert os.path.basename(by_name["mpich"].launcher) in {"mpiexec.hydra", "mpiexec.mpich",
                                                          "mpirun.mpich"}


@pytest.mark.system
def test_plain_mpicc_is_reported_as_alias():
    found = stacks.discover(include_missing=True)
    default = [s for s in found if s.name == "default"]
    assert default, "a plain mpicc is on PATH on Debian (alternatives)"
    assert default[0].alias_of in {"openmpi", "mpich"} or default[0].ok


@pytest.mark.system
def test_fake_prefix_layout_is_identified(tmp_path):
    prefix = tmp_path / "opt" / "mympi"
    (prefix / "bin").mkdir(parents=True)
    _script(prefix / "bin" / "mpicc", 'exec mpicc.mpich "$@"')
    _script(prefix / "bin" / "mpiexec", 'exec mpiexec.hydra "$@"')
    (s,) = [s for s in stacks.discover(prefixes=[str(prefix)]) if s.prefix == str(prefix)]
    assert s.ok, s.problem
    assert s.kind == "mpich" and s.name.startswith("mpich-")
    assert s.launcher == str(prefix / "bin" / "mpiexec")
    assert s.prefix == str(prefix)


@pytest.mark.system
def test_broken_prefix_reports_reason_not_traceback(tmp_path):
    prefix = tmp_path / "broken"
    (prefix / "bin").mkdir(parents=True)
    _script(prefix / "bin" / "mpicc", 'echo "mpicc: fatal: license expired" >&2; exit 1')
    (s,) = [s for s in stacks.discover(prefixes=[str(prefix)]) if s.prefix == str(prefix)]
    assert not s.ok
    assert "license expired" in s.problem
    (missing,) = [s for s in stacks.discover(prefixes=[str(tmp_path / "nowhere")])
                  if s.origin == "prefix"]
    assert not missing.ok and "does not exist" in missing.problem
    with pytest.raises(StackError, match="not usable"):
        stacks.find_stack(s.name, [s])


@pytest.mark.system
def test_unknown_stack_names_the_choices(found_stacks):
    with pytest.raises(StackError, match=r"unknown stack 'nope'; expected one of: .*openmpi"):
        stacks.find_stack("nope", found_stacks)


@pytest.mark.system
def test_stacks_file(tmp_path):
    f = tmp_path / "stacks.toml"
    f.write_text('[stacks.site-ompi]\nmpicc = "mpicc.openmpi"\nlauncher = "/usr/bin/mpirun.openmpi"\n'
                 'env = { UCX_WARN_UNUSED_ENV_VARS = "n" }\n')
    (s,) = stacks.load_stacks_file(f)
    assert s.ok and s.name == "site-ompi" and s.kind == "openmpi"
    assert s.env == {"UCX_WARN_UNUSED_ENV_VARS": "n"}
    f.write_text('[stacks.x]\nprefx = "/opt"\n')
    with pytest.raises(UsageError, match=r"stacks\.x: unknown key\(s\) \['prefx'\]"):
        stacks.load_stacks_file(f)
    f.write_text("[stacks.x\n")
    with pytest.raises(UsageError, match="invalid TOML"):
        stacks.load_stacks_file(f)


@pytest.mark.system
def test_stacks_cli_json(tmp_path):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mpibench", "stacks", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    names = {s["name"] for s in json.loads(out.stdout)}
    assert {"openmpi", "mpich"} <= names
