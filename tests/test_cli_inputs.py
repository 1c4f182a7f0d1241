"""Bad invocations of every verb: one line on stderr, exit 2, no traceback, nothing created."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.cli import main as cli_main

OSU = Path(__file__).parent / "data" / "osu" / "osu7.4-mpich4.0.2-np2-osu_latency.txt"

BAD = [
    ["run", "PingPong", "--launch-timeout", "nan"],
    ["run", "PingPong", "--launch-timeout", "inf"],
    ["run", "PingPong", "--launch-timeout", "-5"],
    ["run", "PingPong", "--launch-timeout", "0"],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda a: " ".join(a)[:60])
def test_bad_invocation_is_one_line_exit_2_nothing_written(tmp_path, monkeypatch, capsys,
                                                           argv):
    monkeypatch.chdir(tmp_path)
    full = [a.format(tmp=tmp_path, osu=OSU) for a in argv]
    if full[0] not in ("demo", "stacks") and "--db" not in full:
        full += ["--db", str(tmp_path / "s.db")]
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        rc = cli_main(full)
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0 or err.startswith("usage:"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
