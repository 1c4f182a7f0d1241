"""A cluster in a box: nodes as namespaces, fabrics as shaped bridges (see docs/testbed.md).

Layout, all created by `Testbed.start` and removed by `Testbed.stop`:

- a *switch* namespace (network only) holding one bridge per network: `br0` for the
  management network, `br1`, `br2`, ... for the fabrics in the order given;
- per node `tnK`: an anchor process (`sleep infinity`) in new network, UTS, IPC and mount
  namespaces, with hostname tnK, a tmpfs of its own on /dev/shm, a sysfs of its own on /sys
  (the host's /sys/fs/cgroup tree moved on top of it), DIR/hosts bind-mounted over
  /etc/hosts (inside its private mount namespace only), IPv6 off, and one veth per network:
  `mgmt` (198.19.M.K) and one named after each fabric (198.18.F.K), shaped by htb in both
  directions (at the node's interface and at its switch port);
- a cgroup v1 cpuset per node (its own CPUs), holding the anchor and everything started in
  the node through DIR/bin/enter or DIR/bin/rsh, plus one (`head`) for the switch and the
  control daemons: the cgroup tree is how `stop` finds every process to end;
- one veth leg in the host's namespace (`mbt-ID`, 198.19.M.253) on the management bridge, so
  the host reaches the testbed's control daemons (Slurm). The host gets a route to that one
  /24 and nothing else; the nodes have no default route.

State (PIDs with their start times, addresses, cgroups) is in DIR/testbed.json.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shlex
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mpibench.errors import UsageError
from mpibench.files import write_file
from mpibench.process import CommandResult, run_command, start_ticks
from mpibench.testbed import system as sx
from mpibench.testbed.spec import FabricSpec, check_nodes, format_rate

STATE_FILE = "testbed.json"
NODE_PREFIX = "tn"
MGMT_IF = "mgmt"
MTU = 1500
HEAD_CG = "head"
CG_PREFIX = "mpibench-testbed-"
ORPHAN_ENV = "MPIBENCH_TESTBED"


def fabric_subnet(index: int) -> str:
    """Fabric number `index` (1-based) is 198.18.index.0/24 (RFC 2544 benchmarking range)."""
    return f"198.18.{index}.0/24"


def _ip(subnet: str, host: int) -> str:
    return subnet.rsplit(".", 1)[0] + f".{host}"


def _htb(dev: str, f: Fabric, leaf: str) -> list[str]:
    """tc -batch lines: dev's egress capped at f's rate by one htb class over `leaf`."""
    return [f"qdisc add dev {dev} root handle 1: htb default 1",
            f"class add dev {dev} parent 1: classid 1:1 htb rate {f.rate_bps}bit ceil "
            f"{f.rate_bps}bit burst {f.burst} cburst {f.burst} quantum 65536",
            f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}"]


def shaper_params(rate_bps: int) -> tuple[int, int, int]:
    """(burst, limit, gso_max_size) in bytes for a fabric's shaper at rate_bps.

    The shaper is an htb class (rate = ceil = rate_bps) over a byte FIFO: htb sends a packet
    whenever its tokens are not negative and lets them go negative by that packet, so unlike
    tbf its bucket need not hold a whole GSO packet (tbf's did: 96 KiB, and a message of a
    few hundred KiB then passed partly unpaced, 64-256 KiB PingPong reading 130-400% of the
    rate). What still passes unpaced after an idle moment is about the bucket plus one
    packet, so both are kept to a fixed time at the rate:
    - burst: 64 us at the rate (8,000 B at 1gbit, 32,000 B at 4gbit; at least 2 frames):
      how late a timer may fire on a loaded machine before the link loses time;
    - gso_max_size on the veths: the largest power of two <= 140 us at the rate, between
      4 KiB and 64 KiB (16 KiB at 1gbit, 64 KiB at 4gbit): smaller GSO packets cost the
      node's CPU a packet each (16 KiB at 4gbit lost a third of the throughput here).
    The queue holds 5 ms at the rate (at least 256 KiB) so TCP is not made to drop.
    Measured residual overshoot per message size: docs/testbed.md."""
    per_s = rate_bps / 8
    burst = max(2 * 1514, int(per_s * 64e-6))
    gso = 4096
    while gso < 65536 and gso * 2 <= per_s * 140e-6:
        gso *= 2
    return burst, max(256 * 1024, int(per_s * 5e-3)), gso


@dataclass
class Proc:
    pid: int
    start: int | None
    netns: str | None = None

    def alive(self) -> bool:
        return sx.alive(self.pid, self.start)


@dataclass
class Fabric:
    name: str
    index: int
    rate_bps: int
    delay_us: float
    delay_applied: bool
    subnet: str
    mtu: int
    burst: int
    limit: int
    gso_max_size: int = 65536      # the veths' largest GSO packet (bytes); see shaper_params

    @property
    def rate_text(self) -> str:
        return format_rate(self.rate_bps)

    @property
    def bridge(self) -> str:
        return f"br{self.index}"

    @property
    def interface(self) -> str:
        """The interface name inside every node (what btl_tcp_if_include etc. take)."""
        return self.name


@dataclass
class Node:
    name: str
    index: int
    cpus: list[int]
    mgmt_address: str
    addresses: dict[str, str]         # fabric name -> address on that fabric
    anchor: Proc | None = None

    @property
    def interfaces(self) -> dict[str, str]:
        return {f: f for f in self.addresses}


@dataclass
class Testbed:
    __test__ = False  # not a pytest test class

    root: Path
    id: str
    fabrics: list[Fabric]
    nodes: list[Node]
    cgroup: Path
    mgmt_subnet: str
    host_link: str
    netem: bool
    cpu_note: str
    state: str = "starting"
    switch: Proc | None = None
    daemons: dict[str, dict] = field(default_factory=dict)
    slurm_conf: str | None = None

    def __post_init__(self) -> None:
        # the anchors this process started (not a field: never saved)
        self._popen: dict[int, subprocess.Popen] = {}

    # -- paths and addresses ---------------------------------------------------------------
    @property
    def agent(self) -> Path:
        """rsh/ssh-compatible: `agent [ssh options] HOST COMMAND...` (Open MPI
        plm_rsh_agent, MPICH hydra -launcher ssh -launcher-exec, anything ssh-like)."""
        return self.root / "bin" / "rsh"

    @property
    def enter(self) -> Path:
        """`enter NODE ARGV...`: runs ARGV as given inside NODE, in the caller's directory."""
        return self.root / "bin" / "enter"

    @property
    def hosts_file(self) -> Path:
        return self.root / "hosts"

    @property
    def ctl_address(self) -> str:
        return _ip(self.mgmt_subnet, 254)

    @property
    def host_address(self) -> str:
        return _ip(self.mgmt_subnet, 253)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in the testbed at {self.root} "
                       f"(nodes: {', '.join(n.name for n in self.nodes)})")

    def fabric(self, name: str) -> Fabric:
        for f in self.fabrics:
            if f.name == name:
                return f
        raise KeyError(f"no fabric {name!r} in the testbed at {self.root} "
                       f"(fabrics: {', '.join(f.name for f in self.fabrics)})")

    def node_cgroup(self, node: Node) -> Path:
        return self.cgroup / node.name

    def env(self) -> dict[str, str]:
        """What a client on the host needs: SLURM_CONF when Slurm runs."""
        return {"SLURM_CONF": self.slurm_conf} if self.slurm_conf else {}

    def argv(self, node: str, argv: list[str]) -> list[str]:
        """argv wrapped to run inside node (for run_command or Popen)."""
        self.node(node)
        return [str(self.enter), node, *[str(a) for a in argv]]

    def run(self, node: str, argv: list[str], *, timeout: float = 60, env=None, cwd=None,
            input_text: str | None = None) -> CommandResult:
        return run_command(self.argv(node, argv), timeout=timeout, env=env, cwd=cwd,
                           input_text=input_text)

    # -- state ---------------------------------------------------------------------------
    def to_json(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        d["root"] = str(self.root)
        d["cgroup"] = str(self.cgroup)
        d["version"] = 1
        return d

    def save(self) -> None:
        write_file(self.root / STATE_FILE, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, root: str | Path) -> Testbed:
        root = Path(root).resolve()
        p = root / STATE_FILE
        try:
            d = json.loads(p.read_text())
        except FileNotFoundError:
            raise sx.TestbedError(f"{root}: no testbed here (no {STATE_FILE})") from None
        except (OSError, ValueError) as exc:
            raise sx.TestbedError(f"{p}: unreadable testbed state ({exc})") from None
        try:
            nodes = [Node(name=n["name"], index=n["index"], cpus=list(n["cpus"]),
                          mgmt_address=n["mgmt_address"], addresses=dict(n["addresses"]),
                          anchor=Proc(**n["anchor"]) if n.get("anchor") else None)
                     for n in d["nodes"]]
            bed = cls(root=root, id=d["id"], fabrics=[Fabric(**f) for f in d["fabrics"]],
                       nodes=nodes, cgroup=Path(d["cgroup"]), mgmt_subnet=d["mgmt_subnet"],
                       host_link=d["host_link"], netem=d["netem"], cpu_note=d["cpu_note"],
                       state=d["state"],
                       switch=Proc(**d["switch"]) if d.get("switch") else None,
                       daemons=d.get("daemons", {}), slurm_conf=d.get("slurm_conf"))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise sx.TestbedError(f"{p}: unexpected testbed state ({exc})") from None
        problem = bed_problem(bed)
        if problem:
            raise sx.TestbedError(f"{p}: unexpected testbed state ({problem})")
        return bed

    def running(self) -> bool:
        return self.state == "running" and all(
            n.anchor is not None and n.anchor.alive() for n in self.nodes) \
            and self.switch is not None and self.switch.alive()

    def anything_alive(self) -> bool:
        procs = [n.anchor for n in self.nodes if n.anchor] + ([self.switch] if self.switch
                                                               else [])
        procs += [Proc(d["pid"], d["start"]) for d in self.daemons.values()]
        return any(p.alive() for p in procs) or bool(sx.cg_procs(self.cgroup))

    # -- start ---------------------------------------------------------------------------
    @classmethod
    def start(cls, root: str | Path, nodes: int = 2, fabrics: list[FabricSpec] | None = None,
              *, slurm: bool | None = False, cpus_per_node: int | None = None,
              timeout: float = 60) -> Testbed:
        """Create and start a testbed in root (created if needed). Refuses with
        TestbedUnavailable where it cannot run, and with TestbedError when root holds a
        testbed that is still running; a dead one left there (a crash) is cleaned up first.
        slurm: True starts Slurm across the nodes, None does where it is installed.
        cpus_per_node: CPUs per node (default: an equal disjoint share, see assign_cpus)."""
        if cpus_per_node is not None and cpus_per_node < 1:
            raise UsageError(f"--cpus-per-node {cpus_per_node}: expected 1 or more")
        check_nodes(nodes)
        fabrics = list(fabrics or [])
        root = Path(root).resolve()
        if slurm is None:  # when installed
            from mpibench.slurm_local import missing_programs
            slurm = not missing_programs()
        # munge's and Slurm's Unix sockets live under DIR: sun_path holds 108 bytes
        if slurm and len(os.fsencode(root / "slurm" / "munge" / "munge.socket")) > 100:
            raise UsageError(f"testbed directory {str(root)[:60]}...: path too long for "
                             "Slurm's Unix sockets under it; expected at most 75 characters "
                             "(or no Slurm)")
        caps = sx.preflight()
        root.mkdir(parents=True, exist_ok=True)
        with dir_lock(root):
            return cls._start_locked(root, nodes, fabrics, caps, slurm, cpus_per_node, timeout)

    @classmethod
    def _start_locked(cls, root: Path, nodes: int, fabrics: list[FabricSpec],
                      caps: sx.Capabilities, slurm: bool, cpus_per_node: int | None,
                      timeout: float) -> Testbed:
        if (root / STATE_FILE).exists():
            old = cls.load(root)
            if old.state != "stopped":
                if old.anything_alive() and old.running():
                    raise sx.TestbedError(
                        f"a testbed is already running in {root}; stop it first: "
                        f"python -m mpibench.testbed stop {root}")
                old._stop_locked()  # the remains of a crashed one: clean up, then start afresh
        tid = secrets.token_hex(4)
        avail = sx.parse_cpulist((caps.cpuset_root / "cpuset.effective_cpus").read_text())
        mems = (caps.cpuset_root / "cpuset.effective_mems").read_text().strip()
        blocks = sx.assign_cpus(avail, nodes, cpus_per_node)
        shared = sum(len(b) for b in blocks) > len({c for b in blocks for c in b})
        if cpus_per_node is None and nodes > len(avail):
            note = (f"{nodes} nodes on {len(avail)} CPUs: one CPU each, shared round robin "
                    f"(tnK and tn(K+{len(avail)}) share a CPU)")
        elif shared:
            note = (f"{len(blocks[0])} CPU(s) per node on {len(avail)} CPUs: nodes SHARE "
                    "CPUs (each node's ranks may be bound to the same cores as another's)")
        else:
            note = f"{len(blocks[0])} CPU(s) per node, disjoint"
        mgmt = _pick_mgmt_subnet(tid)
        fabs = []
        for i, f in enumerate(fabrics, start=1):
            burst, limit, gso = shaper_params(f.rate_bps)
            fabs.append(Fabric(name=f.name, index=i, rate_bps=f.rate_bps, delay_us=f.delay_us,
                               delay_applied=bool(f.delay_us) and caps.netem,
                               subnet=fabric_subnet(i), mtu=MTU, burst=burst, limit=limit,
                               gso_max_size=gso))
        node_list = [Node(name=f"{NODE_PREFIX}{k}", index=k, cpus=blocks[k - 1],
                          mgmt_address=_ip(mgmt, k),
                          addresses={f.name: _ip(f.subnet, k) for f in fabs})
                     for k in range(1, nodes + 1)]
        bed = cls(root=root, id=tid, fabrics=fabs, nodes=node_list,
                  cgroup=caps.cpuset_root / f"{CG_PREFIX}{tid}", mgmt_subnet=mgmt,
                  host_link=f"mbt-{tid}", netem=caps.netem, cpu_note=note)
        for d in ("bin", "log"):
            (root / d).mkdir(exist_ok=True)
        # recorded before anything exists, so a crash from here on can be cleaned up
        bed.save()
        try:
            bed._create(avail, mems, timeout)
            if slurm:
                from mpibench.testbed.slurm import start_slurm
                start_slurm(bed, timeout=timeout)
            bed.state = "running"
            bed.save()
        except BaseException:
            bed._stop_locked()
            raise
        return bed

    def _create(self, avail: list[int], mems: str, timeout: float) -> None:
        sx.cg_make(self.cgroup, sx.format_cpulist(avail), mems)
        sx.cg_make(self.cgroup / HEAD_CG, sx.format_cpulist(avail), mems)
        for n in self.nodes:
            sx.cg_make(self.node_cgroup(n), sx.format_cpulist(n.cpus), mems)
        write_file(self.hosts_file, self._hosts_text())
        (self.root / "mnt").mkdir(exist_ok=True)
        # the anchors: all started at once, then waited for
        self.switch = self._anchor("switch", self.cgroup / HEAD_CG, "")
        for n in self.nodes:
            n.anchor = self._anchor(
                n.name, self.node_cgroup(n),
                f"echo {n.name} > /proc/sys/kernel/hostname && "
                f"mount -t tmpfs -o mode=1777 mbt-shm /dev/shm && "
                f"mount --bind {shlex.quote(str(self.hosts_file))} /etc/hosts && "
                + _own_sysfs(self.root / "mnt"))
        self.save()
        deadline = time.monotonic() + timeout
        for name, proc in [("switch", self.switch)] + [(n.name, n.anchor) for n in self.nodes]:
            self._wait_anchor(name, proc, deadline)
        self.save()
        self._wire()
        self._write_agents()

    def _anchor(self, name: str, cgroup: Path, setup: str) -> Proc:
        """A long-lived process in new namespaces (network only for the switch), placed in
        its cpuset before it starts, ready once it has exec'd sleep."""
        unshare = [sx.which("unshare"), "--net"]
        if name != "switch":
            unshare += ["--uts", "--ipc", "--mount", "--propagation", "private"]
        inner = ("for f in all default; do echo 1 > /proc/sys/net/ipv6/conf/$f/disable_ipv6 "
                 "2>/dev/null; done; ip link set lo up && " + setup + "exec sleep infinity")
        script = (f"echo $$ > {shlex.quote(str(cgroup / 'cgroup.procs'))} && exec "
                  + " ".join(shlex.quote(a) for a in [*unshare, "--", "sh", "-c", inner]))
        log = open(self.root / "log" / f"anchor-{name}.log", "ab")
        try:
            # the environment names its testbed, for `clean` once DIR itself is gone
            env = {**os.environ, ORPHAN_ENV: f"{self.id}:{self.root}"}
            p = subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=log, start_new_session=True, cwd="/", env=env)
        finally:
            log.close()
        self._popen[p.pid] = p
        # its start time is read now, before anything could reuse the PID
        return Proc(p.pid, start_ticks(p.pid))

    def _wait_anchor(self, name: str, proc: Proc, deadline: float) -> None:
        popen = self._popen.get(proc.pid)
        while time.monotonic() < deadline:
            if popen is not None and popen.poll() is not None:
                log = (self.root / "log" / f"anchor-{name}.log").read_text(errors="replace")
                raise sx.TestbedError(f"testbed node {name} did not start (exit "
                                      f"{popen.returncode}): {log.strip()[-400:]}")
            try:
                comm = Path(f"/proc/{proc.pid}/comm").read_text().strip()
            except OSError:
                comm = ""
            if comm == "sleep":
                proc.netns = sx.netns_of(proc.pid)
                return
            time.sleep(0.005)
        raise sx.TestbedError(f"testbed node {name} not ready in time")

    def _wire(self) -> None:
        sw = self.switch.pid
        # the host's leg into the management bridge: created in the host, peer moved into
        # the switch namespace; IPv6 off before it comes up so it sends nothing of its own
        _ok(run_command([sx.which("ip"), "link", "add", self.host_link, "type", "veth",
                         "peer", "name", "uplink", "netns", str(sw)], timeout=30))
        v6 = Path(f"/proc/sys/net/ipv6/conf/{self.host_link}/disable_ipv6")
        if v6.exists():
            sx.cg_write(v6, "1")
        _ok(run_command([sx.which("ip"), "addr", "add", f"{self.host_address}/24", "dev",
                         self.host_link], timeout=30))
        _ok(run_command([sx.which("ip"), "link", "set", self.host_link, "up"], timeout=30))
        cmds = ["link add br0 type bridge", "link set br0 up",
                f"addr add {self.ctl_address}/24 dev br0", "link set uplink master br0 up"]
        for f in self.fabrics:
            cmds += [f"link add {f.bridge} type bridge", f"link set {f.bridge} up"]
        for n in self.nodes:
            cmds += [f"link add p0n{n.index} type veth peer name {MGMT_IF} netns {n.anchor.pid}",
                     f"link set p0n{n.index} master br0 up"]
            for f in self.fabrics:
                port = f"p{f.index}n{n.index}"
                cmds += [f"link add {port} mtu {f.mtu} type veth peer name {f.interface} "
                         f"netns {n.anchor.pid}",
                         f"link set {port} gso_max_size {f.gso_max_size} master {f.bridge} up"]
        _ok(sx.in_netns(sw, [sx.which("ip"), "-batch", "-"], "\n".join(cmds) + "\n"))
        tc_sw = []
        for n in self.nodes:
            ncmds = [f"link set {MGMT_IF} up", f"addr add {n.mgmt_address}/24 dev {MGMT_IF}"]
            tc_node = []
            for f in self.fabrics:
                ncmds += [f"link set {f.interface} mtu {f.mtu} gso_max_size {f.gso_max_size} up",
                          f"addr add {n.addresses[f.name]}/24 dev {f.interface}"]
                # htb, not tbf: see shaper_params (one class, rate = ceil, over a byte FIFO
                # or, with a delay, over netem)
                leaf = (f"netem delay {f.delay_us:g}us limit 10000" if f.delay_applied
                        else f"bfifo limit {f.limit}")
                tc_node += _htb(f.interface, f, leaf)
                tc_sw += _htb(f"p{f.index}n{n.index}", f, f"bfifo limit {f.limit}")
            _ok(sx.in_netns(n.anchor.pid, [sx.which("ip"), "-batch", "-"],
                            "\n".join(ncmds) + "\n"))
            if tc_node:
                _ok(sx.in_netns(n.anchor.pid, [sx.which("tc"), "-batch", "-"],
                                "\n".join(tc_node) + "\n"))
        if tc_sw:
            _ok(sx.in_netns(sw, [sx.which("tc"), "-batch", "-"], "\n".join(tc_sw) + "\n"))

    def _hosts_text(self) -> str:
        lines = ["# written by mpibench.testbed; bind-mounted over /etc/hosts in each node",
                 "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
                 f"{self.ctl_address}\ttbctl", f"{self.host_address}\ttbhost"]
        for n in self.nodes:
            lines.append(f"{n.mgmt_address}\t{n.name}")
        for f in self.fabrics:
            for n in self.nodes:
                lines.append(f"{n.addresses[f.name]}\t{n.name}-{f.name}")
        return "\n".join(lines) + "\n"

    def _write_agents(self) -> None:
        q = shlex.quote
        cases = []
        for n in self.nodes:
            names = [n.name, n.mgmt_address, *n.addresses.values(),
                     *(f"{n.name}-{f}" for f in n.addresses)]
            cases.append(f"  {'|'.join(q(x) for x in names)})\n"
                         f"    node={q(n.name)}; pid={n.anchor.pid}; ns={q(n.anchor.netns)}; "
                         f"cg={q(str(self.node_cgroup(n)))};;")
        nodes = " ".join(n.name for n in self.nodes)
        enter = f"""#!/bin/sh
# enter NODE ARGV...: run ARGV (as given, no shell) inside node NODE of the mpibench testbed in
# {self.root}: its cpuset first, then its UTS, IPC, mount and network namespaces; the
# working directory and environment are the caller's. Written by mpibench.testbed.
if [ $# -lt 1 ]; then echo "usage: $0 NODE [ARGV...]  (nodes: {nodes})" >&2; exit 255; fi
case "$1" in
{chr(10).join(cases)}
  *) echo "testbed {self.root}: no node '$1' (nodes: {nodes})" >&2; exit 255;;
esac
shift
if [ "$(readlink /proc/$pid/ns/net 2>/dev/null)" != "$ns" ]; then
  echo "testbed {self.root}: node $node is not running" >&2; exit 255
fi
echo $$ > "$cg/cgroup.procs" || exit 255
[ $# -gt 0 ] || set -- /bin/sh
exec {q(sx.which('nsenter'))} -t "$pid" -u -i -m -n --wd="$PWD" -- "$@"
"""
        rsh = f"""#!/bin/sh
# An rsh/ssh stand-in for the mpibench testbed in {self.root}:
#   rsh [ssh options] HOST [COMMAND...]
# runs COMMAND (its words joined by spaces and given to sh -c, as ssh does) inside node HOST
# (a node name, tnK-FABRIC, or one of its addresses), starting in $HOME like ssh. Usable as
# Open MPI's plm_rsh_agent and MPICH hydra's -launcher ssh -launcher-exec.
while [ $# -gt 0 ]; do
  case "$1" in
    -[bcDeEFIiJLlmOopQRSWw]) shift 2;;
    --) shift; break;;
    -*) shift;;
    *) break;;
  esac
done
if [ $# -lt 1 ]; then echo "usage: $0 [ssh options] HOST [COMMAND...]" >&2; exit 255; fi
host=${{1#*@}}; shift
cd "${{HOME:-/}}" 2>/dev/null || cd /
if [ $# -eq 0 ]; then exec {q(str(self.enter))} "$host" /bin/sh; fi
exec {q(str(self.enter))} "$host" /bin/sh -c "$*"
"""
        write_file(self.enter, enter, mode=0o755)
        write_file(self.agent, rsh, mode=0o755)

    # -- stop ----------------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Stop everything this testbed started and remove what it created: Slurm daemons,
        every process in its cpusets (the anchors, whatever was entered), any other process
        still inside its live namespaces, the host's management leg and the cgroups. Safe
        on a half-started or crashed testbed. Returns notes on what needed force."""
        with dir_lock(self.root):
            return self._stop_locked()

    def _stop_locked(self) -> list[str]:
        notes: list[str] = []
        # Every process this testbed started sits in its cgroup tree (checked at load to be
        # its own): only PIDs found there are acted on, whatever testbed.json says.
        if self.daemons:
            from mpibench.testbed.slurm import stop_slurm
            notes += stop_slurm(self, set(sx.cg_procs(self.cgroup)))
        in_cg = set(sx.cg_procs(self.cgroup))
        anchors = [a for a in [n.anchor for n in self.nodes] + [self.switch]
                   if a is not None and a.pid in in_cg and a.alive()]
        anchor_pids = {a.pid for a in anchors}
        # processes inside a live namespace of ours that were not entered through our
        # scripts: found by the namespace its anchor really is in (not the host's)
        strays = []
        own_ns = sx.netns_of(os.getpid())
        for a in anchors:
            ns = sx.netns_of(a.pid)
            if ns and ns == a.netns and ns != own_ns:
                strays += [p for p in sx.pids_in_netns(ns)
                           if p not in anchor_pids and p not in in_cg and p != os.getpid()]
        if strays:
            notes.append(f"stopped {len(strays)} process(es) found inside the testbed's "
                         f"namespaces: {', '.join(map(str, strays[:10]))}")
        sx.terminate(sorted((in_cg - anchor_pids) | set(strays)))
        sx.terminate([a.pid for a in anchors])
        for p in self._popen.values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        # the switch namespace took the host leg's peer with it; a leg still there means
        # something else held the namespace: remove it by its (unique) name
        if Path(f"/sys/class/net/{self.host_link}").exists():
            run_command([sx.which("ip"), "link", "del", self.host_link], timeout=30)
        deadline = time.monotonic() + 10
        while True:
            left = sx.cg_procs(self.cgroup)
            if left:
                sx.terminate(left, grace=2)
            try:
                sx.cg_remove(self.cgroup)
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    notes.append(f"could not remove cgroup {self.cgroup}: {exc.strerror}")
                    break
                time.sleep(0.1)
        self.state = "stopped"
        if (self.root / STATE_FILE).exists():
            self.save()
        return notes

    # -- description ---------------------------------------------------------------------
    def describe(self) -> str:
        alive = self.running()
        lines = [f"testbed {self.root} ({'running' if alive else self.state}"
                 f"{'' if alive or self.state != 'running' else ', NOT running: stale'})",
                 f"  nodes: {len(self.nodes)} ({self.cpu_note})"]
        for n in self.nodes:
            addrs = ", ".join(f"{f} {a}" for f, a in n.addresses.items())
            lines.append(f"    {n.name}: CPUs {sx.format_cpulist(n.cpus)}, mgmt "
                         f"{n.mgmt_address}" + (f", {addrs}" if addrs else ""))
        for f in self.fabrics:
            if not f.delay_us:
                d = "no delay"
            elif f.delay_applied:
                d = f"delay {f.delay_us:g} us one way (netem at each node's egress)"
            else:
                d = f"delay {f.delay_us:g} us requested: NOT applied (kernel has no netem)"
            lines.append(f"  fabric {f.name}: {f.rate_text} each way per node (htb, burst "
                         f"{f.burst} B, GSO <= {f.gso_max_size} B), {d}, {f.subnet}, interface '{f.interface}', MTU "
                         f"{f.mtu}")
        lines.append(f"  management: {self.mgmt_subnet} (unshaped; host leg {self.host_link} "
                     f"{self.host_address})")
        lines.append(f"  agent: {self.agent}   enter: {self.enter}")
        if self.slurm_conf:
            lines.append(f"  slurm: export SLURM_CONF={self.slurm_conf}")
        return "\n".join(lines)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _proc_problem(p, what: str) -> str | None:
    if not isinstance(p, Proc) or not _is_int(p.pid) or p.pid <= 1 or not (
            p.start is None or _is_int(p.start)) or not (p.netns is None
                                                         or isinstance(p.netns, str)):
        return f"{what}: expected a PID, its start time and namespace"
    return None


def bed_problem(bed: Testbed) -> str | None:
    """What is wrong with a loaded state, or None. `stop` kills the PIDs it names, empties
    and removes the cgroup and deletes the host link: a state that names anything but a
    testbed's own (its cgroup on a cgroup filesystem, named after its id; its link named
    after its id) is refused rather than acted on."""
    if not isinstance(bed.id, str) or not re.fullmatch(r"[0-9a-f]{8}", bed.id):
        return f"id {bed.id!r}: expected 8 hex digits"
    if bed.host_link != f"mbt-{bed.id}":
        return f"host_link {bed.host_link!r}: expected mbt-{bed.id}"
    if bed.cgroup.name != f"{CG_PREFIX}{bed.id}" or not sx.on_cgroupfs(bed.cgroup.parent):
        return f"cgroup {str(bed.cgroup)[:80]!r}: expected {CG_PREFIX}{bed.id} in a cpuset"
    if bed.state not in ("starting", "running", "stopped"):
        return f"state {bed.state!r}"
    for k in ("mgmt_subnet", "cpu_note"):
        if not isinstance(getattr(bed, k), str):
            return f"{k}: expected text"
    if not isinstance(bed.netem, bool) or not (bed.slurm_conf is None
                                               or isinstance(bed.slurm_conf, str)):
        return "netem/slurm_conf: unexpected types"
    for n in bed.nodes:
        if not (isinstance(n.name, str) and re.fullmatch(r"tn[0-9]+", n.name)
                and _is_int(n.index) and isinstance(n.mgmt_address, str)
                and all(_is_int(c) and c >= 0 for c in n.cpus)
                and all(isinstance(k, str) and isinstance(v, str)
                        for k, v in n.addresses.items())):
            return f"node {str(n.name)[:20]!r}: unexpected fields"
        if n.anchor is not None and (msg := _proc_problem(n.anchor, f"node {n.name}")):
            return msg
    if bed.switch is not None and (msg := _proc_problem(bed.switch, "switch")):
        return msg
    for f in bed.fabrics:
        if not (isinstance(f.name, str) and _is_int(f.index) and _is_int(f.rate_bps)
                and isinstance(f.delay_us, (int, float)) and isinstance(f.delay_applied, bool)
                and isinstance(f.subnet, str) and _is_int(f.mtu) and _is_int(f.burst)
                and _is_int(f.limit) and _is_int(f.gso_max_size)):
            return f"fabric {str(f.name)[:20]!r}: unexpected fields"
    if not isinstance(bed.daemons, dict):
        return "daemons: expected a table"
    for name, dd in bed.daemons.items():
        if not isinstance(dd, dict) or not _is_int(dd.get("pid")) or dd["pid"] <= 1 or not (
                dd.get("start") is None or _is_int(dd.get("start"))):
            return f"daemon {str(name)[:20]!r}: expected a PID and its start time"
    return None


@contextlib.contextmanager
def dir_lock(root: Path):
    """One start or stop at a time per testbed directory."""
    with open(root / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _own_sysfs(stage: Path) -> str:
    """Shell for a node's anchor: a sysfs of the node's own (so /sys/class/net lists the
    node's interfaces, which UCX reads to find its TCP devices: without it, UCX inside a node
    sees only lo and MPICH's ch4:ucx cannot reach another node), with the host's whole
    /sys/fs/cgroup tree moved back on top of it (every hierarchy, as mounted: the agents put
    what they start into the node's cpuset through it, also when called from inside another
    node, and slurmd's cgroup plugin wants the others, e.g. name=systemd). `stage` is an
    empty directory under DIR that holds the tree for the moment /sys is replaced; all of
    this happens in the node's private mount namespace."""
    q = shlex.quote(str(stage))
    if not Path("/sys/fs/cgroup").is_dir():
        return "mount -t sysfs mbt-sys /sys && "
    return (f"mount --rbind /sys/fs/cgroup {q} && mount -t sysfs mbt-sys /sys && "
            f"mount --move {q} /sys/fs/cgroup && ")


def _ok(res: CommandResult) -> CommandResult:
    if not res.ok:
        cmd = " ".join(res.argv[:6])
        raise sx.TestbedError(f"testbed: `{cmd} ...` failed: "
                              f"{(res.stderr.strip() or res.stdout.strip())[-400:]}")
    return res


def _pick_mgmt_subnet(tid: str) -> str:
    """A 198.19.M.0/24 no interface or route of this host uses yet (the host's leg of the
    management network lives in the host's namespace, so two testbeds must not share one)."""
    used = set()
    for argv in (["ip", "-o", "-4", "addr", "show"], ["ip", "-o", "-4", "route", "show"]):
        res = run_command([sx.which(argv[0]), *argv[1:]], timeout=30)
        for word in res.stdout.split():
            if word.startswith("198.19."):
                parts = word.split("/")[0].split(".")
                if len(parts) == 4 and parts[2].isdigit():
                    used.add(int(parts[2]))
    first = int(tid, 16) % 250 + 1
    for k in range(250):
        m = (first + k - 1) % 250 + 1
        if m not in used:
            return f"198.19.{m}.0/24"
    raise sx.TestbedError("no free 198.19.M.0/24 for the management network (250 in use)")


def clean_orphans(min_age: float = 60.0) -> list[str]:
    """Stop and remove testbeds whose directory is gone (or no longer describes them): a
    cgroup `mpibench-testbed-ID` of this cpuset hierarchy whose processes' environment names
    a DIR without a live testbed.json of that ID. Cgroups younger than min_age seconds are
    left alone (a testbed being started right now). Returns the IDs removed."""
    try:
        cs = sx.cpuset_dir()
    except OSError:
        return []
    if cs is None or not cs.is_dir():
        return []
    removed = []
    for cg in sorted(cs.glob(CG_PREFIX + "*")):
        tid = cg.name[len(CG_PREFIX):]
        try:
            if time.time() - cg.stat().st_mtime < min_age:
                continue
        except OSError:
            continue
        procs = sx.cg_procs(cg)
        owner = None
        for pid in procs:
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            for item in env:
                if item.startswith(ORPHAN_ENV.encode() + b"="):
                    owner = item.split(b"=", 1)[1].decode(errors="replace")
        if owner is not None:
            oid, _, root = owner.partition(":")
            if oid != tid:
                continue  # not what it seems: leave it
            try:
                d = json.loads((Path(root) / STATE_FILE).read_text())
                if d.get("id") == tid and d.get("state") != "stopped":
                    continue  # its directory still describes it: `stop DIR` is the way
            except (OSError, ValueError):
                pass
        elif procs:
            continue  # processes that do not say they are ours: leave them
        sx.terminate(procs)
        link = f"mbt-{tid}"
        if Path(f"/sys/class/net/{link}").exists():
            run_command([sx.which("ip"), "link", "del", link], timeout=30)
        try:
            sx.cg_remove(cg)
        except OSError:
            continue
        removed.append(tid)
    return removed
