"""The core's send and receive buffers start on a 4 KiB boundary in every launch, read from
its own output (buffer_page_offsets, rank 0's addresses mod 4096), not from timing.

Why it matters: with malloc the receive buffer's page offset relative to the send buffer
changed from launch to launch (glibc mmaps a >= 128 KiB request at page offset 16 until a
free raises its threshold, then the heap places it), often 16 bytes: 4K aliasing between the
two buffers made Open MPI's shared-memory Allreduce at 16-256 KiB 1.5-3x slower in those
launches only, a per-launch mode the demo's A/A could not tell from a real difference.
The old core fails this test: PingPong's 256 KiB buffers came back at [16, 16]."""

from __future__ import annotations

import pytest

from support.coreutil import build_all, check_schema, exe_of, launch

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    return build_all(tmp_path_factory)


# PingPong's 256 KiB pair (glibc's mmap path), then Allreduce after that free (the heap
# path), Barrier (a one-byte pair), small sizes only (the heap from the start), and the
# --off-cache pool of copies
CASES = {
    "mmap-then-heap": ["--sizes", "8,1024,16384,262144", "PingPong", "Allreduce", "Barrier"],
    "small-heap": ["--sizes", "8,1024,16384", "Sendrecv", "Allreduce"],
    "off-cache": ["--sizes", "1024,65536", "--off-cache", "PingPong", "Allreduce"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_buffers_start_on_a_page(core, case, tmp_path):
    out = tmp_path / "r.jsonl"
    run = launch("openmpi", exe_of(core, "openmpi"), 2,
                 ["--max-time", "0.01", "--min-samples", "5", "--quiet", *CASES[case]],
                 out, timeout=120)
    assert run.res.returncode == 0, run.res.stderr_tail()
    check_schema(run.records)
    results = [r for r in run.records if r["record"] == "result"]
    assert results
    for r in results:
        assert r["status"] == "ok", r
        assert r["buffer_page_offsets"] == [0, 0], (r["benchmark"], r["size"],
                                                    r["buffer_page_offsets"])
