"""The machine state of a comparison's launches, said under its table.

The local backend's machine-state probe (campaign/machine_probe.py; stats/probe.py says
why) stores with each kept launch of two bound ranks (every result row's extra
"machine_probe") the two CPUs' cache-line round trip before and after it (ns), the state
the campaign judged it in, and the attempts it set aside. For the launches a comparison
uses:

- every kept launch is judged again (stats.probe.judge_launch) against ONE reference for
  the whole comparison: stats.probe.reference over every valid before/after reading of
  every set's compared launches (the coarse state), and within it the finer state of the
  launch's reader (the core's own readings, "reading": "launch", or the probe program's:
  stop 34, the core's ranks see a ~64 ns state beside the ~90 ns one that the probe program
  does not). The campaign judged each launch against the reference of its moment, which
  moves as its history grows; one reference makes "in the reference state" mean the same
  in every set's line;
- per set one line: launches in that state, off it, not judged (no valid reading), not
  probed (and how many were read by the launch itself: the core's own readings at its start
  and end, core/state.c, instead of the probe program around it); and what the campaign did when it ran: attempts set aside (not used), launches
  kept off its reference after the retries, or recorded off it (no gate);
- a WARNING when the gate selected launches of one set (set attempts aside, or waited for
  the reference state before them) while another set's launches
  were not probed (the sides were not selected alike: review finding P3, a variant bound
  to cores against one left to the launcher's binding), and when a compared launch is off
  that reference: the sets' launches were not all in one machine state, which moves
  small-size latency by a factor ~3 on the measured VM; for launches paired by round (an interleaved campaign) it also counts the rounds whose
  baseline and candidate launches were in different states (a paired test removes what
  the two launches of a round share, not a state only one of them was in).

Nothing when no compared launch carries a probe record (older stores, other benchmarks,
launches the probe does not apply to).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from mpibench.stats.probe import (
    Reference,
    State,
    coarse,
    judge_stored,
    reader_of,
    reader_reference,
)

if TYPE_CHECKING:
    from mpibench.report.model import Comparison

LABEL = "machine state (cache-line probe)"
WARNING_LABEL = "WARNING (machine state)"


@dataclass
class SetState:
    """One set's compared launches, by machine state."""
    name: str
    launches: int = 0           # compared launches (runs used by the set's cells)
    probed: int = 0             # of them with a probe record
    reference: int = 0          # judged again: in the comparison's reference state
    off: int = 0                # a valid probe before or after off it
    unknown: int = 0            # not judged: no valid reading before and after
    set_aside: int = 0          # attempts the campaign's gate set aside (not used)
    kept_off_retried: int = 0   # kept "off" by the campaign after its retries
    recorded_off: int = 0       # recorded "off" with nothing set aside (no gate)
    own: int = 0                # judged on the launch's own readings (core/state.c)
    # a candidate paired by round with the baseline: rounds whose two launches were both
    # judged, and of them those whose two launches were in different states
    rounds_judged: int = 0
    rounds_split: int = 0
    states: dict[str, State] = field(default_factory=dict)   # run id -> judged state

    def as_dict(self) -> dict[str, int]:
        return {"launches": self.launches, "probed": self.probed,
                "in_reference_state": self.reference, "off_reference_state": self.off,
                "not_judged": self.unknown, "set_aside_not_used": self.set_aside,
                "kept_off_after_retries": self.kept_off_retried,
                "recorded_off_no_gate": self.recorded_off,
                "read_by_the_launch": self.own,
                "rounds_both_judged": self.rounds_judged,
                "rounds_in_different_states": self.rounds_split}


class OneSided(NamedTuple):
    cells: int          # cells (row x candidate) gated on one side only
    compared: int       # cells with both sides
    gated: list[str]    # the sets whose launches the gate set aside there
    bare: list[str]     # the sets with launches never probed there


@dataclass
class MachineState:
    # the coarse state's centre over every reading (both readers share it; the printed one)
    reference_ns: float | None
    baseline: str
    one_sided: OneSided
    sets: list[SetState] = field(default_factory=list)
    # per reader ("launch", "probe"): the reference its launches are judged against
    refs: dict[str, Reference | None] = field(default_factory=dict)

    @property
    def mixed(self) -> bool:
        return any(s.off for s in self.sets)



class Side(NamedTuple):
    runs: set[str]               # the runs the set's cells used
    probes: dict[str, dict]      # run id -> its probe record, where it has one
    rounds: dict[str, tuple]     # run id -> its round (interleaved campaigns)


def compared_probes(cmp: Comparison) -> dict[str, Side]:
    """Per compared set: the runs its cells used, their probe records and rounds."""
    out: dict[str, Side] = {}
    for name in cmp.sets:
        side = Side(set(), {}, {})
        for row in cmp.rows:
            cell = row.cells.get(name)
            if cell is not None:
                side.runs.update(cell.runs_used)
                side.probes.update(cell.machine_probes)
                side.rounds.update(cell.by_round)
        out[name] = Side(side.runs, {r: p for r, p in side.probes.items() if r in side.runs},
                         side.rounds)
    return out


def _ns(value: Any) -> float | None:
    """A stored round trip (ns), None where there was no valid reading (or the record is
    not a number: nothing is judged on it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _count(s: SetState, run: str, rec: dict, ref: float | None) -> None:
    """Add one launch's record: judged again against ref; what the campaign did."""
    before, after = _ns(rec.get("before_ns")), _ns(rec.get("after_ns"))
    state = judge_stored(before, after, ref)
    s.states[run] = state
    s.reference += state is State.REFERENCE
    s.off += state is State.OFF
    s.unknown += state is State.UNKNOWN
    s.own += rec.get("reading") == "launch"
    aside = rec.get("set_aside")
    n_aside = len(aside) if isinstance(aside, list) else 0
    s.set_aside += n_aside
    if rec.get("state") == State.OFF.value:
        if n_aside:
            s.kept_off_retried += 1
        else:
            s.recorded_off += 1


def _readings(sides) -> list[tuple[float, str]]:
    """The valid before/after readings of the compared launches, with their reader."""
    return [(v, reader_of(rec.get("reading"))) for side in sides
            for rec in side.probes.values()
            for v in (_ns(rec.get("before_ns")), _ns(rec.get("after_ns"))) if v is not None]


def machine_state(cmp: Comparison) -> MachineState | None:
    """The comparison's launches by machine state; None when none carries a probe record."""
    by_set = compared_probes(cmp)
    if not any(side.probes for side in by_set.values()):
        return None
    history = _readings(by_set.values())
    ms = MachineState(coarse([ns for ns, _ in history]), cmp.baseline, one_sided(cmp))
    ms.refs = {who: reader_reference(history, who)
               for who in dict.fromkeys(w for _, w in history)}
    for name, side in by_set.items():
        s = SetState(name, launches=len(side.runs), probed=len(side.probes))
        for run, rec in side.probes.items():
            _count(s, run, rec, ms.refs.get(reader_of(rec.get("reading"))))
        ms.sets.append(s)
    base = next(s for s in ms.sets if s.name == cmp.baseline)
    for s in ms.sets:
        if s is not base:
            _split_rounds(base, s, by_set[base.name].rounds, by_set[s.name].rounds)
    return ms


def _split_rounds(base: SetState, cand: SetState, base_rounds: dict[str, tuple],
                  cand_rounds: dict[str, tuple]) -> None:
    """The rounds in which the baseline's and the candidate's launch (the pairs a paired
    test compares) were both judged, and those in different states."""
    base_run = {rnd: run for run, rnd in base_rounds.items()}
    judged = (State.REFERENCE, State.OFF)
    for run, rnd in cand_rounds.items():
        a, b = base.states.get(base_run.get(rnd, "")), cand.states.get(run)
        if a in judged and b in judged:
            cand.rounds_judged += 1
            cand.rounds_split += a is not b


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("h") else "s")


def set_line(s: SetState, ref: float | None) -> str:
    """One set's sentence."""
    if not s.probed:
        return (f"{s.name}: none of its {_plural(s.launches, 'launch')} probed (the probe "
                "runs around two ranks bound to cores on this node only)")
    head = f"{s.name}: {_plural(s.probed, 'launch')} probed" + (
        f" of {s.launches}" if s.launches > s.probed else "") + (
        f" ({s.own} by their own reading at start and end)" if s.own else "")
    if ref is None:
        states = f"{s.unknown} not judged (no valid probe reading in the comparison)"
    else:
        states = (f"{s.reference} in the reference state (~{ref:.0f} ns), {s.off} off it"
                  + (f", {s.unknown} not judged (a probe before or after it gave no valid "
                     "reading)"
                     if s.unknown else ""))
    ran = f"when run, {_plural(s.set_aside, 'attempt')} set aside (not used)"
    if s.kept_off_retried:
        ran += f", {s.kept_off_retried} kept off the campaign's reference after its retries"
    if s.recorded_off:
        ran += f", {s.recorded_off} recorded off it (not gated)"
    return f"{head}: {states}; {ran}"


def warning_line(ms: MachineState) -> str | None:
    """The WARNING when compared launches are off the comparison's reference state, or
    when the gate selected one set's launches and another set's were not probed."""
    parts = [p for p in (_mixed_clause(ms), _one_sided_clause(ms)) if p]
    return "; ".join(parts) if parts else None


def _one_sided_clause(ms: MachineState) -> str | None:
    """Cells where the gate selected one side's launches and the other side's were never
    probed: the sides were not selected alike (e.g. one variant bound to cores, one not)."""
    one = ms.one_sided
    if not one.cells:
        return None
    return (f"in {one.cells} of {one.compared} compared cells the probe's gate selected "
            f"launches of {', '.join(one.gated)} (set attempts aside, or waited for the "
            f"reference state before them) while {', '.join(one.bare)} launches there "
            "were never probed: the two sides' launches were not selected alike, so a "
            "difference may be the selection's, not the variants'")


def _gated(cell: Any) -> bool:
    """Whether the gate selected any of the cell's launches: it set attempts aside, or it
    waited for the reference state before a launch ("waits" > 0; stored since stop 31 -
    waited_s alone cannot tell, it holds the before-probe's own run time too)."""
    return any(isinstance(p.get("set_aside"), list) and p["set_aside"] or _waited(p)
               for r, p in cell.machine_probes.items() if r in cell.runs_used)


def _waited(p: dict) -> bool:
    w = p.get("waits")
    return isinstance(w, int) and not isinstance(w, bool) and w > 0


def _bare(cell: Any) -> bool:
    return any(r not in cell.machine_probes for r in cell.runs_used)


def one_sided(cmp: Comparison) -> OneSided:
    """Per cell and candidate: did the gate select the launches of one side only?"""
    cells = compared = 0
    gated: dict[str, None] = {}
    bare: dict[str, None] = {}
    for row in cmp.rows:
        base = row.cells.get(cmp.baseline)
        for c in (row.cells.get(cand) for cand in cmp.candidates):
            if base is None or c is None:
                continue
            compared += 1
            for g, b in ((base, c), (c, base)):
                if _gated(g) and _bare(b):
                    cells += 1
                    gated[g.set_name] = bare[b.set_name] = None
                    break
    return OneSided(cells, compared, list(gated), list(bare))


def _mixed_clause(ms: MachineState) -> str | None:
    if not ms.mixed or ms.reference_ns is None:
        return None
    who = ", ".join(f"{s.name} {s.off} of {s.probed}" for s in ms.sets if s.off)
    split = "; ".join(f"in {s.rounds_split} of {s.rounds_judged} rounds {s.name}'s launch "
                      f"and {ms.baseline}'s were in different states" for s in ms.sets
                      if s.rounds_split)
    return (f"the compared launches are not all in one machine state: {who} launches off "
            f"the reference state (a reading before or after outside it: {_bounds(ms)})" + (f"; {split}" if split else "")
            + "; a difference at small sizes may be the machine's state, not the variants'")


def _bounds(ms: MachineState) -> str:
    """The reference state's bounds per reader that judged a compared launch."""
    name = {"launch": "the launch's own readings", "probe": "the probe program's"}
    return ", ".join(f"~{r:.0f} ns, {r.lo:.0f}-{r.hi:.0f}, for {name[who]}"
                     for who, r in ms.refs.items() if r is not None)


def warning(cmp: Comparison) -> str | None:
    """The WARNING's text alone (the report repeats it beside the verdict)."""
    ms = machine_state(cmp)
    return warning_line(ms) if ms is not None else None


def footer(cmp: Comparison) -> list[tuple[str, str]]:
    """The (label, text) lines under the comparison table; none without probe records."""
    ms = machine_state(cmp)
    if ms is None:
        return []
    out = [(LABEL, set_line(s, ms.reference_ns)) for s in ms.sets]
    warn = warning_line(ms)
    return out + ([(WARNING_LABEL, warn)] if warn else [])


def to_obj(cmp: Comparison) -> dict[str, Any] | None:
    """The JSON field "machine_state" (None without probe records)."""
    ms = machine_state(cmp)
    if ms is None:
        return None
    return {"reference_ns": ms.reference_ns,
            "reference": "reference_ns: the coarse state (stats.probe.coarse) of the valid "
                         "before/after readings of every compared launch; each launch "
                         "judged again against its reader's reference "
                         "(stats.probe.reader_reference, reference_bounds_ns; off: a reading "
                         "outside its bounds)",
            "reference_bounds_ns": {who: [round(r.lo, 3), round(r.hi, 3)]
                                    for who, r in ms.refs.items() if r is not None},
            "mixed_states": ms.mixed,
            "cells_gated_on_one_side_only": ms.one_sided.cells,
            "sets": {s.name: s.as_dict() for s in ms.sets},
            "lines": [set_line(s, ms.reference_ns) for s in ms.sets],
            "warning": warning_line(ms)}
