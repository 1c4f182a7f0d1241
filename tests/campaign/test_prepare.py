"""An application's preparation (`prepare`: GROMACS solvate + minimisation + grompp) runs once
per campaign, variant or parameter value, is reused by every cell, and is never timed."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mpibench.campaign.plan import expand
from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.errors import UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CAMPAIGN = """
[campaign]
name = "prep"
repeats = 2
timeout = 300
verify_transport = false
[defaults]
stack = "openmpi"
np = 1
[variants.shm]
transport = "shm"
[variants.tcp]
transport = "tcp"
[benchmarks.md]
inputs = ["gromacs/topol.top", "gromacs/md.mdp", "gromacs/em.mdp"]
prepare = [
  "gmx_mpi solvate -cs spc216.gro -box 2.0 2.0 2.0 -o conf.gro -p topol.top",
  "gmx_mpi grompp -f em.mdp -c conf.gro -p topol.top -o em.tpr -maxwarn 1",
  "gmx_mpi mdrun -deffnm em -ntomp 1",
]
prepare_per = PER
setup = "gmx_mpi grompp -f md.mdp -c em.gro -p topol.top -o run.tpr -maxwarn 1"
command = "gmx_mpi mdrun -deffnm run -nsteps {steps} -ntomp 1 -noconfout"
params = { steps = [20, 40] }
fom = { name = "ns/day", regex = 'Performance:\\s+([0-9.]+)', unit = "ns/day", better = "higher", source = "stderr" }
"""


def _campaign(tmp_path: Path, per: str = "[]") -> Path:
    shutil.copytree(EXAMPLES / "gromacs", tmp_path / "gromacs")
    p = tmp_path / "prep.toml"
    p.write_text(CAMPAIGN.replace("PER", per))
    return p


def test_prepare_is_part_of_the_cell_id_only_when_used(tmp_path):
    with_prep = load(_campaign(tmp_path))
    no_prep = load(_write(tmp_path, CAMPAIGN.replace("PER", "[]").split("prepare = [")[0]
                          + "setup" + CAMPAIGN.split("\nsetup", 1)[1]))
    assert "prepare" in with_prep.groups[0].definition()
    assert "prepare" not in no_prep.groups[0].definition()
    assert not {c.id for c in expand(with_prep)} & {c.id for c in expand(no_prep)}


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "other.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("per, problem", [
    ('["np"]', 'prepare_per[0]: got \'np\'; expected "variant" or a parameter'),
    ('"steps"', "prepare_per: got 'steps'"),
])
def test_prepare_per_names_what_the_preparation_depends_on(tmp_path, per, problem):
    with pytest.raises(UsageError) as exc:
        load(_campaign(tmp_path, per))
    assert problem in str(exc.value), str(exc.value)


def test_a_placeholder_the_scope_does_not_have_is_refused(tmp_path):
    camp = _campaign(tmp_path)
    camp.write_text(camp.read_text().replace("-box 2.0 2.0 2.0", "-box {steps} 2 2"))
    with pytest.raises(UsageError) as exc:
        load(camp)
    assert "unknown placeholder {steps}" in str(exc.value)
    assert "name what it depends on in prepare_per" in str(exc.value)


def _setup_lines(run_dir: Path) -> str:
    return (run_dir / "setup.out").read_text()


@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which("gmx_mpi"), reason="GROMACS (gmx_mpi) is not installed")
def test_gromacs_minimisation_runs_once_and_only_production_is_timed(tmp_path):
    # one launch per cell (2 variants x 2 steps) shares the preparation as well as two did;
    # the second repeat comes below, in a later run. Each launch is a grompp and an mdrun
    # (~3 s at load 5): 8 launches, not 12
    camp = _campaign(tmp_path)
    camp.write_text(camp.read_text().replace("repeats = 2", "repeats = 1"))
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    runs_root = tmp_path / "runs"
    prep = list((runs_root / "_prepare" / "md").iterdir())
    assert len(prep) == 1                              # once for the whole campaign
    assert (prep[0] / "work" / "em.gro").exists()       # the minimised structure
    log = (prep[0] / "prepare.log").read_text()
    assert "Steepest Descents" in log
    con = sqlite3.connect(tmp_path / "mpibench.db")
    runs = con.execute("SELECT id, status, elapsed FROM runs").fetchall()
    assert len(runs) == 4 and {s for _, s, _ in runs} == {"done"}
    said = [_setup_lines(runs_root / rid) for rid, _, _ in runs]
    assert sum("prepared" in s for s in said) == 1
    assert sum("reusing" in s for s in said) == 3
    # the production ran on the minimised structure of the shared preparation
    for rid, _, _ in runs:
        assert (runs_root / rid / "em.gro").read_bytes() == \
            (prep[0] / "work" / "em.gro").read_bytes()
    # wall_time is the launch alone: well below the step time of the cell that prepared
    walls = dict(con.execute("SELECT run_id, mean FROM results WHERE metric = 'wall_time'"))
    first = next(rid for (rid, _, _), s in zip(runs, said, strict=True) if "prepared" in s)
    t = json.loads((runs_root / first / "timing.json").read_text())
    assert walls[first] <= t["finished"] - t["launch_started"] + 0.05
    assert t["launch_started"] - t["started"] > 0.5     # prepare + grompp came before
    fp = json.loads(con.execute(
        "SELECT f.json FROM fingerprints f JOIN runs u ON u.fingerprint_id = f.id "
        "LIMIT 1").fetchone()[0])
    assert fp["application"]["prepare"]["dir"] == prep[0].name
    con.close()

    # a second run reuses it (nothing pending: nothing runs); a new repeat reuses it too
    camp.write_text(camp.read_text().replace("repeats = 1", "repeats = 2"))
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    assert len(list((runs_root / "_prepare" / "md").iterdir())) == 1
    con = sqlite3.connect(tmp_path / "mpibench.db")
    new = [rid for (rid,) in con.execute("SELECT id FROM runs")
           if rid not in {r for r, _, _ in runs}]
    con.close()
    assert len(new) == 4 and all("reusing" in _setup_lines(runs_root / rid) for rid in new)


@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which("gmx_mpi"), reason="GROMACS (gmx_mpi) is not installed")
def test_prepare_per_parameter_and_a_failing_prepare(tmp_path):
    camp = _campaign(tmp_path, '["steps"]')
    text = camp.read_text().replace("repeats = 2", "repeats = 1").replace(
        "[variants.tcp]\ntransport = \"tcp\"\n", "")
    camp.write_text(text)
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    assert len(list((tmp_path / "runs" / "_prepare" / "md").iterdir())) == 2   # per steps

    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copytree(EXAMPLES / "gromacs", bad / "gromacs")
    (bad / "prep.toml").write_text(text.replace("-f em.mdp", "-f missing.mdp"))
    assert cli_main(["campaign", "run", "--no-progress", str(bad / "prep.toml")]) == 1
    con = sqlite3.connect(bad / "mpibench.db")
    reasons = [r for (r,) in con.execute("SELECT reason FROM runs")]
    con.close()
    assert all(r.startswith("setup command (the group's prepare) failed") for r in reasons), \
        reasons
    # a failed preparation is not reused: no marker
    assert not list((bad / "runs" / "_prepare" / "md").glob("*/.prepared"))


OPTION_NAMED = """
[campaign]
name = "dash"
repeats = 1
verify_transport = false
[variants.a]
stack = "openmpi"
np = 1
[benchmarks.app]
inputs = ["--help", "-r"]
prepare = ["sh -c 'cat ./--help ./-r > joined.txt'"]
command = "sh -c 'echo value $(wc -l < joined.txt)'"
fom = { name = "lines", regex = 'value ([0-9]+)', unit = "lines", better = "higher" }
"""


@pytest.mark.mpi
def test_inputs_named_like_options_reach_the_prepare(tmp_path):
    # an input named --help reached `cp -a --help "$d/work/"`: cp printed its help, exited 0,
    # and the preparation ran without its input
    (tmp_path / "--help").write_text("one\ntwo\n")
    (tmp_path / "-r").write_text("three\n")
    camp = tmp_path / "dash.toml"
    camp.write_text(OPTION_NAMED)
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    con = sqlite3.connect(tmp_path / "mpibench.db")
    vals = [v for (v,) in con.execute("SELECT mean FROM results WHERE metric = 'lines'")]
    con.close()
    assert vals == [3.0]
