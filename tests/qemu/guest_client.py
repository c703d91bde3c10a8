#!/usr/bin/python3
"""The IPVS scenarios' client, run in the qemu guest (python3 -S -I) in a
client namespace or on the node. Talks to podserver.py, which greets each
TCP connection (and answers each UDP datagram) with a JSON line naming the
Pod and the client address it saw, and echoes what a held connection sends.

    guest_client.py probe HOST PORT [--udp] [--count N] [--source ADDR]...
        N fresh connections (UDP: a new socket each) from each source in
        turn; one line per attempt: "SOURCE POD CLIENT", or "SOURCE !ERROR -"
        (ERROR: ECONNREFUSED, timeout, ...). SOURCE is "-" for the kernel's
        choice, CLIENT the address the Pod saw.
    guest_client.py hold HOST PORT --commands FILE
        Follows FILE (appended to by the scenario's shell): "open" opens one
        more connection and prints "open I POD"; "ping" sends a line on every
        open connection and prints "ping I POD" per echo or "ping I !ERROR";
        "close I" closes connection I and prints "closed I"; "reset I" closes
        it with a reset (SO_LINGER 0) and prints "reset I"; "quit" ends.
        Each output line is flushed at once, so the shell can wait for it.
    guest_client.py loop HOST PORT --stop-file FILE
        Connects every --interval seconds until FILE exists: a line per
        attempt ("ok POD" or "!ERROR SECONDS", the monotonic clock), then
        "loop OK FAILED".

Standard library only, nothing imported by a computed name (guest.python_for
finds the modules by reading the imports). Single-threaded.
"""
import argparse
import errno
import json
import os
import socket
import struct
import sys
import time


def _error_name(error):
    if isinstance(error, socket.timeout):
        return "timeout"
    return errno.errorcode.get(error.errno, str(error.errno)) if error.errno else type(error).__name__


def _greeting(sock):
    """The Pod's JSON line on a fresh TCP connection."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionResetError(errno.ECONNRESET, "closed before the greeting")
        data += chunk
    return json.loads(data)


def _connect(host, port, timeout, source=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    if source:
        sock.bind((source, 0))
    try:
        sock.connect((host, port))
        return sock, _greeting(sock)
    except BaseException:
        sock.close()
        raise


def _exchange_udp(host, port, timeout, source=None):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        if source:
            sock.bind((source, 0))
        sock.connect((host, port))
        sock.send(b"x")
        return json.loads(sock.recv(2048))


def probe(args):
    for source in args.source or [None]:
        for _ in range(args.count):
            try:
                if args.udp:
                    answer = _exchange_udp(args.host, args.port, args.timeout, source)
                else:
                    sock, answer = _connect(args.host, args.port, args.timeout, source)
                    sock.close()
                print(source or "-", answer["pod"], answer["client"], flush=True)
            except OSError as error:
                print(source or "-", "!" + _error_name(error), "-", flush=True)
    return 0


def _commands(path):
    """The lines appended to PATH, as they come (polled every 50 ms)."""
    offset = 0
    pending = ""
    while True:
        try:
            with open(path) as stream:
                stream.seek(offset)
                text = stream.read()
                offset = stream.tell()
        except FileNotFoundError:
            text = ""
        pending += text
        while "\n" in pending:
            line, pending = pending.split("\n", 1)
            yield line.strip()
        if not text:
            time.sleep(0.05)


def hold(args):
    connections = {}  # index -> socket, in opening order
    for command in _commands(args.commands):
        words = command.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        if words[0] == "open":
            index = len(connections) + 1
            try:
                connections[index], answer = _connect(args.host, args.port, args.timeout)
                print("open", index, answer["pod"], flush=True)
            except OSError as error:
                print("open", index, "!" + _error_name(error), flush=True)
        elif words[0] == "ping":
            for index, sock in connections.items():
                try:
                    sock.sendall(b"ping\n")
                    echo = sock.recv(64)
                    print("ping", index, "echo" if echo == b"ping\n" else f"!{echo!r}", flush=True)
                except OSError as error:
                    print("ping", index, "!" + _error_name(error), flush=True)
        elif words[0] in ("close", "reset"):
            index = int(words[1])
            sock = connections.pop(index)
            if words[0] == "reset":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            print("closed" if words[0] == "close" else "reset", index, flush=True)
        else:
            print("unknown command", command, file=sys.stderr, flush=True)
            return 2
    for sock in connections.values():
        sock.close()
    return 0


def loop(args):
    ok = failed = 0
    while not os.path.exists(args.stop_file):
        try:
            sock, answer = _connect(args.host, args.port, args.timeout)
            sock.close()
            ok += 1
            print("ok", answer["pod"], flush=True)
        except OSError as error:
            failed += 1
            print("!" + _error_name(error), f"{time.monotonic():.2f}", flush=True)
        time.sleep(args.interval)
    print("loop", ok, failed, flush=True)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("probe", "hold", "loop"):
        command = commands.add_parser(name)
        command.add_argument("host")
        command.add_argument("port", type=int)
        command.add_argument("--timeout", type=float, default=2.0)
    commands.choices["probe"].add_argument("--udp", action="store_true")
    commands.choices["probe"].add_argument("--count", type=int, default=1)
    commands.choices["probe"].add_argument("--source", action="append", default=[])
    commands.choices["hold"].add_argument("--commands", required=True)
    commands.choices["loop"].add_argument("--stop-file", required=True)
    commands.choices["loop"].add_argument("--interval", type=float, default=0.05)
    args = parser.parse_args(argv)
    return {"probe": probe, "hold": hold, "loop": loop}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
