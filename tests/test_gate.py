"""The test suite is a deterministic gate: property tests draw the same cases on every run."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

_DRAWN: list[int] = []


def test_hypothesis_profile_is_derandomized():
    if os.environ.get("MPIBENCH_HYPOTHESIS_PROFILE", "gate") != "gate":
        return
    assert settings.default.derandomize is True
    assert settings.default.database is None


@settings(max_examples=20)
@given(st.integers())
def _draw(x):
    _DRAWN.append(x)


def test_two_runs_of_a_property_draw_the_same_cases():
    # a property test decorated with its own @settings inherits the profile: two runs draw
    # the same values (with random draws, 20 integers agree only by accident)
    if os.environ.get("MPIBENCH_HYPOTHESIS_PROFILE", "gate") != "gate":
        return
    _draw()
    first = list(_DRAWN)
    _DRAWN.clear()
    _draw()
    assert first == _DRAWN and len(set(first)) > 3
