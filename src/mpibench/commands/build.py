"""`mpibench build`: compile the benchmark core (or profiler) for stacks, into the cache."""

from __future__ import annotations

from mpibench.build import build_component
from mpibench.commands._common import Formatter, add_stack_discovery, console, discover_from_args
from mpibench.stacks import find_stack

EXAMPLES = """\
examples:
  # the core for Open MPI again, ignoring the cache (after a library upgrade in place)
  mpibench build --stack openmpi --force

  # the PMPI profiling library that `mpibench profile` preloads, for MPICH
  mpibench build --component profiler --stack mpich
"""


def register(sub) -> None:
    p = sub.add_parser("build", help="build the C core for one or more stacks (cached)",
                       description="Compile mpibench-core with each stack's own compiler "
                                   "wrapper. Builds are cached by stack identity and source "
                                   "hash; `run` builds on demand, so this is optional.",
                       epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("--stack", action="append", default=[], metavar="NAME",
                   help="stack to build for (repeatable; default: every usable stack)")
    p.add_argument("--component", default="core", choices=["core", "profiler"],
                   help="what to build: core (mpibench-core, the default) or profiler "
                        "(the PMPI library `mpibench profile` preloads)")
    p.add_argument("--force", action="store_true", help="rebuild even if cached")
    add_stack_discovery(p)
    p.set_defaults(func=run)


def run(args) -> int:
    found = discover_from_args(args)
    chosen = [find_stack(n, found) for n in args.stack] or [s for s in found
                                                            if s.ok and not s.alias_of]
    for s in chosen:
        path = build_component(s, args.component, force=args.force)
        console().print(f"{s.name}: {path}")
    return 0
