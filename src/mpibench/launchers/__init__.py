"""Launchers turn a LaunchSpec into an argv, registered by name.

Each launcher is one small module; adding MVAPICH's mpirun_rsh or a site's wrapper is a new
module with @register_launcher, not edits across the tree. The argv is a list, never a shell
string: values from campaign files go through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mpibench.envnames import env_name_problem, mca_name_problem, value_problem
from mpibench.errors import UsageError
from mpibench.registry import Registry


@dataclass
class LaunchSpec:
    np: int
    program: list[str]
    env: dict[str, str] = field(default_factory=dict)  # exported to every rank
    mca: dict[str, str] = field(default_factory=dict)  # Open MPI MCA parameters
    ppn: int | None = None  # ranks per node
    hosts: list[str] | None = None  # host names (one entry per node)
    hostfile: str | None = None
    bind: str | None = None  # core, socket, none ...
    map_by: str | None = None  # core, socket, node ...
    oversubscribe: bool = False
    extra: list[str] = field(default_factory=list)  # launcher options, verbatim
    mpi_plugin: str | None = None  # srun --mpi=
    cpus_per_task: int | None = None  # cores per rank
    nodes: int | None = None  # nodes the variant asked for (the template's {nodes})

    def __post_init__(self) -> None:
        # env names become `-x NAME`, `-genv NAME v`, `NAME=v` arguments: an option-like
        # name must never get this far (campaign and CLI loading refuse it first)
        for k, v in self.env.items():
            problem = env_name_problem(k) or value_problem(str(v))
            if problem:
                raise UsageError(f"env {k!r}: {problem}")
        for k, v in self.mca.items():
            problem = mca_name_problem(k) or value_problem(str(v))
            if problem:
                raise UsageError(f"mca {k!r}: {problem}")
        for a in [*self.program, *self.extra]:
            if "\x00" in a:
                raise UsageError(f"argument {a!r}: contains a NUL byte")


class Launcher:
    name = ""

    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        raise NotImplementedError

    def launcher_env(self, spec: LaunchSpec) -> dict[str, str]:
        """Environment for the launcher process itself (inherited by local ranks)."""
        return dict(spec.env)


REGISTRY: Registry[type[Launcher]] = Registry("launcher", __name__)
register_launcher = REGISTRY.register


def get_launcher(name: str) -> Launcher:
    return REGISTRY.get(name)()


def launcher_names() -> list[str]:
    return REGISTRY.names()
