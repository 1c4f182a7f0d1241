"""Benchmark the team archive (PostgreSQL, docs/archive.md) at team scale.

    .venv/bin/python bench/bench_archive.py [--quick] [--runs 1000000] [--results-per-run 10]
        [--sample-fraction 0.01] [--push-runs 10000] [--keep DIR]

Starts a throw-away PostgreSQL (store/pg_local.py, fsync on), loads a synthetic archive with
COPY (--runs runs in campaigns of 1000 runs: 3 sites x months, 4 variants of 250 launches
each, --results-per-run results per run, raw samples (100 per result) for
--sample-fraction of the results), then times in fresh processes (import cost included):

  push      `mpibench push` of a --push-runs run local store (campaigns of 1000 runs with
            raw samples) into that archive, and the same push again (nothing new)
  compare   two variants (250 launches each) of a pushed campaign, on the archive and on the
            local SQLite file side by side; the same in a synthetic campaign; and one variant
            at one site in January vs July (two campaigns, 250 launches each)
  report    `mpibench report` of that selection, archive and local file side by side

  labels    two labels (one variant at two sites) over one hour that spans 28 campaigns per
            site (--since/--until: the runs_label and runs_started indexes)
  small     the same compare on a small archive (a second database holding only the pushed
            store), interleaved with the big one's: the big/small ratio is what a million runs
            cost, the small archive's time is what Python start-up, imports and the machine's
            load cost
  --other-src DIR   also time compare and report with another checkout's src/ (e.g. the
            commit before a change), interleaved: before/after under the same load

and prints the archive's size on disk. Targets (issue 24): compare < 2 s, report < 10 s, push
of a 10,000-run store < 30 s, on a 2-core machine. Each timing is the median of --rounds
runs; a shared machine is noisy, so read them as orders of magnitude and the ratios (each
measured side by side, rounds interleaved) as what the archive adds. The package is
byte-compiled first (an installed mpibench has its .pyc files; PYTHONDONTWRITEBYTECODE would
otherwise make every fresh process compile ~80 modules). --quick: 20,000 runs and a 1,000-run
push.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

VARIANTS = ("ompi-ucx", "ompi-ob1", "mpich-ucx", "mpich-tcp")
SITES = ("alpha", "beta", "gamma")
SIZES = (0, 8, 64, 512, 4096, 32768, 262144, 1 << 20, 1 << 21, 1 << 22)
TARGETS = {"compare": 2.0, "report": 10.0, "push": 30.0}
RUNS_PER_CAMPAIGN = 1000
# the same variant at one site in two months: an upgrade compared with the spring's image
MONTHS_SEL = ["--campaign", "alpha-fabric-m01-0", "--campaign", "alpha-fabric-m07-0",
              "--variant", "ompi-ucx"]
# one variant at two sites over one hour of month 7: 28 campaigns per site run then
LABELS_SEL = ["--label", "ompi-ucx@alpha", "--label", "ompi-ucx@beta",
              "--since", "2024-05-12T22:13:20", "--until", "2024-05-12T23:13:20"]
SAMPLES = 100


def _copy_frame(cur, table: str, df) -> None:
    buf = io.StringIO()
    df.to_csv(buf, header=False, index=False, na_rep="", float_format="%.9g")
    with cur.copy(f"COPY {table} ({', '.join(df.columns)}) FROM STDIN (FORMAT csv)") as cp:
        cp.write(buf.getvalue())


def load_synthetic(url: str, runs: int, per_run: int, sample_fraction: float,
                   seed: int = 7) -> dict:
    """COPY a synthetic archive: campaigns, fingerprints, runs, results (some with samples)."""
    import numpy as np
    import pandas as pd
    import psycopg

    from mpibench.store.archive import ensure_schema
    from mpibench.store.engine import PgConnection

    rng = np.random.default_rng(seed)
    db = PgConnection(psycopg.connect(url))
    ensure_schema(db, "bench")
    conn = db.raw
    cur = conn.cursor()
    # bulk load: indexes and FK checks after, not per row (what a restore does)
    idx = {r[0]: r[1] for r in cur.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename IN ('runs', 'results') AND indexdef NOT LIKE '%UNIQUE%'")}
    for name in idx:
        cur.execute(f"DROP INDEX {name}")
    cur.execute("SET session_replication_role = replica")
    n_camp = max(1, runs // RUNS_PER_CAMPAIGN)
    t_start = 1.70e9
    month = 30 * 86400.0
    camps = pd.DataFrame({
        "id": np.arange(1, n_camp + 1),
        "name": [f"{SITES[i % 3]}-fabric-m{i // 3 % 12 + 1:02d}-{i // 36}" for i in range(n_camp)],
        "file": [f"/home/{SITES[i % 3]}/fabric.toml" for i in range(n_camp)],
        "spec_json": "{}",
        "created": [t_start + (i // 3 % 12) * month + i for i in range(n_camp)],
        "key": [f"k{i:019d}" for i in range(n_camp)]})
    _copy_frame(cur, "campaigns", camps)
    cur.execute("SELECT setval(pg_get_serial_sequence('campaigns', 'id'), %s)", (n_camp,))
    fps = pd.DataFrame({"id": [f"fp-{s}-{v}" for s in SITES for v in VARIANTS],
                        "json": [json.dumps({"site": s, "stack": v}) for s in SITES
                                 for v in VARIANTS]})
    _copy_frame(cur, "fingerprints", fps)
    speed = {v: 1.0 + 0.05 * i for i, v in enumerate(VARIANTS)}
    t0 = time.perf_counter()
    total_results = 0
    with_samples = 0
    chunk_camps = 50
    for c0 in range(0, n_camp, chunk_camps):
        cs = np.arange(c0, min(n_camp, c0 + chunk_camps))
        n = len(cs) * RUNS_PER_CAMPAIGN
        camp_of = np.repeat(cs, RUNS_PER_CAMPAIGN)
        within = np.tile(np.arange(RUNS_PER_CAMPAIGN), len(cs))
        vidx = within % len(VARIANTS)   # interleaved order, as campaigns run
        rep = within // len(VARIANTS)
        site = camp_of % 3
        variant = np.array(VARIANTS)[vidx]
        ids = np.char.add("r", np.char.zfill((camp_of * RUNS_PER_CAMPAIGN + within)
                                             .astype(str), 9))
        started = t_start + (camp_of // 3 % 12) * month + camp_of + within * 30.0
        runs_df = pd.DataFrame({
            "id": ids, "campaign_id": camp_of + 1, "variant": variant, "grp": "core",
            "params_json": "{}", "repeat": rep, "seq": within,
            "label": np.char.add(np.char.add(variant, "@"), np.array(SITES)[site]),
            "source": "native", "status": "done", "spec_json": "{}",
            "fingerprint_id": np.char.add(np.char.add(np.char.add("fp-", np.array(SITES)[site]),
                                                      "-"), variant),
            "started": started, "finished": started + 25.0, "elapsed": 25.0})
        _copy_frame(cur, "runs", runs_df)
        # results: per_run sizes of PingPong per run
        m = n * per_run
        size = np.tile(np.array(SIZES * (per_run // len(SIZES) + 1))[:per_run], n)
        base = 0.3 + size / 5000.0
        fac = np.repeat(np.array([speed[v] for v in VARIANTS])[vidx], per_run)
        med = base * fac * rng.lognormal(0.0, 0.03, m)
        res = pd.DataFrame({
            "run_id": np.repeat(ids, per_run), "benchmark": "PingPong", "size": size, "np": 2,
            "n": SAMPLES, "median": med, "ci_low": med * 0.99, "ci_high": med * 1.01,
            "min": med * 0.95, "max": med * 1.3, "mean": med * 1.02,
            "bandwidth_mbps": np.where(size > 0, size / med, np.nan)})
        pick = rng.random(m) < sample_fraction
        res["samples"] = None
        if pick.any():
            k = int(pick.sum())
            blobs = rng.lognormal(0.0, 0.03, (k, SAMPLES)) * med[pick, None]
            res.loc[pick, "samples"] = ["\\x" + b.astype("<f8").tobytes().hex()
                                        for b in blobs]
            with_samples += k
        _copy_frame(cur, "results", res)
        total_results += m
        conn.commit()
        print(f"  loaded {min(n_camp, c0 + chunk_camps) * RUNS_PER_CAMPAIGN:>9,} runs, "
              f"{total_results:>11,} results ({time.perf_counter() - t0:.0f} s)", flush=True)
    cur.execute("SET session_replication_role = origin")
    t1 = time.perf_counter()
    for ddl in idx.values():
        cur.execute(ddl)
    conn.commit()
    conn.autocommit = True
    cur.execute("VACUUM ANALYZE")
    print(f"  indexes and ANALYZE: {time.perf_counter() - t1:.0f} s", flush=True)
    conn.close()
    return {"campaigns": n_camp, "runs": n_camp * RUNS_PER_CAMPAIGN, "results": total_results,
            "with_samples": with_samples, "load_s": time.perf_counter() - t0}


def build_local(path: Path, runs: int, per_run: int, seed: int = 11) -> list[str]:
    """A local SQLite store with `runs` finished runs with raw samples, in campaigns of 1000
    runs like the archive's (4 variants x 250 launches, interleaved); returns their names."""
    import numpy as np

    from mpibench.store import Store
    from mpibench.store.bulk import insert_results

    rng = np.random.default_rng(seed)
    names = []
    with Store(path) as s:
        fps = {v: s.add_fingerprint({"site": "delta", "stack": v}) for v in VARIANTS}
        for c in range(max(1, runs // RUNS_PER_CAMPAIGN)):
            name = f"delta-fabric-{c:03d}"
            names.append(name)
            cid = s.add_campaign(name, {}, file=f"/home/delta/fabric-{c}.toml")
            rows, res = [], []
            for i in range(min(RUNS_PER_CAMPAIGN, runs)):
                v = VARIANTS[i % len(VARIANTS)]
                rid = f"p{c:03d}-{i:05d}"
                rows.append({"run_id": rid, "campaign_id": cid, "variant": v,
                             "repeat": i // len(VARIANTS), "seq": i,
                             "fingerprint_id": fps[v]})
                for z in SIZES[:per_run]:
                    x = rng.lognormal(np.log((0.3 + z / 5000) * (1 + 0.05 * (i % 4))), 0.03,
                                      SAMPLES)
                    med = float(np.median(x))
                    res.append((rid, "PingPong", z, 2, SAMPLES, med, med * 0.99, med * 1.01,
                                float(x.min()), float(x.max()), float(x.mean()),
                                x.astype("<f8").tobytes()))
            with s.transaction():
                s.create_runs(rows)
                insert_results(s, ("run_id", "benchmark", "size", "np", "n", "median",
                                   "ci_low", "ci_high", "min", "max", "mean", "samples"), res)
                for i, r in enumerate(rows):
                    t = 1.75e9 + c * 86400 + i * 30
                    s.set_run(r["run_id"], "done", started=t, finished=t + 25, elapsed=25.0)
    return names


def timed(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "mpibench", *argv], cwd=cwd, capture_output=True,
                       text=True, timeout=1800, env={**os.environ, **(env or {})})
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} failed (exit {p.returncode}): "
                         f"{p.stderr.strip()[-800:]}")
    return dt, p.stdout


def byte_compile(src: Path) -> None:
    """Write the package's .pyc files (what pip does at install), once, before timing."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "mpibench")],
                   check=True, capture_output=True, timeout=600,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})


def in_process(target: str, rounds: int, **selection) -> tuple[float, float]:
    """(seconds to select and load the two sets, seconds to also compare them) in this
    process with its imports warm: the store's share of a compare, without Python start-up
    and scipy's import (most of a fresh process's time on a loaded 2-core machine)."""
    import scipy.stats  # noqa: F401

    from mpibench.report.data import load_cells
    from mpibench.report.judge import compare_groups
    from mpibench.report.select import select_groups
    from mpibench.store import Store

    loads, totals = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with Store(target, readonly=True) as st:
            sets = select_groups(st, **selection)
            cells = load_cells(st, sets)
            t1 = time.perf_counter()
            compare_groups(st, sets, next(iter(sets)), cells=cells)
        loads.append(t1 - t0)
        totals.append(time.perf_counter() - t0)
    return statistics.median(loads), statistics.median(totals)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="a small scale: 20,000 runs, a 1,000-run push, one round")
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--results-per-run", type=int, default=10)
    ap.add_argument("--sample-fraction", type=float, default=0.01)
    ap.add_argument("--push-runs", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3, help="timings per verb (median shown)")
    ap.add_argument("--keep", metavar="DIR", help="keep the server's directory here")
    ap.add_argument("--other-src", metavar="DIR", type=Path,
                    help="another checkout (its src/ is put first on PYTHONPATH): compare and "
                         "report timed with it too, interleaved (before/after a change)")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.push_runs, args.rounds = 20_000, 1_000, 1
    if args.other_src is not None and not (args.other_src / "src" / "mpibench").is_dir():
        print(f"bench_archive: --other-src {args.other_src}: no src/mpibench there",
              file=sys.stderr)
        return 2

    from mpibench.store.pg_local import LocalPostgres, missing_programs

    if missing_programs():
        print("bench_archive: PostgreSQL is not installed (make setup installs it); skipped")
        return 0
    byte_compile(REPO / "src")
    other_env = None
    if args.other_src is not None:
        byte_compile(args.other_src / "src")
        other_env = {"PYTHONPATH": str((args.other_src / "src").resolve())}
    root = Path(args.keep or tempfile.mkdtemp(prefix="mbpgbench-", dir="/tmp"))
    work = Path(tempfile.mkdtemp(prefix="mbarchive-"))
    server = LocalPostgres(root, settings={
        "shared_buffers": "512MB", "maintenance_work_mem": "512MB", "max_wal_size": "8GB",
        "checkpoint_timeout": "30min", "work_mem": "32MB"})
    server.start(durable=True)
    url = server.url()           # this process only; children get PGPASSWORD (ps shows argv)
    os.environ["PGPASSWORD"] = server.password
    cli_url = server.url(password=False)
    loads = [os.getloadavg()[0]]
    try:
        print(f"archive: PostgreSQL {server.url(password=False)} (fsync on), "
              f"load average {loads[0]:.1f} on {os.cpu_count()} CPUs")
        info = load_synthetic(url, args.runs, args.results_per_run, args.sample_fraction)
        print(f"synthetic archive: {info['campaigns']:,} campaigns, {info['runs']:,} runs, "
              f"{info['results']:,} results ({info['with_samples']:,} with {SAMPLES} raw "
              f"samples); COPY load {info['load_s']:.0f} s")
        local = work / "local.db"
        t0 = time.perf_counter()
        names = build_local(local, args.push_runs, args.results_per_run)
        print(f"local store: {args.push_runs:,} runs x {args.results_per_run} results with "
              f"raw samples, built in {time.perf_counter() - t0:.0f} s "
              f"({local.stat().st_size / 2**20:.0f} MiB)")
        server.create_database("small")
        small_url = server.url("small", password=False)
        rows = []
        loads.append(os.getloadavg()[0])
        dt, out = timed(["push", cli_url, "--db-from", str(local), "--site", "delta"], work)
        print(out.strip().replace(server.password, "***"))
        dts, _ = timed(["push", small_url, "--db-from", str(local), "--site", "delta"], work)
        rows.append(("push (new)", dt, None, dts, TARGETS["push"]))
        dt, _ = timed(["push", cli_url, "--db-from", str(local), "--site", "delta"], work)
        dts, _ = timed(["push", small_url, "--db-from", str(local), "--site", "delta"], work)
        rows.append(("push (again, nothing new)", dt, None, dts, TARGETS["push"]))

        def side(name: str, argv: list[str], target: float, *, local_too: bool = True,
                 small_too: bool = True) -> None:
            """Fresh processes, rounds interleaved: big archive, local file, small archive
            (and the big archive with --other-src)."""
            big, loc, sml, oth = [], [], [], []
            for _ in range(args.rounds):
                big.append(timed([*argv, "--db", cli_url], work)[0])
                if local_too:
                    loc.append(timed([*argv, "--db", str(local)], work)[0])
                if small_too:
                    sml.append(timed([*argv, "--db", small_url], work)[0])
                if other_env:
                    oth.append(timed([*argv, "--db", cli_url], work, other_env)[0])
            med = statistics.median
            rows.append((name, med(big), med(loc) if loc else None,
                         med(sml) if sml else None, target))
            if oth:
                others.append((name, med(oth), med(big)))
            loads.append(os.getloadavg()[0])

        others: list[tuple[str, float, float]] = []
        sel = ["--campaign", names[0], "--variant", VARIANTS[0], "--variant", VARIANTS[1]]
        side("compare 2 variants x 250 runs (pushed campaign)", ["compare", *sel],
             TARGETS["compare"])
        side("report (same selection, no plots)",
             ["report", *sel, "-o", str(work / "r.html"), "--no-plots"], TARGETS["report"])
        side("report (same selection, with plots)",
             ["report", *sel, "-o", str(work / "p.html")], TARGETS["report"])
        side("compare 2 variants x 250 runs (synthetic campaign)",
             ["compare", "--campaign", "alpha-fabric-m01-0", "--variant", VARIANTS[0],
              "--variant", VARIANTS[1]], TARGETS["compare"], local_too=False, small_too=False)
        side("compare one variant, January vs July (250 runs each)", ["compare", *MONTHS_SEL],
             TARGETS["compare"], local_too=False, small_too=False)
        if args.runs >= 36 * RUNS_PER_CAMPAIGN:
            side("compare 2 labels (2 sites) over one hour, 28 campaigns each",
                 ["compare", *LABELS_SEL], TARGETS["compare"], local_too=False,
                 small_too=False)
        inproc = []
        for name, target, sel2 in (
                ("pushed campaign, archive", url, {"campaign": names[0]}),
                ("pushed campaign, local file", str(local), {"campaign": names[0]}),
                ("pushed campaign, small archive", server.url("small"),
                 {"campaign": names[0]}),
                ("synthetic campaign, archive", url, {"campaign": "alpha-fabric-m01-0"}),
                ("one variant, January vs July, archive", url,
                 {"campaign": ["alpha-fabric-m01-0", "alpha-fabric-m07-0"],
                  "variants": [VARIANTS[0]]})):
            sel2.setdefault("variants", list(VARIANTS[:2]))
            inproc.append((name, *in_process(target, args.rounds, **sel2)))
        import psycopg
        with psycopg.connect(url) as c:
            size = c.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            tables = c.execute(
                "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
                "('runs', 'results') ORDER BY 1").fetchall()
        with psycopg.connect(server.url("small")) as c:
            small_size = c.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        print(f"\n{'what (fresh processes)':<60} {'archive s':>9} {'local s':>8} "
              f"{'small s':>8} {'big/small':>9} {'target':>7}")

        def cell(v: float | None, w: int) -> str:
            return f"{v:{w}.2f}" if v is not None else f"{'-':>{w}}"

        for name, a, lo, sm, target in rows:
            ratio = f"{a / sm:9.2f}" if sm else f"{'-':>9}"
            ok = "ok" if a < target else "MISSED"
            print(f"{name:<60} {a:9.2f} {cell(lo, 8)} {cell(sm, 8)} {ratio} "
                  f"{'<' + str(target):>7} {ok}")
        if others:
            print(f"\n{'with --other-src ' + str(args.other_src):<60} {'other s':>9} "
                  f"{'this s':>8} {'this/other':>10}")
            for name, o, b in others:
                print(f"{name:<60} {o:9.2f} {b:8.2f} {b / o:10.2f}")
        print(f"\n{'compare in one process, imports warm':<60} {'select+load s':>13} "
              f"{'+compare s':>10}")
        for name, a, b in inproc:
            print(f"{name:<60} {a:13.2f} {b:10.2f}")
        print(f"\narchive size on disk: {size / 2**30:.2f} GiB (pg_database_size); "
              + ", ".join(f"{n} {b / 2**30:.2f} GiB with indexes" for n, b in tables)
              + f"; the small archive {small_size / 2**20:.0f} MiB")
        print(f"median of {args.rounds} fresh process(es) per figure, import included, "
              f"package byte-compiled; load average (1 min) at start, before the timings and "
              f"after each line: {', '.join(f'{x:.1f}' for x in loads)}")
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
