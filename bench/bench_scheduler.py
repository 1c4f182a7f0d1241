"""Submitting and following 500 queued cells through the Slurm backend.

Targets (issue 7): harness CPU time per cell under 20 ms; one scheduler query per poll
interval for all jobs together.

Default: the whole harness. A campaign of N application cells (`true`, one rank, one job per
cell, `max_jobs_in_flight = N`) runs through CampaignRunner against its own localhost Slurm
(mpibench.slurm_local; needs root and slurm-wlm + munge): plan, store, job scripts, sbatch,
one squeue per poll, ingest. Every job is submitted held (`#SBATCH --hold`) so all N stay
queued while the runner follows them for a few polls; then they are released and run to the
end (`--quick`: cancelled instead, which the runner records as failed cells). Harness CPU is
this process's CPU time (time.process_time) over the runner's whole run; the CPU of the
sbatch/squeue processes is reported beside it (they run on the login node either way).

`--backend`: the scheduler backend alone (render, sbatch, squeue, parse), no campaign runner.
`--fake`: stand-in sbatch/squeue scripts instead of Slurm (our side only).

    .venv/bin/python bench/bench_scheduler.py [--jobs 500] [--quick] [--backend] [--fake]

Measured on the 2-core Debian 12 VM (Slurm 22.05.8), 500 jobs: see docs/schedulers.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from mpibench.process import run_command
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings
from mpibench.schedulers.slurm import SlurmScheduler
from mpibench.slurm_local import LocalSlurm, SlurmStartError, missing_programs

FAKE_SBATCH = """#!/bin/bash
n=$(cat "{d}/next" 2>/dev/null || echo 1000); echo $((n + 1)) >"{d}/next"; echo "$n"
"""
FAKE_SQUEUE = """#!/bin/bash
for a in "$@"; do case $a in --jobs=*) ids=${{a#--jobs=}};; esac; done
IFS=, read -ra list <<<"$ids"
state="PENDING|JobHeldUser"; [ -e "{d}/cancelled" ] && state="CANCELLED|None"
for j in "${{list[@]}}"; do echo "$j|$state||0|"; done
"""


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def request(base: Path, i: int, settings: SchedulerSettings) -> JobRequest:
    d = base / f"c{i:05d}"
    step = JobStep(cell_id=f"c-{i:016x}", run_dir=d, argv=["true"], env={"MB_I": str(i)},
                   stdout=d / "stdout.txt", stderr=d / "stderr.txt", timeout_s=60)
    return JobRequest(name=f"mbbench-{i}", steps=[step], run_dir=d, nodes=1,
                      tasks_per_node=1, time_limit_s=60, settings=settings)


CAMPAIGN = """
[campaign]
name = "bench-scheduler"
repeats = {jobs}
timeout = 60
verify_transport = false

[variants.one]
stack = "{stack}"
np = 1
launcher = "template"
launcher_args = ["{{program}}"]

[benchmarks.noop]
command = "true"
fom = "wall_time"

[scheduler]
name = "slurm"
time_limit = "00:02:00"
max_jobs_in_flight = {jobs}
poll_interval = 1
poll_max_interval = 2
extra_directives = ["#SBATCH --hold"]
"""


class CountingSlurm(SlurmScheduler):
    """The Slurm backend, recording what each poll cost in queries and which jobs exist."""

    def __init__(self, settings):
        super().__init__(settings)
        self.ids: list[str] = []
        self.per_poll: list[tuple[int, int]] = []  # (jobs asked about, queries made)
        self.submit_done_cpu: float | None = None

    def submit(self, req):
        jid = super().submit(req)
        self.ids.append(jid)
        return jid

    def poll(self, job_ids):
        if self.submit_done_cpu is None:
            self.submit_done_cpu = time.process_time()
        q0 = self.queries
        try:
            return super().poll(job_ids)
        finally:
            self.per_poll.append((len(job_ids), self.queries - q0))


def campaign_bench(args, tmp: Path, options: dict[str, str]) -> dict:
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.campaign.spec import load
    from mpibench.stacks import discover
    from mpibench.store import Store

    stacks = discover()
    stack = next((s.name for s in stacks if s.kind == "mpich"), stacks[0].name)
    camp = tmp / "bench.toml"
    text = CAMPAIGN.format(jobs=args.jobs, stack=stack)
    for k, v in options.items():
        text += f'{k} = "{v}"\n'
    camp.write_text(text)
    spec = load(camp)
    sched = CountingSlurm(spec.scheduler)
    done = threading.Event()

    def release_after_polls() -> None:
        # the queue stays full of held jobs for args.polls polls, then they go
        while not done.is_set():
            if len(sched.ids) == args.jobs and len(sched.per_poll) >= args.polls:
                break
            time.sleep(0.2)
        if done.is_set():
            return
        if args.fake:
            (tmp / "cancelled").write_text("")
        elif args.no_release:
            run_command(["scancel", *sched.ids], timeout=120)
        else:
            run_command(["scontrol", "release", ",".join(sched.ids)], timeout=120)

    with Store(tmp / "bench.db") as store:
        runner = CampaignRunner(spec, store, stacks, scheduler=sched, verify=False)
        runner.check()
        watcher = threading.Thread(target=release_after_polls, daemon=True)
        watcher.start()
        cpu0, child0, wall0 = time.process_time(), children_cpu(), time.monotonic()
        try:
            summary = runner.run(checked=True)
        finally:
            done.set()
        cpu, child, wall = (time.process_time() - cpu0, children_cpu() - child0,
                            time.monotonic() - wall0)
        watcher.join(timeout=10)
    submit_cpu = (sched.submit_done_cpu or cpu0) - cpu0
    return {"cpu": cpu, "child": child, "wall": wall, "submit_cpu": submit_cpu,
            "per_poll": sched.per_poll, "counts": summary.counts, "jobs": len(sched.ids)}


def backend_bench(args, tmp: Path, options: dict[str, str]) -> dict:
    settings = SchedulerSettings(name="slurm", extra_directives=["#SBATCH --hold"],
                                 options=options)
    sched = SlurmScheduler(settings)
    ids: list[str] = []
    out: dict = {"ids": ids}
    # -- submit ----------------------------------------------------------------------
    cpu0, child0, wall0 = time.process_time(), children_cpu(), time.monotonic()
    for i in range(args.jobs):
        ids.append(sched.submit(request(tmp / "runs", i, settings)))
    out["submit"] = (time.process_time() - cpu0, children_cpu() - child0,
                     time.monotonic() - wall0)
    # -- follow while queued ---------------------------------------------------------
    per_poll_queries = []
    cpu0, child0 = time.process_time(), children_cpu()
    for _ in range(args.polls):
        q0 = sched.queries
        states = sched.poll(ids)
        per_poll_queries.append(sched.queries - q0)
    out["poll"] = ((time.process_time() - cpu0) / args.polls,
                   (children_cpu() - child0) / args.polls, per_poll_queries,
                   sum(1 for s in states.values() if s.state == "pending"))
    # -- release and follow to the end -----------------------------------------------
    if not args.no_release:
        run_command(["scontrol", "release", ",".join(ids)], timeout=120)
        cpu0, wall0 = time.process_time(), time.monotonic()
        polls, queries, left = 0, [], set(ids)
        while left and time.monotonic() - wall0 < 600:
            time.sleep(1.0)
            q0 = sched.queries
            st = sched.poll(sorted(left))
            queries.append(sched.queries - q0)
            polls += 1
            left -= {j for j, s in st.items() if s.finished}
        out["follow"] = (polls, max(queries), time.process_time() - cpu0,
                         time.monotonic() - wall0, len(left))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--polls", type=int, default=5, help="polls while all jobs are held")
    ap.add_argument("--backend", action="store_true",
                    help="the Slurm backend alone, without the campaign runner")
    ap.add_argument("--fake", action="store_true", help="stand-in sbatch/squeue, no Slurm")
    ap.add_argument("--no-release", action="store_true",
                    help="cancel the held jobs instead of running them to completion")
    ap.add_argument("--quick", action="store_true",
                    help="held jobs only: submit, poll, cancel")
    args = ap.parse_args()
    if args.quick:
        args.no_release = True
    if not args.fake and (missing_programs() or os.geteuid() != 0):
        print("note: no Slurm here (needs root and slurm-wlm + munge); using --fake")
        args.fake = True

    tmp = Path(tempfile.mkdtemp(prefix="mbbench-", dir="/tmp"))
    cluster = None
    options: dict[str, str] = {}
    if args.fake:
        for name, text in (("sbatch", FAKE_SBATCH), ("squeue", FAKE_SQUEUE)):
            p = tmp / name
            p.write_text(text.format(d=tmp))
            p.chmod(p.stat().st_mode | stat.S_IXUSR)
            options[name] = str(p)
        args.no_release = True
    else:
        cluster = LocalSlurm(tmp / "cluster")
        try:
            cluster.start()
        except SlurmStartError as exc:
            print(f"error: {exc}")
            return 1
        os.environ.update(cluster.env())
    result: dict = {}
    try:
        if args.backend:
            result = backend_bench(args, tmp, options)
        else:
            result = campaign_bench(args, tmp, options)
    finally:
        if cluster is not None:
            left = result.get("ids") or []
            if left:
                run_command(["scancel", *left], timeout=120)
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    n = args.jobs
    mode = "fake sbatch/squeue" if args.fake else "local Slurm 2 nodes"
    ending = "cancelled after the held polls" if args.no_release else "released, run to the end"
    if not args.backend:
        polls = result["per_poll"]
        queries = [q for _, q in polls]
        held = [q for j, q in polls if j == n]
        print(f"bench_scheduler: campaign runner, {n} cells (one job each), {mode}, {ending}")
        print(f"  submit   harness CPU {1000 * result['submit_cpu'] / n:6.2f} ms/cell "
              "(plan, run dirs, scripts, store, sbatch round trips)")
        print(f"  follow   {len(polls)} polls over {result['wall']:.0f} s; "
              f"queries per poll: max {max(queries)}, with all {n} jobs queued "
              f"{sorted(set(held))}")
        print(f"  cells    {result['counts']}")
        per_cell = result["cpu"] / n
        print(f"  total harness CPU {result['cpu']:.2f} s = {1000 * per_cell:.2f} ms/cell "
              f"(target < 20 ms: {'OK' if per_cell < 0.020 else 'OVER'}); sbatch/squeue/"
              f"scontrol CPU {1000 * result['child'] / n:.2f} ms/cell; "
              f"max queries per poll interval {max(queries)} (target 1)")
        return 0
    submit_cpu, submit_child, submit_wall = result["submit"]
    poll_cpu, poll_child, per_poll_queries, held = result["poll"]
    print(f"bench_scheduler: backend only, {n} jobs, {mode}")
    print(f"  submit   harness CPU {1000 * submit_cpu / n:6.2f} ms/cell   "
          f"sbatch CPU {1000 * submit_child / n:6.2f} ms/cell   wall {submit_wall:.1f} s")
    print(f"  poll     harness CPU {1000 * poll_cpu / n:6.3f} ms/cell/poll "
          f"({1000 * poll_cpu:.1f} ms per poll of {n}), squeue CPU {1000 * poll_child:.1f} ms; "
          f"queries per poll {per_poll_queries}; {held}/{n} seen held")
    total = (submit_cpu + poll_cpu) / n
    if "follow" in result:
        polls, maxq, fcpu, fwall, left = result["follow"]
        total += fcpu / n
        print(f"  run      {polls} polls over {fwall:.0f} s until all ended ({left} left), "
              f"max queries per poll {maxq}, harness CPU {1000 * fcpu / n:.2f} ms/cell")
    target = "OK" if total < 0.020 else "OVER"
    print(f"  total harness CPU per cell {1000 * total:.2f} ms (target < 20 ms: {target}); "
          f"queries per poll interval: {max(per_poll_queries)} (target 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
