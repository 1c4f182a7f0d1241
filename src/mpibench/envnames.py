"""Names and values that become environment variables or MCA parameters.

An environment name from a campaign file or the command line ends up as an argument of GNU
`env`, `mpirun -x`, `mpiexec -genv` or `mpirun_rsh`, and in a job script. A name such as
`--split-string` would be an option there (it ran a command), so names must be identifiers,
and nothing may carry a NUL byte (it cannot be passed to a process at all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Open MPI MCA parameter names: framework_component_param, letters, digits, '_'
MCA_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def env_name_problem(name: str) -> str | None:
    """Why `name` cannot be an environment variable name (None if it can)."""
    if not isinstance(name, str) or not ENV_NAME.match(name):
        return (f"environment variable name {name!r} is not an identifier (letters, digits "
                "and '_', not starting with a digit)")
    return None


def mca_name_problem(name: str) -> str | None:
    if not isinstance(name, str) or not MCA_NAME.match(name):
        return f"MCA parameter name {name!r} is not a letter then letters, digits and '_'"
    return None


def value_problem(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL byte, which cannot be passed to a process"
    return None


def checked_env(env: Mapping[str, str]) -> Mapping[str, str]:
    """The last line of defence where env becomes argv or shell text: load-time checks
    should have refused a bad name already, so this is a bug if it fires."""
    for k, v in env.items():
        problem = env_name_problem(k) or value_problem(str(v))
        if problem:
            raise ValueError(f"refusing to pass environment {k!r}: {problem}")
    return env
