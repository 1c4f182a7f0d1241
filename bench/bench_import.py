#!/usr/bin/env python3
"""Import throughput (prints numbers, asserts nothing).

Issue 6 target: importing 1,000 IMB files of the full MPI-1 set takes under 10 s. The files
are copies of the two real np2-all captures (tests/data/imb/*-np2-all.txt: 19 benchmarks,
315 rows each) with every time and bandwidth varied (so each file has its own sha256 and is
really parsed and stored), written to a temporary directory. Timed: mpibench.importer.
import_files into a fresh store, i.e. read + sha256 + dedupe lookup + detect + parse + one
savepoint per file (campaign, fingerprint, run, 315 result rows, import record), committed
in batches (importer.BATCH_FILES / BATCH_SECONDS), with the files parsed in a second process
(importer.PROCESS_MIN_FILES). Printed beside it, from the same run: parse-only time, so the
store's share is visible; the same import in one process (no parser process: what a
one-core machine gets); and a second import of the same files (all skipped).

Usage: .venv/bin/python bench/bench_import.py [--quick] [--files N] [--dir DIR]
(--dir /dev/shm puts the files and the store on tmpfs, to separate disk cost from CPU cost)
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from mpibench import importer
from mpibench.importer import import_files
from mpibench.parsers.detect import parse_bytes
from mpibench.store import Store, bulk

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPO / "tests" / "data" / "imb").glob("*-np2-all.txt"))
TARGET_S = 10.0
NUM = re.compile(r"(?<=\s)(\d+\.\d\d)(?=\s|$)")


def variants(n: int, out: Path) -> list[Path]:
    rng = random.Random(6)
    texts = [p.read_text() for p in SOURCES]
    paths = []
    for i in range(n):
        text = texts[i % len(texts)]
        scale = rng.uniform(0.5, 2.0)

        def vary(m: re.Match, scale: float = scale) -> str:
            return f"{float(m.group(1)) * scale:.2f}"

        # vary every two-decimal figure (times and bandwidths) by one factor per file
        varied = NUM.sub(vary, text)
        p = out / f"imb-run{i:04d}.txt"
        p.write_text(varied)
        paths.append(p)
    return paths


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 files instead of 1,000")
    ap.add_argument("--files", type=int, help="how many files (overrides --quick)")
    ap.add_argument("--dir", help="where the files and the store go (e.g. /dev/shm)")
    args = ap.parse_args(argv)
    n = args.files or (100 if args.quick else 1000)
    where = args.dir
    if not SOURCES:
        print("no tests/data/imb/*-np2-all.txt fixtures found")
        return 1
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-import-", dir=where) as tmp:
        tmpd = Path(tmp)
        files = variants(n, tmpd)
        size_mb = sum(p.stat().st_size for p in files) / 1e6

        t0 = time.perf_counter()
        rows = 0
        for p in files:
            rows += len(parse_bytes(p.read_bytes()).records)
        parse_s = time.perf_counter() - t0

        with Store(tmpd / "bench.db") as store:
            # instrument the per-file writes and the batch commits (bench only)
            spent = {"write": 0.0, "commit": 0.0, "commits": 0}
            real_write, real_commit = importer._write_parts, bulk.Batch.commit

            def timed_write(*args, **kw):
                c = time.thread_time()
                try:
                    return real_write(*args, **kw)
                finally:
                    spent["write"] += time.thread_time() - c

            def timed_commit(batch):
                c = time.perf_counter()
                try:
                    return real_commit(batch)
                finally:
                    spent["commit"] += time.perf_counter() - c
                    spent["commits"] += 1

            importer._write_parts, bulk.Batch.commit = timed_write, timed_commit
            try:
                kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0, c0 = time.perf_counter(), time.process_time()
                rep = import_files(store, files)
                import_s = time.perf_counter() - t0
                import_cpu = time.process_time() - c0
                kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # the parser process
                worker_cpu = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
            finally:
                importer._write_parts, bulk.Batch.commit = real_write, real_commit
            t0 = time.perf_counter()
            again = import_files(store, files)
            again_s = time.perf_counter() - t0
            stored = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

        # the same import without the parser process (what a one-core machine gets)
        saved = importer.PROCESS_MIN_FILES
        importer.PROCESS_MIN_FILES = n + 1
        try:
            with Store(tmpd / "bench-one-process.db") as store:
                t0, c0 = time.perf_counter(), time.process_time()
                one = import_files(store, files)
                one_s = time.perf_counter() - t0
                one_cpu = time.process_time() - c0
        finally:
            importer.PROCESS_MIN_FILES = saved

    ok = sum(1 for f in rep.files if f.status == "imported")
    ok_one = sum(1 for f in one.files if f.status == "imported")
    skipped = sum(1 for f in again.files if f.status == "skipped")
    print(f"directory: {where or tempfile.gettempdir()}")
    print(f"files: {n} IMB-MPI1 full MPI-1 set outputs ({size_mb:.1f} MB, {rows} rows parsed, "
          f"{ok} imported, {stored} rows stored)")
    print(f"import (read + sha256 + detect + parse + store): {import_s:.2f} s "
          f"= {1000 * import_s / n:.2f} ms/file, {n / import_s:.0f} files/s")
    print(f"  CPU: this process {import_cpu:.2f} s + parser process {worker_cpu:.2f} s "
          f"(1-min load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores)")
    print(f"  parse only (same files, no store, measured separately): {parse_s:.2f} s wall")
    print(f"  inside the import: storing rows (importer._write_parts) {spent['write']:.2f} s CPU "
          f"({100 * spent['write'] / import_cpu:.0f}% of this process's), "
          f"{spent['commits']} commits {spent['commit']:.2f} s wall")
    print(f"same import in one process (no parser process): {one_s:.2f} s wall, "
          f"{one_cpu:.2f} s CPU; the parser process makes it {one_s / import_s:.2f}x faster")
    print(f"re-import of the same files (all skipped: {skipped}): {again_s:.2f} s")
    if ok != n or ok_one != n:
        print(f"FAILED: only {ok} / {ok_one} of {n} files imported")
        return 1
    scaled = import_s * 1000 / n
    verdict = "meets" if scaled < TARGET_S else "MISSES"
    print(f"target: 1,000 files in < {TARGET_S:.0f} s -> {scaled:.2f} s for 1,000 files "
          f"({verdict} the target; ratio {scaled / TARGET_S:.2f} of the budget)")
    return 0 if skipped == n else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
