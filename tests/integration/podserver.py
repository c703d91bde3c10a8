#!/usr/bin/python3
"""A test-bed Pod's server: tells each client who answered and whom it saw.

Run inside a pod namespace (netbed.py starts it with `ip netns exec`):

    podserver.py --name pod-1 --tcp 8080,9090 --udp 5353 --lifetime 900

It listens on [::] (dual stack) on every given TCP and UDP port and prints
"ready" on stdout once every socket is bound, so the harness knows it can
send traffic. Replies are one JSON line:

    {"pod": "pod-1", "client": "10.244.1.1", "client_port": 40312, "port": 8080, "proto": "tcp",
     "address": "10.244.1.11"}

"address" (TCP only) is the address the connection reached: a pod that
answers for many addresses (a local route over a whole prefix, as
tests/bench/bench-soak gives its pods) says which one was dialled.

TCP: the reply is sent as soon as the connection is accepted; afterwards
every line the client sends is echoed back, so a held connection can prove
it still works (daemon-restart scenario). UDP: every datagram is answered.

The process exits by itself after --lifetime seconds, so a harness that
dies without cleaning up leaves nothing running for long. Single-threaded
(one selector loop); replies are small, so blocking sends never stall it.
"""
import argparse
import json
import selectors
import socket
import sys
import time


def _client_ip(address):
    host = address[0]
    # A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6.
    return host[7:] if host.startswith("::ffff:") else host


def _ports(text):
    return [int(port) for port in text.split(",") if port]


def _bind(kind, port):
    sock = socket.socket(socket.AF_INET6, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", port))
    if kind == socket.SOCK_STREAM:
        sock.listen(128)
    sock.setblocking(False)
    return sock


def _reply(name, peer, port, proto, local=None):
    doc = {"pod": name, "client": _client_ip(peer), "client_port": peer[1], "port": port, "proto": proto}
    if local:
        doc["address"] = _client_ip(local)
    return (json.dumps(doc) + "\n").encode()


def serve(name, tcp_ports, udp_ports, lifetime):
    selector = selectors.DefaultSelector()
    for port in tcp_ports:
        selector.register(_bind(socket.SOCK_STREAM, port), selectors.EVENT_READ, ("listen", port))
    for port in udp_ports:
        selector.register(_bind(socket.SOCK_DGRAM, port), selectors.EVENT_READ, ("udp", port))
    print("ready", flush=True)
    deadline = time.monotonic() + lifetime
    while (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(timeout=min(left, 1.0)):
            role, port = key.data
            sock = key.fileobj
            try:
                if role == "listen":
                    conn, peer = sock.accept()
                    conn.sendall(_reply(name, peer, port, "tcp", conn.getsockname()))
                    conn.setblocking(False)
                    selector.register(conn, selectors.EVENT_READ, ("conn", port))
                elif role == "udp":
                    _, peer = sock.recvfrom(2048)
                    sock.sendto(_reply(name, peer, port, "udp"), peer)
                else:
                    data = sock.recv(4096)
                    if data:
                        sock.sendall(data)
                    else:
                        selector.unregister(sock)
                        sock.close()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                # A client reset or vanished: forget that connection only.
                if role == "conn":
                    selector.unregister(sock)
                    sock.close()
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--tcp", type=_ports, default=[])
    parser.add_argument("--udp", type=_ports, default=[])
    parser.add_argument("--lifetime", type=float, default=900.0)
    args = parser.parse_args(argv)
    return serve(args.name, args.tcp, args.udp, args.lifetime)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
