"""The machine-state probe around each local launch, and its gate (`machine_probe` in the
campaign's [campaign] table: "record", the default, "gate" or "off").

Before and after a launch the local backend runs core/probe/mpibench-cacheline (the two CPUs'
cache-line round trip, no MPI; stats/probe.py says why) and stores both readings with the
launch's results (each result's extra "machine_probe"), and every reading in
machine-probe.jsonl beside the campaign file. Under "gate" a launch whose probe is off the
campaign's reference state (stats.probe.reference: the state most of its launches' probes
found so far; it can move when the machine changes state for good) is set aside - its run
directory renamed to <run dir>.set-aside-K, its probes and launch seconds recorded with the
launch that replaces it - and run again, at most RETRIES times; before each attempt the
gate waits (probing every WAIT_STEP_S, at most WAIT_S, at most WAIT_TOTAL_S in one
invocation) for the reference state; a retry after the second miss that wait cannot see
(the core's finer state, which the probe program reads as the reference: PAUSE_S) pauses
first. A launch still off it after the retries is kept and marked (state "off"). A launch
that reads its own state (mpibench-core, core/state.c) is judged on its own start and end
readings instead of the probes; under "gate" it still waits for the probe program's state
before each attempt (start), as any launch. "record" probes and records, never waits, never
sets aside.

Where it applies: the local backend, an MPI benchmark, np = 2 on this node (no hosts,
hostfile or nodes > 1), ranks bound to cores (bind = "core", or unset where the launcher
binds by default): the probe uses the first two CPUs this process may run on, which are the
cores such a pair is bound to on a 2-CPU node (Open MPI's and Hydra's by-core placement).
Elsewhere nothing is probed. "gate" gates a group only when every variant of it can be
probed (the runner decides per group and logs why not): a selection on one side of a
comparison would bias it; such a group is recorded only.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpibench.errors import BuildError, UsageError
from mpibench.files import write_file
from mpibench.process import run_command
from mpibench.stats.probe import (
    MIN_SAMPLES,
    ProbeError,
    ProbeReading,
    Reference,
    State,
    judge_launch,
    parse_probe,
    probe_record,
    reader_of,
    reader_reference,
)

if TYPE_CHECKING:
    from mpibench.campaign.spec import Group
    from mpibench.execute import Variant
    from mpibench.stacks import Stack

# each probe's sampling time (ms). 1 ms still gives it its 200 samples in either state
# (200 x 16 round trips of ~80 or ~320 ns: 0.3-1 ms); back to back with a 3 ms probe it read
# the same state in 399 of 400 pairs, none starved, at load ~10, and cost 8.5 ms of wall
# time against 20.0 (median, spawn included; `bench/bench_probe_gate.py --pairs 400`, stop
# 32). Two probes per launch: ~23 ms less per launch of ~0.3 s.
PROBE_MS = 1.0
PROBE_TIMEOUT_S = 10.0
# before an attempt: wait up to this long for the reference state, then launch anyway (a
# launch costs more than a wait; the state lasts seconds to minutes, phase-1 note). Stop 32
# tried 10 s: the replay of TTD runs 32-35, 37, 40, 41 (`bench/bench_probe_gate.py --ttd
# DIR...`) put it at 20% less waiting (563 -> 452 s) for 2 more of 768 launches kept off the
# reference, and the real run-50 (load 15-18) kept 3 of IMB's 20 launches off; a launch off
# the state costs a comparison more than the seconds saved, so 20 s stays
# (docs/statistics.md "The machine-state probe", the gate's wall time).
WAIT_S = 20.0
WAIT_STEP_S = 0.5
# all the waiting of one campaign invocation: a machine that changed state for good would
# otherwise cost WAIT_S per launch until the reference follows (run-34: 116 s in one run)
WAIT_TOTAL_S = 60.0
RETRIES = 2             # a launch set aside is run again at most this often
# A launch judged on its own readings (the core's, core/state.c) can be off a finer state
# the probe program does not see (stop 34's ~64-78 ns beside ~100 ns; review R12): the wait
# before its retry accepts the probe's reading at once and the retry lands in the same
# state. The stored demo and TTD runs (`bench/bench_probe_gate.py --stores DIR...`, stop 35)
# put the core's next own reading back in the reference state 0.5 s after such a miss in
# 4% (demo A/A, ~105 ns; 50 misses) and 76% (run-approx-1; 100), 10 s after in 54% and 93%:
# the state is a blip in one run and lasts 10-20 s in the other. So the first retry after
# an unseen miss goes at once (cheap for a blip) and a retry after a second one pauses
# PAUSE_S first (counted in WAIT_TOTAL_S, like the waits) instead of launching into it again.
PAUSE_S = 10.0
HISTORY = "machine-probe.jsonl"
# a history line: {"run": id, "when": "before"|"after", "median_ns": x, "samples": n,
# "host": socket.gethostname(), "time": unix seconds, "boot": the kernel's boot id}. The
# history ages: a line counts only when written on this host, in this boot (where the line
# and this machine name one) and at most HISTORY_MAX_AGE_S ago; a line without a time
# (written before stop 31's P9) cannot be aged and is ignored. Why: a VM's states follow
# where the host runs its vCPUs, which a reboot or a move to another host changes, and a
# re-run days later should not inherit an old majority.
HISTORY_MAX_AGE_S = 24 * 3600.0
# a line stamped this far in the future (a clock set back, a copied file) is not "recent"
_FUTURE_S = 3600.0
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_HISTORY_KEYS = {"run": str, "when": str, "median_ns": (int, float), "samples": int}
_OPTIONAL_KEYS = {"host": str, "time": (int, float), "boot": str, "source": str}


def boot_id() -> str | None:
    """This kernel's boot id (Linux), or None where it cannot be read."""
    try:
        return _BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def probe_program() -> Path:
    """The probe, built once per source (cc, no MPI) into the build cache."""
    from mpibench.build import source_hash, source_root, staged_build
    from mpibench.stacks import cache_dir

    src = source_root() / "core" / "probe"
    final = cache_dir() / "build" / f"cacheline-{source_hash(src)}"
    program = final / "mpibench-cacheline"
    if program.exists():
        return program
    with staged_build(final, lambda d: (d / program.name).exists()) as tmp:
        if tmp is None:
            return program
        res = run_command(["make", "-C", str(src), f"BUILD={tmp}"], timeout=120,
                          die_with_parent=True)
        if not res.ok or not (tmp / program.name).exists():
            raise BuildError(f"building the machine-state probe in {src} failed",
                             log=(res.stdout + res.stderr)[-4000:])
    return program


def why_not(v: Variant, group: Group, stack: Stack, batch: bool) -> str | None:
    """Why the probe says nothing about a launch of variant v in group, or None where it
    applies. Ranks count as bound to cores with bind = "core", or with bind unset where the
    stack's own launcher binds by default (Open MPI's mpirun at np 2; runner.binding_notes)."""
    if batch:
        return "a batch scheduler runs the launch on another node"
    if stack.kind == "none" or not group.kind_class.mpi:
        return "not an MPI launch"
    if v.hosts or v.hostfile or (v.nodes or 1) > 1 or v.np != 2:
        return "not two ranks on this node"
    default_bound = v.bind is None and stack.kind_class.binds_by_default \
        and (not v.launcher or v.launcher == stack.launcher_kind)
    if v.bind != "core" and not default_bound:
        return 'ranks not bound to cores (bind = "core")'
    if len(os.sched_getaffinity(0)) < 2:
        return "this process may run on one CPU only"
    return None


def load_history(path: Path, host: str | None = None, now: float | None = None,
                 boot: str | None = None) -> list[float]:
    """The valid probe medians of a history file (every launch's before and after, kept or
    set aside, whoever read them) that still count; load_readings says which."""
    return [ns for ns, _ in load_readings(path, host, now, boot)]


def load_readings(path: Path, host: str | None = None, now: float | None = None,
                  boot: str | None = None) -> list[tuple[float, str]]:
    """The valid readings of a history file that still count (host, default this one; boot,
    default this boot; now, default the clock; see HISTORY_MAX_AGE_S), each with its reader:
    "launch" (the core's own, core/state.c) or "probe" (the probe program). Every line is
    checked, whichever host wrote it. Raises UsageError naming the file, line and value of a
    malformed line."""
    host = socket.gethostname() if host is None else host
    now = time.time() if now is None else now
    boot = boot_id() if boot is None else boot
    out: list[tuple[float, str]] = []
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if line.strip():
            rec = _history_record(path, n, line)
            if rec["samples"] >= MIN_SAMPLES and _counts(rec, host, now, boot):
                out.append((float(rec["median_ns"]), reader_of(rec.get("source", "probe"))))
    return out


def _counts(rec: dict, host: str, now: float, boot: str | None) -> bool:
    """Whether a well-formed history line still counts: this host, this boot, recent."""
    if rec.get("host", host) != host or "time" not in rec:
        return False
    if boot and rec.get("boot", boot) != boot:
        return False
    return -_FUTURE_S <= now - rec["time"] <= HISTORY_MAX_AGE_S


def _history_record(path: Path, n: int, line: str) -> dict:
    """One history line parsed and checked; UsageError naming file:line and the value."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):      # RecursionError: arrays nested too deep
        raise UsageError(f"{path}:{n}: not JSON: got {line[:80]!r}; expected a "
                         'machine-probe history line {"run": ..., "when": ..., '
                         '"median_ns": ..., "samples": ..., "host": ..., "time": ...} '
                         "(delete the file to start the campaign's reference afresh)"
                         ) from None
    bad = _history_problem(rec)
    if bad:
        raise UsageError(f"{path}:{n}: {bad}; expected keys run (a string), when "
                         '("before" or "after"), median_ns (a positive finite number), '
                         "samples (an integer) and optionally host (a string), time "
                         "(unix seconds) and boot (a string)")
    return rec


def _history_problem(rec: object) -> str | None:
    """What is wrong with one history record (naming the key and value), or None."""
    if not isinstance(rec, dict):
        return f"got {type(rec).__name__}, not an object"
    for k, t in _HISTORY_KEYS.items():
        if type(rec.get(k)) not in (t if isinstance(t, tuple) else (t,)):
            return f"{k}: got {rec.get(k)!r:.40}"
    for k, t in _OPTIONAL_KEYS.items():
        if k in rec and type(rec[k]) not in (t if isinstance(t, tuple) else (t,)):
            return f"{k}: got {rec[k]!r:.40}"
    if "time" in rec and not math.isfinite(rec["time"]):
        return f"time: got {rec['time']!r}"
    if rec["when"] not in ("before", "after"):
        return f"when: got {rec['when']!r:.40}"
    if not (math.isfinite(rec["median_ns"]) and rec["median_ns"] > 0):
        return f"median_ns: got {rec['median_ns']!r}"
    return None


def reads_own_state(jsonl: Path | None, options: dict | None) -> bool:
    """Whether a launch takes its own machine-state readings: mpibench-core (it writes
    `jsonl`) unless its state_ms option is 0 (core/state.c)."""
    return jsonl is not None and (options or {}).get("state_ms", 1.0) != 0


def launch_readings(jsonl: Path | None) -> tuple[ProbeReading | None,
                                                  ProbeReading | None, list[str]] | None:
    """A core launch's own readings: its header's and footer's machine_state (start, end;
    None where that one is missing, null or unreadable) and their JSON for the raw record,
    or None when it has neither (no output, --state-ms 0, a core before core/state.c, ranks
    0 and 1 on different nodes)."""
    try:
        lines = jsonl.read_text(errors="replace").splitlines() if jsonl else []
    except OSError:
        return None
    got: dict[str, ProbeReading | None] = {}
    raw: list[str] = []
    for kind in ("header", "footer"):
        line = next((ln for ln in lines if ln.startswith(f'{{"record":"{kind}"')), None)
        got[kind] = _own_reading(line, f"{jsonl}: {kind}", raw)
    if got["header"] is None and got["footer"] is None:
        return None
    return got["header"], got["footer"], raw


def _own_reading(line: str | None, where: str, raw: list[str]) -> ProbeReading | None:
    """One record's machine_state as a reading (its JSON appended to raw), or None."""
    try:
        rec = json.loads(line).get("machine_state") if line else None
    except (ValueError, RecursionError, AttributeError):
        return None
    if rec is None:
        return None
    raw.append(json.dumps(rec, separators=(",", ":")))
    try:
        return probe_record(rec, where)
    except ProbeError:
        return None


@dataclass
class Attempt:
    """One launch attempt's probes; set aside or kept."""
    before: ProbeReading | None
    after: ProbeReading | None
    # the gate's wall time outside the launch: its probes (the after-probe included) and
    # waits; for a launch judged on its own readings the before-probe and waits alone (0
    # under "record", where it is not probed)
    waited_s: float = 0.0
    elapsed_s: float | None = None
    raw: list[str] = field(default_factory=list)
    # how often the gate probed again before the launch because the machine was off the
    # reference state (a selection by waiting); waited_s cannot say it, as it also holds the
    # first before-probe's own run time. Default: the before-probes' lines in raw, less one.
    waits: int | None = None
    # what judged it: "launch" (the core's own readings at its start and end, core/state.c),
    # "probes" (the probe program just before and after it), "after-probe" (a launch that
    # was to read its own state and did not: the after-probe alone)
    reading: str = "probes"
    # of waited_s: the pause before a retry after misses the wait could not see (PAUSE_S)
    paused_s: float = 0.0

    def __post_init__(self) -> None:
        if self.waits is None:
            self.waits = max(0, len(self.raw) - 1)

    @property
    def reader(self) -> str:
        """Whose readings judge it ("launch": the core's own; "probe": the probe
        program's), the reference it is held to: stats.probe.reader_of(reading)."""
        return reader_of(self.reading)

    def summary(self) -> dict[str, Any]:
        return {"before_ns": _ns(self.before), "after_ns": _ns(self.after),
                "waited_s": round(self.waited_s, 3), "waits": self.waits,
                "reading": self.reading,
                **({"paused_s": round(self.paused_s, 3)} if self.paused_s else {}),
                **({"elapsed_s": round(self.elapsed_s, 3)} if self.elapsed_s else {})}


def _ns(r: ProbeReading | None) -> float | None:
    return round(r.median_ns, 3) if r is not None and r.valid else None


class MachineGate:
    """The probe for one campaign invocation: reads, the history, the decision."""

    def __init__(self, directory: Path, mode: str, log=lambda msg: None) -> None:
        self.mode = mode
        self.history_path = directory / HISTORY
        self.boot = boot_id()
        # every valid reading so far with its reader ("launch" / "probe"); one list object,
        # so the runner's gates of one campaign can share it
        self.history = load_readings(self.history_path, boot=self.boot)
        self.log = log
        self.program: Path | None = None
        self.waited = 0.0       # seconds this invocation spent waiting (WAIT_TOTAL_S)
        # the current launch's attempts set aside so far that the wait could not see
        self.unseen = 0

    def read(self) -> tuple[ProbeReading | None, str]:
        """One probe: its reading (None when it failed) and its raw output line."""
        if self.program is None:
            self.program = probe_program()
        res = run_command([str(self.program), "--ms", f"{PROBE_MS:g}"],
                          timeout=PROBE_TIMEOUT_S)
        text = res.stdout.strip()
        if not res.ok:
            return None, f"probe failed: exit {res.returncode}: {res.stderr.strip()[:200]}"
        try:
            return parse_probe(text, where=str(self.program)), text
        except ProbeError as exc:
            return None, f"probe output unreadable: {exc}"

    def reference(self, reader: str) -> Reference | None:
        """The reference state for one reader's readings (an attempt's: Attempt.reader, so
        the set-aside line and the stored record name the reference it was judged
        against): stats.probe.reader_reference."""
        return reader_reference(self.history, reader)

    def wait_for_reference(self) -> tuple[ProbeReading | None, float, list[str]]:
        """Probe until the reference state (or WAIT_S passed, or no reference yet): the
        last reading, the seconds waited and the raw lines."""
        start = time.monotonic()
        raw: list[str] = []
        limit = min(WAIT_S, max(0.0, WAIT_TOTAL_S - self.waited))
        while True:
            r, text = self.read()
            raw.append(text)
            ref = self.reference("probe")
            waited = time.monotonic() - start
            if self.mode != "gate" or judge_launch(r, None, ref) is not State.OFF \
                    or waited >= limit:
                if len(raw) > 1:     # it waited (a reading at once is no wait)
                    self.waited += waited
                return r, waited, raw
            time.sleep(WAIT_STEP_S)

    def start(self, own: bool, attempt: int) -> Attempt:
        """The gate's part before an attempt: every attempt first waits for the probe
        program's (coarse) reference state - one probe, ~9 ms, when the machine is in it -
        a launch that reads its own state (own) as any other; its own readings then judge
        it (finish). A retry after the second set-aside the wait could not see (`sees`)
        pauses PAUSE_S before that. Under "record" (nothing is set aside) a launch that
        reads its own state is not probed at all.

        Why the core's first attempt waits too (stop 36): it used to start at once, so a
        machine off the coarse state cost it a whole launch set aside, where IMB's launches
        (probed before) waited for the state instead; the wait is not launch time, the
        set-aside launch is. In the stored TTD runs 70-72, approx-1/2 and lc-01..03, 227 of
        the core's 363 set-aside attempts were off the coarse state at their start reading
        (run-72: 117 of 197, 19.3 s of its 30.9 s set aside; IMB's: 7 of 34, its before-wait
        having filtered them), a state this one probe sees (both readers read the ~4x apart
        states alike)."""
        if attempt == 0:
            self.unseen = 0
        if own and attempt == 0 and self.mode != "gate":
            return Attempt(None, None, 0.0, waits=0, reading="launch")
        paused = self.pause() if self.unseen >= 2 else 0.0
        before, waited, raw = self.wait_for_reference()
        return Attempt(before, None, paused + waited, raw=raw,
                       waits=len(raw) - 1 + (paused > 0), paused_s=paused,
                       reading="launch" if own else "probes")

    def pause(self) -> float:
        """Sleep PAUSE_S, at most what is left of WAIT_TOTAL_S; the seconds slept."""
        s = min(PAUSE_S, max(0.0, WAIT_TOTAL_S - self.waited))
        if s > 0:
            time.sleep(s)
            self.waited += s
        return s

    def sees(self, a: Attempt) -> bool:
        """Whether the wait before a retry can see the state a was set aside for: it can
        unless a was judged on the launch's own readings (their finer state) and the probe
        program's reference, which the wait holds its readings to, accepts them - the same
        judgement (judge_launch) against the wait's reference."""
        ref = self.reference("probe")
        return a.reader == "probe" or ref is None \
            or judge_launch(a.before, a.after, ref) is State.OFF

    def finish(self, a: Attempt, jsonl: Path | None, elapsed: float | None) -> None:
        """The gate's part after the launch: the launch's own readings replace the probes
        where it took them (a retry's wait-probes stay in raw, not in the judgement); else
        the after-probe, its wall time counted in waited_s."""
        own = launch_readings(jsonl) if a.reading == "launch" else None
        if own is not None:
            a.before, a.after = own[0], own[1]
            a.raw += own[2]
        else:
            t0 = time.monotonic()
            a.after, text = self.read()
            a.waited_s += time.monotonic() - t0
            a.raw.append(text)
            a.reading = "after-probe" if a.reading == "launch" and a.before is None \
                else "probes"
        a.elapsed_s = elapsed

    def record(self, run_id: str, when: str, r: ProbeReading | None,
               source: str = "probe") -> None:
        """One reading into the history (source "launch": the core's own, core/state.c)."""
        if r is None:
            return
        line = json.dumps({"run": run_id, "when": when, "median_ns": r.median_ns,
                           "samples": r.samples, "host": socket.gethostname(),
                           "time": round(time.time(), 3),
                           **({"boot": self.boot} if self.boot else {}),
                           **({"source": source} if source != "probe" else {})})
        with open(self.history_path, "a") as fh:
            fh.write(line + "\n")
        if r.valid:
            self.history.append((r.median_ns, reader_of(source)))

    def judge(self, a: Attempt) -> State:
        """An attempt against its reader's reference: the core's own readings ("launch")
        or the probe program's."""
        return judge_launch(a.before, a.after, self.reference(a.reader))

    def keeps(self, a: Attempt, attempt: int) -> bool:
        """Whether this attempt is kept: always unless gating, when its state is not OFF,
        or when the retries are spent. One set aside the wait could not see counts towards
        the pause before the next retry (start)."""
        kept = self.mode != "gate" or self.judge(a) is not State.OFF or attempt >= RETRIES
        if not kept and not self.sees(a):
            self.unseen += 1
        return kept


def probe_extra(a: Attempt, state: State, ref: float | None,
                aside: list[Attempt]) -> dict[str, Any]:
    """What each result row of the kept launch carries under extra["machine_probe"]: with
    the reference's centre its bounds, which judged the launch (a 64 ns reading is off a
    reference of 90 ns whose state reaches down to 70 ns, though within GATE_FACTOR)."""
    bounds = {"reference_lo_ns": round(ref.lo, 3), "reference_hi_ns": round(ref.hi, 3)} \
        if isinstance(ref, Reference) else {}
    return {**a.summary(), "state": state.value,
            "reference_ns": round(ref, 3) if ref else None, **bounds,
            "set_aside": [s.summary() for s in aside]}


def write_raw(run_dir: Path, a: Attempt) -> None:
    write_file(run_dir / "machine-probe.txt", "\n".join(a.raw) + "\n")
