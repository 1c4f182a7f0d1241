"""Recovery touches only its own campaign's cells and never a live harness's processes:
one store shared by campaigns with the same name, copied campaign directories, moved ones."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from mpibench.campaign.runner import CampaignRunner, harness_alive, harness_token
from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.process import start_ticks
from mpibench.store import Store

CAMPAIGN = """
[campaign]
name = "shared"
repeats = 1
[variants.a]
stack = "openmpi"
[benchmarks.app]
command = "echo {x}"
params = { x = [1, 2] }
"""


def write_campaign(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / "c.toml"
    p.write_text(CAMPAIGN)
    return p


@pytest.fixture
def sleeper(tmp_path):
    """A process standing for a live launch, with its working directory in a run dir."""
    procs = []

    def start(cwd: Path) -> subprocess.Popen:
        cwd.mkdir(parents=True, exist_ok=True)
        p = subprocess.Popen(["sleep", "60"], cwd=cwd, start_new_session=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def mark_running(store: Store, runner: CampaignRunner, cell_id: str, harness: str) -> Path:
    run_dir = runner.runs_root / cell_id
    store.set_run(cell_id, "running", run_dir=str(run_dir), harness=harness)
    return run_dir


def test_copy_of_a_campaign_sharing_the_store_is_refused_untouched(tmp_path, sleeper):
    db = tmp_path / "shared.db"
    a = load(write_campaign(tmp_path / "a"))
    with Store(db) as store:
        ra = CampaignRunner(a, store, [])
        _, cells, _ = ra.sync()
        run_dir = mark_running(store, ra, cells[0].id, "elsewhere 1 1")
        launch = sleeper(run_dir)
        b = load(write_campaign(tmp_path / "b"))  # same campaign, another directory
        with pytest.raises(UsageError, match=r"already in the store .*\(a copy"):
            CampaignRunner(b, store, []).sync()
        assert store.run(cells[0].id)["status"] == "running"
        assert len(store.campaigns()) == 1  # the refused copy left no campaign row
    assert launch.poll() is None


def test_copied_directory_with_its_store_never_kills_the_original(tmp_path, sleeper):
    a_dir = tmp_path / "a"
    a = load(write_campaign(a_dir))
    with Store(a_dir / "mpibench.db") as store:
        ra = CampaignRunner(a, store, [])
        _, cells, _ = ra.sync()
        run_dir = mark_running(store, ra, cells[0].id, "elsewhere 1 1")
    launch = sleeper(run_dir)
    shutil.copytree(a_dir, tmp_path / "copy", ignore=shutil.ignore_patterns("runs"))
    copy = load(tmp_path / "copy" / "c.toml")
    with Store(tmp_path / "copy" / "mpibench.db") as store:
        rc = CampaignRunner(copy, store, [])
        with pytest.raises(UsageError, match="already in the store"):
            rc.sync()
        # resetting a copied row never kills what its run_dir points at (the original's
        # directory, outside the copy's runs/)
        rc._reset(store.run(cells[0].id))
    assert launch.poll() is None


def test_recovery_leaves_cells_of_a_live_harness_alone(tmp_path, sleeper):
    a = load(write_campaign(tmp_path / "a"))
    with Store(tmp_path / "s.db") as store:
        ra = CampaignRunner(a, store, [])
        cid, cells, _ = ra.sync()
        run_dir = ra.runs_root / cells[0].id
        launch = sleeper(run_dir)
        live = f"{os.uname().nodename} {launch.pid} {start_ticks(launch.pid)}"
        assert harness_alive(live)
        mark_running(store, ra, cells[0].id, live)
        dead = mark_running(store, ra, cells[1].id, f"{os.uname().nodename} 1 0")
        assert CampaignRunner(a, store, []).recover(cells, cid) == (1, [])
        assert store.run(cells[0].id)["status"] == "running"
        assert store.run(cells[1].id)["status"] == "pending"
        assert dead.name == cells[1].id
    assert launch.poll() is None


def test_recovery_only_reads_its_own_campaigns_rows(tmp_path):
    a = load(write_campaign(tmp_path / "a"))
    other = tmp_path / "o"
    other.mkdir()
    (other / "c.toml").write_text(CAMPAIGN.replace('"shared"', '"other"'))
    o = load(other / "c.toml")
    with Store(tmp_path / "s.db") as store:
        ra, ro = CampaignRunner(a, store, []), CampaignRunner(o, store, [])
        cid_a, cells_a, _ = ra.sync()
        _, cells_o, _ = ro.sync()
        mark_running(store, ro, cells_o[0].id, "gone 1 1")
        # a plan that (wrongly) named the other campaign's cell still does not reach it
        assert ra.recover(cells_a + cells_o[:1], cid_a) == (0, [])
        assert store.run(cells_o[0].id)["status"] == "running"


def test_moved_campaign_keeps_its_cells(tmp_path):
    a_dir = tmp_path / "a"
    a = load(write_campaign(a_dir))
    with Store(a_dir / "mpibench.db") as store:
        _, cells, _ = CampaignRunner(a, store, []).sync()
        store.set_run(cells[0].id, "done")
    shutil.move(a_dir, tmp_path / "moved")
    moved = load(tmp_path / "moved" / "c.toml")
    with Store(tmp_path / "moved" / "mpibench.db") as store:
        cid, cells2, _ = CampaignRunner(moved, store, []).sync()
        assert [c.id for c in cells2] == [c.id for c in cells]
        assert store.run(cells[0].id)["status"] == "done"
        assert store.campaign(cid)["file"] == str(moved.path)
        assert len(store.campaigns()) == 1


def test_harness_token_names_this_process():
    assert harness_alive(harness_token())
    assert not harness_alive("another-host 1 1")
    assert not harness_alive(harness_token().rsplit(" ", 1)[0] + " 0")  # PID reused
