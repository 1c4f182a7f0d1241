"""mpibench.slurm_local's pieces that need no Slurm (the cluster itself is tested in
tests/schedulers/test_slurm_cluster.py)."""
from __future__ import annotations

import socket

import pytest

from mpibench import slurm_local as sl


def test_ports_are_free_distinct_and_below_the_ephemeral_range():
    """An ephemeral port can be taken by any outgoing connection before slurmctld binds it
    (it failed a full run with "Address already in use"): the ports come from below."""
    low = sl._ephemeral_low()
    if low - 1024 < 64:
        pytest.skip(f"the ephemeral range starts at {low}: the kernel chooses the ports")
    for _ in range(20):
        ports = sl._free_ports(3)
        assert len(set(ports)) == 3
        assert all(1024 <= p < low for p in ports)
        for p in ports:                      # each one can be bound now
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2"])
def test_a_port_held_by_a_listener_is_not_chosen(monkeypatch, tmp_path, address):
    """Held on any address: the daemons listen on every one (a port free on 127.0.0.1 but
    held on 127.0.0.2 is not free for them)."""
    held = socket.socket()
    held.bind((address, 0))
    held.listen()
    port = held.getsockname()[1]
    rng = tmp_path / "range"
    rng.write_text(f"{port + 1}\t{port + 40000}\n")    # the held port is just below the range
    monkeypatch.setattr(sl, "EPHEMERAL_FILE", rng)
    try:
        # a window of 4 x n candidates below port + 1: the held one must be skipped
        monkeypatch.setattr(sl.random.SystemRandom, "sample",
                            lambda self, pop, k: sorted(pop, reverse=True)[:k])
        assert port not in sl._free_ports(2)
    finally:
        held.close()


def test_an_unreadable_range_falls_back_to_the_linux_default(monkeypatch, tmp_path):
    monkeypatch.setattr(sl, "EPHEMERAL_FILE", tmp_path / "missing")
    assert sl._ephemeral_low() == 32768
