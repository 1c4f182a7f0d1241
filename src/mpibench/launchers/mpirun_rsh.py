"""MVAPICH2's mpirun_rsh: `-np N -hostfile F VAR=value ... program`.

mpirun_rsh does not forward the caller's environment to remote ranks; variables travel as
VAR=value arguments before the program. Without a hostfile or host list it uses `hostfile`
in the run directory, which batch job scripts write from the allocation (one line per rank
slot, so ranks per node follow from the file: mpirun_rsh has no portable -ppn).
"""

from __future__ import annotations

from mpibench.launchers import Launcher, LaunchSpec, register_launcher

DEFAULT_HOSTFILE = "hostfile"


@register_launcher("mpirun_rsh")
class MpirunRsh(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        argv = [exe if exe.endswith("mpirun_rsh") else "mpirun_rsh", "-np", str(spec.np)]
        if spec.hostfile:
            argv += ["-hostfile", spec.hostfile]
        elif spec.hosts:
            # hosts inline, one per rank, in block order (ppn ranks per host)
            per = spec.ppn or max(1, -(-spec.np // len(spec.hosts)))
            ranks = [h for h in spec.hosts for _ in range(per)][: spec.np]
            argv += ranks
        else:
            argv += ["-hostfile", DEFAULT_HOSTFILE]
        env = dict(spec.env)
        if spec.bind:
            # MVAPICH2's binding knobs are environment variables
            env.setdefault("MV2_CPU_BINDING_LEVEL", spec.bind)
        if spec.map_by:
            env.setdefault("MV2_CPU_BINDING_POLICY",
                           {"core": "bunch", "socket": "scatter"}.get(spec.map_by, spec.map_by))
        argv += list(spec.extra)
        argv += [f"{k}={env[k]}" for k in sorted(env)]
        return argv + list(spec.program)
