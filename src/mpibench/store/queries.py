"""Named read queries: the SQL that verbs, the campaign runner's status views, transport
checks and the pandas API need, kept beside the schema so that a schema change touches this
folder only. Each takes an open Store (or a path, for a look that must not open one)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
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


# on a team archive a run's id is its content key; a campaign's cells are shown by their
# local cell ids (what the campaign file plans), which the archive keeps per pushed run
_ARCHIVE_CELL_COLUMNS = ("(SELECT min(o.local_id) FROM run_origins o WHERE o.run_id = runs.id) "
                         "AS id" + _CELL_COLUMNS[2:])


def campaign_cells(store: Store, campaign_id: int, offset: int = 0,
                   limit: int | None = None) -> list[sqlite3.Row]:
    """The campaign's runs in plan order, without results; a page of them with offset and
    limit (a 100k-cell campaign is listed a page at a time)."""
    cols = _CELL_COLUMNS if store.engine == "sqlite" else _ARCHIVE_CELL_COLUMNS
    return store.db.execute(f"SELECT {cols} FROM runs WHERE campaign_id=? "
                            "ORDER BY seq, id LIMIT ? OFFSET ?",
                            (campaign_id, -1 if limit is None else limit,
                             offset)).fetchall()


def cell_count(store: Store, campaign_id: int) -> int:
    return store.db.execute("SELECT count(*) FROM runs WHERE campaign_id=?",
                            (campaign_id,)).fetchone()[0]


def has_batch_jobs(store: Store, campaign_id: int, local_job_prefix: str) -> bool:
    """Whether any cell ran in a batch job (a local cell's job id is not one)."""
    return store.db.execute("SELECT 1 FROM runs WHERE campaign_id=? AND job_id IS NOT NULL "
                            "AND job_id NOT LIKE ? LIMIT 1",
                            (campaign_id, local_job_prefix + "%")).fetchone() is not None


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


def state_counts_all(store: Store, local_job_prefix: str
                     ) -> dict[int, tuple[dict[str, int], int]]:
    """state_counts of every campaign at once (campaign id -> (cells per state, batch jobs
    among the running ones)): `campaign list` on an archive of a thousand campaigns is one
    query, not one per campaign."""
    out: dict[int, tuple[dict[str, int], int]] = {}
    for cid, state, n, n_jobs in store.db.execute(
            "SELECT campaign_id, status, count(*), count(DISTINCT CASE WHEN job_id NOT LIKE ? "
            "THEN job_id END) FROM runs GROUP BY campaign_id, status",
            (local_job_prefix + "%",)):
        counts, jobs = out.get(cid, ({}, 0))
        counts[state] = n
        out[cid] = (counts, n_jobs if state == "running" else jobs)
    return out


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



# -- the campaign runner's bookkeeping of its runs ---------------------------------------------
def run_seqs(store: Store, campaign_id: int) -> dict[str, int]:
    """run id -> position in the plan, for the campaign's stored runs."""
    return dict(store.db.execute("SELECT id, seq FROM runs WHERE campaign_id=?",
                                 (campaign_id,)).fetchall())


def set_seqs(store: Store, moves: Iterable[tuple[int, str]]) -> None:
    """(new seq, run id) pairs: an edited campaign file may reorder its cells."""
    store.db.executemany("UPDATE runs SET seq=? WHERE id=?", list(moves))


def ran_from_repeat(store: Store, campaign_id: int, repeat: int) -> bool:
    """Whether a launch of repeat index >= repeat of this campaign has started (any state
    but pending): repeats = "auto"'s stage 2 has begun."""
    return store.db.execute("SELECT 1 FROM runs WHERE campaign_id=? AND repeat>=? AND "
                            "status != 'pending' LIMIT 1",
                            (campaign_id, repeat)).fetchone() is not None


def look_taken(store: Store, campaign_id: int, repeat: int) -> bool:
    """Whether a look after the first `repeat` rounds has had its launches: a launch of
    repeat index >= repeat has started (any state but pending), or some group point
    (group, parameters) has none of its launches of repeat index < repeat pending or
    running (repeats = "decide" looks once those have run, even when the look decides
    every cell and no later launch runs)."""
    if ran_from_repeat(store, campaign_id, repeat):
        return True
    return store.db.execute(
        "SELECT 1 FROM runs WHERE campaign_id=? AND repeat<? GROUP BY grp, params_json "
        "HAVING SUM(status IN ('pending', 'running'))=0 LIMIT 1",
        (campaign_id, repeat)).fetchone() is not None


def looked_points(store: Store, campaign_id: int, repeat: int) -> dict[tuple[str, str], set[str]]:
    """{(group, params_json): the variants it has launches of} for each group point whose
    look after the first `repeat` rounds has had its launches (look_taken, per point: a
    launch of repeat index >= repeat started, or none of its launches of repeat index <
    repeat is pending or running)."""
    points: dict[tuple[str, str], list] = {}
    for r in store.db.execute(
            "SELECT grp, params_json, variant, SUM(repeat >= ? AND status != 'pending'), "
            "SUM(repeat < ? AND status IN ('pending', 'running')), SUM(repeat < ?) "
            "FROM runs WHERE campaign_id=? GROUP BY grp, params_json, variant",
            (repeat, repeat, repeat, campaign_id)):
        pt = points.setdefault((r[0], r[1]), [set(), 0, 0, 0])
        pt[0].add(r[2])
        for k in (1, 2, 3):
            pt[k] += r[k + 2] or 0
    return {key: vs for key, (vs, later, running, first) in points.items()
            if later or (first and not running)}


def run_statuses(store: Store, campaign_id: int) -> dict[str, str]:
    return {r["id"]: r["status"] for r in store.db.execute(
        "SELECT id, status FROM runs WHERE campaign_id=?", (campaign_id,))}


def set_line_rate(store: Store, campaign_id: int, variant: str, text: str | None,
                  bps: float | None) -> None:
    """A variant's line rate as its runs' stored specs carry it (the reports read it there);
    None removes it. Only runs whose value differs are written."""
    store.db.execute(
        "UPDATE runs SET spec_json = CASE WHEN ? IS NULL "
        "THEN json_remove(spec_json, '$.line_rate', '$.line_rate_bps') "
        "ELSE json_set(spec_json, '$.line_rate', ?, '$.line_rate_bps', ?) END "
        "WHERE campaign_id=? AND variant=? AND "
        "(json_extract(spec_json, '$.line_rate') IS NOT ? OR "
        "json_extract(spec_json, '$.line_rate_bps') IS NOT ?)",
        (text, text, bps, campaign_id, variant, text, bps))


# -- stored profiles ----------------------------------------------------------------------------
_PROFILE_LAUNCH = ("SELECT p.run_id, p.json, r.variant, r.label, r.status, r.fingerprint_id, "
                   "r.started, c.name AS campaign "
                   "FROM profiles p JOIN runs r ON r.id = p.run_id "
                   "JOIN campaigns c ON c.id = r.campaign_id ")


def profile_launches(store: Store, *, run_id: str | None = None, name: str | None = None,
                     campaign: str | None = None) -> list[sqlite3.Row]:
    """Profiled runs with their documents, oldest first: one run id; or every run whose
    variant or label is `name`, or whose variant is a sweep point of it (`name[...]`),
    optionally within one campaign; or, with neither, every profiled run."""
    q, args = _PROFILE_LAUNCH, []
    if run_id is not None:
        q += "WHERE p.run_id = ?"
        args = [run_id]
    elif name is not None:
        q += "WHERE (r.variant = ? OR r.label = ? OR r.variant LIKE ?)"
        args = [name, name, name + "[%"]
        if campaign is not None:
            q += " AND c.name = ?"
            args.append(campaign)
    return store.db.execute(q + " ORDER BY r.started, r.rowid", args).fetchall()


def profile_launches_of(store: Store, run_ids: list[str]) -> Iterator[sqlite3.Row]:
    """Profiled runs among run_ids, oldest first within each chunk of 500."""
    ids = list(dict.fromkeys(run_ids))
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        yield from store.db.execute(
            _PROFILE_LAUNCH + f"WHERE p.run_id IN ({', '.join('?' for _ in chunk)}) "
            "ORDER BY r.started, r.rowid", chunk)


def profile_names(store: Store) -> list[str]:
    """Label or variant of every profiled run, sorted: what a profile name can be."""
    return sorted({r[0] for r in store.db.execute(
        "SELECT COALESCE(r.label, r.variant) FROM profiles p JOIN runs r ON r.id = p.run_id")})


def profile_document(store: Store, run_id_or_name: str) -> str | None:
    """The profile JSON of a run id, else of the newest run with that variant or label."""
    row = store.db.execute("SELECT json FROM profiles WHERE run_id=?",
                           (run_id_or_name,)).fetchone()
    if not row:
        row = store.db.execute(
            "SELECT p.json FROM profiles p JOIN runs r ON r.id = p.run_id "
            "WHERE r.variant=? OR r.label=? ORDER BY r.started DESC, r.rowid DESC LIMIT 1",
            (run_id_or_name, run_id_or_name)).fetchone()
    return row[0] if row else None


def recent_profiles(store: Store, n: int = 5) -> list[str]:
    return [r[0] for r in store.db.execute(
        "SELECT run_id FROM profiles ORDER BY rowid DESC LIMIT ?", (n,))]
