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

The rule here: a cell with a FEW-CLEAN launch (stopped `preempted` with fewer than
FEW_CLEAN clean samples, the core's floor MB_FLOOR_SAMPLES: fewer than any unflagged
launch rests on) or a preempted skip (cut_short) is tested on its own launches (its own
spread, which holds their within-launch noise; paired by round as compare_cells pairs),
and the benchmark's other cells are pooled without it. Every launch is kept: dropping the few-clean launches
(censoring) measured conservative but lost half the power and the rounds' pairing
(docs/statistics.md "Preempted samples"). Skipped launches stay missing, counted per
variant by the report and the time-to-decision bench. Pure functions: no store.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mpibench.stats import launch as launch_stats

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


def blocks(thin: Sequence[bool]) -> list[list[int]]:
    """The cells' indices in test blocks: the cells without a few-clean launch together
    (first), each cell with one alone."""
    rest = [i for i, t in enumerate(thin) if not t]
    return ([rest] if rest else []) + [[i] for i, t in enumerate(thin) if t]


def compare_blocks(cells: Sequence[tuple], thin: Sequence[bool], alpha: float = 0.05,
                   rounds: Mapping[Hashable, Hashable] | None = None,
                   sizes: Sequence | None = None) -> list[launch_stats.LaunchTest]:
    """compare_cells over a benchmark's cells with the few-clean cells (thin[i]) each
    tested alone; the tests in the cells' order."""
    if len(thin) != len(cells):
        raise ValueError(f"compare_blocks: {len(thin)} flags for {len(cells)} cells")
    out: list = [None] * len(cells)
    for idx in blocks(thin):
        sub = None if sizes is None else [sizes[i] for i in idx]
        tests = launch_stats.compare_cells([cells[i] for i in idx], alpha, rounds=rounds,
                                           sizes=sub)
        for i, t in zip(idx, tests, strict=True):
            out[i] = t
    return out


def alone_key(pool_key, thin: set) -> Any:
    """A stats.sequential pool_key that puts each key in `thin` in a pool of its own (the
    same blocks as compare_blocks)."""
    def key(k: Hashable) -> Hashable:
        return ("few clean", k) if k in thin else pool_key(k)
    return key


def alone_key_at(pool_key, cut: Mapping[Hashable, set], rounds: Mapping[Hashable, int]
                 ) -> Any:
    """Per look: n -> the alone_key of the look at n rounds, which puts alone the keys
    with a cut-short launch (cut: {key: launch ids}) among the rounds it sees (rounds:
    {launch id: round, 0-based}; a launch of round n or later, or of no known round, is
    not seen). So a launch cut short in a later round never rewrites an earlier look's
    test (stats.sequential.run_looks' pool_key_at; the TTD bench's looks)."""
    def at(n: int) -> Any:
        return alone_key(pool_key, {k for k, ids in cut.items()
                                    if any(rounds.get(i, n) < n for i in ids)})
    return at


class FewCleanBench(NamedTuple):
    """One simulated benchmark (few_clean_bench): compare_cells' cells, the round keys,
    per cell whether a launch of it was cut short (fewer than FEW_CLEAN clean samples, or
    none: skipped), and those launches ((cell index, launch id))."""
    cells: list
    rounds: dict
    thin: list
    few: set


def few_clean_bench(rng: np.random.Generator, rounds: int, gain: float, prone: tuple,
                    sw: float, sizes: int = 10, big: tuple = (8, 9)) -> FewCleanBench:
    """A benchmark of `sizes` sizes, `rounds` interleaved rounds: per round a load in [0,
    1) that slows both variants alike (0.3 x load in log, plus a round effect sd 0.05),
    per launch an effect sd 0.05 each side shares over its sizes, a cell part sd 0.025;
    each launch's statistic the median of its clean samples (log sd `sw` within). At
    the `big` sizes a launch is cut short with probability prone[side] x load: 0-4
    clean samples (0: skipped, no value), else 20. The candidate is `gain` faster."""
    load = rng.uniform(0, 1, rounds)
    off = rng.normal(0, 0.05, rounds) + 0.3 * load
    sides: list[dict] = [{}, {}]
    few: set = set()
    for j in (0, 1):
        mu = off + rng.normal(0, 0.05, rounds) - j * math.log(gain)
        for s in range(sizes):
            cut = (rng.uniform(size=rounds) < prone[j] * load) if s in big else \
                np.zeros(rounds, bool)
            n = np.where(cut, rng.integers(0, FEW_CLEAN, rounds), 20)
            part = rng.normal(0, 0.025, rounds)
            for r in range(rounds):
                v = None if n[r] == 0 else math.exp(
                    mu[r] + part[r] + float(np.median(rng.normal(0, sw, n[r]))))
                sides[j].setdefault(s, {})[f"{'bc'[j]}{r}"] = v
                if n[r] < FEW_CLEAN:
                    few.add((s, f"{'bc'[j]}{r}"))
    cells = [(sides[0][s], sides[1][s], "lower") for s in range(sizes)]
    thin = [any(i == s for i, _k in few) for s in range(sizes)]
    return FewCleanBench(cells, {f"{p}{r}": r for r in range(rounds) for p in "bc"}, thin, few)


__all__ = ["FEW_CLEAN", "stopped", "few_clean", "skipped", "cut_short", "blocks",
           "compare_blocks", "alone_key", "alone_key_at", "FewCleanBench",
           "few_clean_bench"]
