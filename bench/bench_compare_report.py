"""Benchmark `mpibench compare` and `mpibench report` on a large synthetic store.

    .venv/bin/python bench/bench_compare_report.py [--runs 10000] [--samples 1000000] [--keep DIR]
        [--shape deep|wide] [--against REV] [--rounds N] [--flags '...'] [--core-extra]

Builds a store with --runs runs (2 variants x 5 benchmarks x 4 np x repeats, interleaved)
holding --samples raw samples in total (5 sizes per run; --shape wide: every run its own
application cell instead), then runs each verb in a fresh
process (so import cost and peak RSS are the verb's own) and prints elapsed seconds and peak
memory against the targets: compare < 3 s, report < 10 s, peak RSS < 1 GiB.
Timings on a shared 2-core machine are noisy; the numbers are for orders of magnitude.

--against REV runs the same verbs with the code of another commit (its src/ from
`git archive`, first on PYTHONPATH) on the same store, interleaved with this tree's over
--rounds rounds, and prints both medians and their ratio: before/after measured side by side
in one run, under the same load.

--core-extra stores in every result row (deep shape) the extra fields the core writes (about
1 KB of JSON: its stationarity finding, preempted counts, the launch's machine_probe record,
...; the keys of a run-64 row of /tmp/ttd-data), which the report reads for the stop
column, the preempted counts and the machine-state line: what parsing those rows costs.
--verbs compare,report,load picks the verbs; `load` is report.data.load_cells over every
run (the rows read and pooled into cells, no test, no table): the part that parses them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"compare": 3.0, "report": 10.0, "load": 3.0}
MEM_TARGET_MIB = 1024
BENCHES = ["PingPong", "Sendrecv", "Allreduce", "Alltoall", "Bcast"]
NPS = [2, 4, 8, 16]
SIZES = [8, 1024, 65536, 1 << 20, 1 << 22]


def build_wide(db: Path, runs: int, samples: int, seed: int = 1) -> None:
    """Worst case for row count: every run is its own application cell (runs/2 cells per
    variant, one launch each), so the table has runs/2 rows and one test per row."""
    import numpy as np

    from mpibench import stats
    from mpibench.store import Store

    rng = np.random.default_rng(seed)
    per_run = max(1, samples // runs)
    with Store(db) as store:
        cid = store.add_campaign("bench", {"price_per_node_hour": 2.0})
        fps = {v: store.add_fingerprint({"stack": {"name": v, "version": "1"}}) for v in "ab"}
        with store.transaction():
            for i in range(runs // 2):
                params = {"nodes": 1 + i % 8, "case": i // 8}
                for v, speed in (("a", 1.0), ("b", 1.05)):
                    rid = f"{v}-{i}"
                    store.create_run(rid, cid, v, grp="app", params=params, seq=2 * i,
                                     fingerprint_id=fps[v])
                    x = rng.normal(10.0 * speed * params["nodes"], 0.5, per_run)
                    store.add_results(rid, [{"benchmark": "app", "size": None, "np": 2,
                                             "metric": "ns/day", "unit": "ns/day",
                                             "better": "higher", "samples": x,
                                             **stats.summarize(x)}])
                    store.set_run(rid, "done", started=1.7e9 + i, elapsed=60.0)
    print(f"store (wide): {runs} runs, {runs} results, {per_run * runs} samples, "
          f"{db.stat().st_size / 2**20:.0f} MiB")


def core_extra(rng, rid: str) -> dict:
    """The extra fields of a core result row (a stored run-64 row's keys and kinds of
    values): what report.data parses per row."""
    return {"family": "pt2pt", "active_ranks": 2, "idle_ranks": 0, "batched": True,
            "rebatched": 0, "settle_iterations": 127, "settle_faults": 0, "settled": True,
            "sample_faults": 0, "iterations": 2560, "ci_level": 0.95, "ci_exact": False,
            "ci_method": "order_statistics_n_eff", "autocorr_time": float(rng.uniform(1, 3)),
            "stationarity": str(rng.choice(["untested", "stationary", "drift"])),
            "rank_min_us": float(rng.uniform()), "rank_max_us": float(rng.uniform()),
            "rank_avg_us": float(rng.uniform()), "bytes": 0, "busbw_factor": None,
            "timer_fraction": 0.00192, "batch_floor_us": 20, "sync": "round",
            "late_samples": 0, "preempted": int(rng.integers(0, 3)),
            "preempted_excluded": True, "validation": {"checked": True, "ok": True},
            "off_cache": False, "buffer_copies": 1, "mem_per_rank": 8192,
            "root_shift": False, "per_call": False, "large_count": False,
            "elapsed_s": float(rng.uniform(0, 0.01)),
            "machine_probe": {"before_ns": 86.4, "after_ns": 85.1, "waited_s": 0.0,
                              "waits": 0, "reading": "launch", "elapsed_s": 0.176,
                              "state": "reference", "reference_ns": 86.4,
                              "set_aside": [], "run": rid}}


def build(db: Path, runs: int, samples: int, seed: int = 1, extra: bool = False) -> None:
    import numpy as np

    from mpibench import stats
    from mpibench.store import Store

    rng = np.random.default_rng(seed)
    per_result = max(1, samples // (runs * len(SIZES)))
    repeats = max(1, runs // (2 * len(BENCHES) * len(NPS)))
    with Store(db) as store:
        cid = store.add_campaign("bench", {"line_rate_bps": 100e9})
        fps = {v: store.add_fingerprint({"stack": {"name": v, "version": "1"}}) for v in "ab"}
        seq = 0
        with store.transaction():
            for rep in range(repeats):
                for bench in BENCHES:
                    for np_ in NPS:
                        for v, speed in (("a", 1.0), ("b", 0.93)):
                            rid = f"{v}-{bench}-{np_}-{rep}"
                            store.create_run(rid, cid, v, grp="core", repeat=rep, seq=seq,
                                             fingerprint_id=fps[v], spec={"stack": v})
                            seq += 1
                            recs = []
                            for s in SIZES:
                                mu = (0.3 + s / 5000) * np.log2(np_ * 2) * speed
                                x = rng.lognormal(np.log(mu), 0.05, per_result)
                                summ = stats.summarize(x)
                                recs.append({"benchmark": bench, "size": s, "np": np_,
                                             "samples": x, **summ, "first": mu * 10,
                                             "bandwidth_mbps": s / summ["median"],
                                             "stop_reason": "target"})
                                if extra:
                                    recs[-1]["extra"] = core_extra(rng, rid)
                            store.add_results(rid, recs)
                            store.set_run(rid, "done", started=1.7e9 + seq, elapsed=1.0)
        n_runs = store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        n_res = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        n_samp = store.db.execute("SELECT SUM(LENGTH(samples)) / 8 FROM results").fetchone()[0]
    print(f"store: {n_runs} runs, {n_res} results, {n_samp} samples, "
          f"{db.stat().st_size / 2**20:.0f} MiB")


def phase(verb: str, db: str, out: str, extra: list[str]) -> None:
    """Run one verb in this (fresh) process; print elapsed and peak RSS as JSON. Elapsed
    starts before mpibench (and numpy) are imported: their import is part of the verb's
    cost; the interpreter's own start is in the parent's 'process wall'."""
    t0 = time.perf_counter()
    rc = load_phase(db, out) if verb == "load" else cli_phase(verb, db, out, extra)
    elapsed = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    peak = ru.ru_maxrss / 1024   # KiB -> MiB on Linux
    # CPU seconds (user + system, the interpreter's start included): on a loaded machine
    # the wall time waits for a CPU, the CPU time much less
    print(json.dumps({"verb": verb, "rc": rc, "elapsed": elapsed, "peak_mib": peak,
                      "cpu": ru.ru_utime + ru.ru_stime,
                      "parses_per_row": LOADS["json"] / max(LOADS["rows"], 1)}))


def cli_phase(verb: str, db: str, out: str, extra: list[str]) -> int:
    from mpibench.cli import main
    return main([verb, "--db", db, "--baseline", "a", "-o", out, *extra])


LOADS = {"json": 0, "rows": 0}


def load_phase(db: str, out: str) -> int:
    """report.data.load_cells over every run of the store, each variant a set; writes the
    cells' stop reasons, preempted counts and machine probes to `out` (both trees must
    agree); counts the json.loads calls it makes (LOADS)."""
    import mpibench.report.data as data
    from mpibench.store import Store

    real = json.loads

    def counted(*a, **k):
        LOADS["json"] += 1
        return real(*a, **k)

    data.json.loads = counted
    with Store(db, readonly=True) as store:
        sets: dict[str, list[str]] = {}
        for rid, v in store.db.execute("SELECT id, variant FROM runs ORDER BY seq"):
            sets.setdefault(v, []).append(rid)
        LOADS["rows"] = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        cells = data.load_cells(store, sets)
    data.json.loads = real
    lines = [f"{k} {g} {sorted(c.stop_reasons.items())} {c.preempted} "
             f"{len(c.machine_probes)}" for k, by in cells.items() for g, c in by.items()]
    Path(out).write_text("\n".join(lines) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--keep", metavar="DIR", help="build the store in DIR and keep it")
    ap.add_argument("--shape", choices=["deep", "wide"], default="deep",
                    help="deep: 200 cells pooling many launches (default); wide: every run "
                         "its own application cell (runs/2 table rows)")
    ap.add_argument("--against", metavar="REV",
                    help="also run the verbs with the code of this commit (e.g. the commit "
                         "before a change) and print the ratio")
    ap.add_argument("--rounds", type=int, default=None,
                    help="interleaved runs per verb and code (default 1, or 3 with --against)")
    ap.add_argument("--flags", default="", metavar="'FLAGS'",
                    help="extra flags for both verbs, e.g. '--cost-per-node-hour 2' (so that "
                         "two trees that turn tables on differently do the same work)")
    ap.add_argument("--quick", action="store_true",
                    help="a tenth of the store (1,000 runs, 100,000 samples): checks the "
                         "bench runs; the targets are for the full size")
    ap.add_argument("--core-extra", action="store_true",
                    help="every result row carries the core's extra fields (~1 KB of JSON, "
                         "deep shape): the cost of parsing them")
    ap.add_argument("--verbs", default="compare,report", metavar="LIST",
                    help="comma-separated among compare, report, load (default "
                         "compare,report)")
    ap.add_argument("--phase", choices=list(TARGETS), help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        phase(args.phase, args.db, args.out, shlex.split(args.flags))
        return 0
    if args.quick:
        args.runs, args.samples = args.runs // 10, args.samples // 10
        print("--quick: a tenth of the store the targets are set for; the 'of target' "
              "figures below are not a verdict on them")
    rounds = args.rounds or (3 if args.against else 1)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mpibench-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    db = tmp / "bench.db"
    if db.exists():
        db.unlink()
    codes = {"this tree": None}
    if args.against:
        base = tmp / "against"
        if base.exists():
            shutil.rmtree(base)
        base.mkdir()
        arch = subprocess.run(["git", "-C", str(REPO), "archive", args.against, "src"],
                              capture_output=True, timeout=120)
        if arch.returncode != 0:
            print(f"--against {args.against}: {arch.stderr.decode().strip()}")
            return 2
        subprocess.run(["tar", "-x", "-C", str(base)], input=arch.stdout, check=True,
                       timeout=120)
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.against],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        codes[f"at {rev}"] = base / "src"
    t0 = time.perf_counter()
    if args.shape == "wide":
        build_wide(db, args.runs, args.samples)
    else:
        build(db, args.runs, args.samples, extra=args.core_extra)
    print(f"build: {time.perf_counter() - t0:.1f} s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failed = False
    outs = {"compare": "compare.txt", "report": "report.html", "load": "load.txt"}
    verbs = [v.strip() for v in args.verbs.split(",") if v.strip()]
    if not verbs or any(v not in outs for v in verbs):
        print(f"--verbs {args.verbs!r}: expected a comma-separated list of "
              f"{', '.join(outs)}")
        return 2
    for verb, out in ((v, tmp / outs[v]) for v in verbs):
        res: dict[str, list[dict]] = {name: [] for name in codes}
        for _ in range(rounds):
            for name, src in codes.items():          # interleaved: same load for both
                env = {**os.environ, "COLUMNS": "200"}
                if src is not None:
                    env["PYTHONPATH"] = str(src)
                w0 = time.perf_counter()
                p = subprocess.run([sys.executable, __file__, "--phase", verb, "--db",
                                    str(db), "--out", str(out), f"--flags={args.flags}"],
                                   capture_output=True, text=True, timeout=600, env=env)
                wall = time.perf_counter() - w0
                if p.returncode != 0:
                    print(p.stderr[-2000:])
                    return 1
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["wall"] = wall
                r["kib"] = out.stat().st_size / 1024
                res[name].append(r)
        for name, rs in res.items():
            el = statistics.median(r["elapsed"] for r in rs)
            wall = statistics.median(r["wall"] for r in rs)
            peak = max(r["peak_mib"] for r in rs)
            ok_t = el <= TARGETS[verb]
            ok_m = peak <= MEM_TARGET_MIB
            if name == "this tree":
                failed |= not (ok_t and ok_m and all(r["rc"] == 0 for r in rs))
            spread = (f" [{min(r['elapsed'] for r in rs):.2f}-"
                      f"{max(r['elapsed'] for r in rs):.2f}]" if len(rs) > 1 else "")
            print(f"{verb:8s} {name:>12s}: elapsed {el:6.2f} s{spread} (median of {len(rs)}; "
                  f"target {TARGETS[verb]:.0f} s, {el / TARGETS[verb]:.2f}x of target) "
                  f"{'ok' if ok_t else 'OVER'}; process wall {wall:5.2f} s; peak RSS "
                  f"{peak:5.0f} MiB (target {MEM_TARGET_MIB}) {'ok' if ok_m else 'OVER'}; "
                  f"output {rs[-1]['kib']:.0f} KiB"
                  + (f"; json.loads per result row {rs[-1]['parses_per_row']:.2f}"
                     if verb == "load" else ""))
        if len(codes) > 1:
            (a, ra), (b, rb) = res.items()
            if abs(ra[-1]["kib"] - rb[-1]["kib"]) > 0.02 * max(ra[-1]["kib"], 1):
                print(f"{verb:8s} NOTE: the outputs differ ({ra[-1]['kib']:.0f} vs "
                      f"{rb[-1]['kib']:.0f} KiB): the trees did different work (see --flags)")
            for what in ("elapsed", "cpu"):
                pairs = [y[what] / x[what] for x, y in zip(ra, rb, strict=True)]
                mine = statistics.median(x[what] for x in ra)
                print(f"{verb:8s} {what} {b} / {a}: {statistics.median(pairs):.2f}x (> 1: "
                      f"this tree is faster; median of {len(pairs)} interleaved pairs: "
                      f"{', '.join(f'{x:.2f}' for x in pairs)}; this tree {mine:.2f} s)")
    if not args.keep:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
