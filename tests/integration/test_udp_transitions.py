"""UDP flows through every endpoint transition, as kube-proxy's conntrack
reconciler handles them (pkg/proxy/conntrack CleanStaleEntries, with
kubernetes#139629 and #141371): docs/nftables.md#udp-conntrack.

UDP has no teardown, so a client sending from one fixed source port keeps
one conntrack flow, and with it the DNAT to the endpoint chosen first, for
as long as it keeps sending. Every test here sends from such a port, and
every removed endpoint's server keeps running (as a Pod in its grace period
would), so a packet the kernel still DNATs to it comes back answered by it.

Each transition is made while the daemon runs and while it is down (the
first sync after a start knows only the plan and the kernel's rules), and
reached through the ClusterIP (from a pod) and through the NodePort (from
the outside). Every traffic loop is bounded in time.
"""
import collections
import time
import typing

import netbed
import network_namespace
import probes
import pytest
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint

LAYOUT = {"node-a": ["pod-1", "pod-2", "client"]}
PROXY_NODE = "node-a"  # where conftest's proxy runs switchboard
PINNED_PORT = 40126  # the client's fixed source port: one conntrack flow per route
RECONCILES = 'kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family="IPv4"}'


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    try:
        # Every refusal answered: the kernel's ICMP rate limit (one per second per
        # peer after a burst) would turn some into timeouts.
        network_namespace.sysctl(bed.nodes[PROXY_NODE].ns, "net.ipv4.icmp_ratelimit=0")
        bed.start_servers(tcp=[], udp=[5353])
        yield bed
    finally:
        bed.down()


@pytest.fixture(params=["clusterip", "nodeport"])
def via(request):
    return request.param


class Route(typing.NamedTuple):
    """Where a client sends a UDP service's traffic from, and to."""

    who: str
    host: str
    port: int


class UdpService(typing.NamedTuple):
    """One UDP Service of type NodePort: port 80 (NodePort `node_port`) to the pods' 5353."""

    name: str
    cluster_ip: str
    node_port: int

    def objects(self, endpoints):
        """The Service and its one EndpointSlice over `endpoints` (pod_endpoint documents)."""
        ports = [service_port(80, name="p", protocol="UDP", target=5353, node_port=self.node_port)]
        return [
            service(self.name, [self.cluster_ip], ports, type="NodePort"),
            endpoint_slice(self.name, endpoints, [("p", 5353, "UDP")]),
        ]

    def route(self, bed, via):
        if via == "clusterip":
            return Route("client", self.cluster_ip, 80)
        return Route("outside", bed.nodes[PROXY_NODE].ipv4, self.node_port)


def ready(bed, pod):
    return pod_endpoint(bed.pods[pod])


def terminating_serving(bed, pod):
    return pod_endpoint(bed.pods[pod], ready=False, serving=True, terminating=True)


def pinned(bed, route, count=1):
    """Exchanges from the fixed source port: the same conntrack flow each time."""
    return bed.probe(route.who, route.host, route.port, proto="udp", source_port=PINNED_PORT,
                     count=count, timeout=0.5)


def fresh(bed, route):
    """One exchange from a port the kernel picks: a new flow."""
    (answer,) = bed.probe(route.who, route.host, route.port, proto="udp", timeout=0.5)
    return answer


def outcome(answer):
    """Who answered, or why nobody did."""
    return answer.pod if answer.ok else answer.error


def outcomes(answers):
    return collections.Counter(outcome(answer) for answer in answers)


def pinned_until(bed, route, wanted, seconds=3.0):
    """Sends from the fixed port until the flow's outcome is `wanted` (bounded); returns
    whether it was, and the outcomes seen before."""
    seen = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        (answer,) = pinned(bed, route)
        if outcome(answer) == wanted:
            return True, seen
        seen.append(outcome(answer))
    return False, seen


def reconciles(proxy):
    """How many IPv4 conntrack reconciles the daemon has run."""
    status, body = proxy.http_get(proxy.METRICS, "/metrics")
    assert status == 200, body
    return probes.metric(body, RECONCILES) or 0.0


def wait_for_new_rules(bed, proxy, route, pod, before):
    """Waits (bounded) until new flows reach `pod` and a conntrack reconcile ran after
    `before` reconciles: the change is in the kernel, its flows judged."""
    started = time.monotonic()
    while outcome(fresh(bed, route)) != pod:
        assert time.monotonic() - started < 3.0, f"new flows never reached {pod}\n{proxy.log_tail()}"
    while reconciles(proxy) <= before:
        assert time.monotonic() - started < 3.0, f"no conntrack reconcile\n{proxy.log_tail()}"
        time.sleep(0.05)


def refused_or_lost(via):
    """What a packet meets once nothing DNATs it: a Service without endpoints is rejected;
    a deleted Service's ClusterIP leads nowhere (the node's default route swallows it),
    its NodePort reaches the node itself, where nothing listens."""
    return "ECONNREFUSED" if via == "nodeport" else "timeout"


def start_on_pod_1(bed, proxy, svc, via):
    """Starts the daemon with `svc` on pod-1 and pins the flow there."""
    proxy.set_cluster(svc.objects([ready(bed, "pod-1")]))
    proxy.start()
    route = svc.route(bed, via)
    assert outcomes(pinned(bed, route, count=3)) == {"pod-1": 3}, proxy.log_tail()
    return route


# ---- scaled to zero ----------------------------------------------------------
# kubernetes#139628: the Service's frontend now rejects, but the flow's DNAT to
# the old Pod came first; its packets must meet the rejection instead.


def test_scaled_to_zero_the_flow_meets_the_rejection(bed, proxy, via):
    svc = UdpService("udp-zero", "10.96.1.10", 30110)
    route = start_on_pod_1(bed, proxy, svc, via)

    proxy.set_cluster(svc.objects([]))
    rejected, before = pinned_until(bed, route, "ECONNREFUSED")

    assert rejected, f"the flow stayed DNATed ({before})\n{proxy.log_tail()}"
    assert set(before) <= {"pod-1"}, before
    assert outcomes(pinned(bed, route, count=3)) == {"ECONNREFUSED": 3}


def test_scaled_to_zero_while_the_daemon_was_down(bed, proxy, via):
    svc = UdpService("udp-zero-down", "10.96.1.11", 30111)
    route = start_on_pod_1(bed, proxy, svc, via)
    assert proxy.stop() == 0
    proxy.set_cluster(svc.objects([]))
    # The rules stay while the daemon is down, and so does the flow.
    assert outcomes(pinned(bed, route)) == {"pod-1": 1}

    proxy.start()  # returns once the first sync (and its reconcile) is done

    assert outcomes(pinned(bed, route, count=3)) == {"ECONNREFUSED": 3}, proxy.log_tail()


# ---- deleted -----------------------------------------------------------------
# kubernetes#141371: the Service is gone from the plan, its flows must go too.


def test_deleted_service_loses_its_flow(bed, proxy, via):
    svc = UdpService("udp-deleted", "10.96.1.12", 30112)
    route = start_on_pod_1(bed, proxy, svc, via)

    proxy.set_cluster([])
    left, before = pinned_until(bed, route, refused_or_lost(via))

    assert left, f"the flow stayed DNATed ({before})\n{proxy.log_tail()}"
    assert set(before) <= {"pod-1"}, before
    assert outcomes(pinned(bed, route, count=2)) == {refused_or_lost(via): 2}


def test_deleted_while_the_daemon_was_down(bed, proxy, via):
    svc = UdpService("udp-deleted-down", "10.96.1.13", 30113)
    route = start_on_pod_1(bed, proxy, svc, via)
    assert proxy.stop() == 0
    proxy.set_cluster([])
    assert outcomes(pinned(bed, route)) == {"pod-1": 1}

    proxy.start()

    assert outcomes(pinned(bed, route, count=2)) == {refused_or_lost(via): 2}, proxy.log_tail()


# ---- terminating but serving -------------------------------------------------
# kube-proxy keeps the flows of every serving endpoint: a terminating Pod that
# still serves finishes its flows while new ones go to the ready Pod.


def test_terminating_serving_endpoint_keeps_its_flow_until_removed(bed, proxy, via):
    svc = UdpService("udp-draining", "10.96.1.14", 30114)
    route = start_on_pod_1(bed, proxy, svc, via)

    before = reconciles(proxy)
    proxy.set_cluster(svc.objects([terminating_serving(bed, "pod-1"), ready(bed, "pod-2")]))
    wait_for_new_rules(bed, proxy, route, "pod-2", before)

    assert outcomes(pinned(bed, route, count=3)) == {"pod-1": 3}, proxy.log_tail()

    proxy.set_cluster(svc.objects([ready(bed, "pod-2")]))
    moved, stale = pinned_until(bed, route, "pod-2")

    assert moved, f"the flow kept the removed endpoint ({stale})\n{proxy.log_tail()}"


def test_terminating_serving_endpoint_across_restarts(bed, proxy, via):
    svc = UdpService("udp-draining-down", "10.96.1.15", 30115)
    route = start_on_pod_1(bed, proxy, svc, via)
    assert proxy.stop() == 0
    proxy.set_cluster(svc.objects([terminating_serving(bed, "pod-1"), ready(bed, "pod-2")]))

    proxy.start()

    assert outcome(fresh(bed, route)) == "pod-2", proxy.log_tail()
    assert outcomes(pinned(bed, route, count=3)) == {"pod-1": 3}, proxy.log_tail()

    assert proxy.stop() == 0
    proxy.set_cluster(svc.objects([ready(bed, "pod-2")]))
    proxy.start()

    assert outcomes(pinned(bed, route, count=3)) == {"pod-2": 3}, proxy.log_tail()
