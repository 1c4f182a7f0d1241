"""More ranks than cores: one warning per run, and the fingerprint records it. Launchers that
place ranks differently by default: one note per run."""

from __future__ import annotations

import os
import socket

import pytest

from mpibench.campaign.runner import binding_notes, oversubscription_notes
from mpibench.execute import Variant, oversubscribed
from mpibench.stacks import Stack


def test_oversubscribed_only_for_local_launches_beyond_the_cores():
    cores = os.cpu_count() or 1
    v = Variant("a", "mpich", np=cores + 1)
    assert oversubscribed(v) == {"ranks": cores + 1, "cores": cores}
    assert oversubscribed(Variant("b", "mpich", np=cores)) is None
    assert oversubscribed(Variant("c", "mpich", np=cores + 1, hosts=["n1", "n2"])) is None
    assert oversubscribed(Variant("d", "mpich", np=64, nodes=4)) is None
    here = socket.gethostname()
    assert oversubscribed(v, ranks_per_host={here: cores + 2}) == {"ranks": cores + 2,
                                                                   "cores": cores}
    assert oversubscribed(v, ranks_per_host={"elsewhere": 99}) is None


def test_one_note_for_the_whole_run():
    cores = os.cpu_count() or 1
    variants = {"mpich": Variant("mpich", "mpich", np=cores + 1),
                "ompi": Variant("ompi", "openmpi", np=cores + 2),
                "ok": Variant("ok", "openmpi", np=1)}
    notes = oversubscription_notes(variants)
    assert len(notes) == 1
    assert "mpich (np" in notes[0] and "ompi (np" in notes[0] and "ok" not in notes[0]
    assert f"{cores} core(s)" in notes[0] and "fingerprint" in notes[0]
    assert oversubscription_notes({"ok": variants["ok"]}) == []


def test_one_note_when_launchers_bind_differently_and_bind_is_unset():
    stacks = {"openmpi": Stack(name="openmpi", kind="openmpi", launcher_kind="mpirun-openmpi"),
              "mpich": Stack(name="mpich", kind="mpich", launcher_kind="mpiexec-hydra"),
              "mpich2": Stack(name="mpich2", kind="mpich", launcher_kind="mpiexec-hydra")}
    mixed = {"ompi": Variant("ompi", "openmpi"), "mp": Variant("mp", "mpich"),
             "mp2": Variant("mp2", "mpich2")}
    notes = binding_notes(mixed, stacks)
    assert len(notes) == 1
    assert "ompi (launcher binds" in notes[0] and "mp, mp2 (launcher does not bind)" in notes[0]
    assert 'bind = "core"' in notes[0]
    # like with like: every launcher unbound, or binding asked for on the unbound side
    assert binding_notes({"mp": mixed["mp"], "mp2": mixed["mp2"]}, stacks) == []
    told = {"ompi": mixed["ompi"], "mp": Variant("mp", "mpich", bind="core")}
    assert binding_notes(told, stacks) == []
    # a launcher other than the stack's own (srun) has its own defaults: not judged here
    srun = {"ompi": mixed["ompi"], "mp": Variant("mp", "mpich", launcher="srun")}
    assert binding_notes(srun, stacks) == []


@pytest.mark.mpi
def test_a_run_beyond_the_cores_warns_once_and_the_fingerprint_says_so(tmp_path, capsys,
                                                                       monkeypatch):
    from mpibench.cli import main as cli_main
    from mpibench.store import Store

    cores = os.cpu_count() or 1
    if cores > 3:
        pytest.skip("needs a machine with fewer than 4 cores (3 ranks must oversubscribe)")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.db"
    rc = cli_main(["run", "PingPong", "--stack", "openmpi", "--np", "3", "--sizes", "0",
                   "--repeats", "2", "--max-time", "0.05", "--db", str(db), "--name", "o"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert err.count("more ranks than") == 1, err
    with Store(db, readonly=True) as s:
        fps = {r["fingerprint_id"] for r in s.runs()}
        assert all(s.fingerprint(f)["oversubscribed"] == {"ranks": 3, "cores": cores}
                   for f in fps), [s.fingerprint(f) for f in fps]
