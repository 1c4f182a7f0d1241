"""The batch policy: cells become jobs (one per cell, or grouped per variant), submitted up
to max_jobs_in_flight at a time and polled with back-off; a job's probe step verifies the
transport on its own allocation; finished jobs are ingested cell by cell. Part of
CampaignRunner (campaign/runner.py)."""

from __future__ import annotations

import re
import signal
import time
from typing import TYPE_CHECKING

from mpibench.campaign.cells import _Prepared
from mpibench.campaign.plan import Cell
from mpibench.files import write_file
from mpibench.schedulers import (
    JobRequest,
    JobStatus,
    JobStep,
    SchedulerError,
    SchedulerQueryError,
    SubmissionUnknown,
    read_step_result,
)

if TYPE_CHECKING:
    from mpibench.campaign.runner import Summary


# what a time limit's signals leave: a launcher or program killed by (or exiting on) SIGTERM,
# SIGKILL, SIGHUP or SIGINT (128+n, or -n from a wait status), or saying so on stderr
_LIMIT_SIGNALS = (signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGINT)
_LIMIT_EXITS = {128 + s for s in _LIMIT_SIGNALS} | {-s for s in _LIMIT_SIGNALS}
_LIMIT_TEXT = re.compile(r"got SIGCONT|DUE TO TIME LIMIT|got SIGTERM|exited on signal 15")


def _stopped_by_the_limit(exit_code: int | None, stderr_tail: str | None) -> bool:
    return exit_code in _LIMIT_EXITS or bool(_LIMIT_TEXT.search(stderr_tail or ""))


class BatchPolicy:
    def _job_requests(self, cells: list[Cell]) -> list[list[Cell]]:
        n = self.spec.scheduler.group_cells
        if n == 1:
            return [[c] for c in cells]
        by_variant: dict[str, list[Cell]] = {}
        for c in cells:
            by_variant.setdefault(c.variant.name, []).append(c)
        groups = []
        for vcells in by_variant.values():
            size = n or len(vcells)
            groups += [vcells[i:i + size] for i in range(0, len(vcells), size)]
        groups.sort(key=lambda g: g[0].seq)
        return groups

    def _job_name(self, cells: list[Cell]) -> str:
        """The prefix and the first cell's id, +N for the other cells of a grouped job."""
        return f"{self.spec.scheduler.job_name_prefix}-{cells[0].id}" + (
            f"+{len(cells) - 1}" if len(cells) > 1 else "")

    def _request(self, cells: list[Cell], fresh: bool) -> tuple[JobRequest, list[_Prepared]]:
        s = self.spec.scheduler
        preps = []
        for cell in cells:
            run_dir = self._fresh_dir(cell) if fresh else self.run_dir(cell)
            p = self.prepare(cell, run_dir, local=False)
            if fresh:
                self._write_cell_json(p)
            preps.append(p)
        first = cells[0]
        v = first.variant
        limit = s.time_limit_s or (sum(p.step.timeout_s or self.spec.timeout for p in preps)
                                   + 60.0)
        modules = list(s.modules)
        for m in self.stacks[v.stack].modules:
            if m not in modules:
                modules.append(m)
        probe = self._probe_step(first) if self.verify else None
        steps = ([probe] if probe else []) + [p.step for p in preps]
        # np and ppn without nodes: the allocation needs ceil(np / ppn) nodes
        nodes = s.nodes or v.nodes or (-(-v.np // v.ppn) if v.ppn else None)
        req = JobRequest(name=self._job_name(cells), steps=steps, run_dir=self.run_dir(first),
                         nodes=nodes, tasks_per_node=s.tasks_per_node or v.ppn,
                         time_limit_s=limit, settings=s, modules=modules,
                         cpus_per_task=v.cpus_per_task)
        return req, preps

    def _probe_step(self, cell: Cell) -> JobStep | None:
        """Batch jobs verify the transport on their own allocation: a probe step first."""
        from mpibench.verify import prepare_probe

        if self.stacks[cell.variant.stack].kind == "none":
            return None                # no MPI: nothing to probe
        run_dir = self.run_dir(cell) / "verify"
        try:
            cmd = prepare_probe(self.stacks[cell.variant.stack], cell.variant, run_dir,
                                local=False)
        except RuntimeError as exc:
            self.log(f"warning: no transport probe for {cell.variant.name}: {exc}")
            return None
        return JobStep(f"{cell.id}-verify", run_dir, cmd.argv, cmd.env, cmd.stdout,
                       cmd.stderr, timeout_s=min(60.0, self.spec.timeout), cell=cmd)

    def _judge_probe(self, req: JobRequest, preps: list[_Prepared]) -> str | None:
        from mpibench.verify import judge, probe_problem

        probe = next((s for s in req.steps if s.cell_id.endswith("-verify")), None)
        if probe is None:
            return None
        out, err = (f.read_text(errors="replace") if f.exists() else ""
                    for f in (probe.stdout, probe.stderr))
        text = out + err
        variant = preps[0].cell.variant
        # a probe that hung (exit 124) or never finished proves nothing by what it printed
        sr = read_step_result(probe)
        problem = probe_problem(sr.exit_code, sr.timed_out, probe.timeout_s, err)
        v = judge(self.stacks[variant.stack], variant, text, probe.env, probe.run_dir,
                  problem or (None if text else "the probe step left no output"))
        self.node_facts[variant.name] = v.node
        if v.verdict == "MISMATCH":
            self.log(f"warning: variant {variant.name}: requested transport {v.requested!r} "
                     f"but the probe shows {v.actual}")
        return v.actual

    def _run_batch(self, todo: list[Cell], reattach: list[tuple[str, list[str]]],
                   summary: Summary, by_id: dict[str, Cell]) -> None:
        s = self.spec.scheduler
        inflight: dict[str, tuple[JobRequest, list[_Prepared]]] = {}
        missing: dict[str, int] = {}
        seen: dict[str, tuple[str, str | None]] = {}  # last state written per queued job
        for job_id, ids in reattach:
            # plan order, as when submitted: the first cell's directory holds the probe
            req, preps = self._request(sorted((by_id[i] for i in ids), key=lambda c: c.seq),
                                       fresh=False)
            inflight[job_id] = (req, preps)
            self.log(f"re-attached to job {job_id} ({len(ids)} cell(s))")
        queue = self._job_requests(todo)
        interval = s.poll_interval_s
        failures = 0
        while queue or inflight:
            while queue and len(inflight) < s.max_jobs_in_flight:
                cells = queue.pop(0)
                req, preps = self._request(cells, fresh=True)
                script = self.scheduler.render_script(req)
                write_file(req.run_dir / "job.sh", script)
                with self.store.transaction():
                    for p in preps:
                        self.store.delete_results(p.cell.id)
                        self.store.set_run(p.cell.id, "running", started=time.time(),
                                           argv_json=p.cmd.argv, job_script=script,
                                           harness=self.harness,
                                           scheduler=self.scheduler.name,
                                           sched_state="submitting", job_id=None)
                try:
                    job_id = self.scheduler.submit(req)
                except SubmissionUnknown:
                    raise  # cells stay `running` without a job id; resume settles them
                except SchedulerError as exc:
                    # refused (bad partition, over a limit...): the cells fail with the reason
                    with self.store.transaction():
                        for p in preps:
                            self.store.set_run(p.cell.id, "failed", finished=time.time(),
                                               reason=f"job submission refused: {exc}",
                                               sched_state="refused")
                    self._done += len(preps)
                    self.log(f"{req.name}: submission refused: {exc}")
                    continue
                with self.store.transaction():
                    for p in preps:
                        self.store.set_run(p.cell.id, job_id=str(job_id),
                                           sched_state="submitted")
                inflight[str(job_id)] = (req, preps)
                summary.ran += len(cells)
                self._tick(f"submitted {req.name} as job {job_id}")
            if not inflight:
                continue
            time.sleep(interval)
            try:
                states = self.scheduler.poll(list(inflight))
                failures = 0
            except SchedulerQueryError as exc:
                failures += 1
                self.log(f"scheduler query failed ({exc}); retry {failures}")
                interval = min(s.poll_max_interval_s, interval * 2)
                continue
            finished_any = False
            changed: list[tuple[str, tuple[str, str | None]]] = []
            for job_id in list(inflight):
                req, preps = inflight[job_id]
                st = states.get(job_id)
                if st is None:
                    missing[job_id] = missing.get(job_id, 0) + 1
                    all_written = all((s.run_dir / "exit_status").exists() for s in req.steps)
                    if missing[job_id] >= 3 and all_written:
                        st = JobStatus("completed", 0, "finished (no longer in the queue)")
                    elif missing[job_id] >= 10:
                        st = JobStatus("failed", None, "the scheduler no longer knows the job")
                    else:
                        continue
                missing.pop(job_id, None)
                if not st.finished:
                    # written only when it changes, all jobs in one transaction: 500 queued
                    # jobs must not cost 500 commits per poll
                    now = (st.raw or st.state, st.nodelist)
                    if seen.get(job_id) != now:
                        seen[job_id] = now
                        changed += [(p.cell.id, now) for p in preps]
                    continue
                finished_any = True
                del inflight[job_id]
                seen.pop(job_id, None)
                actual = self._judge_probe(req, preps)
                for p in preps:
                    self._finish_batch_cell(p, st, actual)
            if changed:
                with self.store.transaction():
                    for cell_id, (state, nodes) in changed:
                        self.store.set_run(cell_id, sched_state=state, nodelist=nodes)
            interval = s.poll_interval_s if finished_any else \
                min(s.poll_max_interval_s, interval * 1.5)

    def _finish_batch_cell(self, p: _Prepared, st: JobStatus, actual: str | None) -> None:
        sr = read_step_result(p.step, st)
        outcome = self.ingest(p, sr, st.nodelist)
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
        elif st.state in ("node_fail", "oom", "cancelled") and outcome.status == "done":
            outcome.status = "failed"
            outcome.reason = f"job ended {st.state}" + (f": {st.reason}" if st.reason else "")
        extra = {"transport_actual": actual} if actual else {}
        self.commit(p, outcome, sched_state=st.raw or st.state, nodelist=st.nodelist, **extra)
