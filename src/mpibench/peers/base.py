"""What a peer suite is (PeerSuite, PeerSpec) and the registry the suites join: the part of
mpibench.peers that the suites' own files import, so that the package, which finds the suites,
and the suites, which subclass PeerSuite, do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpibench.registry import Registry


@dataclass(frozen=True)
class PeerSpec:
    """What a peer group runs (part of the cell id)."""

    suite: str
    benchmarks: tuple[str, ...]  # IMB names; for OSU exactly one program name
    sizes: str | None
    args: tuple[str, ...]
    binary: str | None  # a given binary (or OSU directory)
    source: str | None  # a tarball or source tree to build per stack

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "benchmarks": list(self.benchmarks), "sizes": self.sizes,
                "args": list(self.args), "binary": self.binary, "source": self.source}


class PeerSuite:
    """One third-party suite. Subclasses override what differs; instances hold no state."""

    name = ""
    needs_cxx = True                     # IMB and OSU build C++ sources
    # one group per benchmark program (OSU), so a cell is exactly one launch
    one_program_per_benchmark = False
    benchmarks_expected = "[...]"        # what the campaign's benchmarks key holds

    def build_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        """The commands that build the suite in the unpacked tree (a suite with
        one_program_per_benchmark: configure_steps, then program_steps per program)."""
        raise NotImplementedError

    def configure_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        """one_program_per_benchmark: the commands that prepare the unpacked tree once per
        stack and source (cached); each program is then made into it by program_steps."""
        return []

    def program_steps(self, tree: Path, program: str) -> list[list[str]]:
        """one_program_per_benchmark: the commands that make one program in the configured
        tree (full_steps when the suite cannot make it on its own)."""
        return self.full_steps(tree)

    def full_steps(self, tree: Path) -> list[list[str]]:
        """one_program_per_benchmark: the commands that make every program in the
        configured tree (the fallback when make has no rule for one program)."""
        return []

    def program(self, benchmark: str | None) -> str:
        """The executable's name to find under a built tree or a given directory."""
        raise NotImplementedError

    def argv(self, peer: PeerSpec, sizes: list[int] | None, run_dir: Path) -> list[str]:
        """The suite's own arguments for the group's benchmarks and sizes."""
        return []

    def check_benchmarks(self, benches: list[str] | None, fail) -> list[str]:
        """The campaign's `benchmarks` (None when absent), normalised; fail(problem,
        expected, index=None) raises naming the key."""
        if benches is None:
            fail("missing", self.benchmarks_expected)
        if not benches:
            fail("empty", "at least one benchmark")
        return list(benches)

    def parse(self, text: str):
        """The output's ParseResult (mpibench.parsers)."""
        raise NotImplementedError

    def output_text(self, stdout: str, stderr_path: Path, run_dir: Path) -> str:
        """The text to parse from one launch (stdout unless the suite writes elsewhere)."""
        return stdout

    def row(self, rec: dict[str, Any], extra: dict[str, Any]) -> None:
        """Adjust one parsed row in place (e.g. store it under the IMB name)."""


REGISTRY: Registry = Registry("peer suite", "mpibench.peers")
register_suite = REGISTRY.register
