"""kubeadm's default Corefile, unchanged, as switchboard's DNS configuration (issue 9).

tests/data/kubeadm/Corefile is the `coredns` ConfigMap's Corefile kubeadm
writes (cmd/kubeadm/app/phases/addons/dns/manifests.go). A netbed node runs
switchboard with --dns-corefile on that file and
--dns-local-address=10.96.0.10; the node's /etc/resolv.conf (bind-mounted by
`ip netns exec` from /etc/netns/<node>/resolv.conf) names the fake upstream
on the node's loopback, so `forward . /etc/resolv.conf` must read the
node's file to resolve an outside name. `health` (:8080), `ready` (:8181)
and `prometheus` (:9153) answer as CoreDNS's do, the Pod's names resolve,
and the DNS programming latency of an EndpointSlice change shows on :9153.
"""
import datetime
import pathlib

import dns_stub
import netbed
import pytest
from node_dns import KUBE_DNS, UPSTREAM, WEB, lookup, pod_dns_cluster
from probes import curl, sample, wait_for

COREFILE = pathlib.Path(__file__).resolve().parents[1] / "data" / "kubeadm" / "Corefile"
LAYOUT = {"node-a": ["coredns", "web-0", "web-1", "client"]}
LABELS = 'server="dns://:53",zone=".",view=""'
PROGRAMMING = "coredns_kubernetes_dns_programming_duration_seconds"


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    try:
        with netbed.resolv_confs([(bed.pods["client"].ns, netbed.pod_resolv_conf("default", KUBE_DNS)),
                                  (bed.nodes["node-a"].ns, f"nameserver {UPSTREAM}\n")]):
            yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module")
def node(bed, switchboard_bin):
    upstream = dns_stub.Stub(bed.nodes["node-a"].ns, UPSTREAM)
    daemon = netbed.Switchboard(bed, switchboard_bin, "nftables", extra_args=[
        f"--dns-corefile={COREFILE}", f"--dns-local-address={KUBE_DNS}"])
    daemon.set_cluster(pod_dns_cluster(bed))
    try:
        daemon.start()
        yield daemon, upstream
    finally:
        daemon.close()
        upstream.close()


def node_curl(bed, url):
    return curl(bed.nodes["node-a"].ns, url)


def metrics(bed):
    status, text = node_curl(bed, "http://127.0.0.1:9153/metrics")
    assert status == 200, text
    return text


def test_kubeadm_corefile_runs_unchanged(bed, node):
    daemon, upstream = node
    wait_for(lambda: node_curl(bed, "http://127.0.0.1:8181/ready") == (200, "OK"), "/ready")
    assert node_curl(bed, "http://127.0.0.1:8080/health") == (200, "OK")
    # Every plugin of kubeadm's Corefile is one switchboard has: no warning.
    assert "is not supported" not in daemon.log_path.read_text(), daemon.log_tail()

    assert lookup(bed, "client", "getent", "web")[0] == {WEB}
    assert lookup(bed, "client", "dig", "web-0.nginx.default.svc.cluster.local")[0] == \
        {bed.pods["web-0"].ipv4}
    # `forward . /etc/resolv.conf`: the node's resolv.conf, not the host's.
    assert lookup(bed, "client", "getent", "www.example.com")[0] == {UPSTREAM}
    assert "www.example.com" in upstream.names(probes=True)

    text = metrics(bed)
    assert sample(text, f'coredns_dns_request_size_bytes_count{{{LABELS},proto="udp"}}') >= 3
    assert sample(text, f'coredns_dns_response_size_bytes_count{{{LABELS},proto="udp"}}') >= 3
    assert sample(text, "coredns_panics_total") == 0
    assert "kubeproxy_" not in text


def test_an_endpoint_slice_change_shows_as_dns_programming_latency(bed, node):
    daemon, _ = node
    items = pod_dns_cluster(bed)
    slice_ = next(i for i in items if i["kind"] == "EndpointSlice"
                  and i["metadata"]["name"] == "nginx-a")
    # Now, as the EndpointSlice controller stamps it (after the daemon started).
    triggered = datetime.datetime.now(datetime.timezone.utc)
    slice_["metadata"].setdefault("annotations", {})[
        "endpoints.kubernetes.io/last-change-trigger-time"] = \
        triggered.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    slice_["endpoints"] = slice_["endpoints"][:1]  # web-1 went away
    daemon.set_cluster(items)
    series = f'{PROGRAMMING}_count{{service_kind="headless_with_selector"}}'
    wait_for(lambda: series in metrics(bed), series)
    assert sample(metrics(bed), series) == 1
    assert lookup(bed, "client", "dig", "nginx.default.svc.cluster.local")[0] == \
        {bed.pods["web-0"].ipv4}
