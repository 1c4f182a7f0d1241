"""The team archive: a PostgreSQL database that receives the finished runs of local stores.

The local SQLite store stays the source of truth for a running campaign; `mpibench push`
sends its finished runs (done, failed, timeout) with their results, raw samples,
fingerprints, profiles and campaign descriptions to the archive, and every read verb reads
an archive as it reads a store (`--db postgresql://...`, ArchiveStore below).

Content addressing: a campaign's key is a hash of (name, file, creation time); a run's id in
the archive is its local id and a hash of its campaign's key, its local id, what it ran and
when, its state, and every one of its results (samples included) and its profile. Pushing the same store twice,
or copies of one store from several machines at once, therefore stores each run exactly once
(INSERT ... ON CONFLICT DO NOTHING against the primary key; a concurrent pusher of the same
run waits for the first one's transaction and then skips it). Rows are inserted in one order
(campaigns by creation time and key, runs by id), so concurrent pushes cannot deadlock.

One push is one transaction: a push killed at any point leaves nothing of itself visible (the
server rolls back a transaction whose client is gone), and pushing again completes it. Each
run records which origins pushed it (site, user, host, the local store's identity and path):
never the archive URL, and no password is ever printed (engine.mask_url).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpibench.errors import UsageError
from mpibench.store import schema
from mpibench.store.engine import PgConnection, mask_url, scrub
from mpibench.store.local import RESULT_COLUMNS, RUN_FIELDS, Store, register_url_store
from mpibench.store.schema import ARCHIVE_VERSION, SCHEMA_VERSION

FINAL_STATES = ("done", "failed", "timeout")
_LOCK = 0x6D7062656E6368  # pg_advisory_xact_lock key of schema creation and migration

# run columns in schema order (SELECT * order of both engines)
RUN_COLUMNS = ("id", "campaign_id", "variant", "grp", "params_json", "repeat", "seq", "label",
               "source", "status", "reason", "stderr_tail", "spec_json", "argv_json", "run_dir",
               "fingerprint_id", "transport_requested", "transport_actual", "exit_code",
               "started", "finished", "elapsed", "scheduler", "job_id", "job_script",
               "nodelist", "sched_state", "harness", "mpi_init_us")
# what a run's content key hashes besides its results and profile: what ran, when, and how it
# ended. Not its annotations (label, variant name, spec: an import relabelled, a line rate
# edited in the campaign file), which a later push updates in place instead of storing the
# launch a second time.
_ANNOTATIONS = ("label", "variant", "spec_json")
_KEY_FIELDS = ("grp", "params_json", "repeat", "source", "status", "reason",
               "started", "finished", "elapsed", "fingerprint_id", "exit_code",
               "transport_requested", "transport_actual", "mpi_init_us")
RESULT_COPY = (*RESULT_COLUMNS, "samples", "extra_json")
_INT_RESULT = {"size", "np", "n", "batch", "warmup", "n_eff"}
_INT_RUN = {"campaign_id", "repeat", "seq", "exit_code"}
assert set(RUN_COLUMNS) == {"id", "campaign_id", "variant", "grp", "params_json", "repeat",
                            "status", "spec_json"} | set(RUN_FIELDS)


def _connect(url: str, *, readonly: bool):
    try:
        import psycopg
    except ImportError:
        raise UsageError("the archive needs psycopg 3 (`make setup` installs it: "
                         "pip install 'psycopg[binary]')") from None
    try:
        conn = psycopg.connect(url, connect_timeout=15, application_name="mpibench")
    except psycopg.Error as exc:
        msg = scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                    url)
        raise UsageError(f"archive {mask_url(url)}: cannot connect ({msg})") from None
    except Exception as exc:  # a malformed URL: psycopg raises ProgrammingError or ValueError
        raise UsageError(f"archive {mask_url(url)}: not a usable PostgreSQL URL "
                         f"({scrub(str(exc), url)[:200]})") from None
    if readonly:
        conn.read_only = True
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot
    return conn


def _versions(db: PgConnection, where: str) -> tuple[int, int] | None:
    """(schema version, archive version) of the archive, None if the database is empty;
    UsageError if it is another program's database or newer than this mpibench."""
    tables = {r[0] for r in db.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema()")}
    if not tables:
        return None
    meta = {}
    if "meta" in tables:
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except Exception:  # another program's 'meta' table
            db.rollback()
            meta = {}
    if "schema_version" not in meta or "archive_version" not in meta:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise UsageError(f"archive {where}: not an mpibench archive (a database with tables "
                         f"{shown} and no mpibench archive version); it was left untouched")
    try:
        version, aversion = int(meta["schema_version"]), int(meta["archive_version"])
    except ValueError:
        raise UsageError(f"archive {where}: schema version {meta['schema_version'][:40]!r} is "
                         "not a number; not an archive mpibench wrote") from None
    if version > SCHEMA_VERSION or aversion > ARCHIVE_VERSION:
        raise UsageError(f"archive {where}: schema version {version}.{aversion} is newer than "
                         f"this mpibench understands ({SCHEMA_VERSION}.{ARCHIVE_VERSION}); "
                         "upgrade mpibench")
    return version, aversion


def ensure_schema(db: PgConnection, where: str) -> None:
    """Create or migrate the archive's schema, once, under an advisory lock (concurrent
    pushers to a new archive wait for the first one), in its own transaction."""
    db.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK,))
    have = _versions(db, where)
    version, aversion = have or (0, 0)
    schema.apply(db, version, "postgres")
    schema.apply(db, aversion, "postgres", migrations=schema.ARCHIVE_MIGRATIONS,
                 key="archive_version")
    db.execute("INSERT INTO meta (key, value) VALUES ('kind', 'mpibench-archive') "
               "ON CONFLICT (key) DO NOTHING")
    db.commit()


@register_url_store
class ArchiveStore(Store):
    """A PostgreSQL archive opened by a read verb: the Store read methods and the named
    queries work on it unchanged (SQL translated by store/engine.py). Read-only, one
    snapshot for the whole verb. Store(url) returns one (registered below with
    store/local.py, which does not import this module). `path` is the URL with its password masked."""

    engine = "postgres"

    def __init__(self, url: str, *, readonly: bool = False, check: bool = False):
        self.url = url
        self.path = mask_url(url)  # type: ignore[assignment]
        self.readonly = True
        self.migrated_from = None
        if not readonly:
            raise UsageError(f"--db {self.path}: an archive receives finished runs through "
                             "`mpibench push`; this verb writes, so give it a local store")
        self.db = PgConnection(_connect(url, readonly=True))  # type: ignore[assignment]
        try:
            have = _versions(self.db, self.path)
        except BaseException:
            self.db.close()
            raise
        if have is None:
            self.db.close()
            raise UsageError(f"archive {self.path}: empty database, nothing pushed to it yet "
                             "(`mpibench push` creates the archive)")
        if have != (SCHEMA_VERSION, ARCHIVE_VERSION):
            self.db.close()
            raise UsageError(f"archive {self.path}: schema version {have[0]}.{have[1]} is "
                             f"older than this mpibench's ({SCHEMA_VERSION}.{ARCHIVE_VERSION})"
                             "; push to it once with this mpibench, which migrates it")

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        raise UsageError(f"--db {self.path}: the archive is written only by `mpibench push`")


# -- push -----------------------------------------------------------------------------------------
@dataclass
class PushSummary:
    runs_sent: int = 0
    runs_new: int = 0
    runs_updated: int = 0     # already there, with a label, variant name or spec changed since
    results_new: int = 0
    campaigns_new: int = 0
    fingerprints_new: int = 0
    profiles_new: int = 0
    skipped_unfinished: int = 0
    seconds: float = 0.0
    origin: str = ""


def store_identity(local: Store) -> str:
    """A local store's identity: its host, absolute path and first campaign's creation time
    (a copy elsewhere is another store; the same file pushed again is the same one)."""
    first = local.db.execute("SELECT min(created) FROM campaigns").fetchone()[0]
    blob = json.dumps([socket.gethostname(), str(Path(local.path).absolute()), first])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def campaign_key(name: str, file: str | None, created: float) -> str:
    blob = json.dumps([name, file, repr(float(created))])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def archive_run_id(local_id: str, content_hash: str) -> str:
    """A run's id in the archive: its local id, '+', 16 hex digits of its content hash. The
    hash makes it content-addressed (two sites' runs of one campaign file share local ids);
    the local id in front keeps it readable and keeps a store's runs in their local order
    ('+' sorts before the '-' and '.' of ids), so the read verbs order launches alike."""
    return f"{local_id}+{content_hash[:16]}"


def _local_runs(local: Store) -> list:
    marks = ", ".join("?" for _ in FINAL_STATES)
    return local.db.execute(
        f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE status IN ({marks}) "
        "ORDER BY campaign_id, seq, id", FINAL_STATES).fetchall()


def _local_results(local: Store, run_ids: list[str] | None) -> Iterator[tuple]:
    """(run id, *RESULT_COPY) of the finished runs' results (or of run_ids), by run then
    result id."""
    cols = ", ".join(f"r.{c}" for c in RESULT_COPY)
    cur = local.db.cursor()
    cur.row_factory = None
    if run_ids is None:
        marks = ", ".join("?" for _ in FINAL_STATES)
        yield from cur.execute(
            f"SELECT r.run_id, {cols} FROM results r JOIN runs u ON u.id = r.run_id "
            f"WHERE u.status IN ({marks}) ORDER BY r.run_id, r.id", FINAL_STATES)
        return
    for i in range(0, len(run_ids), 5000):
        chunk = run_ids[i:i + 5000]
        yield from cur.execute(
            f"SELECT r.run_id, {cols} FROM results r WHERE r.run_id IN "
            f"({', '.join('?' for _ in chunk)}) ORDER BY r.id", chunk)


def _int(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v


def push(local_path: str | Path, url: str, *, site: str, user: str | None = None,
         host: str | None = None,
         progress: Callable[[str], None] | None = None) -> PushSummary:
    """Send a local store's finished runs to the archive at url (created if the database is
    empty). Returns what was new; raises UsageError for a bad store, URL or archive."""
    t0 = time.monotonic()
    say = progress or (lambda _msg: None)
    out = PushSummary()
    user = user or getpass.getuser()
    host = host or socket.gethostname()
    where = mask_url(url)
    with Store(local_path, readonly=True, check=True) as local:
        db = PgConnection(_connect(url, readonly=False))
        try:
            ensure_schema(db, where)    # a foreign or newer archive is refused before work
        except BaseException:
            db.close()
            raise
        batch = _Batch.read(local, say)
        out.skipped_unfinished = batch.skipped
        identity = store_identity(local)
        origin_id = hashlib.sha256(json.dumps([site, user, host, identity]).encode()
                                   ).hexdigest()[:16]
        out.origin = f"{site} ({user}@{host})"
        out.runs_sent = len(batch.runs)
        try:
            raw = db.raw
            started = time.time()
            say(f"sending to {where}")
            cur = raw.cursor()
            cur.execute("INSERT INTO origins (id, site, username, host, store, path) "
                        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                        (origin_id, site, user, host, identity,
                         str(Path(local.path).absolute())))
            arch_cid = _send_campaigns(cur, batch, out)
            new = _send_runs(cur, batch, arch_cid, out)
            local_new = [r["id"] for r in batch.runs if batch.key_of[r["id"]] in new]
            say(f"{len(new)} new run(s); sending their results")
            _send_results(cur, local, batch, local_new, out)
            _send_origins(cur, batch, origin_id)
            cur.execute("INSERT INTO pushes (origin_id, started, finished, runs_sent, "
                        "runs_new, results_new) VALUES (%s, %s, %s, %s, %s, %s)",
                        (origin_id, started, time.time(), out.runs_sent, out.runs_new,
                         out.results_new))
            raw.commit()
        except UsageError:
            raise
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise UsageError(f"archive {where}: push failed, nothing was stored "
                                 f"({scrub(first, url)[:300]})") from None
            raise
        finally:
            db.close()
    out.seconds = time.monotonic() - t0
    return out


@dataclass
class _Batch:
    """What one push sends, read from the local store before the archive is touched: the
    finished runs with their content-addressed archive ids (key_of), their campaigns and
    campaign keys, profiles and fingerprints."""
    runs: list
    skipped: int                     # runs not finished, not sent
    camps: dict[int, Any]
    ckey: dict[int, str]
    key_of: dict[str, str]
    profiles: dict[str, str]
    fps: dict[str, str]

    @classmethod
    def read(cls, local: Store, say: Callable[[str], None]) -> _Batch:
        camps = {r["id"]: r for r in local.campaigns()}
        runs = _local_runs(local)
        skipped = local.db.execute(
            f"SELECT count(*) FROM runs WHERE status NOT IN "
            f"({', '.join('?' for _ in FINAL_STATES)})", FINAL_STATES).fetchone()[0]
        ckey = {cid: campaign_key(c["name"], c["file"], c["created"])
                for cid, c in camps.items()}
        # content keys: the run's own fields, then every result (samples included), profile
        say(f"hashing {len(runs)} finished run(s)")
        digests: dict[str, Any] = {}
        for row in _local_results(local, None):
            h = digests.get(row[0])
            if h is None:
                h = digests[row[0]] = hashlib.sha256()
            vals = list(row[1:])
            blob = vals.pop(len(RESULT_COLUMNS))
            h.update(repr(vals).encode())
            h.update(blob or b"")
        profiles = dict(local.db.execute(
            "SELECT p.run_id, p.json FROM profiles p JOIN runs u ON u.id = p.run_id "
            f"WHERE u.status IN ({', '.join('?' for _ in FINAL_STATES)})",
            FINAL_STATES).fetchall())
        key_of: dict[str, str] = {}
        for r in runs:
            head = json.dumps([ckey[r["campaign_id"]], r["id"],
                               *(r[k] for k in _KEY_FIELDS)], default=repr)
            h = hashlib.sha256(head.encode())
            if r["id"] in digests:
                h.update(digests[r["id"]].digest())
            h.update((profiles.get(r["id"]) or "").encode())
            key_of[r["id"]] = archive_run_id(r["id"], h.hexdigest())
        fps = {}
        for fid in sorted({r["fingerprint_id"] for r in runs if r["fingerprint_id"]}):
            row = local.db.execute("SELECT json FROM fingerprints WHERE id=?",
                                   (fid,)).fetchone()
            if row:
                fps[fid] = row[0]
        return cls(runs, skipped, camps, ckey, key_of, profiles, fps)


def _send_campaigns(cur, batch: _Batch, out: PushSummary) -> dict[int, int]:
    """The runs' campaigns, in (created, key) order, and their fingerprints; returns
    {local campaign id: archive campaign id}."""
    camps, ckey = batch.camps, batch.ckey
    used_camps = sorted({r["campaign_id"] for r in batch.runs},
                        key=lambda cid: (camps[cid]["created"], ckey[cid]))
    for cid in used_camps:
        c = camps[cid]
        cur.execute("INSERT INTO campaigns (key, name, file, spec_json, created) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                    (ckey[cid], c["name"], c["file"], c["spec_json"], c["created"]))
        out.campaigns_new += cur.rowcount
    arch_cid = {}
    if used_camps:
        cur.execute("SELECT key, id FROM campaigns WHERE key = ANY(%s)",
                    ([ckey[c] for c in used_camps],))
        by_key = dict(cur.fetchall())
        arch_cid = {cid: by_key[ckey[cid]] for cid in used_camps}
    for fid, js in batch.fps.items():
        cur.execute("INSERT INTO fingerprints (id, json) VALUES (%s, %s) "
                    "ON CONFLICT (id) DO NOTHING", (fid, js))
        out.fingerprints_new += cur.rowcount
    return arch_cid


def _send_runs(cur, batch: _Batch, arch_cid: dict[int, int], out: PushSummary) -> set[str]:
    """The runs, staged with COPY and inserted in id order; a run already there gets its
    annotations updated. Returns the archive ids of the new ones."""
    cur.execute("CREATE TEMP TABLE push_runs (LIKE runs) ON COMMIT DROP")
    with cur.copy(f"COPY push_runs ({', '.join(RUN_COLUMNS)}) FROM STDIN") as cp:
        for r in batch.runs:
            vals = [r[c] for c in RUN_COLUMNS]
            vals[0] = batch.key_of[r["id"]]
            vals[1] = arch_cid[r["campaign_id"]]
            cp.write_row([_int(v) if c in _INT_RUN else v
                          for c, v in zip(RUN_COLUMNS, vals, strict=True)])
    sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in _ANNOTATIONS)
    olds = ", ".join(f"runs.{c}" for c in _ANNOTATIONS)
    news = ", ".join(f"EXCLUDED.{c}" for c in _ANNOTATIONS)
    # xmax = 0: a row this statement inserted (else one it updated)
    cur.execute("INSERT INTO runs SELECT * FROM push_runs ORDER BY id "
                f"ON CONFLICT (id) DO UPDATE SET {sets} "
                f"WHERE ({olds}) IS DISTINCT FROM ({news}) "
                "RETURNING id, (xmax = 0) AS inserted")
    new = set()
    for rid, inserted in cur.fetchall():
        if inserted:
            new.add(rid)
        else:
            out.runs_updated += 1
    out.runs_new = len(new)
    return new


def _send_results(cur, local: Store, batch: _Batch, local_new: list[str],
                  out: PushSummary) -> None:
    """The results and profiles of the new runs (local ids), under their archive ids."""
    key_of = batch.key_of
    with cur.copy(f"COPY results (run_id, {', '.join(RESULT_COPY)}) FROM STDIN") as cp:
        for row in _local_results(local, local_new):
            vals = [key_of[row[0]]] + [_int(v) if c in _INT_RESULT else v
                                       for c, v in zip(RESULT_COPY, row[1:], strict=True)]
            cp.write_row(vals)
            out.results_new += 1
    for rid in local_new:
        if rid in batch.profiles:
            cur.execute("INSERT INTO profiles (run_id, json) VALUES (%s, %s)",
                        (key_of[rid], batch.profiles[rid]))
            out.profiles_new += 1


def _send_origins(cur, batch: _Batch, origin_id: str) -> None:
    """Which origin pushed each run (every run sent, new or not), in run id order."""
    now = time.time()
    cur.execute("CREATE TEMP TABLE push_origins (LIKE run_origins) ON COMMIT DROP")
    with cur.copy("COPY push_origins (run_id, origin_id, local_id, pushed) "
                  "FROM STDIN") as cp:
        for r in batch.runs:
            cp.write_row((batch.key_of[r["id"]], origin_id, r["id"], now))
    cur.execute("INSERT INTO run_origins SELECT * FROM push_origins "
                "ORDER BY run_id ON CONFLICT DO NOTHING")


def origin_rows(store: Store) -> list[tuple]:
    """(run id, local id, site, user, host, store identity, path, pushed) of every pushed
    run and origin, by run id."""
    return [tuple(r) for r in store.db.execute(
        "SELECT o.run_id, o.local_id, s.site, s.username, s.host, s.store, s.path, o.pushed "
        "FROM run_origins o JOIN origins s ON s.id = o.origin_id ORDER BY o.run_id, s.site")]


def site_campaigns(store: Store, sites: list[str]) -> list[int]:
    """Ids of the campaigns with runs pushed from any of these sites, in id order."""
    return [r[0] for r in store.db.execute(
        "SELECT DISTINCT u.campaign_id FROM runs u JOIN run_origins o ON o.run_id = u.id "
        "JOIN origins s ON s.id = o.origin_id "
        f"WHERE s.site IN ({', '.join('?' for _ in sites)}) ORDER BY 1", list(sites))]


def site_names(store: Store) -> list[str]:
    """The sites that pushed to this archive, sorted."""
    return [r[0] for r in store.db.execute("SELECT DISTINCT site FROM origins ORDER BY site")]


def run_sites(store: Store, run_ids: list[str]) -> dict[str, set[str]]:
    """{archive run id: the sites that pushed it}."""
    out: dict[str, set[str]] = {}
    for i in range(0, len(run_ids), 5000):
        chunk = run_ids[i:i + 5000]
        for rid, site in store.db.execute(
                "SELECT o.run_id, s.site FROM run_origins o JOIN origins s ON "
                f"s.id = o.origin_id WHERE o.run_id IN ({', '.join('?' for _ in chunk)})",
                chunk):
            out.setdefault(rid, set()).add(site)
    return out


