"""Python API for notebooks: results as pandas DataFrames.

    from mpibench.api import load_results, load_samples, compare_frame
    df = load_results("mpibench.db", campaign="fabric")
    df.groupby(["variant", "benchmark", "size"])["median"].median()

    from mpibench.api import load_profiles, load_size_buckets   # profiled launches
    sizes = load_size_buckets("mpibench.db", campaign="gromacs-water-profile")
    sizes.groupby(["set", "np", "bucket"], sort=False)["message_share"].mean()

The store is opened read-only in spirit (nothing is written); a missing file raises
UsageError rather than creating an empty store. db_path may also be a team archive's URL
(postgresql://..., docs/archive.md) or None for $MPIBENCH_DB.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mpibench.errors import UsageError
from mpibench.report.data import (
    PLACEMENT_AXES,
    run_placements,
    sweep_params,
    with_placement,
    with_sweep_params,
)
from mpibench.report.rules import why_unusable
from mpibench.store import RESULT_COLUMNS, Store
from mpibench.store.queries import profile_launches, run_timing

__all__ = ["load_results", "load_samples", "compare_frame", "load_profiles",
           "load_size_buckets", "load_origins"]

_RUN_COLS = ("campaign", "variant", "set", "label", "grp", "repeat", "run_status", "source",
             "fingerprint_id", "transport_requested", "transport_actual", "started", "elapsed",
             "mpi_init_us")


def _open(db_path: str | Path | None) -> Store:
    """A store file or a team archive's postgresql:// URL (None: $MPIBENCH_DB, else
    ./mpibench.db)."""
    from mpibench.store import db_exists, open_db_arg

    db_path = open_db_arg(str(db_path) if db_path is not None else None)
    if not db_exists(db_path):
        raise UsageError(f"{db_path}: no such results store")
    return Store(db_path, readonly=True)


def _run_ids(store: Store, campaign, variants, run_ids, labels) -> list[str] | None:
    if campaign is None and variants is None and run_ids is None and labels is None:
        return None
    from mpibench.report.select import select_groups
    sets = select_groups(store, variants=variants, campaign=campaign, run_ids=run_ids,
                           labels=labels)
    return [r for ids in sets.values() for r in ids]


def _iter_rows(store: Store, ids: list[str] | None, with_samples: bool):
    if ids is None:
        yield from store.results(None, with_samples=with_samples)
        return
    for i in range(0, len(ids), 5000):
        yield from store.results(ids[i:i + 5000], with_samples=with_samples)


def load_results(db_path: str | Path, campaign: str | int | Iterable | None = None, *,
                 variants: Iterable[str] | None = None, run_ids: Iterable[str] | None = None,
                 labels: Iterable[str] | None = None, samples: bool = False,
                 ok_only: bool = False) -> pd.DataFrame:
    """One row per result (run x benchmark x size, or application figure of merit).

    Columns: run_id, campaign, variant, set (the variant without the np/nodes/ppn axes of a
    campaign sweep: 'ompi[np=2]' -> 'ompi', as compare groups it), label, grp, repeat,
    run_status, the store's result
    columns (benchmark, size, np, metric, unit, better, statistic, status, n, median, ci_low,
    ci_high, min, p5, p95, p99, max, mean, std, first, bandwidth_mbps, busbw_mbps, ...),
    'extra' (dict), and one column per cell parameter (params_json expanded; a parameter whose
    name clashes with a column gets a 'param_' prefix). With samples=True a 'samples' column
    holds each result's raw samples as a numpy array (microseconds for time metrics).
    ok_only: only the rows a figure may use (an ok row of a finished run; report/rules.py).
    """
    with _open(db_path) as store:
        ids = _run_ids(store, campaign, variants, list(run_ids) if run_ids else None, labels)
        camp_names = {r["id"]: r["name"] for r in store.campaigns()}
        runs = run_timing(store)
        records: list[dict[str, Any]] = []
        param_names: list[str] = []
        for row in _iter_rows(store, ids, samples):
            run = runs.get(row["run_id"])
            # ok_only: the row rule of every figure (report/rules.py): an ok row of a
            # finished run, never the printed rows of a launch that failed
            if ok_only and why_unusable({"status": row["status"],
                                         "run_status": run["status"] if run else None}):
                continue
            set_name = sweep_params(row["variant"])[0]
            rec = {"run_id": row["run_id"], "campaign": camp_names.get(row["campaign_id"]),
                   "variant": row["variant"], "set": set_name, "label": row["label"],
                   "grp": row["grp"],
                   "repeat": row["repeat"], "run_status": run["status"] if run else None,
                   "source": row["source"], "fingerprint_id": row["fingerprint_id"],
                   "transport_requested": row["transport_requested"],
                   "transport_actual": row["transport_actual"],
                   "started": run["started"] if run else None,
                   "elapsed": run["elapsed"] if run else None,
                   "mpi_init_us": row.get("mpi_init_us")}
            for c in RESULT_COLUMNS:
                rec[c] = row[c]
            rec["extra"] = row["extra"]
            # nodes/ppn swept on the variant are parameters too (stored values win)
            params = with_sweep_params(row["params"] or {}, row["variant"])
            for k, v in params.items():
                name = k if k not in rec and k != "samples" else f"param_{k}"
                if name not in param_names:
                    param_names.append(name)
                rec[name] = v
            if samples:
                rec["samples"] = np.array(row["samples"], copy=True)
            records.append(rec)
        # a fixed variant's placement fills the nodes/ppn columns a sweep opened, as compare
        # keys its cells (report.data.with_placement)
        axes = [a for a in PLACEMENT_AXES if a in param_names]
        lacking = {r["run_id"] for r in records if any(a not in r for a in axes)}
        if lacking:
            placed = run_placements(store, lacking)
            for r in records:
                if r["run_id"] in lacking:
                    r.update(with_placement({a: r[a] for a in axes if a in r}, axes,
                                            placed.get(r["run_id"], {})))
    cols = ["run_id", *_RUN_COLS, *RESULT_COLUMNS, "extra", *param_names]
    if samples:
        cols.append("samples")
    df = pd.DataFrame.from_records(records, columns=cols)
    for c in ("size", "np", "n", "batch", "warmup"):
        df[c] = df[c].astype("Int64")
    return df


def load_samples(db_path: str | Path, campaign: str | int | Iterable | None = None, *,
                 variants: Iterable[str] | None = None, run_ids: Iterable[str] | None = None,
                 labels: Iterable[str] | None = None) -> pd.DataFrame:
    """Long format: one row per raw sample, with run_id, variant, benchmark, size, np, metric,
    params and 'value' (microseconds for time metrics). Handy for seaborn/plotnine."""
    df = load_results(db_path, campaign, variants=variants, run_ids=run_ids, labels=labels,
                      samples=True, ok_only=True)
    keep = [c for c in df.columns if c not in ("samples", "extra", "median", "ci_low",
                                               "ci_high", "min", "p5", "p95", "p99", "max",
                                               "mean", "std")]
    lengths = df["samples"].map(len).to_numpy() if len(df) else np.empty(0, dtype=int)
    out = df.loc[df.index.repeat(lengths), keep].reset_index(drop=True)
    out["value"] = np.concatenate(df["samples"].to_list()) if lengths.sum() else \
        np.empty(0)
    out["sample"] = np.concatenate([np.arange(n) for n in lengths]) if lengths.sum() else \
        np.empty(0, dtype=int)
    return out


def compare_frame(db_path: str | Path, sets: dict[str, list[str]] | None = None,
                  baseline: str | None = None, *, campaign=None, variants=None,
                  alpha: float = 0.05, groups: dict[str, list[str]] | None = None
                  ) -> pd.DataFrame:
    """The comparison table (one row per cell x candidate) as a DataFrame: medians, CIs,
    gain with its 95% CI, p, Holm p, launch counts, significance, notes.

    sets: result sets to compare (set name -> run ids); None selects by campaign/variants.
    groups: the old name of `sets`, still accepted (not both)."""
    if groups is not None:
        if sets is not None:
            raise UsageError("compare_frame: pass sets= or its old name groups=, not both")
        sets = groups
    from mpibench.report import pipeline
    from mpibench.report.compare_view import comparison_records
    from mpibench.report.select import select_groups
    with _open(db_path) as store:
        if sets is None:                                                    # select
            sets = select_groups(store, campaign=campaign, variants=variants)
        if not sets:
            raise UsageError(f"{db_path}: no results match the selection")
        # load and judge as compare and report do (report/pipeline.py)
        judged = pipeline.run(store, sets, pipeline.Request(baseline=baseline, alpha=alpha))
        if judged.cmp is None:
            raise UsageError(f"{db_path}: a comparison needs at least two result sets (got "
                             f"{', '.join(sets)})")
        recs = comparison_records(judged.cmp)
    df = pd.DataFrame.from_records(recs)
    if "params" in df:
        df["params"] = df["params"].map(lambda p: json.dumps(p, sort_keys=True))
    return df


def _profile_launches(db_path, campaign, variants, run_ids, labels):
    """(run row, profile document) of every stored profile in the selection."""
    with _open(db_path) as store:
        ids = _run_ids(store, campaign, variants, list(run_ids) if run_ids else None, labels)
        rows = profile_launches(store)
    wanted = None if ids is None else set(ids)
    for r in rows:
        if wanted is None or r["run_id"] in wanted:
            yield r, json.loads(r["json"])


def _launch_cols(r, doc) -> dict[str, Any]:
    return {"run_id": r["run_id"], "campaign": r["campaign"], "variant": r["variant"],
            "set": sweep_params(r["variant"])[0], "label": r["label"],
            "np": int(doc.get("ranks") or 0), "run_status": r["status"],
            "complete": bool(doc.get("complete")), "started": r["started"]}


def load_profiles(db_path: str | Path, campaign: str | int | Iterable | None = None, *,
                  variants: Iterable[str] | None = None, run_ids: Iterable[str] | None = None,
                  labels: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per profiled launch x MPI function (mpibench profile, or campaign cells of a
    variant with profile = true): run_id, campaign, variant, set, label, np, run_status,
    complete, function, class, calls, time_s (over all ranks), share_of_mpi, mean_call_s,
    bytes_sent, bytes_recv, recv_unknown, ranks_calling, message_function, and the launch's
    mpi_time_s (all ranks), mpi_fraction (mean over ranks), wall_s (mean over ranks) and
    calls_total. Each launch is one unit of replication: aggregate per launch first."""
    from mpibench.profile.buckets import function_records

    recs = []
    for r, doc in _profile_launches(db_path, campaign, variants, run_ids, labels):
        launch = {**_launch_cols(r, doc), "mpi_time_s": doc["mpi_time_s"]["total"],
                  "mpi_fraction": doc["mpi_fraction"]["mean"],
                  "wall_s": doc["wall_s"]["mean"], "calls_total": doc.get("calls_total")}
        for f in function_records(doc):
            recs.append({**launch, **f})
    cols = ["run_id", "campaign", "variant", "set", "label", "np", "run_status", "complete",
            "started", "mpi_time_s", "mpi_fraction", "wall_s", "calls_total", "function",
            "class", "calls", "time_s", "share_of_mpi", "mean_call_s", "bytes_sent",
            "bytes_recv", "recv_unknown", "ranks_calling", "message_function"]
    return pd.DataFrame.from_records(recs, columns=cols)


def load_size_buckets(db_path: str | Path, campaign: str | int | Iterable | None = None, *,
                      variants: Iterable[str] | None = None,
                      run_ids: Iterable[str] | None = None,
                      labels: Iterable[str] | None = None,
                      buckets: str = "coarse") -> pd.DataFrame:
    """One row per profiled launch x message-size bucket, over all functions that move data
    (docs/profiler.md): run_id, campaign, variant, set, label, np, run_status, complete,
    bucket, lo, hi (bytes; hi None for the last), messages, message_share, bytes,
    byte_share, time_s, time_share, top_function, bytes_exact. buckets: 'coarse' (every
    bucket, zeros included), 'log2' (non-empty log2 bins) or edges such as '64,1K,16K'."""
    from mpibench.profile.buckets import parse_buckets, size_buckets

    edges = parse_buckets(buckets)
    recs = []
    for r, doc in _profile_launches(db_path, campaign, variants, run_ids, labels):
        launch = _launch_cols(r, doc)
        b = size_buckets(doc, edges)
        for row in b["buckets"]:
            recs.append({**launch, **row, "bytes_exact": b["bytes_exact"]})
    cols = ["run_id", "campaign", "variant", "set", "label", "np", "run_status", "complete",
            "started", "bucket", "lo", "hi", "messages", "message_share", "bytes",
            "byte_share", "time_s", "time_share", "top_function", "bytes_exact"]
    df = pd.DataFrame.from_records(recs, columns=cols)
    df["hi"] = df["hi"].astype("Int64")
    return df


def load_origins(db_path: str | Path | None) -> pd.DataFrame:
    """Where a team archive's runs came from (docs/archive.md): one row per run and origin
    that pushed it: run_id, local_id (the run's id in the pushing store), site, user, host,
    store (the local store's identity), path (its path there), pushed (epoch seconds). Merge
    with load_results(...) on run_id to compare sites. A local store has none (empty)."""
    from mpibench.store.archive import ArchiveStore, origin_rows

    cols = ["run_id", "local_id", "site", "user", "host", "store", "path", "pushed"]
    with _open(db_path) as store:
        rows = origin_rows(store) if isinstance(store, ArchiveStore) else []
    return pd.DataFrame.from_records(rows, columns=cols)


def _refusing_damage(fn):
    """A damaged store met past the opening checks (SQLite's own errors while reading) is a
    one-line UsageError, as at the CLI, not whatever the query raised."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from mpibench.store import store_error
        try:
            return fn(*args, **kwargs)
        except UsageError:
            raise
        except Exception as exc:
            msg = store_error(exc)
            if msg is None:
                raise
            raise UsageError(msg) from exc
    return wrapper


for _name in __all__:
    globals()[_name] = _refusing_damage(globals()[_name])

