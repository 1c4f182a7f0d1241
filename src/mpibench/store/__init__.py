"""Results store: one SQLite file, one writer (the harness), a versioned schema.

Tables
  meta          key/value; 'schema_version'
  campaigns     one per campaign file or ad-hoc `mpibench run`
  fingerprints  what produced a result (content-addressed by a hash of its JSON)
  runs          one per cell (variant x benchmark group x params x repeat), with state
  results       one per run x benchmark x size (or per application figure of merit);
                raw samples kept as a float64 little-endian BLOB beside the summary
  imports       source files already imported (path, sha256), so re-imports do not duplicate
  profiles      one JSON profile document per profiled run

Raw output files stay in the run directory as provenance; the store holds their paths.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from mpibench.errors import UsageError

SCHEMA_VERSION = 1

RUN_STATES = ("pending", "running", "done", "failed", "timeout")

_SCHEMA = """
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

# Columns of `results` that add_results() accepts directly from a record dict.
RESULT_COLUMNS = (
    "benchmark", "size", "np", "status", "reason", "metric", "unit", "better", "statistic",
    "n", "median", "ci_low", "ci_high", "min", "p5", "p95", "p99", "max", "mean", "std",
    "first", "batch", "warmup", "stop_reason", "bandwidth_mbps", "busbw_mbps", "msg_rate",
)
RUN_FIELDS = (
    "label", "source", "reason", "stderr_tail", "argv_json", "run_dir", "fingerprint_id",
    "transport_requested", "transport_actual", "exit_code", "started", "finished", "elapsed",
    "scheduler", "job_id", "job_script", "nodelist", "sched_state", "spec_json", "seq",
)


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    blob = json.dumps(fp, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def samples_to_blob(samples: Iterable[float] | None) -> bytes | None:
    if samples is None:
        return None
    return np.asarray(list(samples) if not isinstance(samples, np.ndarray) else samples,
                      dtype="<f8").tobytes()


def blob_to_samples(blob: bytes | None) -> np.ndarray:
    if not blob:
        return np.empty(0)
    return np.frombuffer(blob, dtype="<f8")


class Store:
    """A SQLite results store. Use as a context manager or call close()."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise UsageError(f"store {self.path}: is a directory, expected an SQLite file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            # WAL keeps readers (reports) from blocking the single writer, and a SIGKILL
            # mid-write leaves a consistent database: the last commit is what survives.
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"store {self.path}: not a usable SQLite database ({exc})") from exc

    # -- lifecycle -----------------------------------------------------------------------
    def _migrate(self) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            with self.transaction():
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"store {self.path}: schema version {version} is newer than this mpibench "
                f"understands ({SCHEMA_VERSION}); upgrade mpibench or use another --db"
            )
        if version < SCHEMA_VERSION:
            raise UsageError(
                f"store {self.path}: schema version {version} is older than {SCHEMA_VERSION} "
                "and has no migration"
            )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    class _Tx:
        def __init__(self, db: sqlite3.Connection):
            self.db = db

        def __enter__(self):
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, exc_type, exc, tb):
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")

    def transaction(self) -> Store._Tx:
        """All-or-nothing writes: `with store.transaction(): ...`."""
        return Store._Tx(self.db)

    # -- writes --------------------------------------------------------------------------
    def add_campaign(self, name: str, spec: Mapping[str, Any] | None = None,
                     file: str | None = None) -> int:
        """Return the id of campaign (name, file), creating it if new; spec is refreshed."""
        spec_json = json.dumps(spec or {}, sort_keys=True, default=str)
        row = self.db.execute(
            "SELECT id FROM campaigns WHERE name=? AND file IS ?", (name, file)
        ).fetchone()
        if row:
            self.db.execute("UPDATE campaigns SET spec_json=? WHERE id=?", (spec_json, row[0]))
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO campaigns (name, file, spec_json, created) VALUES (?, ?, ?, ?)",
            (name, file, spec_json, time.time()),
        )
        return int(cur.lastrowid)

    def add_fingerprint(self, fp: Mapping[str, Any]) -> str:
        fid = fingerprint_id(fp)
        self.db.execute(
            "INSERT OR IGNORE INTO fingerprints (id, json) VALUES (?, ?)",
            (fid, json.dumps(fp, sort_keys=True, default=str)),
        )
        return fid

    def create_run(self, run_id: str, campaign_id: int, variant: str, *, grp: str = "",
                   params: Mapping[str, Any] | None = None, repeat: int = 0,
                   spec: Mapping[str, Any] | None = None, **fields: Any) -> bool:
        """Insert a pending run; returns False (and changes nothing) if run_id exists."""
        cols = {"id": run_id, "campaign_id": campaign_id, "variant": variant, "grp": grp,
                "params_json": json.dumps(params or {}, sort_keys=True, default=str),
                "repeat": repeat,
                "spec_json": json.dumps(spec or {}, sort_keys=True, default=str)}
        cols.update(self._run_fields(fields))
        names = ", ".join(cols)
        marks = ", ".join("?" for _ in cols)
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO runs ({names}) VALUES ({marks})", tuple(cols.values())
        )
        return cur.rowcount == 1

    def create_runs(self, runs: Iterable[Mapping[str, Any]]) -> int:
        """Bulk create_run: each mapping has the keyword arguments of create_run plus 'run_id'
        and 'campaign_id' ('params_json'/'spec_json' may replace 'params'/'spec' with text
        the caller serialised). One executemany per set of keys, in one transaction (the
        caller's if one is open). Existing ids are left unchanged; returns how many were
        inserted. Timed against create_run in bench/bench_campaign.py."""
        batches: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        extras: dict[tuple[str, ...], tuple[str, ...]] = {}
        for r in runs:
            keys = tuple(r)
            extra = extras.get(keys)
            if extra is None:  # checked once per set of keys, not per row
                extra = extras[keys] = tuple(self._run_fields(
                    {k: None for k in keys if k not in _CREATE_ARGS}))
            pj, sj = r.get("params_json"), r.get("spec_json")
            row = (r["run_id"], r["campaign_id"], r["variant"], r.get("grp", ""),
                   pj if pj is not None else json.dumps(r.get("params") or {},
                                                        sort_keys=True, default=str),
                   r.get("repeat", 0),
                   sj if isinstance(sj, str) else json.dumps(
                       r.get("spec") or sj or {}, sort_keys=True, default=str),
                   *(self._run_fields({k: r[k]})[k] if k == "argv_json" else r[k]
                     for k in extra))
            batches.setdefault(extra, []).append(row)
        before = self.db.total_changes
        with nullcontext() if self.db.in_transaction else self.transaction():
            for extra, rows in batches.items():
                names = ("id", "campaign_id", "variant", "grp", "params_json", "repeat",
                         "spec_json", *extra)
                self.db.executemany(
                    f"INSERT OR IGNORE INTO runs ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' for _ in names)})", rows)
        return self.db.total_changes - before

    def set_run(self, run_id: str, status: str | None = None, **fields: Any) -> None:
        """Update a run's state and any RUN_FIELDS (e.g. reason, exit_code, finished)."""
        cols = self._run_fields(fields)
        if status is not None:
            if status not in RUN_STATES:
                raise ValueError(f"run status {status!r} not one of {RUN_STATES}")
            cols["status"] = status
        if not cols:
            return
        sets = ", ".join(f"{k}=?" for k in cols)
        self.db.execute(f"UPDATE runs SET {sets} WHERE id=?", (*cols.values(), run_id))

    @staticmethod
    def _run_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in fields.items():
            if k not in RUN_FIELDS:
                raise ValueError(f"unknown run field {k!r}")
            if k in ("argv_json", "spec_json") and not isinstance(v, str) and v is not None:
                v = json.dumps(v, default=str)
            out[k] = v
        return out

    def add_results(self, run_id: str, records: Iterable[Mapping[str, Any]]) -> int:
        """Insert result rows for a run. Each record may carry 'samples' (list/array of floats)
        and 'extra' (any JSON-able dict); other keys must be RESULT_COLUMNS."""
        rows = []
        for rec in records:
            row = [run_id]
            for col in RESULT_COLUMNS:
                row.append(rec.get(col, _DEFAULTS.get(col)))
            row.append(samples_to_blob(rec.get("samples")))
            extra = rec.get("extra")
            row.append(json.dumps(extra, default=str) if extra else None)
            unknown = set(rec) - set(RESULT_COLUMNS) - {"samples", "extra"}
            if unknown:
                raise ValueError(f"unknown result field(s) {sorted(unknown)}")
            rows.append(row)
        cols = ("run_id", *RESULT_COLUMNS, "samples", "extra_json")
        self.db.executemany(
            f"INSERT INTO results ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            rows,
        )
        return len(rows)

    def delete_results(self, run_id: str) -> None:
        self.db.execute("DELETE FROM results WHERE run_id=?", (run_id,))

    def record_import(self, sha256: str, path: str, tool: str | None, tool_version: str | None,
                      run_id: str) -> None:
        self.db.execute(
            "INSERT INTO imports (sha256, path, tool, tool_version, run_id, imported) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (sha256, path, tool, tool_version, run_id, time.time()),
        )

    def find_import(self, sha256: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM imports WHERE sha256=?", (sha256,)).fetchone()

    def set_profile(self, run_id: str, profile: Mapping[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO profiles (run_id, json) VALUES (?, ?)",
            (run_id, json.dumps(profile, default=str)),
        )

    # -- reads ---------------------------------------------------------------------------
    def campaign(self, name_or_id: str | int) -> sqlite3.Row | None:
        if isinstance(name_or_id, int) or str(name_or_id).isdigit():
            return self.db.execute("SELECT * FROM campaigns WHERE id=?", (int(name_or_id),)).fetchone()
        return self.db.execute(
            "SELECT * FROM campaigns WHERE name=? ORDER BY id DESC", (name_or_id,)
        ).fetchone()

    def campaigns(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM campaigns ORDER BY id").fetchall()

    def run(self, run_id: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()

    def runs(self, campaign_id: int | None = None, status: str | None = None,
             variant: str | None = None) -> list[sqlite3.Row]:
        q, args = "SELECT * FROM runs WHERE 1=1", []
        if campaign_id is not None:
            q += " AND campaign_id=?"
            args.append(campaign_id)
        if status is not None:
            q += " AND status=?"
            args.append(status)
        if variant is not None:
            q += " AND variant=?"
            args.append(variant)
        return self.db.execute(q + " ORDER BY seq, id", args).fetchall()

    def fingerprint(self, fid: str | None) -> dict[str, Any] | None:
        if fid is None:
            return None
        row = self.db.execute("SELECT json FROM fingerprints WHERE id=?", (fid,)).fetchone()
        return json.loads(row[0]) if row else None

    def results(self, run_ids: Iterable[str] | None = None, *, with_samples: bool = True,
                benchmark: str | None = None) -> Iterator[dict[str, Any]]:
        """Yield result rows joined with their run (variant, grp, params, repeat, label,
        campaign_id, fingerprint_id) as dicts; 'samples' is a numpy array when requested."""
        cols = ["r.id AS result_id", "r.run_id"] + [f"r.{c}" for c in RESULT_COLUMNS]
        cols += ["r.extra_json", "u.variant", "u.grp", "u.params_json", "u.repeat", "u.label",
                 "u.campaign_id", "u.fingerprint_id", "u.source", "u.transport_requested",
                 "u.transport_actual"]
        if with_samples:
            cols.append("r.samples")
        q = f"SELECT {', '.join(cols)} FROM results r JOIN runs u ON u.id = r.run_id WHERE 1=1"
        args: list[Any] = []
        if run_ids is not None:
            ids = list(run_ids)
            if not ids:
                return
            q += f" AND r.run_id IN ({', '.join('?' for _ in ids)})"
            args += ids
        if benchmark is not None:
            q += " AND r.benchmark=?"
            args.append(benchmark)
        q += " ORDER BY r.id"
        for row in self.db.execute(q, args):
            d = dict(row)
            d["params"] = json.loads(d.pop("params_json") or "{}")
            extra = d.pop("extra_json")
            d["extra"] = json.loads(extra) if extra else {}
            if with_samples:
                d["samples"] = blob_to_samples(d["samples"])
            yield d


_CREATE_ARGS = ("run_id", "campaign_id", "variant", "grp", "params", "params_json", "repeat",
                "spec", "spec_json")
_DEFAULTS = {"status": "ok", "metric": "time", "unit": "us", "better": "lower",
             "statistic": "median"}


def default_db_path() -> Path:
    return Path("mpibench.db")
