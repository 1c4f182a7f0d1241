"""NetPIPE (NPmpi) as a campaign peer suite: one ping-pong test, built with make mpi per
stack, the largest size as -u; its table is read from np.out (more digits than stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpibench.peers.base import PeerSpec, PeerSuite, register_suite

NETPIPE_BINARY = "NPmpi"


@register_suite("netpipe")
class NetPipe(PeerSuite):
    needs_cxx = False

    def build_steps(self, tree: Path, cc: str, cxx: str) -> list[list[str]]:
        return [["make", "-C", str(tree), "mpi", f"CC={cc}"]]

    def program(self, benchmark: str | None) -> str:
        return NETPIPE_BINARY

    def argv(self, peer: PeerSpec, sizes: list[int] | None, run_dir: Path) -> list[str]:
        return ["-u", str(max(sizes))] if sizes is not None else []

    def check_benchmarks(self, benches: list[str] | None, fail) -> list[str]:
        if benches is not None:
            fail("NetPIPE runs one ping-pong test", 'no benchmarks key for suite = "netpipe"')
        return []

    def parse(self, text: str) -> Any:
        from mpibench.parsers.netpipe import parse_netpipe

        return parse_netpipe(text)

    def output_text(self, stdout: str, stderr_path: Path, run_dir: Path) -> str:
        # NetPIPE prints its table to stderr and writes it, with more digits, to np.out
        npout = run_dir / "np.out"
        if npout.exists():
            return npout.read_text(errors="replace")
        if stderr_path.exists():
            return stderr_path.read_text(errors="replace") + "\n" + stdout
        return stdout
