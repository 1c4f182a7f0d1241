"""core/probe/mpibench-cacheline: built by campaign.machine_probe.probe_program, its one JSON line
read by stats.probe.parse_probe, its bad arguments refused with exit 2. No MPI; nothing
asserts on the round trip's value (it depends on where the host runs the CPUs)."""

from __future__ import annotations

import os
import subprocess

import pytest

from mpibench.campaign.machine_probe import probe_program
from mpibench.stats.probe import parse_probe

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs"),
]


@pytest.fixture(scope="module")
def program():
    return probe_program()


def _run(program, *args):
    return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=20)


def test_probe_reports_one_reading_the_parser_accepts(program):
    res = _run(program, "--ms", "1")
    assert res.returncode == 0, res.stderr
    r = parse_probe(res.stdout, where="mpibench-cacheline")
    first_two = tuple(sorted(os.sched_getaffinity(0))[:2])
    assert r.cpus == first_two
    assert r.samples >= 1 and 0 < r.q1_ns <= r.median_ns <= r.q3_ns


def test_probe_on_named_cpus(program):
    a, b = sorted(os.sched_getaffinity(0))[:2]
    r = parse_probe(_run(program, "--cpus", f"{b},{a}", "--ms", "0.5", "--batch", "4").stdout,
                    where="mpibench-cacheline")
    assert r.cpus == (b, a)


@pytest.mark.parametrize("args, what", [
    (["--cpus", "0,0"], "two different CPU numbers"),
    (["--cpus", "x"], "two different CPU numbers"),
    (["--ms", "0"], "bad --ms"),
    (["--ms", "5000"], "bad --ms"),
    (["--batch", "0"], "bad --batch"),
    (["--frobnicate", "1"], "unknown option"),
    (["--ms"], "without its value"),
    (["--cpus", f"0,{os.cpu_count() + 7}"], "cannot pin to the second CPU"),
])
def test_bad_arguments_exit_2_and_say_why(program, args, what):
    res = _run(program, *args)
    assert res.returncode == 2
    assert what in res.stderr and "usage:" in res.stderr
    assert res.stdout == ""
