"""Named read queries of compare and report (report/ holds no SQL): result rows with their
run's columns, the selection of runs into result sets, run and campaign specs, elapsed
times, and what the report's set table shows. Each takes an open Store; run-id lists are
chunked, since SQLite builds may cap the number of host parameters."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from mpibench.store import Store

_CHUNK = 5000

# what measured a run: a peer suite (imb, osu, netpipe), an imported file's format, else
# the campaign group's kind (core, app). compare --by tool splits sets on it, and the
# reports never pool two tools' rows into one cell (report/rules.py)
TOOL_SQL = ("coalesce(json_extract(u.spec_json, '$.definition.suite'), "
            "json_extract(u.spec_json, '$.import.format'), "
            "json_extract(u.spec_json, '$.kind'), 'core')")

# results JOIN runs: what load_cells needs of a result and its run (the run's status and
# reason for the row rule, report/rules.why_unusable)
RESULT_COLUMNS = ("r.id AS result_id", "r.run_id", "r.benchmark", "r.size", "r.np", "r.status",
                  "r.reason", "r.metric", "r.unit", "r.better", "r.statistic", "r.n",
                  "r.median", "r.ci_low", "r.ci_high", "r.min", "r.p5", "r.p95", "r.p99",
                  "r.max", "r.mean", "r.std", "r.first", "r.batch", "r.stop_reason",
                  "r.bandwidth_mbps", "r.busbw_mbps", "r.msg_rate", "r.extra_json",
                  "u.params_json", "u.campaign_id", "u.grp", "u.repeat",
                  "json_extract(u.spec_json, '$.instance') AS instance", "u.fingerprint_id",
                  "u.variant",
                  "u.status AS run_status", "u.reason AS run_reason", f"{TOOL_SQL} AS tool")


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    ids = list(ids)
    for i in range(0, len(ids), _CHUNK):
        yield ids[i:i + _CHUNK]


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


def result_rows(store: Store, run_ids: Sequence[str], with_samples: bool
                ) -> Iterator[tuple[list[str], tuple]]:
    """(column names, row tuple) of every result of these runs, in result id order, with
    the raw samples blob last when asked for. Plain tuples: sqlite3.Row per row costs at
    10^5 rows. The run ids filter the runs side (u.id, not r.run_id): PostgreSQL then looks
    the runs up by key and their results by results_run, where filtering on r.run_id let it
    merge-join against a scan of the whole runs key (4x slower on a 1M-run archive)."""
    cols = list(RESULT_COLUMNS) + (["r.samples"] if with_samples else [])
    for chunk in _chunks(run_ids):
        cur = store.db.cursor()
        cur.row_factory = None
        cur.execute(f"SELECT {', '.join(cols)} FROM results r JOIN runs u ON u.id = r.run_id "
                    f"WHERE u.id IN ({_marks(len(chunk))}) ORDER BY r.id", chunk)
        names = [d[0] for d in cur.description]
        for tup in cur:
            yield names, tup


def campaign_orders(store: Store, campaign_ids: Iterable[int]) -> dict[int, str | None]:
    """{campaign id: its stored spec's order ("interleaved", "random"; None when the spec
    does not say, e.g. an imported file's campaign)}."""
    out: dict[int, str | None] = {}
    for chunk in _chunks(sorted({int(c) for c in campaign_ids if c is not None})):
        for cid, spec_json in store.db.execute(
                f"SELECT id, spec_json FROM campaigns WHERE id IN ({_marks(len(chunk))})",
                chunk).fetchall():
            try:
                spec = json.loads(spec_json or "{}")
            except ValueError:
                spec = {}
            out[int(cid)] = spec.get("order") if isinstance(spec, dict) else None
    return out


def variants_with_results(store: Store) -> list[str]:
    """Variant names that have at least one result, sorted."""
    return sorted({r[0] for r in store.db.execute(
        "SELECT DISTINCT u.variant FROM runs u WHERE EXISTS "
        "(SELECT 1 FROM results x WHERE x.run_id = u.id)")})


def runs_with_results(store: Store, *, campaign_ids: Iterable[int] | None = None,
                      run_ids: Iterable[str] | None = None, labels: Iterable[str] | None = None,
                      since: float | None = None, until: float | None = None,
                      variants: Iterable[str] | None = None) -> list:
    """Runs that have results (id, variant, label, campaign_id, campaign, started, tool), in
    campaign and plan order, filtered by campaign ids, run ids, labels and start time, and
    by `variants` loosely: a variant named there, or any variant starting with the part of
    such a name before its '[' followed by '[' (a sweep's expansions); the caller matches
    exactly (report/select.py). On an archive this keeps the other variants' runs out of
    the EXISTS lookups and the transfer."""
    q = ("SELECT u.id, u.variant, u.label, u.campaign_id, c.name AS campaign, u.started, "
         f"{TOOL_SQL} AS tool "
         "FROM runs u JOIN campaigns c ON c.id = u.campaign_id "
         "WHERE EXISTS (SELECT 1 FROM results r WHERE r.run_id = u.id)")
    args: list[Any] = []
    for col, values in (("u.campaign_id", campaign_ids), ("u.id", run_ids),
                        ("u.label", labels)):
        if values is not None:
            vals = list(values)
            q += f" AND {col} IN ({_marks(len(vals))})"
            args += vals
    if variants is not None:
        names = list(dict.fromkeys(variants))
        bases = list(dict.fromkeys(w.split("[", 1)[0] + "[" for w in names))
        q += f" AND (u.variant IN ({_marks(len(names))})" if names else " AND (0=1"
        args += names
        for b in bases:
            q += f" OR substr(u.variant, 1, {len(b):d}) = ?"
            args.append(b)
        q += ")"
    if since is not None:
        q += " AND u.started >= ?"
        args.append(since)
    if until is not None:
        q += " AND u.started <= ?"
        args.append(until)
    q += " ORDER BY u.campaign_id, u.seq, u.id"
    return store.db.execute(q, args).fetchall()


def distinct_specs(store: Store, run_ids: Sequence[str]) -> Iterator[tuple[str, str]]:
    """Distinct (run spec_json, campaign spec_json) pairs of these runs."""
    ids = list(run_ids)
    if not ids:
        return
    yield from store.db.execute(
        f"SELECT DISTINCT u.spec_json, c.spec_json FROM runs u JOIN campaigns c "
        f"ON c.id = u.campaign_id WHERE u.id IN ({_marks(len(ids))})", ids)


def run_specs(store: Store, run_ids: Sequence[str]) -> Iterator[tuple[str, str, str]]:
    """(run id, run spec_json, campaign spec_json) of each run."""
    for chunk in _chunks(run_ids):
        yield from store.db.execute(
            f"SELECT u.id, u.spec_json, c.spec_json FROM runs u JOIN campaigns c ON "
            f"c.id = u.campaign_id WHERE u.id IN ({_marks(len(chunk))})", chunk)


def run_elapsed(store: Store, run_ids: Sequence[str]) -> dict[str, float | None]:
    """{run id: elapsed seconds of its launch}."""
    out: dict[str, float | None] = {}
    for chunk in _chunks(run_ids):
        for rid, el in store.db.execute(
                f"SELECT id, elapsed FROM runs WHERE id IN ({_marks(len(chunk))})", chunk):
            out[rid] = el
    return out


def run_mpi_init(store: Store, run_ids: Sequence[str]) -> dict[str, float]:
    """{run id: MPI_Init time in us} of the runs whose core reported it."""
    out: dict[str, float] = {}
    for chunk in _chunks(run_ids):
        for rid, v in store.db.execute(
                f"SELECT id, mpi_init_us FROM runs WHERE id IN ({_marks(len(chunk))}) "
                "AND mpi_init_us IS NOT NULL", chunk):
            out[rid] = v
    return out


def set_runs_info(store: Store, run_ids: Sequence[str]
                  ) -> Iterator[tuple[str, str, Any, str | None, str | None]]:
    """(campaign name, run spec_json, fingerprint id, transport actual, requested) of each
    run: the report's table of result sets."""
    for chunk in _chunks(run_ids):
        yield from store.db.execute(
            "SELECT c.name, u.spec_json, u.fingerprint_id, u.transport_actual, "
            "u.transport_requested FROM runs u JOIN campaigns c ON c.id = u.campaign_id "
            f"WHERE u.id IN ({_marks(len(chunk))})", chunk)


def run_campaign_variant(store: Store, run_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """{run id: (campaign id, variant)}."""
    out: dict[str, tuple[int, str]] = {}
    for chunk in _chunks(run_ids):
        for rid, cid, variant in store.db.execute(
                f"SELECT id, campaign_id, variant FROM runs WHERE id IN ({_marks(len(chunk))})",
                chunk):
            out[rid] = (cid, variant)
    return out


def failed_runs_beside(store: Store, run_ids: Sequence[str]) -> list:
    """(id, campaign_id, variant, grp, params_json, np, status) of the failed or timed-out
    launches among these runs and beside them (same campaign and variant): a failed launch
    often has no result rows, so the reports' sets never hold it, yet a grid must show it."""
    keys = set(run_campaign_variant(store, run_ids).values())
    out = []
    for cid, variant in sorted(keys):
        out += store.db.execute(
            "SELECT id, campaign_id, variant, grp, params_json, "
            "json_extract(spec_json, '$.np') AS np, status FROM runs WHERE campaign_id=? "
            "AND variant=? AND status IN ('failed', 'timeout') ORDER BY seq, id",
            (cid, variant)).fetchall()
    return out


def launch_cost_rows(store: Store, run_ids: Sequence[str]) -> list[dict]:
    """The core's result rows of these launches with what stats.budget needs: run_id,
    variant, repeat (the launch's round in its campaign), benchmark, size, np, n, median,
    ci_low, ci_high, cell_s (the core's seconds on the cell, extra_json's elapsed_s),
    launch_s (the launch's elapsed seconds), stop_reason (the core's) and status: 'ok',
    or 'skipped' (no median; with stop_reason 'preempted', stats.preempted.skipped, no
    clean sample within the cap: its seconds are the launch's, not its fixed part's, and
    price the cap; the core's other skips, e.g. --mem-limit, have stop_reason null), and
    mode: the core's 'adaptive' or 'iterations' (fixed count) from the launch's
    fingerprint (execute.core_fingerprint; None without one)."""
    out: list[dict] = []
    for chunk in _chunks(run_ids):
        cur = store.db.execute(
            "SELECT r.run_id, u.variant, u.repeat, r.benchmark, r.size, r.np, r.n, r.median, "
            "r.ci_low, "
            "r.ci_high, json_extract(r.extra_json, '$.elapsed_s') AS cell_s, r.stop_reason, "
            "r.status, u.elapsed AS launch_s, json_extract(f.json, '$.core_options.mode') "
            "AS mode FROM results r JOIN runs u ON u.id = r.run_id "
            "LEFT JOIN fingerprints f ON f.id = u.fingerprint_id "
            f"WHERE r.status IN ('ok', 'skipped') AND r.run_id IN ({_marks(len(chunk))})",
            chunk)
        names = [d[0] for d in cur.description]
        out += [dict(zip(names, row, strict=True)) for row in cur]
    return out


def run_fingerprints(store: Store, run_ids: Sequence[str]) -> dict[str, str | None]:
    """{run id: its fingerprint id}."""
    out: dict[str, str | None] = {}
    for chunk in _chunks(run_ids):
        out.update(store.db.execute(
            f"SELECT id, fingerprint_id FROM runs WHERE id IN ({_marks(len(chunk))})", chunk))
    return out


def done_runs_of_group(store: Store, campaign_id: int, group: str) -> list:
    """(id, variant, repeat) of a campaign group's finished launches in plan order
    (repeats = auto)."""
    return store.db.execute("SELECT id, variant, repeat FROM runs WHERE campaign_id=? AND "
                            "grp=? AND status='done' ORDER BY seq",
                            (campaign_id, group)).fetchall()


def run_repeats(store: Store, run_ids: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    """(run id, campaign id, repeat index) of each run (which stage of a repeats = "auto"
    campaign ran it: campaign.auto_repeats.stage_one_launches)."""
    for chunk in _chunks(run_ids):
        yield from store.db.execute(
            f"SELECT id, campaign_id, repeat FROM runs WHERE id IN ({_marks(len(chunk))})",
            chunk)


def campaign_specs(store: Store, campaign_ids: Iterable[int]) -> dict[int, str]:
    """{campaign id: its stored spec_json}."""
    out: dict[int, str] = {}
    for chunk in _chunks(sorted({int(c) for c in campaign_ids if c is not None})):
        for cid, spec_json in store.db.execute(
                f"SELECT id, spec_json FROM campaigns WHERE id IN ({_marks(len(chunk))})",
                chunk).fetchall():
            out[int(cid)] = spec_json or "{}"
    return out


def done_runs_of_campaign(store: Store, campaign_id: int) -> list:
    """(id, variant, grp, repeat, params_json) of a campaign's finished launches in plan
    order (repeats = "decide" replays its looks from them)."""
    return store.db.execute("SELECT id, variant, grp, repeat, params_json FROM runs "
                            "WHERE campaign_id=? AND status='done' ORDER BY seq",
                            (campaign_id,)).fetchall()


__all__ = ["RESULT_COLUMNS", "TOOL_SQL", "result_rows", "failed_runs_beside",
           "run_campaign_variant", "variants_with_results", "runs_with_results",
           "distinct_specs", "run_specs", "run_elapsed", "run_mpi_init", "set_runs_info",
           "done_runs_of_group", "done_runs_of_campaign", "run_fingerprints", "launch_cost_rows",
           "run_repeats", "campaign_specs"]
