"""MPICH's Hydra (mpiexec.hydra; also MVAPICH2 and Intel MPI): environment with -genv."""

from __future__ import annotations

from mpibench.launchers import Launcher, LaunchSpec, register_launcher


@register_launcher("mpiexec-hydra")
class HydraExec(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        argv = [exe, "-n", str(spec.np)]
        if spec.hostfile:
            argv += ["-f", spec.hostfile]
        elif spec.hosts:
            argv += ["-hosts", ",".join(spec.hosts)]
        if spec.ppn:
            argv += ["-ppn", str(spec.ppn)]
        if spec.bind or spec.cpus_per_task:
            bind = spec.bind or "core"
            if spec.cpus_per_task and ":" not in bind and bind != "none":
                bind = f"{bind}:{spec.cpus_per_task}"   # Hydra: c cores per rank
            argv += ["-bind-to", bind]
        if spec.map_by:
            argv += ["-map-by", spec.map_by]
        for k in sorted(spec.env):
            argv += ["-genv", k, spec.env[k]]
        argv += list(spec.extra)
        return argv + list(spec.program)
