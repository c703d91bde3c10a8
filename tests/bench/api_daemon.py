"""api_daemon: what the benchmarks that drive the daemon through the fake API
server in a network namespace share (tests/bench/bench-daemon-api,
tests/bench/bench-soak): its metrics read from inside the namespace, the
kernel's nftables change notifications, and a percentile.

The notifications are the observer of "the kernel has it": the kernel sends
them as it commits a batch, to a netlink socket subscribed to the group
`nft monitor` reads. `nft monitor` itself is no observer: it formats each
element in many small writes after the kernel is done, which added about
1 ms to the median and most of the tail (docs/store.md).

Standard library only; the scripts put tests/integration on sys.path first.
"""
import errno
import socket
import time

import network_namespace

METRICS = "127.0.0.1:10249"
NETLINK_NETFILTER = 12
NFNLGRP_NFTABLES = 7


def metric(ns, name):
    """The value of metric `name` (its first series) read inside `ns`; None when absent."""
    proc = network_namespace.run_in(ns, "curl", "-s", "-m", "2", f"http://{METRICS}/metrics")
    for line in proc.stdout.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.split()[1])
    return None


def nftables_notifications(ns):
    """A netlink socket in `ns` subscribed to nftables' change notifications."""
    def make():
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        sock.bind((0, 1 << (NFNLGRP_NFTABLES - 1)))
        sock.settimeout(0.2)  # the reader looks at `stop` at least this often
        return sock
    return network_namespace.call_inside(ns, make)


def read_notifications(sock, out, stop, dropped=None):
    """Puts (time received, message bytes) on `out` until `stop` is set. Each
    ENOBUFS (the kernel dropped notifications: the socket's buffer was full)
    appends its time to the list `dropped` when one is given."""
    while not stop.is_set():
        try:
            data = sock.recv(1 << 16)
        except socket.timeout:
            continue
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:
                if dropped is not None:
                    dropped.append(time.monotonic())
                continue
            return
        out.put((time.monotonic(), data))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]
