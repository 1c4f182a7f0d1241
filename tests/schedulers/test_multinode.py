"""Multi-node paths of issue 19 item 4 that need the machine's MPI stacks: the dry run's job
scripts from the command line (stack discovery), with the real stacks of this machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _mpibench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpibench", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=300)


@pytest.mark.system
def test_dry_run_show_scripts_from_the_command_line(tmp_path):
    """`campaign run --dry-run --show-scripts` on the Slurm example: every distinct script
    with its directives and launcher lines, the cells of each, nothing written."""
    camp = tmp_path / "slurm-local.toml"
    shutil.copy(REPO / "examples" / "slurm-local.toml", camp)
    res = _mpibench("campaign", "run", "--dry-run", "--show-scripts", str(camp), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "7 distinct job script(s) (slurm) for 7 cell(s)" in out
    assert out.count("#!/bin/bash") == 7 and "#SBATCH --nodes=2" in out
    assert "srun --mpi=pmix" in out and "mpiexec.hydra -n 2 -f hostfile" in out
    assert "===== script 1 of 7, 1 cell: ompi[nodes=1] / pingpong #1" in out
    res = _mpibench("campaign", "run", "--show-scripts", "--json", str(camp), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["scheduler"] == "slurm" and len(doc["scripts"]) == 7
    assert sorted(c for s in doc["scripts"] for c in s["cells"]) == \
        sorted(c["id"] for c in doc["cells"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slurm-local.toml"]


# -- hostfiles from the allocation ------------------------------------------------------------
def _hostfile(cluster, tmp_path, env: dict[str, str], ppn: int | None) -> list[str]:
    """Run the job script's hostfile lines as a job would, with the allocation's variables."""
    from mpibench.schedulers import JobRequest, JobStep
    from mpibench.schedulers.slurm import hostfile_lines

    d = tmp_path / "job dir"
    d.mkdir(exist_ok=True)
    step = JobStep("c-1", d, ["true"], {}, d / "o", d / "e")
    script = "\n".join(hostfile_lines(JobRequest("j", [step], d), ppn))
    res = subprocess.run(["bash", "-c", script], env={**os.environ, **cluster.env(),
                                                       **env}, text=True, capture_output=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return (d / "hostfile").read_text().split()


@pytest.mark.slurm
def test_hostfile_has_the_allocations_slots_per_node(slurm_cluster, tmp_path):
    """One line per rank slot, block order: the allocation's tasks per node
    (SLURM_TASKS_PER_NODE, '2(x2),1' = 2 on each of two nodes, then 1), not one line per
    node when the variant gives no ppn (mpirun --hostfile then had 2 slots for 4 ranks:
    'not enough slots'); the variant's ppn when it gives one; PBS's node file as it is."""
    hf = _hostfile(slurm_cluster, tmp_path, {"SLURM_JOB_NODELIST": "n[1-3]",
                                             "SLURM_TASKS_PER_NODE": "2(x2),1"}, None)
    assert hf == ["n1", "n1", "n2", "n2", "n3"]
    hf = _hostfile(slurm_cluster, tmp_path, {"SLURM_JOB_NODELIST": "n[1-2]",
                                             "SLURM_TASKS_PER_NODE": "3(x2)"}, 1)
    assert hf == ["n1", "n2"]
    hf = _hostfile(slurm_cluster, tmp_path, {"SLURM_JOB_NODELIST": "n[1-2]",
                                             "SLURM_TASKS_PER_NODE": "1(x2)",
                                             "SLURM_NTASKS_PER_NODE": "1"}, None)
    assert hf == ["n1", "n2"]
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("a\na\nb\n")
    assert _hostfile(slurm_cluster, tmp_path, {"PBS_NODEFILE": str(nodefile)}, None) == \
        ["a", "a", "b"]


# -- a real Slurm allocation: one-rank probes, mpirun and Hydra from the hostfile ------------
MULTI_TOML = """
[campaign]
name = "multinode"
repeats = 1
timeout = 90

# one rank per node: the nodes=1 point has a one-slot allocation, its probe one rank
# (TCP over lo: n1 and n2 are one host; other interfaces may come and go on a shared machine)
[variants.ompi]
stack = "openmpi"
transport = "tcp"
mca = { btl_tcp_if_include = "lo" }
ppn = 1
sweep = { nodes = [1, 2] }

[variants.mpich-srun]
stack = "mpich"
transport = "tcp"
launcher = "srun"
ppn = 1
sweep = { nodes = [1, 2] }

# mpirun and Hydra inside the allocation, reading the job's hostfile; no ppn: Slurm places
# two tasks on each node and the hostfile must say so
[variants.ompi-hostfile]
stack = "openmpi"
transport = "tcp"
mca = { btl_tcp_if_include = "lo" }
np = 4
nodes = 2
launcher = "template"
launcher_args = ["{exe} --hostfile {hostfile} -np {np} {program}"]

[variants.mpich-hostfile]
stack = "mpich"
transport = "tcp"
np = 4
nodes = 2
launcher = "template"
launcher_args = ["{exe} -f {hostfile} -n {np} {program}"]

[benchmarks.allreduce]
benchmarks = ["Allreduce"]
sizes = "8"
options = { iterations = 10 }
variants = ["ompi", "mpich-srun"]

[benchmarks.where]
command = "bash {campaign_dir}/where.sh"
fom = "wall_time"
variants = ["ompi-hostfile", "mpich-hostfile"]

[scheduler]
name = "slurm"
partition = "debug"
time_limit = "00:03:00"
max_jobs_in_flight = 2
poll_interval = 1
poll_max_interval = 3
"""


@pytest.mark.slurm
def test_one_rank_probes_and_hostfile_launchers_in_a_real_allocation(slurm_cluster,
                                                                     tmp_path):
    """Through the localhost Slurm (n1, n2): the one-rank points verify as n/a (their probe
    asked the one-slot allocation for one rank, not two), the two-node points as tcp; mpirun
    and Hydra started from the job's hostfile put two ranks on each node (block order)."""
    import sqlite3

    from mpibench.process import run_command

    camp = tmp_path / "multinode.toml"
    camp.write_text(MULTI_TOML)
    # the node a rank runs on: Slurm's name in the environment of its launcher's daemon on
    # that node (orted, hydra_pmi_proxy); Hydra hands every rank mpiexec's own environment
    (tmp_path / "where.sh").write_text(
        'r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\n'
        "n=$(tr '\\0' '\\n' </proc/$PPID/environ | sed -n 's/^SLURMD_NODENAME=//p')\n"
        'echo "rank $r on $n"\n')
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "run", "--no-progress",
                       str(camp)], env=slurm_cluster.env(), timeout=420)
    assert (tmp_path / "mpibench.db").exists(), res.stdout[-2000:] + res.stderr[-2000:]
    con = sqlite3.connect(tmp_path / "mpibench.db")
    con.row_factory = sqlite3.Row
    rows = {r["variant"]: dict(r) for r in con.execute("SELECT * FROM runs")}
    fps = {v: json.loads(con.execute("SELECT json FROM fingerprints WHERE id=?",
                                     (r["fingerprint_id"],)).fetchone()[0])
           for v, r in rows.items()}
    con.close()
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert len(rows) == 6
    for v, r in rows.items():
        assert r["status"] == "done", (v, r["reason"], r["stderr_tail"])
        probe_err = Path(r["run_dir"]) / "verify" / "stderr.txt"
        text = probe_err.read_text() if probe_err.exists() else ""
        assert "not enough slots" not in text and "More processors requested" not in text, v
        assert fps[v].get("nodes"), (v, fps[v])        # the node's shape, from the probe
    for v in ("ompi[nodes=1]", "mpich-srun[nodes=1]"):
        assert rows[v]["transport_actual"].startswith("none [one rank"), rows[v]
    for v in ("ompi[nodes=2]", "mpich-srun[nodes=2]"):
        assert rows[v]["transport_actual"].startswith("tcp"), rows[v]
    for v in ("ompi-hostfile", "mpich-hostfile"):
        assert (Path(rows[v]["run_dir"]) / "hostfile").read_text().split() == \
            ["n1", "n1", "n2", "n2"]
        lines = sorted((Path(rows[v]["run_dir"]) / "stdout.txt").read_text().split("\n"))
        assert lines[1:] == ["rank 0 on n1", "rank 1 on n1", "rank 2 on n2",
                             "rank 3 on n2"], (v, lines)
