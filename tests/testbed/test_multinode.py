"""Issue 19 item 4 across the testbed's real nodes (tn1, tn2: their own hostname, network,
CPUs and /dev/shm; Slurm across them): a one-rank-per-node variant submitted through the
testbed's Slurm is verified at both of its points (the nodes=1 point's one-slot allocation
gets a one-rank probe: n/a, never 'unverified'), and the fingerprint holds each node's own
shape, which differs in hostname."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

pytestmark = [pytest.mark.system, pytest.mark.mpi]

CAMPAIGN = """
[campaign]
name = "tb-multinode"
repeats = 1
timeout = 120

[variants.ompi]
stack = "openmpi"
transport = "shm+tcp"
interface = "fast"
ppn = 1
sweep = { nodes = [1, 2] }

[benchmarks.ar]
benchmarks = ["Allreduce"]
sizes = "8"
options = { max_time = 0.02 }

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:03:00"
poll_interval = 1
poll_max_interval = 2
"""


def test_one_rank_per_node_verified_and_each_nodes_own_fingerprint(testbed, tmp_path):
    from mpibench.files import write_file
    from mpibench.process import run_command

    if not testbed.slurm_conf:
        pytest.skip("the session testbed runs no Slurm (not installed)")
    camp = tmp_path / "tb.toml"
    write_file(camp, CAMPAIGN)
    db = tmp_path / "tb.db"
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "run", "--no-progress",
                       str(camp), "--db", str(db)], env=testbed.env(), cwd=tmp_path,
                      timeout=600)
    assert db.exists(), res.stdout[-2000:] + res.stderr[-2000:]
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = {r["variant"]: dict(r) for r in con.execute("SELECT * FROM runs")}
    fps = {v: json.loads(con.execute("SELECT json FROM fingerprints WHERE id=?",
                                     (r["fingerprint_id"],)).fetchone()[0])
           for v, r in rows.items() if r["fingerprint_id"]}
    con.close()
    assert {v: r["status"] for v, r in rows.items()} == {
        "ompi[nodes=1]": "done", "ompi[nodes=2]": "done"}, (res.stdout[-2000:],
                                                             res.stderr[-2000:])
    one, two = rows["ompi[nodes=1]"], rows["ompi[nodes=2]"]
    # the one-slot allocation's probe ran one rank: nothing between ranks to verify
    assert one["transport_actual"].startswith("none [one rank"), one["transport_actual"]
    # two nodes: the pinned fabric carried the traffic
    assert two["transport_actual"].startswith("tcp") and "; iface fast (" in \
        two["transport_actual"], two["transport_actual"]
    # each node reported its own shape, from inside it
    nodes = fps["ompi[nodes=2]"]["nodes"]
    assert sorted(nodes) == ["tn1", "tn2"], nodes
    for name, shape in nodes.items():
        node = testbed.node(name)
        assert shape["cpuset"] == len(node.cpus), (name, shape)
        assert {"fast", "slow"} <= set(shape["interfaces"]), (name, shape)
        assert shape["shm_bytes"] > 0
    (only,) = fps["ompi[nodes=1]"]["nodes"]
    assert only in ("tn1", "tn2")
    assert fps["ompi[nodes=1]"]["nodes"] != fps["ompi[nodes=2]"]["nodes"]
