"""Intel MPI: MPICH-derived, launched with its own <prefix>/bin/mpiexec.hydra.

Its `mpirun` is a script that runs whatever mpiexec.hydra comes first on PATH (Debian MPICH's,
and MPI_Init then fails), so the prefix's mpiexec.hydra is preferred. The compiler wrapper and
the library need I_MPI_ROOT=<prefix>; OFI loads the system's libfabric unless
I_MPI_OFI_LIBRARY and FI_PROVIDER_PATH point at the one shipped in the prefix (never
LD_LIBRARY_PATH: that breaks the other stacks in the same campaign).

Verification: I_MPI_DEBUG=5 prints "libfabric provider: <name>" for the OFI fabric and the
fabric selection ("I_MPI_FABRICS=shm" / "shm:ofi" / "ofi").
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mpibench.stacks.kinds import StackKind, register_kind
from mpibench.stacks.kinds.mpich import probe_hosts
from mpibench.transports import Evidence, Preset, classify

_PROVIDER = re.compile(r"libfabric provider: (\S+)")
_FABRICS = re.compile(r"I_MPI_FABRICS\s*[=:]\s*(\S+)")
_LIBFABRIC = re.compile(r"libfabric version: (\S+)")
FABRIC = "I_MPI_FABRICS"


def own_libfabric(prefix: str) -> tuple[str, str] | None:
    """(libfabric.so.1, provider dir) shipped inside an Intel MPI prefix, if any: the PyPI
    wheels put both into <prefix>/lib (libtcp-fi.so...), Intel's installers into
    opt/mpi/libfabric/lib and its prov/ directory."""
    for sub in ("opt/mpi/libfabric/lib", "libfabric/lib", "lib/libfabric", "lib"):
        lib = os.path.join(prefix, sub, "libfabric.so.1")
        if os.path.exists(lib):
            prov = os.path.join(prefix, sub, "prov")
            return lib, prov if os.path.isdir(prov) else os.path.join(prefix, sub)
    return None


@register_kind("intel")
class IntelMPI(StackKind):
    title = "Intel MPI"
    pypi_packages = ("impi-rt", "impi-devel")
    detect_order = 30
    version_pattern = r"Intel\(R\) MPI Library (\S+(?: Update \d+)?)"
    prefix_launchers = ("mpiexec.hydra", "mpiexec", "mpirun")
    launcher_kind = "mpiexec-hydra"
    presets = {
        "shm": Preset("Intel MPI shared memory fabric", env={FABRIC: "shm"}),
        "tcp": Preset("Intel MPI OFI fabric with libfabric's tcp provider (also between "
                      "ranks on one host)", env={FABRIC: "ofi", "FI_PROVIDER": "tcp"}),
        "shm+tcp": Preset("Intel MPI shared memory inside a node, OFI with libfabric's tcp "
                          "provider between nodes", env={FABRIC: "shm:ofi", "FI_PROVIDER": "tcp"}),
        "ofi": Preset("Intel MPI OFI fabric for every peer (provider from FI_PROVIDER)",
                      env={FABRIC: "ofi", "FI_PROVIDER": "tcp"}),
        "ofi-shm": Preset("Intel MPI OFI fabric with libfabric's shm provider",
                          env={FABRIC: "ofi", "FI_PROVIDER": "shm"}),
    }
    diag_env = {"I_MPI_DEBUG": "5"}

    @classmethod
    def interface_settings(cls, interface: str, library_version: str) -> Preset:
        """libfabric's variables, and Hydra's own connections on the same interface."""
        base = super().interface_settings(interface, library_version)
        return Preset(base.description, env={**base.env, "I_MPI_HYDRA_IFACE": interface})

    @classmethod
    def prefix_env(cls, prefix: str) -> dict[str, str]:
        env = {"I_MPI_ROOT": prefix}
        own = own_libfabric(prefix)
        if own:
            env["I_MPI_OFI_LIBRARY"], env["FI_PROVIDER_PATH"] = own
        return env

    @classmethod
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        ev = Evidence(text)
        provs = ev.keep(_PROVIDER)
        fabrics = ev.keep(_FABRICS)
        fabric = fabrics[0] if fabrics else ""
        ev.keep(_LIBFABRIC)
        if fabric in ("", "shm:ofi") and len(probe_hosts(text)) == 1 and provs:
            # the default fabric: shm between ranks on a host, ofi only between hosts
            return f"shm [Intel MPI shm:ofi with every rank on one host; ofi provider " \
                   f"{provs[0]} unused]", ev.lines
        if provs and fabric != "shm":
            prov = provs[0]
            cls_ = "tcp" if prov in ("tcp", "tcp;ofi_rxm", "sockets") else classify({prov})
            how = "shm on a host, " if fabric.startswith("shm:") else ""
            if how:
                cls_ = classify({"shm", cls_})
            return f"{cls_} [{how}via ofi fabric, provider {prov}]", ev.lines
        if fabric == "shm":
            return "shm [Intel MPI shm fabric]", ev.lines
        return "unknown [no fabric or libfabric provider in the I_MPI_DEBUG output]", ev.lines
