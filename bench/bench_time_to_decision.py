#!/usr/bin/env python3
"""Time to decision: Open MPI vs MPICH PingPong 0:22 over shared memory, np=2.

    .venv/bin/python bench/bench_time_to_decision.py [--quick] [--max-rounds N]
        [--to-budget [--budget-plan every-cell|gain-1] [--max-budget SEC] [--batches B]]
        [--bind core|none] [--keep DIR]
    .venv/bin/python bench/bench_time_to_decision.py --simulate [--reps R] [--seed S]
        [--scenario NAME]...

A cell is decided when compare's launch-level test (multiplicity over the table) is
significant, or when TOST says the two stacks are equivalent within ±5% (the campaign's
`equivalence = "5%"`); the same test for both tools. Both campaigns run interleaved, so
compare pairs each round's two launches (stats.launch.compare_cells with the launches'
round keys: the per-round differences, their spread pooled over the sizes) once every cell
has stats.launch.MIN_PAIRS (3) pairs; at 2 rounds the unpaired hierarchical model. The stopping rule is
stats.sequential's (the one `repeats = "decide"` uses): a look after every round from the
second, the interim looks at a strict level (alpha x 0.2 / looks, Haybittle-Peto), the last
one, at the budget, at alpha; a decision is final. Round by round, the bench
runs one interleaved round (one launch per variant) of mpibench-core, then one of IMB-MPI1
PingPong (built per stack from ../shared/peers by the campaign's `suite = "imb"` group),
each as a campaign whose `repeats` it raises (earlier launches are kept). A tool stops
launching when every one of its cells is decided; both stop at the budget, --max-rounds
launches per variant. The core's campaign has `budget = "auto"` (stats/budget.py): rounds
1-2 are its pilot (20 samples a cell within --max-time 0.002 s, stats.budget.PILOT_*; the
largest sizes fewer), later launches at the --target and --max-time that minimise the
launch time to a decision at the measured variance components (the bench prints that
plan). At the end the launch options of each tool and variant (the launcher's
command line before the program): the same for both tools.

Per round it prints each tool's launch wall time in that round (the store's per-launch
elapsed seconds: waiting for the shared MPI lock and IMB's build are not counted) and its
cells decided; at the end both totals side by side, the ratio core/IMB launch time, and
whether every cell was decided within the budget (else which cells were not, with their
gain, CI and tests), with the load average (the machine is shared) at the start and end;
last, whether every cell decided within a budget the bench prints is in reach at the
spread of all the core's rounds (reach_line: the launches and seconds, or why not).

The budget. After round 2 the bench prints the core's plan (stats/budget.py, the one
`budget = "auto"` uses, planned for the bench's launches per variant): the launches per
side that decide every cell (equivalence within ±5% for identical stacks, by the
round-paired test: the variance of a round's difference pooled over the sizes of each
round regime compare splits them into, each component at its 80% upper confidence bound
over its df) and the seconds of launches that
costs. From a 2-round pilot the round part has 1 df (a factor 15.6 at the 80% bound), so
that figure is a pilot's.

--to-budget runs to a budget it prints. The number of looks is fixed before the first
one: every round 2..N (the rounds interleaved with IMB) and --batches more, the interim
looks at alpha x 0.2 / (interim looks), the last at alpha. After round N's launches and
before its look, the core's plan from its rounds 3..N (the pilot's rounds 1-2 ran at other
options; N - 3 df for the round part, x1.8 at its bound at N = 10; no cap) at the options
its budgeted rounds run at (the campaign's
`budget = "auto"` plan, made once from the pilot: the continuation keeps the campaign as
it is, since a group's own `options` would make new cells) is printed as the budget:
launches per side and seconds of launches in all (the N rounds' own plus the rest at the
plan's seconds per launch). Two plans are printed side by side, with the ratio of their
rounds: the every-cell plan (since stop 41; --budget-plan every-cell, the default: every
cell decided whatever its true gain, i.e. at the last look (level alpha) (c_sig + c_eq) se
<= log(1.05), c_sig the two-sided critical value at the least level the table's family
tests a cell at, stats.budget.cell_level, c_eq TOST's one-sided one at alpha, se at its
80% quantile at the spread's 80% bound; docs/statistics.md "Every cell decided whatever
its gain") and the gain-1 plan (equivalence within ±5% at gain 1 with 80% power, the
budget before stop 41, about 1/3.5 of the rounds; --budget-plan gain-1 runs to it: a cell
whose gain sits between 1 and the margin's edge can be left undecided there). N must be 5 or more with --to-budget (one line, exit 2
otherwise; --quick runs 5 rounds then, not 4): from fewer than 3 rounds 3..N the plan
would be unpaired (or none) while the looks test paired. The looks test every round,
the pilot's rounds 1-2 included, which ran at other options (the pilot's): the
budget is planned on rounds 3..N's spread alone, as if every round had it. Above --max-budget seconds it is refused, saying so, and so is
a plan beyond 1000 launches per side; then, or when the N rounds already are the budget,
or when the core decided every cell before round N (no budget is made), the look at N
is the last, at alpha. Else the core alone goes on (IMB stops at N) at
those options, interleaved Open MPI/MPICH rounds in --batches
campaign invocations, a look after each, the last at the budget, until every cell is
decided or the budget is spent (and stops early, saying so, past twice --max-budget of
launches: the last look is then an interim one). The budget depends on the spread alone,
never on the gains, so fixing the last look there leaves the levels' error control as
planned (an internal pilot). At the end every cell: decided (significant or equivalent)
at which look, or undecided with its gain and CI, and which of those are near the margin
(a CI no wider than ±5% that holds an edge of it: a gain-1 budget leaves such a gain; the
every-cell budget decides it where the spread is at most the one planned).

--simulate runs no launches: both budgets on seeded known distributions through the
bench's own rule (sim_run: the looks at 2..N at the interim level, the budget from rounds
3..N of the cells still undecided through the plan --to-budget makes, --batches looks up
to it, a decided cell given no more rounds): paired rounds of 24 sizes (11 with --quick)
whose launches have a launch effect their sizes share, a size's own launch effect,
within-launch error and a round effect both variants share (SIM_*); scenarios A/A, gains
between half the margin and its edge, at the edge, mixed (run-74-like) and A/A with the
small sizes' launch modes. Per scenario and budget: its rounds, the runs with every cell
decided, the cells decided, A/A cells significant (and runs with one), cells at or beyond
the edge called equivalent.

The core's launches after a look measure only the sizes with an undecided cell (`campaign
run --only-sizes`, what `repeats = "decide"` does by itself): a decision is final per cell,
so a decided size needs no more launches; the later looks test the decided cells on the
launches they had, the others on every round. IMB-MPI1 runs every size in every round, as
its users run it. The summary says which rounds ran how many sizes.

Both tools' campaigns opt in to the machine-state gate (`machine_probe = "gate"`,
campaign/machine_probe.py; the default only records): a launch whose CPUs' cache-line round
trip before or after it is off the campaign's reference state is set aside and run again;
the core's launches are judged on their own start and end readings (core/state.c), IMB's
on probes just around them, and before every attempt both wait for the probe program's
(coarse) state by the same rule (since stop 36; the core's first attempt used to start at
once and paid a whole set-aside launch where IMB waited). The end prints per tool what the
gate kept and set aside (probe_line). Two ratios: the launch time (kept launches and the
attempts set aside - launch time a user pays) and, beside it, with the gate's probing and
waiting added (wall time outside any launch).

Both variants bind their ranks to cores (`bind = "core"`; --bind none for each launcher's
default). Open MPI binds 2 ranks to cores by default, Hydra (MPICH) does not: on the loaded
2-core machine 4 of 10 unbound MPICH launches of the core ran every PingPong at 4-6 ms
(both ranks on one CPU, a scheduler slice per message) against 0 of 10 bound ones, which
no number of launches averages away. The same binding for both tools.

The time between launches (time_between, live and per kept run on --replay): per kind
of gap (within one campaign invocation; across invocations, before each tool's first launch
of one) the median over its N gaps of the gap and of each part, in seconds, with each
part's sum; the parts tile every gap (the launch's ingest and commit, the invocation's
status and exit, the bench's looks and other work, the MPI lock, Python's start and
imports, the campaign file, checks, store open, sync, budget = "auto"'s plan, attempts set
aside, the first cell's preparation, the gate, the job script). From the stores' times,
each run directory's timing.json, the gate's records and DIR/invocations.jsonl (written
since stop 39: each invocation's call and return and its `campaign run --json` timing, each
look's span); a run kept before it gets the coarser parts its stores tell apart. mpibench
is started without PYTHONDONTWRITEBYTECODE (a checkout then compiles once, not at every
invocation), the same for both tools.

The time to a decision: besides the totals after the interleaved rounds, the bench
prints the launch seconds each tool had spent at the first look where it had decided as
many cells as IMB decided in all, and their ratio (core / IMB).

Each campaign invocation takes the shared MPI lock (/tmp/mpibench-mpi.lock) itself, so the
bench never holds it for long. One run, numbers only, no assertions.

Which tool launches first in a round: --order alternate (the default: the core in odd
rounds, IMB in even ones), core-first (every round, the bench's order before stop 29) or
imb-first; each round line ends with the one that ran first. Within a round each tool's
campaign runs Open MPI and MPICH in the campaign's interleaved order: since stop 38 they take
turns first from round to round (campaign/plan.py williams_row; the bench raises `repeats`,
so round k runs repeat k-1); runs kept before it ran Open MPI first in every round.
Before round 1 both tools run one discarded warm-up round (IMB's, then the core's: one launch per
variant, as round 1 runs it, into DIR/<tool>/warmup/, not counted, not tested: warm_up),
so no tool's round 1 is a cold start whichever runs first. (Stop 29's 11 kept runs show
no cold start to shift: round 1 / round 2 launch seconds, medians, core 0.87 when it ran
first in round 1 (8 runs), 1.14 second (3); IMB 0.96 first (3), 0.84 second (8); the
warm-up takes the question away instead of handing round 1 to IMB.)

--replay DIR... runs no launch: each DIR a run kept with --keep (DIR/core/mpibench.db,
DIR/imb/mpibench.db, and DIR/bench.json, the run's settings, whose rounds fix the looks'
levels, an integer 2-1000, else that run is passed over with one stderr line naming the
file; a DIR kept before bench.json existed is read as a plain run of the most rounds
its stores hold) is decided again with this checkout's test, through the function the
live looks call (judge): per run and tool the cells decided at each look (2..N), which
sizes are significant or equivalent, the launch seconds stored, the ratio core/IMB and
which tool ran first in each round (from the stores' start times); at the end how often
the core decided at least as many cells as IMB. A model change is so judged on the same
launches as today's. A --to-budget run is replayed as a plain run of its N interleaved
rounds. What a replay cannot redo: after a look the core's launches ran only the sizes
the live run had left undecided, so a size the live run decided at round k has k rounds
in the store; a replay that does not decide it there tests it on those (the replay
names such sizes with their rounds), which counts against the core when the replayed
model decides less than the live one did. --all-sizes runs every size in every core
launch, as IMB's, for a dataset that replays without that bias (the live decisions are
still final per cell; the extra launches cost the core launch time).

--replay DIR... --smaller-budgets: per kept --to-budget run, whether a smaller budget would
have decided every cell: its design (every round 2..N, --batches more looks up to the
budget, the interim level fixed before the first look, the last at alpha) replayed with
25, 40, 55, 70, 85 and 100% of the rounds its core store holds as the budget, on those
rounds only; per budget the cells decided at its last look. Same caveat as above: a size
the live run decided early has only the rounds up to that look.

--replay DIR... --gain-plan: per kept run (at its interleaved rounds and at the last round
its core store holds), the rounds per side each undecided cell would need were the budget
planned at its observed gain instead of gain 1: equivalence on the near edge's distance
(TOST) and the difference test at |log gain| (at 0.05, without Holm's share), at the point
estimate and at the CI's worst end, beside today's plan at gain 1 (stats.budget's parts at
their 80% bounds). A what-if: the budget stays planned on the spread alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.errors import UsageError  # noqa: E402
from mpibench.report.data import load_cells  # noqa: E402
from mpibench.report.select import select_groups  # noqa: E402
from mpibench.stats import budget, preempted  # noqa: E402
from mpibench.stats.probe import OFF_BALANCE_ALPHA, kept_off  # noqa: E402
from mpibench.stats.sequential import (  # noqa: E402
    INTERIM_SHARE,
    Design,
    Status,
    decide,
)
from mpibench.store import Store  # noqa: E402

# the peers tarballs sit beside the repository (../shared/peers), never at an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS") or ROOT.parent / "shared" / "peers")
IMB_TGZ = PEERS / "imb-2021.11.tar.gz"
LOCK = "/tmp/mpibench-mpi.lock"
TARGET = 0.05
# each tool's per-launch statistic: the core's JSON Lines carry every sample (the median of a
# launch's samples); IMB-MPI1 prints one mean per size and launch
STATISTIC = {"core": "median", "imb": "mean"}
ORDERS = ("alternate", "core-first", "imb-first")
SETTINGS = "bench.json"     # a kept run's settings (--keep DIR/bench.json), for --replay
# a run's campaign invocations (when the bench called each and got it back, and its
# `campaign run --json` timing) and looks (their start and end): time_between's split
INVOCATIONS = "invocations.jsonl"
# --to-budget plans on rounds 3..N (the pilot's rounds 1-2 ran at other options): at least
# stats.launch.MIN_PAIRS of them, so the plan is the paired one the looks test with
TO_BUDGET_MIN_ROUNDS = 5

HEAD = """
[campaign]
name = "{name}"
repeats = {repeats}
equivalence = "5%"
verify_transport = false
timeout = 900
machine_probe = "gate"
{extra}
[variants.openmpi]
stack = "openmpi"
transport = "shm"
np = 2
{bind}
[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
{bind}
"""

CORE = """
[benchmarks.core]
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""
# the core's samples during or next to which a rank was descheduled (core/: preempted) are
# kept out of its statistic unless --keep-preempted; the budget's own --target/--max-time
# merge with it (campaign/budget.py keeps a group's other options). A size short of clean
# samples may sample on up to PREEMPT_CAP s in all: the core's default, 10 x --max-time, is
# 0.02 s at the plan's 0.002, which a loaded machine spent on calibration alone (its
# barriers wait for descheduled ranks); 0.05 s is the longest --max-time the plan chooses
# among (stats.budget.MAX_TIMES), so the cap is never below the budget's own
PREEMPT_CAP = 0.05
EXCLUDE = f"options = {{ exclude_preempted = true, preempted_max_time = {PREEMPT_CAP} }}\n"

IMB = """
[benchmarks.imb]
suite = "imb"
source = "{tgz}"
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""

# budget.plan_from_rows' None: fewer than two variants with spread components, or no cell
# both variants measured (gate-run-5-aborted: a round's core campaign died)
NO_PLAN = "too few launches per variant, or no cell both variants measured"


def run_round(camp: Path, text: str, only: tuple[str, ...] = (), log: Path | None = None,
              label: tuple[str, int] = ("", 0)) -> None:
    """One campaign invocation; only: the sizes its new launches measure (--only-sizes);
    log: the run's INVOCATIONS file, which gains this invocation's line (label: its tool
    and round; when the bench called and got back, and `campaign run --json`'s timing)."""
    camp.write_text(text)
    mpibench = str(Path(sys.executable).parent / "mpibench")
    extra = ["--only-sizes", ",".join(only)] if only else []
    # mpibench as installed: Python's compiled modules cached (a shell's
    # PYTHONDONTWRITEBYTECODE made every invocation of a source checkout compile mpibench
    # again, as the Makefile says of the tests); the same for both tools
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    called = time.time()
    res = subprocess.run(["flock", LOCK, mpibench, "campaign", "run", "--no-progress",
                          "--json", *extra, str(camp)], capture_output=True, text=True,
                         timeout=1800, env=env)
    returned = time.time()
    if res.returncode not in (0, 1):
        sys.exit(f"campaign run failed ({res.returncode}): {res.stderr[-2000:]}")
    if log is not None:
        try:
            timing = json.loads(res.stdout).get("timing")
        except (ValueError, AttributeError):
            timing = None
        note(log, {"event": "invocation", "tool": label[0], "round": label[1],
                   "called": called, "returned": returned, "timing": timing})


def note(log: Path, rec: dict) -> None:
    """One line of the run's INVOCATIONS file."""
    with log.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")


def launch_seconds(db: Path) -> float:
    """The store's finished launches' elapsed seconds, summed, with the launches the
    machine-state gate set aside and ran again (they were spent on the way)."""
    if not db.exists():
        return 0.0
    return sum(round_seconds(db, set_aside=True).values())


def set_aside_seconds(db: Path) -> dict[str, float]:
    """{kept launch id: the seconds of the attempts the machine-state gate set aside
    before it (its extra.machine_probe's set_aside elapsed_s)}."""
    return {rid: sum(a.get("elapsed_s") or 0.0 for a in p.get("set_aside") or [])
            for rid, p in machine_probes(db).items()}


def machine_probes(db: Path) -> dict[str, dict]:
    """{launch id: its results' extra.machine_probe} of the store's finished launches that
    the machine-state probe watched (campaign/machine_probe.py); a launch's result rows all
    carry the same record."""
    if not db.exists():
        return {}
    with Store(db, readonly=True) as store:
        rows = store.db.execute(
            "SELECT x.run_id, json_extract(x.extra_json, '$.machine_probe') FROM results x "
            "JOIN runs r ON r.id = x.run_id WHERE r.status = 'done' AND x.extra_json LIKE "
            "'%machine_probe%' GROUP BY x.run_id").fetchall()
    out = {}
    for rid, text in rows:
        try:
            rec = json.loads(text) if text else None
        except ValueError:
            rec = None
        if isinstance(rec, dict):
            out[rid] = rec
    return out


def core_result_rows(db: Path) -> list[dict]:
    """The core store's result rows of its done launches, as preempted_line and
    cut_short_line read them (variant, size, status, n, median, stop_reason, extra_json,
    and the core's mode from the launch's fingerprint: stats.preempted.waited_at_cap)."""
    with Store(db, readonly=True) as store:
        return [dict(r) for r in store.db.execute(
            "SELECT r.variant, x.size, x.status, x.n, x.median, x.stop_reason, x.extra_json, "
            "json_extract(f.json, '$.core_options.mode') AS mode FROM results x "
            "JOIN runs r ON r.id = x.run_id LEFT JOIN fingerprints f ON f.id = r.fingerprint_id "
            "WHERE r.status = 'done'")]


def preempted_line(db: Path) -> str:
    """What the core's flag saw and what its statistic left out (core/: `preempted` per
    cell and launch, with --exclude-preempted not in its samples), and the cells whose
    launch statistic is a scheduler slice (slice_cells: at the 5-sample floor, 1 ms above
    its size's medians; what held every loaded --to-budget run of stop 31 above 1000
    launches). IMB-MPI1 has
    no such flag: its mean keeps every iteration."""
    if not db.exists():
        return "core preempted samples: no store"
    from mpibench.report.data import preempted_of

    rows = core_result_rows(db)
    ok = [r for r in rows if r["status"] == "ok"]
    counts = preempted_of(rows)
    kept = sum(r["n"] or 0 for r in ok)
    slices = slice_cells(ok)
    capped = [r for r in rows if preempted.waited_at_cap(r)]
    stopped, empty = len(capped), sum(map(preempted.skipped, capped))
    unknown = counts.unknown
    return (f"core preempted samples (a rank descheduled in or next to the sample): "
            f"{counts.excluded + counts.kept} flagged in {len(rows)} cell launches, "
            f"{counts.excluded} of them left out of "
            f"the statistic ({kept} samples kept); {stopped} cells stopped 'preempted' "
            f"(past --max-time, up to {PREEMPT_CAP:g} s a cell, still short of clean samples), "
            f"{empty} of them "
            f"with none (skipped: no launch value){f'; {unknown} without the flag' if unknown else ''}; "
            f"cells at the 5-sample floor with a median 1 ms or more above their variant's and "
            f"size's median over the run (a time slice): {slices}; "
            f"IMB-MPI1 keeps every iteration in its mean (no such flag)")


def slice_cells(ok: list[dict]) -> int:
    """Cell launches at the core's 5-sample floor whose median is a scheduler slice: 1 ms
    (1000 us) or more above the median of their variant's and size's launch medians in
    the store (a flat 1 ms line counted 4 MiB launches, whose own medians sit near 1 ms)."""
    import statistics as st

    by: dict[tuple, list[float]] = {}
    for r in ok:
        if r["median"]:
            by.setdefault((r["variant"], r["size"]), []).append(r["median"])
    mid = {k: st.median(v) for k, v in by.items()}
    return sum(1 for r in ok if (r["n"] or 0) <= 5 and r["median"]
               and r["median"] - mid[(r["variant"], r["size"])] >= 1000)


def cut_short_line(db: Path) -> str:
    """Per variant, the core's cell launches cut short (--exclude-preempted): stopped
    'preempted' on fewer than stats.preempted.FEW_CLEAN clean samples, and skipped (no
    clean sample: no launch value, missing for a reason tied to the variant); each such
    cell is tested alone (stats.preempted)."""
    if not db.exists():
        return "core cut-short launches: no store"
    rows = core_result_rows(db)
    per = {v: (sum(preempted.few_clean(r) for r in rows if r["variant"] == v),
               sum(preempted.skipped(r) for r in rows if r["variant"] == v))
           for v in sorted({r["variant"] for r in rows})}
    cells = "; ".join(f"{v} {f} on fewer than {preempted.FEW_CLEAN} clean samples, {k} "
                      "skipped" for v, (f, k) in per.items())
    return (f"core cut-short cell launches per variant: {cells or 'none'} (a cell with "
            "one is tested on its own launches; skipped ones have no value)")


def probe_line(db: Path, label: str) -> str:
    """What the machine-state gate did to one tool's launches: kept by state, set aside
    (and how far off the reference their probes were), seconds waited for the state."""
    probes = machine_probes(db)
    if not probes:
        return f"machine-state probe, {label}: none recorded (not applied, or a run kept " \
               "before it existed)"
    states = {k: sum(p.get("state") == k for p in probes.values())
              for k in ("reference", "unknown", "off")}
    aside = [(a, p.get("reference_ns")) for p in probes.values()
             for a in p.get("set_aside") or []]
    ratios = [max(v / ref, ref / v) for a, ref in aside for v in (a.get("before_ns"),
              a.get("after_ns")) if v and ref]
    waited = waited_seconds(probes)
    far = f", up to {max(ratios):.1f}x off the reference state's round trip" if ratios else ""
    own = sum(p.get("reading") == "launch" for p in probes.values())   # core/state.c
    return (f"machine-state probe, {label}: {len(probes)} launches kept ({states['reference']} "
            f"in the reference state when judged, {states['unknown']} not judged, "
            f"{states['off']} still off after the retries; {final_state_line(probes)}; "
            f"judged on {own} launches' own start/end readings, {len(probes) - own} on "
            "probes around them); "
            f"{len(aside)} set aside and run again{far}{moved_line(probes)}; {waited:.1f} s "
            "probing/waiting for the state")


def moved_line(probes: dict[str, dict]) -> str:
    """How many set-aside attempts were in the run's FINAL reference state (and their launch
    seconds): set aside under a reference that later moved (the machine changed state for
    good and the majority followed). Spent in hindsight only: when set aside they were off
    the reference of their time, and a gate that followed faster would mix states within a
    comparison (the two stacks' ratio differs by state: run-72's kept launches' 0 B
    medians, Open MPI / MPICH, 0.396 / 0.585 us = 0.68 at ~430 ns, 0.157 / 0.190 = 0.83 at
    ~100 ns)."""
    from mpibench.stats.probe import State, judge_stored

    ref = _final_reference(probes)
    hit = [a for p in probes.values() for a in p.get("set_aside") or []
           if ref is not None and judge_stored(a.get("before_ns") or None,
                                               a.get("after_ns") or None, ref)
           is State.REFERENCE]
    if not hit:
        return ""
    secs = sum(a.get("elapsed_s") or 0.0 for a in hit)
    return (f" ({len(hit)} of them in the run's final reference state, {secs:.1f} s: set "
            "aside under a reference that later moved)")


def _final_reference(probes: dict[str, dict]):
    """The reference of every reading the run's kept and set-aside launches took, by the
    gate's own rule for the store's reader (stats.probe.reader_reference: the core's own
    readings within their finer state, the probe program's - IMB's - the coarse state
    alone), the reader being the one most kept launches were judged on."""
    from mpibench.stats.probe import reader_of, reader_reference

    history = [(ns, reader_of(a.get("reading"))) for p in probes.values()
               for a in [p, *(p.get("set_aside") or [])]
               for ns in (a.get("before_ns"), a.get("after_ns")) if ns]
    own = sum(reader_of(p.get("reading")) == "launch" for p in probes.values())
    return reader_reference(history, "launch" if 2 * own > len(probes) else "probe")


def waited_seconds(probes: dict[str, dict]) -> float:
    """The seconds the machine-state gate spent probing and waiting before the kept launches
    and their set-aside attempts (not launch time; the wall time they add); probes: a
    store's machine_probes."""
    return sum((a.get("waited_s") or 0.0) for p in probes.values()
               for a in [p, *(p.get("set_aside") or [])])


def final_state_line(probes: dict[str, dict]) -> str:
    """The kept launches judged again against the run's FINAL reference (the reference moves
    with the majority while a run goes on: a launch kept early may be off the final one)."""
    from mpibench.stats.probe import State, judge_stored

    ref = _final_reference(probes)
    if ref is None:
        return "no valid probe"
    n = sum(judge_stored(p.get("before_ns") or None, p.get("after_ns") or None, ref)
            is State.REFERENCE for p in probes.values())
    return f"{n} of {len(probes)} in the final reference state, {ref:.0f} ns"


class State(NamedTuple):
    cells: int
    decided: int
    significant: int
    equivalent: int
    undecided: tuple[str, ...]


class Family(NamedTuple):
    """A store's openmpi vs mpich cells as the bench's test reads them."""
    cells: dict     # {cell key: (openmpi {launch: value}, mpich {...}, better)}, round order
    pairs: dict     # {launch id: round key} (compare_cells pairs by these)
    repeat: dict    # {launch id: its round, 0-based (runs.repeat)}
    # {cell key: its launches the core cut short (report.data.ResultCell.cut_short: fewer
    # than stats.preempted.FEW_CLEAN clean samples or a preempted skip)}: a look that sees
    # one tests the cell alone (stats.preempted)
    few: dict = {}


def family(db: Path, statistic: str) -> Family:
    """The store's cells with launches of both variants, each launch's `statistic`."""
    with Store(db, readonly=True) as store:
        sets = select_groups(store, variants=["openmpi", "mpich"], by="variant")
        cells = load_cells(store, sets, with_samples=False, statistic=statistic)
    repeat = run_repeats(db)

    def ordered(by_launch: dict) -> dict:
        return dict(sorted(by_launch.items(), key=lambda kv: repeat.get(kv[0], 0)))

    fam, pairs, few = {}, {}, {}
    for key, by in cells.items():
        b, c = by.get("openmpi"), by.get("mpich")
        if b is not None and c is not None:
            fam[key] = (ordered(b.by_launch), ordered(c.by_launch), b.better)
            pairs.update(b.by_round)
            pairs.update(c.by_round)
            cut = b.cut_short | c.cut_short
            if cut:
                few[key] = cut
    return Family(fam, pairs, repeat, few)


def decided(db: Path, statistic: str, design: Design, n: int, previous: dict | None
            ) -> tuple[State, dict]:
    """openmpi vs mpich at the look with n launches per side (stats.sequential.decide: Holm
    over the table's cells or TOST within ±5%, at the design's level for this look;
    decisions of earlier looks stand). Returns the state and the statuses for the next."""
    return judge(family(db, statistic), design, n, previous)


def judge(fam: Family, design: Design, n: int, previous: dict | None
          ) -> tuple[State, dict]:
    """decided()'s look on cells already read: the launches of the first n rounds."""
    if not fam.cells:
        return State(0, 0, 0, 0, ()), {}
    # compare's test: paired by round (the campaigns run interleaved) once every cell has
    # stats.launch.MIN_PAIRS pairs among the launches this look sees, unpaired before
    # a cell with a launch on fewer than FEW_CLEAN clean samples (or a preempted skip)
    # among the rounds this look sees is tested alone (compare_cells' cut), as compare does
    look = decide(fam.cells, design, n=n, previous=previous, rounds=fam.repeat,
                  pairs=fam.pairs, cut=fam.few)
    st = [c.status for c in look.cells.values()]
    sig, eq = st.count(Status.SIGNIFICANT), st.count(Status.EQUIVALENT)
    left = tuple(str(k.size) for k in look.undecided)
    return State(len(st), sig + eq, sig, eq, left), look.cells


def breakdown(core_db: Path, imb_db: Path) -> list[str]:
    """Where a launch's wall time goes, medians per variant over the launches of rounds 1-2
    (the pilot's options) and of later rounds (the budget's): the launch's elapsed
    seconds (the store's), and for the core from its JSON Lines (core.jsonl in the run
    directory): MPI_Init, the cells (set-up, first call and validation, calibration,
    warm-up, samples: their elapsed_s), the timed samples alone (n x batch x median x 2:
    PingPong's sample is half a round trip; and the sum of the samples, with the samples a
    preemption lengthened, which the median leaves out), and
    what lies outside the core's own clock (the launcher's start and teardown,
    MPI_Finalize: the wall less the core's footer elapsed_s, which runs from before
    MPI_Init to its last record); and per phase the cells by stop reason (how many, their
    seconds: a cell that samples on to --max-time for an exact CI shows there)."""
    import statistics as st

    def med(xs):
        return st.median(xs) if xs else float("nan")

    out = []
    imb: dict[tuple[bool, str], list[float]] = {}
    with Store(imb_db, readonly=True) as store:
        for r in store.runs(status="done"):
            imb.setdefault((r["repeat"] < 2, r["variant"]), []).append(r["elapsed"])
    with Store(core_db, readonly=True) as store:
        rows = [(r["variant"], r["repeat"], r["elapsed"], r["run_dir"])
                for r in store.runs(status="done")]
    for phase, pilot in (("rounds 1-2", True), ("rounds 3+", False)):
        def keep(r, pilot=pilot):
            return (r < 2) == pilot
        acc: dict[str, dict[str, list[float]]] = {}
        stops: dict[str, list[float]] = {}     # stop reason -> the cells' seconds
        for v, rep, el, run_dir in rows:
            if not keep(rep) or not run_dir:
                continue
            f = Path(run_dir) / "core.jsonl"
            if not f.exists():
                continue
            recs = [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
            head = next((r for r in recs if r.get("record") == "header"), {})
            foot = next((r for r in recs if r.get("record") == "footer"), {})
            cells = [r for r in recs if r.get("record") == "result"]
            a = acc.setdefault(v, {k: [] for k in ("wall", "init", "cells", "samples",
                                                   "sampled", "outside")})
            a["wall"].append(el)
            a["init"].append(head.get("mpi_init_us", 0) / 1e6)
            a["cells"].append(sum(r.get("elapsed_s") or 0 for r in cells))
            a["samples"].append(sum((r.get("n") or 0) * (r.get("batch") or 0)
                                    * (r.get("median_us") or 0) * _per_iteration(r) * 1e-6
                                    for r in cells))
            a["sampled"].append(sum(sum(r.get("samples_us") or ()) * (r.get("batch") or 0)
                                    * _per_iteration(r) * 1e-6 for r in cells))
            a["outside"].append(el - (foot.get("elapsed_s") or 0))
            for r in cells:
                stops.setdefault(r.get("stop_reason") or "none", []).append(
                    r.get("elapsed_s") or 0)
        for v, a in sorted(acc.items()):
            out.append(f"  core {v:8} {phase}: launch {med(a['wall']):.3f} s: MPI_Init "
                       f"{med(a['init']):.3f}, cells {med(a['cells']):.3f} (timed samples "
                       f"{med(a['samples']):.3f} at the median, {med(a['sampled']):.3f} "
                       f"in all), outside the core's clock (launcher "
                       f"start and teardown, MPI_Finalize) {med(a['outside']):.3f}; "
                       f"IMB {v} launch "
                       f"{med(imb.get((pilot, v), [])):.3f} s ({len(a['wall'])} core and "
                       f"{len(imb.get((pilot, v), []))} IMB launches)")
        if stops:
            out.append(f"  core {phase}, cells by stop reason (both variants): " + "; ".join(
                f"{k} {len(s)} cells {sum(s):.2f} s" for k, s in
                sorted(stops.items(), key=lambda kv: -sum(kv[1]))))
    return out


# A reported sample is this many times shorter than one iteration of the benchmark's loop.
# The bench runs PingPong only (half a round trip per sample); any other benchmark needs
# its own factor here, not a silent 2.
_SAMPLE_PER_ITERATION = {"PingPong": 2}


def _per_iteration(record: dict) -> int:
    """The factor from a result record's sample to the time its iterations took."""
    name = record.get("benchmark")
    if name not in _SAMPLE_PER_ITERATION:
        raise ValueError(f"breakdown: no sample-to-iteration factor for benchmark {name!r}; "
                         f"it knows {', '.join(_SAMPLE_PER_ITERATION)}")
    return _SAMPLE_PER_ITERATION[name]


def run_options(db: Path, repeat: int) -> dict[str, float]:
    """The core's --target and --max-time (the core's default 0.05 s when absent) of the
    store's launches of round `repeat` (index from 0; their command.json argv); {} when
    none has them."""
    with Store(db, readonly=True) as store:
        dirs = [r["run_dir"] for r in store.runs(status="done") if r["repeat"] == repeat]
    for d in dirs:
        f = Path(d or "") / "command.json"
        if not d or not f.exists():
            continue
        argv = json.loads(f.read_text()).get("argv") or []
        if "--target" not in argv[:-1]:
            continue
        out = {"target": float(argv[argv.index("--target") + 1]),
               "max_time": budget.CORE_DEFAULT_MAX_TIME}
        if "--max-time" in argv[:-1]:
            out["max_time"] = float(argv[argv.index("--max-time") + 1])
        return out
    return {}


def budgeted_options(db: Path, compare: int) -> dict[str, float]:
    """run_options of round `compare` (index from 1), saying on stderr when a budgeted
    round (3 on) has none (review s42 R8: a kept store copied without its run directories
    has no command.json, and the plan then silently came from the pilot on, every size,
    decided ones included, not from the budgeted rounds' undecided cells)."""
    at = run_options(db, compare - 1)
    if not at and compare > 2:
        print(f"note: round {compare}'s core options were not found (no command.json with "
              f"--target in {db.parent}'s run directories): the plan is made from the "
              "pilot on, over every size", file=sys.stderr)
    return at


def launch_options(db: Path) -> dict[str, str]:
    """{variant: the launcher's command line before the program} of a store's first
    launch per variant (its command.json argv): what both tools' launches ran with."""
    out: dict[str, str] = {}
    with Store(db, readonly=True) as store:
        runs = sorted(store.runs(status="done"), key=lambda r: r["repeat"])
    for r in runs:
        f = Path(r["run_dir"] or "") / "command.json"
        if r["variant"] in out or not r["run_dir"] or not f.exists():
            continue
        argv = json.loads(f.read_text()).get("argv") or []
        prog = next((i for i, x in enumerate(argv)
                     if x.endswith(("mpibench-core", "IMB-MPI1"))), len(argv))
        out[r["variant"]] = " ".join([Path(argv[0]).name] + argv[1:prog]) if argv else "?"
    return out


def run_repeats(db: Path) -> dict[str, int]:
    """{run id: its repeat index} of every launch in the store."""
    with Store(db, readonly=True) as store:
        return {r["id"]: r["repeat"] for r in store.runs()}


def budget_at(rows: list, cap: int, at: dict, every_cell: bool, table: int,
              rounds: int | None = None):
    """--to-budget's plan from the budgeted rounds' rows of the cells still undecided, at the
    options they ran at (keep_within, partial), in the family of a table of `table` rows:
    the call core_plan makes on a kept store and --simulate on its simulated rounds."""
    from mpibench.stats import budget

    return budget.plan_from_rows(rows, ["openmpi", "mpich"], TARGET, cap, rounds=rounds,
                                 targets=(at["target"],), max_times=(at["max_time"],),
                                 keep_within=True, partial=True, every_cell=every_cell,
                                 table=table)


def core_plan(db: Path, cap: int, rounds: int | None = None, at: dict | None = None,
              partial: bool = False, upto: int | None = None,
              leave_out: frozenset = frozenset(), every_cell: bool = False):
    """The core's budget from its launches so far (stats/budget.py, as `budget = "auto"`
    plans it in an interleaved campaign: equivalence within ±5% by the round-paired test,
    at the round differences' variance pooled over the sizes at its 80% upper bound, at
    most `cap` launches per variant; rounds: the rounds per variant the campaign
    invocation that uses the plan runs, the ones still to run count towards compare's
    pairing, as its own plan counts them (campaign.budget.BudgetRule.rounds: the bench
    raises a fixed `repeats`, so after the 2-round pilot the next invocation runs 3 and
    plans with one round more), so the plan printed is the one round 3's launches get;
    None: the launches so far only; at: {target, max_time}: the plan at these options
    only, from the launches of rounds 3 on, which ran at them, of the cells the last
    round still launched: the undecided ones; always partial); partial: a cell out of reach
    on its own (more than SEARCH_MAX rounds: one launch stalled 4x, run-67's 512 KiB) is
    left out of the plan and named, not the reason to refuse it (stats.budget.plan's
    partial); the pilot's plan (without `at`) is the campaign's, which keeps it out.
    upto: the rounds (index from 0) below it only (a kept --to-budget run replayed at its
    interleaved rounds); leave_out: these rounds left out whole, after the live sizes are
    read (round_rule_lines' what-if: compare's rule is not changed by it); every_cell:
    the every-cell plan (stats.budget.plan's every_cell: every cell decided whatever its
    true gain) instead of equivalence at gain 1."""
    from mpibench.stats import budget
    from mpibench.store.report_queries import launch_cost_rows

    with Store(db) as store:
        ids = [r["id"] for r in store.runs(status="done") if (not at or r["repeat"] >= 2)
               and (upto is None or r["repeat"] < upto)]
        rows = launch_cost_rows(store, ids)
    # the every-cell plan's family: the table's rows of every cell, decided ones included
    table = budget.table_rows({(r["benchmark"], r["size"]) for r in rows})
    if at:
        # the budgeted rounds alone (3 on), all at these options: their variance of d is
        # the one the rounds still to run will have; and the cells still undecided alone
        # (the sizes the last round launched): a decided cell gets no more launches, and
        # its 2 rounds from 3 on (decided at round 4) left its whole benchmark unpaired,
        # planned on the unpaired launch spread (> 1000 launches where paired said 878)
        last = max((r["repeat"] for r in rows), default=0)
        live = {(r["benchmark"], r["size"]) for r in rows if r["repeat"] == last}
        rows = [r for r in rows if (r["benchmark"], r["size"]) in live
                and r["repeat"] not in leave_out]
        return budget_at(rows, cap, at, every_cell, table, rounds)
    rows = [r for r in rows if r["repeat"] not in leave_out]
    return budget.plan_from_rows(rows, ["openmpi", "mpich"], TARGET, cap, rounds=rounds,
                                 partial=partial, every_cell=every_cell, table=table)


def kept_off_of(db: Path, upto: int | None = None):
    """stats.probe.kept_off of a core store's kept launches (of the rounds below upto,
    index from 0): the rounds holding a launch kept off its reference state after the
    gate's retries, and the variants' off attempts with their balance test."""
    probes = machine_probes(db)
    with Store(db, readonly=True) as store:
        runs = [r for r in store.runs(status="done") if upto is None or r["repeat"] < upto]
    return kept_off((r["repeat"], r["variant"], probes.get(r["id"])) for r in runs)


def _plan_at(db: Path, compare: int, rounds: frozenset = frozenset()):
    """--to-budget's plan at `compare` rounds (the options of its round `compare`, rounds 3
    on), these rounds (index from 0) left out."""
    at = budgeted_options(db, compare)
    return core_plan(db, budget.SEARCH_MAX, at=at or None, upto=compare,
                     leave_out=frozenset(k for k in rounds if k >= 2))


def round_rule_replay(dirs: list[str]) -> int:
    """--replay DIR... --round-rule: per kept run, the --to-budget plan at its interleaved
    rounds as it is (launches per side, seconds, cells out of reach) and the what-ifs
    (round_rule_budget), then the rounds' spread by what their launches went through
    (round_spread_lines). No MPI."""
    dbs = []
    for d in dirs:
        db, f = Path(d) / "core" / "mpibench.db", Path(d) / SETTINGS
        try:
            compare = settings_rounds(f) if f.is_file() else store_rounds(db)
        except UsageError as exc:
            print(f"{d}: {exc}", file=sys.stderr)
            continue
        if not db.is_file() or compare < 5:
            print(f"{d}: no kept core store with 5 or more interleaved rounds", file=sys.stderr)
            continue
        dbs.append(db)
        spent = sum(v for k, v in round_seconds(db, set_aside=True).items() if k < compare)
        p = _plan_at(db, compare)
        base = ("no plan" if p is None or p.best.launches is None else
                f"{p.best.launches} a side, "
                f"{spent + max(p.best.launches - compare, 0) * 2 * p.best.launch_s:.1f} s, "
                f"{len(p.best.beyond)} cells out of reach")
        print(f"{Path(d).name} (at {compare} rounds): plan {base}; "
              f"{round_rule_budget(db, compare, spent)}")
    print("\n".join(round_spread_lines(dbs)))
    return 0 if dbs else 2


def round_spread_lines(dbs: list[Path]) -> list[str]:
    """The rounds' spread by what their two launches went through (rounds 3 on, every
    kept store given): rms of the round's mean residual of d = log MPICH - log Open MPI
    (each size's d minus its median over the run, averaged over the round's sizes)."""
    import statistics as st

    from mpibench.stats.probe import near
    from mpibench.store.report_queries import launch_cost_rows

    groups: dict[str, list[float]] = {}
    for db in dbs:
        probes = machine_probes(db)
        with Store(db, readonly=True) as store:
            runs = {r["id"]: dict(r) for r in store.runs(status="done")}
            rows = launch_cost_rows(store, list(runs))
        d = _round_diffs(rows)
        mid = {s: st.median(x for (_k, s2), x in d.items() if s2 == s) for _k, s in d}
        rid = {(r["repeat"], r["variant"]): i for i, r in runs.items()}
        for k in sorted({k for k, _s in d if k >= 2}):
            res = [x - mid[s] for (k2, s), x in d.items() if k2 == k]
            if len(res) >= 3:
                recs = [probes.get(rid.get((k, v)), {}) for v in ("openmpi", "mpich")]
                groups.setdefault(_round_kind(recs, near), []).append(st.mean(res))
    out = [f"round spread (rounds 3+ of {len(dbs)} runs): rms of a round's mean residual "
           "of d (logs) by what its launches went through"]
    for g, xs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        big = sum(abs(x) > 0.3 for x in xs)
        out.append(f"  {g}: {len(xs)} rounds, rms {math.sqrt(sum(x * x for x in xs) / len(xs)):.3f}"
                   f", beyond 0.3: {big} ({100 * big / len(xs):.1f}%)")
    return out


def _round_diffs(rows: list[dict]) -> dict[tuple[int, int], float]:
    val: dict[tuple, dict[str, float]] = {}
    for r in rows:
        if r["status"] == "ok" and r["median"]:
            val.setdefault((r["repeat"], r["size"]), {})[r["variant"]] = math.log(r["median"])
    return {k: v["mpich"] - v["openmpi"] for k, v in val.items()
            if "mpich" in v and "openmpi" in v}


def _round_kind(recs: list[dict], near) -> str:
    from mpibench.stats.probe import launch_ns

    ns = [launch_ns(p) for p in recs]
    apart = None not in ns and not near(min(ns), max(ns))
    if any(p.get("state") == "off" for p in recs):
        return ("a kept-off launch beside a partner in another state" if apart
                else "a kept-off launch, both in one state")
    if apart:
        return "launches in different states, none kept off"
    if any(p.get("set_aside") for p in recs):
        return "a launch set aside, then kept in the reference"
    if any((p.get("waited_s") or 0) > 0.05 for p in recs):
        return "a launch that waited first"
    return "both in the reference at once"


def kept_off_head(ko) -> str:
    rounds = ", ".join(str(k + 1) for k in sorted(ko.rounds)) or "none"
    off = ", ".join(f"{v} {ko.off[v]} (over {ko.launches[v]} kept launches)"
                    for v in sorted(ko.off))
    return (f"rounds with a launch kept off the reference state after its retries: "
            f"{rounds}; off attempts (set aside or kept off) per variant: {off} "
            f"(balance p {ko.p:.2g}, {'balanced' if ko.balanced else 'NOT balanced'} at "
            f"{OFF_BALANCE_ALPHA:g})")


def round_rule_budget(db: Path, compare: int, spent: float) -> str:
    """What-if (compare pairs every round; stats.probe.KeptOff measures): the --to-budget
    plan at `compare` rounds without the rounds that hold a launch kept off its reference
    state (unguarded), and without only those whose two launches read different coarse
    states while the variants' off attempts are balanced (KeptOff.left_out, the candidate
    rule review s37 R3 showed unsafe at 10-30 rounds); the plan reads rounds 3 on, the
    left-out rounds' seconds are still spent."""
    ko = kept_off_of(db, compare)
    head = "what-if (compare pairs every round), " + kept_off_head(ko)
    if not any(k >= 2 for k in ko.rounds):
        return head + "; the budget's rounds (3 on) hold none: the same plan"
    mixed = ", ".join(str(k + 1) for k in sorted(ko.mixed)) or "none"
    out = [head, f"of them with the two launches in different states: {mixed}",
           f"without all of them (unguarded): {_plan_without(db, compare, spent, ko.rounds)}"]
    if ko.left_out != ko.rounds:
        out.append("without the different-state ones while balanced: "
                   + _plan_without(db, compare, spent, ko.left_out))
    return "; ".join(out)


def _plan_without(db: Path, compare: int, spent: float, rounds: frozenset) -> str:
    p = _plan_at(db, compare, rounds)
    if p is None or p.best.launches is None:
        return NO_PLAN if p is None else f"more than {budget.SEARCH_MAX} launches per side"
    b, kept = p.best, compare - len(rounds)
    total = spent + max(b.launches - kept, 0) * 2 * b.launch_s
    return (f"{b.launches} launches per side, {total:.1f} s of launches in all (sd of a "
            f"round's difference {math.sqrt(2 * b.launch_var):.3f}, its 80% upper bound; "
            f"{len(b.beyond)} cells out of reach)")


@dataclass(frozen=True)
class Schedule(Design):
    """stats.sequential's design with the looks listed (every round up to the comparison
    with IMB, then one per batch); the levels follow from their count as in Design, or,
    with `interim` set, every look before max is at that level (--to-budget fixes it
    before the first look, when the budget, and so max, is not known yet)."""
    points: tuple[int, ...] = ()
    interim: float | None = None

    def looks(self) -> list[int]:
        return list(self.points) or super().looks()

    def level(self, n: int) -> float:
        if self.interim is None or n >= self.max:
            return super().level(n)
        return self.interim


def schedule(budget_rounds: int, compare_rounds: int, batches: int,
             interim: float | None = None) -> Schedule:
    """Looks at 2..compare_rounds, then `batches` more (evenly) up to budget_rounds."""
    pts = list(range(2, min(compare_rounds, budget_rounds) + 1))
    rest = budget_rounds - pts[-1]
    if rest > 0:
        step = math.ceil(rest / max(batches, 1))
        pts += list(range(pts[-1] + step, budget_rounds, step)) + [budget_rounds]
    return Schedule(min=2, max=budget_rounds, step=1, alpha=0.05, margin=TARGET,
                    points=tuple(pts), interim=interim)


def to_budget_interim(compare_rounds: int, batches: int, alpha: float = 0.05) -> float:
    """--to-budget's interim level, fixed before the first look: the looks are every round
    2..compare_rounds and `batches` more, the last of them at alpha; Haybittle-Peto's
    alpha x INTERIM_SHARE over the interim looks (as Design.level). When the bench does
    not continue (the budget is within the rounds run, or refused), the look at
    compare_rounds is the last, at alpha: fewer looks than planned at this level, so the
    interim share spent is smaller, never larger."""
    interim = (compare_rounds - 1) + batches - 1
    return alpha * INTERIM_SHARE / max(interim, 1)


class Tool:
    def __init__(self, name: str, work: Path, group: str, statistic: str, design: Design,
                 extra: str = "", bind: str = "", only_undecided: bool = False):
        self.name, self.group, self.statistic, self.extra = name, group, statistic, extra
        # the core: launches after a look measure only the sizes with an undecided cell
        # (`campaign run --only-sizes`, as repeats = "decide" runs them); IMB: every size
        self.only_undecided = only_undecided
        self.sizes_run: list[tuple[int, int]] = []        # (round, sizes its launches ran)
        self.bind = f'bind = "{bind}"' if bind else ""
        self.design, self.previous = design, None
        work.mkdir(parents=True, exist_ok=True)
        self.camp, self.db = work / f"{name}.toml", work / "mpibench.db"
        self.rounds, self.seconds = 0, 0.0
        self.state = State(0, 0, 0, 0, ())
        self.look_cells: dict = {}
        self.done = False
        self.history: list[tuple[int, float, int]] = []   # (round, seconds, decided)

    def run_to(self, n: int) -> float:
        """Launches up to n per variant (one campaign invocation); their seconds."""
        before = launch_seconds(self.db)
        only = self.state.undecided if self.only_undecided and self.state.decided else ()
        if only:
            self.sizes_run.append((self.rounds + 1, len(only)))
        run_round(self.camp, HEAD.format(name=self.name, repeats=n, extra=self.extra,
                                         bind=self.bind) + self.group, only,
                  log=self.camp.parent.parent / INVOCATIONS, label=(self.name, n))
        self.rounds = n
        self.seconds = launch_seconds(self.db)
        return self.seconds - before

    def look(self, spent: float) -> str:
        if self.rounds < 2:
            return f"{spent:>9.2f} {'(1 launch: untested)':>22}"
        self.state, self.previous = decided(self.db, self.statistic, self.design,
                                            self.rounds, self.previous)
        self.look_cells = self.previous
        self.done = bool(self.state.cells) and self.state.decided == self.state.cells
        self.history.append((self.rounds, self.seconds, self.state.decided))
        s = self.state
        return (f"{spent:>9.2f} {f'{s.decided}/{s.cells}':>8} "
                f"{f'({s.significant} sig, {s.equivalent} eq)':>13}")

    def idle(self, why: str = "(all decided)") -> str:
        return f"{'':>9} {why:>22}"

    def cell_lines(self) -> list[str]:
        """Every cell: decided (significant or equivalent) at which look, or undecided
        with its gain and CI (at the look's level) and why (margin_note)."""
        out = []
        for key, c in self.look_cells.items():
            ci = (f" [{c.ci_low:.3f}, {c.ci_high:.3f}]" if c.ci_low and c.ci_high else "")
            gain = f"gain {c.gain:.3f}{ci}" if c.gain else "no gain"
            if c.decided:
                out.append(f"    size {key.size}: {c.status.value} at {c.look} launches "
                           f"per side (level {c.level:.2g}); {gain}")
            else:
                out.append(f"    size {key.size}: undecided after {c.look} launches per "
                           f"side; {gain}; {margin_note(c)[1]}")
        return out

    def near_margin(self) -> list[str]:
        """The undecided cells near the margin (margin_note): their sizes and CIs."""
        return [f"{k.size} [{c.ci_low:.3f}, {c.ci_high:.3f}]"
                for k, c in self.look_cells.items() if not c.decided and margin_note(c)[0]]

    def undecided_lines(self) -> list[str]:
        out = []
        for key, c in self.look_cells.items():
            if c.decided:
                continue
            gain = f"gain {c.gain:.3f}" if c.gain else "no gain"
            ci = (f" [{c.ci_low:.3f}, {c.ci_high:.3f}] at the look's level"
                  if c.ci_low and c.ci_high else "")
            out.append(f"    size {key.size}: {gain}{ci}; {c.reason}")
        return out


def margin_note(c) -> tuple[bool, str]:
    """(near, why) for an undecided cell: near the margin when its CI (at the look's
    level) is no wider than the margin (±TARGET, log-symmetric) yet holds one of its edges:
    the launches were precise enough to call a gain of 1 equivalent, so what keeps the
    cell undecided is a true gain near an edge, which no number of launches is sure to
    decide; else the CI is still wider than the margin (more launches would narrow it)."""
    lo_edge, hi_edge = 1 / (1 + TARGET), 1 + TARGET
    if not (c.ci_low and c.ci_high and c.ci_low > 0):
        return False, "no CI"
    width = math.log(c.ci_high / c.ci_low)
    holds = c.ci_low <= lo_edge <= c.ci_high or c.ci_low <= hi_edge <= c.ci_high
    if holds and width <= 2 * math.log1p(TARGET):
        return True, (f"near the margin: its CI holds an edge ({lo_edge:.3f} or "
                      f"{hi_edge:.3f}) and is no wider than the margin: a gain-1 budget "
                      "leaves it; the every-cell budget (h_sig + h_eq within the margin) "
                      "decides it")
    return False, (f"its CI is {math.exp(width / 2):.3f}x either way, wider than the "
                   f"margin's {1 + TARGET:g}x: more launches narrow it")


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _check_keep(ap: argparse.ArgumentParser, keep: Path) -> None:
    """--keep must name a new or empty directory; else one line and exit 2 (a file there
    was a NotADirectoryError traceback)."""
    def refuse(why: str) -> None:
        ap.exit(2, f"{ap.prog}: error: --keep: {keep} {why}\n")

    try:
        if keep.exists() and not keep.is_dir():
            refuse("is not a directory; give a new or empty directory")
        if keep.is_dir() and any(keep.iterdir()):
            refuse("is not empty (an earlier run's stores would be counted with this "
                   "run's); give a new directory")
        above = next((q for q in keep.absolute().parents if q.exists()), None)
        if above is not None and not above.is_dir():
            refuse(f"cannot be made: {above} is not a directory")
    except OSError as exc:
        refuse(f"cannot be read: {exc.strerror}")


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"sizes 0:10, at most 4 rounds ({TO_BUDGET_MIN_ROUNDS} with "
                         f"--to-budget)")
    ap.add_argument("--max-rounds", type=int, default=10, metavar="N",
                    help="rounds interleaved with IMB: launches per variant and tool "
                         "(default 10; the budget of the comparison)")
    ap.add_argument("--to-budget", action="store_true",
                    help="after the N interleaved rounds the core goes on alone to the "
                         "budget it prints then (launches per side that decide every cell), "
                         "at most --max-budget seconds of launches")
    ap.add_argument("--max-budget", type=float, default=600.0, metavar="SEC",
                    help="with --to-budget: the most seconds of launches (both variants, "
                         "the rounds run included) a budget may ask; a larger one is refused "
                         "(default 600; 300 until stop 41, when the budget became the "
                         "every-cell one, x3-4 the gain-1 plan's rounds)")
    ap.add_argument("--budget-plan", default="every-cell", metavar="every-cell|gain-1",
                    help="with --to-budget: the budget the core runs to (both are printed): "
                         "every-cell (default: every cell decided whatever its true gain, "
                         "significant or equivalent, at the spread's 80%% bound; x3-4 the "
                         "rounds) or gain-1 (equivalence within ±5%% at gain 1, 80%% power: "
                         "a cell whose gain sits between 1 and the margin's edge can be left "
                         "undecided; the bench's budget before stop 41)")
    ap.add_argument("--batches", type=int, default=3,
                    help="with --to-budget: looks (campaign invocations) after the "
                         "interleaved rounds (default 3)")
    ap.add_argument("--bind", default="core", metavar="core|none",
                    help="both variants' binding (default core: Open MPI binds 2 ranks to "
                         "cores by default, Hydra does not; none: each launcher's default)")
    ap.add_argument("--order", default="alternate", metavar="|".join(ORDERS),
                    help="which tool launches first in a round (default alternate: the core "
                         "in odd rounds, IMB in even ones)")
    ap.add_argument("--all-sizes", action="store_true",
                    help="the core's launches after a look run every size, as IMB's do (a "
                         "kept run a replay can then test on every round at every size)")
    ap.add_argument("--keep-preempted", action="store_true",
                    help="the core's launches keep the samples during or next to which a "
                         "rank was descheduled in their statistic (the default leaves them "
                         "out: the core's --exclude-preempted; IMB keeps every iteration)")
    ap.add_argument("--replay", nargs="+", metavar="DIR",
                    help="run no launches: recompute both tools' decided cells with this "
                         "checkout's test from runs kept with --keep (each DIR holds core/ "
                         "and imb/); the other options are ignored")
    ap.add_argument("--round-rule", action="store_true",
                    help="with --replay: per kept run the --to-budget plan at its "
                         "interleaved rounds, the what-if plans without its rounds with a "
                         "launch kept off the machine state, and the rounds' spread by what "
                         "their launches went through (compare pairs every round)")
    ap.add_argument("--smaller-budgets", action="store_true",
                    help="with --replay: per kept --to-budget run, its looks replayed at "
                         "25-100%% of the rounds its store holds as the budget: would a "
                         "smaller budget have decided every cell?")
    ap.add_argument("--gain-plan", action="store_true",
                    help="with --replay: per kept run, the rounds each undecided cell "
                         "needs if planned at its observed gain (point, and the CI's worst "
                         "end) beside today's plan at gain 1, at its interleaved rounds and "
                         "at its last")
    ap.add_argument("--simulate", action="store_true",
                    help="run no launches: the every-cell and gain-1 budgets of --to-budget "
                         "on seeded known distributions (paired rounds with launch effects "
                         "like the bench's; scenarios A/A, gains between half the margin and "
                         "its edge, at the edge, mixed, launch modes): how often every cell "
                         "is decided at each, A/A false positives, false equivalence")
    ap.add_argument("--reps", type=int, default=100, metavar="R",
                    help="with --simulate: runs per scenario (default 100; --quick 2)")
    ap.add_argument("--seed", type=int, default=41, help="with --simulate: the seed (default 41)")
    ap.add_argument("--scenario", action="append", choices=SIM_SCENARIOS,
                    help="with --simulate: only this scenario (repeatable; default all)")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep the campaigns and stores in DIR (new or empty)")
    a = ap.parse_args(argv)

    def refuse(why: str) -> None:     # one line, exit 2 (ap.error adds the usage lines)
        ap.exit(2, f"{ap.prog}: error: {why}\n")

    if a.bind not in ("core", "none"):
        refuse(f"--bind: got {a.bind!r}, expected core or none")
    if a.budget_plan not in ("every-cell", "gain-1"):
        refuse(f"--budget-plan: got {a.budget_plan!r}, expected every-cell or gain-1")
    if a.order not in ORDERS:
        refuse(f"--order: got {a.order!r}, expected {', '.join(ORDERS)}")
    if not 2 <= a.max_rounds <= budget.SEARCH_MAX:
        refuse(f"--max-rounds: got {a.max_rounds}, expected 2-{budget.SEARCH_MAX}")
    if a.to_budget and a.max_rounds < TO_BUDGET_MIN_ROUNDS:
        refuse(f"--max-rounds: got {a.max_rounds} with --to-budget, expected "
               f"{TO_BUDGET_MIN_ROUNDS} or more (the budget is planned on rounds 3..N, "
               f"paired from {TO_BUDGET_MIN_ROUNDS - 2} of them)")
    if a.batches < 1:
        refuse(f"--batches: got {a.batches}, expected 1 or more")
    if a.reps < 1:
        refuse(f"--reps: got {a.reps}, expected 1 or more")
    for flag, on in (("--smaller-budgets", a.smaller_budgets), ("--gain-plan", a.gain_plan)):
        if on and not a.replay:
            refuse(f"{flag}: only with --replay DIR... (it replays kept runs)")
    if not (a.max_budget > 0 and math.isfinite(a.max_budget)):
        refuse(f"--max-budget: got {a.max_budget}, expected a positive number of seconds")
    # the campaigns raise `repeats` in their stores: an old run's store would be continued,
    # its launches counted with this run's
    if a.keep:
        _check_keep(ap, Path(a.keep))
    return a


def main(argv: list[str]) -> int:
    a = _args(argv)
    if a.simulate:
        return simulate(a)
    if a.replay:
        if a.smaller_budgets:
            return smaller_budgets(a.replay)
        if a.gain_plan:
            return gain_plans(a.replay)
        return round_rule_replay(a.replay) if a.round_rule else replay(a.replay)
    sizes = "0:10" if a.quick else "0:22"
    compare = (min(a.max_rounds, TO_BUDGET_MIN_ROUNDS if a.to_budget else 4) if a.quick
               else a.max_rounds)
    if shutil.which("flock") is None:
        print("flock not found: this bench takes the shared MPI lock per campaign run")
        return 0
    if not IMB_TGZ.exists():
        print(f"IMB: {IMB_TGZ} not found; set MPIBENCH_PEERS")
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-ttd-"))
    # what --replay needs to repeat this run's looks (their count sets the levels)
    root.mkdir(parents=True, exist_ok=True)
    (root / SETTINGS).write_text(json.dumps({"rounds": compare, "order": a.order,
                                             "to_budget": a.to_budget, "sizes": sizes,
                                             "all_sizes": a.all_sizes, "warm_up": True,
                                             "exclude_preempted": not a.keep_preempted,
                                             "batches": a.batches,
                                             "budget_plan": a.budget_plan}))
    bind = "" if a.bind == "none" else a.bind
    what = (f"{compare} rounds interleaved with IMB, then the core to the budget it prints "
            f"(at most {a.max_budget:g} s of launches)" if a.to_budget
            else f"budget B = {compare} rounds (launches per variant)")
    print(f"# time to decision: Open MPI vs MPICH PingPong {sizes}, np=2, shm; decided = "
          f"significant (compare's launch-level test, paired by round from 3 rounds, "
          f"multiplicity over the table) or equivalent within "
          f"±{100 * TARGET:g}% (TOST); {what}; binding: {a.bind}; first in a round: "
          f"{a.order}; the core's preempted samples "
          f"{'kept (--keep-preempted)' if a.keep_preempted else 'excluded'}")
    print(f"# start: {load()}")
    # the stopping rule (stats.sequential): a look after every round from the second, the
    # interim looks at alpha x 0.2 / (interim looks), the last at alpha; --to-budget fixes
    # the number of looks (and so the interim level) now, before the first look, and the
    # last look's place (the budget) after the interleaved rounds, from their spread alone
    interim = to_budget_interim(compare, a.batches) if a.to_budget else None
    design = (schedule(budget.SEARCH_MAX, compare, a.batches, interim) if a.to_budget
              else schedule(compare, compare, 0))
    core = Tool("core", root / "core",
                CORE.format(sizes=sizes) + ("" if a.keep_preempted else EXCLUDE),
                STATISTIC["core"], design,
                extra=f"budget = {{ launches = {compare} }}", bind=bind,
                only_undecided=not a.all_sizes)
    imb = Tool("imb", root / "imb", IMB.format(tgz=IMB_TGZ, sizes=sizes), STATISTIC["imb"],
               design, bind=bind)
    share_history(core.camp.parent, imb.camp.parent)
    if a.to_budget:
        print(f"# rule: stats.sequential, looks at 2..{compare} launches per side and "
              f"{a.batches} more up to the budget, interim level {design.level(2):.2g}, "
              f"final {design.alpha:g} (at {compare} when the bench does not go on)")
    else:
        print(f"# rule: stats.sequential, looks at 2..{compare} launches per side, interim "
              f"level {design.level(2):.2g}, final {design.alpha:g}")
    print(warm_up((imb, core)))
    print(f"{'round':>5} | {'core s':>9} {'decided':>8} {'':>13} | {'IMB s':>9} "
          f"{'decided':>8} {'':>13} | load, first")
    budget_rounds, final_plan = compare, None
    for k in range(1, compare + 1):
        if core.done and imb.done:
            break
        first = first_tool(a.order, k)
        spent = {t.name: None if t.done else t.run_to(k)
                 for t in ((core, imb) if first == "core" else (imb, core))}
        c_spent, i_spent = spent["core"], spent["imb"]
        looked = time.time()
        if k == 2:
            plan0 = core_plan(core.db, compare, rounds=k + 1)
            print(f"      core {plan0.describe() if plan0 else 'budget: ' + NO_PLAN}")
        if a.to_budget and k == compare:
            # the budget, from the interleaved rounds' spread, before their last look; a
            # core that decided every cell already goes on no further: no budget, and the
            # look at `compare` is IMB's last, at alpha
            if core.done:
                print(f"      core: every cell decided before round {compare}: no budget; "
                      f"the look at {compare} is the last, at alpha")
            else:
                budget_rounds, final_plan = to_budget(a, core, compare)
            design = (schedule(budget_rounds, compare, a.batches, interim)
                      if budget_rounds > compare else schedule(compare, compare, 1, interim))
            core.design = imb.design = design
            record_looks(root, [n for n in design.looks() if n > compare])
        c = core.idle() if c_spent is None else core.look(c_spent)
        i = imb.idle() if i_spent is None else imb.look(i_spent)
        note(root / INVOCATIONS, {"event": "look", "round": k, "start": looked,
                                  "end": time.time()})
        print(f"{k:>5} | {c} | {i} | {os.getloadavg()[0]:.2f} {first} first", flush=True)
    # the gate's seconds of these rounds, as their launch seconds: not the to-budget rounds'
    head = (core.seconds, core.state, imb.seconds, imb.state, core.rounds,
            [waited_seconds(machine_probes(t.db)) for t in (core, imb)])
    if a.to_budget and budget_rounds > compare:
        guard = 2 * a.max_budget
        while not core.done and core.rounds < budget_rounds:
            if core.seconds > guard:
                print(f"      stopped: {core.seconds:.1f} s of launches, past twice "
                      f"--max-budget ({guard:g} s): the launches were slower than planned; "
                      f"the last look was an interim one (conservative)")
                break
            first, n = core.rounds + 1, design.next_look(core.rounds) or budget_rounds
            spent = core.run_to(n)
            looked = time.time()
            c = core.look(spent)
            note(root / INVOCATIONS, {"event": "look", "round": n, "start": looked,
                                      "end": time.time()})
            print(f"{n:>5} | {c} | {core.idle(f'(core rounds {first}-{n})')} | "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    print(f"# end: {load()}")
    summary(a, core, imb, head, budget_rounds, compare, final_plan)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def record_looks(root: Path, looks: list[int]) -> None:
    """bench.json gains the continuation's looks (each the end of one campaign invocation:
    bench_probe_gate --ttd keys the gate's waiting cap by them), when there are any."""
    if looks:
        f = root / SETTINGS
        doc = json.loads(f.read_text())
        f.write_text(json.dumps({**doc, "looks": looks}))


def share_history(core_dir: Path, imb_dir: Path) -> None:
    """One machine-state history for both tools' campaigns (imb's machine-probe.jsonl a
    link to the core's): their gates then hold every kept launch to one reference state.
    Why: each campaign's reference is the state most of ITS launches found; in gate-run-2
    the core's kept launches were in the slow state (329 ns) and IMB's in the fast (71 ns),
    a factor ~3 in small-size latency between the two tools' questions."""
    from mpibench.campaign.machine_probe import HISTORY

    (imb_dir / HISTORY).symlink_to((core_dir / HISTORY).resolve())


def warm_up(tools) -> str:
    """One discarded round before round 1: each tool's campaign as round 1 runs it (one
    launch per variant, IMB built), into a store of its own (DIR/<tool>/warmup/), never
    counted nor tested; so neither tool's round 1 is a cold start (libraries and binaries
    paged in, IMB's build), whichever runs first. The line it prints."""
    secs = []
    for t in tools:
        work = t.camp.parent / "warmup"
        work.mkdir(parents=True, exist_ok=True)
        run_round(work / t.camp.name, HEAD.format(name=t.name, repeats=1, extra=t.extra,
                                                   bind=t.bind) + t.group)
        secs.append(f"{t.name} {launch_seconds(work / 'mpibench.db'):.2f} s")
    return (f"# warm-up (discarded: not counted, not tested): one launch per variant of "
            f"each tool, {', '.join(secs)}")


def first_tool(order: str, k: int) -> str:
    """The tool whose launches come first in round k (1-based): --order core-first or
    imb-first in every round, or alternate: the core in odd rounds, IMB in even ones."""
    if order == "alternate":
        return "core" if k % 2 else "imb"
    return order.removesuffix("-first")


def to_budget(a, core: Tool, compare: int) -> tuple[int, object]:
    """--to-budget: the core's plan from its `compare` rounds (stats/budget.py, no cap) at
    the options its budgeted launches run at (round `compare`'s --target and --max-time:
    the campaign's `budget = "auto"` plan, made once from the pilot, which the
    continuation keeps, since a group's own `options` would make new cells), printed
    before the look at `compare`; the rounds per variant to run to (compare when the plan
    is within them or is refused), and the plan."""
    at = budgeted_options(core.db, compare)
    plans = {every: core_plan(core.db, budget.SEARCH_MAX, at=at or None, every_cell=every)
             for every in (True, False)}
    print(f"      {round_rule_budget(core.db, compare, core.seconds)}")
    print(f"      {plans_line(plans)}")
    p = plans[a.budget_plan == "every-cell"]
    if p is None or p.best.launches is None:
        why = (NO_PLAN if p is None
               else f"more than {budget.SEARCH_MAX} launches per side")
        print(f"      core budget after {compare} rounds: {why} to decide every cell; "
              f"not going on (refused){'' if p is None else ': ' + p.describe()}")
        return compare, p
    k, b = p.best.launches, p.best
    spent = core.seconds
    more = max(k - compare, 0) * 2 * b.launch_s
    total = spent + more
    print(f"      core budget after {compare} rounds: {p.describe()}")
    print(f"      printed budget: {k} launches per side ({max(k - compare, 0)} more rounds at "
          f"--target {b.target_pct:g}% --max-time {b.max_time:g} s --accept-approximate"
          f"{'' if a.keep_preempted else ' --exclude-preempted'}, "
          f"the options of the rounds so far), {total:.1f} s of launches in all "
          f"({spent:.1f} s spent, {more:.1f} s more); {planned_for(p)}"
          + (f" in every cell but the {len(b.beyond)} out of reach (named above)"
             if b.beyond else ""))
    if k <= compare:
        print(f"      the {compare} rounds run are the budget: no more launches")
        return compare, p
    if total > a.max_budget:
        print(f"      refused: {total:.1f} s of launches is above --max-budget "
              f"{a.max_budget:g} s; not going on (the look at {compare} is the last, at "
              f"alpha)")
        return compare, p
    return k, p


def planned_for(p) -> str:
    """What a --to-budget plan was planned for, in words."""
    if p.every_cell is not None:
        return (f"planned for every cell decided whatever its true gain (significant at "
                f"the table's least cell level {p.every_cell:.2g}, or equivalent within "
                f"±{100 * TARGET:g}%) with 80% probability over the final look's spread "
                f"(--budget-plan every-cell)")
    return (f"planned for equivalence within ±{100 * TARGET:g}% at gain 1 with 80% power "
            f"(--budget-plan gain-1)")


def plans_line(plans: dict) -> str:
    """The two --to-budget plans side by side (every-cell, gain 1): launches per side,
    seconds of launches and their ratio."""
    def one(p) -> str:
        if p is None:
            return "no plan"
        b = p.best
        return (f"{b.launches} launches per side, {b.total_s:.1f} s" if b.launches
                else f"more than {budget.SEARCH_MAX} launches per side")
    e, g = plans[True], plans[False]
    ratio = (f", ratio {e.best.launches / g.best.launches:.2f}"
             if e and g and e.best.launches and g.best.launches else "")
    return (f"budgets: every cell decided whatever its gain {one(e)}; equivalence at gain 1 "
            f"(80% power) {one(g)}{ratio}")


def summary(a, core: Tool, imb: Tool, head: tuple, budget_rounds: int, compare: int,
            final_plan) -> None:
    c_s, c_st, i_s, i_st, c_rounds, waits = head
    for label, secs, s, rounds, stat in (("mpibench-core", c_s, c_st, c_rounds, core.statistic),
                                         ("IMB-MPI1     ", i_s, i_st, imb.rounds,
                                          imb.statistic)):
        print(f"{label}: {rounds} rounds, {secs:.1f} s of launches, {s.decided} of "
              f"{s.cells} cells decided ({s.significant} significant, {s.equivalent} "
              f"equivalent within ±{100 * TARGET:g}%; statistic per launch: {stat})")
    print(("mpibench-core's launches ran every size in every round (--all-sizes)"
           if not core.only_undecided else
           "mpibench-core's launches after a look ran only the sizes with an undecided cell "
           "(campaign run --only-sizes; a decision is final per cell): "
           + (", ".join(f"round {r}: {k} sizes" for r, k in core.sizes_run)
              or "none (no look decided a cell before the last round)"))
          + "; IMB-MPI1 ran every size in every round, as its users run it")
    if i_s:
        print(f"ratio core/IMB launch time {c_s / i_s:.2f}; decided core {c_st.decided} vs "
              f"IMB {i_st.decided} (after {compare} interleaved rounds or fewer); the launch "
              f"time excludes {waits[0]:.1f} s (core) / {waits[1]:.1f} s (IMB) of probing and "
              f"waiting for the machine state; with them the ratio is "
              f"{(c_s + waits[0]) / (i_s + waits[1]):.2f}")
    for label, t in (("core", core), ("IMB ", imb)):
        for v, line in sorted(launch_options(t.db).items()):
            print(f"launch options, {label} {v:8}: {line}")
    for label, t in (("core", core), ("IMB ", imb)):
        print(probe_line(t.db, label))
    print(preempted_line(core.db))
    print(cut_short_line(core.db))
    print("where a launch's wall time goes (medians; the parts are medians of their own, "
          "so they need not add up):")
    for line in breakdown(core.db, imb.db):
        print(line)
    for line in time_between(core.camp.parent.parent):
        print(line)
    goal = i_st.decided
    if goal:
        hit = [next(((r, sec) for r, sec, d in t.history if d >= goal), None)
               for t in (core, imb)]
        if hit[0] and hit[1]:
            print(f"time to IMB's {goal} decided cells: core {hit[0][1]:.1f} s (round "
                  f"{hit[0][0]}), IMB {hit[1][1]:.1f} s (round {hit[1][0]}): ratio "
                  f"{hit[0][1] / hit[1][1]:.2f}")
        else:
            print(f"time to IMB's {goal} decided cells: the core never decided {goal}")
    if a.to_budget:
        s = core.state
        best = final_plan.best if final_plan is not None else None
        planned = (f"{best.launches} launches per side, {best.total_s:.1f} s of launches "
                   f"forecast" if best is not None and best.launches else "none")
        # the budget holds in launches; its seconds are a forecast at the pilot's launch
        # cost (stop 36: -36% to +18% of what the rounds then took), printed beside it
        print(f"mpibench-core to the budget ({planned}, run to {budget_rounds}): "
              f"{core.rounds} rounds, {core.seconds:.1f} s of launches, {s.decided} of "
              f"{s.cells} cells decided ({s.significant} significant, {s.equivalent} "
              f"equivalent); {'every cell decided' if core.done else 'not every cell decided'}"
              f" within it; per cell:")
        for line in core.cell_lines():
            print(line)
        near = core.near_margin()
        if near:
            print(f"  near the margin (a CI no wider than ±{100 * TARGET:g}% that holds an "
                  f"edge): sizes {', '.join(near)}: a gain-1 plan leaves a true gain near "
                  f"the edge undecided; the every-cell plan decides it whatever the gain "
                  f"where the spread is at most the one planned")
    tools = () if a.to_budget else ((core, "mpibench-core"), (imb, "IMB-MPI1"))
    for t, label in tools:
        if t.done:
            print(f"{label}: every cell decided within the budget of {budget_rounds} "
                  f"rounds (after {t.rounds})")
        else:
            print(f"{label}: not every cell decided within the budget of {budget_rounds} "
                  f"rounds; undecided:")
            for line in t.undecided_lines():
                print(line)
    # what a decision of every cell needs at the spread of all the core's launches
    # (the plan --budget-plan names: every-cell, or gain 1)
    every = a.budget_plan == "every-cell"
    final = core_plan(core.db, budget.SEARCH_MAX, partial=True, every_cell=every)
    if final is not None:
        print(f"mpibench-core at its final spread ({core.rounds} launches per variant): "
              f"{final.describe()}")
    print(reach_line(final, core, a.max_budget))
    print(cell_budget_line(core.db, core.look_cells, every))


# --- --simulate: the two budgets on known distributions (stop 41) -------------------------
#
# Paired rounds of two variants like the bench's (one launch per variant a round): a launch's
# log statistic at size s is mu_s + its launch effect (shared by its sizes, sd SIM_LAUNCH)
# + its size's own launch effect (sd SIM_SIZE) + within-launch error (sd SIM_WITHIN) + the
# round's effect both variants share (sd SIM_ROUND, a load phase: pairing removes it), and,
# at the small sizes (below 2 KiB) with probability SIM_MODE_P, a slow mode (+SIM_MODE_UP)
# a launch holds for all of them (the small sizes' launch modes the kept runs show). The
# candidate is slower by the cell's true log gain. The bench's own rule on them: looks at
# 2..N at the interim level fixed before the first, the budget planned after round N from
# rounds 3..N of the cells still undecided (core_plan's call: plan_from_rows, keep_within,
# partial, the table's rows), --batches looks up to it, the last at alpha; a decided cell
# gets no more rounds. Both budgets on the same rounds (the first N shared).

SIM_LAUNCH, SIM_SIZE, SIM_WITHIN, SIM_ROUND = 0.05, 0.04, 0.02, 0.1
SIM_MODE_P, SIM_MODE_UP = 0.1, 0.25
SIM_SCENARIOS = ("aa", "between", "edge", "mixed", "modes")


class SimKey(NamedTuple):
    benchmark: str
    size: int


def sim_gains(scenario: str, sizes: int, rng) -> list[float]:
    """The cells' true log gains: aa 0; between |g| uniform in [margin/2 - 1 point, the
    edge] with random signs; edge ±log(1 + margin); mixed (run-74-like) a third of the
    sizes at 0, a third between 0.967 and 1.037, the rest 10-30% either way; modes: A/A
    with the small sizes' launch modes."""
    edge = math.log1p(TARGET)
    sign = rng.choice((-1.0, 1.0), size=sizes)
    if scenario in ("aa", "modes"):
        return [0.0] * sizes
    if scenario == "edge":
        return list(sign * edge)
    if scenario == "between":
        return list(sign * rng.uniform(edge / 2 - 0.01, edge, size=sizes))
    third = sizes // 3
    near = rng.uniform(math.log(0.967), math.log(1.037), size=third)
    far = sign[:sizes - 2 * third] * rng.uniform(math.log(1.1), math.log(1.3),
                                                  size=sizes - 2 * third)
    return [0.0] * third + list(near) + list(far)


def sim_rounds(gains: list[float], rounds: int, modes: bool, rng):
    """{variant: array [round, size] of log launch statistics} for `rounds` rounds."""
    import numpy as np

    s = len(gains)
    out = {}
    common = rng.normal(0, SIM_ROUND, size=(rounds, 1))
    for v, shift in (("openmpi", 0.0), ("mpich", 1.0)):
        y = (common + rng.normal(0, SIM_LAUNCH, size=(rounds, 1))
             + rng.normal(0, SIM_SIZE, size=(rounds, s))
             + rng.normal(0, SIM_WITHIN, size=(rounds, s))
             - shift * np.asarray(gains)[None, :])
        if modes:
            small = min(12, s)
            y[:, :small] += SIM_MODE_UP * (rng.random((rounds, 1)) < SIM_MODE_P)
        out[v] = y
    return out


def sim_family(y: dict, upto: dict[int, int]) -> Family:
    """The bench's Family of simulated rounds: cell j holds its first upto[j] rounds."""
    cells, pairs, repeat = {}, {}, {}
    for j, n in upto.items():
        sides = []
        for v in ("openmpi", "mpich"):
            by = {}
            for r in range(n):
                lid = f"{v}{r}"
                by[lid] = math.exp(y[v][r, j])
                pairs[lid], repeat[lid] = r, r
            sides.append(by)
        cells[SimKey("PingPong", j)] = (sides[0], sides[1], "lower")
    return Family(cells, pairs, repeat, {})


def sim_rows(y: dict, rounds: range, live: list[int]) -> list[dict]:
    """plan_from_rows' rows of these rounds and cells (n 20, a CI of ±1%, 1 ms a cell)."""
    return [{"run_id": f"{v}{r}", "variant": v, "repeat": r, "benchmark": "PingPong",
             "size": j, "n": 20, "median": math.exp(y[v][r, j]),
             "ci_low": math.exp(y[v][r, j]) / 1.01, "ci_high": math.exp(y[v][r, j]) * 1.01,
             "cell_s": 0.001, "launch_s": 0.1, "status": "ok", "stop_reason": None,
             "mode": "adaptive"} for v in ("openmpi", "mpich") for r in rounds for j in live]


def sim_run(y: dict, sizes: int, compare: int, batches: int, every: bool) -> tuple:
    """One run of the bench's rule on simulated rounds y: (budget rounds or None when
    refused, the last look's {cell index: Status})."""
    interim = to_budget_interim(compare, batches)
    design = schedule(budget.SEARCH_MAX, compare, batches, interim)
    upto = dict.fromkeys(range(sizes), 0)
    previous = None
    for n in range(1, compare + 1):
        upto = {j: (n if previous is None or not previous[SimKey("PingPong", j)].decided
                    else m) for j, m in upto.items()}
        if n == compare:
            live = [j for j, m in upto.items() if m == n]
            p = budget_at(sim_rows(y, range(2, compare), live), budget.SEARCH_MAX,
                          {"target": 100.0, "max_time": 0.002}, every,
                          budget.table_rows(("PingPong", j) for j in range(sizes)))
            k = p.best.launches if p is not None else None
            design = (schedule(k, compare, batches, interim) if k and k > compare
                      else schedule(compare, compare, 1, interim))
        if n >= 2:
            _st, previous = judge(sim_family(y, upto), design, n, previous)
    for n in (x for x in design.looks() if x > compare):
        upto = {j: (n if not previous[SimKey("PingPong", j)].decided else m)
                for j, m in upto.items()}
        _st, previous = judge(sim_family(y, upto), design, n, previous)
        if all(c.decided for c in previous.values()):
            break
    return k, {key.size: c.status for key, c in previous.items()}


class SimTally(NamedTuple):
    runs: int = 0
    all_decided: int = 0
    refused: int = 0
    rounds: tuple = ()
    cells: int = 0
    decided: int = 0
    aa: int = 0            # A/A cells (true gain 1)
    fp: int = 0            # of them significant
    fw: int = 0            # runs with an A/A cell significant
    edge: int = 0          # cells at or beyond the margin's edge
    false_eq: int = 0      # of them equivalent


def sim_tally(t: SimTally, k, got: dict, gains: list[float]) -> SimTally:
    edge = math.log1p(TARGET) - 1e-12
    aa = [j for j, g in enumerate(gains) if g == 0.0]
    far = [j for j, g in enumerate(gains) if abs(g) >= edge]
    fp = sum(got[j] is Status.SIGNIFICANT for j in aa)
    return SimTally(t.runs + 1, t.all_decided + all(s is not Status.UNDECIDED
                                                    for s in got.values()),
                    t.refused + (k is None), t.rounds + ((k,) if k else ()),
                    t.cells + len(got), t.decided + sum(s is not Status.UNDECIDED
                                                        for s in got.values()),
                    t.aa + len(aa), t.fp + fp, t.fw + (fp > 0), t.edge + len(far),
                    t.false_eq + sum(got[j] is Status.EQUIVALENT for j in far))


def simulate(a) -> int:
    """--simulate: per scenario both budgets on the same seeded runs (sim_run)."""
    import numpy as np

    sizes, compare = (11, TO_BUDGET_MIN_ROUNDS) if a.quick else (24, a.max_rounds)
    reps = 2 if a.quick else a.reps
    scen = a.scenario or list(SIM_SCENARIOS)
    print(f"# --simulate: {reps} runs per scenario, {sizes} sizes, {compare} interleaved "
          f"rounds, --batches {a.batches}, seed {a.seed}; round d = launch sd "
          f"{SIM_LAUNCH} x2 + size sd {SIM_SIZE} x2 + within {SIM_WITHIN} x2 (round effect "
          f"{SIM_ROUND} shared by both variants); margin ±{100 * TARGET:g}%")
    print("| scenario | budget | rounds per side (median, range) | runs refused | every cell "
          "decided | cells decided | A/A cells significant | runs with one | edge cells "
          "equivalent |")
    print("|---|---|---|---|---|---|---|---|---|")
    started = time.time()
    for si, name in enumerate(scen):
        tallies = {True: SimTally(), False: SimTally()}
        for rep in range(reps):
            rng = np.random.default_rng([a.seed, si, rep])
            gains = sim_gains(name, sizes, rng)
            y = sim_rounds(gains, budget.SEARCH_MAX, name == "modes", rng)
            for every in (True, False):
                k, got = sim_run(y, sizes, compare, a.batches, every)
                tallies[every] = sim_tally(tallies[every], k, got, gains)
        for every, t in tallies.items():
            print(sim_line(name, "every-cell" if every else "gain-1", t), flush=True)
    print(f"# {time.time() - started:.0f} s")
    return 0


def sim_line(name: str, plan: str, t: SimTally) -> str:
    def pct(x: int, n: int) -> str:
        return f"{100 * x / n:.1f}% ({x}/{n})" if n else "-"
    ks = sorted(t.rounds)
    rounds = f"{ks[len(ks) // 2]} ({ks[0]}-{ks[-1]})" if ks else "-"
    return (f"| {name} | {plan} | {rounds} | {t.refused} | {pct(t.all_decided, t.runs)} | "
            f"{pct(t.decided, t.cells)} | {pct(t.fp, t.aa)} | {pct(t.fw, t.runs if t.aa else 0)} "
            f"| {pct(t.false_eq, t.edge)} |")


def cell_budget_line(db: Path, cells: dict, every_cell: bool = False) -> str:
    """Per cell, the rounds that decide it alone (stats.budget.cell_rounds: equivalence
    within ±5% at gain 1, or with every_cell whatever its gain, its round regime's round
    part plus the cell part compare tests it on, each at its 80% upper bound, at the
    options the core's rounds ran at), from all the core's
    rounds: which cells are out of reach (beyond 1000 rounds per side) and what the ones
    in reach need, with its seconds at the core's mean round from round 3. cells: the
    last look's statuses; a cell decided there needs no rounds and is left out."""
    from mpibench.store.report_queries import launch_cost_rows

    with Store(db, readonly=True) as store:
        rows = launch_cost_rows(store, [r["id"] for r in store.runs(status="done")])
    done = {(k.benchmark, k.size) for k, c in cells.items() if c.decided}
    per = {k: n for k, n in budget.cell_rounds(rows, ["openmpi", "mpich"], TARGET,
                                               every_cell=every_cell).items()
           if k not in done}
    if not per:
        return "per undecided cell: none, or no plan (the rounds do not pair)"
    far = [str(k[1]) for k, n in per.items() if n is None]
    near = {k: n for k, n in per.items() if n is not None}
    secs = [v for r, v in round_seconds(db).items() if r >= 2]
    each = sum(secs) / len(secs) if secs else math.nan
    most = max(near.values(), default=0)
    reach = (f"the other {len(near)} need at most {most} rounds per side (~{most * each:.0f} "
             f"s of launches at {each:.2f} s a round): " + ", ".join(
                 f"{k[1]}: {n}" for k, n in near.items()) if near else "none in reach")
    what = ("decided whatever its gain" if every_cell
             else f"equivalence within ±{100 * TARGET:g}% at gain 1")
    return (f"per undecided cell (each alone, {what}, its 80% bound; {len(done)} "
            f"decided): out of reach (more than {budget.SEARCH_MAX} rounds): "
            f"{len(far)} cells{': sizes ' + ', '.join(far) if far else ''}; {reach}")


def reach_line(final, core: Tool, max_budget: float) -> str:
    """Whether 'every cell decided within a budget the bench prints' is reachable at the
    spread of the core's launches so far (its final plan, no cap), and why not."""
    head = "every cell decided within a printed budget:"
    if core.done:
        return (f"{head} yes, every cell decided after {core.rounds} rounds, "
                f"{core.seconds:.1f} s of launches (a budget holds in launches; its "
                f"seconds are a forecast)")
    if final is None:
        return f"{head} no plan ({NO_PLAN})"
    b = final.best
    if b.launches is None:
        return (f"{head} out of reach here: at the spread of the core's {core.rounds} rounds "
                + ("every cell decided whatever its gain" if final.every_cell is not None
                   else f"equivalence within ±{100 * TARGET:g}% at gain 1") + " needs more than "
                f"{budget.SEARCH_MAX} launches per side at every within-launch budget the "
                f"plan weighs (--max-time up to {max(budget.MAX_TIMES):g} s a cell), beyond "
                f"any budget the bench prints (--to-budget refuses it): what stands in the "
                f"way is how much a round's difference varies between rounds (the line "
                f"above)")
    total = b.total_s
    where = "within" if total <= max_budget else "above"
    # not a yes: this run left cells undecided; what follows is a further plan
    head += (f" not in this run ({core.rounds} rounds); planned again at the final "
             f"spread:")
    if b.beyond:
        head += (f" no: {len(b.beyond)} cells out of reach on their own "
                 f"({budget.cells_named(b.beyond)}); the other cells:")
    return (f"{head} {b.launches} launches per side, {total:.0f} s of launches at "
            f"{b.launch_s:.2f} s a launch, {where} --max-budget {max_budget:g} s "
            f"(a plan from all the core's launches and cells; --to-budget runs to its "
            f"own plan, the 'core budget after N rounds' line above, made from the "
            f"budgeted rounds' undecided cells, which can refuse where this one does not"
            + ("" if final.every_cell is not None else
               "; a gain-1 plan can leave cells whose true gain is near the margin's edge "
               "undecided, the every-cell plan decides them") + ")")


# --- the time between launches (time_between): where the wall time between one launch's
# end and the next one's start went, per part, from the stores' timestamps (runs.started,
# finished; each run directory's timing.json), the machine-state gate's records and, for
# runs made since stop 39, the run's INVOCATIONS file (the bench's calls and looks, and
# each invocation's own `campaign run --json` timing)

class Launch(NamedTuple):
    tool: str
    harness: str           # runs.harness: one campaign invocation's process
    started: float         # runs.started: the kept attempt's, before the machine-state gate
    job: float             # timing.json started: the job script's start (the gate passed)
    launch: float          # timing.json launch_started
    end: float             # timing.json finished
    finished: float        # runs.finished: its results committed
    aside: float           # seconds of the attempts the gate set aside before it


def timed_launches(db: Path, tool: str) -> list[Launch]:
    """A store's finished launches with every timestamp the split needs (those without a
    whole, ordered timing.json are left out)."""
    probes = machine_probes(db)
    out = []
    with Store(db, readonly=True) as store:
        runs = store.runs(status="done")
    for r in runs:
        t = _timing_json(Path(r["run_dir"] or "") / "timing.json")
        if t is None or not (r["started"] and r["finished"]):
            continue
        aside = sum((a.get("elapsed_s") or 0.0) + (a.get("waited_s") or 0.0)
                    for a in (probes.get(r["id"]) or {}).get("set_aside") or [])
        x = Launch(tool, r["harness"] or "", r["started"], *t, r["finished"], aside)
        if x.started <= x.job <= x.launch <= x.end <= x.finished:
            out.append(x)
    return out


def _timing_json(f: Path) -> tuple[float, float, float] | None:
    """(started, launch_started, finished) of a job script's timing.json, or None."""
    try:
        doc = json.loads(f.read_text())
        got = tuple(float(doc[k]) for k in ("started", "launch_started", "finished"))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return got if all(map(math.isfinite, got)) else None


def read_invocations(f: Path) -> tuple[list[dict], list[tuple[float, float]], int]:
    """A run's INVOCATIONS file: (its invocations {tool, called, returned, timing: {name:
    seconds}}, its looks' (start, end) spans, lines passed over: not JSON, not an object,
    a needed time missing, not a finite number or out of order). No file: nothing."""
    invs, looks, bad = [], [], 0
    try:
        lines = f.read_text(errors="replace").splitlines()
    except OSError:
        return invs, looks, bad
    for ln in lines:
        try:
            rec = json.loads(ln)
        except (ValueError, RecursionError):     # deep nesting is no ValueError
            rec = None
        if not isinstance(rec, dict):
            bad += 1
            continue
        if rec.get("event") == "look" and _times(rec, "start", "end") is not None:
            looks.append(_times(rec, "start", "end"))
        elif rec.get("event") == "invocation" and isinstance(rec.get("tool"), str) \
                and _times(rec, "called", "returned") is not None:
            timing = rec.get("timing") if isinstance(rec.get("timing"), dict) else {}
            called, returned = _times(rec, "called", "returned")
            invs.append({"tool": rec["tool"], "called": called, "returned": returned,
                         "timing": {k: float(v) for k, v in timing.items() if _finite(v)}})
        else:
            bad += 1
    return invs, looks, bad


def _finite(v) -> bool:
    """A JSON number (not a boolean) that is a finite float (an integer past a float's
    range is not)."""
    if type(v) not in (int, float):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _times(rec: dict, *keys: str) -> tuple[float, ...] | None:
    vals = tuple(rec.get(k) for k in keys)
    if not all(map(_finite, vals)) or list(vals) != sorted(vals):
        return None
    return tuple(map(float, vals))


# the parts of the time before an invocation's first launch, in time order (each gap
# holds those its data can tell apart; INVOCATIONS gives the finer ones)
ACROSS = ("ingest+commit", "status+exit", "bench looks", "bench other", "lock wait",
          "python+imports", "campaign file", "checks", "store open", "sync", "budget plan",
          "set aside", "1st cell prep", "gate", "job script")
WITHIN = ("ingest+commit", "set aside", "next cell prep", "gate", "job script")


def gap_parts(a: Launch, b: Launch, inv_a: dict | None, inv_b: dict | None,
              looks: list[tuple[float, float]]) -> dict[str, float]:
    """{part: seconds} of the time from launch a's end to launch b's start; the parts tile
    it. Within one invocation: a's ingest and commit, attempts set aside, b's preparation,
    the machine-state gate, the job script's start. Across invocations, in between: a's
    invocation's status, output and exit, the bench's looks and its other work, the shared
    MPI lock, then b's invocation's Python start and the command line's imports, the
    campaign file read (with the numpy and stats imports it pulls), the checks (stacks,
    build, launchers, the runner's imports), store open, sync, budget = "auto"'s plan and
    its first cell's preparation (without INVOCATIONS lines: coarser parts, named for
    what they hold)."""
    head = {"ingest+commit": a.finished - a.end}
    tail = {"set aside": b.aside, "gate": b.job - b.started, "job script": b.launch - b.job}
    if a.harness == b.harness:
        return {**head, "next cell prep": b.started - a.finished - b.aside, **tail}
    t = (inv_b or {}).get("timing") or {}
    proc = t.get("process_start") or _harness_start(b.harness)
    if not (proc and a.finished <= proc <= b.started):
        return {**head, "between invocations": b.started - a.finished - b.aside, **tail}
    if inv_a is None or inv_b is None or not _whole(t, proc, b.started):
        return {**head, "exit+bench+lock": proc - a.finished,
                "mpibench start to 1st cell": b.started - proc - b.aside, **tail}
    ran = sum(max(0.0, min(e, inv_b["called"]) - max(s, inv_a["returned"]))
              for s, e in looks)
    # the invocation's plan seconds, at most what lies between its sync and its first
    # cell (two budgeted groups, or a damaged line, must not make a part negative)
    plan = min(t.get("budget_plan_s") or 0.0, max(0.0, b.started - t["synced"] - b.aside))
    return {**head, "status+exit": inv_a["returned"] - a.finished, "bench looks": ran,
            "bench other": inv_b["called"] - inv_a["returned"] - ran,
            "lock wait": proc - inv_b["called"], "python+imports": t["entry"] - proc,
            # the campaign file read apart from the checks since its mark came (stop 39)
            **({"campaign file": t["loaded"] - t["entry"]} if "loaded" in t else {}),
            "checks": t["checked"] - t.get("loaded", t["entry"]),
            "store open": t["store_open"] - t["checked"],
            "sync": t["synced"] - t["store_open"], "budget plan": plan,
            "1st cell prep": b.started - t["synced"] - plan - b.aside, **tail}


def _whole(t: dict, proc: float, first: float) -> bool:
    """An invocation's timing with every mark, in order, before its first cell."""
    marks = [t.get(k) for k in ("entry", "loaded", "checked", "store_open", "synced")
             if k != "loaded" or k in t]
    return all(m is not None for m in marks) and [proc, *marks, first] == sorted(
        [proc, *marks, first])


def _harness_start(token: str) -> float | None:
    """A harness token's process start (runs.harness 'host pid start-ticks') in epoch
    seconds on this machine's current boot; None if it cannot be told (the gap then keeps
    mpibench's start with the time before it)."""
    from mpibench.campaign.runner import ticks_started

    parts = token.split()
    return ticks_started(int(parts[2])) if len(parts) == 3 and parts[2].isdigit() else None


# every part's name, in time order (ACROSS and WITHIN's, and the coarse ones of runs kept
# before INVOCATIONS existed)
PART_ORDER = ("ingest+commit", "status+exit", "bench looks", "bench other", "lock wait",
              "exit+bench+lock", "between invocations", "python+imports", "campaign file",
              "checks", "store open", "sync", "budget plan", "mpibench start to 1st cell",
              "set aside", "1st cell prep", "next cell prep", "gate", "job script")


def time_between(root: Path) -> list[str]:
    """The split of the time between launches of a run (kept or live, both tools' stores
    under root), per kind of gap (within one campaign invocation; across invocations,
    named by the tool whose first launch ends it) and part: medians over the gaps, s."""
    import statistics as st

    launches = sorted((x for t in ("core", "imb") if (root / t / "mpibench.db").is_file()
                       for x in timed_launches(root / t / "mpibench.db", t)),
                      key=lambda x: x.launch)
    if not launches:
        return ["time between launches: no launch with its run directory's timing.json "
                "(the run directories were not kept)"]
    invs, looks, bad = read_invocations(root / INVOCATIONS)

    def inv_of(x: Launch) -> dict | None:
        return next((i for i in invs if i["tool"] == x.tool
                     and i["called"] <= x.launch <= i["returned"]), None)

    groups: dict[tuple[str, str], list[tuple[float, dict]]] = {}
    for a, b in zip(launches, launches[1:], strict=False):
        kind = "within" if a.harness == b.harness else "across"
        groups.setdefault((kind, b.tool), []).append(
            (b.launch - a.end, gap_parts(a, b, inv_of(a), inv_of(b), looks)))
    head = (f"time between launches (s; per kind of gap the median over its N gaps, of the "
            f"gap and of each part (in brackets its sum over them; a count where fewer "
            f"gaps have it): the parts tile every gap, their medians need not add up; from the stores' timestamps, timing.json and "
            f"{INVOCATIONS if invs else 'no ' + INVOCATIONS + ' (a run kept before it: coarser parts)'}"
            f"{f', {bad} of its lines passed over' if bad else ''}):")
    out = [head]
    for (kind, tool), gaps in sorted(groups.items()):
        what = ("within an invocation (one variant's launch to the next's), " + tool
                if kind == "within" else
                f"across invocations, before {tool}'s first launch of an invocation")
        parts = []
        for name in PART_ORDER:
            vals = [p[name] for _, p in gaps if name in p]
            if vals:
                n = f" ({len(vals)})" if len(vals) != len(gaps) else ""
                parts.append(f"{name} {st.median(vals):.3f}{n} [{sum(vals):.1f}]")
        out.append(f"  {what} (N={len(gaps)}): gap {st.median(g for g, _ in gaps):.3f}; "
                   + ", ".join(parts))
    return out


class Replay(NamedTuple):
    """One tool of a kept run, its looks replayed."""
    state: State
    cells: dict           # the last look's {cell key: CellStatus}
    counts: list[int]     # cells decided at each look, from the look at 2 rounds
    seconds: float        # launch seconds of the rounds replayed
    short: dict           # {size: rounds it has} for sizes with fewer than the others


def store_rounds(db: Path) -> int:
    """Rounds a kept store holds: its finished launches' largest repeat index + 1."""
    with Store(db, readonly=True) as store:
        return max((r["repeat"] + 1 for r in store.runs(status="done")), default=0)


def round_seconds(db: Path, set_aside: bool = False) -> dict[int, float]:
    """{round (0-based): the seconds of its finished launches} of a kept store; set_aside:
    with the attempts the machine-state gate set aside before each (set_aside_seconds),
    as launch_seconds and the live run's ratio count them."""
    extra = set_aside_seconds(db) if set_aside else {}
    out: dict[int, float] = {}
    with Store(db, readonly=True) as store:
        for r in store.runs(status="done"):
            secs = (r["elapsed"] or 0.0) + extra.get(r["id"], 0.0)
            out[r["repeat"]] = out.get(r["repeat"], 0.0) + secs
    return out


def cold_start(db: Path) -> float:
    """Round 1's launch seconds over round 2's (the pilot's two rounds, at the same
    options): how much the first round of a run costs more (a cold start); nan without
    both rounds."""
    secs = round_seconds(db)
    return secs[0] / secs[1] if secs.get(1) and 0 in secs else math.nan


class RunReplay(NamedTuple):
    core: int            # cells decided
    imb: int
    ratio: float         # core/IMB launch seconds
    first: str           # who ran first in round 1: C or I
    cold: dict           # {tool: round 1 / round 2 launch seconds}
    modes: dict          # {(tool, variant): (fast, normal, slow) launches at 0 B}


def replay_tool(db: Path, tool: str, rounds: int) -> Replay:
    """The bench's looks 2..rounds on a kept store with today's code (judge, the design of a
    plain run: schedule(rounds, rounds, 0)), decisions carried forward, stopping once
    every cell is decided as the bench does; the launch seconds of those rounds."""
    fam, design = family(db, STATISTIC[tool]), schedule(rounds, rounds, 0)
    state, prev, counts = State(0, 0, 0, 0, ()), None, []
    for n in range(2, rounds + 1):
        state, prev = judge(fam, design, n, prev)
        counts.append(state.decided)
        if state.cells and state.decided == state.cells:
            break
    secs = sum(round_seconds(db, set_aside=True).get(k, 0.0) for k in range(rounds))
    have = {k.size: len({fam.repeat.get(i) for i in b if fam.repeat.get(i, rounds) < rounds})
            for k, (b, _c, _better) in fam.cells.items()}
    top = max(have.values(), default=0)
    return Replay(state, prev or {}, counts, secs,
                  {s: k for s, k in have.items() if k < top})


def _sizes(cells: dict, status: Status) -> str:
    return ", ".join(str(k.size) for k, c in cells.items() if c.status is status) or "-"


def replay_rounds(run: Path, dbs: dict[str, Path]) -> int:
    """The rounds the kept run interleaved (its last look at alpha): its bench.json's, else
    (a run kept before it was written) the most either store holds, as in a plain run,
    whose tools stop early only once every cell is decided."""
    f = run / SETTINGS
    if f.is_file():
        return settings_rounds(f)
    return max(store_rounds(db) for db in dbs.values())


def settings_rounds(f: Path) -> int:
    """The "rounds" of a kept run's bench.json (what --keep wrote: a JSON object whose
    "rounds" is the run's --max-rounds, an integer 2..budget.SEARCH_MAX, the most the
    bench runs); anything else is refused in one line naming the file and what was
    expected (UsageError), never read as a guess (a huge count would be looked at once
    per round)."""
    want = (f'a JSON object with "rounds": an integer 2-{budget.SEARCH_MAX} (what --keep '
            f'writes)')
    try:
        doc = json.loads(f.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{f}: not readable as JSON ({exc}); expected {want}") from None
    rounds = doc.get("rounds") if isinstance(doc, dict) else None
    if type(rounds) is not int or not 2 <= rounds <= budget.SEARCH_MAX:
        raise UsageError(f"{f}: rounds is {repr(rounds)[:60]}; expected {want}")
    return rounds


def settings_looks(f: Path, store_rounds: int) -> list[int] | None:
    """The looks of a kept --to-budget run's continuation (each ended one campaign
    invocation): bench.json's "looks" where the run wrote them (once it printed its plan),
    else rebuilt with its "batches" (3 before it was written) over the rounds the store
    reached (store_rounds), as schedule() spaced them; None for a run that did not go to a
    budget. A value --keep cannot have written is refused in one line naming the file
    (UsageError), as settings_rounds refuses its rounds."""
    compare = settings_rounds(f)
    doc = json.loads(f.read_bytes().decode("utf-8"))
    if doc.get("to_budget") is not True:
        return None
    looks = doc.get("looks")
    if looks is not None:
        ok = (isinstance(looks, list) and looks and all(
            type(n) is int and compare < n <= budget.SEARCH_MAX for n in looks)
            and looks == sorted(set(looks)))
        if not ok:
            raise UsageError(f"{f}: looks is {repr(looks)[:60]}; expected an increasing "
                             f"list of integers {compare + 1}-{budget.SEARCH_MAX} (what "
                             "--keep writes)")
        return looks
    batches = settings_batches(f)
    top = min(max(store_rounds, compare + 1), budget.SEARCH_MAX)
    return [n for n in schedule(top, compare, batches).looks() if n > compare]


def settings_batches(f: Path) -> int:
    """The "batches" of a kept run's bench.json (3, the default, in runs kept before it was
    written); a value --keep cannot have written is refused in one line naming the file
    (UsageError)."""
    settings_rounds(f)             # a readable JSON object (else refused, naming f)
    batches = json.loads(f.read_bytes().decode("utf-8")).get("batches", 3)
    if type(batches) is not int or not 1 <= batches <= budget.SEARCH_MAX:
        raise UsageError(f"{f}: batches is {repr(batches)[:60]}; expected an integer "
                         f"1-{budget.SEARCH_MAX} (what --keep writes)")
    return batches


def first_by_round(dbs: dict[str, Path], rounds: int) -> str:
    """Per round, which tool's launches started first (C: the core, I: IMB; - when one
    tool has none that round), from the stores' start times."""
    starts: dict[str, dict[int, float]] = {}
    for t, db in dbs.items():
        with Store(db, readonly=True) as store:
            for r in store.runs(status="done"):
                at = starts.setdefault(t, {})
                at[r["repeat"]] = min(at.get(r["repeat"], math.inf), r["started"] or math.inf)
    c, i = starts.get("core", {}), starts.get("imb", {})
    return "".join("-" if k not in c or k not in i else "C" if c[k] < i[k] else "I"
                   for k in range(rounds))


# a launch's 0 B statistic against the run's median for that tool and stack: below FAST
# a fast mode, above SLOW a slow one (the VM's launch modes, e.g. Open MPI 0.11 / 0.15 /
# 0.39 us, MPICH 0.11 / 0.21 / 0.70 us)
MODE_FAST, MODE_SLOW = 0.85, 1.6


def modes_line(modes: dict) -> str:
    return (f"0 B launch modes (fast/normal/slow: below {MODE_FAST}x, above {MODE_SLOW}x the "
            f"run's median per tool and stack): " + "; ".join(
                f"{t} {v} {'/'.join(map(str, n))}" for (t, v), n in modes.items()))


def launch_modes(db: Path, tool: str) -> dict[str, tuple[int, int, int]]:
    """{variant: (fast, normal, slow) launches} at 0 B of a kept store."""
    import statistics as st

    fam = family(db, STATISTIC[tool])
    key = next((k for k in fam.cells if k.size == 0), None)
    if key is None:
        return {}
    out = {}
    for v, side in zip(("openmpi", "mpich"), fam.cells[key][:2], strict=True):
        vals = [x for x in side.values() if x and x > 0]
        if not vals:
            continue
        m = st.median(vals)
        fast = sum(x < MODE_FAST * m for x in vals)
        slow = sum(x > MODE_SLOW * m for x in vals)
        out[v] = (fast, len(vals) - fast - slow, slow)
    return out


def replay_run(run: Path) -> RunReplay | None:
    """Print one kept run's replay (core vs IMB) and return its figures, or None when the
    directory holds no kept run (said)."""
    dbs = {t: run / t / "mpibench.db" for t in ("core", "imb")}
    missing = [str(p) for p in dbs.values() if not p.is_file()]
    if missing:
        print(f"{run}: not a kept run (--keep DIR): no {', '.join(missing)}",
              file=sys.stderr)
        return None
    try:
        rounds = replay_rounds(run, dbs)
    except UsageError as exc:
        print(f"{run}: {exc}", file=sys.stderr)
        return None
    if rounds < 2:
        print(f"{run}: {rounds} round(s) kept; a look needs 2")
        return None
    r = {t: replay_tool(db, t, rounds) for t, db in dbs.items()}
    c, i = r["core"], r["imb"]
    order, cold = first_by_round(dbs, rounds), {t: cold_start(db) for t, db in dbs.items()}
    ratio = c.seconds / i.seconds if i.seconds else math.nan
    print(f"{run.name} ({rounds} rounds): core {c.state.decided}/{c.state.cells} "
          f"({c.state.significant} sig, {c.state.equivalent} eq), {c.seconds:.1f} s | IMB "
          f"{i.state.decided}/{i.state.cells} ({i.state.significant} sig, "
          f"{i.state.equivalent} eq), {i.seconds:.1f} s | core/IMB time {ratio:.2f} | "
          f"core >= IMB: {'yes' if c.state.decided >= i.state.decided else 'no'}; first "
          f"per round: {order}; round 1 / round 2 launch seconds: core {cold['core']:.2f}, "
          f"IMB {cold['imb']:.2f}")
    for t, x in r.items():
        print(f"  {t:4} decided by look (2..): {' '.join(map(str, x.counts))}; significant: "
              f"{_sizes(x.cells, Status.SIGNIFICANT)}; equivalent: "
              f"{_sizes(x.cells, Status.EQUIVALENT)}")
        if x.short:
            print(f"  {t:4} sizes with fewer rounds (the live run decided them and stopped "
                  f"measuring them; tested on the rounds they have): " + ", ".join(
                      f"{s} ({k})" for s, k in sorted(x.short.items())))
    print(f"  core {cell_budget_line(dbs['core'], c.cells)}")
    modes = {(t, v): n for t, db in dbs.items() for v, n in launch_modes(db, t).items()}
    print("  " + modes_line(modes))
    for t, db in dbs.items():
        print("  " + probe_line(db, t))
    for line in time_between(run):
        print("  " + line)
    return RunReplay(c.state.decided, i.state.decided, ratio, order[:1], cold, modes)


def replay(dirs: list[str]) -> int:
    """--replay: every kept run's decided cells, core vs IMB, recomputed with today's code
    on the stored launches (no MPI is run), then how often the core decided >= IMB."""
    print(f"# replay of kept runs with this checkout's test: statistic per launch core "
          f"{STATISTIC['core']}, IMB {STATISTIC['imb']}; looks 2..N at a plain run's "
          f"levels (N: the run's rounds, its bench.json, else the most a store holds); "
          f"launch seconds as stored, with the launches the machine-state gate set aside")
    got = [x for x in (replay_run(Path(d)) for d in dirs) if x is not None]
    if not got:
        return 2
    ge = sum(x.core >= x.imb for x in got)
    ratios = [x.ratio for x in got if math.isfinite(x.ratio)]
    span = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
    print(f"replayed {len(got)} runs: core decided >= IMB in {ge} of {len(got)}; cells "
          f"decided in all: core {sum(x.core for x in got)}, IMB "
          f"{sum(x.imb for x in got)}; core/IMB launch time {span}")
    print(cold_line(got))
    tot: dict = {}
    for x in got:
        for k, n in x.modes.items():
            tot[k] = tuple(a + b for a, b in zip(tot.get(k, (0, 0, 0)), n, strict=True))
    print("all runs: " + modes_line(tot))
    return 0


# --smaller-budgets: the shares of a kept --to-budget run's stored rounds replayed as budgets
BUDGET_SHARES = (0.25, 0.4, 0.55, 0.7, 0.85, 1.0)


def budget_replay(db: Path, compare: int, batches: int, budgets: list[int]
                  ) -> list[tuple[int, State, int]]:
    """[(budget, the state at its last look, that look)] of a kept --to-budget run's core
    store, the run's design (schedule(budget, compare, batches) at the interim level
    to_budget_interim fixes, the last look at alpha) replayed at each budget on the first
    `budget` rounds its store holds, stopping where every cell is decided, as the live run
    does: would a smaller budget have decided every cell?"""
    fam, interim = family(db, STATISTIC["core"]), to_budget_interim(compare, batches)
    out = []
    for k in budgets:
        design = schedule(k, compare, batches, interim)
        state, prev, at = State(0, 0, 0, 0, ()), None, compare
        for n in design.looks():
            state, prev = judge(fam, design, n, prev)
            at = n
            if state.cells and state.decided == state.cells:
                break
        out.append((k, state, at))
    return out


def smaller_budgets(dirs: list[str]) -> int:
    """--replay DIR... --smaller-budgets: per kept --to-budget run, its design replayed at
    BUDGET_SHARES of the rounds its core store holds (at least its interleaved rounds + 1):
    cells decided at each budget's last look, and at which look."""
    print(f"# smaller budgets: each kept --to-budget run's looks (every round 2..N, then its "
          f"--batches more up to the budget, the interim level fixed before the first look, "
          f"the last at alpha) replayed at {', '.join(f'{x:g}' for x in BUDGET_SHARES)} of "
          f"the rounds its core store holds, on those rounds only; sizes the live run "
          f"decided early have fewer rounds (the replay caveat of --replay)")
    done = 0
    for d in map(Path, dirs):
        db, f = d / "core" / "mpibench.db", d / SETTINGS
        try:
            top = store_rounds(db) if db.is_file() else 0
            compare = settings_rounds(f) if f.is_file() else 0
            looks = settings_looks(f, top) if compare else None
            batches = settings_batches(f) if looks else 3
        except UsageError as exc:
            print(f"{d}: {exc}", file=sys.stderr)
            continue
        if not looks or top <= compare:
            print(f"{d}: not a kept --to-budget run that went on past its interleaved "
                  f"rounds (needs {SETTINGS} with to_budget and a core store beyond them)",
                  file=sys.stderr)
            continue
        ks = sorted({max(compare + 1, round(x * top)) for x in BUDGET_SHARES})
        print(f"{d.name}: {top} rounds stored ({compare} interleaved, the live budget "
              f"{looks[-1]}, {batches} batches)")
        for k, st, at in budget_replay(db, compare, batches, ks):
            left = f"; undecided: sizes {', '.join(st.undecided)}" if st.undecided else ""
            print(f"  budget {k:4}: {st.decided}/{st.cells} decided ({st.significant} sig, "
                  f"{st.equivalent} eq) at look {at}{left}")
        done += 1
    return 0 if done else 2


def gain_plan(db: Path, n: int) -> tuple[State, list[tuple]]:
    """The what-if of planning at the observed gain instead of gain 1: the core store's
    look at n rounds (a plain run's design, its last look at alpha) and per cell undecided
    there (size, gain, CI, rounds per side: at gain 1 - stats.budget.cell_rounds' TOST -,
    equivalence at the point gain, the difference test at it, equivalence at the CI's end
    farthest from 1, the difference test at its end nearest 1; None: beyond 5000). Each
    on the cell's round and cell parts of rounds 3..n at their 80% bounds (as cell_rounds),
    equivalence as TOST on the near edge's distance (margin - |log gain|), the difference
    test at 0.05 (without Holm's share: optimistic). The rows: rounds 3..n of the cells the
    round n launched, as --to-budget's plan reads them (core_plan's `at`)."""
    from mpibench.store.report_queries import launch_cost_rows

    fam, design, prev = family(db, STATISTIC["core"]), schedule(n, n, 0), None
    for k in range(2, n + 1):
        state, prev = judge(fam, design, k, prev)
    with Store(db, readonly=True) as store:
        rows = launch_cost_rows(store, [r["id"] for r in store.runs(status="done")
                                        if 2 <= r["repeat"] < n])
    # the cells the last round launched (core_plan's `at` rows): a size decided at an
    # early look has too few pairs from round 3 on and would leave its pool unpaired
    last = max((r["repeat"] for r in rows), default=0)
    live = {(r["benchmark"], r["size"]) for r in rows if r["repeat"] == last}
    rows = [r for r in rows if (r["benchmark"], r["size"]) in live]
    spreads = budget.paired_spreads(rows, ["openmpi", "mpich"])
    m, out = math.log1p(TARGET), []
    for key, c in prev.items():
        k2 = (key.benchmark, key.size)
        pool = spreads.get(budget.pool_of(k2))
        if c.status in (Status.SIGNIFICANT, Status.EQUIVALENT) or pool is None \
                or not c.gain or not pool.tested_on([k2]):
            continue
        th = abs(math.log(c.gain))
        ends = sorted(abs(math.log(x)) for x in (c.ci_low, c.ci_high))
        near_1 = 0.0 if c.ci_low < 1 < c.ci_high else ends[0]

        def need(effect: float, eq: bool, pool=pool, k2=k2) -> int | None:
            return _cell_need(pool, k2, effect, eq)
        out.append((key.size, c.gain, c.ci_low, c.ci_high, need(m, True),
                    need(m - th, True), need(th, False), need(m - ends[1], True),
                    need(near_1, False)))
    return state, out


def _cell_need(pool, key, log_effect: float, equivalence: bool) -> int | None:
    """Rounds per side for one cell of its paired pool (stats.budget.pool_cell_rounds,
    cell_rounds' rule: the largest over the Spreads compare tests it on, parts at their
    80% bounds) for an effect of log_effect (logs), to GAIN_PLAN_MAX; None beyond or when
    log_effect <= 0."""
    if log_effect <= 0:
        return None
    return budget.pool_cell_rounds(pool, key, math.expm1(log_effect), budget.PLAN_CONFIDENCE,
                                   equivalence=equivalence, max_n=GAIN_PLAN_MAX)


GAIN_PLAN_MAX = 5000


def gain_plans(dirs: list[str]) -> int:
    """--replay DIR... --gain-plan: per kept run, gain_plan at its interleaved rounds and at
    the most rounds its core store holds."""
    print("# planning at the observed gain (what-if): per cell undecided at the look, rounds "
          "per side at gain 1 (today's plan), at the point gain (equivalence | difference), "
          "at the CI's worst end (equivalence at the end farthest from 1 | difference at the "
          f"end nearest 1); '>{GAIN_PLAN_MAX}': beyond {GAIN_PLAN_MAX}")
    done = 0
    for d in map(Path, dirs):
        db = d / "core" / "mpibench.db"
        try:
            compare = settings_rounds(d / SETTINGS) if (d / SETTINGS).is_file() else 0
        except UsageError as exc:
            print(f"{d}: {exc}", file=sys.stderr)
            continue
        top = store_rounds(db) if db.is_file() else 0
        if compare < TO_BUDGET_MIN_ROUNDS or top < compare:
            print(f"{d}: not a kept run of {TO_BUDGET_MIN_ROUNDS} rounds or more with its "
                  f"{SETTINGS}", file=sys.stderr)
            continue
        for n in sorted({compare, top}):
            state, cells = gain_plan(db, n)
            print(f"{d.name} at {n} rounds: {state.decided}/{state.cells} decided")
            for size, g, lo, hi, *need in cells:
                got = " ".join(f"{x if x is not None else '>' + str(GAIN_PLAN_MAX):>6}"
                               for x in need)
                print(f"  size {size:>8} gain {g:.3f} [{lo:.3f}, {hi:.3f}]: {got}")
        done += 1
    return 0 if done else 2


def cold_line(got: list[RunReplay]) -> str:
    """Round 1 / round 2 launch seconds per tool, medians over the runs in which that tool
    ran first in round 1 and over those in which it ran second: whether a cold start
    falls on whoever runs first."""
    import statistics as st

    bits = []
    for tool, mark in (("core", "C"), ("imb", "I")):
        for when, pick in (("first", True), ("second", False)):
            xs = [x.cold[tool] for x in got
                  if (x.first == mark) == pick and math.isfinite(x.cold[tool])]
            bits.append(f"{tool} {when} {st.median(xs):.2f} ({len(xs)} runs)" if xs
                        else f"{tool} {when} - (0 runs)")
    return ("round 1 / round 2 launch seconds, median over runs, by which tool ran first "
            "in round 1: " + "; ".join(bits))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
