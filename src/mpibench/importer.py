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
import io
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
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mpibench.errors import UsageError
from mpibench.parsers.base import ParseResult, stack_lines, stack_name
from mpibench.parsers.detect import MAX_BYTES, TooLarge, parse_stream
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
class _Part:
    """One segment of a file as parse_stream cut it, its rows laid out for the results
    table. A whole file is a stream too: one part (a few for OSU output past a segment),
    stored by the same code as a big file's parts (_write_parts)."""
    seg: ParseResult                           # its records moved into `rows`
    columns: tuple[str, ...] = ()              # results columns of `rows`
    rows: list[tuple] = field(default_factory=list)


@dataclass
class _Loaded:
    """One file: read and parsed when it is small (in a worker process when there are many),
    in a form that is cheap to send between processes (rows laid out, not the parser's
    record dicts); only hashed when it is big. The counts are over the parts laid out so
    far (a streamed file's grow while it is written)."""
    path: Path
    why: str | None = None                     # why it could not be read
    sha: str | None = None
    parts: list[_Part] | None = None           # None: not parsed (already imported, or big)
    bad_rows: str | None = None                # why the records cannot be stored
    libs: list[str] = field(default_factory=list)
    nps: set[int] = field(default_factory=set)
    np_unknown: int = 0                        # rows whose np the file does not state
    failed_rows: int = 0
    benchmarks: dict[str, None] = field(default_factory=dict)
    stream: bool = False                       # too big to hold: parse while writing


class _Head:
    """A binary stream as parse_stream reads it (line by line), keeping its first bytes:
    the MPI library lines pasted on top of an output are read from the bytes the parser
    read, for a whole file and a streamed one alike (decompressed when gzipped)."""

    KEEP = 200_000

    def __init__(self, fh):
        self.fh = fh
        self.head = bytearray()

    def __iter__(self) -> Iterator[bytes]:
        for line in self.fh:
            if len(self.head) < self.KEEP:
                self.head += line[:self.KEEP - len(self.head)]
            yield line

    def libs(self) -> list[str]:
        return stack_lines(bytes(self.head).decode("utf-8", errors="replace"))


def _parts(fh: _Head, acc: _Loaded, run_id: str, np_hint: int | None) -> Iterator[_Part]:
    """The parts of a stream, laid out for the results table; counts go into `acc` (and
    acc.bad_rows, after which no more rows are laid out)."""
    for seg in parse_stream(fh):
        records, seg.records = seg.records, []
        part = _Part(seg)
        if records and acc.bad_rows is None:
            part.columns, part.rows = _layout(acc, records, run_id, np_hint)
        del records      # the record dicts go before the part is written, not a segment later
        yield part


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
    loaded = _Loaded(path, sha=sha)
    head = _Head(io.BytesIO(data))
    try:
        loaded.parts = list(_parts(head, loaded, f"imp-{sha[:16]}", np_hint))
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        parsed = ParseResult()
        parsed.problem(None, f"internal parser error (please report with this file): {exc!r}")
        return _Loaded(path, sha=sha, parts=[_Part(parsed)])
    if loaded.benchmarks:
        loaded.libs = head.libs()
    return loaded


def _layout(acc: _Loaded, records: list[dict[str, Any]], run_id: str,
            np_hint: int | None) -> tuple[tuple[str, ...], list[tuple]]:
    """(columns, rows) of `records` for the results table, their counts added to acc's;
    ((), []) with acc.bad_rows saying why when they cannot be stored."""
    if np_hint is not None:
        for r in records:
            if r.get("np") is None:
                r["np"] = np_hint
                r.setdefault("extra", {})["np_from"] = "--np"
    acc.nps.update(r["np"] for r in records if r.get("np") is not None)
    acc.np_unknown += sum(1 for r in records if r.get("np") is None)
    acc.failed_rows += sum(1 for r in records if r.get("status", "ok") != "ok")
    acc.benchmarks.update(dict.fromkeys(r["benchmark"] for r in records))
    keys: set[str] = set()
    for r in records:
        keys.update(r)
    unknown = keys - _ROW_KEYS
    if unknown:
        acc.bad_rows = f"unknown result field(s) {sorted(unknown)}"
        return (), []
    # Only the columns the rows use: the others keep the schema's defaults. Binding ~30
    # mostly-NULL columns per row doubled SQLite's time per imported row.
    cols = tuple(c for c in RESULT_COLUMNS if c in keys)
    return (("run_id", *cols, "extra_json"),
            [(run_id, *[r.get(c) for c in cols],
              _EXTRA_JSON(r["extra"]) if r.get("extra") else None) for r in records])


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
    if loaded.parts is None and not loaded.stream:
        # known when the import started but no longer in the store: parse it after all
        loaded = _load(path, set(), np_hint)
        if loaded.sha is None:
            fr.problems.append(f"{path}: {loaded.why}")
            return fr
    if loaded.stream:
        return _import_streamed(store, batch, fr, loaded, label, line_rate, bps, campaign,
                                np_hint)
    return _write_parts(store, batch, fr, loaded, loaded.parts or [], lambda: loaded.libs,
                        label, line_rate, bps, campaign)


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
    """A file turned out not storable: roll its savepoint back; `why` (if any) is reported."""

    def __init__(self, why: str = ""):
        super().__init__(why)
        self.why = why


class _RunExists(_Abandon):
    """The file's run id is taken (the same bytes imported before without an imports row,
    e.g. by an older mpibench): the file is skipped, not failed."""


def _open_stream(path: Path):
    fh = open(path, "rb")
    if fh.read(2) == b"\x1f\x8b":
        fh.seek(0)
        return gzip.GzipFile(fileobj=fh, mode="rb")
    fh.seek(0)
    return fh


def _import_streamed(store: Store, batch: bulk.Batch, fr: FileReport, loaded: _Loaded,
                     label: str | None, line_rate: Any, bps: float | None, campaign: str,
                     np_hint: int | None) -> FileReport:
    """A big (or gzipped) file, parsed segment by segment while its rows are written:
    memory is bounded by a segment."""
    path = loaded.path
    try:
        with _open_stream(path) as fh:
            head = _Head(fh)
            parts = _parts(head, loaded, f"imp-{(loaded.sha or '')[:16]}", np_hint)
            return _write_parts(store, batch, fr, loaded, parts, head.libs, label,
                                line_rate, bps, campaign, streamed=True)
    except TooLarge as exc:
        fr.problems.append(f"{path}: {exc}; nothing of this file was written")
    except (OSError, EOFError, zlib.error) as exc:
        fr.problems.append(f"{path}: cannot read ({exc}); nothing of this file was written")
    return fr


@dataclass
class _Seen:
    """What the parts of one file said, gathered while its rows are written."""
    problems: list[str]
    dropped: int = 0                  # problems past MAX_PROBLEMS
    first: ParseResult | None = None  # the part with the file's format, tool, version, meta
    last: ParseResult | None = None   # the part that says how the file ended (or was cut)
    ended: str = ""                   # the problem saying where a truncated file ended
    rows: int = 0
    libs: list[str] = field(default_factory=list)
    created: bool = False

    def add(self, seg: ParseResult, fr: FileReport) -> None:
        if self.first is None:
            self.first = seg
            fr.format, fr.tool, fr.version = seg.format, seg.tool, seg.version
        lines = seg.problem_lines(fr.path)
        if self.last is None or not self.last.truncated or seg.truncated:
            self.last = seg
            if seg.truncated:
                self.ended = lines[-1] if lines else ""
        fr.blocks += seg.blocks
        room = max(MAX_PROBLEMS - len(self.problems), 0)
        self.problems += lines[:room]
        self.dropped += max(len(lines) - room, 0)


def _write_parts(store: Store, batch: bulk.Batch, fr: FileReport, loaded: _Loaded,
                 parts: Iterable[_Part], libs_of: Callable[[], list[str]],
                 label: str | None, line_rate: Any, bps: float | None, campaign: str,
                 streamed: bool = False) -> FileReport:
    """Every write for one file, whole or streamed, in one savepoint: the file is stored
    completely or not at all. `parts` may be laid out while this writes them (a streamed
    file: loaded's counts grow meanwhile); `libs_of` gives the MPI library lines once the
    first rows are there."""
    path = loaded.path
    run_id = f"imp-{(loaded.sha or '')[:16]}"
    seen = _Seen(problems=[])
    fr.problems = seen.problems
    try:
        with batch.file():
            for part in parts:
                seen.add(part.seg, fr)
                if loaded.bad_rows:
                    raise _Abandon(f"not stored ({loaded.bad_rows}); nothing of this file "
                                   "was written")
                if not part.rows:
                    continue
                if not seen.created:
                    seen.libs = libs_of()
                    _create_run(store, fr, seen, run_id, label, campaign)
                bulk.insert_results(store, part.columns, part.rows)
                seen.rows += len(part.rows)
                part.rows = []   # freed before the next segment is parsed
            _finish_run(store, fr, loaded, seen, run_id, bps, line_rate, streamed)
    except _RunExists:
        fr.status, fr.run_id, fr.variant = "skipped", run_id, None
        fr.note = f"run {run_id} already exists"
        return fr
    except _Abandon as exc:
        if exc.why:
            seen.problems.append(f"{path}: {exc.why}")
        return fr
    except (ValueError, bulk.IntegrityError) as exc:
        seen.problems.append(f"{path}: not stored ({exc}); nothing of this file was written")
        return fr
    fr.status = "imported"
    fr.run_id, fr.np = run_id, sorted(loaded.nps)
    fr.rows = seen.rows
    fr.failed_rows = loaded.failed_rows
    fr.benchmarks = list(loaded.benchmarks)
    return fr


def _create_run(store: Store, fr: FileReport, seen: _Seen, run_id: str, label: str | None,
                campaign: str) -> None:
    """The file's run, created with its first rows (raises _RunExists if the id is taken)."""
    first = seen.first
    assert first is not None
    fr.variant = label or variant_name(first, Path(fr.path), stack_name(seen.libs))
    # add_campaign refreshes the spec: pass the existing one so nothing set there is lost
    row = campaign_row(store, campaign, None)
    cid = store.add_campaign(campaign, spec=json.loads(row["spec_json"]) if row else None)
    if not store.create_run(run_id, cid, fr.variant, grp=first.format or "", params={},
                            label=label, source="import", seq=0):
        raise _RunExists()
    seen.created = True


def _finish_run(store: Store, fr: FileReport, loaded: _Loaded, seen: _Seen, run_id: str,
                bps: float | None, line_rate: Any, streamed: bool) -> None:
    """After the last part: the run's spec, fingerprint, times and status, and the import
    record (raises _Abandon when no part had rows)."""
    path, problems, first, last = loaded.path, seen.problems, seen.first, seen.last
    if seen.dropped:
        problems.append(f"{path}: {seen.dropped} more problem(s) not listed")
    if last is not None:
        fr.truncated = last.truncated
    if not seen.created or first is None or last is None:
        raise _Abandon("no result rows found" if not problems else "")
    whole = ParseResult(format=first.format, tool=first.tool, version=first.version,
                        blocks=fr.blocks, truncated=last.truncated,
                        truncated_at=last.truncated_at, meta=first.meta)
    if loaded.np_unknown:
        problems.append(f"{path}: the file does not state the number of ranks for "
                        f"{loaded.np_unknown} rows (np stored as unknown; pass --np N)")
    sha = loaded.sha or ""
    spec = _run_spec(whole, path, sha, problems, bps, line_rate)
    if streamed:
        spec["import"]["streamed"] = True
    fid = store.add_fingerprint(fingerprint(whole, seen.libs, sorted(loaded.nps)))
    when = file_time(first.meta) or time.time()
    store.set_run(run_id, "done", fingerprint_id=fid, spec_json=spec, started=when,
                  finished=when, reason=f"truncated: {seen.ended}" if last.truncated else None)
    store.record_import(sha, str(path.resolve()), first.tool, first.version, run_id)


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
