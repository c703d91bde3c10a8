"""Cluster DNS (issue 5) with the real `dig` and glibc.

Topology (root): a "node" network namespace runs `switchboard --dns-listen
10.53.0.1:53` fed by a cluster JSON file, and a stub upstream DNS server on
127.0.0.2:53 that logs every query it gets. A "pod" namespace is wired to
the node with a veth (10.53.0.2) and has a private resolv.conf (as a Pod's:
search default.svc.cluster.local svc.cluster.local cluster.local, ndots:5,
nameserver 10.53.0.1), which `ip netns exec` bind-mounts over
/etc/resolv.conf, so `getent hosts` exercises glibc's search path.

Without root, the loop-detection test still runs on loopback with the
test driver tests/bench/dns_serve.
"""
import json
import os
import pathlib
import re
import shutil
import socket
import struct
import subprocess
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
NODE_ADDR = "10.53.0.1"
POD_ADDR = "10.53.0.2"
UPSTREAM_ADDR = "127.0.0.2"
DEAD_UPSTREAM = "127.0.0.3"  # nothing listens there: the first attempt fails (port unreachable)

STUB = r'''
import socket, struct, sys, threading
addr, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)

def name_of(data, pos):
    labels = []
    while data[pos]:
        n = data[pos]; labels.append(data[pos + 1:pos + 1 + n].decode()); pos += n + 1
    return ".".join(labels).lower(), pos + 1

def wire(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"

def answer(query, tcp):
    qid, flags = struct.unpack("!HH", query[:4])
    name, pos = name_of(query, 12)
    qtype, = struct.unpack("!H", query[pos:pos + 2])
    question = query[12:pos + 4]
    log.write(("tcp " if tcp else "udp ") + name + " " + str(qtype) + "\n")
    records, rcode, tc = [], 0, False
    if name in ("www.example.com", "my.database.example.com") and qtype == 1:
        ip = bytes([192, 0, 2, 1 if name.startswith("www") else 7])
        records.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + ip)
    elif name == "big.example.com" and qtype == 16:
        if tcp:
            for i in range(40):
                txt = bytes([100]) + (b"%03d" % i) * 33 + b"x"
                records.append(b"\xc0\x0c" + struct.pack("!HHIH", 16, 1, 300, len(txt)) + txt)
        else:
            tc = True
    else:
        rcode = 3
    soa = b""
    nscount = 0
    if rcode == 3:
        rdata = wire("ns.example.com") + wire("h.example.com") + struct.pack("!IIIII", 1, 2, 3, 4, 60)
        soa = wire("example.com") + struct.pack("!HHIH", 6, 1, 60, len(rdata)) + rdata
        nscount = 1
    flags = 0x8000 | 0x0080 | (flags & 0x0100) | (0x0200 if tc else 0) | rcode
    header = struct.pack("!HHHHHH", qid, flags, 1, len(records), nscount, 0)
    return header + question + b"".join(records) + soa

def serve_udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        data, peer = s.recvfrom(4096)
        try:
            s.sendto(answer(data, False), peer)
        except Exception as e:
            log.write("error " + repr(e) + "\n")

def serve_tcp_client(c):
    with c:
        while True:
            head = c.recv(2)
            if len(head) < 2:
                return
            n, = struct.unpack("!H", head)
            data = b""
            while len(data) < n:
                chunk = c.recv(n - len(data))
                if not chunk:
                    return
                data += chunk
            reply = answer(data, True)
            c.sendall(struct.pack("!H", len(reply)) + reply)

def serve_tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 53))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_tcp_client, args=(c,), daemon=True).start()

threading.Thread(target=serve_tcp, daemon=True).start()
print("ready", flush=True)
serve_udp()
'''


def service(ns, name, *, cluster_ips=None, headless=False, ports=None, external_name=None):
    spec = {"ports": ports or [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    if external_name:
        spec = {"type": "ExternalName", "externalName": external_name}
    elif headless:
        spec.update(clusterIP="None", clusterIPs=["None"], type="ClusterIP", selector={"app": name})
    else:
        spec.update(clusterIP=cluster_ips[0], clusterIPs=cluster_ips, type="ClusterIP",
                    selector={"app": name},
                    ipFamilies=["IPv6" if ":" in ip else "IPv4" for ip in cluster_ips])
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                         "resourceVersion": "1"},
            "spec": spec}


def slice_of(ns, svc, name, family, endpoints, ports=None):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                         "resourceVersion": "1",
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": family,
            "endpoints": endpoints,
            "ports": ports or [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def endpoint(address, hostname=None, ready=True, pod=None):
    e = {"addresses": [address], "conditions": {"ready": ready, "serving": ready,
                                                "terminating": False}}
    if hostname:
        e["hostname"] = hostname
    if pod:
        e["targetRef"] = {"kind": "Pod", "name": pod, "namespace": "default"}
    return e


def cluster(extra=()):
    items = [
        service("default", "web", cluster_ips=["10.96.0.10", "fd00:96::10"]),
        service("default", "nginx", headless=True),
        slice_of("default", "nginx", "nginx-v4", "IPv4", [
            endpoint("10.244.0.17", "web-0", pod="web-0"),
            endpoint("10.244.1.18", "web-1", pod="web-1"),
            endpoint("10.244.2.19", "web-2", ready=False, pod="web-2"),
        ]),
        service("default", "empty", headless=True),
        service("default", "db", external_name="my.database.example.com"),
        service("kube-system", "kube-dns", cluster_ips=["10.96.0.53"],
                ports=[{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53}]),
        *extra,
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=30,
                          **kwargs)


def ns_run(ns, argv, **kwargs):
    return run(["ip", "netns", "exec", ns, *argv], **kwargs)


class DnsBed:
    """The node and pod namespaces, the stub upstream and switchboard."""

    def __init__(self, tmp, switchboard_bin):
        self.prefix = f"sbdns{os.getpid()}"
        self.node = f"{self.prefix}-node"
        self.pod = f"{self.prefix}-pod"
        self.tmp = tmp
        self.cluster_file = tmp / "cluster.json"
        self.upstream_log = tmp / "upstream.log"
        self.log = tmp / "switchboard.log"
        self.procs = []
        self.switchboard_bin = switchboard_bin
        self.etc = pathlib.Path("/etc/netns") / self.pod

    def up(self):
        tmp = self.tmp
        self.cluster_file.write_text(json.dumps(cluster()))
        self.upstream_log.write_text("")
        for ns in (self.node, self.pod):
            run(["ip", "netns", "del", ns])
            assert run(["ip", "netns", "add", ns]).returncode == 0
            ns_run(ns, ["ip", "link", "set", "lo", "up"])
        veth = f"{self.prefix[:8]}n"
        for argv in (
            ["ip", "link", "add", veth, "netns", self.node, "type", "veth", "peer", "name",
             "eth0", "netns", self.pod],
            ["ip", "-n", self.node, "addr", "add", f"{NODE_ADDR}/24", "dev", veth],
            ["ip", "-n", self.pod, "addr", "add", f"{POD_ADDR}/24", "dev", "eth0"],
            ["ip", "-n", self.node, "link", "set", veth, "up"],
            ["ip", "-n", self.pod, "link", "set", "eth0", "up"],
        ):
            proc = run(argv)
            assert proc.returncode == 0, proc.stderr
        # `ip netns exec` bind-mounts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf.
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "resolv.conf").write_text(
            "search default.svc.cluster.local svc.cluster.local cluster.local\n"
            f"nameserver {NODE_ADDR}\noptions ndots:5 timeout:2 attempts:2\n")
        stub = tmp / "stub.py"
        stub.write_text(STUB)
        upstream = subprocess.Popen(
            ["ip", "netns", "exec", self.node, "/usr/bin/python3", str(stub), UPSTREAM_ADDR,
             str(self.upstream_log)], stdout=subprocess.PIPE, text=True)
        self.procs.append(upstream)
        assert upstream.stdout.readline().strip() == "ready"
        self.switchboard = subprocess.Popen(
            ["ip", "netns", "exec", self.node, str(self.switchboard_bin),
             f"--source=file:{self.cluster_file}", "--proxy-mode=nftables",
             "--hostname-override=node-a", f"--dns-listen={NODE_ADDR}:53",
             f"--dns-upstream={DEAD_UPSTREAM},{UPSTREAM_ADDR}", "--metrics-bind-address=127.0.0.1:10249",
             "--healthz-bind-address", ""],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        self.procs.append(self.switchboard)
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
        return ns_run(ns or self.pod, argv).stdout

    def upstream_queries(self):
        return self.upstream_log.read_text().splitlines()

    def metrics(self):
        return ns_run(self.node, ["curl", "-s", "http://127.0.0.1:10249/metrics"]).stdout

    def down(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        for ns in (self.node, self.pod):
            run(["ip", "netns", "del", ns])
        shutil.rmtree(self.etc, ignore_errors=True)


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
        "import socket,struct,sys\n"
        "def q(i,name):\n"
        "    n=b''.join(bytes([len(l)])+l.encode() for l in name.split('.'))+b'\\0'\n"
        "    p=struct.pack('!HHHHHH',i,0x100,1,0,0,0)+n+b'\\0\\1\\0\\1'\n"
        "    return struct.pack('!H',len(p))+p\n"
        "c=socket.create_connection((sys.argv[1],53),timeout=5)\n"
        "c.sendall(q(1,'web.default.svc.cluster.local')+q(2,'nope.default.svc.cluster.local')"
        "+q(3,'nginx.default.svc.cluster.local'))\n"
        "f=c.makefile('rb')\n"
        "for _ in range(3):\n"
        "    n,=struct.unpack('!H',f.read(2)); r=f.read(n); print(struct.unpack('!H',r[:2])[0],r[3]&15)\n"
    )
    out = ns_run(bed.pod, ["/usr/bin/python3", "-c", script, NODE_ADDR])
    assert out.stdout.split() == ["1", "0", "2", "3", "3", "0"], out.stderr
    orders = {tuple(bed.dig("nginx.default.svc.cluster.local", short=True).split())
              for _ in range(30)}
    assert len(orders) == 2  # both orders of the two endpoints show up


def test_glibc_search_path(bed):
    """getent in the pod namespace: ndots:5 walks the search list."""
    assert ns_run(bed.pod, ["getent", "hosts", "web"]).stdout.split()[:2] == [
        "fd00:96::10", "web.default.svc.cluster.local"]
    v4 = ns_run(bed.pod, ["getent", "ahostsv4", "web.default"]).stdout
    assert "10.96.0.10" in v4
    assert ns_run(bed.pod, ["getent", "hosts", "web-0.nginx"]).stdout.split()[0] == "10.244.0.17"
    assert ns_run(bed.pod, ["getent", "ahostsv4", "kube-dns.kube-system"]).stdout.split()[0] == \
        "10.96.0.53"
    nope = ns_run(bed.pod, ["getent", "hosts", "nope"])
    assert nope.returncode == 2
    # An outside name: the search list expansions are answered from memory,
    # only the name itself reaches the upstream.
    www = ns_run(bed.pod, ["getent", "ahostsv4", "www.example.com"])
    assert www.stdout.split()[0] == "192.0.2.1"
    upstream = bed.upstream_queries()
    assert not [q for q in upstream if "cluster.local" in q], upstream


def test_malformed_queries(bed):
    script = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(3)\n"
        "def ask(p):\n"
        "    s.sendto(p,(sys.argv[1],53)); return s.recv(4096)\n"
        "q=bytes.fromhex('abcd01000001000000000000')+b'\\x03web\\x07default\\x03svc\\x07cluster\\x05local\\x00\\x00\\x01\\x00\\x01'\n"
        "print(ask(q+b'junk')[3]&15)\n"           # trailing garbage: FORMERR
        "print(ask(q[:20])[3]&15)\n"              # truncated: FORMERR
        "r=ask(q[:2]+bytes([0x21])+q[3:]); print(r[3]&15)\n"  # opcode 4 (NOTIFY): NOTIMP
        "print(ask(q)[3]&15)\n"                   # the well-formed one: NOERROR
    )
    out = ns_run(bed.pod, ["/usr/bin/python3", "-c", script, NODE_ADDR])
    assert out.stdout.split() == ["1", "1", "4", "0"], out.stderr


def test_file_change_reaches_dns(bed):
    assert status(bed.dig("late.default.svc.cluster.local")) == "NXDOMAIN"
    bed.cluster_file.write_text(json.dumps(cluster(
        [service("default", "late", cluster_ips=["10.96.0.77"])])))
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
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen([str(dns_serve), "--source", str(source), "--listen",
                             f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening"), line
        out = run(["dig", "@127.0.0.1", "-p", str(port), "www.example.com", "+time=2",
                   "+tries=1"]).stdout
        assert status(out) == "REFUSED"
        cluster_answer = run(["dig", "@127.0.0.1", "-p", str(port), "+short",
                              "web.default.svc.cluster.local"]).stdout
        assert cluster_answer.split() == ["10.96.0.10"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=5)
    assert "forwarding loop" in err


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_loop_through_another_server_is_detected_by_the_probe(dns_serve, tmp_path):
    """A -> B -> A: A's probe query comes back to A, which drops B (127.0.0.53-style loops)."""
    source = tmp_path / "cluster.json"
    source.write_text(json.dumps(cluster()))
    port_a, port_b = free_udp_port(), free_udp_port()
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
                       "+tries=1"]).stdout
            if status(out) == "REFUSED":
                break
            time.sleep(0.1)
        assert status(out) == "REFUSED"
    finally:
        for proc in procs:
            proc.terminate()
        errors = [proc.communicate(timeout=5)[1] for proc in procs]
    assert "loop probe came back" in errors[1]
