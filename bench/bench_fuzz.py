#!/usr/bin/env python3
"""Fuzz the parsers, the importer and the CLI verbs (prints counts, asserts nothing).

Parsers: every captured output in tests/data (IMB, OSU, nccl-tests text and JSON, NetPIPE,
mpibench-core JSON Lines) with 1-4 random mutations each: numbers replaced by huge, negative,
non-finite or non-ASCII ones ('1e30', '-1', 'nan', U+0663 ARABIC-INDIC DIGIT THREE, '²'),
bytes flipped into ones no number can hold, cuts at any byte, garbage lines, dropped,
duplicated, swapped or moved lines and sections, columns swapped, spaces turned into tabs.
Plus random bytes and random text. A case is

  a crash              when the parser raises (a traceback)
  a silent misparse    when a record holds a value that is not in the line (or JSON document)
                       it came from, has the wrong types or a non-finite or negative number,
                       comes from a corrupted line that gave something else (or nothing) in
                       the original file without a warning at that line, or comes from an
                       untouched line but differs from the original with no warning at all

(tests/_fuzz.py, shared with tests/test_parsers_properties.py, has the mutations and this
oracle.) Importer: some of the same cases through mpibench.importer.import_files into a fresh
store: it must not raise, and what it stores must be what the parser returned.

Campaign files: examples/*.toml with 1-3 values made hostile (numbers, strings with NUL or
newline escapes, 5000 characters, option-like), lines dropped, duplicated or a byte flipped,
through `campaign run FILE --dry-run`: exit 0 (still valid) or exit 2 with one line, nothing
written, nothing started.

Reports on hostile data: two mutated outputs of one tool imported as sets a and b, then
compare (terminal, gain table as JSON, line rate as CSV) and report: exit 0, 1 or 2 (one line),
never a traceback.

CLI: each verb (run, demo, campaign run/status/list/resume, compare, report, import, profile,
stacks, build, push; the read verbs on hostile archive URLs) called in process with one
hostile argument value (nan/inf/negative/zero/huge/
unicode-digit numbers, size lists the core would reject, paths that cannot be written, missing
or foreign or non-UTF-8 files, NUL bytes). Expected: exit 2, one error line, nothing written in
the working directory, no external command started (mpibench.process.run_command is replaced by
one that refuses and records). A case breaking that is counted as a crash (traceback) or a
contract break (the rest).

Testbed: --fabric/--delay values and damaged testbed.json states (mpibench.testbed): a result
or a one-line refusal, and never a loaded state naming PIDs, cgroups or links not its own.

Usage: .venv/bin/python bench/bench_fuzz.py [--quick] [--seed N] [--cases N] [--cli N]
       [--show N]
Exit status 0 whatever it finds (a bench reports; the suite's property tests assert).
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import _fuzz  # noqa: E402


def fuzz_parsers(rng: random.Random, n: int, show: int) -> dict:
    counts: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    per_fixture: collections.Counter = collections.Counter()
    names = [p.name for p in _fuzz.FIXTURES]
    records = problems = 0
    for k in range(n):
        if k % 50 == 49:
            case = _random_case(rng)
        else:
            name = names[k % len(names)]
            case = _fuzz.mutate(random.Random(rng.getrandbits(64)), name,
                                _fuzz.fixture_bytes(name))
        found, nrec, nprob = _fuzz.check_parse(case)
        records += nrec
        problems += nprob
        kinds = {f.kind for f in found}
        for kind in kinds:
            counts[kind] += 1
            per_fixture[(kind, case.name)] += 1
        for f in found:
            if len(examples[f.kind]) < show:
                examples[f.kind].append(f"{f.case}: {f.detail}")
    return {"cases": n, "counts": counts, "examples": examples, "records": records,
            "problems": problems, "per_fixture": per_fixture}


def _random_case(rng: random.Random) -> _fuzz.ParseCase:
    if rng.random() < 0.5:
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3000)))
    else:
        alphabet = "0123456789 .e+-#\nabcIMBOSU\u0663\u00b2:|\t"
        data = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 2000))).encode()
    lines, trailing = _fuzz._split(data)
    return _fuzz.ParseCase("random.txt", lines, [None] * len(lines),
                           set(range(1, len(lines) + 1)), ["random"], trailing)


def fuzz_importer(rng: random.Random, n: int, show: int) -> dict:
    from mpibench.importer import import_files
    from mpibench.store import Store
    crashes, mismatches, examples = 0, 0, []
    names = [p.name for p in _fuzz.FIXTURES if not _fuzz.is_core(p.name)]
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-imp-") as tmp:
        for k in range(n):
            name = names[k % len(names)]
            case = _fuzz.mutate(random.Random(rng.getrandbits(64)), name,
                                _fuzz.fixture_bytes(name))
            f = Path(tmp) / f"case{k}.txt"
            f.write_bytes(case.data)
            db = Path(tmp) / f"s{k}.db"
            try:
                with Store(db) as store:
                    rep = import_files(store, [f], np=3)
                    stored = store.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                    (fr,) = rep.files
                    if stored != fr.rows or (rep.exit_code == 0) != (stored > 0):
                        mismatches += 1
                        if len(examples) < show:
                            examples.append(f"{case.describe()}: stored {stored}, "
                                            f"report {fr.rows}, exit {rep.exit_code}")
            except Exception as exc:  # noqa: BLE001 - counted
                crashes += 1
                if len(examples) < show:
                    examples.append(f"{case.describe()}: {exc!r}")
            finally:
                for p in Path(tmp).glob(f"s{k}.db*"):
                    p.unlink()
                f.unlink()
    return {"cases": n, "crashes": crashes, "mismatches": mismatches, "examples": examples}


def fuzz_cli(rng: random.Random, n: int, show: int) -> dict:
    per_verb: collections.Counter = collections.Counter()
    bad_verb: collections.Counter = collections.Counter()
    crashes = breaks = 0
    examples: list[str] = []
    seen: set[tuple] = set()
    for verb, argv in _fuzz.cli_cases(rng, n):
        td, tmp, names = _fuzz.cli_workdir()
        with td:
            real = _fuzz.substitute(argv, names)
            outcome = _fuzz.run_cli(real, tmp)
        per_verb[verb] += 1
        probs = outcome.problems()
        if outcome.crash:
            crashes += 1
        elif probs:
            breaks += 1
        if probs:
            bad_verb[verb] += 1
            key = (tuple(argv), tuple(probs))
            if key not in seen and len(examples) < show:
                seen.add(key)
                shown = " ".join(a if a and a.isprintable() and " " not in a else repr(a)
                                 for a in argv)
                examples.append(f"mpibench {shown[:200]}: {'; '.join(probs)}")
    return {"cases": n, "crashes": crashes, "breaks": breaks, "per_verb": per_verb,
            "bad_verb": bad_verb, "examples": examples}


def fuzz_campaign_files(rng: random.Random, n: int, show: int) -> dict:
    crashes = breaks = 0
    examples: list[str] = []
    for k in range(n):
        path = _fuzz.CAMPAIGN_FILES[k % len(_fuzz.CAMPAIGN_FILES)]
        data = _fuzz.mutate_campaign(random.Random(rng.getrandbits(64)), path)
        outcome = _fuzz.run_campaign_case(data, path.name)
        probs = outcome.problems(ok_rcs=(0, 2))
        if outcome.crash:
            crashes += 1
        elif probs:
            breaks += 1
        if probs and len(examples) < show:
            examples.append(f"{path.name} mutated: {'; '.join(probs)[:300]}")
    return {"cases": n, "crashes": crashes, "breaks": breaks, "examples": examples}


def fuzz_reports(rng: random.Random, n: int, show: int) -> dict:
    crashes = breaks = calls = 0
    examples: list[str] = []
    for _ in range(n):
        for argv, outcome in _fuzz.run_report_case(random.Random(rng.getrandbits(64))):
            calls += 1
            probs = ([("traceback: " + outcome.crash.strip().splitlines()[-1])]
                     if outcome.crash else []) if argv[0] == "import" \
                else outcome.problems(ok_rcs=(0, 1, 2))
            if outcome.crash:
                crashes += 1
            elif probs:
                breaks += 1
            if probs and len(examples) < show:
                examples.append(f"mpibench {' '.join(argv[:2])} ...: {'; '.join(probs)[:300]}")
    return {"cases": n, "calls": calls, "crashes": crashes, "breaks": breaks,
            "examples": examples}


_HOSTILE = [None, True, -1, 0, 1, 2**70, 1e308, float("nan"), "", "x" * 5000, "1\n2", "\0",
            "../../etc", "/tmp/x", "-rf", [], {}, [1, 2], {"pid": 1}, "\u0663", "tn1"]


def _mutate_json(rng: random.Random, d):
    """One random change to a random place of a JSON value: a leaf replaced by a hostile
    value, a key dropped or added, a list emptied."""
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, (*path, k))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, (*path, i))
    walk(d, ())
    path = rng.choice(paths[1:] or paths)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    if not path:
        return rng.choice(_HOSTILE)
    kind = rng.random()
    if kind < 0.6:
        parent[path[-1]] = rng.choice(_HOSTILE)
    elif kind < 0.8 and isinstance(parent, dict):
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[f"extra{rng.randrange(9)}"] = rng.choice(_HOSTILE)
    else:
        parent.clear()
    return d


def fuzz_testbed(rng: random.Random, n: int, show: int) -> dict:
    """The testbed's inputs: --fabric/--delay values (parse_fabrics: a list, or UsageError in
    one line) and a damaged DIR/testbed.json (Testbed.load: a Testbed whose state passes the
    checks `stop` relies on, or TestbedError in one line). Anything else is a crash."""
    import json

    from mpibench.errors import UsageError
    from mpibench.testbed import Testbed, TestbedError, parse_fabrics
    from mpibench.testbed.bed import bed_problem

    state = (REPO / "tests" / "data" / "testbed" / "testbed.json").read_text()
    pieces = ["fast", "slow", ":", "=", "4gbit", "1.5Mbit", "0bit", "9" * 30, "e3", "-1", "us",
              "ms", "nan", "inf", "\u0663", " ", "mgmt", "", "kbit", "2", "\n", "Gbit", "s"]
    crashes = 0
    examples: list[str] = []
    with tempfile.TemporaryDirectory() as td:
        for k in range(n):
            if k % 2:
                fab = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 5)))
                       for _ in range(rng.randrange(1, 3))]
                dl = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4)))
                      for _ in range(rng.randrange(0, 2))]
                try:
                    parse_fabrics(fab, dl)
                    err = None
                except UsageError as exc:
                    err = None if "\n" not in str(exc) else f"multi-line error: {exc!s:.80}"
                except Exception as exc:  # noqa: BLE001 - a crash is what is counted
                    err = f"{type(exc).__name__}: {exc!s:.80}"
                case = f"--fabric {fab!r} --delay {dl!r}"
            else:
                if rng.random() < 0.8:
                    d = json.loads(state)
                    for _ in range(rng.randrange(1, 4)):
                        d = _mutate_json(rng, d)
                    blob = json.dumps(d).encode()
                else:
                    b = bytearray(state.encode())
                    cut = rng.randrange(len(b))
                    b = b[:cut] if rng.random() < 0.5 else b[:cut] + bytes([rng.randrange(256)]) \
                        + b[cut + 1:]
                    blob = bytes(b)
                Path(td, "testbed.json").write_bytes(blob)
                try:
                    bed = Testbed.load(td)
                    err = bed_problem(bed)
                except TestbedError as exc:
                    err = None if "\n" not in str(exc) else f"multi-line error: {exc!s:.80}"
                except Exception as exc:  # noqa: BLE001
                    err = f"{type(exc).__name__}: {exc!s:.80}"
                case = f"testbed.json {blob[:60]!r}..."
            if err:
                crashes += 1
                if len(examples) < show:
                    examples.append(f"{case[:120]}: {err}")
    return {"cases": n, "crashes": crashes, "examples": examples}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short run (for make bench)")
    ap.add_argument("--seed", type=int, default=12, help="random seed (default 12)")
    ap.add_argument("--cases", type=int, help="parser cases (default 20000, quick 1500)")
    ap.add_argument("--cli", type=int, help="CLI cases (default 600, quick 120)")
    ap.add_argument("--show", type=int, default=5, help="examples printed per kind (5)")
    args = ap.parse_args(argv)
    n_parse = args.cases if args.cases is not None else (1500 if args.quick else 20000)
    n_cli = args.cli if args.cli is not None else (120 if args.quick else 600)
    n_imp = max(10, n_parse // 50)
    rng = random.Random(args.seed)
    cmd = f"bench/bench_fuzz.py --seed {args.seed} --cases {n_parse} --cli {n_cli}"
    print(f"# {cmd}")

    t0 = time.monotonic()
    p = fuzz_parsers(rng, n_parse, args.show)
    t1 = time.monotonic()
    imp = fuzz_importer(rng, n_imp, args.show)
    t2 = time.monotonic()
    c = fuzz_cli(rng, n_cli, args.show)
    t3 = time.monotonic()
    cf = fuzz_campaign_files(rng, n_cli // 3, args.show)
    t4 = time.monotonic()
    rp = fuzz_reports(rng, max(5, n_cli // 20), args.show)
    t5 = time.monotonic()
    tb = fuzz_testbed(rng, n_cli * 2, args.show)
    t6 = time.monotonic()

    pc = p["counts"]
    silent = sum(pc[k] for k in ("invalid", "invented", "silent", "changed"))
    print(f"\nparsers: {p['cases']} mutated inputs ({len(_fuzz.FIXTURES)} captured outputs), "
          f"{p['records']} records, {p['problems']} warnings, {t1 - t0:.1f} s")
    print(f"  crashes (tracebacks):  {pc['crash']}")
    print(f"  silent misparses:      {silent}  (invented value {pc['invented']}, invalid "
          f"record {pc['invalid']}, corrupted line without warning {pc['silent']}, untouched "
          f"line read differently without warning {pc['changed']})")
    for kind, ex in p["examples"].items():
        for e in ex:
            print(f"    [{kind}] {e}")
    print(f"importer: {imp['cases']} mutated files into fresh stores, {t2 - t1:.1f} s")
    print(f"  crashes: {imp['crashes']}  stored rows != parsed rows: {imp['mismatches']}")
    for e in imp["examples"]:
        print(f"    {e}")
    print(f"CLI: {c['cases']} hostile invocations over {len(c['per_verb'])} verbs, "
          f"{t3 - t2:.1f} s")
    print(f"  crashes (tracebacks):  {c['crashes']}")
    print(f"  contract breaks (not exit 2 with one error line, or wrote a file, or started "
          f"a command): {c['breaks']}")
    if c["bad_verb"]:
        print("  by verb: " + ", ".join(f"{v} {c['bad_verb'][v]}/{c['per_verb'][v]}"
                                        for v in sorted(c["per_verb"])))
    for e in c["examples"]:
        print(f"    {e}")
    print(f"campaign files: {cf['cases']} mutated examples/*.toml through 'campaign run "
          f"--dry-run', {t4 - t3:.1f} s")
    print(f"  crashes (tracebacks):  {cf['crashes']}")
    print(f"  contract breaks (not exit 0 or exit 2 with one error line, or wrote a file, or "
          f"started a command): {cf['breaks']}")
    for e in cf["examples"]:
        print(f"    {e}")
    print(f"reports on hostile data: {rp['cases']} pairs of mutated outputs imported as two "
          f"sets, then compare (terminal, gain table JSON, line rate CSV) and report: "
          f"{rp['calls']} calls, {t5 - t4:.1f} s")
    print(f"  crashes (tracebacks):  {rp['crashes']}")
    print(f"  contract breaks (compare/report exit not 0/1/2, or an exit 2 of several "
          f"lines): {rp['breaks']}")
    for e in rp["examples"]:
        print(f"    {e}")
    print(f"testbed: {tb['cases']} --fabric/--delay values and damaged testbed.json states "
          f"(parse_fabrics, Testbed.load), {t6 - t5:.1f} s")
    print(f"  crashes (not a result or a one-line refusal, or a loaded state `stop` must not "
          f"act on): {tb['crashes']}")
    for e in tb["examples"]:
        print(f"    {e}")
    total = p["cases"] + imp["cases"] + c["cases"] + cf["cases"] + rp["cases"] + tb["cases"]
    crashes = pc["crash"] + imp["crashes"] + c["crashes"] + cf["crashes"] + rp["crashes"] + \
        tb["crashes"]
    breaks = c["breaks"] + cf["breaks"] + rp["breaks"]
    print(f"\nbad inputs tried: {total}; crashes: {crashes}; silent misparses: "
          f"{silent + imp['mismatches']}; CLI contract breaks: {breaks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
