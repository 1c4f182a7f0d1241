"""The batch policy: cells become jobs (one per cell, or grouped per variant), submitted up
to max_jobs_in_flight at a time and polled with back-off; a job's probe step verifies the
transport on its own allocation; finished jobs are ingested cell by cell. Part of
CampaignRunner (campaign/runner.py) as its policy object."""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mpibench.campaign.auto_repeats import Stages, launch_options
from mpibench.campaign.budget import BudgetRule
from mpibench.campaign.cells import _Prepared
from mpibench.campaign.plan import Cell, williams_row
from mpibench.files import write_file
from mpibench.schedulers import (
    EXIT_STATUS_FILE,
    JobRequest,
    JobStatus,
    SchedulerError,
    SchedulerQueryError,
    SubmissionUnknown,
    read_step_result,
)

if TYPE_CHECKING:
    from mpibench.campaign.runner import CampaignRunner, Summary


# what a time limit's signals leave: a launcher or program killed by (or exiting on) SIGTERM,
# SIGKILL, SIGHUP or SIGINT (128+n, or -n from a wait status), or saying so on stderr
_LIMIT_SIGNALS = (signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGINT)
_LIMIT_EXITS = {128 + s for s in _LIMIT_SIGNALS} | {-s for s in _LIMIT_SIGNALS}
_LIMIT_TEXT = re.compile(r"got SIGCONT|DUE TO TIME LIMIT|got SIGTERM|exited on signal 15")


def _stopped_by_the_limit(exit_code: int | None, stderr_tail: str | None) -> bool:
    return exit_code in _LIMIT_EXITS or bool(_LIMIT_TEXT.search(stderr_tail or ""))


def job_name(prefix: str, cells: list[Cell]) -> str:
    """The prefix and the first cell's id, +N for the other cells of a grouped job (the
    name recovery looks a lost job up by)."""
    return f"{prefix}-{cells[0].id}" + (f"+{len(cells) - 1}" if len(cells) > 1 else "")


# Named limits of the poll loop
MISSING_POLLS_DONE = 3      # polls a job may be missing from the queue, all steps written,
                            # before it counts as finished (a queue that forgot it early)
MISSING_POLLS_LOST = 10     # polls missing, steps not all written: the job is lost
IDLE_BACKOFF = 1.5          # the poll interval grows by this while no job finishes
QUERY_FAILURE_BACKOFF = 2.0  # ... and by this after a failed scheduler query
ENDING_CHECK_S = 0.2         # between polls, how often the jobs' last exit_status files are
ENDING_CHECK_PER_JOB_S = 0.004  # looked at (+ this per job in flight: 500 jobs, every 2 s)
UNSETTLED_POLLS = 4          # polls an ended job's incomplete record is asked again
UNSETTLED_WAIT_S = 0.5       # before the first of them, then twice as long each (7.5 s in
                             # all), at most poll_interval; other jobs are polled meanwhile


@dataclass
class _BatchState:
    """The poll loop's state: jobs to submit, jobs in flight, how long each has been missing
    from the queue, the queue state last written per job, the interval and query failures."""
    queue: list[list[Cell]]
    interval: float
    inflight: dict[str, tuple[JobRequest, list[_Prepared]]] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    seen: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    failures: int = 0
    ending: set[str] = field(default_factory=set)  # jobs whose last step has ended
    unsettled: dict[str, int] = field(default_factory=dict)  # ended, record incomplete: polls


class BatchPolicy:
    """The batch policy of a CampaignRunner: it holds the runner (store, scheduler, stacks,
    the cell steps) and owns the jobs: grouping cells into jobs, submitting, polling
    (_BatchState), judging each job's probe and settling its cells."""

    def __init__(self, runner: CampaignRunner) -> None:
        self.runner = runner
        self.stages: Stages | None = None
        self._submissions: int | None = None   # group_cells = 0: submissions so far

    def run(self, todo: list[Cell], summary: Summary, *, campaign_id: int,
            reattach: list[tuple[str, list[str]]], by_id: dict[str, Cell]) -> None:
        # repeats = "auto" / "decide" (campaign/auto_repeats.py): a stage's jobs all end
        # before the rule looks and the next stage is submitted
        stages = Stages(self.runner, campaign_id) if self.runner.spec.auto else None
        self.stages = stages
        self.budget = BudgetRule(self.runner, campaign_id) if self.runner.spec.budget else None
        followed = False
        if stages and reattach:
            # a stage's jobs re-attached (the harness ended while they were queued): they
            # end before the rule looks at the next stage's start, as in one invocation;
            # cutting the stages first made that look on the rounds before them (review
            # s40 R2: cells their launches decide ran one more stage)
            self._run_batch([], reattach, summary, by_id)
            followed = True
        for stage in (stages(todo) if stages else [todo]):
            self._run_batch(stage, [] if followed else reattach, summary, by_id)
            followed = True
        if not followed and reattach:
            self._run_batch([], reattach, summary, by_id)
        if stages:
            summary.auto_skipped += stages.skipped

    def _job_requests(self, cells: list[Cell]) -> list[list[Cell]]:
        n = self.runner.spec.scheduler.group_cells
        before = 0
        if n == 0 and cells:
            # group_cells = 0: a submission is one job a variant, so the turns go on by
            # submissions: counted within this invocation, inferred for its first one
            starts = stage_starts(self.stages.boundaries() if self.stages else [])
            before = (submissions_before(min(c.repeat for c in cells), starts)
                      if self._submissions is None else self._submissions)
            self._submissions = before + 1
        return job_groups(cells, n, [v.name for v in self.runner.spec.variants], before)

    def _job_name(self, cells: list[Cell]) -> str:
        return job_name(self.runner.spec.scheduler.job_name_prefix, cells)

    def _request(self, cells: list[Cell], fresh: bool) -> tuple[JobRequest, list[_Prepared]]:
        s = self.runner.spec.scheduler
        preps = []
        for cell in cells:
            run_dir = self.runner._fresh_dir(cell) if fresh else self.runner.run_dir(cell)
            opts = (launch_options(self.runner, cell, getattr(self, "budget", None),
                                   getattr(self, "stages", None)) if fresh else None)
            p = self.runner.prepare(cell, run_dir, local=False, options=opts)
            if fresh:
                self.runner._write_cell_json(p)
            preps.append(p)
        first = cells[0]
        v = first.variant
        limit = s.time_limit_s or (sum(p.step.timeout_s or self.runner.spec.timeout for p in preps)
                                   + 60.0)
        modules = list(s.modules)
        for m in self.runner.stacks[v.stack].modules:
            if m not in modules:
                modules.append(m)
        probe = self.runner._probe_step(first) if self.runner.verify else None
        steps = ([probe] if probe else []) + [p.step for p in preps]
        # np and ppn without nodes: the allocation needs ceil(np / ppn) nodes
        nodes = s.nodes or v.nodes or (-(-v.np // v.ppn) if v.ppn else None)
        req = JobRequest(name=self._job_name(cells), steps=steps, run_dir=self.runner.run_dir(first),
                         nodes=nodes, tasks_per_node=s.tasks_per_node or v.ppn,
                         time_limit_s=limit, settings=s, modules=modules,
                         cpus_per_task=v.cpus_per_task)
        return req, preps

    def _judge_probe(self, req: JobRequest, preps: list[_Prepared]) -> str | None:
        from mpibench.verify import judge, probe_launch_problem

        probe = next((s for s in req.steps if s.cell_id.endswith("-verify")), None)
        if probe is None:
            return None
        out, err = (f.read_text(errors="replace") if f.exists() else ""
                    for f in (probe.stdout, probe.stderr))
        text = out + err
        variant = preps[0].cell.variant
        # a probe that hung (exit 124) or never finished proves nothing by what it printed
        sr = read_step_result(probe)
        problem = probe_launch_problem(sr.exit_code, sr.timed_out, probe.timeout_s, out, err,
                                       variant.np)
        v = judge(self.runner.stacks[variant.stack], variant, text, probe.env, probe.run_dir,
                  problem or (None if text else "the probe step left no output"))
        self.runner.node_facts[variant.name] = v.node
        if v.verdict == "MISMATCH":
            self.runner.log(f"warning: variant {variant.name}: requested transport {v.requested!r} "
                     f"but the probe shows {v.actual}")
        return v.actual

    def _run_batch(self, todo: list[Cell], reattach: list[tuple[str, list[str]]],
                   summary: Summary, by_id: dict[str, Cell]) -> None:
        """Submit up to max_jobs_in_flight jobs, poll with back-off, ingest finished jobs,
        until every job has ended (the state is explicit: _BatchState)."""
        st = _BatchState(queue=self._job_requests(todo),
                         interval=self.runner.spec.scheduler.poll_interval_s)
        for job_id, ids in reattach:
            # plan order, as when submitted: the first cell's directory holds the probe
            st.inflight[job_id] = self._request(
                sorted((by_id[i] for i in ids), key=lambda c: c.seq), fresh=False)
            self.runner.log(f"re-attached to job {job_id} ({len(ids)} cell(s))")
        while st.queue or st.inflight:
            # a job that has ended and only waits for its record holds no nodes: its slot
            # is free for the next job
            while st.queue and len(st.inflight) - len(st.unsettled) < \
                    self.runner.spec.scheduler.max_jobs_in_flight:
                self._submit(st.queue.pop(0), st, summary)
            if st.inflight:
                self._poll_once(st)

    def _submit(self, cells: list[Cell], st: _BatchState, summary: Summary) -> None:
        """One job: its script written, its cells marked running, submitted; a refusal
        fails its cells with the scheduler's reason."""
        req, preps = self._request(cells, fresh=True)
        script = self.runner.scheduler.render_script(req)
        write_file(req.run_dir / "job.sh", script)
        with self.runner.store.transaction():
            for p in preps:
                self.runner.store.delete_results(p.cell.id)
                self.runner.store.set_run(p.cell.id, "running", started=time.time(),
                                   argv_json=p.cmd.argv, job_script=script,
                                   harness=self.runner.harness, scheduler=self.runner.scheduler.name,
                                   sched_state="submitting", job_id=None)
        try:
            job_id = self.runner.scheduler.submit(req)
        except SubmissionUnknown:
            raise  # cells stay `running` without a job id; resume settles them
        except SchedulerError as exc:
            # refused (bad partition, over a limit...): the cells fail with the reason
            with self.runner.store.transaction():
                for p in preps:
                    self.runner.store.set_run(p.cell.id, "failed", finished=time.time(),
                                       reason=f"job submission refused: {exc}",
                                       sched_state="refused")
            self.runner._done += len(preps)
            self.runner.log(f"{req.name}: submission refused: {exc}")
            return
        with self.runner.store.transaction():
            for p in preps:
                self.runner.store.set_run(p.cell.id, job_id=str(job_id), sched_state="submitted")
        st.inflight[str(job_id)] = (req, preps)
        summary.ran += len(cells)
        self.runner._tick(f"submitted {req.name} as job {job_id}")

    def _poll_once(self, st: _BatchState) -> None:
        """Wait one interval, ask the scheduler, settle the jobs that ended, record the
        queue states that changed; the interval backs off while nothing finishes."""
        s = self.runner.spec.scheduler
        self._wait_for_poll(st)
        try:
            states = self.runner.scheduler.poll(list(st.inflight))
            st.failures = 0
        except SchedulerQueryError as exc:
            st.failures += 1
            self.runner.log(f"scheduler query failed ({exc}); retry {st.failures}")
            st.interval = min(s.poll_max_interval_s, st.interval * QUERY_FAILURE_BACKOFF)
            return
        finished_any = False
        changed: list[tuple[str, tuple[str, str | None]]] = []
        for job_id in list(st.inflight):
            req, preps = st.inflight[job_id]
            status = self._job_status(st, job_id, req, states.get(job_id))
            if status is None:
                continue
            if not status.finished:
                # written only when it changes, all jobs in one transaction: 500 queued
                # jobs must not cost 500 commits per poll
                now = (status.raw or status.state, status.nodelist)
                if st.seen.get(job_id) != now:
                    st.seen[job_id] = now
                    changed += [(p.cell.id, now) for p in preps]
                continue
            if status.unsettled and st.unsettled.get(job_id, 0) < UNSETTLED_POLLS:
                # ended, but the scheduler's record may still say how (Slurm TIMEOUT
                # before slurmstepd's report): asked again at the next polls, in flight
                st.unsettled[job_id] = st.unsettled.get(job_id, 0) + 1
                continue
            finished_any = True
            del st.inflight[job_id]
            st.seen.pop(job_id, None)
            st.ending.discard(job_id)
            st.unsettled.pop(job_id, None)
            actual = self._judge_probe(req, preps)
            for p in preps:
                self._finish_batch_cell(p, status, actual)
        if changed:
            with self.runner.store.transaction():
                for cell_id, (state, nodes) in changed:
                    self.runner.store.set_run(cell_id, sched_state=state, nodelist=nodes)
        # a job whose steps have all ended is about to leave the queue: no back-off for it
        st.interval = s.poll_interval_s if finished_any or st.ending else \
            min(s.poll_max_interval_s, st.interval * IDLE_BACKOFF)
        if st.unsettled:   # (its jobs are in flight: they leave both together, above)
            # an ended job's record is asked again soon (0.5, 1, 2, 4 s), not backed off
            st.interval = min(s.poll_interval_s,
                              UNSETTLED_WAIT_S * 2 ** (min(st.unsettled.values()) - 1))

    def _wait_for_poll(self, st: _BatchState) -> None:
        """Wait until the next poll is due, or until a job in flight wrote the exit status
        of its last step: its script is ending, so the scheduler is asked now rather than up
        to poll_max_interval later (jobs in flight are replaced, and results ingested, as
        soon as they end). Each job cuts a wait short once."""
        check = ENDING_CHECK_S + ENDING_CHECK_PER_JOB_S * len(st.inflight)
        waited = 0.0
        while True:
            ending = {j for j, (req, _) in st.inflight.items() if j not in st.ending
                      and req.steps and (req.steps[-1].run_dir / EXIT_STATUS_FILE).exists()}
            if ending:
                st.ending |= ending
                return
            if waited >= st.interval:
                return
            step = min(check, st.interval - waited)
            time.sleep(step)
            waited += step

    def _job_status(self, st: _BatchState, job_id: str, req: JobRequest,
                    status: JobStatus | None) -> JobStatus | None:
        """The job's status, or for a job the queue no longer lists: finished once every
        step wrote its exit status (after MISSING_POLLS_DONE polls), lost after
        MISSING_POLLS_LOST; None while it is only missing."""
        if status is not None:
            st.missing.pop(job_id, None)
            return status
        st.missing[job_id] = n = st.missing.get(job_id, 0) + 1
        all_written = all((step.run_dir / "exit_status").exists() for step in req.steps)
        if n >= MISSING_POLLS_DONE and all_written:
            status = JobStatus("completed", 0, "finished (no longer in the queue)")
        elif n >= MISSING_POLLS_LOST:
            status = JobStatus("failed", None, "the scheduler no longer knows the job")
        else:
            return None
        st.missing.pop(job_id, None)
        return status

    def _finish_batch_cell(self, p: _Prepared, st: JobStatus, actual: str | None) -> None:
        sr = read_step_result(p.step, st)
        outcome = self.runner.ingest(p, sr, st.nodelist)
        if sr.exit_code is None:
            # the step never finished: the job died around it (time limit, node, cancel)
            outcome.status = "timeout" if st.state == "timeout" else "failed"
            outcome.reason = f"job ended {st.state}" + (f": {st.reason}" if st.reason else "")
            if st.state == "completed":
                outcome.reason = ("the job ended before this cell recorded its exit status "
                                  f"(scheduler state {st.raw or st.state}; see the scheduler's "
                                  "output files in the job directory)")
        elif st.state == "timeout" and outcome.status == "failed" and not sr.timed_out \
                and _stopped_by_the_limit(sr.exit_code, outcome.stderr_tail):
            # at the time limit slurmstepd sends SIGCONT+SIGTERM to every process of the job:
            # under load the step's launcher may die of it (exit 143, "srun: got SIGCONT")
            # and the script still record that exit status before it is killed itself. A
            # step that failed on its own (exit 3) before a later grouped step ran out of
            # time keeps its own result.
            outcome.status = "timeout"
            outcome.reason = f"job ended {st.state}" + (f": {st.reason}" if st.reason else "")
            outcome.exit_code = None   # the limit's signal, not the program's own status
        elif st.state in ("node_fail", "oom", "cancelled") and outcome.status == "done":
            outcome.status = "failed"
            outcome.reason = f"job ended {st.state}" + (f": {st.reason}" if st.reason else "")
        extra = {"transport_actual": actual} if actual else {}
        self.runner.commit(p, outcome, sched_state=st.raw or st.state, nodelist=st.nodelist, **extra)


def stage_starts(boundaries: list[int]) -> list[int]:
    """The rounds at which a campaign's submissions start when nothing stops it: 0 and
    every stage boundary but the last (Stages.boundaries(): a stage ends at each; none:
    the campaign is one submission)."""
    return [0] + boundaries[:-1]


def submissions_before(r: int, starts: list[int]) -> int:
    """How many submissions a campaign made before the first one of an invocation whose
    cells start at round r: a stage starting before r was submitted (each a submission),
    and so was the part of r's stage before r if r is inside it (an earlier invocation
    stopped there: its rest is a submission of its own). Exact if every earlier invocation
    ended at a stage boundary or inside at most the stage r is in; one short for each
    further resume inside a stage."""
    return sum(1 for s in starts if s < r)


def job_groups(cells: list[Cell], n: int, variant_order: list[str],
               before: int = 0) -> list[list[Cell]]:
    """The cells of one submission as jobs, in submission order: one job a cell (n = 1,
    the plan's balanced order), else chunks of n of one variant's cells in plan order
    (n = 0: all of them). Chunk j of every variant goes out together, led in the order of
    row o + j of campaign/plan.williams_row over the variants present (in the campaign's
    order). o carries the turns on from the campaign's earlier submissions (stages of
    "auto" / "decide", or a run before a resume) instead of restarting them at row 0.
    n >= 2: o = ceil(r * p / n), the chunks the rounds before this submission's first
    round r make at p cells of a variant a round (the most one variant has in one round
    here). If every submission has the same p, the rows never skip one; they can repeat
    one only where a submission starts inside a chunk (r * p not a multiple of n: the
    earlier one's last chunk was short). n = 0: a submission is one chunk, so o = before,
    the campaign's submissions before this one (the caller counts them: BatchPolicy,
    submissions_before); counting rounds instead skipped rows wherever a stage was
    shorter than the rounds before it (decide with step < min: a, a, b, a). So each
    variant leads the campaign's chunks equally often, within one, plus one for each
    start inside a chunk (n = 0: each resume the count misses). A campaign submitted at
    once (r = 0) puts its first variant first in chunk 0; with n = 0 that is its only
    chunk, so the first variant's job goes first."""
    if n == 1 or not cells:
        return [[c] for c in cells]
    by_variant: dict[str, list[Cell]] = {}
    for c in sorted(cells, key=lambda c: c.seq):
        by_variant.setdefault(c.variant.name, []).append(c)
    present = [v for v in variant_order if v in by_variant]
    present += [v for v in by_variant if v not in present]
    size = n or max(len(v) for v in by_variant.values())
    if n:
        r = min(c.repeat for c in cells)
        p = max(Counter((c.variant.name, c.repeat) for c in cells).values())
        o = -(-(r * p) // n)
    else:
        o = before
    keyed = []
    for i, name in enumerate(present):
        vcells = by_variant[name]
        for j, start in enumerate(range(0, len(vcells), size)):
            turn = williams_row(len(present), o + j).index(i)
            keyed.append(((j, turn), vcells[start:start + size]))
    keyed.sort(key=lambda kv: kv[0])
    return [g for _, g in keyed]
