#!/usr/bin/env python3
"""Importing one big file: peak memory and rows per second (prints numbers, asserts nothing).

Issue 12 target: any file imports in < 500 MB of memory, at >= 50k rows/s (a 200 MB OSU
file, 8.4 M rows, used to take 387 s and 9.3 GB). The file is the real OSU captures of
tests/data/osu/ concatenated until it reaches --mb megabytes (each copy is a complete OSU
table, as a file of many appended runs is). The import runs in a child process (`mpibench
import` into a fresh store on the same filesystem), so its peak RSS is the child's
ru_maxrss; the time is the child's wall time, start-up included.

Usage: .venv/bin/python bench/bench_import_big.py [--quick] [--mb 200] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPO / "tests" / "data" / "osu").glob("*.txt"))
TARGET_MB, TARGET_ROWS_S = 500, 50_000


def make_file(path: Path, mb: float) -> None:
    # the killed-run capture ends a file: leave it out of a concatenation
    texts = [p.read_bytes() for p in SOURCES if b"BAD TERMINATION" not in p.read_bytes()]
    want = int(mb * 1e6)
    with open(path, "wb") as fh:
        written, i = 0, 0
        while written < want:
            t = texts[i % len(texts)]
            fh.write(t if t.endswith(b"\n") else t + b"\n")
            written += len(t) + 1
            i += 1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, help="file size in MB (default 200)")
    ap.add_argument("--quick", action="store_true", help="a 20 MB file instead of 200 MB")
    ap.add_argument("--dir", help="where the file and the store go (default: the temp dir)")
    args = ap.parse_args(argv)
    args.mb = args.mb or (20.0 if args.quick else 200.0)
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-big-", dir=args.dir) as tmp:
        src = Path(tmp) / "osu-big.txt"
        make_file(src, args.mb)
        db = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "mpibench", "import", str(src), "--np",
                               "2", "--db", str(db), "--json"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb = ru.ru_maxrss / 1024
        cpu = ru.ru_utime + ru.ru_stime
        con = sqlite3.connect(db)
        rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        con.close()
        size = src.stat().st_size
    print(f"file: {size / 1e6:.0f} MB of OSU output ({len(SOURCES)} real captures repeated), "
          f"{rows} rows stored, exit {proc.returncode}")
    print(f"import: {wall:.1f} s wall = {rows / wall:,.0f} rows/s "
          f"(target >= {TARGET_ROWS_S:,}: ratio {rows / wall / TARGET_ROWS_S:.2f}); "
          f"{cpu:.1f} s CPU = {rows / cpu:,.0f} rows per CPU second (what an idle core gives; "
          f"ratio {rows / cpu / TARGET_ROWS_S:.2f})")
    print(f"peak memory (child max RSS): {peak_mb:.0f} MB "
          f"(target < {TARGET_MB}: ratio {peak_mb / TARGET_MB:.2f}); "
          f"1-min load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
