"""Synthetic launches for checking the inference end to end (tests, bench/bench_inference.py,
the sequential `repeats = "auto"` rule).

Model of one variant's launch L at message size s (logs):

    log sample = log mu_s + effect + u_L + v_L,s + e

u_L ~ N(0, sigma_L) is the launch's own offset, shared by every size it measures (one core
launch measures all sizes); v_L,s ~ N(0, size_part x sigma_L) (default half) the part of the launch effect specific
to a size; e ~ N(0, within) the sample noise inside the launch (n_samples per launch, drawn
from a range, so adaptive stopping's unequal counts are there too). Launches go through the
project's own Store -> load_cells -> compare_groups path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mpibench import stats
from mpibench.store import Store


def _draw(rng: np.random.Generator, sd: float, dist: str) -> float:
    """One launch-level offset of standard deviation sd: normal, heavy-tailed (Student t
    with 3 df, scaled to sd) or bimodal (a launch lands at -sd or +sd, plus a little)."""
    if sd == 0:
        return 0.0
    if dist == "t3":
        return float(rng.standard_t(3)) * sd / math.sqrt(3.0)
    if dist == "bimodal":
        return float(rng.choice((-1.0, 1.0))) * sd * 0.95 + float(rng.normal(0, sd * 0.3))
    return float(rng.normal(0.0, sd))


def launch_rows(rng: np.random.Generator, sizes: Sequence[int], *, sigma_l: float,
                within: float, effect: float = 0.0, n_samples: tuple[int, int] = (100, 500),
                benchmark: str | Sequence[str] = "PingPong", size_part: float = 0.5,
                shared: float = 1.0, dist: str = "normal", offset: float = 0.0,
                offset_upto: int | None = None) -> list[dict]:
    """The result rows of one launch (core-record shaped: summary + samples). size_part:
    the sd of the size-specific launch effect as a fraction of sigma_l; shared: the sd of
    the effect every size of the launch shares, as a fraction of sigma_l (0 = sizes do not
    share their launch effects); dist: normal, t3 (heavy tails) or bimodal launches.
    Several benchmarks: one launch measures them all (they share its offset). offset: a
    log offset added to every size (the round's effect, round_offsets); offset_upto: only
    to the sizes <= it (a round effect the small sizes share, the large ones not)."""
    u = _draw(rng, sigma_l * shared, dist) + offset
    rows = []
    for bench in ([benchmark] if isinstance(benchmark, str) else list(benchmark)):
        for s in sizes:
            mu = (math.log(0.3 + s / 5000.0) + effect + u
                  + _draw(rng, sigma_l * size_part, dist)
                  - (offset if offset_upto is not None and s > offset_upto else 0.0))
            n = int(rng.integers(n_samples[0], n_samples[1] + 1))
            x = np.exp(mu + rng.normal(0.0, within, n))
            rows.append({"benchmark": bench, "size": int(s), "np": 2, "samples": x,
                         **stats.summarize(x)})
    return rows


# round effects: what both launches of one round of an interleaved campaign share
ROUND_MODELS = ("none", "normal", "apart", "two-mode")


def round_offsets(rng: np.random.Generator, model: str, round_sd: float = 0.0,
                  mode_factor: float = 3.0, p_same: float = 5 / 6) -> tuple[float, float]:
    """(baseline, candidate) log offsets of one round. "normal": one N(0, round_sd) draw
    both launches share; "two-mode": the round is slow (x mode_factor) or fast with
    probability 1/2, and each launch is in the round's mode except that with probability
    1 - p_same the candidate's is in the other one (this VM: launches x3 apart, both
    stacks in the same mode in 5 of 6 rounds); "apart": each launch its own N(0, round_sd)
    draw (a phase that moves each launch of a round differently: the per-round difference
    varies with sd round_sd * sqrt(2)); "none": 0."""
    if model == "normal":
        e = float(rng.normal(0.0, round_sd))
        return e, e
    if model == "apart":
        return float(rng.normal(0.0, round_sd)), float(rng.normal(0.0, round_sd))
    if model == "two-mode":
        slow = bool(rng.random() < 0.5)
        other = bool(rng.random() >= p_same)
        f = math.log(mode_factor)
        return f * slow, f * (slow != other)
    return 0.0, 0.0


def build_store(path: str | Path, rng: np.random.Generator, *, launches: int | tuple[int, int],
                sigma_l: float, within: float = 0.02, effect: float = 0.0,
                sizes: Sequence[int] = tuple(2 ** k for k in range(20)),
                n_samples: tuple[int, int] = (100, 500), size_part: float = 0.5,
                shared: float = 1.0, dist: str = "normal",
                sigma_scale: tuple[float, float] = (1.0, 1.0),
                benchmarks: Sequence[str] = ("PingPong",), spec: dict | None = None,
                rounds: str = "none", round_sd: float = 0.0,
                failed: Sequence[tuple[str, int]] = (), round_upto: int | None = None
                ) -> tuple[Store, dict[str, list[str]]]:
    """Variants 'a' (baseline) and 'b' (times x exp(-effect): b better by effect in logs),
    launches interleaved a, b, a, b, ...; returns the store and {set: run ids}.
    sigma_scale multiplies sigma_l per side (a noisier side); see launch_rows for the
    rest. spec: the campaign's stored spec ({"order": "interleaved"} makes its rounds
    pairable, report.data.launch_round); rounds/round_sd: a round effect both launches of
    a round share (round_offsets); failed: (variant, repeat) launches stored as failed
    (no results: the other side's launch of that round loses its partner); round_upto:
    the round effect only at the sizes <= it (launch_rows' offset_upto)."""
    na, nb = (launches, launches) if isinstance(launches, int) else launches
    store = Store(path)
    cid = store.add_campaign("sim", spec) if spec is not None else store.add_campaign("sim")
    sets: dict[str, list[str]] = {"a": [], "b": []}
    fids = {v: store.add_fingerprint({"stack": "sim"}) for v in sets}
    seq = 0
    for i in range(max(na, nb)):
        offs = round_offsets(rng, rounds, round_sd)
        for v, n, eff, off in (("a", na, 0.0, offs[0]), ("b", nb, -effect, offs[1])):
            if i >= n:
                continue
            rid = f"{v}-{i}"
            store.create_run(rid, cid, v, grp="core", repeat=i, spec={}, seq=seq,
                             fingerprint_id=fids[v])
            if (v, i) in failed:
                store.set_run(rid, "failed", reason="simulated failure")
                seq += 1
                continue
            scale = sigma_scale[0] if v == "a" else sigma_scale[1]
            store.add_results(rid, launch_rows(rng, sizes, sigma_l=sigma_l * scale,
                                               within=within, effect=eff,
                                               n_samples=n_samples, size_part=size_part,
                                               shared=shared, dist=dist,
                                               benchmark=list(benchmarks), offset=off,
                                               offset_upto=round_upto))
            store.set_run(rid, "done", started=1.7e9 + seq, finished=1.7e9 + seq + 1,
                          elapsed=1.0)
            sets[v].append(rid)
            seq += 1
    return store, sets


def run_compare(path: str | Path, rng: np.random.Generator, compare,
                equivalence: float | None = None, **kw):
    """build_store then `compare(store, sets, "a")` (the caller passes the real
    report.judge.compare_groups: statistics sit below the report, tests/test_layers.py);
    the store is closed and removed. equivalence: passed on when given."""
    store, sets = build_store(path, rng, **kw)
    try:
        if equivalence is not None:
            return compare(store, sets, "a", equivalence=equivalence)
        return compare(store, sets, "a")
    finally:
        store.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(path) + suffix).unlink(missing_ok=True)


def tally(cmps, true_gain: float = 1.0) -> dict[str, float]:
    """Rates over comparisons: per-cell significant (Holm) and p <= alpha before Holm,
    family-wise (anything printed significant: a cell, a geomean row or the verdict),
    verdict better/worse, gain-CI coverage of the true gain (the plain 95% CI; also the
    printed Holm-level CI), cells equivalent (with a margin). cell_raw_se: the Monte Carlo
    standard error of cell_raw from the spread of the comparisons' own rates (a comparison's
    cells share its launches, so they are not independent draws: its sizes' false positives
    come together)."""
    cells = sig = cover = cover_holm = ci_n = fam = verdict = raw = equiv = 0
    per_cmp: list[float] = []
    for cmp in cmps:
        ds = [r.deltas["b"] for r in cmp.rows]
        cells += len(ds)
        s = sum(d.significant for d in ds)
        geo = sum(sm.p_adj.get("b", 1.0) <= cmp.alpha for sm in cmp.summaries)
        hits = sum(d.p is not None and d.p <= cmp.alpha for d in ds)
        raw += hits
        per_cmp.append(hits / max(1, len(ds)))
        sig += s
        kind = cmp.outcomes.get("b")
        fam += (s + geo) > 0 or kind in ("better", "worse", "mixed")
        verdict += kind in ("better", "worse", "mixed")
        equiv += sum(d.equivalent for d in ds)
        for d in ds:
            if d.ci_low is not None:
                ci_n += 1
                cover += d.ci_low <= true_gain <= d.ci_high
                lo, hi = d.ci_holm or (d.ci_low, d.ci_high)
                cover_holm += lo <= true_gain <= hi
    n = max(1, len(cmps))
    return {"comparisons": len(cmps), "cells": cells, "cell_rate": sig / max(1, cells),
            "cell_raw": raw / max(1, cells),
            "cell_raw_se": (float(np.std(per_cmp, ddof=1)) / math.sqrt(len(per_cmp))
                            if len(per_cmp) > 1 else float("nan")),
            "familywise": fam / n, "verdict": verdict / n,
            "coverage": cover / ci_n if ci_n else float("nan"),
            "coverage_holm": cover_holm / ci_n if ci_n else float("nan"),
            "equivalent": equiv / max(1, cells)}
