"""node_dns: the cluster and the lookups of the node-local DNS tests on a netbed
node (test_dns_local, test_dns_pods, test_corefile_kubeadm, test_dns_search_path,
test_pod_lookup): kube-dns with a CoreDNS Pod, the Services the Pods look up,
how a Pod's resolver (getent, dig, busybox) answers, the node's conntrack
entries of DNS traffic, a count of the DNS packets a Pod sends, and a daemon
answering kube-dns itself in front of a fake upstream.

The bed must have the Pods the clusters name (`coredns`, `web-1`; `web-0`
for pod_dns_cluster) on node-a.
"""
import contextlib
import ipaddress
import re

import dns_stub
import netbed

from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint
from network_namespace import in_ns, run, run_in

KUBE_DNS = "10.96.0.10"
NODE_LOCAL = "169.254.20.10"
KUBERNETES = "10.96.0.1"
WEB = "10.96.0.20"
DB = "10.96.0.30"
EXTERNAL_NAME = "my.database.example.com"
UPSTREAM = "127.0.0.2"  # the fake upstream, on the node's loopback


@contextlib.contextmanager
def web_bed(layout):
    """A netbed.Bed of `layout`, up, with the test servers on its `web-1` Pod; down
    on leaving (a module fixture's body)."""
    bed = netbed.Bed(layout).up()
    try:
        bed.start_servers(pods=["web-1"])
        yield bed
    finally:
        bed.down()


def kube_dns_cluster(bed):
    """kube-dns (its endpoint the bed's `coredns` Pod), kubernetes, and web (its
    endpoint the `web-1` Pod)."""
    coredns = bed.pods["coredns"]
    return [
        service("kube-dns", [KUBE_DNS],
                [service_port(53, name="dns", protocol="UDP"),
                 service_port(53, name="dns-tcp", protocol="TCP")],
                namespace="kube-system"),
        endpoint_slice("kube-dns", [pod_endpoint(coredns)],
                       [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")], namespace="kube-system"),
        service("kubernetes", [KUBERNETES], [service_port(443, name="https")]),
        service("web", [WEB], [service_port(80, name="p", target=8080)]),
        endpoint_slice("web", [pod_endpoint(bed.pods["web-1"])], [("p", 8080, "TCP")]),
    ]


def pod_dns_cluster(bed):
    """kube_dns_cluster() with what Pods look up besides: a headless Service whose
    endpoints are StatefulSet Pods (`web-0`, `web-1`), an ExternalName Service and a
    ClusterIP Service in `prod`."""
    headless = service("nginx", [], [service_port(80, name="web")])
    stateful = [pod_endpoint(bed.pods[name]) for name in ("web-0", "web-1")]
    for ep, name in zip(stateful, ("web-0", "web-1")):
        ep["hostname"] = name  # a StatefulSet Pod's, as the EndpointSlice controller sets it
    external = service("my-service", [], [], namespace="prod", external_name=EXTERNAL_NAME)
    return [
        *kube_dns_cluster(bed),
        headless,
        endpoint_slice("nginx", stateful, [("web", 80, "TCP")]),
        external,
        service("db", [DB], [service_port(5432, name="pg")], namespace="prod"),
    ]


def node_run(bed, argv):
    """argv in node-a's namespace; the exit code is the caller's to judge."""
    return run_in(bed.nodes["node-a"].ns, *argv)


def conntrack_entries(bed):
    return node_run(bed, ["conntrack", "-L"]).stdout


def dns_entries(entries, address):
    """The conntrack lines of DNS traffic (port 53) to or from address."""
    return [line for line in entries.splitlines()
            if (f"dst={address} " in line or f"src={address} " in line)
            and ("dport=53 " in line or "sport=53 " in line)]


def pod_run(bed, pod, argv):
    """argv in Pod `pod`'s namespace; the exit code is the caller's to judge."""
    return run_in(bed.pods[pod].ns, *argv)


def is_ip(text):
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def lookup(bed, pod, resolver, name):
    """(IPv4 addresses, canonical names other than `name`) as the resolver reports them."""
    if resolver == "getent":
        out = pod_run(bed, pod, ["getent", "ahostsv4", name]).stdout
        lines = [line.split() for line in out.splitlines() if line.strip()]
        addresses = {fields[0] for fields in lines}
        # The first line carries the canonical name when it differs.
        names = {fields[2] for fields in lines if len(fields) > 2}
    elif resolver == "dig":
        out = pod_run(bed, pod, ["dig", "+search", "+short", "+time=2", "+tries=1", name]).stdout
        lines = out.split()
        addresses = {line for line in lines if is_ip(line)}
        names = {line.rstrip(".") for line in lines if not is_ip(line)}
    else:
        out = pod_run(bed, pod, ["busybox", "nslookup", "-type=a", name]).stdout
        addresses, names = set(), set()
        answers = out.split("\n\n", 1)[-1]  # past the "Server:" / "Address:" header
        for line in answers.splitlines():
            if line.startswith("Address:"):
                addresses.add(line.split()[-1])
            elif "canonical name = " in line:
                names.add(line.split("canonical name = ")[1].rstrip("."))
    names.discard(name)
    return addresses, names


# The table of the Pods' DNS packet counters (add_dns_counter).
DNS_COUNTER_TABLE = "sb_test_dns_count"


def add_dns_counter(bed, pod):
    """An nftables counter, in Pod `pod`'s namespace, of the DNS packets it sends."""
    script = (f"table inet {DNS_COUNTER_TABLE} {{\n chain out {{\n"
              "  type filter hook output priority 0;\n"
              "  udp dport 53 counter\n  tcp dport 53 tcp flags syn counter\n }\n}\n")
    run(in_ns(bed.pods[pod].ns, ["nft", "-f", "-"]), input=script)


def dns_packets(bed, pod):
    """The DNS packets Pod `pod` has sent since add_dns_counter."""
    out = pod_run(bed, pod, ["nft", "list", "table", "inet", DNS_COUNTER_TABLE]).stdout
    return sum(int(n) for n in re.findall(r"counter packets (\d+)", out))


def counted(bed, pod, argv):
    """(stdout, DNS packets sent) of argv in Pod `pod`'s namespace."""
    before = dns_packets(bed, pod)
    out = pod_run(bed, pod, argv).stdout
    return out, dns_packets(bed, pod) - before


@contextlib.contextmanager
def upstream_and_daemon(bed, switchboard_bin, cluster, answer, extra_args=()):
    """switchboard (nftables) on node-a answering the kube-dns ClusterIP itself
    (--dns-local-address) and forwarding to a fake upstream on the node's
    loopback that replies with answer(stub, query); yields the daemon."""
    stub = dns_stub.Stub(bed.nodes["node-a"].ns, UPSTREAM, answer=answer)
    daemon = netbed.Switchboard(bed, switchboard_bin, "nftables", extra_args=[
        f"--dns-local-address={KUBE_DNS}", f"--dns-upstream={UPSTREAM}", *extra_args])
    daemon.set_cluster(cluster)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.close()
        stub.close()
