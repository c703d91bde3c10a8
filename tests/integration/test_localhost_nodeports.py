"""iptables.localhostNodePorts (--iptables-localhost-nodeports) in iptables mode,
with real packets in the namespaces of a netbed.Bed (issue 27).

kube-proxy's iptables mode answers a NodePort on 127.0.0.1 when the option is
on (its default) and --nodeport-addresses holds loopback: it sets
net.ipv4.conf.all.route_localnet=1 and guards 127.0.0.0/8 against packets from
elsewhere ("block incoming localnet connections"). route_localnet is per
network namespace: only the bed's node namespace is changed, never the host.
"""
import json
import socket

import netbed
import network_namespace
import pytest
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint
from network_namespace import run, run_in, sysctl

LAYOUT = {"node-a": ["pod-1"], "node-b": ["pod-2"]}
NODE_PORT = 30080
LOOPBACK_ONLY_PORT = 29999  # a service of the node bound to 127.0.0.1 only
ATTACKER = "192.0.2.2"  # RFC 5737, on a veth into the node namespace only
NODE_SIDE = "192.0.2.1"


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT).up()
    try:
        bed.start_servers(tcp=[8080], udp=[])
        yield bed
    finally:
        bed.down()


@pytest.fixture
def node(bed):
    """node-a, with route_localnet back at the kernel's default (0) before each test."""
    node = bed.nodes["node-a"]
    sysctl(node.ns, "net.ipv4.conf.all.route_localnet=0")
    return node


def route_localnet(ns):
    return run_in(ns, "sysctl", "-n", "net.ipv4.conf.all.route_localnet", check=True).stdout.strip()


def start(bed, switchboard_bin, *extra):
    proxy = netbed.Switchboard(bed, switchboard_bin, "iptables", extra_args=extra)
    proxy.set_cluster([
        service("np", ["10.96.0.16"], [service_port(80, name="p", target=8080, node_port=NODE_PORT)],
                type="NodePort"),
        endpoint_slice("np", [pod_endpoint(bed.pods[p]) for p in ("pod-1", "pod-2")],
                       [("p", 8080, "TCP")]),
    ])
    proxy.start()
    return proxy


def test_nodeport_answers_on_localhost_when_on(bed, node, switchboard_bin):
    proxy = start(bed, switchboard_bin)
    try:
        answers = bed.probe("node-a", "127.0.0.1", NODE_PORT, count=20)

        assert [a.error for a in answers if not a.ok] == [], proxy.log_tail()
        assert {a.pod for a in answers} == {"pod-1", "pod-2"}
        # Masqueraded (kube-proxy: "localhost to nodePort gets masqueraded"):
        # the pods see an address of the node, never 127.0.0.1.
        assert {a.client for a in answers} <= {node.bridge4, node.ipv4}
        assert route_localnet(node.ns) == "1"
    finally:
        proxy.close()


def test_nodeport_does_not_answer_on_localhost_when_off(bed, node, switchboard_bin):
    proxy = start(bed, switchboard_bin, "--iptables-localhost-nodeports=false")
    try:
        (local,) = bed.probe("node-a", "127.0.0.1", NODE_PORT)
        control = bed.probe("node-a", node.ipv4, NODE_PORT, count=5)

        assert local.error == "ECONNREFUSED", "nothing listens there, nothing DNATs it"
        assert [a.error for a in control if not a.ok] == [], proxy.log_tail()
        assert route_localnet(node.ns) == "0", "off: the sysctl is not touched"
    finally:
        proxy.close()


@pytest.fixture
def attacker(bed, node):
    """A namespace on a veth into node-a that sends to 127.0.0.1 through it, as a
    neighbour on the node's LAN could (https://issue.k8s.io/90259): no `lo` (so no
    local 127.0.0.0/8 route), route_localnet on, a static neighbour entry for
    127.0.0.1 (the node answers no ARP for a loopback address)."""
    with network_namespace.namespace("atk", loopback=False) as ns:
        run(["ip", "-n", ns, "link", "add", "atk0", "type", "veth", "peer", "name", "atk1",
             "netns", node.ns])
        run(["ip", "-n", ns, "addr", "add", f"{ATTACKER}/24", "dev", "atk0"])
        run(["ip", "-n", node.ns, "addr", "add", f"{NODE_SIDE}/24", "dev", "atk1"])
        run(["ip", "-n", ns, "link", "set", "atk0", "up"])
        run(["ip", "-n", node.ns, "link", "set", "atk1", "up"])
        sysctl(ns, "net.ipv4.conf.all.route_localnet=1", "net.ipv4.conf.atk0.route_localnet=1")
        (link,) = json.loads(run(["ip", "-n", node.ns, "-j", "link", "show", "atk1"]).stdout)
        run(["ip", "-n", ns, "route", "add", "127.0.0.1/32", "dev", "atk0", "src", ATTACKER])
        run(["ip", "-n", ns, "neigh", "add", "127.0.0.1", "lladdr", link["address"], "dev", "atk0",
             "nud", "permanent"])
        try:
            yield ns
        finally:
            run(["ip", "-n", node.ns, "link", "del", "atk1"], check=False)


def knock(attacker_ns, node_ns):
    """Connects from the attacker to 127.0.0.1:LOOPBACK_ONLY_PORT, where the node listens on
    127.0.0.1 only. Returns (whether the connect completed, whether the node's listener got
    a connection)."""
    listener = network_namespace.socket_in(node_ns, socket.AF_INET, socket.SOCK_STREAM)
    client = network_namespace.socket_in(attacker_ns, socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", LOOPBACK_ONLY_PORT))
        listener.listen(4)
        client.settimeout(1.5)
        try:
            client.connect(("127.0.0.1", LOOPBACK_ONLY_PORT))
            connected = True
        except (TimeoutError, socket.timeout, OSError):
            connected = False
        listener.settimeout(0.2 if connected else 0.01)
        try:
            accepted, _ = listener.accept()
            accepted.close()
            reached = True
        except (TimeoutError, socket.timeout, BlockingIOError):
            reached = False
        return connected, reached
    finally:
        client.close()
        listener.close()


def guard_present(ns):
    return ":SWITCHBOARD-LOCALNET-GUARD " in run_in(ns, "iptables-legacy-save", check=True).stdout


def guard_drops(ns):
    """Packets the localnet guard's DROP rule counted in the node namespace."""
    out = run_in(ns, "iptables-legacy", "-t", "filter", "-L", "SWITCHBOARD-LOCALNET-GUARD",
                 "-n", "-v", "-x", check=True).stdout
    (rule,) = [line for line in out.splitlines() if "DROP" in line]
    return int(rule.split()[0])


def test_the_guard_drops_loopback_packets_from_elsewhere(bed, node, attacker, switchboard_bin):
    proxy = start(bed, switchboard_bin)
    try:
        assert route_localnet(node.ns) == "1" and guard_present(node.ns)
        connected, reached = knock(attacker, node.ns)
        assert (connected, reached) == (False, False), "127.0.0.1 reached from another host"
        assert guard_drops(node.ns) >= 1, proxy.log_tail()
    finally:
        proxy.close()

    # Control, and what turning the option off later leaves: route_localnet stays 1
    # (never reset, as kube-proxy), the guard goes with the option, and the same packets
    # reach the node's loopback service. The test above therefore saw the guard work.
    proxy = start(bed, switchboard_bin, "--iptables-localhost-nodeports=false")
    try:
        assert route_localnet(node.ns) == "1"
        assert not guard_present(node.ns)
        assert knock(attacker, node.ns) == (True, True)
    finally:
        proxy.close()
