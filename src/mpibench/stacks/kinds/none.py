"""No MPI: an application over its own network layer (a Charm++ build on its netlrts or
verbs layer, a GASNet or UCX program, a plain threaded code), named with stack = "none".

Such a variant names no MPI stack and no transport, is launched by its own launcher (the
program as it is, or launcher = "template" for charmrun +p{np} ...), gets no MPI probe and no
transport verdict, and its fingerprint says "no MPI" instead of claiming a library.
"""

from __future__ import annotations

from mpibench.stacks.kinds import StackKind, register_kind


@register_kind("none")
class NoMPI(StackKind):
    title = "no MPI"
    detect_order = 2000          # never matched from a library's version string
    launcher_kind = "direct"
