"""Open the HTML report in Debian's headless Chromium: it renders, shows the plots (SVG in the
DOM), logs no console errors, runs no script, and a screenshot lands in artifacts/."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mpibench.process import run_command
from mpibench.report.html import ReportOptions, build_report, write_html
from support.synth import add_variant_runs, build_app_store, build_two_stack_store, core_record

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
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


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> Path:
    """The report the tests open, built once for the file: three tests read the same bytes
    (one edits a copy), and each build (two synthetic stores and a report with its plots)
    took 3-6 s of the file's 15-35 s at load 7."""
    return _build(tmp_path_factory.mktemp("chromium-report"))


@pytest.mark.system
def test_report_renders_in_chromium(report_html, tmp_path):
    html = report_html
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


_LAYOUT_PROBE = """<script>
(function () {
  var out = [];
  document.querySelectorAll("figure.plot svg").forEach(function (svg) {
    var r = svg.getBoundingClientRect();
    var st = window.getComputedStyle(svg);
    out.push({w: r.width, h: r.height, top: r.top + window.scrollY,
              shown: st.display !== "none" && st.visibility !== "hidden",
              marks: svg.querySelectorAll("path, use, rect").length});
  });
  var pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _layout(tmp_path: Path, html: Path) -> list[dict]:
    """Lay the page out in Chromium and measure every plot. The report itself forbids
    scripts (CSP), so the probe runs on a copy without the CSP line; the plots, styles and
    tables are the report's own bytes."""
    text = html.read_text()
    probe = tmp_path / "probe.html"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    probe.write_text(text.replace("</body>", _LAYOUT_PROBE + "</body>"))
    res = _chromium(tmp_path, "--dump-dom", "--window-size=1280,2000",
                    url=probe.resolve().as_uri())
    assert res.returncode == 0, res.stderr_tail()
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', res.stdout, re.S)
    assert m, "layout probe did not run"
    import html as htmllib
    import json
    return json.loads(htmllib.unescape(m.group(1)))


@pytest.mark.system
def test_plots_are_laid_out_and_drawn(report_html, tmp_path):
    html = report_html
    boxes = _layout(tmp_path, html)
    assert len(boxes) >= 6
    for b in boxes:
        # a plot that collapsed to nothing, was hidden, or has no drawn marks is not "shown"
        assert b["shown"] and b["w"] > 200 and b["h"] > 150, b
        assert b["marks"] >= 10, b
    # stacked down the page, not all at one spot
    assert len({round(b["top"]) for b in boxes}) >= 3


@pytest.mark.system
def test_layout_probe_is_not_vacuous(report_html, tmp_path):
    # negative control: a plot hidden by style must fail the checks above
    html = report_html
    hidden = tmp_path / "hidden.html"
    hidden.write_text(html.read_text().replace("</style>",
                                               ".plot svg { display: none; }</style>", 1))
    boxes = _layout(tmp_path, hidden)
    assert boxes and not any(b["shown"] and b["w"] > 200 for b in boxes)


@pytest.mark.system
def test_console_error_check_is_not_vacuous(tmp_path):
    # negative control: a page that logs and throws must be caught by _console_errors
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("boom"); nope();</script></body></html>')
    res = _chromium(tmp_path, "--dump-dom", url=bad.resolve().as_uri())
    assert len(_console_errors(res.stderr)) >= 2
