"""The job scripts a campaign would run, for `campaign run --dry-run --show-scripts`: every
cell prepared as the run would prepare it (launcher argv, environment, modules, directives,
the transport probe step), rendered by the campaign's scheduler backend, and grouped into the
distinct scripts with the cells that use each. Nothing is run, built or written: the core,
the probe and the profiler are shown at the build-cache paths the run would use, and peer
programs still to be built from source by a placeholder.

Two cells' scripts differ at least in their cell ids (job name, run directory); those are
replaced by `<cell>` (`<cell1>`, `<cell2>` ... in a job of several cells) before comparing,
so the repeats of one variant and parameter point share one script."""

from __future__ import annotations

from dataclasses import dataclass, field

from mpibench.campaign.auto_repeats import Stages
from mpibench.campaign.plan import Cell, expand
from mpibench.campaign.runner import CampaignRunner
from mpibench.campaign.spec import CampaignSpec
from mpibench.schedulers import JobRequest, JobStep
from mpibench.stacks import Stack

CELL_TOKEN = "<cell>"


@dataclass
class Script:
    text: str
    cells: list[Cell] = field(default_factory=list)


class DryRunner(CampaignRunner):
    """A runner that prepares cells without side effects (CellSteps.dry: the group kinds'
    `check` then shows the core at its build-cache path and a peer program still to be built
    from source by a placeholder)."""

    dry = True

    def _probe_step(self, cell: Cell) -> JobStep | None:
        from mpibench.verify import probe_step

        return probe_step(self.stacks[cell.variant.stack], cell.variant,
                          self.run_dir(cell) / "verify", self.spec.timeout,
                          name=f"{cell.id}-verify", dry=True)


def _normalise(text: str, cells: list[Cell]) -> str:
    if len(cells) == 1:
        return text.replace(cells[0].id, CELL_TOKEN)
    for i, c in enumerate(cells, 1):
        text = text.replace(c.id, f"<cell{i}>")
    return text


def job_scripts(spec: CampaignSpec, stacks: list[Stack], *, verify: bool | None = None,
                seed: int = 0) -> list[Script]:
    """The distinct scripts of the campaign's jobs in plan order, each with its cells.
    Batch backends: one script per job (grouped cells as the run groups them), with the
    probe step when transports are verified. Local: the script the run writes into each
    cell's directory (job.sh); the local probe is a separate launch per variant, not part
    of it."""
    runner = DryRunner(spec, None, stacks, verify=verify)
    runner.check()
    cells = expand(spec, seed=seed)
    out: dict[str, Script] = {}
    if runner.scheduler.batch:
        # a staged campaign (repeats = "auto" / "decide") submits a stage's jobs at a time
        # (review s40 R9: the dry run grouped every round into one job a variant under
        # group_cells = 0, its time limit the sum of all of them)
        stages = Stages(runner, 0) if spec.auto else None
        runner.policy.stages = stages
        for _end, stage in (stages.cut(cells) if stages else [(None, cells)]):
            for group in runner.policy._job_requests(stage):
                req, _preps = runner.policy._request(group, fresh=False)
                text = _normalise(runner.scheduler.render_script(req), group)
                out.setdefault(text, Script(text)).cells.extend(group)
    else:
        for cell in cells:
            run_dir = runner.run_dir(cell)
            p = runner.prepare(cell, run_dir, local=True)
            text = _normalise(runner.scheduler.render_script(
                JobRequest(name=cell.id, steps=[p.step], run_dir=run_dir)), [cell])
            out.setdefault(text, Script(text)).cells.append(cell)
    return list(out.values())


def describe_cells(cells: list[Cell], limit: int = 6) -> str:
    """'4 cells: ompi[nodes=1] / pingpong #1, ... (+1 more)'."""
    shown = ", ".join(c.label for c in cells[:limit])
    more = f" (+{len(cells) - limit} more)" if len(cells) > limit else ""
    return f"{len(cells)} cell{'s' if len(cells) != 1 else ''}: {shown}{more}"
