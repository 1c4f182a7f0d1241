"""IMB (Intel MPI Benchmarks, IMB-MPI1) as a campaign peer suite: built with make per stack,
benchmarks by their IMB names, sizes as -msglog MIN:MAX or a -msglen file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpibench.benchmarks import canonical_benchmarks
from mpibench.errors import UsageError
from mpibench.files import write_file
from mpibench.peers.base import PeerSpec, PeerSuite, register_suite

IMB_BINARY = "IMB-MPI1"


@register_suite("imb")
class Imb(PeerSuite):
    benchmarks_expected = '["PingPong", "Allreduce", ...] (IMB names)'

    def build_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        # IMB's C++ sources include mpi.h; Open MPI's C++ bindings are not wanted
        return [["make", "-C", str(tree), IMB_BINARY, f"CC={cc}",
                 f"CXX={cxx} -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"]]

    def program(self, benchmark: str | None) -> str:
        return IMB_BINARY

    def argv(self, peer: PeerSpec, sizes: list[int] | None, run_dir: Path) -> list[str]:
        args = list(peer.benchmarks)
        if peer.sizes and ":" in peer.sizes:
            args += ["-msglog", peer.sizes.strip()]
        elif sizes is not None:
            # an explicit size list: IMB reads it from a file, one length per line
            write_file(run_dir / "msglen.txt", "".join(f"{s}\n" for s in sizes))
            args += ["-msglen", "msglen.txt"]
        return args

    def check_benchmarks(self, benches: list[str] | None, fail) -> list[str]:
        benches = super().check_benchmarks(benches, fail)
        try:
            return canonical_benchmarks(benches)
        except UsageError as exc:
            fail(str(exc), "")
            raise                                     # fail raises; for type checkers

    def parse(self, text: str) -> Any:
        from mpibench.parsers.imb import parse_imb

        return parse_imb(text)
