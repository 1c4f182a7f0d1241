"""Golden outputs of `compare` (terminal, Markdown, JSON) and `report` (Markdown) on a fixed
store, so a change in what a user reads is seen and reviewed (issue 20). Regenerate with
MPIBENCH_UPDATE_GOLDEN=1 and review the diff before committing it.

The store is synthetic and seeded (tests/support/synth.py): two core sets with three launches
each, an application sweep with a price per node-hour, and a set measured by the core and by
OSU (the tool rule). Values print at four significant digits, so the text does not depend
on the last bits of a CPU's libm."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from support.golden import check_golden
from support.synth import add_variant_runs, build_two_stack_store, core_record


@pytest.fixture(scope="module")
def golden_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("golden") / "golden.db"
    store, _ = build_two_stack_store(path, seed=20, n=12, repeats=3, sizes=[0, 8, 1024, 65536],
                                     spec={"price_per_node_hour": 2.0})
    rng = np.random.default_rng(21)
    cid = store.add_campaign("peers")
    for v, f in (("base", 1.0), ("fast", 0.9)):
        add_variant_runs(store, cid, v, repeats=2, seq0=500, grp="osu",
                         spec={"definition": {"suite": "osu"}},
                         fingerprint={"stack": v, "tool": "osu"},
                         make=lambda rep, f=f: [
                             {"benchmark": "PingPong", "size": s, "np": 2, "statistic": "mean",
                              "mean": float(f * (0.4 + s / 4000) * np.exp(rng.normal(0, .02)))}
                             for s in (8, 1024)])
        add_variant_runs(store, cid, v, repeats=2, seq0=600, grp="core2",
                         fingerprint={"stack": v},
                         make=lambda rep, f=f: [core_record(
                             "PingPong", s, rng.lognormal(np.log(f * (0.3 + s / 5000)), .03, 12))
                             for s in (8, 1024)])
    store.close()
    return str(path)


# A float the JSON prints at full precision (repr's 17 digits) is cut to 10 significant
# digits: its last bits follow the CPU's libm and BLAS paths (compare-synthetic.json's p_holm
# differed in the 16th digit between an Intel and an AMD EPYC machine), what a reader sees
# does not.
_LONG_FLOAT = re.compile(r"-?\d+\.\d{11,}(?:[eE][-+]?\d+)?")


def _short_float(m: re.Match) -> str:
    return repr(float(f"{float(m.group()):.10g}"))


def _normalise(text: str, db: str) -> str:
    text = _LONG_FLOAT.sub(_short_float, text.replace(db, "<db>"))
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+", "<time>", text)
    return re.sub(r"mpibench \d+\.\d+[\w.+-]*", "mpibench <version>", text)


@pytest.mark.parametrize("fmt,ext", [("terminal", "txt"), ("markdown", "md"), ("json", "json")])
def test_compare_golden(golden_db, capsys, fmt, ext, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert cli_main(["compare", "--db", golden_db, "--campaign", "synthetic", "--gain-table",
                     "--format", fmt]) == 0
    check_golden(f"compare-synthetic.{ext}", _normalise(capsys.readouterr().out, golden_db))


def test_compare_tools_golden(golden_db, capsys, monkeypatch):
    """One variant measured by the core and by OSU: separate rows, the core's verdict."""
    monkeypatch.setenv("COLUMNS", "200")
    assert cli_main(["compare", "--db", golden_db, "--campaign", "peers", "--format",
                     "markdown"]) == 0
    check_golden("compare-tools.md", _normalise(capsys.readouterr().out, golden_db))


def test_report_markdown_golden(golden_db, tmp_path):
    md = tmp_path / "r.md"
    assert cli_main(["report", "--db", golden_db, "--campaign", "synthetic", "--no-plots",
                     "-o", str(tmp_path / "r.html"), "--markdown", str(md)]) == 0
    check_golden("report-synthetic.md", _normalise(md.read_text(), golden_db))
