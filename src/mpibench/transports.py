"""Transport presets per stack kind, so users need not know each library's knobs.

A preset is a set of MCA parameters and environment variables. Free-form env and MCA settings
from the user go on top (they win). What actually carried the traffic is checked after the
run by the transport verification (campaign runner); a preset only states the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mpibench.errors import UsageError


@dataclass(frozen=True)
class Preset:
    description: str
    mca: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


PRESETS: dict[str, dict[str, Preset]] = {
    "openmpi": {
        "shm": Preset("ob1 PML with the vader shared-memory BTL",
                      mca={"pml": "ob1", "btl": "self,vader"}),
        "tcp": Preset("ob1 PML with the TCP BTL (loopback on one host)",
                      mca={"pml": "ob1", "btl": "self,tcp"}),
        # Without InfiniBand, pml ucx refuses to run unless any device/transport is allowed.
        "ucx": Preset("UCX PML (any device, any UCX transport)",
                      mca={"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"}),
        # mtl ofi excludes the tcp and shm providers by default; clear the exclusion and pick
        # the provider with FI_PROVIDER (override it in the variant's env).
        "ofi": Preset("cm PML with the OFI MTL (libfabric provider from FI_PROVIDER)",
                      mca={"pml": "cm", "mtl": "ofi", "mtl_ofi_provider_exclude": "none"},
                      env={"FI_PROVIDER": "tcp"}),
    },
    "mpich": {
        "shm": Preset("ch4:ucx with UCX shared-memory transports", env={"UCX_TLS": "self,sm"}),
        "tcp": Preset("ch4:ucx with the UCX TCP transport", env={"UCX_TLS": "self,tcp"}),
    },
}
PRESETS["mvapich"] = {}
PRESETS["intel"] = {
    "shm": Preset("Intel MPI shared memory fabric", env={"I_MPI_FABRICS": "shm"}),
    "ofi": Preset("Intel MPI OFI fabric", env={"I_MPI_FABRICS": "ofi"}),
}


def preset(kind: str, name: str | None) -> Preset | None:
    """The preset for a stack kind, None when no transport was requested."""
    if not name:
        return None
    table = PRESETS.get(kind, {})
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise UsageError(f"transport {name!r} is not available for {kind} stacks; "
                         f"expected one of: {known}")
    return table[name]


def all_transport_names() -> list[str]:
    return sorted({t for table in PRESETS.values() for t in table})
