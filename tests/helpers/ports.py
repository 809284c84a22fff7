"""Free TCP ports for the servers the tests start, taken outside the kernel's ephemeral range.

A port the kernel hands out for `bind(("", 0))` comes from the same range it gives the local end of
every outgoing connection: between the probe and the server's own bind, another test process's
connection could take it ("address already in use", seen on CI). Ports below the ephemeral range
(Linux: 32768-60999 by default, read from /proc; macOS: 49152-65535) are never handed out that
way; each pytest-xdist process draws from a block of its own, and a port is checked free (on every
address, as a server bound to 0.0.0.0 needs) before it is given."""

from __future__ import annotations

import os
import random
import socket

_FIRST, _BLOCK = 10000, 1500  # gw0: 10000-11499, gw1: 11500-12999, ... (below both kernels' ephemeral ranges)
_given: set[int] = set()


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152  # macOS and the IANA range


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    first = _FIRST + (index % 12) * _BLOCK
    last = min(first + _BLOCK, _ephemeral_start())
    candidates = [p for p in range(first, last) if p not in _given]
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        _given.add(port)
        return port
    with socket.socket() as s:  # every port of the block is taken: let the kernel choose
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
