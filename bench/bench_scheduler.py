"""Submitting and following 500 queued cells through the Slurm backend.

Targets (issue 7): harness CPU time per cell under 20 ms; one scheduler query per poll
interval for all jobs together.

By default it starts its own localhost Slurm (mpibench.slurm_local; needs root and the
slurm-wlm + munge packages), submits N held jobs (`#SBATCH --hold`, so the queue stays full
while we poll), polls them all several times, releases them, follows them until every one
has finished, and cancels whatever is left. `--fake` uses stand-in sbatch/squeue scripts
instead (no Slurm needed; measures our side only).

Harness CPU is this process's CPU time (time.process_time) for rendering scripts, writing
them, running the commands through runner.run_command and parsing answers; the sbatch and
squeue processes' own CPU is reported beside it (they run on the login node either way).

    .venv/bin/python bench/bench_scheduler.py [--jobs 500] [--fake] [--quick]

Measured on the 2-core Debian 12 VM (Slurm 22.05.8), 500 jobs, released and run to the end:
submit 1.37 ms harness CPU per cell (+3.56 ms in sbatch), one poll of 500 jobs 2.4 ms
(+9.4 ms in squeue), 226 polls of 1 query each while they ran (236 s), 2.19 ms per cell in
all.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

from mpibench.runner import run_command
from mpibench.schedulers import JobRequest, JobStep, SchedulerSettings
from mpibench.schedulers.slurm import SlurmScheduler
from mpibench.slurm_local import LocalSlurm, SlurmStartError, missing_programs

FAKE_SBATCH = """#!/bin/bash
n=$(cat "{d}/next" 2>/dev/null || echo 1000); echo $((n + 1)) >"{d}/next"; echo "$n"
"""
FAKE_SQUEUE = """#!/bin/bash
for a in "$@"; do case $a in --jobs=*) ids=${{a#--jobs=}};; esac; done
IFS=, read -ra list <<<"$ids"
for j in "${{list[@]}}"; do echo "$j|PENDING|JobHeldUser||0|"; done
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--polls", type=int, default=5, help="polls while all jobs are held")
    ap.add_argument("--fake", action="store_true", help="stand-in sbatch/squeue, no Slurm")
    ap.add_argument("--no-release", action="store_true",
                    help="cancel the held jobs instead of running them to completion")
    ap.add_argument("--quick", action="store_true",
                    help="held jobs only: submit, poll, cancel (what `make bench` runs)")
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
    settings = SchedulerSettings(name="slurm", extra_directives=["#SBATCH --hold"],
                                 options=options)
    sched = SlurmScheduler(settings)
    ids: list[str] = []
    try:
        # -- submit ------------------------------------------------------------------
        cpu0, child0, wall0 = time.process_time(), children_cpu(), time.monotonic()
        for i in range(args.jobs):
            ids.append(sched.submit(request(tmp / "runs", i, settings)))
        submit_cpu = time.process_time() - cpu0
        submit_child = children_cpu() - child0
        submit_wall = time.monotonic() - wall0

        # -- follow while queued -----------------------------------------------------
        per_poll_queries = []
        cpu0, child0 = time.process_time(), children_cpu()
        for _ in range(args.polls):
            q0 = sched.queries
            states = sched.poll(ids)
            per_poll_queries.append(sched.queries - q0)
        poll_cpu = (time.process_time() - cpu0) / args.polls
        poll_child = (children_cpu() - child0) / args.polls
        held = sum(1 for s in states.values() if s.state == "pending")

        # -- release and follow to the end ---------------------------------------------
        follow = None
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
            follow = (polls, max(queries), time.process_time() - cpu0,
                      time.monotonic() - wall0, len(left))
    finally:
        if cluster is not None and ids:
            run_command(["scancel", *ids], timeout=120)
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    n = args.jobs
    mode = "fake sbatch/squeue" if args.fake else "local Slurm 2 nodes"
    print(f"bench_scheduler: {n} jobs, {mode}")
    print(f"  submit   harness CPU {1000 * submit_cpu / n:6.2f} ms/cell   "
          f"sbatch CPU {1000 * submit_child / n:6.2f} ms/cell   wall {submit_wall:.1f} s")
    print(f"  poll     harness CPU {1000 * poll_cpu / n:6.3f} ms/cell/poll "
          f"({1000 * poll_cpu:.1f} ms per poll of {n}), squeue CPU {1000 * poll_child:.1f} ms; "
          f"queries per poll {per_poll_queries}; {held}/{n} seen held")
    total = (submit_cpu + poll_cpu) / n
    if follow:
        polls, maxq, fcpu, fwall, left = follow
        total += fcpu / n
        print(f"  run      {polls} polls over {fwall:.0f} s until all ended ({left} left), "
              f"max queries per poll {maxq}, harness CPU {1000 * fcpu / n:.2f} ms/cell")
    target = "OK" if total < 0.020 else "OVER"
    print(f"  total harness CPU per cell {1000 * total:.2f} ms (target < 20 ms: {target}); "
          f"queries per poll interval: {max(per_poll_queries)} (target 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
