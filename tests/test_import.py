"""`mpibench import` and mpibench.importer: rows land complete and correct in the store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mpibench import importer
from mpibench.cli import main
from mpibench.errors import UsageError
from mpibench.importer import import_files, parse_line_rate
from mpibench.store import Store

DATA = Path(__file__).parent / "data"
IMB = DATA / "imb"
TCP = IMB / "imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt"
VADER = IMB / "imb2021.11-openmpi4.1.4-np2-pingpong-btl-vader.txt"
ALL_FIXTURES = sorted(p for d in ("imb", "osu", "nccl", "netpipe") for p in (DATA / d).iterdir()
                      if p.suffix in (".txt", ".out", ".json"))


@pytest.fixture()
def store(tmp_path):
    with Store(tmp_path / "t.db") as s:
        yield s


def rows(store, run_id):
    return list(store.results([run_id], with_samples=False))


@pytest.mark.parametrize("text, bps", [
    ("100Gb/s", 100e9), ("25Gbit/s", 25e9), ("12.5GB/s", 100e9), ("25GbE", 25e9),
    ("200G", 200e9), ("100Gbps", 100e9), ("800Mb/s", 800e6), (10e9, 10e9),
])
def test_line_rate_is_bits_per_second(text, bps):
    assert parse_line_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["fast", "100Gb/h", "-5Gb/s", "0", ""])
def test_bad_line_rate(text):
    with pytest.raises(UsageError, match="--line-rate"):
        parse_line_rate(text)


def test_import_pingpong_complete_rows_and_provenance(store):
    rep = import_files(store, [TCP], label="tcp", line_rate="10Gb/s")
    (f,) = rep.files
    assert (f.status, f.tool, f.version, f.rows, f.blocks, f.np) == ("imported", "IMB-MPI1",
                                                                     "2021.11", 24, 1, [2])
    assert f.run_id.startswith("imp-") and len(f.run_id) == 20 and rep.exit_code == 0
    run = store.run(f.run_id)
    assert (run["variant"], run["label"], run["source"], run["status"]) == ("tcp", "tcp",
                                                                           "import", "done")
    camp = store.campaign(run["campaign_id"])
    assert camp["name"] == "imports"
    spec = json.loads(run["spec_json"])
    assert spec["line_rate_bps"] == 10e9 and spec["line_rate"] == "10Gb/s"
    assert spec["import"]["sha256"] == f.sha256 and spec["import"]["format"] == "imb"
    fp = store.fingerprint(run["fingerprint_id"])
    assert fp["tool"] == "IMB-MPI1" and fp["tool_version"] == "2021.11" and fp["np"] == [2]
    assert fp["argv"] == "./IMB-MPI1 PingPong -msglog 0:22"
    # '# Date : Sun Nov 22 07:01:49 2026' in the file, read as UTC
    assert run["started"] == 1795330909.0 and spec["import"]["started_from"].startswith("file")
    imp = store.find_import(f.sha256)
    assert imp["run_id"] == f.run_id and imp["tool"] == "IMB-MPI1"
    got = {r["size"]: r for r in rows(store, f.run_id)}
    r = got[4194304]
    assert (r["benchmark"], r["np"], r["mean"], r["bandwidth_mbps"]) == ("PingPong", 2, 8775.88,
                                                                        477.94)
    assert (r["statistic"], r["n"], r["median"], r["ci_low"]) == ("mean", None, None, None)
    assert (r["metric"], r["unit"], r["better"], r["status"]) == ("time", "us", "lower", "ok")
    assert r["extra"]["repetitions"] == 10


def test_importing_twice_does_not_duplicate(store):
    first = import_files(store, [TCP, VADER])
    again = import_files(store, [TCP, VADER])
    assert [f.status for f in first.files] == ["imported", "imported"]
    assert [f.status for f in again.files] == ["skipped", "skipped"] and again.exit_code == 0
    assert "already imported" in again.files[0].note
    n = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert n == 48
    assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2


def test_same_content_under_another_name_is_skipped(store, tmp_path):
    copy = tmp_path / "renamed.txt"
    shutil.copy(TCP, copy)
    import_files(store, [TCP])
    rep = import_files(store, [copy])
    assert rep.files[0].status == "skipped"


def test_variant_derived_from_tool_and_file_name(store):
    rep = import_files(store, [VADER])
    assert rep.files[0].variant == "imb:imb2021.11-openmpi4.1.4-np2-pingpong-btl-vader"


def test_stack_named_in_file_goes_into_variant_and_fingerprint(store, tmp_path):
    p = tmp_path / "run7.txt"
    p.write_text("# MPI library: Open MPI v4.1.6, package: Debian\n" + TCP.read_text())
    rep = import_files(store, [p])
    f = rep.files[0]
    assert f.variant == "imb:openmpi4.1.6:run7"
    fp = store.fingerprint(store.run(f.run_id)["fingerprint_id"])
    assert fp["mpi_library"] == ["Open MPI v4.1.6"]


def test_every_fixture_imports(store):
    rep = import_files(store, ALL_FIXTURES, np=3)
    assert all(f.status == "imported" for f in rep.files), [
        (f.path, f.problems) for f in rep.files if f.status != "imported"]
    total = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert total == sum(f.rows for f in rep.files) > 2000
    # OSU collectives state no np: --np filled it in and says so
    osu = next(f for f in rep.files if f.path.endswith("osu7.4-openmpi4.1.4-np3-osu_bcast.txt"))
    r = rows(store, osu.run_id)[0]
    assert r["np"] == 3 and r["extra"]["np_from"] == "--np"
    nccl = next(f for f in rep.files if f.path.endswith(".json"))
    r = [x for x in rows(store, nccl.run_id) if x["size"] == 134217728][0]
    assert r["busbw_mbps"] == 202750.0 and r["np"] == 8


def test_truncated_file_is_imported_with_a_reason(store):
    rep = import_files(store, [IMB / "imb2021.11-openmpi4.1.4-np2-all-truncated-timeout3.txt"])
    (f,) = rep.files
    assert f.status == "imported" and f.truncated and f.rows == 71
    assert f.problems[0].endswith("complete rows kept") and ":135: " in f.problems[0]
    run = store.run(f.run_id)
    assert run["status"] == "done" and run["reason"].startswith("truncated: ")


def test_failure_rows_are_stored_with_status(store):
    rep = import_files(store, [IMB / "imb2021.11-mpich4.0.2-np3-collectives.txt"])
    (f,) = rep.files
    assert f.failed_rows == 3
    fails = [r for r in rows(store, f.run_id) if r["status"] != "ok"]
    assert {(r["benchmark"], r["size"], r["np"], r["status"]) for r in fails} == {
        ("Allreduce", 16, 3, "time-out"), ("Reduce", 16, 3, "time-out"),
        ("Reduce_scatter", 16, 3, "time-out")}
    assert all(r["mean"] is None and "Time limit" in r["reason"] for r in fails)


def test_bad_files_never_crash_and_exit_2_when_nothing_imported(store, tmp_path):
    binary = tmp_path / "core.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    unknown = tmp_path / "notes.txt"
    unknown.write_text("meeting notes\nnothing to see\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    rep = import_files(store, [binary, unknown, empty, tmp_path / "missing.txt", tmp_path])
    assert rep.exit_code == 2 and not rep.imported
    msgs = [f.problems[0] for f in rep.files]
    assert msgs[0].startswith(f"{binary}: binary data")
    assert msgs[1].startswith(f"{unknown}:1: unrecognised format")
    assert msgs[2].startswith(f"{empty}: empty file")
    assert msgs[3].endswith("missing.txt: no such file")
    assert "is a directory" in msgs[4]
    assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    rep = import_files(store, [binary, TCP])
    assert rep.exit_code == 0 and len(rep.imported) == 1


def test_bad_line_rate_writes_nothing(store):
    with pytest.raises(UsageError):
        import_files(store, [TCP], line_rate="quick")
    assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_cli_json_and_exit_codes(tmp_path, capsys):
    db = str(tmp_path / "c.db")
    assert main(["import", str(TCP), "--db", db, "--json", "--label", "tcp"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["imported"] == 1 and out["rows"] == 24
    assert out["files"][0]["variant"] == "tcp" and out["files"][0]["tool"] == "IMB-MPI1"
    assert main(["import", str(TCP), "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 1
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"\x00\x01\x02" * 1000)
    assert main(["import", str(bad), "--db", db]) == 2
    captured = capsys.readouterr()
    assert "binary data" in captured.err and "not imported" in captured.out
    assert main(["import", str(TCP), "--db", db, "--line-rate", "soon"]) == 2


def test_cli_table(tmp_path, capsys):
    db = str(tmp_path / "c.db")
    trunc = IMB / "imb2021.11-mpich4.0.2-np2-all-truncated-timeout3.txt"
    assert main(["import", str(trunc), str(VADER), "--db", db]) == 0
    cap = capsys.readouterr()
    for word in ("IMB-MPI1", "2021.11", "137", "truncated", "imported"):
        assert word in cap.out
    assert "warning:" in cap.err and ":219: output ends inside the Reduce table" in cap.err


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    out = capsys.readouterr().out
    assert "--line-rate" in out and "examples:" in out and "mpibench compare" in out


def test_two_fabrics_gain_and_line_rate_in_one_compare(tmp_path, capsys):
    """Done-means of issue 6: two imported IMB PingPong files, one compare command."""
    db = str(tmp_path / "f.db")
    assert main(["import", str(TCP), "--db", db, "--label", "tcp", "--line-rate",
                 "10Gb/s", "--json"]) == 0
    assert main(["import", str(VADER), "--db", db, "--label", "vader", "--line-rate",
                 "100Gb/s", "--json"]) == 0
    capsys.readouterr()
    rc = main(["compare", "--db", db, "--campaign", "imports", "--variant", "tcp",
               "--variant", "vader", "--gain-table", "--size", "4M"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "1.81x" in out                       # 8775.88 / 4859.13
    assert "38.2%" in out and "6.9%" in out     # 477.94 MB/s of 1250, 863.18 of 12500


def test_campaign_spec_is_kept(store):
    store.add_campaign("imports", spec={"line_rate": "200Gb/s"})
    import_files(store, [TCP])
    assert json.loads(store.campaign("imports")["spec_json"]) == {"line_rate": "200Gb/s"}


def test_a_file_failing_mid_write_leaves_nothing_and_the_batch_keeps_the_others(
        store, monkeypatch, tmp_path):
    """Files share a transaction (importer.BATCH_FILES) but each has its own savepoint."""
    other = tmp_path / "other.txt"
    other.write_text(TCP.read_text().replace("8775.88", "8775.89"))
    real = store.record_import
    calls = []

    def fail_second(sha, *args):
        calls.append(sha)
        if len(calls) == 2:                 # after the run and its 24 rows were inserted
            raise sqlite3.IntegrityError("disk says no")
        return real(sha, *args)

    monkeypatch.setattr(store, "record_import", fail_second)
    rep = import_files(store, [TCP, other, VADER])
    assert [f.status for f in rep.files] == ["imported", "failed", "imported"]
    assert "not stored (disk says no); nothing of this file was written" in \
        rep.files[1].problems[-1]
    assert store.run(rep.files[1].sha256 and f"imp-{rep.files[1].sha256[:16]}") is None
    with Store(store.path) as fresh:          # committed: another connection sees it
        assert fresh.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 48
        assert fresh.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    monkeypatch.setattr(store, "record_import", real)
    again = import_files(store, [TCP, other, VADER])
    assert [f.status for f in again.files] == ["skipped", "imported", "skipped"]


def test_interrupted_import_keeps_the_finished_files(store, monkeypatch, tmp_path):
    paths = []
    for k in range(4):
        p = tmp_path / f"run{k}.txt"
        p.write_text(TCP.read_text().replace("8775.88", f"{8000 + k}.00"))
        paths.append(p)
    real = importer._load

    def interrupt_third(path, *args):
        if path.name == "run2.txt":
            raise KeyboardInterrupt
        return real(path, *args)

    monkeypatch.setattr(importer, "_load", interrupt_third)
    with pytest.raises(KeyboardInterrupt):
        import_files(store, paths)
    with Store(store.path) as fresh:
        assert fresh.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
        assert fresh.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 48
    monkeypatch.setattr(importer, "_load", real)
    rep = import_files(store, paths)
    assert [f.status for f in rep.files] == ["skipped", "skipped", "imported", "imported"]
    assert store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 96


def test_batches_commit_and_write_every_row(store, monkeypatch, tmp_path):
    monkeypatch.setattr(importer, "BATCH_FILES", 2)
    paths = []
    for k in range(5):
        p = tmp_path / f"r{k}.txt"
        p.write_text(VADER.read_text().replace("4859.13", f"{4000 + k}.00"))
        paths.append(p)
    rep = import_files(store, paths, label="v")
    assert [f.status for f in rep.files] == ["imported"] * 5
    assert not store.db.in_transaction
    got = sorted(r["mean"] for r in store.results(None, with_samples=False)
                 if r["size"] == 4194304)
    assert got == [4000.0, 4001.0, 4002.0, 4003.0, 4004.0]


def test_truncated_reason_is_where_the_file_ended_not_a_later_warning(store):
    # a killed OSU collective: the np warning comes after the parser's truncation note
    rep = import_files(store, [DATA / "osu" / "osu7.4-mpich4.0.2-np3-osu_allreduce.txt"])
    (f,) = rep.files
    assert f.truncated and "pass --np N" in f.problems[-1]
    reason = store.run(f.run_id)["reason"]
    assert reason.startswith("truncated: ") and "the run was killed" in reason


def test_reimport_with_label_or_line_rate_updates_the_run_not_the_rows(store):
    first = import_files(store, [TCP])
    run_id = first.files[0].run_id
    rep = import_files(store, [TCP], label="tcp", line_rate="10Gb/s")
    (f,) = rep.files
    assert f.status == "skipped" and rep.exit_code == 0
    assert "label changed from 'imb:imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp' to 'tcp'" \
        in f.note and "line rate set to '10Gb/s'" in f.note
    run = store.run(run_id)
    assert (run["label"], run["variant"]) == ("tcp", "tcp")
    spec = json.loads(run["spec_json"])
    assert spec["line_rate_bps"] == 10e9 and spec["import"]["sha256"] == f.sha256
    rep = import_files(store, [TCP], label="tcp", line_rate="25GbE")
    assert rep.files[0].note.endswith("line rate changed from '10Gb/s' to '25GbE'")
    rep = import_files(store, [TCP], label="tcp", line_rate="25GbE")
    assert rep.files[0].note.endswith(f"as run {run_id}")          # nothing to change
    assert store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 24
    assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_empty_label_is_bad_input(store):
    with pytest.raises(UsageError, match="--label"):
        import_files(store, [TCP], label=" ")
