"""The Corefile's `forward` options (issue 9, point 2), one test each: policy,
max_concurrent, health_check, force_tcp, prefer_udp, the client's protocol
(CoreDNS's default) and except, with the per-upstream metrics on :9153.

Root: the daemon programs nftables, so it runs in a plain network namespace
this module creates and deletes. The fake upstreams listen on its loopback
(127.0.0.2 and up, UDP and TCP port 53), each answering every A question
with its own address and logging "PROTO TYPE NAME" per query; one with a
"<log>.silent" file beside its log answers nothing.
"""
import json
import subprocess
import sys
import time

import pytest

from test_coredns_endpoints import CLUSTER, curl, sample
from test_daemon import netns, netns_exec, wait_for  # noqa: F401 (netns is a fixture)
from test_dns_stub import (PROBE_PREFIX, start_corefile_daemon, start_fake_upstreams,
                           stop_processes)

COREFILE = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa
    prometheus 127.0.0.1:9153
    forward tcp.example 127.0.0.4 {
        force_tcp
    }
    forward . 127.0.0.2 127.0.0.3 {
        policy round_robin
        except blocked.example
    }
}
sequential.example {
    forward . 127.0.0.5 127.0.0.6 {
        policy sequential
    }
}
udp.example {
    forward . 127.0.0.7 {
        prefer_udp
    }
}
client.example {
    forward . 127.0.0.8
}
limited.example {
    forward . 127.0.0.9 {
        max_concurrent 1
    }
}
health.example {
    forward . 127.0.0.10 127.0.0.11 {
        policy sequential
        health_check 100ms
    }
}
"""

UPSTREAMS = [f"127.0.0.{i}" for i in range(2, 12)]

FAKE_UPSTREAM = r'''
import os, socket, struct, sys, threading
addr, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
lock = threading.Lock()

def answer(query, proto):
    qid, flags = struct.unpack("!HH", query[:4])
    labels, pos = [], 12
    while query[pos]:
        n = query[pos]; labels.append(query[pos + 1:pos + 1 + n].decode()); pos += n + 1
    pos += 1
    qtype, = struct.unpack("!H", query[pos:pos + 2])
    with lock:
        log.write(f"{proto} {qtype} {'.'.join(labels).lower() or '.'}\n")
    if os.path.exists(log_path + ".silent"):
        return None
    records = []
    if qtype == 1:
        records.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr))
    header = struct.pack("!HHHHHH", qid, 0x8180 | (flags & 0x0100), 1, len(records), 0, 0)
    return header + query[12:pos + 4] + b"".join(records)

def serve_tcp(listener):
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                length = struct.unpack("!H", conn.recv(2, socket.MSG_WAITALL))[0]
                reply = answer(conn.recv(length, socket.MSG_WAITALL), "tcp")
                if reply:
                    conn.sendall(struct.pack("!H", len(reply)) + reply)
            except (OSError, struct.error):
                pass

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((addr, 53))
listener.listen(16)
threading.Thread(target=serve_tcp, args=(listener,), daemon=True).start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
print("listening", flush=True)
while True:
    query, peer = s.recvfrom(4096)
    reply = answer(query, "udp")
    if reply:
        s.sendto(reply, peer)
'''



@pytest.fixture
def daemon(switchboard_bin, netns, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    (tmp_path / "Corefile").write_text(COREFILE)
    processes = []
    try:
        start_fake_upstreams(netns, tmp_path, UPSTREAMS, processes, script=FAKE_UPSTREAM)
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        wait_for(lambda: ask(netns, "ready.client.example")[0] == "NOERROR",
                 f"DNS serving; log: {log_path}")
        yield netns, tmp_path
    finally:
        stop_processes(processes)


def ask(namespace, name, *flags, timeout=5):
    """(status, answers) of one query to the daemon; status "" when none came."""
    result = netns_exec(namespace, "dig", f"+time={timeout}", "+tries=1", "@127.0.0.1", *flags,
                        name)
    status = ""
    for line in result.stdout.splitlines():
        if "status: " in line:
            status = line.split("status: ")[1].split(",")[0]
    answers = [line.split()[-1] for line in result.stdout.splitlines()
               if line and not line.startswith(";") and "\tA\t" in line]
    return status, answers


def queries(tmp_path, address):
    """(proto, type, name) of every query `address` got, loop probes left out."""
    path = tmp_path / f"{address}.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [tuple(line.split()) for line in lines
            if not line.split()[-1].startswith(PROBE_PREFIX)]


def names(tmp_path, address):
    return [name for _, qtype, name in queries(tmp_path, address) if qtype == "1"]


def metrics(netns):
    status, text = curl(netns, "http://127.0.0.1:9153/metrics")
    assert status == 200
    return text


def test_policy_round_robin_takes_the_upstreams_in_turn(daemon):
    netns, tmp_path = daemon
    got = [ask(netns, f"rr{i}.example.com")[1] for i in range(4)]
    # CoreDNS's round_robin: the first query's turn is the second upstream.
    assert got == [["127.0.0.3"], ["127.0.0.2"], ["127.0.0.3"], ["127.0.0.2"]]


def test_policy_sequential_always_asks_the_first(daemon):
    netns, tmp_path = daemon
    for i in range(4):
        assert ask(netns, f"s{i}.sequential.example")[1] == ["127.0.0.5"]
    assert names(tmp_path, "127.0.0.6") == []


def test_except_is_not_forwarded_and_answers_servfail(daemon):
    netns, tmp_path = daemon
    assert ask(netns, "www.blocked.example")[0] == "SERVFAIL"
    assert ask(netns, "www.example.com")[0] == "NOERROR"
    asked = names(tmp_path, "127.0.0.2") + names(tmp_path, "127.0.0.3")
    assert "www.example.com" in asked
    assert not [name for name in asked if name.endswith("blocked.example")]


def test_force_tcp_asks_over_tcp_for_a_udp_client(daemon):
    netns, tmp_path = daemon
    assert ask(netns, "a.tcp.example")[1] == ["127.0.0.4"]
    assert [q for q in queries(tmp_path, "127.0.0.4") if q[2] == "a.tcp.example"] == [
        ("tcp", "1", "a.tcp.example")]


def test_prefer_udp_asks_over_udp_for_a_tcp_client(daemon):
    netns, tmp_path = daemon
    assert ask(netns, "a.udp.example", "+tcp")[1] == ["127.0.0.7"]
    assert [q for q in queries(tmp_path, "127.0.0.7") if q[2] == "a.udp.example"] == [
        ("udp", "1", "a.udp.example")]


def test_by_default_the_clients_protocol_is_asked(daemon):
    netns, tmp_path = daemon
    assert ask(netns, "t.client.example", "+tcp")[1] == ["127.0.0.8"]
    assert ask(netns, "u.client.example")[1] == ["127.0.0.8"]
    got = {q[2]: q[0] for q in queries(tmp_path, "127.0.0.8")}
    assert got["t.client.example"] == "tcp"
    assert got["u.client.example"] == "udp"


def test_max_concurrent_refuses_what_is_over_the_limit(daemon):
    netns, tmp_path = daemon
    (tmp_path / "127.0.0.9.log.silent").touch()
    held = subprocess.Popen(
        ["ip", "netns", "exec", netns, "dig", "+time=8", "+tries=1", "@127.0.0.1",
         "held.limited.example"], stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "held.limited.example" in names(tmp_path, "127.0.0.9"),
                 "the first query in flight at the upstream")
        assert ask(netns, "over.limited.example")[0] == "REFUSED"
        assert "over.limited.example" not in names(tmp_path, "127.0.0.9")
        assert sample(metrics(netns), "coredns_forward_max_concurrent_rejects_total") == 1
    finally:
        held.kill()
        held.wait(timeout=30)


def test_health_check_marks_a_silent_upstream_down_and_brings_it_back(daemon):
    netns, tmp_path = daemon
    silent = tmp_path / "127.0.0.10.log.silent"
    silent.touch()
    # The first upstream times out: the second answers, probing starts.
    assert ask(netns, "a.health.example", timeout=8)[1] == ["127.0.0.11"]
    failures = 'coredns_forward_healthcheck_failures_total{to="127.0.0.10:53"}'
    wait_for(lambda: failures in metrics(netns) and sample(metrics(netns), failures) >= 3,
             "three failed health probes")
    probes = [q for q in queries(tmp_path, "127.0.0.10") if q[1:] == ("2", ".")]
    assert len(probes) >= 3  # `. IN NS`
    text = metrics(netns)
    assert sample(text, 'coredns_proxy_healthcheck_failures_total{proxy_name="forward",'
                        'to="127.0.0.10:53"}') >= 3
    # Down: skipped although first in sequence.
    assert ask(netns, "b.health.example", timeout=2)[1] == ["127.0.0.11"]
    assert "b.health.example" not in names(tmp_path, "127.0.0.10")
    # Answering again: a probe brings it back, and it is first again.
    silent.unlink()
    deadline = time.monotonic() + 20
    i = 0
    while ask(netns, f"c{i}.health.example")[1] != ["127.0.0.10"]:
        assert time.monotonic() < deadline, "the upstream never came back"
        time.sleep(0.1)
        i += 1
    text = metrics(netns)
    assert sample(text, 'coredns_forward_responses_total{rcode="NOERROR",to="127.0.0.11:53"}') >= 2
    assert 'coredns_forward_request_duration_seconds_bucket{to="127.0.0.10:53",rcode="NOERROR",' \
           'le="0.00025"}' in text
    assert 'coredns_proxy_request_duration_seconds_count{proxy_name="forward",' \
           'to="127.0.0.10:53",rcode="NOERROR"}' in text
