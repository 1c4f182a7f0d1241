"""Stack kinds as registered backends: identification, presets per build, the diagnostics of
Open MPI 5 / MPICH 5 / Intel MPI (real captured outputs), stacks-file validation."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mpibench import stacks
from mpibench.errors import UsageError
from mpibench.launchers import REGISTRY as LAUNCHERS
from mpibench.registry import Registry
from mpibench.schedulers import REGISTRY as SCHEDULERS
from mpibench.stacks.kinds import REGISTRY as KINDS
from mpibench.stacks.kinds import kind_for_launcher, kind_from_version
from mpibench.transports import all_transport_names, preset, verdict
from mpibench.verify import parse_diagnostics

DATA = Path(__file__).parent / "data" / "stacks"
MPICH5 = ("MPICH Version:      5.0.2\nMPICH Release date: Fri Sep 25 20:45:26 UTC 2026\n"
          "MPICH Device:       ch4:ucx ofi\n")
MPICH4 = "MPICH Version:    \t4.0.2\nMPICH Device:    \tch4:ucx\n"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def test_one_registry_for_launchers_schedulers_and_kinds():
    assert all(isinstance(r, Registry) for r in (LAUNCHERS, SCHEDULERS, KINDS))
    assert {"openmpi", "mpich", "intel", "mvapich", "unknown"} <= set(KINDS.names())
    with pytest.raises(UsageError, match=r"unknown stack kind 'lam'; expected one of: intel"):
        KINDS.get("lam")


@pytest.mark.parametrize("text, kind, version", [
    ("Open MPI v5.0.11, package: Open MPI ...", "openmpi", "5.0.11"),
    (MPICH5, "mpich", "5.0.2"),
    ("Intel(R) MPI Library 2021.18.1 for Linux* OS\n", "intel", "2021.18.1"),
    ("MVAPICH2 Version:\t2.3.7\nMPICH Version: 3.2\n", "mvapich", "2.3.7"),
    ("Some MPI 1.0", "unknown", ""),
])
def test_kind_from_version(text, kind, version):
    assert kind_from_version(text) == (kind, version)


def test_kind_from_launcher_name():
    assert kind_for_launcher("/opt/mv2/bin/mpirun_rsh") == "mvapich"
    assert kind_for_launcher("/usr/bin/mpirun.openmpi") == "openmpi"
    assert kind_for_launcher("/usr/bin/mpirun") is None
    assert KINDS.get("mvapich").launcher_backend("/opt/mv2/bin/mpirun_rsh") == "mpirun_rsh"
    assert KINDS.get("intel").launcher_backend("/opt/impi/bin/mpiexec.hydra") == "mpiexec-hydra"


def test_mpich_presets_follow_the_build():
    # MPICH 5 has two netmods: each preset picks one, and every netmod preset turns MPICH's
    # own shared memory off so that ranks on one host really use it
    p5 = {n: preset("mpich", n, MPICH5) for n in ("shm", "tcp", "ucx", "ofi")}
    assert p5["tcp"].env == {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "self,tcp",
                             "MPIR_CVAR_CH4_NETMOD": "ucx"}
    assert p5["ofi"].env["MPIR_CVAR_CH4_NETMOD"] == "ofi"
    assert p5["ofi"].env["MPIR_CVAR_NOLOCAL"] == "1"
    assert p5["shm"].env["MPIR_CVAR_NOLOCAL"] == "0"
    # Debian's MPICH 4 is ch4:ucx only: no ofi preset, no netmod choice
    with pytest.raises(UsageError, match=r"transport 'ofi' is not available for mpich"):
        preset("mpich", "ofi", MPICH4)
    assert "MPIR_CVAR_CH4_NETMOD" not in preset("mpich", "tcp", MPICH4).env
    assert {"shm", "tcp", "ucx", "ofi", "ofi-shm"} <= set(all_transport_names())


def test_open_mpi_5_ucx_1_20_log_format():
    actual, evidence = parse_diagnostics(
        "openmpi", "[vm:1] selected ucx best priority 51\n"
        + _read("openmpi-5.0.11-pml-ucx-ucx-1.20.txt"))
    assert actual == "ucx [pml ucx, tls cma,sysv: shm]"
    assert any("intra-node cfg#1" in line for line in evidence)
    assert not any(" self cfg#0" in line for line in evidence)  # a rank to itself


def test_mpich_5_ofi_and_ucx_netmods():
    nolocal = {"MPIR_CVAR_NOLOCAL": "1"}
    ofi, ev = parse_diagnostics("mpich", _read("mpich-5.0.2-ofi-tcp-nolocal.txt"), nolocal)
    assert ofi == "tcp [via ofi netmod, provider tcp]"
    assert "libfabric provider: tcp - 192.0.2.0/24" in ev
    assert verdict("ofi", ofi) == verdict("tcp", ofi) == "ok"
    assert verdict("ucx", ofi) == verdict("shm", ofi) == "MISMATCH"
    ucx, _ = parse_diagnostics("mpich", _read("mpich-5.0.2-ucx-tcp-nolocal.txt"), nolocal)
    assert ucx == "tcp [via ucx netmod, tls tcp]"
    assert verdict("ucx", ucx) == "ok" and verdict("ofi", ucx) == "MISMATCH"
    # the same output with NOLOCAL unset: every rank on one host used MPICH's shm module,
    # so a netmod request is a MISMATCH, never "unverified"
    text = _read("mpich-5.0.2-ofi-tcp-nolocal.txt") + "mpibench-probe rank=0 host=vm\n"
    shm, _ = parse_diagnostics("mpich", text, {})
    assert shm.startswith("shm [mpich posix shared memory")
    assert verdict("tcp", shm) == verdict("ofi", shm) == "MISMATCH"
    two_hosts = text + "mpibench-probe rank=1 host=other\n"
    assert parse_diagnostics("mpich", two_hosts, {})[0].startswith("shm+tcp [")


def test_intel_mpi_fabrics():
    ofi, ev = parse_diagnostics("intel", _read("impi-2021.18.1-ofi-tcp.txt"), {})
    assert ofi == "tcp [via ofi fabric, provider tcp]"
    assert verdict("ofi", ofi) == verdict("tcp", ofi) == "ok"
    assert verdict("ofi-shm", ofi) == "MISMATCH"
    assert any("libfabric version: 2.4.0-impi" in line for line in ev)
    shm, _ = parse_diagnostics("intel", _read("impi-2021.18.1-shm.txt"), {})
    assert shm == "shm [Intel MPI shm fabric]"
    assert verdict("shm", shm) == "ok" and verdict("ofi", shm) == "MISMATCH"
    assert parse_diagnostics("intel", "nothing\n", {"I_MPI_FABRICS": "shm"})[0].startswith(
        "unknown")  # the request alone proves nothing


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.system
def test_stacks_file_bad_input_is_one_line(tmp_path):
    f = tmp_path / "stacks.toml"
    f.write_text('[stacks.x]\nmpicc = "mpicc.mpich"\nkind = "lam"\n')
    with pytest.raises(UsageError, match=r"stacks\.x: kind = 'lam' is not a known stack kind"):
        stacks.load_stacks_file(f)
    f.write_text('[stacks.x]\nmpicc = "mpicc.mpich"\nenv = ["A=1"]\n')
    with pytest.raises(UsageError, match=r"stacks\.x: env must be a table"):
        stacks.load_stacks_file(f)
    # the library is MPICH: a stack that claims to be Open MPI is unusable, with the reason
    f.write_text('[stacks.x]\nmpicc = "mpicc.mpich"\nkind = "openmpi"\n')
    (s,) = stacks.load_stacks_file(f)
    assert not s.ok and "library says it is mpich" in s.problem
    # a name given twice (Debian's 'mpich' and a file entry) is an error, not first-wins
    f.write_text('[stacks.mpich]\nmpicc = "mpicc.mpich"\n')
    with pytest.raises(UsageError, match=r"two stacks are named 'mpich'"):
        stacks.discover(stacks_file=f)


@pytest.mark.system
def test_mpirun_rsh_launcher_gets_its_own_backend(tmp_path):
    """issue 14: launcher = "mpirun_rsh" with no kind must not get Hydra arguments."""
    rsh = tmp_path / "mpirun_rsh"
    _script(rsh, "exit 0")
    f = tmp_path / "stacks.toml"
    f.write_text(f'[stacks.mv2]\nmpicc = "mpicc.mpich"\nlauncher = "{rsh}"\n')
    (s,) = stacks.load_stacks_file(f)
    assert s.ok and s.launcher_kind == "mpirun_rsh"


@pytest.mark.system
def test_probe_cache_is_keyed_on_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    a = stacks.probe("mpicc.mpich")
    b = stacks.probe("mpicc.mpich", env={"MPICH_ASYNC_PROGRESS": "0"})
    assert a["ok"] and b["ok"]
    assert len(list((tmp_path / "cache" / "probe").glob("*.json"))) == 2
    # a wrapper that works only with its environment: the cache never answers for another
    bin_ = tmp_path / "p" / "bin"
    bin_.mkdir(parents=True)
    _script(bin_ / "mpicc", '[ "$NEED" = 1 ] || { echo "NEED unset" >&2; exit 1; }; '
                            'exec mpicc.mpich "$@"')
    ok = stacks.probe(str(bin_ / "mpicc"), env={"NEED": "1"})
    bad = stacks.probe(str(bin_ / "mpicc"))
    assert ok["ok"] and not bad["ok"] and "NEED unset" in bad["problem"]
    assert json.loads(json.dumps(ok))["kind"] == "mpich"
