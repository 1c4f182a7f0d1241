"""MPICH (ch4 with the ucx and/or ofi netmod), launched by Hydra with -genv.

Which netmod: the library's version string lists them ("MPICH Device: ch4:ucx ofi"); with
more than one, MPIR_CVAR_CH4_NETMOD picks. Ranks on one host talk through MPICH's own POSIX
shared memory, not the netmod, unless MPIR_CVAR_NOLOCAL=1: so every netmod preset (tcp, ucx,
ofi) sets NOLOCAL, and shm leaves it at 0.

Verification: MPIR_CVAR_DEBUG_SUMMARY=1 prints the build's shared-memory module
("MPID/shm: ...") and, over ofi, the libfabric provider ("libfabric provider: tcp - ...");
UCX_LOG_LEVEL=info prints the UCX lanes of every endpoint. The probe prints each rank's host,
so ranks on one host with NOLOCAL unset are known to have used shared memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mpibench.stacks.kinds import StackKind, register_kind
from mpibench.transports import Evidence, Preset, classify, ucx_transports

_DEVICE = re.compile(r"MPICH Device:\s*(\S+)(?:[ \t]+(\S+))*")
_SHM_MODULE = re.compile(r"MPID/shm: (\S+)")
_OFI_PROVIDER = re.compile(r"libfabric provider: (\S+)")
PROBE_HOST = re.compile(r"mpibench-probe rank=\d+ host=(\S+)")
NOLOCAL = "MPIR_CVAR_NOLOCAL"
NETMOD = "MPIR_CVAR_CH4_NETMOD"


def netmods(library_version: str) -> list[str]:
    """["ucx", "ofi"] from 'MPICH Device: ch4:ucx ofi'; [] when the string does not say."""
    for line in library_version.splitlines():
        if line.strip().startswith("MPICH Device:"):
            words = line.split(":", 1)[1].split()
            if not words:
                return []
            first = words[0].split(":", 1)
            return ([first[1]] if len(first) == 2 else []) + words[1:]
    return []


def local_shm_used(text: str, env: Mapping[str, str], ev: Evidence) -> str | None:
    """The shm module when ranks on one host used MPICH's shared memory, else None."""
    mods = ev.keep(_SHM_MODULE)
    if not mods or env.get(NOLOCAL, "0").strip().lower() in ("1", "true", "yes", "on"):
        return None
    return "posix" if "POSIX" in mods[0] else mods[0]


def probe_hosts(text: str) -> set[str]:
    return set(PROBE_HOST.findall(text))


@register_kind("mpich")
class MPICH(StackKind):
    title = "MPICH"
    pypi_packages = ("mpich",)
    detect_order = 40
    version_pattern = r"MPICH Version:\s*(\S+)"
    debian_wrapper = "mpicc.mpich"
    debian_packaged = True
    debian_launchers = ("mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich")
    launcher_names = ("mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich")
    launcher_kind = "mpiexec-hydra"
    diag_env = {"UCX_LOG_LEVEL": "info", "MPIR_CVAR_DEBUG_SUMMARY": "1"}

    @classmethod
    def describe(cls, library_version: str) -> str:
        for line in library_version.splitlines():
            if line.startswith("MPICH Device:"):
                return line.split(":", 1)[1].strip()
        return ""

    @classmethod
    def presets_for(cls, library_version: str) -> Mapping[str, Preset]:
        mods = netmods(library_version) if library_version else ["ucx", "ofi"]
        several = len(mods) > 1
        out: dict[str, Preset] = {}

        def pick(mod: str) -> dict[str, str]:
            return {NETMOD: mod} if several else {}

        if "ucx" in mods or not mods:
            # UCX's own shared memory as well: builds without MPICH's shm module use it
            out["shm"] = Preset("MPICH shared memory between ranks on one host (UCX sm "
                                "where MPICH has no shm module)",
                                env={NOLOCAL: "0", "UCX_TLS": "self,sm", **pick("ucx")})
            out["tcp"] = Preset("ch4:ucx with the UCX TCP transport, MPICH shm off",
                                env={NOLOCAL: "1", "UCX_TLS": "self,tcp", **pick("ucx")})
            out["shm+tcp"] = Preset("MPICH shared memory inside a node, ch4:ucx with the UCX "
                                    "TCP transport between nodes",
                                    env={NOLOCAL: "0", "UCX_TLS": "self,sm,tcp", **pick("ucx")})
            out["ucx"] = Preset("ch4:ucx netmod for every peer (UCX picks its transports), "
                                "MPICH shm off", env={NOLOCAL: "1", **pick("ucx")})
        else:
            out["shm"] = Preset("MPICH shared memory between ranks on one host",
                                env={NOLOCAL: "0"})
            if "ofi" in mods:
                out["shm+tcp"] = Preset("MPICH shared memory inside a node, ch4:ofi with "
                                        "libfabric's tcp provider between nodes",
                                        env={NOLOCAL: "0", "FI_PROVIDER": "tcp"})
        if "ofi" in mods:
            out["ofi"] = Preset("ch4:ofi netmod for every peer (libfabric provider from "
                                "FI_PROVIDER), MPICH shm off",
                                env={NOLOCAL: "1", "FI_PROVIDER": "tcp", **pick("ofi")})
        return out

    @classmethod
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        ev = Evidence(text)
        shm = local_shm_used(text, env, ev)
        hosts = probe_hosts(text)
        tls = ucx_transports(text, ev)
        provs = ev.keep(_OFI_PROVIDER)
        if provs:
            net = f"via ofi netmod, provider {provs[0]}"
            net_class = "tcp" if provs[0] in ("tcp", "tcp;ofi_rxm", "sockets") else \
                classify({provs[0]})
        elif tls:
            net = f"via ucx netmod, tls {','.join(sorted(tls))}"
            net_class = classify(tls)
        else:
            net, net_class = "", ""
        if shm and len(hosts) <= 1:
            # every peer is on this host: the netmod carried nothing
            return f"shm [mpich {shm} shared memory, {NOLOCAL} not set to 1]", ev.lines
        if shm and net_class:
            return f"{classify({'shm', net_class})} [mpich {shm} shm on a host; {net}]", ev.lines
        if net_class:
            return f"{net_class} [{net}]", ev.lines
        return ("unknown [no UCX endpoint configuration or libfabric provider in the "
                "diagnostics]"), ev.lines
