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

from slurm_cluster import slurm_cluster  # noqa: F401  (session fixture)

REPO = Path(__file__).resolve().parents[1]


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
def test_hostfile_has_the_allocations_slots_per_node(slurm_cluster, tmp_path):  # noqa: F811
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
