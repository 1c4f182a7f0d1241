#!/usr/bin/env python3
"""Where the between-launch spread of mpibench-core's PingPong comes from, and what a lever does.

    .venv/bin/python bench/bench_launch_spread.py [--quick] [--launches N] [--sizes SPEC]
        [--stack openmpi|mpich ...] [--config NAME ...] [--per-launch] [--keep DIR]

The core is launched N times per configuration and stack, interleaved (one launch of every
configuration and stack per round, in an order rotated each round), each launch as a campaign
launches it: the stack's registered launcher, the `shm` transport preset, np=2,
`bind = "core"` unless the configuration says otherwise (execute.prepare_cell, the core from
the build cache). Every launch runs under the shared MPI lock (one lock hold per round) with
a timeout, and the load average is printed with every round, so the configurations share
the machine's other load.

Each rank runs under a small sh wrapper, the same for every configuration: it records the
rank's allowed CPUs (did the binding take, which vCPU) and, through /usr/bin/time, the rank's
involuntary and voluntary context switches and page faults over the launch. The bench also
reads the guest's steal time (/proc/stat) before and after each launch, and just before each
launch times a cache-line ping-pong between two threads pinned to CPUs 0 and 1 (where the
bound ranks run; a small C probe built with cc at start, skipped without one): the one-way
latency of a cache line between the two vCPUs, which depends on where the hypervisor has put
them at that moment (here ~27 ns or ~155 ns, each for a second or more at a time). A
run's probes split into "near" and "far" launches at their largest gap when that gap is at
least a factor 2 (else they are one mode, all "far").

Configurations (--config, any of; default all but noaslr):
  plan      the time-to-decision bench's within-launch budget after its pilot: --target 100
            --max-time 0.002 --accept-approximate (about 20 samples per cell), with the
            core's settling (each size untimed until the library stops page-faulting)
  nosettle  plan with --no-settle: the core before settling
  defaults  the core's defaults (--target 5 --max-time 0.05)
  warmup    plan with --warmup 50 (many more discarded samples per cell)
  batch     plan with --batch-us 200 (each sample 10x longer than the default 20 us floor)
  unbound   plan with bind none (each launcher's default placement)
  noaslr    plan under `setarch -R` (address randomisation off): a DIAGNOSTIC only, never a
            fix (it pins one arbitrary layout); shows whether layout explains the modes

Per configuration, stack and size it prints, side by side: the median over launches of the
launch median (us); the between-launch sd of log(launch median) (sdB); the within-launch
standard error of log(median) from the launch's own samples (seW: 1.2533 x the samples'
robust sd of log / sqrt(n), median over launches) and sdB/seW (1: the launches differ no
more than their own sampling says; >> 1: a launch effect); the within-launch spread (IQR /
median of the samples, median over launches); and a bimodality indicator (the share of
launches whose median is above 1.5x the lower quartile of the launch medians, and Sarle's
bimodality coefficient, > 0.555 suggests two modes). Then the decomposition per
configuration and stack: the launch effect shared by all sizes of a launch (sd over
launches of the launch's mean log deviation over the sizes) against what is left per size,
the same within the far launches alone, the near/far ratio of the small sizes' medians, and
the context switches, steal time and probe beside the launch's effect (--per-launch: every
launch's row). Last, with two stacks, what a comparison paired by round sees: per size the
sd over rounds of log(first stack / second stack), over all rounds and over the rounds whose
two launches share the probe's mode.

One run, numbers only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics as stt
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mpibench.build import build_component  # noqa: E402
from mpibench.execute import Variant, core_args, prepare_cell  # noqa: E402
from mpibench.process import run_command  # noqa: E402
from mpibench.stacks import discover, find_stack  # noqa: E402

LOCK = "/tmp/mpibench-mpi.lock"
PLAN = {"target": 100, "max_time": 0.002, "accept_approximate": True}
CONFIGS: dict[str, tuple[dict, str | None, list[str]]] = {
    # name: (core options, bind, prefix before the wrapper)
    "plan": (PLAN, "core", []),
    "nosettle": ({**PLAN, "no_settle": True}, "core", []),
    "defaults": ({}, "core", []),
    "warmup": ({**PLAN, "warmup": 50}, "core", []),
    "batch": ({**PLAN, "batch_us": 200}, "core", []),
    "unbound": (PLAN, None, []),
    "noaslr": (PLAN, "core", ["setarch", "-R"]),
}
DEFAULT_CONFIGS = ["plan", "nosettle", "defaults", "warmup"]

# per rank: its allowed CPUs, then the core under /usr/bin/time (context switches, faults)
WRAP = ('r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}; d=$MB_SPREAD_DIR; '
        'grep Cpus_allowed_list /proc/$$/status > "$d/rank$r.cpus"; '
        'exec /usr/bin/time -o "$d/rank$r.time" -f "%c %w %R %F" "$@"')


# The probe: one-way latency of a cache line bouncing between threads pinned to CPUs 0 and
# 1, the best of 10 chunks (ns). Our own few lines; built once per run with cc.
PROBE_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Atomic long line __attribute__((aligned(64)));
static long n;
static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
static void *peer(void *arg)
{
    pin(1);
    for (long i = 0; i < n; i++) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 1)
            ;
        atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
    }
    return arg;
}
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}
int main(int argc, char **argv)
{
    n = argc > 1 ? atol(argv[1]) : 4000;
    pthread_t t;
    pthread_create(&t, NULL, peer, NULL);
    pin(0);
    double best = 1e30;
    long chunk = n / 10, i = 0;
    for (int c = 0; c < 10; c++) {
        double a = now();
        for (long j = 0; j < chunk; j++, i++) {
            atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2)
                ;
        }
        double d = (now() - a) / chunk / 2;
        best = d < best ? d : best;
    }
    for (; i < n; i++) {
        atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2)
            ;
    }
    pthread_join(t, NULL);
    printf("%.1f\n", best);
    return 0;
}
"""


def build_probe(where: Path) -> Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or (os.cpu_count() or 1) < 2:
        return None
    src, exe = where / "c2c.c", where / "c2c"
    src.write_text(PROBE_C)
    res = run_command([cc, "-O2", "-pthread", "-o", str(exe), str(src)], timeout=120)
    return exe if res.ok and exe.exists() else None


def probe_ns(exe: Path | None) -> float:
    if exe is None:
        return math.nan
    res = run_command([str(exe), "4000"], timeout=30)
    try:
        return float(res.stdout.split()[0])
    except (IndexError, ValueError):
        return math.nan


@dataclass
class Launch:
    config: str
    stack: str
    round: int
    ok: bool
    wall: float
    medians: dict[int, float] = field(default_factory=dict)
    samples: dict[int, list[float]] = field(default_factory=dict)
    first: dict[int, float] = field(default_factory=dict)
    cpus: list[str] = field(default_factory=list)
    invol: list[int] = field(default_factory=list)
    vol: list[int] = field(default_factory=list)
    minflt: list[int] = field(default_factory=list)
    steal_ms: float = 0.0
    load: float = 0.0
    probe: float = math.nan
    flags: dict[str, set] = field(default_factory=dict)   # unsettled/faulted -> sizes
    why: str = ""


def steal_ticks() -> int:
    with open("/proc/stat") as fh:
        parts = fh.readline().split()
    return int(parts[8]) if len(parts) > 8 else 0


def one_launch(stack, exe: Path, config: str, sizes: str, run_dir: Path, rnd: int,
               timeout: float, probe: Path | None = None) -> Launch:
    opts, bind, prefix = CONFIGS[config]
    run_dir.mkdir(parents=True)
    jsonl = run_dir / "core.jsonl"
    program = [*prefix, "sh", "-c", WRAP, "sh", str(exe),
               *core_args(["PingPong"], sizes, jsonl, opts)]
    variant = Variant(name=config, stack=stack.name, transport="shm", np=2, bind=bind,
                      env={"MB_SPREAD_DIR": str(run_dir)})
    cmd = prepare_cell(stack, variant, program, run_dir, jsonl=jsonl)
    hz = os.sysconf("SC_CLK_TCK")
    near = probe_ns(probe)
    s0, t0 = steal_ticks(), time.monotonic()
    res = run_command(cmd.argv, env=cmd.env, cwd=run_dir, timeout=timeout,
                      stdout_path=cmd.stdout, stderr_path=cmd.stderr)
    out = Launch(config, stack.name, rnd, res.ok, time.monotonic() - t0,
                 steal_ms=(steal_ticks() - s0) * 1000.0 / hz, load=os.getloadavg()[0],
                 probe=near)
    if not res.ok or not jsonl.exists():
        out.ok, out.why = False, f"exit {res.returncode}: {res.stderr[-300:]}"
        return out
    for ln in jsonl.read_text().splitlines():
        r = json.loads(ln)
        if r.get("record") == "result" and r.get("status") == "ok" and r.get("median_us"):
            out.medians[r["size"]] = r["median_us"]
            out.samples[r["size"]] = list(r.get("samples_us") or [])
            out.first[r["size"]] = r.get("first_us") or math.nan
            if not r.get("settled", False):
                out.flags.setdefault("unsettled", set()).add(r["size"])
            if r.get("sample_faults"):
                out.flags.setdefault("faulted", set()).add(r["size"])
    for rank in (0, 1):
        c = run_dir / f"rank{rank}.cpus"
        out.cpus.append(c.read_text().split(":", 1)[-1].strip() if c.exists() else "?")
        t = run_dir / f"rank{rank}.time"
        nums = t.read_text().split()[-4:] if t.exists() else []
        if len(nums) == 4 and all(x.isdigit() for x in nums):
            out.invol.append(int(nums[0]))
            out.vol.append(int(nums[1]))
            out.minflt.append(int(nums[2]))
    return out


def run_rounds(a, stacks, exes, root: Path) -> list[Launch]:
    launches: list[Launch] = []
    pairs = [(c, s) for c in a.config for s in stacks]
    for rnd in range(a.launches):
        k = rnd % len(pairs)
        order = pairs[k:] + pairs[:k]          # rotate: no configuration always goes first
        # one lock hold per round (a few seconds), a timeout on every launch
        got = _locked_round(a, order, exes, root, rnd)
        launches += got
        bad = [f"{x.config}/{x.stack}: {x.why}" for x in got if not x.ok]
        print(f"  round {rnd + 1:>3}/{a.launches}: {len(got) - len(bad)} launches ok, load "
              "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
              + (f"; failed: {'; '.join(bad)}" if bad else ""), flush=True)
    return launches


def _locked_round(a, order, exes, root: Path, rnd: int) -> list[Launch]:
    import fcntl

    with open(LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            return [one_launch(stack, exes[stack.name], config, a.sizes,
                               root / f"r{rnd:03d}-{config}-{stack.name}", rnd, a.timeout,
                               a.probe)
                    for config, stack in order]
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---- statistics (plain, no stats/ module: this bench only describes) ----

def robust_sd(xs: list[float]) -> float:
    if len(xs) < 4:
        return math.nan
    q = stt.quantiles(xs, n=4)
    return (q[2] - q[0]) / 1.349


def bimodality(xs: list[float]) -> float:
    """Sarle's bimodality coefficient of xs (sample skewness and excess kurtosis)."""
    n = len(xs)
    if n < 4:
        return math.nan
    m = stt.fmean(xs)
    m2 = sum((x - m) ** 2 for x in xs) / n
    if m2 == 0:
        return math.nan
    m3 = sum((x - m) ** 3 for x in xs) / n
    m4 = sum((x - m) ** 4 for x in xs) / n
    g = m3 / m2 ** 1.5 * math.sqrt(n * (n - 1)) / (n - 2)
    k = ((n + 1) * (m4 / m2 ** 2 - 3) + 6) * (n - 1) / ((n - 2) * (n - 3))
    return (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


@dataclass
class Cell:
    med: float
    sdb: float
    sew: float
    iqr: float
    slow: float
    bc: float
    n: int


def cell_stats(ls: list[Launch], size: int) -> Cell | None:
    have = [x for x in ls if size in x.medians]
    if len(have) < 3:
        return None
    logs = [math.log(x.medians[size]) for x in have]
    sew, iqr = [], []
    for x in have:
        s = [v for v in x.samples[size] if v > 0]
        if len(s) >= 4:
            sew.append(1.2533 * robust_sd([math.log(v) for v in s]) / math.sqrt(len(s)))
            q = stt.quantiles(s, n=4)
            iqr.append((q[2] - q[0]) / stt.median(s))
    meds = sorted(x.medians[size] for x in have)
    q1 = stt.quantiles(meds, n=4)[0]
    return Cell(stt.median(meds), stt.stdev(logs), stt.median(sew) if sew else math.nan,
                stt.median(iqr) if iqr else math.nan,
                sum(m > 1.5 * q1 for m in meds) / len(meds), bimodality(logs), len(have))


def fmt_size(s: int) -> str:
    for unit, b in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= b and s % b == 0:
            return f"{s // b}{unit}"
    return f"{s}B"


def report(a, launches: list[Launch], stacks: list[str]) -> None:
    sizes = sorted({s for x in launches for s in x.medians})
    print("\n# per size: med = median over launches of the launch median (us); sdB = sd of "
          "log(launch median) between launches; seW = within-launch standard error of "
          "log(median); B/W = sdB/seW; iqr = within-launch IQR/median; slow = share of "
          "launches > 1.5x the lower quartile; bc = bimodality coefficient (> 0.555: two "
          "modes?)")
    for stack in stacks:
        print(f"\n## {stack}")
        head = f"{'size':>7}"
        for c in a.config:
            head += f" | {c + ' med':>13} {'sdB':>5} {'seW':>5} {'B/W':>5} {'iqr':>5} " \
                    f"{'slow':>4} {'bc':>4}"
        print(head)
        for size in sizes:
            row = f"{fmt_size(size):>7}"
            for c in a.config:
                cs = cell_stats([x for x in launches if x.config == c and x.stack == stack
                                 and x.ok], size)
                if cs is None:
                    row += f" | {'-':>13} {'':>5} {'':>5} {'':>5} {'':>5} {'':>4} {'':>4}"
                    continue
                row += (f" | {cs.med:>13.3f} {cs.sdb:>5.2f} {cs.sew:>5.3f} "
                        f"{cs.sdb / cs.sew if cs.sew else math.nan:>5.1f} {cs.iqr:>5.2f} "
                        f"{cs.slow:>4.0%} {cs.bc:>4.2f}")
            print(row)
    decomposition(a, launches, stacks, sizes)
    if len(stacks) == 2:
        paired(a, launches, stacks, sizes)


def decomposition(a, launches: list[Launch], stacks: list[str], sizes: list[int]) -> None:
    """Launch effect shared by the sizes of a launch vs what is left per size."""
    probes = [x.probe for x in launches if x.probe == x.probe]
    floor = probe_split(probes)
    if probes:
        print(f"\n# core-to-core probe before each launch: min {min(probes):.0f} ns, median "
              f"{stt.median(probes):.0f} ns, max {max(probes):.0f} ns; "
              + (f"near (< {floor:.0f} ns, the largest gap) in "
                 f"{sum(p < floor for p in probes)} of {len(probes)} launches"
                 if floor == floor else "one mode (no gap of 2x): every launch counts as far"))
    else:
        print("\n# core-to-core probe: not built (no cc), no near/far split")
    print("\n# decomposition of log(launch median): shared = sd over launches of the "
          "launch's mean deviation over the sizes (one effect for the whole launch); "
          "residual = sd of what is left, pooled over the sizes; small = sizes <= 4 KiB, "
          "large = >= 64 KiB; near/far = ratio of the small sizes' medians; probe corr = "
          "Spearman correlation of the launch effect with the probe; involuntary context "
          "switches (rank 0/1, median) and their correlation; steal ms (median), CPUs of "
          "rank 0/1 (most common); unsettled = cells that ended settling on its budget, "
          "faulted = cells with page faults in their timed rounds")
    for stack in stacks:
        for c in a.config:
            ls = [x for x in launches if x.config == c and x.stack == stack and x.ok]
            for part, sel in (("small", [s for s in sizes if s <= 4096]),
                              ("large", [s for s in sizes if s >= 65536])):
                sh, res, eff = shared_residual(ls, sel)
                if sh is None:
                    continue
                inv = [sum(x.invol) for x in ls]
                far = [x for x in ls if not near(x, floor)]
                sh_far = shared_residual(far, sel)[0]
                print(f"  {stack:8} {c:9} {part}: shared {sh:.3f} (far launches alone "
                      f"{_f3(sh_far)}), residual {res:.3f}; near {len(ls) - len(far)}/"
                      f"{len(ls)}, near/far {mode_ratio(ls, sel, floor)}; probe corr "
                      f"{spearman(eff, [x.probe for x in ls]):+.2f}; invol "
                      f"{_med_pair([x.invol for x in ls])} (corr {spearman(eff, inv):+.2f}), "
                      f"steal {stt.median([x.steal_ms for x in ls]):.0f} ms, cpus "
                      f"{_common([' / '.join(x.cpus) for x in ls])}; unsettled "
                      f"{_count(ls, sel, 'unsettled')}, faulted {_count(ls, sel, 'faulted')}")
            if a.per_launch:
                for x in ls:
                    cells = " ".join(f"{fmt_size(s)}={x.medians[s]:.3g}" for s in
                                     (sizes[0], 4096, 1 << 20) if s in x.medians)
                    print(f"      r{x.round:03d} {cells} probe {x.probe:.0f} ns "
                          f"invol {x.invol} vol {x.vol} "
                          f"minflt {x.minflt} steal {x.steal_ms:.0f} ms cpus {x.cpus} "
                          f"load {x.load:.2f} wall {x.wall:.2f} s")


def paired(a, launches: list[Launch], stacks: list[str], sizes: list[int]) -> None:
    """What a round-paired comparison of the two stacks sees: per size and configuration the
    sd over rounds of log(first stack's median / second's), over all rounds and over the
    rounds whose two launches had the same probe mode."""
    floor = probe_split([x.probe for x in launches if x.probe == x.probe])
    print(f"\n# paired by round: sd of log({stacks[0]} median / {stacks[1]} median) over "
          "the rounds (all | the rounds whose two launches share the probe's mode, and how "
          "many those are)")
    print(f"{'size':>7}" + "".join(f" | {c:>22}" for c in a.config))
    by = {(x.config, x.stack, x.round): x for x in launches if x.ok}
    for size in sizes:
        row = f"{fmt_size(size):>7}"
        for c in a.config:
            d_all, d_same = [], []
            for r in range(a.launches):
                x, y = by.get((c, stacks[0], r)), by.get((c, stacks[1], r))
                if x is None or y is None or size not in x.medians or size not in y.medians:
                    continue
                d = math.log(x.medians[size] / y.medians[size])
                d_all.append(d)
                if near(x, floor) == near(y, floor):
                    d_same.append(d)
            sd = stt.stdev(d_all) if len(d_all) > 2 else math.nan
            sd2 = stt.stdev(d_same) if len(d_same) > 2 else math.nan
            row += f" | {sd:>7.3f} {sd2:>7.3f} ({len(d_same):>2}/{len(d_all):>2})"
        print(row)


def near(x: Launch, floor: float) -> bool:
    """floor: the split between the probe's modes (nan: one mode)."""
    return x.probe == x.probe and x.probe < floor


def probe_split(probes: list[float]) -> float:
    """The geometric middle of the largest gap between sorted probes, when it is >= 2x."""
    p = sorted(probes)
    gaps = [(p[i + 1] / p[i], i) for i in range(len(p) - 1) if p[i] > 0]
    if not gaps or max(gaps)[0] < 2:
        return math.nan
    i = max(gaps)[1]
    return math.sqrt(p[i] * p[i + 1])


def mode_ratio(ls: list[Launch], sel: list[int], floor: float) -> str:
    """Median over the sizes of (median launch median of the near launches / of the far)."""
    rs = []
    for s in sel:
        a = [x.medians[s] for x in ls if s in x.medians and near(x, floor)]
        b = [x.medians[s] for x in ls if s in x.medians and not near(x, floor)]
        if a and b:
            rs.append(stt.median(a) / stt.median(b))
    return f"{stt.median(rs):.2f}" if rs else "-"


def _count(ls: list[Launch], sel: list[int], what: str) -> str:
    cells = [(x, s) for x in ls for s in sel if s in x.medians]
    bad = [1 for x, s in cells if s in x.flags.get(what, ())]
    return f"{len(bad)}/{len(cells)}"


def _f3(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def shared_residual(ls: list[Launch], sel: list[int]):
    sel = [s for s in sel if sum(s in x.medians for x in ls) >= 3]
    ls = [x for x in ls if all(s in x.medians for s in sel)]
    if len(ls) < 3 or not sel:
        return None, None, []
    logs = {s: [math.log(x.medians[s]) for x in ls] for s in sel}
    centre = {s: stt.fmean(v) for s, v in logs.items()}
    eff = [stt.fmean(logs[s][i] - centre[s] for s in sel) for i in range(len(ls))]
    resid = [logs[s][i] - centre[s] - eff[i] for s in sel for i in range(len(ls))]
    df = max(1, (len(ls) - 1) * (len(sel) - 1))
    return stt.stdev(eff), math.sqrt(sum(r * r for r in resid) / df), eff


def spearman(x: list[float], y: list[float]) -> float:
    if len(x) < 3 or len(set(y)) < 2 or len(set(x)) < 2:
        return math.nan

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = pos
        return r
    rx, ry = ranks(x), ranks(y)
    return stt.correlation(rx, ry)


def _med_pair(xs: list[list[int]]) -> str:
    xs = [x for x in xs if len(x) == 2]
    if not xs:
        return "?"
    return f"{stt.median(x[0] for x in xs):g}/{stt.median(x[1] for x in xs):g}"


def _common(xs: list[str]) -> str:
    if not xs:
        return "?"
    best = max(set(xs), key=xs.count)
    return f"{best} ({xs.count(best)}/{len(xs)})"


def core_stacks(names: list[str] | None) -> tuple[list, dict]:
    """The named stacks (default Open MPI and MPICH) found on this machine, each with its
    mpibench-core built: ([Stack], {name: executable}); a stack not found is printed, not
    fatal (bench_core_launch_cost.py asks the same)."""
    found = discover()
    stacks = []
    for name in names or ["openmpi", "mpich"]:
        try:
            stacks.append(find_stack(name, found))
        except Exception as exc:  # noqa: BLE001 - a missing stack is reported, not fatal
            print(f"stack {name}: {exc}")
    return stacks, {s.name: build_component(s, "core") for s in stacks}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="3 launches per configuration, sizes 0,128,4K,1M, plan and nosettle")
    ap.add_argument("--launches", type=int, default=None,
                    help="launches per configuration and stack (default 12)")
    ap.add_argument("--sizes", default=None, help="the core's --sizes (default 0:22)")
    ap.add_argument("--stack", action="append", default=None,
                    help="registered stack names (default openmpi and mpich)")
    ap.add_argument("--config", action="append", default=None, choices=sorted(CONFIGS),
                    help=f"configurations (default {', '.join(DEFAULT_CONFIGS)})")
    ap.add_argument("--per-launch", action="store_true", help="print every launch's row")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per launch")
    ap.add_argument("--keep", metavar="DIR", help="keep the run directories in DIR (new)")
    a = ap.parse_args(argv)
    a.launches = a.launches or (3 if a.quick else 12)
    a.sizes = a.sizes or ("0,128,4K,1M" if a.quick else "0:22")
    a.config = a.config or (["plan", "nosettle"] if a.quick else DEFAULT_CONFIGS)
    if a.launches < 3:
        ap.error("--launches: at least 3")
    if a.keep and Path(a.keep).exists():
        ap.error(f"--keep: {a.keep} exists; give a new directory")
    for tool in ("sh", "/usr/bin/time"):
        if shutil.which(tool) is None:
            print(f"{tool} not found: the bench's rank wrapper needs it")
            return 0
    stacks, exes = core_stacks(a.stack)
    if not stacks:
        return 0
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench-spread-"))
    root.mkdir(parents=True, exist_ok=True)
    a.probe = build_probe(root)
    print(f"# launch spread: PingPong {a.sizes}, np=2, shm, {a.launches} launches per "
          f"configuration and stack, interleaved; configurations: {', '.join(a.config)}; "
          f"stacks: {', '.join(s.name for s in stacks)}")
    print("# start: load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    try:
        launches = run_rounds(a, stacks, exes, root)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("# end: load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    report(a, launches, [s.name for s in stacks])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.TimeoutExpired as exc:
        sys.exit(f"timed out: {exc}")
