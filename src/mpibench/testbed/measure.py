"""Plain TCP transfers between testbed nodes (Python sockets, no MPI): what a fabric's shaper
lets through, for the tests, bench/bench_testbed.py and a quick look by hand:

    python -m mpibench.testbed.measure DIR [--fabric NAME] [--mib 64] [--from tn1 --to tn2]
    python -m mpibench.testbed.measure DIR --pingpong 16K,64K,256K,1M,4M [--reps 20]

The ping-pong (one TCP connection, TCP_NODELAY, each size sent and echoed back `reps` times
after 2 warm-up round trips; a sample is half a round trip) is what MPI's PingPong does over
TCP without MPI: its fastest sample per size shows what the shaper lets through unpaced.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass

from mpibench.process import run_command
from mpibench.testbed.bed import Testbed
from mpibench.testbed.system import TestbedError

# Both listening scripts start alike: bind to argv[1] on a free port, print the port, accept
# one connection within argv[2] seconds (also each receive's timeout).
_LISTEN = r"""
import json, socket, sys, time
s = socket.socket()
s.bind((sys.argv[1], 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(float(sys.argv[2]))
c, _ = s.accept()
c.settimeout(float(sys.argv[2]))
"""

# The receiver: prints its port, then (after EOF) bytes and seconds from first to last byte.
_SERVER = _LISTEN + r"""n = 0
t0 = t1 = None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    t1 = time.monotonic()
    if t0 is None:
        t0 = t1
    n += len(b)
print(json.dumps({"bytes": n, "seconds": (t1 - t0) if t0 is not None else 0.0}), flush=True)
"""

_CLIENT = r"""
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[4]))
buf = b"\0" * (1 << 20)
left = int(sys.argv[3])
while left > 0:
    c.sendall(buf[:min(left, len(buf))])
    left -= min(left, len(buf))
c.shutdown(socket.SHUT_WR)
c.recv(1)
c.close()
"""


# The echo side of the ping-pong: prints its port, then echoes each length-prefixed message.
_ECHO = _LISTEN + r"""c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
buf = bytearray(int(sys.argv[3]))
while True:
    h = c.recv(8, socket.MSG_WAITALL)
    if len(h) < 8:
        break
    n = int.from_bytes(h, "little")
    got = 0
    while got < n:
        k = c.recv_into(memoryview(buf)[got:n])
        if not k:
            raise SystemExit("short message")
        got += k
    c.sendall(memoryview(buf)[:n])
"""

# The timing side: prints {size: [half round trip seconds, ...]}.
_PING = r"""
import json, socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[5]))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sizes = [int(x) for x in sys.argv[3].split(",")]
buf = bytearray(max(sizes))
out = {}
for n in sizes:
    ts = []
    for i in range(int(sys.argv[4]) + 2):
        t0 = time.perf_counter()
        c.sendall(n.to_bytes(8, "little"))
        c.sendall(memoryview(buf)[:n])
        got = 0
        while got < n:
            k = c.recv_into(memoryview(buf)[got:n])
            if not k:
                raise SystemExit("short echo")
            got += k
        ts.append((time.perf_counter() - t0) / 2)
    out[n] = ts[2:]
c.close()
print(json.dumps(out))
"""


@dataclass
class Transfer:
    src: str
    dst: str
    fabric: str
    bytes: int
    seconds: float
    configured_bps: int

    @property
    def goodput_bps(self) -> float:
        """TCP payload bits per second, first to last byte at the receiver."""
        return self.bytes * 8 / self.seconds if self.seconds > 0 else float("inf")

    @property
    def ratio(self) -> float:
        """goodput / configured rate (TCP/IP/Ethernet headers make the ceiling ~0.96 at
        MTU 1500, as tbf counts frames without preamble and FCS)."""
        return self.goodput_bps / self.configured_bps if self.configured_bps else float("nan")


def tcp_transfer(bed: Testbed, fabric: str | None, *, src: str = "tn1", dst: str = "tn2",
                 nbytes: int = 64 << 20, timeout: float = 120) -> Transfer:
    """Send nbytes over one TCP connection from src to dst's address on `fabric` (None: the
    unshaped management network, configured rate 0)."""
    f = bed.fabric(fabric) if fabric is not None else None
    addr = bed.node(dst).addresses[f.name] if f else bed.node(dst).mgmt_address
    srv = subprocess.Popen(bed.argv(dst, [sys.executable, "-c", _SERVER, addr, str(timeout)]),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        port = srv.stdout.readline().strip()
        if not port.isdigit():
            raise TestbedError(f"TCP receiver in {dst} did not start: {srv.stderr.read()[-300:]}")
        res = run_command(bed.argv(src, [sys.executable, "-c", _CLIENT, addr, port,
                                         str(nbytes), str(timeout)]), timeout=timeout)
        if not res.ok:
            raise TestbedError(f"TCP sender in {src} failed: {res.stderr_tail(5)}")
        out, err = srv.communicate(timeout=timeout)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    try:
        d = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TestbedError(f"TCP receiver in {dst} gave no result: {err[-300:]}") from None
    return Transfer(src, dst, f.name if f else "mgmt", int(d["bytes"]), float(d["seconds"]),
                    f.rate_bps if f else 0)


def tcp_pingpong(bed: Testbed, fabric: str, sizes: list[int], *, src: str = "tn1",
                 dst: str = "tn2", reps: int = 20, timeout: float = 120) -> dict[int, list[float]]:
    """{size: [half round trip seconds] x reps}: src sends each size to dst over `fabric`,
    dst echoes it (2 warm-up round trips per size not kept)."""
    addr = bed.node(dst).addresses[bed.fabric(fabric).name]
    srv = subprocess.Popen(bed.argv(dst, [sys.executable, "-c", _ECHO, addr, str(timeout),
                                          str(max(sizes))]),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        port = srv.stdout.readline().strip()
        if not port.isdigit():
            raise TestbedError(f"TCP echo in {dst} did not start: {srv.stderr.read()[-300:]}")
        res = run_command(bed.argv(src, [sys.executable, "-c", _PING, addr, port,
                                         ",".join(str(n) for n in sizes), str(reps),
                                         str(timeout)]), timeout=timeout)
        if not res.ok:
            raise TestbedError(f"TCP ping-pong from {src} failed: {res.stderr_tail(5)}")
    finally:
        if srv.poll() is None:
            srv.kill()
        srv.wait()
    try:
        d = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TestbedError("TCP ping-pong gave no result") from None
    return {int(k): [float(x) for x in v] for k, v in d.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mpibench.testbed.measure",
                                description="TCP goodput between two testbed nodes per fabric")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--fabric", action="append", help="fabric(s) to measure (default: all)")
    p.add_argument("--mib", type=int, default=64, help="MiB per transfer (default 64)")
    p.add_argument("--from", dest="src", default="tn1")
    p.add_argument("--to", dest="dst", default="tn2")
    p.add_argument("--pingpong", metavar="SIZES",
                   help="TCP ping-pong at these sizes (e.g. 16K,64K,256K,1M) instead of a stream")
    p.add_argument("--reps", type=int, default=20, help="ping-pong round trips per size")
    a = p.parse_args(argv)
    bed = Testbed.load(a.dir)
    if a.pingpong:
        from mpibench.benchmarks import parse_sizes
        sizes = parse_sizes(a.pingpong)
        for name in a.fabric or [f.name for f in bed.fabrics]:
            rate = bed.fabric(name).rate_bps / 8e6
            got = tcp_pingpong(bed, name, sizes, src=a.src, dst=a.dst, reps=a.reps)
            for n, ts in got.items():
                ts = sorted(ts)
                fast, med = n / ts[0] / 1e6, n / ts[len(ts) // 2] / 1e6
                print(f"{name}: {n:>9d} B  fastest {fast:8.1f} MB/s ({fast / rate:6.1%} of "
                      f"{bed.fabric(name).rate_text})  median {med:8.1f} MB/s ({med / rate:6.1%})")
        return 0
    for name in a.fabric or [f.name for f in bed.fabrics]:
        t = tcp_transfer(bed, name, src=a.src, dst=a.dst, nbytes=a.mib << 20)
        print(f"{name}: {a.src} -> {a.dst} {t.bytes / 1e6:.1f} MB in {t.seconds:.3f} s: "
              f"{t.goodput_bps / 1e9:.3f} Gbit/s goodput, configured "
              f"{bed.fabric(name).rate_text} ({t.ratio:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
