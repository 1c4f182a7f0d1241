#!/usr/bin/env python3
"""Run every bench/bench_*.py in turn (what `make bench` does) and print their reports.

Benchmarks print ratios and measured numbers side by side from one run; they never assert on
time, because these machines are shared and noisy. Pass --quick to ask each for a short run,
or name scripts to run a subset: `bench/run_all.py bench_import.py`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse(argv: list[str]) -> tuple[bool, list[Path]]:
    """(--quick, the scripts to run); a name that is no bench/bench_*.py is a usage error
    (it used to run nothing, silently), and --help prints this usage instead of starting
    every benchmark."""
    scripts = sorted(HERE.glob("bench_*.py"))
    ap = argparse.ArgumentParser(
        prog="bench/run_all.py", description=__doc__.split("\n\n")[0],
        epilog="scripts: " + " ".join(s.name for s in scripts))
    ap.add_argument("--quick", action="store_true",
                    help="pass --quick to each script (a short run)")
    ap.add_argument("names", nargs="*", metavar="SCRIPT",
                    help="run only these (bench_import.py or bench_import); default: all")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if not any(n in (s.name, s.stem) for s in scripts)]
    if unknown:
        ap.error(f"no such bench script: {', '.join(unknown)} (expected one of the scripts "
                 "listed by --help)")
    if args.names:
        scripts = [s for s in scripts if s.name in args.names or s.stem in args.names]
    return args.quick, scripts


def main(argv: list[str]) -> int:
    quick, scripts = parse(argv)
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
