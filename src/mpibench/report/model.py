"""The comparison's model: per cell and candidate a Delta (the launch-level test and what
the table adds: Holm-adjusted p, significance, footnotes), a Row per cell, a Summary per
benchmark (geomean rows), the Comparison; and the formats of its figures (gains with CIs,
p values).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mpibench.report.data import (
    ResultCell,
    cell_label,
)
from mpibench.report.rules import CellKey
from mpibench.stats import launch as launch_stats


@dataclass
class Delta:
    """Candidate vs baseline in one row: the launch-level test (stats.launch.LaunchTest,
    None when the two cells may not be compared) and what the table adds to it."""
    test: launch_stats.LaunchTest | None = None
    p_adj: float | None = None      # Holm-adjusted over the whole comparison
    significant: bool = False
    needed: int | None = None       # launches per side to detect the observed gain
    # the gain's CI at the level Holm gave this row (1 - alpha * p / p_adj): it excludes 1
    # exactly when the row is significant, so the table's CI and decision never disagree
    ci_holm: tuple[float, float] | None = None
    p_equiv: float | None = None    # TOST p within the comparison's equivalence margin
    equivalent: bool = False
    notes: list[int] = field(default_factory=list)   # footnote numbers
    # a repeats = "decide" campaign's rule decided this row at an interim look: that look's
    # level (its p_adj is the look's adjusted p x alpha / level, its CI at 1 - alpha p /
    # p_adj as every row's, i.e. widened for sequential looks); None otherwise
    seq_level: float | None = None
    seq_ci_level: float | None = None  # then the confidence level of ci_holm

    # the test's figures, read through (None / False / 0 without a test)
    @property
    def gain(self) -> float | None:
        return self.test.gain if self.test else None

    @property
    def ci_low(self) -> float | None:      # 95% CI of the gain (the launch-level test, unadjusted)
        return self.test.ci_low if self.test else None

    @property
    def ci_high(self) -> float | None:
        return self.test.ci_high if self.test else None

    @property
    def p(self) -> float | None:          # raw p of the launch-level t on the log launch statistics
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
    """One cell of the comparison: its typed key (benchmark, size, np, params, metric, tool
    are read from it, never copied), each set's cell and each candidate's Delta."""
    key: CellKey
    unit: str
    better: str
    cells: dict[str, ResultCell]                 # set -> cell (missing sets absent)
    deltas: dict[str, Delta]               # candidate set -> delta
    notes: list[int] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return self.key.benchmark

    @property
    def size(self) -> int | None:
        return self.key.size

    @property
    def np(self) -> int | None:
        return self.key.np

    @property
    def metric(self) -> str:
        return self.key.metric

    @property
    def params(self) -> dict[str, Any]:
        return self.key.params

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
    # candidate -> Holm-adjusted p of the geomean row (same family as the cells) and the
    # CI at that row's Holm level
    p_adj: dict[str, float] = field(default_factory=dict)
    ci_holm: dict[str, tuple[float, float]] = field(default_factory=dict)
    # candidate -> (the look's level, the CI's confidence level) where ci_holm was widened
    # for sequential looks (every cell of the row decided early by a decide campaign)
    seq_level: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class Comparison:
    sets: list[str]
    baseline: str
    alpha: float
    rows: list[Row]
    summaries: list[Summary]
    footnotes: list[str]
    verdict: str
    verdicts: dict[str, str]
    run_counts: dict[str, int]
    title: str = ""
    # candidate -> the whole comparison aggregated per launch, and the verdict's outcome
    # (better, worse, mixed, same, cannot tell, nothing)
    overall: dict[str, launch_stats.LaunchTest] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    # candidate -> Holm-adjusted p of the overall test (same family as the cells)
    overall_p_adj: dict[str, float] = field(default_factory=dict)
    # candidate -> (the look's level, the CI's confidence level) where the verdict's overall
    # CI was widened for sequential looks
    overall_seq_level: dict[str, tuple[float, float]] = field(default_factory=dict)
    equivalence: float | None = None       # margin of --equivalence (0.02 = ±2%), or None
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
        return [g for g in self.sets if g != self.baseline]

    @property
    def warning_lines(self) -> list[str]:
        return [w for g in self.sets + self.not_compared for w in self.warnings.get(g, [])]

    def header_name(self, set_name: str) -> str:
        """The set's column name with its warning footnote marks, e.g. 'mpich [1]'."""
        marks = _marks(self.set_marks.get(set_name, ()))
        return f"{set_name} {marks}" if marks else set_name


class _Notes:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, text: str) -> int:
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1


def orient_gain(base: float | None, cand: float | None, better: str) -> float | None:
    if base is None or cand is None or base <= 0 or cand <= 0:
        return None
    return base / cand if better == "lower" else cand / base


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


def fmt_margin(margin: float | None) -> str:
    """An equivalence margin as a percentage: 0.02 -> '2%'."""
    return "" if margin is None else f"{100 * margin:g}%"


def fmt_p(p: float | None) -> str:
    if p is None:
        return ""
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def _marks(nums: Iterable[int]) -> str:
    nums = sorted(set(nums))
    return "".join(f"[{i}]" for i in nums)
