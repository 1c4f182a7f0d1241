"""Import refuses what it cannot read safely and streams big files in bounded memory."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from pathlib import Path

import pytest

from mpibench import importer
from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.importer import import_files, parse_line_rate
from mpibench.store import Store

OSU = Path(__file__).parent / "data" / "osu"
GOOD = sorted(p for p in OSU.glob("*.txt") if b"BAD TERMINATION" not in p.read_bytes())


@pytest.mark.parametrize("argv, match", [
    (["/dev/zero"], "not a regular file"),
    (["/dev/null"], "not a regular file"),
    (["{tmp}/missing.txt"], "no such file"),
    (["{tmp}"], "is a directory"),
    (["{osu}", "--np", "0"], "--np 0: expected a positive number"),
    (["{osu}", "--label", ""], "--label '': expected a non-empty name"),
    (["{osu}", "--line-rate", "1e400Gb/s"], "expected a link speed"),
    (["{osu}", "--line-rate", "fast"], "expected a link speed"),
])
def test_refused_in_one_line_before_a_store_exists(tmp_path, argv, match, capsys):
    db = tmp_path / "s.db"
    argv = [a.format(tmp=tmp_path, osu=GOOD[0]) for a in argv]
    assert cli_main(["import", *argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1, err
    assert not db.exists()


def test_fifo_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert cli_main(["import", str(fifo), "--db", str(tmp_path / "s.db")]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_line_rate_bounds():
    assert parse_line_rate("100Gb/s") == 100e9
    for bad in ("1e400Gb/s", "nanGb/s", "0Gb/s", "2Pb/s", float("inf"), float("nan"), -1):
        with pytest.raises(UsageError):
            parse_line_rate(bad)


def _results(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT benchmark, size, np, status, metric, mean, bandwidth_mbps, "
                           "extra_json FROM results ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("compress", [False, True])
def test_streamed_import_stores_what_a_whole_import_stores(tmp_path, monkeypatch, compress):
    text = b"".join(p.read_bytes() for p in GOOD) * 3
    big = tmp_path / ("big.txt.gz" if compress else "big.txt")
    big.write_bytes(gzip.compress(text) if compress else text)
    small = tmp_path / "whole.txt"
    small.write_bytes(text)
    with Store(tmp_path / "whole.db") as s:
        whole = import_files(s, [small], np=2)
    monkeypatch.setattr(importer, "STREAM_MIN", 1000)
    monkeypatch.setattr("mpibench.parsers.detect.SEGMENT_BYTES", 4000)
    with Store(tmp_path / "stream.db") as s:
        streamed = import_files(s, [big], np=2)
        spec = s.run(streamed.files[0].run_id)["spec_json"]
    assert streamed.files[0].status == "imported", streamed.files[0].problems
    assert streamed.files[0].rows == whole.files[0].rows > 1000
    assert _results(tmp_path / "stream.db") == _results(tmp_path / "whole.db")
    assert '"streamed": true' in spec


def test_streamed_gzip_bomb_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "STREAM_MIN", 1000)
    monkeypatch.setattr("mpibench.parsers.detect.MAX_BYTES", 1 << 20)
    head = GOOD[0].read_bytes()
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(head + b"1 1.0\n" * 400_000))
    with Store(tmp_path / "s.db") as s:
        rep = import_files(s, [bomb])
        assert rep.files[0].status == "failed"
        assert "larger than 1 MiB" in " ".join(rep.files[0].problems)
        assert s.db.execute("SELECT count(*) FROM results").fetchone()[0] == 0


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return out


def test_parser_worker_dies_with_a_sigkilled_import(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    if (os.cpu_count() or 1) < 2:
        pytest.skip("the parser process is used on more than one core only")
    imb = sorted((Path(__file__).parent / "data" / "imb").glob("*.txt"))
    files = []
    for i in range(200):
        p = tmp_path / f"f{i}.txt"
        p.write_bytes(imb[i % len(imb)].read_bytes() + f"\n# copy {i}\n".encode())
        files.append(str(p))
    code = ("import sys, time; from mpibench import importer; real = importer._import_one\n"
            "def slow(*a, **k):\n    time.sleep(0.05); return real(*a, **k)\n"
            "importer._import_one = slow\n"
            "from mpibench.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, "import", *files, "--db",
                             str(tmp_path / "s.db")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    workers: list[int] = []
    deadline = time.monotonic() + 180  # failure bounds, not timings: the loops end on events
    while not workers and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        workers = _children(proc.pid)
    assert workers, "the import never started a parser process"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{w}") for w in workers):
        for w in workers:  # reap if they became ours (they are not: init adopts them)
            try:
                os.waitpid(w, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.1)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")
             and open(f"/proc/{w}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
    assert not alive, f"parser process(es) {alive} outlived the killed import"


def _stored_run(db: Path) -> dict:
    """The imported run as stored, less what differs by design (import time, the flag)."""
    con = sqlite3.connect(db)
    try:
        reason, spec, fp = con.execute(
            "SELECT r.reason, r.spec_json, f.json FROM runs r JOIN fingerprints f "
            "ON f.id = r.fingerprint_id WHERE r.source = 'import'").fetchone()
    finally:
        con.close()
    spec = json.loads(spec)
    spec["import"].pop("imported_at")
    spec["import"].pop("streamed", None)
    return {"reason": reason, "spec": spec, "fingerprint": json.loads(fp)}


def test_a_whole_file_is_stored_as_a_stream_of_one_segment(tmp_path, monkeypatch):
    """One write path: a truncated OSU collective (np unknown: no --np) with the MPI library
    line pasted on top is stored alike whole and streamed. The streamed path used to store
    the np-unknown note as where the file was truncated, and read the library line from a
    second open of the file."""
    # this real output ends where a rank died ('BAD TERMINATION'): the parser marks it truncated
    cut = "MPICH Version:      4.0.2\n" + (OSU / "osu7.4-mpich4.0.2-np3-osu_allreduce.txt").read_text()
    f = tmp_path / "osu.txt"
    f.write_text(cut)
    with Store(tmp_path / "whole.db") as s:
        whole = import_files(s, [f]).files[0]
    monkeypatch.setattr(importer, "STREAM_MIN", 10)
    with Store(tmp_path / "stream.db") as s:
        streamed = import_files(s, [f]).files[0]
    assert whole.status == streamed.status == "imported", (whole.problems, streamed.problems)
    assert whole.truncated and streamed.truncated
    w, st = _stored_run(tmp_path / "whole.db"), _stored_run(tmp_path / "stream.db")
    assert w["reason"].startswith("truncated: ") and "number of ranks" not in w["reason"]
    assert w["fingerprint"]["mpi_library"] == ["MPICH Version:      4.0.2"]
    assert st == w
    assert streamed.problems == whole.problems
    assert _results(tmp_path / "stream.db") == _results(tmp_path / "whole.db")
