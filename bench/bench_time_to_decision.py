#!/usr/bin/env python3
"""Time to decision: Open MPI vs MPICH PingPong 0:22 over shared memory, np=2.

    .venv/bin/python bench/bench_time_to_decision.py [--quick] [--max-rounds N|auto]
        [--compare-rounds R] [--cap N] [--keep DIR]

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
1-2 at the core's defaults, later launches at the --target that minimises the launch time
to a decision at the measured variance components (the bench prints that plan).

Per round it prints each tool's launch wall time in that round (the store's per-launch
elapsed seconds: waiting for the shared MPI lock and IMB's build are not counted) and its
cells decided; at the end both totals side by side, the ratio core/IMB launch time, and
whether every cell was decided within the budget (else which cells were not, with their
gain, CI and tests), with the load average (the machine is shared) at the start and end.

The budget. After round 2 the bench prints the core's plan (stats/budget.py, the one
`budget = "auto"` uses, planned for the bench's launches per variant): the launches per
side that decide every cell (equivalence within ±5% for identical stacks, by the
round-paired test: the variance of a round's difference pooled over the sizes, each
component at its 80% upper confidence bound) and the seconds of launches that costs. With
`--max-rounds auto` it then runs to that budget: the interleaved comparison with IMB takes
--compare-rounds rounds (IMB stops there), and the core goes on (a row per batch: its
launch seconds and the rounds it ran), in a few batches of
rounds (one campaign invocation each, so the bench's own overhead stays small), to the
planned launches per side, at most --cap. The stopping rule's design is fixed then, before
the first look: looks after every round up to --compare-rounds, then at each batch, the
last at the budget (at alpha); the same design for both tools. At the end the core's plan
again, from all its launches.

Both variants bind their ranks to cores (`bind = "core"`; --bind none for each launcher's
default). Open MPI binds 2 ranks to cores by default, Hydra (MPICH) does not: on the loaded
2-core machine 4 of 10 unbound MPICH launches of the core ran every PingPong at 4-6 ms
(both ranks on one CPU, a scheduler slice per message) against 0 of 10 bound ones, which
no number of launches averages away. The same binding for both tools.

The time to a decision: besides the totals after the interleaved rounds, the bench
prints the launch seconds each tool had spent at the first look where it had decided as
many cells as IMB decided in all, and their ratio (core / IMB).

Each campaign invocation takes the shared MPI lock (/tmp/mpibench-mpi.lock) itself, so the
bench never holds it for long. One run, numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.report.data import load_cells  # noqa: E402
from mpibench.report.select import select_groups  # noqa: E402
from mpibench.stats.budget import SEARCH_MAX  # noqa: E402
from mpibench.stats.sequential import Design, Status, decide  # noqa: E402
from mpibench.store import Store  # noqa: E402

# the peers tarballs sit beside the repository (../shared/peers), never at an absolute path
PEERS = Path(os.environ.get("MPIBENCH_PEERS") or ROOT.parent / "shared" / "peers")
IMB_TGZ = PEERS / "imb-2021.11.tar.gz"
LOCK = "/tmp/mpibench-mpi.lock"
TARGET = 0.05

HEAD = """
[campaign]
name = "{name}"
repeats = {repeats}
equivalence = "5%"
verify_transport = false
timeout = 900
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

IMB = """
[benchmarks.imb]
suite = "imb"
source = "{tgz}"
benchmarks = ["PingPong"]
sizes = "{sizes}"
"""


def run_round(camp: Path, text: str) -> None:
    camp.write_text(text)
    mpibench = str(Path(sys.executable).parent / "mpibench")
    res = subprocess.run(["flock", LOCK, mpibench, "campaign", "run", "--no-progress",
                          str(camp)], capture_output=True, text=True, timeout=1800)
    if res.returncode not in (0, 1):
        sys.exit(f"campaign run failed ({res.returncode}): {res.stderr[-2000:]}")


def launch_seconds(db: Path) -> float:
    """The store's finished launches' elapsed seconds, summed."""
    if not db.exists():
        return 0.0
    with Store(db, readonly=True) as store:
        return float(sum(r["elapsed"] or 0 for r in store.runs(status="done")))


class State(NamedTuple):
    cells: int
    decided: int
    significant: int
    equivalent: int
    undecided: tuple[str, ...]


def decided(db: Path, statistic: str, design: Design, n: int, previous: dict | None
            ) -> tuple[State, dict]:
    """openmpi vs mpich at the look with n launches per side (stats.sequential.decide: Holm
    over the table's cells or TOST within ±5%, at the design's level for this look;
    decisions of earlier looks stand). Returns the state and the statuses for the next."""
    with Store(db) as store:
        sets = select_groups(store, variants=["openmpi", "mpich"], by="variant")
        cells = load_cells(store, sets, with_samples=False, statistic=statistic)
    repeat = run_repeats(db)

    def ordered(by_launch: dict) -> dict:
        return dict(sorted(by_launch.items(), key=lambda kv: repeat.get(kv[0], 0)))

    fam, pairs = {}, {}
    for key, by in cells.items():
        b, c = by.get("openmpi"), by.get("mpich")
        if b is not None and c is not None:
            fam[key] = (ordered(b.by_launch), ordered(c.by_launch), b.better)
            pairs.update(b.by_round)
            pairs.update(c.by_round)
    if not fam:
        return State(0, 0, 0, 0, ()), {}
    # compare's test: paired by round (the campaigns run interleaved) once every cell has
    # stats.launch.MIN_PAIRS pairs among the launches this look sees, unpaired before
    look = decide(fam, design, n=n, previous=previous, rounds=repeat, pairs=pairs)
    st = [c.status for c in look.cells.values()]
    sig, eq = st.count(Status.SIGNIFICANT), st.count(Status.EQUIVALENT)
    left = tuple(str(k.size) for k in look.undecided)
    return State(len(st), sig + eq, sig, eq, left), look.cells


def breakdown(core_db: Path, imb_db: Path) -> list[str]:
    """Where a launch's wall time goes, medians per variant over the launches of rounds 1-2
    (the core's own options) and of later rounds (the budget's): the launch's elapsed
    seconds (the store's), and for the core from its JSON Lines (core.jsonl in the run
    directory): MPI_Init, the cells (set-up, first call and validation, calibration,
    warm-up, samples: their elapsed_s), the timed samples alone (n x batch x median x 2:
    PingPong's sample is half a round trip; and the sum of the samples, with the samples a
    preemption lengthened, which the median leaves out), and
    what lies outside the core's own clock (the launcher's start and teardown,
    MPI_Finalize: the wall less the core's footer elapsed_s, which runs from before
    MPI_Init to its last record); and per phase the cells by stop reason (how many, their
    seconds: a cell that samples on to --max-time for an exact CI shows there)."""
    import json
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


def run_repeats(db: Path) -> dict[str, int]:
    """{run id: its repeat index} of every launch in the store."""
    with Store(db, readonly=True) as store:
        return {r["id"]: r["repeat"] for r in store.runs()}


def core_plan(db: Path, cap: int, rounds: int | None = None):
    """The core's budget from its launches so far (stats/budget.py, as `budget = "auto"`
    plans it in an interleaved campaign: equivalence within ±5% by the round-paired test,
    at the round differences' variance pooled over the sizes at its 80% upper bound, at
    most `cap` launches per variant; rounds: the rounds per variant the campaign
    invocation that uses the plan runs, the ones still to run count towards compare's
    pairing, as its own plan counts them (campaign.budget.BudgetRule.rounds: the bench
    raises a fixed `repeats`, so after the 2-round pilot the next invocation runs 3 and
    plans with one round more), so the plan printed is the one round 3's launches get;
    None: the launches so far only)."""
    from mpibench.stats import budget
    from mpibench.store.report_queries import launch_cost_rows

    with Store(db) as store:
        ids = [r["id"] for r in store.runs(status="done")]
        rows = launch_cost_rows(store, ids)
    return budget.plan_from_rows(rows, ["openmpi", "mpich"], TARGET, cap, rounds=rounds)


@dataclass(frozen=True)
class Schedule(Design):
    """stats.sequential's design with the looks listed (every round up to the comparison
    with IMB, then one per batch); the levels follow from their count as in Design."""
    points: tuple[int, ...] = ()

    def looks(self) -> list[int]:
        return list(self.points) or super().looks()


def schedule(budget_rounds: int, compare_rounds: int, batches: int) -> Schedule:
    """Looks at 2..compare_rounds, then `batches` more (evenly) up to budget_rounds."""
    pts = list(range(2, min(compare_rounds, budget_rounds) + 1))
    rest = budget_rounds - pts[-1]
    if rest > 0:
        step = math.ceil(rest / max(batches, 1))
        pts += list(range(pts[-1] + step, budget_rounds, step)) + [budget_rounds]
    return Schedule(min=2, max=budget_rounds, step=1, alpha=0.05, margin=TARGET,
                    points=tuple(pts))


class Tool:
    def __init__(self, name: str, work: Path, group: str, statistic: str, design: Design,
                 extra: str = "", bind: str = ""):
        self.name, self.group, self.statistic, self.extra = name, group, statistic, extra
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
        run_round(self.camp, HEAD.format(name=self.name, repeats=n, extra=self.extra,
                                         bind=self.bind) + self.group)
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
    ap.add_argument("--quick", action="store_true", help="sizes 0:10, at most 4 rounds")
    ap.add_argument("--max-rounds", default="10", metavar="N|auto",
                    help="the budget: launches per variant and tool (default 10); auto: "
                         "the core's plan after round 2, at most --cap")
    ap.add_argument("--compare-rounds", type=int, default=10, metavar="R",
                    help="with --max-rounds auto: the rounds interleaved with IMB "
                         "(default 10); the core alone after them")
    ap.add_argument("--cap", type=int, default=60,
                    help="with --max-rounds auto: at most this many launches per variant "
                         "(default 60)")
    ap.add_argument("--batches", type=int, default=3,
                    help="with --max-rounds auto: looks (campaign invocations) after the "
                         "comparison rounds (default 3)")
    ap.add_argument("--bind", default="core", metavar="core|none",
                    help="both variants' binding (default core: Open MPI binds 2 ranks to "
                         "cores by default, Hydra does not; none: each launcher's default)")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep the campaigns and stores in DIR (new or empty)")
    a = ap.parse_args(argv)
    if a.bind not in ("core", "none"):
        ap.error(f"--bind: got {a.bind!r}, expected core or none")
    # the campaigns raise `repeats` in their stores: an old run's store would be continued,
    # its launches counted with this run's
    if a.keep:
        _check_keep(ap, Path(a.keep))
    a.auto = a.max_rounds == "auto"
    if not a.auto:
        try:
            a.max_rounds = int(a.max_rounds)
        except ValueError:
            ap.error(f"--max-rounds: got {a.max_rounds!r}, expected a number or auto")
    return a


def main(argv: list[str]) -> int:
    a = _args(argv)
    sizes = "0:10" if a.quick else "0:22"
    if a.auto:
        a.cap = max(2, min(a.cap, 4) if a.quick else a.cap)
        compare = max(2, min(a.compare_rounds, a.cap))
    else:
        a.cap = max(2, min(a.max_rounds, 4) if a.quick else a.max_rounds)
        compare = a.cap
    if shutil.which("flock") is None:
        print("flock not found: this bench takes the shared MPI lock per campaign run")
        return 0
    if not IMB_TGZ.exists():
        print(f"IMB: {IMB_TGZ} not found; set MPIBENCH_PEERS")
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-ttd-"))
    bind = "" if a.bind == "none" else a.bind
    what = (f"budget: the core's plan after round 2, at most {a.cap} rounds; {compare} "
            "rounds interleaved with IMB" if a.auto
            else f"budget B = {a.cap} rounds (launches per variant)")
    print(f"# time to decision: Open MPI vs MPICH PingPong {sizes}, np=2, shm; decided = "
          f"significant (compare's launch-level test, paired by round from 3 rounds, "
          f"multiplicity over the table) or equivalent within "
          f"±{100 * TARGET:g}% (TOST); {what}; binding: {a.bind}")
    print(f"# start: {load()}")
    # the stopping rule (stats.sequential): a look after every round from the second, the
    # interim looks at alpha x 0.2 / looks, the last (the budget) at alpha; with auto the
    # design is fixed after round 2's launches, before the first look
    design = schedule(a.cap, compare, a.batches)
    core = Tool("core", root / "core", CORE.format(sizes=sizes), "median", design,
                extra=f"budget = {{ launches = {a.cap} }}", bind=bind)
    imb = Tool("imb", root / "imb", IMB.format(tgz=IMB_TGZ, sizes=sizes), "mean", design,
               bind=bind)
    if not a.auto:
        print(f"# rule: stats.sequential, looks at 2..{a.cap} launches per side, interim "
              f"level {design.level(2):.2g}, final {design.alpha:g}")
    print(f"{'round':>5} | {'core s':>9} {'decided':>8} {'':>13} | {'IMB s':>9} "
          f"{'decided':>8} {'':>13} | load")
    budget_rounds, plan0 = a.cap, None
    for k in range(1, compare + 1):
        if core.done and imb.done:
            break
        c_spent = None if core.done else core.run_to(k)
        if k == 2:
            plan0 = core_plan(core.db, a.cap, rounds=k + 1)
            if a.auto:
                budget_rounds = max(compare, plan0.best.launches) \
                    if plan0 is not None and plan0.within_cap else a.cap
                design = schedule(budget_rounds, compare, a.batches)
                core.design = imb.design = design
                core.extra = f"budget = {{ launches = {budget_rounds} }}"
        c = core.idle() if c_spent is None else core.look(c_spent)
        i = imb.idle() if imb.done else imb.look(imb.run_to(k))
        print(f"{k:>5} | {c} | {i} | {os.getloadavg()[0]:.2f}", flush=True)
        if k == 2:
            print(f"      core {plan0.describe() if plan0 else 'budget: too few launches'}")
            lk = design.looks()
            print(f"      rule: stats.sequential, looks at {lk[0]}..{min(compare, lk[-1])}"
                  + (f", then {', '.join(map(str, lk[lk.index(compare) + 1:]))}"
                     if compare in lk and lk[-1] > compare else "")
                  + f" launches per side, interim level {design.level(2):.2g}, final "
                  f"{design.alpha:g} at {design.max}", flush=True)
    head = (core.seconds, core.state, imb.seconds, imb.state, core.rounds)
    if a.auto:
        while not core.done and core.rounds < budget_rounds:
            first, n = core.rounds + 1, design.next_look(core.rounds) or budget_rounds
            c = core.look(core.run_to(n))
            print(f"{n:>5} | {c} | {core.idle(f'(core rounds {first}-{n})')} | "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
    print(f"# end: {load()}")
    summary(a, core, imb, head, budget_rounds, compare)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def summary(a, core: Tool, imb: Tool, head: tuple, budget_rounds: int, compare: int) -> None:
    c_s, c_st, i_s, i_st, c_rounds = head
    for label, secs, s, rounds, stat in (("mpibench-core", c_s, c_st, c_rounds, core.statistic),
                                         ("IMB-MPI1     ", i_s, i_st, imb.rounds,
                                          imb.statistic)):
        print(f"{label}: {rounds} rounds, {secs:.1f} s of launches, {s.decided} of "
              f"{s.cells} cells decided ({s.significant} significant, {s.equivalent} "
              f"equivalent within ±{100 * TARGET:g}%; statistic per launch: {stat})")
    if i_s:
        print(f"ratio core/IMB launch time {c_s / i_s:.2f}; decided core {c_st.decided} vs "
              f"IMB {i_st.decided} (after {compare} interleaved rounds or fewer)")
    print("where a launch's wall time goes (medians; the parts are medians of their own, "
          "so they need not add up):")
    for line in breakdown(core.db, imb.db):
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
    if a.auto:
        s = core.state
        print(f"mpibench-core to the budget: {core.rounds} rounds, {core.seconds:.1f} s of "
              f"launches, {s.decided} of {s.cells} cells decided ({s.significant} "
              f"significant, {s.equivalent} equivalent)")
    tools = ((core, "mpibench-core"),) + (() if a.auto else ((imb, "IMB-MPI1"),))
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
    final = core_plan(core.db, SEARCH_MAX)
    if final is not None:
        print(f"mpibench-core at its final spread ({core.rounds} launches per variant): "
              f"{final.describe()}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
