"""What a TCP link of known rate can carry: the ground truth multi-node figures are checked
against (docs/testbed.md, "What the fabrics should measure").

A shaped link moves `rate` bits per second of *frames*; MPI over TCP moves payload. Per
full-size segment at MTU M (bytes of IP packet):

  payload = M - 20 (IPv4 header) - 20 (TCP header) - 12 (TCP timestamp option, on by
            default in Linux; `timestamps=False` drops it) = the MSS in use (1448 at 1500)
  counted = M + l2 bytes the rate is charged for: 14 for the Ethernet header, which is what
            the kernel's shapers (tc tbf/htb) count on a veth or Ethernet device; a real
            Ethernet wire adds preamble + start delimiter 8, FCS 4 and the inter-frame gap
            12, so 38 (`l2=WIRE_L2`)

  efficiency = payload / counted    (1448 / 1514 = 95.64% under tc; 1448 / 1538 = 94.15%
                                     on an Ethernet wire; 8948 / 9014 = 99.27% at MTU 9000)

MPI's own headers (tens of bytes per message or fragment) and ACKs (which travel the other
way, on the other direction's budget) are left out: both are under 0.1% for the large
messages this figure is for. Expected PingPong bandwidth for large messages is then
rate / 8 * efficiency, in MB/s = 10^6 B/s, and mpibench's "% of line rate" (peak MB/s over
rate / 8) should read about efficiency * 100%.
"""

from __future__ import annotations

IPV4_HEADER = 20
TCP_HEADER = 20
TCP_TIMESTAMPS = 12
TC_L2 = 14  # Ethernet header: what tc charges a frame on a veth/Ethernet device
WIRE_L2 = 14 + 4 + 8 + 12  # header, FCS, preamble+SFD, inter-frame gap


def tcp_payload_efficiency(mtu: int = 1500, *, timestamps: bool = True,
                           l2: int = TC_L2) -> float:
    """Fraction of a link's rate that carries TCP payload in full-size segments."""
    if mtu < 68:
        raise ValueError(f"MTU {mtu}: IPv4 needs at least 68")
    payload = mtu - IPV4_HEADER - TCP_HEADER - (TCP_TIMESTAMPS if timestamps else 0)
    return payload / (mtu + l2)


def expected_tcp_mbps(rate_bps: float, mtu: int = 1500, **kw) -> float:
    """Large-message payload bandwidth in MB/s (10^6 B/s) over a link shaped to rate_bps."""
    return rate_bps / 8 / 1e6 * tcp_payload_efficiency(mtu, **kw)
