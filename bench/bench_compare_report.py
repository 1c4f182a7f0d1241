"""Benchmark `mpibench compare` and `mpibench report` on a large synthetic store.

    .venv/bin/python bench/bench_compare_report.py [--runs 10000] [--samples 1000000] [--keep DIR]
        [--shape deep|wide] [--against REV] [--rounds N] [--flags '...']

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
TARGETS = {"compare": 3.0, "report": 10.0}
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


def build(db: Path, runs: int, samples: int, seed: int = 1) -> None:
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
    from mpibench.cli import main
    rc = main([verb, "--db", db, "--baseline", "a", "-o", out, *extra])
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB -> MiB on Linux
    print(json.dumps({"verb": verb, "rc": rc, "elapsed": elapsed, "peak_mib": peak}))


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
    ap.add_argument("--phase", choices=["compare", "report"], help=argparse.SUPPRESS)
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
    (build_wide if args.shape == "wide" else build)(db, args.runs, args.samples)
    print(f"build: {time.perf_counter() - t0:.1f} s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failed = False
    for verb, out in (("compare", tmp / "compare.txt"), ("report", tmp / "report.html")):
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
                  f"output {rs[-1]['kib']:.0f} KiB")
        if len(codes) > 1:
            (a, ra), (b, rb) = res.items()
            if abs(ra[-1]["kib"] - rb[-1]["kib"]) > 0.02 * max(ra[-1]["kib"], 1):
                print(f"{verb:8s} NOTE: the outputs differ ({ra[-1]['kib']:.0f} vs "
                      f"{rb[-1]['kib']:.0f} KiB): the trees did different work (see --flags)")
            pairs = [y["elapsed"] / x["elapsed"] for x, y in zip(ra, rb, strict=True)]
            print(f"{verb:8s} elapsed {b} / {a}: {statistics.median(pairs):.2f}x (> 1: this "
                  f"tree is faster; median of {len(pairs)} interleaved pairs: "
                  f"{', '.join(f'{x:.2f}' for x in pairs)})")
    if not args.keep:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
