"""`repeats = "auto"` and `repeats = "decide"`: interleaved launches added by stages.

    [campaign]
    repeats = "auto"                                  # min 3, max 10, target 5%
    repeats = { min = 3, max = 12, target = "3%" }    # or explicitly
    repeats = "decide"                                # until decided: min 3, max 12, step 3
    repeats = { until = "decided", min = 3, max = 9, step = 2 }
    equivalence = "5%"                                # the margin "decide" uses

Both run the plan (every launch up to `max`, interleaved) in stages (`Stages`, used by the
local and the batch policy alike): a stage's launches all finish before the next stage is
chosen, from what the store holds then.

`until = "decided"` (stats/sequential.py): looks at min, min + step, ..., max launches per
variant; at each look the campaign's comparison table (each candidate vs its group's first
variant, every size and metric, the geomean rows and verdicts) is one family, adjusted by
the procedure the report prints (stats.multiplicity.adjust_table), and a cell is decided
when significant in it or equivalent within the campaign's `equivalence` margin (TOST), at
a strict level before the last look and at alpha at it (Haybittle-Peto). The next stage runs only the launches of a
group's parameter point that still has an undecided cell, and only for the variants
involved (the baseline and the undecided candidates). The looks are replayed from the
stored launches (`decisions`), so `campaign status` says where each cell stands and why a
point stopped, and a resumed campaign reaches the same decisions. So once the first look
was taken the rule, the margin and the variants' order (the baselines) may not change
(frozen_design: another design would re-decide launches already seen).

The plan holds `max` launches per variant, interleaved as usual (the variants of a point
taking turns first from round to round, campaign/plan.py; cell ids depend on neither the
order nor the rule). Stage 1: the first `min` rounds always run. Then, once per group, the rule looks
at the stage-1 launches (repeat index < min only, also on resume; each candidate against
the group's first variant, every cell, tested as the report tests them) and fixes the
group's total: the smallest n in [min + 3, max] at which every gain's stage-2-spread 95%
CI would be within ±target at the stage-1 spread (stats.two_stage.plan_total). Stage 2
runs the rounds up to that total; there is no further look.

The report prints for the cells of such a campaign the wider of the ordinary CI over every
launch and one whose spread comes from the stage-2 launches only (stats.two_stage
.compare_staged; stage_one_launches says which launches were stage 1, from the store's
repeat index and the campaign's stored rule), with that test's p.

Why: a rule that stops because the CI's own spread came out small prints, at the minimum,
a CI from an underestimated spread (the rule that looked after every round: 6.9% false
positives, 48-64% coverage at the minimum). Planning on the spread of the pair sums (the
rule before, sums_total) fixed that where both sides spread alike, but with a candidate 3x
as noisy as its baseline sums and differences correlate 0.8 and the coverage at the
minimum fell to 88-93%. The stage-2 launches' spread never saw the look, whatever the
spreads, so the wider CI keeps coverage where the rule stops (docs/statistics.md).
`simulate_two_stage` checks false positives and coverage (also at the smallest total) by
simulation; bench/bench_auto_paired.py and bench/bench_inference.py print it.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpibench.errors import UsageError
from mpibench.stats import launch as launch_stats
from mpibench.stats import two_stage
from mpibench.units import percent

DEFAULT_MIN, DEFAULT_MAX, DEFAULT_TARGET = 3, 10, 0.05
# the core's sizes when a group names none (core/args.c's --sizes default)
DEFAULT_CORE_SIZES = "0:22"


UNTIL = ("precise", "decided")


@dataclass(frozen=True)
class AutoRepeats:
    min: int = DEFAULT_MIN
    max: int = DEFAULT_MAX
    target: float = DEFAULT_TARGET      # half-width of the gain's 95% CI, relative
    until: str = "precise"              # "precise" (two-stage, target) or "decided"
    step: int = 0                       # launches per variant between looks ("decided")

    def to_dict(self) -> dict[str, Any]:
        if self.until == "decided":
            return {"until": "decided", "min": self.min, "max": self.max, "step": self.step}
        return {"min": self.min, "max": self.max, "target": self.target}

    def design(self, margin: float | None, alpha: float = 0.05):
        """The stats.sequential Design of `until = "decided"`."""
        from mpibench.stats.sequential import Design

        return Design(self.min, self.max, self.step, alpha, margin)


DECIDE = "decide"


def parse(value: Any, fail) -> AutoRepeats:
    """'auto', 'decide', {min, max, target} or {until = "decided", min, max, step};
    fail(expected) raises the spec's UsageError."""
    from mpibench.stats import sequential as seq

    if value == "auto":
        return AutoRepeats()
    if value == DECIDE:
        return AutoRepeats(seq.DEFAULT_MIN, seq.DEFAULT_MAX, until="decided",
                           step=seq.DEFAULT_STEP)
    if not isinstance(value, dict):
        fail('an integer >= 1, "auto", "decide", or { min = 3, max = 10, target = "5%" }')
    until = value.get("until", "precise")
    if until not in UNTIL:
        fail('until = "decided" (or "precise", the default)')
    keys = {"min", "max", "until"} | ({"step"} if until == "decided" else {"target"})
    unknown = sorted(set(value) - keys)
    if unknown:
        fail(f"only the keys {', '.join(sorted(keys))} (got {', '.join(unknown)})")
    dmin, dmax = ((seq.DEFAULT_MIN, seq.DEFAULT_MAX) if until == "decided"
                  else (DEFAULT_MIN, DEFAULT_MAX))
    lo, hi = value.get("min", dmin), value.get("max", dmax)
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, int) or v < 2:
            fail("min and max as integers >= 2 (a launch-level CI needs two launches)")
    if hi < lo:
        fail(f"max >= min (got min {lo}, max {hi})")
    if until == "decided":
        step = value.get("step", seq.DEFAULT_STEP)
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            fail("step as an integer >= 1 (launches per variant between two looks)")
        return AutoRepeats(lo, hi, until="decided", step=step)
    t = value.get("target", DEFAULT_TARGET)
    t = percent(t) if isinstance(t, str | int | float) else None   # one grammar (units.py)
    if t is None or not 0 < t < 1:
        fail('target as a percentage such as "5%" (or 0.05)')
    return AutoRepeats(lo, hi, float(t))


def group_launches(store, campaign_id: int, group: str, metrics: set[str] | None = None,
                   rounds: dict | None = None, below: int | None = None,
                   cut: dict | None = None) -> dict[str, dict[tuple, dict[str, float]]]:
    """{variant: {cell key: {run id: launch statistic}}} of one group's finished launches
    (read through the store like every comparison); metrics: only these (an application's
    figures of merit, see figures). rounds: filled with {run id: its round key} of the
    launches an interleaved campaign ran (report.data.ResultCell.by_round: what the report
    pairs by). below: only the launches of repeat index < below (the stage-1 rounds: the
    look of repeats = "auto" reads nothing else, also when a resumed campaign already ran
    part of stage 2, so the stage-2 launches never inform the total; stage_one_launches).
    cut: filled with {variant: {cell key: its launches the core cut short}}
    (ResultCell.cut_short: compare tests such a cell alone, stage_two_total too)."""
    from mpibench.report.data import load_cells
    from mpibench.report.rules import comparable

    runs: dict[str, list[str]] = defaultdict(list)
    from mpibench.store.report_queries import done_runs_of_group

    for r in done_runs_of_group(store, campaign_id, group):
        if below is None or int(r["repeat"]) < below:
            runs[r["variant"]].append(r["id"])
    cells = load_cells(store, dict(runs), with_samples=False)
    out: dict[str, dict[tuple, dict[str, float]]] = {v: {} for v in runs}
    first = next(iter(runs), None)           # the group's baseline, as compare's
    for key, by in cells.items():
        if metrics and key.metric not in metrics:
            continue
        base = by.get(first)
        for v, c in by.items():
            # the comparability rule (report/rules.py), as every table applies it
            if base is not None and v != first and not comparable(base, c):
                continue
            if c.status == "ok" and c.launch_values:
                out[v][key] = c.by_launch
                if rounds is not None:
                    rounds.update(c.by_round)
                if cut is not None and c.cut_short:
                    cut.setdefault(v, {})[key] = c.cut_short
    return out


def stage_two_total(per_variant: dict[str, dict[tuple, Any]], rule: AutoRepeats,
                    rounds: dict | None = None, cut: dict | None = None) -> int:
    """Launches per variant for the whole group, from its stage-1 launches ({cell key:
    [statistics] or {launch id: statistic}} per variant, baseline first; rounds = {launch
    id: round key} where the campaign interleaves): each candidate's cells tested against
    the baseline's as the report tests them (stats.launch.compare_cells, a benchmark's
    sizes together, paired by round where it pairs), and the total the smallest n in
    [min + 3, max] at which every gain's stage-2-spread CI would be within ±target at that
    spread (stats.two_stage.plan_total): the CI the report prints for such a campaign is
    the wider of the ordinary one and one whose spread comes from the stage-2 launches
    only (stats.two_stage), which never saw this look. A rule whose max < min + 3 has no
    choice: max. A cell that cannot be tested asks for the maximum; one variant, min.
    cut: {variant: {cell key: its launches the core cut short}} (group_launches' cut): a
    cell with one, on either side, is tested alone (compare_cells' cut), as compare does."""
    names = list(per_variant)
    if len(names) < 2:
        return rule.min
    if not two_stage.staged(rule.min, rule.max):
        return rule.max
    base = per_variant[names[0]]
    goal = math.log1p(rule.target)
    need = two_stage.smallest_total(rule.min, rule.max)
    for cand in names[1:]:
        blocks: dict[tuple, list] = {}
        for key, vals in per_variant[cand].items():
            if key in base:
                ids = {*(cut or {}).get(names[0], {}).get(key, ()),
                       *(cut or {}).get(cand, {}).get(key, ())}
                blocks.setdefault(_bench_of(key), []).append(
                    ((_by_id(base[key]), _by_id(vals), "lower"), getattr(key, "size", None),
                     ids))
        for block in blocks.values():
            tests = launch_stats.compare_cells([c for c, _s, _i in block], rounds=rounds,
                                               sizes=[s for _c, s, _i in block],
                                               cut=[i for _c, _s, i in block])
            need = max(need, two_stage.plan_total(tests, rule.min, rule.min, rule.max, goal))
            if need >= rule.max:
                return rule.max
    return need


def _by_id(vals: Any) -> dict:
    return dict(vals) if isinstance(vals, dict) else dict(enumerate(vals))


def pair_sums(base: Any, cand: Any, rounds: dict | None = None) -> dict:
    """{pair: baseline statistic x candidate statistic} (a product: its log is the sum of
    the logs). With rounds (an interleaved campaign's {launch id: round key}) the pairs
    are the rounds with exactly one usable launch on each side (stats.launch.cell_pairs,
    pair_rounds' own pairing); without, the i-th usable launch of each side (the stored
    order: never the values). base/cand: [statistics] or {launch id: statistic}."""
    def usable(vals) -> list[tuple[Any, float]]:
        items = vals.items() if isinstance(vals, dict) else enumerate(vals)
        return [(k, float(v)) for k, v in items
                if v is not None and math.isfinite(v) and v > 0]
    b, c = usable(base), usable(cand)
    if not rounds:
        return {i: x * y for i, ((_, x), (_, y)) in enumerate(zip(b, c, strict=False))}
    bd, cd = dict(b), dict(c)
    pairs, _usable, _both = launch_stats.cell_pairs(bd, cd, rounds)
    return {r: bd[i] * cd[j] for r, (i, j) in pairs.items()}


def _bench_of(key: tuple) -> tuple:
    """A cell key without its size (the cells pooled together): CellKey or a plain tuple."""
    if hasattr(key, "_replace") and hasattr(key, "size"):
        return key._replace(size=None)
    return ("cells",)


def stage_one_launches(store, run_ids) -> tuple[set[str], set[str]]:
    """(stage 1, staged) of these runs: staged, the launches of campaigns run with repeats
    = "auto" (until = "precise") whose rule can stop before its maximum (max >= min + 3,
    stats.two_stage.staged); stage 1, those of them with a repeat index below the rule's
    min: the rounds the rule's one look read (Stages runs them first and the look reads
    nothing else, group_launches(below=min)), recorded by the store as each run's repeat
    index and the campaign's stored rule (CampaignSpec.to_dict's repeats_auto). The
    report tests the cells of such launches with stats.two_stage.compare_staged. Runs of
    other campaigns, imports and stores from before the rule: both empty."""
    from mpibench.store.report_queries import campaign_specs, run_repeats

    rows = list(run_repeats(store, list(dict.fromkeys(run_ids))))
    rules: dict[int, int | None] = {}
    for cid, text in campaign_specs(store, {r[1] for r in rows}).items():
        try:
            spec = json.loads(text)
        except ValueError:
            spec = {}
        r = spec.get("repeats_auto") if isinstance(spec, dict) else None
        ok = (isinstance(r, dict) and r.get("until", "precise") == "precise"
              and isinstance(r.get("min"), int) and isinstance(r.get("max"), int)
              and two_stage.staged(r["min"], r["max"]))
        rules[cid] = r["min"] if ok else None
    first: set[str] = set()
    staged: set[str] = set()
    for rid, cid, rep in rows:
        lo = rules.get(cid)
        if lo is None or rep is None:
            continue
        staged.add(rid)
        if int(rep) < lo:
            first.add(rid)
    return first, staged


# the stored spec's keys a repeats rule's design is made of, as the campaign file names them
_DESIGN_KEYS = {"campaign.repeats": "repeats_auto", "campaign.equivalence": "equivalence"}
# the variants' order: each candidate is judged against its group's first variant in it
# (decision_cells), so reordering re-decides launches a look saw against another baseline;
# variants may only be appended
VARIANT_ORDER = "the variants' order"
# an application group's figures of merit (benchmarks.NAME.fom): the metrics its cells
# decide on (figures, deciding); another name, regex, unit, direction or source re-decides
# the launches a look saw on other values
FIGURES = "the figures of merit"


def _order(spec: dict) -> list:
    return [v.get("name") for v in spec.get("variants") or [] if isinstance(v, dict)]


def _foms_of(spec: dict) -> dict[str, list]:
    """{group: its figures of merit as stored} (groups stored without any: not listed)."""
    out = {}
    for g in spec.get("groups") or []:
        if isinstance(g, dict) and isinstance(g.get("foms"), list):
            out[g.get("name")] = [{"source": "output", **f} if isinstance(f, dict) else f
                                  for f in g["foms"]]
    return out


def _fom_keys(old: dict, new: dict) -> list[str]:
    """benchmarks.NAME.fom of each group both specs have whose figures of merit differ (a
    group added or dropped changes no figures of the others)."""
    was, now = _foms_of(old), _foms_of(new)
    return [f"benchmarks.{g}.fom" for g in was if g in now and was[g] != now[g]]


def _changed(key: str, old: dict, new: dict) -> bool:
    """Whether a design key differs between the stored and the new spec (the variants'
    order: the old names not all first, in their order)."""
    if key == VARIANT_ORDER:
        was = _order(old)
        return _order(new)[:len(was)] != was
    if key == FIGURES:
        return bool(_fom_keys(old, new))
    return old.get(_DESIGN_KEYS[key]) != new.get(_DESIGN_KEYS[key])


def frozen_design(store, campaign_id: int, spec: dict) -> tuple[str, tuple[str, ...]] | None:
    """(since when, the file's keys) of a stored spec (CampaignSpec.to_dict) whose repeats
    rule has looked at launches the rule's design decided on, so that design may no
    longer change; None when nothing was looked at yet or the rule has no look to protect.
    repeats = "auto" (until = "precise", a rule that can stop before its maximum): once
    stage 2 began (a launch of round >= min started; the look's totals and the report's
    stage 1 come from the stored rule, and the look compares each group's first variant,
    VARIANT_ORDER, with the others on its figures of merit, FIGURES: another baseline or
    metric would plan the resumed look on other launches or values, and launches past a
    lower new total already exist). repeats = "decide": once its first look was taken
    (the launches of rounds < min of a group point have run, or a later launch started;
    the looks are replayed from the stored rule and the campaign's equivalence margin:
    their rounds, their levels alpha x 0.2 / interim looks, TOST at the margin; the
    variants' order, VARIANT_ORDER: each candidate against its group's first variant;
    and the applications' figures of merit, FIGURES: the metrics a group decides on)."""
    from mpibench.store.queries import look_taken, ran_from_repeat

    r = spec.get("repeats_auto")
    if (not isinstance(r, dict) or not isinstance(r.get("min"), int)
            or not isinstance(r.get("max"), int)):
        return None
    if r.get("until") == "decided":
        if not look_taken(store, campaign_id, r["min"]):
            return None
        return (_FIRST_LOOK.format(min=r["min"]) + ": its looks are replayed with the stored "
                "rule and margin (their rounds, levels and TOST)",
                ("campaign.repeats", "campaign.equivalence", VARIANT_ORDER, FIGURES))
    if (r.get("until", "precise") == "precise" and two_stage.staged(r["min"], r["max"])
            and ran_from_repeat(store, campaign_id, r["min"])):
        return (f"stage 2 of its repeats = \"auto\" rule began (launches of round >= min "
                f"{r['min']} ran): the totals and the report's stage 1 depend on the rule, "
                "each group's first variant and its figures of merit",
                ("campaign.repeats", VARIANT_ORDER, FIGURES))
    return None


_FIRST_LOOK = 'the first look of campaign.repeats = "decide" (at {min} launches per variant)'


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_str(s: str) -> str:
    """A TOML basic string: ", \\ and the control characters TOML forbids raw (all but
    tab, DEL included) escaped."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch != "\t" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml(v: Any) -> str:
    """A stored value as a campaign file writes it (TOML: true/false; TOML has no null, so
    a key whose value is None, i.e. absent from the file, is left out)."""
    if isinstance(v, dict):
        items = [(k if _BARE_KEY.fullmatch(str(k)) else _toml_str(str(k)), x)
                 for k, x in sorted(v.items()) if x is not None]
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in items) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v if x is not None) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return repr(v)


def _shown(key: str, value: Any) -> str:
    """A stored design value as the campaign file would write it."""
    if key == VARIANT_ORDER:
        return f"{key} ({', '.join(value)}, first)"
    if value is None:
        return f"{key} unset"
    if key == "campaign.equivalence" and isinstance(value, int | float):
        return f'{key} = "{100 * value:g}%"'
    if isinstance(value, list) and len(value) == 1:
        value = value[0]            # one figure of merit: a table, as the file writes it
    return f"{key} = {_toml(value)}"


def refuse_changed_rule(store, campaign_id: int, old: dict, new: dict, path,
                        planned=None) -> None:
    """A campaign file's repeats rule, and what else its design is made of, may not change
    once the stored rule has looked at launches (frozen_design): each invocation
    overwrites the stored spec with the file's, and the looks (repeats = "decide"), the
    totals and the report's stage 1 (repeats = "auto") are taken from it. A lowered min
    would relabel launches a look read; a changed max, step, margin or application figure
    of merit re-decides launches already seen with another design (other looks, levels or
    values), so the stopping rule's error control no longer holds; a max that makes the
    auto rule unable to stop early would print the ordinary CI for a data-dependent stop.
    old/new: the stored and the new spec (CampaignSpec.to_dict). planned: the new plan's
    (group, point_json(params), variant) of its cells: with repeats = "decide", a variant
    new to a group point whose first look was taken is refused (refuse_added_variant).
    Raises UsageError (nothing written yet)."""
    from mpibench.errors import UsageError

    if any(_changed(k, old, new) for k in (*_DESIGN_KEYS, VARIANT_ORDER, FIGURES)):
        frozen = frozen_design(store, campaign_id, old)
        if frozen is not None:
            since, keys = frozen
            changed = [k for k in keys if k not in (FIGURES,) and _changed(k, old, new)]
            figs = _fom_keys(old, new) if FIGURES in keys else []
            if changed or figs:
                was = _foms_of(old)
                keep = [_shown(k, _order(old) if k == VARIANT_ORDER
                               else old.get(_DESIGN_KEYS[k]))
                        for k in keys if k != FIGURES and (k != VARIANT_ORDER or _order(old))]
                keep += [_shown(f, was[f[len("benchmarks."):-len(".fom")]]) for f in figs]
                raise UsageError(
                    f"{path}: {(changed + figs)[0]} changed after {since}; keep "
                    f"{' and '.join(keep)}, or start a new campaign (another name or --db)")
    if planned is not None:
        refuse_added_variant(store, campaign_id, old, planned, path)


def refuse_added_variant(store, campaign_id: int, old: dict, planned, path) -> None:
    """repeats = "decide": a variant added to a group point whose first look was taken
    (queries.looked_points) would run that point's stage 1 (its rounds < min) after the
    look that acted on it, so the looks replayed from the store (decisions) would no
    longer be the ones the campaign took: UsageError naming the file and the variant. A
    point whose look is still to come, and a new group or point, may take it. planned:
    (group, point_json(params), variant) of the new plan's cells."""
    from mpibench.errors import UsageError
    from mpibench.store.queries import looked_points

    r = old.get("repeats_auto")
    if not is_decide(old) or not isinstance(r.get("min"), int):
        return
    looked = None
    for g, point, v in planned:
        if looked is None:
            looked = looked_points(store, campaign_id, r["min"])
        have = looked.get((g, point))
        if have is not None and v not in have:
            at = "" if point == "{}" else f" (parameters {point})"
            raise UsageError(
                f"{path}: variant {v} added to group {g}{at} after "
                f"{_FIRST_LOOK.format(min=r['min'])}: its launches would reopen that "
                "point's stage 1, which the looks already decided on; remove it from the "
                "group, or start a new campaign (another name or --db)")


def simulate_two_stage(rng: np.random.Generator, reps: int = 200, *, sigma_l: float = 0.05,
                       cells: int = 20, rule: AutoRepeats = AutoRepeats(),
                       alpha: float = 0.05, effect: float = 0.0, size_part: float = 0.5,
                       rounds: str = "none", round_sd: float = 0.0, paired: bool = False,
                       cand_scale: float = 1.0, total=None, staged: bool = True
                       ) -> dict[str, float]:
    """Comparisons under the two-stage rule, launch statistics from the stats.simulate
    model (a launch offset shared by the cells, sd sigma_l, plus a cell-specific part of
    size_part x sigma_l; the candidate's both x cand_scale): per-cell false positives
    before and after Holm, gain-CI coverage overall and in the comparisons that stopped at
    the minimum, launches used.

    rounds/round_sd: a round effect both launches of a round share
    (stats.simulate.round_offsets: "none", "normal", "two-mode"). paired: the launches
    carry round keys (an interleaved campaign), so the rule pairs by round and the final
    test is the paired one (stats.launch.pair_rounds), as the report's; else random order
    (the unpaired test). total: the rule (stage_two_total's signature), for comparisons.
    staged: the final test is the report's for such a campaign (stats.two_stage
    .compare_staged: the first `min` rounds are stage 1); False, the ordinary test over
    every launch (what the report printed before it knew the stages).
    "smallest" below is the rule's smallest total (two_stage.smallest_total; min for
    another `total`)."""
    from mpibench import stats
    from mpibench.stats.simulate import round_offsets

    total = total or stage_two_total
    smallest = (two_stage.smallest_total(rule.min, rule.max) if total is stage_two_total
                else rule.min)
    raw = sig = cover = cells_n = stopped_min = cover_min = cells_min = 0
    used = []
    keys = {side: [(side, r) for r in range(rule.max)] for side in ("a", "b")}
    round_of = {k: k[1] for ks in keys.values() for k in ks} if paired else None
    for _ in range(reps):
        offs = np.array([round_offsets(rng, rounds, round_sd) for _ in range(rule.max)])

        def launches(shift: float, off: np.ndarray, scale: float) -> np.ndarray:
            u = rng.normal(0, sigma_l * scale, (rule.max, 1))
            return np.exp(shift + u + off[:, None]
                          + rng.normal(0, sigma_l * size_part * scale, (rule.max, cells)))
        a, b = launches(0.0, offs[:, 0], 1.0), launches(-effect, offs[:, 1], cand_scale)

        def by_id(x: np.ndarray, side: str, m: int, k: int) -> dict:
            return dict(zip(keys[side][:m], x[:m, k].tolist(), strict=True))
        m = rule.min
        n = total({"a": {("bench", k): by_id(a, "a", m, k) for k in range(cells)},
                   "b": {("bench", k): by_id(b, "b", m, k) for k in range(cells)}},
                  rule, round_of)
        final = [(by_id(a, "a", n, k), by_id(b, "b", n, k), "lower") for k in range(cells)]
        if staged:
            first = set(keys["a"][:m]) | set(keys["b"][:m])
            ts = [t for t, _ in two_stage.compare_staged(final, first, alpha, round_of)]
        else:
            ts = launch_stats.compare_cells(final, alpha, rounds=round_of)
        ps = [t.p for t in ts]
        raw += sum(p <= alpha for p in ps)
        sig += int((stats.holm(ps) <= alpha).sum())
        hits = sum(t.ci_low <= math.exp(effect) <= t.ci_high for t in ts)
        cover += hits
        cells_n += cells
        if n == smallest:
            stopped_min += 1
            cover_min += hits
            cells_min += cells
        used.append(n)
    return {"reps": reps, "cells": cells_n, "raw": raw / cells_n, "holm": sig / cells_n,
            "coverage": cover / cells_n,
            "coverage_at_min": cover_min / cells_min if cells_min else float("nan"),
            "stopped_at_min": stopped_min / reps, "median_launches": float(np.median(used)),
            "mean_launches": float(np.mean(used)), "max_launches": int(max(used))}


def simulate_sequential(rng: np.random.Generator, reps: int = 200, *, sigma_l: float = 0.1,
                        cells: int = 20, rule: AutoRepeats = AutoRepeats(),
                        alpha: float = 0.05, effect: float = 0.0) -> str:
    """The two-stage rule, summarised in one line (kept under its old name for callers)."""
    r = simulate_two_stage(rng, reps, sigma_l=sigma_l, cells=cells, rule=rule, alpha=alpha,
                           effect=effect)
    return (f"{reps} comparisons x {cells} cells, sigma_L {sigma_l}, min {rule.min} max "
            f"{rule.max} target ±{100 * rule.target:g}%: cells with p <= {alpha:g} (unadjusted) "
            f"{100 * r['raw']:.2f}%, significant after Holm {100 * r['holm']:.2f}%, gain-CI "
            f"coverage {100 * r['coverage']:.1f}% (when stopped at the minimum "
            f"{100 * r['coverage_at_min']:.1f}%), launches per side used: median "
            f"{r['median_launches']:g}, max {r['max_launches']} (stopped at the minimum in "
            f"{100 * r['stopped_at_min']:.0f}%, before max in "
            f"{100 * (1 - (r['max_launches'] == rule.max) * 0):.0f}%)")


# ---------------------------------------------------------------------------------------
# Stages: what both policies run, stage by stage

def point_json(params: dict) -> str:
    """A parameter point as the store's params_json holds it."""
    return json.dumps(params, sort_keys=True, default=str)


def is_decide(spec: dict) -> bool:
    """A stored campaign spec (CampaignSpec.to_dict) whose repeats = "decide"."""
    return (spec.get("repeats_auto") or {}).get("until") == "decided"


def design_of(spec: dict):
    """The stats.sequential Design of a stored `until = "decided"` spec."""
    from mpibench.stats.sequential import Design

    r = spec["repeats_auto"]
    return Design(r["min"], r["max"], r["step"], 0.05, spec.get("equivalence"))


def figures(spec) -> dict[str, set[str]]:
    """{group: the metrics it decides on} (a CampaignSpec or its stored dict): an
    application's figures of merit (the wall time every launch also records decides only
    where it is the figure); groups not listed decide on every metric they measure."""
    groups = (spec.get("groups") or [] if isinstance(spec, dict)
              else [g.to_dict() for g in spec.groups])
    out = {}
    for g in groups:
        names = {f["name"] for f in (g.get("foms") or [])}
        if names:
            out[g["name"]] = names
    return out


def decision_cells(store, campaign_id: int, order: list[str],
                   metrics: dict[str, set[str]] | None = None,
                   rounds: dict[str, int] | None = None,
                   pairs: dict[str, tuple] | None = None,
                   cut: dict[tuple, set] | None = None) -> dict[tuple, tuple]:
    """The family of `until = "decided"`: {(group, point, candidate, cell key): ({run id:
    launch statistic} of the baseline, of the candidate, better, the baseline's name, the
    group point's own launches per variant)}, each side's launches in repeat order, for
    every cell of every group the store has finished launches of: the cells of the
    campaign's comparison table (a variant's cell pooled over the groups that measured it,
    as the table pools it). A group's baseline is its
    first variant in `order` (the campaign's variants, as compare's first set). metrics: a
    group's deciding metrics (an application's figures of merit; its other metrics, the
    wall time, are in the family but decide nothing: `deciding`). rounds: filled with
    {run id: its repeat index} (the round a look counts it in). pairs: filled with {run
    id: its round key} of the launches an interleaved campaign ran (report.data
    .ResultCell.by_round: what the report pairs by, so the rule tests as it does). cut:
    filled with {family key: the run ids of its launches the core cut short} (few clean
    samples or skipped: compare tests such a cell alone, stats.preempted)."""
    from mpibench.report.data import load_cells
    from mpibench.report.rules import comparable
    from mpibench.store.report_queries import done_runs_of_campaign

    runs: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    where: dict[str, tuple[int, str]] = {}
    for r in done_runs_of_campaign(store, campaign_id):
        runs[r["grp"]][r["variant"]].append(r["id"])
        where[r["id"]] = (int(r["repeat"]), point_json(json.loads(r["params_json"] or "{}")))
    if rounds is not None:
        rounds.update({rid: w[0] for rid, w in where.items()})
    out: dict[tuple, tuple] = {}
    rank = {v: i for i, v in enumerate(order)}
    # each variant's cells pooled over every group that measured them, as the campaign's
    # comparison table pools them (two groups sharing a baseline and a benchmark are one
    # baseline cell there): the rule compares the launches the table compares
    by_variant_all: dict[str, list[str]] = defaultdict(list)
    for by_variant in runs.values():
        for v, ids in by_variant.items():
            by_variant_all[v] += ids
    cells = load_cells(store, dict(by_variant_all), with_samples=False)
    if pairs is not None:
        for by in cells.values():
            for c in by.values():
                pairs.update(c.by_round)
    taken: set[tuple] = set()
    for g, by_variant in runs.items():
        if len(by_variant) < 2:
            continue
        first = min(by_variant, key=lambda v: rank.get(v, len(rank)))
        mine = {rid for ids in by_variant.values() for rid in ids}
        for key, by in cells.items():
            base = by.get(first)
            if base is None or not base.testable:
                continue
            b = _ordered(base.by_launch, where)
            for v, c in by.items():
                if v == first or v not in by_variant or not c.testable \
                        or not comparable(base, c) or (first, v, key) in taken:
                    continue
                own = [rid for rid in c.launch_ids if rid in mine]
                if not own:
                    continue
                taken.add((first, v, key))
                point = where[own[0]][1]
                n_own = max(len(own), sum(rid in mine for rid in base.launch_ids))
                out[(g, point, v, key)] = (b, _ordered(c.by_launch, where), c.better, first,
                                           n_own)
                if cut is not None:
                    _note_cut(cut, (g, point, v, key), base, c)
    return out


def _note_cut(cut: dict[tuple, set], key: tuple, base, cand) -> None:
    """decision_cells' cut: the launches of a family cell the core cut short
    (ResultCell.cut_short)."""
    ids = base.cut_short | cand.cut_short
    if ids:
        cut[key] = ids


def deciding(key: tuple, metrics: dict[str, set[str]] | None) -> bool:
    """Whether a cell of the family (decision_cells' key) must be decided for its group to
    stop: every cell, except an application's metrics other than its figures of merit."""
    g, _point, _cand, cell = key
    return g not in (metrics or {}) or cell.metric in metrics[g]


def _ordered(by_launch: dict[str, float], where) -> dict[str, float]:
    return dict(sorted(by_launch.items(), key=lambda kv: where[kv[0]][0]))


def _pool_key(key: tuple) -> tuple:
    g, point, cand, cell = key
    return (g, point, cand, _bench_of(cell))


def table_shape(cells: dict[tuple, tuple], metrics: dict[str, set[str]] | None = None):
    """The stats.sequential TableShape of the campaign's comparison table (what `mpibench
    report --campaign` prints with the campaign's first variant as baseline): one column
    per candidate (and baseline), a geomean row per benchmark, metric and tool, one
    verdict per candidate over the core's rows when tools are mixed (report/judge.py)."""
    from mpibench.report.rules import verdict_tool
    from mpibench.stats.sequential import TableShape

    main = verdict_tool(getattr(k[3], "tool", None) for k in cells)

    def candidate(key):
        return (cells[key][3], key[2])

    def summary(key):
        c = key[3]
        return (c.benchmark, c.metric, c.tool) if hasattr(c, "metric") else _bench_of(c)

    def verdict(key):
        return main is None or (getattr(key[3], "tool", None) or "") == main

    return TableShape(candidate, summary, verdict, lambda k: deciding(k, metrics))


def decisions(store, campaign_id: int, spec: dict, upto: int | None = None):
    """The looks of `until = "decided"` replayed on the stored launches (up to `upto`
    launches per variant; each look counts the launches of its rounds, by repeat index),
    from the campaign's stored spec (CampaignSpec.to_dict): (the last
    stats.sequential.Look or None, the cells' family)."""
    from mpibench.stats.sequential import run_looks

    order = [v["name"] for v in spec.get("variants", [])]
    rounds: dict[str, int] = {}
    pairs: dict[str, tuple] = {}
    cut: dict[tuple, set] = {}
    metrics = figures(spec)
    cells = decision_cells(store, campaign_id, order, metrics, rounds, pairs, cut)
    if not cells:
        return None, cells
    # each look tests a cell with a cut-short launch among the rounds IT sees alone, as
    # compare tests it (compare_cells' cut): a later round's cut launch leaves earlier looks
    looks = run_looks(cells, design_of(spec), upto=upto, pool_key=_pool_key, cut=cut,
                      shape=table_shape(cells, metrics), rounds=rounds, pairs=pairs)
    return (looks[-1] if looks else None), cells


DECISIONS_LEGEND = (
    "a cell is decided at a look when its adjusted p in the campaign's comparison table "
    "(stats.multiplicity.adjust_table: cells, geomean rows and verdicts, the procedure the "
    "report prints) is at or below the look's level (significant), or its TOST p is "
    "(equivalent); interim looks test at alpha x 0.2 / (interim looks), the last at alpha. "
    "cells_decided: every decided cell of a point, each with launches (the look that "
    "decided it), look_level (that look's level), p_holm (its adjusted p at that look), "
    "p_sequential (p_holm x alpha / look_level: <= alpha exactly when the look decided it "
    "significant; the report prints it as the row's p_holm) and ci_low/ci_high, the gain "
    "CI the report prints for it, widened for sequential looks (ci_widened) to the "
    "confidence `level` = 1 - look_level x p / p_holm (at least 1 - look_level) when "
    "ci_widened (decided before the last look), else at the table's Holm level; early: "
    "those decided before the last look; pairing: \"round\" when the cell's launches "
    "were tested as pairs of the same round (interleaved campaign, at least 3 pairs; "
    "rounds, and unpaired_launches_not_used: launches without a partner in their round), "
    "else \"none\"")


def summarize(spec: dict, look, cells: dict) -> dict[str, Any]:
    """Where the cells of `until = "decided"` stand (a stored spec), per group point:
    decided (by which look), undecided after the maximum (with the first reason), or
    still running."""
    design = design_of(spec)
    out: dict[str, Any] = {"rule": design.to_dict(), "looks": design.looks(),
                           "cells": sum(deciding(k, figures(spec)) for k in cells),
                           "significant": 0, "equivalent": 0,
                           "undecided": 0, "points": [], "legend": DECISIONS_LEGEND}
    if look is None:
        return out
    launches: dict[tuple, int] = {}
    for (g, point, _cand, _key), spec in cells.items():
        # the group point's own launches (a baseline cell pools every group's)
        launches[(g, point)] = max(launches.get((g, point), 0), spec[4])
    points: dict[tuple, dict[str, Any]] = {}
    for (g, point, cand, _key), st in look.cells.items():
        if not st.decides:
            continue
        pt = points.setdefault((g, point), {
            "group": g, "point": json.loads(point), "candidates": set(), "cells": 0,
            "significant": 0, "equivalent": 0, "undecided": 0, "decided_at": 0,
            "reason": None, "early": [], "cells_decided": []})
        pt["cells"] += 1
        pt["candidates"].add(cand)
        pt[st.status.value] += 1
        out[st.status.value] += 1
        rec = {"candidate": cand, "baseline": cells[(g, point, cand, _key)][3],
               "benchmark": getattr(_key, "benchmark", None),
               "size": getattr(_key, "size", None), "metric": getattr(_key, "metric", None),
               "status": st.status.value, "launches": st.look, "gain": st.gain,
               "p_holm": st.p_holm, "p_sequential": st.sequential_p(design.alpha),
               "p_equivalence": st.tost, "look_level": st.level, "ci_low": st.ci_low,
               "ci_high": st.ci_high, "level": st.ci_level,
               "ci_widened": st.level is not None and st.level < design.alpha,
               **_pairing_of(st.test)}
        if st.decided:
            pt["cells_decided"].append(rec)
            pt["decided_at"] = max(pt["decided_at"], st.look)
            if st.look < design.max:
                # decided before the last look: the CI at that look's level (the repeated
                # CI or wider) is the one that keeps its coverage (docs/statistics.md)
                pt["early"].append(rec)
        elif pt["reason"] is None:
            pt["reason"] = f"{cand} vs {cells[(g, point, cand, _key)][3]}: {st.reason}"
    for (g, point), pt in points.items():
        n = launches.get((g, point), look.n)
        pt["candidates"] = sorted(pt["candidates"])
        pt["launches"] = n
        if not pt["undecided"]:
            pt["state"] = f"decided: every cell by {pt['decided_at']} launches per variant"
        elif look.final or n >= design.max:
            pt["state"] = (f"undecided after the maximum of {design.max} launches per "
                           f"variant: {pt['undecided']} cell(s)")
        else:
            pt["state"] = (f"undecided at {look.n} launches per variant: {pt['undecided']} "
                           "cell(s); more launches pending")
        out["points"].append(pt)
    return out


def _pairing_of(t) -> dict[str, Any]:
    """The pairing of the test a decision rests on (stats.launch.pair_rounds): "round" with
    the rounds used and the launches left without a partner, or "none"."""
    paired = t is not None and t.pairing == "round"
    return {"pairing": "round" if paired else "none", "rounds": t.pairs if paired else None,
            "unpaired_launches_not_used": t.unpaired if paired else 0}


class Stages:
    """repeats = "auto" / "decide" for both policies: the campaign's remaining cells in
    stages (iterate; each stage's cells must have run before the next is asked for). A
    stage is the rounds up to the next boundary; before each stage after the first, the
    rule looks at the store and drops the launches it does not need (they stay pending;
    `skipped` counts them)."""

    def __init__(self, runner, campaign_id: int):
        self.runner, self.cid, self.rule = runner, campaign_id, runner.spec.auto
        self.skipped = 0
        self.total: dict[str, int] = {}         # "precise": group -> launches per variant
        # "decided": (group, point) -> the sizes of its undecided cells (a core size list),
        # and the repeat index from which a launch runs only them (the look's n)
        self.undecided_sizes: dict[tuple[str, str], str] = {}
        self.from_repeat = 0

    def boundaries(self) -> list[int]:
        if self.rule.until == "decided":
            return self.rule.design(self.runner.spec.equivalence).looks()
        return [self.rule.min, self.rule.max]

    def __call__(self, todo: list) -> Iterator[list]:
        if self.rule.until == "decided" and not self.runner.spec.equivalence:
            self.runner.log('repeats = decide without campaign.equivalence: only a '
                            "significant difference decides a cell; cells of identical "
                            "variants run to the maximum")
        done = 0
        for b, stage in self.cut(todo):
            if done:
                wanted = self._look(done)
                keep = [c for c in stage if c.repeat < done or wanted(c)]
                self.skipped += len(stage) - len(keep)
                stage = keep
            if stage:
                yield stage
            done = b

    def cut(self, todo: list) -> Iterator[tuple[int, list]]:
        """The stages' cells in plan order, each with the round it ends at, as the rule
        submits them when no look stops a cell (the last stage takes every later round):
        the run (__call__, which looks between them) and the dry run's job scripts
        (campaign/scripts.py) cut by this one rule."""
        remaining = sorted(todo, key=lambda c: c.seq)
        bounds = self.boundaries()
        for i, b in enumerate(bounds):
            last = i == len(bounds) - 1
            yield b, [c for c in remaining if last or c.repeat < b]
            remaining = [c for c in remaining if not (last or c.repeat < b)]

    def _look(self, n: int):
        if self.rule.until == "decided":
            return self._decided(n)
        return self._precise()

    def _precise(self):
        def wanted(c) -> bool:
            g = c.group.name
            if g not in self.total:
                rounds: dict = {}
                cut: dict = {}
                per_variant = group_launches(self.runner.store, self.cid, g,
                                             figures(self.runner.spec).get(g), rounds,
                                             below=self.rule.min, cut=cut)
                t = self.total[g] = stage_two_total(per_variant, self.rule, rounds, cut)
                how = "paired by round" if rounds else "unpaired"
                low = two_stage.smallest_total(self.rule.min, self.rule.max)
                self.runner.log(f"repeats = auto: group {g}: {t} launches per variant "
                                f"(two-stage rule: at the spread of the first "
                                f"{self.rule.min} rounds' tests ({how}), every gain's "
                                f"stage-2-spread 95% CI within ±{100 * self.rule.target:g}%"
                                f", at least {low}"
                                + (", or the maximum" if t == self.rule.max else "") + ")")
            return c.repeat < self.total[g]
        return wanted

    def _decided(self, n: int):
        spec = self.runner.spec
        look, cells = decisions(self.runner.store, self.cid, spec.to_dict(), upto=n)
        needs: dict[tuple[str, str], set[str]] = defaultdict(set)
        if look is not None:
            for key in look.undecided:
                g, point, cand, _ck = key
                needs[(g, point)] |= {cand, cells[key][3]}
        nxt = spec.auto.design(spec.equivalence).next_look(n)
        self.undecided_sizes = undecided_sizes(look, needs)
        self.from_repeat = n
        if look is None:
            self.runner.log(f"repeats = decide: nothing to compare after {n} launches per "
                            "variant (one variant per group, or no finished launches)")
        else:
            mine = [c for c in look.cells.values() if c.decides]
            counts = {s: sum(1 for c in mine if c.status.value == s)
                      for s in ("significant", "equivalent", "undecided")}
            self.runner.log(
                f"repeats = decide: look at {n} launches per variant (level "
                f"{look.level:.2g}): {len(mine) - counts['undecided']} of "
                f"{len(mine)} cells decided ({counts['significant']} significant, "
                f"{counts['equivalent']} equivalent); {len(needs)} group point(s) go on to "
                f"{nxt} launches")
        return lambda c: c.variant.name in needs.get((c.group.name, point_json(c.params)),
                                                     ())

    def sizes(self, cell) -> str | None:
        """The core size list a later launch of `until = "decided"` runs: the sizes of its
        group point's undecided cells (undecided_sizes), for launches of the rounds after
        the last look; None: the group's own sizes (earlier rounds, other rules, a point
        whose undecided cells are not all the core's sized rows)."""
        if self.rule.until != "decided" or cell.repeat < self.from_repeat:
            return None
        return self.undecided_sizes.get((cell.group.name, point_json(cell.params)))


def undecided_sizes(look, needs: dict) -> dict[tuple[str, str], str]:
    """{(group, point): "s1,s2,..."} the byte sizes of each group point's undecided cells
    at this look (for the points that go on, `needs`): a decision is final per cell
    (stats.sequential), so a later launch need not measure a size whose every cell is
    decided; a cell's key (benchmark, size, metric, tool) does not depend on the launch's
    size list, nor does its id or comparability (report/rules.py). A point with an
    undecided cell that is not one of the core's sized rows (a peer suite's, an
    application's) keeps its own sizes."""
    out: dict[tuple[str, str], set[int]] = {}
    mixed: set[tuple[str, str]] = set()
    for g, point, _cand, ck in (look.undecided if look is not None else ()):
        if (g, point) not in needs:
            continue
        size = getattr(ck, "size", None)
        # a key's tool is None where one tool measured the cell (report/rules.py)
        if getattr(ck, "tool", None) not in (None, "core") or not isinstance(size, int):
            mixed.add((g, point))
        out.setdefault((g, point), set()).add(size)
    return {k: ",".join(str(s) for s in sorted(v)) for k, v in out.items()
            if k not in mixed}


def launch_options(runner, cell, budget, stages) -> dict | None:
    """The core options of a cell's launch (cells.CellSteps.prepare's `options`): the
    budget's (campaign/budget.py) or the group's own, with `sizes` when the launch runs
    only some of its group's sizes: the undecided ones after a look of `until = "decided"`
    (Stages.sizes), those of `campaign run --only-sizes` (runner.only_sizes), both: the
    sizes in both. None: the group's own options and sizes."""
    opts = budget.options(cell) if budget else None
    if not cell.group.kind_class.core_options:
        return opts
    sizes = _only_sizes(cell, stages.sizes(cell) if stages else None,
                        getattr(runner, "only_sizes", None))
    if not sizes:
        return opts
    return {**(cell.group.options or {} if opts is None else opts), "sizes": sizes}


def _only_sizes(cell, undecided: str | None, only: list[int] | None) -> str | None:
    """The size list of a launch that measures part of its group's sizes, else None."""
    if only is None:
        return undecided
    return kept_sizes(cell.group.name, undecided or cell.group.sizes or DEFAULT_CORE_SIZES,
                      only)


def kept_sizes(group: str, own: str, only: list[int]) -> str:
    """The sizes of `own` (a core size list) that `campaign run --only-sizes` keeps, as a
    size list; UsageError naming the group where it keeps none."""
    from mpibench.benchmarks import parse_sizes

    keep = sorted(set(parse_sizes(own)) & set(only))
    if not keep:
        raise UsageError(f"--only-sizes: none of group {group}'s sizes ({own}) is in the "
                         f"list; expected some of them")
    return ",".join(map(str, keep))


__all__ = ["AutoRepeats", "parse", "Stages", "undecided_sizes", "launch_options", "kept_sizes", "decisions", "decision_cells", "summarize",
           "is_decide", "design_of", "figures", "point_json", "group_launches",
           "stage_two_total", "pair_sums", "stage_one_launches",
           "refuse_changed_rule", "frozen_design",
           "simulate_two_stage", "simulate_sequential"]
