#!/usr/bin/env python3
"""Where a core launch's wall time goes, per stack, side by side: the launcher, MPI_Init, the
core's own start-up, each stage of the per-size loop, and MPI_Finalize with the teardown.

    .venv/bin/python bench/bench_core_launch_cost.py [--quick] [--launches N] [--sizes SPEC]
        [--stack openmpi|mpich ...] [--options plan|defaults] [--keep DIR]
    .venv/bin/python bench/bench_core_launch_cost.py --from DIR [DIR ...]

Each stack's core (the build cache's, bench_launch_spread's way) runs PingPong at np=2 over
shared memory with `bind = "core"`, launched as a campaign launches it (execute.prepare_cell:
the stack's registered launcher and the `shm` preset), with the options the time-to-decision
bench's budgeted rounds use (--options plan, the default: --target 100 --max-time 0.002
--accept-approximate --exclude-preempted --preempted-max-time 0.05, the plan stats/budget.py
made in its runs 66-70) or the core's defaults. Beside every core launch the same launcher
runs /bin/true with the same options (np, binding, transport): the launcher's own floor.
Launches are interleaved round by round, the order rotated each round; every round holds
the shared MPI lock (/tmp/mpibench-mpi.lock) and every launch has a timeout.

Per launch, from the core's own records (core/driver.c, docs/core-output.md) and one
CLOCK_MONOTONIC reading before the launcher starts and one after it exits:
  wall        launcher start to its exit (what the store's elapsed counts, less the
              harness's few ms of Python around it)
  to main     launcher start to rank 0's main (header start_monotonic_s): the launcher
              starting its processes, exec and the dynamic loader
  MPI_Init    the header's mpi_init_us, the max over ranks (rank 0's own is not written):
              rank 0 waits in its first collective for the slowest rank's MPI_Init, so
              charging the max here keeps that wait out of "core start"
  core start  rank 0's footer elapsed_s (from its main) less that max MPI_Init and the
              sizes' elapsed_s: timer calibration, the machine-state readings at start
              and end (--state-ms), header and buffers (allocated and touched once per
              benchmark); where rank 0's MPI_Init was the slowest this is exact, else it
              is rank 0's time after the slowest rank's MPI_Init ended
  sizes       the sum over sizes of elapsed_s, split by the result's phases_s (setup, first
              call, validation, settling, batch calibration, warm-up, sampling, statistics)
  finalize    rank 0's footer to the launcher's exit: MPI_Finalize and the launcher's teardown
  floor       the same launcher running /bin/true (its start plus teardown, no MPI)
Each figure is the median over the launches of that stack (ms); the load average is printed
per round (the machine is shared). One run, numbers only, no assertions.

--from DIR... launches nothing: each DIR a run bench_time_to_decision.py kept (--keep), it
splits that run's own launches the same way, per tool and variant side by side: the store's
per-launch elapsed seconds (what the TTD bench counts; DIR/core/mpibench.db and
DIR/imb/mpibench.db, finished launches; the gate's set-aside launches are not in them) and,
for the core's launches, from each one's core.jsonl: outside main (the store's elapsed less
the footer's elapsed_s: the launcher's start-up, MPI_Finalize, the teardown and the
harness's few ms), MPI_Init, core start, sizes and (from cores that write phases_s) its
stages, and the sizes a launch ran (the later looks run only undecided sizes).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics as stt
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from bench_launch_spread import core_stacks  # noqa: E402 - the same stacks and cores
from mpibench.execute import Variant, core_args, prepare_cell  # noqa: E402
from mpibench.process import run_command  # noqa: E402

LOCK = "/tmp/mpibench-mpi.lock"
OPTIONS = {
    "plan": {"target": 100, "max_time": 0.002, "accept_approximate": True,
             "exclude_preempted": True, "preempted_max_time": 0.05},
    "defaults": {},
}
PHASES = ("setup", "first", "validate", "settle", "calibrate", "warmup", "measure",
          "statistics")
ROWS = ("wall", "to main", "MPI_Init", "core start", "sizes", *[f"  {p}" for p in PHASES],
        "  3 largest sizes", "finalize", "floor (/bin/true)", "wall - floor")


def one_launch(stack, program: list[str], run_dir: Path, jsonl: Path | None,
               timeout: float) -> tuple[float, float, str]:
    """(t0, wall s, error) of one launch under the stack's launcher, as a campaign runs it."""
    run_dir.mkdir(parents=True)
    variant = Variant(name="cost", stack=stack.name, transport="shm", np=2, bind="core")
    cmd = prepare_cell(stack, variant, program, run_dir, jsonl=jsonl)
    t0 = time.monotonic()
    res = run_command(cmd.argv, env=cmd.env, cwd=run_dir, timeout=timeout,
                      stdout_path=cmd.stdout, stderr_path=cmd.stderr)
    wall = time.monotonic() - t0
    return t0, wall, "" if res.ok else f"exit {res.returncode}: {res.stderr[-300:]}"


def breakdown(t0: float, wall: float, jsonl: Path) -> dict[str, float]:
    """One core launch's row (seconds) from its records and the two outside readings.
    "core start" subtracts the max-over-ranks MPI_Init from rank 0's elapsed (see the
    module docstring: rank 0's wait for the slowest rank's MPI_Init counts as MPI_Init)."""
    recs = [json.loads(ln) for ln in jsonl.read_text().splitlines() if ln.strip()]
    head = next(r for r in recs if r["record"] == "header")
    foot = next(r for r in recs if r["record"] == "footer")
    res = [r for r in recs if r["record"] == "result"]
    init = (head.get("mpi_init_us") or 0.0) / 1e6
    sizes = sum(r.get("elapsed_s") or 0.0 for r in res)
    main_at = head["start_monotonic_s"]
    row = {"wall": wall, "to main": main_at - t0, "MPI_Init": init,
           "core start": foot["elapsed_s"] - init - sizes, "sizes": sizes,
           "finalize": t0 + wall - (main_at + foot["elapsed_s"])}
    for p in PHASES:
        row[f"  {p}"] = sum((r.get("phases_s") or {}).get(p, 0.0) for r in res)
    big = sorted(res, key=lambda r: r["size"])[-3:]
    row["  3 largest sizes"] = sum(r.get("elapsed_s") or 0.0 for r in big)
    return row


def run_round(a, stacks, exes, root: Path, rnd: int) -> list[tuple[str, str, dict | None]]:
    jobs = [(s, kind) for s in stacks for kind in ("core", "floor")]
    k = rnd % len(jobs)
    out = []
    with open(LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            for stack, kind in jobs[k:] + jobs[:k]:
                d = root / f"r{rnd:03d}-{stack.name}-{kind}"
                jsonl = d / "core.jsonl" if kind == "core" else None
                prog = [str(exes[stack.name]), *core_args(["PingPong"], a.sizes, jsonl,
                                                           OPTIONS[a.options])] \
                    if kind == "core" else ["/bin/true"]
                t0, wall, err = one_launch(stack, prog, d, jsonl, a.timeout)
                if err or (jsonl is not None and not jsonl.exists()):
                    print(f"    {stack.name} {kind}: failed: {err or 'no output'}")
                    out.append((stack.name, kind, None))
                    continue
                out.append((stack.name, kind, breakdown(t0, wall, jsonl) if jsonl
                            else {"wall": wall}))
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    return out


def report(stacks: list[str], got: list[tuple[str, str, dict | None]]) -> None:
    def med(stack: str, kind: str, key: str) -> float | None:
        xs = [r[key] for s, k, r in got if s == stack and k == kind and r and key in r]
        return stt.median(xs) if xs else None

    n = {s: sum(1 for x, k, r in got if x == s and k == "core" and r) for s in stacks}
    print("\nms per launch, median over launches  "
          + "  ".join(f"{s} (n={n[s]})".rjust(18) for s in stacks))
    for key in ROWS:
        cells = []
        for s in stacks:
            if key == "floor (/bin/true)":
                v = med(s, "floor", "wall")
            elif key == "wall - floor":
                w, f = med(s, "core", "wall"), med(s, "floor", "wall")
                v = None if w is None or f is None else w - f
            else:
                v = med(s, "core", key)
            cells.append("-".rjust(18) if v is None else f"{v * 1e3:18.1f}")
        print(f"{key:<36}" + "  ".join(cells))


def kept_rows(store: Path, tool: str) -> list[tuple[str, str, dict | None]]:
    """(variant, tool, row) per finished launch in one kept campaign store."""
    import sqlite3

    if not store.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            runs = con.execute("SELECT variant, elapsed, run_dir FROM runs WHERE status = "
                               "'done' AND elapsed IS NOT NULL").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ValueError(f"{store}: not an mpibench store with a runs table ({exc})") from exc
    out = []
    for variant, elapsed, run_dir in runs:
        row: dict = {"wall": elapsed}
        jsonl = Path(run_dir or "") / "core.jsonl"
        if tool == "core" and jsonl.exists():
            recs = [json.loads(ln) for ln in jsonl.read_text().splitlines() if ln.strip()]
            head = next((r for r in recs if r["record"] == "header"), None)
            foot = next((r for r in recs if r["record"] == "footer"), None)
            res = [r for r in recs if r["record"] == "result"]
            if head is None or foot is None:
                continue
            init = (head.get("mpi_init_us") or 0.0) / 1e6
            sizes = sum(r.get("elapsed_s") or 0.0 for r in res)
            row.update({"outside main": elapsed - foot["elapsed_s"], "MPI_Init": init,
                        "core start": foot["elapsed_s"] - init - sizes, "sizes": sizes,
                        "sizes run": float(len(res))})
            for p in PHASES:
                if all("phases_s" in r for r in res):
                    row[f"  {p}"] = sum(r["phases_s"][p] for r in res)
        out.append((variant, tool, row))
    return out


def report_kept(dirs: list[str]) -> int:
    got = []
    for d in dirs:
        stores = [Path(d) / tool / "mpibench.db" for tool in ("core", "imb")]
        if not any(s.is_file() for s in stores):
            print(f"--from {d}: no {stores[0]} nor {stores[1]}; expected a directory "
                  "bench_time_to_decision.py --keep wrote", file=sys.stderr)
            return 2
        for tool, store in zip(("core", "imb"), stores, strict=True):
            try:
                got += kept_rows(store, tool)
            except ValueError as exc:
                print(f"--from {d}: {exc}", file=sys.stderr)
                return 2
    if not got:
        print(f"--from {', '.join(dirs)}: no finished launch in the stores",
              file=sys.stderr)
        return 2
    cols = sorted({(t, v) for v, t, _ in got}, key=lambda c: (c[0] != "core", c[0], c[1]))
    print(f"# launches kept by bench_time_to_decision.py in {', '.join(dirs)}")
    print("ms per launch, median over launches  "
          + "  ".join(f"{t} {v} (n={sum(1 for x, y, _ in got if (y, x) == (t, v))})".rjust(22)
                      for t, v in cols))
    keys = ("wall", "outside main", "MPI_Init", "core start", "sizes",
            *[f"  {p}" for p in PHASES], "sizes run")
    for key in keys:
        cells = []
        for t, v in cols:
            xs = [r[key] for x, y, r in got if (y, x) == (t, v) and r and key in r]
            scale = 1.0 if key == "sizes run" else 1e3
            cells.append(f"{stt.median(xs) * scale:22.1f}" if xs else "-".rjust(22))
        print(f"{key:<36}" + "  ".join(cells))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 launches per stack")
    ap.add_argument("--launches", type=int, default=None, help="per stack (default 10)")
    ap.add_argument("--sizes", default="0:22", help="the core's --sizes (default 0:22)")
    ap.add_argument("--stack", action="append", default=None,
                    help="registered stack names (default openmpi and mpich)")
    ap.add_argument("--options", choices=sorted(OPTIONS), default="plan",
                    help="the core's options: the TTD bench's budgeted plan, or its defaults")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per launch")
    ap.add_argument("--keep", metavar="DIR", help="keep the run directories in DIR (new)")
    ap.add_argument("--from", dest="kept", nargs="+", metavar="DIR",
                    help="launch nothing: split the launches of runs the TTD bench kept")
    a = ap.parse_args(argv)
    if a.kept:
        return report_kept(a.kept)
    a.launches = a.launches or (3 if a.quick else 10)
    if a.keep and Path(a.keep).exists():
        ap.error(f"--keep: {a.keep} exists; give a new directory")
    stacks, exes = core_stacks(a.stack)
    if not stacks:
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-launch-cost-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"# core launch cost: PingPong {a.sizes}, np=2, shm, bind core, options "
          f"{a.options} {OPTIONS[a.options]}; {a.launches} launches per stack and kind "
          "(core, /bin/true), interleaved")
    print("# start: load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    got: list[tuple[str, str, dict | None]] = []
    try:
        for rnd in range(a.launches):
            got += run_round(a, stacks, exes, root, rnd)
            print(f"  round {rnd + 1}/{a.launches}: load "
                  "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("# end: load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    report([s.name for s in stacks], got)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
