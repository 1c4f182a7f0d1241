"""Run one cell: a variant (stack + transport + settings) launching a program in a run directory.

Three narrow steps, so the local runner and batch schedulers share them:

  prepare_cell(stack, variant, program, run_dir) -> CellCommand   (pure: argv + env + files)
  run_local(cmd, timeout[, complete])            -> CommandResult (writes stdout/stderr files)
  ingest_core(cmd, result)                       -> CellOutcome   (parse JSONL, fingerprint)

A batch job runs the same CellCommand argv from its script and the harness calls ingest_core on
the files it left behind.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench import fingerprint
from mpibench.errors import UsageError
from mpibench.files import write_file
from mpibench.launchers import LaunchSpec, get_launcher
from mpibench.parsers.core_jsonl import CoreOutput, parse_core_jsonl
from mpibench.process import CommandResult, run_command, run_until_complete
from mpibench.stacks import Stack
from mpibench.stacks.kinds import preset
from mpibench.units import byte_count

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
PROGRAM_PLACEHOLDER = "<program>"
_root_notice_shown = False


@dataclass
class Variant:
    """One configuration to measure. Campaign files and CLI flags both produce these."""

    name: str
    stack: str
    transport: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    mca: dict[str, str] = field(default_factory=dict)
    launcher: str | None = None  # registry name; default from the stack
    launcher_args: list[str] = field(default_factory=list)
    np: int = 2
    ppn: int | None = None
    nodes: int | None = None
    hosts: list[str] | None = None
    hostfile: str | None = None
    bind: str | None = None
    map_by: str | None = None
    profile: bool = False
    cpus_per_task: int | None = None  # cores per rank (threads of a hybrid code)
    # the network interface(s) the traffic between nodes must use ("eth-fast", "ib0";
    # comma-separated for several), pinned through the stack kind's own settings
    interface: str | None = None

    def transport_request(self) -> str | None:
        """What the run asks of its transport, as stored and judged: the preset name, with
        "@interface" when an interface is pinned ("tcp@eth-fast", "@eth-fast")."""
        if self.interface:
            return f"{self.transport or ''}@{self.interface}"
        return self.transport

    def to_dict(self) -> dict[str, Any]:
        # keys added later are left out while unset, so cell ids of existing campaigns
        # (hashed over this dict) do not change
        return {k: v for k, v in self.__dict__.items()
                if not (k in _LATER_KEYS and v is None)}


_LATER_KEYS = ("cpus_per_task", "interface")


@dataclass
class CellCommand:
    argv: list[str]
    env: dict[str, str]  # added on top of the harness environment
    run_dir: Path
    stdout: Path
    stderr: Path
    jsonl: Path | None
    fingerprint_argv: list[str]  # argv with the program replaced by a placeholder
    variant: Variant
    stack: Stack


@dataclass
class CellOutcome:
    status: str  # done, failed, timeout
    reason: str | None
    records: list[dict[str, Any]]
    fingerprint: dict[str, Any]
    header: dict[str, Any]
    exit_code: int | None
    elapsed: float
    stderr_tail: str


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def root_env_notice() -> str | None:
    """Open MPI refuses root without two variables; we set them and say so once."""
    global _root_notice_shown
    if running_as_root() and not _root_notice_shown:
        _root_notice_shown = True
        return ("note: running as root, so mpibench sets OMPI_ALLOW_RUN_AS_ROOT=1 and "
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 for Open MPI launches")
    return None


def resolve_settings(stack: Stack, variant: Variant) -> tuple[dict[str, str], dict[str, str]]:
    """(env, mca) for the ranks: transport preset first, the variant's own settings on top."""
    env: dict[str, str] = dict(stack.env)
    mca: dict[str, str] = {}
    p = preset(stack.kind, variant.transport, stack.library_version)
    if p is not None:
        env.update(p.env)
        mca.update(p.mca)
    if variant.interface:
        pin = stack.kind_class.interface_settings(variant.interface, stack.library_version)
        env.update(pin.env)
        mca.update(pin.mca)
    if variant.cpus_per_task and "OMP_NUM_THREADS" not in variant.env:
        # a rank given c cores runs c OpenMP threads unless the variant says otherwise
        env["OMP_NUM_THREADS"] = str(variant.cpus_per_task)
    env.update({str(k): str(v) for k, v in variant.env.items()})
    if variant.mca and not stack.kind_class.accepts_mca:
        raise UsageError(f"variant {variant.name!r}: MCA parameters are Open MPI settings but "
                         f"stack {stack.name!r} is {stack.kind}; use env instead")
    mca.update({str(k): str(v) for k, v in variant.mca.items()})
    return env, mca


def prepare_cell(stack: Stack, variant: Variant, program: list[str], run_dir: Path, *,
                 jsonl: Path | None = None, local: bool = True, create: bool = True
                 ) -> CellCommand:
    """create=False: the run directory is not made (a dry run shows the command only)."""
    if variant.np < 1:
        raise UsageError(f"variant {variant.name!r}: np must be >= 1, got {variant.np}")
    run_dir = Path(run_dir).resolve()
    if jsonl is not None:
        jsonl = Path(jsonl).resolve()
    if create:
        run_dir.mkdir(parents=True, exist_ok=True)
    env, mca = resolve_settings(stack, variant)
    launcher = get_launcher(variant.launcher or stack.launcher_kind)
    oversub = (local and stack.kind_class.oversubscribe_flag and not variant.hosts and not variant.hostfile
               and variant.np > (os.cpu_count() or 1))
    spec = LaunchSpec(np=variant.np, program=list(program), env=env, mca=mca, ppn=variant.ppn,
                      hosts=variant.hosts, hostfile=variant.hostfile, bind=variant.bind,
                      map_by=variant.map_by, oversubscribe=oversub,
                      cpus_per_task=variant.cpus_per_task, nodes=variant.nodes,
                      extra=list(variant.launcher_args))
    argv = launcher.argv(stack.launcher, spec)
    if local:  # a batch job script loads the stack's modules itself, before every step
        argv = stack.command(argv)
    placeholder = LaunchSpec(**{**spec.__dict__, "program": [PROGRAM_PLACEHOLDER]})
    fp_argv = launcher.argv(stack.launcher, placeholder)
    full_env = launcher.launcher_env(spec)
    if running_as_root():
        full_env.update(stack.kind_class.root_env)
    return CellCommand(argv=argv, env=full_env, run_dir=run_dir, stdout=run_dir / "stdout.txt",
                       stderr=run_dir / "stderr.txt", jsonl=jsonl, fingerprint_argv=fp_argv,
                       variant=variant, stack=stack)


# The cell-level completion rule. The core's output is complete once its footer is written
# (core/driver.c writes it, closes the file, then calls MPI_Finalize; the watchdog writes
# one before it exits): its JSON Lines file's last line is then the footer, written exactly
# like this. The launcher then has CORE_FINALIZE_GRACE_S to exit by itself (a normal
# MPI_Finalize and launcher teardown, and the profiler's write at MPI_Finalize, take well
# under that even on a loaded machine) before it is stopped by its PID and the cell is
# ingested as its footer says, with a note (ingest_core); without a footer the launch times
# out as ever. The file is looked at once a second (a `tail` of its last line).
CORE_FOOTER_ERE = '^[{]"record":"footer"'
CORE_FINALIZE_GRACE_S = 10.0
CORE_WATCH_TICK_S = 1.0


def core_completion(cmd: CellCommand) -> Any:
    """The completion rule of a core launch (schedulers.StepCompletion): its footer."""
    from mpibench.schedulers import StepCompletion

    if cmd.jsonl is None:
        return None
    try:
        name = str(cmd.jsonl.relative_to(cmd.run_dir))
    except ValueError:
        name = str(cmd.jsonl)
    return StepCompletion(CORE_FOOTER_ERE, 1, "core's footer", grace_s=CORE_FINALIZE_GRACE_S,
                          file=name, tick_s=CORE_WATCH_TICK_S)


def stopped_note(seconds: float) -> str:
    """The reason of a launch stopped after its output was complete."""
    return (f"launcher stopped {seconds:.0f} s after the core's output was complete (its "
            "footer written): it had not exited, hung in MPI_Finalize or its teardown; the "
            "results are whole")


def run_local(cmd: CellCommand, timeout: float | None, complete: Any = None) -> CommandResult:
    """Launch a cell's command here. complete (a schedulers.StepCompletion, with a timeout):
    the launch ends once its output is complete, by the rule a batch job's step follows
    (the core's footer, the probe ranks' reports), here in this process
    (process.run_until_complete: no shell, no process more than the launch itself): a
    launcher that hangs after that (MPI_Finalize) is stopped by its PID after the grace,
    says so on its stderr.txt and leaves STOPPED_FILE, as the job script's lines do."""
    from mpibench.schedulers import STOPPED_FILE, stopped_record

    write_file(cmd.run_dir / "command.json", json.dumps(
        {"argv": cmd.argv, "env": cmd.env, "variant": cmd.variant.to_dict(),
         "stack": cmd.stack.name}, indent=2))
    (cmd.run_dir / STOPPED_FILE).unlink(missing_ok=True)
    if complete is None or not timeout:
        return run_command(cmd.argv, env=cmd.env, cwd=cmd.run_dir, timeout=timeout,
                           stdout_path=cmd.stdout, stderr_path=cmd.stderr)
    watched = cmd.run_dir / complete.file if complete.file else cmd.stdout
    res = run_until_complete(cmd.argv, env=cmd.env, cwd=cmd.run_dir, timeout=timeout,
                             stdout_path=cmd.stdout, stderr_path=cmd.stderr,
                             complete_at=lambda: complete_at(complete, watched),
                             grace=complete.grace_s, tick=complete.tick_s)
    if res.stopped_after is not None:
        note = complete.stopped_note(res.pid) + "\n"
        with open(cmd.stderr, "a") as fh:
            fh.write(note)
        res.stderr += note
        now = time.time()
        write_file(cmd.run_dir / STOPPED_FILE,
                   stopped_record(now - res.stopped_after, now))
    return res


# how much of a watched file's end is read for its last lines (the core's footer is ~70 B)
_TAIL_BYTES = 65536


def complete_at(c: Any, path: Path) -> float | None:
    """When the output at path held what the StepCompletion c asks for (the file's last
    write, epoch seconds), or None while it does not: `count` distinct lines matching its
    pattern, among the file's last `count` lines when c watches a file (c.file), else
    anywhere in it (the launch's stdout). Python's re reads these patterns as awk does."""
    try:
        st = path.stat()
        with open(path, "rb") as fh:
            skip = c.file is not None and st.st_size > _TAIL_BYTES
            if skip:
                fh.seek(st.st_size - _TAIL_BYTES)
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    if skip:
        lines = lines[1:]                      # the first may be cut
    if c.file is not None:
        lines = lines[-c.count:]
    rx = re.compile(c.pattern)
    return st.st_mtime if len({ln for ln in lines if rx.search(ln)}) >= c.count else None


def cell_fingerprint(cmd: CellCommand, header: Mapping[str, Any] | None = None
                     ) -> dict[str, Any]:
    header = header or {}
    env = dict(os.environ)
    env.update(cmd.env)
    rph = header.get("ranks_per_host")
    o = oversubscribed(cmd.variant, ranks_per_host=rph if isinstance(rph, Mapping) and len(
        rph) == 1 and all(isinstance(x, int) for x in rph.values()) else None)
    # only when it happened: other fingerprints (and their ids) are unchanged
    over = {"oversubscribed": o} if o else {}
    return fingerprint.collect(
        stack=cmd.stack.to_dict(), launcher_argv=cmd.fingerprint_argv, env=env,
        hosts=header.get("hosts"), ranks_per_host=header.get("ranks_per_host"),
        binding=cmd.variant.bind or _shared_host_binding(cmd),
        extra={"np": cmd.variant.np, "transport_requested": cmd.variant.transport,
               "library_version_runtime": header.get("mpi_library_version"),
               **core_fingerprint(header), **over},
    )


def oversubscribed(variant: Variant, cores: int | None = None,
                   ranks_per_host: Mapping[str, int] | None = None) -> dict[str, int] | None:
    """{"ranks": r, "cores": c} when a launch on this machine puts more ranks than cores on
    it (None otherwise, and for launches across hosts or nodes, whose cores are not ours)."""
    if variant.hosts or variant.hostfile or (variant.nodes or 1) > 1:
        return None
    if ranks_per_host and set(ranks_per_host) != {socket.gethostname()}:
        return None  # the ranks ran on another machine: its cores are not os.cpu_count()
    cores = cores or os.cpu_count() or 1
    ranks = max(ranks_per_host.values()) if ranks_per_host else variant.np
    return {"ranks": int(ranks), "cores": int(cores)} if ranks > cores else None


def _shared_host_binding(cmd: CellCommand) -> str | None:
    """A batch step whose allocation put several nodes on one host ran Open MPI without its
    default binding (schedulers.slurm.shared_host_lines): the fingerprint says so."""
    if cmd.stack.kind_class.binds_by_default and (cmd.run_dir / "shared_host").exists():
        return "none (nodes share a host)"
    return None


def core_fingerprint(header: Mapping[str, Any]) -> dict[str, Any]:
    """{"core_options": ...}: what the core says it measured with (its header), limited to
    FINGERPRINT_CORE_OPTIONS; empty when there is no core header (applications)."""
    opts = header.get("options")
    if not isinstance(opts, Mapping):
        return {}
    core = {k: opts.get(k) for k in FINGERPRINT_CORE_OPTIONS}
    # settle only when on, as the 'oversubscribed' key: a --no-settle launch hashes to the
    # same fingerprint id as the launches stored before settling (the store keeps the id
    # taken at ingest, from core_options without the key), so they pool byte for byte
    if opts.get("settle"):
        core["settle"] = True
    # --exclude-preempted leaves some samples out of the statistic (a time slice no longer
    # sets a median): not the same launch statistic, so only when on, as settle
    if opts.get("exclude_preempted"):
        core["exclude_preempted"] = True
    # page-aligned buffers (core 60f7893) changed what a sample measures where malloc'd send
    # and receive buffers aliased mod 4 KiB: only when stated, so launches of the cores
    # before it (no key) keep their fingerprint and never pool with the aligned core's
    if opts.get("buffer_align"):
        core["buffer_align"] = opts["buffer_align"]
    return {"core_options": core}


def ingest_core(cmd: CellCommand, result: CommandResult | None, *,
                exit_code: int | None = None, timed_out: bool = False,
                elapsed: float = 0.0, stopped_after: float | None = None) -> CellOutcome:
    """Turn a finished core launch (local result, or a batch job's files) into an outcome.
    Whatever the core managed to write is kept, even when the launch failed.
    stopped_after: the launcher was stopped that many seconds after the core's output was
    complete (core_completion): its exit status is that of the stop, so the run is judged
    by the footer's status (the core's own exit status: 0 ok, 1 failed or timeout), and the
    reason says what happened."""
    if result is not None:
        exit_code, timed_out, elapsed = result.returncode, result.timed_out, result.elapsed
        stderr = result.stderr
    else:
        stderr = cmd.stderr.read_text(errors="replace") if cmd.stderr.exists() else ""
    tail = "\n".join(stderr.rstrip().splitlines()[-20:])
    parsed = CoreOutput(header={}, records=[], footer=None, problems=[])
    if cmd.jsonl is not None and cmd.jsonl.exists():
        parsed = parse_core_jsonl(cmd.jsonl.read_text(errors="replace"), source=str(cmd.jsonl))
    fp = cell_fingerprint(cmd, parsed.header)
    records = parsed.records
    launcher_exit = exit_code
    stopped = stopped_after is not None and not timed_out and parsed.footer is not None
    if stopped:
        exit_code = 0 if parsed.footer.get("status") == "ok" else 1
    if timed_out:
        status, reason = "timeout", "the launch exceeded its time limit and was killed"
        if parsed.footer is not None and parsed.footer.get("status") == "ok":
            # the footer is written just before MPI_Finalize: every size was measured, then
            # the library or launcher never let the ranks exit (seen with MPICH 4.0.2 over
            # UCX tcp, docs/schedulers.md); the rows are kept, the run is still not pooled
            reason += (" after the core had written all its results (footer ok): "
                       "MPI_Finalize or the launcher did not return")
    elif any(r.get("status") == "timeout" for r in records):
        status = "timeout"
        reason = _watchdog_reason(next(r for r in records if r.get("status") == "timeout"))
    elif exit_code != 0:
        status = "failed"
        bad = [r for r in records if r.get("status") == "validation_failed"]
        if bad:
            reason = f"validation failed: {bad[0]['benchmark']} size {bad[0]['size']}: " \
                     f"{bad[0].get('reason') or ''}".rstrip(": ")
        else:
            reason = f"exit status {exit_code}: {_key_error_line(stderr)}"
    elif cmd.jsonl is not None and not parsed.header:
        status, reason = "failed", "the core wrote no results (" + \
            ("; ".join(parsed.problems) or "empty output") + ")"
    else:
        status, reason = "done", None
    if parsed.problems and status == "done":
        reason = "; ".join(parsed.problems)
    swapped = library_swapped(cmd.stack, parsed.header.get("mpi_library_version"))
    if swapped and status == "done":
        status, reason = "failed", swapped
    if stopped:
        note = stopped_note(stopped_after)
        reason = f"{reason}; {note}" if reason else note
    return CellOutcome(status=status, reason=reason, records=records, fingerprint=fp,
                       header=parsed.header, exit_code=launcher_exit, elapsed=elapsed,
                       stderr_tail=tail)


def library_swapped(stack: Stack, runtime: str | None) -> str | None:
    """Why the library the ranks loaded is not the stack's (a module, LD_LIBRARY_PATH or a
    launcher from another install swapped it), or None. Results of another library must not
    be stored under this stack's name and version."""
    if not runtime or not stack.library_version:
        return None
    from mpibench.stacks.kinds import kind_from_version

    want, got = kind_from_version(stack.library_version), kind_from_version(runtime)
    if got[0] == "unknown" or want[0] == "unknown":
        same = runtime.strip().splitlines()[:1] == stack.library_version.strip().splitlines()[:1]
    else:
        same = got == want
    if same:
        return None
    first = (runtime.strip().splitlines() or ["?"])[0][:80]
    return (f"the ranks ran another MPI library than stack {stack.name!r} "
            f"({want[0]} {want[1]}): MPI_Get_library_version says {first!r}")


def _watchdog_reason(rec: Mapping[str, Any]) -> str:
    """'watchdog: PingPong size 1024 did not finish within --timeout 2 s (stage: ...)'. The
    core's reason already starts with 'watchdog:' (said once here) and names no benchmark."""
    text = (rec.get("reason") or "did not finish within its timeout").strip()
    text = re.sub(r"^watchdog:\s*", "", text)
    text = re.sub(r"^size\s+", "", text)
    return f"watchdog: {rec.get('benchmark', '?')} size {rec.get('size', '?')} {text}"


def _key_error_line(stderr: str) -> str:
    """The line of a launcher's stderr that says what went wrong (Open MPI wraps errors in
    banners of dashes; the program's own message is the useful part)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().strip("-")]
    for ln in lines:
        if ln.startswith("mpibench-core:") or "error" in ln.lower():
            return ln
    return lines[-1] if lines else "no error output"


THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")
SYNC_MODES = ("auto", "barrier", "window")


@dataclass(frozen=True)
class CoreOption:
    """One core option a campaign (`options = {...}`) and `mpibench run` pass on, as the
    core's own table says it (core/args.c, `mpibench-core --list-options`; a system test in
    tests/core/test_parts.py holds the two equal): `name` is the long option with '_' for
    '-', `type` one of number, integer, bytes, choice, flag; bounds inclusive; `default` what
    the core does without it (None: off, or derived at run time)."""

    name: str
    type: str
    min: float | int | None = None
    max: float | int | None = None
    default: Any = None
    choices: tuple[str, ...] = ()
    what: str = ""  # the unit or purpose, after the form in an error message

    @property
    def form(self) -> str:
        """What an error message asks for."""
        if self.type == "flag":
            return "true or false"
        if self.type == "choice":
            return "one of " + ", ".join(self.choices)
        if self.type == "bytes":
            return self.what
        hi = self.max
        hi_text = f"2^{hi.bit_length() - 1}" if isinstance(hi, int) and hi >= 2**20 \
            and hi.bit_count() == 1 else f"{hi:g}"
        noun = "an integer" if self.type == "integer" else "a number"
        return f"{noun} >= {self.min:g} and <= {hi_text} ({self.what})"


CORE_OPTION_TABLE = (
    CoreOption("target", "number", 1e-6, 1000, 5.0, what="CI half-width, %"),
    CoreOption("max_time", "number", 0, 1e6, 0.05, what="seconds per size"),
    CoreOption("iterations", "integer", 1, 2**40, what="fixed count per size"),
    CoreOption("iterations_volume", "bytes", 1, 2**63 - 1,
               what="bytes such as 40M or 41943040 (with iterations)"),
    CoreOption("timeout", "number", 0.001, 1e7, 60.0, what="watchdog per size, seconds"),
    CoreOption("mem_limit", "bytes", 1, 2**63 - 1,
               what="bytes per rank such as 512M, 2G or 1073741824"),
    CoreOption("thread_level", "choice", default="single", choices=THREAD_LEVELS),
    CoreOption("sync", "choice", default="auto", choices=SYNC_MODES),
    CoreOption("no_validate", "flag", default=False),
    CoreOption("no_settle", "flag", default=False),
    CoreOption("off_cache", "flag", default=False),
    CoreOption("root_shift", "flag", default=False),
    CoreOption("futility", "flag", default=False),
    CoreOption("accept_approximate", "flag", default=False),
    CoreOption("per_call", "flag", default=False),
    CoreOption("exclude_preempted", "flag", default=False),
    CoreOption("preempted_max_time", "number", 0, 1e6,
               what="seconds per size with exclude_preempted; default 10 x max_time"),
    CoreOption("state_ms", "number", 0, 1000, 1.0,
               what="ms of the machine-state reading at the launch's start and end; 0: none"),
)
_BY_NAME = {o.name: o for o in CORE_OPTION_TABLE}
# name -> the form an error message asks for
CORE_OPTIONS = {o.name: o.form for o in CORE_OPTION_TABLE}
# The on/off options (flags on the command line, booleans in a campaign file).
BOOL_CORE_OPTIONS = tuple(o.name for o in CORE_OPTION_TABLE if o.type == "flag")
# What the core does without the option, for the cross-checks below.
_CORE_DEFAULT_MAX_TIME = _BY_NAME["max_time"].default
_CORE_DEFAULT_TIMEOUT = _BY_NAME["timeout"].default
# Header options that change what one sample measures. Runs that differ in these are not
# the same measurement, so they are part of the fingerprint (and never pooled). Options
# that only decide how long to sample (target, max_time, min/max samples, futility), which
# sizes are skipped (mem_limit), the watchdog and the untimed validation pass are not.
FINGERPRINT_CORE_OPTIONS = ("mode", "iterations", "iterations_volume", "thread_level",
                            "off_cache", "root_shift", "sync", "batch_us", "warmup",
                            "per_call")
# and "settle": true when the core settled (core_fingerprint): a core before settling
# (2026-11-26) never settled, so its launches pool with --no-settle ones


def parse_bytes(value: Any) -> int | None:
    """512, "512", "4K", "2GiB" -> bytes in the core's grammar (units.byte_count: ASCII
    digits, K/M/G/T = 2^10..2^40 with an optional iB); None if malformed, below 1 or beyond
    the core's 64-bit range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and (b := byte_count(value)) is not None:
        n = b
    else:
        return None
    return n if 1 <= n < 2**63 else None


def check_core_options(options: Mapping[str, Any], fail: Callable[[str, str, str], Any],
                       spell: Callable[[str], str] = str) -> dict[str, Any]:
    """Validate core options before anything runs, the way the core would (so a launch never
    dies of exit 2). `fail(name, problem, expected)` raises; names are CORE_OPTIONS keys;
    `spell` writes an option's name in messages (campaign key or command-line flag).
    Returns the options with normalised values (bytes as integers), None values dropped."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if name not in CORE_OPTIONS:
            fail(name, "unknown core option", "one of " + ", ".join(CORE_OPTIONS))
        opt = _BY_NAME[name]
        form, bad = opt.form, f"got {value!r}"
        if opt.type == "flag":
            if not isinstance(value, bool):
                fail(name, bad, form)
        elif opt.type == "bytes":
            value = parse_bytes(value)
            if value is None or not opt.min <= value <= opt.max:
                fail(name, bad, form)
        elif opt.type == "choice":
            if value not in opt.choices:
                fail(name, bad, form)
        elif opt.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not opt.min <= value <= opt.max:
                fail(name, bad, form)
        else:  # number
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not opt.min <= value <= opt.max:
                fail(name, bad, form)
            value = float(value)
        out[name] = value
    it, vol, mt, to = (spell(k) for k in ("iterations", "iterations_volume", "max_time",
                                          "timeout"))
    if out.get("iterations_volume") and not out.get("iterations"):
        fail("iterations_volume", f"needs {it} (the fixed count it caps)",
             f"{it} as well (IMB's rule: {it} 1000 with {vol} 40M)")
    if not out.get("iterations"):
        max_time = out.get("max_time", _CORE_DEFAULT_MAX_TIME)
        timeout = out.get("timeout", _CORE_DEFAULT_TIMEOUT)
        _check_preempt_cap(out, fail, spell)
        if timeout <= max_time:
            name = "timeout" if "timeout" in out else "max_time"
            fail(name, f"the watchdog {to} ({timeout:g} s"
                 + ("" if "timeout" in out else ", the core's default")
                 + f") is not longer than {mt} ({max_time:g} s), so it would end every size "
                 "that uses its budget", f"{to} > {mt}, with a margin")
    return out


def preempt_cap(options: Mapping[str, Any]) -> float | None:
    """How long the core may sample one size with exclude_preempted (its
    --preempted-max-time, default 10 x --max-time); None without the option."""
    if not options.get("exclude_preempted"):
        return None
    max_time = options.get("max_time", _CORE_DEFAULT_MAX_TIME)
    return options.get("preempted_max_time") or 10.0 * max_time


def _check_preempt_cap(out: Mapping[str, Any], fail: Callable[[str, str, str], Any],
                       spell: Callable[[str], str]) -> None:
    """exclude_preempted's cap: not below max_time, and the watchdog beyond it (the core
    refuses both with exit 2)."""
    cap = preempt_cap(out)
    if cap is None:
        return
    mt, to, pm = (spell(k) for k in ("max_time", "timeout", "preempted_max_time"))
    if cap < out.get("max_time", _CORE_DEFAULT_MAX_TIME):
        fail("preempted_max_time", f"{cap:g} s is shorter than {mt}", f"{pm} >= {mt}")
    if out.get("timeout", _CORE_DEFAULT_TIMEOUT) <= cap:
        fail("timeout", f"the watchdog {to} is not longer than {pm} ({cap:g} s), which "
             f"{spell('exclude_preempted')} may sample one size for", f"{to} > {cap:g}")


def core_args(benchmarks: list[str], sizes: str | None, jsonl: Path,
              options: Mapping[str, Any] | None = None) -> list[str]:
    """Arguments for mpibench-core. options maps long option names (without --) to values;
    True means a bare flag, None/False omit it."""
    args: list[str] = []
    if sizes:
        args += ["--sizes", str(sizes)]
    for k, v in (options or {}).items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        args += [flag] if v is True else [flag, str(v)]
    args += ["--jsonl", str(jsonl), "--quiet"]
    return args + list(benchmarks)
