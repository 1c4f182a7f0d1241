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
from mpibench.stacks import Stack, cache_dir

SUITES = ("imb", "osu", "netpipe")

# OSU programs whose rows are stored under the IMB name of the same operation, so they line
# up with the core's and IMB's rows in one comparison (the program name stays in
# extra.tool_benchmark). Bandwidth programs (osu_bw, osu_bibw) print no time and keep
# their own names: their windowed streams are not IMB's PingPong.
OSU_AS_IMB = {
    "osu_latency": "PingPong", "osu_allreduce": "Allreduce", "osu_allgather": "Allgather",
    "osu_allgatherv": "Allgatherv", "osu_alltoall": "Alltoall", "osu_alltoallv": "Alltoallv",
    "osu_barrier": "Barrier", "osu_bcast": "Bcast", "osu_gather": "Gather",
    "osu_gatherv": "Gatherv", "osu_reduce": "Reduce", "osu_reduce_scatter": "Reduce_scatter",
    "osu_scatter": "Scatter", "osu_scatterv": "Scatterv",
}
IMB_BINARY = "IMB-MPI1"
NETPIPE_BINARY = "NPmpi"


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
        cc, cxx = stack.mpicc, cxx_wrapper(stack) if suite != "netpipe" else ""
        if suite == "imb":
            # IMB's C++ sources include mpi.h; Open MPI's C++ bindings are not wanted
            steps = [["make", "-C", str(tree), IMB_BINARY, f"CC={cc}",
                      f"CXX={cxx} -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"]]
        elif suite == "osu":
            steps = [["./configure", f"CC={cc}", f"CXX={cxx}"],
                     ["make", f"-j{max(1, min(4, os.cpu_count() or 1))}"]]
        else:
            steps = [["make", "-C", str(tree), "mpi", f"CC={cc}"]]
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
    name = {"imb": IMB_BINARY, "netpipe": NETPIPE_BINARY}.get(suite, benchmark or "")
    hits = sorted((p for p in root.rglob(name) if p.is_file() and os.access(p, os.X_OK)),
                  key=lambda p: (len(p.parts), str(p)))
    if not hits:
        raise UsageError(f"no executable {name!r} under {root}")
    return hits[0]


# -- command line --------------------------------------------------------------------------

def program_args(peer: PeerSpec, run_dir: Path) -> list[str]:
    """The suite's own arguments for the group's benchmarks and sizes."""
    args: list[str] = []
    sizes = parse_sizes(peer.sizes) if peer.sizes else None
    if peer.suite == "imb":
        args += list(peer.benchmarks)
        if peer.sizes and ":" in peer.sizes:
            args += ["-msglog", peer.sizes.strip()]
        elif sizes is not None:
            # an explicit size list: IMB reads it from a file, one length per line
            write_file(run_dir / "msglen.txt", "".join(f"{s}\n" for s in sizes))
            args += ["-msglen", "msglen.txt"]
    elif peer.suite == "osu":
        if sizes is not None:
            # OSU runs the powers of two between min and max
            args += ["-m", f"{min(sizes)}:{max(sizes)}"]
    elif peer.suite == "netpipe" and sizes is not None:
        args += ["-u", str(max(sizes))]
    return args + list(peer.args)


# -- results -------------------------------------------------------------------------------

def parse_output(peer: PeerSpec, text: str, np_: int) -> tuple[list[dict[str, Any]], dict]:
    """Result rows (store records) and what the output says about the tool, from one
    launch's stdout."""
    from mpibench.parsers.imb import parse_imb
    from mpibench.parsers.netpipe import parse_netpipe
    from mpibench.parsers.osu import parse_osu

    parser = {"imb": parse_imb, "osu": parse_osu, "netpipe": parse_netpipe}[peer.suite]
    res = parser(text)
    rows = []
    for rec in res.records:
        rec = dict(rec)
        extra = dict(rec.get("extra") or {})
        if rec.get("np") is None:
            rec["np"] = np_
            extra["np_from"] = "variant"
        tool_name = rec["benchmark"]
        if peer.suite == "osu" and tool_name in OSU_AS_IMB:
            rec["benchmark"] = OSU_AS_IMB[tool_name]
            extra["tool_benchmark"] = tool_name
        extra["tool"] = peer.suite
        rec["extra"] = extra
        rows.append(rec)
    meta = {"tool": res.tool, "version": res.version,
            "problems": [p.message for p in res.problems][:10], "truncated": res.truncated}
    return rows, meta
