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
