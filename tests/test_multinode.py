"""Multi-node paths of issue 19 item 4 that need the machine's MPI stacks: the dry run's job
scripts from the command line (stack discovery), with the real stacks of this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
