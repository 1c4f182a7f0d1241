"""The Linux primitives the testbed stands on: preflight checks, cgroup v1 cpusets, process
identity (PID + start time), and running ip/tc inside a namespace.

Nothing here writes outside the testbed's own cgroup directories and namespaces.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from mpibench.errors import MpibenchError
from mpibench.process import run_command, start_ticks

TOOLS = ("unshare", "nsenter", "ip", "tc")


class TestbedUnavailable(MpibenchError):
    """This machine cannot run a testbed (not root, no namespaces, no tc, no cpuset, no
    bridges): one line saying which. Nothing was created."""

    __test__ = False  # not a pytest test class
    exit_code = 2


class TestbedError(MpibenchError):
    """Starting or driving a testbed failed at run time (what was created is removed)."""

    __test__ = False


# -- preflight ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Capabilities:
    netem: bool            # the kernel can add delay (sch_netem)
    cpuset_root: Path      # the cgroup v1 cpuset directory this process sits in


def which(tool: str) -> str | None:
    return shutil.which(tool) or next(
        (p for p in (f"/usr/sbin/{tool}", f"/sbin/{tool}") if os.access(p, os.X_OK)), None)


def cpuset_dir(mountinfo: str | None = None, self_cgroup: str | None = None) -> Path | None:
    """The cgroup v1 cpuset directory of this process, or None without a cpuset hierarchy."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    if self_cgroup is None:
        self_cgroup = Path("/proc/self/cgroup").read_text()
    mount = None
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if sep and len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup" \
                and "cpuset" in tail[2].split(","):
            mount = (fields[3], fields[4])  # (root of the mount, mount point)
            break
    if mount is None:
        return None
    own = "/"
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpuset" in parts[1].split(","):
            own = parts[2]
    root, point = mount
    if root != "/" and (own == root or own.startswith(root + "/")):
        own = own[len(root):] or "/"
    return Path(point) / own.lstrip("/")


def on_cgroupfs(path: Path, mountinfo: str | None = None) -> bool:
    """Whether path lies on a cgroup (v1 or v2) filesystem, by the mount that holds it."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return False
    path = os.path.normpath(str(path))
    best, fstype = "", ""
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        point = fields[4]
        if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                len(point) >= len(best):
            best, fstype = point, tail[0]
    return fstype in ("cgroup", "cgroup2")


_PROBE = r"""
ip link set lo up || { echo "FAIL namespaces: cannot configure a network namespace"; exit 0; }
ip link add mbtprobe type bridge 2>/dev/null || { echo "FAIL bridges: the kernel cannot create a bridge (CONFIG_BRIDGE)"; exit 0; }
ip link add mbtv type veth peer name mbtw 2>/dev/null || { echo "FAIL veth: the kernel cannot create veth pairs (CONFIG_VETH)"; exit 0; }
{ tc qdisc add dev mbtv root handle 1: htb default 1 && tc class add dev mbtv parent 1: classid 1:1 htb rate 1mbit burst 32k && tc qdisc add dev mbtv parent 1:1 handle 10: bfifo limit 256k; } 2>/dev/null || { echo "FAIL tc: tc cannot add an htb qdisc over a bfifo (CONFIG_NET_SCH_HTB, CONFIG_NET_SCH_FIFO)"; exit 0; }
echo OK
tc qdisc add dev mbtw root netem delay 1ms 2>/dev/null && echo NETEM
exit 0
"""


def preflight() -> Capabilities:
    """Check, without creating anything outside a throw-away namespace, that a testbed can
    run here. Raises TestbedUnavailable with one line otherwise."""
    if os.geteuid() != 0:
        raise TestbedUnavailable("the testbed needs root (it creates namespaces, bridges, "
                                 "tc qdiscs and cpusets)")
    missing = [t for t in TOOLS if which(t) is None]
    if missing:
        raise TestbedUnavailable("the testbed needs " + ", ".join(missing) +
                                 " (Debian: util-linux, iproute2)")
    cs = cpuset_dir()
    if cs is None or not (cs / "cpuset.cpus").exists():
        raise TestbedUnavailable("the testbed needs a cgroup v1 cpuset hierarchy (none "
                                 "mounted here; cgroup v2-only hosts are not supported)")
    # everything below happens in a namespace that disappears when the probe exits
    res = run_command([which("unshare"), "--net", "--uts", "--ipc", "--mount",
                       "--propagation", "private", "--", "sh", "-c", _PROBE], timeout=30)
    if not res.ok:
        first = (res.stderr.strip().splitlines() or ["no output"])[0]
        raise TestbedUnavailable(f"the testbed cannot create namespaces here (unshare: {first})")
    out = res.stdout.split("\n")
    for line in out:
        if line.startswith("FAIL "):
            raise TestbedUnavailable(f"the testbed cannot run here: {line[5:]}")
    if "OK" not in out:
        raise TestbedUnavailable("the testbed's probe of namespaces, bridges and tc gave no "
                                 "answer: " + (res.stderr.strip() or res.stdout.strip())[:200])
    return Capabilities(netem="NETEM" in out, cpuset_root=cs)


# -- cpusets -----------------------------------------------------------------------------

def parse_cpulist(text: str) -> list[int]:
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def format_cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def assign_cpus(cpus: list[int], n: int, per: int | None = None) -> list[list[int]]:
    """Each node's CPUs: equal disjoint blocks where there are at least as many CPUs as nodes
    (the remainder unused), else one CPU each, round robin (nodes then share CPUs). With
    `per`, `per` CPUs each (at most all of them), consecutive blocks taken round robin:
    they overlap where per * n exceeds the CPUs."""
    if per is not None:
        per = min(per, len(cpus))
        return [sorted({cpus[(i * per + j) % len(cpus)] for j in range(per)})
                for i in range(n)]
    if n <= len(cpus):
        per = len(cpus) // n
        return [cpus[i * per:(i + 1) * per] for i in range(n)]
    return [[cpus[i % len(cpus)]] for i in range(n)]


def cg_write(path: Path, value: str) -> None:
    """cgroup files are kernel interfaces, not regular files: written in place (no rename)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def cg_make(path: Path, cpus: str, mems: str) -> None:
    path.mkdir(exist_ok=True)
    cg_write(path / "cpuset.cpus", cpus)
    cg_write(path / "cpuset.mems", mems)


def cg_procs(path: Path) -> list[int]:
    """Every process in the cgroup tree under path."""
    out: list[int] = []
    if not path.is_dir():
        return out
    for d in [path, *sorted(p for p in path.rglob("*") if p.is_dir())]:
        try:
            out.extend(int(x) for x in (d / "cgroup.procs").read_text().split())
        except (OSError, ValueError):
            pass
    return out


def cg_remove(path: Path) -> None:
    if not path.is_dir():
        return
    for d in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        d.rmdir()
    path.rmdir()


# -- processes ---------------------------------------------------------------------------

def alive(pid: int, started: int | None) -> bool:
    return started is not None and start_ticks(pid) == started


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def pids_in_netns(netns: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and netns_of(int(entry)) == netns:
            out.append(int(entry))
    return out


def terminate(pids: list[int], grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL whatever is left after `grace` seconds."""
    pids = [p for p in pids if p > 1 and p != os.getpid()]
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _wait_gone(pids, grace)
    for p in pids:
        if start_ticks(p) is not None:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    _wait_gone(pids, grace)


def _wait_gone(pids: list[int], grace: float) -> None:
    """Until none of pids is alive (a zombie counts as gone), at most grace seconds."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(start_ticks(p) is not None for p in pids):
        time.sleep(0.05)


def in_netns(pid: int, argv: list[str], input_text: str | None = None, timeout: float = 30):
    """Run argv in the network namespace of pid (only: /sys and the mounts stay the host's)."""
    return run_command([which("nsenter"), "-t", str(pid), "-n", "--", *argv],
                       input_text=input_text, timeout=timeout)
