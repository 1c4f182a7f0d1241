"""The synthetic store builders of tests/support/synth.py round-trip through the Store."""

from __future__ import annotations

from support.synth import IMB_SIZES, build_two_stack_store


def test_synthetic_store_roundtrip(tmp_path):
    store, groups = build_two_stack_store(tmp_path / "s.db", repeats=2, n=10)
    rows = list(store.results(groups["base"]))
    assert len(rows) == 2 * 2 * len(IMB_SIZES)
    assert rows[0]["samples"].size == 10
    store.close()
