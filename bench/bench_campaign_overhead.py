#!/usr/bin/env python3
"""What a `campaign run` invocation costs besides its launches (prints numbers, asserts nothing).

The time-to-decision bench (bench/bench_time_to_decision.py) runs one campaign invocation per
round and tool; its split of the time between launches (time_between) put 3.5-4.7 s before
the core's first launch of an invocation against 0.3-0.4 s before IMB's, in the same
mpibench (kept runs run-74, ttd-08, medians over 12 and 10 gaps). The difference is
budget = "auto"'s plan, which every invocation after the pilot made again from the same
pilot rows. Measured here side by side in one run, interleaved, medians of R rounds:

  plan      the plan of a core group with a finished pilot, as a later invocation gets it:
            before  BudgetRule.plan_rows (what every invocation did)
            first   campaign.budget.PlanCache.plan with an empty cache (the first invocation
                    now: the plan made, its key hashed, its record written)
            after   PlanCache.plan with the record there (every later invocation)
            and whether all three gave the same options and the same line, every round
  imports   a fresh Python process importing the modules `campaign run` loads before its
            first launch, from a copy of src/mpibench:
            compiled  Python's compiled-module cache in place (an installed mpibench, or a
                      checkout run once without PYTHONDONTWRITEBYTECODE)
            source    no cache and PYTHONDONTWRITEBYTECODE=1: compiled on every start (a
                      source checkout run from a shell that sets it, as this machine's do;
                      the time-to-decision bench now starts mpibench without it)

  ingest    parsers.core_jsonl.parse_core_jsonl on real captured core outputs (tests/data/
            core/, the campaign-shaped ttd/ capture among them; or --store DIR's runs/*/
            core.jsonl), each file parsed `json` (every field checked by json.dumps, as up to
            stop 39; each field once, where stop 39 checked it twice) and `fast` (the field
            check without encoding), interleaved; per launch (file), median over the rounds
            of each round's mean; and whether both gave the same rows, problems, header and
            footer (repr and pickle, every field bit for bit)
  files     one launch's six run-directory files (cell.json, job.sh, command.json,
            timing.json, exit_status, machine-probe.txt at their real sizes) written into a
            fresh directory under --dir (default: the temporary directory; give the
            campaign's filesystem): `each` flushed at its write (files.write_file outside a
            block), `together` in files.durable_together (renamed unflushed, flushed in one
            parallel pass with the directory and its parent); 10 launches a round, per
            launch, median over the rounds

The pilot is a synthetic one of the time-to-decision bench's shape (PingPong 0:22, two
variants, two interleaved rounds, seeded), or --store DIR: a kept time-to-decision run's core
directory (DIR/core.toml and DIR/mpibench.db, read only), its own pilot. The synthetic pilot
plans in 0.5 s (niced, load 4: every cell plain, one launch regime); real pilots take much
longer (run-74's: 3.7-6.8 s a plan in the live runs at load 5-9, 18 s niced at load 8: cut-
short cells and launch regimes make more pools to search), so --store gives the cost the
time-to-decision bench pays. The load average is printed at the start and the end (the
machine is shared).

Usage: .venv/bin/python bench/bench_campaign_overhead.py [--quick] [--rounds R] [--store DIR]
           [--parts plan,imports,ingest,files] [--dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CAMPAIGN = """
[campaign]
name = "core"
repeats = 6
equivalence = "5%"
budget = { launches = 10 }
[variants.openmpi]
stack = "openmpi"
transport = "shm"
np = 2
[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
[benchmarks.core]
benchmarks = ["PingPong"]
sizes = "0:22"
"""

# what `campaign run` imports before its first launch (its verb, the runner and its parts)
IMPORTS = ("import mpibench.cli as c; c.build_parser('campaign'); "
           "import mpibench.campaign.runner, mpibench.campaign.local, "
           "mpibench.campaign.group_kinds.core, mpibench.campaign.status, mpibench.store")


def synthetic_pilot(seed: int = 3) -> list[dict]:
    """Rows as store.report_queries.launch_cost_rows gives them: two interleaved rounds of
    openmpi and mpich, PingPong at 0:22, a round effect both share, each launch's own, a
    within-launch CI; cell seconds as the pilot's (20 samples, at most 0.002 s a cell)."""
    rng = random.Random(seed)
    sizes = [0] + [2 ** k for k in range(23)]
    rows = []
    for rep in range(2):
        phase = rng.gauss(0, 0.1)
        for v in ("openmpi", "mpich"):
            own = rng.gauss(0, 0.03)
            for size in sizes:
                base = 0.2 + size / 5000
                med = base * math.exp(phase + own + rng.gauss(0, 0.02))
                rows.append({"run_id": f"{v}{rep}", "variant": v, "repeat": rep,
                             "benchmark": "PingPong", "size": size, "n": 20, "median": med,
                             "ci_low": med * 0.97, "ci_high": med * 1.03,
                             "cell_s": min(0.002, 25 * med * 1e-6), "stop_reason": "target",
                             "status": "ok", "launch_s": 0.2, "mode": "adaptive"})
    return rows


def stored_pilot(d: Path):
    """(spec, pilot rows) of a kept run's core directory, as BudgetRule._plan reads them."""
    from mpibench.campaign.budget import BudgetRule
    from mpibench.campaign.spec import load
    from mpibench.store import Store
    from mpibench.store.report_queries import done_runs_of_group, launch_cost_rows

    spec = load(str(d / "core.toml"))
    with Store(d / "mpibench.db", readonly=True) as store:
        cid = store.db.execute("SELECT id FROM campaigns").fetchone()[0]
        runs = done_runs_of_group(store, cid, spec.groups[0].name)
        rows = launch_cost_rows(store, [r["id"] for r in runs if r["repeat"] < BudgetRule.PILOT])
    return spec, rows


def plan_rounds(spec, rows, rounds: int, tmp: Path) -> None:
    """The plan three ways, interleaved, `rounds` times; one line each and the ratios."""
    from mpibench.campaign.budget import BudgetRule, PlanCache

    warm = tmp / "warm"
    os.environ["MPIBENCH_CACHE"] = str(warm)
    PlanCache.plan(spec, rows)                 # the record every later invocation reads
    times: dict[str, list[float]] = {"before": [], "first": [], "after": []}
    made, same = set(), True
    for k in range(rounds):
        for how in ("before", "first", "after"):
            os.environ["MPIBENCH_CACHE"] = str(tmp / f"cold-{k}" if how == "first" else warm)
            t = time.perf_counter()
            if how == "before":
                p = BudgetRule.plan_rows(spec, rows)
                got = (p.best.options(), p.describe()) if p else None
            else:
                got, reused = PlanCache.plan(spec, rows)
                same = same and reused == (how == "after")
            times[how].append(time.perf_counter() - t)
            made.add(repr(got))
    med = {k: statistics.median(v) for k, v in times.items()}
    for how, v in times.items():
        print(f"  plan {how:6}: median {med[how]:.4f} s, min {min(v):.4f} s ({len(v)} rounds)")
    print(f"  plan ratios: after/before {med['after'] / med['before']:.4f}, first/before "
          f"{med['first'] / med['before']:.3f}; the same options and line every time: "
          f"{'yes' if len(made) == 1 and same else 'NO'}")


def import_rounds(rounds: int, tmp: Path) -> None:
    """A fresh process's start and imports, compiled modules cached vs compiled each time,
    interleaved, `rounds` times."""
    for name in ("compiled", "source"):
        shutil.copytree(ROOT / "src" / "mpibench", tmp / name / "mpibench",
                        ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = [sys.executable, "-c", IMPORTS]
    subprocess.run(run, env={**env, "PYTHONPATH": str(tmp / "compiled")}, check=True)
    times: dict[str, list[float]] = {"compiled": [], "source": []}
    for _ in range(rounds):
        for name in times:
            e = {**env, "PYTHONPATH": str(tmp / name)}
            if name == "source":
                e["PYTHONDONTWRITEBYTECODE"] = "1"
            t = time.perf_counter()
            subprocess.run(run, env=e, check=True)
            times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, v in times.items():
        print(f"  imports {name:8}: median {med[name]:.3f} s, min {min(v):.3f} s "
              f"({len(v)} rounds)")
    print(f"  imports ratio compiled/source {med['compiled'] / med['source']:.2f}")


def core_outputs(store: str | None) -> list[tuple[str, str]]:
    """(name, text) of the real core outputs the ingest part parses."""
    data = ROOT / "tests" / "data" / "core"
    paths = sorted(Path(store).glob("runs/*/core.jsonl")) if store else \
        sorted([*data.glob("*.jsonl"), *data.glob("ttd/*.jsonl")])
    return [(str(p), p.read_text(errors="replace")) for p in paths]


def ingest_rounds(outputs: list[tuple[str, str]], rounds: int) -> None:
    """parse_core_jsonl with json.dumps's field check and with the fast one, interleaved."""
    import pickle

    from mpibench.parsers import core_jsonl

    fast = core_jsonl._storable
    times: dict[str, list[float]] = {"json": [], "fast": []}
    same = True
    for _ in range(rounds):
        got = {}
        for how, check in (("json", core_jsonl._storable_json), ("fast", fast)):
            core_jsonl._storable = check
            t = time.perf_counter()
            got[how] = [core_jsonl.parse_core_jsonl(text, source=name) for name, text in outputs]
            times[how].append((time.perf_counter() - t) / len(outputs))
        core_jsonl._storable = fast
        same = same and repr(got["json"]) == repr(got["fast"]) \
            and pickle.dumps(got["json"]) == pickle.dumps(got["fast"])
    rows = sum(len(o.records) for o in got["fast"])
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  ingest of {len(outputs)} core outputs ({rows} rows), per launch:")
    for how, v in times.items():
        print(f"  ingest {how:4}: median {med[how] * 1e3:.2f} ms, min {min(v) * 1e3:.2f} ms "
              f"({len(v)} rounds)")
    print(f"  ingest ratio fast/json {med['fast'] / med['json']:.3f}; the same output "
          f"every round: {'yes' if same else 'NO'}")
    bounds_rounds([r for o in got["fast"] for r in o.records], rounds)


def bounds_rounds(rows: list[dict], rounds: int) -> None:
    """The parse's bounds check per row: the full check (parsers.base.bounds_problems)
    beside out_of_bounds with its fast path (plainly_in_bounds, which since stop 40 takes
    the core's rows: an int iterations / batch_floor_us sent every one the long way),
    interleaved; the same answer for every row."""
    from mpibench.parsers import base

    if not rows:
        return
    times: dict[str, list[float]] = {"full": [], "fast": []}
    for _ in range(rounds):
        for how, check in (("full", base.bounds_problems), ("fast", base.out_of_bounds)):
            t = time.perf_counter()
            for r in rows:
                check(r)
            times[how].append((time.perf_counter() - t) / len(rows))
    same = all(base.bounds_problems(r) == base.out_of_bounds(r) for r in rows)
    plain = sum(base.plainly_in_bounds(r) for r in rows)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  bounds check of {len(rows)} rows ({plain} on the fast path): full "
          f"{med['full'] * 1e6:.1f} us, fast path {med['fast'] * 1e6:.1f} us a row (medians of "
          f"{rounds} rounds); ratio {med['fast'] / med['full']:.3f}; the same answer: "
          f"{'yes' if same else 'NO'}")


LAUNCH_FILES = (("cell.json", 1141), ("job.sh", 2139), ("command.json", 973),
                ("timing.json", 102), ("exit_status", 2), ("machine-probe.txt", 554))


def files_rounds(rounds: int, where: Path, launches: int = 10) -> None:
    """A launch's six files flushed one at a time vs together, interleaved."""
    from mpibench.files import durable_together, write_file

    times: dict[str, list[float]] = {"each": [], "together": []}
    base = Path(tempfile.mkdtemp(prefix="mpibench-bench-files-", dir=where))
    try:
        for r in range(rounds):
            for how in times:
                t = time.perf_counter()
                for k in range(launches):
                    run = base / f"{how}-{r}-{k}"
                    run.mkdir()
                    with durable_together() if how == "together" else contextlib.nullcontext():
                        for name, size in LAUNCH_FILES:
                            write_file(run / name, "x" * size)
                times[how].append((time.perf_counter() - t) / launches)
    finally:
        shutil.rmtree(base)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  files: {len(LAUNCH_FILES)} a launch under {where}, per launch:")
    for how, v in times.items():
        print(f"  files {how:8}: median {med[how] * 1e3:.2f} ms, min {min(v) * 1e3:.2f} ms "
              f"({len(v)} rounds of {launches} launches)")
    print(f"  files ratio together/each {med['together'] / med['each']:.3f}")


PARTS = ("plan", "imports", "ingest", "files")


def plan_part(store: str | None, rounds: int, tmp: Path) -> None:
    if store:
        spec, rows = stored_pilot(Path(store))
        what = f"the pilot of {store}"
    else:
        from mpibench.campaign.spec import load

        (tmp / "core.toml").write_text(CAMPAIGN)
        spec, rows = load(str(tmp / "core.toml")), synthetic_pilot()
        what = "a synthetic pilot (PingPong 0:22, 2 variants, 2 rounds)"
    print(f"plan of budget = \"auto\" from {what}: {len(rows)} rows")
    plan_rounds(spec, rows, rounds, tmp)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 rounds (for make bench)")
    ap.add_argument("--rounds", type=int, default=7, metavar="R", help="rounds (default 7)")
    ap.add_argument("--store", metavar="DIR", help="a kept time-to-decision run's core/")
    ap.add_argument("--parts", default=",".join(PARTS), metavar="LIST",
                    help=f"which parts, comma-separated (default {','.join(PARTS)})")
    ap.add_argument("--dir", default=tempfile.gettempdir(), metavar="DIR",
                    help="where the files part writes (default: the temporary directory)")
    a = ap.parse_args(argv)
    rounds = 3 if a.quick else a.rounds
    if rounds < 1:
        ap.exit(2, f"{ap.prog}: error: --rounds: got {rounds}, expected 1 or more\n")
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    if not parts or not set(parts) <= set(PARTS):
        ap.exit(2, f"{ap.prog}: error: --parts: got {a.parts!r}, expected some of "
                   f"{', '.join(PARTS)}\n")
    if "files" in parts and not Path(a.dir).is_dir():
        ap.exit(2, f"{ap.prog}: error: --dir {a.dir}: not a directory\n")
    print(f"# campaign run's work besides its launches; start: load "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="mpibench-bench-overhead-") as td:
        tmp = Path(td)
        if "plan" in parts:
            plan_part(a.store, rounds, tmp)
        if "imports" in parts:
            import_rounds(rounds, tmp)
    if "ingest" in parts:
        ingest_rounds(core_outputs(a.store), rounds)
    if "files" in parts:
        files_rounds(rounds, Path(a.dir))
    print(f"# end: load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
