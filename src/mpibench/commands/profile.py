"""`mpibench profile`: run any MPI command under the PMPI profiler, report and store it."""

from __future__ import annotations

import argparse
from pathlib import Path

from mpibench.commands import _args
from mpibench.commands._common import (
    Formatter,
    add_db,
    add_stack_discovery,
    check_out_dir,
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

  # the same application on MPICH, three launches each, then the diff of the two labels
  for i in 1 2 3; do
    mpibench profile --label ompi -- mpirun.openmpi -np 2 gmx_mpi mdrun ...
    mpibench profile --label mpich -- mpiexec.hydra -np 2 gmx_mpi mdrun ...
  done
  mpibench profile --compare ompi mpich
  mpibench profile --compare shm tcp --campaign gromacs-water-profile   # campaign variants

  # print a stored profile again, as JSON, or its size buckets / functions as CSV
  mpibench profile --show RUN_ID [--json | --csv sizes | --csv functions] [--buckets log2]

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
    p.add_argument("--timeout", type=_args.seconds, default=3600, metavar="S",
                   help="kill the launch after S seconds (default 3600)")
    p.add_argument("--top", type=_args.count, default=10, metavar="N", help="rows per table (10)")
    p.add_argument("--json", action="store_true", help="print the merged profile as JSON")
    p.add_argument("--no-store", action="store_true", help="do not write to the results store")
    p.add_argument("--csv", choices=["sizes", "functions"],
                   help="print the size buckets or the functions as CSV (with --show, after "
                        "a run, or of the diff with --compare)")
    p.add_argument("--buckets", metavar="SPEC", default="coarse",
                   help="message-size buckets: coarse (0, 1-64 B, 64 B-1 KiB, 1-16 KiB, "
                        "16-256 KiB, 256 KiB-4 MiB, 4-64 MiB, more; default), log2 (every "
                        "power of two), or edges such as 64,1K,16K,256K")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="diff of B against A (the baseline), per function and per size "
                        "bucket: each a run id (one launch) or a variant/label (all its "
                        "launches), tested on the launches")
    p.add_argument("--campaign", metavar="NAME",
                   help="with --compare: variants of this campaign only")
    p.add_argument("--show", metavar="RUN_ID",
                   help="print a stored profile (run id, or the latest of a variant/label)")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="launcher command, after `--` (e.g. -- mpirun -np 4 ./app)")
    p.set_defaults(func=run)


def _print(doc, args, edges) -> None:
    """A profile as the report, JSON (with its size buckets) or CSV."""
    from mpibench import profile

    if args.json:
        print_json({**doc, "size_buckets": profile.buckets.size_buckets(doc, edges)})
    elif args.csv:
        import sys

        from mpibench.report.render import csv_rows

        recs = (profile.buckets.bucket_records(doc, edges) if args.csv == "sizes"
                else profile.buckets.function_records(doc))
        cols = list(recs[0]) if recs else ["bucket"]
        sys.stdout.write(csv_rows([cols] + [[r.get(c) for c in cols] for r in recs]))
    else:
        profile.document.render_report(doc, console(), top=args.top, buckets=edges)


def _from_store(args, edges) -> int:
    """--show RUN, --compare A B: a stored profile, or the diff of two variants' launches."""
    from mpibench import profile
    from mpibench.store import Store

    if args.compare and args.show:
        raise UsageError("profile: --compare and --show: give one")
    if not Path(args.db).exists():
        raise UsageError(f"--db {args.db}: no such store")
    with Store(args.db, readonly=True) as store:
        if args.show:
            _print(profile.document.load_profile(store, args.show), args, edges)
            return 0
        a, b = args.compare
        la = profile.diff.load_launches(store, a, campaign=args.campaign)
        lb = profile.diff.load_launches(store, b, campaign=args.campaign)
        if la[0].np != lb[0].np:
            raise UsageError(f"--compare {a} {b}: {a} ran at np {la[0].np}, {b} at np "
                             f"{lb[0].np}; a diff compares launches at one np (compare "
                             "across np with `mpibench compare` or `report --scaling`)")
        notes = [profile.diff.fingerprint_note(store, la, f"A ({a})"),
                 profile.diff.fingerprint_note(store, lb, f"B ({b})")]
        diff = profile.diff.diff_launches(la, lb, edges=edges, top=args.top, notes=notes)
        if args.json:
            print_json(diff)
        elif args.csv:
            from mpibench.report.render import render_table

            kind = {"sizes": "profile-diff-sizes", "functions": "profile-diff-functions"}
            t = next(t for t in profile.diff.diff_tables(diff, a, b)
                     if t.kind == kind[args.csv])
            print(render_table(t, "csv"), end="")
        else:
            profile.diff.render_diff(diff, a, b, console())
        return 0


def run(args) -> int:
    from mpibench import profile
    from mpibench.store import Store

    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.top < 1:
        raise UsageError(f"--top {args.top}: expected at least 1")
    edges = profile.buckets.parse_buckets(args.buckets)
    if args.json and args.csv:
        raise UsageError("--json and --csv: give one")
    if args.campaign and not args.compare:
        raise UsageError("--campaign: only with --compare")
    if args.compare or args.show:
        if cmd:
            raise UsageError("profile: --compare/--show take no command")
        return _from_store(args, edges)
    if not cmd:
        raise UsageError("profile: no command given; expected e.g. "
                         "`mpibench profile -- mpirun -np 2 ./app`")
    run_id = profile.document.new_run_id()
    out = Path(args.out) if args.out else Path("mpibench-profiles") / run_id
    check_out_dir(out)
    # run_profiled resolves the stack and checks the command (UsageError) before it creates
    # the output directory or builds the library
    run_ = profile.run.run_profiled(cmd, stack=args.stack, out_dir=out, timeout=args.timeout,
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
            run_id = profile.document.store_profile(store, run_, label=args.label, run_id=run_id)
    else:
        run_id = None
    if run_.doc is None:
        raise BenchmarkFailure(run_.error or "no profile was written")
    if args.json or args.csv:
        _print(run_.doc, args, edges)
    else:
        profile.document.render_report(run_.doc, console(), top=args.top, buckets=edges)
        con = console()
        con.print(f"raw files: {run_.out_dir}")
        if run_id:
            con.print(f"stored as run {run_id} in {args.db} (campaign 'profiles')")
    return 0 if run_.status == "done" else 1
