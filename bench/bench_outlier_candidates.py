#!/usr/bin/env python3
"""Candidate rules for a size noisier on the smaller side only, at 3-5 vs 7 launches:
false positives at the noisy size and the alike sizes' power, per rule, on the same draws.
Stats level (stats.launch.compare_cells), no MPI. Prints numbers, asserts nothing.

    nice -n 19 .venv/bin/python bench/bench_outlier_candidates.py --design 4v7 --seed 21 \\
        --reps 1000 [--rule mix:0.1:0.6 ...]

Backs docs/statistics.md "Stop 37: where the excess comes from, and family (c), not taken":
its table of mix 10-60% / 5-50% / small 35% / small 50% (per design 3v7 / 4v7 / 5v7 and
seed 21 / 22) and the Cochran-Cox-at-3-df paragraph after it; and "Stop 42" there (owncc
and cap3 at 10-60%, seeds 21-24).

Draws (per rule the same ones): 10 sizes, two sides of NA and NB launches, each launch's
value exp(launch effect + size noise), the launch effect N(0, 0.03) shared by a launch's
sizes, the size noise N(0, 0.05) a size; the last size's noise on the smaller side (side
A) 1x / 2x / 3x. Per noise factor --reps A/A benchmarks; at 1x also --reps with a real 10%
(side B x1.1). A size is significant at p <= 0.05 (two-sided 'higher' test).

Printed per rule: A/A false positives at the noisy size at 2x and 3x, the worst other
size (any factor), the alike sizes' mean false positives, and the alike sizes' raw power
for a real 10% (mean over the 10 sizes). Monte Carlo error of a 5% rate: sqrt(.0475/reps).

Rules (--rule, repeatable; 'today' always first: since stop 42 stats.launch.SMALLER_MIX,
cap3:0.1:0.6's rule in the module), each on the rule before stop 42 (SMALLER_MIX off) and
swapped in for stats.launch.gated_spreads inside a block where the launches are
unbalanced and the comparison has FEW_CELLS sizes or more; the larger side and every
other case as that rule:
  before       the rule before stop 42 (no mix): stop 37's 'today' column.
  mix:LO:HI    family (c): each size of the smaller side whose own part is above today's
               gets w own + (1 - w) today's, w = 1 at its own F test's p (that side's sums
               against its other sizes') <= LO, 0 at >= HI, linear between; on the
               Welch-Satterthwaite df of that sum (bench_inference.py --outlier-rule mix).
  small:LEVEL  stop 36's hard check: the sizes the smaller side's own F test flags at
               LEVEL get max(own part, today's), the own part on its own df. (Only those:
               bench_inference.py's CANDIDATE_RULES add today's flagged sizes.)
  cc:LO:HI     mix:LO:HI with WELCH_MIN_DF 4 for the block: every component below 4 df
               goes Cochran-Cox (the 4-launch side's launch part too).
  owncc:LO:HI  mix:LO:HI with the mixed part's df a hair (1e-6) lower: Cochran-Cox only
               where that df is exactly its own 3 (w = 1 at 4 launches).
  cap3:LO:HI   owncc:LO:HI, and where w = 1 the own part alone on at most 3 - 1e-6 df
               (Cochran-Cox, its t at ~3 df: at 5 launches its own 4 df read as 3; the
               same as owncc at 3-4 launches; stop 42).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_inference import _smaller_side  # noqa: E402
from mpibench.stats import launch as L  # noqa: E402
from mpibench.stats import moderate as Mo  # noqa: E402

SIZES = 10
SD_LAUNCH, SD_SIZE, REAL = 0.03, 0.05, math.log(1.1)
TABLE_RULES = ("mix:0.1:0.6", "mix:0.05:0.5", "small:0.35", "small:0.5")


def _thin_flags(rs, level: float) -> tuple[dict, set]:
    """(_cell_sums of one side, the sizes stats.moderate.outlying flags at level)."""
    sums = L._cell_sums(rs)
    keys, s = list(sums), len(sums)
    flags = Mo.outlying([sums[k][0] for k in keys], [sums[k][1] * (s - 1) / s for k in keys],
                        level)
    return sums, {k for k, f in zip(keys, flags, strict=True) if f}


def _mixed_part(w: float, mine: float, cur, d: float, sp, eps: float):
    a, b = w * mine, (1.0 - w) * cur.v
    df = (a + b) ** 2 / (a * a / min(d, sp.df_cell) + (b * b / cur.df if b > 0 else 0.0))
    if eps < 0 and w >= 1.0:        # cap3: an own part alone on at most just under 3 df
        return L.CellPart(a, min(df, L.WELCH_MIN_DF + eps))
    return L.CellPart(a + b, df - abs(eps))


def _mix_parts(residuals, j, sp, parts, pooled, lo: float, hi: float, eps: float) -> None:
    # stats.launch._side_ps leaves out a size whose p is not finite: a NaN p gave w = 0
    # here, so the same sizes get a part
    sums, ps = L._side_ps(residuals[j])
    for key, p in ps.items():
        w = min(1.0, max(0.0, (hi - p) / (hi - lo)))
        ss, d = sums[key]
        mine, cur = max(0.0, L._own_part(ss / d, sp)), parts.get(key, pooled)
        if w > 0.0 and mine > cur.v:
            parts[key] = _mixed_part(w, mine, cur, d, sp, eps)


def _small_parts(residuals, j, sp, parts, pooled, level: float) -> None:
    sums, flagged = _thin_flags(residuals[j], level)
    for key in flagged:
        ss, d = sums[key]
        mine = max(0.0, L._own_part(ss / d, sp))
        if mine > parts.get(key, pooled).v:
            parts[key] = L.CellPart(mine, min(d, sp.df_cell))


@contextlib.contextmanager
def _welch_min_df(df: int):
    keep = L.WELCH_MIN_DF
    L.WELCH_MIN_DF = df
    L._crit.cache_clear()
    try:
        yield
    finally:
        L.WELCH_MIN_DF = keep
        L._crit.cache_clear()


@contextlib.contextmanager
def _cc(lo: float, hi: float):
    with _welch_min_df(4), _smaller_side(functools.partial(_mix_parts, lo=lo, hi=hi, eps=0.0)):
        yield


@contextlib.contextmanager
def _on_before(factory):
    """factory's rule on the rule before stop 42 (stats.launch.SMALLER_MIX off): the
    candidates were measured against it; 'today' is stop 42's mix (owncc + cap3's)."""
    keep = L.SMALLER_MIX
    L.SMALLER_MIX = ()
    try:
        with factory():
            yield
    finally:
        L.SMALLER_MIX = keep


def make_rule(spec: str):
    """A --rule spec -> a context manager factory (None for 'today'), every other rule on
    the rule before stop 42 (_on_before); ValueError naming the spec and the grammar
    otherwise."""
    if spec == "today":
        return None
    if spec == "before":
        return functools.partial(_on_before, contextlib.nullcontext)
    return functools.partial(_on_before, _rule_of(spec))


def _rule_of(spec: str):
    m = re.fullmatch(r"(mix|cc|owncc|cap3):([0-9.]+):([0-9.]+)|small:([0-9.]+)", spec)
    try:
        nums = [float(x) for x in m.groups()[1:] if x is not None] if m else []
    except ValueError:
        nums = []
    if not nums or not all(0.0 <= x <= 1.0 for x in nums) or (len(nums) == 2 and
                                                               nums[0] >= nums[1]):
        raise ValueError(f"got {spec!r}, expected mix:LO:HI, cc:LO:HI, owncc:LO:HI, cap3:LO:HI "
                         "(0 <= LO < HI <= 1), small:LEVEL (0-1) or before")
    if m.group(1) == "cc":
        return functools.partial(_cc, *nums)
    if m.group(1):
        eps = {"owncc": 1e-6, "cap3": -1e-6}.get(m.group(1), 0.0)
        fill = functools.partial(_mix_parts, lo=nums[0], hi=nums[1], eps=eps)
    else:
        fill = functools.partial(_small_parts, level=nums[0])
    return functools.partial(_smaller_side, fill)


def _cells(rng, ns: tuple[int, int], sds: np.ndarray, effect: float) -> list:
    vals = [np.exp(rng.normal(0.0, SD_LAUNCH, (n, 1)) + rng.normal(0.0, 1.0, (n, SIZES)) * sds[j]
                   + j * effect) for j, n in enumerate(ns)]
    return [({f"a{r}": vals[0][r, k] for r in range(ns[0])},
             {f"b{r}": vals[1][r, k] for r in range(ns[1])}, "higher") for k in range(SIZES)]


def _significant(cells, mk) -> np.ndarray:
    with (mk() if mk else contextlib.nullcontext()):
        tests = L.compare_cells(cells)
    return np.array([t.p is not None and t.p <= 0.05 for t in tests])


def run(ns: tuple[int, int], reps: int, seed: int, rules: dict) -> dict:
    """{factor: {rule: {"fp": per-size counts, "pw": per-size counts}}}, the same draws for
    every rule (a generator per factor, seeded [seed, NA, factor])."""
    res = {}
    for factor in (1, 2, 3):
        rng = np.random.default_rng([seed, ns[0], factor])
        sds = np.full((2, SIZES), SD_SIZE)
        sds[0, -1] *= factor
        acc = {name: {"fp": np.zeros(SIZES), "pw": np.zeros(SIZES)} for name in rules}
        for effect in ((0.0, REAL) if factor == 1 else (0.0,)):
            for _ in range(reps):
                cells = _cells(rng, ns, sds, effect)
                for name, mk in rules.items():
                    acc[name]["pw" if effect else "fp"] += _significant(cells, mk)
        res[factor] = acc
    return res


def report(ns: tuple[int, int], reps: int, seed: int, res: dict) -> list[str]:
    lines = [f"{ns[0]}v{ns[1]} seed {seed} reps {reps} (MC se of 5%: "
             f"{100 * math.sqrt(.0475 / reps):.1f}); A/A false positives %, power % for a "
             "real 10%"]
    for name in res[1]:
        r1, r2, r3 = res[1][name], res[2][name], res[3][name]
        worst = max(r2["fp"][:-1].max(), r3["fp"][:-1].max(), r1["fp"].max())
        lines.append(f"  {name:<16} FP noisy 2x {100 * r2['fp'][-1] / reps:4.1f} "
                     f"3x {100 * r3['fp'][-1] / reps:4.1f} | worst other "
                     f"{100 * worst / reps:4.1f} | alike FP mean "
                     f"{100 * r1['fp'].mean() / reps:4.1f} | power alike "
                     f"{100 * r1['pw'].mean() / reps:4.1f}")
    return lines


def _design(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)v(\d+)", text)
    if not m or not 2 <= int(m.group(1)) < int(m.group(2)):
        raise argparse.ArgumentTypeError(f"got {text!r}, expected NAvNB launches a side with "
                                         "2 <= NA < NB (the smaller side first), e.g. 4v7")
    return int(m.group(1)), int(m.group(2))


def _rule(text: str) -> str:
    try:
        make_rule(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench/bench_outlier_candidates.py",
                                 description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", type=_design, default=(4, 7), metavar="NAvNB",
                    help="launches on the smaller (noisy) side v the other, 10 sizes; the "
                    "docs' rows: 3v7, 4v7, 5v7 (default 4v7)")
    ap.add_argument("--seed", type=int, default=21, help="the docs' rows: 21, 22 (default 21)")
    ap.add_argument("--reps", type=int, default=1000,
                    help="A/A benchmarks per noise factor and real-10%% benchmarks (the docs use "
                    "1000; 2-3 min a row for five rules; default 1000)")
    ap.add_argument("--rule", action="append", type=_rule, metavar="SPEC",
                    help="a rule beside today's (repeatable; grammar below); default the "
                    f"docs' table: {' '.join(TABLE_RULES)}")
    ap.add_argument("--quick", action="store_true",
                    help="what make bench runs: --reps 20, one rule (mix:0.1:0.6)")
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error(f"--reps: got {args.reps}, expected 1 or more")
    if args.quick:
        args.reps, args.rule = min(args.reps, 20), args.rule or ["mix:0.1:0.6"]
    args.rule = args.rule or list(TABLE_RULES)
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    rules = {"today": None, **{spec: make_rule(spec) for spec in args.rule}}
    start = time.monotonic()
    res = run(args.design, args.reps, args.seed, rules)
    print("\n".join(report(args.design, args.reps, args.seed, res)))
    print(f"{time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
