"""One cell of a campaign: prepare its launch (run directory, argv and environment,
the prepare-once and setup steps, the profiler), ingest what the launch left (core JSON Lines,
IMB/OSU/NetPIPE output, figures of merit) and commit the outcome to the store in one
transaction. CellSteps is a part of CampaignRunner (campaign/runner.py), which holds the
campaign's state; the local and batch policies call these steps."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from mpibench import fingerprint
from mpibench.campaign.group_kinds import Prepared as _Prepared
from mpibench.campaign.plan import Cell
from mpibench.campaign.spec import substitute
from mpibench.execute import (
    CellCommand,
    CellOutcome,
    Variant,
    ingest_core,
)
from mpibench.files import write_file
from mpibench.schedulers import (
    StepResult,
)


class CellSteps:
    # a dry run (campaign/scripts.py) prepares cells to show their job scripts: no
    # directory is made, nothing is built
    dry = False

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
            # "--": an input named --help (or -r) is a file, never an option of cp
            *([f'  cp -a -- {inputs} "$d/work/"'] if inputs else []),
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

    def prepare(self, cell: Cell, run_dir: Path, *, local: bool,
                options: dict[str, Any] | None = None) -> _Prepared:
        """options: the core options of this launch when they differ from the group's
        (budget = "auto" sets --target); not part of the cell id, as they only decide how
        long the core samples."""
        return cell.group.kind_class.prepare(self, cell, run_dir, local=local,
                                             options=options)

    def _profile(self, cell: Cell, cmd: CellCommand) -> None:
        """profile = true: every rank runs under the PMPI profiler (LD_PRELOAD), passed through
        the launcher's own flags so the launcher itself is not preloaded."""
        if not cell.variant.profile:
            return
        from mpibench.profile.run import inject_env, profile_env

        if self.dry:  # what profile_env gives, without building or emptying anything
            from mpibench.build import artifact_path

            penv = {"LD_PRELOAD": str(artifact_path(cmd.stack, "profiler")),
                    "MPIBENCH_PROFILE_DIR": str((cmd.run_dir / "profile").resolve())}
        else:
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

    def ingest(self, p: _Prepared, sr: StepResult, nodelist: str | None = None) -> CellOutcome:
        cmd, g = p.cmd, p.cell.group
        exit_code, timed_out, elapsed = sr.exit_code, sr.timed_out, sr.elapsed
        setup_failed = bool(p.step.setup) and not cmd.stdout.exists() and not timed_out
        if setup_failed:
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
                                  elapsed=elapsed, stopped_after=sr.stopped_after)
        kind = g.kind_class
        if kind.reason_from_exit and outcome.status == "failed" \
                and exit_code not in (0, None) \
                and not setup_failed:
            outcome.reason = f"exit status {exit_code}: {reason_line(outcome.stderr_tail)}"
        if timed_out:
            outcome.reason = f"cell timeout: killed after {p.step.timeout_s:g} s"
        self._profiles.pop(p.cell.id, None)
        if p.cell.variant.profile:
            # profiled runs are perturbed: never pooled with unprofiled ones
            outcome.fingerprint["profiler"] = True
        kind.ingest(self, p, sr, outcome, nodelist)
        if p.cell.variant.profile:
            from mpibench.errors import BenchmarkFailure
            from mpibench.profile.document import collect_profile, profile_rows

            try:
                doc = collect_profile(p.step.run_dir / "profile")
            except BenchmarkFailure as exc:
                if outcome.status == "done":
                    outcome.reason = f"no profile: {exc}"
            else:
                self._profiles[p.cell.id] = doc
                outcome.records = list(outcome.records) + profile_rows(doc)
        return outcome

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
        init_us = (outcome.header or {}).get("mpi_init_us")
        if init_us is not None:
            fields["mpi_init_us"] = init_us
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

    def _verify_variant(self, variant: Variant) -> None:
        from mpibench.verify import verify_local

        if variant.name in self.verified or self.stacks[variant.stack].kind == "none":
            return                     # a variant without MPI has no MPI probe
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


def _cell_spec(cell: Cell, judging: dict[str, Any] | None = None,
               instance: str = "") -> dict[str, Any]:
    """A run's stored spec; `judging` (the variant's line rate) goes at its top level,
    where the reports' line-rate table looks first. instance: an ad-hoc run's invocation
    (campaign/adhoc.py), so the report pairs a repeat's launches only within the
    invocation that ran them back-to-back (report.data.launch_round)."""
    g = cell.group
    return {"variant": cell.variant.to_dict(), "group": g.name, "kind": g.kind,
            "definition": g.definition(), "params": cell.params, "repeat": cell.repeat,
            **({"instance": instance} if instance else {}), **(judging or {})}


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
