#!/usr/bin/env python3
"""Campaign harness costs (prints numbers, asserts nothing).

1. Planning: load + validate + expand a 100,000-cell matrix (target < 2 s), and, for
   information, writing those cells into a fresh store as pending runs, as sync did it
   before (one spec and one INSERT per run) and does now (shared JSON, one executemany),
   side by side.
2. Harness overhead per cell on 200 trivial cells (target < 50 ms/cell): application cells
   whose command is `true`, launched for real by Open MPI's mpirun with np=1 through the
   local scheduler. Overhead = (wall time of the whole `CampaignRunner.run()`, i.e. plan +
   store sync + per-cell run dir, state transactions, launch, ingest, fingerprint, commit)
   minus the sum of the launch commands' own elapsed times (mpirun + `true`, measured by
   wrapping the one command-runner seam). Transport probes are off here (verify_transport =
   false); their cost, one short launch per variant, is printed separately.

Usage: .venv/bin/python bench/bench_campaign.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from mpibench import execute
from mpibench.campaign.plan import expand
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.stacks import discover
from mpibench.store import Store


def bench_planning(tmp: Path, n_cells: int) -> None:
    # 10 variants x 100 x 100 parameter points x 1 repeat = 100,000 cells
    variants = "".join(f'[variants.v{i}]\nstack = "openmpi"\nnp = {i + 1}\n' for i in range(10))
    per_axis = int(round((n_cells / 10) ** 0.5))
    axis = ",".join(str(i) for i in range(per_axis))
    text = (f'[campaign]\nname = "plan"\nrepeats = 1\n{variants}'
            f'[benchmarks.grid]\ncommand = "app --a {{a}} --b {{b}} -n {{np}}"\n'
            f"params = {{ a = [{axis}], b = [{axis}] }}\n")
    path = tmp / "plan.toml"
    path.write_text(text)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        spec = load(path)
        cells = expand(spec)
        best = min(best, time.perf_counter() - t0)
    print(f"planning: {len(cells)} cells, load+validate+expand {best:.3f} s "
          f"(best of 3; target < 2 s) = {best / len(cells) * 1e6:.1f} us/cell")
    ids = {c.id for c in cells}
    print(f"planning: {len(ids)} distinct cell ids")
    bench_sync(tmp, spec, cells)


def bench_sync(tmp: Path, spec, cells) -> None:
    """First sync of a big campaign, planning excluded, each into a fresh store in one
    transaction. Before: per cell, its spec dict and one INSERT (Store.create_run), as sync
    did it. After: what sync does now (each variant x group and each parameter point
    serialised once, Store.create_runs = one executemany). Then the whole
    CampaignRunner.sync (planning included) and a re-sync (resume), which inserts nothing."""
    from mpibench.campaign.cells import _cell_spec

    times = {}
    for how in ("before", "after"):
        with Store(tmp / f"{how}.db") as store:
            runner = CampaignRunner(spec, store, [])
            cid = store.add_campaign(spec.name, spec.to_dict(), file=str(spec.path))
            t0 = time.perf_counter()
            with store.transaction():
                if how == "after":
                    store.create_runs(runner._new_runs(cid, cells))
                else:
                    for c in cells:
                        store.create_run(
                            c.id, cid, c.variant.name, grp=c.group.name, params=c.params,
                            repeat=c.repeat, spec=_cell_spec(c, spec.judging(c.variant.name)),
                            seq=c.seq, transport_requested=c.variant.transport,
                            scheduler=runner.scheduler.name, label=c.label,
                            run_dir=str(runner.run_dir(c)))
            times[how] = time.perf_counter() - t0
            assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == len(cells)
    print(f"store, first sync's {len(cells)} pending runs (one transaction, planning "
          f"excluded): before (spec per cell, one INSERT each) {times['before']:.2f} s, "
          f"after (shared JSON, one executemany) {times['after']:.2f} s = "
          f"{times['before'] / times['after']:.2f}x faster (for information)")
    with Store(tmp / "plan.db") as store:
        runner = CampaignRunner(spec, store, [])
        t0 = time.perf_counter()
        runner.sync()
        t_sync = time.perf_counter() - t0
        t0 = time.perf_counter()
        runner.sync()
        t_resync = time.perf_counter() - t0
    print(f"store sync, whole (plan + inserts): first {t_sync:.2f} s = "
          f"{t_sync / len(cells) * 1e6:.0f} us/cell; again on resume: {t_resync:.2f} s")


def bench_overhead(tmp: Path, n_cells: int) -> None:
    stacks = discover()
    half = n_cells // 2
    text = (f'[campaign]\nname = "overhead"\nrepeats = 2\ntimeout = 60\n'
            f'verify_transport = false\n'
            f'[variants.ompi]\nstack = "openmpi"\nnp = 1\n'
            f'[benchmarks.trivial]\ncommand = "true {{x}}"\n'
            f'params = {{ x = [{",".join(str(i) for i in range(half))}] }}\n')
    path = tmp / "overhead" / "overhead.toml"
    path.parent.mkdir()
    path.write_text(text)
    launched: list[float] = []
    real = execute.run_command

    def timed(*args, **kw):
        res = real(*args, **kw)
        launched.append(res.elapsed)
        return res

    execute.run_command = timed
    try:
        with Store(tmp / "overhead.db") as store:
            t0 = time.perf_counter()
            summary = CampaignRunner(load(path), store, stacks).run()
            wall = time.perf_counter() - t0
    finally:
        execute.run_command = real
    n = summary.ran
    launch = sum(launched)
    print(f"overhead: {n} cells ({summary.counts}), wall {wall:.2f} s, launches "
          f"(mpirun -np 1 true) {launch:.2f} s = {launch / n * 1e3:.1f} ms/cell")
    print(f"overhead: harness {(wall - launch) / n * 1e3:.1f} ms/cell "
          f"(target < 50 ms; plan + sync + run dir + transactions + ingest + fingerprint)")

    # one transport probe, for scale
    from mpibench.execute import Variant
    from mpibench.stacks import find_stack
    from mpibench.verify import verify_local

    stack = find_stack("openmpi", stacks)
    t0 = time.perf_counter()
    v = verify_local(stack, Variant(name="p", stack="openmpi", transport="shm"),
                     tmp / "probe", timeout=60)
    print(f"transport probe (once per variant per invocation): "
          f"{(time.perf_counter() - t0) * 1e3:.0f} ms -> {v.actual} ({v.verdict})")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="10,000 cells to plan and 40 to run instead of 100,000 and 200")
    quick = ap.parse_args(argv).quick
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-campaign-") as tmp:
        bench_planning(Path(tmp), 10_000 if quick else 100_000)
        bench_overhead(Path(tmp), 40 if quick else 200)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
