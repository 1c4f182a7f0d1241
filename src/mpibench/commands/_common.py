"""Options shared by several verbs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console

from mpibench import stacks as stacks_mod
from mpibench.errors import UsageError
from mpibench.termsafe import SafeConsole


def add_stack_discovery(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("stack discovery")
    g.add_argument("--stack-prefix", action="append", default=[], metavar="DIR",
                   help="also use the MPI install under DIR (DIR/bin/mpicc); repeatable")
    g.add_argument("--stacks-file", metavar="FILE",
                   help="TOML file with [stacks.NAME] prefix/mpicc/launcher entries "
                        "(default $MPIBENCH_STACKS or ~/.config/mpibench/stacks.toml)")


def add_db(p: argparse.ArgumentParser, default: str = "mpibench.db", *,
           archive: bool = False) -> None:
    """--db; archive=True for read verbs, which also take a team archive's URL and
    $MPIBENCH_DB (resolved by store.open_db_arg)."""
    if archive:
        p.add_argument("--db", default=None, metavar="PATH|URL",
                       help=f"SQLite results store, or a team archive postgresql://... "
                            f"(default: $MPIBENCH_DB, else ./{default}; docs/archive.md)")
        return
    p.add_argument("--db", default=default, metavar="PATH",
                   help=f"SQLite results store (default: ./{default})")


def discover_from_args(args: argparse.Namespace, include_missing: bool = False):
    return stacks_mod.discover(prefixes=args.stack_prefix, stacks_file=args.stacks_file,
                               include_missing=include_missing)


def console() -> Console:
    # Piped output (CI logs, files) gets a wide virtual terminal so tables are not squeezed.
    return SafeConsole(highlight=False, soft_wrap=False,
                   width=None if sys.stdout.isatty() else 200)


def err_console() -> Console:
    return SafeConsole(stderr=True, highlight=False,
                       width=None if sys.stderr.isatty() else 200)


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    pass


def check_out_dir(path: str | Path, flag: str = "--out") -> None:
    """An output directory that exists as a directory or can be created (its nearest existing
    ancestor is a writable directory); UsageError otherwise, before any work."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag} {out}: not a directory; expected a directory")
    anc = out
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK):
        raise UsageError(f"{flag} {out}: cannot create it ({anc} is not a writable directory)")
