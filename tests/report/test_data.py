"""report/data.py: what the report's stop column says about a launch's stationarity check."""

from __future__ import annotations

import json

from mpibench.report.data import _stop_with_stationarity


def _row(stop: str, stationarity: str | None) -> dict:
    extra = {"stationarity": stationarity} if stationarity else {}
    return {"stop_reason": stop, "extra_json": json.dumps(extra)}


def test_stop_column_names_a_moved_or_unsettled_series():
    """The core's CI is approximate when its series moved or the check had not settled when
    the budget ended: the stop column says which; 'ok' and 'untested' add nothing."""
    assert _stop_with_stationarity(_row("max_time", "drift")) == "max_time, drift"
    assert _stop_with_stationarity(_row("max_time", "level_shift")) == "max_time, level shift"
    assert _stop_with_stationarity(_row("max_samples", "unsettled")) == "max_samples, unsettled"
    # the core stopped on the check itself: said once
    assert _stop_with_stationarity(_row("unsettled", "unsettled")) == "unsettled"
    assert _stop_with_stationarity(_row("target", "ok")) == "target"
    assert _stop_with_stationarity(_row("max_time", "untested")) == "max_time"
    assert _stop_with_stationarity(_row("max_time", None)) == "max_time"
