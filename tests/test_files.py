"""Every file mpibench writes is written whole or not at all (temporary file + rename), and
output paths are checked before any work is done."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.files import check_output, durable_together, write_file
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


# -- a launch's files flushed together (files.durable_together) --------------------------------
def _recorder(monkeypatch) -> list[tuple[str, str]]:
    """(event, path) in the order they happen: "fsync" (the path the descriptor is open on),
    "renamed" (write_file's rename of its temporary file into place)."""
    events: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def rec_fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        fsync(fd)
        events.append(("fsync", path))

    def rec_replace(src, dst):
        replace(src, dst)
        if Path(src).name.endswith(".tmp"):
            events.append(("renamed", str(Path(dst).resolve())))

    monkeypatch.setattr(os, "fsync", rec_fsync)
    monkeypatch.setattr(os, "replace", rec_replace)
    return events


def test_a_file_outside_the_block_is_flushed_before_its_rename(tmp_path, monkeypatch):
    events = _recorder(monkeypatch)
    write_file(tmp_path / "a.md", "x")
    (kind, tmp), renamed = events
    assert kind == "fsync" and Path(tmp).name.startswith(".a.md.") and tmp.endswith(".tmp")
    assert renamed == ("renamed", str(tmp_path / "a.md"))


def test_files_in_the_block_are_flushed_with_their_directories_at_sync(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "c-1"
    run.mkdir(parents=True)
    events = _recorder(monkeypatch)
    with durable_together() as unsynced:
        write_file(run / "cell.json", "{}")
        write_file(run / "job.sh", "#!/bin/sh\n")
        assert [e for e, _ in events] == ["renamed", "renamed"]      # nothing flushed yet
        assert (run / "cell.json").read_text() == "{}"              # but in place, whole
        write_file(run / "gone", "x")
        (run / "gone").unlink()                                      # needs no flush
        unsynced.sync()
        flushed = {p for e, p in events if e == "fsync"}
        assert flushed == {str(run / "cell.json"), str(run / "job.sh"), str(run),
                           str(run.parent)}
        events.clear()
        write_file(run / "timing.json", "{}")
    # leaving the block flushes what is left; after it, each write is flushed at once
    assert events[0] == ("renamed", str(run / "timing.json"))
    assert sorted(events[1:]) == [("fsync", p) for p in sorted(
        (str(run / "timing.json"), str(run), str(run.parent)))]
    events.clear()
    write_file(run / "after", "x")
    assert events[0][0] == "fsync" and events[1] == ("renamed", str(run / "after"))


def test_a_launched_programs_own_output_joins_the_pass(tmp_path, monkeypatch):
    """The core writes core.jsonl itself (no write_file, no rename): the local policy adds
    it, with stdout.txt and stderr.txt, to the launch's pass (Unsynced.add), so the commit
    after the pass cannot reach the disk before the raw output it was parsed from. None
    (an application has no core.jsonl) is skipped; a file that was never written needs
    nothing."""
    run = tmp_path / "runs" / "c-1"
    run.mkdir(parents=True)
    (run / "core.jsonl").write_text('{"type": "header"}\n')    # as a process writes it
    events = _recorder(monkeypatch)
    with durable_together() as unsynced:
        unsynced.add(run / "core.jsonl", None, run / "never-written.txt")
        assert events == []
        unsynced.sync()
    assert {p for e, p in events if e == "fsync"} == {str(run / "core.jsonl"), str(run),
                                                      str(run.parent)}

def test_leaving_the_block_on_an_error_flushes_and_raises_the_error(tmp_path, monkeypatch):
    events = _recorder(monkeypatch)
    with pytest.raises(KeyboardInterrupt), durable_together():
        write_file(tmp_path / "a", "x")
        raise KeyboardInterrupt
    assert ("fsync", str(tmp_path / "a")) in events


def test_a_failed_flush_is_one_line_naming_the_file(tmp_path, monkeypatch):
    def eio(_fd):
        raise OSError(5, "Input/output error")

    with pytest.raises(UsageError, match=r"cannot write .*/a: Input/output error"), \
            durable_together():
        write_file(tmp_path / "a", "x")
        monkeypatch.setattr(os, "fsync", eio)



@pytest.mark.parametrize("code,raised", [(errno.EINVAL, False), (errno.ENOTSUP, False),
                                         (errno.EIO, True)])
def test_a_directory_that_cannot_be_flushed_is_passed_over_a_file_never(tmp_path, monkeypatch,
                                                                        code, raised):
    """A filesystem without fsync for directories (vboxsf, some SMB/drvfs mounts) answers
    EINVAL or ENOTSUP for the run directory and runs/: the pass goes on, as SQLite's does
    (review s40 R7: every local launch failed there). The same answer for a file, or an I/O
    error for a directory, is still one error naming the path."""
    run = tmp_path / "runs" / "c-1"
    run.mkdir(parents=True)
    real = os.fsync

    def dir_fails(fd):
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(code, os.strerror(code))
        real(fd)

    with durable_together() as unsynced:
        write_file(run / "cell.json", "{}")
        monkeypatch.setattr(os, "fsync", dir_fails)
        if raised:
            # runs/ comes first in the pass's order (files, then directories sorted)
            with pytest.raises(UsageError, match=rf"cannot write {run.parent}: {os.strerror(code)}"):
                unsynced.sync()
        else:
            unsynced.sync()

    def file_fails(fd):
        if not os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        real(fd)

    monkeypatch.setattr(os, "fsync", file_fails)
    with pytest.raises(UsageError, match=r"cannot write .*/cell.json: Invalid argument"), \
            durable_together():
        write_file(run / "cell.json", "[]")

NO_MPI = """
[campaign]
name = "flush"
repeats = 2
[variants.plain]
stack = "none"
launcher = "template"
launcher_args = ["sh", "-c", 'exec "$0" "$@"', "{program}"]
np = 1
[benchmarks.app]
command = "sh -c 'echo rate 3.5 ns/day'"
fom = { name = "ns/day", regex = 'rate ([0-9.]+)', unit = "ns/day", better = "higher" }
"""


@pytest.mark.system
def test_no_launch_is_committed_before_its_files_are_flushed(tmp_path, monkeypatch):
    """The crash-ordering a campaign relies on: a launch's run-directory files are renamed
    into place unflushed, and each of them, its run directory and runs/ are flushed before the
    store records the launch as committed (a commit reaching the disk then implies its files
    did); none is flushed one at a time at its write."""
    from mpibench.campaign.cells import CellSteps

    events = _recorder(monkeypatch)
    commit = CellSteps.commit

    def rec_commit(self, p, outcome, **extra):
        events.append(("commit", str(p.step.run_dir.resolve())))
        return commit(self, p, outcome, **extra)

    monkeypatch.setattr(CellSteps, "commit", rec_commit)
    camp = tmp_path / "c.toml"
    camp.write_text(NO_MPI)
    assert cli_main(["campaign", "run", "--no-progress", str(camp)]) == 0
    commits = [i for i, (e, _) in enumerate(events) if e == "commit"]
    assert len(commits) == 2
    start = 0
    for at in commits:
        run = events[at][1]
        mine = events[start:at]
        renamed = {p for e, p in mine if e == "renamed" and p.startswith(run + "/")}
        flushed = {p for e, p in mine if e == "fsync"}
        assert {"cell.json", "job.sh", "command.json", "timing.json",
                "exit_status"} <= {Path(p).name for p in renamed}
        assert renamed | {run, str(Path(run).parent)} <= flushed, renamed - flushed
        for p in renamed:   # each flushed after its rename: one pass, not one per write
            assert max(i for i, e in enumerate(mine) if e == ("fsync", p)) > \
                max(i for i, e in enumerate(mine) if e == ("renamed", p))
        assert not any(e == "fsync" and p.startswith(run + "/.") for e, p in mine)
        start = at + 1
