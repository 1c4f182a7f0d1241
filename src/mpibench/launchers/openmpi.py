"""Open MPI's mpirun: MCA parameters with --mca, environment with -x."""

from __future__ import annotations

from mpibench.launchers import Launcher, LaunchSpec, register_launcher


@register_launcher("mpirun-openmpi")
class OpenMPIRun(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        argv = [exe, "-np", str(spec.np)]
        if spec.oversubscribe:
            argv.append("--oversubscribe")
        if spec.hostfile:
            argv += ["--hostfile", spec.hostfile]
        elif spec.hosts:
            slots = spec.ppn or max(1, -(-spec.np // len(spec.hosts)))
            argv += ["--host", ",".join(f"{h}:{slots}" for h in spec.hosts)]
        if spec.ppn:
            argv += ["--map-by", f"ppr:{spec.ppn}:node"]
        elif spec.map_by:
            argv += ["--map-by", spec.map_by]
        if spec.bind:
            argv += ["--bind-to", spec.bind]
        for k, v in spec.mca.items():
            argv += ["--mca", k, str(v)]
        for k in sorted(spec.env):
            argv += ["-x", k]
        argv += list(spec.extra)
        return argv + list(spec.program)
