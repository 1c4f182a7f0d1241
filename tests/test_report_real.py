"""Every report type from a real small run on both stacks (Open MPI and MPICH), made with the
lead's `mpibench run` in a subprocess with a timeout. Tiny sizes and budgets: timings on this
2-core machine are noise, so nothing here asserts on a time."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from mpibench.cli import main as cli_main
from mpibench.runner import run_command

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

HAVE_STACKS = shutil.which("mpicc.openmpi") and shutil.which("mpicc.mpich")


def _mpibench(args: list[str], cwd, timeout: float = 240):
    res = run_command([sys.executable, "-m", "mpibench", *args], cwd=cwd, timeout=timeout,
                      env={**os.environ, "COLUMNS": "200"})
    assert not res.timed_out, f"mpibench {' '.join(args)} timed out"
    return res


@pytest.fixture(scope="module")
def real_db(tmp_path_factory):
    if not HAVE_STACKS:
        pytest.skip("needs Debian's Open MPI and MPICH (make setup)")
    d = tmp_path_factory.mktemp("real")
    db = d / "real.db"
    common = ["--db", str(db), "--max-time", "0.02", "--timeout", "20"]
    r1 = _mpibench(["run", "PingPong", "Allreduce", "--stack", "openmpi", "--stack", "mpich",
                    "--np", "2", "--sizes", "0,8,1K,64K", "--repeats", "2", "--name", "two",
                    "--out", str(d / "runs2"), *common], cwd=d)
    if r1.returncode != 0 and "no usable" in (r1.stderr + r1.stdout):
        pytest.skip("no usable MPI stack: " + r1.stderr_tail(5))
    assert r1.returncode == 0, r1.stderr_tail(30)
    # a second np for the np x size grid (Open MPI, oversubscribed: slow but correct)
    r2 = _mpibench(["run", "PingPong", "--stack", "openmpi", "--np", "3", "--sizes", "8,1K",
                    "--repeats", "1", "--name", "three", "--out", str(d / "runs3"), *common],
                   cwd=d)
    assert r2.returncode == 0, r2.stderr_tail(30)
    return db, r1.stdout


def test_run_prints_our_tables(real_db):
    _db, out = real_db
    assert "comparison vs openmpi" in out and "verdict:" in out
    assert "first" in out and "launches" in out


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "csv", "json"])
def test_compare_formats_on_real_results(real_db, fmt, capsys):
    db, _ = real_db
    rc = cli_main(["compare", "--db", str(db), "--campaign", "two", "--format", fmt,
                   "--results", "--gain-table", "--line-rate", "10Gb/s", "--first-call",
                   "--mean-std", "--cost-per-node-hour", "1.5", "--power-per-node-w", "200"])
    assert rc == 0
    out = capsys.readouterr().out
    if fmt == "json":
        obj = json.loads(out)
        assert {"comparison", "gain_table", "line_rate", "first_call", "cost"} <= set(obj)
        rows = obj["comparison"]["rows"]
        assert {r["benchmark"] for r in rows} == {"PingPong", "Allreduce"}
        assert all(r["base_n"] and r["cand_n"] for r in rows)
        assert all(r["p_holm"] is not None for r in rows if r["tested"])
        lr = obj["line_rate"]["rows"]
        assert lr and all(0 < r["percent_of_line_rate"] for r in lr)
        assert obj["gain_table"]["rows"][0]["size"] == 65536
        assert {r["variant"] for r in obj["cost"]["rows"]} == {"openmpi", "mpich"}
    else:
        assert "PingPong" in out and "Allreduce" in out


def test_grid_np_by_size_on_real_results(real_db, capsys):
    db, _ = real_db
    rc = cli_main(["compare", "--db", str(db), "--variant", "openmpi", "--by", "variant",
                   "--benchmark", "PingPong", "--grid", "np", "size"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "np \\ size" in out and "*" in out


def test_html_and_markdown_report_on_real_results(real_db, tmp_path):
    db, _ = real_db
    html, md = tmp_path / "real.html", tmp_path / "real.md"
    rc = cli_main(["report", "--db", str(db), "--campaign", "two", "--baseline", "mpich",
                   "-o", str(html), "--markdown", str(md), "--line-rate", "10Gb/s",
                   "--mean-std"])
    assert rc == 0
    text = html.read_text()
    assert text.count("<svg") >= 3 and "Verdict:" in text and "<script" not in text
    assert "Line rate" in text and "First call" in text
    assert (tmp_path / "real-plots").is_dir() and "![" in md.read_text()
