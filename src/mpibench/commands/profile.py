"""`mpibench profile`: run any MPI command under the PMPI profiler, report and store it."""

from __future__ import annotations

import argparse
from pathlib import Path

from mpibench.commands._common import (
    Formatter,
    add_db,
    add_stack_discovery,
    console,
    discover_from_args,
    err_console,
    print_json,
)
from mpibench.errors import BenchmarkFailure, UsageError

EXAMPLES = """\
examples:
  # which calls and message sizes dominate? (Open MPI; -x flags are added for you)
  mpibench profile --label gromacs -- mpirun.openmpi -np 2 gmx_mpi mdrun -s topol.tpr

  # the same application on MPICH, then the per-function differences
  mpibench profile --stack mpich --label gromacs-mpich -- mpiexec.hydra -np 2 gmx_mpi ...
  mpibench profile --compare RUN_A RUN_B

  # print a stored profile again, or as JSON
  mpibench profile --show RUN_ID [--json]

The library is built for the stack with its own compiler wrapper (cached) and preloaded into
every rank (LD_PRELOAD); the application is not recompiled. Raw per-rank files and the merged
profile.json go to --out (default ./mpibench-profiles/<run id>). MPI_Pcontrol levels inside
the application: 0 pause, 1 resume, 2 snapshot, 3 reset. Schema: docs/profiler.md."""


def register(sub) -> None:
    p = sub.add_parser("profile", help="profile an MPI application (calls, sizes, time in MPI)",
                       description="Run a launcher command with every rank under the mpibench "
                                   "PMPI profiler; print a report and store the profile.",
                       epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("--stack", metavar="NAME",
                   help="stack name (openmpi, mpich, ...) or compiler wrapper; default: the "
                        "stack whose launcher starts the command")
    add_db(p)
    add_stack_discovery(p)
    p.add_argument("--label", help="name of this profile in comparisons (default: the stack)")
    p.add_argument("--out", metavar="DIR", help="directory for raw and merged profile files")
    p.add_argument("--timeout", type=float, default=3600, metavar="S",
                   help="kill the launch after S seconds (default 3600)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows per table (10)")
    p.add_argument("--json", action="store_true", help="print the merged profile as JSON")
    p.add_argument("--no-store", action="store_true", help="do not write to the results store")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                   help="compare two stored profiles per function (A is the baseline); a run "
                        "id or a label (its latest profile)")
    p.add_argument("--show", metavar="RUN_ID", help="print a stored profile (run id or label)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="launcher command, after `--` (e.g. -- mpirun -np 4 ./app)")
    p.set_defaults(func=run)


def run(args) -> int:
    from mpibench import profiling
    from mpibench.store import Store

    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.top < 1:
        raise UsageError(f"--top {args.top}: expected at least 1")
    if args.compare or args.show:
        if cmd:
            raise UsageError("profile: --compare/--show take no command")
        if not Path(args.db).exists():
            raise UsageError(f"--db {args.db}: no such store")
        with Store(args.db, readonly=True) as store:
            if args.show:
                doc = profiling.load_profile(store, args.show)
                if args.json:
                    print_json(doc)
                else:
                    profiling.render_report(doc, console(), top=args.top)
                return 0
            a, b = args.compare
            cmp = profiling.compare_profiles(profiling.load_profile(store, a),
                                             profiling.load_profile(store, b))
            if args.json:
                print_json(cmp)
            else:
                profiling.render_comparison(cmp, a, b, console())
            return 0
    if not cmd:
        raise UsageError("profile: no command given; expected e.g. "
                         "`mpibench profile -- mpirun -np 2 ./app`")
    run_id = profiling.new_run_id()
    out = Path(args.out) if args.out else Path("mpibench-profiles") / run_id
    # run_profiled resolves the stack and checks the command (UsageError) before it creates
    # the output directory or builds the library
    run_ = profiling.run_profiled(cmd, stack=args.stack, out_dir=out, timeout=args.timeout,
                                  found=discover_from_args(args))
    err = err_console()
    if run_.result.timed_out or run_.timed_out:
        err.print(f"profile: the command timed out after {args.timeout:g} s; the ranks were "
                  "stopped with SIGTERM and wrote what they had")
    elif run_.result.returncode != 0:
        err.print(f"profile: the command exited with {run_.result.returncode}")
        tail = run_.result.stderr_tail(10)
        if tail:
            err.print(tail, markup=False)
    if not args.no_store:
        with Store(args.db) as store:
            run_id = profiling.store_profile(store, run_, label=args.label, run_id=run_id)
    else:
        run_id = None
    if run_.doc is None:
        raise BenchmarkFailure(run_.error or "no profile was written")
    if args.json:
        print_json(run_.doc)
    else:
        profiling.render_report(run_.doc, console(), top=args.top)
        con = console()
        con.print(f"raw files: {run_.out_dir}")
        if run_id:
            con.print(f"stored as run {run_id} in {args.db} (campaign 'profiles')")
    return 0 if run_.status == "done" else 1
