"""Fabrics between nodes, pure parts: interface pinning per stack kind, the probe's
per-interface byte counters, and the verdict on a pinned interface. The probe outputs are
real, captured on two emulated nodes (tests/data/fabric/README.md)."""

from __future__ import annotations

import pytest

from mpibench.errors import UsageError
from mpibench.execute import Variant, resolve_settings
from mpibench.stacks import Stack
from mpibench.stacks.kinds import presets_for
from mpibench.transports import (
    actual_interfaces,
    carriers,
    interface_detail,
    interface_problem,
    netdev_traffic,
    verdict,
)
from mpibench.verify import judge
from support.common import REPO

DATA = REPO / "tests" / "data" / "fabric"
OMPI_FAST = (DATA / "openmpi-4.1.4-ob1-shm+tcp-eth-fast-2nodes.txt").read_text()
OMPI_SLOW = (DATA / "openmpi-4.1.4-ob1-shm+tcp-eth-slow-2nodes.txt").read_text()
MPICH_SLOW = (DATA / "mpich-4.0.2-ucx-shm+tcp-eth-slow-2nodes.txt").read_text()


def _stack(kind: str, version: str = "") -> Stack:
    return Stack(name=kind, kind=kind, version="", mpicc=f"mpicc.{kind}",
                 launcher=f"mpirun.{kind}", library_version=version)


def test_counters_name_the_interface_that_carried_the_payload():
    traffic, payload = netdev_traffic(OMPI_SLOW)
    assert payload == 2 * 1024 * 1024
    # both nodes sent their payload (plus TCP/IP headers) on eth-slow, next to nothing on
    # eth-fast (the launcher's hostnames resolve to eth-fast addresses)
    assert traffic["eth-slow"]["nodes"] == 2
    assert traffic["eth-slow"]["tx"] >= 2 * payload
    assert traffic.get("eth-fast", {"tx": 0})["tx"] < 4096
    assert carriers(traffic, payload) == ["eth-slow"]
    assert interface_detail(OMPI_SLOW).startswith("iface eth-slow (4.2 MB sent")
    assert carriers(*netdev_traffic(OMPI_FAST)) == ["eth-fast"]
    assert carriers(*netdev_traffic(MPICH_SLOW)) == ["eth-slow"]


def test_no_counters_no_interface_claim():
    assert netdev_traffic("mpibench-probe rank=0 host=a\n") == ({}, None)
    assert interface_detail("nothing\n") is None
    text = "mpibench-netdev payload=2097152\nmpibench-netdev rank=0 host=a if=eth0 rx=9 tx=9\n"
    assert interface_detail(text) == "iface none"  # shared memory: no interface carried it


@pytest.mark.parametrize("requested, actual, expect", [
    ("tcp@eth-slow", "tcp [pml ob1, btl tcp; iface eth-slow (4.2 MB sent)]", "ok"),
    ("tcp@eth-slow", "tcp [pml ob1, btl tcp; iface eth-fast (4.2 MB sent)]", "MISMATCH"),
    ("@eth-slow", "tcp [pml ob1, btl tcp; iface eth-fast (4.2 MB sent)]", "MISMATCH"),
    ("@eth-slow", "tcp [pml ob1, btl tcp; iface eth-slow (4.2 MB sent)]", "ok"),
    ("tcp@eth-slow", "shm [pml ob1, btl vader; iface eth-slow (4.2 MB sent)]", "MISMATCH"),
    ("tcp@eth-slow", "tcp [pml ob1, btl tcp]", "unverified"),  # no counters: cannot say
    ("tcp@eth-a,eth-b", "tcp [x; iface eth-a+eth-b (1 MB, 1 MB sent)]", "ok"),
    # ranks of one node reach each other's address over lo: inside the node, not a fabric
    ("shm+tcp@eth-slow", "tcp [x; iface eth-slow+lo (4 MB, 2 MB sent)]", "ok"),
    ("shm+tcp@eth-slow", "shm [pml ob1, btl vader; iface none]", "ok"),
    ("shm+tcp", "shm+tcp [pml ob1, btl tcp,vader]", "ok"),
    ("shm+tcp", "tcp [pml ob1, btl tcp]", "ok"),  # one rank per node
    ("shm+tcp", "ucx [pml ucx, tls rc: ib]", "MISMATCH"),
    ("tcp", "tcp [pml ob1, btl tcp; iface eth-fast (4.2 MB sent)]", "ok"),
])
def test_verdict_on_a_pinned_interface(requested, actual, expect):
    assert verdict(requested, actual) == expect


def test_actual_interfaces():
    assert actual_interfaces("tcp [x; iface eth-a+lo (1 MB)]") == {"eth-a", "lo"}
    assert actual_interfaces("shm [x; iface none]") == set()
    assert actual_interfaces("tcp [x]") is None


def test_judge_reads_the_counters_of_a_real_two_node_probe():
    st = _stack("openmpi", "Open MPI v4.1.4")
    ok = judge(st, Variant("v", "openmpi", "shm+tcp", interface="eth-slow", np=2), OMPI_SLOW,
               {})
    assert ok.requested == "shm+tcp@eth-slow"
    assert ok.actual.startswith("tcp [pml ob1, btl tcp; iface eth-slow (4.2 MB sent")
    assert ok.verdict == "ok"
    assert any(line.startswith("mpibench-netdev rank=") for line in ok.evidence)
    # asked for eth-slow, but the run's own MCA setting sent the traffic over eth-fast
    bad = judge(st, Variant("v", "openmpi", "shm+tcp", interface="eth-slow", np=2), OMPI_FAST,
                {})
    assert bad.verdict == "MISMATCH" and "iface eth-fast" in bad.actual
    # no pin: the interface is still named, since the ranks ran on two nodes
    free = judge(_stack("mpich", "MPICH Version: 4.0.2\nMPICH Device: ch4:ucx"),
                 Variant("v", "mpich", "shm+tcp", np=2), MPICH_SLOW, {})
    assert free.verdict == "ok"
    assert "via ucx netmod" in free.actual and "iface eth-slow" in free.actual


@pytest.mark.parametrize("kind, version, env, mca", [
    ("openmpi", "Open MPI v4.1.4", {"UCX_NET_DEVICES": "eth-fast", "FI_TCP_IFACE": "eth-fast"},
     {"btl_tcp_if_include": "eth-fast", "oob_tcp_if_include": "eth-fast"}),
    ("mpich", "MPICH Version: 4.0.2\nMPICH Device: ch4:ucx",
     {"UCX_NET_DEVICES": "eth-fast", "FI_TCP_IFACE": "eth-fast"}, {}),
    ("intel", "Intel(R) MPI Library 2021.18", {"FI_TCP_IFACE": "eth-fast",
                                                "I_MPI_HYDRA_IFACE": "eth-fast"}, {}),
])
def test_each_kind_pins_the_interface_its_own_way(kind, version, env, mca):
    st = _stack(kind, version)
    got_env, got_mca = resolve_settings(st, Variant("v", kind, "shm+tcp", interface="eth-fast"))
    for k, v in env.items():
        assert got_env[k] == v
    for k, v in mca.items():
        assert got_mca[k] == v
    # the variant's own settings still win over the pin
    got_env, _ = resolve_settings(st, Variant("v", kind, "tcp", interface="eth-fast",
                                              env={"FI_TCP_IFACE": "eth0"}))
    assert got_env["FI_TCP_IFACE"] == "eth0"


def test_shm_plus_tcp_preset_per_kind():
    assert presets_for("openmpi")["shm+tcp"].mca == {"pml": "ob1", "btl": "self,vader,tcp"}
    mpich = presets_for("mpich", "MPICH Version: 4.0.2\nMPICH Device: ch4:ucx")["shm+tcp"]
    assert mpich.env["MPIR_CVAR_NOLOCAL"] == "0" and mpich.env["UCX_TLS"] == "self,sm,tcp"
    ofi = presets_for("mpich", "MPICH Version: 5.0\nMPICH Device: ch4:ofi")["shm+tcp"]
    assert ofi.env == {"MPIR_CVAR_NOLOCAL": "0", "FI_PROVIDER": "tcp"}


def test_unpinned_variant_and_its_request():
    v = Variant("v", "openmpi", "tcp")
    assert v.transport_request() == "tcp" and "interface" not in v.to_dict()
    assert Variant("v", "openmpi", None, interface="ib0").transport_request() == "@ib0"


@pytest.mark.parametrize("text, ok", [("eth-fast", True), ("ib0,eth0", True),
                                      ("mlx5_0:1", True), ("", False), ("eth 0", False),
                                      ("-x", True), ("a;rm", False), ("x" * 65, False)])
def test_interface_names(text, ok):
    assert (interface_problem(text) is None) == ok


def test_campaign_interface_key(tmp_path):
    from mpibench.campaign.spec import load

    f = tmp_path / "c.toml"
    f.write_text('[campaign]\nname = "x"\n[defaults]\nstack = "openmpi"\ntransport = "tcp"\n'
                 '[variants.v]\nsweep = { interface = ["eth-fast", "eth-slow"] }\n'
                 '[benchmarks.b]\nbenchmarks = ["PingPong"]\nsizes = "0"\n')
    spec = load(f)
    assert sorted(v.interface for v in spec.variants) == ["eth-fast", "eth-slow"]
    f.write_text(f.read_text().replace('"eth-slow"', '"eth slow"'))
    with pytest.raises(UsageError, match=r"c.toml: variants.v.sweep.interface\[1\]: "):
        load(f)


def test_run_flags_make_one_variant_per_interface():
    import argparse

    from mpibench.commands.run import variants_from_args

    ns = argparse.Namespace(env=[], mca=[], variant=[], stack=["openmpi"], transport=["tcp"],
                            interface=["eth-fast", "eth-slow"], np=2)
    vs = variants_from_args(ns)
    assert [(v.name, v.interface) for v in vs] == [("openmpi-eth-fast", "eth-fast"),
                                                   ("openmpi-eth-slow", "eth-slow")]
    ns.interface = ["eth;x"]
    with pytest.raises(UsageError, match="--interface 'eth;x'"):
        variants_from_args(ns)


def test_tcp_payload_efficiency_from_headers():
    from mpibench.linkmodel import WIRE_L2, expected_tcp_mbps, tcp_payload_efficiency

    assert tcp_payload_efficiency(1500) == 1448 / 1514
    assert tcp_payload_efficiency(1500, l2=WIRE_L2) == 1448 / 1538
    assert tcp_payload_efficiency(9000) == 8948 / 9014
    assert tcp_payload_efficiency(1500, timestamps=False) == 1460 / 1514
    assert expected_tcp_mbps(1e9, 1500) == pytest.approx(125 * 1448 / 1514, rel=1e-12)
    with pytest.raises(ValueError):
        tcp_payload_efficiency(40)


def test_demo_says_in_one_line_why_the_fabric_part_is_skipped(tmp_path):
    """For real: the demo's fabric part run by an unprivileged user (nobody) cannot start a
    testbed; it says why in one line and creates nothing."""
    import os
    import shutil
    import subprocess
    import sys

    from support.common import python_unreachable_for_nobody

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run the demo's fabric part as nobody")
    why = python_unreachable_for_nobody()
    if why:
        pytest.skip(why)
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(tmp_path, 0o777)
    os.chmod(out, 0o777)
    code = ("import argparse, pathlib, sys\n"
            "from mpibench.commands.demo import fabric_comparison\n"
            "text, rc = fabric_comparison(argparse.Namespace(repeats=3, max_time=0.05), "
            "pathlib.Path(sys.argv[1]))\n"
            "print(repr(text)); print(rc)\n")
    res = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                          sys.executable, "-c", code, str(out)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "HOME": str(out)})
    assert res.returncode == 0, res.stderr
    text_line, rc = res.stdout.strip().splitlines()[-2:]
    assert text_line.startswith("'skipped: no testbed on this machine (the testbed needs root")
    assert "\\n" not in text_line and rc == "0"
    assert list(out.iterdir()) == []


def test_fabric_campaign_is_a_valid_campaign_for_the_testbeds_fabrics(tmp_path):
    """The campaign text mpibench.fabric writes for a testbed (its fabrics and nodes as the
    testbed records them) loads, pins each fabric and carries its configured line rate."""
    from types import SimpleNamespace

    from mpibench import fabric as fb
    from mpibench.campaign.spec import load

    fabrics = [SimpleNamespace(name="fast", rate_bps=4 * 10**9, mtu=1500, delay_us=0.0,
                               delay_applied=False),
               SimpleNamespace(name="slow", rate_bps=10**9, mtu=1500, delay_us=0.0,
                               delay_applied=False)]
    bed = SimpleNamespace(fabrics=fabrics, nodes=[SimpleNamespace(name="tn1"),
                                                  SimpleNamespace(name="tn2")],
                          fabric=lambda n: next(f for f in fabrics if f.name == n))
    f = tmp_path / "c.toml"
    f.write_text(fb.fabric_campaign(bed, "x", stacks=("openmpi", "mpich"), yielding=True))
    spec = load(f)
    by = {v.name: v for v in spec.variants}
    assert set(by) == {"openmpi-fast", "openmpi-slow", "mpich-fast", "mpich-slow",
                       "openmpi+yield-fast", "openmpi+yield-slow"}
    assert by["openmpi+yield-slow"].mca == {"mpi_yield_when_idle": "1"}
    assert all(v.hosts == ["tn1", "tn2"] and v.ppn == 1 for v in spec.variants)
    assert spec.line_rates["mpich-slow"][1] == 1e9
    assert spec.line_rates["openmpi-fast"][1] == 4e9
    assert fb.expected(bed, "slow").mbps == pytest.approx(125 * 1448 / 1514)
