"""`mpibench demo`'s A/A: run under repeats = "decide" with a ±5% equivalence margin, its
ranks bound to cores and its launches gated on the machine state, it adds launches only for
the sizes not yet decided and says per cell how many launches decided it, or that it was
undecided at the maximum with the interval TOST checked, and per benchmark and overall
whether all the sizes together are equivalent within the margin."""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from mpibench.commands import demo
from mpibench.errors import UsageError
from mpibench.report.judge import compare_groups
from mpibench.report.rules import CellKey
from mpibench.stats import budget
from mpibench.stats import simulate as S
from mpibench.stats.launch import POWER
from mpibench.stats.sequential import CellStatus, Design, Look, Status, run_looks

MARGIN = demo.AA_MARGIN


def _cells(rng, bench: str, sd: float, shift: float, n: int, sizes=(8, 1024, 65536)):
    """A benchmark's cells, each side n lognormal launches around 1 us (the candidate's
    times scaled by exp(shift)), keyed as the campaign's decision family keys them."""
    out = {}
    for s in sizes:
        key = ("core", "{}", "b", CellKey(bench, s, 2, "{}", "time"))
        base = list(np.exp(rng.normal(0.0, sd, n)))
        cand = list(np.exp(rng.normal(shift, sd, n)))
        out[key] = (base, cand, "lower")
    return out


def _look(cells, design):
    looks = run_looks(cells, design, pool_key=lambda k: k[3].benchmark)
    return looks[-1]


def test_stop_lines_say_how_each_cell_stopped_on_known_distributions():
    """Tight identical sides decide 'equivalent', a real 30% difference 'significant'
    (each at a look the line names), launch spread 0.5 (log) stays undecided to the
    maximum; every cell is named once, and each undecided cell's printed interval (the
    1 - 2 x level CI TOST checks) reaches beyond the margin, as TOST's failure implies."""
    rng = np.random.default_rng(21)
    design = Design(3, 6, 3, 0.05, MARGIN)
    cells = {**_cells(rng, "PingPong", 0.002, 0.0, 6), **_cells(rng, "Allreduce", 0.5, 0.0, 6),
             **_cells(rng, "Bcast", 0.002, np.log(1.3), 6)}
    lines = demo.stop_lines(_look(cells, design), design)
    assert "looks at 3, 6 launches per variant" in lines[0]
    body = lines[1:]
    def cells_in(prefix: str) -> int:
        return sum(int(re.search(r": (\d+) cell", ln).group(1)) for ln in body
                   if re.match(prefix, ln))

    assert cells_in(r"  PingPong: equivalent within ±5% at [36] launches per variant") == 3
    assert cells_in(r"  Bcast: significant at [36] launches per variant") == 3
    und = [ln for ln in body if ln.startswith("  Allreduce: undecided")]
    assert len(und) == 1 and "at 6 launches per variant (maximum reached): 3 cell(s)" in und[0]
    cis = re.findall(r"9\d(?:\.\d+)?% CI \[([\d.]+), ([\d.]+)\]", und[0])
    assert len(cis) == 3
    for lo, hi in cis:
        assert float(lo) < 1 / (1 + MARGIN) or float(hi) > 1 + MARGIN
    named = sum(int(m) for m in re.findall(r": (\d+) cell\(s\)", "\n".join(body)))
    assert named == len(cells)


def test_a_cell_cut_before_the_maximum_is_not_called_maximum_reached():
    """Launches that ended before the maximum (failed ones) leave the last look short of
    it: the line says so instead of 'maximum reached'."""
    rng = np.random.default_rng(5)
    design = Design(3, 9, 3, 0.05, MARGIN)
    lines = demo.stop_lines(_look(_cells(rng, "Allreduce", 0.5, 0.0, 6), design), design)
    assert any("undecided at 6 launches per variant (the launches ended before the "
               "maximum)" in ln for ln in lines), lines


def _sim_cmp(tmp_path, effect: float):
    """Two benchmarks x 4 sizes, 8 interleaved launches per side with launch spread 0.01
    (log), b faster by exp(effect), through the real Store -> compare path."""
    rng = np.random.default_rng(35)
    store, groups = S.build_store(tmp_path / "aa.db", rng, launches=8, sigma_l=0.01,
                                  within=0.002, effect=effect, sizes=(8, 1024, 16384, 262144),
                                  n_samples=(20, 40), benchmarks=("PingPong", "Allreduce"),
                                  spec={"order": "interleaved"})
    try:
        return compare_groups(store, groups, "a", equivalence=MARGIN)
    finally:
        store.close()


def _tost_lines(lines: list[str]) -> dict[str, tuple[bool, float, float, float]]:
    """equivalence_lines' items: {what: (said equivalent, gain, CI low, CI high)}."""
    out = {}
    for ln in lines[1:]:
        m = re.fullmatch(r"  (\w+)(?: \(4 sizes\))?: (equivalent|not shown equivalent) "
                         r"within ±5%: gain ([\d.]+), 90% CI \[([\d.]+), ([\d.]+)\], "
                         r"TOST p=\S+ \(8\+8 launches\)", ln)
        assert m, ln
        out[m[1]] = (m[2] == "equivalent", *map(float, m.group(3, 4, 5)))
    return out


@pytest.mark.parametrize("effect", [0.0, math.log(1.10)])
def test_per_benchmark_and_overall_equivalence_on_known_distributions(tmp_path, effect):
    """Identical sides with a 1% launch spread: each benchmark's sizes together and the
    whole comparison are equivalent within ±5%; b 10% faster: none of them is, and each
    printed 90% CI (the interval TOST checks) reaches past the margin exactly when the line
    says 'not shown'. The overall line says what the verdict says."""
    cmp = _sim_cmp(tmp_path, effect)
    lines = demo.equivalence_lines(cmp, "b", MARGIN)
    assert lines[0].startswith("A/A per benchmark and overall, all sizes together")
    got = _tost_lines(lines)
    assert set(got) == {"PingPong", "Allreduce", "overall"}
    for said, gain, lo, hi in got.values():
        assert said == (effect == 0.0)
        assert lo <= gain <= hi
        assert said == (lo >= 1 / (1 + MARGIN) - 5e-4 and hi <= 1 + MARGIN + 5e-4)
    assert (cmp.outcomes["b"] == "equivalent") == got["overall"][0]


def test_the_aa_runs_gated_bound_and_with_preempted_samples_left_out():
    """The A/A's variants bind to cores (the gate applies only to bound pairs) and are the
    same stack and transport under two names; its core options keep --max-time and leave
    preempted samples out, sampling on for at most AA_PREEMPTED_MAX_TIME, never below
    --max-time."""
    a, b = demo.aa_variants()
    assert a.name != b.name and (a.stack, a.transport) == (b.stack, b.transport)
    assert a.bind == b.bind == "core"
    assert demo.aa_options({"max_time": 0.05, "timeout": 30.0}) == {
        "max_time": 0.05, "timeout": 30.0, "exclude_preempted": True,
        "preempted_max_time": demo.AA_PREEMPTED_MAX_TIME}
    assert demo.aa_options({"max_time": 1.0})["preempted_max_time"] == 1.0


def test_a_demo_runs_gate_reads_only_its_own_machine_state_history(tmp_path):
    """Each demo invocation's campaigns run in their own directory, so the A/A's gate
    (campaign/machine_probe.MachineGate, which reads the history beside the campaign) starts
    from this run's readings: an earlier demo's quiet readings (~100 ns, written as the gate
    writes them, this host and boot, an hour ago, so within the history's 24 h) must not
    make the reference of a later run. The earlier run's own directory still holds them."""
    from mpibench.campaign.machine_probe import HISTORY, MachineGate, boot_id

    args = argparse.Namespace(max_time=0.01, repeats=3)
    earlier = Path(demo._namespace(args, tmp_path, 3, "20261128-070000").out)
    earlier.mkdir(parents=True)
    line = {"run": "c-0", "median_ns": 101.5, "samples": 600, "source": "launch",
            "host": socket.gethostname(), "time": time.time() - 3600, "boot": boot_id()}
    (earlier / HISTORY).write_text("".join(
        json.dumps({**line, "when": w}) + "\n" for _ in range(200) for w in ("before", "after")))
    assert len(MachineGate(earlier, "gate").history) == 400     # the premise: they count
    later = Path(demo._namespace(args, tmp_path, 3, "20261128-110000").out)
    assert later != earlier and later.parent.parent == earlier.parent.parent
    assert MachineGate(later, "gate").history == []
    assert demo._namespace(args, tmp_path, 3, "20261128-110000").db == \
        demo._namespace(args, tmp_path, 1, "20261128-070000").db   # one store for all runs


def test_two_demos_started_in_the_same_second_take_their_own_directories(tmp_path):
    """Review s40 R6: the stamp is the second a demo started, so two demos into one --out
    in the same second shared runs/STAMP (and its machine-state history and campaign
    names). Each claims its directory: STAMP, then STAMP-2, STAMP-3."""
    stamps = [demo.claim_stamp(tmp_path, "20261128-110000") for _ in range(3)]
    assert stamps == ["20261128-110000", "20261128-110000-2", "20261128-110000-3"]
    assert all((tmp_path / "runs" / s).is_dir() for s in stamps)
    args = argparse.Namespace(max_time=0.01, repeats=3)
    outs = {demo._namespace(args, tmp_path, 3, s).out for s in stamps}
    assert len(outs) == 3


def test_a_demo_whose_out_is_a_file_says_so(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError, match="--out .*cannot create"):
        demo.claim_stamp(tmp_path / "f", "20261128-110000")


@pytest.mark.mpi
def test_the_demos_aa_adds_launches_only_for_undecided_sizes(tmp_path):
    """For real: the A/A comparison as the demo runs it (two sizes, short budgets, at most 6
    launches per variant). The store holds a repeats = "decide" campaign with the ±5%
    margin, the machine-state gate, core binding and preempted samples left out; launches
    after the first look measure exactly the sizes the printed lines call not decided at
    3 launches; every cell is named once; the launches not needed stay pending; the cells
    undecided at the maximum carry the equivalence plan; per benchmark and overall a line
    says whether all the sizes together are equivalent."""
    args = argparse.Namespace(max_time=0.01, repeats=3, aa_max=6, sizes="0:20",
                              aa_sizes="8,64K")
    text, rc = demo.comparison(args, tmp_path, 3, "A/A: test", demo.aa_variants(),
                               "aa-test", 21, aa=True)
    assert rc == 0, text[-3000:]
    con = sqlite3.connect(tmp_path / "mpibench.db")
    (spec,) = con.execute("SELECT spec_json FROM campaigns").fetchone()
    spec = json.loads(spec)
    assert spec["repeats_auto"] == {"until": "decided", "min": 3, "max": 6, "step": 3}
    assert spec["equivalence"] == MARGIN
    assert spec["machine_probe"] == "gate"
    assert {v["bind"] for v in spec["variants"]} == {"core"}
    (group,) = spec["groups"]
    assert group["sizes"] == "8,64K"
    assert group["options"]["exclude_preempted"] is True
    for what in ("PingPong (2 sizes)", "Allreduce (2 sizes)", "overall"):
        assert re.search(rf"\n- {re.escape(what)}: (equivalent|not shown equivalent) "
                         r"within ±5%: gain", text), text[-3000:]
    stops = [ln[2:] for ln in text.splitlines() if ln.startswith("- ")]
    named = sum(int(m) for m in re.findall(r": (\d+) cell\(s\)", "\n".join(stops)))
    assert named == 4, stops                     # PingPong and Allreduce at 8 B and 64 KiB
    went_on = {s for ln in stops if " at 6 launches" in ln
               for s in ("8", "64K") if re.search(rf"[:,] {s}\b", ln)}
    runs = con.execute("SELECT variant, status, repeat FROM runs").fetchall()
    done = {v: sum(1 for vv, st, _r in runs if vv == v and st == "done") for v, *_ in runs}
    assert set(done.values()) == ({6} if went_on else {3}), (done, stops)
    assert sum(st == "pending" for _v, st, _r in runs) == 12 - sum(done.values())
    measured = {s for (s,) in con.execute(
        "SELECT DISTINCT r.size FROM results r JOIN runs u ON u.id = r.run_id "
        "WHERE u.repeat >= 3")}
    assert measured == {{"8": 8, "64K": 65536}[s] for s in went_on}, (measured, stops)
    # each cell still undecided at the maximum is shown with the planner's launches, and
    # the plan's header says how many cells it covers
    undecided = [ln for ln in stops if ": undecided at 6 launches" in ln]
    left = sum(int(re.search(r": (\d+) cell\(s\)", ln).group(1)) for ln in undecided)
    assert sum(len(re.findall(r"plan (?:\d+|> \d+)\)", ln)) for ln in undecided) == left
    assert (f"A/A equivalence plan (stats.budget.cell_rounds) for the {left} undecided"
            in text) == (left > 0), text[-3000:]


def _aa_rows(rng, rounds: int, sds: dict[str, tuple[float, ...]], sd_round=0.005):
    """Store rows (store.report_queries.launch_cost_rows' fields) of an interleaved A/A:
    per round both variants share a launch effect (sd 0.05, cancels in the round's
    difference) and the round difference is a part the benchmark's sizes share (sd_round)
    plus each size's own (sds[bench][i], size 4^i); within-launch CI +-0.1%."""
    rows = []
    for r in range(rounds):
        for bench, per_size in sds.items():
            shared, dr = rng.normal(0, 0.05), rng.normal(0, sd_round)
            for i, sd in enumerate(per_size):
                base = math.exp(shared + rng.normal(0, 0.01))
                cand = base * math.exp(dr + rng.normal(0, sd))
                for v, m in (("base", base), ("cand", cand)):
                    rows.append({"run_id": f"{v}{r}", "variant": v, "repeat": r,
                                 "benchmark": bench, "size": 4 ** i, "n": 50, "median": m,
                                 "ci_low": m * 0.999, "ci_high": m * 1.001, "cell_s": 5e-4,
                                 "launch_s": 0.3 + 0.01 * r + 0.1 * (v == "cand")})
    return rows


def _status(st: Status, n: int) -> CellStatus:
    return CellStatus(st, n, None, None, None, "")


def test_the_undecided_cells_carry_the_planners_launches_for_equivalence():
    """An A/A's undecided cells are shown with the launches per variant the budget planner
    (stats.budget.cell_rounds: TOST within ±5% at gain 1, 80% power, each spread at its 80%
    upper bound) plans from the launches' round differences: 4 sizes per benchmark, each
    on its own part; PingPong's 64 B 3x as noisy as its others (the most launches, named
    first), Allreduce's 64 B far too noisy for any plan (out of reach). A
    cell the rule decided gets no plan. The summary line per benchmark gives the median
    and the largest of its cells in reach and names the cells that need the most; the
    largest in reach is priced at the last round's seconds."""
    rng = np.random.default_rng(34)
    rows = _aa_rows(rng, 12, {"PingPong": (0.03, 0.03, 0.03, 0.09),
                              "Allreduce": (0.03, 0.03, 0.03, 0.8)})
    design = Design(3, 12, 3, 0.05, MARGIN)
    decided = CellKey("PingPong", 1, 2, "{}", "time")
    cells = {("core", "{}", "cand", CellKey(b, 4 ** i, 2, "{}", "time")):
             _status(Status.UNDECIDED, 12) for b in ("PingPong", "Allreduce") for i in range(4)}
    cells[("core", "{}", "cand", decided)] = _status(Status.EQUIVALENT, 6)
    look = Look(12, 0.05, True, cells)
    plan = demo.equivalence_plan(rows, ["base", "cand"], look, MARGIN)
    per = budget.cell_rounds(rows, ["base", "cand"], MARGIN)
    undecided = {(k[-1].benchmark, k[-1].size) for k in cells} - {("PingPong", 1)}
    assert plan == {k: per[k] for k in undecided}
    quiet = [plan[("PingPong", s)] for s in (4, 16)]
    assert all(n is not None and n >= 4 for n in quiet)
    assert plan[("PingPong", 64)] > max(quiet)
    assert plan[("Allreduce", 64)] is None
    assert all(plan[("Allreduce", s)] is not None for s in (1, 4, 16))

    round_s = demo.round_seconds(rows)
    assert round_s == pytest.approx(2 * (0.3 + 0.01 * 11) + 0.1)   # the last round's two
    lines = demo.plan_lines(plan, look, design, round_s)
    assert f"for the {len(undecided)} undecided cell(s)" in lines[0]
    most = max(n for n in plan.values() if n is not None)
    assert (f"took {round_s:.2f} s: the largest plan in reach, {most} launches per variant, "
            f"is about {most * round_s / 60:.0f} min of launches") in lines[0]
    assert f"with {100 * POWER:g}% power" in lines[0] and "not a promise" in lines[0]
    assert f"{100 * budget.PLAN_CONFIDENCE:g}% upper confidence bound" in lines[0]
    (pp,) = [ln for ln in lines[1:] if ln.startswith("  PingPong: ")]
    near = sorted(plan[("PingPong", s)] for s in (4, 16, 64))
    assert (f"3 in reach need median {near[1]:g}, at most {near[-1]} launches per variant; "
            f"the most: 64 {near[-1]}") in pp
    (ar,) = [ln for ln in lines[1:] if ln.startswith("  Allreduce: ")]
    assert re.search(rf"1 out of reach \(more than {budget.SEARCH_MAX} launches per "
                     r"variant\): 64$", ar), ar

    stops = demo.stop_lines(look, design, plan)
    for (bench, size), n in plan.items():
        (line,) = [ln for ln in stops if ln.startswith(f"  {bench}: undecided")]
        shown = f"> {budget.SEARCH_MAX}" if n is None else str(n)
        assert f" {size} (plan {shown})" in line, line
    (eq,) = [ln for ln in stops if ln.startswith("  PingPong: equivalent")]
    assert "plan" not in eq
    md = demo.markdown_lines(stops + lines)
    assert "\n\n- PingPong: 3 in reach" in md or "\n- PingPong: 3 in reach" in md
    assert md.count("\n\nA/A equivalence plan") == 1
