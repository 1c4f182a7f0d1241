"""`benchmarks = [...]`: the mpibench core's benchmarks, its sizes and its options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpibench.benchmarks import canonical_benchmarks, parse_sizes
from mpibench.campaign.group_kinds import GroupKind, Prepared, register_group_kind
from mpibench.campaign.spec import Group, _Ctx, _exclude, group_common, group_variants
from mpibench.errors import UsageError
from mpibench.execute import (
    CORE_OPTIONS,
    check_core_options,
    core_args,
    core_completion,
    prepare_cell,
)
from mpibench.schedulers import JobStep


@register_group_kind("core")
class CoreKind(GroupKind):
    marker = "benchmarks"
    marker_help = "'benchmarks' (core benchmarks)"
    keys = ("benchmarks", "sizes", "options", "timeout", "variants", "repeats", "exclude")
    reason_from_exit = False
    core_options = True

    def parse(self, c: _Ctx, key, name, gdef, path, variants, vbase) -> list[Group]:
        g = Group(name=name, kind=self.name)
        group_common(c, key, gdef, g, vbase)
        benches = c.str_list(gdef["benchmarks"], f"{key}.benchmarks")
        try:
            g.benchmarks = canonical_benchmarks(benches)
        except UsageError as exc:
            c.fail(f"{key}.benchmarks", str(exc))
        if "sizes" in gdef:
            g.sizes = c.string(gdef["sizes"], f"{key}.sizes")
            try:
                parse_sizes(g.sizes)
            except UsageError as exc:
                c.fail(f"{key}.sizes", str(exc))
        opts = c.table(gdef.get("options", {}), f"{key}.options")
        c.known(opts, f"{key}.options", tuple(CORE_OPTIONS))
        # bytes are stored as integers, so "1G" and 1073741824 are one cell definition
        g.options = check_core_options(
            opts, lambda name, problem, expected: c.fail(f"{key}.options.{name}", problem,
                                                         expected))
        g.exclude = _exclude(c, key, gdef.get("exclude", []), {},
                             group_variants(g, variants, vbase), vbase)
        return [g]

    def definition(self, g: Group) -> dict[str, Any]:
        return {"kind": "core", "benchmarks": g.benchmarks, "sizes": g.sizes,
                "options": g.options}

    def check(self, runner, g: Group) -> None:
        """The core built for each stack (a dry run shows the build cache's path)."""
        from mpibench.build import artifact_path, build_component

        for v in runner._variants_of(g):
            if v.stack in runner.binaries:
                continue
            stack = runner.stacks[v.stack]
            if runner.dry:
                runner.binaries[v.stack] = artifact_path(stack, "core")
            else:
                runner.log(f"mpibench-core for {stack.name}: checking the build cache ...")
                runner.binaries[v.stack] = build_component(stack, "core")

    def prepare(self, runner, cell, run_dir: Path, *, local: bool, options=None):
        """options: the core options of this launch when they differ from the group's
        (budget = "auto" sets --target); not part of the cell id, as they only decide how
        long the core samples."""
        g = cell.group
        jsonl = run_dir / "core.jsonl"
        opts = dict((g.options if options is None else options) or {})
        # repeats = "decide": a later launch runs only its point's undecided sizes
        # (auto_repeats.launch_options); the cell's id and keys do not change
        sizes = opts.pop("sizes", None) or g.sizes
        # the core's own machine-state reading (core/state.c) only where a gate reads it:
        # elsewhere (machine_probe = "off", np != 2, unbound ranks, a batch scheduler) it
        # would cost up to its 300 ms cap per reading on oversubscribed CPUs, unread
        if "state_ms" not in opts and not runner.reads_machine_state(cell):
            opts["state_ms"] = 0
        program = [str(runner.binaries[cell.variant.stack]),
                   *core_args(g.benchmarks, sizes, jsonl, opts)]
        cmd = prepare_cell(runner.stacks[cell.variant.stack], cell.variant, program, run_dir,
                           jsonl=jsonl, local=local, create=not runner.dry)
        runner._profile(cell, cmd)
        step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                       timeout_s=g.timeout or runner.spec.timeout, cell=cmd,
                       # complete once the footer is written: a launcher then hung in
                       # MPI_Finalize costs the grace, not the cell's timeout
                       complete=core_completion(cmd))
        return Prepared(cell, cmd, step)
