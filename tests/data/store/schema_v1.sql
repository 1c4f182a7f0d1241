-- The store schema as mpibench shipped it at version 1 (src/mpibench/store/__init__.py,
-- main before migrations existed). Kept verbatim so that tests can build a store exactly as
-- that version did and check that today's code migrates it. Never edit this file.
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
INSERT INTO meta VALUES ('schema_version', '1');
