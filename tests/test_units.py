"""mpibench.units: one reader of line rates for import, compare and campaign files."""

from __future__ import annotations

import pytest

from mpibench.errors import UsageError
from mpibench.importer import parse_line_rate as import_rate
from mpibench.report.tables import parse_rate as compare_rate
from mpibench.units import fmt_line_rate, fmt_size, line_rate_mbps, parse_line_rate


@pytest.mark.parametrize("text, bps", [
    ("100Gb/s", 100e9), ("100Gbps", 100e9), ("25GbE", 25e9), ("25Gbit/s", 25e9),
    ("12.5GB/s", 100e9), ("200G", 200e9), ("1e11", 1e11), (1e11, 1e11), (400000, 4e5),
])
def test_every_reader_agrees(text, bps):
    assert parse_line_rate(text) == import_rate(text) == compare_rate(text) == bps


@pytest.mark.parametrize("bad", [True, False, 0, -1, "fast", "100 furlongs", "0Gb/s",
                                 float("inf"), "inf"])
def test_every_reader_refuses(bad):
    for f in (parse_line_rate, import_rate, compare_rate):
        with pytest.raises(UsageError, match="--line-rate"):
            f(bad)


def test_formats():
    assert fmt_line_rate(1e11) == "100 Gb/s" and fmt_line_rate(None) == "-"
    assert line_rate_mbps(100e9) == 12500.0
    assert fmt_size(1 << 20) == "1M" and fmt_size(1000) == "1000" and fmt_size(None) == ""
