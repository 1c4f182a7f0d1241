"""MVAPICH (MVAPICH2, MVAPICH 3): MPICH-derived; mpirun_rsh or its Hydra mpiexec."""

from __future__ import annotations

from collections.abc import Mapping

from mpibench.stacks.kinds import StackKind, register_kind
from mpibench.transports import Evidence, classify, ucx_transports


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
    def parse_diagnostics(cls, text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
        ev = Evidence(text)
        tls = ucx_transports(text, ev)
        if tls:
            return f"{classify(tls)} [via ucx, tls {','.join(sorted(tls))}]", ev.lines
        return "unknown [no UCX endpoint configuration in the diagnostics]", ev.lines
