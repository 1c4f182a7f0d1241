#!/usr/bin/env python3
"""Run every bench/bench_*.py in turn (what `make bench` does) and print their reports.

Benchmarks print ratios and measured numbers side by side from one run; they never assert on
time, because these machines are shared and noisy. Pass --quick to ask each for a short run,
or name scripts to run a subset: `bench/run_all.py bench_import.py`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")]
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.name in names or s.stem in names]
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        start = time.monotonic()
        rc = subprocess.call([sys.executable, str(script), *(["--quick"] if quick else [])])
        print(f"--- {script.name}: exit {rc}, {time.monotonic() - start:.1f} s wall", flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"\nbenchmarks that did not complete: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
