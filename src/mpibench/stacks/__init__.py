"""Find MPI installs and identify them from the library's own version string.

Sources, in order: Debian's side-by-side wrappers (mpicc.openmpi / mpicc.mpich), a plain
`mpicc` on PATH (reported as an alias when it resolves to a stack already found), prefixes
given with --stack-prefix, and a stacks file (TOML):

    [stacks.ompi5]
    prefix = "/opt/openmpi-5.0.3"          # or mpicc = "...", launcher = "..."
    kind = "openmpi"                       # optional; checked against the library's string
    launcher_kind = "mpirun-openmpi"       # optional; default from the kind and launcher name
    modules = ["openmpi/5.0.3"]            # loaded for probing, building and running
    env = { UCX_WARN_UNUSED_ENV_VARS = "n" }   # the stack's own environment

What each MPI family needs (names, launchers, presets, diagnostics) lives in one module per
kind under mpibench.stacks.kinds. A missing or broken stack is a Stack with ok=False and a
one-line problem, never a traceback; two stacks with one name are an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mpibench.errors import StackError, UsageError
from mpibench.files import cache_root, write_file
from mpibench.process import run_command
from mpibench.stacks.kinds import (
    StackKind,
    get_kind,
    kind_for_launcher,
    kind_from_version,
    kind_names,
    kinds,
)

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

# Process environment that changes what a wrapper compiles against or what a probe loads.
_PROBE_ENV_KEYS = ("PATH", "LD_LIBRARY_PATH", "LOADEDMODULES", "I_MPI_ROOT", "MPI_HOME",
                   "OPAL_PREFIX", "CPATH", "LIBRARY_PATH")
MODULE_LOAD_FAILED = 97

# Environment modules: the init script of environment-modules or Lmod, then `module load`.
_FAIL = f"exit {MODULE_LOAD_FAILED}"
_MODULE_SCRIPT = (
    'for f in "${MODULESHOME:+$MODULESHOME/init/bash}" /usr/share/modules/init/bash '
    '/etc/profile.d/modules.sh /usr/share/lmod/lmod/init/bash; do '
    '[ -n "$f" ] && [ -r "$f" ] && . "$f" && break; done; '
    'n=$1; shift; '
    'if ! type module >/dev/null 2>&1; then echo "mpibench: no module command '
    f'(install environment-modules or Lmod)" >&2; {_FAIL}; fi; '
    'module load "${@:1:$n}" || { echo "mpibench: module load ${*:1:$n} failed" >&2; '
    f'{_FAIL}; }}; shift "$n"; exec "$@"')


def with_modules(argv: Sequence[str], modules: Sequence[str]) -> list[str]:
    """argv run after `module load <modules>` (argv unchanged without modules). The module
    names travel as arguments, never inside the script text."""
    if not modules:
        return list(argv)
    return ["bash", "-c", _MODULE_SCRIPT, "mpibench-modules", str(len(modules)),
            *modules, *argv]


@dataclass
class Stack:
    name: str
    kind: str = "unknown"  # a registered kind: openmpi, mpich, mvapich, intel, unknown
    version: str = ""
    library_version: str = ""
    mpi_standard: str = ""
    mpicc: str = ""
    launcher: str = ""  # path of mpirun/mpiexec
    launcher_kind: str = ""  # registry name in mpibench.launchers
    prefix: str = ""
    modules: list[str] = field(default_factory=list)
    origin: str = ""  # debian, path, prefix, file, installed
    ok: bool = True
    problem: str = ""
    alias_of: str = ""
    # the stack's own environment (I_MPI_ROOT, FI_PROVIDER_PATH...): compiling, probing, runs
    env: dict[str, str] = field(default_factory=dict)

    @property
    def large_count(self) -> bool:
        try:
            return int(self.mpi_standard.split(".")[0]) >= 4
        except ValueError:
            return False

    @property
    def kind_class(self) -> type[StackKind]:
        return get_kind(self.kind)

    def identity(self) -> str:
        """Stable key for build caches: wrapper path, what the library says it is, and the
        environment and modules it is compiled and run with."""
        blob = json.dumps([wrapper_key(self.mpicc, self.modules), self.library_version,
                           self.kind,
                           sorted(self.env.items()), list(self.modules)])
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def command(self, argv: Sequence[str]) -> list[str]:
        """argv as this stack runs it: after its modules are loaded."""
        return with_modules(argv, self.modules)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["large_count"] = self.large_count
        return d


def wrapper_key(mpicc: str, modules: Sequence[str] = ()) -> str:
    """The wrapper as a build-cache key. A bare name ('mpicc', a module's wrapper) is not a
    path: realpath made it one under the current directory, so every working directory got
    its own key and rebuilt the core. It is looked up on PATH (unless modules provide it:
    then the name and the modules are the key)."""
    if os.sep in mpicc:
        return os.path.realpath(mpicc)
    if not modules:
        found = shutil.which(mpicc)
        if found:
            return os.path.realpath(found)
    return mpicc


def cache_dir() -> Path:
    path = cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _first_line(text: str, default: str) -> str:
    return (text.strip().splitlines() or [default])[0]


def probe(mpicc: str, timeout: float = 60, env: Mapping[str, str] | None = None,
          modules: Sequence[str] = ()) -> dict:
    """Compile and run a tiny program that prints MPI_Get_library_version (legal before
    MPI_Init). Cached per wrapper (path, mtime), the stack's env and modules and the process
    environment that decides what the wrapper finds, so `stacks` stays fast and a stack
    accepted from the cache is the one that would be built."""
    env = dict(env or {})
    real = shutil.which(mpicc) or mpicc
    if not modules and not os.path.exists(real):
        return {"ok": False, "problem": f"compiler wrapper {mpicc} not found"}
    mtime = os.stat(real).st_mtime_ns if os.path.exists(real) else 0
    seen = {k: os.environ.get(k, "") for k in _PROBE_ENV_KEYS}
    blob = json.dumps([os.path.realpath(real), mtime, PROBE_SOURCE, sorted(env.items()),
                       list(modules), sorted(seen.items())])
    key = hashlib.sha256(blob.encode())
    cached = cache_dir() / "probe" / f"{key.hexdigest()[:16]}.json"
    if cached.exists():
        try:
            info = json.loads(cached.read_text())
            if isinstance(info, dict) and isinstance(info.get("ok"), bool):
                return info            # else a damaged cache file: probe again, rewrite it
        except (ValueError, OSError):
            pass
    with tempfile.TemporaryDirectory(prefix="mpibench-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        write_file(src, PROBE_SOURCE)
        exe = Path(tmp) / "probe"
        cc = mpicc if modules else real
        res = run_command(with_modules([cc, str(src), "-o", str(exe)], modules), env=env,
                          timeout=timeout)
        if not res.ok:
            first = _first_line(res.stderr, "(no output)")
            return {"ok": False, "problem": f"{mpicc} cannot compile an MPI program: {first}"}
        res = run_command(with_modules([str(exe)], modules), env=env, timeout=timeout)
        if not res.ok:
            first = _first_line(res.stderr, f"exit {res.returncode}")
            return {"ok": False, "problem": f"MPI library probe built with {mpicc} fails: {first}"}
    out = res.stdout.strip().splitlines()
    standard = out[0].split("=", 1)[1] if out and out[0].startswith("MPI_VERSION=") else ""
    libver = "\n".join(out[1:]).strip()
    kind, version = kind_from_version(libver)
    info = {"ok": True, "problem": "", "kind": kind, "version": version,
            "library_version": libver, "mpi_standard": standard}
    cached.parent.mkdir(parents=True, exist_ok=True)
    write_file(cached, json.dumps(info))
    return info


def _which(name: str, modules: Sequence[str] = ()) -> str | None:
    """shutil.which, after the modules are loaded when there are any."""
    if not modules:
        return shutil.which(name)
    res = run_command(with_modules(["sh", "-c", 'command -v "$0"', name], modules), timeout=60)
    found = res.stdout.strip().splitlines()
    return found[-1] if res.ok and found and os.path.isabs(found[-1]) else None


def _find_launcher(kind: type[StackKind], mpicc: str, bindir: str | None,
                   modules: Sequence[str] = ()) -> str:
    """The kind's launcher that belongs to this install: in the prefix's bin (its order of
    preference), else beside the wrapper (found with the stack's modules loaded), else one of
    Debian's suffixed names on PATH. A bare mpirun/mpiexec from PATH is never taken: it may
    be another stack's."""
    dirs = [bindir] if bindir else []
    wrapper = _which(mpicc, modules) or mpicc
    if os.path.isabs(wrapper):
        dirs.append(os.path.dirname(wrapper))
    names = list(kind.prefix_launchers) if bindir else \
        list(kind.debian_launchers) + list(kind.prefix_launchers)
    for d in dirs:
        for n in names:
            p = os.path.join(d, n)
            if os.access(p, os.X_OK) and not os.path.isdir(p):
                return p
    for n in kind.debian_launchers:
        p = shutil.which(n)
        if p:
            return p
    return ""


def _make_stack(name: str, mpicc: str, origin: str, *, bindir: str | None = None,
                prefix: str = "", launcher: str = "", launcher_kind: str = "",
                modules: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
                kind: str = "") -> Stack:
    stack = Stack(name=name, mpicc=mpicc, origin=origin, prefix=prefix,
                  modules=list(modules or []), env=dict(env or {}))
    hinted = get_kind(kind) if kind else None
    if prefix and hinted is not None:  # e.g. Intel's wrapper needs I_MPI_ROOT to compile
        stack.env = {**hinted.prefix_env(prefix), **stack.env}
    info = probe(mpicc, env=stack.env, modules=stack.modules)
    if not info["ok"]:
        stack.ok, stack.problem = False, info["problem"]
        stack.kind = kind or "unknown"
        return stack
    if info["kind"] == "unknown" and kind:
        info["kind"] = kind
    elif info["kind"] == "unknown" and launcher:
        info["kind"] = kind_for_launcher(launcher) or "unknown"
    if kind and info["kind"] != kind:
        stack.ok = False
        stack.problem = (f"kind = {kind!r} but the library says it is {info['kind']} "
                         f"({_first_line(info['library_version'], '?')})")
        stack.kind = kind
        return stack
    stack.kind = info["kind"]
    stack.version = info["version"]
    stack.library_version = info["library_version"]
    stack.mpi_standard = info["mpi_standard"]
    k = stack.kind_class
    if not stack.prefix:
        where = _which(mpicc, stack.modules) or mpicc
        stack.prefix = str(Path(os.path.realpath(where)).parent.parent)
    if hinted is None and prefix:
        stack.env = {**k.prefix_env(prefix), **stack.env}
    stack.launcher = launcher or _find_launcher(k, mpicc, bindir, stack.modules)
    stack.launcher_kind = launcher_kind or k.launcher_backend(stack.launcher)
    if not stack.launcher:
        where = f" in {bindir}" if bindir else ""
        stack.ok = False
        stack.problem = (f"no launcher found{where} (looked for "
                         f"{', '.join(dict.fromkeys(k.debian_launchers + k.prefix_launchers))})")
    return stack


def _guess_kind_from_prefix(prefix: str) -> str:
    """A kind whose prefix needs environment before its wrapper works (Intel MPI), from
    the layout alone; "" when the layout says nothing."""
    if os.path.exists(os.path.join(prefix, "bin", "impi_info")) or \
            os.path.isdir(os.path.join(prefix, "opt", "mpi")):
        return "intel"
    return ""


def _prefix_stack(prefix: str, name: str | None = None, origin: str = "prefix",
                  **kw) -> Stack:
    prefix = os.path.abspath(os.path.expanduser(prefix))
    bindir = os.path.join(prefix, "bin")
    mpicc = os.path.join(bindir, "mpicc")
    if not os.path.isdir(prefix):
        return Stack(name=name or prefix, prefix=prefix, origin=origin, ok=False,
                     problem=f"prefix {prefix} does not exist")
    if not os.access(mpicc, os.X_OK):
        return Stack(name=name or prefix, prefix=prefix, origin=origin, ok=False,
                     problem=f"no executable {mpicc} (not an MPI install prefix?)")
    if not kw.get("kind"):
        kw["kind"] = ""
        guess = _guess_kind_from_prefix(prefix)
        if guess:
            kw["env"] = {**get_kind(guess).prefix_env(prefix), **(kw.get("env") or {})}
    stack = _make_stack(name or "", mpicc, origin, bindir=bindir, prefix=prefix, **kw)
    if not name:
        stack.name = f"{stack.kind}-{stack.version}" if stack.ok else os.path.basename(prefix)
    return stack


STACK_FILE_KEYS = ("prefix", "mpicc", "launcher", "launcher_kind", "kind", "modules", "env")


def _str_table(value: object, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float))
                                              and not isinstance(v, bool)
                                              for v in value.values()):
        raise UsageError(f"{where}: {key} must be a table of NAME = \"value\", "
                         f"got {_shown(value)}")
    out = {str(k): str(v) for k, v in value.items()}
    for k, v in out.items():
        # the environment cannot hold these: os.environ raised ValueError at `stacks list`
        if not k or "=" in k or "\x00" in k:
            raise UsageError(f"{where}: {key} name {k!r}: expected a variable name without "
                             "'=' or NUL")
        if "\x00" in v:
            raise UsageError(f"{where}: {key}.{k} = {v!r}: a value cannot hold a NUL byte")
    return out


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


MAX_STACKS_FILE = 1 << 20      # a stacks file is a few hundred bytes


def read_stacks_file(path: str | Path) -> dict[str, Any]:
    """The stacks file's TOML, or UsageError naming the file and what is wrong (missing, a
    directory or a device such as /dev/zero, too large, not UTF-8, not TOML)."""
    path = Path(path)
    try:
        if not path.exists():
            raise UsageError(f"stacks file {path}: not found")
        if path.is_dir():
            raise UsageError(f"stacks file {path}: cannot read (Is a directory)")
        if not path.is_file():
            raise UsageError(f"stacks file {path}: not a regular file (a device such as "
                             "/dev/zero?); expected a TOML file")
        if path.stat().st_size > MAX_STACKS_FILE:
            raise UsageError(f"stacks file {path}: larger than {MAX_STACKS_FILE >> 20} MiB; "
                             "expected a TOML file of [stacks.NAME] tables")
        with path.open("rb") as f:
            text = f.read(MAX_STACKS_FILE + 1).decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise UsageError(f"stacks file {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                         f"at offset {exc.start}); expected a TOML file") from None
    except OSError as exc:
        raise UsageError(f"stacks file {path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"stacks file {path}: invalid TOML ({exc})") from exc


def load_stacks_file(path: str | Path, data: dict[str, Any] | None = None) -> list[Stack]:
    path = Path(path)
    if data is None:
        data = read_stacks_file(path)
    stacks = []
    for name, spec, kw in check_stacks_data(path, data):
        if "prefix" in spec:
            stacks.append(_prefix_stack(spec["prefix"], name=name, origin="file", **kw))
        else:
            stacks.append(_make_stack(name, spec["mpicc"], "file", **kw))
    return stacks


def check_stacks_data(path: Path, data: dict[str, Any] | None
                      ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every [stacks.NAME] entry checked (keys, types, kinds, launchers, env), without
    probing anything: (name, entry, keyword arguments for the Stack). UsageError names the
    file, the entry and the value."""
    table = data.get("stacks", {}) if data else {}
    if not isinstance(table, dict):
        raise UsageError(f"stacks file {path}: stacks = {_shown(table)}: expected "
                         "[stacks.NAME] tables")
    out = []
    for name, spec in table.items():
        where = f"stacks file {path}: stacks.{name}"
        if not isinstance(spec, dict):
            raise UsageError(f"{where}: expected a table")
        unknown = set(spec) - set(STACK_FILE_KEYS)
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {sorted(unknown)}; expected "
                             f"{', '.join(STACK_FILE_KEYS)}")
        for key in ("prefix", "mpicc", "launcher", "launcher_kind", "kind"):
            # mpicc = [list], prefix = 5: a TypeError deep in a probe before
            if key in spec and (not isinstance(spec[key], str) or "\x00" in spec[key]
                                or (key in ("prefix", "mpicc") and not spec[key].strip())):
                raise UsageError(f"{where}: {key} = {_shown(spec[key])}: expected a "
                                 + ("non-empty " if key in ("prefix", "mpicc") else "")
                                 + "string" + (" (a path)" if key in ("prefix", "mpicc")
                                               else ""))
        kind = spec.get("kind", "")
        if kind and kind not in kind_names():
            raise UsageError(f"{where}: kind = {kind!r} is not a known stack kind; expected "
                             f"one of: {', '.join(k for k in kind_names() if k != 'unknown')}")
        modules = spec.get("modules", [])
        if not isinstance(modules, list) or not all(isinstance(m, str) and "\x00" not in m
                                                    for m in modules):
            raise UsageError(f"{where}: modules must be a list of module names, got "
                             f"{_shown(modules)}")
        launcher = spec.get("launcher", "")
        launcher_kind = spec.get("launcher_kind", "")
        if launcher_kind:
            from mpibench.launchers import REGISTRY as LAUNCHERS

            if launcher_kind not in LAUNCHERS:
                raise UsageError(f"{where}: launcher_kind = {launcher_kind!r} is not a known "
                                 f"launcher; expected one of: {', '.join(LAUNCHERS.names())}")
        elif launcher:
            # the launcher's name says how to drive it (mpirun_rsh wants its own arguments)
            implied = kind or kind_for_launcher(launcher)
            if implied:
                launcher_kind = get_kind(implied).launcher_backend(launcher)
        kw = {"launcher": launcher, "launcher_kind": launcher_kind, "modules": modules,
              "env": _str_table(spec.get("env", {}), where, "env"), "kind": kind}
        if "prefix" not in spec and "mpicc" not in spec:
            raise UsageError(f"{where}: needs 'prefix' or 'mpicc'")
        out.append((name, spec, kw))
    return out


def default_stacks_file() -> Path | None:
    env = os.environ.get("MPIBENCH_STACKS")
    if env:
        return Path(env)
    p = Path(os.path.expanduser("~/.config/mpibench/stacks.toml"))
    return p if p.exists() else None


def discover(prefixes: list[str] | None = None, stacks_file: str | Path | None = None,
             include_missing: bool = False) -> list[Stack]:
    """All stacks this machine offers. Missing Debian stacks appear only with include_missing.
    Two stacks with one name raise UsageError (a name must say which stack ran)."""
    found: list[Stack] = []
    # the stacks file is read first: a bad one is refused before any compiler probe runs
    sf = stacks_file or default_stacks_file()
    sf_data = read_stacks_file(sf) if sf else None
    if sf:
        check_stacks_data(Path(sf), sf_data)
    for k in kinds():
        if not k.debian_wrapper:
            continue
        if shutil.which(k.debian_wrapper):
            found.append(_make_stack(k.name, k.debian_wrapper, "debian"))
        elif include_missing and k.debian_packaged:
            found.append(Stack(name=k.name, kind=k.name, mpicc=k.debian_wrapper,
                               origin="debian", ok=False,
                               problem=f"{k.debian_wrapper} not on PATH (install the "
                                       f"{k.name} packages)"))
    plain = shutil.which("mpicc")
    if plain:
        real = os.path.realpath(plain)
        alias = next((s for s in found if s.mpicc and
                      os.path.realpath(shutil.which(s.mpicc) or s.mpicc) == real), None)
        if alias is None:
            found.append(_make_stack("default", "mpicc", "path"))
        elif include_missing:
            found.append(Stack(name="default", kind=alias.kind, version=alias.version,
                               mpicc=plain, launcher=alias.launcher, origin="path",
                               alias_of=alias.name, ok=alias.ok, problem=alias.problem,
                               library_version=alias.library_version,
                               mpi_standard=alias.mpi_standard, prefix=alias.prefix,
                               launcher_kind=alias.launcher_kind))
    for prefix in prefixes or []:
        found.append(_prefix_stack(prefix))
    if sf:
        registered = load_stacks_file(sf, sf_data)
        # --stack-prefix of an install the stacks file already names: one stack, its name
        known = {os.path.realpath(s.prefix) for s in registered if s.prefix}
        found = [s for s in found if s.origin != "prefix"
                 or os.path.realpath(s.prefix) not in known]
        found.extend(registered)
    check_unique_names(found)
    return found


def check_unique_names(found: Sequence[Stack]) -> None:
    seen: dict[str, Stack] = {}
    for s in found:
        if s.name in seen:
            other = seen[s.name]
            raise UsageError(
                f"two stacks are named {s.name!r} ({_where(other)} and {_where(s)}); give one "
                "another name in a stacks file ([stacks.NAME] prefix = ...)")
        seen[s.name] = s


def _where(s: Stack) -> str:
    return f"{s.origin} {s.prefix or s.mpicc}".strip()


NO_MPI = "none"


def no_mpi_stack() -> Stack:
    """The stack of a variant without MPI (stack = "none"): nothing to find, build or probe."""
    return Stack(name=NO_MPI, kind="none", launcher_kind="direct", origin="builtin",
                 ok=True)


def find_stack(name: str, stacks: list[Stack]) -> Stack:
    """Resolve a user-given name; raise StackError naming what exists. "none" is a variant
    without MPI, unless a stack of that name exists."""
    if name == NO_MPI and not any(s.name == name for s in stacks):
        return no_mpi_stack()
    for s in stacks:
        if s.name == name:
            if s.alias_of:
                return find_stack(s.alias_of, stacks)
            if not s.ok:
                raise StackError(f"stack {name!r} is not usable: {s.problem}")
            return s
    usable = ", ".join(s.name for s in stacks if s.ok) or "none"
    raise StackError(f"unknown stack {name!r}; expected one of: {usable}")
