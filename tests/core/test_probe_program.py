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


# A responder that waits 30 ms before each answer: one 16-round-trip batch (~480 ms) passes
# the sampling cap (300 ms at --ms 1) during the warm-up already. The rule in
# core/probe/cacheline.h still takes one sample then (the stop-35 CI run's np=3 launch had no
# start reading at all: a loaded machine, three ranks on two CPUs); one sample is fewer than
# stats.probe.MIN_SAMPLES, so the gate does not judge it. Sleeps only lengthen the times the
# assertions bound from below.
SLOW_RESPONDER = r"""
#define _GNU_SOURCE
#include "cacheline.h"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic uint64_t line;

static void *respond_slowly(void *arg)
{
    uint64_t seen = 0;
    (void)arg;
    for (;;) {
        uint64_t v = atomic_load(&line);
        if (v == MB_CL_STOP)
            return NULL;
        if (v != seen && (v & 1u)) {
            usleep(30000);
            seen = v;
            atomic_store(&line, v + 1);
        }
    }
}

int main(void)
{
    static double s[1000];
    pthread_t t;
    pthread_create(&t, NULL, respond_slowly, NULL);
    double t0 = mb_cl_now_ns();
    long long n = (long long)mb_cl_sample(&line, 1.0, 16, s, 1000);
    double took_ms = (mb_cl_now_ns() - t0) / 1e6;
    atomic_store(&line, MB_CL_STOP);
    pthread_join(t, NULL);
    printf("%lld %.0f %.0f\n", n, n > 0 ? s[0] : 0.0, took_ms);
    return 0;
}
"""


def test_a_responder_slower_than_the_cap_still_gives_one_sample(tmp_path):
    from mpibench.build import source_root

    src = tmp_path / "slow.c"
    src.write_text(SLOW_RESPONDER)
    exe = tmp_path / "slow"
    cc = subprocess.run(["cc", "-O1", "-std=c11", "-pthread",
                         f"-I{source_root() / 'core' / 'probe'}", str(src), "-o", str(exe)],
                        capture_output=True, text=True, timeout=60)
    assert cc.returncode == 0, cc.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    n, first_ns, took_ms = (float(x) for x in res.stdout.split())
    # one sample, never more past the cap; the sample is a 30 ms round trip at least
    assert n == 1, res.stdout
    assert first_ns >= 30e6 and took_ms >= 2 * 16 * 30
