"""The multi-node studies that run on the testbed (examples/studies/testbed-*.toml,
docs/studies.md): every file is a valid campaign whose variants name the testbed's nodes and
pin its fabrics with the matching line rate; the line-rate study runs for real (tiny), core
and IMB side by side, on the session testbed."""

from __future__ import annotations

import json

import pytest

from mpibench.campaign.plan import expand
from mpibench.campaign.spec import load
from support.common import REPO
from support.testbed_cluster import FABRICS

STUDIES = REPO / "examples" / "studies"
TESTBED_STUDIES = ("testbed-fabric", "testbed-linerate", "testbed-placement",
                   "testbed-scaling")
RATES = {f.name: f.rate_bps for f in FABRICS}


@pytest.mark.parametrize("name", TESTBED_STUDIES)
def test_testbed_study_is_a_campaign_for_the_testbed(name):
    spec = load(STUDIES / f"{name}.toml")
    cells = expand(spec)
    assert cells and len({c.id for c in cells}) == len(cells)
    for v in spec.variants:
        assert v.hosts and all(h.startswith("tn") for h in v.hosts), v
        assert v.interface in RATES, v
        assert v.transport == "shm+tcp"
        if v.name in spec.line_rates:  # the line rate is the fabric's configured rate
            assert spec.line_rates[v.name][1] == RATES[v.interface], v.name


def test_fabric_study_compares_both_fabrics_at_one_and_two_nodes():
    cells = expand(load(STUDIES / "testbed-fabric.toml"))
    seen = {(c.variant.interface, c.variant.nodes, c.group.name) for c in cells}
    for fabric in ("fast", "slow"):
        assert (fabric, 1, "mdrun") in seen and (fabric, 2, "mdrun") in seen
        assert (fabric, 2, "imb-set") in seen and (fabric, 1, "imb-set") not in seen


@pytest.mark.system
@pytest.mark.mpi
def test_linerate_study_runs_on_the_testbed_core_and_imb_side_by_side(testbed, tmp_path,
                                                                      capsys):
    from mpibench import fabric as fb
    from mpibench.cli import main as cli_main

    peers = REPO.parent / "shared" / "peers" / "imb-2021.11.tar.gz"
    if not peers.exists():
        pytest.skip(f"no IMB tarball at {peers}")
    text = (STUDIES / "testbed-linerate.toml").read_text()
    text = text.replace("repeats = 3", "repeats = 1").replace('"0,1K,1M,4M"', '"0,4M"')
    text = text.replace("max_time = 0.5", "max_time = 0.05").replace(
        '"-time", "2"', '"-time", "0.5", "-iter", "20"')
    text = text.replace('"../../../shared/peers/imb-2021.11.tar.gz"', json.dumps(str(peers)))
    text = text.split("[variants.mpich-fast]")[0] + "[benchmarks.pt2pt]" + \
        text.split("[benchmarks.pt2pt]", 1)[1]  # Open MPI only: one IMB build
    res, camp, db = fb.run_campaign(testbed, text, tmp_path, timeout=900)
    assert res.ok, (res.stdout[-2000:], res.stderr[-2000:])
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(db), "--campaign", "testbed-linerate",
                     "--baseline", "ompi-slow", "--format", "json"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    rows = {(r["variant"], r["benchmark"]): r for r in doc["line_rate"]["rows"]}
    for v, rate in (("ompi-fast", 4e9), ("ompi-slow", 1e9)):
        # the core and the real IMB-MPI1 measured the same PingPong, side by side
        for tool in ("core", "imb"):
            r = rows[(v, f"PingPong ({tool})")]
            assert r["line_rate_bps"] == rate
            # a shaper only slows: the peak (at 4 MiB) stays under the link's payload rate
            assert r["percent_of_line_rate"] <= 95.64 * 1.10, (v, tool, r)
