"""The serial policy: the local backend runs one cell at a time on this machine, in plan
order; Ctrl-C stops the launch and leaves its cell pending for `resume`. Part of
CampaignRunner (campaign/runner.py) as its policy object."""

from __future__ import annotations

import os
import socket
import time
from typing import TYPE_CHECKING

from mpibench.campaign.auto_repeats import Stages
from mpibench.campaign.plan import Cell
from mpibench.files import write_file
from mpibench.process import kill_orphans
from mpibench.schedulers import (
    JobRequest,
)

if TYPE_CHECKING:
    from mpibench.campaign.runner import CampaignRunner, Summary

# a cell the local backend runs: its job id names this harness, not a scheduler's job
LOCAL_JOB_PREFIX = "local:"


class LocalPolicy:
    """The serial policy of a CampaignRunner: it holds the runner and runs its cells one at
    a time, in plan order, stage by stage under repeats = "auto" / "decide"."""

    def __init__(self, runner: CampaignRunner) -> None:
        self.runner = runner

    def run(self, todo: list[Cell], summary: Summary, *, campaign_id: int,
            reattach: list[tuple[str, list[str]]], by_id: dict[str, Cell]) -> None:
        self._run_local(todo, summary, campaign_id)

    def _run_local(self, todo: list[Cell], summary, campaign_id: int) -> None:
        # repeats = "auto" / "decide" (campaign/auto_repeats.py): the cells in stages, the
        # launches the rule finds unnecessary left pending
        stages = Stages(self.runner, campaign_id) if self.runner.spec.auto else None
        budget = _Budget(self.runner, campaign_id) if self.runner.spec.budget else None
        for stage in (stages(todo) if stages else [todo]):
            for cell in stage:
                self._run_local_cell(cell, budget.options(cell) if budget else None)
                summary.ran += 1
        if stages:
            summary.auto_skipped += stages.skipped

    def _run_local_cell(self, cell: Cell, options: dict | None = None) -> None:
        self.runner._tick(cell.label)
        if self.runner.verify:
            self.runner._verify_variant(cell.variant)
        run_dir = self.runner._fresh_dir(cell)
        p = self.runner.prepare(cell, run_dir, local=True, options=options)
        self.runner._write_cell_json(p)
        write_file(run_dir / "job.sh", self.runner.scheduler.render_script(
            JobRequest(name=cell.id, steps=[p.step], run_dir=run_dir)))
        with self.runner.store.transaction():
            self.runner.store.delete_results(cell.id)
            self.runner.store.set_run(cell.id, "running", started=time.time(), run_dir=str(run_dir),
                               harness=self.runner.harness,
                               argv_json=p.cmd.argv, scheduler=self.runner.scheduler.name,
                               job_id=f"{LOCAL_JOB_PREFIX}{socket.gethostname()}:{os.getpid()}",
                               reason=None, stderr_tail=None, exit_code=None, finished=None,
                               elapsed=None, fingerprint_id=None)
        try:
            sr = self.runner.scheduler.run_step(p.step)
        except KeyboardInterrupt:
            # Ctrl-C: the launch runs in its own session, so stop it here and leave the cell
            # pending for `resume` (a SIGKILL skips this; resume then does the same)
            kill_orphans(run_dir)
            with self.runner.store.transaction():
                self.runner.store.delete_results(cell.id)
                self.runner.store.set_run(cell.id, "pending", job_id=None, started=None)
            raise
        outcome = self.runner.ingest(p, sr)
        self.runner.commit(p, outcome)


class _Budget:
    """budget = "auto" (stats/budget.py) for the local scheduler: once a core group has two
    finished rounds, its launches' variance components (between-launch spread, the core's
    within-launch CI, seconds per sample and per launch) fix the core's --target and
    --max-time for its later launches, the pair that minimises the launch time to decide
    every cell (planned for equivalence within the campaign's margin, else 5%). One look
    per group; a group that sets `target` or `max_time` itself keeps its options. The
    first two rounds run at the group's options."""

    PILOT = 2

    def __init__(self, runner, campaign_id: int):
        self.runner, self.cid = runner, campaign_id
        self.chosen: dict[str, dict | None] = {}

    def options(self, cell: Cell) -> dict | None:
        g = cell.group
        own = g.options or {}
        if not g.kind_class.core_options or cell.repeat < self.PILOT or "target" in own \
                or "max_time" in own:
            return None
        if g.name not in self.chosen:
            self.chosen[g.name] = self._plan(g.name)
        t = self.chosen[g.name]
        return None if t is None else {**own, **t}

    def _plan(self, group: str) -> dict | None:
        from mpibench.stats import budget
        from mpibench.store.report_queries import done_runs_of_group, launch_cost_rows

        ids = [r["id"] for r in done_runs_of_group(self.runner.store, self.cid, group)]
        sides = list(budget.components_from_rows(
            launch_cost_rows(self.runner.store, ids)).values())
        margin = self.runner.spec.equivalence or 0.05
        p = budget.plan(sides, margin, equivalence=True) if len(sides) >= 2 else None
        if p is None:
            self.runner.log(f"budget = auto: group {group}: no two variants with two "
                            "launches each; the group's own options stay")
            return None
        self.runner.log(f"budget = auto: group {group}: {p.describe()}")
        return p.best.options()
