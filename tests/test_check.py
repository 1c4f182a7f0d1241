"""`mpibench check`, the regression gate, on seeded simulated launches through the real
store and compare path (the real-run shm vs tcp check is in test_check_real.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.stats import simulate as S


def _store(tmp_path, effect: float, seed: int, launches=5):
    rng = np.random.default_rng(seed)
    store, _ = S.build_store(tmp_path / "g.db", rng, launches=launches, sigma_l=0.02,
                             within=0.005, effect=effect, sizes=(0, 8, 64, 1024, 65536),
                             n_samples=(20, 40))
    store.close()
    return str(tmp_path / "g.db")


def test_a_real_slowdown_fails_the_gate(tmp_path, capsys):
    db = _store(tmp_path, math.log(1 / 1.2), 41)        # b 20% slower
    assert cli_main(["check", "--db", db, "--baseline", "a"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REGRESSION: b vs a")
    assert cli_main(["check", "--db", db, "--baseline", "a", "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["status"] == "regression" and obj["regressions"]
    assert all(r["gain"] < 1 for r in obj["regressions"])


def test_a_speedup_and_a_slowdown_within_the_margin_pass(tmp_path, capsys):
    db = _store(tmp_path, math.log(1.2), 42)            # b 20% faster
    assert cli_main(["check", "--db", db, "--baseline", "a"]) == 0
    assert capsys.readouterr().out.startswith("OK: b vs a")
    (tmp_path / "m").mkdir()
    db2 = _store(tmp_path / "m", math.log(1 / 1.05), 43)
    # 5% slower: a regression at margin 0, not beyond a 15% margin
    assert cli_main(["check", "--db", db2, "--baseline", "a"]) == 1
    assert cli_main(["check", "--db", db2, "--baseline", "a", "--margin", "15%"]) == 0


@pytest.mark.parametrize("seed", [44, 45, 46])
def test_identical_launches_pass(tmp_path, seed, capsys):
    db = _store(tmp_path, 0.0, seed)
    assert cli_main(["check", "--db", db, "--baseline", "a"]) == 0


def test_too_few_launches_cannot_tell(tmp_path, capsys):
    db = _store(tmp_path, math.log(1 / 1.5), 47, launches=1)
    assert cli_main(["check", "--db", db, "--baseline", "a"]) == 0
    assert capsys.readouterr().out.startswith("CANNOT TELL")
    assert cli_main(["check", "--db", db, "--baseline", "a", "--require-decision"]) == 3



def test_unbalanced_unpaired_launches_warn_in_the_summary_and_the_json(tmp_path, capsys):
    # 3 vs 7 launches, unpaired: one warning line (the rule compare's table uses,
    # report.compare_view.unbalanced_launches) and the same object in the JSON; 7 vs 7 none
    db = _store(tmp_path, 0.0, 48, launches=(3, 7))
    cli_main(["check", "--db", db, "--baseline", "a"])
    out = capsys.readouterr().out
    assert out.count("warning: unbalanced launches (3 vs 7, unpaired") == 1
    cli_main(["check", "--db", db, "--baseline", "a", "--json"])
    u = json.loads(capsys.readouterr().out)["unbalanced_launches"]
    assert (u["min_launches"], u["max_launches"], u["smaller_sides"]) == (3, 7, ["a"])
    # 5 vs 7 too (review R15), with 2-5 vs 7's figure under the smaller side's mix (stops 42-43)
    (tmp_path / "five").mkdir()
    db = _store(tmp_path / "five", 0.0, 48, launches=(5, 7))
    cli_main(["check", "--db", db, "--baseline", "a"])
    out = capsys.readouterr().out
    assert out.count("warning: unbalanced launches (5 vs 7, unpaired") == 1
    assert "up to 5.9% per cell at 2-5 vs 7 launches" in out
    (tmp_path / "bal").mkdir()
    db = _store(tmp_path / "bal", 0.0, 48, launches=7)
    cli_main(["check", "--db", db, "--baseline", "a"])
    assert "unbalanced launches" not in capsys.readouterr().out
    cli_main(["check", "--db", db, "--baseline", "a", "--json"])
    assert json.loads(capsys.readouterr().out)["unbalanced_launches"] is None


def test_the_summary_prints_each_warning_on_one_line_and_json_lists_them(tmp_path, capsys):
    """gate.GateResult.warnings (check --reference's core options, R13): one `WARNING:`
    line each in the summary, a "warnings" list in --json (empty when there is none)."""
    from mpibench.gate import GateResult, summary_lines

    db = _store(tmp_path, 0.0, 48)
    assert cli_main(["check", "--db", db, "--baseline", "a", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []
    res = GateResult("a", ["b"], 0.0, 0.05)
    res.warnings.append("core options differ (buffer_align: reference unset, new 4096)")
    lines = summary_lines(res)
    assert [ln for ln in lines if "WARNING" in ln] == [
        "  WARNING: core options differ (buffer_align: reference unset, new 4096)"]
    assert res.to_dict()["warnings"] == [res.warnings[0]]
