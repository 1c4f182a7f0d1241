"""The serial policy: the local backend runs one cell at a time on this machine, in plan
order; Ctrl-C stops the launch and leaves its cell pending for `resume`. Part of
CampaignRunner (campaign/runner.py) as its policy object."""

from __future__ import annotations

import os
import shutil
import socket
import time
from typing import TYPE_CHECKING

from mpibench.campaign.auto_repeats import Stages, launch_options
from mpibench.campaign.budget import BudgetRule
from mpibench.campaign.machine_probe import (
    RETRIES,
    Attempt,
    MachineGate,
    probe_extra,
    reads_own_state,
    write_raw,
)
from mpibench.campaign.plan import Cell
from mpibench.files import durable_together, write_file
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
        budget = BudgetRule(self.runner, campaign_id) if self.runner.spec.budget else None
        for stage in (stages(todo) if stages else [todo]):
            for cell in stage:
                self._run_local_cell(cell, launch_options(self.runner, cell, budget, stages))
                summary.ran += 1
        if stages:
            summary.auto_skipped += stages.skipped

    def _run_local_cell(self, cell: Cell, options: dict | None = None) -> None:
        self.runner._tick(cell.label)
        if self.runner.verify:
            self.runner._verify_variant(cell.variant)
        gate = self.runner.machine_gate(cell)
        aside: list[Attempt] = []
        # the launch's files are flushed together when the block ends, before the commit
        # (files.durable_together)
        with durable_together() as unsynced:
            for attempt in range(RETRIES + 1):
                p, sr, probed = self._launch(cell, options, gate, attempt)
                if gate is None or gate.keeps(probed, attempt):
                    break
                # its raw output too (the set-aside attempt's provenance), before its
                # directory is renamed aside
                unsynced.add(p.cmd.stdout, p.cmd.stderr, p.cmd.jsonl)
                unsynced.sync()
                self._set_aside(cell, p.step.run_dir, probed, aside,
                                gate.reference(probed.reader))
            # the raw output the launched program wrote (never through write_file): in the
            # same pass, so a committed launch's provenance survives a crash of the machine
            unsynced.add(p.cmd.stdout, p.cmd.stderr, p.cmd.jsonl)
            outcome = self.runner.ingest(p, sr)
            if gate is not None:
                extra = probe_extra(probed, gate.judge(probed), gate.reference(probed.reader),
                                    aside)
                for rec in outcome.records:
                    rec.setdefault("extra", {})["machine_probe"] = extra
        self.runner.commit(p, outcome)

    def _set_aside(self, cell: Cell, run_dir, probed: Attempt, aside: list[Attempt],
                   ref: float | None) -> None:
        """Keep the attempt's files beside the run directory, note it, and say so."""
        dest = run_dir.with_name(f"{run_dir.name}.set-aside-{len(aside) + 1}")
        if dest.exists():
            shutil.rmtree(dest)
        run_dir.rename(dest)
        aside.append(probed)
        self.runner.log(f"{cell.label}: launch set aside (machine-state probe before/after "
                        f"{_show_ns(probed.before)}/{_show_ns(probed.after)} ns, the "
                        f"campaign's reference {ref:.0f}"
                        " ns); running it again")

    def _launch(self, cell: Cell, options: dict | None, gate: MachineGate | None,
                attempt: int = 0):
        """One attempt: prepare, launch (its machine state read when a gate applies: by the
        launch itself, or by probes before and after it; MachineGate.start / finish)."""
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
        probed = None
        if gate is not None:
            own = reads_own_state(p.cmd.jsonl, cell.group.options if options is None
                                  else options)
            probed = gate.start(own, attempt)
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
        if probed is not None:
            gate.finish(probed, p.cmd.jsonl, sr.elapsed)
            source = "launch" if probed.reading == "launch" else "probe"
            gate.record(cell.id, "before", probed.before, source)
            gate.record(cell.id, "after", probed.after, source)
            write_raw(run_dir, probed)
        return p, sr, probed


def _show_ns(r) -> str:
    return f"{r.median_ns:.0f}" if r is not None else "?"
