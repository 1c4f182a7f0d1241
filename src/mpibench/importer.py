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
import gzip
import hashlib
import json
import multiprocessing
import os
import re
import signal
import stat
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mpibench.errors import UsageError
from mpibench.parsers.base import ParseResult, stack_lines, stack_name
from mpibench.parsers.detect import MAX_BYTES, TooLarge, parse_bytes, parse_stream
from mpibench.store import RESULT_COLUMNS, Store, bulk
from mpibench.store.queries import campaign_row
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


# Files up to this size are read and parsed whole (in a worker process when there are many);
# larger ones are hashed and parsed in segments while their rows are written (parse_stream).
STREAM_MIN = 4 << 20


def _check(path: Path) -> tuple[int | None, str | None]:
    """(size, None) for a regular file within the cap, else (None, why)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return None, "is a directory; expected a benchmark output file"
    if not stat.S_ISREG(st.st_mode):
        # /dev/zero, a FIFO, a socket: reading them never ends (or blocks)
        return None, "not a regular file (a device, FIFO or socket); expected a benchmark " \
                     "output file"
    if st.st_size > MAX_BYTES:
        return None, f"{st.st_size} bytes: too large for a benchmark output (limit " \
                     f"{MAX_BYTES >> 20} MiB)"
    return st.st_size, None


def _read(path: Path) -> tuple[bytes | None, str | None]:
    size, why = _check(path)
    if size is None:
        return None, why
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)  # bounded even if the file grows meanwhile
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    if len(data) > MAX_BYTES:
        return None, f"grew past {MAX_BYTES >> 20} MiB while read; expected a benchmark output"
    return data, None


def _gzipped(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _hash_file(path: Path) -> tuple[str | None, str | None]:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            total = 0
            while block := fh.read(1 << 20):
                total += len(block)
                if total > MAX_BYTES:
                    return None, f"grew past {MAX_BYTES >> 20} MiB while read"
                h.update(block)
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or exc})"
    return h.hexdigest(), None


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
    check_args(label, line_rate, np)
    bps = parse_line_rate(line_rate) if line_rate is not None else None
    report = ImportReport()
    known = bulk.imported_hashes(store)
    batch = bulk.Batch(store, BATCH_FILES, BATCH_SECONDS)
    try:
        # the WAL checkpointed every ~64 MB of commits: a big import off the disk's fsyncs
        with bulk.checkpoint_every(store, 16384):
            try:
                for loaded in _loaded([Path(p) for p in paths], known, np):
                    report.files.append(_import_one(store, batch, loaded, label, line_rate,
                                                    bps, campaign, np))
            finally:
                batch.commit()
    except bulk.WriteError as exc:  # a full disk, an I/O error under the store
        batch.rollback()
        raise UsageError(f"store {store.path}: cannot write ({exc}); files committed before "
                         "this stay stored (a re-run skips them), the rest was not "
                         "stored") from None
    return report


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
    _die_with_parent()


def _die_with_parent() -> None:
    """A parser process whose importer is SIGKILLed must not wait forever for work that
    never comes: the kernel kills it with its parent (Linux PR_SET_PDEATHSIG); elsewhere a
    thread watches for the parent to go."""
    parent = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0:  # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)
            return
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def check_args(label: str | None, line_rate: str | float | None, np: int | None) -> None:
    """The import's flags, checked before the store is opened (a bad one used to leave an
    empty store behind)."""
    if line_rate is not None:
        parse_line_rate(line_rate)
    if label is not None and not label.strip():
        raise UsageError("--label '': expected a non-empty name for these files")
    if np is not None and (not isinstance(np, int) or isinstance(np, bool) or np < 1):
        raise UsageError(f"--np {np!r}: expected a positive number of ranks")


def check_files(paths: list[str | Path]) -> None:
    """Refuse (UsageError) when no file can even be opened, before the store exists."""
    problems = []
    for p in paths:
        size, why = _check(Path(p))
        if size is not None:
            return
        problems.append(f"{p}: {why}")
    if problems:
        more = f" (and {len(problems) - 1} more file(s) like it)" if len(problems) > 1 else ""
        raise UsageError(problems[0] + more)


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
    stream: bool = False                       # too big to hold: parse while writing


# Store.add_results encodes `extra` with json.dumps(extra, default=str); one encoder object
# gives the same text without building an encoder per row.
_EXTRA_JSON = json.JSONEncoder(default=str).encode
_ROW_KEYS = frozenset(RESULT_COLUMNS) | {"extra"}


def _load(path: Path, known: set[str], np_hint: int | None) -> _Loaded:
    """Read, hash and (unless already imported) parse one file, and lay out its rows for
    the results table; touches no store. A big file is only hashed: it is parsed while its
    rows are written (_import_streamed), so memory stays bounded."""
    size, why = _check(path)
    if size is None:
        return _Loaded(path, why=why)
    if size > STREAM_MIN or _gzipped(path):
        # gzip inflates up to MAX_BYTES: never hold that whole either
        sha, why = _hash_file(path)
        if sha is None:
            return _Loaded(path, why=why)
        return _Loaded(path, sha=sha, stream=sha not in known)
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
    loaded.libs = stack_lines(data[:200_000].decode("utf-8", errors="replace"))
    nps: set[int] = set()
    benchmarks: dict[str, None] = {}
    _layout(loaded, records, f"imp-{sha[:16]}", np_hint, nps, benchmarks)
    loaded.nps, loaded.benchmarks = sorted(nps), list(benchmarks)
    return loaded


def _layout(loaded: _Loaded, records: list[dict[str, Any]], run_id: str,
            np_hint: int | None, nps: set[int], benchmarks: dict[str, None]) -> None:
    """Rows of `records` for the results table into loaded.columns/rows (replacing them),
    counts added to loaded's and to nps/benchmarks; loaded.bad_rows says why not."""
    if np_hint is not None:
        for r in records:
            if r.get("np") is None:
                r["np"] = np_hint
                r.setdefault("extra", {})["np_from"] = "--np"
    nps.update(r["np"] for r in records if r.get("np") is not None)
    loaded.np_unknown += sum(1 for r in records if r.get("np") is None)
    loaded.failed_rows += sum(1 for r in records if r.get("status", "ok") != "ok")
    benchmarks.update(dict.fromkeys(r["benchmark"] for r in records))
    keys: set[str] = set()
    for r in records:
        keys.update(r)
    unknown = keys - _ROW_KEYS
    if unknown:
        loaded.bad_rows = f"unknown result field(s) {sorted(unknown)}"
        loaded.columns, loaded.rows = (), []
        return
    # Only the columns the rows use: the others keep the schema's defaults. Binding ~30
    # mostly-NULL columns per row doubled SQLite's time per imported row.
    cols = tuple(c for c in RESULT_COLUMNS if c in keys)
    loaded.columns = ("run_id", *cols, "extra_json")
    loaded.rows = [(run_id, *[r.get(c) for c in cols],
                    _EXTRA_JSON(r["extra"]) if r.get("extra") else None) for r in records]


def _import_one(store: Store, batch: bulk.Batch, loaded: _Loaded, label: str | None,
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
    if loaded.stream:
        return _import_streamed(store, batch, fr, path, label, line_rate, bps, campaign,
                                np_hint)
    if loaded.parsed is None:
        # known when the import started but no longer in the store: parse it after all
        loaded = _load(path, set(), np_hint)
        if loaded.stream:
            return _import_streamed(store, batch, fr, path, label, line_rate, bps, campaign,
                                    np_hint)
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
    spec = _run_spec(parsed, path, sha, fr.problems, bps, line_rate)
    now = time.time()
    try:
        with batch.file():
            created = _write(store, campaign, parsed, libs, nps, run_id, variant, spec, label,
                             path, loaded, sha, now, ended)
    except (ValueError, bulk.IntegrityError) as exc:
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


def _run_spec(parsed: ParseResult, path: Path, sha: str, problems: list[str],
              bps: float | None, line_rate: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "import": {"path": str(path.resolve()), "sha256": sha, "format": parsed.format,
                   "tool": parsed.tool, "tool_version": parsed.version,
                   "blocks": parsed.blocks, "truncated": parsed.truncated,
                   "truncated_at": parsed.truncated_at, "problems": problems[:50],
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
    return spec


# Problems kept per file for the report (a broken 8-million-line file has millions).
MAX_PROBLEMS = 1000


class _Abandon(Exception):
    """A streamed file turned out not storable: roll its savepoint back."""


class _RunExists(_Abandon):
    """The file's run id is already in the store: the file is skipped, not failed."""


def _open_stream(path: Path):
    fh = open(path, "rb")
    if fh.read(2) == b"\x1f\x8b":
        fh.seek(0)
        return gzip.GzipFile(fileobj=fh, mode="rb")
    fh.seek(0)
    return fh


def _import_streamed(store: Store, batch: bulk.Batch, fr: FileReport, path: Path,
                     label: str | None, line_rate: Any, bps: float | None, campaign: str,
                     np_hint: int | None) -> FileReport:
    """A big file, parsed segment by segment (parse_stream) while its rows are written, in
    one savepoint: memory is bounded by a segment, and the file is still stored completely
    or not at all."""
    sha = fr.sha256 or ""
    run_id = f"imp-{sha[:16]}"
    acc = _Loaded(path, sha=sha)
    nps: set[int] = set()
    benchmarks: dict[str, None] = {}
    problems: list[str] = []
    dropped = 0
    first: ParseResult | None = None
    last: ParseResult | None = None
    blocks = 0
    rows = 0
    created = False
    libs: list[str] = []
    try:
        with _open_stream(path) as fh, batch.file():
            for seg in parse_stream(fh):
                if first is None:
                    first = seg
                    fr.format, fr.tool, fr.version = seg.format, seg.tool, seg.version
                if last is None or not last.truncated or seg.truncated:
                    last = seg  # the segment that says how the file ended (or was cut)
                blocks += seg.blocks
                lines = seg.problem_lines(str(path))
                room = MAX_PROBLEMS - len(problems)
                problems += lines[:max(room, 0)]
                dropped += max(len(lines) - max(room, 0), 0)
                if not seg.records:
                    continue
                if not created:
                    with _open_stream(path) as head:
                        libs = stack_lines(head.read(200_000).decode("utf-8", "replace"))
                    variant = label or variant_name(first, path, stack_name(libs))
                    row = campaign_row(store, campaign, None)
                    cid = store.add_campaign(campaign,
                                             spec=json.loads(row["spec_json"]) if row else None)
                    if not store.create_run(run_id, cid, variant, grp=first.format or "",
                                            params={}, label=label, source="import", seq=0):
                        raise _RunExists(f"run {run_id} already exists")
                    created = True
                    fr.variant = variant
                _layout(acc, seg.records, run_id, np_hint, nps, benchmarks)
                seg.records = []
                if acc.bad_rows:
                    raise _Abandon(f"not stored ({acc.bad_rows}); nothing of this file was "
                                   "written")
                bulk.insert_results(store, acc.columns, acc.rows)
                rows += len(acc.rows)
                acc.rows = []
            if dropped:
                problems.append(f"{path}: {dropped} more problem(s) not listed")
            fr.problems = problems
            fr.blocks = blocks
            if not created or first is None or last is None:
                raise _Abandon("no result rows found" if not problems else "")
            fr.truncated = last.truncated
            whole = ParseResult(format=first.format, tool=first.tool, version=first.version,
                                blocks=blocks, truncated=last.truncated,
                                truncated_at=last.truncated_at, meta=first.meta)
            if acc.np_unknown:
                problems.append(f"{path}: the file does not state the number of ranks for "
                                f"{acc.np_unknown} rows (np stored as unknown; pass --np N)")
            spec = _run_spec(whole, path, sha, problems, bps, line_rate)
            spec["import"]["streamed"] = True
            fid = store.add_fingerprint(fingerprint(whole, libs, sorted(nps)))
            when = file_time(first.meta)
            now = time.time()
            ended = problems[-1] if last.truncated and problems else ""
            store.set_run(run_id, "done", fingerprint_id=fid, spec_json=spec,
                          started=when or now, finished=when or now,
                          reason=f"truncated: {ended}" if last.truncated else None)
            store.record_import(sha, str(path.resolve()), first.tool, first.version, run_id)
    except _Abandon as exc:
        if str(exc):
            fr.problems.append(f"{path}: {exc}")
        if isinstance(exc, _RunExists):
            fr.status, fr.run_id, fr.note = "skipped", run_id, f"run {run_id} already exists"
        return fr
    except TooLarge as exc:
        fr.problems.append(f"{path}: {exc}; nothing of this file was written")
        return fr
    except (OSError, EOFError, zlib.error) as exc:
        fr.problems.append(f"{path}: cannot read ({exc}); nothing of this file was written")
        return fr
    except (ValueError, bulk.IntegrityError) as exc:
        fr.problems.append(f"{path}: not stored ({exc}); nothing of this file was written")
        return fr
    fr.status = "imported"
    fr.run_id, fr.np = run_id, sorted(nps)
    fr.rows = rows
    fr.failed_rows = acc.failed_rows
    fr.benchmarks = list(benchmarks)
    return fr


def _relabel(store: Store, batch: bulk.Batch, run_id: str, label: str | None, line_rate: Any,
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
            bulk.relabel_run(store, run_id, label)
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
    row = campaign_row(store, campaign, None)
    cid = store.add_campaign(campaign, spec=json.loads(row["spec_json"]) if row else None)
    fid = store.add_fingerprint(fingerprint(parsed, libs, nps))
    created = store.create_run(
        run_id, cid, variant, grp=parsed.format or "", params={}, spec=spec,
        label=label, source="import",
        fingerprint_id=fid, transport_requested=None, seq=0)
    if not created:
        return False
    # Store.add_results' columns, laid out by _load (a thin adapter: see _Loaded.columns)
    cols = loaded.columns
    bulk.insert_results(store, cols, loaded.rows)
    when = file_time(parsed.meta)
    store.set_run(run_id, "done", started=when or now, finished=when or now,
                  reason=f"truncated: {ended}" if parsed.truncated else None)
    store.record_import(sha, str(path.resolve()), parsed.tool, parsed.version, run_id)
    return True
