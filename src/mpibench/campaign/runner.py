"""Run a campaign: cells through a scheduler backend, results into the store, crash-safe.

State machine per cell (runs.status): pending -> running -> done | failed | timeout.

Crash safety rests on two rules:
  * a cell becomes `running` in one transaction (before its launch) and leaves it in another
    that also deletes any partial results and inserts its results and fingerprint: a cell is
    `done` exactly when its results are in the store;
  * on start, a `running` cell whose process is gone (local backend; the previous harness is
    dead because we hold the campaign lock) is reset to pending and re-run from an empty run
    directory; a `running` cell with a batch job id is re-attached to its job instead.
So after a SIGKILL at any moment, `resume` runs exactly the cells that have no final state.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mpibench import fingerprint
from mpibench.build import build_component
from mpibench.campaign.plan import Cell, expand, legacy_ids
from mpibench.campaign.spec import CampaignSpec, Group, group_variants, substitute
from mpibench.errors import UsageError
from mpibench.execute import (
    CellCommand,
    CellOutcome,
    Variant,
    core_args,
    ingest_core,
    prepare_cell,
)
from mpibench.files import write_file
from mpibench.launchers import get_launcher
from mpibench.schedulers import (
    JobRequest,
    JobStatus,
    JobStep,
    Scheduler,
    SchedulerError,
    SchedulerQueryError,
    StepResult,
    SubmissionUnknown,
    get_scheduler,
    read_step_result,
)
from mpibench.stacks import Stack, find_stack
from mpibench.store import Store
from mpibench.transports import preset

FINAL = ("done", "failed", "timeout")
LOCAL_JOB_PREFIX = "local:"


@dataclass
class Summary:
    campaign_id: int
    total: int
    ran: int = 0
    skipped: int = 0  # already final before this invocation
    recovered: int = 0  # found running after a crash and reset
    reattached: int = 0  # batch jobs followed again
    counts: dict[str, int] = field(default_factory=dict)
    seed: int | None = None
    auto_skipped: int = 0  # launches repeats = "auto" found unnecessary (left pending)


ProgressFn = Callable[[int, int, str], None]


@dataclass
class _Prepared:
    cell: Cell
    cmd: CellCommand
    step: JobStep


class CampaignRunner:
    def __init__(self, spec: CampaignSpec, store: Store | None, stacks: list[Stack], *,
                 scheduler: Scheduler | None = None, progress: ProgressFn | None = None,
                 log: Callable[[str], None] | None = None, retry_failed: bool = False,
                 verify: bool | None = None):
        self.spec = spec
        self.store = store
        self.found = stacks
        self.scheduler = scheduler or get_scheduler(spec.scheduler.name, spec.scheduler)
        self.progress = progress
        self.log = log or (lambda msg: None)
        self.retry_failed = retry_failed
        self.verify = spec.verify_transport if verify is None else verify
        self.stacks: dict[str, Stack] = {}
        self.binaries: dict[str, Path] = {}
        self.peer_programs: dict[tuple[str, str], Path] = {}  # (group, stack) -> program
        self.verified: dict[str, Any] = {}
        self.node_facts: dict[str, dict] = {}  # variant -> what its probe saw on the ranks' node
        self.runs_root = spec.directory / "runs"
        self._profiles: dict[str, Any] = {}
        self._lock_fh = None
        self.harness = harness_token()

    # -- checks that need the machine ---------------------------------------------------
    def check(self) -> None:
        """Everything that can fail before a launch: stacks, transports, launchers, MCA,
        the core build. Errors name the file and the variant's key path."""
        for v in self.spec.variants:
            key = f"{self.spec.path}: {self.spec.variant_keys[v.name]}"
            try:
                stack = self.stacks.get(v.stack) or find_stack(v.stack, self.found)
            except UsageError as exc:
                raise UsageError(f"{key}.stack: {exc}") from None
            self.stacks[v.stack] = stack
            try:
                preset(stack.kind, v.transport, stack.library_version)
            except UsageError as exc:
                raise UsageError(f"{key}.transport: {exc}") from None
            if v.mca and not stack.kind_class.accepts_mca:
                raise UsageError(f"{key}.mca: MCA parameters are Open MPI settings but stack "
                                 f"{stack.name!r} is {stack.kind}; expected env instead")
            try:
                get_launcher(v.launcher or stack.launcher_kind)
            except UsageError as exc:
                raise UsageError(f"{key}.launcher: {exc}") from None
            if v.hostfile and not self.scheduler.batch and not Path(v.hostfile).is_file():
                raise UsageError(f"{key}.hostfile: {v.hostfile} does not exist; expected a "
                                 "host file (a relative path is relative to the campaign "
                                 "file)")
        for g in self.spec.groups:
            if g.kind == "peer":
                self._check_peer(g)
            if g.kind != "core":
                continue
            for v in self._variants_of(g):
                if v.stack not in self.binaries:
                    self.log(f"mpibench-core for {v.stack}: checking the build cache ...")
                    self.binaries[v.stack] = build_component(self.stacks[v.stack], "core")

    def _check_peer(self, g: Group) -> None:
        """The suite's program per stack: the given binary, or built from the source with
        each stack's wrappers (cached like the core)."""
        from mpibench.peers import build_peer, find_binary

        key = f"{self.spec.path}: benchmarks.{g.name}"
        for v in self._variants_of(g):
            if (g.name, v.stack) in self.peer_programs:
                continue
            peer = g.peer
            try:
                if peer.binary:
                    if not Path(peer.binary).exists() and not self.scheduler.batch:
                        raise UsageError(f"{peer.binary} does not exist")
                    root = Path(peer.binary)
                    prog = find_binary(root, peer.suite, peer.benchmarks[0]
                                       if peer.benchmarks else None) if root.exists() else root
                else:
                    root = build_peer(self.stacks[v.stack], peer.suite, peer.source,
                                      log=self.log)
                    prog = find_binary(root, peer.suite,
                                       peer.benchmarks[0] if peer.benchmarks else None)
            except UsageError as exc:
                raise UsageError(f"{key}.{'binary' if peer.binary else 'source'}: {exc}") \
                    from None
            self.peer_programs[(g.name, v.stack)] = prog

    def _variants_of(self, g: Group) -> list[Variant]:
        return group_variants(g, self.spec.variants, self.spec.variant_base)

    # -- lock ---------------------------------------------------------------------------
    def lock(self) -> None:
        self.runs_root.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.spec.name)
        path = self.runs_root / f".{safe}.lock"
        fh = open(path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise UsageError(f"{self.spec.path}: campaign {self.spec.name!r} is being run by "
                             f"{holder}; wait for it or stop it first") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        fh.flush()
        self._lock_fh = fh

    def unlock(self) -> None:
        if self._lock_fh:
            self._lock_fh.close()
            self._lock_fh = None

    # -- store sync ---------------------------------------------------------------------
    def sync(self) -> tuple[int, list[Cell], int | None]:
        """Create the campaign and a pending run per cell (existing runs are kept)."""
        spec = self.spec
        row = self.store.db.execute("SELECT id, spec_json FROM campaigns WHERE name=? AND "
                                    "file IS ?", (spec.name, str(spec.path))).fetchone()
        seed = spec.seed
        if spec.order == "random" and seed is None:
            old = json.loads(row["spec_json"]).get("seed") if row else None
            seed = old if old is not None else random.randrange(2**31)
        cells = expand(spec, seed=seed)
        sdict = spec.to_dict()
        sdict["seed"] = seed
        if row is None and cells:
            self._adopt_moved(cells[0].id)
        with self.store.transaction():
            cid = self.store.add_campaign(spec.name, sdict, file=str(spec.path))
            known = dict(self.store.db.execute("SELECT id, seq FROM runs WHERE campaign_id=?",
                                               (cid,)).fetchall())
            if known and any(c.id not in known for c in cells):
                # cells an earlier mpibench stored under ids without the group's name,
                # timeout and figures of merit keep their runs and results
                renames = [(old, new) for new, old in legacy_ids(spec).items()
                           if old in known and new not in known]
                if renames and self.store.rename_runs(renames):
                    known = dict(self.store.db.execute(
                        "SELECT id, seq FROM runs WHERE campaign_id=?", (cid,)).fetchall())
            fresh = [c for c in cells if c.id not in known]
            if self.store.create_runs(self._new_runs(cid, fresh)) != len(fresh):
                self._foreign_cells(cid, fresh)  # raises; the transaction rolls back
            # an edited file may reorder cells: keep seq in step with this plan
            self.store.db.executemany("UPDATE runs SET seq=? WHERE id=?",
                                      [(c.seq, c.id) for c in cells
                                       if c.id in known and known[c.id] != c.seq])
            if known:
                self._refresh_judging(cid, json.loads(row["spec_json"]) if row else {})
        return cid, cells, seed

    def _adopt_moved(self, cell_id: str) -> None:
        """A campaign whose file moved (with its store) is the same campaign: its row is
        re-pointed at the new path, so its cells are not refused as another campaign's."""
        owner = self.store.campaign_of_run(cell_id)
        if (owner is not None and owner["name"] == self.spec.name and owner["file"]
                and self.spec.path.exists()
                and not Path(owner["file"]).exists()):
            self.store.set_campaign_file(owner["id"], str(self.spec.path))
            self.log(f"campaign {self.spec.name!r} moved from {owner['file']}; its cells "
                     "and results follow it")

    def _foreign_cells(self, cid: int, fresh: list[Cell]) -> None:
        """Cell ids already stored under another campaign: a copy of a campaign (file or
        directory) sharing a store with the original. Its cells would be the original's
        rows: refused, nothing written."""
        for c in fresh:
            owner = self.store.campaign_of_run(c.id)
            if owner is not None and owner["id"] != cid:
                raise UsageError(
                    f"{self.spec.path}: cell {c.id} ({c.label}) is already in the store "
                    f"{self.store.path} under campaign {owner['name']!r} of {owner['file']} "
                    "(a copy of that campaign?); give this one its own --db or another "
                    "campaign name")
        raise UsageError(f"{self.spec.path}: some cells could not be stored (ids taken)")

    def _new_runs(self, cid: int, cells: list[Cell]) -> Iterator[dict[str, Any]]:
        """Rows for Store.create_runs. A big campaign is a few variant x group blobs repeated
        over many parameter points: serialise each blob and each point once, and splice
        them (the text equals json.dumps(_cell_spec(...), sort_keys=True))."""
        root = str(self.runs_root)
        blobs: dict[tuple[int, int], list[str]] = {}
        points: dict[int, str] = {}
        hole = "\0mpibench-cell\0"
        quoted = json.dumps(hole)
        for cell in cells:
            v, g = cell.variant, cell.group
            parts = blobs.get((id(v), id(g)))
            if parts is None:
                blob = json.dumps(_cell_spec(cell, self.spec.judging(v.name)) | {
                    "params": hole, "repeat": hole}, sort_keys=True, default=str)
                parts = blobs[(id(v), id(g))] = blob.split(quoted)
            pj = points.get(id(cell.params))
            if pj is None:
                pj = points[id(cell.params)] = json.dumps(cell.params, sort_keys=True,
                                                          default=str)
            yield dict(run_id=cell.id, campaign_id=cid, variant=v.name, grp=g.name,
                       params_json=pj, repeat=cell.repeat, seq=cell.seq,
                       spec_json=parts[0] + pj + parts[1] + str(cell.repeat) + parts[2],
                       transport_requested=v.transport, scheduler=self.scheduler.name,
                       label=cell.label, run_dir=f"{root}/{cell.id}")

    def _refresh_judging(self, cid: int, before: dict[str, Any]) -> None:
        """A line rate added or changed in the file after cells ran: the reports read it from
        each run's spec, so update the runs of each variant whose line rate differs from the
        last sync's (`before`, the campaign's stored spec; only rows whose value differs are
        written). Cell ids do not depend on it. A resume of an unchanged file writes nothing."""
        last = {v.get("name"): (v.get("line_rate"), v.get("line_rate_bps"))
                for v in before.get("variants", []) if isinstance(v, dict)}
        for v in self.spec.variants:
            want = self.spec.judging(v.name)
            text, bps = want.get("line_rate"), want.get("line_rate_bps")
            if last.get(v.name, "unknown") == (text, bps):
                continue
            self.store.db.execute(
                "UPDATE runs SET spec_json = CASE WHEN ? IS NULL "
                "THEN json_remove(spec_json, '$.line_rate', '$.line_rate_bps') "
                "ELSE json_set(spec_json, '$.line_rate', ?, '$.line_rate_bps', ?) END "
                "WHERE campaign_id=? AND variant=? AND "
                "(json_extract(spec_json, '$.line_rate') IS NOT ? OR "
                "json_extract(spec_json, '$.line_rate_bps') IS NOT ?)",
                (text, text, bps, cid, v.name, text, bps))

    def run_dir(self, cell: Cell) -> Path:
        return self.runs_root / cell.id

    # -- recovery -----------------------------------------------------------------------
    def recover(self, cells: list[Cell], cid: int) -> tuple[int, list[tuple[str, list[str]]]]:
        """Reset this campaign's running cells left by a dead harness; return (reset count,
        batch jobs to re-attach as (job_id, [cell ids])). Another campaign's cells (one store
        shared by several campaigns, or a copied campaign directory), and cells a live
        harness on this host holds, are never touched."""
        by_id = {c.id: c for c in cells}
        reset = 0
        jobs: dict[str, list[str]] = {}
        unsure: dict[str, list] = {}  # job script -> cells submitted together, no job id
        kill_orphans(self.runs_root / "_verify")  # a probe of a dead harness
        for row in self.store.runs(campaign_id=cid, status="running"):
            if row["id"] not in by_id:
                continue
            holder = row["harness"]
            if holder and holder != self.harness and harness_alive(holder):
                self.log(f"cell {row['id']} is held by a live harness ({holder}); left alone")
                continue
            job = row["job_id"]
            if job and not job.startswith(LOCAL_JOB_PREFIX) and self.scheduler.batch:
                jobs.setdefault(job, []).append(row["id"])
                continue
            if self.scheduler.batch and not job and row["job_script"]:
                # killed between sbatch/qsub and storing the job id: the job may exist
                unsure.setdefault(row["job_script"], []).append(row)
                continue
            self._reset(row)
            reset += 1
        for rows in unsure.values():
            job = self._submitted_before(rows, by_id)
            if job is None:
                for row in rows:
                    self._reset(row)
                reset += len(rows)
                continue
            jobs.setdefault(job, []).extend(r["id"] for r in rows)
            with self.store.transaction():
                for row in rows:
                    self.store.set_run(row["id"], job_id=job, sched_state="submitted")
        return reset, list(jobs.items())

    def _reset(self, row) -> None:
        # only processes in this campaign's own run directories: a stored run_dir elsewhere
        # (a copied store or campaign directory) may be another campaign's live launch
        if row["run_dir"] and _inside(Path(row["run_dir"]), self.runs_root):
            kill_orphans(Path(row["run_dir"]))
        with self.store.transaction():
            self.store.delete_results(row["id"])
            self.store.set_run(row["id"], "pending", reason=None, stderr_tail=None,
                               exit_code=None, finished=None, elapsed=None,
                               job_id=None, sched_state=None, fingerprint_id=None)

    def _submitted_before(self, rows, by_id: dict[str, Cell]) -> str | None:
        """The job a previous harness submitted for these cells but never recorded (it was
        killed after the scheduler took the job): found by its name, which holds the cell
        id. Resubmitting would run the cells twice."""
        cells = sorted((by_id[r["id"]] for r in rows), key=lambda c: c.seq)
        # only the name is looked up: no cell is prepared, no probe built
        req = JobRequest(name=self._job_name(cells), steps=[], run_dir=self.run_dir(cells[0]))
        since = min((r["started"] for r in rows if r["started"]), default=None)
        try:
            job = self.scheduler.find_job(req, since)
        except SchedulerQueryError as exc:
            raise SubmissionUnknown(
                f"cannot tell whether job {req.name} was submitted before the previous "
                f"harness stopped ({exc}); its cells are left as they are: run `mpibench "
                "campaign resume` again when the scheduler answers") from None
        if job:
            self.log(f"job {job} ({req.name}) was submitted just before the previous harness "
                     "stopped; following it instead of submitting again")
        return job

    # -- main ---------------------------------------------------------------------------
    def run(self, *, checked: bool = False) -> Summary:
        if not checked:
            self.check()
        self.lock()
        try:
            return self._run()
        finally:
            self.unlock()

    def _run(self) -> Summary:
        cid, cells, seed = self.sync()
        reset, reattach = self.recover(cells, cid)
        status = {r["id"]: r["status"] for r in self.store.db.execute(
            "SELECT id, status FROM runs WHERE campaign_id=?", (cid,))}
        redo = ("failed", "timeout") if self.retry_failed else ()
        attached = {cid_ for _, ids in reattach for cid_ in ids}
        todo = [c for c in cells if c.id not in attached
                and (status.get(c.id) == "pending" or status.get(c.id) in redo)]
        summary = Summary(campaign_id=cid, total=len(cells), recovered=reset,
                          reattached=len(reattach), seed=seed)
        summary.skipped = len(cells) - len(todo) - len(attached)
        self._done = self._done_before = summary.skipped
        self._total = len(cells)
        self._started = time.monotonic()
        if reset:
            self.log(f"{reset} cell(s) were running when the previous harness stopped; "
                     "re-running them")
        self._tick("starting")
        if self.scheduler.batch:
            self._run_batch(todo, reattach, summary, {c.id: c for c in cells})
        else:
            auto = _AutoRule(self, cid) if self.spec.auto else None
            for cell in todo:
                if auto is not None and auto.skip(cell):
                    summary.auto_skipped += 1
                    continue
                self._run_local_cell(cell)
                summary.ran += 1
        ids = {c.id for c in cells}
        counts: dict[str, int] = {}
        for r in self.store.db.execute("SELECT id, status FROM runs WHERE campaign_id=?",
                                       (cid,)):
            if r["id"] in ids:
                counts[r["status"]] = counts.get(r["status"], 0) + 1
        summary.counts = counts
        self._tick("finished")
        return summary

    def _tick(self, what: str) -> None:
        if self.progress:
            self.progress(self._done, self._total, what)

    def eta(self) -> float | None:
        """Seconds left at this invocation's pace. Cells that were final before it started
        do not count (a resume that skips 90 of 100 cells is not 10x faster), so there is
        no estimate until one cell has finished here."""
        done_here = self._done - self._done_before
        left = self._total - self._done
        if left <= 0:
            return 0.0
        if done_here <= 0:
            return None
        return (time.monotonic() - self._started) / done_here * left

    # -- one cell -----------------------------------------------------------------------
    def prepare(self, cell: Cell, run_dir: Path, *, local: bool) -> _Prepared:
        g = cell.group
        stack = self.stacks[cell.variant.stack]
        timeout = g.timeout or self.spec.timeout
        if g.kind == "core":
            jsonl = run_dir / "core.jsonl"
            program = [str(self.binaries[cell.variant.stack]),
                       *core_args(g.benchmarks, g.sizes, jsonl, g.options)]
            cmd = prepare_cell(stack, cell.variant, program, run_dir, jsonl=jsonl, local=local)
            self._profile(cell, cmd)
            step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                           timeout_s=timeout, cell=cmd)
            return _Prepared(cell, cmd, step)
        if g.kind == "peer":
            from mpibench.peers import program_args

            program = [str(self.peer_programs[(g.name, cell.variant.stack)]),
                       *program_args(g.peer, run_dir)]
            variant = replace(cell.variant, env={**cell.variant.env, **g.env}) if g.env \
                else cell.variant
            cmd = prepare_cell(stack, variant, program, run_dir, jsonl=None, local=local)
            self._profile(cell, cmd)
            step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                           timeout_s=timeout, cell=cmd)
            return _Prepared(cell, cmd, step)
        v = cell.variant
        values = {**cell.params, "np": v.np, "nodes": v.nodes or 1, "ppn": v.ppn or "",
                  "variant": v.name, "stack": v.stack, "repeat": cell.repeat,
                  "run_dir": str(run_dir), "campaign_dir": str(self.spec.directory)}
        argv = substitute(g.command, values)
        setup = [substitute(s, values) for s in g.setup]
        if g.prepare:
            setup.insert(0, self._prepare_step(cell, values))
        variant = replace(v, env={**v.env, **g.env}) if g.env else v
        cmd = prepare_cell(stack, variant, argv, run_dir, jsonl=None, local=local)
        self._profile(cell, cmd)
        step = JobStep(cell.id, run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                       timeout_s=timeout, setup=setup, setup_env=dict(g.env), cell=cmd)
        return _Prepared(cell, cmd, step)

    def prepare_dir(self, cell: Cell) -> tuple[Path, list[list[str]]]:
        """Where a group's prepare runs for this cell, and its commands: one directory per
        campaign, or per variant and/or prepare_per parameter values, keyed by a hash of
        the commands, the inputs' names and those values (a changed prepare is redone)."""
        g, v = cell.group, cell.variant
        scope: dict[str, Any] = {p: cell.params[p] for p in g.prepare_per if p != "variant"}
        values: dict[str, Any] = {**scope, "campaign_dir": str(self.spec.directory)}
        if "variant" in g.prepare_per:
            scope["variant"] = v.to_dict()
            values.update(variant=v.name, stack=v.stack, np=v.np, nodes=v.nodes or 1,
                          ppn=v.ppn or "")
        cmds = [substitute(s, values) for s in g.prepare]
        blob = json.dumps([self.spec.name, g.name, cmds, [p.name for p in g.inputs],
                           g.env, scope], sort_keys=True, default=str)
        key = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self.runs_root / "_prepare" / g.name / key, cmds

    def _prepare_step(self, cell: Cell, values: dict[str, Any]) -> list[str]:
        """A setup command (first of the cell's) that runs the prepare commands in the
        shared directory unless a previous cell did (marker `.prepared`, under flock so two
        jobs never prepare at once), then copies its files into the cell's run directory.
        Being a setup command, it is never part of the timed launch."""
        d, cmds = self.prepare_dir(cell)
        q = shlex.quote
        inputs = " ".join(q(p.name) for p in cell.group.inputs)
        body = " && ".join(shlex.join(c) for c in cmds)
        script = "\n".join([
            "set -e",
            f"d={q(str(d))}",
            'mkdir -p "$d"',
            'if command -v flock >/dev/null 2>&1; then exec 9>"$d/.lock"; flock 9; fi',
            'if [ -f "$d/.prepared" ]; then',
            '  echo "mpibench prepare: reusing $d"',
            "else",
            '  rm -rf "$d/work" && mkdir -p "$d/work"',
            *([f'  cp -a {inputs} "$d/work/"'] if inputs else []),
            f'  if ! ( cd "$d/work" && {body} ) >"$d/prepare.log" 2>&1; then',
            '    echo "mpibench prepare failed in $d (prepare.log):" >&2',
            '    tail -n 20 "$d/prepare.log" >&2',
            "    exit 1",
            "  fi",
            '  date +%s >"$d/.prepared"',
            '  echo "mpibench prepare: prepared $d"',
            "fi",
            'cp -a "$d/work/." .',
        ])
        return ["sh", "-c", script]

    @staticmethod
    def _profile(cell: Cell, cmd: CellCommand) -> None:
        """profile = true: every rank runs under the PMPI profiler (LD_PRELOAD), passed through
        the launcher's own flags so the launcher itself is not preloaded."""
        if not cell.variant.profile:
            return
        from mpibench.profiling import inject_env, profile_env

        penv = profile_env(cmd.stack, cmd.run_dir / "profile")
        cmd.argv, injected = inject_env(cmd.argv, penv, cmd.stack.kind)
        if not injected:
            cmd.env.update(penv)

    def _fresh_dir(self, cell: Cell) -> Path:
        run_dir = self.run_dir(cell)
        if run_dir.exists():  # left over from an interrupted attempt
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        for src in cell.group.inputs:
            dst = run_dir / src.name
            if src.is_dir():
                shutil.copytree(src, dst)
            else:
                shutil.copy2(src, dst)
        return run_dir

    def _write_cell_json(self, p: _Prepared) -> None:
        write_file(p.step.run_dir / "cell.json", json.dumps({
            "id": p.cell.id, "campaign": self.spec.name, "file": str(self.spec.path),
            "variant": p.cell.variant.to_dict(), "group": p.cell.group.name,
            "params": p.cell.params, "repeat": p.cell.repeat, "argv": p.cmd.argv,
            "env": p.cmd.env, "setup": p.step.setup, "timeout_s": p.step.timeout_s},
            indent=2, default=str))

    def _run_local_cell(self, cell: Cell) -> None:
        self._tick(cell.label)
        if self.verify:
            self._verify_variant(cell.variant)
        run_dir = self._fresh_dir(cell)
        p = self.prepare(cell, run_dir, local=True)
        self._write_cell_json(p)
        write_file(run_dir / "job.sh", self.scheduler.render_script(
            JobRequest(name=cell.id, steps=[p.step], run_dir=run_dir)))
        with self.store.transaction():
            self.store.delete_results(cell.id)
            self.store.set_run(cell.id, "running", started=time.time(), run_dir=str(run_dir),
                               harness=self.harness,
                               argv_json=p.cmd.argv, scheduler=self.scheduler.name,
                               job_id=f"{LOCAL_JOB_PREFIX}{socket.gethostname()}:{os.getpid()}",
                               reason=None, stderr_tail=None, exit_code=None, finished=None,
                               elapsed=None, fingerprint_id=None)
        try:
            sr = self.scheduler.run_step(p.step)
        except KeyboardInterrupt:
            # Ctrl-C: the launch runs in its own session, so stop it here and leave the cell
            # pending for `resume` (a SIGKILL skips this; resume then does the same)
            kill_orphans(run_dir)
            with self.store.transaction():
                self.store.delete_results(cell.id)
                self.store.set_run(cell.id, "pending", job_id=None, started=None)
            raise
        outcome = self.ingest(p, sr)
        self.commit(p, outcome)

    def _verify_variant(self, variant: Variant) -> None:
        from mpibench.verify import verify_local

        if variant.name in self.verified:
            return
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", variant.name)
        self._tick(f"verifying transport of {variant.name}")
        self.verified[variant.name] = verify_local(
            self.stacks[variant.stack], variant, self.runs_root / "_verify" / safe,
            timeout=min(60.0, self.spec.timeout))
        v = self.verified[variant.name]
        self.node_facts[variant.name] = v.node
        if v.verdict == "MISMATCH":
            self.log(f"warning: variant {variant.name}: requested transport {v.requested!r} "
                     f"but the probe shows {v.actual}")

    def ingest(self, p: _Prepared, sr: StepResult, nodelist: str | None = None) -> CellOutcome:
        cmd, g = p.cmd, p.cell.group
        exit_code, timed_out, elapsed = sr.exit_code, sr.timed_out, sr.elapsed
        if p.step.setup and not cmd.stdout.exists() and not timed_out:
            err = (p.step.run_dir / "setup.err")
            tail = "\n".join(err.read_text(errors="replace").rstrip().splitlines()[-20:]) \
                if err.exists() else ""
            outcome = ingest_core(cmd, None, exit_code=exit_code, timed_out=False,
                                  elapsed=elapsed)
            outcome.status = "failed"
            # the local backend knows which setup command failed; a job script does not say
            last = None if self.scheduler.batch else getattr(self.scheduler, "last_setup", None)
            which = f" `{shlex.join(last.argv)}`" if last is not None and not last.ok else ""
            if last is not None and not last.ok and g.prepare \
                    and list(last.argv) == p.step.setup[0]:
                which = " (the group's prepare)"   # not its whole shell script
            outcome.reason = f"setup command{which} failed (exit status {exit_code}): " + \
                reason_line(tail)
            outcome.stderr_tail = tail
            outcome.records = []
        else:
            outcome = ingest_core(cmd, None, exit_code=exit_code, timed_out=timed_out,
                                  elapsed=elapsed)
        if g.kind in ("app", "peer") and outcome.status == "failed" \
                and exit_code not in (0, None) \
                and not outcome.reason.startswith("setup"):
            outcome.reason = f"exit status {exit_code}: {reason_line(outcome.stderr_tail)}"
        if timed_out:
            outcome.reason = f"cell timeout: killed after {p.step.timeout_s:g} s"
        self._profiles.pop(p.cell.id, None)
        if p.cell.variant.profile:
            # profiled runs are perturbed: never pooled with unprofiled ones
            outcome.fingerprint["profiler"] = True
        if g.kind == "app":
            outcome.fingerprint["application"] = {"command": g.command, "setup": g.setup,
                                                  "env": g.env}
            if g.prepare:
                outcome.fingerprint["application"]["prepare"] = {
                    "commands": g.prepare, "per": g.prepare_per,
                    "dir": self.prepare_dir(p.cell)[0].name}
            if not outcome.fingerprint.get("hosts"):
                # the core reports where its ranks ran; an application does not
                hosts, per_host = app_placement(p.cell.variant, self.scheduler.batch,
                                                nodelist)
                outcome.fingerprint["hosts"] = hosts
                outcome.fingerprint["ranks_per_host"] = per_host
            outcome.records = []
            if outcome.status == "done":
                outcome.records, problem = app_records(p.cell, p.step.run_dir,
                                                       self._launch_elapsed(p, sr))
                if problem:
                    outcome.status, outcome.reason, outcome.records = "failed", problem, []
        if g.kind == "peer":
            self._ingest_peer(p, outcome, nodelist)
        if p.cell.variant.profile:
            from mpibench.errors import BenchmarkFailure
            from mpibench.profiling import collect_profile, profile_rows

            try:
                doc = collect_profile(p.step.run_dir / "profile")
            except BenchmarkFailure as exc:
                if outcome.status == "done":
                    outcome.reason = f"no profile: {exc}"
            else:
                self._profiles[p.cell.id] = doc
                outcome.records = list(outcome.records) + profile_rows(doc)
        return outcome

    def _ingest_peer(self, p: _Prepared, outcome: CellOutcome, nodelist: str | None) -> None:
        """IMB/OSU/NetPIPE stdout -> rows with the parsers `mpibench import` uses; the
        fingerprint names the suite, its version and the program."""
        from mpibench.peers import parse_output

        g, v = p.cell.group, p.cell.variant
        out = p.cmd.stdout.read_text(errors="replace") if p.cmd.stdout.exists() else ""
        rows, meta = parse_output(g.peer, out, v.np)
        outcome.fingerprint["peer"] = {
            "suite": g.peer.suite, "tool": meta["tool"], "version": meta["version"],
            "program": str(self.peer_programs.get((g.name, v.stack), "")),
            "args": list(g.peer.args)}
        if not outcome.fingerprint.get("hosts"):
            hosts, per_host = app_placement(v, self.scheduler.batch, nodelist)
            outcome.fingerprint["hosts"] = hosts
            outcome.fingerprint["ranks_per_host"] = per_host
        outcome.records = rows
        if outcome.status != "done":
            return
        if not any(r.get("status", "ok") == "ok" for r in rows):
            outcome.status = "failed"
            outcome.reason = (f"{g.peer.suite} output has no results"
                              + (f" ({'; '.join(meta['problems'][:3])})"
                                 if meta["problems"] else ""))
            outcome.records = []
        elif meta["truncated"]:
            outcome.status, outcome.reason = "failed", f"{g.peer.suite} output is truncated"
        elif meta["problems"]:
            outcome.reason = "; ".join(meta["problems"][:3])

    def _launch_elapsed(self, p: _Prepared, sr: StepResult) -> float:
        """The application's wall time: the launch alone, without the setup commands
        (e.g. grompp) that the step's elapsed time includes."""
        if not p.step.setup:
            return sr.elapsed
        # the local backend timed the launch itself (monotonic clock)
        last = None if self.scheduler.batch else getattr(self.scheduler, "last_result", None)
        if last is not None:
            return last.elapsed
        # a job script records when the launch started (read_step_result read timing.json)
        if sr.launch_started is not None and sr.finished is not None:
            return sr.finished - sr.launch_started
        return sr.elapsed

    def commit(self, p: _Prepared, outcome: CellOutcome, **extra: Any) -> None:
        actual = None
        v = self.verified.get(p.cell.variant.name)
        if v is not None:
            actual = v.actual
        fields = dict(reason=outcome.reason, stderr_tail=outcome.stderr_tail or None,
                      exit_code=outcome.exit_code, finished=time.time(),
                      elapsed=outcome.elapsed)
        if actual is not None:
            fields["transport_actual"] = actual
        fields.update(extra)
        facts = self.node_facts.get(p.cell.variant.name)
        if facts:
            fingerprint.add_node_facts(outcome.fingerprint, facts)
        with self.store.transaction():
            fid = self.store.add_fingerprint(outcome.fingerprint)
            self.store.delete_results(p.cell.id)
            self.store.add_results(p.cell.id, outcome.records)
            doc = self._profiles.pop(p.cell.id, None)
            if doc is not None:
                self.store.set_profile(p.cell.id, doc)
            self.store.set_run(p.cell.id, outcome.status, fingerprint_id=fid, **fields)
        self._done += 1
        self._tick(f"{p.cell.label}: {outcome.status}")

    # -- batch --------------------------------------------------------------------------
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
        elif st.state in ("node_fail", "oom", "cancelled") and outcome.status == "done":
            outcome.status = "failed"
            outcome.reason = f"job ended {st.state}" + (f": {st.reason}" if st.reason else "")
        extra = {"transport_actual": actual} if actual else {}
        self.commit(p, outcome, sched_state=st.raw or st.state, nodelist=st.nodelist, **extra)


class _AutoRule:
    """repeats = "auto" (campaign/auto_repeats.py) for the local scheduler: before the first
    cell of each round past the minimum, a group whose gains are all known to +-target stops
    (its remaining cells stay pending and are reported). Batch schedulers submit every
    round up to the maximum."""

    def __init__(self, runner: CampaignRunner, campaign_id: int):
        self.runner, self.cid = runner, campaign_id
        self.rule = runner.spec.auto
        self.checked: dict[str, int] = {}       # group -> round last evaluated
        self.stopped: dict[str, int] = {}       # group -> rounds run

    def skip(self, cell: Cell) -> bool:
        from mpibench.campaign.auto_repeats import group_launches, precise_enough

        g = cell.group.name
        if g in self.stopped:
            return True
        if cell.repeat < self.rule.min or self.checked.get(g) == cell.repeat:
            return False
        self.checked[g] = cell.repeat
        per_variant, better = group_launches(self.runner.store, self.cid, g)
        if precise_enough(per_variant, self.rule.target, better):
            self.stopped[g] = cell.repeat
            self.runner.log(f"repeats = auto: group {g} stops after {cell.repeat} launches "
                            f"per variant: every gain's 95% CI is within "
                            f"±{100 * self.rule.target:g}%")
            return True
        return False


def _cell_spec(cell: Cell, judging: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run's stored spec; `judging` (the variant's line rate) goes at its top level,
    where the reports' line-rate table looks first."""
    g = cell.group
    return {"variant": cell.variant.to_dict(), "group": g.name, "kind": g.kind,
            "definition": g.definition(), "params": cell.params, "repeat": cell.repeat,
            **(judging or {})}


def app_records(cell: Cell, run_dir: Path, elapsed: float
                ) -> tuple[list[dict[str, Any]], str | None]:
    """Figure-of-merit rows (benchmark = group name, size None, statistic 'value') plus the
    wall time; or a problem when a regex finds nothing."""
    g = cell.group
    texts: dict[str, str] = {}

    def read(name: str) -> str:
        if name not in texts:
            p = run_dir / name
            texts[name] = p.read_text(errors="replace") if p.exists() else ""
        return texts[name]

    rows = []
    base = {"benchmark": g.name, "size": None, "np": cell.variant.np, "statistic": "value",
            "n": 1, "status": "ok", "extra": {"params": cell.params}}
    for fom in g.foms:
        if fom.regex is None:
            continue
        if fom.source == "output":
            text = read("stdout.txt") + "\n" + read("stderr.txt")
        elif fom.source in ("stdout", "stderr"):
            text = read(f"{fom.source}.txt")
        else:
            text = read(fom.source)
        matches = fom.regex.findall(text)
        if not matches:
            return [], (f"figure of merit {fom.name!r}: regex {fom.regex.pattern!r} matched "
                        f"nothing in {fom.source}")
        last = matches[-1]
        raw = last[0] if isinstance(last, tuple) else last
        try:
            value = float(raw)
        except ValueError:
            return [], f"figure of merit {fom.name!r}: captured {raw!r}, not a number"
        rows.append({**base, "metric": fom.name, "unit": fom.unit, "better": fom.better,
                     "median": value, "mean": value, "min": value, "max": value,
                     "samples": [value]})
    rows.append({**base, "metric": "wall_time", "unit": "s", "better": "lower",
                 "median": elapsed, "mean": elapsed, "min": elapsed, "max": elapsed,
                 "samples": [elapsed]})
    if g.derived:
        from mpibench.derived import derived_rows

        rows += derived_rows(g.derived, rows, base)
    return rows, None


def app_placement(v: Variant, batch: bool, nodelist: str | None
                  ) -> tuple[list[str], dict[str, int]]:
    """Hosts and ranks per host of an application launch, from what is known without asking
    the program: a local launch without hosts runs every rank here; otherwise the variant's
    hosts or the batch job's node list (ranks per host only when it follows from them)."""
    if v.hosts:
        hosts = sorted(set(v.hosts))
    elif batch and nodelist:
        hosts = [nodelist]  # the scheduler's compact form, e.g. "node[01-04]"
    elif not batch and not v.hostfile:
        hosts = [socket.gethostname()]
    else:
        return [], {}
    if len(hosts) == 1 and not (batch and nodelist and (v.nodes or 1) > 1):
        return hosts, {hosts[0]: v.np}
    if v.ppn and len(hosts) * v.ppn == v.np:
        return hosts, {h: v.ppn for h in hosts}
    return hosts, {}


def reason_line(stderr_tail: str) -> str:
    """The program's own last words, not the launcher's banners (Open MPI frames its messages
    in lines of dashes) around them. When there is nothing but a banner (mpirun could not
    start the program), its first sentence and its last `Key: value` line (e.g.
    `Executable: gmx_mpii`)."""
    own: list[str] = []
    banners: list[list[str]] = []
    inside = False
    for ln in stderr_tail.splitlines():
        if ln.startswith("-----"):
            inside = not inside
            if inside:
                banners.append([])
        elif ln.strip():
            (banners[-1] if inside else own).append(ln.strip())
    if own:
        return own[-1][:200]
    if not banners or not banners[0]:
        return "no error output"
    text = stderr_tail.split("-----", 1)[1].split("\n", 1)[-1]
    paragraph = " ".join(ln.strip() for ln in text.split("\n\n", 1)[0].splitlines())
    sentence = re.split(r"(?<=\.)\s", paragraph, maxsplit=1)[0]
    keyed = [ln for ln in banners[0] if re.match(r"^[A-Z][\w ]*:\s+\S", ln)]
    return (sentence + (f" ({keyed[-1]})" if keyed else ""))[:200]


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the
    PID it names one process, not a later one that reused the PID."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def harness_token() -> str:
    """Who holds a running cell: 'host pid start-ticks', stored in runs.harness."""
    return f"{socket.gethostname()} {os.getpid()} {_proc_start(os.getpid()) or '?'}"


def harness_alive(token: str) -> bool:
    """Whether the harness a token names still runs (False for a token from another host:
    that cannot be checked from here, and the campaign lock guards a shared directory)."""
    parts = token.split()
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return _proc_start(int(parts[1])) == parts[2]


def _inside(path: Path, root: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except OSError:
        return False


def kill_orphans(run_dir: Path) -> list[int]:
    """Processes a dead harness left behind in run_dir (their working directory): stop their
    process groups, by PID. Returns the PIDs found."""
    try:
        target = os.path.realpath(run_dir)
    except OSError:
        return []
    own = os.getpgid(0)
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == target or cwd.startswith(target + os.sep):
            pids.append(int(entry))
    groups = set()
    for pid in pids:
        try:
            pg = os.getpgid(pid)
        except OSError:
            continue
        if pg != own and pid != os.getpid():
            groups.add(pg)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pg in groups:
            try:
                os.killpg(pg, sig)
            except OSError:
                pass
        if sig == signal.SIGTERM and groups:
            time.sleep(1.0)
    return pids
