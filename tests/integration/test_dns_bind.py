"""DNS fails alone (issue 9, point 4): a DNS listen address that cannot be
bound at start does not stop the proxy, and DNS comes up once it can.

Root: a netbed node (node-a) with a web pod and a client pod; switchboard
runs in the node namespace (nftables) with --dns-listen on an address that
is taken by another process or missing from the node, or (the converse)
while every rule sync fails. `dig` asks from the client pod or the node.
"""
import re
import subprocess

import pytest

import netbed
import network_namespace
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint
from probes import wait_for

CLUSTER_IP = "10.96.0.10"
NOT_YET_ON_NODE = "169.254.20.10"  # NodeLocal DNSCache's address

# Holds UDP and TCP on ADDR:PORT (no SO_REUSEPORT, so nobody else can bind
# them) until its stdin closes.
HOLDER = r'''
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind((host, port))
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.bind((host, port))
tcp.listen(1)
print("ready", flush=True)
sys.stdin.read()
'''


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed({"node-a": ["web-1", "client"]}).up()
    try:
        bed.start_servers(tcp=[8080], udp=[], pods=["web-1"])
        yield bed
    finally:
        bed.down()


@pytest.fixture
def daemons(bed, switchboard_bin):
    started = []

    def start(dns_address, *, wait=True):
        daemon = netbed.Switchboard(bed, switchboard_bin, "nftables", extra_args=[
            f"--dns-listen={dns_address}:53",
            # A closed port: only cluster names are asked here.
            "--dns-upstream=127.0.0.1:9",
        ])
        daemon.set_cluster(web_service(bed))
        started.append(daemon)
        return daemon.start(wait=wait)

    yield start
    for daemon in started:
        daemon.close()


def web_service(bed):
    """web (ClusterIP) and its headless twin web-pods, both with the web-1 Pod."""
    return [
        service("web", [CLUSTER_IP], [service_port(80, name="http", target=8080)]),
        endpoint_slice("web", [pod_endpoint(bed.pods["web-1"])], [("http", 8080, "TCP")]),
        service("web-pods", [], [service_port(80, name="http", target=8080)]),
        endpoint_slice("web-pods", [pod_endpoint(bed.pods["web-1"])], [("http", 8080, "TCP")]),
    ]


def dig(bed, who, server, *options, name="web.default.svc.cluster.local"):
    """The A records dig gets for `name`, the web Service's by default (empty when none)."""
    argv = ["dig", f"@{server}", name, "A", "+short", "+time=1", "+tries=1", *options]
    proc = network_namespace.run(network_namespace.in_ns(bed.ns_of(who), argv), check=False)
    return proc.stdout.split() if proc.returncode == 0 else []


def metric(daemon, series):
    _, body = daemon.http_get(daemon.METRICS, "/metrics")
    for line in (body or "").splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


def failures(daemon, proto, address):
    return metric(daemon, f'switchboard_dns_bind_failures_total{{proto="{proto}",'
                          f'address="{address}:53"}}') or 0


def assert_proxy_programmed(bed, daemon):
    assert daemon.running(), daemon.log_tail()
    (answer,) = bed.probe("client", CLUSTER_IP, 80)
    assert answer.ok and answer.pod == "web-1", answer


def test_taken_dns_address_does_not_stop_the_proxy_and_is_retried(bed, daemons):
    node = bed.nodes["node-a"]
    dns = node.bridge4  # the pods' gateway: the client pod can reach it
    holder = subprocess.Popen(
        network_namespace.in_ns(node.ns, [netbed.PYTHON, "-c", HOLDER, dns, "53"]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        daemon = daemons(dns)  # returns once /readyz is 200: the first sync is done
        assert_proxy_programmed(bed, daemon)

        status, body = daemon.http_get(daemon.METRICS, "/debug/dns")
        assert status == 503, body
        assert f"udp {dns}:53 not serving" in body and f"tcp {dns}:53 not serving" in body
        assert "Address already in use" in body
        # Retried and counted, but logged once per listener.
        wait_for(lambda: failures(daemon, "udp", dns) >= 2 and failures(daemon, "tcp", dns) >= 2,
                 "two failed binds of each listener")
        assert metric(daemon, f'switchboard_dns_listener_up{{proto="udp",address="{dns}:53"}}') == 0
        log = daemon.log_path.read_text()
        assert len(re.findall(rf"\[warning\] dns: UDP bind {re.escape(dns)}:53", log)) == 1, log
        assert len(re.findall(rf"\[warning\] dns: TCP bind {re.escape(dns)}:53", log)) == 1, log
        assert dig(bed, "client", dns) == []
        assert daemon.http_get(daemon.METRICS, "/readyz")[0] == 200
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)

    assert wait_for(lambda: dig(bed, "client", dns), "DNS once the holder is gone") == [CLUSTER_IP]
    assert dig(bed, "client", dns, "+tcp") == [CLUSTER_IP]
    assert daemon.http_get(daemon.METRICS, "/debug/dns")[0] == 200
    assert metric(daemon, f'switchboard_dns_listener_up{{proto="tcp",address="{dns}:53"}}') == 1
    assert "serving after" in daemon.log_path.read_text()
    assert_proxy_programmed(bed, daemon)


def test_dns_address_added_to_the_node_later_comes_up(bed, daemons):
    node = bed.nodes["node-a"]
    daemon = daemons(NOT_YET_ON_NODE)
    try:
        assert_proxy_programmed(bed, daemon)
        status, body = daemon.http_get(daemon.METRICS, "/debug/dns")
        assert status == 503, body
        assert "Cannot assign requested address" in body
        assert dig(bed, "node-a", NOT_YET_ON_NODE) == []

        network_namespace.run(["ip", "-n", node.ns, "addr", "add", f"{NOT_YET_ON_NODE}/32", "dev", "lo"])
        assert wait_for(lambda: dig(bed, "node-a", NOT_YET_ON_NODE),
                        "DNS once the address is on the node") == [CLUSTER_IP]
        assert dig(bed, "node-a", NOT_YET_ON_NODE, "+tcp") == [CLUSTER_IP]
        assert daemon.http_get(daemon.METRICS, "/debug/dns")[0] == 200
        assert_proxy_programmed(bed, daemon)
    finally:
        network_namespace.run(["ip", "-n", node.ns, "addr", "del", f"{NOT_YET_ON_NODE}/32", "dev", "lo"],
                   check=False)


def test_failing_rule_syncs_do_not_stop_dns(bed, daemons):
    """The converse: while every sync fails, DNS answers from the Store what
    needs no rules (a headless Service), and a ClusterIP Service's name only
    once its rules are in (issue 13: names are published after programming)."""
    node = bed.nodes["node-a"]
    # A table of the daemon's name owned by another process (nft's `owner`
    # flag): every change the daemon makes to it is refused with EPERM. The
    # kernel drops the table when the owner's netlink socket closes.
    owner = subprocess.Popen(network_namespace.in_ns(node.ns, ["nft", "-i"]), stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        owner.stdin.write("add table inet switchboard { flags owner; }\n")
        owner.stdin.flush()
        wait_for(lambda: "inet switchboard" in " ".join(node_tables(bed)), "the owned table")
        daemon = daemons(node.bridge4, wait=False)
        headless = "web-pods.default.svc.cluster.local"
        pod = bed.pods["web-1"].ipv4
        assert wait_for(lambda: dig(bed, "client", node.bridge4, name=headless),
                        "DNS while syncs fail") == [pod]
        wait_for(lambda: (metric(daemon, "switchboard_sync_errors_total") or 0) >= 2,
                 "two failed syncs")
        assert daemon.running(), daemon.log_tail()
        assert daemon.http_get(daemon.METRICS, "/readyz")[0] == 503
        assert daemon.http_get(daemon.METRICS, "/debug/dns")[0] == 200
        assert dig(bed, "client", node.bridge4, "+tcp", name=headless) == [pod]
        assert dig(bed, "client", node.bridge4) == []  # no rules, no name
    finally:
        owner.stdin.close()
        owner.wait(timeout=10)
    # The table's owner is gone: the next retry (backoff 1 s, 2 s, 4 s...)
    # programs the rules.
    wait_for(lambda: daemon.http_get(daemon.METRICS, "/readyz")[0] == 200, "/readyz 200",
             timeout=60)
    assert_proxy_programmed(bed, daemon)
    assert dig(bed, "client", node.bridge4) == [CLUSTER_IP]


def node_tables(bed):
    proc = network_namespace.run(network_namespace.in_ns(bed.nodes["node-a"].ns, ["nft", "list", "tables"]))
    return proc.stdout.splitlines()
