"""stats.probe: the machine-state probe's parser, reference state and gate, on real probe
outputs captured on the project's 2-vCPU VM (tests/data/probe: fast.txt ~80 ns, slow.txt
~320 ns, starved.txt a probe whose thread waited for the CPU; history-*.jsonl the probes of
real launches in order; phase1-loaded.jsonl the phase-1 experiment's launches under
`under-load -j 4`: each launch's probes and its PingPong medians)."""

import json
import math
import statistics
from pathlib import Path

import pytest

from mpibench.stats.probe import (
    GATE_FACTOR,
    MIN_SAMPLES,
    ProbeError,
    ProbeReading,
    State,
    judge_launch,
    parse_probe,
    reference,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "probe"


def _read(name: str) -> ProbeReading:
    return parse_probe((DATA / name).read_text(), where=name)


def test_real_outputs_parse_and_say_whether_they_are_readings():
    fast, slow, starved = _read("fast.txt"), _read("slow.txt"), _read("starved.txt")
    assert fast.median_ns == pytest.approx(82.0) and fast.samples == 2295
    assert fast.cpus == (0, 1) and fast.q1_ns <= fast.median_ns <= fast.q3_ns
    assert slow.median_ns == pytest.approx(323.0)
    assert fast.valid and slow.valid
    assert not starved.valid          # one sample: a scheduler slice, not a round trip


@pytest.mark.parametrize("text, what", [
    ("", "one JSON line"),
    ('{"record":"probe"}\n{"record":"probe"}', "one JSON line"),
    ("median 82 ns", "not JSON"),
    ("[" * 100000, "not JSON .nested too deep"),
    ('{"record":"result","version":1}', "probe record of version 1"),
    ('{"record":"probe","version":2}', "probe record of version 1"),
])
def test_malformed_outputs_name_where_and_what(text, what):
    with pytest.raises(ProbeError, match=f"^run-7/probe: .*{what}"):
        parse_probe(text, where="run-7/probe")


@pytest.mark.parametrize("change, key", [
    ({"median_ns": -1.0}, "median_ns"), ({"samples": 2.5}, "samples"),
    ({"q1_ns": "80"}, "q1_ns"), ({"median_ns": float("inf")}, "median_ns"),
    ({"cpus": [1, 1]}, "cpus"), ({"cpus": [0]}, "cpus"), ({"cpus": [0, True]}, "cpus"),
    ({"q1_ns": 500.0}, "q1_ns <= median_ns"),
])
def test_bad_fields_are_refused_by_name(change, key):
    rec = json.loads((DATA / "fast.txt").read_text())
    rec.update(change)
    with pytest.raises(ProbeError, match=key):
        parse_probe(json.dumps(rec), where="x")


def test_reference_is_the_state_most_launches_found():
    # the captures predate the history's time stamps (load_history would age them out)
    loaded, quiet = _medians("history-loaded.jsonl"), _medians("history-quiet.jsonl")
    assert len(loaded) < 104                   # starved probes are not readings
    # loaded: most probes in the ~320 ns state, some in the ~80 ns one
    assert 280 <= reference(loaded) <= 345
    assert 70 <= reference(quiet) <= 95
    assert reference([]) is None
    # a tie goes to the faster state
    assert reference([80.0, 82.0, 320.0, 330.0]) < 100


def _medians(name: str) -> list[float]:
    """A captured history's valid readings (MIN_SAMPLES), every line, as the gate reads them."""
    recs = [json.loads(ln) for ln in (DATA / name).read_text().splitlines() if ln.strip()]
    return [float(r["median_ns"]) for r in recs if r["samples"] >= MIN_SAMPLES]


def test_judge_launch_on_real_readings():
    fast, slow, starved = _read("fast.txt"), _read("slow.txt"), _read("starved.txt")
    assert judge_launch(slow, slow, 320.0) is State.REFERENCE
    assert judge_launch(fast, slow, 320.0) is State.OFF
    assert judge_launch(slow, fast, 320.0) is State.OFF
    assert judge_launch(fast, fast, 320.0) is State.OFF
    assert judge_launch(slow, starved, 320.0) is State.UNKNOWN     # one reading only
    assert judge_launch(starved, None, 320.0) is State.UNKNOWN
    assert judge_launch(fast, fast, None) is State.UNKNOWN         # no reference yet
    # the factor separates the two states with room either way
    assert 82.0 * GATE_FACTOR < 323.0 / GATE_FACTOR * 1.5


def _phase1() -> list[dict]:
    rows = [json.loads(ln) for ln in (DATA / "phase1-loaded.jsonl").read_text().splitlines()]
    # a median above 5 us at <= 1 KiB is a rank descheduled for a scheduler slice, not a mode
    return [r for r in rows if max(r["median_us"].values()) < 5.0]


def _reading(pair) -> ProbeReading:
    return ProbeReading(pair[0], pair[0], pair[0], pair[1], (0, 1))


@pytest.mark.parametrize("variant", ["openmpi", "mpich"])
def test_gate_keeps_one_launch_mode_of_real_loaded_launches(variant):
    """The phase-1 launches under load: the 0 B medians of all launches span the two modes
    (log sd > 0.3); those the gate keeps (state REFERENCE at the history's reference) are
    one mode (log sd < 0.1), and they are most of the launches."""
    rows = [r for r in _phase1() if r["variant"] == variant]
    ref = reference([p[0] for r in rows for p in (r["before"], r["after"]) if p[1] >= 50])
    kept = [r for r in rows
            if judge_launch(_reading(r["before"]), _reading(r["after"]), ref)
            is State.REFERENCE]
    sd = lambda rs: statistics.stdev(math.log(r["median_us"]["0"]) for r in rs)  # noqa: E731
    assert sd(rows) > 0.3
    assert sd(kept) < 0.1
    assert len(kept) >= 0.5 * len(rows)



def test_the_fuzz_surface_finds_nothing_at_a_fixed_seed():
    """bench/bench_fuzz.py's "machine-state probe output and history" surface, derandomized
    and short: mutated real probe lines and history files are read or refused in one line."""
    import random

    from support import surfaces

    surf = next(s for s in surfaces.SURFACES if s.name.startswith("machine-state probe"))
    t = surf.run(random.Random(31), 80)
    assert t.tried == 80
    assert (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples
