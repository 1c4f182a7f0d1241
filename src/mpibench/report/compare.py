"""Compare result sets: benchstat-style tables with honest statistics.

    cmp = compare_groups(store, {"openmpi": [run ids], "mpich": [run ids]}, "openmpi")
    print(render(cmp, "terminal"))          # or markdown | csv | json

The launch (one mpirun) is the unit of replication (stats.launch). Per cell (benchmark x
size, or application cell) each side shows the geometric mean of its launch statistics ±
the 95% CI from the spread between its launches. Per candidate against the baseline: the
gain oriented so > 1 is better (time-like metrics, better='lower': baseline/candidate;
rates, better='higher': candidate/baseline) with its 95% CI, and Welch's t test on the logs
of the launch statistics, Holm-corrected across every test of the comparison. Not
significant prints as `~`; fewer than two launches on a side is "cannot tell". The geomean
per benchmark and the verdict aggregate per launch first (one launch measures every size).
A gain is only computed between the same statistic on both sides.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from mpibench import stats
from mpibench.errors import UsageError
from mpibench.report import render as render_mod
from mpibench.report.data import (
    Cell,
    bench_sort_key,
    cell_label,
    fmt_num,
    fmt_size,
    imported_clause,
    load_cells,
    params_key,
    pool,
    split_variant,
    statistic_legend,
)
from mpibench.report.render import (  # noqa: F401 - re-exported for callers and tests
    FORMATS,
    PLAIN_TABLE_ROWS,
    Table,
    clean_json,
    md_escape,
    md_table,
    plain_table,
)
from mpibench.report.rules import CellKey, why_not_comparable
from mpibench.stats import launch as launch_stats
from mpibench.store import Store
from mpibench.store.report_queries import runs_with_results, variants_with_results


@dataclass
class Delta:
    """Candidate vs baseline in one row: the launch-level test (stats.launch.LaunchTest,
    None when the two cells may not be compared) and what the table adds to it."""
    test: launch_stats.LaunchTest | None = None
    p_adj: float | None = None      # Holm-adjusted over the whole comparison
    significant: bool = False
    needed: int | None = None       # launches per side to detect the observed gain
    notes: list[int] = field(default_factory=list)   # footnote numbers

    # the test's figures, read through (None / False / 0 without a test)
    @property
    def gain(self) -> float | None:
        return self.test.gain if self.test else None

    @property
    def ci_low(self) -> float | None:      # 95% CI of the gain (Welch, between launches)
        return self.test.ci_low if self.test else None

    @property
    def ci_high(self) -> float | None:
        return self.test.ci_high if self.test else None

    @property
    def p(self) -> float | None:          # raw Welch t p on the log launch statistics
        return self.test.p if self.test else None

    @property
    def tested(self) -> bool:
        return bool(self.test and self.test.tested)

    @property
    def n_base(self) -> int | None:       # launches per side
        return self.test.n_base if self.test else None

    @property
    def n_cand(self) -> int | None:
        return self.test.n_cand if self.test else None

    @property
    def sd_log(self) -> float | None:     # pooled between-launch sd of the logs
        return self.test.sd_log if self.test else None

    @property
    def detectable(self) -> float | None:  # smallest gain - 1 detectable at these counts
        return self.test.detectable if self.test else None

    @property
    def direction(self) -> str:
        if not self.significant or self.gain is None:
            return "~"
        return "better" if self.gain > 1 else "worse"


@dataclass
class Row:
    key: CellKey
    benchmark: str
    size: int | None
    np: int | None
    params: dict[str, Any]
    metric: str
    unit: str
    better: str
    cells: dict[str, Cell]                 # group -> cell (missing groups absent)
    deltas: dict[str, Delta]               # candidate group -> delta
    notes: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        return cell_label(self)

    @property
    def tool(self) -> str | None:
        """The tool when it is part of the cell key (a set holding several tools)."""
        return self.key.tool

    @property
    def title(self) -> str:
        """The benchmark's name in tables, with the tool when the key has one."""
        return self.key.title


@dataclass
class Summary:
    benchmark: str
    metric: str
    geomean: dict[str, float | None]       # candidate -> geomean gain over the rows
    rows: int
    better: dict[str, int]
    worse: dict[str, int]
    same: dict[str, int]
    # candidate -> the per-launch aggregate (gain, CI, p over launches)
    test: dict[str, launch_stats.LaunchTest] = field(default_factory=dict)
    tool: str | None = None                # when the cell keys carry the tool (rules.py)


@dataclass
class Comparison:
    groups: list[str]
    baseline: str
    alpha: float
    rows: list[Row]
    summaries: list[Summary]
    footnotes: list[str]
    verdict: str
    verdicts: dict[str, str]
    run_counts: dict[str, int]
    title: str = ""
    # candidate -> the whole comparison aggregated per launch, and the verdict's kind
    # (better, worse, mixed, same, cannot tell, nothing)
    overall: dict[str, launch_stats.LaunchTest] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    statistic: str = "median"
    # transport verification (verify.transport_warnings): set -> its warning lines, and the
    # footnote numbers that mark the set's column
    warnings: dict[str, list[str]] = field(default_factory=dict)
    set_marks: dict[str, list[int]] = field(default_factory=dict)
    # sets without a single cell in common with the baseline: no column, one footnote
    not_compared: list[str] = field(default_factory=list)
    # --relative: candidates shown as % of the baseline (tables and plots)
    relative: bool = False

    @property
    def candidates(self) -> list[str]:
        return [g for g in self.groups if g != self.baseline]

    @property
    def warning_lines(self) -> list[str]:
        return [w for g in self.groups + self.not_compared for w in self.warnings.get(g, [])]

    def header_name(self, group: str) -> str:
        """The set's column name with its warning footnote marks, e.g. 'mpich [1]'."""
        marks = _marks(self.set_marks.get(group, ()))
        return f"{group} {marks}" if marks else group


class _Notes:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def transport_notes(store: Store, groups: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Per set, one warning line per variant whose requested transport did not take effect
    (the MISMATCH `campaign status` shows): the results of such a set measure another
    transport than its name says, which every table built from it must say."""
    from mpibench.verify import transport_warnings

    out: dict[str, list[str]] = {}
    for g, ids in groups.items():
        lines = transport_warnings(store, list(ids))
        if lines:
            out[g] = [("WARNING: " if line.startswith(f"variant {g}:") else
                       f"WARNING (set {g}): ") + line for line in lines]
    return out


def transport_lines(store: Store, groups: Mapping[str, list[str]]) -> list[str]:
    """transport_notes flattened, set by set: the warning lines of a table without a
    comparison (a comparison has them as Comparison.warning_lines)."""
    return [w for ws in transport_notes(store, groups).values() for w in ws]


def orient_gain(base: float | None, cand: float | None, better: str) -> float | None:
    if base is None or cand is None or base <= 0 or cand <= 0:
        return None
    return base / cand if better == "lower" else cand / base


def compare_groups(store: Store, groups: Mapping[str, list[str]], baseline: str, *,
                   alpha: float = 0.05, sizes: Iterable[int] | None = None,
                   benchmarks: Iterable[str] | None = None, title: str = "",
                   cells: dict | None = None, statistic: str = "median") -> Comparison:
    """Compare every group against `baseline`. groups: display name -> run ids.
    statistic: each launch's statistic (median or mean of its samples).

    The sets whose runs did not use the transport they requested
    (verify.transport_warnings) are footnoted and their columns marked."""
    if not (isinstance(alpha, int | float) and 0.0 < alpha < 1.0):
        raise UsageError(f"--alpha {alpha!r}: expected a significance level between 0 and 1 "
                         "(e.g. 0.05)")
    if baseline not in groups:
        raise UsageError(f"baseline {baseline!r} is not one of the groups: {', '.join(groups)}")
    if len(groups) < 2:
        raise UsageError("a comparison needs at least two result sets (got "
                         f"{', '.join(groups) or 'none'})")
    order = [baseline] + [g for g in groups if g != baseline]
    cells = cells if cells is not None else load_cells(store, groups, statistic=statistic)
    size_set = set(sizes) if sizes is not None else None
    bench_set = {b.lower() for b in benchmarks} if benchmarks else None
    selected = [(key, by_group) for key, by_group in cells.items()
                if (size_set is None or key.size in size_set)
                and (bench_set is None or key.benchmark.lower() in bench_set)]
    notes = _Notes()
    # Transport warnings first: they decide whether any number below means what it says.
    warnings = transport_notes(store, groups)
    set_marks = {g: [notes.add(w) for w in ws] for g, ws in warnings.items()}
    # A set that shares no cell with the baseline would get an empty column and a "no
    # result" note on every row; it is named once in a footnote instead.
    shared = {g for _key, by_group in selected if baseline in by_group for g in by_group}
    not_compared = [g for g in order[1:] if g not in shared]
    for g in not_compared:
        own = [key for key, by_group in selected if g in by_group]
        benches = sorted({key.benchmark for key in own}, key=bench_sort_key)
        what = (f"its {len(own)} cell(s): {', '.join(benches[:6])}"
                + (" ..." if len(benches) > 6 else "") + "; see its own results, --results"
                if own else "it has no cells in the selection")
        notes.add(f"set {g} has no cell in common with the baseline {baseline}: compared "
                  f"nowhere ({what})")
    if not_compared:
        order = [g for g in order if g not in not_compared]
        drop = set(not_compared)
        selected = [(key, {g: c for g, c in by_group.items() if g not in drop})
                    for key, by_group in selected]
        selected = [(key, by_group) for key, by_group in selected if by_group]
    rows: list[Row] = []
    for key, by_group in selected:
        any_cell = by_group.get(baseline) or next(iter(by_group.values()))
        row = Row(key=key, benchmark=key.benchmark, size=key.size, np=key.np,
                  params=dict(any_cell.params), metric=key.metric, unit=any_cell.unit,
                  better=any_cell.better, cells=by_group, deltas={})
        for g, c in by_group.items():
            if c.mixed:
                row.notes.append(notes.add(
                    f"{g}: runs with different fingerprints are not pooled; used the most "
                    f"common fingerprint ({len(c.runs_used)} run(s)), excluded "
                    f"{len(c.runs_excluded)} run(s) with {c.n_fingerprints - 1} other "
                    "fingerprint(s)"))
            if c.runs_failed:
                sts = sorted({s for _, s, _ in c.runs_failed})
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
        base = by_group.get(baseline)
        for cand in order[1:]:
            d = Delta()
            row.deltas[cand] = d
            c = by_group.get(cand)
            if base is None or c is None:
                missing = baseline if base is None else cand
                d.notes.append(notes.add(f"{missing}: no result for this cell"))
                continue
            why = why_not_comparable(base, c)          # the comparability rule
            if why is not None:
                d.notes.append(notes.add(why))
                continue
            d.test = t = launch_stats.compare(base.launch_values, c.launch_values, row.better,
                                              alpha)
            if t.gain is not None and t.gain != 1.0:
                d.needed = launch_stats.launches_needed(t.sd_log, abs(t.gain - 1.0), alpha)
            if not t.tested:
                d.notes.append(notes.add(_untested_note(t, alpha)))
        rows.append(row)

    # Holm across every test in the table.
    tests = [(r, g) for r in rows for g, d in r.deltas.items() if d.tested]
    adj = stats.holm([r.deltas[g].p for r, g in tests])
    for (r, g), pa in zip(tests, adj, strict=True):
        d = r.deltas[g]
        d.p_adj = float(pa)
        d.significant = bool(pa <= alpha)
    summaries = _summaries(rows, baseline, order[1:], alpha)
    # one tool per verdict: with the core's and a peer suite's rows in one table (a set
    # holding both), the verdict is the core's (else the first tool's) and says so
    vrows, others = _verdict_rows(rows)
    overall = {cand: _aggregate(vrows, baseline, cand, alpha) for cand in order[1:]}
    kinds: dict[str, str] = {}
    verdicts = {}
    for cand in order[1:]:
        kinds[cand], verdicts[cand] = _verdict(vrows, baseline, cand, alpha, overall[cand])
        if others:
            verdicts[cand] += (f" ({vrows[0].tool} rows only; {', '.join(others)} rows are "
                               "separate cells with their own geomean rows)")
    for cand in not_compared:
        kinds[cand] = "nothing"
        verdicts[cand] = (f"{cand} vs {baseline}: nothing to compare (no cell in common with "
                          "the baseline)")
    for cand in verdicts:
        marks = set_marks.get(baseline, []) + set_marks.get(cand, [])
        if marks:
            who = " and ".join(dict.fromkeys(g for g in (baseline, cand) if g in set_marks))
            verdicts[cand] += (f" — WARNING: {who} did not run on the requested transport "
                               f"{_marks(marks)}")
    return Comparison(groups=order, baseline=baseline, alpha=alpha, rows=rows,
                      summaries=summaries, footnotes=notes.texts,
                      verdict="; ".join(verdicts.values()), verdicts=verdicts,
                      run_counts={g: len(ids) for g, ids in groups.items()}, title=title,
                      warnings=warnings, set_marks=set_marks, not_compared=not_compared,
                      overall=overall, kinds=kinds, statistic=statistic)


def _untested_note(t: launch_stats.LaunchTest, alpha: float) -> str:
    if t.reason.startswith("too few launches"):
        need = launch_stats.MIN_LAUNCHES
        plan = (f"; at the spread seen so far, {n} launches per side would detect the "
                f"observed {launch_stats.fmt_pct(abs(t.gain - 1))} difference"
                if t.gain and t.gain != 1 and t.sd_log and
                (n := launch_stats.launches_needed(t.sd_log, abs(t.gain - 1), alpha))
                else "; run >= 3 interleaved launches per side, then `compare --detect 5%` "
                "says how many a given difference needs")
        return (f"cannot tell: a side has fewer than {need} launches (a launch is the unit "
                f"of replication; one launch per side decides nothing){plan}")
    return f"not tested: {t.reason}"


def _pairs(rows: list[Row], baseline: str, cand: str) -> list[tuple[dict, dict, str]]:
    """Per row with a gain, (baseline {launch: stat}, candidate {launch: stat}, better)."""
    out = []
    for r in rows:
        d = r.deltas.get(cand)
        if d is None or d.gain is None:
            continue
        out.append((r.cells[baseline].by_launch, r.cells[cand].by_launch, r.better))
    return out


def _aggregate(rows: list[Row], baseline: str, cand: str,
               alpha: float) -> launch_stats.LaunchTest:
    return launch_stats.aggregate(_pairs(rows, baseline, cand), alpha)


def _verdict_rows(rows: list[Row]) -> tuple[list[Row], list[str]]:
    """(the rows one verdict aggregates, the other tools left to their own rows): all rows
    when the keys carry no tool; else the core's rows (or the first tool's)."""
    tools = list(dict.fromkeys(r.tool for r in rows))
    if len(tools) <= 1:
        return rows, []
    main = "core" if "core" in tools else sorted(t or "" for t in tools)[0]
    return [r for r in rows if r.tool == main], [t for t in tools if t != main]


def _summaries(rows: list[Row], baseline: str, candidates: list[str],
               alpha: float) -> list[Summary]:
    by_bench: dict[tuple[str, str, str | None], list[Row]] = {}
    for r in rows:
        by_bench.setdefault((r.benchmark, r.metric, r.tool), []).append(r)
    out = []
    for (bench, metric, tool), rs in by_bench.items():
        tests = {c: _aggregate(rs, baseline, c, alpha) for c in candidates}
        out.append(Summary(
            benchmark=bench, metric=metric, rows=len(rs), tool=tool,
            geomean={c: tests[c].gain for c in candidates},
            better={c: sum(r.deltas[c].direction == "better" for r in rs) for c in candidates},
            worse={c: sum(r.deltas[c].direction == "worse" for r in rs) for c in candidates},
            same={c: sum(r.deltas[c].direction == "~" for r in rs) for c in candidates},
            test=tests))
    return out


def fmt_gain_ci(gain: float | None, lo: float | None, hi: float | None,
                digits: int = 3) -> str:
    """'1.042x [0.981, 1.107]' (no brackets without a CI)."""
    if gain is None:
        return ""
    if 0 < gain < 1:      # at least `digits` significant figures below 1 (0.0710x, not 0.07x)
        digits = max(digits, digits - math.floor(math.log10(gain)) - 1)
    g = f"{gain:.{digits}f}x"
    if lo is None or hi is None:
        return g
    return f"{g} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_p(p: float | None) -> str:
    if p is None:
        return ""
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def _verdict(rows: list[Row], baseline: str, cand: str, alpha: float,
             agg: launch_stats.LaunchTest) -> tuple[str, str]:
    """(kind, sentence). The kind better/worse comes from one test: the whole comparison
    aggregated per launch (Welch t on the launches' mean oriented log statistic) at alpha;
    the Holm-significant cells are counted beside it."""
    ds = [r.deltas[cand] for r in rows]
    gains = [d.gain for d in ds if d.gain is not None]
    nb = sum(d.direction == "better" for d in ds)
    nw = sum(d.direction == "worse" for d in ds)
    ntested = sum(d.tested for d in ds)
    if not gains:
        return "nothing", f"{cand} vs {baseline}: nothing to compare (no common cells)"
    gm = (f"overall gain {fmt_gain_ci(agg.gain, agg.ci_low, agg.ci_high)} over "
          f"{len(gains)} cell(s), {agg.n_base}+{agg.n_cand} launches")
    if not agg.tested:
        need = ""
        if agg.gain and agg.gain != 1 and agg.sd_log:
            n = launch_stats.launches_needed(agg.sd_log, abs(agg.gain - 1), alpha)
            if n:
                need = (f"; ~{n} launches per side would detect a "
                        f"{launch_stats.fmt_pct(abs(agg.gain - 1))} difference")
        return "cannot tell", (
            f"{cand} vs {baseline}: cannot tell — {agg.n_base}+{agg.n_cand} launches; a test "
            f"needs >= {launch_stats.MIN_LAUNCHES} launches per side (one launch per variant "
            f"decides nothing){need}; {gm}")
    counts = (f"cells: {nb} better, {nw} worse, {ntested - nb - nw} ~ of {ntested} tested "
              f"(Welch t on log launch statistics, Holm, alpha {alpha:g})")
    sig = agg.p is not None and agg.p <= alpha
    if sig and ((agg.gain > 1 and nw) or (agg.gain < 1 and nb)):
        kind = "mixed"
        what = (f"mixed: {cand} {'better' if agg.gain > 1 else 'worse'} overall, but "
                f"{nw if agg.gain > 1 else nb} cell(s) significantly "
                f"{'worse' if agg.gain > 1 else 'better'}")
    elif sig:
        kind = "better" if agg.gain > 1 else "worse"
        what = f"{cand} is {kind}"
    else:
        kind = "same"
        what = f"no significant overall difference between {cand} and {baseline}"
        if agg.detectable is not None:
            what += (f" (these launch counts detect >= "
                     f"{launch_stats.fmt_pct(agg.detectable)} overall)")
    return kind, f"{what} — {gm}, {fmt_p(agg.p)}; {counts}"


# ---------------------------------------------------------------------------------------
# Rendering

def _fmt_side(c: Cell | None) -> str:
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


def _fmt_pct(d: Delta, better: str, c: Cell | None) -> str:
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
    g = fmt_gain_ci(d.gain, d.ci_low, d.ci_high)
    if not d.tested:
        return f"cannot tell ({g}, {n})" if n else f"cannot tell ({g})"
    p = fmt_p(d.p_adj)
    if not d.significant:
        return f"~ ({g} {p} {n})"
    return f"{g} ({p} {n})"


def _marks(nums: Iterable[int]) -> str:
    nums = sorted(set(nums))
    return "".join(f"[{i}]" for i in nums)


def _unit_header(rows: list[Row]) -> str:
    units = sorted({(r.metric, r.unit, r.better) for r in rows})
    if len(units) == 1:
        m, u, b = units[0]
        return f"{m} ({u}, {b} is better)"
    return "; ".join(f"{m} ({u}, {b} is better)" for m, u, b in units)


def comparison_records(cmp: Comparison) -> list[dict[str, Any]]:
    """Flat rows (one per cell x candidate) for CSV/JSON and notebooks."""
    out = []
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
                        "significant": d.significant, "tested": d.tested,
                        "direction": d.direction, "base_launches": d.n_base,
                        "cand_launches": d.n_cand, "sd_log_between_launches": d.sd_log,
                        "detectable_gain": (None if d.detectable is None
                                            else 1.0 + d.detectable),
                        "launches_needed": d.needed,
                        "notes": [cmp.footnotes[i - 1] for i in sorted(set(r.notes + d.notes))],
                        "transport_warnings": cmp.warnings.get(cmp.baseline, [])
                        + cmp.warnings.get(cand, [])})
            out.append(rec)
    return out


def to_json_obj(cmp: Comparison) -> dict[str, Any]:
    return clean_json({
        "title": cmp.title, "baseline": cmp.baseline, "groups": cmp.groups, "alpha": cmp.alpha,
        "runs": cmp.run_counts, "verdict": cmp.verdict, "verdicts": cmp.verdicts,
        "rows": comparison_records(cmp),
        "summary": [{"benchmark": s.benchmark, "metric": s.metric, "tool": s.tool,
                     "rows": s.rows,
                     "geomean_gain": s.geomean,
                     "geomean_ci": {c: [t.ci_low, t.ci_high] for c, t in s.test.items()},
                     "geomean_p": {c: t.p for c, t in s.test.items()},
                     "better": s.better, "worse": s.worse,
                     "not_significant": s.same} for s in cmp.summaries],
        "overall": {c: {"gain": t.gain, "ci_low": t.ci_low, "ci_high": t.ci_high, "p": t.p,
                        "base_launches": t.n_base, "cand_launches": t.n_cand,
                        "verdict": cmp.kinds.get(c)} for c, t in cmp.overall.items()},
        "test": "Welch t on the logs of the launch statistics (one value per launch), Holm "
                "across the table; gain CI: Welch 95%",
        "launch_statistic": cmp.statistic,
        "footnotes": cmp.footnotes,
        "warnings": cmp.warning_lines,
        "not_compared": cmp.not_compared,
        "units": "time in microseconds; MB/s = 10^6 bytes/s; gain > 1 means the candidate "
                 "is better",
        "statistic": statistic_legend(c for r in cmp.rows for c in r.cells.values()),
    })


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
                    line += ["", "" if t.gain is None else
                             fmt_gain_ci(t.gain, t.ci_low, t.ci_high)
                             + (f" ({fmt_p(t.p)} n={t.n_base}+{t.n_cand})" if t.tested
                                else " (cannot tell)")]
                line.append("")
                body.append(line)
                summary_idx.append(len(body) - 1)
    return hdr, body, summary_idx


def launch_legend(statistic: str = "median") -> str:
    """What a value ± CI% means, for captions."""
    return (f"value = geometric mean of the launch {statistic}s (each launch, one mpirun, "
            "weighted equally) ± 95% CI from the spread between launches (± ? = one launch)")


def _header_lines(cmp: Comparison) -> list[str]:
    runs = ", ".join(f"{g}: {cmp.run_counts.get(g, 0)} launch(es)" for g in cmp.groups)
    # the launch legend[; imported rows: ...] or, all imported, 'value = the tool's own ...'
    shown = statistic_legend((c for r in cmp.rows for c in r.cells.values()),
                             median=launch_legend(cmp.statistic))
    rel = ([f"--relative: candidate cells are % of the baseline (candidate value / "
            f"{cmp.baseline}'s x 100) [95% CI from the gain's]; above 100% a time is slower, "
            "a rate faster; the baseline's own value in parentheses"] if cmp.relative else [])
    return rel + [
        f"{_unit_header(cmp.rows)}; baseline {cmp.baseline}; {runs}",
        f"{shown}; gain > 1 = candidate better (time: base/cand, rates: cand/base) [95% CI]; "
        "p = Welch t on the logs of the launch statistics, Holm-corrected across the table; "
        f"~ = not significant at alpha {cmp.alpha:g}; n = launches per side; cannot tell = "
        f"fewer than {launch_stats.MIN_LAUNCHES} launches on a side; geomean rows aggregate "
        "per launch first",
    ]


def comparison_table(cmp: Comparison, heading_level: int = 3) -> Table:
    """The comparison as a Table: one row per cell (geomean rows bold), the legend as its
    caption, footnotes, and the verdict as its footer."""
    hdr, body, summary_idx = _table_model(cmp)
    return Table(title=cmp.title or f"comparison vs {cmp.baseline}", header=hdr, rows=body,
                 caption="\n".join(_header_lines(cmp)), notes=list(cmp.footnotes),
                 bold_rows=set(summary_idx), kind="comparison", left_cols=2,
                 footer=[("verdict", cmp.verdict)], md_heading_level=heading_level,
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


# ---------------------------------------------------------------------------------------
# One result set

RESULT_COLUMNS = ["benchmark", "size/cell", "np", "n", "median", "±CI", "within", "min", "p95",
                  "MB/s",
                  "busbw MB/s", "first", "launches", "stop"]


def result_cells(store: Store, run_ids: list[str]) -> list[Cell]:
    return list(c for by in load_cells(store, {"_": list(run_ids)}).values() for c in by.values())


def _launch_spread(c: Cell) -> str:
    k = len(c.runs_used)
    if k >= 2 and c.launch_medians:
        return f"{k} ({fmt_num(min(c.launch_medians))}–{fmt_num(max(c.launch_medians))})"
    return str(k)


def results_records(cells: list[Cell]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        out.append(clean_json({
            "benchmark": c.benchmark, "size": c.size, "np": c.np, "params": c.params,
            "metric": c.metric, "unit": c.unit, "better": c.better, "status": c.status,
            "reason": c.reason, "n": c.n,
            "statistic": c.shown_statistic,
            "value": c.value, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "ci": "95% CI of the value from the spread between launches",
            "launch_values": c.launch_values, "within_launch_ci_pct": c.within_ci_pct,
            "sd_log_between_launches": c.estimate.sd_log if c.estimate else None,
            "pooled_median": c.median, "min": c.min,
            "p5": c.p5, "p95": c.p95, "p99": c.p99, "max": c.max, "mean": c.mean, "std": c.std,
            "bandwidth_mbps": c.bandwidth_mbps, "busbw_mbps": c.busbw_mbps, "first": c.first,
            "launches": len(c.runs_used), "launch_medians": c.launch_medians,
            "stop_reasons": dict(c.stop_reasons), "excluded_runs": c.runs_excluded,
            "no_samples": c.no_samples,
        }))
    return out


def _results_table(cells: list[Cell]) -> tuple[list[str], list[list[str]], list[str]]:
    notes: list[str] = []
    body = []
    prev = None
    # an application reports several metrics (its figure of merit and wall_time): name each
    # as the comparison table does, or two rows per cell would differ only by magnitude
    multi_metric = len({(c.metric, c.unit) for c in cells}) > 1
    for c in cells:
        what = c.metric if c.metric == c.unit else f"{c.metric}, {c.unit}"
        name = f"{c.benchmark} [{what}]" if multi_metric else c.benchmark
        if c.status != "ok":
            val = [c.status + (f": {c.reason}" if c.reason else "")] + [""] * 10
            n = ""
        else:
            pct = c.ci_pct
            stop = ", ".join(f"{k}×{v}" if v > 1 else k for k, v in c.stop_reasons.items())
            wpct = c.within_ci_pct
            val = [fmt_num(c.value) + (f" ({c.shown_statistic})"
                                       if c.shown_statistic != "median" else ""),
                   "?" if pct is None else f"{pct:.1f}%",
                   "" if wpct is None else f"{wpct:.1f}%", fmt_num(c.min), fmt_num(c.p95),
                   fmt_num(c.bandwidth_mbps) if c.bandwidth_mbps is not None else "",
                   fmt_num(c.busbw_mbps) if c.busbw_mbps is not None else "",
                   fmt_num(c.first) if c.first is not None else "", _launch_spread(c), stop]
            n = "" if c.n is None else str(c.n)
        mark = ""
        if c.mixed:
            text = ("runs with different fingerprints are not pooled; shown: the most common "
                    "fingerprint")
            if text not in notes:
                notes.append(text)
            mark = f" [{notes.index(text) + 1}]"
        body.append([name if name != prev else "", cell_label(c) + mark,
                     "" if c.np is None else str(c.np), n] + val)
        prev = name
    return RESULT_COLUMNS, body, notes


def render_results(store: Store, run_ids: list[str], fmt: str = "terminal", *,
                   title: str | None = None, cells: list[Cell] | None = None) -> str:
    """Per-stack table of one result set (runs pooled per cell as in compare_groups).
    `cells` (already pooled, e.g. filtered) skips reading the store."""
    cells = cells if cells is not None else result_cells(store, run_ids)
    title = title or "results"
    if fmt == "json":
        return json.dumps({"title": title, "runs": len(run_ids),
                           "rows": results_records(cells)}, indent=2)
    if fmt == "csv":
        return render_mod.csv_text(results_records(cells))
    hdr, body, notes = _results_table(cells)
    units = {(c.metric, c.unit) for c in cells}
    unit_line = ("times in microseconds" if units <= {("time", "us")} else
                 "units: " + ", ".join(f"{m} ({u})" for m, u in sorted(units)))
    imported = imported_clause(cells)
    caption = (f"{unit_line}: median = geometric mean of the launch medians over "
               f"{len(run_ids)} launch(es), each weighted equally; ±CI = its 95% CI half-width "
               "from the spread between launches (? = one launch: no spread to see); within "
               "= a launch's own 95% CI of its median (median over launches), precision inside "
               "a launch and never the uncertainty of a comparison; n, min, p95 over all "
               "samples"
               + (f" ({imported})" if imported else "")
               + "; MB/s = 10^6 bytes/s from that value; "
               "busbw uses the usual collective factors; first = first-call time (median "
               "over launches); launches = count (min–max of per-launch medians)")
    t = Table(title=title, header=hdr, rows=body, caption=caption, notes=notes,
              kind="results", left_cols=2)
    if fmt in ("terminal", "markdown"):
        return render_mod.render(t, fmt)
    raise UsageError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


# ---------------------------------------------------------------------------------------
# Selecting result sets

def _parse_when(v: str | float | None, flag: str) -> float | None:
    if v is None or isinstance(v, int | float):
        return v
    s = str(v).strip()
    try:
        return float(s)
    except ValueError:
        pass
    from datetime import datetime
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as exc:
        raise UsageError(f"{flag} {s!r}: expected an ISO date/time (2026-05-01 or "
                         "2026-05-01T12:00) or a Unix timestamp") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _match_variants(store: Store, rows: list, wanted: list[str]) -> list:
    """Keep runs whose variant is one of `wanted`: the exact name, its set name (the scale
    axes of a sweep removed, see split_variant), or the base name of a sweep ('ompi' selects
    ompi[np=1], ompi[np=2], ...). A name that selects nothing is an error, not an empty
    table."""
    def hits(variant: str, w: str) -> bool:
        return variant == w or split_variant(variant)[0] == w or variant.startswith(w + "[")

    for w in wanted:
        if not any(hits(r["variant"], w) for r in rows):
            known = variants_with_results(store)
            shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
            raise UsageError(f"--variant {w!r}: no results for this variant in the selection "
                             f"(variants with results: {shown or 'none'})")
    return [r for r in rows if any(hits(r["variant"], w) for w in wanted)]


def select_groups(store: Store, *, variants: Iterable[str] | None = None,
                  campaign: str | int | Iterable[str | int] | None = None,
                  run_ids: Iterable[str] | None = None, labels: Iterable[str] | None = None,
                  since: str | float | None = None, until: str | float | None = None,
                  by: str | None = None) -> dict[str, list[str]]:
    """Pick runs and group them into result sets (display name -> run ids, insertion order).

    Groups are by variant, or by label when `labels` is given (or by="label"), or by
    variant and tool (by="tool": 'ompi/core', 'ompi/imb', 'ompi/osu'). With several
    campaigns and variant names that occur in more than one, names become 'campaign/variant'
    (comparing one variant across campaigns, e.g. before/after a system update), unless
    by="variant" is given explicitly, which merges a variant's runs across campaigns (the
    fingerprint rule still keeps different setups apart).
    Expansions of a campaign sweep over np, nodes or ppn ('ompi[np=2]') belong to one set
    named without those axes ('ompi'); their cells differ by np or by the nodes/ppn
    parameter, so grids and scaling see them side by side (see data.split_variant).
    A variant selector matches the exact name, that set name, or a sweep's base name.
    since/until filter on the run's start time (ISO date/time, UTC if no zone, or epoch).
    Runs without results (pending/running) are skipped.
    """
    camp_ids: list[int] | None = None
    rids: list[str] | None = None
    if campaign is not None:
        camps = [campaign] if isinstance(campaign, str | int) else list(campaign)
        ids = []
        for name in camps:
            row = store.campaign(name)
            if row is None:
                known = ", ".join(r["name"] for r in store.campaigns()) or "none"
                raise UsageError(f"--campaign {name!r}: no such campaign in {store.path} "
                                 f"(known: {known})")
            # every campaign of that name (ad-hoc runs may share a name across files)
            if isinstance(name, str) and not name.isdigit():
                ids += [r["id"] for r in store.campaigns() if r["name"] == name]
            else:
                ids.append(row["id"])
        camp_ids = ids
    if run_ids is not None:
        rids = list(run_ids)
        unknown = [r for r in rids if store.run(r) is None]
        if unknown:
            raise UsageError(f"--run {unknown[0]!r}: no such run in {store.path}")
    vs = list(variants) if variants is not None else None
    label_list = list(labels) if labels is not None else None
    t0, t1 = _parse_when(since, "--since"), _parse_when(until, "--until")
    rows = runs_with_results(store, campaign_ids=camp_ids, run_ids=rids, labels=label_list,
                             since=t0, until=t1)
    if vs is not None:
        rows = _match_variants(store, rows, vs)
    split_campaigns = by is None
    by = by or ("label" if label_list is not None else "variant")
    set_name = {r["variant"]: split_variant(r["variant"])[0] for r in rows}
    camps_of_variant: dict[str, set[int]] = {}
    for r in rows:
        camps_of_variant.setdefault(set_name[r["variant"]], set()).add(r["campaign_id"])
    groups: dict[str, list[str]] = {}
    order_hint = label_list if by == "label" else (
        [split_variant(v)[0] for v in vs] if vs else None)
    for r in rows:
        v = set_name[r["variant"]]
        if by == "label":
            name = r["label"] or v
        elif by == "tool":
            # one variant measured by the core, IMB and OSU: one set per tool
            name = f"{v}/{r['tool']}"
        elif split_campaigns and len(camps_of_variant[v]) > 1:
            name = f"{r['campaign']}/{v}"
        else:
            name = v
        groups.setdefault(name, []).append(r["id"])
    if order_hint:
        ranked = {n: i for i, n in enumerate(order_hint)}
        groups = dict(sorted(groups.items(), key=lambda kv: ranked.get(kv[0], len(ranked))))
    return groups


__all__ = [
    "Comparison", "Row", "Delta", "Summary", "compare_groups", "render", "render_results",
    "render_terminal", "render_markdown", "render_csv", "to_json_obj", "comparison_records",
    "select_groups", "result_cells", "results_records", "orient_gain", "md_escape", "md_table",
    "FORMATS", "fmt_size", "bench_sort_key", "params_key", "pool",
]
