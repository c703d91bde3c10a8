"""Issue 25's Done-when: a node does not notice switchboard restarting, at 10k
Services (docs/daemon.md, "Restarts and rollouts").

A netbed node runs `switchboard supervise -- switchboard` on 10k Services, from
a cluster file or from the fake API server, with a Corefile as kubeadm's
(`health { lameduck 5s }`) that binds DNS to the node's pod bridge address. One
Service, `web`, has the bed's pod servers as endpoints; the other 9,999 have
test addresses nothing answers on. A client pod plays a Pod's traffic (Load):
a lookup every 20 ms as glibc's resolver makes it with one nameserver and
`options timeout:1 attempts:2`, and a new TCP connection to web's ClusterIP
every 20 ms, each of which must reach a pod server.

One lineage of daemons per source goes through the three actions in turn, the
load running from 1 s before each until 1 s after the new daemon is ready:
a SIGKILL of the process of the daemon's tree with the largest VmRSS, a second
daemon beside the first (same flags and --state-dir) then SIGTERM to the first,
and a SIGTERM followed by a start within the lameduck, each once the serving
daemon has written its warm DNS state (Lineage.serving). Every lookup and every
connection must succeed; the counts are printed (`pytest -s`).
"""
import collections
import os
import signal
import socket
import sys
import threading
import time

import pytest

import dns_wire
import kube_objects
import netbed
import network_namespace
from daemons import Daemon, terminate
from netbed import children, largest_process
from probes import metric, wait_for
from test_restarts import Clients

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fake_apiserver"))
import fake_apiserver  # noqa: E402

NODE = "node-a"
SERVERS = ("web-1", "web-2")
SERVICES = 10_000
WEB_IP = "10.96.100.10"
PERIOD = 0.02     # s between two lookups, and between two connections
WORKERS = 4       # threads per kind, each starting one every WORKERS * PERIOD
ZONE = "default.svc.cluster.local"
# (name, the address expected; None: NXDOMAIN). Every other lookup is web's.
OTHERS = ((f"svc-1.{ZONE}", "10.96.0.1"), (f"svc-5000.{ZONE}", "10.96.19.136"),
          (f"svc-9999.{ZONE}", "10.96.39.15"), (f"absent.{ZONE}", None))
WARM_WRITES = "switchboard_dns_warm_state_writes_total"
START_TIMEOUT = 120  # s: a cold start at 10k Services on a loaded 2-core machine


def corefile(dns_address):
    """kubeadm's Corefile (tests/data/kubeadm/Corefile), `health { lameduck 5s }`
    included, less what needs the outside (`forward . /etc/resolv.conf`, `loop`) and
    what leaves cluster.local's answers alone (`cache`, `prometheus`, `reload`); DNS
    bound to `dns_address`, the health and ready endpoints on the node's loopback."""
    return (f".:53 {{\n    errors\n    bind {dns_address}\n"
            "    health 127.0.0.1:8080 {\n       lameduck 5s\n    }\n    ready 127.0.0.1:8181\n"
            "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n"
            "       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n"
            f"    forward . {netbed.OUTSIDE_ADDRESSES[0]}\n    loadbalance\n}}\n")


def cluster_objects(bed):
    """The Node, web (its endpoints the pod servers) and svc-1..svc-9999 (one test
    endpoint each, fake_apiserver.bench_service's ClusterIPs)."""
    port = (("p0", 8080, "TCP"),)
    items = [netbed.node_object(bed.nodes[NODE]),
             kube_objects.service("web", [WEB_IP], [kube_objects.service_port(
                 80, name="p0", target=8080)]),
             kube_objects.endpoint_slice("web", [netbed.pod_endpoint(bed.pods[name])
                                                 for name in SERVERS], port)]
    for i in range(1, SERVICES):
        items.append(fake_apiserver.bench_service(i))
        items.append(kube_objects.endpoint_slice(
            f"svc-{i}", [kube_objects.endpoint(f"10.128.{i // 256}.{i % 256}", node=NODE)],
            port))
    return items


# ---- the client pod ---------------------------------------------------------


def lookup(server, name, expected, qid):
    """One lookup as glibc makes it with one nameserver and `options timeout:1
    attempts:2`: the query on a connected UDP socket, 1 s for its reply (a reply with
    another id is ignored); a refusal (ICMP), no reply or a reply other than the one
    expected (NOERROR with `expected`'s A record; NXDOMAIN when `expected` is None)
    moves on to the one retry, which gets 1 s too. ("answered" | "retried", None) or
    ("failed", what the last try got)."""
    got = None
    for outcome in ("answered", "retried"):
        qid = (qid + 1) & 0xFFFF
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect((server, 53))
            sock.send(dns_wire.query(qid, name))
            deadline = time.monotonic() + 1.0
            try:
                while (left := deadline - time.monotonic()) > 0:
                    sock.settimeout(left)
                    reply = sock.recv(4096)
                    if dns_wire.message_id(reply) == qid:
                        break
                else:
                    raise socket.timeout
            except OSError as exc:
                got = netbed._error_name(exc)
                continue
        got = verdict(reply, expected)
        if got == "ok":
            return outcome, None
    return "failed", got


def verdict(reply, expected):
    rcode = dns_wire.rcode(reply)
    if expected is None:
        return "ok" if rcode == dns_wire.NXDOMAIN else f"rcode {rcode}"
    if rcode != dns_wire.NOERROR:
        return f"rcode {rcode}"
    addresses = [r.address for r in dns_wire.answers(reply) if r.rtype == dns_wire.TYPE_A]
    return "ok" if addresses == [expected] else f"answer {addresses}"


def connect(cluster_ip):
    """A new TCP connection to cluster_ip:80 (3 s, a SYN retransmit's time); ("connected",
    None) once a pod server greets, else ("failed", why)."""
    answer = netbed.attempt("tcp", cluster_ip, 80, timeout=3.0)
    if answer["ok"] and answer.get("pod") in SERVERS:
        return "connected", None
    return "failed", answer.get("error") or f"answered by {answer.get('pod')}"


class Load(Clients):
    """The client pod's lookups (of web's name, every other one; of OTHERS in turn) and
    connections to web's ClusterIP, each kind on WORKERS threads inside the pod's
    namespace, one started every PERIOD, until stop(). counts: by kind and outcome;
    failures: (seconds into the load, kind, what) of each failed one."""

    def __init__(self, ns, dns_server):
        super().__init__([threading.Thread(target=self._worker, args=(kind, w))
                          for kind in ("lookup", "connection") for w in range(WORKERS)])
        self.ns, self.dns_server = ns, dns_server
        self.failures = []
        self._lock = threading.Lock()

    def _one(self, kind, n):
        if kind == "connection":
            return connect(WEB_IP)
        name, expected = (f"web.{ZONE}", WEB_IP) if n % 2 == 0 else OTHERS[n // 2 % len(OTHERS)]
        return lookup(self.dns_server, name, expected, n * 2)

    def _worker(self, kind, w):
        def body():
            due, n = time.monotonic() + w * PERIOD, w
            while not self._stop.is_set():
                self._stop.wait(max(0.0, due - time.monotonic()))
                outcome, why = self._one(kind, n)
                with self._lock:
                    self.counts[f"{kind}s {outcome}"] += 1
                    if why:
                        self.failures.append((time.monotonic() - self.started, kind, why))
                due, n = max(due + WORKERS * PERIOD, time.monotonic()), n + WORKERS
        network_namespace.call_inside(self.ns, body)


# ---- the daemons --------------------------------------------------------------


class Lineage:
    """The supervised daemons of one source on the bed's node, one after the other,
    each `switchboard supervise -- switchboard` with the same flags (--state-dir
    included) and the same metrics and healthz ports."""

    def __init__(self, bed, binary, folder, source, source_flags):
        self.bed, self.binary, self.folder, self.source = bed, binary, folder, source
        self.node = bed.nodes[NODE]
        (folder / "Corefile").write_text(corefile(self.node.bridge4))
        self.flags = [f"--cluster-cidr={netbed.CLUSTER_CIDRS[0]}",
                      f"--dns-corefile={folder / 'Corefile'}",
                      f"--state-dir={folder / 'state'}", *source_flags]
        self.daemons = []

    def start(self):
        ports = (self.daemons[-1].metrics_port, self.daemons[-1].healthz_port) \
            if self.daemons else None
        self.daemons.append(Daemon(
            self.binary, self.node.ns, self.folder / "cluster.json",
            self.folder / f"daemon-{len(self.daemons)}.log", *self.flags, supervised=True,
            ports=ports))
        return self.daemons[-1]

    def ready(self, daemon, what):
        """Waits until `daemon`'s port answers /readyz 200 (its first sync done)."""
        wait_for(lambda: daemon.get("/readyz")[0] == 200, f"/readyz 200 {what}",
                 timeout=START_TIMEOUT)

    def serving(self):
        """The running daemon, ready, its warm DNS state written and answering the client
        pod (one started if none runs)."""
        running = [d for d in self.daemons if d.process.poll() is None]
        daemon = running[-1] if running else self.start()
        self.ready(daemon, "at the start")
        # A daemon in its steady state: its first synced zone is in the warm state
        # (docs/dns.md, "Warm start": written as soon as it is published, 11 MB at 10k
        # Services, which takes from 0.1 s to over a second on this loaded machine). A
        # crash before that write leaves the next process no state, and it answers
        # SERVFAIL until its own first sync, as without a warm state.
        wait_for(lambda: (metric(daemon.get("/metrics")[2], WARM_WRITES) or 0) >= 1,
                 "the warm state written")
        client = self.bed.pods["client"].ns
        wait_for(lambda: network_namespace.call_inside(
            client, lambda: lookup(self.node.bridge4, f"web.{ZONE}", WEB_IP, 0))[0] == "answered",
            "the client pod's lookup")
        return daemon

    def load(self):
        return Load(self.bed.pods["client"].ns, self.node.bridge4)

    def close(self):
        codes = [terminate(d.process) for d in self.daemons]
        cleanup = network_namespace.run_in(self.node.ns, self.binary, "--cleanup",
                                           f"--state-dir={self.folder / 'state'}")
        return codes, cleanup


@pytest.fixture(scope="module")
def bed(root):
    bed = netbed.Bed({NODE: [*SERVERS, "client"]}).up()
    try:
        bed.start_servers(tcp=(8080,), udp=(), pods=SERVERS)
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module", params=["file", "api"])
def lineage(request, bed, switchboard_bin, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    items = cluster_objects(bed)
    api = None
    if request.param == "file":
        kube_objects.write_atomically(folder / "cluster.json", kube_objects.cluster_list(items))
        flags = []
    else:
        pki = fake_apiserver.make_pki(str(folder / "pki"))
        api = fake_apiserver.FakeApiServer(pki, chunking="line")
        for item in items:
            api.apply(item)
        api.start(netns=bed.nodes[NODE].ns)
        kubeconfig = fake_apiserver.write_kubeconfig(
            str(folder / "kubeconfig"), api.url, ca_file=os.path.join(pki, "ca.crt"),
            token="good-token")
        flags = ["--source=kubernetes", f"--kubeconfig={kubeconfig}"]
    lineage = Lineage(bed, switchboard_bin, folder, request.param, flags)
    try:
        yield lineage
    finally:
        codes, cleanup = lineage.close()
        if api:
            api.stop()
    assert cleanup.returncode == 0, cleanup.stderr
    assert codes[-1] == 0, lineage.daemons[-1].stderr()


def report(case, lineage, load):
    counts = ", ".join(f"{key} {load.counts[key]}" for key in (
        "lookups answered", "lookups retried", "lookups failed", "connections connected",
        "connections failed"))
    print(f"\n{case} ({lineage.source} source, {time.monotonic() - load.started:.1f} s of "
          f"load): {counts}")


def judge(load, daemons):
    assert load.failures == [], (load.failures[:20], load.counts,
                                 "\n".join(d.stderr()[-3000:] for d in daemons))
    assert load.counts["lookups answered"] > 50, load.counts
    assert load.counts["connections connected"] > 50, load.counts


def test_a_sigkill_of_the_largest_process_loses_nothing(lineage):
    daemon = lineage.serving()
    supervisor = daemon.process.pid
    with lineage.load() as load:
        time.sleep(1)
        victim = largest_process(supervisor)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: [pid for pid in children(supervisor) if pid != victim],
                 "the restarted daemon")
        lineage.ready(daemon, "after the restart")
        time.sleep(1)
    which = "the supervisor" if victim == supervisor else "the daemon"
    report(f"SIGKILL of the largest process ({which})", lineage, load)
    judge(load, [daemon])
    assert "died by signal 9" in daemon.stderr(), daemon.stderr()


def test_a_rolling_update_loses_nothing(lineage):
    old = lineage.serving()
    with lineage.load() as load:
        time.sleep(1)
        new = lineage.start()
        wait_for(lambda: "handed over to the next daemon" in old.stderr(), "the hand-over",
                 timeout=START_TIMEOUT)
        lineage.ready(new, "of the new daemon")
        assert terminate(old.process) == 0, old.stderr()
        time.sleep(1)
    report("a second daemon, then SIGTERM to the first", lineage, load)
    judge(load, [old, new])
    assert "took over" in new.stderr(), new.stderr()


def test_a_stop_and_a_start_within_the_lameduck_lose_nothing(lineage):
    daemon = lineage.serving()
    with lineage.load() as load:
        time.sleep(1)
        daemon.process.terminate()
        wait_for(lambda: "lameduck" in daemon.stderr(), "the lameduck")
        again = lineage.start()
        assert daemon.process.wait(timeout=10) == 0, daemon.stderr()
        lineage.ready(again, "after the start")
        time.sleep(1)
    report("SIGTERM, then a start within the lameduck", lineage, load)
    judge(load, [daemon, again])
    assert "took over" in again.stderr(), again.stderr()
