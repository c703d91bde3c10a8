"""Cluster DNS (issue 5) with the real `dig` and glibc.

Topology (root): a "node" network namespace runs `switchboard --dns-listen
10.53.0.1:53` fed by a cluster JSON file, and a stub upstream DNS server
(dns_stub, UDP and TCP) on 127.0.0.2:53 that logs every query it gets. A "pod" namespace is wired to
the node with a veth (10.53.0.2) and has a private resolv.conf (as a Pod's:
search default.svc.cluster.local svc.cluster.local cluster.local, ndots:5,
nameserver 10.53.0.1), which `ip netns exec` bind-mounts over
/etc/resolv.conf, so `getent hosts` exercises glibc's search path.

Without root, the loop-detection test still runs on loopback with the
test driver tests/bench/dns_serve.
"""
import json
import re
import socket
import subprocess
import time
from contextlib import ExitStack

import pytest

import dns_stub
import dns_wire
import network_namespace
from daemons import terminate
from kube_objects import cluster_list, endpoint, endpoint_slice, service, service_port
from netbed import resolv_confs
from network_namespace import run, run_in
from probes import free_port, python_in

NODE_ADDR = "10.53.0.1"
POD_ADDR = "10.53.0.2"
UPSTREAM_ADDR = "127.0.0.2"
DEAD_UPSTREAM = "127.0.0.3"  # nothing listens there: the first attempt fails (port unreachable)
# A Pod's resolv.conf (ClusterFirst in `default`), with short timeouts.
POD_RESOLV_CONF = ("search default.svc.cluster.local svc.cluster.local cluster.local\n"
                   f"nameserver {NODE_ADDR}\noptions ndots:5 timeout:2 attempts:2\n")
HTTP = service_port(80, name="http", target=8080)
TYPE_PTR = 12


def upstream_answer(stub, query):
    """The upstream's zone: www and my.database under example.com have an A record,
    big.example.com's TXT records (4 KiB) come over TCP only (truncated over UDP), any
    other question is NXDOMAIN with example.com's SOA."""
    if query.qtype == dns_wire.TYPE_A and query.name in ("www.example.com",
                                                         "my.database.example.com"):
        address = "192.0.2.1" if query.name.startswith("www") else "192.0.2.7"
        return dns_stub.reply(query, answers=[dns_wire.a_record(address, ttl=300)])
    if query.qtype == dns_wire.TYPE_TXT and query.name == "big.example.com":
        if query.proto == "udp":
            flags = dns_stub.RESPONSE | (query.flags & dns_wire.RD) | dns_wire.TC
            return dns_stub.reply(query, flags=flags)
        texts = [bytes([100]) + (b"%03d" % i) * 33 + b"x" for i in range(40)]
        return dns_stub.reply(query, answers=[dns_wire.record(dns_wire.TYPE_TXT, text, ttl=300)
                                              for text in texts])
    soa = dns_wire.soa_record("example.com", serial=1, refresh=2, retry=3, expire=4,
                              minimum=60, mname="ns.example.com", rname="h.example.com")
    return dns_stub.reply(query, rcode=dns_wire.NXDOMAIN, authority=[soa])


def headless(name):
    return service(name, [], [HTTP])


def cluster(extra=()):
    return cluster_list([
        service("web", ["10.96.0.10", "fd00:96::10"], [HTTP]),
        endpoint_slice("web", [
            endpoint("10.244.3.7"),
            endpoint("10.244.3.8", hostname="api-0", pod="api-0"),
            endpoint("10.244.3.9", ready=False),
        ], name="web-v4"),
        headless("nginx"),
        endpoint_slice("nginx", [
            endpoint("10.244.0.17", hostname="web-0", pod="web-0"),
            endpoint("10.244.1.18", hostname="web-1", pod="web-1"),
            endpoint("10.244.2.19", hostname="web-2", ready=False, pod="web-2"),
        ], name="nginx-v4"),
        headless("empty"),
        service("db", [], [], external_name="my.database.example.com"),
        service("kube-dns", ["10.96.0.53"], [service_port(53, name="dns", protocol="UDP")],
                namespace="kube-system"),
        *extra,
    ])


class DnsBed:
    """The node and pod namespaces (a veth between them), the pod's resolv.conf, the
    stub upstream (dns_stub, UDP and TCP, in the node) and switchboard (in the node)."""

    def __init__(self, tmp, switchboard_bin):
        prefix = network_namespace.new_prefix()
        self.node = f"{prefix}-node"
        self.pod = f"{prefix}-pod"
        self.tmp = tmp
        self.cluster_file = tmp / "cluster.json"
        self.log = tmp / "switchboard.log"
        self.switchboard_bin = switchboard_bin
        self.upstream = None
        self.switchboard = None
        self._owned = ExitStack()

    def up(self):
        network_namespace.sweep_stale()
        network_namespace.clean_up_on_sigterm()
        self.cluster_file.write_text(json.dumps(cluster()))
        for ns in (self.node, self.pod):
            network_namespace.create(ns)
            self._owned.callback(network_namespace.delete, ns)
        for argv in (
            ["ip", "-n", self.node, "link", "add", "veth-pod", "type", "veth", "peer", "name",
             "eth0", "netns", self.pod],
            ["ip", "-n", self.node, "addr", "add", f"{NODE_ADDR}/24", "dev", "veth-pod"],
            ["ip", "-n", self.pod, "addr", "add", f"{POD_ADDR}/24", "dev", "eth0"],
            ["ip", "-n", self.node, "link", "set", "veth-pod", "up"],
            ["ip", "-n", self.pod, "link", "set", "eth0", "up"],
        ):
            run(argv)
        self._owned.enter_context(resolv_confs([(self.pod, POD_RESOLV_CONF)]))
        self.upstream = self._owned.enter_context(
            dns_stub.Stub(self.node, UPSTREAM_ADDR, upstream_answer, tcp=True))
        with open(self.log, "w") as log:
            self.switchboard = subprocess.Popen(
                network_namespace.in_ns(self.node, [
                    self.switchboard_bin, f"--source=file:{self.cluster_file}",
                    "--proxy-mode=nftables", "--hostname-override=node-a",
                    f"--dns-listen={NODE_ADDR}:53",
                    f"--dns-upstream={DEAD_UPSTREAM},{UPSTREAM_ADDR}",
                    "--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address", ""]),
                stdout=log, stderr=subprocess.STDOUT)
        self._owned.callback(terminate, self.switchboard, 5)
        for _ in range(100):
            if self.dig("web.default.svc.cluster.local", "A", short=True).split() == ["10.96.0.10"]:
                break
            assert self.switchboard.poll() is None, self.log.read_text()
            time.sleep(0.1)
        else:
            pytest.fail("switchboard DNS never answered: " + self.log.read_text())

    def dig(self, name, qtype="A", *options, short=False, ns=None):
        argv = ["dig", f"@{NODE_ADDR}", name, qtype, "+time=3", "+tries=1", *options]
        if short:
            argv.append("+short")
        return run_in(ns or self.pod, *argv).stdout

    def upstream_queries(self):
        """"<proto> <name> <type>" of every query the upstream got, in order."""
        return [f"{q.proto} {q.name} {q.qtype}" for q in self.upstream.queries_seen(probes=True)]

    def metrics(self):
        return run_in(self.node, "curl", "-s", "http://127.0.0.1:10249/metrics").stdout

    def down(self):
        """Stops switchboard and the stub, removes the resolv.conf and the namespaces
        (in that order); also after a failed up()."""
        self._owned.close()


@pytest.fixture(scope="module")
def bed(root, switchboard_bin, tmp_path_factory):
    b = DnsBed(tmp_path_factory.mktemp("dns"), switchboard_bin)
    try:
        b.up()
        yield b
    finally:
        b.down()


def answers(output):
    """(name, type, rdata) triples of dig's answer/authority/additional lines."""
    out = []
    for line in output.splitlines():
        if not line or line.startswith(";"):
            continue
        fields = line.split(None, 4)
        if len(fields) == 5:
            out.append((fields[0], fields[3], fields[4]))
    return out


def status(output):
    match = re.search(r"status: (\w+)", output)
    return match.group(1) if match else None


def flags(output):
    match = re.search(r"flags: ([a-z ]+);", output)
    return set(match.group(1).split()) if match else set()


def test_clusterip_service_a_and_aaaa(bed):
    assert bed.dig("web.default.svc.cluster.local", "A", short=True).split() == ["10.96.0.10"]
    assert bed.dig("web.default.svc.cluster.local", "AAAA", short=True).split() == ["fd00:96::10"]
    out = bed.dig("web.default.svc.cluster.local", "A")
    assert status(out) == "NOERROR"
    assert "aa" in flags(out)
    assert ("web.default.svc.cluster.local.", "A", "10.96.0.10") in answers(out)


def test_over_tcp(bed):
    out = bed.dig("nginx.default.svc.cluster.local", "A", "+tcp")
    assert status(out) == "NOERROR"
    assert sorted(r for _, t, r in answers(out) if t == "A") == ["10.244.0.17", "10.244.1.18"]


def test_question_echoed_as_asked(bed):
    out = bed.dig("WEB.Default.SVC.cluster.local", "A")
    assert "WEB.Default.SVC.cluster.local." in out.split("ANSWER SECTION")[1]


def test_headless_ready_endpoints_and_hostnames(bed):
    assert sorted(bed.dig("nginx.default.svc.cluster.local", short=True).split()) == [
        "10.244.0.17", "10.244.1.18"]
    assert bed.dig("web-0.nginx.default.svc.cluster.local", short=True).split() == ["10.244.0.17"]
    not_ready = bed.dig("web-2.nginx.default.svc.cluster.local")
    assert status(not_ready) == "NXDOMAIN"
    assert status(bed.dig("empty.default.svc.cluster.local")) == "NXDOMAIN"


def test_srv_with_targets_in_additional(bed):
    out = bed.dig("_http._tcp.nginx.default.svc.cluster.local", "SRV")
    records = answers(out)
    srv = sorted(r for _, t, r in records if t == "SRV")
    assert srv == ["0 50 8080 web-0.nginx.default.svc.cluster.local.",
                   "0 50 8080 web-1.nginx.default.svc.cluster.local."]
    assert ("web-0.nginx.default.svc.cluster.local.", "A", "10.244.0.17") in records
    clusterip = bed.dig("_http._tcp.web.default.svc.cluster.local", "SRV", short=True)
    assert clusterip.split() == ["0", "100", "80", "web.default.svc.cluster.local."]


def test_ptr_records(bed):
    assert bed.dig("-x", "10.96.0.10", short=True).split() == ["web.default.svc.cluster.local."]
    assert bed.dig("-x", "10.244.1.18", short=True).split() == [
        "web-1.nginx.default.svc.cluster.local."]
    assert bed.dig("-x", "fd00:96::10", short=True).split() == ["web.default.svc.cluster.local."]


def test_ptr_records_of_clusterip_endpoints(bed):
    # Every ready endpoint of a ClusterIP Service: its hostname, else its dashed address.
    assert bed.dig("-x", "10.244.3.7", short=True).split() == [
        "10-244-3-7.web.default.svc.cluster.local."]
    assert bed.dig("-x", "10.244.3.8", short=True).split() == [
        "api-0.web.default.svc.cluster.local."]
    # A not-ready one is no name of ours: it falls through to the upstream, which has none.
    assert status(bed.dig("-x", "10.244.3.9")) == "NXDOMAIN"
    asked = bed.upstream.names(qtype=TYPE_PTR)
    assert "9.3.244.10.in-addr.arpa" in asked
    assert "7.3.244.10.in-addr.arpa" not in asked


def test_dns_version_and_negative_answers_carry_the_soa(bed):
    assert bed.dig("dns-version.cluster.local", "TXT", short=True).strip() == '"1.1.0"'
    nx = bed.dig("nope.default.svc.cluster.local")
    assert status(nx) == "NXDOMAIN"
    soa = [r for _, t, r in answers(nx) if t == "SOA"]
    assert len(soa) == 1
    assert soa[0].startswith("ns.dns.cluster.local. hostmaster.cluster.local.")
    assert soa[0].split()[-4:] == ["7200", "1800", "86400", "30"]
    nodata = bed.dig("web.default.svc.cluster.local", "TXT")
    assert status(nodata) == "NOERROR"
    assert [t for _, t, _ in answers(nodata)] == ["SOA"]
    ent = bed.dig("default.svc.cluster.local", "A")
    assert status(ent) == "NOERROR"


def test_pod_records(bed):
    assert bed.dig("10-244-9-9.default.pod.cluster.local", short=True).split() == ["10.244.9.9"]


def test_externalname_cname_with_upstream_answer(bed):
    out = bed.dig("db.default.svc.cluster.local", "A")
    records = answers(out)
    assert ("db.default.svc.cluster.local.", "CNAME", "my.database.example.com.") in records
    assert ("my.database.example.com.", "A", "192.0.2.7") in records


def test_forwarding_and_cache(bed):
    before = bed.upstream_queries().count("udp cache.example.com 1")
    for _ in range(3):
        assert status(bed.dig("cache.example.com")) == "NXDOMAIN"
    assert bed.upstream_queries().count("udp cache.example.com 1") - before == 1
    out = bed.dig("www.example.com")
    assert ("www.example.com.", "A", "192.0.2.1") in answers(out)
    assert "ra" in flags(out)


def test_truncated_upstream_reply_is_retried_over_tcp(bed):
    udp = bed.dig("big.example.com", "TXT", "+ignore")
    assert "tc" in flags(udp)  # 4 KiB do not fit our 1232-byte UDP replies
    tcp = bed.dig("big.example.com", "TXT", "+tcp")
    assert len([t for _, t, _ in answers(tcp) if t == "TXT"]) == 40
    assert "tcp big.example.com 16" in bed.upstream_queries()


def test_failover_to_the_next_upstream(bed):
    out = bed.dig("www.example.com", "A", "+time=5")
    assert ("www.example.com.", "A", "192.0.2.1") in answers(out)
    # The ICMP port unreachable fails the attempt at once (a connected
    # socket per attempt): counted as an error, not a timeout.
    errors = re.search(r'switchboard_dns_upstream_errors_total\{kind="error"\} (\d+)',
                       bed.metrics())
    assert errors and int(errors.group(1)) >= 1


def test_tcp_pipelining_and_shuffled_order(bed):
    script = (
        "import socket, sys\n"
        "import dns_wire\n"
        "c = socket.create_connection((sys.argv[1], 53), timeout=5)\n"
        "c.sendall(b''.join(dns_wire.framed(dns_wire.query(i, name)) for i, name in (\n"
        "    (1, 'web.default.svc.cluster.local'), (2, 'nope.default.svc.cluster.local'),\n"
        "    (3, 'nginx.default.svc.cluster.local'))))\n"
        "f = c.makefile('rb')\n"
        "for _ in range(3):\n"
        "    r = f.read(int.from_bytes(f.read(2), 'big'))\n"
        "    print(dns_wire.message_id(r), dns_wire.rcode(r))\n"
    )
    out = python_in(bed.pod, script, NODE_ADDR)
    assert out.stdout.split() == ["1", "0", "2", "3", "3", "0"], out.stderr
    orders = {tuple(bed.dig("nginx.default.svc.cluster.local", short=True).split())
              for _ in range(30)}
    assert len(orders) == 2  # both orders of the two endpoints show up


def test_glibc_search_path(bed):
    """getent in the pod namespace: ndots:5 walks the search list."""
    assert run_in(bed.pod, "getent", "hosts", "web").stdout.split()[:2] == [
        "fd00:96::10", "web.default.svc.cluster.local"]
    v4 = run_in(bed.pod, "getent", "ahostsv4", "web.default").stdout
    assert "10.96.0.10" in v4
    assert run_in(bed.pod, "getent", "hosts", "web-0.nginx").stdout.split()[0] == "10.244.0.17"
    assert run_in(bed.pod, "getent", "ahostsv4", "kube-dns.kube-system").stdout.split()[0] == \
        "10.96.0.53"
    nope = run_in(bed.pod, "getent", "hosts", "nope")
    assert nope.returncode == 2
    # An outside name: the search list expansions are answered from memory,
    # only the name itself reaches the upstream.
    www = run_in(bed.pod, "getent", "ahostsv4", "www.example.com")
    assert www.stdout.split()[0] == "192.0.2.1"
    upstream = bed.upstream_queries()
    assert not [q for q in upstream if "cluster.local" in q], upstream


def test_malformed_queries(bed):
    script = (
        "import socket, sys\n"
        "import dns_wire\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.settimeout(3)\n"
        "def ask(p):\n"
        "    s.sendto(p, (sys.argv[1], 53))\n"
        "    return dns_wire.rcode(s.recv(4096))\n"
        "q = dns_wire.query(0xabcd, 'web.default.svc.cluster.local')\n"
        "print(ask(q + b'junk'))\n"                      # trailing garbage: FORMERR
        "print(ask(q[:20]))\n"                           # truncated: FORMERR
        "print(ask(q[:2] + bytes([0x21]) + q[3:]))\n"    # opcode 4 (NOTIFY): NOTIMP
        "print(ask(q))\n"                                # the well-formed one: NOERROR
    )
    out = python_in(bed.pod, script, NODE_ADDR)
    assert out.stdout.split() == ["1", "1", "4", "0"], out.stderr


def test_file_change_reaches_dns(bed):
    assert status(bed.dig("late.default.svc.cluster.local")) == "NXDOMAIN"
    bed.cluster_file.write_text(json.dumps(cluster(
        [service("late", ["10.96.0.77"], [HTTP])])))
    for _ in range(50):
        if bed.dig("late.default.svc.cluster.local", short=True).split() == ["10.96.0.77"]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the new Service never reached DNS")
    serial = [r for _, t, r in answers(bed.dig("cluster.local", "SOA")) if t == "SOA"]
    assert serial and int(serial[0].split()[2]) > 1


def test_metrics(bed):
    bed.dig("web.default.svc.cluster.local")
    text = bed.metrics()
    requests = re.search(r'coredns_dns_requests_total\{server="dns://:\d+",zone="\.",view="",'
                         r'proto="udp",family="1",type="A"\} (\d+)', text)
    assert requests and int(requests.group(1)) > 0
    assert re.search(r'coredns_dns_responses_total\{server="dns://:\d+",zone="\.",view="",'
                     r'rcode="NXDOMAIN",plugin="[a-z]*"\} [1-9]', text)
    assert "coredns_dns_request_duration_seconds_bucket" in text
    for name in ("coredns_cache_hits_total", "coredns_cache_misses_total", "coredns_cache_entries",
                 "coredns_forward_requests_total", "coredns_forward_responses_total"):
        assert name in text


@pytest.fixture
def dns_serve(build_dir):
    path = build_dir / "tests" / "bench" / "dns_serve"
    assert path.exists(), f"{path} is not built: run ./dev build"
    return path


def test_upstream_that_is_ourselves_is_dropped(dns_serve, tmp_path):
    """A forwarding loop is refused: with only ourselves upstream, other zones are REFUSED."""
    source = tmp_path / "cluster.json"
    source.write_text(json.dumps(cluster()))
    port = free_port(socket.SOCK_DGRAM)
    proc = subprocess.Popen([str(dns_serve), "--source", str(source), "--listen",
                             f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening"), line
        out = run(["dig", "@127.0.0.1", "-p", str(port), "www.example.com", "+time=2",
                   "+tries=1"], check=False).stdout
        assert status(out) == "REFUSED"
        cluster_answer = run(["dig", "@127.0.0.1", "-p", str(port), "+short",
                              "web.default.svc.cluster.local"], check=False).stdout
        assert cluster_answer.split() == ["10.96.0.10"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=5)
    assert "forwarding loop" in err


def test_loop_through_another_server_is_detected_by_the_probe(dns_serve, tmp_path):
    """A -> B -> A: A's probe query comes back to A, which drops B (127.0.0.53-style loops)."""
    source = tmp_path / "cluster.json"
    source.write_text(json.dumps(cluster()))
    port_a, port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    procs = []
    try:
        for port, upstream in ((port_b, port_a), (port_a, port_b)):
            proc = subprocess.Popen([str(dns_serve), "--source", str(source), "--listen",
                                     f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream}"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(proc)
            assert proc.stdout.readline().startswith("listening")
        for _ in range(50):
            out = run(["dig", "@127.0.0.1", "-p", str(port_a), "www.example.com", "+time=1",
                       "+tries=1"], check=False).stdout
            if status(out) == "REFUSED":
                break
            time.sleep(0.1)
        assert status(out) == "REFUSED"
    finally:
        for proc in procs:
            proc.terminate()
        errors = [proc.communicate(timeout=5)[1] for proc in procs]
    assert "loop probe came back" in errors[1]
