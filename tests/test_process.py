"""process.run_until_complete: a command whose output can be complete before it exits (the
local side of the completion rule, schedulers.StepCompletion), with plain shell commands."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from mpibench.execute import CORE_FOOTER_ERE, complete_at
from mpibench.process import run_until_complete, start_ticks
from mpibench.schedulers import StepCompletion
from support.procs import wait_gone

FOOTER = Path(__file__).parent / "data" / "core" / "mpich-np2-ok.jsonl"
CORE = StepCompletion(CORE_FOOTER_ERE, 1, "core's footer", file="core.jsonl")


def test_a_command_that_hangs_after_its_footer_is_stopped(tmp_path):
    """It copies a real core output (footer last), says the PID of what it leaves running,
    then hangs: stopped after the grace, with stopped_after, not a timeout, its process
    group gone."""
    script = (f"cp {FOOTER} core.jsonl; sleep 600 & echo $! >child.pid; wait")
    res = run_until_complete(["sh", "-c", script], cwd=tmp_path, timeout=120,
                             stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
                             complete_at=lambda: complete_at(CORE, tmp_path / "core.jsonl"),
                             grace=0.2, tick=0.1)
    assert not res.timed_out and res.stopped_after is not None and res.stopped_after >= 0
    assert res.returncode == 143  # died of the TERM: stored as a job script's step stores it
    assert wait_gone(res.pid) and wait_gone(int((tmp_path / "child.pid").read_text()))


def test_a_command_without_its_footer_times_out_and_one_that_exits_is_seen_at_once(
        tmp_path):
    """All but the footer: the launch runs into its timeout (timed_out, -9). A command that
    exits by itself is seen as it exits, not at the next look (a tick of an hour here)."""
    cut = "".join(FOOTER.read_text().splitlines(True)[:-1])
    (tmp_path / "cut.jsonl").write_text(cut)
    res = run_until_complete(["sh", "-c", "cp cut.jsonl core.jsonl; exec sleep 600"],
                             cwd=tmp_path, timeout=1, stdout_path=tmp_path / "o",
                             stderr_path=tmp_path / "e",
                             complete_at=lambda: complete_at(CORE, tmp_path / "core.jsonl"),
                             grace=0.2, tick=0.1)
    assert (res.timed_out, res.returncode, res.stopped_after) == (True, -9, None)
    res = run_until_complete(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path,
                             timeout=60, stdout_path=tmp_path / "o",
                             stderr_path=tmp_path / "e", complete_at=lambda: None,
                             grace=3600, tick=3600)
    assert (res.returncode, res.timed_out, res.stdout, res.stderr) == (3, False, "out\n",
                                                                       "err\n")


def test_complete_at_reads_the_last_lines_of_a_large_file_or_all_of_stdout(tmp_path):
    big = tmp_path / "core.jsonl"
    rows = "".join(json.dumps({"record": "result", "pad": "x" * 900}) + "\n"
                   for _ in range(200))
    big.write_text(rows + FOOTER.read_text().splitlines(True)[-1])
    assert complete_at(CORE, big) == big.stat().st_mtime
    big.write_text(FOOTER.read_text().splitlines(True)[-1] + rows)  # footer not last
    assert complete_at(CORE, big) is None
    assert complete_at(CORE, tmp_path / "missing") is None
    out = tmp_path / "stdout.txt"
    probe = StepCompletion("^mpibench-probe exchanged rank=[0-9]+$", 2, "probe ranks")
    out.write_text("mpibench-probe exchanged rank=0\nnoise\nmpibench-probe exchanged rank=0\n")
    assert complete_at(probe, out) is None     # the same rank twice counts once
    out.write_text(out.read_text() + "mpibench-probe exchanged rank=1\n")
    assert complete_at(probe, out) is not None


def test_what_the_launcher_leaves_in_its_process_group_is_stopped(tmp_path):
    """A launcher that exits at once (rc 0) but leaves a process in its group: that process
    must not run on into the next measured cell. Stopped as the launcher's exit is seen,
    and likewise after the stop of a launcher that ignored nothing but left a child."""
    script = "sleep 600 & echo $!; exit 0"
    res = run_until_complete(["sh", "-c", script], cwd=tmp_path, timeout=120,
                             stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
                             complete_at=lambda: None, grace=3600, tick=3600)
    left = int(res.stdout)
    try:
        assert (res.returncode, res.timed_out) == (0, False)
        assert wait_gone(left, bound_s=30)
    finally:
        _stop(left)
    # the TERM path: the launcher exits on TERM, its child ignores it
    script = (f"cp {FOOTER} core.jsonl; sh -c 'trap \"\" TERM; sleep 600' & "
              "echo $! >child.pid; wait")
    res = run_until_complete(["sh", "-c", script], cwd=tmp_path, timeout=120,
                             stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
                             complete_at=lambda: complete_at(CORE, tmp_path / "core.jsonl"),
                             grace=0.2, tick=0.1)
    left = int((tmp_path / "child.pid").read_text())
    try:
        assert res.stopped_after is not None and wait_gone(left, bound_s=30)
    finally:
        _stop(left)


def _stop(pid: int) -> None:
    """Cleanup of a failed run: the process this test left, by its PID."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def test_an_interrupted_wait_stops_the_launchers_group_and_reaps_it(tmp_path):
    """An exception while waiting for the launch (a Ctrl-C, a complete_at that raises) must
    not leave the launcher's group running nor the launcher unreaped: the group's stop is
    in the `finally`, the launcher reaped after it."""
    script = "echo $$ >launcher.pid; sleep 600 & echo $! >child.pid; wait"

    def raising():
        for name in ("launcher.pid", "child.pid"):
            assert _wait_for_file(tmp_path / name)
        raise KeyboardInterrupt

    launcher = child = None
    try:
        try:
            run_until_complete(["sh", "-c", script], cwd=tmp_path, timeout=120,
                               stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
                               complete_at=raising, grace=3600, tick=0.05)
        except KeyboardInterrupt:
            pass
        else:
            raise AssertionError("the interrupt was swallowed")
        launcher = int((tmp_path / "launcher.pid").read_text())
        child = int((tmp_path / "child.pid").read_text())
        assert not Path(f"/proc/{launcher}").exists()     # stopped and reaped
        assert wait_gone(child, bound_s=30)
    finally:
        for pid in (launcher, child):
            if pid is not None:
                _stop(pid)


def _wait_for_file(path: Path) -> bool:
    """The launcher wrote path (non-empty, a whole line): a bounded poll on the event."""
    import time
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if path.exists() and path.read_text().endswith("\n"):
            return True
        time.sleep(0.01)
    return False


def test_start_ticks_names_one_live_process_and_not_one_that_exited():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        ticks = start_ticks(child.pid)
        assert ticks is not None and ticks >= start_ticks(os.getpid())
        assert start_ticks(child.pid) == ticks   # the same process reads the same
    finally:
        child.stdin.close()
    # exited but not reaped: a zombie, which has stopped running
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    assert start_ticks(child.pid) is None
    child.wait()
    assert start_ticks(child.pid) is None


def test_start_ticks_reads_past_a_command_name_with_spaces_and_parentheses(tmp_path):
    import subprocess

    odd = tmp_path / "a) b ("
    odd.write_bytes(Path("/bin/sleep").read_bytes())
    odd.chmod(0o755)
    child = subprocess.Popen([str(odd), "30"])
    try:
        ticks = start_ticks(child.pid)
        assert ticks is not None and ticks >= start_ticks(os.getpid())
    finally:
        child.kill()
        child.wait()
