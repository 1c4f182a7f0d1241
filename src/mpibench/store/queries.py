"""Named read queries: the SQL that verbs, the campaign runner's status views, transport
checks and the pandas API need, kept beside the schema so that a schema change touches this
folder only. Each takes an open Store (or a path, for a look that must not open one)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mpibench.store import Store

# a cell of a campaign, with what `campaign status` and `campaign cells` show
_CELL_COLUMNS = ("id, seq, variant, grp, params_json, repeat, status, reason, stderr_tail, "
                 "elapsed, fingerprint_id, transport_requested, transport_actual, label, "
                 "scheduler, job_id, nodelist, sched_state, run_dir")


def campaign_row(store: Store, name: str, file: str | None) -> sqlite3.Row | None:
    """Campaign (name, file): a campaign file's own row (two files may share a name)."""
    return store.db.execute("SELECT * FROM campaigns WHERE name=? AND file IS ?",
                            (name, file)).fetchone()


def campaign_cells(store: Store, campaign_id: int) -> list[sqlite3.Row]:
    """The campaign's runs in plan order, without results."""
    return store.db.execute(f"SELECT {_CELL_COLUMNS} FROM runs WHERE campaign_id=? "
                            "ORDER BY seq", (campaign_id,)).fetchall()


def state_counts(store: Store, campaign_id: int, local_job_prefix: str
                 ) -> tuple[dict[str, int], int]:
    """Cells per state, and the distinct batch jobs among the running ones (a cell the local
    backend runs has a job id starting with local_job_prefix: not a scheduler's job)."""
    counts, jobs = {}, 0
    for state, n, n_jobs in store.db.execute(
            "SELECT status, count(*), count(DISTINCT CASE WHEN job_id NOT LIKE ? "
            "THEN job_id END) FROM runs WHERE campaign_id=? GROUP BY status",
            (local_job_prefix + "%", campaign_id)):
        counts[state] = n
        if state == "running":
            jobs = n_jobs
    return counts, jobs


def recorded_seed(db: Path, name: str, file: str) -> int | None:
    """The seed a random-order campaign drew at its first run, read without opening the
    store for writing (a dry run must not create, migrate or lock it)."""
    if not db.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            row = con.execute("SELECT spec_json FROM campaigns WHERE name=? AND file IS ?",
                              (name, file)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return json.loads(row[0]).get("seed") if row else None


def transports(store: Store, run_ids: list[str]) -> Iterator[tuple[str, str, str]]:
    """(variant, transport requested, transport the check saw) per run."""
    for i in range(0, len(run_ids), 5000):
        chunk = run_ids[i:i + 5000]
        yield from store.db.execute(
            "SELECT variant, transport_requested, transport_actual FROM runs WHERE id IN "
            f"({', '.join('?' for _ in chunk)})", chunk)


def run_timing(store: Store) -> dict[str, Any]:
    """Per run id: status, source, started, elapsed (the pandas API's run columns)."""
    return {r["id"]: r for r in store.db.execute(
        "SELECT id, status, source, started, elapsed FROM runs")}

