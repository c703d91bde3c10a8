"""The search path walked on the server (issue 13, part 2) with real resolvers.

A netbed node runs switchboard with --dns-autopath, answering on the kube-dns
ClusterIP (--dns-local-address) and forwarding to a fake upstream on the
node's loopback that knows one name (www.example.com A 192.0.2.1) and
answers NXDOMAIN for every other. The node's own resolv.conf has a search
domain (corp.example), which kubelet appends to every ClusterFirst Pod's
search list and switchboard walks too.

The cluster file carries the Pods of the node, as the node-local Pod watch
lists them: `client-a` in namespace a, `client-b` in namespace b (both
ClusterFirst), and `custom` in a with dnsPolicy None and its own search
list. Each client Pod's resolv.conf is the one kubelet writes for it, and an
nftables counter in its namespace counts the DNS packets it sends.

- glibc (`getent ahostsv4`) and busybox's `nslookup` resolve an outside name
  with ndots:5 in one query: switchboard answers the first expansion with a
  CNAME to the name and its address;
- a short name is the Pod's own namespace's Service;
- a Pod with its own search list gets plain answers (its resolver walks);
- an address a new Pod took over is that Pod's (its namespace answers);
- the metrics count the answers and the round trips saved.
"""

import dns_stub
import dns_wire
import netbed
import pytest
from kube_objects import endpoint_slice, pod, service, service_port
from netbed import pod_endpoint
from node_dns import (KUBE_DNS, UPSTREAM, add_dns_counter, counted, pod_run,
                      upstream_and_daemon)

LAYOUT = {"node-a": ["client-a", "client-b", "custom", "web-1"]}
WEB_A = "10.96.0.21"
WEB_B = "10.96.0.22"
OUTSIDE = "www.example.com"
OUTSIDE_ADDRESS = "192.0.2.1"
NODE_SEARCH = "corp.example"


def upstream_answer(stub, query):
    if query.qtype == dns_wire.TYPE_A and query.name == OUTSIDE:
        return dns_stub.reply(query, answers=[dns_wire.a_record(OUTSIDE_ADDRESS, ttl=300)])
    soa = dns_wire.soa_record("example.com", serial=1, refresh=2, retry=3, expire=4,
                              minimum=60, mname="ns.example.com", rname="h.example.com")
    if query.name == OUTSIDE:
        return dns_stub.reply(query, authority=[soa])  # NODATA
    return dns_stub.reply(query, rcode=dns_wire.NXDOMAIN, authority=[soa])


def kubelet_resolv_conf(namespace):
    """ClusterFirst: the cluster's search list, then the node's."""
    return (f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local "
            f"{NODE_SEARCH}\nnameserver {KUBE_DNS}\noptions ndots:5\n")


CUSTOM_RESOLV_CONF = (f"search a.svc.cluster.local my.custom.domain\nnameserver {KUBE_DNS}\n"
                      "options ndots:5\n")
CUSTOM_DNS_CONFIG = {"nameservers": [KUBE_DNS], "searches": ["a.svc.cluster.local",
                                                             "my.custom.domain"],
                     "options": [{"name": "ndots", "value": "5"}]}


def cluster(bed, pods=None):
    web = bed.pods["web-1"]
    objects = [
        service("kube-dns", [KUBE_DNS], [service_port(53, name="dns", protocol="UDP")],
                namespace="kube-system"),
        service("web", [WEB_A], [service_port(80, name="http", target=8080)], namespace="a"),
        endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")], namespace="a"),
        service("web", [WEB_B], [service_port(80, name="http", target=8080)], namespace="b"),
        endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")], namespace="b"),
    ]
    if pods is None:
        pods = [pod("client-a", "a", [bed.pods["client-a"].ipv4]),
                pod("client-b", "b", [bed.pods["client-b"].ipv4]),
                pod("custom", "a", [bed.pods["custom"].ipv4], dns_policy="None",
                    dns_config=CUSTOM_DNS_CONFIG)]
    return objects + pods


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    files = [(bed.nodes["node-a"].ns, f"search {NODE_SEARCH}\nnameserver {UPSTREAM}\n"),
             (bed.pods["client-a"].ns, kubelet_resolv_conf("a")),
             (bed.pods["client-b"].ns, kubelet_resolv_conf("b")),
             (bed.pods["custom"].ns, CUSTOM_RESOLV_CONF)]
    try:
        bed.start_servers(pods=["web-1"])
        for name in ("client-a", "client-b", "custom"):
            add_dns_counter(bed, name)
        with netbed.resolv_confs(files):
            yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module")
def daemon(bed, switchboard_bin):
    with upstream_and_daemon(bed, switchboard_bin, cluster(bed), upstream_answer, extra_args=["--dns-autopath"]) as daemon:
        yield daemon


def getent(bed, name, host):
    out, sent = counted(bed, name, ["getent", "ahostsv4", host])
    return {line.split()[0] for line in out.splitlines() if line.strip()}, sent


def busybox(bed, name, host):
    out, sent = counted(bed, name, ["busybox", "nslookup", "-type=a", host])
    answers = out.split("\n\n", 1)[-1]
    return {line.split()[-1] for line in answers.splitlines() if line.startswith("Address:")}, sent


def metric(daemon, series):
    _, body = daemon.http_get(daemon.METRICS, "/metrics")
    total = 0.0
    for line in (body or "").splitlines():
        if line.startswith(series + " ") or line.startswith(series + "{"):
            total += float(line.split()[-1])
    return total


def test_an_outside_name_costs_one_query(bed, daemon):
    for name in ("client-a", "client-b"):
        assert getent(bed, name, OUTSIDE) == ({OUTSIDE_ADDRESS}, 1), daemon.log_tail()
        assert busybox(bed, name, OUTSIDE) == ({OUTSIDE_ADDRESS}, 1)


def test_glibc_follows_the_cname_to_the_name_it_asked(bed, daemon):
    out = pod_run(bed, "client-a", ["getent", "ahostsv4", OUTSIDE]).stdout.splitlines()
    # The first line names the canonical name: the name as asked, not an expansion.
    assert out[0].split()[:3] == [OUTSIDE_ADDRESS, "STREAM", OUTSIDE], out


def test_short_names_are_the_pods_own_namespaces(bed, daemon):
    assert getent(bed, "client-a", "web") == ({WEB_A}, 1)
    assert getent(bed, "client-b", "web") == ({WEB_B}, 1)
    # Another namespace's Service by "name.namespace": one query too, through
    # the second element of the path (svc.cluster.local).
    assert getent(bed, "client-a", "web.b") == ({WEB_B}, 1)
    assert getent(bed, "client-b", "web.a") == ({WEB_A}, 1)


def test_a_pod_with_its_own_search_list_gets_plain_answers(bed, daemon):
    answered = metric(daemon, "coredns_autopath_success_total")
    addresses, sent = getent(bed, "custom", OUTSIDE)
    assert addresses == {OUTSIDE_ADDRESS}
    assert sent == 3, "its resolver walks its own list: two NXDOMAINs, then the name"
    assert metric(daemon, "coredns_autopath_success_total") == answered


def test_the_metrics_count_answers_and_round_trips_saved(bed, daemon):
    answered = metric(daemon, "coredns_autopath_success_total")
    saved = metric(daemon, "switchboard_dns_autopath_round_trips_saved_total")
    assert getent(bed, "client-a", OUTSIDE) == ({OUTSIDE_ADDRESS}, 1)
    assert metric(daemon, "coredns_autopath_success_total") == answered + 1
    # a.svc.cluster.local, svc.cluster.local, cluster.local, corp.example, then
    # the name: the Pod would have sent four queries before the one that answers.
    assert metric(daemon, "switchboard_dns_autopath_round_trips_saved_total") == saved + 4


def test_a_reused_pod_address_is_the_new_pods(bed, daemon):
    address = bed.pods["client-a"].ipv4
    # client-a ended (its phase Succeeded keeps its status.podIPs); a newer Pod
    # of namespace b runs on the same address. Its resolv.conf is b's.
    pods = [pod("client-a", "a", [address], phase="Succeeded"),
            pod("client-a2", "b", [address], created="2026-01-02T00:00:00Z"),
            pod("client-b", "b", [bed.pods["client-b"].ipv4])]
    daemon.set_cluster(cluster(bed, pods))
    netbed_resolv = f"/etc/netns/{bed.pods['client-a'].ns}/resolv.conf"
    with open(netbed_resolv, "w") as f:
        f.write(kubelet_resolv_conf("b"))
    try:
        # Until the daemon has read the new Pods, the first expansion
        # (www.example.com.b.svc...) is not one of a Pod of a: plain answers.
        for _ in range(100):
            addresses, sent = getent(bed, "client-a", OUTSIDE)
            assert addresses == {OUTSIDE_ADDRESS}
            if sent == 1:
                break
        else:
            raise AssertionError(f"the new Pod's lookups never took one query\n{daemon.log_tail()}")
        assert getent(bed, "client-a", "web") == ({WEB_B}, 1)
        # Both live: the Pod created later holds the address.
        pods[0] = pod("client-a", "a", [address])
        daemon.set_cluster(cluster(bed, pods))
        for _ in range(20):
            assert getent(bed, "client-a", OUTSIDE) == ({OUTSIDE_ADDRESS}, 1)
    finally:
        with open(netbed_resolv, "w") as f:
            f.write(kubelet_resolv_conf("a"))
        daemon.set_cluster(cluster(bed))
