"""MVAPICH (MVAPICH2, MVAPICH 3): MPICH-derived; mpirun_rsh or its Hydra mpiexec.

Transport presets follow MVAPICH's documented run-time variables. MVAPICH2 (CH3, OFA-IB):
MV2_USE_SHARED_MEM (intra-node shared memory, default on), MV2_SMP_USE_CMA (kernel-assisted
single copy for large intra-node messages), MV2_USE_RoCE and MV2_USE_IWARP_MODE (the
adapter's mode), MV2_USE_RDMA_CM (RDMA CM connection setup, which RoCE and iWARP use) and
MV2_USE_ONLY_UD (the UD-only hybrid channel). The adapter is the user's choice, not a
preset: env MV2_IBA_HCA = "mlx5_0" (and MV2_NUM_HCAS) on the variant. MVAPICH 3 is CH4-based
and takes MPICH's CVARs (MVP_* are aliases of MPIR_CVAR_*): its presets are MPICH's.
"""

from __future__ import annotations

from collections.abc import Mapping

from mpibench.stacks.kinds import StackKind, register_kind
from mpibench.transports import Evidence, Preset, classify, ucx_transports

SHM = "MV2_USE_SHARED_MEM"
_OFF = {SHM: "0"}        # a network preset: ranks on one host go through the adapter too
MV2_PRESETS = {
    "shm": Preset("MVAPICH2 shared memory between ranks on one host, CMA single copy for "
                  "large messages", env={SHM: "1", "MV2_SMP_USE_CMA": "1"}),
    "ib": Preset("MVAPICH2 OFA-IB (verbs, RC) for every peer, shared memory off; the adapter "
                 "from env MV2_IBA_HCA", env={**_OFF}),
    "roce": Preset("MVAPICH2 RoCE mode with RDMA CM connection setup, shared memory off",
                   env={**_OFF, "MV2_USE_RoCE": "1", "MV2_USE_RDMA_CM": "1"}),
    "iwarp": Preset("MVAPICH2 iWARP mode with RDMA CM connection setup, shared memory off",
                    env={**_OFF, "MV2_USE_IWARP_MODE": "1", "MV2_USE_RDMA_CM": "1"}),
    "ud": Preset("MVAPICH2 UD-only hybrid channel (a build with --enable-hybrid), shared "
                 "memory off", env={**_OFF, "MV2_USE_ONLY_UD": "1"}),
}


def is_mvapich2(library_version: str) -> bool:
    return "MVAPICH2" in library_version


@register_kind("mvapich")
class MVAPICH(StackKind):
    title = "MVAPICH"
    detect_order = 20  # its version string also names MPICH
    version_pattern = r"MVAPICH2? Version:\s*(\S+)"
    debian_wrapper = "mpicc.mvapich"
    debian_launchers = ("mpirun_rsh", "mpiexec.mvapich")
    prefix_launchers = ("mpiexec.hydra", "mpiexec", "mpirun_rsh", "mpirun")
    launcher_names = ("mpirun_rsh", "mpiexec.mvapich")
    launcher_kind = "mpiexec-hydra"
    launcher_backends = {"mpirun_rsh": "mpirun_rsh"}
    diag_env = {"UCX_LOG_LEVEL": "info"}

    @classmethod
    def presets_for(cls, library_version: str) -> Mapping[str, Preset]:
        from mpibench.stacks.kinds.mpich import MPICH

        if not library_version:             # every preset the kind can have
            return {**MPICH.presets_for(""), **MV2_PRESETS}
        if is_mvapich2(library_version):
            return MV2_PRESETS
        # MVAPICH 3 prints "MVAPICH Device: ch4:ofi": MPICH's reading of the netmods
        return MPICH.presets_for(library_version.replace("MVAPICH Device:", "MPICH Device:"))

    @classmethod
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        ev = Evidence(text)
        tls = ucx_transports(text, ev)
        if tls:
            return f"{classify(tls)} [via ucx, tls {','.join(sorted(tls))}]", ev.lines
        return "unknown [no UCX endpoint configuration in the diagnostics]", ev.lines
