"""dns_stub: fake DNS servers (the daemon's upstreams, a relay, a silent
server) for the integration tests, run as threads of the test process on
sockets made inside the test's network namespace.

A Stub listens on ADDRESS:53 (UDP, and TCP when asked) of a namespace,
parses each query's question, logs it (Query: protocol, the asker's source
port, ID, type, name) and hands it to its `answer` function, which returns
the reply's bytes or None (no reply). Hooks the tests use:
  * `answer`: own_address (the default: an A question gets the stub's own
    address), or a test's function of (stub, query);
  * `silent`: log every query, answer none;
  * hold() / release(): queue replies until release(), then send them;
  * `delay`: seconds to wait before each reply;
  * send() / send_from_another_port(): extra datagrams (spoofed replies);
  * relay(): forward each query to another server and its reply back.

Messages are built and parsed with dns_wire (names, questions, records);
reply() makes a stub's reply to a Query.

Thread safety: a stub's serving threads log into `queries` under a lock;
queries_seen() returns a copy. `silent` and `delay` are read by the serving
threads (plain attribute reads). close() (also on leaving a `with`) stops
the threads and closes the sockets; no exception leaves a serving thread
(each is logged in `errors`, which close() reports).
"""
from __future__ import annotations

import dataclasses
import socket
import struct
import threading
import time

import dns_wire
import network_namespace

PROBE_PREFIX = "sb-loop-"  # the forwarder's loop probes: sb-loop-<random>.<random>.<zone>
RESPONSE = dns_wire.QR | dns_wire.RA  # RD is copied from the query


@dataclasses.dataclass(frozen=True)
class Query:
    """One query a stub got. name is lowercased, "." for the root; end is the offset just
    past the question (type and class included)."""
    proto: str  # "udp" or "tcp"
    peer: tuple
    id: int
    flags: int
    name: str
    qtype: int
    packet: bytes
    end: int

    @property
    def port(self):
        return self.peer[1]

    @property
    def question(self):
        return self.packet[12:self.end]

    @property
    def labels(self):
        return [] if self.name == "." else self.name.split(".")


def parse_query(packet, proto, peer):
    qid, flags = struct.unpack("!HH", packet[:4])
    name, qtype, end = dns_wire.parse_question(packet)
    return Query(proto, peer, qid, flags, name, qtype, packet, end)


def reply(query, *, rcode=dns_wire.NOERROR, answers=(), authority=(), flags=None, qid=None,
          question=None):
    """The reply to `query`: its question (or `question`) with these records; flags
    default to a recursive server's response (QR, RA, the query's RD)."""
    if flags is None:
        flags = RESPONSE | (query.flags & dns_wire.RD) | rcode
    header = struct.pack("!HHHHHH", query.id if qid is None else qid, flags, 1, len(answers),
                         len(authority), 0)
    return header + (query.question if question is None else question) + b"".join(answers) + \
        b"".join(authority)


def own_address(stub, query):
    """The default answer: an A question gets the stub's own address (TTL 60), any other
    type an empty NOERROR."""
    return reply(query, answers=[dns_wire.a_record(stub.address)]
                 if query.qtype == dns_wire.TYPE_A else [])


# ---- the server --------------------------------------------------------------


class Stub:
    """A fake DNS server on address:port inside network namespace `ns`; see the module
    comment. Bound when the constructor returns (the daemon's loop probes go out once, at
    its start)."""

    def __init__(self, ns, address, answer=own_address, *, port=53, tcp=False, rcvbuf=None,
                 silent=False):
        self.ns, self.address, self.answer = ns, address, answer
        self.silent = silent
        self.delay = 0.0
        self.errors = []
        self._lock = threading.Lock()
        self._queries = []
        self._held = None
        self._closed = threading.Event()
        self._threads = []
        self.udp = network_namespace.socket_in(ns, socket.AF_INET, socket.SOCK_DGRAM)
        if rcvbuf:
            self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.udp.bind((address, port))
        self.udp.settimeout(0.1)
        self._other = None
        self._tcp = None
        self._start(self._serve_udp)
        if tcp:
            self._tcp = network_namespace.socket_in(ns, socket.AF_INET, socket.SOCK_STREAM)
            self._tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._tcp.bind((address, port))
            self._tcp.listen(16)
            self._tcp.settimeout(0.1)
            self._start(self._serve_tcp)

    # ---- what the tests read and switch

    def queries_seen(self, *, probes=False):
        """Every query so far, in order; the forwarder's loop probes only when `probes`."""
        with self._lock:
            seen = list(self._queries)
        return seen if probes else [q for q in seen if not q.name.startswith(PROBE_PREFIX)]

    def names(self, *, qtype=None, probes=False):
        """The names asked (of type `qtype` only, when given), in order."""
        return [q.name for q in self.queries_seen(probes=probes)
                if qtype is None or q.qtype == qtype]

    def hold(self):
        """From now on replies are queued until release()."""
        with self._lock:
            self._held = []

    def release(self):
        """Sends the queued replies and stops queueing."""
        with self._lock:
            held, self._held = self._held or [], None
        for query in held:
            self._respond(query, None)

    def send(self, packet, peer):
        """A datagram from the stub's own address and port."""
        self.udp.sendto(packet, peer)

    def send_from_another_port(self, packet, peer):
        if self._other is None:
            self._other = network_namespace.socket_in(self.ns, socket.AF_INET, socket.SOCK_DGRAM)
            self._other.bind((self.address, 0))
        self._other.sendto(packet, peer)

    def close(self):
        """Stops serving; fails when a serving thread met an error."""
        self._closed.set()
        for thread in self._threads:
            thread.join(timeout=10)
        for sock in (self.udp, self._tcp, self._other):
            if sock is not None:
                sock.close()
        assert not self.errors, f"stub {self.address}: {self.errors}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- serving

    def _start(self, target, *args):
        thread = threading.Thread(target=self._guarded, args=(target, *args), daemon=True,
                                  name=f"stub {self.address}")
        self._threads.append(thread)
        thread.start()

    def _guarded(self, target, *args):
        try:
            target(*args)
        except Exception as exc:  # recorded: no exception leaves a serving thread
            if not self._closed.is_set():
                self.errors.append(repr(exc))

    def _take(self, packet, proto, peer):
        """Logs the query; returns it, or None when it is held or not to be answered."""
        query = parse_query(packet, proto, peer)
        with self._lock:
            self._queries.append(query)
            if self._held is not None and not self.silent:
                self._held.append(query)
                return None
        return None if self.silent else query

    def _respond(self, query, connection):
        if self.delay:
            time.sleep(self.delay)
        packet = self.answer(self, query)
        if packet is None:
            return False
        if connection is None:
            self.udp.sendto(packet, query.peer)
        else:
            connection.sendall(struct.pack("!H", len(packet)) + packet)
        return True

    def _serve_udp(self):
        while not self._closed.is_set():
            try:
                packet, peer = self.udp.recvfrom(65535)
            except socket.timeout:
                continue
            query = self._take(packet, "udp", peer)
            if query is not None:
                self._respond(query, None)

    def _serve_tcp(self):
        while not self._closed.is_set():
            try:
                connection, peer = self._tcp.accept()
            except socket.timeout:
                continue
            self._start(self._serve_connection, connection, peer)

    def _serve_connection(self, connection, peer):
        """Queries one after another on one connection (pipelined ones too); closed when
        the client closes it or a query gets no reply."""
        connection.settimeout(None)
        with connection:
            while not self._closed.is_set():
                head = connection.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return
                length, = struct.unpack("!H", head)
                packet = connection.recv(length, socket.MSG_WAITALL)
                if len(packet) < length:
                    return
                query = self._take(packet, "tcp", peer)
                if query is None or not self._respond(query, connection):
                    return


def relay(to=("127.0.0.1", 53), *, timeout=3.0, special_names=()):
    """An answer function that forwards each UDP query to `to` (from a fresh socket in the
    stub's namespace, on a thread of its own) and sends the reply back; questions under
    a top-level label of `special_names` get NXDOMAIN at once (RFC 6761, as
    systemd-resolved and unbound answer them)."""
    def answer(stub, query):
        if query.labels and query.labels[-1] in special_names:
            return reply(query, rcode=dns_wire.NXDOMAIN)
        threading.Thread(target=_forward, args=(stub, query, to, timeout), daemon=True).start()
        return None
    return answer


def _forward(stub, query, to, timeout):
    up = network_namespace.socket_in(stub.ns, socket.AF_INET, socket.SOCK_DGRAM)
    up.settimeout(timeout)
    try:
        up.sendto(query.packet, to)
        stub.send(up.recv(65535), query.peer)
    except OSError:
        pass  # no answer: the asker times out, as through a real relay
    finally:
        up.close()
