from __future__ import annotations

import pytest

from mpibench.benchmarks import ALL, canonical_benchmarks, parse_sizes
from mpibench.errors import UsageError


def test_log2_range_includes_zero_like_imb():
    assert parse_sizes("0:4") == [0, 1, 2, 4, 8, 16]
    assert parse_sizes("3:5") == [8, 16, 32]
    assert parse_sizes("0:22")[-1] == 4 * 1024 * 1024


def test_lists_with_units():
    assert parse_sizes("1M,0,8,1K") == [0, 8, 1024, 1 << 20]
    assert parse_sizes("3G") == [3 << 30]


@pytest.mark.parametrize("spec", ["0:x", "5:2", "-3", "1:2:3", "", "8,,16", "4Q", "0:99"])
def test_malformed_sizes(spec):
    with pytest.raises(UsageError, match=repr(spec).strip("'") if spec else "size"):
        parse_sizes(spec)


def test_benchmark_names():
    assert canonical_benchmarks(["pingpong", "ALLREDUCE"]) == ["PingPong", "Allreduce"]
    assert canonical_benchmarks(["all"]) == ALL
    with pytest.raises(UsageError, match="unknown benchmark 'Pingpng'"):
        canonical_benchmarks(["Pingpng"])


def test_size_limits_match_the_core():
    """The core (core/driver.c) takes K/M/G/T, at most 1 TiB per size and 256 sizes; checking
    the same here fails before any build or launch."""
    assert parse_sizes("1T") == parse_sizes("1TiB") == [1 << 40]
    assert parse_sizes("0:40")[-1] == 1 << 40
    with pytest.raises(UsageError, match="<= 1T"):
        parse_sizes("2T")
    with pytest.raises(UsageError, match="<= 1T"):
        parse_sizes("1025G")
    assert len(parse_sizes(",".join(str(i) for i in range(256)))) == 256
    with pytest.raises(UsageError, match="257 sizes, at most 256"):
        parse_sizes(",".join(str(i) for i in range(257)))
