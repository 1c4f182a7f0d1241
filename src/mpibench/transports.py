"""Transport presets and the vocabulary for saying which transport carried the traffic.

A preset is a set of MCA parameters and environment variables that asks a stack for one
transport; each stack kind (mpibench.stacks.kinds) owns its table. Free-form env and MCA
settings from the user go on top (they win). What actually carried the traffic is checked
after the run by the transport verification (verify.py), from the stack's own diagnostics;
the pure helpers that name transports live here so that every kind classifies alike.

An actual transport reads "<class> [<detail>]": class one of shm, tcp, shm+tcp, ib, ucx, ofi
(or an MTL's name), unknown. A detail may say "via ucx" or "via ofi": the route the traffic
took (MPICH's netmod, Intel MPI's fabric), so that a request for the route is satisfied too.

Interfaces: a variant may pin the network interface between nodes (`interface = "eth-fast"`;
each kind's interface_settings says how: btl_tcp_if_include, UCX_NET_DEVICES, FI_TCP_IFACE).
The request is then stored as "<preset>@<interface>" ("tcp@eth-fast"), and the probe's
per-interface byte counters (the nodes' own /proc/net/dev, read around a payload exchange)
add "iface <names>" to the detail: the interfaces that carried the payload ("iface none":
no IP interface did: shared memory, or RDMA, which bypasses the counters). A pinned
interface that did not carry it is a MISMATCH, like a wrong transport class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Preset:
    description: str
    mca: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


SHM_NAMES = {"vader", "sm", "smcuda", "sysv", "posix", "cma", "xpmem", "knem", "mm", "shm"}
TCP_NAMES = {"tcp", "sockets", "tcp;ofi_rxm", "ofi_rxm"}
IB_NAMES = {"openib", "rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc",
            "dc_mlx5", "uct", "verbs", "psm2", "psm3", "efa", "usnic", "mlx"}
_ORDER = ["shm", "tcp", "ib"]
_ROUTE = re.compile(r"\bvia (ucx|ofi)\b")
_IFACE = re.compile(r"\biface ([A-Za-z0-9_.:@+,-]+)")
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
# a probe line: one rank's node's byte counters of one interface, before -> after the payload
NETDEV = re.compile(r"^mpibench-netdev rank=(\d+) host=(\S+) if=(\S+) rx=(\d+) tx=(\d+)\s*$",
                    re.MULTILINE)
NETDEV_PAYLOAD = re.compile(r"^mpibench-netdev payload=(\d+)\s*$", re.MULTILINE)

# UCX prints the lanes of every endpoint: 1.13 as "ep_cfg[1]: tag(sysv/memory cma/memory)",
# 1.20 as "ucp_context_0 intra-node cfg#1 tag(sysv/memory cma/memory)" (and "self cfg#0"
# for a rank's endpoint to itself, which carries no traffic to a peer).
_UCX_EP_113 = re.compile(r"ep_cfg\[\d+\]: (.*)$")
_UCX_EP_120 = re.compile(r"ucp_context_\d+ (\S+) cfg#\d+ (.*)$")
_UCX_TAG = re.compile(r"\btag\(([^)]*)\)")
UCX_VERSION = re.compile(r"UCX\s+INFO\s+Version (\S+) \(loaded from ([^)]+)\)")


def classify(names: Iterable[str]) -> str:
    classes = set()
    for n in names:
        if n in SHM_NAMES:
            classes.add("shm")
        elif n in TCP_NAMES:
            classes.add("tcp")
        elif n in IB_NAMES:
            classes.add("ib")
        else:
            classes.add(n)
    return "+".join(sorted(classes, key=lambda c: (_ORDER.index(c) if c in _ORDER else 9, c))) \
        or "unknown"


class Evidence:
    """The diagnostic lines a verdict rests on, collected while matching (at most 40)."""

    def __init__(self, text: str):
        self.text = text
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        line = line.strip()
        if len(self.lines) < 40 and line not in self.lines:
            self.lines.append(line)

    def keep(self, rx: re.Pattern) -> list[str]:
        found = []
        for line in self.text.splitlines():
            m = rx.search(line)
            if m:
                found.append(m.group(1))
                self.add(line)
        return found


def ucx_transports(text: str, evidence: Evidence | None = None) -> set[str]:
    """UCX transport names on the tag lanes of every endpoint to a peer, 'self' excluded;
    UCX 1.13's and 1.20's log formats."""
    names: set[str] = set()
    for line in text.splitlines():
        m = _UCX_EP_120.search(line)
        if m:
            if m.group(1) == "self":
                continue
            lanes = m.group(2)
        else:
            m = _UCX_EP_113.search(line)
            if not m:
                continue
            lanes = m.group(1)
        if evidence is not None:
            evidence.add(line)
        for group in _UCX_TAG.findall(lanes) or [lanes]:
            for tl in group.split():
                name = tl.split("/", 1)[0]
                if name and name != "self":
                    names.add(name)
    return names


def actual_class(actual: str | None) -> str | None:
    return actual.split(" ", 1)[0] if actual else None


def routes(actual: str | None) -> set[str]:
    return set(_ROUTE.findall(actual or ""))


def interface_problem(text: str) -> str | None:
    """Why `text` is not an interface name or a comma list of them, or None."""
    names = text.split(",")
    for n in names:
        if not _IFNAME.match(n):
            return (f"{n!r} is not an interface name (letters, digits and _ . : @ -, "
                    "at most 64 characters; several separated by commas)")
    return None


def netdev_traffic(text: str) -> tuple[dict[str, dict[str, int]], int | None]:
    """({interface: {"tx": bytes, "rx": bytes, "nodes": n}}, payload bytes per rank) from a
    probe's netdev lines. Ranks on one node read the same counters, so a node's figure is
    the largest of its ranks'; the nodes' figures are summed. ({}, None) without lines."""
    per_node: dict[tuple[str, str], tuple[int, int]] = {}
    for _rank, host, iface, rx, tx in NETDEV.findall(text):
        old = per_node.get((host, iface), (0, 0))
        per_node[(host, iface)] = (max(old[0], int(rx)), max(old[1], int(tx)))
    out: dict[str, dict[str, int]] = {}
    for (_host, iface), (rx, tx) in per_node.items():
        d = out.setdefault(iface, {"tx": 0, "rx": 0, "nodes": 0})
        d["tx"] += tx
        d["rx"] += rx
        d["nodes"] += 1
    m = NETDEV_PAYLOAD.search(text)
    return out, (int(m.group(1)) if m else None)


def carriers(traffic: Mapping[str, Mapping[str, int]], payload: int | None) -> list[str]:
    """The interfaces that carried the probe's payload: those that sent at least half of one
    rank's payload, most bytes first."""
    if not payload:
        return []
    return [i for i, d in sorted(traffic.items(), key=lambda kv: -kv[1]["tx"])
            if d["tx"] >= payload // 2]


def interface_detail(text: str) -> str | None:
    """"iface eth-fast 4.3 MB" (the carriers and what they sent), "iface none" when no
    interface carried the payload, None when the probe printed no counters."""
    traffic, payload = netdev_traffic(text)
    if payload is None:
        return None
    found = carriers(traffic, payload)
    if not found:
        return "iface none"
    sent = ", ".join(f"{traffic[i]['tx'] / 1e6:.3g} MB" for i in found)
    return f"iface {'+'.join(found)} ({sent} sent during a {payload / 1e6:.3g} MB/rank payload)"


def actual_interfaces(actual: str | None) -> set[str] | None:
    """The interfaces an actual transport says carried the payload ({} for none), None when
    it does not say."""
    m = _IFACE.search(actual or "")
    if not m:
        return None
    return set() if m.group(1) == "none" else set(m.group(1).split("+"))


def verdict(requested: str | None, actual: str | None) -> str:
    """ok when the class (shm, tcp...) or the route (via ucx, via ofi) is what was asked;
    "ofi-shm" asks for both: the ofi route and the shm class; "shm+tcp" is satisfied by
    either or both (one rank per node uses only tcp). "<request>@<interfaces>" adds: the
    payload crossed no interface but those (see the module docstring)."""
    if not requested:
        return "n/a"
    requested, _, pinned = requested.partition("@")
    cls = actual_class(actual)
    if cls == "none":  # one rank (verify.ONE_RANK): no traffic between ranks to check
        return "n/a"
    if pinned:
        used = actual_interfaces(actual)
        if used is None:
            return "unverified"
        # lo carries what ranks of one node send each other over TCP (to the node's own
        # address): traffic inside a node, like shared memory, not a wrong fabric
        if used - set(pinned.split(",")) - {"lo"}:
            return "MISMATCH"
        if not requested:
            return "ok"
    if cls is None or cls == "unknown":
        return "unverified"
    if requested == "shm+tcp":
        return "ok" if cls in ("shm", "tcp", "shm+tcp") else "MISMATCH"
    if "-" in requested:
        route, _, want = requested.partition("-")
        return "ok" if route in routes(actual) and cls == want else "MISMATCH"
    return "ok" if cls == requested or requested in routes(actual) else "MISMATCH"
