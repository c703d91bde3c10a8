#!/usr/bin/python3
"""kernel_probe: a process, started in the daemon's network namespace, that
tells when the kernel has an endpoint (tests/bench/api_daemon.py's DaemonRun
runs it for bench-daemon-api and bench-scale).

"The kernel has endpoint A": the switchboard table's set hairpin4 holds the
pair (A . A), which the daemon commits in the batch that puts A in backends4
(docs/nftables.md). The probe asks for that element with one netlink request
(NFT_MSG_GETSETELEM) and subscribes to nothing: while anyone listens to
nftables' notifications, the kernel builds one for each element a transaction
touches and holds them all until its commit ends, and a full sync refills
every set (docs/scale.md: 4.9 GB more memory for one full sync at 10k Services,
and 2.7x its time). It asks every PAUSE s (0.2 ms) and answers with the time
of the first reply that had the element: the kernel committed it between the
request before and that reply, so a reading is late by one pause (Python's
sleep wakes a little after it) and a round trip (about 30 us), never early.
It does not ask back to back: on a 2-core machine a probe spinning one core
left the daemon's watch, sync and DNS threads one core between them, and the
changes that waited for the next 4 ms scheduler tick made the tail
(docs/scale.md, "How it observes"). A process of its own, so that its timing
does not wait for the benchmark's Python threads (the fake API server's) to
give up the interpreter lock; time.monotonic() is CLOCK_MONOTONIC, the same
clock in every process.

Protocol, a line each way: "wait ADDRESS SECONDS" -> "TIME" or "-" (not by
then); "count ADDRESS..." -> how many the kernel has now. It prints "ready"
first, or "error: WHY" and exits when the table has no such set.
Standard library only.
"""
import errno
import os
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_GETSET, NFT_MSG_GETSETELEM = 10, 13
NFPROTO_INET = 1
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NLA_F_NESTED = 0x8000
TABLE, SET = b"switchboard\0", b"hairpin4\0"
PAUSE = 0.0002


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


class Probe:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.settimeout(2)
        self.seq = 0

    def ask(self, message, attributes):
        """True when the kernel answers the request, False when it has no such object."""
        self.seq += 1
        body = struct.pack("=BBH", NFPROTO_INET, 0, 0) + attributes
        self.sock.send(struct.pack("=IHHII", 16 + len(body), NFNL_SUBSYS_NFTABLES << 8 | message,
                                   NLM_F_REQUEST, self.seq, 0) + body)
        while True:
            reply = self.sock.recv(1 << 16)
            kind, _, seq = struct.unpack_from("=HHI", reply, 4)
            if seq != self.seq:
                continue  # the answer to a request given up on
            if kind != NLMSG_ERROR:
                return True
            error = -struct.unpack_from("=i", reply, 16)[0]
            if error == errno.ENOENT:
                return False
            raise OSError(error, f"nftables request {message}: {os.strerror(error)}")

    def has_set(self):
        return self.ask(NFT_MSG_GETSET, attribute(1, TABLE) + attribute(2, SET))

    def has(self, address):
        packed = socket.inet_aton(address)
        element = attribute(NLA_F_NESTED | 1, attribute(NLA_F_NESTED | 1, attribute(
            1, packed + packed)))
        return self.ask(NFT_MSG_GETSETELEM, attribute(1, TABLE) + attribute(2, SET)
                        + attribute(NLA_F_NESTED | 3, element))

    def wait(self, address, seconds):
        """The time of the first reply that had `address`; None when none had
        it within `seconds`."""
        start = time.monotonic()
        while True:
            found = self.has(address)
            answered = time.monotonic()
            if found:
                return answered
            if answered - start >= seconds:
                return None
            time.sleep(PAUSE)


def main():
    probe = Probe()
    if not probe.has_set():
        print("error: no set inet switchboard hairpin4 to probe", flush=True)
        return
    print("ready", flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        if command == "wait":
            at = probe.wait(args[0], float(args[1]))
            print("-" if at is None else repr(at), flush=True)
        elif command == "count":
            print(sum(probe.has(address) for address in args), flush=True)


if __name__ == "__main__":
    main()
