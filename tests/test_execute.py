"""mpibench.execute: the parts that need no launch (the fingerprint of a core header)."""

from __future__ import annotations

from mpibench.execute import FINGERPRINT_CORE_OPTIONS, core_fingerprint


def test_settling_is_in_the_fingerprint_and_a_header_before_it_did_not_settle():
    """Settling changes what a sample measures (MPICH 4 KiB: 0.9 or 9 us), so `settle` is
    fingerprinted; a core header written before the option existed came from a core that
    never settled, so it pools with --no-settle launches (settle false), not with new ones."""
    assert "settle" in FINGERPRINT_CORE_OPTIONS
    old = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto"}})
    new = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto", "settle": True}})
    off = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto", "settle": False}})
    assert old["core_options"]["settle"] is False
    assert old == off != new
    # an option with no such rule stays absent (None) in an old header
    assert old["core_options"]["per_call"] is None
    assert core_fingerprint({}) == {}
