"""The bench scripts: `make bench` passes --quick to every bench/bench_*.py (bench/run_all.py), so
each must accept it; and their own input checks."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("bench_*.py")))
def test_every_bench_accepts_quick(script):
    res = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "--quick" in res.stdout, f"{script} --help does not offer --quick"


@pytest.mark.parametrize("where", ["file", "file/sub", "full"])
def test_time_to_decision_refuses_a_keep_that_is_no_new_or_empty_directory(tmp_path, where):
    """--keep naming a file was a NotADirectoryError traceback: one line, exit 2, nothing
    written; so is a path under a file, and a directory holding an earlier run's files."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.db").write_text("")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    res = subprocess.run([sys.executable, str(BENCH / "bench_time_to_decision.py"), "--keep",
                          str(tmp_path / where)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"--keep: {tmp_path / where} " in res.stderr and res.stdout == ""
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("args, flag", [
    (["--max-rounds", "1"], "--max-rounds: got 1,"),
    (["--batches", "0"], "--batches: got 0,"),
    (["--max-budget", "nan"], "--max-budget: got nan,"),
    (["--bind", "socket"], "--bind: got 'socket',"),
    # --to-budget plans on rounds 3..N, paired from 3 rounds: N < 5 read 0-2 rounds and
    # printed a misleading refusal (exit 0); --quick's 4 rounds left 2, planned unpaired
    (["--to-budget", "--max-rounds", "4"], "--max-rounds: got 4 with --to-budget,"),
    (["--to-budget", "--quick", "--max-rounds", "3"], "--max-rounds: got 3 with --to-budget,"),
    (["--smaller-budgets"], "--smaller-budgets: only with --replay"),
])
def test_time_to_decision_refuses_bad_flags_on_one_line(args, flag):
    res = _ttd(*args, timeout=60)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.splitlines()) == 1 and flag in res.stderr, res.stderr
    assert res.stdout == ""


@pytest.mark.parametrize("args, said", [
    (["--only-outlier", "--outlier-design", "5by8"], "expected launches a side x sizes"),
    (["--outlier-design", "5x8"], "only with --only-outlier"),
    (["--outlier-thin-check"], "only with --only-outlier"),
    (["--unpaired"], "only with --only-ramp"),
    (["--power"], "only with --only-ramp"),
    (["--outlier-rule", "own"], "only with --only-outlier or --only-planning-rows"),
    (["--only-outlier", "--outlier-rule", "own", "--outlier-thin-check"],
     "not with --outlier-side or --outlier-thin-check"),
])
def test_inference_refuses_a_bad_outlier_design(args, said):
    # a malformed design was a ValueError traceback; one without --only-outlier was ignored
    res = subprocess.run([sys.executable, str(BENCH / "bench_inference.py"), *args],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_inference_outlier_rule_own_is_stop_35s_rule(monkeypatch):
    """--outlier-rule own (docs/statistics.md "Stop 35: unbalanced launches are planned to
    balance" cites its figures): every size its own cell part where the launches are
    unbalanced (3 vs 7, 7 vs 4, 5 vs 7), today's test elsewhere (6 vs 7, 7 + 7), today's back
    after the block."""
    import importlib.util

    from mpibench.stats import launch as L
    spec = importlib.util.spec_from_file_location("bench_inf", BENCH / "bench_inference.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))      # it puts src/ first
    spec.loader.exec_module(bench)
    rng = np.random.default_rng(3)
    for ns, changes in (((3, 7), True), ((7, 4), True), ((5, 7), True), ((6, 7), False),
                        ((7, 7), False)):
        vals = [np.exp(rng.normal(0.0, 0.03, (n, 1)) + rng.normal(0.0, 0.05, (n, 10)))
                for n in ns]
        cells = [({f"a{r}": vals[0][r, k] for r in range(ns[0])},
                  {f"b{r}": vals[1][r, k] for r in range(ns[1])}, "higher") for k in range(10)]
        today = L.compare_cells(cells)
        with bench._every_size_own():
            own = L.compare_cells(cells)
        assert L.compare_cells(cells) == today
        if changes:
            assert all(t.own_cell for t in own)
            if ns != (5, 7):      # at this draw today's gate already leaves 5 vs 7 its own
                assert not all(t.own_cell for t in today)
                assert [t.se_log for t in own] != [t.se_log for t in today]
        else:
            assert own == today


def test_inference_runs_the_ramp_unpaired():
    # the ramp's unpaired rows: launches not interleaved (compare_cells without rounds)
    res = subprocess.run([sys.executable, str(BENCH / "bench_inference.py"), "--only-ramp",
                          "--unpaired", "--reps", "1"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "unpaired (launches not interleaved)" in res.stdout
    assert len([ln for ln in res.stdout.splitlines() if "launches a side: A/A" in ln]) == 4


def test_inference_prices_the_trend_prior_in_power():
    # --only-ramp --power: a real 10%, alike sizes and the ramp, trend prior / flat prior
    res = subprocess.run([sys.executable, str(BENCH / "bench_inference.py"), "--only-ramp",
                          "--power", "--reps", "1"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [ln for ln in res.stdout.splitlines() if "rounds: power" in ln]
    assert len(rows) == 8 and all("trend - flat" in ln for ln in rows), res.stdout
    assert sum("3 noisiest" in ln for ln in rows) == 4


def test_time_to_decision_says_whether_every_cell_is_in_reach(monkeypatch):
    """The issue's 'every cell decided within a budget the bench prints': the bench's last
    line says so, from the plan at the spread of all the core's rounds: decided, the
    launches and seconds it would take (within or above --max-budget), or out of reach
    beyond 1000 launches per side, naming what it lacks."""
    import importlib.util
    from types import SimpleNamespace

    from mpibench.stats import budget

    spec = importlib.util.spec_from_file_location("bench_ttd", BENCH / "bench_time_to_decision.py")
    ttd = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_ttd", ttd)   # its dataclasses look it up there
    monkeypatch.setattr(sys, "path", list(sys.path))      # it puts src/ first
    spec.loader.exec_module(ttd)

    def plan(launches, launch_s=0.15):
        best = budget.Choice(100.0, launches, launch_s,
                             launches * launch_s * 2 if launches else math.inf)
        return budget.Plan(best, (best,), 0.05, True)

    undecided = SimpleNamespace(done=False, rounds=10)
    far = ttd.reach_line(plan(None), undecided, 300.0)
    assert "out of reach" in far and f"more than {budget.SEARCH_MAX} launches" in far
    assert "varies between rounds" in far
    near = ttd.reach_line(plan(200), undecided, 300.0)
    assert "200 launches per side, 60 s of launches" in near and "within --max-budget" in near
    # a plan for cells this run left undecided never reads as a yes
    assert "printed budget: not in this run (10 rounds); planned again" in near
    assert "above --max-budget 30 s" in ttd.reach_line(plan(200), undecided, 30.0)
    assert "no plan" in ttd.reach_line(None, undecided, 300.0)
    done = ttd.reach_line(None, SimpleNamespace(done=True, rounds=7, seconds=12.25), 300.0)
    assert "yes, every cell decided after 7 rounds, 12.2 s of launches" in done


TTD_DATA = Path(__file__).resolve().parent / "data" / "ttd_replay"


def _ttd(*args: str, timeout: int) -> subprocess.CompletedProcess:
    """bench_time_to_decision.py with these arguments, its output captured."""
    return subprocess.run([sys.executable, str(BENCH / "bench_time_to_decision.py"), *args],
                          capture_output=True, text=True, timeout=timeout)


def _kept_run(into: Path) -> Path:
    """tests/data/ttd_replay's stores (gzipped SQL text) made back into a kept run."""
    import gzip
    import shutil
    import sqlite3

    run = into / "run-01"
    for tool in ("core", "imb"):
        (run / tool).mkdir(parents=True)
        con = sqlite3.connect(run / tool / "mpibench.db")
        with gzip.open(TTD_DATA / f"{tool}.sql.gz", "rt") as f:
            con.executescript(f.read())
        con.close()
    shutil.copy(TTD_DATA / "bench.json", run / "bench.json")
    return run


def _load_bench(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, BENCH / "bench_time_to_decision.py")
    ttd = importlib.util.module_from_spec(spec)
    sys.modules[name] = ttd          # its dataclasses look it up there
    try:
        spec.loader.exec_module(ttd)
    finally:
        del sys.modules[name]
    return ttd


def _live_counts(ttd, run: Path, tmp: Path, rounds: int) -> dict[str, list[int]]:
    """{tool: cells decided at each look} as the live bench saw them: at look n its store
    held rounds 1..n only, so each look runs on a copy with the later launches deleted,
    through the live path (decided(), the statuses carried look to look)."""
    out: dict[str, list[int]] = {}
    design = ttd.schedule(rounds, rounds, 0)
    for tool in ("core", "imb"):
        prev, counts = None, []
        for n in range(2, rounds + 1):
            db = _cut_store(run, tmp, n, tool)
            state, prev = ttd.decided(db, ttd.STATISTIC[tool], design, n, prev)
            counts.append(state.decided)
            if state.decided == state.cells:
                break
        out[tool] = counts
    return out


def test_time_to_decision_replay_repeats_the_live_runs_looks(tmp_path):
    """--replay on a kept run (tests/data/ttd_replay: a real run's two stores) decides,
    look by look and for both tools, what the live bench decides with this checkout's
    test: at look n the live store held rounds 1..n only (here: a copy with the later
    launches deleted, through decided(), the live looks' path); the replay filters the
    full store to the first n rounds instead. Model changes move both alike."""
    run = _kept_run(tmp_path)
    ttd = _load_bench("bench_ttd_live")
    live = _live_counts(ttd, run, tmp_path, ttd.store_rounds(run / "imb" / "mpibench.db"))
    assert len(live["imb"]) == 9          # a 10-round run: looks 2..10
    res = _ttd("--replay", str(run), timeout=120)
    assert res.returncode == 0, res.stderr
    got = {}
    for line in res.stdout.splitlines():
        head, _, rest = line.strip().partition(" decided by look (2..): ")
        if rest:
            got[head.strip()] = [int(x) for x in rest.split(";")[0].split()]
    assert got == live, res.stdout
    summary = next(x for x in res.stdout.splitlines() if x.startswith("replayed "))
    ge = int(live["core"][-1] >= live["imb"][-1])
    assert summary.startswith(f"replayed 1 runs: core decided >= IMB in {ge} of 1"), summary
    # the run ran the core first in every round (before --order): the cold-start line
    # counts it under "core first" and "imb second"
    assert "core first " in res.stdout and "(1 runs); core second - (0 runs)" in res.stdout
    # every launch of the 10 rounds at 0 B falls in one of the three launch modes
    modes = next(x for x in res.stdout.splitlines() if x.startswith("all runs: 0 B"))
    for who in ("core openmpi", "core mpich", "imb openmpi", "imb mpich"):
        counts = modes.split(who + " ")[1].split(";")[0]
        assert sum(map(int, counts.split("/"))) == 10, modes


def test_time_to_decision_replay_takes_the_kept_runs_rounds_from_its_bench_json(tmp_path):
    """replay_rounds: the rounds a kept run's bench.json says (what --keep writes), not the
    most its stores hold; without the file (a run kept before it existed) the stores'."""
    run = _kept_run(tmp_path)
    ttd = _load_bench("bench_ttd_rounds")
    dbs = {t: run / t / "mpibench.db" for t in ("core", "imb")}
    assert ttd.replay_rounds(run, dbs) == 10              # tests/data/ttd_replay/bench.json
    doc = json.loads((run / ttd.SETTINGS).read_text())
    (run / ttd.SETTINGS).write_text(json.dumps(dict(doc, rounds=7)))
    assert ttd.replay_rounds(run, dbs) == 7               # the file's, below the stores' 10
    (run / ttd.SETTINGS).unlink()
    assert ttd.replay_rounds(run, dbs) == 10 == ttd.store_rounds(dbs["imb"])


def test_time_to_decision_replay_refuses_a_directory_without_stores(tmp_path):
    res = _ttd("--replay", str(tmp_path), timeout=60)
    assert res.returncode == 2 and "not a kept run" in res.stderr, (res.stdout, res.stderr)
    assert "not a kept run" not in res.stdout and "Traceback" not in res.stderr


def test_time_to_decision_alternates_which_tool_launches_first():
    ttd = _load_bench("bench_ttd_order")
    assert [ttd.first_tool("alternate", k) for k in range(1, 5)] == ["core", "imb"] * 2
    assert {ttd.first_tool("core-first", k) for k in range(1, 5)} == {"core"}
    assert {ttd.first_tool("imb-first", k) for k in range(1, 5)} == {"imb"}


def test_the_go_on_plan_is_paired_over_the_cells_still_undecided(tmp_path, capsys):
    # the kept run's core decided 4 and 8 KiB at round 4 and launched them no more
    # (--only-sizes): from round 3 on they have 2 rounds, and planning them with the rest
    # left the benchmark unpaired (the launch spread, where compare tests paired); the
    # plan --to-budget makes after round N is of the sizes round N still launched
    from mpibench.store import Store
    from support.surfaces import load_bench_ttd

    ttd = load_bench_ttd()
    db = _kept_run(tmp_path) / "core" / "mpibench.db"
    rounds = ttd.store_rounds(db)
    with Store(db, readonly=True) as store:
        last = {r["size"] for r in store.results(with_samples=False)
                if r["repeat"] == rounds - 1}
    assert 0 < len(last) < 23                     # the premise: some sizes were decided
    # the kept store has no run directories, so no command.json gives the options the
    # budgeted rounds ran at (run_options: {}, which core_plan took for "no options" and
    # planned every size from the pilot on: the test passed without the path it names);
    # the options are given here (they change the figures, not which sizes are planned)
    assert ttd.run_options(db, rounds - 1) == {}
    # which --replay / --to-budget now say, not plan silently from the pilot on (s42 R8)
    assert ttd.budgeted_options(db, rounds) == {}
    assert f"round {rounds}'s core options were not found" in capsys.readouterr().err
    p = ttd.core_plan(db, 1000, at={"target": 5.0, "max_time": 0.05})
    assert p is not None and "paired by round" in p.describe(), p.describe()
    # planned over exactly the sizes the last round still launched
    assert {k[1] for k in p.best.samples} == last, sorted(p.best.samples)


@pytest.mark.system
def test_the_warm_up_round_is_neither_counted_nor_tested(tmp_path, monkeypatch):
    """Before round 1 each tool runs one launch per variant, as round 1 runs it, into a
    store of its own: the tool's store, the launch seconds it counts and its rounds stay
    untouched, so the round 1 of whichever tool runs first is no cold start and nothing is
    discarded from the counted rounds. (The test holds the MPI lock; the bench's own
    campaign invocations take another, here a private one.)"""
    ttd = _load_bench("bench_ttd_warm")
    monkeypatch.setattr(ttd, "LOCK", str(tmp_path / "lock"))
    # the bench gates on the machine state; a gate may wait up to 20 s a launch for it,
    # which this test of the warm-up's bookkeeping does not need: record only
    assert 'machine_probe = "gate"' in ttd.HEAD
    monkeypatch.setattr(ttd, "HEAD", ttd.HEAD.replace('machine_probe = "gate"',
                                                      'machine_probe = "record"'))
    tool = ttd.Tool("core", tmp_path / "core", ttd.CORE.format(sizes="0:1"), "median",
                    ttd.schedule(2, 2, 0), bind="core")
    line = ttd.warm_up([tool])
    assert line.startswith("# warm-up (discarded") and "core " in line
    assert not tool.db.exists() and tool.seconds == 0.0 and tool.rounds == 0
    from mpibench.store import Store

    with Store(tmp_path / "core" / "warmup" / "mpibench.db", readonly=True) as store:
        runs = store.runs(status="done")
    assert sorted(r["variant"] for r in runs) == ["mpich", "openmpi"]
    assert {r["repeat"] for r in runs} == {0}


def test_time_to_decision_counts_a_slice_against_its_sizes_own_medians():
    """slice_cells: a 5-sample cell launch is a slice when its median is 1 ms or more above
    its variant's and size's median over the store, not when it merely exceeds 1 ms (a 4
    MiB launch whose size sits near 1 ms), nor with more than 5 samples."""
    ttd = _load_bench("bench_ttd_slices")
    big = [{"variant": "a", "size": 4 << 20, "n": 5, "median": m} for m in (900, 1100, 1300)]
    small = [{"variant": "a", "size": 0, "n": n, "median": m}
             for n, m in ((20, 0.5), (20, 0.6), (5, 0.55), (5, 2000.0), (6, 3000.0))]
    other = [{"variant": "b", "size": 0, "n": 5, "median": m} for m in (2000.0, 2100.0, 1.0)]
    assert ttd.slice_cells(big) == 0
    assert ttd.slice_cells(big + small) == 1
    assert ttd.slice_cells(big + small + other) == 1   # b's size median is 2000


def test_time_to_decision_counts_cut_short_launches_per_variant(tmp_path):
    """cut_short_line: per variant the cell launches that stopped 'preempted' on fewer
    than 5 clean samples and the preempted skips; a 'preempted' stop on 5 or more is
    neither, nor a --mem-limit skip.
    The kept run predates the flag: none."""
    import sqlite3

    run = _kept_run(tmp_path)
    db = run / "core" / "mpibench.db"
    ttd = _load_bench("bench_ttd_cut_short")
    assert "openmpi 0 on fewer than 5 clean samples, 0 skipped" in ttd.cut_short_line(db)
    con = sqlite3.connect(db)
    ids = dict(con.execute("SELECT r.variant, min(x.id) FROM results x JOIN runs r ON "
                           "r.id = x.run_id GROUP BY r.variant").fetchall())
    con.execute("UPDATE results SET stop_reason = 'preempted', n = 2 WHERE id = ?",
                (ids["openmpi"],))
    con.execute("UPDATE results SET stop_reason = 'preempted', n = 5 WHERE id = ?",
                (ids["openmpi"] + 1,))
    con.execute("UPDATE results SET stop_reason = 'preempted', status = 'skipped', n = 0 "
                "WHERE id = ?", (ids["mpich"],))
    # the core's --mem-limit skip (stop_reason null) is not a preempted one
    con.execute("UPDATE results SET stop_reason = NULL, status = 'skipped', n = 0 "
                "WHERE id = ?", (ids["mpich"] + 1,))
    con.commit()
    con.close()
    line = ttd.cut_short_line(db)
    assert "mpich 0 on fewer than 5 clean samples, 1 skipped" in line
    assert "openmpi 1 on fewer than 5 clean samples, 0 skipped" in line


def test_replay_counts_the_attempts_the_gate_set_aside_as_the_live_run_does(tmp_path):
    """--replay's launch seconds (replay_tool, per round) include the attempts the
    machine-state gate set aside before a kept launch, as the live run's launch_seconds
    does and the replay's header says: a kept launch given a 2.5 s set-aside attempt adds
    2.5 s to its round and to the replay's seconds."""
    import sqlite3

    run = _kept_run(tmp_path)
    db = run / "core" / "mpibench.db"
    ttd = _load_bench("bench_ttd_set_aside")
    rounds = ttd.store_rounds(db)
    before = ttd.replay_tool(db, "core", rounds).seconds
    con = sqlite3.connect(db)
    rid, rep = con.execute("SELECT id, repeat FROM runs WHERE status = 'done' ORDER BY seq "
                           "LIMIT 1").fetchone()
    con.execute("UPDATE results SET extra_json = json_set(coalesce(extra_json, '{}'), "
                "'$.machine_probe', json('{\"set_aside\": [{\"elapsed_s\": 2.5}]}')) "
                "WHERE run_id = ?", (rid,))
    con.commit()
    con.close()
    assert ttd.replay_tool(db, "core", rounds).seconds - before == pytest.approx(2.5)
    plain, whole = ttd.round_seconds(db), ttd.round_seconds(db, set_aside=True)
    assert whole[rep] - plain[rep] == pytest.approx(2.5)
    assert ttd.launch_seconds(db) == pytest.approx(sum(whole.values()))


def test_time_to_decision_says_what_the_cores_flag_left_out(tmp_path):
    """preempted_line reads the core's store: the kept run predates the flag (every row
    without it, nothing flagged or left out); after marking rows as a --exclude-preempted
    core writes them (a count, excluded; one size stopped 'preempted', one skipped with no
    clean sample) the line adds them up; the 5-sample cells with a median above 1 ms are
    counted from the rows as they are."""
    import sqlite3

    run = _kept_run(tmp_path)
    db = run / "core" / "mpibench.db"
    ttd = _load_bench("bench_ttd_preempted")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT count(*) FROM results x JOIN runs r ON r.id = x.run_id "
                       "WHERE r.status = 'done'").fetchone()
    line = ttd.preempted_line(db)
    assert f"0 flagged in {rows[0]} cell launches, 0 of them left out" in line
    assert f"{rows[0]} without the flag" in line
    ids = [i for (i,) in con.execute("SELECT id FROM results ORDER BY id LIMIT 3")]
    con.execute("UPDATE results SET extra_json = json_set(coalesce(extra_json, '{}'), "
                "'$.preempted', 4, '$.preempted_excluded', json('true'))")
    con.execute("UPDATE results SET stop_reason = 'preempted' WHERE id IN (?, ?)", ids[:2])
    con.execute("UPDATE results SET status = 'skipped' WHERE id = ?", ids[:1])
    con.commit()
    con.close()
    line = ttd.preempted_line(db)
    assert f"{4 * rows[0]} flagged in {rows[0]} cell launches, {4 * rows[0]} of them left out" \
        in line
    assert "2 cells stopped 'preempted'" in line and "1 of them with none" in line
    assert "without the flag" not in line


def test_run_all_help_prints_usage_and_runs_nothing():
    """`bench/run_all.py --help` used to ignore --help and start every benchmark."""
    res = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "--quick" in res.stdout and "bench_inference.py" in res.stdout
    assert "===" not in res.stdout


def test_run_all_refuses_an_unknown_script_name():
    res = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "bench_nosuch"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no such bench script: bench_nosuch" in res.stderr
    assert "===" not in res.stdout


def test_within_prior_reads_the_stored_ttd_run_and_refuses_a_bad_store(tmp_path):
    # the within-launch prior's check (stop 34 dropped the prior on it): per run x variant
    # the rank correlations over the sizes, then their quartiles; no MPI
    script = str(BENCH / "bench_within_prior.py")
    res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    per = [ln for ln in res.stdout.splitlines() if "rho(excess, se2)" in ln and "sizes," in ln]
    assert len(per) == 2 and {"mpich:", "openmpi:"} <= set(" ".join(per).split()), res.stdout
    assert "2 run x variant from 1 store(s)" in res.stdout
    bad = subprocess.run([sys.executable, script, str(tmp_path)], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and f"{tmp_path}: no */core/mpibench.db" in bad.stderr
    assert bad.stdout == ""


def test_time_to_decision_names_the_set_asides_a_moved_reference_spent():
    """moved_line counts the set-aside attempts whose readings are in the run's FINAL
    reference state (set aside while the reference was another state that the majority
    later left), with their seconds; one off the final state is not counted, and a run
    with none says nothing."""
    from support.surfaces import load_bench_ttd

    ttd = load_bench_ttd()

    def kept(ns: float, aside=()) -> dict:
        return {"before_ns": ns, "after_ns": ns, "set_aside": [
            {"before_ns": a, "after_ns": a, "elapsed_s": 0.25} for a in aside]}

    # early launches kept at ~430 ns, the machine then at ~100 ns for good
    probes = {f"a{k}": kept(430.0 + k) for k in range(5)}
    probes |= {f"b{k}": kept(100.0 + k / 10) for k in range(12)}
    probes["a0"] = kept(431.0, aside=(101.0, 99.5))     # set aside under the old reference
    probes["b0"] = kept(100.0, aside=(440.0,))          # off the final state: not counted
    line = ttd.moved_line(probes)
    assert "2 of them in the run's final reference state, 0.5 s" in line
    assert ttd.moved_line({k: v for k, v in probes.items() if k != "a0"}) == ""


def test_time_to_decision_judges_a_stores_final_reference_by_its_readers_rule():
    """Review R11: the final reference is the gate's rule for the store's reader - the
    core's own readings ("launch") within their finer state, the probe program's (IMB's)
    the coarse state alone - so a set-aside at 64 ns beside a ~90 ns majority is off the
    core's final reference and in IMB's."""
    from support.surfaces import load_bench_ttd

    ttd = load_bench_ttd()

    def store(reading: str) -> dict:
        def kept(ns: float, aside=()) -> dict:
            return {"before_ns": ns, "after_ns": ns, "reading": reading, "set_aside": [
                {"before_ns": a, "after_ns": a, "elapsed_s": 0.25, "reading": reading}
                for a in aside]}
        probes = {f"m{k}": kept(88.0 + k / 4) for k in range(16)}
        probes |= {f"f{k}": kept(64.0 + k / 10) for k in range(5)}
        probes["m0"] = kept(88.0, aside=(64.2,))
        return probes
    assert ttd.moved_line(store("launch")) == ""
    assert "1 of them in the run's final reference state" in ttd.moved_line(store("probes"))


def test_probe_gate_names_why_each_attempt_was_set_aside(tmp_path):
    """bench_probe_gate.py --set-aside-causes: an attempt is classified against its kept
    launch's stored reference and bounds - off the coarse state at its start, only at its
    end, off the finer bounds only - and a directory without a kept TTD store is refused
    in one line, exit 2."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_pg", BENCH / "bench_probe_gate.py")
    pg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pg)
    kept = {"reference_ns": 100.0, "reference_lo_ns": 75.0, "reference_hi_ns": 160.0}

    def why(before, after):
        return pg._cause({"before_ns": before, "after_ns": after}, kept)
    assert why(400.0, 100.0) == "coarse start"
    assert why(100.0, 420.0) == "coarse end only"
    assert why(66.0, 100.0) == "finer start"
    assert why(100.0, 66.0) == "finer end only"
    assert why(100.0, 101.0) == "neither"
    assert pg._cause({"before_ns": 400.0}, {}) is None
    res = subprocess.run([sys.executable, str(BENCH / "bench_probe_gate.py"),
                          "--set-aside-causes", str(tmp_path)], capture_output=True, text=True)
    assert res.returncode == 2 and "--set-aside-causes" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_probe_gate_dwell_finds_a_demos_history_under_its_stamp(tmp_path, capsys, monkeypatch):
    """bench_probe_gate.py --stores DIR reads the machine-state histories under a demo's
    --out: since each demo invocation runs in runs/<stamp>/cI/, the history is one level
    deeper than it was (review s40 R10: the section printed only its heading). Every file
    it finds is read; a directory with none says so."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_pg3", BENCH / "bench_probe_gate.py")
    pg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pg)
    hist = tmp_path / "demo" / "runs" / "20261128-125650" / "c3" / "machine-probe.jsonl"
    hist.parent.mkdir(parents=True)
    hist.write_text("")
    read = []
    monkeypatch.setattr(pg, "_dwell_file", lambda f: read.append(f) or {
        p: [0, 0] for p in pg.PAUSES_S})
    pg.dwell([tmp_path / "demo"])
    assert read == [hist] and "no machine-probe.jsonl" not in capsys.readouterr().out
    pg.dwell([tmp_path / "empty"])
    assert f"no machine-probe.jsonl found under {tmp_path / 'empty'}" in capsys.readouterr().out

def test_probe_gate_replay_keys_the_gates_waiting_cap_by_campaign_invocation(tmp_path, capsys):
    """bench_probe_gate.py --ttd: the gate's WAIT_TOTAL_S is per campaign invocation. A
    kept --to-budget run ran its interleaved rounds one invocation each and its
    continuation one per look: the looks bench.json records, else rebuilt from "batches"
    over the rounds the store reached (schedule(412, 10, 3): 144, 278, 412). Keyed per
    round, the replay gave every continuation round a fresh 60 s and waited ~7000 s where
    ttd-04 waited 196. A bench.json the TTD bench refuses (its one reader) is said once on
    stderr and keyed a round each; a plain run's too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_pg2", BENCH / "bench_probe_gate.py")
    pg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pg)
    run = tmp_path / "run"
    for k, doc in ((0, {"repeat": 0}), (411, {"repeat": 411}), (9999, ["junk"]),
                   (9998, {"repeat": "9999"})):
        (run / "core" / "runs" / f"c-{k}").mkdir(parents=True)
        (run / "core" / "runs" / f"c-{k}" / "cell.json").write_text(json.dumps(doc))
    settings = run / "bench.json"
    settings.write_text(json.dumps({"rounds": 10, "to_budget": True, "batches": 3}))
    got = [pg.invocation(run, k) for k in (0, 9, 10, 143, 144, 277, 278, 411)]
    assert got == ["0", "9", "to 144", "to 144", "to 278", "to 278", "to 412", "to 412"]
    # the looks the live run followed (a plan of 412 whose run stopped at 278), review R6
    settings.write_text(json.dumps({"rounds": 10, "to_budget": True, "looks": [144, 278, 412]}))
    assert [pg.invocation(run, k) for k in (99, 143, 144, 200)] == \
        ["to 144", "to 144", "to 278", "to 278"]
    for doc in ({"rounds": 10, "to_budget": False}, {"rounds": 10}):
        settings.write_text(json.dumps(doc))
        assert pg.invocation(run, 144) == "144"
    assert capsys.readouterr().err == ""
    for doc in ({"rounds": 10 ** 9, "to_budget": True}, {"rounds": "10", "to_budget": True},
                {"rounds": 10, "to_budget": True, "batches": "x"},
                {"rounds": 10, "to_budget": True, "looks": [300, 200]}, []):
        settings.write_text(json.dumps(doc))
        pg._REFUSED.clear()
        assert pg.invocation(run, 144) == "144"
        assert pg.invocation(run, 145) == "145"
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(settings) in err[0], err
    assert pg.invocation(run, None) == "?"


def test_probe_gate_counts_only_the_waits_probes_as_re_probes():
    """bench_probe_gate.py --ttd: a core attempt's machine-probe.txt holds the probe
    program's before-probe and its wait's re-probes, then the core's own start/end
    readings; IMB's holds the before-probe, the re-probes and the after-probe. Only the
    probes before the launch are the wait's: one probe alone is no wait (it charged every
    core attempt a 0.6 s wait that never found the reference)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_pg3", BENCH / "bench_probe_gate.py")
    pg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pg)
    ranks, prog = "cacheline-ranks", "cacheline"
    core = {"states": ["F", "F", "F"], "kinds": [prog, ranks, ranks]}
    assert pg._wait_probes(core) == ["F"]
    waited = {"states": ["S", "S", "F", "F", "F"], "kinds": [prog, prog, prog, ranks, ranks]}
    assert pg._wait_probes(waited) == ["S", "S", "F"]
    imb = {"states": ["S", "F", "F"], "kinds": [prog, prog, prog]}
    assert pg._wait_probes(imb) == ["S", "F"]


def test_outlier_candidates_runs_a_tiny_row():
    """bench_outlier_candidates.py (docs/statistics.md "Stop 37" cites it for family (c)'s
    table and the Cochran-Cox-at-3-df paragraph): a row at 2 reps prints today's line and
    one per --rule, each family's spec accepted."""
    rules = ["mix:0.1:0.6", "small:0.35", "cc:0.1:0.6", "owncc:0.1:0.6"]
    res = subprocess.run([sys.executable, str(BENCH / "bench_outlier_candidates.py"),
                          "--design", "3v7", "--reps", "2",
                          *[a for r in rules for a in ("--rule", r)]],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [ln.split()[0] for ln in res.stdout.splitlines() if "FP noisy 2x" in ln]
    assert rows == ["today", *rules], res.stdout
    assert res.stdout.startswith("3v7 seed 21 reps 2 ")


@pytest.mark.parametrize("args, said", [
    (["--design", "7v3"], "--design: got '7v3', expected NAvNB"),
    (["--rule", "mix:0.6:0.1"], "--rule: got 'mix:0.6:0.1', expected mix:LO:HI"),
    (["--rule", "small"], "--rule: got 'small', expected"),
    (["--reps", "0"], "--reps: got 0, expected 1 or more"),
])
def test_outlier_candidates_refuses_bad_flags(args, said):
    res = subprocess.run([sys.executable, str(BENCH / "bench_outlier_candidates.py"), *args],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_outlier_candidates_rules_act_on_the_smaller_side_and_are_put_back(monkeypatch):
    """Each candidate swaps stats.launch.gated_spreads (and cc WELCH_MIN_DF) only inside
    its block; on 3 vs 7 launches with the smaller side's last size 4x noisier, small:0.5
    and mix:0.1:0.6 give that size a wider se than today's, and nothing at 7 + 7."""
    import importlib.util

    from mpibench.stats import launch as L
    spec = importlib.util.spec_from_file_location("bench_oc", BENCH / "bench_outlier_candidates.py")
    oc = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))      # it puts src/ first
    spec.loader.exec_module(oc)
    sds = np.full((2, oc.SIZES), oc.SD_SIZE)
    sds[0, -1] *= 4
    today_gated, today_min, today_mix = L.gated_spreads, L.WELCH_MIN_DF, L.SMALLER_MIX
    for ns, changes in (((3, 7), True), ((7, 7), False)):
        cells = oc._cells(np.random.default_rng(5), ns, sds, 0.0)
        with oc.make_rule("before")():      # the candidates run on the rule before stop 42
            today = L.compare_cells(cells)
        for name in ("small:0.5", "mix:0.1:0.6", "cc:0.1:0.6"):
            with oc.make_rule(name)():
                cand = L.compare_cells(cells)
            assert L.gated_spreads is today_gated and L.WELCH_MIN_DF == today_min
            assert L.SMALLER_MIX == today_mix
            if changes and name != "cc:0.1:0.6":
                assert cand[-1].se_log > today[-1].se_log, name
            elif not changes:
                assert cand == today, name
    with oc.make_rule("before")():
        assert L.compare_cells(cells) == today


def test_probe_gate_round_rule_hides_a_variant_that_moves_the_state_unguarded():
    """--round-rule's central figure (docs/statistics.md "A round with a launch kept off the
    state"): when B's own launch finds the slow state half the time (m 0.5), keeping every
    round shows B slower (gain well above 1), leaving out the kept-off rounds hides it (gain
    near 1). Fixed seed; bounds far from the values (1.35 / 1.01 at these draws)."""
    res = subprocess.run([sys.executable, str(BENCH / "bench_probe_gate.py"), "--round-rule",
                          "--reps", "20", "--seed", "21", "--rr-rounds", "10"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    gain = {(r[0], r[1], r[2]): float(r[4]) for r in
            (line.split() for line in res.stdout.splitlines()) if len(r) == 8
            and r[2] in ("all", "drop", "guarded")}
    assert gain[("0.50", "0.50", "all")] > 1.2
    assert 0.95 < gain[("0.50", "0.50", "drop")] < 1.05
    assert {k[2] for k in gain} == {"all", "drop", "guarded"}


def test_time_to_decision_replay_round_rule_reads_the_kept_probes(tmp_path):
    """--replay DIR --round-rule on the kept test run (no kept-off launch in it): the
    what-if says so, counts each variant's kept launches, and the spread table has the
    rounds 3+ in one group. The core store holds 5 of its 23 sizes (the two decided at
    rounds 4 and 6 among them): every round still has 3 or more sizes, so each of rounds
    3-10 is in the spread table, and the --to-budget plan the line starts with (not
    checked here: test_the_go_on_plan_is_paired_over_the_cells_still_undecided plans the
    whole store at these options) plans the 3 sizes the last round launched, not 21."""
    import sqlite3

    run = _kept_run(tmp_path)
    con = sqlite3.connect(run / "core" / "mpibench.db")
    con.execute("DELETE FROM results WHERE size NOT IN (0, 4096, 8192, 65536, 4194304)")
    con.commit()
    con.close()
    res = _ttd("--replay", str(run), "--round-rule", timeout=300)
    assert res.returncode == 0, res.stderr
    assert ("rounds with a launch kept off the reference state after its retries: none"
            in res.stdout)
    assert "mpich 0 (over 10 kept launches), openmpi 0 (over 10 kept launches)" in res.stdout
    assert "both in the reference at once: 8 rounds" in res.stdout


def _cut_store(run: Path, into: Path, rounds: int, tool: str = "core") -> Path:
    """A copy of the kept run's store of `tool` holding its first `rounds` rounds only, as
    the live bench's store held them then."""
    import shutil
    import sqlite3

    db = into / f"{tool}-{rounds}.db"
    shutil.copy(run / tool / "mpibench.db", db)
    con = sqlite3.connect(db)
    con.execute("DELETE FROM results WHERE run_id IN (SELECT id FROM runs WHERE "
                "repeat >= ?)", (rounds,))
    con.execute("DELETE FROM runs WHERE repeat >= ?", (rounds,))
    con.commit()
    con.close()
    return db


def _slower(run: Path, variant: str, factor: float) -> None:
    """The kept run's core store with every launch of `variant` `factor` times slower: the
    real launches' spread around a large gain, so cells decide at interim looks."""
    import sqlite3

    con = sqlite3.connect(run / "core" / "mpibench.db")
    con.execute("UPDATE results SET median = median * ? WHERE run_id IN (SELECT id FROM runs "
                "WHERE variant = ?)", (factor, variant))
    con.commit()
    con.close()


def _budget_lines(out: str) -> dict[int, tuple[int, int]]:
    """{budget: (cells decided, at look)} of --smaller-budgets' lines."""
    got = {}
    for line in out.splitlines():
        if line.strip().startswith("budget "):
            k, rest = line.split(":", 1)
            got[int(k.split()[1])] = (int(rest.split("/")[0]), int(rest.split(" at look ")[1]
                                                                    .split(";")[0]))
    return got


@pytest.mark.parametrize("batches, tells", [
    (2, {"batches + 1", "no early stop"}),          # looks 8, 10 against 7, 9, 10
    (50, {"Design's level", "no early stop"}),      # budget 8: 0.05 x 0.2 / 53, not / 6
    # (batches 50: every round after 5 is a look whichever the batches, so + 1 is the same)
])
def test_time_to_decision_smaller_budgets_repeat_a_run_stopped_at_that_budget(
        tmp_path, batches, tells):
    """--replay DIR --smaller-budgets: the kept test run, Open MPI made 10x slower, read as a
    --to-budget run of 5 interleaved rounds whose core went on to 10 in `batches` batches;
    at each smaller budget k the replay decides what a live run with budget k decides:
    looks schedule(k, 5, batches) at the interim level fixed before the first
    (to_budget_interim), through decided() on a copy of the store cut to its first k
    rounds, stopping at the first look where every cell is decided. The large gain makes
    cells decide at interim looks, so the fixture tells designs apart: the test first
    checks that the named other designs (Design's own level from the looks a budget has,
    batches + 1, no early stop) decide otherwise here, then that the replay is today's."""
    run = _kept_run(tmp_path)
    _slower(run, "openmpi", 10.0)
    (run / "bench.json").write_text(json.dumps(
        {"rounds": 5, "to_budget": True, "batches": batches, "looks": [8, 10]}))
    ttd = _load_bench("bench_ttd_budgets")
    res = _ttd("--replay", str(run), "--smaller-budgets", timeout=300)
    assert res.returncode == 0, res.stderr
    got = _budget_lines(res.stdout)
    assert sorted(got) == [6, 7, 8, 10], res.stdout
    interim = ttd.to_budget_interim(5, batches)
    fams = {k: ttd.family(_cut_store(run, tmp_path, k), "median") for k in got}

    def live(k, design, stop=True):
        prev = None
        for n in design.looks():
            # decided() is judge(family(db)): the family of the cut store, read once
            state, prev = ttd.judge(fams[k], design, n, prev)
            if stop and state.decided == state.cells:
                break
        return state.decided, n

    want = {k: live(k, ttd.schedule(k, 5, batches, interim)) for k in got}
    others = {"Design's level": {k: live(k, ttd.schedule(k, 5, batches)) for k in got},
              "batches + 1": {k: live(k, ttd.schedule(k, 5, batches + 1, interim))
                              for k in got},
              "no early stop": {k: live(k, ttd.schedule(k, 5, batches, interim), False)
                                for k in got}}
    assert {name for name, o in others.items() if o != want} == tells, (want, others)
    assert any(at < k for k, (_, at) in want.items()), want     # some budget stops early
    assert got == want, res.stdout
    # a plain run (no budget) is passed over, said on stderr, exit 2 when none is left
    (run / "bench.json").write_text(json.dumps({"rounds": 10}))
    res = _ttd("--replay", str(run), "--smaller-budgets", timeout=120)
    assert res.returncode == 2 and "not a kept --to-budget run" in res.stderr


def _narrower(run: Path, factor: float) -> None:
    """The kept run's core store with each cell's launches of each variant pulled towards
    their geometric mean (logs scaled by `factor`): the same cells and rounds, a smaller
    spread between launches, so CIs come near 1 and the margin."""
    import math
    import sqlite3

    con = sqlite3.connect(run / "core" / "mpibench.db")
    rows = con.execute("SELECT results.id, variant, size, median FROM results JOIN runs "
                       "ON runs.id = results.run_id").fetchall()
    logs: dict = {}
    for _, v, size, m in rows:
        logs.setdefault((v, size), []).append(math.log(m))
    for i, v, size, m in rows:
        mean = sum(logs[v, size]) / len(logs[v, size])
        con.execute("UPDATE results SET median = ? WHERE id = ?",
                    (math.exp(mean + factor * (math.log(m) - mean)), i))
    con.commit()
    con.close()


@pytest.mark.parametrize("narrower", [None, 0.2])
def test_time_to_decision_gain_plan_reduces_to_todays_plan_at_gain_one(tmp_path, narrower):
    """--replay DIR --gain-plan on the kept test run (and on it with its launches 5x closer
    to each cell's mean, where the CI's near end of some cells lies within ±5% and the
    far end beyond: the two ends' columns differ): per undecided cell the gain-1 column
    is stats.budget.cell_rounds' (TOST at gain 1 on rounds 3..10's parts of the cells round
    10 launched, as --to-budget plans); the other four are the one-cell plan on the cell's
    PairedSpread at the effects worked out here from the look's gain and CI (the live
    path: decided() look by look on the store): equivalence within ±5% at the point gain
    (log 1.05 - |log gain|), the difference test at it (|log gain|), equivalence at the
    CI's end farthest from 1, the difference test at its end nearest 1 (none when the CI
    holds 1); none (">5000") beyond 5000 rounds or at no effect. The CI-end columns never
    ask fewer rounds than the point ones, and planning equivalence at the observed gain
    never fewer than at gain 1."""
    import math

    from mpibench.stats import budget
    from mpibench.stats import launch as launch_stats
    from mpibench.store import Store
    from mpibench.store.report_queries import launch_cost_rows

    run = _kept_run(tmp_path)
    if narrower:
        _narrower(run, narrower)
    res = _ttd("--replay", str(run), "--gain-plan", timeout=300)
    assert res.returncode == 0, res.stderr
    got = {}
    for line in res.stdout.splitlines():
        if line.startswith("  size "):
            cols = line.split(":", 1)[1].split()
            got[int(line.split()[1])] = [None if c.startswith(">") else int(c) for c in cols]
    assert got and all(len(c) == 5 for c in got.values()), res.stdout
    db = run / "core" / "mpibench.db"
    with Store(db, readonly=True) as store:
        rows = launch_cost_rows(store, [r["id"] for r in store.runs(status="done")
                                        if 2 <= r["repeat"] < 10])
    live = {(r["benchmark"], r["size"]) for r in rows if r["repeat"] == 9}
    rows = [r for r in rows if (r["benchmark"], r["size"]) in live]
    today = {k[1]: n for k, n in budget.cell_rounds(rows, ["openmpi", "mpich"], 0.05).items()}
    spreads = budget.paired_spreads(rows, ["openmpi", "mpich"])
    ttd = _load_bench("bench_ttd_gain")
    design, look = ttd.schedule(10, 10, 0), None
    for n in range(2, 11):
        state, look = ttd.decided(db, "median", design, n, look)
    undecided = {k.size: c for k, c in look.items() if k.size in got}
    assert sorted(undecided) == sorted(got) and len(got) == state.cells - state.decided

    def plan(key, log_effect, equivalence):
        # the cell's one PairedSpread on this run (the rule takes the largest of several:
        # a hedged or split pool), at least THIN_LAUNCHES + 1 rounds as cell_rounds plans;
        # None beyond 5000 rounds or at no effect
        (ps, _), = spreads[budget.pool_of(key)].tested_on([key])
        if log_effect <= 0:
            return None
        n = budget._cell_round(ps, key, math.expm1(log_effect), budget.PLAN_CONFIDENCE,
                               equivalence=equivalence, max_n=5000)
        return None if n is None else max(n, launch_stats.THIN_LAUNCHES + 1)

    margin = math.log(1.05)
    for size, cols in got.items():
        c, key = undecided[size], ("PingPong", size)
        point = abs(math.log(c.gain))
        lo, hi = abs(math.log(c.ci_low)), abs(math.log(c.ci_high))
        near = 0.0 if c.ci_low <= 1 <= c.ci_high else min(lo, hi)
        want = [plan(key, margin, True), plan(key, margin - point, True),
                plan(key, point, False), plan(key, margin - max(lo, hi), True),
                plan(key, near, False)]
        assert cols == want, (size, cols, want, res.stdout)
        gain1, eq_point, sig_point, eq_ci, sig_ci = (math.inf if x is None else x
                                                     for x in cols)
        if today[size] is None:     # beyond SEARCH_MAX for today's plan; the what-if goes on
            assert gain1 > budget.SEARCH_MAX, (size, res.stdout)
        else:
            assert gain1 == today[size], (size, res.stdout)
        assert eq_point >= gain1 and eq_ci >= eq_point and sig_ci >= sig_point, (size, cols)
    # the fixture can tell the columns apart: cells with both point columns in reach, and
    # (narrower) cells whose CI's near end is within the margin and far end beyond
    assert sum(x[1] is not None and x[2] is not None for x in got.values()) >= 2, res.stdout
    ends = [sorted(abs(math.log(x)) for x in (c.ci_low, c.ci_high)) for c in undecided.values()]
    assert any(a < margin < b for a, b in ends) == bool(narrower), ends


def test_probe_gate_set_aside_causes_upto_round_reads_the_first_rounds_only(tmp_path):
    """--set-aside-causes DIR --upto-round N counts the kept launches of rounds 1..N and
    what the probe before each read: three rounds, the third's probe off the reference
    (430 ns against 100), so rounds 1-2 show no 'pre off' and the whole run one; a bad N
    or one without --set-aside-causes is refused in one line."""
    import sqlite3

    db = tmp_path / "run" / "core" / "mpibench.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id TEXT, run_dir TEXT, status TEXT, repeat INTEGER, "
                "variant TEXT)")
    con.execute("CREATE TABLE results (run_id TEXT, extra_json TEXT, size INTEGER, "
                "median REAL)")
    for rep, pre in enumerate((101.0, 99.0, 430.0)):
        d = tmp_path / "run" / "core" / "runs" / f"c-{rep}"
        d.mkdir(parents=True)
        (d / "machine-probe.txt").write_text(json.dumps(
            {"record": "probe", "probe": "cacheline", "version": 1, "cpus": [0, 1],
             "batch": 16, "samples": 500, "median_ns": pre, "q1_ns": pre, "q3_ns": pre,
             "min_ns": pre}) + "\n")
        rec = {"before_ns": 100.0, "after_ns": 100.0, "state": "reference", "reading":
               "launch", "reference_ns": 100.0, "set_aside": []}
        con.execute("INSERT INTO runs VALUES (?, ?, 'done', ?, 'openmpi')",
                    (f"c-{rep}", str(d), rep))
        con.execute("INSERT INTO results VALUES (?, ?, 0, 0.2)",
                    (f"c-{rep}", json.dumps({"machine_probe": rec})))
    con.commit()
    con.close()

    def causes(*more):
        return subprocess.run([sys.executable, str(BENCH / "bench_probe_gate.py"),
                               "--set-aside-causes", str(tmp_path / "run"), *more],
                              capture_output=True, text=True, timeout=120)
    whole, first = causes(), causes("--upto-round", "2")
    assert whole.returncode == 0 and first.returncode == 0, whole.stderr + first.stderr
    line = next(x for x in whole.stdout.splitlines() if x.startswith("  run core:"))
    assert "3 kept" in line and "pre off: kept in 1" in line and "pre in: 2" in line, line
    line = next(x for x in first.stdout.splitlines() if x.startswith("  run core:"))
    assert "2 kept" in line and "pre off" not in line and "pre in: 2" in line, line
    for bad in (causes("--upto-round", "0"),
                subprocess.run([sys.executable, str(BENCH / "bench_probe_gate.py"),
                                "--upto-round", "3"], capture_output=True, text=True,
                               timeout=60)):
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "--upto-round" in bad.stderr
