"""ClientIP affinity across endpoint and Service changes: real packets in network namespaces.

A client pinned to an endpoint by ClientIP affinity must leave it as soon as the
endpoint stops serving the Service (turns not ready, or is removed), and must
never be sent to a deleted Service's Pod when a new Service takes over its
ClusterIP, whichever sync applies the change: an incremental one, a periodic
full resync, or the first sync after a restart with the change made while the
daemon was down. The affinity timeout is three hours, so only the proxy's own
cleanup (nftables: the affinity map's entries; iptables: the per-endpoint
`recent` lists) can move the client within the tests' bounds.

Every probe is a fresh TCP connection from one fixed client address: each one
consults the affinity state, none is held by conntrack. The endpoint that left
keeps answering (as a Pod in its grace period would), so a client still sent
there is seen. The bed, the proxy modes (a module parameter) and the daemon
are test_datapath.py's fixtures.
"""
import time

import pytest
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint
from test_datapath import bed, pods_of, sample_value  # noqa: F401 (bed: a fixture)

AFFINITY_SECONDS = 10800  # Kubernetes' default: nothing expires during a test
SETTLE_SECONDS = 10.0  # bound on a change reaching the kernel (a 1 s full resync on a busy machine)
PODS = ["pod-1", "pod-2", "pod-4"]  # two on the proxy's node, one on node-b


def sticky(bed, name, ip, pods, *, not_ready=()):
    """A one-port Service with ClientIP affinity over `pods`; those in `not_ready` are
    listed neither ready nor serving."""
    endpoints = [pod_endpoint(bed.pods[p], ready=p not in not_ready) for p in pods]
    return [
        service(name, [ip], [service_port(80, name="p", target=8080)], affinity_timeout=AFFINITY_SECONDS),
        endpoint_slice(name, endpoints, [("p", 8080, "TCP")]),
    ]


def without(bed, name, ip, left, how):
    """`sticky` over PODS with the pod `left` turned not ready or removed."""
    if how == "not_ready":
        return sticky(bed, name, ip, PODS, not_ready=[left])
    return sticky(bed, name, ip, [p for p in PODS if p != left])


def pinned_pod(bed, proxy, ip, source, count=5):
    """The one pod every probe from `source` reaches (asserts that it is one)."""
    answers = bed.probe("client", ip, 80, count=count, source=source)
    assert all(answer.ok for answer in answers), f"{[a.error for a in answers]}\n{proxy.log_tail()}"
    pods = pods_of(answers)
    assert len(pods) == 1, f"client {source} is not pinned: {pods}\n{proxy.log_tail()}"
    return answers[0].pod


def start_pinned(bed, proxy, items, ip, source):
    """Starts the daemon on `items` and returns the pod the client `source` is pinned to."""
    proxy.set_cluster(items)
    proxy.start()
    return pinned_pod(bed, proxy, ip, source)


def assert_moves_off(bed, proxy, ip, source, left, seconds=SETTLE_SECONDS):
    """Probes from `source` until one reaches a pod other than `left` (bounded), then
    asserts that the client is pinned there."""
    start = time.monotonic()
    stale = []
    while time.monotonic() - start < seconds:
        (answer,) = bed.probe("client", ip, 80, source=source, timeout=0.5)
        if answer.ok and answer.pod != left:
            break
        stale.append(answer.pod or answer.error)
        time.sleep(0.1)
    else:
        pytest.fail(f"the client stayed on {left} ({len(stale)} answers)\n{proxy.log_tail()}")
    now = pinned_pod(bed, proxy, ip, source, count=10)
    assert now != left, f"the client went back to {left}\n{proxy.log_tail()}"


@pytest.mark.parametrize("how", ["not_ready", "removed"])
def test_client_leaves_an_endpoint_by_an_incremental_sync(bed, proxy, how):
    ip, source = "10.96.0.40", bed.pods["client"].sources[0]
    left = start_pinned(bed, proxy, sticky(bed, "aff-inc", ip, PODS), ip, source)

    proxy.set_cluster(without(bed, "aff-inc", ip, left, how))

    assert_moves_off(bed, proxy, ip, source, left, seconds=2.0)


@pytest.mark.parametrize("how", ["not_ready", "removed"])
def test_client_leaves_an_endpoint_by_a_periodic_full_sync(bed, proxy, how):
    # --min-sync-period, --sync-period and --full-sync-period equal: every sync after
    # the first is a full one (no previous plan); the metrics prove no partial sync ran.
    proxy.extra_args += ["--min-sync-period=1s", "--sync-period=1s", "--full-sync-period=1s"]
    ip, source = "10.96.0.41", bed.pods["client"].sources[1]
    left = start_pinned(bed, proxy, sticky(bed, "aff-full", ip, PODS), ip, source)

    proxy.set_cluster(without(bed, "aff-full", ip, left, how))

    assert_moves_off(bed, proxy, ip, source, left)
    partial = 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    full = 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    assert sample_value(proxy, partial) == 0, "a partial sync ran: the test shows nothing"
    assert sample_value(proxy, full) >= 2


@pytest.mark.parametrize("how", ["not_ready", "removed"])
def test_client_leaves_an_endpoint_changed_while_the_daemon_was_down(bed, proxy, how):
    ip, source = "10.96.0.42", bed.pods["client"].sources[2]
    left = start_pinned(bed, proxy, sticky(bed, "aff-down", ip, PODS), ip, source)
    assert proxy.stop() == 0
    proxy.set_cluster(without(bed, "aff-down", ip, left, how))
    # The rules and the affinity state stay while the daemon is down.
    assert pinned_pod(bed, proxy, ip, source, count=2) == left

    proxy.start()  # returns once /readyz says the first sync is done

    now = pinned_pod(bed, proxy, ip, source, count=10)
    assert now != left, f"the first sync after the restart kept the client on {left}\n{proxy.log_tail()}"


@pytest.mark.parametrize("while_down", [False, True], ids=["running", "while_down"])
def test_a_reused_cluster_ip_never_reaches_the_deleted_services_pods(bed, proxy, while_down):
    # Service A (affinity) is deleted and Service B (affinity, other pods) created with
    # A's ClusterIP and port: traffic never crosses from one Service to the other.
    a_pods, b_pods = ["pod-1", "pod-2"], ["pod-3", "pod-4"]
    ip, source = "10.96.0.43", bed.pods["client"].sources[3]
    left = start_pinned(bed, proxy, sticky(bed, "aff-old", ip, a_pods), ip, source)

    if while_down:
        assert proxy.stop() == 0
        proxy.set_cluster(sticky(bed, "aff-new", ip, b_pods))
        proxy.start()
    else:
        proxy.set_cluster(sticky(bed, "aff-new", ip, b_pods))
        assert_moves_off(bed, proxy, ip, source, left, seconds=2.0)

    assert pinned_pod(bed, proxy, ip, source, count=10) in b_pods, proxy.log_tail()
