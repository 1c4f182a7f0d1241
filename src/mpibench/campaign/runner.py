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
import json
import os
import random
import re
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpibench.campaign.auto_repeats import point_json, refuse_changed_rule
from mpibench.campaign.batch import BatchPolicy, job_name
from mpibench.campaign.cells import CellSteps, _cell_spec
from mpibench.campaign.local import LOCAL_JOB_PREFIX, LocalPolicy
from mpibench.campaign.machine_probe import MachineGate, probe_program, why_not
from mpibench.campaign.plan import Cell, expand, legacy_ids
from mpibench.campaign.spec import CampaignSpec, Group, group_variants
from mpibench.errors import BuildError, UsageError
from mpibench.execute import (
    Variant,
    oversubscribed,
)
from mpibench.launchers import get_launcher
from mpibench.process import kill_orphans, start_ticks
from mpibench.schedulers import (
    JobRequest,
    JobStep,
    Scheduler,
    SchedulerQueryError,
    SubmissionUnknown,
    get_scheduler,
)
from mpibench.stacks import Stack, find_stack
from mpibench.stacks.kinds import preset
from mpibench.store import Store, queries

FINAL = ("done", "failed", "timeout")


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


class CampaignRunner(CellSteps):
    """A campaign's cells through its scheduler backend: locking, store sync and recovery
    here; one cell's steps in campaign/cells.py; how the cells run is its policy object
    (`self.policy`): LocalPolicy (campaign/local.py, one cell at a time) or BatchPolicy
    (campaign/batch.py, jobs polled with back-off), chosen by the scheduler backend."""

    def __init__(self, spec: CampaignSpec, store: Store | None, stacks: list[Stack], *,
                 scheduler: Scheduler | None = None, progress: ProgressFn | None = None,
                 log: Callable[[str], None] | None = None, retry_failed: bool = False,
                 verify: bool | None = None, only_sizes: list[int] | None = None):
        self.spec = spec
        # `campaign run --only-sizes`: the core groups' launches of this invocation measure
        # only these of their sizes (auto_repeats.launch_options)
        self.only_sizes = only_sizes
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
        # the machine-state probe: one gate per mode, made on first use; per group whether
        # "gate" applies to it; set when the probe could not be built (nothing probed)
        self._gates: dict[str, MachineGate] = {}
        self._group_gates: dict[str, bool] = {}
        self._probe_failed = False
        self.harness = harness_token()
        # where this invocation's time went outside its launches (epoch seconds, and the
        # budget plan's seconds): `campaign run --json`'s "timing" (commands/campaign.py);
        # the launches' own times are the store's (runs.started, finished, timing.json)
        self.timing: dict[str, float | bool] = {}
        self.policy: LocalPolicy | BatchPolicy = (BatchPolicy(self) if self.scheduler.batch
                                                  else LocalPolicy(self))

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
            kind = g.kind_class
            nompi = [v.name for v in self._variants_of(g)
                     if kind.mpi and self.stacks[v.stack].kind == "none"]
            if nompi:
                raise UsageError(f"{self.spec.path}: benchmarks.{g.name}: {g.kind} benchmarks "
                                 f"are MPI programs, but variant {nompi[0]} has stack = "
                                 "\"none\" (no MPI); expected an application group (command "
                                 "= ...) for it, or an MPI stack")
            kind.check(self, g)   # the core built, a suite's program found, per stack

    def _probe_step(self, cell: Cell) -> JobStep | None:
        """Batch jobs verify the transport on their own allocation: a probe step first."""
        from mpibench.verify import probe_step

        if self.stacks[cell.variant.stack].kind == "none":
            return None                # no MPI: nothing to probe
        try:
            return probe_step(self.stacks[cell.variant.stack], cell.variant,
                              self.run_dir(cell) / "verify", self.spec.timeout,
                              name=f"{cell.id}-verify")
        except RuntimeError as exc:
            self.log(f"warning: no transport probe for {cell.variant.name}: {exc}")
            return None

    def machine_gate(self, cell: Cell) -> MachineGate | None:
        """The machine-state probe for this cell's launch (campaign/machine_probe.py): a
        gating one, a recording one, or None where it does not apply, with
        `machine_probe = "off"`, or after the probe could not be built."""
        mode = self._probe_mode(cell)
        return self._gate_of(mode) if mode else None

    def reads_machine_state(self, cell: Cell) -> bool:
        """Whether this cell's launch is probed or gated (machine_gate applies): a core
        launch takes its own machine-state reading only then (group_kinds/core.py)."""
        return self._probe_mode(cell) is not None

    def _probe_mode(self, cell: Cell) -> str | None:
        """"gate" only when every variant of the cell's group can be probed: gating one
        side of a comparison would select on one side only (logged once per group)."""
        batch = self.scheduler.batch
        if self.spec.machine_probe == "off" or self._probe_failed or why_not(
                cell.variant, cell.group, self.stacks[cell.variant.stack], batch):
            return None
        if self.spec.machine_probe == "record":
            return "record"
        g = cell.group
        if g.name not in self._group_gates:
            bad = [(v.name, why) for v in self._variants_of(g)
                   if (why := why_not(v, g, self.stacks[v.stack], batch))]
            self._group_gates[g.name] = not bad
            if bad:
                self.log(f'machine_probe = "gate": group {g.name} is recorded, not gated: '
                         f"variant {bad[0][0]}: {bad[0][1]} (gating one side of a "
                         "comparison would select on that side only)")
        return "gate" if self._group_gates[g.name] else "record"

    def _gate_of(self, mode: str) -> MachineGate | None:
        """One MachineGate per mode, sharing one history; the probe built and the history
        read on first use. If either fails: one line, and no launch is probed."""
        if mode not in self._gates:
            try:
                gate = MachineGate(self.spec.directory, mode, self.log)
                gate.program = probe_program()
            except (UsageError, BuildError, OSError) as exc:
                self.log(f"warning: machine_probe: {str(exc).splitlines()[0]}; launches are "
                         "not probed in this run")
                self._probe_failed = True
                return None
            if self._gates:
                gate.history = next(iter(self._gates.values())).history
            self._gates[mode] = gate
        return self._gates[mode]

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
        row = queries.campaign_row(self.store, spec.name, str(spec.path))
        seed = spec.seed
        if spec.order == "random" and seed is None:
            old = json.loads(row["spec_json"]).get("seed") if row else None
            seed = old if old is not None else random.randrange(2**31)
        cells = expand(spec, seed=seed)
        sdict = spec.to_dict()
        sdict["seed"] = seed
        if row is None and cells:
            self._adopt_moved(cells[0].id)
        if row is not None:
            refuse_changed_rule(self.store, row["id"], json.loads(row["spec_json"]), sdict,
                                spec.path, ((c.group.name, point_json(c.params), c.variant.name)
                                            for c in cells))
        with self.store.transaction():
            cid = self.store.add_campaign(spec.name, sdict, file=str(spec.path))
            known = queries.run_seqs(self.store, cid)
            if known and any(c.id not in known for c in cells):
                # cells an earlier mpibench stored under ids without the group's name,
                # timeout and figures of merit keep their runs and results
                renames = [(old, new) for new, old in legacy_ids(spec).items()
                           if old in known and new not in known]
                if renames and self.store.rename_runs(renames):
                    known = queries.run_seqs(self.store, cid)
            fresh = [c for c in cells if c.id not in known]
            if self.store.create_runs(self._new_runs(cid, fresh)) != len(fresh):
                self._foreign_cells(cid, fresh)  # raises; the transaction rolls back
            # an edited file may reorder cells: keep seq in step with this plan
            queries.set_seqs(self.store, [(c.seq, c.id) for c in cells
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
                blob = json.dumps(_cell_spec(cell, self.spec.judging(v.name), self.spec.instance) | {
                    "params": hole, "repeat": hole}, sort_keys=True, default=str)
                parts = blobs[(id(v), id(g))] = blob.split(quoted)
            pj = points.get(id(cell.params))
            if pj is None:
                pj = points[id(cell.params)] = json.dumps(cell.params, sort_keys=True,
                                                          default=str)
            yield dict(run_id=cell.id, campaign_id=cid, variant=v.name, grp=g.name,
                       params_json=pj, repeat=cell.repeat, seq=cell.seq,
                       spec_json=parts[0] + pj + parts[1] + str(cell.repeat) + parts[2],
                       transport_requested=v.transport_request(), scheduler=self.scheduler.name,
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
            queries.set_line_rate(self.store, cid, v.name, text, bps)

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
        req = JobRequest(name=job_name(self.spec.scheduler.job_name_prefix, cells), steps=[],
                         run_dir=self.run_dir(cells[0]))
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
        self.timing["synced"] = time.time()
        status = queries.run_statuses(self.store, cid)
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
        if not self.scheduler.batch:
            todo_variants = {c.variant.name: c.variant for c in todo}
            for note in (oversubscription_notes(todo_variants)
                         + binding_notes(todo_variants, self.stacks)):
                self.log(note)  # once per run, not once per cell
        self._tick("starting")
        self.policy.run(todo, summary, campaign_id=cid, reattach=reattach,
                        by_id={c.id: c for c in cells})
        ids = {c.id for c in cells}
        counts: dict[str, int] = {}
        for rid, state in queries.run_statuses(self.store, cid).items():
            if rid in ids:
                counts[state] = counts.get(state, 0) + 1
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


def oversubscription_notes(variants: dict[str, Any]) -> list[str]:
    """One line for the variants that run more ranks than this machine has cores (local
    launches: no hosts, host file or node count). MPICH busy-polls: at np=3 on 2 cores a
    Barrier takes ms instead of us and `run all` minutes instead of seconds. The fingerprint
    records it too (execute.oversubscription), so such runs are never pooled with others."""
    cores = os.cpu_count() or 1
    over = [f"{name} (np {v.np})" for name, v in variants.items()
            if oversubscribed(v, cores) is not None]
    if not over:
        return []
    return [f"warning: {', '.join(over)} run{'s' if len(over) == 1 else ''} more ranks than "
            f"the {cores} core(s) here: ranks share cores and busy-polling MPI libraries "
            "(MPICH, MVAPICH) slow down by orders of magnitude; fine for correctness, not "
            "for timing (recorded in the fingerprint as 'oversubscribed')"]


def binding_notes(variants: dict[str, Any], stacks: Mapping[str, Stack]) -> list[str]:
    """One line when the variants of a run leave `bind` unset and their launchers place
    ranks differently by default: Open MPI's mpirun binds each rank to a core (np <= 2),
    MPICH's Hydra binds nothing, so on a loaded machine an unbound pair can share one CPU
    (4 of 10 MPICH launches at load 4-6 in the time-to-decision bench; docs/statistics.md)
    and a comparison measures placement, not the libraries. The fingerprint stores the
    `bind` that was asked for, so such runs are told apart only by their stack."""
    bound: list[str] = []
    unbound: list[str] = []
    for name, v in variants.items():
        stack = stacks.get(v.stack)
        if v.bind or stack is None or stack.kind == "none":
            continue
        if v.launcher and v.launcher != stack.launcher_kind:
            continue  # another launcher (srun, mpirun_rsh): its defaults are its own
        (bound if stack.kind_class.binds_by_default else unbound).append(name)
    if not bound or not unbound:
        return []
    return [f"note: variants {', '.join(bound)} (launcher binds ranks to cores by default) "
            f"and {', '.join(unbound)} (launcher does not bind) leave `bind` unset, so their "
            "ranks are placed differently; set bind = \"core\" (or \"none\") on every "
            "variant to compare like with like"]


def process_started(pid: int | None = None) -> float | None:
    """When process `pid` (default: this one) started, in epoch seconds to the clock tick
    (1/100 s here); None where it cannot be read (not Linux, no such process)."""
    ticks = start_ticks(os.getpid() if pid is None else pid)
    return None if ticks is None else ticks_started(ticks)


def ticks_started(ticks: int) -> float | None:
    """A process start in clock ticks after boot (start_ticks; runs.harness keeps it) in
    epoch seconds: now less the time since then on the clock the ticks count on (the
    uptime /proc/uptime gives; /proc/stat's btime is whole seconds, 0.3 s off here);
    None where unknown. For a start long ago, off by what the wall clock was set by since."""
    try:
        before = time.time()
        with open("/proc/uptime") as fh:
            up = float(fh.read().split()[0])
        now = 0.5 * (before + time.time())   # the uptime's instant, within half a pause
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return now - (up - ticks / hz) if hz > 0 else None


def harness_token() -> str:
    """Who holds a running cell: 'host pid start-ticks', stored in runs.harness."""
    return f"{socket.gethostname()} {os.getpid()} {start_ticks(os.getpid()) or '?'}"


def harness_alive(token: str) -> bool:
    """Whether the harness a token names still runs (False for a token from another host:
    that cannot be checked from here, and the campaign lock guards a shared directory)."""
    parts = token.split()
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return str(start_ticks(int(parts[1]))) == parts[2]


def _inside(path: Path, root: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except OSError:
        return False


