"""Ad-hoc comparisons (`mpibench run`, `mpibench demo`): variants x repeats of the core.

Everything that can be checked is checked before the store is touched: stacks exist, the
transport applies to the stack, the core builds. Launches are interleaved across variants
(repeat 1 of every variant, then repeat 2, ...) because the same stack can differ from one
mpirun to the next; one launch per variant decides nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.build import build_component
from mpibench.errors import UsageError
from mpibench.execute import Variant, core_args, ingest_core, prepare_cell, run_local
from mpibench.stacks import Stack, find_stack
from mpibench.store import Store
from mpibench.transports import preset


@dataclass
class Plan:
    variants: list[Variant]
    stacks: dict[str, Stack]
    binaries: dict[str, Path]
    benchmarks: list[str]
    sizes: str
    core_options: dict[str, Any]
    repeats: int
    launch_timeout: float
    order: list[tuple[int, Variant]] = field(default_factory=list)


def make_plan(variants: list[Variant], found: list[Stack], benchmarks: list[str], sizes: str,
              core_options: dict[str, Any], repeats: int, launch_timeout: float,
              on_build: Callable[[Stack], None] | None = None) -> Plan:
    if repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {repeats}")
    names = [v.name for v in variants]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise UsageError(f"variant names must be unique; repeated: {', '.join(sorted(dupes))}")
    stacks: dict[str, Stack] = {}
    for v in variants:
        if v.np < 1:
            raise UsageError(f"--np must be >= 1, got {v.np}")
        stack = stacks.get(v.stack) or find_stack(v.stack, found)
        stacks[v.stack] = stack
        preset(stack.kind, v.transport)  # raises UsageError for a transport the stack lacks
        if v.mca and stack.kind != "openmpi":
            raise UsageError(f"--mca applies to Open MPI only; stack {stack.name!r} is "
                             f"{stack.kind} (use --env for MPICH CVARs / UCX_* settings)")
    binaries: dict[str, Path] = {}
    for name, stack in stacks.items():
        if on_build:
            on_build(stack)
        binaries[name] = build_component(stack, "core")
    order = [(r, v) for r in range(repeats) for v in variants]
    return Plan(variants, stacks, binaries, benchmarks, sizes, core_options, repeats,
                launch_timeout, order)


def run_id_for(campaign: str, variant: Variant, repeat: int, invocation: str) -> str:
    """One id per launch of one invocation: a comparison name given again (`--name`) adds
    that invocation's launches beside the earlier ones instead of writing into their runs."""
    blob = json.dumps([campaign, variant.to_dict(), repeat, invocation], sort_keys=True,
                      default=str)
    return "r-" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def execute_plan(plan: Plan, store: Store, run_root: Path, campaign_name: str,
                 progress: Callable[[int, int, str], None] | None = None
                 ) -> dict[str, list[str]]:
    """Run every launch; returns {variant name: [run ids]}. Failed launches are stored as
    failed runs (with reason and stderr tail), never dropped."""
    spec = {"benchmarks": plan.benchmarks, "sizes": plan.sizes, "repeats": plan.repeats,
            "core_options": plan.core_options, "variants": [v.to_dict() for v in plan.variants]}
    campaign_id = store.add_campaign(campaign_name, spec)
    run_root = Path(run_root).resolve()  # launches run with cwd = their run directory
    invocation = f"{time.time_ns()}-{os.getpid()}"
    groups: dict[str, list[str]] = {v.name: [] for v in plan.variants}
    total = len(plan.order)
    for i, (repeat, variant) in enumerate(plan.order):
        run_id = run_id_for(campaign_name, variant, repeat, invocation)
        groups[variant.name].append(run_id)
        if progress:
            progress(i, total, f"{variant.name} repeat {repeat + 1}/{plan.repeats}")
        store.create_run(run_id, campaign_id, variant.name, grp="core", repeat=repeat,
                         spec=variant.to_dict(), seq=i,
                         transport_requested=variant.transport)
        run_dir = run_root / run_id
        jsonl = run_dir / "core.jsonl"
        stack = plan.stacks[variant.stack]
        program = [str(plan.binaries[variant.stack]),
                   *core_args(plan.benchmarks, plan.sizes, jsonl, plan.core_options)]
        cmd = prepare_cell(stack, variant, program, run_dir, jsonl=jsonl)
        store.set_run(run_id, "running", started=time.time(), run_dir=str(run_dir),
                      argv_json=cmd.argv)
        result = run_local(cmd, timeout=plan.launch_timeout)
        outcome = ingest_core(cmd, result)
        with store.transaction():
            fid = store.add_fingerprint(outcome.fingerprint)
            store.add_results(run_id, outcome.records)
            store.set_run(run_id, outcome.status, reason=outcome.reason,
                          stderr_tail=outcome.stderr_tail, exit_code=outcome.exit_code,
                          finished=time.time(), elapsed=outcome.elapsed, fingerprint_id=fid)
    if progress:
        progress(total, total, "done")
    return groups
