#!/usr/bin/env python3
"""Time to decision: Open MPI vs MPICH PingPong 0:22 over shared memory, np=2.

    .venv/bin/python bench/bench_time_to_decision.py [--quick] [--max-rounds N] [--keep DIR]

A cell is decided when its launch-level test is significant after Holm over the table, or
when its gain's 95% CI is within ±5% (a difference that small is "the same" for a user).
Part 1 runs mpibench-core as a campaign, one interleaved round (one launch per variant) at a
time (raising `repeats`; earlier launches are kept), and stops when every cell is decided
or at --max-rounds. Part 2 runs IMB-MPI1 PingPong (built per stack from ../shared/peers by
the campaign's `suite = "imb"` group) the same number of interleaved rounds and applies the
same launch-level test to its per-launch means. It prints, per round, the launches' wall
time (the store's per-launch elapsed seconds: waiting for the shared MPI lock and IMB's
build are not counted) and the cells decided, and both totals side by side.

Each campaign invocation takes the shared MPI lock (/tmp/mpibench-mpi.lock) itself, so the
bench never holds it for long. One run, numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.report.compare import compare_groups, select_groups  # noqa: E402
from mpibench.store import Store  # noqa: E402

# the peers tarballs sit beside the repository (../shared/peers), never at an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS") or ROOT.parent / "shared" / "peers")
IMB_TGZ = PEERS / "imb-2021.11.tar.gz"
LOCK = "/tmp/mpibench-mpi.lock"
TARGET = 0.05

HEAD = """
[campaign]
name = "{name}"
repeats = {repeats}
verify_transport = false
timeout = 900

[variants.openmpi]
stack = "openmpi"
transport = "shm"
np = 2

[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
"""

CORE = """
[benchmarks.core]
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""

IMB = """
[benchmarks.imb]
suite = "imb"
source = "{tgz}"
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""


def run_round(camp: Path, text: str) -> None:
    camp.write_text(text)
    mpibench = str(Path(sys.executable).parent / "mpibench")
    res = subprocess.run(["flock", LOCK, mpibench, "campaign", "run", "--no-progress",
                          str(camp)], capture_output=True, text=True, timeout=1800)
    if res.returncode not in (0, 1):
        sys.exit(f"campaign run failed ({res.returncode}): {res.stderr[-2000:]}")


def launch_seconds(db: Path) -> float:
    con = sqlite3.connect(db)
    try:
        return float(con.execute("SELECT COALESCE(SUM(elapsed), 0) FROM runs "
                                 "WHERE status = 'done'").fetchone()[0])
    finally:
        con.close()


def decided(db: Path, statistic: str) -> tuple[int, int, int, int]:
    """(cells, decided, significant, within ±5%) of openmpi vs mpich."""
    with Store(db) as store:
        groups = select_groups(store, variants=["openmpi", "mpich"], by="variant")
        cmp = compare_groups(store, groups, "openmpi", statistic=statistic)
    sig = close = 0
    for r in cmp.rows:
        d = r.deltas["mpich"]
        if d.significant:
            sig += 1
        elif d.gain and d.ci_low is not None and \
                max(d.gain - d.ci_low, d.ci_high - d.gain) / d.gain <= TARGET:
            close += 1
    return len(cmp.rows), sig + close, sig, close


def part(name: str, work: Path, group: str, rounds: int, statistic: str,
         stop_when_decided: bool) -> tuple[int, float, tuple]:
    work.mkdir(parents=True, exist_ok=True)
    camp = work / f"{name}.toml"
    db = work / "mpibench.db"
    print(f"\n{name}: statistic per launch = {statistic}")
    print(f"  {'rounds':>6} {'launch s':>9} {'cells':>6} {'decided':>8} {'signif':>7} "
          f"{'±5%':>5}")
    state = (0, 0, 0, 0)
    k = 0
    for k in range(1, rounds + 1):
        run_round(camp, HEAD.format(name=name, repeats=k) + group)
        secs = launch_seconds(db)
        if k < 2:
            print(f"  {k:>6} {secs:>9.1f}   (one launch per variant decides nothing)")
            continue
        state = decided(db, statistic)
        print(f"  {k:>6} {secs:>9.1f} {state[0]:>6} {state[1]:>8} {state[2]:>7} {state[3]:>5}",
              flush=True)
        if stop_when_decided and state[0] and state[1] == state[0]:
            break
    return k, launch_seconds(db), state


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="sizes 0:10, at most 4 rounds")
    ap.add_argument("--max-rounds", type=int, default=10)
    ap.add_argument("--keep", metavar="DIR", help="keep the campaigns and stores in DIR")
    a = ap.parse_args(argv)
    sizes = "0:10" if a.quick else "0:22"
    rounds = min(a.max_rounds, 4) if a.quick else a.max_rounds
    if shutil.which("flock") is None:
        print("flock not found: this bench takes the shared MPI lock per campaign run")
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-ttd-"))
    print(f"# time to decision: Open MPI vs MPICH PingPong {sizes}, np=2, shm; decided = "
          f"significant (Welch t on log launch statistics, Holm) or gain CI within "
          f"±{100 * TARGET:g}%")
    n, core_s, core_state = part("core", root / "core", CORE.format(sizes=sizes), rounds,
                                 "median", True)
    if not IMB_TGZ.exists():
        print(f"\nIMB: {IMB_TGZ} not found; set MPIBENCH_PEERS")
        return 0
    m, imb_s, imb_state = part("imb", root / "imb", IMB.format(tgz=IMB_TGZ, sizes=sizes), n,
                               "mean", False)
    print(f"\nmpibench-core: {n} rounds, {core_s:.1f} s of launches, {core_state[1]} of "
          f"{core_state[0]} cells decided")
    print(f"IMB-MPI1:      {m} rounds, {imb_s:.1f} s of launches, {imb_state[1]} of "
          f"{imb_state[0]} cells decided (same rounds, same test on IMB's per-launch means)")
    if imb_s:
        print(f"ratio core/IMB wall time {core_s / imb_s:.2f}")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
