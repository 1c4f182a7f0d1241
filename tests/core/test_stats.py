"""The core's within-launch summary (core/stats.c) and the Python recomputation the core tests
check it against (tests/support/coreutil.within_launch_ci) are one definition: the same n_eff, tau,
CI and exactness on the edges where tau is an exact ratio (n / tau, 5 tau, 20 tau land on an
integer) and on samples with no spread. Found under load: Allgather at 2 B, n_eff 21 from the
core and 20 from Python."""

from __future__ import annotations

import json
import random

import pytest

from mpibench.process import run_command
from support.coreutil import CORE, STACKS, available, within_launch_ci

pytestmark = pytest.mark.system  # compiles core/stats.c with an MPI wrapper


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    stack = next((s for s in STACKS if available(s)), None)
    if stack is None:
        pytest.skip("no MPI stack installed")
    exe = tmp_path_factory.mktemp("probe") / "summary-probe"
    res = run_command([STACKS[stack]["mpicc"], "-O2", f"-I{CORE}", "-o", str(exe),
                       str(CORE.parent / "tests" / "data" / "core" / "summary_probe.c"),
                       str(CORE / "stats.c"), str(CORE / "stop.c"), "-lm"], timeout=120)
    assert res.ok, res.stderr

    def run(samples: list[float]) -> dict:
        out = run_command([str(exe)], input_text="\n".join(map(repr, samples)), timeout=60)
        assert out.ok, out.stderr
        return json.loads(out.stdout)
    return run


def _agree(c: dict, p: dict) -> None:
    assert c["n_eff"] == p["n_eff"], (c, p)
    assert c["tau"] == pytest.approx(p["tau"], rel=1e-9)
    assert c["ci_exact"] == p["exact"]
    assert c["stationarity"] == p["stationarity"], (c, p)
    assert (c["ci_low"], c["ci_high"]) == (p["low"], p["high"])
    assert (c["lag1"] is None) == (p["lag1"] != p["lag1"])


# tau = 6.5 exactly, n = 65: n_eff is 10 (the core's sum gave 6.4999..., numpy's 6.5000...2)
EXACT_RATIO = [0.75] * 8 + [2.0] * 11 + [0.75] * 2 + [2.0] * 5 + [0.75] * 11 + [2.0] * 8 + \
    [0.75] * 4 + [2.0] * 2 + [0.75] * 14
# the indicator's tau is exactly 1.0 at lag 4: the window closes at lag 5 (= 5 tau); the core
# went on past it and reported tau 1.044 and n_eff 43 where Python said 1.0 and 45
WINDOW_EDGE = [2.0, 0.75, 3.5, 3.5, 2.0, 3.5, 0.75, 3.5, 2.0, 2.0, 3.5, 3.5, 0.75, 3.5, 0.75,
               3.5, 0.75, 3.5, 2.0, 2.0, 3.5, 3.5, 0.75, 0.75, 0.75, 0.75, 0.75, 2.0, 0.75, 2.0,
               2.0, 2.0, 3.5, 3.5, 2.0, 0.75, 3.5, 2.0, 3.5, 2.0, 3.5, 3.5, 3.5, 0.75, 0.75]


@pytest.mark.parametrize("samples, n_eff, tau", [
    (EXACT_RATIO, 10, 6.5),
    (WINDOW_EDGE, 45, 1.0),
    # no spread: no correlation to measure (the mean's rounding made a lag-1 near 1 and n_eff
    # 1 in the core, n_eff n or 1 in Python depending on n)
    ([3.0] * 20, 20, 1.0),
    ([3.0] * 21, 21, 1.0),
    ([3.0] * 26, 26, 1.0),
    ([1.25] * 400, 400, 1.0),
])
def test_exact_edges_give_the_exact_answer_in_both(probe, samples, n_eff, tau):
    c, p = probe(samples), within_launch_ci(samples)
    assert (c["n_eff"], p["n_eff"]) == (n_eff, n_eff)
    assert c["tau"] == pytest.approx(tau, rel=1e-12) and p["tau"] == pytest.approx(tau, rel=1e-12)
    _agree(c, p)


def test_blocky_series_agree(probe):
    """Few distinct values in runs (a quantised clock, phases of a loaded machine): tau is a
    ratio of small integers, the edges above come up often. A fixed seed: the same cases every
    run (bench/bench_core_ci.py explores)."""
    rng = random.Random(22)
    for _ in range(150):
        n = rng.randint(20, 120)
        vals = [rng.choice([0.75, 1.0, 1.25, 2.0, 3.5]) for _ in range(3)]
        x: list[float] = []
        while len(x) < n:
            x += [rng.choice(vals)] * rng.randint(1, 8)
        x = x[:n]
        _agree(probe(x), within_launch_ci(x))


def test_stationarity_check_agrees_and_names_what_moved(probe):
    """The core's stationarity check (core/stats.c) and its Python twin: iid passes, a level
    shift and a drift are named and make the CI approximate (no stop on "target")."""
    rng = random.Random(23)
    iid = [1.0 + 0.05 * rng.gauss(0, 1) for _ in range(400)]
    shift = [v * (1.1 if i >= 200 else 1.0) for i, v in enumerate(iid)]
    drift = [v * (1.0 + 0.3 * i / 400) for i, v in enumerate(iid)]
    for x, want in ((iid, "ok"), (shift, None), (drift, "drift"), (iid[:39], "untested")):
        c, p = probe(x), within_launch_ci(x)
        _agree(c, p)
        if want is None:
            assert c["stationarity"] in ("level_shift", "drift") and not c["ci_exact"]
        else:
            assert c["stationarity"] == want
    # blocky series: the edges of the block test agree too
    for _ in range(60):
        n = rng.randint(40, 160)
        x = []
        while len(x) < n:
            x += [rng.choice([0.75, 1.0, 1.25, 2.0])] * rng.randint(1, 30)
        _agree(probe(x[:n]), within_launch_ci(x[:n]))


def test_a_late_level_shift_is_caught_and_iid_rarely_flagged(probe):
    """A level that moves late in the launch (2 sd after 85% of 200 samples) changes the
    four blocks' shares too little for their chi-square (it passed 12 of 20 such series); the
    rank CUSUM catches it, in the core and its Python twin alike, while independent series of
    the same length stay 'ok' (docs/statistics.md gives the false-flag rates under the
    stopping rule). Fixed seeds: the same series every run."""
    flagged = 0
    for seed in range(20):
        rng = random.Random(seed)
        x = [(1.0 + 0.05 * rng.gauss(0, 1)) * (1.1 if i >= 170 else 1.0) for i in range(200)]
        c, p = probe(x), within_launch_ci(x)
        _agree(c, p)
        flagged += c["stationarity"] in ("level_shift", "drift") and not c["ci_exact"]
    assert flagged >= 18, flagged
    false_flags = 0
    for seed in range(100, 140):
        rng = random.Random(seed)
        x = [1.0 + 0.05 * rng.gauss(0, 1) for _ in range(200)]
        c, p = probe(x), within_launch_ci(x)
        _agree(c, p)
        false_flags += c["stationarity"] != "ok"
    assert false_flags <= 2, false_flags


def test_edge_shifts_and_unsettled_series_agree(probe):
    """The edge CUSUM (each partial sum over its own sd) sees a 2 sd shift in the first or the
    last 12 of 300 samples, which the block shares and the plain CUSUM barely register; and an
    independent series beyond only the continue level (upper 0.01) is 'unsettled': no exact CI,
    so no stop on the target while it lasts. Core and Python twin agree on each. Fixed seeds:
    three of 200 such iid series (2, 87, 126) are unsettled, the rest 'ok'."""
    for where in ("early", "late"):
        moved = 0
        for seed in range(20):
            rng = random.Random(1000 + seed)
            x = [(1.0 + 0.05 * rng.gauss(0, 1)) *
                 (1.1 if (i < 12 if where == "early" else i >= 288) else 1.0) for i in range(300)]
            c, p = probe(x), within_launch_ci(x)
            _agree(c, p)
            moved += c["stationarity"] != "ok" and not c["ci_exact"]
        assert moved >= 18, (where, moved)
    states = []
    for seed in range(200):
        rng = random.Random(seed)
        x = [1.0 + 0.05 * rng.gauss(0, 1) for _ in range(200)]
        if seed in (2, 87, 126, 0, 1):
            c, p = probe(x), within_launch_ci(x)
            _agree(c, p)
            assert c["ci_exact"] == (seed in (0, 1)), (seed, c)
        states.append(within_launch_ci(x)["stationarity"])
    assert [i for i, s in enumerate(states) if s != "ok"] == [2, 87, 126]
