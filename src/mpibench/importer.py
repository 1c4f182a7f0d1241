"""Import outputs of other tools (IMB, OSU, nccl-tests, NetPIPE) into the results store.

One file -> one run in the campaign "imports", id "imp-<sha256[:16]>", source "import",
status "done", with a fingerprint of what the file says produced it (tool, version, np,
MPI library lines, command line, machine) and the file's path, hash, format and problems in
the run's spec. Everything for one file is written in one transaction; a file whose sha256
is already in the store's imports table is skipped, so importing twice never duplicates.

Imported rows are the tool's summary per size (statistic as the file has it, usually a
mean), never samples: n stays None and reports show them without confidence intervals.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import multiprocessing
import os
import re
import sqlite3
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mpibench.errors import UsageError
from mpibench.parsers.base import ParseResult, stack_lines, stack_name
from mpibench.parsers.detect import MAX_BYTES, parse_bytes
from mpibench.store import RESULT_COLUMNS, Store
from mpibench.units import parse_line_rate  # one parser: import, compare, campaigns

CAMPAIGN = "imports"

@dataclass
class FileReport:
    path: str
    status: str = "failed"                # imported | skipped | failed
    sha256: str | None = None
    format: str | None = None
    tool: str | None = None
    version: str | None = None
    blocks: int = 0
    rows: int = 0                         # rows stored (ok and failure rows)
    failed_rows: int = 0                  # rows whose status is not "ok"
    truncated: bool = False
    run_id: str | None = None
    variant: str | None = None
    np: list[int] = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ImportReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def imported(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "imported"]

    @property
    def exit_code(self) -> int:
        """2 when nothing could be imported (already-imported files count as fine)."""
        return 0 if any(f.status in ("imported", "skipped") for f in self.files) else 2

    def to_dict(self) -> dict[str, Any]:
        return {"files": [f.to_dict() for f in self.files],
                "imported": len(self.imported),
                "skipped": sum(1 for f in self.files if f.status == "skipped"),
                "failed": sum(1 for f in self.files if f.status == "failed"),
                "rows": sum(f.rows for f in self.imported),
                "exit_code": self.exit_code}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-") or "file"


def variant_name(parsed: ParseResult, path: Path, stack: str | None) -> str:
    tool = (parsed.format or "import").split("-")[0]
    parts = [tool] + ([stack] if stack else []) + [_slug(path.name.split(".")[0]
                                                         if path.suffix in (".gz",)
                                                         else path.stem)]
    return ":".join(parts)


def fingerprint(parsed: ParseResult, libs: list[str], nps: list[int]) -> dict[str, Any]:
    """What produced the results, as far as the file says. Per-file facts (name, hash, date)
    stay out so repeats of one set-up share a fingerprint and may be pooled."""
    fp: dict[str, Any] = {"source": "import", "tool": parsed.tool,
                          "tool_version": parsed.version, "format": parsed.format,
                          "np": nps}
    if libs:
        fp["mpi_library"] = libs
    keep = ("part", "mpi_version", "argv", "machine", "system", "release", "program",
            "benchmark", "datatype", "pairs", "window_size", "nccl_library", "hosts", "gpus",
            "env", "nthread", "ngpus", "form", "accelerator")
    for k in keep:
        if parsed.meta.get(k) not in (None, "", []):
            fp[k] = parsed.meta[k]
    if "release" in fp:
        fp["kernel"] = fp.pop("release")
    return fp


def file_time(meta: dict[str, Any]) -> float | None:
    """When the run happened, if the file says: IMB '# Date' (asctime), nccl-tests JSON
    start_time. The files carry no time zone; the time is read as UTC."""
    for key, fmt in (("date", "%a %b %d %H:%M:%S %Y"), ("start_time", "%Y-%m-%d %H:%M:%S")):
        text = meta.get(key)
        if isinstance(text, str):
            try:
                return float(calendar.timegm(time.strptime(" ".join(text.split()), fmt)))
            except ValueError:
                continue
    return None


def _read(path: Path) -> tuple[bytes | None, str | None]:
    try:
        if path.is_dir():
            return None, "is a directory; expected a benchmark output file"
        size = path.stat().st_size
        if size > MAX_BYTES:
            return None, f"{size} bytes: too large for a benchmark output (limit " \
                         f"{MAX_BYTES >> 20} MiB)"
        return path.read_bytes(), None
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"


# A big import commits several files per SQLite transaction (each file in its own SAVEPOINT,
# so a file is stored completely or not at all): every COMMIT writes the WAL, ~5 ms on this
# class of machine, as much as parsing a full IMB-MPI1 file. A batch ends after this many
# files or seconds, which also bounds how long the import holds the store's write lock.
BATCH_FILES = 64
BATCH_SECONDS = 0.5


def import_files(store: Store, paths: list[str | Path], label: str | None = None,
                 line_rate: str | float | None = None, np: int | None = None,
                 campaign: str = CAMPAIGN) -> ImportReport:
    """Import each file; never raises for bad file content (each problem is reported as
    '<file>:<line>: <what was expected>'). A bad --line-rate raises UsageError before any
    write. `np` fills in the rank count for rows whose file does not state it (OSU
    collectives, NetPIPE). Each file is stored completely or not at all; if the import is
    interrupted, the files finished before the interruption are kept and a re-run imports
    the rest (the ones already stored are skipped by their sha256)."""
    bps = parse_line_rate(line_rate) if line_rate is not None else None
    if label is not None and not label.strip():
        raise UsageError("--label '': expected a non-empty name for these files")
    if np is not None and (not isinstance(np, int) or isinstance(np, bool) or np < 1):
        raise UsageError(f"--np {np!r}: expected a positive number of ranks")
    report = ImportReport()
    known = {row[0] for row in store.db.execute("SELECT sha256 FROM imports")}
    # Checkpointing the WAL (the fsyncs) every ~64 MB of commits instead of SQLite's default
    # 1000 pages keeps a big import off the disk's critical path. Restored afterwards.
    saved = store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    store.db.execute("PRAGMA wal_autocheckpoint=16384")
    batch = _Batch(store.db)
    try:
        for loaded in _loaded([Path(p) for p in paths], known, np):
            report.files.append(_import_one(store, batch, loaded, label, line_rate, bps,
                                            campaign, np))
    finally:
        try:
            batch.commit()
        finally:
            store.db.execute(f"PRAGMA wal_autocheckpoint={int(saved)}")
    return report


class _Batch:
    """Several files per transaction, one SAVEPOINT per file (see BATCH_FILES)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.files = 0
        self.since = 0.0

    @contextmanager
    def file(self) -> Iterator[None]:
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.files, self.since = 0, time.monotonic()
        self.db.execute("SAVEPOINT import_file")
        try:
            yield
        except BaseException:
            if self.db.in_transaction:   # some errors make SQLite roll everything back itself
                self.db.execute("ROLLBACK TO import_file")
                self.db.execute("RELEASE import_file")
            raise
        self.db.execute("RELEASE import_file")
        self.files += 1
        if self.files >= BATCH_FILES or time.monotonic() - self.since >= BATCH_SECONDS:
            self.commit()

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")


# From this many files on, a second process reads and parses the next files while this one
# stores the current ones (SQLite ~45% of a big import's CPU, parsing and laying out rows
# the rest). A thread cannot do that: sqlite3 releases and retakes the GIL for every row.
PROCESS_MIN_FILES = 16
_LOOKAHEAD = 4


def _loaded(paths: list[Path], known: set[str], np_hint: int | None) -> Iterator[_Loaded]:
    """Files read, hashed and parsed, in order; touches no store."""
    pool = None
    if len(paths) >= PROCESS_MIN_FILES and (os.cpu_count() or 1) > 1 \
            and "fork" in multiprocessing.get_all_start_methods():
        try:
            # fork: the worker inherits `known` instead of receiving it with every file
            pool = ProcessPoolExecutor(max_workers=1, initializer=_worker_init,
                                       initargs=(known,),
                                       mp_context=multiprocessing.get_context("fork"))
        except OSError:
            pool = None
    if pool is None:
        for p in paths:
            yield _load(p, known, np_hint)
        return
    todo = iter(paths)
    with pool:
        # the worker can die (e.g. out of memory) while a result is awaited or between two
        # submissions: from then on every file not yet returned is read in this process
        ahead: deque = deque((p, _submit(pool, p, np_hint)) for p in islice(todo, _LOOKAHEAD))
        while ahead:
            path, fut = ahead.popleft()
            loaded = None
            if fut is not None:
                try:
                    loaded = fut.result()
                except BrokenProcessPool:
                    pass
            if loaded is None:
                yield _load(path, known, np_hint)
                for p, _ in ahead:
                    yield _load(p, known, np_hint)
                for p in todo:
                    yield _load(p, known, np_hint)
                return
            nxt = next(todo, None)
            if nxt is not None:
                ahead.append((nxt, _submit(pool, nxt, np_hint)))
            yield loaded


def _submit(pool: ProcessPoolExecutor, path: Path, np_hint: int | None):
    """The future of `path` parsed by the worker, or None when the pool is already broken."""
    try:
        return pool.submit(_load_in_worker, path, np_hint)
    except BrokenProcessPool:
        return None


_WORKER_KNOWN: set[str] = set()


def _worker_init(known: set[str]) -> None:
    global _WORKER_KNOWN
    _WORKER_KNOWN = known


def _load_in_worker(path: Path, np_hint: int | None) -> _Loaded:
    return _load(path, _WORKER_KNOWN, np_hint)


@dataclass
class _Loaded:
    """One file, read and parsed, in a form that is cheap to send between processes: the
    rows laid out for the results table and a summary, not the parser's record dicts."""
    path: Path
    why: str | None = None                     # why it could not be read
    sha: str | None = None
    parsed: ParseResult | None = None          # None when its sha256 is already imported
    columns: tuple[str, ...] = ()              # results columns of `rows`
    rows: list[tuple] = field(default_factory=list)
    bad_rows: str | None = None                # why the records cannot be stored
    libs: list[str] = field(default_factory=list)
    nps: list[int] = field(default_factory=list)
    np_unknown: int = 0                        # rows whose np the file does not state
    failed_rows: int = 0
    benchmarks: list[str] = field(default_factory=list)


# Store.add_results encodes `extra` with json.dumps(extra, default=str); one encoder object
# gives the same text without building an encoder per row.
_EXTRA_JSON = json.JSONEncoder(default=str).encode
_ROW_KEYS = frozenset(RESULT_COLUMNS) | {"extra"}


def _load(path: Path, known: set[str], np_hint: int | None) -> _Loaded:
    """Read, hash and (unless already imported) parse one file, and lay out its rows for
    the results table; touches no store."""
    data, why = _read(path)
    if data is None:
        return _Loaded(path, why=why)
    sha = hashlib.sha256(data).hexdigest()
    if sha in known:
        return _Loaded(path, sha=sha)
    try:
        parsed = parse_bytes(data)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        parsed = ParseResult()
        parsed.problem(None, f"internal parser error (please report with this file): {exc!r}")
    loaded = _Loaded(path, sha=sha, parsed=parsed)
    records = parsed.records
    parsed.records = []
    if not records:
        return loaded
    if np_hint is not None:
        for r in records:
            if r.get("np") is None:
                r["np"] = np_hint
                r.setdefault("extra", {})["np_from"] = "--np"
    loaded.libs = stack_lines(data[:200_000].decode("utf-8", errors="replace"))
    loaded.nps = sorted({r["np"] for r in records if r.get("np") is not None})
    loaded.np_unknown = sum(1 for r in records if r.get("np") is None)
    loaded.failed_rows = sum(1 for r in records if r.get("status", "ok") != "ok")
    loaded.benchmarks = list(dict.fromkeys(r["benchmark"] for r in records))
    keys: set[str] = set()
    for r in records:
        keys.update(r)
    unknown = keys - _ROW_KEYS
    if unknown:
        loaded.bad_rows = f"unknown result field(s) {sorted(unknown)}"
        return loaded
    # Only the columns the rows use: the others keep the schema's defaults. Binding ~30
    # mostly-NULL columns per row doubled SQLite's time per imported row.
    cols = tuple(c for c in RESULT_COLUMNS if c in keys)
    run_id = f"imp-{sha[:16]}"
    loaded.columns = ("run_id", *cols, "extra_json")
    loaded.rows = [(run_id, *[r.get(c) for c in cols],
                    _EXTRA_JSON(r["extra"]) if r.get("extra") else None) for r in records]
    return loaded


def _import_one(store: Store, batch: _Batch, loaded: _Loaded, label: str | None,
                line_rate: Any, bps: float | None, campaign: str,
                np_hint: int | None) -> FileReport:
    path = loaded.path
    fr = FileReport(path=str(path))
    if loaded.sha is None:
        fr.problems.append(f"{path}: {loaded.why}")
        return fr
    sha = loaded.sha
    fr.sha256 = sha
    prior = store.find_import(sha)
    if prior is not None:
        fr.status = "skipped"
        fr.run_id = prior["run_id"]
        fr.tool, fr.version = prior["tool"], prior["tool_version"]
        fr.note = f"already imported (same sha256) from {prior['path']} as run {prior['run_id']}"
        changed = _relabel(store, batch, prior["run_id"], label, line_rate, bps)
        if changed:
            fr.note += "; " + ", ".join(changed)
        return fr
    if loaded.parsed is None:
        # known when the import started but no longer in the store: parse it after all
        loaded = _load(path, set(), np_hint)
        if loaded.parsed is None:
            fr.problems.append(f"{path}: {loaded.why}")
            return fr

    parsed = loaded.parsed
    fr.format, fr.tool, fr.version = parsed.format, parsed.tool, parsed.version
    fr.blocks, fr.truncated = parsed.blocks, parsed.truncated
    fr.problems = parsed.problem_lines(str(path))
    # the parser reports where a truncated file ended last
    ended = fr.problems[-1] if parsed.truncated and fr.problems else ""
    if not loaded.benchmarks:
        if not fr.problems:
            fr.problems.append(f"{path}: no result rows found")
        return fr
    if loaded.bad_rows:
        fr.problems.append(f"{path}: not stored ({loaded.bad_rows}); nothing of this file "
                           "was written")
        return fr

    nps = loaded.nps
    if loaded.np_unknown:
        fr.problems.append(f"{path}: the file does not state the number of ranks for "
                           f"{loaded.np_unknown} rows (np stored as unknown; pass --np N)")
    libs = loaded.libs
    stack = stack_name(libs)
    variant = label or variant_name(parsed, path, stack)
    run_id = f"imp-{sha[:16]}"
    spec: dict[str, Any] = {
        "import": {"path": str(path.resolve()), "sha256": sha, "format": parsed.format,
                   "tool": parsed.tool, "tool_version": parsed.version,
                   "blocks": parsed.blocks, "truncated": parsed.truncated,
                   "truncated_at": parsed.truncated_at, "problems": fr.problems[:50],
                   "imported_at": time.time(),
                   "started_from": "file (read as UTC)" if file_time(parsed.meta)
                   else "import time",
                   "statistic_note": "per-size summaries as printed by the tool; "
                                     "no samples, no confidence intervals"},
        "meta": {k: v for k, v in parsed.meta.items() if k not in ("env",)},
    }
    if bps is not None:
        spec["line_rate_bps"] = bps
        spec["line_rate"] = str(line_rate)
    now = time.time()
    try:
        with batch.file():
            created = _write(store, campaign, parsed, libs, nps, run_id, variant, spec, label,
                             path, loaded, sha, now, ended)
    except (ValueError, sqlite3.IntegrityError) as exc:
        fr.problems.append(f"{path}: not stored ({exc}); nothing of this file was written")
        return fr
    if not created:
        # same bytes imported before without an imports row (e.g. an older mpibench)
        fr.status = "skipped"
        fr.run_id = run_id
        fr.note = f"run {run_id} already exists"
        return fr
    fr.status = "imported"
    fr.run_id, fr.variant, fr.np = run_id, variant, nps
    fr.rows = len(loaded.rows)
    fr.failed_rows = loaded.failed_rows
    fr.benchmarks = loaded.benchmarks
    return fr


def _relabel(store: Store, batch: _Batch, run_id: str, label: str | None, line_rate: Any,
             bps: float | None) -> list[str]:
    """A re-import with --label or --line-rate updates the stored run instead of being
    ignored (the way to add a forgotten line rate or to rename a set); nothing else of the
    run changes."""
    run = store.run(run_id)
    if run is None or (label is None and bps is None):
        return []
    spec = json.loads(run["spec_json"] or "{}")
    changed = []
    with batch.file():
        if label is not None and (run["label"] != label or run["variant"] != label):
            store.db.execute("UPDATE runs SET label=?, variant=? WHERE id=?",
                             (label, label, run_id))
            changed.append(f"label changed from {run['label'] or run['variant']!r} to "
                           f"{label!r}")
        if bps is not None and spec.get("line_rate_bps") != bps:
            before = spec.get("line_rate")
            spec["line_rate_bps"], spec["line_rate"] = bps, str(line_rate)
            store.set_run(run_id, spec_json=spec)
            changed.append(f"line rate changed from {before!r} to {str(line_rate)!r}" if before
                           else f"line rate set to {str(line_rate)!r}")
    return changed


def _write(store: Store, campaign: str, parsed: ParseResult, libs: list[str], nps: list[int],
           run_id: str, variant: str, spec: dict[str, Any], label: str | None, path: Path,
           loaded: _Loaded, sha: str, now: float, ended: str) -> bool:
    """All writes for one file (the caller holds its savepoint); False if the run exists."""
    # add_campaign refreshes the spec: pass the existing one so nothing set there is lost
    row = store.db.execute("SELECT spec_json FROM campaigns WHERE name=? AND file IS NULL",
                           (campaign,)).fetchone()
    cid = store.add_campaign(campaign, spec=json.loads(row[0]) if row else None)
    fid = store.add_fingerprint(fingerprint(parsed, libs, nps))
    created = store.create_run(
        run_id, cid, variant, grp=parsed.format or "", params={}, spec=spec,
        label=label, source="import",
        fingerprint_id=fid, transport_requested=None, seq=0)
    if not created:
        return False
    # Store.add_results' columns, laid out by _load (a thin adapter: see _Loaded.columns)
    cols = loaded.columns
    store.db.executemany(f"INSERT INTO results ({', '.join(cols)}) "
                         f"VALUES ({', '.join('?' for _ in cols)})", loaded.rows)
    when = file_time(parsed.meta)
    store.set_run(run_id, "done", started=when or now, finished=when or now,
                  reason=f"truncated: {ended}" if parsed.truncated else None)
    store.record_import(sha, str(path.resolve()), parsed.tool, parsed.version, run_id)
    return True
