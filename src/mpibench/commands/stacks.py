"""`mpibench stacks`: list the MPI stacks this machine offers."""

from __future__ import annotations

from rich.table import Table

from mpibench.commands._common import (
    Formatter,
    add_stack_discovery,
    console,
    discover_from_args,
    print_json,
)

EXAMPLES = """\
examples:
  mpibench stacks
  mpibench stacks --stack-prefix /opt/openmpi-5.0.3 --json
  MPIBENCH_STACKS=site-stacks.toml mpibench stacks

A stack is usable when its compiler wrapper builds and runs a probe that prints the MPI
library's own version string (MPI_Get_library_version); results are cached per wrapper."""


def register(sub) -> None:
    p = sub.add_parser("stacks", help="list usable MPI stacks (name, version, wrapper, launcher)",
                       description="List every MPI stack mpibench can use, and why others "
                                   "cannot be used.", epilog=EXAMPLES, formatter_class=Formatter)
    add_stack_discovery(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args) -> int:
    found = discover_from_args(args, include_missing=True)
    if args.json:
        print_json([s.to_dict() for s in found])
        return 0 if any(s.ok for s in found) else 1
    t = Table(title="MPI stacks", title_justify="left")
    for col in ("name", "kind", "version", "MPI", "compiler wrapper", "launcher", "prefix",
                "status"):
        t.add_column(col)
    for s in found:
        if s.alias_of:
            status = f"same as {s.alias_of}"
        else:
            status = "ok" if s.ok else f"[red]unusable:[/] {s.problem}"
        device = " " + s.kind_class.describe(s.library_version) if s.ok else ""
        t.add_row(s.name, s.kind, (s.version + device).strip(), s.mpi_standard, s.mpicc,
                  f"{s.launcher} ({s.launcher_kind})" if s.launcher else "", s.prefix, status)
    console().print(t)
    if not any(s.ok for s in found):
        console().print("no usable MPI stack found; on Debian run 'make setup' (installs "
                        "openmpi-bin libopenmpi-dev mpich libmpich-dev)")
        return 1
    return 0
