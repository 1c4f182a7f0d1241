"""The SQLite store: round trip, transactions, schema versioning."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from mpibench.errors import UsageError
from mpibench.store import SCHEMA_VERSION, Store


def test_round_trip(tmp_path):
    db = tmp_path / "r.db"
    samples = np.random.default_rng(1).lognormal(size=500)
    with Store(db) as s:
        cid = s.add_campaign("c1", {"x": 1})
        assert s.add_campaign("c1", {"x": 2}) == cid
        fid = s.add_fingerprint({"stack": "openmpi", "env": {"UCX_TLS": "sm"}})
        assert s.create_run("run-1", cid, "openmpi", grp="core", repeat=2, params={"np": 2})
        assert not s.create_run("run-1", cid, "openmpi")  # idempotent, no duplicate
        s.add_results("run-1", [{"benchmark": "PingPong", "size": 8, "np": 2, "n": 500,
                                 "median": float(np.median(samples)), "samples": samples,
                                 "extra": {"batch_note": "k=64"}}])
        s.set_run("run-1", "done", fingerprint_id=fid, exit_code=0)
    with Store(db) as s:
        (row,) = list(s.results(["run-1"]))
        assert row["variant"] == "openmpi" and row["repeat"] == 2
        assert row["params"] == {"np": 2}
        assert row["extra"] == {"batch_note": "k=64"}
        np.testing.assert_array_equal(row["samples"], samples)
        assert s.run("run-1")["status"] == "done"
        assert s.fingerprint(s.run("run-1")["fingerprint_id"])["env"] == {"UCX_TLS": "sm"}


def test_done_runs_read_back_readonly(tmp_path):
    """Store.runs(status="done") on a read-only store: what bench_time_to_decision's
    breakdown() reads (variant, round, elapsed, run directory) of the finished launches
    only, a failed or pending launch left out."""
    db = tmp_path / "d.db"
    with Store(db) as s:
        cid = s.add_campaign("c")
        for rid, variant, rep, status in (("a", "openmpi", 0, "done"), ("b", "mpich", 2, "done"),
                                          ("c", "mpich", 3, "failed"), ("d", "openmpi", 4, None)):
            s.create_run(rid, cid, variant, repeat=rep)
            if status:
                s.set_run(rid, status, elapsed=1.5 + rep, run_dir=f"runs/{rid}")
    with Store(db, readonly=True) as s:
        got = [(r["id"], r["variant"], r["repeat"], r["elapsed"], r["run_dir"])
               for r in s.runs(status="done")]
    assert got == [("a", "openmpi", 0, 1.5, "runs/a"), ("b", "mpich", 2, 3.5, "runs/b")]


def test_transaction_rolls_back(tmp_path):
    with Store(tmp_path / "t.db") as s:
        cid = s.add_campaign("c")
        s.create_run("a", cid, "v")
        with pytest.raises(ValueError):
            with s.transaction():
                s.add_results("a", [{"benchmark": "PingPong", "size": 1}])
                s.add_results("a", [{"benchmark": "PingPong", "bogus": 1}])
        assert list(s.results(["a"])) == []
        with pytest.raises(ValueError, match="run status"):
            s.set_run("a", "finished")


def test_newer_schema_fails_clearly(tmp_path):
    db = tmp_path / "n.db"
    Store(db).close()
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    with pytest.raises(UsageError, match="newer than this mpibench"):
        Store(db)


def test_not_a_database(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UsageError, match="not an SQLite database"):
        Store(bad)


def test_state_counts_of_all_campaigns_match_each_campaigns(tmp_path):
    """`campaign list` counts every campaign's cells in one query (an archive holds
    thousands of campaigns); it must say what the per-campaign query says."""
    from mpibench.store import queries

    with Store(tmp_path / "c.db") as s:
        a = s.add_campaign("a", {})
        b = s.add_campaign("b", {})
        s.add_campaign("empty", {})
        cells = [("a1", a, "done", None), ("a2", a, "running", "123"),
                 ("a3", a, "running", "123"), ("a4", a, "running", "local-9"),
                 ("a5", a, "running", "124"), ("a6", a, "failed", "125"),
                 ("b1", b, "pending", None), ("b2", b, "timeout", "7")]
        for rid, cid, state, job in cells:
            s.create_run(rid, cid, "v")
            s.set_run(rid, state, job_id=job)
        every = queries.state_counts_all(s, "local-")
        for c in s.campaigns():
            assert every.get(c["id"], ({}, 0)) == queries.state_counts(s, c["id"], "local-")
        assert every[a] == ({"done": 1, "running": 4, "failed": 1}, 2)
