"""stats.probe.kept_off: the rounds of an interleaved run that hold a launch kept off its
reference state after the gate's retries, and whether the variants' off attempts are
balanced. tests/data/probe/ttd03-kept.json: the 20 kept core launches of the stored TTD run
ttd-03 (load 7-9) with their stored machine_probe records, in round order; its round 7
(index 6) paired an Open MPI launch kept off at ~430 ns after two set-asides with an MPICH
launch in the reference state."""

import json
from pathlib import Path

import pytest

from mpibench.stats.probe import OFF_BALANCE_ALPHA, KeptOff, kept_off

DATA = Path(__file__).resolve().parents[1] / "data" / "probe" / "ttd03-kept.json"


def _rec(state: str = "reference", aside: int = 0) -> dict:
    return {"before_ns": 100.0, "after_ns": 100.0, "state": state,
            "set_aside": [{"before_ns": 400.0, "after_ns": 400.0}] * aside}


def _launches(off_a: int, off_b: int, rounds: int = 10) -> list:
    """Two variants, one launch each a round; variant a's first off_a launches and b's
    first off_b launches each had one attempt set aside (then kept in the reference)."""
    return [(k, v, _rec(aside=int(k < n))) for k in range(rounds)
            for v, n in (("a", off_a), ("b", off_b))]


def test_real_run_round_7_holds_the_kept_off_launch():
    rows = json.loads(DATA.read_text())
    ko = kept_off((r["round"], r["variant"], r["machine_probe"]) for r in rows)
    assert ko.rounds == frozenset({6})
    assert ko.off == {"openmpi": 3, "mpich": 0}      # two set aside + the kept-off one
    assert ko.launches == {"openmpi": 10, "mpich": 10}
    assert ko.p == pytest.approx(0.25)                # 3 of 3 on one side: 2 x 0.5^3
    assert ko.balanced
    assert ko.mixed == frozenset({6})                 # ~437 ns beside MPICH's ~67 ns


def test_no_record_and_unknown_state_are_not_off():
    ko = kept_off([(0, "a", None), (0, "b", {"state": "unknown"}), (1, "a", "junk"),
                   (1, "b", _rec())])
    assert ko == KeptOff(frozenset(), {"a": 0, "b": 0}, {"a": 2, "b": 2}, 1.0, frozenset())


def test_every_kept_off_round_is_listed_once():
    launches = [(0, "a", _rec("off", 2)), (0, "b", _rec("off", 2)), (3, "b", _rec("off", 2)),
                (1, "a", _rec()), (1, "b", _rec())]
    ko = kept_off(launches)
    assert ko.rounds == frozenset({0, 3})
    assert ko.off == {"a": 3, "b": 6}


def test_one_sided_off_attempts_are_not_balanced():
    # 0 vs 6 at equal launches: exact two-sided binomial p = 2 x 0.5^6 = 0.03125
    ko = kept_off(_launches(0, 6))
    assert ko.p == pytest.approx(0.03125)
    assert ko.p < OFF_BALANCE_ALPHA and not ko.balanced
    assert kept_off(_launches(3, 3)).balanced
    assert kept_off(_launches(1, 5)).balanced      # p = 0.21875


def test_balance_follows_each_variants_share_of_kept_launches():
    # b has three times a's kept launches: 0 vs 6 off attempts is then what chance gives
    # often (P(all 6 on b) = 0.75^6 = 0.178); at equal launches it is not (above)
    launches = [(k, "a", _rec()) for k in range(5)]
    launches += [(k, "b", _rec(aside=int(k < 6))) for k in range(15)]
    ko = kept_off(launches)
    assert ko.launches == {"a": 5, "b": 15}
    assert ko.balanced


def test_three_variants_take_a_chi_square():
    launches = [(k, v, _rec(aside=int(k < n))) for k in range(20)
                for v, n in (("a", 0), ("b", 0), ("c", 12))]
    assert not kept_off(launches).balanced
    launches = [(k, v, _rec(aside=int(k < 4))) for k in range(20) for v in "abc"]
    assert kept_off(launches).p == pytest.approx(1.0)


def test_one_variant_has_nothing_to_test():
    assert kept_off([(0, "a", _rec("off", 2))]).p == 1.0


def test_a_kept_off_round_is_mixed_only_when_its_launches_read_different_states():
    def rec(state, before, after):
        return {"state": state, "before_ns": before, "after_ns": after, "set_aside": []}
    launches = [(0, "a", rec("off", 430.0, 440.0)), (0, "b", rec("reference", 100.0, 98.0)),
                (1, "a", rec("off", 110.0, 105.0)), (1, "b", rec("off", 100.0, 96.0)),
                (2, "a", rec("off", 430.0, None)), (2, "b", rec("reference", None, None)),
                (3, "a", rec("reference", 430.0, 100.0)), (3, "b", rec("reference", 99.0, 99.0))]
    ko = kept_off(launches)
    assert ko.rounds == frozenset({0, 1, 2})
    # round 1: both off in one state; round 2: no reading beside the kept-off one; round 3:
    # readings ~207 ns (a launch straddling the states) beside 99 ns, but none kept off
    assert ko.mixed == frozenset({0})
