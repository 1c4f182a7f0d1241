"""Command line: verbs and flags only. Each verb lives in mpibench.commands.<verb> and exposes
register(subparsers); this module discovers them, so adding a verb touches one new file."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from mpibench import __version__, commands
from mpibench.errors import BuildError, MpibenchError, UsageError, one_line

EPILOG = """\
exit status: 0 ok, 1 a benchmark or validation failed, 2 bad input.
Run 'mpibench <verb> --help' for each verb's options and examples."""


class _Parser(argparse.ArgumentParser):
    """Refusals in one line (exit 2), like every other bad input: argparse's default prints
    the whole usage block before its message. Sub-parsers inherit this class."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see '{self.prog} --help')\n")


def _verb_modules() -> dict[str, str]:
    """verb -> its module's name in mpibench.commands (`import` lives in import_cmd)."""
    return {info.name.removesuffix("_cmd"): info.name
            for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_")}


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `verb` (a known one), only that verb's sub-parser, so a
    verb imports its own module and not every other verb's (a fresh `mpibench compare` does
    not import the runner, the builder and the importer: issue 24's compare time)."""
    parser = _Parser(
        prog="mpibench",
        description="Benchmark, profile and compare MPI stacks and interconnects.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mpibench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every external command")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    modules = _verb_modules()
    if verb in modules:
        modules = {verb: modules[verb]}
    for name in sorted(modules.values()):
        importlib.import_module(f"mpibench.commands.{name}").register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    # the verb is the first word that is not a top-level flag (--version, -v take no value)
    parser = build_parser(next((str(a) for a in args_in if not str(a).startswith("-")), None))
    bad = next((a for a in args_in if "\x00" in str(a)), None)
    if bad is not None:
        # no shell can pass one (execve ends strings at NUL); from Python it would reach
        # open() and sqlite3 as "embedded null byte" tracebacks
        print(f"mpibench: error: argument {str(bad)!r} contains a NUL byte", file=sys.stderr)
        return 2
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
        print(f"mpibench: error: {one_line(exc)}", file=sys.stderr)
        if exc.log:
            print(exc.log.rstrip(), file=sys.stderr)
        return exc.exit_code
    except MpibenchError as exc:
        # a refusal (exit 2) is one line whatever user text it quotes
        msg = one_line(exc) if isinstance(exc, UsageError) else str(exc)
        print(f"mpibench: error: {msg}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("mpibench: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from mpibench.store import store_error

        msg = store_error(exc)   # a damaged store met past the opening checks: one line
        if msg is None and isinstance(exc, OSError) and exc.filename is not None:
            # a path from the user that the system refuses (a name longer than NAME_MAX,
            # a component that is a file): one line naming it, not a traceback
            name = str(exc.filename)
            msg = (f"{name if len(name) <= 80 else name[:77] + '...'}: "
                   f"{exc.strerror or exc}")
        if msg is None:
            raise
        print(f"mpibench: error: {one_line(msg)}", file=sys.stderr)
        return 2
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
