"""campaign.machine_probe: the machine-state probe around each local launch - where it
applies, the campaign key, the history file it reads back, and (with real MPI) a launch off
the campaign's reference state set aside and run again, its probes stored with the kept
launch's results; a core launch judged on its own readings (core/state.c) after the same
before-wait as any other launch (no after-probe), one that takes none probed as before; the
gate's wall time outside the launch (after-probe included) in waited_s."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mpibench.campaign import machine_probe
from mpibench.campaign.machine_probe import Attempt, MachineGate, load_history, why_not
from mpibench.campaign.plan import expand
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import load
from mpibench.errors import UsageError
from mpibench.stats.probe import ProbeError, ProbeReading, State, parse_probe
from mpibench.store import Store

CAMPAIGN = """
[campaign]
name = "probed"
repeats = {repeats}
timeout = 60
verify_transport = false
{extra}
[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
bind = "core"
[benchmarks.pt2pt]
benchmarks = ["PingPong"]
sizes = "0"
options = {{ max_time = 0.005 }}
"""


def _spec(tmp_path: Path, extra: str = "", repeats: int = 1, **variant: str):
    text = CAMPAIGN.format(repeats=repeats, extra=extra)
    if "np" in variant:
        text = text.replace("np = 2", f"np = {variant.pop('np')}")
    for k, v in variant.items():
        text = text.replace('bind = "core"', f'bind = "core"\n{k} = {v}')
    (tmp_path / "c.toml").write_text(text)
    return load(tmp_path / "c.toml")


def test_the_campaign_key_takes_three_modes_and_names_a_bad_one(tmp_path):
    assert _spec(tmp_path).machine_probe == "record"          # the default never gates
    assert "machine_probe" not in _spec(tmp_path).to_dict()
    assert _spec(tmp_path, 'machine_probe = "gate"').to_dict()["machine_probe"] == "gate"
    assert _spec(tmp_path, 'machine_probe = "off"').machine_probe == "off"
    for bad in ('"auto"', "true", "1"):
        with pytest.raises(UsageError, match=r"campaign\.machine_probe.*\"record\""):
            _spec(tmp_path, f"machine_probe = {bad}")


def _stack(kind: str, binds: bool) -> SimpleNamespace:
    """The three facts why_not reads of a stack (a data object, not a test double of MPI)."""
    return SimpleNamespace(kind=kind, launcher_kind=f"{kind}-launcher",
                           kind_class=SimpleNamespace(binds_by_default=binds))


def test_it_applies_to_two_bound_ranks_on_this_node_only(tmp_path):
    mpich, ompi = _stack("mpich", False), _stack("openmpi", True)

    def why(stack=mpich, **variant):
        cell = expand(_spec(tmp_path, **variant))[0]
        return why_not(cell.variant, cell.group, stack, batch=False)

    assert why() is None
    assert "two ranks" in why(np="4")
    assert "two ranks" in why(hosts='["a", "b"]')
    cell = expand(_spec(tmp_path))[0]
    assert "batch" in why_not(cell.variant, cell.group, mpich, batch=True)
    assert "not an MPI launch" in why_not(cell.variant, cell.group, _stack("none", False),
                                          batch=False)
    text = (tmp_path / "c.toml").read_text()
    (tmp_path / "c.toml").write_text(text.replace('bind = "core"\n', ""))
    unbound = expand(load(tmp_path / "c.toml"))[0]
    # bind unset: bound where the launcher binds by default (Open MPI), not with Hydra
    assert "bound to cores" in why_not(unbound.variant, unbound.group, mpich, False)
    assert why_not(unbound.variant, unbound.group, ompi, False) is None


def test_gate_applies_per_group_or_records_with_a_reason(tmp_path):
    """"gate" gates a group only when every variant of it is probed; a group with an unbound
    MPICH variant beside a bound one is recorded, not gated, said once."""
    text = CAMPAIGN.format(repeats=1, extra='machine_probe = "gate"').replace(
        "[benchmarks.pt2pt]", '[variants.loose]\nstack = "mpich"\ntransport = "shm"\n'
        "np = 2\n[benchmarks.pt2pt]")
    (tmp_path / "c.toml").write_text(text)
    said: list[str] = []
    runner = CampaignRunner(load(tmp_path / "c.toml"), None, [], log=said.append)
    runner.stacks = {"mpich": _stack("mpich", False)}
    monkey = {}
    runner._gate_of = lambda mode: monkey.setdefault(mode, mode)
    modes = {c.variant.name: runner.machine_gate(c) for c in expand(runner.spec)}
    assert modes == {"mpich": "record", "loose": None}
    assert len(said) == 1 and "group pt2pt is recorded, not gated: variant loose" in said[0]
    (tmp_path / "c.toml").write_text(CAMPAIGN.format(repeats=1, extra='machine_probe = "gate"'))
    runner = CampaignRunner(load(tmp_path / "c.toml"), None, [], log=said.append)
    runner.stacks = {"mpich": _stack("mpich", False)}
    runner._gate_of = lambda mode: mode
    assert [runner.machine_gate(c) for c in expand(runner.spec)] == ["gate"]


def test_history_lines_are_read_back_or_refused_by_file_and_line(tmp_path):
    h = tmp_path / machine_probe.HISTORY
    now = f', "time": {time.time():.3f}}}'
    h.write_text('{"run": "c-1", "when": "before", "median_ns": 80.5, "samples": 900' + now
                 + '\n\n{"run": "c-1", "when": "after", "median_ns": 9e6, "samples": 1' + now
                 + "\n")
    assert load_history(h) == [80.5]           # the starved reading is no reading
    assert load_history(tmp_path / "none.jsonl") == []
    for bad, what in (("{", "not JSON: got '{'"),
                      ('{"run": "c", "when": "after", "median_ns": -1, "samples": 3}',
                       "median_ns: got -1"),
                      ('{"run": "c", "when": "after", "median_ns": Infinity, "samples": 3}',
                       "median_ns: got inf"),
                      ('{"run": "c", "when": "during", "median_ns": 80, "samples": 3}',
                       "when: got 'during'"),
                      ('{"run": "c", "when": "after", "median_ns": 80, "samples": "3"}',
                       "samples: got '3'"), ("[]", "got list"),
                      ("[" * 100000, "not JSON: got '\\[\\[\\["),
                      ('{"run": "c", "when": "after", "median_ns": 80, "samples": true}',
                       "samples: got True")):
        h.write_text('{"run": "c", "when": "before", "median_ns": 80, "samples": 90}\n'
                     + bad + "\n")
        with pytest.raises(UsageError, match=f"^{h}:2: {what}"):
            load_history(h)


def test_the_history_is_per_host_and_each_new_line_says_host_time_and_boot(tmp_path,
                                                                          monkeypatch):
    """A history copied from another host (or written there into a shared directory) must
    not give this host its reference: only this host's lines are read; each new line
    carries this host, the time and the boot."""
    monkeypatch.setattr(socket, "gethostname", lambda: "here")
    monkeypatch.setattr(machine_probe, "boot_id", lambda: "boot-a")
    h = tmp_path / machine_probe.HISTORY
    other = {"run": "c-1", "when": "before", "median_ns": 320.0, "samples": 900,
             "host": "elsewhere", "time": time.time()}
    h.write_text((json.dumps(other) + "\n") * 5
                 + json.dumps({**other, "median_ns": 81.0, "host": "here"}) + "\n")
    assert load_history(h) == [81.0]
    assert load_history(h, host="elsewhere") == [320.0] * 5
    gate = MachineGate(tmp_path, "gate")
    gate.record("c-2", "after", _r(79.0))
    rec = json.loads(h.read_text().splitlines()[-1])
    assert rec["host"] == "here" and rec["time"] > 1.7e9 and rec["boot"] == "boot-a"
    assert gate.history == [(81.0, "probe"), (79.0, "probe")]
    assert load_history(h) == [81.0, 79.0]
    for bad, what in (('"host": 3', "host: got 3"), ('"time": NaN', "time: got nan"),
                      ('"time": "now"', "time: got 'now'"), ('"boot": 1', "boot: got 1")):
        h.write_text('{"run": "c", "when": "after", "median_ns": 80, "samples": 3, '
                     + bad + "}\n")
        with pytest.raises(UsageError, match=f"^{h}:1: {what}"):
            load_history(h)


def test_the_history_ages_out_old_lines_other_boots_and_lines_without_a_time(tmp_path):
    """A re-run days later, or after a reboot (the VM's states follow where the host runs
    its vCPUs), starts its own reference instead of inheriting an old majority."""
    now = 1.8e9
    day = machine_probe.HISTORY_MAX_AGE_S
    line = {"run": "c", "when": "before", "samples": 900, "host": "h"}
    cases = [(320.0, {"time": now - day - 60}),             # too old
             (321.0, {"time": now - day + 60, "boot": "b1"}),  # recent, this boot
             (322.0, {"time": now - 5, "boot": "b0"}),       # another boot
             (323.0, {}),                                    # no time: cannot be aged
             (324.0, {"time": now + 2 * 3600}),              # stamped in the future
             (325.0, {"time": now - 5})]                     # recent, no boot: by time
    h = tmp_path / machine_probe.HISTORY
    h.write_text("".join(json.dumps({**line, "median_ns": ns, **extra}) + "\n"
                         for ns, extra in cases))
    assert load_history(h, host="h", now=now, boot="b1") == [321.0, 325.0]
    # where this machine has no boot id, lines are aged by time only
    assert load_history(h, host="h", now=now, boot="") == [321.0, 322.0, 325.0]
    assert load_history(h, host="h", now=now + 2 * day, boot="b1") == []


def _valid_line(line: str) -> bool:
    """Whether a raw probe line (machine-probe.txt) is a valid reading."""
    try:
        return parse_probe(line, where="machine-probe.txt").valid
    except ProbeError:
        return False


def _r(ns: float, samples: int = 500) -> ProbeReading:
    return ProbeReading(ns, ns, ns, samples, (0, 1))


def test_keeps_sets_aside_off_launches_until_the_retries_are_spent(tmp_path):
    gate = MachineGate(tmp_path, "gate")
    gate.history = [(320.0, "probe")] * 6 + [(80.0, "probe")] * 2
    off, on = Attempt(_r(80.0), _r(82.0)), Attempt(_r(318.0), _r(330.0))
    assert gate.judge(off) is State.OFF and gate.judge(on) is State.REFERENCE
    assert [gate.keeps(off, k) for k in range(machine_probe.RETRIES + 1)] == \
        [False] * machine_probe.RETRIES + [True]
    assert gate.keeps(on, 0)
    assert gate.keeps(Attempt(_r(80.0, samples=3), None), 0)     # no reading: kept
    assert MachineGate(tmp_path, "record").keeps(off, 0)           # "record" never gates
    # the stored record says how often the gate probed again, waiting for the state (the
    # before-probes' lines less one); waited_s also holds the first probe's own time
    assert Attempt(_r(80.0), None, 0.015, raw=["p"]).summary()["waits"] == 0
    assert Attempt(_r(80.0), None, 1.2, raw=["p", "p", "p"]).summary()["waits"] == 2


def test_each_reader_is_judged_against_its_own_finer_state(tmp_path, monkeypatch):
    """Stop 34: the core's own readings separate a ~64 ns state from the ~90 ns one (MPICH's
    1 B PingPong 0.11 vs 0.19 us), the probe program reads that machine 55-90 ns without a
    valley. A core launch at 64 ns is off; an IMB launch probed at 60 ns is not; the wait
    (the probe program's readings) ends at 60 ns; reference() names the reference the
    attempt was held to (its reader's), whatever was judged last. History lines written by the core say source "launch"
    and are read back as that reader."""
    monkeypatch.setattr(machine_probe, "time", _Clock())
    gate = MachineGate(tmp_path, "gate")
    launch = [(64.0 + 0.2 * k, "launch") for k in range(12)] + \
        [(76.0 + 0.5 * k, "launch") for k in range(60)]
    gate.history = launch + [(55.0 + k, "probe") for k in range(36)]
    core = Attempt(_r(64.5), _r(65.0), reading="launch")
    imb = Attempt(_r(60.0), _r(88.0))
    assert gate.judge(core) is State.OFF and gate.reference(core.reader).lo > 67.0
    assert gate.judge(imb) is State.REFERENCE and gate.reference(imb.reader).lo < 60.0
    assert gate.reference(core.reader).lo > 67.0         # not the last judged one's
    assert gate.judge(Attempt(_r(80.0), _r(90.0), reading="launch")) is State.REFERENCE
    gate.read = lambda: (_r(60.0), "line")
    assert gate.wait_for_reference()[1] == 0.0
    gate.record("c-1", "before", _r(64.0), "launch")
    assert machine_probe.load_readings(gate.history_path)[-1] == (64.0, "launch")
    # the stored record carries the bounds that judged it (review R5)
    extra = machine_probe.probe_extra(core, gate.judge(core), gate.reference(core.reader), [])
    assert extra["state"] == "off" and 64.5 < extra["reference_lo_ns"] < 76.0
    assert extra["reference_hi_ns"] > extra["reference_ns"] > extra["reference_lo_ns"]


@pytest.mark.mpi
def test_a_launch_off_the_reference_state_is_set_aside_and_run_again(tmp_path, found_stacks,
                                                                     monkeypatch):
    """A history whose reference state no real reading here is in (10 us round trips): each
    launch is set aside RETRIES times and the last attempt kept, marked "off"; every
    attempt's readings are in the history and the kept launch's results carry them all. The
    core reads its own state, yet every attempt, its first one too, waits for the probe
    program's reference first (here in vain: WAIT_S); every attempt is judged on the
    launch's own readings."""
    monkeypatch.setattr(machine_probe, "WAIT_S", 0.2)
    flushed: list[str] = []
    fsync = os.fsync

    def rec_fsync(fd):
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", rec_fsync)
    spec = _spec(tmp_path, 'machine_probe = "gate"', repeats=2)
    fake = [{"run": "seed", "when": "before", "median_ns": 10000.0, "samples": 500,
             "time": time.time()}] * 20
    (tmp_path / machine_probe.HISTORY).write_text("".join(json.dumps(f) + "\n" for f in fake))
    said: list[str] = []
    with Store(tmp_path / "c.db") as store:
        CampaignRunner(spec, store, found_stacks, log=said.append).run()
    with sqlite3.connect(tmp_path / "c.db") as con:
        rows = con.execute("SELECT r.id, x.extra_json FROM runs r JOIN results x "
                           "ON x.run_id = r.id WHERE r.status = 'done'").fetchall()
    assert len(rows) == 2
    lines = (tmp_path / machine_probe.HISTORY).read_text().splitlines()
    assert len(lines) == 20 + 2 * 2 * (machine_probe.RETRIES + 1)
    for run_id, extra in rows:
        mp = json.loads(extra)["machine_probe"]
        aside = sorted(p.name for p in (tmp_path / "runs").glob(f"{run_id}.set-aside-*"))
        assert len(aside) == len(mp["set_aside"])
        # a real probe here is ~80 or ~320 ns: off a 10 us reference unless it had no reading
        readable = [a for a in mp["set_aside"] if a["before_ns"] or a["after_ns"]]
        assert len(readable) == len(mp["set_aside"])
        assert mp["state"] in ("off", "unknown") and mp["reference_ns"] == 10000.0
        if mp["before_ns"] and mp["after_ns"]:
            assert mp["state"] == "off" and len(aside) == machine_probe.RETRIES
        for d in aside:
            assert (tmp_path / "runs" / d / "machine-probe.txt").read_text().count(
                '"record":"probe"') >= 1
        # every attempt's raw output was flushed where it was written, the set-aside ones'
        # before their directory was renamed aside (files.durable_together)
        raw = (tmp_path / "runs" / run_id).resolve()
        for name in ("core.jsonl", "stdout.txt", "stderr.txt"):
            assert flushed.count(str(raw / name)) == len(aside) + 1, name
        attempts = [*mp["set_aside"], mp]
        assert {a["reading"] for a in attempts} == {"launch"}
        # each attempt waits (probes again) unless its first wait-probe, on a loaded
        # machine, got no valid reading (a starved probe ends the wait: nothing to judge)
        # or took the whole WAIT_S itself (a slow but valid probe: the wait is over)
        for a, d in zip(attempts, [*aside, run_id], strict=True):
            first = (tmp_path / "runs" / d / "machine-probe.txt").read_text().splitlines()[0]
            assert a["waited_s"] > 0 and (a["waits"] >= 1 or not _valid_line(first)
                                          or a["waited_s"] >= machine_probe.WAIT_S)
    history = [json.loads(ln) for ln in lines[20:]]
    assert {h.get("source") for h in history} == {"launch"}
    assert any("set aside (machine-state probe" in m for m in said), said
    _bench_reads_the_probes(tmp_path / "c.db", rows)


def _bench_reads_the_probes(db: Path, rows) -> None:
    """bench/bench_time_to_decision.py reads these records back: every kept launch's, the
    set-aside count in its line, and the set-aside launches' seconds in the launch time."""
    from support.surfaces import load_bench_ttd

    ttd = load_bench_ttd()
    probes = ttd.machine_probes(db)
    assert set(probes) == {rid for rid, _ in rows}
    aside = sum(len(p["set_aside"]) for p in probes.values())
    line = ttd.probe_line(db, "core")
    assert line.startswith(f"machine-state probe, core: {len(rows)} launches kept")
    assert f"; {aside} set aside and run again" in line
    with Store(db, readonly=True) as store:
        kept = sum(r["elapsed"] or 0 for r in store.runs(status="done"))
    spent = sum(a.get("elapsed_s") or 0 for p in probes.values() for a in p["set_aside"])
    assert ttd.launch_seconds(db) == pytest.approx(kept + spent)


def test_the_ttd_bench_gives_both_tools_one_history(tmp_path):
    """bench_time_to_decision.share_history: what one tool's gate records, the other's
    reads back, so both hold their launches to one reference state."""
    from support.surfaces import load_bench_ttd

    core, imb = tmp_path / "core", tmp_path / "imb"
    core.mkdir()
    imb.mkdir()
    load_bench_ttd().share_history(core, imb)
    MachineGate(imb, "gate").record("c-1", "before", _r(71.0))
    MachineGate(core, "gate").record("c-2", "after", _r(75.0), "launch")
    assert MachineGate(core, "gate").history == MachineGate(imb, "gate").history \
        == [(71.0, "probe"), (75.0, "launch")]


class _Clock:
    """time.monotonic / time.sleep for the gate: sleeping moves the clock, nothing else."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def time(self):
        return 1.8e9 + self.now

    def sleep(self, s):
        self.now += s


def _finer_gate(tmp_path) -> MachineGate:
    """A gate whose core readings show a ~64 ns state beside ~76-106 ns; the probe
    program's readings 55-90 ns (test_each_reader_is_judged_against_its_own_finer_state)."""
    gate = MachineGate(tmp_path, "gate")
    gate.history = [(64.0 + 0.2 * k, "launch") for k in range(12)] + \
        [(76.0 + 0.5 * k, "launch") for k in range(60)] + [(55.0 + k, "probe") for k in range(36)]
    return gate


def test_a_retry_pauses_after_the_second_miss_the_wait_cannot_see(tmp_path, monkeypatch):
    """Review R12: a core launch off its finer state (64 ns) is in the state the probe
    program's wait accepts, so the wait returns at once and the retry lands in the same
    state. The first retry still goes at once; the one after a second such miss pauses
    PAUSE_S (counted as a wait, in waited_s and paused_s). A miss the wait can see (off the
    coarse state) never pauses; the next launch starts afresh; the pauses share
    WAIT_TOTAL_S with the waits."""
    clock = _Clock()
    monkeypatch.setattr(machine_probe, "time", clock)
    gate = _finer_gate(tmp_path)
    gate.read = lambda: (_r(70.0), "line")          # the probe program: in its reference
    core = Attempt(_r(64.5), _r(65.0), reading="launch")
    assert gate.judge(core) is State.OFF and not gate.sees(core)

    def attempts(miss: Attempt) -> list[Attempt]:
        out = []
        for k in range(machine_probe.RETRIES + 1):
            a = gate.start(own=True, attempt=k)
            out.append(a)
            a.before, a.after = miss.before, miss.after
            if gate.keeps(a, k):
                return out
        raise AssertionError("kept nothing")

    first = attempts(core)
    assert [a.paused_s for a in first] == [0.0, 0.0, machine_probe.PAUSE_S]
    assert [a.waits for a in first] == [0, 0, 1] and first[2].waited_s >= machine_probe.PAUSE_S
    assert first[2].summary()["paused_s"] == machine_probe.PAUSE_S
    assert "paused_s" not in first[1].summary()
    # a miss the wait sees (the coarse state, 320 ns, both readers) is waited for instead
    slow = Attempt(_r(320.0), _r(330.0), reading="launch")
    assert gate.sees(slow) and gate.sees(Attempt(_r(30.0), _r(31.0)))
    assert [a.paused_s for a in attempts(slow)] == [0.0, 0.0, 0.0]
    # pauses and waits share the invocation's WAIT_TOTAL_S
    gate.waited = machine_probe.WAIT_TOTAL_S - 3.0
    assert attempts(core)[2].paused_s == 3.0
    assert attempts(core)[2].paused_s == 0.0
    # "record" never pauses (nothing is set aside)
    rec = MachineGate(tmp_path, "record")
    rec.history, rec.read = gate.history, gate.read
    assert rec.keeps(core, 0) and rec.unseen == 0


def test_the_wait_for_the_reference_is_bounded_per_launch_and_per_invocation(tmp_path,
                                                                          monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(machine_probe, "time", clock)
    gate = MachineGate(tmp_path, "gate")
    gate.history = [(320.0, "probe")] * 10
    reads = []
    gate.read = lambda: (reads.append(clock.now) or _r(80.0), "line")
    step, per, total = machine_probe.WAIT_STEP_S, machine_probe.WAIT_S, machine_probe.WAIT_TOTAL_S
    n = int(total / per) + 2           # more launches than the invocation's total allows
    waits = [gate.wait_for_reference()[1] for _ in range(n)]
    assert waits[0] == pytest.approx(per) and sum(waits) == pytest.approx(total)
    assert waits[-1] == 0.0 and len(reads) == int(total / step) + n
    # in the reference state at once: no wait, and nothing counted against the total
    gate2 = MachineGate(tmp_path, "gate")
    gate2.history = [(320.0, "probe")] * 10
    gate2.read = lambda: (_r(318.0), "line")
    assert gate2.wait_for_reference()[1] == 0.0 and gate2.waited == 0.0
    # "record" never waits
    gate3 = MachineGate(tmp_path, "record")
    gate3.history, gate3.read = [(320.0, "probe")] * 10, lambda: (_r(80.0), "line")
    assert gate3.wait_for_reference()[1] == 0.0


def test_the_after_probe_and_the_waits_are_in_waited_s(tmp_path, monkeypatch):
    """waited_s is all the gate's wall time outside the launch: the before-probe, the waits
    and the after-probe (stop 32 left the after-probe out); a launch that reads its own
    state (the core) costs the before-probe alone under "gate" (stop 36) and no probe under
    "record", one whose output holds no reading gets the after-probe."""
    clock = _Clock()
    monkeypatch.setattr(machine_probe, "time", clock)
    gate = MachineGate(tmp_path, "gate")
    gate.history = [(320.0, "probe")] * 10
    probe_s = 0.0085

    def read():
        clock.now += probe_s
        return _r(318.0), "line"
    gate.read = read
    a = gate.start(own=False, attempt=0)
    gate.finish(a, None, 0.3)
    assert a.waited_s == pytest.approx(2 * probe_s) and a.reading == "probes"
    assert (a.waits, a.raw) == (0, ["line", "line"])
    # the core's own readings: no probe before or after
    jsonl = tmp_path / "core.jsonl"
    state = {"record": "probe", "probe": "cacheline-ranks", "version": 1, "cpus": [0, 1],
             "batch": 16, "samples": 600, "median_ns": 321.0, "q1_ns": 300.0,
             "q3_ns": 330.0, "min_ns": 250.0, "elapsed_ms": 1.25}
    jsonl.write_text(json.dumps({"record": "header", "machine_state": state},
                                separators=(",", ":")) + "\n"
                     + json.dumps({"record": "footer", "machine_state": state},
                                  separators=(",", ":")) + "\n")
    # the core's own readings: one probe before (the wait for the coarse state, as for
    # any launch), none after; its own readings judge it
    own = gate.start(own=True, attempt=0)
    gate.finish(own, jsonl, 0.3)
    assert own.waited_s == pytest.approx(probe_s) and own.reading == "launch"
    assert own.waits == 0 and own.before.median_ns == own.after.median_ns == 321.0
    assert gate.judge(own) is State.REFERENCE and len(own.raw) == 3
    # "record" sets nothing aside: a core launch costs no probe at all there
    rec = MachineGate(tmp_path, "record")
    rec.history, rec.read = gate.history, read
    t0 = clock.now
    quiet = rec.start(own=True, attempt=0)
    rec.finish(quiet, jsonl, 0.3)
    assert clock.now == t0 and quiet.waited_s == 0.0 and len(quiet.raw) == 2
    # a retry of such a launch waits for the reference first, still judged on its readings
    retry = gate.start(own=True, attempt=1)
    gate.finish(retry, jsonl, 0.3)
    assert retry.waited_s == pytest.approx(probe_s) and retry.reading == "launch"
    # the core took no reading (--state-ms 0, an older core): the after-probe judges it
    jsonl.write_text('{"record":"header","machine_state":null}\n{"record":"footer"}\n')
    none = gate.start(own=True, attempt=0)
    gate.finish(none, jsonl, 0.3)
    assert none.reading == "probes" and none.before.median_ns == 318.0
    assert none.waited_s == pytest.approx(2 * probe_s)
    quiet = rec.start(own=True, attempt=0)
    rec.finish(quiet, jsonl, 0.3)
    assert quiet.reading == "after-probe" and quiet.before is None


@pytest.mark.parametrize("text, start, end", [
    ("", None, None),
    ('{"record":"header","machine_state":{"record":"probe","version":1}}\n', None, None),
    ('{"record":"header","machine_state":[1]}\n{"record":"footer","machine_state":7}\n',
     None, None),
    ('{"record":"header","machine_state":{"record":"probe","version":1,"cpus":[0,1],'
     '"batch":16,"samples":300,"median_ns":80,"q1_ns":70,"q3_ns":90,"min_ns":60}}\n'
     '{"record":"footer","status":"timeout","machine_state":null}\n', 80.0, None),
])
def test_launch_readings_takes_what_is_a_reading_and_nothing_else(tmp_path, text, start, end):
    """A reading that is not a probe record counts as none (never an exception); a file
    with neither reading is no reading at all (the gate then probes)."""
    f = tmp_path / "core.jsonl"
    f.write_text(text)
    got = machine_probe.launch_readings(f)
    if start is None and end is None:
        assert got is None
    else:
        assert (got[0] and got[0].median_ns, got[1] and got[1].median_ns) == (start, end)
    assert machine_probe.launch_readings(tmp_path / "missing.jsonl") is None
    assert machine_probe.launch_readings(None) is None


@pytest.mark.mpi
def test_a_core_launch_is_probed_before_only_and_judged_on_its_own(tmp_path, found_stacks,
                                                                  monkeypatch):
    """Real launches: the probe program runs before every attempt of a core launch (the
    wait for the coarse state, as for IMB; stop 36) and never after it (its own readings
    judge it); with state_ms = 0 it runs before and after, as for IMB."""
    calls: list[str] = []
    real = MachineGate.read
    monkeypatch.setattr(MachineGate, "read",
                        lambda self: (calls.append("probe"), real(self))[1])
    spec = _spec(tmp_path, 'machine_probe = "gate"', repeats=2)
    with Store(tmp_path / "c.db") as store:
        CampaignRunner(spec, store, found_stacks).run()
    probes = _kept_probes(tmp_path / "c.db")
    assert len(probes) == 2
    every = [a for mp in probes for a in [*mp["set_aside"], mp]]
    assert all(a["reading"] == "launch" and a["waited_s"] > 0 for a in every)
    # probes only before each attempt: one, and one more per wait
    assert len(calls) == sum(a["waits"] + 1 for a in every)
    # state_ms = 0: no reading of its own, probed before and after like any other tool
    calls.clear()
    off = tmp_path / "off"
    off.mkdir()
    _spec(off, 'machine_probe = "gate"', repeats=1)
    toml = off / "c.toml"
    toml.write_text(toml.read_text().replace("max_time = 0.005", "max_time = 0.005, "
                                             "state_ms = 0"))
    spec = load(toml)
    with Store(off / "c.db") as store:
        CampaignRunner(spec, store, found_stacks).run()
    (mp,) = _kept_probes(off / "c.db")
    assert mp["reading"] == "probes" and mp["waited_s"] > 0
    assert len(calls) >= 2 * (1 + len(mp["set_aside"]))


@pytest.mark.mpi
def test_the_core_reads_its_state_only_where_a_gate_reads_it(tmp_path, found_stacks):
    """machine_probe = "off": the harness passes --state-ms 0, the core takes no reading
    (review R12: on oversubscribed CPUs an unread reading cost up to its 300 ms cap)."""
    spec = _spec(tmp_path, 'machine_probe = "off"', repeats=1)
    with Store(tmp_path / "c.db") as store:
        CampaignRunner(spec, store, found_stacks).run()
    (jsonl,) = (tmp_path / "runs").glob("*/core.jsonl")
    head = json.loads(jsonl.read_text().splitlines()[0])
    assert head["options"]["state_ms"] == 0 and head["machine_state"] is None
    assert "--state-ms" in head["argv"]


def _kept_probes(db: Path) -> list[dict]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT x.run_id, x.extra_json FROM runs r JOIN results x "
                           "ON x.run_id = r.id WHERE r.status = 'done' "
                           "GROUP BY x.run_id").fetchall()
    return [json.loads(extra)["machine_probe"] for _, extra in rows]


def test_a_probe_that_cannot_be_built_leaves_the_campaign_unprobed_with_one_line(tmp_path,
                                                                              monkeypatch):
    from mpibench.campaign import runner as runner_mod
    from mpibench.errors import BuildError

    def broken():
        raise BuildError("building the machine-state probe in core/probe failed\ncc: x")
    monkeypatch.setattr(runner_mod, "probe_program", broken)
    said: list[str] = []
    runner = CampaignRunner(_spec(tmp_path, 'machine_probe = "gate"'), None, [],
                            log=said.append)
    runner.stacks = {"mpich": _stack("mpich", False)}
    cells = expand(runner.spec)
    assert [runner.machine_gate(c) for c in cells + cells] == [None, None]
    assert said == ["warning: machine_probe: building the machine-state probe in core/probe "
                    "failed; launches are not probed in this run"]
    # an unreadable history: the same
    monkeypatch.setattr(runner_mod, "probe_program", lambda: Path("/bin/true"))
    (tmp_path / machine_probe.HISTORY).write_text("{\n")
    said.clear()
    runner = CampaignRunner(_spec(tmp_path), None, [], log=said.append)
    runner.stacks = {"mpich": _stack("mpich", False)}
    assert runner.machine_gate(cells[0]) is None
    assert len(said) == 1 and f"{tmp_path / machine_probe.HISTORY}:1: not JSON" in said[0]
