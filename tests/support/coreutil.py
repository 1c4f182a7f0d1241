"""Helpers for the mpibench-core tests and benches: build the core per stack through its
Makefile contract, launch it with a timeout, parse and schema-check its JSON Lines."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mpibench.process import CommandResult, run_command

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "core"
SCHEMA = json.loads((CORE / "core-output.schema.json").read_text())

STACKS = {
    "openmpi": {"mpicc": "mpicc.openmpi", "launch": ["mpirun.openmpi", "--oversubscribe", "-np"],
                "env": {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                        # shared memory only: tests must not depend on the machine's network
                        "OMPI_MCA_btl": "self,vader"}},
    "mpich": {"mpicc": "mpicc.mpich", "launch": ["mpiexec.hydra", "-n"], "env": {}},
}


def available(stack: str) -> bool:
    s = STACKS[stack]
    return shutil.which(s["mpicc"]) is not None and shutil.which(s["launch"][0]) is not None


# {(session base temp, stack): executable}: build_all's builds, shared by the test files of one
# session (tests/core/test_core.py, test_parts.py, tests/test_sizes_grammar.py each built both
# stacks again, ~2 s a stack). The executables are only run, never changed.
_BUILT: dict[tuple[Path, str], Path] = {}


def build_all(tmp_path_factory) -> dict[str, Path]:
    """The core built once per installed stack per pytest session (under its
    tmp_path_factory), by stack name; a later call in the same session reuses the builds."""
    base = tmp_path_factory.getbasetemp()
    out = {}
    for stack in STACKS:
        if not available(stack):
            continue
        exe = _BUILT.get((base, stack))
        if exe is None or not exe.exists():
            exe = _BUILT[base, stack] = build(stack, tmp_path_factory.mktemp(f"core-{stack}"))
        out[stack] = exe
    return out


def built_or_skip(tmp_path_factory) -> dict[str, Path]:
    """build_all for a test module that needs at least one stack: skips it when none is
    installed."""
    exes = build_all(tmp_path_factory)
    if not exes:
        pytest.skip("no MPI stack installed")
    return exes


def exe_of(core: dict[str, Path], stack: str) -> Path:
    """The built core of one stack, or a skip when that stack is not installed."""
    if stack not in core:
        pytest.skip(f"{stack} is not installed")
    return core[stack]


def build(stack: str, build_dir: Path, timeout: float = 300) -> Path:
    build_dir.mkdir(parents=True, exist_ok=True)
    res = run_command(["make", "-C", str(CORE), f"MPICC={STACKS[stack]['mpicc']}",
                       f"BUILD={build_dir.resolve()}"], timeout=timeout)
    exe = build_dir / "mpibench-core"
    if not res.ok or not exe.exists():
        raise RuntimeError(f"building mpibench-core for {stack} failed:\n{res.stdout}\n{res.stderr}")
    return exe


def fakeclock_shim(stack: str, out_dir: Path) -> Path:
    """tests/data/core/fakeclock.c built with the stack's mpicc: an MPI_Wtime that counts the
    core's own calls, so a --max-time is a number of calls and no machine load changes it."""
    so = out_dir / f"fakeclock-{stack}.so"
    res = run_command([STACKS[stack]["mpicc"], "-O2", "-shared", "-fPIC", "-o", str(so),
                       str(REPO / "tests" / "data" / "core" / "fakeclock.c")], timeout=120)
    assert res.ok, res.stderr
    return so


@dataclass
class Run:
    res: CommandResult
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def header(self) -> dict[str, Any]:
        return next(r for r in self.records if r["record"] == "header")

    @property
    def results(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["record"] == "result"]

    @property
    def footer(self) -> dict[str, Any] | None:
        return next((r for r in self.records if r["record"] == "footer"), None)


def launch(stack: str, exe: Path, np: int, args: list[str], jsonl: Path | None,
           timeout: float = 120, extra_env: dict[str, str] | None = None,
           preload: Path | None = None) -> Run:
    """preload: a library every rank loads first (fakeclock_shim's deterministic clock)."""
    s = STACKS[stack]
    env = dict(s["env"])
    env.update(extra_env or {})
    argv = [*s["launch"], str(np)]
    if preload is not None and stack == "openmpi":
        argv += ["-x", f"LD_PRELOAD={preload}"]  # mpirun passes on only what it is told
    elif preload is not None:
        env["LD_PRELOAD"] = str(preload)
    argv += [str(exe), *args]
    if jsonl is not None:
        argv += ["--jsonl", str(jsonl)]
    res = run_command(argv, env=env, timeout=timeout)
    run = Run(res)
    if jsonl is not None and jsonl.exists():
        run.records = [json.loads(ln) for ln in jsonl.read_text().splitlines() if ln.strip()]
    return run


# ---- a small JSON Schema subset validator (type, const, enum, properties, required, items,
# oneOf, $ref to $defs): enough for core-output.schema.json without adding a dependency ----

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_ok(v: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, _TYPES[t])


def schema_errors(v: Any, schema: dict[str, Any] = SCHEMA, path: str = "$") -> list[str]:
    errs: list[str] = []
    if "$ref" in schema:            # "#/$defs/NAME" only
        return schema_errors(v, SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]], path)
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not schema_errors(v, s, path)]
        if len(matches) != 1:
            best = min((schema_errors(v, s, path) for s in schema["oneOf"]), key=len)
            return [f"{path}: matches {len(matches)} of oneOf; nearest: {best[:3]}"]
        return []
    if "const" in schema and v != schema["const"]:
        errs.append(f"{path}: {v!r} != {schema['const']!r}")
    if "enum" in schema and v not in schema["enum"]:
        errs.append(f"{path}: {v!r} not in {schema['enum']}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(v, t) for t in types):
            errs.append(f"{path}: {v!r} is not {types}")
            return errs
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errs.append(f"{path}: missing {k!r}")
        for k, sub in schema.get("properties", {}).items():
            if k in v:
                errs += schema_errors(v[k], sub, f"{path}.{k}")
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            errs += schema_errors(x, schema["items"], f"{path}[{i}]")
    return errs


def check_schema(records: list[dict[str, Any]]) -> None:
    assert records, "no records"
    assert records[0]["record"] == "header"
    for i, rec in enumerate(records):
        errs = schema_errors(rec)
        assert not errs, f"record {i} ({rec.get('record')}, {rec.get('benchmark')}): {errs}"



# ---- the core's within-launch CI, written again independently (numpy/scipy) ----

# n / tau, 5 tau and 20 tau are often exact integers that rounding puts either side: within
# this (relative) of an integer counts as it, in the core (core/stats.c MB_SLACK) and here
SLACK = 1e-9


def within_launch_ci(samples: list[float]) -> dict[str, Any]:
    """The 95% CI of the median that mpibench-core reports (docs/core-output.md, Statistics):
    order statistics on an effective sample size n / tau, tau the larger of the median
    indicator's integrated autocorrelation time (Sokal window, lags <= 500) and the AR(1)
    factor (1 + r) / (1 - r) of the log samples' lag-1 autocorrelation r."""
    import numpy as np
    from scipy.stats import binom

    x = np.asarray(samples, dtype=float)
    n = len(x)
    s = np.sort(x)
    m = float(np.median(x))
    lag1 = float("nan")
    if n >= 3 and (x > 0).all() and (x != x[0]).any():
        lx = np.log(x) - np.log(x).mean()
        den = float(np.dot(lx, lx))
        if den > 0:
            lag1 = float(np.dot(lx[:-1], lx[1:])) / den
    ind = (x <= m).astype(float)
    p = ind.mean()
    var = p * (1 - p)
    tau_i = 1.0
    if n >= 3 and var > 0:
        c = ind - p
        for lag in range(1, min(n // 2, 501)):
            tau_i += 2.0 * float(np.dot(c[:-lag], c[lag:])) / n / var
            if lag >= 5.0 * tau_i * (1 - SLACK):
                break
    r = 0.0 if lag1 != lag1 else min(max(lag1, 0.0), 0.999)
    tau = max(max(tau_i, 1.0), (1 + r) / (1 - r))
    neff = int(np.floor(n / tau * (1 + SLACK)))
    if tau <= 1.0 or neff >= n:
        neff = n
    neff = max(neff, 1)

    def ranks(k: int) -> int | None:
        lo = None
        for j in range(1, k + 1):
            if binom.cdf(j - 1, k, 0.5) <= 0.025:
                lo = j
            else:
                break
        return lo

    lo = ranks(neff)
    stat = stationarity(x, m)
    moved = stat in ("level_shift", "drift", "unsettled")
    out = {"lag1": lag1, "tau": tau, "n_eff": neff, "stationarity": stat}
    if neff == n:
        if lo is None:
            return {"low": s[0], "high": s[-1], "exact": False, **out}
        return {"low": s[lo - 1], "high": s[n - lo], "exact": n >= 20 and not moved, **out}
    big_l = int(np.floor((lo or 1) * n / neff))
    big_l = min(max(big_l, 1), (n + 1) // 2)
    return {"low": s[big_l - 1], "high": s[n - big_l],
            "exact": lo is not None and n >= 20 * tau * (1 - SLACK) and not moved, **out}


# the core's stationarity check (core/mb.h MB_STAT_*), written again from its definition
STAT_BLOCKS, STAT_MIN_N, STAT_CRIT, STAT_CUSUM_CRIT = 4, 40, 16.266, 1.949
# the continue level (upper 0.01): beyond it but short of the flag level is "unsettled"
STAT_CRIT_CONT, STAT_CUSUM_CONT = 11.345, 1.628
# the edge CUSUM: from STAT_EDGE samples of either end; (n, upper 0.01 critical value), a
# continue level only (it never flags alone)
STAT_EDGE = 5
EDGE_CRIT = [(40, 3.20), (60, 3.31), (100, 3.42), (200, 3.53), (500, 3.64), (1000, 3.68),
             (2000, 3.74), (5000, 3.81), (20000, 3.92)]


def edge_crit(n: int) -> float:
    """core/stats.c mb_edge_crit: linear in log n between the points, log log n beyond."""
    import math

    ln = math.log(max(n, 40))
    last = EDGE_CRIT[-1]
    if ln >= math.log(last[0]):
        return last[1] + 0.9 * (math.log(ln) - math.log(math.log(last[0])))
    i = 0
    while ln > math.log(EDGE_CRIT[i + 1][0]):
        i += 1
    a, b = EDGE_CRIT[i], EDGE_CRIT[i + 1]
    f = (ln - math.log(a[0])) / (math.log(b[0]) - math.log(a[0]))
    return a[1] + f * (b[1] - a[1])


def stationarity(x, m: float) -> str:
    """'ok', 'level_shift', 'drift', 'unsettled' or 'untested': the shares of STAT_BLOCKS consecutive
    blocks at or below the median m against the whole, a chi-square allowing for the
    indicator's lag-1 correlation measured inside the blocks; and the CUSUM of the centred
    mid-ranks against a Brownian bridge's sup, allowing for the ranks' lag-1 correlation inside
    the blocks; and the edge CUSUM, each partial sum over its own sd. The first two beyond
    their upper-0.001 values fail; any of the three beyond its upper-0.01 value otherwise:
    'unsettled' (docs/statistics.md, within-launch stationarity)."""
    import numpy as np
    from scipy.stats import rankdata

    n = len(x)
    if n < STAT_MIN_N:
        return "untested"
    xa = np.asarray(x, dtype=float)
    ind = (xa <= m).astype(float)
    ranks = rankdata(xa, method="average")
    counts, sizes = [], []
    num = den = rnum = rden = 0.0
    for b in range(STAT_BLOCKS):
        sl = slice(b * n // STAT_BLOCKS, (b + 1) * n // STAT_BLOCKS)
        blk = ind[sl]
        counts.append(int(blk.sum()))
        sizes.append(blk.size)
        d = blk - blk.sum() / blk.size
        den += float(np.dot(d, d))
        num += float(np.dot(d[:-1], d[1:]))
        rb = ranks[sl]
        dr = rb - rb.sum() / rb.size
        rden += float(np.dot(dr, dr))
        rnum += float(np.dot(dr[:-1], dr[1:]))
    part = np.cumsum(ranks - 0.5 * (n + 1))
    kmax = float(np.max(np.abs(part)))
    k = np.arange(STAT_EDGE, n - STAT_EDGE + 1)
    emax = float(np.max(np.abs(part[k - 1]) / np.sqrt(k * (n - k) * (n + 1) / 12.0)))
    rr = min(max(rnum / rden if rden > 0 else 0.0, 0.0), 0.99)
    scale = n * n * (n + 1) / 12.0 * (1.0 + rr) / (1.0 - rr)
    cusum = kmax / scale ** 0.5 if scale > 0 else 0.0
    p = sum(counts) / n
    var = p * (1 - p)
    if var <= 0:
        return "ok"
    r = num / den if den > 0 else 0.0
    r = min(max(r, 0.0), 0.99)
    tau = (1 + r) / (1 - r)
    x2 = sum(nb * (c / nb - p) ** 2 for c, nb in zip(counts, sizes, strict=True)) / (var * tau)
    edge = emax / ((1.0 + rr) / (1.0 - rr)) ** 0.5
    if x2 <= STAT_CRIT and cusum <= STAT_CUSUM_CRIT:
        settled = x2 <= STAT_CRIT_CONT and cusum <= STAT_CUSUM_CONT and edge <= edge_crit(n)
        return "ok" if settled else "unsettled"
    d = [counts[b] * sizes[b - 1] - counts[b - 1] * sizes[b] for b in range(1, STAT_BLOCKS)]
    return "drift" if all(v >= 0 for v in d) or all(v <= 0 for v in d) else "level_shift"
