"""What produced a result: stack, launcher argv, transport settings, hosts, machine.

Two runs are pooled only when their fingerprints are equal, so everything that can change a
measurement belongs here and nothing that merely differs between repeats (paths, times).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping

import mpibench

TRANSPORT_ENV_PREFIXES = ("UCX_", "FI_", "OMPI_MCA_", "MV2_", "MPICH_", "MPIR_CVAR_", "I_MPI_",
                          "PSM2_", "HFI_", "NCCL_", "SLURM_MPI_TYPE", "PMIX_MCA_")
# Set by mpibench or harmless bookkeeping: not part of what was measured.
_IGNORED_ENV = {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                "OMPI_MCA_orte_tmpdir_base"}


def transport_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(env.items())
            if k.startswith(TRANSPORT_ENV_PREFIXES) and k not in _IGNORED_ENV}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, object]:
    return {"kernel": platform.release(), "os": platform.system(), "arch": platform.machine(),
            "cpu_model": cpu_model(), "cores": os.cpu_count()}


def collect(*, stack: Mapping[str, object], launcher_argv: list[str], env: Mapping[str, str],
            hosts: list[str] | None = None, ranks_per_host: Mapping[str, int] | None = None,
            binding: str | None = None, extra: Mapping[str, object] | None = None
            ) -> dict[str, object]:
    """Build a fingerprint. launcher_argv must already have run-specific paths replaced
    (see execute.py) so that repeats of one configuration compare equal. env is the full
    environment the ranks saw: process env plus what mpibench added."""
    fp: dict[str, object] = {
        "mpibench_version": mpibench.__version__,
        "stack": {k: stack.get(k) for k in ("name", "kind", "version", "library_version",
                                             "mpicc", "launcher", "modules")},
        "launcher_argv": list(launcher_argv),
        "transport_env": transport_env(env),
        "hosts": sorted(hosts or []),
        "ranks_per_host": dict(sorted((ranks_per_host or {}).items())),
        "binding": binding,
        "machine": machine(),
    }
    if extra:
        fp.update(extra)
    return fp


# machine facts the verification probe reports from the node where rank 0 ran
_NODE_MACHINE_KEYS = ("kernel", "arch", "cpu_model", "cores")


def add_node_facts(fp: dict[str, object], facts: Mapping[str, object]) -> None:
    """Put what the transport probe saw where the ranks ran into a fingerprint: the machine
    (kernel, CPU, cores) becomes the ranks' node's, the harness's own is kept beside it, and
    the MPI/UCX/libfabric libraries actually mapped and their versions are recorded."""
    if not facts:
        return
    harness = fp.get("machine")
    machine = dict(harness) if isinstance(harness, Mapping) else {}
    machine.update({k: facts[k] for k in _NODE_MACHINE_KEYS if k in facts})
    fp["machine"] = machine
    fp["harness_machine"] = harness
    fp["libraries"] = {k: facts[k] for k in ("library", "ucx", "libfabric_api", "libraries")
                       if k in facts}
    if facts.get("nodes"):
        # every node's shape, from where the ranks ran: runs on differently shaped nodes
        # (another kernel, CPU, cpuset, /dev/shm or interfaces) get different fingerprints
        fp["nodes"] = {h: dict(f) for h, f in facts["nodes"].items()}
    if facts.get("library_settings"):
        # what the library said it runs with (mpibench.libsettings): MCA parameters and
        # where they came from, MPICH's netmod/provider summary, Intel MPI's I_MPI_*
        fp["library_settings"] = facts["library_settings"]
    if facts.get("hosts"):
        fp["probe_hosts"] = list(facts["hosts"])
    if facts.get("scheduler_node"):
        fp["probe_node"] = facts["scheduler_node"]
