"""Judge: compare every set against the baseline, cell by cell.

The launch (one mpirun) is the unit of replication (stats.launch). Per cell each side shows
the geometric mean of its launch statistics with the 95% CI from the spread between its
launches. Per candidate against the baseline: the gain oriented so > 1 is better (time-like
metrics, better='lower': baseline/candidate; rates: candidate/baseline) with its 95% CI,
and the launch-level t test on the logs of the launch statistics (stats.launch.compare_cells:
a benchmark's sizes pool their spread, paired by round where launches interleave; a cell
with a cut-short launch is tested alone), every p the comparison shows adjusted by one
Holm-type procedure (stats.multiplicity). Not significant prints as `~`; fewer than two
launches on a side is
"cannot tell". The geomean per benchmark and the verdict aggregate per launch first (one
launch measures every size). Two cells meet only under the comparability rule
(report/rules.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mpibench.errors import UsageError
from mpibench.report.data import (
    bench_sort_key,
    load_cells,
)
from mpibench.report.model import (
    Comparison,
    Delta,
    Row,
    Summary,
    _marks,
    _Notes,
    fmt_gain_ci,
    fmt_margin,
    fmt_p,
)
from mpibench.report.rules import verdict_tool, why_not_comparable
from mpibench.stats import launch as launch_stats
from mpibench.stats import multiplicity
from mpibench.store import Store


def transport_notes(store: Store, sets: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Per set, one warning line per variant whose requested transport did not take effect
    (the MISMATCH `campaign status` shows): the results of such a set measure another
    transport than its name says, which every table built from it must say."""
    from mpibench.verify import transport_warnings

    out: dict[str, list[str]] = {}
    for g, ids in sets.items():
        lines = transport_warnings(store, list(ids))
        if lines:
            out[g] = [("WARNING: " if line.startswith(f"variant {g}:") else
                       f"WARNING (set {g}): ") + line for line in lines]
    return out


def transport_lines(store: Store, sets: Mapping[str, list[str]]) -> list[str]:
    """transport_notes flattened, set by set: the warning lines of a table without a
    comparison (a comparison has them as Comparison.warning_lines)."""
    return [w for ws in transport_notes(store, sets).values() for w in ws]


def compare_groups(store: Store, sets: Mapping[str, list[str]], baseline: str, *,
                   alpha: float = 0.05, sizes: Iterable[int] | None = None,
                   benchmarks: Iterable[str] | None = None, title: str = "",
                   cells: dict | None = None, statistic: str = "median",
                   equivalence: float | None = None) -> Comparison:
    """Compare every set against `baseline`. sets: display name -> run ids.
    statistic: each launch's statistic (median or mean of its samples). equivalence: a
    margin (0.02 = ±2%, log-symmetric) for TOST per cell and overall.

    Each benchmark's sizes are tested together under the hierarchical model
    (stats.launch.compare_cells): a launch effect the sizes share plus a size-specific
    part, the between-launch spread pooled over the sizes. One multiplicity family
    holds every p the table shows (cells, geomean rows and each candidate's overall test).

    The sets whose runs did not use the transport they requested
    (verify.transport_warnings) are footnoted and their columns marked.

    Phases, in this order (the footnotes are numbered in the order they are added):
    check the request, select the cells, set aside the sets that share no cell with the
    baseline, build the rows under the comparability rule, test each benchmark's cells
    together, adjust every p shown as one family, count the decisions, write the verdicts."""
    _check_request(sets, baseline, alpha)
    order = [baseline] + [g for g in sets if g != baseline]
    cells = cells if cells is not None else load_cells(store, sets, statistic=statistic)
    selected = _select(cells, sizes, benchmarks)
    notes = _Notes()
    # Transport warnings first: they decide whether any number below means what it says.
    warnings = transport_notes(store, sets)
    set_marks = {g: [notes.add(w) for w in ws] for g, ws in warnings.items()}
    selected, order, not_compared = _set_aside_unshared(selected, order, baseline, notes)
    rows, pending = _build_rows(selected, order, baseline, notes)
    stages = _stages(store, pending)
    block_of = _test_cells(pending, alpha, equivalence, notes, stages)
    vrows, others = _verdict_rows(rows)
    overall = {cand: _aggregate(vrows, baseline, cand, alpha, stages, notes)
               for cand in order[1:]}
    summaries = _summaries(rows, baseline, order[1:], alpha, stages, notes)
    decided, early = _rule_statuses(store, rows, baseline, notes)
    overall_p_adj, family = _adjust_all(rows, summaries, overall, alpha, block_of, decided)
    seq_hits = _widen_summaries(summaries, early, alpha)
    _count_decisions(rows, summaries)
    outcomes, verdicts = _verdicts(vrows, others, baseline, order[1:], not_compared, alpha,
                                overall, overall_p_adj, equivalence, family, set_marks,
                                seq_hits)
    seq_overall = {c: w[1] for c, hit in seq_hits.items()
                   if c in overall_p_adj and overall[c].tested
                   and (w := _widen(overall[c], overall_p_adj[c], alpha, hit))}
    return Comparison(sets=order, baseline=baseline, alpha=alpha, rows=rows,
                      summaries=summaries, footnotes=notes.texts,
                      verdict="; ".join(verdicts.values()), verdicts=verdicts,
                      run_counts={g: len(ids) for g, ids in sets.items()}, title=title,
                      warnings=warnings, set_marks=set_marks, not_compared=not_compared,
                      overall=overall, outcomes=outcomes, statistic=statistic,
                      overall_p_adj=overall_p_adj, equivalence=equivalence,
                      overall_seq_level=seq_overall)


def _check_request(sets: Mapping[str, list[str]], baseline: str, alpha: float) -> None:
    if not (isinstance(alpha, int | float) and 0.0 < alpha < 1.0):
        raise UsageError(f"--alpha {alpha!r}: expected a significance level between 0 and 1 "
                         "(e.g. 0.05)")
    if baseline not in sets:
        raise UsageError(f"baseline {baseline!r} is not one of the sets: {', '.join(sets)}")
    if len(sets) < 2:
        raise UsageError("a comparison needs at least two result sets (got "
                         f"{', '.join(sets) or 'none'})")


def _select(cells: dict, sizes: Iterable[int] | None,
            benchmarks: Iterable[str] | None) -> list[tuple[Any, dict]]:
    """(key, set -> cell) of the cells at the asked-for sizes and benchmarks."""
    size_set = set(sizes) if sizes is not None else None
    bench_set = {b.lower() for b in benchmarks} if benchmarks else None
    return [(key, by_set) for key, by_set in cells.items()
            if (size_set is None or key.size in size_set)
            and (bench_set is None or key.benchmark.lower() in bench_set)]


def _set_aside_unshared(selected: list, order: list[str], baseline: str, notes: _Notes
                        ) -> tuple[list, list[str], list[str]]:
    """A set that shares no cell with the baseline would get an empty column and a "no
    result" note on every row; it is named once in a footnote instead and dropped."""
    shared = {g for _key, by_set in selected if baseline in by_set for g in by_set}
    not_compared = [g for g in order[1:] if g not in shared]
    for g in not_compared:
        own = [key for key, by_set in selected if g in by_set]
        benches = sorted({key.benchmark for key in own}, key=bench_sort_key)
        what = (f"its {len(own)} cell(s): {', '.join(benches[:6])}"
                + (" ..." if len(benches) > 6 else "") + "; see its own results, --results"
                if own else "it has no cells in the selection")
        notes.add(f"set {g} has no cell in common with the baseline {baseline}: compared "
                  f"nowhere ({what})")
    if not_compared:
        order = [g for g in order if g not in not_compared]
        drop = set(not_compared)
        selected = [(key, {g: c for g, c in by_set.items() if g not in drop})
                    for key, by_set in selected]
        selected = [(key, by_set) for key, by_set in selected if by_set]
    return selected, order, not_compared


def _cell_notes(row: Row, by_set: dict, notes: _Notes) -> None:
    """The row's footnotes on how each set's cell was made (pooling, failures, one launch,
    imported summaries)."""
    for g, c in by_set.items():
        if c.mixed:
            row.notes.append(notes.add(
                f"{g}: runs with different fingerprints are not pooled; used the most "
                f"common fingerprint ({len(c.runs_used)} run(s)), excluded "
                f"{len(c.runs_excluded)} run(s) with {c.n_fingerprints - 1} other "
                "fingerprint(s)"))
        if c.skipped:
            row.notes.append(notes.add(
                f"{g}: {c.skipped} launch(es) skipped this cell (no clean sample within "
                "--preempted-max-time): no launch value; missing for a reason tied to "
                f"{g}'s preemption rate, not at random"))
        other = [s for rid, s, _ in c.runs_failed if rid not in c.skips_preempted]
        if other:
            sts = sorted(set(other))
            row.notes.append(notes.add(
                f"{g}: some runs have no usable result for this cell ({', '.join(sts)}); "
                "see the run's reason in the store"))
        if c.status == "ok" and c.value is not None and c.launches == 1:
            row.notes.append(notes.add(
                "± ?: one launch, so no spread between launches to give a CI; a launch "
                "is the unit of replication (run more interleaved launches)"))
        if c.no_samples and c.status == "ok":
            stat = c.shown_statistic
            row.notes.append(notes.add(
                f"{stat}: imported summary without raw samples; each imported file is "
                "one launch"))


def _build_rows(selected: list, order: list[str], baseline: str, notes: _Notes
                ) -> tuple[list[Row], dict[tuple, list[tuple[Delta, Any, Any, str]]]]:
    """A Row per cell with an empty Delta per candidate; the pairs that pass the
    comparability rule wait in `pending`, keyed by (cell key without its size, candidate):
    one benchmark's sizes are tested together."""
    rows: list[Row] = []
    pending: dict[tuple, list[tuple[Delta, Any, Any, str]]] = {}
    for key, by_set in selected:
        any_cell = by_set.get(baseline) or next(iter(by_set.values()))
        row = Row(key=key, unit=any_cell.unit, better=any_cell.better, cells=by_set,
                  deltas={})
        _cell_notes(row, by_set, notes)
        base = by_set.get(baseline)
        for cand in order[1:]:
            d = Delta()
            row.deltas[cand] = d
            c = by_set.get(cand)
            if base is None or c is None:
                missing = baseline if base is None else cand
                d.notes.append(notes.add(f"{missing}: no result for this cell"))
                continue
            why = why_not_comparable(base, c)          # the comparability rule
            if why is not None:
                d.notes.append(notes.add(why))
                continue
            pending.setdefault((key.block, cand), []).append(
                (d, base, c, row.better))
        rows.append(row)
    return rows, pending


def _stages(store: Store, pending: dict) -> tuple[set[str], set[str]]:
    """The stage-1 and the staged launches among the table's (repeats = "auto" campaigns:
    campaign.auto_repeats.stage_one_launches)."""
    from mpibench.campaign.auto_repeats import stage_one_launches

    ids = {rid for block in pending.values() for _d, b, c, _ in block
           for rid in (*b.launch_ids, *c.launch_ids)}
    return stage_one_launches(store, ids) if ids else (set(), set())


def _staged(rows, stages: tuple[set[str], set[str]]) -> bool:
    """Whether rows ((baseline {launch id: value}, candidate {...}, better) per cell) hold
    a launch of a staged repeats = "auto" campaign (stages[1]): then they take the
    stage-aware test (stats.two_stage)."""
    return any(k in stages[1] for row in rows for side in row[:2] for k in side)


def _test_cells(pending: dict, alpha: float, equivalence: float | None,
                notes: _Notes, stages: tuple[set[str], set[str]] = (set(), set())
                ) -> dict[int, int]:
    """The launch-level tests, one benchmark's sizes together (stats.launch.compare_cells),
    written into the waiting Deltas; returns id(Delta) -> its benchmark block. stages:
    (stage-1 launches, launches of staged campaigns): a block with a launch of a
    repeats = "auto" campaign is tested by stats.two_stage.compare_staged (the wider of the
    ordinary test and the stage-2-spread one) and each cell's footnote says which."""
    from mpibench.stats import two_stage

    block_of: dict[int, int] = {}          # id(Delta) -> its benchmark block
    for b, block in enumerate(pending.values()):
        for d, *_rest in block:
            block_of[id(d)] = b
        cells = [(b.by_launch, c.by_launch, better) for _d, b, c, better in block]
        rounds = launch_rounds(c for _d, b, c_, _ in block for c in (b, c_))
        sizes = [b.size for _d, b, _c, _ in block]     # the round regimes' order
        cut = _cut_notes(block, notes)
        if _staged(cells, stages):
            staged = two_stage.compare_staged(cells, stages[0], alpha, rounds, sizes, cut)
            tests = [t for t, _which in staged]
            for (d, *_rest), (t, which) in zip(block, staged, strict=True):
                if t.tested:
                    d.notes.append(notes.add(_stage_note(which)))
        else:
            tests = launch_stats.compare_cells(cells, alpha, rounds=rounds, sizes=sizes,
                                               cut=cut)
        for (d, _b, _c, _better), t in zip(block, tests, strict=True):
            d.test = t
            if t.gain is not None and t.gain != 1.0:
                d.needed = launch_stats.launches_needed_for(t, t.gain - 1.0, alpha)
            if not t.tested:
                d.notes.append(notes.add(_untested_note(t, alpha)))
            if equivalence and t.tested:
                d.p_equiv = t.tost(equivalence)
                d.equivalent = d.p_equiv is not None and d.p_equiv <= alpha
    return block_of


def _cut_notes(block, notes: _Notes) -> list[set[str]]:
    """Per cell of a benchmark's block, its launches the core cut short (ResultCell
    .cut_short: fewer than stats.preempted.FEW_CLEAN clean samples, or a preempted skip),
    compare_cells' cut (which tests such a cell alone); such a cell is footnoted."""
    from mpibench.stats import preempted

    cut = [b.cut_short | c.cut_short for _d, b, c, _ in block]
    for (d, b, c, _), ids in zip(block, cut, strict=True):
        if ids:
            d.notes.append(notes.add(
                f"tested on its own launches: {len(b.few_clean) + len(c.few_clean)} "
                f"launch(es) stopped 'preempted' on fewer than {preempted.FEW_CLEAN} clean "
                f"samples (within-launch noise the benchmark's pooled spread lacks), "
                f"{b.skipped + c.skipped} skipped (no value)"))
    return cut


def _adjust_all(rows: list[Row], summaries: list[Summary],
                overall: dict[str, launch_stats.LaunchTest], alpha: float,
                block_of: Mapping[int, int], decided: Mapping[int, Any] | None = None
                ) -> tuple[dict[str, float], float]:
    """One family over every p the table shows (the cells, the geomean rows of benchmarks
    with more than one row, each candidate's overall test), adjusted by
    stats.multiplicity.adjust_table (the graph of weighted Bonferroni tests the sequential
    rule of repeats = "decide" decides with; docs/statistics.md). decided: {id(Delta): the
    rule's stats.sequential.CellStatus} of the cells a decide campaign's rule decided
    (_rule_statuses): a cell decided significant stays rejected in the graph, and every
    decided cell prints the rule's decision (its sequential p, CI at its look's level).
    Writes each Delta's and geomean row's adjusted p and CI; returns the overall tests'
    adjusted p and the share of alpha each verdict's family holds."""
    decided = decided or {}
    cell_tests = [(r.deltas[g], g) for r in rows for g, d in r.deltas.items() if d.tested]
    shown_summaries = [(s, c) for s in summaries if s.rows > 1 for c in s.test
                       if s.test[c].tested]
    shown_overall = [c for c in overall if overall[c].tested]
    hyps = ([multiplicity.Hypothesis(
        "cell", d.test, g, block_of.get(id(d)),
        id(d) in decided and decided[id(d)].status.value == "significant")
        for d, g in cell_tests]
        + [multiplicity.Hypothesis("geomean", s.test[c], c) for s, c in shown_summaries]
        + [multiplicity.Hypothesis("verdict", overall[c], c) for c in shown_overall])
    adj, family = multiplicity.adjust_table(hyps)
    for (d, _g), pa in zip(cell_tests, adj, strict=False):
        st = decided.get(id(d))
        if st is not None:
            _take_decision(d, st, alpha)
            continue
        d.p_adj = pa
        d.significant = bool(pa <= alpha)
        d.ci_holm = _holm_ci(d.test, pa, alpha)
    k = len(cell_tests)
    for (s, c), pa in zip(shown_summaries, adj[k:], strict=False):
        s.p_adj[c] = pa
        s.ci_holm[c] = _holm_ci(s.test[c], pa, alpha)
    k += len(shown_summaries)
    overall_p_adj = dict(zip(shown_overall, adj[k:], strict=True))
    return overall_p_adj, family


def _decide_campaigns(store: Store, run_ids: set[str]) -> dict[int, tuple[dict, str]]:
    """{campaign id: (its stored spec, name)} of the campaigns run with repeats = "decide"
    that measured any of run_ids; empty, after one read of the campaigns table, when there
    are none."""
    from mpibench.campaign import auto_repeats as ar
    from mpibench.store.report_queries import run_campaign_variant

    specs: dict[int, tuple[dict, str]] = {}
    for c in store.campaigns():
        try:
            spec = json.loads(c["spec_json"] or "{}")
        except ValueError:
            continue
        if isinstance(spec, dict) and ar.is_decide(spec):
            specs[c["id"]] = (spec, c["name"])
    if not specs:
        return {}
    used = {cid for cid, _v in run_campaign_variant(store, list(run_ids)).values()}
    return {cid: v for cid, v in specs.items() if cid in used}


def _rule_statuses(store: Store, rows: list[Row], baseline: str, notes: _Notes
                   ) -> tuple[dict[int, Any], dict[str, tuple[Any, str, int]]]:
    """The decisions the sequential rule of a repeats = "decide" campaign took
    (campaign/auto_repeats.decisions, replayed from the stored launches: the same
    function, family and procedure as this table, stats.multiplicity.adjust_table, at each
    look's level). A row whose baseline and candidate launches are exactly the ones the
    rule compared (same runs, same values) prints the rule's decision for that cell: the
    look that took it is the one the rule recorded (never inferred from launch counts).
    Returns ({id(Delta): the rule's CellStatus} of its decided cells, {(benchmark, metric,
    tool, candidate): (design, campaign name, the look its launches stopped at)} for the
    geomean rows and verdicts whose every cell the rule decided before its maximum)."""
    from mpibench.campaign import auto_repeats as ar

    ids = {x for r in rows for c in r.cells.values() for x in c.launch_ids}
    camps = _decide_campaigns(store, ids) if ids else {}
    if not camps:
        return {}, {}
    index: dict[tuple, tuple[Any, Any, str]] = {}
    for cid, (spec, name) in camps.items():
        look, cells = ar.decisions(store, cid, spec)
        if look is None:
            continue
        design = ar.design_of(spec)
        for k, st in look.cells.items():
            b, c = cells[k][0], cells[k][1]
            index[(k[3], _frozen(b), _frozen(c))] = (st, design, name)
    decided: dict[int, Any] = {}
    stops: dict[tuple, list] = {}
    for r in rows:
        base = r.cells.get(baseline)
        for g, d in r.deltas.items():
            cand = r.cells.get(g)
            if not d.tested or base is None or cand is None:
                continue
            hit = index.get((r.key, _frozen(base.by_launch), _frozen(cand.by_launch)))
            sk = (r.benchmark, r.metric, r.tool, g)
            if hit is None or not hit[0].decided:
                stops.setdefault(sk, []).append(None)
                continue
            st, design, name = hit
            decided[id(d)] = st
            stops.setdefault(sk, []).append((design, name, st.look))
            if st.level is not None and st.level < design.alpha:
                d.notes.append(notes.add(_seq_note(name, design, st.level)))
    early: dict[tuple, tuple[Any, str, int]] = {}
    by_cand: dict[str, list] = {}
    for sk, hits in stops.items():
        by_cand.setdefault(sk[-1], []).extend(hits)
        if hits and all(h is not None for h in hits):
            design, name = hits[0][0], hits[0][1]
            n = max(h[2] for h in hits)
            if n < design.max:
                early[sk] = (design, name, n)
    for c, hits in by_cand.items():
        if hits and all(h is not None for h in hits):
            n = max(h[2] for h in hits)
            if n < hits[0][0].max:
                early[("verdict", c)] = (hits[0][0], hits[0][1], n)
    return decided, early


def _frozen(side: Mapping[str, float]) -> tuple:
    return tuple(sorted(side.items()))


def _seq_note(name: str, design: Any, level: float) -> str:
    return (f"CI widened for sequential looks: campaign {name} ran repeats = \"decide\"; "
            f"the rule decided this cell at an interim look (before its maximum of "
            f"{design.max} launches per variant), at that look's level "
            f"{level:.2g} in this table's family: its p (Holm-adjusted) "
            f"is the look's adjusted p x alpha / level (<= alpha exactly when the look "
            f"decided it significant), its gain and CI are the look's, the CI at 1 - level "
            f"x p / adjusted p (the repeated CI or wider), which keeps its coverage after a "
            f"data-dependent stop")


def _take_decision(d: Delta, st: Any, alpha: float) -> None:
    """A row prints the decision the sequential rule took for its cell (stats.sequential
    .CellStatus): the look's test (gain, p, CI), its adjusted p on alpha's scale, and
    significant / equivalent as the rule said."""
    if st.test is not None:
        d.test = st.test
    d.p_adj = st.sequential_p(alpha)
    d.significant = st.status.value == "significant"
    if st.status.value == "equivalent":
        d.equivalent = True
        if st.tost is not None:
            d.p_equiv = st.tost
    d.ci_holm = ((st.ci_low, st.ci_high) if st.ci_low is not None and st.ci_high is not None
                 else _holm_ci(d.test, d.p_adj, alpha))
    if st.level is not None and st.level < alpha:
        d.seq_level, d.seq_ci_level = st.level, st.ci_level


def _widen_summaries(summaries: list[Summary], early: Mapping[tuple, tuple[Any, str, int]],
                     alpha: float) -> dict[str, tuple[Any, str, int]]:
    """A geomean row whose every cell the rule decided before its maximum stopped its
    launches at the latest of those looks (recorded by the rule): its printed CI is the
    wider of its Holm-level CI and the repeated CI at that look's level
    (stats.sequential.printed_ci_alpha, which keeps it consistent with the row's
    decision). Returns {candidate: (design, campaign name, look)} of the candidates whose
    every cell the rule decided early (their verdict's overall CI is widened the same
    way)."""
    for sm in summaries:
        for c, pa in sm.p_adj.items():
            hit = early.get((sm.benchmark, sm.metric, sm.tool, c))
            w = _widen(sm.test[c], pa, alpha, hit) if hit else None
            if w is not None:
                sm.ci_holm[c] = w[0]
                sm.seq_level[c] = w[1]
    return {k[1]: v for k, v in early.items() if k[0] == "verdict" and len(k) == 2}


def _widen(t: launch_stats.LaunchTest, p_adj: float, alpha: float,
           hit: tuple[Any, str, int]) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """(the CI at the wider level, (the look's level, the CI's confidence level)) when the
    launches stopped at an interim look (the look the rule recorded) and the wider level
    applies; None: keep the Holm-level CI."""
    from mpibench.stats.sequential import printed_ci_alpha

    design, _name, n = hit
    if n >= design.max or t.p is None:
        return None
    a, widened = printed_ci_alpha(t.p, p_adj, alpha, design.level(n))
    lo, hi = t.ci_at(1.0 - a) if widened else (None, None)
    if lo is None or hi is None:
        return None
    return (lo, hi), (design.level(n), 1.0 - a)


def _count_decisions(rows: list[Row], summaries: list[Summary]) -> None:
    """The geomean rows' better/worse/same counts, read from the adjusted decisions."""
    for s in summaries:
        rs = [r for r in rows if (r.benchmark, r.metric, r.tool) == (s.benchmark, s.metric,
                                                                       s.tool)]
        for c in s.test:
            s.better[c] = sum(r.deltas[c].direction == "better" for r in rs)
            s.worse[c] = sum(r.deltas[c].direction == "worse" for r in rs)
            s.same[c] = sum(r.deltas[c].direction == "~" for r in rs)


def _verdicts(vrows: list[Row], others: list[str], baseline: str, candidates: list[str],
              not_compared: list[str], alpha: float,
              overall: dict[str, launch_stats.LaunchTest], overall_p_adj: dict[str, float],
              equivalence: float | None, family: float, set_marks: dict[str, list[int]],
              seq_hits: Mapping[str, tuple[Any, str]] | None = None
              ) -> tuple[dict[str, str], dict[str, str]]:
    """Per candidate the verdict's outcome and sentence; one tool per verdict (with the core's
    and a peer suite's rows in one table the verdict is the core's, else the first tool's,
    and says so); a transport warning joins the sentence."""
    outcomes: dict[str, str] = {}
    verdicts = {}
    for cand in candidates:
        outcomes[cand], verdicts[cand] = _verdict(vrows, baseline, cand, alpha, overall[cand],
                                               overall_p_adj.get(cand), equivalence,
                                               family=family,
                                               seq=(seq_hits or {}).get(cand))
        if others:
            verdicts[cand] += (f" ({vrows[0].tool} rows only; {', '.join(others)} rows are "
                               "separate cells with their own geomean rows)")
    for cand in not_compared:
        outcomes[cand] = "nothing"
        verdicts[cand] = (f"{cand} vs {baseline}: nothing to compare (no cell in common with "
                          "the baseline)")
    for cand in verdicts:
        marks = set_marks.get(baseline, []) + set_marks.get(cand, [])
        if marks:
            who = " and ".join(dict.fromkeys(g for g in (baseline, cand) if g in set_marks))
            verdicts[cand] += (f" — WARNING: {who} did not run on the requested transport "
                               f"{_marks(marks)}")
    return outcomes, verdicts


def _holm_ci(t: launch_stats.LaunchTest | None, p_adj: float,
             alpha: float) -> tuple[float, float] | None:
    """The gain's CI at the level Holm gave this test, 1 - alpha * p / p_adj: it excludes 1
    exactly when p_adj <= alpha (p <= alpha p / p_adj), so it never contradicts the
    decision. Wider than the plain 95% CI, which is kept in the JSON (gain_ci_*)."""
    if t is None or not t.tested or t.p is None:
        return None
    level = 1.0 - alpha * (t.p / p_adj if p_adj > 0 else 1.0)
    lo, hi = t.ci_at(min(max(level, 1.0 - alpha), 1.0 - 1e-12))
    return (lo, hi) if lo is not None and hi is not None else None


def _stage_note(which: str) -> str:
    """The footnote of a cell of a repeats = "auto" campaign: which test its CI and p are
    (stats.two_stage)."""
    from mpibench.stats import two_stage

    head = ('repeats = "auto" (two-stage): the gain CI and p are the wider of two tests, '
            "the ordinary one over every launch and one whose spread comes from the "
            "stage-2 launches only (the rounds after the rule's look; docs/statistics.md)")
    if which == two_stage.STAGE_TWO:
        return head + ": here the stage-2 spread's"
    if which == two_stage.ORDINARY:
        return head + ": here the ordinary one"
    return head + f": here the {which}"


def _untested_note(t: launch_stats.LaunchTest, alpha: float) -> str:
    if t.untested is launch_stats.Untested.TOO_FEW_LAUNCHES:
        need = launch_stats.MIN_LAUNCHES
        plan = (f"; at the spread seen so far, {n} launches per side would detect the "
                f"observed {launch_stats.fmt_pct(abs(t.gain - 1))} difference"
                if t.gain and t.gain != 1 and t.sd_log and
                (n := launch_stats.launches_needed_for(t, abs(t.gain - 1), alpha))
                else "; run >= 3 interleaved launches per side, then `compare --detect 5%` "
                "says how many a given difference needs")
        return (f"cannot tell: a side has fewer than {need} launches (a launch is the unit "
                f"of replication; one launch per side decides nothing){plan}")
    return f"not tested: {t.reason}"


def launch_rounds(cells: Iterable[Any]) -> dict[str, tuple]:
    """{run id: round key} of the launches of these cells that ran in a round of an
    interleaved campaign (report.data.ResultCell.by_round): what stats.launch pairs by.
    Launches of different campaigns (two sets measured at different times) never share a
    key, so such a comparison stays unpaired."""
    out: dict[str, tuple] = {}
    for c in cells:
        if c is not None:
            out.update(c.by_round)
    return out


def _pairs(rows: list[Row], baseline: str, cand: str) -> list[tuple[dict, dict, str]]:
    """Per row with a gain, (baseline {launch: stat}, candidate {launch: stat}, better)."""
    out = []
    for r in rows:
        d = r.deltas.get(cand)
        if d is None or d.gain is None:
            continue
        out.append((r.cells[baseline].by_launch, r.cells[cand].by_launch, r.better))
    return out


def _aggregate(rows: list[Row], baseline: str, cand: str, alpha: float,
               stages: tuple[set[str], set[str]] = (set(), set()),
               notes: _Notes | None = None) -> launch_stats.LaunchTest:
    """The per-launch aggregate of rows (a geomean row, a verdict); over launches of a
    repeats = "auto" campaign (stages[1]) the stage-aware one (stats.two_stage
    .aggregate_staged), footnoted once."""
    used = [r for r in rows if (d := r.deltas.get(cand)) is not None and d.gain is not None]
    pairs = _pairs(rows, baseline, cand)
    rounds = launch_rounds(c for r in used for c in (r.cells[baseline], r.cells[cand]))
    if _staged(pairs, stages):
        from mpibench.stats import two_stage

        if notes is not None:
            notes.add('repeats = "auto" (two-stage): the geomean rows and verdicts are, '
                      "like the cells, the wider of the ordinary aggregate over every "
                      "launch and the one whose spread comes from the stage-2 launches "
                      "only")
        return two_stage.aggregate_staged(pairs, stages[0], alpha, rounds)[0]
    return launch_stats.aggregate(pairs, alpha, rounds=rounds)


def _verdict_rows(rows: list[Row]) -> tuple[list[Row], list[str]]:
    """(the rows one verdict aggregates, the other tools left to their own rows): all rows
    when the keys carry no tool; else the core's rows (or the first tool's)."""
    tools = list(dict.fromkeys(r.tool for r in rows))
    main = verdict_tool(tools)
    if main is None:
        return rows, []
    return [r for r in rows if r.tool == main], [t for t in tools if t != main]


def _summaries(rows: list[Row], baseline: str, candidates: list[str], alpha: float,
               stages: tuple[set[str], set[str]] = (set(), set()),
               notes: _Notes | None = None) -> list[Summary]:
    by_bench: dict[tuple[str, str, str | None], list[Row]] = {}
    for r in rows:
        by_bench.setdefault((r.benchmark, r.metric, r.tool), []).append(r)
    out = []
    for (bench, metric, tool), rs in by_bench.items():
        tests = {c: _aggregate(rs, baseline, c, alpha, stages, notes) for c in candidates}
        out.append(Summary(
            benchmark=bench, metric=metric, rows=len(rs), tool=tool,
            geomean={c: tests[c].gain for c in candidates},
            better={c: sum(r.deltas[c].direction == "better" for r in rs) for c in candidates},
            worse={c: sum(r.deltas[c].direction == "worse" for r in rs) for c in candidates},
            same={c: sum(r.deltas[c].direction == "~" for r in rs) for c in candidates},
            test=tests))
    return out


def _verdict(rows: list[Row], baseline: str, cand: str, alpha: float,
             agg: launch_stats.LaunchTest, p_adj: float | None = None,
             equivalence: float | None = None, family: float = 1.0,
             seq: tuple[Any, str] | None = None) -> tuple[str, str]:
    """(kind, sentence). The kind better/worse comes from one test: the whole comparison
    aggregated per launch (t on the launches' mean oriented log statistic), its p
    Holm-adjusted in the table's family (p_adj); the Holm-significant cells are counted
    beside it. With an equivalence margin, a non-significant comparison whose overall TOST
    passes at alpha is "equivalent within ±margin" (a finding, not an absence of one)."""
    ds = [r.deltas[cand] for r in rows]
    gains = [d.gain for d in ds if d.gain is not None]
    nb = sum(d.direction == "better" for d in ds)
    nw = sum(d.direction == "worse" for d in ds)
    ntested = sum(d.tested for d in ds)
    if not gains:
        return "nothing", f"{cand} vs {baseline}: nothing to compare (no common cells)"
    lo, hi = agg.ci_low, agg.ci_high
    widened = ""
    if p_adj is not None and (ci := _holm_ci(agg, p_adj, alpha)) is not None:
        lo, hi = ci
        # launches stopped at an interim look of repeats = "decide": as the rows
        if seq is not None and agg.tested and (w := _widen(agg, p_adj, alpha, seq)):
            (lo, hi), widened = w[0], (f" (CI widened for sequential looks: "
                                       f"{100 * w[1][1]:.2f}%, look level {w[1][0]:.2g})")
    gm = (f"overall gain {fmt_gain_ci(agg.gain, lo, hi)}{widened} over "
          f"{len(gains)} cell(s), {agg.n_base}+{agg.n_cand} launches")
    if not agg.tested:
        need = ""
        if agg.gain and agg.gain != 1 and agg.sd_log:
            n = launch_stats.launches_needed_for(agg, agg.gain - 1, alpha)
            if n:
                need = (f"; ~{n} launches per side would detect a "
                        f"{launch_stats.fmt_pct(abs(agg.gain - 1))} difference")
        return "cannot tell", (
            f"{cand} vs {baseline}: cannot tell — {agg.n_base}+{agg.n_cand} launches; a test "
            f"needs >= {launch_stats.MIN_LAUNCHES} launches per side (one launch per variant "
            f"decides nothing){need}; {gm}")
    neq = sum(d.equivalent for d in ds)
    eq_cells = (f", {neq} of them equivalent within ±{fmt_margin(equivalence)}"
                if equivalence else "")
    counts = (f"cells: {nb} better, {nw} worse, {ntested - nb - nw} ~ of {ntested} tested"
              f"{eq_cells} (t on log launch statistics, sizes pooled per benchmark, Holm "
              f"over every p shown, alpha {alpha:g})")
    p_shown = p_adj if p_adj is not None else agg.p
    sig = p_shown is not None and p_shown <= alpha
    p_eq = agg.tost(equivalence) if equivalence else None
    if sig and ((agg.gain > 1 and nw) or (agg.gain < 1 and nb)):
        kind = "mixed"
        what = (f"mixed: {cand} {'better' if agg.gain > 1 else 'worse'} overall, but "
                f"{nw if agg.gain > 1 else nb} cell(s) significantly "
                f"{'worse' if agg.gain > 1 else 'better'}")
    elif sig:
        kind = "better" if agg.gain > 1 else "worse"
        what = f"{cand} is {kind}"
    elif p_eq is not None and p_eq <= alpha:
        kind = "equivalent"
        what = (f"{cand} is equivalent to {baseline} within ±{fmt_margin(equivalence)} overall "
                f"(TOST p={p_eq:.3g})")
    else:
        kind = "same"
        what = f"no significant overall difference between {cand} and {baseline}"
        if equivalence:
            what += f", and not shown equivalent within ±{fmt_margin(equivalence)}"
        # planning at the level the verdict is held to: Holm's first step, alpha / family
        mde = launch_stats.detectable_at(agg, alpha * family)
        if mde is not None:
            what += (f" (these launch counts detect an overall difference of ±"
                     f"{launch_stats.fmt_pct(mde)} with 80% power at the verdict's first "
                     f"Holm level, alpha {alpha * family:.2g})")
    p_txt = fmt_p(p_shown) + (" Holm-adjusted" if p_adj is not None else "")
    return kind, f"{what} — {gm}, {p_txt}; {counts}"

