"""Transport verification: parsing each stack's diagnostics (captured lines from this
machine's Open MPI 4.1.4 and MPICH 4.0.2/UCX 1.13.1), real probes catching a requested
transport that did not take effect, and the mismatch shown by `campaign status`."""

from __future__ import annotations

import subprocess

import pytest

from mpibench.execute import Variant
from mpibench.verify import parse_diagnostics, verdict, verify_local
from support.common import MPI_TIMEOUT, REPO

OB1_VADER = """\
[vm:11296] selected ob1 best priority 20
[vm:11296] select: component ob1 selected
[vm:11295] mca: bml: Using vader btl for send to [[16613,1],1] on node vm
[vm:11295] mca: bml: Using self btl for send to [[16613,1],0] on node vm
"""
OB1_TCP = """\
[vm:11308] btl: tcp: Using interface: sppp
[vm:11308] selected ob1 best priority 20
[vm:11335] mca: bml: Using self btl for send to [[16573,1],0] on node vm
[vm:11335] mca: bml: Using tcp btl for send to [[16573,1],1] on node vm
"""
PML_UCX = """\
[vm:11349] selected ucx best priority 51
[vm:11349] select: component ucx selected
[1795334470.280595] [vm:11391:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(self/memory0 cma/memory)
[1795334470.280767] [vm:11391:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[1]: tag(sysv/memory cma/memory)
"""
CM_OFI = """\
[vm:11365] mca:base:select:(  mtl) Selected component [ofi]
[vm:11365] ../../../../../../ompi/mca/mtl/ofi/mtl_ofi_component.c:365: mtl:ofi:provider: eth0
[vm:11364] select: component ofi selected
[vm:11364] selected cm best priority 25
"""
MPICH_TCP = """\
[1795334470.531574] [vm:11419:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(self/memory0 tcp/lo tcp/eth0) rma(self/memory0) am(self/memory0 tcp/lo tcp/eth0)
[1795334470.531690] [vm:11420:0]      ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(tcp/lo tcp/eth0) rma_am(tcp/lo) am(tcp/lo tcp/eth0)
"""


@pytest.mark.parametrize("kind, text, env, actual", [
    ("openmpi", OB1_VADER, {}, "shm [pml ob1, btl vader]"),
    ("openmpi", OB1_TCP, {}, "tcp [pml ob1, btl tcp]"),
    ("openmpi", PML_UCX, {}, "ucx [pml ucx, tls cma,sysv: shm]"),
    ("openmpi", CM_OFI, {"FI_PROVIDER": "tcp"}, "ofi [pml cm, mtl ofi, provider tcp, "
                                                "domain eth0]"),
    ("mpich", MPICH_TCP, {}, "tcp [via ucx netmod, tls tcp]"),
    ("mpich", "nothing useful\n", {}, "unknown [no UCX endpoint configuration or libfabric "
                                      "provider in the diagnostics]"),
])
def test_parse_diagnostics(kind, text, env, actual):
    got, evidence = parse_diagnostics(kind, text, env)
    assert got == actual
    if not got.startswith("unknown"):
        assert evidence


def test_verdicts():
    assert verdict("shm", "shm [pml ob1, btl vader]") == "ok"
    assert verdict("shm", "tcp [pml ob1, btl tcp]") == "MISMATCH"
    assert verdict("ucx", "ucx [pml ucx, tls tcp: tcp]") == "ok"
    assert verdict("shm", "unknown [probe failed]") == "unverified"
    assert verdict(None, "tcp [pml ob1, btl tcp]") == "n/a"


@pytest.mark.mpi
@pytest.mark.parametrize("stack, transport, env, mca, expect_class, expect_verdict", [
    ("openmpi", "shm", {}, {}, "shm", "ok"),
    ("openmpi", "tcp", {}, {}, "tcp", "ok"),
    # the user's own MCA setting overrides the preset: TCP carries the traffic
    ("openmpi", "shm", {}, {"btl": "self,tcp"}, "tcp", "MISMATCH"),
    ("mpich", "shm", {}, {}, "shm", "ok"),
    # a UCX_TLS override in the variant's env beats the shm preset
    ("mpich", "shm", {"UCX_TLS": "self,tcp"}, {}, "tcp", "MISMATCH"),
])
def test_real_probe(tmp_path, found_stacks, stack, transport, env, mca, expect_class,
                    expect_verdict):
    from mpibench.stacks import find_stack

    s = find_stack(stack, found_stacks)
    v = verify_local(s, Variant(name="v", stack=stack, transport=transport, env=env, mca=mca,
                                np=2), tmp_path, timeout=60)
    assert v.actual.split(" ")[0] == expect_class, v
    assert v.verdict == expect_verdict
    assert (tmp_path / "verification.txt").exists()
    # the library's own account of its settings, for the fingerprint
    settings = v.node.get("library_settings", {})
    if stack == "openmpi":
        mca_btl = mca.get("btl") or ("self,vader" if transport == "shm" else "self,tcp")
        assert settings["openmpi_mca"]["btl"].startswith(mca_btl + " ("), settings
        # Debian's openmpi-mca-params.conf: a setting nobody wrote into the campaign
        assert settings["openmpi_mca"]["osc"].startswith("^ucx,pt2pt (file (")
        assert settings["openmpi_mca"]["pml"] == "ob1 (environment)"     # the preset
    else:
        assert any(k.startswith("UCX netmod Capability") for k in
                   settings["mpich_debug_summary"]), settings


CAMPAIGN = """
[campaign]
name = "fallback"
repeats = 1
timeout = 60
[variants.want-shm]
stack = "mpich"
transport = "shm"
env = { UCX_TLS = "self,tcp" }
[variants.shm]
stack = "openmpi"
transport = "shm"
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0"
options = { max_time = 0.01 }
"""


@pytest.mark.mpi
def test_campaign_status_flags_the_silent_fallback(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text(CAMPAIGN)
    mb = str(REPO / ".venv" / "bin" / "mpibench")
    res = subprocess.run([mb, "campaign", "run", str(camp), "--no-progress"],
                         capture_output=True, text=True, timeout=MPI_TIMEOUT)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([mb, "campaign", "status", str(camp), "--json"],
                         capture_output=True, text=True, timeout=60)
    import json

    data = json.loads(res.stdout)
    by = {v["variant"]: v for v in data["variants"]}
    assert by["want-shm"]["transport_verdict"] == "MISMATCH"
    assert by["want-shm"]["transport_actual"].startswith("tcp")
    assert by["shm"]["transport_verdict"] == "ok"
    res = subprocess.run([mb, "campaign", "status", str(camp)], capture_output=True,
                         text=True, timeout=60)
    assert "MISMATCH" in res.stdout and "requested transport shm but tcp" in res.stdout
    # the line a report or comparison prints for these runs
    from mpibench.store import Store
    from mpibench.verify import transport_warnings

    with Store(tmp_path / "mpibench.db") as store:
        (line,) = transport_warnings(store, [r["id"] for r in store.runs()])
    assert line.startswith("variant want-shm: requested transport shm but tcp [via ucx netmod, tls tcp]")
    assert line.endswith("(1 run(s)); its results measure tcp, not shm")


PRESETS = """
[campaign]
name = "presets"
repeats = 1
timeout = 60
[variants.ompi-shm]
stack = "openmpi"
transport = "shm"
[variants.ompi-tcp]
stack = "openmpi"
transport = "tcp"
[variants.ompi-ucx]
stack = "openmpi"
transport = "ucx"
[variants.ompi-ofi]
stack = "openmpi"
transport = "ofi"
[variants.mpich-shm]
stack = "mpich"
transport = "shm"
[variants.mpich-tcp]
stack = "mpich"
transport = "tcp"
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0,4K"
options = { max_time = 0.01 }
"""


@pytest.mark.mpi
def test_every_preset_runs_here_and_is_verified(tmp_path, found_stacks):
    """Open MPI shm/tcp/ucx/ofi and MPICH shm/tcp: a real core cell each, and the probe
    confirms that the requested transport carried the traffic."""
    from mpibench.campaign import status as st
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.campaign.spec import load
    from mpibench.store import Store

    camp = tmp_path / "presets.toml"
    camp.write_text(PRESETS)
    with Store(tmp_path / "p.db") as store:
        CampaignRunner(load(camp), store, found_stacks).run()
        data = st.status(store, load(camp))
        runs = {r["variant"]: r for r in store.runs()}
        results = {r["run_id"] for r in store.results(with_samples=False)}
        fps = {name: store.fingerprint(r["fingerprint_id"]) for name, r in runs.items()}
    assert data["totals"]["done"] == 6, data["problems"]
    by = {v["variant"]: v for v in data["variants"]}
    expect = {"ompi-shm": "shm [pml ob1, btl vader]", "ompi-tcp": "tcp [pml ob1, btl tcp]",
              "ompi-ucx": "ucx [pml ucx", "ompi-ofi": "ofi [pml cm, mtl ofi, provider tcp",
              "mpich-shm": "shm [via ucx netmod, tls", "mpich-tcp": "tcp [via ucx netmod, tls tcp"}
    for name, prefix in expect.items():
        assert by[name]["transport_verdict"] == "ok", by[name]
        assert by[name]["transport_actual"].startswith(prefix), by[name]
        assert runs[name]["transport_actual"] == by[name]["transport_actual"]
        assert runs[name]["id"] in results
    # the fingerprint says what ran where the ranks ran: the probe's node and libraries
    ompi, mpich = fps["ompi-ucx"], fps["mpich-tcp"]
    assert ompi["libraries"]["library"].startswith("Open MPI v4.1")
    assert any("libmpi.so" in p for p in ompi["libraries"]["libraries"])
    assert ompi["libraries"]["ucx"].startswith("1.13")
    assert mpich["libraries"]["library"].startswith("MPICH Version:")
    assert ompi["machine"]["kernel"] and ompi["machine"]["cores"] >= 1
    assert fps["ompi-ofi"]["libraries"]["libfabric_api"].startswith("1.")


# -- a probe that hung or was killed vouches for nothing --------------------------------------
@pytest.mark.parametrize("exit_code, timed_out, expect", [
    (0, False, None),
    (None, True, "probe launch timed out after 60 s"),
    (124, False, "probe launch timed out after 60 s"),  # the job script's `timeout`
    (None, False, "the probe step never finished (its job ended first)"),
    (-9, False, "probe launch killed by signal 9"),
    (137, False, "probe launch killed by signal 9"),
    (1, False, "probe launch failed (exit 1: MPI_Init failed)"),
])
def test_probe_problem(exit_code, timed_out, expect):
    from mpibench.verify import probe_problem

    assert probe_problem(exit_code, timed_out, 60, "banner\nMPI_Init failed\n") == expect


def test_a_probe_that_hung_after_its_exchanges_still_vouches():
    """MPICH 4.0.2 over UCX 1.13.1 tcp hung in the probe's last barrier or MPI_Finalize in
    1 launch of 6 (here, with UCX_TLS=self,tcp): test_campaign_status_flags_the_silent_fallback
    read 'unverified' instead of MISMATCH. Every rank had said its messages went through."""
    from mpibench.verify import probe_exchanged, probe_problem

    head = "mpibench-probe rank=0 host=vm\nmpibench-probe rank=1 host=vm\n"
    both = head + "mpibench-probe exchanged rank=1\nmpibench-probe exchanged rank=0\n"
    assert probe_exchanged(both)
    assert probe_problem(None, True, 60, "", exchanged=probe_exchanged(both)) is None
    # one rank still exchanging, or nothing announced: the hang voids the verdict
    one = head + "mpibench-probe exchanged rank=0\n"
    assert not probe_exchanged(one) and not probe_exchanged("")
    assert probe_problem(None, True, 60, "", exchanged=probe_exchanged(one)) == \
        "probe launch timed out after 60 s"


def test_every_rank_of_the_launch_must_report_and_a_silent_one_is_named():
    """With the launch's np known, a rank that never printed anything (not even its
    announcement) is missing too; the reason names it."""
    from mpibench.verify import probe_exchanged, probe_problem, unreported_ranks

    three = "".join(f"mpibench-probe rank={r} host=vm\nmpibench-probe exchanged rank={r}\n"
                    for r in (0, 1, 3))
    assert probe_exchanged(three)            # every announced rank reported ...
    assert not probe_exchanged(three, 4)     # ... but rank 2 of 4 never did
    assert probe_exchanged(three + "mpibench-probe exchanged rank=2\n", 4)
    assert unreported_ranks(three, 4) == [2]
    assert probe_problem(124, False, 60, "", exchanged=False, unreported=[2]) == \
        "probe launch timed out after 60 s; rank 2 never reported its exchange"
    assert probe_problem(1, False, 60, "x\n", unreported=[1, 2]) == \
        "probe launch failed (exit 1: x); ranks 1, 2 never reported their exchange"
    assert probe_problem(143, False, 60, "", exchanged=True, unreported=[]) is None


@pytest.mark.parametrize("problem", ["probe launch timed out after 60 s",
                                     "probe launch killed by signal 9"])
def test_a_probe_killed_after_its_banner_is_never_ok(problem):
    """MPICH printed its UCX endpoint lines (tcp, as requested) and then hung: the transport
    that was configured never carried a message as far as anyone knows."""
    from types import SimpleNamespace

    from mpibench.verify import judge

    stack = SimpleNamespace(kind="mpich")
    v = judge(stack, Variant(name="v", stack="mpich", transport="tcp", np=2), MPICH_TCP, {},
              None, problem)
    assert v.verdict == "unverified"
    assert v.actual == f"unknown [{problem}; before that its diagnostics showed tcp]"
    assert v.problem == problem and v.evidence  # the lines are kept for the record
    # the same text from a probe that ran to the end is ok
    assert judge(stack, Variant(name="v", stack="mpich", transport="tcp", np=2), MPICH_TCP,
                 {}).verdict == "ok"


def test_verify_local_judges_a_timed_out_probe_unknown(tmp_path, monkeypatch):
    """verify_local with the launch stood in for: the probe printed the tcp endpoint lines,
    then the runner's timeout killed it."""
    from types import SimpleNamespace

    import mpibench.execute
    import mpibench.verify as vf
    from mpibench.process import CommandResult

    monkeypatch.setattr(vf, "prepare_probe", lambda *a, **k: SimpleNamespace(env={}))
    for timed_out, rc in ((True, -9), (False, 0)):
        monkeypatch.setattr(mpibench.execute, "run_local", lambda cmd, timeout, complete,
                            t=timed_out, r=rc: CommandResult(["mpiexec"], r, "", MPICH_TCP,
                                                             60.0, t))
        v = vf.verify_local(SimpleNamespace(kind="mpich"),
                            Variant(name="v", stack="mpich", transport="tcp", np=2), tmp_path,
                            timeout=60)
        text = (tmp_path / "verification.txt").read_text()
        if timed_out:
            assert v.verdict == "unverified", v
            assert v.actual.startswith("unknown [probe launch timed out after 60 s;"), v
            assert "problem: probe launch timed out after 60 s" in text
        else:
            assert (v.verdict, v.actual) == ("ok", "tcp [via ucx netmod, tls tcp]")


def test_verify_local_ends_when_every_rank_reported_though_the_launcher_hangs(tmp_path,
                                                                            monkeypatch):
    """The local probe ends as the batch probe step does: MPICH 4.0.2's MPI_Finalize hung
    after both ranks reported (1 probe in 6 with UCX_TLS=self,tcp here) and the launch sat
    out its 60 s timeout. A stand-in launcher prints the real probe's lines and never exits:
    the verdict is ok, the launcher is stopped by its PID, and the probe says so."""
    import os
    from types import SimpleNamespace

    import mpibench.verify as vf
    from mpibench.execute import CellCommand

    launcher = tmp_path / "launcher.sh"
    exchanged = "".join(f"mpibench-probe rank={r} host=h\nmpibench-probe exchanged rank={r}\n"
                        for r in (0, 1))
    launcher.write_text("#!/bin/bash\necho $$ >launcher.pid\ncat >&2 <<'EOF'\n" + MPICH_TCP
                        + "EOF\ncat <<'EOF'\n" + exchanged + "EOF\nexec sleep 600\n")
    launcher.chmod(0o755)
    variant = Variant(name="v", stack="mpich", transport="tcp", np=2)
    stack = SimpleNamespace(kind="mpich", name="mpich")
    run_dir = tmp_path / "probe dir"

    def prepare(stack, variant, run_dir, **kw):
        run_dir.mkdir(parents=True, exist_ok=True)
        return CellCommand([str(launcher)], {}, run_dir, run_dir / "stdout.txt",
                           run_dir / "stderr.txt", None, [str(launcher)], variant, stack)

    monkeypatch.setattr(vf, "prepare_probe", prepare)
    monkeypatch.setattr(vf, "PROBE_GRACE_S", 0.5)
    v = vf.verify_local(stack, variant, run_dir, timeout=600)
    assert (v.verdict, v.actual, v.problem) == ("ok", "tcp [via ucx netmod, tls tcp]", None)
    pid = int((run_dir / "launcher.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "mpibench: all 2 probe ranks reported; the launcher (pid " in \
        (run_dir / "stderr.txt").read_text()


def test_probe_fits_the_allocation_of_a_one_rank_variant(tmp_path):
    """nodes = 1, ppn = 1 (a node sweep's first point) or np = 1: the job's allocation has one
    slot, and the probe asked it for two ('not enough slots' under mpirun, 'More processors
    requested than permitted' under srun): the variant showed 'unverified'. The probe runs
    with the variant's own ranks and placement, never more."""
    from mpibench.execute import Variant
    from mpibench.stacks import Stack
    from mpibench.verify import diagnostic_variant

    stack = Stack(name="openmpi", kind="openmpi")
    for variant, placement in (
            (Variant(name="ompi[nodes=1]", stack="openmpi", np=1, nodes=1, ppn=1,
                     transport="tcp"), (1, 1, 1)),
            (Variant(name="one", stack="openmpi", np=1, transport="shm"), (1, None, None)),
            (Variant(name="ompi[nodes=2]", stack="openmpi", np=2, nodes=2, ppn=1,
                     transport="tcp"), (2, 2, 1))):
        v = diagnostic_variant(stack, variant)
        assert (v.np, v.nodes, v.ppn) == placement
    # the batch probe's argv, per launcher: one rank for a one-slot allocation
    import mpibench.verify as vf
    from mpibench.verify import prepare_probe

    exe = tmp_path / "probe"
    exe.write_text("")
    orig, vf.probe_binary = vf.probe_binary, lambda s, timeout=120: exe
    try:
        for kind, launcher, want in (("openmpi", None, ["-np", "1"]),
                                     ("openmpi", "srun", ["--ntasks", "1"]),
                                     ("mpich", None, ["-n", "1"])):
            st = Stack(name=kind, kind=kind, launcher=f"/usr/bin/mpirun.{kind}",
                       launcher_kind="mpirun-openmpi" if kind == "openmpi"
                       else "mpiexec-hydra")
            cmd = prepare_probe(st, Variant(name="x", stack=kind, np=1, nodes=1, ppn=1,
                                            launcher=launcher), tmp_path / kind, local=False)
            joined = " ".join(cmd.argv)
            assert " ".join(want) in joined, cmd.argv
            assert not any(f"{f} 2" in joined for f in ("-np", "-n", "--ntasks")), cmd.argv
    finally:
        vf.probe_binary = orig


def test_a_one_rank_probe_has_nothing_to_verify_and_says_so():
    """One rank sends nothing to a peer: its verdict is n/a ('one rank'), not unverified, and
    what it saw of its node is kept; a one-rank probe that failed stays unverified."""
    from mpibench.stacks import Stack
    from mpibench.transports import verdict as tverdict
    from mpibench.verify import judge

    stack = Stack(name="openmpi", kind="openmpi")
    out = ("mpibench-probe rank=0 host=n1\nmpibench-probe kernel=6.1 arch=x86_64\n"
           "mpibench-probe cores=2\n" + OB1_VADER)
    one = Variant(name="one", stack="openmpi", transport="tcp", np=1)
    v = judge(stack, one, out, {})
    assert v.verdict == "n/a" and v.actual.startswith("none [one rank"), v
    assert tverdict("tcp", v.actual) == "n/a"      # what status recomputes from the store
    assert tverdict("tcp@eth1", v.actual) == "n/a"  # an interface pinned: nothing crossed it
    assert v.node["hosts"] == ["n1"] and v.node["cores"] == 2
    bad = judge(stack, one, out, {}, problem="probe launch failed (exit 1: x)")
    assert bad.verdict == "unverified"


TWO_NODES = """\
mpibench-probe rank=0 host=tn1
mpibench-probe rank=1 host=tn2
mpibench-node host=tn1 kernel=6.1.0-18-amd64
mpibench-node host=tn1 arch=x86_64
mpibench-node host=tn1 cores=2
mpibench-node host=tn1 cpu=Intel(R) Xeon(R) CPU @ 2.20GHz
mpibench-node host=tn1 cpuset=1
mpibench-node host=tn1 shm_bytes=67108864
mpibench-node host=tn1 interfaces=fast0,slow0
mpibench-node host=tn2 kernel=6.1.0-18-amd64
mpibench-node host=tn2 arch=x86_64
mpibench-node host=tn2 cores=2
mpibench-node host=tn2 cpu=Intel(R) Xeon(R) CPU @ 2.20GHz
mpibench-node host=tn2 cpuset=1
mpibench-node host=tn2 shm_bytes=67108864
mpibench-node host=tn2 interfaces=slow0,fast0
"""


def test_every_nodes_shape_goes_into_the_fingerprint():
    """The fingerprint held the harness's machine and rank 0's node only: two runs whose
    second node differed (another cpuset, /dev/shm, interfaces) were pooled. Each node's
    shape, printed by the first rank on it, is stored per host."""
    from mpibench import fingerprint
    from mpibench.store import fingerprint_id
    from mpibench.verify import node_facts

    facts = node_facts(TWO_NODES)
    assert facts["hosts"] == ["tn1", "tn2"]
    assert facts["nodes"]["tn2"] == {
        "kernel": "6.1.0-18-amd64", "arch": "x86_64", "cores": 2, "cpuset": 1,
        "cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "shm_bytes": 67108864,
        "interfaces": ["fast0", "slow0"]}
    fp = {"stack": "x"}
    fingerprint.add_node_facts(fp, facts)
    assert set(fp["nodes"]) == {"tn1", "tn2"}
    other = {"stack": "x"}
    fingerprint.add_node_facts(other, node_facts(
        TWO_NODES.replace("host=tn2 cpuset=1", "host=tn2 cpuset=2")))
    assert fingerprint_id(fp) != fingerprint_id(other)
    same = {"stack": "x"}
    fingerprint.add_node_facts(same, node_facts("\n".join(reversed(TWO_NODES.splitlines()))))
    assert fingerprint_id(fp) == fingerprint_id(same)


@pytest.mark.mpi
@pytest.mark.parametrize("stack", ["openmpi", "mpich"])
def test_real_probe_reports_its_nodes_shape(tmp_path, found_stacks, stack):
    import os
    import platform
    import socket

    from mpibench.stacks import find_stack

    s = find_stack(stack, found_stacks)
    v = verify_local(s, Variant(name="v", stack=stack, transport="shm", np=2), tmp_path,
                     timeout=60)
    assert v.verdict == "ok", v
    (host,) = v.node["nodes"]           # two ranks on one host: one shape
    assert host == socket.gethostname() or host.split(".")[0] == socket.gethostname()
    shape = v.node["nodes"][host]
    assert shape["kernel"] == platform.release() and shape["cores"] == os.cpu_count()
    assert shape["shm_bytes"] > 0 and isinstance(shape["interfaces"], list)
    assert 1 <= shape.get("cpuset", 1) <= os.cpu_count()


def test_probe_output_surface_derandomized():
    """The 'probe output' fuzz surface (tests/support/surfaces.py) with a fixed seed: no crash, no
    value stored that the mutated output does not hold."""
    import random

    from support import surfaces as _surfaces

    surf = next(s for s in _surfaces.SURFACES if s.name == "probe output")
    t = surf.run(random.Random(19), 300)
    assert t.tried == 300 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples
