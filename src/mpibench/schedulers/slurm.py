"""Slurm backend: sbatch --parsable, one squeue per poll for all jobs, scancel.

Job status comes from squeue (`--states=all`), which answers for pending, running and
recently finished jobs (slurmctld keeps finished jobs for MinJobAge seconds, 300 by
default) with state, reason, node list and the raw exit status. Jobs squeue no longer knows
(the harness was away longer than MinJobAge, e.g. before `campaign resume`) are asked of
sacct in the same poll, when the cluster has accounting (slurmdbd); without accounting they
are left out of the answer and the runner falls back on the files the job left behind.

Every value written into the script goes through shlex.quote; values with newlines or other
control characters are refused (sbatch reads directives line by line).

Backend-specific [scheduler] keys (campaign file):
  qos, constraint, reservation, mem     -> #SBATCH --qos= / --constraint= / ...
  sbatch, squeue, sacct, scancel        -> paths of the commands (wrappers, tests)
  query_retries                         -> attempts per query before it counts as failed (3)
"""

from __future__ import annotations

import math
import os
import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from mpibench.errors import UsageError
from mpibench.files import write_file
from mpibench.process import CommandResult, run_command
from mpibench.schedulers import (
    JobRequest,
    JobStatus,
    Scheduler,
    SchedulerError,
    SchedulerQueryError,
    SubmissionUnknown,
    job_body,
    register_scheduler,
)

SCRIPT_NAME = "job.sh"
HOSTFILE = "hostfile"
QUERY_TIMEOUT = 60.0

# Slurm job states (squeue long names; sacct adds "CANCELLED by UID") -> JOB_STATES
STATE_MAP = {
    "PENDING": "pending", "CONFIGURING": "pending", "REQUEUED": "pending",
    "REQUEUE_HOLD": "pending", "REQUEUE_FED": "pending", "RESV_DEL_HOLD": "pending",
    "RUNNING": "running", "COMPLETING": "running", "SIGNALING": "running",
    "STAGE_OUT": "running", "RESIZING": "running", "SUSPENDED": "running",
    "STOPPED": "running", "UPDATE_DB": "running", "POWER_UP_NODE": "pending",
    "COMPLETED": "completed",
    "FAILED": "failed", "BOOT_FAIL": "node_fail", "SPECIAL_EXIT": "failed",
    "REVOKED": "cancelled", "PREEMPTED": "cancelled",
    "TIMEOUT": "timeout", "DEADLINE": "timeout",
    "NODE_FAIL": "node_fail",
    "CANCELLED": "cancelled",
    "OUT_OF_MEMORY": "oom",
}
# short codes (squeue %t, sacct -o State%2 never; kept for captured text from users)
SHORT_STATES = {"PD": "PENDING", "CF": "CONFIGURING", "R": "RUNNING", "CG": "COMPLETING",
                "CD": "COMPLETED", "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL",
                "CA": "CANCELLED", "OOM": "OUT_OF_MEMORY", "BF": "BOOT_FAIL",
                "DL": "DEADLINE", "PR": "PREEMPTED", "S": "SUSPENDED", "ST": "STOPPED",
                "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "SE": "SPECIAL_EXIT"}
REASONS = {
    "pending": "queued",
    "completed": None,
    "failed": "the job failed",
    "timeout": "the job exceeded its Slurm time limit and was killed",
    "node_fail": "a node of the job failed",
    "cancelled": "the job was cancelled",
    "oom": "the job ran out of memory",
}
# sbatch/qsub failures worth another try: the conversation with the controller was lost
TRANSIENT = re.compile(r"socket timed out|unable to contact|connection refused|connect failure|"
                       r"zero bytes were transmitted|communication connection failure|"
                       r"slurmctld.*(not responding|down)", re.IGNORECASE)
SQUEUE_FIELDS = "JobID:|,State:|,Reason:|,NodeList:|,exit_code:|"
SACCT_FIELDS = "JobIDRaw,State,ExitCode,NodeList,Reason"


SUBMIT_SLACK = 5.0  # seconds: clock difference tolerated between this host and the server


def current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _sbatch_id(res: CommandResult, req: JobRequest) -> str:
    out = res.stdout.strip()
    jid = out.splitlines()[-1].split(";")[0].strip() if out else ""
    if not re.match(r"^\d+(_\d+)?$", jid):
        raise SchedulerError(f"sbatch gave no job id for {req.name}: {res.stdout!r}")
    return jid


def pick_job(squeue_text: str, since: float | None) -> str | None:
    """From `squeue --format=%i|%T|%V` lines: the newest job that is alive, or that
    finished but was submitted at `since` - SUBMIT_SLACK or later."""
    found: list[str] = []
    for line in squeue_text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 3 or not parts[0]:
            continue
        jid, state, submitted = parts[:3]
        alive = not map_state(state, None, None, None).finished
        try:
            t = time.mktime(time.strptime(submitted, "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            t = None
        if alive or (since is not None and t is not None and t >= since - SUBMIT_SLACK):
            found.append(jid)
    return max(found, key=job_id_key) if found else None


def job_id_key(jid: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[._]", jid))


def check_value(value: str, what: str) -> str:
    """A value for a directive or a shell line: refused if it could start a new line."""
    if any(ord(ch) < 32 and ch != "\t" for ch in value):
        raise UsageError(f"scheduler: {what} {value!r} contains a newline or control "
                         "character; expected a single-line value")
    return value


JOB_NAME_MAX = 64


def job_name(req: JobRequest) -> str:
    """Both sbatch and qsub accept these characters everywhere; others become '_'. PBS wants
    a letter first. A long name loses the middle of its prefix, never its end: the cell id
    (and +N for grouped cells) is what tells jobs apart in squeue/qstat."""
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", req.name) or "mpibench"
    if not name[0].isalpha():
        name = "mb" + name
    if len(name) > JOB_NAME_MAX:
        keep = 26  # "-c-" + 16 hex digits + "+NNN" and a little room
        name = name[:JOB_NAME_MAX - keep - 2] + ".." + name[-keep:]
    return name


def job_ntasks(req: JobRequest) -> int | None:
    """Ranks the job's largest step launches (from the variant behind each step), so an
    allocation without ranks-per-node still has a slot for every rank."""
    nps = [getattr(getattr(st.cell, "variant", None), "np", None) for st in req.steps]
    nps = [n for n in nps if isinstance(n, int) and n > 0]
    return max(nps) if nps else None


def slurm_time(seconds: float) -> str:
    """D-HH:MM:SS, rounded up to whole minutes (Slurm enforces limits in minutes)."""
    minutes = max(1, math.ceil(seconds / 60.0))
    d, rem = divmod(minutes, 24 * 60)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


def hostfile_lines(req: JobRequest, ppn: int | None) -> list[str]:
    """Shell lines that write the allocation's hosts (one line per rank slot, block order)
    into the job directory and each step's run directory, for mpirun_rsh, Hydra -f or a
    template launcher. PBS gives a node file; Slurm a compressed node list."""
    q = shlex.quote
    job_hf = q(str(req.run_dir / HOSTFILE))
    # ranks per node: the variant's ppn, else what Slurm placed on each node
    # (SLURM_TASKS_PER_NODE '2(x2),1': 2 on each of the first two nodes, then 1)
    per = str(int(ppn)) if ppn else \
        '"${SLURM_TASKS_PER_NODE:-${SLURM_NTASKS_PER_NODE:-1}}"'
    lines = [
        "# hosts of this allocation, one line per rank slot",
        'if [ -n "${PBS_NODEFILE:-}" ] && [ -r "$PBS_NODEFILE" ]; then',
        f'  cp "$PBS_NODEFILE" {job_hf}',
        # an Open MPI or Hydra built without PBS (tm) support does not see the allocation:
        # the node file is their default host file (with tm it names the same slots)
        f"  export OMPI_MCA_orte_default_hostfile={job_hf} "
        f"PRTE_MCA_prte_default_hostfile={job_hf} HYDRA_HOST_FILE={job_hf}",
        'elif [ -n "${SLURM_JOB_NODELIST:-}" ]; then',
        f"  mb_per=(); mb_tpn={per}",
        '  for mb_t in ${mb_tpn//,/ }; do',
        '    mb_r=1; case $mb_t in *"(x"*) mb_r=${mb_t#*(x}; mb_r=${mb_r%)};; esac',
        '    while [ "$mb_r" -gt 0 ]; do mb_per+=("${mb_t%%(*}"); mb_r=$((mb_r - 1)); done',
        "  done",
        "  mb_k=0",
        '  for mb_h in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do',
        '    mb_n=${mb_per[$mb_k]:-${mb_per[${#mb_per[@]}-1]}}; mb_k=$((mb_k + 1))',
        '    mb_i=0; while [ "$mb_i" -lt "$mb_n" ]; do echo "$mb_h"; '
        'mb_i=$((mb_i + 1)); done',
        f"  done >{job_hf}",
        "else",
        f"  hostname >{job_hf}",
        "fi",
        f"export MPIBENCH_HOSTFILE={job_hf}",
    ]
    for step in req.steps:
        if step.run_dir == req.run_dir:
            continue
        lines.append(f"mkdir -p {q(str(step.run_dir))} && cp {job_hf} "
                     f"{q(str(step.run_dir / HOSTFILE))}")
    return lines + shared_host_lines(req)


SHARED_HOST_FILE = "shared_host"


def shared_host_lines(req: JobRequest) -> list[str]:
    """Several nodes of the allocation on one host (the localhost test cluster: slurmd n1
    and n2 on one machine): Open MPI's mpirun starts a daemon per node and each binds its
    first rank to core 0, so both nodes' ranks share one core (PingPong 0 B: 3990 us
    instead of 7.8 us). Then Open MPI's default binding is turned off for the job (an
    explicit bind, on the command line, still wins) and each step's run directory gets a
    `shared_host` file, which the fingerprint reads (binding "none (nodes share a host)")."""
    q = shlex.quote
    marks = " ".join(q(str(st.run_dir / SHARED_HOST_FILE)) for st in req.steps)
    return [
        "# nodes of this allocation that are one host: no default core binding (see docs)",
        'if [ -n "${SLURM_JOB_NODELIST:-}" ] && command -v scontrol >/dev/null; then',
        '  mb_nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)',
        '  mb_hosts=$(scontrol show node -o "$SLURM_JOB_NODELIST" 2>/dev/null | '
        r"sed -n 's/.*NodeHostName=\([^ ]*\).*/\1/p' | sort -u | wc -l)",
        '  if [ "$mb_nodes" -gt 1 ] && [ "$mb_hosts" -ge 1 ] && '
        '[ "$mb_hosts" -lt "$mb_nodes" ]; then',
        '    export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"',
        f"    for mb_f in {marks}; do mkdir -p \"$(dirname \"$mb_f\")\" && "
        'echo "$mb_nodes nodes on $mb_hosts host(s)" >"$mb_f"; done',
        "  fi",
        "fi",
    ]


def decode_wait_status(raw: str) -> tuple[int | None, int | None]:
    """squeue's exit_code is the raw wait status (768 = exit 3); sacct/scontrol print
    'code:signal'. Returns (exit code, signal)."""
    raw = raw.strip()
    if not raw or raw in ("N/A", "(null)"):
        return None, None
    if ":" in raw:
        code, sig = raw.split(":", 1)
        try:
            return int(code), int(sig)
        except ValueError:
            return None, None
    try:
        status = int(raw)
    except ValueError:
        return None, None
    if status & 0x7F:
        return None, status & 0x7F
    return status >> 8, 0


def map_state(state_text: str, reason: str | None, exit_field: str | None,
              nodelist: str | None) -> JobStatus:
    """One Slurm job line -> JobStatus, with a reason a user can act on."""
    words = state_text.strip().split()
    base = words[0].upper() if words else "UNKNOWN"
    base = SHORT_STATES.get(base, base).rstrip("+")
    state = STATE_MAP.get(base)
    code, sig = decode_wait_status(exit_field or "")
    raw = " ".join(words) or base
    reason = (reason or "").strip()
    if reason in ("None", "(null)", "N/A"):
        reason = ""
    if state is None:
        return JobStatus("failed", code, f"unknown Slurm job state {raw!r}",
                         _nodes(nodelist), raw)
    text = REASONS.get(state)
    if state in ("pending", "running"):
        code = None  # squeue prints 0 before the job has ended
    else:
        # the stored final state carries the job's own exit status: "FAILED exit=3"
        raw += (f" exit={code}" if code else "") + (f" signal={sig}" if sig else "")
    if state == "pending":
        text = f"queued ({reason})" if reason else "queued"
        if reason in ("JobHeldUser", "JobHeldAdmin"):
            text = f"held ({reason})"
    elif state == "running":
        text = None
    elif state == "failed":
        if sig:
            text = f"the job was killed by signal {sig}"
        elif code:
            text = f"the job script exited with status {code}"
        if reason and reason != "NonZeroExitCode":
            text = f"{text} ({reason})"
    elif state == "cancelled":
        text = " ".join(["the job was cancelled"] + words[1:])  # "CANCELLED by 0"
        if base == "PREEMPTED":
            text = "the job was preempted"
    elif reason and state in ("timeout", "node_fail", "oom") and reason not in (
            "TimeLimit", "NodeDown", "OutOfMemory"):
        text = f"{text} ({reason})"
    return JobStatus(state, code, text, _nodes(nodelist), raw)


def record_incomplete(st: JobStatus) -> bool:
    """An ended job whose record does not say yet how its batch script ended: TIMEOUT with
    neither an exit status nor a signal (slurmstepd's report is still on its way)."""
    return st.state == "timeout" and not st.exit_code and " signal=" not in (st.raw or "")


def _nodes(nodelist: str | None) -> str | None:
    n = (nodelist or "").strip()
    return None if n in ("", "(null)", "None assigned", "N/A") else n


def parse_squeue(text: str) -> dict[str, JobStatus]:
    """Lines of `squeue -h -O JobID:|,State:|,Reason:|,NodeList:|,exit_code:|`."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 5 or not parts[0]:
            continue
        jid, st, reason, nodes, code = parts[:5]
        out[jid] = map_state(st, reason, code, nodes)
    return out


def parse_sacct(text: str) -> dict[str, JobStatus]:
    """Lines of `sacct -X -n -P -o JobIDRaw,State,ExitCode,NodeList,Reason`."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or not parts[0].strip():
            continue
        jid = parts[0].strip()
        if "." in jid:  # a step (batch, extern, 0 ...): the allocation line decides
            continue
        reason = parts[4] if len(parts) > 4 else ""
        out[jid] = map_state(parts[1], reason, parts[2], parts[3])
    return out


def parse_scontrol(text: str) -> dict[str, JobStatus]:
    """`scontrol show job -o` lines (key=value words); kept for captured outputs and for
    users who feed it from sites where squeue is restricted."""
    out: dict[str, JobStatus] = {}
    for line in text.splitlines():
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "JobId" not in fields:
            continue
        out[fields["JobId"]] = map_state(fields.get("JobState", ""), fields.get("Reason"),
                                         fields.get("ExitCode"), fields.get("NodeList"))
    return out


@register_scheduler("slurm")
class SlurmScheduler(Scheduler):
    batch = True
    settings_keys = ("qos", "constraint", "reservation", "mem", "sbatch", "squeue", "sacct",
                     "scancel", "query_retries")
    reserved_directives = {
        "-J": "the job name is prefix-cellid, which `campaign resume` looks lost jobs up by "
              "(set scheduler.job_name_prefix instead)",
        "--job-name": "the job name is prefix-cellid, which `campaign resume` looks lost jobs "
                      "up by (set scheduler.job_name_prefix instead)",
        "-o": "the job's output goes to its run directory (slurm-%j.out), which mpibench reads",
        "--output": "the job's output goes to its run directory (slurm-%j.out), which "
                    "mpibench reads",
        "-e": "the job's errors go to its run directory (slurm-%j.err), which mpibench reads",
        "--error": "the job's errors go to its run directory (slurm-%j.err), which "
                   "mpibench reads",
        "-D": "the job runs in its run directory", "--chdir": "the job runs in its run directory",
    }

    # backend keys -> (check, expected form), used by validate_options
    option_forms: dict[str, tuple] = {
        "qos": (str, "a string"), "constraint": (str, "a string"),
        "reservation": (str, "a string"), "mem": ((str, int), 'a size such as "4G"'),
        "sbatch": (str, "a command path"), "squeue": (str, "a command path"),
        "sacct": (str, "a command path"), "scancel": (str, "a command path"),
        "query_retries": (int, "an integer >= 1"),
    }

    @classmethod
    def validate_options(cls, options: dict, where: str = "scheduler") -> None:
        """Check backend keys before anything runs (raises UsageError naming the key)."""
        for key, value in options.items():
            if key not in cls.option_forms:
                raise UsageError(f"{where}.{key}: unknown key; expected one of "
                                 + ", ".join(sorted(cls.option_forms)))
            types, form = cls.option_forms[key]
            bad = isinstance(value, bool) and types is not bool or not isinstance(value, types)
            if not bad and isinstance(value, str):
                bad = not value.strip() or any(ord(ch) < 32 for ch in value)
            if not bad and isinstance(value, int) and not isinstance(value, bool):
                bad = key in ("query_retries", "ncpus") and value < 1
            if bad:
                raise UsageError(f"{where}.{key}: got {value!r}; expected {form}")

    def __init__(self, settings=None):
        super().__init__(settings)
        self.queries = 0  # scheduler status queries made (bench and tests read it)
        self._accounting: bool | None = None  # unknown until sacct first answers

    # -- helpers ---------------------------------------------------------------------
    def _cmd(self, name: str) -> str:
        value = self.settings.options.get(name, name)
        if not isinstance(value, str) or not value:
            raise UsageError(f"scheduler.{name}: got {value!r}; expected a command path")
        return value

    def _run(self, argv: list[str], cwd: Path | None = None) -> CommandResult:
        return run_command(argv, cwd=cwd, timeout=QUERY_TIMEOUT)

    def _query(self, argv: list[str], accept) -> CommandResult:
        """Run a status query, retrying a failed one a few times with a short backoff.
        `accept(result)` says whether an answer is usable even with a non-zero status."""
        retries = int(self.settings.options.get("query_retries", 3))
        delay = 0.5
        last: CommandResult | None = None
        for attempt in range(max(1, retries)):
            self.queries += 1
            res = self._run(argv)
            if res.ok or accept(res):
                return res
            last = res
            if attempt + 1 < retries:
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
        detail = last.stderr_tail(3) if last else ""
        raise SchedulerQueryError(
            f"{argv[0]} failed {retries} times (exit {last.returncode if last else '?'}"
            f"{', timed out' if last and last.timed_out else ''}): {detail.strip()}")

    # -- script ----------------------------------------------------------------------
    def directives(self, req: JobRequest) -> list[str]:
        s = req.settings if req.settings is not None else self.settings
        opts = {**self.settings.options, **s.options}
        q = shlex.quote
        d = [f"--job-name={q(check_value(job_name(req), 'job name'))}",
             f"--output={q(check_value(str(req.run_dir / 'slurm-%j.out'), 'run dir'))}",
             f"--error={q(str(req.run_dir / 'slurm-%j.err'))}",
             f"--chdir={q(str(req.run_dir))}",
             # a node failure is reported as NODE_FAIL, not silently re-run elsewhere
             "--no-requeue"]
        nodes = req.nodes or s.nodes
        ppn = req.tasks_per_node or s.tasks_per_node
        if nodes:
            d.append(f"--nodes={int(nodes)}")
        if ppn:
            d.append(f"--ntasks-per-node={int(ppn)}")
        else:
            ntasks = job_ntasks(req)
            if ntasks:
                d.append(f"--ntasks={ntasks}")
        if req.cpus_per_task:
            d.append(f"--cpus-per-task={int(req.cpus_per_task)}")
        limit = req.time_limit_s or s.time_limit_s
        if limit:
            d.append(f"--time={slurm_time(limit)}")
        part = s.queue_or_partition
        if part:
            d.append(f"--partition={q(check_value(part, 'partition'))}")
        if s.account:
            d.append(f"--account={q(check_value(s.account, 'account'))}")
        if s.exclusive:
            d.append("--exclusive")
        for key in ("qos", "constraint", "reservation", "mem"):
            if opts.get(key) is not None:
                d.append(f"--{key}={q(check_value(str(opts[key]), key))}")
        return [f"#SBATCH {x}" for x in d]

    def render_script(self, req: JobRequest) -> str:
        s = req.settings if req.settings is not None else self.settings
        lines = ["#!/bin/bash", *self.directives(req)]
        for extra in s.extra_directives:
            check_value(extra, "extra directive")
            lines.append(extra if extra.startswith("#") else f"#SBATCH {extra}")
        lines += [f"# mpibench job {job_name(req)}: cells {' '.join(req.cell_ids)}",
                  "# generated; every value below is shell-quoted",
                  f"export MPIBENCH_JOB_DIR={shlex.quote(str(req.run_dir))}"]
        lines += hostfile_lines(req, req.tasks_per_node or s.tasks_per_node)
        return "\n".join(lines) + "\n" + job_body(req)

    # -- actions ---------------------------------------------------------------------
    def write_script(self, req: JobRequest) -> Path:
        req.run_dir.mkdir(parents=True, exist_ok=True)
        path = req.run_dir / SCRIPT_NAME
        write_file(path, self.render_script(req), mode=0o755)
        return path

    def submit(self, req: JobRequest) -> str:
        """sbatch --parsable; see submit_retrying for lost conversations."""
        script = self.write_script(req)
        try:
            return self.submit_retrying(req, [self._cmd("sbatch"), "--parsable", str(script)],
                                        "sbatch", _sbatch_id)
        except SchedulerError as exc:
            why = self._explain_refusal(str(exc), req)
            if why:
                raise SchedulerError(f"{exc}; {why}") from None
            raise

    def _explain_refusal(self, message: str, req: JobRequest) -> str | None:
        """sbatch says 'Memory specification can not be satisfied' and nothing else: say
        what was asked (scheduler.mem) and what the partition's nodes have (RealMemory;
        a slurm.conf without it gives every node 1 MB, as the localhost test cluster had)."""
        if "memory specification" not in message.lower():
            return None
        s = req.settings if req.settings is not None else self.settings
        mem = {**self.settings.options, **s.options}.get("mem")
        argv = [self._cmd("sinfo"), "-h", "-N", "-o", "%N|%m"]
        if s.queue_or_partition:
            argv += ["-p", s.queue_or_partition]
        res = self._run(argv)
        sizes = [int(p[1]) for p in (ln.split("|") for ln in res.stdout.split())
                 if len(p) == 2 and p[1].strip().isdigit()] if res.ok else []
        have = (f"the nodes{' of partition ' + s.queue_or_partition if s.queue_or_partition else ''}"
                f" have at most {max(sizes)} MB configured (slurm.conf RealMemory)"
                if sizes else "sinfo could not say how much memory the nodes have")
        asked = f"scheduler.mem = {mem!r} asks for more per node" if mem is not None else \
            "an extra directive asks for memory"
        return f"{asked}, but {have}: lower scheduler.mem or leave it out"

    def submit_retrying(self, req: JobRequest, argv: list[str], what: str, job_id) -> str:
        """Run a submit command. A refusal (bad partition, over a limit) raises at once. A
        lost conversation with the server (timeout, connect failure) is retried, but only
        after asking whether the job exists anyway under its name, which holds the cell id
        (find_job): the submit command can time out after the server accepted the job, and
        a blind retry would run the cells twice. When that question cannot be answered
        either, SubmissionUnknown: the cells are left for `campaign resume` to settle."""
        retries = int(self.settings.options.get("query_retries", 3))
        delay = 1.0
        since = time.time()
        for attempt in range(max(1, retries)):
            res = self._run(argv, cwd=req.run_dir)
            if res.ok:
                return job_id(res, req)
            detail = "; ".join(ln.strip() for ln in res.stderr_tail(3).splitlines()
                               if ln.strip()) or f"exit {res.returncode}"
            if not (res.timed_out or TRANSIENT.search(res.stderr)):
                raise SchedulerError(f"{what} refused job {req.name}: {detail}")
            if attempt + 1 < retries:
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
            try:
                existing = self.find_job(req, since)
            except SchedulerQueryError as exc:
                raise SubmissionUnknown(
                    f"{what} lost its conversation with the scheduler for job {req.name} "
                    f"({detail}) and the scheduler cannot say whether it took the job "
                    f"({exc}); run `mpibench campaign resume` when it answers again") from None
            if existing:
                return existing
        raise SchedulerError(f"{what} failed {retries} times for job {req.name} and no such "
                             f"job is queued: {detail}")

    def find_job(self, req: JobRequest, since: float | None = None) -> str | None:
        """One squeue for this user's jobs with req's name (all states). A queued or running
        one is ours (the runner never has two jobs of one cell alive); a finished one only
        if it was submitted at `since` or later (SUBMIT_SLACK s allowed for the clocks of
        this host and slurmctld): an earlier attempt of the same cell ended before."""
        res = self._query([self._cmd("squeue"), "--noheader", "--states=all",
                           f"--name={job_name(req)}", f"--user={current_user()}",
                           "--format=%i|%T|%V"], accept=lambda r: False)
        return pick_job(res.stdout, since)

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """One query for all jobs (squeue, sacct for those it no longer knows). A job that
        ran out of time but whose record does not hold yet how the batch script ended comes
        back `unsettled`: slurmctld marks the job TIMEOUT when the limit hits, and
        slurmstepd's report of the script's end (killed by signal 15) can arrive after the
        node's epilog has cleared COMPLETING. The batch loop asks again at its next polls
        (campaign/batch.py, UNSETTLED_POLLS), so no other job waits for it here."""
        found = self._status([str(j) for j in job_ids])
        for st in found.values():
            st.unsettled = record_incomplete(st)
        return found

    def _status(self, ids: list[str]) -> dict[str, JobStatus]:
        if not ids:
            return {}
        res = self._query(
            [self._cmd("squeue"), "--noheader", "--states=all", f"--jobs={','.join(ids)}",
             f"--Format={SQUEUE_FIELDS}"],
            # every id unknown (aged out of slurmctld) is an answer, not a failure
            accept=lambda r: r.returncode == 1 and "Invalid job id" in r.stderr)
        found = parse_squeue(res.stdout)
        missing = [j for j in ids if j not in found]
        if missing and self._accounting is not False:
            found.update(self._sacct(missing))
        return {j: found[j] for j in ids if j in found}

    def _sacct(self, ids: list[str]) -> dict[str, JobStatus]:
        def no_accounting(r: CommandResult) -> bool:
            return "accounting storage is disabled" in r.stderr.lower()

        res = self._query([self._cmd("sacct"), "-X", "-n", "-P", f"--jobs={','.join(ids)}",
                           f"--format={SACCT_FIELDS}"], accept=no_accounting)
        if no_accounting(res):
            self._accounting = False  # a property of the cluster: stop asking
            return {}
        self._accounting = True
        return parse_sacct(res.stdout)

    def cancel(self, job_id: str) -> None:
        res = self._run([self._cmd("scancel"), str(job_id)])
        if not res.ok and "already completed" not in res.stderr.lower() \
                and "invalid job id" not in res.stderr.lower():
            raise SchedulerError(f"scancel {job_id} failed: {res.stderr_tail(3).strip()}")
