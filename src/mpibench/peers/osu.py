"""The OSU micro-benchmarks as a campaign peer suite: configure and make per stack, one
program per benchmark (a group per program), sizes as -m MIN:MAX; rows of programs that time
an operation IMB also has are stored under the IMB name."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mpibench.peers.base import PeerSpec, PeerSuite, register_suite

# OSU programs whose rows are stored under the IMB name of the same operation, so they line
# up with the core's and IMB's rows in one comparison (the program name stays in
# extra.tool_benchmark). Bandwidth programs (osu_bw, osu_bibw) print no time and keep
# their own names: their windowed streams are not IMB's PingPong.
OSU_AS_IMB = {
    "osu_latency": "PingPong", "osu_allreduce": "Allreduce", "osu_allgather": "Allgather",
    "osu_allgatherv": "Allgatherv", "osu_alltoall": "Alltoall", "osu_alltoallv": "Alltoallv",
    "osu_barrier": "Barrier", "osu_bcast": "Bcast", "osu_gather": "Gather",
    "osu_gatherv": "Gatherv", "osu_reduce": "Reduce", "osu_reduce_scatter": "Reduce_scatter",
    "osu_scatter": "Scatter", "osu_scatterv": "Scatterv",
}
_PROGRAM = re.compile(r"^osu_[a-z0-9_]+$")
_PROGRAMS_LINE = re.compile(r"^\s*\w+_PROGRAMS\s*\+?=(.*)$")


# OSU 7.4's largest Makefile.am is 3 KB; a bigger one is not a list of programs to read
MAX_MAKEFILE_AM = 1 << 20


def program_dir(tree: Path, program: str) -> Path | None:
    """The directory whose Makefile.am lists `program` among its *_PROGRAMS (continued lines
    joined; a list under an automake conditional counts), None when none does. Regular
    files of at most MAX_MAKEFILE_AM bytes only, read as text whatever their encoding: a
    Makefile.am linked to /dev/zero, a huge or an unreadable one in a user's source tree is
    passed over."""
    for am in sorted(tree.rglob("Makefile.am")):
        try:
            if am.is_symlink() or not am.is_file() or am.stat().st_size > MAX_MAKEFILE_AM:
                continue
            text = am.read_text(errors="replace").replace("\\\n", " ")
        except OSError:
            continue
        for line in text.splitlines():
            m = _PROGRAMS_LINE.match(line)
            if m and program in m.group(1).split():
                return am.parent
    return None


def _make() -> list[str]:
    return ["make", f"-j{max(1, min(4, os.cpu_count() or 1))}"]


@register_suite("osu")
class Osu(PeerSuite):
    one_program_per_benchmark = True
    benchmarks_expected = '["osu_latency", "osu_allreduce", ...] (OSU program names)'

    # configure once per stack and source (one cache entry, ~7 s), then make each group's
    # program in the directory whose Makefile.am lists it (OSU 7.4: ~2 s for osu_latency;
    # the whole suite is ~60 programs, 40-60 s); a program no Makefile.am lists (another
    # layout) gets the whole suite made, as find_binary then looks for it
    def build_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        return self.configure_steps(tree, cc, cxx) + self.full_steps(tree)

    def configure_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        return [["./configure", f"CC={cc}", f"CXX={cxx}"]]

    def program_steps(self, tree: Path, program: str) -> list[list[str]]:
        where = program_dir(tree, program)
        if where is None:
            return self.full_steps(tree)
        return [[*_make(), "-C", str(where.relative_to(tree)), program]]

    def full_steps(self, tree: Path) -> list[list[str]]:
        return [_make()]

    def program(self, benchmark: str | None) -> str:
        return benchmark or ""

    def argv(self, peer: PeerSpec, sizes: list[int] | None, run_dir: Path) -> list[str]:
        # OSU runs the powers of two between min and max
        return ["-m", f"{min(sizes)}:{max(sizes)}"] if sizes is not None else []

    def check_benchmarks(self, benches: list[str] | None, fail) -> list[str]:
        benches = super().check_benchmarks(benches, fail)
        for i, b in enumerate(benches):
            if not _PROGRAM.match(b):
                fail(f"got {b!r}", "an OSU program name such as osu_latency or osu_allreduce",
                     index=i)
        return benches

    def parse(self, text: str) -> Any:
        from mpibench.parsers.osu import parse_osu

        return parse_osu(text)

    def row(self, rec: dict[str, Any], extra: dict[str, Any]) -> None:
        tool_name = rec["benchmark"]
        if tool_name in OSU_AS_IMB:
            rec["benchmark"] = OSU_AS_IMB[tool_name]
            extra["tool_benchmark"] = tool_name
