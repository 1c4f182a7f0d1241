"""Slurm's srun as the MPI launcher (direct launch): `--mpi=` picks the PMI plugin.

Default plugin: pmix for Open MPI (Debian's Open MPI 4.1 has no Slurm PMI-2 support, only
PMIx), pmi2 for MPICH, MVAPICH and Intel MPI. A variant overrides it with `mpi_plugin` or by
putting its own `--mpi=...` in launcher_args. srun exports the launcher's environment to the
tasks (`--export=ALL` is Slurm's default), so env goes through `launcher_env`, never into the
argv; Open MPI's MCA parameters become OMPI_MCA_* variables because there is no mpirun to take
`--mca`.
"""

from __future__ import annotations

import os

from mpibench.launchers import Launcher, LaunchSpec, register_launcher

BIND = {"core": "cores", "cores": "cores", "socket": "sockets", "sockets": "sockets",
        "none": "none", "thread": "threads", "hwthread": "threads", "rank": "rank"}
DISTRIBUTION = {"core": "block", "slot": "block", "block": "block", "node": "cyclic",
                "cyclic": "cyclic", "socket": "block:cyclic"}


def default_plugin(exe: str, spec: LaunchSpec) -> str:
    """The PMI plugin that matches the stack behind `exe` (the stack's own launcher path)."""
    from mpibench.stacks.kinds import get_kind, kind_for_launcher, kinds

    if spec.mpi_plugin:
        return spec.mpi_plugin
    kind = kind_for_launcher(exe)
    if spec.mca and kind is None:  # MCA parameters: an Open MPI-like stack
        kind = next((k.name for k in kinds() if k.accepts_mca), None)
    return get_kind(kind).srun_mpi_plugin if kind else "pmi2"


@register_launcher("srun")
class Srun(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        srun = exe if os.path.basename(exe).startswith("srun") else "srun"
        argv = [srun]
        if not any(a == "--mpi" or a.startswith("--mpi=") for a in spec.extra):
            argv.append(f"--mpi={default_plugin(exe, spec)}")
        argv += ["--ntasks", str(spec.np)]
        if spec.ppn:
            argv += ["--ntasks-per-node", str(spec.ppn)]
        if spec.hosts:
            argv += ["--nodes", str(len(spec.hosts)), "--nodelist", ",".join(spec.hosts)]
        elif spec.hostfile:
            # Slurm reads a node list from a file when the argument contains a '/'
            argv += ["--nodelist", os.path.abspath(spec.hostfile)
                     if "/" not in spec.hostfile else spec.hostfile]
        if spec.cpus_per_task:
            argv += ["--cpus-per-task", str(spec.cpus_per_task)]
        if spec.bind:
            argv.append(f"--cpu-bind={BIND.get(spec.bind, spec.bind)}")
        if spec.map_by:
            argv.append(f"--distribution={DISTRIBUTION.get(spec.map_by, spec.map_by)}")
        if spec.oversubscribe:
            argv.append("--overcommit")
        # one failed rank ends the step instead of leaving the others blocked in MPI
        argv.append("--kill-on-bad-exit=1")
        argv += list(spec.extra)
        return argv + list(spec.program)

    def launcher_env(self, spec: LaunchSpec) -> dict[str, str]:
        env = {f"OMPI_MCA_{k}": str(v) for k, v in spec.mca.items()}
        env.update(spec.env)
        return env
