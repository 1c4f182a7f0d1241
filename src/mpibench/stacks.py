"""Find MPI installs and identify them from the library's own version string.

Sources, in order: Debian's side-by-side wrappers (mpicc.openmpi / mpicc.mpich), a plain
`mpicc` on PATH (reported as an alias when it resolves to a stack already found), prefixes
given with --stack-prefix, and a stacks file (TOML):

    [stacks.ompi5]
    prefix = "/opt/openmpi-5.0.3"          # or mpicc = "...", launcher = "..."
    launcher_kind = "mpirun-openmpi"       # optional; default from the library kind
    modules = ["openmpi/5.0.3"]            # for job scripts on clusters

A missing or broken stack is a Stack with ok=False and a one-line problem, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mpibench.errors import StackError, UsageError
from mpibench.runner import run_command

PROBE_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
int main(void) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(v, &len);
    MPI_Get_version(&major, &minor);
    printf("MPI_VERSION=%d.%d\n", major, minor);
    printf("%s\n", v);
    return 0;
}
"""

# Debian installs these side by side; other distributions use similar suffixes.
KNOWN_WRAPPERS = [
    ("openmpi", "mpicc.openmpi", ["mpirun.openmpi", "mpiexec.openmpi"]),
    ("mpich", "mpicc.mpich", ["mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich"]),
    ("mvapich", "mpicc.mvapich", ["mpirun_rsh", "mpiexec.mvapich"]),
]

DEFAULT_LAUNCHER_KIND = {
    "openmpi": "mpirun-openmpi",
    "mpich": "mpiexec-hydra",
    "mvapich": "mpiexec-hydra",
    "intel": "mpiexec-hydra",
}


@dataclass
class Stack:
    name: str
    kind: str = "unknown"  # openmpi, mpich, mvapich, intel, unknown
    version: str = ""
    library_version: str = ""
    mpi_standard: str = ""
    mpicc: str = ""
    launcher: str = ""  # path of mpirun/mpiexec
    launcher_kind: str = ""  # registry name in mpibench.launchers
    prefix: str = ""
    modules: list[str] = field(default_factory=list)
    origin: str = ""  # debian, path, prefix, file
    ok: bool = True
    problem: str = ""
    alias_of: str = ""

    @property
    def large_count(self) -> bool:
        try:
            return int(self.mpi_standard.split(".")[0]) >= 4
        except ValueError:
            return False

    def identity(self) -> str:
        """Stable key for build caches: wrapper path + what the library says it is."""
        blob = json.dumps([os.path.realpath(self.mpicc), self.library_version, self.kind])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["large_count"] = self.large_count
        return d


def cache_dir() -> Path:
    base = os.environ.get("MPIBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mpibench"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _kind_from_version(text: str) -> tuple[str, str]:
    patterns = [
        ("openmpi", r"Open MPI v?(\d+[\w.]*)"),
        ("mvapich", r"MVAPICH2? Version:\s*(\S+)"),
        ("intel", r"Intel\(R\) MPI Library (\S+(?: Update \d+)?)"),
        ("mpich", r"MPICH Version:\s*(\S+)"),
    ]
    for kind, pat in patterns:
        m = re.search(pat, text)
        if m:
            return kind, m.group(1).rstrip(",")
    return "unknown", ""


def probe(mpicc: str, timeout: float = 60) -> dict:
    """Compile and run a tiny program that prints MPI_Get_library_version (legal before
    MPI_Init), cached per wrapper path and mtime so `stacks` stays fast."""
    real = shutil.which(mpicc) or mpicc
    if not os.path.exists(real):
        return {"ok": False, "problem": f"compiler wrapper {mpicc} not found"}
    st = os.stat(real)
    key = hashlib.sha256(f"{os.path.realpath(real)}:{st.st_mtime_ns}:{PROBE_SOURCE}".encode())
    cached = cache_dir() / "probe" / f"{key.hexdigest()[:16]}.json"
    if cached.exists():
        try:
            return json.loads(cached.read_text())
        except ValueError:
            pass
    with tempfile.TemporaryDirectory(prefix="mpibench-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(PROBE_SOURCE)
        exe = Path(tmp) / "probe"
        res = run_command([real, str(src), "-o", str(exe)], timeout=timeout)
        if not res.ok:
            first = (res.stderr.strip().splitlines() or ["(no output)"])[0]
            return {"ok": False, "problem": f"{mpicc} cannot compile an MPI program: {first}"}
        res = run_command([str(exe)], timeout=timeout)
        if not res.ok:
            first = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[0]
            return {"ok": False, "problem": f"MPI library probe built with {mpicc} fails: {first}"}
    out = res.stdout.strip().splitlines()
    standard = out[0].split("=", 1)[1] if out and out[0].startswith("MPI_VERSION=") else ""
    libver = "\n".join(out[1:]).strip()
    kind, version = _kind_from_version(libver)
    info = {"ok": True, "problem": "", "kind": kind, "version": version,
            "library_version": libver, "mpi_standard": standard}
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(info))
    return info


def _which_first(names: list[str], bindir: str | None = None) -> str:
    for n in names:
        if bindir:
            p = os.path.join(bindir, n)
            if os.access(p, os.X_OK):
                return p
        else:
            p = shutil.which(n)
            if p:
                return p
    return ""


def _make_stack(name: str, mpicc: str, launchers: list[str], origin: str,
                bindir: str | None = None, prefix: str = "", launcher: str = "",
                launcher_kind: str = "", modules: list[str] | None = None) -> Stack:
    stack = Stack(name=name, mpicc=mpicc, origin=origin, prefix=prefix,
                  modules=list(modules or []))
    info = probe(mpicc)
    if not info["ok"]:
        stack.ok, stack.problem = False, info["problem"]
        return stack
    stack.kind = info["kind"]
    stack.version = info["version"]
    stack.library_version = info["library_version"]
    stack.mpi_standard = info["mpi_standard"]
    if not stack.prefix:
        stack.prefix = str(Path(os.path.realpath(shutil.which(mpicc) or mpicc)).parent.parent)
    stack.launcher = launcher or _which_first(launchers, bindir)
    stack.launcher_kind = launcher_kind or DEFAULT_LAUNCHER_KIND.get(stack.kind, "mpiexec-hydra")
    if not stack.launcher:
        stack.ok = False
        stack.problem = f"no launcher found (looked for {', '.join(launchers)})"
    return stack


def _prefix_stack(prefix: str, name: str | None = None, origin: str = "prefix",
                  **kw) -> Stack:
    bindir = os.path.join(prefix, "bin")
    mpicc = os.path.join(bindir, "mpicc")
    if not os.path.isdir(prefix):
        return Stack(name=name or prefix, prefix=prefix, origin=origin, ok=False,
                     problem=f"prefix {prefix} does not exist")
    if not os.access(mpicc, os.X_OK):
        return Stack(name=name or prefix, prefix=prefix, origin=origin, ok=False,
                     problem=f"no executable {mpicc}")
    stack = _make_stack(name or "", mpicc, ["mpirun", "mpiexec", "mpiexec.hydra"], origin,
                        bindir=bindir, prefix=prefix, **kw)
    if not name:
        stack.name = f"{stack.kind}-{stack.version}" if stack.ok else os.path.basename(prefix)
    return stack


def load_stacks_file(path: str | Path) -> list[Stack]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise UsageError(f"stacks file {path}: not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"stacks file {path}: invalid TOML ({exc})") from exc
    table = data.get("stacks")
    if not isinstance(table, dict):
        raise UsageError(f"stacks file {path}: expected a [stacks.NAME] table")
    stacks = []
    for name, spec in table.items():
        where = f"stacks file {path}: stacks.{name}"
        if not isinstance(spec, dict):
            raise UsageError(f"{where}: expected a table")
        unknown = set(spec) - {"prefix", "mpicc", "launcher", "launcher_kind", "modules"}
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {sorted(unknown)}; expected prefix, "
                             "mpicc, launcher, launcher_kind, modules")
        kw = {"launcher": spec.get("launcher", ""), "launcher_kind": spec.get("launcher_kind", ""),
              "modules": spec.get("modules", [])}
        if "prefix" in spec:
            stacks.append(_prefix_stack(spec["prefix"], name=name, origin="file", **kw))
        elif "mpicc" in spec:
            stacks.append(_make_stack(name, spec["mpicc"], ["mpirun", "mpiexec"], "file", **kw))
        else:
            raise UsageError(f"{where}: needs 'prefix' or 'mpicc'")
    return stacks


def default_stacks_file() -> Path | None:
    env = os.environ.get("MPIBENCH_STACKS")
    if env:
        return Path(env)
    p = Path(os.path.expanduser("~/.config/mpibench/stacks.toml"))
    return p if p.exists() else None


def discover(prefixes: list[str] | None = None, stacks_file: str | Path | None = None,
             include_missing: bool = False) -> list[Stack]:
    """All stacks this machine offers. Missing Debian stacks appear only with include_missing."""
    found: list[Stack] = []
    for name, cc, launchers in KNOWN_WRAPPERS:
        if shutil.which(cc):
            found.append(_make_stack(name, cc, launchers, "debian"))
        elif include_missing and name != "mvapich":  # not packaged by Debian
            found.append(Stack(name=name, mpicc=cc, origin="debian", ok=False,
                               problem=f"{cc} not on PATH (install the {name} packages)"))
    plain = shutil.which("mpicc")
    if plain:
        real = os.path.realpath(plain)
        alias = next((s for s in found if s.mpicc and
                      os.path.realpath(shutil.which(s.mpicc) or s.mpicc) == real), None)
        if alias is None:
            found.append(_make_stack("default", "mpicc", ["mpirun", "mpiexec"], "path"))
        elif include_missing:
            found.append(Stack(name="default", kind=alias.kind, version=alias.version,
                               mpicc=plain, launcher=alias.launcher, origin="path",
                               alias_of=alias.name, ok=alias.ok, problem=alias.problem,
                               library_version=alias.library_version,
                               mpi_standard=alias.mpi_standard, prefix=alias.prefix,
                               launcher_kind=alias.launcher_kind))
    for prefix in prefixes or []:
        found.append(_prefix_stack(prefix))
    sf = stacks_file or default_stacks_file()
    if sf:
        found.extend(load_stacks_file(sf))
    return found


def find_stack(name: str, stacks: list[Stack]) -> Stack:
    """Resolve a user-given name; raise StackError naming what exists."""
    for s in stacks:
        if s.name == name or (s.alias_of and s.name == name):
            if s.alias_of:
                return find_stack(s.alias_of, stacks)
            if not s.ok:
                raise StackError(f"stack {name!r} is not usable: {s.problem}")
            return s
    usable = ", ".join(s.name for s in stacks if s.ok) or "none"
    raise StackError(f"unknown stack {name!r}; expected one of: {usable}")
