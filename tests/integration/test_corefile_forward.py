"""The Corefile's `forward` options (issue 9, point 2), one test each: policy,
max_concurrent, health_check, force_tcp, prefer_udp, the client's protocol
(CoreDNS's default) and except, with the per-upstream metrics on :9153.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`). The fake upstreams (dns_stub) listen on its loopback
(127.0.0.2 and up, UDP and TCP port 53), each answering every A question
with its own address and logging protocol, type and name per query; a
silent one answers nothing.
"""
import json
import subprocess
import time

import pytest

from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import in_ns, run_in
from probes import curl, sample, wait_for

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

@pytest.fixture
def daemon(switchboard_bin, netns, dns_stubs, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(COREFILE)
    stubs = {address: dns_stubs(netns, address, tcp=True) for address in UPSTREAMS}
    processes = []
    try:
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        wait_for(lambda: ask(netns, "ready.client.example")[0] == "NOERROR",
                 f"DNS serving; log: {log_path}")
        yield netns, stubs
    finally:
        stop_processes(processes)


def ask(namespace, name, *flags, timeout=5):
    """(status, answers) of one query to the daemon; status "" when none came."""
    result = run_in(namespace, "dig", f"+time={timeout}", "+tries=1", "@127.0.0.1", *flags,
                    name)
    status = ""
    for line in result.stdout.splitlines():
        if "status: " in line:
            status = line.split("status: ")[1].split(",")[0]
    answers = [line.split()[-1] for line in result.stdout.splitlines()
               if line and not line.startswith(";") and "\tA\t" in line]
    return status, answers


def queries(stubs, address):
    """(proto, type, name) of every query `address` got, loop probes left out."""
    return [(q.proto, str(q.qtype), q.name) for q in stubs[address].queries_seen()]


def names(stubs, address):
    return stubs[address].names(qtype=1)


def metrics(netns):
    status, text = curl(netns, "http://127.0.0.1:9153/metrics")
    assert status == 200
    return text


def test_policy_round_robin_takes_the_upstreams_in_turn(daemon):
    netns, stubs = daemon
    got = [ask(netns, f"rr{i}.example.com")[1] for i in range(4)]
    # CoreDNS's round_robin: the first query's turn is the second upstream.
    assert got == [["127.0.0.3"], ["127.0.0.2"], ["127.0.0.3"], ["127.0.0.2"]]


def test_policy_sequential_always_asks_the_first(daemon):
    netns, stubs = daemon
    for i in range(4):
        assert ask(netns, f"s{i}.sequential.example")[1] == ["127.0.0.5"]
    assert names(stubs, "127.0.0.6") == []


def test_except_is_not_forwarded_and_answers_servfail(daemon):
    netns, stubs = daemon
    assert ask(netns, "www.blocked.example")[0] == "SERVFAIL"
    assert ask(netns, "www.example.com")[0] == "NOERROR"
    asked = names(stubs, "127.0.0.2") + names(stubs, "127.0.0.3")
    assert "www.example.com" in asked
    assert not [name for name in asked if name.endswith("blocked.example")]


def test_force_tcp_asks_over_tcp_for_a_udp_client(daemon):
    netns, stubs = daemon
    assert ask(netns, "a.tcp.example")[1] == ["127.0.0.4"]
    assert [q for q in queries(stubs, "127.0.0.4") if q[2] == "a.tcp.example"] == [
        ("tcp", "1", "a.tcp.example")]


def test_prefer_udp_asks_over_udp_for_a_tcp_client(daemon):
    netns, stubs = daemon
    assert ask(netns, "a.udp.example", "+tcp")[1] == ["127.0.0.7"]
    assert [q for q in queries(stubs, "127.0.0.7") if q[2] == "a.udp.example"] == [
        ("udp", "1", "a.udp.example")]


def test_by_default_the_clients_protocol_is_asked(daemon):
    netns, stubs = daemon
    assert ask(netns, "t.client.example", "+tcp")[1] == ["127.0.0.8"]
    assert ask(netns, "u.client.example")[1] == ["127.0.0.8"]
    got = {q[2]: q[0] for q in queries(stubs, "127.0.0.8")}
    assert got["t.client.example"] == "tcp"
    assert got["u.client.example"] == "udp"


def test_max_concurrent_refuses_what_is_over_the_limit(daemon):
    netns, stubs = daemon
    stubs["127.0.0.9"].silent = True
    held = subprocess.Popen(
        in_ns(netns, ["dig", "+time=8", "+tries=1", "@127.0.0.1", "held.limited.example"]),
        stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "held.limited.example" in names(stubs, "127.0.0.9"),
                 "the first query in flight at the upstream")
        assert ask(netns, "over.limited.example")[0] == "REFUSED"
        assert "over.limited.example" not in names(stubs, "127.0.0.9")
        assert sample(metrics(netns), "coredns_forward_max_concurrent_rejects_total") == 1
    finally:
        held.kill()
        held.wait(timeout=30)


def test_health_check_marks_a_silent_upstream_down_and_brings_it_back(daemon):
    netns, stubs = daemon
    stubs["127.0.0.10"].silent = True
    # The first upstream times out: the second answers, probing starts.
    assert ask(netns, "a.health.example", timeout=8)[1] == ["127.0.0.11"]
    failures = 'coredns_forward_healthcheck_failures_total{to="127.0.0.10:53"}'
    wait_for(lambda: failures in metrics(netns) and sample(metrics(netns), failures) >= 3,
             "three failed health probes")
    probes = [q for q in queries(stubs, "127.0.0.10") if q[1:] == ("2", ".")]
    assert len(probes) >= 3  # `. IN NS`
    text = metrics(netns)
    assert sample(text, 'coredns_proxy_healthcheck_failures_total{proxy_name="forward",'
                        'to="127.0.0.10:53"}') >= 3
    # Down: skipped although first in sequence.
    assert ask(netns, "b.health.example", timeout=2)[1] == ["127.0.0.11"]
    assert "b.health.example" not in names(stubs, "127.0.0.10")
    # Answering again: a probe brings it back, and it is first again.
    stubs["127.0.0.10"].silent = False
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
