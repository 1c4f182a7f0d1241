"""No launcher: the program runs as it is (launcher_args before it, if any). The default of
variants without MPI (stack = "none"), whose programs start their own processes or threads;
np is the program's business (use launcher = "template" to pass it, e.g. charmrun +p{np})."""

from __future__ import annotations

from mpibench.launchers import Launcher, LaunchSpec, register_launcher


@register_launcher("direct")
class Direct(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        return list(spec.extra) + list(spec.program)
