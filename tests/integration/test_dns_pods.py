"""Pods' DNS end to end (issue 9, the first "Done when" bullet).

A netbed node runs switchboard with --dns-local-address=10.96.0.10,169.254.20.10.
Each client Pod's /etc/resolv.conf is what kubelet writes for a Pod
(`ip netns exec` bind-mounts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf):
the nameserver is kubelet's clusterDNS (the kube-dns ClusterIP for `client`
in namespace default, NodeLocal DNSCache's 169.254.20.10 for `tool` in
namespace prod), the search path is the Pod's namespace's, ndots:5.

Three resolver implementations ask from inside the Pods: glibc (`getent
ahostsv4`), `dig +search`, and busybox's `nslookup` (Debian's busybox has the
"big" nslookup, a resolver of its own: it sends the queries itself, which
the -type=cname lookup below proves: getaddrinfo cannot ask for a CNAME).
Each resolves a Service by short name and FQDN, a headless Service, a
StatefulSet Pod's name, an ExternalName Service (a CNAME) and a name outside
the cluster (forwarded to a fake upstream on the node's loopback, which
answers every A question with its own address).

The kube-dns Service's endpoint is the Pod `coredns`, where a fake CoreDNS
logs every question it gets: from this node it gets none (the positive
control asks it directly first). No conntrack entry exists for the DNS
traffic. nftables mode only: the notrack table is the same nftables table in
every mode (test_dns_local.py runs both).
"""
import dns_stub
import netbed
import pytest
from node_dns import DB, EXTERNAL_NAME, KUBE_DNS, NODE_LOCAL, UPSTREAM, WEB
from node_dns import conntrack_entries, dns_entries, lookup, pod_dns_cluster, pod_run

LAYOUT = {"node-a": ["coredns", "web-0", "web-1", "client", "tool"]}
# Client Pod -> (its Kubernetes namespace, kubelet's clusterDNS for it).
CLIENTS = {"client": ("default", KUBE_DNS), "tool": ("prod", NODE_LOCAL)}
RESOLVERS = ("getent", "dig", "busybox")


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    try:
        bed.start_servers(pods=["web-1"])
        with netbed.resolv_confs((bed.pods[pod].ns, netbed.pod_resolv_conf(namespace, nameserver))
                                 for pod, (namespace, nameserver) in CLIENTS.items()):
            yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module")
def node(bed, switchboard_bin):
    """The daemon, the fake upstream and the fake CoreDNS Pod (dns_stub stubs answering
    with their own address): (daemon, the fake CoreDNS Pod's stub)."""
    stubs = [dns_stub.Stub(bed.nodes["node-a"].ns, UPSTREAM),
             dns_stub.Stub(bed.pods["coredns"].ns, bed.pods["coredns"].ipv4)]
    daemon = netbed.Switchboard(bed, switchboard_bin, "nftables", extra_args=[
        f"--dns-local-address={KUBE_DNS},{NODE_LOCAL}", f"--dns-upstream={UPSTREAM}"])
    daemon.set_cluster(pod_dns_cluster(bed))
    try:
        daemon.start()
        yield daemon, stubs[1]
    finally:
        daemon.close()
        for stub in stubs:
            stub.close()


@pytest.mark.parametrize("pod", list(CLIENTS))
@pytest.mark.parametrize("resolver", RESOLVERS)
def test_every_resolver_resolves_every_kind_of_name(bed, node, pod, resolver):
    daemon, _ = node
    web0, web1 = bed.pods["web-0"].ipv4, bed.pods["web-1"].ipv4
    namespace = CLIENTS[pod][0]
    short_service, short_address = ("web", WEB) if namespace == "default" else ("db", DB)
    expected = {
        short_service: ({short_address}, set()),  # through the Pod's own namespace's search path
        "web.default.svc.cluster.local": ({WEB}, set()),
        "db.prod": ({DB}, set()),
        "nginx.default.svc.cluster.local": ({web0, web1}, set()),
        "web-0.nginx.default.svc.cluster.local": ({web0}, set()),
        # The CNAME, whose target the upstream answers with its own address.
        "my-service.prod.svc.cluster.local": ({UPSTREAM}, {EXTERNAL_NAME}),
        "www.example.com": ({UPSTREAM}, set()),  # ndots:5: after three NXDOMAINs
    }
    if resolver == "busybox":
        # busybox's nslookup has no ndots: it asks for a name with a dot as
        # it is (db.prod.), which the fake upstream answers like any name.
        del expected["db.prod"]
    for name, (addresses, cnames) in expected.items():
        got = lookup(bed, pod, resolver, name)
        assert got[0] == addresses, (resolver, pod, name, got, daemon.log_tail())
        if resolver != "getent" or cnames:
            assert got[1] == cnames, (resolver, pod, name, got)


def test_busybox_nslookup_asks_with_its_own_resolver(bed, node):
    """getaddrinfo cannot ask for a CNAME record: an answer to -type=cname is
    busybox's own DNS client talking to the Pod's nameserver."""
    proc = pod_run(bed, "client", ["busybox", "nslookup", "-type=cname",
                                   "my-service.prod.svc.cluster.local"])
    assert f"canonical name = {EXTERNAL_NAME}" in proc.stdout, proc.stdout
    assert f"Server:\t\t{KUBE_DNS}" in proc.stdout, proc.stdout  # read from resolv.conf


def test_dns_traffic_leaves_no_conntrack_entry_and_reaches_no_coredns_pod(bed, node):
    daemon, coredns_stub = node
    coredns = bed.pods["coredns"].ipv4
    # Positive control: the fake CoreDNS Pod answers and logs when asked directly.
    asked = pod_run(bed, "client", ["dig", "+short", "+time=2", "+tries=1", f"@{coredns}",
                                    "control.example"])
    assert asked.stdout.strip() == coredns, asked
    assert "control.example" in coredns_stub.names(probes=True)
    seen = len(coredns_stub.names(probes=True))
    daemon.flush_conntrack()
    for pod in CLIENTS:
        for resolver in RESOLVERS:
            assert lookup(bed, pod, resolver, "web.default.svc.cluster.local")[0] == {WEB}
    assert coredns_stub.names(probes=True)[seen:] == [], \
        "the kube-dns endpoint got queries from this node"
    # Positive control: a Service's traffic is DNATed, through conntrack.
    answers = bed.probe("client", WEB, 80)
    assert [a.pod for a in answers] == ["web-1"], answers
    entries = conntrack_entries(bed)
    assert f"dst={WEB}" in entries, entries
    for address in (KUBE_DNS, NODE_LOCAL):
        assert dns_entries(entries, address) == [], entries
