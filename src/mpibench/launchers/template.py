"""A launcher from a user's argv template, for anything the registry does not know.

The template is the variant's launcher_args: one string (split with shlex) or a list of
elements. Placeholders are substituted per element, never through a shell, so a value with
spaces stays one argument:

  {np} {ppn} {nodes} {hostfile} {hosts} (comma-separated) {exe} (the stack's launcher)
  (MCA settings reach the ranks as OMPI_MCA_* variables in the launcher's environment)
  {program}  the program argv; an element that is exactly "{program}" becomes all of its
             elements, inside a longer element it is shlex.join-ed
  {env}      an element that is exactly "{env}" becomes VAR=value elements

`{{` and `}}` are literal braces. Without {program} the program is appended.
"""

from __future__ import annotations

import re
import shlex

from mpibench.errors import UsageError
from mpibench.launchers import Launcher, LaunchSpec, register_launcher

PLACEHOLDERS = ("np", "ppn", "nodes", "hostfile", "hosts", "exe", "program", "env")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def split_template(extra: list[str]) -> list[str]:
    if not extra:
        raise UsageError("launcher 'template': launcher_args is empty; expected a command "
                         "template such as \"mympirun -n {np} -f {hostfile} {program}\"")
    if len(extra) == 1:
        try:
            return shlex.split(extra[0])
        except ValueError as exc:
            raise UsageError(f"launcher 'template': cannot split {extra[0]!r} ({exc}); "
                             "expected balanced quotes") from None
    return list(extra)


def check_template(extra: list[str]) -> None:
    """Refuse (UsageError) a template that could never produce an argv: empty, unbalanced
    quotes, an unknown placeholder. Run at load time (campaign files, `run`)."""
    for element in split_template(extra):
        for m in _FIELD.finditer(element):
            if m.group(0) not in ("{{", "}}") and m.group(1) not in PLACEHOLDERS:
                raise UsageError(f"launcher 'template': unknown placeholder {{{m.group(1)}}} "
                                 f"in {element!r}; expected one of "
                                 + ", ".join("{" + p + "}" for p in PLACEHOLDERS))


@register_launcher("template")
class TemplateLauncher(Launcher):
    def argv(self, exe: str, spec: LaunchSpec) -> list[str]:
        template = split_template(spec.extra)
        hostfile = spec.hostfile or "hostfile"
        nodes = len(spec.hosts) if spec.hosts else spec.nodes or (
            -(-spec.np // spec.ppn) if spec.ppn else 1)
        values = {"np": str(spec.np), "ppn": str(spec.ppn or ""), "nodes": str(nodes),
                  "hostfile": hostfile, "hosts": ",".join(spec.hosts or []), "exe": exe,
                  "program": shlex.join(spec.program),
                  "env": " ".join(f"{k}={spec.env[k]}" for k in sorted(spec.env))}
        out: list[str] = []
        used_program = False
        for element in template:
            if element == "{program}":
                out += list(spec.program)
                used_program = True
            elif element == "{env}":
                out += [f"{k}={spec.env[k]}" for k in sorted(spec.env)]
            else:
                text, names = _substitute(element, values)
                used_program |= "program" in names
                out.append(text)
        if not used_program:
            out += list(spec.program)
        return out


    def launcher_env(self, spec: LaunchSpec) -> dict[str, str]:
        # MCA settings (an Open MPI transport preset) cannot be placed on an unknown command
        # line: they reach the ranks as OMPI_MCA_* variables, as with srun
        env = {f"OMPI_MCA_{k}": str(v) for k, v in spec.mca.items()}
        env.update(spec.env)
        return env


def _substitute(element: str, values: dict[str, str]) -> tuple[str, set[str]]:
    names: set[str] = set()

    def sub(m: re.Match) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1)
        if name not in values:
            raise UsageError(f"launcher 'template': unknown placeholder {{{name}}} in "
                             f"{element!r}; expected one of "
                             + ", ".join("{" + p + "}" for p in PLACEHOLDERS))
        names.add(name)
        return values[name]

    return _FIELD.sub(sub, element), names
