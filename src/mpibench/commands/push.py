"""`mpibench push`: send a local store's finished runs to a team archive (PostgreSQL)."""

from __future__ import annotations

import getpass
import os
import re
import socket

from rich.markup import escape

from mpibench.commands._common import Formatter, console, err_console, print_json
from mpibench.errors import UsageError

EXAMPLES = """\
examples:
  mpibench push postgresql://alice@db.example.org/mpibench --site hpc1
  export MPIBENCH_ARCHIVE=postgresql://alice@db.example.org/mpibench   # password: ~/.pgpass
  mpibench push --db-from campaigns/fabric/mpibench.db --site hpc1
  mpibench compare --db "$MPIBENCH_ARCHIVE" --campaign fabric         # every read verb

Only finished runs (done, failed, timeout) are sent, with their results, raw samples,
fingerprints, profiles and campaign descriptions. Records are content-addressed: pushing
again, or pushing overlapping stores from several machines at once, stores each run once.
One push is one transaction: an interrupted push leaves nothing behind; push again.
Put the password in ~/.pgpass or $PGPASSWORD rather than the URL; it is never printed.
See docs/archive.md."""

_SITE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def register(sub) -> None:
    p = sub.add_parser("push", help="send finished runs to a team archive (PostgreSQL)",
                       description="Send a local store's finished runs to a PostgreSQL team "
                                   "archive, which every read verb can then use with "
                                   "--db postgresql://...",
                       epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("archive", nargs="?", metavar="URL",
                   help="postgresql://[user[:password]@]host[:port]/database "
                        "(default $MPIBENCH_ARCHIVE)")
    p.add_argument("--db-from", default="mpibench.db", metavar="PATH",
                   help="the local SQLite store to push (default ./mpibench.db)")
    p.add_argument("--site", metavar="NAME",
                   help="site or cluster name recorded with each run (default "
                        "$MPIBENCH_SITE, else this host's name)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def check_site(text: str) -> str:
    if not _SITE.match(text):
        raise UsageError(f"--site {text[:80]!r}: expected a site or cluster name of letters, "
                         "digits, '.', '_' and '-' (at most 64, starting with a letter or "
                         "digit)")
    return text


def run(args) -> int:
    from pathlib import Path

    from mpibench.store.archive import push
    from mpibench.store.engine import is_url, mask_url

    url = args.archive or os.environ.get("MPIBENCH_ARCHIVE")
    if not url:
        raise UsageError("push: no archive given (pass a postgresql:// URL or set "
                         "$MPIBENCH_ARCHIVE)")
    if not is_url(url):
        raise UsageError(f"push: {mask_url(url)[:200]!r} is not a postgresql:// URL")
    site = check_site(args.site if args.site is not None else
                      os.environ.get("MPIBENCH_SITE") or
                      (socket.gethostname().split(".")[0] or "local"))
    if not Path(args.db_from).is_file():
        raise UsageError(f"--db-from {args.db_from}: no such store")
    con = err_console()
    summary = push(args.db_from, url, site=site, user=getpass.getuser(),
                   progress=None if args.json else (lambda m: con.print(escape(m))))
    if args.json:
        print_json({**summary.__dict__, "archive": mask_url(url)})
        return 0
    console().print(escape(
        f"pushed {summary.runs_sent} finished run(s) from {args.db_from} to {mask_url(url)} "
        f"as {summary.origin}: {summary.runs_new} new ({summary.results_new} results, "
        f"{summary.profiles_new} profiles, {summary.campaigns_new} campaigns, "
        f"{summary.fingerprints_new} fingerprints), "
        f"{summary.runs_sent - summary.runs_new} already there"
        + (f" ({summary.runs_updated} with a new label, variant name or spec, updated)"
           if summary.runs_updated else "") + "; "
        f"{summary.skipped_unfinished} unfinished run(s) not sent; {summary.seconds:.1f} s"))
    return 0
