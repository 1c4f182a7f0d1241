"""The store's schema as an ordered list of migrations.

A new store applies every migration from version 0; a store made by an earlier mpibench
applies the ones it lacks, in one transaction, when a writing verb opens it (a read-only verb
migrates an in-memory copy and leaves the file alone). To change the schema: append a
Migration with the next version number and say why; never edit a shipped one (the v1 DDL is
kept verbatim in tests/data/store/schema_v1.sql and a test migrates a store built from it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    why: str
    sql: str = ""  # statements separated by ';' (no ';' inside literals)
    fn: Callable[[sqlite3.Connection], None] | None = None  # for steps SQL alone cannot do


_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    file TEXT,
    spec_json TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    UNIQUE (name, file)
);
CREATE TABLE fingerprints (
    id TEXT PRIMARY KEY,
    json TEXT NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    variant TEXT NOT NULL,
    grp TEXT NOT NULL DEFAULT '',
    params_json TEXT NOT NULL DEFAULT '{}',
    repeat INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL DEFAULT 0,
    label TEXT,
    source TEXT NOT NULL DEFAULT 'native',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'failed', 'timeout')),
    reason TEXT,
    stderr_tail TEXT,
    spec_json TEXT NOT NULL DEFAULT '{}',
    argv_json TEXT,
    run_dir TEXT,
    fingerprint_id TEXT REFERENCES fingerprints(id),
    transport_requested TEXT,
    transport_actual TEXT,
    exit_code INTEGER,
    started REAL,
    finished REAL,
    elapsed REAL,
    scheduler TEXT,
    job_id TEXT,
    job_script TEXT,
    nodelist TEXT,
    sched_state TEXT
);
CREATE INDEX runs_campaign ON runs(campaign_id, status);
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    benchmark TEXT NOT NULL,
    size INTEGER,
    np INTEGER,
    status TEXT NOT NULL DEFAULT 'ok',
    reason TEXT,
    metric TEXT NOT NULL DEFAULT 'time',
    unit TEXT NOT NULL DEFAULT 'us',
    better TEXT NOT NULL DEFAULT 'lower' CHECK (better IN ('lower', 'higher')),
    statistic TEXT NOT NULL DEFAULT 'median',
    n INTEGER,
    median REAL, ci_low REAL, ci_high REAL,
    min REAL, p5 REAL, p95 REAL, p99 REAL, max REAL,
    mean REAL, std REAL,
    first REAL,
    batch INTEGER,
    warmup INTEGER,
    stop_reason TEXT,
    bandwidth_mbps REAL,
    busbw_mbps REAL,
    msg_rate REAL,
    samples BLOB,
    extra_json TEXT
);
CREATE INDEX results_run ON results(run_id);
CREATE INDEX results_bench ON results(benchmark, size);
CREATE TABLE imports (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    tool TEXT,
    tool_version TEXT,
    run_id TEXT REFERENCES runs(id),
    imported REAL NOT NULL
);
CREATE TABLE profiles (
    run_id TEXT PRIMARY KEY REFERENCES runs(id),
    json TEXT NOT NULL
);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "the first schema: campaigns, fingerprints, runs, results, imports, profiles",
              _V1),
    Migration(2, "runs.harness: which harness (host, pid, process start) holds a running cell, "
                 "so that a second harness's recovery leaves a live one's cells and processes "
                 "alone",
              "ALTER TABLE runs ADD COLUMN harness TEXT"),
    Migration(3, "results.lag1 and results.n_eff: the core's lag-1 autocorrelation of a "
                 "launch's log samples and the effective sample size its within-launch CI was "
                 "computed for (core output ci_method order_statistics_n_eff), so that launch-"
                 "level statistics can see how correlated each launch's samples were",
              "ALTER TABLE results ADD COLUMN lag1 REAL; "
              "ALTER TABLE results ADD COLUMN n_eff INTEGER"),
    Migration(4, "runs.mpi_init_us: how long MPI_Init took in that launch (the core's header, "
                 "max over ranks), so that a study can report start-up cost per launch beside "
                 "the first call and the per-call times",
              "ALTER TABLE runs ADD COLUMN mpi_init_us REAL"),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


# The team archive (PostgreSQL, store/archive.py) has the schema above, translated by
# engine.ddl_for, plus what only an archive needs, versioned apart under meta
# 'archive_version': where each pushed run came from, and indexes for selections that span
# sites and months.
ARCHIVE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "archive: campaigns content-addressed by a key (name, file, creation time: a "
                 "copy of a store pushes the same key, two sites' runs of one file do not); "
                 "origins (site, user, host, local store identity) and which origin pushed "
                 "each run; one row per push; indexes for selections by campaign name, label, "
                 "variant and start time",
              "ALTER TABLE campaigns ADD COLUMN key TEXT; "
              "ALTER TABLE campaigns DROP CONSTRAINT campaigns_name_file_key; "
              "CREATE UNIQUE INDEX campaigns_key ON campaigns(key); "
              "CREATE INDEX campaigns_name ON campaigns(name); "
              "CREATE TABLE origins (id TEXT PRIMARY KEY, site TEXT NOT NULL, "
              "username TEXT NOT NULL, host TEXT NOT NULL, store TEXT NOT NULL, "
              "path TEXT NOT NULL); "
              "CREATE TABLE run_origins (run_id TEXT NOT NULL REFERENCES runs(id), "
              "origin_id TEXT NOT NULL REFERENCES origins(id), local_id TEXT NOT NULL, "
              "pushed REAL NOT NULL, PRIMARY KEY (run_id, origin_id)); "
              "CREATE INDEX run_origins_origin ON run_origins(origin_id); "
              "CREATE TABLE pushes (id INTEGER PRIMARY KEY, origin_id TEXT NOT NULL "
              "REFERENCES origins(id), started REAL NOT NULL, finished REAL NOT NULL, "
              "runs_sent INTEGER NOT NULL, runs_new INTEGER NOT NULL, "
              "results_new INTEGER NOT NULL); "
              "CREATE INDEX runs_label ON runs(label); "
              "CREATE INDEX runs_variant ON runs(variant); "
              "CREATE INDEX runs_started ON runs(started)"),
)
ARCHIVE_VERSION = ARCHIVE_MIGRATIONS[-1].version


def apply(db: sqlite3.Connection, current: int, engine: str = "sqlite", *,
          migrations: tuple[Migration, ...] = MIGRATIONS, key: str = "schema_version") -> int:
    """Bring db from version `current` to the last of `migrations` inside the caller's
    transaction, with each statement in `engine`'s dialect (engine.ddl_for); returns how
    many migrations ran."""
    from mpibench.store.engine import ddl_for, upsert

    todo = [m for m in migrations if m.version > current]
    for m in todo:
        for stmt in m.sql.split(";"):
            if stmt.strip():
                db.execute(ddl_for(engine, stmt))
        if m.fn is not None:
            m.fn(db)
        db.execute(upsert(engine, "meta", ("key", "value"), ("key",)), (key, str(m.version)))
    return len(todo)


def _check_numbering() -> None:
    for ms in (MIGRATIONS, ARCHIVE_MIGRATIONS):
        versions = [m.version for m in ms]
        if versions != list(range(1, len(versions) + 1)):
            raise AssertionError(f"store migrations must be numbered 1..n in order, got "
                                 f"{versions}")


_check_numbering()
