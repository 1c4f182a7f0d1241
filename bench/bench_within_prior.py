#!/usr/bin/env python3
"""Does a size's within-launch spread tell which sizes are noisy BETWEEN launches? Real stores,
no MPI. Prints numbers, asserts nothing.

    .venv/bin/python bench/bench_within_prior.py [--quick] [--min-launches N] [STORE ...]

Why: compare moderates each size's between-launch (cell) part toward the other sizes'
(stats.moderate). A size noisier on one side only is missed at 2-4 vs 7 launches
(docs/statistics.md, "Stop 34: a size noisier on the side with fewer launches"); a prior
per size from the size's own within-launch spread, which every launch measures, would
find it if the within-launch spread ranked the sizes' between-launch noise. This measures
whether it does, before building it (stop 34 dropped it on these figures).

STORE: a campaign store (mpibench.db), a `sqlite3 .dump` of one (.sql.gz, as in
tests/data/ttd_replay), or a directory: every */core/mpibench.db under it (a kept
bench_time_to_decision.py run or a folder of them; warmup/ stores left out). Default:
tests/data/ttd_replay/core.sql.gz (one real TTD run, Open MPI and MPICH PingPong 0:22).
Each store is copied before it is read (a run still writing is not disturbed).

Per store and variant (one "run x variant"), over the sizes with >= --min-launches ok
launches (api.load_results ok_only: the rows a figure may use), per size:
  between  the variance of the launches' log medians (ddof 1),
  se2      the mean over launches of the launch's within-launch se^2 of its log median,
           from its 95% CI: (log(ci_high / ci_low) / (2 x 1.96))^2 (stats.budget._within_b,
           as the budget's plan reads a CI),
  excess   between - se2 (what launches add beyond their own sampling error),
  cv       the mean over launches of the samples' std / mean (the core's summary).
Printed per run x variant: Spearman's rank correlation over the sizes of excess with se2
and of excess with cv, and whether the size with the largest excess is among the three
with the largest cv (chance: 3 / sizes). Then the median and interquartile range of each
correlation over the run x variants and the share of top-3 hits against chance. A prior
from the within-launch spread needs a clearly positive correlation.
"""

from __future__ import annotations

import argparse
import gzip
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "tests" / "data" / "ttd_replay" / "core.sql.gz"


def _stores(paths: list[Path]) -> list[Path]:
    """The store files the arguments name (directories: every */core/mpibench.db under
    them, warmup/ left out); ValueError for a path that is none of them."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("mpibench.db")
                           if q.parent.name == "core" and "warmup" not in q.parts)
            if not found:
                raise ValueError(f"{p}: no */core/mpibench.db under it; expected a kept "
                                 "time-to-decision run or a folder of them")
            out += found
        elif p.is_file() and (p.suffix == ".db" or p.name.endswith(".sql.gz")):
            out.append(p)
        else:
            raise ValueError(f"{p}: expected a mpibench.db, a .sql.gz dump of one, or a "
                             "directory holding */core/mpibench.db")
    return out


def _copy(store: Path, into: Path) -> Path:
    """The store as a private database file (a dump loaded, or a consistent copy)."""
    db = into / "copy.db"
    db.unlink(missing_ok=True)
    dst = sqlite3.connect(db)
    try:
        if store.name.endswith(".sql.gz"):
            with gzip.open(store, "rt") as f:
                dst.executescript(f.read())
        else:
            src = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
            try:
                src.backup(dst)
            finally:
                src.close()
    finally:
        dst.close()
    return db


def _per_size(df, min_launches: int) -> list[tuple[float, float, float]]:
    """(excess, se2, cv) per size of one run x variant's rows; a launch's se2 read from its
    CI as the budget's plan reads it (stats.budget._within_b: se_w^2 n), a launch without
    a usable CI left out."""
    from mpibench.stats import budget

    out = []
    for _key, g in df.groupby(["benchmark", "size"]):
        rows = [(r, budget._within_b(r)) for r in g.to_dict("records")]
        rows = [(r, b / r["n"]) for r, b in rows if b is not None]
        if len(rows) < min_launches:
            continue
        logs = np.log([r["median"] for r, _ in rows])
        se2 = float(np.mean([s for _, s in rows]))
        cv = np.nanmean([r["std"] / r["mean"] if r["mean"] else np.nan for r, _ in rows])
        out.append((float(logs.var(ddof=1)) - se2, se2, float(cv)))
    return out


def measure(stores: list[Path], min_launches: int) -> list[dict]:
    """One dict per run x variant: its sizes, the two correlations, the top-3 hit."""
    from scipy import stats as sps

    from mpibench import api

    rows = []
    with tempfile.TemporaryDirectory(prefix="within-prior-") as tmp:
        for store in stores:
            df = api.load_results(_copy(store, Path(tmp)), ok_only=True)
            df = df[df["metric"] == "time"]
            for variant, g in df.groupby("variant"):
                sizes = _per_size(g, min_launches)
                if len(sizes) < 5:
                    print(f"  {store} {variant}: {len(sizes)} sizes with >= {min_launches} "
                          "ok launches: left out (a rank correlation needs >= 5)")
                    continue
                excess, se2, cv = (np.array(c) for c in zip(*sizes, strict=True))
                top3 = set(np.argsort(cv)[-3:].tolist())
                rows.append({"store": str(store), "variant": variant, "sizes": len(sizes),
                             "rho_se2": float(sps.spearmanr(excess, se2)[0]),
                             "rho_cv": float(sps.spearmanr(excess, cv)[0]),
                             "hit": int(np.argmax(excess)) in top3,
                             "chance": 3 / len(sizes)})
    return rows


def _quartiles(x: list[float]) -> str:
    q = np.percentile(x, [25, 50, 75])
    return f"median {q[1]:+.2f} (interquartile {q[0]:+.2f}..{q[2]:+.2f})"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stores", nargs="*", type=Path, metavar="STORE",
                    help=f"stores to read (default: {DEFAULT.relative_to(REPO)})")
    ap.add_argument("--quick", action="store_true",
                    help="the default store only (what make bench runs; it is quick anyway)")
    ap.add_argument("--min-launches", type=int, default=5, metavar="N",
                    help="sizes with at least N ok launches (default 5)")
    args = ap.parse_args(argv)
    if args.min_launches < 3:
        ap.error(f"--min-launches: got {args.min_launches}, expected >= 3")
    try:
        stores = _stores([DEFAULT] if args.quick or not args.stores else args.stores)
    except ValueError as exc:
        ap.error(f"STORE: {exc}")
    print("Within-launch spread vs between-launch excess variance per size (Spearman over "
          f"the sizes; sizes with >= {args.min_launches} ok launches)")
    rows = measure(stores, args.min_launches)
    for r in rows:
        print(f"  {r['store']} {r['variant']}: {r['sizes']} sizes, rho(excess, se2) "
              f"{r['rho_se2']:+.2f}, rho(excess, cv) {r['rho_cv']:+.2f}, noisiest between "
              f"launches among the 3 largest cv: {'yes' if r['hit'] else 'no'}")
    if not rows:
        print("  no run x variant with >= 5 such sizes")
        return 0
    print(f"{len(rows)} run x variant from {len(stores)} store(s): rho(excess, se2) "
          f"{_quartiles([r['rho_se2'] for r in rows])}; rho(excess, cv) "
          f"{_quartiles([r['rho_cv'] for r in rows])}; the noisiest size between launches "
          f"among the 3 with the largest within-launch cv in "
          f"{100 * np.mean([r['hit'] for r in rows]):.0f}% (chance "
          f"{100 * np.mean([r['chance'] for r in rows]):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
