"""The comparison as a Table (the one model every format renders) and as terminal,
Markdown, CSV and JSON text; the records notebooks and CI pipelines read.
"""

from __future__ import annotations

import json
from typing import Any

from mpibench.errors import UsageError
from mpibench.report import machine_state
from mpibench.report import render as render_mod
from mpibench.report.data import (
    ResultCell,
    cell_label,
    fmt_num,
    statistic_legend,
)
from mpibench.report.model import (
    Comparison,
    Delta,
    Row,
    _marks,
    fmt_gain_ci,
    fmt_margin,
    fmt_p,
)
from mpibench.report.render import (
    FORMATS,
    Table,
    clean_json,
)
from mpibench.stats import launch as launch_stats


def _fmt_side(c: ResultCell | None) -> str:
    if c is None:
        return ""
    if c.status != "ok":
        return c.status
    v = fmt_num(c.value)
    if c.shown_statistic != "median":
        v += f" ({c.shown_statistic})"
    pct = c.ci_pct
    if pct is None:
        return f"{v} ± ?"      # one launch: no spread between launches to give a CI
    return f"{v} ± {pct:.1f}%" if pct < 10 else f"{v} ± {pct:.0f}%"


def pct_of_base(d: Delta, better: str) -> tuple[float | None, float | None, float | None]:
    """The candidate's value as % of the baseline's (candidate / baseline x 100) and its 95%
    CI, from the gain and its CI: the gain is base/cand for times, cand/base for rates."""
    if d.gain is None or d.gain <= 0:
        return None, None, None
    if better == "lower":
        lo = 100.0 / d.ci_high if d.ci_high else None
        hi = 100.0 / d.ci_low if d.ci_low else None
        return 100.0 / d.gain, lo, hi
    return (100.0 * d.gain, None if d.ci_low is None else 100.0 * d.ci_low,
            None if d.ci_high is None else 100.0 * d.ci_high)


def _fmt_pct(d: Delta, better: str, c: ResultCell | None) -> str:
    pct, lo, hi = pct_of_base(d, better)
    if pct is None:
        return _fmt_side(c)
    if lo is None or hi is None:
        return f"{pct:.1f}%"
    return f"{pct:.1f}% [{lo:.1f}, {hi:.1f}]"


def _fmt_n(d: Delta) -> str:
    if d.n_base is None and d.n_cand is None:
        return ""
    a = "?" if d.n_base is None else str(d.n_base)
    b = "?" if d.n_cand is None else str(d.n_cand)
    return f"n={a}+{b}"


def _fmt_delta(d: Delta) -> str:
    """benchstat style: '1.21x [1.10, 1.33] (p=0.002 n=5+5)'; '~ (...)' when not
    significant; 'cannot tell (n=1+1)' below two launches a side."""
    if d.gain is None:
        return ""
    n = _fmt_n(d)
    lo, hi = d.ci_holm if d.ci_holm else (d.ci_low, d.ci_high)
    g = fmt_gain_ci(d.gain, lo, hi)
    if not d.tested:
        return f"cannot tell ({g}, {n})" if n else f"cannot tell ({g})"
    p = fmt_p(d.p_adj)
    if not d.significant:
        mark = "≈" if d.equivalent else "~"
        return f"{mark} ({g} {p} {n})"
    return f"{g} ({p} {n})"


def _unit_header(rows: list[Row]) -> str:
    units = sorted({(r.metric, r.unit, r.better) for r in rows})
    if len(units) == 1:
        m, u, b = units[0]
        return f"{m} ({u}, {b} is better)"
    return "; ".join(f"{m} ({u}, {b} is better)" for m, u, b in units)


def comparison_records(cmp: Comparison) -> list[dict[str, Any]]:
    """Flat rows (one per cell x candidate) for CSV/JSON and notebooks."""
    out = []
    regimes = size_regimes(cmp)
    for r in cmp.rows:
        b = r.cells.get(cmp.baseline)
        for cand, d in r.deltas.items():
            c = r.cells.get(cand)
            rec: dict[str, Any] = {
                "benchmark": r.benchmark, "size": r.size, "np": r.np, "params": r.params,
                "metric": r.metric, "unit": r.unit, "better": r.better, "tool": r.tool,
                "baseline": cmp.baseline, "candidate": cand,
            }
            for prefix, cell in (("base", b), ("cand", c)):
                rec[f"{prefix}_status"] = cell.status if cell else "missing"
                rec[f"{prefix}_n"] = cell.n if cell else None
                rec[f"{prefix}_statistic"] = cell.shown_statistic if cell else None
                rec[f"{prefix}_value"] = cell.value if cell else None
                rec[f"{prefix}_ci_low"] = cell.ci_low if cell else None
                rec[f"{prefix}_ci_high"] = cell.ci_high if cell else None
                rec[f"{prefix}_runs"] = len(cell.runs_used) if cell else 0
                rec[f"{prefix}_no_samples"] = cell.no_samples if cell else None
                rec[f"{prefix}_launch_values"] = cell.launch_values if cell else []
                rec[f"{prefix}_within_launch_ci_pct"] = cell.within_ci_pct if cell else None
            pct, pct_lo, pct_hi = pct_of_base(d, r.better)
            rec.update({"cand_pct_of_base": pct, "cand_pct_of_base_ci_low": pct_lo,
                        "cand_pct_of_base_ci_high": pct_hi})
            rec.update({"gain": d.gain, "gain_ci_low": d.ci_low, "gain_ci_high": d.ci_high,
                        "p": d.p, "p_holm": d.p_adj,
                        "gain_ci_holm": list(d.ci_holm) if d.ci_holm else None,
                        "gain_ci_holm_level": _ci_level(d, cmp.alpha),
                        "ci_widened_for_sequential_looks": d.seq_level is not None,
                        "look_level": d.seq_level,
                        "p_equivalence": d.p_equiv, "equivalent": d.equivalent,
                        "significant": d.significant, "tested": d.tested,
                        "direction": d.direction, "base_launches": d.n_base,
                        "cand_launches": d.n_cand, "sd_log_between_launches": d.sd_log,
                        "detectable_gain": (None if d.detectable is None
                                            else 1.0 + d.detectable),
                        "launches_needed": d.needed,
                        **pairing_record(d.test),
                        "regime_sizes": _regime_of(regimes, r, cand, _pairing_of(d)),
                        "notes": [cmp.footnotes[i - 1] for i in sorted(set(r.notes + d.notes))],
                        "transport_warnings": cmp.warnings.get(cmp.baseline, [])
                        + cmp.warnings.get(cand, [])})
            out.append(rec)
    return out


def pairing_record(t: Any) -> dict[str, Any]:
    """A test's pairing in JSON: pairing "round" (launches of one round of an interleaved
    campaign compared as pairs, stats.launch.pair_rounds) or "none"; rounds used; the
    launches left out for want of a partner in their round."""
    paired = t is not None and getattr(t, "pairing", "none") == "round"
    return {"pairing": "round" if paired else "none",
            "rounds": t.pairs if paired else None,
            "unpaired_launches_not_used": t.unpaired if paired else 0}


def size_regimes(cmp: Comparison) -> dict[tuple, list[list]]:
    """{(cell key without its size, candidate, pairing): each regime's cell keys, by size}
    for the benchmarks whose sizes fall into regimes that do not share the round effect
    (paired) or the launch effect (unpaired): stats.launch._regimes, each regime tested on
    its own part; benchmarks tested as one regime are left out."""
    by: dict[tuple, dict[int, list]] = {}
    for r in cmp.rows:
        for cand, d in r.deltas.items():
            if d.tested:
                block = by.setdefault((r.key._replace(size=None), cand, _pairing_of(d)), {})
                block.setdefault(d.test.regime, []).append(r.key)
    return {k: sorted((sorted(v, key=_by_size) for v in g.values()),
                      key=lambda v: _by_size(v[0]))
            for k, g in by.items() if len(g) > 1}


UNBALANCED_DOC = 'docs/statistics.md "Stop 34: a size noisier on the side with fewer launches"'


def unbalanced_launches(cmp: Comparison) -> dict[str, Any] | None:
    """The unbalanced-launches warning (compare's table and JSON, check's summary and
    JSON): tested cells whose test is unpaired with launch counts the one rule calls
    unbalanced (stats.launch.unbalanced); None when no cell is. One line for the
    comparison, naming the launches its smaller side is planned up to."""
    hits = [(min(d.n_base, d.n_cand), max(d.n_base, d.n_cand),
             cmp.baseline if d.n_base < d.n_cand else cand)
            for r in cmp.rows for cand, d in r.deltas.items()
            if d.tested and _pairing_of(d) == "none"
            and launch_stats.unbalanced(d.n_base, d.n_cand)]
    if not hits:
        return None
    small, large = min(h[0] for h in hits), max(h[1] for h in hits)
    sides = sorted({h[2] for h in hits})
    tested = sum(d.tested for r in cmp.rows for d in r.deltas.values())
    message = (
        f"unbalanced launches ({small} vs {large}, unpaired; {len(hits)} of {tested} tested "
        f"cells, smaller side: {', '.join(sides)}): a size noisier only on the side with "
        f"fewer launches is not told apart by the outlying-size flag (A/A false positives "
        f"{launch_stats.unbalanced_false_positives(small)}; {UNBALANCED_DOC}); run both "
        f"sides with the same launches: plan the smaller side up to {large} (JSON "
        f"launches_needed counts that)")
    return {"min_launches": small, "max_launches": large, "cells": len(hits),
            "tested_cells": tested, "smaller_sides": sides, "plan_launches": large,
            "message": message}


def unbalanced_lines(cmp: Comparison) -> list[str]:
    """The warning as caption lines: none or one (unbalanced_launches)."""
    u = unbalanced_launches(cmp)
    return [u["message"]] if u else []


def _pairing_of(d: Any) -> str:
    """A tested delta's pairing, "round" or "none" (what its regimes are regimes of)."""
    return "round" if d.tested and d.test.pairing == "round" else "none"


def _by_size(key: Any) -> tuple:
    return (key.size is None, key.size or 0)


def _regime_of(regimes: dict[tuple, list[list]], r: Row, cand: str, pairing: str
               ) -> list | None:
    """The sizes of the regime row r's cell was tested in (size_regimes), None where its
    benchmark is one regime."""
    for keys in regimes.get((r.key._replace(size=None), cand, pairing), ()):
        if r.key in keys:
            return [k.size for k in keys]
    return None


def regimes_legend(cmp: Comparison) -> list[str]:
    """One caption line per benchmark whose sizes split into regimes (round regimes where
    paired, launch regimes where not), naming each regime's sizes."""
    out = []
    for (key, cand, pairing), groups in size_regimes(cmp).items():
        label = cell_label(key)
        name = key.benchmark + ("" if label == "-" else f" {label}")
        spans = [cell_label(g[0]) if len(g) == 1 else
                 f"{cell_label(g[0])}-{cell_label(g[-1])}" for g in groups]
        what = "round" if pairing == "round" else "launch"
        out.append(f"{what} regimes, {name} ({cand}): the sizes {' / '.join(spans)} do not "
                   f"share one {what} effect; each is tested on its own {what} part")
    return out


def pairing_summary(cmp: Comparison) -> dict[str, Any]:
    """The table's pairing: "round" when any tested row is paired; how many rows are, and
    how many launches the paired rows left out (summed over rows)."""
    tests = [d.test for r in cmp.rows for d in r.deltas.values() if d.tested]
    paired = [t for t in tests if t.pairing == "round"]
    return {"pairing": "round" if paired else "none", "paired_rows": len(paired),
            "tested_rows": len(tests),
            "rounds": sorted({t.pairs for t in paired}),
            "unpaired_launches_not_used": max((t.unpaired for t in paired), default=0)}


def _ci_level(d: Any, alpha: float) -> float | None:
    """The confidence level of a row's gain_ci_holm: 1 - alpha p / p_holm (judge._holm_ci,
    and for a row decided at an interim look of a decide campaign the look's level)."""
    if d.seq_ci_level is not None:
        return d.seq_ci_level
    if d.ci_holm is None or d.p is None or not d.p_adj:
        return None
    return min(max(1.0 - alpha * d.p / d.p_adj, 1.0 - alpha), 1.0 - 1e-12)


def to_json_obj(cmp: Comparison) -> dict[str, Any]:
    return clean_json({
        "title": cmp.title, "baseline": cmp.baseline, "groups": cmp.sets, "alpha": cmp.alpha,
        "runs": cmp.run_counts, "verdict": cmp.verdict, "verdicts": cmp.verdicts,
        "rows": comparison_records(cmp),
        "summary": [{"benchmark": s.benchmark, "metric": s.metric, "tool": s.tool,
                     "rows": s.rows,
                     "geomean_gain": s.geomean,
                     "geomean_ci": {c: [t.ci_low, t.ci_high] for c, t in s.test.items()},
                     "geomean_p": {c: t.p for c, t in s.test.items()},
                     "geomean_p_holm": s.p_adj,
                     "geomean_pairing": {c: pairing_record(t) for c, t in s.test.items()},
                     "geomean_ci_holm": {c: list(v) for c, v in s.ci_holm.items()},
                     "geomean_ci_widened_for_sequential_looks": {
                         c: {"look_level": lv, "level": cl}
                         for c, (lv, cl) in s.seq_level.items()},
                     "better": s.better, "worse": s.worse,
                     "not_significant": s.same} for s in cmp.summaries],
        "equivalence_margin": cmp.equivalence,
        "overall": {c: {"gain": t.gain, "ci_low": t.ci_low, "ci_high": t.ci_high, "p": t.p,
                        "p_holm": cmp.overall_p_adj.get(c),
                        "p_equivalence": (t.tost(cmp.equivalence) if cmp.equivalence
                                          else None),
                        "base_launches": t.n_base, "cand_launches": t.n_cand,
                        **pairing_record(t),
                        "ci_widened_for_sequential_looks": (
                            {"look_level": cmp.overall_seq_level[c][0],
                             "level": cmp.overall_seq_level[c][1]}
                            if c in cmp.overall_seq_level else None),
                        "verdict": cmp.outcomes.get(c)} for c, t in cmp.overall.items()},
        "test": "t on the logs of the launch statistics (one value per launch); a "
                "benchmark's sizes pool their between-launch spread (launch effect shared "
                "by the sizes + size-specific part, each size's own, moderated, where the "
                "sizes are not equally noisy: stats.moderate, stats.launch.compare_cells); "
                "Welch df, "
                "Cochran-Cox critical values when a side has 2-3 launches; p_holm: adjusted over "
                "every p shown by a weighted Holm graph (verdicts half of alpha, cells and "
                "geomean rows the other half; a benchmark's pooled cells one unit, closed "
                "test on their mean gain and maxT, maxT alone where its sizes keep their "
                "own parts, docs/statistics.md); gain_ci_*: 95%, "
                "gain_ci_holm: at the row's Holm level, gain_ci_holm_level = 1 - alpha x p / "
                "p_holm, so it excludes 1 exactly when p_holm <= alpha. A row a repeats = "
                "\"decide\" campaign's rule decided at an interim look "
                "(ci_widened_for_sequential_looks, look_level: that look's level) prints "
                "the rule's decision at that look: p and the gain are the look's, p_holm = "
                "the look's adjusted p (the same family and procedure) x alpha / look_level, "
                "(capped at 1), its gain_ci_holm at 1 - look_level x p / that adjusted p "
                "(gain_ci_holm_level): widened for "
                "sequential looks, at least the repeated CI at the look's level. A geomean "
                "row or verdict all of whose cells stopped early prints the wider of its "
                "Holm-level CI and the repeated CI at the look's level "
                "(geomean_ci_widened_for_sequential_looks, overall.*."
                "ci_widened_for_sequential_looks: look_level and the CI's level)",
        **pairing_summary(cmp),
        "pairing_legend": PAIRING_LEGEND,
        "unbalanced_launches": unbalanced_launches(cmp),
        "launch_statistic": cmp.statistic,
        "footnotes": cmp.footnotes,
        "warnings": cmp.warning_lines,
        "machine_state": machine_state.to_obj(cmp),
        "not_compared": cmp.not_compared,
        "units": "time in microseconds; MB/s = 10^6 bytes/s; gain > 1 means the candidate "
                 "is better",
        "statistic": statistic_legend(c for r in cmp.rows for c in r.cells.values()),
    })


PAIRING_LEGEND = (
    "pairing \"round\": both sides' launches ran in the same rounds of one interleaved "
    "campaign (repeat r of every variant back-to-back), so each row is tested on the "
    "per-round differences of the log launch statistics (a round differential the "
    "benchmark's sizes share plus a size-specific part, pooled over the sizes; "
    "stats.launch.paired_test; pooled over each round regime's sizes instead where the "
    "sizes do not share one round effect: regime_sizes names the row's regime, "
    "null where the benchmark is one), which removes what both launches of a round share (load "
    "phases, the machine's mode). Applies when every cell of the benchmark has at least "
    f"{launch_stats.MIN_PAIRS} complete pairs; launches without a partner in their round "
    "(a failed launch on the other side) are left out and counted "
    "(unpaired_launches_not_used); base_launches = cand_launches = rounds. \"none\": "
    "the two sides' launches as independent samples (random-order campaigns, different "
    "campaigns, fewer pairs), tested per launch regime where the sizes do not share one "
    "launch effect (regime_sizes, as for rounds)")


def pairing_legend(cmp: Comparison) -> list[str]:
    """The caption line of a table with rows paired by round (none when nothing is), then
    one line per benchmark split into regimes (regimes_legend), paired or not."""
    ps = pairing_summary(cmp)
    if ps["pairing"] != "round":
        return regimes_legend(cmp)
    n = ps["unpaired_launches_not_used"]
    r = ps["rounds"]
    rounds = str(r[0]) if r[0] == r[-1] else f"{r[0]}-{r[-1]}"
    return [f"paired by round: {ps['paired_rows']} of {ps['tested_rows']} tested rows "
            f"compare the launches of the same round of an interleaved campaign ({rounds} "
            "rounds; p and CI from the per-round differences, n = rounds); "
            + (f"up to {n} launch(es) per row had no partner in their round and were not "
               "used" if n else "every launch had its partner")] + regimes_legend(cmp)


def _table_model(cmp: Comparison) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, body rows, and indices of summary rows (for styling)."""
    show_np = len({r.np for r in cmp.rows}) > 1
    hdr = ["benchmark", "size/cell"] + (["np"] if show_np else [])
    base_marks = _marks(cmp.set_marks.get(cmp.baseline, ()))
    hdr += [f"{cmp.baseline} (base) {base_marks}".rstrip()]
    for c in cmp.candidates:
        hdr += [cmp.header_name(c), f"vs {cmp.baseline}"] \
            if len(cmp.candidates) > 1 else [cmp.header_name(c), "vs base"]
    hdr += ["notes"]
    body: list[list[str]] = []
    summary_idx: list[int] = []
    summaries = {(s.benchmark, s.metric, s.tool): s for s in cmp.summaries}
    prev = None
    multi_metric = len({(r.metric, r.unit) for r in cmp.rows}) > 1
    for i, r in enumerate(cmp.rows):
        group_key = (r.benchmark, r.metric, r.tool)
        what = r.metric if r.metric == r.unit else f"{r.metric}, {r.unit}"
        name = f"{r.title} [{what}]" if multi_metric else r.title
        line = [name if group_key != prev else "", r.label]
        if show_np:
            line.append("" if r.np is None else str(r.np))
        base = r.cells.get(cmp.baseline)
        line.append(f"100% ({_fmt_side(base)})" if cmp.relative and base is not None
                    and base.status == "ok" else _fmt_side(base))
        notes = list(r.notes)
        for c in cmp.candidates:
            d = r.deltas[c]
            side = (_fmt_pct(d, r.better, r.cells.get(c)) if cmp.relative
                    else _fmt_side(r.cells.get(c)))
            line += [side, _fmt_delta(d)]
            notes += d.notes
        line.append(_marks(notes))
        body.append(line)
        prev = group_key
        nxt = cmp.rows[i + 1] if i + 1 < len(cmp.rows) else None
        if (nxt is None or (nxt.benchmark, nxt.metric, nxt.tool) != group_key):
            s = summaries[group_key]
            if s.rows > 1:
                line = ["", "geomean"] + ([""] if show_np else []) + [""]
                for c in cmp.candidates:
                    t = s.test[c]
                    lo, hi = s.ci_holm.get(c) or (t.ci_low, t.ci_high)
                    sig = s.p_adj.get(c) is not None and s.p_adj[c] <= cmp.alpha
                    line += ["", "" if t.gain is None else
                             ("" if sig or not t.tested else "~ ")
                             + fmt_gain_ci(t.gain, lo, hi)
                             + (f" ({fmt_p(s.p_adj.get(c, t.p))} n={t.n_base}+{t.n_cand})"
                                if t.tested else " (cannot tell)")]
                line.append("")
                body.append(line)
                summary_idx.append(len(body) - 1)
    return hdr, body, summary_idx


def launch_legend(statistic: str = "median") -> str:
    """What a value ± CI% means, for captions."""
    return (f"value = geometric mean of the launch {statistic}s (each launch, one mpirun, "
            "weighted equally) ± 95% CI from the spread between launches (± ? = one launch)")


def _header_lines(cmp: Comparison) -> list[str]:
    runs = ", ".join(f"{g}: {cmp.run_counts.get(g, 0)} launch(es)" for g in cmp.sets)
    # the launch legend[; imported rows: ...] or, all imported, 'value = the tool's own ...'
    shown = statistic_legend((c for r in cmp.rows for c in r.cells.values()),
                             median=launch_legend(cmp.statistic))
    rel = ([f"--relative: candidate cells are % of the baseline (candidate value / "
            f"{cmp.baseline}'s x 100) [95% CI from the gain's]; above 100% a time is slower, "
            "a rate faster; the baseline's own value in parentheses"] if cmp.relative else [])
    return rel + [
        f"{_unit_header(cmp.rows)}; baseline {cmp.baseline}; {runs}",
        f"{shown}; gain > 1 = candidate better (time: base/cand, rates: cand/base) [CI at the "
        "row's Holm level, 1 - alpha·p/p_Holm: it excludes 1 exactly when the row is "
        "significant; the plain 95% CI is in the JSON]; "
        "p = t on the logs of the launch statistics (a benchmark's sizes pool their "
        "between-launch spread: a shared launch effect plus a size-specific part, each "
        "size's own where the sizes are not equally noisy), "
        "Holm-adjusted over every p shown (weighted: the verdicts hold half of alpha, the "
        "rows, cells and geomean rows, the other half; a rejection passes its share on; a "
        "benchmark's cells are tested together, by their mean gain and maxT, by maxT "
        "alone where its sizes keep their own parts); "
        f"~ = not significant at alpha {cmp.alpha:g}"
        + (f"; ≈ = not significant and equivalent within ±{fmt_margin(cmp.equivalence)} (TOST "
           f"at alpha {cmp.alpha:g} per cell)" if cmp.equivalence else "")
        + f"; n = launches per side; cannot tell = "
        f"fewer than {launch_stats.MIN_LAUNCHES} launches on a side; geomean rows aggregate "
        "per launch first",
    ] + pairing_legend(cmp) + _sequential_legend(cmp) + unbalanced_lines(cmp)


def _sequential_legend(cmp: Comparison) -> list[str]:
    """The legend line of the CIs widened for sequential looks (none when nothing is)."""
    rows = {d.seq_level for r in cmp.rows for d in r.deltas.values()
            if d.seq_level is not None}
    other = {lv for s in cmp.summaries for lv, _cl in s.seq_level.values()} | {
        lv for lv, _cl in cmp.overall_seq_level.values()}
    if not rows and not other:
        return []
    levels = ", ".join(f"{x:.2g}" for x in sorted(rows | other))
    return [
        f"CI widened for sequential looks (look level {levels}): a repeats = \"decide\" "
        "campaign's rule decided these rows at an interim look, in this table's family at "
        "the look's level; such a row prints that look's decision: its gain and p are the "
        "look's, its Holm-adjusted p is the look's adjusted p x alpha / look level, its CI at "
        "1 - look level·p/(the look's adjusted p), at least the repeated CI at the look's "
        "level; a geomean row or verdict whose cells all stopped early prints the wider of "
        "its Holm-level CI and the repeated CI at the look's level"]


def comparison_table(cmp: Comparison, heading_level: int = 3) -> Table:
    """The comparison as a Table: one row per cell (geomean rows bold), the legend as its
    caption, footnotes, and as its footer the launches' machine state (machine_state.py,
    when probed) and the verdict."""
    hdr, body, summary_idx = _table_model(cmp)
    return Table(title=cmp.title or f"comparison vs {cmp.baseline}", header=hdr, rows=body,
                 caption="\n".join(_header_lines(cmp)), notes=list(cmp.footnotes),
                 bold_rows=set(summary_idx), kind="comparison", left_cols=2,
                 footer=machine_state.footer(cmp) + [("verdict", cmp.verdict)],
                 md_heading_level=heading_level,
                 records=comparison_records(cmp))


def render_terminal(cmp: Comparison, width: int | None = None) -> str:
    return render_mod.terminal(comparison_table(cmp), width)


def render_markdown(cmp: Comparison, heading_level: int = 3) -> str:
    t = comparison_table(cmp, heading_level)
    if not cmp.title:
        t.title = "Comparison vs " + cmp.baseline
    return render_mod.markdown(t)


def render_csv(cmp: Comparison) -> str:
    recs = []
    for rec in comparison_records(cmp):
        rec = dict(rec)
        rec["notes"] = " / ".join(rec["notes"])
        rec["transport_warnings"] = " / ".join(rec["transport_warnings"])
        recs.append(rec)
    if not recs:
        return "benchmark,size,candidate,gain\n"
    return render_mod.csv_text(recs)


def render(comparison: Comparison, fmt: str = "terminal") -> str:
    """Render a Comparison as terminal | markdown | csv | json text."""
    if fmt == "terminal":
        return render_terminal(comparison)
    if fmt == "markdown":
        return render_markdown(comparison)
    if fmt == "csv":
        return render_csv(comparison)
    if fmt == "json":
        return json.dumps(to_json_obj(comparison), indent=2)
    raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
