"""The kept run's settings file that bench/bench_time_to_decision.py --replay reads
(bench.json, written by --keep): its fuzz surface derandomized, and its refusals."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mpibench.errors import UsageError
from support import surfaces as _surfaces

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_time_to_decision.py"


def _bench():
    return _surfaces.load_bench_ttd()


def test_the_kept_run_settings_surface_derandomized():
    """'time-to-decision kept runs' with a fixed seed: a mutated bench.json is read as an
    integer 2-1000 that is in the file or refused in one line naming it, never a crash;
    where its rounds read, its continuation's looks and batches too (300 cases, each
    read once for the rounds and, where they read, once more for the looks and batches)."""
    surf = next(s for s in _surfaces.SURFACES if s.name == "time-to-decision kept runs")
    t = surf.run(random.Random(29), 300)
    assert t.tried > 300 and (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples


@pytest.mark.parametrize("rounds, ok", [(10, True), (2, True), (1000, True), (1, False),
                                        (1001, False), (10 ** 9, False), (10.0, False),
                                        (True, False), ("10", False), (None, False)])
def test_rounds_outside_two_to_the_search_bound_are_refused(tmp_path, rounds, ok):
    """Only what --keep can write is read: an integer 2-1000 (a huge count would be looked
    at once per round; a float or a bool is not what --max-rounds took)."""
    mod = _bench()
    f = tmp_path / mod.SETTINGS
    f.write_text(json.dumps({"rounds": rounds}))
    if ok:
        assert mod.settings_rounds(f) == rounds
    else:
        with pytest.raises(UsageError, match=r"bench\.json: rounds is .*expected a JSON"):
            mod.settings_rounds(f)


def test_a_replay_of_a_run_whose_settings_are_damaged_says_so_on_stderr(tmp_path):
    """The replay passes over a run whose bench.json is not JSON: one stderr line naming
    the file, exit 2 when no run is left (the stores are there, so it is the settings
    that refuse, not a missing store)."""
    run = tmp_path / "run"
    for tool in ("core", "imb"):
        (run / tool).mkdir(parents=True)
        (run / tool / "mpibench.db").write_bytes(b"")
    (run / "bench.json").write_text('{"rounds": 1')
    res = subprocess.run([sys.executable, str(BENCH), "--replay", str(run)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bench.json: not readable as JSON" in lines[0], res.stderr


def test_max_rounds_beyond_the_search_bound_is_refused():
    res = subprocess.run([sys.executable, str(BENCH), "--max-rounds", "1001"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--max-rounds: got 1001, expected 2-1000" in res.stderr


# --- the split of the time between launches (time_between): a kept run built by hand,
# every timestamp known, so each part's seconds are known too

def _launch(store, cid, tool_dir: Path, rid: str, variant: str, harness: str,
            t: tuple[float, float, float, float, float]) -> None:
    """One finished launch: runs.started, timing.json (job start, launch start, end),
    runs.finished."""
    started, job, launch, end, finished = t
    d = tool_dir / "runs" / rid
    d.mkdir(parents=True)
    (d / "timing.json").write_text(json.dumps({"started": job, "launch_started": launch,
                                               "finished": end}))
    store.create_run(rid, cid, variant, run_dir=str(d), harness=harness)
    store.set_run(rid, "done", started=started, finished=finished, elapsed=end - launch)


def _split_run(tmp: Path) -> Path:
    """core's invocation (2 launches), a look, IMB's invocation (1 launch), in that order;
    invocations.jsonl with both invocations' timing and the look."""
    from mpibench.store import Store

    run = tmp / "run"
    for tool, launches in (
            ("core", [("c1", "openmpi", (104.5, 104.6, 104.61, 104.8, 104.82)),
                      ("c2", "mpich", (104.85, 104.9, 104.91, 105.1, 105.13))]),
            ("imb", [("i1", "openmpi", (107.0, 107.25, 107.26, 107.7, 107.71))])):
        (run / tool).mkdir(parents=True)
        with Store(run / tool / "mpibench.db") as store:
            cid = store.add_campaign(tool, {})
            for rid, v, t in launches:
                _launch(store, cid, run / tool, rid, v, f"vm {tool}-pid 1", t)
            store.db.commit()
    lines = [{"event": "invocation", "tool": "core", "round": 3, "called": 100.0,
              "returned": 105.5, "timing": {"process_start": 100.5, "entry": 101.0,
                                            "loaded": 101.2, "checked": 101.25,
                                            "store_open": 101.3,
                                            "synced": 101.4, "budget_plan_s": 3.0}},
             {"event": "look", "round": 3, "start": 105.6, "end": 106.1},
             {"event": "invocation", "tool": "imb", "round": 3, "called": 106.2,
              "returned": 108.0, "timing": {"process_start": 106.25, "entry": 106.75,
                                            "loaded": 106.79, "checked": 106.8, "store_open": 106.85,
                                            "synced": 106.875, "budget_plan_s": None}}]
    (run / "invocations.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_the_time_between_launches_is_split_into_parts_that_tile_it(tmp_path):
    """From the end of core's last launch (105.1) to IMB's first (launch at 107.26):
    core's commit, its status and exit, the bench's look, the bench's other work, the MPI
    lock, IMB's Python start and imports, checks, store open, sync, its first cell's
    preparation, the machine-state gate, the job script: each part the difference of two
    known stamps, the parts adding up to the gap. Within core's invocation (openmpi to
    mpich): commit, preparation, gate, job script."""
    ttd = _bench()
    run = _split_run(tmp_path)
    launches = sorted((x for t in ("core", "imb")
                       for x in ttd.timed_launches(run / t / "mpibench.db", t)),
                      key=lambda x: x.launch)
    invs, looks, bad = ttd.read_invocations(run / ttd.INVOCATIONS)
    assert (len(invs), len(looks), bad) == (2, 1, 0)
    across = ttd.gap_parts(launches[1], launches[2], invs[0], invs[1], looks)
    want = {"ingest+commit": 0.03, "status+exit": 0.37, "bench looks": 0.5,
            "bench other": 0.2, "lock wait": 0.05, "python+imports": 0.5,
            "campaign file": 0.04, "checks": 0.01,
            "store open": 0.05, "sync": 0.025, "budget plan": 0.0, "set aside": 0.0,
            "1st cell prep": 0.125, "gate": 0.25, "job script": 0.01}
    assert across == pytest.approx(want)
    assert sum(across.values()) == pytest.approx(launches[2].launch - launches[1].end)
    within = ttd.gap_parts(launches[0], launches[1], invs[0], invs[0], looks)
    assert within == pytest.approx({"ingest+commit": 0.02, "next cell prep": 0.03,
                                    "set aside": 0.0, "gate": 0.05, "job script": 0.01})
    lines = ttd.time_between(run)
    assert "invocations.jsonl" in lines[0] and "passed over" not in lines[0]
    imb = next(x for x in lines if "before imb's first launch" in x)
    assert "(N=1): gap 2.160;" in imb and "python+imports 0.500 [0.5]" in imb, imb


def test_without_invocation_lines_the_split_keeps_what_the_stores_tell(tmp_path):
    """A run kept before invocations.jsonl (or with its lines damaged): the parts the
    stores alone tell apart (the launches' commit, gate and job script; the rest between
    invocations as one), still adding up to the gap, and the heading says so."""
    ttd = _bench()
    run = _split_run(tmp_path)
    (run / ttd.INVOCATIONS).write_text("not json\n[1]\n" + json.dumps(
        {"event": "look", "start": 3.0, "end": 2.0}) + "\n")
    lines = ttd.time_between(run)
    assert "3 of its lines passed over" in lines[0]
    imb = next(x for x in lines if "before imb's first launch" in x)
    assert "between invocations 1.870" in imb and "lock wait" not in imb, imb
    (run / ttd.INVOCATIONS).unlink()
    assert "no invocations.jsonl" in ttd.time_between(run)[0]


def test_a_deeply_nested_invocation_line_is_passed_over(tmp_path):
    """json.loads raises RecursionError, not ValueError, on deep nesting: such a line
    crashed the replay; it is counted with the other lines passed over."""
    ttd = _bench()
    f = tmp_path / "invocations.jsonl"
    look = json.dumps({"event": "look", "round": 3, "start": 1.0, "end": 2.0})
    f.write_text("[" * 100000 + "]" * 100000 + "\n" + look + "\n")
    invs, looks, bad = ttd.read_invocations(f)
    assert (invs, looks, bad) == ([], [(1.0, 2.0)], 1)


def test_the_plan_seconds_of_the_invocation_a_gap_ends_in_are_their_own_part(tmp_path):
    """A gap that ends at a budgeted core invocation's first launch: budget = "auto"'s plan
    seconds are the 'budget plan' part, taken out of the first cell's preparation; more
    plan seconds than lie between its sync and its first cell (two budgeted groups, a
    damaged line) are cut to that, so no part is negative and the parts still tile."""
    ttd = _bench()
    run = _split_run(tmp_path)
    imb = ttd.timed_launches(run / "imb" / "mpibench.db", "imb")[0]
    invs, looks, _bad = ttd.read_invocations(run / ttd.INVOCATIONS)
    core = ttd.Launch("core", "vm core-pid 2", started=111.0, job=111.25, launch=111.3,
                      end=111.5, finished=111.55, aside=0.0)
    timing = {"process_start": 108.2, "entry": 108.5, "loaded": 108.6, "checked": 108.65,
              "store_open": 108.7, "synced": 108.8}
    for plan, want_plan, want_prep in ((2.0, 2.0, 0.2), (None, 0.0, 2.2), (5.0, 2.2, 0.0)):
        inv = {"tool": "core", "called": 108.1, "returned": 112.0,
               "timing": dict(timing, **({"budget_plan_s": plan} if plan else {}))}
        got = ttd.gap_parts(imb, core, invs[1], inv, looks)
        assert got["budget plan"] == pytest.approx(want_plan)
        assert got["1st cell prep"] == pytest.approx(want_prep)
        assert min(got.values()) >= 0
        assert sum(got.values()) == pytest.approx(core.launch - imb.end)
