"""Datapath scenarios: real packets through switchboard in network namespaces.

Each test writes a cluster (Services, EndpointSlices) for the bed of
netbed.py, starts switchboard on it in node-a's namespace and sends traffic
from pods, from the node or from the outside namespace. Every traffic loop
is bounded in count and each attempt in time (netbed.Bed.probe).

The proxy mode is a module parameter (conftest's `mode` and `proxy`): the
iptables and IPVS modes run the same scenarios once they exist.
SWITCHBOARD_PROXY_MODES (comma-separated) picks the modes; the default is
the ones implemented so far.
"""
import collections
import json
import pathlib
import time

import netbed
import network_namespace
import pytest
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint

LAYOUT = {"node-a": ["pod-1", "pod-2", "pod-3", "client"], "node-b": ["pod-4", "pod-5"]}
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "examples"
CLIENT_SOURCES = 12  # extra addresses of the client pod: a dozen distinct clients
PROXY_NODE = "node-a"  # where switchboard runs


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed(LAYOUT, client_sources={"client": CLIENT_SOURCES}).up()
    try:
        bed.start_servers()
        yield bed
    finally:
        bed.down()


def pods_of(answers):
    return collections.Counter(answer.pod for answer in answers)


def failures(answers):
    return [answer.error for answer in answers if not answer.ok]


def errors_of(answers):
    return {answer.error for answer in answers}


def start(proxy, *items):
    proxy.set_cluster(items)
    proxy.start()


def web(bed, name, ip, pods, *, port=80, target=8080, protocol="TCP", **kwargs):
    """A one-port Service with one slice over `pods` (all ready) and the Service itself."""
    return [
        service(name, [ip], [service_port(port, name="p", protocol=protocol, target=target)], **kwargs),
        endpoint_slice(name, [pod_endpoint(bed.pods[p]) for p in pods], [("p", target, protocol)]),
    ]


def test_bed_routes_pods_across_nodes_without_a_proxy(bed):
    # The topology alone: if this fails, the scenarios below say nothing about switchboard.
    client = bed.pods["client"]
    for pod in ("pod-1", "pod-4"):
        for host, seen in ((bed.pods[pod].ipv4, client.ipv4), (bed.pods[pod].ipv6, client.ipv6)):
            for proto, port in (("tcp", 8080), ("udp", 5353)):
                (answer,) = bed.probe("client", host, port, proto=proto)
                assert (answer.pod, answer.client, answer.port) == (pod, seen, port), (host, proto, answer)
    # Nothing listens on the node itself: refused (not a timeout) proves the LAN route.
    (answer,) = bed.probe("outside", bed.nodes["node-a"].ipv4, 8080)
    assert answer.error == "ECONNREFUSED"
    # No proxy, no Service: a Service address leads nowhere (the default route swallows it).
    (answer,) = bed.probe("client", "10.96.0.10", 80, timeout=0.3)
    assert answer.error == "timeout"


def test_bed_down_removes_everything(root):
    small = netbed.Bed({"node-a": ["pod-1"]}).up()
    small.start_servers(tcp=[8080], udp=[])
    assert len(small.namespaces) == 3  # outside, node-a, pod-1

    small.down()
    small.down()  # idempotent

    assert small.namespaces == []
    assert small not in netbed._live_beds


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_clusterip_reaches_every_ready_endpoint(bed, proxy, proto):
    target = 8080 if proto == "tcp" else 5353
    start(proxy, *web(bed, "spread", "10.96.0.10", ["pod-1", "pod-2", "pod-3"], target=target, protocol=proto.upper()))

    answers = bed.probe("client", "10.96.0.10", 80, proto=proto, count=300)

    assert failures(answers) == [], proxy.log_tail()
    counts = pods_of(answers)
    assert set(counts) == {"pod-1", "pod-2", "pod-3"}
    for pod, count in counts.items():
        assert 60 <= count <= 141, f"{pod} got {count} of 300: {counts}"
    assert {answer.port for answer in answers} == {target}
    # Pod-to-service traffic inside the cluster CIDR keeps the pod's address.
    assert {answer.client for answer in answers} == {bed.pods["client"].ipv4}


def test_clusterip_from_the_node_itself(bed, proxy):
    start(proxy, *web(bed, "fromnode", "10.96.0.11", ["pod-1", "pod-4"]))

    answers = bed.probe(PROXY_NODE, "10.96.0.11", 80, count=40)

    assert failures(answers) == [], proxy.log_tail()
    assert set(pods_of(answers)) == {"pod-1", "pod-4"}


def test_not_ready_never_and_terminating_only_as_a_last_resort(bed, proxy):
    pods = bed.pods
    ports = [service_port(80, name="p", target=8080)]
    start(
        proxy,
        service("mixed", ["10.96.0.12"], ports),
        endpoint_slice(
            "mixed",
            [
                pod_endpoint(pods["pod-1"]),
                pod_endpoint(pods["pod-2"], ready=False, serving=False),
                pod_endpoint(pods["pod-3"], ready=False, serving=True, terminating=True),
            ],
            [("p", 8080, "TCP")],
        ),
        service("draining", ["10.96.0.13"], ports),
        endpoint_slice(
            "draining",
            [
                pod_endpoint(pods["pod-1"], ready=False, serving=False, terminating=True),
                pod_endpoint(pods["pod-2"], ready=False, serving=False),
                pod_endpoint(pods["pod-3"], ready=False, serving=True, terminating=True),
            ],
            [("p", 8080, "TCP")],
        ),
    )

    mixed = bed.probe("client", "10.96.0.12", 80, count=60)
    draining = bed.probe("client", "10.96.0.13", 80, count=60)

    assert failures(mixed) == [] and failures(draining) == [], proxy.log_tail()
    assert pods_of(mixed) == {"pod-1": 60}, "only the ready endpoint while one is ready"
    assert pods_of(draining) == {"pod-3": 60}, "the serving terminating endpoint when none is ready"


def test_named_target_port(bed, proxy):
    # targetPort "web" is 8081 in pod-1 and 8082 in pod-2: the EndpointSlice
    # controller writes one slice per port number, both named after the Service port.
    pods = bed.pods
    start(
        proxy,
        service("named", ["10.96.0.14"], [service_port(80, name="http", target="web")]),
        endpoint_slice("named", [pod_endpoint(pods["pod-1"])], [("http", 8081, "TCP")], suffix="a"),
        endpoint_slice("named", [pod_endpoint(pods["pod-2"])], [("http", 8082, "TCP")], suffix="b"),
    )

    answers = bed.probe("client", "10.96.0.14", 80, count=60)

    assert failures(answers) == [], proxy.log_tail()
    assert {(answer.pod, answer.port) for answer in answers} == {("pod-1", 8081), ("pod-2", 8082)}


def test_multi_port_service(bed, proxy):
    pods = bed.pods
    start(
        proxy,
        service(
            "multi",
            ["10.96.0.15"],
            [
                service_port(80, name="http", target=8080),
                service_port(9090, name="metrics", target=9090),
                service_port(53, name="dns", protocol="UDP", target=5353),
            ],
        ),
        endpoint_slice(
            "multi",
            [pod_endpoint(pods["pod-1"]), pod_endpoint(pods["pod-2"])],
            [("http", 8080, "TCP"), ("metrics", 9090, "TCP"), ("dns", 5353, "UDP")],
        ),
    )

    for port, proto, target in ((80, "tcp", 8080), (9090, "tcp", 9090), (53, "udp", 5353)):
        answers = bed.probe("client", "10.96.0.15", port, proto=proto, count=30)
        assert failures(answers) == [], f"port {port}/{proto}\n{proxy.log_tail()}"
        assert {answer.port for answer in answers} == {target}
        assert set(pods_of(answers)) == {"pod-1", "pod-2"}


def node_port_service(bed, name, ip, node_port, pods, policy):
    return [
        service(
            name,
            [ip],
            [service_port(80, name="p", target=8080, node_port=node_port)],
            type="NodePort",
            external_traffic_policy=policy,
        ),
        endpoint_slice(name, [pod_endpoint(bed.pods[p]) for p in pods], [("p", 8080, "TCP")]),
    ]


def test_nodeport_cluster_policy_hides_the_client(bed, proxy):
    start(proxy, *node_port_service(bed, "np-cluster", "10.96.0.16", 30080, ["pod-1", "pod-4"], "Cluster"))
    node = bed.nodes[PROXY_NODE]

    answers = bed.probe("outside", node.ipv4, 30080, count=40)

    assert failures(answers) == [], proxy.log_tail()
    assert set(pods_of(answers)) == {"pod-1", "pod-4"}, "local and remote endpoints both serve"
    # Masqueraded: the pods see an address of the node, never the client's.
    assert {answer.client for answer in answers} <= {node.ipv4, node.bridge4}


def test_nodeport_local_policy_keeps_the_client_address(bed, proxy):
    start(proxy, *node_port_service(bed, "np-local", "10.96.0.17", 30081, ["pod-1", "pod-4"], "Local"))
    node = bed.nodes[PROXY_NODE]

    answers = bed.probe("outside", node.ipv4, 30081, count=20, source=bed.outside_addresses[0])

    assert failures(answers) == [], proxy.log_tail()
    assert pods_of(answers) == {"pod-1": 20}, "only the endpoint on this node"
    assert {answer.client for answer in answers} == {bed.outside_addresses[0]}


def test_nodeport_local_policy_without_local_endpoint_drops(bed, proxy):
    start(
        proxy,
        *node_port_service(bed, "np-remote", "10.96.0.18", 30082, ["pod-4"], "Local"),
        *node_port_service(bed, "np-control", "10.96.0.19", 30083, ["pod-4"], "Cluster"),
    )
    node = bed.nodes[PROXY_NODE]

    dropped = bed.probe("outside", node.ipv4, 30082, count=2, timeout=1.0)
    control = bed.probe("outside", node.ipv4, 30083, count=5)
    in_cluster = bed.probe("client", "10.96.0.18", 80, count=5)

    assert errors_of(dropped) == {"timeout"}, "dropped: no answer, not refused"
    assert failures(control) == [] and failures(in_cluster) == [], proxy.log_tail()
    assert pods_of(in_cluster) == {"pod-4": 5}, "internal traffic still uses the remote endpoint"


def test_internal_traffic_policy_local(bed, proxy):
    start(
        proxy,
        *web(bed, "itp-local", "10.96.0.28", ["pod-1", "pod-4"], internal_traffic_policy="Local"),
        *web(bed, "itp-remote", "10.96.0.29", ["pod-4"], internal_traffic_policy="Local"),
    )

    local = bed.probe("client", "10.96.0.28", 80, count=20)
    remote_only = bed.probe("client", "10.96.0.29", 80, count=2, timeout=1.0)

    assert failures(local) == [], proxy.log_tail()
    assert pods_of(local) == {"pod-1": 20}, "only the endpoint on the client's node"
    assert errors_of(remote_only) == {"timeout"}, "no local endpoint: dropped"


def test_external_ips(bed, proxy):
    start(proxy, *web(bed, "ext", "10.96.0.30", ["pod-1", "pod-4"], external_ips=["203.0.113.20"]))

    answers = bed.probe("outside", "203.0.113.20", 80, count=30)

    assert failures(answers) == [], proxy.log_tail()
    assert set(pods_of(answers)) == {"pod-1", "pod-4"}


def test_client_ip_affinity_sticks_then_expires(bed, proxy):
    timeout = 2
    start(proxy, *web(bed, "sticky", "10.96.0.20", ["pod-1", "pod-2", "pod-3"], affinity_timeout=timeout))
    sources = bed.pods["client"].sources

    first = {}
    for i, source in enumerate(sources):
        answers = bed.probe("client", "10.96.0.20", 80, count=50 if i == 0 else 5, source=source)
        assert failures(answers) == [], proxy.log_tail()
        assert len(pods_of(answers)) == 1, f"client {source} spread over {pods_of(answers)}"
        first[source] = answers[0].pod
    # Affinity is per client: a dozen clients all on one pod would mean a global choice.
    assert len(set(first.values())) > 1, first

    time.sleep(timeout + 1.0)
    again = {}
    for source in sources:
        (answer,) = bed.probe("client", "10.96.0.20", 80, source=source)
        assert answer.ok, answer.error
        again[source] = answer.pod
    # Each client chooses afresh; all twelve keeping their pod by chance is (1/3)^12.
    assert again != first, "no client chose a new pod after the affinity timeout"


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_no_endpoints_rejects_at_once(bed, proxy, proto):
    target = 8080 if proto == "tcp" else 5353
    start(
        proxy,
        service("empty", ["10.96.0.21"], [service_port(80, name="p", protocol=proto.upper(), target=target)]),
        endpoint_slice("empty", [], [("p", target, proto.upper())]),
    )

    answers = bed.probe("client", "10.96.0.21", 80, proto=proto, count=3, timeout=1.0)

    assert errors_of(answers) == {"ECONNREFUSED"}, proxy.log_tail()


def test_endpoint_at_the_metadata_address_is_not_programmed(bed, proxy):
    # CVE-2021-25737: an EndpointSlice written by hand may name the node's
    # link-local metadata address, and a Pod would then reach the node's
    # metadata service through a ClusterIP. The API server refuses such
    # addresses; switchboard refuses the slice too (docs/decoding.md), so the
    # Service has no endpoints and is rejected.
    node = bed.nodes[PROXY_NODE]
    network_namespace.run(network_namespace.in_ns(node.ns, ["ip", "addr", "add", "169.254.169.254/32", "dev", "lo"]))
    metadata = netbed.Pod(name="node-metadata", node=PROXY_NODE, ns=node.ns, ipv4="169.254.169.254",
                          ipv6="")
    bed.pods["node-metadata"] = metadata
    server = None
    try:
        bed.start_servers(tcp=[8080], udp=[5353], pods=["node-metadata"])
        server = bed._servers[-1]
        (direct,) = bed.probe(PROXY_NODE, "169.254.169.254", 8080)
        assert direct.pod == "node-metadata", "the stand-in metadata service does not answer"
        start(
            proxy,
            service("meta", ["10.96.0.22"], [service_port(80, name="p", target=8080)]),
            endpoint_slice("meta", [pod_endpoint(metadata), pod_endpoint(bed.pods["pod-1"])], [("p", 8080, "TCP")]),
        )

        answers = bed.probe("client", "10.96.0.22", 80, count=5, timeout=1.0)
    finally:
        # The bed outlives the test (one per module): leave it as it was.
        del bed.pods["node-metadata"]
        if server is not None:
            server.kill()
            server.wait()
        network_namespace.run(network_namespace.in_ns(node.ns, ["ip", "addr", "del", "169.254.169.254/32", "dev", "lo"]))

    assert "node-metadata" not in pods_of(answers), "a Pod reached the node's metadata address"
    assert errors_of(answers) == {"ECONNREFUSED"}, proxy.log_tail()


def test_load_balancer_source_ranges(bed, proxy):
    allowed, other = bed.outside_addresses
    start(
        proxy,
        *web(
            bed,
            "lb",
            "10.96.0.22",
            ["pod-1", "pod-2"],
            type="LoadBalancer",
            load_balancer_ips=["203.0.113.10"],
            load_balancer_source_ranges=[f"{allowed}/32"],
        ),
    )

    reached = bed.probe("outside", "203.0.113.10", 80, count=10, source=allowed)
    dropped = bed.probe("outside", "203.0.113.10", 80, count=2, source=other, timeout=1.0)

    assert failures(reached) == [], proxy.log_tail()
    assert set(pods_of(reached)) <= {"pod-1", "pod-2"}
    assert errors_of(dropped) == {"timeout"}


def test_hairpin_pod_reaches_itself_through_its_service(bed, proxy):
    start(proxy, *web(bed, "self", "10.96.0.23", ["pod-1"]))

    answers = bed.probe("pod-1", "10.96.0.23", 80, count=10)

    assert failures(answers) == [], proxy.log_tail()
    assert pods_of(answers) == {"pod-1": 10}
    # Masqueraded to the node, else the reply would go pod-to-itself and never be un-DNATed.
    assert {answer.client for answer in answers} == {bed.nodes[PROXY_NODE].bridge4}


def test_source_file_change_reaches_the_kernel_within_a_second(bed, proxy):
    start(proxy, *web(bed, "moving", "10.96.0.24", ["pod-1"]))
    assert pods_of(bed.probe("client", "10.96.0.24", 80, count=3)) == {"pod-1": 3}, proxy.log_tail()

    proxy.set_cluster(web(bed, "moving", "10.96.0.24", ["pod-2"]))
    changed = time.monotonic()
    moved = False
    while not moved and time.monotonic() - changed < 1.0:
        (answer,) = bed.probe("client", "10.96.0.24", 80, timeout=0.2)
        moved = answer.pod == "pod-2"

    assert moved, f"pod-2 not reached within 1 s of the file change\n{proxy.log_tail()}"
    assert pods_of(bed.probe("client", "10.96.0.24", 80, count=10)) == {"pod-2": 10}


def test_daemon_restart_keeps_connections(bed, proxy):
    start(proxy, *web(bed, "steady", "10.96.0.25", ["pod-1", "pod-2"]))
    held = bed.hold("client", "10.96.0.25", 80)
    loop = bed.loop("client", "10.96.0.25", 80, interval=0.02, max_seconds=30)
    try:
        assert held.greeting.ok, held.greeting.error
        time.sleep(0.3)
        assert proxy.stop() == 0, proxy.log_tail()
        time.sleep(0.3)  # traffic while no daemon runs: the kernel state must stay
        proxy.start()
        time.sleep(0.3)
    finally:
        attempts = loop.stop()
        echo = held.ping()
        held.close()

    assert len(attempts) >= 10, "the loop client barely ran"
    assert failures(attempts) == [], proxy.log_tail()
    assert set(pods_of(attempts)) == {"pod-1", "pod-2"}
    assert echo.ok and echo.pod == held.greeting.pod, f"held connection broke: {echo.error}"


def test_cleanup_leaves_no_switchboard_table(bed, proxy):
    start(proxy, *web(bed, "gone", "10.96.0.26", ["pod-1"]))
    assert bed.probe("client", "10.96.0.26", 80)[0].ok, proxy.log_tail()
    assert proxy.kernel_objects(), "switchboard made no kernel objects"
    assert proxy.stop() == 0

    result = proxy.cleanup()

    assert result.returncode == 0, result.stderr
    # The node namespace is the bed's own: no other program made tables in it.
    assert proxy.kernel_objects() == []
    assert proxy.cleanup().returncode == 0, "cleanup is idempotent"
    assert bed.probe("client", "10.96.0.26", 80, timeout=0.5)[0].error == "timeout"


def test_ipv6_clusterip(bed, proxy):
    pods = [bed.pods[p] for p in ("pod-1", "pod-2", "pod-3")]
    start(
        proxy,
        service("web6", ["fd00:10:96::10"], [service_port(80, name="p", target=8080)]),
        endpoint_slice("web6", [pod_endpoint(p, ipv6=True) for p in pods], [("p", 8080, "TCP")], ipv6=True),
    )

    answers = bed.probe("client", "fd00:10:96::10", 80, count=60)

    assert failures(answers) == [], proxy.log_tail()
    assert set(pods_of(answers)) == {"pod-1", "pod-2", "pod-3"}
    assert {answer.client for answer in answers} == {bed.pods["client"].ipv6}


def test_dual_stack_clusterip(bed, proxy):
    pods = [bed.pods[p] for p in ("pod-1", "pod-4")]
    ports = [("p", 8080, "TCP")]
    start(
        proxy,
        service("dual", ["10.96.0.32", "fd00:10:96::32"], [service_port(80, name="p", target=8080)]),
        endpoint_slice("dual", [pod_endpoint(p) for p in pods], ports, suffix="v4"),
        endpoint_slice("dual", [pod_endpoint(p, ipv6=True) for p in pods], ports, suffix="v6", ipv6=True),
    )

    for host, seen in (("10.96.0.32", bed.pods["client"].ipv4), ("fd00:10:96::32", bed.pods["client"].ipv6)):
        answers = bed.probe("client", host, 80, count=30)
        assert failures(answers) == [], f"{host}\n{proxy.log_tail()}"
        assert set(pods_of(answers)) == {"pod-1", "pod-4"}
        assert {answer.client for answer in answers} == {seen}


def test_udp_flow_moves_off_a_removed_endpoint(bed, proxy):
    # One client port throughout: the same conntrack flow. Unless switchboard deletes
    # the flows of a removed UDP endpoint, the kernel keeps sending them there
    # (pod-1 still answers here, as a Pod in its grace period would).
    def service_on(pod):
        return web(bed, "udp-move", "10.96.0.27", [pod], target=5353, protocol="UDP")

    start(proxy, *service_on("pod-1"))
    before = bed.probe("client", "10.96.0.27", 80, proto="udp", source_port=40123, count=3)
    assert pods_of(before) == {"pod-1": 3}, proxy.log_tail()

    proxy.set_cluster(service_on("pod-2"))
    changed = time.monotonic()
    moved = False
    while not moved and time.monotonic() - changed < 2.0:
        (answer,) = bed.probe("client", "10.96.0.27", 80, proto="udp", source_port=40123, timeout=0.2)
        moved = answer.pod == "pod-2"

    assert moved, f"the UDP flow stayed on the removed endpoint\n{proxy.log_tail()}"


UDP_PINNED_PORT = 40125  # the client's fixed source port: one conntrack flow per test


def pinned_udp(bed, ip, count=1):
    """UDP exchanges to ip:80 from the client's fixed source port (the same flow each time)."""
    return bed.probe("client", ip, 80, proto="udp", source_port=UDP_PINNED_PORT, count=count, timeout=0.5)


def udp_service_on(bed, name, ip, pod):
    return web(bed, name, ip, [pod], target=5353, protocol="UDP")


def sample_value(proxy, name):
    """The value of one sample line of /metrics (`name` with its labels), None when absent."""
    status, body = proxy.http_get(proxy.METRICS, "/metrics")
    assert status == 200, body
    for line in body.splitlines():
        key, _, value = line.rpartition(" ")
        if key == name:
            return float(value)
    return None


def test_udp_flow_leaves_an_endpoint_removed_while_the_daemon_was_down(bed, proxy):
    # kube-proxy's conntrack reconciler: the first sync after a start compares the
    # kernel's UDP flows with the whole plan, not with a previous plan it does not have.
    start(proxy, *udp_service_on(bed, "udp-down", "10.96.0.33", "pod-1"))
    assert pods_of(pinned_udp(bed, "10.96.0.33", count=3)) == {"pod-1": 3}, proxy.log_tail()
    assert proxy.stop() == 0
    proxy.set_cluster(udp_service_on(bed, "udp-down", "10.96.0.33", "pod-2"))
    # The rules stay while the daemon is down, and so does the flow.
    assert pods_of(pinned_udp(bed, "10.96.0.33")) == {"pod-1": 1}

    proxy.start()  # returns once /readyz says the first sync is done

    after = pinned_udp(bed, "10.96.0.33", count=5)
    assert pods_of(after) == {"pod-2": 5}, f"the flow kept the removed endpoint\n{proxy.log_tail()}"


def test_udp_flow_leaves_an_endpoint_removed_by_a_periodic_full_sync(bed, proxy):
    # --min-sync-period, --sync-period and --full-sync-period equal: every sync after
    # the first is due when a full one is, so the removal is applied by a full sync
    # (no previous plan); the metrics below prove that no partial sync ran.
    proxy.extra_args += ["--min-sync-period=1s", "--sync-period=1s", "--full-sync-period=1s"]
    start(proxy, *udp_service_on(bed, "udp-full", "10.96.0.34", "pod-1"))
    assert pods_of(pinned_udp(bed, "10.96.0.34", count=3)) == {"pod-1": 3}, proxy.log_tail()

    proxy.set_cluster(udp_service_on(bed, "udp-full", "10.96.0.34", "pod-2"))
    changed = time.monotonic()
    applied = False
    while not applied and time.monotonic() - changed < 15.0:
        (fresh,) = bed.probe("client", "10.96.0.34", 80, proto="udp", timeout=0.5)
        applied = fresh.pod == "pod-2"
    assert applied, f"new flows never reached the new endpoint\n{proxy.log_tail()}"
    stale = []
    moved = False
    while not moved and time.monotonic() - changed < 30.0:
        (answer,) = pinned_udp(bed, "10.96.0.34")
        moved = answer.pod == "pod-2"
        if not moved:
            stale.append(answer.pod)

    assert moved, f"the flow kept the removed endpoint ({len(stale)} answers)\n{proxy.log_tail()}"
    partial = 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    full = 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    assert sample_value(proxy, partial) == 0, "a partial sync ran: the test shows nothing"
    assert sample_value(proxy, full) >= 2


def test_documentation_nodeport_example_end_to_end(root, mode, switchboard_bin):
    # The demo's ground: a bed shaped after deploy/examples/nodeport.json (pods at the
    # example's endpoint addresses), reached through the example's NodePort.
    items = json.loads((EXAMPLES / "nodeport.json").read_text())["items"]
    ready = {
        ep["targetRef"]["name"]
        for item in items
        if item["kind"] == "EndpointSlice"
        for ep in item["endpoints"]
        if ep.get("conditions", {}).get("ready", True)
    }
    (node_port,) = [p["nodePort"] for i in items if i["kind"] == "Service" for p in i["spec"]["ports"]]
    bed = netbed.Bed.from_cluster(items).up()
    daemon = netbed.Switchboard(bed, switchboard_bin, mode)
    try:
        bed.start_servers(tcp=[80], udp=[])
        daemon.set_cluster(items, add_nodes=False)
        daemon.start()

        answers = bed.probe("outside", bed.nodes["node-a"].ipv4, node_port, count=30)

        assert failures(answers) == [], daemon.log_tail()
        assert set(pods_of(answers)) == ready, "every ready endpoint, never the not-ready one"
    finally:
        daemon.close()
        bed.down()


def test_periodic_resync_repairs_a_flushed_table(bed, proxy):
    proxy.extra_args.append("--sync-period=1s")
    start(proxy, *web(bed, "drift", "10.96.0.31", ["pod-1"]))
    assert bed.probe("client", "10.96.0.31", 80)[0].ok, proxy.log_tail()

    # A resync may repair the table between the flush and the probe that
    # should see it broken (the machine may stall for a second): flush again
    # until one probe sees the break, a bounded number of times.
    broken = None
    for _ in range(5):
        proxy.flush_rules()
        broken = bed.probe("client", "10.96.0.31", 80, timeout=0.3)[0]
        if not broken.ok:
            break
    flushed = time.monotonic()
    repaired = False
    while not repaired and time.monotonic() - flushed < 5.0:
        repaired = bed.probe("client", "10.96.0.31", 80, timeout=0.3)[0].ok

    assert not broken.ok, "flushing the table never broke the service: the test shows nothing"
    assert repaired, f"the table was not repaired within 5 s (sync period 1 s)\n{proxy.log_tail()}"
    # The periodic check saw it, and a full sync (the first was the other) repaired it.
    assert sample_value(proxy, "switchboard_sync_kernel_drift_total") >= 1
    full = 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    assert sample_value(proxy, full) >= 2


def test_periodic_syncs_of_an_untouched_kernel_are_partial(bed, proxy):
    # kube-proxy's FullSyncPeriod: a full sync (the whole ruleset read back and
    # written) runs first, then hourly; the periodic ones in between are partial,
    # and a change during them never waits behind a full one.
    proxy.extra_args.append("--sync-period=1s")
    start(proxy, *web(bed, "calm", "10.96.0.32", ["pod-1"]))
    full = 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    time.sleep(3.5)  # three periodic syncs or more
    began = time.monotonic()
    partial = 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"}'
    assert sample_value(proxy, full) == 1, proxy.log_tail()
    assert sample_value(proxy, "switchboard_sync_kernel_drift_total") == 0
    proxy.set_cluster(web(bed, "calm", "10.96.0.32", ["pod-2"]))
    moved = False
    while not moved and time.monotonic() - began < 15.0:
        moved = pods_of(bed.probe("client", "10.96.0.32", 80, timeout=0.3)) == {"pod-2": 1}
    assert moved, proxy.log_tail()
    assert sample_value(proxy, full) == 1
    assert sample_value(proxy, partial) >= 1


# ---- --detect-local-mode ----------------------------------------------------
# The detector decides what kube-proxy uses it for: ClusterIP traffic that is
# not local is masqueraded (the endpoint sees an address of the node), and local
# traffic to a NodePort under externalTrafficPolicy Local is short-circuited to
# every endpoint (external traffic gets the node's own endpoints only).


def detect_local_services(bed):
    """A ClusterIP and a Local-policy NodePort, both over pod-1 (node-a) and pod-4 (node-b)."""
    return [
        *web(bed, "dl-cip", "10.96.0.40", ["pod-1", "pod-4"]),
        *node_port_service(bed, "dl-np", "10.96.0.41", 30090, ["pod-1", "pod-4"], "Local"),
    ]


def assert_local(bed, proxy, who):
    """`who`'s traffic is local: its ClusterIP traffic keeps its address, and the
    Local NodePort sends it to both endpoints."""
    node = bed.nodes[PROXY_NODE]
    cip = bed.probe(who, "10.96.0.40", 80, count=20)
    np = bed.probe(who, node.ipv4, 30090, count=30)
    assert failures(cip) == [] and failures(np) == [], proxy.log_tail()
    assert {answer.client for answer in cip} == {bed.pods[who].ipv4}, "local: not masqueraded"
    assert set(pods_of(cip)) == {"pod-1", "pod-4"}
    assert set(pods_of(np)) == {"pod-1", "pod-4"}, "local: short-circuited to every endpoint"
    assert {answer.client for answer in np} == {bed.pods[who].ipv4}


def assert_not_local(bed, proxy, who):
    """`who`'s traffic is not local: the Local NodePort sends it to node-a's endpoint only,
    keeping its address."""
    np = bed.probe(who, bed.nodes[PROXY_NODE].ipv4, 30090, count=20)
    assert failures(np) == [], proxy.log_tail()
    assert pods_of(np) == {"pod-1": 20}, "not local: the node's own endpoints only"
    assert {answer.client for answer in np} == {bed.pods[who].ipv4}


def test_local_policy_short_circuit_without_local_endpoints(bed, proxy):
    # Only pod-4 (node-b) serves: the outside is dropped, but a pod on node-a
    # still reaches the NodePort through the short circuit (kube-proxy's).
    start(proxy, *node_port_service(bed, "dl-remote", "10.96.0.43", 30091, ["pod-4"], "Local"))
    node = bed.nodes[PROXY_NODE]

    from_pod = bed.probe("client", node.ipv4, 30091, count=10)
    from_outside = bed.probe("outside", node.ipv4, 30091, count=2, timeout=1.0)

    assert failures(from_pod) == [], proxy.log_tail()
    assert pods_of(from_pod) == {"pod-4": 10}
    assert {answer.client for answer in from_pod} == {bed.pods["client"].ipv4}
    assert errors_of(from_outside) == {"timeout"}, "dropped: no answer, not refused"


def test_detect_local_bridge_interface(bed, proxy):
    # Pods' packets reach node-a's IP layer on cbr0 (br_netfilter hands routed and
    # bridged IP to netfilter with the bridge as input device).
    proxy.extra_args += ["--detect-local-mode=BridgeInterface", "--pod-bridge-interface=cbr0"]
    start(proxy, *detect_local_services(bed))

    assert_local(bed, proxy, "client")
    # The outside arrives on eth0: not local, its Local NodePort traffic keeps to
    # pod-1 and its address.
    source = bed.outside_addresses[0]
    outside = bed.probe("outside", bed.nodes[PROXY_NODE].ipv4, 30090, count=20, source=source)
    assert failures(outside) == [], proxy.log_tail()
    assert pods_of(outside) == {"pod-1": 20}
    assert {answer.client for answer in outside} == {source}


def test_detect_local_bridge_interface_naming_another_bridge(bed, proxy):
    # The same pod, the same addresses, but the detector names another bridge: the
    # interface decides, not the (cluster-CIDR) source address.
    proxy.extra_args += ["--detect-local-mode=BridgeInterface", "--pod-bridge-interface=sbdefault"]
    start(proxy, *detect_local_services(bed))
    node = bed.nodes[PROXY_NODE]

    cip = bed.probe("client", "10.96.0.40", 80, count=20)

    assert failures(cip) == [], proxy.log_tail()
    assert bed.pods["client"].ipv4 not in {answer.client for answer in cip}, "not local: masqueraded"
    assert {answer.client for answer in cip} <= {node.ipv4, node.bridge4}
    assert_not_local(bed, proxy, "client")


@pytest.mark.parametrize("prefix, local", [("cbr", True), ("veth", False)])
def test_detect_local_interface_name_prefix(bed, proxy, prefix, local):
    # The pods' veths are ports of cbr0, so the IP layer sees cbr0 as the input
    # interface, never vethKxI: a prefix of the bridge's name detects the pods, the
    # veths' prefix does not (it does for CNIs that route each pod's veth, e.g. cali*).
    proxy.extra_args += ["--detect-local-mode=InterfaceNamePrefix", f"--pod-interface-name-prefix={prefix}"]
    start(proxy, *detect_local_services(bed))

    if local:
        assert_local(bed, proxy, "client")
    else:
        assert_not_local(bed, proxy, "client")


def test_detect_local_node_cidr(bed, proxy):
    # node-a's podCIDR is 10.244.1.0/24; --cluster-cidr (10.244.0.0/16, from argv)
    # is not what decides in this mode: pod-5 on node-b is not local here.
    proxy.extra_args.append("--detect-local-mode=NodeCIDR")
    start(proxy, *detect_local_services(bed))

    assert_local(bed, proxy, "client")
    assert_not_local(bed, proxy, "pod-5")


def test_detect_local_node_cidr_waits_for_the_pod_cidrs(bed, proxy):
    # Until the Node has podCIDRs nothing is local (kube-proxy's no-op detector): the
    # client's NodePort traffic is not short-circuited. Once they are assigned, the
    # daemon renders with them without a restart.
    def nodes(with_pod_cidrs):
        objects = [netbed.node_object(node) for node in bed.nodes.values()]
        if not with_pod_cidrs:
            for obj in objects:
                del obj["spec"]
        return objects

    proxy.extra_args.append("--detect-local-mode=NodeCIDR")
    proxy.set_cluster([*nodes(False), *detect_local_services(bed)], add_nodes=False)
    proxy.start()
    assert_not_local(bed, proxy, "client")
    # More syncs while the podCIDRs are unknown: still one warning.
    more = web(bed, "dl-more", "10.96.0.42", ["pod-1"])
    proxy.set_cluster([*nodes(False), *detect_local_services(bed), *more], add_nodes=False)
    added = time.monotonic()
    while not bed.probe("client", "10.96.0.42", 80, timeout=0.3)[0].ok:
        assert time.monotonic() - added < 5.0, f"a new Service not served within 5 s\n{proxy.log_tail()}"

    proxy.set_cluster([*nodes(True), *detect_local_services(bed)], add_nodes=False)
    assigned = time.monotonic()
    short_circuited = False
    while not short_circuited and time.monotonic() - assigned < 5.0:
        answers = bed.probe("client", bed.nodes[PROXY_NODE].ipv4, 30090, count=10, timeout=0.5)
        short_circuited = "pod-4" in pods_of(answers)

    assert short_circuited, f"podCIDRs assigned, yet no short circuit within 5 s\n{proxy.log_tail()}"
    assert_local(bed, proxy, "client")
    log = proxy.log_path.read_text().split("---- start")[-1]
    assert log.count("has no spec.podCIDRs") == 1, log
    assert "local traffic comes from 10.244.1.0/24,fd00:10:244:1::/64" in log, log
