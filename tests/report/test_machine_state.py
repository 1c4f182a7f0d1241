"""report.machine_state: under the compare table (compare, check, report), what the
machine-state probe recorded with the compared launches - per variant how many launches were
in the reference state, off it, not judged, set aside - and a WARNING when they were not all
in one state.

The stores hold real captured probe readings: tests/data/probe/phase1-loaded.jsonl, phase
1's 102 launches under load (Open MPI and MPICH alternating, each launch's probe before and
after and its PingPong medians). Its launches go through the campaign's own decision
functions (stats.probe.reference / judge_launch, machine_probe.probe_extra, RETRIES) in
launch order, as the gate takes them, and into a store through the storage API. A test at
the end runs a real two-stack campaign with the probe on and compares it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mpibench.campaign.machine_probe import RETRIES, Attempt, probe_extra
from mpibench.cli import main as cli_main
from mpibench.stats.probe import MIN_SAMPLES, ProbeReading, State, judge_launch, reference
from mpibench.store import Store
from support.synth import add_variant_runs, core_record

DATA = Path(__file__).resolve().parents[1] / "data" / "probe" / "phase1-loaded.jsonl"
SIZES = ("0", "8", "1024")


def _phase1() -> list[dict]:
    return [json.loads(ln) for ln in DATA.read_text().splitlines() if ln.strip()]


def _reading(pair: list) -> ProbeReading:
    ns, samples = pair
    return ProbeReading(ns, ns, ns, samples, (0, 1))


def _replay(rows: list[dict], gate: bool) -> tuple[dict[str, list], dict[str, int]]:
    """The launches in order through the campaign's decision: the history grows by every
    attempt's valid readings; under the gate an attempt judged off is set aside (at most
    RETRIES times, the variant's next launch being its retry). Per variant its kept
    launches (row, extra.machine_probe) and how many attempts were set aside before them
    (a variant's last attempts, set aside with no retry in the data, are dropped)."""
    history: list[float] = []
    kept: dict[str, list] = {}
    aside: dict[str, list[Attempt]] = {}
    n_aside: dict[str, int] = {}
    for row in rows:
        a = Attempt(_reading(row["before"]), _reading(row["after"]))
        history += [r.median_ns for r in (a.before, a.after) if r.valid]
        ref = reference(history)
        state = judge_launch(a.before, a.after, ref)
        v = row["variant"]
        held = aside.setdefault(v, [])
        if gate and state is State.OFF and len(held) < RETRIES:
            held.append(a)
            continue
        kept.setdefault(v, []).append((row, probe_extra(a, state, ref, held)))
        n_aside[v] = n_aside.get(v, 0) + len(held)
        aside[v] = []
    return kept, n_aside


def _store(path: Path, kept: dict[str, list], probes: bool | set[str] = True,
           names: dict[str, str] | None = None) -> Path:
    """One campaign, a run per kept launch, PingPong at 0/8/1024 B around its real
    medians (12 samples each, seeded), its probe record in every row's extra."""
    rng = np.random.default_rng(31)
    with Store(path) as store:
        cid = store.add_campaign("phase1", {"order": "interleaved"})
        for v, launches in kept.items():
            on = probes is True or bool(probes) and v in probes

            def make(rep, launches=launches, on=on):
                row, extra = launches[rep]
                recs = []
                for s in SIZES:
                    x = rng.lognormal(np.log(row["median_us"][s]), 0.02, 12)
                    rec = core_record("PingPong", int(s), x)
                    if on:
                        rec["extra"] = {"machine_probe": extra}
                    recs.append(rec)
                return recs
            add_variant_runs(store, cid, (names or {}).get(v, v), repeats=len(launches),
                             make=make)
    return path


def _compare(db: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(db), "--campaign", "phase1", *args]) == 0
    return capsys.readouterr().out


def _fast(pair: list) -> bool:
    """The test's own reading of a probe: the fast state (~80 ns) or the slow (~320 ns),
    split at their geometric middle; None where the probe was starved."""
    ns, samples = pair
    return None if samples < MIN_SAMPLES else ns < 160


def test_the_cores_own_readings_are_judged_against_their_finer_state(tmp_path, capsys):
    """Stop 34's run-65 (tests/data/probe/readings-stop34.json): the core's launches, each
    with its own start and end readings ("reading": "launch"). The core's readings show a
    ~64 ns state beside the ~90 ns reference: compare counts a launch with a reading below
    the valley (~70 ns) off, as the campaign's gate now would (GATE_FACTOR alone kept them:
    they are 0.73x of the reference), and the JSON gives the reader's bounds."""
    d = json.loads((DATA.parent / "readings-stop34.json").read_text())
    kept: dict[str, list] = {}
    for v, a, b, us in d["launches"][:120]:
        row = {"median_us": dict.fromkeys(SIZES, us)}
        extra = {"before_ns": a, "after_ns": b, "reading": "launch", "state": "reference",
                 "set_aside": [], "waits": 0}
        kept.setdefault(v, []).append((row, extra))
    obj = json.loads(_compare(_store(tmp_path / "s.db", kept), capsys, "--format",
                              "json"))["machine_state"]
    lo, hi = obj["reference_bounds_ns"]["launch"]
    assert 66 < lo < 75 and hi > 115
    # the WARNING names the bounds the launches were judged against (review R5)
    assert f"{lo:.0f}-{hi:.0f}, for the launch's own readings" in obj["warning"]
    for v, launches in kept.items():
        # off: a reading in the ~64 ns state, or in the ~320 ns one (a few launches)
        off = sum(min(e["before_ns"], e["after_ns"]) < 67 or max(e["before_ns"],
                  e["after_ns"]) > 200 for _, e in launches)
        assert obj["sets"][v]["off_reference_state"] == off
    assert sum(obj["sets"][v]["off_reference_state"] for v in kept) > 0


def test_each_variant_gets_its_machine_state_line_and_the_json_field(tmp_path, capsys):
    kept, n_aside = _replay(_phase1(), gate=True)
    db = _store(tmp_path / "s.db", kept)
    text = _compare(db, capsys)
    lines = [ln for ln in text.splitlines() if ln.startswith("machine state (cache-line")]
    assert len(lines) == 2, text
    obj = json.loads(_compare(db, capsys, "--format", "json"))["machine_state"]
    # most of phase 1's readings are in the slow state: the reference is ~320 ns
    assert 250 < obj["reference_ns"] < 400
    for v, launches in kept.items():
        line = next(ln for ln in lines if f": {v}: " in ln)
        got = obj["sets"][v]
        assert got["launches"] == got["probed"] == len(launches)
        assert got["set_aside_not_used"] == n_aside[v] > 0
        assert f"{n_aside[v]} attempts set aside (not used)" in line
        # off the ~320 ns reference: a kept launch with a fast reading before or after
        seen = [[_fast(row["before"]), _fast(row["after"])] for row, _ in launches]
        off = sum(True in s for s in seen)
        unknown = sum(True not in s and None in s for s in seen)   # a starved probe
        assert (got["off_reference_state"], got["not_judged"]) == (off, unknown)
        assert got["in_reference_state"] == len(launches) - off - unknown
        assert f"{got['in_reference_state']} in the reference state (~" in line
        assert f" ns), {off} off it, {unknown} not judged (a probe " in line
        kept_off = sum(extra["state"] == "off" for _, extra in launches)
        assert got["kept_off_after_retries"] == kept_off
    assert sum(g["off_reference_state"] for g in obj["sets"].values()) > 0


def test_mixed_states_warn_in_every_format_and_one_state_does_not(tmp_path, capsys):
    mixed = _store(tmp_path / "m.db", _replay(_phase1(), gate=False)[0])
    slow_only = [r for r in _phase1()
                 if not any(_fast(p) for p in (r["before"], r["after"]))]
    one = _store(tmp_path / "o.db", _replay(slow_only, gate=False)[0])
    for db, warned in ((mixed, True), (one, False)):
        text = _compare(db, capsys)
        assert ("WARNING (machine state): the compared launches are not all in one "
                "machine state" in text) is warned, text
        assert text.count("machine state (cache-line probe): ") == 2
        md = _compare(db, capsys, "--format", "markdown")
        assert ("\n\n**Warning (machine state):** the compared launches" in md) is warned
        # a paragraph each (adjacent Markdown lines would run into one)
        assert md.count("\n\n**Machine state (cache-line probe):** ") == 2, md
        obj = json.loads(_compare(db, capsys, "--format", "json"))["machine_state"]
        assert obj["mixed_states"] is warned and (obj["warning"] is not None) is warned
    # the rounds (repeat k of both variants: phase 1's launches 2k and 2k+1) whose two
    # launches the test's own reading puts in different states
    rows = _phase1()
    sets = json.loads(_compare(mixed, capsys, "--format", "json"))["machine_state"]["sets"]

    def state(row):
        seen = [_fast(row["before"]), _fast(row["after"])]
        return "off" if True in seen else None if None in seen else "ref"
    pairs = [(state(rows[k]), state(rows[k + 1])) for k in range(0, len(rows), 2)]
    judged = [(a, b) for a, b in pairs if a and b]
    assert sets["openmpi"]["rounds_both_judged"] == len(judged)
    split = sum(a != b for a, b in judged)
    assert sets["openmpi"]["rounds_in_different_states"] == split > 0
    warning = json.loads(_compare(mixed, capsys, "--format", "json", "--baseline", "mpich")
                         )["machine_state"]["warning"]
    assert f"; in {split} of {len(judged)} rounds openmpi's launch and mpich's were in " \
        "different states; " in warning
    # record mode (no gate): launches judged off when they ran are said as recorded off
    lines = json.loads(_compare(mixed, capsys, "--format", "json"))["machine_state"]["lines"]
    assert any(re.fullmatch(r"openmpi: \d+ launches probed: .*; when run, 0 attempts set "
                            r"aside \(not used\), \d+ recorded off it \(not gated\)", ln)
               for ln in lines), lines


def test_nothing_is_said_without_probe_records(tmp_path, capsys):
    db = _store(tmp_path / "n.db", _replay(_phase1(), gate=True)[0], probes=False)
    for fmt in ("terminal", "markdown"):
        text = _compare(db, capsys, "--format", fmt)
        assert "verdict" in text.lower() and "machine state" not in text.lower(), text
    assert json.loads(_compare(db, capsys, "--format", "json"))["machine_state"] is None
    out = tmp_path / "r.html"
    assert cli_main(["report", "--db", str(db), "--campaign", "phase1", "--no-plots",
                     "-o", str(out)]) == 0
    assert "machine state" not in out.read_text()


def test_the_html_report_says_it_escaped_and_check_prints_it(tmp_path, capsys):
    names = {"openmpi": "ompi<script>alert(1)</script>", "mpich": "mpich&co"}
    db = _store(tmp_path / "h.db", _replay(_phase1(), gate=True)[0], names=names)
    out = tmp_path / "r.html"
    assert cli_main(["report", "--db", str(db), "--campaign", "phase1", "--no-plots",
                     "-o", str(out)]) == 0
    html = out.read_text()
    assert "<script>alert" not in html
    assert "ompi&lt;script&gt;alert(1)&lt;/script&gt;: " in html
    assert "mpich&amp;co: " in html
    # under the table, and beside the verdict at the top
    assert html.count("WARNING (machine state):</strong> the compared launches") == 2
    md = tmp_path / "r.md"
    assert cli_main(["report", "--db", str(db), "--campaign", "phase1", "--no-plots",
                     "-o", str(out), "--markdown", str(md)]) == 0
    assert md.read_text().count("**Machine state (cache-line probe):** ") == 2
    assert "> **WARNING (machine state): the compared launches" in md.read_text()
    capsys.readouterr()
    cli_main(["check", "--db", str(db), "--campaign", "phase1", "--baseline", names["mpich"]])
    text = capsys.readouterr().out
    assert text.count("machine state (cache-line probe): ") == 2 and "WARNING" in text
    cli_main(["check", "--db", str(db), "--campaign", "phase1", "--baseline", names["mpich"],
              "--json"])
    obj = json.loads(capsys.readouterr().out)["machine_state"]
    assert obj["mixed_states"] and set(obj["sets"]) == set(names.values())


def test_a_malformed_probe_record_is_not_judged_and_breaks_nothing(tmp_path, capsys):
    """Records the campaign never writes (a store edited by hand, another tool's extra):
    a reading that is not a positive finite number is no reading, a set_aside that is not
    a list sets nothing aside; compare still prints, and counts them as not judged."""
    bad = [{"before_ns": "80", "after_ns": -1, "state": "off", "set_aside": {"n": 3}},
           {"before_ns": [80.0], "after_ns": True, "set_aside": None},
           {"before_ns": None}]
    rows = _phase1()[:6:2]
    kept = {"openmpi": [(r, b) for r, b in zip(rows, bad, strict=True)],
            "mpich": _replay(_phase1()[1:12:2], gate=False)[0]["mpich"][:3]}
    db = _store(tmp_path / "b.db", kept)
    got = json.loads(_compare(db, capsys, "--format", "json"))["machine_state"]
    ompi = got["sets"]["openmpi"]
    assert (ompi["probed"], ompi["not_judged"], ompi["set_aside_not_used"]) == (3, 3, 0)
    assert ompi["recorded_off_no_gate"] == 1
    assert "openmpi: 3 launches probed: 0 in the reference state" in _compare(db, capsys)


def test_a_gate_on_one_side_only_is_a_warning(tmp_path, capsys):
    """Review P3's case: the gate set aside MPICH's launches, Open MPI's were never probed
    (its ranks not bound to cores): the sides were not selected alike. The same store with
    both sides probed in the slow state only has no WARNING."""
    slow = [r for r in _phase1() if not any(_fast(p) for p in (r["before"], r["after"]))]
    kept, n_aside = _replay(_phase1(), gate=True)
    one = _store(tmp_path / "one.db", kept, probes={"mpich"})
    obj = json.loads(_compare(one, capsys, "--format", "json"))["machine_state"]
    assert obj["cells_gated_on_one_side_only"] == len(SIZES)
    assert obj["sets"]["openmpi"]["probed"] == 0
    n = len(kept["openmpi"])
    assert (f"in {len(SIZES)} of {len(SIZES)} compared cells the probe's gate selected "
            "launches of mpich (set attempts aside, or waited for the reference state before "
            "them) while openmpi launches there were never probed") in obj["warning"]
    assert f"openmpi: none of its {n} launches probed" in obj["lines"][1]
    both = _store(tmp_path / "both.db", _replay(slow, gate=True)[0])
    obj = json.loads(_compare(both, capsys, "--format", "json"))["machine_state"]
    assert obj["cells_gated_on_one_side_only"] == 0 and obj["warning"] is None


def test_a_gate_that_only_waited_on_one_side_is_a_warning_a_probe_alone_is_not(tmp_path,
                                                                               capsys):
    """Review P3's pass-2 detail: the gate also selects by waiting for the reference state
    before a launch. MPICH's launches in the slow state only, nothing set aside, one launch
    waited for (waits = 2, 1.1 s); Open MPI's never probed: a one-sided selection. The same
    launches with only the before-probe's own time in waited_s (waits = 0, as "record"
    stores it) selected nothing: no WARNING."""
    slow = [r for r in _phase1() if not any(_fast(p) for p in (r["before"], r["after"]))]
    kept, n_aside = _replay(slow, gate=True)
    assert n_aside["mpich"] == 0
    for waits, waited_s, cells in ((2, 1.1, len(SIZES)), (0, 0.012, 0)):
        kept["mpich"] = [(row, {**x, "waited_s": waited_s, "waits": waits if k == 0 else 0})
                         for k, (row, x) in enumerate(kept["mpich"])]
        db = _store(tmp_path / f"w{waits}.db", kept, probes={"mpich"})
        obj = json.loads(_compare(db, capsys, "--format", "json"))["machine_state"]
        assert obj["cells_gated_on_one_side_only"] == cells
        assert ("openmpi launches there were never probed" in (obj["warning"] or "")) \
            == bool(cells)


def _junk(rng) -> object:
    return rng.choice([None, True, -1, 0, 1e308, 80.5, 321, "320", [80.0], {"ns": 1}, ""])


def test_mutated_probe_records_still_compare_and_add_up(tmp_path, capsys):
    """60 records mutated at random (seed 31) from real ones: every key dropped, retyped or
    given an out-of-range value; compare prints each set's line and the counts add up."""
    import random

    rng = random.Random(31)
    real = _replay(_phase1(), gate=True)[0]
    kept = {}
    for v, launches in real.items():
        out = []
        for row, extra in launches[:30]:
            rec = dict(extra)
            for key in rng.sample(sorted(rec), rng.randint(0, len(rec))):
                if rng.random() < 0.3:
                    del rec[key]
                else:
                    rec[key] = _junk(rng) if key != "set_aside" else rng.choice(
                        [None, "x", [_junk(rng)], [{}, {}], {"a": 1}])
            out.append((row, rec))
        kept[v] = out
    db = _store(tmp_path / "f.db", kept)
    got = json.loads(_compare(db, capsys, "--format", "json"))["machine_state"]
    for v in kept:
        c = got["sets"][v]
        assert c["probed"] == c["launches"] == 30
        assert c["in_reference_state"] + c["off_reference_state"] + c["not_judged"] == 30
    assert _compare(db, capsys).count("machine state (cache-line probe): ") == 2



def test_the_stored_records_fuzz_surface_finds_nothing_at_a_fixed_seed():
    """bench/bench_fuzz.py's 'stored machine-state records' surface, derandomized: 400
    records of other types, non-finite or dropped values are each read and judged once."""
    import random

    from support import surfaces

    surf = next(s for s in surfaces.SURFACES if s.name == "stored machine-state records")
    t = surf.run(random.Random(7), 200)
    assert t.tried >= 400
    assert (t.crashes, t.misparses, t.contract) == (0, 0, 0), t.examples


REAL = """
[campaign]
name = "probed"
repeats = 2
timeout = 60
verify_transport = false
machine_probe = "record"
[variants.openmpi]
stack = "openmpi"
transport = "shm"
np = 2
bind = "core"
[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
bind = "core"
[benchmarks.pt2pt]
benchmarks = ["PingPong"]
sizes = "0,8"
options = { max_time = 0.005 }
"""


@pytest.mark.mpi
def test_a_real_probed_campaign_says_its_machine_state_under_compare(tmp_path, found_stacks,
                                                                     capsys):
    """Two stacks, two launches each, each reading its own state at start and end
    (machine_probe = "record": nothing set aside): compare says each variant's launches' state from their real
    readings, in the JSON and under the terminal table."""
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.campaign.spec import load

    names = {s.name for s in found_stacks}
    if not {"openmpi", "mpich"} <= names:
        pytest.skip(f"needs Open MPI and MPICH (found {', '.join(sorted(names))})")
    (tmp_path / "c.toml").write_text(REAL)
    with Store(tmp_path / "c.db") as store:
        CampaignRunner(load(tmp_path / "c.toml"), store, found_stacks).run()
    capsys.readouterr()
    assert cli_main(["compare", "--db", str(tmp_path / "c.db"), "--format", "json"]) == 0
    obj = json.loads(capsys.readouterr().out)["machine_state"]
    assert set(obj["sets"]) == {"openmpi", "mpich"}
    for v, got in obj["sets"].items():
        assert got["launches"] == got["probed"] == 2, got
        assert got["set_aside_not_used"] == 0
        assert got["in_reference_state"] + got["off_reference_state"] \
            + got["not_judged"] == 2
        # the core read its own state at each launch's start and end (core/state.c)
        assert got["read_by_the_launch"] == 2
        line = next(ln for ln in obj["lines"] if ln.startswith(f"{v}: "))
        assert line.startswith(f"{v}: 2 launches probed (2 by their own reading at start "
                               "and end): ")
    # the readings are a real probe's: ~80 or ~320 ns on the VM this was written on
    assert obj["reference_ns"] is None or 10 < obj["reference_ns"] < 10_000
    assert cli_main(["compare", "--db", str(tmp_path / "c.db")]) == 0
    assert capsys.readouterr().out.count("machine state (cache-line probe): ") == 2
