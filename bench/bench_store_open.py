#!/usr/bin/env python3
"""Opening a big local store read-only (prints numbers, asserts nothing).

Every read-only open (compare, report, campaign list/status, profile --show, mpibench.api)
checks the file first: SQLite's quick check, then every value (issue 22). A store whose
bytes already passed is not checked again: store/local.py `_Verified` hashes the file (and
its -wal) and compares with the digest recorded after its checks last passed. Measured side
by side in one run, interleaved, best and median of R rounds, on one store of the bench
archive's shape (bench_archive.build_local: runs x 8 sizes x 100 raw samples):

  checked   the checks every time (the record off), what every open did before
  recorded  the same file again, its digest recorded: hashing only
  first     a new path (a copy): the checks, and its stamp recorded (nothing hashed)
  second    the copy again, stamp unchanged: hashed and checked, the digest recorded

The ratio is checked / recorded. What the record detects is a test, not a bench:
tests/store/test_local.py damages a recorded store in place (size, inode and mtime kept)
and requires the same refusal as a store never recorded.

Usage: .venv/bin/python bench/bench_store_open.py [--quick] [--runs N]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_archive import build_local
from bench_campaign_list import sized_run


def main(argv: list[str]) -> int:
    # 12,000 runs are ~100 MiB, 2,000 ~17 MiB
    runs, rounds = sized_run(argv, __doc__, "runs", "runs", 2000, 12_000)
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-open-") as tmp:
        os.environ["MPIBENCH_CACHE"] = str(Path(tmp) / "cache")   # records of this run only
        from mpibench.store import Store, local

        db = Path(tmp) / "big.db"
        t0 = time.perf_counter()
        build_local(db, runs, 8)
        size = db.stat().st_size
        print(f"store: {runs} runs x 8 sizes x 100 samples in {time.perf_counter() - t0:.1f} s "
              f"({size / 2**20:.0f} MiB)")
        if size < local._Verified.MIN_BYTES:
            print(f"(below {local._Verified.MIN_BYTES >> 20} MiB a store is checked every time; "
                  "the record is on for this bench)")
            local._Verified.MIN_BYTES = 0

        def open_once(path: Path, record: bool) -> float:
            keep = local._Verified.MIN_BYTES
            if not record:
                local._Verified.MIN_BYTES = 1 << 62
            try:
                t = time.perf_counter()
                Store(path, readonly=True).close()
                return time.perf_counter() - t
            finally:
                local._Verified.MIN_BYTES = keep

        open_once(db, True)                     # warm: imports, page cache, the record
        checked, recorded, first, second = [], [], [], []
        for i in range(rounds):                 # interleaved, so load drifts hit each
            checked.append(open_once(db, False))
            recorded.append(open_once(db, True))
            copy = Path(tmp) / f"copy{i}.db"
            shutil.copyfile(db, copy)
            first.append(open_once(copy, True))
            second.append(open_once(copy, True))
            copy.unlink()
    for name, ts in (("checked (every open)", checked), ("recorded (hash only)", recorded),
                     ("first open of a path", first), ("second open (+ hash)", second)):
        print(f"{name:22s} best {min(ts):.3f} s  median {statistics.median(ts):.3f} s")
    print(f"ratio checked/recorded: best {min(checked) / min(recorded):.1f}x, median "
          f"{statistics.median(checked) / statistics.median(recorded):.1f}x; a path's first "
          f"and second opens cost {statistics.median(first) / statistics.median(checked):.2f}x"
          f" and {statistics.median(second) / statistics.median(checked):.2f}x a checked one "
          f"({rounds} interleaved rounds, {size / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
