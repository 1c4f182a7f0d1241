#!/usr/bin/env python3
"""`mpibench campaign list` over a store of many campaigns (prints numbers, asserts nothing).

The store: N campaigns (default 1,010) written by the real code (a campaign file loaded and
expanded, its cells written by CampaignRunner's bulk path, states set through Store.set_run),
8 cells each in mixed states. Then the whole verb, `cli.main(["campaign", "list", "--db",
S])` with stdout captured, measured side by side in one run, interleaved, best and median of
R rounds each:

  before  every row drawn by rich (what the verb did: rich measures and wraps each cell),
          reproduced by raising report.render.PLAIN_TABLE_ROWS above N for that call
  after   what the verb does now: past PLAIN_TABLE_ROWS rows, fixed-width text

and, for information, the part both share (opening the store read-only with its checks,
the one query that counts every campaign's cells). The ratio is before / after. Then the
same for `campaign list FILE`, whose terminal page is 1000 cells (of a 2,400-cell campaign).

Usage: .venv/bin/python bench/bench_campaign_list.py [--quick] [--campaigns N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mpibench.campaign import status as st
from mpibench.campaign.plan import expand
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.cli import main as cli_main
from mpibench.report import render
from mpibench.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.synth import app_campaign_store  # noqa: E402

CAMPAIGN = """\
[campaign]
name = "c"
repeats = 2
[variants.a]
stack = "openmpi"
np = 2
[variants.b]
stack = "mpich"
np = 2
[benchmarks.grid]
command = "app --a {a}"
params = { a = [1, 2] }
"""
STATES = ("done", "failed", "timeout", "running", "pending")


def build(tmp: Path, n: int) -> Path:
    path = tmp / "c.toml"
    path.write_text(CAMPAIGN)
    spec = load(path)
    cells = expand(spec)
    db = tmp / "list.db"
    with Store(db) as store:
        runner = CampaignRunner(spec, store, [])
        with store.transaction():
            for i in range(n):
                cid = store.add_campaign(f"campaign-{i}", spec.to_dict(), file=f"/c/{i}.toml")
                rows = list(runner._new_runs(cid, cells))
                for r in rows:
                    r["run_id"] = f"{r['run_id']}-{i}"   # cell ids are per campaign file
                store.create_runs(rows)
                for j, r in enumerate(rows):
                    store.set_run(r["run_id"], STATES[(i + j) % len(STATES)], elapsed=1.5)
    return db


def list_once(db: Path, rich_rows: int, file: list[str] = ()) -> tuple[float, str]:
    """One `campaign list [FILE]` with rich drawing up to rich_rows rows; (seconds,
    output)."""
    keep = render.PLAIN_TABLE_ROWS
    render.PLAIN_TABLE_ROWS = rich_rows
    buf = io.StringIO()
    try:
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            rc = cli_main(["campaign", "list", *file, "--db", str(db)])
        took = time.perf_counter() - t0
    finally:
        render.PLAIN_TABLE_ROWS = keep
    if rc != 0:
        raise SystemExit(f"campaign list exited {rc}")
    return took, buf.getvalue()


def cells_page(tmp: Path, rounds: int) -> str:
    """`campaign list FILE`: its first page of 1000 cells (of 2400), before and after."""
    path, db = app_campaign_store(tmp, list(range(1200)))
    list_once(db, 10**9, [str(path)])        # warm
    before, after = [], []
    for _ in range(rounds):
        before.append(list_once(db, 10**9, [str(path)])[0])
        after.append(list_once(db, render.PLAIN_TABLE_ROWS, [str(path)])[0])
    return (f"campaign list FILE, a page of 1000 cells: before (rich) median "
            f"{statistics.median(before):.3f} s, after (plain) {statistics.median(after):.3f} "
            f"s; ratio median {statistics.median(before) / statistics.median(after):.1f}x")


def shared_part(db: Path) -> float:
    t0 = time.perf_counter()
    with Store(db, readonly=True) as store:
        st.campaigns(store)
    return time.perf_counter() - t0


def sized_run(argv: list[str], doc: str, flag: str, what: str, quick: int, full: int,
              at_least: int = 1) -> tuple[int, int]:
    """A side-by-side bench's arguments: --quick and --FLAG N. Returns (N, rounds): N from
    --FLAG, else `quick` with --quick, else `full`; 3 interleaved rounds with --quick, 7
    without. (bench_store_open.py takes its arguments here too.)"""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"{quick:,} {what} and 3 rounds instead of {full:,} and 7")
    ap.add_argument(f"--{flag}", type=int, metavar="N", dest="n",
                    help=f"how many {what} (default {full:,}; {quick:,} with --quick)")
    args = ap.parse_args(argv)
    n = args.n or (quick if args.quick else full)
    if n < at_least:
        ap.error(f"--{flag} must be at least {at_least}")
    return n, 3 if args.quick else 7


def main(argv: list[str]) -> int:
    # above PLAIN_TABLE_ROWS, or the two writers would be the same
    n, rounds = sized_run(argv, __doc__, "campaigns", "campaigns", 400, 1010,
                          at_least=render.PLAIN_TABLE_ROWS + 1)
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-list-") as tmp:
        t0 = time.perf_counter()
        db = build(Path(tmp), n)
        print(f"store: {n} campaigns x 8 cells written by the real code in "
              f"{time.perf_counter() - t0:.2f} s ({db.stat().st_size / 2**20:.1f} MiB)")
        list_once(db, n + 1)                 # warm: imports, page cache
        before, after, shared = [], [], []
        lines = {}
        for _ in range(rounds):              # interleaved, so load drifts hit both
            t, out = list_once(db, n + 1)
            before.append(t)
            lines["before"] = out.count("\n")
            t, out = list_once(db, render.PLAIN_TABLE_ROWS)
            after.append(t)
            lines["after"] = out.count("\n")
            shared.append(shared_part(db))
        cells = cells_page(Path(tmp), rounds)
    for name, ts in (("before (rich, every row)", before), ("after (plain past "
                     f"{render.PLAIN_TABLE_ROWS} rows)", after)):
        print(f"{name:34s} best {min(ts):.3f} s  median {statistics.median(ts):.3f} s "
              f"({lines[name.split()[0]]} lines)")
    print(f"{'shared: open with checks + query':34s} best {min(shared):.3f} s  median "
          f"{statistics.median(shared):.3f} s")
    print(f"ratio before/after: best {min(before) / min(after):.1f}x, median "
          f"{statistics.median(before) / statistics.median(after):.1f}x "
          f"({rounds} interleaved rounds, {n} campaigns)")
    print(cells)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
