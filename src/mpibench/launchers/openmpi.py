"""Open MPI's mpirun: MCA parameters with --mca, environment with -x."""

from __future__ import annotations

from mpibench.launchers import Launcher, LaunchSpec, register_launcher


def map_args(spec: LaunchSpec) -> list[str]:
    """--map-by (and --rank-by) from ppn, map_by and cpus_per_task, none of them dropped:
    ppn places ppn ranks per node (ppr:N:node); a plain map_by beside it (core, socket,
    node ...) becomes the rank order (--rank-by), e.g. node = round-robin over the nodes; a
    map_by already in ppr/modifier form (ppr:4:socket, slot:PE=2) is the user's whole mapping
    and wins; cpus_per_task adds PE=c (c cores per rank)."""
    pe = f"PE={spec.cpus_per_task}" if spec.cpus_per_task else None
    mapping, rank_by = None, None
    if spec.map_by and (":" in spec.map_by or spec.map_by.startswith("ppr")):
        mapping = spec.map_by
    elif spec.ppn:
        mapping, rank_by = f"ppr:{spec.ppn}:node", spec.map_by
    elif spec.map_by:
        mapping = spec.map_by
    if pe and "PE=" not in (mapping or ""):
        mapping = f"{mapping or 'slot'}:{pe}"
    out = ["--map-by", mapping] if mapping else []
    return out + (["--rank-by", rank_by] if rank_by else [])


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
        argv += map_args(spec)
        if spec.bind:
            argv += ["--bind-to", spec.bind]
        for k, v in spec.mca.items():
            argv += ["--mca", k, str(v)]
        for k in sorted(spec.env):
            argv += ["-x", k]
        argv += list(spec.extra)
        return argv + list(spec.program)
