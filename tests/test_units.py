"""mpibench.units: one reader of line rates for import, compare and campaign files."""

from __future__ import annotations

import pytest

from mpibench.errors import UsageError
from mpibench.importer import parse_line_rate as import_rate
from mpibench.report.linerate import parse_rate as compare_rate
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


# --- one byte-count grammar, one percentage grammar, one set of formatters (issue 20) ----

def test_byte_count_is_the_cores_grammar():
    from mpibench.units import byte_count

    ok = {"0": 0, "64": 64, "4K": 4096, "4k": 4096, "4KiB": 4096, "4kib": 4096, "1M": 1 << 20,
          "2G": 2 << 30, "1T": 1 << 40, "8B": 8, " 16 K ": 16 << 10, "\t1\tM\n": 1 << 20}
    for text, n in ok.items():
        assert byte_count(text) == n, text
    # not the core's: decimal units, fractions, signs, non-ASCII digits and spaces
    for bad in ("", "K", "4KB", "4kb", "1.5K", "-1", "+1", "1Q", "\u0663K", "1\u00a0K", "1 _0",
                "9" * 41, None, 5):
        assert byte_count(bad) is None, bad


def test_every_byte_count_reader_agrees():
    """Message sizes, core options and profile buckets read one grammar: what one takes, the
    others take (within their own limits), what one refuses, the others refuse."""
    from mpibench.benchmarks import parse_size
    from mpibench.execute import parse_bytes
    from mpibench.profile.buckets import parse_buckets

    for text in ("64", "1K", "16KiB", "256k", "4M", "1G", "8B"):
        n = parse_size(text)
        assert parse_bytes(text) == n or (n == 0 and parse_bytes(text) is None)
        assert parse_buckets(text)[-1] == n or n == 1
    for text in ("64KB", "1.5K", "\u0663K", "4 KB"):
        with pytest.raises(UsageError):
            parse_size(text)
        assert parse_bytes(text) is None
        with pytest.raises(UsageError):
            parse_buckets(text)


def test_percent_is_one_grammar():
    from mpibench.report.planning import parse_effect
    from mpibench.stats.launch import parse_margin
    from mpibench.units import percent

    for text, v in (("5%", 0.05), ("5", 0.05), (5, 0.05), ("0.05", 0.05), (" 2.5 % ", 0.025),
                    ("2.5%", 0.025), ("100%", 1.0)):
        assert percent(text) == (pytest.approx(v) if v is not None else None), text
    for bad in ("\u0665%", "1_0%", "", "x%", True, None, "nan"):
        assert percent(bad) is None, bad
    # the readers add their own range, never their own grammar
    assert parse_margin("2%") == parse_effect("2%") == pytest.approx(0.02)
    assert parse_margin("2") == parse_effect(2) == pytest.approx(0.02)
    assert parse_margin("\u0662%") is None
    with pytest.raises(UsageError):
        parse_effect("\u0662%")


def test_formatters():
    from mpibench.units import fmt_bytes, fmt_pow2, fmt_seconds

    assert fmt_bytes(512) == "512 B" and fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(2 << 30) == "2.0 GiB"
    assert fmt_pow2(1024) == "1 KiB" and fmt_pow2(1 << 40) == "1 TiB" and fmt_pow2(3) == "3 B"
    assert fmt_seconds(1.25) == "1.250 s" and fmt_seconds(0.0031) == "3.100 ms"
    assert fmt_seconds(12.5e-6) == "12.50 us"
