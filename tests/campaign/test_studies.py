"""The five studies of docs/studies.md, each run in miniature from examples/studies/ (small
sizes, short runs), and each report checked for the study's own table: the gain table with
MB/s, the grid with the best cell per row over 3 launches (under PBS), % of line rate and
half-peak size (under Slurm), the profile's top functions and size-bucket shares with the
cost, and first call apart from mean(std) across two image-version campaigns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpibench.campaign.plan import expand
from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STUDIES = EXAMPLES / "studies"
needs_gmx = pytest.mark.skipif(not shutil.which("gmx_mpi"),
                               reason="GROMACS (gmx_mpi) is not installed")


def _copy(tmp_path: Path, name: str, edit=None) -> Path:
    """The study file with the inputs it names (../gromacs), in a directory of its own."""
    (tmp_path / "studies").mkdir(exist_ok=True)
    if not (tmp_path / "gromacs").exists():
        shutil.copytree(EXAMPLES / "gromacs", tmp_path / "gromacs")
    text = (STUDIES / name).read_text()
    dst = tmp_path / "studies" / name
    dst.write_text(edit(text) if edit else text)
    return dst


# The studies run their ranks on this one host, over TCP where a variant asks for it. Left to
# choose, Open MPI's TCP BTL takes every interface but lo and libfabric's tcp provider the
# first one: on a host running testbeds that includes their host legs (mbt-ID, see
# mpibench.testbed.bed), which vanish when their testbed stops. ci-1 ran beside other
# testbeds: the ofi variant's domain was such a leg and a cell hung until its 300 s timeout
# (the fabric study), and Open MPI's Uniband at 64 KiB (the first size striped over a
# second TCP interface) never finished its first call (the line-rate study). Pinned to lo,
# the TCP traffic stays on the device it used anyway between two local addresses.
PIN_LO = 'interface = "lo"\n'
# The line-rate study's time budget per size, shortened: its launches are 57 sizes (3
# benchmarks x 0:18) and Open MPI's took 3.0-3.2 s each at 0.05 s, 2.1-2.2 s at 0.02 s
# (MPICH's 2.1-2.2 s and 2.0 s); the line-rate table needs values, not settled ones
# (nothing asserts on a time). The fabric study's launches end on their CI target (0.3-1.4 s
# each): a shorter budget would not shorten them.
MAX_TIME, SHORT_MAX_TIME = "max_time = 0.05", "max_time = 0.02"
# The line-rate study up to 64 KiB (0:16; the study goes to 1 MiB, the test went to 256 KiB):
# 64 KiB is the size that was striped over a second TCP interface (above); the two sizes
# beyond it cost the most per sample (Biband: 128 messages a sample) and the table needs a
# peak and a half-peak size, not the link's plateau. The fabric study's IMB set at 0 and 1 KiB
# (the study's 0, 8, 1K, 64K): the gain table is read at 1 KiB and Barrier at 0 B
LINERATE_SIZES, SHORT_LINERATE_SIZES = 'sizes = "0:20"', 'sizes = "0:16"'
FABRIC_SIZES, SHORT_FABRIC_SIZES = 'sizes = "0,8,1K,64K"', 'sizes = "0,1K"'
# The fabric and regression studies' bound np-2 launches without the machine-state probe
# (its default "record" probes before and after each; neither test reads it; the examples'
# run in campaign/test_run.py keeps the default end to end)
PROBE_OFF = '[campaign]\nmachine_probe = "off"\n'


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert cli_main(argv) in (0, 1)
    return json.loads(capsys.readouterr().out)


def test_every_study_and_its_cluster_version_is_a_valid_campaign():
    files = sorted(STUDIES.glob("*.toml"))
    names = {f.stem for f in files}
    assert {"fabric", "grid", "linerate", "tuning", "regression-2025.1", "regression-2025.2",
            "fabric-cluster", "grid-cluster", "linerate-cluster", "tuning-cluster",
            "regression-cluster"} <= names
    for f in files:
        cells = expand(load(f))
        assert cells and len({c.id for c in cells}) == len(cells), f
    for f in ("grid-cluster", "regression-cluster"):
        assert load(STUDIES / f"{f}.toml").scheduler.name == "pbs"
    for f in ("fabric-cluster", "linerate-cluster", "tuning-cluster"):
        s = load(STUDIES / f"{f}.toml")
        assert s.scheduler.name == "slurm" and s.scheduler.modules
        assert s.line_rates, f


@pytest.mark.mpi
@needs_gmx
def test_fabric_study_gain_table_on_the_imb_set_and_the_application(tmp_path, capsys):
    camp = _copy(tmp_path, "fabric.toml", lambda t: t.replace("repeats = 3", "repeats = 2")
                 .replace("-nsteps 200", "-nsteps 50").replace(FABRIC_SIZES, SHORT_FABRIC_SIZES)
                 .replace('transport = "tcp"\n', 'transport = "tcp"\n' + PIN_LO)
                 .replace('transport = "ofi"\n', 'transport = "ofi"\n' + PIN_LO)
                 .replace("[campaign]\n", PROBE_OFF))
    assert camp.read_text().count(PIN_LO) == 2 and SHORT_FABRIC_SIZES in camp.read_text()
    assert PROBE_OFF in camp.read_text()
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    db = str(camp.parent / "mpibench.db")
    obj = _json(capsys, ["compare", "--db", db, "--campaign", "study-fabric", "--gain-table",
                         "--size", "1K", "--baseline", "tcp", "--format", "json"])
    gt = obj["gain_table"]
    benches = {r["benchmark"] for r in gt["rows"]}
    assert {"PingPong", "Sendrecv", "Allreduce", "Alltoall", "Bcast"} <= benches
    pp = next(r for r in gt["rows"] if r["benchmark"] == "PingPong")
    assert pp["size"] == 1024 and pp["tcp_mbps"] > 0 and pp["shm_mbps"] > 0
    assert pp["gain_shm"] > 0 and pp["gain_ucx"] > 0 and pp["gain_ofi"] > 0
    assert any(n.startswith("Barrier: not measured at 1K bytes") for n in gt["notes"])
    app = _json(capsys, ["compare", "--db", db, "--campaign", "study-fabric", "--benchmark",
                         "mdrun", "--baseline", "tcp", "--format", "json"])
    rows = app.get("rows") or app["comparison"]["rows"]
    assert {r["metric"] for r in rows} >= {"ns/day", "wall_time"}
    assert all(r["base_launches"] == 2 for r in rows if r["metric"] == "ns/day")


@pytest.mark.mpi
@needs_gmx
def test_tuning_study_profile_and_cost(tmp_path, capsys):
    camp = _copy(tmp_path, "tuning.toml", lambda t: t.replace("-nsteps 300", "-nsteps 100"))
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    db = str(camp.parent / "mpibench.db")
    md = tmp_path / "tuning.md"
    assert cli_main(["report", "--db", db, "--campaign", "study-tuning", "--baseline",
                     "tcp-none", "-o", "-", "--markdown", str(md), "--no-plots"]) in (0, 1)
    text = md.read_text()
    for heading in ("## MPI profile", "Top 10 MPI functions by share of MPI time",
                    "Messages by size: % of messages / % of bytes",
                    "### Cost and energy", "### Yearly projection"):
        assert heading in text, heading
    assert "Sendrecv" in text or "Alltoall" in text      # Markdown escapes the _
    obj = _json(capsys, ["compare", "--db", db, "--campaign", "study-tuning", "--benchmark",
                         "mdrun", "--baseline", "tcp-none", "--format", "json"])
    proj = obj["projection"]["rows"]
    assert {r["variant"] for r in proj} == {"tcp-none", "tcp-core", "shm-none", "shm-core"}
    assert all(r["jobs_per_year"] == 50000 and r["kwh"] > 0 and r["electricity"] > 0
               for r in proj)
    assert {r["benchmark"] for r in obj["cost"]["rows"]} == {"mdrun"}


@pytest.mark.mpi
def test_regression_study_first_call_apart_from_mean_std_across_images(tmp_path, capsys):
    for name in ("regression-2025.1.toml", "regression-2025.2.toml"):
        camp = _copy(tmp_path, name, lambda t: t.replace("repeats = 3", "repeats = 2")
                     .replace("[campaign]\n", PROBE_OFF))
        assert PROBE_OFF in camp.read_text()
        assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    db = str(tmp_path / "studies" / "mpibench.db")
    obj = _json(capsys, ["compare", "--db", db, "--campaign", "study-regression-2025.1",
                         "--campaign", "study-regression-2025.2", "--benchmark", "Allreduce",
                         "--first-call", "--mean-std", "--format", "json"])
    assert obj["comparison"]["groups"] == ["study-regression-2025.1/ompi",
                                           "study-regression-2025.2/ompi"]
    fc = obj["first_call"]
    assert fc["caption"].startswith("first = time of the first (initialisation) call")
    rec = fc["rows"][0]
    a, b = "study-regression-2025.1/ompi", "study-regression-2025.2/ompi"
    # the first call apart: the table's firsts are the launches' own first calls (one per
    # launch, its median the "first" column), and each launch's 10 per-call samples - the
    # steady state the median, mean and std come from - are the 10 calls after it. Not
    # "first > median": that compares two measured times, and on a loaded machine the 10
    # calls can each wait for the other rank's time slice while the first did not (review R3)
    with Store(Path(db)) as store:
        for s in (a, b):
            camp_id = store.campaign(s.split("/")[0])["id"]
            rows = [r for r in store.results(benchmark="Allreduce")
                    if r["campaign_id"] == camp_id and r["size"] == rec["size"]
                    and r["metric"] == "time"]
            assert len(rows) == 2 and all(r["first"] > 0 for r in rows), rows
            assert all(r["n"] == 10 and len(r["samples"]) == 10 for r in rows)
            assert sorted(rec[f"{s}_firsts"]) == sorted(r["first"] for r in rows)
            assert rec[f"{s}_first"] == pytest.approx(float(np.median(rec[f"{s}_firsts"])))
            assert rec[f"{s}_median"] > 0
            assert rec[f"{s}_mean"] > 0 and rec[f"{s}_std"] >= 0
    assert {r["size"] for r in fc["rows"]} == {8, 1024, 65536}
    # the study's gate (docs/studies.md): the old image's values kept in a reference file,
    # the new image checked against them; exit 1 exactly when the JSON says regression
    ref = tmp_path / "image-2025.1.toml"
    capsys.readouterr()
    assert cli_main(["check", "--db", db, "--campaign", "study-regression-2025.1",
                     "--benchmark", "Allreduce", "--write-reference", str(ref)]) == 0
    assert ref.read_text().count("[[cell]]") >= 3
    capsys.readouterr()
    rc = cli_main(["check", "--db", db, "--campaign", "study-regression-2025.2", "--benchmark",
                   "Allreduce", "--reference", str(ref), "--margin", "10%", "--json"])
    gate = json.loads(capsys.readouterr().out)
    assert rc == (1 if gate["status"] == "regression" else 0), gate
    assert gate["tested"] >= 4 and gate["reference"]["with_spread"] >= 3


@pytest.mark.slurm
def test_linerate_study_under_slurm(slurm_cluster, tmp_path, capsys):
    camp = _copy(tmp_path, "linerate.toml", lambda t: t.replace("repeats = 3", "repeats = 2")
                 .replace(LINERATE_SIZES, SHORT_LINERATE_SIZES).replace(MAX_TIME, SHORT_MAX_TIME)
                 .replace('transport = "tcp"\n', 'transport = "tcp"\n' + PIN_LO))
    assert camp.read_text().count(PIN_LO) == 1 and SHORT_MAX_TIME in camp.read_text()
    assert SHORT_LINERATE_SIZES in camp.read_text()
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    db = str(camp.parent / "mpibench.db")
    obj = _json(capsys, ["compare", "--db", db, "--campaign", "study-linerate", "--baseline",
                         "ompi-tcp", "--format", "json"])
    lr = obj["line_rate"]["rows"]
    assert {(r["variant"], r["benchmark"]) for r in lr} >= {
        ("ompi-tcp", "PingPong"), ("mpich-tcp", "PingPong"), ("ompi-tcp", "Uniband")}
    for r in lr:
        assert r["line_rate_bps"] == 100e9 and r["percent_of_line_rate"] > 0
        assert r["half_peak_size"] <= r["peak_size"]


@pytest.mark.slurm
@needs_gmx
def test_grid_study_under_pbs_best_per_row_over_three_launches(slurm_cluster,
                                                                tmp_path,
                                                                capsys):
    if not shutil.which("qsub"):
        pytest.skip("slurm-wlm-torque (qsub) is not installed")
    camp = _copy(tmp_path, "grid.toml", lambda t: t.replace("-nsteps 200", "-nsteps 50"))
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    db = str(camp.parent / "mpibench.db")
    obj = _json(capsys, ["compare", "--db", db, "--campaign", "study-grid", "--grid",
                         "nodes", "fourierspacing", "--metric", "ns/day", "--format",
                         "json"])
    grids = [v for k, v in obj.items() if k.startswith("grid")]
    assert grids
    g = grids[0]
    rows = g["rows"]
    assert {r["nodes"] for r in rows} == {1, 2}
    assert {r["fourierspacing"] for r in rows} == {0.12, 0.16}
    assert all(r["launches"] == 3 and len(r["launch_values"]) == 3 for r in rows)
    best = [r for r in rows if r["best_in_row"]]
    assert sorted(r["nodes"] for r in best) == [1, 2]     # one best column per node count
