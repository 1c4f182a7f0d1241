"""The local backend: run each step now, in this process, through the command runner.

It records exit status and timing in the run directory exactly as a batch job script does
(see schedulers.job_body), so a run directory looks the same whichever backend produced it,
and it writes that script as job.sh so a user can re-run a cell by hand.
"""

from __future__ import annotations

import json
import time

from mpibench.execute import ROOT_ENV, run_local, running_as_root
from mpibench.files import write_file
from mpibench.process import CommandResult, run_command
from mpibench.schedulers import (
    EXIT_STATUS_FILE,
    STEP_TIMEOUT_EXIT,
    TIMING_FILE,
    JobRequest,
    JobStep,
    Scheduler,
    StepResult,
    job_body,
    register_scheduler,
)


@register_scheduler("local")
class LocalScheduler(Scheduler):
    batch = False

    def render_script(self, req: JobRequest) -> str:
        return "#!/bin/bash\n# mpibench: the cell's commands, as a job script would run them\n" \
               + job_body(req)

    def run_step(self, step: JobStep) -> StepResult:
        """Setup commands, then the launch; the result is also kept on self.last_result
        (the CommandResult of the launch, None when setup failed)."""
        # (and STOPPED_FILE: run_local, which writes it, removes an old one)
        (step.run_dir / EXIT_STATUS_FILE).unlink(missing_ok=True)
        started = time.time()
        self.last_result: CommandResult | None = None
        self.last_setup: CommandResult | None = None
        deadline = time.monotonic() + step.timeout_s if step.timeout_s else None
        env = dict(ROOT_ENV) if running_as_root() else {}
        env.update(step.setup_env)
        for argv in step.setup:
            left = None if deadline is None else max(0.1, deadline - time.monotonic())
            res = run_command(argv, env=env, cwd=step.run_dir, timeout=left)
            _append(step.run_dir / "setup.out", res.stdout)
            _append(step.run_dir / "setup.err", res.stderr)
            self.last_setup = res
            if not res.ok:
                return self._finish(step, started, None, res.returncode, res.timed_out,
                                    None)
        left = None if deadline is None else max(0.1, deadline - time.monotonic())
        launch_started = time.time()
        if step.cell is not None:
            res = run_local(step.cell, timeout=left, complete=step.complete)
        else:
            res = run_command(step.argv, env=step.env, cwd=step.run_dir, timeout=left,
                              stdout_path=step.stdout, stderr_path=step.stderr)
        self.last_result = res
        return self._finish(step, started, launch_started, res.returncode, res.timed_out,
                            res.stopped_after)

    @staticmethod
    def _finish(step: JobStep, started: float, launch_started: float | None, rc: int,
                timed_out: bool, stopped_after: float | None) -> StepResult:
        finished = time.time()
        code = STEP_TIMEOUT_EXIT if timed_out else rc
        write_file(step.run_dir / TIMING_FILE, json.dumps(
            {"started": started, "launch_started": launch_started, "finished": finished})
            + "\n")
        write_file(step.run_dir / EXIT_STATUS_FILE, f"{code}\n")
        # stopped_after: a step with a completion rule whose launcher run_local stopped
        return StepResult(exit_code=rc, timed_out=timed_out, elapsed=finished - started,
                          started=started, finished=finished, launch_started=launch_started,
                          stopped_after=None if timed_out else stopped_after)


def _append(path, text: str) -> None:
    """Created even when empty, as a job script's `>>setup.out 2>>setup.err` does."""
    with open(path, "a") as fh:
        fh.write(text)
