"""Unallocated ClusterIPs in nftables mode (issue 27): real packets in namespaces.

With a ServiceCIDR 10.96.0.0/16, kube-proxy's nftables mode drops a new
connection to an address of that range that no Service holds, rejects one to
a ClusterIP on a port the Service does not have, and leaves every other
address alone. To tell a drop by switchboard from the bed's own black hole
(the node's default route leads nowhere), pod-2 answers on two addresses of
its own: 10.96.77.7, inside the ServiceCIDR, and 10.97.77.7, outside it,
each routed to it by node-a. Without a ServiceCIDR both answer.

The ServiceCIDRs come through the file source (a kubectl List), as the
Services do. Every wait is bounded (netbed's probes, `settled`).
"""
import time

import netbed
import pytest
from kube_objects import endpoint_slice, service, service_cidr, service_port
from netbed import pod_endpoint, run

LAYOUT = {"node-a": ["pod-1", "pod-2", "client"]}
INSIDE = "10.96.77.7"  # pod-2's, in the ServiceCIDR, no Service's
OUTSIDE = "10.97.77.7"  # pod-2's, outside every ServiceCIDR
CLUSTER_IP = "10.96.0.10"


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    try:
        pod, node = bed.pods["pod-2"], bed.nodes["node-a"]
        for address in (INSIDE, OUTSIDE):
            run(["ip", "-n", pod.ns, "addr", "add", f"{address}/32", "dev", "eth0"])
            run(["ip", "-n", node.ns, "route", "add", address, "via", pod.ipv4])
        bed.start_servers(tcp=[8080], udp=[])
        yield bed
    finally:
        bed.down()


@pytest.fixture
def proxy(bed, switchboard_bin):
    daemon = netbed.Switchboard(bed, switchboard_bin, "nftables")
    yield daemon
    daemon.close()


def cluster(bed, *cidrs):
    """One Service at CLUSTER_IP (port 80 -> pod-1:8080), and `cidrs` (ServiceCIDR objects)."""
    return [
        service("web", [CLUSTER_IP], [service_port(80, name="p", target=8080)]),
        endpoint_slice("web", [pod_endpoint(bed.pods["pod-1"])], [("p", 8080, "TCP")]),
        *cidrs,
    ]


def answer(bed, who, host, port):
    (reply,) = bed.probe(who, host, port, timeout=0.5)
    return reply.pod if reply.ok else reply.error


def settled(bed, host, port, want, limit=10.0):
    """Probes host:port from the client until the answer is `want` (bounded); returns the last."""
    deadline = time.monotonic() + limit
    got = answer(bed, "client", host, port)
    while got != want and time.monotonic() < deadline:
        got = answer(bed, "client", host, port)
    return got


def test_an_unallocated_address_of_a_service_cidr_is_dropped_and_nothing_else(bed, proxy):
    proxy.set_cluster(cluster(bed))
    proxy.start()
    # No ServiceCIDR known: nothing is dropped, pod-2 answers on both addresses.
    assert answer(bed, "client", INSIDE, 8080) == "pod-2", proxy.log_tail()
    assert answer(bed, "client", OUTSIDE, 8080) == "pod-2"
    # A ClusterIP on a port its Service lacks is rejected whatever the CIDRs.
    assert answer(bed, "client", CLUSTER_IP, 81) == "ECONNREFUSED"

    # A ServiceCIDR, and a bad one beside it (host bits set): the bad one is
    # skipped and counted, the good one applies.
    proxy.set_cluster(cluster(bed, service_cidr("kubernetes", ["10.96.0.0/16", "fd00:10:96::/112"]),
                              service_cidr("broken", ["10.97.0.1/16"])))
    # Dropped: the client sees no answer at all (kube-proxy drops; no RST).
    assert settled(bed, INSIDE, 8080, "timeout") == "timeout", proxy.log_tail()
    assert answer(bed, "node-a", INSIDE, 8080) == "timeout"  # the node's own traffic too
    # The allocated Service still answers; its unknown port is still rejected.
    assert answer(bed, "client", CLUSTER_IP, 80) == "pod-1"
    assert answer(bed, "client", CLUSTER_IP, 81) == "ECONNREFUSED"
    # Outside the ServiceCIDR (and only in the broken object's range): untouched.
    assert answer(bed, "client", OUTSIDE, 8080) == "pod-2"
    assert answer(bed, "client", bed.pods["pod-2"].ipv4, 8080) == "pod-2"
    chain = run(["ip", "netns", "exec", bed.nodes["node-a"].ns, "nft", "list", "chain", "inet",
                 "switchboard", "unallocated-cluster-ips"]).stdout
    assert "ip daddr 10.96.0.0/16 drop" in chain
    assert "ip6 daddr fd00:10:96::/112 drop" in chain
    assert "10.97." not in chain
    status, metrics = proxy.http_get(proxy.METRICS, "/metrics")
    assert status == 200
    assert 'switchboard_source_objects_rejected_total{kind="ServiceCIDR"} 1' in metrics

    # The ServiceCIDR deleted: the drop goes with it.
    proxy.set_cluster(cluster(bed))
    assert settled(bed, INSIDE, 8080, "pod-2") == "pod-2", proxy.log_tail()
    assert answer(bed, "client", CLUSTER_IP, 80) == "pod-1"
