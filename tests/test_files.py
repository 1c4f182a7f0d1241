"""Every file mpibench writes is written whole or not at all (temporary file + rename), and
output paths are checked before any work is done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.files import check_output, write_file
from support.common import tmpfs


def test_write_replaces_whole_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "r.html"
    write_file(p, "old")
    write_file(p, "new" * 1000)
    assert p.read_text() == "new" * 1000
    assert [x.name for x in tmp_path.iterdir()] == ["r.html"]
    assert oct(p.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    write_file(p, b"\x00\x01", mode=0o755)
    assert p.read_bytes() == b"\x00\x01" and p.stat().st_mode & 0o777 == 0o755


def _umask() -> int:
    u = os.umask(0)
    os.umask(u)
    return u


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "r.md"
    p.write_text("good report")

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(UsageError, match="cannot write .*No space left on device"):
        write_file(p, "truncated?")
    assert p.read_text() == "good report"
    assert [x.name for x in tmp_path.iterdir()] == ["r.md"]


@pytest.fixture
def small_fs(tmp_path):
    with tmpfs(tmp_path / "small", "64k") as mnt:
        yield mnt


def test_full_disk_keeps_the_good_report(small_fs):
    p = small_fs / "report.html"
    write_file(p, "<html>good</html>")
    with pytest.raises(UsageError, match="No space left"):
        write_file(p, "x" * 200_000)
    assert p.read_text() == "<html>good</html>"
    assert [x.name for x in small_fs.iterdir()] == ["report.html"]


WRITER = """
import sys
from mpibench.files import write_file
i = 0
while True:
    i += 1
    write_file(sys.argv[1], str(i % 10) * 400_000)
"""


def test_sigkill_mid_write_leaves_old_or_new_never_partial(tmp_path):
    p = tmp_path / "out.csv"
    write_file(p, "0" * 400_000)
    for delay in (0.05, 0.11, 0.17, 0.23, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(p)])
        time.sleep(delay + 0.3)  # interpreter start-up, then somewhere in a write
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        text = p.read_text()
        assert len(text) == 400_000 and len(set(text)) == 1
    leftovers = [x for x in tmp_path.iterdir() if x.name != "out.csv"]
    assert all(x.name.startswith(".out.csv.") for x in leftovers)  # temporaries, not outputs


@pytest.mark.parametrize("target, match", [
    ("DIR", "is a directory"), ("{tmp}/no-such-dir/x.md", "does not exist"),
    ("/etc/passwd/x", "is not a directory"), ("", "expected a file name"),
])
def test_check_output(tmp_path, target, match):
    with pytest.raises(UsageError, match=match):
        check_output(str(tmp_path) if target == "DIR" else target.format(tmp=tmp_path), "-o")


OSU = "osu7.4-mpich4.0.2-np2-osu_latency.txt"


@pytest.mark.parametrize("argv", [
    ["report", "-o", "{tmp}"], ["report", "--markdown", "{tmp}"],
    ["report", "-o", "{tmp}/no-such-dir/r.html"], ["compare", "-o", "{tmp}"],
    # a path under a directory this test owns: "/nonexistent" can exist on a shared machine
    ["run", "PingPong", "--markdown", "{tmp}/no-such-dir/x.md"],
    ["run", "PingPong", "--out", "{file}"],
    ["run", "PingPong", "--db", "{tmp}"],
    ["demo", "--out", "/etc/passwd/x"], ["demo", "--sizes", "99:2"],
])
def test_bad_outputs_are_one_line_before_any_work(tmp_path, argv, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("x")
    db = tmp_path / "s.db"
    full = [a.format(tmp=tmp_path, file=tmp_path / "f") for a in argv]
    if full[0] in ("report", "compare"):  # a real store, so only the output can be wrong
        osu = Path(__file__).parent / "data" / "osu" / OSU
        assert cli_main(["import", str(osu), "--db", str(db)]) == 0
        capsys.readouterr()
    if "--db" not in full:
        full += [] if full[0] == "demo" else ["--db", str(db)]
    before = sorted(x.name for x in tmp_path.iterdir())
    assert cli_main(full) == 2
    err = capsys.readouterr().err
    assert err.startswith("mpibench: error:") and err.count("\n") == 1, err
    assert sorted(x.name for x in tmp_path.iterdir()) == before  # nothing created
    assert not Path("demo-results").exists()
