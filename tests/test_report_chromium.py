"""Open the HTML report in Debian's headless Chromium: it renders, shows the plots (SVG in the
DOM), logs no console errors, runs no script, and a screenshot lands in artifacts/."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpibench.report.html import ReportOptions, build_report, write_html
from mpibench.runner import run_command
from test_report_synth import add_variant_runs, build_app_store, build_two_stack_store, core_record

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
XSS = "<script>alert(1)</script>"

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason="Debian chromium not installed")


def _chromium(tmp_path: Path, *extra: str, url: str, timeout: float = 60):
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--enable-logging=stderr", "--v=0", *extra, url]
    res = run_command(argv, timeout=timeout)
    assert not res.timed_out, "chromium timed out"
    return res


def _console_errors(stderr: str) -> list[str]:
    bad = []
    for line in stderr.splitlines():
        if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line:
            bad.append(line)
    return bad


def _build(tmp_path: Path) -> Path:
    store, groups = build_two_stack_store(tmp_path / "r.db", campaign=XSS, n=15, repeats=3,
                                          label_a=XSS, spec={"line_rate_bps": 25e9})
    rng = np.random.default_rng(3)
    cid = store.add_campaign("labels")
    groups[XSS] = add_variant_runs(store, cid, XSS, repeats=3, make=lambda rep: [
        core_record("PingPong", s, rng.lognormal(np.log(0.31 + s / 4000), 0.03, 15))
        for s in (0, 8, 1024, 65536, 1 << 20)])
    app, app_groups = build_app_store(tmp_path / "a.db", nodes=(1, 2, 4), ncore=(1, 2),
                                      repeats=2)
    # one report with everything: core comparison plus the application sweep
    rep = build_report(store, groups, ReportOptions(title=f"Chromium check {XSS}",
                                                   mean_std=True))
    app_rep = build_report(app, app_groups, ReportOptions(title="app sweep"))
    for sec in app_rep.sections:
        sec.id = f"app-{sec.id}"
        sec.title = f"Application: {sec.title}"
    rep.sections += app_rep.sections
    store.close()
    app.close()
    return write_html(rep, tmp_path / "report.html")


def test_report_renders_in_chromium(tmp_path):
    html = _build(tmp_path)
    url = html.resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", url=url)
    assert dom.returncode == 0, dom.stderr_tail()
    assert "<svg" in dom.stdout and dom.stdout.count("<svg") >= 6
    assert "Verdict:" in dom.stdout
    # the hostile label arrives as text, never as an element
    assert not re.search(r"<script", dom.stdout, re.IGNORECASE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout
    assert _console_errors(dom.stderr) == []
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    if shot.exists():
        shot.unlink()
    res = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000",
                    "--hide-scrollbars", url=url)
    assert res.returncode == 0, res.stderr_tail()
    assert shot.exists() and shot.stat().st_size > 20_000
    shutil.copy(html, ARTIFACTS / "report.html")


def test_console_error_check_is_not_vacuous(tmp_path):
    # negative control: a page that logs and throws must be caught by _console_errors
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("boom"); nope();</script></body></html>')
    res = _chromium(tmp_path, "--dump-dom", url=bad.resolve().as_uri())
    assert len(_console_errors(res.stderr)) >= 2
