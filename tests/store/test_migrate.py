"""Opening a store: migrations from earlier versions, and refusing (untouched) whatever is not
a store this code may use: another program's database, a newer schema, damage, a read-only
place for a writing verb. Read-only verbs never write."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mpibench.cli import main as cli_main
from mpibench.errors import UsageError
from mpibench.store import SCHEMA_VERSION, Store
from mpibench.store.schema import MIGRATIONS
from support.common import tmpfs

V1_DDL = Path(__file__).parents[1] / "data" / "store" / "schema_v1.sql"


def make_v1_store(path: Path) -> np.ndarray:
    """A store exactly as mpibench's first schema wrote it (WAL, one campaign, a run with a
    result and samples); returns the samples."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(V1_DDL.read_text())
    samples = np.arange(1.0, 6.0)
    con.execute("INSERT INTO campaigns (id, name, file, spec_json, created) "
                "VALUES (1, 'old', NULL, '{}', 0)")
    con.execute("INSERT INTO runs (id, campaign_id, variant, status) "
                "VALUES ('r1', 1, 'openmpi', 'done')")
    con.execute("INSERT INTO results (run_id, benchmark, size, np, median, samples) "
                "VALUES ('r1', 'PingPong', 8, 2, 3.0, ?)", (samples.astype('<f8').tobytes(),))
    con.close()
    return samples


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def schema_sql(con) -> list[tuple[str, str]]:
    return sorted(tuple(r) for r in con.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))


def test_migrations_are_numbered_and_explained():
    assert [m.version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert all(m.why for m in MIGRATIONS)


def test_v1_store_from_first_release_is_migrated(tmp_path):
    db = tmp_path / "v1.db"
    samples = make_v1_store(db)
    with Store(db) as s:
        assert s.migrated_from == 1
        (row,) = list(s.results(["r1"]))
        np.testing.assert_array_equal(row["samples"], samples)
        assert s.run("r1")["status"] == "done"
        s.set_run("r1", harness="host 1 2")  # a column a later migration added
        migrated = schema_sql(s.db)
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),)
    con.close()
    with Store(db) as s:  # a second open has nothing left to do
        assert s.migrated_from is None
    with Store(tmp_path / "fresh.db") as fresh:
        assert schema_sql(fresh.db) == migrated  # migrated == built new, statement for statement


def test_readonly_open_of_old_store_migrates_a_copy_in_memory(tmp_path):
    db = tmp_path / "v1.db"
    make_v1_store(db)
    before = digest(db)
    with Store(db, readonly=True) as s:
        assert s.migrated_from == 1
        assert [r["benchmark"] for r in s.results()] == ["PingPong"]
    assert digest(db) == before
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta").fetchone() == ("1",)


def test_readonly_store_refuses_writes(tmp_path):
    db = tmp_path / "s.db"
    Store(db).close()
    with Store(db, readonly=True) as s, pytest.raises(sqlite3.OperationalError):
        s.add_campaign("x")


def foreign_db(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
    con.execute("CREATE TABLE meta (k TEXT, v TEXT)")  # a 'meta' that is not ours
    con.execute("INSERT INTO accounts VALUES (1, 'alice')")
    con.commit()
    con.close()


@pytest.mark.parametrize("readonly", [False, True])
def test_foreign_database_is_refused_untouched(tmp_path, readonly):
    db = tmp_path / "foreign.sqlite"
    foreign_db(db)
    before = digest(db)
    with pytest.raises(UsageError, match="not an mpibench store.*accounts.*untouched"):
        Store(db, readonly=readonly)
    assert digest(db) == before
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert {r[0] for r in con.execute("SELECT name FROM sqlite_master")} == {"accounts",
                                                                              "meta"}


@pytest.mark.parametrize("argv", [
    ["compare"], ["report"], ["campaign", "list"], ["profile", "--show", "x"],
    ["import", "FILE"],
])
def test_verbs_refuse_foreign_database_untouched(tmp_path, argv, capsys):
    db = tmp_path / "foreign.sqlite"
    foreign_db(db)
    before = digest(db)
    data = tmp_path / "osu.txt"
    data.write_text("# OSU MPI Latency Test v7.1\n# Size          Latency (us)\n1 1.5\n")
    argv = [str(data) if a == "FILE" else a for a in argv]
    assert cli_main([*argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "not an mpibench store" in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert digest(db) == before
    assert not (tmp_path / "foreign.sqlite-wal").exists()


def set_version(db: Path, value: str) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (value,))
    con.commit()
    con.close()


@pytest.mark.parametrize("readonly", [False, True])
def test_newer_schema_refused_before_any_change(tmp_path, readonly):
    db = tmp_path / "n.db"
    Store(db).close()
    set_version(db, str(SCHEMA_VERSION + 1))
    before = digest(db)
    with pytest.raises(UsageError, match="newer than this mpibench"):
        Store(db, readonly=readonly)
    assert digest(db) == before
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # no switch to WAL


def test_non_numeric_schema_version_is_one_line(tmp_path):
    db = tmp_path / "abc.db"
    Store(db).close()
    set_version(db, "abc")
    with pytest.raises(UsageError, match="schema_version 'abc' is not a number"):
        Store(db)


def test_store_without_results_table(tmp_path, capsys):
    db = tmp_path / "nores.db"
    Store(db).close()
    con = sqlite3.connect(db)
    con.execute("DROP TABLE results")
    con.commit()
    con.close()
    assert cli_main(["compare", "--db", str(db)]) == 2
    assert "table(s) results missing" in capsys.readouterr().err


def test_page_corruption_is_caught_before_import_or_compare(tmp_path, capsys):
    db = tmp_path / "c.db"
    with Store(db) as s:
        cid = s.add_campaign("c")
        s.create_run("r", cid, "v")
        s.add_results("r", [{"benchmark": "PingPong", "size": i, "median": 1.0,
                             "samples": np.ones(200)} for i in range(400)])
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='results'").fetchone()[0]
    con.close()
    raw = bytearray(db.read_bytes())
    # scribble over the results table's root page (an interior b-tree page)
    off = (root - 1) * page
    raw[off + 8:off + page] = b"\xa5" * (page - 8)
    db.write_bytes(bytes(raw))
    before = digest(db)
    with pytest.raises(UsageError, match="damaged"):
        Store(db, check=True)
    data = tmp_path / "osu.txt"
    data.write_text("# OSU MPI Latency Test v7.1\n# Size          Latency (us)\n1 1.5\n")
    assert cli_main(["import", str(data), "--db", str(db)]) == 2
    assert cli_main(["compare", "--db", str(db)]) == 2
    assert "damaged" in capsys.readouterr().err
    assert digest(db) == before


def test_not_sqlite_and_not_regular(tmp_path):
    with pytest.raises(UsageError, match="not a regular file"):
        Store("/dev/null", readonly=True)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(UsageError, match="not an SQLite database"):
        Store(text)
    assert text.read_text() == "hello"


@pytest.fixture
def ro_mount(tmp_path):
    """A tmpfs remounted read-only (needs root; skipped elsewhere)."""
    with tmpfs(tmp_path / "mnt", "8m") as mnt:
        yield mnt


def test_store_on_read_only_mount(ro_mount):
    db = ro_mount / "s.db"
    with Store(db) as s:
        cid = s.add_campaign("c")
        s.create_run("r", cid, "v")
        s.add_results("r", [{"benchmark": "PingPong", "size": 8, "median": 1.0}])
    subprocess.run(["mount", "-o", "remount,ro", str(ro_mount)], check=True)
    with pytest.raises(UsageError, match="read-only .*pass --db to a writable place"):
        Store(db)
    with Store(db, readonly=True) as s:  # reading still works
        assert [r["size"] for r in s.results()] == [8]
    assert cli_main(["compare", "--db", str(db)]) in (0, 1)
