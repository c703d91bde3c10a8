"""What a Pod sees (issue 14): `switchboard pod-dns` and `switchboard lookup`
against real Pods of a netbed.

The node runs switchboard on the kube-dns ClusterIP (--dns-local-address),
forwarding to a fake upstream on the node's loopback that knows one name
(www.example.com A 192.0.2.1); the node's resolv.conf names that upstream and
a search domain (corp.example), which kubelet appends to ClusterFirst Pods.

- `pod-dns` prints, for each Pod object, the resolv.conf the test bed gives
  its Pods (netbed.pod_resolv_conf, with the node's search domain), and that
  output is what the Pods here run with;
- `lookup --pod` names the same answer `getent ahostsv4` in the Pod's
  namespace resolves (addresses and canonical name), and asks as many names
  as the Pod's resolver sends queries (an nftables counter in the Pod's
  namespace), for a short name, a namespaced name, an FQDN and an outside name;
  with --live it asks the running server on the Pod's nameserver and walks
  the same way;
- bad input is one line on stderr and exit 2.
"""
import json

import dns_stub
import dns_wire
import netbed
import network_namespace
import pytest
from kube_objects import endpoint_slice, pod, service, service_port, write_atomically
from netbed import pod_endpoint
from node_dns import (KUBE_DNS, UPSTREAM, add_dns_counter, counted, pod_run,
                      upstream_and_daemon)

LAYOUT = {"node-a": ["client-a", "client-b", "web-1"]}
WEB_A = "10.96.0.21"
WEB_B = "10.96.0.22"
OUTSIDE = "www.example.com"
OUTSIDE_ADDRESS = "192.0.2.1"
NODE_SEARCH = "corp.example"
NODE_RESOLV_CONF = f"search {NODE_SEARCH}\nnameserver {UPSTREAM}\n"


def upstream_answer(stub, query):
    if query.qtype == dns_wire.TYPE_A and query.name == OUTSIDE:
        return dns_stub.reply(query, answers=[dns_wire.a_record(OUTSIDE_ADDRESS, ttl=300)])
    return dns_stub.reply(query, rcode=dns_wire.NXDOMAIN)


def pod_objects(bed):
    return {"client-a": pod("client-a", "a", [bed.pods["client-a"].ipv4]),
            "client-b": pod("client-b", "b", [bed.pods["client-b"].ipv4])}


def cluster(bed):
    web = bed.pods["web-1"]
    return [
        service("kube-dns", [KUBE_DNS], [service_port(53, name="dns", protocol="UDP")],
                namespace="kube-system"),
        service("web", [WEB_A], [service_port(80, name="http", target=8080)], namespace="a"),
        endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")], namespace="a"),
        service("web", [WEB_B], [service_port(80, name="http", target=8080)], namespace="b"),
        endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")], namespace="b"),
        *pod_objects(bed).values(),
    ]


def run_switchboard(bed, binary, *args):
    """switchboard in the node's namespace, where `ip netns exec` puts the node's
    resolv.conf on /etc/resolv.conf."""
    return network_namespace.run_in(bed.nodes["node-a"].ns, binary, *args)


@pytest.fixture(scope="module")
def bed(root, switchboard_bin, tmp_path_factory):
    bed = netbed.Bed(LAYOUT).up()
    folder = tmp_path_factory.mktemp("pods")
    try:
        bed.start_servers(pods=["web-1"])
        files = [(bed.nodes["node-a"].ns, NODE_RESOLV_CONF)]
        # Each Pod runs with the resolv.conf `pod-dns` prints for its object.
        with netbed.resolv_confs(files):
            for name, obj in pod_objects(bed).items():
                path = folder / f"{name}.json"
                write_atomically(path, obj)
                out = run_switchboard(bed, switchboard_bin, "pod-dns", path,
                                      f"--cluster-dns={KUBE_DNS}")
                assert out.returncode == 0, out.stderr
                bed.pods[name].resolv_conf = out.stdout
                bed.pods[name].object_file = path
                add_dns_counter(bed, name)
        files += [(bed.pods[name].ns, bed.pods[name].resolv_conf) for name in pod_objects(bed)]
        with netbed.resolv_confs(files):
            yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module")
def daemon(bed, switchboard_bin):
    with upstream_and_daemon(bed, switchboard_bin, cluster(bed), upstream_answer) as daemon:
        yield daemon


def getent(bed, name, host):
    """(addresses, canonical name, DNS packets sent) of `getent ahostsv4 host` in the Pod."""
    out, sent = counted(bed, name, ["getent", "ahostsv4", host])
    lines = [line.split() for line in out.splitlines() if line.strip()]
    canonical = lines[0][2] if lines and len(lines[0]) > 2 else None
    return {line[0] for line in lines}, canonical, sent


def lookup(bed, daemon, binary, name, host, *extra):
    out = run_switchboard(bed, binary, "lookup", f"--pod={pod_namespace(name)}/{name}", host,
                          f"--source=file:{daemon.cluster_file}", f"--cluster-dns={KUBE_DNS}",
                          f"--dns-upstream={UPSTREAM}", "--json", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def pod_namespace(name):
    return {"client-a": "a", "client-b": "b"}[name]


def test_pod_dns_prints_the_resolv_conf_the_bed_gives_its_pods(bed):
    for name in ("client-a", "client-b"):
        expected = netbed.pod_resolv_conf(pod_namespace(name), KUBE_DNS).replace(
            "cluster.local\n", f"cluster.local {NODE_SEARCH}\n", 1)
        assert bed.pods[name].resolv_conf == expected
        assert pod_run(bed, name, ["cat", "/etc/resolv.conf"]).stdout == expected


@pytest.mark.parametrize("name,host,address,canonical,asked", [
    ("client-a", "web", WEB_A, "web.a.svc.cluster.local", 1),               # short
    ("client-b", "web", WEB_B, "web.b.svc.cluster.local", 1),
    ("client-a", "web.b", WEB_B, "web.b.svc.cluster.local", 2),             # namespaced
    ("client-b", "web.a.svc.cluster.local.", WEB_A, "web.a.svc.cluster.local", 1),  # FQDN
    ("client-a", "web.b.svc.cluster.local", WEB_B, "web.b.svc.cluster.local", 5),   # 4 dots < 5
    ("client-a", OUTSIDE, OUTSIDE_ADDRESS, OUTSIDE, 5),                      # outside
])
def test_lookup_agrees_with_getent(bed, daemon, switchboard_bin, name, host, address,
                                   canonical, asked):
    addresses, getent_canonical, sent = getent(bed, name, host)
    assert (addresses, getent_canonical, sent) == ({address}, canonical, asked), daemon.log_tail()
    walk = lookup(bed, daemon, switchboard_bin, name, host)
    assert walk["answers"] == [address]
    assert walk["answered"] == canonical + "."
    assert len(walk["steps"]) == sent
    assert all(step["outcome"] == "NXDOMAIN" for step in walk["steps"][:-1])
    assert walk["steps"][-1]["source"] == ("zone" if address != OUTSIDE_ADDRESS
                                           else f"upstream {UPSTREAM}:53")
    # --live asks the running server on the Pod's nameserver: the same walk.
    live = lookup(bed, daemon, switchboard_bin, name, host, "--live")
    assert [step["name"] for step in live["steps"]] == [step["name"] for step in walk["steps"]]
    assert [step["outcome"] for step in live["steps"]] == [step["outcome"] for step in walk["steps"]]
    assert live["answers"] == [address]
    assert {step["source"] for step in live["steps"]} == {f"nameserver {KUBE_DNS}:53"}


def test_lookup_of_a_missing_name_walks_the_whole_list(bed, daemon, switchboard_bin):
    addresses, _, sent = getent(bed, "client-a", "nothing")
    walk = lookup(bed, daemon, switchboard_bin, "client-a", "nothing")
    assert addresses == set() and walk["answered"] is None and walk["answers"] == []
    assert [step["name"] for step in walk["steps"]] == [
        "nothing.a.svc.cluster.local.", "nothing.svc.cluster.local.", "nothing.cluster.local.",
        f"nothing.{NODE_SEARCH}.", "nothing."]
    assert len(walk["steps"]) == sent


def test_lookup_text_names_each_step(bed, daemon, switchboard_bin):
    out = run_switchboard(bed, switchboard_bin, "lookup", "--pod=a/client-a", "web.b",
                          f"--source=file:{daemon.cluster_file}", f"--cluster-dns={KUBE_DNS}")
    assert out.returncode == 0, out.stderr
    assert "1. web.b.a.svc.cluster.local. A: NXDOMAIN from the zone" in out.stdout
    assert "2. web.b.svc.cluster.local. A: answer from the zone" in out.stdout
    assert f"web.b.svc.cluster.local. 30 IN A {WEB_B}" in out.stdout
    assert "Answer: web.b.svc.cluster.local. (the 2nd of 5 names)" in out.stdout


@pytest.mark.parametrize("args,message", [
    (["--pod=zz/client-a", "web"], 'namespace "zz" is unknown'),
    (["--pod=a/nobody", "web"], "no Pod a/nobody"),
    (["--pod=a", "web"], "is not NAMESPACE/NAME"),
    (["--pod=a/client-a", "web", "--type=MX"], "is not one of A, AAAA, SRV"),
    (["--pod=a/client-a"], "QNAME is required"),
])
def test_lookup_bad_input_is_one_line_and_exit_2(bed, daemon, switchboard_bin, args, message):
    out = run_switchboard(bed, switchboard_bin, "lookup", *args,
                          f"--source=file:{daemon.cluster_file}")
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr


def test_pod_dns_bad_input_is_one_line_and_exit_2(bed, switchboard_bin, tmp_path):
    service_file = tmp_path / "service.json"
    write_atomically(service_file, service("web", [WEB_A], [service_port(80)], namespace="a"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "Pod", "metadata": ')
    none_policy = tmp_path / "none.json"
    write_atomically(none_policy, pod("p", "a", ["10.244.0.9"], dns_policy="None"))
    for path, message in [(service_file, "not a Pod"), (broken, "invalid JSON"),
                          (none_policy, "must provide at least one DNS nameserver")]:
        out = run_switchboard(bed, switchboard_bin, "pod-dns", path)
        assert out.returncode == 2
        assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr
