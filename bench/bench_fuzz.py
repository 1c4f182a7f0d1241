#!/usr/bin/env python3
"""Fuzz every input surface of mpibench (prints counts per surface, asserts nothing).

The surfaces are one list, tests/support/surfaces.py SURFACES (the same names as docs/fuzzing.md):
CLI flags, campaign files, stacks files, derived expressions, application output and
figures of merit, peer tarballs and source trees, install specs, stores (damaged ones on
every read verb), tool outputs (parsers), imports, reports on hostile data, environment
variables. Each is tried with mutated inputs; per surface this prints

  inputs tried
  crashes            a traceback (an exception that is not a one-line refusal)
  silent misparses   a value stored or returned that the input did not hold (a parser
                     record not in its line, a non-finite figure, 1e-400 read as 0, ...)
  contract breaks    a refusal that is not exit 2 with one error line, a file written where
                     nothing may be, a command started, a surface's own rule broken

A new surface is added in tests/support/surfaces.py (a function registered with @surface) and in
docs/fuzzing.md; tests/test_gate.py checks the two lists agree.

Each surface draws from its own generator (seed and surface name), so adding a surface does
not change the cases of the others. The suite runs the same code derandomized and shorter
(tests/test_cli_fuzz.py, tests/parsers/test_properties.py, tests/store/test_damage.py, ...).

Usage: .venv/bin/python bench/bench_fuzz.py [--quick] [--seed N] [--cases N] [--only TEXT]
       [--show N]
Exit status 0 whatever it finds (a bench reports; the suite's tests assert).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support import surfaces as _surfaces  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="surfaces: " + "; ".join(_surfaces.names()))
    ap.add_argument("--quick", action="store_true", help="a short run (for make bench)")
    ap.add_argument("--seed", type=int, default=12, help="random seed (default 12)")
    ap.add_argument("--cases", type=int,
                    help="inputs per surface before its weight (default 300, quick 30)")
    ap.add_argument("--only", help="only surfaces whose name contains TEXT")
    ap.add_argument("--show", type=int, default=3, help="examples printed per surface (3)")
    args = ap.parse_args(argv)
    base = args.cases if args.cases is not None else (30 if args.quick else 300)
    chosen = [s for s in _surfaces.SURFACES
              if not args.only or args.only.lower() in s.name.lower()]
    print(f"# bench/bench_fuzz.py --seed {args.seed} --cases {base}"
          + (f" --only {args.only!r}" if args.only else ""))
    print(f"{'surface':42} {'tried':>6} {'crashes':>8} {'silent':>7} {'contract':>9} "
          f"{'s':>6}")
    total = _surfaces.Tally()
    for s in chosen:
        n = max(3, round(base * s.weight))
        rng = random.Random(f"{args.seed}:{s.name}")
        t0 = time.monotonic()
        t = s.run(rng, n)
        dt = time.monotonic() - t0
        print(f"{s.name[:42]:42} {t.tried:6d} {t.crashes:8d} {t.misparses:7d} "
              f"{t.contract:9d} {dt:6.1f}")
        for e in t.examples[:args.show]:
            print(f"    {e}")
        total.tried += t.tried
        total.crashes += t.crashes
        total.misparses += t.misparses
        total.contract += t.contract
    print(f"{'all ' + str(len(chosen)) + ' surfaces':42} {total.tried:6d} {total.crashes:8d} "
          f"{total.misparses:7d} {total.contract:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
