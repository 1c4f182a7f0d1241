"""`mpibench import`: store IMB, OSU, nccl-tests and NetPIPE outputs beside native results."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from mpibench.commands import _args
from mpibench.commands._common import Formatter, add_db, console, err_console, print_json
from mpibench.importer import check_args, check_files, import_files
from mpibench.store import Store

EXAMPLES = """\
examples:
  # last year's IMB runs on two fabrics, then the gain table and % of line rate
  mpibench import imb-ib.txt --label ib --line-rate 100Gb/s
  mpibench import imb-eth.txt --label eth --line-rate 25Gbit/s
  mpibench compare --campaign imports --by label --benchmark PingPong --gain-table \\
      --size 4M

  # a directory of OSU outputs (np is not printed by OSU collectives: say it)
  mpibench import osu-results/*.txt --np 64 --db site.db

  # nccl-tests text or JSON (-J) output, NetPIPE -o files or stdout, gzip'd files
  mpibench import all_reduce.log ar.json np.out old-run.txt.gz --json

Formats are recognised from the content, not the file name: Intel MPI Benchmarks
(IMB-MPI1/NBC/RMA/EXT, 3.x to 2021.x), OSU Micro-Benchmarks 5.x-7.x, nccl-tests text and
JSON, NetPIPE 3.x. Each file becomes one run (id imp-<sha256 prefix>) in the campaign
"imports"; importing the same file again is skipped. Stored values are the tool's own
per-size summary (IMB t_avg or t[usec], OSU average latency, ...), not samples, so compare
and report show them without confidence intervals. Bandwidths are stored in 10^6 bytes/s
(IMB 4.x's 2^20-based Mbytes/sec is converted). Problems are reported as FILE:LINE: what
was expected; complete rows of a truncated file are kept.

Importing a file again with --label or --line-rate updates the stored run (to add a
forgotten line rate, or rename a set); its rows are never stored twice.

exit status: 0 when at least one file was imported (or was already), with warnings for
problems; 2 when nothing could be imported."""


def register(sub) -> None:
    p = sub.add_parser(
        "import", help="import IMB, OSU, nccl-tests or NetPIPE output files into the store",
        description="Import benchmark outputs produced by other tools, so they can be "
                    "compared and reported with native mpibench results.",
        epilog=EXAMPLES, formatter_class=Formatter)
    p.add_argument("files", nargs="+", metavar="FILE", help="output files (any mix of tools)")
    p.add_argument("--label", metavar="NAME",
                   help="variant name and run label for these files (default: derived from "
                        "the tool, the MPI stack if the file names it, and the file name)")
    p.add_argument("--line-rate", metavar="RATE",
                   help="link speed the runs used, e.g. 100Gb/s, 25Gbit/s, 25GbE, 12.5GB/s; "
                        "stored with each run so compare/report show %% of line rate")
    p.add_argument("--np", type=_args.whole, metavar="N",
                   help="number of ranks, for rows whose file does not say "
                        "(OSU collectives)")
    add_db(p)
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    check_args(args.label, args.line_rate, args.np)  # before the store is created
    check_files(args.files)
    with Store(args.db, check=True) as store:
        report = import_files(store, args.files, label=args.label, line_rate=args.line_rate,
                              np=args.np)
    if args.json:
        print_json(report.to_dict())
        return report.exit_code
    out = console()
    t = Table(title=f"Imported into {args.db} (campaign 'imports')", title_justify="left")
    for col in ("file", "tool", "version", "blocks", "rows", "failed rows", "np", "problems",
                "result"):
        t.add_column(col, justify="right" if col in ("blocks", "rows", "failed rows",
                                                     "problems") else "left")
    for f in report.files:
        if f.status == "imported":
            result = f"[green]imported[/] {f.run_id} as {escape(f.variant or '')}"
            if f.truncated:
                result += " [yellow](truncated)[/]"
        elif f.status == "skipped":
            result = f"[cyan]skipped[/]: {escape(f.note or '')}"
        else:
            result = "[red]not imported[/]"
        t.add_row(escape(f.path), escape(f.tool or "?"), escape(f.version or ""),
                  str(f.blocks), str(f.rows), str(f.failed_rows),
                  ",".join(map(str, f.np)) or ("?" if f.rows else ""),
                  str(len(f.problems)), result)
    out.print(t)
    d = report.to_dict()
    out.print(f"{d['imported']} imported ({d['rows']} rows), {d['skipped']} already in the "
              f"store, {d['failed']} not imported")
    if report.imported:
        out.print("values are the tools' own per-size summaries (means, or IMB t_avg/t_pure), "
                  "not samples: compare and report show them without confidence intervals")
    err = err_console()
    for f in report.files:
        for line in f.problems:
            err.print(("[red]error:[/] " if f.status == "failed" else "[yellow]warning:[/] ")
                      + escape(line))
    if report.exit_code:
        err.print("[red]nothing was imported[/]")
    return report.exit_code
