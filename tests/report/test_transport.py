"""Transport verification in comparisons and reports: a set whose requested transport did not
take effect (verdict MISMATCH, as `campaign status` shows it) is flagged in every format of
`mpibench compare` and at the top of the HTML and Markdown reports.

The first tests store the verification result the way a real campaign run does (the
`actual` strings are what verify.parse_diagnostics gives for this machine's Open MPI and
MPICH, see test_verify.py); the last one produces the mismatch for real: an Open MPI
variant asks for shared memory while its own MCA setting forces TCP."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.report.compare_view import render
from mpibench.report.html import ReportOptions, build_report, render_html, write_markdown
from mpibench.report.judge import compare_groups
from mpibench.store import Store
from support.common import MPI_TIMEOUT
from support.synth import add_variant_runs, core_record

XSS = "<b>x</b>"
# verify.parse_diagnostics on captured Open MPI 4.1.4 output (test_verify.OB1_TCP / _VADER)
ACTUAL_TCP = "tcp [pml ob1, btl tcp]"
ACTUAL_SHM = "shm [pml ob1, btl vader]"


def _store(tmp_path, bad_name="want-shm"):
    """Two sets on the same cells: 'shm' verified ok, `bad_name` asked for shm, got TCP."""
    rng = np.random.default_rng(3)
    store = Store(tmp_path / "t.db")
    cid = store.add_campaign("fallback")
    groups = {}
    for name, actual, mu in (("shm", ACTUAL_SHM, 0.3), (bad_name, ACTUAL_TCP, 9.0)):
        groups[name] = add_variant_runs(store, cid, name, repeats=2, make=lambda rep, mu=mu: [
            core_record("PingPong", s, rng.normal(mu + s / 1e4, 0.01, 12)) for s in (8, 1024)])
        for rid in groups[name]:
            store.set_run(rid, transport_requested="shm", transport_actual=actual)
    return store, groups


WARNING = ("variant want-shm: requested transport shm but tcp [pml ob1, btl tcp] carried the "
           "traffic (2 run(s)); its results measure tcp, not shm")


def test_comparison_footnotes_the_mismatch_and_marks_the_set(tmp_path):
    store, groups = _store(tmp_path)
    cmp = compare_groups(store, groups, "shm")
    assert cmp.warnings == {"want-shm": [f"WARNING: {WARNING}"]}
    (mark,) = cmp.set_marks["want-shm"]
    assert cmp.footnotes[mark - 1] == f"WARNING: {WARNING}"
    assert "shm" not in cmp.set_marks                     # the verified set is not flagged
    assert f"WARNING: want-shm did not run on the requested transport [{mark}]" in \
        cmp.verdicts["want-shm"]

    term = render(cmp, "terminal")
    assert f"want-shm [{mark}]" in term                   # the column header carries it
    assert f"[{mark}] WARNING: {WARNING}" in term
    md = render(cmp, "markdown")
    assert f"want-shm \\[{mark}\\]" in md and "**WARNING: variant want-shm:" in md
    obj = json.loads(render(cmp, "json"))
    assert obj["warnings"] == [f"WARNING: {WARNING}"]
    assert all(r["transport_warnings"] == [f"WARNING: {WARNING}"] for r in obj["rows"])
    rows = list(csv.DictReader(io.StringIO(render(cmp, "csv"))))
    assert rows and all(r["transport_warnings"] == f"WARNING: {WARNING}" for r in rows)
    store.close()


def test_no_warning_when_every_transport_took_effect(tmp_path):
    store, groups = _store(tmp_path)
    for rid in groups["want-shm"]:
        store.set_run(rid, transport_actual=ACTUAL_SHM)
    cmp = compare_groups(store, groups, "shm")
    assert cmp.warnings == {} and not any("WARNING" in f for f in cmp.footnotes)
    assert "WARNING" not in render(cmp, "terminal") and json.loads(
        render(cmp, "json"))["warnings"] == []
    html = render_html(build_report(store, groups, ReportOptions(plots=False)))
    assert 'class="warning"' not in html
    store.close()


def test_baseline_mismatch_flags_every_verdict(tmp_path):
    store, groups = _store(tmp_path)
    cmp = compare_groups(store, groups, "want-shm")
    assert "want-shm (base) [1]" in render(cmp, "terminal")
    assert "WARNING: want-shm did not run" in cmp.verdicts["shm"]
    store.close()


def test_report_shows_an_escaped_warning_block(tmp_path):
    store, groups = _store(tmp_path, bad_name=XSS)
    rep = build_report(store, groups, ReportOptions(plots=False))
    html = render_html(rep)
    block = html[html.index('<div class="warning"'):html.index("</div>", html.index(
        '<div class="warning"'))]
    assert "requested transport shm but tcp [pml ob1, btl tcp]" in block
    assert "variant &lt;b&gt;x&lt;/b&gt;" in block and "<b>x</b>" not in html
    assert html.index('class="warning"') < html.index('id="sets"')   # above the tables
    md = write_markdown(rep, tmp_path / "r.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("> **WARNING"))
    assert "&lt;b&gt;x&lt;/b&gt;" in line and "requested transport shm but tcp" in line
    assert md.index("> **WARNING") < md.index("## Result sets")
    store.close()


def test_single_set_report_still_warns(tmp_path):
    store, groups = _store(tmp_path)
    rep = build_report(store, {"want-shm": groups["want-shm"]}, ReportOptions(plots=False))
    assert rep.comparison is None and rep.warnings == [f"WARNING: {WARNING}"]
    assert '<div class="warning"' in render_html(rep)
    store.close()


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "csv", "json"])
def test_single_set_compare_still_warns(tmp_path, capsys, fmt):
    store, groups = _store(tmp_path)
    store.close()
    rc = cli_main(["compare", "--db", str(tmp_path / "t.db"), "--variant", "want-shm",
                   "--format", fmt])
    assert rc == 0
    out = capsys.readouterr().out
    actual = ACTUAL_TCP.replace("[", "\\[").replace("]", "\\]") if fmt == "markdown" \
        else ACTUAL_TCP
    assert f"variant want-shm: requested transport shm but {actual} carried" in out
    if fmt == "json":
        assert json.loads(out)["warnings"] == [f"WARNING: {WARNING}"]


def test_single_set_compare_looks_up_the_transport_once(tmp_path, capsys, monkeypatch):
    """One set with the line-rate table: the warning block and the table's footnote come
    from one transport lookup."""
    import mpibench.verify as verify

    store, groups = _store(tmp_path)
    store.close()
    calls = []
    real = verify.transport_warnings

    def counting(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(verify, "transport_warnings", counting)
    rc = cli_main(["compare", "--db", str(tmp_path / "t.db"), "--variant", "want-shm",
                   "--format", "json", "--line-rate", "10Gb/s"])
    assert rc == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["warnings"] == [f"WARNING: {WARNING}"]
    assert obj["line_rate"]["notes"] == [f"WARNING: {WARNING}"]
    assert len(calls) == 1


# ---------------------------------------------------------------------------------------
# The mismatch for real: `mpibench campaign run` verifies each variant's transport with a
# probe launch; 'want-shm' asks for the shm preset but its MCA btl setting forces TCP.

CAMPAIGN = """
[campaign]
name = "fallback"
repeats = 1
timeout = 60
[variants.want-shm]
stack = "openmpi"
transport = "shm"
mca = { btl = "self,tcp" }
[variants.shm]
stack = "openmpi"
transport = "shm"
[benchmarks.pp]
benchmarks = ["PingPong"]
sizes = "0,8"
options = { max_time = 0.01, timeout = 20 }
"""


@pytest.mark.mpi
def test_real_fallback_is_flagged_in_compare_and_report(tmp_path, capsys):
    if not shutil.which("mpicc.openmpi"):
        pytest.skip("needs Debian's Open MPI (make setup)")
    from mpibench.process import run_command

    (tmp_path / "c.toml").write_text(CAMPAIGN)
    res = run_command([sys.executable, "-m", "mpibench", "campaign", "run", "c.toml",
                       "--no-progress"], cwd=tmp_path, timeout=MPI_TIMEOUT,
                      env={**os.environ, "COLUMNS": "200"})
    assert not res.timed_out and res.returncode == 0, res.stderr_tail(30)
    db = str(tmp_path / "mpibench.db")
    assert cli_main(["compare", "--db", db, "--baseline", "shm", "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    (w,) = obj["warnings"]
    assert w.startswith("WARNING: variant want-shm: requested transport shm but tcp")
    assert all(r["transport_warnings"] == [w] for r in obj["rows"])
    assert cli_main(["compare", "--db", db, "--baseline", "shm"]) == 0
    out = capsys.readouterr().out
    assert "want-shm [1]" in out and f"[1] {w}" in out
    assert cli_main(["report", "--db", db, "--baseline", "shm", "--no-plots",
                     "-o", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "r.md")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert 'class="warning"' in html and "requested transport shm but tcp" in html
    assert "> **WARNING: variant want-shm: requested transport shm but tcp" in \
        (tmp_path / "r.md").read_text()
