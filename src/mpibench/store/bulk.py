"""Bulk writes for `mpibench import`: many files per transaction with one SAVEPOINT per
file (a bad file rolls back alone), rows inserted as laid out by the importer, and the WAL
checkpointed less often while a big import runs. The errors a write can meet are named here
so that callers outside store/ never touch sqlite3."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mpibench.store import Store

# a write the store refused: a full disk, an I/O error, a read-only file
WriteError = sqlite3.OperationalError
# a row that breaks a constraint (e.g. a run id stored twice)
IntegrityError = sqlite3.IntegrityError


class Batch:
    """Several files per transaction, one SAVEPOINT per file; the transaction commits after
    `files` files or `seconds` seconds, whichever comes first."""

    def __init__(self, store: Store, files: int, seconds: float):
        self.db = store.db
        self.max_files, self.max_seconds = files, seconds
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
        if self.files >= self.max_files or time.monotonic() - self.since >= self.max_seconds:
            self.commit()

    def commit(self) -> None:
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")


@contextmanager
def checkpoint_every(store: Store, pages: int) -> Iterator[None]:
    """Checkpoint the WAL every `pages` pages instead of SQLite's 1000 while the block runs
    (the fsyncs off a big import's critical path); the previous value is restored."""
    saved = store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    store.db.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
    try:
        yield
    finally:
        store.db.execute(f"PRAGMA wal_autocheckpoint={int(saved)}")


def imported_hashes(store: Store) -> set[str]:
    """sha256 of every file imported into this store."""
    return {row[0] for row in store.db.execute("SELECT sha256 FROM imports")}


def insert_results(store: Store, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Result rows already laid out in `columns` order (the importer's fast path around
    Store.add_results)."""
    store.db.executemany(f"INSERT INTO results ({', '.join(columns)}) "
                         f"VALUES ({', '.join('?' for _ in columns)})", rows)


def relabel_run(store: Store, run_id: str, label: str) -> None:
    """An imported run's label, which is also its variant name."""
    store.db.execute("UPDATE runs SET label=?, variant=? WHERE id=?", (label, label, run_id))
