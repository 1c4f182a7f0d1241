"""Third-party benchmark suites run inside campaigns: IMB (IMB-MPI1), OSU and NetPIPE.

A campaign group with `suite = "imb" | "osu" | "netpipe"` launches the suite's binary under the
variant's launcher, like an application, and parses its text output with the same parsers
`mpibench import` uses (mpibench.parsers) into per-launch result rows in the store, with a
fingerprint: so IMB, OSU and the native core measured on one stack sit side by side.

The binary is either given (`binary = "/path/IMB-MPI1"`, or for OSU the directory its
osu_* programs are under) or built per stack from a source tree or tarball (`source`), with
that stack's compiler wrappers, into the build cache beside the core. The cache key is the
suite, the stack's identity (wrapper + library version) and a hash of the source, so a new
library or another source tarball rebuilds and nothing else does.

OSU runs one program per benchmark: an OSU group with several benchmarks becomes one group
per program (`NAME.osu_latency`, ...), so a cell is always exactly one launch.

A suite is one file in this package: a PeerSuite subclass registered with
`@register_suite("name")` that says how to build it (build_steps), find its program
(program), turn a group's benchmarks and sizes into its arguments (argv), check the
campaign's benchmarks key (check_benchmarks) and parse its output (parse, output_text).
The campaign file, the runner and the cells reach a suite only through this registry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpibench.benchmarks import parse_sizes
from mpibench.build import staged_build
from mpibench.errors import BuildError, UsageError
from mpibench.files import write_file
from mpibench.process import run_command
from mpibench.registry import Registry
from mpibench.stacks import Stack, cache_dir


class PeerSuite:
    """One third-party suite. Subclasses override what differs; instances hold no state."""

    name = ""
    needs_cxx = True                     # IMB and OSU build C++ sources
    # one group per benchmark program (OSU), so a cell is exactly one launch
    one_program_per_benchmark = False
    benchmarks_expected = "[...]"        # what the campaign's benchmarks key holds

    def build_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        raise NotImplementedError

    def program(self, benchmark: str | None) -> str:
        """The executable's name to find under a built tree or a given directory."""
        raise NotImplementedError

    def argv(self, peer: PeerSpec, sizes: list[int] | None, run_dir: Path) -> list[str]:
        """The suite's own arguments for the group's benchmarks and sizes."""
        return []

    def check_benchmarks(self, benches: list[str] | None, fail) -> list[str]:
        """The campaign's `benchmarks` (None when absent), normalised; fail(problem,
        expected, index=None) raises naming the key."""
        if benches is None:
            fail("missing", self.benchmarks_expected)
        if not benches:
            fail("empty", "at least one benchmark")
        return list(benches)

    def parse(self, text: str):
        """The output's ParseResult (mpibench.parsers)."""
        raise NotImplementedError

    def output_text(self, stdout: str, stderr_path: Path, run_dir: Path) -> str:
        """The text to parse from one launch (stdout unless the suite writes elsewhere)."""
        return stdout

    def row(self, rec: dict[str, Any], extra: dict[str, Any]) -> None:
        """Adjust one parsed row in place (e.g. store it under the IMB name)."""


REGISTRY: Registry = Registry("peer suite", "mpibench.peers")
register_suite = REGISTRY.register


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


@dataclass(frozen=True)
class PeerSpec:
    """What a peer group runs (part of the cell id)."""

    suite: str
    benchmarks: tuple[str, ...]  # IMB names; for OSU exactly one program name
    sizes: str | None
    args: tuple[str, ...]
    binary: str | None  # a given binary (or OSU directory)
    source: str | None  # a tarball or source tree to build per stack

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "benchmarks": list(self.benchmarks), "sizes": self.sizes,
                "args": list(self.args), "binary": self.binary, "source": self.source}


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


def source_digest(source: Path) -> str:
    h = hashlib.sha256()
    if source.is_file():
        with open(source, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    else:
        for p in sorted(source.rglob("*")):
            if p.is_file() and not p.is_symlink():
                h.update(str(p.relative_to(source)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def _unpack(source: Path, into: Path) -> Path:
    """The source tree under `into`: a tarball extracted (data filter: no absolute paths,
    links out of the tree or devices), or a directory copied (the build writes into it)."""
    if source.is_dir():
        dst = into / source.name
        shutil.copytree(source, dst, symlinks=True)
        return dst
    with tarfile.open(source) as tf:
        tf.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else into


def build_peer(stack: Stack, suite: str, source: str | Path, *, timeout: float = 1200,
               log=None) -> Path:
    """Build the suite from `source` with this stack's wrappers, cached; returns the
    directory that holds the built tree."""
    src = Path(source).resolve()
    if not src.exists():
        raise UsageError(f"peer source {src} does not exist")
    key = f"peer-{suite}-{stack.name}-{stack.identity()}-{source_digest(src)}"
    final = cache_dir() / "build" / key
    if (final / ".built").exists():
        return final
    if log:
        log(f"building {suite} for {stack.name} from {src} (cached after this) ...")
    with staged_build(final) as tmp:
        tree = _unpack(src, tmp)
        kind = get_suite(suite)
        cc, cxx = stack.mpicc, cxx_wrapper(stack) if kind.needs_cxx else ""
        steps = kind.build_steps(tree, cc, cxx)
        out = []
        for argv in steps:
            # the stack's modules and environment apply to its wrappers, as for the core
            res = run_command(stack.command(argv), cwd=tree, env=getattr(stack, "env", None),
                              timeout=timeout)
            out.append(res.stdout + res.stderr)
            if not res.ok:
                write_file(tmp / "build.log", "\n".join(out))
                why = "timed out" if res.timed_out else f"exit {res.returncode}"
                lines = [ln for ln in (res.stdout + res.stderr).splitlines() if "rror" in ln]
                raise BuildError(f"building {suite} for stack {stack.name!r} from {src}: "
                                 f"`{' '.join(argv[:2])}` failed ({why})",
                                 log="\n".join((lines or (res.stdout + res.stderr)
                                                .splitlines())[-30:]))
        write_file(tmp / "build.log", "\n".join(out))
        write_file(tmp / ".built", str(src) + "\n")
    return final


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
