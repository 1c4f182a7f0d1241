"""The local store: one SQLite file, one writer (the harness), a versioned schema; and the
Store class whose read methods every store offers (store/archive.py's ArchiveStore, a team
archive on PostgreSQL, subclasses it). `mpibench.store` re-exports this module's public names.

A URL (postgresql://...) names a store of another engine: Store(url) returns the class
registered for URLs (register_url_store), so this module never imports the archive and the
archive imports only this module (no import circle; tests/test_layers.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from mpibench.errors import UsageError
from mpibench.store import schema
from mpibench.store.engine import is_url, looks_like_url, mask_url
from mpibench.store.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Store", "RESULT_COLUMNS", "RUN_FIELDS", "RUN_STATES", "is_url",
           "mask_url", "open_db_arg", "store_error"]

RUN_STATES = ("pending", "running", "done", "failed", "timeout")


# Columns of `results` that add_results() accepts directly from a record dict.
RESULT_COLUMNS = (
    "benchmark", "size", "np", "status", "reason", "metric", "unit", "better", "statistic",
    "n", "median", "ci_low", "ci_high", "min", "p5", "p95", "p99", "max", "mean", "std",
    "first", "batch", "warmup", "stop_reason", "bandwidth_mbps", "busbw_mbps", "msg_rate",
    "lag1", "n_eff",
)
RUN_FIELDS = (
    "label", "source", "reason", "stderr_tail", "argv_json", "run_dir", "fingerprint_id",
    "transport_requested", "transport_actual", "exit_code", "started", "finished", "elapsed",
    "scheduler", "job_id", "job_script", "nodelist", "sched_state", "spec_json", "seq",
    "harness", "mpi_init_us",
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
    if len(blob) % 8:
        raise UsageError(f"a stored sample list is {len(blob)} bytes, not whole 8-byte "
                         "numbers: the store is damaged")
    v = np.frombuffer(blob, dtype="<f8")
    if not np.isfinite(v).all():
        raise UsageError("a stored sample is not a finite number: the store is damaged")
    return v


# what the value check reads (table -> JSON columns, REAL columns): a flipped byte in a JSON
# text or a float makes a traceback or a silently wrong table far from the file
_JSON_COLUMNS = {"campaigns": ("spec_json",), "fingerprints": ("json",),
                 "runs": ("params_json", "spec_json", "argv_json"),
                 "results": ("extra_json",), "profiles": ("json",)}
_REAL_COLUMNS = {"runs": ("started", "finished", "elapsed", "mpi_init_us"),
                 "results": ("median", "ci_low", "ci_high", "min", "p5", "p95", "p99", "max",
                             "mean", "std", "first", "bandwidth_mbps", "busbw_mbps",
                             "msg_rate", "lag1")}
_MAX_DOUBLE = "1.7976931348623157e308"


_SCHEMA_COLUMNS: dict[str, list[str]] = {}


def _damaged_schema(con: sqlite3.Connection, tables: set[str]) -> str | None:
    """A table of the current schema missing one of its columns: a flipped byte in the
    schema text that SQLite's quick check accepts ('no such column' mid-report)."""
    if not _SCHEMA_COLUMNS:
        mem = sqlite3.connect(":memory:", isolation_level=None)
        schema.apply(mem, 0)
        for (t,) in mem.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            _SCHEMA_COLUMNS[t] = [r[1] for r in mem.execute(f"PRAGMA table_info({t})")]
        mem.close()
    for t, cols in sorted(_SCHEMA_COLUMNS.items()):
        if t not in tables:
            continue
        have = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
        missing = [c for c in cols if c not in have]
        if missing:
            return f"table {t} has no column {missing[0]} (its schema text is damaged)"
    return None


def _damaged_value(con: sqlite3.Connection, tables: set[str]) -> str | None:
    """The first value a damaged store holds that mpibench never writes, or None. One pass
    per table; columns an older schema lacks are skipped."""
    for table in sorted(tables & (set(_JSON_COLUMNS) | set(_REAL_COLUMNS))):
        have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        checks = [(f"{c} IS NOT NULL AND NOT json_valid({c})", f"{c} is not valid JSON")
                  for c in _JSON_COLUMNS.get(table, ()) if c in have]
        checks += [(f"({c} > {_MAX_DOUBLE} OR {c} < -{_MAX_DOUBLE})",
                    f"{c} is not a finite number") for c in _REAL_COLUMNS.get(table, ())
                   if c in have]
        if table == "results" and "samples" in have:
            checks.append(("length(samples) % 8 != 0", "samples are not whole 8-byte numbers"))
        if not checks:
            continue
        where = " OR ".join(f"({c})" for c, _ in checks)
        row = con.execute(f"SELECT rowid, {', '.join(f'({c})' for c, _ in checks)} "
                          f"FROM {table} WHERE {where} LIMIT 1").fetchone()
        if row is not None:
            what = next(w for (_, w), hit in zip(checks, tuple(row)[1:], strict=True) if hit)
            if "finite" in what and table == "results":
                # also what an mpibench before issue 22 stored for an application that
                # printed inf: that row can go, the rest of the store is sound
                what += (f" (damage, or an inf an older mpibench stored from an application's "
                         f"output: sqlite3 FILE 'DELETE FROM results WHERE rowid={row[0]}')")
            return f"{table} row {row[0]}: {what}"
    return None


class _Verified:
    """The checks of a read-only open, remembered by content. A store's bytes and its
    -wal's (what a reader sees) are hashed with this code's checks and SQLite's version;
    when the digest equals the one recorded for this path after its checks last passed,
    the content is byte for byte what passed, and the checks are not run again. A byte
    changed since, by damage or by a writer, changes the digest and the checks run.

    Hashing reads the file once (SHA-1 against damage, not against someone who can write
    the store anyway: ~0.06 s for 100 MiB, where the checks take ~0.25 s), so it is done
    only when it may pay: when the file's size, mtime and inode (and its -wal's) are those
    recorded, i.e. nothing seems to have written it since the last open. That stamp only
    decides whether to hash, never whether to check. A store being written (a running
    campaign) is therefore checked as before and never hashed; a finished one is checked
    at its first open, checked and hashed at its second, and only hashed from then on.
    Best effort: a record that cannot be read or written only means checking. Small stores
    are checked every time (a few ms; nothing to save)."""

    MIN_BYTES = 4 << 20

    def __init__(self, path: Path, record: Path, stamp: tuple, digest: str | None,
                 known: bool):
        self.path, self.record, self.stamp = path, record, stamp
        self.digest, self.known = digest, known

    @classmethod
    def of(cls, path: Path) -> _Verified | None:
        from mpibench.files import cache_root

        try:
            stamp = _stamp(path)
            if stamp[0][0] < cls.MIN_BYTES:
                return None
            where = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32]
            record = cache_root() / "verified" / where
            try:
                seen = record.read_text().split("\n")
            except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
                seen = []
            digest = None
            if seen[:2] == [str(path.absolute()), repr(stamp)]:
                digest = _digest(path)
            return cls(path, record, stamp, digest, digest is not None and seen[2:3] == [digest])
        except OSError:
            return None

    def remember(self) -> None:
        """After the checks passed: the stamp, and the digest if this open hashed."""
        from mpibench.files import write_file

        try:
            if _stamp(self.path) != self.stamp:
                return      # written while it was checked: what passed may not be what was hashed
            self.record.parent.mkdir(parents=True, exist_ok=True)
            write_file(self.record, f"{self.path.absolute()}\n{self.stamp!r}\n"
                                    f"{self.digest or '-'}\n")
        except (OSError, UsageError):
            pass


def _digest(path: Path) -> str:
    h = hashlib.sha1(_code_key().encode(), usedforsecurity=False)
    for part in (path, Path(f"{path}-wal")):
        h.update(b"\0" + part.name.encode() + b"\0")
        try:
            with open(part, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
        except FileNotFoundError:
            h.update(b"absent")
    return h.hexdigest()


def _stamp(path: Path) -> tuple:
    """(size, mtime, inode) of a store and its -wal: whether either changed meanwhile."""
    out = []
    for part in (path, Path(f"{path}-wal")):
        try:
            st = part.stat()
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except FileNotFoundError:
            out.append((0, None, None))
    return tuple(out)


_CODE_KEY: list[str] = []


def _code_key() -> str:
    """What the checks are: this module's and the schema's source, SQLite's version. A
    change to any of them makes every recorded digest stale."""
    if not _CODE_KEY:
        h = hashlib.sha1(usedforsecurity=False)
        for f in (Path(__file__), Path(schema.__file__)):
            h.update(f.read_bytes())
        h.update(sqlite3.sqlite_version.encode())
        _CODE_KEY.append(h.hexdigest())
    return _CODE_KEY[0]


def store_error(exc: BaseException) -> str | None:
    """One line for an error that reading a damaged store raised past the opening checks
    (SQLite's own, e.g. text that is not UTF-8), else None: the CLI and mpibench.api print
    or raise it instead of a traceback."""
    if isinstance(exc, sqlite3.DatabaseError):
        return (f"the store cannot be read (SQLite: {exc}); it is damaged or was changed by "
                "another program: restore a copy, or salvage it with `sqlite3 FILE .recover`")
    return None


class Store:
    """A SQLite results store. Use as a context manager or call close().

    readonly=True is for verbs that only read (compare, report, status, profile --show):
    the file is opened read-only and never changed; a store from an earlier mpibench is
    migrated in an in-memory copy. check=True runs SQLite's quick integrity check first and
    then a check of the values (JSON columns parse, sample blobs are whole float64s, numbers
    are finite): import, and every read-only open (compare, report, campaign list/status,
    profile --show, mpibench.api), whose answer would be silently wrong or a traceback on
    a damaged file; a read-only open skips both when the file's bytes are those that passed
    them before (_Verified). A damaged value met while reading anyway (text that is not
    UTF-8) is store_error()'s one line at the CLI and the API.
    Whatever is wrong (not SQLite, another program's database, a newer schema, damage, a
    read-only place for a writing verb) is one UsageError and the file is left untouched."""

    def __new__(cls, path: str | Path = "", *args: Any, **kwargs: Any):
        # a postgresql:// URL is a team archive (store/archive.py), read through this API
        if cls is Store and is_url(path):
            return super().__new__(_url_store())
        return super().__new__(cls)

    engine = "sqlite"   # store/engine.py: 'sqlite', or 'postgres' for a team archive

    def __init__(self, path: str | Path, *, readonly: bool = False, check: bool = False):
        if looks_like_url(path):
            raise UsageError(f"--db {mask_url(str(path))}: an archive URL here (written as "
                             "a path?); this verb needs a local store, or a read verb with "
                             "--db postgresql://...")
        self.path = Path(path)
        self.readonly = readonly
        self.migrated_from: int | None = None  # schema version before this open migrated it
        exists = self._check_file()
        try:
            # every read verb checks what import checks: a byte-flipped store is refused in
            # one line instead of a traceback from whichever query meets the damage first
            version = self._inspect(exists, check or readonly)
            if readonly:
                self.db = self._open_readonly(version)
            else:
                self.db = self._open_writable(exists, version)
        except UnicodeDecodeError as exc:
            # SQLite's own message quoted a damaged name from the schema: not even the
            # error could be decoded
            raise UsageError(f"store {self.path}: damaged (its schema holds bytes that are "
                             f"not UTF-8: {exc.reason} at byte {exc.start}); nothing was "
                             "written. Restore a copy, or salvage it with `sqlite3 FILE "
                             ".recover`") from None
        except sqlite3.DatabaseError as exc:
            # SQLite's result code says which (SQLITE_CORRUPT: damaged pages or schema;
            # SQLITE_NOTADB and the rest: not a database this can use), not its wording
            code = getattr(exc, "sqlite_errorcode", None)
            what = ("damaged" if code is not None and code & 0xFF == sqlite3.SQLITE_CORRUPT
                    else "not a usable SQLite database")
            raise UsageError(f"store {self.path}: {what} (SQLite: {exc}); nothing was "
                             "written") from exc

    # -- opening -------------------------------------------------------------------------
    def _check_file(self) -> bool:
        p = self.path
        try:
            st = p.stat()
        except FileNotFoundError:
            if self.readonly:
                raise UsageError(f"store {p}: no such file") from None
            return False
        except OSError as exc:
            raise UsageError(f"store {p}: cannot be read ({exc.strerror})") from None
        if p.is_dir():
            raise UsageError(f"store {p}: is a directory, expected an SQLite file")
        if not p.is_file():
            raise UsageError(f"store {p}: not a regular file, expected an SQLite file")
        if st.st_size == 0:
            return False
        try:
            with open(p, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise UsageError(f"store {p}: cannot be read ({exc.strerror})") from None
        if head != b"SQLite format 3\x00":
            raise UsageError(f"store {p}: not an SQLite database (it does not start with the "
                             "SQLite header); pass another --db")
        return True

    def _uri(self, **query: str) -> str:
        q = "&".join(f"{k}={v}" for k, v in query.items())
        return f"file:{urllib.parse.quote(str(self.path.absolute()))}?{q}"

    def _connect_ro(self) -> sqlite3.Connection:
        try:
            con = _connect(self._uri(mode="ro"))
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opening is lazy
            return con
        except sqlite3.OperationalError:
            # a WAL store on a read-only mount: SQLite cannot create the -shm file there,
            # and nothing can be writing to it, so reading it as immutable is exact
            if os.access(self.path.parent, os.W_OK):
                raise
            return _connect(self._uri(mode="ro", immutable="1"))

    def _inspect(self, exists: bool, check: bool) -> int:
        """The schema version of an existing store (0 if new), refusing without writing
        anything if it is not one of ours, is newer than this code, or is damaged."""
        if not exists:
            if self.readonly:
                raise UsageError(f"store {self.path}: empty file, not an mpibench store")
            return 0
        con = self._connect_ro()
        try:
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                if self.readonly:
                    raise UsageError(f"store {self.path}: empty database, not an mpibench "
                                     "store")
                return 0
            try:
                row = (con.execute("SELECT value FROM meta WHERE key='schema_version'")
                       .fetchone() if "meta" in tables else None)
            except sqlite3.OperationalError:  # another program's 'meta' table
                row = None
            if row is None:
                shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                raise UsageError(f"store {self.path}: not an mpibench store (an SQLite database "
                                 f"with tables {shown} and no mpibench schema version); it was "
                                 "left untouched, pass another --db")
            try:
                version = int(str(row[0]).strip())
            except ValueError:
                raise UsageError(f"store {self.path}: schema_version {str(row[0])[:40]!r} is "
                                 "not a number; not a store mpibench wrote") from None
            if version > SCHEMA_VERSION:
                raise UsageError(
                    f"store {self.path}: schema version {version} is newer than this mpibench "
                    f"understands ({SCHEMA_VERSION}); upgrade mpibench or use another --db")
            if version < 1:
                raise UsageError(f"store {self.path}: schema version {version} is not one "
                                 "mpibench ever wrote")
            missing = {"runs", "results", "campaigns"} - tables
            if missing:
                raise UsageError(f"store {self.path}: damaged mpibench store: table(s) "
                                 f"{', '.join(sorted(missing))} missing")
            if check:
                self._check(con, tables, version)
            return version
        finally:
            con.close()

    def _check(self, con: sqlite3.Connection, tables: set[str], version: int) -> None:
        """SQLite's quick integrity check, then the values (UsageError on damage). A
        read-only open of content that passed both before is not checked again (_Verified:
        its bytes are hashed, so any byte changed since is checked)."""
        seen = _Verified.of(self.path) if self.readonly else None
        if seen is not None and seen.known:
            return
        problems = [r[0] for r in con.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise UsageError(
                f"store {self.path}: damaged: SQLite's quick integrity check failed "
                f"({'; '.join(problems)[:200]}); nothing was read or written. Restore "
                "a copy, or salvage it with `sqlite3 FILE .recover`")
        bad = (_damaged_schema(con, tables) if version == SCHEMA_VERSION else None) \
            or _damaged_value(con, tables)
        if bad:
            raise UsageError(f"store {self.path}: damaged: {bad}; nothing was read or "
                             "written. Restore a copy, or salvage it with `sqlite3 "
                             "FILE .recover`")
        if seen is not None:
            seen.remember()

    def _open_readonly(self, version: int) -> sqlite3.Connection:
        con = self._connect_ro()
        if version == SCHEMA_VERSION:
            return con
        # an earlier mpibench's store: migrate a copy in memory, never the file
        mem = _connect(":memory:")
        con.backup(mem)
        con.close()
        with Store._Tx(mem):
            schema.apply(mem, version)
        self.migrated_from = version
        return mem

    def _open_writable(self, exists: bool, version: int) -> sqlite3.Connection:
        p = self.path
        if exists and not (os.access(p, os.W_OK) and os.access(p.parent, os.W_OK)):
            where = "file" if not os.access(p, os.W_OK) else "directory"
            raise UsageError(f"store {p}: read-only {where} (a read-only mount or no write "
                             "permission); this verb writes to the store: pass --db to a "
                             "writable place")
        if not exists:
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"store {p}: cannot create its directory "
                                 f"({exc.strerror})") from None
            if not os.access(p.parent, os.W_OK):
                raise UsageError(f"store {p}: directory {p.parent} is not writable; "
                                 "pass --db to a writable place")
        db = _connect(str(p))
        # WAL keeps readers (reports) from blocking the single writer, and a SIGKILL
        # mid-write leaves a consistent database: the last commit is what survives.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        with Store._Tx(db):
            # re-read inside the write lock: another process may have created or migrated it
            have = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                              "name='meta'").fetchone()
            now = (int(db.execute("SELECT value FROM meta WHERE key='schema_version'")
                       .fetchone()[0]) if have else 0)
            if schema.apply(db, now) and now:
                self.migrated_from = now
        return db

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

    def rename_runs(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Give runs new ids ((old, new) pairs), with their results, import records and
        profiles, in the caller's transaction (or one of its own). Returns how many runs
        were renamed; an old id that is absent, or a new id already taken, is skipped."""
        n = 0
        with nullcontext() if self.db.in_transaction else self.transaction():
            self.db.execute("PRAGMA defer_foreign_keys=ON")  # results point at the old id
            for old, new in pairs:
                cur = self.db.execute("UPDATE OR IGNORE runs SET id=? WHERE id=?", (new, old))
                if cur.rowcount != 1:
                    continue
                n += 1
                for table in ("results", "imports", "profiles"):
                    self.db.execute(f"UPDATE {table} SET run_id=? WHERE run_id=?", (new, old))
        return n

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
        if isinstance(name_or_id, int) or (str(name_or_id).isascii()
                                            and str(name_or_id).isdigit()):
            cid = int(name_or_id)
            if not 0 <= cid < 1 << 63:  # no such id (and SQLite could not even bind it)
                return None
            return self.db.execute("SELECT * FROM campaigns WHERE id=?", (cid,)).fetchone()
        return self.db.execute(
            "SELECT * FROM campaigns WHERE name=? ORDER BY id DESC", (name_or_id,)
        ).fetchone()

    def unfinished_instance(self, name: str, file: str) -> str | None:
        """The instance (spec_json's "instance") of campaign (name, file) when some of its
        runs are not final: an ad-hoc run that was interrupted (campaign/adhoc.py)."""
        row = self.db.execute(
            "SELECT json_extract(c.spec_json, '$.instance') FROM campaigns c WHERE c.name=? "
            "AND c.file IS ? AND EXISTS (SELECT 1 FROM runs r WHERE r.campaign_id=c.id AND "
            "r.status IN ('pending', 'running'))", (name, file)).fetchone()
        return row[0] if row and row[0] else None

    def campaign_of_run(self, run_id: str) -> sqlite3.Row | None:
        """The campaign (id, name, file) a run belongs to, or None."""
        return self.db.execute("SELECT c.id, c.name, c.file FROM runs r JOIN campaigns c "
                               "ON c.id = r.campaign_id WHERE r.id=?", (run_id,)).fetchone()

    def set_campaign_file(self, campaign_id: int, file: str) -> None:
        self.db.execute("UPDATE campaigns SET file=? WHERE id=?", (file, campaign_id))

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
                 "u.transport_actual", "u.mpi_init_us"]
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


# the Store subclass that opens a URL: store/archive.py registers ArchiveStore when imported,
# and mpibench.store (the package, imported before any of its modules) imports it
_URL_STORE: list[type[Store]] = []


def register_url_store(cls: type[Store]) -> type[Store]:
    """Make Store(url) open a URL with cls (a Store subclass taking the URL as its path)."""
    _URL_STORE[:] = [cls]
    return cls


def _url_store() -> type[Store]:
    if not _URL_STORE:  # only if mpibench.store.local were loaded without its package
        raise UsageError("archive URLs need mpibench.store.archive, which is not loaded")
    return _URL_STORE[0]


_CREATE_ARGS = ("run_id", "campaign_id", "variant", "grp", "params", "params_json", "repeat",
                "spec", "spec_json")
_DEFAULTS = {"status": "ok", "metric": "time", "unit": "us", "better": "lower",
             "statistic": "median"}


def _connect(target: str) -> sqlite3.Connection:
    db = sqlite3.connect(target, timeout=30, isolation_level=None, uri=target.startswith("file:"))
    db.row_factory = sqlite3.Row
    return db


def open_db_arg(value: str | None, default: str = "mpibench.db") -> str:
    """A read verb's store: --db, else $MPIBENCH_DB, else default (a path or an archive URL)."""
    return value or os.environ.get("MPIBENCH_DB") or default


def db_exists(target: str | Path) -> bool:
    """Whether a read verb's --db names something to open: an archive URL (checked when
    opened) or an existing file."""
    return is_url(target) or Path(target).exists()


def default_db_path() -> Path:
    return Path("mpibench.db")
