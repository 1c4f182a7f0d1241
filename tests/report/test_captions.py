"""Captions say which statistic a table shows. Imported rows (`mpibench import`) hold the
tool's own per-size figure (IMB t[usec]: a mean over repetitions), not samples: every caption
and legend - compare, gain table, line rate, results, the HTML and Markdown reports - must
say so when such rows are present, and must keep saying "median" when they are not.
Uses the real captured IMB PingPong outputs in tests/data/imb."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.importer import import_files
from mpibench.report.gain import gain_table
from mpibench.report.html import ReportOptions, build_report, render_html, write_markdown
from mpibench.report.judge import compare_groups
from mpibench.report.linerate import line_rate_table
from mpibench.report.results import render_results
from mpibench.store import Store
from support.synth import add_variant_runs, core_record

IMB = Path(__file__).parents[1] / "data" / "imb"
TCP = IMB / "imb2021.11-openmpi4.1.4-np2-pingpong-btl-tcp.txt"
VADER = IMB / "imb2021.11-openmpi4.1.4-np2-pingpong-btl-vader.txt"
OWN = "the tool's own mean"
UNTESTED = ("imported rows: the tool's own mean, no samples (each file one launch; compared "
            "only with the same statistic)")
ALL_IMPORTED = ("the tool's own mean (us), geometric mean over the imported files (each file "
                "one launch); imported rows: no samples")
SENTENCE = ("Imported rows: the tool's own mean: no samples; each imported file is one launch, "
            "compared only with the same statistic.")
LAUNCH_MEDIANS = "time = geometric mean of launch medians (us), each launch weighted equally"


@pytest.fixture
def imported_db(tmp_path):
    db = str(tmp_path / "f.db")
    assert cli_main(["import", str(TCP), "--db", db, "--label", "tcp", "--line-rate",
                     "10Gb/s", "--json"]) == 0
    assert cli_main(["import", str(VADER), "--db", db, "--label", "vader", "--line-rate",
                     "100Gb/s", "--json"]) == 0
    return db


def _compare(db, capsys, fmt, *extra):
    capsys.readouterr()
    rc = cli_main(["compare", "--db", db, "--campaign", "imports", "--variant", "tcp",
                   "--variant", "vader", "--gain-table", "--format", fmt, *extra])
    assert rc == 0
    return capsys.readouterr().out


def test_imported_captions_in_every_compare_format(imported_db, capsys):
    obj = json.loads(_compare(imported_db, capsys, "json"))
    gain = obj["gain_table"]
    assert gain["caption"].startswith(f"time = {ALL_IMPORTED}")
    assert "median" not in gain["caption"]
    assert all(r["tcp_statistic"] == r["vader_statistic"] == "mean" for r in gain["rows"])
    assert OWN in obj["line_rate"]["caption"] and "median" not in obj["line_rate"]["caption"]
    assert obj["comparison"]["statistic"] == (
        f"value = {OWN}, geometric mean over the imported files (each file one launch); "
        "imported rows: no samples")
    for fmt in ("terminal", "markdown"):
        out = " ".join(_compare(imported_db, capsys, fmt, "--size", "4M").split())
        out = out.replace("\\", "")                     # Markdown escapes
        assert "time = median" not in out and "from the median" not in out
        assert f"time = {OWN} (us)" in out              # gain table
        assert f"value = {OWN}, geometric mean over the imported files" in out   # comparison
        assert "8776 (mean)" in out                     # the gain table's cell says it too
    out = _compare(imported_db, capsys, "csv")
    assert "tcp_statistic" in out


def test_imported_results_and_reports_say_mean(imported_db, tmp_path):
    with Store(imported_db) as store:
        ids = {r["label"]: [r["id"]] for r in store.runs()}
        rep = build_report(store, ids, ReportOptions(plots=False, line_rate="10Gb/s"))
        html = unescape(render_html(rep))               # &#39; -> '
        md = write_markdown(rep, tmp_path / "r.md").read_text()
        res = render_results(store, ids["tcp"], "terminal", title="tcp")
    assert SENTENCE in html
    assert f"time = {OWN} (us)" in html and "time = median" not in html
    md_flat = " ".join(md.replace("\\", "").split())
    assert SENTENCE in md_flat
    assert f"time = {OWN} (us)" in md_flat
    assert UNTESTED in " ".join(res.split())


def test_mixed_sets_say_both(tmp_path):
    """One set imported from IMB, one measured by the core: 'median' for the core's cells,
    and which statistic the imported cells are."""
    rng = np.random.default_rng(4)
    with Store(tmp_path / "m.db") as store:
        import_files(store, [VADER], label="imb")
        imb = [r["id"] for r in store.runs()]
        cid = store.add_campaign("core")
        core = add_variant_runs(store, cid, "core", repeats=2, make=lambda rep: [
            core_record("PingPong", s, rng.normal(0.3 + s / 5000, 0.01, 12))
            for s in (8, 1024, 1 << 20)])
        cmp = compare_groups(store, {"core": core, "imb": imb}, "core")
        gt = gain_table(cmp)
        lr = line_rate_table(store, {"core": core, "imb": imb}, "100Gb/s")
    assert gt.caption.startswith(f"{LAUNCH_MEDIANS}; {UNTESTED}")
    assert gt.rows[0][2] != "" and gt.rows[0][4].endswith(" (mean)")   # imb column, 1M
    assert not gt.rows[0][2].endswith(")")                            # core: a median
    assert UNTESTED in lr.caption
    d = next(r for r in cmp.rows if r.size == 1 << 20).deltas["imb"]
    # a native median never meets an imported mean: no gain, a footnote says why
    assert d.gain is None and not d.tested
    assert any("only computed between the same statistic" in f for f in cmp.footnotes)


def test_header_texts_built_from_the_statistics(tmp_path):
    """The compare header's legend and the report's sentence on imported rows, exactly: a
    mixed comparison names the median's CI then the imported statistic, an all-imported one
    the tool's statistic; two tools' own statistics are joined with 'or' (NetPIPE's min
    shares no cell with IMB, so only the report, which lists every set, shows both)."""
    from mpibench.report.compare_view import _header_lines
    from mpibench.report.html import render_markdown_report

    netpipe = Path(__file__).parents[1] / "data" / "netpipe" / "netpipe3.7.2-openmpi4.1.4-np2.out"
    rng = np.random.default_rng(6)
    with Store(tmp_path / "h.db") as store:
        import_files(store, [VADER], label="imb")
        import_files(store, [netpipe], label="np", np=2)
        ids = {r["label"]: [r["id"]] for r in store.runs()}
        cid = store.add_campaign("core")
        core = add_variant_runs(store, cid, "core", repeats=2, make=lambda rep: [
            core_record("PingPong", s, rng.normal(0.3 + s / 5000, 0.01, 12))
            for s in (8, 1024, 1 << 20)])
        mixed = compare_groups(store, {"core": core, "imb": ids["imb"]}, "core")
        tools = compare_groups(store, ids, "imb")
        rep = build_report(store, ids, ReportOptions(plots=False))
        md = render_markdown_report(rep, None, tmp_path)
    assert _header_lines(mixed)[1].startswith(
        "value = geometric mean of the launch medians (each launch, one mpirun, weighted "
        f"equally) ± 95% CI from the spread between launches (± ? = one launch); {UNTESTED}; "
        "gain > 1 = candidate better")
    assert _header_lines(tools)[1].startswith(
        "value = the tool's own mean, geometric mean over the imported files (each file one "
        "launch); imported rows: no samples; gain > 1")
    sentence = ("Imported rows: the tool's own mean or min: no samples; each imported file is "
                "one launch, compared only with the same statistic.")
    assert sentence in unescape(render_html(rep)) and sentence in md


def test_sampled_rows_keep_the_median_captions(tmp_path):
    rng = np.random.default_rng(5)
    with Store(tmp_path / "c.db") as store:
        cid = store.add_campaign("core")
        groups = {v: add_variant_runs(store, cid, v, repeats=2, make=lambda rep: [
            core_record("PingPong", s, rng.normal(0.3 + s / 5000, 0.01, 12))
            for s in (8, 1 << 20)]) for v in ("a", "b")}
        cmp = compare_groups(store, groups, "a")
        gt = gain_table(cmp)
        html = render_html(build_report(store, groups, ReportOptions(plots=False)))
    assert gt.caption.startswith(f"{LAUNCH_MEDIANS}; MB/s")
    assert "imported" not in gt.caption and "Imported rows" not in html


def test_plot_legend_names_the_imported_statistic(imported_db):
    from mpibench.report import plots

    with Store(imported_db) as store:
        ids = {r["label"]: [r["id"]] for r in store.runs()}
        cmp = compare_groups(store, ids, "tcp")
    fig = plots.latency_figure(cmp)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["tcp (tool's mean)",
                                                                    "vader (tool's mean)"]
    assert "imported: tool's own" in ax.get_ylabel()
