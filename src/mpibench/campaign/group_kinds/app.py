"""`command = "..."`: an application launched under the variant's launcher, with parameters,
setup and prepare commands, inputs and figures of merit read from its output."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from mpibench.campaign.cells import app_placement
from mpibench.campaign.group_kinds import GroupKind, Prepared, register_group_kind
from mpibench.campaign.spec import (
    BUILTIN_PLACEHOLDERS,
    Group,
    _Ctx,
    _derived,
    _distinct,
    _exclude,
    _foms,
    _prepare,
    _scalar,
    _show,
    _zips,
    group_common,
    group_variants,
    split_template,
    substitute,
)
from mpibench.execute import prepare_cell
from mpibench.parsers.fom import app_records
from mpibench.schedulers import JobStep


@register_group_kind("app")
class AppKind(GroupKind):
    marker = "command"
    marker_help = "'command' (an application)"
    keys = ("command", "params", "zip", "exclude", "setup", "inputs", "fom", "timeout",
            "variants", "repeats", "env", "prepare", "prepare_per", "derived")
    mpi = False  # it may run over its own network layer (stack = "none")

    def parse(self, c: _Ctx, key, name, gdef, path, variants, vbase) -> list[Group]:
        g = Group(name=name, kind=self.name)
        group_common(c, key, gdef, g, vbase)
        params = c.table(gdef.get("params", {}), f"{key}.params")
        for pk, pv in params.items():
            pkey = f"{key}.params.{pk}"
            if not re.match(r"^[A-Za-z_]\w*$", pk) or pk in BUILTIN_PLACEHOLDERS:
                c.fail(pkey, "bad parameter name",
                       "an identifier that is not one of " + ", ".join(BUILTIN_PLACEHOLDERS))
            values = pv if isinstance(pv, list) else [pv]
            if not values:
                c.fail(pkey, "empty list", "a value or a non-empty list of values")
            g.params[pk] = [_scalar(c, x, f"{pkey}[{i}]") for i, x in enumerate(values)]
        g.zips = _zips(c, f"{key}.zip", gdef.get("zip", {}), g.params, "parameter")
        _distinct(c, f"{key}.params", g.params, g.zips, "parameter")
        names = set(g.params) | set(BUILTIN_PLACEHOLDERS)
        g.command_text = gdef["command"] if isinstance(gdef["command"], str) else ""
        g.command = split_template(c, gdef["command"], f"{key}.command", names)
        setup = gdef.get("setup", [])
        if isinstance(setup, str):
            setup = [setup]
        if not isinstance(setup, list):
            c.fail(f"{key}.setup", f"got {_show(setup)}", "a command line or a list of them")
        g.setup = [split_template(c, s, f"{key}.setup[{i}]", names) for i, s in enumerate(setup)]
        _prepare(c, key, gdef, g)
        for i, inp in enumerate(c.str_list(gdef.get("inputs", []), f"{key}.inputs")):
            p = Path(inp) if Path(inp).is_absolute() else path.parent / inp
            try:
                there = p.exists()
            except OSError as exc:       # e.g. a name longer than NAME_MAX
                c.fail(f"{key}.inputs[{i}]", f"{_show(inp)}: {exc.strerror}",
                       "a file or directory, relative to the campaign file")
            if not there:
                c.fail(f"{key}.inputs[{i}]", f"{inp!r} does not exist (looked at {p})",
                       "a file or directory, relative to the campaign file")
            g.inputs.append(p.resolve())
        if "env" in gdef:
            g.env = c.str_map(gdef["env"], f"{key}.env", names="env")
        g.exclude = _exclude(c, key, gdef.get("exclude", []), g.params,
                             group_variants(g, variants, vbase), vbase)
        g.foms = _foms(c, f"{key}.fom", gdef.get("fom", "wall_time"))
        g.derived = _derived(c, f"{key}.derived", gdef.get("derived", []), g.foms)
        return [g]

    def definition(self, g: Group) -> dict[str, Any]:
        d = {"kind": "app", "command": g.command, "setup": g.setup,
             "inputs": [p.name for p in g.inputs], "env": g.env}
        if g.prepare:  # only when used: ids of groups without it stay as they were
            d.update(prepare=g.prepare, prepare_per=g.prepare_per)
        return d

    def prepare(self, runner, cell, run_dir: Path, *, local: bool, options=None):
        g, v = cell.group, cell.variant
        values = {**cell.params, "np": v.np, "nodes": v.nodes or 1, "ppn": v.ppn or "",
                  "variant": v.name, "stack": v.stack, "repeat": cell.repeat,
                  "run_dir": str(run_dir), "campaign_dir": str(runner.spec.directory)}
        argv = substitute(g.command, values)
        setup = [substitute(s, values) for s in g.setup]
        if g.prepare:
            setup.insert(0, runner._prepare_step(cell, values))
        variant = replace(v, env={**v.env, **g.env}) if g.env else v
        cmd = prepare_cell(runner.stacks[v.stack], variant, argv, run_dir, jsonl=None,
                           local=local, create=not runner.dry)
        runner._profile(cell, cmd)
        step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                       timeout_s=g.timeout or runner.spec.timeout, setup=setup,
                       setup_env=dict(g.env), cell=cmd)
        return Prepared(cell, cmd, step)

    def ingest(self, runner, p, sr, outcome, nodelist) -> None:
        """Figures of merit from the output (the wall time of the launch alone); the
        fingerprint names the command, and the placement as far as it is known."""
        g = p.cell.group
        outcome.fingerprint["application"] = {"command": g.command, "setup": g.setup,
                                              "env": g.env}
        if g.prepare:
            outcome.fingerprint["application"]["prepare"] = {
                "commands": g.prepare, "per": g.prepare_per,
                "dir": runner.prepare_dir(p.cell)[0].name}
        if not outcome.fingerprint.get("hosts"):
            # the core reports where its ranks ran; an application does not
            hosts, per_host = app_placement(p.cell.variant, runner.scheduler.batch, nodelist)
            outcome.fingerprint["hosts"] = hosts
            outcome.fingerprint["ranks_per_host"] = per_host
        outcome.records = []
        if outcome.status == "done":
            outcome.records, problem = app_records(p.cell, p.step.run_dir,
                                                   runner._launch_elapsed(p, sr))
            if problem:
                outcome.status, outcome.reason, outcome.records = "failed", problem, []
