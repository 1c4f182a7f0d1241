"""In-memory campaigns for `mpibench run` and `mpibench demo`.

The command line's variants x one core group x repeats becomes a CampaignSpec that the one
campaign runner executes, so an ad-hoc comparison gets what a campaign file gets: the transport
verified with the stack's own diagnostics, cells that are crash-safe (a Ctrl-C or SIGKILL
leaves no `running` row behind once the same command is run again), interleaved launches.

Each invocation is an *instance*: its launches are its own cells (the instance goes into the
cell ids), so `--name X` given again after a finished run adds launches beside the earlier
ones, while the same command after an interrupted run resumes that run's unfinished launches.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from mpibench.campaign.spec import CampaignSpec, Group
from mpibench.errors import UsageError
from mpibench.execute import Variant
from mpibench.schedulers import SchedulerSettings
from mpibench.stacks import Stack, find_stack
from mpibench.stacks.kinds import preset
from mpibench.store import Store

# The campaign "file" of an ad-hoc run: never read, it names the run in the store (campaigns
# are (name, file)) and its directory holds the run directories and the campaign lock.
ADHOC_FILE = "mpibench-run"


def adhoc_campaign(name: str, variants: list[Variant], benchmarks: list[str], sizes: str,
                   options: dict[str, Any], repeats: int, timeout: float, run_root: Path,
                   instance: str, auto: Any = None, equivalence: float | None = None,
                   machine_probe: str = "record") -> CampaignSpec:
    """One core group over the variants, repeated `repeats` times, interleaved; with `auto`
    (an auto_repeats.AutoRepeats, e.g. until = "decided") the campaign's staged rule
    instead, up to its maximum, and `equivalence` its margin; `machine_probe` as the
    campaign key (campaign/machine_probe.py; `mpibench demo`'s A/A: "gate")."""
    if repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {repeats}")
    names = [v.name for v in variants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"variant names must be unique; repeated: {', '.join(dupes)}")
    for v in variants:
        if v.np < 1:
            raise UsageError(f"--np must be >= 1, got {v.np}")
    group = Group(name="core", kind="core", benchmarks=list(benchmarks), sizes=sizes,
                  options={k: v for k, v in options.items() if v is not None})
    return CampaignSpec(
        path=(Path(run_root) / ADHOC_FILE).resolve(), name=name,
        repeats=auto.max if auto is not None else repeats, auto=auto, equivalence=equivalence,
        order="interleaved", seed=None, timeout=timeout, verify_transport=True,
        variants=list(variants), variant_keys={v.name: f"variant {v.name!r}" for v in variants},
        variant_base={v.name: v.name for v in variants}, groups=[group],
        scheduler=SchedulerSettings(), instance=instance, machine_probe=machine_probe)


def instance_for(store: Store, name: str, run_root: Path) -> str:
    """The instance to run: the previous invocation's when it left launches unfinished (the
    same command resumes it), else a new one."""
    previous = store.unfinished_instance(name, str((Path(run_root) / ADHOC_FILE).resolve()))
    if previous:
        return previous
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"


def check_variants(variants: list[Variant], found: list[Stack]) -> dict[str, Stack]:
    """The command line's variants against the stacks found, in the command line's words
    (the campaign runner's own check names campaign-file keys)."""
    stacks: dict[str, Stack] = {}
    for v in variants:
        stack = stacks.get(v.stack) or find_stack(v.stack, found)
        stacks[v.stack] = stack
        # raises UsageError for a transport the stack lacks
        preset(stack.kind, v.transport, stack.library_version)
        if v.mca and not stack.kind_class.accepts_mca:
            raise UsageError(f"--mca applies to Open MPI only; stack {stack.name!r} is "
                             f"{stack.kind} (use --env for MPICH CVARs / UCX_* settings)")
    return stacks
