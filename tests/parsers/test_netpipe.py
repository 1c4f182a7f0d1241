"""NetPIPE parser against real runs made on this machine (tests/data/netpipe: NetPIPE 3.7.2,
`mpirun -np 2 NPopenmpi|NPmpich2 -u 65536 -o FILE`, the -o files and one stdout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpibench.parsers.detect import parse_bytes
from mpibench.parsers.netpipe import MBPS_TO_MBYTES, parse_netpipe

DATA = Path(__file__).parents[1] / "data" / "netpipe"


def at(res, size):
    (r,) = [r for r in res.records if r["size"] == size]
    return r


def test_output_file_openmpi():
    res = parse_bytes((DATA / "netpipe3.7.2-openmpi4.1.4-np2.out").read_bytes())
    assert (res.format, res.tool) == ("netpipe", "NetPIPE")
    assert res.problems == [] and len(res.records) == 82
    r = at(res, 65536)
    assert r["mean"] == pytest.approx(18.18)                  # 0.00001818 s
    assert r["extra"]["mbps_printed"] == 27507.347048
    assert r["bandwidth_mbps"] == pytest.approx(27507.347048 * 1048576 / 8 / 1e6)
    # NetPIPE's Mbps is 2^20 bits/s: bytes / time agrees with the converted figure
    assert r["bandwidth_mbps"] == pytest.approx(65536 / 18.18, rel=2e-3)
    assert (r["np"], r["statistic"], r["metric"], r["n"]) == (2, "min", "time", None)
    assert at(res, 1)["mean"] == pytest.approx(0.37)
    assert at(res, 3)["extra"]["mbps_printed"] == 59.776081


def test_output_file_mpich():
    res = parse_bytes((DATA / "netpipe3.7.2-mpich4.0.2-np2.out").read_bytes())
    assert len(res.records) == 82 and res.problems == []
    assert at(res, 1)["extra"]["mbps_printed"] == 12.278581
    assert at(res, 1)["mean"] == pytest.approx(0.62)


def test_stdout_form():
    res = parse_bytes((DATA / "netpipe3.7.2-openmpi4.1.4-np2.stdout.txt").read_bytes())
    assert res.format == "netpipe" and res.meta["form"] == "stdout"
    assert res.problems == [] and len(res.records) == 82
    r = at(res, 65536)
    assert (r["mean"], r["extra"]["mbps_printed"], r["extra"]["repetitions"]) == (18.18,
                                                                                  27507.35, 2501)
    assert r["bandwidth_mbps"] == pytest.approx(27507.35 * MBPS_TO_MBYTES)


def test_bad_lines_reported():
    res = parse_netpipe("1 20.0 0.00000037\n2 x 0.00000037\n3 59.7 0.00000038 9\n"
                        "4 80.0 0.00000038\n")
    assert [r["size"] for r in res.records] == [1, 4]
    assert [p.line for p in res.problems] == [2, 3]
