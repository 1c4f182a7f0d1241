"""Slurm across the testbed's nodes: the localhost cluster of mpibench.slurm_local (config,
start, wait, stop by PID), with its daemons where a real cluster has them.

- munged and slurmctld run in the switch namespace (cpuset `head`): munged's socket is a
  file under DIR, which every node sees; slurmctld listens on the management bridge
  (198.19.M.254, `tbctl`), which the nodes reach directly and the host through its leg;
- one slurmd per node, started through DIR/bin/enter (the node's cpuset and namespaces),
  as NodeName=tnK NodeHostname=tnK NodeAddr=<its management address>, CPUs = its cpuset.

Clients on the host (sbatch, squeue, scancel, scontrol) use SLURM_CONF=DIR/slurm/etc/slurm.conf;
inside a job, srun reaches the other nodes' slurmd over the management network, so Open MPI's
and MPICH's launchers work inside an allocation. No slurmdbd: sacct does not answer (as with
mpibench.slurm_local).
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass

from mpibench.files import write_file
from mpibench.process import start_ticks
from mpibench.slurm_local import LocalSlurm, SlurmStartError, _node_memory_mb, missing_programs
from mpibench.testbed import system as sx

CTLD_PORT = 6817
SLURMD_PORT = 6818


@dataclass
class TestbedSlurm(LocalSlurm):
    __test__ = False

    bed: object = None

    def node_names(self) -> list[str]:
        return [n.name for n in self.bed.nodes]

    def controller_lines(self, port: int) -> list[str]:
        # "localhost" is what slurmctld accepts as itself; the address is where all reach it
        return [f"SlurmctldHost=localhost({self.bed.ctl_address})", f"SlurmctldPort={port}"]

    def node_lines(self, ports: list[int]) -> list[str]:
        mem = _node_memory_mb(len(self.bed.nodes))
        return [f"NodeName={n.name} NodeHostname={n.name} NodeAddr={n.mgmt_address} "
                f"Port={port} CPUs={len(n.cpus)} RealMemory={mem} State=UNKNOWN"
                for n, port in zip(self.bed.nodes, ports, strict=True)]

    def ports(self) -> tuple[int, list[int]]:
        # every daemon has a network namespace of its own: the standard ports are free
        return CTLD_PORT, [SLURMD_PORT] * len(self.bed.nodes)

    def daemon_argv(self, name: str, argv: list[str]) -> list[str]:
        if name.startswith("slurmd-"):
            return [str(self.bed.enter), name[len("slurmd-"):], *argv]
        return [str(self.bed.root / "bin" / "head"), *argv]


def _write_head_script(bed) -> None:
    q = shlex.quote
    write_file(bed.root / "bin" / "head", f"""#!/bin/sh
# head ARGV...: run ARGV in the switch namespace of the mpibench testbed in {bed.root}
# (cpuset head): where its munged and slurmctld run. Written by mpibench.testbed.
if [ "$(readlink /proc/{bed.switch.pid}/ns/net 2>/dev/null)" != {q(bed.switch.netns)} ]; then
  echo "testbed {bed.root}: not running" >&2; exit 255
fi
echo $$ > {q(str(bed.cgroup / 'head' / 'cgroup.procs'))} || exit 255
exec {q(sx.which('nsenter'))} -t {bed.switch.pid} -n --wd="$PWD" -- "$@"
""", mode=0o755)


def start_slurm(bed, timeout: float = 60) -> None:
    """Start munged, slurmctld and a slurmd per node; record them (PID and start time) in
    bed.daemons and SLURM_CONF in bed.slurm_conf."""
    missing = missing_programs()
    if missing:
        raise sx.TestbedError("Slurm/munge programs not found: " + ", ".join(missing) +
                              " (Debian: slurm-wlm munge)")
    _write_head_script(bed)
    root = bed.root / "slurm"
    root.mkdir(exist_ok=True)
    os.chmod(root, 0o755)
    # a testbed started again in the same DIR is a new cluster: no jobs or node states of
    # the last one (their nodes had other addresses); the logs are kept (appended to)
    for d in ("state", "spool"):
        shutil.rmtree(root / d, ignore_errors=True)
    cluster = TestbedSlurm(root, bed=bed)
    bed.slurm_conf = str(cluster.conf)
    try:
        cluster.start(timeout=timeout)
    except SlurmStartError as exc:
        raise sx.TestbedError(f"Slurm did not start in the testbed: {exc}") from None
    finally:
        bed.daemons = {name: {"pid": pid, "start": start_ticks(pid)}
                       for name, pid in cluster.pids.items()}
        bed.save()


def stop_slurm(bed, ours: set[int]) -> list[str]:
    """Cancel every job, then stop slurmd, slurmctld and munged by their recorded PIDs (only
    those still the same processes and in the testbed's cgroups, `ours`). The cgroup sweep
    in Testbed.stop catches the rest."""
    alive = {name: d["pid"] for name, d in bed.daemons.items()
             if d["pid"] in ours and sx.alive(d["pid"], d.get("start"))}
    notes = []
    if alive:
        cluster = TestbedSlurm(bed.root / "slurm", bed=bed, pids=alive)
        cancelled = cluster.drain_jobs() if "slurmctld" in alive else []
        if cancelled:
            notes.append(f"cancelled Slurm job(s) still there: {', '.join(cancelled)}")
        # all slurmd at once (each takes ~2 s to go), then slurmctld, then munged; a zombie
        # (the daemons may be children of this process) counts as gone
        sx.terminate([p for n, p in alive.items() if n.startswith("slurmd-")])
        for name in ("slurmctld", "munged"):
            if name in alive:
                sx.terminate([alive[name]])
    bed.daemons = {}
    return notes
