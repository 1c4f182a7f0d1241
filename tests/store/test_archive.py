"""The team archive against a real PostgreSQL server (tests/support/pg_server.py): push twice, three
concurrent pushes of overlapping stores, SIGKILL mid-push, read verbs giving the local store's
output, a newer schema and a foreign database refused, the password never printed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from itertools import count
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mpibench import profile
from mpibench.store import Store
from support.common import TWO_STACK_CAMPAIGN
from support.synth import add_variant_runs, build_two_stack_store, core_record

pytestmark = pytest.mark.system

MPIBENCH = [sys.executable, "-m", "mpibench"]
_n = count()


def cli(*args, cwd, env=None, timeout=120):
    full = dict(os.environ)
    full.pop("MPIBENCH_DB", None)
    full.update(env or {})
    return subprocess.run([*MPIBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full)


@pytest.fixture
def archive(pg_server):
    """A fresh, empty database on the session's server: its URL (with the password)."""
    return pg_server.create_database(f"t{os.getpid()}_{next(_n)}")


@pytest.fixture
def read(capsys, monkeypatch, tmp_path):
    """A read verb run in this process (quicker than a fresh interpreter per call), its
    output captured: CompletedProcess(argv, exit status, stdout, stderr)."""
    from mpibench.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MPIBENCH_DB", raising=False)

    def run(*args, env=None, cwd=None):
        capsys.readouterr()
        with monkeypatch.context() as m:
            for k, v in (env or {}).items():
                m.setenv(k, v)
            try:
                rc = cli_main([str(a) for a in args])
            except SystemExit as exc:
                rc = exc.code
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), rc, out, err)
    return run


def connect(url):
    import psycopg
    return psycopg.connect(url, autocommit=True)


def counts(url) -> dict[str, int]:
    with connect(url) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("campaigns", "runs", "results", "fingerprints", "run_origins")}


def extra_runs(path: Path, variant: str, repeats: int, seed: int, seq0: int) -> list[str]:
    rng = np.random.default_rng(seed)
    with Store(path) as s:
        cid = s.campaigns()[0]["id"]
        return add_variant_runs(
            s, cid, variant, repeats=repeats, seq0=seq0, started0=1.8e9 + seed,
            make=lambda rep: [core_record("PingPong", z, rng.lognormal(0, 0.05, 8))
                              for z in (0, 8, 1024)])


def test_push_twice_stores_once_and_reads_like_the_local_store(archive, tmp_path, read):
    db = tmp_path / "a.db"
    store, groups = build_two_stack_store(db, repeats=3, n=20)
    with store:
        store.create_run("pending-1", 1, "base", seq=999)        # unfinished: not sent
        profile_run = groups["base"][0]
        # a real captured profile (tests/data/profiler)
        store.set_profile(profile_run, profile.document.collect_profile(
            Path(__file__).parents[1] / "data" / "profiler" / "known_calls_openmpi"))
    first = cli("push", archive, "--db-from", str(db), "--site", "alpha", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "6 new" in first.stdout and "1 unfinished" in first.stdout
    after_one = counts(archive)
    assert after_one["runs"] == 6 and after_one["results"] == 6 * 14
    second = cli("push", "--db-from", str(db), "--site", "alpha", cwd=tmp_path,
                 env={"MPIBENCH_ARCHIVE": archive})
    assert second.returncode == 0, second.stderr
    assert "0 new" in second.stdout
    assert counts(archive) == after_one
    for out in (first, second):
        assert pg_password(archive) not in out.stdout + out.stderr

    # every read verb: the same output as on the local file
    for args in (["compare"], ["compare", "--format", "csv"], ["compare", "--results"],
                 ["compare", "--variant", "fast", "--variant", "base", "--format", "json"],
                 ["campaign", "list", "--json"]):
        local = read(*args, "--db", str(db), cwd=tmp_path)
        remote = read(*args, "--db", archive, cwd=tmp_path)
        assert local.returncode == 0 and remote.returncode == 0, remote.stderr
        if args[0] == "campaign":   # the pending run was not pushed
            assert '"pending": 1' in local.stdout and '"pending": 0' in remote.stdout
            continue
        assert remote.stdout == local.stdout, args
    # the regression gate: the same decision, the same JSON, the same exit status
    for args in (["check", "--json"], ["check", "--baseline", "fast", "--json"]):
        local = read(*args, "--db", str(db), cwd=tmp_path)
        remote = read(*args, "--db", archive, cwd=tmp_path)
        assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout), args
        assert local.returncode == (1 if "fast" in args else 0), local.stderr
    env_read = read("compare", cwd=tmp_path, env={"MPIBENCH_DB": archive})
    assert env_read.stdout == read("compare", "--db", str(db), cwd=tmp_path).stdout
    md = {}
    for name, target in (("l", str(db)), ("r", archive)):
        res = read("report", "--db", target, "-o", "-", "--markdown", f"{name}.md",
                  "--no-plots", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        md[name] = [ln for ln in (tmp_path / f"{name}.md").read_text().splitlines()
                    if not ln.startswith("Generated ")]   # the date and the source differ
    assert md["l"] == md["r"]
    assert pg_password(archive) not in (tmp_path / "r.md").read_text()

    # the pandas API
    from mpibench.api import load_profiles, load_results
    a = load_results(str(db), samples=True).drop(columns=["run_id"])
    b = load_results(archive, samples=True).drop(columns=["run_id"])
    pd.testing.assert_frame_equal(a.drop(columns=["samples"]), b.drop(columns=["samples"]))
    assert all(np.array_equal(x, y) for x, y in zip(a["samples"], b["samples"], strict=True))
    assert len(load_profiles(archive)) == len(load_profiles(str(db)))
    from mpibench.api import load_origins
    orig = load_origins(archive)
    assert len(orig) == 6 and set(orig["site"]) == {"alpha"}
    assert set(orig["local_id"]) == set(groups["base"] + groups["fast"])
    assert set(orig["run_id"]) == set(load_results(archive)["run_id"])
    assert load_origins(str(db)).empty

    # an annotation changed locally (a relabelled launch) is updated in place, not stored twice
    from mpibench.store.bulk import relabel_run
    with Store(db) as s, s.transaction():
        relabel_run(s, groups["fast"][0], "fast-relabelled")
    third = cli("push", archive, "--db-from", str(db), "--site", "alpha", cwd=tmp_path)
    assert third.returncode == 0 and "0 new" in third.stdout and "1 with a new" in third.stdout
    assert counts(archive) == after_one
    with connect(archive) as c:
        assert c.execute("SELECT count(*) FROM runs WHERE label = 'fast-relabelled' AND "
                         "variant = 'fast-relabelled'").fetchone()[0] == 1


def pg_password(url: str) -> str:
    from mpibench.store.engine import url_password
    pw = url_password(url)
    assert pw and len(pw) >= 8
    return pw


def test_three_concurrent_pushes_of_overlapping_stores(archive, tmp_path):
    base = tmp_path / "base.db"
    build_two_stack_store(base, repeats=2, n=10)[0].close()
    stores = []
    for i, site in enumerate(("alpha", "beta", "gamma")):
        p = tmp_path / f"{site}.db"
        shutil.copy(base, p)                    # the same campaign, copied to three machines
        extra_runs(p, f"{site}-only", repeats=2, seed=i, seq0=200)
        extra_runs(p, "shared-later", repeats=1, seed=99, seq0=300) if i else None
        stores.append((site, p))
    procs = [subprocess.Popen([*MPIBENCH, "push", archive, "--db-from", str(p), "--site", s],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for s, p in stores]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    c = counts(archive)
    # 4 shared runs + 2 per site + 1 'shared-later' run in two of the stores
    assert c["runs"] == 4 + 3 * 2 + 1
    assert c["campaigns"] == 1
    with connect(archive) as conn:
        dup = conn.execute("SELECT run_id, benchmark, size, count(*) FROM results "
                           "GROUP BY 1, 2, 3 HAVING count(*) > 1").fetchall()
        assert dup == []
        origins_of_shared = conn.execute(
            "SELECT count(DISTINCT origin_id) FROM run_origins o JOIN runs r ON r.id = o.run_id "
            "WHERE r.variant = 'base'").fetchone()[0]
        assert origins_of_shared == 3           # every site's push is recorded
        sites = {r[0] for r in conn.execute("SELECT site FROM origins")}
        assert sites == {"alpha", "beta", "gamma"}
    assert c["results"] == sum(1 for _ in results_of(archive))


def results_of(url):
    with connect(url) as c:
        yield from c.execute("SELECT id FROM results")


def test_sigkill_mid_push_leaves_nothing_then_push_completes(archive, tmp_path):
    db = tmp_path / "k.db"
    build_two_stack_store(db, repeats=3, n=10)[0].close()
    assert cli("push", archive, "--db-from", str(db), "--site", "x", cwd=tmp_path
               ).returncode == 0
    extra_runs(db, "late", repeats=3, seed=5, seq0=400)
    before = counts(archive)
    blocker = connect(archive)
    blocker.autocommit = False
    # the push's last statement (its row in `pushes`) waits on this lock: the push is then
    # mid-transaction, with its runs and results written but not committed
    blocker.execute("LOCK TABLE pushes IN ACCESS EXCLUSIVE MODE")
    proc = subprocess.Popen([*MPIBENCH, "push", archive, "--db-from", str(db), "--site", "x"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dbname = archive.rsplit("/", 1)[1]
    with connect(archive.rsplit("/", 1)[0] + "/postgres") as watch:
        waiting = None
        for _ in range(1200):           # the event: the push's backend waits on the lock
            waiting = watch.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND "
                "application_name = 'mpibench' AND wait_event_type = 'Lock'",
                (dbname,)).fetchone()
            if waiting or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert waiting, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        blocker.rollback()
        blocker.close()
        for _ in range(600):            # the server ends the orphaned backend's transaction
            if not watch.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                                 waiting).fetchone():
                break
            time.sleep(0.1)
    assert counts(archive) == before    # nothing half-written is visible
    again = cli("push", archive, "--db-from", str(db), "--site", "x", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "3 new" in again.stdout
    after = counts(archive)
    assert after["runs"] == before["runs"] + 3
    assert after["results"] == before["results"] + 3 * 3


def test_newer_schema_and_foreign_database_refused_in_one_line(archive, pg_server, tmp_path):
    db = tmp_path / "n.db"
    build_two_stack_store(db, repeats=2, n=5)[0].close()
    assert cli("push", archive, "--db-from", str(db), cwd=tmp_path).returncode == 0
    with connect(archive) as c:
        c.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    before = counts(archive)
    for args in (["compare", "--db", archive], ["push", archive, "--db-from", str(db)],
                 ["campaign", "list", "--db", archive]):
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "newer than this mpibench" in lines[0], res.stderr
        assert pg_password(archive) not in res.stderr + res.stdout
    assert counts(archive) == before

    foreign = pg_server.create_database(f"foreign{os.getpid()}")
    with connect(foreign) as c:
        c.execute("CREATE TABLE accounts (id int PRIMARY KEY, owner text)")
    for args in (["push", foreign, "--db-from", str(db)], ["report", "--db", foreign]):
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 2 and "not an mpibench archive" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    with connect(foreign) as c:
        tables = {r[0] for r in c.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = 'public'")}
    assert tables == {"accounts"}       # left untouched


def test_password_never_printed(archive, tmp_path):
    db = tmp_path / "p.db"
    build_two_stack_store(db, repeats=1, n=5)[0].close()
    pw = pg_password(archive)
    wrong = archive.replace(f":{pw}@", ":Wr0ngPassw0rd-xyz@")
    res = cli("push", wrong, "--db-from", str(db), cwd=tmp_path)
    assert res.returncode == 2
    assert "Wr0ngPassw0rd-xyz" not in res.stdout + res.stderr
    assert "cannot connect" in res.stderr and "***" in res.stderr
    ok = cli("push", archive, "--db-from", str(db), "--json", cwd=tmp_path)
    assert ok.returncode == 0 and pw not in ok.stdout + ok.stderr and "***" in ok.stdout
    empty = cli("compare", "--db", archive + "x", cwd=tmp_path)   # no such database
    assert empty.returncode == 2 and pw not in empty.stderr
    with connect(archive) as c:            # nothing of the URL went into the archive
        for table, col in (("origins", "path"), ("fingerprints", "json"),
                           ("campaigns", "spec_json"), ("runs", "spec_json")):
            assert not c.execute(f"SELECT 1 FROM {table} WHERE {col} LIKE %s",
                                 (f"%{pw}%",)).fetchone()


def test_two_sites_compared_on_the_archive(archive, tmp_path, read):
    """Two sites run the same campaign file and push; the archive compares them, by campaign
    name (pooled) or split by --site."""
    for i, site in enumerate(("alpha", "beta")):
        db = tmp_path / f"{site}.db"
        build_two_stack_store(db, seed=10 + i, repeats=2, n=10, campaign="fabric",
                              shift=0.8 if site == "alpha" else 0.9)[0].close()
        res = cli("push", archive, "--db-from", str(db), "--site", site, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    with connect(archive) as c:
        assert c.execute("SELECT count(*) FROM campaigns WHERE name = 'fabric'"
                         ).fetchone()[0] == 2
    res = read("compare", "--db", archive, "--campaign", "fabric", "--variant", "fast",
              "--site", "alpha", "--site", "beta", "--format", "csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    # two campaigns named 'fabric': sets are campaign/variant, then split by site
    assert ",alpha/fabric/fast,beta/fabric/fast," in res.stdout
    by_fp = read("compare", "--db", archive, "--campaign", "fabric", "--site", "alpha",
                 "--site", "beta", "--fingerprint", "stack=fast", "--format", "csv")
    assert by_fp.returncode == 0 and by_fp.stdout == res.stdout   # the same runs selected
    # beta's 'fast' is 0.9 x base and alpha's 0.8 x: beta is slower than alpha everywhere
    # but PingPong at size 1, where both equal their base
    one = read("compare", "--db", archive, "--site", "beta", "--variant", "fast",
              "--variant", "base", "--format", "csv", cwd=tmp_path)
    assert one.returncode == 0 and "alpha" not in one.stdout
    # one site alone, no --campaign: its set names are those of its own store
    alone = read("compare", "--db", archive, "--site", "alpha", "--format", "csv")
    own = read("compare", "--db", str(tmp_path / "alpha.db"), "--format", "csv")
    assert alone.returncode == 0 and alone.stdout == own.stdout
    bad = read("compare", "--db", archive, "--site", "gamma", cwd=tmp_path)
    assert bad.returncode == 2 and "--site 'gamma'" in bad.stderr and "alpha, beta" in bad.stderr
    local = read("compare", "--db", str(tmp_path / "alpha.db"), "--site", "alpha", cwd=tmp_path)
    assert local.returncode == 2 and "local store" in local.stderr


CAMPAIGN = TWO_STACK_CAMPAIGN.replace('name = "t"', 'name = "fabric-status"')


def test_campaign_status_and_cells_on_the_archive(archive, tmp_path, read):
    """`campaign status/list FILE` match the file's cells on the archive as on the local store
    (by their local cell ids); only finished cells are there."""
    from mpibench.campaign.plan import expand
    from mpibench.campaign.spec import load

    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    spec = load(path)
    db = tmp_path / "mpibench.db"
    rng = np.random.default_rng(3)
    with Store(db) as s:
        cid = s.add_campaign(spec.name, {"order": "interleaved"}, file=str(spec.path))
        for k, c in enumerate(expand(spec, seed=0)):
            fid = s.add_fingerprint({"stack": c.variant.stack})
            s.create_run(c.id, cid, c.variant.name, grp=c.group.name, params=c.params,
                         repeat=c.repeat, seq=c.seq, fingerprint_id=fid,
                         transport_requested=c.variant.transport)
            if k % 4 == 3:
                s.set_run(c.id, "failed", reason="exit 1", exit_code=1)
                continue
            s.add_results(c.id, [core_record("PingPong", z, rng.lognormal(0, 0.05, 8))
                                 for z in (0, 64)])
            s.set_run(c.id, "done", started=1.8e9 + k, elapsed=2.0, exit_code=0)
    assert cli("push", archive, "--db-from", str(db), cwd=tmp_path).returncode == 0
    outs = {}
    for name, target in (("local", str(db)), ("archive", archive)):
        res = read("campaign", "status", str(path), "--db", target, "--json", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        data = json.loads(res.stdout)
        data.pop("store")
        cells = read("campaign", "list", str(path), "--db", target, "--json", cwd=tmp_path)
        assert cells.returncode == 0, cells.stderr
        outs[name] = (data, json.loads(cells.stdout))
    assert outs["archive"] == outs["local"]
    status = outs["local"][0]
    assert status["cells"] == 6 and status["totals"]["failed"] == 1
    assert status["not_in_file"] == 0 and len(outs["local"][1]) == 6
