"""The Corefile's `cache` plugin (issue 9, point 2): each server block's
cache with CoreDNS's options (`cache TTL ZONES`, `success`, `denial`,
`serve_stale [D] [immediate|verify]`, `disable`) and its coredns_cache_*
metrics, one test per option.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`); a fake upstream (dns_stub) on its loopback
(127.0.0.2) counts the names it is asked. It answers `nx*` names NXDOMAIN
with an SOA (TTL and minimum 60), `fail*` names SERVFAIL, and every other A
question with 127.0.0.2, TTL 60; while muted it answers nothing.
"""
import json
import re
import time

import pytest

import dns_stub
import dns_wire
from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import run_in
from probes import curl, python_in, wait_for

UPSTREAM = "127.0.0.2"



def by_name(stub, query):
    """nx*: NXDOMAIN with the SOA of the name's top-level zone; fail*: SERVFAIL; any
    other A question: the stub's own address."""
    first = query.labels[0] if query.labels else ""
    if first.startswith("nx"):
        return dns_stub.reply(query, rcode=dns_wire.NXDOMAIN,
                              authority=[dns_wire.soa_record(query.labels[-1])])
    if first.startswith("fail"):
        return dns_stub.reply(query, rcode=dns_wire.SERVFAIL)
    return dns_stub.own_address(stub, query)


# Asks COUNT names PREFIX0.bulk.test ... in turn over one socket; prints how
# many were answered.
BULK = r'''
import socket, sys
import dns_wire
server, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
answered = 0
for i in range(count):
    s.sendto(dns_wire.query(i, f"{prefix}{i}.bulk.test"), (server, 53))
    try:
        while dns_wire.message_id(s.recv(4096)) != i:
            pass
        answered += 1
    except socket.timeout:
        pass
print(answered)
'''


class Node:
    """The daemon with one Corefile in its namespace, and the fake upstream."""

    def __init__(self, netns, upstream, log_path):
        self.netns, self.upstream, self.log_path = netns, upstream, log_path

    def dig(self, name):
        """(status, [(name, ttl, type, rdata)]) of every section."""
        out = run_in(self.netns, "dig", "+time=6", "+tries=1", "@127.0.0.1", name).stdout
        match = re.search(r"status: (\w+)", out)
        records = []
        for line in out.splitlines():
            fields = line.split(None, 4)
            if line and not line.startswith(";") and len(fields) == 5:
                records.append((fields[0], int(fields[1]), fields[3], fields[4]))
        return (match.group(1) if match else None), records

    def asked(self, name):
        return self.upstream.names(probes=True).count(name)

    def metrics(self):
        status, text = curl(self.netns, "http://127.0.0.1:9153/metrics")
        assert status == 200
        return text

    def metric(self, name, **labels):
        """The value of the series `name` with `labels` (server, zones and view included)."""
        labels = {"server": "dns://:53", "zones": ".", "view": "", **labels}
        text = self.metrics()
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            series, value = line.rsplit(" ", 1)
            found = dict(re.findall(r'(\w+)="([^"]*)"', series))
            if found == labels:
                return float(value)
        pytest.fail(f"no {name}{labels} in the metrics; log: {self.log_path}")

    def mute(self, muted):
        self.upstream.silent = muted


@pytest.fixture
def node(switchboard_bin, netns, dns_stubs, tmp_path):
    processes = []

    def start(blocks):
        corefile = (".:53 {\n    bind 127.0.0.1\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n"
                    "    prometheus 127.0.0.1:9153\n    forward . " + UPSTREAM + "\n" + blocks)
        (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
        (tmp_path / "Corefile").write_text(corefile)
        # Bound before the daemon starts: its loop probes go out once, at start.
        upstream = dns_stubs(netns, UPSTREAM, by_name)
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        started = Node(netns, upstream, log_path)
        wait_for(lambda: started.dig("warmup.test")[0] == "NOERROR",
                 f"the daemon answering through the upstream; log: {log_path}")
        return started

    try:
        yield start
    finally:
        stop_processes(processes)


def test_cache_ttl_caps_and_serves_repeats_with_coredns_metrics(node):
    n = node("    cache 30\n}\n")
    status, records = n.dig("www.example.test")
    assert status == "NOERROR"
    assert records == [("www.example.test.", 30, "A", UPSTREAM)]  # upstream said 60
    status, again = n.dig("WWW.example.test")
    assert status == "NOERROR" and again[0][1] <= 30 and again[0][3] == UPSTREAM
    assert n.asked("www.example.test") == 1
    # Cluster names come from memory: never asked upstream, not cache requests.
    assert n.dig("web.default.svc.cluster.local")[1][0][3] == "10.96.0.10"
    assert n.metric("coredns_cache_hits_total", type="success") == 1
    assert n.metric("coredns_cache_hits_total", type="denial") == 0
    assert n.metric("coredns_cache_requests_total") == 3  # warmup, www twice
    assert n.metric("coredns_cache_misses_total") == 2
    assert n.metric("coredns_cache_entries", type="success") == 2
    assert n.metric("coredns_cache_served_stale_total") == 0
    assert n.metric("coredns_cache_evictions_total", type="success") == 0


def test_each_block_has_its_own_cache_and_a_block_without_cache_caches_nothing(node):
    n = node("    cache 30\n}\n"
             "nocache.test:53 {\n    forward . " + UPSTREAM + "\n}\n"
             "zoned.test:53 {\n    forward . " + UPSTREAM + "\n    cache 30 only.zoned.test\n}\n")
    for _ in range(2):
        for name in ("a.nocache.test", "b.zoned.test", "c.only.zoned.test", "d.example.test"):
            assert n.dig(name)[0] == "NOERROR"
    assert n.asked("a.nocache.test") == 2
    assert n.asked("b.zoned.test") == 2  # outside `cache 30 only.zoned.test`'s zones
    assert n.asked("c.only.zoned.test") == 1
    assert n.asked("d.example.test") == 1
    assert n.metric("coredns_cache_hits_total", type="success", zones="only.zoned.test.") == 1
    assert n.metric("coredns_cache_hits_total", type="success") == 1  # the "." block's


def test_success_capacity_ttl_and_minimum(node):
    n = node("    cache {\n        success 1024 20 10\n    }\n}\n")
    assert n.dig("long.example.test")[1][0][1] == 20  # upstream's 60 capped
    # Capacity 1024: 4 per shard of 256, so 1300 names evict at least 276.
    first = python_in(n.netns, BULK, "127.0.0.1", "n", 1300)
    assert first.stdout.strip() == "1300", first.stderr
    entries = n.metric("coredns_cache_entries", type="success")
    evictions = n.metric("coredns_cache_evictions_total", type="success")
    assert entries <= 1024
    assert entries + evictions == 1300 + 2  # warmup.test and long.example.test too
    second = python_in(n.netns, BULK, "127.0.0.1", "n", 1300)
    assert second.stdout.strip() == "1300", second.stderr
    asked_again = sum(n.asked(f"n{i}.bulk.test") == 2 for i in range(1300))
    assert asked_again >= 1300 - 1024
    assert asked_again < 1300  # the kept ones were answered from the cache


def test_success_minimum_ttl_keeps_short_answers(node):
    # A TTL over the upstream's 60 cannot lengthen it: MINTTL raises short
    # ones only, so `success 9984 3600 120` keeps the 60 s answer 120 s.
    n = node("    cache {\n        success 9984 3600 120\n    }\n}\n")
    assert n.dig("short.example.test")[1][0][1] == 120
    assert 60 < n.dig("short.example.test")[1][0][1] <= 120  # from the cache
    assert n.asked("short.example.test") == 1


def test_denial_ttl_and_capacity(node):
    n = node("    cache {\n        denial 1024 7\n    }\n}\n")
    status, records = n.dig("nxname.example.test")
    assert status == "NXDOMAIN"
    assert [(t, ttl) for _, ttl, t, _ in records] == [("SOA", 7)]  # the SOA's 60 capped
    assert n.dig("nxname.example.test")[0] == "NXDOMAIN"
    assert n.asked("nxname.example.test") == 1
    # SERVFAIL is a denial kept CoreDNS's 5 s.
    assert n.dig("failname.example.test")[0] == "SERVFAIL"
    assert n.dig("failname.example.test")[0] == "SERVFAIL"
    assert n.asked("failname.example.test") == 1
    assert n.metric("coredns_cache_hits_total", type="denial") == 2
    assert n.metric("coredns_cache_entries", type="denial") == 2
    first = python_in(n.netns, BULK, "127.0.0.1", "nx", 1300)
    assert first.stdout.strip() == "1300", first.stderr
    entries = n.metric("coredns_cache_entries", type="denial")
    assert entries <= 1024
    assert entries + n.metric("coredns_cache_evictions_total", type="denial") == 1300 + 2


def test_serve_stale_immediate_answers_stale_and_refreshes_in_the_background(node):
    n = node("    cache 3 {\n        serve_stale 1m\n    }\n}\n")
    assert n.dig("stale.example.test")[1][0][1] == 3
    time.sleep(3.2)
    assert n.dig("stale.example.test")[1] == [("stale.example.test.", 0, "A", UPSTREAM)]
    wait_for(lambda: n.asked("stale.example.test") == 2, "the background refresh")
    refreshed = n.dig("stale.example.test")[1][0][1]
    assert refreshed > 0  # the refreshed entry, fresh again
    assert n.asked("stale.example.test") == 2
    # With the upstream silent, the stale answer still comes at once.
    n.mute(True)
    time.sleep(3.2)
    started = time.monotonic()
    assert n.dig("stale.example.test")[1] == [("stale.example.test.", 0, "A", UPSTREAM)]
    assert time.monotonic() - started < 1.0  # not after the forwarder's 1 s attempt timeout
    assert n.metric("coredns_cache_served_stale_total") == 2
    assert n.metric("coredns_cache_prefetch_total") == 2


def test_serve_stale_verify_asks_upstream_first(node):
    n = node("    cache 3 {\n        serve_stale 1m verify\n    }\n}\n")
    assert n.dig("verify.example.test")[1][0][1] == 3
    time.sleep(3.2)
    # The upstream answers: its fresh answer, not the stale one.
    assert n.dig("verify.example.test")[1][0][1] == 3
    assert n.asked("verify.example.test") == 2
    assert n.metric("coredns_cache_served_stale_total") == 0
    # The upstream fails: the stale answer, once it did.
    n.mute(True)
    time.sleep(3.2)
    assert n.dig("verify.example.test")[1] == [("verify.example.test.", 0, "A", UPSTREAM)]
    assert n.asked("verify.example.test") >= 3
    assert n.metric("coredns_cache_served_stale_total") == 1


def test_disable_success_and_denial_by_zone(node):
    n = node("    cache 30 {\n        disable success off.test\n        disable denial\n    }\n}\n")
    for _ in range(2):
        assert n.dig("a.off.test")[0] == "NOERROR"
        assert n.dig("b.on.test")[0] == "NOERROR"
        assert n.dig("nxc.on.test")[0] == "NXDOMAIN"
    assert n.asked("a.off.test") == 2
    assert n.asked("b.on.test") == 1
    assert n.asked("nxc.on.test") == 2
    assert n.metric("coredns_cache_entries", type="denial") == 0
