"""The PMPI profiler, Python side: build the library per stack, run a command under it,
collect and merge what the ranks wrote, store it, print a report, compare two profiles.

    env = profile_env("openmpi", out_dir)        # LD_PRELOAD + MPIBENCH_PROFILE_DIR
    ... launch the application with env ...
    doc = collect_profile(out_dir)               # merged document (schema: docs/profiler.md)

The C library (profiler/) merges at MPI_Finalize and writes profile.json; when a run was cut
short (MPI_Abort, a signal) only per-rank files exist and collect_profile() merges them here
with the same schema, marked "complete": false.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.errors import BenchmarkFailure, BuildError, UsageError
from mpibench.process import CommandResult, run_command
from mpibench.units import fmt_bytes, fmt_pow2, fmt_seconds

SCHEMA = "mpibench-profile"
RANK_SCHEMA = "mpibench-profile-rank"
SCHEMA_VERSION = 1
CAMPAIGN = "profiles"
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
_RANK_FILE = re.compile(r"^rank-(\d+)\.json$")


# ---- stacks and builds -----------------------------------------------------------------
def _launcher_stack(argv0: str, usable: Sequence[Any]) -> tuple[Any, str | None]:
    """The stack whose launcher argv0 is (a Stack or None) and, failing that, the kind its
    name implies (Debian's names), or None when the launcher says nothing."""
    exe = os.path.basename(argv0)
    real = shutil.which(argv0)
    for s in usable:  # by name, then through symlinks (Debian alternatives: mpirun)
        if s.launcher and os.path.basename(s.launcher) == exe:
            return s, s.kind
    for s in usable:
        if real and s.launcher and os.path.realpath(s.launcher) == os.path.realpath(real):
            return s, s.kind
    from mpibench.stacks.kinds import kind_for_launcher

    return None, kind_for_launcher(exe)


def resolve_stack(stack: Any = None, argv: Sequence[str] | None = None,
                  found: Sequence[Any] | None = None):
    """A mpibench.stacks.Stack from a Stack, a stack name, a compiler wrapper, or (when None)
    guessed from the launcher in argv, else the first usable stack. `found`: the stacks
    discovered (default: mpibench.stacks.discover())."""
    from mpibench import stacks as stacks_mod

    if isinstance(stack, stacks_mod.Stack):
        return stack
    found = list(found) if found is not None else stacks_mod.discover()
    usable = [s for s in found if s.ok and not s.alias_of]
    if stack is None and argv:
        s, kind = _launcher_stack(argv[0], usable)
        if s is not None:
            return s
        stack = kind
    if stack is None:
        if not usable:
            raise UsageError("no usable MPI stack found; install Open MPI or MPICH, or give "
                             "--stack")
        return usable[0]
    name = str(stack)
    for s in found:
        if s.name == name:
            return stacks_mod.find_stack(name, found)
    real = shutil.which(name)
    for s in usable:
        w = shutil.which(s.mpicc) if s.mpicc else None
        if s.mpicc == name or (real and w and os.path.realpath(w) == os.path.realpath(real)):
            return s
    from mpibench.stacks.kinds import REGISTRY as KINDS

    if name in KINDS and KINDS.get(name).debian_wrapper:
        s = stacks_mod._make_stack(name, KINDS.get(name).debian_wrapper, "fallback")
    elif real:
        s = stacks_mod._make_stack(os.path.basename(name), name, "path")
    else:
        raise UsageError(f"--stack {name!r}: not a known stack or compiler wrapper; expected "
                         f"one of {', '.join(s.name for s in usable) or 'none found'}")
    if not s.ok:
        raise UsageError(f"stack {name!r} is not usable: {s.problem}")
    return s


def build_profiler(stack: Any = None, *, force: bool = False) -> Path:
    """Path of libmpibench-profiler.so for this stack (built into the cache if needed)."""
    from mpibench.build import build_component

    return build_component(resolve_stack(stack), "profiler", force=force)


def build_test_programs(stack: Any = None) -> Path:
    """Build profiler/tests/*.c (known_calls, pingpong0) for a stack; returns their dir."""
    from mpibench.build import source_hash, source_root
    from mpibench.stacks import cache_dir

    s = resolve_stack(stack)
    src = source_root() / "profiler"
    out = cache_dir() / "build" / f"profiler-tests-{s.name}-{s.identity()}-{source_hash(src)}"
    if (out / "known_calls").exists() and (out / "pingpong0").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    res = run_command(s.command(["make", "-C", str(src), f"MPICC={s.mpicc}", f"BUILD={out}",
                                 "testprogs"]), env=s.env, timeout=300)
    if not res.ok:
        raise BuildError(f"building profiler test programs with {s.mpicc} failed",
                         log=(res.stdout + res.stderr)[-4000:])
    return out


def profile_env(stack_name_or_wrapper: Any, out_dir: str | os.PathLike) -> dict[str, str]:
    """Environment that profiles every MPI rank it reaches: builds the library if needed and
    empties out_dir of earlier profile files. For campaign variants with `profile = true`;
    pass it to the ranks only (inject_env adds Open MPI -x / Hydra -genv flags)."""
    lib = build_profiler(stack_name_or_wrapper)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    clean_out_dir(out)  # one directory per launch: never merge files of an earlier run
    return {"LD_PRELOAD": str(lib), "MPIBENCH_PROFILE_DIR": str(out)}


def inject_env(argv: Sequence[str], env: Mapping[str, str], kind: str) -> tuple[list[str], bool]:
    """Pass env to the ranks through the launcher's own flags when argv starts with a known
    launcher (so the launcher process itself is not preloaded). Returns (argv, injected)."""
    argv = list(argv)
    if not argv:
        return argv, False
    from mpibench.stacks.kinds import REGISTRY as KINDS

    exe = os.path.basename(argv[0])
    if kind == "unknown" or kind not in KINDS:
        return argv, False
    k = KINDS.get(kind)
    names = {*k.launcher_names, *k.prefix_launchers, *k.debian_launchers}
    if exe not in names or k.launcher_backend(exe) != k.launcher_kind:
        return argv, False
    return [argv[0], *k.env_flags(env), *argv[1:]], True


def clean_out_dir(out: Path) -> None:
    """Remove files an earlier profile left in out (only ours), so runs never mix."""
    if not out.is_dir():
        return
    for p in out.iterdir():
        if p.name == "profile.json" or p.name.startswith("rank-") or p.name.endswith(".tmp"):
            p.unlink()


@dataclass
class ProfileRun:
    stack: Any
    argv: list[str]           # what the user asked to run
    launched: list[str]       # what was run (with env flags injected)
    out_dir: Path
    library: Path
    result: CommandResult
    doc: dict[str, Any] | None
    error: str = ""
    env: dict[str, str] = field(default_factory=dict)
    timed_out: bool = False   # the ranks were stopped because the timeout was near

    @property
    def status(self) -> str:
        if self.result.timed_out or self.timed_out:
            return "timeout"
        return "done" if self.result.ok and self.doc and self.doc.get("complete") else "failed"


def check_command(argv: Sequence[str], stack: Any, timeout: float,
                  found: Sequence[Any] | None = None) -> None:
    """Bad input before anything is built, launched or stored: no command, a command that is
    not there, a timeout that is not a positive number, a launcher of another stack (its
    ranks would load two MPI libraries and crash)."""
    if not argv:
        raise UsageError("profile: no command given; expected e.g. "
                         "`mpibench profile -- mpirun -np 2 ./app`")
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout {timeout!r}: expected a positive number of seconds")
    if shutil.which(argv[0]) is None:
        raise UsageError(f"profile: command {argv[0]!r} not found or not executable")
    from mpibench import stacks as stacks_mod

    if found is None:
        found = stacks_mod.discover()
    usable = [s for s in found if s.ok and not s.alias_of]
    _, launcher_kind = _launcher_stack(argv[0], usable)
    kind = getattr(stack, "kind", None)
    if launcher_kind and kind and kind != "unknown" and launcher_kind != kind:
        raise UsageError(f"--stack {getattr(stack, 'name', stack)} ({kind}) does not match the "
                         f"launcher {argv[0]!r} ({launcher_kind}): the ranks would load two MPI "
                         "libraries; give the matching --stack or launcher")


def run_profiled(argv: Sequence[str], *, stack: Any = None, out_dir: str | os.PathLike,
                 timeout: float = 600, extra_env: Mapping[str, str] | None = None,
                 found: Sequence[Any] | None = None) -> ProfileRun:
    """Run a launcher command with every rank profiled; collect what was written."""
    if not argv:
        check_command(argv, None, timeout)
    if found is None:
        from mpibench import stacks as stacks_mod

        found = stacks_mod.discover()
    s = resolve_stack(stack, argv, found)
    check_command(argv, s, timeout, found)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    clean_out_dir(out)
    penv = profile_env(s, out)
    launched, injected = inject_env(argv, penv, s.kind)
    env = dict(ROOT_ENV)
    env.update(extra_env or {})
    env["MPIBENCH_PROFILE_DIR"] = penv["MPIBENCH_PROFILE_DIR"]
    if not injected:  # unknown launcher (srun, a script, a singleton): plain environment
        env["LD_PRELOAD"] = ":".join(x for x in (penv["LD_PRELOAD"],
                                                 os.environ.get("LD_PRELOAD")) if x)
    # Shortly before the timeout, SIGTERM the ranks themselves (found by the profile
    # directory in their environment), so each writes its partial profile. Launchers stop
    # their ranks in ways a profile may not survive (Hydra: SIGKILL; Open MPI: SIGTERM, then
    # SIGKILL once one rank has died); run_command's timeout then ends whatever is left.
    grace = min(5.0, 0.25 * timeout)
    fired = threading.Event()

    def stop_ranks() -> None:
        fired.set()
        lib = Path(penv["LD_PRELOAD"])
        pids = signal_ranks(out, lib, DUMP_SIGNAL)  # write now, keep running
        deadline = time.monotonic() + grace / 2
        while time.monotonic() < deadline and \
                len([p for p in out.glob("rank-*.json") if _RANK_FILE.match(p.name)]) < len(pids):
            time.sleep(0.05)
        signal_ranks(out, lib, signal.SIGTERM)

    timer = threading.Timer(timeout - grace, stop_ranks)
    timer.daemon = True
    timer.start()
    try:
        res = run_command(launched, env=env, timeout=timeout,
                          stdout_path=out / "stdout.txt", stderr_path=out / "stderr.txt")
    finally:
        timer.cancel()
    doc, error = None, ""
    try:
        doc = collect_profile(out)
    except BenchmarkFailure as exc:
        error = str(exc)
    return ProfileRun(s, list(argv), launched, out, Path(penv["LD_PRELOAD"]), res, doc, error,
                      env, timed_out=fired.is_set())


# The library writes its counters and carries on when it gets this signal (mpib_runtime.c).
DUMP_SIGNAL = signal.SIGRTMIN + 7
# Set by the launchers in each rank's environment (not in the launcher's own).
_RANK_ENV = (b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK=", b"PMIX_RANK=", b"SLURM_PROCID=",
             b"MPI_LOCALRANKID=", b"MV2_COMM_WORLD_RANK=")


def signal_ranks(out_dir: Path, library: Path, sig: int = signal.SIGTERM) -> list[int]:
    """Send sig to this host's MPI ranks that run with this profile directory and library
    preloaded (the ranks of one profiled launch, which we started). Returns their PIDs."""
    want_dir = b"MPIBENCH_PROFILE_DIR=" + str(out_dir).encode()
    want_lib = str(library).encode()
    hit = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            env = (p / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if want_dir in env and any(e.startswith(b"LD_PRELOAD=") and want_lib in e for e in env) \
                and any(e.startswith(_RANK_ENV) for e in env):
            try:
                os.kill(int(p.name), sig)
                hit.append(int(p.name))
            except ProcessLookupError:
                pass
    return hit


# ---- collect and merge -----------------------------------------------------------------
def _check_schema(doc: Any, path: Path, schema: str) -> dict:
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise UsageError(f"{path}: not a {schema} document")
    v = doc.get("version")
    if not isinstance(v, int) or v > SCHEMA_VERSION:
        raise UsageError(f"{path}: {schema} version {v!r} is newer than this mpibench "
                         f"understands ({SCHEMA_VERSION})")
    return doc


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise UsageError(f"{path}: invalid JSON ({exc})") from exc


def collect_profile(out_dir: str | os.PathLike) -> dict[str, Any]:
    """The merged profile of a run: profile.json if the library wrote it (normal end), else
    the per-rank files merged here ("complete": false) after an abort or a signal."""
    out = Path(out_dir)
    merged = out / "profile.json"
    if merged.exists():
        return _check_schema(_load(merged), merged, SCHEMA)
    ranks = []
    for p in sorted(out.glob("rank-*.json")):
        if _RANK_FILE.match(p.name):
            ranks.append(_check_schema(_load(p), p, RANK_SCHEMA))
    if not ranks:
        raise BenchmarkFailure(f"no profile in {out}: no profile.json and no rank-*.json (was "
                               "the program an MPI program linked against this stack, and did "
                               "it reach MPI_Init?)")
    return merge_rank_docs(ranks)


def _stats(values: Sequence[float], total: bool = False) -> dict[str, float]:
    vals = list(values) or [0.0]
    d = {"min": min(vals), "mean": sum(vals) / len(vals), "max": max(vals)}
    if total:
        d = {"total": sum(vals), **d}
    return d


def merge_rank_docs(ranks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge per-rank documents (schema mpibench-profile-rank) into the merged schema, the
    same computation the library does at MPI_Finalize."""
    ranks = sorted(ranks, key=lambda r: r["rank"])
    size = max(int(r.get("size") or 0) for r in ranks)
    present = [int(r["rank"]) for r in ranks]
    r0 = ranks[0]
    wall = [r["wall_ns"] * 1e-9 for r in ranks]
    mpi = [r["mpi_ns"] * 1e-9 for r in ranks]
    frac = [m / w if w > 0 else 0.0 for m, w in zip(mpi, wall, strict=True)]
    imin = min(range(len(ranks)), key=lambda i: mpi[i])
    imax = max(range(len(ranks)), key=lambda i: mpi[i])
    names: dict[str, str] = {}
    for r in ranks:
        for name, f in r["functions"].items():
            names.setdefault(name, f["class"])
    functions: dict[str, Any] = {}
    for name in sorted(names):
        per = [r["functions"].get(name) for r in ranks]
        got = [f for f in per if f]
        hist: dict[int, list] = {}
        # bins carry the bytes of their calls as a 4th element since the library started
        # counting them; a rank file without them makes the merged bins 3 elements long
        with_bytes = all(len(e) > 3 for f in got for e in f["hist"])
        for f in got:
            for e in f["hist"]:
                h = hist.setdefault(int(e[0]), [0, 0.0, 0])
                h[0] += int(e[1])
                h[1] += e[2] * 1e-9
                if with_bytes:
                    h[2] += int(e[3])
        times = [(f["time_ns"] * 1e-9 if f else 0.0) for f in per]
        calls = [(f["calls"] if f else 0) for f in per]
        ncalls = sum(calls)
        functions[name] = {
            "class": names[name], "calls": ncalls, "time_s": sum(times),
            "min_call_s": min(f["min_ns"] for f in got) * 1e-9,
            "max_call_s": max(f["max_ns"] for f in got) * 1e-9,
            "mean_call_s": sum(times) / ncalls if ncalls else 0.0,
            **{k: sum(f[k] for f in got) for k in
               ("bytes_sent", "bytes_recv", "bytes_recv_posted", "recv_unknown")},
            "ranks_calling": sum(1 for c in calls if c),
            "time_per_rank_s": _stats(times), "per_rank_time_s": times,
            "per_rank_calls": calls,
            "hist": [[lo, c, t, b] if with_bytes else [lo, c, t]
                     for lo, (c, t, b) in sorted(hist.items())],
        }
    ovh = [float(r.get("overhead_ns_per_call", 0)) for r in ranks]
    ovhb = [float(r.get("overhead_bytes_ns_per_call", 0)) for r in ranks]
    ovhc = [float(r.get("overhead_coll_ns_per_call", 0)) for r in ranks]
    est = [r["estimated_overhead_ns"] * 1e-9 if "estimated_overhead_ns" in r
           else r["calls"] * o * 1e-9 for r, o in zip(ranks, ovh, strict=True)]
    return {
        "schema": SCHEMA, "version": SCHEMA_VERSION,
        "complete": all(r.get("complete") for r in ranks) and len(ranks) == size,
        "reason": ",".join(sorted({str(r.get("reason")) for r in ranks})),
        "merged_by": "mpibench (per-rank files)",
        "ranks_missing": [i for i in range(size) if i not in present],
        "mpi_library": r0.get("mpi_library", ""),
        "header_mpi_version": r0.get("header_mpi_version", ""),
        "ranks": size, "thread_level": r0.get("thread_level"),
        "recv_tracking": r0.get("recv_tracking"),
        "timer": {"source": r0.get("timer"), "ns_per_tick": r0.get("ns_per_tick")},
        "calls_total": sum(r["calls"] for r in ranks),
        "overhead": {"ns_per_call": _stats(ovh), "ns_per_call_with_bytes": _stats(ovhb),
                     "ns_per_call_collective": _stats(ovhc), "estimated_total_s": sum(est)},
        "wall_s": _stats(wall), "mpi_time_s": _stats(mpi, total=True),
        "mpi_fraction": _stats(frac),
        "most_loaded_rank": {"rank": present[imin], "mpi_s": mpi[imin],
                             "mpi_fraction": frac[imin]},
        "least_loaded_rank": {"rank": present[imax], "mpi_s": mpi[imax],
                              "mpi_fraction": frac[imax]},
        "per_rank": [{"rank": r["rank"], "host": r.get("host", ""), "pid": r.get("pid"),
                      "wall_s": w, "mpi_s": m, "mpi_fraction": fr, "calls": r["calls"],
                      "threads": r.get("threads"), "init_s": r.get("init_ns", 0) * 1e-9,
                      "overhead_ns_per_call": o, "reason": r.get("reason")}
                     for r, w, m, fr, o in zip(ranks, wall, mpi, frac, ovh, strict=True)],
        "functions": functions,
    }


# ---- store -----------------------------------------------------------------------------
def profile_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Result rows, so that profiles compare across np, nodes and variants like any other
    metric (mpibench compare / report / scaling, the pandas API):

    - "profile:MPI": mpi_time (us), mpi_fraction (ratio), calls;
    - "profile:<function>": mpi_time (us) and calls;
      samples: one per rank (that rank's sum over its calls, statistic "sum"), so a launch's
      statistic is the median (or mean) over its ranks;
    - "profile:sizes", size = lower bound of a log2 bin [size, 2 size) of the functions that
      move data (profile_data.is_message_function): messages, bytes, message_share,
      byte_share; one sample (the launch's total over its ranks)."""
    from mpibench import stats
    from mpibench.profile_data import size_buckets

    n = int(doc.get("ranks") or 0)
    rows = []

    def row(bench: str, samples: list[float], metric: str, unit: str, extra: dict) -> dict:
        return {"benchmark": bench, "np": n, "metric": metric, "unit": unit, "better": "lower",
                "statistic": "sum", **stats.summarize(samples), "samples": samples,
                "extra": extra}

    per_rank = doc.get("per_rank") or []
    rows.append(row("profile:MPI", [r["mpi_s"] * 1e6 for r in per_rank], "mpi_time", "us",
                    {"total_us": doc["mpi_time_s"]["total"] * 1e6,
                     "calls": doc.get("calls_total")}))
    rows.append(row("profile:MPI", [r["mpi_fraction"] for r in per_rank], "mpi_fraction",
                    "ratio", {"wall_s": doc.get("wall_s")}))
    rows.append(row("profile:MPI", [float(r["calls"]) for r in per_rank], "calls", "calls",
                    {"total": doc.get("calls_total")}))
    for name, f in doc.get("functions", {}).items():
        rows.append(row(f"profile:{name}", [float(c) for c in f["per_rank_calls"]], "calls",
                        "calls", {"class": f["class"], "total": f["calls"]}))
        rows.append(row(f"profile:{name}", [t * 1e6 for t in f["per_rank_time_s"]],
                        "mpi_time", "us",
                        {"class": f["class"], "calls": f["calls"], "total_us": f["time_s"] * 1e6,
                         "bytes_sent": f["bytes_sent"], "bytes_recv": f["bytes_recv"],
                         "bytes_recv_posted": f["bytes_recv_posted"],
                         "recv_unknown": f["recv_unknown"], "hist": f["hist"],
                         "per_rank_calls": f["per_rank_calls"]}))
    sizes = size_buckets(doc, None)
    for b in sizes["buckets"]:
        for metric, unit in (("messages", "calls"), ("bytes", "B"), ("message_share", "ratio"),
                             ("byte_share", "ratio")):
            r = row("profile:sizes", [float(b[metric])], metric, unit,
                    {"bucket": b["bucket"], "top_function": b["top_function"],
                     "bytes_exact": sizes["bytes_exact"]})
            r["size"] = b["lo"]
            rows.append(r)
    return rows


def new_run_id() -> str:
    return f"profile-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def store_profile(store, run: ProfileRun, *, label: str | None = None,
                  run_id: str | None = None) -> str:
    """Record a profiled run: campaign "profiles", the profile document, per-function rows."""
    from mpibench import fingerprint

    run_id = run_id or new_run_id()
    stack_d = run.stack.to_dict() if hasattr(run.stack, "to_dict") else {}
    fp = fingerprint.collect(stack=stack_d, launcher_argv=run.argv,
                             env={**os.environ, **run.env},
                             extra={"profiler": True})
    finished = time.time()
    with store.transaction():
        cid = store.add_campaign(CAMPAIGN)
        fid = store.add_fingerprint(fp)
        store.create_run(run_id, cid, label or run.stack.name, source="profile", label=label,
                         argv_json=run.launched, run_dir=str(run.out_dir), fingerprint_id=fid,
                         started=finished - run.result.elapsed, params={"np": run.doc and
                                                                         run.doc.get("ranks")})
        if run.doc:
            store.set_profile(run_id, run.doc)
            store.add_results(run_id, profile_rows(run.doc))
        reason = None
        if run.status != "done":
            why = "timed out" if run.result.timed_out else f"exit {run.result.returncode}"
            part = (f"; partial profile ({run.doc.get('reason')})" if run.doc
                    else f"; {run.error}")
            reason = why + part
        store.set_run(run_id, run.status, exit_code=run.result.returncode, finished=finished,
                      elapsed=run.result.elapsed, reason=reason,
                      stderr_tail=run.result.stderr_tail())
    return run_id


def load_profile(store, run_id: str) -> dict[str, Any]:
    """A stored profile by run id, or the latest profile of a variant/label of that name."""
    from mpibench.store.queries import profile_document, recent_profiles

    doc = profile_document(store, run_id)
    if doc is None:
        raise UsageError(f"{run_id!r}: no profile run or label in {store.path}; recent: "
                         f"{', '.join(recent_profiles(store)) or 'none'}")
    return json.loads(doc)


# ---- report ----------------------------------------------------------------------------
def bin_label(lo: int) -> str:
    """Histogram bin [lo, 2*lo) bytes, lo a power of two; bin 0 is exactly 0 bytes."""
    if lo == 0:
        return "0 B"
    if lo == 1:
        return "1 B"
    return f"{fmt_pow2(lo)} - <{fmt_pow2(2 * lo)}"


_COARSE = object()  # the default bucket edges (profile_data.COARSE_EDGES)


def render_report(doc: Mapping[str, Any], console=None, *, top: int = 10,
                  max_ranks: int = 32, buckets: Any = _COARSE) -> None:
    """Human report: time in MPI overall and per rank, top functions by time and by calls,
    message sizes per function and over all functions (buckets: edges from
    profile_data.parse_buckets; None = log2 bins), the profiler's own overhead."""
    from rich.table import Table

    from mpibench.termsafe import SafeConsole

    con = console or SafeConsole()
    funcs = doc.get("functions", {})
    mpi = doc["mpi_time_s"]
    frac = doc["mpi_fraction"]
    state = "complete" if doc.get("complete") else f"PARTIAL ({doc.get('reason')})"
    nr = doc.get("ranks")
    con.print(f"[bold]MPI profile[/bold]: {nr} rank{'' if nr == 1 else 's'}, "
              f"{doc.get('mpi_library')} "
              f"(mpi.h {doc.get('header_mpi_version')}), {state}")
    if doc.get("ranks_missing"):
        con.print(f"  ranks with no data: {doc['ranks_missing']}")
    con.print(f"  wall time per rank {fmt_seconds(doc['wall_s']['mean'])}; time in MPI "
              f"{100 * frac['mean']:.1f}% on average (min {100 * frac['min']:.1f}%, "
              f"max {100 * frac['max']:.1f}%), {fmt_seconds(mpi['total'])} over all ranks, "
              f"{doc.get('calls_total')} calls")
    ml, ll = doc.get("most_loaded_rank"), doc.get("least_loaded_rank")
    if ml and ll:
        con.print(f"  most loaded rank {ml['rank']} (least MPI time, "
                  f"{100 * ml['mpi_fraction']:.1f}%); least loaded rank {ll['rank']} "
                  f"({100 * ll['mpi_fraction']:.1f}% in MPI)")

    t = Table(title="Time in MPI per rank", title_justify="left")
    for c in ("rank", "host", "wall", "MPI", "MPI %", "calls", "threads"):
        t.add_column(c, justify="left" if c == "host" else "right")
    per = doc.get("per_rank", [])
    for r in per[:max_ranks]:
        t.add_row(str(r["rank"]), str(r.get("host", "")), fmt_seconds(r["wall_s"]),
                  fmt_seconds(r["mpi_s"]), f"{100 * r['mpi_fraction']:.1f}", str(r["calls"]),
                  str(r.get("threads", "")))
    if len(per) > max_ranks:
        t.add_row("...", f"{len(per) - max_ranks} more", "", "", "", "", "")
    con.print(t)

    total = mpi["total"] or 1e-30

    def ftable(title: str, key) -> None:
        tb = Table(title=title, title_justify="left")
        for c in ("function", "class", "calls", "time", "% MPI", "per call", "rank min",
                  "rank max", "sent", "received"):
            tb.add_column(c, justify="left" if c in ("function", "class") else "right")
        for name, f in sorted(funcs.items(), key=key)[:top]:
            recv = fmt_bytes(f["bytes_recv"])
            if f["recv_unknown"]:
                recv += f" (+{f['recv_unknown']} unknown, {fmt_bytes(f['bytes_recv_posted'])} posted)"
            tb.add_row(name, f["class"], str(f["calls"]), fmt_seconds(f["time_s"]),
                       f"{100 * f['time_s'] / total:.1f}", fmt_seconds(f["mean_call_s"]),
                       fmt_seconds(f["time_per_rank_s"]["min"]),
                       fmt_seconds(f["time_per_rank_s"]["max"]),
                       fmt_bytes(f["bytes_sent"]), recv)
        con.print(tb)

    fam: dict[str, list[float]] = {}
    for f in funcs.values():
        a = fam.setdefault(f["class"], [0, 0.0, 0, 0, 0])
        a[0] += f["calls"]
        a[1] += f["time_s"]
        a[2] += f["bytes_sent"]
        a[3] += f["bytes_recv"]
        a[4] += f["recv_unknown"]
    ft = Table(title="Time in MPI by family", title_justify="left")
    for c in ("family", "calls", "time", "% MPI", "sent", "received", "unknown-size recvs"):
        ft.add_column(c, justify="left" if c == "family" else "right")
    for cls, (calls, tsec, sent, recv, unk) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        ft.add_row(cls, str(calls), fmt_seconds(tsec), f"{100 * tsec / total:.1f}",
                   fmt_bytes(sent), fmt_bytes(recv), str(unk))
    con.print(ft)
    ftable(f"Top {top} functions by time", lambda kv: -kv[1]["time_s"])
    ftable(f"Top {top} functions by calls", lambda kv: -kv[1]["calls"])

    sized = [(n, f) for n, f in funcs.items()
             if f["bytes_sent"] or f["bytes_recv"] or f["bytes_recv_posted"]]
    if sized:
        h = Table(title="Message sizes per function (bytes moved by the rank in one call; "
                        "log2 bins)", title_justify="left")
        for c in ("function", "size", "calls", "% calls", "time", "% time"):
            h.add_column(c, justify="left" if c in ("function", "size") else "right")
        for name, f in sorted(sized, key=lambda kv: -kv[1]["time_s"])[:top]:
            first = True
            for lo, calls, tsec, *_ in f["hist"]:
                h.add_row(name if first else "", bin_label(lo), str(calls),
                          f"{100 * calls / max(f['calls'], 1):.1f}", fmt_seconds(tsec),
                          f"{100 * tsec / (f['time_s'] or 1e-30):.1f}")
                first = False
        con.print(h)
    from mpibench.profile_data import COARSE_EDGES, render_buckets

    render_buckets(doc, con, COARSE_EDGES if buckets is _COARSE else buckets)
    o = doc.get("overhead", {})
    npc = o.get("ns_per_call", {}).get("mean", 0.0)
    npb = o.get("ns_per_call_with_bytes", {}).get("mean", 0.0)
    npcoll = o.get("ns_per_call_collective", {}).get("mean", 0.0)
    est = o.get("estimated_total_s", 0.0)
    wall_total = sum(r["wall_s"] for r in per) or 1e-30
    con.print(f"profiler overhead (measured at MPI_Init): {npc:.1f} ns per call, {npb:.1f} ns "
              f"with byte counting, {npcoll:.1f} ns per collective; estimated {fmt_seconds(est)} in total = "
              f"{100 * est / total:.3f}% of the MPI time, {100 * est / wall_total:.4f}% of the "
              "run time")
