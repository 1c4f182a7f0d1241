"""MPI stack kinds (Open MPI, MPICH, Intel MPI, MVAPICH, ...), registered by name.

A kind says everything mpibench needs to know about one MPI family: how its library version
string reads, what its compiler wrapper and launchers are called (Debian's side-by-side names
and the names inside an install prefix), which launcher backend drives it, how a launcher
passes environment to the ranks, what it needs when run as root, which environment an install
prefix needs, its transport presets and how to read from its own diagnostics which transport
actually carried the traffic. Adding a kind is one new module here with @register_kind;
nothing else in mpibench names a kind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mpibench.errors import UsageError
from mpibench.registry import Registry
from mpibench.transports import Preset

REGISTRY: Registry[type[StackKind]] = Registry("stack kind", __name__)
register_kind = REGISTRY.register


class StackKind:
    name = ""
    title = ""  # for people: "Open MPI"
    # tried in ascending order: MVAPICH and Intel MPI strings also mention MPICH
    detect_order = 50
    version_pattern = ""  # regex on MPI_Get_library_version; group 1 is the version
    debian_wrapper = ""  # Debian's side-by-side compiler wrapper (mpicc.openmpi)
    debian_launchers: tuple[str, ...] = ()
    # PyPI packages (binary wheels) that together install one version of this kind
    pypi_packages: tuple[str, ...] = ()
    debian_packaged = False  # `stacks` says how to install it when the wrapper is missing
    # launchers inside <prefix>/bin, in order of preference
    prefix_launchers: tuple[str, ...] = ("mpiexec.hydra", "mpiexec", "mpirun")
    # basenames that are this kind's launcher wherever they appear (profiling, inference)
    launcher_names: tuple[str, ...] = ()
    launcher_kind = "mpiexec-hydra"  # backend in mpibench.launchers
    # launchers of this kind that need another backend, by file name (mpirun_rsh)
    launcher_backends: Mapping[str, str] = {}
    accepts_mca = False  # Open MPI MCA parameters
    binds_by_default = False  # the launcher binds ranks to cores unless told otherwise
    srun_mpi_plugin = "pmi2"  # srun --mpi= for direct launch
    # files beside a generic mpirun/mpiexec that say it is this kind's (ompi_info)
    marker_files: tuple[str, ...] = ()
    oversubscribe_flag = False  # the launcher must be told to run more ranks than cores
    root_env: Mapping[str, str] = {}  # needed when running as root
    presets: Mapping[str, Preset] = {}
    diag_env: Mapping[str, str] = {}  # verification probe: start-up diagnostics
    diag_mca: Mapping[str, str] = {}

    # -- identification ------------------------------------------------------------------
    @classmethod
    def match_version(cls, text: str) -> str | None:
        if not cls.version_pattern:
            return None
        m = re.search(cls.version_pattern, text)
        return m.group(1).rstrip(",") if m else None

    @classmethod
    def describe(cls, library_version: str) -> str:
        """Extra words for `mpibench stacks` (e.g. MPICH's device)."""
        return ""

    @classmethod
    def launcher_backend(cls, launcher: str) -> str:
        """The mpibench.launchers backend for this kind's launcher at path `launcher`."""
        base = os.path.basename(launcher)
        if base == "srun":
            return "srun"
        return cls.launcher_backends.get(base, cls.launcher_kind)

    # -- environment -----------------------------------------------------------------------
    @classmethod
    def prefix_env(cls, prefix: str) -> dict[str, str]:
        """Environment an install under prefix needs to compile and run (Intel: I_MPI_ROOT)."""
        return {}

    @classmethod
    def env_flags(cls, env: Mapping[str, str]) -> list[str]:
        """Launcher flags that pass env to every rank (profiling's LD_PRELOAD)."""
        flags: list[str] = []
        for k, v in env.items():
            flags += ["-genv", k, v]
        return flags

    # -- transports --------------------------------------------------------------------------
    @classmethod
    def presets_for(cls, library_version: str) -> Mapping[str, Preset]:
        """Transport presets for this build ("" = every preset the kind can have)."""
        return cls.presets

    @classmethod
    def interface_settings(cls, interface: str, library_version: str) -> Preset:
        """The settings that keep traffic between nodes on `interface` (one name or a comma
        list), as a site pins a fabric: UCX's and libfabric's TCP device variables by
        default (MPICH, MVAPICH, Intel MPI); Open MPI adds its BTL/OOB MCA parameters."""
        return Preset(f"traffic between nodes on {interface}",
                      env={"UCX_NET_DEVICES": interface, "FI_TCP_IFACE": interface,
                           "FI_SOCKETS_IFACE": interface})

    @classmethod
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        """(actual transport "<class> [<detail>]", evidence lines) from a probe's output."""
        return f"unknown [no diagnostics known for {cls.name} stacks]", []


@register_kind("unknown")
class UnknownKind(StackKind):
    """A library whose version string no kind recognises: Hydra-style launch, no presets."""

    title = "unknown MPI"
    detect_order = 1000


def get_kind(name: str) -> type[StackKind]:
    return REGISTRY.get(name)


def kind_names() -> list[str]:
    return REGISTRY.names()


def kinds() -> list[type[StackKind]]:
    return sorted(REGISTRY.classes(), key=lambda k: (k.detect_order, k.name))


def kind_from_version(text: str) -> tuple[str, str]:
    """(kind, version) from MPI_Get_library_version's text; ("unknown", "") if no kind
    recognises it."""
    for k in kinds():
        v = k.match_version(text)
        if v is not None:
            return k.name, v
    return "unknown", ""


def kind_for_launcher(path: str) -> str | None:
    """The kind a launcher's file name implies (mpirun.openmpi, mpirun_rsh), or None when the
    name says nothing (plain mpirun/mpiexec)."""
    base = os.path.basename(path)
    for k in kinds():
        if base in k.launcher_names:
            return k.name
    if base in ("mpirun", "mpiexec") and os.path.dirname(path):
        for k in kinds():
            if any(os.path.exists(os.path.join(os.path.dirname(path), f))
                   for f in k.marker_files):
                return k.name
    return None


# ---- transport presets by kind (the preset tables are the kinds'; transports.py holds
# the type and the vocabulary, so it needs no kind) ----------------------------------------
def presets_for(kind: str, library_version: str = "") -> Mapping[str, Preset]:
    return get_kind(kind).presets_for(library_version)


def preset(kind: str, name: str | None, library_version: str = "") -> Preset | None:
    """The preset for a stack kind (and build, when the kind's presets depend on it), None
    when no transport was requested."""
    if not name:
        return None
    table = presets_for(kind, library_version)
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise UsageError(f"transport {name!r} is not available for {kind} stacks; "
                         f"expected one of: {known}")
    return table[name]


def all_transport_names() -> list[str]:
    return sorted({t for k in kinds() for t in k.presets_for("")})
