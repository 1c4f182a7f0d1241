"""mpibench.execute: the parts that need no launch (the fingerprint of a core header)."""

from __future__ import annotations

from mpibench.execute import FINGERPRINT_CORE_OPTIONS, core_fingerprint
from mpibench.store.local import fingerprint_id

# The core options a fingerprint held before settling (2026-11-26): what the store's
# fingerprint ids of older launches were hashed from at ingest.
_KEYS_BEFORE_SETTLING = ("mode", "iterations", "iterations_volume", "thread_level",
                         "off_cache", "root_shift", "sync", "batch_us", "warmup", "per_call")


def test_settling_is_in_the_fingerprint_and_a_header_before_it_did_not_settle():
    """Settling changes what a sample measures (MPICH 4 KiB: 0.9 or 9 us), so a settled
    launch is fingerprinted apart; a core header written before the option existed came from
    a core that never settled, so it is the same measurement as a --no-settle launch."""
    old = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto"}})
    new = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto", "settle": True}})
    off = core_fingerprint({"options": {"mode": "adaptive", "sync": "auto", "settle": False}})
    assert new["core_options"]["settle"] is True
    assert old == off != new
    # an option with no such rule stays absent (None) in an old header
    assert old["core_options"]["per_call"] is None
    assert core_fingerprint({}) == {}


def test_a_no_settle_launch_has_the_stored_id_of_a_launch_before_settling():
    """The store keeps the hash taken at ingest, so pooling needs the same bytes, not just an
    equal reading: a launch ingested before settling (core_options of the old keys, no
    `settle`) and a new --no-settle launch must get the same fingerprint id; a settled one
    must not."""
    opts = {"mode": "adaptive", "sync": "auto", "warmup": 2, "per_call": False}
    stored_before = {"core_options": {k: opts.get(k) for k in _KEYS_BEFORE_SETTLING}}
    assert set(FINGERPRINT_CORE_OPTIONS) == set(_KEYS_BEFORE_SETTLING)
    no_settle = core_fingerprint({"options": {**opts, "settle": False}})
    settled = core_fingerprint({"options": {**opts, "settle": True}})
    assert fingerprint_id(no_settle) == fingerprint_id(stored_before)
    assert fingerprint_id(settled) != fingerprint_id(stored_before)
