"""Equivalence (TOST) through the real Store -> compare path, the --equivalence flag and the
campaign key. Seeded simulated launches (stats.simulate)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mpibench.errors import UsageError
from mpibench.report.compare_view import render
from mpibench.report.judge import compare_groups
from mpibench.stats import simulate as S


def _cmp(tmp_path, effect: float, equivalence):
    rng = np.random.default_rng(31)
    store, groups = S.build_store(tmp_path / "e.db", rng, launches=6, sigma_l=0.005,
                                  within=0.002, effect=effect, sizes=(0, 8, 64, 1024),
                                  n_samples=(20, 40))
    try:
        return compare_groups(store, groups, "a", equivalence=equivalence)
    finally:
        store.close()


def test_identical_variants_are_equivalent_within_the_margin(tmp_path):
    cmp = _cmp(tmp_path, 0.0, 0.02)
    assert cmp.outcomes["b"] == "equivalent"
    assert "equivalent to a within ±2% overall (TOST" in cmp.verdicts["b"]
    ds = [r.deltas["b"] for r in cmp.rows]
    assert sum(d.equivalent for d in ds) >= 3
    out = render(cmp, "terminal")
    assert "≈ (" in out and "≈ = not significant and equivalent within ±2%" in out
    obj = json.loads(render(cmp, "json"))
    assert obj["equivalence_margin"] == 0.02
    assert obj["overall"]["b"]["p_equivalence"] <= 0.05


def test_a_real_difference_is_not_equivalent(tmp_path):
    cmp = _cmp(tmp_path, math.log(1.10), 0.02)
    assert cmp.outcomes["b"] == "better"
    assert not any(r.deltas["b"].equivalent for r in cmp.rows)


def test_without_a_margin_nothing_is_called_the_same(tmp_path):
    cmp = _cmp(tmp_path, 0.0, None)
    assert cmp.outcomes["b"] == "same"
    assert "no significant overall difference" in cmp.verdicts["b"]
    assert "equivalent" not in cmp.verdicts["b"]


def test_the_flag_and_the_campaign_key(tmp_path, capsys):
    from mpibench.campaign.spec import parse
    from mpibench.cli import main as cli_main

    rng = np.random.default_rng(32)
    store, _groups = S.build_store(tmp_path / "f.db", rng, launches=6, sigma_l=0.005,
                                   within=0.002, sizes=(0, 8), n_samples=(20, 40))
    store.close()
    assert cli_main(["compare", "--db", str(tmp_path / "f.db"), "--equivalence", "2%"]) == 0
    out = capsys.readouterr().out
    assert "equivalent to a within ±2%" in out
    with pytest.raises(SystemExit) as exc:
        cli_main(["compare", "--db", str(tmp_path / "f.db"), "--equivalence", "-3%"])
    assert exc.value.code == 2
    base = {"campaign": {"name": "x"}, "variants": {"v": {"stack": "openmpi"}},
            "benchmarks": {"core": {"benchmarks": ["PingPong"]}}}
    spec = parse({**base, "campaign": {"name": "x", "equivalence": "2%"}},
                 tmp_path / "c.toml")
    assert spec.equivalence == 0.02 and spec.to_dict()["equivalence"] == 0.02
    with pytest.raises(UsageError, match="campaign.equivalence"):
        parse({**base, "campaign": {"name": "x", "equivalence": "lots"}}, tmp_path / "c.toml")
