"""Command line: verbs and flags only. Each verb lives in mpibench.commands.<verb> and exposes
register(subparsers); this module discovers them, so adding a verb touches one new file."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from mpibench import __version__, commands
from mpibench.errors import BuildError, MpibenchError

EPILOG = """\
exit status: 0 ok, 1 a benchmark or validation failed, 2 bad input.
Run 'mpibench <verb> --help' for each verb's options and examples."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpibench",
        description="Benchmark, profile and compare MPI stacks and interconnects.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpibench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every external command")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"mpibench.commands.{info.name}")
        module.register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except BuildError as exc:
        print(f"mpibench: error: {exc}", file=sys.stderr)
        if exc.log:
            print(exc.log.rstrip(), file=sys.stderr)
        return exc.exit_code
    except MpibenchError as exc:
        print(f"mpibench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("mpibench: interrupted", file=sys.stderr)
        return 130
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
