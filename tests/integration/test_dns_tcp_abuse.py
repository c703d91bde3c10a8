"""Hostile DNS clients (issue 10): each test measures what the abuse costs
the daemon (bytes it accepts, its RSS, its CPU ticks from /proc/PID/stat,
its descriptors, the replies a client gets) and asserts a bound.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns` fixture), with DNS on that namespace's 127.0.0.1:53 and
one worker (pinned to one CPU: one worker per CPU it may run on). The
clients' sockets are made in the namespace from this process
(network_namespace.call_inside).
"""
import contextlib
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import time
import urllib.request

import pytest

import network_namespace
from daemons import terminate
from dns_wire import answer_count, framed, message_id, query, rcode
from kube_objects import cluster_list, endpoint, endpoint_slice, service, service_port
from kube_objects import write_atomically
from probes import free_port, metric, wait_for

DNS = ("127.0.0.1", 53)
UPSTREAM = "127.0.0.2"  # a stub that reads nothing: forwards stay pending until they time out
BIG_ENDPOINTS = 2000  # ~32 KB over TCP, never truncated there
HTTP = service_port(80, name="http", target=8080)


def cluster():
    endpoints = [endpoint(f"10.244.{i // 250}.{i % 250 + 1}") for i in range(BIG_ENDPOINTS)]
    slices = [endpoint_slice("big", endpoints[n * 500:(n + 1) * 500], name=f"big-{n}")
              for n in range(BIG_ENDPOINTS // 500)]
    return cluster_list([service("web", ["10.96.0.10"], [HTTP]), service("big", [], [HTTP]),
                         *slices])


class Daemon:
    def __init__(self, binary, namespace, tmp_path):
        self.namespace = namespace
        self.metrics_port = free_port()
        write_atomically(tmp_path / "cluster.json", cluster())
        self.log_path = tmp_path / "daemon.log"
        with open(self.log_path, "w") as log:
            # One CPU, so one DNS worker: every connection is on one event loop.
            self.process = subprocess.Popen(
                ["taskset", "-c", "0", *network_namespace.in_ns(namespace, [
                    binary, f"--source=file:{tmp_path / 'cluster.json'}",
                    "--hostname-override=node-a",
                    f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
                    "--healthz-bind-address", "", f"--dns-listen={DNS[0]}:{DNS[1]}",
                    f"--dns-upstream={UPSTREAM}:53"])],
                stdout=subprocess.DEVNULL, stderr=log)
        self.pid = self.process.pid  # taskset and ip exec: the daemon's own pid

    def socket(self, kind=socket.SOCK_STREAM, proto=0):
        """A socket of the daemon's namespace."""
        return network_namespace.call_inside(
            self.namespace, lambda: socket.socket(socket.AF_INET, kind, proto))

    def connect(self, rcvbuf=None, sndbuf=None):
        s = self.socket()
        for option, size in ((socket.SO_RCVBUF, rcvbuf), (socket.SO_SNDBUF, sndbuf)):
            if size:
                s.setsockopt(socket.SOL_SOCKET, option, size)
        s.settimeout(10)
        s.connect(DNS)
        return s

    def metrics(self):
        def get():
            url = f"http://127.0.0.1:{self.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read().decode()
        return network_namespace.call_inside(self.namespace, get)

    def counter(self, name):
        return metric(self.metrics(), name)

    def ticks(self):
        """utime + stime of every thread, in clock ticks."""
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def ticks_over(self, seconds):
        before = self.ticks()
        time.sleep(seconds)
        return self.ticks() - before

    def rss_kb(self):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def descriptors(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a test may have stopped it
        terminate(self.process)


def read_reply(s):
    """One framed reply from `s` (blocking, the socket's timeout): its bytes."""
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise EOFError(f"closed after {len(data)} of {n} bytes")
            data += chunk
        return data
    length, = struct.unpack("!H", exactly(2))
    return exactly(length)


def tcp_ask(daemon, name, qid=1):
    with daemon.connect() as s:
        s.sendall(framed(query(qid, name)))
        return read_reply(s)


def closed_by_peer(s):
    """True once the server closed `s` (EOF or reset); False while it is open."""
    if not select.select([s], [], [], 0)[0]:
        return False
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True


@pytest.fixture
def daemon(root, switchboard_bin, netns, tmp_path):
    d = Daemon(switchboard_bin, netns, tmp_path)
    try:
        def answers():
            assert d.process.poll() is None, d.log_path.read_text()
            with contextlib.suppress(OSError, EOFError):
                return answer_count(tcp_ask(d, "big.default.svc.cluster.local")) == BIG_ENDPOINTS
        wait_for(answers, f"DNS over TCP answering; log: {d.log_path}", timeout=60)
        yield d
    finally:
        d.stop()


def test_pipelining_client_that_never_reads_is_bounded(daemon):
    """Bytes the daemon takes from a client that sends queries and never reads, and its RSS."""
    rss_before = daemon.rss_kb()
    s = daemon.connect(rcvbuf=4096, sndbuf=4096)
    s.setblocking(False)
    chunk = b"".join(framed(query(i, "web.default.svc.cluster.local")) for i in range(200))
    accepted = 0
    deadline = time.monotonic() + 3
    # Until a send blocks for a second (the daemon stopped reading), 3 s of
    # sending, or 256 MB: the first is the bound at work.
    while time.monotonic() < deadline and accepted < 256 << 20:
        try:
            accepted += s.send(chunk)
        except BlockingIOError:
            if not select.select([], [s], [], 1)[1]:
                break
        except (BrokenPipeError, ConnectionResetError):
            break
    rss_growth = daemon.rss_kb() - rss_before
    s.close()
    print(f"accepted {accepted} bytes, RSS grew {rss_growth} KiB")
    # The output bound (64 KiB) plus what the kernel buffers on both sides.
    assert accepted < 8 << 20
    assert rss_growth < 32 << 10


def test_half_closed_client_with_unsent_replies_costs_no_cpu(daemon):
    """shutdown(SHUT_WR) with replies unsent: no busy loop; every reply arrives, then the close."""
    # The daemon's socket send buffers capped at 16 KiB (this namespace
    # only), so that replies of ~32 KB each stay unsent in the daemon.
    network_namespace.sysctl(daemon.namespace, "net.ipv4.tcp_wmem=4096 16384 16384")
    queries = 6  # ~192 KB of replies: more than the buffers, less than 256 KiB
    s = daemon.connect(rcvbuf=4096)
    s.sendall(b"".join(framed(query(i, "big.default.svc.cluster.local"))
                       for i in range(queries)))
    s.shutdown(socket.SHUT_WR)
    ticks = daemon.ticks_over(3)
    print(f"{ticks} ticks in 3 s with a half-closed client holding its replies")
    assert ticks < 30
    for i in range(queries):
        reply = read_reply(s)
        assert message_id(reply) == i
        assert answer_count(reply) == BIG_ENDPOINTS
    assert s.recv(1) == b""
    s.close()


def test_half_closed_client_with_a_forward_pending_costs_no_cpu(daemon):
    """shutdown(SHUT_WR) while the upstream has not answered: no busy loop, then the reply."""
    with daemon.socket(socket.SOCK_DGRAM) as upstream:
        upstream.bind((UPSTREAM, 53))  # bound, never read: no ICMP error, no answer
        s = daemon.connect()
        s.sendall(framed(query(7, "www.example.com")))
        s.shutdown(socket.SHUT_WR)
        # The forwarder gives up after its attempts (3 x 1 s); 2 s are inside them.
        ticks = daemon.ticks_over(2)
        print(f"{ticks} ticks in 2 s with a half-closed client waiting for its upstream")
        assert ticks < 20
        reply = read_reply(s)
        assert message_id(reply) == 7
        assert rcode(reply) == 2  # SERVFAIL: the upstream never answered
        assert s.recv(1) == b""
        s.close()


@pytest.mark.parametrize("queries_first", [0, 1])
def test_a_trickle_of_bytes_does_not_keep_a_connection(daemon, queries_first):
    """Slowloris: one byte every half second never resets the read (3 s) or idle (10 s) timeout."""
    s = daemon.connect()
    for i in range(queries_first):
        s.sendall(framed(query(i, "web.default.svc.cluster.local")))
        read_reply(s)
    frame = framed(query(99, "web.default.svc.cluster.local"))
    closed = False
    for byte in frame[:-1]:  # 48 bytes, 24 s: far longer than the timeouts
        try:
            s.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        closed = closed or closed_by_peer(s)
        if closed:
            break
        time.sleep(0.5)
    s.close()
    assert closed, "the connection outlived its timeout on a trickle of bytes"
    assert daemon.counter("switchboard_dns_tcp_timeouts_total") >= 1


def test_over_the_bound_the_least_recently_active_connection_is_evicted(daemon):
    """1024 connections (one worker's share of max_tcp_connections): the next evicts the oldest."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held = []
    try:
        # Each asks once (activity, and the idle timeout instead of the read one).
        for i in range(1024):
            s = daemon.connect()
            s.sendall(framed(query(i, "web.default.svc.cluster.local")))
            read_reply(s)
            held.append(s)
        newest = daemon.connect()
        newest.sendall(framed(query(5000, "web.default.svc.cluster.local")))
        assert message_id(read_reply(newest)) == 5000
        held.append(newest)
        wait_for(lambda: closed_by_peer(held[0]), "the least recently active connection closed")
        held[-2].sendall(framed(query(5001, "web.default.svc.cluster.local")))
        assert message_id(read_reply(held[-2])) == 5001
        assert daemon.counter("switchboard_dns_tcp_evictions_total") >= 1
    finally:
        for s in held:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_accept_out_of_descriptors_does_not_spin(daemon):
    """EMFILE: connections over the descriptor limit are closed at once, with no busy loop."""
    # The soft limit only: raising a hard one back needs CAP_SYS_RESOURCE,
    # and the daemon raises its soft limit at start only.
    original = resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE)
    limit = daemon.descriptors() + 4
    resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, (limit, original[1]))
    held = []
    try:
        for _ in range(40):
            held.append(daemon.connect())
        ticks = daemon.ticks_over(3)
        print(f"{ticks} ticks in 3 s with 40 connections over a limit of {limit} descriptors")
        assert ticks < 30
        assert daemon.counter("switchboard_dns_tcp_rejected_total") >= 1
    finally:
        for s in held:
            s.close()
        resource.prlimit(daemon.pid, resource.RLIMIT_NOFILE, original)
    # Descriptors back: the listener serves again.
    def answers():
        with contextlib.suppress(OSError, EOFError):
            return answer_count(tcp_ask(daemon, "web.default.svc.cluster.local")) == 1
    wait_for(answers, "TCP answers after the limit is restored")


def udp_header(source_port, destination_port, payload):
    return struct.pack("!HHHH", source_port, destination_port, 8 + len(payload), 0) + payload


def test_a_reply_to_source_port_0_does_not_drop_the_rest_of_its_batch(daemon):
    """sendmmsg: one reply the kernel refuses (port 0: EINVAL) is skipped, the others go."""
    client = daemon.socket(socket.SOCK_DGRAM)
    client.bind(("127.0.0.1", 0))
    raw = daemon.socket(socket.SOCK_RAW, socket.IPPROTO_UDP)
    try:
        # Stopped, the daemon leaves every datagram queued on its one UDP
        # socket: once continued, one recvmmsg takes them as one batch.
        os.kill(daemon.pid, signal.SIGSTOP)
        try:
            for i in range(10):
                client.sendto(query(i, "web.default.svc.cluster.local"), DNS)
            raw.sendto(udp_header(0, DNS[1], query(100, "web.default.svc.cluster.local")),
                       (DNS[0], 0))
            for i in range(10, 20):
                client.sendto(query(i, "web.default.svc.cluster.local"), DNS)
        finally:
            os.kill(daemon.pid, signal.SIGCONT)
        client.settimeout(5)
        received = set()
        with contextlib.suppress(socket.timeout):
            while len(received) < 20:
                received.add(message_id(client.recv(4096)))
        print(f"{len(received)} of 20 replies")
        assert received == set(range(20))
    finally:
        client.close()
        raw.close()
