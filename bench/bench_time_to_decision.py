#!/usr/bin/env python3
"""Time to decision: Open MPI vs MPICH PingPong 0:22 over shared memory, np=2.

    .venv/bin/python bench/bench_time_to_decision.py [--quick] [--max-rounds N] [--keep DIR]

A cell is decided when its launch-level test (compare's hierarchical model, Holm over the
table) is significant, or when TOST says the two stacks are equivalent within ±5% (the
campaign's `equivalence = "5%"`); the same test for both tools. The stopping rule is
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
whether every cell was decided within the budget (else which cells were not), with the
load average (the machine is shared) at the start and end.

Each campaign invocation takes the shared MPI lock (/tmp/mpibench-mpi.lock) itself, so the
bench never holds it for long. One run, numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.report.data import load_cells  # noqa: E402
from mpibench.report.select import select_groups  # noqa: E402
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

[variants.mpich]
stack = "mpich"
transport = "shm"
np = 2
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
    if not db.exists():
        return 0.0
    con = sqlite3.connect(db)
    try:
        return float(con.execute("SELECT COALESCE(SUM(elapsed), 0) FROM runs "
                                 "WHERE status = 'done'").fetchone()[0])
    finally:
        con.close()


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

    fam = {}
    for key, by in cells.items():
        b, c = by.get("openmpi"), by.get("mpich")
        if b is not None and c is not None:
            fam[key] = (ordered(b.by_launch), ordered(c.by_launch), b.better)
    if not fam:
        return State(0, 0, 0, 0, ()), {}
    look = decide(fam, design, n=n, previous=previous)
    st = [c.status for c in look.cells.values()]
    sig, eq = st.count(Status.SIGNIFICANT), st.count(Status.EQUIVALENT)
    left = tuple(str(k.size) for k in look.undecided)
    return State(len(st), sig + eq, sig, eq, left), look.cells


def run_repeats(db: Path) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT id, repeat FROM runs"))
    finally:
        con.close()


def plan_line(db: Path) -> str:
    """The budget the core's campaign uses after its first two rounds (stats/budget.py)."""
    from mpibench.stats import budget
    from mpibench.store.report_queries import launch_cost_rows

    with Store(db) as store:
        ids = [r[0] for r in store.db.execute("SELECT id FROM runs WHERE status = 'done'")]
        sides = list(budget.components_from_rows(launch_cost_rows(store, ids)).values())
    p = budget.plan(sides, TARGET, equivalence=True) if len(sides) >= 2 else None
    return p.describe() if p else "budget: not enough launches to plan"


class Tool:
    def __init__(self, name: str, work: Path, group: str, statistic: str, design: Design,
                 extra: str = ""):
        self.name, self.group, self.statistic, self.extra = name, group, statistic, extra
        self.design, self.previous = design, None
        work.mkdir(parents=True, exist_ok=True)
        self.camp, self.db = work / f"{name}.toml", work / "mpibench.db"
        self.rounds, self.seconds = 0, 0.0
        self.state = State(0, 0, 0, 0, ())
        self.done = False

    def round(self) -> str:
        if self.done:
            return f"{'':>9} {'(all decided)':>22}"
        self.rounds += 1
        before = launch_seconds(self.db)
        run_round(self.camp, HEAD.format(name=self.name, repeats=self.rounds,
                                         extra=self.extra) + self.group)
        self.seconds = launch_seconds(self.db)
        if self.rounds < 2:
            return f"{self.seconds - before:>9.2f} {'(1 launch: untested)':>22}"
        self.state, self.previous = decided(self.db, self.statistic, self.design,
                                            self.rounds, self.previous)
        self.done = bool(self.state.cells) and self.state.decided == self.state.cells
        s = self.state
        return (f"{self.seconds - before:>9.2f} {f'{s.decided}/{s.cells}':>8} "
                f"{f'({s.significant} sig, {s.equivalent} eq)':>13}")


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="sizes 0:10, at most 4 rounds")
    ap.add_argument("--max-rounds", type=int, default=10,
                    help="the budget: launches per variant and tool (default 10)")
    ap.add_argument("--keep", metavar="DIR", help="keep the campaigns and stores in DIR")
    a = ap.parse_args(argv)
    sizes = "0:10" if a.quick else "0:22"
    rounds = max(2, min(a.max_rounds, 4) if a.quick else a.max_rounds)
    if shutil.which("flock") is None:
        print("flock not found: this bench takes the shared MPI lock per campaign run")
        return 0
    if not IMB_TGZ.exists():
        print(f"IMB: {IMB_TGZ} not found; set MPIBENCH_PEERS")
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-ttd-"))
    print(f"# time to decision: Open MPI vs MPICH PingPong {sizes}, np=2, shm; decided = "
          f"significant (launch-level test, Holm over the table) or equivalent within "
          f"±{100 * TARGET:g}% (TOST); budget B = {rounds} rounds (launches per variant)")
    print(f"# start: {load()}")
    # the stopping rule (stats.sequential): a look after every round from the second, the
    # interim looks at alpha x 0.2 / looks, the last (the budget) at alpha
    design = Design(min=2, max=rounds, step=1, alpha=0.05, margin=TARGET)
    print(f"# rule: stats.sequential, looks at 2..{rounds} launches per side, interim level "
          f"{design.level(2):.2g}, final {design.alpha:g}")
    core = Tool("core", root / "core", CORE.format(sizes=sizes), "median", design,
                extra='budget = "auto"')
    imb = Tool("imb", root / "imb", IMB.format(tgz=IMB_TGZ, sizes=sizes), "mean", design)
    print(f"{'round':>5} | {'core s':>9} {'decided':>8} {'':>13} | {'IMB s':>9} "
          f"{'decided':>8} {'':>13} | load")
    for k in range(1, rounds + 1):
        if core.done and imb.done:
            break
        c = core.round()
        i = imb.round()
        print(f"{k:>5} | {c} | {i} | {os.getloadavg()[0]:.2f}", flush=True)
        if k == 2:
            print(f"      core {plan_line(core.db)}", flush=True)
    print(f"# end: {load()}")
    for t, label in ((core, "mpibench-core"), (imb, "IMB-MPI1     ")):
        s = t.state
        print(f"{label}: {t.rounds} rounds, {t.seconds:.1f} s of launches, {s.decided} of "
              f"{s.cells} cells decided ({s.significant} significant, {s.equivalent} "
              f"equivalent within ±{100 * TARGET:g}%; statistic per launch: {t.statistic})")
    if imb.seconds:
        print(f"ratio core/IMB launch time {core.seconds / imb.seconds:.2f}; decided "
              f"core {core.state.decided} vs IMB {imb.state.decided}")
    for t, label in ((core, "mpibench-core"), (imb, "IMB-MPI1")):
        if t.done:
            print(f"{label}: every cell decided within budget B = {rounds} rounds "
                  f"(after {t.rounds})")
        else:
            print(f"{label}: not every cell decided within budget B = {rounds} rounds; "
                  f"undecided sizes: {' '.join(t.state.undecided) or '-'}")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
