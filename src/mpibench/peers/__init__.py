"""Third-party benchmark suites run inside campaigns: IMB (IMB-MPI1), OSU and NetPIPE.

A campaign group with `suite = "imb" | "osu" | "netpipe"` launches the suite's binary under the
variant's launcher, like an application, and parses its text output with the same parsers
`mpibench import` uses (mpibench.parsers) into per-launch result rows in the store, with a
fingerprint: so IMB, OSU and the native core measured on one stack sit side by side.

The binary is either given (`binary = "/path/IMB-MPI1"`, or for OSU the directory its
osu_* programs are under) or built per stack from a source tree or tarball (`source`), with
that stack's compiler wrappers, into the build cache beside the core. The cache key is the
suite, the stack's identity (wrapper + library version) and a hash of the source, so a new
library or another source tarball rebuilds and nothing else does. OSU is configured once per
stack and source into one entry, and each group's program is made into that tree when a
group first needs it (a second program reuses the configured tree).

OSU runs one program per benchmark: an OSU group with several benchmarks becomes one group
per program (`NAME.osu_latency`, ...), so a cell is always exactly one launch.

A suite is one file in this package: a PeerSuite subclass (peers/base.py) registered with
`@register_suite("name")` that says how to build it (build_steps; configure_steps and
program_steps for a suite built one program per group), find its program (program), turn a
group's benchmarks and sizes into its arguments (argv), check the campaign's benchmarks key
(check_benchmarks) and parse its output (parse, output_text).
The campaign file, the runner and the cells reach a suite only through this registry.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import stat
import tarfile
import zlib
from pathlib import Path
from typing import Any

from mpibench.benchmarks import parse_sizes
from mpibench.build import staged_build
from mpibench.errors import BuildError, UsageError
from mpibench.files import write_file
from mpibench.peers.base import REGISTRY, PeerSpec, PeerSuite, register_suite  # noqa: F401 (re-exported)
from mpibench.process import run_command
from mpibench.stacks import Stack, cache_dir


def get_suite(name: str) -> PeerSuite:
    return REGISTRY.get(name)()


def suite_names() -> list[str]:
    return REGISTRY.names()


def __getattr__(name: str) -> Any:
    """SUITES, OSU_AS_IMB, IMB_BINARY and NETPIPE_BINARY, from the suites' own files."""
    if name == "SUITES":
        return tuple(suite_names())
    if name == "OSU_AS_IMB":
        from mpibench.peers.osu import OSU_AS_IMB
        return OSU_AS_IMB
    if name == "IMB_BINARY":
        from mpibench.peers.imb import IMB_BINARY
        return IMB_BINARY
    if name == "NETPIPE_BINARY":
        from mpibench.peers.netpipe import NETPIPE_BINARY
        return NETPIPE_BINARY
    raise AttributeError(name)


# -- building ------------------------------------------------------------------------------

def cxx_wrapper(stack: Stack) -> str:
    """The stack's C++ wrapper beside its mpicc (mpicc.openmpi -> mpicxx.openmpi)."""
    cc = Path(stack.mpicc)
    if cc.parent == Path(".") and getattr(stack, "modules", None):
        # a bare wrapper name from a module: its C++ sibling is found after `module load`
        for a, b in (("mpiicc", "mpiicpc"), ("mpiicx", "mpiicpx"), ("mpicc", "mpicxx")):
            if a in cc.name:
                return cc.name.replace(a, b)
    for name in (cc.name.replace("mpiicc", "mpiicpc"), cc.name.replace("mpiicx", "mpiicpx"),
                 cc.name.replace("mpicc", "mpicxx"), cc.name.replace("mpicc", "mpic++"),
                 cc.name.replace("mpicc", "mpiCC")):
        cand = cc.with_name(name)
        if name != cc.name and cand.exists():
            return str(cand)
    found = shutil.which(cc.name.replace("mpicc", "mpicxx"))
    if found:
        return found
    raise BuildError(f"stack {stack.name!r}: no C++ wrapper beside {stack.mpicc} "
                     "(mpicxx); IMB and OSU need one")


# A peer source is a benchmark suite: IMB 2021.11 is 0.5 MB packed and 3 MB unpacked, OSU
# 7.4 about 10 MB. A tarball that expands past these is refused before anything is written
# (a 1 MB tarball of zeros expanded to 1 GiB in the build cache).
MAX_UNPACKED_BYTES = 512 << 20
MAX_MEMBERS = 50_000


def source_digest(source: Path) -> str:
    """The cache key's hash of a tarball's bytes, or of a source tree: every path, and the
    content of every file, symlinked ones by what they point at (editing the target of a
    symlinked source file rebuilds; the build reads through the link)."""
    h = hashlib.sha256()
    if source.is_file():
        with open(source, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()[:12]
    seen: set[str] = set()
    for p in _walk(source, seen):
        rel = str(p.relative_to(source)).encode()
        if p.is_symlink():
            h.update(rel + b"\0L" + os.readlink(p).encode() + b"\0")
        if p.is_file():
            h.update(rel + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _walk(root: Path, seen: set[str]):
    """Every entry under root in a fixed order, following symlinked directories once each
    (a link cycle ends at the first repeat)."""
    real = os.path.realpath(root)
    if real in seen:
        return
    seen.add(real)
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise UsageError(f"peer source {root}: cannot read ({exc.strerror})") from None
    for p in entries:
        yield p
        if p.is_dir():
            yield from _walk(p, seen)


def check_source_tree(source: Path) -> None:
    """A source directory holds files, directories and symlinks only: a FIFO would block the
    copy forever, a socket or device has no place in a build."""
    for p in _walk(source, set()):
        try:
            mode = p.lstat().st_mode
        except OSError as exc:
            raise UsageError(f"peer source {p}: cannot read ({exc.strerror})") from None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device")
            raise UsageError(f"peer source {p}: {what}; a source tree holds files and "
                             "directories only")


def _unpack(source: Path, into: Path) -> Path:
    """The source tree under `into`: a tarball extracted (data filter: no absolute paths,
    links out of the tree or devices; at most MAX_UNPACKED_BYTES and MAX_MEMBERS), or a
    directory copied (the build writes into it). Whatever is wrong with the tarball is one
    UsageError naming it."""
    if source.is_dir():
        check_source_tree(source)
        dst = into / source.name
        try:
            shutil.copytree(source, dst, symlinks=True)
        except (OSError, shutil.Error) as exc:
            raise UsageError(f"peer source {source}: cannot copy it "
                             f"({_first_error(exc)})") from None
        return dst
    if not source.is_file():
        raise UsageError(f"peer source {source}: not a regular file or directory")
    what = f"peer source {source}"
    try:
        with tarfile.open(source) as tf:
            members, total = [], 0
            for m in tf:                   # streamed: a bomb stops at the cap, not at 1 GiB
                if m.name.startswith(("/", "\\")):
                    # the data filter would strip the slash; a suite's tarball never has one
                    raise UsageError(f"{what}: member {m.name[:100]!r} refused (an absolute "
                                     "path); nothing was extracted")
                members.append(m)
                total += max(m.size, 0) if m.isreg() else 0
                if total > MAX_UNPACKED_BYTES or len(members) > MAX_MEMBERS:
                    raise UsageError(
                        f"{what}: expands to more than {MAX_UNPACKED_BYTES >> 20} MiB or "
                        f"{MAX_MEMBERS} entries; a benchmark suite's source is far smaller "
                        "(IMB 3 MB, OSU 10 MB)")
            if not members:
                raise UsageError(f"{what}: an empty tarball; expected a benchmark suite's "
                                 "source")
            tf.extractall(into, members=members, filter="data")
    except tarfile.FilterError as exc:
        member = getattr(exc, "tarinfo", None)
        name = member.name if member is not None else "?"
        raise UsageError(f"{what}: member {name!r} refused ({_filter_why(exc)}); nothing "
                         "outside the build directory is written") from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError,
            KeyError) as exc:          # KeyError: a hard link to a member that is not there
        raise UsageError(f"{what}: not a readable tarball ({type(exc).__name__}: "
                         f"{str(exc)[:120] or 'truncated or damaged'})") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"{what}: not a readable tarball") from None
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else into


def _filter_why(exc: tarfile.FilterError) -> str:
    return {tarfile.AbsolutePathError: "an absolute path",
            tarfile.OutsideDestinationError: "a path outside the tree",
            tarfile.SpecialFileError: "a device or other special file",
            tarfile.AbsoluteLinkError: "a link to an absolute path",
            tarfile.LinkOutsideDestinationError: "a link out of the tree"}.get(
                type(exc), type(exc).__name__)


def _first_error(exc: BaseException) -> str:
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        src, _, why = exc.args[0][0]
        return f"{src}: {why}"
    return getattr(exc, "strerror", None) or str(exc)


def build_peer(stack: Stack, suite: str, source: str | Path, *, benchmark: str | None = None,
               timeout: float = 1200, log=None) -> Path:
    """Build the suite from `source` with this stack's wrappers, cached; returns the
    directory that holds the built tree. benchmark: the group's program, for a suite that
    builds one program per group (OSU): the source is configured once per stack and source
    (one cache entry) and each program is made into that tree when a group first needs it."""
    src = Path(source).resolve()
    if not src.exists():
        raise UsageError(f"peer source {src} does not exist")
    if src.is_dir():
        check_source_tree(src)
    kind = get_suite(suite)
    program = benchmark if kind.one_program_per_benchmark else None
    key = f"peer-{suite}-{stack.name}-{stack.identity()}-{source_digest(src)}"
    final = cache_dir() / "build" / key
    done = ".configured" if program else ".built"
    if not (final / done).exists():
        if log:
            log(f"{'configuring' if program else 'building'} {suite} for {stack.name} from "
                f"{src} (cached after this) ...")
        with staged_build(final, lambda d: (d / done).exists()) as tmp:
            if tmp is not None:      # None: another process built it while this one waited
                tree = _unpack(src, tmp)
                cc, cxx = stack.mpicc, cxx_wrapper(stack) if kind.needs_cxx else ""
                steps = kind.configure_steps(tree, cc, cxx) if program \
                    else kind.build_steps(tree, cc, cxx)
                out = _run_steps(stack, suite, src, steps, tree, timeout, tmp / "build.log")
                write_file(tmp / "build.log", out)
                # the tree's path inside the entry, so a program is made where it was configured
                write_file(tmp / done, str(tree.relative_to(tmp)) + "\n")
    if program:
        _make_program(stack, kind, suite, src, program, final, timeout, log)
    return final


def _run_steps(stack: Stack, suite: str, src: Path, steps: list[list[str]], cwd: Path,
               timeout: float, log_path: Path, what: str = "") -> str:
    """Run the build commands in cwd with the stack's modules and environment; the first
    that fails is a BuildError (its output in log_path)."""
    out = []
    for argv in steps:
        res = run_command(stack.command(argv), cwd=cwd, env=getattr(stack, "env", None),
                          timeout=timeout, die_with_parent=True)
        out.append(res.stdout + res.stderr)
        if not res.ok:
            write_file(log_path, "\n".join(out))
            why = "timed out" if res.timed_out else f"exit {res.returncode}"
            lines = [ln for ln in (res.stdout + res.stderr).splitlines()
                     if "rror" in ln or "No rule to make target" in ln]
            raise BuildError(f"building {suite}{what} for stack {stack.name!r} from {src}: "
                             f"`{' '.join(argv[:2])}` failed ({why})",
                             log="\n".join((lines or (res.stdout + res.stderr)
                                            .splitlines())[-30:]))
    return "\n".join(out)


def _make_program(stack: Stack, kind: PeerSuite, suite: str, src: Path, program: str,
                  final: Path, timeout: float, log) -> None:
    """Make one program in the configured tree of the cache entry `final`, under the entry's
    lock (two campaigns making programs into one tree take turns); `.built-PROGRAM` marks it
    made. A name the suite cannot make on its own (no Makefile.am lists it, or make has no
    rule for it) gets the whole suite made instead."""
    from mpibench.files import locked

    tag = program if re.fullmatch(r"[A-Za-z0-9_.+-]{1,100}", program) \
        else hashlib.sha256(program.encode()).hexdigest()[:12]
    mark = final / f".built-{tag}"
    if mark.exists():
        return
    with locked(final.parent / f".{final.name}.lock"):
        if mark.exists():
            return
        tree = final / (final / ".configured").read_text().strip()
        log_path = final / f"build-{tag}.log"
        steps = kind.program_steps(tree, program)
        if log:
            log(f"making {program} in the {suite} tree configured for {stack.name} ...")
        whole = False
        try:
            out = _run_steps(stack, suite, src, steps, tree, timeout, log_path,
                             f" ({program})")
        except BuildError as exc:
            if "No rule to make target" not in (exc.log or "") or not kind.full_steps(tree):
                raise
            whole = True      # e.g. a program listed only under an automake conditional
        if whole:
            if log:
                log(f"make has no rule for {program}: making the whole {suite} suite ...")
            out = _run_steps(stack, suite, src, kind.full_steps(tree), tree, timeout,
                             log_path, f" ({program}, whole suite)")
            if not any(p.is_file() for p in tree.rglob(kind.program(program))):
                write_file(log_path, out)
                raise BuildError(f"building {suite} ({program}) for stack {stack.name!r} from "
                                 f"{src}: make has no rule for {program} in its directory and "
                                 "the whole make did not build it (listed under an automake "
                                 "conditional that configure turned off for this stack?)")
        write_file(log_path, out)
        write_file(mark, program + "\n")


def find_binary(root: Path, suite: str, benchmark: str | None) -> Path:
    """The program to launch, found under a built tree or a given directory (a given file is
    used as is)."""
    root = Path(root)
    if root.is_file():
        return root
    name = get_suite(suite).program(benchmark)
    hits = sorted((p for p in root.rglob(name) if p.is_file() and os.access(p, os.X_OK)),
                  key=lambda p: (len(p.parts), str(p)))
    if not hits:
        raise UsageError(f"no executable {name!r} under {root}")
    return hits[0]


# -- command line --------------------------------------------------------------------------

def program_args(peer: PeerSpec, run_dir: Path) -> list[str]:
    """The suite's own arguments for the group's benchmarks and sizes."""
    sizes = parse_sizes(peer.sizes) if peer.sizes else None
    args = get_suite(peer.suite).argv(peer, sizes, run_dir)
    return args + list(peer.args)


# -- results -------------------------------------------------------------------------------

def parse_output(peer: PeerSpec, text: str, np_: int) -> tuple[list[dict[str, Any]], dict]:
    """Result rows (store records) and what the output says about the tool, from one
    launch's stdout."""
    kind = get_suite(peer.suite)
    res = kind.parse(text)
    rows = []
    for rec in res.records:
        rec = dict(rec)
        extra = dict(rec.get("extra") or {})
        if rec.get("np") is None:
            rec["np"] = np_
            extra["np_from"] = "variant"
        kind.row(rec, extra)
        extra["tool"] = peer.suite
        rec["extra"] = extra
        rows.append(rec)
    meta = {"tool": res.tool, "version": res.version,
            "problems": [p.message for p in res.problems][:10], "truncated": res.truncated}
    return rows, meta
