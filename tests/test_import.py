"""`mpibench import` and mpibench.importer: rows land complete and correct in the store."""

from __future__ import annotations

import json
import os
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
    assert "2 imported (161 rows), 0 already in the store, 0 not imported" in cap.out
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
    # the line rate is judged on the whole curve, not on the gain table's size: the tcp peak
    # is the 2 MiB row (497.53 MB/s of 1250), the vader peak the 512 KiB row (2366.36 of 12500)
    assert "39.8%" in out and "18.9%" in out
    capsys.readouterr()
    main(["compare", "--db", db, "--campaign", "imports", "--variant", "tcp",
          "--variant", "vader", "--gain-table", "--size", "4M", "--format", "json"])
    lr = {r["variant"]: r for r in json.loads(capsys.readouterr().out)["line_rate"]["rows"]}
    assert (lr["tcp"]["peak_mbps"], lr["tcp"]["peak_size"], lr["tcp"]["half_peak_size"]) == \
        (497.53, 2097152, 524288)
    assert lr["vader"]["peak_size"] == 524288


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


def _copies(tmp_path, n):
    """n copies of the vader PingPong file, each with its own 4 MiB time (4000 + k us)."""
    paths = []
    for k in range(n):
        p = tmp_path / f"r{k:02d}.txt"
        p.write_text(VADER.read_text().replace("4859.13", f"{4000 + k}.00"))
        paths.append(p)
    return paths


def test_batches_commit_and_write_every_row(store, monkeypatch, tmp_path):
    monkeypatch.setattr(importer, "BATCH_FILES", 2)
    paths = _copies(tmp_path, 5)
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


# Every captured fixture, imported through the store: three rows each (first, middle, last
# or a failure), values read by eye from the file at that line. (file, line, benchmark, np,
# size, status, mean, {other column or extra key: value}).
SPOT = [
    ("imb/imb2021.11-mpich4.0.2-np2-all-truncated-timeout3.txt", [
        (53, "PingPong", 2, 0, "ok", 0.27, {"bandwidth_mbps": 0.0}),
        (150, "Exchange", 2, 64, "ok", 1.47, {"t_max_us": 1.47, "bandwidth_mbps": 173.62}),
        (219, "Reduce", 2, 524288, "ok", 604.57, {"t_min_us": 604.12, "repetitions": 80})]),
    ("imb/imb2021.11-mpich4.0.2-np2-all.txt", [
        (53, "PingPong", 2, 0, "ok", 1.14, {"repetitions": 1000}),
        (171, "Reduce", 2, 0, "ok", 0.09, {"t_min_us": 0.07, "t_max_us": 0.12}),
        (300, "Allgatherv", 2, 65536, "ok", 85.26, {"repetitions": 640}),
        (475, "Barrier", 2, 0, "ok", 1.76, {"sizeless": True})]),
    ("imb/imb2021.11-mpich4.0.2-np2-pingpong.txt", [
        (35, "PingPong", 2, 0, "ok", 0.33, {"bandwidth_mbps": 0.0}),
        (47, "PingPong", 2, 2048, "ok", 0.60, {"bandwidth_mbps": 3398.60}),
        (58, "PingPong", 2, 4194304, "ok", 907.25, {"bandwidth_mbps": 4623.11})]),
    ("imb/imb2021.11-mpich4.0.2-np2-uniband-biband.txt", [
        (36, "Uniband", 2, 0, "ok", 0.0, {"msg_rate": 1510397}),
        (64, "Biband", 2, 0, "ok", 0.0, {"msg_rate": 1986035}),
        (84, "Biband", 2, 524288, "ok", 15072.48, {"msg_rate": 28748}),
        (85, "Biband", 2, 1048576, "time-out", None, {})]),
    ("imb/imb2021.11-mpich4.0.2-np3-collectives.txt", [
        (68, "Allreduce", 3, 0, "ok", 1106.38, {"t_min_us": 7.08, "repetitions": 310}),
        (71, "Allreduce", 3, 16, "time-out", None, {}),
        (80, "Reduce", 2, 4, "ok", 0.69, {"t_max_us": 0.97}),
        (165, "Allgather", 3, 2, "ok", 6856.49, {"repetitions": 266})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-all-truncated-timeout3.txt", [
        (53, "PingPong", 2, 0, "ok", 0.45, {}),
        (84, "PingPing", 2, 1, "ok", 0.53, {"bandwidth_mbps": 1.89}),
        (135, "Sendrecv", 2, 2097152, "ok", 911.94, {"bandwidth_mbps": 4480.61})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-all.txt", [
        (53, "PingPong", 2, 0, "ok", 0.42, {}),
        (171, "Reduce", 2, 0, "ok", 0.05, {"t_max_us": 0.05}),
        (300, "Allgatherv", 2, 65536, "ok", 13.98, {"t_min_us": 13.91, "t_max_us": 14.06})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-nbc-iallreduce-ibarrier.txt", [
        (36, "Iallreduce", 2, 0, "ok", 0.06, {"t_ovrl_us": 0.61, "t_cpu_us": 0.42}),
        (51, "Iallreduce", 2, 65536, "ok", 68.73, {"t_ovrl_us": 141.81, "overlap_pct": 0.0}),
        (58, "Ibarrier", 2, 0, "ok", 0.82, {"t_ovrl_us": 1.52, "sizeless": True})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt", [
        (35, "PingPong", 2, 0, "ok", 25.21, {}),
        (46, "PingPong", 2, 1024, "ok", 69.79, {"bandwidth_mbps": 14.67}),
        (58, "PingPong", 2, 4194304, "ok", 8775.88, {"bandwidth_mbps": 477.94})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-pingpong-btl-vader.txt", [
        (35, "PingPong", 2, 0, "ok", 0.51, {}),
        (46, "PingPong", 2, 1024, "ok", 3.23, {"bandwidth_mbps": 316.69}),
        (58, "PingPong", 2, 4194304, "ok", 4859.13, {"bandwidth_mbps": 863.18})]),
    ("imb/imb2021.11-openmpi4.1.4-np2-uniband-biband.txt", [
        (36, "Uniband", 2, 0, "ok", 0.0, {"msg_rate": 9457246}),
        (83, "Biband", 2, 262144, "ok", 4522.27, {"msg_rate": 17251}),
        (84, "Biband", 2, 524288, "time-out", None, {})]),
    ("imb/imb2021.11-openmpi4.1.4-np3-collectives.txt", [
        (68, "Allreduce", 3, 0, "ok", 0.06, {"t_max_us": 0.06}),
        (240, "Allgatherv", 3, 2, "ok", 5.79, {"t_min_us": 0.78, "t_max_us": 8.49}),
        (583, "Barrier", 3, 0, "ok", 7.50, {"sizeless": True})]),
    ("imb/imb2021.11-openmpi4.1.4-np4-npmin2-allreduce.txt", [
        (36, "Allreduce", 2, 0, "ok", 0.09, {"t_max_us": 0.13}),
        (56, "Allreduce", 4, 0, "ok", 0.06, {"t_max_us": 0.07})]),
    ("osu/osu7.4-mpich4.0.2-np2-osu_bibw.txt", [
        (5, "osu_bibw", 2, 1, "ok", 5.13, {}), (15, "osu_bibw", 2, 1024, "ok", 3849.50, {}),
        (21, "osu_bibw", 2, 65536, "ok", 9249.12, {"bandwidth_mbps": 9249.12})]),
    ("osu/osu7.4-mpich4.0.2-np2-osu_bw.txt", [
        (5, "osu_bw", 2, 1, "ok", 8.32, {}), (15, "osu_bw", 2, 1024, "ok", 3242.84, {}),
        (21, "osu_bw", 2, 65536, "ok", 7249.29, {})]),
    ("osu/osu7.4-mpich4.0.2-np2-osu_latency-c.txt", [
        (5, "osu_latency", 2, 1, "ok", 0.33, {"validation": "Pass"}),
        (15, "osu_latency", 2, 1024, "ok", 1.07, {}),
        (21, "osu_latency", 2, 65536, "ok", 11.53, {})]),
    ("osu/osu7.4-mpich4.0.2-np2-osu_latency-debug-summary.txt", [
        (18, "osu_latency", 2, 1, "ok", 0.25, {}), (30, "osu_latency", 2, 4096, "ok", 0.98, {})]),
    ("osu/osu7.4-mpich4.0.2-osu_latency+allreduce-debug-summary-appended.txt", [
        (28, "osu_latency", 2, 1024, "ok", 0.46, {}),
        (52, "osu_allreduce", 3, 64, "ok", 6392.94, {}),
        (56, "osu_allreduce", 3, 1024, "ok", 5858.71, {})]),
    ("osu/osu7.4-mpich5.0.2-ofi-np2-osu_latency-debug-summary.txt", [
        (141, "osu_latency", 2, 1, "ok", 4.00, {}), (147, "osu_latency", 2, 64, "ok", 3.67, {})]),
    ("osu/osu7.4-mpich4.0.2-np2-osu_latency.txt", [
        (5, "osu_latency", 2, 1, "ok", 0.17, {}), (15, "osu_latency", 2, 1024, "ok", 0.30, {}),
        (21, "osu_latency", 2, 65536, "ok", 11.26, {})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_allreduce-f-z.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 4152.07, {"t_min_us": 1622.65, "p99_us": 6664.07}),
        (15, "osu_allreduce", 3, 1024, "ok", 6865.17, {"p90_us": 11157.40}),
        (21, "osu_allreduce", 3, 65536, "ok", 6431.97, {"iterations": 50})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_allreduce-f.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 4409.44, {"t_max_us": 7426.04}),
        (15, "osu_allreduce", 3, 1024, "ok", 5164.96, {"t_min_us": 2068.60}),
        (21, "osu_allreduce", 3, 65536, "ok", 9036.78, {"iterations": 50})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_allreduce.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 4232.03, {}),
        (9, "osu_allreduce", 3, 16, "ok", 5714.30, {}),
        (13, "osu_allreduce", 3, 256, "ok", 5945.23, {})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_alltoall.txt", [
        (5, "osu_alltoall", 3, 1, "ok", 4281.98, {}),
        (15, "osu_alltoall", 3, 1024, "ok", 4060.53, {}),
        (21, "osu_alltoall", 3, 65536, "ok", 10099.87, {})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_barrier.txt", [
        (4, "osu_barrier", 3, 0, "ok", 8479.08, {"sizeless": True})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_bcast.txt", [
        (5, "osu_bcast", 3, 1, "ok", 3.96, {}), (15, "osu_bcast", 3, 1024, "ok", 8.99, {}),
        (21, "osu_bcast", 3, 65536, "ok", 3716.21, {})]),
    ("osu/osu7.4-mpich4.0.2-np3-osu_iallreduce.txt", [
        (7, "osu_iallreduce", 3, 1, "ok", 4233.65, {"overall_us": 5618.40}),
        (17, "osu_iallreduce", 3, 1024, "ok", 4243.29, {"compute_us": 5482.76}),
        (23, "osu_iallreduce", 3, 65536, "ok", 9021.66, {"overlap_pct": 33.35})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_bibw.txt", [
        (5, "osu_bibw", 2, 1, "ok", 9.28, {}), (15, "osu_bibw", 2, 1024, "ok", 4564.17, {}),
        (21, "osu_bibw", 2, 65536, "ok", 8960.95, {})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_bw.txt", [
        (5, "osu_bw", 2, 1, "ok", 5.07, {}), (15, "osu_bw", 2, 1024, "ok", 1675.96, {}),
        (21, "osu_bw", 2, 65536, "ok", 8167.06, {})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_latency-c.txt", [
        (5, "osu_latency", 2, 1, "ok", 0.62, {"validation": "Pass"}),
        (15, "osu_latency", 2, 1024, "ok", 1.44, {}),
        (21, "osu_latency", 2, 65536, "ok", 10.72, {})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_latency-z.txt", [
        (5, "osu_latency", 2, 1, "ok", 0.95, {"p50_us": 0.51, "p99_us": 1.17}),
        (15, "osu_latency", 2, 1024, "ok", 1.38, {"p90_us": 1.23}),
        (21, "osu_latency", 2, 65536, "ok", 14.04, {"p99_us": 56.24})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_latency.txt", [
        (5, "osu_latency", 2, 1, "ok", 0.23, {}), (15, "osu_latency", 2, 1024, "ok", 0.46, {}),
        (21, "osu_latency", 2, 65536, "ok", 10.54, {})]),
    ("osu/osu7.4-openmpi4.1.4-np2-osu_mbw_mr.txt", [
        (5, "osu_mbw_mr", 2, 1, "ok", 9.25, {"msg_rate": 9247739.72}),
        (15, "osu_mbw_mr", 2, 1024, "ok", 5149.06, {"msg_rate": 5028378.91}),
        (21, "osu_mbw_mr", 2, 65536, "ok", 6220.36, {"msg_rate": 94915.14})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_allreduce-f-z.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 8.07, {"t_min_us": 7.84, "p99_us": 23.01}),
        (15, "osu_allreduce", 3, 1024, "ok", 17.19, {"p50_us": 16.56}),
        (21, "osu_allreduce", 3, 65536, "ok", 160.48, {"iterations": 100})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_allreduce-f.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 8.00, {"t_min_us": 6.75, "t_max_us": 10.12}),
        (15, "osu_allreduce", 3, 1024, "ok", 20.54, {"iterations": 1000}),
        (21, "osu_allreduce", 3, 65536, "ok", 153.63, {"iterations": 100})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_allreduce.txt", [
        (5, "osu_allreduce", 3, 1, "ok", 6.05, {}),
        (15, "osu_allreduce", 3, 1024, "ok", 13.94, {}),
        (21, "osu_allreduce", 3, 65536, "ok", 167.35, {})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_alltoall.txt", [
        (5, "osu_alltoall", 3, 1, "ok", 7.52, {}), (15, "osu_alltoall", 3, 1024, "ok", 9.84, {}),
        (21, "osu_alltoall", 3, 65536, "ok", 54.34, {})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_barrier.txt", [
        (4, "osu_barrier", 3, 0, "ok", 6.56, {})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_bcast.txt", [
        (5, "osu_bcast", 3, 1, "ok", 4.44, {}), (15, "osu_bcast", 3, 1024, "ok", 7.01, {}),
        (21, "osu_bcast", 3, 65536, "ok", 17.61, {})]),
    ("osu/osu7.4-openmpi4.1.4-np3-osu_iallreduce.txt", [
        (7, "osu_iallreduce", 3, 1, "ok", 6.94, {"overall_us": 22.09, "compute_us": 7.97}),
        (17, "osu_iallreduce", 3, 1024, "ok", 9.39, {"overall_us": 26.47}),
        (23, "osu_iallreduce", 3, 65536, "ok", 103.92, {"overlap_pct": 0.0})]),
    ("netpipe/netpipe3.7.2-mpich4.0.2-np2.out", [
        (1, "NetPIPE", 2, 1, "ok", 0.62, {"mbps_printed": 12.278581}),
        (40, "NetPIPE", 2, 515, "ok", 0.19, {"mbps_printed": 20228.355039}),
        (82, "NetPIPE", 2, 65539, "ok", 7.19, {"mbps_printed": 69557.763024})]),
    ("netpipe/netpipe3.7.2-openmpi4.1.4-np2.out", [
        (1, "NetPIPE", 2, 1, "ok", 0.37, {"mbps_printed": 20.755825}),
        (82, "NetPIPE", 2, 65539, "ok", 8.06, {"mbps_printed": 62018.065293})]),
    ("netpipe/netpipe3.7.2-openmpi4.1.4-np2.stdout.txt", [
        (40, "NetPIPE", 2, 381, "ok", 0.21, {"mbps_printed": 13859.64, "repetitions": 257527}),
        (87, "NetPIPE", 2, 65539, "ok", 8.06, {"mbps_printed": 62018.07})]),
    ("nccl/nccl-tests2.x-old-layout-all_reduce_perf-2gpu.txt", [
        (10, "nccl_unknown", 2, 8, "ok", 9.20, {"busbw_gbps": 0.0}),
        (20, "nccl_unknown_inplace", 2, 8192, "ok", 9.87, {"algbw_gbps": 0.83})]),
    ("nccl/nccl-tests2.13.10-all_reduce_perf-8gpu.txt", [
        (37, "nccl_all_reduce", 8, 4194304, "ok", 48.94, {"busbw_mbps": 149980.0}),
        (39, "nccl_all_reduce_inplace", 8, 16777216, "ok", 156.92, {"busbw_gbps": 187.11})]),
]


def test_spot_table_covers_every_captured_fixture():
    captured = {f"{d}/{p.name}" for d in ("imb", "osu") for p in (DATA / d).glob("*.txt")}
    shared = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
    if shared.is_dir():                     # every file of ../shared/fixtures is copied here
        for p in shared.glob("*/*.txt"):
            assert (DATA / p.parent.name / p.name).read_bytes() == p.read_bytes(), p
            captured.add(f"{p.parent.name}/{p.name}")
    assert captured <= {name for name, _ in SPOT}


def test_every_fixture_stores_its_exact_values(store):
    paths = [DATA / name for name, _ in SPOT]
    rep = import_files(store, paths, np=3)
    assert [f.status for f in rep.files] == ["imported"] * len(paths)
    for (name, checks), f in zip(SPOT, rep.files, strict=True):
        by_line: dict[int, list] = {}
        for r in rows(store, f.run_id):
            by_line.setdefault(r["extra"]["line"], []).append(r)
        for line, bench, np_, size, status, mean, more in checks:
            hits = [r for r in by_line.get(line, []) if r["benchmark"] == bench]
            assert len(hits) == 1, (name, line, bench, by_line.get(line))
            r = hits[0]
            assert (r["np"], r["size"], r["status"]) == (np_, size, status), (name, line)
            assert r["mean"] == mean, (name, line)
            for k, v in more.items():
                got = r[k] if k in r.keys() else r["extra"][k]
                assert got == v, (name, line, k)
            assert r["n"] is None and r["median"] is None and r["ci_low"] is None


def test_many_files_are_parsed_in_a_second_process(store, monkeypatch, tmp_path):
    paths = _copies(tmp_path, importer.PROCESS_MIN_FILES)
    real, pids = importer._load, set()

    def spy(path, *args):
        loaded = real(path, *args)
        loaded.libs = [f"pid {os.getpid()}"]     # travels back with the result
        return loaded

    monkeypatch.setattr(importer, "_load", spy)
    rep = import_files(store, paths, label="v")
    assert [f.status for f in rep.files] == ["imported"] * len(paths)
    for f in rep.files:
        fp = store.fingerprint(store.run(f.run_id)["fingerprint_id"])
        pids.add(fp["mpi_library"][0])
    assert pids and f"pid {os.getpid()}" not in pids
    got = sorted(r["mean"] for r in store.results(None, with_samples=False)
                 if r["size"] == 4194304)
    assert got == [4000.0 + k for k in range(len(paths))]


def test_a_dead_parser_process_does_not_lose_files(store, monkeypatch, tmp_path):
    paths = _copies(tmp_path, importer.PROCESS_MIN_FILES + 4)
    real, main_pid = importer._load, os.getpid()

    def die_on_r05(path, *args):
        if path.name == "r05.txt" and os.getpid() != main_pid:
            os._exit(3)                             # the worker dies (e.g. OOM-killed)
        return real(path, *args)

    monkeypatch.setattr(importer, "_load", die_on_r05)
    rep = import_files(store, paths, label="v")
    assert [f.status for f in rep.files] == ["imported"] * len(paths)
    assert store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 24 * len(paths)
