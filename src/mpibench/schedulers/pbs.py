"""PBS backend (PBS Pro / OpenPBS, Torque, and Slurm's `slurm-wlm-torque` wrappers):
qsub, one `qstat -f` per poll for all jobs, qdel.

Resources are a `select` line, `#PBS -l select=N:ncpus=C:mpiprocs=P`, with C = the `ncpus`
key (default P) and P = ranks per node; `resources = "nodes"` writes Torque's
`-l nodes=N:ppn=P` instead. Finished jobs: Torque and Slurm's wrapper keep them in plain
`qstat -f` (state C); PBS Pro needs `qstat -x`, enabled by `finished_jobs = true`. A job that
has left qstat altogether is missing from the poll answer, and the runner falls back on the
files the job left behind.

Exit status mapping (qstat -f `exit_status` / `Exit_status`): 0 completed; PBS Pro's
JOB_EXEC_KILL_WALLTIME (-29) timeout; JOB_EXEC_KILL_MEM/VMEM (-27/-26) out of memory;
other negative values are PBS's own failures to start or run the job (node failure for
-1..-3, -20, the rest failed); >= 256 killed by signal (status - 256); a `comment` that
says the walltime was exceeded or the job was deleted decides timeout or cancelled.

Backend-specific [scheduler] keys: ncpus, resources ("select" | "nodes"), place,
finished_jobs, qsub, qstat, qdel, query_retries.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from collections.abc import Sequence

from mpibench.errors import UsageError
from mpibench.schedulers import (
    JobRequest,
    JobStatus,
    SchedulerError,
    job_body,
    register_scheduler,
)
from mpibench.schedulers.slurm import (
    SUBMIT_SLACK,
    SlurmScheduler,
    check_value,
    current_user,
    hostfile_lines,
    job_id_key,
    job_name,
    job_ntasks,
)

PBS_STATE = {"Q": "pending", "H": "pending", "W": "pending", "T": "pending", "S": "running",
             "U": "running", "B": "running", "R": "running", "E": "running", "M": "pending",
             "C": "finished", "F": "finished", "X": "finished"}
STATE_WORDS = {"Q": "queued", "H": "held", "W": "waiting for its start time",
               "T": "being moved", "M": "moved to another server"}
WALLTIME_EXIT = -29
MEM_EXITS = (-26, -27)
NODE_EXITS = (-1, -2, -3, -20)
_JOB = re.compile(r"^Job Id:\s*(\S+)", re.MULTILINE)


def pbs_walltime(seconds: float) -> str:
    total = max(1, math.ceil(seconds))
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def _seconds(hms: str | None) -> int | None:
    """PBS durations: "HH:MM:SS" (hours may exceed 24), "MM:SS" or plain seconds."""
    try:
        parts = [int(x) for x in (hms or "").strip().split(":")]
    except ValueError:
        return None
    if not parts or len(parts) > 3:
        return None
    total = 0
    for x in parts:
        total = total * 60 + x
    return total


def _stamp(text: str | None) -> float | None:
    """qstat -f times such as "Mon Nov 23 12:22:36 2026" (local time)."""
    try:
        return time.mktime(time.strptime((text or "").strip(), "%a %b %d %H:%M:%S %Y"))
    except ValueError:
        return None


def ran_out_of_walltime(attrs: dict[str, str]) -> bool:
    """A finished job that used all of its walltime was stopped by it. PBS Pro and Torque
    report resources_used.walltime; Slurm's qstat wrapper reports neither an exit status nor
    resources_used, but prints a finished job's start as mtime and its end as ctime (real
    PBS servers print the creation time as ctime, which precedes mtime, so this never fires
    there)."""
    limit = _seconds(attrs.get("Resource_List.walltime"))
    if not limit:
        return False
    used = _seconds(attrs.get("resources_used.walltime"))
    if used is not None:
        return used >= limit
    start, end = _stamp(attrs.get("mtime")), _stamp(attrs.get("ctime"))
    return start is not None and end is not None and end - start >= limit


def parse_qstat_full(text: str) -> dict[str, dict[str, str]]:
    """`qstat -f` text -> {job id: {attribute: value}}. Long values continue on lines
    indented with a tab (PBS Pro) and are joined."""
    jobs: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    last_key = None
    for line in text.splitlines():
        m = _JOB.match(line)
        if m:
            current = jobs.setdefault(m.group(1).strip(), {})
            last_key = None
            continue
        if current is None or not line.strip():
            continue
        if " = " in line and line[:1].isspace() and not line.startswith("\t\t"):
            key, value = line.strip().split(" = ", 1)
            current[key.strip()] = value.strip()
            last_key = key.strip()
        elif last_key is not None:  # continuation
            current[last_key] += line.strip()
    return jobs


def map_pbs(attrs: dict[str, str]) -> JobStatus:
    code_letter = attrs.get("job_state", "").strip()[:1].upper()
    kind = PBS_STATE.get(code_letter)
    nodes = attrs.get("exec_host") or None
    if nodes:
        # "n1/0*2+n2/0*2" or "n1/1+n2/1" -> "n1,n2"
        seen: list[str] = []
        for part in nodes.split("+"):
            host = part.split("/")[0]
            if host and host not in seen:
                seen.append(host)
        nodes = ",".join(seen)
    comment = attrs.get("comment", "")
    raw = f"job_state={code_letter or '?'}"
    status_text = attrs.get("Exit_status", attrs.get("exit_status"))
    if status_text is not None:
        raw += f" exit_status={status_text}"
    if kind is None:
        return JobStatus("failed", None, f"unknown PBS job state {code_letter!r}", nodes, raw)
    if kind == "pending":
        reason = STATE_WORDS.get(code_letter, "queued")
        return JobStatus("pending", None, reason + (f" ({comment})" if comment else ""),
                         nodes, raw)
    if kind == "running":
        return JobStatus("running", None, None, nodes, raw)
    low = comment.lower()
    try:
        status = int(status_text) if status_text is not None else None
    except ValueError:
        status = None
    if status == WALLTIME_EXIT or ("walltime" in low and "exceed" in low) \
            or ran_out_of_walltime(attrs):
        return JobStatus("timeout", None, "the job exceeded its PBS walltime and was killed"
                         + (f" ({comment})" if comment else ""), nodes, raw)
    if status in MEM_EXITS or ("mem" in low and "exceed" in low):
        return JobStatus("oom", None, "the job exceeded its memory limit"
                         + (f" ({comment})" if comment else ""), nodes, raw)
    if "deleted" in low or "qdel" in low or "cancel" in low:
        return JobStatus("cancelled", status, "the job was deleted"
                         + (f" ({comment})" if comment else ""), nodes, raw)
    if status is None or status == 0:
        return JobStatus("completed", status, None, nodes, raw)
    if status in NODE_EXITS:
        return JobStatus("node_fail", status, f"PBS could not run the job on its nodes "
                         f"(exit status {status})" + (f": {comment}" if comment else ""),
                         nodes, raw)
    if status < 0:
        return JobStatus("failed", status, f"PBS failed the job (exit status {status})"
                         + (f": {comment}" if comment else ""), nodes, raw)
    if status >= 256:
        return JobStatus("failed", None, f"the job was killed by signal {status - 256}",
                         nodes, raw)
    return JobStatus("failed", status, f"the job script exited with status {status}",
                     nodes, raw)


def _qsub_id(res, req: JobRequest) -> str:
    jid = res.stdout.strip().splitlines()[-1].strip() if res.stdout.strip() else ""
    if not jid:
        raise SchedulerError(f"qsub gave no job id for {req.name}: {res.stdout!r}")
    return jid


def pick_pbs_job(jobs: dict[str, dict[str, str]], name: str, user: str,
                 since: float | None) -> str | None:
    """The newest of user's jobs called name that is alive, or that finished but was
    queued (qtime) at `since` - SUBMIT_SLACK or later (see SlurmScheduler.find_job)."""
    found = []
    for jid, attrs in jobs.items():
        owner = attrs.get("Job_Owner", "")
        if attrs.get("Job_Name") != name or (owner and owner.split("@")[0] != user):
            continue
        kind = PBS_STATE.get(attrs.get("job_state", "").strip()[:1].upper())
        queued = _stamp(attrs.get("qtime"))
        if kind in ("pending", "running") or (
                since is not None and queued is not None and queued >= since - SUBMIT_SLACK):
            found.append(jid)
    return max(found, key=job_id_key) if found else None


@register_scheduler("pbs")
class PBSScheduler(SlurmScheduler):
    """Shares the query/retry machinery with the Slurm backend; only the words differ."""

    settings_keys = ("ncpus", "resources", "place", "finished_jobs", "qsub", "qstat", "qdel",
                     "query_retries")
    reserved_directives = {
        "-N": "the job name is prefix-cellid, which `campaign resume` looks lost jobs up by "
              "(set scheduler.job_name_prefix instead)",
        "-o": "the job's output goes to its run directory (pbs.out), which mpibench reads",
        "-e": "the job's errors go to its run directory (pbs.err), which mpibench reads",
    }
    option_forms = {
        "ncpus": (int, "an integer >= 1"), "resources": (str, '"select" or "nodes"'),
        "place": (str, 'a PBS placement such as "scatter:excl"'),
        "finished_jobs": (bool, "true or false"), "qsub": (str, "a command path"),
        "qstat": (str, "a command path"), "qdel": (str, "a command path"),
        "query_retries": (int, "an integer >= 1"),
    }

    @classmethod
    def validate_options(cls, options: dict, where: str = "scheduler") -> None:
        super().validate_options(options, where)
        if options.get("resources", "select") not in ("select", "nodes"):
            raise UsageError(f"{where}.resources: got {options['resources']!r}; expected "
                             '"select" or "nodes"')

    def directives(self, req: JobRequest) -> list[str]:
        s = req.settings if req.settings is not None else self.settings
        opts = {**self.settings.options, **s.options}
        q = shlex.quote
        nodes = int(req.nodes or s.nodes or 1)
        ntasks = job_ntasks(req)
        ppn = int(req.tasks_per_node or s.tasks_per_node
                  or (-(-ntasks // nodes) if ntasks else 1))
        ncpus = int(opts.get("ncpus") or ppn * (req.cpus_per_task or 1))
        style = opts.get("resources", "select")
        if style not in ("select", "nodes"):
            raise UsageError(f"scheduler.resources: got {style!r}; expected \"select\" or "
                             "\"nodes\"")
        # bash, whatever the user's login shell: Torque ignores the script's shebang, and
        # the steps need bash >= 4.1 (schedulers.step_lines)
        d = [f"-N {q(check_value(job_name(req), 'job name'))}", "-S /bin/bash"]
        if style == "select":
            d.append(f"-l select={nodes}:ncpus={ncpus}:mpiprocs={ppn}"
                     + (f":ompthreads={int(req.cpus_per_task)}" if req.cpus_per_task else ""))
            place = opts.get("place") or ("scatter:excl" if s.exclusive else "scatter")
            d.append(f"-l place={q(check_value(str(place), 'place'))}")
        else:
            d.append(f"-l nodes={nodes}:ppn={ppn}")
            if s.exclusive:
                d.append("-n")
        limit = req.time_limit_s or s.time_limit_s
        if limit:
            d.append(f"-l walltime={pbs_walltime(limit)}")
        queue = s.queue_or_partition
        if queue:
            d.append(f"-q {q(check_value(queue, 'queue'))}")
        if s.account:
            d.append(f"-A {q(check_value(s.account, 'account'))}")
        d += [f"-o {q(check_value(str(req.run_dir / 'pbs.out'), 'run dir'))}",
              f"-e {q(str(req.run_dir / 'pbs.err'))}",
              "-r n"]  # not rerunnable: a node failure is reported, not silently re-run
        return [f"#PBS {x}" for x in d]

    def render_script(self, req: JobRequest) -> str:
        s = req.settings if req.settings is not None else self.settings
        lines = ["#!/bin/bash", *self.directives(req)]
        for extra in s.extra_directives:
            check_value(extra, "extra directive")
            lines.append(extra if extra.startswith("#") else f"#PBS {extra}")
        lines += [f"# mpibench job {job_name(req)}: cells {' '.join(req.cell_ids)}",
                  "# generated; every value below is shell-quoted",
                  f"export MPIBENCH_JOB_DIR={shlex.quote(str(req.run_dir))}",
                  f"cd {shlex.quote(str(req.run_dir))}"]
        lines += hostfile_lines(req, req.tasks_per_node or s.tasks_per_node)
        return "\n".join(lines) + "\n" + job_body(req)

    def submit(self, req: JobRequest) -> str:
        """qsub, retried like sbatch when the conversation with the server was lost, after
        looking for the job by name (find_job)."""
        script = self.write_script(req)
        # -r n on the command line too: Slurm's qsub wrapper ignores it in the script
        return self.submit_retrying(req, [self._cmd("qsub"), "-r", "n", str(script)], "qsub",
                                    _qsub_id)

    def find_job(self, req: JobRequest, since: float | None = None) -> str | None:
        """PBS has no portable query by name: one `qstat -f` of every job the server shows
        (`-x` with finished_jobs), filtered on Job_Name and Job_Owner. Only used after a
        lost qsub or a harness killed around one, so its size does not matter."""
        argv = [self._cmd("qstat"), "-f"]
        if self.settings.options.get("finished_jobs"):
            argv.append("-x")
        # 153: no jobs at all (Slurm's wrapper), an answer
        res = self._query(argv, accept=lambda r: r.returncode == 153 and not r.timed_out)
        return pick_pbs_job(parse_qstat_full(res.stdout), job_name(req), current_user(), since)

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        ids = [str(j) for j in job_ids]
        if not ids:
            return {}
        opts = self.settings.options
        argv = [self._cmd("qstat"), "-f"]
        if opts.get("finished_jobs"):
            argv.append("-x")
        # 153 = PBSE_UNKJOBID & 0xff: some ids are unknown, the others are still listed
        res = self._query(argv + ids, accept=lambda r: r.returncode == 153 and not r.timed_out)
        jobs = parse_qstat_full(res.stdout)
        out: dict[str, JobStatus] = {}
        for jid in ids:
            attrs = jobs.get(jid) or jobs.get(jid.split(".")[0])
            if attrs is None:  # "123" asked, "123.server" answered, or the other way round
                attrs = next((a for k, a in jobs.items() if k.split(".")[0] ==
                              jid.split(".")[0]), None)
            if attrs is not None:
                out[jid] = map_pbs(attrs)
        return out

    def cancel(self, job_id: str) -> None:
        res = self._run([self._cmd("qdel"), str(job_id)])
        if not res.ok and res.returncode != 153 and "unknown job" not in res.stderr.lower():
            raise SchedulerError(f"qdel {job_id} failed: {res.stderr_tail(3).strip()}")

