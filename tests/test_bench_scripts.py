"""`make bench` passes --quick to every bench/bench_*.py (bench/run_all.py): each must accept it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("bench_*.py")))
def test_every_bench_accepts_quick(script):
    res = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "--quick" in res.stdout, f"{script} --help does not offer --quick"
