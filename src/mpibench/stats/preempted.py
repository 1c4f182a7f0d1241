"""How a launch the core cut short with --exclude-preempted enters the launch-level test.

With --exclude-preempted the core leaves samples during which a rank was descheduled out
of a size's statistic; a size that cannot collect its clean samples within
--preempted-max-time stops `preempted` on the few it has, and one with none is `skipped`.
A launch statistic resting on 1-4 clean samples carries a within-launch variance
(about pi/2 x sigma_w^2 / n for a median) the benchmark's other launches do not: pooling
that cell's spread with its clean sizes (stats.launch.compare_cells' hierarchical model)
understates it. Measured (bench/bench_inference.py --only-few-clean --reps 60 --seed 31,
docs/statistics.md "How a cut-short launch enters the test"): A/A 6.3-8.0% per cell at
the few-clean sizes with the launches pooled at full weight (5 and 8 rounds), 3.3-5.4%
tested alone.

The rule: a cell with a FEW-CLEAN launch (stopped `preempted` with fewer than
FEW_CLEAN clean samples, the core's floor MB_FLOOR_SAMPLES: fewer than any unflagged
launch rests on) or a preempted skip (cut_short) is tested on its own launches (its own
spread, which holds their within-launch noise; paired by round as compare_cells pairs),
and the benchmark's other cells are pooled without it. Every launch is kept: dropping the few-clean launches
(censoring) measured conservative but lost half the power and the rounds' pairing
(docs/statistics.md "Preempted samples"). Skipped launches stay missing, counted per
variant by the report and the time-to-decision bench.

One place each: which row is cut short is this module's (cut_short); the blocking is
stats.launch.compare_cells' (its `cut`: per cell the launch ids cut short), so every
caller (the report, repeats = "decide"'s looks through stats.sequential, the
time-to-decision bench) passes the launches and none applies the rule itself; a look
that sees fewer rounds passes fewer ids (stats.sequential filters them as it filters the
launches). Planning pools such a cell alone too (stats.budget.alone_rows, from
cut_launches: the cells and their cut-short launches, grouped here).
Pure functions: no store.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

# core/mb.h MB_FLOOR_SAMPLES: the fewest samples a size stops on without the flag
FEW_CLEAN = 5
PREEMPTED = "preempted"


def stopped(row: Mapping[str, Any]) -> bool:
    """Whether a stored result row stopped `preempted` with a value: status ok, the core's
    --preempted-max-time ended with fewer clean samples than the size needed (it may still
    hold FEW_CLEAN or more)."""
    return row.get("status", "ok") == "ok" and row.get("stop_reason") == PREEMPTED


def few_clean(row: Mapping[str, Any]) -> bool:
    """Whether a stored result row is a few-clean launch: stopped `preempted` (stopped())
    with fewer than FEW_CLEAN samples in its statistic."""
    n = row.get("n")
    return stopped(row) and isinstance(n, int | float) and n < FEW_CLEAN


def skipped(row: Mapping[str, Any]) -> bool:
    """Whether a stored result row is a preempted skip: no clean sample within the cap
    (the core writes status `skipped` with stop_reason `preempted`). The core's other
    skips (a size over --mem-limit, an allocation failure, too few ranks, every sample
    started late) write stop_reason null: they are not tied to preemption."""
    return row.get("status") == "skipped" and row.get("stop_reason") == PREEMPTED


def cut_short(row: Mapping[str, Any]) -> bool:
    """Whether a row puts its cell alone: a few-clean launch, or a preempted skip (no
    value, missing for a reason tied to its variant; alone, a cell short of
    stats.launch.MIN_PAIRS pairs no longer unpairs its benchmark's other sizes)."""
    return few_clean(row) or skipped(row)


def cut_launches(rows: Iterable[Mapping[str, Any]]) -> dict[tuple, set]:
    """{cell key (benchmark, size): the run ids of its cut-short rows (cut_short)} of a
    store's result rows: the cells compare tests alone and the plan pools alone
    (stats.budget.alone_rows), grouped in this one place."""
    out: dict[tuple, set] = {}
    for r in rows:
        if cut_short(r):
            out.setdefault((r["benchmark"], r["size"]), set()).add(r.get("run_id"))
    return out


FIXED_COUNT = "iterations"   # core/output.c header options.mode of --iterations


def waited_at_cap(row: Mapping[str, Any]) -> bool:
    """Whether the core sampled this cell of a launch on to --preempted-max-time: stopped
    `preempted` on any number of clean samples, or a preempted skip (none), in a launch
    whose mode (the row's `mode`, the launch's fingerprint core_options.mode:
    store.report_queries.launch_cost_rows) is not fixed-count: with --iterations the core
    stops such a size once its count is done (core/driver.c fixed_stop), never waiting.
    Wider than cut_short (which puts a cell alone only below FEW_CLEAN samples)."""
    return (stopped(row) or skipped(row)) and row.get("mode") != FIXED_COUNT


class FewCleanBench(NamedTuple):
    """One simulated benchmark (few_clean_bench): compare_cells' cells, the round keys,
    per cell whether a launch of it was cut short (fewer than FEW_CLEAN clean samples, or
    none: skipped), and those launches ((cell index, launch id))."""
    cells: list
    rounds: dict
    thin: list
    few: set

    @property
    def cut(self) -> list[set]:
        """Per cell, its cut-short launch ids: compare_cells' cut."""
        return [{k for i, k in self.few if i == s} for s in range(len(self.cells))]


def few_clean_bench(rng: np.random.Generator, rounds: int, gain: float, prone: tuple,
                    sw: float, sizes: int = 10, big: tuple = (8, 9)) -> FewCleanBench:
    """A benchmark of `sizes` sizes, `rounds` interleaved rounds: per round a load in [0,
    1) that slows both variants alike (0.3 x load in log, plus a round effect sd 0.05),
    per launch an effect sd 0.05 each side shares over its sizes, a cell part sd 0.025;
    each launch's statistic the median of its clean samples (log sd `sw` within). At
    the `big` sizes a launch is cut short with probability prone[side] x load: 0-4
    clean samples (0: skipped, no value), else 20. The candidate is `gain` faster.
    A cell's clean samples are one draw of all its launches' (the same stream as one
    draw per launch: the values do not change), their medians taken at once."""
    load = rng.uniform(0, 1, rounds)
    off = rng.normal(0, 0.05, rounds) + 0.3 * load
    logs, counts, samples = [], [], []
    full = np.full(rounds, 20)
    for j in (0, 1):
        mu = off + rng.normal(0, 0.05, rounds) - j * math.log(gain)
        for s in range(sizes):
            if s in big:
                cut = rng.uniform(size=rounds) < prone[j] * load
                n = np.where(cut, rng.integers(0, FEW_CLEAN, rounds), 20)
            else:
                rng.integers(0, FEW_CLEAN, rounds)   # drawn, unused: the stream as above
                n = full
            logs.append(mu + rng.normal(0, 0.025, rounds))
            counts.append(n)
            samples.append(rng.normal(0, sw, int(n.sum()) if n is not full else 20 * rounds))
    n = np.array(counts)
    value = (np.array(logs) + _medians(np.concatenate(samples), n.ravel()).reshape(n.shape))
    sides: list[dict] = [{}, {}]
    few: set = set()
    names = [[f"{p}{r}" for r in range(rounds)] for p in "bc"]
    for (j, s), v, k in zip(((j, s) for j in (0, 1) for s in range(sizes)), value.tolist(),
                            n.tolist(), strict=True):
        sides[j][s] = {name: None if kr == 0 else math.exp(vr)
                       for name, vr, kr in zip(names[j], v, k, strict=True)}
        few.update((s, name) for name, kr in zip(names[j], k, strict=True) if kr < FEW_CLEAN)
    cells = [(sides[0][s], sides[1][s], "lower") for s in range(sizes)]
    cut_sizes = {i for i, _k in few}
    thin = [s in cut_sizes for s in range(sizes)]
    return FewCleanBench(cells, {f"{p}{r}": r for r in range(rounds) for p in "bc"}, thin, few)


def _medians(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The median of each run of x, run i n[i] long (0: no run, NaN), one sort per
    distinct length: np.median's values (the middle one, or the mean (a + b) / 2 of the
    two middle ones; x holds no NaN)."""
    start = np.cumsum(n) - n
    out = np.full(n.shape, np.nan)
    for k in np.unique(n[n > 0]).tolist():
        at = n == k
        runs = np.sort(x[start[at][:, None] + np.arange(k)], axis=1)
        h = k // 2
        out[at] = runs[:, h] if k % 2 else (runs[:, h - 1] + runs[:, h]) / 2
    return out


__all__ = ["FEW_CLEAN", "stopped", "few_clean", "skipped", "cut_short", "cut_launches",
           "waited_at_cap", "FewCleanBench", "few_clean_bench"]
