"""The MPI library's own account of its settings, read from what it prints at start-up.

The transport probe (verify.py) runs every variant once with the library's diagnostics on:
Open MPI's MCA parameter dump (`--mca mpi_show_mca_params enviro,api,file`: every parameter
set from the environment, a file or the command line, with where it came from), MPICH's
`MPIR_CVAR_DEBUG_SUMMARY=1` (netmod capabilities, libfabric provider and its thresholds,
collective selection, thread level), Intel MPI's `I_MPI_DEBUG=5` (its I_MPI_* settings,
libfabric version and provider) and UCX's `UCX_LOG_LEVEL=info` (version, the UCX_* variables
it read, the lanes of each endpoint configuration). `library_settings(text)` turns those lines into
{source: {name: value}} for the fingerprint, so that two sets that differ in a setting the
user never wrote down (Debian's /etc/openmpi/openmpi-mca-params.conf sets pml=^ucx) show it.

Values that change from one launch to the next (job ids, session directories, pids) are left
out: they would make every launch's fingerprint unique. Pure functions.
"""

from __future__ import annotations

import re

# [host:pid] name=value (environment) | (file (/etc/openmpi/openmpi-mca-params.conf:63)) | (api)
_OMPI = re.compile(r"^\[[^\]\s]+:\d+\] ([A-Za-z]\w*)=(.*?) \((environment|api|default|"
                   r"file \([^)]*\)|command line)\)\s*$", re.M)
_OMPI_VOLATILE = re.compile(r"jobid|vpid|session_dir|tmpdir|^mpi_show_mca_params$|_pid$|"
                            r"^orte_hnp_uri$|^orte_local_daemon_uri$|^pmix_server_uri")
# Intel MPI, I_MPI_DEBUG >= 5: "[0] MPI startup(): I_MPI_FABRICS=ofi"
_IMPI = re.compile(r"^\[\d+\] MPI startup\(\): (I_MPI_\w+)=(\S*)\s*$", re.M)
_IMPI_FACT = re.compile(r"^\[\d+\] MPI startup\(\): (libfabric version|libfabric provider|"
                        r"library kind): (.+?)\s*$", re.M)
_IMPI_VOLATILE = {"I_MPI_DEBUG"}          # the probe's own diagnostics switch
# MPICH, MPIR_CVAR_DEBUG_SUMMARY=1: "==== Capability set configuration ====" sections of
# "name: value" lines (and "thread level      : MPI_THREAD_SINGLE")
_RULE = re.compile(r"^=+\s*(.*?)\s*=*\s*$")
_MPICH_KV = re.compile(r"^([A-Za-z_][\w ()./-]*?)\s*:\s+(\S.*?)\s*$")
_FI_VERSION = re.compile(r"^Required minimum FI_VERSION: (\d+), current version: (\d+)")


def openmpi_settings(text: str) -> dict[str, str]:
    """{parameter: value (source)} from Open MPI's mpi_show_mca_params dump."""
    out: dict[str, str] = {}
    for name, value, source in _OMPI.findall(text):
        if not _OMPI_VOLATILE.search(name):
            out[name] = f"{value} ({source})"
    return out


def intel_settings(text: str) -> dict[str, str]:
    out = {k: v for k, v in _IMPI.findall(text) if k not in _IMPI_VOLATILE}
    out.update({k: v for k, v in _IMPI_FACT.findall(text)})
    return out


def mpich_settings(text: str) -> dict[str, str]:
    """{"<section>: <name>": value} from MPICH's debug summary: only the lines between its
    '====' rules (the program's own output around them is not the library's)."""
    out: dict[str, str] = {}
    section: str | None = None
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        fm = _FI_VERSION.match(line)
        if fm:
            out["libfabric: FI_VERSION"] = fm.group(2)
            continue
        rm = _RULE.match(line) if line.startswith("=") else None
        if rm:
            inside = bool(rm.group(1))        # a bare rule closes the summary
            section = rm.group(1) or None
            continue
        if not inside or line.startswith("provider:"):   # libfabric's candidate list
            continue
        m = _MPICH_KV.match(line)
        if m:
            name = " ".join(m.group(1).split())
            out[f"{section}: {name}" if section else name] = m.group(2)
    return out


# UCX with UCX_LOG_LEVEL=info: its version, the UCX_* variables it read, and the lanes of
# each endpoint configuration (1.20: "ucp_context_0 intra-node cfg#1 tag(...)", 1.13:
# "ep_cfg[1]: tag(...)"; a rank's endpoint to itself is not traffic and is left out)
_UCX_VERSION = re.compile(r"UCX\s+INFO\s+Version (\S+)")
_UCX_ENV = re.compile(r"UCX\s+INFO\s+UCX_\* env variables?: (.*?)\s*$", re.M)
_UCX_EP120 = re.compile(r"UCX\s+INFO\s+ucp_context_\d+ (\S+) cfg#\d+ (.*?)\s*$", re.M)
_UCX_EP113 = re.compile(r"UCX\s+INFO\s+ep_cfg\[(\d+)\]: (.*?)\s*$", re.M)
_UCX_VOLATILE = {"UCX_LOG_LEVEL"}          # the probe's own diagnostics switch


def ucx_settings(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    m = _UCX_VERSION.search(text)
    if m:
        out["version"] = m.group(1)
    for line in _UCX_ENV.findall(text):
        for item in line.split():
            k, sep, v = item.partition("=")
            if sep and k not in _UCX_VOLATILE:
                out[k] = v
    for where, lanes in _UCX_EP120.findall(text):
        if where != "self":
            out[f"endpoint {where}"] = " ".join(lanes.split())
    for idx, lanes in _UCX_EP113.findall(text):
        out[f"endpoint cfg[{idx}]"] = " ".join(lanes.split())
    return out


def library_settings(text: str) -> dict[str, dict[str, str]]:
    """{source: {name: value}} of every library account found in a probe's output."""
    found = {"openmpi_mca": openmpi_settings(text), "mpich_debug_summary": mpich_settings(text),
             "intel_mpi": intel_settings(text), "ucx": ucx_settings(text)}
    return {k: v for k, v in found.items() if v}
