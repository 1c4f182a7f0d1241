"""MPI across the testbed's nodes (docs/testbed.md, "MPI across nodes"): how a launch reaches
the other nodes, what each fabric should measure, and running mpibench inside a node.

A testbed node is entered like a cluster node is reached by ssh: the testbed writes an
rsh/ssh-compatible agent (DIR/bin/rsh), and the launchers are told to use it, through the
environment a site would set for its own ssh wrapper:

  Open MPI 4    OMPI_MCA_plm_rsh_agent=DIR/bin/rsh
  Open MPI 5    PRTE_MCA_plm_ssh_agent=DIR/bin/rsh (PRRTE's name for it)
  MPICH Hydra   HYDRA_LAUNCHER=ssh HYDRA_LAUNCHER_EXEC=DIR/bin/rsh
  Intel MPI     I_MPI_HYDRA_BOOTSTRAP=ssh I_MPI_HYDRA_BOOTSTRAP_EXEC=DIR/bin/rsh

mpibench itself runs inside the first node (as a job script runs on the first node of its
allocation), so mpirun is where the ranks' nodes can reach it; variants name the nodes
(`hosts = ["tn1", "tn2"]`) and pin the fabric by its interface, which inside every node is
called after the fabric (`interface = "fast"`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpibench.linkmodel import expected_tcp_mbps, tcp_payload_efficiency


def launcher_env(bed: Any) -> dict[str, str]:
    """Environment that makes mpirun/mpiexec start remote ranks through the testbed's agent."""
    agent = str(bed.agent)
    return {"OMPI_MCA_plm_rsh_agent": agent, "PRTE_MCA_plm_ssh_agent": agent,
            "HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": agent,
            "I_MPI_HYDRA_BOOTSTRAP": "ssh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": agent}


@dataclass(frozen=True)
class Expected:
    """What a fabric should measure: the configured link and TCP's share of it."""

    fabric: str
    rate_bps: float
    mtu: int
    delay_us: float  # one-way, 0 where none was set or the kernel has no netem
    efficiency: float  # TCP payload / shaped bytes at this MTU (mpibench.linkmodel)

    @property
    def mbps(self) -> float:
        """Large-message payload bandwidth in MB/s (10^6 B/s)."""
        return expected_tcp_mbps(self.rate_bps, self.mtu)

    @property
    def line_rate(self) -> str:
        """The configured rate as a campaign's line_rate ("4Gb/s")."""
        return f"{self.rate_bps / 1e9:g}Gb/s" if self.rate_bps >= 1e9 else \
            f"{self.rate_bps / 1e6:g}Mb/s"


def expected(bed: Any, fabric: str) -> Expected:
    f = bed.fabric(fabric)
    delay = float(f.delay_us) if getattr(f, "delay_applied", False) else 0.0
    return Expected(f.name, float(f.rate_bps), int(f.mtu), delay,
                    tcp_payload_efficiency(int(f.mtu)))


def mpibench_in_node(bed: Any, args: list[str], *, node: str | None = None,
                     timeout: float = 600, cwd: str | Path | None = None,
                     env: dict[str, str] | None = None):
    """Run `python -m mpibench ARGS` inside a node (the first by default), with the launchers
    pointed at the testbed's agent. Returns the CommandResult; never raises for a failure."""
    node = node or bed.nodes[0].name
    full = {**launcher_env(bed), **(env or {})}
    return bed.run(node, [sys.executable, "-m", "mpibench", *args], timeout=timeout,
                   env=full, cwd=str(cwd) if cwd else os.getcwd())


# -- ground truth: campaigns over the testbed's fabrics and their figures vs the links ------

def _q(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fabric_campaign(bed: Any, name: str, *, stacks: tuple[str, ...] = ("openmpi",),
                    fabrics: tuple[str, ...] | None = None, benchmarks: tuple[str, ...] = (
                        "PingPong",), sizes: str = "0,4M", repeats: int = 2,
                    max_time: float = 0.2, transport: str = "shm+tcp",
                    timeout: float = 300, yielding: bool = False) -> str:
    """A campaign (TOML text): one rank on each of the first two nodes, one variant per stack
    and fabric (`<stack>-<fabric>`), the fabric pinned by its interface, `line_rate` = the
    configured rate, launches interleaved. `yielding` adds `openmpi+yield-<fabric>`: Open MPI
    with mpi_yield_when_idle, ranks that give their CPU away while they wait."""
    fabrics = fabrics or tuple(f.name for f in bed.fabrics)
    hosts = ", ".join(_q(n.name) for n in bed.nodes[:2])
    out = [f"[campaign]\nname = {_q(name)}\nrepeats = {repeats}\norder = \"interleaved\"\n"
           f"timeout = {timeout:g}\n",
           f"[defaults]\nnp = 2\nppn = 1\nhosts = [{hosts}]\ntransport = {_q(transport)}\n"]
    for s in stacks:
        for f in fabrics:
            exp = expected(bed, f)
            out.append(f"[variants.{_q(f'{s}-{f}')}]\nstack = {_q(s)}\ninterface = {_q(f)}\n"
                       f"line_rate = {_q(exp.line_rate)}\n")
            if yielding and s == "openmpi":
                out.append(f"[variants.{_q(f'{s}+yield-{f}')}]\nstack = {_q(s)}\n"
                           f"interface = {_q(f)}\nline_rate = {_q(exp.line_rate)}\n"
                           'mca = { mpi_yield_when_idle = "1" }\n')
    bench = ", ".join(_q(b) for b in benchmarks)
    out.append(f"[benchmarks.net]\nbenchmarks = [{bench}]\nsizes = {_q(sizes)}\n"
               f"options = {{ max_time = {max_time:g} }}\n")
    return "\n".join(out)


def run_campaign(bed: Any, text: str, workdir: str | Path, *, timeout: float = 600,
                 db: str = "fabric.db"):
    """Write the campaign into workdir and run it inside the first node. (CommandResult,
    campaign file, store path)."""
    from mpibench.files import write_file

    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    camp = workdir / "campaign.toml"
    write_file(camp, text)
    res = mpibench_in_node(bed, ["campaign", "run", str(camp), "--db", str(workdir / db)],
                           cwd=workdir, timeout=timeout)
    return res, camp, workdir / db


@dataclass
class FabricFigure:
    """One variant's measured figures next to what its fabric's configuration implies."""

    variant: str
    stack: str
    fabric: str
    expected: Expected
    launches: int
    mbps: float | None  # large-message PingPong MB/s (geomean of launch medians)
    size: int | None  # at this message size
    percent_of_line_rate: float | None  # as mpibench's line-rate table says
    latency_us: float | None  # smallest-size PingPong time (geomean of launch medians)
    interface_actual: str | None  # from the verification probe
    # the fastest single sample at that size over all launches: the link's ceiling shows
    # there even when the medians are held down by the node's CPU (a sample is a batch of
    # iterations; at these sizes usually one)
    best_mbps: float | None = None

    @property
    def ratio(self) -> float | None:
        """measured / expected MB/s (1.0 = exactly the link's TCP payload rate)."""
        return self.mbps / self.expected.mbps if self.mbps else None


def figures(bed: Any, db: str | Path) -> list[FabricFigure]:
    """Per variant of a fabric_campaign (its own store): measured vs configured, the same
    estimates `mpibench compare` prints (geometric mean of the launch medians)."""
    import math

    from mpibench.report.linerate import line_rate_table
    from mpibench.store import Store

    out = []
    with Store(db) as store:
        runs = [dict(r) for r in store.runs()]
        rows = list(store.results(with_samples=False))
        by_variant: dict[str, list[str]] = {}
        for r in runs:
            if r["status"] == "done":
                by_variant.setdefault(r["variant"], []).append(r["id"])
        lr = line_rate_table(store, by_variant)
        pct = {rec["variant"]: rec for rec in lr.records if rec.get("benchmark") == "PingPong"}
        actual = {r["variant"]: r.get("transport_actual") for r in runs}
    for variant, ids in by_variant.items():
        stack, _, fabric = variant.rpartition("-")
        try:
            exp = expected(bed, fabric)
        except KeyError:
            continue
        mine = [r for r in rows if r["run_id"] in ids and r["benchmark"] == "PingPong"
                and r.get("metric", "time") == "time" and r.get("median")]
        sizes = sorted({r["size"] for r in mine})

        def geomean(size: int, mine: list = mine) -> float | None:
            vals = [r["median"] for r in mine if r["size"] == size]
            return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None

        big = sizes[-1] if sizes else None
        t_big = geomean(big) if big is not None else None
        t_small = geomean(sizes[0]) if sizes else None
        mins = [r["min"] for r in mine if r["size"] == big and r.get("min")]
        rec = pct.get(variant, {})
        out.append(FabricFigure(
            variant=variant, stack=stack, fabric=fabric, expected=exp, launches=len(ids),
            mbps=(big / t_big if big and t_big else None), size=big,
            percent_of_line_rate=rec.get("percent_of_line_rate"),
            latency_us=t_small, interface_actual=actual.get(variant),
            best_mbps=(big / min(mins) if big and mins else None)))
    return out


def estimates(db: str | Path) -> dict[tuple[str, str, int], tuple[float, int]]:
    """{(variant, benchmark, size): (time in us, launches)}: the geometric mean of the launch
    medians of the finished runs in a store, as `mpibench compare` estimates a cell."""
    import math

    from mpibench.store import Store

    logs: dict[tuple[str, str, int], list[float]] = {}
    with Store(db) as store:
        done = {r["id"] for r in store.runs() if r["status"] == "done"}
        for r in store.results(with_samples=False):
            if r["run_id"] in done and r.get("median") and r.get("metric", "time") == "time":
                logs.setdefault((r["variant"], r["benchmark"], int(r["size"])), []).append(
                    math.log(r["median"]))
    return {k: (math.exp(sum(v) / len(v)), len(v)) for k, v in logs.items()}
