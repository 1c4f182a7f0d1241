"""The regression gate behind `mpibench check`: new launches against a baseline, one
decision for a CI pipeline.

A cell (or a candidate's whole comparison) regresses when its gain is significantly below
1 / (1 + margin): a one-sided test of H0 "gain >= 1/(1+m)" against "gain < 1/(1+m)" on the
same launch-level model compare uses (stats.launch: a benchmark's sizes pool their spread,
Welch df or Cochran-Cox critical values), Holm over every cell and overall test of the
check. Margin 0 tests "worse at all"; a margin of 5% lets anything within 5% pass and flags
only what is significantly more than 5% slower. Cells that cannot be tested (fewer than two
launches a side) are counted and named, never passed silently as "fine".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpibench import stats
from mpibench.stats import launch as launch_stats


@dataclass
class Finding:
    candidate: str
    benchmark: str
    cell: str                  # size or application cell label; "overall" for the aggregate
    gain: float | None
    ci_low: float | None
    ci_high: float | None
    p: float | None            # one-sided p of "worse than 1/(1+margin)"
    p_holm: float | None = None
    regression: bool = False
    launches: tuple[int, int] = (0, 0)
    margin: float | None = None    # this test's margin, where it is not the check's own
    pairing: str = "none"          # "round": the launches were tested as pairs by round

    def to_dict(self) -> dict[str, Any]:
        return {**({"margin": self.margin} if self.margin is not None else {}),
                "candidate": self.candidate, "benchmark": self.benchmark, "cell": self.cell,
                "gain": self.gain, "gain_ci_low": self.ci_low, "gain_ci_high": self.ci_high,
                "p": self.p, "p_holm": self.p_holm, "regression": self.regression,
                "base_launches": self.launches[0], "cand_launches": self.launches[1],
                "pairing": self.pairing}


@dataclass
class GateResult:
    baseline: str
    candidates: list[str]
    margin: float
    alpha: float
    findings: list[Finding] = field(default_factory=list)
    untested: list[tuple[str, str, str, str]] = field(default_factory=list)  # cand, bench, cell, why
    notes: list[str] = field(default_factory=list)     # what the test cannot conclude
    warnings: list[str] = field(default_factory=list)  # what the reader must know (WARNING:)
    reference: dict[str, Any] | None = None   # check --reference: the file and its cells
    unmatched: int = 0        # new cells the reference has no value for (not tested)

    @property
    def regressions(self) -> list[Finding]:
        return [f for f in self.findings if f.regression]

    @property
    def status(self) -> str:
        if self.regressions:
            return "regression"
        if not self.findings:
            return "cannot tell"
        return "ok"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "baseline": self.baseline,
                "candidates": self.candidates, "margin": self.margin, "alpha": self.alpha,
                "test": "see reference.test" if self.reference is not None else "one-sided t on log launch statistics against gain 1/(1+margin) "
                        "(compare's launch-level model), Holm over every cell and overall "
                        "test of the check",
                "regressions": [f.to_dict() for f in self.regressions],
                "tested": len(self.findings),
                "untested": [{"candidate": c, "benchmark": b, "cell": x, "why": w}
                             for c, b, x, w in self.untested],
                "findings": [f.to_dict() for f in self.findings],
                **({"reference": {**self.reference, "unmatched_new_cells": self.unmatched,
                                  "test": "one-sided t of the new launches' log mean "
                                          "against log(value) and the margin; the "
                                          "reference's sd_log/launches as a second "
                                          "variance component where given"}}
                   if self.reference is not None else {}),
                "notes": list(self.notes), "warnings": list(self.warnings)}


def regression_p(t: launch_stats.LaunchTest, margin: float) -> float | None:
    """One-sided p that the true gain is below 1/(1+margin) (log-symmetric margin)."""
    if not t.tested or t.diff_log is None or t.se_log is None:
        return None
    bound = -math.log1p(margin)
    if t.se_log == 0:
        return 0.0 if t.diff_log < bound else 1.0
    # small when diff_log lies far below the bound: P(T >= (bound - diff) / se)
    return launch_stats.one_sided_p((bound - t.diff_log) / t.se_log, t.components)


def judge(cmp, margin: float = 0.0) -> GateResult:
    """The gate over a compare_groups Comparison (every candidate against its baseline)."""
    res = GateResult(cmp.baseline, list(cmp.candidates), margin, cmp.alpha)
    for r in cmp.rows:
        for cand, d in r.deltas.items():
            if d.test is None or not d.tested:
                if d.gain is not None or d.test is not None:
                    why = d.test.reason if d.test is not None else "not comparable"
                    res.untested.append((cand, r.benchmark, r.label, why))
                continue
            t = d.test
            res.findings.append(Finding(cand, r.benchmark, r.label, t.gain, *d.test.ci_at(
                1 - 2 * cmp.alpha), regression_p(t, margin), launches=(t.n_base, t.n_cand),
                pairing=t.pairing))
    for cand, t in cmp.overall.items():
        if t.tested:
            res.findings.append(Finding(cand, "(all)", "overall", t.gain,
                                        *t.ci_at(1 - 2 * cmp.alpha), regression_p(t, margin),
                                        launches=(t.n_base, t.n_cand), pairing=t.pairing))
    adj = stats.holm([f.p for f in res.findings])
    for f, pa in zip(res.findings, adj, strict=True):
        f.p_holm = None if np.isnan(pa) else float(pa)
        f.regression = f.p_holm is not None and f.p_holm <= cmp.alpha
    return res


def summary_lines(res: GateResult, limit: int = 12) -> list[str]:
    """One screen: the decision, then the worst regressions, then what could not be tested."""
    m = f"±{100 * res.margin:g}%" if res.margin else "0%"
    head = {"regression": "REGRESSION", "ok": "OK", "cannot tell": "CANNOT TELL"}[res.status]
    lines = [f"{head}: {', '.join(res.candidates)} vs {res.baseline} — "
             f"{len(res.regressions)} of {len(res.findings)} tests significantly worse than "
             f"the margin (gain < 1/(1+{m.lstrip('±')}), one-sided, Holm, alpha "
             f"{res.alpha:g})"]
    worst = sorted(res.regressions, key=lambda f: (f.gain if f.gain is not None else 1.0))
    w = max([16, *(len(f.candidate) for f in worst[:limit])])
    for f in worst[:limit]:
        lines.append(f"  {f.candidate:<{w}} {f.benchmark:<14} {f.cell:<10} gain "
                     f"{f.gain:.3f}x [{f.ci_low:.3f}, {f.ci_high:.3f}] p={f.p_holm:.3g} "
                     f"{_launches(res, f)}")
    if len(worst) > limit:
        lines.append(f"  ... and {len(worst) - limit} more (--json lists them all)")
    overall = [f for f in res.findings if f.cell == "overall"]
    for f in overall:
        if not f.regression:
            lines.append(f"  {f.candidate}: overall gain {f.gain:.3f}x [{f.ci_low:.3f}, "
                         f"{f.ci_high:.3f}], {_launches(res, f)}: no significant "
                         "regression beyond the margin")
    if res.untested:
        lines.append(f"  {len(res.untested)} cell(s) not tested (e.g. {res.untested[0][1]} "
                     f"{res.untested[0][2]}: {res.untested[0][3]})")
    if res.unmatched:
        lines.append(f"  {res.unmatched} new cell(s) have no reference value (not tested)")
    for w in res.warnings:
        lines.append(f"  WARNING: {w}")
    for note in res.notes:
        lines.append(f"  note: {note}")
    lines.append("  (gain > 1 = candidate better; CI: the one-sided test's 1 - 2 alpha "
                 "interval, unadjusted)")
    return lines


def _launches(res: GateResult, f: Finding) -> str:
    if res.reference is None:
        return f"n={f.launches[0]}+{f.launches[1]}"
    ref = f"ref {f.launches[0]}" if f.launches[0] else "ref exact"
    return f"n={f.launches[1]} ({ref})"


__all__ = ["Finding", "GateResult", "judge", "regression_p", "summary_lines"]
